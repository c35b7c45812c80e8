#!/usr/bin/env bash
# Loads the release libraries (scripts/package.sh's tarballs) in an older
# userland than this machine's, made from Debian's packages: Debian 11
# (bullseye, glibc 2.31) by debootstrap, one root per architecture, and runs
# two examples there (examples/pool.c, examples/maker_host.c, built by zig
# for glibc 2.28). As a control, the same program with the library cargo
# builds here (linked against this machine's glibc) must fail to load there:
# LEANRT_CONTROL_LIB_x86_64 and LEANRT_CONTROL_LIB_aarch64 name such
# libraries (scripts/test.sh passes cargo's; unset: no control).
#
#   scripts/old-userland.sh [TARGET...]   TARGET: x86_64, aarch64 (default: both)
#
# Why bullseye and not buster (glibc 2.28, the floor itself): buster has
# left deb.debian.org for archive.debian.org, which this machine cannot
# reach; the floor is checked exactly by scripts/package.sh (no GLIBC_ symbol
# version above 2.28), and this is the load in a real older userland on top.
# Needs root (chroot) and debootstrap; ARM64 runs under qemu-aarch64-static
# inside the root. The roots are kept in target/old-userland/ (about 200 MB
# each) and reused; LEANRT_DEBIAN_MIRROR picks the mirror.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SUITE=bullseye
MIRROR=${LEANRT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE=${LEANRT_OLD_USERLAND:-$ROOT/target/old-userland}
VERSION=$(sed -n 's/^version = "\([0-9.]*\)"$/\1/p' Cargo.toml | head -n 1)
PKG=${LEANRT_PACKAGE_DIR:-$ROOT/target/package}
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(x86_64 aarch64)

if [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null; then
  echo "SKIPPED: needs root and debootstrap (apt-get install debootstrap) for a $SUITE root"
  exit 77
fi
PATH=$(scripts/install-zig.sh 2>/dev/null):$PATH

# in_root ROOT LIBRARY_PATH PROGRAM: runs PROGRAM in ROOT with that
# LD_LIBRARY_PATH (an ARM64 program through the root's qemu-aarch64-static).
in_root() {
  if [ "$arch" = x86_64 ]; then
    chroot "$1" /usr/bin/env LD_LIBRARY_PATH="$2" "$3"
  else
    chroot "$1" /usr/bin/qemu-aarch64-static -E LD_LIBRARY_PATH="$2" "$3"
  fi
}

for arch in "${TARGETS[@]}"; do
  case $arch in
    x86_64) debarch=amd64 ;;
    aarch64) debarch=arm64 ;;
    *) echo "unknown target $arch" >&2; exit 1 ;;
  esac
  root=$BASE/$SUITE-$debarch
  if [ ! -e "$root/.complete" ]; then
    rm -rf "$root"
    mkdir -p "$BASE"
    echo "debootstrap $SUITE $debarch into $root"
    if [ "$arch" = x86_64 ]; then
      debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" > "$root.log" 2>&1
    else
      # The first stage unpacks the packages, which is all a program needs
      # from them; the second would run arm64 maintainer scripts.
      debootstrap --variant=minbase --foreign --arch=arm64 "$SUITE" "$root" "$MIRROR" > "$root.log" 2>&1
    fi || { tail -n 20 "$root.log"; exit 1; }
    touch "$root/.complete"
  fi
  if [ "$arch" = aarch64 ]; then
    command -v qemu-aarch64-static >/dev/null || { echo "missing qemu-aarch64-static (apt-get install qemu-user-static)" >&2; exit 1; }
    cp "$(command -v qemu-aarch64-static)" "$root/usr/bin/"
  fi
  glibc=$(in_root "$root" "" "/lib/$arch-linux-gnu/libc.so.6" | sed -n '1s/.*version \([0-9][0-9.]*[0-9]\).*/\1/p')

  tarball=$PKG/leanrt-$VERSION-$arch-linux-gnu.tar.gz
  [ -f "$tarball" ] || { echo "no $tarball: run scripts/package.sh $arch first" >&2; exit 1; }
  opt=$root/opt/leanrt
  rm -rf "$opt"
  mkdir -p "$opt"
  tar -C "$opt" --strip-components=1 -xzf "$tarball"
  mkdir -p "$opt/bin"
  for ex in pool maker_host; do
    python3 -m ziglang cc -target "$arch-linux-gnu.2.28" -std=c11 -O1 -I "$opt/include" \
      "$ROOT/examples/$ex.c" "$opt/lib/libleanrt.so.0" -o "$opt/bin/$ex"
    out=$(in_root "$root" /opt/leanrt/lib "/opt/leanrt/bin/$ex")
    echo "$arch, $SUITE (glibc $glibc): $ex: $(printf '%s\n' "$out" | tail -n 1)"
  done

  # The control: a library linked against this machine's glibc, where it
  # needs a newer one than the root's, does not load there.
  control=LEANRT_CONTROL_LIB_$arch
  HOST_LIB=${!control:-}
  if [ -n "$HOST_LIB" ]; then
    need=$(readelf -W -V "$HOST_LIB" | sed -n 's/.*Name: GLIBC_\([0-9.]*\).*/\1/p' | sort -V | tail -n 1)
    if [ "$(printf '%s\n%s\n' "$need" "$glibc" | sort -V | tail -n 1)" != "$glibc" ]; then
      mkdir -p "$opt/host-lib"
      cp "$HOST_LIB" "$opt/host-lib/libleanrt.so.0"
      if err=$(in_root "$root" /opt/leanrt/host-lib /opt/leanrt/bin/pool 2>&1); then
        echo "FAIL: $HOST_LIB (needs GLIBC_$need) loaded in glibc $glibc: the root is not the older userland it should be" >&2
        exit 1
      fi
      echo "$arch, $SUITE: control: the library built here (needs GLIBC_$need) fails there: $(printf '%s\n' "$err" | grep -o "version .GLIBC_[0-9.]*. not found" | head -n 1)"
    fi
  fi
done
