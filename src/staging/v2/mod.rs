//! Generation 2: the reference's current image (main 6ebaf7715), a compact
//! image with three argument pools and self-relative offsets. [`MakerV2`]
//! builds it on a `MakerCore` (`super::maker`).
//!
//! Lifecycle of one run: `begin_run` (the header; the pools' cursors reset)
//! -> `claim_slot` x N (or the host writes the run itself and says what its
//! pools hold, `set_pool_use`) -> `upload` / `upload_frame` (the compact
//! image, checked, in one framed copy or, under AUTO, its parts straight
//! from the mirror) -> the device runs -> `read_status` (the core's).
//!
//! The files, one job each: `layout.rs` (the C structs and the layout
//! arithmetic), `segments.rs` (the checked offsets of a mirror and of a
//! compact image), `run.rs` (the run in the mirror: cursors, the header, the
//! speculative image), `claim.rs` (the reference's claim semantics),
//! `image.rs` (the compact image assembled and checked), `ship.rs` (the
//! routes to the device), `route.rs` (the routes, and the one planned at
//! `set_pool_use`). Its buffers, each the maker's for its life:
//! * device region (`Placement::AlignedAfter`): room for the frame before
//!   the image, the image at the first 64-aligned address past that room
//!   (the device reads the image's structs aligned), the reference's mirror
//!   size (no compact image is larger), the frame after it, and 64 bytes
//!   for aligning a region that is not;
//! * staging buffer: the frame before's room rounded up to 64 bytes
//!   (`stage_off`, the image's start there), the reference's mirror size,
//!   the frame after: the framed image is one contiguous source for the one
//!   copy;
//! * image buffer: the same layout, holding the image claimed in place
//!   (`run::Spec`); none with a fresh mirror every run.
//!
//! The staging and image buffers are offered to transparent huge pages
//! (`Mapping::advise_huge_pages`): a run of megabytes writes them and its
//! upload reads them end to end, and with 4 KiB pages the upload's check
//! (one line per payload) and copy wait on page walks (`docs/BENCHMARKS.md`).
//! The mirror is not: the host writes a few of its slots per run, wherever
//! its window puts them.
use std::mem::offset_of;
use std::sync::Arc;
use std::time::Instant;

use super::abi::{lrt_layout, lrt_upload_policy, lrt_v2_task_slot, LRT_V2_MAX_FRAME_BYTES};
use super::align::align_up;
use super::maker::{
    elapsed_ns, BorrowedImage, DeviceRegion, Generation, Maker, MakerConfig, MakerCore, Placement,
    StatusWords,
};
use super::mirror::Mapping;
use super::pin::{MakerPins, PinTarget};
use crate::device::Device;
use crate::{Error, Result};

mod claim;
mod fresh;
mod image;
pub(crate) mod layout;
mod route;
mod run;
pub(crate) mod segments;
mod ship;

pub use claim::{TensorRecord, V2ClaimDesc};
use layout::{lrt_v2_segments, lrt_v2_sm_header, v2_mirror_extents, V2PoolUse};
use run::V2Run;
use segments::v2_ring_segment_offsets;
pub use ship::V2Frame;

/// A maker of the v2 image (C: an `lrt_runtime_maker` created with
/// `LRT_LAYOUT_V2`). `Send` but not `Sync`, as every maker.
pub struct MakerV2 {
    /// Declared first: it releases the pins before the buffers below are
    /// unmapped.
    core: MakerCore,
    run: V2Run,
    /// The staging buffer (module docs).
    staging: Mapping,
    staging_pins: PinTarget,
    /// The image buffer (module docs); None with a fresh mirror every run.
    image_buf: Option<(Mapping, PinTarget)>,
    /// Where the image starts in the staging and image buffers.
    stage_off: u64,
    /// The rooms for the caller's frames around the image.
    frame_before: u64,
    frame_after: u64,
    /// AUTO's cost model has been measured (at the first upload).
    measured: bool,
    /// The route planned at `set_pool_use` for this run (`ship.rs`).
    planned: Option<route::PlannedRoute>,
    /// The frames' lengths (before, after) of the last upload: the plan's
    /// guess of this one's.
    last_frames: (u64, u64),
}

impl Generation for MakerV2 {
    const LAYOUT: lrt_layout = lrt_layout::LRT_LAYOUT_V2;
    const NAME: &'static str = "v2";
    const STATUS_WORDS: StatusWords = StatusWords::new(
        offset_of!(lrt_v2_sm_header, orch_error_code),
        offset_of!(lrt_v2_sm_header, sched_error_code),
    );
}

impl Maker for MakerV2 {
    fn core(&self) -> &MakerCore {
        &self.core
    }
    fn core_mut(&mut self) -> &mut MakerCore {
        &mut self.core
    }
}

impl MakerV2 {
    /// Resolves the window and the heap size as every maker does, maps the
    /// untouched mirror (pools of `cfg.v2_pools`, 0 = the reference's) and
    /// the staging and image buffers, and allocates the device region once
    /// (module docs). `InvalidArgument` for the FULL policy, a frame above
    /// `LRT_V2_MAX_FRAME_BYTES` or a pool above the reference's.
    pub fn new(cfg: &MakerConfig, device: Arc<dyn Device>) -> Result<Self> {
        Self::create(cfg, device, None)
    }

    /// As [`MakerV2::new`], but the uploads go to `image`, which the
    /// caller lends (at least the region's size); or, with (NULL, 0), to
    /// no region: the uploads then name their destination (`upload_frame`).
    /// `InvalidArgument` for a NULL or too small region.
    pub fn with_image(
        cfg: &MakerConfig,
        device: Arc<dyn Device>,
        image: BorrowedImage,
    ) -> Result<Self> {
        Self::create(cfg, device, Some(image))
    }

    /// The create of both constructors (and of the C handle's).
    pub(crate) fn create(
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
        let max = LRT_V2_MAX_FRAME_BYTES;
        if cfg.frame_before > max || cfg.frame_after > max {
            return Err(Error::invalid_argument(format!(
                "frames of {} and {} bytes: at most {max} each",
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
        let mirror = Mapping::new(run.segments().end as usize)?;
        // No compact image is larger than the reference's mirror.
        let stage_off = align_up(cfg.frame_before);
        let len = (stage_off + reference.end + cfg.frame_after) as usize;
        let staging = Mapping::new(len)?;
        // 64 bytes more on the device, for aligning a region that is not.
        let need = len as u64 + 64;
        let placement = Placement::AlignedAfter {
            room: cfg.frame_before,
        };
        let region = match borrowed {
            Some(b) if b.ptr.is_null() && b.len == 0 => DeviceRegion::none(need, placement),
            _ => DeviceRegion::new(&device, borrowed, need, placement)?,
        };
        // Claims go straight into the image they ship while a run repeats
        // the last one's shape; a fresh mirror every run (the reference's
        // own path, a baseline) has none.
        let image_buf = match cfg.fresh_mirror {
            true => None,
            false => Some(Mapping::new(len)?),
        };
        // Huge pages where the kernel grants them (module docs).
        for m in std::iter::once(&staging).chain(image_buf.as_ref()) {
            m.advise_huge_pages();
        }
        // The one copy reads the staging buffer (a gathered image) or the
        // image buffer (an image claimed in place), never the mirror (read
        // by the host's gather only): only those two are pinned, each from
        // its start as far as the runs use it (`ship.rs`), nothing at
        // create.
        let mut pins = MakerPins::new(cfg.pin_mirror);
        // SAFETY: the core releases its pins before the buffers they cover
        // are unmapped (its Drop; the buffers are declared after it).
        let (staging_pins, image_pins) = unsafe {
            (
                pins.track(&staging, "staging buffer"),
                image_buf.as_ref().map(|m| pins.track(m, "image buffer")),
            )
        };
        Ok(MakerV2 {
            core: MakerCore::new::<Self>(cfg, resolved, device, mirror, pins, region),
            run,
            staging,
            staging_pins,
            image_buf: image_buf.zip(image_pins),
            stage_off,
            frame_before: cfg.frame_before,
            frame_after: cfg.frame_after,
            measured: false,
            planned: None,
            last_frames: (0, 0),
        })
    }

    /// The image buffer's image start (NULL without one): where a run is
    /// claimed in place.
    fn image_start(&self) -> *mut u8 {
        self.image_buf
            .as_ref()
            .map_or(std::ptr::null_mut(), |(m, _)| {
                m.as_ptr().wrapping_add(self.stage_off as usize)
            })
    }

    /// Starts a run: a fresh mirror with `fresh_mirror`, then the header
    /// as the reference's `init_per_ring` writes it (zeroed, then every
    /// field; the list is `lrt_runtime_maker_v2_begin_run`'s contract); the
    /// pools' cursors reset. Returns the mirror's header.
    pub fn begin_run(&mut self) -> Result<*mut lrt_v2_sm_header> {
        let t0 = Instant::now();
        if self.core.fresh_mirror {
            // The v2 mirror is never pinned: nothing to follow it.
            self.core.remap_mirror(None)?;
        } else {
            // The kept mirror reads as a fresh one (fresh.rs).
            self.run.reset_kept(&self.core.mirror);
        }
        self.planned = None;
        let b = self.image_start();
        let h = self.run.begin(&self.core.mirror, b, self.core.heap_size);
        self.core.begin(elapsed_ns(t0));
        Ok(h)
    }

    /// Claims slot `current_task_index` for the task `d` describes (the
    /// claim semantics are `claim.rs`'s; the field list is
    /// `lrt_runtime_maker_v2_claim_slot`'s contract). `State` before
    /// `begin_run` or with an orchestrator error latched; the rest as
    /// `V2Run::claim`.
    pub fn claim_slot(&mut self, d: &V2ClaimDesc<'_>) -> Result<lrt_v2_task_slot> {
        self.core
            .require_open("v2_claim_slot before v2_begin_run")?;
        let b = self.image_start();
        self.run.claim(&self.core.mirror, b, d)
    }

    /// The mirror's segments (pools at this maker's capacities).
    pub fn mirror_segments(&self) -> lrt_v2_segments {
        self.run.segments()
    }

    /// The pools' capacities in elements (`cfg.v2_pools` resolved).
    pub fn pool_capacities(&self) -> V2PoolUse {
        self.run.capacities()
    }

    /// For a host that wrote the run into the mirror itself: what its pools
    /// hold (`V2Run::set_host_use`; the contract is
    /// `lrt_runtime_maker_v2_set_pool_use`'s). `State` before `begin_run`.
    pub fn set_pool_use(&mut self, used: V2PoolUse) -> Result<()> {
        self.core
            .require_open("v2_set_pool_use before v2_begin_run")?;
        self.run.set_host_use(used)?;
        self.planned = self.plan_route();
        Ok(())
    }

    /// The run's cores, which a sync_start claim is checked against
    /// (`V2Run::as_submitted`; the contract is
    /// `lrt_runtime_maker_v2_set_core_counts`'s): kept until changed.
    pub fn set_core_counts(&mut self, clusters: i32, aiv_cores: i32) -> Result<()> {
        self.run.set_cores(clusters, aiv_cores)
    }
}
