#!/usr/bin/env bash
# Runs the CUDA checks, and the thread pool's figures on the machine's cores,
# on a GPU machine with no Rust toolchain, from what scripts/gpu_prepare.sh
# put in device-carry/. Results go to $OUT (default ./gpu-out): one .txt per
# step, JSON figures, summary.txt.
#
#   scripts/gpu_check.sh [all|cuda|pool]      (default all)
#
# cuda (about 4 minutes): environment; Rust CUDA tests (real GPU + mock); C
#   CUDA tests; leanrt info; leanrt bind --backend cuda --bandwidth (H2D
#   pageable vs pinned at 1/16/81 MB); leanrt bind --backend cuda (staging
#   cost per policy, with the synchronize and the time inside the driver's
#   H2D copies), from a pageable and from a pinned mirror.
# pool (about 4 minutes on 16 cores; issue 31's figures): ONNX Runtime 1.31.1
#   and 1.32.0 unpacked from device-carry/ort.tar.xz beside leanrt, with as
#   many threads per pool as the machine has cores (LEANRT_POOL_THREADS):
#   cli/run-k1.sh's one caller on SGEMM work, once (200 requests per gap in
#   5 turns; no A/B); then cli/run-concurrent.sh, once (K = 1, 2, 4, 8, 16
#   and twice the threads, or LEANRT_POOL_CALLERS; spin and SGEMM work;
#   LEANRT_POOL_MS per caller and gap, default 500). Their tables need
#   python3 there.
# Every step has its own timeout. Exit status: 0 when every step passed, 1
# otherwise (a step that only skipped for lack of a device counts as failed
# here: this script exists to run on a GPU). LEANRT_GPU_CHECK_DRY_RUN=1
# rehearses the cuda part over the mock driver; the pool part needs no GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
PART=${1:-all}
case "$PART" in
  all|cuda|pool) ;;
  *) echo "gpu_check.sh: unknown part '$PART' (all, cuda or pool)" >&2; exit 2 ;;
esac
CARRY=${LEANRT_CARRY:-device-carry}
OUT=${OUT:-./gpu-out}
mkdir -p "$OUT"
CARRY=$(cd "$CARRY" && pwd) || { echo "no $CARRY: run scripts/gpu_prepare.sh first" >&2; exit 1; }
BIN=$CARRY/bin
LIB=$CARRY/lib
MOCK=$LIB/libleanrt_mock_cuda.so
export LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset LEANRT_CUDA_LIBRARY
if [ "${LEANRT_GPU_CHECK_DRY_RUN:-0}" = 1 ]; then
  # Rehearsal without a GPU: the mock driver stands in for libcuda.so.1.
  export LEANRT_CUDA_LIBRARY=$MOCK MOCK_CUDA_FILL=0
  echo "DRY RUN: every step runs over the mock driver $MOCK"
fi
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
FAILED=0
START=$(date +%s)

# step NAME TIMEOUT_S CMD...: runs CMD with its output in $OUT/NAME.txt.
step() {
  local name=$1 limit=$2
  shift 2
  local t0 rc verdict
  t0=$(date +%s)
  printf '==> %s\n' "$name"
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && grep -q 'skipped: no CUDA device' "$OUT/$name.txt"; then
    verdict=SKIPPED
  elif [ $rc -eq 0 ]; then
    verdict=PASS
  elif [ $rc -eq 77 ]; then
    verdict=SKIPPED
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    verdict="TIMEOUT(${limit}s)"
  else
    verdict="FAIL(rc=$rc)"
  fi
  [ "$verdict" = PASS ] || FAILED=1
  printf '%-28s %-14s %4ss\n' "$name" "$verdict" "$(( $(date +%s) - t0 ))" | tee -a "$SUMMARY"
  tail -n 15 "$OUT/$name.txt" | sed 's/^/    /'
}

{
  echo "date: $(date -u)"
  echo "host: $(uname -a)"
  echo "carry commit: $(cat "$CARRY/COMMIT" 2>/dev/null || echo unknown)"
  ldd --version 2>&1 | head -n 1
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv
  (ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libcudart') || echo "ldconfig lists no libcuda"
  nproc
} > "$OUT/environment.txt" 2>&1
cat "$OUT/environment.txt"

cuda_steps() {
  # Rust: the gpu_* tests on the real device, the mock_* tests on the mock.
  step rust_cuda_tests 90 env LEANRT_MOCK_CUDA_LIB="$MOCK" "$BIN/cuda_backend" --test-threads=1 --nocapture
  # C: the real device, then the same program and the mock test over the mock.
  step c_cuda_gpu 60 "$BIN/c_cuda_gpu"
  step c_cuda_gpu_on_mock 30 env LEANRT_CUDA_LIBRARY="$MOCK" "$BIN/c_cuda_gpu"
  step c_cuda_mock_backend 30 env LEANRT_CUDA_LIBRARY="$MOCK" "$BIN/c_cuda_mock_backend"
  # Figures, all from the leanrt command.
  if [ -x "$BIN/leanrt" ]; then
    step leanrt_info 20 "$BIN/leanrt" info
    step leanrt_bind_bandwidth 45 "$BIN/leanrt" bind --backend cuda --bandwidth --runs 7 -q \
      --json "$OUT/bind_bandwidth.json"
    step leanrt_bind_cuda 120 "$BIN/leanrt" bind --backend cuda --runs 7 --warmup 1 -q \
      --json "$OUT/bind_cuda.json" --svg "$OUT/bind_cuda.svg"
    step leanrt_bind_cuda_pinned 60 "$BIN/leanrt" bind --backend cuda --pin-mirror \
      --policy bounded,compact --runs 7 --warmup 1 -q --json "$OUT/bind_cuda_pinned.json"
  else
    echo "leanrt command not carried" | tee -a "$SUMMARY"
    FAILED=1
  fi
}

# The pool's figures (the header); ORT from the carried archive.
pool_steps() {
  local threads=${LEANRT_POOL_THREADS:-$(nproc)} ort libs
  if ! [ -x "$BIN/leanrt" ] || ! [ -f "$CARRY/ort.tar.xz" ]; then
    echo "pool steps not run: $CARRY lacks bin/leanrt or ort.tar.xz (scripts/gpu_prepare.sh)" | tee -a "$SUMMARY"
    FAILED=1
    return
  fi
  ort=$(mktemp -d)
  tar -C "$ort" -xJf "$CARRY/ort.tar.xz"
  libs="$ort/libonnxruntime.so.1.31.1,$ort/libonnxruntime.so.1.32.0"
  step pool_k1_sgemm 240 env BIN="$BIN/leanrt" ORT_LIBS="$libs" THREADS="$threads" RUNS=1 \
    REQUESTS=200 TURNS=5 cli/run-k1.sh "$OUT/k1"
  step pool_concurrent 420 env LEANRT_BIN="$BIN/leanrt" ORT_LIBS="$libs" THREADS="$threads" \
    CALLERS="${LEANRT_POOL_CALLERS:-1,2,4,8,16,$((2 * threads))}" RUNS=1 MS="${LEANRT_POOL_MS:-500}" SLICES=1 \
    cli/run-concurrent.sh "$OUT/concurrent"
  rm -rf "$ort"
}

[ "$PART" = pool ] || cuda_steps
[ "$PART" = cuda ] || pool_steps

printf 'total %ss; %s\n' "$(( $(date +%s) - START ))" \
  "$([ $FAILED -eq 0 ] && echo 'all steps passed' || echo 'SOME STEPS DID NOT PASS')" | tee -a "$SUMMARY"
exit $FAILED
