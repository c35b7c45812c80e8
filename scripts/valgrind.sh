#!/usr/bin/env bash
# valgrind memcheck over the C/C++ test programs (a stage of scripts/test.sh):
# zero errors and zero definite/indirect leaks, or the stage fails.
#
#   scripts/valgrind.sh                 every test program
#   scripts/valgrind.sh 'hardening|abi' only programs whose test name matches
#
# The programs run with LEANRT_TEST_SMALL=1 (the tests honour it with smaller
# sizes and iteration counts). Programs are found from the ctest list
# (targets c_<area>_<name>); tests that are CMake scripts rather than
# programs (the export check, the consumer project) are skipped, the swap
# programs run plainly (served by the stand-in) and with LD_PRELOAD=libleanrt.
# Env: LEANRT_VALGRIND_BUILD (default build/valgrind), LEANRT_VALGRIND_TIMEOUT
# (seconds per program, default 240), LEANRT_JOBS, LEANRT_VALGRIND_EXCLUDE
# (a regex of test names to leave out).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export PATH="$HOME/.cargo/bin:$PATH"
BUILD=${LEANRT_VALGRIND_BUILD:-$ROOT/build/valgrind}
JOBS=${LEANRT_JOBS:-$(nproc 2>/dev/null || echo 2)}
FILTER=${1:-.}
TIMEOUT=${LEANRT_VALGRIND_TIMEOUT:-240}
export LEANRT_TEST_SMALL=1

command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
cmake -S . -B "$BUILD" -DLEANRT_CARGO_PROFILE=dev -DLEANRT_CARGO_TARGET_DIR="$ROOT/target" \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$BUILD" -j "$JOBS" >/dev/null

VG=(valgrind --quiet --error-exitcode=1 --leak-check=full
    --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
    --track-origins=yes --fair-sched=yes)
LOGDIR="$BUILD/valgrind-logs"
mkdir -p "$LOGDIR"
pass=0; fail=0; failed=()
run_one() { # name, env..., program
  local name=$1; shift
  local log="$LOGDIR/$name.log"
  local t0=$(date +%s)
  if timeout "$TIMEOUT" env "$@" >"$log" 2>&1; then
    printf '  %-40s ok   (%ss)\n' "$name" "$(( $(date +%s) - t0 ))"
    pass=$((pass + 1))
  else
    local rc=$?
    [ $rc = 77 ] && { printf '  %-40s skipped\n' "$name"; return; }
    printf '  %-40s FAIL (rc %s, %ss), log %s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$log"
    tail -40 "$log" | sed 's/^/    | /'
    fail=$((fail + 1)); failed+=("$name")
  fi
}

echo "== valgrind memcheck (filter '$FILTER')"
for exe in "$BUILD"/c_tests/c_*; do
  [ -x "$exe" ] && [ -f "$exe" ] || continue
  base=$(basename "$exe")
  rest=${base#c_}
  area=${rest%%_*}
  name="$area.${rest#*_}"
  [[ "$name" =~ $FILTER ]] || continue
  [ -n "${LEANRT_VALGRIND_EXCLUDE:-}" ] && [[ "$name" =~ $LEANRT_VALGRIND_EXCLUDE ]] && continue
  if [ "$area" = swap ]; then
    run_one "$name(standin)" "${VG[@]}" "$exe"
    # The preloaded leanrt serves the lrt_* calls; valgrind follows LD_PRELOAD.
    run_one "$name(leanrt)" LD_PRELOAD="$BUILD/lib/libleanrt.so.0" "${VG[@]}" "$exe"
  else
    run_one "$name" "${VG[@]}" "$exe"
  fi
done
echo "valgrind: $pass passed, $fail failed"
[ "$fail" = 0 ] || { echo "failed: ${failed[*]}" >&2; exit 1; }
