#!/usr/bin/env bash
# Issue 31's one-caller targets: the request scenario (docs/BENCHMARKS.md's
# run shape) with two leanrt binaries in turn, RUNS times (A/B: the hinted
# and the default configuration, spin work), then the request scenario on
# SGEMM work beside ONNX Runtime's default and no_spin (each ORT library);
# then the tables (medians of the per-run ratios).
#
#   OLD=target/leanrt-main-pool NEW=target/release/leanrt cli/run-k1.sh [OUT_DIR]
#
# OLD, NEW: the binaries (A: today's pool, B: the one under test). RUNS:
# runs of each command (default 3). ORT_LIBS: as cli/run-concurrent.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/k1}
RUNS=${RUNS:-3}
OLD=${OLD:?the binary with today\'s pool}
NEW=${NEW:-target/release/leanrt}
mkdir -p "$OUT"
if [ -z "${ORT_LIBS:-}" ]; then
  ORT_LIBS="$(scripts/install-ort.sh --version 1.31.1),$(scripts/install-ort.sh --version 1.32.0)"
fi
HINTED='spin_1000_backoff_8;session.force_spinning_stop=1'
SHAPE=(--threads 2 --scenario request --rounds 4 --round-us 200 --between-us 5 --preamble-us 20
       --request-gaps 1,10 --requests 200)
{ echo "\$ uptime"; uptime; "$NEW" info | head -3; echo "OLD=$OLD NEW=$NEW ORT_LIBS=$ORT_LIBS"; } | tee "$OUT/machine.txt"
for i in $(seq 1 "$RUNS"); do
  for side in old new; do
    b=$OLD; [ $side = new ] && b=$NEW
    echo "\$ $b pool ${SHAPE[*]} --config 'default,$HINTED' --peers none  (run $i of $RUNS)" | tee "$OUT/ab-$side-$i.txt"
    "$b" pool "${SHAPE[@]}" --config "default,$HINTED" --peers none \
      --json "$OUT/ab-$side-$i.json" --quiet 2>&1 | tee -a "$OUT/ab-$side-$i.txt"
  done
  echo "\$ $NEW pool ${SHAPE[*]} --work sgemm --config 'default,no_spin,$HINTED' --peers ort --ort-libs ORT_LIBS  (run $i of $RUNS)" | tee "$OUT/sgemm-$i.txt"
  "$NEW" pool "${SHAPE[@]}" --work sgemm --config "default,no_spin,$HINTED" --peers ort \
    --ort-libs "$ORT_LIBS" --json "$OUT/sgemm-$i.json" --quiet 2>&1 | tee -a "$OUT/sgemm-$i.txt"
done
python3 cli/k1-compare.py "$OUT" | tee "$OUT/tables.md"
