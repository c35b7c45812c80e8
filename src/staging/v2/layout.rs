//! The second layout generation: the reference runtime's current
//! shared-memory image (v2), beside v1's in `../v1/layout.rs` (whose
//! descriptor and per-task caps it shares); cbindgen reads this file.
//!
//! What differs from v1:
//! * the header is 256 bytes (no `last_task_alive` line);
//! * a payload is 192 bytes: counts, then three *self-relative offsets*
//!   naming the task's regions in three argument pools (fanin ids, tensor
//!   records, scalars) instead of inline arrays;
//! * the slot state names its payload and descriptor by self-relative
//!   offsets (v1: pointers the host relocated);
//! * three pools follow the completion flags: fanin (`i32` producer ids,
//!   each task's region rounded up to 16 ids), tensors (128-byte records,
//!   exactly `tensor_count`), scalars (`u64`, rounded up to 8).
//!
//! Every segment starts on a 64-byte boundary. The *mirror* is dimensioned
//! for a window at every task's cap (`v2_ring_segment_offsets`, `segments.rs`); the image
//! the device receives is *compact*: pitched to `P = max(N, 1)` slots with
//! the pools as used (`v2_image_segments`). The device recomputes the four
//! slot-pitched positions from N and reaches the pools only through the
//! payloads' offsets, so every offset is re-taken for the compact positions.
//!
//! A self-relative offset ([`rel_encode`], [`rel_decode`]) is the target's
//! address minus the address of the field that holds it, as an `i32`; 0 is
//! "unbound" (a field never names itself), and a target out of `i32` reach
//! is stored as 0 rather than truncated. The whole image must therefore fit
//! in `i32::MAX` bytes, which bounds the window at 262144 slots.
//!
//! Sizes and offsets below are the reference's (6ebaf7715), pinned by static
//! assertions, by the goldens in the tests and by `c_tests/staging/v2_layout.c`.
#![allow(non_camel_case_types)]

use std::ffi::c_void;
use std::mem::{align_of, size_of};

use static_assertions::const_assert_eq;

use super::super::align::align_up;
use super::super::v1::layout::{
    assert_offset, lrt_task_descriptor, LRT_MAX_FANIN, LRT_MAX_SCALARS, LRT_MAX_TENSORS,
};

/// Bytes of one tensor record in the tensor pool (opaque to leanrt).
pub const LRT_V2_TENSOR_BYTES: usize = 128;
/// A task's fanin region is rounded up to this many ids (one cache line).
pub const LRT_V2_FANIN_ROUND: u64 = 16;
/// A task's scalar region is rounded up to this many scalars (one cache line).
pub const LRT_V2_SCALAR_ROUND: u64 = 8;

/// The v2 SM header (256 bytes): ring flow control, each counter on its own
/// cache line, the window constants, the four array pointers (host-side
/// only: null in the shipped image), and the error words.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct lrt_v2_sm_header {
    /// Next slot the orchestrator will claim; `total_tasks` at upload.
    pub current_task_index: i32,
    pub _pad0: [u8; 60],
    /// Highest id with every task up to it completed; -1 at start.
    pub completed_watermark: i32,
    pub _pad1: [u8; 60],
    pub task_window_size: u64,
    /// `task_window_size - 1`, a 4-byte int followed by 4 bytes of padding.
    pub task_window_mask: i32,
    pub _pad_mask: [u8; 4],
    pub heap_size: u64,
    /// Byte offset of the descriptor segment from the header (256).
    pub task_descriptors_offset: u64,
    pub task_descriptors: *mut lrt_task_descriptor,
    pub task_payloads: *mut lrt_v2_task_payload,
    pub slot_states: *mut lrt_v2_task_slot_state,
    pub completion_flags: *mut u8,
    pub orchestrator_done: i32,
    pub _pad2: [u8; 4],
    /// The mirror's size for the window (the reference's
    /// `calculate_size(W)`), also in the shipped image.
    pub total_size: u64,
    /// Non-zero: the orchestrator latched a fatal error; nothing is uploaded.
    pub orch_error_code: i32,
    /// Bit X set: scheduler thread X reported an error.
    pub sched_error_bitmap: u32,
    pub sched_error_code: i32,
    pub sched_error_thread: i32,
    pub _pad3: [u8; 32],
}

/// One v2 task payload (192 bytes, three cache lines): counts and region
/// offsets; early-dispatch state; dispatch predicate and dump metadata.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct lrt_v2_task_payload {
    pub tensor_count: i32,
    pub scalar_count: i32,
    /// Distinct producers, listed in the fanin region.
    pub fanin_count: i32,
    /// The self-relative offset of the task's first tensor record (0 = unbound).
    pub tensors: i32,
    /// The self-relative offset of the task's first scalar (0 = unbound).
    pub scalars: i32,
    /// The self-relative offset of the task's first fanin id (0 = unbound).
    pub fanin: i32,
    pub _pad0: [u8; 40],
    /// Early-dispatch state (cache line 1), zeroed by a claim.
    pub staged_core_mask: [u64; 2],
    pub dispatch_fanin: i32,
    pub published_block_count: i16,
    pub early_dispatch_state: u8,
    pub dispatch_propagated: u8,
    pub early_dispatch_launch_state: u8,
    pub _pad1: u8,
    pub running_slot_count: i16,
    pub early_sync_drain_state: u8,
    pub _pad2: [u8; 35],
    /// Dispatch predicate (cache line 2): element address, target value,
    /// element size, operator (0 = none: always dispatch).
    pub predicate_addr: u64,
    pub predicate_target: i64,
    pub predicate_elem_size: u8,
    pub predicate_op: u8,
    pub _pad3: [u8; 6],
    /// Argument-dump metadata.
    pub dump_arg_mask: u64,
    pub dump_arg_flags: u64,
    pub dump_scalar_dtypes: [u8; 16],
    pub _pad4: [u8; 8],
}

/// The scheduler's per-slot state in v2 (64 bytes): `payload` and `task`
/// are self-relative offsets; `graph_context` stays an absolute device
/// address.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct lrt_v2_task_slot_state {
    pub last_consumer_local_id: i32,
    /// Pending 0, completed 1, consumed 2.
    pub task_state: i32,
    /// The self-relative offset of the slot's payload.
    pub payload: i32,
    /// The self-relative offset of the slot's descriptor.
    pub task: i32,
    pub wake_list_head: *mut lrt_v2_task_slot_state,
    pub next_in_wake_list: *mut lrt_v2_task_slot_state,
    pub active_mask: u8,
    pub task_attrs: u8,
    pub any_subtask_deferred: u8,
    /// Kernel 0, dummy 1, graph 2, graph node 3.
    pub task_kind: u8,
    pub completed_subtasks: i16,
    pub total_required_subtasks: i16,
    pub logical_block_num: i16,
    pub next_block_idx: i16,
    pub graph_node_index: i32,
    /// Device address of a graph shell's submission (NULL otherwise).
    pub graph_context: *mut c_void,
    pub _pad0: [u8; 8],
}

/// Byte offsets of the segments of a v2 image (mirror or compact image).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct lrt_v2_segments {
    pub header: u64,
    pub descriptors: u64,
    pub payloads: u64,
    pub slot_states: u64,
    pub completion_flags: u64,
    pub fanin_pool: u64,
    pub tensor_pool: u64,
    pub scalar_pool: u64,
    /// Total size in bytes.
    pub end: u64,
}

const_assert_eq!(size_of::<lrt_v2_sm_header>(), 256);
const_assert_eq!(align_of::<lrt_v2_sm_header>(), 64);
assert_offset!(lrt_v2_sm_header, current_task_index, 0);
assert_offset!(lrt_v2_sm_header, completed_watermark, 64);
assert_offset!(lrt_v2_sm_header, task_window_size, 128);
assert_offset!(lrt_v2_sm_header, task_window_mask, 136);
assert_offset!(lrt_v2_sm_header, heap_size, 144);
assert_offset!(lrt_v2_sm_header, task_descriptors_offset, 152);
assert_offset!(lrt_v2_sm_header, task_descriptors, 160);
assert_offset!(lrt_v2_sm_header, task_payloads, 168);
assert_offset!(lrt_v2_sm_header, slot_states, 176);
assert_offset!(lrt_v2_sm_header, completion_flags, 184);
assert_offset!(lrt_v2_sm_header, orchestrator_done, 192);
assert_offset!(lrt_v2_sm_header, total_size, 200);
assert_offset!(lrt_v2_sm_header, orch_error_code, 208);
assert_offset!(lrt_v2_sm_header, sched_error_bitmap, 212);
assert_offset!(lrt_v2_sm_header, sched_error_code, 216);
assert_offset!(lrt_v2_sm_header, sched_error_thread, 220);

const_assert_eq!(size_of::<lrt_v2_task_payload>(), 192);
const_assert_eq!(align_of::<lrt_v2_task_payload>(), 64);
assert_offset!(lrt_v2_task_payload, tensor_count, 0);
assert_offset!(lrt_v2_task_payload, scalar_count, 4);
assert_offset!(lrt_v2_task_payload, fanin_count, 8);
assert_offset!(lrt_v2_task_payload, tensors, 12);
assert_offset!(lrt_v2_task_payload, scalars, 16);
assert_offset!(lrt_v2_task_payload, fanin, 20);
assert_offset!(lrt_v2_task_payload, staged_core_mask, 64);
assert_offset!(lrt_v2_task_payload, dispatch_fanin, 80);
assert_offset!(lrt_v2_task_payload, published_block_count, 84);
assert_offset!(lrt_v2_task_payload, early_dispatch_state, 86);
assert_offset!(lrt_v2_task_payload, dispatch_propagated, 87);
assert_offset!(lrt_v2_task_payload, early_dispatch_launch_state, 88);
assert_offset!(lrt_v2_task_payload, running_slot_count, 90);
assert_offset!(lrt_v2_task_payload, early_sync_drain_state, 92);
assert_offset!(lrt_v2_task_payload, predicate_addr, 128);
assert_offset!(lrt_v2_task_payload, predicate_target, 136);
assert_offset!(lrt_v2_task_payload, predicate_elem_size, 144);
assert_offset!(lrt_v2_task_payload, predicate_op, 145);
assert_offset!(lrt_v2_task_payload, dump_arg_mask, 152);
assert_offset!(lrt_v2_task_payload, dump_arg_flags, 160);
assert_offset!(lrt_v2_task_payload, dump_scalar_dtypes, 168);

const_assert_eq!(size_of::<lrt_v2_task_slot_state>(), 64);
const_assert_eq!(align_of::<lrt_v2_task_slot_state>(), 64);
assert_offset!(lrt_v2_task_slot_state, last_consumer_local_id, 0);
assert_offset!(lrt_v2_task_slot_state, task_state, 4);
assert_offset!(lrt_v2_task_slot_state, payload, 8);
assert_offset!(lrt_v2_task_slot_state, task, 12);
assert_offset!(lrt_v2_task_slot_state, wake_list_head, 16);
assert_offset!(lrt_v2_task_slot_state, next_in_wake_list, 24);
assert_offset!(lrt_v2_task_slot_state, active_mask, 32);
assert_offset!(lrt_v2_task_slot_state, task_attrs, 33);
assert_offset!(lrt_v2_task_slot_state, any_subtask_deferred, 34);
assert_offset!(lrt_v2_task_slot_state, task_kind, 35);
assert_offset!(lrt_v2_task_slot_state, completed_subtasks, 36);
assert_offset!(lrt_v2_task_slot_state, total_required_subtasks, 38);
assert_offset!(lrt_v2_task_slot_state, logical_block_num, 40);
assert_offset!(lrt_v2_task_slot_state, next_block_idx, 42);
assert_offset!(lrt_v2_task_slot_state, graph_node_index, 44);
assert_offset!(lrt_v2_task_slot_state, graph_context, 48);

const_assert_eq!(size_of::<lrt_v2_segments>(), 72);
// Every region starts on a cache line: the caps' strides are whole lines.
const_assert_eq!((LRT_MAX_FANIN as u64 * 4) % 64, 0);
const_assert_eq!((LRT_MAX_SCALARS as u64 * 8) % 64, 0);
const_assert_eq!(LRT_V2_FANIN_ROUND * 4, 64);
const_assert_eq!(LRT_V2_SCALAR_ROUND * 8, 64);

/// Segment offsets for `slots` slots and pools of the given element counts,
/// without validation (the reference's `ring_segment_offsets` of an
/// extents record). Callers keep the arguments small enough that nothing
/// overflows (at most `LRT_MAX_TASK_WINDOW` slots at every cap).
pub(crate) const fn v2_offsets(
    slots: u64,
    fanin_ids: u64,
    tensors: u64,
    scalars: u64,
) -> lrt_v2_segments {
    let descriptors = align_up(size_of::<lrt_v2_sm_header>() as u64);
    let payloads = descriptors + align_up(slots * size_of::<lrt_task_descriptor>() as u64);
    let slot_states = payloads + align_up(slots * size_of::<lrt_v2_task_payload>() as u64);
    let completion_flags =
        slot_states + align_up(slots * size_of::<lrt_v2_task_slot_state>() as u64);
    let fanin_pool = completion_flags + align_up(slots);
    let tensor_pool = fanin_pool + align_up(fanin_ids * 4);
    let scalar_pool = tensor_pool + align_up(tensors * LRT_V2_TENSOR_BYTES as u64);
    lrt_v2_segments {
        header: 0,
        descriptors,
        payloads,
        slot_states,
        completion_flags,
        fanin_pool,
        tensor_pool,
        scalar_pool,
        end: scalar_pool + align_up(scalars * 8),
    }
}

/// The pools of a window's mirror with every task at its cap (the
/// reference's `mirror_extents`).
pub(crate) const fn v2_mirror_extents(window: u64) -> V2PoolUse {
    V2PoolUse {
        fanin_ids: window * LRT_MAX_FANIN as u64,
        tensors: window * LRT_MAX_TENSORS as u64,
        scalars: window * LRT_MAX_SCALARS as u64,
    }
}

/// The mirror of a window at every task's cap, unvalidated.
pub(crate) const fn v2_mirror_offsets(window: u64) -> lrt_v2_segments {
    let e = v2_mirror_extents(window);
    v2_offsets(window, e.fanin_ids, e.tensors, e.scalars)
}

/// The self-relative offset stored at address `field` for `target`: 0 for
/// NULL (0) and for a target out of `i32` reach (stored as unbound, never
/// truncated), else `target - field`.
pub fn rel_encode(field: usize, target: usize) -> i32 {
    if target == 0 {
        return 0;
    }
    i32::try_from(target as i128 - field as i128).unwrap_or(0)
}

/// The address an offset stored at `field` names: `None` when unbound (0).
pub fn rel_decode(field: usize, delta: i32) -> Option<usize> {
    (delta != 0).then(|| (field as isize).wrapping_add(delta as isize) as usize)
}

/// Element counts of the three pools (capacities or cursors).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct V2PoolUse {
    pub fanin_ids: u64,
    pub tensors: u64,
    pub scalars: u64,
}
