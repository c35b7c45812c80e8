//! The pool's broadcast slot: how one loop at a time is handed to idle
//! workers without queue pushes. A [`Gate`] plus the pointer to the loop's
//! state and a tag (the parallel section the loop belongs to, 0 for none).
//!
//! Written only against `super::sync` (and `super::gate`), so that
//! `tests/pool_loom.rs` compiles this same file against loom.
//!
//! * Owner: [`Slot::try_open`] takes the gate and publishes one loop;
//!   a parallel section takes the gate once ([`Slot::try_own`]) and
//!   publishes loop after loop ([`Slot::publish`]). The payload and tag are
//!   stored before the gate's release store, so a helper that entered reads
//!   the ones of the loop it entered.
//! * Helper: [`Slot::try_enter`], then the payload is valid until
//!   [`Slot::leave`].
//! * Owner: [`Slot::close_and_wait`] after its own share, then
//!   [`Slot::release`] (or the next `publish` inside a section).
use super::gate::Gate;
use super::sync::{AtomicPtr, AtomicU64, Ordering};

/// The broadcast slot. `T` is the loop's shared state; the slot only hands
/// out the pointer the owner stored.
#[derive(Debug)]
pub struct Slot<T> {
    gate: Gate,
    payload: AtomicPtr<T>,
    tag: AtomicU64,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Slot<T> {
    /// Not owned, closed, empty.
    pub fn new() -> Self {
        Slot {
            gate: Gate::new(),
            payload: AtomicPtr::new(std::ptr::null_mut()),
            tag: AtomicU64::new(0),
        }
    }

    /// Takes the slot without publishing anything (a parallel section).
    pub fn try_own(&self) -> bool {
        self.gate.try_own()
    }

    /// Owner: publishes `payload` (tagged `tag`) for up to `cap` helpers.
    /// `payload` must stay valid until [`close_and_wait`](Self::close_and_wait)
    /// returned.
    pub fn publish(&self, payload: *const T, cap: usize, tag: u64) {
        self.payload.store(payload as *mut T, Ordering::Relaxed);
        self.tag.store(tag, Ordering::Relaxed);
        // Release store: the two stores above happen-before every
        // successful enter.
        self.gate.publish(cap);
    }

    /// Takes the slot and publishes one loop; false (nothing published) if
    /// another loop or section owns it. After true: `close_and_wait`, then
    /// `release`.
    pub fn try_open(&self, payload: *const T, cap: usize, tag: u64) -> bool {
        if !self.gate.try_own() {
            return false;
        }
        self.publish(payload, cap, tag);
        true
    }

    /// True while a published loop still admits helpers (a hint).
    #[inline]
    pub fn joinable(&self) -> bool {
        self.gate.joinable()
    }

    /// The tag of the loop published last (a hint; exact for a helper
    /// inside it, which reads it in `try_enter`).
    #[inline]
    pub fn tag(&self) -> u64 {
        self.tag.load(Ordering::Relaxed)
    }

    /// The current loop's helper cap (exact for a helper inside it).
    #[inline]
    pub fn cap(&self) -> usize {
        self.gate.cap()
    }

    /// Enters the published loop: its payload, this helper's participant
    /// number (1, 2, ...) and the loop's tag. [`leave`](Self::leave) must
    /// follow exactly once.
    #[inline]
    pub fn try_enter(&self) -> Option<(*const T, usize, u64)> {
        let participant = self.gate.try_enter()?;
        // Read only now: the enter CAS read from the release sequence of
        // the store that published the current payload and tag.
        let p = self.payload.load(Ordering::Relaxed);
        let tag = self.tag.load(Ordering::Relaxed);
        Some((p.cast_const(), participant, tag))
    }

    /// A helper leaves; afterwards it must not touch the payload.
    #[inline]
    pub fn leave(&self) {
        self.gate.leave();
    }

    /// Owner: closes the loop and waits until every helper that entered has
    /// left (`spins` polls first, then blocks).
    #[cfg(any(test, loom))]
    pub fn close_and_wait(&self, spins: u32) {
        self.gate.close_and_wait(spins);
    }

    /// `close_and_wait`, yielding while `share_cpu()` (see
    /// [`Gate::close_and_wait_yielding`]).
    pub fn close_and_wait_yielding(&self, spins: u32, share_cpu: &dyn Fn() -> bool) {
        self.gate.close_and_wait_yielding(spins, share_cpu);
    }

    /// Owner, after `close_and_wait`: frees the slot.
    pub fn release(&self) {
        self.gate.release();
    }

    /// Helpers inside right now (tests and the loom models).
    #[cfg(loom)]
    #[allow(dead_code)]
    pub fn inside(&self) -> usize {
        self.gate.inside()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn slot_hands_out_the_payload_and_tag() {
        let s = Slot::<u32>::new();
        let (x, y) = (7u32, 9u32);
        assert!(!s.joinable());
        assert!(s.try_open(&x, 2, 0));
        assert!(!s.try_open(&x, 2, 0), "one owner at a time");
        let (p, a, tag) = s.try_enter().unwrap();
        // SAFETY: `x` outlives the slot's use.
        assert_eq!((unsafe { *p }, a, tag), (7, 1, 0));
        s.leave();
        s.close_and_wait(0);
        s.publish(&y, 1, 5);
        let (p, a, tag) = s.try_enter().unwrap();
        // SAFETY: as above.
        assert_eq!((unsafe { *p }, a, tag), (9, 1, 5));
        s.leave();
        s.close_and_wait(0);
        s.release();
        assert!(s.try_own());
        s.release();
    }
}
