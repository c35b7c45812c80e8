//! The CUDA backend, loaded with dlopen at run time. (Issue #6 fills this in.)
use super::{HostApi, PinnedRegion};
use crate::{Error, Result};

/// A host api on CUDA device `device`; `ErrorKind::Unavailable` without CUDA.
pub fn cuda_host_api(_device: i32) -> Result<HostApi> {
    Err(Error::unavailable("the CUDA backend is not built yet"))
}

/// Whether `api` was made by [`cuda_host_api`].
pub fn is_cuda_api(_api: &HostApi) -> bool {
    false
}

/// Releases the CUDA context behind `api`.
pub fn release(_api: &mut HostApi) {}

/// Page-locks a host range with cudaHostRegister.
pub fn pin(_api: &HostApi, _ptr: *mut u8, _len: usize) -> Result<PinnedRegion> {
    Err(Error::unavailable("the CUDA backend is not built yet"))
}
