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

/// The runtimes of one thread count's cells, in run order: each leanrt
/// configuration followed by ONNX Runtime's same configuration (where the
/// ORT peer is asked for and the configuration uses ORT's keys only:
/// `ort_notes` names the others), so that the two sit side by side in the
/// tables; then the other peers.
fn runtimes(plan: &PoolPlan) -> Vec<PeerKind> {
    let ort = plan.peers.iter().find_map(|p| match p {
        PeerKind::Ort {
            library, version, ..
        } => Some((library, version)),
        _ => None,
    });
    let mut v = Vec::new();
    for c in &plan.configs {
        v.push(PeerKind::Leanrt { config: c.clone() });
        if let Some((library, version)) = ort.filter(|_| peers::ort::skip_reason(c).is_none()) {
            v.push(PeerKind::Ort {
                config: c.clone(),
                library: library.clone(),
                version: version.clone(),
            });
        }
    }
    v.extend(
        plan.peers
            .iter()
            .filter(|p| !matches!(p, PeerKind::Ort { .. }))
            .cloned(),
    );
    v
}

/// The cells of a plan, in run order: per thread count, `runtimes`.
pub fn cells(plan: &PoolPlan) -> Vec<CellSpec> {
    let mut v = Vec::new();
    for &t in &plan.threads {
        for p in runtimes(plan) {
            v.push(CellSpec {
                peer: p,
                threads: t,
                scenarios: plan.scenarios.clone(),
                sizes: plan.sizes.clone(),
                oversubscribe: plan.oversubscribe,
            });
        }
    }
    v
}

/// Why configurations of the plan do not run on the ORT peer.
fn ort_notes(plan: &PoolPlan) -> Vec<String> {
    if !plan.peers.iter().any(|p| matches!(p, PeerKind::Ort { .. })) {
        return vec![];
    }
    plan.configs
        .iter()
        .filter_map(|c| peers::ort::skip_reason(c))
        .collect()
}

/// Runs every cell of the plan, each in a child process; `step` is told
/// when each starts.
pub fn run(plan: &PoolPlan, step: &dyn Fn(&str)) -> Result<Vec<CellResult>, String> {
    for n in ort_notes(plan) {
        eprintln!("note: {n}");
    }
    let mut out = Vec::new();
    for spec in cells(plan) {
        step(&format!("{} ×{}", spec.peer.label(), spec.threads));
        out.push(run_cell_in_child(&spec)?);
    }
    Ok(out)
}
