//! The v1 image (the reference at #1659), byte-compatible with the
//! reference runtime: its C-visible structs (cbindgen reads this file) and
//! the layout arithmetic of the v1 maker (`super`).
//!
//! An image for a task window `W` is five segments, each starting on a
//! 64-byte boundary: the header, then `W` descriptors, `W` payloads, `W` slot
//! states and `W` one-byte completion flags. Sizes, alignments and field
//! offsets are fixed by the design contract and pinned below by static
//! assertions (and by the C test `c_tests/staging/layout.c`).
#![allow(non_camel_case_types)]

use std::ffi::c_void;
use std::mem::{align_of, size_of};

use static_assertions::{const_assert, const_assert_eq};

use super::super::align::align_up;

/// Number of fanin ids a payload holds.
pub const LRT_MAX_FANIN: usize = 128;
/// Number of tensors a payload holds.
pub const LRT_MAX_TENSORS: usize = 32;
/// Number of 64-bit scalars a payload holds.
pub const LRT_MAX_SCALARS: usize = 16;
/// Bytes of one tensor record in a payload.
pub(crate) const TENSOR_BYTES: usize = 128;

/// The SM header: ring flow control (each counter on its own cache line),
/// the window constants, the segment pointers and the error words.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct lrt_sm_header {
    /// Next slot the orchestrator will claim; `total_tasks` at upload.
    pub current_task_index: i32,
    pub _pad0: [u8; 60],
    pub last_task_alive: i32,
    pub _pad1: [u8; 60],
    pub completed_watermark: i32,
    pub _pad2: [u8; 60],
    pub task_window_size: u64,
    /// `task_window_size - 1`, a 4-byte int followed by 4 bytes of padding.
    pub task_window_mask: i32,
    pub _pad_mask: [u8; 4],
    pub heap_size: u64,
    /// Byte offset of the descriptor segment from the header.
    pub task_descriptors_offset: u64,
    pub task_descriptors: *mut lrt_task_descriptor,
    pub task_payloads: *mut lrt_task_payload,
    pub slot_states: *mut lrt_task_slot_state,
    pub completion_flags: *mut u8,
    pub orchestrator_done: i32,
    pub _pad3: [u8; 4],
    /// Size in bytes of the image the pointers above describe.
    pub total_size: u64,
    pub orch_error_code: i32,
    /// Bit X set: scheduler thread X reported an error.
    pub sched_error_bitmap: u32,
    pub sched_error_code: i32,
    pub sched_error_thread: i32,
    pub _pad4: [u8; 32],
}

/// One task descriptor (40 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_task_descriptor {
    pub task_id: u64,
    /// Kernel per subtask slot; -1 = none.
    pub kernel_id: [i32; 3],
    pub _pad0: [u8; 4],
    pub packed_buffer_base: *mut c_void,
    pub packed_buffer_end: *mut c_void,
}

/// One task payload (4864 bytes, align 64). The device reads the counts,
/// `fanin_local_ids[0, fanin_count)`, the early-dispatch and predicate state,
/// `tensors[0, tensor_count)` and `scalars[0, scalar_count)`.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct lrt_task_payload {
    pub tensor_count: i32,
    pub scalar_count: i32,
    pub fanin_count: i32,
    pub fanin_local_ids: [i32; LRT_MAX_FANIN],
    pub reserved: [u8; 12],
    /// Early-dispatch state, zeroed when the slot is claimed.
    pub early_dispatch: [u64; 5],
    /// Predicate state, zeroed when the slot is claimed.
    pub predicate: [u64; 3],
    pub _pad0: [u8; 40],
    /// Tensor records, 128 bytes each.
    pub tensors: [[u64; 16]; LRT_MAX_TENSORS],
    pub scalars: [u64; LRT_MAX_SCALARS],
}

/// The scheduler's per-slot state (64 bytes, align 64).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct lrt_task_slot_state {
    pub last_consumer_local_id: i32,
    /// The reference's task-state enum (an int): pending 0, completed 1,
    /// consumed 2.
    pub task_state: i32,
    /// The slot's payload (host mirror address on the host, device address in
    /// the device image).
    pub payload: *mut lrt_task_payload,
    /// The slot's descriptor (same rule as `payload`).
    pub task: *mut lrt_task_descriptor,
    pub wake_list_head: *mut lrt_task_slot_state,
    pub next_in_wake_list: *mut lrt_task_slot_state,
    pub active_mask: u8,
    pub task_attrs: u8,
    pub any_subtask_deferred: u8,
    pub task_kind: u8,
    pub completed_subtasks: i16,
    pub total_required_subtasks: i16,
    pub logical_block_num: i16,
    pub next_block_idx: i16,
    pub graph_node_index: i32,
    pub graph_context: *mut c_void,
}

/// Byte offsets of the segments of an image for one window.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct lrt_sm_segments {
    pub header: u64,
    pub descriptors: u64,
    pub payloads: u64,
    pub slot_states: u64,
    pub completion_flags: u64,
    /// Total image size in bytes.
    pub end: u64,
}

/// Pins a field's offset at compile time (both layouts use it).
macro_rules! assert_offset {
    ($t:ty, $field:ident, $off:expr) => {
        static_assertions::const_assert_eq!(std::mem::offset_of!($t, $field), $off);
    };
}
pub(crate) use assert_offset;

const_assert_eq!(size_of::<lrt_sm_header>(), 320);
const_assert_eq!(align_of::<lrt_sm_header>(), 64);
assert_offset!(lrt_sm_header, current_task_index, 0);
assert_offset!(lrt_sm_header, last_task_alive, 64);
assert_offset!(lrt_sm_header, completed_watermark, 128);
assert_offset!(lrt_sm_header, task_window_size, 192);
assert_offset!(lrt_sm_header, task_window_mask, 200);
assert_offset!(lrt_sm_header, _pad_mask, 204);
assert_offset!(lrt_sm_header, heap_size, 208);
assert_offset!(lrt_sm_header, task_descriptors_offset, 216);
assert_offset!(lrt_sm_header, task_descriptors, 224);
assert_offset!(lrt_sm_header, task_payloads, 232);
assert_offset!(lrt_sm_header, slot_states, 240);
assert_offset!(lrt_sm_header, completion_flags, 248);
assert_offset!(lrt_sm_header, orchestrator_done, 256);
assert_offset!(lrt_sm_header, total_size, 264);
assert_offset!(lrt_sm_header, orch_error_code, 272);
assert_offset!(lrt_sm_header, sched_error_bitmap, 276);
assert_offset!(lrt_sm_header, sched_error_code, 280);
assert_offset!(lrt_sm_header, sched_error_thread, 284);

const_assert_eq!(size_of::<lrt_task_descriptor>(), 40);
assert_offset!(lrt_task_descriptor, task_id, 0);
assert_offset!(lrt_task_descriptor, kernel_id, 8);
assert_offset!(lrt_task_descriptor, packed_buffer_base, 24);
assert_offset!(lrt_task_descriptor, packed_buffer_end, 32);

const_assert_eq!(size_of::<lrt_task_payload>(), 4864);
const_assert_eq!(align_of::<lrt_task_payload>(), 64);
assert_offset!(lrt_task_payload, tensor_count, 0);
assert_offset!(lrt_task_payload, scalar_count, 4);
assert_offset!(lrt_task_payload, fanin_count, 8);
assert_offset!(lrt_task_payload, fanin_local_ids, 12);
assert_offset!(lrt_task_payload, reserved, 524);
assert_offset!(lrt_task_payload, early_dispatch, 536);
assert_offset!(lrt_task_payload, predicate, 576);
assert_offset!(lrt_task_payload, tensors, 640);
assert_offset!(lrt_task_payload, scalars, 4736);
const_assert_eq!(size_of::<[u64; 5]>(), 40);
const_assert_eq!(size_of::<[u64; 3]>(), 24);
const_assert_eq!(size_of::<[u64; 16]>(), TENSOR_BYTES);

const_assert_eq!(size_of::<lrt_task_slot_state>(), 64);
const_assert_eq!(align_of::<lrt_task_slot_state>(), 64);
assert_offset!(lrt_task_slot_state, last_consumer_local_id, 0);
assert_offset!(lrt_task_slot_state, task_state, 4);
assert_offset!(lrt_task_slot_state, payload, 8);
assert_offset!(lrt_task_slot_state, task, 16);
assert_offset!(lrt_task_slot_state, wake_list_head, 24);
assert_offset!(lrt_task_slot_state, next_in_wake_list, 32);
assert_offset!(lrt_task_slot_state, active_mask, 40);
assert_offset!(lrt_task_slot_state, task_attrs, 41);
assert_offset!(lrt_task_slot_state, any_subtask_deferred, 42);
assert_offset!(lrt_task_slot_state, task_kind, 43);
assert_offset!(lrt_task_slot_state, completed_subtasks, 44);
assert_offset!(lrt_task_slot_state, total_required_subtasks, 46);
assert_offset!(lrt_task_slot_state, logical_block_num, 48);
assert_offset!(lrt_task_slot_state, next_block_idx, 50);
assert_offset!(lrt_task_slot_state, graph_node_index, 52);
assert_offset!(lrt_task_slot_state, graph_context, 56);

const_assert_eq!(size_of::<lrt_sm_segments>(), 48);
// The layout is for 64-bit hosts (8-byte pointers), like the reference runtime.
const_assert!(size_of::<*mut c_void>() == 8);

/// Segment offsets for `slots` slots, without validating `slots` (it is at
/// most `i32::MAX`, so nothing overflows `u64`). Used for a full window and
/// for a compact image pitched to the live task count. Every segment,
/// the completion flags included, is rounded up to 64 bytes, so the image
/// ends on a 64-byte boundary (the reference's `ring_segment_offsets`).
pub(crate) const fn offsets_for(slots: u64) -> lrt_sm_segments {
    let descriptors = align_up(size_of::<lrt_sm_header>() as u64);
    let payloads = descriptors + align_up(slots * size_of::<lrt_task_descriptor>() as u64);
    let slot_states = payloads + align_up(slots * size_of::<lrt_task_payload>() as u64);
    let completion_flags = slot_states + align_up(slots * size_of::<lrt_task_slot_state>() as u64);
    lrt_sm_segments {
        header: 0,
        descriptors,
        payloads,
        slot_states,
        completion_flags,
        end: completion_flags + align_up(slots),
    }
}

/// Bytes a bounded upload ships per live slot: descriptor, payload, slot
/// state and completion flag.
pub(crate) const BYTES_PER_LIVE_SLOT: u64 = (size_of::<lrt_task_descriptor>()
    + size_of::<lrt_task_payload>()
    + size_of::<lrt_task_slot_state>()
    + 1) as u64;

/// One contiguous run of bytes copied from one image layout to another:
/// `len` bytes from offset `from` to offset `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    pub from: u64,
    pub to: u64,
    pub len: u64,
}

/// The parts of an image that hold its first `n` slots, from layout `src`
/// to layout `dst` (full or compact): the header with descriptors `[0, n)`
/// (adjacent in every layout: descriptors start at 320), then the payload,
/// slot-state and completion-flag prefixes `[0, n)`.
pub(crate) fn live_parts(src: &lrt_sm_segments, dst: &lrt_sm_segments, n: u64) -> [Part; 4] {
    let part = |from, to, elem: usize| Part {
        from,
        to,
        len: n * elem as u64,
    };
    [
        Part {
            from: 0,
            to: 0,
            len: src.descriptors + n * size_of::<lrt_task_descriptor>() as u64,
        },
        part(src.payloads, dst.payloads, size_of::<lrt_task_payload>()),
        part(
            src.slot_states,
            dst.slot_states,
            size_of::<lrt_task_slot_state>(),
        ),
        part(src.completion_flags, dst.completion_flags, 1),
    ]
}

/// Byte offsets of slot `i`'s four elements in one image.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotOffsets {
    pub descriptor: u64,
    pub payload: u64,
    pub slot_state: u64,
    pub completion_flag: u64,
}

impl lrt_sm_segments {
    /// The addresses of the four arrays (descriptors, payloads, slot states,
    /// completion flags) of this layout in an image that starts at `base`:
    /// what the header's array pointers hold.
    pub(crate) fn arrays_at(&self, base: usize) -> [usize; 4] {
        [
            base + self.descriptors as usize,
            base + self.payloads as usize,
            base + self.slot_states as usize,
            base + self.completion_flags as usize,
        ]
    }

    /// Where slot `i`'s elements are in this layout.
    pub(crate) fn slot(&self, i: u64) -> SlotOffsets {
        SlotOffsets {
            descriptor: self.descriptors + i * size_of::<lrt_task_descriptor>() as u64,
            payload: self.payloads + i * size_of::<lrt_task_payload>() as u64,
            slot_state: self.slot_states + i * size_of::<lrt_task_slot_state>() as u64,
            completion_flag: self.completion_flags + i,
        }
    }
}
