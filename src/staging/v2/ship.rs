//! Shipping a v2 run: to the maker's own device region (`upload`) or to
//! a destination the caller names per upload (`upload_frame`, for a host
//! whose device region moves or grows between runs), by one of three
//! routes (`Route`):
//!
//! * **one copy**: `[before | compact image | after]` assembled in the
//!   staging buffer (or the image buffer shipped as it is, when the run was
//!   claimed into its image) and shipped in one copy, the reference's own
//!   shape. A frame longer than its room in the staging buffer
//!   (`lrt_maker_config.frame_before` / `frame_after`; only
//!   `upload_frame` accepts one) travels as a copy of its own, straight
//!   from the caller's memory.
//! * **split** (LRT_UPLOAD_AUTO, for a run read from the mirror alone):
//!   the image's per-task part (`[before | header | descriptors |
//!   payloads | slot states | flags]`, `[0, fanin_pool)` of the image) is
//!   gathered into the staging buffer as for the one copy, with every
//!   region checked and every offset re-taken in that same pass over the
//!   lines the orchestrator just wrote, and shipped in one copy; each used
//!   pool (fanin ids, tensors, scalars: position-independent bytes, most
//!   of a large image) is copied straight from the mirror to its place; the
//!   frame after travels on its own. At most five copies, and the device
//!   gets the bytes the one copy ships except the padding after each pool,
//!   which it never reads.
//! * **direct** (as split, for a run with tasks whose regions all pass
//!   the branch-free check and whose slots are bound as a claim binds
//!   them): only the header is gathered (with the frame before); the live
//!   part of each slot segment (descriptors, payloads, slot states, flags)
//!   is copied straight from the mirror, like the pools. The offsets in
//!   them move by one constant each (`V2Run::mirror_shifts`,
//!   `V2Run::slot_shifts`: the distances between segments are all that
//!   differ between the mirror and the image), so they are moved in place
//!   for the copies and back once they are over, failed or not (the guard,
//!   `MovedSlots`). At most ten copies, the padding after each segment not
//!   written.
//!
//! The mirror holds the same bytes when an upload returns, by every route.
//!
//! Why AUTO chooses what it chooses. Every route pays every byte over the
//! device's bandwidth once; they differ by what is gathered and by how many
//! copies pay a fixed latency: the one copy gathers everything; the split
//! route pays one more copy per used pool to gather only the per-task part;
//! the direct route pays one more per live slot segment to gather only the
//! header. AUTO takes the cheapest (`choose_route`) by the
//! cost model (`CostModel`, the core's): the device's own figures, or
//! measured at the maker's first v2 upload into that upload's destination
//! (before anything else is written there), the latency as the median of
//! small copies made where the copies from the mirror go and the gather
//! from the payloads the host just wrote into the warmed staging buffer. A
//! small image (pools of a few KiB) is one framed copy, as the reference
//! ships it, or, on a device whose copies cost tens of nanoseconds (a
//! `memcpy`), direct; a large one skips gathering its pools, and its slots
//! too where copies are cheap. A device whose copy costs microseconds (CUDA
//! from pageable memory) keeps the one copy up to pools of tens of KiB.
//!
//! For a run the host wrote itself, the route is planned when the host
//! says its pools' use (`MakerV2::plan_route`, from `set_pool_use`): on
//! the lines the orchestrator just wrote, in code it just ran, rather
//! than after the reference's own steps between the two have pushed them
//! out of the caches (a small image's upload is then dominated by those
//! misses, not by its bytes). The upload takes the plan when the run,
//! its pools and its frames are those planned for and checks again before
//! any copy. What else a small upload does about cold lines (the staging
//! lines asked for at planning, the upload's code kept together) is
//! `prefetch.rs`'s.
//!
//! Every check an upload makes runs before its first copy; a rejected
//! upload copies nothing and leaves the run open.
use std::mem::size_of;
use std::time::Instant;

use super::super::abi::{lrt_upload_policy, lrt_upload_report};
use super::super::maker::{device_kind, elapsed_ns, ns_between, CostModel, Gathered};
use super::super::mirror::Mapping;
use super::super::prefetch;
use super::image::{shipped_header, Gather, MoveShifts};
use super::layout::lrt_v2_sm_header;
use super::route::{PlannedRoute, Route};
use super::run::{Pool, Seg, V2Run};
use super::MakerV2;
use crate::{Error, ErrorKind, Result};

/// Where a v2 upload goes, and the caller's bytes around the image.
#[derive(Clone, Copy, Debug)]
pub struct V2Frame<'a> {
    /// Device address of the image (64-aligned).
    pub image: *mut u8,
    /// Bytes the upload may write on the device from `image` on.
    pub room: u64,
    /// Shipped to `image - before.len()`.
    pub before: &'a [u8],
    /// Shipped to `image + image size`.
    pub after: &'a [u8],
}

/// The cheapest of `routes` (route, copies, bytes over the device, bytes
/// gathered) by `model`; a tie keeps the earlier route.
fn choose_route(model: &CostModel, routes: &[(Route, u32, u64, u64)]) -> Route {
    let mut best = (Route::OneCopy, f64::INFINITY);
    for &(route, copies, bytes, gathered) in routes {
        let cost = model.cost(copies, bytes, gathered);
        if cost < best.1 {
            best = (route, cost);
        }
    }
    best.0
}

/// What a route did, once its checks passed.
struct Shipped {
    copies: u32,
    bytes: u64,
    relocate_ns: u64,
    copy_ns: u64,
    path: lrt_upload_policy,
    /// The copies' outcome (the checks passed, so the run is over).
    copied: Result<()>,
}

/// One part of an image shipped by its own copy: `len` bytes from `src` to
/// the image's start + `to` (negative: the frame before it).
type Part = (i64, *const u8, u64);

/// An upload's parts, at most ten, kept inline: an upload allocates
/// nothing.
#[derive(Clone, Copy)]
struct Parts {
    at: [Part; 10],
    len: usize,
}

impl Parts {
    const EMPTY: Parts = Parts {
        at: [(0, std::ptr::null(), 0); 10],
        len: 0,
    };

    fn push(&mut self, p: Part) {
        self.at[self.len] = p;
        self.len += 1;
    }

    fn as_slice(&self) -> &[Part] {
        &self.at[..self.len]
    }
}

impl MakerV2 {
    /// Ships the run to the maker's device region: `[before | compact image
    /// | after]`, the image at `device_image()` (the contract is
    /// `lrt_runtime_maker_v2_upload`'s). `State` before `begin_run`,
    /// with an orchestrator error latched, or on a maker without a region
    /// of its own; `OutOfRange` for N outside `[0, W]`; `InvalidArgument`
    /// for a frame longer than its room or a live payload whose regions are
    /// not inside the used pools: nothing is copied then. `Device` when a
    /// copy fails.
    pub fn upload(&mut self, before: &[u8], after: &[u8]) -> Result<lrt_upload_report> {
        let n = self.live()?;
        let region = &self.core.region;
        if region.base().is_null() {
            return Err(Error::state(
                "this maker has no device region of its own: name the destination with \
                 v2_upload_frame, or lend a region with set_device_image",
            ));
        }
        let (bl, al) = (before.len() as u64, after.len() as u64);
        if bl > self.frame_before || al > self.frame_after {
            return Err(Error::invalid_argument(format!(
                "frames of {bl} and {al} bytes; the maker has room for {} and {}",
                self.frame_before, self.frame_after
            )));
        }
        let frame = V2Frame {
            image: region.image(),
            room: region.need() - region.image_offset() as u64,
            before,
            after,
        };
        self.ship(n, &frame)
    }

    /// Ships the run to `f`: `f.before` at `f.image - f.before.len()`, the
    /// compact image at `f.image`, `f.after` right after it (the contract
    /// is `lrt_runtime_maker_v2_upload_frame`'s). The errors of
    /// `upload` (but a frame may be longer than its room), and
    /// `InvalidArgument` for a NULL or unaligned image address or a frame
    /// before that would start below address 0, `OutOfRange` when the image
    /// and the frame after do not fit `f.room`.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    pub fn upload_frame(&mut self, f: &V2Frame<'_>) -> Result<lrt_upload_report> {
        let n = self.live()?;
        if f.image.is_null() || f.image as usize % 64 != 0 {
            return Err(Error::invalid_argument(format!(
                "the image's device address {:p} is not a non-NULL multiple of 64",
                f.image
            )));
        }
        if (f.image as usize) < f.before.len() {
            return Err(Error::invalid_argument(format!(
                "a frame of {} bytes before the image at {:p} would start below address 0",
                f.before.len(),
                f.image
            )));
        }
        let image = self.run.image_segments(n).end;
        let need = image + f.after.len() as u64;
        if f.room < need {
            return Err(Error::out_of_range(format!(
                "the destination has {} bytes from the image on; this run needs {need} (an \
                 image of {image} and {} bytes after it)",
                f.room,
                f.after.len()
            )));
        }
        self.ship(n, f)
    }

    /// The checks every route relies on, the route, the copies; then the
    /// run is over (shipped or failed) and remembered for the next guess.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    fn ship(&mut self, n: u64, f: &V2Frame<'_>) -> Result<lrt_upload_report> {
        let t0 = Instant::now();
        let in_place = self.run.exact(n);
        let frames = (f.before.len() as u64, f.after.len() as u64);
        let planned = self.planned.take();
        self.last_frames = frames;
        let route = if self.routed_by_model() {
            if !self.measured {
                // The measurement writes to the destination: only once
                // every region is known good.
                self.run
                    .check_regions(&self.core.mirror, std::ptr::null_mut(), n)?;
                self.measure_model(f, n);
            }
            match planned {
                Some(p) if p.n == n && p.used == self.run.used && p.frames == frames => p.route,
                _ => self.cheapest_route(n, frames),
            }
        } else {
            Route::OneCopy
        };
        let shipped = self.ship_gathered(n, f, in_place, route, t0)?;
        self.run.remember(n);
        // Shipped or failed, the run is over for the device and the image.
        self.core.end_upload(f.image, shipped.copied.is_ok());
        shipped.copied?;
        Ok(lrt_upload_report {
            total_tasks: n as i32,
            copies: shipped.copies,
            bytes: shipped.bytes,
            zero_ns: self.core.last_zero_ns,
            relocate_ns: shipped.relocate_ns,
            copy_ns: shipped.copy_ns,
            path: shipped.path,
        })
    }

    /// AUTO's model for v2, measured once, into this upload's destination
    /// (the image and the frame after it are written next anyway), with the
    /// direct route's copies from the mirror as the small copies whose
    /// latency counts.
    fn measure_model(&mut self, f: &V2Frame<'_>, n: u64) {
        let c = self.run.image_segments(n);
        let len = c.end + f.after.len() as u64;
        let ms = self.run.segments();
        let spots: Vec<(u64, u64)> = self
            .mirror_parts(n, true)
            .as_slice()
            .iter()
            .map(|&(to, src, _)| (to as u64, src as u64 - self.core.mirror.as_ptr() as u64))
            .collect();
        // The gather figure from the payloads the host just wrote (most of
        // what a gather reads).
        let gathered = Gathered::HostWritten {
            from: ms.payloads,
            bytes: n * Seg::Payloads.size(),
        };
        // SAFETY: the destination holds `len <= f.room` writable bytes from
        // f.image on (checked by the caller), not yet meaningful, and every
        // spot is inside the image there and inside the mirror; the
        // staging buffer is distinct from the mirror.
        unsafe {
            self.core.measure_model(
                f.image,
                len as usize,
                &spots,
                Some((&self.staging, gathered)),
            )
        };
        self.measured = true;
    }

    /// The copies straight from the mirror of a split route: the live part
    /// of each slot segment (with `slots`: the direct route) and the used
    /// part of each pool, empty ones left out.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    fn mirror_parts(&self, n: u64, slots: bool) -> Parts {
        let (ms, c, u) = (
            self.run.segments(),
            self.run.image_segments(n),
            self.run.used,
        );
        let mut parts = Parts::EMPTY;
        let mut push = |to: u64, from: u64, len: u64| {
            if len > 0 {
                parts.push((
                    to as i64,
                    V2Run::at::<u8>(&self.core.mirror, from).cast_const(),
                    len,
                ));
            }
        };
        if slots {
            for seg in [Seg::Descriptors, Seg::Payloads, Seg::SlotStates, Seg::Flags] {
                push(seg.start(&c), seg.start(&ms), n * seg.size());
            }
        }
        for pool in Pool::ALL {
            push(pool.start(&c), pool.start(&ms), pool.of(&u) * pool.elem());
        }
        parts
    }

    /// The route that costs least by the model (module docs): every route
    /// pays the bytes it ships over the device's bandwidth; the one copy
    /// gathers the whole image (and a staged frame after); the split route
    /// gathers the per-task part and pays a copy per used pool (and the
    /// frame after travels on its own); the direct route gathers the header
    /// alone and pays a copy per live slot segment too.
    fn cheapest_route(&self, n: u64, (bl, al): (u64, u64)) -> Route {
        let c = self.run.image_segments(n);
        let (own, staged) = self.frames_apart(bl, al);
        let frames = bl + al;
        let before_staged = bl <= self.frame_before;
        let apart = u32::from(!before_staged) + u32::from(al > 0);
        let staged_before = if before_staged { bl } else { 0 };
        // The direct route's copies from the mirror; the split route's are
        // those into the pools.
        let direct = self.mirror_parts(n, true);
        let (mut pool_copies, mut pool_bytes, mut slot_bytes) = (0, 0, 0);
        for &(to, _, len) in direct.as_slice() {
            if to as u64 >= c.fanin_pool {
                pool_copies += 1;
                pool_bytes += len;
            } else {
                slot_bytes += len;
            }
        }
        let header = size_of::<lrt_v2_sm_header>() as u64;
        let routes = [
            (Route::OneCopy, 1 + own, c.end + frames, c.end + staged),
            (
                Route::Split,
                1 + pool_copies + apart,
                c.fanin_pool + pool_bytes + frames,
                c.fanin_pool + staged_before,
            ),
            (
                Route::Direct,
                1 + direct.len as u32 + apart,
                header + slot_bytes + pool_bytes + frames,
                header + staged_before,
            ),
        ];
        // A run without tasks has no slot to ship from the mirror.
        let usable = if n > 0 { 3 } else { 2 };
        choose_route(&self.core.model, &routes[..usable])
    }

    /// The route of the run the host just declared written
    /// (`set_pool_use`), for the upload to take when the run, its pools and
    /// its frames are still those planned for (the frames of the last
    /// upload): chosen and, for the direct route, checked now, on the lines
    /// the orchestrator just wrote; a run whose check fails now is planned
    /// for the split route. None before the model is measured, outside
    /// AUTO, or for a run claimed through the maker. The upload checks
    /// again before its copies (the host may write until then): the plan
    /// saves it the choice and finds the lines it reads in the caches.
    pub(super) fn plan_route(&self) -> Option<PlannedRoute> {
        if !self.measured || !self.routed_by_model() {
            return None;
        }
        let n = self.live().ok()?;
        // (A run without tasks is never routed direct.)
        let route = match self.cheapest_route(n, self.last_frames) {
            Route::Direct if self.direct_shifts(n).is_none() => Route::Split,
            route => route,
        };
        // The lines of the staging buffer the upload writes first: the
        // frame before and the header (or the image gathered after it).
        let (bl, at) = (self.last_frames.0 as usize, self.stage_off as usize);
        let staged = self.staging.as_ptr().wrapping_add(at);
        prefetch::ahead_write(staged.wrapping_sub(bl.min(at)), bl.min(at));
        prefetch::ahead_write(staged, size_of::<lrt_v2_sm_header>());
        Some(PlannedRoute {
            n,
            used: self.run.used,
            frames: self.last_frames,
            route,
        })
    }

    /// Whether this run's route is AUTO's choice by the model: a run read
    /// from the mirror alone (no speculation, so not claimed in place);
    /// any other ships in one copy.
    fn routed_by_model(&self) -> bool {
        self.core.policy == lrt_upload_policy::LRT_UPLOAD_AUTO && self.run.spec.is_none()
    }

    /// For the one copy: how many frames travel on their own (longer than
    /// their room in the staging buffer), and the bytes of those staged.
    fn frames_apart(&self, bl: u64, al: u64) -> (u32, u64) {
        let mut own = 0;
        let mut staged = 0;
        for (len, room) in [(bl, self.frame_before), (al, self.frame_after)] {
            if len > room {
                own += 1;
            } else {
                staged += len;
            }
        }
        (own, staged)
    }

    /// Copies `parts` to the image at `image` in order, stopping at the
    /// first failure; returns the copies made and their outcome.
    ///
    /// # Safety
    /// Every part's source is readable for its length, and the device is
    /// writable at every part's destination (the frame's contract).
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    unsafe fn copy_parts(&self, image: *mut u8, parts: &[Part]) -> (u32, Result<()>) {
        for (k, &(to, src, len)) in parts.iter().enumerate() {
            let dst = image.wrapping_offset(to as isize);
            // SAFETY: the caller's contract.
            if let Err(e) = unsafe { self.core.device.copy_to(dst, src, len as usize) } {
                let e = Error::new(
                    device_kind(&e, ErrorKind::Device),
                    format!(
                        "copy {} of {} ({len} bytes) of the v2 image to the device failed: {e}",
                        k + 1,
                        parts.len()
                    ),
                );
                return (k as u32 + 1, Err(e));
            }
        }
        (parts.len() as u32, Ok(()))
    }

    /// Every route (module docs); a split one only for a run read from the
    /// mirror alone. The regions are checked as the image is gathered (or,
    /// for the direct route, before the slots are moved in the mirror); a
    /// bad one is `InvalidArgument` before any copy.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    fn ship_gathered(
        &mut self,
        n: u64,
        f: &V2Frame<'_>,
        in_place: bool,
        route: Route,
        t0: Instant,
    ) -> Result<Shipped> {
        // The direct route only when every region holds and every slot is
        // bound as a claim binds it (branch-free passes); else the per-task
        // part is gathered (which names a bad region).
        let direct = match route {
            Route::Direct => self.direct_shifts(n),
            _ => None,
        };
        let split = route != Route::OneCopy;
        let b = self.image_start();
        // A run claimed in place is in the image buffer (`exact` holds only
        // with one); any other is gathered into the staging buffer.
        let (buf, pins) = match (in_place, &self.image_buf) {
            (true, Some((buf, pins))) => (buf, *pins),
            _ => (&self.staging, self.staging_pins),
        };
        let at = self.stage_off as usize;
        let out = buf.as_ptr().wrapping_add(at);
        let seg = if in_place || direct.is_some() {
            if in_place {
                self.run.check_regions(&self.core.mirror, b, n)?;
            }
            // SAFETY: the buffer's image starts with room for the header
            // (64-aligned, distinct from the mirror).
            unsafe { stage_header(&self.core.mirror, out) };
            self.run.image_segments(n)
        } else if split {
            // SAFETY: as below, for the image's first c.fanin_pool bytes.
            unsafe {
                self.run
                    .compact(&self.core.mirror, b, n, out, Gather::PerTask)
            }?
        } else {
            // SAFETY: the staging buffer holds stage_off + the reference's
            // mirror size + frame_after bytes, no compact image is larger
            // than that mirror, and stage_off is 64-aligned in the
            // page-aligned mapping; it is distinct from the mirror and the
            // image buffer.
            unsafe { self.run.compact_into(&self.core.mirror, b, n, out) }?
        };
        // The gathered part: the whole image, its per-task part, or its
        // header.
        let gathered = match (direct, split) {
            (Some(_), _) => size_of::<lrt_v2_sm_header>() as u64,
            (None, true) => seg.fanin_pool,
            (None, false) => seg.end,
        } as usize;
        // Frames that fit their rooms join the gathered copy (the frame
        // after only when the whole image is gathered: it follows the
        // pools); a longer one is a part of its own.
        let (bl, al) = (f.before.len(), f.after.len());
        let staged_before = bl as u64 <= self.frame_before;
        let staged_after = !split && al as u64 <= self.frame_after;
        let start = at - if staged_before { bl } else { 0 };
        let end = at + gathered + if staged_after { al } else { 0 };
        // SAFETY: a staged frame fits its room in the buffer (checked just
        // above); the caller's slices do not overlap the maker's buffers.
        unsafe {
            let base = buf.as_ptr();
            if staged_before {
                std::ptr::copy_nonoverlapping(f.before.as_ptr(), base.add(start), bl);
            }
            if staged_after {
                std::ptr::copy_nonoverlapping(f.after.as_ptr(), base.add(at + gathered), al);
            }
        }
        let mut parts = Parts::EMPTY;
        if !staged_before {
            parts.push((-(bl as i64), f.before.as_ptr(), bl as u64));
        }
        parts.push((
            start as i64 - at as i64,
            buf.as_ptr().wrapping_add(start).cast_const(),
            (end - start) as u64,
        ));
        if split {
            for &p in self.mirror_parts(n, direct.is_some()).as_slice() {
                parts.push(p);
            }
        }
        if !staged_after && al > 0 {
            parts.push((seg.end as i64, f.after.as_ptr(), al as u64));
        }
        let t1 = Instant::now();
        let relocate_ns = ns_between(t0, t1);
        // Pinned as far as the runs use it, grown to the next power of two
        // of bytes so that a steady workload pins once.
        let pin_end = end.next_power_of_two().min(buf.len());
        let core = &mut self.core;
        core.pins.ensure(pins, &core.device, 0, pin_end);
        // The direct route's slots moved for the image until the copies
        // are made, and moved back whatever they did (the guard's drop).
        let moved = direct.map(|k| self.run.move_slots(&self.core.mirror, n, k));
        // SAFETY: the parts lie inside the buffer, the mirror's live slots
        // and used pools or the caller's frames; the destination holds the
        // frame before below f.image and the image and the frame after
        // from it on (the frame's contract).
        let (copies, copied) = unsafe { self.copy_parts(f.image, parts.as_slice()) };
        drop(moved);
        Ok(Shipped {
            copies,
            bytes: parts.as_slice().iter().map(|p| p.2).sum(),
            relocate_ns,
            copy_ns: elapsed_ns(t1),
            path: if split {
                lrt_upload_policy::LRT_UPLOAD_BOUNDED
            } else {
                lrt_upload_policy::LRT_UPLOAD_COMPACT
            },
            copied,
        })
    }

    /// The direct route's moves for a run of `n > 0` tasks read from the
    /// mirror alone: None unless every region holds (`mirror_shifts`) and
    /// every slot is bound as a claim binds it (`slot_shifts`).
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    fn direct_shifts(&self, n: u64) -> Option<MoveShifts> {
        let (m, c) = (&self.core.mirror, self.run.image_segments(n));
        let parts = self.run.pool_parts(m, std::ptr::null_mut());
        Some(MoveShifts {
            regions: self.run.mirror_shifts(m, &parts, &c, n)?,
            slots: self.run.slot_shifts(m, &c, n)?,
        })
    }
}

/// Writes the mirror's header to `out` as it ships: its pointers NULL,
/// `orchestrator_done` 1.
///
/// # Safety
/// `out` is 64-aligned, writable for the header's 256 bytes, and does not
/// overlap the mirror.
#[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
unsafe fn stage_header(m: &Mapping, out: *mut u8) {
    // SAFETY: the caller's contract; every bit pattern is a valid header.
    unsafe {
        std::ptr::copy_nonoverlapping(
            V2Run::header(m).cast::<u8>(),
            out,
            size_of::<lrt_v2_sm_header>(),
        );
        shipped_header(&mut *out.cast::<lrt_v2_sm_header>());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::CopyCost;

    fn model(latency_ns: f64, gather_bytes_per_ns: f64) -> CostModel {
        CostModel {
            copy: CopyCost {
                latency_ns,
                bytes_per_ns: 10.0,
            },
            gather_bytes_per_ns,
        }
    }

    /// A 100 kB image: 80 kB of pools in one, 20 kB of per-task part of
    /// which 19 kB live in four segments (the direct route's four more
    /// copies), the split routes leaving out 1 kB of padding.
    fn choose(m: &CostModel, tasks: bool) -> Route {
        let routes = [
            (Route::OneCopy, 1, 100_000, 100_000),
            (Route::Split, 4, 99_000, 20_000),
            (Route::Direct, 8, 98_000, 256),
        ];
        choose_route(m, &routes[..if tasks { 3 } else { 2 }])
    }

    /// Each route is the cheapest somewhere: dear copies keep the one
    /// copy; copies dearer than the per-task part's gather but cheaper
    /// than the pools' keep the per-task part gathered; cheap copies ship
    /// everything but the header from the mirror, unless the run has no
    /// task.
    #[test]
    fn each_route_wins_where_the_model_says() {
        assert_eq!(choose(&model(1e6, 10.0), true), Route::OneCopy);
        // Pools' gather 8 us > 3 more copies (3 us); the per-task part's
        // 2 us < 4 more copies (4 us).
        assert_eq!(choose(&model(1000.0, 10.0), true), Route::Split);
        assert_eq!(choose(&model(10.0, 10.0), true), Route::Direct);
        assert_eq!(choose(&model(10.0, 10.0), false), Route::Split);
        // A tie keeps the earlier route.
        let tie = [(Route::OneCopy, 1, 5, 10), (Route::Split, 1, 5, 10)];
        assert_eq!(choose_route(&model(0.0, 1.0), &tie), Route::OneCopy);
    }
}
