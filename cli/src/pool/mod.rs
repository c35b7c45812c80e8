//! `leanrt pool`: the thread-pool benchmark. Each (peer, configuration,
//! thread count) cell runs in a child process of `leanrt` itself (hidden
//! subcommand `__pool-cell`), so that no pool of one cell can burn CPU during
//! another, getrusage figures cover one cell only, and libgomp sees the
//! OMP_WAIT_POLICY of its variant at load time.
//!
//! * `spec`      — scenarios, sizes, the runtime of a cell, the child's spec
//! * `results`   — what a cell measured
//! * `workload`  — the work kernel, its calibration, one request
//! * `scenarios` — one function per scenario (`request`, `section` and
//!   `concurrent` have their own modules)
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
mod concurrent;
mod concurrent_table;
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
pub use spec::{
    Arrangement, CellSpec, Concurrent, Gap, PeerKind, RunShape, Sizes, WorkKind, BENCH_SCENARIOS,
    CONCURRENT, SCENARIOS,
};
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
    /// concurrent: the caller counts (K).
    pub callers: Vec<usize>,
}

/// The runtimes of one thread count's cells, in run order: each leanrt
/// configuration followed by the other leanrt builds' (`--leanrt-libs`)
/// and ONNX Runtime's same configuration (where the ORT peer is asked for
/// and the configuration uses ORT's keys only: `ort_notes` names the
/// others), so that they sit side by side in the tables; then the other
/// peers.
fn runtimes(plan: &PoolPlan) -> Vec<PeerKind> {
    let mut v = Vec::new();
    for c in &plan.configs {
        v.push(PeerKind::Leanrt { config: c.clone() });
        v.extend(plan.peers.iter().filter_map(|p| match p {
            PeerKind::LeanrtLib { library, tag, .. } => Some(PeerKind::LeanrtLib {
                config: c.clone(),
                library: library.clone(),
                tag: tag.clone(),
            }),
            _ => None,
        }));
        v.extend(ort_runtimes(plan, c));
    }
    v.extend(
        plan.peers
            .iter()
            .filter(|p| !matches!(p, PeerKind::Ort { .. } | PeerKind::LeanrtLib { .. }))
            .cloned(),
    );
    v
}

/// ONNX Runtime's cells of configuration `config`: one per ORT library of
/// the plan (`--ort-libs`: one per version), none where the configuration
/// sets keys that are not ORT's.
fn ort_runtimes(plan: &PoolPlan, config: &str) -> Vec<PeerKind> {
    if peers::ort::skip_reason(config).is_some() {
        return vec![];
    }
    plan.peers
        .iter()
        .filter_map(|p| match p {
            PeerKind::Ort {
                library, version, ..
            } => Some(PeerKind::Ort {
                config: config.to_string(),
                library: library.clone(),
                version: version.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// The cells of a plan, in run order: per thread count, `runtimes` (for
/// the scenarios other than `concurrent`), then the concurrent cells: per
/// caller count, the baseline (no pool), leanrt's arrangements per
/// configuration, and ORT's per configuration and library.
pub fn cells(plan: &PoolPlan) -> Vec<CellSpec> {
    let single: Vec<String> = plan
        .scenarios
        .iter()
        .filter(|s| s.as_str() != CONCURRENT)
        .cloned()
        .collect();
    let cell = |peer: PeerKind, threads: usize, concurrent: Option<Concurrent>| CellSpec {
        peer,
        threads,
        scenarios: if concurrent.is_some() {
            vec![CONCURRENT.to_string()]
        } else {
            single.clone()
        },
        sizes: plan.sizes.clone(),
        oversubscribe: plan.oversubscribe,
        concurrent,
    };
    let mut v = Vec::new();
    for &t in &plan.threads {
        if !single.is_empty() {
            for p in runtimes(plan) {
                v.push(cell(p, t, None));
            }
        }
        if !plan.scenarios.iter().any(|s| s == CONCURRENT) {
            continue;
        }
        for &callers in &plan.callers {
            let at = |arrangement| {
                Some(Concurrent {
                    callers,
                    arrangement,
                })
            };
            let baseline = PeerKind::Leanrt {
                config: "default".into(),
            };
            v.push(cell(baseline, t, at(Arrangement::Serial)));
            for c in &plan.configs {
                for a in Arrangement::LEANRT {
                    v.push(cell(PeerKind::Leanrt { config: c.clone() }, t, at(a)));
                }
            }
            for c in &plan.configs {
                for o in ort_runtimes(plan, c) {
                    for a in Arrangement::ORT {
                        v.push(cell(o.clone(), t, at(a)));
                    }
                }
            }
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

/// The child processes `run` starts for the plan (a progress bar's steps).
pub fn steps(plan: &PoolPlan) -> u64 {
    cells(plan).iter().map(|s| u64::from(s.turns())).sum()
}

/// Runs every cell of the plan, each in a child process; `step` is told
/// when each starts. The concurrent cells of one caller count, and the
/// request-only cells, of one thread count, run in turns
/// (`CellSpec::turn_group`, `CellSpec::turns`): every cell once per turn,
/// with its share of the runs, the requests or the time, and each cell's
/// turns merged into one result (`CellResult::add_turn`). A machine whose
/// speed drifts during the run (a shared host) then weighs on every cell
/// alike, not on whichever ran while it was slow; and the order changes
/// from turn to turn (`turn_order`), so that no cell always runs first,
/// last, or right after the same neighbour.
pub fn run(plan: &PoolPlan, step: &dyn Fn(&str)) -> Result<Vec<CellResult>, String> {
    for n in ort_notes(plan) {
        eprintln!("note: {n}");
    }
    let cells = cells(plan);
    let mut out = Vec::with_capacity(cells.len());
    let mut rest = &cells[..];
    while let Some(first) = rest.first() {
        let same_group = |s: &CellSpec| {
            s.threads == first.threads
                && first.turn_group().is_some()
                && s.turn_group() == first.turn_group()
        };
        let group = rest.iter().take_while(|s| same_group(s)).count().max(1);
        let (now, later) = rest.split_at(group);
        rest = later;
        let turns = first.turns();
        let mut merged: Vec<CellResult> = Vec::with_capacity(now.len());
        for turn in 0..turns {
            for k in turn_order(now.len(), turn) {
                let spec = &now[k];
                let mut label = match &spec.concurrent {
                    Some(c) => format!(
                        "{} {} ×{}, {} callers",
                        spec.peer.label(),
                        c.arrangement.label(),
                        spec.threads,
                        c.callers
                    ),
                    None => format!("{} ×{}", spec.peer.label(), spec.threads),
                };
                if turns > 1 {
                    label += &format!(", turn {} of {turns}", turn + 1);
                }
                step(&label);
                let r = run_cell_in_child(&spec.turn_of(turn))?;
                if turn == 0 {
                    // Turn 0 runs the cells in order: `merged[k]` is cell k's.
                    merged.push(r);
                } else {
                    merged[k].add_turn(r)?;
                }
            }
        }
        for (r, spec) in merged.iter_mut().zip(now) {
            r.spec = spec.clone();
        }
        out.extend(merged);
    }
    Ok(out)
}

/// The order the `n` cells of a group run in at turn `turn`, in pairs of
/// turns: an even turn runs the cells in order from cell `turn mod n` on
/// (turn 0: 0, 1, …), the odd turn after it the same sequence backwards.
/// So over every two turns each cell's positions add up to `n - 1` (a
/// drift that is linear over the pair weighs on every cell alike), each
/// cell follows a different neighbour in each direction, and the first
/// cell of a pair changes from pair to pair.
fn turn_order(n: usize, turn: u32) -> impl Iterator<Item = usize> {
    let start = (turn - turn % 2) as usize % n.max(1);
    let backwards = turn % 2 == 1;
    (0..n).map(move |j| {
        let j = if backwards { n - 1 - j } else { j };
        (start + j) % n
    })
}

#[cfg(test)]
mod tests {
    use super::turn_order;

    #[test]
    fn turns_come_in_mirrored_pairs_that_balance_every_position() {
        for n in 1..=12usize {
            assert_eq!(
                turn_order(n, 0).collect::<Vec<_>>(),
                (0..n).collect::<Vec<_>>()
            );
            let mut position_sum = vec![0usize; n];
            for turn in 0..10u32 {
                let order: Vec<usize> = turn_order(n, turn).collect();
                let mut seen = order.clone();
                seen.sort_unstable();
                assert_eq!(
                    seen,
                    (0..n).collect::<Vec<_>>(),
                    "n {n} turn {turn}: {order:?}"
                );
                for (p, &k) in order.iter().enumerate() {
                    position_sum[k] += p;
                }
                if turn % 2 == 1 {
                    // After each pair, every cell sat as far from the start as any other.
                    let pairs = (turn as usize).div_ceil(2);
                    assert!(
                        position_sum.iter().all(|&s| s == pairs * (n - 1)),
                        "n {n}: {position_sum:?}"
                    );
                }
            }
            if n > 2 {
                // Pairs start from different cells.
                assert_ne!(turn_order(n, 0).next(), turn_order(n, 2).next());
            }
        }
    }
}
