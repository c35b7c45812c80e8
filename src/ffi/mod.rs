//! The C boundary: every `extern "C"` function of leanrt, the opaque
//! handles, the panic boundary and the adapters of a host's callbacks. The
//! C-visible plain data (structs, callback types, constants) belongs to the
//! core's `abi` files and is re-exported here, never copied.
//!
//! Each entry point is a few lines inside [`ffi_status!`] (functions that
//! return `lrt_status`) or [`ffi_value!`] (functions that return a value or
//! nothing): they check pointers through the helpers in [`boundary`], call
//! the safe core, and map its [`Error`](crate::Error) to a status. Panics are
//! caught there and reported as `LRT_ERR_INTERNAL`. No logic lives here.
//!
//! Where to find the Rust behind a C function: docs/ARCHITECTURE.md's
//! table (the staging calls, `lrt_sm_*`, `lrt_v2_*` and
//! `lrt_runtime_maker_*`, are in `staging/`; the pool's in `pool/`;
//! `lrt_host_api_*` in `device.rs`; the log callback in `diag.rs`; the
//! error and version calls in `boundary.rs`), each calling one function of
//! the core.

// The C surface documents its pointer rules in plain sentences for C
// readers (they become the header's comments), not in `# Safety` sections.
#![allow(clippy::missing_safety_doc)]

#[macro_use]
pub mod boundary;
pub mod device;
pub mod diag;
pub mod pool;
pub mod staging;
mod symbol_versions;

pub use crate::error::abi::lrt_status;
pub use boundary::{lrt_last_error, lrt_status_str, lrt_version};
