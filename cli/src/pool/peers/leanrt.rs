//! leanrt's pool as a peer. The only module of the command that calls
//! leanrt's pool API (options, creation, loops, spinning hints, counters).
use super::{config_pairs, Peer};
use crate::pool::results::Counters;
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
    fn stats(&self) -> Option<Counters> {
        self.pool.as_ref().map(|p| {
            let c = p.stats();
            Counters {
                tasks_run: c.tasks_run,
                steals: c.steals,
                spin_iterations: c.spin_iterations,
                parks: c.parks,
                wakeups: c.wakeups,
                workers_asleep: c.workers_asleep,
            }
        })
    }
}
