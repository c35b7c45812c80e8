//! Shared pieces of the hardening tests (`tests/fuzz_*.rs`, `tests/fault_*.rs`,
//! `tests/soak_*.rs`): a seeded PRNG, a watchdog that turns a hang into an
//! abort with a message, process counters (threads, resident memory), the
//! thread's last error. (The staging tests' fake device is
//! `tests/staging_support`.)
//!
//! Each test binary includes this file with `mod fuzz_common;` and uses a
//! part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::ffi::{c_char, c_void, CStr};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

// ---------------------------------------------------------------------------
// PRNG and run parameters

/// SplitMix64: small, fast, good enough to drive call sequences, and the
/// same sequence for the same seed on every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, n)`; `n` > 0.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// Uniform in `[lo, hi]`.
    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi as i128 - lo as i128 + 1) as u128;
        (lo as i128 + (self.next_u64() as u128 % span) as i128) as i64
    }
    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
    /// An "interesting" 64-bit integer: boundaries, small values, powers of
    /// two and their neighbours, or anything.
    pub fn edgy_u64(&mut self) -> u64 {
        match self.below(6) {
            0 => *self.pick(&[
                0,
                1,
                2,
                3,
                4,
                63,
                64,
                65,
                i32::MAX as u64,
                i32::MAX as u64 + 1,
                u32::MAX as u64,
                i64::MAX as u64,
                u64::MAX,
                u64::MAX - 1,
            ]),
            1 => self.below(100),
            2 => {
                let p = 1u64 << self.below(64);
                p.wrapping_add(self.range_i64(-1, 1) as u64)
            }
            3 => 1u64 << self.below(64),
            _ => self.next_u64(),
        }
    }
    /// An "interesting" `i32` (C `int`).
    pub fn edgy_i32(&mut self) -> i32 {
        match self.below(5) {
            0 => *self.pick(&[i32::MIN, i32::MIN + 1, -2, -1, 0, 1, 2, 64, 65, i32::MAX]),
            1 => self.range_i64(-4, 100) as i32,
            2 => self.edgy_u64() as i32,
            _ => self.next_u64() as i32,
        }
    }
}

/// An integer environment variable (decimal, or hex with `0x`).
pub fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = if let Some(hex) = v.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else {
        v.parse().ok()
    };
    if parsed.is_none() {
        panic!("{name}={v:?} is not an integer");
    }
    parsed
}

/// The fuzz seed: `LEANRT_FUZZ_SEED` (`random` picks one from the clock),
/// else a fixed default so that CI runs are reproducible. Printed either way.
pub fn fuzz_seed(test: &str, default: u64) -> u64 {
    let seed = match std::env::var("LEANRT_FUZZ_SEED").as_deref() {
        Ok("random") => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(default),
        _ => env_u64("LEANRT_FUZZ_SEED").unwrap_or(default),
    };
    eprintln!("{test}: seed 0x{seed:016x} (rerun with LEANRT_FUZZ_SEED=0x{seed:x})");
    seed
}

/// The iteration count: `LEANRT_FUZZ_ITERS`, else `default` (sized for CI).
pub fn fuzz_iters(default: u64) -> u64 {
    env_u64("LEANRT_FUZZ_ITERS").unwrap_or(default)
}

// ---------------------------------------------------------------------------
// Watchdog

static LAST_STEP: Mutex<String> = Mutex::new(String::new());

/// Records what the test is doing, for the watchdog's message.
pub fn note_step(step: impl FnOnce() -> String) {
    if let Ok(mut s) = LAST_STEP.lock() {
        *s = step();
    }
}

/// Aborts the process with a message if it is not dropped within `limit`:
/// a hang becomes a failure with a reason instead of a stuck CI job.
///
/// Protocol: the watchdog thread waits on a channel with a timeout. Dropping
/// the `Watchdog` drops the sender, which wakes the thread with
/// `Disconnected` and lets it exit; `Timeout` means the guarded code is still
/// running after `limit`, and the thread aborts the whole process.
pub struct Watchdog {
    tx: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    pub fn new(what: &str, limit: Duration) -> Self {
        let (tx, rx) = channel::<()>();
        let what = what.to_owned();
        let thread = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || {
                if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                    let last = LAST_STEP.lock().map(|s| s.clone()).unwrap_or_default();
                    eprintln!(
                        "WATCHDOG: `{what}` still running after {limit:?}: hang, aborting the process \
                         (last step: {last})"
                    );
                    std::process::abort();
                }
            })
            .expect("spawn watchdog");
        Watchdog {
            tx: Some(tx),
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// ---------------------------------------------------------------------------
// Process counters

/// `Threads` and `VmRSS` (KiB) from /proc/self/status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStatus {
    pub threads: u64,
    pub rss_kib: u64,
}

pub fn proc_status() -> ProcStatus {
    let text = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/self/status"))
    };
    ProcStatus {
        threads: field("Threads:"),
        rss_kib: field("VmRSS:"),
    }
}

/// Waits up to `limit` for the thread count to fall to `at_most` (threads
/// that were joined may linger in /proc for a moment); returns the last count.
pub fn wait_threads_at_most(at_most: u64, limit: Duration) -> u64 {
    let start = std::time::Instant::now();
    loop {
        let n = proc_status().threads;
        if n <= at_most || start.elapsed() > limit {
            return n;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

// ---------------------------------------------------------------------------
// The C boundary's last error

/// This thread's `lrt_last_error` message.
pub fn last_error() -> String {
    // SAFETY: NULL with length 0 only asks for the length.
    let n = unsafe { leanrt::ffi::lrt_last_error(std::ptr::null_mut(), 0) };
    let mut buf = vec![0 as c_char; n + 1];
    // SAFETY: buf is valid for n + 1 bytes.
    let m = unsafe { leanrt::ffi::lrt_last_error(buf.as_mut_ptr(), buf.len()) };
    assert_eq!(m, n, "lrt_last_error length changed between two calls");
    // SAFETY: lrt_last_error NUL-terminates within buf.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// Clears this thread's last error (by overwriting it with a marker), so
/// that a following failure can be checked for a fresh message.
pub fn mark_last_error() {
    leanrt::ffi::boundary::set_last_error("hardening", "marker");
}

/// Asserts that the last failure left a message naming `function`.
pub fn assert_error_names(function: &str, context: &str) {
    let msg = last_error();
    assert!(
        msg.starts_with(function) && msg.len() > function.len() + 2,
        "{context}: lrt_last_error is {msg:?}, expected a message from {function}"
    );
}

/// Counting callbacks for the pool's C entry points: `ctx` is an
/// `AtomicU64` that outlives every call.
pub unsafe extern "C" fn count_task(ctx: *mut c_void) {
    // SAFETY: ctx is an AtomicU64 that outlives the pool.
    unsafe { &*(ctx as *const std::sync::atomic::AtomicU64) }
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// See [`count_task`].
pub unsafe extern "C" fn count_index(ctx: *mut c_void, _i: isize) {
    // SAFETY: as count_task.
    unsafe { count_task(ctx) }
}

/// See [`count_task`].
pub unsafe extern "C" fn count_kernel(ctx: *mut c_void, _i: usize) {
    // SAFETY: as count_task.
    unsafe { count_task(ctx) }
}

/// A pool through the C ABI with `threads` threads and a spin budget.
pub fn c_pool(threads: i32, spin_us: i32) -> *mut leanrt::ffi::pool::lrt_pool {
    use leanrt::ffi::pool as ffi;
    let mut o: *mut leanrt::ffi::pool::lrt_pool_options = std::ptr::null_mut();
    let mut p = std::ptr::null_mut();
    // SAFETY: valid out pointers, live handles.
    unsafe {
        assert_eq!(ffi::lrt_pool_options_create(&mut o) as i32, 0);
        assert_eq!(ffi::lrt_pool_options_set_num_threads(o, threads) as i32, 0);
        assert_eq!(
            ffi::lrt_pool_options_set_spin_duration_us(o, spin_us) as i32,
            0
        );
        assert_eq!(ffi::lrt_pool_create(o, &mut p) as i32, 0);
        ffi::lrt_pool_options_destroy(o);
    }
    p
}

// Raw reads and writes at byte offsets (the mirror and the device image are
// plain memory; the staging tests use the contract's offsets, not Rust field
// names).

/// The u64 at `base + off`.
pub fn rd_u64(base: *const u8, off: usize) -> u64 {
    // SAFETY: callers pass a base and offset inside a live image.
    unsafe { base.add(off).cast::<u64>().read_unaligned() }
}
/// The i32 at `base + off`.
pub fn rd_i32(base: *const u8, off: usize) -> i32 {
    // SAFETY: as rd_u64.
    unsafe { base.add(off).cast::<i32>().read_unaligned() }
}
/// Writes the u64 at `base + off`.
pub fn wr_u64(base: *mut u8, off: usize, v: u64) {
    // SAFETY: callers pass a base and offset inside a live, writable image.
    unsafe { base.add(off).cast::<u64>().write_unaligned(v) }
}
/// Writes the i32 at `base + off`.
pub fn wr_i32(base: *mut u8, off: usize, v: i32) {
    // SAFETY: as wr_u64.
    unsafe { base.add(off).cast::<i32>().write_unaligned(v) }
}
