#!/usr/bin/env bash
# The ABI check can fail (ctest abi.libabigail_can_fail): scripts/abi-check.sh
# run on copies of the header and the version script, each with one change,
# against the repository's baseline:
#   a removed function, a changed signature, a reordered field, a function
#   moved to another version node: incompatible (12);
#   an added enumerator, an added function (in a new node): compatible but
#   the baseline is stale (4), and the addition
#   passes (0) once scripts/abi-baseline.sh has updated a copy of it.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
baseline=$root/abi/libleanrt.so.0.abi
failures=0

# case NAME EXPECTED [--baseline FILE]: the check on $work/NAME/{leanrt.h,exports.map}.
check_case() {
  local name=$1 want=$2
  shift 2
  local rc=0
  ABI_HEADER=$work/$name/leanrt.h ABI_MAP=$work/$name/exports.map \
    "$root/scripts/abi-check.sh" --baseline "${2:-$baseline}" > "$work/$name.log" 2>&1 || rc=$?
  if ((rc == 77)); then
    cat "$work/$name.log"
    exit 77
  fi
  if ((rc != want)); then
    echo "FAIL: $name: abi-check.sh exited $rc, expected $want"
    sed 's/^/    /' "$work/$name.log"
    failures=$((failures + 1))
  else
    echo "ok: $name: exit $rc; $(grep -E '^(FAIL|ABI)|Removed|Changed|Added' "$work/$name.log" | head -n 2 | tr '\n' ' ')"
  fi
}

# variant NAME: a fresh copy of the header and the map to change.
variant() {
  mkdir -p "$work/$1"
  cp "$root/include/leanrt.h" "$work/$1/leanrt.h"
  cp "$root/src/ffi/exports.map" "$work/$1/exports.map"
}

# changed NAME: fails the test when the edit did not apply.
changed() {
  if cmp -s "$root/include/leanrt.h" "$work/$1/leanrt.h"; then
    echo "FAIL: $1: the edit did not change the header (has it changed? update this test)"
    failures=$((failures + 1))
    return 1
  fi
}

variant unchanged
check_case unchanged 0

variant removed_function
sed -i '/^const char \*lrt_version(void);$/d' "$work/removed_function/leanrt.h"
sed -i '/^    lrt_version;$/d' "$work/removed_function/exports.map"
changed removed_function && check_case removed_function 12

variant changed_signature
sed -i 's/^size_t lrt_last_error(char \*buf, size_t len);$/size_t lrt_last_error(char *buf, int len);/' \
  "$work/changed_signature/leanrt.h"
changed changed_signature && check_case changed_signature 12

variant reordered_field
awk '/^  uint64_t tasks_run;$/ { held = $0; next }
     held != "" && /^  uint64_t steals;$/ { print; print held; held = ""; next }
     { print }' "$root/include/leanrt.h" > "$work/reordered_field/leanrt.h"
changed reordered_field && check_case reordered_field 12

variant moved_to_another_node
sed -i '/^    lrt_version;$/d' "$work/moved_to_another_node/exports.map"
printf 'LEANRT_0.99 {\n  global:\n    lrt_version;\n} LEANRT_0.2;\n' >> "$work/moved_to_another_node/exports.map"
check_case moved_to_another_node 12

variant added_enumerator
sed -i 's/^  LRT_ERR_INTERNAL = 7,$/&\n  LRT_ERR_ABI_TEST = 99,/' "$work/added_enumerator/leanrt.h"
changed added_enumerator && check_case added_enumerator 4

variant added_function
sed -i 's/^const char \*lrt_version(void);$/&\n\nint lrt_abi_test_added(int x);/' "$work/added_function/leanrt.h"
printf 'LEANRT_0.99 {\n  global:\n    lrt_abi_test_added;\n} LEANRT_0.2;\n' >> "$work/added_function/exports.map"
if changed added_function; then
  check_case added_function 4
  cp "$baseline" "$work/updated.abi"
  if ABI_HEADER=$work/added_function/leanrt.h ABI_MAP=$work/added_function/exports.map \
    "$root/scripts/abi-baseline.sh" --baseline "$work/updated.abi" > "$work/update.log" 2>&1; then
    check_case added_function 0 --baseline "$work/updated.abi"
  else
    echo "FAIL: scripts/abi-baseline.sh refused a compatible addition:"
    sed 's/^/    /' "$work/update.log"
    failures=$((failures + 1))
  fi
fi

if ((failures)); then
  echo "$failures case(s) failed"
  exit 1
fi
echo "the ABI check fails on a removed function, a changed signature and a reordered field, and passes an addition once the baseline is updated"
