//! Staging: the runtime maker (C: `lrt_runtime_maker_*`; the CLI's `bind`
//! command measures it, after the reference runtime's name for this step).
//! See `README.md` in this folder for the cross-file design and
//! `docs/STAGING.md` for the concepts.
//!
//! * [`abi`]: the maker's C-visible data (config, claim descriptor, slot,
//!   upload report and policy, `LRT_*` constants).
//! * `maker`: the maker core every generation is built on ([`MakerCore`],
//!   the calls every maker answers, [`Maker`]), the config, the shared
//!   claim fields, the cost model, the device region.
//! * `v1`, `v2`: one generation of the reference's image each, with its
//!   C structs, its claims and its upload ([`MakerV1`], [`MakerV2`]).
//! * `runtime_maker`: [`RuntimeMaker`], the C handle's maker, one of the
//!   generations chosen at create (the registration of the generations).
//! * `window`, `align`: the task window's one check, the segment rounding.
//! * `mirror`: the untouched, reusable anonymous host mirror.
//! * `pin`: page-locking that follows the runs, for every host buffer.
//! * `prefetch`: what a small upload does about cold lines (the staging
//!   lines asked for at planning, the upload's code in one section).
//! * [`one_call`]: one call at a time on a shared value (the C handle's
//!   guard).
pub mod abi;
mod align;
mod maker;
mod mirror;
pub mod one_call;
mod pin;
mod prefetch;
mod runtime_maker;
mod v1;
mod v2;
mod window;

/// The atomics `one_call` is written against (loom's in `tests/staging_loom.rs`).
mod sync {
    pub use std::sync::atomic::{AtomicBool, Ordering};
}

pub use abi::*;
pub use maker::{
    BorrowedImage, ClaimDesc, CostModel, Generation, Maker, MakerConfig, MakerCore, StatusWords,
    HEAP_SIZE_ENV, TASK_WINDOW_ENV,
};
pub use runtime_maker::{Registered, RuntimeMaker};
pub use v1::layout::*;
pub use v1::segments::segment_offsets;
pub use v1::{MakerV1, COMPACT_GATHER_MAX_BYTES};
pub use v2::layout::*;
pub use v2::segments::{v2_image_segments, v2_ring_segment_offsets};
pub use v2::{MakerV2, TensorRecord, V2ClaimDesc, V2Frame};
