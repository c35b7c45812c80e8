//! `leanrt`: shows on this machine what leanrt removes.
//!
//! * `leanrt bench` — both halves with quick defaults (under a minute).
//! * `leanrt bind`  — staging: upload policies across windows and task counts.
//! * `leanrt pool`  — thread pool: ORT spin presets against rayon and OpenMP.
//! * `leanrt info`  — version, CPU facts, backends.
mod bind;
mod info;
mod pool;
mod progress;
mod stats;
mod svg;

use bind::{BindPlan, Policy};
use clap::{Args, Parser, Subcommand};
use pool::{PoolPlan, Sizes};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "leanrt",
    version = leanrt::VERSION.trim_start_matches("leanrt "),
    about = "Benchmarks of leanrt's staging (runtime maker) and thread pool on this machine",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Both halves with quick defaults (under a minute), two tables and the headline ratios.
    Bench(BenchArgs),
    /// Staging: per-run cost of each upload policy across windows and task counts.
    Bind(BindArgs),
    /// Thread pool: ORT spin presets against rayon and OpenMP across scenarios.
    Pool(PoolArgs),
    /// Version, CPU facts, calibrated pause time, default parallelism, backends.
    Info(InfoArgs),
    /// Internal: runs one pool-benchmark cell and prints its JSON result.
    #[command(name = "__pool-cell", hide = true)]
    PoolCell { spec: String },
    /// Internal: keeps N threads busy until stdin closes (--oversubscribe).
    #[command(name = "__busy", hide = true)]
    Busy { threads: usize },
}

#[derive(Args, Debug, Clone)]
struct Output {
    /// Write every raw figure as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Draw the results as SVG charts into FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// No progress bars (they are off anyway when stderr is not a terminal).
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Thread count of the pool half (0 = physical cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Peers of the pool half.
    #[arg(long, value_delimiter = ',', default_value = "rayon,openmp")]
    peers: Vec<String>,
    /// Tiny sizes everywhere (for the test suite): checks the plumbing only.
    #[arg(long, hide = true)]
    smoke: bool,
    #[command(flatten)]
    out: Output,
}

#[derive(Args, Debug)]
struct BindArgs {
    /// Task windows (powers of two >= 4 whose image fits in INT32_MAX bytes).
    #[arg(long, value_delimiter = ',', value_parser = bind::parse_window, default_value = "16384,131072")]
    window: Vec<u64>,
    /// Tasks claimed per run (counts above a window are skipped for it).
    #[arg(long, value_delimiter = ',', default_value = "0,64,1024,16384")]
    tasks: Vec<u64>,
    /// Upload policies.
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "full-fresh,full,bounded,compact,auto"
    )]
    policy: Vec<Policy>,
    /// Device backend: host, cuda or cuda:N.
    #[arg(long, value_parser = bind::parse_backend, default_value = "host")]
    backend: bind::Backend,
    /// Measured runs per cell, at least (after the warm-up runs).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Cheap cells run more times, until this much time was measured
    /// (0: exactly --runs).
    #[arg(long, default_value_t = 200)]
    min_time_ms: u64,
    /// Cap on the runs added by --min-time-ms.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    max_runs: u32,
    /// Warm-up runs per cell (the first one's page faults are reported apart).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    warmup: u32,
    /// Create the makers with LRT_MAKER_PIN_MIRROR (page-locks what the
    /// uploads copy from, growing with N, for faster DMA with cuda; on the
    /// host backend it mlocks, so touches, those pages).
    #[arg(long)]
    pin_mirror: bool,
    /// Image layout: v1 (the reference at #1659) or v2 (its current image:
    /// leanrt's maker against the reference's own per-run path, beside one
    /// plain copy of the compact bytes; --policy and --pin-mirror unused).
    #[arg(long, value_parser = ["v1", "v2"], default_value = "v1")]
    layout: String,
    /// Instead: copy_to_device bandwidth from pageable and pinned host memory.
    #[arg(long)]
    bandwidth: bool,
    /// Sizes for --bandwidth, in MB (10^6 bytes).
    #[arg(long, value_delimiter = ',', default_value = "1,16,81", value_parser = clap::value_parser!(u64).range(1..=4096))]
    sizes: Vec<u64>,
    #[command(flatten)]
    out: Output,
}

#[derive(Args, Debug)]
struct PoolArgs {
    /// Thread counts (degree of parallelism; 0 = physical cores).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    threads: Vec<usize>,
    /// leanrt configurations: ORT preset names (default, no_spin, spin_0,
    /// spin_500, spin_1000, spin_2000, backoff_4, backoff_8,
    /// spin_1000_backoff_4, spin_1000_backoff_8, spin_2000_backoff_8) or
    /// custom "key=value;key=value" ORT config entries.
    #[arg(long, value_delimiter = ',', value_parser = pool::check_config,
          default_value = "default,no_spin,spin_1000,backoff_8,spin_1000_backoff_8")]
    config: Vec<String>,
    /// Scenarios: fork_join, bursty, idle_after_burst, wake, throughput,
    /// request, section, or all. request models inference runs: where the
    /// configuration sets session.force_spinning_stop=1, enable spinning →
    /// a serial preamble → --rounds parallel loops with serial work between
    /// them → disable spinning; then a gap (--request-gaps). section times
    /// k loops inside one parallel section against k separate loops
    /// (--section-loops).
    #[arg(long, value_delimiter = ',', default_value = "all")]
    scenario: Vec<String>,
    /// Other runtimes: rayon, openmp (= openmp-passive + openmp-active), none.
    #[arg(long, value_delimiter = ',', default_value = "rayon,openmp")]
    peers: Vec<String>,
    /// fork_join: regions timed.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..))]
    regions: u32,
    /// fork_join, second variant: work per index, µs (0 = skip the variant).
    #[arg(long, default_value_t = 5.0, value_parser = parse_non_negative)]
    fj_item_us: f64,
    /// bursty and request: requests per gap.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    requests: u32,
    /// bursty: gaps between requests, ms.
    #[arg(long, value_delimiter = ',', default_value = "1,10", value_parser = parse_positive_ms)]
    gaps: Vec<f64>,
    /// Serial work of one request, µs (the loop is sized on this machine).
    #[arg(long, default_value_t = 500.0, value_parser = parse_positive_ms)]
    work_us: f64,
    /// idle_after_burst: burst length, ms.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    burst_ms: u64,
    /// idle_after_burst: idle period measured after the burst, ms.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    idle_ms: u64,
    /// wake: probes per idle period (0.1, 1 ms; a third of it for 50 ms).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    wake_reps: u32,
    /// throughput: duration, ms.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    duration_ms: u64,
    /// request: gaps between runs: N (ms) or expN (exponential, mean N ms).
    #[arg(long, value_delimiter = ',', default_value = "1,10,exp5", value_parser = pool::parse_gap)]
    request_gaps: Vec<pool::Gap>,
    /// request: serial work at the start of a run, µs.
    #[arg(long, default_value_t = 20.0, value_parser = parse_non_negative)]
    preamble_us: f64,
    /// request: parallel rounds (loops) per run.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// request: serial work of one round, µs (split over the loop's indices).
    /// The default is large enough for ORT's cost model to run the round
    /// on the team: below ~70 µs of honestly costed work (Eigen's 100000
    /// cycles of startup) a loop runs on the caller alone, pool or not.
    #[arg(long, default_value_t = 200.0, value_parser = parse_positive_ms)]
    round_us: f64,
    /// request: serial work between two rounds, µs.
    #[arg(long, default_value_t = 5.0, value_parser = parse_non_negative)]
    between_us: f64,
    /// section: loops per parallel section (each compared with as many
    /// separate loops).
    #[arg(long, value_delimiter = ',', default_value = "4,16", value_parser = clap::value_parser!(u32).range(1..))]
    section_loops: Vec<u32>,
    /// section: serial work of one index, µs (one index per thread and loop).
    #[arg(long, default_value_t = 1.0, value_parser = parse_positive_ms)]
    section_item_us: f64,
    /// Run every cell with one competing busy thread per logical core (a
    /// separate process, as other programs on a shared server).
    #[arg(long)]
    oversubscribe: bool,
    #[command(flatten)]
    out: Output,
}

#[derive(Args, Debug)]
struct InfoArgs {
    /// Write the facts as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

fn parse_non_negative(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a number >= 0")),
    }
}

fn parse_positive_ms(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a positive number")),
    }
}

/// The --json document.
#[derive(Serialize)]
struct Report<'a> {
    command: Vec<String>,
    machine: info::Machine,
    #[serde(skip_serializing_if = "Option::is_none")]
    staging: Option<&'a [bind::BindCell]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bandwidth: Option<&'a [bind::BandwidthCell]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pool: Option<&'a [pool::CellResult]>,
    /// What was skipped, and why.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    notes: &'a [String],
}

fn write_outputs(
    out: &Output,
    report: &Report,
    title: &str,
    charts: &[svg::Chart],
) -> Result<(), String> {
    if let Some(p) = &out.json {
        let s = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
        std::fs::write(p, s + "\n").map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &out.svg {
        std::fs::write(p, svg::render(title, charts))
            .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}

fn resolve_threads(t: usize) -> usize {
    if t == 0 {
        leanrt::pool::cpu::physical_cores().max(1)
    } else {
        t
    }
}

/// The plan of `leanrt pool`, and notes on the configurations skipped.
fn pool_plan(a: &PoolArgs) -> Result<(PoolPlan, Vec<String>), String> {
    let mut threads: Vec<usize> = a.threads.iter().map(|&t| resolve_threads(t)).collect();
    threads.dedup();
    let base = Sizes {
        regions: a.regions,
        fj_iters: 0,
        requests: a.requests,
        gaps_ms: a.gaps.clone(),
        items: 0,
        iters: 0,
        cost_cycles: 0.0,
        burst_ms: a.burst_ms,
        idle_ms: a.idle_ms,
        wake_reps: a.wake_reps,
        duration_ms: a.duration_ms,
        run: pool::RunShape {
            preamble_us: a.preamble_us,
            rounds: a.rounds,
            round_us: a.round_us,
            between_us: a.between_us,
            preamble_items: 0,
            round_items: 0,
            between_items: 0,
        },
        request_gaps: dedup(a.request_gaps.clone()),
        section_loops: dedup(a.section_loops.clone()),
        section_item_us: a.section_item_us,
        section_iters: 0,
    };
    let (configs, notes) = pool::skipped_configs(&a.config);
    let plan = PoolPlan {
        threads,
        configs,
        peers: pool::parse_peers(&a.peers)?,
        scenarios: pool::parse_scenarios(&a.scenario)?,
        sizes: pool::sizes_for(a.work_us, a.fj_item_us, base),
        oversubscribe: a.oversubscribe,
    };
    Ok((plan, notes))
}

fn cmd_pool(a: &PoolArgs) -> Result<(), String> {
    let (plan, notes) = pool_plan(a)?;
    let machine = info::Machine::detect();
    println!("{}", machine.line());
    for n in &notes {
        eprintln!("note: {n}");
    }
    let results = run_pool(&plan, a.out.quiet)?;
    print!("{}", pool::table(&results));
    for l in pool::headline(&results) {
        println!("{l}");
    }
    let report = Report {
        command: std::env::args().collect(),
        machine,
        staging: None,
        bandwidth: None,
        pool: Some(&results),
        notes: &notes,
    };
    write_outputs(&a.out, &report, "leanrt pool", &pool::charts(&results))
}

/// Runs the cells of a pool plan under a progress bar.
fn run_pool(plan: &PoolPlan, quiet: bool) -> Result<Vec<pool::CellResult>, String> {
    let pb = progress::bar(pool::cells(plan).len() as u64, "pool", quiet);
    let first = std::cell::Cell::new(true);
    let results = pool::run(plan, &|m| {
        if !first.replace(false) {
            pb.inc(1);
        }
        pb.set_message(m.to_string());
    });
    pb.finish_and_clear();
    results
}

fn cmd_bind(a: &BindArgs) -> Result<(), String> {
    let machine = info::Machine::detect();
    println!("{}", machine.line());
    if a.bandwidth {
        let sizes: Vec<u64> = a.sizes.iter().map(|mb| mb * 1_000_000).collect();
        let pb = progress::bar(2 * sizes.len() as u64, "bandwidth", a.out.quiet);
        let cells = bind::bandwidth(a.backend, &sizes, a.runs, &|m| {
            pb.set_message(m.to_string());
            pb.inc(1);
        });
        pb.finish_and_clear();
        let cells = cells?;
        print!("{}", bind::bandwidth_table(&cells));
        let report = Report {
            command: std::env::args().collect(),
            machine,
            staging: None,
            bandwidth: Some(&cells),
            pool: None,
            notes: &[],
        };
        return write_outputs(
            &a.out,
            &report,
            "leanrt bind --bandwidth",
            &bind::bandwidth_charts(&cells),
        );
    }
    let plan = BindPlan {
        windows: dedup(a.window.clone()),
        tasks: dedup(a.tasks.clone()),
        policies: dedup(a.policy.clone()),
        backend: a.backend,
        runs: a.runs,
        min_time_ms: a.min_time_ms,
        max_runs: a.max_runs,
        warmup: a.warmup,
        pin_mirror: a.pin_mirror,
    };
    if a.layout == "v2" {
        print!(
            "{}",
            bind::table_v2(&bind::run_v2(&plan, &|m| if !a.out.quiet {
                eprintln!("{m}")
            })?)
        );
        return Ok(());
    }
    let cells = run_bind(&plan, a.out.quiet)?;
    print!("{}", bind::table(&cells));
    if let Some(h) = bind::headline(&cells) {
        println!("{h}");
    }
    let report = Report {
        command: std::env::args().collect(),
        machine,
        staging: Some(&cells),
        bandwidth: None,
        pool: None,
        notes: &[],
    };
    write_outputs(&a.out, &report, "leanrt bind", &bind::charts(&cells))
}

fn run_bind(plan: &BindPlan, quiet: bool) -> Result<Vec<bind::BindCell>, String> {
    let n = (bind::pairs(plan).len() * plan.policies.len()) as u64;
    let pb = progress::bar(n, "staging", quiet);
    let first = std::cell::Cell::new(true);
    let cells = bind::run(plan, &|m| {
        if !first.replace(false) {
            pb.inc(1);
        }
        pb.set_message(m.to_string());
    });
    pb.finish_and_clear();
    cells
}

fn dedup<T: PartialEq>(v: Vec<T>) -> Vec<T> {
    let mut o: Vec<T> = Vec::with_capacity(v.len());
    for x in v {
        if !o.contains(&x) {
            o.push(x);
        }
    }
    o
}

fn cmd_bench(a: &BenchArgs) -> Result<(), String> {
    let machine = info::Machine::detect();
    println!("{}", machine.line());
    let staging = run_bind(&bench_bind_plan(a.smoke), a.out.quiet)?;
    let (pplan, notes) = pool_plan(&bench_pool_args(a))?;
    let pool = run_pool(&pplan, a.out.quiet)?;
    print!("{}", bind::table(&staging));
    print!("{}", pool::table(&pool));
    println!();
    if let Some(h) = bind::headline(&staging) {
        println!("{h}");
    }
    for l in pool::headline(&pool) {
        println!("{l}");
    }
    let report = Report {
        command: std::env::args().collect(),
        machine,
        staging: Some(&staging),
        bandwidth: None,
        pool: Some(&pool),
        notes: &notes,
    };
    let mut charts = bind::charts(&staging);
    charts.extend(pool::charts(&pool));
    write_outputs(&a.out, &report, "leanrt bench", &charts)
}

/// Staging half of `leanrt bench`: the two windows of the issue at N = 64,
/// all policies.
fn bench_bind_plan(smoke: bool) -> BindPlan {
    BindPlan {
        windows: if smoke {
            vec![16, 64]
        } else {
            vec![16384, 131072]
        },
        tasks: vec![if smoke { 8 } else { 64 }],
        policies: vec![
            Policy::FullFresh,
            Policy::Full,
            Policy::Bounded,
            Policy::Compact,
            Policy::Auto,
        ],
        backend: bind::Backend::Host,
        runs: if smoke { 2 } else { 10 },
        min_time_ms: if smoke { 0 } else { 100 },
        max_runs: 1000,
        warmup: 2,
        pin_mirror: false,
    }
}

/// Pool half of `leanrt bench`: the five configurations of ORT's spin
/// matrix and the peers, at one thread count, with short scenarios.
fn bench_pool_args(a: &BenchArgs) -> PoolArgs {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let args = PoolArgs {
        threads: vec![a.threads],
        config: strings(&[
            "default",
            "no_spin",
            "spin_1000",
            "backoff_8",
            "spin_1000_backoff_8",
        ]),
        scenario: strings(&pool::BENCH_SCENARIOS),
        peers: a.peers.clone(),
        regions: 1000,
        fj_item_us: 5.0,
        requests: 50,
        gaps: vec![1.0, 10.0],
        work_us: 500.0,
        burst_ms: 200,
        idle_ms: 1000,
        wake_reps: 20,
        duration_ms: 300,
        request_gaps: vec![],
        preamble_us: 20.0,
        rounds: 32,
        round_us: 200.0,
        between_us: 5.0,
        section_loops: vec![],
        section_item_us: 1.0,
        oversubscribe: false,
        out: a.out.clone(),
    };
    if !a.smoke {
        return args;
    }
    PoolArgs {
        regions: 5,
        fj_item_us: 1.0,
        requests: 2,
        gaps: vec![0.1],
        work_us: 20.0,
        burst_ms: 1,
        idle_ms: 1,
        wake_reps: 1,
        duration_ms: 1,
        ..args
    }
}

fn cmd_info(a: &InfoArgs) -> Result<(), String> {
    let info = info::gather()?;
    print!("{}", info::render(&info));
    if let Some(p) = &a.json {
        let s = serde_json::to_string_pretty(&info).map_err(|e| e.to_string())?;
        std::fs::write(p, s + "\n").map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    Ok(())
}

fn cmd_pool_cell(spec: &str) -> Result<(), String> {
    let spec: pool::CellSpec =
        serde_json::from_str(spec).map_err(|e| format!("bad cell spec: {e}"))?;
    let r = pool::run_cell(&spec)?;
    println!("{}", serde_json::to_string(&r).map_err(|e| e.to_string())?);
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match &cli.command {
        Command::Bench(a) => cmd_bench(a),
        Command::Bind(a) => cmd_bind(a),
        Command::Pool(a) => cmd_pool(a),
        Command::Info(a) => cmd_info(a),
        Command::PoolCell { spec } => cmd_pool_cell(spec),
        Command::Busy { threads } => pool::busy_main(*threads),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
