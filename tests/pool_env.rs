//! The pool's environment variables: `LEANRT_POOL_FORCE_HYBRID` (and, with
//! the `trace` feature, `LEANRT_POOL_TRACE`) act on good values and warn
//! once on leanrt's log channel about a bad one. One test in its own binary
//! because it changes the process environment and installs the
//! process-wide log sink.
use leanrt::pool::{cpu, PoolOptions, ThreadPool, FORCE_HYBRID_ENV};
use std::sync::{Arc, Mutex};

/// The degree of parallelism of a fresh 2-thread pool.
fn dop() -> i32 {
    let mut opts = PoolOptions::default();
    opts.set_num_threads(2).unwrap();
    let pool = ThreadPool::create(&opts).unwrap().expect("a 2-thread pool");
    pool.degree_of_parallelism()
}

#[test]
fn bad_values_warn_once_and_good_ones_act() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s = seen.clone();
    leanrt::diag::set_sink(Some(Arc::new(move |_, msg| {
        s.lock().unwrap().push(msg.to_owned())
    })));
    let taken = || std::mem::take(&mut *seen.lock().unwrap());
    let unforced = if cpu::is_hybrid() { 8 } else { 2 };

    std::env::remove_var(FORCE_HYBRID_ENV);
    assert_eq!(dop(), unforced);
    std::env::set_var(FORCE_HYBRID_ENV, "0");
    assert_eq!(dop(), unforced);
    std::env::set_var(FORCE_HYBRID_ENV, "1");
    assert_eq!(dop(), 8, "1 forces 4 x the thread count");
    assert_eq!(taken(), Vec::<String>::new(), "unset, 0 and 1 are silent");

    std::env::set_var(FORCE_HYBRID_ENV, "yes");
    assert_eq!(dop(), unforced, "a bad value is not forced");
    let warnings = taken();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert!(
        w.contains("LEANRT_POOL_FORCE_HYBRID=\"yes\"") && w.contains("using 0"),
        "names the variable, the value and what is used: {w}"
    );
    for again in ["yes", "", "true", " 1"] {
        std::env::set_var(FORCE_HYBRID_ENV, again);
        assert_eq!(dop(), unforced, "{again:?} is not forced");
    }
    assert_eq!(taken(), Vec::<String>::new(), "warned once per process");
    std::env::remove_var(FORCE_HYBRID_ENV);

    #[cfg(feature = "trace")]
    {
        // A directory cannot be appended to: the trace is dropped, once
        // with a warning.
        std::env::set_var("LEANRT_POOL_TRACE", "/");
        dop();
        dop();
        let warnings = taken();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("LEANRT_POOL_TRACE=\"/\""),
            "{warnings:?}"
        );
        std::env::remove_var("LEANRT_POOL_TRACE");
    }
    leanrt::diag::set_sink(None);
}
