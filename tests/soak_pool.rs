//! Soak test for the thread pool, through the C ABI.
//!
//! For `LEANRT_SOAK_SECS` seconds (default 4: the CI version; the long
//! version is `scripts/soak.sh [seconds]`), on one shared pool:
//! * `CALLERS` threads run random loops concurrently (TryParallelFor with
//!   random costs, TrySimpleParallelFor, TryBatchParallelFor,
//!   KernelContext_ParallelFor), some nested from inside a worker, some in
//!   runs of up to 20 inside a parallel section, each checked index by
//!   index (every index exactly once);
//! * a storm thread schedules bursts of tasks (counted);
//! * a toggler disables and enables spinning at random moments;
//! * a churn thread creates small pools (some with custom thread
//!   functions), runs loops and schedules on them, and destroys them.
//!
//! Then: every scheduled task ran (no lost task), the watchdog saw no hang,
//! the thread count is back to where it was, and resident memory did not
//! grow between the first and the last part of the run (beyond a small
//! allowance for allocator caches).
mod emulation;
mod fuzz_common;

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuzz_common::*;
use leanrt::ffi::pool as ffi;

const CALLERS: usize = 3;

/// A raw pointer shared with the soak threads.
struct Shared<T>(*mut T);
impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Shared<T> {}
// SAFETY: the pool is Send + Sync (contract); the pointer stays valid until
// every soak thread has been joined.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

struct LoopCtx {
    hits: Vec<AtomicU32>,
    bad: AtomicU64,
    nest: *mut ffi::lrt_pool,
}

fn loop_ctx<'a>(ctx: *mut c_void) -> &'a LoopCtx {
    // SAFETY: ctx is a LoopCtx that outlives the loop that uses it.
    unsafe { &*(ctx as *const LoopCtx) }
}

impl LoopCtx {
    fn new(n: usize, nest: *mut ffi::lrt_pool) -> Self {
        LoopCtx {
            hits: (0..n).map(|_| AtomicU32::new(0)).collect(),
            bad: AtomicU64::new(0),
            nest,
        }
    }
    fn hit(&self, i: isize) {
        match usize::try_from(i).ok().and_then(|i| self.hits.get(i)) {
            Some(h) => {
                h.fetch_add(1, Ordering::Relaxed);
            }
            None => {
                self.bad.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    fn check(&self, what: &str) {
        assert_eq!(
            self.bad.load(Ordering::Relaxed),
            0,
            "{what}: index out of range"
        );
        for (i, h) in self.hits.iter().enumerate() {
            let n = h.load(Ordering::Relaxed);
            assert_eq!(
                n, 1,
                "{what}: index {i} ran {n} times (lost or duplicated work)"
            );
        }
    }
}

unsafe extern "C" fn range_cb(ctx: *mut c_void, first: isize, last: isize) {
    let c = loop_ctx(ctx);
    for i in first..last {
        c.hit(i);
    }
    if first == 0 && !c.nest.is_null() {
        let inner = LoopCtx::new(16, null_mut());
        // SAFETY: the pool outlives the outer loop; inner outlives this call.
        unsafe {
            ffi::lrt_pool_try_parallel_for(
                c.nest,
                16,
                5e4,
                Some(range_cb),
                &inner as *const LoopCtx as *mut c_void,
            )
        };
        inner.check("nested loop");
    }
}

unsafe extern "C" fn index_cb(ctx: *mut c_void, i: isize) {
    loop_ctx(ctx).hit(i);
}

unsafe extern "C" fn kernel_cb(ctx: *mut c_void, i: usize) {
    loop_ctx(ctx).hit(i as isize);
}

unsafe extern "C" fn task_cb(ctx: *mut c_void) {
    // SAFETY: ctx is an AtomicU64 that outlives the pool the task runs on.
    unsafe { &*(ctx as *const AtomicU64) }.fetch_add(1, Ordering::Relaxed);
}

/// One random loop on `pool`, checked.
fn one_loop(rng: &mut Rng, pool: *mut ffi::lrt_pool) -> u64 {
    let total = match rng.below(4) {
        0 => rng.below(8) as usize,
        1 => rng.below(100) as usize,
        _ => rng.below(3000) as usize,
    };
    let nest = if rng.chance(1, 8) { pool } else { null_mut() };
    let c = LoopCtx::new(total, nest);
    let ctx = &c as *const LoopCtx as *mut c_void;
    // SAFETY: pool live (or NULL); ctx outlives the call.
    unsafe {
        match rng.below(5) {
            0 => ffi::lrt_pool_try_parallel_for(
                pool,
                total as isize,
                rng.below(200_000) as f64,
                Some(range_cb),
                ctx,
            ),
            1 => {
                let cost = ffi::lrt_tensor_op_cost {
                    bytes_loaded: rng.below(1000) as f64,
                    bytes_stored: rng.below(1000) as f64,
                    compute_cycles: rng.below(100_000) as f64,
                };
                ffi::lrt_pool_try_parallel_for_cost(
                    pool,
                    total as isize,
                    &cost,
                    Some(range_cb),
                    ctx,
                )
            }
            2 => ffi::lrt_pool_try_simple_parallel_for(pool, total as isize, Some(index_cb), ctx),
            3 => ffi::lrt_pool_try_batch_parallel_for(
                pool,
                total as isize,
                Some(index_cb),
                ctx,
                rng.range_i64(-1, 9) as isize,
            ),
            _ => {
                let st = ffi::lrt_kernel_parallel_for(
                    pool,
                    Some(kernel_cb),
                    total,
                    rng.below(9) as usize,
                    ctx,
                ) as i32;
                assert_eq!(st, 0, "kernel_parallel_for: {}", last_error());
            }
        }
    }
    c.check("soak loop");
    total as u64
}

#[path = "pool_support/custom_threads.rs"]
mod custom_threads;
use custom_threads::{
    create as custom_create, join as custom_join, CREATES as CUSTOM_CREATES, JOINS as CUSTOM_JOINS,
};

fn make_pool(threads: i32, spin_us: i32, custom: bool) -> *mut ffi::lrt_pool {
    let mut o: *mut ffi::lrt_pool_options = null_mut();
    let mut p = null_mut();
    // SAFETY: valid out pointers; live handles.
    unsafe {
        assert_eq!(ffi::lrt_pool_options_create(&mut o) as i32, 0);
        assert_eq!(ffi::lrt_pool_options_set_num_threads(o, threads) as i32, 0);
        assert_eq!(
            ffi::lrt_pool_options_set_spin_duration_us(o, spin_us) as i32,
            0
        );
        if custom {
            assert_eq!(
                ffi::lrt_pool_options_set_custom_thread_fns(
                    o,
                    Some(custom_create),
                    null_mut(),
                    Some(custom_join)
                ) as i32,
                0
            );
        }
        assert_eq!(
            ffi::lrt_pool_create(o, &mut p) as i32,
            0,
            "pool_create: {}",
            last_error()
        );
        ffi::lrt_pool_options_destroy(o);
    }
    p
}

#[test]
fn soak_pool_c_abi() {
    let secs = env_u64("LEANRT_SOAK_SECS").unwrap_or(4);
    let seed = fuzz_seed("soak_pool_c_abi", 0x50a6);
    let _dog = Watchdog::new("soak_pool_c_abi", Duration::from_secs(secs * 2 + 60));
    let base = proc_status();
    let pool = Shared(make_pool(4, 100, false));
    let stop = Arc::new(AtomicBool::new(false));
    let loops = Arc::new(AtomicU64::new(0));
    let indices = Arc::new(AtomicU64::new(0));
    let scheduled = Arc::new(AtomicU64::new(0));
    let ran = Arc::new(AtomicU64::new(0));
    let churned = Arc::new(AtomicU64::new(0));
    let toggles = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for t in 0..CALLERS {
        let (stop, loops, indices) = (stop.clone(), loops.clone(), indices.clone());
        handles.push(std::thread::spawn(move || {
            let pool = pool;
            let mut rng = Rng::new(seed ^ ((t as u64 + 1) * 0x1234_5678));
            while !stop.load(Ordering::Relaxed) {
                // One loop, or a run of loops inside a parallel section.
                let mut section = null_mut();
                let run = if rng.chance(1, 4) {
                    // SAFETY: live pool; `section` is writable.
                    let st = unsafe { ffi::lrt_pool_section_begin(pool.0, &mut section) };
                    assert_eq!(st, leanrt::ffi::lrt_status::LRT_OK, "section_begin");
                    1 + rng.below(20)
                } else {
                    1
                };
                for _ in 0..run {
                    indices.fetch_add(one_loop(&mut rng, pool.0), Ordering::Relaxed);
                    loops.fetch_add(1, Ordering::Relaxed);
                }
                // SAFETY: NULL or the section this thread began.
                unsafe { ffi::lrt_pool_section_end(section) };
            }
        }));
    }
    {
        // Schedule storms: bursts, then a pause.
        let (stop, scheduled, ran) = (stop.clone(), scheduled.clone(), ran.clone());
        handles.push(std::thread::spawn(move || {
            let pool = pool;
            let mut rng = Rng::new(seed ^ 0x5707);
            while !stop.load(Ordering::Relaxed) {
                let burst = rng.below(2000);
                for _ in 0..burst {
                    // SAFETY: live pool; ran outlives the pool (joined below).
                    unsafe {
                        ffi::lrt_pool_schedule(
                            pool.0,
                            Some(task_cb),
                            Arc::as_ptr(&ran) as *mut c_void,
                        )
                    };
                }
                scheduled.fetch_add(burst, Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(rng.below(3000)));
            }
        }));
    }
    {
        // Spinning disabled and enabled under load.
        let (stop, toggles) = (stop.clone(), toggles.clone());
        handles.push(std::thread::spawn(move || {
            let pool = pool;
            let mut rng = Rng::new(seed ^ 0x7066);
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: live pool.
                unsafe {
                    if rng.chance(1, 2) {
                        ffi::lrt_pool_disable_spinning(pool.0)
                    } else {
                        ffi::lrt_pool_enable_spinning(pool.0)
                    }
                }
                toggles.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(rng.below(2000)));
            }
        }));
    }
    {
        // Pools created and destroyed under load.
        let (stop, churned) = (stop.clone(), churned.clone());
        handles.push(std::thread::spawn(move || {
            let mut rng = Rng::new(seed ^ 0xc4u64);
            while !stop.load(Ordering::Relaxed) {
                let p = make_pool(
                    rng.range_i64(2, 3) as i32,
                    *rng.pick(&[0, 10, 100]),
                    rng.chance(1, 3),
                );
                let ran = AtomicU64::new(0);
                let n = rng.below(200);
                for _ in 0..n {
                    // SAFETY: live pool; ran outlives it.
                    unsafe {
                        ffi::lrt_pool_schedule(
                            p,
                            Some(task_cb),
                            &ran as *const AtomicU64 as *mut c_void,
                        )
                    };
                }
                for _ in 0..rng.below(4) {
                    one_loop(&mut rng, p);
                }
                // SAFETY: live pool, not used again.
                unsafe { ffi::lrt_pool_destroy(p) };
                assert_eq!(
                    ran.load(Ordering::SeqCst),
                    n,
                    "churned pool lost scheduled tasks"
                );
                churned.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }

    // Resident memory: sampled after a warm-up and at the end.
    let start = Instant::now();
    let warm = Duration::from_secs(secs)
        .mul_f64(0.25)
        .max(Duration::from_millis(500));
    std::thread::sleep(warm);
    let early = proc_status();
    let mut peak_threads = early.threads;
    while start.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_millis(100));
        peak_threads = peak_threads.max(proc_status().threads);
    }
    let late = proc_status();
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("soak thread panicked");
    }
    // SAFETY: every user has been joined; not used again.
    unsafe { ffi::lrt_pool_destroy(pool.0) };
    let (sched, done) = (scheduled.load(Ordering::SeqCst), ran.load(Ordering::SeqCst));
    assert_eq!(
        done, sched,
        "scheduled tasks lost: {sched} scheduled, {done} ran"
    );
    assert_eq!(
        CUSTOM_CREATES.load(Ordering::SeqCst),
        CUSTOM_JOINS.load(Ordering::SeqCst)
    );
    let threads = wait_threads_at_most(base.threads, Duration::from_secs(5));
    assert!(
        threads <= base.threads,
        "threads not joined: {} before, {threads} after",
        base.threads
    );
    // 1 MiB per minute of soak plus 4 MiB for allocator caches and stacks.
    let allowance = 4096 + 1024 * secs / 60;
    assert!(
        late.rss_kib <= early.rss_kib + allowance
            || !emulation::counters_meaningful("soak_pool_c_abi", "resident-memory"),
        "resident memory grew: {} KiB after warm-up, {} KiB at the end",
        early.rss_kib,
        late.rss_kib
    );
    eprintln!(
        "soak_pool_c_abi: {secs} s: {} loops ({} indices checked), {sched} tasks scheduled and run, {} pools churned, {} spin toggles; threads {} -> peak {peak_threads} -> {threads}; RSS {} KiB after warm-up, {} KiB at end",
        loops.load(Ordering::SeqCst),
        indices.load(Ordering::SeqCst),
        churned.load(Ordering::SeqCst),
        toggles.load(Ordering::SeqCst),
        base.threads,
        early.rss_kib,
        late.rss_kib
    );
    assert!(loops.load(Ordering::SeqCst) > 0 && sched > 0 && churned.load(Ordering::SeqCst) > 0);
}
