//! A quick measurement of the maker on the host backend (not a test of
//! speed: it asserts nothing about time). Run it in release:
//!
//! ```text
//! cargo test --release -p leanrt --test staging_perf -- --ignored --nocapture
//! ```
//!
//! Prints, per window W and task count N, the median per-run cost of
//! begin_run, N claims and upload under FULL with a fresh mirror, FULL,
//! BOUNDED and COMPACT and their ratio to FULL+fresh; then, for W = 131072
//! and N = 64, the minor page faults over 100 warm runs and the resident
//! memory before the first run and after 100 runs.
use std::time::{Duration, Instant};

use leanrt::device::host::host_api;
use leanrt::staging::{MakerConfig, RuntimeMaker, UploadPolicy, MAKER_FRESH_MIRROR};

fn run_once(m: &mut RuntimeMaker, n: usize) {
    m.begin_run().unwrap();
    for k in 0..n {
        let s = m.claim_slot().unwrap();
        // SAFETY: the slot's payload lives in the mirror until the next run.
        unsafe {
            (*s.payload).scalar_count = 1;
            (*s.payload).scalars[0] = k as u64;
        }
    }
    m.upload().unwrap();
}

fn median_ns(m: &mut RuntimeMaker, n: usize) -> f64 {
    run_once(m, n); // warm-up
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 5 || (start.elapsed() < Duration::from_millis(300) && samples.len() < 200)
    {
        let t = Instant::now();
        run_once(m, n);
        samples.push(t.elapsed().as_nanos() as f64);
    }
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    samples[samples.len() / 2]
}

fn minor_faults() -> i64 {
    // SAFETY: getrusage fills the zeroed struct.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut u);
        u.ru_minflt
    }
}

fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4
}

fn maker(w: u64, policy: UploadPolicy, flags: u32) -> RuntimeMaker {
    let cfg = MakerConfig {
        task_window: w,
        policy,
        flags,
    };
    RuntimeMaker::new(&cfg, host_api()).unwrap()
}

#[test]
#[ignore = "measurement; run in release with --ignored --nocapture"]
fn staging_measurement() {
    let variants = [
        ("FULL+fresh", UploadPolicy::Full, MAKER_FRESH_MIRROR),
        ("FULL", UploadPolicy::Full, 0),
        ("BOUNDED", UploadPolicy::Bounded, 0),
        ("COMPACT", UploadPolicy::Compact, 0),
    ];
    println!("\nper-run median (begin_run + claim N + upload), host backend");
    println!(
        "{:>7} {:>6} {:>11} {:>12} {:>8}",
        "W", "N", "policy", "median_us", "vs_fresh"
    );
    for w in [16384u64, 131072] {
        for n in [0usize, 64, 1024, 16384] {
            let mut base = 0.0;
            for (name, policy, flags) in variants {
                let mut m = maker(w, policy, flags);
                let med = median_ns(&mut m, n);
                if base == 0.0 {
                    base = med;
                }
                println!(
                    "{w:>7} {n:>6} {name:>11} {:>12.1} {:>7.1}x",
                    med / 1e3,
                    base / med
                );
            }
        }
    }
    println!("\nW=131072, N=64: faults over 100 warm runs, RSS before/after 100 runs");
    for (name, policy) in [
        ("BOUNDED", UploadPolicy::Bounded),
        ("COMPACT", UploadPolicy::Compact),
    ] {
        let mut m = maker(131072, policy, 0);
        let rss_before = rss_kib();
        run_once(&mut m, 64); // first run warms the pages it touches
        let f0 = minor_faults();
        for _ in 0..100 {
            run_once(&mut m, 64);
        }
        let faults = minor_faults() - f0;
        let rss_after = rss_kib();
        println!(
            "{name:>8}: minor faults in 100 warm runs = {faults}, RSS before first run {rss_before} KiB, \
             after 101 runs {rss_after} KiB (delta {} KiB)",
            rss_after as i64 - rss_before as i64
        );
    }
}
