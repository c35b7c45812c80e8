//! `lrt_host_api_*`: the device a runtime maker allocates its image on and
//! copies it to.
//!
//! The C types (`lrt_host_api`, `lrt_host_api_ops`) are the core's
//! (`crate::device::abi`); leanrt provides two ready-made devices
//! (`lrt_host_api_host`, `lrt_host_api_cuda`) and a host may pass its own.
//!
//! Here: the adapter that turns a foreign table into a core `Device`
//! (`CallbackDevice`), leanrt's own tables over its core backends (a CUDA
//! api's `ctx` is a token of `cuda::DEVICES_BY_TOKEN`), and
//! `device_for_api`, which recognizes leanrt's own tables so a maker created
//! on one of them uses the core backend directly.
use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::boundary::{arg_mut, run_value, OutPtr};
use crate::device::cuda::{self, CudaDevice, DEVICES_BY_TOKEN};
use crate::device::host::HostDevice;
use crate::device::{Device, PinnedRegion};
use crate::error::abi::lrt_status;
use crate::{Error, Result};

pub use crate::device::abi::{lrt_host_api, lrt_host_api_ops};

// ---------------------------------------------------------------------------
// A foreign callback table as a core Device

/// A host's own callback table, as a core `Device`.
#[derive(Debug)]
pub struct CallbackDevice {
    ctx: *mut c_void,
    /// A copy of the host's table; every callback is non-NULL (checked in
    /// `new`).
    ops: lrt_host_api_ops,
}

// SAFETY: `CallbackDevice::new`'s contract requires callbacks that may be
// called from any thread, concurrently, with this ctx.
unsafe impl Send for CallbackDevice {}
// SAFETY: as above.
unsafe impl Sync for CallbackDevice {}

/// The callback `f`, which `CallbackDevice::new` checked is not NULL.
fn checked<F>(f: Option<F>) -> F {
    f.expect("CallbackDevice::new refuses a NULL callback")
}

impl CallbackDevice {
    /// Adapts `api`'s table. A NULL `ops` or a NULL callback is
    /// `ErrorKind::InvalidArgument`.
    ///
    /// # Safety
    /// `api.ops` is NULL or points to a table that stays valid for the life
    /// of the returned device; its callbacks honour the lrt_host_api_ops
    /// contract (device_malloc returns NULL or `size` bytes of device memory
    /// that the copies accept; each copy moves exactly `size` bytes between
    /// the ranges it is given), may be called from any thread and
    /// concurrently, and `api.ctx` is what they expect.
    pub unsafe fn new(api: &lrt_host_api) -> Result<Self> {
        // SAFETY: NULL or a valid table, per the contract.
        let ops = *unsafe { api.ops.as_ref() }
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
        Ok(CallbackDevice { ctx: api.ctx, ops })
    }
}

impl Device for CallbackDevice {
    fn alloc(&self, size: usize) -> Result<*mut u8> {
        // SAFETY: the callback contract accepted in `new`.
        let p = unsafe { checked(self.ops.device_malloc)(self.ctx, size) };
        if p.is_null() {
            return Err(Error::no_memory(format!(
                "device_malloc({size}) returned NULL"
            )));
        }
        Ok(p.cast::<u8>())
    }

    unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: ptr came from device_malloc of this table (the trait's
        // contract).
        unsafe { checked(self.ops.device_free)(self.ctx, ptr.cast()) }
    }

    #[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]
    unsafe fn copy_to(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        // SAFETY: the ranges are valid per the trait's contract.
        let rc = unsafe { checked(self.ops.copy_to_device)(self.ctx, dst.cast(), src.cast(), len) };
        if rc != 0 {
            return Err(Error::device(format!("copy_to_device returned {rc}")));
        }
        Ok(())
    }

    unsafe fn copy_from(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        // SAFETY: the ranges are valid per the trait's contract.
        let rc =
            unsafe { checked(self.ops.copy_from_device)(self.ctx, dst.cast(), src.cast(), len) };
        if rc != 0 {
            return Err(Error::device(format!("copy_from_device returned {rc}")));
        }
        Ok(())
    }

    /// A foreign table has no pinning call: the range is `mlock`ed, as for
    /// the host backend (resident pages, no DMA registration).
    unsafe fn pin(&self, ptr: *mut u8, len: usize) -> Result<PinnedRegion> {
        // SAFETY: forwarded under the trait's contract.
        unsafe { HostDevice.pin(ptr, len) }
    }
}

// ---------------------------------------------------------------------------
// leanrt's own tables

/// Runs one of leanrt's callbacks: a failure (or a panic) is recorded for
/// lrt_last_error as "<name>: <message>" and `fallback` is returned.
fn run_callback<T>(name: &'static str, fallback: T, body: impl FnOnce() -> Result<T>) -> T {
    run_value(name, |_| fallback, body)
}

unsafe extern "C" fn host_malloc(_ctx: *mut c_void, size: usize) -> *mut c_void {
    run_callback("host device_malloc", std::ptr::null_mut(), || {
        Ok(HostDevice.alloc(size)?.cast())
    })
}

unsafe extern "C" fn host_free(_ctx: *mut c_void, dev_ptr: *mut c_void) {
    // SAFETY: dev_ptr is NULL or came from host_malloc (the callback
    // contract); free(NULL) is a no-op.
    unsafe { HostDevice.free(dev_ptr.cast()) }
}

unsafe extern "C" fn host_copy_to(
    _ctx: *mut c_void,
    dev_dst: *mut c_void,
    host_src: *const c_void,
    size: usize,
) -> i32 {
    run_callback("host copy_to_device", -1, || {
        // SAFETY: both ranges are valid for size bytes (the callback contract).
        unsafe { HostDevice.copy_to(dev_dst.cast(), host_src.cast(), size) }?;
        Ok(0)
    })
}

unsafe extern "C" fn host_copy_from(
    _ctx: *mut c_void,
    host_dst: *mut c_void,
    dev_src: *const c_void,
    size: usize,
) -> i32 {
    run_callback("host copy_from_device", -1, || {
        // SAFETY: both ranges are valid for size bytes (the callback contract).
        unsafe { HostDevice.copy_from(host_dst.cast(), dev_src.cast(), size) }?;
        Ok(0)
    })
}

/// The table of every lrt_host_api_host (its address identifies them).
static HOST_OPS: lrt_host_api_ops = lrt_host_api_ops {
    device_malloc: Some(host_malloc),
    device_free: Some(host_free),
    copy_to_device: Some(host_copy_to),
    copy_from_device: Some(host_copy_from),
};

/// The CUDA device that a CUDA api's `ctx` (a token) names.
fn cuda_device(ctx: *mut c_void) -> Result<Arc<CudaDevice>> {
    DEVICES_BY_TOKEN.get(ctx as usize)
}

unsafe extern "C" fn cuda_malloc(ctx: *mut c_void, size: usize) -> *mut c_void {
    run_callback("cuda device_malloc", std::ptr::null_mut(), || {
        Ok(cuda_device(ctx)?.alloc(size)?.cast())
    })
}

unsafe extern "C" fn cuda_free(ctx: *mut c_void, dev_ptr: *mut c_void) {
    run_callback("cuda device_free", (), || {
        // SAFETY: the driver validates the address; freeing is the caller's
        // decision (the callback contract).
        unsafe { cuda_device(ctx)?.free_checked(dev_ptr.cast()) }
    })
}

unsafe extern "C" fn cuda_copy_to(
    ctx: *mut c_void,
    dev_dst: *mut c_void,
    host_src: *const c_void,
    size: usize,
) -> i32 {
    run_callback("cuda copy_to_device", -1, || {
        let d = cuda_device(ctx)?;
        // SAFETY: host_src is valid for size bytes (the callback contract);
        // the driver validates the device range.
        unsafe { d.copy_to(dev_dst.cast(), host_src.cast(), size) }?;
        Ok(0)
    })
}

unsafe extern "C" fn cuda_copy_from(
    ctx: *mut c_void,
    host_dst: *mut c_void,
    dev_src: *const c_void,
    size: usize,
) -> i32 {
    run_callback("cuda copy_from_device", -1, || {
        let d = cuda_device(ctx)?;
        // SAFETY: host_dst is valid for size bytes (the callback contract);
        // the driver validates the device range.
        unsafe { d.copy_from(host_dst.cast(), dev_src.cast(), size) }?;
        Ok(0)
    })
}

/// The table of every lrt_host_api_cuda (its address identifies them).
static CUDA_OPS: lrt_host_api_ops = lrt_host_api_ops {
    device_malloc: Some(cuda_malloc),
    device_free: Some(cuda_free),
    copy_to_device: Some(cuda_copy_to),
    copy_from_device: Some(cuda_copy_from),
};

/// The host backend's api.
pub fn host_api() -> lrt_host_api {
    lrt_host_api {
        ctx: std::ptr::null_mut(),
        ops: &HOST_OPS,
    }
}

/// Registers `device` and returns a C api naming it.
pub fn cuda_api(device: CudaDevice) -> Result<lrt_host_api> {
    let token = DEVICES_BY_TOKEN.insert(device)?;
    Ok(lrt_host_api {
        ctx: token as *mut c_void,
        ops: &CUDA_OPS,
    })
}

/// The CUDA device behind a live api made by lrt_host_api_cuda.
pub fn cuda_device_of(api: &lrt_host_api) -> Result<Arc<CudaDevice>> {
    if !std::ptr::eq(api.ops, &CUDA_OPS) {
        return Err(Error::invalid_argument("not a CUDA host api"));
    }
    cuda_device(api.ctx)
}

/// The core device for `api`: leanrt's own tables give their backend
/// directly (pinning, the backend's own error messages); any other table is
/// adapted with `CallbackDevice`.
///
/// # Safety
/// As `CallbackDevice::new`.
pub unsafe fn device_for_api(api: &lrt_host_api) -> Result<Arc<dyn Device>> {
    if std::ptr::eq(api.ops, &HOST_OPS) {
        return Ok(Arc::new(HostDevice));
    }
    if std::ptr::eq(api.ops, &CUDA_OPS) {
        return Ok(cuda_device(api.ctx)?);
    }
    // SAFETY: forwarded under the same contract.
    Ok(Arc::new(unsafe { CallbackDevice::new(api) }?))
}

/// Clears `api`, dropping the CUDA device it names, if any. Releasing twice,
/// or a copy of a released api, is a no-op. In a forked child a CUDA api
/// inherited from the parent is only cleared: its device is the parent's.
pub fn release(api: &mut lrt_host_api) {
    if std::ptr::eq(api.ops, &CUDA_OPS) {
        // Dropped outside the registry's lock: the last reference calls the
        // driver.
        drop(DEVICES_BY_TOKEN.remove(api.ctx as usize));
    }
    api.ctx = std::ptr::null_mut();
    api.ops = std::ptr::null();
}

// ---------------------------------------------------------------------------
// The C functions

/// Fills `*out` with the built-in host backend, whose "device" memory is
/// host memory: the embedded default. It holds no resources (releasing it
/// only clears it) and keeps working in a child process after fork.
///
/// `out` must point to writable storage for an lrt_host_api.
/// Returns LRT_OK, or LRT_ERR_INVALID_ARGUMENT when `out` is NULL.
/// Any thread may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_host_api_host(out: *mut lrt_host_api) -> lrt_status {
    ffi_status!({
        let out = OutPtr::new(out, "out")?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(host_api()) };
        Ok(())
    })
}

/// Fills `*out` with a device on CUDA device `device` (an ordinal from 0),
/// through the CUDA driver loaded at run time: the library named by the
/// environment variable LEANRT_CUDA_LIBRARY when set, else libcuda.so.1,
/// else libcuda.so.
///
/// The api holds a reference to the device's primary context until
/// lrt_host_api_release (a maker created on it holds its own, so the api may
/// be released before the maker is destroyed). Its callbacks may be called
/// from any thread; each makes the context current for its own driver calls
/// and restores the calling thread's context. A failing callback returns
/// NULL or -1 and leaves CUDA's error name and text in lrt_last_error.
///
/// `out` must point to writable storage for an lrt_host_api; it is written
/// only on success. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL
/// `out`; LRT_ERR_UNAVAILABLE without a CUDA driver, without devices, for an
/// invalid ordinal ("no CUDA device N (found M)"), or in a child process
/// forked after the parent used CUDA (CUDA does not survive fork);
/// LRT_ERR_DEVICE when the driver fails otherwise.
#[no_mangle]
pub unsafe extern "C" fn lrt_host_api_cuda(device: c_int, out: *mut lrt_host_api) -> lrt_status {
    ffi_status!({
        let out = OutPtr::new(out, "out")?;
        let api = cuda_api(cuda::open(device)?)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(api) };
        Ok(())
    })
}

/// Releases what lrt_host_api_host or lrt_host_api_cuda acquired and sets
/// both members of `*api` to NULL. NULL, an api already released, a copy of
/// a released api, or a zeroed struct is a no-op. Makers created on the api
/// keep working until they are destroyed. A released CUDA api's callbacks
/// fail cleanly (NULL / -1, "not live" in lrt_last_error).
///
/// `api` must be NULL or point to an lrt_host_api.
#[no_mangle]
pub unsafe extern "C" fn lrt_host_api_release(api: *mut lrt_host_api) {
    ffi_value!((), {
        // SAFETY: NULL or valid per the contract.
        if let Ok(api) = unsafe { arg_mut(api, "api") } {
            release(api);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn foreign_and_forged_apis() {
        let empty = lrt_host_api {
            ctx: std::ptr::null_mut(),
            ops: std::ptr::null(),
        };
        // SAFETY: a NULL table is rejected before any use.
        let e = unsafe { device_for_api(&empty) }.err().unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            cuda_device_of(&empty).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        let nulls = lrt_host_api_ops {
            device_malloc: None,
            ..HOST_OPS
        };
        let api = lrt_host_api {
            ctx: std::ptr::null_mut(),
            ops: &nulls,
        };
        // SAFETY: the table is valid; the NULL callback is rejected.
        let e = unsafe { device_for_api(&api) }.err().unwrap();
        assert!(e.message().contains("NULL callback"), "{}", e.message());

        let forged = lrt_host_api {
            ctx: 12345 as *mut c_void,
            ops: &CUDA_OPS,
        };
        assert_eq!(
            cuda_device(forged.ctx).unwrap_err().kind(),
            ErrorKind::State
        );
        // SAFETY: a dead token is refused before any pointer is used.
        let e = unsafe { device_for_api(&forged) }.err().unwrap();
        assert_eq!(e.kind(), ErrorKind::State);
        // The callbacks of a forged api fail cleanly.
        // SAFETY: the pointer arguments are never dereferenced for a dead ctx.
        let p = unsafe { cuda_malloc(forged.ctx, 64) };
        assert!(p.is_null());
        let mut buf = [0u8; 4];
        // SAFETY: buf is valid for 4 bytes.
        let rc = unsafe { cuda_copy_to(forged.ctx, 64 as *mut c_void, buf.as_ptr().cast(), 4) };
        assert_eq!(rc, -1);
        // SAFETY: buf is valid for 4 bytes.
        let rc =
            unsafe { cuda_copy_from(forged.ctx, buf.as_mut_ptr().cast(), 64 as *const c_void, 4) };
        assert_eq!(rc, -1);
        let mut forged = forged;
        release(&mut forged);
        assert!(forged.ops.is_null());
    }
}
