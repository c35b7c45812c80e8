//! Custom thread functions for the pool tests, with ORT's signatures (the
//! C ABI's `lrt_custom_create_thread_fn` / `lrt_custom_join_thread_fn`):
//! each worker on a `std::thread`; creates, joins and calls are counted,
//! the last `options` pointer create got is kept, and the create call with
//! number `FAIL_AT` (1-based; 0: never) returns NULL, starting nothing.
//!
//! Included by each test binary that needs it with
//! `#[path = "pool_support/custom_threads.rs"] mod custom_threads;`.
#![allow(dead_code)]

use leanrt::pool::abi::{lrt_custom_thread_handle, lrt_thread_worker_fn};
use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

/// Threads started.
pub static CREATES: AtomicI64 = AtomicI64::new(0);
/// Threads joined.
pub static JOINS: AtomicI64 = AtomicI64::new(0);
/// Calls of `create` (failed ones included).
pub static CALLS: AtomicI64 = AtomicI64::new(0);
/// When > 0, the create call with this number returns NULL.
pub static FAIL_AT: AtomicI64 = AtomicI64::new(0);
/// The `options` argument of the last create call, as an address.
pub static LAST_OPTIONS: AtomicUsize = AtomicUsize::new(0);

struct Param(*mut c_void);
// SAFETY: the worker's parameter is meant for the worker thread (ORT's
// contract: the thread calls the worker function once with it).
unsafe impl Send for Param {}

/// The create function: starts a thread that runs `worker(param)` once.
pub unsafe extern "C" fn create(
    options: *mut c_void,
    worker: lrt_thread_worker_fn,
    param: *mut c_void,
) -> lrt_custom_thread_handle {
    LAST_OPTIONS.store(options as usize, Ordering::SeqCst);
    let n = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
    if FAIL_AT.load(Ordering::SeqCst) == n {
        return std::ptr::null();
    }
    let worker = worker.expect("a worker function");
    let param = Param(param);
    let handle = std::thread::spawn(move || {
        let p = param;
        // SAFETY: leanrt's worker function with its own parameter, once.
        unsafe { worker(p.0) };
    });
    CREATES.fetch_add(1, Ordering::SeqCst);
    Box::into_raw(Box::new(handle)).cast()
}

/// The join function: waits for a thread `create` started.
pub unsafe extern "C" fn join(handle: lrt_custom_thread_handle) {
    assert!(!handle.is_null(), "join of a NULL handle");
    // SAFETY: `handle` came from `create`'s Box::into_raw and is joined once.
    let h = unsafe { Box::from_raw(handle as *mut std::thread::JoinHandle<()>) };
    h.join().expect("a worker thread panicked");
    JOINS.fetch_add(1, Ordering::SeqCst);
}
