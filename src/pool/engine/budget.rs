//! The process-wide CPU share (`leanrt.intra_op.cpu_budget`, on by
//! default): how many CPUs the threads doing work already occupy, across
//! every pool in the process, so that a loop invites helpers only for CPUs
//! nobody is computing on, and idle workers stop spinning once callers and
//! helpers claim every CPU.
//!
//! Without it, K request threads on N < 2K CPUs, each with a pool sized to
//! the machine (or sharing one), oversubscribe the cores: a helper woken
//! for one caller's loop takes the CPU of another caller (wake-up, steal,
//! the work's cache lines crossing cores), a worker spinning between loops
//! takes CPU time from the callers, and each caller waits at its loop's
//! join for a helper the scheduler preempted. With the share, those
//! callers run their loops inline (as one thread per caller would), and
//! one caller alone still gets its helpers.
//!
//! State: one word, two counts packed (each `u32`):
//! * `callers` — threads inside a parallel loop of a pool that takes part,
//!   counted once per thread however deeply its loops nest (a pool's own
//!   workers are never counted as callers: they are counted as helpers);
//! * `busy` — workers running a share of some loop (between entering its
//!   gate and leaving it).
//!
//! Protocol (every update one read-modify-write, `Relaxed`):
//! * a caller's loop: `callers += 1` (one `fetch_add`; the value it
//!   replaced, plus this caller, is what it sees), then invites
//!   `min(wanted, cpus - callers - busy)` helpers (saturating at 0); none:
//!   it runs the whole loop inline, publishing nothing; after the join,
//!   `callers -= 1` (on unwind too: a guard).
//! * a helper: `busy += 1` before its share, `busy -= 1` after it.
//! * a worker between loops spins only while `callers + busy < cpus`; once
//!   they claim every CPU it goes to its sleep path (`worker.rs`).
//!
//! Invariants:
//! * Exact counts: every increment is matched by one decrement of the same
//!   count by the same thread, and each is one RMW, so the word is the
//!   number of callers and busy helpers in its modification order, and 0
//!   once they are all gone (loom: `cpu_share_*` in `tests/pool_loom.rs`,
//!   with a twin whose updates are a load and a store, which loses them
//!   and must fail).
//! * A caller invites at most the CPUs free in the value its own
//!   increment replaced (its view: callers and helpers that came later
//!   see it in turn).
//! * Advice only: the share decides how many helpers a loop invites and
//!   whether an idle worker keeps spinning, never whether work is found.
//!   A loop always completes on its caller; a worker that stops spinning
//!   takes the sleep path, whose re-check and the producers' notify after
//!   publishing (`sleep.rs`) keep every wake-up; so `Relaxed` suffices and
//!   a stale read costs at most one helper too many or too few, or a spin
//!   cut short.
//!
//! Cost: one RMW on one shared line per loop for the caller (two with its
//! end) and two per helper share; a spinning worker reads the line
//! (shared, not written, between loops).
use super::sync::{AtomicU64, Ordering::Relaxed};

/// One caller, in the packed word.
const CALLER: u64 = 1;
/// One busy helper, in the packed word.
const BUSY: u64 = 1 << 32;

/// The share: callers and busy helpers against the CPUs online.
pub struct CpuShare {
    word: AtomicU64,
    cpus: u64,
}

impl CpuShare {
    /// A share of `cpus` CPUs (at least 1), nobody counted.
    pub fn new(cpus: usize) -> CpuShare {
        CpuShare {
            word: AtomicU64::new(0),
            cpus: cpus.max(1) as u64,
        }
    }

    fn occupied(word: u64) -> u64 {
        (word & (BUSY - 1)) + (word >> 32)
    }

    /// A loop that wants `wanted` helpers starts: counts its caller (if
    /// `count_caller`: the thread is not already counted) and returns how
    /// many helpers to invite (0: run it inline).
    pub fn claim(&self, count_caller: bool, wanted: usize) -> usize {
        let word = if count_caller {
            self.word.fetch_add(CALLER, Relaxed) + CALLER
        } else {
            self.word.load(Relaxed)
        };
        (self.cpus.saturating_sub(Self::occupied(word)) as usize).min(wanted)
    }

    /// The end of a loop whose [`claim`](Self::claim) counted its caller.
    pub fn unclaim(&self) {
        self.word.fetch_sub(CALLER, Relaxed);
    }

    /// A helper starts its share of a loop.
    pub fn busy(&self) {
        self.word.fetch_add(BUSY, Relaxed);
    }

    /// A helper's share is done.
    pub fn idle(&self) {
        self.word.fetch_sub(BUSY, Relaxed);
    }

    /// Whether callers and busy helpers occupy every CPU (an idle worker
    /// should not spin).
    pub fn full(&self) -> bool {
        Self::occupied(self.word.load(Relaxed)) >= self.cpus
    }

    /// (callers, busy helpers) now.
    pub fn counts(&self) -> (u64, u64) {
        let w = self.word.load(Relaxed);
        (w & (BUSY - 1), w >> 32)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn callers_and_helpers_take_the_cpus() {
        let s = CpuShare::new(2);
        // One caller alone: one CPU left for a helper.
        assert_eq!(s.claim(true, 5), 1);
        s.busy();
        assert!(s.full());
        // A second caller meanwhile: nothing free, inline.
        assert_eq!(s.claim(true, 1), 0);
        // A nested loop of an already counted thread adds no caller.
        assert_eq!(s.claim(false, 1), 0);
        assert_eq!(s.counts(), (2, 1));
        s.idle();
        s.unclaim();
        assert!(!s.full());
        assert_eq!(s.claim(true, 1), 0, "two callers on two CPUs");
        s.unclaim();
        s.unclaim();
        assert_eq!(s.counts(), (0, 0));
        assert_eq!(CpuShare::new(0).claim(true, 3), 0, "one CPU at least");
    }
}
