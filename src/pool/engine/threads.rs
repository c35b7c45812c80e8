//! Starting and joining the worker threads: leanrt's own pthreads
//! (`crate::pool::os_thread`, which fail with a status where std's spawn
//! could abort), or the host's custom create/join functions (ORT's
//! contract, stated on `PoolOptions::set_custom_thread_fns`).
use super::worker::{self, WorkerStart};
use crate::alloc::try_box;
use crate::pool::abi::lrt_custom_join_thread_fn;
use crate::pool::options::PoolOptions;
use crate::pool::os_thread::OsThread;
use crate::{Error, Result};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A started worker thread.
pub(super) enum ThreadHandle {
    Own(OsThread),
    /// The host's join function and the handle its create function returned.
    Custom(lrt_custom_join_thread_fn, usize),
}

/// Entry point handed to a custom create-thread function.
unsafe extern "C" fn custom_worker_entry(param: *mut c_void) {
    if param.is_null() {
        return;
    }
    // SAFETY: `param` is the pointer made by `Box::into_raw` in `spawn`;
    // the create function's contract is to call this entry exactly once
    // with it.
    let start = unsafe { Box::from_raw(param.cast::<WorkerStart>()) };
    // Never unwind into the host's C frames.
    let _ = catch_unwind(AssertUnwindSafe(move || worker::main(*start)));
}

/// Starts the thread of one worker.
pub(super) fn spawn(opts: &PoolOptions, start: WorkerStart) -> Result<ThreadHandle> {
    let index = start.index;
    let Some(fns) = opts.custom_threads else {
        return OsThread::spawn(&opts.name, index, opts.stack_size, move || {
            worker::main(start)
        })
        .map(ThreadHandle::Own);
    };
    let Some(create) = fns.create else {
        return Err(Error::internal("custom thread functions without create"));
    };
    let param = Box::into_raw(try_box(start)?).cast::<c_void>();
    // SAFETY: calling the host's create function with ORT's contract
    // (accepted by the unsafe `PoolOptions::set_custom_thread_fns`): it
    // starts a thread that calls `custom_worker_entry(param)` once, and
    // returns its handle.
    let handle = unsafe {
        create(
            fns.create_options as *mut c_void,
            Some(custom_worker_entry),
            param,
        )
    };
    if handle.is_null() {
        // ORT's contract: NULL means no thread was started, so nothing will
        // call `custom_worker_entry(param)` and the box (which holds a
        // reference to the pool state) is ours again.
        // SAFETY: `param` came from Box::into_raw above and, per that
        // contract, was not handed to any thread.
        drop(unsafe { Box::from_raw(param.cast::<WorkerStart>()) });
        return Err(Error::no_memory(format!(
            "the custom create-thread function returned NULL for worker {index}"
        )));
    }
    Ok(ThreadHandle::Custom(fns.join, handle as usize))
}

/// Joins every thread but the one of worker `me` (a worker cannot join
/// itself; it leaves its loop on its own once shutdown is set).
pub(super) fn join_all(threads: Vec<ThreadHandle>, me: Option<usize>) {
    for (index, t) in threads.into_iter().enumerate() {
        if Some(index) == me {
            continue;
        }
        match t {
            ThreadHandle::Own(h) => h.join(),
            ThreadHandle::Custom(Some(join), h) => {
                // SAFETY: `h` is the handle the host's create function
                // returned for a worker; join is called once per handle.
                unsafe { join(h as *const _) }
            }
            // `set_custom_thread_fns` keeps custom functions only in pairs.
            ThreadHandle::Custom(None, _) => {}
        }
    }
}
