#!/usr/bin/env bash
# Builds, on this (GPU-less) machine, everything scripts/gpu_check.sh runs on
# a GPU machine that has no Rust toolchain, and puts it in device-carry/
# (ignored by git; hand it to the device tool as a carried path):
#   device-carry/bin/  cuda_backend (Rust test binary), leanrt (the benchmark
#                      command), c_cuda_gpu, c_cuda_mock_backend
#   device-carry/lib/  libleanrt.so.0 (+ libleanrt.so link), libleanrt_mock_cuda.so
#   device-carry/ort.tar.xz  ONNX Runtime 1.31.1 and 1.32.0 (libonnxruntime.so.*,
#                      from scripts/install-ort.sh) for the pool steps of
#                      gpu_check.sh, which compare leanrt with ORT there
#                      (64 MB of libraries, 18 MB packed; LEANRT_CARRY_ORT=0
#                      leaves them out)
# Release builds, stripped; the folder must stay under 60 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export PATH="$HOME/.cargo/bin:$PATH"
CARRY=${LEANRT_CARRY:-$ROOT/device-carry}
BUILD=${LEANRT_GPU_BUILD_DIR:-$ROOT/build/gpu}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
JOBS=${LEANRT_JOBS:-2}

rm -rf "$CARRY"
mkdir -p "$CARRY/bin" "$CARRY/lib"

echo "==> Rust: CUDA test binary, the leanrt command (release)"
test_json=$(cargo test --release -p leanrt --test cuda_backend --no-run --message-format=json)
test_exe=$(printf '%s\n' "$test_json" | grep '"executable":"' | grep '"name":"cuda_backend"' |
  sed -e 's/.*"executable":"\([^"]*\)".*/\1/' | tail -n 1)
[ -x "$test_exe" ] || { echo "cannot find the cuda_backend test executable" >&2; exit 1; }
cp "$test_exe" "$CARRY/bin/cuda_backend"
cargo build --release -p leanrt-cli --bin leanrt
cp "$CARGO_TARGET_DIR/release/leanrt" "$CARRY/bin/"

echo "==> C: libleanrt, the mock driver and the CUDA C tests (cmake, release)"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLEANRT_CARGO_TARGET_DIR="$CARGO_TARGET_DIR" >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target c_cuda_gpu c_cuda_mock_backend leanrt_mock_cuda
cp "$BUILD/c_tests/c_cuda_gpu" "$BUILD/c_tests/c_cuda_mock_backend" "$CARRY/bin/"
cp "$BUILD/c_tests/libleanrt_mock_cuda.so" "$CARRY/lib/"
cp -L "$BUILD/lib/libleanrt.so.0" "$CARRY/lib/libleanrt.so.0"
ln -sf libleanrt.so.0 "$CARRY/lib/libleanrt.so"

strip --strip-unneeded "$CARRY"/bin/* "$CARRY/lib/libleanrt.so.0" "$CARRY/lib/libleanrt_mock_cuda.so"

if [ "${LEANRT_CARRY_ORT:-1}" != 0 ]; then
  echo "==> ONNX Runtime 1.31.1 and 1.32.0 for the pool steps (scripts/install-ort.sh), packed"
  ort=$(mktemp -d)
  for v in 1.31.1 1.32.0; do
    cp -L "$(scripts/install-ort.sh --version "$v")" "$ort/"
  done
  tar -C "$ort" -cf - . | xz -T0 -6 > "$CARRY/ort.tar.xz"
  rm -rf "$ort"
fi
git rev-parse HEAD > "$CARRY/COMMIT" 2>/dev/null || true
size_kb=$(du -sk "$CARRY" | cut -f1)
echo "==> $CARRY: ${size_kb} KB"
ls -l "$CARRY/bin" "$CARRY/lib"
if [ "$size_kb" -gt $((60 * 1024)) ]; then
  echo "device-carry is over 60 MB" >&2
  exit 1
fi
