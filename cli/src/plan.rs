//! From parsed arguments to what runs, and the runs themselves under one
//! progress display.
use crate::args::PoolArgs;
use crate::bind::{self, BindPlan};
use crate::pool::{self, PoolPlan, Sizes};
use crate::progress::Progress;

/// Checks the plan of `leanrt bind` (not `--bandwidth`); an error is a
/// usage error.
pub fn check_bind_plan(plan: &BindPlan) -> Result<(), String> {
    if bind::pairs(plan).is_empty() {
        return Err("no task count fits in any window (--tasks must be <= --window)".into());
    }
    Ok(())
}

/// The plan of `leanrt pool`, and notes on the configurations skipped.
pub fn pool_plan(a: &PoolArgs) -> Result<(PoolPlan, Vec<String>), String> {
    let base = Sizes {
        regions: a.regions,
        fj_iters: 0,
        requests: a.requests,
        gaps_ms: a.gaps_ms.clone(),
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
        request_gaps: a.request_gaps.clone(),
        section_loops: a.section_loops.clone(),
        section_item_us: a.section_item_us,
        section_iters: 0,
        work: a.work,
        concurrent_gaps_ms: a.concurrent_gaps.clone(),
        concurrent_runs: a.runs,
        concurrent_ms: a.concurrent_ms,
        concurrent_slices: a.concurrent_slices,
        request_slices: a.request_slices,
    };
    let (configs, notes) = pool::skipped_configs(&a.config);
    let mut peers = Vec::new();
    for p in &a.peers {
        match (p, a.ort_libs.is_empty()) {
            // --ort-libs: one ORT peer per library, each checked here.
            (pool::PeerKind::Ort { config, .. }, false) => {
                for lib in &a.ort_libs {
                    let l =
                        pool::peers::ort::library_at(lib).map_err(|e| format!("--ort-libs {e}"))?;
                    peers.push(pool::PeerKind::Ort {
                        config: config.clone(),
                        library: l.path.to_string_lossy().into_owned(),
                        version: l.version,
                    });
                }
            }
            _ => match pool::peers::available(p) {
                Ok(p) => peers.push(p),
                Err(why) => eprintln!("warning: {why}"),
            },
        }
    }
    if !a.leanrt_libs.is_empty() && a.scenario.iter().all(|s| s == pool::CONCURRENT) {
        return Err(
            "--leanrt-libs runs beside the single-caller scenarios, not the concurrent one".into(),
        );
    }
    peers.extend(leanrt_libs(&a.leanrt_libs)?);
    if !a.ort_libs.is_empty()
        && !a
            .peers
            .iter()
            .any(|p| matches!(p, pool::PeerKind::Ort { .. }))
    {
        return Err("--ort-libs is for the ort peer: add --peers ort".into());
    }
    if configs.is_empty() && peers.is_empty() {
        return Err("nothing to run: no configuration and no peer left".into());
    }
    let plan = PoolPlan {
        threads: a.threads.clone(),
        configs,
        peers,
        scenarios: a.scenario.clone(),
        sizes: pool::sizes_for(a.work_us, a.fj_item_us, base),
        oversubscribe: a.oversubscribe,
        callers: a.callers.clone(),
    };
    Ok((plan, notes))
}

/// The peers of `--leanrt-libs` (`TAG=PATH` or `PATH`, tagged `libN` by
/// position), each library loaded and checked here, with an empty
/// configuration (`pool::cells` gives each its configurations).
fn leanrt_libs(items: &[String]) -> Result<Vec<pool::PeerKind>, String> {
    let mut out: Vec<pool::PeerKind> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let (tag, path) = match item.split_once('=') {
            Some((t, p)) => (t.trim().to_string(), p.trim()),
            None => (format!("lib{}", i + 1), item.trim()),
        };
        if tag.is_empty() || tag.contains(char::is_whitespace) {
            return Err(format!(
                "--leanrt-libs {item}: the tag before '=' must be a word"
            ));
        }
        if out
            .iter()
            .any(|p| matches!(p, pool::PeerKind::LeanrtLib { tag: t, .. } if *t == tag))
        {
            return Err(format!("--leanrt-libs: tag '{tag}' given twice"));
        }
        let library = std::fs::canonicalize(path)
            .map_err(|e| format!("--leanrt-libs {path}: {e}"))?
            .to_string_lossy()
            .into_owned();
        pool::peers::leanrt_lib::check(&library).map_err(|e| format!("--leanrt-libs {e}"))?;
        out.push(pool::PeerKind::LeanrtLib {
            config: String::new(),
            library,
            tag,
        });
    }
    Ok(out)
}

/// Runs the cells of a pool plan, each in a child process.
pub fn run_pool(plan: &PoolPlan, quiet: bool) -> Result<Vec<pool::CellResult>, String> {
    let progress = Progress::new(pool::steps(plan), "pool", quiet);
    let results = pool::run(plan, &|m| progress.step(m));
    progress.finish();
    results
}

/// Runs the cells of a staging plan.
pub fn run_bind(plan: &BindPlan, quiet: bool) -> Result<Vec<bind::BindCell>, String> {
    let n = (bind::pairs(plan).len() * plan.policies.len()) as u64;
    let progress = Progress::new(n, "staging", quiet);
    let cells = bind::run(plan, &|m| progress.step(m));
    progress.finish();
    cells
}

/// Runs the cells of a staging plan for layout v2 (both paths per cell).
pub fn run_bind_v2(plan: &BindPlan, quiet: bool) -> Result<Vec<bind::V2Cell>, String> {
    let progress = Progress::new(2 * bind::pairs(plan).len() as u64, "staging v2", quiet);
    let cells = bind::run_v2(plan, &|m| progress.step(m));
    progress.finish();
    cells
}
