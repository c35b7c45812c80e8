//! Allocation that cannot abort the host process.
//!
//! Rust's infallible allocations (`Box::new`, `format!`, `Arc::new`, the
//! internals of `std::thread::spawn`) call `handle_alloc_error` when malloc
//! returns NULL, and on stable Rust that prints a line and aborts. A library
//! inside someone else's process must not do that, so leanrt handles
//! allocation failure in two layers:
//!
//! 1. **Fallible where the size is the caller's.** Every allocation whose
//!    size an argument decides (worker tables, mirrors, strings kept from
//!    the caller, boxed handles and jobs) goes through [`try_box`],
//!    [`try_vec`], [`try_string`] or a `try_reserve`, inside a [`fallible`]
//!    scope, and becomes `ErrorKind::NoMemory`.
//! 2. **An emergency reserve for the small fixed-size rest** (an error
//!    message, an `Arc` inside std, a thread's bookkeeping). [`Allocator`],
//!    the process's `#[global_allocator]`, asks the system allocator first;
//!    when that returns NULL for a request of at most [`RESERVE_MAX_REQUEST`]
//!    bytes outside a [`fallible`] scope, it serves it from a static
//!    [`RESERVE_BYTES`] arena and marks the calling thread *short*. The C
//!    boundary clears the mark when a call starts; a call's commit points
//!    ([`check`]: handing out a new handle, storing into an object) refuse
//!    with `ErrorKind::NoMemory` while it is set, so the call undoes itself
//!    by dropping what it built, which also gives the reserve back.
//!
//! Protocol of the reserve: the arena is cut into [`GRANULE`]-byte granules,
//! tracked by one bit each in a bitmap; a request takes the first run of
//! free granules that fits (its start aligned to the request's alignment)
//! under a spin lock, and `dealloc` of any pointer inside the arena clears
//! its granules. Invariants: a granule belongs to at most one live
//! allocation (the bitmap is read and written only under the lock); the
//! reserve itself never calls malloc; the thread-local marks are
//! const-initialised `Cell`s without destructors, so reading them never
//! allocates and works during thread teardown.
//!
//! What it cannot do (stated for C users in docs/C_API.md): a request above
//! [`RESERVE_MAX_REQUEST`] that is not fallible, or one that arrives when
//! the reserve is used up, still ends in Rust's abort; allocations made on
//! pool worker threads outside any C call draw on the same reserve but no
//! call undoes them; memory a host's own callback allocates is the host's.
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::{Error, Result};

/// Size of the emergency reserve.
pub const RESERVE_BYTES: usize = 256 * 1024;
/// Largest request the reserve serves.
pub const RESERVE_MAX_REQUEST: usize = 16 * 1024;
/// Unit of the reserve's bookkeeping (and the largest alignment it serves
/// without skipping granules).
pub const GRANULE: usize = 128;
/// Largest alignment the reserve serves (the arena's own alignment).
const ARENA_ALIGN: usize = 4096;
const GRANULES: usize = RESERVE_BYTES / GRANULE;
const WORDS: usize = GRANULES / 64;

/// The status message of a call refused for lack of memory.
pub const OUT_OF_MEMORY: &str = "out of memory";

thread_local! {
    /// Set when the reserve served a request of this thread; cleared when a
    /// C call starts ([`CallScope`]).
    static SHORT: Cell<bool> = const { Cell::new(false) };
    /// Depth of [`fallible`] scopes on this thread: inside one, a failed
    /// request returns NULL instead of using the reserve.
    static FALLIBLE: Cell<u32> = const { Cell::new(0) };
}

/// A fixed arena with a first-fit granule bitmap; see the module doc.
pub struct Arena {
    lock: AtomicBool,
    used: UnsafeCell<[u64; WORDS]>,
    bytes: UnsafeCell<Bytes>,
}

#[repr(C, align(4096))]
struct Bytes([u8; RESERVE_BYTES]);

const _: () = assert!(std::mem::align_of::<Bytes>() == ARENA_ALIGN);
const _: () = assert!(RESERVE_BYTES % (64 * GRANULE) == 0);

// SAFETY: the bitmap is only touched under `lock`; the bytes of a granule
// run are handed to exactly one allocation at a time (the invariant above),
// which its owner may send and share like any heap memory.
unsafe impl Sync for Arena {}

impl Arena {
    /// An empty arena.
    pub const fn new() -> Self {
        Arena {
            lock: AtomicBool::new(false),
            used: UnsafeCell::new([0; WORDS]),
            bytes: UnsafeCell::new(Bytes([0; RESERVE_BYTES])),
        }
    }

    fn base(&self) -> *mut u8 {
        self.bytes.get().cast::<u8>()
    }

    /// Whether `ptr` points into this arena.
    pub fn contains(&self, ptr: *const u8) -> bool {
        let base = self.base() as usize;
        (base..base + RESERVE_BYTES).contains(&(ptr as usize))
    }

    fn with_bitmap<R>(&self, f: impl FnOnce(&mut [u64; WORDS]) -> R) -> R {
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        // SAFETY: the lock is held, so this is the only reference.
        let r = f(unsafe { &mut *self.used.get() });
        self.lock.store(false, Ordering::Release);
        r
    }

    /// A run of granules for `layout`, or NULL if none is free (or the
    /// request is too large or too strictly aligned).
    pub fn take(&self, layout: Layout) -> *mut u8 {
        if layout.size() > RESERVE_MAX_REQUEST || layout.align() > ARENA_ALIGN {
            return std::ptr::null_mut();
        }
        let need = layout.size().max(1).div_ceil(GRANULE);
        let step = (layout.align() / GRANULE).max(1);
        let found = self.with_bitmap(|used| {
            let is_used = |g: usize| used[g / 64] & (1 << (g % 64)) != 0;
            let mut start = 0;
            while start + need <= GRANULES {
                match (start..start + need).find(|&g| is_used(g)) {
                    None => {
                        for g in start..start + need {
                            used[g / 64] |= 1 << (g % 64);
                        }
                        return Some(start);
                    }
                    // Skip past the used granule, keeping the alignment.
                    Some(g) => start = (g + 1).div_ceil(step) * step,
                }
            }
            None
        });
        match found {
            // SAFETY: start + need <= GRANULES, so the run is inside the arena.
            Some(start) => unsafe { self.base().add(start * GRANULE) },
            None => std::ptr::null_mut(),
        }
    }

    /// Gives back a run taken by [`Arena::take`] with the same layout.
    pub fn give_back(&self, ptr: *mut u8, layout: Layout) {
        let start = (ptr as usize - self.base() as usize) / GRANULE;
        let need = layout.size().max(1).div_ceil(GRANULE);
        self.with_bitmap(|used| {
            for g in start..start + need {
                used[g / 64] &= !(1 << (g % 64));
            }
        });
    }

    /// Granules in use (for tests and the hardening report).
    pub fn granules_used(&self) -> usize {
        self.with_bitmap(|used| used.iter().map(|w| w.count_ones() as usize).sum())
    }
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

static RESERVE: Arena = Arena::new();

/// The global allocator: the system allocator, with the emergency reserve
/// behind it (module doc).
pub struct Allocator;

impl Allocator {
    /// Serves a request the system refused, if the reserve may and can.
    fn from_reserve(layout: Layout) -> *mut u8 {
        if FALLIBLE.with(Cell::get) > 0 {
            return std::ptr::null_mut();
        }
        let p = RESERVE.take(layout);
        if !p.is_null() {
            SHORT.with(|s| s.set(true));
        }
        p
    }
}

// SAFETY: every pointer handed out is either the system allocator's (and
// goes back to it) or a granule run of RESERVE of at least layout.size()
// bytes at layout.align() (and goes back to it: `contains` tells them
// apart, the arena being a static the system allocator never returns).
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's (GlobalAlloc) contract.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            Self::from_reserve(layout)
        } else {
            p
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's (GlobalAlloc) contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            return p;
        }
        let p = Self::from_reserve(layout);
        if !p.is_null() {
            // SAFETY: the run is at least layout.size() bytes, ours alone.
            unsafe { p.write_bytes(0, layout.size()) };
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if RESERVE.contains(ptr) {
            RESERVE.give_back(ptr, layout);
        } else {
            // SAFETY: a system allocation with this layout (see above).
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !RESERVE.contains(ptr) {
            // SAFETY: a system allocation with this layout; the caller's contract.
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if !p.is_null() {
                return p;
            }
        }
        // SAFETY: the caller guarantees new_size with layout.align() is a
        // valid layout (GlobalAlloc::realloc's contract).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let moved = if RESERVE.contains(ptr) {
            // SAFETY: as for alloc.
            unsafe { self.alloc(new_layout) }
        } else {
            Self::from_reserve(new_layout)
        };
        if !moved.is_null() {
            // SAFETY: both blocks hold at least the smaller size, and are
            // distinct live allocations.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        moved
    }
}

/// Runs `f` with the reserve closed to this thread: an allocation that the
/// system refuses fails (`try_reserve` returns an error) instead of being
/// served from the reserve. For allocations whose failure the code handles.
pub fn fallible<R>(f: impl FnOnce() -> R) -> R {
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            FALLIBLE.with(|d| d.set(d.get() - 1));
        }
    }
    FALLIBLE.with(|d| d.set(d.get() + 1));
    let _depth = Depth;
    f()
}

/// `ErrorKind::NoMemory` with the static [`OUT_OF_MEMORY`] message.
pub fn no_memory() -> Error {
    Error::no_memory(OUT_OF_MEMORY)
}

/// A commit point: `ErrorKind::NoMemory` if the reserve served this thread
/// since the current C call started, so that the call drops what it built
/// instead of keeping reserve memory in a live object.
pub fn check() -> Result<()> {
    if SHORT.with(Cell::get) {
        Err(no_memory())
    } else {
        Ok(())
    }
}

/// Scope of one C call: clears this thread's short mark at the start and
/// merges it back at the end (calls nest when a callback calls leanrt).
pub struct CallScope {
    outer: bool,
}

impl CallScope {
    /// Starts a call.
    pub fn enter() -> Self {
        CallScope {
            outer: SHORT.with(|s| s.replace(false)),
        }
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        let outer = self.outer;
        SHORT.with(|s| s.set(s.get() || outer));
    }
}

/// `Box::new(value)`, failing with `ErrorKind::NoMemory` instead of
/// aborting.
pub fn try_box<T>(value: T) -> Result<Box<T>> {
    try_box_or_back(value).map_err(|_| no_memory())
}

/// `Box::new(value)`, or `value` back when there is no memory for it.
pub fn try_box_or_back<T>(value: T) -> std::result::Result<Box<T>, T> {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        return Ok(Box::new(value));
    }
    // SAFETY: layout has a non-zero size.
    let p = fallible(|| unsafe { std::alloc::alloc(layout) }).cast::<T>();
    if p.is_null() {
        return Err(value);
    }
    // SAFETY: p is a fresh allocation of the global allocator with T's
    // layout, which is what Box<T> owns.
    unsafe {
        p.write(value);
        Ok(Box::from_raw(p))
    }
}

/// An empty `Vec` with room for `n` elements, or `ErrorKind::NoMemory`.
pub fn try_vec<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    fallible(|| v.try_reserve_exact(n)).map_err(|_| no_memory())?;
    Ok(v)
}

/// `s.to_owned()`, or `ErrorKind::NoMemory`.
pub fn try_string(s: &str) -> Result<String> {
    let mut out = String::new();
    fallible(|| out.try_reserve_exact(s.len())).map_err(|_| no_memory())?;
    out.push_str(s);
    Ok(out)
}

/// `items` collected into a `Vec` reserved up front, or
/// `ErrorKind::NoMemory`.
pub fn try_collect<T>(items: impl ExactSizeIterator<Item = T>) -> Result<Vec<T>> {
    let mut v = try_vec(items.len())?;
    v.extend(items);
    Ok(v)
}

/// Granules of the process's reserve in use.
pub fn reserve_in_use() -> usize {
    RESERVE.granules_used()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn arena_serves_first_fit_and_takes_back() {
        let arena = Box::new(Arena::new());
        let a = arena.take(layout(1, 1));
        let b = arena.take(layout(GRANULE + 1, 8));
        assert!(arena.contains(a) && arena.contains(b));
        assert_eq!(b as usize - a as usize, GRANULE, "first fit after a");
        assert_eq!(arena.granules_used(), 3);
        arena.give_back(a, layout(1, 1));
        // The freed first granule is reused by a request that fits it.
        assert_eq!(arena.take(layout(GRANULE, 16)), a);
        // Alignment above a granule skips to an aligned start.
        let c = arena.take(layout(10, 1024));
        assert_eq!(c as usize % 1024, 0);
        assert!(arena.take(layout(RESERVE_MAX_REQUEST + 1, 8)).is_null());
        assert!(arena.take(layout(8, 8192)).is_null());
    }

    #[test]
    fn arena_runs_out_and_recovers() {
        let arena = Box::new(Arena::new());
        let big = layout(RESERVE_MAX_REQUEST, 8);
        let runs: Vec<_> = (0..RESERVE_BYTES / RESERVE_MAX_REQUEST)
            .map(|_| arena.take(big))
            .collect();
        assert!(runs.iter().all(|p| !p.is_null()));
        assert!(arena.take(layout(1, 1)).is_null(), "exhausted");
        arena.give_back(runs[3], big);
        assert_eq!(arena.take(big), runs[3]);
    }

    #[test]
    fn marks_nest_and_check_refuses_while_short() {
        let outer = CallScope::enter();
        assert!(check().is_ok());
        {
            let _inner = CallScope::enter();
            SHORT.with(|s| s.set(true));
            assert_eq!(check().unwrap_err().kind(), crate::ErrorKind::NoMemory);
        }
        // The inner call's shortage is the outer call's too.
        assert!(check().is_err());
        drop(outer);
        SHORT.with(|s| s.set(false));
        assert!(check().is_ok());
    }

    #[test]
    fn fallible_helpers_report_no_memory() {
        let e = try_vec::<u64>(usize::MAX / 4).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::NoMemory);
        assert_eq!(e.message(), OUT_OF_MEMORY);
        assert_eq!(*try_box(7u32).unwrap(), 7);
        assert_eq!(try_string("abc").unwrap(), "abc");
        assert_eq!(try_collect([1, 2, 3].into_iter()).unwrap(), vec![1, 2, 3]);
        assert_eq!(FALLIBLE.with(Cell::get), 0);
    }
}
