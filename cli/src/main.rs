//! `leanrt`: shows on this machine what leanrt removes.
//!
//! * `leanrt bench` — both halves with quick defaults (about a minute).
//! * `leanrt bind`  — staging: upload policies across windows and task counts.
//! * `leanrt pool`  — thread pool: ORT spin presets against rayon and OpenMP.
//! * `leanrt info`  — version, CPU facts, backends.
//!
//! `args` defines the command line, `plan` turns it into runs, `bench` holds
//! bench's presets, `report` writes `--json` and `--svg`, `format` lays out
//! every table.
mod args;
mod bench;
mod bind;
mod format;
mod info;
mod lists;
mod plan;
mod pool;
mod progress;
mod report;
mod stats;
mod svg;

use args::{BindArgs, InfoArgs, Invocation, PoolArgs};
use report::Report;
use std::process::ExitCode;

/// Why a command failed: a usage error (exit 2, as clap's own) or a
/// failure while running (exit 1).
enum Failure {
    Usage(String),
    Run(String),
}

impl From<String> for Failure {
    fn from(e: String) -> Failure {
        Failure::Run(e)
    }
}

fn cmd_pool(a: &PoolArgs) -> Result<(), Failure> {
    let (plan, notes) = plan::pool_plan(a).map_err(Failure::Usage)?;
    let machine = info::Machine::detect();
    print!("{}", machine.line());
    for n in &notes {
        eprintln!("note: {n}");
    }
    let results = plan::run_pool(&plan, a.out.quiet)?;
    print!("{}", pool::table(&results));
    println!();
    for w in pool::warnings(&results, machine.logical_cores, machine.load_average_1m) {
        print!("{w}");
    }
    for l in pool::headline(&results) {
        print!("{l}");
    }
    let report = Report {
        pool: Some(&results),
        notes: &notes,
        ..Report::new(machine)
    };
    Ok(report::write(
        &a.out,
        &report,
        "leanrt pool",
        &pool::charts(&results),
    )?)
}

fn cmd_bind(a: &BindArgs) -> Result<(), Failure> {
    if a.bandwidth {
        return Ok(cmd_bandwidth(a)?);
    }
    plan::check_bind_plan(&a.plan).map_err(Failure::Usage)?;
    let machine = info::Machine::detect();
    print!("{}", machine.line());
    if a.layout_v2 {
        let cells = plan::run_bind_v2(&a.plan, a.out.quiet)?;
        print!("{}", bind::table_v2(&cells));
        let report = Report {
            staging_v2: Some(&cells),
            ..Report::new(machine)
        };
        return Ok(report::write(
            &a.out,
            &report,
            "leanrt bind --layout v2",
            &[],
        )?);
    }
    let cells = plan::run_bind(&a.plan, a.out.quiet)?;
    print!("{}", bind::table(&cells, true));
    println!();
    if let Some(h) = bind::headline(&cells) {
        print!("{h}");
    }
    let report = Report {
        staging: Some(&cells),
        ..Report::new(machine)
    };
    Ok(report::write(
        &a.out,
        &report,
        "leanrt bind",
        &bind::charts(&cells),
    )?)
}

fn cmd_bandwidth(a: &BindArgs) -> Result<(), String> {
    let machine = info::Machine::detect();
    print!("{}", machine.line());
    let sizes: Vec<u64> = a.sizes.iter().map(|mb| mb * 1_000_000).collect();
    let progress = progress::Progress::new(2 * sizes.len() as u64, "bandwidth", a.out.quiet);
    let cells = bind::bandwidth(a.plan.backend, &sizes, a.plan.runs, &|m| progress.step(m));
    progress.finish();
    let cells = cells?;
    print!("{}", bind::bandwidth_table(&cells));
    let report = Report {
        bandwidth: Some(&cells),
        ..Report::new(machine)
    };
    report::write(
        &a.out,
        &report,
        "leanrt bind --bandwidth",
        &bind::bandwidth_charts(&cells),
    )
}

fn cmd_info(a: &InfoArgs) -> Result<(), String> {
    let info = info::gather()?;
    print!("{}", info::render(&info));
    if let Some(p) = &a.json {
        let s = serde_json::to_string_pretty(&info).map_err(|e| e.to_string())?;
        report::write_file(p, &(s + "\n"))?;
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

/// The library reads `LEANRT_POOL_FORCE_HYBRID` when it creates a pool and
/// acts on "1" only: say so when the variable holds anything else.
fn check_environment() {
    let var = leanrt::pool::FORCE_HYBRID_ENV;
    if let Some(v) = std::env::var_os(var) {
        if leanrt::pool::force_hybrid_switch(&v).is_none() {
            eprintln!(
                "warning: {var}={} is neither 0 nor 1: ignored (1 forces the hybrid-CPU \
                 parallelism)",
                v.to_string_lossy()
            );
        }
    }
}

fn main() -> ExitCode {
    let invocation = args::parse();
    let r = match &invocation {
        Invocation::Bench(a) => {
            check_environment();
            bench::run(a).map_err(Failure::Run)
        }
        Invocation::Bind(a) => cmd_bind(a),
        Invocation::Pool(a) => {
            check_environment();
            cmd_pool(a)
        }
        Invocation::Info(a) => {
            check_environment();
            cmd_info(a).map_err(Failure::Run)
        }
        Invocation::PoolCell(spec) => cmd_pool_cell(spec).map_err(Failure::Run),
        Invocation::Busy(threads) => pool::busy_main(*threads).map_err(Failure::Run),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(Failure::Run(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
