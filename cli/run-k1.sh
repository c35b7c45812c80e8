#!/usr/bin/env bash
# Issue 31's one-caller targets: the request scenario (docs/BENCHMARKS.md's
# run shape), RUNS times: an A/B of two builds of the pool in one
# invocation (`--leanrt-libs old=OLD_LIB,new=NEW_LIB`: the same work sizes
# and turns for both; the hinted and the default configuration, spin work),
# then the request scenario on SGEMM work beside ONNX Runtime's default and
# no_spin (each ORT library); then the tables (medians of the per-run
# ratios).
#
#   OLD_LIB=<old build>/libleanrt.so cli/run-k1.sh [OUT_DIR]
#   BIN=<leanrt> ORT_LIBS=<libs> cli/run-k1.sh [OUT_DIR]   (SGEMM beside ORT only)
#
# OLD_LIB, NEW_LIB: the libraries (A: today's pool, B: the one under test;
# NEW_LIB defaults to target/release/libleanrt.so; without OLD_LIB there is
# no A/B, only the SGEMM command); BIN: the leanrt command
# that runs both (default target/release/leanrt; its own pool runs too: the
# new build's code twice, the measurement's spread). RUNS: runs of each
# command (default 3). REQUESTS, TURNS: requests per gap and cell, and the
# turns they run in (default 600 in 20: this VM's speed moves by up to 1.7x
# between and within runs, and the finer the turns, the more alike every
# cell sees it; 200 in 5 before). THREADS: the pools' threads (default 2).
# ORT_LIBS: as cli/run-concurrent.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/k1}
RUNS=${RUNS:-3}
OLD_LIB=${OLD_LIB:-}
NEW_LIB=${NEW_LIB:-target/release/libleanrt.so}
BIN=${BIN:-target/release/leanrt}
mkdir -p "$OUT"
if [ -z "${ORT_LIBS:-}" ]; then
  ORT_LIBS="$(scripts/install-ort.sh --version 1.31.1),$(scripts/install-ort.sh --version 1.32.0)"
fi
HINTED='spin_1000_backoff_8;session.force_spinning_stop=1'
SHAPE=(--threads "${THREADS:-2}" --scenario request --rounds 4 --round-us 200 --between-us 5 --preamble-us 20
       --request-gaps 1,10 --requests "${REQUESTS:-600}" --request-slices "${TURNS:-20}")
{ echo "\$ uptime"; uptime; "$BIN" info | head -3; echo "BIN=$BIN OLD_LIB=$OLD_LIB NEW_LIB=$NEW_LIB ORT_LIBS=$ORT_LIBS"; } | tee "$OUT/machine.txt"
LIBS="old=$OLD_LIB,new=$NEW_LIB"
for i in $(seq 1 "$RUNS"); do
  if [ -n "$OLD_LIB" ]; then
    echo "\$ $BIN pool ${SHAPE[*]} --config 'default,$HINTED' --peers none --leanrt-libs $LIBS  (run $i of $RUNS)" | tee "$OUT/ab-$i.txt"
    "$BIN" pool "${SHAPE[@]}" --config "default,$HINTED" --peers none --leanrt-libs "$LIBS" \
      --json "$OUT/ab-$i.json" --quiet 2>&1 | tee -a "$OUT/ab-$i.txt"
  fi
  echo "\$ $BIN pool ${SHAPE[*]} --work sgemm --config 'default,no_spin,$HINTED' --peers ort --ort-libs ORT_LIBS  (run $i of $RUNS)" | tee "$OUT/sgemm-$i.txt"
  "$BIN" pool "${SHAPE[@]}" --work sgemm --config "default,no_spin,$HINTED" --peers ort \
    --ort-libs "$ORT_LIBS" --json "$OUT/sgemm-$i.json" --quiet 2>&1 | tee -a "$OUT/sgemm-$i.txt"
done
python3 cli/k1-compare.py "$OUT" | tee "$OUT/tables.md"
