//! The CUDA backend: the CUDA driver API (`libcuda.so.1` or `libcuda.so`), loaded with
//! `dlopen` at run time, so leanrt has no link-time CUDA dependency and
//! builds and runs on machines without CUDA (where [`open`] reports
//! `ErrorKind::Unavailable`).
//!
//! * `driver`: the library (`$LEANRT_CUDA_LIBRARY` when set and non-empty,
//!   else `libcuda.so.1`, else `libcuda.so`), its entry points and every
//!   call through them. A loaded library is kept for the life of the process;
//!   a failed load is retried on the next call.
//! * `context`: a retained primary context and the guard that makes it
//!   current for one call, so a device works from any thread and leaves the
//!   calling thread's own current context as it was.
//! * `device`: [`CudaDevice`], the [`crate::device::Device`] implementation.
//! * `pin`: `cuMemHostRegister_v2` / `cuMemHostUnregister`.
//! * `registry`: [`Registry`], the devices that C holds by token
//!   ([`DEVICES_BY_TOKEN`]), with its fork rule.
//! * `stats`: the copy counters.
//!
//! Errors carry the driver call, CUDA's error name and its text. CUDA does
//! not survive `fork`: in a child, a device or driver set up by the parent
//! refuses every call with `ErrorKind::Unavailable`.
mod context;
mod device;
mod driver;
mod pin;
mod registry;
mod stats;

use crate::{Error, Result};

pub use device::CudaDevice;
pub use driver::{DEFAULT_LIBRARIES, LIBRARY_ENV};
pub use registry::Registry;
pub use stats::CudaCopyStats;

use context::PrimaryContext;
use driver::Driver;

/// The CUDA devices of the C apis made by `lrt_host_api_cuda`, by the token
/// each api carries as its `ctx`.
pub static DEVICES_BY_TOKEN: Registry<CudaDevice> = Registry::new("CUDA host api");

/// Facts about one CUDA device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaDeviceInfo {
    /// The driver library that was loaded.
    pub library: String,
    /// `cuDriverGetVersion`, e.g. 12040 for CUDA 12.4.
    pub driver_version: i32,
    /// Number of CUDA devices visible to the process.
    pub device_count: i32,
    /// The device's ordinal.
    pub ordinal: i32,
    /// `cuDeviceGetName`.
    pub name: String,
    /// `cuDeviceTotalMem`, bytes.
    pub total_mem: u64,
}

/// cuInit, then checks `ordinal` against the device count; the `CUdevice`.
fn device_handle(driver: &'static Driver, ordinal: i32) -> Result<i32> {
    let count = driver::init_and_count(driver, ordinal)?;
    if ordinal < 0 || ordinal >= count {
        return Err(Error::unavailable(format!(
            "no CUDA device {ordinal} (found {count})"
        )));
    }
    driver.device(ordinal).map_err(|rc| {
        Error::unavailable(format!(
            "no CUDA device {ordinal} (found {count}): cuDeviceGet: {}",
            driver.describe(rc)
        ))
    })
}

fn open_on(driver: &'static Driver, ordinal: i32) -> Result<CudaDevice> {
    let dev = device_handle(driver, ordinal)?;
    Ok(CudaDevice::new(PrimaryContext::retain(
        driver, ordinal, dev,
    )?))
}

/// CUDA device `ordinal` (0-based), through the driver library named by
/// `$LEANRT_CUDA_LIBRARY`, else `libcuda.so.1`, else `libcuda.so`
/// (`driver::DEFAULT_LIBRARIES`). `ErrorKind::Unavailable`
/// without a CUDA driver, without devices, for an ordinal outside
/// `[0, count)` ("no CUDA device N (found M)"), or in a forked child of a
/// process that initialized the driver.
pub fn open(ordinal: i32) -> Result<CudaDevice> {
    open_on(driver::load_default()?, ordinal)
}

/// [`open`] through the driver library at `library` (a path or a soname),
/// ignoring `$LEANRT_CUDA_LIBRARY`. Tests use it to load a mock.
pub fn open_with_library(library: &str, ordinal: i32) -> Result<CudaDevice> {
    open_on(driver::load_library(library)?, ordinal)
}

/// Facts about CUDA device `ordinal` (see [`open`] for the library and the
/// errors).
pub fn device_info(ordinal: i32) -> Result<CudaDeviceInfo> {
    info_from(driver::load_default()?, ordinal)
}

/// [`device_info`] through the driver library at `library`.
pub fn device_info_with_library(library: &str, ordinal: i32) -> Result<CudaDeviceInfo> {
    info_from(driver::load_library(library)?, ordinal)
}

fn info_from(driver: &'static Driver, ordinal: i32) -> Result<CudaDeviceInfo> {
    let dev = device_handle(driver, ordinal)?;
    let describe = |what: &str, rc| Error::device(format!("{what}: {}", driver.describe(rc)));
    Ok(CudaDeviceInfo {
        library: driver.path.clone(),
        driver_version: driver
            .driver_version()
            .map_err(|rc| describe("cuDriverGetVersion", rc))?,
        device_count: driver
            .device_count()
            .map_err(|rc| describe("cuDeviceGetCount", rc))?,
        ordinal,
        name: driver
            .device_name(dev)
            .map_err(|rc| describe("cuDeviceGetName", rc))?,
        total_mem: driver
            .device_total_mem(dev)
            .map_err(|rc| describe("cuDeviceTotalMem_v2", rc))? as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn missing_library_is_unavailable() {
        let e = open_with_library("/nonexistent/libcuda-leanrt-test.so", 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert!(
            e.message().contains("/nonexistent/libcuda-leanrt-test.so"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn library_without_driver_symbols_is_unavailable() {
        // libc is loadable but exports no cuInit.
        let e = open_with_library("libc.so.6", 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert!(
            e.message().contains("does not export cuInit"),
            "{}",
            e.message()
        );
    }
}
