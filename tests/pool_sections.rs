//! Parallel sections, PartitionWork, profiling and worker stack size,
//! through the safe Rust API.
use leanrt::pool::{
    self, partition_work, try_batch_parallel_for, try_parallel_for, try_partition_work,
    try_simple_parallel_for, PoolOptions, ThreadPool,
};
use leanrt::ErrorKind;
mod pool_support;
use pool_support::{pool, Hits};
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

/// Whether this thread has a section open (on any pool): then even the
/// NULL pool's section is refused, as sections do not nest.
fn section_open_here() -> bool {
    pool::begin_section(None).is_err()
}

/// Runs `loops` loops of `total(k)` indices inside one section on `p` (None:
/// the serial NULL pool; the section is opened here unless this thread has
/// one open already), checking every index of every loop exactly once;
/// returns the worker ids that ran blocks.
fn section_loops(
    p: Option<&ThreadPool>,
    loops: usize,
    total: impl Fn(usize) -> isize,
) -> BTreeSet<i32> {
    let ids = Mutex::new(BTreeSet::new());
    let _section = p
        .filter(|_| !section_open_here())
        .map(|p| p.parallel_section().unwrap());
    for k in 0..loops {
        let n = total(k);
        let h = Hits::new(n);
        try_simple_parallel_for(p, n, &|i| {
            h.hit(i);
            if let Some(p) = p {
                let id = p.current_thread_id();
                if id >= 0 {
                    ids.lock().unwrap().insert(id);
                }
            }
        });
        assert!(
            h.once(),
            "loop {k} of {loops}: not every index exactly once"
        );
    }
    ids.into_inner().unwrap()
}

#[test]
fn sections_run_every_index_once_with_0_to_4_threads() {
    for threads in 0..=4 {
        let p = pool(threads);
        for loops in [0usize, 1, 2, 7, 100] {
            section_loops(p.as_ref(), loops, |k| (k as isize * 37) % 200);
        }
    }
}

#[test]
fn a_section_keeps_its_team() {
    // Loops of two indices want one helper each: inside one section the
    // same worker (or none) runs every helper share; the team never grows
    // beyond what one loop wants.
    let p = pool(4).unwrap();
    for _ in 0..20 {
        let ids = section_loops(Some(&p), 100, |_| 2);
        assert!(ids.len() <= 1, "workers of one section: {ids:?}");
    }
    // Loops of up to 3 indices: at most 2 workers over the whole section.
    for _ in 0..20 {
        let ids = section_loops(Some(&p), 100, |k| 2 + (k % 2) as isize);
        assert!(ids.len() <= 2, "workers of one section: {ids:?}");
    }
}

#[test]
fn sections_do_not_nest() {
    let p = pool(3).unwrap();
    let q = pool(2).unwrap();
    let s = p.parallel_section().unwrap();
    assert!(section_open_here());
    let e = p.parallel_section().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::State);
    let e = q.parallel_section().err().unwrap();
    assert_eq!(
        e.kind(),
        ErrorKind::State,
        "one section per thread, any pool"
    );
    // Another thread may open its own.
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let s2 = q.parallel_section().unwrap();
            section_loops(Some(&q), 10, |_| 50);
            drop(s2);
        });
    });
    drop(s);
    assert!(!section_open_here());
    drop(p.parallel_section().unwrap());
}

#[test]
fn loops_from_other_threads_during_a_section_run_correctly() {
    let p = pool(4).unwrap();
    let s = p.parallel_section().unwrap();
    assert!(s.is_attached());
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| section_loops(Some(&p), 50, |k| 10 + k as isize));
        }
        section_loops(Some(&p), 50, |k| 10 + k as isize);
    });
    drop(s);
}

#[test]
fn nested_loops_inside_a_section_loop() {
    let p = pool(4).unwrap();
    let _s = p.parallel_section().unwrap();
    let h = Hits::new(64 * 8);
    try_simple_parallel_for(Some(&p), 8, &|i| {
        try_simple_parallel_for(Some(&p), 64, &|j| h.hit(i * 64 + j));
    });
    assert!(h.once());
}

#[test]
fn a_panic_in_a_section_loop_reaches_the_caller() {
    let p = pool(4).unwrap();
    let s = p.parallel_section().unwrap();
    let r = catch_unwind(AssertUnwindSafe(|| {
        try_simple_parallel_for(Some(&p), 100, &|i| {
            if i == 57 {
                panic!("body failed at 57");
            }
        })
    }));
    let msg = r.unwrap_err();
    assert_eq!(msg.downcast_ref::<&str>(), Some(&"body failed at 57"));
    // The section is still usable.
    section_loops(Some(&p), 10, |_| 100);
    drop(s);
}

#[test]
fn a_section_opened_on_a_worker() {
    let p = Arc::new(pool(4).unwrap());
    let (tx, rx) = mpsc::channel();
    let q = p.clone();
    p.schedule(Box::new(move || {
        let me = q.current_thread_id();
        let s = q.parallel_section().unwrap();
        let attached = s.is_attached();
        // Every index exactly once (checked inside); the leader is a worker.
        section_loops(Some(&q), 20, |_| 40);
        drop(s);
        tx.send((me >= 0, attached)).unwrap();
    }));
    assert_eq!(rx.recv().unwrap(), (true, true));
}

#[test]
fn a_section_left_open_at_pool_drop() {
    let p = pool(3).unwrap();
    let mut handle = p.begin_section().unwrap();
    section_loops(Some(&p), 5, |_| 30);
    drop(p); // ends the section, joins the workers
    handle.end().unwrap(); // nothing left to do
    assert!(!section_open_here());
}

#[test]
fn a_section_handle_ends_only_on_its_thread() {
    let p = pool(3).unwrap();
    let h = Mutex::new(Some(p.begin_section().unwrap()));
    // Moving a handle is not possible in safe Rust (it is bound to its
    // thread); the C API checks the thread instead (c_tests/pool/sections.c).
    h.lock().unwrap().take().unwrap().end().unwrap();
}

#[test]
fn partition_work_matches_ort() {
    assert_eq!(partition_work(0, 3, 10), (0, 4));
    assert_eq!(partition_work(1, 3, 10), (4, 7));
    assert_eq!(partition_work(2, 3, 10), (7, 10));
    assert_eq!(partition_work(4, 5, 3), (3, 3));
    for total in [0isize, 1, 7, 100, 1001] {
        for n in [1isize, 2, 3, 8, 1000] {
            let mut at = 0;
            for i in 0..n {
                let (s, e) = try_partition_work(i, n, total).unwrap();
                assert_eq!(s, at);
                assert!(e - s == total / n || e - s == total / n + 1);
                at = e;
            }
            assert_eq!(at, total);
        }
    }
    for (i, n, t) in [(0, 0, 5), (-1, 3, 5), (3, 3, 5), (0, -2, 5), (0, 3, -1)] {
        let e = try_partition_work(i, n, t).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{i} {n} {t}");
    }
}

#[test]
fn batch_loops_accept_state_through_interior_mutability() {
    let p = pool(3).unwrap();
    let seen = Mutex::new(Vec::new());
    try_batch_parallel_for(Some(&p), 10, &|i| seen.lock().unwrap().push(i), 3);
    let mut v = seen.into_inner().unwrap();
    v.sort_unstable();
    assert_eq!(v, (0..10).collect::<Vec<_>>());
}

/// The value of `"key":N` after `from` in `json`.
fn field(json: &str, from: usize, key: &str) -> u64 {
    let k = format!("\"{key}\":");
    let at = json[from..].find(&k).unwrap() + from + k.len();
    let end = json[at..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(json.len(), |e| e + at);
    json[at..end].parse().unwrap()
}

#[test]
fn profiling_counts_every_block() {
    let p = pool(4).unwrap();
    assert_eq!(p.stop_profiling().unwrap_err().kind(), ErrorKind::State);
    p.start_profiling().unwrap();
    for _ in 0..10 {
        try_simple_parallel_for(Some(&p), 1000, &|_| {});
    }
    // A parallel_for with blocks chosen by the cost model.
    let blocks = AtomicUsize::new(0);
    try_parallel_for(Some(&p), 10_000, 1e5, &|_, _| {
        blocks.fetch_add(1, Ordering::Relaxed);
    });
    let json = p.stop_profiling().unwrap();
    assert!(json.starts_with("{\"duration_ns\":"), "{json}");
    let main = json.find("\"main_thread\"").unwrap();
    let mut total = field(&json, main, "blocks");
    assert!(field(&json, main, "loops") >= 11);
    let workers = json.find("\"workers\"").unwrap();
    let mut at = workers;
    for id in 0..p.num_threads() {
        at = json[at..].find(&format!("{{\"id\":{id},")).unwrap() + at;
        total += field(&json, at, "blocks");
        for key in ["tasks", "steals", "spin_iterations", "parks", "loop_ns"] {
            field(&json, at, key);
        }
        at += 1;
    }
    assert_eq!(total, 10 * 1000 + blocks.load(Ordering::Relaxed) as u64);
    assert_eq!(p.stop_profiling().unwrap_err().kind(), ErrorKind::State);
}

#[test]
fn worker_stack_size_is_applied() {
    let mut o = PoolOptions::default();
    o.set_num_threads(3).unwrap();
    assert_eq!(
        o.set_stack_size(pool::options::min_stack_size() - 1)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    let want = 8 << 20;
    o.set_stack_size(want).unwrap();
    let p = ThreadPool::create(&o).unwrap().unwrap();
    let sizes = Mutex::new(Vec::new());
    try_simple_parallel_for(Some(&p), 64, &|_| {
        if p.current_thread_id() >= 0 {
            sizes.lock().unwrap().push(own_stack_size());
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    });
    for s in sizes.into_inner().unwrap() {
        assert!(s >= want, "worker stack {s} < {want}");
    }
}

/// The calling thread's stack size (glibc's pthread_getattr_np).
fn own_stack_size() -> usize {
    // SAFETY: attr is initialised by pthread_getattr_np before it is read,
    // and destroyed once.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
        let mut size = 0usize;
        assert_eq!(libc::pthread_attr_getstacksize(&attr, &mut size), 0);
        libc::pthread_attr_destroy(&mut attr);
        size
    }
}

#[test]
fn destroy_is_refused_from_inside() {
    let p = Arc::new(pool(3).unwrap());
    assert!(p.check_destroy_here().is_ok());
    let refused = AtomicUsize::new(0);
    try_simple_parallel_for(Some(&p), 16, &|_| {
        if p.check_destroy_here().is_err() {
            refused.fetch_add(1, Ordering::Relaxed);
        }
    });
    assert_eq!(
        refused.load(Ordering::Relaxed),
        16,
        "caller and workers alike"
    );
    let (tx, rx) = mpsc::channel();
    let q = p.clone();
    p.schedule(Box::new(move || {
        tx.send(q.check_destroy_here().map_err(|e| e.kind()))
            .unwrap()
    }));
    assert_eq!(rx.recv().unwrap(), Err(ErrorKind::State));
}

#[test]
fn a_pool_dropped_by_its_own_task() {
    // The last owner of the pool is a task running on it: the drop cannot
    // join the worker it runs on, and must not hang or panic.
    let p = Arc::new(pool(3).unwrap());
    let (tx, rx) = mpsc::channel();
    let q = p.clone();
    drop(p);
    let q2 = q.clone();
    q.schedule(Box::new(move || {
        drop(q2);
        tx.send(()).unwrap();
    }));
    drop(q); // the task's clone may now be the last one
    rx.recv().unwrap();
}
