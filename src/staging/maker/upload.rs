//! How an upload ships the v1 image: the route for this run (by policy, or
//! by AUTO's cost model), relocation of the mirror's host pointers to
//! device addresses and back, and the copies.
use std::mem::size_of;
use std::time::Instant;

use super::super::abi::lrt_upload_policy;
use super::super::layout::{
    live_parts, lrt_sm_segments, lrt_task_descriptor, lrt_task_payload, offsets_for, Part,
    BYTES_PER_LIVE_SLOT,
};
use super::super::pin::CopySource;
use super::{device_kind, elapsed_ns, RuntimeMaker};
use crate::device::CopyCost;
use crate::{Error, ErrorKind, Result};

/// The largest compact image COMPACT gathers on the host and ships in one
/// copy (the number `LRT_UPLOAD_COMPACT`'s contract gives); larger images
/// go straight to their compact offsets.
pub const COMPACT_GATHER_MAX_BYTES: u64 = 192 * 1024;

/// The largest copy AUTO's measurement at create makes from the mirror.
const MEASURE_MAX_BYTES: usize = 1 << 20;

/// The route one upload takes to the device: which bytes, in how many
/// copies, to which device layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UploadRoute {
    /// The whole image, one copy.
    Full,
    /// The live prefixes at their full-window offsets.
    Bounded,
    /// N = W: the mirror is the compact image; one copy of it.
    CompactWhole,
    /// Gathered into the staging buffer, one copy.
    CompactGather,
    /// The live prefixes straight to their compact offsets.
    CompactDirect,
}

impl UploadRoute {
    /// The policy the report names for this route.
    pub(super) fn policy(self) -> lrt_upload_policy {
        match self {
            UploadRoute::Full => lrt_upload_policy::LRT_UPLOAD_FULL,
            UploadRoute::Bounded => lrt_upload_policy::LRT_UPLOAD_BOUNDED,
            _ => lrt_upload_policy::LRT_UPLOAD_COMPACT,
        }
    }

    /// What this route's copies read, for pinning.
    fn source(self, dev: &lrt_sm_segments) -> CopySource {
        match self {
            UploadRoute::Full | UploadRoute::CompactWhole => CopySource::WholeMirror,
            UploadRoute::Bounded | UploadRoute::CompactDirect => CopySource::MirrorPrefixes,
            UploadRoute::CompactGather => CopySource::Gathered { end: dev.end },
        }
    }
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
    pub(super) fn cost(&self, copies: u32, bytes: u64, gathered: u64) -> f64 {
        f64::from(copies) * self.copy.latency_ns
            + bytes as f64 / self.copy.bytes_per_ns.max(1e-9)
            + gathered as f64 / self.gather_bytes_per_ns.max(1e-9)
    }
}

/// Maps pointers into the live prefix `[0, n)` of one segment from one base
/// address to another (host mirror <-> device image).
#[derive(Clone, Copy)]
struct Rebase {
    from: usize,
    to: usize,
    elem: usize,
    n: usize,
}

impl Rebase {
    /// `Some(new address)` for NULL (stays NULL) or the start of an element
    /// in `[0, n)`; `None` for anything else.
    fn map(&self, addr: usize) -> Option<usize> {
        if addr == 0 {
            return Some(0);
        }
        let off = addr.checked_sub(self.from)?;
        (off % self.elem == 0 && off / self.elem < self.n).then_some(self.to + off)
    }

    /// The way back.
    fn back(self) -> Rebase {
        Rebase {
            from: self.to,
            to: self.from,
            ..self
        }
    }
}

/// One upload's plan, fixed once the mirror has been validated.
pub(super) struct Plan {
    pub route: UploadRoute,
    pub n: u64,
    /// The device-side layout.
    pub dev: lrt_sm_segments,
    pay: Rebase,
    task: Rebase,
}

impl RuntimeMaker {
    /// The AUTO cost model in use (the device's, or measured at create).
    pub fn cost_model(&self) -> CostModel {
        self.model
    }

    /// The cost model for AUTO: the device's own figures if it gives them,
    /// else measured into the not yet meaningful device image, from the
    /// mirror's start, which create pins first (`measure_into`).
    pub(super) fn measure_model(&mut self) -> CostModel {
        let len = (self.seg.end as usize).min(MEASURE_MAX_BYTES);
        self.pins.ensure_mirror(&*self.device, 0, len);
        // SAFETY: the device image holds seg.end >= len bytes.
        unsafe { self.measure_into(self.image, len) }
    }

    /// The device's own figures if it gives them, else the fastest of five
    /// 64-byte copies for the latency and one copy of `len` bytes (at most
    /// `MEASURE_MAX_BYTES`) for the bandwidth, from the mirror's start to
    /// `dst`; and one host gather of the same size into the staging buffer.
    /// A failed measurement falls back to [`CostModel::FALLBACK`] with a
    /// warning.
    ///
    /// # Safety
    /// `dst` must be device memory writable for `len` bytes whose contents
    /// do not matter.
    pub(super) unsafe fn measure_into(&self, dst: *mut u8, len: usize) -> CostModel {
        let len = len.min(MEASURE_MAX_BYTES).min(self.mirror.len()).max(64);
        let src = self.mirror.as_ptr();
        let timed = |bytes: usize| -> Result<f64> {
            let t0 = Instant::now();
            // SAFETY: the mirror holds at least `len` bytes (above) and
            // `dst` is writable for them (the caller's contract).
            unsafe { self.device.copy_to(dst, src, bytes) }?;
            Ok(elapsed_ns(t0) as f64)
        };
        let copy: Result<CopyCost> = match self.device.copy_cost() {
            Some(c) => Ok(c),
            None => (|| {
                let mut latency = f64::MAX;
                for _ in 0..5 {
                    latency = latency.min(timed(64)?);
                }
                let big = timed(len)?;
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
                return CostModel::FALLBACK;
            }
        };
        let gather_bytes_per_ns = match &self.staging {
            Some(staging) if staging.len() >= len => {
                let t0 = Instant::now();
                // SAFETY: both mappings hold at least len bytes and are
                // distinct.
                unsafe { std::ptr::copy_nonoverlapping(src, staging.as_ptr(), len) };
                len as f64 / (elapsed_ns(t0) as f64).max(1.0)
            }
            _ => CostModel::FALLBACK.gather_bytes_per_ns,
        };
        CostModel {
            copy,
            gather_bytes_per_ns,
        }
    }

    /// The route an upload of `n` live tasks takes.
    fn choose_route(&self, n: u64) -> UploadRoute {
        let compact = |gather_ok: bool| {
            if n == self.window {
                UploadRoute::CompactWhole
            } else if gather_ok {
                UploadRoute::CompactGather
            } else {
                UploadRoute::CompactDirect
            }
        };
        match self.policy {
            lrt_upload_policy::LRT_UPLOAD_FULL => UploadRoute::Full,
            lrt_upload_policy::LRT_UPLOAD_BOUNDED => UploadRoute::Bounded,
            lrt_upload_policy::LRT_UPLOAD_COMPACT => {
                compact(offsets_for(n).end <= COMPACT_GATHER_MAX_BYTES)
            }
            lrt_upload_policy::LRT_UPLOAD_AUTO => {
                let bytes = self.seg.descriptors + n * BYTES_PER_LIVE_SLOT;
                let bounded = self.model.cost(if n == 0 { 1 } else { 4 }, bytes, 0);
                let gathered = if n == self.window {
                    self.model.cost(1, self.seg.end, 0)
                } else {
                    let end = offsets_for(n).end;
                    self.model.cost(1, end, end)
                };
                if gathered < bounded {
                    compact(true)
                } else {
                    UploadRoute::Bounded
                }
            }
        }
    }

    /// Plans the upload of `n` live slots and validates every live slot's
    /// `payload`/`task` against it; changes nothing.
    pub(super) fn plan(&self, n: u64) -> Result<Plan> {
        let route = self.choose_route(n);
        let dev = match route.policy() {
            lrt_upload_policy::LRT_UPLOAD_COMPACT => offsets_for(n),
            _ => self.seg,
        };
        let host = self.mirror.as_ptr() as usize;
        let device = self.image as usize;
        let rebase = |from: u64, to: u64, elem: usize| Rebase {
            from: host + from as usize,
            to: device + to as usize,
            elem,
            n: n as usize,
        };
        let plan = Plan {
            route,
            n,
            dev,
            pay: rebase(
                self.seg.payloads,
                dev.payloads,
                size_of::<lrt_task_payload>(),
            ),
            task: rebase(
                self.seg.descriptors,
                dev.descriptors,
                size_of::<lrt_task_descriptor>(),
            ),
        };
        for i in 0..n as i32 {
            // SAFETY: i < n <= W; aligned plain-data read inside the mapping.
            let s = unsafe { &*self.slot_at(i).slot_state };
            if plan.pay.map(s.payload as usize).is_none() {
                return Err(Error::invalid_argument(format!(
                    "slot {i}: payload pointer {:p} is not a live payload [0, {n}) of the mirror",
                    s.payload
                )));
            }
            if plan.task.map(s.task as usize).is_none() {
                return Err(Error::invalid_argument(format!(
                    "slot {i}: task pointer {:p} is not a live descriptor [0, {n}) of the mirror",
                    s.task
                )));
            }
        }
        Ok(plan)
    }

    /// Rewrites the live slots' `payload`/`task` to device addresses
    /// (`to_device`) or back; every pointer maps (checked by `plan`).
    pub(super) fn relocate_slots(&mut self, plan: &Plan, to_device: bool) {
        let (pay, task) = if to_device {
            (plan.pay, plan.task)
        } else {
            (plan.pay.back(), plan.task.back())
        };
        for i in 0..plan.n as i32 {
            // SAFETY: i < n <= W: an aligned slot state inside the mapping;
            // plain data, no other live reference.
            let s = unsafe { &mut *self.slot_at(i).slot_state };
            s.payload = pay.map(s.payload as usize).unwrap_or(0) as *mut lrt_task_payload;
            s.task = task.map(s.task as usize).unwrap_or(0) as *mut lrt_task_descriptor;
        }
    }

    fn copy_to_device(&self, dev_off: u64, src: *const u8, len: u64) -> Result<()> {
        let dst = self.image.wrapping_add(dev_off as usize);
        // SAFETY: dst..dst+len lies in the device image (dev_off + len <=
        // end, checked by the callers' layouts) and src is valid for len
        // bytes of the mirror or staging buffer.
        unsafe { self.device.copy_to(dst, src, len as usize) }.map_err(|e| {
            Error::new(
                device_kind(&e, ErrorKind::Device),
                format!("copy of {len} bytes to device offset {dev_off} failed: {e}"),
            )
        })
    }

    /// Grows the pins for what the plan's copies read, then ships the
    /// (relocated) image on the plan's route; returns (copies, bytes).
    pub(super) fn ship(&mut self, plan: &Plan) -> Result<(u32, u64)> {
        self.pins
            .grow_for(&*self.device, plan.n, plan.route.source(&plan.dev));
        let base = self.mirror.as_ptr();
        let seg = self.seg;
        let live = live_parts(&seg, &plan.dev, plan.n);
        match plan.route {
            // A compact layout pitched to N = W is the full layout: the
            // mirror already is the compact image, so it ships as is (direct
            // DMA when pinned) instead of being gathered.
            UploadRoute::Full | UploadRoute::CompactWhole => {
                self.copy_to_device(0, base, seg.end)?;
                Ok((1, seg.end))
            }
            // Straight to their offsets: BOUNDED's are the full layout's,
            // COMPACT's the layout pitched to N.
            UploadRoute::Bounded | UploadRoute::CompactDirect => {
                let (mut copies, mut bytes) = (0, 0);
                for Part { from, to, len } in live {
                    if len == 0 {
                        continue;
                    }
                    self.copy_to_device(to, base.wrapping_add(from as usize), len)?;
                    copies += 1;
                    bytes += len;
                }
                Ok((copies, bytes))
            }
            UploadRoute::CompactGather => {
                let staging = self
                    .staging
                    .as_ref()
                    .ok_or_else(|| Error::internal("COMPACT maker without staging buffer"))?;
                let out = staging.as_ptr();
                for Part { from, to, len } in live {
                    // SAFETY: `from + len <= seg.end` in the mirror and
                    // `to + len <= dev.end <= seg.end` in the staging buffer
                    // (a compact layout for n <= W is never larger); the two
                    // mappings are distinct.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            base.add(from as usize),
                            out.add(to as usize),
                            len as usize,
                        )
                    };
                }
                self.copy_to_device(0, out, plan.dev.end)?;
                Ok((1, plan.dev.end))
            }
        }
    }
}
