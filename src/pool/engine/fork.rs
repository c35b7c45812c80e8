//! Pools inherited by a forked child.
//!
//! `fork()` copies only the calling thread: in the child a pool's workers do
//! not exist, and its queues, slot and locks are a copy of the parent's at
//! the moment of the fork, possibly half-way through a change made by a
//! thread that is gone. A `pthread_atfork` child handler (registered once,
//! when the first pool is made) bumps a process-wide generation; a pool
//! made under an older generation knows it is in a child and runs
//! everything on the caller, without touching its queues or locks (see
//! `ThreadPool::forked`). Pools made in the child are normal pools.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

static GENERATION: AtomicU64 = AtomicU64::new(0);
static REGISTER: Once = Once::new();

extern "C" fn in_child() {
    // Async-signal-safe: one atomic add.
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Registers the child handler (once) and returns the current generation.
pub(super) fn watch() -> u64 {
    REGISTER.call_once(|| {
        // SAFETY: registers a handler that only does an atomic add; no
        // prepare or parent handler. A failure (ENOMEM) leaves fork
        // detection off, which only matters in a forked child.
        unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        }
    });
    generation()
}

/// How many forks this process is away from the original (0 in it).
#[inline]
pub(super) fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}
