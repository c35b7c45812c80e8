//! Edge cases of the pool's C ABI that the random fuzzer found: tasks
//! scheduled just before destroy, and between loops, must all run before
//! destroy returns ("no lost task").
mod fuzz_common;

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fuzz_common::*;
use leanrt::ffi::pool as ffi;

/// Destroy runs every task scheduled before it ("no lost task"): tasks
/// scheduled right before destroy, with and without spinning, after loops.
#[test]
fn destroy_runs_every_scheduled_task() {
    let _dog = Watchdog::new(
        "destroy_runs_every_scheduled_task",
        Duration::from_secs(120),
    );
    let rounds = if std::env::var("LEANRT_TEST_SMALL").is_ok() {
        50
    } else {
        400
    };
    let mut lost = Vec::new();
    for r in 0..rounds {
        let threads = 2 + (r % 3) as i32;
        let spin = [0, 10, -1][r % 3];
        let p = c_pool(threads, spin);
        let ran = AtomicU64::new(0);
        let n = 1 + (r * 37) % 300;
        for _ in 0..n {
            // SAFETY: live pool; ran outlives it.
            unsafe {
                ffi::lrt_pool_schedule(p, Some(count_task), &ran as *const AtomicU64 as *mut c_void)
            };
        }
        if r % 2 == 0 {
            let idx = AtomicU64::new(0);
            // SAFETY: live pool; idx outlives the call.
            unsafe {
                ffi::lrt_pool_try_simple_parallel_for(
                    p,
                    64,
                    Some(count_index),
                    &idx as *const AtomicU64 as *mut c_void,
                )
            };
            assert_eq!(idx.load(Ordering::SeqCst), 64);
        }
        // SAFETY: live pool, not used again.
        unsafe { ffi::lrt_pool_destroy(p) };
        let got = ran.load(Ordering::SeqCst);
        if got != n as u64 {
            lost.push(format!(
                "round {r} ({threads} threads, spin {spin}): {got} of {n} ran"
            ));
        }
    }
    assert!(
        lost.is_empty(),
        "scheduled tasks lost at destroy: {} rounds of {rounds}: {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
}

/// Tasks scheduled between loops all run by the time destroy returns
/// (found by fuzz_pool: workers that steal while a loop's helpers are
/// queued must not drop a job they took).
#[test]
fn schedule_between_loops_loses_no_task() {
    unsafe extern "C" fn range_cb(ctx: *mut c_void, a: isize, b: isize) {
        // SAFETY: ctx is an AtomicU64 that outlives the loop.
        unsafe { &*(ctx as *const AtomicU64) }.fetch_add((b - a) as u64, Ordering::SeqCst);
    }
    let _dog = Watchdog::new(
        "schedule_between_loops_loses_no_task",
        Duration::from_secs(120),
    );
    let rounds = if std::env::var("LEANRT_TEST_SMALL").is_ok() {
        40
    } else {
        200
    };
    let mut lost = Vec::new();
    for r in 0..rounds {
        let p = c_pool(3, if r % 2 == 0 { 0 } else { 20 });
        let ran = AtomicU64::new(0);
        let mut n = 0u64;
        for k in 0..20 {
            for _ in 0..10 {
                // SAFETY: live pool; ran outlives it.
                unsafe {
                    ffi::lrt_pool_schedule(
                        p,
                        Some(count_task),
                        &ran as *const AtomicU64 as *mut c_void,
                    )
                };
                n += 1;
            }
            let idx = AtomicU64::new(0);
            let c = &idx as *const AtomicU64 as *mut c_void;
            // SAFETY: live pool; idx outlives the call.
            unsafe {
                match k % 4 {
                    0 => ffi::lrt_pool_try_simple_parallel_for(p, 50, Some(count_index), c),
                    1 => ffi::lrt_pool_try_parallel_for(p, 50, 1e6, Some(range_cb), c),
                    2 => ffi::lrt_pool_try_batch_parallel_for(p, 50, Some(count_index), c, 7),
                    _ => assert_eq!(
                        ffi::lrt_kernel_parallel_for(p, Some(count_kernel), 50, 0, c) as i32,
                        0
                    ),
                }
            }
            assert_eq!(idx.load(Ordering::SeqCst), 50, "loop {k} of round {r}");
        }
        // SAFETY: live pool, not used again.
        unsafe { ffi::lrt_pool_destroy(p) };
        let got = ran.load(Ordering::SeqCst);
        if got != n {
            lost.push(format!("round {r}: {got} of {n} ran"));
        }
    }
    assert!(
        lost.is_empty(),
        "tasks lost in {} of {rounds} rounds: {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
}
