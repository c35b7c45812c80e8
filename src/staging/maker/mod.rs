//! The runtime maker: builds a run's SM image in an init-on-write host mirror
//! and ships to the device only what the device will read.
//!
//! Lifecycle of one run (one thread at a time, enforced by `&mut self`):
//! `begin_run` (zero the header, stamp the constants) -> `claim_slot` x N
//! (initialize slot i's device-read fields) -> the host writes the tasks ->
//! `upload` (validate N, relocate, ship per policy, restore) -> the device
//! runs -> `read_status`.
//!
//! Invariants:
//! * The mirror is never pre-touched. A reused mirror's slots hold whatever
//!   an earlier run left; only the header and claimed slots are written, so
//!   nothing outside `[0, N)` may be shipped or trusted (init-on-write).
//! * Between calls the mirror holds *host* addresses (header arrays, slot
//!   `payload`/`task`); `upload` rewrites them to device addresses only for
//!   the duration of the copy and restores them before returning, on success
//!   and on failure alike.
//! * `upload` validates everything (`N`, every live slot pointer) before it
//!   changes or copies a byte; a rejected upload leaves the mirror and the
//!   device image as they were.
//!
//! The files, one job each: `config` (the settings and where they come
//! from), `claim` (the reference's claim semantics), `upload` (route choice
//! and cost model, relocation, the copies); the pinning policy is
//! `super::pin::MakerPins`. What is specific to the v1 image is its layout
//! (`super::layout`), `claim` and the relocation and parts in `upload`; a
//! second image layout is a layout file of its own with its claim and
//! upload beside these, selected once per maker at create.
use std::ffi::c_void;
use std::mem::{offset_of, size_of};
use std::sync::Arc;
use std::time::Instant;

use super::abi::{lrt_layout, lrt_task_slot, lrt_upload_policy, lrt_upload_report};
use super::layout::{lrt_sm_header, lrt_sm_segments, segment_offsets};
use super::layout_v2::lrt_v2_sm_header;
use super::mirror::Mapping;
use super::pin::MakerPins;
use crate::device::Device;
use crate::{Error, ErrorKind, Result};

mod claim;
mod claim_v2;
mod config;
mod ship_v2;
mod upload;
mod upload_v2;
mod v2_state;

pub use claim::ClaimDesc;
pub use claim_v2::{TensorRecord, V2ClaimDesc};
pub use config::{MakerConfig, HEAP_SIZE_ENV, TASK_WINDOW_ENV};
pub use ship_v2::V2Frame;
pub use upload::{CostModel, COMPACT_GATHER_MAX_BYTES};

/// `kind` for a device failure, unless the device reports itself
/// unavailable (e.g. a CUDA device inherited across `fork`).
fn device_kind(e: &Error, kind: ErrorKind) -> ErrorKind {
    if e.kind() == ErrorKind::Unavailable {
        ErrorKind::Unavailable
    } else {
        kind
    }
}

fn elapsed_ns(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A region of device memory the caller lends the maker for its image: at
/// least the image's size, valid while the maker may copy into it or read
/// it back (until it is replaced or the maker dropped). The maker never
/// frees it.
#[derive(Clone, Copy, Debug)]
pub struct BorrowedImage {
    pub ptr: *mut c_void,
    pub len: usize,
}

/// The image the maker allocated itself, freed at drop through the device
/// that allocated it (which a later `set_device` does not change).
struct OwnedImage {
    device: Arc<dyn Device>,
    ptr: *mut u8,
}

/// `b` if it can hold an image of `end` bytes.
fn check_borrowed(b: BorrowedImage, end: u64) -> Result<*mut u8> {
    if b.ptr.is_null() {
        return Err(Error::invalid_argument("the borrowed device image is NULL"));
    }
    if (b.len as u64) < end {
        return Err(Error::invalid_argument(format!(
            "the borrowed device image has {} bytes; the image needs {end}",
            b.len
        )));
    }
    Ok(b.ptr.cast())
}

/// The device region of an image of `len` bytes: `borrowed` if it can hold
/// it, else one allocated through `device` (owned, freed at drop). A failed
/// allocation is `NoMemory` (or `Unavailable` when the device says so).
fn device_region(
    device: &Arc<dyn Device>,
    borrowed: Option<BorrowedImage>,
    len: u64,
) -> Result<(*mut u8, Option<OwnedImage>)> {
    if let Some(b) = borrowed {
        return Ok((check_borrowed(b, len)?, None));
    }
    let ptr = device.alloc(len as usize).map_err(|e| {
        Error::new(
            device_kind(&e, ErrorKind::NoMemory),
            format!("device allocation of the {len}-byte image failed: {e}"),
        )
    })?;
    let owner = Arc::clone(device);
    Ok((ptr, Some(OwnedImage { device: owner, ptr })))
}

/// What a layout's create builds for its maker (`RuntimeMaker::assemble`).
struct Parts {
    seg: lrt_sm_segments,
    mirror: Mapping,
    staging: Option<Mapping>,
    pins: MakerPins,
    image: *mut u8,
    owned: Option<OwnedImage>,
    v2: Option<v2_state::V2State>,
}

/// The runtime maker (C: `lrt_runtime_maker`). `Send` (a maker may move
/// between threads) but not `Sync`: one thread uses it at a time.
pub struct RuntimeMaker {
    device: Arc<dyn Device>,
    window: u64,
    policy: lrt_upload_policy,
    fresh_mirror: bool,
    heap_size: u64,
    /// The full image's layout (the mirror's).
    seg: lrt_sm_segments,
    mirror: Mapping,
    /// COMPACT's and AUTO's gather buffer (same size as the mirror,
    /// untouched until used).
    staging: Option<Mapping>,
    /// What is page-locked of the mirror and the staging buffer; released
    /// before either is unmapped.
    pins: MakerPins,
    /// AUTO's cost model.
    model: CostModel,
    /// The device image the uploads go to: the owned one or a borrowed one.
    image: *mut u8,
    /// The image allocated at create (None for a maker that only borrows).
    owned: Option<OwnedImage>,
    /// `begin_run` has been called (claim/upload allowed).
    run_open: bool,
    /// Between `begin_run` and the upload that ships that run: the device
    /// and the image may not change.
    in_run: bool,
    /// The last upload succeeded (the device holds a complete image).
    uploaded: bool,
    /// Where the last successful upload put the image's header on the
    /// device (what `read_status` reads).
    shipped_to: *mut u8,
    /// Nanoseconds the last `begin_run` spent zeroing.
    last_zero_ns: u64,
    /// A layout-v2 maker's own state (`None`: layout v1). The mirror, the
    /// staging buffer and the device image above are then v2's.
    v2: Option<v2_state::V2State>,
}

// SAFETY: every pointer the maker holds (mirror, staging, device image) is
// owned by it and reached only through `&mut self` or `&self` reads of plain
// addresses; the device is `Send + Sync`. Not Sync: no `&self` method is
// meant to run concurrently with another call.
unsafe impl Send for RuntimeMaker {}

impl RuntimeMaker {
    /// Resolves the window, maps the (untouched) mirror, allocates the device
    /// image once through `device` and pins the mirror if asked. On error
    /// nothing is leaked. A failed device allocation is
    /// `ErrorKind::NoMemory` (or `Unavailable` when the device says so),
    /// with the device's message.
    pub fn new(cfg: &MakerConfig, device: Arc<dyn Device>) -> Result<Self> {
        Self::build(cfg, device, None)
    }

    /// As [`RuntimeMaker::new`], but the uploads go to `image`, which the
    /// caller lends (see [`BorrowedImage`]); nothing is allocated or freed
    /// on the device. `InvalidArgument` for a NULL or too small region,
    /// except that a v2 maker may take none (NULL, 0): its uploads then
    /// name their destination (`v2_upload_frame`).
    pub fn with_image(
        cfg: &MakerConfig,
        device: Arc<dyn Device>,
        image: BorrowedImage,
    ) -> Result<Self> {
        Self::build(cfg, device, Some(image))
    }

    fn build(
        cfg: &MakerConfig,
        device: Arc<dyn Device>,
        borrowed: Option<BorrowedImage>,
    ) -> Result<Self> {
        if cfg.layout == lrt_layout::LRT_LAYOUT_V2 {
            return Self::new_v2(cfg, device, borrowed);
        }
        let resolved = cfg.resolve()?;
        let window = resolved.window;
        let seg = segment_offsets(window)?;
        let len = seg.end as usize;
        let mirror = Mapping::new(len)?;
        let staging = match cfg.policy {
            lrt_upload_policy::LRT_UPLOAD_COMPACT | lrt_upload_policy::LRT_UPLOAD_AUTO => {
                Some(Mapping::new(len)?)
            }
            _ => None,
        };
        let (image, owned) = device_region(&device, borrowed, seg.end)?;
        // SAFETY: the maker releases its pins before the mappings they
        // cover are unmapped (Drop, and begin_run for a fresh mirror).
        let pins = unsafe {
            MakerPins::new(
                cfg.pin_mirror,
                cfg.policy == lrt_upload_policy::LRT_UPLOAD_FULL,
                seg,
                window,
                &mirror,
                staging.as_ref(),
                &*device,
            )
        };
        let parts = Parts {
            seg,
            mirror,
            staging,
            pins,
            image,
            owned,
            v2: None,
        };
        let mut maker = Self::assemble(cfg, device, window, resolved.heap_size, parts);
        if maker.policy == lrt_upload_policy::LRT_UPLOAD_AUTO {
            maker.model = maker.measure_model();
        }
        Ok(maker)
    }

    /// The one constructor of both layouts' makers: the settings, what the
    /// layout's create built, the fallback cost model (AUTO measures its
    /// own) and no run yet.
    fn assemble(
        cfg: &MakerConfig,
        device: Arc<dyn Device>,
        window: u64,
        heap_size: u64,
        p: Parts,
    ) -> Self {
        RuntimeMaker {
            device,
            window,
            policy: cfg.policy,
            fresh_mirror: cfg.fresh_mirror,
            heap_size,
            seg: p.seg,
            mirror: p.mirror,
            staging: p.staging,
            pins: p.pins,
            model: CostModel::FALLBACK,
            image: p.image,
            owned: p.owned,
            run_open: false,
            in_run: false,
            uploaded: false,
            shipped_to: std::ptr::null_mut(),
            last_zero_ns: 0,
            v2: p.v2,
        }
    }

    /// Segment offsets of the full image.
    pub fn segments(&self) -> lrt_sm_segments {
        self.seg
    }
    /// The resolved task window.
    pub fn task_window(&self) -> u64 {
        self.window
    }
    /// The upload policy.
    pub fn policy(&self) -> lrt_upload_policy {
        self.policy
    }
    /// The resolved heap size written to the header.
    pub fn heap_size(&self) -> u64 {
        self.heap_size
    }
    /// The device image the uploads go to (its header is at offset 0 under
    /// every policy; v2: the compact image, after the room for the frame
    /// before it).
    pub fn device_image(&self) -> *mut c_void {
        if self.image.is_null() {
            // A v2 maker without a region of its own (`with_image`).
            return std::ptr::null_mut();
        }
        self.image
            .wrapping_add(self.v2_image_off())
            .cast::<c_void>()
    }

    /// Where a v2 image starts in the device region (0 for v1): the first
    /// 64-aligned address past the room for the frame before it.
    fn v2_image_off(&self) -> usize {
        self.v2.as_ref().map_or(0, |v| {
            let start = self.image as u64 + v.frame_before;
            (start.div_ceil(64) * 64 - self.image as u64) as usize
        })
    }
    /// The image layout the maker builds.
    pub fn layout(&self) -> lrt_layout {
        if self.v2.is_some() {
            lrt_layout::LRT_LAYOUT_V2
        } else {
            lrt_layout::LRT_LAYOUT_V1
        }
    }

    /// `InvalidArgument` unless this is a layout-v1 maker: the v1 calls
    /// (`what`) do not apply to the v2 image.
    fn v1_only(&self, what: &str) -> Result<()> {
        match self.v2 {
            None => Ok(()),
            Some(_) => Err(Error::invalid_argument(format!(
                "{what} builds the v1 image; this maker was created with layout v2 \
                 (use the v2 calls)"
            ))),
        }
    }

    /// Refuses a change of device or image in the middle of a run.
    fn between_runs(&self, what: &str) -> Result<()> {
        if self.in_run {
            return Err(Error::state(format!(
                "{what} between begin_run and the upload of that run; change it \
                 between runs"
            )));
        }
        Ok(())
    }

    /// Sends the next uploads (and `read_status`) to `image`, a region the
    /// caller lends, or with None back to the image the maker allocated.
    /// Only between runs (`State`); `InvalidArgument` for a NULL or too
    /// small region, or None for a maker that never had an image of its
    /// own. `read_status` then waits for an upload to the new image.
    pub fn set_device_image(&mut self, image: Option<BorrowedImage>) -> Result<()> {
        self.between_runs("the device image cannot change")?;
        let need = self.v2.as_ref().map_or(self.seg.end, |v| v.device_len);
        let ptr = match image {
            Some(b) => check_borrowed(b, need)?,
            None => match &self.owned {
                Some(o) => o.ptr,
                None => {
                    return Err(Error::invalid_argument(
                        "this maker has no device image of its own to return to",
                    ))
                }
            },
        };
        self.image = ptr;
        self.uploaded = false;
        Ok(())
    }

    /// Copies (and pins) through `device` from now on; the maker's own
    /// image is still freed through the device that allocated it. Only
    /// between runs (`State`). AUTO keeps the cost model it has.
    pub fn set_device(&mut self, device: Arc<dyn Device>) -> Result<()> {
        self.between_runs("the device cannot change")?;
        self.device = device;
        Ok(())
    }

    fn header_ptr(&self) -> *mut lrt_sm_header {
        self.mirror.as_ptr().cast::<lrt_sm_header>()
    }

    fn mirror_at<T>(&self, offset: u64) -> *mut T {
        self.mirror
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
        self.v1_only("begin_run")?;
        let t0 = Instant::now();
        if self.fresh_mirror {
            // The baseline's "allocate a new image every run".
            let fresh = Mapping::new(self.seg.end as usize)?;
            self.pins.release_mirror();
            self.mirror = fresh;
            // SAFETY: as in `new`; the old mirror's regions were released
            // before it was unmapped.
            unsafe { self.pins.attach_mirror(&self.mirror, &*self.device) };
        }
        let zero_len = match self.policy {
            lrt_upload_policy::LRT_UPLOAD_FULL => self.mirror.len(),
            _ => size_of::<lrt_sm_header>(),
        };
        // SAFETY: the mirror is a live read/write mapping of at least
        // `seg.end >= zero_len` bytes owned by self.
        unsafe { std::ptr::write_bytes(self.mirror.as_ptr(), 0, zero_len) };
        self.last_zero_ns = elapsed_ns(t0);
        let host = self.seg.arrays_at(self.mirror.as_ptr() as usize);
        // SAFETY: the header lies at the start of the mapping, suitably
        // aligned (page-aligned), and every bit pattern is a valid header;
        // no other reference to it is live during this call.
        let h = unsafe { &mut *self.header_ptr() };
        self.stamp_header(h, host, self.seg.end);
        h.current_task_index = 0;
        h.last_task_alive = 0;
        h.completed_watermark = -1;
        h.orchestrator_done = 0;
        h.heap_size = self.heap_size;
        h.orch_error_code = 0;
        h.sched_error_bitmap = 0;
        h.sched_error_code = 0;
        h.sched_error_thread = -1;
        self.run_open = true;
        self.in_run = true;
        Ok(self.header_ptr())
    }

    /// Ends the open run without shipping it: claims and uploads need a new
    /// `begin_run`, and the device and image may change again. The mirror is
    /// left as it is; `read_status` still reports the last upload. A no-op
    /// without an open run.
    pub fn abort_run(&mut self) {
        self.run_open = false;
        self.in_run = false;
    }

    /// Writes the window constants, the four array pointers and the size of
    /// the image they describe.
    fn stamp_header(&self, h: &mut lrt_sm_header, arrays: [usize; 4], total_size: u64) {
        h.task_window_size = self.window;
        // The window is at most MAX_TASK_WINDOW, so the mask fits an i32.
        h.task_window_mask = (self.window - 1) as i32;
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
    /// mirror's host pointers.
    pub fn upload(&mut self) -> Result<lrt_upload_report> {
        self.v1_only("upload")?;
        if !self.run_open {
            return Err(Error::state("upload before begin_run"));
        }
        let t_reloc = Instant::now();
        let total = self.current_index();
        if total < 0 || total as u64 > self.window {
            return Err(Error::out_of_range(format!(
                "total_tasks (current_task_index) {total} is outside [0, {}]",
                self.window
            )));
        }
        let plan = self.plan(total as u64)?;
        // Everything is valid: relocate.
        // SAFETY: the header is plain data at the start of the mapping.
        let saved_header = unsafe { *self.header_ptr() };
        let dev_arrays = plan.dev.arrays_at(self.image as usize);
        // SAFETY: as in begin_run.
        let h = unsafe { &mut *self.header_ptr() };
        self.stamp_header(h, dev_arrays, plan.dev.end);
        // Uploading ends the orchestration: the shipped header says so (the
        // reference's host marks it done before its copy to the device). The
        // mirror gets back what the host left there, as for the pointers.
        h.orchestrator_done = 1;
        self.relocate_slots(&plan, true);
        let relocate_ns = elapsed_ns(t_reloc);

        let t_copy = Instant::now();
        let shipped = self.ship(&plan);
        let copy_ns = elapsed_ns(t_copy);
        // The run has been shipped or its copy failed: either way it is over
        // for the device and the image (a retry begins a run again).
        self.in_run = false;

        // Restore the host view, whatever the copy did.
        self.relocate_slots(&plan, false);
        // SAFETY: as in begin_run.
        unsafe { *self.header_ptr() = saved_header };

        let (copies, bytes) = match shipped {
            Ok(v) => v,
            Err(e) => {
                self.uploaded = false;
                return Err(e);
            }
        };
        self.uploaded = true;
        self.shipped_to = self.image;
        Ok(lrt_upload_report {
            total_tasks: total,
            copies,
            bytes,
            zero_ns: self.last_zero_ns,
            relocate_ns,
            copy_ns,
            path: plan.route.policy(),
        })
    }

    /// Bytes of the mirror and the staging buffer page-locked now (0 without
    /// `pin_mirror`, or where the device cannot pin).
    pub fn pinned_bytes(&self) -> u64 {
        self.pins.bytes()
    }

    /// Pin calls made so far (at create, growths, fresh mirrors).
    pub fn pin_calls(&self) -> u32 {
        self.pins.pin_calls()
    }

    /// Whether pinning was asked for and a pin failed (the copies then read
    /// pageable memory where nothing was pinned).
    pub fn pin_failed(&self) -> bool {
        self.pins.failed()
    }

    /// Copies the device header's error words back: 0, or the negated
    /// `orch_error_code`, else the negated `sched_error_code` (the v2
    /// header's, for a v2 maker).
    pub fn read_status(&mut self) -> Result<i32> {
        if !self.uploaded {
            return Err(Error::state("read_status before a successful upload"));
        }
        // (bytes from the header to the two words)
        let (orch, sched) = match &self.v2 {
            None => (
                offset_of!(lrt_sm_header, orch_error_code),
                offset_of!(lrt_sm_header, sched_error_code),
            ),
            Some(_) => (
                offset_of!(lrt_v2_sm_header, orch_error_code),
                offset_of!(lrt_v2_sm_header, sched_error_code),
            ),
        };
        let mut words = [0u8; size_of::<lrt_sm_header>()];
        let len = sched + 4;
        // SAFETY: reads `len` (< 320) bytes of the header the last upload
        // wrote at `shipped_to` into a local buffer at least that long.
        unsafe {
            self.device
                .copy_from(words.as_mut_ptr(), self.shipped_to, len)
        }
        .map_err(|e| {
            Error::new(
                device_kind(&e, ErrorKind::Device),
                format!("copy of the header from the device failed: {e}"),
            )
        })?;
        let word =
            |o: usize| i32::from_ne_bytes([words[o], words[o + 1], words[o + 2], words[o + 3]]);
        let (orch, sched) = (word(orch), word(sched));
        Ok(if orch != 0 {
            orch.wrapping_neg()
        } else {
            sched.wrapping_neg()
        })
    }
}

impl Drop for RuntimeMaker {
    fn drop(&mut self) {
        // Unpin before the mappings are unmapped (fields drop afterwards).
        self.pins.release();
        if let Some(o) = self.owned.take() {
            // SAFETY: the image came from this device's alloc and is freed
            // exactly once, here; a borrowed image is never freed.
            unsafe { o.device.free(o.ptr) };
        }
    }
}
