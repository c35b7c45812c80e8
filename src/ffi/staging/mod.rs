//! `lrt_sm_*`, `lrt_maker_config_init`, `lrt_runtime_maker_*`: the runtime
//! maker, which builds each run's shared-memory task image in a host mirror
//! and uploads only the part the device will read.
//!
//! Life cycle: lrt_runtime_maker_create once; then per run
//! lrt_runtime_maker_begin_run, lrt_runtime_maker_claim_slot once per task
//! (the host then writes the task's content through the returned pointers),
//! lrt_runtime_maker_upload, the device runs, lrt_runtime_maker_read_status;
//! lrt_runtime_maker_destroy at the end. One call at a time per maker (any
//! thread; see lrt_runtime_maker for what a second call gets); different
//! makers are independent.
//! Each function's contract is its doc comment here (the header's text);
//! docs/STAGING.md explains the concepts. A call of one layout's own (v1:
//! begin_run, claim_slot*, upload; v2: the `_v2_` calls) takes the maker as
//! that layout's type (`RuntimeMaker::generation_mut`), and is
//! LRT_ERR_INVALID_ARGUMENT on a maker of the other.
use std::ffi::c_void;

use super::boundary::{arg_ref, drop_handle, try_into_handle, OutPtr};
use super::device::{device_for_api, lrt_host_api};
use crate::error::abi::lrt_status;
use crate::staging::one_call::{Entered, OneCall};
use crate::staging::{
    self, BorrowedImage, ClaimDesc, Maker, MakerConfig, MakerV1, MakerV2, RuntimeMaker,
};
// The C-visible data is the core's own (the header reads it from
// src/staging/abi.rs and the generations' layout.rs); re-exported for Rust
// users of this module.
pub use crate::staging::abi::*;
pub use crate::staging::{
    lrt_sm_header, lrt_sm_segments, lrt_task_descriptor, lrt_task_payload, lrt_task_slot_state,
    lrt_v2_segments, lrt_v2_sm_header, lrt_v2_task_payload, lrt_v2_task_slot_state,
};
use crate::{Error, Result};

/// A runtime maker (lrt_runtime_maker_create); opaque. It owns the host
/// mirror of one task window and its device image (or uses one the caller
/// lends, lrt_runtime_maker_create_borrowed); different makers are
/// independent.
///
/// One call at a time per maker: a call on a maker made while another call
/// on the same maker is in progress, from a second thread or from inside
/// one of that maker's device callbacks (its lrt_host_api), returns
/// LRT_ERR_STATE (lrt_runtime_maker_device_image: NULL;
/// lrt_runtime_maker_destroy: nothing freed) with a message naming this
/// rule, and changes nothing. A device callback may call any leanrt
/// function that does not take that maker: another maker, lrt_last_error,
/// lrt_status_str, the pool.
#[allow(non_camel_case_types)]
pub struct lrt_runtime_maker(OneCall<RuntimeMaker>);

/// The message of a refused call.
const ONE_CALL_AT_A_TIME: &str = "the maker is inside another call (one call at a time per \
     maker: not from two threads at once, nor from inside the maker's own device callbacks); \
     nothing was done";

/// Enters the maker behind a C handle for one call; NULL is
/// LRT_ERR_INVALID_ARGUMENT, a maker in use LRT_ERR_STATE.
///
/// # Safety
/// `maker` is NULL or a live handle from `try_into_handle`.
unsafe fn enter<'a>(maker: *const lrt_runtime_maker) -> Result<Entered<'a, RuntimeMaker>> {
    // SAFETY: NULL or live, per the caller's contract.
    let handle = unsafe { arg_ref(maker, "maker") }?;
    handle
        .0
        .try_enter()
        .ok_or_else(|| Error::state(ONE_CALL_AT_A_TIME))
}

mod convert;
use convert::*;

/// Writes to `*out` the byte offsets of the segments of the image for a
/// window of `task_window` slots (header, descriptors, payloads, slot
/// states, completion flags, and the end = the image size).
///
/// `out` must point to writable storage for an lrt_sm_segments; it is
/// written only on success. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a
/// NULL `out` or a window that is not a power of two in
/// [LRT_MIN_TASK_WINDOW, LRT_MAX_TASK_WINDOW] (the largest whose image fits
/// in INT32_MAX bytes). Any thread may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_sm_ring_segment_offsets(
    task_window: u64,
    out: *mut lrt_sm_segments,
) -> lrt_status {
    ffi_status!({
        let out = OutPtr::new(out, "out")?;
        let segments = staging::segment_offsets(task_window)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(segments) };
        Ok(())
    })
}

/// Sets `*cfg` to the defaults: window 0 (the environment, else
/// LRT_DEFAULT_TASK_WINDOW),
/// LRT_UPLOAD_BOUNDED, no flags, heap size 0 (the environment, else
/// LRT_DEFAULT_HEAP_SIZE). `cfg` must be NULL or point to writable
/// storage for an lrt_maker_config; NULL is ignored (and recorded for
/// lrt_last_error). Any thread may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_maker_config_init(cfg: *mut lrt_maker_config) {
    ffi_value!((), {
        let out = OutPtr::new(cfg, "cfg")?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(MakerConfig::default().to_c()) };
        Ok(())
    })
}

/// Creates a maker: resolves the window (`cfg->task_window`, else the
/// environment variable PTO2_RING_TASK_WINDOW, else
/// LRT_DEFAULT_TASK_WINDOW; an unusable
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
/// unknown policy or flag, a bad window, a heap size below
/// LRT_MIN_HEAP_SIZE, or a table
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
    ffi_status!({
        // SAFETY: the caller's contract above.
        unsafe { create(cfg, api, None, out) }
    })
}

/// The shared body of the two create functions.
///
/// # Safety
/// The contract of lrt_runtime_maker_create.
unsafe fn create(
    cfg: *const lrt_maker_config,
    api: *const lrt_host_api,
    image: Option<BorrowedImage>,
    out: *mut *mut lrt_runtime_maker,
) -> Result<()> {
    if cfg.is_null() {
        return Err(Error::invalid_argument("`cfg` is NULL"));
    }
    // SAFETY: NULL or valid per the contract.
    let api = unsafe { arg_ref(api, "api") }?;
    let out = OutPtr::new(out, "out")?;
    // SAFETY: non-NULL and readable per the contract.
    let config = unsafe { MakerConfig::from_c(cfg) }?;
    // SAFETY: the table's validity and thread rules are the caller's
    // contract.
    let device = unsafe { device_for_api(api) }?;
    let maker = RuntimeMaker::create(&config, device, image)?;
    let handle = try_into_handle(lrt_runtime_maker(OneCall::new(maker)))?;
    // SAFETY: checked non-NULL; writable per the contract.
    unsafe { out.write(handle) };
    Ok(())
}

/// lrt_runtime_maker_create with a device image the caller lends instead of
/// one allocated through `api`: `device_image` is device memory of at least
/// `device_image_size` bytes, which must be at least the image size
/// (lrt_sm_ring_segment_offsets(W).end for the resolved window W; set
/// cfg->task_window to know W up front). The maker never allocates nor
/// frees device memory (device_malloc and device_free are not called; the
/// table still needs all four callbacks); the region must stay valid until
/// lrt_runtime_maker_destroy returns or lrt_runtime_maker_set_device_image
/// moves the maker elsewhere. LRT_UPLOAD_AUTO's measurement at create
/// copies into it. A LRT_LAYOUT_V2 maker needs the room
/// lrt_runtime_maker_v2_upload writes (the frames' rooms, 64 bytes for
/// alignment, the mirror's size), or no region at all: `device_image`
/// NULL with a size of 0 makes a v2 maker whose uploads name their
/// destination (lrt_runtime_maker_v2_upload_frame);
/// lrt_runtime_maker_device_image is then NULL and
/// lrt_runtime_maker_v2_upload is LRT_ERR_STATE until
/// lrt_runtime_maker_set_device_image lends a region.
///
/// Returns what lrt_runtime_maker_create returns, and
/// LRT_ERR_INVALID_ARGUMENT for a NULL `device_image` (but NULL with size
/// 0 for layout v2) or a size below the image size (the message names
/// both sizes); there is no LRT_ERR_NO_MEMORY from the device. Any thread
/// may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_create_borrowed(
    cfg: *const lrt_maker_config,
    api: *const lrt_host_api,
    device_image: *mut c_void,
    device_image_size: usize,
    out: *mut *mut lrt_runtime_maker,
) -> lrt_status {
    ffi_status!({
        let image = BorrowedImage {
            ptr: device_image,
            len: device_image_size,
        };
        // SAFETY: the caller's contract above.
        unsafe { create(cfg, api, Some(image), out) }
    })
}

/// Sends the next uploads, and lrt_runtime_maker_read_status, to another
/// device region the caller lends (`device_image`, at least
/// `device_image_size` bytes, which must be at least the image size; same
/// lifetime rule as for lrt_runtime_maker_create_borrowed), so that one
/// maker serves several device regions; with `device_image` NULL, back to
/// the image the maker allocated at create. The region it leaves is not
/// touched again. read_status then needs an upload to the new region first.
///
/// Only between runs: LRT_ERR_STATE after lrt_runtime_maker_begin_run until
/// that run's lrt_runtime_maker_upload has copied (or failed copying) or
/// lrt_runtime_maker_abort_run ended it.
/// Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL maker, a size below
/// the image size, or NULL on a maker from lrt_runtime_maker_create_borrowed
/// (it has no image of its own). Nothing changes on failure.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_set_device_image(
    maker: *mut lrt_runtime_maker,
    device_image: *mut c_void,
    device_image_size: usize,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        let image = (!device_image.is_null()).then_some(BorrowedImage {
            ptr: device_image,
            len: device_image_size,
        });
        maker.set_device_image(image)
    })
}

/// Makes the maker copy (and pin) through `api` from now on, for a host
/// that builds its device-call table per run. `api` follows
/// lrt_runtime_maker_create's rules (a host's own table must stay valid
/// until the maker is destroyed or rebound). An image the maker allocated
/// is still freed at destroy through the table that allocated it, which
/// must therefore stay valid until destroy. LRT_UPLOAD_AUTO keeps the cost
/// model it measured at create.
///
/// Only between runs, as lrt_runtime_maker_set_device_image. Returns
/// LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL argument or a table with a
/// NULL callback; LRT_ERR_STATE in a run or for a released CUDA api;
/// LRT_ERR_UNAVAILABLE for a CUDA api inherited across fork. Nothing changes
/// on failure.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_set_api(
    maker: *mut lrt_runtime_maker,
    api: *const lrt_host_api,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        // SAFETY: NULL or valid per the contract.
        let api = unsafe { arg_ref(api, "api") }?;
        // SAFETY: the table's validity and thread rules are the caller's
        // contract above.
        let device = unsafe { device_for_api(api) }?;
        maker.set_device(device)
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
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        let out = OutPtr::new(host_sm, "host_sm")?;
        let header = maker.generation_mut::<MakerV1>()?.begin_run()?;
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
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        let out = OutPtr::new(out, "out")?;
        let slot = maker.generation_mut::<MakerV1>()?.claim_slot()?;
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
    ffi_value!((), {
        let out = OutPtr::new(desc, "desc")?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(default_claim_desc()) };
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
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        // SAFETY: NULL or a readable lrt_claim_desc, per the contract.
        let d = *unsafe { arg_ref(desc, "desc") }?;
        let out = OutPtr::new(out, "out")?;
        // SAFETY: the descriptor's arrays are readable per the contract.
        let claim = unsafe { claim_from_c(&d, staging::LRT_MAX_FANIN) }?;
        let slot = maker.generation_mut::<MakerV1>()?.claim_slot_with(&claim)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(slot) };
        Ok(())
    })
}

/// Ends the open run without shipping it, for a host whose orchestration
/// failed between lrt_runtime_maker_begin_run and lrt_runtime_maker_upload:
/// claims and uploads return LRT_ERR_STATE until the next begin_run, and
/// lrt_runtime_maker_set_device_image / lrt_runtime_maker_set_api are
/// allowed again. The mirror is left as it is; read_status still reports
/// the last successful upload. Without an open run it does nothing.
///
/// `maker` must be NULL or a live maker. Returns LRT_OK;
/// LRT_ERR_INVALID_ARGUMENT for a NULL maker.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_abort_run(maker: *mut lrt_runtime_maker) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        maker.abort_run();
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
#[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
pub unsafe extern "C" fn lrt_runtime_maker_upload(
    maker: *mut lrt_runtime_maker,
    report: *mut lrt_upload_report,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        let result = maker.generation_mut::<MakerV1>()?.upload()?;
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
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        let out = OutPtr::new(runtime_status, "runtime_status")?;
        let status = maker.read_status()?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(status) };
        Ok(())
    })
}

/// Writes the segment offsets of the maker's full image to `*out`: the v1
/// image of the maker's window, lrt_sm_ring_segment_offsets(W) (for a
/// LRT_LAYOUT_V2 maker too; its own image's are
/// lrt_v2_ring_segment_offsets(W) and lrt_runtime_maker_v2_image_segments).
/// `maker` must be NULL or a live maker; `out` must point to writable
/// storage for an lrt_sm_segments. Returns LRT_OK, or
/// LRT_ERR_INVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_segments(
    maker: *const lrt_runtime_maker,
    out: *mut lrt_sm_segments,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let maker = unsafe { enter(maker) }?;
        let out = OutPtr::new(out, "out")?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(staging::segment_offsets(maker.task_window())?) };
        Ok(())
    })
}

/// The address of the device image the uploads go to (its header is at
/// offset 0 under every policy): the maker's own, or the region it
/// borrows (a v2 maker's: where its image starts, after the room for the
/// frame before it). NULL for a v2 maker without a region (its uploads
/// name their destination), and for a NULL maker or one inside another
/// call (recorded for lrt_last_error). `maker` must be NULL or a live
/// maker.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_device_image(
    maker: *const lrt_runtime_maker,
) -> *mut c_void {
    ffi_value!(std::ptr::null_mut(), {
        // SAFETY: NULL or a live maker, per the contract.
        let maker = unsafe { enter(maker) }?;
        Ok(maker.device_image())
    })
}

/// Frees the device image the maker allocated (never a borrowed one), the
/// mirror (unpinning it) and the maker. NULL is a no-op. A maker inside
/// another call (destroy from one of its own device callbacks) is not
/// destroyed: the refusal is recorded for lrt_last_error (LRT_ERR_STATE).
/// `maker` must be NULL or a live maker; it must not be used after it was
/// destroyed. Works in a child process after fork (a CUDA image then stays
/// with the parent).
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_destroy(maker: *mut lrt_runtime_maker) {
    ffi_value!((), {
        if maker.is_null() {
            return Ok(());
        }
        // SAFETY: a live handle, per the contract.
        let held = unsafe { enter(maker) }?;
        // No call may enter a maker being destroyed.
        held.keep();
        // SAFETY: a handle from try_into_handle, not used again per the contract.
        unsafe { drop_handle(maker) };
        Ok(())
    })
}

mod v2;
pub use v2::*;
