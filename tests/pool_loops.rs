//! Thread pool semantics, modelled on ONNX Runtime's threadpool tests:
//! every index exactly once for every loop kind, pool size and total;
//! batches; concurrent callers; loops from scheduled tasks; nesting;
//! Schedule bursts; create/destroy; every spin configuration; custom
//! thread functions; workers asleep after a burst.
use leanrt::pool::abi::{
    LRT_POOL_KEY_FORCE_SPINNING_STOP, LRT_POOL_KEY_SPIN_BACKOFF_MAX, LRT_POOL_KEY_SPIN_DURATION_US,
};
use leanrt::pool::{
    self, try_batch_parallel_for, try_parallel_for, try_parallel_for_cost, try_simple_parallel_for,
    PoolOptions, TensorOpCost, ThreadPool,
};
mod pool_support;
use pool_support::Hits;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOTALS: [isize; 5] = [0, 1, 50, 81, 1_000_000];
const THREADS: [i32; 4] = [1, 2, 4, 8];

fn pools() -> Vec<(String, Option<ThreadPool>)> {
    let mut v = vec![("NULL".to_owned(), None)];
    for t in THREADS {
        v.push((format!("{t} threads"), pool_support::pool(t)));
    }
    v
}

#[test]
fn every_index_exactly_once_for_every_loop_kind() {
    for (name, p) in pools() {
        let p = p.as_ref();
        for total in TOTALS {
            for cost in [0.0, 1.0, 1e4, 1e7] {
                let h = Hits::new(total);
                try_parallel_for(p, total, cost, &|a, b| h.range(a, b));
                h.assert_once(&format!("TryParallelFor {name} total {total} cost {cost}"));
            }
            let h = Hits::new(total);
            let c = TensorOpCost {
                bytes_loaded: 64.0,
                bytes_stored: 64.0,
                compute_cycles: 1000.0,
            };
            try_parallel_for_cost(p, total, &c, &|a, b| h.range(a, b));
            h.assert_once(&format!("TryParallelFor(cost) {name} total {total}"));
            let h = Hits::new(total);
            try_simple_parallel_for(p, total, &|i| h.hit(i));
            h.assert_once(&format!("TrySimpleParallelFor {name} total {total}"));
            for batches in [0isize, 1, 10, 20, 100] {
                let h = Hits::new(total);
                try_batch_parallel_for(p, total, &|i| h.hit(i), batches);
                h.assert_once(&format!(
                    "TryBatchParallelFor {name} total {total} batches {batches}"
                ));
            }
        }
        // Negative totals call nothing.
        try_parallel_for(p, -5, 1e9, &|_, _| panic!("called"));
        try_simple_parallel_for(p, -1, &|_| panic!("called"));
        try_batch_parallel_for(p, -1, &|_| panic!("called"), 4);
    }
}

/// Fixed blocks as many as Eigen's rule makes, cut evenly: 67 iterations
/// of 1e6 cycles on 2 threads are Eigen's 8 blocks of (at most) 9, here
/// 8 or 9 long, 33 and 34 iterations in the two halves that the caller and
/// the helper start in (Eigen's cut: 9s and a last block of 4).
#[test]
fn fixed_blocks_are_cut_evenly() {
    let p = pool_support::pool(2);
    let blocks = Mutex::new(Vec::new());
    try_parallel_for(p.as_ref(), 67, 1e6, &|a, b| {
        blocks.lock().unwrap().push((a, b))
    });
    let mut v = blocks.into_inner().unwrap();
    v.sort_unstable();
    let lens: Vec<isize> = v.iter().map(|&(a, b)| b - a).collect();
    assert_eq!(v.len(), 8, "{v:?}");
    assert!(lens.iter().all(|&l| l == 8 || l == 9), "{v:?}");
    let first_half: isize = lens[..4].iter().sum();
    assert!((33..=34).contains(&first_half), "{v:?}");
}

#[test]
fn dynamic_block_base_covers_every_index() {
    for base in [1, 4, 16] {
        let mut o = PoolOptions::default();
        o.set_num_threads(4).unwrap();
        o.set_dynamic_block_base(base).unwrap();
        o.set_spin_duration_us(0).unwrap();
        let p = ThreadPool::create(&o).unwrap();
        for total in TOTALS {
            let h = Hits::new(total);
            let blocks = AtomicUsize::new(0);
            try_parallel_for(p.as_ref(), total, 1e7, &|a, b| {
                blocks.fetch_add(1, Ordering::Relaxed);
                h.range(a, b)
            });
            h.assert_once(&format!("dynamic base {base} total {total}"));
            if total == 1_000_000 {
                // Decreasing blocks: more than one block, fewer than one per index.
                let n = blocks.load(Ordering::Relaxed);
                assert!(n > 1 && n < 100_000, "base {base}: {n} blocks");
            }
        }
    }
}

#[test]
fn partition_is_orts() {
    // 10 items in 3 batches: sizes 4, 3, 3, each batch a contiguous run.
    let p = pool_support::pool(4);
    let seen = Mutex::new(Vec::new());
    try_batch_parallel_for(p.as_ref(), 10, &|i| seen.lock().unwrap().push(i), 3);
    let mut v = seen.into_inner().unwrap();
    v.sort_unstable();
    assert_eq!(v, (0..10).collect::<Vec<_>>());
    assert_eq!(pool::degree_of_parallelism(p.as_ref()) % 4, 0);
}

#[test]
fn helpers_take_part_and_thread_ids_are_sane() {
    let p = pool_support::helping_pool(4);
    assert_eq!(p.num_threads(), 3);
    assert_eq!(p.current_thread_id(), -1);
    let ids = Mutex::new(HashSet::new());
    try_simple_parallel_for(Some(&p), 64, &|_| {
        ids.lock().unwrap().insert(p.current_thread_id());
        std::thread::sleep(Duration::from_millis(2));
    });
    let ids = ids.into_inner().unwrap();
    assert!(ids.contains(&-1), "the caller takes part: {ids:?}");
    assert!(ids.len() > 1, "workers helped: {ids:?}");
    assert!(ids.iter().all(|&i| (-1..3).contains(&i)), "{ids:?}");
    let s = p.stats();
    assert!(s.tasks_run >= 1, "{s:?}");
}

#[test]
fn concurrent_callers() {
    let p = pool_support::pool(4).unwrap();
    std::thread::scope(|s| {
        for t in 0..6 {
            let p = &p;
            s.spawn(move || {
                for round in 0..40 {
                    let total = 1000 + t * 37 + round;
                    let h = Hits::new(total);
                    try_parallel_for(Some(p), total, 1e6, &|a, b| h.range(a, b));
                    h.assert_once("concurrent TryParallelFor");
                    let h = Hits::new(total);
                    try_simple_parallel_for(Some(p), total, &|i| h.hit(i));
                    h.assert_once("concurrent TrySimpleParallelFor");
                }
            });
        }
    });
}

#[test]
fn tiny_loops_from_several_threads_with_nesting() {
    // Many tiny loops (the section slot's common case) from three threads
    // at once, some nesting another loop: loops that do not get the slot
    // take the Help-job path, and the join must not miss a helper's exit
    // with or without spinning.
    for spin in [0, 1, 50] {
        let mut o = PoolOptions::default();
        o.set_num_threads(4).unwrap();
        o.set_spin_duration_us(spin).unwrap();
        let p = ThreadPool::create(&o).unwrap().unwrap();
        std::thread::scope(|s| {
            for t in 0..3isize {
                let p = &p;
                s.spawn(move || {
                    for round in 0..4000isize {
                        let total = 2 + (round + t) % 4;
                        let nest = round % 7 == 0;
                        let h = Hits::new(total * 3);
                        try_simple_parallel_for(Some(p), total, &|i| {
                            if nest {
                                try_simple_parallel_for(Some(p), 3, &|j| h.hit(i * 3 + j));
                            } else {
                                (0..3).for_each(|j| h.hit(i * 3 + j));
                            }
                        });
                        h.assert_once("tiny loop");
                    }
                });
            }
        });
    }
}

#[test]
fn nested_loops_do_not_deadlock() {
    for threads in [2, 4, 8] {
        let p = pool_support::pool(threads).unwrap();
        let outer = 16isize;
        let inner = 500isize;
        let h = Hits::new(outer * inner);
        try_simple_parallel_for(Some(&p), outer, &|o| {
            try_parallel_for(Some(&p), inner, 1e6, &|a, b| {
                (a..b).for_each(|i| h.hit(o * inner + i));
            });
        });
        h.assert_once("nested");
        // Three levels deep, batches inside simple inside cost loops.
        let h = Hits::new(8 * 8 * 8);
        try_parallel_for(Some(&p), 8, 1e9, &|a, b| {
            for x in a..b {
                try_simple_parallel_for(Some(&p), 8, &|y| {
                    try_batch_parallel_for(Some(&p), 8, &|z| h.hit(x * 64 + y * 8 + z), 3);
                });
            }
        });
        h.assert_once("nested x3");
    }
}

#[test]
fn loops_from_scheduled_tasks() {
    let p = Arc::new(pool_support::pool(4).unwrap());
    let done = Arc::new(AtomicUsize::new(0));
    for _ in 0..20 {
        let (p2, done) = (p.clone(), done.clone());
        p.schedule(Box::new(move || {
            let h = Hits::new(2000);
            try_parallel_for(Some(&p2), 2000, 1e6, &|a, b| h.range(a, b));
            h.assert_once("loop in task");
            let h = Hits::new(100);
            try_batch_parallel_for(Some(&p2), 100, &|i| h.hit(i), 7);
            h.assert_once("batch in task");
            done.fetch_add(1, Ordering::SeqCst);
        }));
    }
    let t = Instant::now();
    while done.load(Ordering::SeqCst) < 20 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "tasks did not finish: {} {:?}",
            done.load(Ordering::SeqCst),
            p.stats()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // A task-local panic is caught; the pool keeps working.
    p.schedule(Box::new(|| panic!("task panics on purpose")));
    let h = Hits::new(100);
    try_simple_parallel_for(Some(&p), 100, &|i| h.hit(i));
    h.assert_once("after task panic");
}

#[test]
fn schedule_bursts_run_every_task_by_destroy() {
    for burst in [0usize, 1, 100, 4096, 65536] {
        for threads in [1, 2, 4] {
            let ran = Arc::new(AtomicUsize::new(0));
            let p = pool_support::pool(threads);
            for _ in 0..burst {
                let ran = ran.clone();
                pool::schedule(
                    p.as_ref(),
                    Box::new(move || {
                        ran.fetch_add(1, Ordering::Relaxed);
                    }),
                );
            }
            drop(p);
            assert_eq!(
                ran.load(Ordering::Relaxed),
                burst,
                "outside burst {burst} threads {threads}"
            );
        }
        // From inside the pool: a task schedules the burst (its own queue
        // fills up, the rest runs inline).
        let ran = Arc::new(AtomicUsize::new(0));
        let mut p = Arc::new(pool_support::pool(4).unwrap());
        let started = Arc::new(AtomicBool::new(false));
        {
            let (ran, p2, started) = (ran.clone(), p.clone(), started.clone());
            p.schedule(Box::new(move || {
                for _ in 0..burst {
                    let ran = ran.clone();
                    p2.schedule(Box::new(move || {
                        ran.fetch_add(1, Ordering::Relaxed);
                    }));
                }
                started.store(true, Ordering::SeqCst);
            }));
        }
        let t = Instant::now();
        while !started.load(Ordering::SeqCst) {
            assert!(t.elapsed() < Duration::from_secs(60));
            std::thread::sleep(Duration::from_millis(1));
        }
        // The task holds a clone of the Arc; wait until it is dropped.
        let p = loop {
            match Arc::try_unwrap(p) {
                Ok(p) => break p,
                Err(back) => {
                    std::thread::sleep(Duration::from_millis(1));
                    p = back;
                }
            }
        };
        drop(p);
        assert_eq!(ran.load(Ordering::Relaxed), burst, "inside burst {burst}");
    }
}

#[test]
fn create_destroy_in_a_loop() {
    for i in 0..200 {
        let p = pool_support::pool(2 + (i % 4)).unwrap();
        if i % 3 == 0 {
            let h = Hits::new(100);
            try_simple_parallel_for(Some(&p), 100, &|j| h.hit(j));
            h.assert_once("create/destroy");
        }
    }
    // Thread count 1 gives no pool (serial).
    assert!(pool_support::pool(1).is_none());
    // Thread count 0 = physical cores.
    let p = ThreadPool::create(&PoolOptions::default()).unwrap();
    let cores = pool::cpu::physical_cores() as i32;
    assert_eq!(p.as_ref().map_or(0, |p| p.num_threads()), cores - 1);
}

#[test]
fn every_spin_configuration_runs_loops() {
    let mut configs: Vec<PoolOptions> = Vec::new();
    for us in [-1, 0, 100, 1000] {
        for backoff in [1, 4, 8, 64] {
            let mut o = PoolOptions::default();
            o.set_spin_duration_us(us).unwrap();
            o.set_spin_backoff_max(backoff).unwrap();
            configs.push(o);
        }
    }
    let mut o = PoolOptions::default();
    o.set_spin_control(0).unwrap();
    configs.push(o);
    let mut o = PoolOptions::default();
    o.set_config(LRT_POOL_KEY_FORCE_SPINNING_STOP, "1").unwrap();
    configs.push(o);
    for mut o in configs {
        o.set_num_threads(3).unwrap();
        let p = ThreadPool::create(&o).unwrap().unwrap();
        for round in 0..5 {
            let h = Hits::new(5000);
            try_parallel_for(Some(&p), 5000, 1e5, &|a, b| h.range(a, b));
            h.assert_once(&format!("{o:?} round {round}"));
            if round == 2 {
                p.disable_spinning();
            }
            if round == 3 {
                p.enable_spinning();
            }
        }
        if o.spin_duration_us() == -1 {
            // Do not let legacy spinners burn the CI box until drop.
            p.disable_spinning();
        }
    }
}

#[test]
fn all_workers_asleep_after_burst_with_1000us_spin() {
    let mut o = PoolOptions::default();
    o.set_num_threads(4).unwrap();
    o.set_config(LRT_POOL_KEY_SPIN_DURATION_US, "1000").unwrap();
    o.set_config(LRT_POOL_KEY_SPIN_BACKOFF_MAX, "8").unwrap();
    let p = ThreadPool::create(&o).unwrap().unwrap();
    for _ in 0..50 {
        let h = Hits::new(10_000);
        try_parallel_for(Some(&p), 10_000, 1e5, &|a, b| h.range(a, b));
    }
    for _ in 0..1000 {
        p.schedule(Box::new(|| {
            std::hint::black_box(0u64);
        }));
    }
    let t = Instant::now();
    loop {
        let s = p.stats();
        if s.workers_asleep == 3 {
            assert!(s.parks >= 3, "{s:?}");
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "workers still awake: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // And they wake up for new work.
    let h = Hits::new(1000);
    try_simple_parallel_for(Some(&p), 1000, &|i| h.hit(i));
    h.assert_once("after sleep");
    let ran = Arc::new(AtomicBool::new(false));
    let r2 = ran.clone();
    p.schedule(Box::new(move || r2.store(true, Ordering::SeqCst)));
    let t = Instant::now();
    while !ran.load(Ordering::SeqCst) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "sleeping worker never woke"
        );
        std::thread::yield_now();
    }
    assert!(p.stats().wakeups >= 1);
}

#[test]
fn disable_spinning_puts_spinners_to_sleep() {
    let mut o = PoolOptions::default();
    o.set_num_threads(3).unwrap();
    o.set_spin_duration_us(leanrt::ffi::pool::LRT_POOL_MAX_SPIN_US)
        .unwrap(); // 10 s spin
    let p = ThreadPool::create(&o).unwrap().unwrap();
    let h = Hits::new(1000);
    try_simple_parallel_for(Some(&p), 1000, &|i| h.hit(i));
    p.disable_spinning();
    let t = Instant::now();
    while p.stats().workers_asleep != 2 {
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", p.stats());
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn panics_in_loop_bodies_reach_the_caller_after_the_loop() {
    let p = pool_support::pool(4).unwrap();
    let ran = AtomicUsize::new(0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        try_simple_parallel_for(Some(&p), 100, &|i| {
            ran.fetch_add(1, Ordering::SeqCst);
            if i == 37 {
                panic!("body 37");
            }
        })
    }));
    assert!(r.is_err());
    // Only the panicking participant stops; the loop finished first.
    let after = ran.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        after,
        ran.load(Ordering::SeqCst),
        "body ran after the loop returned"
    );
    let h = Hits::new(500);
    try_parallel_for(Some(&p), 500, 1e6, &|a, b| h.range(a, b));
    h.assert_once("after panic");
}

/// FTZ and DAZ are x86-64's (`set_denormal_as_zero` is a no-op elsewhere).
#[test]
#[cfg(target_arch = "x86_64")]
fn denormals_flush_to_zero_on_workers() {
    let mut o = PoolOptions::default();
    o.set_num_threads(2).unwrap();
    o.set_denormal_as_zero(true);
    let p = ThreadPool::create(&o).unwrap().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    p.schedule(Box::new(move || {
        let tiny = std::hint::black_box(f32::MIN_POSITIVE);
        tx.send(std::hint::black_box(tiny) * std::hint::black_box(0.25f32))
            .unwrap();
    }));
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 0.0);
    // The caller's own mode is untouched.
    let tiny = std::hint::black_box(f32::MIN_POSITIVE);
    assert!(std::hint::black_box(tiny) * std::hint::black_box(0.25f32) > 0.0);
}

#[test]
fn affinity_pins_workers() {
    let cpus = pool::affinity::allowed_cpus();
    let mut o = PoolOptions::default();
    o.set_num_threads(2).unwrap();
    o.set_affinity(&format!("{}", cpus[0] + 1)).unwrap();
    let p = ThreadPool::create(&o).unwrap().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    p.schedule(Box::new(move || {
        tx.send(pool::affinity::allowed_cpus()).unwrap();
    }));
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        vec![cpus[0]]
    );
    // Entry count must equal threads - 1.
    o.set_num_threads(4).unwrap();
    assert!(ThreadPool::create(&o).is_err());
    // Thread count 0 with an affinity: entries + 1 threads.
    o.set_num_threads(0).unwrap();
    let p = ThreadPool::create(&o).unwrap().unwrap();
    assert_eq!(p.num_threads(), 1);
}

#[test]
fn forced_hybrid_multiplies_dop() {
    let mut o = PoolOptions::default();
    o.set_num_threads(3).unwrap();
    o.set_force_hybrid(true);
    let p = ThreadPool::create(&o).unwrap().unwrap();
    assert_eq!(p.degree_of_parallelism(), 12);
    let h = Hits::new(1000);
    try_batch_parallel_for(Some(&p), 1000, &|i| h.hit(i), 0);
    h.assert_once("hybrid batches");
    assert!(pool::should_parallelize(Some(&p)));
    assert!(!pool::should_parallelize(None));
    assert_eq!(pool::degree_of_parallelism(None), 1);
}

#[path = "pool_support/custom_threads.rs"]
mod custom_threads;

mod custom_thread_fns {
    use super::custom_threads::{create, join, CREATES, JOINS, LAST_OPTIONS};
    use super::*;
    use std::ffi::c_void;

    #[test]
    fn called_n_minus_1_times_and_joined() {
        // Asserts that workers help: outside the process-wide CPU share.
        let mut o = pool_support::helping_options();
        o.set_num_threads(4).unwrap();
        // SAFETY: `create` starts a thread that runs the worker once and
        // returns its handle; `join` joins it; both live for the test.
        unsafe {
            assert!(o
                .set_custom_thread_fns(Some(create), std::ptr::null_mut(), None)
                .is_err());
            o.set_custom_thread_fns(Some(create), 0x1234 as *mut c_void, Some(join))
                .unwrap();
        }
        let p = ThreadPool::create(&o).unwrap().unwrap();
        assert_eq!(CREATES.load(Ordering::SeqCst), 3);
        assert_eq!(LAST_OPTIONS.load(Ordering::SeqCst), 0x1234);
        let ids = Mutex::new(HashSet::new());
        try_simple_parallel_for(Some(&p), 64, &|_| {
            ids.lock().unwrap().insert(p.current_thread_id());
            std::thread::sleep(Duration::from_millis(1));
        });
        assert!(ids.into_inner().unwrap().len() > 1);
        assert_eq!(JOINS.load(Ordering::SeqCst), 0);
        drop(p);
        assert_eq!(JOINS.load(Ordering::SeqCst), 3);
    }
}
