//! H2D bandwidth and staging cost on the CUDA backend, with the issue-6
//! targets computed in the same run:
//!
//! 1. `copy_to_device` bandwidth from pageable and from pinned
//!    (`cuMemHostRegister`) host memory at 1 MiB, 16 MiB and 81 MB (the
//!    W = 16384 image), each copy followed by `cuCtxSynchronize`.
//! 2. Per-run staging cost (begin_run + claim N slots with a little
//!    content + upload + synchronize) at W = 16384 and 131072, N = 0, 64,
//!    1024, 16384, for FULL with a fresh mirror (the old path), FULL,
//!    BOUNDED, COMPACT, and BOUNDED / COMPACT from a pinned mirror
//!    (`LRT_MAKER_PIN_MIRROR`). Besides the whole run it reports the time
//!    spent inside the driver's H2D copies (`cuda::copy_stats`) and the
//!    maker's own `copy_ns` (COMPACT: gather + copy).
//!
//! ```text
//! cargo run --release --example h2d_bandwidth -- [--device D] [--runs R] [--quick] [--json FILE]
//! ```
//! `LEANRT_CUDA_LIBRARY` selects the driver library (a mock works too).
//! Nothing is asserted: the figures go to stdout and, with `--json`, to FILE.
use std::time::Instant;

use leanrt::device::{self, cuda, HostApi};
use leanrt::staging::{
    segment_offsets, MakerConfig, RuntimeMaker, UploadPolicy, MAKER_FRESH_MIRROR, MAKER_PIN_MIRROR,
};

// ---------------------------------------------------------------------------

struct Args {
    device: i32,
    runs: usize,
    quick: bool,
    json: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        device: 0,
        runs: 7,
        quick: false,
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--device" => {
                a.device = value("--device")?
                    .parse()
                    .map_err(|e| format!("--device: {e}"))?
            }
            "--runs" => {
                a.runs = value("--runs")?
                    .parse()
                    .map_err(|e| format!("--runs: {e}"))?
            }
            "--json" => a.json = Some(value("--json")?),
            "--quick" => a.quick = true,
            "-h" | "--help" => {
                println!("usage: h2d_bandwidth [--device D] [--runs R] [--quick] [--json FILE]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    Ok(a)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A page-aligned, touched host buffer.
struct HostBuf {
    ptr: *mut u8,
    len: usize,
}

impl HostBuf {
    fn new(len: usize) -> HostBuf {
        // SAFETY: an anonymous mapping has no preconditions; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(p != libc::MAP_FAILED, "cannot map {len} bytes");
        // SAFETY: the mapping is len bytes, writable; touching every page
        // keeps page faults out of the copy times.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0x5a, len) };
        HostBuf { ptr: p.cast(), len }
    }
}

impl Drop for HostBuf {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping made in new.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

struct BwRow {
    bytes: usize,
    memory: &'static str,
    median_ns: f64,
}

fn bandwidth(api: &HostApi, sizes: &[usize], runs: usize) -> Result<Vec<BwRow>, String> {
    let ops = *api.validate().map_err(|e| e.to_string())?;
    let max = *sizes.iter().max().unwrap();
    // SAFETY: callback contract.
    let dev = unsafe { ops.device_malloc.unwrap()(api.ctx, max) };
    if dev.is_null() {
        return Err(format!(
            "device_malloc({max}): {:?}",
            cuda::take_last_error()
        ));
    }
    let host = HostBuf::new(max);
    let mut rows = Vec::new();
    for memory in ["pageable", "pinned"] {
        let pin = if memory == "pinned" {
            match device::pin_host_memory(api, host.ptr, host.len) {
                Ok(r) => Some(r),
                Err(e) => {
                    println!("pinning failed ({e}); no pinned figures");
                    continue;
                }
            }
        } else {
            None
        };
        for &size in sizes {
            let reps = (runs * 64 * (1 << 20) / size).clamp(runs, 50);
            let mut samples = Vec::new();
            for rep in 0..=reps {
                let t0 = Instant::now();
                // SAFETY: dev holds max >= size bytes; host is size bytes+.
                let rc =
                    unsafe { ops.copy_to_device.unwrap()(api.ctx, dev, host.ptr.cast(), size) };
                if rc != 0 {
                    return Err(format!("copy_to_device: {:?}", cuda::take_last_error()));
                }
                cuda::synchronize(api).map_err(|e| e.to_string())?;
                if rep > 0 {
                    samples.push(t0.elapsed().as_nanos() as f64);
                }
            }
            rows.push(BwRow {
                bytes: size,
                memory,
                median_ns: median(&mut samples),
            });
        }
        drop(pin);
    }
    // SAFETY: dev came from device_malloc, freed once.
    unsafe { ops.device_free.unwrap()(api.ctx, dev) };
    Ok(rows)
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    FullFresh,
    Full,
    Bounded,
    Compact,
    BoundedPinned,
    CompactPinned,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::FullFresh => "full+fresh",
            Variant::Full => "full",
            Variant::Bounded => "bounded",
            Variant::Compact => "compact",
            Variant::BoundedPinned => "bounded+pin",
            Variant::CompactPinned => "compact+pin",
        }
    }
    fn config(self, window: u64) -> MakerConfig {
        let (policy, flags) = match self {
            Variant::FullFresh => (UploadPolicy::Full, MAKER_FRESH_MIRROR),
            Variant::Full => (UploadPolicy::Full, 0),
            Variant::Bounded => (UploadPolicy::Bounded, 0),
            Variant::Compact => (UploadPolicy::Compact, 0),
            Variant::BoundedPinned => (UploadPolicy::Bounded, MAKER_PIN_MIRROR),
            Variant::CompactPinned => (UploadPolicy::Compact, MAKER_PIN_MIRROR),
        };
        MakerConfig {
            task_window: window,
            policy,
            flags,
        }
    }
}

struct StageRow {
    window: u64,
    n: u64,
    variant: Variant,
    run_ns: f64,
    copy_ns: f64,
    h2d_ns: f64,
    bytes: u64,
    copies: u32,
}

fn staging(
    api: &HostApi,
    window: u64,
    ns: &[u64],
    variants: &[Variant],
    runs: usize,
) -> Result<Vec<StageRow>, String> {
    let mut rows = Vec::new();
    for &variant in variants {
        let mut maker =
            RuntimeMaker::new(&variant.config(window), *api).map_err(|e| format!("{e}"))?;
        for &n in ns.iter().filter(|&&n| n <= window) {
            let (mut run, mut copy, mut h2d) = (Vec::new(), Vec::new(), Vec::new());
            let (mut bytes, mut copies) = (0, 0);
            // Slow cells (whole-image policies at a large window) get fewer runs.
            let reps = if maker.segments().end > (256 << 20) && variant == Variant::FullFresh {
                runs.min(5)
            } else {
                runs
            };
            for rep in 0..=reps {
                let before = cuda::copy_stats(api).map_err(|e| e.to_string())?;
                let t0 = Instant::now();
                maker.begin_run().map_err(|e| e.to_string())?;
                for i in 0..n {
                    let slot = maker.claim_slot().map_err(|e| e.to_string())?;
                    // SAFETY: a claimed slot's payload is ours until upload.
                    let pay = unsafe { &mut *slot.payload };
                    pay.tensor_count = 1;
                    pay.tensors[0][0] = i;
                    pay.scalar_count = 1;
                    pay.scalars[0] = i;
                }
                let r = maker
                    .upload()
                    .map_err(|e| format!("{e} ({:?})", cuda::take_last_error()))?;
                cuda::synchronize(api).map_err(|e| e.to_string())?;
                let elapsed = t0.elapsed().as_nanos() as f64;
                let after = cuda::copy_stats(api).map_err(|e| e.to_string())?;
                if rep > 0 {
                    run.push(elapsed);
                    copy.push(r.copy_ns as f64);
                    h2d.push((after.h2d_ns - before.h2d_ns) as f64);
                }
                bytes = r.bytes;
                copies = r.copies;
            }
            rows.push(StageRow {
                window,
                n,
                variant,
                run_ns: median(&mut run),
                copy_ns: median(&mut copy),
                h2d_ns: median(&mut h2d),
                bytes,
                copies,
            });
        }
    }
    Ok(rows)
}

fn gbps(bytes: f64, ns: f64) -> f64 {
    if ns > 0.0 {
        bytes / ns
    } else {
        0.0
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("h2d_bandwidth: {e}");
            std::process::exit(2);
        }
    };
    let mut api = match cuda::cuda_host_api(args.device) {
        Ok(api) => api,
        Err(e) => {
            println!("skipped: no CUDA device ({e})");
            return;
        }
    };
    match cuda::device_info(args.device) {
        Ok(i) => println!(
            "device {}: {} ({} MiB), driver {}, library {}",
            i.ordinal,
            i.name,
            i.total_mem >> 20,
            i.driver_version,
            i.library
        ),
        Err(e) => println!("device info unavailable: {e}"),
    }
    let image = segment_offsets(16384).unwrap().end as usize;
    let sizes = [1 << 20, 16 << 20, image];
    let bw = match bandwidth(&api, &sizes, args.runs) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("h2d_bandwidth: bandwidth: {e}");
            std::process::exit(1);
        }
    };
    println!("\ncopy_to_device + cuCtxSynchronize, medians");
    println!(
        "{:<9} {:>12} {:>12} {:>9}",
        "memory", "bytes", "time (us)", "GB/s"
    );
    for r in &bw {
        println!(
            "{:<9} {:>12} {:>12.1} {:>9.2}",
            r.memory,
            r.bytes,
            r.median_ns / 1e3,
            gbps(r.bytes as f64, r.median_ns)
        );
    }

    let windows: &[u64] = if args.quick {
        &[16384]
    } else {
        &[16384, 131072]
    };
    let ns = [0u64, 64, 1024, 16384];
    let variants = [
        Variant::FullFresh,
        Variant::Full,
        Variant::Bounded,
        Variant::Compact,
        Variant::BoundedPinned,
        Variant::CompactPinned,
    ];
    let mut rows = Vec::new();
    for &w in windows {
        match staging(&api, w, &ns, &variants, args.runs) {
            Ok(r) => rows.extend(r),
            Err(e) => {
                eprintln!("h2d_bandwidth: staging at W={w}: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("\nper-run staging cost on CUDA (begin + claim N + upload + sync), medians");
    println!(
        "{:>7} {:>6} {:<12} {:>11} {:>11} {:>11} {:>11} {:>6} {:>9}",
        "W", "N", "policy", "run (us)", "copy (us)", "h2d (us)", "bytes", "copies", "vs fresh"
    );
    for r in &rows {
        let fresh = rows
            .iter()
            .find(|f| f.window == r.window && f.n == r.n && f.variant == Variant::FullFresh)
            .map(|f| f.run_ns)
            .unwrap_or(0.0);
        println!(
            "{:>7} {:>6} {:<12} {:>11.1} {:>11.1} {:>11.1} {:>11} {:>6} {:>8.1}x",
            r.window,
            r.n,
            r.variant.name(),
            r.run_ns / 1e3,
            r.copy_ns / 1e3,
            r.h2d_ns / 1e3,
            r.bytes,
            r.copies,
            if r.run_ns > 0.0 {
                fresh / r.run_ns
            } else {
                0.0
            }
        );
    }

    // The targets.
    let cell = |w: u64, n: u64, v: Variant| {
        rows.iter()
            .find(|r| r.window == w && r.n == n && r.variant == v)
    };
    println!("\ntargets");
    if let Some(fresh) = cell(16384, 64, Variant::FullFresh) {
        for v in [
            Variant::Bounded,
            Variant::Compact,
            Variant::BoundedPinned,
            Variant::CompactPinned,
        ] {
            if let Some(c) = cell(16384, 64, v) {
                println!(
                    "W=16384 N=64: full+fresh / {:<12} = {:>7.1}x (target >= 50x)",
                    v.name(),
                    fresh.run_ns / c.run_ns
                );
            }
        }
    }
    let pinned_bw = bw
        .iter()
        .find(|r| r.memory == "pinned" && r.bytes == image)
        .map(|r| gbps(r.bytes as f64, r.median_ns));
    if let (Some(c), Some(peak)) = (cell(16384, 16384, Variant::CompactPinned), pinned_bw) {
        let whole = gbps(c.bytes as f64, c.copy_ns);
        let dma = gbps(c.bytes as f64, c.h2d_ns);
        println!(
            "W=16384 N=16384 compact+pin: {:.2} GB/s over copy_ns (gather + copy) = {:.0}% and \
             {:.2} GB/s inside the H2D copy = {:.0}% of pinned H2D {:.2} GB/s (target >= 80%)",
            whole,
            100.0 * whole / peak,
            dma,
            100.0 * dma / peak,
            peak
        );
    }

    if let Some(path) = &args.json {
        let mut s = String::from("{\n  \"bandwidth\": [\n");
        for (i, r) in bw.iter().enumerate() {
            s.push_str(&format!(
                "    {{\"memory\": \"{}\", \"bytes\": {}, \"median_ns\": {:.0}, \"gb_per_s\": {:.3}}}{}\n",
                r.memory,
                r.bytes,
                r.median_ns,
                gbps(r.bytes as f64, r.median_ns),
                if i + 1 < bw.len() { "," } else { "" }
            ));
        }
        s.push_str("  ],\n  \"staging\": [\n");
        for (i, r) in rows.iter().enumerate() {
            s.push_str(&format!(
                "    {{\"window\": {}, \"tasks\": {}, \"policy\": \"{}\", \"run_ns\": {:.0}, \
                 \"copy_ns\": {:.0}, \"h2d_ns\": {:.0}, \"bytes\": {}, \"copies\": {}}}{}\n",
                r.window,
                r.n,
                r.variant.name(),
                r.run_ns,
                r.copy_ns,
                r.h2d_ns,
                r.bytes,
                r.copies,
                if i + 1 < rows.len() { "," } else { "" }
            ));
        }
        s.push_str("  ]\n}\n");
        if let Err(e) = std::fs::write(path, s) {
            eprintln!("h2d_bandwidth: cannot write {path}: {e}");
            std::process::exit(1);
        }
    }
    device::release(&mut api);
}
