//! `leanrt pool`: the thread-pool benchmark. Each (peer, configuration,
//! thread count) cell runs in a child process of `leanrt` itself (hidden
//! subcommand `__pool-cell`), so that no pool of one cell can burn CPU during
//! another, getrusage figures cover one cell only, and libgomp sees the
//! OMP_WAIT_POLICY of its variant at load time.
//!
//! * `spec`      — scenarios, sizes, the runtime of a cell, the child's spec
//! * `results`   — what a cell measured
//! * `workload`  — the work kernel, its calibration, one request
//! * `scenarios` — one function per scenario (`request` and `section` have
//!   their own modules)
//! * `cell`      — one cell in this process
//! * `child`     — the parent/child protocol
//! * `parse`     — the checks behind the flags
//! * `presets`   — leanrt's configurations by name (ORT's spin presets)
//! * `table`, `request_table`, `charts` — text and SVG output (layout in
//!   `crate::format`)
//! * `peers`     — the runtimes under test (`peers::leanrt_pool` is the only
//!   place that calls leanrt's pool API)
mod cell;
mod charts;
mod child;
mod parse;
pub mod peers;
mod presets;
mod request;
mod request_table;
mod results;
mod scenarios;
mod section;
mod spec;
mod table;
mod workload;

pub use cell::run_cell;
pub use charts::charts;
pub use child::{busy_main, run_cell_in_child};
pub use parse::{check_config, check_threads, parse_scenario, skipped_configs};
pub use peers::parse_peer;
pub use presets::PRESETS;
pub use results::CellResult;
pub use spec::{CellSpec, Gap, PeerKind, RunShape, Sizes, BENCH_SCENARIOS, SCENARIOS};
pub use table::{headline, table, warnings};
pub use workload::sizes_for;

/// What `leanrt pool` runs.
#[derive(Clone, Debug)]
pub struct PoolPlan {
    pub threads: Vec<usize>,
    pub configs: Vec<String>,
    pub peers: Vec<PeerKind>,
    pub scenarios: Vec<String>,
    pub sizes: Sizes,
    /// One competing busy thread per logical core during every cell.
    pub oversubscribe: bool,
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
                oversubscribe: plan.oversubscribe,
            });
        }
        for p in &plan.peers {
            v.push(CellSpec {
                peer: p.clone(),
                threads: t,
                scenarios: plan.scenarios.clone(),
                sizes: plan.sizes.clone(),
                oversubscribe: plan.oversubscribe,
            });
        }
    }
    v
}

/// Runs every cell of the plan, each in a child process; `step` is told
/// when each starts.
pub fn run(plan: &PoolPlan, step: &dyn Fn(&str)) -> Result<Vec<CellResult>, String> {
    let mut out = Vec::new();
    for spec in cells(plan) {
        step(&format!("{} ×{}", spec.peer.label(), spec.threads));
        out.push(run_cell_in_child(&spec)?);
    }
    Ok(out)
}
