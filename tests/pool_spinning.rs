//! The spinning switch (enable/disable as request boundaries, counted
//! across callers, enable waking sleepers), the adaptive spin budget, and
//! the CPU share's cap on a loop's helpers.
//! No timing is asserted: waits are bounded polls of the pool's counters.
use leanrt::pool::abi::{
    lrt_pool_stats, LRT_POOL_KEY_ADAPTIVE_SPIN, LRT_POOL_KEY_CPU_BUDGET,
    LRT_POOL_KEY_FORCE_SPINNING_STOP,
};
use leanrt::pool::{try_simple_parallel_for, PoolOptions, ThreadPool};
use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

fn pool(spin_us: i32, extra: &[(&str, &str)]) -> ThreadPool {
    let mut o = PoolOptions::default();
    o.set_num_threads(3).unwrap();
    o.set_spin_duration_us(spin_us).unwrap();
    for (k, v) in extra {
        o.set_config(k, v).unwrap();
    }
    ThreadPool::create(&o).unwrap().unwrap()
}

/// Polls until `cond` holds (true) or `secs` passed (false).
fn wait_until(secs: f64, cond: impl Fn() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed().as_secs_f64() < secs {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    cond()
}

/// Waits (up to 10 s, polling as [`wait_until`] does) until two polls in a
/// row both find the two workers asleep, with the same park and wake-up
/// counts; returns those wake-ups. Each worker then slept from its first
/// read to its second, and the next wake-up of each is counted after the
/// returned figure. Taking the count from a later poll than the one that
/// found both asleep is not enough: a worker could wake in between (a
/// loop's wake reaching it late, or passed on by the other worker's
/// cascade, `worker.rs`), be counted in that figure, and be awake when the
/// test wakes the sleepers, so that its wake-up is never counted again.
fn settled_asleep(p: &ThreadPool) -> Option<u64> {
    let last = Cell::new(p.stats());
    let settled = |s: lrt_pool_stats| (s.workers_asleep == 2).then_some((s.parks, s.wakeups));
    let ok = wait_until(10.0, || {
        let now = p.stats();
        let before = last.replace(now);
        settled(before).is_some() && settled(before) == settled(now)
    });
    ok.then(|| last.get().wakeups)
}

fn loop_once(p: &ThreadPool, n: usize) {
    let h: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(0)).collect();
    try_simple_parallel_for(Some(p), n as isize, &|i| {
        h[i as usize].fetch_add(1, Ordering::Relaxed);
    });
    assert!(h.iter().all(|x| x.load(Ordering::Relaxed) == 1));
}

#[test]
fn enable_wakes_sleepers_and_disable_puts_them_back() {
    let p = pool(1000, &[]);
    loop_once(&p, 100);
    p.disable_spinning();
    let before = settled_asleep(&p).expect("the workers did not settle asleep");
    p.enable_spinning(); // a request starts: sleepers are woken at once
    assert!(wait_until(10.0, || p.stats().wakeups >= before + 2));
    loop_once(&p, 100);
    p.disable_spinning();
    assert!(wait_until(10.0, || p.stats().workers_asleep == 2));
}

#[test]
fn concurrent_requests_are_counted() {
    // A 10 s budget: while any request is open the workers may spin; once
    // the last one ended they sleep.
    let p = pool(leanrt::ffi::pool::LRT_POOL_MAX_SPIN_US, &[]);
    p.enable_spinning();
    p.enable_spinning();
    loop_once(&p, 100);
    p.disable_spinning();
    loop_once(&p, 100);
    p.disable_spinning();
    assert!(wait_until(10.0, || p.stats().workers_asleep == 2));
    // Extra disables do not go below zero: one enable turns spinning on.
    p.disable_spinning();
    p.enable_spinning();
    loop_once(&p, 100);
    p.disable_spinning();
    assert!(wait_until(10.0, || p.stats().workers_asleep == 2));
}

#[test]
fn force_spinning_stop_with_requests() {
    let p = pool(1000, &[(LRT_POOL_KEY_FORCE_SPINNING_STOP, "1")]);
    for _ in 0..5 {
        p.enable_spinning();
        for _ in 0..20 {
            loop_once(&p, 50);
        }
        p.disable_spinning();
    }
    assert!(wait_until(10.0, || p.stats().workers_asleep == 2));
}

#[test]
fn adaptive_spin_runs_loops_and_sleeps_after_a_burst() {
    for budget in [-1, 1000] {
        let p = pool(budget, &[(LRT_POOL_KEY_ADAPTIVE_SPIN, "1")]);
        for _ in 0..3 {
            for _ in 0..200 {
                loop_once(&p, 64);
            }
            assert!(wait_until(30.0, || p.stats().workers_asleep == 2));
        }
        if budget == -1 {
            p.disable_spinning();
        }
    }
    // Without spinning there is nothing to adapt.
    let p = pool(0, &[(LRT_POOL_KEY_ADAPTIVE_SPIN, "1")]);
    loop_once(&p, 64);
    assert!(wait_until(10.0, || p.stats().workers_asleep == 2));
}

/// A caller whose requests come on a steady cadence (a loop every 40 ms,
/// on an absolute schedule, so that the gaps stay within the eighth of
/// their average the cadence allows even with this binary's other tests
/// loading the CPUs) is anticipated under the default options: once the
/// cadence is steady, workers wake on their own timers ahead of the
/// requests (`timer_wakeups`), and every loop still runs each index once.
/// A caller off any cadence gets no timers.
#[test]
fn a_steady_caller_is_anticipated_and_an_irregular_one_is_not() {
    let p = pool(-1, &[(LRT_POOL_KEY_CPU_BUDGET, "0")]);
    p.start_profiling().unwrap();
    let start = Instant::now();
    for k in 1..=30u32 {
        loop_once(&p, 256);
        if let Some(left) =
            (start + Duration::from_millis(40) * k).checked_duration_since(Instant::now())
        {
            std::thread::sleep(left);
        }
    }
    let json = p.stop_profiling().unwrap();
    let timers = sum_of(&json, "timer_wakeups");
    assert!(timers > 0, "no worker woke on its timer: {json}");
    // Gaps of 1, 9, 3, 27, 2, 18 ms (and whatever a loaded machine adds):
    // never three in a row within an eighth of their average.
    let p = pool(-1, &[(LRT_POOL_KEY_CPU_BUDGET, "0")]);
    p.start_profiling().unwrap();
    for ms in [1, 9, 3, 27, 2, 18, 1, 9, 3, 27, 2, 18] {
        loop_once(&p, 256);
        std::thread::sleep(Duration::from_millis(ms));
    }
    let json = p.stop_profiling().unwrap();
    assert_eq!(sum_of(&json, "timer_wakeups"), 0, "{json}");
}

/// Two request threads sharing one pool, each on a steady cadence of its
/// own (a loop every 40 ms and every 70 ms, absolute schedules): the gaps
/// between the pool's loops, whoever calls them, follow no cadence, but
/// each caller is followed apart, so both are anticipated.
#[test]
fn callers_sharing_a_pool_are_each_anticipated() {
    let p = pool(-1, &[(LRT_POOL_KEY_CPU_BUDGET, "0")]);
    p.start_profiling().unwrap();
    let start = Instant::now();
    std::thread::scope(|s| {
        for (period, loops) in [(40u32, 30u32), (70, 17)] {
            let p = &p;
            s.spawn(move || {
                for k in 1..=loops {
                    loop_once(p, 256);
                    let next = start + Duration::from_millis(u64::from(period * k));
                    if let Some(left) = next.checked_duration_since(Instant::now()) {
                        std::thread::sleep(left);
                    }
                }
            });
        }
    });
    let json = p.stop_profiling().unwrap();
    assert!(
        sum_of(&json, "timer_wakeups") > 0,
        "no worker woke on its timer: {json}"
    );
}

/// Requests of one loop each, off any cadence (no timers): once as many
/// requests in a row had as many loops (`adaptive.rs`), a worker that runs
/// out of work after a request's expected last loop sleeps without
/// spinning, so the pool's spin count stops growing. Requests of one loop
/// and two in turn keep it growing: the workers spin after the loops.
#[test]
fn no_spin_after_a_requests_expected_last_loop() {
    let gaps = [1, 9, 3, 27, 2, 18];
    for (shape, stops) in [([1, 1], true), ([1, 2], false)] {
        let p = pool(-1, &[(LRT_POOL_KEY_CPU_BUDGET, "0")]);
        let mut requests = (0..).map(|k| shape[k % 2]).zip(gaps.iter().cycle());
        let mut run = |n: usize| {
            for (loops, &ms) in requests.by_ref().take(n) {
                for _ in 0..loops {
                    loop_once(&p, 256);
                }
                std::thread::sleep(Duration::from_millis(ms));
            }
        };
        run(6);
        let before = p.stats().spin_iterations;
        run(6);
        let after = p.stats().spin_iterations;
        assert_eq!(after == before, stops, "{shape:?}: {before} -> {after}");
    }
}

/// The workers' ids seen in one loop of 400 sleeping iterations on `p`.
fn helpers_of_a_long_loop(p: &ThreadPool) -> usize {
    let ids = std::sync::Mutex::new(std::collections::BTreeSet::new());
    try_simple_parallel_for(Some(p), 400, &|_| {
        let id = p.current_thread_id();
        if id >= 0 {
            ids.lock().unwrap().insert(id);
        }
        std::thread::sleep(Duration::from_millis(1));
    });
    ids.into_inner().unwrap().len()
}

#[test]
fn sleeping_workers_all_join_a_long_loop() {
    // Workers sleep at once (no spinning); the owner of a loop wakes two,
    // and each woken worker wakes more while the loop still wants helpers:
    // every worker takes part in a loop long enough for all of them. Out
    // of the CPU share, which would invite only as many helpers as CPUs
    // are free (the next test).
    let p = pool(0, &[(LRT_POOL_KEY_CPU_BUDGET, "0")]);
    for _ in 0..3 {
        assert!(wait_until(10.0, || p.stats().workers_asleep == 2));
        assert_eq!(helpers_of_a_long_loop(&p), 2, "every worker helped");
    }
}

#[test]
fn the_cpu_share_invites_helpers_only_for_free_cpus() {
    // In the share (the default), a loop's caller counts itself and invites
    // at most one helper per other CPU online, however many workers the
    // pool has (other tests' loops in this process only take CPUs away).
    let p = pool(0, &[]);
    let cpus = leanrt::pool::cpu::logical_cores();
    for _ in 0..3 {
        assert!(wait_until(10.0, || p.stats().workers_asleep == 2));
        let helped = helpers_of_a_long_loop(&p);
        assert!(helped <= 2.min(cpus - 1), "{helped} helpers on {cpus} CPUs");
    }
}

/// The sum of every `"key":N` in a profiling report (per-worker keys: the
/// sum over the workers).
fn sum_of(json: &str, key: &str) -> u64 {
    json.match_indices(&format!("\"{key}\":"))
        .map(|(at, m)| {
            json[at + m.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse::<u64>()
                .expect("a number")
        })
        .sum()
}

/// A worker woken onto the CPU of the thread whose request or loop it waits
/// for (as the operating system may place a woken thread) must not spin
/// there: spinning would keep that very thread from running. With the
/// whole pool on one CPU every spin of the worker is on its caller's CPU,
/// so the worker yields it (counted as `spin_yields`) as soon as it spins.
#[test]
fn a_worker_spinning_on_its_callers_cpu_yields_it() {
    // Pin this thread to one CPU first: the workers inherit it.
    let cpu = leanrt::pool::affinity::allowed_cpus()[0];
    assert!(leanrt::pool::affinity::pin_current_thread(&[cpu]));
    // Outside the CPU share: the share is process-wide, and this binary's
    // other tests (their loops, their callers lingering after them) may
    // claim every CPU, when a worker does not spin by design.
    let p = pool(
        1000,
        &[
            (LRT_POOL_KEY_FORCE_SPINNING_STOP, "1"),
            (LRT_POOL_KEY_CPU_BUDGET, "0"),
        ],
    );
    p.start_profiling().unwrap();
    p.enable_spinning();
    loop_once(&p, 64);
    // The caller sleeps, so the workers get the CPU and spin.
    assert!(
        wait_until(10.0, || p.stats().spin_iterations > 0),
        "no worker spun: {:?}",
        p.stats()
    );
    p.disable_spinning();
    let json = p.stop_profiling().unwrap();
    let yields = sum_of(&json, "spin_yields");
    assert!(
        yields > 0,
        "workers spun on their caller's CPU without yielding: {json}"
    );
}
