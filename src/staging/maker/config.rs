//! What a maker is created with, and where each setting comes from when the
//! config leaves it open: the config, then the reference's environment
//! variables, then the reference's defaults.
use super::super::abi::{lrt_layout, lrt_upload_policy, LRT_DEFAULT_HEAP_SIZE};
use super::super::layout::{segment_offsets, DEFAULT_TASK_WINDOW, MAX_TASK_WINDOW};
use super::super::layout_v2::V2PoolUse;
use crate::{Error, Result};

/// The environment variable read when the config leaves the window at 0.
pub const TASK_WINDOW_ENV: &str = "PTO2_RING_TASK_WINDOW";
/// The environment variable read when the config leaves the heap size at 0.
pub const HEAP_SIZE_ENV: &str = "PTO2_RING_HEAP";
/// The smallest heap size the reference runtime accepts.
const MIN_HEAP_SIZE: u64 = 1024;

/// What a maker is created with (C: `lrt_maker_config`, whose flags become
/// the two booleans). The default leaves the window and the heap size to
/// the environment, with BOUNDED and no flags.
#[derive(Clone, Copy, Debug, Default)]
pub struct MakerConfig {
    /// Slots in the ring; 0 = env `PTO2_RING_TASK_WINDOW`, else 16384.
    pub task_window: u64,
    pub policy: lrt_upload_policy,
    /// Page-lock what the copies read (C: `LRT_MAKER_PIN_MIRROR`).
    pub pin_mirror: bool,
    /// Map a fresh mirror for every run instead of reusing one (C:
    /// `LRT_MAKER_FRESH_MIRROR`; a baseline).
    pub fresh_mirror: bool,
    /// The header's `heap_size`; 0 = env `PTO2_RING_HEAP`, else 256 MiB. At
    /// least 1024 (the reference's minimum).
    pub heap_size: u64,
    /// Which image the maker builds (default v1).
    pub layout: lrt_layout,
    /// Layout v2: room for the caller's bytes shipped before and after the
    /// image (C: `frame_before`, `frame_after`), at most 2^30 each.
    pub frame_before: u64,
    pub frame_after: u64,
    /// Layout v2: the pools' capacities in elements; 0 for a pool = the
    /// reference's (every task at its cap).
    pub v2_pools: V2PoolUse,
}

/// The settings a maker runs with, every one resolved.
#[derive(Clone, Copy, Debug)]
pub(super) struct Resolved {
    pub window: u64,
    pub heap_size: u64,
}

impl MakerConfig {
    /// Resolves the window and the heap size (config, environment,
    /// default). An unusable environment value is ignored with a warning
    /// (leanrt's log channel); an unusable configured value is
    /// `InvalidArgument`.
    pub(super) fn resolve(&self) -> Result<Resolved> {
        Ok(Resolved {
            window: resolve_window(self.task_window)?,
            heap_size: resolve_heap_size(self.heap_size)?,
        })
    }
}

/// An environment value as a number: decimal digits only, as the pool's
/// config values (no sign, no spaces: `" 64 "` is not a number).
fn env_number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn resolve_window(configured: u64) -> Result<u64> {
    if configured != 0 {
        segment_offsets(configured)?;
        return Ok(configured);
    }
    if let Some(raw) = std::env::var_os(TASK_WINDOW_ENV) {
        let text = raw.to_string_lossy();
        match env_number(&text) {
            Some(w) if segment_offsets(w).is_ok() => return Ok(w),
            _ => crate::diag::warn(&format!(
                "ignoring {TASK_WINDOW_ENV}={:?} (not a power of two in \
                 [4, {MAX_TASK_WINDOW}]; {MAX_TASK_WINDOW} is the largest window \
                 whose image fits in {} bytes); using {DEFAULT_TASK_WINDOW}",
                crate::error::quoted(&text).to_string(),
                i32::MAX
            )),
        }
    }
    Ok(DEFAULT_TASK_WINDOW)
}

fn resolve_heap_size(configured: u64) -> Result<u64> {
    if configured != 0 {
        if configured < MIN_HEAP_SIZE {
            return Err(Error::invalid_argument(format!(
                "heap size {configured} is below {MIN_HEAP_SIZE}"
            )));
        }
        return Ok(configured);
    }
    if let Some(raw) = std::env::var_os(HEAP_SIZE_ENV) {
        let text = raw.to_string_lossy();
        match env_number(&text) {
            Some(v) if v >= MIN_HEAP_SIZE => return Ok(v),
            _ => crate::diag::warn(&format!(
                "ignoring {HEAP_SIZE_ENV}={:?} (not an integer >= {MIN_HEAP_SIZE}); \
                 using {LRT_DEFAULT_HEAP_SIZE}",
                crate::error::quoted(&text).to_string()
            )),
        }
    }
    Ok(LRT_DEFAULT_HEAP_SIZE)
}
