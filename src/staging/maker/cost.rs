//! What LRT_UPLOAD_AUTO decides with, in every generation: a copy costs a
//! fixed latency plus bytes over the device's bandwidth, a host gather bytes
//! over the host's gather bandwidth. The figures are the device's own where
//! it gives them, else measured once (when is the generation's: v1 at
//! create, v2 at its first upload), else [`CostModel::FALLBACK`].
use std::time::Instant;

use super::super::mirror::Mapping;
use super::{elapsed_ns, MakerCore};
use crate::device::CopyCost;
use crate::Result;

/// The largest copy a measurement makes from the mirror.
pub(crate) const MEASURE_MAX_BYTES: usize = 1 << 20;

/// The fewest bytes a gather measurement copies (below, the clock's
/// resolution would count).
const GATHER_MIN_BYTES: usize = 4096;

/// Which bytes the gather figure of [`MakerCore::measure_model`] is timed on.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Gathered {
    /// The mirror's first bytes, however the host left them (v1, at create).
    MirrorStart,
    /// `bytes` (at least 4 KiB, at most 1 MiB) from mirror offset `from`,
    /// which the host just wrote, into the warmed buffer: what an upload's
    /// gather reads (v2, at its first upload).
    HostWritten { from: u64, bytes: u64 },
}

/// What AUTO decides with: the device's per-copy cost and the host's gather
/// bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    pub copy: CopyCost,
    /// Bytes per nanosecond of a single-thread host gather (memcpy).
    pub gather_bytes_per_ns: f64,
}

impl CostModel {
    /// Figures of a CUDA copy from pageable memory on a current machine,
    /// used when nothing better is known: 10 us per copy, 25 GB/s, a 6 GB/s
    /// gather.
    pub const FALLBACK: CostModel = CostModel {
        copy: CopyCost {
            latency_ns: 10_000.0,
            bytes_per_ns: 25.0,
        },
        gather_bytes_per_ns: 6.0,
    };

    /// Estimated nanoseconds of `copies` copies of `bytes` bytes in all,
    /// after gathering `gathered` bytes on the host.
    pub(crate) fn cost(&self, copies: u32, bytes: u64, gathered: u64) -> f64 {
        f64::from(copies) * self.copy.latency_ns
            + bytes as f64 / self.copy.bytes_per_ns.max(1e-9)
            + gathered as f64 / self.gather_bytes_per_ns.max(1e-9)
    }
}

impl MakerCore {
    /// Sets AUTO's cost model: the device's own figures if it gives them,
    /// else measured from the mirror into `dst` (`len` bytes, at most
    /// 1 MiB, at least 64, for the bandwidth: one copy); and one host
    /// gather into `gather`'s buffer of the bytes `Gathered` names (None, or
    /// for `MirrorStart` a buffer shorter than `len`: the fallback's gather
    /// figure). The latency
    /// is the median of 64-byte copies made where the small copies of an
    /// upload go: from each of `spots`' mirror offsets to its offset from
    /// `dst` (the pools of a v2 image), before anything else is written
    /// there, so that each pays what a copy of an upload pays (a call
    /// through the device, cold lines at both ends; not the first touch of
    /// a page, which an untimed copy to another line of it pays first, as
    /// an untimed bandwidth copy does before the timed one); without spots, the
    /// fastest of five 64-byte copies from the mirror's start (v1's
    /// figure). A failed measurement falls back to [`CostModel::FALLBACK`]
    /// with a warning.
    ///
    /// # Safety
    /// `dst` must be device memory writable for `len` bytes (at least 64)
    /// whose contents do not matter, every spot's destination + 64 within
    /// them and its source + 64 within the mirror; `gather`'s buffer is distinct
    /// from the mirror.
    pub(crate) unsafe fn measure_model(
        &mut self,
        dst: *mut u8,
        len: usize,
        spots: &[(u64, u64)],
        gather: Option<(&Mapping, Gathered)>,
    ) {
        let room = len;
        let len = len.min(MEASURE_MAX_BYTES).min(self.mirror.len()).max(64);
        let src = self.mirror.as_ptr();
        let timed = |to: u64, from: u64, bytes: usize| -> Result<f64> {
            let t0 = Instant::now();
            // SAFETY: the source lies in the mirror and the destination in
            // `dst`'s writable bytes (the caller's contract, and `len`
            // above for the bandwidth copy).
            unsafe {
                self.device
                    .copy_to(dst.add(to as usize), src.add(from as usize), bytes)
            }?;
            Ok(elapsed_ns(t0) as f64)
        };
        let copy: Result<CopyCost> = match self.device.copy_cost() {
            Some(c) => Ok(c),
            None => (|| {
                let latency = if spots.is_empty() {
                    let mut fastest = f64::MAX;
                    for _ in 0..5 {
                        fastest = fastest.min(timed(0, 0, 64)?);
                    }
                    fastest
                } else {
                    // A first touch of the destination's pages is paid
                    // once, not by every upload: an untimed pass first
                    // faults in each spot's page through another line of
                    // it, 2 KiB away, so that the timed copy still meets
                    // cold lines.
                    for &(to, _) in spots {
                        let other = if to % 4096 < 2048 {
                            to + 2048
                        } else {
                            to - 2048
                        };
                        if other as usize + 64 <= room {
                            timed(other, 0, 64)?;
                        }
                    }
                    let mut each = Vec::with_capacity(spots.len());
                    for &(to, from) in spots {
                        each.push(timed(to, from, 64)?);
                    }
                    each.sort_by(f64::total_cmp);
                    each[each.len() / 2]
                };
                // As for the spots: the pages faulted in untimed first.
                timed(0, 0, len)?;
                let big = timed(0, 0, len)?;
                Ok(CopyCost {
                    latency_ns: latency,
                    bytes_per_ns: len as f64 / (big - latency).max(1.0),
                })
            })(),
        };
        let copy = match copy {
            Ok(c) => c,
            Err(e) => {
                crate::diag::warn(&format!(
                    "could not measure the device's copy cost, using fallback figures: {e}"
                ));
                self.model = CostModel::FALLBACK;
                return;
            }
        };
        let gather_bytes_per_ns = match gather {
            Some((buf, Gathered::MirrorStart)) if buf.len() >= len => {
                // v1's one cold gather.
                let t0 = Instant::now();
                // SAFETY: both mappings hold at least len bytes and are
                // distinct (the caller's contract).
                unsafe { std::ptr::copy_nonoverlapping(src, buf.as_ptr(), len) };
                len as f64 / (elapsed_ns(t0) as f64).max(1.0)
            }
            Some((buf, Gathered::HostWritten { from, bytes })) => {
                let bytes = (bytes as usize)
                    .clamp(GATHER_MIN_BYTES, MEASURE_MAX_BYTES)
                    .min(buf.len())
                    .min(self.mirror.len().saturating_sub(from as usize));
                // The staging buffer's pages faulted in first: an upload's
                // gather writes a warm buffer.
                // SAFETY: inside the buffer (`bytes <= buf.len()`).
                unsafe { std::ptr::write_bytes(buf.as_ptr(), 0, bytes) };
                let t0 = Instant::now();
                // SAFETY: `from + bytes` lies inside the mirror and `bytes`
                // inside the buffer (above); the mappings are distinct.
                unsafe {
                    std::ptr::copy_nonoverlapping(src.add(from as usize), buf.as_ptr(), bytes)
                };
                bytes as f64 / (elapsed_ns(t0) as f64).max(1.0)
            }
            _ => CostModel::FALLBACK.gather_bytes_per_ns,
        };
        self.model = CostModel {
            copy,
            gather_bytes_per_ns,
        };
    }
}
