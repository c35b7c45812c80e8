//! The library APIs the benchmarks call (agreed API of DESIGN.md's staging and
//! pool parts). With the temporary `stub-lib` feature they come from naive
//! in-crate stand-ins instead, so the CLI can be developed before they land.
#[cfg(not(feature = "stub-lib"))]
pub use leanrt::{device, pool, staging};

#[cfg(feature = "stub-lib")]
pub use crate::stub_lib::{device, pool, staging};
