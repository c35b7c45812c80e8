//! `lrt_sm_*`, `lrt_maker_config_init`, `lrt_runtime_maker_*`: the runtime
//! maker, which builds each run's shared-memory task image in a host mirror
//! and uploads only the part the device will read.
//!
//! Life cycle: lrt_runtime_maker_create once; then per run
//! lrt_runtime_maker_begin_run, lrt_runtime_maker_claim_slot once per task
//! (the host then writes the task's content through the returned pointers),
//! lrt_runtime_maker_upload, the device runs, lrt_runtime_maker_read_status;
//! lrt_runtime_maker_destroy at the end. One thread uses a maker at a time
//! (any thread, not two at once); different makers are independent.
//! docs/STAGING.md holds the full contract.
use std::ffi::c_void;
use std::ptr::addr_of;

use super::boundary::{arg_mut, arg_ref, drop_handle, into_handle, OutPtr};
use super::device::{device_for_api, lrt_host_api};
use super::status::lrt_status;
use crate::staging::{
    self, ClaimDesc, MakerConfig, RuntimeMaker, SmHeader, SmSegments, TaskDescriptor, TaskPayload,
    TaskSlot, TaskSlotState, UploadPolicy, UploadReport,
};
use crate::{Error, Result};

/// A runtime maker (lrt_runtime_maker_create); opaque. It owns the device
/// image and the host mirror of one task window and is used by one thread
/// at a time; different makers are independent.
#[allow(non_camel_case_types)]
pub struct lrt_runtime_maker(RuntimeMaker);

/// How lrt_runtime_maker_upload ships the image.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum lrt_upload_policy {
    /// The old path: zero the whole mirror every run, ship the whole image
    /// (the baseline).
    LRT_UPLOAD_FULL = 0,
    /// Init-on-write; ship the header and descriptors[0,N), payloads[0,N),
    /// slot_states[0,N) and flags[0,N) at their full-window offsets:
    /// 320 + 4969*N bytes in at most 4 copies.
    LRT_UPLOAD_BOUNDED = 1,
    /// The live prefixes as one image laid out for N slots: gathered and
    /// shipped in one copy while that image is at most 192 KiB, copied
    /// straight to its compact offsets (at most 4 copies) beyond.
    LRT_UPLOAD_COMPACT = 2,
    /// Per run, BOUNDED or COMPACT (one gathered copy), whichever is cheaper
    /// by the device's per-copy latency and bandwidth, measured once at
    /// create. lrt_upload_report.path says which ran.
    LRT_UPLOAD_AUTO = 3,
}

impl lrt_upload_policy {
    /// The core policy for a raw C value; unknown values are rejected.
    fn from_raw(raw: u32) -> Result<UploadPolicy> {
        match raw {
            0 => Ok(UploadPolicy::Full),
            1 => Ok(UploadPolicy::Bounded),
            2 => Ok(UploadPolicy::Compact),
            3 => Ok(UploadPolicy::Auto),
            _ => Err(Error::invalid_argument(format!(
                "unknown upload policy {raw} (expected 0, 1, 2 or 3)"
            ))),
        }
    }
}

impl From<UploadPolicy> for lrt_upload_policy {
    fn from(p: UploadPolicy) -> Self {
        match p {
            UploadPolicy::Full => lrt_upload_policy::LRT_UPLOAD_FULL,
            UploadPolicy::Bounded => lrt_upload_policy::LRT_UPLOAD_BOUNDED,
            UploadPolicy::Compact => lrt_upload_policy::LRT_UPLOAD_COMPACT,
            UploadPolicy::Auto => lrt_upload_policy::LRT_UPLOAD_AUTO,
        }
    }
}

/// lrt_maker_config flag: page-lock the host memory the uploads copy from, so
/// that copies are direct DMA. Create locks the header and the first 64
/// slots of each segment (LRT_UPLOAD_FULL: the whole mirror); an upload of N
/// tasks first grows each segment's locked prefix to the next power of two
/// at or above N, so a steady workload locks nothing after its first run.
/// Everything is unlocked at destroy. A device that cannot pin leaves the
/// memory pageable (one warning through leanrt's log channel; the maker then
/// stops trying); it is never an error.
pub const LRT_MAKER_PIN_MIRROR: u32 = 1;
/// lrt_maker_config flag: map a fresh mirror for every run instead of
/// reusing one (the baseline's behaviour; for measurements).
pub const LRT_MAKER_FRESH_MIRROR: u32 = 2;
const KNOWN_FLAGS: u32 = LRT_MAKER_PIN_MIRROR | LRT_MAKER_FRESH_MIRROR;

/// lrt_task_slot_state.task_state: submitted, waiting to run (the
/// reference's PTO2_TASK_PENDING).
pub const LRT_TASK_PENDING: i32 = 0;
/// lrt_task_slot_state.task_state: finished (PTO2_TASK_COMPLETED).
pub const LRT_TASK_COMPLETED: i32 = 1;
/// lrt_task_slot_state.task_state: output fully consumed (PTO2_TASK_CONSUMED).
pub const LRT_TASK_CONSUMED: i32 = 2;
/// lrt_task_slot_state.task_kind: a task with at least one active subtask.
pub const LRT_TASK_KIND_KERNEL: u8 = 0;
/// lrt_task_slot_state.task_kind: a dependency-only task (no active subtask).
pub const LRT_TASK_KIND_DUMMY: u8 = 1;
/// lrt_task_slot_state.task_kind: a graph submission.
pub const LRT_TASK_KIND_GRAPH: u8 = 2;
/// lrt_task_slot_state.task_kind: a node of a graph.
pub const LRT_TASK_KIND_GRAPH_NODE: u8 = 3;
/// active_mask bit: the AIC subtask slot.
pub const LRT_SUBTASK_AIC: u8 = 1;
/// active_mask bit: the first AIV subtask slot.
pub const LRT_SUBTASK_AIV0: u8 = 2;
/// active_mask bit: the second AIV subtask slot.
pub const LRT_SUBTASK_AIV1: u8 = 4;
/// task_attrs bit: the task may be resolved early (set for hidden
/// allocation tasks).
pub const LRT_TASK_ATTR_EARLY_RESOLVE: u8 = 1;
/// task_attrs bit: the task's cores start together.
pub const LRT_TASK_ATTR_SYNC_START: u8 = 2;
/// task_attrs bit: the task carries a dispatch predicate.
pub const LRT_TASK_ATTR_HAS_PREDICATE: u8 = 4;
/// task_attrs bit: bits 4-7 hold a timing tag.
pub const LRT_TASK_ATTR_TIMED: u8 = 8;
/// lrt_claim_desc flag: the task is complete before the run starts (like
/// the reference's hidden allocation tasks): task_state LRT_TASK_COMPLETED
/// and completion flag 1.
pub const LRT_CLAIM_COMPLETED: u32 = 1;
/// lrt_maker_config.heap_size when neither the config nor the environment
/// variable PTO2_RING_HEAP sets one: 256 MiB, the reference's default.
pub const LRT_DEFAULT_HEAP_SIZE: u64 = 268_435_456;
const _: () = assert!(LRT_DEFAULT_HEAP_SIZE == staging::DEFAULT_HEAP_SIZE);

/// Maker configuration. Fill it with lrt_maker_config_init, then change the
/// members you need.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_maker_config {
    /// Slots in the ring: a power of two in [4, 262144]. 0 (the default):
    /// the environment variable PTO2_RING_TASK_WINDOW, else 16384.
    pub task_window: u64,
    /// Default LRT_UPLOAD_BOUNDED.
    pub policy: lrt_upload_policy,
    /// LRT_MAKER_PIN_MIRROR and/or LRT_MAKER_FRESH_MIRROR; default 0.
    pub flags: u32,
    /// The header's heap_size, at least 1024. 0 (the default): the
    /// environment variable PTO2_RING_HEAP, else LRT_DEFAULT_HEAP_SIZE.
    pub heap_size: u64,
}

/// What lrt_runtime_maker_claim_slot_ex writes for a task: the fields the
/// reference runtime's submit path sets per task. Fill it with
/// lrt_claim_desc_init (a root kernel task on one AIV core), then change
/// what differs.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_claim_desc {
    /// Active subtask slots (LRT_SUBTASK_AIC | LRT_SUBTASK_AIV0 |
    /// LRT_SUBTASK_AIV1). 0 makes a dependency-only task (task_kind
    /// LRT_TASK_KIND_DUMMY). Default LRT_SUBTASK_AIV0.
    pub active_mask: u8,
    /// The reference's task-attribute byte (LRT_TASK_ATTR_*, timing tag in
    /// bits 4-7). Default 0.
    pub task_attrs: u8,
    /// Logical blocks, at least 1; total_required_subtasks is this times the
    /// number of active subtask slots and must fit in int16_t. Default 1.
    pub logical_block_num: i16,
    /// LRT_CLAIM_COMPLETED or 0 (the default).
    pub flags: u32,
    /// Kernel per subtask slot (AIC, AIV0, AIV1); -1 = none (the default).
    pub kernel_id: [i32; 3],
    /// Number of producers in fanin_local_ids, in [0, LRT_MAX_FANIN].
    pub fanin_count: i32,
    /// Local ids (slot indices) of producers claimed earlier in this run;
    /// duplicates count once. May be NULL when fanin_count is 0. Read only
    /// during the call.
    pub fanin_local_ids: *const i32,
    /// Written to the descriptor unchanged (device addresses of the task's
    /// packed output buffer; upload never rewrites them). Default NULL.
    pub packed_buffer_base: *mut c_void,
    pub packed_buffer_end: *mut c_void,
}

/// A claimed slot: its index and the host-mirror addresses of its
/// descriptor, payload and slot state, which the host writes the task's
/// content through. The pointers stay valid until the next
/// lrt_runtime_maker_begin_run or lrt_runtime_maker_destroy.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_task_slot {
    pub index: i32,
    pub descriptor: *mut TaskDescriptor,
    pub payload: *mut TaskPayload,
    pub slot_state: *mut TaskSlotState,
}

impl From<TaskSlot> for lrt_task_slot {
    fn from(s: TaskSlot) -> Self {
        lrt_task_slot {
            index: s.index,
            descriptor: s.descriptor,
            payload: s.payload,
            slot_state: s.slot_state,
        }
    }
}

/// What one lrt_runtime_maker_upload did.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_upload_report {
    /// current_task_index at upload: the live slots [0, N).
    pub total_tasks: i32,
    /// copy_to_device calls made.
    pub copies: u32,
    /// Bytes shipped.
    pub bytes: u64,
    /// Nanoseconds the run's begin_run spent zeroing.
    pub zero_ns: u64,
    /// Nanoseconds spent validating and rewriting host pointers to device
    /// addresses.
    pub relocate_ns: u64,
    /// Nanoseconds spent gathering (COMPACT) and copying to the device.
    pub copy_ns: u64,
    /// The layout shipped: LRT_UPLOAD_FULL, LRT_UPLOAD_BOUNDED or
    /// LRT_UPLOAD_COMPACT (under LRT_UPLOAD_AUTO, the one it chose).
    pub path: lrt_upload_policy,
}

impl Default for lrt_upload_report {
    fn default() -> Self {
        lrt_upload_report {
            total_tasks: 0,
            copies: 0,
            bytes: 0,
            zero_ns: 0,
            relocate_ns: 0,
            copy_ns: 0,
            path: lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        }
    }
}

impl From<UploadReport> for lrt_upload_report {
    fn from(r: UploadReport) -> Self {
        lrt_upload_report {
            total_tasks: r.total_tasks,
            copies: r.copies,
            bytes: r.bytes,
            zero_ns: r.zero_ns,
            relocate_ns: r.relocate_ns,
            copy_ns: r.copy_ns,
            path: r.path.into(),
        }
    }
}

/// The core config for a C config whose fields were read as raw integers.
fn config_from_raw(
    task_window: u64,
    raw_policy: u32,
    flags: u32,
    heap_size: u64,
) -> Result<MakerConfig> {
    if flags & !KNOWN_FLAGS != 0 {
        return Err(Error::invalid_argument(format!(
            "unknown maker flags {:#x}",
            flags & !KNOWN_FLAGS
        )));
    }
    Ok(MakerConfig {
        task_window,
        policy: lrt_upload_policy::from_raw(raw_policy)?,
        pin_mirror: flags & LRT_MAKER_PIN_MIRROR != 0,
        fresh_mirror: flags & LRT_MAKER_FRESH_MIRROR != 0,
        heap_size,
    })
}

/// Writes to `*out` the byte offsets of the segments of the image for a
/// window of `task_window` slots (header, descriptors, payloads, slot
/// states, completion flags, and the end = the image size).
///
/// `out` must point to writable storage for an lrt_sm_segments; it is
/// written only on success. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a
/// NULL `out` or a window that is not a power of two in [4, 262144] (the
/// largest whose image fits in INT32_MAX bytes). Any thread may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_sm_ring_segment_offsets(
    task_window: u64,
    out: *mut SmSegments,
) -> lrt_status {
    ffi_status!("lrt_sm_ring_segment_offsets", {
        let out = OutPtr::new(out, "out")?;
        let segments = staging::segment_offsets(task_window)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(segments) };
        Ok(())
    })
}

/// Sets `*cfg` to the defaults: window 0 (the environment, else 16384),
/// LRT_UPLOAD_BOUNDED, no flags, heap size 0 (the environment, else
/// LRT_DEFAULT_HEAP_SIZE). `cfg` must be NULL or point to writable
/// storage for an lrt_maker_config; NULL is ignored (and recorded for
/// lrt_last_error). Any thread may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_maker_config_init(cfg: *mut lrt_maker_config) {
    ffi_value!("lrt_maker_config_init", (), {
        let out = OutPtr::new(cfg, "cfg")?;
        let d = MakerConfig::default();
        let mut flags = 0;
        if d.pin_mirror {
            flags |= LRT_MAKER_PIN_MIRROR;
        }
        if d.fresh_mirror {
            flags |= LRT_MAKER_FRESH_MIRROR;
        }
        let value = lrt_maker_config {
            task_window: d.task_window,
            policy: d.policy.into(),
            flags,
            heap_size: d.heap_size,
        };
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Creates a maker: resolves the window (`cfg->task_window`, else the
/// environment variable PTO2_RING_TASK_WINDOW, else 16384; an unusable
/// environment value is ignored with a warning), allocates the device image
/// once through `api` and reserves the untouched host mirror (pinned when
/// asked).
///
/// `cfg` and `api` must point to an lrt_maker_config and an lrt_host_api;
/// `out` to writable storage for a maker pointer, written only on success.
/// leanrt's own apis (lrt_host_api_host, lrt_host_api_cuda) are used
/// directly: the maker keeps its own reference to the device, so the api
/// may be released before the maker is destroyed. For a host's own table,
/// `api->ops` and the callbacks' `ctx` must stay valid until
/// lrt_runtime_maker_destroy returns, and the callbacks must work from
/// whichever thread uses the maker.
///
/// Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL argument, an
/// unknown policy or flag, a bad window, a heap size below 1024, or a table
/// that is NULL or has a NULL callback; LRT_ERR_STATE for a copy of a CUDA
/// api that was since released; LRT_ERR_NO_MEMORY when the host mirror or
/// the device image cannot be allocated (the message carries the device's
/// own reason, e.g. CUDA's error name); LRT_ERR_UNAVAILABLE for a CUDA api
/// inherited across fork. Nothing is leaked on failure. Any thread may call
/// it.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_create(
    cfg: *const lrt_maker_config,
    api: *const lrt_host_api,
    out: *mut *mut lrt_runtime_maker,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_create", {
        if cfg.is_null() {
            return Err(Error::invalid_argument("`cfg` is NULL"));
        }
        // SAFETY: cfg is non-NULL and readable; the enum field is read as its
        // raw integer so that any value a C caller stored is defined.
        let (task_window, raw_policy, flags, heap_size) = unsafe {
            (
                addr_of!((*cfg).task_window).read(),
                addr_of!((*cfg).policy).cast::<u32>().read(),
                addr_of!((*cfg).flags).read(),
                addr_of!((*cfg).heap_size).read(),
            )
        };
        // SAFETY: NULL or valid per the contract.
        let api = unsafe { arg_ref(api, "api") }?;
        let out = OutPtr::new(out, "out")?;
        let config = config_from_raw(task_window, raw_policy, flags, heap_size)?;
        // SAFETY: the table's validity and thread rules are the caller's
        // contract above.
        let device = unsafe { device_for_api(api) }?;
        let maker = RuntimeMaker::new(&config, device)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(into_handle(lrt_runtime_maker(maker))) };
        Ok(())
    })
}

/// Starts a run: zeroes the mirror's header (LRT_UPLOAD_FULL: the whole
/// mirror), writes every header field the device reads (docs/STAGING.md
/// lists them), sets current_task_index to 0 and writes the mirror's
/// header address to `*host_sm`. The header stays valid until the next
/// begin_run or destroy.
///
/// `maker` must be NULL or a live maker; `host_sm` must point to writable
/// storage for a pointer. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a
/// NULL argument; LRT_ERR_NO_MEMORY when LRT_MAKER_FRESH_MIRROR cannot map
/// a new mirror.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_begin_run(
    maker: *mut lrt_runtime_maker,
    host_sm: *mut *mut SmHeader,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_begin_run", {
        // SAFETY: NULL or a live maker not used by another thread, per the
        // contract.
        let maker = &mut unsafe { arg_mut(maker, "maker") }?.0;
        let out = OutPtr::new(host_sm, "host_sm")?;
        let header = maker.begin_run()?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(header) };
        Ok(())
    })
}

/// Claims slot current_task_index for a root kernel task on one AIV core:
/// the same as lrt_runtime_maker_claim_slot_ex with the defaults of
/// lrt_claim_desc_init. Writes everything the device reads for the slot
/// (docs/STAGING.md lists each field and its value), increments
/// current_task_index and writes the slot's index and host-mirror addresses
/// to `*out`. The host then writes the task's content.
///
/// `maker` must be NULL or a live maker; `out` must point to writable
/// storage for an lrt_task_slot. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT
/// for a NULL argument; LRT_ERR_STATE before begin_run;
/// LRT_ERR_OUT_OF_RANGE when the window is full.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_claim_slot(
    maker: *mut lrt_runtime_maker,
    out: *mut lrt_task_slot,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_claim_slot", {
        // SAFETY: NULL or a live maker not used by another thread, per the
        // contract.
        let maker = &mut unsafe { arg_mut(maker, "maker") }?.0;
        let out = OutPtr::new(out, "out")?;
        let slot = maker.claim_slot()?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(slot.into()) };
        Ok(())
    })
}

/// Sets `*desc` to a root kernel task on one AIV core: active_mask
/// LRT_SUBTASK_AIV0, task_attrs 0, one block, no flags, kernel ids -1, no
/// fanins, packed buffer NULL. `desc` must be NULL or point to writable
/// storage for an lrt_claim_desc; NULL is ignored (and recorded for
/// lrt_last_error). Any thread may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_claim_desc_init(desc: *mut lrt_claim_desc) {
    ffi_value!("lrt_claim_desc_init", (), {
        let out = OutPtr::new(desc, "desc")?;
        let d = ClaimDesc::default();
        let value = lrt_claim_desc {
            active_mask: d.active_mask,
            task_attrs: d.task_attrs,
            logical_block_num: d.logical_block_num,
            flags: 0,
            kernel_id: d.kernel_id,
            fanin_count: 0,
            fanin_local_ids: std::ptr::null(),
            packed_buffer_base: d.packed_buffer_base,
            packed_buffer_end: d.packed_buffer_end,
        };
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Claims slot current_task_index for the task `*desc` describes and writes
/// what the reference runtime's submit path writes for it: the descriptor
/// (task_id = the slot index, kernel ids, packed buffer), the payload's
/// counts (fanin_count = the distinct producers, whose ids are written to
/// fanin_local_ids; tensor and scalar counts 0), early-dispatch and
/// predicate state 0, the whole slot state (last_consumer_local_id = the
/// slot index, task_state LRT_TASK_PENDING or LRT_TASK_COMPLETED, the
/// slot's payload/task pointers, active_mask, task_attrs, task_kind
/// LRT_TASK_KIND_KERNEL or LRT_TASK_KIND_DUMMY, total_required_subtasks,
/// logical_block_num, graph_node_index -1, the rest 0/NULL) and the
/// completion flag (1 when LRT_CLAIM_COMPLETED, else 0). Each producer's
/// last_consumer_local_id is raised to this slot's index. Increments
/// current_task_index and writes the slot to `*out`.
///
/// `maker` must be NULL or a live maker; `desc` must point to an
/// lrt_claim_desc (its fanin_local_ids array readable for fanin_count
/// entries); `out` must point to writable storage for an lrt_task_slot.
/// Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL argument, an unknown
/// flag, logical_block_num below 1, too many subtasks for int16_t,
/// fanin_count outside [0, LRT_MAX_FANIN], a NULL fanin array with a
/// non-zero count, or a fanin that is not an earlier slot of this run;
/// LRT_ERR_STATE before begin_run; LRT_ERR_OUT_OF_RANGE when the window is
/// full. Nothing is written on failure.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_claim_slot_ex(
    maker: *mut lrt_runtime_maker,
    desc: *const lrt_claim_desc,
    out: *mut lrt_task_slot,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_claim_slot_ex", {
        // SAFETY: NULL or a live maker not used by another thread, per the
        // contract.
        let maker = &mut unsafe { arg_mut(maker, "maker") }?.0;
        // SAFETY: NULL or a readable lrt_claim_desc, per the contract.
        let d = *unsafe { arg_ref(desc, "desc") }?;
        let out = OutPtr::new(out, "out")?;
        if d.flags & !LRT_CLAIM_COMPLETED != 0 {
            return Err(Error::invalid_argument(format!(
                "unknown claim flags {:#x}",
                d.flags & !LRT_CLAIM_COMPLETED
            )));
        }
        let count = usize::try_from(d.fanin_count)
            .ok()
            .filter(|&n| n <= staging::MAX_FANIN)
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "fanin_count {} is outside [0, {}]",
                    d.fanin_count,
                    staging::MAX_FANIN
                ))
            })?;
        let fanins: &[i32] = if count == 0 {
            &[]
        } else if d.fanin_local_ids.is_null() {
            return Err(Error::invalid_argument(
                "`fanin_local_ids` is NULL with a non-zero fanin_count",
            ));
        } else {
            // SAFETY: non-NULL and readable for fanin_count entries during
            // this call, per the contract.
            unsafe { std::slice::from_raw_parts(d.fanin_local_ids, count) }
        };
        let claim = ClaimDesc {
            active_mask: d.active_mask,
            task_attrs: d.task_attrs,
            logical_block_num: d.logical_block_num,
            kernel_id: d.kernel_id,
            fanins,
            completed: d.flags & LRT_CLAIM_COMPLETED != 0,
            packed_buffer_base: d.packed_buffer_base,
            packed_buffer_end: d.packed_buffer_end,
        };
        let slot = maker.claim_slot_with(&claim)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(slot.into()) };
        Ok(())
    })
}

/// Ships the run to the device. Reads N = current_task_index and checks it
/// and every live slot's payload/task pointer before changing or copying
/// anything; sets orchestrator_done to 1 (the orchestration is over);
/// rewrites the host addresses to device addresses for the copy, ships per
/// the policy, and restores the host addresses in the mirror. Descriptors'
/// packed buffer pointers, task states and completion flags are shipped as
/// the host left them.
///
/// `maker` must be NULL or a live maker; `report` may be NULL, else it must
/// point to writable storage for an lrt_upload_report, filled on success.
/// Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL maker or a slot
/// pointer that is neither NULL nor a live element of the mirror;
/// LRT_ERR_STATE before begin_run; LRT_ERR_OUT_OF_RANGE when N is outside
/// [0, W]; LRT_ERR_DEVICE when a copy fails (the message carries the
/// device's reason). The maker stays usable for the next run after any
/// failure.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_upload(
    maker: *mut lrt_runtime_maker,
    report: *mut lrt_upload_report,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_upload", {
        // SAFETY: NULL or a live maker not used by another thread, per the
        // contract.
        let maker = &mut unsafe { arg_mut(maker, "maker") }?.0;
        let result = maker.upload()?;
        if let Ok(out) = OutPtr::new(report, "report") {
            // SAFETY: non-NULL; writable per the contract.
            unsafe { out.write(result.into()) };
        }
        Ok(())
    })
}

/// Copies the device's header back and writes the run's status to
/// `*runtime_status`: 0, or the negated orch_error_code when it is non-zero,
/// else the negated sched_error_code.
///
/// `maker` must be NULL or a live maker; `runtime_status` must point to a
/// writable int32_t. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL
/// argument; LRT_ERR_STATE before a successful upload; LRT_ERR_DEVICE when
/// the copy fails.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_read_status(
    maker: *mut lrt_runtime_maker,
    runtime_status: *mut i32,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_read_status", {
        // SAFETY: NULL or a live maker not used by another thread, per the
        // contract.
        let maker = &mut unsafe { arg_mut(maker, "maker") }?.0;
        let out = OutPtr::new(runtime_status, "runtime_status")?;
        let status = maker.read_status()?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(status) };
        Ok(())
    })
}

/// Writes the segment offsets of the maker's full image to `*out`.
/// `maker` must be NULL or a live maker; `out` must point to writable
/// storage for an lrt_sm_segments. Returns LRT_OK, or
/// LRT_ERR_INVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_segments(
    maker: *const lrt_runtime_maker,
    out: *mut SmSegments,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_segments", {
        // SAFETY: NULL or a live maker per the contract.
        let maker = &unsafe { arg_ref(maker, "maker") }?.0;
        let out = OutPtr::new(out, "out")?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(maker.segments()) };
        Ok(())
    })
}

/// The device image's address (its header is at offset 0 under every
/// policy), owned by the maker; NULL for a NULL maker. `maker` must be NULL
/// or a live maker.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_device_image(
    maker: *const lrt_runtime_maker,
) -> *mut c_void {
    ffi_value!("lrt_runtime_maker_device_image", std::ptr::null_mut(), {
        // SAFETY: NULL or a live maker per the contract.
        let maker = &unsafe { arg_ref(maker, "maker") }?.0;
        Ok(maker.device_image())
    })
}

/// Frees the device image and the mirror (unpinning it) and the maker. NULL
/// is a no-op. `maker` must be NULL or a maker from lrt_runtime_maker_create
/// that no other thread is using; it must not be used afterwards. Works in a
/// child process after fork (a CUDA image then stays with the parent).
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_destroy(maker: *mut lrt_runtime_maker) {
    ffi_value!("lrt_runtime_maker_destroy", (), {
        // SAFETY: NULL or an unused handle from into_handle, per the contract.
        unsafe { drop_handle(maker) };
        Ok(())
    })
}
