//! The adaptive spin budget (`leanrt.intra_op.adaptive_spin`): for callers
//! that give no hints about where their requests start and end.
//!
//! Rule: the callers of parallel loops record when each loop ends and, at
//! the start of the next one, the gap since. A gap shorter than the
//! configured spin budget is a gap *inside* a burst of loops (a request);
//! a longer one is a gap *between* bursts and is not recorded. The pool
//! keeps a moving average of the short gaps (each new one counts 1/4), and
//! an idle worker spins for twice that average (at least
//! [`MIN_SPIN_NS`]), never more than the configured budget; then it
//! sleeps. So inside a request workers spin through the gaps and catch the
//! next loop; after the request's last loop they spin about two typical
//! gaps and sleep, instead of burning the whole budget.
//!
//! State: `last_end` (nanoseconds since the pool was made; 0 = no loop
//! yet) and `short_gap` (the average). Both are plain relaxed atomics:
//! concurrent callers may lose an update, which only makes the estimate a
//! little less exact.
use super::super::spin::{calibrated_pause_ns, SpinPolicy};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Shortest adaptive spin.
const MIN_SPIN_NS: u64 = 2_000;

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
            // Until gaps are seen: the whole budget.
            short_gap: AtomicU64::new(budget_ns / 2),
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
        if gap < self.budget_ns {
            let avg = self.short_gap.load(Ordering::Relaxed);
            self.short_gap.store((avg * 3 + gap) / 4, Ordering::Relaxed);
        }
    }

    /// A caller's parallel loop ended.
    pub(super) fn loop_ended(&self) {
        self.last_end.store(self.now(), Ordering::Relaxed);
    }

    /// The spin budget now: (pauses, wall-clock nanoseconds).
    pub(super) fn budget(&self, policy: &SpinPolicy) -> (u64, u64) {
        let ns = (2 * self.short_gap.load(Ordering::Relaxed))
            .max(MIN_SPIN_NS)
            .min(self.budget_ns);
        let pauses =
            ((ns as f64 / calibrated_pause_ns()).ceil() as u64).clamp(1, policy.pauses.max(1));
        (pauses, ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_gaps_shrink_the_budget_long_ones_do_not_count() {
        let policy = SpinPolicy::new(true, 1000, 1);
        let a = Adaptive::new(&policy).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(60));
        assert_eq!(a.budget(&policy).1, 1_000_000, "starts at the whole budget");
        // Simulate loops 10 us apart.
        for _ in 0..40 {
            a.last_end
                .store(a.now().saturating_sub(10_000), Ordering::Relaxed);
            a.loop_started();
        }
        let (_, ns) = a.budget(&policy);
        assert!(ns < 100_000, "after short gaps the spin is short: {ns}");
        // A long gap (between requests) leaves the estimate alone.
        let before = a.short_gap.load(Ordering::Relaxed);
        a.last_end
            .store(a.now().saturating_sub(50_000_000).max(1), Ordering::Relaxed);
        a.loop_started();
        assert_eq!(a.short_gap.load(Ordering::Relaxed), before);
        assert!(Adaptive::new(&SpinPolicy::new(true, 0, 1)).is_none());
    }
}
