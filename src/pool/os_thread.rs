//! Starting and joining the pool's own worker threads with pthreads
//! directly, so that starting one can fail with a status but never abort.
//!
//! `std::thread::Builder::spawn` allocates its thread handle and spawn
//! hooks with allocations that abort when the heap is exhausted (some
//! through the system allocator, beyond the global allocator's emergency
//! reserve), and registers thread-local destructors through the C
//! library. Here the start record is allocated fallibly, `pthread_create`'s
//! error is returned, the thread's name is written from a stack buffer, and
//! the new thread is adopted by [`crate::thread_exit`] before it runs
//! anything else.
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::alloc::try_box;
use crate::{Error, Result};

/// Stack size when the options ask for none: what `std::thread` uses.
const DEFAULT_STACK: usize = 2 << 20;
/// Linux thread names hold 15 bytes and a NUL.
const NAME_BYTES: usize = 16;

struct Start {
    name: [u8; NAME_BYTES],
    main: Box<dyn FnOnce() + Send>,
}

/// An id of the calling thread, unique among the threads alive now
/// (`pthread_self`; unlike `std::thread::current` it never allocates).
pub fn current_id() -> usize {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as usize }
}

/// A started thread, to be joined once.
pub struct OsThread(libc::pthread_t);

extern "C" fn start(arg: *mut c_void) -> *mut c_void {
    // SAFETY: `arg` is the Box<Start> leaked by `spawn` for this thread
    // alone; pthread_create succeeded, so it is ours to take once.
    let start = unsafe { Box::from_raw(arg.cast::<Start>()) };
    crate::thread_exit::adopt_current_thread();
    // SAFETY: a NUL-terminated name of at most 15 bytes for this thread.
    unsafe { libc::pthread_setname_np(libc::pthread_self(), start.name.as_ptr().cast()) };
    // Never unwind into the C library's thread start.
    let _ = catch_unwind(AssertUnwindSafe(start.main));
    std::ptr::null_mut()
}

/// `"{prefix}-{index}"`, cut to what a Linux thread name holds.
fn thread_name(prefix: &str, index: usize) -> [u8; NAME_BYTES] {
    let mut name = [0u8; NAME_BYTES];
    let mut digits = [0u8; 20];
    let mut n = index;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let parts = [prefix.as_bytes(), b"-", &digits[at..]];
    let bytes = parts.into_iter().flatten().take(NAME_BYTES - 1);
    for (slot, b) in name.iter_mut().zip(bytes) {
        *slot = *b;
    }
    name
}

impl OsThread {
    /// Starts a thread named `"{prefix}-{index}"` (cut to 15 bytes) with
    /// `stack_size` bytes of stack (0: 2 MiB) that runs `main`.
    /// `ErrorKind::NoMemory` if the start record cannot be allocated or the
    /// system refuses the thread (the message carries its reason).
    pub fn spawn(
        prefix: &str,
        index: usize,
        stack_size: usize,
        main: impl FnOnce() + Send + 'static,
    ) -> Result<OsThread> {
        let main: Box<dyn FnOnce() + Send> = try_box(main)?;
        let record = Box::into_raw(try_box(Start {
            name: thread_name(prefix, index),
            main,
        })?);
        let stack = if stack_size == 0 {
            DEFAULT_STACK
        } else {
            stack_size
        };
        // SAFETY: attr is initialised before use and destroyed after;
        // `record` is handed to the new thread only if pthread_create
        // succeeds, and taken back here otherwise.
        let rc = unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            let mut rc = libc::pthread_attr_init(&mut attr);
            if rc == 0 {
                rc = libc::pthread_attr_setstacksize(&mut attr, stack);
                let mut thread: libc::pthread_t = 0;
                if rc == 0 {
                    rc = libc::pthread_create(&mut thread, &attr, start, record.cast());
                }
                libc::pthread_attr_destroy(&mut attr);
                if rc == 0 {
                    return Ok(OsThread(thread));
                }
            }
            drop(Box::from_raw(record));
            rc
        };
        Err(Error::no_memory(format!(
            "cannot start worker thread {index}: {}",
            std::io::Error::from_raw_os_error(rc)
        )))
    }

    /// Waits for the thread to finish.
    pub fn join(self) {
        // SAFETY: a thread started by `spawn`, joined once (self is consumed).
        unsafe { libc::pthread_join(self.0, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn names_are_cut_to_fifteen_bytes() {
        assert_eq!(&thread_name("pool", 7)[..7], b"pool-7\0");
        let long = thread_name("a-very-long-pool-name", 1023);
        assert_eq!(&long[..15], b"a-very-long-poo");
        assert_eq!(long[15], 0);
        assert_eq!(&thread_name("p", 0)[..4], b"p-0\0");
    }

    #[test]
    fn spawns_runs_and_joins() {
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let t = OsThread::spawn("test", 3, 0, move || {
            let _quiet = crate::diag::QuietPanics::enter();
            h.fetch_add(1, Ordering::SeqCst);
            panic!("contained");
        })
        .unwrap();
        t.join();
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        // A stack the system refuses is an error, not an abort.
        let e = match OsThread::spawn("test", 4, 1, || {}) {
            Err(e) => e,
            Ok(t) => {
                t.join();
                panic!("a 1-byte stack was accepted");
            }
        };
        assert_eq!(e.kind(), crate::ErrorKind::NoMemory);
        assert!(e.message().starts_with("cannot start worker thread 4"));
    }
}
