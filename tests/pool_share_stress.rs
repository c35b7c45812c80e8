//! The process-wide CPU share (`src/pool/engine/budget.rs`) with real
//! threads: several request threads at once on one shared pool and on a
//! pool each, more callers than CPUs, loops nested in loop bodies across
//! pools, and loop bodies that panic. Every loop must run each index once,
//! nobody may hang (a watchdog exits with code 3), and once every caller
//! is done the share must be empty again (each claim released, on unwind
//! too). One test in this binary: the share is process-wide.
use leanrt::pool::{self, PoolOptions, ThreadPool};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CALLERS: usize = 6;
const LOOPS: usize = 3_000;
/// Longest time without progress before the watchdog fails the test.
const STALL: Duration = Duration::from_secs(60);

fn pool(config: &str) -> ThreadPool {
    let mut o = PoolOptions::default();
    o.set_num_threads(3).unwrap();
    o.set_spin_duration_us(2).unwrap();
    if !config.is_empty() {
        let (k, v) = config.split_once('=').unwrap();
        o.set_config(k, v).unwrap();
    }
    ThreadPool::create(&o).unwrap().unwrap()
}

/// One caller's requests on `p`: plain loops, a loop nested on `inner`,
/// and now and then a loop whose body panics.
fn requests(p: &ThreadPool, inner: &ThreadPool, progress: &AtomicU64) {
    for i in 0..LOOPS {
        let sum = AtomicUsize::new(0);
        pool::try_parallel_for(Some(p), 16, 50_000.0, &|a, b| {
            for j in a..b {
                sum.fetch_add(j as usize + 1, Ordering::Relaxed);
            }
        });
        assert_eq!(sum.load(Ordering::Relaxed), 16 * 17 / 2);
        if i % 8 == 0 {
            let nested = AtomicUsize::new(0);
            pool::try_simple_parallel_for(Some(p), 4, &|_| {
                pool::try_simple_parallel_for(Some(inner), 3, &|_| {
                    nested.fetch_add(1, Ordering::Relaxed);
                });
            });
            assert_eq!(nested.load(Ordering::Relaxed), 12);
        }
        if i % 64 == 0 {
            let r = catch_unwind(AssertUnwindSafe(|| {
                pool::try_simple_parallel_for(Some(p), 4, &|j| {
                    if j == 3 {
                        panic!("a loop body that panics");
                    }
                });
            }));
            assert!(r.is_err(), "the body's panic reaches the caller");
        }
        progress.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn many_callers_shared_and_own_pools_nested_and_panicking() {
    let progress = Arc::new(AtomicU64::new(0));
    {
        let progress = progress.clone();
        std::thread::spawn(move || {
            let (mut last, mut since) = (u64::MAX, Instant::now());
            loop {
                std::thread::sleep(Duration::from_millis(200));
                let now = progress.load(Ordering::Relaxed);
                if now != last {
                    (last, since) = (now, Instant::now());
                } else if since.elapsed() > STALL {
                    eprintln!("watchdog: no progress for {STALL:?} at {now} loops: hang");
                    std::process::exit(3);
                }
            }
        });
    }
    let shared = Arc::new(pool(""));
    // A pool that does not take part, beside those that do.
    let outside = Arc::new(pool("leanrt.intra_op.cpu_budget=0"));
    let threads: Vec<_> = (0..CALLERS)
        .map(|c| {
            let (shared, outside, progress) = (shared.clone(), outside.clone(), progress.clone());
            std::thread::spawn(move || {
                let own = pool("");
                match c % 3 {
                    0 => requests(&shared, &own, &progress),
                    1 => requests(&own, &shared, &progress),
                    _ => requests(&outside, &own, &progress),
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        pool::cpu_share_counts(),
        (0, 0),
        "every caller and helper left the CPU share"
    );
}
