//! leanrt's pool as a peer. The only module of the command that calls
//! leanrt's pool API (options, creation, loops, spinning hints, counters).
use super::Peer;
use crate::pool::presets::config_pairs;
use leanrt::pool::abi::lrt_pool_stats;
use leanrt::pool::{self, PoolOptions, ThreadPool};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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

/// Whether the library accepts `threads` as a pool's thread count (its
/// message says the limit where it does not).
pub fn check_threads(threads: i32) -> Result<(), String> {
    PoolOptions::default()
        .set_num_threads(threads)
        .map_err(|e| e.to_string())
}

/// The degree of parallelism of a pool with default options.
pub fn default_degree_of_parallelism() -> Result<i32, String> {
    let p = ThreadPool::create(&PoolOptions::default())
        .map_err(|e| format!("creating a default pool: {e}"))?;
    Ok(pool::degree_of_parallelism(p.as_ref()))
}

/// The adaptive spin key, run only where the library accepts it.
pub const ADAPTIVE_KEY: &str = leanrt::pool::abi::LRT_POOL_KEY_ADAPTIVE_SPIN;

/// Why a configuration is skipped rather than refused: it sets the
/// adaptive spin key and this build of the library does not know it.
pub fn skip_reason(config: &str) -> Option<String> {
    let pairs = config_pairs(config).ok()?;
    pairs.iter().find(|(k, _)| k == ADAPTIVE_KEY)?;
    // "1" (on) is valid wherever the key is known, so an error means the
    // key is unknown; a known key with a bad value is refused later.
    let err = PoolOptions::default().set_config(ADAPTIVE_KEY, "1").err()?;
    Some(format!(
        "configuration '{config}' skipped: this leanrt does not accept {ADAPTIVE_KEY} ({err})"
    ))
}

/// leanrt's pool with one configuration (None = the NULL pool: serial).
pub struct LeanrtPool {
    pool: Option<ThreadPool>,
    /// `session.force_spinning_stop`: runs are bracketed by
    /// enable_spinning / disable_spinning.
    hints: bool,
}

impl LeanrtPool {
    pub fn new(threads: usize, config: &str) -> Result<LeanrtPool, String> {
        let o = pool_options(threads, config)?;
        let pool = ThreadPool::create(&o).map_err(|e| format!("creating the pool: {e}"))?;
        let hints = o.force_spinning_stop() && pool.is_some();
        Ok(LeanrtPool { pool, hints })
    }
}

impl Peer for LeanrtPool {
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
    fn section_loops(
        &self,
        loops: u32,
        total: usize,
        cost_cycles: f64,
        body: &(dyn Fn(usize) + Sync),
    ) -> Option<bool> {
        // A NULL pool's section is a no-op (as in ORT): plain serial loops.
        let section = self.pool.as_ref().and_then(|p| p.parallel_section().ok());
        let attached = section.as_ref().is_some_and(|s| s.is_attached());
        for _ in 0..loops {
            self.parallel_for(total, cost_cycles, body);
        }
        drop(section);
        Some(attached)
    }
    fn hints(&self) -> bool {
        self.hints
    }
    fn begin_run(&self) {
        if let (true, Some(p)) = (self.hints, &self.pool) {
            p.enable_spinning();
        }
    }
    fn end_run(&self) {
        if let (true, Some(p)) = (self.hints, &self.pool) {
            p.disable_spinning();
        }
    }
    fn stats(&self) -> Option<lrt_pool_stats> {
        self.pool.as_ref().map(ThreadPool::stats)
    }
}
