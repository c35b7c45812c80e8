//! `leanrt bind`: the staging benchmark. Per run: begin_run + claim N slots
//! (writing a little content into each) + upload, on a maker reused across
//! runs, for each window, task count and upload policy; plus an H2D
//! bandwidth mode (`--bandwidth`).
use crate::stats::{median, resident_bytes, usage};
use crate::svg::{Bar, Chart, Group};
use leanrt::device::{self, HostApi};
use leanrt::staging::{
    self, MakerConfig, RuntimeMaker, UploadPolicy, MAKER_FRESH_MIRROR, MAKER_PIN_MIRROR,
};
use serde::Serialize;
use std::time::Instant;

/// A policy as the benchmark names it: FULL with a fresh mirror (the old
/// path), FULL on a reused mirror, BOUNDED, COMPACT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    FullFresh,
    Full,
    Bounded,
    Compact,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::FullFresh => "full-fresh",
            Policy::Full => "full",
            Policy::Bounded => "bounded",
            Policy::Compact => "compact",
        }
    }
    fn config(self, window: u64, pin: bool) -> MakerConfig {
        let (policy, flags) = match self {
            Policy::FullFresh => (UploadPolicy::Full, MAKER_FRESH_MIRROR),
            Policy::Full => (UploadPolicy::Full, 0),
            Policy::Bounded => (UploadPolicy::Bounded, 0),
            Policy::Compact => (UploadPolicy::Compact, 0),
        };
        MakerConfig {
            task_window: window,
            policy,
            flags: flags | if pin { MAKER_PIN_MIRROR } else { 0 },
        }
    }
}

/// Where device memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Backend {
    Host,
    Cuda(i32),
}

impl Backend {
    pub fn name(self) -> String {
        match self {
            Backend::Host => "host".into(),
            Backend::Cuda(d) => format!("cuda:{d}"),
        }
    }
    /// Opens the backend's host api.
    pub fn open(self) -> Result<HostApi, String> {
        match self {
            Backend::Host => Ok(device::host::host_api()),
            Backend::Cuda(d) => device::cuda::cuda_host_api(d)
                .map_err(|e| format!("backend cuda:{d} is not available: {e}")),
        }
    }
}

/// Parses `host`, `cuda` or `cuda:N`.
pub fn parse_backend(s: &str) -> Result<Backend, String> {
    match s {
        "host" => Ok(Backend::Host),
        "cuda" => Ok(Backend::Cuda(0)),
        _ => match s.strip_prefix("cuda:").map(str::parse::<i32>) {
            Some(Ok(d)) if d >= 0 => Ok(Backend::Cuda(d)),
            _ => Err(format!(
                "unknown backend '{s}' (expected host, cuda or cuda:N with N >= 0)"
            )),
        },
    }
}

/// Parses a task window: a power of two in [4, INT32_MAX] whose image fits
/// in INT32_MAX bytes (the library's own rule decides).
pub fn parse_window(s: &str) -> Result<u64, String> {
    let w: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("window '{s}' is not a number"))?;
    if !w.is_power_of_two() || w < 4 {
        return Err(format!("window {w} is not a power of two >= 4"));
    }
    staging::segment_offsets(w).map_err(|e| format!("window {w} is not usable: {e}"))?;
    Ok(w)
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct BindPlan {
    pub windows: Vec<u64>,
    pub tasks: Vec<u64>,
    pub policies: Vec<Policy>,
    pub backend: Backend,
    /// At least this many measured runs per cell ...
    pub runs: u32,
    /// ... and more, up to `max_runs`, until `min_time_ms` of runs were
    /// measured (cheap cells get stable medians; 0 = exactly `runs`).
    pub min_time_ms: u64,
    pub max_runs: u32,
    pub warmup: u32,
    /// Makers created with LRT_MAKER_PIN_MIRROR (page-locked mirror).
    pub pin_mirror: bool,
}

/// One run's figures.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct RunSample {
    /// begin_run wall time.
    pub begin_ns: u64,
    /// claim_slot ×N plus the content writes, wall time.
    pub claim_ns: u64,
    /// upload wall time.
    pub upload_ns: u64,
    /// begin + claim + upload, wall time.
    pub total_ns: u64,
    /// From the upload report.
    pub zero_ns: u64,
    pub relocate_ns: u64,
    pub copy_ns: u64,
    pub bytes: u64,
    pub copies: u32,
    pub total_tasks: i32,
    /// CUDA only: cuCtxSynchronize after the upload (not part of total_ns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_ns: Option<u64>,
    /// CUDA only: wall time inside the driver's H2D copy calls of this run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub h2d_ns: Option<u64>,
}

/// Medians over the measured runs (ns, bytes).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Medians {
    pub total_ns: f64,
    pub begin_ns: f64,
    pub zero_ns: f64,
    pub claim_ns: f64,
    pub relocate_ns: f64,
    pub copy_ns: f64,
    pub upload_ns: f64,
    pub bytes: f64,
    pub copies: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub h2d_ns: Option<f64>,
}

/// One (backend, window, tasks, policy) cell.
#[derive(Clone, Debug, Serialize)]
pub struct BindCell {
    pub backend: String,
    pub window: u64,
    pub image_bytes: u64,
    pub tasks: u64,
    pub policy: Policy,
    /// Created with LRT_MAKER_PIN_MIRROR.
    pub pinned_mirror: bool,
    pub runs: u32,
    pub warmup_runs: u32,
    pub median: Medians,
    /// Minor page faults of the process during the first (warm-up) run.
    pub faults_first_run: u64,
    /// Minor page faults per measured run (after warm-up).
    pub faults_per_run: f64,
    /// Resident memory after the maker was created, before its first run.
    pub rss_before: u64,
    /// Resident memory after the last run.
    pub rss_after: u64,
    /// Median total over the FULL+fresh median total of the same window and
    /// task count (None without a FULL+fresh cell).
    pub ratio_to_full_fresh: Option<f64>,
    pub samples: Vec<RunSample>,
}

/// Writes what a host writes into a claimed task: a few counts, scalars and
/// the descriptor's kernel id.
fn write_task(slot: &staging::TaskSlot, i: u64) {
    // SAFETY: claim_slot returned pointers into the maker's mirror for slot
    // `slot.index`, valid for writes until the next begin_run; nothing else
    // accesses them meanwhile (the maker is used by this thread only).
    unsafe {
        let p = &mut *slot.payload;
        p.scalar_count = 2;
        p.scalars[0] = i;
        p.scalars[1] = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// One run: begin, claim `n` (with content), upload; on CUDA also the
/// synchronize after the upload and the time spent in the driver's copies.
fn run_once(maker: &mut RuntimeMaker, n: u64, api: &HostApi) -> Result<RunSample, String> {
    let cuda = device::cuda::is_cuda_api(api);
    let h2d_before = if cuda { Some(h2d_ns(api)?) } else { None };
    let t0 = Instant::now();
    maker.begin_run().map_err(|e| format!("begin_run: {e}"))?;
    let t1 = Instant::now();
    for i in 0..n {
        let slot = maker.claim_slot().map_err(|e| format!("claim_slot: {e}"))?;
        write_task(&slot, i);
    }
    let t2 = Instant::now();
    let r = maker.upload().map_err(|e| format!("upload: {e}"))?;
    let t3 = Instant::now();
    let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
    let (sync_ns, h2d) = match h2d_before {
        Some(before) => {
            device::cuda::synchronize(api).map_err(|e| format!("synchronize: {e}"))?;
            let sync = ns(t3, Instant::now());
            (Some(sync), Some(h2d_ns(api)? - before))
        }
        None => (None, None),
    };
    Ok(RunSample {
        begin_ns: ns(t0, t1),
        claim_ns: ns(t1, t2),
        upload_ns: ns(t2, t3),
        total_ns: ns(t0, t3),
        zero_ns: r.zero_ns,
        relocate_ns: r.relocate_ns,
        copy_ns: r.copy_ns,
        bytes: r.bytes,
        copies: r.copies,
        total_tasks: r.total_tasks,
        sync_ns,
        h2d_ns: h2d,
    })
}

/// Nanoseconds spent so far inside the CUDA driver's H2D copies of `api`.
fn h2d_ns(api: &HostApi) -> Result<u64, String> {
    device::cuda::copy_stats(api)
        .map(|s| s.h2d_ns)
        .map_err(|e| format!("copy stats: {e}"))
}

fn medians(s: &[RunSample]) -> Medians {
    let m = |f: &dyn Fn(&RunSample) -> f64| median(&s.iter().map(f).collect::<Vec<_>>());
    Medians {
        total_ns: m(&|r| r.total_ns as f64),
        begin_ns: m(&|r| r.begin_ns as f64),
        zero_ns: m(&|r| r.zero_ns as f64),
        claim_ns: m(&|r| r.claim_ns as f64),
        relocate_ns: m(&|r| r.relocate_ns as f64),
        copy_ns: m(&|r| r.copy_ns as f64),
        upload_ns: m(&|r| r.upload_ns as f64),
        bytes: m(&|r| r.bytes as f64),
        copies: m(&|r| r.copies as f64),
        sync_ns: s
            .iter()
            .all(|r| r.sync_ns.is_some())
            .then(|| m(&|r| r.sync_ns.unwrap_or(0) as f64)),
        h2d_ns: s
            .iter()
            .all(|r| r.h2d_ns.is_some())
            .then(|| m(&|r| r.h2d_ns.unwrap_or(0) as f64)),
    }
}

/// The (window, tasks) pairs of a plan: tasks above the window are skipped.
pub fn pairs(plan: &BindPlan) -> Vec<(u64, u64)> {
    let mut v = Vec::new();
    for &w in &plan.windows {
        for &n in &plan.tasks {
            if n <= w {
                v.push((w, n));
            }
        }
    }
    v
}

/// Runs the plan; `tick` is called after each cell.
pub fn run(plan: &BindPlan, tick: &dyn Fn(&str)) -> Result<Vec<BindCell>, String> {
    if plan.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    let pairs = pairs(plan);
    if pairs.is_empty() {
        return Err("no task count fits in any window (tasks must be <= window)".into());
    }
    let mut api = plan.backend.open()?;
    let result = run_cells(plan, &pairs, api, tick);
    device::release(&mut api);
    let mut cells = result?;
    // Ratios to FULL+fresh of the same window and task count.
    let base: Vec<(u64, u64, f64)> = cells
        .iter()
        .filter(|c| c.policy == Policy::FullFresh)
        .map(|c| (c.window, c.tasks, c.median.total_ns))
        .collect();
    for c in &mut cells {
        c.ratio_to_full_fresh = base
            .iter()
            .find(|(w, n, _)| *w == c.window && *n == c.tasks)
            .filter(|(_, _, t)| *t > 0.0)
            .map(|(_, _, t)| c.median.total_ns / t);
    }
    Ok(cells)
}

fn run_cells(
    plan: &BindPlan,
    pairs: &[(u64, u64)],
    api: HostApi,
    tick: &dyn Fn(&str),
) -> Result<Vec<BindCell>, String> {
    let mut cells = Vec::new();
    for &(w, n) in pairs {
        for &p in &plan.policies {
            tick(&format!("W={w} N={n} {}", p.name()));
            let mut maker = RuntimeMaker::new(&p.config(w, plan.pin_mirror), api)
                .map_err(|e| format!("creating a maker (W={w}, {}): {e}", p.name()))?;
            let image_bytes = maker.segments().end;
            let rss_before = resident_bytes();
            let f0 = usage().minflt;
            let first = run_once(&mut maker, n, &api)?;
            let f1 = usage().minflt;
            for _ in 1..plan.warmup {
                run_once(&mut maker, n, &api)?;
            }
            let min_time = std::time::Duration::from_millis(plan.min_time_ms);
            let max_runs = plan.max_runs.max(plan.runs) as usize;
            // Allocated (and touched) up front: growing it while measuring
            // would add the benchmark's own page faults to the maker's.
            let mut samples = vec![RunSample::default(); max_runs];
            samples.clear();
            let u0 = usage().minflt;
            let start = Instant::now();
            while samples.len() < plan.runs as usize
                || (start.elapsed() < min_time && samples.len() < max_runs)
            {
                samples.push(run_once(&mut maker, n, &api)?);
            }
            let u1 = usage().minflt;
            let rss_after = resident_bytes();
            if first.total_tasks as u64 != n {
                return Err(format!(
                    "upload reported {} tasks, {n} were claimed",
                    first.total_tasks
                ));
            }
            drop(maker);
            cells.push(BindCell {
                backend: plan.backend.name(),
                window: w,
                image_bytes,
                tasks: n,
                policy: p,
                pinned_mirror: plan.pin_mirror,
                runs: samples.len() as u32,
                warmup_runs: plan.warmup.max(1),
                median: medians(&samples),
                faults_first_run: f1 - f0,
                faults_per_run: (u1 - u0) as f64 / samples.len() as f64,
                rss_before,
                rss_after,
                ratio_to_full_fresh: None,
                samples,
            });
        }
    }
    Ok(cells)
}

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

/// The text table of the cells, one block per backend and window.
pub fn table(cells: &[BindCell]) -> String {
    let mut s = String::new();
    let mut last: Option<(String, u64)> = None;
    for c in cells {
        let key = (c.backend.clone(), c.window);
        if last.as_ref() != Some(&key) {
            s.push_str(&format!(
                "\nstaging — backend {}, window {} (image {}){}, medians per run\n",
                c.backend,
                c.window,
                fmt_bytes(c.image_bytes as f64),
                if c.pinned_mirror {
                    ", pinned mirror"
                } else {
                    ""
                },
            ));
            s.push_str(&format!(
                "{:>6} {:<10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>10} {:>17} {:>12}\n",
                "tasks", "policy", "runs", "total", "zero", "claim", "relocate", "copy", "bytes",
                "copies", "faults/run", "rss before→after", "full-fresh/x"
            ));
            if c.median.h2d_ns.is_some() {
                // CUDA: the synchronize after the upload, and the time inside
                // the driver's H2D copies (part of copy).
                s.pop();
                s.push_str(&format!(" {:>10} {:>10}\n", "sync", "in H2D"));
            }
            last = Some(key);
        }
        let m = &c.median;
        s.push_str(&format!(
            "{:>6} {:<10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>10.1} {:>17} {:>12}\n",
            c.tasks,
            c.policy.name(),
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
    for p in [Policy::Bounded, Policy::Compact, Policy::Full] {
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

// ---------------------------------------------------------------------------
// H2D bandwidth mode.

/// One (size, memory kind) bandwidth figure.
#[derive(Clone, Debug, Serialize)]
pub struct BandwidthCell {
    pub backend: String,
    pub bytes: u64,
    /// "pageable" or "pinned".
    pub memory: String,
    /// None when this memory kind could not be used (the reason is in `note`).
    pub median_ns: Option<f64>,
    pub gb_per_s: Option<f64>,
    pub note: Option<String>,
    pub samples_ns: Vec<u64>,
}

/// A page-aligned, zero-filled host buffer (allocated with mmap).
struct HostBuf {
    ptr: *mut u8,
    len: usize,
}

impl HostBuf {
    fn new(len: usize) -> Result<HostBuf, String> {
        // SAFETY: an anonymous private mapping has no preconditions; the
        // result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("cannot map {len} bytes of host memory"));
        }
        // Touch every page so page faults are not part of the copy time.
        // SAFETY: the mapping is `len` bytes, readable and writable.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0x5a, len) };
        Ok(HostBuf {
            ptr: p.cast(),
            len: len.max(1),
        })
    }
}

impl Drop for HostBuf {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly the mapping made in `new`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// A device allocation through the host api, freed on drop.
struct DevBuf<'a> {
    api: &'a HostApi,
    ptr: *mut std::ffi::c_void,
}

impl<'a> DevBuf<'a> {
    fn new(api: &'a HostApi, len: usize) -> Result<DevBuf<'a>, String> {
        let ops = api.validate().map_err(|e| e.to_string())?;
        let malloc = ops.device_malloc.ok_or("no device_malloc")?;
        // SAFETY: a validated host api's callbacks may be called with its ctx.
        let ptr = unsafe { malloc(api.ctx, len) };
        if ptr.is_null() {
            return Err(format!("device_malloc({len}) failed"));
        }
        Ok(DevBuf { api, ptr })
    }
    fn copy_from(&self, src: *const u8, len: usize) -> Result<(), String> {
        let ops = self.api.validate().map_err(|e| e.to_string())?;
        let copy = ops.copy_to_device.ok_or("no copy_to_device")?;
        // SAFETY: `ptr` is a device allocation of at least `len` bytes from
        // this api and `src` is a live host buffer of at least `len` bytes.
        let rc = unsafe { copy(self.api.ctx, self.ptr, src.cast(), len) };
        if rc != 0 {
            return Err(format!("copy_to_device({len}) returned {rc}"));
        }
        // The timed span must end when the data is on the device.
        if device::cuda::is_cuda_api(self.api) {
            device::cuda::synchronize(self.api).map_err(|e| format!("synchronize: {e}"))?;
        }
        Ok(())
    }
}

impl Drop for DevBuf<'_> {
    fn drop(&mut self) {
        if let Ok(ops) = self.api.validate() {
            if let Some(free) = ops.device_free {
                // SAFETY: `ptr` came from this api's device_malloc, freed once.
                unsafe { free(self.api.ctx, self.ptr) };
            }
        }
    }
}

/// copy_to_device of each size from pageable and pinned host memory.
pub fn bandwidth(
    backend: Backend,
    sizes: &[u64],
    runs: u32,
    tick: &dyn Fn(&str),
) -> Result<Vec<BandwidthCell>, String> {
    if runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    let max = *sizes.iter().max().ok_or("no sizes given")? as usize;
    let mut api = backend.open()?;
    let result = (|| {
        let dev = DevBuf::new(&api, max)?;
        let host = HostBuf::new(max)?;
        let mut out = Vec::new();
        for memory in ["pageable", "pinned"] {
            let pin = if memory == "pinned" {
                match device::pin_host_memory(&api, host.ptr, host.len) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        eprintln!("warning: cannot pin host memory ({e}); pinned figures skipped");
                        for &b in sizes {
                            out.push(BandwidthCell {
                                backend: backend.name(),
                                bytes: b,
                                memory: memory.into(),
                                median_ns: None,
                                gb_per_s: None,
                                note: Some(format!("pinning failed: {e}")),
                                samples_ns: vec![],
                            });
                        }
                        continue;
                    }
                }
            } else {
                None
            };
            for &b in sizes {
                tick(&format!("{memory} {}", fmt_bytes(b as f64)));
                dev.copy_from(host.ptr, b as usize)?; // warm-up
                let mut samples = Vec::with_capacity(runs as usize);
                for _ in 0..runs {
                    let t = Instant::now();
                    dev.copy_from(host.ptr, b as usize)?;
                    samples.push(t.elapsed().as_nanos() as u64);
                }
                let med = median(&samples.iter().map(|&x| x as f64).collect::<Vec<_>>());
                out.push(BandwidthCell {
                    backend: backend.name(),
                    bytes: b,
                    memory: memory.into(),
                    median_ns: Some(med),
                    gb_per_s: (med > 0.0).then(|| b as f64 / med),
                    note: None,
                    samples_ns: samples,
                });
            }
            drop(pin);
        }
        Ok(out)
    })();
    device::release(&mut api);
    result
}

/// The bandwidth table.
pub fn bandwidth_table(cells: &[BandwidthCell]) -> String {
    let mut s = format!(
        "\ncopy_to_device bandwidth, medians\n{:<10} {:<9} {:>10} {:>12} {:>10}\n",
        "backend", "memory", "size", "time", "GB/s"
    );
    for c in cells {
        s.push_str(&format!(
            "{:<10} {:<9} {:>10} {:>12} {:>10}\n",
            c.backend,
            c.memory,
            fmt_bytes(c.bytes as f64),
            c.median_ns.map_or("-".into(), fmt_ns),
            c.gb_per_s.map_or_else(
                || c.note.clone().unwrap_or("-".into()),
                |g| format!("{g:.2}")
            ),
        ));
    }
    s
}

/// Bandwidth chart: groups per size, bars per memory kind.
pub fn bandwidth_charts(cells: &[BandwidthCell]) -> Vec<Chart> {
    let mut groups: Vec<Group> = Vec::new();
    for c in cells {
        let label = fmt_bytes(c.bytes as f64);
        let bar = Bar {
            label: c.memory.clone(),
            value: c.gb_per_s.unwrap_or(f64::NAN),
        };
        match groups.iter_mut().find(|g| g.label == label) {
            Some(g) => g.bars.push(bar),
            None => groups.push(Group {
                label,
                bars: vec![bar],
            }),
        }
    }
    vec![Chart {
        title: "copy_to_device bandwidth".into(),
        unit: "GB/s".into(),
        groups,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_must_be_powers_of_two_that_fit() {
        assert_eq!(parse_window("16384"), Ok(16384));
        assert_eq!(parse_window("4"), Ok(4));
        assert!(parse_window("3").is_err());
        assert!(parse_window("0").is_err());
        assert!(parse_window("1000").is_err());
        assert!(parse_window("abc").is_err());
        // 2^20 slots need about 5 GB: over INT32_MAX bytes.
        assert!(parse_window("1048576").is_err());
    }

    #[test]
    fn backends_parse() {
        assert_eq!(parse_backend("host"), Ok(Backend::Host));
        assert_eq!(parse_backend("cuda"), Ok(Backend::Cuda(0)));
        assert_eq!(parse_backend("cuda:3"), Ok(Backend::Cuda(3)));
        assert!(parse_backend("cuda:-1").is_err());
        assert!(parse_backend("gpu").is_err());
    }

    #[test]
    fn tasks_above_the_window_are_skipped() {
        let plan = BindPlan {
            windows: vec![4, 16],
            tasks: vec![0, 8, 16],
            policies: vec![Policy::Bounded],
            backend: Backend::Host,
            runs: 1,
            min_time_ms: 0,
            max_runs: 1,
            warmup: 1,
            pin_mirror: false,
        };
        assert_eq!(pairs(&plan), vec![(4, 0), (16, 0), (16, 8), (16, 16)]);
    }

    #[test]
    fn units_format() {
        assert_eq!(fmt_ns(1500.0), "1.5 µs");
        assert_eq!(fmt_ns(2.5e6), "2.50 ms");
        assert_eq!(fmt_bytes(81_412_416.0), "81.41 MB");
        assert_eq!(times(3.25), "3.2×");
        assert_eq!(times(6952.6), "6953×");
    }
}
