//! The text tables of `leanrt pool` (overheads, wake-ups, load; the
//! request and section tables are in `request_table`), the headline and
//! the warnings that say when a figure means little on this machine.
use super::results::{CellResult, KEY_HEADERS};
use super::spec::PeerKind;
use super::{concurrent_table, request_table};
use crate::format::{f1, p50_p90_p99, p50_p99, pct, share_removed, wrap, Table};

/// The cells of one caller each (every scenario but `concurrent`).
fn single(results: &[CellResult]) -> Vec<CellResult> {
    results
        .iter()
        .filter(|r| r.spec.concurrent.is_none())
        .cloned()
        .collect()
}

/// Every table the results have figures for.
pub fn table(all: &[CellResult]) -> String {
    let single = single(all);
    let results = single.as_slice();
    let mut s = String::new();
    if results.iter().any(|r| r.fork_join_us.is_some()) {
        s.push_str(&overheads_table(results));
    }
    if results.iter().any(|r| !r.wake.is_empty()) {
        s.push_str(&wake_table(results));
    }
    if results
        .iter()
        .any(|r| !r.bursty.is_empty() || r.throughput.is_some() || r.idle_after_burst.is_some())
    {
        s.push_str(&load_table(results));
    }
    s.push_str(&request_table::request_table(results));
    s.push_str(&request_table::section_table(results));
    s.push_str(&concurrent_table::concurrent_table(all));
    s
}

fn overheads_table(results: &[CellResult]) -> String {
    let item_us = results
        .iter()
        .find_map(|r| r.fork_join_small_item_us)
        .unwrap_or(0.0);
    let mut t = Table::new("pool: fork-join overhead, µs per region", &KEY_HEADERS);
    t.group("tiny regions", &["p50/p99", "joined%"]);
    t.group(
        format!("{item_us:.0} µs per index"),
        &["overhead p50/p99", "joined%"],
    );
    for r in results {
        t.row(
            r.keys(),
            vec![
                vec![
                    p50_p99(r.fork_join_us.as_ref()),
                    pct(r.fork_join_helped_pct),
                ],
                vec![
                    p50_p99(r.fork_join_small_overhead_us.as_ref()),
                    pct(r.fork_join_small_helped_pct),
                ],
            ],
            None,
        );
    }
    t.legend(
        "tiny = a region of one empty index per thread; µs per index = one index of that much \
         work per thread, overhead = the region's time minus one index's; joined% = regions in \
         which a thread other than the caller ran an index (leanrt's caller takes part, as \
         ORT's does, and may finish a tiny region alone)",
    );
    t.render()
}

fn wake_table(results: &[CellResult]) -> String {
    let has_team = results
        .iter()
        .any(|r| r.wake.iter().any(|w| w.team_us.n > 0));
    let mut t = Table::new(
        "pool: waking up after 0.1 / 1 / 50 ms idle, µs (p50 for each idle period)",
        &KEY_HEADERS,
    );
    t.group("Schedule'd task", &["0.1/1/50 ms"]);
    if has_team {
        t.group("region: first helper", &["0.1/1/50 ms"]);
        t.group("region: whole team", &["0.1/1/50 ms", "missed"]);
    }
    for r in results {
        let col = |f: &dyn Fn(&super::results::Wake) -> f64| {
            let v: Vec<String> = r.wake.iter().map(|w| f1(f(w))).collect();
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join("/")
            }
        };
        let missed: u32 = r.wake.iter().map(|w| w.team_missed).sum();
        let mut cells = vec![vec![col(&|w| w.latency_us.p50)]];
        if has_team {
            cells.push(vec![col(&|w| w.first_helper_us.p50)]);
            cells.push(vec![col(&|w| w.team_us.p50), missed.to_string()]);
        }
        t.row(r.keys(), cells, None);
    }
    t.legend(
        "Schedule'd task = one task handed to the workers: from the submission to its start \
         (one awake worker suffices). region = one index per thread, each waiting for the \
         others: to the first index on a thread other than the caller, and to every thread \
         running; missed = probes without the whole team within 50 ms. The two measure \
         different things and may differ tenfold.",
    );
    t.render()
}

fn load_table(results: &[CellResult]) -> String {
    let first = &results[0];
    let s0 = &first.spec.sizes;
    let gaps: Vec<f64> = results
        .iter()
        .find(|r| !r.bursty.is_empty())
        .map_or(vec![], |r| r.bursty.iter().map(|b| b.gap_ms).collect());
    let idle_ms = results
        .iter()
        .find_map(|r| r.idle_after_burst.as_ref().map(|i| i.idle_ms))
        .unwrap_or(s0.idle_ms);
    let mut t = Table::new(
        "pool: load (request latency µs p50/p90/p99; CPU% = process CPU / wall time)",
        &KEY_HEADERS,
    );
    for g in &gaps {
        t.group(format!("bursty, {g} ms gaps"), &["p50/p90/p99", "CPU%"]);
    }
    t.group("after a burst", &["idle CPU ms"]);
    t.group("throughput", &["req/s", "CPU%"]);
    for r in results {
        let mut cells: Vec<Vec<String>> = gaps
            .iter()
            .map(|g| match r.bursty.iter().find(|b| b.gap_ms == *g) {
                Some(b) => vec![p50_p90_p99(&b.latency_us), format!("{:.0}", b.cpu_pct)],
                None => vec!["-".into(), "-".into()],
            })
            .collect();
        cells.push(vec![r
            .idle_after_burst
            .as_ref()
            .map_or("-".into(), |i| format!("{:.2}", i.cpu_s * 1e3))]);
        cells.push(match &r.throughput {
            Some(x) => vec![
                format!("{:.0}", x.requests_per_s),
                format!("{:.0}", x.cpu_pct),
            ],
            None => vec!["-".into(), "-".into()],
        });
        t.row(r.keys(), cells, None);
    }
    t.legend(format!(
        "request = a parallel loop of {} indices (~{:.0} µs of serial work); bursty = requests \
         with a sleep between them; CPU% = 100 per busy core; idle CPU ms = CPU time burnt in \
         the {idle_ms} ms after a burst of back-to-back requests (spinning workers); throughput \
         = back-to-back requests",
        s0.items,
        s0.items as f64 * s0.cost_cycles / 3.0 / 1e3,
    ));
    t.render()
}

/// Requests in which helpers joined, between these shares, make a p50
/// that flips between the team's time and the caller's alone.
const MIXED_JOINED_PCT: (f64, f64) = (10.0, 90.0);

/// Plain warnings where this machine cannot give the pool figures a
/// meaning: more threads than cores, a loaded machine, helpers that
/// joined only some requests.
pub fn warnings(results: &[CellResult], logical_cores: usize, load_1m: f64) -> Vec<String> {
    let mut out = Vec::new();
    let max_threads = results.iter().map(|r| r.spec.threads).max().unwrap_or(0);
    if max_threads > logical_cores {
        out.push(format!(
            "{max_threads} threads on {logical_cores} logical cores: the pool figures \
             measure the operating system's scheduler as much as the pool"
        ));
    }
    if load_1m.is_finite() && load_1m >= logical_cores as f64 {
        out.push(format!(
            "the machine was loaded ({load_1m:.2} on {logical_cores} logical cores) \
             when the run started: other work skews every figure; rerun on a quiet machine"
        ));
    }
    let mixed: Vec<String> = results
        .iter()
        .filter_map(|r| {
            let b = r.bursty.first()?;
            let j = b.joined_pct?;
            (j > MIXED_JOINED_PCT.0 && j < MIXED_JOINED_PCT.1)
                .then(|| format!("{} {j:.0}%", r.label))
        })
        .collect();
    if !mixed.is_empty() {
        out.push(format!(
            "helpers joined only some of the bursty requests ({}): their p50 is the \
             team's time or the caller's alone, whichever won this run, so latency ratios are \
             left out; too few free cores for the thread count",
            mixed.join(", ")
        ));
    }
    out.iter().map(|w| wrap("warning: ", w)).collect()
}

/// The headline, per thread count: what spin_1000_backoff_8 removes
/// against ORT's default (CPU after a burst, bursty p50 where it means
/// something) and leanrt's fork-join against the best peer; then the
/// request headline. Each entry is one or more lines within the width.
pub fn headline(all: &[CellResult]) -> Vec<String> {
    let single = single(all);
    let results = single.as_slice();
    let mut lines = Vec::new();
    let mut threads: Vec<usize> = results.iter().map(|r| r.spec.threads).collect();
    threads = crate::lists::dedup(threads);
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
        // ORT's default spin as ORT spins it, where the run has it; else
        // leanrt's default (whose budget adapts: POOL.md).
        let (d, b) = (
            get("legacy_spin").or_else(|| get("default")),
            get("spin_1000_backoff_8"),
        );
        let mut parts = Vec::new();
        if let (Some(d), Some(b)) = (d, b) {
            parts.extend(against_default(d, b));
        }
        if let Some(mine) = b.or(d) {
            parts.extend(fork_join_vs_best_peer(results, t, mine));
        }
        if !parts.is_empty() {
            lines.push(wrap(
                &format!("pool headline ({t} threads): "),
                &(parts.join("; ") + "."),
            ));
        }
    }
    lines.extend(request_table::request_headline(results));
    lines.extend(concurrent_table::concurrent_headline(all));
    lines
}

/// spin_1000_backoff_8 (`b`) against `d`: legacy_spin (ORT's default
/// spin) or default.
fn against_default(d: &CellResult, b: &CellResult) -> Vec<String> {
    let mut parts = Vec::new();
    let dname = match &d.spec.peer {
        PeerKind::Leanrt { config } if config == "legacy_spin" => "ORT's default spin",
        _ => "leanrt's default",
    };
    if let (Some(di), Some(bi)) = (&d.idle_after_burst, &b.idle_after_burst) {
        parts.push(if di.cpu_s >= 0.001 {
            format!(
                "spin_1000_backoff_8 removes {} of the CPU {dname} burns in the {} ms \
                 after a burst ({:.2} → {:.2} ms)",
                share_removed(di.cpu_s, bi.cpu_s),
                bi.idle_ms,
                di.cpu_s * 1e3,
                bi.cpu_s * 1e3,
            )
        } else {
            format!(
                "after a burst, spin_1000_backoff_8 burns {:.2} ms of CPU in {} ms, {dname} \
                 {:.2} ms (no ratio: under 1 ms)",
                bi.cpu_s * 1e3,
                bi.idle_ms,
                di.cpu_s * 1e3,
            )
        });
    }
    if let (Some(db), Some(bb)) = (d.bursty.first(), b.bursty.first()) {
        let mixed =
            |j: Option<f64>| j.is_some_and(|j| j > MIXED_JOINED_PCT.0 && j < MIXED_JOINED_PCT.1);
        if mixed(db.joined_pct) || mixed(bb.joined_pct) {
            parts.push(format!(
                "bursty p50 ({} ms gaps): no ratio, helpers joined only some requests",
                bb.gap_ms
            ));
        } else if db.latency_us.p50 > 0.0 {
            parts.push(format!(
                "its bursty p50 ({} ms gaps) is {:.2}× {dname}'s",
                bb.gap_ms,
                bb.latency_us.p50 / db.latency_us.p50
            ));
        }
    }
    parts
}

/// Fork-join p50 of `mine` against the best peer at `t` threads.
fn fork_join_vs_best_peer(results: &[CellResult], t: usize, mine: &CellResult) -> Option<String> {
    type Pick = fn(&CellResult) -> Option<f64>;
    // Each variant, and the share of its regions in which a helper joined.
    let variants: [(&str, Pick, Option<f64>); 2] = [
        (
            "tiny",
            |r| r.fork_join_us.as_ref().map(|f| f.p50),
            mine.fork_join_helped_pct,
        ),
        (
            "small-index overhead",
            |r| r.fork_join_small_overhead_us.as_ref().map(|f| f.p50),
            mine.fork_join_small_helped_pct,
        ),
    ];
    let mut fj = Vec::new();
    for (name, pick, joined) in variants {
        let best_peer = results
            .iter()
            .filter(|r| r.spec.threads == t && !matches!(r.spec.peer, PeerKind::Leanrt { .. }))
            .filter_map(|r| pick(r).map(|v| (r.label.clone(), v)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(v), Some((pl, pv))) = (pick(mine), best_peer) {
            // A region leanrt's caller finished alone is not a team's time.
            let alone = if joined.is_some_and(|j| j < MIXED_JOINED_PCT.0) {
                ", leanrt's caller alone"
            } else {
                ""
            };
            fj.push(format!("{name} {v:.2} vs {pv:.2} µs ({pl}{alone})"));
        }
    }
    (!fj.is_empty()).then(|| {
        format!(
            "fork-join p50 of {} vs the best peer: {}",
            mine.label,
            fj.join(", ")
        )
    })
}
