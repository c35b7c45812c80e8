//! The maker core: what every generation of the reference's image shares.
//! A maker builds each run's image in an init-on-write host mirror and
//! ships to the device only what the device reads; how an image is laid
//! out, claimed and shipped is its generation's (`super::v1::MakerV1`,
//! `super::v2::MakerV2`), each built on one [`MakerCore`]:
//!
//! * the device (the host's api) and the device region the uploads go to
//!   (`region.rs`: owned or borrowed, where the image sits in it);
//! * the mirror (`super::mirror::Mapping`) and the page-locking of every
//!   host buffer the generation registers (`super::pin::MakerPins`);
//! * the settings every generation resolves alike (`config.rs`: window,
//!   heap size, policy, fresh mirror) and the per-task claim fields and
//!   their checks (`claim.rs`);
//! * AUTO's cost model (`cost.rs`);
//! * the run's state, one [`RunState`], and where the last successful
//!   upload put the image (what `read_status` reads back).
//!
//! The calls every maker answers whatever its generation are the trait
//! [`Maker`], written once here over the core. A generation's own calls
//! (begin, claim, upload) are methods of its type, which never ask which
//! generation they are in: the type is the answer.
//!
//! Why an enum behind the C handle and not a trait object: each generation
//! has calls of its own, with its own argument and result types (a v2 claim
//! takes arguments and pools a v1 claim has not, its header is another
//! struct), so there is no one signature a `dyn` trait could carry for
//! them; the C handle needs them by type, once per call, and an enum gives
//! that in one exhaustive `match` the compiler keeps complete
//! (`super::runtime_maker`). What the calls have in common is the core, and
//! [`Maker`] gives it to every generation without a second copy. The few
//! facts of an image the shared calls need (the header's status words, the
//! device room, where the image sits in a region) are data a generation
//! hands its core at create ([`Generation`]), not questions asked later.
//!
//! Invariants, for every generation:
//! * The mirror is never pre-touched. A reused mirror's slots hold whatever
//!   an earlier run left; only the header and claimed slots are written, so
//!   nothing outside `[0, N)` may be shipped or trusted (init-on-write).
//! * An upload validates everything before it changes or copies a byte; a
//!   rejected upload leaves the mirror, the run and the device image as
//!   they were. The mirror is left in host form whatever the copies did.
//! * The device and the device region change only between runs
//!   ([`RunState::Building`] refuses them).
use std::ffi::c_void;
use std::mem::size_of;
use std::sync::Arc;
use std::time::Instant;

use super::abi::{lrt_layout, lrt_upload_policy};
use super::mirror::Mapping;
use super::pin::{MakerPins, PinTarget};
use crate::device::Device;
use crate::{Error, ErrorKind, Result};

mod claim;
mod config;
mod cost;
mod region;

pub use claim::ClaimDesc;
pub(crate) use claim::SUBTASK_BITS;
pub(crate) use config::Resolved;
pub use config::{MakerConfig, HEAP_SIZE_ENV, TASK_WINDOW_ENV};
pub use cost::CostModel;
pub(crate) use cost::{Gathered, MEASURE_MAX_BYTES};
pub use region::BorrowedImage;
pub(crate) use region::{DeviceRegion, Placement};

/// `kind` for a device failure, unless the device reports itself
/// unavailable (e.g. a CUDA device inherited across `fork`).
pub(crate) fn device_kind(e: &Error, kind: ErrorKind) -> ErrorKind {
    if e.kind() == ErrorKind::Unavailable {
        ErrorKind::Unavailable
    } else {
        kind
    }
}

/// Nanoseconds since `since`.
pub(crate) fn elapsed_ns(since: Instant) -> u64 {
    ns_between(since, Instant::now())
}

/// Nanoseconds from `from` to `to` (0 if `to` is earlier): one clock read
/// serves as the end of one span and the start of the next.
pub(crate) fn ns_between(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_nanos()).unwrap_or(u64::MAX)
}

/// Where a run is. Claims and uploads need a run that is not `Closed`; the
/// device and the device region may change unless it is `Building`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunState {
    /// No run open: before the first begin, after `abort_run`.
    Closed,
    /// Begun and not yet shipped: the device and the region are fixed.
    Building,
    /// Its upload copied, or failed copying (the run is over for the
    /// device): claims and uploads are still taken (they extend and ship
    /// the same run again), the device and the region may change.
    Uploaded,
}

/// Where a generation's header keeps its two error words (byte offsets),
/// as `read_status` reads them back: one copy of the header's first
/// `sched + 4` bytes, at most [`StatusWords::MAX_SPAN`].
#[derive(Clone, Copy, Debug)]
pub struct StatusWords {
    orch: usize,
    sched: usize,
}

impl StatusWords {
    /// The most header bytes `read_status` copies back.
    pub const MAX_SPAN: usize = 512;

    /// The two words at `orch` (`orch_error_code`) and `sched`
    /// (`sched_error_code`); checked at compile time where a generation
    /// names them in a `const`.
    pub const fn new(orch: usize, sched: usize) -> Self {
        assert!(orch + 4 <= Self::MAX_SPAN && sched + 4 <= Self::MAX_SPAN);
        StatusWords { orch, sched }
    }
}

/// One generation of the reference's image, as a maker builds it: the
/// facts of the image the shared calls need, handed to its core at create.
pub trait Generation: Maker {
    /// The value of `lrt_maker_config.layout` that selects it.
    const LAYOUT: lrt_layout;
    /// Its name in messages ("v1").
    const NAME: &'static str;
    /// Where its header keeps the error words.
    const STATUS_WORDS: StatusWords;
}

/// What every maker is built on (opaque outside the staging module; the
/// calls on it are [`Maker`]'s).
pub struct MakerCore {
    pub(crate) device: Arc<dyn Device>,
    pub(crate) window: u64,
    pub(crate) policy: lrt_upload_policy,
    pub(crate) fresh_mirror: bool,
    pub(crate) heap_size: u64,
    pub(crate) mirror: Mapping,
    /// What is page-locked of the generation's host buffers; released
    /// before any of them is unmapped (`Drop`).
    pub(crate) pins: MakerPins,
    /// AUTO's cost model (the fallback until a generation measures it).
    pub(crate) model: CostModel,
    pub(crate) region: DeviceRegion,
    pub(crate) run: RunState,
    /// Where the last successful upload put the header on the device
    /// (what `read_status` reads); None before one, after a failed copy and
    /// after the region changed.
    pub(crate) shipped: Option<*mut u8>,
    /// Nanoseconds the last begin spent zeroing.
    pub(crate) last_zero_ns: u64,
    layout: lrt_layout,
    name: &'static str,
    status_words: StatusWords,
}

// SAFETY: every pointer the core holds (mirror, device region, the last
// shipped header) is owned by the maker or lent to it, and reached only
// through `&mut self` or `&self` reads of plain addresses; the device is
// `Send + Sync`. Not Sync: no `&self` call is meant to run concurrently
// with another.
unsafe impl Send for MakerCore {}

impl MakerCore {
    /// The core of a generation-`G` maker: `cfg`'s settings as `resolved`,
    /// the mirror, the pins of the host buffers (registered by `G`'s
    /// create), the device region; no run yet, the fallback cost model.
    pub(crate) fn new<G: Generation>(
        cfg: &MakerConfig,
        resolved: Resolved,
        device: Arc<dyn Device>,
        mirror: Mapping,
        pins: MakerPins,
        region: DeviceRegion,
    ) -> Self {
        MakerCore {
            device,
            window: resolved.window,
            policy: cfg.policy,
            fresh_mirror: cfg.fresh_mirror,
            heap_size: resolved.heap_size,
            mirror,
            pins,
            model: CostModel::FALLBACK,
            region,
            run: RunState::Closed,
            shipped: None,
            last_zero_ns: 0,
            layout: G::LAYOUT,
            name: G::NAME,
            status_words: G::STATUS_WORDS,
        }
    }

    /// The generation's name ("v1").
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// Begins a run (claims and uploads allowed, the device and region
    /// fixed); `zero_ns`: what the begin spent zeroing.
    pub(crate) fn begin(&mut self, zero_ns: u64) {
        self.last_zero_ns = zero_ns;
        self.run = RunState::Building;
    }

    /// `State` with `message` unless a run is open.
    pub(crate) fn require_open(&self, message: &'static str) -> Result<()> {
        match self.run {
            RunState::Closed => Err(Error::state(message)),
            RunState::Building | RunState::Uploaded => Ok(()),
        }
    }

    /// An upload's copies to the device region's image at `at` are over
    /// (`copied`): the run is over for the device, and `read_status` reads
    /// `at` if they succeeded.
    pub(crate) fn end_upload(&mut self, at: *mut u8, copied: bool) {
        self.run = RunState::Uploaded;
        self.shipped = copied.then_some(at);
    }

    /// Maps a fresh mirror in place of the old one (the baseline's
    /// "allocate a new image every run"); `pinned`, if the generation pins
    /// the mirror, follows it (the old one's regions released before it is
    /// unmapped, nothing of the new one pinned yet). On failure the old
    /// mirror stays.
    pub(crate) fn remap_mirror(&mut self, pinned: Option<PinTarget>) -> Result<()> {
        let fresh = Mapping::new(self.mirror.len())?;
        if let Some(target) = pinned {
            self.pins.release(target);
            // SAFETY: the core releases its pins before the mirror is
            // unmapped (Drop, and here for the next fresh one).
            unsafe { self.pins.retrack(target, &fresh) };
        }
        self.mirror = fresh;
        Ok(())
    }

    /// Refuses a change of device or region in the middle of a run.
    fn between_runs(&self, what: &str) -> Result<()> {
        if self.run == RunState::Building {
            return Err(Error::state(format!(
                "{what} between begin_run and the upload of that run; change it \
                 between runs"
            )));
        }
        Ok(())
    }

    /// Copies the header's error words back from `at` (module docs).
    fn read_status_at(&self, at: *mut u8) -> Result<i32> {
        let StatusWords { orch, sched } = self.status_words;
        let mut words = [0u8; StatusWords::MAX_SPAN];
        let len = orch.max(sched) + size_of::<i32>();
        // SAFETY: reads `len` bytes (at most MAX_SPAN, checked when the
        // generation's words were made) of the header the last upload
        // wrote at `at` into a local buffer that long.
        unsafe { self.device.copy_from(words.as_mut_ptr(), at, len) }.map_err(|e| {
            Error::new(
                device_kind(&e, ErrorKind::Device),
                format!("copy of the header from the device failed: {e}"),
            )
        })?;
        let word =
            |o: usize| i32::from_ne_bytes([words[o], words[o + 1], words[o + 2], words[o + 3]]);
        let (orch, sched) = (word(orch), word(sched));
        Ok(if orch != 0 {
            orch.wrapping_neg()
        } else {
            sched.wrapping_neg()
        })
    }
}

impl Drop for MakerCore {
    fn drop(&mut self) {
        // Unpin before the host buffers are unmapped: the mirror drops
        // after this, and a generation declares its own buffers after its
        // core, so they drop later still. The owned device image is freed
        // when the region drops.
        self.pins.release_all();
    }
}

/// The calls every maker answers, whatever its generation (C: the
/// `lrt_runtime_maker_*` calls that take a maker of either layout); each
/// generation's type and the C handle's [`super::RuntimeMaker`] implement
/// it by lending their core.
pub trait Maker {
    /// The core the maker is built on.
    fn core(&self) -> &MakerCore;
    /// The same, to change.
    fn core_mut(&mut self) -> &mut MakerCore;

    /// The image layout the maker builds.
    fn layout(&self) -> lrt_layout {
        self.core().layout
    }
    /// The resolved task window.
    fn task_window(&self) -> u64 {
        self.core().window
    }
    /// The upload policy.
    fn policy(&self) -> lrt_upload_policy {
        self.core().policy
    }
    /// The resolved heap size written to the header.
    fn heap_size(&self) -> u64 {
        self.core().heap_size
    }
    /// The AUTO cost model in use (the device's, measured, or the
    /// fallback).
    fn cost_model(&self) -> CostModel {
        self.core().model
    }
    /// Bytes of the host buffers page-locked now (0 without `pin_mirror`,
    /// or where the device cannot pin).
    fn pinned_bytes(&self) -> u64 {
        self.core().pins.bytes()
    }
    /// Pin calls made so far (at create, growths, fresh mirrors).
    fn pin_calls(&self) -> u32 {
        self.core().pins.pin_calls()
    }
    /// Whether pinning was asked for and a pin failed (the copies then read
    /// pageable memory where nothing was pinned).
    fn pin_failed(&self) -> bool {
        self.core().pins.failed()
    }

    /// The device address of the image the uploads go to (the contract is
    /// `lrt_runtime_maker_device_image`'s); NULL for a maker without a
    /// region.
    fn device_image(&self) -> *mut c_void {
        self.core().region.image().cast::<c_void>()
    }

    /// Sends the next uploads (and `read_status`) to `image`, a region the
    /// caller lends, or with None back to the one the maker allocated (the
    /// contract is `lrt_runtime_maker_set_device_image`'s). `State` in a
    /// run; `InvalidArgument` for a NULL or too small region, or None for a
    /// maker that never had one of its own. `read_status` then waits for an
    /// upload to the new region.
    fn set_device_image(&mut self, image: Option<BorrowedImage>) -> Result<()> {
        let core = self.core_mut();
        core.between_runs("the device image cannot change")?;
        core.region.set(image)?;
        core.shipped = None;
        Ok(())
    }

    /// Copies (and pins) through `device` from now on; the maker's own
    /// image is still freed through the device that allocated it. `State`
    /// in a run. AUTO keeps the cost model it has.
    fn set_device(&mut self, device: Arc<dyn Device>) -> Result<()> {
        let core = self.core_mut();
        core.between_runs("the device cannot change")?;
        core.device = device;
        Ok(())
    }

    /// Ends the open run without shipping it: claims and uploads need a new
    /// begin, and the device and region may change again. The mirror is
    /// left as it is; `read_status` still reports the last upload. A no-op
    /// without an open run.
    fn abort_run(&mut self) {
        self.core_mut().run = RunState::Closed;
    }

    /// Copies the device header's error words back: 0, or the negated
    /// `orch_error_code`, else the negated `sched_error_code`. `State`
    /// before a successful upload; `Device` when the copy fails.
    fn read_status(&mut self) -> Result<i32> {
        let core = self.core();
        let Some(at) = core.shipped else {
            return Err(Error::state("read_status before a successful upload"));
        };
        core.read_status_at(at)
    }
}
