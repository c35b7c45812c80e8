//! The compact image of a v2 run, assembled from the mirror (and the image
//! buffer) for the one copy, and the checks every upload makes first.
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

use super::super::mirror::Mapping;
use super::super::v1::layout::{LRT_MAX_FANIN, LRT_MAX_SCALARS, LRT_MAX_TENSORS};
use super::layout::{
    lrt_v2_segments, lrt_v2_sm_header, lrt_v2_task_payload, lrt_v2_task_slot_state, rel_decode,
    v2_offsets,
};
use super::run::{Pool, Seg, V2Run};
use super::MakerV2;
use crate::{Error, Result};

/// The chunk of payloads copied and then re-taken while hot.
const PATCH_CHUNK: usize = 128;

/// What `V2Run::compact` writes of the image into its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Gather {
    /// The whole image (the one copy).
    Whole,
    /// The per-task part, `[0, fanin_pool)`: the header and the four slot
    /// segments with their padding (the split route).
    PerTask,
}

impl V2Run {
    /// The compact image of this run's `n` tasks as the pools stand.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    pub(crate) fn image_segments(&self, n: u64) -> lrt_v2_segments {
        v2_offsets(
            n.max(1),
            self.used.fanin_ids,
            self.used.tensors,
            self.used.scalars,
        )
    }

    /// Where each pool's regions are, in the order of a payload's offset
    /// fields (tensors @12, scalars @16, fanin @20): `[0, split)` in the
    /// image buffer and `[split, used)` in the mirror, at their cursor
    /// positions (no speculation: all in the mirror).
    pub(super) fn pool_parts(&self, m: &Mapping, b: *mut u8) -> [PoolPart; 3] {
        [Pool::Tensors, Pool::Scalars, Pool::Fanin].map(|pool| {
            let used = pool.of(&self.used);
            let split = self.spec.map_or(0, |s| pool.of(&s.split).min(used));
            PoolPart {
                pool,
                image: self
                    .spec
                    .map_or(0, |_| self.pool_at(m, b, pool, 0, true) as usize),
                split,
                mirror: self.pool_at(m, b, pool, 0, false) as usize,
                used,
                shift: pool.elem().trailing_zeros(),
                cap: match pool {
                    Pool::Fanin => LRT_MAX_FANIN,
                    Pool::Tensors => LRT_MAX_TENSORS,
                    Pool::Scalars => LRT_MAX_SCALARS,
                } as u64,
            }
        })
    }

    /// Checks every live payload's regions (`PoolPart::check`) of a run
    /// whose regions all lie in one part: the image buffer of a run claimed
    /// in place (`exact`), or the mirror (no speculation, `b` NULL).
    ///
    /// One branch-free pass over the payloads' offset fields decides (the
    /// common case: every region good, `WholePart::all_hold`); only a run
    /// that fails it is walked again payload by payload for the first bad
    /// region's message.
    pub(super) fn check_regions(&self, m: &Mapping, b: *mut u8, n: u64) -> Result<()> {
        let parts = self.pool_parts(m, b);
        let first: *mut lrt_v2_task_payload = self.elem(m, b, Seg::Payloads, 0);
        // SAFETY: slots [0, n) of the run, all in the one part: live
        // payloads, plain data.
        let good = unsafe { WholePart::all_hold(&parts.map(|p| p.whole()), first, n as usize) };
        if good {
            return Ok(());
        }
        for i in 0..n {
            // SAFETY: slot i < n of the run, all in the one part (the image
            // buffer or the mirror): a live payload, plain data.
            check_payload(&parts, i, unsafe { &*first.add(i as usize) })?;
        }
        Ok(())
    }

    /// Where segment `which`'s slots `[0, n)` come from: the image buffer's
    /// part (below the speculative pitch) and the mirror's, as
    /// `(source, first slot, end slot)`.
    fn slot_parts(
        &self,
        m: &Mapping,
        b: *mut u8,
        which: Seg,
        n: u64,
    ) -> [(*const u8, u64, u64); 2] {
        let pitch = self.spec.map_or(0, |s| s.pitch.min(n));
        [
            (self.elem::<u8>(m, b, which, 0), 0, pitch),
            (
                Self::at::<u8>(m, which.start(&self.seg) + pitch * which.size()),
                pitch,
                n,
            ),
        ]
    }

    /// Writes the compact image of the run's `n = current_task_index` tasks
    /// to `out` (64-aligned, at least `image_segments(n).end` bytes, not
    /// overlapping the mirror or the image buffer `b`) and returns its
    /// segments: the header from the mirror with its pointers NULL and
    /// `orchestrator_done = 1`, each segment's slots and each pool's
    /// regions from the image buffer's part and the mirror's, padding
    /// zeroed, every slot's `payload`/`task` re-taken for element i, every
    /// bound region re-taken for its place in the image's pool.
    /// `OutOfRange` for `n` outside `[0, W]`, `InvalidArgument` for a live
    /// payload whose regions are not inside the used pools (`locate`); the
    /// mirror and the image buffer are never changed, `out` may be partly
    /// written on failure.
    ///
    /// # Safety
    /// `out` must be valid for writes of `image_segments(n).end` bytes and
    /// not overlap `m` or `b`'s image.
    pub(crate) unsafe fn compact_into(
        &self,
        m: &Mapping,
        b: *mut u8,
        n: u64,
        out: *mut u8,
    ) -> Result<lrt_v2_segments> {
        // SAFETY: the caller's contract.
        unsafe { self.compact(m, b, n, out, Gather::Whole) }
    }

    /// `compact_into` (`Gather::Whole`), or what `what` names of it (the
    /// split route's gathers, `Gather`); every check and re-take of what is
    /// written made.
    ///
    /// # Safety
    /// `out` must be valid for writes of the image's bytes up to its end
    /// (`Whole`) or its fanin pool (the others), not overlapping `m` or
    /// `b`'s image.
    pub(super) unsafe fn compact(
        &self,
        m: &Mapping,
        b: *mut u8,
        n: u64,
        out: *mut u8,
        what: Gather,
    ) -> Result<lrt_v2_segments> {
        if n > self.window {
            return Err(Error::out_of_range(format!(
                "total_tasks (current_task_index) {n} is outside [0, {}]",
                self.window
            )));
        }
        let c = self.image_segments(n);
        let u = self.used;
        let parts = self.pool_parts(m, b);
        let shifts = self.mirror_shifts(m, &parts, &c, n);
        let copy = |src: *const u8, to: u64, len: u64| {
            // SAFETY: (every copy below) a source part lies inside the
            // mirror (n <= W, the cursors within the capacities) or inside
            // the image buffer's guessed image (below the pitch, inside a
            // pool's split), and its destination `to + len <= next segment
            // <= c.end` (`c.fanin_pool` without the pools) inside `out`,
            // per the caller's contract; they do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(src, out.add(to as usize), len as usize) }
        };
        let zero = |from: u64, to: u64| {
            // SAFETY: `[from, to)` is padding inside the image in `out`.
            unsafe { std::ptr::write_bytes(out.add(from as usize), 0, (to - from) as usize) }
        };
        copy(
            Self::header(m).cast(),
            0,
            size_of::<lrt_v2_sm_header>() as u64,
        );
        zero(size_of::<lrt_v2_sm_header>() as u64, c.descriptors);
        let nexts = [c.payloads, c.slot_states, c.completion_flags, c.fanin_pool];
        for (which, next) in [Seg::Descriptors, Seg::Payloads, Seg::SlotStates, Seg::Flags]
            .into_iter()
            .zip(nexts)
        {
            let z = which.size();
            for (src, lo, hi) in self.slot_parts(m, b, which, n) {
                let to = which.start(&c) + lo * z;
                if which != Seg::Payloads {
                    copy(src, to, (hi - lo) * z);
                    continue;
                }
                // Payloads: copied and re-taken a chunk at a time, while hot.
                for first in (lo..hi).step_by(PATCH_CHUNK) {
                    let last = (first + PATCH_CHUNK as u64).min(hi);
                    let host = |i: u64| src as usize + ((i - lo) * z) as usize;
                    copy(
                        src.wrapping_add(((first - lo) * z) as usize),
                        which.start(&c) + first * z,
                        (last - first) * z,
                    );
                    match shifts {
                        // SAFETY: payloads [first, last) of the image in
                        // `out`, just copied there, 64-aligned.
                        Some(k) => unsafe {
                            Self::shift_payloads(
                                out.add((which.start(&c) + first * z) as usize).cast(),
                                (last - first) as usize,
                                k,
                            )
                        },
                        None => {
                            for i in first..last {
                                Self::retake_payload(&parts, &c, out, host(i), i)?;
                            }
                        }
                    }
                }
            }
            zero(which.start(&c) + n * z, next);
        }
        // Slot states: bound to element i of the image.
        // SAFETY: slot states [0, n) of the image in `out`, 64-aligned.
        let states = unsafe {
            out.add(c.slot_states as usize)
                .cast::<lrt_v2_task_slot_state>()
        };
        for i in 0..n as usize {
            // SAFETY: as above.
            let s = unsafe { &mut *states.add(i) };
            let (payload, task) = slot_binding(&c, i as u64);
            // |delta| < image size <= i32::MAX.
            (s.payload, s.task) = (payload as i32, task as i32);
        }
        let ends = [c.tensor_pool, c.scalar_pool, c.end];
        for (pool, next) in Pool::ALL
            .into_iter()
            .zip(ends)
            .filter(|_| what == Gather::Whole)
        {
            let used = pool.of(&u);
            let split = self.spec.map_or(0, |s| pool.of(&s.split).min(used));
            let e = pool.elem();
            copy(self.pool_at(m, b, pool, 0, true), pool.start(&c), split * e);
            copy(
                self.pool_at(m, b, pool, split, false),
                pool.start(&c) + split * e,
                (used - split) * e,
            );
            zero(pool.start(&c) + used * e, next);
        }
        // SAFETY: out holds at least the 256-byte header, 64-aligned.
        shipped_header(unsafe { &mut *out.cast::<lrt_v2_sm_header>() });
        Ok(c)
    }

    /// For a run whose slots and regions all lie in the mirror (no
    /// speculation) and whose regions all hold (`WholePart::all_hold`, one
    /// branch-free pass): what each pool's bound offsets move by in the
    /// image `c`. A region at element `idx` of its pool is, from its field
    /// at payload `i`, `pool + idx*e - (payloads + i*s + off)` away in the
    /// image and `mpool + idx*e - (mpayloads + i*s + off)` in the mirror:
    /// the two differ by `(pool - mpool) - (payloads - mpayloads)`, the
    /// same for every slot and region of that pool. None: re-take each
    /// region by `locate` (a speculative run, or a bad region to name).
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    pub(super) fn mirror_shifts(
        &self,
        m: &Mapping,
        parts: &[PoolPart; 3],
        c: &lrt_v2_segments,
        n: u64,
    ) -> Option<[i64; 3]> {
        if self.spec.is_some() {
            return None;
        }
        let first: *mut lrt_v2_task_payload = self.elem(m, std::ptr::null_mut(), Seg::Payloads, 0);
        // SAFETY: slots [0, n) of the mirror (no speculation), n <= W:
        // live payloads, plain data.
        let good = unsafe { WholePart::all_hold(&parts.map(|p| p.whole()), first, n as usize) };
        good.then(|| {
            parts.map(|p| {
                (p.pool.start(c) as i64 - p.mirror as i64)
                    - (c.payloads as i64 - first as usize as i64)
            })
        })
    }

    /// Moves the bound offsets of the `count` payloads from `first` on by
    /// their pools' `shift`s (`mirror_shifts`: tensors, scalars, fanin), in
    /// 32-bit wrapping arithmetic (so that moving by `-shift` undoes it);
    /// unbound ones stay 0. A bound offset is not 0 before (`all_hold`)
    /// nor after (a pool lies after the payloads in the image, and
    /// `|offset| < image size <= i32::MAX`).
    ///
    /// # Safety
    /// `first` points to `count` consecutive writable payloads.
    unsafe fn shift_payloads(first: *mut lrt_v2_task_payload, count: usize, shift: [i64; 3]) {
        let moved = |d: i32, k: usize| {
            if d == 0 {
                0
            } else {
                d.wrapping_add(shift[k] as i32)
            }
        };
        for i in 0..count {
            // SAFETY: payload i < count (the caller's contract), plain data.
            let p = unsafe { &mut *first.add(i) };
            p.tensors = moved(p.tensors, 0);
            p.scalars = moved(p.scalars, 1);
            p.fanin = moved(p.fanin, 2);
        }
    }

    /// For a run in the mirror alone (no speculation) whose slots `[0, n)`
    /// are each bound to payload i and descriptor i of the mirror, as a
    /// claim binds them (one branch-free pass): what the slot states'
    /// `payload` and `task` offsets move by in the image `c`. Both strides
    /// are the same in the mirror and the image, so the move is one
    /// constant per field: the change of the distance between the slot
    /// segment and the payload (descriptor) segment. None: not bound so
    /// (the gather binds them for the image whatever they hold).
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    pub(super) fn slot_shifts(&self, m: &Mapping, c: &lrt_v2_segments, n: u64) -> Option<[i64; 2]> {
        if self.spec.is_some() {
            return None;
        }
        let ms = &self.seg;
        let first: *const lrt_v2_task_slot_state = Self::at(m, ms.slot_states);
        let mut good = true;
        for i in 0..n as usize {
            // SAFETY: slot state i < n <= W of the mirror, plain data.
            let st = unsafe { &*first.add(i) };
            let (payload, task) = slot_binding(ms, i as u64);
            good &= (i64::from(st.payload) == payload) & (i64::from(st.task) == task);
        }
        good.then(|| {
            let (image, mirror) = (slot_binding(c, 0), slot_binding(ms, 0));
            [image.0 - mirror.0, image.1 - mirror.1]
        })
    }

    /// The direct route's slots `[0, n)`, shipped straight from the mirror:
    /// each payload's bound region offsets and each slot state's
    /// `payload`/`task` moved in place by `shifts` (`mirror_shifts` and
    /// `slot_shifts` of the image of `n` tasks: every region and binding
    /// checked) until the returned guard is dropped, which moves them back.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    pub(super) fn move_slots<'m>(
        &self,
        m: &'m Mapping,
        n: u64,
        shifts: MoveShifts,
    ) -> MovedSlots<'m> {
        debug_assert!(self.spec.is_none() && n <= self.window);
        let moved = MovedSlots {
            payloads: Self::at(m, self.seg.payloads),
            states: Self::at(m, self.seg.slot_states),
            count: n as usize,
            shifts,
            _mirror: std::marker::PhantomData,
        };
        // SAFETY: slots [0, n) of the mirror (n <= W), plain data; the
        // maker's exclusive borrow for the upload keeps every other access
        // out.
        unsafe { moved.shift(1) };
        moved
    }

    /// Re-takes payload i's three region offsets for the image `c` in
    /// `out` (already copied there), after checking them against the run's
    /// pools (`parts`) from where the payload is on the host (`src`).
    fn retake_payload(
        parts: &[PoolPart; 3],
        c: &lrt_v2_segments,
        out: *mut u8,
        src: usize,
        i: u64,
    ) -> Result<()> {
        let at = c.payloads + i * Seg::Payloads.size();
        // SAFETY: payload i of the image in `out` (the caller's contract),
        // 64-aligned, plain data.
        let p = unsafe { &mut *out.add(at as usize).cast::<lrt_v2_task_payload>() };
        let fields = [
            (p.tensors, p.tensor_count),
            (p.scalars, p.scalar_count),
            (p.fanin, p.fanin_count),
        ];
        let mut new = [0i32; 3];
        for (k, (delta, count)) in fields.into_iter().enumerate() {
            let off = 12 + 4 * k as u64;
            new[k] = match parts[k].locate(i, src + off as usize, delta, count)? {
                None => 0,
                // |delta| < image size <= i32::MAX.
                Some(idx) => {
                    let pool = parts[k].pool;
                    (pool.start(c) as i64 + (idx * pool.elem()) as i64 - (at + off) as i64) as i32
                }
            };
        }
        [p.tensors, p.scalars, p.fanin] = new;
        Ok(())
    }
}

/// Checks slot `i`'s payload `p`, where the host holds it, against the
/// run's pools `parts` (`PoolPart::check` for each of its three regions).
pub(super) fn check_payload(parts: &[PoolPart; 3], i: u64, p: &lrt_v2_task_payload) -> Result<()> {
    // The payload's offset fields: tensors @12, scalars @16, fanin @20.
    let field = p as *const lrt_v2_task_payload as usize + 12;
    let fields = [
        (p.tensors, p.tensor_count),
        (p.scalars, p.scalar_count),
        (p.fanin, p.fanin_count),
    ];
    for (k, (delta, count)) in fields.into_iter().enumerate() {
        parts[k].check(i, field + 4 * k, delta, count)?;
    }
    Ok(())
}

/// One pool of a run as the host holds it (`V2Run::pool_parts`).
#[derive(Clone, Copy, Debug)]
pub(super) struct PoolPart {
    pool: Pool,
    /// The image buffer's pool (0: no speculation), holding `[0, split)`.
    image: usize,
    split: u64,
    /// The mirror's pool, holding `[split, used)` at the same positions.
    mirror: usize,
    used: u64,
    /// log2 of the element size (a power of two: 4, 128 or 8 bytes).
    shift: u32,
    /// The most elements one task's region holds.
    cap: u64,
}

/// The part `PoolPart::in_whole_part` checks against, its figures taken
/// once (`check_regions`' pass over a whole run).
#[derive(Clone, Copy, Debug)]
pub(super) struct WholePart {
    base: usize,
    hi: u64,
    shift: u32,
    cap: u64,
}

impl WholePart {
    /// `PoolPart::in_whole_part`'s rule, without branches: a negative count
    /// is above every cap as u32; `off >> shift` (shift >= 2) plus a count
    /// below 2^32 cannot overflow.
    #[inline(always)]
    fn holds(&self, field: usize, delta: i32, count: i32) -> bool {
        let n = u64::from(count as u32);
        let off = ((field as isize).wrapping_add(delta as isize) as usize).wrapping_sub(self.base);
        let bound =
            (off & ((1usize << self.shift) - 1) == 0) & ((off >> self.shift) as u64 + n <= self.hi);
        (n <= self.cap) & (((delta == 0) & (n == 0)) | ((delta != 0) & bound))
    }
}

impl WholePart {
    /// Whether every one of the `n` payloads from `first` on holds its three
    /// regions (`holds`): by AVX2 lanes where the CPU has them and they
    /// decide exactly (`Lanes`), else one payload at a time in 32-bit lanes
    /// (`all_hold_scalar`): each field's distance to its pool, `a = field -
    /// base`, is linear in the slot and checked once to fit an i32 (else
    /// false: the caller's payload-by-payload walk decides), and a region's
    /// offset from the pool, `a + delta`, is taken in i32 with its overflow
    /// rejected (every good offset is below the pool's bytes, < 2^31).
    ///
    /// # Safety
    /// `first` points to `n` consecutive readable payloads.
    unsafe fn all_hold(
        whole: &[WholePart; 3],
        first: *const lrt_v2_task_payload,
        n: usize,
    ) -> bool {
        if n == 0 {
            return true;
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            if let Some(lanes) = Lanes::of(whole, first, n) {
                // SAFETY: the caller's contract; AVX2 is there (detected
                // just above).
                return unsafe { lanes.all_hold_avx2(first, n) };
            }
        }
        // SAFETY: the caller's contract.
        unsafe { Self::all_hold_scalar(whole, first, n) }
    }

    /// `all_hold` one payload at a time (where the lanes do not decide).
    ///
    /// # Safety
    /// `first` points to `n > 0` consecutive readable payloads.
    unsafe fn all_hold_scalar(
        whole: &[WholePart; 3],
        first: *const lrt_v2_task_payload,
        n: usize,
    ) -> bool {
        let size = size_of::<lrt_v2_task_payload>() as i64;
        let mut a0 = [0i32; 3];
        for (k, w) in whole.iter().enumerate() {
            let a = (first as usize + 12 + 4 * k) as i64 - w.base as i64;
            let last = a + size * (n as i64 - 1);
            match (i32::try_from(a), i32::try_from(last)) {
                (Ok(a), Ok(_)) => a0[k] = a,
                _ => return false,
            }
        }
        let lane = whole.map(|w| {
            (
                ((1u32 << w.shift) - 1),
                w.shift,
                w.hi.min(u64::from(u32::MAX)) as u32,
                w.cap as u32,
            )
        });
        let holds = |k: usize, a: i32, delta: i32, count: i32| {
            let (mask, shift, hi, cap) = lane[k];
            let v = a.wrapping_add(delta);
            let no_overflow = ((a ^ v) & (delta ^ v)) >= 0;
            let (off, n) = (v as u32, count as u32);
            let bound =
                (v >= 0) & no_overflow & (off & mask == 0) & ((off >> shift).wrapping_add(n) <= hi);
            (n <= cap) & (((delta == 0) & (n == 0)) | ((delta != 0) & bound))
        };
        let mut good = true;
        for i in 0..n {
            // SAFETY: payload i < n (the caller's contract).
            let p = unsafe { &*first.add(i) };
            // In range for every i < n (checked above).
            let step = (size * i as i64) as i32;
            good &= holds(0, a0[0] + step, p.tensors, p.tensor_count)
                & holds(1, a0[1] + step, p.scalars, p.scalar_count)
                & holds(2, a0[2] + step, p.fanin, p.fanin_count);
        }
        good
    }
}

/// `WholePart::all_hold`'s rule for one payload in four 32-bit lanes, one
/// per pool in the order of its fields (tensors, scalars, fanin) and a
/// fourth that always holds: a payload's words 0..4 are its counts (and
/// the tensors' offset), words 3..7 its offsets (and a padding word), so
/// two 16-byte loads put each count beside its offset. The figures are
/// taken once per run, and only where the lanes decide exactly (`of`).
///
/// Per lane, with `a = field - base` (the field's distance to its pool,
/// below 0: every pool lies after the payloads), `off = a + delta` taken
/// mod 2^32, and an unbound region (`delta == 0 && count == 0`) read as
/// `off = 0`: the region holds iff `count <= cap`, `off` is on an element
/// and `off / elem + count <= hi`. Exact when `bytes - a < 2^31` for every
/// slot (`bytes = hi * elem`): a true offset below 0 is then above `bytes`
/// mod 2^32, and a bound region's offset from a field with `delta == 0` is
/// `a < 0`. Over a run the three conditions are a maximum of the counts,
/// a maximum of the ends and an OR of the low bits, compared once at the
/// end (a count above its cap fails the run whatever its end wrapped to).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
struct Lanes {
    /// `a` of payload 0's fields (0 in the fourth lane).
    a: [i32; 4],
    /// `elem - 1`, log2 `elem`, `hi`, `cap` (0, 0, MAX, MAX in the fourth).
    mask: [u32; 4],
    shift: [u32; 4],
    hi: [u32; 4],
    cap: [u32; 4],
}

#[cfg(target_arch = "x86_64")]
impl Lanes {
    /// The lanes for the `n > 0` payloads from `first` on, or None where
    /// they would not decide exactly (`Lanes`); the scalar pass decides
    /// then.
    fn of(whole: &[WholePart; 3], first: *const lrt_v2_task_payload, n: usize) -> Option<Lanes> {
        let size = size_of::<lrt_v2_task_payload>() as i64;
        let mut l = Lanes {
            a: [0; 4],
            mask: [0; 4],
            shift: [0; 4],
            hi: [u32::MAX; 4],
            cap: [u32::MAX; 4],
        };
        for (k, w) in whole.iter().enumerate() {
            let a = (first as usize + 12 + 4 * k) as i64 - w.base as i64;
            let last = a + size * (n as i64 - 1);
            let bytes = i64::try_from(w.hi.checked_mul(1 << w.shift)?).ok()?;
            if last >= 0 || bytes - a >= 1 << 31 {
                return None;
            }
            l.a[k] = a as i32;
            l.mask[k] = (1u32 << w.shift) - 1;
            l.shift[k] = w.shift;
            l.hi[k] = w.hi as u32;
            l.cap[k] = u32::try_from(w.cap).ok()?;
        }
        Some(l)
    }

    /// `WholePart::all_hold` by these lanes, two payloads per 256-bit
    /// register (an odd last one twice).
    ///
    /// # Safety
    /// `first` points to `n > 0` consecutive readable payloads, the lanes
    /// are `of(.., first, n)`'s, and the CPU has AVX2.
    #[target_feature(enable = "avx2")]
    unsafe fn all_hold_avx2(&self, first: *const lrt_v2_task_payload, n: usize) -> bool {
        use std::arch::x86_64::*;
        let size = size_of::<lrt_v2_task_payload>();
        // SAFETY: every load reads 16 bytes at offset 0 or 12 of a payload
        // i < n (192 bytes each, the caller's contract); the rest is
        // register arithmetic, AVX2 being there (the caller's contract).
        unsafe {
            let both = |x: [u32; 4]| {
                let h = _mm_loadu_si128(x.as_ptr().cast());
                _mm256_set_m128i(h, h)
            };
            let a_both = both(self.a.map(|a| a as u32));
            let (mask, shift) = (both(self.mask), both(self.shift));
            let zero = _mm256_setzero_si256();
            let (mut ends, mut counts, mut low) = (zero, zero, zero);
            let mut pair = |a: __m256i, lo: *const u8, hi: *const u8| {
                let count = _mm256_loadu2_m128i(hi.cast(), lo.cast());
                let delta = _mm256_loadu2_m128i(hi.add(12).cast(), lo.add(12).cast());
                let unbound = _mm256_cmpeq_epi32(_mm256_or_si256(delta, count), zero);
                let off = _mm256_andnot_si256(unbound, _mm256_add_epi32(a, delta));
                low = _mm256_or_si256(low, _mm256_and_si256(off, mask));
                let end = _mm256_add_epi32(_mm256_srlv_epi32(off, shift), count);
                ends = _mm256_max_epu32(ends, end);
                counts = _mm256_max_epu32(counts, count);
            };
            let base = first.cast::<u8>();
            // Payload i's lanes are a_both + i * size (in range: `of`).
            let step = _mm256_set_epi32(
                size as i32,
                size as i32,
                size as i32,
                size as i32,
                0,
                0,
                0,
                0,
            );
            let mut a = _mm256_add_epi32(a_both, step);
            let two = _mm256_set1_epi32(2 * size as i32);
            let mut i = 0;
            while i + 1 < n {
                pair(a, base.add(i * size), base.add((i + 1) * size));
                a = _mm256_add_epi32(a, two);
                i += 2;
            }
            if i < n {
                let last = _mm256_add_epi32(a_both, _mm256_set1_epi32((i * size) as i32));
                pair(last, base.add(i * size), base.add(i * size));
            }
            let within = |got: __m256i, bound: __m256i| {
                _mm256_cmpeq_epi32(_mm256_min_epu32(got, bound), got)
            };
            let good = _mm256_and_si256(
                _mm256_and_si256(within(ends, both(self.hi)), within(counts, both(self.cap))),
                _mm256_cmpeq_epi32(low, zero),
            );
            _mm256_movemask_epi8(good) == -1
        }
    }
}

impl PoolPart {
    /// The whole part's figures (`in_whole_part`).
    fn whole(&self) -> WholePart {
        let (base, hi) = match self.image {
            0 => (self.mirror, self.used),
            image => (image, self.split),
        };
        WholePart {
            base,
            hi,
            shift: self.shift,
            cap: self.cap,
        }
    }

    /// Whether the offset `delta` at host address `field` names a region of
    /// `count` elements inside the part that holds every region of a run
    /// claimed in place (the image buffer's `[0, split)`) or of a run with
    /// no speculation (the mirror's `[0, used)`), or is unbound with no
    /// elements: the common case, in arithmetic (`locate` is the full rule
    /// and its message).
    #[inline]
    fn in_whole_part(&self, field: usize, delta: i32, count: i32) -> bool {
        self.whole().holds(field, delta, count)
    }

    /// Slot `i`'s region (offset `delta` at host address `field`, `count`
    /// elements) as `locate` rules, without finding its index.
    #[inline]
    pub(super) fn check(&self, i: u64, field: usize, delta: i32, count: i32) -> Result<()> {
        if self.in_whole_part(field, delta, count) {
            return Ok(());
        }
        self.locate(i, field, delta, count).map(|_| ())
    }

    /// The element index in the pool of slot `i`'s region, from the offset
    /// `delta` stored at host address `field`: `None` when unbound with a
    /// zero count. The region must lie whole in one part, on an element,
    /// with its count inside `[0, cap]`, else `InvalidArgument`.
    #[inline]
    fn locate(&self, i: u64, field: usize, delta: i32, count: i32) -> Result<Option<u64>> {
        let n = count as u64;
        if count >= 0 && n <= self.cap {
            match rel_decode(field, delta) {
                None if count == 0 => return Ok(None),
                None => {}
                Some(target) => {
                    // The mappings are disjoint and each part lies inside
                    // its own, so a target matches at most one of them.
                    let find = |base: usize, lo: u64, hi: u64| {
                        let off = target.checked_sub(base)?;
                        let idx = (off >> self.shift) as u64;
                        let on_elem = off & ((1usize << self.shift) - 1) == 0;
                        (on_elem && idx >= lo && idx + n <= hi).then_some(idx)
                    };
                    let found = match self.image {
                        0 => None,
                        base => find(base, 0, self.split),
                    };
                    if let Some(idx) = found.or_else(|| find(self.mirror, self.split, self.used)) {
                        return Ok(Some(idx));
                    }
                }
            }
        }
        let what = match self.pool {
            Pool::Fanin => "fanin",
            Pool::Tensors => "tensor",
            Pool::Scalars => "scalar",
        };
        Err(Error::invalid_argument(format!(
            "slot {i}: the {what} region (offset {delta}, count {count}) is not inside the {} \
             used elements of its pool (or its count is outside [0, {}])",
            self.used, self.cap
        )))
    }
}

impl MakerV2 {
    /// The compact image the next upload ships, for the run as it stands
    /// (N = `current_task_index`, the pools as used).
    pub fn image_segments(&self) -> lrt_v2_segments {
        let n = V2Run::current_index(&self.core.mirror).clamp(0, self.core.window as i32) as u64;
        self.run.image_segments(n)
    }

    /// N and the checks every upload makes before anything is copied:
    /// `State` before `begin_run` or with `orch_error_code` latched,
    /// `OutOfRange` for N outside `[0, W]`.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    pub(super) fn live(&self) -> Result<u64> {
        self.core.require_open("v2 upload before v2_begin_run")?;
        let latched = V2Run::orch_error(&self.core.mirror);
        if latched != 0 {
            return Err(Error::state(format!(
                "the orchestrator latched error {latched}: an incomplete graph is not uploaded"
            )));
        }
        let n = V2Run::current_index(&self.core.mirror);
        let window = self.core.window;
        if n < 0 || n as u64 > window {
            return Err(Error::out_of_range(format!(
                "total_tasks (current_task_index) {n} is outside [0, {window}]"
            )));
        }
        Ok(n as u64)
    }

    /// Writes the compact image of the run to `out` (64-aligned, at least
    /// `image_segments().end` bytes), as `upload` would ship it, and
    /// returns its segments: for a host that ships the image itself, and
    /// for measuring the reference's own path. The checks of `upload`
    /// apply; `InvalidArgument` for an unaligned or short `out`.
    pub fn compact_into(&mut self, out: &mut [u8]) -> Result<lrt_v2_segments> {
        let n = self.live()?;
        let need = self.run.image_segments(n).end as usize;
        if out.as_ptr() as usize % 64 != 0 || out.len() < need {
            return Err(Error::invalid_argument(format!(
                "the output buffer must be 64-aligned and hold {need} bytes ({} at {:p})",
                out.len(),
                out.as_ptr()
            )));
        }
        // SAFETY: `out` is a live exclusive slice of at least `need` bytes,
        // so it cannot overlap the maker's mirror or image buffer.
        unsafe {
            self.run
                .compact_into(&self.core.mirror, self.image_start(), n, out.as_mut_ptr())
        }
    }
}

/// The `payload` and `task` offsets of slot state `i` in layout `s` bound
/// to payload i and descriptor i (self-relative, from its fields at +8 and
/// +12). The strides are the same in every layout, so two layouts' bindings
/// differ by one constant per field.
fn slot_binding(s: &lrt_v2_segments, i: u64) -> (i64, i64) {
    let at = (s.slot_states + i * size_of::<lrt_v2_task_slot_state>() as u64) as i64;
    (
        (s.payloads + i * Seg::Payloads.size()) as i64 - (at + 8),
        (s.descriptors + i * Seg::Descriptors.size()) as i64 - (at + 12),
    )
}

/// What the direct route moves a run's slots by (`V2Run::move_slots`): each
/// pool's bound region offsets (tensors, scalars, fanin), the slot states'
/// `payload` and `task`.
#[derive(Clone, Copy, Debug)]
pub(super) struct MoveShifts {
    pub(super) regions: [i64; 3],
    pub(super) slots: [i64; 2],
}

/// The mirror's slots with their offsets moved for the image
/// (`V2Run::move_slots`); dropping it moves them back, so that the mirror
/// holds the same bytes when the upload returns, shipped or not.
pub(super) struct MovedSlots<'m> {
    payloads: *mut lrt_v2_task_payload,
    states: *mut lrt_v2_task_slot_state,
    count: usize,
    shifts: MoveShifts,
    _mirror: std::marker::PhantomData<&'m Mapping>,
}

impl MovedSlots<'_> {
    /// Moves every offset by `sign` x its shift, in 32-bit wrapping
    /// arithmetic (so that -1 undoes +1).
    ///
    /// # Safety
    /// The slots are the mirror's `[0, count)`, writable, with no other
    /// access during the call.
    unsafe fn shift(&self, sign: i64) {
        let k = self.shifts;
        // SAFETY: the caller's contract.
        unsafe { V2Run::shift_payloads(self.payloads, self.count, k.regions.map(|s| sign * s)) };
        let (pay, task) = ((sign * k.slots[0]) as i32, (sign * k.slots[1]) as i32);
        for i in 0..self.count {
            // SAFETY: slot state i < count (the caller's contract).
            let st = unsafe { &mut *self.states.add(i) };
            st.payload = st.payload.wrapping_add(pay);
            st.task = st.task.wrapping_add(task);
        }
    }
}

impl Drop for MovedSlots<'_> {
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    fn drop(&mut self) {
        // SAFETY: the slots `move_slots` moved, in the mirror this guard
        // borrows; the upload still holds the maker exclusively.
        unsafe { self.shift(-1) };
    }
}

/// What the shipped header says that the mirror's does not: no host
/// addresses (the device resolves its arrays itself) and the orchestration
/// done.
pub(super) fn shipped_header(h: &mut lrt_v2_sm_header) {
    h.task_descriptors = std::ptr::null_mut();
    h.task_payloads = std::ptr::null_mut();
    h.slot_states = std::ptr::null_mut();
    h.completion_flags = std::ptr::null_mut();
    h.orchestrator_done = 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `all_hold`'s 32-bit lanes decide as `holds` (the rule in full width)
    /// at the edges: offsets around the pool's ends and off an element,
    /// sums that overflow an i32, counts around the cap and negative.
    #[test]
    fn the_lanes_decide_as_the_full_rule() {
        // SAFETY: plain data, all-zero valid (every region unbound).
        let zero: lrt_v2_task_payload = unsafe { std::mem::zeroed() };
        let payloads = vec![zero; 3];
        let first = payloads.as_ptr();
        let at = first as usize;
        // Pools after the payloads, of 4-, 8- and 128-byte elements.
        let whole =
            [(7, 100u64, 16u64), (3, 40, 16), (2, 300, 1024)].map(|(shift, hi, cap)| WholePart {
                base: at + 4096 + (64 << shift),
                hi,
                shift,
                cap,
            });
        let mut tried = 0;
        for k in 0..3 {
            let w = whole[k];
            let elem = 1i64 << w.shift;
            for slot in 0..3 {
                let field = at + slot * size_of::<lrt_v2_task_payload>() + 12 + 4 * k;
                let to_pool = w.base as i64 - field as i64;
                let end = to_pool + w.hi as i64 * elem;
                let deltas = [
                    0,
                    1,
                    to_pool,
                    to_pool + 1,
                    to_pool - elem,
                    end - elem,
                    end,
                    end - 2 * elem,
                    i32::MAX as i64,
                    i32::MIN as i64,
                    i32::MIN as i64 + to_pool,
                    -(1 << 31) + 4,
                ];
                for delta in deltas.map(|d| d.clamp(i32::MIN as i64, i32::MAX as i64) as i32) {
                    for count in [
                        0,
                        1,
                        2,
                        w.cap as i32,
                        w.cap as i32 + 1,
                        -1,
                        i32::MIN,
                        i32::MAX,
                    ] {
                        let mut p = payloads.clone();
                        let q = &mut p[slot];
                        match k {
                            0 => (q.tensors, q.tensor_count) = (delta, count),
                            1 => (q.scalars, q.scalar_count) = (delta, count),
                            _ => (q.fanin, q.fanin_count) = (delta, count),
                        }
                        // The field as it is in `p`'s own allocation.
                        let field = p.as_ptr() as usize
                            + slot * size_of::<lrt_v2_task_payload>()
                            + 12
                            + 4 * k;
                        let moved = whole.map(|x| WholePart {
                            base: x.base - at + p.as_ptr() as usize,
                            ..x
                        });
                        let full = moved[k].holds(field, delta, count);
                        // SAFETY: three payloads in `p`.
                        let lanes = unsafe { WholePart::all_hold(&moved, p.as_ptr(), 3) };
                        // SAFETY: as above.
                        let scalar = unsafe { WholePart::all_hold_scalar(&moved, p.as_ptr(), 3) };
                        assert_eq!(
                            (lanes, scalar),
                            (full, full),
                            "pool {k} slot {slot} delta {delta} count {count}"
                        );
                        tried += usize::from(full);
                    }
                }
            }
        }
        assert!(tried > 0, "no good region was tried");
    }

    /// Runs of 1 to 9 payloads (pairs and an odd last one), each region
    /// bound well, unbound, or set to an edge of its pool or of the
    /// arithmetic: `all_hold` (the lanes where the CPU has them) and the
    /// scalar pass decide as `holds` over every payload and pool.
    #[test]
    fn the_run_decides_as_each_payload() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        // SAFETY: plain data, all-zero valid (every region unbound).
        let zero: lrt_v2_task_payload = unsafe { std::mem::zeroed() };
        let (mut good, mut bad) = (0, 0);
        for _ in 0..4000 {
            let n = 1 + next(9) as usize;
            let mut p = vec![zero; n];
            // Half the runs only bound well or unbound: some hold.
            let breaks = next(2) == 0;
            let at = p.as_ptr() as usize;
            let whole =
                [(7, 40u64, 32u64), (3, 64, 16), (2, 300, 128)].map(|(shift, hi, cap)| WholePart {
                    base: at + n * size_of::<lrt_v2_task_payload>() + (64 << shift),
                    hi,
                    shift,
                    cap,
                });
            for (slot, q) in p.iter_mut().enumerate() {
                for (k, w) in whole.iter().enumerate() {
                    let field = at + slot * size_of::<lrt_v2_task_payload>() + 12 + 4 * k;
                    let to_pool = w.base as i64 - field as i64;
                    let elem = 1i64 << w.shift;
                    let idx = next(w.hi + 2) as i64 - 1;
                    let count = next(5) as i64;
                    let pick = match next(12) {
                        1..=8 if !breaks => 3,
                        pick => pick,
                    };
                    let (delta, count) = match pick {
                        0 => (0, 0),
                        1 => (0, 1),
                        2 => (to_pool + idx * elem + 1, count),
                        3 => (to_pool + (w.hi as i64 - count) * elem, count),
                        4 => (to_pool + (w.hi as i64 - count + 1) * elem, count),
                        5 => (to_pool + idx * elem, w.cap as i64 + 1),
                        6 => (to_pool + idx * elem, -1),
                        7 => (i32::MIN as i64, 0),
                        8 => (to_pool - elem, 0),
                        _ => (
                            to_pool + idx.clamp(0, (w.hi as i64 - count).max(0)) * elem,
                            count,
                        ),
                    };
                    let (delta, count) = (delta as i32, count as i32);
                    match k {
                        0 => (q.tensors, q.tensor_count) = (delta, count),
                        1 => (q.scalars, q.scalar_count) = (delta, count),
                        _ => (q.fanin, q.fanin_count) = (delta, count),
                    }
                }
            }
            let full = p.iter().enumerate().all(|(slot, q)| {
                let field = at + slot * size_of::<lrt_v2_task_payload>() + 12;
                whole[0].holds(field, q.tensors, q.tensor_count)
                    & whole[1].holds(field + 4, q.scalars, q.scalar_count)
                    & whole[2].holds(field + 8, q.fanin, q.fanin_count)
            });
            // SAFETY: n payloads in `p`.
            let (run, scalar) = unsafe {
                (
                    WholePart::all_hold(&whole, p.as_ptr(), n),
                    WholePart::all_hold_scalar(&whole, p.as_ptr(), n),
                )
            };
            assert_eq!((run, scalar), (full, full), "{n} payloads: {p:?}");
            if full {
                good += 1;
            } else {
                bad += 1;
            }
        }
        assert!(good > 100 && bad > 100, "{good} good runs, {bad} bad");
    }
}
