//! The device as C sees it: plain data, under the names of the C header
//! (cbindgen reads this file). A device is described to C by an
//! `lrt_host_api`: a context pointer and a table of four callbacks with the
//! same order and signatures as the reference runtime's HostApiOps, so a
//! host's existing functions plug in unchanged.
//!
//! The core's own [`Device`](super::Device) trait never sees these types:
//! the C surface (`src/ffi/device.rs`) adapts a table to it and provides
//! leanrt's own tables.
#![allow(non_camel_case_types)]

use std::ffi::c_void;

/// The four device callbacks, in the same order and with the same
/// signatures as the reference runtime's HostApiOps. None of them may be
/// NULL when the table is given to lrt_runtime_maker_create. leanrt may call
/// them from whichever thread calls the maker, so they must work from any
/// thread. `ctx` is the lrt_host_api's `ctx`, passed through unchanged.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_host_api_ops {
    /// Allocates `size` bytes of device memory; returns NULL on failure.
    pub device_malloc: Option<unsafe extern "C" fn(ctx: *mut c_void, size: usize) -> *mut c_void>,
    /// Frees memory from this table's device_malloc; NULL is a no-op.
    pub device_free: Option<unsafe extern "C" fn(ctx: *mut c_void, dev_ptr: *mut c_void)>,
    /// Copies `size` bytes from host memory to device memory; returns 0 on
    /// success, anything else on failure.
    pub copy_to_device: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            dev_dst: *mut c_void,
            host_src: *const c_void,
            size: usize,
        ) -> i32,
    >,
    /// Copies `size` bytes from device memory to host memory; returns 0 on
    /// success, anything else on failure.
    pub copy_from_device: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            host_dst: *mut c_void,
            dev_src: *const c_void,
            size: usize,
        ) -> i32,
    >,
}

/// A device: a context pointer and its callback table. Filled by
/// lrt_host_api_host or lrt_host_api_cuda, or by the host with its own
/// callbacks. The table must stay valid as long as a maker created on it
/// lives. A plain struct: copying it copies the reference, not the device.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_host_api {
    pub ctx: *mut c_void,
    pub ops: *const lrt_host_api_ops,
}
