//! Staging: the runtime maker (C: `lrt_runtime_maker_*`; the CLI's `bind`
//! command measures it, after the reference runtime's name for this step).
//! See `README.md` in this folder for the cross-file design and
//! `docs/STAGING.md` for the concepts.
//!
//! * [`abi`]: the maker's C-visible data (config, claim descriptor, slot,
//!   upload report and policy, `LRT_*` constants).
//! * [`layout`]: the byte-compatible SM image structs and `segment_offsets`.
//! * `mirror`: the untouched, reusable anonymous host mirror.
//! * `pin`: page-locking that follows the runs, and the maker's policy.
//! * [`one_call`]: one call at a time on a shared value (the C handle's
//!   guard).
//! * `maker`: [`RuntimeMaker`].
//! * [`layout_v2`]: the reference's current image (layout v2); its claims
//!   and image assembly are `maker/claim_v2.rs` and `maker/upload_v2.rs`.
pub mod abi;
pub mod layout;
pub mod layout_v2;
mod maker;
mod mirror;
pub mod one_call;
mod pin;

/// The atomics `one_call` is written against (loom's in `tests/staging_loom.rs`).
mod sync {
    pub use std::sync::atomic::{AtomicBool, Ordering};
}

pub use abi::*;
pub use layout::*;
pub use layout_v2::*;
pub use maker::{
    BorrowedImage, ClaimDesc, CostModel, MakerConfig, RuntimeMaker, TensorRecord, V2ClaimDesc,
    V2Frame, COMPACT_GATHER_MAX_BYTES, HEAP_SIZE_ENV, TASK_WINDOW_ENV,
};
