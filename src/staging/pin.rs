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
//! A failed pin is reported once through `crate::diag::warn`; the `Pins`
//! then stops pinning (the regions it still holds stay pinned until it is
//! dropped) and the copies read pageable memory, which is slower but
//! correct.
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
    /// pinned range, pinning through `device` if it is not yet; a failure
    /// warns once and stops pinning.
    pub(super) fn ensure(&mut self, device: &dyn Device, start: usize, end: usize) {
        let end = end.min(self.len);
        if self.failed || self.covers(start, end) {
            return;
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
            }
            Err(e) => {
                self.failed = true;
                crate::diag::warn(&format!(
                    "could not pin bytes [{lo}, {hi}) of the {what}, continuing with \
                     pageable memory for what is not pinned yet: {e}",
                    what = self.what
                ));
                // Put back what was pinned before, as far as the device lets us.
                for (s, e) in merged {
                    if let Ok(region) = self.pin(device, s, e) {
                        self.insert(s, e, region);
                    }
                }
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

    /// Whether a pin failed (pinning stopped).
    pub(super) fn failed(&self) -> bool {
        self.failed
    }
}

// SAFETY: `base` is an address into a mapping the owner owns and moves with
// this value; the regions are Send.
unsafe impl Send for Pins {}
