#!/usr/bin/env bash
# Updates the ABI baseline (abi/<SONAME>.abi) after a compatible change to
# the C ABI: a new function (listed in src/ffi/exports.map under the node of
# its release), a new type, a new enumerator. Commit the result with the
# change; scripts/abi-check.sh (CI) fails until then.
#
#   scripts/abi-baseline.sh [--baseline FILE]
#
# It refuses an incompatible change (a function, type or field removed or
# changed): under leanrt's policy (docs/C_API.md, "Versions and ABI") that
# needs a new SONAME, whose baseline starts afresh. #define constants are
# not part of what libabigail sees: adding one needs no update.
set -euo pipefail
. "$(dirname "$0")/abi-lib.sh"
soname=libleanrt.so.0
baseline=$(abi_baseline_path "$soname")
if [ "${1:-}" = --baseline ]; then baseline=$2; fi
abi_need_tools || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
abi_probe "$soname" "$work/probe"
probe=$work/probe/$soname
if [ -f "$baseline" ]; then
  rc=0
  abi_verdict "$baseline" "$probe" || rc=$?
  case $rc in
    0) echo "ABI unchanged: $baseline is up to date"; exit 0 ;;
    4) ;;
    12) echo "refused: incompatible change under $soname (see above); that needs a new SONAME" >&2
        exit 12 ;;
    *) exit 1 ;;
  esac
fi
mkdir -p "$(dirname "$baseline")"
abi_dump "$probe" > "$baseline"
echo "wrote $baseline ($(grep -c '<elf-symbol ' "$baseline") functions); commit it with the change"
