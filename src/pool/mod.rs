//! The intra-op thread pool, with ONNX Runtime's semantics (see
//! `src/pool/README.md` for the spin/sleep protocol and its invariants).
//!
//! * [`ThreadPool`]: n-1 worker threads on crossbeam-deque work-stealing
//!   queues; the thread that starts a loop always takes part in it.
//! * The static helpers ([`try_parallel_for`], [`try_simple_parallel_for`],
//!   [`try_batch_parallel_for`], [`schedule`], ...) take `Option<&ThreadPool>`
//!   like ORT's take a nullable `ThreadPool*`: `None` runs serially on the
//!   caller.
//! * [`PoolOptions`]: ORT's options and session config keys.
//! * [`spin`]: calibrated pause, spin budget and backoff; [`cpu`]: CPU facts.
pub mod affinity;
pub mod cost;
pub mod cpu;
pub mod options;
mod parallel;
pub mod sleep;
pub mod spin;
mod sync;
mod threadpool;

pub use cost::TensorOpCost;
pub use options::{
    CustomCreateThreadFn, CustomJoinThreadFn, CustomThreadHandle, CustomThreadHandleT, PoolOptions,
    ThreadWorkerFn, FORCE_HYBRID_ENV,
};
pub use parallel::{
    degree_of_parallelism, schedule, should_parallelize, try_batch_parallel_for, try_parallel_for,
    try_parallel_for_cost, try_simple_parallel_for,
};
pub use threadpool::{PoolStats, ThreadPool, QUEUE_CAPACITY};
