//! How an upload ships the v1 image: the route for this run (by policy, or
//! by AUTO's cost model), relocation of the mirror's host pointers to
//! device addresses and back, and the copies.
use std::mem::size_of;

use super::super::abi::lrt_upload_policy;
use super::super::maker::device_kind;
use super::layout::{
    live_parts, lrt_sm_segments, lrt_task_descriptor, lrt_task_payload, offsets_for, Part,
    BYTES_PER_LIVE_SLOT,
};
use super::pins::CopySource;
use super::MakerV1;
use crate::{Error, ErrorKind, Result};

/// The largest compact image COMPACT gathers on the host and ships in one
/// copy (the number `LRT_UPLOAD_COMPACT`'s contract gives); larger images
/// go straight to their compact offsets.
pub const COMPACT_GATHER_MAX_BYTES: u64 = 192 * 1024;

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
    /// What this route's copies read, for pinning (`dev`: the device
    /// layout).
    fn source(self, dev: &lrt_sm_segments) -> CopySource {
        match self {
            UploadRoute::Full | UploadRoute::CompactWhole => CopySource::WholeMirror,
            UploadRoute::Bounded | UploadRoute::CompactDirect => CopySource::MirrorPrefixes,
            UploadRoute::CompactGather => CopySource::Gathered { end: dev.end },
        }
    }

    /// The policy the report names for this route.
    pub(super) fn policy(self) -> lrt_upload_policy {
        match self {
            UploadRoute::Full => lrt_upload_policy::LRT_UPLOAD_FULL,
            UploadRoute::Bounded => lrt_upload_policy::LRT_UPLOAD_BOUNDED,
            _ => lrt_upload_policy::LRT_UPLOAD_COMPACT,
        }
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

impl MakerV1 {
    /// The route an upload of `n` live tasks takes.
    fn choose_route(&self, n: u64) -> UploadRoute {
        let compact = |gather_ok: bool| {
            if n == self.core.window {
                UploadRoute::CompactWhole
            } else if gather_ok {
                UploadRoute::CompactGather
            } else {
                UploadRoute::CompactDirect
            }
        };
        match self.core.policy {
            lrt_upload_policy::LRT_UPLOAD_FULL => UploadRoute::Full,
            lrt_upload_policy::LRT_UPLOAD_BOUNDED => UploadRoute::Bounded,
            lrt_upload_policy::LRT_UPLOAD_COMPACT => {
                compact(offsets_for(n).end <= COMPACT_GATHER_MAX_BYTES)
            }
            lrt_upload_policy::LRT_UPLOAD_AUTO => {
                let bytes = self.seg.descriptors + n * BYTES_PER_LIVE_SLOT;
                let bounded = self.core.model.cost(if n == 0 { 1 } else { 4 }, bytes, 0);
                let gathered = if n == self.core.window {
                    self.core.model.cost(1, self.seg.end, 0)
                } else {
                    let end = offsets_for(n).end;
                    self.core.model.cost(1, end, end)
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
        let host = self.core.mirror.as_ptr() as usize;
        let device = self.core.region.base() as usize;
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
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
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

    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    fn copy_to_device(&self, dev_off: u64, src: *const u8, len: u64) -> Result<()> {
        let dst = self.core.region.base().wrapping_add(dev_off as usize);
        // SAFETY: dst..dst+len lies in the device image (dev_off + len <=
        // end, checked by the callers' layouts) and src is valid for len
        // bytes of the mirror or staging buffer.
        unsafe { self.core.device.copy_to(dst, src, len as usize) }.map_err(|e| {
            Error::new(
                device_kind(&e, ErrorKind::Device),
                format!("copy of {len} bytes to device offset {dev_off} failed: {e}"),
            )
        })
    }

    /// Grows the pins for what the plan's copies read, then ships the
    /// (relocated) image on the plan's route; returns (copies, bytes).
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    pub(super) fn ship(&mut self, plan: &Plan) -> Result<(u32, u64)> {
        self.pins.grow_for(
            &mut self.core,
            &self.seg,
            plan.n,
            plan.route.source(&plan.dev),
        );
        let base = self.core.mirror.as_ptr();
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
