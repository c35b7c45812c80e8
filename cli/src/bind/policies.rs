//! The upload-policy benchmark: per run, begin_run + claim N slots (writing
//! a little content into each) + upload, on a maker reused across runs, for
//! each window, task count and upload policy.
use super::backend::{self, Backend, Device};
use super::model::{Policy, RunSample};
use crate::stats::{median, resident_bytes, usage};
use serde::Serialize;
use std::time::{Duration, Instant};

/// Parses a task window: a power of two in [4, INT32_MAX] whose image fits
/// in INT32_MAX bytes (the library's own rule decides).
pub fn parse_window(s: &str) -> Result<u64, String> {
    let w: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("window '{s}' is not a number"))?;
    if !w.is_power_of_two() || w < 4 {
        return Err(format!("window {w} is not a power of two >= 4"));
    }
    backend::image_bytes(w).map_err(|e| format!("window {w} is not usable: {e}"))?;
    Ok(w)
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct BindPlan {
    pub windows: Vec<u64>,
    pub tasks: Vec<u64>,
    pub policies: Vec<Policy>,
    pub backend: Backend,
    /// At least this many measured runs per cell ...
    pub runs: u32,
    /// ... and more, up to `max_runs`, until `min_time_ms` of runs were
    /// measured (cheap cells get stable medians; 0 = exactly `runs`).
    pub min_time_ms: u64,
    pub max_runs: u32,
    pub warmup: u32,
    /// Makers created with LRT_MAKER_PIN_MIRROR (page-locked mirror).
    pub pin_mirror: bool,
}

/// Medians over the measured runs (ns, bytes).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Medians {
    pub total_ns: f64,
    pub begin_ns: f64,
    pub zero_ns: f64,
    pub claim_ns: f64,
    pub relocate_ns: f64,
    pub copy_ns: f64,
    pub upload_ns: f64,
    pub bytes: f64,
    pub copies: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub h2d_ns: Option<f64>,
}

/// One (backend, window, tasks, policy) cell.
#[derive(Clone, Debug, Serialize)]
pub struct BindCell {
    pub backend: String,
    pub window: u64,
    pub image_bytes: u64,
    pub tasks: u64,
    pub policy: Policy,
    /// Created with LRT_MAKER_PIN_MIRROR.
    pub pinned_mirror: bool,
    pub runs: u32,
    pub warmup_runs: u32,
    pub median: Medians,
    /// Minor page faults of the process during the first (warm-up) run.
    pub faults_first_run: u64,
    /// Minor page faults per measured run (after warm-up).
    pub faults_per_run: f64,
    /// Nanoseconds `lrt_runtime_maker_create` took (mapping, device
    /// allocation, pinning, AUTO's measurement).
    pub create_ns: u64,
    /// Locked memory of the process (VmLck) after the maker was created,
    /// and after its last run (0 where /proc/self/status cannot be read).
    pub locked_after_create: u64,
    pub locked_after_runs: u64,
    /// Resident memory after the maker was created, before its first run.
    pub rss_before: u64,
    /// Resident memory after the last run.
    pub rss_after: u64,
    /// Median total over the FULL+fresh median total of the same window and
    /// task count (None without a FULL+fresh cell).
    pub ratio_to_full_fresh: Option<f64>,
    pub samples: Vec<RunSample>,
}

pub(super) fn medians(s: &[RunSample]) -> Medians {
    let m = |f: &dyn Fn(&RunSample) -> f64| median(&s.iter().map(f).collect::<Vec<_>>());
    Medians {
        total_ns: m(&|r| r.total_ns as f64),
        begin_ns: m(&|r| r.begin_ns as f64),
        zero_ns: m(&|r| r.zero_ns as f64),
        claim_ns: m(&|r| r.claim_ns as f64),
        relocate_ns: m(&|r| r.relocate_ns as f64),
        copy_ns: m(&|r| r.copy_ns as f64),
        upload_ns: m(&|r| r.upload_ns as f64),
        bytes: m(&|r| r.bytes as f64),
        copies: m(&|r| r.copies as f64),
        sync_ns: s
            .iter()
            .all(|r| r.sync_ns.is_some())
            .then(|| m(&|r| r.sync_ns.unwrap_or(0) as f64)),
        h2d_ns: s
            .iter()
            .all(|r| r.h2d_ns.is_some())
            .then(|| m(&|r| r.h2d_ns.unwrap_or(0) as f64)),
    }
}

/// The (window, tasks) pairs of a plan: tasks above the window are skipped.
pub fn pairs(plan: &BindPlan) -> Vec<(u64, u64)> {
    pairs_of(&plan.windows, &plan.tasks)
}

/// The (window, tasks) pairs with tasks at most the window.
pub(super) fn pairs_of(windows: &[u64], tasks: &[u64]) -> Vec<(u64, u64)> {
    let mut v = Vec::new();
    for &w in windows {
        for &n in tasks {
            if n <= w {
                v.push((w, n));
            }
        }
    }
    v
}

/// Runs the plan; `step` is told when each cell starts.
pub fn run(plan: &BindPlan, step: &dyn Fn(&str)) -> Result<Vec<BindCell>, String> {
    if plan.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    let pairs = pairs(plan);
    if pairs.is_empty() {
        return Err("no task count fits in any window (tasks must be <= window)".into());
    }
    let dev = Device::open(plan.backend)?;
    let mut cells = Vec::new();
    for &(w, n) in &pairs {
        for &p in &plan.policies {
            step(&format!("W={w} N={n} {}", p.name()));
            cells.push(measure_cell(plan, &dev, w, n, p)?);
        }
    }
    drop(dev);
    // Ratios to FULL+fresh of the same window and task count.
    let base: Vec<(u64, u64, f64)> = cells
        .iter()
        .filter(|c| c.policy == Policy::FullFresh)
        .map(|c| (c.window, c.tasks, c.median.total_ns))
        .collect();
    for c in &mut cells {
        c.ratio_to_full_fresh = base
            .iter()
            .find(|(w, n, _)| *w == c.window && *n == c.tasks)
            .filter(|(_, _, t)| *t > 0.0)
            .map(|(_, _, t)| c.median.total_ns / t);
    }
    Ok(cells)
}

/// One cell: a fresh maker, its warm-up runs, then the measured runs.
fn measure_cell(
    plan: &BindPlan,
    dev: &Device,
    w: u64,
    n: u64,
    p: Policy,
) -> Result<BindCell, String> {
    let t_create = Instant::now();
    let mut maker = dev
        .maker(p, w, plan.pin_mirror)
        .map_err(|e| format!("creating a maker (W={w}, {}): {e}", p.name()))?;
    let create_ns = t_create.elapsed().as_nanos() as u64;
    let locked_after_create = locked_bytes();
    let image_bytes = maker.image_bytes();
    let m = warm_and_measure(plan, n, &mut || maker.run_once(n))?;
    let locked_after_runs = locked_bytes();
    drop(maker);
    Ok(BindCell {
        backend: plan.backend.name(),
        window: w,
        image_bytes,
        tasks: n,
        policy: p,
        pinned_mirror: plan.pin_mirror,
        runs: m.samples.len() as u32,
        warmup_runs: plan.warmup.max(1),
        median: medians(&m.samples),
        faults_first_run: m.faults_first_run,
        faults_per_run: m.faults_per_run,
        create_ns,
        locked_after_create,
        locked_after_runs,
        rss_before: m.rss_before,
        rss_after: m.rss_after,
        ratio_to_full_fresh: None,
        samples: m.samples,
    })
}

/// One cell's runs: the first (its page faults apart), the other warm-up
/// runs, the measured ones; resident memory before and after.
pub(super) struct Measured {
    pub samples: Vec<RunSample>,
    pub faults_first_run: u64,
    pub faults_per_run: f64,
    pub rss_before: u64,
    pub rss_after: u64,
}

/// Runs `run_once` (which claims `n` tasks) for a cell: one first run, the
/// rest of the warm-up, then `measured_runs`.
pub(super) fn warm_and_measure(
    plan: &BindPlan,
    n: u64,
    run_once: &mut dyn FnMut() -> Result<RunSample, String>,
) -> Result<Measured, String> {
    let rss_before = resident_bytes();
    let f0 = usage().minflt;
    let first = run_once()?;
    let f1 = usage().minflt;
    for _ in 1..plan.warmup {
        run_once()?;
    }
    let u0 = usage().minflt;
    let samples = measured_runs(plan, run_once)?;
    let u1 = usage().minflt;
    if first.total_tasks as u64 != n {
        return Err(format!(
            "upload reported {} tasks, {n} were claimed",
            first.total_tasks
        ));
    }
    Ok(Measured {
        faults_first_run: f1 - f0,
        faults_per_run: (u1 - u0) as f64 / samples.len() as f64,
        samples,
        rss_before,
        rss_after: resident_bytes(),
    })
}

/// Locked memory of this process (VmLck of /proc/self/status) in bytes; 0
/// where it cannot be read.
fn locked_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmLck:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// At least `runs` runs of `run_once`, more (up to `max_runs`) until
/// `min_time_ms` passed.
pub(super) fn measured_runs(
    plan: &BindPlan,
    run_once: &mut dyn FnMut() -> Result<RunSample, String>,
) -> Result<Vec<RunSample>, String> {
    let min_time = Duration::from_millis(plan.min_time_ms);
    let max_runs = plan.max_runs.max(plan.runs) as usize;
    // Allocated (and touched) up front: growing it while measuring
    // would add the benchmark's own page faults to the maker's.
    let mut samples = vec![RunSample::default(); max_runs];
    samples.clear();
    let start = Instant::now();
    while samples.len() < plan.runs as usize
        || (start.elapsed() < min_time && samples.len() < max_runs)
    {
        samples.push(run_once()?);
    }
    Ok(samples)
}
