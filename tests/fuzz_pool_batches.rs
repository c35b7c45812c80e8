//! A batch count far above the number of indices (up to PTRDIFF_MAX) in
//! `lrt_pool_try_batch_parallel_for` and `lrt_kernel_parallel_for`: bad
//! input like any other, it must neither hang nor skip an index. In a binary
//! of its own because a hang here ends the process (through the watchdog).
mod fuzz_common;

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fuzz_common::*;
use leanrt::ffi::pool as ffi;

/// More batches than indices (up to PTRDIFF_MAX) still runs each index once
/// and returns promptly: the batch count is bounded by the work, not by the
/// caller's number.
#[test]
fn huge_batch_counts_return() {
    let _dog = Watchdog::new(
        "huge_batch_counts_return (num_batches up to PTRDIFF_MAX)",
        Duration::from_secs(30),
    );
    let p = c_pool(3, 0);
    for nb in [1000isize, 1 << 20, isize::MAX / 2, isize::MAX] {
        for pool in [null_mut(), p] {
            let n = AtomicU64::new(0);
            note_step(|| {
                format!(
                    "lrt_pool_try_batch_parallel_for(total 10, num_batches {nb}, pool {pool:p})"
                )
            });
            // SAFETY: pool live or NULL; n outlives the call.
            unsafe {
                ffi::lrt_pool_try_batch_parallel_for(
                    pool,
                    10,
                    Some(count_index),
                    &n as *const AtomicU64 as *mut c_void,
                    nb,
                )
            };
            assert_eq!(n.load(Ordering::SeqCst), 10, "num_batches {nb}");
            let k = AtomicU64::new(0);
            note_step(|| {
                format!("lrt_kernel_parallel_for(total 10, num_batch {nb}, pool {pool:p})")
            });
            // SAFETY: as above.
            let st = unsafe {
                ffi::lrt_kernel_parallel_for(
                    pool,
                    Some(count_kernel),
                    10,
                    nb as usize,
                    &k as *const AtomicU64 as *mut c_void,
                )
            };
            assert_eq!(st as i32, 0);
            assert_eq!(k.load(Ordering::SeqCst), 10, "num_batch {nb}");
        }
    }
    // SAFETY: live pool, not used again.
    unsafe { ffi::lrt_pool_destroy(p) };
}
