//! `leanrt bind --layout v2`: the reference runtime's current image, per
//! run, on leanrt's maker and on the reference's own path (the baseline),
//! beside one plain copy of the compact bytes (the floor of a one-copy
//! upload, timed after each run: `Floor`), for each window and task count.
//! Tasks have 2 tensors, 1 scalar and 1 producer; a 704-byte runtime block
//! frames the image.
use super::backend::Device;
use super::backend_v2::{mirror_bytes, Floor, V2Maker, V2Path};
use super::policies::{medians, pairs_of, warm_and_measure, BindPlan, Medians};
use crate::format::{fmt_bytes, fmt_count, fmt_ns, times, Table};
use serde::Serialize;

/// One (window, tasks, path) cell.
#[derive(Clone, Debug, Serialize)]
pub struct V2Cell {
    pub backend: String,
    pub window: u64,
    /// The v2 mirror for the window.
    pub mirror_bytes: u64,
    pub tasks: u64,
    /// `leanrt` or `ref-v2`.
    pub path: &'static str,
    pub runs: u32,
    pub median: Medians,
    pub faults_first_run: u64,
    pub faults_per_run: f64,
    pub rss_before: u64,
    pub rss_after: u64,
    /// One plain copy of the framed compact bytes to the device, from a
    /// buffer written just before, timed after each measured run (median;
    /// `Floor`).
    pub memcpy_ns: f64,
    /// begin + upload over the floor timed right after, median over the
    /// measured runs.
    pub to_memcpy: f64,
    /// Median total over the ref-v2 cell's of the same window and tasks.
    pub ratio_to_reference: Option<f64>,
}

/// Runs the plan for layout v2 (`plan.policies` is ignored: both paths
/// run); `tick` is called before each cell.
pub fn run_v2(plan: &BindPlan, tick: &dyn Fn(&str)) -> Result<Vec<V2Cell>, String> {
    let pairs = pairs_of(&plan.windows, &plan.tasks);
    if pairs.is_empty() {
        return Err("no task count fits in any window (tasks must be <= window)".into());
    }
    for &w in &plan.windows {
        mirror_bytes(w).map_err(|e| format!("window {w}: {e}"))?;
    }
    let dev = Device::open(plan.backend)?;
    let mut cells = Vec::new();
    for &(w, n) in &pairs {
        let mut pair = Vec::new();
        for path in [V2Path::Reference, V2Path::Leanrt] {
            let name = match path {
                V2Path::Reference => "ref-v2",
                V2Path::Leanrt => "leanrt",
            };
            tick(&format!("v2 W={w} N={n} {name}"));
            pair.push(measure(plan, &dev, w, n, path, name)?);
        }
        let base = pair[0].median.total_ns;
        for c in &mut pair {
            c.ratio_to_reference = (base > 0.0).then(|| c.median.total_ns / base);
        }
        cells.extend(pair);
    }
    Ok(cells)
}

fn measure(
    plan: &BindPlan,
    dev: &Device,
    w: u64,
    n: u64,
    path: V2Path,
    name: &'static str,
) -> Result<V2Cell, String> {
    let new = |path| V2Maker::new(dev, path, w).map_err(|e| format!("v2 maker (W={w}): {e}"));
    // The bytes a run ships (the same on both paths), from a run of a maker
    // of its own, so that the floor's buffers are in place before the
    // cell's first run and its page faults.
    let bytes = new(V2Path::Leanrt)?.run_once(n)?.bytes;
    let mut floor = Floor::new(dev, bytes)?;
    let mut maker = new(path)?;
    let mut floors = Vec::new();
    let m = warm_and_measure(plan, n, &mut || {
        let run = maker.run_once(n)?;
        floors.push(floor.copy_ns()?);
        Ok(run)
    })?;
    drop(maker);
    // The floors of the measured runs (the last ones), each beside its run:
    // begin + upload (the run without the claims' own writes) over it.
    let floors = &floors[floors.len() - m.samples.len()..];
    let ratios: Vec<f64> = m
        .samples
        .iter()
        .zip(floors)
        .map(|(s, f)| (s.begin_ns + s.upload_ns) as f64 / f.max(1.0))
        .collect();
    Ok(V2Cell {
        backend: plan.backend.name(),
        window: w,
        mirror_bytes: mirror_bytes(w)?,
        tasks: n,
        path: name,
        runs: m.samples.len() as u32,
        median: medians(&m.samples),
        faults_first_run: m.faults_first_run,
        faults_per_run: m.faults_per_run,
        rss_before: m.rss_before,
        rss_after: m.rss_after,
        memcpy_ns: crate::stats::median(floors),
        to_memcpy: crate::stats::median(&ratios),
        ratio_to_reference: None,
    })
}

/// The text table: one block per backend and window.
pub fn table_v2(cells: &[V2Cell]) -> String {
    let blocks = crate::lists::groups(cells, |c| (c.backend.clone(), c.window));
    let mut s = String::new();
    for (i, block) in blocks.iter().enumerate() {
        let (backend, window) = (&block[0].backend, block[0].window);
        let mut t = Table::new(
            format!(
                "staging, layout v2: a run (begin + claim N + upload), medians; backend {backend}, \
                 window {window}, mirror {}; 2 tensors, 1 scalar, 1 producer per task",
                fmt_bytes(block[0].mirror_bytes as f64)
            ),
            &["tasks", "path"],
        );
        t.left_keys(&[false, true]);
        t.group("", &["runs", "total", "begin", "claim", "upload", "copy"]);
        t.group(
            "",
            &["bytes", "copies", "faults", "memcpy", "/ref-v2", "(b+u)/cp"],
        );
        for c in block {
            let m = &c.median;
            t.row(
                vec![c.tasks.to_string(), c.path.to_string()],
                vec![
                    vec![
                        c.runs.to_string(),
                        fmt_ns(m.total_ns),
                        fmt_ns(m.begin_ns),
                        fmt_ns(m.claim_ns),
                        fmt_ns(m.upload_ns),
                        fmt_ns(m.copy_ns),
                    ],
                    vec![
                        fmt_bytes(m.bytes),
                        m.copies.to_string(),
                        fmt_count(c.faults_per_run),
                        fmt_ns(c.memcpy_ns),
                        c.ratio_to_reference.map_or("-".into(), ratio),
                        times(c.to_memcpy),
                    ],
                ],
                None,
            );
        }
        if i + 1 == blocks.len() {
            t.legend(
                "ref-v2: the reference's own per-run path (fresh mirror, O(W) re-init, zero-filled \
                 framed buffer, seven copies and the offset pass, one copy); leanrt: the maker, a \
                 run of the last run's shape claimed in place; memcpy: one plain copy of the same \
                 framed bytes from a buffer written just before it (warm), timed after each run \
                 of the cell; faults: minor page faults per warm run; /ref-v2: total over \
                 ref-v2's; (b+u)/cp: begin + upload over the memcpy timed after it, median over \
                 the runs.",
            );
        }
        s.push_str(&t.render());
    }
    s
}

/// A ratio with two significant digits below 1 (0.031×), as `times` above.
fn ratio(x: f64) -> String {
    if x < 1.0 {
        let digits = if x < 0.1 { 3 } else { 2 };
        format!("{x:.digits$}×")
    } else {
        times(x)
    }
}
