//! Pinning host memory for the CUDA backend: `cuMemHostRegister_v2` with
//! `CU_MEMHOSTREGISTER_PORTABLE`, undone when the region drops.
use std::ffi::c_void;
use std::sync::Arc;

use super::context::PrimaryContext;
use super::driver::CUDA_SUCCESS;
use crate::device::PinnedRegion;
use crate::{Error, Result};

const CU_MEMHOSTREGISTER_PORTABLE: u32 = 0x01;

/// Page-locks `[ptr, ptr + len)`; the region unregisters it when dropped
/// and keeps the context alive until then. Pinning failures are
/// `ErrorKind::Device` (the caller falls back to pageable memory), also for
/// out-of-memory.
///
/// # Safety
/// The range is host memory that stays mapped until the region drops.
pub(super) unsafe fn pin(
    c: &Arc<PrimaryContext>,
    ptr: *mut u8,
    len: usize,
) -> Result<PinnedRegion> {
    if ptr.is_null() || len == 0 {
        return Err(Error::invalid_argument(format!(
            "cannot pin {len} bytes at {ptr:p}"
        )));
    }
    {
        let _cur = c.current()?;
        // SAFETY: the caller keeps the range mapped until the region drops;
        // the driver checks that it is host memory.
        let rc = unsafe {
            c.driver
                .host_register(ptr.cast(), len, CU_MEMHOSTREGISTER_PORTABLE)
        };
        if rc != CUDA_SUCCESS {
            let e = c.error(&format!("cuMemHostRegister_v2({ptr:p}, {len} bytes)"), rc);
            return Err(Error::device(e.message().to_owned()));
        }
    }
    let addr = ptr as usize;
    let c = Arc::clone(c);
    Ok(PinnedRegion::new(Box::new(move || {
        // Unpin under our own context; a failure cannot be reported from a
        // destructor and leaves nothing to clean up on our side. In a forked
        // child `current` refuses and nothing is called.
        if let Ok(_cur) = c.current() {
            let _ = c.driver.host_unregister(addr as *mut c_void);
        }
    })))
}
