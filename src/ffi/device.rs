//! `lrt_host_api_*`: device backends. Core: `crate::device`.
use super::boundary::{arg_mut, OutPtr};
use super::status::lrt_status;
use crate::device::{self, HostApi};
use std::ffi::c_int;

/// Fills `*out` with the built-in host backend (device memory is host
/// memory): the embedded default.
///
/// # Safety
/// `out` is NULL or valid for a write of `lrt_host_api`.
#[no_mangle]
pub unsafe extern "C" fn lrt_host_api_host(out: *mut HostApi) -> lrt_status {
    ffi_status!("lrt_host_api_host", {
        let out = OutPtr::new(out, "out")?;
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(device::host::host_api()) };
        Ok(())
    })
}

/// Fills `*out` with a backend on CUDA device `device` (an ordinal), through
/// the CUDA driver API loaded at run time: `$LEANRT_CUDA_LIBRARY` when set,
/// else `libcuda.so.1`. The api holds a reference to the device's primary
/// context until `lrt_host_api_release`; its callbacks may be called from
/// any thread (each makes the context current for its own driver calls).
/// A failing callback returns NULL / non-zero and leaves CUDA's error name
/// and string in `lrt_last_error`. `LRT_ERR_UNAVAILABLE` without a CUDA
/// driver, without devices or for an invalid ordinal ("no CUDA device N
/// (found M)"); `LRT_ERR_DEVICE` when the driver fails otherwise; `*out` is
/// untouched on failure.
///
/// # Safety
/// `out` is NULL or valid for a write of `lrt_host_api`.
#[no_mangle]
pub unsafe extern "C" fn lrt_host_api_cuda(device: c_int, out: *mut HostApi) -> lrt_status {
    ffi_status!("lrt_host_api_cuda", {
        let out = OutPtr::new(out, "out")?;
        let api = device::cuda::cuda_host_api(device)?;
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(api) };
        Ok(())
    })
}

/// Releases what `lrt_host_api_host`/`lrt_host_api_cuda` acquired and clears
/// `*api`. NULL, or an already released api, is a no-op.
///
/// # Safety
/// `api` is NULL or points to an `lrt_host_api` filled by leanrt (or zeroed).
#[no_mangle]
pub unsafe extern "C" fn lrt_host_api_release(api: *mut HostApi) {
    ffi_value!("lrt_host_api_release", (), {
        // SAFETY: NULL or valid per the contract.
        if let Ok(api) = unsafe { arg_mut(api, "api") } {
            device::release(api);
        }
        Ok(())
    })
}
