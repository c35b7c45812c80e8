//! Device access: the host-api callback table the maker uploads through, and
//! the backends that provide one (`host`: built-in, device memory is host
//! memory; `cuda`: loaded at run time).
use std::ffi::c_void;

/// The four device callbacks, in the same order and with the same signatures
/// as the reference runtime's HostApiOps, so a host's functions plug in
/// unchanged. `copy_*` return 0 on success.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HostApiOps {
    pub device_malloc: Option<unsafe extern "C" fn(ctx: *mut c_void, size: usize) -> *mut c_void>,
    pub device_free: Option<unsafe extern "C" fn(ctx: *mut c_void, dev_ptr: *mut c_void)>,
    pub copy_to_device: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            dev_dst: *mut c_void,
            host_src: *const c_void,
            size: usize,
        ) -> i32,
    >,
    pub copy_from_device: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            host_dst: *mut c_void,
            dev_src: *const c_void,
            size: usize,
        ) -> i32,
    >,
}

/// A device backend: a context pointer and its callback table.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HostApi {
    pub ctx: *mut c_void,
    pub ops: *const HostApiOps,
}

pub mod cuda;
pub mod host;

use crate::{Error, Result};

impl HostApi {
    /// Checks that `ops` and its four callbacks are present.
    pub fn validate(&self) -> Result<&HostApiOps> {
        // SAFETY: a non-NULL ops pointer in a HostApi given to leanrt points
        // to a callback table that outlives every use of the HostApi.
        let ops = unsafe { self.ops.as_ref() }
            .ok_or_else(|| Error::invalid_argument("host api has no ops table"))?;
        if ops.device_malloc.is_none()
            || ops.device_free.is_none()
            || ops.copy_to_device.is_none()
            || ops.copy_from_device.is_none()
        {
            return Err(Error::invalid_argument(
                "host api ops table has a NULL callback",
            ));
        }
        Ok(ops)
    }
}

/// Releases what a backend constructor (`host::host_api`, `cuda::cuda_host_api`)
/// acquired and clears `api`. Releasing an already-cleared api is a no-op.
pub fn release(api: &mut HostApi) {
    if cuda::is_cuda_api(api) {
        cuda::release(api);
    }
    api.ctx = std::ptr::null_mut();
    api.ops = std::ptr::null();
}

/// A page-locked host range; unlocked when dropped.
pub struct PinnedRegion {
    unpin: Option<Box<dyn FnOnce() + Send>>,
}

impl PinnedRegion {
    /// A region whose `unpin` runs on drop.
    pub fn new(unpin: Box<dyn FnOnce() + Send>) -> Self {
        PinnedRegion { unpin: Some(unpin) }
    }
}

impl Drop for PinnedRegion {
    fn drop(&mut self) {
        if let Some(unpin) = self.unpin.take() {
            unpin();
        }
    }
}

/// Page-locks `[ptr, ptr + len)` so that the backend behind `api` can DMA
/// from it directly (CUDA: cudaHostRegister; host backend: mlock).
/// The caller falls back to pageable memory, with a warning, on error.
pub fn pin_host_memory(api: &HostApi, ptr: *mut u8, len: usize) -> Result<PinnedRegion> {
    if cuda::is_cuda_api(api) {
        cuda::pin(api, ptr, len)
    } else {
        host::pin(ptr, len)
    }
}
