//! The worker loop: join a published loop, run queued jobs, stay with a
//! parallel section between its loops, spin, sleep.
//!
//! ```text
//!  run job / help loop <-- found -----------------+
//!     |                                            |
//!     v                                            |
//!  slot wants us? enter it ------- entered --------+
//!     | no                                         |
//!     v                                            |
//!  find_job: scan every queue ---- found ----------+
//!     | nothing (or stops early: slot now open --> back to the top)
//!     v                                            |
//!  member of a live section? stay with it: spin, then
//!     park on the team event count ---------------+
//!     | no                                         |
//!     v                                            |
//!  spin: poll slot + queues between pauses -- found +
//!     | budget spent / spinning disabled           |
//!     v                                            |
//!  prepare (register as waiter, read epoch)        |
//!  re-scan slot, every queue, shutdown -- found --> cancel
//!     | nothing
//!     v
//!  wait until the epoch changes --> cascade wake if the slot still
//!     (or, for a request the        wants helpers; back to the top
//!     adaptive budget expects,
//!     until a timer a little before it: then back to the top, and
//!     spin until the request comes or is overdue)
//! ```
//!
//! Queues: worker `i` owns a LIFO deque (only it pushes there: tasks
//! scheduled from inside the pool) and is the preferred consumer of
//! `injectors[i]` (tasks scheduled from other threads, and `Help` jobs).
//! `find_job` looks at its deque, its injector, then steals from the other
//! workers' injectors and deques from a random victim on; it stops early
//! when a loop that wants the worker is published meanwhile.
//!
//! Invariants:
//! * A worker only sleeps (on the general event count, or on the team
//!   event count while it is a section member) after `prepare` followed by
//!   a re-check of everything its producers publish: the slot, every
//!   queue, the shutdown flag and, for a member, whether its section ended.
//! * A worker only exits after shutdown was set *and* a full scan found no
//!   job; jobs pushed later can only come from a still-running worker (to
//!   its own queue) or be loop helpers, which that worker's loop no longer
//!   needs. The pool's `Drop` runs whatever is left after joining.
use super::adaptive::Anticipation;
use super::job::Job;
use super::membership::{self, WorkerLocal};
use super::profile::{bump, Counters};
use super::shared::{share_epoch, Shared, CASCADE};
use super::sleep::{EventCount, Ticket};
use super::trace::{self, Ev};
use crate::pool::affinity;
use crate::pool::spin::{Backoff, DEADLINE_CHECK_EVERY};
use crossbeam_deque::{Steal, Worker};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a new worker thread needs.
pub(super) struct WorkerStart {
    pub(super) shared: Arc<Shared>,
    pub(super) index: usize,
    pub(super) local: Worker<Job>,
}

thread_local! {
    static RNG: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A cheap per-thread xorshift for victim selection.
pub(super) fn random() -> u64 {
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

/// A worker thread's body.
pub(super) fn main(start: WorkerStart) {
    let WorkerStart {
        shared,
        index,
        local,
    } = start;
    // Everything that panics on a worker is caught here (tasks) or handed
    // to the loop's caller (loop bodies): never printed onto the host's
    // stderr.
    let _quiet = crate::diag::QuietPanics::enter();
    if let Some(cpus) = shared.setup.affinity.as_ref().and_then(|a| a.get(index)) {
        // Validated at create; a refusal here (CPU hot-unplugged since)
        // leaves the thread unpinned.
        let _ = affinity::pin_current_thread_to(cpus);
    }
    if shared.setup.denormal_as_zero {
        set_denormals_are_zero();
    }
    let me = Rc::new(WorkerLocal {
        pool: shared.id,
        index,
        local,
    });
    let _member = membership::become_worker(&me);
    let counters = &shared.profiling.counters[index];
    // The parallel section this worker is a member of (0: none).
    let mut section = 0u64;
    // This worker's anticipation timers (adaptive.rs).
    let mut timer = Timer::default();
    loop {
        if help_slot(&shared, &mut section, index) {
            bump(&counters.tasks_run, 1);
            // Whatever woke us, the request came: spin as usual after it.
            timer.settle(true);
            continue;
        }
        if let Some(job) = find_job(&shared, &me, counters, section) {
            run_job(&shared, job, Some(index));
            bump(&counters.tasks_run, 1);
            timer.settle(true);
            continue;
        }
        if slot_wants(&shared, section) {
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
        if section != 0 {
            if shared.sections.id.load(Ordering::Acquire) == section {
                stay_with_section(&shared, &me, counters, section);
                continue;
            }
            section = 0;
        }
        let enables = shared.spin.enables.load(Ordering::Acquire);
        let hit = spin(&shared, &me, counters, section, timer.until);
        timer.settle(hit);
        if hit {
            continue;
        }
        // Sleep protocol: register, re-scan, then block or cancel.
        let ticket = shared.event.prepare();
        if shared.shutdown.load(Ordering::Acquire)
            || slot_wants(&shared, section)
            || has_work(&shared, &me)
            || shared.spin.enables.load(Ordering::Relaxed) != enables
        {
            shared.event.cancel(ticket);
            continue;
        }
        trace::record(shared.id, index + 1, Ev::Park, 0);
        // Sleep with the caller's CPU left out of our affinity: the kernel
        // tends to queue a woken thread on its waker's CPU, where we could
        // not run while the caller computes its share of the loop that woke
        // us (a whole request, measured). Narrowed, the wake-up lands on a
        // CPU we may use; restored once awake. Of several callers, the
        // CPU of the one whose request is expected next (its timer's), else
        // `Shared::cpu_to_avoid`'s guess: left out the CPU of the wrong
        // caller, a worker asleep on the other could not run where its
        // caller computes (two callers taking turns on two CPUs lost up to
        // half their helpers' blocks that way, measured).
        let now = share_epoch();
        // A request expected on a steady cadence (adaptive.rs): a timer a
        // little before it, once per request, while spinning is allowed.
        let expected = shared.spin.adaptive.as_ref().and_then(|a| {
            let epoch = if shared.cpu_budget { now } else { 0 };
            a.anticipate(a.now())
                .filter(|t| shared.may_spin(epoch) && timer.wants(t))
                .map(|t| (a, t))
        });
        let avoid = expected.map_or_else(|| shared.cpu_to_avoid(now), |(_, t)| t.cpu);
        let away = affinity::avoid_cpu(avoid as usize);
        let notified = sleep_counted(
            &shared.event,
            ticket,
            counters,
            expected.map(|(a, t)| a.instant(t.wake_at)),
        );
        if let Some(saved) = away {
            saved.restore();
        }
        trace::record(shared.id, index + 1, Ev::Woke, u64::from(!notified));
        if let Some((a, t)) = expected {
            // Fired, or beaten by the request's notify after it was due:
            // late by that much at least (adaptive.rs).
            let now = a.now();
            if !notified || now > t.wake_at {
                a.timer_late_by(&t, now);
            }
            if !notified {
                timer.fired(&t);
                continue;
            }
        }
        // Cascade: a loop that still wants helpers gets more sleepers woken
        // by us, not by its owner (which is already running its share).
        if slot_wants(&shared, section) {
            shared.event.notify(CASCADE);
        }
    }
}

/// Whether the loop in the slot (if any) wants this worker: it admits
/// helpers and is not a section loop whose team is full and excludes us.
fn slot_wants(shared: &Shared, section: u64) -> bool {
    if !shared.slot.joinable() {
        return false;
    }
    let tag = shared.slot.tag();
    tag == 0 || tag == section || shared.sections.team.load(Ordering::Relaxed) < shared.slot.cap()
}

/// Joins the loop published in the slot, if it wants this worker, and works
/// on it. A section loop makes the worker a member of that section (while
/// the team has room; else it leaves at once without working).
fn help_slot(shared: &Shared, section: &mut u64, index: usize) -> bool {
    if !slot_wants(shared, *section) {
        return false;
    }
    let Some((job, participant, tag)) = shared.slot.try_enter() else {
        return false;
    };
    if tag != 0 && tag != *section {
        // Inside, the cap is this loop's.
        let cap = shared.slot.cap();
        let joined = shared
            .sections
            .team
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |t| {
                (t < cap).then_some(t + 1)
            })
            .is_ok();
        if !joined {
            shared.slot.leave();
            return false;
        }
        *section = tag;
    }
    trace::record(shared.id, index + 1, Ev::Enter, 1);
    // SAFETY: the owner stored a pointer to its live `LoopJob` before
    // publishing and keeps it alive until `close_and_wait` saw no helper
    // inside; we are inside from `try_enter` until `leave`, and `run`
    // catches panics from the work, so we cannot unwind past `leave`.
    let job = unsafe { &*job };
    job.note_helper_cpu();
    let blocks = shared.busy(|| job.run(participant, &shared.profiling, Some(index)));
    shared.slot.leave();
    trace::record(shared.id, index + 1, Ev::Leave, blocks);
    true
}

/// A section member between the section's loops: spins (within the pool's
/// spin policy), then parks on the team event count, until a loop wants it,
/// a job is queued, the section ends or the pool shuts down.
fn stay_with_section(shared: &Shared, me: &WorkerLocal, counters: &Counters, section: u64) {
    let enables = shared.spin.enables.load(Ordering::Acquire);
    let wanted = || {
        slot_wants(shared, section)
            || shared.sections.id.load(Ordering::Acquire) != section
            || shared.shutdown.load(Ordering::Acquire)
            || has_work(shared, me)
    };
    if spin_until(shared, counters, &wanted, None) {
        return;
    }
    let ticket = shared.sections.team_event.prepare();
    if wanted() || shared.spin.enables.load(Ordering::Relaxed) != enables {
        shared.sections.team_event.cancel(ticket);
        return;
    }
    sleep_counted(&shared.sections.team_event, ticket, counters, None);
}

/// A worker's anticipation timers (adaptive.rs): one per expected
/// request, and what they came to. A timer whose spin does not meet the
/// request (it came late, or the cores were all taken by callers, so that
/// spinning stopped at once) costs a wake-up for nothing. After each miss
/// in a row the worker lets twice as many expected requests pass without a
/// timer (up to [`Timer::MAX_SKIP`]); a hit starts over.
#[derive(Default)]
struct Timer {
    /// The request the last timer that fired was for (0: none).
    fired_for: u64,
    /// Woken by that timer and not yet settled: until when the worker
    /// spins for the request (on the adaptive budget's clock).
    until: Option<u64>,
    misses: u32,
    /// Expected requests still to pass without a timer.
    skip: u32,
    /// The last request counted against `skip`.
    skipped: u64,
}

impl Timer {
    const MAX_SKIP: u32 = 64;

    /// Whether to set a timer for `t`: not again for the request a timer
    /// already fired for, nor while backing off.
    fn wants(&mut self, t: &Anticipation) -> bool {
        t.due != self.fired_for && self.take(t.due)
    }

    /// The timer for `t` fired: the worker spins for it, until `t.until`.
    fn fired(&mut self, t: &Anticipation) {
        self.fired_for = t.due;
        self.until = Some(t.until);
    }

    /// After a fired timer, the request met (`hit`: work found, spinning
    /// or not) or missed; nothing otherwise.
    fn settle(&mut self, hit: bool) {
        if self.until.take().is_some() {
            self.record(hit);
        }
    }

    /// Whether to set a timer for the request due at `due`.
    fn take(&mut self, due: u64) -> bool {
        if self.skip == 0 {
            return true;
        }
        if due != self.skipped {
            self.skipped = due;
            self.skip -= 1;
        }
        false
    }

    /// A timer's spin met the request (`hit`) or not.
    fn record(&mut self, hit: bool) {
        if hit {
            self.misses = 0;
        } else {
            self.misses = (self.misses + 1).min(Self::MAX_SKIP.trailing_zeros());
            self.skip = (1 << self.misses).min(Self::MAX_SKIP);
        }
    }
}

/// Blocks on `event` with a ticket whose re-scan found nothing (until
/// `deadline`, if any), counting the park, the time asleep and the wake-up
/// in this worker's counters: false when the deadline ended it.
fn sleep_counted(
    event: &EventCount,
    ticket: Ticket,
    counters: &Counters,
    deadline: Option<Instant>,
) -> bool {
    bump(&counters.parks, 1);
    counters.asleep.store(1, Ordering::Relaxed);
    let notified = match deadline {
        Some(d) => event.wait_until(ticket, d),
        None => {
            event.wait(ticket);
            true
        }
    };
    counters.asleep.store(0, Ordering::Relaxed);
    bump(&counters.wakeups, 1);
    if !notified {
        bump(&counters.timer_wakeups, 1);
    }
    notified
}

/// Runs a queued job.
fn run_job(shared: &Shared, job: Job, worker: Option<usize>) {
    match job {
        Job::Task(f) => {
            if catch_unwind(AssertUnwindSafe(f)).is_err() {
                let detail = crate::diag::take_caught_panic().unwrap_or_default();
                crate::diag::warn(&format!(
                    "a task scheduled on the thread pool panicked: {detail}"
                ));
            }
        }
        Job::Help(q) => {
            if let Some(participant) = q.gate.try_enter() {
                let who = trace::who(worker);
                trace::record(shared.id, who, Ev::Enter, 2);
                q.job.note_helper_cpu();
                let blocks = shared.busy(|| q.job.run(participant, &shared.profiling, worker));
                q.gate.leave();
                trace::record(shared.id, who, Ev::Leave, blocks);
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

/// Destroy, after the join: runs whatever is still queued on the caller.
pub(super) fn drain(shared: &Shared) {
    loop {
        let mut any = false;
        for q in shared.queues.injectors.iter() {
            while let Some(job) = steal_retrying(|| q.steal()) {
                run_job(shared, job, None);
                any = true;
            }
        }
        for s in shared.queues.stealers.iter() {
            while let Some(job) = steal_retrying(|| s.steal()) {
                run_job(shared, job, None);
                any = true;
            }
        }
        if !any {
            break;
        }
    }
}

/// Finds a job: own deque, own injector, then the other workers' injectors
/// and deques starting at a random one. `None` only after a scan in which
/// every queue was empty (no `Retry` left unresolved), or early when a loop
/// that wants this worker was published meanwhile (the caller checks the
/// slot next, and its later scans cover the queues).
fn find_job(shared: &Shared, me: &WorkerLocal, counters: &Counters, section: u64) -> Option<Job> {
    if let Some(j) = me.local.pop() {
        return Some(j);
    }
    let n = shared.workers();
    loop {
        let mut retry = false;
        match shared.queues.injectors[me.index].steal_batch_and_pop(&me.local) {
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
            if slot_wants(shared, section) {
                return None;
            }
            // Evaluated one at a time: a steal that succeeds hands over a job.
            for from_deque in [false, true] {
                let s = if from_deque {
                    shared.queues.stealers[v].steal()
                } else {
                    shared.queues.injectors[v].steal_batch_and_pop(&me.local)
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
        || shared.queues.injectors.iter().any(|q| !q.is_empty())
        || shared.queues.stealers.iter().any(|s| !s.is_empty())
}

/// The spin phase of an idle worker: polls the slot and the queues (until
/// `until` on the adaptive budget's clock, for a worker its timer woke).
fn spin(
    shared: &Shared,
    me: &WorkerLocal,
    counters: &Counters,
    section: u64,
    until: Option<u64>,
) -> bool {
    trace::record(shared.id, me.index + 1, Ev::SpinStart, 0);
    let found = || slot_wants(shared, section) || has_work(shared, me);
    let hit = spin_until(shared, counters, &found, until);
    trace::record(shared.id, me.index + 1, Ev::SpinEnd, u64::from(hit));
    hit
}

/// Polls `found` between pauses until it is true (true) or the pause
/// budget or the wall-clock deadline is spent, or spinning is disabled
/// (false). `until`: the adaptive budget's deadline for a worker its timer
/// woke, within the configured pauses.
fn spin_until(
    shared: &Shared,
    counters: &Counters,
    found: &dyn Fn() -> bool,
    until: Option<u64>,
) -> bool {
    // A timer's deadline still ahead: the nanoseconds left to it.
    let left = until
        .zip(shared.spin.adaptive.as_ref())
        .map(|(until, a)| until.saturating_sub(a.now()))
        .filter(|&ns| ns > 0);
    let (budget, deadline_ns) = match (&shared.spin.adaptive, left) {
        (Some(_), Some(ns)) => (shared.spin.policy.pauses, Some(ns)),
        (Some(a), None) => {
            let open = shared.spin.requests.load(Ordering::Relaxed) > 0;
            a.budget(&shared.spin.policy, open)
        }
        (None, _) => (shared.spin.policy.pauses, shared.spin.policy.deadline_ns),
    };
    if budget == 0 {
        return false;
    }
    let mut backoff = Backoff::new(shared.spin.policy.backoff_max);
    let (mut spent, mut iterations, mut yields) = (0u64, 0u64, 0u64);
    let mut hit = false;
    let mut stepped = false;
    // A microsecond budget is wall-clock time, not only pauses: the polls
    // between the pauses cost time too (see `SpinPolicy`).
    let deadline = deadline_ns.map(|ns| (Instant::now(), Duration::from_nanos(ns)));
    // The CPU share's epoch, read with the deadline (a stale one at most
    // delays by one check when a linger stops counting); no clock read
    // for a pool outside the share.
    let mut epoch = if shared.cpu_budget { share_epoch() } else { 0 };
    while spent < budget && shared.may_spin(epoch) {
        if found() {
            hit = true;
            break;
        }
        // Sharing the CPU with the thread whose next loop we wait for:
        // spinning would only keep that thread from running. Once per spin,
        // step off to another CPU this worker may use (where the loop it
        // waits for can use it: a yield alone leaves it queued behind the
        // caller until the load balancer moves it, milliseconds on an idle
        // machine); where there is none, or it landed here again, yield.
        if iterations % DEADLINE_CHECK_EVERY == 0 && shared.on_caller_cpu() {
            let cpu = shared.spin.caller_cpu.load(Ordering::Relaxed) as usize;
            if stepped || !affinity::step_off_cpu(cpu) {
                std::thread::yield_now();
            }
            stepped = true;
            yields += 1;
        }
        spent += u64::from(backoff.pause());
        iterations += 1;
        if iterations % DEADLINE_CHECK_EVERY == 0 {
            if deadline.is_some_and(|(start, limit)| start.elapsed() >= limit) {
                break;
            }
            if shared.cpu_budget {
                epoch = share_epoch();
            }
        }
    }
    bump(&counters.spin_iterations, iterations);
    bump(&counters.spin_yields, yields);
    hit
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

#[cfg(test)]
mod tests {
    use super::Timer;

    /// Counts the expected requests (due at 1, 2, ...) `t` lets pass
    /// without a timer before it sets one again, from `from` on.
    fn passed(t: &mut Timer, from: u64) -> u64 {
        (from..).take_while(|&due| !t.take(due)).count() as u64
    }

    #[test]
    fn timers_that_miss_back_off_and_a_hit_starts_over() {
        let mut t = Timer::default();
        assert!(t.take(1), "a timer at first");
        t.record(false);
        assert_eq!(passed(&mut t, 2), 2, "one miss: two requests without");
        t.record(false);
        assert_eq!(passed(&mut t, 10), 4, "two in a row: four");
        // The same request asked about again counts once.
        t.record(false);
        assert!(!t.take(20) && !t.take(20) && !t.take(20));
        assert_eq!(passed(&mut t, 21), 7, "eight in all, the first at 20");
        for _ in 0..20 {
            t.record(false);
        }
        assert_eq!(passed(&mut t, 100), Timer::MAX_SKIP as u64);
        t.record(true);
        assert!(t.take(1000), "a hit: a timer again at once");
    }
}
