//! Staging: the runtime maker. See `README.md` in this folder and
//! `docs/STAGING.md` for the init-on-write and copy contracts.
//!
//! * [`layout`]: the byte-compatible SM image structs and `segment_offsets`.
//! * `mirror`: the untouched, reusable anonymous host mirror.
//! * `maker`: [`RuntimeMaker`] and its config, slot and report types.
mod image_v2;
pub mod layout;
pub mod layout_v2;
mod maker;
mod mirror;
mod pin;

pub use image_v2::{lrt_v2_task_slot, TensorRecord, V2ClaimDesc, V2PoolUse};
pub use layout::*;
pub use layout_v2::*;
pub(crate) use maker::DEFAULT_HEAP_SIZE;
pub use maker::{
    ClaimDesc, CostModel, MakerConfig, RuntimeMaker, TaskSlot, UploadPolicy, UploadReport,
    COMPACT_GATHER_MAX_BYTES, HEAP_SIZE_ENV, TASK_WINDOW_ENV,
};
