//! Whether a test runs under a user-mode emulator: scripts/test.sh's ARM64
//! stage runs the aarch64 test programs under qemu-user with
//! `LEANRT_EMULATED=qemu-user` in their environment (the runner's `-E`).
//! qemu-user counts its own translation cache and per-thread state in the
//! process's resident memory and page faults, so checks that those stay flat
//! mean nothing there (docs/PLATFORMS.md lists them); such checks ask
//! [`counters_meaningful`], which says when it skips.

/// False (and a printed skip line) under emulation.
pub fn counters_meaningful(test: &str, what: &str) -> bool {
    match std::env::var("LEANRT_EMULATED") {
        Ok(how) if !how.is_empty() => {
            println!("{test}: {what} check skipped under emulation ({how})");
            false
        }
        _ => true,
    }
}
