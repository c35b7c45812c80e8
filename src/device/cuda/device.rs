//! The CUDA [`Device`]: allocations, copies and pinning on one device's
//! primary context, with copy counters.
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

use super::context::PrimaryContext;
use super::driver::{DevPtr, CUDA_SUCCESS};
use super::stats::{CopyCounters, CudaCopyStats};
use crate::device::{Device, PinnedRegion};
use crate::{Error, Result};

/// One CUDA device, through a retained primary context. Cheap to share
/// (`Arc`); the context is returned to the driver when the last user (this
/// value, or a pinned region) goes away. Every call makes the context
/// current for its own driver calls and restores the thread's previous one,
/// so any thread may call.
#[derive(Debug)]
pub struct CudaDevice {
    ctx: Arc<PrimaryContext>,
    stats: CopyCounters,
}

impl CudaDevice {
    pub(super) fn new(ctx: PrimaryContext) -> Self {
        CudaDevice {
            ctx: Arc::new(ctx),
            stats: CopyCounters::default(),
        }
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> i32 {
        self.ctx.ordinal
    }

    /// The driver library this device was opened through.
    pub fn library(&self) -> &str {
        &self.ctx.driver.path
    }

    /// The copy counters (benchmarks subtract two readings to time what an
    /// upload spent in the driver).
    pub fn copy_stats(&self) -> CudaCopyStats {
        self.stats.snapshot()
    }

    /// Waits for all work on the device to finish (`cuCtxSynchronize`).
    /// Benchmarks call it after copies from pageable memory, which may
    /// return before the DMA has completed.
    pub fn synchronize(&self) -> Result<()> {
        let _cur = self.ctx.current()?;
        match self.ctx.driver.ctx_synchronize() {
            CUDA_SUCCESS => Ok(()),
            rc => Err(self.ctx.error("cuCtxSynchronize", rc)),
        }
    }
}

impl Device for CudaDevice {
    fn alloc(&self, size: usize) -> Result<*mut u8> {
        if size == 0 {
            return Err(Error::invalid_argument("device allocation of 0 bytes"));
        }
        let _cur = self.ctx.current()?;
        let p = self
            .ctx
            .driver
            .mem_alloc(size)
            .map_err(|rc| self.ctx.error(&format!("cuMemAlloc_v2({size} bytes)"), rc))?;
        if p == 0 {
            return Err(Error::no_memory(format!(
                "cuMemAlloc_v2({size} bytes) on CUDA device {} returned address 0",
                self.ctx.ordinal
            )));
        }
        Ok(p as usize as *mut u8)
    }

    unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: forwarded under the trait's contract.
        let _ = unsafe { self.free_checked(ptr) };
    }

    unsafe fn copy_to(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        if dst.is_null() || src.is_null() {
            return Err(Error::invalid_argument(format!(
                "copy to the device with a NULL pointer (dst {dst:p}, src {src:p})"
            )));
        }
        let _cur = self.ctx.current()?;
        let t0 = Instant::now();
        let dev = dst as usize as DevPtr;
        // SAFETY: src is valid for len bytes (the trait's contract); the
        // driver validates the device range.
        match unsafe { self.ctx.driver.memcpy_htod(dev, src.cast::<c_void>(), len) } {
            CUDA_SUCCESS => {
                self.stats.add_h2d(len, t0);
                Ok(())
            }
            rc => Err(self
                .ctx
                .error(&format!("cuMemcpyHtoD_v2({dev:#x}, {len} bytes)"), rc)),
        }
    }

    unsafe fn copy_from(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        if dst.is_null() || src.is_null() {
            return Err(Error::invalid_argument(format!(
                "copy from the device with a NULL pointer (dst {dst:p}, src {src:p})"
            )));
        }
        let _cur = self.ctx.current()?;
        let t0 = Instant::now();
        let dev = src as usize as DevPtr;
        // SAFETY: dst is valid for len bytes (the trait's contract); the
        // driver validates the device range.
        match unsafe { self.ctx.driver.memcpy_dtoh(dst.cast::<c_void>(), dev, len) } {
            CUDA_SUCCESS => {
                self.stats.add_d2h(len, t0);
                Ok(())
            }
            rc => Err(self
                .ctx
                .error(&format!("cuMemcpyDtoH_v2({dev:#x}, {len} bytes)"), rc)),
        }
    }

    unsafe fn pin(&self, ptr: *mut u8, len: usize) -> Result<PinnedRegion> {
        // SAFETY: forwarded under the trait's contract.
        unsafe { super::pin::pin(&self.ctx, ptr, len) }
    }
}

impl CudaDevice {
    /// `cuMemFree_v2` with its result; NULL is a no-op. In a forked child
    /// nothing is freed (the memory belongs to the parent's context).
    ///
    /// # Safety
    /// `ptr` is NULL or came from `alloc` on this device and is not used
    /// afterwards.
    pub unsafe fn free_checked(&self, ptr: *mut u8) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        let _cur = self.ctx.current()?;
        let p = ptr as usize as DevPtr;
        match self.ctx.driver.mem_free(p) {
            CUDA_SUCCESS => Ok(()),
            rc => Err(self.ctx.error(&format!("cuMemFree_v2({p:#x})"), rc)),
        }
    }
}
