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
//! Each function's contract is its doc comment here (the header's text);
//! docs/STAGING.md explains the concepts.
use std::ffi::c_void;
use std::ptr::addr_of;

use super::boundary::{arg_mut, arg_ref, drop_handle, into_handle, OutPtr};
use super::device::{device_for_api, lrt_host_api};
use super::status::lrt_status;
use crate::staging::{self, ClaimDesc, MakerConfig, RuntimeMaker};
// The C-visible data is the core's own (the header reads it from
// src/staging/abi.rs and layout.rs); re-exported for Rust users of this
// module.
pub use crate::staging::abi::*;
pub use crate::staging::layout::{
    lrt_sm_header, lrt_sm_segments, lrt_task_descriptor, lrt_task_payload, lrt_task_slot_state,
};
use crate::{Error, Result};

/// A runtime maker (lrt_runtime_maker_create); opaque. It owns the device
/// image and the host mirror of one task window and is used by one thread
/// at a time; different makers are independent.
#[allow(non_camel_case_types)]
pub struct lrt_runtime_maker(RuntimeMaker);

/// Flags lrt_maker_config.flags may hold.
const KNOWN_FLAGS: u32 = LRT_MAKER_PIN_MIRROR | LRT_MAKER_FRESH_MIRROR;

/// The policy for a raw C value (a C caller may store any integer in the
/// enum-typed field); unknown values are rejected.
fn policy_from_raw(raw: u32) -> Result<lrt_upload_policy> {
    use lrt_upload_policy::*;
    [
        LRT_UPLOAD_FULL,
        LRT_UPLOAD_BOUNDED,
        LRT_UPLOAD_COMPACT,
        LRT_UPLOAD_AUTO,
    ]
    .into_iter()
    .find(|&p| p as u32 == raw)
    .ok_or_else(|| {
        Error::invalid_argument(format!(
            "unknown upload policy {raw} (expected 0, 1, 2 or 3)"
        ))
    })
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
        policy: policy_from_raw(raw_policy)?,
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
    out: *mut lrt_sm_segments,
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
            policy: d.policy,
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
    host_sm: *mut *mut lrt_sm_header,
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
        unsafe { out.write(slot) };
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
            .filter(|&n| n <= staging::LRT_MAX_FANIN)
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "fanin_count {} is outside [0, {}]",
                    d.fanin_count,
                    staging::LRT_MAX_FANIN
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
        unsafe { out.write(slot) };
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
            unsafe { out.write(result) };
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
    out: *mut lrt_sm_segments,
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
