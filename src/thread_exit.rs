//! Thread-exit destructors of leanrt's own threads, registered without
//! allocating.
//!
//! A Rust thread-local with a destructor registers that destructor on its
//! first use in a thread, through `__cxa_thread_atexit_impl`. The C
//! library's implementation allocates a list node with calloc and, when
//! that fails, aborts the process ("failed to register TLS destructor: out
//! of memory"). leanrt's worker threads use such thread-locals (the epoch
//! handle of the work-stealing deques), so a worker starting while the heap
//! is exhausted would abort its host. This module therefore defines
//! `__cxa_thread_atexit_impl` for the code linked into leanrt (a hidden
//! symbol: the host's own registrations still go to the C library):
//!
//! * the destructor goes into a fixed per-thread table, and a pthread key
//!   destructor runs the table, newest first, when the thread exits;
//!   nothing is allocated (the key's value is set once per thread, in the
//!   static part of the thread's key table);
//! * when the table is full, or the key cannot be set, the call is
//!   forwarded unchanged to the C library's implementation (looked up with
//!   `dlsym(RTLD_NEXT)` once).
//!
//! One difference to the C library's: pthread key destructors do not run
//! for the main thread when the process exits, so leanrt's thread-locals
//! of the main thread are not dropped then (the process is ending; nothing
//! of theirs needs to be released).
//!
//! Invariants: the table is a const-initialised thread-local without a
//! destructor of its own (using it never registers anything); an entry is
//! run exactly once (it is removed before it runs; entries added while the
//! table runs are run too). The shared library is linked with
//! `-z nodelete` (build.rs), so the code of a recorded destructor is never
//! unmapped before its thread exits, which the C library's implementation
//! otherwise ensures by keeping the object loaded.
use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::Once;

type Dtor = unsafe extern "C" fn(*mut c_void);
type Register = unsafe extern "C" fn(Dtor, *mut c_void, *mut c_void) -> c_int;

/// Destructors one adopted thread can hold (leanrt's threads use a few).
const CAPACITY: usize = 32;

struct Table {
    adopted: bool,
    len: usize,
    entries: [Option<(Dtor, *mut c_void)>; CAPACITY],
}

thread_local! {
    static TABLE: UnsafeCell<Table> = const {
        UnsafeCell::new(Table { adopted: false, len: 0, entries: [None; CAPACITY] })
    };
}

static KEY_ONCE: Once = Once::new();
/// The pthread key whose destructor runs the table; `u32::MAX`: none.
static KEY: AtomicU32 = AtomicU32::new(u32::MAX);
static REAL: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Pops and runs this thread's destructors until none is left.
unsafe extern "C" fn run_table(_marker: *mut c_void) {
    loop {
        // SAFETY: the table is this thread's; the reference ends before
        // the destructor runs (which may register another entry).
        let next = TABLE.with(|t| unsafe {
            let t = &mut *t.get();
            if t.len == 0 {
                return None;
            }
            t.len -= 1;
            t.entries[t.len].take()
        });
        match next {
            // SAFETY: a destructor with the object it was registered for,
            // run once, on its own thread, as the C library would.
            Some((dtor, obj)) => unsafe { dtor(obj) },
            None => return,
        }
    }
}

/// Prepares the calling thread's table (done on the first registration,
/// and early by leanrt's own threads). Returns false (and changes nothing)
/// if the pthread key could not be had or set, in which case registrations
/// keep going to the C library.
pub fn adopt_current_thread() -> bool {
    KEY_ONCE.call_once(|| {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: a valid out-pointer and a destructor of the right type.
        if unsafe { libc::pthread_key_create(&mut key, Some(run_table)) } == 0 {
            KEY.store(key, Ordering::Release);
        }
    });
    let key = KEY.load(Ordering::Acquire);
    if key == u32::MAX {
        return false;
    }
    // A non-NULL value makes the key's destructor run at thread exit.
    // SAFETY: a key made above; the value is a marker, never dereferenced.
    if unsafe { libc::pthread_setspecific(key, std::ptr::dangling::<c_void>()) } != 0 {
        return false;
    }
    // SAFETY: this thread's table, no other reference live.
    TABLE.with(|t| unsafe { (*t.get()).adopted = true });
    true
}

fn real_register() -> Option<Register> {
    let mut p = REAL.load(Ordering::Acquire);
    if p.is_null() {
        // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT finds the
        // next definition after this object, the C library's.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, c"__cxa_thread_atexit_impl".as_ptr()) };
        REAL.store(p, Ordering::Release);
    }
    // SAFETY: the C library's function of this signature (or NULL).
    (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, Register>(p) })
}

/// Registers `dtor(obj)` to run when the calling thread exits: leanrt's
/// `__cxa_thread_atexit_impl` (the Itanium C++ ABI function that Rust's
/// thread-locals call), see the module doc.
///
/// The symbol is defined below in assembly so that it can be `.hidden`:
/// it serves the code linked into leanrt and is not exported from the
/// shared library (Rust has no stable way to hide a `#[no_mangle]` item).
///
/// # Safety
/// As the C library's: `dtor` must be callable with `obj` on this thread
/// at its exit; `dso` identifies the object the code belongs to.
#[cfg_attr(not(feature = "emergency-reserve"), allow(dead_code))]
unsafe extern "C" fn thread_atexit(dtor: Dtor, obj: *mut c_void, dso: *mut c_void) -> c_int {
    // SAFETY: this thread's table, no other reference live (adopting
    // touches it only after this check, and not while it is borrowed).
    let adopted = TABLE.with(|t| unsafe { (*t.get()).adopted });
    if !adopted {
        adopt_current_thread();
    }
    // SAFETY: as above.
    let kept = TABLE.with(|t| unsafe {
        let t = &mut *t.get();
        if t.adopted && t.len < CAPACITY {
            t.entries[t.len] = Some((dtor, obj));
            t.len += 1;
            true
        } else {
            false
        }
    });
    if kept {
        return 0;
    }
    match real_register() {
        // SAFETY: forwarded unchanged to the C library's implementation.
        Some(real) => unsafe { real(dtor, obj, dso) },
        // No C library implementation: nothing would run it; say so.
        None => -1,
    }
}

// A hidden `__cxa_thread_atexit_impl` that tail-jumps to `thread_atexit`
// (same C signature, arguments still in their registers). Weak, as Rust's
// standard library refers to it: a global definition made the linker warn
// "changed binding to STB_WEAK" on every Rust program that links leanrt as
// a crate (the CLI); a weak definition in the link still takes precedence
// over the C library's in its shared object (the test below).
// Part of the `emergency-reserve` feature: a Rust program that links
// leanrt as a crate gets it for all of its own Rust thread-locals too (the
// symbol serves the whole link), and turns the feature off to keep the C
// library's registration.
#[cfg(all(feature = "emergency-reserve", target_arch = "x86_64"))]
std::arch::global_asm!(
    ".weak __cxa_thread_atexit_impl",
    ".hidden __cxa_thread_atexit_impl",
    ".type __cxa_thread_atexit_impl,@function",
    "__cxa_thread_atexit_impl:",
    "jmp {f}",
    ".size __cxa_thread_atexit_impl, . - __cxa_thread_atexit_impl",
    f = sym thread_atexit,
);
#[cfg(all(feature = "emergency-reserve", target_arch = "aarch64"))]
std::arch::global_asm!(
    ".weak __cxa_thread_atexit_impl",
    ".hidden __cxa_thread_atexit_impl",
    ".type __cxa_thread_atexit_impl,%function",
    "__cxa_thread_atexit_impl:",
    "b {f}",
    ".size __cxa_thread_atexit_impl, . - __cxa_thread_atexit_impl",
    f = sym thread_atexit,
);

#[cfg(all(
    test,
    feature = "emergency-reserve",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::sync::atomic::AtomicUsize;

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    struct Counted;
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::SeqCst);
        }
    }

    thread_local! {
        static OWNED: Cell<Option<Counted>> = const { Cell::new(None) };
    }

    #[test]
    fn destructors_go_to_the_table_and_run_at_thread_exit() {
        let before = DROPS.load(Ordering::SeqCst);
        let len = std::thread::spawn(|| {
            assert!(adopt_current_thread());
            OWNED.with(|o| o.set(Some(Counted)));
            // SAFETY: this thread's table.
            TABLE.with(|t| unsafe { (*t.get()).len })
        })
        .join()
        .unwrap();
        assert!(len >= 1, "the destructor went to the table");
        assert_eq!(DROPS.load(Ordering::SeqCst), before + 1, "and ran at exit");
        // Any other thread's registrations from leanrt's code go to the
        // table too, on first use.
        let len = std::thread::spawn(|| {
            OWNED.with(|o| o.set(Some(Counted)));
            // SAFETY: this thread's table.
            TABLE.with(|t| unsafe { (*t.get()).len })
        })
        .join()
        .unwrap();
        assert!(len >= 1);
        assert_eq!(DROPS.load(Ordering::SeqCst), before + 2);
    }
}
