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
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
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

/// What a forked child keeps of a destroyed inherited pool (its shared
/// state and thread handles): reachable from a static list for the rest of
/// the child's life. It cannot be freed safely: the queues and locks are a
/// copy of the parent's that a thread which no longer exists may have been
/// changing.
struct Kept {
    _state: Box<dyn std::any::Any>,
    next: *mut Kept,
}

static KEPT: AtomicPtr<Kept> = AtomicPtr::new(std::ptr::null_mut());

/// Keeps `state` reachable (never dropped) until the process exits.
pub(super) fn keep_inherited(state: Box<dyn std::any::Any>) {
    let node = Box::into_raw(Box::new(Kept {
        _state: state,
        next: std::ptr::null_mut(),
    }));
    let mut head = KEPT.load(Ordering::Relaxed);
    loop {
        // SAFETY: `node` is ours until the CAS below publishes it; nothing
        // reads the list (it only keeps the nodes reachable).
        unsafe { (*node).next = head };
        match KEPT.compare_exchange_weak(head, node, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => head = now,
        }
    }
}
