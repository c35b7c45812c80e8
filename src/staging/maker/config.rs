//! What a maker is created with: [`MakerConfig`], its one conversion from
//! and to the C form (`lrt_maker_config`, field by field by name), and
//! where each setting comes from when the config leaves it open: the
//! config, then the reference's environment variables, then the
//! reference's defaults.
use std::ptr::addr_of;

use super::super::abi::{
    lrt_layout, lrt_maker_config, lrt_upload_policy, LAYOUTS, LRT_DEFAULT_HEAP_SIZE,
    LRT_DEFAULT_TASK_WINDOW, LRT_MAKER_FRESH_MIRROR, LRT_MAKER_PIN_MIRROR, LRT_MAX_TASK_WINDOW,
    LRT_MIN_HEAP_SIZE, LRT_MIN_TASK_WINDOW,
};
use super::super::v2::layout::V2PoolUse;
use super::super::window::{check_window, is_window};
use crate::{Error, Result};

/// The environment variable read when the config leaves the window at 0.
pub const TASK_WINDOW_ENV: &str = "PTO2_RING_TASK_WINDOW";
/// The environment variable read when the config leaves the heap size at 0.
pub const HEAP_SIZE_ENV: &str = "PTO2_RING_HEAP";

/// Flags `lrt_maker_config.flags` may hold.
const KNOWN_FLAGS: u32 = LRT_MAKER_PIN_MIRROR | LRT_MAKER_FRESH_MIRROR;

/// What a maker is created with: `lrt_maker_config` with its flags as
/// booleans and its pools as one [`V2PoolUse`]. Each field means what the
/// `lrt_maker_config` member of its name means (the header has the one
/// doc). The default is `lrt_maker_config_init`'s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MakerConfig {
    /// `task_window`.
    pub task_window: u64,
    /// `policy`.
    pub policy: lrt_upload_policy,
    /// `flags & LRT_MAKER_PIN_MIRROR`.
    pub pin_mirror: bool,
    /// `flags & LRT_MAKER_FRESH_MIRROR`.
    pub fresh_mirror: bool,
    /// `heap_size`.
    pub heap_size: u64,
    /// `layout`: which generation `RuntimeMaker::create` (the C create) builds;
    /// `MakerV1::new` and `MakerV2::new` build their own whatever it says.
    pub layout: lrt_layout,
    /// `frame_before`.
    pub frame_before: u64,
    /// `frame_after`.
    pub frame_after: u64,
    /// `v2_pool_fanin_ids`, `v2_pool_tensors`, `v2_pool_scalars`.
    pub v2_pools: V2PoolUse,
}

/// The settings every generation resolves alike.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Resolved {
    pub window: u64,
    pub heap_size: u64,
}

/// The policy for a raw C value (a C caller may store any integer in the
/// enum-typed field); unknown values are rejected.
fn policy_from_raw(raw: u32) -> Result<lrt_upload_policy> {
    use lrt_upload_policy::*;
    [
        LRT_UPLOAD_FULL,
        LRT_UPLOAD_BOUNDED,
        LRT_UPLOAD_COMPACT,
        LRT_UPLOAD_AUTO,
    ]
    .into_iter()
    .find(|&p| p as u32 == raw)
    .ok_or_else(|| {
        Error::invalid_argument(format!(
            "unknown upload policy {raw} (expected 0, 1, 2 or 3)"
        ))
    })
}

/// The layout for a raw C value; unknown values are rejected.
fn layout_from_raw(raw: u32) -> Result<lrt_layout> {
    LAYOUTS
        .into_iter()
        .find(|&l| l as u32 == raw)
        .ok_or_else(|| {
            let known: Vec<String> = LAYOUTS.iter().map(|&l| (l as u32).to_string()).collect();
            Error::invalid_argument(format!(
                "unknown layout {raw} (expected {})",
                known.join(" or ")
            ))
        })
}

impl MakerConfig {
    /// The config a C caller filled in: `InvalidArgument` for an unknown
    /// flag, policy or layout. The enum members are read as the integers a
    /// C caller may have stored in them, so any value is defined.
    ///
    /// # Safety
    /// `cfg` points to a readable `lrt_maker_config`.
    pub unsafe fn from_c(cfg: *const lrt_maker_config) -> Result<Self> {
        /// Member `$f` of `*cfg`, read as a `$t`.
        macro_rules! member {
            ($f:ident as $t:ty) => {
                // SAFETY: readable per the contract; `$t` is the member's
                // type, or the u32 a C enum member is stored as.
                unsafe { addr_of!((*cfg).$f).cast::<$t>().read() }
            };
        }
        let flags = member!(flags as u32);
        if flags & !KNOWN_FLAGS != 0 {
            return Err(Error::invalid_argument(format!(
                "unknown maker flags {:#x}",
                flags & !KNOWN_FLAGS
            )));
        }
        Ok(MakerConfig {
            task_window: member!(task_window as u64),
            policy: policy_from_raw(member!(policy as u32))?,
            pin_mirror: flags & LRT_MAKER_PIN_MIRROR != 0,
            fresh_mirror: flags & LRT_MAKER_FRESH_MIRROR != 0,
            heap_size: member!(heap_size as u64),
            layout: layout_from_raw(member!(layout as u32))?,
            frame_before: member!(frame_before as u64),
            frame_after: member!(frame_after as u64),
            v2_pools: V2PoolUse {
                fanin_ids: member!(v2_pool_fanin_ids as u64),
                tensors: member!(v2_pool_tensors as u64),
                scalars: member!(v2_pool_scalars as u64),
            },
        })
    }

    /// The C form of this config (`lrt_maker_config_init` writes the
    /// default's).
    pub fn to_c(&self) -> lrt_maker_config {
        let flag = |on: bool, bit: u32| if on { bit } else { 0 };
        lrt_maker_config {
            task_window: self.task_window,
            policy: self.policy,
            flags: flag(self.pin_mirror, LRT_MAKER_PIN_MIRROR)
                | flag(self.fresh_mirror, LRT_MAKER_FRESH_MIRROR),
            heap_size: self.heap_size,
            layout: self.layout,
            frame_before: self.frame_before,
            frame_after: self.frame_after,
            v2_pool_fanin_ids: self.v2_pools.fanin_ids,
            v2_pool_tensors: self.v2_pools.tensors,
            v2_pool_scalars: self.v2_pools.scalars,
        }
    }

    /// Resolves the window and the heap size (config, environment,
    /// default). An unusable environment value is ignored with a warning
    /// (leanrt's log channel); an unusable configured value is
    /// `InvalidArgument`.
    pub(crate) fn resolve(&self) -> Result<Resolved> {
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
        return check_window(configured);
    }
    if let Some(raw) = std::env::var_os(TASK_WINDOW_ENV) {
        let text = raw.to_string_lossy();
        match env_number(&text) {
            Some(w) if is_window(w) => return Ok(w),
            _ => crate::diag::warn(&format!(
                "ignoring {TASK_WINDOW_ENV}={:?} (not a power of two in \
                 [{LRT_MIN_TASK_WINDOW}, {LRT_MAX_TASK_WINDOW}]; {LRT_MAX_TASK_WINDOW} is the \
                 largest window whose image fits in {} bytes); using {LRT_DEFAULT_TASK_WINDOW}",
                crate::error::quoted(&text).to_string(),
                i32::MAX
            )),
        }
    }
    Ok(LRT_DEFAULT_TASK_WINDOW)
}

fn resolve_heap_size(configured: u64) -> Result<u64> {
    if configured != 0 {
        if configured < LRT_MIN_HEAP_SIZE {
            return Err(Error::invalid_argument(format!(
                "heap size {configured} is below {LRT_MIN_HEAP_SIZE}"
            )));
        }
        return Ok(configured);
    }
    if let Some(raw) = std::env::var_os(HEAP_SIZE_ENV) {
        let text = raw.to_string_lossy();
        match env_number(&text) {
            Some(v) if v >= LRT_MIN_HEAP_SIZE => return Ok(v),
            _ => crate::diag::warn(&format!(
                "ignoring {HEAP_SIZE_ENV}={:?} (not an integer >= {LRT_MIN_HEAP_SIZE}); \
                 using {LRT_DEFAULT_HEAP_SIZE}",
                crate::error::quoted(&text).to_string()
            )),
        }
    }
    Ok(LRT_DEFAULT_HEAP_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two directions are one conversion: every member survives the
    /// round trip, by name, and a C config with an unknown enum value or
    /// flag is refused.
    #[test]
    fn the_c_form_round_trips_by_name() {
        let cfg = MakerConfig {
            task_window: 1024,
            policy: lrt_upload_policy::LRT_UPLOAD_AUTO,
            pin_mirror: true,
            fresh_mirror: false,
            heap_size: 4096,
            layout: lrt_layout::LRT_LAYOUT_V2,
            frame_before: 704,
            frame_after: 32,
            v2_pools: V2PoolUse {
                fanin_ids: 1,
                tensors: 2,
                scalars: 3,
            },
        };
        let c = cfg.to_c();
        assert_eq!(c.flags, LRT_MAKER_PIN_MIRROR);
        assert_eq!(
            (c.v2_pool_fanin_ids, c.v2_pool_tensors, c.v2_pool_scalars),
            (1, 2, 3)
        );
        // SAFETY: a live, readable config.
        assert_eq!(unsafe { MakerConfig::from_c(&c) }.unwrap(), cfg);
        let d = MakerConfig::default();
        // SAFETY: as above.
        assert_eq!(unsafe { MakerConfig::from_c(&d.to_c()) }.unwrap(), d);
        let mut bad = c;
        bad.flags = 4;
        // SAFETY: as above.
        assert!(unsafe { MakerConfig::from_c(&bad) }.is_err());
        // What a C caller may store: any integer in the layout member, held
        // as bytes (never read as an lrt_layout).
        let mut raw = std::mem::MaybeUninit::new(c);
        let p = raw.as_mut_ptr();
        // SAFETY: the member lies inside `raw`; the repr(C) enum is stored
        // as a u32.
        unsafe { std::ptr::addr_of_mut!((*p).layout).cast::<u32>().write(7) };
        // SAFETY: `raw` is readable; from_c reads the enum members as
        // integers.
        let e = unsafe { MakerConfig::from_c(raw.as_ptr()) }.unwrap_err();
        assert!(e.message().contains("expected 0 or 1"), "{}", e.message());
    }
}
