#!/usr/bin/env bash
# The README's test command: every check CI runs, in order.
#   scripts/test.sh            all stages
# On a fresh Debian machine as root it first installs what is missing
# (cmake, pkg-config, a C/C++ compiler, valgrind, abigail-tools, lintian;
# for the ARM64 stage rustup's aarch64 target, Debian's cross compilers and
# qemu-user-static; debootstrap for the older userland). Rust crates come
# through cargo, zig and cargo-zigbuild from PyPI (scripts/install-zig.sh).
# A stage that cannot run here says SKIPPED and how to install what it lacks;
# LEANRT_SKIP_ARM64=1 leaves the ARM64 stage out on purpose.
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
command -v abidiff >/dev/null || need+=(abigail-tools)
command -v lintian >/dev/null || need+=(lintian)
# debootstrap makes the older userland of the last stage (it needs root)
[ "$(id -u)" != 0 ] || command -v debootstrap >/dev/null || need+=(debootstrap)
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
  stage "ONNX Runtime for the ort peer (scripts/install-ort.sh: 1.31.1 and 1.32.0 under target/)"
  if ! python3 -c 'import ensurepip, venv' 2>/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null; }
  fi
  if command -v python3 >/dev/null && python3 -c 'import ensurepip, venv' 2>/dev/null; then
    ORT_DYLIB_PATH=$(scripts/install-ort.sh --version 1.31.1)
    export ORT_DYLIB_PATH
    echo "    ORT_DYLIB_PATH=$ORT_DYLIB_PATH"
    # Both releases the ort peer loads: the concurrent scenario's CLI test
    # runs one row set per library (--ort-libs).
    ort_132=$(scripts/install-ort.sh --version 1.32.0)
    export LEANRT_TEST_ORT_LIBS="$ORT_DYLIB_PATH,$ort_132"
    echo "    LEANRT_TEST_ORT_LIBS=$LEANRT_TEST_ORT_LIBS"
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
  stage "loom models of the pool's protocols (and their broken twins: gate, caller count, CPU share, timed sleep, enable's wake, which must fail)"
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

# ---- ARM64 under qemu-user --------------------------------------------------
# The aarch64 build is linked with Debian's cross compiler and run by
# qemu-aarch64-static with the cross sysroot (-L), named explicitly: binfmt_misc
# is often not there (containers). What runs and what is left out, and why:
# docs/PLATFORMS.md.
ARM64_TARGET=aarch64-unknown-linux-gnu
ARM64_SYSROOT=/usr/aarch64-linux-gnu
arm64_debs=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static)
arm64_missing() {
  local m=()
  rustup target list --installed 2>/dev/null | grep -qx "$ARM64_TARGET" || m+=("rustup target add $ARM64_TARGET")
  local d=()
  command -v aarch64-linux-gnu-gcc >/dev/null || d+=(gcc-aarch64-linux-gnu)
  command -v aarch64-linux-gnu-g++ >/dev/null || d+=(g++-aarch64-linux-gnu)
  [ -e "$ARM64_SYSROOT/lib/ld-linux-aarch64.so.1" ] || d+=(libc6-dev-arm64-cross)
  command -v qemu-aarch64-static >/dev/null || d+=(qemu-user-static)
  ((${#d[@]})) && m+=("apt-get install ${d[*]}")
  ((${#m[@]})) && printf '%s; ' "${m[@]}"
  return 0
}
ARM64=0
if [ "${LEANRT_SKIP_ARM64:-}" = 1 ]; then
  ARM64_SKIP="LEANRT_SKIP_ARM64=1"
else
  missing=$(arm64_missing)
  if [ -n "$missing" ] && [ "$(id -u)" = 0 ]; then
    stage "installing what the ARM64 stage needs (${missing%; })"
    rustup target add "$ARM64_TARGET" >/dev/null 2>&1 || true
    if command -v apt-get >/dev/null && [[ $missing == *apt-get* ]]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${arm64_debs[@]}" >/dev/null 2>&1 \
        || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${arm64_debs[@]}" >/dev/null; } || true
    fi
    done_stage
    missing=$(arm64_missing)
  fi
  if [ -z "$missing" ]; then
    ARM64=1
  else
    ARM64_SKIP="missing: ${missing%; } (as root)"
  fi
fi

if ((ARM64)); then
  ARM64_BUILD=$ROOT/build/aarch64
  ARM64_EMULATOR="qemu-aarch64-static -L $ARM64_SYSROOT -E LEANRT_EMULATED=qemu-user"
  # (ORT_DYLIB_PATH names the host's x86-64 ONNX Runtime: not for these.)
  arm64_cargo() {
    env -u ORT_DYLIB_PATH CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
      CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="$ARM64_EMULATOR" \
      LEANRT_MOCK_CUDA_LIB=$ARM64_BUILD/c_tests/libleanrt_mock_cuda.so LEANRT_SKIP_ORT=1 \
      cargo "$1" --target "$ARM64_TARGET" "${@:2}"
  }
  stage "ARM64: cargo clippy -D warnings (aarch64)"
  arm64_cargo clippy --workspace --all-targets -- -D warnings
  done_stage

  stage "ARM64: cmake build and ctest under qemu-user ($ARM64_BUILD)"
  cmake -S . -B "$ARM64_BUILD" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/aarch64-linux-gnu.cmake" \
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CROSSCOMPILING_EMULATOR=${ARM64_EMULATOR// /;}" >/dev/null
  cmake --build "$ARM64_BUILD" -j "$JOBS" >/dev/null
  ctest --test-dir "$ARM64_BUILD" --output-on-failure -j "$JOBS"
  done_stage

  # The library's tests, the command's unit tests; not the command's own
  # tests (cli/tests: they start the leanrt binary, which needs binfmt_misc
  # under emulation) and not ONNX Runtime (docs/PLATFORMS.md).
  stage "ARM64: cargo test under qemu-user (leanrt; leanrt-cli unit tests)"
  echo "    under emulation the resident-memory and page-fault bounds are skipped (qemu's own"
  echo "    memory counts in the process); cli/tests and ONNX Runtime are left out: docs/PLATFORMS.md"
  arm64_cargo test -p leanrt --lib --tests --no-fail-fast
  arm64_cargo test -p leanrt-cli --bins --no-fail-fast
  done_stage

  stage "ARM64: leanrt info under qemu-user"
  arm64_cargo build -q -p leanrt-cli
  info=$(qemu-aarch64-static -L "$ARM64_SYSROOT" "target/$ARM64_TARGET/debug/leanrt" info)
  printf '%s\n' "$info" | sed 's/^/    /'
  for want in "architecture:        aarch64" "pause:               isb sy, " "waitpkg (tpause):    n/a"; do
    grep -qF "$want" <<<"$info" || { echo "leanrt info on aarch64 lacks '$want'" >&2; exit 1; }
  done
  done_stage
else
  printf '\n==> ARM64 stage SKIPPED: %s\n' "$ARM64_SKIP"
fi

# ---- release packages --------------------------------------------------------
# Tarballs and Debian packages for x86-64 (and ARM64 where the stage above
# could run), built by cargo-zigbuild against glibc 2.28; package.sh fails if
# a library needs a newer GLIBC_ symbol version or lacks its own versions.
pkg_targets=(x86_64)
((ARM64)) && pkg_targets+=(aarch64)
VERSION=$(sed -n 's/^version = "\([0-9.]*\)"$/\1/p' Cargo.toml | head -n 1)
if python3 -c 'import ensurepip, venv' 2>/dev/null; then
  stage "release packages: scripts/package.sh ${pkg_targets[*]}"
  scripts/package.sh "${pkg_targets[@]}"
  ((ARM64)) || echo "    SKIPPED: the ARM64 packages ($ARM64_SKIP)"
  done_stage

  stage "lintian (fails on errors)"
  rc=0
  report=$(lintian --fail-on error target/package/*.deb 2>&1) || rc=$?
  printf '%s\n' "$report" | grep -v "running with root privileges" | sed 's/^/    /'
  ((rc == 0)) || { echo "lintian found errors" >&2; exit 1; }
  echo "    no errors"
  done_stage

  # The README's routes against the packages installed in the system prefix,
  # with no path given. Root only: dpkg -i changes the machine (and the
  # packages are removed afterwards).
  if [ "$(id -u)" = 0 ]; then
    stage "Debian packages: dpkg -i, the README's routes against /usr, dpkg -r"
    (
      flock 9
      if dpkg -s libleanrt0 >/dev/null 2>&1; then
        echo "    note: libleanrt0 was installed already; it is replaced and then removed"
      fi
      trap 'dpkg -r libleanrt-dev libleanrt0 >/dev/null 2>&1 || true' EXIT
      dpkg -i "target/package/libleanrt0_${VERSION}-1_amd64.deb" "target/package/libleanrt-dev_${VERSION}-1_amd64.deb" >/dev/null
      cmake -DSOURCE_DIR="$ROOT/c_tests/consumer" -DWORK_DIR="$BUILD_DIR/installed-consumer" \
        -DGENERATOR="Unix Makefiles" -DLEANRT_SOURCE_DIR="$ROOT" -DINSTALLED_PREFIX=/usr \
        -DSWAP_PROGRAM="$BUILD_DIR/c_tests/c_swap_staging" -P c_tests/consumer/run_consumer.cmake \
        | grep -E "ok|passed" | sed 's/^\(-- \)*/    /'
    ) 9> /tmp/leanrt-packages.lock
    done_stage
  else
    printf '\n==> Debian packages SKIPPED: dpkg -i needs root\n'
  fi

  stage "the release libraries in an older userland (Debian 11, glibc 2.31)"
  rc=0
  LEANRT_CONTROL_LIB_x86_64="$BUILD_DIR/lib/libleanrt.so.$VERSION" \
    LEANRT_CONTROL_LIB_aarch64="${ARM64_BUILD:+$ARM64_BUILD/lib/libleanrt.so.$VERSION}" \
    scripts/old-userland.sh "${pkg_targets[@]}" || rc=$?
  ((rc == 0 || rc == 77)) || exit "$rc"
  done_stage
else
  printf '\n==> release packages SKIPPED: no python3 with venv for cargo-zigbuild and zig (apt-get install python3-venv)\n'
fi

echo
echo "all stages passed"
