#!/usr/bin/env bash
# Installs ONNX Runtime for `leanrt pool --peers ort`: the onnxruntime wheel
# from PyPI (it carries the C-API library libonnxruntime.so.VERSION) in a
# Python virtual environment, then prints the library's path.
#
#   scripts/install-ort.sh [VENV]        VENV defaults to .venv-ort
#   export ORT_DYLIB_PATH=$(scripts/install-ort.sh)
#
# ORT_VERSION: the onnxruntime version (default 1.31.1, the release the ort
# crate in use targets). An existing VENV that already holds that version is
# reused. Needs python3 with its venv module (Debian: python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv-ort}
VERSION=${ORT_VERSION:-1.31.1}

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
