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

/// The library version string, `"leanrt X.Y.Z"` (C: `lrt_version`).
pub const VERSION: &str = match VERSION_C.to_str() {
    Ok(v) => v,
    Err(_) => panic!("the version string is not UTF-8"),
};

/// [`VERSION`] as C reads it, NUL-terminated: the one place it is built.
pub const VERSION_C: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
    concat!("leanrt ", env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
) {
    Ok(v) => v,
    Err(_) => panic!("the version string has an interior NUL"),
};
