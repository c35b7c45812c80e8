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
//! A caller occupies its CPU between its loops too (the serial operators
//! of an inference run between two parallel ones), where it is in no loop.
//! Counting only callers inside loops makes the count flicker: a caller
//! between two loops looks absent, the other callers invite helpers for
//! its CPU, and it comes back to a CPU a helper holds (two callers on two
//! CPUs lost 12–28% of one thread each that way). So a caller's claim
//! **lingers** after its loop ends, for one to two epochs of
//! [`EPOCH_NS_LOG2`] (65.5–131 µs): a caller that starts loops more often
//! than that is counted as present the whole time, one whose next loop is
//! further away (a request gap) frees its CPU soon after.
//!
//! More request threads than CPUs is another matter. K callers with gaps
//! between their requests (K > CPUs) leave CPUs free now and then, a loop
//! then invites helpers for them, and the callers coming back from their
//! gaps find those CPUs taken: four callers on two CPUs with 1 ms gaps ran
//! at 0.88x one thread per caller that way. A linger long enough to cover
//! the gaps would take helpers from two callers on two CPUs, whose gaps
//! they use well (1.26x). So the share also keeps a **census**: how many
//! distinct caller threads started a loop in the current or the previous
//! census epoch (2^[`CENSUS_SHIFT`] epochs, 2.1–4.2 ms). While it exceeds
//! the CPUs the process is crowded with callers: every loop runs inline
//! (what one thread per caller does) and no idle worker spins.
//!
//! State:
//! * one word, two counts packed (each `u32`): `callers` — threads inside
//!   a parallel loop of a pool that takes part, counted once per thread
//!   however deeply its loops nest (a pool's own workers are never counted
//!   as callers: they are counted as helpers); `busy` — workers running a
//!   share of some loop (between entering its gate and leaving it);
//! * two linger buckets (epoch `e` uses bucket `e % 2`), each one word:
//!   the epoch it counts (upper bits) and how many callers ended their
//!   loop in that epoch and have not started one since (lower
//!   [`LINGER_BITS`]). Lingering now, in epoch `e`, is the sum of the
//!   buckets whose epoch is `e` or `e - 1` (or later: another thread's
//!   clock read may be a little ahead of ours).
//! * two census buckets, the same words (`Buckets`) over census epochs
//!   (`e >> CENSUS_SHIFT`): how many caller threads enlisted in that
//!   census epoch. The census now is the larger of the two recent buckets
//!   (a thread active in both is in both; their sum would count it twice).
//!
//! Protocol (every update one read-modify-write, `Relaxed`; the epoch is
//! the caller's, from the monotonic clock, passed in):
//! * a caller's loop: if its previous loop left a linger in epoch `p`,
//!   take it back: one CAS loop that decrements bucket `p % 2` only while
//!   that bucket still counts epoch `p` (a bucket reused for a later epoch
//!   no longer holds it); then `callers += 1` (one `fetch_add`); then it
//!   invites `min(wanted, cpus - callers - busy - lingering)` helpers
//!   (saturating at 0); none: it runs the whole loop inline, publishing
//!   nothing.
//! * its end (after the join, on unwind too: a guard): `callers -= 1`,
//!   then linger in epoch `e`, one CAS loop on bucket `e % 2`: a bucket
//!   still counting an older epoch is reset to `(e, 1)` (what it held has
//!   expired), one counting `e` or later is incremented (the caller
//!   records the epoch it counts, to take it back).
//! * The order at both ends never counts a caller twice, even for a
//!   moment: a worker that saw every CPU claimed would stop spinning and
//!   sleep, and the next loop would pay a wake-up (one caller on two CPUs
//!   lost 13% of its latency that way). Counted once too few for a moment
//!   costs at most one spin check that lets a worker go on spinning.
//! * a caller's first counted loop in a census epoch `c` (the thread
//!   remembers the last `c` it enlisted in) enlists it first: one CAS loop
//!   on census bucket `c % 2`, as a linger's end adds to its bucket
//!   (reset an older epoch's, else increment); nothing takes it back.
//!   Then, with the census above the CPUs, the loop runs inline, and its
//!   claim counts nothing in the word and takes no linger back (the linger
//!   expires by the clock, or the caller's next uncrowded loop takes it), so
//!   that a crowd's loops write no shared line.
//! * a helper: `busy += 1` before its share, `busy -= 1` after it.
//! * a worker between loops spins only while `callers + busy + lingering
//!   < cpus` and the census is at most the CPUs; else it goes to its sleep
//!   path (`worker.rs`).
//!
//! Invariants:
//! * Exact counts: every increment is matched by one decrement of the same
//!   count by the same thread, and each is one RMW, so the word is the
//!   number of callers and busy helpers in its modification order, and 0
//!   once they are all gone. A bucket counts exactly the lingers made in
//!   its epoch and not taken back: a take-back decrements only the bucket
//!   that still carries the epoch its linger was added in (the CAS
//!   compares the epoch with the count), a reset discards only lingers of
//!   an expired epoch, and a take-back after the reset finds a later
//!   epoch and does nothing. A census bucket counts exactly the threads
//!   that enlisted in its epoch, each once: a thread enlists once per
//!   census epoch, and a reset discards only an expired epoch's (loom:
//!   `cpu_share_*`, `linger_*` and `census_*` in `tests/pool_loom.rs`, with
//!   a twin whose updates are a load and a store, which loses them and
//!   must fail).
//! * Expiry needs nobody: a linger stops counting when the clock leaves
//!   its epoch's successor, an enlistment when the clock leaves its census
//!   epoch's successor, whether or not its thread ever calls again (a
//!   caller thread that exits leaves nothing behind).
//! * A caller invites at most the CPUs free in its own view (the word its
//!   increment replaced, the buckets it read after): callers and helpers
//!   that came later see it in turn.
//! * Advice only: the share decides how many helpers a loop invites and
//!   whether an idle worker keeps spinning, never whether work is found.
//!   A loop always completes on its caller; a worker that stops spinning
//!   takes the sleep path, whose re-check and the producers' notify after
//!   publishing (`sleep.rs`) keep every wake-up; so `Relaxed` suffices and
//!   a stale read costs at most one helper too many or too few, or a spin
//!   cut short.
//!
//! Cost: per loop of a caller, two RMWs on the word and two CAS on a
//! bucket line (uncontended: one pass of each loop), two reads of the
//! census lines, and two clock reads (the caller's, `shared.rs`); one CAS
//! more per caller thread and census epoch; two RMWs per helper share; a
//! spinning worker reads the five lines (shared, not written, between
//! loops).
use super::sync::{AtomicU64, CachePadded, Ordering::Relaxed};

/// One caller, in the packed word.
const CALLER: u64 = 1;
/// One busy helper, in the packed word.
const BUSY: u64 = 1 << 32;
/// Bits of a linger bucket that count callers; the rest is the epoch.
pub const LINGER_BITS: u32 = 24;
/// An epoch is `2^EPOCH_NS_LOG2` ns of the monotonic clock (65.5 µs), so
/// a caller's claim lingers 65.5–131 µs after its loop.
pub const EPOCH_NS_LOG2: u32 = 16;
/// A census epoch is `2^CENSUS_SHIFT` epochs (2.1 ms): longer than a
/// request's gap between the loops of callers that crowd the CPUs.
pub const CENSUS_SHIFT: u32 = 5;
const LINGER_COUNT: u64 = (1 << LINGER_BITS) - 1;

/// The share: callers, busy helpers and lingering callers against the
/// CPUs online, and the census of caller threads.
pub struct CpuShare {
    word: AtomicU64,
    lingering: Buckets,
    census: Buckets,
    cpus: u64,
}

/// Two epoch-tagged counters (module docs: the linger and census
/// buckets): epoch `e` counts in bucket `e % 2`.
struct Buckets([CachePadded<AtomicU64>; 2]);

impl Buckets {
    fn new() -> Buckets {
        Buckets([
            CachePadded::new(AtomicU64::new(0)),
            CachePadded::new(AtomicU64::new(0)),
        ])
    }

    /// The counts of the buckets that still count at epoch `now`.
    fn recent(&self, now: u64) -> impl Iterator<Item = u64> + '_ {
        self.0
            .iter()
            .map(|b| b.load(Relaxed))
            .filter(move |&w| recent(bucket_epoch(w), now))
            .map(|w| w & LINGER_COUNT)
    }

    /// Counts one more in epoch `now`'s bucket (reset first if it still
    /// counts an expired epoch); returns the epoch it is counted in (`now`,
    /// or later when another thread's clock read was ahead).
    fn add(&self, now: u64) -> u64 {
        let bucket = &self.0[(now % 2) as usize];
        let mut w = bucket.load(Relaxed);
        loop {
            let b = bucket_epoch(w);
            // Same parity: `b` is `now` (or later), or expired (`now - 2`
            // or older).
            let (at, new) = if (b.wrapping_sub(now) as i64) >= 0 {
                (b, w + 1)
            } else {
                (now, (now << LINGER_BITS) | 1)
            };
            match bucket.compare_exchange_weak(w, new, Relaxed, Relaxed) {
                Ok(_) => return at,
                Err(seen) => w = seen,
            }
        }
    }

    /// Takes one back from epoch `at`'s bucket if it still counts `at`.
    fn take_back(&self, at: u64) {
        let bucket = &self.0[(at % 2) as usize];
        let mut w = bucket.load(Relaxed);
        while bucket_epoch(w) == at && w & LINGER_COUNT > 0 {
            match bucket.compare_exchange_weak(w, w - 1, Relaxed, Relaxed) {
                Ok(_) => return,
                Err(seen) => w = seen,
            }
        }
    }
}

/// Where a caller's linger is counted: the epoch of the bucket that holds
/// it (keep it until the caller's next loop takes it back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Linger(pub u64);

fn bucket_epoch(w: u64) -> u64 {
    w >> LINGER_BITS
}

/// Whether a bucket of epoch `b` still counts at epoch `now`: `b` is `now`
/// or `now - 1`, or later (another thread's clock read ahead of ours).
fn recent(b: u64, now: u64) -> bool {
    (b.wrapping_sub(now) as i64) >= -1
}

impl CpuShare {
    /// A share of `cpus` CPUs (at least 1), nobody counted.
    pub fn new(cpus: usize) -> CpuShare {
        CpuShare {
            word: AtomicU64::new(0),
            lingering: Buckets::new(),
            census: Buckets::new(),
            cpus: cpus.max(1) as u64,
        }
    }

    fn occupied(word: u64) -> u64 {
        (word & (BUSY - 1)) + (word >> 32)
    }

    /// Callers lingering at epoch `now`.
    pub fn lingering(&self, now: u64) -> u64 {
        self.lingering.recent(now).sum()
    }

    /// The census at epoch `now`: distinct caller threads that enlisted in
    /// its census epoch or the one before (the larger count).
    pub fn census(&self, now: u64) -> u64 {
        self.census.recent(now >> CENSUS_SHIFT).max().unwrap_or(0)
    }

    /// Enlists the calling thread in the census at epoch `now`; returns
    /// the census epoch it is counted in (the thread calls again only in a
    /// later one).
    pub fn enlist(&self, now: u64) -> u64 {
        self.census.add(now >> CENSUS_SHIFT)
    }

    /// Whether more caller threads than CPUs are about at epoch `now`.
    fn crowded(&self, now: u64) -> bool {
        self.census(now) > self.cpus
    }

    /// A loop that wants `wanted` helpers starts at epoch `now`: counts its
    /// caller (if `count_caller`: the thread is not already counted),
    /// takes back the linger its previous loop left (`back`), and returns
    /// how many helpers to invite (0: run it inline). None: a crowd (the
    /// census above the CPUs): run it inline; nothing was counted nor taken
    /// back, so no [`unclaim`](Self::unclaim) follows and `back` stays the
    /// caller's.
    pub fn claim(
        &self,
        count_caller: bool,
        back: Option<Linger>,
        now: u64,
        wanted: usize,
    ) -> Option<usize> {
        if self.crowded(now) {
            return None;
        }
        // The linger goes first, the caller count after (and the reverse
        // at the end): a caller is never counted twice, even for a moment,
        // since a worker that saw every CPU claimed would stop spinning.
        if let Some(l) = back {
            self.take_back(l);
        }
        let word = if count_caller {
            self.word.fetch_add(CALLER, Relaxed) + CALLER
        } else {
            self.word.load(Relaxed)
        };
        let occupied = Self::occupied(word) + self.lingering(now);
        Some((self.cpus.saturating_sub(occupied) as usize).min(wanted))
    }

    /// The end, at epoch `now`, of a loop whose [`claim`](Self::claim)
    /// counted its caller: the caller lingers; keep the result for its
    /// next claim.
    pub fn unclaim(&self, now: u64) -> Linger {
        self.word.fetch_sub(CALLER, Relaxed);
        Linger(self.lingering.add(now))
    }

    /// Takes back a linger if its bucket still counts its epoch.
    fn take_back(&self, l: Linger) {
        self.lingering.take_back(l.0);
    }

    /// A helper starts its share of a loop.
    pub fn busy(&self) {
        self.word.fetch_add(BUSY, Relaxed);
    }

    /// A helper's share is done.
    pub fn idle(&self) {
        self.word.fetch_sub(BUSY, Relaxed);
    }

    /// Whether callers, busy helpers and lingering callers occupy every
    /// CPU at epoch `now`, or the census exceeds the CPUs (an idle worker
    /// should not spin).
    pub fn full(&self, now: u64) -> bool {
        Self::occupied(self.word.load(Relaxed)) + self.lingering(now) >= self.cpus
            || self.crowded(now)
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
        assert_eq!(s.claim(true, None, 10, 5), Some(1));
        s.busy();
        assert!(s.full(10));
        // A second caller meanwhile: nothing free, inline.
        assert_eq!(s.claim(true, None, 10, 1), Some(0));
        // A nested loop of an already counted thread adds no caller.
        assert_eq!(s.claim(false, None, 10, 1), Some(0));
        assert_eq!(s.counts(), (2, 1));
        s.idle();
        let first = s.unclaim(10);
        assert_eq!(first, Linger(10));
        // The first caller lingers: still two CPUs occupied.
        assert!(s.full(10));
        assert_eq!(
            s.claim(true, Some(first), 10, 1),
            Some(0),
            "two callers on two CPUs"
        );
        assert_eq!(s.lingering(10), 0, "its next loop took the linger back");
        let a = s.unclaim(10);
        let b = s.unclaim(11);
        assert_eq!((a, b), (Linger(10), Linger(11)));
        assert_eq!(s.counts(), (0, 0));
        assert_eq!(s.lingering(11), 2);
        assert!(s.full(11));
        assert_eq!(
            CpuShare::new(0).claim(true, None, 0, 3),
            Some(0),
            "one CPU at least"
        );
    }

    #[test]
    fn a_crowd_of_callers_runs_inline() {
        let s = CpuShare::new(2);
        let e = 7 << CENSUS_SHIFT;
        // Two callers enlisted: not crowded, a lone loop gets its helper.
        assert_eq!(s.enlist(e), 7);
        assert_eq!(s.enlist(e + 1), 7);
        assert_eq!(s.census(e), 2);
        assert_eq!(s.claim(true, None, e, 1), Some(1));
        let l = s.unclaim(e);
        // A third: every loop inline, no worker spins, with CPUs free.
        s.enlist(e + 2);
        assert_eq!(s.census(e + 2), 3);
        assert!(s.full(e + 2), "crowded: no worker spins");
        assert_eq!(s.claim(true, Some(l), e + 2, 1), None, "crowded: inline");
        assert_eq!(s.counts(), (0, 0), "a crowd's claim counts nobody");
        // The next census epoch still counts the last one's three (the
        // larger bucket), one enlisting again there is not counted twice.
        let next = e + (1 << CENSUS_SHIFT);
        assert_eq!(s.enlist(next), 8);
        assert_eq!(s.census(next), 3);
        // Two census epochs on, only who enlisted since counts: 1.
        let later = e + (2 << CENSUS_SHIFT);
        assert_eq!(s.census(later), 1);
        assert!(!s.full(later + 2));
        assert_eq!(s.claim(true, None, later + 2, 1), Some(1));
        s.unclaim(later + 2);
    }

    #[test]
    fn lingers_expire_with_their_epoch_successor() {
        let s = CpuShare::new(2);
        s.claim(true, None, 100, 1);
        let l = s.unclaim(100);
        assert_eq!(s.lingering(100), 1);
        assert_eq!(s.lingering(101), 1, "still counted in the next epoch");
        assert_eq!(s.lingering(102), 0, "expired two epochs on, nobody called");
        // A caller back after its linger expired: one CPU for a helper.
        assert_eq!(s.claim(true, Some(l), 102, 1), Some(1));
        // Another caller ends in epoch 102: bucket 0 reused, 100's linger
        // discarded; a late take-back of epoch 100 must not touch it.
        s.claim(true, None, 102, 1);
        let m = s.unclaim(102);
        s.take_back(l);
        assert_eq!(s.lingering(102), 1);
        assert_eq!(m, Linger(102));
        let n = s.unclaim(103);
        assert_eq!(s.lingering(103), 2);
        s.take_back(n);
        assert_eq!(s.lingering(103), 1);
        // A clock read behind the bucket's epoch adds to the later epoch.
        s.claim(true, None, 101, 1);
        assert_eq!(s.unclaim(101), Linger(103));
        assert_eq!(s.lingering(103), 2);
    }
}
