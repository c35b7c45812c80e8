//! Generation 1: the reference at #1659 (6096d3271). [`MakerV1`] builds its
//! image on a `MakerCore` (`super::maker`).
//!
//! Lifecycle of one run (one thread at a time, enforced by `&mut self`):
//! `begin_run` (zero the header, stamp the constants) -> `claim_slot` x N
//! (initialize slot i's device-read fields) -> the host writes the tasks ->
//! `upload` (validate N, relocate, ship per policy, restore) -> the device
//! runs -> `read_status` (the core's).
//!
//! Invariant of this generation, beside the core's: between calls the
//! mirror holds *host* addresses (header arrays, slot `payload`/`task`);
//! `upload` rewrites them to device addresses only for the duration of the
//! copy and restores them before returning, on success and on failure
//! alike.
//!
//! The files, one job each: `layout.rs` (the C structs and the layout
//! arithmetic), `segments.rs` (the checked offsets of a window), `claim.rs`
//! (the reference's claim semantics), `upload.rs` (route choice, relocation,
//! the copies), `pins.rs` (what is pinned when).
use std::mem::{offset_of, size_of};
use std::sync::Arc;
use std::time::Instant;

use super::abi::{lrt_layout, lrt_task_slot, lrt_upload_policy, lrt_upload_report};
use super::maker::{
    elapsed_ns, ns_between, BorrowedImage, DeviceRegion, Gathered, Generation, Maker, MakerConfig,
    MakerCore, Placement, StatusWords, MEASURE_MAX_BYTES,
};
use super::mirror::Mapping;
use super::pin::MakerPins;
use crate::device::Device;
use crate::{Error, Result};

mod claim;
pub(crate) mod layout;
mod pins;
pub(crate) mod segments;
mod upload;

use layout::{lrt_sm_header, lrt_sm_segments};
use pins::V1Pins;
pub use upload::COMPACT_GATHER_MAX_BYTES;

/// A maker of the v1 image (C: an `lrt_runtime_maker` created with
/// `LRT_LAYOUT_V1`). `Send` (a maker may move between threads) but not
/// `Sync`: one thread uses it at a time.
pub struct MakerV1 {
    /// Declared first: it releases the pins before the staging buffer
    /// below is unmapped.
    core: MakerCore,
    /// The full image's layout (the mirror's).
    seg: lrt_sm_segments,
    /// COMPACT's and AUTO's gather buffer (the mirror's size, untouched
    /// until used).
    staging: Option<Mapping>,
    pins: V1Pins,
}

impl Generation for MakerV1 {
    const LAYOUT: lrt_layout = lrt_layout::LRT_LAYOUT_V1;
    const NAME: &'static str = "v1";
    const STATUS_WORDS: StatusWords = StatusWords::new(
        offset_of!(lrt_sm_header, orch_error_code),
        offset_of!(lrt_sm_header, sched_error_code),
    );
}

impl Maker for MakerV1 {
    fn core(&self) -> &MakerCore {
        &self.core
    }
    fn core_mut(&mut self) -> &mut MakerCore {
        &mut self.core
    }
}

impl MakerV1 {
    /// Resolves the window, maps the (untouched) mirror, allocates the device
    /// image once through `device` and pins the mirror if asked. On error
    /// nothing is leaked. A failed device allocation is
    /// `ErrorKind::NoMemory` (or `Unavailable` when the device says so),
    /// with the device's message.
    pub fn new(cfg: &MakerConfig, device: Arc<dyn Device>) -> Result<Self> {
        Self::create(cfg, device, None)
    }

    /// As [`MakerV1::new`], but the uploads go to `image`, which the
    /// caller lends (see [`BorrowedImage`]); nothing is allocated or freed
    /// on the device. `InvalidArgument` for a NULL or too small region.
    pub fn with_image(
        cfg: &MakerConfig,
        device: Arc<dyn Device>,
        image: BorrowedImage,
    ) -> Result<Self> {
        Self::create(cfg, device, Some(image))
    }

    /// The create of both constructors (and of the C handle's).
    pub(crate) fn create(
        cfg: &MakerConfig,
        device: Arc<dyn Device>,
        borrowed: Option<BorrowedImage>,
    ) -> Result<Self> {
        let resolved = cfg.resolve()?;
        let seg = layout::offsets_for(resolved.window);
        let len = seg.end as usize;
        let mirror = Mapping::new(len)?;
        let staging = match cfg.policy {
            lrt_upload_policy::LRT_UPLOAD_COMPACT | lrt_upload_policy::LRT_UPLOAD_AUTO => {
                Some(Mapping::new(len)?)
            }
            _ => None,
        };
        let region = DeviceRegion::new(&device, borrowed, seg.end, Placement::AtStart)?;
        let mut pins = MakerPins::new(cfg.pin_mirror);
        // SAFETY: the core releases its pins before the mappings they
        // cover are unmapped (its Drop; the staging buffer is declared
        // after the core; `remap_mirror` for a fresh mirror).
        let (mirror_pins, staging_pins) = unsafe {
            (
                pins.track(&mirror, "host mirror"),
                staging.as_ref().map(|s| pins.track(s, "staging buffer")),
            )
        };
        let full = cfg.policy == lrt_upload_policy::LRT_UPLOAD_FULL;
        let core = MakerCore::new::<Self>(cfg, resolved, device, mirror, pins, region);
        let mut maker = MakerV1 {
            pins: V1Pins::new(mirror_pins, staging_pins, full, core.window),
            core,
            seg,
            staging,
        };
        maker.pins.pin_mirror(&mut maker.core, &maker.seg);
        if maker.core.policy == lrt_upload_policy::LRT_UPLOAD_AUTO {
            maker.measure_model();
        }
        Ok(maker)
    }

    /// AUTO's cost model, measured into the not yet meaningful device
    /// image from the mirror's start, which is pinned first.
    fn measure_model(&mut self) {
        let len = (self.seg.end as usize).min(MEASURE_MAX_BYTES);
        let core = &mut self.core;
        core.pins.ensure(self.pins.mirror, &core.device, 0, len);
        let dst = core.region.base();
        // SAFETY: the device image holds seg.end >= len bytes, and nothing
        // meaningful yet; the staging buffer is distinct from the mirror.
        unsafe {
            core.measure_model(
                dst,
                len,
                &[],
                self.staging.as_ref().map(|b| (b, Gathered::MirrorStart)),
            )
        };
    }

    /// Segment offsets of the full image.
    pub fn segments(&self) -> lrt_sm_segments {
        self.seg
    }

    fn header_ptr(&self) -> *mut lrt_sm_header {
        self.core.mirror.as_ptr().cast::<lrt_sm_header>()
    }

    fn mirror_at<T>(&self, offset: u64) -> *mut T {
        self.core
            .mirror
            .as_ptr()
            .wrapping_add(offset as usize)
            .cast::<T>()
    }

    /// Slot `i`'s host-mirror addresses (`i` in `[0, W)`).
    fn slot_at(&self, i: i32) -> lrt_task_slot {
        let at = self.seg.slot(i as u64);
        lrt_task_slot {
            index: i,
            descriptor: self.mirror_at(at.descriptor),
            payload: self.mirror_at(at.payload),
            slot_state: self.mirror_at(at.slot_state),
        }
    }

    /// Starts a run: zeroes the header (FULL: the whole mirror; FRESH: on a
    /// newly mapped mirror) and writes every header field as the reference's
    /// `init_per_ring` does on the host (the list is
    /// `lrt_runtime_maker_begin_run`'s contract). Returns the mirror's
    /// header.
    pub fn begin_run(&mut self) -> Result<*mut lrt_sm_header> {
        let t0 = Instant::now();
        if self.core.fresh_mirror {
            self.core.remap_mirror(Some(self.pins.mirror))?;
            self.pins.pin_mirror(&mut self.core, &self.seg);
        }
        let zero_len = match self.core.policy {
            lrt_upload_policy::LRT_UPLOAD_FULL => self.core.mirror.len(),
            _ => size_of::<lrt_sm_header>(),
        };
        // SAFETY: the mirror is a live read/write mapping of at least
        // `seg.end >= zero_len` bytes owned by the core.
        unsafe { std::ptr::write_bytes(self.core.mirror.as_ptr(), 0, zero_len) };
        let zeroed = elapsed_ns(t0);
        let host = self.seg.arrays_at(self.core.mirror.as_ptr() as usize);
        // SAFETY: the header lies at the start of the mapping, suitably
        // aligned (page-aligned), and every bit pattern is a valid header;
        // no other reference to it is live during this call.
        let h = unsafe { &mut *self.header_ptr() };
        self.stamp_header(h, host, self.seg.end);
        h.current_task_index = 0;
        h.last_task_alive = 0;
        h.completed_watermark = -1;
        h.orchestrator_done = 0;
        h.heap_size = self.core.heap_size;
        h.orch_error_code = 0;
        h.sched_error_bitmap = 0;
        h.sched_error_code = 0;
        h.sched_error_thread = -1;
        self.core.begin(zeroed);
        Ok(self.header_ptr())
    }

    /// Writes the window constants, the four array pointers and the size of
    /// the image they describe.
    fn stamp_header(&self, h: &mut lrt_sm_header, arrays: [usize; 4], total_size: u64) {
        h.task_window_size = self.core.window;
        // The window is at most LRT_MAX_TASK_WINDOW, so the mask fits an i32.
        h.task_window_mask = (self.core.window - 1) as i32;
        h.task_descriptors_offset = self.seg.descriptors;
        h.task_descriptors = arrays[0] as *mut _;
        h.task_payloads = arrays[1] as *mut _;
        h.slot_states = arrays[2] as *mut _;
        h.completion_flags = arrays[3] as *mut u8;
        h.total_size = total_size;
    }

    /// Reads `current_task_index` from the mirror.
    fn current_index(&self) -> i32 {
        // SAFETY: in-bounds, aligned read of plain data in the owned mapping.
        unsafe { (*self.header_ptr()).current_task_index }
    }

    /// Validates `total_tasks = current_task_index` and every live slot
    /// pointer, relocates, ships the image per policy and restores the
    /// mirror's host pointers (the contract is `lrt_runtime_maker_upload`'s).
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    pub fn upload(&mut self) -> Result<lrt_upload_report> {
        self.core.require_open("upload before begin_run")?;
        let t_reloc = Instant::now();
        let total = self.current_index();
        let window = self.core.window;
        if total < 0 || total as u64 > window {
            return Err(Error::out_of_range(format!(
                "total_tasks (current_task_index) {total} is outside [0, {window}]"
            )));
        }
        let plan = self.plan(total as u64)?;
        // Everything is valid: relocate.
        // SAFETY: the header is plain data at the start of the mapping.
        let saved_header = unsafe { *self.header_ptr() };
        let image = self.core.region.base();
        let dev_arrays = plan.dev.arrays_at(image as usize);
        // SAFETY: as in begin_run.
        let h = unsafe { &mut *self.header_ptr() };
        self.stamp_header(h, dev_arrays, plan.dev.end);
        // Uploading ends the orchestration: the shipped header says so (the
        // reference's host marks it done before its copy to the device). The
        // mirror gets back what the host left there, as for the pointers.
        h.orchestrator_done = 1;
        self.relocate_slots(&plan, true);
        let t_copy = Instant::now();
        let relocate_ns = ns_between(t_reloc, t_copy);

        let shipped = self.ship(&plan);
        let copy_ns = elapsed_ns(t_copy);
        // The run has been shipped or its copy failed: either way it is over
        // for the device and the image (a retry begins a run again).
        self.core.end_upload(image, shipped.is_ok());

        // Restore the host view, whatever the copy did.
        self.relocate_slots(&plan, false);
        // SAFETY: as in begin_run.
        unsafe { *self.header_ptr() = saved_header };

        let (copies, bytes) = shipped?;
        Ok(lrt_upload_report {
            total_tasks: total,
            copies,
            bytes,
            zero_ns: self.core.last_zero_ns,
            relocate_ns,
            copy_ns,
            path: plan.route.policy(),
        })
    }
}
