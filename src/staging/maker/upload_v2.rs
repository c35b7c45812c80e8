//! The v2 upload: the compact image of a run assembled from the mirror for
//! the one copy, and the maker's v2 upload around it.
//!
//! Compaction (the reference's `compact_live_image`): the header copied with
//! its four pointers NULL and `orchestrator_done = 1`; the live prefix of each
//! segment and the used prefix of each pool copied to the image pitched to
//! `P = max(N, 1)`; padding up to each next segment zeroed (the shipped bytes
//! are fully determined); every slot's `payload`/`task` re-taken for element
//! i of the image; every bound region offset re-taken by its pool's shift
//! (a region keeps its position in its pool), unbound ones stay 0. Every
//! live payload's regions are checked against the used pools (a host that
//! wrote through the returned pointers may have broken them) before the
//! image is considered valid; the mirror itself is never changed.
use std::mem::size_of;

use super::super::abi::{lrt_upload_policy, lrt_upload_report};
use super::super::layout::{lrt_task_descriptor, LRT_MAX_FANIN, LRT_MAX_SCALARS, LRT_MAX_TENSORS};
use super::super::layout_v2::{
    lrt_v2_segments, lrt_v2_sm_header, lrt_v2_task_payload, lrt_v2_task_slot_state, rel_decode,
    v2_offsets, LRT_V2_TENSOR_BYTES,
};
use super::super::mirror::Mapping;
use super::v2_state::V2Run;
use super::{device_kind, elapsed_ns, RuntimeMaker};
use crate::{Error, ErrorKind, Result};
use std::time::Instant;

/// The chunk of payloads copied and then re-taken while hot.
const PATCH_CHUNK: usize = 128;

impl V2Run {
    /// The compact image of this run's `n` tasks as the pools stand.
    pub(crate) fn image_segments(&self, n: u64) -> lrt_v2_segments {
        v2_offsets(
            n.max(1),
            self.used.fanin_ids,
            self.used.tensors,
            self.used.scalars,
        )
    }

    /// Checks that a live payload's region offset (stored at mirror address
    /// `field`) is unbound with a zero count, or names an element of its
    /// pool `[pool, pool + used * elem)` with `count` elements inside the
    /// used part.
    #[allow(clippy::too_many_arguments)]
    fn check_region(
        i: u64,
        what: &str,
        field: usize,
        delta: i32,
        count: i32,
        pool: usize,
        elem: usize,
        used: u64,
        cap: usize,
    ) -> Result<()> {
        let bad = |why: String| {
            Err(Error::invalid_argument(format!(
                "slot {i}: the {what} region {why}"
            )))
        };
        if count < 0 || count as usize > cap {
            return bad(format!("has count {count}, outside [0, {cap}]"));
        }
        let Some(target) = rel_decode(field, delta) else {
            return if count == 0 {
                Ok(())
            } else {
                bad(format!("is unbound with count {count}"))
            };
        };
        let off = target.wrapping_sub(pool);
        if target < pool || off % elem != 0 || (off / elem) as u64 + count as u64 > used {
            return bad(format!(
                "(offset {delta}, count {count}) is not inside the {used} used elements of its pool"
            ));
        }
        Ok(())
    }

    /// Writes the compact image of the run's `n = current_task_index` tasks
    /// to `out` (64-aligned, at least `image_segments(n).end` bytes, not
    /// overlapping the mirror) and returns its segments. `OutOfRange` for
    /// `n` outside `[0, W]`, `InvalidArgument` for a live payload whose
    /// regions are not inside the used pools (the module's rules); the
    /// mirror is never changed, `out` may be partly written on failure.
    ///
    /// # Safety
    /// `out` must be valid for writes of `image_segments(n).end` bytes and
    /// not overlap `m`.
    pub(crate) unsafe fn compact_into(
        &self,
        m: &Mapping,
        n: u64,
        out: *mut u8,
    ) -> Result<lrt_v2_segments> {
        if n > self.window {
            return Err(Error::out_of_range(format!(
                "total_tasks (current_task_index) {n} is outside [0, {}]",
                self.window
            )));
        }
        let c = self.image_segments(n);
        let ms = self.seg;
        let base = m.as_ptr();
        let u = self.used;
        let nn = n as usize;
        // (mirror offset, image offset, live bytes, image segment end)
        let parts = [
            (0, 0, size_of::<lrt_v2_sm_header>() as u64, c.descriptors),
            (
                ms.descriptors,
                c.descriptors,
                n * size_of::<lrt_task_descriptor>() as u64,
                c.payloads,
            ),
            (
                ms.payloads,
                c.payloads,
                n * size_of::<lrt_v2_task_payload>() as u64,
                c.slot_states,
            ),
            (
                ms.slot_states,
                c.slot_states,
                n * size_of::<lrt_v2_task_slot_state>() as u64,
                c.completion_flags,
            ),
            (ms.completion_flags, c.completion_flags, n, c.fanin_pool),
            (ms.fanin_pool, c.fanin_pool, 4 * u.fanin_ids, c.tensor_pool),
            (
                ms.tensor_pool,
                c.tensor_pool,
                LRT_V2_TENSOR_BYTES as u64 * u.tensors,
                c.scalar_pool,
            ),
            (ms.scalar_pool, c.scalar_pool, 8 * u.scalars, c.end),
        ];
        let pay_size = size_of::<lrt_v2_task_payload>();
        let state_size = size_of::<lrt_v2_task_slot_state>();
        // Shifts of each pool relative to the payloads: a region's offset in
        // the image is its offset in the mirror plus this.
        let shift = |pool_m: u64, pool_c: u64| -> i64 {
            (pool_c as i64 - pool_m as i64) - (c.payloads as i64 - ms.payloads as i64)
        };
        let k_tensors = shift(ms.tensor_pool, c.tensor_pool);
        let k_scalars = shift(ms.scalar_pool, c.scalar_pool);
        let k_fanin = shift(ms.fanin_pool, c.fanin_pool);
        let retake = |delta: i32, k: i64| -> i32 {
            if delta == 0 {
                0
            } else {
                i32::try_from(i64::from(delta) + k).unwrap_or(0)
            }
        };
        let pools = [
            (
                base as usize + ms.tensor_pool as usize,
                LRT_V2_TENSOR_BYTES,
                u.tensors,
                LRT_MAX_TENSORS,
            ),
            (
                base as usize + ms.scalar_pool as usize,
                8,
                u.scalars,
                LRT_MAX_SCALARS,
            ),
            (
                base as usize + ms.fanin_pool as usize,
                4,
                u.fanin_ids,
                LRT_MAX_FANIN,
            ),
        ];
        for (k, &(from, to, len, seg_end)) in parts.iter().enumerate() {
            // SAFETY: `from + len` is inside the mirror (n <= W, the cursors
            // within the capacities) and `to + len <= seg_end <= c.end`
            // inside `out`, per the caller's contract; the two do not overlap.
            unsafe {
                match k {
                    // Payloads: copied and re-taken a chunk at a time.
                    2 => {
                        for lo in (0..nn).step_by(PATCH_CHUNK) {
                            let hi = (lo + PATCH_CHUNK).min(nn);
                            let src = base.add(from as usize + lo * pay_size);
                            let dst = out.add(to as usize + lo * pay_size);
                            std::ptr::copy_nonoverlapping(src, dst, (hi - lo) * pay_size);
                            let dst = dst.cast::<lrt_v2_task_payload>();
                            for j in 0..hi - lo {
                                let i = (lo + j) as u64;
                                let p = &mut *dst.add(j);
                                let field = src as usize + j * pay_size;
                                for (r, (delta, count, (pool, elem, used, cap), name)) in [
                                    (p.tensors, p.tensor_count, pools[0], "tensor"),
                                    (p.scalars, p.scalar_count, pools[1], "scalar"),
                                    (p.fanin, p.fanin_count, pools[2], "fanin"),
                                ]
                                .into_iter()
                                .enumerate()
                                {
                                    Self::check_region(
                                        i,
                                        name,
                                        field + 12 + 4 * r,
                                        delta,
                                        count,
                                        pool,
                                        elem,
                                        used,
                                        cap,
                                    )?;
                                }
                                p.tensors = retake(p.tensors, k_tensors);
                                p.scalars = retake(p.scalars, k_scalars);
                                p.fanin = retake(p.fanin, k_fanin);
                            }
                        }
                    }
                    // Slot states: copied, then bound to element i of the
                    // image.
                    3 => {
                        std::ptr::copy_nonoverlapping(
                            base.add(from as usize),
                            out.add(to as usize),
                            len as usize,
                        );
                        let states = out.add(to as usize).cast::<lrt_v2_task_slot_state>();
                        let pay0 = c.payloads as i64 - c.slot_states as i64 - 8;
                        let task0 = c.descriptors as i64 - c.slot_states as i64 - 12;
                        for i in 0..nn {
                            let s = &mut *states.add(i);
                            let i = i as i64;
                            // |delta| < image size <= i32::MAX.
                            s.payload = (pay0 + i * (pay_size as i64 - state_size as i64)) as i32;
                            s.task = (task0
                                + i * (size_of::<lrt_task_descriptor>() as i64 - state_size as i64))
                                as i32;
                        }
                    }
                    _ => std::ptr::copy_nonoverlapping(
                        base.add(from as usize),
                        out.add(to as usize),
                        len as usize,
                    ),
                }
                std::ptr::write_bytes(
                    out.add((to + len) as usize),
                    0,
                    (seg_end - to - len) as usize,
                );
            }
        }
        // SAFETY: out holds at least the 256-byte header, 64-aligned.
        let h = unsafe { &mut *out.cast::<lrt_v2_sm_header>() };
        h.task_descriptors = std::ptr::null_mut();
        h.task_payloads = std::ptr::null_mut();
        h.slot_states = std::ptr::null_mut();
        h.completion_flags = std::ptr::null_mut();
        h.orchestrator_done = 1;
        Ok(c)
    }
}

impl RuntimeMaker {
    /// The compact image the next v2 upload ships, for the run as it stands
    /// (N = `current_task_index`, the pools as used).
    pub fn v2_image_segments(&self) -> Result<lrt_v2_segments> {
        let v2 = self.v2_state("v2_image_segments")?;
        let n = V2Run::current_index(&self.mirror).clamp(0, self.window as i32) as u64;
        Ok(v2.run.image_segments(n))
    }

    /// N and the checks every v2 upload makes before anything is copied:
    /// `State` before `v2_begin_run` or with `orch_error_code` latched,
    /// `OutOfRange` for N outside `[0, W]`.
    fn v2_live(&self) -> Result<u64> {
        self.v2_state("v2 upload")?;
        if !self.run_open {
            return Err(Error::state("v2 upload before v2_begin_run"));
        }
        let latched = V2Run::orch_error(&self.mirror);
        if latched != 0 {
            return Err(Error::state(format!(
                "the orchestrator latched error {latched}: an incomplete graph is not uploaded"
            )));
        }
        let n = V2Run::current_index(&self.mirror);
        if n < 0 || n as u64 > self.window {
            return Err(Error::out_of_range(format!(
                "total_tasks (current_task_index) {n} is outside [0, {}]",
                self.window
            )));
        }
        Ok(n as u64)
    }

    /// Ships the run: `[before | compact image | after]` in one copy, the
    /// image at `device_image()` (the checks and the image are the module's;
    /// the full contract is `lrt_runtime_maker_v2_upload`'s). `State` before
    /// `v2_begin_run` or with an orchestrator error latched, `OutOfRange`
    /// for N outside `[0, W]`, `InvalidArgument` for a frame longer than
    /// its room or a live payload whose regions are not inside the used
    /// pools: nothing is copied then. `Device` when the copy fails.
    pub fn v2_upload(&mut self, before: &[u8], after: &[u8]) -> Result<lrt_upload_report> {
        let t0 = Instant::now();
        let n = self.v2_live()?;
        let v2 = self.v2_state("v2_upload")?;
        let (b, a) = (before.len() as u64, after.len() as u64);
        if b > v2.frame_before || a > v2.frame_after {
            return Err(Error::invalid_argument(format!(
                "frames of {b} and {a} bytes; the maker has room for {} and {}",
                v2.frame_before, v2.frame_after
            )));
        }
        let staging = self
            .staging
            .as_ref()
            .ok_or_else(|| Error::internal("v2 maker without staging buffer"))?;
        let at = v2.stage_off as usize;
        let dev_start = v2.image_off as usize - before.len();
        // SAFETY: the staging buffer holds stage_off + the reference's
        // mirror size + frame_after bytes, no compact image is larger than
        // that mirror, and stage_off is 64-aligned in the page-aligned
        // mapping; it is distinct from the mirror.
        let seg = unsafe {
            v2.run
                .compact_into(&self.mirror, n, staging.as_ptr().add(at))
        }?;
        let start = at - before.len();
        let len = before.len() + seg.end as usize + after.len();
        // SAFETY: [start, start + len) lies inside the staging buffer (the
        // frames fit their rooms, checked above); the caller's slices do not
        // overlap it.
        unsafe {
            let out = staging.as_ptr();
            std::ptr::copy_nonoverlapping(before.as_ptr(), out.add(start), before.len());
            std::ptr::copy_nonoverlapping(
                after.as_ptr(),
                out.add(at + seg.end as usize),
                after.len(),
            );
        }
        let relocate_ns = elapsed_ns(t0);
        let t1 = Instant::now();
        let grow = start + len;
        // Pinned as far as the runs use it, grown to the next power of two
        // of bytes so that a steady workload pins once.
        let end = grow.next_power_of_two().min(staging.len());
        self.pins.ensure_staging(&*self.device, 0, end);
        let src = staging.as_ptr().wrapping_add(start);
        let dst = self.image.wrapping_add(dev_start);
        // SAFETY: [start, start + len) lies inside the staging buffer
        // (above); the device allocation holds image_off (at most the frame
        // before's room + 64) + the mirror's size + the frame after's room,
        // so [dev_start, dev_start + len) lies inside it.
        let copied = unsafe { self.device.copy_to(dst, src, len) }.map_err(|e| {
            Error::new(
                device_kind(&e, ErrorKind::Device),
                format!("copy of the {len}-byte v2 image to the device failed: {e}"),
            )
        });
        self.uploaded = copied.is_ok();
        copied?;
        Ok(lrt_upload_report {
            total_tasks: n as i32,
            copies: 1,
            bytes: len as u64,
            zero_ns: self.last_zero_ns,
            relocate_ns,
            copy_ns: elapsed_ns(t1),
            path: lrt_upload_policy::LRT_UPLOAD_COMPACT,
        })
    }

    /// Writes the compact image of the run to `out` (64-aligned, at least
    /// `v2_image_segments().end` bytes), as `v2_upload` would ship it, and
    /// returns its segments: for a host that ships the image itself, and
    /// for measuring the reference's own path. The checks of `v2_upload`
    /// apply; `InvalidArgument` for an unaligned or short `out`.
    pub fn v2_compact_into(&mut self, out: &mut [u8]) -> Result<lrt_v2_segments> {
        let n = self.v2_live()?;
        let v2 = self.v2_state("v2_compact_into")?;
        let need = v2.run.image_segments(n).end as usize;
        if out.as_ptr() as usize % 64 != 0 || out.len() < need {
            return Err(Error::invalid_argument(format!(
                "the output buffer must be 64-aligned and hold {need} bytes ({} at {:p})",
                out.len(),
                out.as_ptr()
            )));
        }
        // SAFETY: `out` is a live exclusive slice of at least `need` bytes,
        // so it cannot overlap the maker's mirror.
        unsafe { v2.run.compact_into(&self.mirror, n, out.as_mut_ptr()) }
    }
}
