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
//! [`MakerPins`] holds the pins of every host buffer a maker registers
//! (the mirror, a staging buffer, ...) and the maker's one failure rule;
//! what to pin when is its generation's policy (v1: `super::v1::pins`; v2:
//! `super::v2::ship`).
use std::sync::Arc;

use super::mirror::Mapping;
use crate::device::{Device, PinnedRegion};

/// One pinned range `[start, end)` of the mapping (offsets).
struct Range {
    start: usize,
    end: usize,
    _region: PinnedRegion,
}

/// The pinned ranges of one mapping.
struct Pins {
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
    unsafe fn new(map: &Mapping, what: &'static str) -> Self {
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
    fn covers(&self, start: usize, end: usize) -> bool {
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
    fn bytes(&self) -> usize {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }

    /// Successful pin calls so far.
    fn pin_calls(&self) -> u32 {
        self.pins
    }
}

// SAFETY: `base` is an address into a mapping the owner owns and moves with
// this value; the regions are Send.
unsafe impl Send for Pins {}

/// A host buffer a maker pins, as its generation registered it
/// ([`MakerPins::track`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PinTarget(usize);

/// The pins of a maker's host buffers and its one failure rule: with
/// `pin_mirror` off every call is a no-op; the first failed pin, of any
/// buffer, is warned about once and ends pinning for the maker's life (no
/// buffer, not even a fresh mirror, is pinned afterwards, so there is no
/// second warning); the regions pinned before stay until they are released.
/// Invariant, with pinning on and no pin failed: every range a generation
/// has ensured lies inside one pinned region.
pub(crate) struct MakerPins {
    enabled: bool,
    failed: bool,
    /// The registered buffers (None: released).
    buffers: Vec<Option<Pins>>,
}

impl MakerPins {
    /// Nothing registered; `enabled`: `pin_mirror` was asked for.
    pub(crate) fn new(enabled: bool) -> Self {
        MakerPins {
            enabled,
            failed: false,
            buffers: Vec::new(),
        }
    }

    /// Registers `map` (named `what` in the warning), nothing pinned yet.
    ///
    /// # Safety
    /// The caller releases the buffer ([`MakerPins::release`],
    /// [`MakerPins::release_all`], or by dropping this value) before `map`
    /// is unmapped.
    pub(crate) unsafe fn track(&mut self, map: &Mapping, what: &'static str) -> PinTarget {
        // SAFETY: the caller's contract above.
        self.buffers
            .push(self.enabled.then(|| unsafe { Pins::new(map, what) }));
        PinTarget(self.buffers.len() - 1)
    }

    /// Registers `map` in place of `target`'s buffer, which must have been
    /// released, nothing pinned yet.
    ///
    /// # Safety
    /// As [`MakerPins::track`].
    pub(crate) unsafe fn retrack(&mut self, target: PinTarget, map: &Mapping) {
        let what = self.buffers[target.0].as_ref().map_or("", |p| p.what);
        // SAFETY: the caller's contract above.
        self.buffers[target.0] = self.enabled.then(|| unsafe { Pins::new(map, what) });
    }

    /// Whether pins are still being made (asked for, none failed).
    pub(crate) fn active(&self) -> bool {
        self.enabled && !self.failed
    }

    /// Makes `[start, end)` of `target`'s buffer part of one pinned range
    /// unless pinning has ended; the first failure warns and ends it.
    #[inline]
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    pub(crate) fn ensure(
        &mut self,
        target: PinTarget,
        device: &Arc<dyn Device>,
        start: usize,
        end: usize,
    ) {
        // Off (the usual case) without a look at the buffers or the device
        // (the device is reached only past this test: a cold upload then
        // reads neither its vtable nor the buffers' lines).
        if !self.active() {
            return;
        }
        let Some(pins) = self.buffers[target.0].as_mut() else {
            return;
        };
        if let Some(warning) = pins.ensure(&**device, start, end) {
            self.failed = true;
            crate::diag::warn(&warning);
        }
    }

    /// Releases `target`'s regions (before its buffer is unmapped); the
    /// buffer stays registered, to be pinned again from nothing.
    pub(crate) fn release(&mut self, target: PinTarget) {
        if let Some(pins) = self.buffers[target.0].as_mut() {
            pins.ranges.clear();
        }
    }

    /// Releases every region (before the buffers are unmapped).
    pub(crate) fn release_all(&mut self) {
        self.buffers.clear();
    }

    fn each(&self) -> impl Iterator<Item = &Pins> {
        self.buffers.iter().flatten()
    }

    /// Bytes page-locked now.
    pub(crate) fn bytes(&self) -> u64 {
        self.each().map(Pins::bytes).sum::<usize>() as u64
    }

    /// Successful pin calls so far.
    pub(crate) fn pin_calls(&self) -> u32 {
        self.each().map(Pins::pin_calls).sum()
    }

    /// Whether pinning was asked for and a pin failed.
    pub(crate) fn failed(&self) -> bool {
        self.failed
    }
}
