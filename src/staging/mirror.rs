//! The host mirror: an anonymous private mapping the size of the whole image.
//!
//! Creating it reserves address space only; the kernel backs a page with
//! (zeroed) memory the first time it is written. The maker never pre-touches
//! it, so a run that claims N slots makes only those slots' pages resident,
//! and a reused mapping costs no page faults once those pages are warm.
use std::ffi::c_void;

use crate::{Error, Result};

/// An owned anonymous read/write mapping; unmapped on drop.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; moving the owner
// to another thread moves the only handle to it.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Reserves `len` bytes (> 0) of zero-filled, untouched memory.
    pub fn new(len: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::invalid_argument("empty mapping"));
        }
        // SAFETY: an anonymous private mapping at an address of the kernel's
        // choosing aliases nothing; failure is checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            let err = std::io::Error::last_os_error();
            return Err(Error::no_memory(format!(
                "could not map a {len}-byte host mirror: {err}"
            )));
        }
        Ok(Mapping {
            ptr: ptr.cast::<u8>(),
            len,
        })
    }

    /// Asks the kernel to back this mapping with transparent huge pages
    /// where it can (`MADV_HUGEPAGE`), from the next page it faults in:
    /// fewer TLB misses for a buffer read and written end to end every run.
    /// A hint: refused or without THP, the mapping keeps its small pages.
    /// Linux only; a no-op elsewhere.
    pub fn advise_huge_pages(&self) {
        // SAFETY: madvise on exactly this mapping; MADV_HUGEPAGE changes no
        // content, only how the kernel backs the pages.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::madvise(self.ptr.cast::<c_void>(), self.len, libc::MADV_HUGEPAGE)
        };
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.ptr.cast::<c_void>(), self.len) };
    }
}
