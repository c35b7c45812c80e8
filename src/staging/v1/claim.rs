//! The reference's claim semantics for the v1 image: what its submit path
//! writes for one task (the checks before anything is written are
//! `ClaimDesc::check`, every generation's).
use super::super::abi::{
    lrt_task_slot, LRT_TASK_COMPLETED, LRT_TASK_KIND_DUMMY, LRT_TASK_KIND_KERNEL, LRT_TASK_PENDING,
};
use super::super::maker::ClaimDesc;
use super::layout::{lrt_task_descriptor, lrt_task_payload, lrt_task_slot_state};
use super::MakerV1;
use crate::Result;

impl MakerV1 {
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
    /// subtasks than an `i16` holds, more than `LRT_MAX_FANIN` fanins, or a fanin that
    /// is not an earlier slot of this run; `OutOfRange` when the window is
    /// full; `State` before `begin_run`.
    pub fn claim_slot_with(&mut self, desc: &ClaimDesc<'_>) -> Result<lrt_task_slot> {
        self.core.require_open("claim_slot before begin_run")?;
        let idx = self.current_index();
        let total_required = desc.check(idx, self.core.window)?;
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
