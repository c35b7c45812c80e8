//! Device access: the [`Device`] trait the maker allocates, copies and pins
//! through, and the two backends leanrt ships (`host`: device memory is host
//! memory; `cuda`: the CUDA driver, loaded at run time).
//!
//! `abi` holds the device's C-visible plain data (`lrt_host_api`). A third
//! kind of device, a host's own callback table, is adapted to the trait by
//! the C surface; the maker never sees C types or knows which backend it
//! talks to.
use crate::{Error, Result};

pub mod abi;
pub mod cuda;
pub mod host;

/// A device: memory the accelerator reads, and copies between it and host
/// memory. Every failure is an [`Error`] whose message is the backend's own
/// account (CUDA: the call, the error name and its text).
///
/// Implementations may be called from any thread, one call at a time or
/// concurrently.
pub trait Device: Send + Sync {
    /// Allocates `size` bytes of device memory. Never returns NULL on
    /// success. A backend out of memory reports `ErrorKind::NoMemory`.
    fn alloc(&self, size: usize) -> Result<*mut u8>;

    /// Frees an allocation made by [`Device::alloc`].
    ///
    /// # Safety
    /// `ptr` came from `alloc` on this device, is freed once and not used
    /// afterwards.
    unsafe fn free(&self, ptr: *mut u8);

    /// Copies `len` bytes from host memory at `src` to device memory at `dst`.
    ///
    /// # Safety
    /// `src` is valid for reads of `len` bytes; `[dst, dst + len)` lies in
    /// one live allocation of this device.
    unsafe fn copy_to(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()>;

    /// Copies `len` bytes from device memory at `src` to host memory at `dst`.
    ///
    /// # Safety
    /// `dst` is valid for writes of `len` bytes; `[src, src + len)` lies in
    /// one live allocation of this device.
    unsafe fn copy_from(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()>;

    /// Page-locks the host range `[ptr, ptr + len)` so that copies from it
    /// are direct DMA, until the returned region is dropped. Backends that
    /// cannot pin report `ErrorKind::Unavailable` (the default).
    ///
    /// # Safety
    /// The range is host memory that stays mapped until the region is
    /// dropped.
    unsafe fn pin(&self, ptr: *mut u8, len: usize) -> Result<PinnedRegion> {
        let _ = (ptr, len);
        Err(Error::unavailable("this device cannot pin host memory"))
    }

    /// The device's own figures for a host-to-device copy, if it knows them
    /// (the maker's AUTO policy measures them otherwise). None by default.
    fn copy_cost(&self) -> Option<CopyCost> {
        None
    }
}

/// What one host-to-device copy costs: a fixed latency plus bytes over
/// bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopyCost {
    /// Nanoseconds per copy, whatever its size.
    pub latency_ns: f64,
    /// Bytes per nanosecond (GB/s).
    pub bytes_per_ns: f64,
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
