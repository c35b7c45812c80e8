//! The kept mirror's contract: at `begin_run` it reads as the fresh, zeroed
//! mirror the reference maps every run (`run_host_orchestration`, 6ebaf7715),
//! at a cost bounded by what the previous run wrote, not by the window.
//!
//! Why: the reference's orchestrator reads mirror bytes it has not written in
//! the run. Before it takes a producer id as an edge,
//! `append_fanin_or_fail` (`pto_orchestrator.cpp`, the explicit deps of
//! `submit_task_common`, its tensor-map producers and `graph_submit_outer`'s
//! producers) and `wait_for_tensor_ready`'s `resolve_producer`
//! (`pto_runtime2.cpp`) read the producer slot's `task` offset and that
//! descriptor's `task_id`. In a zeroed mirror a slot not claimed in this run
//! has `task` NULL, so an id not yet submitted is no producer (the edge is
//! dropped, or `resolve_producer` reports it); a kept mirror would hand it
//! the previous run's slot. Everything else the host code reads between
//! `begin_run` and the upload (`orch_error_code`, `current_task_index`) is
//! in the header, which begin_run writes whole.
//!
//! And every byte of the compact image that nobody writes in a run (a fanin
//! region's tail past `fanin_count`, a tensor record's strides past `ndims`,
//! the predicate's unused bytes, a graph shell's dump metadata, a
//! descriptor's padding) must ship as the zero a fresh mirror holds, not as
//! what an earlier run left there.
//!
//! So `begin_run` zeroes the mirror's *footprint* of the run that ends
//! there: the slots `[lo, hi)` of each of the four slot segments and each
//! pool's `[lo, hi)` that run may have written (below). The footprint is
//! the previous run's own extent, so the reset costs what that run's tasks
//! cost (a steady claimed workload, which claims into the image buffer,
//! writes and resets nothing in the mirror).
//!
//! The previous run's footprint in the mirror:
//! * slots: from 0 (from the speculative pitch when it was claimed in place:
//!   the slots below it were in the image buffer) to the larger of its
//!   `current_task_index` (clamped to [0, W]) and the last slot it claimed;
//! * pools, a run the host wrote and described (`set_pool_use`): `[0, used)`;
//!   a claimed run: from each pool's speculative split (0 without one) to
//!   its cursor; a run that ended without either (aborted before
//!   `set_pool_use`, or the host wrote slots without claiming nor
//!   describing them): the regions its live payloads name, each clamped to
//!   its pool. A host that writes pool bytes outside any region a payload
//!   of `[0, current_task_index)` names, and then abandons the run, leaves
//!   those bytes to itself.
use super::layout::{lrt_v2_task_payload, rel_decode, V2PoolUse};
use super::layout::{LRT_V2_FANIN_ROUND, LRT_V2_SCALAR_ROUND};
use super::run::{Pool, Seg, V2Run};
use crate::staging::align::round_up;
use crate::staging::mirror::Mapping;
use crate::staging::v1::layout::{LRT_MAX_FANIN, LRT_MAX_SCALARS, LRT_MAX_TENSORS};

/// What a run may have written in the mirror: slots `slots.0..slots.1` of
/// every slot segment, and per pool elements `[lo.of(p), hi.of(p))`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Footprint {
    pub(crate) slots: (u64, u64),
    pub(crate) lo: V2PoolUse,
    pub(crate) hi: V2PoolUse,
}

impl V2Run {
    /// The mirror footprint of the run that is ending (module docs).
    pub(crate) fn footprint(&self, m: &Mapping) -> Footprint {
        let n = (Self::current_index(m).clamp(0, self.window as i32) as u64).max(self.claimed_to);
        let mut f = Footprint {
            slots: (0, n),
            ..Footprint::default()
        };
        if self.host_filled {
            f.hi = self.used;
        } else if self.claims > 0 {
            if let Some(s) = self.spec {
                f.slots.0 = s.pitch.min(n);
                f.lo = s.split;
            }
            f.hi = self.used;
            for pool in Pool::ALL {
                let lo = pool.of_mut(&mut f.lo);
                *lo = (*lo).min(pool.of(&f.hi));
            }
        } else {
            f.hi = self.named_regions(m, n);
        }
        f
    }

    /// The end of the furthest region that the mirror's payloads `[0, n)`
    /// name in each pool, clamped to the pool.
    fn named_regions(&self, m: &Mapping, n: u64) -> V2PoolUse {
        let mut hi = V2PoolUse::default();
        let first: *const lrt_v2_task_payload = Self::at(m, self.seg.payloads);
        for i in 0..n {
            // SAFETY: payload i < n <= W of the mirror: plain data inside the
            // mapping, read by value.
            let p = unsafe { *first.add(i as usize) };
            let p_addr = first.wrapping_add(i as usize) as usize;
            for (pool, field, delta, span) in [
                (
                    Pool::Fanin,
                    20,
                    p.fanin,
                    round_up(
                        (p.fanin_count.clamp(0, LRT_MAX_FANIN as i32)) as u64,
                        LRT_V2_FANIN_ROUND,
                    ),
                ),
                (
                    Pool::Tensors,
                    12,
                    p.tensors,
                    p.tensor_count.clamp(0, LRT_MAX_TENSORS as i32) as u64,
                ),
                (
                    Pool::Scalars,
                    16,
                    p.scalars,
                    round_up(
                        (p.scalar_count.clamp(0, LRT_MAX_SCALARS as i32)) as u64,
                        LRT_V2_SCALAR_ROUND,
                    ),
                ),
            ] {
                let Some(target) = rel_decode(p_addr + field, delta) else {
                    continue;
                };
                let base = m.as_ptr() as usize + pool.start(&self.seg) as usize;
                let Some(off) = target.checked_sub(base) else {
                    continue;
                };
                let cap = pool.of(&self.caps);
                let idx = off as u64 / pool.elem();
                if idx < cap {
                    let end = pool.of_mut(&mut hi);
                    *end = (*end).max((idx + span).min(cap));
                }
            }
        }
        hi
    }

    /// Makes the kept mirror `m` read as a fresh one: zeroes the footprint
    /// of the run that is ending (call before `begin`).
    pub(crate) fn reset_kept(&self, m: &Mapping) {
        let f = self.footprint(m);
        self.zero_footprint(m, &f);
    }

    /// Zeroes the footprint `f` in the mirror.
    pub(crate) fn zero_footprint(&self, m: &Mapping, f: &Footprint) {
        let (lo, hi) = (f.slots.0, f.slots.1.min(self.window));
        let mut ranges = [(0u64, 0u64); 7];
        if lo < hi {
            for (k, seg) in [Seg::Descriptors, Seg::Payloads, Seg::SlotStates, Seg::Flags]
                .into_iter()
                .enumerate()
            {
                ranges[k] = (
                    seg.start(&self.seg) + lo * seg.size(),
                    (hi - lo) * seg.size(),
                );
            }
        }
        for (k, pool) in Pool::ALL.into_iter().enumerate() {
            let cap = pool.of(&self.caps);
            let (a, b) = (pool.of(&f.lo).min(cap), pool.of(&f.hi).min(cap));
            if a < b {
                ranges[4 + k] = (
                    pool.start(&self.seg) + a * pool.elem(),
                    (b - a) * pool.elem(),
                );
            }
        }
        for (at, len) in ranges {
            if len > 0 {
                // SAFETY: every range lies inside its segment or pool of the
                // mirror (slots clamped to W, pool elements to the pool's
                // capacity; `seg` is this mirror's layout), which the mapping
                // holds; plain bytes, no reference to them is live.
                unsafe { std::ptr::write_bytes(m.as_ptr().add(at as usize), 0, len as usize) };
            }
        }
    }
}
