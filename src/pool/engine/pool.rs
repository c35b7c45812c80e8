//! [`ThreadPool`], the handle: create (the shared state and the workers),
//! the accessors, the spinning switch, statistics and profiling, Schedule
//! and destroy. Loops enter the engine through `parallel.rs`.
//!
//! Destroy (`Drop`): ends a section left open, sets `shutdown`, notifies
//! both event counts and joins the workers (`threads.rs`). A worker exits
//! only when shutdown is set and a full scan found nothing; jobs pushed
//! after that can only come from a worker still running (to its own deque,
//! which it drains) or be loop helpers no longer needed, and whatever is
//! left is run by `Drop` itself after the join, so every scheduled task
//! runs before destroy returns. From inside the pool the C API refuses
//! ([`ThreadPool::check_destroy_here`]); in Rust only the last owner can
//! drop the pool, so a drop on a worker is a task that owned it: that
//! worker is not joined (it cannot join itself) and leaves once the task
//! returns. In a forked child, `Drop` touches nothing (`fork.rs`).
use super::adaptive::{caller_number, Adaptive};
use super::callers::{CallGuard, Callers};
use super::membership::{self, current, InUse};
use super::profile::Profiling;
use super::shared::{Queues, Sections, Shared, SpinControl, WorkerSetup};
use super::sleep::EventCount;
use super::slot::Slot;
use super::threads::{self, ThreadHandle};
use super::trace::{self, Ev};
use super::worker::{self, random, WorkerStart};
use super::{fork, job::Job};
use crate::alloc::{self, try_collect, try_vec};
use crate::pool::abi::{lrt_pool_stats, LRT_POOL_MAX_THREADS};
use crate::pool::cpu;
use crate::pool::options::{self, PoolOptions};
use crate::pool::spin::SpinPolicy;
use crate::{Error, Result};
use crossbeam_deque::{Injector, Worker};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Most jobs one queue holds before Schedule runs a task inline.
pub(crate) const QUEUE_CAPACITY: usize = 1024;

static NEXT_POOL_ID: AtomicUsize = AtomicUsize::new(1);

/// An intra-op thread pool with ONNX Runtime's semantics. Any thread may
/// start loops or schedule tasks; dropping it runs every scheduled task,
/// then joins the workers.
pub struct ThreadPool {
    pub(super) shared: Arc<Shared>,
    threads: Vec<ThreadHandle>,
    /// The C calls inside the pool right now (`callers.rs`).
    callers: Callers,
}

impl ThreadPool {
    /// Creates a pool. The thread count `n` is `opts`' (0: one per physical
    /// core, at most `LRT_POOL_MAX_THREADS`, or the number of affinity
    /// entries + 1 when an affinity is set, which has at most
    /// `LRT_POOL_MAX_THREADS - 1`);
    /// `n == 1` gives `Ok(None)`, which every helper treats as "run serially
    /// on the caller" (the C API returns a NULL pool).
    pub fn create(opts: &PoolOptions) -> Result<Option<ThreadPool>> {
        let n = match (opts.num_threads, &opts.affinity) {
            (0, Some(a)) => a.len() + 1,
            (0, None) => cpu::physical_cores().min(LRT_POOL_MAX_THREADS as usize),
            (n, _) => n.max(1) as usize,
        };
        if let Some(a) = &opts.affinity {
            if a.len() != n - 1 {
                return Err(Error::invalid_argument(format!(
                    "affinity has {} entries; a pool of {n} threads needs {} (one per worker)",
                    a.len(),
                    n - 1
                )));
            }
            crate::pool::affinity::validate(a)?;
        }
        if n <= 1 {
            return Ok(None);
        }
        let workers = n - 1;
        let hybrid = opts.force_hybrid || options::force_hybrid_from_env() || cpu::is_hybrid();
        let dop = n as i32 * if hybrid { 4 } else { 1 };
        // Every table sized by the thread count is allocated fallibly; the
        // small per-worker queues are not, so stop at the first the
        // emergency reserve had to serve (`crate::alloc`).
        let mut locals: Vec<Worker<Job>> = try_vec(workers)?;
        let mut injectors: Vec<Injector<Job>> = try_vec(workers)?;
        for _ in 0..workers {
            locals.push(Worker::new_lifo());
            injectors.push(Injector::new());
            alloc::check()?;
        }
        let stealers = try_collect(locals.iter().map(Worker::stealer))?;
        let affinity = match &opts.affinity {
            Some(a) => Some(crate::pool::affinity::try_clone(a)?),
            None => None,
        };
        let profiling = Profiling::new(workers)?;
        let policy = SpinPolicy::new(
            opts.allow_spinning,
            opts.spin_duration_us,
            opts.spin_backoff_max,
        );
        let shared = Arc::new(Shared {
            id: NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed),
            queues: Queues {
                injectors: injectors.into_boxed_slice(),
                stealers: stealers.into_boxed_slice(),
                next_victim: AtomicUsize::new(0),
            },
            event: EventCount::new(),
            slot: Slot::new(),
            sections: Sections {
                id: AtomicU64::new(0),
                team: AtomicUsize::new(0),
                team_event: EventCount::new(),
                next: AtomicU64::new(0),
            },
            shutdown: AtomicBool::new(false),
            spin: SpinControl {
                enabled: AtomicBool::new(true),
                requests: AtomicUsize::new(0),
                enables: AtomicU64::new(0),
                force_stop: opts.force_spinning_stop,
                loops_active: AtomicUsize::new(0),
                policy,
                adaptive: opts
                    .adaptive_spin()
                    .then(|| Adaptive::new(&policy))
                    .flatten(),
                caller_cpu: AtomicU32::new(u32::MAX),
                caller: AtomicU64::new(0),
                other_cpu: AtomicU64::new(0),
            },
            profiling,
            setup: WorkerSetup {
                denormal_as_zero: opts.denormal_as_zero,
                affinity,
            },
            dop,
            dynamic_block_base: opts.dynamic_block_base,
            cpu_budget: opts.cpu_budget,
            fork_generation: fork::watch(),
        });
        alloc::check()?;
        let mut pool = ThreadPool {
            shared,
            threads: try_vec(workers)?,
            callers: Callers::new(),
        };
        for (index, local) in locals.into_iter().enumerate() {
            let start = WorkerStart {
                shared: pool.shared.clone(),
                index,
                local,
            };
            // On failure `pool` is dropped: the started workers are shut
            // down and joined.
            let handle = threads::spawn(opts, start)?;
            pool.threads.push(handle);
            alloc::check()?;
        }
        Ok(Some(pool))
    }

    /// True in a forked child of the process that made the pool: its
    /// workers do not exist here, so everything runs on the caller.
    pub(super) fn forked(&self) -> bool {
        fork::generation() != self.shared.fork_generation
    }

    /// Worker threads (ORT's `NumThreads()`): the thread count minus one.
    pub fn num_threads(&self) -> i32 {
        self.shared.workers() as i32
    }

    /// Degree of parallelism: thread count (workers + caller), ×4 on hybrid
    /// CPUs or when forced.
    pub fn degree_of_parallelism(&self) -> i32 {
        self.shared.dop
    }

    /// ORT's `dynamic_block_base` (0: fixed blocks).
    pub(crate) fn dynamic_block_base(&self) -> i32 {
        self.shared.dynamic_block_base
    }

    /// 0..num_threads()-1 on a worker of this pool, -1 elsewhere.
    pub fn current_thread_id(&self) -> i32 {
        current(self.shared.id).map_or(-1, |w| w.index as i32)
    }

    /// A request starts (ORT's spinning switch): restores the configured
    /// spin policy and wakes the sleeping workers at once, without waiting
    /// for them, so that they are spinning when the request's first loop
    /// comes. Counted: spinning stays on until every `enable_spinning` has
    /// been matched by a `disable_spinning` (with `force_spinning_stop`,
    /// workers may spin while a request is open even between loops).
    pub fn enable_spinning(&self) {
        let shared = &self.shared;
        // The caller's CPU first, then the permission to spin (see
        // `SpinControl::caller_cpu`).
        shared.note_caller_cpu(caller_number());
        shared.spin.requests.fetch_add(1, Ordering::Relaxed);
        shared.spin.enabled.store(true, Ordering::Relaxed);
        let wake = !self.forked() && shared.spin.policy.pauses > 0;
        let who = trace::who(current(shared.id).map(|w| w.index));
        trace::record(shared.id, who, Ev::Enable, u64::from(wake));
        if wake {
            shared.spin.enables.fetch_add(1, Ordering::Release);
            shared.wake(usize::MAX);
        }
    }

    /// A request ends: when no `enable_spinning` is left unmatched (or
    /// none was made), spinning workers stop spinning and go to sleep at
    /// once (they test the flag every spin iteration), and idle workers
    /// sleep without spinning until the next `enable_spinning`.
    pub fn disable_spinning(&self) {
        let spin = &self.shared.spin;
        let left = spin
            .requests
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_sub(1))
            })
            .map_or(0, |n| n.saturating_sub(1));
        if left == 0 {
            spin.enabled.store(false, Ordering::Relaxed);
        }
        let who = trace::who(current(self.shared.id).map(|w| w.index));
        trace::record(self.shared.id, who, Ev::Disable, u64::from(left == 0));
    }

    /// Counters summed over the workers.
    pub fn stats(&self) -> lrt_pool_stats {
        self.shared.profiling.stats()
    }

    /// `ErrorKind::State` in a forked child (for the calls that need the
    /// workers).
    fn refuse_forked(&self) -> Result<()> {
        if self.forked() {
            return Err(Error::state(
                "this pool was inherited across fork(); its workers do not exist in this process",
            ));
        }
        Ok(())
    }

    /// Starts (or restarts) profiling: [`stop_profiling`](Self::stop_profiling)
    /// reports what each thread did from now on. `ErrorKind::State` in a
    /// forked child.
    pub fn start_profiling(&self) -> Result<()> {
        self.refuse_forked()?;
        self.shared.profiling.start()
    }

    /// Stops profiling and returns the per-thread figures since
    /// [`start_profiling`](Self::start_profiling) as JSON (schema in
    /// docs/POOL.md). `ErrorKind::State` if profiling was not started.
    pub fn stop_profiling(&self) -> Result<String> {
        self.refuse_forked()?;
        self.shared.profiling.stop()
    }

    /// Runs `task` on a worker: from a worker of this pool it goes to that
    /// worker's own queue, from elsewhere to a random worker's queue; if
    /// that queue is full (or in a forked child) the task runs inline on
    /// the caller.
    pub fn schedule(&self, task: Box<dyn FnOnce() + Send + 'static>) {
        let shared = &self.shared;
        if self.forked() {
            let _in = self.in_use();
            return task();
        }
        if let Some(me) = current(shared.id) {
            if me.local.len() >= QUEUE_CAPACITY {
                return task();
            }
            me.local.push(Job::Task(task));
        } else {
            let victim = (random() % shared.workers() as u64) as usize;
            let q = &shared.queues.injectors[victim];
            if q.len() >= QUEUE_CAPACITY {
                let _in = self.in_use();
                return task();
            }
            q.push(Job::Task(task));
        }
        shared.wake(1);
    }

    /// Marks the calling thread as inside this pool (running one of its
    /// loops or an inline task) until the guard is dropped.
    pub(crate) fn in_use(&self) -> InUse {
        membership::enter(self.shared.id)
    }

    /// Whether destroying the pool from the calling thread is safe: not
    /// from one of its own workers (a task or loop body running there), and
    /// not from a loop body or inline task of this pool on another thread.
    /// `ErrorKind::State` otherwise; the pool is then left as it is.
    ///
    /// Through the C API, other threads may still be inside calls on the
    /// pool: then destroy is refused as well (`ErrorKind::State`, the pool
    /// intact); once this returns `Ok` the pool is closed to new calls
    /// (`callers.rs`) and must be dropped.
    pub fn check_destroy_here(&self) -> Result<()> {
        if current(self.shared.id).is_some() {
            return Err(Error::state(
                "called from one of the pool's own worker threads (a task or loop body); \
                 the pool is left intact",
            ));
        }
        if membership::is_inside(self.shared.id) {
            return Err(Error::state(
                "called from a loop body or task running on this pool; the pool is left intact",
            ));
        }
        if self.forked() {
            // The parent's other threads do not exist in a forked child.
            return Ok(());
        }
        self.callers.close().map_err(|inside| {
            Error::state(format!(
                "{inside} other thread(s) are inside calls on this pool; the pool is left \
                 intact (destroy it once they have returned)"
            ))
        })
    }

    /// Marks a C call on the pool as in progress until the guard drops, so
    /// that a destroy racing it is refused (`callers.rs`). Calls from the
    /// pool's own workers are not counted (destroy joins them).
    /// `ErrorKind::State` on a pool whose destroy has begun.
    pub fn enter_call(&self) -> Result<CallGuard<'_>> {
        if current(self.shared.id).is_some() {
            return Ok(CallGuard::worker());
        }
        // Thread descriptors are page-aligned: the multiply mixes the high
        // bits of the id into the shard number.
        let id = crate::pool::os_thread::current_id() as u64;
        let shard = (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize;
        self.callers
            .enter(shard)
            .map(CallGuard::caller)
            .ok_or_else(|| Error::state("the pool is being destroyed"))
    }

    /// Helpers a loop started on the calling thread may have: every other
    /// worker (none in a forked child).
    pub(crate) fn max_helpers(&self) -> usize {
        if self.forked() {
            return 0;
        }
        let me = current(self.shared.id).is_some();
        self.shared.workers() - usize::from(me)
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        if self.forked() {
            // A forked child: the workers do not exist here. Touch none of
            // the copied state: no join, no drain, no free (`fork.rs`).
            let threads = std::mem::take(&mut self.threads);
            fork::keep_inherited(Box::new((self.shared.clone(), threads)));
            return;
        }
        let shared = &*self.shared;
        // A section left open ends here (its handle's end then does
        // nothing).
        if shared.sections.id.swap(0, Ordering::AcqRel) != 0 {
            shared.slot.release();
        }
        shared.shutdown.store(true, Ordering::SeqCst);
        shared.event.notify(usize::MAX);
        shared.sections.team_event.notify(usize::MAX);
        // Dropped from one of its own workers (a Rust task that owned the
        // pool): that thread cannot join itself; it leaves its loop once
        // the task returns, because shutdown is set.
        let me = current(shared.id).map(|w| w.index);
        threads::join_all(std::mem::take(&mut self.threads), me);
        // Anything still queued (pushed by a task while the other workers
        // were leaving, or never started) runs here.
        worker::drain(shared);
        trace::dump(shared.id);
    }
}
