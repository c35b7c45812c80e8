//! The work every runtime runs: the kernel, its calibration on this machine,
//! one request, and a precise sleep.
use super::peers::Peer;
use super::spec::{Gap, RunShape, Sizes, WorkKind};
use std::cell::{Cell, RefCell};
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

/// SGEMM work (`WorkKind::Sgemm`): every thread has its own A (`GEMM_M` ×
/// `GEMM_DEPTH`), B (`GEMM_DEPTH` × `GEMM_N`) and C (`GEMM_M` × `GEMM_N`),
/// f32, row-major: 80 kB, more than a core's L1 data cache and well inside
/// its L2, so that a thread that moves to another core, or shares one,
/// pays for it. Index `i` computes C's tile `i mod GEMM_TILES` (`GEMM_TILE`
/// × `GEMM_TILE`, the whole depth) on the calling thread's buffers.
pub const GEMM_TILE: usize = 16;
pub const GEMM_M: usize = 64;
pub const GEMM_N: usize = 64;
pub const GEMM_DEPTH: usize = 128;
/// Tiles of C.
pub const GEMM_TILES: usize = (GEMM_M / GEMM_TILE) * (GEMM_N / GEMM_TILE);

/// One thread's SGEMM operands.
struct Gemm {
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

impl Gemm {
    fn new() -> Gemm {
        let fill = |n: usize, seed: u32| -> Vec<f32> {
            (0..n)
                .map(|i| {
                    ((i as u32).wrapping_mul(2_654_435_761) ^ seed) as f32 / u32::MAX as f32 - 0.5
                })
                .collect()
        };
        Gemm {
            a: fill(GEMM_M * GEMM_DEPTH, 1),
            b: fill(GEMM_DEPTH * GEMM_N, 2),
            c: vec![0.0; GEMM_M * GEMM_N],
        }
    }

    /// C's tile `t` = A's row block × B's column block; returns one of its
    /// values (for `black_box`).
    fn tile(&mut self, t: usize) -> f32 {
        let per_row = GEMM_N / GEMM_TILE;
        let (r0, c0) = ((t / per_row) * GEMM_TILE, (t % per_row) * GEMM_TILE);
        for r in r0..r0 + GEMM_TILE {
            let mut acc = [0.0f32; GEMM_TILE];
            let a_row = &self.a[r * GEMM_DEPTH..(r + 1) * GEMM_DEPTH];
            for (k, &a) in a_row.iter().enumerate() {
                let b_row = &self.b[k * GEMM_N + c0..k * GEMM_N + c0 + GEMM_TILE];
                for (x, &b) in acc.iter_mut().zip(b_row) {
                    *x += a * b;
                }
            }
            self.c[r * GEMM_N + c0..r * GEMM_N + c0 + GEMM_TILE].copy_from_slice(&acc);
        }
        self.c[r0 * GEMM_N + c0]
    }
}

thread_local! {
    /// This thread's SGEMM operands (made on its first tile).
    static GEMM: RefCell<Gemm> = RefCell::new(Gemm::new());
}

/// SGEMM tile `i mod GEMM_TILES` on the calling thread's buffers.
#[inline(never)]
pub fn sgemm_tile(i: u64) -> f32 {
    GEMM.with_borrow_mut(|g| g.tile(i as usize % GEMM_TILES))
}

/// One index of the request-shaped work (inference runs and the requests
/// of bursty, idle_after_burst and throughput): `iters` rounds of the
/// spin kernel, or one SGEMM tile. Every peer calls this, so every pool
/// runs the same kernel code.
#[inline]
pub fn index(kind: WorkKind, i: u64, iters: u32) {
    match kind {
        WorkKind::Spin => {
            black_box(work(i, iters));
        }
        WorkKind::Sgemm => {
            black_box(sgemm_tile(i));
        }
    }
}

/// Nanoseconds of one index of `kind` (`iters` rounds of the spin kernel)
/// on this thread (median of a few timed batches).
pub fn calibrate_ns_per_item(kind: WorkKind, iters: u32) -> f64 {
    let batch = match kind {
        WorkKind::Spin => 2000u64,
        WorkKind::Sgemm => 200,
    };
    let mut v = Vec::new();
    for r in 0..7 {
        let t = Instant::now();
        for i in 0..batch {
            index(kind, black_box(i + r), iters);
        }
        v.push(t.elapsed().as_nanos() as f64 / batch as f64);
    }
    crate::stats::median(&v)
}

/// Sizes for a request of about `work_us` of serial work, and fork-join
/// indices of about `fj_item_us`.
pub fn sizes_for(work_us: f64, fj_item_us: f64, base: Sizes) -> Sizes {
    let iters = 32;
    let ns = calibrate_ns_per_item(base.work, iters).max(0.5);
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
    let (kind, iters) = (s.work, s.iters);
    p.parallel_for(s.items as usize, s.cost_cycles, &|i| {
        index(kind, i as u64, iters);
    });
}

/// One request, as `request`, telling whether a thread other than the
/// caller ran some of its indices.
pub fn request_joined(p: &dyn Peer, s: &Sizes) -> bool {
    let (kind, iters) = (s.work, s.iters);
    let joined = AtomicBool::new(false);
    p.parallel_for(s.items as usize, s.cost_cycles, &|i| {
        index(kind, i as u64, iters);
        if !IS_CALLER.with(|c| c.get()) {
            joined.store(true, Ordering::Relaxed);
        }
    });
    joined.into_inner()
}

/// `items` indices of `kind` on the calling thread.
pub fn serial(kind: WorkKind, items: u64, iters: u32) {
    for i in 0..items {
        index(kind, black_box(i), iters);
    }
}

/// One inference run of the request scenario: begin (hints) → serial
/// preamble → `rounds` parallel loops with serial work between them → end
/// (or the runtime's own whole run: `Peer::inference_run`).
pub fn inference_run(p: &dyn Peer, s: &Sizes) {
    if p.inference_run(s) {
        return;
    }
    let (r, kind, iters) = (&s.run, s.work, s.iters);
    p.begin_run();
    serial(kind, r.preamble_items, iters);
    for k in 0..r.rounds {
        if k > 0 {
            serial(kind, r.between_items, iters);
        }
        p.parallel_for(r.round_items as usize, s.cost_cycles, &|i| {
            index(kind, i as u64, iters);
        });
    }
    p.end_run();
}

/// The same run entirely on the caller, without a runtime. Each round's
/// index is called through a loop body (`&dyn Fn(usize)`) as a pool calls
/// it, so the baseline differs from a pool's inline loop by the
/// scheduling alone, not by the compiler fusing the kernel into its loop.
pub fn inference_run_serial(s: &Sizes) {
    let (r, kind, iters) = (&s.run, s.work, s.iters);
    let body: &(dyn Fn(usize) + Sync) = &|i| index(kind, i as u64, iters);
    serial(kind, r.preamble_items, iters);
    for k in 0..r.rounds {
        if k > 0 {
            serial(kind, r.between_items, iters);
        }
        let body = black_box(body);
        for i in 0..r.round_items as usize {
            body(i);
        }
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
    fn sgemm_tiles_compute_the_product() {
        let mut g = Gemm::new();
        for t in [0, 5, GEMM_TILES - 1] {
            g.tile(t);
            let per_row = GEMM_N / GEMM_TILE;
            let (r, c) = ((t / per_row) * GEMM_TILE + 3, (t % per_row) * GEMM_TILE + 7);
            let want: f32 = (0..GEMM_DEPTH)
                .map(|k| g.a[r * GEMM_DEPTH + k] * g.b[k * GEMM_N + c])
                .sum();
            assert!((g.c[r * GEMM_N + c] - want).abs() < 1e-4, "tile {t}");
        }
        // Index i is tile i mod GEMM_TILES, on this thread's buffers.
        assert_eq!(sgemm_tile(1), sgemm_tile(1 + GEMM_TILES as u64));
        assert!(calibrate_ns_per_item(WorkKind::Sgemm, 32) > 0.0);
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
