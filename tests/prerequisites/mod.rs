//! What a test does when something it needs is missing on this machine (a
//! CUDA mock that cannot be built, no GPU, mlock refused): it fails, saying
//! why, unless skipping was asked for with `<ENV>=1`; then it prints
//! "skipped: ..." and the caller returns. `scripts/test.sh` asks for the
//! skips it knows apply (no GPU in CI), visibly.
// Each test crate that includes this module uses part of it.
#![allow(dead_code)]

/// Asks to skip the tests that need a CUDA device (`gpu_*`).
pub const SKIP_GPU_ENV: &str = "LEANRT_SKIP_GPU";
/// Asks to skip the tests that need the real host backend's mlock.
pub const SKIP_MLOCK_ENV: &str = "LEANRT_SKIP_MLOCK";

/// The prerequisite `why` names is missing: with `env=1`, prints the skip
/// and returns (the caller then returns); otherwise panics, saying so.
pub fn missing(env: &str, why: &str) {
    if std::env::var(env).is_ok_and(|v| v == "1") {
        println!("skipped: {why} ({env}=1)");
        return;
    }
    panic!("this test cannot run: {why}\n(set {env}=1 to skip it instead)");
}
