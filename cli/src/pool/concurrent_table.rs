//! Text output of the concurrent scenario: the table (one row per caller
//! count and arrangement, ratios to the baseline of the same caller count
//! and gap) and its headline (leanrt's default against the baseline and
//! against the best ONNX Runtime arrangement).
use super::results::{CellResult, ConcurrentRun};
use super::spec::{Arrangement, Concurrent, PeerKind};
use crate::format::{f1, wrap, Table};

/// The concurrent cells of `results`.
fn cells(results: &[CellResult]) -> impl Iterator<Item = (&CellResult, Concurrent)> {
    results
        .iter()
        .filter_map(|r| r.spec.concurrent.map(|c| (r, c)))
}

/// A row's runtime label: the baseline has none.
fn label(r: &CellResult, c: Concurrent) -> String {
    match c.arrangement {
        Arrangement::Serial => "one thread per caller".into(),
        _ => r.label.clone(),
    }
}

/// The baseline's figures at `callers` and `gap_ms` (same run).
fn baseline(
    results: &[CellResult],
    threads: usize,
    callers: usize,
    gap_ms: f64,
) -> Option<&ConcurrentRun> {
    cells(results)
        .find(|(r, c)| {
            c.arrangement == Arrangement::Serial
                && c.callers == callers
                && r.spec.threads == threads
        })
        .and_then(|(r, _)| r.concurrent.iter().find(|q| q.gap_ms == gap_ms))
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}×", a / b)
    } else {
        "-".into()
    }
}

fn gap_label(gap_ms: f64) -> String {
    if gap_ms > 0.0 {
        format!("gap {gap_ms} ms")
    } else {
        "back to back".into()
    }
}

/// The concurrent table (only where some cell ran the scenario).
pub fn concurrent_table(results: &[CellResult]) -> String {
    let Some((first, _)) = cells(results).next() else {
        return String::new();
    };
    let s = &first.spec.sizes;
    let gaps: Vec<f64> = first.concurrent.iter().map(|q| q.gap_ms).collect();
    let mut t = Table::new(
        format!(
            "pool: concurrent callers, {} work (runs/s; ×base = throughput ÷ one thread per \
             caller's; latency µs; CPU ms per run, inside + between runs)",
            s.work.name()
        ),
        &["runtime / configuration", "arrangement", "thr", "K"],
    );
    t.left_keys(&[true, true, false, false]);
    for g in &gaps {
        t.group(gap_label(*g), &["runs/s", "×base", "p50", "p99", "CPU/run"]);
    }
    for (r, c) in cells(results) {
        let cells = gaps
            .iter()
            .map(|g| match r.concurrent.iter().find(|q| q.gap_ms == *g) {
                Some(q) => vec![
                    format!("{:.0}", q.runs_per_s),
                    baseline(results, r.spec.threads, c.callers, *g)
                        .map_or("-".into(), |b| ratio(q.runs_per_s, b.runs_per_s)),
                    f1(q.latency_us.p50),
                    f1(q.latency_us.p99),
                    format!("{:.2}", q.cpu_per_run_ms()),
                ],
                None => vec!["-".into(); 5],
            })
            .collect();
        let threads = match c.arrangement {
            Arrangement::Serial | Arrangement::OneThread => "1".to_string(),
            _ => r.spec.threads.to_string(),
        };
        t.row(
            vec![
                label(r, c),
                c.arrangement.label().into(),
                threads,
                c.callers.to_string(),
            ],
            cells,
            None,
        );
    }
    let run = &s.run;
    t.legend(format!(
        "K request threads (callers) in one process, each running inference runs one after \
         another: {} µs serial, then {} rounds of {} µs of work split over {} indices with {} µs \
         serial between rounds; {}; runs/s over the wall time from the moment every caller \
         starts to the moment the last is done; CPU/run = the process's CPU (every thread) over \
         that time ÷ runs",
        run.preamble_us,
        run.rounds,
        run.round_us,
        run.round_items,
        run.between_us,
        {
            let per = if s.concurrent_runs > 0 {
                format!("{} runs per caller and gap", s.concurrent_runs)
            } else {
                format!("each caller runs for {} ms per gap", s.concurrent_ms)
            };
            match s.concurrent_turns() {
                1 => per,
                n => format!(
                    "{per}, in {n} turns (every cell of a caller count once per turn, the order \
                     mirrored every other turn; results merged)"
                ),
            }
        },
    ));
    t.legend(
        "arrangements: shared = one pool (ORT: one session) for every caller; per caller = a \
         pool (ORT: a session with its own intra-op pool) per caller; global pools = ORT \
         sessions on the environment's global thread pools (DisablePerSessionThreads); 1 thread \
         each = ORT sessions with intra_op_num_threads=1; no pool = the baseline, the run on \
         each caller alone",
    );
    t.legend(format!(
        "work: {}",
        match s.work {
            super::spec::WorkKind::Spin => "calibrated spin (no memory traffic)".to_string(),
            super::spec::WorkKind::Sgemm => format!(
                "one {tile}×{tile} SGEMM tile per index ({m}×{d} · {d}×{n}, f32) on the running \
                 thread's own buffers; ORT runs the same kernel code in its custom op",
                tile = super::workload::GEMM_TILE,
                m = super::workload::GEMM_M,
                n = super::workload::GEMM_N,
                d = super::workload::GEMM_DEPTH
            ),
        }
    ));
    t.render()
}

/// Per thread count, caller count and gap, and per leanrt configuration
/// and arrangement: throughput against the baseline and against the best
/// ONNX Runtime arrangement (the highest throughput among ORT's rows), and
/// p99 against that one's.
pub fn concurrent_headline(results: &[CellResult]) -> Vec<String> {
    let mut lines = Vec::new();
    for (r, c) in cells(results) {
        if !matches!(r.spec.peer, PeerKind::Leanrt { .. }) || c.arrangement == Arrangement::Serial {
            continue;
        }
        let parts: Vec<String> = r
            .concurrent
            .iter()
            .map(|q| {
                let mut p = format!(
                    "{}: {}",
                    gap_label(q.gap_ms),
                    baseline(results, r.spec.threads, c.callers, q.gap_ms).map_or(
                        "no baseline".into(),
                        |b| format!("{} baseline", ratio(q.runs_per_s, b.runs_per_s))
                    )
                );
                let best_ort = cells(results)
                    .filter(|(o, oc)| {
                        matches!(o.spec.peer, PeerKind::Ort { .. })
                            && oc.callers == c.callers
                            && o.spec.threads == r.spec.threads
                    })
                    .filter_map(|(o, oc)| {
                        let x = o.concurrent.iter().find(|x| x.gap_ms == q.gap_ms)?;
                        Some((o, oc, x))
                    })
                    .max_by(|a, b| a.2.runs_per_s.total_cmp(&b.2.runs_per_s));
                if let Some((o, oc, x)) = best_ort {
                    p.push_str(&format!(
                        ", {} best ORT ({} {}), p99 {}",
                        ratio(q.runs_per_s, x.runs_per_s),
                        o.label,
                        oc.arrangement.label(),
                        ratio(q.latency_us.p99, x.latency_us.p99)
                    ));
                }
                p.push_str(&format!(", CPU/run {:.2} ms", q.cpu_per_run_ms()));
                p
            })
            .collect();
        lines.push(wrap(
            &format!(
                "concurrent headline ({} threads, K={}): ",
                r.spec.threads, c.callers
            ),
            &format!(
                "{} {}: throughput {}",
                r.label,
                c.arrangement.label(),
                parts.join("; ")
            ),
        ));
    }
    lines
}
