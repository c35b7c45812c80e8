//! The work every runtime runs: the kernel, its calibration on this machine,
//! one request, and a precise sleep.
use super::peers::Peer;
use super::spec::{Gap, RunShape, Sizes};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

thread_local! {
    /// Set on the thread that runs the scenarios (the loops' caller).
    pub static IS_CALLER: Cell<bool> = const { Cell::new(false) };
}

/// The work kernel every peer runs per index: `iters` rounds of a
/// multiply-xorshift mix (no memory traffic, not optimizable away).
#[inline(never)]
pub fn work(seed: u64, iters: u32) -> u64 {
    let mut x = seed | 1;
    for _ in 0..iters {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
    }
    x
}

/// Nanoseconds of one `work(_, iters)` call on this thread (median of a
/// few timed batches).
pub fn calibrate_ns_per_item(iters: u32) -> f64 {
    let batch = 2000u64;
    let mut v = Vec::new();
    for r in 0..7 {
        let t = Instant::now();
        for i in 0..batch {
            black_box(work(black_box(i + r), iters));
        }
        v.push(t.elapsed().as_nanos() as f64 / batch as f64);
    }
    crate::stats::median(&v)
}

/// Sizes for a request of about `work_us` of serial work, and fork-join
/// indices of about `fj_item_us`.
pub fn sizes_for(work_us: f64, fj_item_us: f64, base: Sizes) -> Sizes {
    let iters = 32;
    let ns = calibrate_ns_per_item(iters).max(0.5);
    let items = ((work_us * 1e3) / ns).round().max(1.0) as u64;
    let fj_iters = if fj_item_us > 0.0 {
        rounds_for_us(fj_item_us)
    } else {
        0
    };
    let count = |us: f64| ((us * 1e3) / ns).round() as u64;
    let run = RunShape {
        preamble_items: count(base.run.preamble_us),
        round_items: count(base.run.round_us).max(1),
        between_items: count(base.run.between_us),
        ..base.run.clone()
    };
    Sizes {
        items,
        iters,
        fj_iters,
        // ~3 cycles per ns: the cost model wants cycles.
        cost_cycles: ns * 3.0,
        run,
        section_iters: rounds_for_us(base.section_item_us),
        ..base
    }
}

/// Rounds of the kernel in one call of about `us` µs. One long call is
/// latency-bound (its rounds form one dependency chain), unlike a batch of
/// short independent calls: time it directly.
fn rounds_for_us(us: f64) -> u32 {
    let probe = 20_000u32;
    let mut v = Vec::new();
    for r in 0..5 {
        let t = Instant::now();
        black_box(work(black_box(r), probe));
        v.push(t.elapsed().as_nanos() as f64 / f64::from(probe));
    }
    let ns_per_round = crate::stats::median(&v).max(0.01);
    ((us * 1e3) / ns_per_round).round().max(1.0) as u32
}

/// One request of the bursty, idle_after_burst and throughput scenarios: a
/// parallel loop of `items` indices.
pub fn request(p: &dyn Peer, s: &Sizes) {
    let iters = s.iters;
    p.parallel_for(s.items as usize, s.cost_cycles, &|i| {
        black_box(work(i as u64, iters));
    });
}

/// One request, as `request`, telling whether a thread other than the
/// caller ran some of its indices.
pub fn request_joined(p: &dyn Peer, s: &Sizes) -> bool {
    let iters = s.iters;
    let joined = AtomicBool::new(false);
    p.parallel_for(s.items as usize, s.cost_cycles, &|i| {
        black_box(work(i as u64, iters));
        if !IS_CALLER.with(|c| c.get()) {
            joined.store(true, Ordering::Relaxed);
        }
    });
    joined.into_inner()
}

/// `items` kernel calls on the calling thread.
fn serial(items: u64, iters: u32) {
    for i in 0..items {
        black_box(work(black_box(i), iters));
    }
}

/// One inference run of the request scenario: begin (hints) → serial
/// preamble → `rounds` parallel loops with serial work between them → end.
pub fn inference_run(p: &dyn Peer, s: &Sizes) {
    let (r, iters) = (&s.run, s.iters);
    p.begin_run();
    serial(r.preamble_items, iters);
    for k in 0..r.rounds {
        if k > 0 {
            serial(r.between_items, iters);
        }
        p.parallel_for(r.round_items as usize, s.cost_cycles, &|i| {
            black_box(work(i as u64, iters));
        });
    }
    p.end_run();
}

/// The same run entirely on the caller, without a runtime.
pub fn inference_run_serial(s: &Sizes) {
    let (r, iters) = (&s.run, s.iters);
    serial(r.preamble_items, iters);
    for k in 0..r.rounds {
        if k > 0 {
            serial(r.between_items, iters);
        }
        serial(r.round_items, iters);
    }
}

/// A deterministic sequence of gaps (xorshift; exponential ones by inverse
/// transform, capped at 10× the mean).
pub struct Gaps {
    gap: Gap,
    state: u64,
}

impl Gaps {
    pub fn new(gap: Gap) -> Gaps {
        Gaps {
            gap,
            state: 0x9E37_79B9_7F4A_7C15,
        }
    }

    pub fn next_gap(&mut self) -> Duration {
        let mean = self.gap.mean_ms / 1e3;
        if !self.gap.exponential {
            return Duration::from_secs_f64(mean);
        }
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        // Uniform in (0, 1].
        let u = ((self.state >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        Duration::from_secs_f64((-u.ln() * mean).min(10.0 * mean))
    }
}

/// Sleeps `d`, finishing the last 0.1 ms by yielding (thread::sleep has
/// ~50-100 µs of slack); used where the idle length matters, not the CPU.
pub fn sleep_precise(d: Duration) {
    let end = Instant::now() + d;
    if d > Duration::from_micros(200) {
        std::thread::sleep(d - Duration::from_micros(100));
    }
    while Instant::now() < end {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_is_deterministic_and_depends_on_input() {
        assert_eq!(work(5, 10), work(5, 10));
        assert_ne!(work(5, 10), work(6, 10));
        assert_ne!(work(5, 10), work(5, 11));
    }

    #[test]
    fn exponential_gaps_are_deterministic_with_the_given_mean() {
        let gap = Gap {
            mean_ms: 5.0,
            exponential: true,
        };
        let take = |n| {
            let mut g = Gaps::new(gap);
            (0..n)
                .map(|_| g.next_gap().as_secs_f64())
                .collect::<Vec<_>>()
        };
        assert_eq!(take(10), take(10));
        let v = take(20_000);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean - 0.005).abs() < 0.0005, "mean {mean}");
        assert!(v.iter().all(|&x| x > 0.0 && x <= 0.05));
        let mut fixed = Gaps::new(Gap {
            mean_ms: 1.0,
            exponential: false,
        });
        assert_eq!(fixed.next_gap(), Duration::from_millis(1));
    }
}
