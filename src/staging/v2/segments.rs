//! The v2 mirror's and compact image's segment offsets, checked (C:
//! `lrt_v2_ring_segment_offsets`, `lrt_v2_image_segments`); the unchecked
//! arithmetic is `layout.rs`'s.
use static_assertions::const_assert;

use super::super::abi::{LRT_MAX_TASK_WINDOW, LRT_MIN_TASK_WINDOW};
use super::super::v1::layout::{LRT_MAX_FANIN, LRT_MAX_SCALARS, LRT_MAX_TENSORS};
use super::super::window::is_window;
use super::layout::{lrt_v2_segments, v2_mirror_offsets, v2_offsets};
use crate::{Error, Result};

// The largest window whose mirror stays inside an i32 offset's reach is
// v1's largest window too.
const_assert!(v2_mirror_offsets(LRT_MAX_TASK_WINDOW).end <= i32::MAX as u64);
const_assert!(v2_mirror_offsets(2 * LRT_MAX_TASK_WINDOW).end > i32::MAX as u64);

/// The v2 mirror for window `task_window` (the reference's
/// `ring_segment_offsets(W)`; `end` is its `calculate_size(W)`).
///
/// `task_window` must be a task window (`super::super::window`): the mirror must fit
/// in `i32::MAX` bytes, the reach of a self-relative offset (the reference
/// refuses larger windows). Anything else is `ErrorKind::InvalidArgument`.
pub fn v2_ring_segment_offsets(task_window: u64) -> Result<lrt_v2_segments> {
    if !is_window(task_window) {
        let end = (task_window.is_power_of_two() && task_window <= 1 << 40)
            .then(|| v2_mirror_offsets(task_window).end);
        return Err(Error::invalid_argument(match end {
            Some(end) if task_window > LRT_MAX_TASK_WINDOW => format!(
                "task window {task_window} needs a {end}-byte v2 mirror, more than {} bytes \
                 (the reach of a self-relative offset; the largest window that fits is \
                 {LRT_MAX_TASK_WINDOW})",
                i32::MAX
            ),
            _ => {
                format!("task window {task_window} is not a power of two in [{LRT_MIN_TASK_WINDOW}, {LRT_MAX_TASK_WINDOW}]")
            }
        }));
    }
    Ok(v2_mirror_offsets(task_window))
}

/// The compact image of a run of `n` tasks whose pools hold `fanin_ids`,
/// `tensors` and `scalars` elements (as used, after the reference's
/// rounding): pitch `max(n, 1)`, each pool as used.
///
/// `InvalidArgument` when `n` exceeds `LRT_MAX_TASK_WINDOW`, a pool holds more than `n`
/// tasks at their caps can use (128 fanin ids, 32 tensors, 16 scalars each),
/// or the image would exceed `i32::MAX` bytes.
#[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
pub fn v2_image_segments(
    n: u64,
    fanin_ids: u64,
    tensors: u64,
    scalars: u64,
) -> Result<lrt_v2_segments> {
    if n > LRT_MAX_TASK_WINDOW {
        return Err(Error::invalid_argument(format!(
            "{n} tasks, more than the largest window ({LRT_MAX_TASK_WINDOW})"
        )));
    }
    for (what, used, cap) in [
        ("fanin ids", fanin_ids, LRT_MAX_FANIN),
        ("tensors", tensors, LRT_MAX_TENSORS),
        ("scalars", scalars, LRT_MAX_SCALARS),
    ] {
        if used > n * cap as u64 {
            return Err(Error::invalid_argument(format!(
                "{used} {what} is more than {n} tasks can hold ({cap} each)"
            )));
        }
    }
    // Within the caps the image is never larger than the largest mirror.
    Ok(v2_offsets(n.max(1), fanin_ids, tensors, scalars))
}

#[cfg(test)]
mod tests;
