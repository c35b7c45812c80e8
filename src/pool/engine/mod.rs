//! The pool engine: the workers and their queues, sleep and wake, the
//! broadcast slot, parallel sections, Schedule, destroy, statistics and
//! profiling, and one entry that runs a piece of work on the caller plus up
//! to `k` helpers ([`ThreadPool::run_in_parallel`]). What a loop is (blocks,
//! the cost model, the iteration counter) lives one layer up, in
//! `super::loops`, which calls only this entry.
//!
//! Files: `worker.rs` (the worker loop: work, spin, sleep), `gate.rs` (the
//! one loop gate), `slot.rs` (the broadcast slot), `sleep.rs` (the event
//! count), `section.rs` (parallel sections), `profile.rs` (counters and
//! the profiling report), `fork.rs` (pools inherited by a forked child),
//! `adaptive.rs` (the adaptive spin budget), `sync.rs` (the primitives loom
//! replaces). The protocol and its
//! invariants are in `src/pool/README.md`.
mod adaptive;
mod fork;
mod gate;
mod profile;
mod section;
mod sleep;
mod slot;
mod sync;
mod worker;

use super::cpu;
use super::options::{CustomThreadHandle, JoinFnPtr, PoolOptions, FORCE_HYBRID_ENV};
use super::spin::SpinPolicy;
use crate::{Error, Result};
use crossbeam_deque::{Injector, Stealer, Worker};
use gate::Gate;
use profile::{CallerCounters, Counters};
use sleep::EventCount;
use slot::Slot;
use std::any::Any;
use std::cell::RefCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub use profile::PoolStats;
pub use section::{
    nested_section_error, section_open_on_this_thread, ParallelSection, SectionHandle,
};

/// Most jobs one queue holds before Schedule runs a task inline.
pub(crate) const QUEUE_CAPACITY: usize = 1024;
/// Polls of the gate before the owner of a loop blocks in its join.
const CLOSE_SPINS: u32 = 200;
/// Sleepers the owner of a loop wakes, and each woken worker wakes while the
/// loop still wants helpers (a wake-up tree of fan-out 2).
const CASCADE: usize = 2;

/// What each participant of [`ThreadPool::run_in_parallel`] runs, given its
/// participant number (0 = the caller); returns how many blocks it ran
/// (for profiling).
pub(crate) type Work<'a> = dyn Fn(usize) -> u64 + Sync + 'a;

/// A unit of work in a queue.
enum Job {
    /// A scheduled task.
    Task(Box<dyn FnOnce() + Send + 'static>),
    /// An invitation to help with a parallel loop (the queue fallback).
    Help(Arc<QueuedLoop>),
}

/// Keeps per-worker data on its own cache lines.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Padded<T>(pub(crate) T);

/// Shared state of one parallel loop: the work with its borrow erased, and
/// the first panic of any participant.
struct LoopJob {
    /// The caller's work. Used only between a successful enter of the
    /// loop's gate and the matching leave, and the caller returns only
    /// after its gate's `close_and_wait`, so never after the borrow ends.
    work: &'static Work<'static>,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

/// A loop handed out through the queues: its own gate.
struct QueuedLoop {
    job: LoopJob,
    gate: Gate,
}

/// State shared by the pool handle and its workers.
struct Shared {
    id: usize,
    injectors: Box<[Injector<Job>]>,
    stealers: Box<[Stealer<Job>]>,
    /// Idle workers sleep here.
    event: EventCount,
    /// The broadcast slot of the loop in progress (at most one at a time).
    slot: Slot<LoopJob>,
    /// The parallel section that owns the slot; 0: none.
    section_id: AtomicU64,
    /// Workers that joined that section (they stay until it ends).
    team: AtomicUsize,
    /// Section members wait here between the section's loops.
    team_event: EventCount,
    next_section: AtomicU64,
    shutdown: AtomicBool,
    spin_enabled: AtomicBool,
    /// Requests in progress: `enable_spinning` calls not yet matched by a
    /// `disable_spinning`.
    requests: AtomicUsize,
    force_stop: bool,
    loops_active: AtomicUsize,
    policy: SpinPolicy,
    /// The adaptive spin budget (`leanrt.intra_op.adaptive_spin`).
    adaptive: Option<adaptive::Adaptive>,
    counters: Box<[Padded<Counters>]>,
    callers: Padded<CallerCounters>,
    profiling: AtomicBool,
    profile_start: Mutex<Option<profile::Snapshot>>,
    next_victim: AtomicUsize,
    denormal_as_zero: bool,
    affinity: Option<Vec<Vec<usize>>>,
    dop: i32,
    dynamic_block_base: i32,
    /// `fork::generation()` when the pool was made: a different value
    /// means this is a forked child, where the workers do not exist.
    fork_generation: u64,
}

impl Shared {
    fn workers(&self) -> usize {
        self.injectors.len()
    }

    /// Wakes up to `n` idle workers, general sleepers and section members
    /// alike. Call after publishing what they should find.
    fn wake(&self, n: usize) {
        self.event.notify(n);
        self.team_event.notify(n);
    }
}

/// A worker's thread-local view: which pool, which index, its own deque.
struct WorkerLocal {
    pool: usize,
    index: usize,
    local: Worker<Job>,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<WorkerLocal>>> = const { RefCell::new(None) };
    /// Pools this thread is inside right now (a loop or an inline task of
    /// theirs runs on its stack).
    static INSIDE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The calling thread's worker record if it is a worker of pool `id`.
fn current(id: usize) -> Option<Rc<WorkerLocal>> {
    CURRENT.with(|c| c.borrow().as_ref().filter(|w| w.pool == id).cloned())
}

/// Marks the calling thread as inside pool `id` until dropped.
pub(crate) struct InUse(usize);

impl Drop for InUse {
    fn drop(&mut self) {
        INSIDE.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(at) = s.iter().rposition(|&p| p == self.0) {
                s.remove(at);
            }
        });
    }
}

static NEXT_POOL_ID: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    static RNG: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A cheap per-thread xorshift for victim selection.
fn random() -> u64 {
    RNG.with(|r| {
        let mut x = r.get();
        if x == 0 {
            x = (r as *const _ as u64) | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        r.set(x);
        x
    })
}

enum ThreadHandle {
    Std(std::thread::JoinHandle<()>),
    Custom(JoinFnPtr, usize),
}

/// An intra-op thread pool with ONNX Runtime's semantics. Any thread may
/// start loops or schedule tasks; dropping it runs every scheduled task,
/// then joins the workers.
pub struct ThreadPool {
    shared: Arc<Shared>,
    threads: Vec<ThreadHandle>,
}

/// What a new worker thread needs.
struct WorkerStart {
    shared: Arc<Shared>,
    index: usize,
    local: Worker<Job>,
}

/// Entry point handed to a custom create-thread function.
unsafe extern "C" fn custom_worker_entry(param: *mut c_void) {
    if param.is_null() {
        return;
    }
    // SAFETY: `param` is the pointer made by `Box::into_raw` in
    // `ThreadPool::spawn`; the create function's contract is to call this
    // entry exactly once with it.
    let start = unsafe { Box::from_raw(param.cast::<WorkerStart>()) };
    // Never unwind into the host's C frames.
    let _ = catch_unwind(AssertUnwindSafe(move || worker::main(*start)));
}

impl ThreadPool {
    /// Creates a pool. The thread count `n` is `opts`' (0: one per physical
    /// core, or the number of affinity entries + 1 when an affinity is set);
    /// `n == 1` gives `Ok(None)`, which every helper treats as "run serially
    /// on the caller" (the C API returns a NULL pool).
    pub fn create(opts: &PoolOptions) -> Result<Option<ThreadPool>> {
        let n = match (opts.num_threads, &opts.affinity) {
            (0, Some(a)) => a.len() + 1,
            (0, None) => cpu::physical_cores(),
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
            super::affinity::validate(a)?;
        }
        if n <= 1 {
            return Ok(None);
        }
        let workers = n - 1;
        let hybrid = opts.force_hybrid
            || std::env::var_os(FORCE_HYBRID_ENV).is_some_and(|v| v == "1")
            || cpu::is_hybrid();
        let dop = n as i32 * if hybrid { 4 } else { 1 };
        let locals: Vec<Worker<Job>> = (0..workers).map(|_| Worker::new_lifo()).collect();
        let policy = SpinPolicy::new(
            opts.allow_spinning,
            opts.spin_duration_us,
            opts.spin_backoff_max,
        );
        let shared = Arc::new(Shared {
            id: NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed),
            injectors: (0..workers).map(|_| Injector::new()).collect(),
            stealers: locals.iter().map(Worker::stealer).collect(),
            event: EventCount::new(),
            slot: Slot::new(),
            section_id: AtomicU64::new(0),
            team: AtomicUsize::new(0),
            team_event: EventCount::new(),
            next_section: AtomicU64::new(0),
            shutdown: AtomicBool::new(false),
            spin_enabled: AtomicBool::new(true),
            requests: AtomicUsize::new(0),
            force_stop: opts.force_spinning_stop,
            loops_active: AtomicUsize::new(0),
            policy,
            adaptive: opts
                .adaptive_spin
                .then(|| adaptive::Adaptive::new(&policy))
                .flatten(),
            counters: (0..workers).map(|_| Padded::default()).collect(),
            callers: Padded::default(),
            profiling: AtomicBool::new(false),
            profile_start: Mutex::new(None),
            next_victim: AtomicUsize::new(0),
            denormal_as_zero: opts.denormal_as_zero,
            affinity: opts.affinity.clone(),
            dop,
            dynamic_block_base: opts.dynamic_block_base,
            fork_generation: fork::watch(),
        });
        let mut pool = ThreadPool {
            shared,
            threads: Vec::with_capacity(workers),
        };
        for (index, local) in locals.into_iter().enumerate() {
            let start = WorkerStart {
                shared: pool.shared.clone(),
                index,
                local,
            };
            // On failure `pool` is dropped: the started workers are shut
            // down and joined.
            let handle = Self::spawn(opts, start)?;
            pool.threads.push(handle);
        }
        Ok(Some(pool))
    }

    fn spawn(opts: &PoolOptions, start: WorkerStart) -> Result<ThreadHandle> {
        let index = start.index;
        match opts.custom_threads {
            None => {
                let mut b = std::thread::Builder::new().name(format!("{}-{index}", opts.name));
                if opts.stack_size > 0 {
                    b = b.stack_size(opts.stack_size);
                }
                b.spawn(move || worker::main(start))
                    .map(ThreadHandle::Std)
                    .map_err(|e| {
                        Error::no_memory(format!("cannot start worker thread {index}: {e}"))
                    })
            }
            Some(fns) => {
                let param = Box::into_raw(Box::new(start)).cast::<c_void>();
                // SAFETY: calling the host's create function with ORT's
                // contract (accepted by the unsafe
                // `PoolOptions::set_custom_thread_fns`): it starts a thread
                // that calls `custom_worker_entry(param)` once, and returns
                // its handle.
                let handle = unsafe {
                    (fns.create)(
                        fns.create_options as *mut c_void,
                        Some(custom_worker_entry),
                        param,
                    )
                };
                if handle.is_null() {
                    // ORT's contract: NULL means no thread was started, so
                    // nothing will call `custom_worker_entry(param)` and the
                    // box (which holds a reference to the pool state) is
                    // ours again.
                    // SAFETY: `param` came from Box::into_raw above and, per
                    // that contract, was not handed to any thread.
                    drop(unsafe { Box::from_raw(param.cast::<WorkerStart>()) });
                    return Err(Error::no_memory(format!(
                        "the custom create-thread function returned NULL for worker {index}"
                    )));
                }
                Ok(ThreadHandle::Custom(fns.join, handle as usize))
            }
        }
    }

    /// True in a forked child of the process that made the pool: its
    /// workers do not exist here, so everything runs on the caller.
    fn forked(&self) -> bool {
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

    /// ORT's `dynamic_block_base` (0: Eigen's fixed blocks).
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
        shared.requests.fetch_add(1, Ordering::Relaxed);
        shared.spin_enabled.store(true, Ordering::Relaxed);
        if !self.forked() && shared.policy.pauses > 0 {
            shared.wake(usize::MAX);
        }
    }

    /// A request ends: when no `enable_spinning` is left unmatched (or
    /// none was made), spinning workers stop spinning and go to sleep at
    /// once (they test the flag every spin iteration), and idle workers
    /// sleep without spinning until the next `enable_spinning`.
    pub fn disable_spinning(&self) {
        let shared = &self.shared;
        let left = shared
            .requests
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_sub(1))
            })
            .map_or(0, |n| n.saturating_sub(1));
        if left == 0 {
            shared.spin_enabled.store(false, Ordering::Relaxed);
        }
    }

    /// Counters summed over the workers.
    pub fn stats(&self) -> PoolStats {
        profile::stats(&self.shared.counters)
    }

    /// Starts (or restarts) profiling: [`stop_profiling`](Self::stop_profiling)
    /// reports what each thread did from now on. `ErrorKind::State` in a
    /// forked child.
    pub fn start_profiling(&self) -> Result<()> {
        if self.forked() {
            return Err(Error::state(
                "this pool was inherited across fork(); its workers do not exist in this process",
            ));
        }
        let snap = profile::Snapshot::take(&self.shared.counters, &self.shared.callers.0);
        *self
            .shared
            .profile_start
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(snap);
        self.shared.profiling.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Stops profiling and returns the per-thread figures since
    /// [`start_profiling`](Self::start_profiling) as JSON (schema in
    /// docs/POOL.md). `ErrorKind::State` if profiling was not started.
    pub fn stop_profiling(&self) -> Result<String> {
        if self.forked() {
            return Err(Error::state(
                "this pool was inherited across fork(); its workers do not exist in this process",
            ));
        }
        let start = self
            .shared
            .profile_start
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| Error::state("profiling was not started on this pool"))?;
        self.shared.profiling.store(false, Ordering::Relaxed);
        let now = profile::Snapshot::take(&self.shared.counters, &self.shared.callers.0);
        Ok(profile::report(&start, &now))
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
            let q = &shared.injectors[victim];
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
        INSIDE.with(|s| s.borrow_mut().push(self.shared.id));
        InUse(self.shared.id)
    }

    /// Whether destroying the pool from the calling thread is safe: not
    /// from one of its own workers (a task or loop body running there), and
    /// not from a loop body or inline task of this pool on another thread.
    /// `ErrorKind::State` otherwise; the pool is then left as it is.
    pub fn check_destroy_here(&self) -> Result<()> {
        if current(self.shared.id).is_some() {
            return Err(Error::state(
                "called from one of the pool's own worker threads (a task or loop body); \
                 the pool is left intact",
            ));
        }
        if INSIDE.with(|s| s.borrow().contains(&self.shared.id)) {
            return Err(Error::state(
                "called from a loop body or task running on this pool; the pool is left intact",
            ));
        }
        Ok(())
    }

    /// Helpers a loop started on the calling thread may have: every other
    /// worker (none in a forked child).
    pub(crate) fn max_helpers(&self) -> usize {
        if self.forked() {
            return 0;
        }
        let me = CURRENT.with(|c| {
            c.borrow()
                .as_ref()
                .is_some_and(|w| w.pool == self.shared.id)
        });
        self.shared.workers() - usize::from(me)
    }

    /// Runs `work(0)` on the caller and `work(p)` on each of up to
    /// `helpers` idle workers that join (p = 1, 2, ...); returns when every
    /// participant is done. A panic of any participant is rethrown here
    /// once all of them are done.
    ///
    /// How the work reaches the workers: inside a parallel section that
    /// this thread leads, through the slot the section owns (its members
    /// are waiting for it); else through the broadcast slot if it is free;
    /// else (a loop nested in a loop body, or several threads' loops at
    /// once) as `Help` jobs in the other workers' queues. The caller always
    /// takes part, so the loop completes even if no helper comes.
    pub(crate) fn run_in_parallel(&self, helpers: usize, work: &Work<'_>) {
        let shared = &*self.shared;
        let helpers = helpers.min(self.max_helpers()).min(gate::MAX_HELPERS);
        if helpers == 0 {
            let t0 = shared.profiling.load(Ordering::Relaxed).then(Instant::now);
            let blocks = work(0);
            if t0.is_some() {
                let me = current(shared.id).map(|w| w.index);
                profile::record(shared, me, blocks, t0);
            }
            return;
        }
        // SAFETY: extends the borrow of `work` to 'static for the LoopJob.
        // The gate protocol (gate.rs) guarantees that no helper calls it
        // after this function returns or unwinds: helpers call it only
        // between a successful enter and the matching leave, and we return
        // only after the matching `close_and_wait` saw nobody inside; our
        // own call is wrapped in catch_unwind, and nothing between
        // publishing and that wait unwinds. The same holds for the
        // `LoopJob`, which lives on this stack frame when it is published
        // through the slot.
        let work: &'static Work<'static> =
            unsafe { std::mem::transmute::<&Work<'_>, &'static Work<'static>>(work) };
        let job = LoopJob {
            work,
            panic: Mutex::new(None),
        };
        let me = current(shared.id).map(|w| w.index);
        if shared.force_stop {
            shared.loops_active.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(a) = &shared.adaptive {
            a.loop_started();
        }
        if let Some(tag) = section::lead_loop(shared) {
            // A loop of the section this thread leads: the slot is ours
            // already; members wait on the team event, newcomers (if the
            // team is smaller than this loop wants) on the general one.
            let team = shared.team.load(Ordering::Relaxed);
            shared.slot.publish(&job, helpers, tag);
            shared.team_event.notify(usize::MAX);
            if team < helpers {
                shared.event.notify((helpers - team).min(CASCADE));
            }
            job.run(0, shared, me);
            shared.slot.close_and_wait(CLOSE_SPINS);
            section::loop_done();
        } else if shared.slot.try_open(&job, helpers, 0) {
            // Cascade wake: at most CASCADE sleepers from here; each one that
            // wakes while the loop still wants helpers wakes CASCADE more.
            shared.event.notify(helpers.min(CASCADE));
            job.run(0, shared, me);
            shared.slot.close_and_wait(CLOSE_SPINS);
            shared.slot.release();
        } else {
            let queued = Arc::new(QueuedLoop {
                job,
                gate: Gate::opened(helpers),
            });
            let workers = shared.workers();
            let start = shared.next_victim.fetch_add(helpers, Ordering::Relaxed);
            let mut pushed = 0;
            for k in 0..workers {
                if pushed == helpers {
                    break;
                }
                let v = (start + k) % workers;
                if Some(v) == me || shared.injectors[v].len() >= QUEUE_CAPACITY {
                    continue;
                }
                pushed += 1;
                shared.injectors[v].push(Job::Help(queued.clone()));
            }
            shared.wake(pushed);
            queued.job.run(0, shared, me);
            queued.gate.close_and_wait(CLOSE_SPINS);
            return self.finish_loop(&queued.job);
        }
        self.finish_loop(&job);
    }

    /// After the join: loop accounting, then rethrow a panic of the work.
    fn finish_loop(&self, job: &LoopJob) {
        if self.shared.force_stop {
            self.shared.loops_active.fetch_sub(1, Ordering::Relaxed);
        }
        if let Some(a) = &self.shared.adaptive {
            a.loop_ended();
        }
        let panic = job.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(p) = panic {
            resume_unwind(p);
        }
    }
}

impl LoopJob {
    /// Runs one participant's share; a panic is kept for the caller.
    fn run(&self, participant: usize, shared: &Shared, worker: Option<usize>) {
        let t0 = shared.profiling.load(Ordering::Relaxed).then(Instant::now);
        let blocks = match catch_unwind(AssertUnwindSafe(|| (self.work)(participant))) {
            Ok(blocks) => blocks,
            Err(p) => {
                let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
                slot.get_or_insert(p);
                0
            }
        };
        profile::record(shared, worker, blocks, t0);
    }
}

/// What a forked child keeps of a destroyed inherited pool: its shared
/// state and thread handles, reachable from a static list for the rest of
/// the child's life (see `Drop`: they cannot be freed safely).
struct Kept {
    _shared: Arc<Shared>,
    _threads: Vec<ThreadHandle>,
    next: *mut Kept,
}

static KEPT: AtomicPtr<Kept> = AtomicPtr::new(std::ptr::null_mut());

fn keep_inherited(shared: Arc<Shared>, threads: Vec<ThreadHandle>) {
    let node = Box::into_raw(Box::new(Kept {
        _shared: shared,
        _threads: threads,
        next: std::ptr::null_mut(),
    }));
    let mut head = KEPT.load(Ordering::Relaxed);
    loop {
        // SAFETY: `node` is ours until the CAS below publishes it; nothing
        // reads the list (it only keeps the nodes reachable).
        unsafe { (*node).next = head };
        match KEPT.compare_exchange_weak(head, node, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => head = now,
        }
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        if self.forked() {
            // A forked child: the workers do not exist here, and the
            // queues and locks are a copy of the parent's that a thread
            // which no longer exists may have been changing. Touch none of
            // it: no join, no drain, no free; the state stays reachable
            // (a leak checker sees it as such) until the child exits.
            keep_inherited(self.shared.clone(), std::mem::take(&mut self.threads));
            return;
        }
        let shared = &*self.shared;
        // A section left open ends here (its handle's end then does
        // nothing).
        if shared.section_id.swap(0, Ordering::AcqRel) != 0 {
            shared.slot.release();
        }
        shared.shutdown.store(true, Ordering::SeqCst);
        shared.event.notify(usize::MAX);
        shared.team_event.notify(usize::MAX);
        // Dropped from one of its own workers (a Rust task that owned the
        // pool): that thread cannot join itself; it leaves its loop once
        // the task returns, because shutdown is set.
        let me = current(shared.id).map(|w| w.index);
        for (index, t) in self.threads.drain(..).enumerate() {
            if Some(index) == me {
                continue;
            }
            match t {
                ThreadHandle::Std(h) => {
                    let _ = h.join();
                }
                // SAFETY: `h` is the handle the host's create function
                // returned for a worker; join is called once per handle.
                ThreadHandle::Custom(join, h) => unsafe { join(h as CustomThreadHandle) },
            }
        }
        // Anything still queued (pushed by a task while the other workers
        // were leaving, or never started) runs here.
        worker::drain(shared);
    }
}
