#!/usr/bin/env bash
# Installs ONNX Runtime for `leanrt pool --peers ort`: the onnxruntime wheel
# from PyPI (it carries the C-API library libonnxruntime.so.VERSION) in a
# Python virtual environment, then prints the library's path.
#
#   scripts/install-ort.sh [--version VERSION] [VENV]
#   export ORT_DYLIB_PATH=$(scripts/install-ort.sh)                    # 1.31.1
#   export ORT_DYLIB_PATH=$(scripts/install-ort.sh --version 1.32.0)   # 1.32.0
#
# VERSION: the onnxruntime release (default: $ORT_VERSION, else 1.31.1, the
# release the ort crate in use targets; 1.32.0 loads unchanged). The ort
# peer reads the version from the library's file name, and the tables name
# it per row. VENV defaults to target/ort-VERSION, so that several versions
# sit side by side; an existing VENV that already holds that version is
# reused. Needs python3 with its venv module (Debian: python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${ORT_VERSION:-1.31.1}
VENV=
while [ $# -gt 0 ]; do
  case "$1" in
    --version) [ $# -ge 2 ] || { echo "install-ort.sh: --version needs a value" >&2; exit 2; }
               VERSION=$2; shift 2 ;;
    --version=*) VERSION=${1#--version=}; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "install-ort.sh: unknown option $1 (usage: install-ort.sh [--version VERSION] [VENV])" >&2; exit 2 ;;
    *) [ -z "$VENV" ] || { echo "install-ort.sh: one VENV only" >&2; exit 2; }
       VENV=$1; shift ;;
  esac
done
if ! [[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "install-ort.sh: '$VERSION' is not an onnxruntime version (MAJOR.MINOR.PATCH, e.g. 1.31.1)" >&2
  exit 2
fi
VENV=${VENV:-target/ort-$VERSION}

find_lib() {
  "$VENV/bin/python3" - "$VERSION" <<'PY'
import glob, os, sys, sysconfig
capi = os.path.join(sysconfig.get_paths()["purelib"], "onnxruntime", "capi")
libs = glob.glob(os.path.join(capi, "libonnxruntime.so." + sys.argv[1]))
print(libs[0] if libs else "")
PY
}

if [ -x "$VENV/bin/python3" ] && [ -n "$(find_lib)" ]; then
  echo "onnxruntime $VERSION already in $VENV" >&2
else
  echo "installing onnxruntime==$VERSION into $VENV" >&2
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "onnxruntime==$VERSION" >&2
fi
lib=$(find_lib)
if [ -z "$lib" ]; then
  echo "onnxruntime $VERSION installed in $VENV, but no libonnxruntime.so.$VERSION in its capi/ folder" >&2
  exit 1
fi
realpath "$lib"
