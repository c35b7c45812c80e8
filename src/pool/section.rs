//! The pool-wide broadcast slot of a parallel section: how one loop at a
//! time is handed to idle workers without queue pushes.
//!
//! Written only against `super::sync` so that `tests/pool_loom.rs` can
//! compile this same file against loom and model-check it. The full argument
//! is in `src/pool/README.md`; in short:
//!
//! * `gate: AtomicU64` packs `CLOSED`, `OWNED`, `joined` (helpers that
//!   entered this loop), `cap` (most helpers wanted) and a generation.
//!   `left: AtomicU64`, on its own cache line so that leaving does not
//!   contend with entering, packs `PARKED` and the number of helpers that
//!   left.
//! * Owner (the thread starting a loop): [`Section::try_open`] takes the
//!   slot with a CAS that sets `OWNED` (only possible while nobody owns it:
//!   then it is closed and empty), stores the payload pointer, then
//!   *publishes* with one release store: new generation, open, `cap`.
//! * Helper: [`Section::try_enter`] is a CAS that requires the gate open and
//!   `joined < cap` and adds one to `joined`; only after that CAS succeeded
//!   it reads the payload (the CAS read from the publishing store's release
//!   sequence, so it sees the payload stored before it).
//!   [`Section::leave`] adds one to `left` (release).
//! * Owner, once its own share is done: [`Section::close_and_wait`] sets
//!   `CLOSED` with an RMW that returns the final `joined` (no helper can
//!   enter after it) and waits until `left == joined`: a brief spin, then
//!   it sets `PARKED` in `left` under the mutex and blocks on the condition
//!   variable. A helper whose `leave` sees `PARKED` takes the mutex and
//!   signals. Then [`Section::release`] clears `OWNED`; `left` is reset by
//!   the next `try_open` before it publishes.
//!
//! Invariant: the payload is only dereferenced by a helper between a
//! successful `try_enter` and its `leave`, and the owner returns from
//! `close_and_wait` only after every helper that entered has left, so the
//! payload is never used after the owner is done with it.
//!
//! No lost wake-up of the owner: the owner's `PARKED` RMW and the last
//! helper's `leave` RMW are ordered in `left`'s modification order. If the
//! `leave` comes first, the owner's RMW (or its re-check under the mutex)
//! sees `left == joined` and it does not block. If the owner's comes first,
//! the helper sees `PARKED` and takes the mutex, which the owner holds from
//! its RMW until it blocks in the condition variable, so the signal reaches
//! it.
use super::sync::{self, AtomicPtr, AtomicU64, Condvar, Mutex, Ordering};

const CLOSED: u64 = 1;
const OWNED: u64 = 1 << 1;
const FIELD_BITS: u32 = 14;
const FIELD_MASK: u64 = (1 << FIELD_BITS) - 1;
const JOINED_SHIFT: u32 = 2;
const CAP_SHIFT: u32 = JOINED_SHIFT + FIELD_BITS;
const GEN_SHIFT: u32 = CAP_SHIFT + FIELD_BITS;
const JOINED: u64 = 1 << JOINED_SHIFT;
/// In `left`: the owner is blocked (or about to block) in the condvar.
const PARKED: u64 = 1;
/// In `left`: one helper left.
const LEFT: u64 = 2;

/// Most helpers one section admits.
const MAX_HELPERS: usize = FIELD_MASK as usize;

fn joined(g: u64) -> u64 {
    (g >> JOINED_SHIFT) & FIELD_MASK
}
fn cap(g: u64) -> u64 {
    (g >> CAP_SHIFT) & FIELD_MASK
}
fn open(g: u64) -> bool {
    g & CLOSED == 0 && joined(g) < cap(g)
}

/// Keeps a field on its own cache lines.
#[derive(Debug)]
#[repr(align(128))]
struct Line<T>(T);

/// The broadcast slot. `T` is the loop's shared state; the slot only hands
/// out the pointer the owner stored.
#[derive(Debug)]
pub struct Section<T> {
    gate: Line<AtomicU64>,
    left: Line<AtomicU64>,
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
            gate: Line(AtomicU64::new(CLOSED)),
            left: Line(AtomicU64::new(0)),
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
        let mut g = self.gate.0.load(Ordering::Relaxed);
        loop {
            if g & OWNED != 0 {
                return false;
            }
            // Not owned: closed and empty (release() runs after the wait).
            match self.gate.0.compare_exchange_weak(
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
        // Every helper of the previous loop has left (its owner waited).
        self.left.0.store(0, Ordering::Relaxed);
        let generation = (g >> GEN_SHIFT).wrapping_add(1) << GEN_SHIFT;
        let cap = (cap.min(MAX_HELPERS) as u64) << CAP_SHIFT;
        // Release: the payload and `left` stores happen-before every
        // successful enter.
        self.gate
            .0
            .store(generation | cap | OWNED, Ordering::Release);
        true
    }

    /// True while a published section still admits helpers (a hint for
    /// idle workers; [`try_enter`](Self::try_enter) decides).
    #[inline]
    pub fn joinable(&self) -> bool {
        open(self.gate.0.load(Ordering::Relaxed))
    }

    /// Enters the open section: returns its payload and this helper's
    /// participant number (1, 2, ...). The payload stays valid until
    /// [`leave`](Self::leave), which must follow exactly once.
    #[inline]
    pub fn try_enter(&self) -> Option<(*const T, usize)> {
        let mut g = self.gate.0.load(Ordering::Relaxed);
        loop {
            if !open(g) {
                return None;
            }
            match self.gate.0.compare_exchange_weak(
                g,
                g + JOINED,
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
        let prev = self.left.0.fetch_add(LEFT, Ordering::AcqRel);
        if prev & PARKED != 0 {
            // The owner blocks (or is about to, holding the mutex): taking
            // the mutex orders this signal after its check.
            drop(sync::lock(&self.lock));
            self.cv.notify_all();
        }
    }

    /// Owner: closes the section and waits until every helper that
    /// entered has left (`spins` polls first, then blocks).
    pub fn close_and_wait(&self, spins: u32) {
        // After this RMW no helper can enter: `joined` is final.
        let joined = joined(self.gate.0.fetch_or(CLOSED, Ordering::AcqRel));
        let done = |l: u64| l / LEFT == joined;
        // Acquire loads of the last `leave` RMW synchronise with every
        // earlier one too (they form one release sequence).
        if done(self.left.0.load(Ordering::Acquire)) {
            return;
        }
        for _ in 0..spins {
            sync::spin_hint();
            if done(self.left.0.load(Ordering::Acquire)) {
                return;
            }
        }
        let mut guard = sync::lock(&self.lock);
        let mut l = self.left.0.fetch_or(PARKED, Ordering::AcqRel);
        while !done(l) {
            guard = sync::wait(&self.cv, guard);
            l = self.left.0.load(Ordering::Acquire);
        }
        drop(guard);
    }

    /// Owner, after [`close_and_wait`](Self::close_and_wait): frees the
    /// slot for the next loop.
    pub fn release(&self) {
        self.gate.0.fetch_and(!OWNED, Ordering::Release);
    }

    /// Helpers inside right now (for tests; only the loom tests use it in a
    /// `cfg(loom)` library build).
    #[cfg(any(test, loom))]
    #[cfg_attr(loom, allow(dead_code))]
    pub fn inside(&self) -> usize {
        let joined = joined(self.gate.0.load(Ordering::Acquire));
        (joined - self.left.0.load(Ordering::Acquire) / LEFT) as usize
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
