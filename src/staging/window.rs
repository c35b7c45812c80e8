//! The task window every generation's image is dimensioned for: a power of
//! two in `[LRT_MIN_TASK_WINDOW, LRT_MAX_TASK_WINDOW]` (the bounds and the
//! default are C constants in `abi.rs`). The one check of a window; the
//! generations' layouts pin, with static assertions, that their images of
//! the largest window fit the reference's 32-bit offsets.
use super::abi::{LRT_MAX_TASK_WINDOW, LRT_MIN_TASK_WINDOW};
use crate::{Error, Result};

/// Whether `w` is a task window.
pub(crate) const fn is_window(w: u64) -> bool {
    w >= LRT_MIN_TASK_WINDOW && w <= LRT_MAX_TASK_WINDOW && w.is_power_of_two()
}

/// `w` if it is a task window, else `InvalidArgument` naming the bounds.
pub(crate) fn check_window(w: u64) -> Result<u64> {
    if is_window(w) {
        return Ok(w);
    }
    Err(Error::invalid_argument(format!(
        "task window {w} is not a power of two in [{LRT_MIN_TASK_WINDOW}, \
         {LRT_MAX_TASK_WINDOW}] (the largest window whose image fits in INT32_MAX bytes)"
    )))
}
