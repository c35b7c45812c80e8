//! One call at a time on a shared value, refused rather than waited for:
//! what lets the C handle of a maker turn a second, overlapping call (from
//! another thread, or re-entrant from one of the maker's own device
//! callbacks) into an error instead of two `&mut` to one maker.
//!
//! Protocol: a call enters with one compare-exchange of `in_use` from false
//! to true (Acquire) and leaves, when its [`Entered`] is dropped (also while
//! unwinding), with a store of false (Release). A call that finds `in_use`
//! set gets `None` and touches nothing. Invariants: at most one `Entered`
//! exists at a time, so the `&mut T` it hands out is unique; and each call
//! that enters sees every write of the call before it (its Release, this
//! Acquire). There is no waiting, hence no lost wake-up to rule out.
//! [`Entered::keep`] enters for good (the value is about to be dropped).
//!
//! Written only against `super::sync`, so that `tests/staging_loom.rs`
//! model-checks this file, and a broken variant of it, with loom.
use std::cell::UnsafeCell;

use super::sync::{AtomicBool, Ordering};

/// A value that one call at a time may use.
pub struct OneCall<T> {
    in_use: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through `Entered`, of which at most one
// exists at a time (the protocol above), so sharing the `OneCall` shares
// no access; moving `T` to another thread needs `T: Send`.
unsafe impl<T: Send> Sync for OneCall<T> {}

/// One call's hold on the value; dropping it leaves.
pub struct Entered<'a, T>(&'a OneCall<T>);

impl<T> OneCall<T> {
    pub fn new(value: T) -> Self {
        OneCall {
            in_use: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Enters, unless another call is inside.
    pub fn try_enter(&self) -> Option<Entered<'_, T>> {
        self.in_use
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Entered(self))
    }
}

impl<T> Entered<'_, T> {
    /// Never leaves: every later call is refused (for a value about to be
    /// destroyed).
    pub fn keep(self) {
        std::mem::forget(self);
    }
}

impl<T> Drop for Entered<'_, T> {
    fn drop(&mut self) {
        self.0.in_use.store(false, Ordering::Release);
    }
}

impl<T> std::ops::Deref for Entered<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this call holds `in_use`: no other reference exists.
        unsafe { &*self.0.value.get() }
    }
}

impl<T> std::ops::DerefMut for Entered<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in deref, and `&mut self` makes this the only one.
        unsafe { &mut *self.0.value.get() }
    }
}
