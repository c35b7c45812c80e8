#!/usr/bin/env bash
# Runs the exact commands whose output docs/BENCHMARKS.md reports and keeps
# their text, JSON and SVG output in one folder.
#
#   cli/run-benchmarks.sh [OUT_DIR]              this machine (host backend; OUT_DIR defaults to target/bench-out)
#   THREADS=1,2,4,8,16 BACKEND=cuda:0 cli/run-benchmarks.sh target/out-h200
#
# THREADS: thread counts of `leanrt pool` (default: 1 and the physical cores).
# BACKEND: extra staging backend besides host (e.g. cuda:0); also runs the
#          H2D bandwidth mode on it.
# LEANRT_BIN: use this leanrt binary instead of building one (e.g. a
#          target/release/leanrt built elsewhere and carried over).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/bench-out}
mkdir -p "$OUT"
if [ -n "${LEANRT_BIN:-}" ]; then
  B=$LEANRT_BIN
else
  cargo build --release -p leanrt-cli --quiet
  B=target/release/leanrt
fi
FAILED=()
run() { # name, args...   (a failing command is reported at the end; the others still run)
  local name=$1; shift
  echo "\$ leanrt $*" | tee "$OUT/$name.txt"
  "$B" "$@" --json "$OUT/$name.json" --svg "$OUT/$name.svg" 2>&1 | tee -a "$OUT/$name.txt" || FAILED+=("$name")
}
echo "\$ leanrt info" | tee "$OUT/info.txt"
"$B" info --json "$OUT/info.json" | tee -a "$OUT/info.txt"
uname -a | tee -a "$OUT/info.txt"
run bench bench
run bind bind --window 16384,131072 --tasks 0,64,1024,16384 --runs 20
run bandwidth-host bind --bandwidth --backend host --runs 20
if [ -n "${BACKEND:-}" ]; then
  run "bind-${BACKEND//:/}" bind --backend "$BACKEND" --window 16384,131072 --tasks 0,64,1024,16384 --runs 20
  run "bind-${BACKEND//:/}-pinned" bind --backend "$BACKEND" --pin-mirror --window 16384,131072 --tasks 64 --runs 20
  run "bandwidth-${BACKEND//:/}" bind --bandwidth --backend "$BACKEND" --runs 20
fi
PHYS=$("$B" info | awk -F: '/physical cores/ {gsub(/ /, "", $2); print $2}')
THREADS=${THREADS:-1,$PHYS}
run pool pool --threads "$THREADS" --config default,no_spin,spin_1000,backoff_8,spin_1000_backoff_8 --peers rayon,openmp \
  --scenario fork_join,bursty,idle_after_burst,wake,throughput
# Inference runs separated by gaps: ORT's default policy, spin_1000_backoff_8
# with and without session.force_spinning_stop (which brackets each run with
# enable/disable spinning), and the adaptive spin key (skipped, with a note,
# where the library does not accept it); then the same oversubscribed.
REQ_CONFIGS="default,spin_1000_backoff_8,spin_1000_backoff_8;session.force_spinning_stop=1,spin_1000_backoff_8;leanrt.intra_op.adaptive_spin=1"
run pool-request pool --threads "$THREADS" --config "$REQ_CONFIGS" --peers rayon,openmp --scenario request,wake
run pool-section pool --threads "$THREADS" --config default,spin_1000_backoff_8 --peers rayon,openmp \
  --scenario section --section-loops 1,4,16
run pool-request-oversubscribed pool --threads "$THREADS" --config "$REQ_CONFIGS" --peers rayon,openmp \
  --scenario request --oversubscribe
echo "outputs in $OUT/"
if ((${#FAILED[@]})); then
  echo "failed: ${FAILED[*]}" >&2
  exit 1
fi
