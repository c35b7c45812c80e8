//! Text output of the request and section scenarios.
use super::results::{CellResult, RequestRun, KEY_HEADERS};
use super::spec::{Gap, PeerKind};
use crate::format::{f1, p50_p90_p99, wrap, Table};

/// The request table (only where some cell ran the scenario).
pub fn request_table(results: &[CellResult]) -> String {
    let Some(first) = results.iter().find(|r| !r.request.is_empty()) else {
        return String::new();
    };
    let run = &first.spec.sizes.run;
    let gaps: Vec<Gap> = first.request.iter().map(|q| q.gap).collect();
    let mut t = Table::new(
        format!(
            "pool: inference runs{}, {} work (latency µs p50/p90/p99; CPU% inside runs / between \
             runs; total CPU ms per run)",
            if first.spec.oversubscribe {
                ", oversubscribed"
            } else {
                ""
            },
            first.spec.sizes.work.name()
        ),
        &KEY_HEADERS,
    );
    t.group("", &["hints"]);
    for g in &gaps {
        t.group(
            format!("gap {}", g.label()),
            &["p50/p90/p99", "run%", "gap%", "CPU/run"],
        );
    }
    t.group("serial", &["p50"]);
    for r in results {
        let hints = r.request.first().is_some_and(|q| q.hints);
        let mut cells = vec![vec![if hints { "yes" } else { "no" }.to_string()]];
        for g in &gaps {
            cells.push(match r.request.iter().find(|q| q.gap == *g) {
                Some(q) => vec![
                    p50_p90_p99(&q.latency_us),
                    format!("{:.0}", q.run_cpu_pct),
                    format!("{:.1}", q.gap_cpu_pct),
                    format!("{:.2}", q.cpu_per_run_ms()),
                ],
                None => vec!["-".into(); 4],
            });
        }
        cells.push(vec![r
            .request_serial_us
            .as_ref()
            .map_or("-".into(), |v| f1(v.p50))]);
        t.row(r.keys(), cells, None);
    }
    t.legend(format!(
        "run = {} µs serial, then {} rounds of {} µs of work split over {} indices with {} µs \
         serial between rounds; run%/gap% = process CPU over wall time inside runs / in the gaps \
         between them; CPU/run = the process's CPU inside plus between runs ÷ runs, ms; hints = spinning enabled/disabled around each run \
         ({}=1, as ORT's session does); serial = the same run on the \
         caller alone; {} requests per gap{}",
        run.preamble_us,
        run.rounds,
        run.round_us,
        run.round_items,
        run.between_us,
        leanrt::pool::abi::LRT_POOL_KEY_FORCE_SPINNING_STOP,
        first.spec.sizes.requests,
        match first.spec.turns() {
            1 => String::new(),
            n => format!(
                ", in {n} turns (every cell of a thread count once per turn, the order \
                 mirrored every other turn, each with a new pool or session; results merged)"
            ),
        },
    ));
    t.render()
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
                .map(|(q, base)| against(q, base, false))
                .collect();
            lines.push(wrap(
                &format!("request headline ({t} threads): "),
                &format!("{} vs default: {}", r.label, parts.join("; ")),
            ));
        }
    }
    lines.extend(ort_headline(results));
    lines
}

/// Per leanrt configuration that ONNX Runtime's pool ran too (same thread
/// count, same configuration, same run): leanrt's p50, p99 and CPU between
/// runs against ORT's.
fn ort_headline(results: &[CellResult]) -> Vec<String> {
    let mut lines = Vec::new();
    for r in results.iter().filter(|r| !r.request.is_empty()) {
        let PeerKind::Leanrt { config } = &r.spec.peer else {
            continue;
        };
        let ort = results.iter().find(|o| {
            o.spec.threads == r.spec.threads
                && matches!(&o.spec.peer, PeerKind::Ort { config: c, .. } if c == config)
        });
        let Some(o) = ort else {
            continue;
        };
        let parts: Vec<String> = r
            .request
            .iter()
            .filter_map(|q| Some((q, o.request.iter().find(|x| x.gap == q.gap)?)))
            .map(|(q, base)| against(q, base, true))
            .collect();
        lines.push(wrap(
            &format!("request vs ONNX Runtime ({} threads): ", r.spec.threads),
            &format!("{} vs {}: {}", r.label, o.label, parts.join("; ")),
        ));
    }
    lines
}

/// `q`'s p50 (and p99) and CPU between runs as ratios to `base`'s.
fn against(q: &RequestRun, base: &RequestRun, p99: bool) -> String {
    let ratio = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.2}×", a / b)
        } else {
            "-".into()
        }
    };
    let tail = if p99 {
        format!(", p99 {}", ratio(q.latency_us.p99, base.latency_us.p99))
    } else {
        String::new()
    };
    format!(
        "gap {}: p50 {}{tail}, CPU between runs {}, total CPU per run {} ({:.2} vs {:.2} ms)",
        q.gap.label(),
        ratio(q.latency_us.p50, base.latency_us.p50),
        ratio(q.gap_cpu_per_run_ms(), base.gap_cpu_per_run_ms()),
        ratio(q.cpu_per_run_ms(), base.cpu_per_run_ms()),
        q.cpu_per_run_ms(),
        base.cpu_per_run_ms()
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
    let mut t = Table::new(
        "pool: parallel sections (µs per loop, p50: k separate loops / k loops in one section)",
        &KEY_HEADERS,
    );
    for k in &ks {
        t.group(format!("k={k}"), &["separate/in section", "ratio", "team%"]);
    }
    for r in results {
        let cells = ks
            .iter()
            .map(|k| match r.section.iter().find(|x| x.loops == *k) {
                Some(x) => vec![
                    format!("{}/{}", f1(x.separate_us.p50), f1(x.in_section_us.p50)),
                    if x.in_section_us.p50 > 0.0 {
                        format!("{:.2}", x.separate_us.p50 / x.in_section_us.p50)
                    } else {
                        "-".into()
                    },
                    format!("{:.0}", x.attached_pct),
                ],
                None => vec!["-".into(), "-".into(), "-".into()],
            })
            .collect();
        t.row(r.keys(), cells, r.section_note.clone());
    }
    t.legend(format!(
        "loops of one {} µs index per thread; ratio = separate / in section; team% = sections \
         that got a team (a section whose pool is busy runs plain loops)",
        first.spec.sizes.section_item_us
    ));
    t.render()
}
