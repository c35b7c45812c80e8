//! Shared pieces of the pool tests (`tests/pool_loops.rs`,
//! `tests/pool_sections.rs`): a small pool and per-index hit counters.
//!
//! Each test binary includes this file with `mod pool_support;` and uses a
//! part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

use leanrt::pool::abi::LRT_POOL_KEY_CPU_BUDGET;
use leanrt::pool::{PoolOptions, ThreadPool};
use std::sync::atomic::{AtomicU8, Ordering};

/// A pool of `threads` threads (1: `None`, the serial NULL pool). Short
/// spins keep the 2-core CI box responsive.
pub fn pool(threads: i32) -> Option<ThreadPool> {
    pool_from(PoolOptions::default(), threads)
}

/// A pool of `threads` threads from `o`, with [`pool`]'s short spins.
fn pool_from(mut o: PoolOptions, threads: i32) -> Option<ThreadPool> {
    o.set_num_threads(threads).unwrap();
    o.set_spin_duration_us(50).unwrap();
    ThreadPool::create(&o).unwrap()
}

/// A pool of `threads` threads outside the process-wide CPU share
/// (`leanrt.intra_op.cpu_budget` = 0), for a test that asserts workers
/// help: the share is process-wide, and the binary's other tests run
/// loops at the same time, which may leave no CPU free (a loop then runs
/// inline by design, `src/pool/engine/budget.rs`).
pub fn helping_pool(threads: i32) -> ThreadPool {
    pool_from(helping_options(), threads).unwrap()
}

/// Options outside the CPU share (see [`helping_pool`]).
pub fn helping_options() -> PoolOptions {
    let mut o = PoolOptions::default();
    o.set_config(LRT_POOL_KEY_CPU_BUDGET, "0").unwrap();
    o
}

/// How often each index of a loop ran.
pub struct Hits(Vec<AtomicU8>);

impl Hits {
    pub fn new(n: isize) -> Self {
        Hits((0..n).map(|_| AtomicU8::new(0)).collect())
    }
    pub fn hit(&self, i: isize) {
        self.0[i as usize].fetch_add(1, Ordering::Relaxed);
    }
    /// A block `[a, b)`; panics on a block outside the loop.
    pub fn range(&self, a: isize, b: isize) {
        assert!(
            0 <= a && a < b && b as usize <= self.0.len(),
            "bad block [{a},{b})"
        );
        (a..b).for_each(|i| self.hit(i));
    }
    /// Every index ran exactly once.
    pub fn once(&self) -> bool {
        self.0.iter().all(|h| h.load(Ordering::Relaxed) == 1)
    }
    /// Asserts that every index ran exactly once, naming the first that did not.
    pub fn assert_once(&self, what: &str) {
        for (i, h) in self.0.iter().enumerate() {
            let h = h.load(Ordering::Relaxed);
            assert_eq!(h, 1, "{what}: index {i} ran {h} times");
        }
    }
}
