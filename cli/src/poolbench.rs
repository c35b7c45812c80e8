//! `leanrt pool`: the thread-pool benchmark. Each (peer, configuration,
//! thread count) cell runs in a child process of `leanrt` itself (hidden
//! subcommand `__pool-cell`), so that no pool of one cell can burn CPU during
//! another, getrusage figures cover one cell only, and libgomp sees the
//! OMP_WAIT_POLICY of its variant at load time.
use crate::peers::{self, Leanrt, OpenMp, Peer, Rayon};
use crate::stats::{us, usage, Summary};
use crate::svg::{Bar, Chart, Group};
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

thread_local! {
    /// Set on the thread that runs the scenarios (the loops' caller).
    static IS_CALLER: Cell<bool> = const { Cell::new(false) };
}

/// The scenarios, in run order.
pub const SCENARIOS: [&str; 5] = [
    "fork_join",
    "bursty",
    "idle_after_burst",
    "wake",
    "throughput",
];

/// Idle periods before a wake-latency probe, in ms.
pub const WAKE_IDLE_MS: [f64; 3] = [0.1, 1.0, 50.0];

/// Sizes of the scenarios.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sizes {
    /// fork_join: regions timed (after 10% warm-up).
    pub regions: u32,
    /// fork_join, second variant: rounds of the work kernel per index so that
    /// one index takes about `--fj-item-us` (0: variant skipped).
    pub fj_iters: u32,
    /// bursty: requests per gap.
    pub requests: u32,
    /// bursty: gaps between requests, ms.
    pub gaps_ms: Vec<f64>,
    /// One request: a parallel loop of `items` indices ...
    pub items: u64,
    /// ... each doing `iters` rounds of the work kernel.
    pub iters: u32,
    /// Estimated cycles per index (passed to leanrt's cost model).
    pub cost_cycles: f64,
    /// idle_after_burst: back-to-back requests for this long ...
    pub burst_ms: u64,
    /// ... then CPU time is measured over this idle period.
    pub idle_ms: u64,
    /// wake: probes per idle period (50 ms: a third of it, at least 3).
    pub wake_reps: u32,
    /// throughput: back-to-back requests for this long.
    pub duration_ms: u64,
}

/// Which runtime a cell runs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum PeerKind {
    Leanrt { config: String },
    Rayon,
    OpenMp { wait_policy: String },
}

impl PeerKind {
    pub fn label(&self) -> String {
        match self {
            PeerKind::Leanrt { config } => format!("leanrt {config}"),
            PeerKind::Rayon => "rayon".into(),
            PeerKind::OpenMp { wait_policy } => format!("openmp {wait_policy}"),
        }
    }
}

/// What one child measures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellSpec {
    pub peer: PeerKind,
    pub threads: usize,
    pub scenarios: Vec<String>,
    pub sizes: Sizes,
}

/// bursty at one gap.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Bursty {
    pub gap_ms: f64,
    /// Request latency, µs.
    pub latency_us: Summary,
    /// Process CPU time over wall time, percent (100 = one core busy).
    pub cpu_pct: f64,
    pub wall_s: f64,
    pub cpu_s: f64,
}

/// idle_after_burst.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IdleAfterBurst {
    pub burst_ms: u64,
    pub requests_in_burst: u64,
    pub idle_ms: u64,
    /// CPU-seconds the process burnt during the idle period.
    pub cpu_s: f64,
}

/// wake after one idle period.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Wake {
    pub idle_ms: f64,
    /// Submission to a worker starting the probe, µs.
    pub latency_us: Summary,
}

/// throughput.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Throughput {
    pub requests: u64,
    pub wall_s: f64,
    pub requests_per_s: f64,
    pub latency_us: Summary,
    pub cpu_pct: f64,
}

/// leanrt's pool counters at the end of a cell.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Counters {
    pub tasks_run: u64,
    pub steals: u64,
    pub spin_iterations: u64,
    pub parks: u64,
    pub wakeups: u64,
    pub workers_asleep: u64,
}

/// Everything one cell measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellResult {
    pub label: String,
    pub spec: CellSpec,
    pub dop: usize,
    /// Fork-join overhead of a tiny region, µs per region.
    pub fork_join_us: Option<Summary>,
    /// Share of the timed tiny regions in which some index ran on a thread
    /// other than the caller (leanrt's caller takes part in its loops, as
    /// ORT's does, and may finish a tiny region before a worker arrives).
    pub fork_join_helped_pct: Option<f64>,
    /// Second variant: one index per thread, each about `fj_item_us` of
    /// work; overhead = region time minus one index's serial time, µs.
    pub fork_join_small_overhead_us: Option<Summary>,
    /// One index's serial time in that variant, µs (median, this process).
    pub fork_join_small_item_us: Option<f64>,
    pub fork_join_small_helped_pct: Option<f64>,
    pub bursty: Vec<Bursty>,
    pub idle_after_burst: Option<IdleAfterBurst>,
    pub wake: Vec<Wake>,
    pub throughput: Option<Throughput>,
    pub counters: Option<Counters>,
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

fn request(p: &dyn Peer, s: &Sizes) {
    let iters = s.iters;
    p.parallel_for(s.items as usize, s.cost_cycles, &|i| {
        black_box(work(i as u64, iters));
    });
}

/// Sleeps `d`, finishing the last 0.1 ms by yielding (thread::sleep has
/// ~50-100 µs of slack); used where the idle length matters, not the CPU.
fn sleep_precise(d: Duration) {
    let end = Instant::now() + d;
    if d > Duration::from_micros(200) {
        std::thread::sleep(d - Duration::from_micros(100));
    }
    while Instant::now() < end {
        std::thread::yield_now();
    }
}

/// Times `regions` regions of one index per thread, each index `iters`
/// rounds of the kernel (after a 10% warm-up); returns the region times in
/// µs and the share of regions in which a thread other than the caller ran
/// an index.
fn fork_join(p: &dyn Peer, regions: u32, iters: u32) -> (Vec<f64>, f64) {
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

/// Runs one cell in this process.
pub fn run_cell(spec: &CellSpec) -> Result<CellResult, String> {
    let peer: Box<dyn Peer> = match &spec.peer {
        PeerKind::Leanrt { config } => Box::new(Leanrt::new(spec.threads, config)?),
        PeerKind::Rayon => Box::new(Rayon::new(spec.threads)?),
        PeerKind::OpenMp { .. } => Box::new(OpenMp::new(spec.threads)?),
    };
    let p = peer.as_ref();
    let s = &spec.sizes;
    let wants = |name: &str| spec.scenarios.iter().any(|x| x == name);
    let mut out = CellResult {
        label: spec.peer.label(),
        spec: spec.clone(),
        dop: p.dop(),
        fork_join_us: None,
        fork_join_helped_pct: None,
        fork_join_small_overhead_us: None,
        fork_join_small_item_us: None,
        fork_join_small_helped_pct: None,
        bursty: vec![],
        idle_after_burst: None,
        wake: vec![],
        throughput: None,
        counters: None,
    };
    // Warm up: threads started, caches warm.
    for _ in 0..3 {
        request(p, s);
    }

    if wants("fork_join") {
        IS_CALLER.with(|c| c.set(true));
        let (v, helped) = fork_join(p, s.regions, 1);
        out.fork_join_us = Some(Summary::of(v));
        out.fork_join_helped_pct = Some(helped);
        if s.fj_iters > 0 {
            let item_us = {
                let mut t = Vec::new();
                for i in 0..21 {
                    let t0 = Instant::now();
                    black_box(work(i, s.fj_iters));
                    t.push(us(t0.elapsed()));
                }
                crate::stats::median(&t)
            };
            let regions = (s.regions / 4).max(1);
            let (v, helped) = fork_join(p, regions, s.fj_iters);
            out.fork_join_small_overhead_us =
                Some(Summary::of(v.into_iter().map(|x| x - item_us).collect()));
            out.fork_join_small_item_us = Some(item_us);
            out.fork_join_small_helped_pct = Some(helped);
        }
    }

    if wants("bursty") {
        for &gap in &s.gaps_ms {
            let gap_d = Duration::from_secs_f64(gap / 1e3);
            let u0 = usage();
            let w0 = Instant::now();
            let mut v = Vec::with_capacity(s.requests as usize);
            for _ in 0..s.requests {
                let t = Instant::now();
                request(p, s);
                v.push(us(t.elapsed()));
                // A plain sleep: the caller must not burn CPU in the gaps
                // (the CPU figure is the pool's), so the gap may overshoot
                // by the timer slack (~0.05-0.1 ms).
                std::thread::sleep(gap_d);
            }
            let wall = w0.elapsed().as_secs_f64();
            let cpu = usage().cpu_s - u0.cpu_s;
            out.bursty.push(Bursty {
                gap_ms: gap,
                latency_us: Summary::of(v),
                cpu_pct: 100.0 * cpu / wall.max(1e-9),
                wall_s: wall,
                cpu_s: cpu,
            });
        }
    }

    if wants("idle_after_burst") {
        let end = Instant::now() + Duration::from_millis(s.burst_ms);
        let mut n = 0u64;
        while Instant::now() < end || n == 0 {
            request(p, s);
            n += 1;
        }
        let u0 = usage();
        std::thread::sleep(Duration::from_millis(s.idle_ms));
        let cpu = usage().cpu_s - u0.cpu_s;
        out.idle_after_burst = Some(IdleAfterBurst {
            burst_ms: s.burst_ms,
            requests_in_burst: n,
            idle_ms: s.idle_ms,
            cpu_s: cpu,
        });
    }

    if wants("wake") {
        for idle in WAKE_IDLE_MS {
            let reps = if idle >= 10.0 {
                (s.wake_reps / 3).max(3)
            } else {
                s.wake_reps.max(1)
            };
            let d = Duration::from_secs_f64(idle / 1e3);
            let mut v = Vec::with_capacity(reps as usize);
            for _ in 0..reps {
                // Activity first, so that the idle period starts from busy workers.
                p.tiny_region(&|i| {
                    black_box(work(i as u64, 1));
                });
                sleep_precise(d);
                v.push(us(p.wake_latency()));
            }
            out.wake.push(Wake {
                idle_ms: idle,
                latency_us: Summary::of(v),
            });
        }
    }

    if wants("throughput") {
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
        out.throughput = Some(Throughput {
            requests: v.len() as u64,
            wall_s: wall,
            requests_per_s: v.len() as f64 / wall.max(1e-9),
            latency_us: Summary::of(v),
            cpu_pct: 100.0 * cpu / wall.max(1e-9),
        });
    }

    out.counters = p.stats().map(|c| Counters {
        tasks_run: c.tasks_run,
        steals: c.steals,
        spin_iterations: c.spin_iterations,
        parks: c.parks,
        wakeups: c.wakeups,
        workers_asleep: c.workers_asleep,
    });
    Ok(out)
}

/// Runs a cell in a child process (`leanrt __pool-cell`), with
/// OMP_WAIT_POLICY set for the OpenMP variants.
pub fn run_cell_in_child(spec: &CellSpec) -> Result<CellResult, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the leanrt binary: {e}"))?;
    let json = serde_json::to_string(spec).map_err(|e| e.to_string())?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("__pool-cell").arg(&json);
    match &spec.peer {
        PeerKind::OpenMp { wait_policy } => {
            cmd.env("OMP_WAIT_POLICY", wait_policy);
        }
        _ => {
            cmd.env_remove("OMP_WAIT_POLICY");
        }
    }
    let out = cmd
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| format!("cannot start the benchmark child: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{} with {} threads failed ({}): {}",
            spec.peer.label(),
            spec.threads,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("bad result from the benchmark child: {e}"))
}

/// The peers flag: which runtimes besides leanrt.
pub fn parse_peers(list: &[String]) -> Result<Vec<PeerKind>, String> {
    let mut v = Vec::new();
    for p in list {
        let add: Vec<PeerKind> = match p.as_str() {
            "none" => vec![],
            "rayon" => vec![PeerKind::Rayon],
            "openmp" => vec![
                PeerKind::OpenMp { wait_policy: "passive".into() },
                PeerKind::OpenMp { wait_policy: "active".into() },
            ],
            "openmp-passive" => vec![PeerKind::OpenMp { wait_policy: "passive".into() }],
            "openmp-active" => vec![PeerKind::OpenMp { wait_policy: "active".into() }],
            _ => {
                return Err(format!(
                    "unknown peer '{p}' (expected rayon, openmp, openmp-passive, openmp-active or none)"
                ))
            }
        };
        for k in add {
            if matches!(k, PeerKind::OpenMp { .. }) && !peers::OPENMP_BUILT {
                eprintln!(
                    "warning: leanrt was built without an OpenMP compiler; skipping {}",
                    k.label()
                );
                continue;
            }
            if !v.contains(&k) {
                v.push(k);
            }
        }
    }
    Ok(v)
}

/// Parses the scenario list.
pub fn parse_scenarios(list: &[String]) -> Result<Vec<String>, String> {
    let mut v: Vec<String> = Vec::new();
    for s in list {
        if s == "all" {
            v.extend(SCENARIOS.iter().map(|x| x.to_string()));
        } else if SCENARIOS.contains(&s.as_str()) {
            v.push(s.clone());
        } else {
            return Err(format!(
                "unknown scenario '{s}' (expected {} or all)",
                SCENARIOS.join(", ")
            ));
        }
    }
    v.dedup();
    Ok(v)
}

/// Checks a configuration name without running anything (the library checks
/// the keys and values).
pub fn check_config(config: &str) -> Result<String, String> {
    peers::pool_options(2, config)?;
    Ok(config.to_string())
}

/// What `leanrt pool` runs.
#[derive(Clone, Debug)]
pub struct PoolPlan {
    pub threads: Vec<usize>,
    pub configs: Vec<String>,
    pub peers: Vec<PeerKind>,
    pub scenarios: Vec<String>,
    pub sizes: Sizes,
}

/// The cells of a plan, in run order: per thread count, leanrt's
/// configurations, then the peers.
pub fn cells(plan: &PoolPlan) -> Vec<CellSpec> {
    let mut v = Vec::new();
    for &t in &plan.threads {
        for c in &plan.configs {
            v.push(CellSpec {
                peer: PeerKind::Leanrt { config: c.clone() },
                threads: t,
                scenarios: plan.scenarios.clone(),
                sizes: plan.sizes.clone(),
            });
        }
        for p in &plan.peers {
            v.push(CellSpec {
                peer: p.clone(),
                threads: t,
                scenarios: plan.scenarios.clone(),
                sizes: plan.sizes.clone(),
            });
        }
    }
    v
}

/// Runs every cell of the plan, each in a child process.
pub fn run(plan: &PoolPlan, tick: &dyn Fn(&str)) -> Result<Vec<CellResult>, String> {
    let mut out = Vec::new();
    for spec in cells(plan) {
        tick(&format!("{} ×{}", spec.peer.label(), spec.threads));
        out.push(run_cell_in_child(&spec)?);
    }
    Ok(out)
}

fn f1(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |h| format!("{h:.0}"))
}

fn p50_p99(v: Option<&Summary>) -> String {
    v.map_or("-".into(), |f| format!("{}/{}", f1(f.p50), f1(f.p99)))
}

fn overheads_table(results: &[CellResult], first: &CellResult) -> String {
    let mut s = format!(
        "\npool, overheads (µs; p50/p99; forked% = regions where a non-caller thread ran an index)\n{:<27} {:>3} {:>13} {:>7} {:>17} {:>7} {:>22}\n",
        "runtime / configuration",
        "thr",
        "fork-join",
        "forked%",
        format!("fj {:.0}µs-items", first.fork_join_small_item_us.unwrap_or(0.0)),
        "forked%",
        "wake 0.1/1/50ms p50"
    );
    for r in results {
        let wake: Vec<String> = r.wake.iter().map(|w| f1(w.latency_us.p50)).collect();
        s.push_str(&format!(
            "{:<27} {:>3} {:>13} {:>7} {:>17} {:>7} {:>22}\n",
            r.label,
            r.spec.threads,
            p50_p99(r.fork_join_us.as_ref()),
            pct(r.fork_join_helped_pct),
            p50_p99(r.fork_join_small_overhead_us.as_ref()),
            pct(r.fork_join_small_helped_pct),
            if wake.is_empty() {
                "-".into()
            } else {
                wake.join("/")
            }
        ));
    }
    s
}

/// The text tables: overheads and wake-ups, then load (bursty, throughput,
/// CPU); one row per cell.
pub fn table(results: &[CellResult]) -> String {
    let Some(first) = results.first() else {
        return String::new();
    };
    let s0 = &first.spec.sizes;
    let has = |f: &dyn Fn(&CellResult) -> bool| results.iter().any(f);
    let overheads = has(&|r| r.fork_join_us.is_some() || !r.wake.is_empty());
    let load =
        has(&|r| !r.bursty.is_empty() || r.throughput.is_some() || r.idle_after_burst.is_some());
    let mut s = String::new();
    if overheads {
        s.push_str(&overheads_table(results, first));
    }
    if !load {
        return s;
    }
    let gaps: Vec<f64> = first.bursty.iter().map(|b| b.gap_ms).collect();
    s.push_str(&format!(
        "\npool, load (request = {} items × {} rounds, ~{:.0} µs serial; latency µs p50/p90/p99; CPU% = process user+sys / wall; idle CPU ms = CPU time burnt in the idle period after a burst)\n{:<27} {:>3}",
        s0.items,
        s0.iters,
        s0.items as f64 * s0.cost_cycles / 3.0 / 1e3,
        "runtime / configuration",
        "thr"
    ));
    for g in &gaps {
        s.push_str(&format!(
            " {:>20} {:>5}",
            format!("bursty {g} ms gaps"),
            "CPU%"
        ));
    }
    s.push_str(&format!(
        " {:>8} {:>5} {:>11}\n",
        "req/s", "CPU%", "idle CPU ms"
    ));
    for r in results {
        s.push_str(&format!("{:<27} {:>3}", r.label, r.spec.threads));
        for g in &gaps {
            match r.bursty.iter().find(|b| b.gap_ms == *g) {
                Some(b) => s.push_str(&format!(
                    " {:>20} {:>5.0}",
                    format!(
                        "{}/{}/{}",
                        f1(b.latency_us.p50),
                        f1(b.latency_us.p90),
                        f1(b.latency_us.p99)
                    ),
                    b.cpu_pct
                )),
                None => s.push_str(&format!(" {:>20} {:>5}", "-", "-")),
            }
        }
        match &r.throughput {
            Some(t) => s.push_str(&format!(" {:>8.0} {:>5.0}", t.requests_per_s, t.cpu_pct)),
            None => s.push_str(&format!(" {:>8} {:>5}", "-", "-")),
        }
        s.push_str(&format!(
            " {:>11}\n",
            r.idle_after_burst
                .as_ref()
                .map_or("-".into(), |i| format!("{:.2}", i.cpu_s * 1e3))
        ));
    }
    s
}

/// Headline lines: spin_1000_backoff_8 against default (CPU after a burst,
/// bursty latency) and leanrt's best fork-join against the best peer, per
/// thread count.
pub fn headline(results: &[CellResult]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut threads: Vec<usize> = results.iter().map(|r| r.spec.threads).collect();
    threads.dedup();
    for t in threads {
        if t < 2 {
            // One thread: no workers (leanrt's NULL pool), nothing to compare.
            continue;
        }
        let get = |c: &str| {
            results.iter().find(|r| {
                r.spec.threads == t && r.spec.peer == PeerKind::Leanrt { config: c.into() }
            })
        };
        let mut parts = Vec::new();
        let (d, b) = (get("default"), get("spin_1000_backoff_8"));
        if let (Some(d), Some(b)) = (d, b) {
            if let (Some(di), Some(bi)) = (&d.idle_after_burst, &b.idle_after_burst) {
                parts.push(format!(
                    "spin_1000_backoff_8 burns {:.2} ms of CPU in the {} ms after a burst vs {:.2} ms for default ({})",
                    bi.cpu_s * 1e3,
                    bi.idle_ms,
                    di.cpu_s * 1e3,
                    if di.cpu_s >= 0.001 {
                        format!("{:.1}%", 100.0 * bi.cpu_s / di.cpu_s)
                    } else {
                        "no ratio: default burnt under 1 ms".into()
                    }
                ));
            }
            if let (Some(db), Some(bb)) = (d.bursty.first(), b.bursty.first()) {
                if db.latency_us.p50 > 0.0 {
                    parts.push(format!(
                        "its bursty p50 latency ({} ms gaps) is {:.2}× default's",
                        bb.gap_ms,
                        bb.latency_us.p50 / db.latency_us.p50
                    ));
                }
            }
        }
        // Fork-join of the recommended configuration against the best peer.
        if let Some(mine) = b.or(d) {
            type Pick = fn(&CellResult) -> Option<f64>;
            let variants: [(&str, Pick); 2] = [
                ("tiny", |r| r.fork_join_us.as_ref().map(|f| f.p50)),
                ("small-index overhead", |r| {
                    r.fork_join_small_overhead_us.as_ref().map(|f| f.p50)
                }),
            ];
            let mut fj = Vec::new();
            for (name, pick) in variants {
                let best_peer = results
                    .iter()
                    .filter(|r| {
                        r.spec.threads == t && !matches!(r.spec.peer, PeerKind::Leanrt { .. })
                    })
                    .filter_map(|r| pick(r).map(|v| (r.label.clone(), v)))
                    .min_by(|a, b| a.1.total_cmp(&b.1));
                if let (Some(v), Some((pl, pv))) = (pick(mine), best_peer) {
                    fj.push(format!("{name} {v:.2} vs {pv:.2} µs ({pl})"));
                }
            }
            if !fj.is_empty() {
                parts.push(format!(
                    "fork-join p50 of {} vs the best peer: {}",
                    mine.label,
                    fj.join(", ")
                ));
            }
        }
        if !parts.is_empty() {
            lines.push(format!("pool headline ({t} threads): {}", parts.join("; ")));
        }
    }
    lines
}

/// Charts: fork-join p50, bursty p50 per gap, CPU% in bursty, CPU-s after a
/// burst, throughput, wake p50 per idle period; bars per runtime/config.
pub fn charts(results: &[CellResult]) -> Vec<Chart> {
    let mut charts = Vec::new();
    let mut threads: Vec<usize> = results.iter().map(|r| r.spec.threads).collect();
    threads.dedup();
    let bar = |r: &CellResult, v: f64| Bar {
        label: r.label.clone(),
        value: v,
    };
    let by_threads = |f: &dyn Fn(&CellResult) -> Option<f64>| -> Vec<Group> {
        threads
            .iter()
            .map(|&t| Group {
                label: format!("{t} threads"),
                bars: results
                    .iter()
                    .filter(|r| r.spec.threads == t)
                    .map(|r| bar(r, f(r).unwrap_or(f64::NAN)))
                    .collect(),
            })
            .collect()
    };
    // At thread count `t`, one group per key (a gap, an idle period), each
    // with a bar per runtime/configuration (NaN where the cell lacks it).
    let per_key = |t: usize,
                   keys: &[f64],
                   label: &dyn Fn(f64) -> String,
                   value: &dyn Fn(&CellResult, f64) -> Option<f64>|
     -> Vec<Group> {
        keys.iter()
            .map(|&k| Group {
                label: label(k),
                bars: results
                    .iter()
                    .filter(|r| r.spec.threads == t)
                    .map(|r| bar(r, value(r, k).unwrap_or(f64::NAN)))
                    .collect(),
            })
            .collect()
    };
    if results.iter().any(|r| r.fork_join_us.is_some()) {
        charts.push(Chart {
            title: "fork-join overhead of a tiny region".into(),
            unit: "µs, p50".into(),
            groups: by_threads(&|r| r.fork_join_us.as_ref().map(|f| f.p50)),
        });
    }
    if results
        .iter()
        .any(|r| r.fork_join_small_overhead_us.is_some())
    {
        charts.push(Chart {
            title: "fork-join overhead with small indices (region time minus one index)".into(),
            unit: "µs, p50".into(),
            groups: by_threads(&|r| r.fork_join_small_overhead_us.as_ref().map(|f| f.p50)),
        });
    }
    if let Some(first) = results.iter().find(|r| !r.bursty.is_empty()) {
        let gaps: Vec<f64> = first.bursty.iter().map(|b| b.gap_ms).collect();
        let gap_label = |g: f64| format!("gap {g} ms");
        fn gap(r: &CellResult, g: f64) -> Option<&Bursty> {
            r.bursty.iter().find(|b| b.gap_ms == g)
        }
        for &t in &threads {
            charts.push(Chart {
                title: format!("bursty load: request latency, {t} threads"),
                unit: "µs, p50".into(),
                groups: per_key(t, &gaps, &gap_label, &|r, g| {
                    gap(r, g).map(|b| b.latency_us.p50)
                }),
            });
            charts.push(Chart {
                title: format!("bursty load: CPU (user+sys over wall), {t} threads"),
                unit: "%".into(),
                groups: per_key(t, &gaps, &gap_label, &|r, g| gap(r, g).map(|b| b.cpu_pct)),
            });
        }
    }
    if results.iter().any(|r| r.idle_after_burst.is_some()) {
        charts.push(Chart {
            title: "CPU burnt in the idle period after a burst".into(),
            unit: "CPU-seconds".into(),
            groups: by_threads(&|r| r.idle_after_burst.as_ref().map(|i| i.cpu_s)),
        });
    }
    if results.iter().any(|r| r.throughput.is_some()) {
        charts.push(Chart {
            title: "throughput of back-to-back requests".into(),
            unit: "requests/s".into(),
            groups: by_threads(&|r| r.throughput.as_ref().map(|t| t.requests_per_s)),
        });
    }
    if results.iter().any(|r| !r.wake.is_empty()) {
        for &t in &threads {
            charts.push(Chart {
                title: format!("wake latency, {t} threads"),
                unit: "µs, p50".into(),
                groups: per_key(
                    t,
                    &WAKE_IDLE_MS,
                    &|i| format!("after {i} ms idle"),
                    &|r, i| {
                        r.wake
                            .iter()
                            .find(|w| w.idle_ms == i)
                            .map(|w| w.latency_us.p50)
                    },
                ),
            });
        }
    }
    charts
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
    fn peers_and_scenarios_parse() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_peers(&s(&["rayon", "rayon"])).unwrap(),
            vec![PeerKind::Rayon]
        );
        assert!(parse_peers(&s(&["none"])).unwrap().is_empty());
        assert!(parse_peers(&s(&["tbb"])).is_err());
        assert_eq!(
            parse_scenarios(&s(&["all"])).unwrap().len(),
            SCENARIOS.len()
        );
        assert!(parse_scenarios(&s(&["forkjoin"])).is_err());
    }

    fn tiny() -> Sizes {
        Sizes {
            regions: 5,
            fj_iters: 8,
            requests: 2,
            gaps_ms: vec![0.1],
            items: 64,
            iters: 4,
            cost_cycles: 50.0,
            burst_ms: 1,
            idle_ms: 1,
            wake_reps: 1,
            duration_ms: 1,
        }
    }

    #[test]
    fn a_cell_runs_every_scenario_in_process() {
        let spec = CellSpec {
            peer: PeerKind::Leanrt {
                config: "spin_1000_backoff_8".into(),
            },
            threads: 2,
            scenarios: SCENARIOS.iter().map(|s| s.to_string()).collect(),
            sizes: tiny(),
        };
        let r = run_cell(&spec).unwrap();
        assert_eq!(r.fork_join_us.as_ref().unwrap().n, 5);
        assert_eq!(r.fork_join_small_overhead_us.as_ref().unwrap().n, 1);
        assert!(r.fork_join_small_item_us.unwrap() >= 0.0);
        assert_eq!(r.bursty.len(), 1);
        assert_eq!(r.bursty[0].latency_us.n, 2);
        assert!(r.idle_after_burst.as_ref().unwrap().requests_in_burst >= 1);
        assert_eq!(r.wake.len(), WAKE_IDLE_MS.len());
        assert_eq!(r.wake[2].latency_us.n, 3); // 50 ms: at least 3 probes
        assert!(r.throughput.as_ref().unwrap().requests >= 1);
        // The JSON round trip the parent relies on.
        let back: CellResult = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.label, r.label);
        assert!(!table(std::slice::from_ref(&r)).is_empty());
        assert!(!charts(&[r]).is_empty());
    }
}
