//! The pool engine: the workers and their queues, sleep and wake, the
//! broadcast slot, parallel sections, Schedule, destroy, statistics and
//! profiling, and one entry that runs a piece of work on the caller plus up
//! to `k` helpers ([`ThreadPool::run_in_parallel`]). What a loop is (blocks,
//! the cost model, the iteration counter) lives one layer up, in
//! `super::loops`, which calls only this entry.
//!
//! Files, by job (each protocol is stated in its file's module doc):
//! * `pool.rs` — the handle: create, accessors, spinning switch, stats,
//!   profiling, Schedule, destroy; `parallel.rs` — the loop entry.
//! * `shared.rs` — the shared state in named parts (queues, sections,
//!   spin control, profiling); `job.rs` — what the queues and the slot
//!   carry.
//! * `callers.rs` — the C calls in progress, which a destroy must not
//!   race; `threads.rs` — starting and joining worker threads; `worker.rs` — the
//!   worker loop (work, spin, sleep); `membership.rs` — which pool the
//!   calling thread is a worker of or inside; `fork.rs` — pools inherited
//!   by a forked child, and what such a child keeps alive.
//! * The protocols: `gate.rs` (the loop gate), `slot.rs` (the broadcast
//!   slot), `sleep.rs` (the event count), `section.rs` (parallel
//!   sections), `adaptive.rs` (the adaptive spin budget), `budget.rs` (the
//!   process-wide CPU share across pools); `sync.rs` is the
//!   facade loom replaces; `profile.rs` the counters and the report;
//!   `trace.rs` the event trace (cargo feature `trace`; empty without it).
mod adaptive;
mod budget;
mod callers;
mod fork;
mod gate;
mod job;
mod membership;
mod parallel;
mod pool;
mod profile;
mod section;
mod shared;
mod sleep;
mod slot;
mod sync;
mod threads;
mod trace;
mod worker;

pub use callers::CallGuard;
pub use pool::ThreadPool;

/// The process-wide CPU share now (`budget.rs`): (threads inside loops of
/// pools that take part, counted once each; their helpers running a
/// share). Both 0 when no such loop is in progress.
pub fn cpu_share_counts() -> (u64, u64) {
    shared::cpu_share().counts()
}
pub use section::{begin_section, ParallelSection, SectionHandle};
