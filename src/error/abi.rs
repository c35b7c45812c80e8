//! What C sees of the error model (cbindgen reads this file): the status
//! every fallible entry point returns, and the limits of the C boundary's
//! messages and string arguments. This enum is the one list of the
//! statuses; each one's text and the [`ErrorKind`](super::ErrorKind) it
//! stands for are matched on its variants in `super` (`error.rs`), so a
//! status without them does not compile.
#![allow(non_camel_case_types)]

/// What a leanrt call returns: LRT_OK (0) on success, otherwise the kind of
/// failure; lrt_last_error then gives the message on the same thread. The
/// values are 0, 1, 2, ... in the order below.
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

/// Capacity in bytes of the per-thread last-error slot that lrt_last_error
/// reads: a message is at most LRT_LAST_ERROR_BYTES - 1 bytes (longer ones
/// are cut), so a buffer of LRT_LAST_ERROR_BYTES always holds it whole.
pub const LRT_LAST_ERROR_BYTES: usize = 512;

/// Longest string argument accepted, in bytes without the terminating NUL
/// (config keys and values, affinity strings, thread names). Longer
/// strings are LRT_ERR_INVALID_ARGUMENT, found without reading past this
/// many bytes.
pub const LRT_MAX_STRING_BYTES: usize = 65536;
