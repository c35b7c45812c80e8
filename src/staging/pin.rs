//! Page-locking that follows the runs: the maker pins the parts of a mapping
//! that its copies read, and grows them as runs grow, instead of locking the
//! whole mapping up front.
//!
//! A [`Pins`] holds page-aligned, pairwise disjoint ranges of one mapping,
//! each one [`PinnedRegion`] of the device (one `cuMemHostRegister` or one
//! `mlock`). [`Pins::ensure`] makes a range part of a single region: a range
//! already inside one costs a lookup; otherwise the regions it overlaps are
//! released and one region spanning them and the range is pinned. Keeping a
//! copy's source inside one registration matters on CUDA: a driver may treat
//! a copy that spans two registrations as a copy from pageable memory. Ranges are rounded
//! out to whole pages (registrations that share a page overlap for the
//! driver) and clipped to the mapping's length.
//!
//! A failed pin makes the `Pins` stop pinning (the regions it still holds
//! stay pinned until it is dropped) and the copies read pageable memory,
//! which is slower but correct. [`MakerPins`] reports it: one warning per
//! maker through `crate::diag::warn`, whatever mapping or mirror failed.
//!
//! [`MakerPins`] is the maker's policy over its two mappings (the mirror
//! and the staging buffer): what to pin at create, before each upload's
//! copies, and for a fresh mirror.
use super::layout::{live_parts, lrt_sm_segments, offsets_for};
use super::mirror::Mapping;
use crate::device::{Device, PinnedRegion};

/// One pinned range `[start, end)` of the mapping (offsets).
struct Range {
    start: usize,
    end: usize,
    _region: PinnedRegion,
}

/// The pinned ranges of one mapping.
pub(super) struct Pins {
    base: *mut u8,
    len: usize,
    page: usize,
    /// Sorted by `start`, pairwise disjoint.
    ranges: Vec<Range>,
    /// A pin failed: no more attempts.
    failed: bool,
    /// What the mapping is, for the warning.
    what: &'static str,
    /// Successful pin calls so far (each growth is one).
    pins: u32,
}

/// The system's page size.
fn page_size() -> usize {
    // SAFETY: sysconf reads a system constant; no memory is involved.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

impl Pins {
    /// Nothing pinned yet in `map`.
    ///
    /// # Safety
    /// The caller drops this value before `map` is unmapped:
    /// its regions cover `map`'s memory.
    pub(super) unsafe fn new(map: &Mapping, what: &'static str) -> Self {
        Pins {
            base: map.as_ptr(),
            len: map.len(),
            page: page_size(),
            ranges: Vec::new(),
            failed: false,
            what,
            pins: 0,
        }
    }

    /// `[start, end)` rounded out to pages and clipped to the mapping.
    fn rounded(&self, start: usize, end: usize) -> (usize, usize) {
        let lo = start & !(self.page - 1);
        let hi = end
            .div_ceil(self.page)
            .saturating_mul(self.page)
            .min(self.len);
        (lo, hi)
    }

    /// Whether `[start, end)` lies inside one pinned range (an empty range
    /// always does).
    pub(super) fn covers(&self, start: usize, end: usize) -> bool {
        start >= end || self.ranges.iter().any(|r| r.start <= start && end <= r.end)
    }

    /// Makes `[start, end)` (offsets, clipped to the mapping) part of one
    /// pinned range, pinning through `device` if it is not yet. A failure
    /// stops pinning and returns what to warn about.
    #[must_use]
    fn ensure(&mut self, device: &dyn Device, start: usize, end: usize) -> Option<String> {
        let end = end.min(self.len);
        if self.failed || self.covers(start, end) {
            return None;
        }
        let (mut lo, mut hi) = self.rounded(start, end);
        // The ranges it overlaps are merged into it (released first: the
        // driver refuses overlapping registrations).
        let mut merged = Vec::new();
        let mut keep = Vec::with_capacity(self.ranges.len());
        for r in self.ranges.drain(..) {
            if r.start < hi && lo < r.end {
                lo = lo.min(r.start);
                hi = hi.max(r.end);
                merged.push((r.start, r.end));
                drop(r);
            } else {
                keep.push(r);
            }
        }
        self.ranges = keep;
        match self.pin(device, lo, hi) {
            Ok(region) => {
                self.pins += 1;
                self.insert(lo, hi, region);
                None
            }
            Err(e) => {
                self.failed = true;
                // Put back what was pinned before, as far as the device lets us.
                for (s, e) in merged {
                    if let Ok(region) = self.pin(device, s, e) {
                        self.insert(s, e, region);
                    }
                }
                Some(format!(
                    "could not pin bytes [{lo}, {hi}) of the {what}, continuing with \
                     pageable memory for what is not pinned yet: {e}",
                    what = self.what
                ))
            }
        }
    }

    fn pin(&self, device: &dyn Device, lo: usize, hi: usize) -> crate::Result<PinnedRegion> {
        // SAFETY: lo < hi <= len lies in the mapping, which outlives every
        // region (the contract of `new`).
        unsafe { device.pin(self.base.wrapping_add(lo), hi - lo) }
    }

    fn insert(&mut self, start: usize, end: usize, region: PinnedRegion) {
        let at = self.ranges.partition_point(|r| r.start < start);
        self.ranges.insert(
            at,
            Range {
                start,
                end,
                _region: region,
            },
        );
    }

    /// Bytes pinned now.
    pub(super) fn bytes(&self) -> usize {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }

    /// Successful pin calls so far.
    pub(super) fn pin_calls(&self) -> u32 {
        self.pins
    }
}

// SAFETY: `base` is an address into a mapping the owner owns and moves with
// this value; the regions are Send.
unsafe impl Send for Pins {}

/// The fewest slots whose prefixes are pinned: a maker pins at least this
/// much of each segment at create, so that small runs never grow the pins.
const MIN_PIN_SLOTS: u64 = 64;

/// What the copies of one upload read.
#[derive(Clone, Copy, Debug)]
pub(super) enum CopySource {
    /// The whole mirror.
    WholeMirror,
    /// The mirror's live prefixes.
    MirrorPrefixes,
    /// The mirror's live prefixes, gathered into `[0, end)` of the staging
    /// buffer, which the copy reads.
    Gathered { end: u64 },
}

/// The maker's pinning policy (`pin_mirror`; everything here is a no-op
/// without it):
///
/// * create: the header and `MIN_PIN_SLOTS`-slot prefixes of the four
///   segments (the whole mirror when `whole`, i.e. FULL);
/// * before an upload's copies: each prefix grows to the next power of two
///   of slots at or above N (at most W), so a steady workload pins nothing
///   after its first run and growing runs re-pin O(log W) times; the
///   staging buffer from its start as far as a gather of that many slots
///   fills it;
/// * a fresh mirror: pinned at once as far as the last one had grown (the
///   old one's regions are released before it is unmapped);
/// * drop: every region is released, which the maker does before the
///   mappings are unmapped.
///
/// Nothing is unpinned while a mapping lives, except ranges merged into a
/// larger one, before any copy of the upload. Invariant: with pinning on
/// and no pin failed, every copy reads from within one pinned range.
///
/// The first failed pin, of either mapping or of any mirror, is warned about
/// once and ends pinning for the maker's life: nothing is pinned afterwards,
/// not even a fresh mirror, so there is no second warning.
pub(super) struct MakerPins {
    mirror: Option<Pins>,
    staging: Option<Pins>,
    /// A layout-v2 maker's image buffer (its speculative image).
    image: Option<Pins>,
    /// A pin failed: warned, no more attempts.
    failed: bool,
    /// Slots whose prefixes are pinned in every segment of the mirror: the
    /// next power of two at or above the largest N uploaded (at least
    /// `MIN_PIN_SLOTS`, at most W).
    slots: u64,
    /// Pin the whole mirror, not prefixes (FULL zeroes and ships all of it).
    whole: bool,
    window: u64,
    seg: lrt_sm_segments,
}

impl MakerPins {
    /// The policy for a maker of window `window` (full layout `seg`); with
    /// `enabled`, it pins what create pins.
    ///
    /// # Safety
    /// The caller calls [`MakerPins::release`] (or drops this value) before
    /// `mirror` or `staging` is unmapped, and [`MakerPins::attach_mirror`]
    /// for a new mirror only after `release_mirror`.
    pub(super) unsafe fn new(
        enabled: bool,
        whole: bool,
        seg: lrt_sm_segments,
        window: u64,
        mirror: &Mapping,
        staging: Option<&Mapping>,
        device: &dyn Device,
    ) -> Self {
        let mut pins = MakerPins {
            // SAFETY: the caller's contract above.
            mirror: enabled.then(|| unsafe { Pins::new(mirror, "host mirror") }),
            // SAFETY: as above.
            staging: staging
                .filter(|_| enabled)
                .map(|s| unsafe { Pins::new(s, "staging buffer") }),
            image: None,
            failed: false,
            slots: MIN_PIN_SLOTS.min(window),
            whole,
            window,
            seg,
        };
        pins.pin_mirror_prefixes(device);
        pins
    }

    /// The policy of a layout-v2 maker: its one copy reads the staging
    /// buffer (a gathered image) or the image buffer (an image claimed in
    /// place), never the mirror (read by the host's gather only), so only
    /// those two are pinned, each from its start as far as the runs use it
    /// ([`MakerPins::ensure_staging`], [`MakerPins::ensure_image`]); nothing
    /// at create.
    ///
    /// # Safety
    /// As [`MakerPins::new`] for `staging` and `image`.
    pub(super) unsafe fn staging_only(
        enabled: bool,
        seg: lrt_sm_segments,
        window: u64,
        staging: &Mapping,
        image: Option<&Mapping>,
    ) -> Self {
        MakerPins {
            mirror: None,
            // SAFETY: the caller's contract above.
            staging: enabled.then(|| unsafe { Pins::new(staging, "staging buffer") }),
            // SAFETY: as above.
            image: image
                .filter(|_| enabled)
                .map(|i| unsafe { Pins::new(i, "image buffer") }),
            failed: false,
            slots: MIN_PIN_SLOTS.min(window),
            whole: false,
            window,
            seg,
        }
    }

    /// Pins `[start, end)` of the staging buffer (a v2 upload's copy).
    pub(super) fn ensure_staging(&mut self, device: &dyn Device, start: usize, end: usize) {
        Self::ensure(&mut self.failed, &mut self.staging, device, start, end);
    }

    /// Pins `[start, end)` of the image buffer (a v2 upload's copy of an
    /// image claimed in place).
    pub(super) fn ensure_image(&mut self, device: &dyn Device, start: usize, end: usize) {
        Self::ensure(&mut self.failed, &mut self.image, device, start, end);
    }

    /// Pins `[start, end)` of one mapping unless pinning has ended; the
    /// first failure warns and ends it.
    fn ensure(
        failed: &mut bool,
        pins: &mut Option<Pins>,
        device: &dyn Device,
        start: usize,
        end: usize,
    ) {
        let Some(pins) = pins.as_mut().filter(|_| !*failed) else {
            return;
        };
        if let Some(warning) = pins.ensure(device, start, end) {
            *failed = true;
            crate::diag::warn(&warning);
        }
    }

    /// Pins `[start, end)` of the mirror (AUTO's measurement copies from
    /// its start).
    pub(super) fn ensure_mirror(&mut self, device: &dyn Device, start: usize, end: usize) {
        Self::ensure(&mut self.failed, &mut self.mirror, device, start, end);
    }

    /// The mirror's parts a copy of `slots` live slots reads, as
    /// `(offset, length)`: all of `[0, end)` at the whole window.
    fn mirror_parts(&self, slots: u64) -> impl Iterator<Item = (u64, u64)> {
        let whole = slots >= self.window;
        let parts = live_parts(&self.seg, &self.seg, slots.min(self.window));
        let end = self.seg.end;
        parts
            .into_iter()
            .enumerate()
            .map(move |(i, p)| match (whole, i) {
                (true, 0) => (0, end),
                (true, _) => (0, 0),
                (false, _) => (p.from, p.len),
            })
    }

    /// Pins the mirror as far as `slots` (`whole`: all of it).
    fn pin_mirror_prefixes(&mut self, device: &dyn Device) {
        let slots = if self.whole { self.window } else { self.slots };
        let parts: Vec<(u64, u64)> = self.mirror_parts(slots).collect();
        for (off, len) in parts {
            self.ensure_mirror(device, off as usize, (off + len) as usize);
        }
    }

    /// Before the copies of an upload of `n` slots that read `source`:
    /// grows the pinned ranges so that every byte the copies read is pinned.
    pub(super) fn grow_for(&mut self, device: &dyn Device, n: u64, source: CopySource) {
        if self.mirror.is_none() || self.failed {
            return;
        }
        let want = n.max(MIN_PIN_SLOTS).next_power_of_two().min(self.window);
        self.slots = self.slots.max(want);
        match source {
            CopySource::WholeMirror => self.ensure_mirror(device, 0, self.seg.end as usize),
            CopySource::MirrorPrefixes => self.pin_mirror_prefixes(device),
            CopySource::Gathered { end } => {
                self.pin_mirror_prefixes(device);
                // Pin the staging buffer as far as the compact image of
                // `slots` slots (at least what this gather fills).
                let end = offsets_for(self.slots).end.max(end);
                Self::ensure(&mut self.failed, &mut self.staging, device, 0, end as usize);
            }
        }
    }

    /// Releases the mirror's regions (before the mirror is unmapped).
    pub(super) fn release_mirror(&mut self) {
        if let Some(pins) = &mut self.mirror {
            pins.ranges.clear();
        }
    }

    /// Follows a new mirror: pins it at once as far as the last one had
    /// grown.
    ///
    /// # Safety
    /// As [`MakerPins::new`] for `mirror`.
    pub(super) unsafe fn attach_mirror(&mut self, mirror: &Mapping, device: &dyn Device) {
        if self.mirror.is_some() {
            // SAFETY: the caller's contract.
            self.mirror = Some(unsafe { Pins::new(mirror, "host mirror") });
            self.pin_mirror_prefixes(device);
        }
    }

    /// Releases every region (before the mappings are unmapped).
    pub(super) fn release(&mut self) {
        self.mirror = None;
        self.staging = None;
        self.image = None;
    }

    fn each(&self) -> impl Iterator<Item = &Pins> {
        self.mirror
            .iter()
            .chain(self.staging.iter())
            .chain(self.image.iter())
    }

    /// Bytes page-locked now.
    pub(super) fn bytes(&self) -> u64 {
        self.each().map(Pins::bytes).sum::<usize>() as u64
    }

    /// Successful pin calls so far.
    pub(super) fn pin_calls(&self) -> u32 {
        self.each().map(Pins::pin_calls).sum()
    }

    /// Whether pinning was asked for and a pin failed.
    pub(super) fn failed(&self) -> bool {
        self.failed
    }
}
