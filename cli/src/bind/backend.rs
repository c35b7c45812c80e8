//! The device a benchmark runs on, and the only module of the command that
//! calls leanrt's staging and device API: opening a backend, creating a
//! maker on it, device buffers, pinning, and (CUDA) synchronize and the
//! driver's copy counters.
use super::model::{Policy, RunSample};
use leanrt::device::cuda::{self, CudaDevice};
use leanrt::device::host::HostDevice;
use leanrt::device::PinnedRegion;
use leanrt::staging::{self, lrt_upload_policy, lrt_upload_report, MakerConfig, MakerV1};
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

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

/// The image size of a task window, by the library's own rule (an error
/// when the window is not usable).
pub fn image_bytes(window: u64) -> Result<u64, String> {
    staging::segment_offsets(window)
        .map(|s| s.end)
        .map_err(|e| e.to_string())
}

/// Whether CUDA device `ordinal` can be opened, and a line about it
/// (device count, name, memory, driver) where the driver tells.
pub fn cuda_detail(ordinal: i32) -> Result<Option<String>, String> {
    drop(cuda::open(ordinal).map_err(|e| e.to_string())?);
    Ok(cuda::device_info(ordinal).ok().map(|d| {
        format!(
            "{} device(s); {ordinal}: {}, {:.0} GiB; driver {}.{}",
            d.device_count,
            d.name,
            d.total_mem as f64 / (1u64 << 30) as f64,
            d.driver_version / 1000,
            (d.driver_version % 1000) / 10
        )
    }))
}

/// An open backend; released when the last maker and buffer on it are gone.
pub struct Device {
    dev: Arc<dyn leanrt::device::Device>,
    cuda: Option<Arc<CudaDevice>>,
}

impl Device {
    /// Opens the backend.
    pub fn open(backend: Backend) -> Result<Device, String> {
        Ok(match backend {
            Backend::Host => Device {
                dev: Arc::new(HostDevice),
                cuda: None,
            },
            Backend::Cuda(d) => {
                let cuda = Arc::new(
                    cuda::open(d).map_err(|e| format!("backend cuda:{d} is not available: {e}"))?,
                );
                Device {
                    dev: cuda.clone(),
                    cuda: Some(cuda),
                }
            }
        })
    }

    /// A maker on this device for `policy` at `window` (with a page-locked
    /// mirror when `pin`).
    pub fn maker(&self, policy: Policy, window: u64, pin: bool) -> Result<Maker<'_>, String> {
        let (upload, fresh_mirror) = match policy {
            Policy::FullFresh => (lrt_upload_policy::LRT_UPLOAD_FULL, true),
            Policy::Full => (lrt_upload_policy::LRT_UPLOAD_FULL, false),
            Policy::Bounded => (lrt_upload_policy::LRT_UPLOAD_BOUNDED, false),
            Policy::Compact => (lrt_upload_policy::LRT_UPLOAD_COMPACT, false),
            Policy::Auto => (lrt_upload_policy::LRT_UPLOAD_AUTO, false),
        };
        let config = MakerConfig {
            task_window: window,
            policy: upload,
            pin_mirror: pin,
            fresh_mirror,
            ..MakerConfig::default()
        };
        let maker = MakerV1::new(&config, self.dev.clone()).map_err(|e| e.to_string())?;
        Ok(Maker { dev: self, maker })
    }

    /// The library's device, for a maker created elsewhere in the command.
    pub fn device_arc(&self) -> Arc<dyn leanrt::device::Device> {
        self.dev.clone()
    }

    /// CUDA only (None elsewhere): nanoseconds spent so far inside the
    /// driver's H2D copies of this device.
    pub fn h2d_ns(&self) -> Result<Option<u64>, String> {
        Ok(self.cuda.as_ref().map(|c| c.copy_stats().h2d_ns))
    }

    /// Waits until the device has finished every copy (CUDA: copies from
    /// pageable memory may return before the DMA is done; elsewhere a no-op).
    pub fn synchronize(&self) -> Result<(), String> {
        match &self.cuda {
            Some(c) => c.synchronize().map_err(|e| format!("synchronize: {e}")),
            None => Ok(()),
        }
    }

    /// Page-locks `[ptr, ptr + len)` until the region is dropped; the range
    /// must stay mapped until then.
    pub fn pin(&self, ptr: *mut u8, len: usize) -> Result<PinnedRegion, String> {
        // SAFETY: the caller keeps the range mapped while the region lives
        // (this function's contract).
        unsafe { self.dev.pin(ptr, len) }.map_err(|e| e.to_string())
    }

    /// `len` bytes of device memory, freed when dropped.
    pub fn alloc(&self, len: usize) -> Result<DevBuf<'_>, String> {
        let ptr = self
            .dev
            .alloc(len)
            .map_err(|e| format!("device allocation of {len} bytes: {e}"))?;
        Ok(DevBuf {
            dev: self,
            ptr,
            len,
        })
    }
}

/// A device allocation, freed on drop.
pub struct DevBuf<'a> {
    dev: &'a Device,
    ptr: *mut u8,
    len: usize,
}

impl DevBuf<'_> {
    /// Copies `src[..len]` to the start of this buffer and waits until the
    /// data is on the device.
    pub fn copy_from(&self, src: &[u8]) -> Result<(), String> {
        let len = src.len();
        if len > self.len {
            return Err(format!("{len} bytes do not fit in {}", self.len));
        }
        // SAFETY: `ptr` is a device allocation of `self.len >= len` bytes
        // from this device and `src` is a live host slice of `len` bytes.
        unsafe { self.dev.dev.copy_to(self.ptr, src.as_ptr(), len) }
            .map_err(|e| format!("copy of {len} bytes to the device: {e}"))?;
        // The timed span must end when the data is on the device.
        self.dev.synchronize()
    }
}

impl Drop for DevBuf<'_> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from this device's alloc and is freed once.
        unsafe { self.dev.dev.free(self.ptr) };
    }
}

/// A maker on a device.
pub struct Maker<'a> {
    dev: &'a Device,
    maker: MakerV1,
}

impl Maker<'_> {
    /// Bytes of the whole image.
    pub fn image_bytes(&self) -> u64 {
        self.maker.segments().end
    }

    /// One run: begin, claim `n` (with content), upload; on CUDA also the
    /// synchronize after the upload and the time spent in the driver's copies.
    pub fn run_once(&mut self, n: u64) -> Result<RunSample, String> {
        let h2d_before = self.dev.h2d_ns()?;
        let t0 = Instant::now();
        self.maker
            .begin_run()
            .map_err(|e| format!("begin_run: {e}"))?;
        let t1 = Instant::now();
        for i in 0..n {
            let slot = self
                .maker
                .claim_slot()
                .map_err(|e| format!("claim_slot: {e}"))?;
            write_task(&slot, i);
        }
        let t2 = Instant::now();
        let r = self.maker.upload().map_err(|e| format!("upload: {e}"))?;
        let t3 = Instant::now();
        let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
        let (mut sync_ns, mut h2d_ns) = (None, None);
        if let Some(before) = h2d_before {
            self.dev.synchronize()?;
            sync_ns = Some(ns(t3, Instant::now()));
            h2d_ns = self.dev.h2d_ns()?.map(|after| after - before);
        }
        Ok(RunSample {
            begin_ns: ns(t0, t1),
            claim_ns: ns(t1, t2),
            upload_ns: ns(t2, t3),
            total_ns: ns(t0, t3),
            sync_ns,
            h2d_ns,
            ..sample_of(&r)
        })
    }
}

/// The figures an upload report gives (the caller adds its wall times).
pub(super) fn sample_of(r: &lrt_upload_report) -> RunSample {
    RunSample {
        zero_ns: r.zero_ns,
        relocate_ns: r.relocate_ns,
        copy_ns: r.copy_ns,
        bytes: r.bytes,
        copies: r.copies,
        total_tasks: r.total_tasks,
        path: match r.path {
            lrt_upload_policy::LRT_UPLOAD_FULL => "full",
            lrt_upload_policy::LRT_UPLOAD_BOUNDED => "bounded",
            lrt_upload_policy::LRT_UPLOAD_COMPACT => "compact",
            lrt_upload_policy::LRT_UPLOAD_AUTO => "auto",
        },
        ..RunSample::default()
    }
}

/// Writes what a host writes into a claimed task: a few counts, scalars and
/// the descriptor's kernel id.
fn write_task(slot: &staging::lrt_task_slot, i: u64) {
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
