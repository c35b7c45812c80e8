#!/usr/bin/env bash
# Regenerates include/leanrt.h from the Rust sources with cbindgen (build.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
LEANRT_WRITE_HEADER=1 cargo build -p leanrt --quiet
echo "include/leanrt.h regenerated"
