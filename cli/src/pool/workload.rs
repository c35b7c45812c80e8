//! The work every runtime runs: the kernel, its calibration on this machine,
//! one request, and a precise sleep.
use super::peers::Peer;
use super::spec::Sizes;
use std::cell::Cell;
use std::hint::black_box;
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
    // One long call is latency-bound (its rounds form one dependency chain),
    // unlike a batch of short independent calls: time it directly.
    let fj_iters = if fj_item_us > 0.0 {
        let probe = 20_000u32;
        let mut v = Vec::new();
        for r in 0..5 {
            let t = Instant::now();
            black_box(work(black_box(r), probe));
            v.push(t.elapsed().as_nanos() as f64 / f64::from(probe));
        }
        let ns_per_round = crate::stats::median(&v).max(0.01);
        ((fj_item_us * 1e3) / ns_per_round).round().max(1.0) as u32
    } else {
        0
    };
    Sizes {
        items,
        iters,
        fj_iters,
        // ~3 cycles per ns: the cost model wants cycles.
        cost_cycles: ns * 3.0,
        ..base
    }
}

pub fn request(p: &dyn Peer, s: &Sizes) {
    let iters = s.iters;
    p.parallel_for(s.items as usize, s.cost_cycles, &|i| {
        black_box(work(i as u64, iters));
    });
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
}
