//! The v1 image's segment offsets for a task window, checked (C:
//! `lrt_sm_ring_segment_offsets`); the unchecked arithmetic is `layout.rs`'s.
use static_assertions::const_assert;

use super::super::abi::LRT_MAX_TASK_WINDOW;
use super::super::window::check_window;
use super::layout::{lrt_sm_segments, offsets_for};
use crate::Result;

// LRT_MAX_TASK_WINDOW is the largest power of two whose image fits in
// i32::MAX.
const_assert!(offsets_for(LRT_MAX_TASK_WINDOW).end <= i32::MAX as u64);
const_assert!(offsets_for(2 * LRT_MAX_TASK_WINDOW).end > i32::MAX as u64);

/// The segment offsets of the image for window `task_window`, a task
/// window (`super::super::window`; anything else is `InvalidArgument`):
/// the reference runtime's images are addressed with 32-bit offsets, and
/// its current code refuses larger ones.
pub fn segment_offsets(task_window: u64) -> Result<lrt_sm_segments> {
    // The largest window's image fits (pinned by the const_assert above).
    Ok(offsets_for(check_window(task_window)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_windows_name_the_header_range() {
        for w in [0, 3, 5, 6, 1 << 19, 1 << 31, u64::MAX] {
            let e = segment_offsets(w).unwrap_err();
            assert!(e.message().contains("[4, 262144]"), "{w}: {}", e.message());
        }
        assert!(segment_offsets(LRT_MAX_TASK_WINDOW).is_ok());
        assert!(segment_offsets(4).is_ok());
    }

    #[test]
    fn rejects_bad_windows() {
        for w in [
            0,
            1,
            2,
            3,
            5,
            12,
            16385,
            1 << 19,
            1 << 30,
            1 << 31,
            u64::MAX,
        ] {
            assert!(segment_offsets(w).is_err(), "{w}");
        }
        for w in [4, 8, 1024, 1 << 18] {
            let s = segment_offsets(w).unwrap();
            assert!(s.end <= i32::MAX as u64);
            assert_eq!(s.payloads % 64, 0);
            assert_eq!(s.slot_states % 64, 0);
            assert_eq!(s.completion_flags % 64, 0);
        }
    }
}
