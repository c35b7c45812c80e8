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
    lrt_upload_policy, lrt_v2_task_slot, LRT_TASK_COMPLETED, LRT_TASK_KIND_DUMMY,
    LRT_TASK_KIND_GRAPH, LRT_TASK_KIND_KERNEL, LRT_TASK_PENDING,
};
use super::super::layout::{
    lrt_task_descriptor, segment_offsets, LRT_MAX_FANIN, LRT_MAX_SCALARS, LRT_MAX_TENSORS,
};
use super::super::layout_v2::{
    lrt_v2_segments, lrt_v2_sm_header, lrt_v2_task_payload, lrt_v2_task_slot_state, rel_encode,
    round_up, v2_mirror_extents, v2_ring_segment_offsets, V2PoolUse, LRT_V2_FANIN_ROUND,
    LRT_V2_SCALAR_ROUND, LRT_V2_TENSOR_BYTES,
};
use super::super::mirror::Mapping;
use super::super::pin::MakerPins;
use super::v2_state::{Pool, Seg, V2Run, V2State};
use super::{
    device_region, elapsed_ns, BorrowedImage, ClaimDesc, MakerConfig, Parts, RuntimeMaker,
};
use crate::device::Device;
use crate::{Error, Result};
use std::sync::Arc;
use std::time::Instant;

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
    /// Tensor records of the task, at most 32.
    pub tensor_count: usize,
    /// The records, copied into the task's region; `None` reserves the
    /// region for the host to write through `lrt_v2_task_slot::tensors`.
    pub tensors: Option<&'a [TensorRecord]>,
    /// Scalars of the task, at most 16.
    pub scalar_count: usize,
    /// The scalars, copied; `None` reserves the region (its tail beyond the
    /// count is zeroed either way).
    pub scalars: Option<&'a [u64]>,
    /// An outer graph task: kind GRAPH, no tensor or scalar region (both
    /// counts must be 0), fanin bound as for any task.
    pub graph_shell: bool,
}

/// The largest frame before or after a v2 image.
const MAX_FRAME: u64 = 1 << 30;

impl RuntimeMaker {
    /// Creates a layout-v2 maker (`RuntimeMaker::new` with
    /// `cfg.layout = LRT_LAYOUT_V2`): resolves the window and the heap size as
    /// for v1, maps the untouched mirror (pools of `cfg.v2_pools`, 0 = the
    /// reference's) and staging buffer, allocates the device image once
    /// (frames + the reference's mirror size + 64) unless `borrowed` lends
    /// one (at least that long). `InvalidArgument` for the FULL policy, a
    /// frame above 2^30 bytes, a pool above the reference's or a NULL or too
    /// small borrowed region.
    pub(super) fn new_v2(
        cfg: &MakerConfig,
        device: Arc<dyn Device>,
        borrowed: Option<BorrowedImage>,
    ) -> Result<Self> {
        let resolved = cfg.resolve()?;
        let window = resolved.window;
        if cfg.policy == lrt_upload_policy::LRT_UPLOAD_FULL {
            return Err(Error::invalid_argument(
                "LRT_UPLOAD_FULL ships v1's whole image; a v2 maker ships the compact image",
            ));
        }
        if cfg.frame_before > MAX_FRAME || cfg.frame_after > MAX_FRAME {
            return Err(Error::invalid_argument(format!(
                "frames of {} and {} bytes: at most {MAX_FRAME} each",
                cfg.frame_before, cfg.frame_after
            )));
        }
        let reference = v2_ring_segment_offsets(window)?;
        let full = v2_mirror_extents(window);
        let pick = |what: &str, asked: u64, cap: u64| -> Result<u64> {
            match asked {
                0 => Ok(cap),
                a if a <= cap => Ok(a),
                a => Err(Error::invalid_argument(format!(
                    "a {what} pool of {a} elements is larger than the reference's {cap}"
                ))),
            }
        };
        let caps = V2PoolUse {
            fanin_ids: pick("fanin", cfg.v2_pools.fanin_ids, full.fanin_ids)?,
            tensors: pick("tensor", cfg.v2_pools.tensors, full.tensors)?,
            scalars: pick("scalar", cfg.v2_pools.scalars, full.scalars)?,
        };
        let run = V2Run::new(window, caps, reference.end);
        let mirror_len = run.segments().end;
        // No compact image is larger than the reference's mirror.
        let stage_off = round_up(cfg.frame_before, 64);
        let len = (stage_off + reference.end + cfg.frame_after) as usize;
        let mirror = Mapping::new(mirror_len as usize)?;
        let staging = Mapping::new(len)?;
        // 64 bytes more on the device, for aligning a region that is not.
        let device_len = len as u64 + 64;
        // A v2 maker may have no region (NULL, 0): its uploads then name
        // their destination.
        let (image, owned) = match borrowed {
            Some(b) if b.ptr.is_null() && b.len == 0 => (std::ptr::null_mut(), None),
            _ => device_region(&device, borrowed, device_len)?,
        };
        // Claims go straight into the image they ship while a run repeats
        // the last one's shape; a fresh mirror every run (the reference's
        // own path, a baseline) has none.
        let image_buf = match cfg.fresh_mirror {
            true => None,
            false => Some(Mapping::new(len)?),
        };
        let seg = segment_offsets(window)?;
        // SAFETY: the maker releases its pins before the mappings they
        // cover are unmapped (Drop).
        let pins = unsafe {
            MakerPins::staging_only(cfg.pin_mirror, seg, window, &staging, image_buf.as_ref())
        };
        let parts = Parts {
            seg,
            mirror,
            staging: Some(staging),
            pins,
            image,
            owned,
            v2: Some(V2State {
                run,
                device_len,
                stage_off,
                frame_before: cfg.frame_before,
                frame_after: cfg.frame_after,
                image_buf,
                measured: false,
            }),
        };
        Ok(Self::assemble(
            cfg,
            device,
            window,
            resolved.heap_size,
            parts,
        ))
    }

    /// The v2 state, or `InvalidArgument` naming the v2 call `what` on a
    /// v1 maker.
    pub(super) fn v2_state(&self, what: &str) -> Result<&V2State> {
        self.v2.as_ref().ok_or_else(|| {
            Error::invalid_argument(format!(
                "{what} builds the v2 image; this maker was created with layout v1"
            ))
        })
    }

    /// Starts a v2 run: a fresh mirror with `fresh_mirror`, then the header
    /// as the reference's `init_per_ring` writes it (zeroed, then every
    /// field; the list is `lrt_runtime_maker_v2_begin_run`'s contract); the
    /// pools' cursors reset. Returns the mirror's header.
    pub fn v2_begin_run(&mut self) -> Result<*mut lrt_v2_sm_header> {
        self.v2_state("v2_begin_run")?;
        let t0 = Instant::now();
        if self.fresh_mirror {
            // The baseline's "allocate a new image every run".
            self.mirror = Mapping::new(self.mirror.len())?;
        }
        let heap_size = self.heap_size;
        let Some(v2) = self.v2.as_mut() else {
            return Err(Error::internal("v2 state vanished"));
        };
        let b = v2.image_start();
        let h = v2.run.begin(&self.mirror, b, heap_size);
        self.last_zero_ns = elapsed_ns(t0);
        self.run_open = true;
        self.in_run = true;
        Ok(h)
    }

    /// Claims slot `current_task_index` for the task `d` describes (the
    /// claim semantics of this module; the field list is
    /// `lrt_runtime_maker_v2_claim_slot`'s contract). `State` before
    /// `v2_begin_run` or with an orchestrator error latched; the rest as
    /// `V2Run::claim`.
    pub fn v2_claim_slot(&mut self, d: &V2ClaimDesc<'_>) -> Result<lrt_v2_task_slot> {
        self.v2_state("v2_claim_slot")?;
        if !self.run_open {
            return Err(Error::state("v2_claim_slot before v2_begin_run"));
        }
        let Some(v2) = self.v2.as_mut() else {
            return Err(Error::internal("v2 state vanished"));
        };
        let b = v2.image_start();
        v2.run.claim(&self.mirror, b, d)
    }

    /// The v2 mirror's segments (pools at this maker's capacities).
    pub fn v2_mirror_segments(&self) -> Result<lrt_v2_segments> {
        Ok(self.v2_state("v2_mirror_segments")?.run.segments())
    }

    /// The pools' capacities in elements (`cfg.v2_pools` resolved).
    pub fn v2_pool_capacities(&self) -> Result<V2PoolUse> {
        Ok(self.v2_state("v2_pool_capacities")?.run.capacities())
    }

    /// For a host that wrote the run into the mirror itself: what its pools
    /// hold (`V2Run::set_host_use`; the contract is
    /// `lrt_runtime_maker_v2_set_pool_use`'s). `State` before
    /// `v2_begin_run`.
    pub fn v2_set_pool_use(&mut self, used: V2PoolUse) -> Result<()> {
        self.v2_state("v2_set_pool_use")?;
        if !self.run_open {
            return Err(Error::state("v2_set_pool_use before v2_begin_run"));
        }
        let Some(v2) = self.v2.as_mut() else {
            return Err(Error::internal("v2 state vanished"));
        };
        v2.run.set_host_use(used)
    }
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
        let mut ids = [0i32; LRT_MAX_FANIN];
        let mut distinct = 0usize;
        for &p in t.fanins {
            if !ids[..distinct].contains(&p) {
                ids[distinct] = p;
                distinct += 1;
            }
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
            if let Some(records) = d.tensors {
                std::ptr::copy_nonoverlapping(records.as_ptr(), tensor_p, records.len());
            }
            if !scalar_p.is_null() {
                if let Some(s) = d.scalars {
                    std::ptr::copy_nonoverlapping(s.as_ptr(), scalar_p, s.len());
                }
                let tail = scalar_span as usize - d.scalar_count;
                std::ptr::write_bytes(scalar_p.add(d.scalar_count), 0, tail);
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

#[cfg(test)]
mod tests;
