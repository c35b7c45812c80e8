//! A v2 run in the host mirror: its layout, the pools' capacities and
//! cursors, the header a run starts with, and the speculative image in the
//! image buffer (`Spec`). The claims are `claim.rs`, the image assembly
//! `image.rs`.
use std::mem::size_of;

use super::super::mirror::Mapping;
use super::super::v1::layout::lrt_task_descriptor;
use super::layout::{
    lrt_v2_segments, lrt_v2_sm_header, lrt_v2_task_payload, lrt_v2_task_slot_state, v2_offsets,
    V2PoolUse, LRT_V2_TENSOR_BYTES,
};
use crate::{Error, Result};

/// Where this run's first slots and pool prefixes are written instead of
/// the mirror: the compact image the last uploaded run had (its pitch and
/// pool sizes), laid out in the maker's image buffer. A steady workload
/// claims straight into the image it ships; anything that does not fit the
/// guess (slots from `pitch` on, a pool's regions from `split` on) goes to
/// the mirror, where the upload's gather takes it from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec {
    /// The guessed image's layout (offsets from the image buffer's start).
    pub(super) seg: lrt_v2_segments,
    /// Slots `[0, pitch)` are in the image buffer.
    pub(super) pitch: u64,
    /// The guessed pools (elements).
    pub(super) pools: V2PoolUse,
    /// Per pool, the cursor from which regions go to the mirror: the guess,
    /// lowered to the cursor of the first region that did not fit (regions
    /// keep their order, so a pool is `[0, split)` in the image buffer and
    /// `[split, used)` in the mirror, at the same cursor positions).
    pub(super) split: V2PoolUse,
}

/// The v2 side of a maker: the mirror's layout, the pools' capacities, this
/// run's cursors and speculative layout. The memory is the maker's: every
/// method takes the mirror mapping it describes (at least `segments().end`
/// bytes) and the image buffer's image start (`b`, 64-aligned, room for the
/// reference's mirror; NULL: no speculation).
#[derive(Debug)]
pub(crate) struct V2Run {
    pub(super) window: u64,
    pub(super) seg: lrt_v2_segments,
    pub(super) caps: V2PoolUse,
    pub(super) used: V2PoolUse,
    /// The header's `total_size`: the reference's mirror size for W.
    reference_size: u64,
    /// This run's speculative layout (None: every slot and region is in the
    /// mirror).
    pub(super) spec: Option<Spec>,
    /// The last uploaded run's task count and pools: the next run's guess.
    pub(super) guess: Option<(u64, V2PoolUse)>,
    /// Slots this run claimed through the maker.
    pub(super) claims: u64,
    /// The run's cores (`lrt_runtime_maker_v2_set_core_counts`), 0 unknown:
    /// a sync_start claim's limit (`claim.rs`).
    pub(super) cores: CoreCounts,
    /// One past the last slot this run claimed (the footprint's bound,
    /// `fresh.rs`).
    pub(super) claimed_to: u64,
    /// The host wrote this run into the mirror itself and said what its
    /// pools hold (`set_host_use`): every slot and region is read from the
    /// mirror, and no guess is made for the next run.
    pub(super) host_filled: bool,
}

/// The cores a run's tasks go to, as the reference's orchestrator holds
/// them (`total_cluster_count`, `total_aiv_count`, set by
/// `runtime_finalize_after_wire`); 0 = unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CoreCounts {
    pub(crate) clusters: i32,
    pub(crate) aiv: i32,
}

/// Which segment of a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    Descriptors,
    Payloads,
    SlotStates,
    Flags,
}

/// Which pool, and its element size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pool {
    Fanin,
    Tensors,
    Scalars,
}

impl Seg {
    pub(super) fn size(self) -> u64 {
        (match self {
            Seg::Descriptors => size_of::<lrt_task_descriptor>(),
            Seg::Payloads => size_of::<lrt_v2_task_payload>(),
            Seg::SlotStates => size_of::<lrt_v2_task_slot_state>(),
            Seg::Flags => 1,
        }) as u64
    }
    pub(super) fn start(self, s: &lrt_v2_segments) -> u64 {
        match self {
            Seg::Descriptors => s.descriptors,
            Seg::Payloads => s.payloads,
            Seg::SlotStates => s.slot_states,
            Seg::Flags => s.completion_flags,
        }
    }
}

impl Pool {
    pub(super) const ALL: [Pool; 3] = [Pool::Fanin, Pool::Tensors, Pool::Scalars];
    pub(super) fn elem(self) -> u64 {
        match self {
            Pool::Fanin => 4,
            Pool::Tensors => LRT_V2_TENSOR_BYTES as u64,
            Pool::Scalars => 8,
        }
    }
    pub(super) fn start(self, s: &lrt_v2_segments) -> u64 {
        match self {
            Pool::Fanin => s.fanin_pool,
            Pool::Tensors => s.tensor_pool,
            Pool::Scalars => s.scalar_pool,
        }
    }
    pub(super) fn name(self) -> &'static str {
        match self {
            Pool::Fanin => "fanin",
            Pool::Tensors => "tensor",
            Pool::Scalars => "scalar",
        }
    }
    pub(super) fn of(self, u: &V2PoolUse) -> u64 {
        match self {
            Pool::Fanin => u.fanin_ids,
            Pool::Tensors => u.tensors,
            Pool::Scalars => u.scalars,
        }
    }
    pub(super) fn of_mut(self, u: &mut V2PoolUse) -> &mut u64 {
        match self {
            Pool::Fanin => &mut u.fanin_ids,
            Pool::Tensors => &mut u.tensors,
            Pool::Scalars => &mut u.scalars,
        }
    }
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
            spec: None,
            guess: None,
            claims: 0,
            claimed_to: 0,
            cores: CoreCounts::default(),
            host_filled: false,
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

    /// Element `i` of segment `which`: in the image buffer for a slot below
    /// the speculative pitch, else in the mirror.
    pub(super) fn elem<T>(&self, m: &Mapping, b: *mut u8, which: Seg, i: u64) -> *mut T {
        match self.spec {
            Some(s) if i < s.pitch => b
                .wrapping_add((which.start(&s.seg) + i * which.size()) as usize)
                .cast::<T>(),
            _ => Self::at(m, which.start(&self.seg) + i * which.size()),
        }
    }

    /// The address of element `c` of `pool`, in the buffer `in_spec` says.
    pub(super) fn pool_at(
        &self,
        m: &Mapping,
        b: *mut u8,
        pool: Pool,
        c: u64,
        in_spec: bool,
    ) -> *mut u8 {
        match (self.spec, in_spec) {
            (Some(s), true) => b.wrapping_add((pool.start(&s.seg) + c * pool.elem()) as usize),
            _ => Self::at(m, pool.start(&self.seg) + c * pool.elem()),
        }
    }

    /// Starts a run: zeroes the header only and writes every field as the
    /// reference's `init_per_ring` does (flow control 0, watermark -1, not
    /// done, window, mask, heap size, descriptors at 256, the four array
    /// addresses (the image buffer's under speculation, else the mirror's),
    /// `total_size`, error words 0, error thread -1); resets the pool
    /// cursors; lays the speculative image out in `b` (when not NULL and a
    /// run was uploaded before), zeroing its padding. Returns the header.
    pub(crate) fn begin(
        &mut self,
        m: &Mapping,
        b: *mut u8,
        heap_size: u64,
    ) -> *mut lrt_v2_sm_header {
        debug_assert!(m.len() as u64 >= self.seg.end);
        self.used = V2PoolUse::default();
        self.claims = 0;
        self.claimed_to = 0;
        self.host_filled = false;
        self.spec = match self.guess {
            Some((n, pools)) if n > 0 && !b.is_null() => {
                let seg = v2_offsets(n, pools.fanin_ids, pools.tensors, pools.scalars);
                // The padding after each segment's used part: the shipped
                // bytes are fully determined.
                let live = [
                    (seg.descriptors + n * Seg::Descriptors.size(), seg.payloads),
                    (seg.completion_flags + n, seg.fanin_pool),
                    (seg.fanin_pool + 4 * pools.fanin_ids, seg.tensor_pool),
                    (seg.scalar_pool + 8 * pools.scalars, seg.end),
                ];
                for (from, to) in live {
                    // SAFETY: inside the image buffer (room for the
                    // reference's mirror, no smaller than this image).
                    unsafe { std::ptr::write_bytes(b.add(from as usize), 0, (to - from) as usize) };
                }
                Some(Spec {
                    seg,
                    pitch: n,
                    pools,
                    split: pools,
                })
            }
            _ => None,
        };
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
        // The window is at most LRT_MAX_TASK_WINDOW, so the mask fits an i32.
        h_ref.task_window_mask = (self.window - 1) as i32;
        h_ref.heap_size = heap_size;
        h_ref.task_descriptors_offset = self.seg.descriptors;
        h_ref.task_descriptors = self.elem(m, b, Seg::Descriptors, 0);
        h_ref.task_payloads = self.elem(m, b, Seg::Payloads, 0);
        h_ref.slot_states = self.elem(m, b, Seg::SlotStates, 0);
        h_ref.completion_flags = self.elem(m, b, Seg::Flags, 0);
        h_ref.total_size = self.reference_size;
        h_ref.sched_error_thread = -1;
        h
    }

    /// Whether the image buffer holds exactly the compact image of this
    /// run's `n` tasks (every slot and region in it, the guess met).
    pub(super) fn exact(&self, n: u64) -> bool {
        self.spec
            .is_some_and(|s| s.pitch == n && s.split == s.pools && self.used == s.pools)
    }

    /// Remembers what this run shipped, for the next run's guess (none
    /// after a run the host wrote itself: its slots are not claimed
    /// through the maker, so an image to claim into would go unused).
    pub(super) fn remember(&mut self, n: u64) {
        self.guess = (!self.host_filled).then_some((n, self.used));
    }

    /// The host wrote this run's slots and pool regions into the mirror
    /// itself, its pools holding `used` elements (the contract is
    /// `lrt_runtime_maker_v2_set_pool_use`'s): the run is then read from
    /// the mirror alone. `State` when the maker claimed slots in this run,
    /// `OutOfRange` for a pool past its capacity; nothing changes then.
    pub(crate) fn set_host_use(&mut self, used: V2PoolUse) -> Result<()> {
        if self.claims > 0 {
            return Err(Error::state(format!(
                "{} slots of this run were claimed through the maker; a run is either \
                 claimed or written by the host, not both",
                self.claims
            )));
        }
        for pool in Pool::ALL {
            if pool.of(&used) > pool.of(&self.caps) {
                return Err(Error::out_of_range(format!(
                    "{} {} elements used; the pool holds {}",
                    pool.of(&used),
                    pool.name(),
                    pool.of(&self.caps)
                )));
            }
        }
        self.used = used;
        self.spec = None;
        self.host_filled = true;
        Ok(())
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
