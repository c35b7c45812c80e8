#!/usr/bin/env bash
# Builds the C and C++ tests with sanitizers in separate build dirs and runs
# them with ctest (a stage of scripts/test.sh).
#
#   scripts/sanitize.sh            ASan+UBSan over every C/C++ test, then TSan
#                                  over the threaded ones
#   scripts/sanitize.sh asan       only AddressSanitizer + UndefinedBehaviorSanitizer
#   scripts/sanitize.sh tsan       only ThreadSanitizer
#
# The test programs are instrumented (-DLEANRT_SANITIZE=...); the Rust library
# is not (RUSTFLAGS=-Zsanitizer needs nightly). ASan still checks every
# access the C side makes (including to memory leanrt hands out, which comes
# from malloc/mmap), every malloc/free pairing, and leaks (LeakSanitizer sees
# Rust's allocations too, since Rust allocates through malloc).
# LEANRT_TEST_SMALL=1 is set so that the tests use their smaller sizes.
# Env: LEANRT_SANITIZE_BUILD (default build/sanitize), LEANRT_JOBS,
# LEANRT_SANITIZE_EXCLUDE (a ctest -E regex of tests to leave out).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export PATH="$HOME/.cargo/bin:$PATH"
BASE=${LEANRT_SANITIZE_BUILD:-$ROOT/build/sanitize}
JOBS=${LEANRT_JOBS:-$(nproc 2>/dev/null || echo 2)}
WHAT=${1:-all}
export LEANRT_TEST_SMALL=1
failed=()
# lifecycle.exit_live ends its children with live objects on purpose, which
# LeakSanitizer would report; lifecycle.dl_cycles measures resident memory,
# which ASan's quarantine swamps. pool.fork and cuda.mock_fork_busy fork a
# process whose other threads are allocating: the ASan runtime of the
# distribution's GCC (libasan.so.8) has no fork interceptor (nm -D shows
# only vfork), so its allocator is not locked across fork and a child can
# inherit an allocator lock held by a thread that no longer exists and hang
# in its first malloc (seen once in CI; leanrt itself takes no inherited
# lock there). All four run unsanitized in the ctest stage, the fork tests
# under valgrind too. hardening.oom_sweep needs its failing allocator to be
# the process's malloc, and the sanitizer runtime replaces malloc before it
# (the program checks, and fails, rather than pass without a failure
# injected): it runs in the ctest stage only.
EXCL=(-E "^(lifecycle\\.(exit_live|dl_cycles)|pool\\.fork|cuda\\.mock_fork_busy|hardening\\.oom_sweep)\$${LEANRT_SANITIZE_EXCLUDE:+|$LEANRT_SANITIZE_EXCLUDE}")

# The library in the dev profile, sharing cargo's target dir with `cargo test`
# (no second release/LTO build).
configure() { # dir sanitizers
  cmake -S . -B "$1" -DLEANRT_SANITIZE="$2" -DLEANRT_CARGO_PROFILE=dev \
    -DLEANRT_CARGO_TARGET_DIR="$ROOT/target" -DCMAKE_BUILD_TYPE=Debug >/dev/null
  cmake --build "$1" -j "$JOBS" >/dev/null
}

if [ "$WHAT" = all ] || [ "$WHAT" = asan ]; then
  echo "== ASan + UBSan: every C/C++ test"
  configure "$BASE/asan" address,undefined
  # halt_on_error: a UBSan report fails the test. verify_asan_link_order=0:
  # the swap test preloads libleanrt ahead of the ASan runtime (harmless here:
  # leanrt does not replace malloc).
  ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0:detect_stack_use_after_return=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir "$BASE/asan" --output-on-failure -j "$JOBS" "${EXCL[@]}" || failed+=(asan)
fi

if [ "$WHAT" = all ] || [ "$WHAT" = tsan ]; then
  # The threaded tests. TSan sees only the instrumented C side: leanrt's own
  # synchronization (Rust atomics, futex-based parking) is invisible to it,
  # so work handed through the pool may be reported as a race although it is
  # ordered. The suppressions file names those frames (inside libleanrt);
  # a race between two C frames is still reported and fails the test.
  TSAN_TESTS=${LEANRT_TSAN_TESTS:-'^(abi\.last_error|hardening\.pool_threads|pool\.(concurrency|schedule|spinning|custom_threads|sections)|cpp\.(sections|profiling))$'}
  echo "== TSan: tests matching $TSAN_TESTS"
  configure "$BASE/tsan" thread
  # TSan needs the address space layout it was built for; with a high ASLR
  # entropy it fails to start ("unexpected memory mapping"): rerun it under
  # setarch -R (no randomization) where that happens.
  runner=()
  if command -v setarch >/dev/null && [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)" -gt 28 ]; then
    runner=(setarch "$(uname -m)" -R)
  fi
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/c_tests/hardening/tsan.supp" \
    "${runner[@]}" ctest --test-dir "$BASE/tsan" --output-on-failure -j "$JOBS" -R "$TSAN_TESTS" "${EXCL[@]}" \
    || failed+=(tsan)
fi
if ((${#failed[@]})); then
  echo "sanitizers: failures under ${failed[*]}" >&2
  exit 1
fi
echo "sanitizers: all passed"
