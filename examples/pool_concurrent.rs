//! A quick measurement of many callers on the pool (issue 31): K request
//! threads, each running requests of `LOOPS` ParallelFor loops of
//! calibrated spin work back to back (or with a gap between requests),
//! against one shared pool, one pool per caller, and the serial baseline
//! (one thread per caller, no pool). Prints runs/s, CPU per run and the
//! ratio to the serial baseline of the same K, in one run. The scenario of
//! record is `leanrt pool --scenario concurrent` (docs/BENCHMARKS.md);
//! this is the library's own check while changing it.
//!
//! `cargo run --release --example pool_concurrent -- [seconds] [gap_us]
//! [K,K,..] [config]` (config: `key=value;...` set on every pool, e.g.
//! `leanrt.intra_op.cpu_budget=0`).
use leanrt::pool::{self, PoolOptions, ThreadPool};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Loops per request and indices per loop.
const LOOPS: usize = 4;
const INDICES: isize = 64;
/// Work per index.
const INDEX_NS: u64 = 2_000;

fn spin_units(units: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..units {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x)
}

/// How many units of `spin_units` take `INDEX_NS`.
fn calibrate() -> u64 {
    let mut units = 1000u64;
    loop {
        let t = Instant::now();
        spin_units(units);
        let ns = t.elapsed().as_nanos() as u64;
        if ns > 5_000_000 {
            return (units * INDEX_NS / ns).max(1);
        }
        units *= 2;
    }
}

fn cpu_ns() -> u64 {
    // SAFETY: rusage is plain data (all zeros is a valid value), and
    // getrusage only fills the struct passed.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let t = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn make_pool(config: &str) -> ThreadPool {
    let mut o = PoolOptions::default();
    o.set_num_threads(2).unwrap();
    for kv in config.split(';').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').expect("key=value");
        o.set_config(k, v).unwrap();
    }
    ThreadPool::create(&o).unwrap().unwrap()
}

fn request(pool: Option<&ThreadPool>, units: u64) {
    for _ in 0..LOOPS {
        let body = |a: isize, b: isize| {
            for _ in a..b {
                spin_units(units);
            }
        };
        match pool {
            Some(p) => pool::try_parallel_for(Some(p), INDICES, 6000.0, &body),
            None => body(0, INDICES),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Serial,
    Shared,
    PerCaller,
}

/// (runs/s, CPU µs per run, p50 µs, p99 µs)
fn measure(mode: Mode, k: usize, secs: f64, gap_us: u64, units: u64, config: &str) -> [f64; 4] {
    let shared = Arc::new(make_pool(config));
    let stop = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicU64::new(0));
    let go = Arc::new(std::sync::Barrier::new(k + 1));
    let threads: Vec<_> = (0..k)
        .map(|_| {
            let (shared, stop, runs, go) = (shared.clone(), stop.clone(), runs.clone(), go.clone());
            let config = config.to_owned();
            std::thread::spawn(move || {
                let own = (mode == Mode::PerCaller).then(|| make_pool(&config));
                let pool = match mode {
                    Mode::Serial => None,
                    Mode::Shared => Some(&*shared),
                    Mode::PerCaller => own.as_ref(),
                };
                let mut lat = Vec::with_capacity(1 << 16);
                // Warm up.
                for _ in 0..20 {
                    request(pool, units);
                }
                go.wait();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    request(pool, units);
                    lat.push(t.elapsed().as_nanos() as u64);
                    runs.fetch_add(1, Ordering::Relaxed);
                    if gap_us > 0 {
                        std::thread::sleep(Duration::from_micros(gap_us));
                    }
                }
                go.wait();
                lat
            })
        })
        .collect();
    go.wait();
    let (t0, c0, r0) = (Instant::now(), cpu_ns(), runs.load(Ordering::Relaxed));
    std::thread::sleep(Duration::from_secs_f64(secs));
    let (t1, c1, r1) = (Instant::now(), cpu_ns(), runs.load(Ordering::Relaxed));
    stop.store(true, Ordering::Relaxed);
    go.wait();
    let mut lat: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    lat.sort_unstable();
    let q = |f: f64| lat[((lat.len() - 1) as f64 * f) as usize] as f64 / 1000.0;
    let n = (r1 - r0).max(1) as f64;
    [
        n / (t1 - t0).as_secs_f64(),
        (c1 - c0) as f64 / 1000.0 / n,
        q(0.5),
        q(0.99),
    ]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let secs: f64 = args.get(1).map_or(1.0, |s| s.parse().unwrap());
    let gap_us: u64 = args.get(2).map_or(0, |s| s.parse().unwrap());
    let ks: Vec<usize> = args
        .get(3)
        .map_or("1,2,4,8", |s| s.as_str())
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let config = args.get(4).cloned().unwrap_or_default();
    let units = calibrate();
    println!(
        "pool_concurrent: {LOOPS} loops x {INDICES} indices x {INDEX_NS} ns per request, \
         gap {gap_us} us, {secs} s per cell, median of 3 rounds, config \"{config}\""
    );
    println!("K  mode        runs/s   CPU us/run  p50 us   p99 us   ratio to serial");
    for &k in &ks {
        let mut cells: Vec<(Mode, Vec<[f64; 4]>)> = [Mode::Serial, Mode::Shared, Mode::PerCaller]
            .into_iter()
            .map(|m| (m, Vec::new()))
            .collect();
        for _ in 0..3 {
            for (m, v) in cells.iter_mut() {
                v.push(measure(*m, k, secs, gap_us, units, &config));
            }
        }
        let med = |v: &Vec<[f64; 4]>, i: usize| median(v.iter().map(|c| c[i]).collect());
        // Ratio per round, then the median (ratios within one round).
        let base = &cells[0].1.clone();
        for (m, v) in &cells {
            let name = match m {
                Mode::Serial => "serial",
                Mode::Shared => "shared",
                Mode::PerCaller => "per-caller",
            };
            let ratio = median(v.iter().zip(base).map(|(c, b)| c[0] / b[0]).collect());
            println!(
                "{k:<2} {name:<10} {:>8.0} {:>11.0} {:>8.0} {:>8.0}   {ratio:.3}",
                med(v, 0),
                med(v, 1),
                med(v, 2),
                med(v, 3)
            );
        }
    }
}
