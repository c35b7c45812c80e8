//! Staging: the runtime maker (issue 3). See `README.md` in this folder for
//! the init-on-write and copy contracts.
//!
//! * [`layout`]: the byte-compatible SM image structs and `segment_offsets`.
//! * `mirror`: the untouched, reusable anonymous host mirror.
//! * `maker`: [`RuntimeMaker`] and its config, slot and report types.
pub mod layout;
mod maker;
mod mirror;

pub use layout::*;
pub use maker::{
    MakerConfig, RuntimeMaker, TaskSlot, UploadPolicy, UploadReport, MAKER_FRESH_MIRROR,
    MAKER_PIN_MIRROR, TASK_WINDOW_ENV,
};
