//! Text output of the request and section scenarios and of the team
//! wake-up probes.
use super::results::{CellResult, RequestRun};
use super::spec::{Gap, PeerKind};
use super::table::{f1, p50_p90_p99};

/// Width of the label column: 27, or the longest label.
pub fn label_width(results: &[CellResult]) -> usize {
    results
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(0)
        .max(27)
}

/// The team wake-up table (only where some cell has team probes).
pub fn wake_team_table(results: &[CellResult]) -> String {
    if !results
        .iter()
        .any(|r| r.wake.iter().any(|w| w.team_us.n > 0))
    {
        return String::new();
    }
    let lw = label_width(results);
    let mut s = format!(
        "\npool, waking the team after 0.1/1/50 ms idle (µs p50: first helper running / whole team running; missed = probes without the whole team within 50 ms)\n{:<lw$} {:>3} {:>24} {:>24} {:>7}\n",
        "runtime / configuration", "thr", "first helper", "whole team", "missed"
    );
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
        s.push_str(&format!(
            "{:<lw$} {:>3} {:>24} {:>24} {:>7}\n",
            r.label,
            r.spec.threads,
            col(&|w| w.first_helper_us.p50),
            col(&|w| w.team_us.p50),
            missed
        ));
    }
    s
}

/// The request table (only where some cell ran the scenario).
pub fn request_table(results: &[CellResult]) -> String {
    let Some(first) = results.iter().find(|r| !r.request.is_empty()) else {
        return String::new();
    };
    let lw = label_width(results);
    let run = &first.spec.sizes.run;
    let gaps: Vec<Gap> = first.request.iter().map(|q| q.gap).collect();
    let mut s = format!(
        "\npool, requests{} (run = {} µs serial, then {} rounds of {} µs serial work split over {} indices, {} µs serial between rounds; latency µs p50/p90/p99; run%/gap% = process CPU over wall inside runs / between runs; hints = enable/disable spinning around each run; serial = the run on the caller alone)\n{:<lw$} {:>3} {:>5}",
        if first.spec.oversubscribe { ", oversubscribed" } else { "" },
        run.preamble_us,
        run.rounds,
        run.round_us,
        run.round_items,
        run.between_us,
        "runtime / configuration",
        "thr",
        "hints"
    );
    for g in &gaps {
        s.push_str(&format!(
            " {:>22} {:>5} {:>5}",
            format!("gap {}", g.label()),
            "run%",
            "gap%"
        ));
    }
    s.push_str(&format!(" {:>10}\n", "serial p50"));
    for r in results {
        s.push_str(&request_row(r, &gaps, lw));
    }
    s
}

fn request_row(r: &CellResult, gaps: &[Gap], lw: usize) -> String {
    let hints = r.request.first().is_some_and(|q| q.hints);
    let mut s = format!(
        "{:<lw$} {:>3} {:>5}",
        r.label,
        r.spec.threads,
        if hints { "yes" } else { "no" }
    );
    for g in gaps {
        match r.request.iter().find(|q| q.gap == *g) {
            Some(q) => s.push_str(&format!(
                " {:>22} {:>5.0} {:>5.1}",
                p50_p90_p99(&q.latency_us),
                q.run_cpu_pct,
                q.gap_cpu_pct
            )),
            None => s.push_str(&format!(" {:>22} {:>5} {:>5}", "-", "-", "-")),
        }
    }
    let serial = r
        .request_serial_us
        .as_ref()
        .map_or("-".into(), |v| f1(v.p50));
    s.push_str(&format!(" {serial:>10}\n"));
    s
}

/// Per thread count and leanrt configuration other than default: its
/// request p50 and CPU between runs against ORT's default policy.
pub fn request_headline(results: &[CellResult]) -> Vec<String> {
    let mut lines = Vec::new();
    let is_default = |r: &CellResult| {
        r.spec.peer
            == PeerKind::Leanrt {
                config: "default".into(),
            }
    };
    for d in results
        .iter()
        .filter(|r| is_default(r) && !r.request.is_empty())
    {
        let t = d.spec.threads;
        let others = results.iter().filter(|r| {
            r.spec.threads == t
                && !is_default(r)
                && matches!(r.spec.peer, PeerKind::Leanrt { .. })
                && !r.request.is_empty()
        });
        for r in others {
            let parts: Vec<String> = r
                .request
                .iter()
                .filter_map(|q| Some((q, d.request.iter().find(|x| x.gap == q.gap)?)))
                .map(|(q, base)| against(q, base))
                .collect();
            lines.push(format!(
                "request headline ({t} threads), {} vs default: {}",
                r.label,
                parts.join("; ")
            ));
        }
    }
    lines
}

fn against(q: &RequestRun, base: &RequestRun) -> String {
    let ratio = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.2}×", a / b)
        } else {
            "-".into()
        }
    };
    format!(
        "gap {}: p50 {}, CPU between runs {}",
        q.gap.label(),
        ratio(q.latency_us.p50, base.latency_us.p50),
        ratio(q.gap_cpu_s, base.gap_cpu_s)
    )
}

/// The section table (only where the scenario ran).
pub fn section_table(results: &[CellResult]) -> String {
    let Some(first) = results
        .iter()
        .find(|r| !r.section.is_empty() || r.section_note.is_some())
    else {
        return String::new();
    };
    let ks: Vec<u32> = results
        .iter()
        .find(|r| !r.section.is_empty())
        .map_or(vec![], |r| r.section.iter().map(|x| x.loops).collect());
    let lw = label_width(results);
    let mut s = format!(
        "\npool, parallel sections (µs per loop, p50, loops of one {} µs index per thread: k separate loops / k loops in one section; ratio = separate / in section; team% = sections that got a team)\n{:<lw$} {:>3}",
        first.spec.sizes.section_item_us, "runtime / configuration", "thr"
    );
    for k in &ks {
        s.push_str(&format!(
            " {:>18} {:>6} {:>5}",
            format!("k={k}"),
            "ratio",
            "team%"
        ));
    }
    s.push('\n');
    for r in results {
        s.push_str(&format!("{:<lw$} {:>3}", r.label, r.spec.threads));
        for k in &ks {
            match r.section.iter().find(|x| x.loops == *k) {
                Some(x) => s.push_str(&format!(
                    " {:>18} {:>6} {:>5.0}",
                    format!("{}/{}", f1(x.separate_us.p50), f1(x.in_section_us.p50)),
                    if x.in_section_us.p50 > 0.0 {
                        format!("{:.2}", x.separate_us.p50 / x.in_section_us.p50)
                    } else {
                        "-".into()
                    },
                    x.attached_pct
                )),
                None => s.push_str(&format!(" {:>18} {:>6} {:>5}", "-", "-", "-")),
            }
        }
        if let Some(n) = &r.section_note {
            s.push_str(&format!("  ({n})"));
        }
        s.push('\n');
    }
    s
}
