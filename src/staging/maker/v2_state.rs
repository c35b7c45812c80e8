//! A layout-v2 maker's state: the v2 run in the mirror (its layout, the
//! pools' capacities and cursors) and where the image sits in the staging
//! buffer and on the device. The claims are `claim_v2.rs`, the image
//! assembly and the upload `upload_v2.rs`.
use std::mem::size_of;

use super::super::layout::lrt_task_descriptor;
use super::super::layout_v2::{
    lrt_v2_segments, lrt_v2_sm_header, lrt_v2_task_payload, lrt_v2_task_slot_state, v2_offsets,
    V2PoolUse,
};
use super::super::mirror::Mapping;

/// A v2 maker's own state beside the shared fields of `RuntimeMaker`
/// (whose mirror, staging buffer and device image are then v2's, and whose
/// pins are the staging buffer's, grown with the runs in `upload_v2`):
/// * device allocation: room for the frame before the image, the image at
///   `image_off`, the first 64-aligned address past that room (the device
///   reads the image's structs aligned), the mirror's size (no compact
///   image is larger), the frame after it;
/// * staging buffer: the frame before's room rounded up to 64 bytes
///   (`stage_off`, the image's start there), the mirror's size, the frame
///   after: the framed image is one contiguous source for the one copy.
pub(super) struct V2State {
    pub(super) run: V2Run,
    pub(super) image_off: u64,
    pub(super) stage_off: u64,
    pub(super) frame_before: u64,
    pub(super) frame_after: u64,
}

/// The v2 side of a maker: the mirror's layout, the pools' capacities and
/// this run's cursors. The memory is the maker's; every method takes the
/// mirror mapping it describes (at least `segments().end` bytes).
#[derive(Debug)]
pub(crate) struct V2Run {
    pub(super) window: u64,
    pub(super) seg: lrt_v2_segments,
    pub(super) caps: V2PoolUse,
    pub(super) used: V2PoolUse,
    /// The header's `total_size`: the reference's mirror size for W.
    reference_size: u64,
}

impl V2Run {
    /// The layout of a window whose pools hold `caps` elements (the
    /// reference's: W x 128 ids, W x 32 records, W x 16 scalars).
    pub(crate) fn new(window: u64, caps: V2PoolUse, reference_size: u64) -> Self {
        V2Run {
            window,
            seg: v2_offsets(window, caps.fanin_ids, caps.tensors, caps.scalars),
            caps,
            used: V2PoolUse::default(),
            reference_size,
        }
    }

    /// The mirror's segments.
    pub(crate) fn segments(&self) -> lrt_v2_segments {
        self.seg
    }

    /// The pools' capacities.
    pub(crate) fn capacities(&self) -> V2PoolUse {
        self.caps
    }

    /// This run's pool cursors.
    #[cfg(test)]
    pub(crate) fn used(&self) -> V2PoolUse {
        self.used
    }

    pub(super) fn at<T>(m: &Mapping, offset: u64) -> *mut T {
        m.as_ptr().wrapping_add(offset as usize).cast::<T>()
    }

    pub(super) fn header(m: &Mapping) -> *mut lrt_v2_sm_header {
        m.as_ptr().cast::<lrt_v2_sm_header>()
    }

    pub(super) fn descriptor(&self, m: &Mapping, i: u64) -> *mut lrt_task_descriptor {
        Self::at(
            m,
            self.seg.descriptors + i * size_of::<lrt_task_descriptor>() as u64,
        )
    }

    pub(super) fn payload(&self, m: &Mapping, i: u64) -> *mut lrt_v2_task_payload {
        Self::at(
            m,
            self.seg.payloads + i * size_of::<lrt_v2_task_payload>() as u64,
        )
    }

    pub(super) fn slot_state(&self, m: &Mapping, i: u64) -> *mut lrt_v2_task_slot_state {
        Self::at(
            m,
            self.seg.slot_states + i * size_of::<lrt_v2_task_slot_state>() as u64,
        )
    }

    /// Starts a run: zeroes the header only and writes every field as the
    /// reference's `init_per_ring` does (flow control 0, watermark -1, not
    /// done, window, mask, heap size, descriptors at 256, the mirror's four
    /// array addresses, `total_size`, error words 0, error thread -1);
    /// resets the pool cursors. Returns the header.
    pub(crate) fn begin(&mut self, m: &Mapping, heap_size: u64) -> *mut lrt_v2_sm_header {
        debug_assert!(m.len() as u64 >= self.seg.end);
        let h = Self::header(m);
        // SAFETY: the header lies at the start of the page-aligned mapping
        // (at least seg.end > 256 bytes), every bit pattern is a valid
        // lrt_v2_sm_header, and no other reference to it is live during this call.
        let h_ref = unsafe {
            std::ptr::write_bytes(h.cast::<u8>(), 0, size_of::<lrt_v2_sm_header>());
            &mut *h
        };
        h_ref.completed_watermark = -1;
        h_ref.task_window_size = self.window;
        // The window is at most 262144, so the mask fits an i32.
        h_ref.task_window_mask = (self.window - 1) as i32;
        h_ref.heap_size = heap_size;
        h_ref.task_descriptors_offset = self.seg.descriptors;
        h_ref.task_descriptors = Self::at(m, self.seg.descriptors);
        h_ref.task_payloads = Self::at(m, self.seg.payloads);
        h_ref.slot_states = Self::at(m, self.seg.slot_states);
        h_ref.completion_flags = Self::at(m, self.seg.completion_flags);
        h_ref.total_size = self.reference_size;
        h_ref.sched_error_thread = -1;
        self.used = V2PoolUse::default();
        h
    }

    /// `current_task_index` of the mirror.
    pub(crate) fn current_index(m: &Mapping) -> i32 {
        // SAFETY: an aligned read of plain data at the mapping's start.
        unsafe { (*Self::header(m)).current_task_index }
    }

    /// `orch_error_code` of the mirror.
    pub(crate) fn orch_error(m: &Mapping) -> i32 {
        // SAFETY: as in current_index.
        unsafe { (*Self::header(m)).orch_error_code }
    }
}
