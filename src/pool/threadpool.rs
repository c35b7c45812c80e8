//! The pool itself: workers, queues, Schedule, the worker loop
//! (work -> spin -> sleep), destroy, stats.
//!
//! Queues: worker `i` owns a LIFO crossbeam `Worker` (only it pushes there:
//! tasks scheduled from inside the pool) and is the preferred consumer of
//! `injectors[i]` (tasks scheduled from outside, loop helpers). Idle workers
//! steal from every other queue. Each queue is bounded at
//! [`QUEUE_CAPACITY`] by a length check before the push; a push that would
//! exceed it runs the task inline on the caller instead, as ORT does.
//!
//! Invariants (see README.md):
//! * A worker only sleeps after `EventCount::prepare` followed by a scan of
//!   every queue (and the shutdown flag) that found nothing.
//! * Every push, and every loop published in the section slot, is followed
//!   by `EventCount::notify`; the scan after `prepare` checks the slot too.
//! * A worker only exits after shutdown was set *and* a full scan found no
//!   job; jobs pushed later can only come from a still-running worker (to
//!   its own queue) or be loop helpers, which that worker's loop no longer
//!   needs. `Drop` runs whatever is left after joining the workers, so every
//!   scheduled task runs before destroy returns.
use super::options::{CustomThreadHandle, JoinFnPtr, PoolOptions, FORCE_HYBRID_ENV};
use super::parallel::LoopState;
use super::section::Section;
use super::sleep::EventCount;
use super::spin::{Backoff, SpinPolicy, DEADLINE_CHECK_EVERY};
use super::{affinity, cpu};
use crate::{Error, Result};
use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use std::cell::RefCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most jobs one queue holds before Schedule runs a task inline.
pub const QUEUE_CAPACITY: usize = 1024;

/// Statistics of a pool, summed over its workers (`lrt_pool_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Jobs run by worker threads (scheduled tasks and loop helper jobs;
    /// tasks run inline on a caller are not counted).
    pub tasks_run: u64,
    /// Jobs a worker took from another worker's queues.
    pub steals: u64,
    /// Spin iterations (polls of the queues while spinning).
    pub spin_iterations: u64,
    /// Times a worker went to sleep.
    pub parks: u64,
    /// Times a sleeping worker was woken.
    pub wakeups: u64,
    /// Workers asleep right now.
    pub workers_asleep: u64,
}

/// A unit of work in a queue.
pub(super) enum Job {
    /// A scheduled task.
    Task(Box<dyn FnOnce() + Send + 'static>),
    /// An invitation to help with a parallel loop, as participant `.1`.
    Help(Arc<LoopState>, usize),
}

/// Keeps per-worker data on its own cache lines.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct Padded<T>(pub(super) T);

/// Per-worker counters; only that worker writes them (so plain
/// load + store, no RMW), anyone reads them for stats.
#[derive(Default)]
struct Counters {
    tasks_run: AtomicU64,
    steals: AtomicU64,
    spin_iterations: AtomicU64,
    parks: AtomicU64,
    wakeups: AtomicU64,
    asleep: AtomicU64,
}

fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// State shared by the pool handle and its workers.
pub(super) struct Shared {
    pub(super) id: usize,
    pub(super) injectors: Box<[Injector<Job>]>,
    stealers: Box<[Stealer<Job>]>,
    pub(super) event: EventCount,
    /// The broadcast slot of the loop in progress (at most one at a time).
    pub(super) section: Section<LoopState>,
    shutdown: AtomicBool,
    spin_enabled: AtomicBool,
    force_stop: bool,
    pub(super) loops_active: AtomicUsize,
    policy: SpinPolicy,
    counters: Box<[Padded<Counters>]>,
    pub(super) next_victim: AtomicUsize,
    denormal_as_zero: bool,
    affinity: Option<Vec<Vec<usize>>>,
    pub(super) dop: i32,
    pub(super) dynamic_block_base: i32,
}

impl Shared {
    pub(super) fn workers(&self) -> usize {
        self.injectors.len()
    }
    pub(super) fn force_stop(&self) -> bool {
        self.force_stop
    }
}

/// A worker's thread-local view: which pool, which index, its own deque.
pub(super) struct WorkerLocal {
    pub(super) pool: usize,
    pub(super) index: usize,
    local: Worker<Job>,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<WorkerLocal>>> = const { RefCell::new(None) };
}

/// The calling thread's worker record if it is a worker of pool `id`.
pub(super) fn current(id: usize) -> Option<Rc<WorkerLocal>> {
    CURRENT.with(|c| c.borrow().as_ref().filter(|w| w.pool == id).cloned())
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

/// An intra-op thread pool with ONNX Runtime's semantics. `Send + Sync`:
/// any thread may start loops or schedule tasks; dropping it runs every
/// scheduled task, then joins the workers. Must not be dropped from one of
/// its own workers.
pub struct ThreadPool {
    pub(super) shared: Arc<Shared>,
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
    let _ = catch_unwind(AssertUnwindSafe(move || worker_main(*start)));
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
            affinity::validate(a)?;
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
        let shared = Arc::new(Shared {
            id: NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed),
            injectors: (0..workers).map(|_| Injector::new()).collect(),
            stealers: locals.iter().map(Worker::stealer).collect(),
            event: EventCount::new(),
            section: Section::new(),
            shutdown: AtomicBool::new(false),
            spin_enabled: AtomicBool::new(true),
            force_stop: opts.force_spinning_stop,
            loops_active: AtomicUsize::new(0),
            policy: SpinPolicy::new(
                opts.allow_spinning,
                opts.spin_duration_us,
                opts.spin_backoff_max,
            ),
            counters: (0..workers).map(|_| Padded::default()).collect(),
            next_victim: AtomicUsize::new(0),
            denormal_as_zero: opts.denormal_as_zero,
            affinity: opts.affinity.clone(),
            dop,
            dynamic_block_base: opts.dynamic_block_base,
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
            None => std::thread::Builder::new()
                .name(format!("{}-{index}", opts.name))
                .spawn(move || worker_main(start))
                .map(ThreadHandle::Std)
                .map_err(|e| Error::no_memory(format!("cannot start worker thread {index}: {e}"))),
            Some(fns) => {
                let param = Box::into_raw(Box::new(start)).cast::<c_void>();
                // SAFETY: calling the host's create function with ORT's
                // contract: it starts a thread that calls
                // `custom_worker_entry(param)` once, and returns its handle.
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

    /// Worker threads (ORT's `NumThreads()`): the thread count minus one.
    pub fn num_threads(&self) -> i32 {
        self.shared.workers() as i32
    }

    /// Degree of parallelism: thread count (workers + caller), ×4 on hybrid
    /// CPUs or when forced.
    pub fn degree_of_parallelism(&self) -> i32 {
        self.shared.dop
    }

    /// 0..num_threads()-1 on a worker of this pool, -1 elsewhere.
    pub fn current_thread_id(&self) -> i32 {
        current(self.shared.id).map_or(-1, |w| w.index as i32)
    }

    /// Restores the configured spin policy.
    pub fn enable_spinning(&self) {
        self.shared.spin_enabled.store(true, Ordering::Relaxed);
    }

    /// Spinning workers stop spinning and go to sleep at once (they test
    /// the flag every spin iteration); idle workers sleep without spinning.
    pub fn disable_spinning(&self) {
        self.shared.spin_enabled.store(false, Ordering::Relaxed);
    }

    /// Counters summed over the workers.
    pub fn stats(&self) -> PoolStats {
        let mut s = PoolStats::default();
        for c in self.shared.counters.iter() {
            let c = &c.0;
            s.tasks_run += c.tasks_run.load(Ordering::Relaxed);
            s.steals += c.steals.load(Ordering::Relaxed);
            s.spin_iterations += c.spin_iterations.load(Ordering::Relaxed);
            s.parks += c.parks.load(Ordering::Relaxed);
            s.wakeups += c.wakeups.load(Ordering::Relaxed);
            s.workers_asleep += c.asleep.load(Ordering::Relaxed);
        }
        s
    }

    /// Runs `task` on a worker: from a worker of this pool it goes to that
    /// worker's own queue, from elsewhere to a random worker's queue; if
    /// that queue is full the task runs inline on the caller.
    pub fn schedule(&self, task: Box<dyn FnOnce() + Send + 'static>) {
        let shared = &self.shared;
        if let Some(me) = current(shared.id) {
            if me.local.len() >= QUEUE_CAPACITY {
                return task();
            }
            me.local.push(Job::Task(task));
        } else {
            let victim = (random() % shared.workers() as u64) as usize;
            let q = &shared.injectors[victim];
            if q.len() >= QUEUE_CAPACITY {
                return task();
            }
            q.push(Job::Task(task));
        }
        shared.event.notify(1);
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.event.notify(usize::MAX);
        for t in self.threads.drain(..) {
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
        loop {
            let mut any = false;
            for q in self.shared.injectors.iter() {
                while let Some(job) = steal_retrying(|| q.steal()) {
                    run_job(job);
                    any = true;
                }
            }
            for s in self.shared.stealers.iter() {
                while let Some(job) = steal_retrying(|| s.steal()) {
                    run_job(job);
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
    }
}

fn steal_retrying(mut f: impl FnMut() -> Steal<Job>) -> Option<Job> {
    loop {
        match f() {
            Steal::Success(j) => return Some(j),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

fn run_job(job: Job) {
    match job {
        Job::Task(f) => {
            if catch_unwind(AssertUnwindSafe(f)).is_err() {
                crate::diag::warn("a task scheduled on the thread pool panicked");
            }
        }
        Job::Help(state, participant) => state.help(participant),
    }
}

/// Finds a job: own deque, own injector, then the other workers' injectors
/// and deques starting at a random one. `None` only after a scan in which
/// every queue was empty (no `Retry` left unresolved), or early when a loop
/// was published in the section slot meanwhile (the caller checks the slot
/// next, and its later scans cover the queues).
fn find_job(shared: &Shared, me: &WorkerLocal, counters: &Counters) -> Option<Job> {
    if let Some(j) = me.local.pop() {
        return Some(j);
    }
    let n = shared.workers();
    loop {
        let mut retry = false;
        match shared.injectors[me.index].steal_batch_and_pop(&me.local) {
            Steal::Success(j) => return Some(j),
            Steal::Retry => retry = true,
            Steal::Empty => {}
        }
        let start = (random() % n as u64) as usize;
        for k in 0..n {
            let v = (start + k) % n;
            if v == me.index {
                continue;
            }
            if shared.section.joinable() {
                return None;
            }
            // Evaluated one at a time: a steal that succeeds hands over a job.
            for from_deque in [false, true] {
                let s = if from_deque {
                    shared.stealers[v].steal()
                } else {
                    shared.injectors[v].steal_batch_and_pop(&me.local)
                };
                match s {
                    Steal::Success(j) => {
                        bump(&counters.steals, 1);
                        return Some(j);
                    }
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
        }
        if !retry {
            return None;
        }
    }
}

/// True if any queue this worker can take from is non-empty.
fn has_work(shared: &Shared, me: &WorkerLocal) -> bool {
    !me.local.is_empty()
        || shared.injectors.iter().any(|q| !q.is_empty())
        || shared.stealers.iter().any(|s| !s.is_empty())
}

/// Joins the loop published in the section slot, if it still admits
/// helpers, and works on it until its counter is exhausted.
fn help_section(shared: &Shared) -> bool {
    let Some((state, participant)) = shared.section.try_enter() else {
        return false;
    };
    // SAFETY: the owner stored a pointer to its live `LoopState` before
    // publishing, and keeps it alive until `close_and_wait` saw no helper
    // inside; we are inside from `try_enter` until `leave`, and `work`
    // catches panics from the body, so we cannot unwind past `leave`.
    unsafe { &*state }.work(participant);
    shared.section.leave();
    true
}

/// Whether an idle worker may keep spinning now.
fn may_spin(shared: &Shared) -> bool {
    shared.spin_enabled.load(Ordering::Relaxed)
        && !shared.shutdown.load(Ordering::Relaxed)
        && (!shared.force_stop || shared.loops_active.load(Ordering::Relaxed) > 0)
}

/// The spin phase: polls the queues between pauses until work shows up
/// (true) or the pause budget is spent / spinning is disabled (false).
fn spin(shared: &Shared, me: &WorkerLocal, counters: &Counters) -> bool {
    let budget = shared.policy.pauses;
    if budget == 0 {
        return false;
    }
    let mut backoff = Backoff::new(shared.policy.backoff_max);
    let (mut spent, mut iterations) = (0u64, 0u64);
    let mut found = false;
    // A microsecond budget is wall-clock time, not only pauses: the polls
    // between the pauses cost time too (see `SpinPolicy`).
    let deadline = shared
        .policy
        .deadline_ns
        .map(|ns| (Instant::now(), Duration::from_nanos(ns)));
    while spent < budget && may_spin(shared) {
        if shared.section.joinable() || has_work(shared, me) {
            found = true;
            break;
        }
        spent += u64::from(backoff.pause());
        iterations += 1;
        if let Some((start, limit)) = deadline {
            if iterations % DEADLINE_CHECK_EVERY == 0 && start.elapsed() >= limit {
                break;
            }
        }
    }
    bump(&counters.spin_iterations, iterations);
    found
}

/// Sets FTZ (bit 15) and DAZ (bit 6) in MXCSR for this thread.
fn set_denormals_are_zero() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: STMXCSR/LDMXCSR save and load this thread's SSE control
    // register through a local on the stack; setting FTZ/DAZ only changes
    // how this thread rounds denormals.
    unsafe {
        let mut csr: u32 = 0;
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
        csr |= (1 << 15) | (1 << 6);
        std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, readonly));
    }
}

fn worker_main(start: WorkerStart) {
    let WorkerStart {
        shared,
        index,
        local,
    } = start;
    if let Some(cpus) = shared.affinity.as_ref().and_then(|a| a.get(index)) {
        // Validated at create; a refusal here (CPU hot-unplugged since)
        // leaves the thread unpinned.
        let _ = affinity::pin_current_thread(cpus);
    }
    if shared.denormal_as_zero {
        set_denormals_are_zero();
    }
    let me = Rc::new(WorkerLocal {
        pool: shared.id,
        index,
        local,
    });
    CURRENT.with(|c| *c.borrow_mut() = Some(me.clone()));
    let counters = &shared.counters[index].0;
    loop {
        if help_section(&shared) {
            bump(&counters.tasks_run, 1);
            continue;
        }
        if let Some(job) = find_job(&shared, &me, counters) {
            run_job(job);
            bump(&counters.tasks_run, 1);
            continue;
        }
        if shared.section.joinable() {
            continue;
        }
        if shared.shutdown.load(Ordering::Acquire) {
            // `find_job` may have stopped its scan early: exit only if
            // every queue is empty.
            if has_work(&shared, &me) {
                continue;
            }
            break;
        }
        if spin(&shared, &me, counters) {
            continue;
        }
        // Sleep protocol: register, re-scan, then block or cancel.
        let ticket = shared.event.prepare();
        if shared.shutdown.load(Ordering::Acquire)
            || shared.section.joinable()
            || has_work(&shared, &me)
        {
            shared.event.cancel(ticket);
            continue;
        }
        bump(&counters.parks, 1);
        counters.asleep.store(1, Ordering::Relaxed);
        shared.event.wait(ticket);
        counters.asleep.store(0, Ordering::Relaxed);
        bump(&counters.wakeups, 1);
    }
    CURRENT.with(|c| *c.borrow_mut() = None);
}
