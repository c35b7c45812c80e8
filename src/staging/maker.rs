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
use std::ffi::c_void;
use std::mem::size_of;
use std::sync::Arc;
use std::time::Instant;

use super::layout::{
    offsets_for, segment_offsets, SmHeader, SmSegments, TaskDescriptor, TaskPayload, TaskSlotState,
    DEFAULT_TASK_WINDOW, MAX_FANIN, MAX_TASK_WINDOW,
};
use super::mirror::Mapping;
use super::pin::Pins;
use crate::device::{CopyCost, Device};
use crate::{Error, ErrorKind, Result};

/// The environment variable read when the config leaves the window at 0.
pub const TASK_WINDOW_ENV: &str = "PTO2_RING_TASK_WINDOW";
/// The environment variable read when the config leaves the heap size at 0.
pub const HEAP_SIZE_ENV: &str = "PTO2_RING_HEAP";
/// The header's `heap_size` when neither the config nor the environment sets
/// one: the reference runtime's default, 256 MiB.
pub(crate) const DEFAULT_HEAP_SIZE: u64 = 256 * 1024 * 1024;
/// The smallest heap size the reference runtime accepts.
const MIN_HEAP_SIZE: u64 = 1024;

/// `task_state` of a slot that waits to run (the reference's PENDING).
const TASK_PENDING: i32 = 0;
/// `task_state` of a finished slot (the reference's COMPLETED).
const TASK_COMPLETED: i32 = 1;
/// `task_kind` of a task with at least one active subtask.
const TASK_KIND_KERNEL: u8 = 0;
/// `task_kind` of a dependency-only task (no active subtask).
const TASK_KIND_DUMMY: u8 = 1;
/// The subtask bits of `active_mask` (AIC, AIV0, AIV1).
const SUBTASK_BITS: u8 = 0x07;
/// The subtask bit of a single-AIV kernel (AIV0), the default claim's.
const SUBTASK_AIV0: u8 = 0x02;

/// How `upload` ships the image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UploadPolicy {
    /// The old path: zero the whole mirror each run, ship the whole image.
    Full,
    /// Init-on-write; ship the header + descriptors, payloads, slot states
    /// and flags of slots `[0, N)`: `320 + 4969 * N` bytes in at most 4 copies.
    #[default]
    Bounded,
    /// The live prefixes as one image pitched to `N`: gathered on the host
    /// and shipped in one copy while the image is small (at most
    /// [`COMPACT_GATHER_MAX_BYTES`]), copied straight to their compact
    /// offsets (at most 4 copies, no host gather) beyond.
    Compact,
    /// Per run, BOUNDED or COMPACT (gathered), whichever the maker's copy
    /// cost model says is cheaper; the model is the device's
    /// ([`crate::device::Device::copy_cost`]) or measured once at create.
    Auto,
}

/// The largest compact image COMPACT gathers on the host and ships in one
/// copy; larger images go straight to their compact offsets. At about 6 GB/s
/// of single-thread gather and 10 us per device copy, gathering more costs
/// more than the three copies it saves.
pub const COMPACT_GATHER_MAX_BYTES: u64 = 192 * 1024;

/// How one upload ships the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
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

impl Path {
    fn policy(self) -> UploadPolicy {
        match self {
            Path::Full => UploadPolicy::Full,
            Path::Bounded => UploadPolicy::Bounded,
            _ => UploadPolicy::Compact,
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
    fn cost(&self, copies: u32, bytes: u64, gathered: u64) -> f64 {
        f64::from(copies) * self.copy.latency_ns
            + bytes as f64 / self.copy.bytes_per_ns.max(1e-9)
            + gathered as f64 / self.gather_bytes_per_ns.max(1e-9)
    }
}

/// What a maker is created with.
#[derive(Clone, Copy, Debug)]
pub struct MakerConfig {
    /// Slots in the ring; 0 = env `PTO2_RING_TASK_WINDOW`, else 16384.
    pub task_window: u64,
    pub policy: UploadPolicy,
    /// Page-lock what the copies read: the header and the live prefixes of
    /// the mirror (grown geometrically with N, never per run; FULL: the whole
    /// mirror) and the part of COMPACT's staging buffer a gather fills. A
    /// device that cannot pin leaves them pageable, with a warning.
    pub pin_mirror: bool,
    /// Map a fresh mirror for every run instead of reusing one (baseline only).
    pub fresh_mirror: bool,
    /// The header's `heap_size`; 0 = env `PTO2_RING_HEAP`, else 256 MiB. At
    /// least 1024 (the reference's minimum).
    pub heap_size: u64,
}

impl Default for MakerConfig {
    fn default() -> Self {
        MakerConfig {
            task_window: 0,
            policy: UploadPolicy::Bounded,
            pin_mirror: false,
            fresh_mirror: false,
            heap_size: 0,
        }
    }
}

/// What `claim_slot_with` writes for a task besides its index: the
/// per-submit fields of the reference's submit path. The default is a root
/// kernel task on one AIV core (active mask 2, one block, no fanins).
#[derive(Clone, Copy, Debug)]
pub struct ClaimDesc<'a> {
    /// Active subtask slots: bit 0 AIC, bit 1 AIV0, bit 2 AIV1. 0 makes a
    /// dummy (dependency-only) task.
    pub active_mask: u8,
    /// The reference's task-attribute byte (bit 0 early resolve, bit 1 sync
    /// start, bit 2 has predicate, bit 3 timed, bits 4-7 timing tag).
    pub task_attrs: u8,
    /// Logical blocks, at least 1.
    pub logical_block_num: i16,
    /// Kernel per subtask slot; -1 = none.
    pub kernel_id: [i32; 3],
    /// Producers (local ids of slots claimed earlier in this run).
    /// Duplicates count once.
    pub fanins: &'a [i32],
    /// Pre-completed (like the reference's hidden allocation tasks):
    /// `task_state` COMPLETED and the completion flag 1.
    pub completed: bool,
    /// Written to the descriptor unchanged (device addresses of the task's
    /// packed output buffer).
    pub packed_buffer_base: *mut c_void,
    pub packed_buffer_end: *mut c_void,
}

impl Default for ClaimDesc<'_> {
    fn default() -> Self {
        ClaimDesc {
            active_mask: SUBTASK_AIV0,
            task_attrs: 0,
            logical_block_num: 1,
            kernel_id: [-1; 3],
            fanins: &[],
            completed: false,
            packed_buffer_base: std::ptr::null_mut(),
            packed_buffer_end: std::ptr::null_mut(),
        }
    }
}

/// A claimed slot: its index and host-mirror addresses.
#[derive(Clone, Copy, Debug)]
pub struct TaskSlot {
    pub index: i32,
    pub descriptor: *mut TaskDescriptor,
    pub payload: *mut TaskPayload,
    pub slot_state: *mut TaskSlotState,
}

/// What one upload did.
#[derive(Clone, Copy, Debug, Default)]
pub struct UploadReport {
    /// `current_task_index` at upload: the live slots `[0, N)`.
    pub total_tasks: i32,
    /// `copy_to_device` calls made.
    pub copies: u32,
    /// Bytes shipped.
    pub bytes: u64,
    /// Zeroing done by the `begin_run` of this run.
    pub zero_ns: u64,
    /// Validating and rewriting host pointers to device addresses.
    pub relocate_ns: u64,
    /// Gathering (COMPACT) and copying to the device.
    pub copy_ns: u64,
    /// The layout that was shipped: `Full`, `Bounded` or `Compact` (AUTO
    /// reports what it chose).
    pub path: UploadPolicy,
}

/// Resolves the task window: config, then the environment, then the default.
/// An unusable environment value is ignored with a warning (leanrt's log
/// channel); an unusable final window is `InvalidArgument`.
fn resolve_window(configured: u64) -> Result<u64> {
    if configured != 0 {
        segment_offsets(configured)?;
        return Ok(configured);
    }
    if let Some(raw) = std::env::var_os(TASK_WINDOW_ENV) {
        let text = raw.to_string_lossy();
        match text.trim().parse::<u64>() {
            Ok(w) if segment_offsets(w).is_ok() => return Ok(w),
            _ => crate::diag::warn(&format!(
                "ignoring {TASK_WINDOW_ENV}={text:?} (not a power of two in \
                 [4, {MAX_TASK_WINDOW}]; {MAX_TASK_WINDOW} is the largest window \
                 whose image fits in {} bytes); using {DEFAULT_TASK_WINDOW}",
                i32::MAX
            )),
        }
    }
    Ok(DEFAULT_TASK_WINDOW)
}

/// Resolves the heap size written to the header: config, then
/// `PTO2_RING_HEAP`, then 256 MiB. Values below 1024 are refused
/// (configured) or ignored with a warning (environment).
fn resolve_heap_size(configured: u64) -> Result<u64> {
    if configured != 0 {
        if configured < MIN_HEAP_SIZE {
            return Err(Error::invalid_argument(format!(
                "heap size {configured} is below {MIN_HEAP_SIZE}"
            )));
        }
        return Ok(configured);
    }
    if let Some(raw) = std::env::var_os(HEAP_SIZE_ENV) {
        let text = raw.to_string_lossy();
        match text.trim().parse::<u64>() {
            Ok(v) if v >= MIN_HEAP_SIZE => return Ok(v),
            _ => crate::diag::warn(&format!(
                "ignoring {HEAP_SIZE_ENV}={text:?} (not an integer >= {MIN_HEAP_SIZE}); \
                 using {DEFAULT_HEAP_SIZE}"
            )),
        }
    }
    Ok(DEFAULT_HEAP_SIZE)
}

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

/// The fewest slots whose prefixes are pinned: a maker pins at least this
/// much of each segment at create, so that small runs never grow the pins.
const MIN_PIN_SLOTS: u64 = 64;

/// The largest copy AUTO's measurement at create makes from the mirror.
const MEASURE_MAX_BYTES: usize = 1 << 20;

/// Bytes a bounded upload ships per live slot: descriptor, payload, slot
/// state and completion flag.
const BYTES_PER_LIVE_SLOT: u64 =
    (size_of::<TaskDescriptor>() + size_of::<TaskPayload>() + size_of::<TaskSlotState>() + 1)
        as u64;

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
}

/// The runtime maker. `Send` (a maker may move between threads) but not
/// `Sync`: one thread uses it at a time.
pub struct RuntimeMaker {
    device: Arc<dyn Device>,
    window: u64,
    policy: UploadPolicy,
    pin_mirror: bool,
    fresh_mirror: bool,
    heap_size: u64,
    seg: SmSegments,
    mirror: Mapping,
    /// The mirror's pinned ranges (with `pin_mirror`); cleared before the
    /// mirror is unmapped.
    mirror_pins: Option<Pins>,
    /// Slots whose prefixes are pinned in every segment of the mirror: the
    /// next power of two at or above the largest N uploaded (at least
    /// `MIN_PIN_SLOTS`, at most W). A fresh mirror is pinned this far at once.
    pin_slots: u64,
    /// COMPACT's and AUTO's gather buffer (same size as the mirror,
    /// untouched until used).
    staging: Option<Mapping>,
    /// AUTO's cost model.
    model: CostModel,
    /// The staging buffer's pinned ranges (with `pin_mirror`).
    staging_pins: Option<Pins>,
    /// The device image, from `device.alloc`.
    image: *mut u8,
    /// `begin_run` has been called (claim/upload allowed).
    run_open: bool,
    /// The last upload succeeded (the device holds a complete image).
    uploaded: bool,
    /// Nanoseconds the last `begin_run` spent zeroing.
    last_zero_ns: u64,
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
        let window = resolve_window(cfg.task_window)?;
        let heap_size = resolve_heap_size(cfg.heap_size)?;
        let seg = segment_offsets(window)?;
        let len = seg.end as usize;
        let mirror = Mapping::new(len)?;
        let staging = match cfg.policy {
            UploadPolicy::Compact | UploadPolicy::Auto => Some(Mapping::new(len)?),
            _ => None,
        };
        let image = device.alloc(len).map_err(|e| {
            Error::new(
                device_kind(&e, ErrorKind::NoMemory),
                format!("device allocation of the {len}-byte image failed: {e}"),
            )
        })?;
        let mut maker = RuntimeMaker {
            device,
            window,
            policy: cfg.policy,
            pin_mirror: cfg.pin_mirror,
            fresh_mirror: cfg.fresh_mirror,
            heap_size,
            seg,
            mirror,
            mirror_pins: None,
            pin_slots: MIN_PIN_SLOTS.min(window),
            staging,
            staging_pins: None,
            model: CostModel::FALLBACK,
            image,
            run_open: false,
            uploaded: false,
            last_zero_ns: 0,
        };
        if maker.pin_mirror {
            // SAFETY: the maker clears its pins before the mappings they
            // cover are unmapped (Drop, and begin_run for a fresh mirror).
            maker.mirror_pins = Some(unsafe { Pins::new(&maker.mirror, "host mirror") });
            if let Some(staging) = &maker.staging {
                // SAFETY: as above.
                maker.staging_pins = Some(unsafe { Pins::new(staging, "staging buffer") });
            }
            maker.pin_mirror_slots();
        }
        if maker.policy == UploadPolicy::Auto {
            // The measurement copies from the mirror's start: pinned too.
            let len = (maker.seg.end as usize).min(MEASURE_MAX_BYTES);
            if let Some(pins) = &mut maker.mirror_pins {
                pins.ensure(&*maker.device, 0, len);
            }
            maker.model = maker.measure_model();
        }
        Ok(maker)
    }

    /// Segment offsets of the full image.
    pub fn segments(&self) -> SmSegments {
        self.seg
    }
    /// The resolved task window.
    pub fn task_window(&self) -> u64 {
        self.window
    }
    /// The upload policy.
    pub fn policy(&self) -> UploadPolicy {
        self.policy
    }
    /// The resolved heap size written to the header.
    pub fn heap_size(&self) -> u64 {
        self.heap_size
    }
    /// The device image (its header is at offset 0 under every policy).
    pub fn device_image(&self) -> *mut c_void {
        self.image.cast::<c_void>()
    }

    fn header_ptr(&self) -> *mut SmHeader {
        self.mirror.as_ptr().cast::<SmHeader>()
    }

    fn mirror_at<T>(&self, offset: u64) -> *mut T {
        self.mirror
            .as_ptr()
            .wrapping_add(offset as usize)
            .cast::<T>()
    }

    /// Starts a run: zeroes the header (FULL: the whole mirror; FRESH: on a
    /// newly mapped mirror) and writes every header field as the reference's
    /// `init_per_ring` does on the host: flow control 0, completed watermark
    /// -1, orchestrator not done, window, mask, heap size, descriptor offset,
    /// the host array pointers, total size, error words 0 and error thread
    /// -1. Returns the mirror's header.
    pub fn begin_run(&mut self) -> Result<*mut SmHeader> {
        let t0 = Instant::now();
        if self.fresh_mirror {
            // The baseline's "allocate a new image every run".
            let fresh = Mapping::new(self.seg.end as usize)?;
            // Unpin before the old mapping goes away.
            self.mirror_pins = None;
            self.mirror = fresh;
            if self.pin_mirror {
                // SAFETY: as in `new`.
                self.mirror_pins = Some(unsafe { Pins::new(&self.mirror, "host mirror") });
                self.pin_mirror_slots();
            }
        }
        let zero_len = match self.policy {
            UploadPolicy::Full => self.mirror.len(),
            _ => size_of::<SmHeader>(),
        };
        // SAFETY: the mirror is a live read/write mapping of at least
        // `seg.end >= zero_len` bytes owned by self.
        unsafe { std::ptr::write_bytes(self.mirror.as_ptr(), 0, zero_len) };
        self.last_zero_ns = elapsed_ns(t0);
        let host = self.host_arrays();
        // SAFETY: the header lies at the start of the mapping, suitably
        // aligned (page-aligned), and every bit pattern is a valid SmHeader;
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
        Ok(self.header_ptr())
    }

    /// The host mirror's segment bases.
    fn host_arrays(&self) -> [usize; 4] {
        let base = self.mirror.as_ptr() as usize;
        [
            base + self.seg.descriptors as usize,
            base + self.seg.payloads as usize,
            base + self.seg.slot_states as usize,
            base + self.seg.completion_flags as usize,
        ]
    }

    /// Writes the window constants and the four array pointers.
    fn stamp_header(&self, h: &mut SmHeader, arrays: [usize; 4], total_size: u64) {
        h.task_window_size = self.window;
        // The window is at most MAX_TASK_WINDOW, so the mask fits an i32.
        h.task_window_mask = (self.window - 1) as i32;
        h.task_descriptors_offset = self.seg.descriptors;
        h.task_descriptors = arrays[0] as *mut TaskDescriptor;
        h.task_payloads = arrays[1] as *mut TaskPayload;
        h.slot_states = arrays[2] as *mut TaskSlotState;
        h.completion_flags = arrays[3] as *mut u8;
        h.total_size = total_size;
    }

    /// Reads `current_task_index` from the mirror.
    fn current_index(&self) -> i32 {
        // SAFETY: in-bounds, aligned read of plain data in the owned mapping.
        unsafe { (*self.header_ptr()).current_task_index }
    }

    /// Claims slot `current_task_index` for a root kernel task on one AIV
    /// core: `claim_slot_with` the default [`ClaimDesc`].
    pub fn claim_slot(&mut self) -> Result<TaskSlot> {
        self.claim_slot_with(&ClaimDesc::default())
    }

    fn slot_ptrs(&self, i: u64) -> (*mut TaskDescriptor, *mut TaskPayload, *mut TaskSlotState) {
        (
            self.mirror_at(self.seg.descriptors + i * size_of::<TaskDescriptor>() as u64),
            self.mirror_at(self.seg.payloads + i * size_of::<TaskPayload>() as u64),
            self.mirror_at(self.seg.slot_states + i * size_of::<TaskSlotState>() as u64),
        )
    }

    /// Claims slot `current_task_index` and writes every field the device
    /// reads for it, with the values the reference's submit path writes for
    /// the task `desc` describes: the descriptor (id, kernel ids, packed
    /// buffer), the payload's counts, fanin ids, early-dispatch and predicate
    /// state, the whole slot state (own id as last consumer, pending or
    /// completed, active mask, attributes, kind, subtask count, blocks, the
    /// slot's payload/descriptor pointers) and the completion flag. Each
    /// producer in `desc.fanins` gets this task as its last consumer.
    /// Advances the index.
    ///
    /// `InvalidArgument` (nothing written) for fewer than one block, more
    /// subtasks than an `i16` holds, more than 128 fanins, or a fanin that
    /// is not an earlier slot of this run; `OutOfRange` when the window is
    /// full; `State` before `begin_run`.
    pub fn claim_slot_with(&mut self, desc: &ClaimDesc<'_>) -> Result<TaskSlot> {
        if !self.run_open {
            return Err(Error::state("claim_slot before begin_run"));
        }
        let idx = self.current_index();
        if idx < 0 || idx as u64 >= self.window {
            return Err(Error::out_of_range(format!(
                "cannot claim slot {idx}: the window holds slots [0, {})",
                self.window
            )));
        }
        if desc.logical_block_num < 1 {
            return Err(Error::invalid_argument(format!(
                "logical_block_num {} is below 1",
                desc.logical_block_num
            )));
        }
        let subtasks = i32::from(desc.logical_block_num)
            * (desc.active_mask & SUBTASK_BITS).count_ones() as i32;
        let total_required = i16::try_from(subtasks).map_err(|_| {
            Error::invalid_argument(format!(
                "{} blocks x {} active subtasks = {subtasks} subtasks, more than {}",
                desc.logical_block_num,
                (desc.active_mask & SUBTASK_BITS).count_ones(),
                i16::MAX
            ))
        })?;
        if desc.fanins.len() > MAX_FANIN {
            return Err(Error::invalid_argument(format!(
                "{} fanins, more than {MAX_FANIN}",
                desc.fanins.len()
            )));
        }
        if let Some(bad) = desc.fanins.iter().find(|&&p| p < 0 || p >= idx) {
            return Err(Error::invalid_argument(format!(
                "fanin {bad} is not an earlier slot of this run [0, {idx})"
            )));
        }
        let i = idx as u64;
        let (desc_p, pay_p, state_p) = self.slot_ptrs(i);
        let flag_p: *mut u8 = self.mirror_at(self.seg.completion_flags + i);
        // SAFETY: i < W, so the four elements lie inside the owned mapping at
        // their natural alignment (segments are 64-aligned, the mapping is
        // page-aligned); all are plain data valid for any bit pattern, and no
        // other reference to them is live during this call.
        let (d, pay, state, flag) =
            unsafe { (&mut *desc_p, &mut *pay_p, &mut *state_p, &mut *flag_p) };
        *d = TaskDescriptor {
            task_id: i,
            kernel_id: desc.kernel_id,
            _pad0: [0; 4],
            packed_buffer_base: desc.packed_buffer_base,
            packed_buffer_end: desc.packed_buffer_end,
        };
        // Only the fixed part and the fanin ids: tensors and scalars are read
        // up to their counts, which the host writes with the content.
        let mut fanins = 0usize;
        for &p in desc.fanins {
            if !pay.fanin_local_ids[..fanins].contains(&p) {
                pay.fanin_local_ids[fanins] = p;
                fanins += 1;
            }
        }
        pay.tensor_count = 0;
        pay.scalar_count = 0;
        pay.fanin_count = fanins as i32;
        pay.reserved = [0; 12];
        pay.early_dispatch = [0; 5];
        pay.predicate = [0; 3];
        *state = TaskSlotState {
            last_consumer_local_id: idx,
            task_state: if desc.completed {
                TASK_COMPLETED
            } else {
                TASK_PENDING
            },
            payload: pay_p,
            task: desc_p,
            wake_list_head: std::ptr::null_mut(),
            next_in_wake_list: std::ptr::null_mut(),
            active_mask: desc.active_mask,
            task_attrs: desc.task_attrs,
            any_subtask_deferred: 0,
            task_kind: if desc.active_mask != 0 {
                TASK_KIND_KERNEL
            } else {
                TASK_KIND_DUMMY
            },
            completed_subtasks: 0,
            total_required_subtasks: total_required,
            logical_block_num: desc.logical_block_num,
            next_block_idx: 0,
            graph_node_index: -1,
            graph_context: std::ptr::null_mut(),
        };
        *flag = u8::from(desc.completed);
        for &p in &pay.fanin_local_ids[..fanins] {
            let (_, _, producer) = self.slot_ptrs(p as u64);
            // SAFETY: 0 <= p < idx < W: an aligned slot state inside the
            // mapping, distinct from this slot's; plain data.
            let producer = unsafe { &mut *producer };
            producer.last_consumer_local_id = producer.last_consumer_local_id.max(idx);
        }
        // SAFETY: as in current_index, a write.
        unsafe { (*self.header_ptr()).current_task_index = idx + 1 };
        Ok(TaskSlot {
            index: idx,
            descriptor: desc_p,
            payload: pay_p,
            slot_state: state_p,
        })
    }

    /// The AUTO cost model in use (measured at create, or the device's).
    pub fn cost_model(&self) -> CostModel {
        self.model
    }

    /// Measures the copy cost at create (AUTO): the device's own figures if
    /// it gives them, else the fastest of five 64-byte copies for the
    /// latency and one copy of up to 1 MiB for the bandwidth; and one host
    /// gather of the same size. The copies land in the (not yet meaningful)
    /// device image. A failed measurement falls back to
    /// [`CostModel::FALLBACK`] with a warning.
    fn measure_model(&self) -> CostModel {
        let len = (self.seg.end as usize).min(1 << 20);
        let src = self.mirror.as_ptr();
        let timed = |bytes: usize| -> Result<f64> {
            let t0 = Instant::now();
            // SAFETY: the mirror and the device image are both at least
            // seg.end >= len bytes long.
            unsafe { self.device.copy_to(self.image, src, bytes) }?;
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
            Some(staging) => {
                let t0 = Instant::now();
                // SAFETY: both mappings hold at least len bytes and are
                // distinct.
                unsafe { std::ptr::copy_nonoverlapping(src, staging.as_ptr(), len) };
                len as f64 / (elapsed_ns(t0) as f64).max(1.0)
            }
            None => CostModel::FALLBACK.gather_bytes_per_ns,
        };
        CostModel {
            copy,
            gather_bytes_per_ns,
        }
    }

    /// How this upload of `n` live tasks ships.
    fn choose_path(&self, n: u64) -> Path {
        let compact = |gather_ok: bool| {
            if n == self.window {
                Path::CompactWhole
            } else if gather_ok {
                Path::CompactGather
            } else {
                Path::CompactDirect
            }
        };
        match self.policy {
            UploadPolicy::Full => Path::Full,
            UploadPolicy::Bounded => Path::Bounded,
            UploadPolicy::Compact => compact(offsets_for(n).end <= COMPACT_GATHER_MAX_BYTES),
            UploadPolicy::Auto => {
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
                    Path::Bounded
                }
            }
        }
    }

    /// The device-side segment offsets for `n` live tasks on `path`.
    fn device_layout(&self, path: Path, n: u64) -> SmSegments {
        match path.policy() {
            UploadPolicy::Compact => offsets_for(n),
            _ => self.seg,
        }
    }

    /// Host->device and device->host rebasings of the payload and descriptor
    /// prefixes for `n` live slots.
    fn rebases(&self, n: usize, dev: &SmSegments) -> [Rebase; 2] {
        let host = self.mirror.as_ptr() as usize;
        let device = self.image as usize;
        [
            Rebase {
                from: host + self.seg.payloads as usize,
                to: device + dev.payloads as usize,
                elem: size_of::<TaskPayload>(),
                n,
            },
            Rebase {
                from: host + self.seg.descriptors as usize,
                to: device + dev.descriptors as usize,
                elem: size_of::<TaskDescriptor>(),
                n,
            },
        ]
    }

    fn slot_state_ptr(&self, i: usize) -> *mut TaskSlotState {
        self.mirror_at(self.seg.slot_states + (i * size_of::<TaskSlotState>()) as u64)
    }

    /// Rewrites the `payload`/`task` pointers of slots `[0, n)` with `pay`
    /// and `task`; every pointer must map (checked beforehand).
    fn rewrite_slots(&mut self, n: usize, pay: Rebase, task: Rebase) {
        for i in 0..n {
            // SAFETY: i < n <= W: an aligned slot state inside the mapping;
            // plain data, no other live reference.
            let s = unsafe { &mut *self.slot_state_ptr(i) };
            s.payload = pay.map(s.payload as usize).unwrap_or(0) as *mut TaskPayload;
            s.task = task.map(s.task as usize).unwrap_or(0) as *mut TaskDescriptor;
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

    /// Validates `total_tasks = current_task_index` and every live slot
    /// pointer, relocates, ships the image per policy and restores the
    /// mirror's host pointers.
    pub fn upload(&mut self) -> Result<UploadReport> {
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
        let n = total as usize;
        let path = self.choose_path(n as u64);
        let dev = self.device_layout(path, n as u64);
        let [pay, task] = self.rebases(n, &dev);
        for i in 0..n {
            // SAFETY: i < n <= W; aligned plain-data read inside the mapping.
            let s = unsafe { &*self.slot_state_ptr(i) };
            if pay.map(s.payload as usize).is_none() {
                return Err(Error::invalid_argument(format!(
                    "slot {i}: payload pointer {:p} is not a live payload [0, {n}) of the mirror",
                    s.payload
                )));
            }
            if task.map(s.task as usize).is_none() {
                return Err(Error::invalid_argument(format!(
                    "slot {i}: task pointer {:p} is not a live descriptor [0, {n}) of the mirror",
                    s.task
                )));
            }
        }
        // Everything is valid: relocate.
        // SAFETY: the header is plain data at the start of the mapping.
        let saved_header = unsafe { *self.header_ptr() };
        let device = self.image as usize;
        let dev_arrays = [
            device + dev.descriptors as usize,
            device + dev.payloads as usize,
            device + dev.slot_states as usize,
            device + dev.completion_flags as usize,
        ];
        // SAFETY: as in begin_run.
        let h = unsafe { &mut *self.header_ptr() };
        self.stamp_header(h, dev_arrays, dev.end);
        // Uploading ends the orchestration: the shipped header says so (the
        // reference's host marks it done before its copy to the device). The
        // mirror gets back what the host left there, as for the pointers.
        h.orchestrator_done = 1;
        self.rewrite_slots(n, pay, task);
        let relocate_ns = elapsed_ns(t_reloc);

        let t_copy = Instant::now();
        self.pin_for(path, n as u64, &dev);
        let shipped = self.ship(path, n as u64, &dev);
        let copy_ns = elapsed_ns(t_copy);

        // Restore the host view, whatever the copy did.
        let back = |r: Rebase| Rebase {
            from: r.to,
            to: r.from,
            ..r
        };
        self.rewrite_slots(n, back(pay), back(task));
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
        Ok(UploadReport {
            total_tasks: total,
            copies,
            bytes,
            zero_ns: self.last_zero_ns,
            relocate_ns,
            copy_ns,
            path: path.policy(),
        })
    }

    /// Bytes of the mirror and the staging buffer page-locked now (0 without
    /// `pin_mirror`, or where the device cannot pin).
    pub fn pinned_bytes(&self) -> u64 {
        let n = |p: &Option<Pins>| p.as_ref().map_or(0, Pins::bytes) as u64;
        n(&self.mirror_pins) + n(&self.staging_pins)
    }

    /// Pin calls made so far (at create, growths, fresh mirrors).
    pub fn pin_calls(&self) -> u32 {
        let n = |p: &Option<Pins>| p.as_ref().map_or(0, Pins::pin_calls);
        n(&self.mirror_pins) + n(&self.staging_pins)
    }

    /// Whether pinning was asked for and a pin failed (the copies then read
    /// pageable memory where nothing was pinned).
    pub fn pin_failed(&self) -> bool {
        let f = |p: &Option<Pins>| p.as_ref().is_some_and(Pins::failed);
        f(&self.mirror_pins) || f(&self.staging_pins)
    }

    /// The mirror's parts a copy of `slots` live slots reads: the header
    /// with the descriptors, and the payload, slot-state and flag prefixes
    /// (offset, length). All of `[0, end)` when `slots` is the window.
    fn live_parts(&self, slots: u64) -> [(u64, u64); 4] {
        let seg = self.seg;
        if slots >= self.window {
            return [(0, seg.end), (0, 0), (0, 0), (0, 0)];
        }
        [
            (
                0,
                seg.descriptors + slots * size_of::<TaskDescriptor>() as u64,
            ),
            (seg.payloads, slots * size_of::<TaskPayload>() as u64),
            (seg.slot_states, slots * size_of::<TaskSlotState>() as u64),
            (seg.completion_flags, slots),
        ]
    }

    /// Pins the mirror as far as `pin_slots` (FULL: all of it).
    fn pin_mirror_slots(&mut self) {
        let slots = if self.policy == UploadPolicy::Full {
            self.window
        } else {
            self.pin_slots
        };
        let parts = self.live_parts(slots);
        if let Some(pins) = &mut self.mirror_pins {
            for (off, len) in parts {
                pins.ensure(&*self.device, off as usize, (off + len) as usize);
            }
        }
    }

    /// Before the copies of an upload of `n` slots on `path`: grows the
    /// pinned ranges so that every byte the copies read is pinned. The
    /// prefixes grow to the next power of two of slots, so a steady workload
    /// pins nothing after its first run and growing runs re-pin O(log W)
    /// times; nothing is unpinned.
    fn pin_for(&mut self, path: Path, n: u64, dev: &SmSegments) {
        if self.mirror_pins.is_none() {
            return;
        }
        let want = n.max(MIN_PIN_SLOTS).next_power_of_two().min(self.window);
        self.pin_slots = self.pin_slots.max(want);
        match path {
            Path::Full | Path::CompactWhole => {
                if let Some(pins) = &mut self.mirror_pins {
                    pins.ensure(&*self.device, 0, self.seg.end as usize);
                }
            }
            Path::Bounded | Path::CompactDirect => self.pin_mirror_slots(),
            Path::CompactGather => {
                self.pin_mirror_slots();
                // The gather fills [0, dev.end) of the staging buffer, and
                // the copy reads it: pin it as far as the compact image of
                // `pin_slots` slots (at least dev.end).
                let end = offsets_for(self.pin_slots).end.max(dev.end);
                if let Some(pins) = &mut self.staging_pins {
                    pins.ensure(&*self.device, 0, end as usize);
                }
            }
        }
    }

    /// Copies `(from, to, len)` parts of the mirror to device offsets,
    /// skipping empty ones; returns (copies, bytes).
    fn copy_parts(&self, parts: &[(u64, u64, u64)]) -> Result<(u32, u64)> {
        let base = self.mirror.as_ptr();
        let (mut copies, mut bytes) = (0, 0);
        for &(from, to, len) in parts {
            if len == 0 {
                continue;
            }
            self.copy_to_device(to, base.wrapping_add(from as usize), len)?;
            copies += 1;
            bytes += len;
        }
        Ok((copies, bytes))
    }

    /// Ships the (relocated) image on `path`; returns (copies, bytes).
    fn ship(&self, path: Path, n: u64, dev: &SmSegments) -> Result<(u32, u64)> {
        let seg = self.seg;
        let base = self.mirror.as_ptr();
        let d = size_of::<TaskDescriptor>() as u64;
        let p = size_of::<TaskPayload>() as u64;
        let s = size_of::<TaskSlotState>() as u64;
        // The live prefixes, (mirror offset, device offset, length); header
        // and descriptors are adjacent in both layouts (descriptors at 320).
        let live = [
            (0, 0, seg.descriptors + n * d),
            (seg.payloads, dev.payloads, n * p),
            (seg.slot_states, dev.slot_states, n * s),
            (seg.completion_flags, dev.completion_flags, n),
        ];
        match path {
            // A compact layout pitched to N = W is the full layout: the
            // mirror already is the compact image, so it ships as is (direct
            // DMA when pinned) instead of being gathered.
            Path::Full | Path::CompactWhole => {
                self.copy_to_device(0, base, seg.end)?;
                Ok((1, seg.end))
            }
            // Straight to their offsets: BOUNDED's are the full layout's,
            // COMPACT's the layout pitched to N.
            Path::Bounded | Path::CompactDirect => self.copy_parts(&live),
            Path::CompactGather => {
                let staging = self
                    .staging
                    .as_ref()
                    .ok_or_else(|| Error::internal("COMPACT maker without staging buffer"))?;
                let out = staging.as_ptr();
                for (from, to, len) in live {
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
                self.copy_to_device(0, out, dev.end)?;
                Ok((1, dev.end))
            }
        }
    }

    /// Copies the device header back: 0, or the negated `orch_error_code`,
    /// else the negated `sched_error_code`.
    pub fn read_status(&mut self) -> Result<i32> {
        if !self.uploaded {
            return Err(Error::state("read_status before a successful upload"));
        }
        let mut h = std::mem::MaybeUninit::<SmHeader>::zeroed();
        // SAFETY: reads size_of::<SmHeader>() bytes from the start of the
        // device image into a local buffer of that size.
        unsafe {
            self.device
                .copy_from(h.as_mut_ptr().cast(), self.image, size_of::<SmHeader>())
        }
        .map_err(|e| {
            Error::new(
                device_kind(&e, ErrorKind::Device),
                format!("copy of the header from the device failed: {e}"),
            )
        })?;
        // SAFETY: zero-initialized, then overwritten with plain data; any bit
        // pattern is a valid SmHeader.
        let h = unsafe { h.assume_init() };
        Ok(if h.orch_error_code != 0 {
            h.orch_error_code.wrapping_neg()
        } else {
            h.sched_error_code.wrapping_neg()
        })
    }
}

impl Drop for RuntimeMaker {
    fn drop(&mut self) {
        // Unpin before the mappings are unmapped (fields drop afterwards).
        self.mirror_pins = None;
        self.staging_pins = None;
        // SAFETY: the device image came from this device's alloc and is
        // freed exactly once, here.
        unsafe { self.device.free(self.image) };
    }
}
