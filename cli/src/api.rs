//! The library APIs the benchmarks call (the agreed Rust API of DESIGN.md's
//! staging and pool parts, and the device backends).
pub use leanrt::{device, pool, staging};
