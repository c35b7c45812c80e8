//! The library APIs the benchmarks call (agreed API of DESIGN.md's staging and
//! pool parts). With the temporary `stub-lib` feature the pool comes from a
//! naive in-crate stand-in instead, until it lands in the library.
pub use leanrt::{device, staging};

#[cfg(not(feature = "stub-lib"))]
pub use leanrt::pool;

#[cfg(feature = "stub-lib")]
pub use crate::stub_lib::pool;
