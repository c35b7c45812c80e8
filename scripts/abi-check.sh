#!/usr/bin/env bash
# The ABI check (a ctest test, abi.libabigail; CI runs it on every build):
# the C ABI of include/leanrt.h and src/ffi/exports.map, read by libabigail
# (abidw/abidiff from abigail-tools), against the baseline kept in abi/, and
# the built library's exports against the same list.
#
#   scripts/abi-check.sh [--lib LIBLEANRT.so] [--baseline FILE]
#
# Exit status: 0 the ABI is the baseline's; 4 it grew compatibly but abi/ was
# not updated (run scripts/abi-baseline.sh and commit the result with the
# change); 12 an incompatible change (a function or type removed or changed)
# under the same SONAME (docs/C_API.md, "Versions and ABI": that needs a
# SONAME bump); 5 the library's exports are not the header's functions with
# the map's nodes; 1 an error (a tool missing; 77 instead with
# LEANRT_SKIP_ABI=1).
# Without --lib only the header and the map are checked (the can-fail test,
# c_tests/abi/abi_can_fail.sh, uses that). ABI_HEADER, ABI_MAP, ABI_CC
# override the header, the version script and the C compiler of the probe.
set -euo pipefail
. "$(dirname "$0")/abi-lib.sh"
lib="" baseline=""
while (($#)); do
  case $1 in
    --lib) lib=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    *) echo "usage: $0 [--lib LIB] [--baseline FILE]" >&2; exit 1 ;;
  esac
done
abi_need_tools || exit 1
soname=libleanrt.so.0
if [ -n "$lib" ]; then
  soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  [ -n "$soname" ] || { echo "$lib has no SONAME" >&2; exit 1; }
fi
baseline=${baseline:-$(abi_baseline_path "$soname")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
abi_probe "$soname" "$work/probe"
probe=$work/probe/$soname

if [ -n "$lib" ]; then
  if ! diff <(abi_exports "$probe") <(abi_exports "$lib") > "$work/exports.diff"; then
    echo "FAIL: $lib does not export the header's functions with the map's version nodes"
    echo "(< header + map, > library):"
    cat "$work/exports.diff"
    exit 5
  fi
  echo "$lib: $(abi_exports "$lib" | wc -l) functions, each with its version node, as the header and the map say"
fi

if [ ! -f "$baseline" ]; then
  echo "FAIL: no baseline $baseline for $soname: scripts/abi-baseline.sh writes it"
  exit 4
fi
rc=0
abi_verdict "$baseline" "$probe" || rc=$?
case $rc in
  0) echo "ABI of $soname unchanged against $(basename "$baseline")" ;;
  4) echo "FAIL: the ABI grew compatibly, but $(basename "$baseline") was not updated:"
     echo "      run scripts/abi-baseline.sh and commit abi/ with the change" ;;
  12) echo "FAIL: incompatible ABI change under $soname (docs/C_API.md: removing or changing"
      echo "      a function, a type or a field needs a new SONAME)" ;;
  *) exit 1 ;;
esac
((rc == 0)) || exit "$rc"

# Every version of the baseline since its first (the release that started
# this SONAME) must still be compatible: an incompatible change cannot pass
# by rewriting the baseline.
if [ "$baseline" != "$(abi_baseline_path "$soname")" ]; then
  echo "history check skipped: --baseline $baseline is not the repository's"
elif git -C "$ABI_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
  rel=${baseline#"$ABI_ROOT"/}
  first=$(git -C "$ABI_ROOT" log --diff-filter=A --format=%H -- "$rel" | tail -n 1)
  if [ -n "$first" ]; then
    git -C "$ABI_ROOT" show "$first:$rel" > "$work/first.abi"
    rc=0
    abi_verdict "$work/first.abi" "$probe" > "$work/first.report" || rc=$?
    if ((rc == 12)); then
      cat "$work/first.report"
      echo "FAIL: incompatible with $rel as first committed (${first:0:12}): the baseline was"
      echo "      rewritten over an incompatible change; that needs a new SONAME"
      exit 12
    fi
    ((rc == 0 || rc == 4)) || exit 1
    echo "compatible with $rel as first committed (${first:0:12})"
  else
    echo "history check skipped: $rel is not committed yet"
  fi
else
  echo "history check skipped: no git history here"
fi
