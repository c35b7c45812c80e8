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
//! State: `last_end` (nanoseconds since the pool was made; 0 = no loop
//! yet) and `short_gap` (the average; it starts where the spin is the
//! floor). Both are plain relaxed atomics: concurrent callers may lose an
//! update, which only makes the estimate a little less exact.
use super::super::spin::{calibrated_pause_ns, SpinPolicy};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The shortest adaptive spin: about one sleep and wake-up's cost.
pub(super) const SPIN_FLOOR_NS: u64 = 50_000;
/// Gaps from this length on are between requests, not inside one: five
/// wake-ups' worth, past which spinning through a gap costs more CPU than
/// the latency it saves is worth.
pub(super) const SHORT_GAP_NS: u64 = 5 * SPIN_FLOOR_NS;

pub(super) struct Adaptive {
    epoch: Instant,
    /// The configured budget in nanoseconds.
    budget_ns: u64,
    last_end: AtomicU64,
    short_gap: AtomicU64,
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
            last_end: AtomicU64::new(0),
            // Until gaps are seen: the floor.
            short_gap: AtomicU64::new(SPIN_FLOOR_NS / 2),
        })
    }

    fn now(&self) -> u64 {
        (self.epoch.elapsed().as_nanos() as u64).max(1)
    }

    /// A caller starts a parallel loop.
    pub(super) fn loop_started(&self) {
        let last = self.last_end.load(Ordering::Relaxed);
        if last == 0 {
            return;
        }
        let gap = self.now().saturating_sub(last);
        if gap < self.budget_ns.min(SHORT_GAP_NS) {
            let avg = self.short_gap.load(Ordering::Relaxed);
            self.short_gap.store((avg * 3 + gap) / 4, Ordering::Relaxed);
        }
    }

    /// A caller's parallel loop ended.
    pub(super) fn loop_ended(&self) {
        self.last_end.store(self.now(), Ordering::Relaxed);
    }

    /// The spin budget now, (pauses, wall-clock deadline in nanoseconds):
    /// `policy`'s own while a request is open, else the adaptive one.
    pub(super) fn budget(&self, policy: &SpinPolicy, request_open: bool) -> (u64, Option<u64>) {
        if request_open {
            return (policy.pauses, policy.deadline_ns);
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
        let now = a.now();
        if now <= gap_ns {
            std::thread::sleep(std::time::Duration::from_nanos(gap_ns + 1_000 - now));
        }
        a.last_end.store(a.now() - gap_ns, Ordering::Relaxed);
        a.loop_started();
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
}
