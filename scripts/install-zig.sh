#!/usr/bin/env bash
# Installs the release toolchain of scripts/package.sh: cargo-zigbuild and
# zig, both from PyPI (cargo-zigbuild, ziglang), in a Python virtual
# environment, then prints its bin/ folder (put it first on PATH).
#
#   scripts/install-zig.sh [VENV]        VENV defaults to target/zig-venv
#
# Why zig: it links against the glibc symbol versions of the release it is
# told (x86_64-unknown-linux-gnu.2.28), for x86-64 and ARM64 alike, with
# its own lld (which the symbol versions need), and comes as one package.
# An existing VENV with these versions is reused. Needs python3 with venv.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-target/zig-venv}
ZIGBUILD_VERSION=0.24.1
ZIG_VERSION=0.17.1
have() {
  [ -x "$VENV/bin/cargo-zigbuild" ] &&
    "$VENV/bin/cargo-zigbuild" --version 2>/dev/null | grep -qx "cargo-zigbuild $ZIGBUILD_VERSION" &&
    [ "$("$VENV/bin/python3" -m ziglang version 2>/dev/null)" = "$ZIG_VERSION" ]
}
if have; then
  echo "cargo-zigbuild $ZIGBUILD_VERSION and zig $ZIG_VERSION already in $VENV" >&2
else
  echo "installing cargo-zigbuild==$ZIGBUILD_VERSION ziglang==$ZIG_VERSION into $VENV" >&2
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "cargo-zigbuild==$ZIGBUILD_VERSION" "ziglang==$ZIG_VERSION" >&2
  have || { echo "the install in $VENV does not answer with those versions" >&2; exit 1; }
fi
realpath "$VENV/bin"
