#!/usr/bin/env bash
# leanrt against ONNX Runtime's own intra-op pool on the same work, in the
# same runs (`leanrt pool --peers ort`): the request scenario RUNS times, then
# the oversubscribed variant RUNS times, and the tables of docs/BENCHMARKS.md
# (medians of the runs, ratios within each run) from their JSON.
#
#   cli/run-ort-compare.sh [OUT_DIR]          (default target/ort-compare)
#   THREADS=4 RUNS=5 cli/run-ort-compare.sh target/ort-compare-4t
#
# THREADS: the pool's threads (default 2). RUNS: runs of each command
# (default 3). REQUESTS: runs per gap (default 200). ORT_DYLIB_PATH: the ONNX Runtime library (default: the
# onnxruntime 1.31.1 wheel, installed into target/ort-1.31.1 by
# scripts/install-ort.sh). LEANRT_BIN: a leanrt binary to use instead of
# building one.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/ort-compare}
THREADS=${THREADS:-2}
RUNS=${RUNS:-3}
mkdir -p "$OUT"
B=${LEANRT_BIN:-target/release/leanrt}
[ -n "${LEANRT_BIN:-}" ] || cargo build --release -p leanrt-cli --quiet
if [ -z "${ORT_DYLIB_PATH:-}" ]; then
  ORT_DYLIB_PATH=$(scripts/install-ort.sh --version 1.31.1)
fi
export ORT_DYLIB_PATH
# The presets ORT has, the hinted configuration (ORT's own
# session.force_spinning_stop: spinning enabled when a run starts, disabled
# when it ends), and leanrt's adaptive key (leanrt only).
CONFIGS="default,no_spin,spin_1000,backoff_8,spin_1000_backoff_8,spin_1000_backoff_8;session.force_spinning_stop=1,adaptive"
SHAPE=(--scenario request --rounds 4 --round-us 200 --between-us 5 --preamble-us 20
       --request-gaps 1,10 --requests "${REQUESTS:-200}")
{
  echo "\$ uptime"; uptime
  "$B" info | head -3
  echo "ORT_DYLIB_PATH=$ORT_DYLIB_PATH"
} | tee "$OUT/machine.txt"
for i in $(seq 1 "$RUNS"); do
  echo "\$ leanrt pool --threads $THREADS --config '$CONFIGS' --peers ort ${SHAPE[*]}  (run $i of $RUNS)" | tee "$OUT/request-$i.txt"
  "$B" pool --threads "$THREADS" --config "$CONFIGS" --peers ort "${SHAPE[@]}" \
    --json "$OUT/request-$i.json" --quiet 2>&1 | tee -a "$OUT/request-$i.txt"
done
OVER="default,adaptive,spin_1000_backoff_8;session.force_spinning_stop=1"
for i in $(seq 1 "$RUNS"); do
  echo "\$ leanrt pool --threads $THREADS --config '$OVER' --peers ort ${SHAPE[*]} --oversubscribe  (run $i of $RUNS)" | tee "$OUT/over-$i.txt"
  "$B" pool --threads "$THREADS" --config "$OVER" --peers ort "${SHAPE[@]}" --oversubscribe \
    --json "$OUT/over-$i.json" --quiet 2>&1 | tee -a "$OUT/over-$i.txt"
done
{ echo "\$ uptime"; uptime; } | tee -a "$OUT/machine.txt"
python3 cli/ort-compare.py --runs "$OUT"/request-*.json --oversubscribed "$OUT"/over-*.json | tee "$OUT/tables.md"
echo "outputs in $OUT/ (tables.md: the tables)"
