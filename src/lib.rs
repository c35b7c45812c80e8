//! leanrt: lean host-side runtime pieces with a C ABI.
//!
//! * [`error`]: the error model shared by the core and the C boundary.
//! * [`alloc`]: allocation that cannot abort the host (the process's
//!   global allocator with its emergency reserve, and fallible helpers).
//! * [`thread_exit`]: thread-local destructors of leanrt's threads kept
//!   without allocating (the C library's registration aborts when out of
//!   memory).
//! * `ffi`: the C boundary (`lrt_*` functions); no logic of its own.
//!
//! The safe core lives in the other modules; each `lrt_*` function in
//! `src/ffi/` is a few lines that check arguments and call into it.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod alloc;
pub mod device;
pub mod diag;
pub mod error;
pub mod ffi;
pub mod pool;
pub mod staging;
pub mod thread_exit;

pub use error::{Error, ErrorKind, Result};

/// The emergency reserve behind the system allocator (`alloc`) and the
/// allocation-free thread-local destructor table (`thread_exit`): on by
/// default; a Rust program that links leanrt as a crate and brings its own
/// global allocator (or wants the C library's destructor registration for
/// its own thread-locals) turns the `emergency-reserve` feature off.
#[cfg(feature = "emergency-reserve")]
#[global_allocator]
static GLOBAL: alloc::Allocator = alloc::Allocator;

/// The library version string, `"leanrt X.Y.Z"`.
pub const VERSION: &str = concat!("leanrt ", env!("CARGO_PKG_VERSION"));
