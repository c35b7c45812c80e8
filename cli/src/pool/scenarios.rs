//! The scenarios of a cell, one function each; every one runs on the
//! calling thread of a child process and fills its part of the result.
use super::peers::Peer;
use super::results::{Bursty, CellResult, IdleAfterBurst, Throughput, Wake};
use super::spec::{Sizes, WAKE_IDLE_MS};
use super::workload::{request, request_joined, sleep_precise, work, IS_CALLER};
use crate::stats::{cpu_pct, median, us, usage, Summary};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Times `regions` regions of one index per thread, each index `iters`
/// rounds of the kernel (after a 10% warm-up); returns the region times in
/// µs and the share of regions in which a thread other than the caller ran
/// an index.
fn fork_join_regions(p: &dyn Peer, regions: u32, iters: u32) -> (Vec<f64>, f64) {
    let warm = (regions / 10).max(1);
    let mut v = Vec::with_capacity(regions as usize);
    let mut helped_regions = 0u32;
    for r in 0..warm + regions {
        let helped = AtomicBool::new(false);
        let t = Instant::now();
        p.tiny_region(&|i| {
            black_box(work(i as u64, iters));
            if !IS_CALLER.with(|c| c.get()) {
                helped.store(true, Ordering::Relaxed);
            }
        });
        if r >= warm {
            v.push(us(t.elapsed()));
            helped_regions += u32::from(helped.load(Ordering::Relaxed));
        }
    }
    (v, 100.0 * f64::from(helped_regions) / f64::from(regions))
}

/// fork_join: tiny regions, then (if sized) regions of small indices.
pub fn fork_join(p: &dyn Peer, s: &Sizes, out: &mut CellResult) {
    let (v, helped) = fork_join_regions(p, s.regions, 1);
    out.fork_join_us = Some(Summary::of(v));
    out.fork_join_helped_pct = Some(helped);
    if s.fj_iters == 0 {
        return;
    }
    let item_us = {
        let mut t = Vec::new();
        for i in 0..21 {
            let t0 = Instant::now();
            black_box(work(i, s.fj_iters));
            t.push(us(t0.elapsed()));
        }
        median(&t)
    };
    let regions = (s.regions / 4).max(1);
    let (v, helped) = fork_join_regions(p, regions, s.fj_iters);
    out.fork_join_small_overhead_us =
        Some(Summary::of(v.into_iter().map(|x| x - item_us).collect()));
    out.fork_join_small_item_us = Some(item_us);
    out.fork_join_small_helped_pct = Some(helped);
}

/// bursty: `requests` requests per gap, a plain sleep between them.
pub fn bursty(p: &dyn Peer, s: &Sizes) -> Vec<Bursty> {
    let mut out = Vec::new();
    for &gap in &s.gaps_ms {
        let gap_d = Duration::from_secs_f64(gap / 1e3);
        let u0 = usage();
        let w0 = Instant::now();
        let mut v = Vec::with_capacity(s.requests as usize);
        let mut joined = 0u32;
        for _ in 0..s.requests {
            let t = Instant::now();
            joined += u32::from(request_joined(p, s));
            v.push(us(t.elapsed()));
            // A plain sleep: the caller must not burn CPU in the gaps
            // (the CPU figure is the pool's), so the gap may overshoot
            // by the timer slack (~0.05-0.1 ms).
            std::thread::sleep(gap_d);
        }
        let wall = w0.elapsed().as_secs_f64();
        let cpu = usage().cpu_s - u0.cpu_s;
        out.push(Bursty {
            gap_ms: gap,
            latency_us: Summary::of(v),
            cpu_pct: cpu_pct(cpu, wall),
            wall_s: wall,
            cpu_s: cpu,
            joined_pct: Some(100.0 * f64::from(joined) / f64::from(s.requests.max(1))),
        });
    }
    out
}

/// idle_after_burst: back-to-back requests, then the CPU of an idle period.
pub fn idle_after_burst(p: &dyn Peer, s: &Sizes) -> IdleAfterBurst {
    let end = Instant::now() + Duration::from_millis(s.burst_ms);
    let mut n = 0u64;
    while Instant::now() < end || n == 0 {
        request(p, s);
        n += 1;
    }
    let u0 = usage();
    std::thread::sleep(Duration::from_millis(s.idle_ms));
    let cpu = usage().cpu_s - u0.cpu_s;
    IdleAfterBurst {
        burst_ms: s.burst_ms,
        requests_in_burst: n,
        idle_ms: s.idle_ms,
        cpu_s: cpu,
    }
}

/// wake: after each idle period, how long until a worker runs a probe
/// task, and how long until the first helper and the whole team run their
/// share of a region.
pub fn wake(p: &dyn Peer, s: &Sizes) -> Vec<Wake> {
    let mut out = Vec::new();
    for idle in WAKE_IDLE_MS {
        let reps = if idle >= 10.0 {
            (s.wake_reps / 3).max(3)
        } else {
            s.wake_reps.max(1)
        };
        let d = Duration::from_secs_f64(idle / 1e3);
        let mut v = Vec::with_capacity(reps as usize);
        for _ in 0..reps {
            idle_from_busy(p, d);
            v.push(us(p.wake_latency()));
        }
        let (mut first, mut team, mut missed) = (Vec::new(), Vec::new(), 0);
        for _ in 0..reps {
            idle_from_busy(p, d);
            let (f, t) = team_probe(p);
            first.extend(f);
            match t {
                Some(t) => team.push(t),
                None => missed += 1,
            }
        }
        out.push(Wake {
            idle_ms: idle,
            latency_us: Summary::of(v),
            first_helper_us: Summary::of(first),
            team_us: Summary::of(team),
            team_missed: missed,
        });
    }
    out
}

/// Activity first, so that the idle period starts from busy workers; then
/// the idle period.
fn idle_from_busy(p: &dyn Peer, idle: Duration) {
    p.tiny_region(&|i| {
        black_box(work(i as u64, 1));
    });
    sleep_precise(idle);
}

/// How long a team probe waits for the whole team.
const TEAM_WAIT: Duration = Duration::from_millis(50);

/// One region of one index per thread in which every index waits (up to
/// `TEAM_WAIT`) until all have started, so that no thread can run two:
/// returns µs from the call to the first index on a thread other than the
/// caller, and to the start of the last index (None where that did not
/// happen within `TEAM_WAIT`).
fn team_probe(p: &dyn Peer) -> (Option<f64>, Option<f64>) {
    let dop = p.dop();
    let arrived = AtomicUsize::new(0);
    let first_ns = AtomicU64::new(u64::MAX);
    let team_ns = AtomicU64::new(u64::MAX);
    let t0 = Instant::now();
    p.tiny_region(&|_| {
        let at = t0.elapsed();
        if !IS_CALLER.with(|c| c.get()) {
            first_ns.fetch_min(at.as_nanos() as u64, Ordering::Relaxed);
        }
        if arrived.fetch_add(1, Ordering::AcqRel) + 1 == dop && at < TEAM_WAIT {
            team_ns.store(at.as_nanos() as u64, Ordering::Relaxed);
        }
        // Spin, then yield: on an oversubscribed machine a waiting thread
        // must not keep the one it waits for off the core.
        let mut spins = 0u32;
        while arrived.load(Ordering::Acquire) < dop && t0.elapsed() < TEAM_WAIT {
            spins += 1;
            if spins < 2000 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    });
    let get = |a: &AtomicU64| {
        let v = a.load(Ordering::Relaxed);
        (v != u64::MAX).then(|| v as f64 / 1e3)
    };
    (get(&first_ns), get(&team_ns))
}

/// throughput: back-to-back requests for `duration_ms`.
pub fn throughput(p: &dyn Peer, s: &Sizes) -> Throughput {
    let u0 = usage();
    let w0 = Instant::now();
    let end = w0 + Duration::from_millis(s.duration_ms);
    let mut v = Vec::new();
    while Instant::now() < end || v.is_empty() {
        let t = Instant::now();
        request(p, s);
        v.push(us(t.elapsed()));
    }
    let wall = w0.elapsed().as_secs_f64();
    let cpu = usage().cpu_s - u0.cpu_s;
    Throughput {
        requests: v.len() as u64,
        wall_s: wall,
        requests_per_s: v.len() as f64 / wall.max(1e-9),
        latency_us: Summary::of(v),
        cpu_pct: cpu_pct(cpu, wall),
    }
}
