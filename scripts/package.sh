#!/usr/bin/env bash
# Release packages, per target: a tarball, and Debian packages split as
# Debian splits a library (libleanrt0: the shared library; libleanrt-dev:
# header, C++ wrapper, the .so link, the static library, pkg-config and
# CMake files).
#
#   scripts/package.sh [TARGET...]     TARGET: x86_64, aarch64 (default: both)
#
# Writes to target/package/ (LEANRT_PACKAGE_DIR):
#   leanrt-VERSION-ARCH-linux-gnu.tar.gz     lib/ include/ lib/cmake/ lib/pkgconfig/
#                                            share/doc/leanrt/ (LICENSE, README, CHANGELOG)
#   libleanrt0_VERSION-1_DEBARCH.deb         /usr/lib/ARCH-linux-gnu/libleanrt.so.0*
#   libleanrt-dev_VERSION-1_DEBARCH.deb
#
# The library is built with cargo-zigbuild (scripts/install-zig.sh) against
# glibc GLIBC_FLOOR, the floor of ONNX Runtime's manylinux_2_28 wheels, and
# the script fails if the result needs a newer GLIBC_ symbol version or
# lacks its own symbol versions. ARM64 uses the cross binutils of
# cmake/aarch64-linux-gnu.cmake (apt-get install gcc-aarch64-linux-gnu
# g++-aarch64-linux-gnu libc6-dev-arm64-cross) for objcopy and strip.
# The packages' Maintainer is LEANRT_DEB_MAINTAINER (a placeholder by
# default); dates come from SOURCE_DATE_EPOCH (default: the last commit),
# so the same commit gives the same archives.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export PATH="$HOME/.cargo/bin:$PATH"
GLIBC_FLOOR=2.28
VERSION=$(sed -n 's/^version = "\([0-9.]*\)"$/\1/p' Cargo.toml | head -n 1)
SONAME_MAJOR=${VERSION%%.*}
DEB_VERSION=$VERSION-1
OUT=${LEANRT_PACKAGE_DIR:-$ROOT/target/package}
MAINTAINER=${LEANRT_DEB_MAINTAINER:-leanrt maintainers <leanrt@example.org>}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(x86_64 aarch64)

for tool in cmake dpkg-deb readelf gzip; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
PATH=$(scripts/install-zig.sh):$PATH

# The highest GLIBC_ version LIB needs (its version-needs section).
glibc_needed() {
  readelf -W -V "$1" | sed -n 's/.*Name: GLIBC_\([0-9.]*\).*/\1/p' | sort -V | tail -n 1
}

# Deterministic gzip of FILE to DEST.
gz() { gzip -9nc "$1" > "$2"; }

# cmake_configure DIR ARCH LIBDIR [ARGS...]: a release build of the library
# alone for ARCH, installed under LIBDIR.
cmake_configure() {
  local dir=$1 arch=$2 libdir=$3
  shift 3
  local toolchain=()
  [ "$arch" = aarch64 ] && toolchain=(-DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/aarch64-linux-gnu.cmake")
  cmake -S "$ROOT" -B "$dir" "${toolchain[@]}" -DCMAKE_BUILD_TYPE=Release -DLEANRT_BUILD_TESTS=OFF \
    -DLEANRT_CARGO_BUILD=zigbuild -DLEANRT_CARGO_TARGET="$arch-unknown-linux-gnu.$GLIBC_FLOOR" \
    -DLEANRT_CARGO_TARGET_DIR="$ROOT/target/release-zig" -DCMAKE_INSTALL_LIBDIR="$libdir" "$@" >/dev/null
  cmake --build "$dir" > "$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
}

# strip_libs STRIP DIR: what lintian and a user want in a release (the
# dynamic symbols, their versions and the SONAME stay).
strip_libs() {
  local strip=$1 dir=$2
  "$strip" --strip-unneeded --remove-section=.comment --remove-section=.note "$dir"/libleanrt.so.*.*.*
  "$strip" --strip-debug "$dir/libleanrt.a"
}

# The Debian copyright file (machine-readable format): leanrt's, and that of
# the Rust standard library and crates linked into the library.
copyright() {
  cat <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: leanrt

Files: *
Copyright: 2025-2026 leanrt developers
License: Apache-2.0

Files: Rust standard library, libc, crossbeam-deque, crossbeam-epoch,
 crossbeam-utils, static_assertions (linked into the libraries)
Copyright: The Rust Project Developers and the crates' authors
License: Apache-2.0 or MIT

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not
 use this file except in compliance with the License.
 .
 On Debian systems, the full text of the Apache License, Version 2.0 can be
 found in the file /usr/share/common-licenses/Apache-2.0.

License: MIT
 Permission is hereby granted, free of charge, to any person obtaining a copy
 of this software and associated documentation files (the "Software"), to
 deal in the Software without restriction, including without limitation the
 rights to use, copy, modify, merge, publish, distribute, sublicense, and/or
 sell copies of the Software, and to permit persons to whom the Software is
 furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in
 all copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING
 FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS
 IN THE SOFTWARE.
EOF
}

# deb_docs PKGDIR PKG: copyright and Debian changelog of a package.
deb_docs() {
  local doc=$1/usr/share/doc/$2
  mkdir -p "$doc"
  copyright > "$doc/copyright"
  {
    echo "leanrt ($DEB_VERSION) unstable; urgency=medium"
    echo
    echo "  * The $VERSION release; its changes are in"
    echo "    /usr/share/doc/libleanrt$SONAME_MAJOR/changelog.gz."
    echo
    echo " -- $MAINTAINER  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
  } > "$doc/changelog.Debian"
  gzip -9nf "$doc/changelog.Debian"
}

# deb_build PKGDIR CONTROL-FIELDS...: DEBIAN/control (+ md5sums) and the .deb.
deb_build() {
  local dir=$1
  shift
  mkdir -p "$dir/DEBIAN"
  find "$dir" -type d -exec chmod 0755 {} +
  find "$dir/usr" -type f -exec chmod 0644 {} +
  find "$dir/usr" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  {
    printf '%s\n' "$@" | sed '/^Description:/,$d'
    echo "Installed-Size: $(du -sk "$dir/usr" | cut -f1)"
    printf '%s\n' "$@" | sed -n '/^Description:/,$p'
  } > "$dir/DEBIAN/control"
  (cd "$dir" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$dir/DEBIAN/md5sums"
  chmod 0644 "$dir"/DEBIAN/*
  dpkg-deb --root-owner-group -Zxz --build "$dir" "$OUT" >/dev/null
}

DESCRIPTION=' leanrt is a library with a C ABI for accelerator runtimes and inference
 engines: a byte-compatible, init-on-write staging image of a runtime'"'"'s
 shared-memory task image that ships only what a run touches, and an intra-op
 thread pool with ONNX Runtime'"'"'s ParallelFor semantics and config keys.'

mkdir -p "$OUT"
for arch in "${TARGETS[@]}"; do
  case $arch in
    x86_64) debarch=amd64 ;;
    aarch64) debarch=arm64 ;;
    *) echo "unknown target $arch (x86_64 or aarch64)" >&2; exit 1 ;;
  esac
  multiarch=$arch-linux-gnu
  work=$ROOT/build/package/$arch
  rm -rf "$work/stage-tar" "$work/stage-deb" "$work/libleanrt$SONAME_MAJOR" "$work/libleanrt-dev"

  # The tarball: a relocatable prefix (the .pc and CMake files find it from
  # where they are).
  cmake_configure "$work/build-tar" "$arch" lib
  name=leanrt-$VERSION-$multiarch
  cmake --install "$work/build-tar" --prefix "$work/stage-tar/$name" >/dev/null
  STRIP=$(sed -n 's/^CMAKE_STRIP:FILEPATH=//p' "$work/build-tar/CMakeCache.txt")
  strip_libs "$STRIP" "$work/stage-tar/$name/lib"
  so=$(echo "$work/stage-tar/$name"/lib/libleanrt.so.*.*.*)

  # What the release must be: each export with its version node, and no
  # GLIBC_ symbol version above the floor.
  cmake -DLIB="$so" -DREADELF=readelf -P "$ROOT/c_tests/abi/exports.cmake" >/dev/null
  need=$(glibc_needed "$so")
  if [ "$(printf '%s\n%s\n' "$need" "$GLIBC_FLOOR" | sort -V | tail -n 1)" != "$GLIBC_FLOOR" ]; then
    echo "FAIL: $(basename "$so") for $arch needs GLIBC_$need, above the floor $GLIBC_FLOOR" >&2
    exit 1
  fi
  echo "$arch: $(basename "$so") needs GLIBC_$need at most (floor $GLIBC_FLOOR); every lrt_* export versioned"
  tar -C "$work/stage-tar" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    -cf - "$name" | gzip -9n > "$OUT/$name.tar.gz"

  # The Debian packages: the same build, installed under /usr with the
  # multiarch library directory, split in two.
  cmake_configure "$work/build-deb" "$arch" "lib/$multiarch" -DCMAKE_INSTALL_PREFIX=/usr
  DESTDIR="$work/stage-deb" cmake --install "$work/build-deb" >/dev/null
  libdir=$work/stage-deb/usr/lib/$multiarch
  strip_libs "$STRIP" "$libdir"
  run=$work/libleanrt$SONAME_MAJOR
  dev=$work/libleanrt-dev
  mkdir -p "$run/usr/lib/$multiarch" "$dev/usr/lib/$multiarch"
  mv "$libdir"/libleanrt.so.*.*.* "$libdir/libleanrt.so.$SONAME_MAJOR" "$run/usr/lib/$multiarch/"
  mv "$libdir/libleanrt.so" "$libdir/libleanrt.a" "$libdir/pkgconfig" "$libdir/cmake" "$dev/usr/lib/$multiarch/"
  mv "$work/stage-deb/usr/include" "$dev/usr/"
  deb_docs "$run" "libleanrt$SONAME_MAJOR"
  gz "$ROOT/CHANGELOG.md" "$run/usr/share/doc/libleanrt$SONAME_MAJOR/changelog.gz"
  deb_docs "$dev" libleanrt-dev
  echo "libleanrt $SONAME_MAJOR libleanrt$SONAME_MAJOR (>= $VERSION)" > "$run/DEBIAN.shlibs"
  mkdir -p "$run/DEBIAN"
  mv "$run/DEBIAN.shlibs" "$run/DEBIAN/shlibs"
  echo "activate-noawait ldconfig" > "$run/DEBIAN/triggers"
  deb_build "$run" \
    "Package: libleanrt$SONAME_MAJOR" "Source: leanrt" "Version: $DEB_VERSION" "Architecture: $debarch" \
    "Maintainer: $MAINTAINER" "Depends: libc6 (>= $need)" "Section: libs" "Priority: optional" \
    "Multi-Arch: same" \
    "Description: lean host-side runtime pieces with a C ABI - shared library" \
    "$DESCRIPTION" " ." " This package contains the shared library, libleanrt.so.$SONAME_MAJOR."
  deb_build "$dev" \
    "Package: libleanrt-dev" "Source: leanrt" "Version: $DEB_VERSION" "Architecture: $debarch" \
    "Maintainer: $MAINTAINER" "Depends: libleanrt$SONAME_MAJOR (= $DEB_VERSION), libc6-dev" \
    "Section: libdevel" "Priority: optional" "Multi-Arch: same" \
    "Description: lean host-side runtime pieces with a C ABI - development files" \
    "$DESCRIPTION" " ." " This package contains the C header, the C++ wrapper, the static library" \
    " and the files CMake's find_package and pkg-config read."
  echo "$arch: $OUT/$name.tar.gz, libleanrt${SONAME_MAJOR}_${DEB_VERSION}_$debarch.deb, libleanrt-dev_${DEB_VERSION}_$debarch.deb"
done
