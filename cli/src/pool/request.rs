//! The request scenario: inference runs separated by idle gaps, as a
//! serving process sees them. Per gap: run latency, the process's CPU inside
//! the runs and in the gaps between them; once per cell: the same run
//! serially on the caller (what a run costs with no pool at all).
use super::peers::Peer;
use super::results::RequestRun;
use super::spec::{Gap, Sizes};
use super::workload::{inference_run, inference_run_serial, Gaps};
use crate::stats::{cpu_pct, us, usage, Summary};
use std::time::Instant;

/// Every gap of the sizes, then the serial baseline. One untimed run
/// first: a runtime may set up per-shape state on its first run (the ORT
/// peer builds the run's session and graph then).
pub fn request(p: &dyn Peer, s: &Sizes) -> (Vec<RequestRun>, Summary) {
    inference_run(p, s);
    let runs = s.request_gaps.iter().map(|&g| at_gap(p, s, g)).collect();
    (runs, serial_baseline(s))
}

/// `requests` runs, each followed by one gap.
fn at_gap(p: &dyn Peer, s: &Sizes, gap: Gap) -> RequestRun {
    let mut gaps = Gaps::new(gap);
    let mut latency = Vec::with_capacity(s.requests as usize);
    let (mut run_wall, mut run_cpu, mut gap_wall, mut gap_cpu) = (0.0, 0.0, 0.0, 0.0);
    let mut u0 = usage();
    for _ in 0..s.requests {
        let t = Instant::now();
        inference_run(p, s);
        let d = t.elapsed();
        let u1 = usage();
        latency.push(us(d));
        run_wall += d.as_secs_f64();
        run_cpu += u1.cpu_s - u0.cpu_s;
        // A plain sleep, as in bursty: the caller burns no CPU in the gap.
        let g = Instant::now();
        std::thread::sleep(gaps.next_gap());
        u0 = usage();
        gap_wall += g.elapsed().as_secs_f64();
        gap_cpu += u0.cpu_s - u1.cpu_s;
    }
    RequestRun {
        gap,
        hints: p.hints(),
        latency_us: Summary::of(latency),
        run_cpu_pct: cpu_pct(run_cpu, run_wall),
        gap_cpu_pct: cpu_pct(gap_cpu, gap_wall),
        run_wall_s: run_wall,
        run_cpu_s: run_cpu,
        gap_wall_s: gap_wall,
        gap_cpu_s: gap_cpu,
    }
}

/// The run on the caller alone, back to back (at least 3 runs, at most 20).
fn serial_baseline(s: &Sizes) -> Summary {
    let n = s.requests.clamp(3, 20);
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let t = Instant::now();
        inference_run_serial(s);
        v.push(us(t.elapsed()));
    }
    Summary::of(v)
}
