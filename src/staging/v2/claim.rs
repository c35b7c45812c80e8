//! A v2 run in the host mirror (the reference's current image, layout v2):
//! the header a run starts with and claims that write what the
//! reference's submit path writes and bump the argument pools.
//!
//! Claim semantics (the reference's `prepare_task`, `payload.init`, the
//! fanin builder, the graph-submission path and `alloc_tensors`):
//! * slot i = `current_task_index`: descriptor `task_id = i`, kernel ids,
//!   packed buffer; the whole 192-byte payload (counts, the three region
//!   offsets, early-dispatch, predicate and dump state 0); the whole slot
//!   state (`last_consumer_local_id = i`, pending or completed, `payload` and
//!   `task` as self-relative offsets to element i, active mask, attributes,
//!   kind KERNEL (mask != 0), DUMMY (mask 0) or GRAPH (a graph shell),
//!   `total_required_subtasks = blocks x popcount(mask & 7)`, blocks,
//!   `graph_node_index = -1`, the rest 0/NULL); completion flag 0 (1 when
//!   pre-completed). Each distinct producer's `last_consumer_local_id`
//!   becomes at least i.
//! * Regions are bound at the pools' cursors: tensors get exactly
//!   `tensor_count` records, scalars `up8(scalar_count)` (the tail of the
//!   cache line zeroed), fanin `up16(distinct producers)` ids (tail zeroed).
//!   A region with a zero count is still bound (at the cursor, which does not
//!   move); a graph shell's tensor and scalar regions are unbound (offset 0)
//!   and its fanin region is bound like any task's.
//! * A claim checks everything before it writes: nothing is written when it
//!   fails (a full pool is `OutOfRange`; a latched `orch_error_code` is
//!   `State`).
#![allow(non_camel_case_types)]

use std::ffi::c_void;

use super::super::abi::{
    lrt_v2_task_slot, LRT_SUBTASK_AIC, LRT_SUBTASK_AIV0, LRT_SUBTASK_AIV1,
    LRT_TASK_ATTR_HAS_PREDICATE, LRT_TASK_ATTR_SYNC_START, LRT_TASK_COMPLETED, LRT_TASK_KIND_DUMMY,
    LRT_TASK_KIND_GRAPH, LRT_TASK_KIND_KERNEL, LRT_TASK_PENDING,
};
use super::super::align::round_up;
use super::super::maker::{ClaimDesc, SUBTASK_BITS};
use super::super::mirror::Mapping;
use super::super::v1::layout::{
    lrt_task_descriptor, LRT_MAX_FANIN, LRT_MAX_SCALARS, LRT_MAX_TENSORS,
};
use super::layout::{
    lrt_v2_task_payload, lrt_v2_task_slot_state, rel_encode, V2PoolUse, LRT_V2_FANIN_ROUND,
    LRT_V2_SCALAR_ROUND, LRT_V2_TENSOR_BYTES,
};
use super::run::{CoreCounts, Pool, Seg, V2Run};
use crate::{Error, Result};

/// One tensor record, opaque to leanrt.
pub type TensorRecord = [u8; LRT_V2_TENSOR_BYTES];

/// What a v2 claim writes for a task: v1's per-task fields plus its
/// arguments.
#[derive(Clone, Copy, Debug, Default)]
pub struct V2ClaimDesc<'a> {
    /// Mask, attributes, blocks, kernel ids, producers, pre-completed,
    /// packed buffer (a graph shell ignores mask, attributes, blocks and
    /// kernel ids: it dispatches nothing).
    pub task: ClaimDesc<'a>,
    /// Tensor records of the task, at most `LRT_MAX_TENSORS`.
    pub tensor_count: usize,
    /// The records, copied into the task's region; `None` reserves the
    /// region for the host to write through `lrt_v2_task_slot::tensors`.
    pub tensors: Option<&'a [TensorRecord]>,
    /// Scalars of the task, at most `LRT_MAX_SCALARS`.
    pub scalar_count: usize,
    /// The scalars, copied; `None` reserves the region (its tail beyond the
    /// count is zeroed either way).
    pub scalars: Option<&'a [u64]>,
    /// An outer graph task: kind GRAPH, no tensor or scalar region (both
    /// counts must be 0), fanin bound as for any task.
    pub graph_shell: bool,
}

impl V2Run {
    /// Claims slot `current_task_index` for the task `d` describes (the
    /// module's claim semantics). `InvalidArgument` for fewer than one
    /// block, too many subtasks for an `i16`, more than 128 producers or one
    /// that is not an earlier slot, more than 32 tensors or 16 scalars, a
    /// record or scalar slice whose length is not its count, or a graph
    /// shell with tensors or scalars; `OutOfRange` when the window or a pool
    /// is full; `State` when the header has an orchestrator error latched.
    /// Nothing is written on failure.
    pub(crate) fn claim(
        &mut self,
        m: &Mapping,
        b: *mut u8,
        d: &V2ClaimDesc<'_>,
    ) -> Result<lrt_v2_task_slot> {
        let latched = Self::orch_error(m);
        if latched != 0 {
            return Err(Error::state(format!(
                "the orchestrator latched error {latched} in the header: no more tasks"
            )));
        }
        if self.host_filled {
            return Err(Error::state(
                "the host said it wrote this run itself (v2_set_pool_use): no claims until \
                 the next v2_begin_run",
            ));
        }
        let idx = Self::current_index(m);
        // A graph shell dispatches nothing: no mask, attributes or blocks.
        let t = if d.graph_shell {
            ClaimDesc {
                active_mask: 0,
                task_attrs: 0,
                logical_block_num: 1,
                kernel_id: [-1; 3],
                ..d.task
            }
        } else {
            d.task
        };
        // The producers as the reference's `append_fanin_or_fail` takes
        // them: an id that is no slot of this run ([0, idx): in a fresh
        // mirror any other slot has no task) is dropped, repeats are
        // dropped, and more than LRT_MAX_FANIN distinct ones are refused.
        let mut ids = [0i32; LRT_MAX_FANIN];
        let mut distinct = 0usize;
        for &p in t.fanins {
            if p < 0 || p >= idx || ids[..distinct].contains(&p) {
                continue;
            }
            if distinct == LRT_MAX_FANIN {
                return Err(Error::invalid_argument(format!(
                    "more than {LRT_MAX_FANIN} distinct producers of this run"
                )));
            }
            ids[distinct] = p;
            distinct += 1;
        }
        let t = self.as_submitted(ClaimDesc {
            fanins: &ids[..distinct],
            ..t
        })?;
        let total_required = t.check(idx, self.window)?;
        let (mask, attrs, blocks) = (t.active_mask, t.task_attrs, t.logical_block_num);
        if d.tensor_count > LRT_MAX_TENSORS || d.scalar_count > LRT_MAX_SCALARS {
            return Err(Error::invalid_argument(format!(
                "{} tensors and {} scalars: at most {LRT_MAX_TENSORS} and {LRT_MAX_SCALARS}",
                d.tensor_count, d.scalar_count
            )));
        }
        if d.tensors.is_some_and(|r| r.len() != d.tensor_count)
            || d.scalars.is_some_and(|s| s.len() != d.scalar_count)
        {
            return Err(Error::invalid_argument(
                "the tensor records or scalars given do not match their counts",
            ));
        }
        if d.graph_shell && (d.tensor_count != 0 || d.scalar_count != 0) {
            return Err(Error::invalid_argument(
                "a graph shell has no tensor or scalar region (its arguments travel in its submission)",
            ));
        }
        let fanin_span = round_up(distinct as u64, LRT_V2_FANIN_ROUND);
        let scalar_span = round_up(d.scalar_count as u64, LRT_V2_SCALAR_ROUND);
        let tensors = d.tensor_count as u64;
        let u = self.used;
        for (what, cursor, need, cap) in [
            ("fanin", u.fanin_ids, fanin_span, self.caps.fanin_ids),
            ("tensor", u.tensors, tensors, self.caps.tensors),
            ("scalar", u.scalars, scalar_span, self.caps.scalars),
        ] {
            if cursor + need > cap {
                return Err(Error::out_of_range(format!(
                    "the {what} pool is full: {cursor} of {cap} elements used, the task needs {need}"
                )));
            }
        }

        // Everything is checked: place and write. A slot below the
        // speculative pitch and a region that fits its pool's speculative
        // part go to the image buffer, the rest to the mirror.
        let i = idx as u64;
        let (desc_p, pay_p, state_p, flag_p): (
            *mut lrt_task_descriptor,
            *mut lrt_v2_task_payload,
            *mut lrt_v2_task_slot_state,
            *mut u8,
        ) = (
            self.elem(m, b, Seg::Descriptors, i),
            self.elem(m, b, Seg::Payloads, i),
            self.elem(m, b, Seg::SlotStates, i),
            self.elem(m, b, Seg::Flags, i),
        );
        let mut split = self.spec.map(|s| s.split);
        let mut place = |pool: Pool, need: u64| -> *mut u8 {
            let c = pool.of(&u);
            let fits = split.as_mut().is_some_and(|sp| {
                let limit = pool.of_mut(sp);
                let fits = c + need <= *limit;
                if !fits && c < *limit {
                    // Regions keep their order: from here on, this pool is
                    // in the mirror.
                    *limit = c;
                }
                fits
            });
            self.pool_at(m, b, pool, c, fits)
        };
        let fanin_p = place(Pool::Fanin, fanin_span).cast::<i32>();
        let (tensor_p, scalar_p): (*mut TensorRecord, *mut u64) = if d.graph_shell {
            (std::ptr::null_mut(), std::ptr::null_mut())
        } else {
            (
                place(Pool::Tensors, tensors).cast(),
                place(Pool::Scalars, scalar_span).cast(),
            )
        };
        // SAFETY: i < W and the cursors plus the spans are within the pools'
        // capacities (checked above), so in the mirror every element and
        // region lies inside the owned mapping; in the image buffer, i is
        // below the speculative pitch and a region inside its pool's guess,
        // so inside the guessed image, which the buffer holds. All are at
        // their natural alignment (segments 64-aligned, the buffers page- and
        // 64-aligned), plain data valid for any bit pattern, pairwise
        // disjoint, and no other reference to them is live during this call.
        unsafe {
            *desc_p = lrt_task_descriptor {
                task_id: i,
                kernel_id: if d.graph_shell { [-1; 3] } else { t.kernel_id },
                _pad0: [0; 4],
                packed_buffer_base: t.packed_buffer_base,
                packed_buffer_end: t.packed_buffer_end,
            };
            std::ptr::write_bytes(pay_p, 0, 1);
            let pay = &mut *pay_p;
            pay.tensor_count = d.tensor_count as i32;
            pay.scalar_count = d.scalar_count as i32;
            pay.fanin_count = distinct as i32;
            pay.tensors = rel_encode(std::ptr::addr_of!(pay.tensors) as usize, tensor_p as usize);
            pay.scalars = rel_encode(std::ptr::addr_of!(pay.scalars) as usize, scalar_p as usize);
            pay.fanin = rel_encode(std::ptr::addr_of!(pay.fanin) as usize, fanin_p as usize);
            // A region reserved for the host is zeroed: what it leaves
            // unwritten ships as zeros, not as an earlier run's bytes.
            if !tensor_p.is_null() {
                match d.tensors {
                    Some(records) => {
                        std::ptr::copy_nonoverlapping(records.as_ptr(), tensor_p, records.len())
                    }
                    None => std::ptr::write_bytes(tensor_p, 0, d.tensor_count),
                }
            }
            if !scalar_p.is_null() {
                let given = match d.scalars {
                    Some(s) => {
                        std::ptr::copy_nonoverlapping(s.as_ptr(), scalar_p, s.len());
                        s.len()
                    }
                    None => 0,
                };
                std::ptr::write_bytes(scalar_p.add(given), 0, scalar_span as usize - given);
            }
            std::ptr::copy_nonoverlapping(ids.as_ptr(), fanin_p, distinct);
            std::ptr::write_bytes(fanin_p.add(distinct), 0, fanin_span as usize - distinct);
            let state_addr = state_p as usize;
            *state_p = lrt_v2_task_slot_state {
                last_consumer_local_id: idx,
                task_state: if t.completed {
                    LRT_TASK_COMPLETED
                } else {
                    LRT_TASK_PENDING
                },
                payload: rel_encode(state_addr + 8, pay_p as usize),
                task: rel_encode(state_addr + 12, desc_p as usize),
                wake_list_head: std::ptr::null_mut(),
                next_in_wake_list: std::ptr::null_mut(),
                active_mask: mask,
                task_attrs: attrs,
                any_subtask_deferred: 0,
                task_kind: if d.graph_shell {
                    LRT_TASK_KIND_GRAPH
                } else if mask != 0 {
                    LRT_TASK_KIND_KERNEL
                } else {
                    LRT_TASK_KIND_DUMMY
                },
                completed_subtasks: 0,
                total_required_subtasks: if d.graph_shell { 0 } else { total_required },
                logical_block_num: blocks,
                next_block_idx: 0,
                graph_node_index: -1,
                graph_context: std::ptr::null_mut(),
                _pad0: [0; 8],
            };
            *flag_p = u8::from(t.completed);
            for &p in &ids[..distinct] {
                // 0 <= p < idx: another slot's state, plain data.
                let producer =
                    &mut *self.elem::<lrt_v2_task_slot_state>(m, b, Seg::SlotStates, p as u64);
                producer.last_consumer_local_id = producer.last_consumer_local_id.max(idx);
            }
            (*Self::header(m)).current_task_index = idx + 1;
        }
        if let (Some(spec), Some(sp)) = (self.spec.as_mut(), split) {
            spec.split = sp;
        }
        self.used = V2PoolUse {
            fanin_ids: u.fanin_ids + fanin_span,
            tensors: u.tensors + if d.graph_shell { 0 } else { tensors },
            scalars: u.scalars + if d.graph_shell { 0 } else { scalar_span },
        };
        self.claims += 1;
        self.claimed_to = self.claimed_to.max(i + 1);
        Ok(lrt_v2_task_slot {
            index: idx,
            descriptor: desc_p,
            payload: pay_p,
            slot_state: state_p,
            tensors: tensor_p.cast::<c_void>(),
            scalars: scalar_p,
            fanin: fanin_p,
        })
    }
}

impl V2Run {
    /// The claim `t` as the reference's `submit_task` / `submit_dummy_task`
    /// accept and normalize it (6ebaf7715, `pto_orchestrator.cpp`):
    /// * a task on AIV1 alone moves to AIV0 (its kernel id with it), so the
    ///   dispatch path finds a single-AIV task on AIV0;
    /// * `LRT_TASK_ATTR_SYNC_START` is kept only for more than one block; a
    ///   sync_start task with more blocks than the cores of its shape (the
    ///   AIV cores for a task on one AIV core, else the clusters; `cores`,
    ///   when known, i.e. non-zero) is refused (`InvalidArgument`: the
    ///   reference reports `PTO2_ERROR_REQUIRE_SYNC_START_INVALID`, a
    ///   deadlock guaranteed);
    /// * a dummy task (no subtask) carries neither sync_start nor
    ///   has_predicate.
    pub(super) fn as_submitted<'a>(&self, t: ClaimDesc<'a>) -> Result<ClaimDesc<'a>> {
        let mut t = t;
        let core = t.active_mask & SUBTASK_BITS;
        if core == 0 {
            t.task_attrs &= !(LRT_TASK_ATTR_SYNC_START | LRT_TASK_ATTR_HAS_PREDICATE);
            return Ok(t);
        }
        if core == LRT_SUBTASK_AIV1 {
            t.active_mask = (t.active_mask & !SUBTASK_BITS) | LRT_SUBTASK_AIV0;
            t.kernel_id[1] = t.kernel_id[2];
            t.kernel_id[2] = -1;
        }
        if t.task_attrs & LRT_TASK_ATTR_SYNC_START != 0 {
            if t.logical_block_num <= 1 {
                t.task_attrs &= !LRT_TASK_ATTR_SYNC_START;
            } else {
                let core = t.active_mask & SUBTASK_BITS;
                let aiv = core.count_ones() == 1 && core & LRT_SUBTASK_AIC == 0;
                let (limit, what) = if aiv {
                    (self.cores.aiv, "AIV cores")
                } else {
                    (self.cores.clusters, "clusters")
                };
                if limit > 0 && i32::from(t.logical_block_num) > limit {
                    return Err(Error::invalid_argument(format!(
                        "a sync_start task of {} blocks on a run of {limit} {what}: its blocks \
                         can never start together",
                        t.logical_block_num
                    )));
                }
            }
        }
        Ok(t)
    }

    /// Sets the run's cores (`CoreCounts`); negative counts are refused.
    pub(crate) fn set_cores(&mut self, clusters: i32, aiv: i32) -> Result<()> {
        if clusters < 0 || aiv < 0 {
            return Err(Error::invalid_argument(format!(
                "core counts {clusters} clusters, {aiv} AIV cores: not below 0"
            )));
        }
        self.cores = CoreCounts { clusters, aiv };
        Ok(())
    }
}

#[cfg(test)]
mod tests;
