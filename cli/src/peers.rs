//! The parallel runtimes `leanrt pool` compares: leanrt's pool (one per
//! configuration), rayon, and OpenMP (libgomp) through `csrc/omp_shim.c`.
//! Every peer runs the same Rust loop bodies.
use leanrt::pool::{self, PoolOptions, ThreadPool};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A parallel runtime under test.
pub trait Peer {
    /// Degree of parallelism (threads including the caller).
    fn dop(&self) -> usize;
    /// `body(i)` once for every i in [0, total), in parallel, returning when
    /// all are done. `cost_cycles` is the estimated cost of one index (used by
    /// leanrt's cost model, as an ORT kernel passes it).
    fn parallel_for(&self, total: usize, cost_cycles: f64, body: &(dyn Fn(usize) + Sync));
    /// A tiny region: one index per thread, `body(i)` for i in [0, dop).
    fn tiny_region(&self, body: &(dyn Fn(usize) + Sync));
    /// Submits a probe to the runtime's workers and returns how long after
    /// the submission a worker (not the caller, where the runtime has
    /// workers) started running it.
    fn wake_latency(&self) -> Duration;
    /// The pool's counters, for leanrt.
    fn stats(&self) -> Option<pool::PoolStats> {
        None
    }
}

/// An ORT configuration preset: the config keys it sets.
pub fn preset(name: &str) -> Option<Vec<(&'static str, &'static str)>> {
    const SPIN: &str = "session.intra_op.allow_spinning";
    const DUR: &str = "session.intra_op.spin_duration_us";
    const BACK: &str = "session.intra_op.spin_backoff_max";
    Some(match name {
        "default" => vec![],
        "no_spin" => vec![(SPIN, "0")],
        "spin_0" => vec![(DUR, "0")],
        "spin_500" => vec![(DUR, "500")],
        "spin_1000" => vec![(DUR, "1000")],
        "spin_2000" => vec![(DUR, "2000")],
        "backoff_4" => vec![(BACK, "4")],
        "backoff_8" => vec![(BACK, "8")],
        "spin_1000_backoff_4" => vec![(DUR, "1000"), (BACK, "4")],
        "spin_1000_backoff_8" => vec![(DUR, "1000"), (BACK, "8")],
        "spin_2000_backoff_8" => vec![(DUR, "2000"), (BACK, "8")],
        _ => return None,
    })
}

/// The preset names, in the order they are documented.
pub const PRESETS: [&str; 11] = [
    "default",
    "no_spin",
    "spin_0",
    "spin_500",
    "spin_1000",
    "spin_2000",
    "backoff_4",
    "backoff_8",
    "spin_1000_backoff_4",
    "spin_1000_backoff_8",
    "spin_2000_backoff_8",
];

/// The key/value pairs of a configuration: a preset name, or a custom
/// `key=value[;key=value...]` list of ORT config keys.
pub fn config_pairs(config: &str) -> Result<Vec<(String, String)>, String> {
    if let Some(p) = preset(config) {
        return Ok(p
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect());
    }
    if !config.contains('=') {
        return Err(format!(
            "unknown configuration '{config}' (presets: {}; or key=value[;key=value] with ORT config keys)",
            PRESETS.join(", ")
        ));
    }
    config
        .split(';')
        .filter(|kv| !kv.trim().is_empty())
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("'{kv}' is not key=value"))?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// Pool options for `threads` and `config`, checked by the library itself.
pub fn pool_options(threads: usize, config: &str) -> Result<PoolOptions, String> {
    let mut o = PoolOptions::default();
    o.set_num_threads(threads as i32)
        .map_err(|e| format!("threads {threads}: {e}"))?;
    for (k, v) in config_pairs(config)? {
        o.set_config(&k, &v)
            .map_err(|e| format!("configuration '{config}': {k}={v}: {e}"))?;
    }
    Ok(o)
}

/// leanrt's pool with one configuration (None = the NULL pool: serial).
pub struct Leanrt {
    pool: Option<ThreadPool>,
}

impl Leanrt {
    pub fn new(threads: usize, config: &str) -> Result<Leanrt, String> {
        let o = pool_options(threads, config)?;
        let pool = ThreadPool::create(&o).map_err(|e| format!("creating the pool: {e}"))?;
        Ok(Leanrt { pool })
    }
}

impl Peer for Leanrt {
    fn dop(&self) -> usize {
        pool::degree_of_parallelism(self.pool.as_ref()).max(1) as usize
    }
    fn parallel_for(&self, total: usize, cost_cycles: f64, body: &(dyn Fn(usize) + Sync)) {
        pool::try_parallel_for(
            self.pool.as_ref(),
            total as isize,
            cost_cycles,
            &|first, last| {
                for i in first..last {
                    body(i as usize);
                }
            },
        );
    }
    fn tiny_region(&self, body: &(dyn Fn(usize) + Sync)) {
        pool::try_simple_parallel_for(self.pool.as_ref(), self.dop() as isize, &|i| {
            body(i as usize)
        });
    }
    fn wake_latency(&self) -> Duration {
        let (tx, rx) = mpsc::channel();
        let t0 = Instant::now();
        pool::schedule(
            self.pool.as_ref(),
            Box::new(move || {
                let _ = tx.send(t0.elapsed());
            }),
        );
        rx.recv().unwrap_or_default()
    }
    fn stats(&self) -> Option<pool::PoolStats> {
        self.pool.as_ref().map(|p| p.stats())
    }
}

/// A rayon pool of `threads` workers (rayon's caller does not take part).
pub struct Rayon {
    pool: rayon::ThreadPool,
    threads: usize,
}

impl Rayon {
    pub fn new(threads: usize) -> Result<Rayon, String> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| format!("creating the rayon pool: {e}"))?;
        Ok(Rayon { pool, threads })
    }
}

impl Peer for Rayon {
    fn dop(&self) -> usize {
        self.threads
    }
    fn parallel_for(&self, total: usize, _cost: f64, body: &(dyn Fn(usize) + Sync)) {
        use rayon::prelude::*;
        self.pool
            .install(|| (0..total).into_par_iter().for_each(body));
    }
    fn tiny_region(&self, body: &(dyn Fn(usize) + Sync)) {
        use rayon::prelude::*;
        self.pool.install(|| {
            (0..self.threads)
                .into_par_iter()
                .with_max_len(1)
                .for_each(body)
        });
    }
    fn wake_latency(&self) -> Duration {
        let (tx, rx) = mpsc::channel();
        let t0 = Instant::now();
        self.pool.spawn(move || {
            let _ = tx.send(t0.elapsed());
        });
        rx.recv().unwrap_or_default()
    }
}

#[cfg(leanrt_openmp)]
mod omp_ffi {
    use std::ffi::c_void;
    pub type IndexFn = unsafe extern "C" fn(ctx: *mut c_void, index: std::ffi::c_long);
    pub type ThreadFn = unsafe extern "C" fn(ctx: *mut c_void, thread: i32);
    extern "C" {
        pub fn leanrt_bench_omp_for(
            threads: i32,
            total: std::ffi::c_long,
            f: IndexFn,
            ctx: *mut c_void,
        );
        pub fn leanrt_bench_omp_region(threads: i32, f: ThreadFn, ctx: *mut c_void);
        pub fn leanrt_bench_omp_max_threads() -> i32;
    }
}

/// Whether this binary was built with the OpenMP shim.
pub const OPENMP_BUILT: bool = cfg!(leanrt_openmp);

/// OpenMP (libgomp) with the OMP_WAIT_POLICY this process was started with.
pub struct OpenMp {
    threads: usize,
}

impl OpenMp {
    pub fn new(threads: usize) -> Result<OpenMp, String> {
        if !OPENMP_BUILT {
            return Err("this leanrt was built without an OpenMP compiler".into());
        }
        Ok(OpenMp { threads })
    }
}

#[cfg(leanrt_openmp)]
mod omp_impl {
    use super::omp_ffi::*;
    use std::ffi::c_void;

    type Body<'a> = &'a (dyn Fn(usize) + Sync);

    unsafe extern "C" fn call_index(ctx: *mut c_void, index: std::ffi::c_long) {
        // SAFETY: ctx is the `&Body` passed to the shim by `omp_for`, alive
        // for the whole parallel construct, which returns only after every
        // call has returned.
        let body = unsafe { &*(ctx as *const Body) };
        // A panic must not unwind into C: abort instead.
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(index as usize))).is_err()
        {
            std::process::abort();
        }
    }

    unsafe extern "C" fn call_thread(ctx: *mut c_void, thread: i32) {
        // SAFETY: as in call_index.
        let body = unsafe { &*(ctx as *const Body) };
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(thread as usize))).is_err()
        {
            std::process::abort();
        }
    }

    pub fn omp_for(threads: usize, total: usize, body: Body) {
        let ctx = &body as *const Body as *mut c_void;
        // SAFETY: the shim calls call_index with ctx for each index and
        // returns after the parallel loop has joined; `body` outlives it.
        unsafe { leanrt_bench_omp_for(threads as i32, total as std::ffi::c_long, call_index, ctx) }
    }

    pub fn omp_region(threads: usize, body: Body) {
        let ctx = &body as *const Body as *mut c_void;
        // SAFETY: as in omp_for.
        unsafe { leanrt_bench_omp_region(threads as i32, call_thread, ctx) }
    }

    pub fn max_threads() -> i32 {
        // SAFETY: plain query without arguments.
        unsafe { leanrt_bench_omp_max_threads() }
    }
}

/// libgomp's default thread count (0 without OpenMP).
pub fn omp_max_threads() -> i32 {
    #[cfg(leanrt_openmp)]
    {
        omp_impl::max_threads()
    }
    #[cfg(not(leanrt_openmp))]
    {
        0
    }
}

impl Peer for OpenMp {
    fn dop(&self) -> usize {
        self.threads
    }
    #[allow(unused_variables)]
    fn parallel_for(&self, total: usize, _cost: f64, body: &(dyn Fn(usize) + Sync)) {
        #[cfg(leanrt_openmp)]
        omp_impl::omp_for(self.threads, total, body);
    }
    #[allow(unused_variables)]
    fn tiny_region(&self, body: &(dyn Fn(usize) + Sync)) {
        #[cfg(leanrt_openmp)]
        omp_impl::omp_for(self.threads, self.threads, body);
    }
    fn wake_latency(&self) -> Duration {
        // Thread 1 (the first non-caller thread) records when it starts; with
        // one thread, the caller does.
        let probe_thread = usize::from(self.threads > 1);
        let seen = std::sync::Mutex::new(None);
        let t0 = Instant::now();
        let _body = |t: usize| {
            if t == probe_thread {
                *seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(t0.elapsed());
            }
        };
        #[cfg(leanrt_openmp)]
        omp_impl::omp_region(self.threads, &_body);
        let v = *seen.lock().unwrap_or_else(|e| e.into_inner());
        v.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_preset_maps_to_known_keys() {
        for p in PRESETS {
            let pairs = config_pairs(p).unwrap();
            for (k, v) in &pairs {
                assert!(k.starts_with("session.intra_op."), "{p}: {k}");
                assert!(v.parse::<i32>().is_ok(), "{p}: {v}");
            }
        }
        assert_eq!(config_pairs("default").unwrap(), vec![]);
        assert_eq!(
            config_pairs("spin_1000_backoff_8").unwrap(),
            vec![
                (
                    "session.intra_op.spin_duration_us".to_string(),
                    "1000".to_string()
                ),
                (
                    "session.intra_op.spin_backoff_max".to_string(),
                    "8".to_string()
                )
            ]
        );
        assert!(config_pairs("spin_3000").is_err());
        assert_eq!(
            config_pairs("a=1;b = 2").unwrap(),
            vec![("a".into(), "1".into()), ("b".into(), "2".into())]
        );
    }

    fn covers_every_index(p: &dyn Peer) {
        for total in [0usize, 1, 7, 1000] {
            let hits: Vec<AtomicUsize> = (0..total).map(|_| AtomicUsize::new(0)).collect();
            p.parallel_for(total, 100.0, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(
                hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "total {total}"
            );
        }
        let n = AtomicUsize::new(0);
        p.tiny_region(&|_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), p.dop());
        let _ = p.wake_latency();
    }

    #[test]
    fn rayon_peer_runs_every_index_once() {
        covers_every_index(&Rayon::new(2).unwrap());
    }

    #[test]
    fn leanrt_peer_runs_every_index_once() {
        covers_every_index(&Leanrt::new(2, "spin_1000_backoff_8").unwrap());
        covers_every_index(&Leanrt::new(1, "default").unwrap());
    }

    #[cfg(leanrt_openmp)]
    #[test]
    fn openmp_peer_runs_every_index_once() {
        covers_every_index(&OpenMp::new(2).unwrap());
        assert!(omp_max_threads() >= 1);
    }
}
