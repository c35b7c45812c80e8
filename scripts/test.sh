#!/usr/bin/env bash
# The README's test command: every check CI runs, in order.
#   scripts/test.sh            all stages
# On a fresh Debian machine as root it first installs what is missing
# (cmake, pkg-config, a C/C++ compiler, valgrind). Rust crates come through cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export PATH="$HOME/.cargo/bin:$PATH"
BUILD_DIR=${LEANRT_BUILD_DIR:-$ROOT/build/ci}
JOBS=${LEANRT_JOBS:-$(nproc 2>/dev/null || echo 2)}

stage() { printf '\n==> %s\n' "$*"; STAGE_START=$(date +%s); }

done_stage() { printf '    (%ss)\n' "$(( $(date +%s) - STAGE_START ))"; }

# ---- Rust toolchain (checked first: nothing below works without it) --------
# The minimum is Cargo.toml's rust-version; a distribution's own rustc is
# often older (Debian 12 ships 1.63), so say how to get a current one.
RUST_MIN=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
rust_help="install Rust >= $RUST_MIN with rustup (https://rustup.rs: curl -sSf https://sh.rustup.rs | sh -s -- -y --component rustfmt,clippy), then open a new shell or run: . \"\$HOME/.cargo/env\""
if ! command -v cargo >/dev/null || ! command -v rustc >/dev/null; then
  echo "error: cargo/rustc not found: $rust_help" >&2
  exit 1
fi
rust_have=$(rustc --version | sed -n 's/^rustc \([0-9]*\.[0-9]*\).*/\1/p')
if [ -z "$rust_have" ] || [ "$(printf '%s\n%s\n' "$RUST_MIN" "$rust_have" | sort -V | head -n1)" != "$RUST_MIN" ]; then
  echo "error: $(rustc --version) is older than the $RUST_MIN this build needs: $rust_help" >&2
  exit 1
fi
for tool in fmt clippy; do
  if ! cargo "$tool" --version >/dev/null 2>&1; then
    echo "error: cargo $tool is missing: rustup component add $( [ $tool = fmt ] && echo rustfmt || echo clippy )" >&2
    exit 1
  fi
done

# ---- system packages -------------------------------------------------------
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v cc >/dev/null || need+=(gcc)
command -v c++ >/dev/null || need+=(g++)
command -v valgrind >/dev/null || need+=(valgrind)
command -v nm >/dev/null && command -v readelf >/dev/null || need+=(binutils)
if ((${#need[@]})); then
  stage "installing ${need[*]}"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "missing ${need[*]}: install them (apt-get install ${need[*]}) or run as root" >&2
    exit 1
  fi
  done_stage
fi

# ---- Rust ------------------------------------------------------------------
stage "cargo fmt --check"
cargo fmt --all -- --check
done_stage

stage "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
done_stage

# ---- ONNX Runtime for the ort peer of `leanrt pool` and its tests ----------
# The onnxruntime wheel in a virtual environment under target/ (reused when
# there). Without python3 the ORT tests are skipped, visibly; a failing
# install fails the run.
if [ -z "${ORT_DYLIB_PATH:-}" ]; then
  stage "ONNX Runtime for the ort peer (scripts/install-ort.sh target/ort-venv)"
  if ! python3 -c 'import ensurepip, venv' 2>/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null; }
  fi
  if command -v python3 >/dev/null && python3 -c 'import ensurepip, venv' 2>/dev/null; then
    ORT_DYLIB_PATH=$(scripts/install-ort.sh target/ort-venv)
    export ORT_DYLIB_PATH
    echo "    ORT_DYLIB_PATH=$ORT_DYLIB_PATH"
  else
    echo "    SKIPPED: no python3 with venv here; the tests that run ONNX Runtime are skipped (LEANRT_SKIP_ORT=1)"
    export LEANRT_SKIP_ORT=1
  fi
  done_stage
fi

# ---- a CUDA device for the gpu_* tests (tests/cuda_backend.rs) -------------
# Without one they fail unless skipping is asked for: here it is, visibly,
# where no device is found (CI). scripts/gpu_check.sh runs them on a GPU.
if [ -z "${LEANRT_SKIP_GPU:-}" ] && ! ls /dev/nvidia[0-9]* >/dev/null 2>&1 &&
   ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
  echo "    SKIPPED: no CUDA device here; the gpu_* tests are skipped (LEANRT_SKIP_GPU=1)"
  export LEANRT_SKIP_GPU=1
fi

stage "cargo test"
cargo test --workspace --no-fail-fast
done_stage

if [ -f tests/pool_loom.rs ]; then
  # The pool's protocol models, plus the expected failure: the broken-gate
  # model runs in a child process and must fail with loom's deadlock report.
  stage "loom models of the pool's protocols (and the broken gate, which must deadlock)"
  RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$ROOT/target/loom" \
    cargo test -p leanrt --release --test pool_loom
  done_stage
fi

# The maker's one-call-at-a-time guard, and its broken variant (must fail).
stage "loom model of the maker's one-call guard (and the broken guard, which must fail)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$ROOT/target/loom" \
  cargo test -p leanrt --release --test staging_loom
done_stage

# ---- C and C++ through CMake/ctest -----------------------------------------
stage "cmake build ($BUILD_DIR)"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR" -j "$JOBS"
done_stage

stage "ctest"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"
done_stage

# ---- hardening stages (sanitizers, valgrind, short soak) -------------------
for s in sanitize valgrind soak; do
  if [ -x "scripts/$s.sh" ]; then
    stage "scripts/$s.sh (CI size)"
    "scripts/$s.sh"
    done_stage
  fi
done

echo
echo "all stages passed"
