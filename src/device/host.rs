//! The built-in host backend: "device" memory is host memory.
//!
//! `alloc` is a 64-byte aligned `posix_memalign` (large requests are lazily
//! backed by the kernel, so untouched device pages cost no resident memory),
//! `free` is `free`, both copies are `memmove`, and `pin` is `mlock`. This is
//! the embedded default and what the benchmarks measure when no accelerator
//! is present. It holds no state and survives `fork`.
use std::ffi::c_void;

use super::{Device, PinnedRegion};
use crate::{Error, Result};

/// Alignment of host-backend "device" allocations: a cache line, like the
/// SM image's most aligned structs (device allocators give at least 256).
const DEVICE_ALIGN: usize = 64;

/// The host backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostDevice;

/// `memmove` of `len` bytes; a no-op for 0 bytes.
///
/// # Safety
/// Both ranges are valid for `len` bytes.
unsafe fn host_copy(dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    if dst.is_null() || src.is_null() {
        return Err(Error::invalid_argument(format!(
            "copy of {len} bytes with a NULL pointer (dst {dst:p}, src {src:p})"
        )));
    }
    // SAFETY: both ranges are valid for len bytes (the caller's contract);
    // memmove tolerates overlap.
    unsafe { libc::memmove(dst.cast::<c_void>(), src.cast::<c_void>(), len) };
    Ok(())
}

impl Device for HostDevice {
    fn alloc(&self, size: usize) -> Result<*mut u8> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: posix_memalign writes p only on success; DEVICE_ALIGN is a
        // power of two multiple of sizeof(void*). A 0-byte request asks for
        // 1 byte so that success is never NULL.
        let rc = unsafe { libc::posix_memalign(&mut p, DEVICE_ALIGN, size.max(1)) };
        if rc != 0 || p.is_null() {
            return Err(Error::no_memory(format!(
                "posix_memalign of {size} bytes failed"
            )));
        }
        Ok(p.cast::<u8>())
    }

    unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: ptr came from alloc (posix_memalign), freed once.
        unsafe { libc::free(ptr.cast::<c_void>()) }
    }

    unsafe fn copy_to(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        // SAFETY: forwarded under the trait's contract.
        unsafe { host_copy(dst, src, len) }
    }

    unsafe fn copy_from(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        // SAFETY: forwarded under the trait's contract.
        unsafe { host_copy(dst, src, len) }
    }

    /// `mlock`; fails (typically with RLIMIT_MEMLOCK) as
    /// `ErrorKind::Unavailable`.
    unsafe fn pin(&self, ptr: *mut u8, len: usize) -> Result<PinnedRegion> {
        if ptr.is_null() || len == 0 {
            return Err(Error::invalid_argument("nothing to pin"));
        }
        // SAFETY: mlock only changes residency of the caller's mapping; an
        // invalid range is reported as an error, not undefined behaviour.
        let rc = unsafe { libc::mlock(ptr.cast::<c_void>(), len) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            return Err(Error::unavailable(format!(
                "mlock of {len} bytes failed: {err}"
            )));
        }
        let addr = ptr as usize;
        Ok(PinnedRegion::new(Box::new(move || {
            // SAFETY: unlocks exactly the range locked above; the owner drops
            // the region before unmapping the memory.
            unsafe { libc::munlock(addr as *const c_void, len) };
        })))
    }
}
