//! The built-in host backend: "device" memory is host memory. (Issue #3 fills this in.)
use super::{HostApi, PinnedRegion};
use crate::{Error, Result};

/// The built-in host backend's api (the embedded default).
pub fn host_api() -> HostApi {
    todo!("issue 3: built-in host backend")
}

/// mlock-based pinning for the host backend.
pub fn pin(_ptr: *mut u8, _len: usize) -> Result<PinnedRegion> {
    Err(Error::unavailable("pinning not implemented yet"))
}
