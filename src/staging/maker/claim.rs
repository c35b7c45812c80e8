//! The reference's claim semantics for the v1 image: what its submit path
//! writes for one task, and the checks that keep a claim from writing
//! anything when the task is impossible.
use std::ffi::c_void;

use super::super::abi::{
    lrt_task_slot, LRT_SUBTASK_AIC, LRT_SUBTASK_AIV0, LRT_SUBTASK_AIV1, LRT_TASK_COMPLETED,
    LRT_TASK_KIND_DUMMY, LRT_TASK_KIND_KERNEL, LRT_TASK_PENDING,
};
use super::super::layout::{
    lrt_task_descriptor, lrt_task_payload, lrt_task_slot_state, LRT_MAX_FANIN,
};
use super::RuntimeMaker;
use crate::{Error, Result};

/// The subtask bits of `active_mask` (AIC, AIV0, AIV1).
const SUBTASK_BITS: u8 = LRT_SUBTASK_AIC | LRT_SUBTASK_AIV0 | LRT_SUBTASK_AIV1;

/// What `claim_slot_with` writes for a task besides its index (C:
/// `lrt_claim_desc`, whose count + pointer become `fanins` and whose flags
/// become `completed`). The default is a root kernel task on one AIV core
/// (active mask AIV0, one block, no fanins).
#[derive(Clone, Copy, Debug)]
pub struct ClaimDesc<'a> {
    pub active_mask: u8,
    pub task_attrs: u8,
    pub logical_block_num: i16,
    pub kernel_id: [i32; 3],
    /// Producers (local ids of slots claimed earlier in this run).
    pub fanins: &'a [i32],
    /// Pre-completed (C: `LRT_CLAIM_COMPLETED`).
    pub completed: bool,
    pub packed_buffer_base: *mut c_void,
    pub packed_buffer_end: *mut c_void,
}

impl Default for ClaimDesc<'_> {
    fn default() -> Self {
        ClaimDesc {
            active_mask: LRT_SUBTASK_AIV0,
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

impl ClaimDesc<'_> {
    /// The checks a claim of slot `idx` in a window of `window` slots makes
    /// before it writes anything (both layouts): `OutOfRange` when the
    /// window is full; `InvalidArgument` for fewer than one block, more
    /// subtasks than an `i16` holds, more than 128 fanins or a fanin that
    /// is not an earlier slot. Returns `total_required_subtasks`.
    pub(super) fn check(&self, idx: i32, window: u64) -> Result<i16> {
        if idx < 0 || idx as u64 >= window {
            return Err(Error::out_of_range(format!(
                "cannot claim slot {idx}: the window holds slots [0, {window})"
            )));
        }
        if self.logical_block_num < 1 {
            return Err(Error::invalid_argument(format!(
                "logical_block_num {} is below 1",
                self.logical_block_num
            )));
        }
        let active = (self.active_mask & SUBTASK_BITS).count_ones();
        let subtasks = i32::from(self.logical_block_num) * active as i32;
        let total_required = i16::try_from(subtasks).map_err(|_| {
            Error::invalid_argument(format!(
                "{} blocks x {active} active subtasks = {subtasks} subtasks, more than {}",
                self.logical_block_num,
                i16::MAX
            ))
        })?;
        if self.fanins.len() > LRT_MAX_FANIN {
            return Err(Error::invalid_argument(format!(
                "{} fanins, more than {LRT_MAX_FANIN}",
                self.fanins.len()
            )));
        }
        if let Some(bad) = self.fanins.iter().find(|&&p| p < 0 || p >= idx) {
            return Err(Error::invalid_argument(format!(
                "fanin {bad} is not an earlier slot of this run [0, {idx})"
            )));
        }
        Ok(total_required)
    }
}

impl RuntimeMaker {
    /// Claims slot `current_task_index` for a root kernel task on one AIV
    /// core: `claim_slot_with` the default [`ClaimDesc`].
    pub fn claim_slot(&mut self) -> Result<lrt_task_slot> {
        self.claim_slot_with(&ClaimDesc::default())
    }

    /// Claims slot `current_task_index`, writes what the reference's submit
    /// path writes for the task `desc` describes (the field-by-field list is
    /// `lrt_runtime_maker_claim_slot_ex`'s contract in the header) and
    /// advances the index.
    ///
    /// `InvalidArgument` (nothing written) for fewer than one block, more
    /// subtasks than an `i16` holds, more than 128 fanins, or a fanin that
    /// is not an earlier slot of this run; `OutOfRange` when the window is
    /// full; `State` before `begin_run`.
    pub fn claim_slot_with(&mut self, desc: &ClaimDesc<'_>) -> Result<lrt_task_slot> {
        self.v1_only("claim_slot")?;
        if !self.run_open {
            return Err(Error::state("claim_slot before begin_run"));
        }
        let idx = self.current_index();
        let total_required = desc.check(idx, self.window)?;
        let slot = self.slot_at(idx);
        let flag_p: *mut u8 = self.mirror_at(self.seg.slot(idx as u64).completion_flag);
        // SAFETY: idx < W, so the four elements lie inside the owned mapping
        // at their natural alignment (segments are 64-aligned, the mapping is
        // page-aligned); all are plain data valid for any bit pattern, and no
        // other reference to them is live during this call.
        let (d, pay, state, flag) = unsafe {
            (
                &mut *slot.descriptor,
                &mut *slot.payload,
                &mut *slot.slot_state,
                &mut *flag_p,
            )
        };
        *d = lrt_task_descriptor {
            task_id: idx as u64,
            kernel_id: desc.kernel_id,
            _pad0: [0; 4],
            packed_buffer_base: desc.packed_buffer_base,
            packed_buffer_end: desc.packed_buffer_end,
        };
        let fanins = write_payload_header(pay, desc.fanins);
        *state = lrt_task_slot_state {
            last_consumer_local_id: idx,
            task_state: if desc.completed {
                LRT_TASK_COMPLETED
            } else {
                LRT_TASK_PENDING
            },
            payload: slot.payload,
            task: slot.descriptor,
            wake_list_head: std::ptr::null_mut(),
            next_in_wake_list: std::ptr::null_mut(),
            active_mask: desc.active_mask,
            task_attrs: desc.task_attrs,
            any_subtask_deferred: 0,
            task_kind: if desc.active_mask != 0 {
                LRT_TASK_KIND_KERNEL
            } else {
                LRT_TASK_KIND_DUMMY
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
            // SAFETY: 0 <= p < idx < W: an aligned slot state inside the
            // mapping, distinct from this slot's; plain data.
            let producer = unsafe { &mut *self.slot_at(p).slot_state };
            producer.last_consumer_local_id = producer.last_consumer_local_id.max(idx);
        }
        // SAFETY: as in current_index, a write.
        unsafe { (*self.header_ptr()).current_task_index = idx + 1 };
        Ok(slot)
    }
}

/// Writes the payload's fixed part as a claim leaves it: counts 0 except
/// `fanin_count` (the distinct producers, written to `fanin_local_ids`),
/// reserved, early-dispatch and predicate state zeroed. Tensors and
/// scalars are read up to their counts, which the host writes with the
/// content, so they are not touched. Returns the fanin count.
fn write_payload_header(pay: &mut lrt_task_payload, producers: &[i32]) -> usize {
    let mut fanins = 0usize;
    for &p in producers {
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
    fanins
}
