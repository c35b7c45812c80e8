//! The built-in host backend: "device" memory is host memory.
//!
//! `device_malloc` is a 64-byte aligned `posix_memalign` (large requests are lazily backed by the
//! kernel, so untouched device pages cost no resident memory), `device_free`
//! is `free`, and both copies are `memcpy`. This is the embedded default and
//! what the benchmarks measure when no accelerator is present.
use std::ffi::c_void;

use super::{HostApi, HostApiOps, PinnedRegion};
use crate::{Error, Result};

/// Alignment of host-backend "device" allocations: a cache line, like the
/// SM image's most aligned structs (device allocators give at least 256).
const DEVICE_ALIGN: usize = 64;

unsafe extern "C" fn host_malloc(_ctx: *mut c_void, size: usize) -> *mut c_void {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: posix_memalign writes p only on success; DEVICE_ALIGN is a
    // power of two multiple of sizeof(void*). A 0-byte request asks for 1
    // byte so that success is never NULL.
    let rc = unsafe { libc::posix_memalign(&mut p, DEVICE_ALIGN, size.max(1)) };
    if rc == 0 {
        p
    } else {
        std::ptr::null_mut()
    }
}

unsafe extern "C" fn host_free(_ctx: *mut c_void, dev_ptr: *mut c_void) {
    // SAFETY: dev_ptr is NULL or came from host_malloc (the callback contract).
    unsafe { libc::free(dev_ptr) }
}

unsafe extern "C" fn host_copy(
    _ctx: *mut c_void,
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
) -> i32 {
    if size == 0 {
        return 0;
    }
    if dst.is_null() || src.is_null() {
        return -1;
    }
    // SAFETY: per the callback contract both ranges are valid for `size`
    // bytes; memmove tolerates overlap.
    unsafe { libc::memmove(dst, src, size) };
    0
}

unsafe extern "C" fn host_copy_to(
    ctx: *mut c_void,
    dev_dst: *mut c_void,
    host_src: *const c_void,
    size: usize,
) -> i32 {
    // SAFETY: forwarded under the same contract.
    unsafe { host_copy(ctx, dev_dst, host_src, size) }
}

unsafe extern "C" fn host_copy_from(
    ctx: *mut c_void,
    host_dst: *mut c_void,
    dev_src: *const c_void,
    size: usize,
) -> i32 {
    // SAFETY: forwarded under the same contract.
    unsafe { host_copy(ctx, host_dst, dev_src, size) }
}

static HOST_OPS: HostApiOps = HostApiOps {
    device_malloc: Some(host_malloc),
    device_free: Some(host_free),
    copy_to_device: Some(host_copy_to),
    copy_from_device: Some(host_copy_from),
};

/// The built-in host backend's api (the embedded default). It holds no
/// resources; releasing it only clears it.
pub fn host_api() -> HostApi {
    HostApi {
        ctx: std::ptr::null_mut(),
        ops: &HOST_OPS,
    }
}

/// Page-locks `[ptr, ptr + len)` with `mlock`; unlocked (munlock) on drop.
/// Fails (typically with RLIMIT_MEMLOCK) with `ErrorKind::Unavailable`.
pub fn pin(ptr: *mut u8, len: usize) -> Result<PinnedRegion> {
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
        // SAFETY: unlocks exactly the range locked above; the owner drops the
        // region before unmapping the memory.
        unsafe { libc::munlock(addr as *const c_void, len) };
    })))
}
