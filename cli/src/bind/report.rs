//! Text tables, headline and charts of the upload-policy benchmark, and the
//! unit formatting shared by both halves of `leanrt bind`.
use super::model::Policy;
use super::policies::BindCell;
use crate::svg::{Bar, Chart, Group};

/// Formats nanoseconds in a readable unit.
pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Formats a factor: one decimal below 10, whole numbers above.
pub fn times(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.1}×")
    } else {
        format!("{x:.0}×")
    }
}

/// Formats a byte count (decimal units).
pub fn fmt_bytes(b: f64) -> String {
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

/// The title and column names of a block of the table.
fn block_header(c: &BindCell) -> String {
    let mut s = format!(
        "\nstaging — backend {}, window {} (image {}){}, medians per run\n",
        c.backend,
        c.window,
        fmt_bytes(c.image_bytes as f64),
        if c.pinned_mirror {
            ", pinned mirror"
        } else {
            ""
        },
    );
    s.push_str(&format!(
        "{:>6} {:<10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>10} {:>17} {:>12} {:>10} {:>19}\n",
        "tasks",
        "policy",
        "runs",
        "total",
        "zero",
        "claim",
        "relocate",
        "copy",
        "bytes",
        "copies",
        "faults/run",
        "rss before→after",
        "full-fresh/x",
        "create",
        "VmLck create→runs"
    ));
    if c.median.h2d_ns.is_some() {
        // CUDA: the synchronize after the upload, and the time inside the
        // driver's H2D copies (part of copy).
        s.pop();
        s.push_str(&format!(" {:>10} {:>10}\n", "sync", "in H2D"));
    }
    s
}

/// The policy as the table names it; AUTO also says which path its last
/// run took (`auto/bnd`, `auto/cmp`).
fn policy_label(c: &BindCell) -> String {
    match (c.policy, c.samples.last().map(|s| s.path)) {
        (Policy::Auto, Some("bounded")) => "auto/bnd".into(),
        (Policy::Auto, Some("compact")) => "auto/cmp".into(),
        (p, _) => p.name().into(),
    }
}

/// The text table of the cells, one block per backend and window.
pub fn table(cells: &[BindCell]) -> String {
    let mut s = String::new();
    let mut last: Option<(String, u64)> = None;
    for c in cells {
        let key = (c.backend.clone(), c.window);
        if last.as_ref() != Some(&key) {
            s.push_str(&block_header(c));
            last = Some(key);
        }
        let m = &c.median;
        s.push_str(&format!(
            "{:>6} {:<10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>10.1} {:>17} {:>12} {:>10} {:>19}\n",
            c.tasks,
            policy_label(c),
            c.runs,
            fmt_ns(m.total_ns),
            fmt_ns(m.zero_ns),
            fmt_ns(m.claim_ns),
            fmt_ns(m.relocate_ns),
            fmt_ns(m.copy_ns),
            fmt_bytes(m.bytes),
            m.copies,
            c.faults_per_run,
            format!(
                "{}→{}",
                fmt_bytes(c.rss_before as f64),
                fmt_bytes(c.rss_after as f64)
            ),
            // Shown as how many times cheaper than FULL+fresh (the JSON
            // keeps the cost ratio itself).
            c.ratio_to_full_fresh
                .filter(|r| *r > 0.0)
                .map_or("-".into(), |r| times(1.0 / r)),
            fmt_ns(c.create_ns as f64),
            format!(
                "{}→{}",
                fmt_bytes(c.locked_after_create as f64),
                fmt_bytes(c.locked_after_runs as f64)
            ),
        ));
        if let (Some(sync), Some(h2d)) = (m.sync_ns, m.h2d_ns) {
            s.pop();
            s.push_str(&format!(" {:>10} {:>10}\n", fmt_ns(sync), fmt_ns(h2d)));
        }
    }
    s
}

/// Headline: how much cheaper BOUNDED (and COMPACT) are than FULL+fresh at
/// the first window with N = 64 (or the smallest non-zero N measured).
pub fn headline(cells: &[BindCell]) -> Option<String> {
    let n = cells
        .iter()
        .map(|c| c.tasks)
        .filter(|&n| n > 0)
        .min_by_key(|&n| (n != 64, n))?;
    let w = cells.iter().find(|c| c.tasks == n)?.window;
    let get = |p: Policy| {
        cells
            .iter()
            .find(|c| c.window == w && c.tasks == n && c.policy == p)
    };
    let base = get(Policy::FullFresh)?;
    let mut parts = Vec::new();
    for p in [Policy::Bounded, Policy::Compact, Policy::Auto, Policy::Full] {
        if let Some(c) = get(p) {
            if c.median.total_ns > 0.0 {
                parts.push(format!(
                    "{} {}",
                    p.name(),
                    times(base.median.total_ns / c.median.total_ns)
                ));
            }
        }
    }
    if parts.is_empty() {
        return None;
    }
    let mut line = format!(
        "staging headline: at W={w}, N={n}, a run costs {} with FULL+fresh; cheaper by {}",
        fmt_ns(base.median.total_ns),
        parts.join(", ")
    );
    // Cost follows tasks, not capacity: BOUNDED at the same N across windows.
    let b: Vec<&BindCell> = cells
        .iter()
        .filter(|c| c.tasks == n && c.policy == Policy::Bounded)
        .collect();
    if b.len() >= 2 {
        let lo = b.iter().map(|c| c.median.total_ns).fold(f64::MAX, f64::min);
        let hi = b.iter().map(|c| c.median.total_ns).fold(0.0, f64::max);
        if lo > 0.0 {
            line.push_str(&format!(
                "; bounded at N={n} across windows {}: spread {:.0}%",
                b.iter()
                    .map(|c| c.window.to_string())
                    .collect::<Vec<_>>()
                    .join("/"),
                (hi / lo - 1.0) * 100.0
            ));
        }
    }
    Some(line)
}

/// Charts: per window, groups per task count, bars per policy (total median).
pub fn charts(cells: &[BindCell]) -> Vec<Chart> {
    let mut out = Vec::new();
    let mut keys: Vec<(String, u64)> = Vec::new();
    for c in cells {
        let k = (c.backend.clone(), c.window);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (b, w) in keys {
        let mut groups: Vec<Group> = Vec::new();
        for c in cells.iter().filter(|c| c.backend == b && c.window == w) {
            let label = format!("N={}", c.tasks);
            let bar = Bar {
                label: c.policy.name().into(),
                value: c.median.total_ns / 1e3,
            };
            match groups.iter_mut().find(|g| g.label == label) {
                Some(g) => g.bars.push(bar),
                None => groups.push(Group {
                    label,
                    bars: vec![bar],
                }),
            }
        }
        out.push(Chart {
            title: format!("staging run (begin + claim N + upload), backend {b}, W={w}"),
            unit: "µs, median".into(),
            groups,
        });
    }
    out
}
