//! What the workers run: queued jobs, and one loop's shared state (the
//! caller's work with its borrow erased, and the first panic of any
//! participant).
use super::gate::Gate;
use super::profile::Profiling;
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// What each participant of `ThreadPool::run_in_parallel` runs, given its
/// participant number (0 = the caller); returns how many blocks it ran
/// (for profiling).
pub(crate) type Work<'a> = dyn Fn(usize) -> u64 + Sync + 'a;

/// A unit of work in a queue.
pub(super) enum Job {
    /// A scheduled task.
    Task(Box<dyn FnOnce() + Send + 'static>),
    /// An invitation to help with a parallel loop (the queue fallback).
    Help(Arc<QueuedLoop>),
}

/// Shared state of one parallel loop.
pub(super) struct LoopJob {
    /// The caller's work. Used only between a successful enter of the
    /// loop's gate and the matching leave, and the caller returns only
    /// after its gate's `close_and_wait`, so never after the borrow ends.
    pub(super) work: &'static Work<'static>,
    pub(super) panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// The CPU the last helper entered on (`u32::MAX`: none): the caller
    /// yields its CPU at the end gate only when it may share it with a
    /// helper still inside. Relaxed: a placement hint, read and written
    /// whole; the gate, not this, decides when the loop is done.
    pub(super) helper_cpu: AtomicU32,
}

/// A loop handed out through the queues: its own gate.
pub(super) struct QueuedLoop {
    pub(super) job: LoopJob,
    pub(super) gate: Gate,
}

impl LoopJob {
    /// A loop of `work`, no panic yet, no helper yet.
    pub(super) fn new(work: &'static Work<'static>) -> LoopJob {
        LoopJob {
            work,
            panic: Mutex::new(None),
            helper_cpu: AtomicU32::new(u32::MAX),
        }
    }

    /// A helper that entered notes its CPU.
    pub(super) fn note_helper_cpu(&self) {
        self.helper_cpu
            .store(crate::pool::cpu::current_cpu(), Ordering::Relaxed);
    }

    /// Whether the last helper entered on `cpu`.
    pub(super) fn helper_on(&self, cpu: u32) -> bool {
        cpu != u32::MAX && self.helper_cpu.load(Ordering::Relaxed) == cpu
    }

    /// Runs one participant's share; a panic is kept for the caller.
    /// Returns the blocks it ran.
    pub(super) fn run(
        &self,
        participant: usize,
        profiling: &Profiling,
        worker: Option<usize>,
    ) -> u64 {
        let t0 = profiling.clock();
        let blocks = match catch_unwind(AssertUnwindSafe(|| (self.work)(participant))) {
            Ok(blocks) => blocks,
            Err(p) => {
                let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
                slot.get_or_insert(p);
                0
            }
        };
        profiling.record(worker, blocks, t0);
        blocks
    }

    /// The first panic of any participant, taken out.
    pub(super) fn take_panic(&self) -> Option<Box<dyn Any + Send>> {
        self.panic.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}
