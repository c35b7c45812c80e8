//! The maker behind the C handle (`lrt_runtime_maker`): one of the
//! generations, chosen once, at create, by `lrt_maker_config.layout`. This
//! file is the registration of the generations, and the only place that
//! lists them: the enum, the create that picks one, and the match that
//! lends the C calls every maker answers ([`Maker`]) the core of whichever
//! it is. Why an enum and not a trait object: `super::maker`'s module doc.
//!
//! A generation's own C calls (`lrt_runtime_maker_begin_run`,
//! `lrt_runtime_maker_v2_claim_slot`, ...) take the maker as their
//! generation's type ([`RuntimeMaker::generation_mut`]); one made on a maker
//! of another generation is `InvalidArgument` and changes nothing.
use std::sync::Arc;

use super::abi::lrt_layout;
use super::maker::{BorrowedImage, Generation, Maker, MakerConfig, MakerCore};
use super::v1::MakerV1;
use super::v2::MakerV2;
use crate::device::Device;
use crate::{Error, Result};

/// The runtime maker (C: `lrt_runtime_maker`): a maker of the generation
/// its config named. `Send` but not `Sync`, as every maker.
// The variants differ in size, and that is fine: a maker lives in one heap
// allocation behind its C handle, which boxing a variant would only make two.
#[allow(clippy::large_enum_variant)]
pub enum RuntimeMaker {
    /// `LRT_LAYOUT_V1`.
    V1(MakerV1),
    /// `LRT_LAYOUT_V2`.
    V2(MakerV2),
}

/// A generation the C handle may hold: how to find it in a
/// [`RuntimeMaker`].
pub trait Registered: Generation + Sized {
    /// The maker as this generation, if it is one.
    fn of(maker: &RuntimeMaker) -> Option<&Self>;
    /// The same, to change.
    fn of_mut(maker: &mut RuntimeMaker) -> Option<&mut Self>;
}

impl Registered for MakerV1 {
    fn of(maker: &RuntimeMaker) -> Option<&Self> {
        match maker {
            RuntimeMaker::V1(m) => Some(m),
            _ => None,
        }
    }
    fn of_mut(maker: &mut RuntimeMaker) -> Option<&mut Self> {
        match maker {
            RuntimeMaker::V1(m) => Some(m),
            _ => None,
        }
    }
}

impl Registered for MakerV2 {
    fn of(maker: &RuntimeMaker) -> Option<&Self> {
        match maker {
            RuntimeMaker::V2(m) => Some(m),
            _ => None,
        }
    }
    fn of_mut(maker: &mut RuntimeMaker) -> Option<&mut Self> {
        match maker {
            RuntimeMaker::V2(m) => Some(m),
            _ => None,
        }
    }
}

impl RuntimeMaker {
    /// A maker of the generation `cfg.layout` names, its uploads going to
    /// the region `borrowed` lends, else to one it allocates
    /// (`MakerV1::new` / `with_image`, `MakerV2::new` / `with_image`).
    pub fn create(
        cfg: &MakerConfig,
        device: Arc<dyn Device>,
        borrowed: Option<BorrowedImage>,
    ) -> Result<Self> {
        Ok(match cfg.layout {
            lrt_layout::LRT_LAYOUT_V1 => Self::V1(MakerV1::create(cfg, device, borrowed)?),
            lrt_layout::LRT_LAYOUT_V2 => Self::V2(MakerV2::create(cfg, device, borrowed)?),
        })
    }

    /// The maker as generation `G`, for a call of `G`'s own;
    /// `InvalidArgument` if it is of another.
    pub fn generation<G: Registered>(&self) -> Result<&G> {
        let made = self.core().name();
        G::of(self).ok_or_else(|| wrong_generation::<G>(made))
    }

    /// The same, to change.
    pub fn generation_mut<G: Registered>(&mut self) -> Result<&mut G> {
        let made = self.core().name();
        G::of_mut(self).ok_or_else(|| wrong_generation::<G>(made))
    }
}

/// The error of a call of generation `G` on a maker of generation `made`.
fn wrong_generation<G: Generation>(made: &str) -> Error {
    Error::invalid_argument(format!(
        "this call builds the {} image; this maker was created with layout {made} (use \
         that layout's calls)",
        G::NAME
    ))
}

impl Maker for RuntimeMaker {
    fn core(&self) -> &MakerCore {
        match self {
            RuntimeMaker::V1(m) => m.core(),
            RuntimeMaker::V2(m) => m.core(),
        }
    }
    fn core_mut(&mut self) -> &mut MakerCore {
        match self {
            RuntimeMaker::V1(m) => m.core_mut(),
            RuntimeMaker::V2(m) => m.core_mut(),
        }
    }
}
