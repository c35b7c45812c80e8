//! The text tables and the headline lines.
use super::request_table::{self, label_width};
use super::results::CellResult;
use super::spec::PeerKind;
use crate::stats::Summary;

pub fn f1(v: f64) -> String {
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
    let lw = label_width(results);
    let mut s = format!(
        "\npool, overheads (µs; p50/p99; forked% = regions where a non-caller thread ran an index)\n{:<lw$} {:>3} {:>13} {:>7} {:>17} {:>7} {:>22}\n",
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
            "{:<lw$} {:>3} {:>13} {:>7} {:>17} {:>7} {:>22}\n",
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
    let has = |f: &dyn Fn(&CellResult) -> bool| results.iter().any(f);
    let overheads = has(&|r| r.fork_join_us.is_some() || !r.wake.is_empty());
    let load =
        has(&|r| !r.bursty.is_empty() || r.throughput.is_some() || r.idle_after_burst.is_some());
    let mut s = String::new();
    if overheads {
        s.push_str(&overheads_table(results, first));
    }
    if load {
        s.push_str(&load_table(results, first));
    }
    s.push_str(&request_table::wake_team_table(results));
    s.push_str(&request_table::request_table(results));
    s.push_str(&request_table::section_table(results));
    s
}

/// The load table: bursty per gap, throughput, CPU after a burst.
fn load_table(results: &[CellResult], first: &CellResult) -> String {
    let lw = label_width(results);
    let s0 = &first.spec.sizes;
    let gaps: Vec<f64> = first.bursty.iter().map(|b| b.gap_ms).collect();
    let mut s = format!(
        "\npool, load (request = {} items × {} rounds, ~{:.0} µs serial; latency µs p50/p90/p99; CPU% = process user+sys / wall; idle CPU ms = CPU time burnt in the idle period after a burst)\n{:<lw$} {:>3}",
        s0.items,
        s0.iters,
        s0.items as f64 * s0.cost_cycles / 3.0 / 1e3,
        "runtime / configuration",
        "thr"
    );
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
        s.push_str(&load_row(r, &gaps, lw));
    }
    s
}

/// One row of the load table.
fn load_row(r: &CellResult, gaps: &[f64], lw: usize) -> String {
    let mut s = format!("{:<lw$} {:>3}", r.label, r.spec.threads);
    for g in gaps {
        match r.bursty.iter().find(|b| b.gap_ms == *g) {
            Some(b) => s.push_str(&format!(
                " {:>20} {:>5.0}",
                p50_p90_p99(&b.latency_us),
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
    s
}

/// "p50/p90/p99" of a summary.
pub fn p50_p90_p99(f: &Summary) -> String {
    format!("{}/{}/{}", f1(f.p50), f1(f.p90), f1(f.p99))
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
        let (d, b) = (get("default"), get("spin_1000_backoff_8"));
        let mut parts = Vec::new();
        if let (Some(d), Some(b)) = (d, b) {
            parts.extend(against_default(d, b));
        }
        // Fork-join of the recommended configuration against the best peer.
        if let Some(mine) = b.or(d) {
            parts.extend(fork_join_vs_best_peer(results, t, mine));
        }
        if !parts.is_empty() {
            lines.push(format!("pool headline ({t} threads): {}", parts.join("; ")));
        }
    }
    lines.extend(request_table::request_headline(results));
    lines
}

/// spin_1000_backoff_8 (`b`) against default (`d`): CPU after a burst, and
/// bursty p50 at the first gap.
fn against_default(d: &CellResult, b: &CellResult) -> Vec<String> {
    let mut parts = Vec::new();
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
    parts
}

/// Fork-join p50 of `mine` against the best peer at `t` threads.
fn fork_join_vs_best_peer(results: &[CellResult], t: usize, mine: &CellResult) -> Option<String> {
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
            .filter(|r| r.spec.threads == t && !matches!(r.spec.peer, PeerKind::Leanrt { .. }))
            .filter_map(|r| pick(r).map(|v| (r.label.clone(), v)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(v), Some((pl, pv))) = (pick(mine), best_peer) {
            fj.push(format!("{name} {v:.2} vs {pv:.2} µs ({pl})"));
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
