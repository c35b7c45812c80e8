//! `lrt_status`: the status code every fallible C entry point returns.
use crate::ErrorKind;

/// What a leanrt call returns: LRT_OK (0) on success, otherwise the kind of
/// failure; lrt_last_error then gives the message on the same thread.
#[repr(C)]
#[allow(non_camel_case_types)]
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

impl From<ErrorKind> for lrt_status {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::InvalidArgument => lrt_status::LRT_ERR_INVALID_ARGUMENT,
            ErrorKind::OutOfRange => lrt_status::LRT_ERR_OUT_OF_RANGE,
            ErrorKind::NoMemory => lrt_status::LRT_ERR_NO_MEMORY,
            ErrorKind::Device => lrt_status::LRT_ERR_DEVICE,
            ErrorKind::Unavailable => lrt_status::LRT_ERR_UNAVAILABLE,
            ErrorKind::State => lrt_status::LRT_ERR_STATE,
            ErrorKind::Internal => lrt_status::LRT_ERR_INTERNAL,
        }
    }
}

/// The static description of a raw status value; unknown values get
/// `"unknown status"`. Takes the raw integer so that any value a C caller
/// passes is well defined.
pub fn describe(raw: i32) -> &'static std::ffi::CStr {
    match raw {
        0 => c"LRT_OK: success",
        1 => c"LRT_ERR_INVALID_ARGUMENT: invalid argument",
        2 => c"LRT_ERR_OUT_OF_RANGE: value out of range",
        3 => c"LRT_ERR_NO_MEMORY: out of memory",
        4 => c"LRT_ERR_DEVICE: device operation failed",
        5 => c"LRT_ERR_UNAVAILABLE: backend unavailable",
        6 => c"LRT_ERR_STATE: call out of order",
        7 => c"LRT_ERR_INTERNAL: internal error",
        _ => c"unknown status",
    }
}
