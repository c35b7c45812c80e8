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
    device_region, elapsed_ns, BorrowedImage, ClaimDesc, CostModel, MakerConfig, RuntimeMaker,
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
        let (image, owned) = device_region(&device, borrowed, device_len)?;
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
        Ok(RuntimeMaker {
            device,
            window,
            policy: cfg.policy,
            fresh_mirror: cfg.fresh_mirror,
            heap_size: resolved.heap_size,
            seg,
            mirror,
            staging: Some(staging),
            pins,
            model: CostModel::FALLBACK,
            image,
            owned,
            run_open: false,
            in_run: false,
            uploaded: false,
            last_zero_ns: 0,
            v2: Some(V2State {
                run,
                device_len,
                stage_off,
                frame_before: cfg.frame_before,
                frame_after: cfg.frame_after,
                image_buf,
            }),
        })
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
mod tests {
    use super::super::super::layout::MAX_TASK_WINDOW;
    use super::super::super::layout_v2::{rel_decode, v2_image_segments, v2_ring_segment_offsets};
    use super::*;
    use crate::ErrorKind;

    const W: u64 = 64;

    fn reference_caps(w: u64) -> V2PoolUse {
        V2PoolUse {
            fanin_ids: w * LRT_MAX_FANIN as u64,
            tensors: w * LRT_MAX_TENSORS as u64,
            scalars: w * LRT_MAX_SCALARS as u64,
        }
    }

    fn run_with(caps: V2PoolUse) -> (V2Run, Mapping) {
        let run = V2Run::new(W, caps, v2_ring_segment_offsets(W).unwrap().end);
        let m = Mapping::new(run.segments().end as usize).unwrap();
        (run, m)
    }

    fn record(tag: u64) -> TensorRecord {
        let mut r = [0u8; LRT_V2_TENSOR_BYTES];
        for (k, b) in r.iter_mut().enumerate() {
            *b = (tag as u8).wrapping_mul(31).wrapping_add(k as u8);
        }
        r
    }

    struct Task {
        mask: u8,
        fanins: Vec<i32>,
        tensors: Vec<TensorRecord>,
        scalars: Vec<u64>,
        completed: bool,
        graph: bool,
    }

    /// Kernel (root), dependent kernel, dummy with a duplicate producer,
    /// pre-completed allocation, graph shell with no tensors, a task at
    /// every cap but the fanin one.
    fn mixed() -> Vec<Task> {
        let t = |mask, fanins: &[i32], nt: u64, ns: u64, completed, graph| Task {
            mask,
            fanins: fanins.to_vec(),
            tensors: (0..nt).map(|k| record(100 + k)).collect(),
            scalars: (0..ns).map(|k| 0x3000 + k).collect(),
            completed,
            graph,
        };
        vec![
            t(2, &[], 2, 3, false, false),
            t(3, &[0], 1, 1, false, false),
            t(0, &[0, 1, 1], 0, 2, false, false),
            t(0, &[], 1, 0, true, false),
            t(0, &[3, 1], 0, 0, false, true),
            t(7, &[0, 1, 2, 3, 4], 32, 16, false, false),
        ]
    }

    fn claim_all(run: &mut V2Run, m: &Mapping, tasks: &[Task]) -> Vec<lrt_v2_task_slot> {
        tasks
            .iter()
            .map(|t| {
                let d = V2ClaimDesc {
                    task: ClaimDesc {
                        active_mask: t.mask,
                        fanins: &t.fanins,
                        completed: t.completed,
                        kernel_id: [7, 8, 9],
                        ..ClaimDesc::default()
                    },
                    tensor_count: t.tensors.len(),
                    tensors: Some(&t.tensors),
                    scalar_count: t.scalars.len(),
                    scalars: Some(&t.scalars),
                    graph_shell: t.graph,
                };
                run.claim(m, std::ptr::null_mut(), &d).unwrap()
            })
            .collect()
    }

    /// The compact image copied to `device` at byte `at` (as the one copy
    /// does), through a staging buffer.
    fn ship(run: &V2Run, m: &Mapping, at: usize) -> (Mapping, lrt_v2_segments) {
        let n = V2Run::current_index(m) as u64;
        let len = run.image_segments(n).end as usize;
        let staging = Mapping::new(len).unwrap();
        // SAFETY: staging holds len bytes and is not the mirror.
        let seg =
            unsafe { run.compact_into(m, std::ptr::null_mut(), n, staging.as_ptr()) }.unwrap();
        assert_eq!(seg.end as usize, len);
        let device = Mapping::new(at + len).unwrap();
        // SAFETY: both hold len bytes past their offsets.
        unsafe { std::ptr::copy_nonoverlapping(staging.as_ptr(), device.as_ptr().add(at), len) };
        (device, seg)
    }

    fn bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
        // SAFETY: test buffers are live mappings at least this long.
        unsafe { std::slice::from_raw_parts(p, len) }
    }

    #[test]
    fn a_mixed_run_compacts_and_every_offset_resolves_on_the_device() {
        let (mut run, m) = run_with(reference_caps(W));
        run.begin(&m, std::ptr::null_mut(), 1 << 20);
        let tasks = mixed();
        let slots = claim_all(&mut run, &m, &tasks);
        let n = tasks.len() as u64;
        // The pools as the reference's cursors advance them.
        let used = run.used();
        let want_f: u64 = tasks
            .iter()
            .map(|t| {
                let mut d = t.fanins.clone();
                d.dedup();
                round_up(d.len() as u64, 16)
            })
            .sum();
        assert_eq!(used.fanin_ids, want_f);
        assert_eq!(
            used.tensors,
            tasks.iter().map(|t| t.tensors.len() as u64).sum::<u64>()
        );
        assert_eq!(
            used.scalars,
            tasks
                .iter()
                .map(|t| round_up(t.scalars.len() as u64, 8))
                .sum::<u64>()
        );

        let at = 704; // a 704-byte block before the image, as the reference frames it
        let (device, c) = ship(&run, &m, at);
        assert_eq!(
            c,
            v2_image_segments(n, used.fanin_ids, used.tensors, used.scalars).unwrap()
        );
        let dev = device.as_ptr() as usize + at;
        // SAFETY: the device copy holds c.end bytes at `dev`, 64-aligned.
        let h = unsafe { &*(dev as *const lrt_v2_sm_header) };
        assert!(h.task_descriptors.is_null() && h.task_payloads.is_null());
        assert!(h.slot_states.is_null() && h.completion_flags.is_null());
        assert_eq!(h.current_task_index, n as i32);
        assert_eq!(h.completed_watermark, -1);
        assert_eq!(h.orchestrator_done, 1);
        assert_eq!((h.task_window_size, h.task_window_mask), (W, W as i32 - 1));
        assert_eq!(h.task_descriptors_offset, 256);
        assert_eq!(h.heap_size, 1 << 20);
        assert_eq!(h.total_size, v2_ring_segment_offsets(W).unwrap().end);
        assert_eq!((h.orch_error_code, h.sched_error_thread), (0, -1));

        for (i, (t, s)) in tasks.iter().zip(&slots).enumerate() {
            let i64_ = i as u64;
            // SAFETY: element i of each device segment, i < n.
            let (d_desc, d_pay, d_state, d_flag) = unsafe {
                (
                    &*((dev + c.descriptors as usize + 40 * i) as *const lrt_task_descriptor),
                    &*((dev + c.payloads as usize + 192 * i) as *const lrt_v2_task_payload),
                    &*((dev + c.slot_states as usize + 64 * i) as *const lrt_v2_task_slot_state),
                    *((dev + c.completion_flags as usize + i) as *const u8),
                )
            };
            // SAFETY: the claimed slot's mirror elements.
            let (m_desc, m_pay, m_state) = unsafe { (&*s.descriptor, &*s.payload, &*s.slot_state) };
            // The slot state names its own payload and descriptor.
            let sa = d_state as *const _ as usize;
            assert_eq!(
                rel_decode(sa + 8, d_state.payload),
                Some(d_pay as *const _ as usize),
                "slot {i}"
            );
            assert_eq!(
                rel_decode(sa + 12, d_state.task),
                Some(d_desc as *const _ as usize),
                "slot {i}"
            );
            // Field by field with the mirror (offsets aside).
            assert_eq!(d_desc.task_id, i64_);
            assert_eq!(
                bytes(d_desc as *const _ as *const u8, 40),
                bytes(m_desc as *const _ as *const u8, 40)
            );
            let mut a = *d_state;
            let mut b = *m_state;
            (a.payload, a.task, b.payload, b.task) = (0, 0, 0, 0);
            assert_eq!(
                bytes(&a as *const _ as *const u8, 64),
                bytes(&b as *const _ as *const u8, 64),
                "slot {i}"
            );
            let mut a = *d_pay;
            let mut b = *m_pay;
            (a.tensors, a.scalars, a.fanin, b.tensors, b.scalars, b.fanin) = (0, 0, 0, 0, 0, 0);
            assert_eq!(
                bytes(&a as *const _ as *const u8, 192),
                bytes(&b as *const _ as *const u8, 192),
                "slot {i}"
            );
            assert_eq!(d_flag, u8::from(t.completed));
            // The reference's per-kind values.
            let kind = if t.graph {
                2
            } else if t.mask != 0 {
                0
            } else {
                1
            };
            assert_eq!(d_state.task_kind, kind, "slot {i}");
            assert_eq!(d_state.task_state, i32::from(t.completed));
            assert_eq!(d_state.graph_node_index, -1);
            let mut distinct = t.fanins.clone();
            distinct.dedup();
            assert_eq!(d_pay.fanin_count as usize, distinct.len());
            // Every region resolves inside the device image's own pool and
            // holds the mirror's content; a graph shell's stay unbound.
            let pa = d_pay as *const _ as usize;
            let region = |off: usize, delta: i32, pool: u64, next: u64| {
                rel_decode(pa + off, delta).inspect(|&a| {
                    assert!(
                        a >= dev + pool as usize && a <= dev + next as usize,
                        "slot {i}"
                    );
                })
            };
            match region(12, d_pay.tensors, c.tensor_pool, c.scalar_pool) {
                None => assert!(t.graph, "slot {i}"),
                Some(a) => {
                    let got = bytes(a as *const u8, 128 * t.tensors.len());
                    assert_eq!(got, t.tensors.concat().as_slice(), "slot {i}");
                }
            }
            match region(16, d_pay.scalars, c.scalar_pool, c.end) {
                None => assert!(t.graph, "slot {i}"),
                Some(a) => {
                    // SAFETY: inside the device image (checked above).
                    let got = unsafe {
                        std::slice::from_raw_parts(
                            a as *const u64,
                            round_up(t.scalars.len() as u64, 8) as usize,
                        )
                    };
                    assert_eq!(&got[..t.scalars.len()], t.scalars.as_slice());
                    assert!(got[t.scalars.len()..].iter().all(|&v| v == 0));
                }
            }
            let a = region(20, d_pay.fanin, c.fanin_pool, c.tensor_pool)
                .expect("fanin is always bound");
            // SAFETY: inside the device image.
            let got = unsafe { std::slice::from_raw_parts(a as *const i32, distinct.len()) };
            assert_eq!(got, distinct.as_slice(), "slot {i}");
        }
        // Each producer's last consumer is its latest consumer.
        // SAFETY: slot states 0..n of the device image.
        let last = |p: usize| unsafe {
            (*((dev + c.slot_states as usize + 64 * p) as *const lrt_v2_task_slot_state))
                .last_consumer_local_id
        };
        assert_eq!(
            (last(0), last(1), last(2), last(3), last(4), last(5)),
            (5, 5, 5, 5, 5, 5)
        );
        // Padding between segments is zero.
        let tail = |from: u64, to: u64| {
            bytes((dev + from as usize) as *const u8, (to - from) as usize)
                .iter()
                .all(|&b| b == 0)
        };
        assert!(tail(c.descriptors + 40 * n, c.payloads));
        assert!(tail(c.completion_flags + n, c.fanin_pool));
    }

    #[test]
    fn a_reused_mirror_ships_what_a_fresh_one_does() {
        let tasks = mixed();
        let (mut run, m) = run_with(reference_caps(W));
        // A first, larger run leaves stale slots, regions and pads behind.
        run.begin(&m, std::ptr::null_mut(), 1 << 20);
        let big: Vec<Task> = (0..40)
            .map(|k| Task {
                mask: 2,
                fanins: if k > 0 { vec![k - 1] } else { vec![] },
                tensors: vec![record(k as u64); 3],
                scalars: vec![u64::MAX; 5],
                completed: k % 3 == 0,
                graph: false,
            })
            .collect();
        claim_all(&mut run, &m, &big);
        run.begin(&m, std::ptr::null_mut(), 1 << 20);
        claim_all(&mut run, &m, &tasks);
        let (reused, c1) = ship(&run, &m, 0);
        let (mut fresh_run, fresh) = run_with(reference_caps(W));
        fresh_run.begin(&fresh, std::ptr::null_mut(), 1 << 20);
        claim_all(&mut fresh_run, &fresh, &tasks);
        let (fresh_dev, c2) = ship(&fresh_run, &fresh, 0);
        assert_eq!(c1, c2);
        let n = c1.end as usize;
        // The header differs only in nothing: both pointers-null copies.
        assert_eq!(bytes(reused.as_ptr(), n), bytes(fresh_dev.as_ptr(), n));
    }

    #[test]
    fn no_tasks_ship_the_header_and_one_slot_of_pitch() {
        let (mut run, m) = run_with(reference_caps(W));
        run.begin(&m, std::ptr::null_mut(), 1 << 20);
        let (device, c) = ship(&run, &m, 0);
        assert_eq!(c, v2_image_segments(0, 0, 0, 0).unwrap());
        assert_eq!(c.end, 640);
        // Nothing but the header is non-zero past it.
        assert!(bytes(device.as_ptr(), 640)[256..].iter().all(|&b| b == 0));
    }

    fn snapshot(run: &V2Run, m: &Mapping) -> Vec<u8> {
        bytes(m.as_ptr(), run.segments().end as usize).to_vec()
    }

    fn task(fanins: &[i32], tensors: usize, scalars: usize) -> Task {
        Task {
            mask: 2,
            fanins: fanins.to_vec(),
            tensors: vec![record(1); tensors],
            scalars: vec![1; scalars],
            completed: false,
            graph: false,
        }
    }

    #[test]
    fn full_pools_refuse_a_claim_and_write_nothing() {
        let caps = |f, t, s| V2PoolUse {
            fanin_ids: f,
            tensors: t,
            scalars: s,
        };
        // (pool capacities, tasks that fill them, the task that no longer fits)
        let cases = [
            (
                caps(16, 64, 64),
                vec![task(&[], 0, 0), task(&[0], 0, 0)],
                task(&[0], 0, 0),
            ),
            (caps(64, 3, 64), vec![task(&[], 2, 0)], task(&[], 2, 0)),
            (caps(64, 64, 8), vec![task(&[], 0, 1)], task(&[], 0, 1)),
        ];
        for (caps, fill, last) in cases {
            let (mut run, m) = run_with(caps);
            run.begin(&m, std::ptr::null_mut(), 1 << 20);
            claim_all(&mut run, &m, &fill);
            let before = snapshot(&run, &m);
            let used = run.used();
            let d = V2ClaimDesc {
                task: ClaimDesc {
                    fanins: &last.fanins,
                    ..ClaimDesc::default()
                },
                tensor_count: last.tensors.len(),
                tensors: Some(&last.tensors),
                scalar_count: last.scalars.len(),
                scalars: Some(&last.scalars),
                graph_shell: false,
            };
            let e = run.claim(&m, std::ptr::null_mut(), &d).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::OutOfRange, "{e}");
            assert!(e.to_string().contains("pool is full"), "{e}");
            assert_eq!(snapshot(&run, &m), before);
            assert_eq!(run.used(), used);
        }
    }

    #[test]
    fn a_latched_orchestrator_error_refuses_claims() {
        let (mut run, m) = run_with(reference_caps(W));
        let h = run.begin(&m, std::ptr::null_mut(), 1 << 20);
        // SAFETY: the mirror's header.
        unsafe { (*h).orch_error_code = 7 };
        let before = snapshot(&run, &m);
        let e = run
            .claim(&m, std::ptr::null_mut(), &V2ClaimDesc::default())
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::State);
        assert_eq!(snapshot(&run, &m), before);
    }

    #[test]
    fn bad_claims_write_nothing() {
        let (mut run, m) = run_with(reference_caps(W));
        run.begin(&m, std::ptr::null_mut(), 1 << 20);
        claim_all(&mut run, &m, &mixed()[..1]);
        let before = snapshot(&run, &m);
        let recs = [record(0); 2];
        let scal = [1u64; 17];
        let many = [0i32; 129];
        let bad = [
            V2ClaimDesc {
                task: ClaimDesc {
                    logical_block_num: 0,
                    ..ClaimDesc::default()
                },
                ..V2ClaimDesc::default()
            },
            V2ClaimDesc {
                task: ClaimDesc {
                    active_mask: 7,
                    logical_block_num: 20000,
                    ..ClaimDesc::default()
                },
                ..V2ClaimDesc::default()
            },
            V2ClaimDesc {
                task: ClaimDesc {
                    fanins: &[1],
                    ..ClaimDesc::default()
                },
                ..V2ClaimDesc::default()
            },
            V2ClaimDesc {
                task: ClaimDesc {
                    fanins: &[-1],
                    ..ClaimDesc::default()
                },
                ..V2ClaimDesc::default()
            },
            V2ClaimDesc {
                task: ClaimDesc {
                    fanins: &many,
                    ..ClaimDesc::default()
                },
                ..V2ClaimDesc::default()
            },
            V2ClaimDesc {
                tensor_count: 33,
                ..V2ClaimDesc::default()
            },
            V2ClaimDesc {
                scalar_count: 17,
                scalars: Some(&scal),
                ..V2ClaimDesc::default()
            },
            V2ClaimDesc {
                tensor_count: 1,
                tensors: Some(&recs),
                ..V2ClaimDesc::default()
            },
            V2ClaimDesc {
                tensor_count: 2,
                tensors: Some(&recs),
                graph_shell: true,
                ..V2ClaimDesc::default()
            },
        ];
        for d in &bad {
            let e = run.claim(&m, std::ptr::null_mut(), d).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{d:?}: {e}");
            assert_eq!(snapshot(&run, &m), before, "{d:?}");
        }
    }

    #[test]
    fn a_broken_region_is_refused_at_compaction() {
        for field in 0..4 {
            let (mut run, m) = run_with(reference_caps(W));
            run.begin(&m, std::ptr::null_mut(), 1 << 20);
            let slots = claim_all(&mut run, &m, &mixed());
            let ptr = slots[1].payload;
            // SAFETY: the claimed slot's mirror payload.
            let p = unsafe { &mut *ptr };
            match field {
                0 => p.tensors += 8,         // not a record boundary
                1 => p.scalar_count = 17,    // over the cap
                2 => p.fanin = 0,            // unbound with a count
                _ => p.tensors = -p.tensors, // outside the pool
            }
            let n = V2Run::current_index(&m) as u64;
            let out = Mapping::new(run.image_segments(n).end as usize).unwrap();
            // SAFETY: out holds the image and is not the mirror.
            let e =
                unsafe { run.compact_into(&m, std::ptr::null_mut(), n, out.as_ptr()) }.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{field}: {e}");
            assert!(e.to_string().contains("slot 1"), "{e}");
        }
    }

    #[test]
    fn the_largest_window_keeps_every_offset_in_reach() {
        let w = MAX_TASK_WINDOW;
        let run = V2Run::new(
            w,
            reference_caps(w),
            v2_ring_segment_offsets(w).unwrap().end,
        );
        let s = run.segments();
        // The farthest distances a claim encodes: the last payload to the
        // end of the scalar pool, the last slot state to payload 0.
        assert!(s.end - s.payloads <= i32::MAX as u64);
        let far = rel_encode(s.payloads as usize + 0x1000, s.end as usize + 0x1000 - 8);
        assert_ne!(far, 0);
    }
}
