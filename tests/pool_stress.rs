//! The lost wake-up that once deadlocked ONNX Runtime's pool at low spin
//! counts shows up when producers and sleepers interleave tightly: here the
//! whole process is pinned to one CPU, workers spin for only 1 µs, and the
//! caller runs 100000 small loops and Schedule'd tasks. A watchdog fails
//! the test (exit code 3) if it stops making progress.
use leanrt::pool::{self, affinity, PoolOptions, ThreadPool};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LOOPS: usize = 100_000;
/// Longest time without progress before the watchdog fails the test.
const STALL: Duration = Duration::from_secs(60);

#[test]
fn pinned_one_cpu_tiny_spin_many_small_loops() {
    let cpu = affinity::allowed_cpus()[0];
    assert!(affinity::pin_current_thread(&[cpu]));
    let progress = Arc::new(AtomicU64::new(0));
    {
        let progress = progress.clone();
        std::thread::spawn(move || {
            let mut last = u64::MAX;
            let mut since = Instant::now();
            loop {
                std::thread::sleep(Duration::from_millis(200));
                let now = progress.load(Ordering::Relaxed);
                if now == u64::MAX {
                    return;
                }
                if now != last {
                    last = now;
                    since = Instant::now();
                } else if since.elapsed() > STALL {
                    eprintln!(
                        "watchdog: no progress for {STALL:?} at loop {now}: hang (lost wake-up?)"
                    );
                    std::process::exit(3);
                }
            }
        });
    }
    for (us, backoff) in [(1, 1), (1, 4)] {
        let mut o = PoolOptions::default();
        o.set_num_threads(3).unwrap();
        o.set_spin_duration_us(us).unwrap();
        o.set_spin_backoff_max(backoff).unwrap();
        let p = ThreadPool::create(&o).unwrap().unwrap();
        let sum = AtomicUsize::new(0);
        let tasks = Arc::new(AtomicUsize::new(0));
        let loops = if backoff == 1 { LOOPS } else { LOOPS / 10 };
        for i in 0..loops {
            pool::try_simple_parallel_for(Some(&p), 3, &|j| {
                sum.fetch_add(j as usize + 1, Ordering::Relaxed);
            });
            if i % 16 == 0 {
                let t = tasks.clone();
                p.schedule(Box::new(move || {
                    t.fetch_add(1, Ordering::Relaxed);
                }));
            }
            progress.fetch_add(1, Ordering::Relaxed);
        }
        assert_eq!(sum.load(Ordering::Relaxed), loops * 6);
        drop(p);
        assert_eq!(tasks.load(Ordering::Relaxed), loops.div_ceil(16));
    }
    progress.store(u64::MAX, Ordering::Relaxed);
}
