//! `leanrt bind --bandwidth`: copy_to_device bandwidth from pageable and
//! pinned host memory.
use super::backend::{Backend, Device};
use crate::format::{fmt_bytes, fmt_ns, Table};
use crate::stats::median;
use crate::svg::{Bar, Chart, Group};
use serde::Serialize;
use std::time::Instant;

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

/// A page-aligned host buffer (an anonymous mapping), every page touched.
struct HostBuf {
    ptr: *mut u8,
    len: usize,
}

impl HostBuf {
    fn new(len: usize) -> Result<HostBuf, String> {
        let len = len.max(1);
        // SAFETY: an anonymous private mapping has no preconditions; the
        // result is checked against MAP_FAILED.
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
        if p == libc::MAP_FAILED {
            return Err(format!("cannot map {len} bytes of host memory"));
        }
        // Touch every page so page faults are not part of the copy time.
        // SAFETY: the mapping is `len` bytes, readable and writable.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0x5a, len) };
        Ok(HostBuf { ptr: p.cast(), len })
    }

    /// The first `len` bytes.
    fn slice(&self, len: usize) -> &[u8] {
        // SAFETY: the mapping holds `self.len` initialized bytes, alive and
        // not written while `self` is borrowed.
        unsafe { std::slice::from_raw_parts(self.ptr, len.min(self.len)) }
    }
}

impl Drop for HostBuf {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly the mapping made in `new`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// copy_to_device of each size from pageable and pinned host memory.
pub fn bandwidth(
    backend: Backend,
    sizes: &[u64],
    runs: u32,
    step: &dyn Fn(&str),
) -> Result<Vec<BandwidthCell>, String> {
    if runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    let max = *sizes.iter().max().ok_or("no sizes given")? as usize;
    let dev = Device::open(backend)?;
    let dst = dev.alloc(max)?;
    let host = HostBuf::new(max)?;
    let mut out = Vec::new();
    for memory in ["pageable", "pinned"] {
        let pin = if memory == "pinned" {
            match dev.pin(host.ptr, host.len) {
                Ok(r) => Some(r),
                Err(e) => {
                    eprintln!("warning: cannot pin host memory ({e}); pinned figures skipped");
                    let note = format!("pinning failed: {e}");
                    out.extend(sizes.iter().map(|&b| unmeasured(backend, b, memory, &note)));
                    continue;
                }
            }
        } else {
            None
        };
        for &b in sizes {
            step(&format!("{memory} {}", fmt_bytes(b as f64)));
            let src = host.slice(b as usize);
            dst.copy_from(src)?; // warm-up
            let mut samples = Vec::with_capacity(runs as usize);
            for _ in 0..runs {
                let t = Instant::now();
                dst.copy_from(src)?;
                samples.push(t.elapsed().as_nanos() as u64);
            }
            out.push(measured(backend, b, memory, samples));
        }
        drop(pin);
    }
    Ok(out)
}

fn measured(backend: Backend, bytes: u64, memory: &str, samples: Vec<u64>) -> BandwidthCell {
    let med = median(&samples.iter().map(|&x| x as f64).collect::<Vec<_>>());
    BandwidthCell {
        backend: backend.name(),
        bytes,
        memory: memory.into(),
        median_ns: Some(med),
        gb_per_s: (med > 0.0).then(|| bytes as f64 / med),
        note: None,
        samples_ns: samples,
    }
}

fn unmeasured(backend: Backend, bytes: u64, memory: &str, note: &str) -> BandwidthCell {
    BandwidthCell {
        backend: backend.name(),
        bytes,
        memory: memory.into(),
        median_ns: None,
        gb_per_s: None,
        note: Some(note.into()),
        samples_ns: vec![],
    }
}

/// The bandwidth table.
pub fn bandwidth_table(cells: &[BandwidthCell]) -> String {
    let mut t = Table::new("copy_to_device bandwidth, medians", &["backend", "memory"]);
    t.group("", &["size", "time", "GB/s"]);
    for c in cells {
        t.row(
            vec![c.backend.clone(), c.memory.clone()],
            vec![vec![
                fmt_bytes(c.bytes as f64),
                c.median_ns.map_or("-".into(), fmt_ns),
                c.gb_per_s.map_or("-".into(), |g| format!("{g:.2}")),
            ]],
            c.note.clone(),
        );
    }
    t.render()
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
