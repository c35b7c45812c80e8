//! The synchronisation primitives the event count (`sleep.rs`), the loop
//! gate (`gate.rs`), the broadcast slot (`slot.rs`) and the caller count
//! (`callers.rs`) are written against.
//! Normal builds use `std`; the loom models (`tests/pool_loom.rs`) compile
//! those files against their own facade with the same names, backed by
//! loom, so the protocols that are model-checked are the very source that
//! ships.
pub use crossbeam_utils::CachePadded;
pub use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
pub use std::sync::{Condvar, Mutex};

/// `Mutex::lock` that ignores poisoning (the guarded data is `()`).
pub fn lock(m: &Mutex<()>) -> std::sync::MutexGuard<'_, ()> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `Condvar::wait` that ignores poisoning.
pub fn wait<'a>(cv: &Condvar, g: std::sync::MutexGuard<'a, ()>) -> std::sync::MutexGuard<'a, ()> {
    cv.wait(g).unwrap_or_else(|e| e.into_inner())
}

/// When a timed wait gives up (`std::time::Instant`; in the model, a
/// timer that has always fired).
pub type Deadline = std::time::Instant;

/// `Condvar::wait_timeout` up to `deadline`, ignoring poisoning: the guard
/// and whether the deadline has passed.
pub fn wait_until<'a>(
    cv: &Condvar,
    g: std::sync::MutexGuard<'a, ()>,
    deadline: Deadline,
) -> (std::sync::MutexGuard<'a, ()>, bool) {
    let now = std::time::Instant::now();
    if now >= deadline {
        return (g, true);
    }
    let g = match cv.wait_timeout(g, deadline - now) {
        Ok((g, _)) => g,
        Err(e) => e.into_inner().0,
    };
    (g, std::time::Instant::now() >= deadline)
}

/// Gives the CPU to another runnable thread (`loom::thread::yield_now` in
/// the model).
#[inline]
pub fn yield_now() {
    std::thread::yield_now();
}

/// A spin-wait hint (`loom::hint::spin_loop` in the model).
#[inline]
pub fn spin_hint() {
    std::hint::spin_loop();
}
