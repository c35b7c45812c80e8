//! `lrt_status` (the core's, `crate::error::abi`): one value per
//! `ErrorKind`, and its static text.
pub use crate::error::abi::lrt_status;
use crate::ErrorKind;

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
