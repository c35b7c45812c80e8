//! The loop gate: who may still join a parallel loop, and the owner's wait
//! until every helper that joined has left. One type serves both ways a
//! loop reaches the workers: the pool's broadcast slot (`super::slot`, one
//! gate reused loop after loop) and the queue fallback (a gate made for one
//! loop, handed out in `Help` jobs).
//!
//! Written only against `super::sync`, so that `tests/pool_loom.rs`
//! compiles this same file against loom and model-checks it.
//!
//! State:
//! * `state: AtomicU64` packs `CLOSED`, `OWNED`, `joined` (helpers that
//!   entered the current loop), `cap` (most helpers it admits), both
//!   [`FIELD_BITS`] wide, and a generation above them.
//! * `left: AtomicU64`, on its own cache line so that helpers leaving do
//!   not contend with helpers entering, packs `PARKED` and the number of
//!   helpers that left.
//!
//! Protocol:
//! * Owner: [`Gate::try_own`] (a CAS that sets `OWNED`; only while nobody
//!   owns it, i.e. closed and empty), then [`Gate::publish`] (reset `left`,
//!   one release store: next generation, open, `cap`). An owner may
//!   publish again after each [`Gate::close_and_wait`] without giving the
//!   gate up; [`Gate::release`] gives it up.
//! * Helper: [`Gate::try_enter`] is a CAS that requires the gate open and
//!   `joined < cap` and adds one to `joined`; it acquires the publishing
//!   store, so whatever the owner wrote before publishing is visible.
//!   [`Gate::leave`] adds one to `left` (release); if `PARKED` was set it
//!   takes the mutex and signals.
//! * Owner, once its own share is done: [`Gate::close_and_wait`] sets
//!   `CLOSED` with an RMW that returns the final `joined` (nobody enters
//!   after it) and waits until `left == joined`: polls (yielding its CPU
//!   every few polls when a helper may be preempted on it), then under the
//!   mutex it sets `PARKED` in `left` and blocks on the condvar.
//!
//! Invariants:
//! * A helper uses the loop's state only between a successful `try_enter`
//!   and its `leave`; the owner returns from `close_and_wait` only after
//!   every helper that entered has left. So the loop's state (on the
//!   owner's stack) is never used after the owner is done with it.
//! * No lost wake-up of the owner: its `PARKED` RMW and the last helper's
//!   `leave` RMW are ordered in `left`'s modification order. If the `leave`
//!   comes first, the owner's RMW sees `left == joined` and does not block.
//!   If the owner's comes first, the helper sees `PARKED` and takes the
//!   mutex, which the owner holds from its RMW until it blocks in the
//!   condvar, so the signal reaches it.
//! * A stale `try_enter` CAS (a state read for an older loop) succeeds only
//!   if the gate holds exactly that value now, i.e. an open state of the
//!   current generation, so the helper joins the current loop.
use super::sync::{self, AtomicU64, CachePadded, Condvar, Mutex, Ordering};

/// Polls of `close_and_wait` between two yields of the owner's CPU.
const YIELD_EVERY: u32 = 8;

const CLOSED: u64 = 1;
const OWNED: u64 = 1 << 1;
/// Width of the `joined` and `cap` fields.
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

/// Most helpers one loop admits.
pub const MAX_HELPERS: usize = FIELD_MASK as usize;

fn joined(g: u64) -> u64 {
    (g >> JOINED_SHIFT) & FIELD_MASK
}
fn cap(g: u64) -> u64 {
    (g >> CAP_SHIFT) & FIELD_MASK
}
fn open(g: u64) -> bool {
    g & CLOSED == 0 && joined(g) < cap(g)
}

/// The loop gate (see the module docs).
#[derive(Debug)]
pub struct Gate {
    state: CachePadded<AtomicU64>,
    left: CachePadded<AtomicU64>,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Gate {
    /// Not owned, closed, empty.
    pub fn new() -> Self {
        Gate {
            state: CachePadded::new(AtomicU64::new(CLOSED)),
            left: CachePadded::new(AtomicU64::new(0)),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// A gate made for one loop: owned by its creator and already open for
    /// up to `cap` helpers (the queue fallback: nothing else can see it
    /// before it is handed out, so no publication is needed).
    pub fn opened(cap: usize) -> Self {
        let g = Gate::new();
        g.state.store(
            OWNED | ((cap.min(MAX_HELPERS) as u64) << CAP_SHIFT),
            Ordering::Relaxed,
        );
        g
    }

    /// Takes the gate (closed and empty while nobody owns it). False if it
    /// is owned.
    pub fn try_own(&self) -> bool {
        let mut g = self.state.load(Ordering::Relaxed);
        loop {
            if g & OWNED != 0 {
                return false;
            }
            match self.state.compare_exchange_weak(
                g,
                g | OWNED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => g = now,
            }
        }
    }

    /// Owner (closed, nobody inside): opens the next loop for up to `cap`
    /// helpers (clamped to [`MAX_HELPERS`]). Whatever the owner wrote
    /// before this call is visible to every helper that enters.
    pub fn publish(&self, cap: usize) {
        // Every helper of the previous loop has left (its owner waited).
        self.left.store(0, Ordering::Relaxed);
        let g = self.state.load(Ordering::Relaxed);
        let generation = (g >> GEN_SHIFT).wrapping_add(1) << GEN_SHIFT;
        let cap = (cap.min(MAX_HELPERS) as u64) << CAP_SHIFT;
        // Release: pairs with the acquire CAS of `try_enter`.
        self.state
            .store(generation | cap | OWNED, Ordering::Release);
    }

    /// True while the current loop still admits helpers (a hint; the CAS in
    /// [`try_enter`](Self::try_enter) decides).
    #[inline]
    pub fn joinable(&self) -> bool {
        open(self.state.load(Ordering::Relaxed))
    }

    /// The `cap` of the current loop (a hint outside the loop; exact for a
    /// helper that is inside).
    #[inline]
    pub fn cap(&self) -> usize {
        cap(self.state.load(Ordering::Relaxed)) as usize
    }

    /// Enters the open loop: this helper's participant number (1, 2, ...).
    /// [`leave`](Self::leave) must follow exactly once.
    #[inline]
    pub fn try_enter(&self) -> Option<usize> {
        let mut g = self.state.load(Ordering::Relaxed);
        loop {
            if !open(g) {
                return None;
            }
            match self.state.compare_exchange_weak(
                g,
                g + JOINED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(joined(g) as usize + 1),
                Err(now) => g = now,
            }
        }
    }

    /// A helper leaves; afterwards it must not touch the loop's state.
    #[inline]
    pub fn leave(&self) {
        // Release: the helper's writes happen-before the owner's return.
        let prev = self.left.fetch_add(LEFT, Ordering::AcqRel);
        if prev & PARKED != 0 {
            // The owner blocks (or is about to, holding the mutex): taking
            // the mutex orders this signal after its check.
            drop(sync::lock(&self.lock));
            self.cv.notify_all();
        }
    }

    /// Owner: closes the loop and waits until every helper that entered
    /// has left (`spins` polls first, then blocks).
    #[cfg(any(test, loom))]
    pub fn close_and_wait(&self, spins: u32) {
        self.close_and_wait_yielding(spins, &|| false);
    }

    /// [`close_and_wait`](Self::close_and_wait), giving the CPU away every
    /// `YIELD_EVERY` polls while `share_cpu()` says a helper inside may be
    /// waiting for this very CPU (preempted on it): then it can finish.
    /// Yielding otherwise would only hand the CPU to another process.
    pub fn close_and_wait_yielding(&self, spins: u32, share_cpu: &dyn Fn() -> bool) {
        // After this RMW no helper can enter: `joined` is final.
        let joined = joined(self.state.fetch_or(CLOSED, Ordering::AcqRel));
        let done = |l: u64| l / LEFT == joined;
        // Acquire loads of the last `leave` RMW synchronise with every
        // earlier one too (they form one release sequence).
        if done(self.left.load(Ordering::Acquire)) {
            return;
        }
        for i in 0..spins {
            if i % YIELD_EVERY == YIELD_EVERY - 1 && share_cpu() {
                sync::yield_now();
            } else {
                sync::spin_hint();
            }
            if done(self.left.load(Ordering::Acquire)) {
                return;
            }
        }
        let mut guard = sync::lock(&self.lock);
        let mut l = self.left.fetch_or(PARKED, Ordering::AcqRel);
        while !done(l) {
            guard = sync::wait(&self.cv, guard);
            l = self.left.load(Ordering::Acquire);
        }
        drop(guard);
    }

    /// Owner, after [`close_and_wait`](Self::close_and_wait): gives the
    /// gate up.
    pub fn release(&self) {
        self.state.fetch_and(!OWNED, Ordering::Release);
    }

    /// Helpers inside right now (tests and the loom models).
    #[cfg(any(test, loom))]
    #[cfg_attr(loom, allow(dead_code))]
    pub fn inside(&self) -> usize {
        let joined = joined(self.state.load(Ordering::Acquire));
        (joined - self.left.load(Ordering::Acquire) / LEFT) as usize
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn gate_lifecycle() {
        let g = Gate::new();
        assert!(!g.joinable());
        assert!(g.try_enter().is_none());
        assert!(g.try_own());
        assert!(!g.try_own(), "one owner at a time");
        g.publish(2);
        assert!(g.joinable());
        assert_eq!((g.try_enter(), g.try_enter()), (Some(1), Some(2)));
        assert!(g.try_enter().is_none(), "cap reached");
        assert_eq!(g.inside(), 2);
        g.leave();
        g.leave();
        g.close_and_wait(0);
        g.publish(1);
        assert_eq!(g.try_enter(), Some(1), "a new loop, same owner");
        g.leave();
        g.close_and_wait(0);
        assert!(g.try_enter().is_none(), "closed");
        g.release();
        assert!(g.try_own());
        g.release();
    }

    #[test]
    fn opened_gate_for_one_loop() {
        let g = Gate::opened(1);
        assert_eq!(g.try_enter(), Some(1));
        assert!(g.try_enter().is_none());
        g.leave();
        g.close_and_wait(0);
        assert!(g.try_enter().is_none());
    }
}
