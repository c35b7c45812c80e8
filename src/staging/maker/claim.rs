//! The per-task fields of a claim that every generation's submit path
//! writes (the reference's `prepare_task`: mask, attributes, blocks, kernel
//! ids, producers, pre-completion, packed buffer), and the checks that keep
//! a claim from writing anything when the task is impossible. What a claim
//! writes is its generation's (`super::super::v1::claim`,
//! `super::super::v2::claim`).
use std::ffi::c_void;

use super::super::abi::{LRT_SUBTASK_AIC, LRT_SUBTASK_AIV0, LRT_SUBTASK_AIV1};
use super::super::v1::layout::LRT_MAX_FANIN;
use crate::{Error, Result};

/// The subtask bits of `active_mask` (AIC, AIV0, AIV1).
pub(crate) const SUBTASK_BITS: u8 = LRT_SUBTASK_AIC | LRT_SUBTASK_AIV0 | LRT_SUBTASK_AIV1;

/// What a claim writes for a task besides its index and arguments (C:
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
    pub(crate) fn check(&self, idx: i32, window: u64) -> Result<i16> {
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
