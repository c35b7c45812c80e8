//! The v1 maker's pinning policy over its mirror and staging buffer (the
//! pins themselves, and the rule that the first failure ends pinning, are
//! the core's `super::super::pin::MakerPins`):
//!
//! * create: the header and `MIN_PIN_SLOTS`-slot prefixes of the four
//!   segments (the whole mirror under FULL, which zeroes and ships all of
//!   it);
//! * before an upload's copies: each prefix grows to the next power of two
//!   of slots at or above N (at most W), so a steady workload pins nothing
//!   after its first run and growing runs re-pin O(log W) times; the
//!   staging buffer from its start as far as a gather of that many slots
//!   fills it;
//! * a fresh mirror: pinned at once as far as the last one had grown (the
//!   old one's regions are released before it is unmapped).
//!
//! Nothing is unpinned while a mapping lives, except ranges merged into a
//! larger one, before any copy of the upload. Invariant: with pinning on
//! and no pin failed, every copy reads from within one pinned range.
use super::super::maker::MakerCore;
use super::super::pin::PinTarget;
use super::layout::{live_parts, lrt_sm_segments, offsets_for};

/// What the copies of one upload read (its route's, `upload.rs`).
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

/// The fewest slots whose prefixes are pinned: a maker pins at least this
/// much of each segment at create, so that small runs never grow the pins.
const MIN_PIN_SLOTS: u64 = 64;

/// Where a v1 maker's pins stand.
pub(super) struct V1Pins {
    /// The mirror, as the core's pins know it.
    pub(super) mirror: PinTarget,
    /// The staging buffer (COMPACT's and AUTO's gather), if there is one.
    pub(super) staging: Option<PinTarget>,
    /// Slots whose prefixes are pinned in every segment of the mirror: the
    /// next power of two at or above the largest N uploaded (at least
    /// `MIN_PIN_SLOTS`, at most W).
    slots: u64,
    /// Pin the whole mirror, not prefixes (FULL).
    whole: bool,
}

impl V1Pins {
    /// The policy of a maker of window `window`; nothing pinned yet.
    pub(super) fn new(
        mirror: PinTarget,
        staging: Option<PinTarget>,
        whole: bool,
        window: u64,
    ) -> Self {
        V1Pins {
            mirror,
            staging,
            slots: MIN_PIN_SLOTS.min(window),
            whole,
        }
    }

    /// The mirror's parts a copy of `slots` live slots reads, as
    /// `(offset, length)`: all of `[0, end)` at the whole window.
    fn mirror_parts(seg: &lrt_sm_segments, window: u64, slots: u64) -> Vec<(u64, u64)> {
        if slots >= window {
            return vec![(0, seg.end)];
        }
        live_parts(seg, seg, slots)
            .into_iter()
            .map(|p| (p.from, p.len))
            .collect()
    }

    /// Pins the mirror of `core` (full layout `seg`) as far as the slots
    /// grown so far (`whole`: all of it): at create, and for a fresh mirror.
    pub(super) fn pin_mirror(&self, core: &mut MakerCore, seg: &lrt_sm_segments) {
        let slots = if self.whole { core.window } else { self.slots };
        for (off, len) in Self::mirror_parts(seg, core.window, slots) {
            core.pins.ensure(
                self.mirror,
                &core.device,
                off as usize,
                (off + len) as usize,
            );
        }
    }

    /// Before the copies of an upload of `n` slots that read `source`:
    /// grows the pinned ranges so that every byte the copies read is pinned.
    pub(super) fn grow_for(
        &mut self,
        core: &mut MakerCore,
        seg: &lrt_sm_segments,
        n: u64,
        source: CopySource,
    ) {
        if !core.pins.active() {
            return;
        }
        let want = n.max(MIN_PIN_SLOTS).next_power_of_two().min(core.window);
        self.slots = self.slots.max(want);
        match source {
            CopySource::WholeMirror => {
                core.pins
                    .ensure(self.mirror, &core.device, 0, seg.end as usize)
            }
            CopySource::MirrorPrefixes => self.pin_mirror(core, seg),
            CopySource::Gathered { end: gather_end } => {
                self.pin_mirror(core, seg);
                // The staging buffer as far as the compact image of `slots`
                // slots (at least what this gather fills).
                if let Some(staging) = self.staging {
                    let end = offsets_for(self.slots).end.max(gather_end);
                    core.pins.ensure(staging, &core.device, 0, end as usize);
                }
            }
        }
    }
}
