//! What a small upload does about cold lines: the only place staging
//! hints the caches, and where the upload's code is placed.
//!
//! A small image's upload (a few dozen tasks) does a few hundred bytes of
//! work; inside a host runtime that ran other work since the last bind,
//! its time goes to lines that are no longer cached, its code's as much as
//! its data's, each waited for alone (the reference's simulator at 17
//! tasks: a dozen steps of 50-400 ns each, around 2 us of copies).
//!
//! * Data: the lines of the staging buffer an upload will write first are
//!   asked for when its run is planned (`ahead_write`, at `set_pool_use`,
//!   outside the upload). The upload does not ask for its copies' lines
//!   ahead of them: on the AMD EPYC VM asking for the first lines of all
//!   eight copies of a 17-task upload before the first one took 0.4-0.6 us
//!   and the copies took as long after it (the upload 0.2-0.3 us slower
//!   than without, A/B in the simulator at `7f5d29d`), and asking at the
//!   upload's entry was slower still.
//! * Code: the functions an upload runs (the C entry points
//!   `lrt_runtime_maker_upload` and `lrt_runtime_maker_v2_upload_frame`
//!   and what they call that is not inlined) are placed in one ELF section,
//!   `.text.hot.leanrt_upload` (in the library's own builds one input
//!   section of its one object, which any linker keeps whole; GNU ld also
//!   groups every `.text.hot.*` input section): a few contiguous pages
//!   instead of pages across the library, so a cold upload waits for fewer
//!   instruction-TLB and cache misses (the v2 upload's route and report
//!   steps 200-280 ns -> 70-120 ns; the upload 4.49 / 4.78 us against
//!   5.21 / 4.82 without the section, in one A/B). A function on that path
//!   carries
//!   `#[cfg_attr(target_os = "linux", link_section = ".text.hot.leanrt_upload")]`.
//!
//! A prefetch is a hint: it never faults (an address that is not mapped,
//! or mapped as device memory, is ignored by the CPU), so a destination
//! that is device memory costs a dropped hint per line at most.

/// The bytes of a buffer asked for ahead of its writes: its first lines are
/// the ones that wait; past them the hardware prefetchers stream the rest.
pub(crate) const AHEAD_BYTES: usize = 4096;

/// Prefetches the first `AHEAD_BYTES` of `len` bytes at `dst`, to write.
/// Any address: nothing is accessed.
#[inline]
pub(crate) fn ahead_write(dst: *const u8, len: usize) {
    let mut at = 0;
    while at < len.min(AHEAD_BYTES) {
        line_for_write(dst.wrapping_add(at));
        at += 64;
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn line_for_write(dst: *const u8) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
    // SAFETY: PREFETCHW accesses no memory and never faults, whatever the
    // address (Intel SDM vol. 2, PREFETCHW); a CPU without it executes its
    // encoding as a NOP.
    unsafe { _mm_prefetch::<_MM_HINT_ET0>(dst.cast::<i8>()) };
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn line_for_write(dst: *const u8) {
    // SAFETY: PRFM accesses no memory and never faults, whatever the
    // address (Arm ARM, "Prefetch memory"); it writes no register.
    unsafe {
        std::arch::asm!(
            "prfm pstl1keep, [{d}]",
            d = in(reg) dst,
            options(nostack, preserves_flags, readonly)
        );
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
fn line_for_write(_dst: *const u8) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetching_touches_nothing_and_takes_any_address() {
        let dst = vec![7u8; 3 * AHEAD_BYTES];
        ahead_write(dst.as_ptr(), dst.len());
        // Addresses that are not mapped (the first page, the top of the
        // address space) are hints the CPU drops.
        ahead_write(std::ptr::null(), 1 << 20);
        ahead_write(usize::MAX as *const u8, 1 << 20);
        assert!(dst.iter().all(|&b| b == 7));
    }
}
