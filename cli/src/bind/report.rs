//! Text tables, headline and charts of the upload-policy benchmark.
use super::model::Policy;
use super::policies::BindCell;
use crate::format::{fmt_bytes, fmt_count, fmt_ns, share_removed, times, wrap, Table};
use crate::svg::{Bar, Chart, Group};

/// The policy as the table names it; AUTO also says which path its last
/// run took (`auto/bnd`, `auto/cmp`).
fn policy_label(c: &BindCell) -> String {
    match (c.policy, c.samples.last().map(|s| s.path)) {
        (Policy::Auto, Some("bounded")) => "auto/bnd".into(),
        (Policy::Auto, Some("compact")) => "auto/cmp".into(),
        (p, _) => p.name().into(),
    }
}

/// The text table of the cells, one block per backend and window: the
/// cost of a run and what the upload shipped; with `detail`, also the
/// maker's creation and the process's memory.
pub fn table(cells: &[BindCell], detail: bool) -> String {
    let blocks = crate::lists::groups(cells, |c| (c.backend.clone(), c.window));
    let mut s = String::new();
    for (i, block) in blocks.iter().enumerate() {
        s.push_str(&block_table(block, detail, i + 1 == blocks.len()));
    }
    s
}

fn block_table(block: &[&BindCell], detail: bool, with_legend: bool) -> String {
    let c0 = block[0];
    let cuda = block.iter().any(|c| c.median.h2d_ns.is_some());
    let mut t = Table::new(
        format!(
            "staging: a run (begin + claim N + upload), medians; backend {}, window {}, image {}{}",
            c0.backend,
            c0.window,
            fmt_bytes(c0.image_bytes as f64),
            if c0.pinned_mirror {
                ", pinned mirror"
            } else {
                ""
            },
        ),
        &["tasks", "policy"],
    );
    t.left_keys(&[false, true]);
    t.group("", &["runs", "total", "zero", "claim", "relocate", "copy"]);
    t.group("", &["bytes", "copies", "faults", "×fresh"]);
    if detail {
        t.group("", &["create", "rss before→after", "VmLck create→runs"]);
    }
    if cuda {
        t.group("", &["sync", "in H2D"]);
    }
    for c in block {
        let m = &c.median;
        let mut cells = vec![
            vec![
                c.runs.to_string(),
                fmt_ns(m.total_ns),
                fmt_ns(m.zero_ns),
                fmt_ns(m.claim_ns),
                fmt_ns(m.relocate_ns),
                fmt_ns(m.copy_ns),
            ],
            vec![
                fmt_bytes(m.bytes),
                m.copies.to_string(),
                fmt_count(c.faults_per_run),
                // How many times cheaper than FULL+fresh (the JSON keeps
                // the cost ratio itself).
                c.ratio_to_full_fresh
                    .filter(|r| *r > 0.0)
                    .map_or("-".into(), |r| times(1.0 / r)),
            ],
        ];
        if detail {
            cells.push(vec![
                fmt_ns(c.create_ns as f64),
                format!(
                    "{}→{}",
                    fmt_bytes(c.rss_before as f64),
                    fmt_bytes(c.rss_after as f64)
                ),
                format!(
                    "{}→{}",
                    fmt_bytes(c.locked_after_create as f64),
                    fmt_bytes(c.locked_after_runs as f64)
                ),
            ]);
        }
        if cuda {
            cells.push(vec![
                m.sync_ns.map_or("-".into(), fmt_ns),
                m.h2d_ns.map_or("-".into(), fmt_ns),
            ]);
        }
        t.row(vec![c.tasks.to_string(), policy_label(c)], cells, None);
    }
    if with_legend {
        t.legend(
            "full-fresh = the old path (the whole image, from a freshly mapped mirror); full = \
             the whole image from a reused mirror; bounded, compact = only the live prefix; auto \
             = bounded or compact by the cost model (/bnd, /cmp: the path it took)",
        );
        t.legend(
            "total = begin + claim + upload; zero = clearing the image, relocate = pointers to \
             device addresses and back, copy = the copies (parts of the upload); bytes, copies = \
             what the upload shipped; faults = minor page faults per run; ×fresh = times cheaper \
             than full-fresh",
        );
        if detail {
            t.legend(
                "create = lrt_runtime_maker_create; rss = resident memory before the first run \
                 → after the last; VmLck = locked memory after create → after the runs",
            );
        }
        if cuda {
            t.legend(
                "sync = the synchronize after the upload; in H2D = time inside the driver's copies",
            );
        }
    }
    t.render()
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
    let bounded = get(Policy::Bounded).filter(|c| c.median.total_ns > 0.0);
    let mut others = Vec::new();
    for p in [Policy::Compact, Policy::Auto, Policy::Full] {
        if let Some(c) = get(p).filter(|c| c.median.total_ns > 0.0) {
            others.push(format!(
                "{} {}",
                p.name(),
                times(base.median.total_ns / c.median.total_ns)
            ));
        }
    }
    let mut line = match bounded {
        // What leanrt removes: the old path's cost, down to bounded's.
        Some(b) => format!(
            "at W={w}, N={n} the bounded upload removes {} of a run's cost ({} → {}, {} \
             cheaper than the old path, full-fresh); {}",
            share_removed(base.median.total_ns, b.median.total_ns),
            fmt_ns(base.median.total_ns),
            fmt_ns(b.median.total_ns),
            times(base.median.total_ns / b.median.total_ns),
            if others.is_empty() {
                String::new()
            } else {
                format!("cheaper too: {}", others.join(", "))
            },
        ),
        None if !others.is_empty() => format!(
            "at W={w}, N={n} a run costs {} the old way (full-fresh); cheaper by {}",
            fmt_ns(base.median.total_ns),
            others.join(", ")
        ),
        None => return None,
    };
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
                "; the cost follows the tasks, not the window: bounded at N={n} across windows {} \
                 is {:.0}% apart",
                b.iter()
                    .map(|c| c.window.to_string())
                    .collect::<Vec<_>>()
                    .join("/"),
                (hi / lo - 1.0) * 100.0
            ));
        }
    }
    Some(wrap("staging headline: ", &(line + ".")))
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
