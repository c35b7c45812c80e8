//! Prefetching the lines an upload's copies read and write, before the
//! first copy: the only place staging hints the caches.
//!
//! An upload of a small image makes several copies of a few hundred bytes
//! each, from the mirror to scattered places of a destination the device's
//! work last touched; made one after another, each copy waits for its first
//! lines alone. Asked for together before the first copy, those lines
//! arrive in parallel (`ahead`); so do the lines of the staging buffer an
//! upload will write, asked for when its run is planned (`ahead_write`).
//! A prefetch is a hint: it never faults (an address that is not mapped,
//! or mapped as device memory, is ignored by the CPU), so a destination
//! that is device memory costs a dropped hint per line at most.

/// The bytes of each part prefetched: the first lines of a copy are the ones
/// that wait; a longer copy streams the rest (the hardware prefetchers).
pub(crate) const AHEAD_BYTES: usize = 4096;

/// Prefetches the first `AHEAD_BYTES` of a copy of `len` bytes from `src`
/// (to read) to `dst` (to write). Any addresses: nothing is accessed.
#[inline]
pub(crate) fn ahead(dst: *const u8, src: *const u8, len: usize) {
    let mut at = 0;
    while at < len.min(AHEAD_BYTES) {
        line(dst.wrapping_add(at), src.wrapping_add(at));
        at += 64;
    }
}

/// Prefetches the first `AHEAD_BYTES` of `len` bytes at `dst`, to write.
#[inline]
pub(crate) fn ahead_write(dst: *const u8, len: usize) {
    ahead(dst, dst, len);
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn line(dst: *const u8, src: *const u8) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0, _MM_HINT_T0};
    // SAFETY: PREFETCHh and PREFETCHW access no memory and never fault,
    // whatever the address (Intel SDM vol. 2, PREFETCHh / PREFETCHW); a CPU
    // without PREFETCHW executes its encoding as a NOP.
    unsafe {
        _mm_prefetch::<_MM_HINT_T0>(src.cast::<i8>());
        _mm_prefetch::<_MM_HINT_ET0>(dst.cast::<i8>());
    }
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn line(dst: *const u8, src: *const u8) {
    // SAFETY: PRFM accesses no memory and never faults, whatever the
    // address (Arm ARM, "Prefetch memory"); it writes no register.
    unsafe {
        std::arch::asm!(
            "prfm pldl1keep, [{s}]",
            "prfm pstl1keep, [{d}]",
            s = in(reg) src,
            d = in(reg) dst,
            options(nostack, preserves_flags, readonly)
        );
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
fn line(_dst: *const u8, _src: *const u8) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetching_touches_nothing_and_takes_any_address() {
        let src = vec![7u8; 3 * AHEAD_BYTES];
        let mut dst = vec![0u8; 3 * AHEAD_BYTES];
        ahead(dst.as_mut_ptr(), src.as_ptr(), src.len());
        // Addresses that are not mapped (the first page, the top of the
        // address space) are hints the CPU drops.
        ahead(std::ptr::null(), usize::MAX as *const u8, 1 << 20);
        ahead_write(std::ptr::null(), 1 << 20);
        assert!(dst.iter().all(|&b| b == 0) && src.iter().all(|&b| b == 7));
    }
}
