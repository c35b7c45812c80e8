//! rayon as a peer.
use super::Peer;
use std::sync::mpsc;
use std::time::{Duration, Instant};

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
