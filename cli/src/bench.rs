//! `leanrt bench`: both halves with quick sizes. The presets here say only
//! where bench differs from `leanrt bind` and `leanrt pool`; every other
//! value is theirs (`args`).
use crate::args::{self, BenchArgs, PoolArgs};
use crate::bind::{self, BindPlan, Policy};
use crate::info::Machine;
use crate::plan;
use crate::report::{self, Report};

/// Staging half: the two windows of the reference's rings at N = 64, every
/// policy.
pub fn bind_plan(smoke: bool) -> BindPlan {
    BindPlan {
        windows: if smoke {
            vec![16, 64]
        } else {
            vec![16384, 131072]
        },
        tasks: vec![if smoke { 8 } else { 64 }],
        policies: Policy::ALL.to_vec(),
        backend: bind::Backend::Host,
        runs: if smoke { 2 } else { 10 },
        min_time_ms: if smoke { 0 } else { 100 },
        max_runs: 1000,
        warmup: 2,
        pin_mirror: false,
    }
}

/// Pool half: `leanrt pool`'s configurations at one thread count, with
/// the scenarios and sizes of a short run.
pub fn pool_args(a: &BenchArgs) -> PoolArgs {
    let args = PoolArgs {
        threads: vec![a.threads],
        scenario: crate::pool::BENCH_SCENARIOS
            .iter()
            .map(|s| s.to_string())
            .collect(),
        peers: a.peers.clone(),
        regions: 1000,
        requests: 50,
        wake_reps: 20,
        duration_ms: 300,
        out: a.out.clone(),
        ..args::pool_defaults()
    };
    if !a.smoke {
        return args;
    }
    PoolArgs {
        regions: 5,
        fj_item_us: 1.0,
        requests: 2,
        gaps_ms: vec![0.1],
        work_us: 20.0,
        burst_ms: 1,
        idle_ms: 1,
        wake_reps: 1,
        duration_ms: 1,
        ..args
    }
}

/// Runs both halves and prints their tables, warnings and headlines.
pub fn run(a: &BenchArgs) -> Result<(), String> {
    let machine = Machine::detect();
    print!("{}", machine.line());
    let staging = plan::run_bind(&bind_plan(a.smoke), a.out.quiet)?;
    let (pplan, notes) = plan::pool_plan(&pool_args(a))?;
    let pool = plan::run_pool(&pplan, a.out.quiet)?;
    print!("{}", bind::table(&staging, false));
    print!("{}", crate::pool::table(&pool));
    println!();
    for n in &notes {
        println!("note: {n}");
    }
    for w in crate::pool::warnings(&pool, machine.logical_cores, machine.load_average_1m) {
        print!("{w}");
    }
    if let Some(h) = bind::headline(&staging) {
        print!("{h}");
    }
    for l in crate::pool::headline(&pool) {
        print!("{l}");
    }
    println!(
        "Raw figures: --json FILE; charts: --svg FILE; each column: the legend under its table."
    );
    let mut charts = bind::charts(&staging);
    charts.extend(crate::pool::charts(&pool));
    let report = Report {
        staging: Some(&staging),
        pool: Some(&pool),
        notes: &notes,
        ..Report::new(machine)
    };
    report::write(&a.out, &report, "leanrt bench", &charts)
}
