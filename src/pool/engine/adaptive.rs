//! The adaptive spin budget (`leanrt.intra_op.adaptive_spin`): for callers
//! that give no hints about where their requests start and end. It is on
//! by default for ONNX Runtime's default budget (the legacy 2^20 pauses,
//! `spin_duration_us` -1), off for a budget in microseconds; the key sets
//! it either way (`PoolOptions::adaptive_spin`).
//!
//! The trade: a worker that spins through a gap burns the gap's length in
//! CPU; one that sleeps costs the next loop a wake-up (a futex wake, an
//! inter-processor interrupt, a context switch: 20–100 µs measured on the
//! 2-core VMs, where the idle CPU halts at once). Spinning for about what a
//! wake-up costs and then sleeping never loses more than twice what the
//! better of the two choices would have (the ski-rental bound), whatever
//! the gap; spinning longer only pays where gaps of that length recur.
//!
//! Rule: the callers of parallel loops record when each loop ends and, at
//! the start of the next one, the gap since. A gap shorter than
//! [`SHORT_GAP_NS`] (and than the configured budget) is a gap *inside* a
//! burst of loops (a request: the caller's serial operators between two
//! parallel ones); a longer one is a gap *between* bursts and is not
//! recorded. The pool keeps a moving average of the short gaps (each new
//! one counts 1/4), and an idle worker spins for twice that average, at
//! least [`SPIN_FLOOR_NS`] (the wake-up's cost) and never more than the
//! configured budget; then it sleeps. So inside a request workers spin
//! through the gaps and catch the next loop; after the request's last loop
//! they spin about one wake-up's worth and sleep, instead of burning the
//! whole budget between requests. While a request is open (an
//! `enable_spinning` not yet matched, `SpinControl::requests`) the caller
//! said where its request ends, and the configured budget applies.
//!
//! The last loop of a request: after it, the ski-rental spin is burnt for
//! nothing (the next request is a gap between requests away), and a
//! caller without hints says nowhere where its request ends. But the
//! requests of one model have the same number of parallel loops, each
//! time: each caller's loops are counted per request (a burst: loops
//! separated by short gaps), and once [`SAME_BURSTS`] requests in a row
//! had as many loops as the one before, the loop that brings the count
//! to that number is expected to be the request's last. While it runs,
//! and until the caller's next loop, a worker that runs out of work does
//! not spin: it goes to sleep at once (with a timer, if the caller's
//! cadence is steady). Only while no other caller is inside a request
//! (a loop running or ended less than a short gap ago, not its expected
//! last): their next loop would pay for the sleep. A request with one
//! loop more than expected pays a wake-up for its extra loop, once; the
//! count starts over.
//!
//! Anticipation: a caller whose requests recur with a steady gap between
//! them (a stream of frames, a polling loop) would otherwise pay the
//! wake-up at the start of every request. The gaps between requests
//! (those not inside one) are averaged too, each measured from the start
//! of the request's last loop (known to a worker that goes to sleep before
//! that loop has ended, which its end is not); once [`STEADY_GAPS`] of
//! them in a row each fell within an eighth of the average, the next
//! request is expected at the last loop's start plus that average.
//!
//! Each caller thread is followed apart (its own last loop's end, gaps
//! and cadence, in one of [`CALLER_SLOTS`] slots: the one a number the
//! thread draws once points to, else a free one, else the one whose last
//! loop ended longest ago), so that several request threads sharing one
//! pool (one ONNX Runtime session called from several threads) are each
//! anticipated as a pool of their own would anticipate them: a gap is
//! measured from the same caller's last loop, not from whichever caller
//! ended a loop last, and a sleeping worker sets its timer for the
//! earliest request any steady caller is expected to make. With more
//! callers than slots, threads take slots from each other, which resets
//! their cadence: they get no timers, as any irregular caller. A worker that
//! goes to sleep then sets itself a timer for a little before it (the
//! timers' own lateness plus [`WAKE_GUARD_NS`]; the lateness is measured
//! on each timer that fires and on each request whose notify beat its
//! timer after the timer's time, since Linux fires a timer up to its
//! thread's timer slack late, 50 µs by default, plus the wake-up), and once up
//! spins until the request comes or a little after it was due
//! ([`Anticipation::until`]), then sleeps untimed; one timer per expected
//! request. A gap off the cadence resets the count, so irregular callers
//! get no timers. The cost
//! is one wake-up and the spin from the timer to the request, per
//! request; the gain, that the request's first loop finds its helpers
//! awake.
//!
//! State: per caller slot `owner` (the thread's number; 0 = free),
//! `last_start` and `last_end` (nanoseconds since the pool was made; 0 =
//! no loop yet), `long_gap`, `steady`, the burst counts (`loops`, `burst`,
//! `same`) and `in_last`; per pool `short_gap` (the average; it starts
//! where the spin is the floor) and `timer_late`. All are plain relaxed
//! atomics: concurrent callers may lose an update (or two threads on one
//! slot see each other's), which only makes an estimate a little less
//! exact (a timer a little early or late, or none); none of them decides
//! whether work is found, which the sleep protocol (`sleep.rs`) alone
//! does.
use super::super::spin::{calibrated_pause_ns, SpinPolicy};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

/// The shortest adaptive spin: about one sleep and wake-up's cost.
pub(super) const SPIN_FLOOR_NS: u64 = 50_000;
/// Gaps from this length on are between requests, not inside one: five
/// wake-ups' worth, past which spinning through a gap costs more CPU than
/// the latency it saves is worth.
pub(super) const SHORT_GAP_NS: u64 = 5 * SPIN_FLOOR_NS;
/// Gaps between requests, each within an eighth of their average, before
/// the next request is anticipated.
pub(super) const STEADY_GAPS: u64 = 3;
/// Requests in a row with as many loops as the one before, before a
/// request's last loop is expected (module docs).
pub(super) const SAME_BURSTS: u32 = 3;
/// How much earlier than the timers' measured lateness a worker sets its
/// timer.
pub(super) const WAKE_GUARD_NS: u64 = SPIN_FLOOR_NS / 2;
/// How late a timer is taken to fire before any was measured.
const INITIAL_TIMER_LATE_NS: u64 = 2 * SPIN_FLOOR_NS;
/// Gaps between requests longer than this are not anticipated.
const LONGEST_ANTICIPATED_NS: u64 = 1_000_000_000;
/// Caller threads a pool follows apart (module docs).
pub(super) const CALLER_SLOTS: usize = 8;

/// The number the calling thread is known by as the caller of loops, in
/// every pool (drawn on its first loop; never 0): `Adaptive::caller`
/// follows each caller by it, `Shared::note_caller_cpu` tells callers
/// apart by it.
pub(super) fn caller_number() -> u64 {
    use std::cell::Cell;
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static NUMBER: Cell<u64> = const { Cell::new(0) };
    }
    NUMBER.with(|n| {
        if n.get() == 0 {
            n.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        n.get()
    })
}

/// One caller's loops, as its pool sees them (module docs).
#[derive(Default)]
#[repr(align(64))]
struct Caller {
    /// The thread's number (`caller_number`); 0: no caller yet.
    owner: AtomicU64,
    last_start: AtomicU64,
    last_end: AtomicU64,
    /// The average gap between its requests, from a request's last loop's
    /// start to the next one's first (0: none yet).
    long_gap: AtomicU64,
    /// Its gaps between requests in a row within an eighth of the average.
    steady: AtomicU64,
    /// The CPU it started its last loop on.
    cpu: AtomicU32,
    /// Loops in its current request so far.
    loops: AtomicU32,
    /// Loops in its last request that ended.
    burst: AtomicU32,
    /// Requests in a row with as many loops as the one before.
    same: AtomicU32,
    /// Its last loop started is its request's expected last.
    in_last: AtomicBool,
}

impl Caller {
    /// The next request this caller is expected to make (its due time,
    /// average gap and CPU), if it is on a steady cadence.
    fn expected(&self) -> Option<(u64, u64, u32)> {
        let gap = self.long_gap.load(Ordering::Relaxed);
        let last = self.last_start.load(Ordering::Relaxed);
        (self.steady.load(Ordering::Relaxed) >= STEADY_GAPS
            && last != 0
            && gap <= LONGEST_ANTICIPATED_NS)
            .then(|| (last + gap, gap, self.cpu.load(Ordering::Relaxed)))
    }
}

/// A request a sleeping worker expects (nanoseconds on the pool's clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Anticipation {
    /// When the request is due: the last loop's start plus the average
    /// gap.
    pub(super) due: u64,
    /// When the worker's timer is set for.
    pub(super) wake_at: u64,
    /// Until when the woken worker spins waiting for it.
    pub(super) until: u64,
    /// The CPU its caller started its last loop on (`u32::MAX`: unknown).
    pub(super) cpu: u32,
}

pub(super) struct Adaptive {
    epoch: Instant,
    /// The configured budget in nanoseconds.
    budget_ns: u64,
    callers: [Caller; CALLER_SLOTS],
    short_gap: AtomicU64,
    /// How late the anticipation timers fired, on average.
    timer_late: AtomicU64,
}

impl Adaptive {
    /// None when spinning is off in `policy` (nothing to adapt).
    pub(super) fn new(policy: &SpinPolicy) -> Option<Adaptive> {
        if policy.pauses == 0 {
            return None;
        }
        let budget_ns = policy
            .deadline_ns
            .unwrap_or_else(|| (policy.pauses as f64 * calibrated_pause_ns()) as u64)
            .max(1);
        Some(Adaptive {
            epoch: Instant::now(),
            budget_ns,
            callers: Default::default(),
            // Until gaps are seen: the floor.
            short_gap: AtomicU64::new(SPIN_FLOOR_NS / 2),
            // Until measured: Linux's default timer slack (50 µs) plus a
            // wake-up.
            timer_late: AtomicU64::new(INITIAL_TIMER_LATE_NS),
        })
    }

    /// Nanoseconds on the pool's clock.
    pub(super) fn now(&self) -> u64 {
        (self.epoch.elapsed().as_nanos() as u64).max(1)
    }

    /// The instant `ns` on the pool's clock.
    pub(super) fn instant(&self, ns: u64) -> Instant {
        self.epoch + std::time::Duration::from_nanos(ns)
    }

    /// The calling thread's slot: its own (first where its number points,
    /// then anywhere), else a free one, else the one whose last loop ended
    /// longest ago (a thread that left, most likely), taken over with its
    /// cadence forgotten.
    fn caller(&self, me: u64) -> &Caller {
        let home = &self.callers[me as usize % CALLER_SLOTS];
        if home.owner.load(Ordering::Relaxed) == me {
            return home;
        }
        let slots = &self.callers;
        if let Some(c) = slots.iter().find(|c| c.owner.load(Ordering::Relaxed) == me) {
            return c;
        }
        let taken = slots
            .iter()
            .find(|c| {
                c.owner
                    .compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            })
            .unwrap_or_else(|| {
                let c = slots
                    .iter()
                    .min_by_key(|c| c.last_end.load(Ordering::Relaxed))
                    .unwrap_or(home);
                c.owner.store(me, Ordering::Relaxed);
                c
            });
        for t in [
            &taken.last_start,
            &taken.last_end,
            &taken.long_gap,
            &taken.steady,
        ] {
            t.store(0, Ordering::Relaxed);
        }
        for n in [&taken.loops, &taken.burst, &taken.same] {
            n.store(0, Ordering::Relaxed);
        }
        taken.in_last.store(false, Ordering::Relaxed);
        taken
    }

    /// Gaps shorter than this are inside a request.
    fn short_gap_limit(&self) -> u64 {
        self.budget_ns.min(SHORT_GAP_NS)
    }

    /// The caller numbered `me` (`caller_number`) starts a parallel loop,
    /// on `cpu`.
    pub(super) fn loop_started(&self, me: u64, cpu: u32) {
        let c = self.caller(me);
        c.cpu.store(cpu, Ordering::Relaxed);
        let now = self.now();
        let start = c.last_start.swap(now, Ordering::Relaxed);
        let last = c.last_end.load(Ordering::Relaxed);
        let since_end = now.saturating_sub(last);
        let loops = if last == 0 {
            1
        } else if since_end < self.short_gap_limit() {
            let avg = self.short_gap.load(Ordering::Relaxed);
            self.short_gap
                .store((avg * 3 + since_end) / 4, Ordering::Relaxed);
            c.loops.load(Ordering::Relaxed).saturating_add(1)
        } else {
            // A gap between requests: the one that ended is counted, and
            // the gap is on the cadence or starts a new one.
            let ended = c.loops.load(Ordering::Relaxed);
            if c.burst.swap(ended, Ordering::Relaxed) == ended {
                c.same.fetch_add(1, Ordering::Relaxed);
            } else {
                c.same.store(0, Ordering::Relaxed);
            }
            let gap = now.saturating_sub(start);
            let avg = c.long_gap.load(Ordering::Relaxed);
            if avg > 0 && gap.abs_diff(avg) <= avg / 8 {
                c.long_gap.store((avg * 3 + gap) / 4, Ordering::Relaxed);
                c.steady.fetch_add(1, Ordering::Relaxed);
            } else {
                c.long_gap.store(gap, Ordering::Relaxed);
                c.steady.store(0, Ordering::Relaxed);
            }
            1
        };
        c.loops.store(loops, Ordering::Relaxed);
        let last_loop = c.same.load(Ordering::Relaxed) >= SAME_BURSTS
            && loops == c.burst.load(Ordering::Relaxed);
        c.in_last.store(last_loop, Ordering::Relaxed);
    }

    /// Whether a request's expected last loop is running or has run, and
    /// no other caller is inside a request (module docs): then a worker
    /// that runs out of work sleeps at once.
    fn between_requests(&self, now: u64) -> bool {
        let mut any_last = false;
        for c in &self.callers {
            if c.owner.load(Ordering::Relaxed) == 0 {
                continue;
            }
            if c.in_last.load(Ordering::Relaxed) {
                any_last = true;
                continue;
            }
            let end = c.last_end.load(Ordering::Relaxed);
            if c.last_start.load(Ordering::Relaxed) > end
                || now.saturating_sub(end) < self.short_gap_limit()
            {
                return false;
            }
        }
        any_last
    }

    /// The request a worker going to sleep at `now` may set a timer for:
    /// the earliest one a steady caller is expected to make whose timer is
    /// not already due; None if there is none.
    pub(super) fn anticipate(&self, now: u64) -> Option<Anticipation> {
        let lead = self.timer_late.load(Ordering::Relaxed) + WAKE_GUARD_NS;
        self.callers
            .iter()
            .filter_map(Caller::expected)
            .map(|(due, gap, cpu)| Anticipation {
                due,
                wake_at: due.saturating_sub(lead),
                // Late by up to a thirty-second of the gap (and a wake-up's
                // worth at least) is still the request expected.
                until: due + (gap / 32).max(SPIN_FLOOR_NS),
                cpu,
            })
            .filter(|t| t.wake_at > now)
            .min_by_key(|t| t.due)
    }

    /// A worker's timer for `a` fired at `now`, or a notify woke the worker
    /// at `now` past the timer's time (the timer was later still): how late
    /// it was, at least. Learnt from both, or a timer later than its lead
    /// would never fire and never move its lead.
    pub(super) fn timer_late_by(&self, a: &Anticipation, now: u64) {
        let late = now.saturating_sub(a.wake_at).min(SHORT_GAP_NS);
        let avg = self.timer_late.load(Ordering::Relaxed);
        self.timer_late
            .store((avg * 3 + late) / 4, Ordering::Relaxed);
    }

    /// The parallel loop of the caller numbered `me` ended.
    pub(super) fn loop_ended(&self, me: u64) {
        self.caller(me)
            .last_end
            .store(self.now(), Ordering::Relaxed);
    }

    /// The spin budget now, (pauses, wall-clock deadline in nanoseconds):
    /// `policy`'s own while a request is open, else the adaptive one (none
    /// between requests).
    pub(super) fn budget(&self, policy: &SpinPolicy, request_open: bool) -> (u64, Option<u64>) {
        if request_open {
            return (policy.pauses, policy.deadline_ns);
        }
        if self.between_requests(self.now()) {
            return (0, Some(0));
        }
        let ns = (2 * self.short_gap.load(Ordering::Relaxed))
            .max(SPIN_FLOOR_NS)
            .min(self.budget_ns);
        let pauses =
            ((ns as f64 / calibrated_pause_ns()).ceil() as u64).clamp(1, policy.pauses.max(1));
        (pauses, Some(ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records a loop that started `gap_ns` after the last one ended.
    fn gap(a: &Adaptive, gap_ns: u64) {
        gap_on(a, gap_ns, 0);
    }

    /// `gap`, the loop started on `cpu`.
    fn gap_on(a: &Adaptive, gap_ns: u64, cpu: u32) {
        let now = a.now();
        if now <= gap_ns {
            std::thread::sleep(std::time::Duration::from_nanos(gap_ns + 1_000 - now));
        }
        let c = a.caller(caller_number());
        let then = a.now() - gap_ns;
        c.last_end.store(then, Ordering::Relaxed);
        c.last_start.store(then, Ordering::Relaxed);
        a.loop_started(caller_number(), cpu);
    }

    #[test]
    fn the_spin_follows_short_gaps_from_the_floor_up_to_the_budget() {
        let policy = SpinPolicy::new(true, 1000, 1);
        let a = Adaptive::new(&policy).unwrap();
        assert_eq!(
            a.budget(&policy, false).1,
            Some(SPIN_FLOOR_NS),
            "starts at the floor"
        );
        // Loops 10 µs apart: the floor.
        for _ in 0..40 {
            gap(&a, 10_000);
        }
        assert_eq!(a.budget(&policy, false).1, Some(SPIN_FLOOR_NS));
        // Loops 200 µs apart (still inside a request): about twice that.
        for _ in 0..40 {
            gap(&a, 200_000);
        }
        let ns = a.budget(&policy, false).1.unwrap();
        assert!((380_000..=440_000).contains(&ns), "twice the gap: {ns}");
        // Gaps between requests leave the estimate alone, however long.
        let before = a.short_gap.load(Ordering::Relaxed);
        for g in [SHORT_GAP_NS, 1_000_000, 50_000_000] {
            gap(&a, g);
            assert_eq!(a.short_gap.load(Ordering::Relaxed), before, "{g} ns");
        }
        // A request open: the configured budget.
        assert_eq!(a.budget(&policy, true), (policy.pauses, Some(1_000_000)));
        assert!(Adaptive::new(&SpinPolicy::new(true, 0, 1)).is_none());
    }

    /// A loop `gap_ns` after the last one, and its end.
    fn burst(a: &Adaptive, gap_ns: u64) {
        gap(a, gap_ns);
        a.loop_ended(caller_number());
    }

    #[test]
    fn a_steady_cadence_is_anticipated_and_a_change_forgets_it() {
        let policy = SpinPolicy::new(true, -1, 1);
        let a = Adaptive::new(&policy).unwrap();
        let period = 10_000_000;
        // The first gap between requests sets the average; STEADY_GAPS
        // more on the cadence are needed.
        for _ in 0..STEADY_GAPS {
            burst(&a, period);
            assert_eq!(a.anticipate(a.now()), None);
        }
        // Within an eighth of the average.
        burst(&a, period + period / 10);
        let last = a.caller(caller_number()).last_start.load(Ordering::Relaxed);
        let t = a.anticipate(a.now()).expect("a steady cadence");
        let avg = a.caller(caller_number()).long_gap.load(Ordering::Relaxed);
        assert_eq!(t.due, last + avg);
        assert_eq!(t.wake_at, t.due - INITIAL_TIMER_LATE_NS - WAKE_GUARD_NS);
        assert_eq!(t.until, t.due + avg / 32);
        // Gaps inside a request leave the cadence alone.
        gap(&a, 10_000);
        assert_eq!(
            a.caller(caller_number()).long_gap.load(Ordering::Relaxed),
            avg
        );
        // Nothing when the timer would already be due.
        let now = a.anticipate(a.now()).expect("still steady");
        assert_eq!(a.anticipate(now.wake_at), None);
        // The timers' lateness moves the next timer earlier.
        a.timer_late_by(&t, t.wake_at + 200_000);
        assert_eq!(a.timer_late.load(Ordering::Relaxed), 125_000);
        let earlier = a.anticipate(a.now()).unwrap();
        assert_eq!(earlier.due - earlier.wake_at, 125_000 + WAKE_GUARD_NS);
        // A gap off the cadence: forgotten until it is steady again.
        burst(&a, period / 2);
        assert_eq!(a.anticipate(a.now()), None);
        let reset = a.caller(caller_number()).long_gap.load(Ordering::Relaxed);
        assert!(
            (period / 2..period / 2 + 1_000_000).contains(&reset),
            "{reset}"
        );
    }

    /// A request of `loops` loops 10 µs apart, `gap_ns` after the last.
    fn request(a: &Adaptive, gap_ns: u64, loops: u32) {
        burst(a, gap_ns);
        for _ in 1..loops {
            burst(a, 10_000);
        }
    }

    #[test]
    fn a_requests_expected_last_loop_is_followed_by_no_spin() {
        let policy = SpinPolicy::new(true, -1, 1);
        let a = Adaptive::new(&policy).unwrap();
        let me = caller_number();
        let spins = |a: &Adaptive| a.budget(&policy, false).0 > 0;
        // Requests of 4 loops, off any cadence: the first sets the count,
        // SAME_BURSTS more with as many are needed.
        for k in 0..=SAME_BURSTS {
            request(&a, 1_000_000 * (1 + u64::from(k % 2) * 7), 4);
            assert!(spins(&a), "request {k}");
        }
        // The next one's first three loops are followed by the spin; its
        // fourth, running or ended, by none, until the next request.
        request(&a, 3_000_000, 3);
        assert!(spins(&a));
        a.loop_started(me, 0);
        assert!(!spins(&a), "the expected last loop running");
        a.loop_ended(me);
        assert!(!spins(&a), "and after it");
        assert_eq!(a.budget(&policy, true).0, policy.pauses, "a request open");
        // Another caller inside a request: its next loop would pay.
        std::thread::scope(|s| {
            s.spawn(|| {
                a.loop_started(caller_number(), 1);
                assert!(spins(&a), "another caller's loop running");
                a.loop_ended(caller_number());
                assert!(spins(&a), "another caller's loop just ended");
            });
        });
        // A request with one loop more: its fifth loop is not expected and
        // the count starts over.
        request(&a, 2_000_000, 1);
        assert!(spins(&a), "a new request's first loop");
        // (The other caller's loop ended long ago.)
        let other = a
            .callers
            .iter()
            .find(|c| ![0, me].contains(&c.owner.load(Ordering::Relaxed)));
        for t in [&other.unwrap().last_start, &other.unwrap().last_end] {
            t.store(1, Ordering::Relaxed);
        }
        for _ in 1..5 {
            burst(&a, 10_000);
        }
        assert!(spins(&a), "one loop more than expected");
        for _ in 0..SAME_BURSTS {
            request(&a, 5_000_000, 5);
        }
        assert!(spins(&a), "5 loops: a new count");
        request(&a, 5_000_000, 5);
        assert!(!spins(&a), "5 loops expected");
    }

    #[test]
    fn never_more_than_the_configured_budget() {
        let policy = SpinPolicy::new(true, 30, 1);
        let a = Adaptive::new(&policy).unwrap();
        assert_eq!(a.budget(&policy, false).1, Some(30_000), "the floor capped");
        // A gap past a small budget is not a short one.
        let before = a.short_gap.load(Ordering::Relaxed);
        gap(&a, 40_000);
        assert_eq!(a.short_gap.load(Ordering::Relaxed), before);
        let (pauses, _) = a.budget(&policy, false);
        assert!(pauses <= policy.pauses, "{pauses} > {}", policy.pauses);
        // The legacy budget (pauses, no deadline) is an upper bound too.
        let legacy = SpinPolicy::new(true, -1, 1);
        let l = Adaptive::new(&legacy).unwrap();
        let (pauses, ns) = l.budget(&legacy, false);
        assert_eq!(ns, Some(SPIN_FLOOR_NS));
        assert!((1..legacy.pauses).contains(&pauses));
        assert_eq!(l.budget(&legacy, true), (legacy.pauses, None));
    }

    #[test]
    fn callers_sharing_a_pool_are_followed_apart() {
        let policy = SpinPolicy::new(true, -1, 1);
        let a = Adaptive::new(&policy).unwrap();
        // Two request threads on one pool, each on its own steady cadence
        // and CPU, their requests interleaved: each thread's gaps are
        // measured from its own last loop.
        let (fast, slow) = (4_000_000u64, 9_000_000u64);
        std::thread::scope(|s| {
            for (period, cpu) in [(fast, 3), (slow, 5)] {
                let a = &a;
                s.spawn(move || {
                    // Steady after STEADY_GAPS + 1 gaps; a few more allowed
                    // for a thread preempted between `gap_on`'s clock read
                    // and the loop's (a gap then looks longer by the time
                    // it was off the CPU, as on a loaded machine or under
                    // an emulator, and the count starts over).
                    let c = a.caller(caller_number());
                    for _ in 0..=4 * STEADY_GAPS {
                        gap_on(a, period, cpu);
                        a.loop_ended(caller_number());
                        if c.steady.load(Ordering::Relaxed) >= STEADY_GAPS {
                            break;
                        }
                    }
                    let avg = c.long_gap.load(Ordering::Relaxed);
                    assert!((period..period + 1_000_000).contains(&avg), "{avg}");
                    assert!(c.steady.load(Ordering::Relaxed) >= STEADY_GAPS);
                });
            }
        });
        // The timer is for the earliest request due.
        let steady: Vec<(u64, u64, u32)> = a.callers.iter().filter_map(Caller::expected).collect();
        assert_eq!(steady.len(), 2, "{steady:?}");
        // (As a worker going to sleep before either is due would see it.)
        let t = a.anticipate(1).expect("two steady callers");
        let &(first, _, cpu) = steady.iter().min_by_key(|&&(due, _, _)| due).unwrap();
        assert_eq!(
            (t.due, t.cpu),
            (first, cpu),
            "the earliest, with its caller's CPU"
        );
        // Once its timer is due, the other caller's request is next.
        let then = a.anticipate(t.wake_at).expect("the other caller");
        assert!(then.due > t.due, "{then:?} after {t:?}");
        // The two threads took two slots; this one takes a free one.
        let mine = a.caller(caller_number()) as *const Caller;
        let owned = |a: &Adaptive| {
            a.callers
                .iter()
                .filter(|c| c.owner.load(Ordering::Relaxed) != 0)
                .count()
        };
        assert_eq!(owned(&a), 3);
        assert_eq!(a.caller(caller_number()) as *const Caller, mine, "kept");
        // Every slot another thread's: this one takes over the one whose
        // last loop ended longest ago, and starts from nothing there.
        for (k, c) in a.callers.iter().enumerate() {
            c.owner.store(u64::MAX - k as u64, Ordering::Relaxed);
            c.last_end
                .store(1_000 + (k as u64 + 5) % 8, Ordering::Relaxed);
            c.steady.store(STEADY_GAPS, Ordering::Relaxed);
        }
        let oldest = &a.callers[3];
        let c = a.caller(caller_number());
        assert!(std::ptr::eq(c, oldest));
        assert_eq!(c.owner.load(Ordering::Relaxed), caller_number());
        assert_eq!(c.steady.load(Ordering::Relaxed), 0);
        assert_eq!(c.last_end.load(Ordering::Relaxed), 0);
        assert_eq!(owned(&a), CALLER_SLOTS);
    }
}
