//! The pool-wide broadcast slot of a parallel section: how one loop at a
//! time is handed to idle workers without queue pushes.
//!
//! Written only against `super::sync` so that `tests/pool_loom.rs` can
//! compile this same file against loom and model-check it. The full argument
//! is in `src/pool/README.md`; in short:
//!
//! * `gate: AtomicU64` packs `CLOSED`, `PARKED`, `OWNED`, `inside` (helpers
//!   in the section now), `joined` (helpers that ever entered), `cap` (most
//!   helpers wanted) and a generation.
//! * Owner (the thread starting a loop): [`Section::try_open`] takes the
//!   slot with a CAS that sets `OWNED` (only possible while nobody owns it:
//!   then it is closed and empty), stores the payload pointer, then
//!   *publishes* with one release store: new generation, open, `cap`.
//! * Helper: [`Section::try_enter`] is a CAS that requires the gate open and
//!   `joined < cap` and adds one to `inside` and `joined`; only after that
//!   CAS succeeded it reads the payload (the CAS read from the publishing
//!   store's release sequence, so it sees the payload stored before it).
//!   [`Section::leave`] takes one off `inside`.
//! * Owner, once its own share is done: [`Section::close_and_wait`] sets
//!   `CLOSED` (no helper can enter any more) and waits until `inside == 0`:
//!   a brief spin, then it sets `PARKED` under the mutex and blocks on the
//!   condition variable. A helper whose `leave` takes `inside` from 1 to 0
//!   with `PARKED` set takes the mutex and signals. Then [`Section::release`]
//!   clears `OWNED`.
//!
//! Invariant: the payload is only dereferenced by a helper between a
//! successful `try_enter` and its `leave`, and the owner returns from
//! `close_and_wait` only after it saw `inside == 0` with `CLOSED` set, so the
//! payload is never used after the owner is done with it.
//!
//! No lost wake-up of the owner: the owner's `PARKED` RMW and the last
//! helper's `leave` RMW are ordered in `gate`'s modification order. If the
//! `leave` comes first, the owner's RMW (or its re-check under the mutex)
//! sees `inside == 0` and it does not block. If the owner's comes first, the
//! helper sees `PARKED` and takes the mutex, which the owner holds from its
//! RMW until it blocks in the condition variable, so the signal reaches it.
use super::sync::{self, AtomicPtr, AtomicU64, Condvar, Mutex, Ordering};

const CLOSED: u64 = 1;
const PARKED: u64 = 1 << 1;
const OWNED: u64 = 1 << 2;
const FIELD_BITS: u32 = 14;
const FIELD_MASK: u64 = (1 << FIELD_BITS) - 1;
const INSIDE_SHIFT: u32 = 3;
const JOINED_SHIFT: u32 = INSIDE_SHIFT + FIELD_BITS;
const CAP_SHIFT: u32 = JOINED_SHIFT + FIELD_BITS;
const GEN_SHIFT: u32 = CAP_SHIFT + FIELD_BITS;
const INSIDE: u64 = 1 << INSIDE_SHIFT;
const JOINED: u64 = 1 << JOINED_SHIFT;

/// Most helpers one section admits.
const MAX_HELPERS: usize = FIELD_MASK as usize;

fn inside(g: u64) -> u64 {
    (g >> INSIDE_SHIFT) & FIELD_MASK
}
fn joined(g: u64) -> u64 {
    (g >> JOINED_SHIFT) & FIELD_MASK
}
fn cap(g: u64) -> u64 {
    (g >> CAP_SHIFT) & FIELD_MASK
}
fn open(g: u64) -> bool {
    g & CLOSED == 0 && joined(g) < cap(g)
}

/// The broadcast slot. `T` is the loop's shared state; the slot only hands
/// out the pointer the owner stored.
#[derive(Debug)]
pub struct Section<T> {
    gate: AtomicU64,
    payload: AtomicPtr<T>,
    lock: Mutex<()>,
    cv: Condvar,
}

impl<T> Default for Section<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Section<T> {
    /// Not owned, closed, empty.
    pub fn new() -> Self {
        Section {
            gate: AtomicU64::new(CLOSED),
            payload: AtomicPtr::new(std::ptr::null_mut()),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// Takes the slot and publishes `payload` for up to `cap` helpers
    /// (clamped to [`MAX_HELPERS`]). False if another loop owns the slot;
    /// nothing was published then. After true, the caller must call
    /// [`close_and_wait`](Self::close_and_wait) and then
    /// [`release`](Self::release), and keep `payload` valid until
    /// `close_and_wait` returned.
    pub fn try_open(&self, payload: *const T, cap: usize) -> bool {
        let mut g = self.gate.load(Ordering::Relaxed);
        loop {
            if g & OWNED != 0 {
                return false;
            }
            // Not owned: closed and empty (release() runs after the wait).
            match self.gate.compare_exchange_weak(
                g,
                g | OWNED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => g = now,
            }
        }
        self.payload.store(payload as *mut T, Ordering::Relaxed);
        let generation = (g >> GEN_SHIFT).wrapping_add(1) << GEN_SHIFT;
        let cap = (cap.min(MAX_HELPERS) as u64) << CAP_SHIFT;
        // Release: the payload store happens-before every successful enter.
        self.gate.store(generation | cap | OWNED, Ordering::Release);
        true
    }

    /// True while a published section still admits helpers (a hint for
    /// idle workers; [`try_enter`](Self::try_enter) decides).
    #[inline]
    pub fn joinable(&self) -> bool {
        open(self.gate.load(Ordering::Relaxed))
    }

    /// Enters the open section: returns its payload and this helper's
    /// participant number (1, 2, ...). The payload stays valid until
    /// [`leave`](Self::leave), which must follow exactly once.
    #[inline]
    pub fn try_enter(&self) -> Option<(*const T, usize)> {
        let mut g = self.gate.load(Ordering::Relaxed);
        loop {
            if !open(g) {
                return None;
            }
            match self.gate.compare_exchange_weak(
                g,
                g + INSIDE + JOINED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    // Read only now: this CAS read from the release sequence
                    // of the store that published the current payload.
                    let p = self.payload.load(Ordering::Relaxed);
                    return Some((p.cast_const(), joined(g) as usize + 1));
                }
                Err(now) => g = now,
            }
        }
    }

    /// A helper leaves; afterwards it must not touch the payload.
    #[inline]
    pub fn leave(&self) {
        // Release: the helper's writes happen-before the owner's return.
        let prev = self.gate.fetch_sub(INSIDE, Ordering::AcqRel);
        if prev & PARKED != 0 && inside(prev) == 1 {
            // The owner blocks (or is about to, holding the mutex): taking
            // the mutex orders this signal after its check.
            drop(sync::lock(&self.lock));
            self.cv.notify_all();
        }
    }

    /// Owner: closes the section and waits until no helper is inside
    /// (`spins` polls first, then blocks).
    pub fn close_and_wait(&self, spins: u32) {
        let prev = self.gate.fetch_or(CLOSED, Ordering::AcqRel);
        if inside(prev) == 0 {
            return;
        }
        for _ in 0..spins {
            if inside(self.gate.load(Ordering::Acquire)) == 0 {
                return;
            }
            sync::spin_hint();
        }
        let mut guard = sync::lock(&self.lock);
        let mut g = self.gate.fetch_or(PARKED, Ordering::AcqRel);
        while inside(g) != 0 {
            guard = sync::wait(&self.cv, guard);
            g = self.gate.load(Ordering::Acquire);
        }
        drop(guard);
    }

    /// Owner, after [`close_and_wait`](Self::close_and_wait): frees the
    /// slot for the next loop.
    pub fn release(&self) {
        self.gate.fetch_and(!(OWNED | PARKED), Ordering::Release);
    }

    /// Helpers inside right now (for tests).
    #[cfg(any(test, loom))]
    pub fn inside(&self) -> usize {
        inside(self.gate.load(Ordering::Acquire)) as usize
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn gate_lifecycle() {
        let s = Section::<u32>::new();
        let x = 7u32;
        assert!(!s.joinable());
        assert!(s.try_enter().is_none());
        assert!(s.try_open(&x, 2));
        assert!(!s.try_open(&x, 2), "one owner at a time");
        assert!(s.joinable());
        let (p, a) = s.try_enter().unwrap();
        // SAFETY: `x` outlives the section.
        assert_eq!(unsafe { *p }, 7);
        let (_, b) = s.try_enter().unwrap();
        assert_eq!((a, b), (1, 2));
        assert!(s.try_enter().is_none(), "cap reached");
        assert_eq!(s.inside(), 2);
        s.leave();
        s.leave();
        s.close_and_wait(0);
        s.release();
        assert!(s.try_open(&x, 1));
        s.close_and_wait(0);
        assert!(s.try_enter().is_none(), "closed");
        s.release();
    }
}
