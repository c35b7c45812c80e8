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
//! * **split, payloads from the mirror** (as split, for a run with tasks
//!   whose regions all pass the branch-free check): the payloads (most of
//!   the per-task part) are not gathered. Their bound offsets are moved in
//!   place by one shift per pool (`V2Run::mirror_shifts`), the payload
//!   segment is copied straight from the mirror, and the guard
//!   (`MovedPayloads`) moves them back once the copies are over, failed or
//!   not; the rest of the per-task part is gathered and goes in two copies,
//!   before and after the payloads. At most seven copies.
//!
//! The mirror holds the same bytes when an upload returns, by every route.
//!
//! Why AUTO chooses what it chooses. Every route pays every byte over the
//! device's bandwidth once; they differ by what is gathered and by how many
//! copies pay a fixed latency: the one copy gathers everything; the split
//! route pays one more copy per used pool to gather only the per-task part;
//! the payloads from the mirror pay two more copies to leave the payloads
//! out of the gather too. AUTO takes the cheapest (`choose_route`) by the
//! cost model (`CostModel`, the core's): the device's own figures, or
//! measured at the maker's first v2 upload into that upload's destination
//! (before anything else is written there), the latency as the median of
//! small copies made where the copies from the mirror go and the gather
//! from the payloads the host just wrote into the warmed staging buffer. A
//! small image (pools of a few KiB) is one framed copy, as the reference
//! ships it; a large one, whose pools and payloads are most of its bytes,
//! skips gathering them. A device whose copy costs microseconds (CUDA from
//! pageable memory) keeps the one copy up to pools of tens of KiB.
//!
//! Every check an upload makes runs before its first copy; a rejected
//! upload copies nothing and leaves the run open.
use std::mem::size_of;
use std::time::Instant;

use super::super::abi::{lrt_upload_policy, lrt_upload_report};
use super::super::maker::{device_kind, elapsed_ns, CostModel, Gathered};
use super::image::{shipped_header, Gather};
use super::layout::lrt_v2_sm_header;
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

/// The cheapest of `routes` (route, copies, bytes gathered) by `model`:
/// the one copy ships `one_bytes`, a split route `split_bytes` (it leaves
/// out the padding after each pool); the payloads go from the mirror only
/// with `payloads` (a run with tasks). Ties keep the earlier route.
fn choose_route(
    model: &CostModel,
    routes: [(Route, u32, u64); 3],
    one_bytes: u64,
    split_bytes: u64,
    payloads: bool,
) -> Route {
    let mut best = (Route::OneCopy, f64::INFINITY);
    for (route, copies, gathered) in routes {
        if route == Route::SplitPayloads && !payloads {
            continue;
        }
        let bytes = match route {
            Route::OneCopy => one_bytes,
            _ => split_bytes,
        };
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

/// An upload's parts, at most eight, kept inline: an upload allocates
/// nothing.
#[derive(Clone, Copy)]
struct Parts {
    at: [Part; 8],
    len: usize,
}

/// How an upload ships its image (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// `[before | image | after]` in one copy.
    OneCopy,
    /// The per-task part gathered, each used pool from the mirror.
    Split,
    /// As `Split`, and the payloads from the mirror too, their offsets
    /// moved there for the copy and back.
    SplitPayloads,
}

impl Parts {
    const EMPTY: Parts = Parts {
        at: [(0, std::ptr::null(), 0); 8],
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
    fn ship(&mut self, n: u64, f: &V2Frame<'_>) -> Result<lrt_upload_report> {
        let t0 = Instant::now();
        let in_place = self.run.exact(n);
        let auto = self.core.policy == lrt_upload_policy::LRT_UPLOAD_AUTO;
        let route = if auto && !in_place && self.run.spec.is_none() {
            if !self.measured {
                // The measurement writes to the destination: only once
                // every region is known good.
                self.run
                    .check_regions(&self.core.mirror, std::ptr::null_mut(), n)?;
                self.measure_model(f, n);
            }
            self.cheapest_route(n, f)
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
    /// split route's pool parts as the small copies whose latency counts.
    fn measure_model(&mut self, f: &V2Frame<'_>, n: u64) {
        let c = self.run.image_segments(n);
        let len = c.end + f.after.len() as u64;
        let ms = self.run.segments();
        let u = self.run.used;
        // Where the split route's copies from the mirror go (the payloads,
        // each used pool), from where they come.
        let payloads = (n > 0).then_some((c.payloads, ms.payloads));
        let spots: Vec<(u64, u64)> = payloads
            .into_iter()
            .chain(
                Pool::ALL
                    .iter()
                    .filter(|p| p.of(&u) > 0)
                    .map(|p| (p.start(&c), p.start(&ms))),
            )
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

    /// The split route's copies besides the gathered one: the used part of
    /// each pool, straight from the mirror (empty ones left out).
    fn pool_parts_direct(&self, n: u64) -> Parts {
        let (ms, c, u) = (
            self.run.segments(),
            self.run.image_segments(n),
            self.run.used,
        );
        let mut parts = Parts::EMPTY;
        for pool in Pool::ALL {
            let len = pool.of(&u) * pool.elem();
            if len > 0 {
                parts.push((
                    pool.start(&c) as i64,
                    V2Run::at::<u8>(&self.core.mirror, pool.start(&ms)).cast_const(),
                    len,
                ));
            }
        }
        parts
    }

    /// The route that costs least by the model (module docs): every route
    /// pays the image's bytes over the device's bandwidth; the one copy
    /// gathers the whole image (and a staged frame after); the split route
    /// gathers the per-task part and pays a copy per used pool (and the
    /// frame after travels on its own); with the payloads from the mirror
    /// too, it gathers the per-task part less the payloads and pays two
    /// copies more (the payloads, and the slot states after them).
    fn cheapest_route(&self, n: u64, f: &V2Frame<'_>) -> Route {
        let c = self.run.image_segments(n);
        let (own, staged) = self.frames_apart(f);
        let frames = f.before.len() as u64 + f.after.len() as u64;
        let pools = self.pool_parts_direct(n);
        let pool_bytes = pools.as_slice().iter().map(|p| p.2).sum::<u64>();
        let before_staged = f.before.len() as u64 <= self.frame_before;
        let split_copies =
            1 + pools.len as u32 + u32::from(!before_staged) + u32::from(!f.after.is_empty());
        let split_gathered = c.fanin_pool
            + if before_staged {
                f.before.len() as u64
            } else {
                0
            };
        let payload_bytes = n * Seg::Payloads.size();
        choose_route(
            &self.core.model,
            [
                (Route::OneCopy, 1 + own, c.end + staged),
                (Route::Split, split_copies, split_gathered),
                (
                    Route::SplitPayloads,
                    split_copies + 2,
                    split_gathered - payload_bytes,
                ),
            ],
            c.end + frames,
            pool_bytes + c.fanin_pool + frames,
            n > 0,
        )
    }

    /// For the one copy: how many frames travel on their own (longer than
    /// their room in the staging buffer), and the bytes of those staged.
    fn frames_apart(&self, f: &V2Frame<'_>) -> (u32, u64) {
        let mut own = 0;
        let mut staged = 0;
        for (len, room) in [
            (f.before.len() as u64, self.frame_before),
            (f.after.len() as u64, self.frame_after),
        ] {
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
    /// for payloads shipped from the mirror, before they are moved there);
    /// a bad one is `InvalidArgument` before any copy.
    fn ship_gathered(
        &mut self,
        n: u64,
        f: &V2Frame<'_>,
        in_place: bool,
        route: Route,
        t0: Instant,
    ) -> Result<Shipped> {
        let split = route != Route::OneCopy;
        // Payloads from the mirror only when every region holds (one
        // branch-free pass, `mirror_shifts`); else they are gathered, which
        // names a bad region.
        let shifts = match route {
            Route::SplitPayloads if n > 0 => {
                let c = self.run.image_segments(n);
                let m = &self.core.mirror;
                self.run
                    .mirror_shifts(m, &self.run.pool_parts(m, std::ptr::null_mut()), &c, n)
            }
            _ => None,
        };
        let b = self.image_start();
        // A run claimed in place is in the image buffer (`exact` holds only
        // with one); any other is gathered into the staging buffer.
        let (buf, pins) = match (in_place, &self.image_buf) {
            (true, Some((buf, pins))) => (buf, *pins),
            _ => (&self.staging, self.staging_pins),
        };
        let at = self.stage_off as usize;
        let out = buf.as_ptr().wrapping_add(at);
        let seg = if in_place {
            self.run.check_regions(&self.core.mirror, b, n)?;
            let seg = self.run.image_segments(n);
            // SAFETY: the image buffer's image starts with room for the
            // header, which the mirror's header is copied into (64-aligned,
            // distinct mappings); the shipped header's pointers are NULL.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    V2Run::header(&self.core.mirror).cast::<u8>(),
                    out,
                    size_of::<lrt_v2_sm_header>(),
                );
                shipped_header(&mut *out.cast::<lrt_v2_sm_header>());
            }
            seg
        } else if split {
            let what = match shifts {
                Some(_) => Gather::AroundPayloads,
                None => Gather::PerTask,
            };
            // SAFETY: as below, for the image's first c.fanin_pool bytes.
            unsafe { self.run.compact(&self.core.mirror, b, n, out, what) }?
        } else {
            // SAFETY: the staging buffer holds stage_off + the reference's
            // mirror size + frame_after bytes, no compact image is larger
            // than that mirror, and stage_off is 64-aligned in the
            // page-aligned mapping; it is distinct from the mirror and the
            // image buffer.
            unsafe { self.run.compact_into(&self.core.mirror, b, n, out) }?
        };
        // The gathered part: the whole image, or its per-task part.
        let gathered = if split { seg.fanin_pool } else { seg.end } as usize;
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
        let staged = |from: usize, to: usize| -> Part {
            (
                from as i64 - at as i64,
                buf.as_ptr().wrapping_add(from).cast_const(),
                (to - from) as u64,
            )
        };
        let payloads = (seg.payloads as usize, seg.slot_states as usize);
        match shifts {
            // Up to the payloads, the payloads (from the mirror, once
            // moved: `MovedPayloads`), the rest of the per-task part.
            Some(_) => {
                parts.push(staged(start, at + payloads.0));
                parts.push((
                    payloads.0 as i64,
                    V2Run::at::<u8>(&self.core.mirror, self.run.segments().payloads).cast_const(),
                    n * Seg::Payloads.size(),
                ));
                parts.push(staged(at + payloads.1, end));
            }
            None => parts.push(staged(start, end)),
        }
        if split {
            for &p in self.pool_parts_direct(n).as_slice() {
                parts.push(p);
            }
        }
        if !staged_after && al > 0 {
            parts.push((seg.end as i64, f.after.as_ptr(), al as u64));
        }
        let relocate_ns = elapsed_ns(t0);
        let t1 = Instant::now();
        // Pinned as far as the runs use it, grown to the next power of two
        // of bytes so that a steady workload pins once.
        let pin_end = end.next_power_of_two().min(buf.len());
        let core = &mut self.core;
        core.pins.ensure(pins, &*core.device, 0, pin_end);
        // The payloads moved for the image until the copies are made, and
        // moved back whatever they did (the guard's drop).
        let moved = shifts.map(|k| self.run.move_payloads(&self.core.mirror, n, k));
        // SAFETY: the parts lie inside the buffer, the mirror's payloads
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

    /// A 100 kB image: 80 kB of pools, 5 kB of payloads in its 20 kB
    /// per-task part; the split routes pay 4 and 6 copies.
    fn choose(m: &CostModel, payloads: bool) -> Route {
        choose_route(
            m,
            [
                (Route::OneCopy, 1, 100_000),
                (Route::Split, 4, 20_000),
                (Route::SplitPayloads, 6, 15_000),
            ],
            100_000,
            99_000,
            payloads,
        )
    }

    /// Each route is the cheapest somewhere: dear copies keep the one
    /// copy; copies dearer than the payloads' gather but cheaper than the
    /// pools' keep the payloads gathered; cheap copies ship them from the
    /// mirror, unless the run has no task.
    #[test]
    fn each_route_wins_where_the_model_says() {
        assert_eq!(choose(&model(1e6, 10.0), true), Route::OneCopy);
        // Pools' gather 8 us > 3 more copies (3 us); payloads' 0.5 us < 2 us.
        assert_eq!(choose(&model(1000.0, 10.0), true), Route::Split);
        assert_eq!(choose(&model(10.0, 10.0), true), Route::SplitPayloads);
        assert_eq!(choose(&model(10.0, 10.0), false), Route::Split);
        // A tie keeps the earlier route.
        assert_eq!(
            choose_route(
                &model(0.0, 1.0),
                [
                    (Route::OneCopy, 1, 10),
                    (Route::Split, 1, 10),
                    (Route::SplitPayloads, 1, 10)
                ],
                5,
                5,
                true
            ),
            Route::OneCopy
        );
    }
}
