//! The one entry loops take into the engine: run a piece of work on the
//! caller plus up to `k` helpers ([`ThreadPool::run_in_parallel`]).
//!
//! The caller builds a `LoopJob` (the work with its borrow erased, a slot
//! for the first panic) on its stack and hands it to the helpers in one of
//! three ways, then runs participant 0 itself:
//! * **Its section's slot** (the caller leads a parallel section that owns
//!   the slot and is not inside one of its loops): publish the loop tagged
//!   with the section id; notify the team event count (all members), and
//!   the general one for the helpers the team lacks (at most [`CASCADE`]).
//! * **The broadcast slot** (the common case): take it with a CAS (only if
//!   no other loop or section owns it), publish, `notify(min(k, CASCADE))`
//!   (one RMW when nobody sleeps). Cascade wake: a worker that wakes from
//!   the general event count while the slot still wants helpers notifies
//!   `CASCADE` more itself (`worker.rs`), so the sleepers a loop needs are
//!   woken as a tree of fan-out 2 and the owner pays at most two wake-ups
//!   before its own share. Each of these notifies follows an observed
//!   publication (the owner's own, or the open slot the woken worker saw),
//!   so the event count's no-lost-wake-up argument (`sleep.rs`) covers
//!   them; the chain stops exactly when the loop wants no more helpers.
//!   Spinning workers are not woken (they poll the slot).
//! * **`Help` jobs** (the slot is owned: a loop nested in a loop body, or
//!   loops started by several threads at once): a gate made for this loop,
//!   already open for `k` (`Gate::opened`), in an `Arc` with the job; up to
//!   one `Help` job per other worker goes into their injectors, then notify.
//!   A late `Help` job finds its gate closed and does nothing.
//!
//! The caller always takes part, so a loop completes even if no helper ever
//! runs (all busy, or the caller is a worker running a nested loop):
//! nesting cannot deadlock, and the fallback never waits for the slot. The
//! caller returns only after the gate's `close_and_wait` saw every helper
//! that entered leave (`gate.rs`); a panic of any participant is caught,
//! kept, and rethrown on the caller after that join.
use super::adaptive::caller_number;
use super::gate::{self, Gate};
use super::job::{Job, LoopJob, QueuedLoop, Work};
use super::membership::{self, current};
use super::pool::{ThreadPool, QUEUE_CAPACITY};
use super::section;
use super::shared::{cpu_share, share_epoch, CASCADE};
use super::trace::{self, Ev};
use crate::pool::cpu;
use std::panic::resume_unwind;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Polls of the gate before the owner of a loop blocks in its join (tens
/// of µs; longer with the yields `Gate::close_and_wait_yielding` makes
/// when a helper may be preempted on the owner's CPU). A blocked owner
/// needs a wake-up, and on a busy machine a woken thread can wait
/// milliseconds for a CPU: far longer than the last helper's block, which
/// is all the owner waits for.
const CLOSE_SPINS: u32 = 2048;

/// A loop's place in the CPU share: counts its caller (unless already
/// counted) until dropped, after the join or on unwind.
struct Claim {
    counted: bool,
    helpers: usize,
}

impl Claim {
    fn new(wanted: usize) -> Claim {
        let (share, now) = (cpu_share(), share_epoch());
        let marked = membership::count_caller();
        let counted = marked.is_some();
        if counted {
            membership::enlist_caller(share, now);
        }
        match share.claim(counted, marked.flatten(), now, wanted) {
            Some(helpers) => Claim { counted, helpers },
            // A crowd of callers (`budget.rs`): inline, nothing counted.
            None => {
                if counted {
                    membership::unmark_caller(marked.flatten());
                }
                Claim {
                    counted: false,
                    helpers: 0,
                }
            }
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.counted {
            membership::uncount_caller(cpu_share().unclaim(share_epoch()));
        }
    }
}

impl ThreadPool {
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
        let mut helpers = helpers.min(self.max_helpers()).min(gate::MAX_HELPERS);
        let me = current(shared.id).map(|w| w.index);
        // The CPU share (`budget.rs`): helpers only for the CPUs that
        // callers and busy helpers leave free; none: inline.
        let _claim = (helpers > 0 && shared.cpu_budget).then(|| {
            let claim = Claim::new(helpers);
            helpers = claim.helpers;
            claim
        });
        if helpers == 0 {
            let t0 = shared.profiling.clock();
            let blocks = work(0);
            shared.profiling.record(me, blocks, t0);
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
        let job = LoopJob::new(work);
        let spin = &shared.spin;
        // This thread as a caller (`adaptive.rs`), looked up once a loop;
        // its CPU noted before the loop lets workers spin (see
        // `SpinControl::caller_cpu`).
        let caller = caller_number();
        let cpu = shared.note_caller_cpu(caller);
        if spin.force_stop {
            spin.loops_active.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(a) = &spin.adaptive {
            a.loop_started(caller, cpu);
        }
        let who = trace::who(me);
        // Once published: the caller's share, then the slot closed and the
        // helpers waited for (the gate protocol's end, gate.rs).
        let run_and_close = || {
            let blocks = job.run(0, &shared.profiling, me);
            trace::record(shared.id, who, Ev::ShareDone, blocks);
            let cpu = cpu::current_cpu();
            shared
                .slot
                .close_and_wait_yielding(CLOSE_SPINS, &|| job.helper_on(cpu));
            trace::record(shared.id, who, Ev::GateDone, 0);
        };
        if let Some(tag) = section::lead_loop(shared) {
            // A loop of the section this thread leads: the slot is ours
            // already; members wait on the team event, newcomers (if the
            // team is smaller than this loop wants) on the general one.
            let team = shared.sections.team.load(Ordering::Relaxed);
            shared.slot.publish(&job, helpers, tag);
            trace::record(shared.id, who, Ev::Publish, (helpers as u64) << 2);
            shared.sections.team_event.notify(usize::MAX);
            if team < helpers {
                shared.event.notify((helpers - team).min(CASCADE));
            }
            run_and_close();
            section::loop_done();
        } else if shared.slot.try_open(&job, helpers, 0) {
            // Cascade wake: at most CASCADE sleepers from here; each one that
            // wakes while the loop still wants helpers wakes CASCADE more.
            trace::record(shared.id, who, Ev::Publish, (helpers as u64) << 2 | 1);
            shared.event.notify(helpers.min(CASCADE));
            run_and_close();
            shared.slot.release();
        } else {
            let queued = Arc::new(QueuedLoop {
                job,
                gate: Gate::opened(helpers),
            });
            let workers = shared.workers();
            let queues = &shared.queues;
            let start = queues.next_victim.fetch_add(helpers, Ordering::Relaxed);
            let mut pushed = 0;
            for k in 0..workers {
                if pushed == helpers {
                    break;
                }
                let v = (start + k) % workers;
                if Some(v) == me || queues.injectors[v].len() >= QUEUE_CAPACITY {
                    continue;
                }
                pushed += 1;
                queues.injectors[v].push(Job::Help(queued.clone()));
            }
            trace::record(shared.id, who, Ev::Publish, (helpers as u64) << 2 | 2);
            shared.wake(pushed);
            let blocks = queued.job.run(0, &shared.profiling, me);
            trace::record(shared.id, who, Ev::ShareDone, blocks);
            let cpu = cpu::current_cpu();
            let job = &queued.job;
            queued
                .gate
                .close_and_wait_yielding(CLOSE_SPINS, &|| job.helper_on(cpu));
            trace::record(shared.id, who, Ev::GateDone, 0);
            return self.finish_loop(&queued.job, caller);
        }
        self.finish_loop(&job, caller);
    }

    /// After the join: loop accounting, then rethrow a panic of the work.
    /// `caller`: the calling thread's `caller_number`.
    fn finish_loop(&self, job: &LoopJob, caller: u64) {
        let spin = &self.shared.spin;
        if spin.force_stop {
            spin.loops_active.fetch_sub(1, Ordering::Relaxed);
        }
        if let Some(a) = &spin.adaptive {
            a.loop_ended(caller);
        }
        if let Some(p) = job.take_panic() {
            resume_unwind(p);
        }
    }
}
