//! A retained primary context of one CUDA device, and the guard that makes
//! it current on the calling thread for the length of a driver call.
//!
//! The context remembers the process that retained it: CUDA does not survive
//! `fork`, so in a child every use is refused with `ErrorKind::Unavailable`
//! and dropping it returns nothing to the (parent's) driver.
use super::driver::{refuse_other_process, Driver, CUDA_ERROR_OUT_OF_MEMORY, CUDA_SUCCESS};
use crate::{Error, Result};

/// One retained primary context.
pub(super) struct PrimaryContext {
    pub(super) driver: &'static Driver,
    pub(super) ordinal: i32,
    cu_device: i32,
    /// The primary context (`CUcontext`), as an address; retained until drop.
    cu_ctx: usize,
    /// The process that retained it.
    pid: u32,
}

impl std::fmt::Debug for PrimaryContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrimaryContext")
            .field("library", &self.driver.path)
            .field("ordinal", &self.ordinal)
            .finish()
    }
}

/// The context made current on this thread until dropped.
pub(super) struct CurrentGuard<'a> {
    driver: &'a Driver,
}

impl Drop for CurrentGuard<'_> {
    fn drop(&mut self) {
        let _ = self.driver.ctx_pop();
    }
}

/// The error for a failed driver call `what` on device `ordinal`: CUDA's
/// error name and text; out of memory is `ErrorKind::NoMemory`.
pub(super) fn cu_error(driver: &Driver, ordinal: i32, what: &str, code: i32) -> Error {
    let msg = format!("{what} on CUDA device {ordinal}: {}", driver.describe(code));
    if code == CUDA_ERROR_OUT_OF_MEMORY {
        Error::no_memory(msg)
    } else {
        Error::device(msg)
    }
}

impl PrimaryContext {
    /// Retains the primary context of `device` (a `CUdevice` for ordinal
    /// `ordinal`).
    pub(super) fn retain(
        driver: &'static Driver,
        ordinal: i32,
        device: i32,
    ) -> Result<PrimaryContext> {
        let cu_ctx = driver
            .primary_ctx_retain(device)
            .map_err(|rc| cu_error(driver, ordinal, "cuDevicePrimaryCtxRetain", rc))?;
        Ok(PrimaryContext {
            driver,
            ordinal,
            cu_device: device,
            cu_ctx,
            pid: std::process::id(),
        })
    }

    /// Whether this process is the one that retained the context.
    pub(super) fn in_owner_process(&self) -> bool {
        self.pid == std::process::id()
    }

    /// Makes the context current on this thread until the guard drops.
    pub(super) fn current(&self) -> Result<CurrentGuard<'_>> {
        refuse_other_process(self.pid, &format!("CUDA device {}", self.ordinal))?;
        let rc = self.driver.ctx_push(self.cu_ctx);
        if rc != CUDA_SUCCESS {
            return Err(self.error("cuCtxPushCurrent_v2", rc));
        }
        Ok(CurrentGuard {
            driver: self.driver,
        })
    }

    /// The error for a failed driver call `what` on this device.
    pub(super) fn error(&self, what: &str, code: i32) -> Error {
        cu_error(self.driver, self.ordinal, what, code)
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // Runs when the last user (a device handle, a maker, a pinned region)
        // lets go. In a forked child the retain belongs to the parent's
        // driver state, which the child must not touch.
        if self.in_owner_process() {
            let _ = self.driver.primary_ctx_release(self.cu_device);
        }
    }
}
