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
//! * **split** (LRT_UPLOAD_AUTO, for a run read from the mirror alone):
//!   the image's per-task part (`[before | header | descriptors |
//!   payloads | slot states | flags]`, `[0, fanin_pool)` of the image) is
//!   gathered into the staging buffer as for the one copy, with every
//!   region checked and every offset re-taken in that same pass over the
//!   lines the orchestrator just wrote, and shipped in one copy; each used
//!   pool (fanin ids, tensors, scalars: position-independent bytes, most
//!   of a large image) is copied straight from the mirror to its place; the
//!   frame after travels on its own. At most five copies, the mirror is
//!   never written, and the device gets the bytes the one copy ships except
//!   the padding after each pool, which it never reads.
//!
//! Why AUTO chooses what it chooses. Both routes gather the per-task part
//! and pay every byte over the device's bandwidth once; they differ by the
//! pools alone: the one copy gathers them too (bytes over the host's gather
//! bandwidth), the split route pays one more copy per used pool (its fixed
//! latency). So AUTO takes the split route when the pools' bytes cost more
//! to gather than a copy's latency per pool, by the cost model
//! (`CostModel`, the core's): the device's own figures, or measured at the
//! maker's first v2 upload into that upload's destination (before
//! anything else is written there), the latency as the median of small
//! copies made where the pool copies go and the gather into the warmed
//! staging buffer. A small image (pools of a few KiB) is one framed copy,
//! as the reference ships it; a large one, whose pools are most of its
//! bytes, skips gathering them. A device whose copy costs microseconds
//! (CUDA from pageable memory) keeps the one copy up to pools of tens of
//! KiB.
//!
//! Every check an upload makes runs before its first copy; a rejected
//! upload copies nothing and leaves the run open.
use std::mem::size_of;
use std::time::Instant;

use super::super::abi::{lrt_upload_policy, lrt_upload_report};
use super::super::maker::{device_kind, elapsed_ns};
use super::image::shipped_header;
use super::layout::lrt_v2_sm_header;
use super::run::{Pool, V2Run};
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

/// An upload's parts, at most six, kept inline: an upload allocates nothing.
#[derive(Clone, Copy)]
struct Parts {
    at: [Part; 6],
    len: usize,
}

impl Parts {
    const EMPTY: Parts = Parts {
        at: [(0, std::ptr::null(), 0); 6],
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
        let split = auto && !in_place && self.run.spec.is_none() && {
            if !self.measured {
                // The measurement writes to the destination: only once
                // every region is known good.
                self.run
                    .check_regions(&self.core.mirror, std::ptr::null_mut(), n)?;
                self.measure_model(f, n);
            }
            self.split_is_cheaper(n, f)
        };
        let shipped = self.ship_gathered(n, f, in_place, split, t0)?;
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
        // Where the split route's pool copies go, from where they come.
        let spots: Vec<(u64, u64)> = Pool::ALL
            .iter()
            .filter(|p| p.of(&u) > 0)
            .map(|p| (p.start(&c), p.start(&ms)))
            .collect();
        // SAFETY: the destination holds `len <= f.room` writable bytes from
        // f.image on (checked by the caller), not yet meaningful, and every
        // spot is inside the image there and inside the mirror; the
        // staging buffer is distinct from the mirror.
        unsafe {
            self.core
                .measure_model(f.image, len as usize, &spots, Some(&self.staging))
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

    /// Whether the split route costs less than the one copy, by the model
    /// (module docs): both gather the per-task part and pay the bytes over
    /// the device's bandwidth; the one copy also gathers the pools (and a
    /// staged frame after), the split route pays a copy per used pool (and
    /// the frame after travels on its own).
    fn split_is_cheaper(&self, n: u64, f: &V2Frame<'_>) -> bool {
        let c = self.run.image_segments(n);
        let (own, staged) = self.frames_apart(f);
        let frames = f.before.len() as u64 + f.after.len() as u64;
        let one = self
            .core
            .model
            .cost(1 + own, c.end + frames, c.end + staged);
        let pools = self.pool_parts_direct(n);
        let pool_bytes = pools.as_slice().iter().map(|p| p.2).sum::<u64>();
        let before_staged = f.before.len() as u64 <= self.frame_before;
        let split_copies =
            1 + pools.len as u32 + u32::from(!before_staged) + u32::from(!f.after.is_empty());
        let split = self.core.model.cost(
            split_copies,
            c.fanin_pool + pool_bytes + frames,
            c.fanin_pool
                + if before_staged {
                    f.before.len() as u64
                } else {
                    0
                },
        );
        split < one
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

    /// Both routes (module docs): the one copy (`split` false) or the
    /// split route (`split`, a run read from the mirror alone). The
    /// regions are checked as the image is gathered; a bad one is
    /// `InvalidArgument` before any copy.
    fn ship_gathered(
        &mut self,
        n: u64,
        f: &V2Frame<'_>,
        in_place: bool,
        split: bool,
        t0: Instant,
    ) -> Result<Shipped> {
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
            // SAFETY: as below, for the image's first c.fanin_pool bytes.
            unsafe { self.run.compact(&self.core.mirror, b, n, out, false) }?
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
        parts.push((
            start as i64 - at as i64,
            buf.as_ptr().wrapping_add(start).cast_const(),
            (end - start) as u64,
        ));
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
        // SAFETY: the parts lie inside the buffer, the mirror's used pools
        // or the caller's frames; the destination holds the frame before
        // below f.image and the image and the frame after from it on (the
        // frame's contract).
        let (copies, copied) = unsafe { self.copy_parts(f.image, parts.as_slice()) };
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
