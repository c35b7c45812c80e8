//! The layout-v2 entry points of the runtime maker (`lrt_v2_*`,
//! `lrt_runtime_maker_v2_*`); shared helpers are in the parent module.
use super::*;

// ---------------------------------------------------------------------------
// Layout v2 (the reference at 6ebaf7715): docs/STAGING.md, "Layout v2".

/// Writes to `*out` the byte offsets of the v2 mirror for a window of
/// `task_window` slots: header, descriptors, payloads, slot states,
/// completion flags, the fanin, tensor and scalar pools (every task at its
/// cap: LRT_MAX_FANIN ids, LRT_MAX_TENSORS records, LRT_MAX_SCALARS
/// scalars), end (the reference's
/// calculate_size). Every segment starts on a 64-byte boundary.
///
/// `out` must point to writable storage for an lrt_v2_segments; it is
/// written only on success. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a
/// NULL `out` or a window that is not a power of two in
/// [LRT_MIN_TASK_WINDOW, LRT_MAX_TASK_WINDOW] (the largest whose mirror
/// fits in INT32_MAX bytes, the reach of a self-relative offset). Any
/// thread may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_v2_ring_segment_offsets(
    task_window: u64,
    out: *mut lrt_v2_segments,
) -> lrt_status {
    ffi_status!({
        let out = OutPtr::new(out, "out")?;
        let segments = staging::v2_ring_segment_offsets(task_window)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(segments) };
        Ok(())
    })
}

/// Writes to `*out` the byte offsets of the compact v2 image of `n` tasks
/// whose pools hold `fanin_ids` ids, `tensors` records and `scalars`
/// scalars (as used, after the reference's rounding): pitch max(n, 1), each
/// segment 64-aligned; `out->end` = 256 + up64(40P) + 192P + 64P + up64(P)
/// + up64(4 fanin_ids) + 128 tensors + up64(8 scalars).
///
/// `out` must point to writable storage for an lrt_v2_segments, written
/// only on success. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL
/// `out`, `n` above LRT_MAX_TASK_WINDOW, or a pool above what n tasks at
/// their caps use.
/// Any thread may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_v2_image_segments(
    n: u64,
    fanin_ids: u64,
    tensors: u64,
    scalars: u64,
    out: *mut lrt_v2_segments,
) -> lrt_status {
    ffi_status!({
        let out = OutPtr::new(out, "out")?;
        let segments = staging::v2_image_segments(n, fanin_ids, tensors, scalars)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(segments) };
        Ok(())
    })
}

/// Starts a v2 run (a maker created with LRT_LAYOUT_V2): maps a fresh
/// mirror with LRT_MAKER_FRESH_MIRROR, zeroes the mirror's header and
/// writes every field as the reference's init_per_ring does
/// (current_task_index 0, completed_watermark -1, orchestrator_done 0, the
/// window and mask, heap_size, task_descriptors_offset 256, four array
/// addresses, total_size = lrt_v2_ring_segment_offsets(W).end, the error
/// words 0 and sched_error_thread -1), resets the pools' cursors and
/// writes the header's address to `*host_sm`; valid until the next
/// v2_begin_run or destroy.
///
/// The kept mirror then reads as a fresh, zeroed one (the reference's
/// run_host_orchestration maps one per run, and its orchestrator reads a
/// producer slot's task before it writes it): every byte the previous run
/// may have written in the mirror (its slots [0, current_task_index) of
/// each segment and its pools' used parts; docs/STAGING.md, "The kept
/// mirror's contract") is zeroed, at the cost of that run's footprint, not
/// of the window. So a slot not yet claimed in this run holds no task, and
/// a byte the host does not write ships as 0.
///
/// Unless LRT_MAKER_FRESH_MIRROR is set, the run's first slots and pool
/// regions are claimed straight into the image the last uploaded run had
/// (as many slots as it had, its pools' sizes), so that a run of the same
/// shape ships with no gather; the rest go to the mirror. The header's four
/// array addresses then name that image's arrays, which hold only those
/// first slots: reach a slot through its lrt_v2_task_slot, not through the
/// header.
///
/// `maker` must be NULL or a live maker; `host_sm` must point to writable
/// storage for a pointer. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a
/// NULL argument or a v1 maker; LRT_ERR_NO_MEMORY when a fresh mirror
/// cannot be mapped.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_v2_begin_run(
    maker: *mut lrt_runtime_maker,
    host_sm: *mut *mut lrt_v2_sm_header,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        let out = OutPtr::new(host_sm, "host_sm")?;
        let header = maker.generation_mut::<MakerV2>()?.begin_run()?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(header) };
        Ok(())
    })
}

/// Sets `*desc` to a root kernel task on one AIV core with no arguments:
/// `task` as lrt_claim_desc_init, no flags, no tensors, no scalars. `desc`
/// must be NULL or point to writable storage for an lrt_v2_claim_desc;
/// NULL is ignored (and recorded for lrt_last_error). Any thread may call
/// it.
#[no_mangle]
pub unsafe extern "C" fn lrt_v2_claim_desc_init(desc: *mut lrt_v2_claim_desc) {
    ffi_value!((), {
        let out = OutPtr::new(desc, "desc")?;
        let value = lrt_v2_claim_desc {
            task: default_claim_desc(),
            flags: 0,
            tensor_count: 0,
            tensors: std::ptr::null(),
            scalar_count: 0,
            scalars: std::ptr::null(),
        };
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Claims slot current_task_index of a v2 run for the task `*desc`
/// describes and writes what the reference's submit path writes: the
/// descriptor (task_id = the slot index, kernel ids, packed buffer); the
/// whole payload (counts; the tensor, scalar and fanin regions bound at the
/// pools' cursors as self-relative offsets; early-dispatch, predicate and
/// dump state 0); the task's records and scalars copied into their regions
/// (the scalar region's tail to a multiple of 8 zeroed) and its distinct
/// producers into its fanin region (tail to a multiple of 16 zeroed); the
/// whole slot state (as lrt_runtime_maker_claim_slot_ex, with payload and
/// task as self-relative offsets to the slot's elements, task_kind
/// LRT_TASK_KIND_GRAPH for LRT_V2_CLAIM_GRAPH_SHELL); the completion flag.
/// Each producer's last_consumer_local_id is raised to this slot's index.
/// The pools' cursors advance by the records, up8(scalars) and up16(distinct
/// producers). A region reserved for the host (`tensors` or `scalars`
/// NULL) is zeroed, so what the host leaves unwritten ships as zeros.
/// Writes the slot to `*out`.
///
/// The claim takes what the reference's submit_task / submit_dummy_task
/// take (6ebaf7715): producers as `task.fanin_count` says (repeats and ids
/// of no slot claimed earlier in this run left out, at most LRT_MAX_FANIN
/// distinct); a task on LRT_SUBTASK_AIV1 alone moved to LRT_SUBTASK_AIV0
/// with its kernel id; LRT_TASK_ATTR_SYNC_START kept only for more than
/// one block and checked against the cores of
/// lrt_runtime_maker_v2_set_core_counts; a task with no subtask (a dummy)
/// keeps neither LRT_TASK_ATTR_SYNC_START nor LRT_TASK_ATTR_HAS_PREDICATE.
///
/// `maker` must be NULL or a live maker; `desc` must point to an
/// lrt_v2_claim_desc whose arrays are readable for their counts during the
/// call; `out` must point to writable storage for an lrt_v2_task_slot.
/// Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL argument, a v1
/// maker, an unknown flag, a bad `task` (as lrt_runtime_maker_claim_slot_ex),
/// a count outside [0, LRT_MAX_TENSORS] or [0, LRT_MAX_SCALARS], a graph
/// shell with tensors or scalars, more than LRT_MAX_FANIN distinct
/// producers, or a sync_start task with more blocks than the cores of its
/// shape; LRT_ERR_STATE before v2_begin_run or with
/// an orchestrator error latched in the header (orch_error_code != 0);
/// LRT_ERR_OUT_OF_RANGE when the window or a pool is full. Nothing is
/// written on failure.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_v2_claim_slot(
    maker: *mut lrt_runtime_maker,
    desc: *const lrt_v2_claim_desc,
    out: *mut lrt_v2_task_slot,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        // SAFETY: NULL or a readable lrt_v2_claim_desc, per the contract.
        let d = *unsafe { arg_ref(desc, "desc") }?;
        let out = OutPtr::new(out, "out")?;
        if d.flags & !LRT_V2_CLAIM_GRAPH_SHELL != 0 {
            return Err(Error::invalid_argument(format!(
                "unknown v2 claim flags {:#x}",
                d.flags & !LRT_V2_CLAIM_GRAPH_SHELL
            )));
        }
        // SAFETY: the arrays are readable for their counts, per the contract.
        let (task, tensors, scalars) = unsafe {
            (
                claim_from_c(&d.task, i32::MAX as usize)?,
                c_array(
                    d.tensors.cast::<staging::TensorRecord>(),
                    d.tensor_count,
                    staging::LRT_MAX_TENSORS,
                    "tensors",
                    true,
                )?,
                c_array(
                    d.scalars,
                    d.scalar_count,
                    staging::LRT_MAX_SCALARS,
                    "scalars",
                    true,
                )?,
            )
        };
        let claim = staging::V2ClaimDesc {
            task,
            tensor_count: tensors.0,
            tensors: tensors.1,
            scalar_count: scalars.0,
            scalars: scalars.1,
            graph_shell: d.flags & LRT_V2_CLAIM_GRAPH_SHELL != 0,
        };
        let slot = maker.generation_mut::<MakerV2>()?.claim_slot(&claim)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(slot) };
        Ok(())
    })
}

/// Writes to `*out` the segments of the compact image the next
/// lrt_runtime_maker_v2_upload ships, for the run as it stands (N =
/// current_task_index, the pools as used): what a host needs to place its
/// graph submissions after the image (`device_image + out->end + offset`).
///
/// `maker` must be NULL or a live maker; `out` must point to writable
/// storage for an lrt_v2_segments. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT
/// for a NULL argument or a v1 maker.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_v2_image_segments(
    maker: *const lrt_runtime_maker,
    out: *mut lrt_v2_segments,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let maker = unsafe { enter(maker) }?;
        let out = OutPtr::new(out, "out")?;
        let segments = maker.generation::<MakerV2>()?.image_segments();
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(segments) };
        Ok(())
    })
}

/// Ships a v2 run in one copy: `before_len` bytes of `before`, the compact
/// image, `after_len` bytes of `after`, contiguous on the device, the
/// image at lrt_runtime_maker_device_image. The image is the mirror's live
/// prefixes and used pools pitched to max(N, 1) (lrt_v2_image_segments):
/// header with its four pointers NULL and orchestrator_done 1, every slot's
/// payload/task offset re-taken for the image, every bound region offset
/// re-taken for the image's pools (unbound ones stay 0), padding zeroed.
/// The mirror holds the same bytes when the call returns. The report says
/// what shipped: copies 1, the framed bytes, path LRT_UPLOAD_COMPACT.
/// Under LRT_UPLOAD_AUTO the upload may instead take the split or the
/// direct route (its pools, or all its live bytes but the header, copied
/// straight from the mirror), as lrt_runtime_maker_v2_upload_frame
/// describes.
///
/// `maker` must be NULL or a live maker; `before` / `after` must be
/// readable for their lengths (NULL only with length 0); `report` may be
/// NULL, else it must point to writable storage for an lrt_upload_report,
/// filled on success. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL
/// maker, a v1 maker, a NULL frame with a non-zero length, a frame longer
/// than its room (lrt_maker_config.frame_before / frame_after), or a live
/// payload whose regions are not inside the used pools (an unbound region
/// with a non-zero count, an offset off an element or outside its pool, a
/// count past its cap); LRT_ERR_STATE before v2_begin_run or with an
/// orchestrator error latched in the header, or on a maker created without
/// a device region; LRT_ERR_OUT_OF_RANGE when N is outside [0, W]: nothing
/// is copied in any of these cases. LRT_ERR_DEVICE when the copy fails.
/// The maker stays usable for the next run.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_v2_upload(
    maker: *mut lrt_runtime_maker,
    before: *const c_void,
    before_len: u64,
    after: *const c_void,
    after_len: u64,
    report: *mut lrt_upload_report,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        // SAFETY: readable for their lengths, per the contract.
        let (before, after) = unsafe {
            (
                frame_from_c(before, before_len, "before")?,
                frame_from_c(after, after_len, "after")?,
            )
        };
        let result = maker.generation_mut::<MakerV2>()?.upload(before, after)?;
        if let Ok(out) = OutPtr::new(report, "report") {
            // SAFETY: non-NULL; writable per the contract.
            unsafe { out.write(result) };
        }
        Ok(())
    })
}

/// For a host that writes a v2 run into the mirror itself (through its own
/// cursors, at the mirror's layout: lrt_v2_ring_segment_offsets(W) with the
/// default pools), as the reference's orchestrator does: says how many
/// elements its pools hold (`fanin_ids` ids, `tensors` records, `scalars`
/// scalars, the cursors after the run's last task). Call it after the last
/// write and before the upload. The upload then reads every slot
/// [0, current_task_index) and every region from the mirror and checks
/// each live payload's regions against these counts, as for a claimed run;
/// lrt_runtime_maker_v2_image_segments reports the image they make. No
/// claims are taken for the rest of the run, and the maker makes no guess
/// for the next one (it claims nothing into an image the host does not
/// write). With LRT_UPLOAD_AUTO, from the second upload on, this call also
/// plans the upload's route on the lines just written (for the frames of
/// the last upload; docs/STAGING.md); the host may still write until the
/// upload, which checks every region again before its first copy and
/// chooses again for other frames.
///
/// `maker` must be NULL or a live maker. Returns LRT_OK;
/// LRT_ERR_INVALID_ARGUMENT for a NULL maker or a v1 maker; LRT_ERR_STATE
/// before lrt_runtime_maker_v2_begin_run or when slots of this run were
/// claimed through lrt_runtime_maker_v2_claim_slot; LRT_ERR_OUT_OF_RANGE
/// for a count above its pool's capacity. Nothing changes on failure.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_v2_set_pool_use(
    maker: *mut lrt_runtime_maker,
    fanin_ids: u64,
    tensors: u64,
    scalars: u64,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        maker
            .generation_mut::<MakerV2>()?
            .set_pool_use(staging::V2PoolUse {
                fanin_ids,
                tensors,
                scalars,
            })
    })
}

/// The cores the maker's tasks run on, as the reference's orchestrator
/// knows them (`total_cluster_count` and `total_aiv_count`, set per run by
/// its `runtime_finalize_after_wire`): `clusters` (one AIC each) and
/// `aiv_cores`; 0 = unknown (the default). A claim with
/// LRT_TASK_ATTR_SYNC_START and more than one block is refused
/// (LRT_ERR_INVALID_ARGUMENT, nothing written) when its blocks exceed the
/// cores of its shape: `aiv_cores` for a task on one AIV core, `clusters`
/// for any other (AIC, or more than one core), as the reference's
/// submit_task refuses it; a count of 0 checks nothing, as there. The
/// counts hold for every later claim, in this run and the next ones, until
/// set again; they may be set at any time.
///
/// `maker` must be NULL or a live maker. Returns LRT_OK;
/// LRT_ERR_INVALID_ARGUMENT for a NULL maker, a v1 maker or a negative
/// count. Nothing changes on failure.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_v2_set_core_counts(
    maker: *mut lrt_runtime_maker,
    clusters: i32,
    aiv_cores: i32,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        maker
            .generation_mut::<MakerV2>()?
            .set_core_counts(clusters, aiv_cores)
    })
}

/// Ships a v2 run to the device region `*frame` names, which may differ
/// from upload to upload (a host that grows its device arena per run):
/// `frame->before` to device_image - before_len, the compact image (as
/// lrt_runtime_maker_v2_upload builds it) at device_image, `frame->after`
/// right after it; read_status then reads that image's header. The maker's
/// own region, if it has one, is not touched.
///
/// How: under LRT_UPLOAD_AUTO, per upload, either the one framed copy or
/// (for a run not claimed into its image, e.g. one the host wrote itself)
/// the split route: the frame before and the image's per-task part (header
/// and slot segments, checked and re-taken as they are gathered) in one
/// copy, each used pool copied straight from the mirror, the frame after
/// on its own, up to five copies; or the direct route: the frame before
/// and the header in one copy, each slot segment's live part and each used
/// pool straight from the mirror (every region checked, and every slot
/// bound to its own payload and descriptor, else the split route; their
/// offsets moved there for the image and moved back before the call
/// returns), up to ten copies; whichever the cost model says is cheapest. The model is
/// measured at the maker's first v2 upload, into that upload's destination
/// before anything else is written there (the latency as the median of
/// small copies where the copies from the mirror go, the gather from the
/// payloads the host wrote). The split route does not write the padding
/// after each pool, the direct route none after any segment (the device
/// reads none of it). Whatever the route and
/// its outcome, the mirror holds the same bytes when the call returns; it
/// must not be read or written by another thread during the call. Under
/// the other policies, the one framed copy. A frame longer
/// than its room (lrt_maker_config.frame_before / frame_after) travels as
/// a copy of its own. The report says what shipped (copies, the framed
/// bytes, path LRT_UPLOAD_COMPACT or LRT_UPLOAD_BOUNDED).
///
/// `maker` must be NULL or a live maker; `frame` must point to an
/// lrt_v2_frame whose frames are readable for their lengths and whose
/// device bytes (before_len below device_image, device_room from it on)
/// are writable device memory; `report` may be NULL, else it must point to
/// writable storage for an lrt_upload_report, filled on success. Returns
/// LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL maker or frame, a v1 maker,
/// a NULL or unaligned device_image, a NULL frame with a non-zero length, a
/// frame before longer than device_image's address, or a live payload
/// whose regions are not inside the used pools (as
/// lrt_runtime_maker_v2_upload); LRT_ERR_STATE before v2_begin_run or with
/// an orchestrator error latched in the header; LRT_ERR_OUT_OF_RANGE when N
/// is outside [0, W] or the image and the frame after do not fit
/// device_room: nothing is copied in any of these cases. LRT_ERR_DEVICE
/// when a copy fails. The maker stays usable for the next run.
#[no_mangle]
#[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
pub unsafe extern "C" fn lrt_runtime_maker_v2_upload_frame(
    maker: *mut lrt_runtime_maker,
    frame: *const lrt_v2_frame,
    report: *mut lrt_upload_report,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL or a live maker, per the contract.
        let mut maker = unsafe { enter(maker) }?;
        // SAFETY: NULL or a valid lrt_v2_frame, per the contract.
        let f = *unsafe { arg_ref(frame, "frame") }?;
        // SAFETY: readable for their lengths, per the contract.
        let (before, after) = unsafe {
            (
                frame_from_c(f.before, f.before_len, "frame->before")?,
                frame_from_c(f.after, f.after_len, "frame->after")?,
            )
        };
        let result = maker
            .generation_mut::<MakerV2>()?
            .upload_frame(&staging::V2Frame {
                image: f.device_image.cast::<u8>(),
                room: f.device_room,
                before,
                after,
            })?;
        if let Ok(out) = OutPtr::new(report, "report") {
            // SAFETY: non-NULL; writable per the contract.
            unsafe { out.write(result) };
        }
        Ok(())
    })
}

/// A caller's frame as a slice (NULL only with length 0).
///
/// # Safety
/// A non-NULL `ptr` is readable for `len` bytes for `'a`.
unsafe fn frame_from_c<'a>(ptr: *const c_void, len: u64, what: &str) -> Result<&'a [u8]> {
    match (len, ptr.is_null()) {
        (0, _) => Ok(&[]),
        (_, true) => Err(Error::invalid_argument(format!(
            "`{what}` is NULL with length {len}"
        ))),
        (len, false) => {
            let len = usize::try_from(len)
                .map_err(|_| Error::invalid_argument(format!("`{what}` length {len}")))?;
            // SAFETY: non-NULL and readable for len bytes, per the contract.
            Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
        }
    }
}
