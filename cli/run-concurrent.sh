#!/usr/bin/env bash
# The concurrent scenario of docs/BENCHMARKS.md: K request threads in one
# process on leanrt's arrangements (one shared pool, a pool per caller) and
# the baseline (one thread per caller, no pool), beside ONNX Runtime's
# (session per caller, one shared session, global thread pools,
# intra_op_num_threads=1) for each ORT library, RUNS times per work kind;
# then the tables (medians of the runs, ratios within each run).
#
#   cli/run-concurrent.sh [OUT_DIR]            (default target/concurrent)
#   RUNS=1 WORK=sgemm cli/run-concurrent.sh target/concurrent-sgemm
#
# THREADS: the pools' threads (default 2). CALLERS: K (default 1,2,4,8).
# CONFIGS: leanrt's configurations (default "default"; e.g.
# "default,legacy_spin" puts ORT's spin as ORT spins it beside).
# RUNS: runs of each command (default 3). WORK: work kinds (default
# "spin sgemm"). MS: how long each caller runs per gap (default 1000).
# SLICES: the turns each caller count's cells run in (default 10: this VM's
# speed moves within a run, and finer turns spread it over every cell alike;
# the CLI's own default is 5).
# ORT_LIBS: ONNX Runtime libraries, comma-separated (default: 1.31.1 and
# 1.32.0, installed under target/ by scripts/install-ort.sh). LEANRT_BIN: a
# leanrt binary to use instead of building one. About 2 minutes per run and
# work kind on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/concurrent}
THREADS=${THREADS:-2}
CALLERS=${CALLERS:-1,2,4,8}
RUNS=${RUNS:-3}
WORK=${WORK:-spin sgemm}
MS=${MS:-1000}
SLICES=${SLICES:-10}
CONFIGS=${CONFIGS:-default}
mkdir -p "$OUT"
B=${LEANRT_BIN:-target/release/leanrt}
[ -n "${LEANRT_BIN:-}" ] || cargo build --release -p leanrt-cli --quiet
if [ -z "${ORT_LIBS:-}" ]; then
  ORT_LIBS="$(scripts/install-ort.sh --version 1.31.1),$(scripts/install-ort.sh --version 1.32.0)"
fi
# The request scenario's run (docs/BENCHMARKS.md): 20 µs serial, 4 rounds
# of 200 µs split over the pool, 5 µs serial between rounds.
SHAPE=(--scenario concurrent --rounds 4 --round-us 200 --between-us 5 --preamble-us 20
       --callers "$CALLERS" --concurrent-gaps 0,1 --concurrent-ms "$MS" --concurrent-slices "$SLICES")
{
  echo "\$ uptime"; uptime
  "$B" info | head -3
  echo "ORT_LIBS=$ORT_LIBS"
} | tee "$OUT/machine.txt"
for i in $(seq 1 "$RUNS"); do
  for w in $WORK; do
    echo "\$ leanrt pool --threads $THREADS --config $CONFIGS --peers ort --ort-libs ORT_LIBS --work $w ${SHAPE[*]}  (run $i of $RUNS)" | tee "$OUT/$w-$i.txt"
    "$B" pool --threads "$THREADS" --config "$CONFIGS" --peers ort --ort-libs "$ORT_LIBS" --work "$w" \
      "${SHAPE[@]}" --json "$OUT/$w-$i.json" --quiet 2>&1 | tee -a "$OUT/$w-$i.txt"
  done
done
{ echo "\$ uptime"; uptime; } | tee -a "$OUT/machine.txt"
for w in $WORK; do
  python3 cli/concurrent-compare.py "$OUT"/"$w"-*.json | tee "$OUT/tables-$w.md"
done
echo "outputs in $OUT/ (tables-WORK.md: the tables)"
