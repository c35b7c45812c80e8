#!/usr/bin/env bash
# Soak test of the thread pool through the C ABI (tests/soak_pool.rs):
# concurrent callers, Schedule storms, nested loops, spinning disabled and
# enabled under load, pools created and destroyed under load. Fails on a lost
# task, a hang (watchdog), leftover threads or resident-memory growth.
#
#   scripts/soak.sh              CI size: 30 s
#   scripts/soak.sh 3600         one hour (the documented long run)
#   LEANRT_SOAK_PROFILE=release scripts/soak.sh 600   optimized build (more contention per second)
#   LEANRT_FUZZ_SEED=random scripts/soak.sh 600       another random schedule (the seed is printed)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
SECS=${1:-30}
PROFILE=${LEANRT_SOAK_PROFILE:-dev}
args=()
[ "$PROFILE" = dev ] || args=(--profile "$PROFILE")
echo "== pool soak: ${SECS}s ($PROFILE)"
LEANRT_SOAK_SECS="$SECS" cargo test -q -p leanrt "${args[@]}" --test soak_pool -- --nocapture
