//! The sleep/wake protocol of the pool's workers: an event count.
//!
//! Written only against `super::sync` so that `tests/pool_loom.rs` can
//! compile this same file against loom and model-check it.
//!
//! * `state` packs `epoch` (high 32 bits) and `waiters` (low 32 bits).
//! * A worker that found no work calls [`EventCount::prepare`] (an
//!   acquire-release RMW that counts it as a waiter and reads the epoch),
//!   then **re-scans every queue**; if it finds work (or shutdown) it calls
//!   [`EventCount::cancel`], else [`EventCount::wait`], which blocks until
//!   the epoch differs from the one it read.
//! * A producer first publishes its work (push into a queue, or a flag),
//!   then calls [`EventCount::notify`], which starts with an acquire-release
//!   RMW on `state`. If it sees waiters, it bumps the epoch *under the mutex*
//!   and signals the condition variable.
//!
//! Invariant (no lost wake-up): the producer's RMW and the waiter's RMW are
//! ordered in `state`'s modification order. If the producer's comes first,
//! the waiter's acquire RMW reads from it, so the waiter's re-scan sees the
//! published work. If the waiter's comes first, the producer reads
//! `waiters > 0` and bumps the epoch; the bump is under the mutex, so the
//! waiter either has not yet checked the epoch (and returns at once) or is
//! blocked in the condition variable and receives the signal.
//!
//! A timed wait ([`EventCount::wait_until`], for a worker that wakes
//! itself ahead of a request it expects: `adaptive.rs`) that runs out
//! deregisters exactly as a notified one does and returns; to the
//! protocol it is a spurious wake-up, after which the worker re-scans and,
//! to sleep again, prepares a new ticket. A notify that counted it among
//! the waiters and whose signal it no longer takes leaves a woken worker
//! all the same (this one), which scans every queue.
//!
//! A signal of `notify(1)` may reach another blocked waiter than the one
//! that registered last; that is fine because every woken worker re-scans
//! every queue (every worker can take every job). A prepared but not yet
//! blocked waiter sees the changed epoch and does not block; a spurious
//! wake-up only costs a scan. What the callers keep:
//! * a worker blocks only after `prepare` and a scan of the slot, every
//!   queue, the shutdown flag, the count of `enable_spinning`'s wakes
//!   (unchanged since before its spin) and, for a section member, its
//!   section's id, that found nothing;
//! * every publication (Schedule push, `Help` push, a loop published in
//!   the slot, a section's end, shutdown, `enable_spinning`'s count) is
//!   followed by `notify`, whose first step is an RMW, on every event count
//!   a worker that should see it may sleep on;
//! * the epoch changes only under the mutex.
use super::sync::{self, AtomicU64, Condvar, Mutex, Ordering};

const WAITER: u64 = 1;
const WAITER_MASK: u64 = (1 << 32) - 1;
const EPOCH: u64 = 1 << 32;

/// A waiter's ticket: the epoch it read in [`EventCount::prepare`].
#[must_use]
#[derive(Debug)]
pub struct Ticket(u64);

/// Event count: lets workers sleep without missing work published
/// concurrently. See the module docs for the protocol.
#[derive(Debug)]
pub struct EventCount {
    state: AtomicU64,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Default for EventCount {
    fn default() -> Self {
        Self::new()
    }
}

impl EventCount {
    /// No waiters, epoch 0.
    pub fn new() -> Self {
        EventCount {
            state: AtomicU64::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// Step 1 of going to sleep: registers the caller as a waiter. The
    /// caller must re-check for work afterwards and then call exactly one of
    /// [`cancel`](Self::cancel) or [`wait`](Self::wait) with the ticket.
    pub fn prepare(&self) -> Ticket {
        let s = self.state.fetch_add(WAITER, Ordering::AcqRel);
        Ticket(s >> 32)
    }

    /// Work was found after [`prepare`](Self::prepare): deregisters.
    pub fn cancel(&self, ticket: Ticket) {
        let _ = ticket;
        self.state.fetch_sub(WAITER, Ordering::AcqRel);
    }

    /// Blocks until a [`notify`](Self::notify) that happened after
    /// [`prepare`](Self::prepare) (the epoch moved on), then deregisters.
    pub fn wait(&self, ticket: Ticket) {
        let mut guard = sync::lock(&self.lock);
        while self.unchanged(&ticket) {
            guard = sync::wait(&self.cv, guard);
        }
        drop(guard);
        self.state.fetch_sub(WAITER, Ordering::AcqRel);
    }

    /// As [`wait`](Self::wait), but gives up at `deadline` (module docs):
    /// true when a notify ended the wait, false when the time ran out
    /// first. Deregisters either way.
    pub fn wait_until(&self, ticket: Ticket, deadline: sync::Deadline) -> bool {
        let mut guard = sync::lock(&self.lock);
        let mut notified = true;
        while self.unchanged(&ticket) {
            let (g, expired) = sync::wait_until(&self.cv, guard, deadline);
            guard = g;
            if expired && self.unchanged(&ticket) {
                notified = false;
                break;
            }
        }
        drop(guard);
        self.state.fetch_sub(WAITER, Ordering::AcqRel);
        notified
    }

    /// Whether the epoch is still the one `ticket` read.
    fn unchanged(&self, ticket: &Ticket) -> bool {
        (self.state.load(Ordering::Acquire) >> 32) & WAITER_MASK == ticket.0 & WAITER_MASK
    }

    /// Number of registered waiters (prepared or blocked) right now (the
    /// loom models check it).
    #[cfg(loom)]
    #[allow(dead_code)]
    pub fn waiters(&self) -> u64 {
        self.state.load(Ordering::Relaxed) & WAITER_MASK
    }

    /// Wakes up to `n` waiters (`usize::MAX`: all). Call it after the work
    /// it announces has been published. Cheap (one uncontended RMW) when
    /// nobody waits.
    pub fn notify(&self, n: usize) {
        // An RMW, not a load: see the module docs for why.
        let s = self.state.fetch_add(0, Ordering::AcqRel);
        let waiters = s & WAITER_MASK;
        if waiters == 0 || n == 0 {
            return;
        }
        {
            let _guard = sync::lock(&self.lock);
            // Wrapping on overflow of the epoch is fine: waiters only compare
            // for equality and the low half is untouched.
            self.state.fetch_add(EPOCH, Ordering::AcqRel);
        }
        if n as u64 >= waiters {
            self.cv.notify_all();
        } else {
            for _ in 0..n {
                self.cv.notify_one();
            }
        }
    }
}
