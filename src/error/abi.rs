//! The status every fallible C entry point returns, as C sees it (cbindgen
//! reads this file). The C boundary maps each [`ErrorKind`](super::ErrorKind)
//! to one of these values (`src/ffi/status.rs`).
#![allow(non_camel_case_types)]

/// What a leanrt call returns: LRT_OK (0) on success, otherwise the kind of
/// failure; lrt_last_error then gives the message on the same thread.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum lrt_status {
    /// Success.
    LRT_OK = 0,
    /// NULL where not allowed, bad value, malformed config string.
    LRT_ERR_INVALID_ARGUMENT = 1,
    /// e.g. total_tasks outside [0, task_window], window full.
    LRT_ERR_OUT_OF_RANGE = 2,
    /// Host or device allocation failed.
    LRT_ERR_NO_MEMORY = 3,
    /// A host-api callback reported failure.
    LRT_ERR_DEVICE = 4,
    /// Optional backend not present (no CUDA on this machine).
    LRT_ERR_UNAVAILABLE = 5,
    /// Call out of order (upload before begin_run, ...).
    LRT_ERR_STATE = 6,
    /// A bug inside leanrt, caught at the boundary.
    LRT_ERR_INTERNAL = 7,
}
