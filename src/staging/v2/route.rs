//! The routes an upload takes (`ship.rs` ships by them, its module docs
//! say why AUTO chooses which) and the route planned for a run at
//! `set_pool_use`, kept by the maker until the upload.
use super::layout::V2PoolUse;

/// How an upload ships its image (`ship.rs`'s module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Route {
    /// `[before | image | after]` in one copy.
    OneCopy,
    /// The per-task part gathered, each used pool from the mirror.
    Split,
    /// Only the header gathered (with the frame before); each slot
    /// segment's live part and each used pool from the mirror, the slots'
    /// offsets moved there for the copy and back.
    Direct,
}

/// The route planned for a run when the host declared it written
/// (`MakerV2::plan_route`), and what it was planned for.
#[derive(Clone, Copy, Debug)]
pub(super) struct PlannedRoute {
    pub(super) n: u64,
    pub(super) used: V2PoolUse,
    /// The frames' lengths (before, after).
    pub(super) frames: (u64, u64),
    pub(super) route: Route,
}
