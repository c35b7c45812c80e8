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
