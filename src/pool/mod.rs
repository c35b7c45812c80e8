//! The intra-op thread pool, with ONNX Runtime's semantics (the contract:
//! `docs/POOL.md`; how the files fit together: `src/pool/README.md`; each
//! protocol: the module doc of the file that implements it).
//!
//! Two layers, arrows pointing down:
//! * `loops` — ORT's loops: the cost model decision ([`cost`]), block
//!   sizing, the sharded loop counter, and the static helpers
//!   ([`try_parallel_for`], [`try_simple_parallel_for`],
//!   [`try_batch_parallel_for`], [`schedule`], ...), which take
//!   `Option<&ThreadPool>` like ORT's take a nullable `ThreadPool*`: `None`
//!   runs serially on the caller.
//! * `engine` — [`ThreadPool`]: n-1 worker threads on crossbeam-deque
//!   work-stealing queues, sleep and wake, the broadcast slot, parallel
//!   sections, Schedule, destroy, stats and profiling, and one entry that
//!   runs a piece of work on the caller plus helpers. The thread that starts
//!   a loop always takes part in it.
//!
//! Beside them: [`abi`] (the C-visible plain data under its C names),
//! [`PoolOptions`] (ORT's options and session config keys),
//! [`spin`] (calibrated pause, spin budget, backoff), [`cpu`] (CPU facts),
//! [`affinity`].
pub mod abi;
pub mod affinity;
pub mod cost;
pub mod cpu;
mod engine;
mod loops;
pub mod options;
pub mod os_thread;
pub mod spin;

pub use cost::TensorOpCost;
pub use engine::{
    begin_section, cpu_share_counts, CallGuard, ParallelSection, SectionHandle, ThreadPool,
};
pub use loops::{
    degree_of_parallelism, kernel_parallel_for, partition_work, schedule, should_parallelize,
    try_batch_parallel_for, try_parallel_for, try_parallel_for_cost, try_partition_work,
    try_simple_parallel_for,
};
pub use options::{force_hybrid_switch, PoolOptions, FORCE_HYBRID_ENV};
