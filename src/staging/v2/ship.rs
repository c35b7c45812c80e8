//! Shipping a v2 run: to the maker's own device region (`upload`) or to
//! a destination the caller names per upload (`upload_frame`, for a host
//! whose device region moves or grows between runs), by one of two routes:
//!
//! * **one copy**: `[before | compact image | after]` assembled in the
//!   staging buffer (or the image buffer shipped as it is, when the run was
//!   claimed into its image) and shipped in one copy, the reference's own
//!   shape. A frame longer than its room in the staging buffer
//!   (`lrt_maker_config.frame_before` / `frame_after`; only
//!   `upload_frame` accepts one) travels as a copy of its own, straight
//!   from the caller's memory.
//! * **direct** (LRT_UPLOAD_AUTO, for a run read from the mirror alone):
//!   each part copied straight from where it is to its place in the compact
//!   image: the header with the descriptors, the payloads, the slot states,
//!   the flags and the three pools from the mirror, the frames from the
//!   caller; up to nine copies and no gather. For the length of the copies
//!   the mirror's header says what the image's does (pointers NULL,
//!   `orchestrator_done` 1) and its live slots hold the image's offsets: a
//!   region keeps its place in its pool, so a payload's bound offset moves
//!   by one constant per pool (the pool's shift minus the payloads'), and
//!   each slot state's `payload`/`task` is re-taken for its element in the
//!   image. Afterwards the header is put back and every slot state names
//!   its own payload and descriptor in the mirror again. The device gets
//!   the bytes the one copy ships, except the padding between segments,
//!   which it never reads and this route does not write.
//!
//! AUTO picks per upload by the cost model (`CostModel`, the core's): the
//! device's own figures, or measured at the maker's first v2 upload into
//! that upload's destination (before anything else is written there).
//! Every check an upload makes runs before its first copy; a rejected
//! upload copies nothing and leaves the run open.
use std::mem::size_of;
use std::time::Instant;

use super::super::abi::{lrt_upload_policy, lrt_upload_report};
use super::super::maker::{device_kind, elapsed_ns};
use super::image::{check_payload, shipped_header};
use super::layout::{
    lrt_v2_segments, lrt_v2_sm_header, lrt_v2_task_payload, lrt_v2_task_slot_state,
};
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
        let direct = if auto && !in_place && self.run.spec.is_none() {
            if !self.measured {
                // The measurement writes to the destination: only once
                // every region is known good.
                self.run
                    .check_regions(&self.core.mirror, std::ptr::null_mut(), n)?;
                self.measure_model(f, n);
            }
            let (c, parts) = self.direct_parts(n, f);
            self.direct_is_cheaper(&c, &parts, f).then_some((c, parts))
        } else {
            None
        };
        let shipped = match direct {
            Some((c, parts)) => self.ship_direct(n, f.image, &c, &parts, t0)?,
            None => self.ship_one(n, f, in_place, t0)?,
        };
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
    /// (the image and the frame after it are written next anyway).
    fn measure_model(&mut self, f: &V2Frame<'_>, n: u64) {
        let len = self.run.image_segments(n).end + f.after.len() as u64;
        // SAFETY: the destination holds `len <= f.room` writable bytes from
        // f.image on (checked by the caller), not yet meaningful; the
        // staging buffer is distinct from the mirror.
        unsafe {
            self.core
                .measure_model(f.image, len as usize, Some(&self.staging))
        };
        self.measured = true;
    }

    /// The parts the direct route would copy for `n` tasks, in the image's
    /// order (empty ones left out).
    fn direct_parts(&self, n: u64, f: &V2Frame<'_>) -> (lrt_v2_segments, Vec<Part>) {
        let (ms, c, u) = (
            self.run.segments(),
            self.run.image_segments(n),
            self.run.used,
        );
        let from = |off: u64| V2Run::at::<u8>(&self.core.mirror, off).cast_const();
        // The header and the descriptors are adjacent in both layouts (the
        // descriptors start at the header's size rounded to 64, whatever
        // the pitch), so they are one part.
        debug_assert_eq!(ms.descriptors, c.descriptors);
        let mut parts: Vec<Part> = vec![(0, from(0), c.descriptors + n * Seg::Descriptors.size())];
        for which in [Seg::Payloads, Seg::SlotStates, Seg::Flags] {
            parts.push((
                which.start(&c) as i64,
                from(which.start(&ms)),
                n * which.size(),
            ));
        }
        for pool in Pool::ALL {
            parts.push((
                pool.start(&c) as i64,
                from(pool.start(&ms)),
                pool.of(&u) * pool.elem(),
            ));
        }
        parts.push((
            -(f.before.len() as i64),
            f.before.as_ptr(),
            f.before.len() as u64,
        ));
        parts.push((c.end as i64, f.after.as_ptr(), f.after.len() as u64));
        parts.retain(|p| p.2 > 0);
        (c, parts)
    }

    /// Whether the direct route costs less than the one copy, by the model.
    fn direct_is_cheaper(&self, c: &lrt_v2_segments, parts: &[Part], f: &V2Frame<'_>) -> bool {
        let bytes = parts.iter().map(|p| p.2).sum::<u64>();
        let (own, staged) = self.frames_apart(f);
        let direct = self.core.model.cost(parts.len() as u32, bytes, 0);
        let one = self.core.model.cost(
            1 + own,
            c.end + f.before.len() as u64 + f.after.len() as u64,
            c.end + staged,
        );
        direct < one
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

    /// The one-copy route (module docs). The regions are checked as the
    /// image is assembled; a bad one is `InvalidArgument` before any copy.
    fn ship_one(
        &mut self,
        n: u64,
        f: &V2Frame<'_>,
        in_place: bool,
        t0: Instant,
    ) -> Result<Shipped> {
        let (own, _) = self.frames_apart(f);
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
        } else {
            // SAFETY: the staging buffer holds stage_off + the reference's
            // mirror size + frame_after bytes, no compact image is larger
            // than that mirror, and stage_off is 64-aligned in the
            // page-aligned mapping; it is distinct from the mirror and the
            // image buffer.
            unsafe { self.run.compact_into(&self.core.mirror, b, n, out) }?
        };
        // Frames that fit their rooms join the one copy; a longer one is a
        // part of its own.
        let (bl, al) = (f.before.len(), f.after.len());
        let staged_before = bl as u64 <= self.frame_before;
        let staged_after = al as u64 <= self.frame_after;
        let start = at - if staged_before { bl } else { 0 };
        let end = at + seg.end as usize + if staged_after { al } else { 0 };
        // SAFETY: a staged frame fits its room in the buffer (checked just
        // above); the caller's slices do not overlap the maker's buffers.
        unsafe {
            let base = buf.as_ptr();
            if staged_before {
                std::ptr::copy_nonoverlapping(f.before.as_ptr(), base.add(start), bl);
            }
            if staged_after {
                std::ptr::copy_nonoverlapping(
                    f.after.as_ptr(),
                    base.add(at + seg.end as usize),
                    al,
                );
            }
        }
        let mut parts: Vec<Part> = vec![(
            start as i64 - at as i64,
            buf.as_ptr().wrapping_add(start).cast_const(),
            (end - start) as u64,
        )];
        if !staged_before {
            parts.insert(0, (-(bl as i64), f.before.as_ptr(), bl as u64));
        }
        if !staged_after {
            parts.push((seg.end as i64, f.after.as_ptr(), al as u64));
        }
        debug_assert_eq!(parts.len() as u32, 1 + own);
        let relocate_ns = elapsed_ns(t0);
        let t1 = Instant::now();
        // Pinned as far as the runs use it, grown to the next power of two
        // of bytes so that a steady workload pins once.
        let pin_end = end.next_power_of_two().min(buf.len());
        let core = &mut self.core;
        core.pins.ensure(pins, &*core.device, 0, pin_end);
        // SAFETY: the parts lie inside the buffer or the caller's frames;
        // the destination holds the frame before below f.image and the
        // image and the frame after from it on (the frame's contract).
        let (copies, copied) = unsafe { self.copy_parts(f.image, &parts) };
        Ok(Shipped {
            copies,
            bytes: (bl + seg.end as usize + al) as u64,
            relocate_ns,
            copy_ns: elapsed_ns(t1),
            path: lrt_upload_policy::LRT_UPLOAD_COMPACT,
            copied,
        })
    }

    /// The direct route (module docs), for a run read from the mirror alone:
    /// `parts` (`direct_parts`) copied to the image at `image`.
    /// Its regions are checked as its slots are re-taken: a bad one puts
    /// the slots before it back and is `InvalidArgument`, before any copy.
    fn ship_direct(
        &mut self,
        n: u64,
        image: *mut u8,
        c: &lrt_v2_segments,
        parts: &[Part],
        t0: Instant,
    ) -> Result<Shipped> {
        let ms = self.run.segments();
        self.retake_in_mirror(n, &ms, c, true)?;
        let h = V2Run::header(&self.core.mirror);
        // SAFETY: the header is plain data at the mirror's start.
        let saved = unsafe { *h };
        // SAFETY: as above; no other reference to it is live.
        unsafe { shipped_header(&mut *h) };
        let relocate_ns = elapsed_ns(t0);
        let t1 = Instant::now();
        // SAFETY: the mirror parts lie inside the mirror (n <= W, the pools
        // within their capacities), the frames are the caller's; the
        // destination holds them (the frame's contract).
        let (copies, copied) = unsafe { self.copy_parts(image, parts) };
        let copy_ns = elapsed_ns(t1);
        // SAFETY: as above.
        unsafe { *h = saved };
        // The way back cannot fail: no checks.
        let _ = self.retake_in_mirror(n, c, &ms, false);
        Ok(Shipped {
            copies,
            bytes: parts.iter().map(|p| p.2).sum(),
            relocate_ns,
            copy_ns,
            path: lrt_upload_policy::LRT_UPLOAD_BOUNDED,
            copied,
        })
    }

    /// Rewrites the mirror's live slots from the offsets of layout `from`
    /// to those of `to` (the mirror's and the image's, either way): every
    /// bound payload region moves by its pool's shift minus the payloads'
    /// (regions keep their place in their pools), and every slot state's
    /// `payload`/`task` names its element in `to`. An unbound region (0)
    /// stays 0 both ways: a bound one is never 0 in either layout, its
    /// field and its target being in different segments. With `check`
    /// (the way out, from the mirror's offsets) each payload's regions are
    /// checked first (`PoolPart::check`); at a bad one the slots already
    /// rewritten are put back and its error returned.
    fn retake_in_mirror(
        &self,
        n: u64,
        from: &lrt_v2_segments,
        to: &lrt_v2_segments,
        check: bool,
    ) -> Result<()> {
        let ms = self.run.segments();
        let parts = self.run.pool_parts(&self.core.mirror, std::ptr::null_mut());
        let d_pay = to.payloads as i64 - from.payloads as i64;
        // The payload's offset fields in memory order: tensors, scalars, fanin.
        let shift = [Pool::Tensors, Pool::Scalars, Pool::Fanin]
            .map(|p| (p.start(to) as i64 - p.start(from) as i64 - d_pay) as i32);
        let state_size = size_of::<lrt_v2_task_slot_state>() as i64;
        let pay0 = to.payloads as i64 - to.slot_states as i64 - 8;
        let task0 = to.descriptors as i64 - to.slot_states as i64 - 12;
        let pays = V2Run::at::<lrt_v2_task_payload>(&self.core.mirror, ms.payloads);
        let states = V2Run::at::<lrt_v2_task_slot_state>(&self.core.mirror, ms.slot_states);
        for i in 0..n as usize {
            // SAFETY: slot i < n <= W of the mirror: a payload and a slot
            // state, plain data, 64-aligned; nothing else refers to them.
            let (p, s) = unsafe { (&mut *pays.add(i), &mut *states.add(i)) };
            if check {
                if let Err(e) = check_payload(&parts, i as u64, p) {
                    let _ = self.retake_in_mirror(i as u64, to, from, false);
                    return Err(e);
                }
            }
            for (field, k) in [&mut p.tensors, &mut p.scalars, &mut p.fanin]
                .into_iter()
                .zip(shift)
            {
                if *field != 0 {
                    *field = field.wrapping_add(k);
                }
            }
            let i = i as i64;
            // |delta| < the larger layout's size <= i32::MAX.
            s.payload = (pay0 + i * (Seg::Payloads.size() as i64 - state_size)) as i32;
            s.task = (task0 + i * (Seg::Descriptors.size() as i64 - state_size)) as i32;
        }
        Ok(())
    }
}
