//! The state the pool handle and its workers share, in named parts: the
//! queues, the parallel sections, the spin control and the profiling
//! counters, beside the broadcast slot and the general event count.
use super::adaptive::Adaptive;
use super::budget::{CpuShare, EPOCH_NS_LOG2};
use super::job::{Job, LoopJob};
use super::profile::Profiling;
use super::sleep::EventCount;
use super::slot::Slot;
use crate::pool::spin::SpinPolicy;
use crossbeam_deque::{Injector, Stealer};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Sleepers the owner of a loop wakes, and each woken worker wakes while the
/// loop still wants helpers (a wake-up tree of fan-out 2).
pub(super) const CASCADE: usize = 2;

/// The process's CPU share (`budget.rs`), of the CPUs online; every pool
/// that takes part (`Shared::cpu_budget`) counts its callers and busy
/// helpers here.
pub(super) fn cpu_share() -> &'static CpuShare {
    static SHARE: std::sync::OnceLock<CpuShare> = std::sync::OnceLock::new();
    SHARE.get_or_init(|| CpuShare::new(crate::pool::cpu::logical_cores()))
}

/// The CPU share's epoch now (`budget.rs`): the monotonic clock since
/// the process's first call, in units of `2^EPOCH_NS_LOG2` ns.
pub(super) fn share_epoch() -> u64 {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let origin = ORIGIN.get_or_init(std::time::Instant::now);
    (origin.elapsed().as_nanos() as u64) >> EPOCH_NS_LOG2
}

/// State shared by the pool handle and its workers.
pub(super) struct Shared {
    /// This pool's process-wide id (what a thread-local records).
    pub(super) id: usize,
    pub(super) queues: Queues,
    /// Idle workers sleep here.
    pub(super) event: EventCount,
    /// The broadcast slot of the loop in progress (at most one at a time).
    pub(super) slot: Slot<LoopJob>,
    pub(super) sections: Sections,
    /// Set once by the pool's destroy; workers leave when their queues are
    /// empty.
    pub(super) shutdown: AtomicBool,
    pub(super) spin: SpinControl,
    pub(super) profiling: Profiling,
    /// What each worker sets up on its own thread at start.
    pub(super) setup: WorkerSetup,
    /// Degree of parallelism (thread count, ×4 on hybrid CPUs).
    pub(super) dop: i32,
    /// ORT's `dynamic_block_base` (0: fixed blocks).
    pub(super) dynamic_block_base: i32,
    /// `leanrt.intra_op.cpu_budget`: this pool's loops and workers take
    /// part in the process's [`cpu_share`].
    pub(super) cpu_budget: bool,
    /// `fork::generation()` when the pool was made: a different value
    /// means this is a forked child, where the workers do not exist.
    pub(super) fork_generation: u64,
}

/// Each worker's two queues: the injector others push to, and the
/// stealing end of the worker's own deque.
pub(super) struct Queues {
    pub(super) injectors: Box<[Injector<Job>]>,
    pub(super) stealers: Box<[Stealer<Job>]>,
    /// Where the next queued loop's `Help` jobs start (round robin).
    pub(super) next_victim: AtomicUsize,
}

/// Parallel sections (`section.rs` states the protocol).
pub(super) struct Sections {
    /// The parallel section that owns the slot; 0: none.
    pub(super) id: AtomicU64,
    /// Workers that joined that section (they stay until it ends).
    pub(super) team: AtomicUsize,
    /// Section members wait here between the section's loops.
    pub(super) team_event: EventCount,
    /// The last section id handed out.
    pub(super) next: AtomicU64,
}

/// When idle workers may spin. Every flag here is read with `Relaxed` in
/// the spin loop: each one only shortens or lengthens a spin, never decides
/// whether work is found, because a worker re-checks the slot and every
/// queue under the event count's protocol before it sleeps
/// (`sleep.rs`), and producers wake sleepers after publishing.
pub(super) struct SpinControl {
    /// Off between requests (`disable_spinning`). Relaxed is safe: a stale
    /// `true` costs at most one more spin iteration, a stale `false` sends
    /// the worker to the sleep path, whose re-check finds any work.
    pub(super) enabled: AtomicBool,
    /// Requests in progress: `enable_spinning` calls not yet matched by a
    /// `disable_spinning`. Relaxed is safe: like `enabled`, it only bounds
    /// spinning; the count itself is kept exact by its RMWs.
    pub(super) requests: AtomicUsize,
    /// `enable_spinning` calls that woke the workers, so far: a publication
    /// under the sleep protocol (`sleep.rs`), bumped before the wake. A
    /// worker reads it before it spins and again after `prepare`; changed,
    /// it spins for the request that began instead of sleeping through it
    /// (an enable between the end of its spin and its `prepare` finds no
    /// waiter to wake). Bumped with Release after `requests`, read with
    /// Acquire before the spin: a worker that sees a bump sees the request
    /// open and spins for it (with Relaxed it could see the bump, find no
    /// request, and then take the bump for one it had seen: loom found it).
    /// The re-scan's load is Relaxed: ordered by the event count's RMWs.
    pub(super) enables: AtomicU64,
    /// `session.force_spinning_stop`: spin only while a loop or a request
    /// is in progress.
    pub(super) force_stop: bool,
    /// Loops in progress (counted only with `force_stop`). Relaxed is
    /// safe: a worker that misses a loop's increment stops spinning early
    /// and sleeps; the loop reaches it through the slot or its queue and
    /// the wake that follows publication, never through this count.
    pub(super) loops_active: AtomicUsize,
    pub(super) policy: SpinPolicy,
    /// The adaptive spin budget (`leanrt.intra_op.adaptive_spin`).
    pub(super) adaptive: Option<Adaptive>,
    /// The CPU of the thread that last started a loop or a request
    /// (`u32::MAX`: none yet). A spinning worker that finds itself on that
    /// CPU yields it (see `worker.rs`): the operating system may place a
    /// woken worker on its waker's CPU, and a worker spinning there takes
    /// the CPU from the very thread whose loop it waits for. Relaxed is
    /// safe: it is a placement hint, read and written whole; a stale value
    /// costs one needless yield or one missed one, never a missed loop.
    /// Callers note it before they let workers spin (`requests`, `enabled`,
    /// `loops_active`): a caller preempted right after (its stores are
    /// visible to whatever runs on its CPU next) is then never the one a
    /// worker spinning there fails to recognize, for the whole time slice
    /// the caller waits for.
    pub(super) caller_cpu: AtomicU32,
    /// The thread (`caller_number`) that last started a loop or request.
    pub(super) caller: AtomicU64,
    /// The CPU of the caller before, when another caller on another CPU
    /// started a loop or request after it (lower 32 bits), and the CPU
    /// share's epoch then (upper 32; 0: none yet): two callers taking turns
    /// on the pool lately, see `cpu_to_avoid`. Relaxed, for the reason
    /// `caller_cpu` is.
    pub(super) other_cpu: AtomicU64,
}

/// How long, in epochs of the CPU share, a CPU a loop started on still
/// counts as a caller's after loops moved to another (`other_cpu`): two
/// census epochs (4.2 ms), longer than the gap between two request
/// threads' loops that take turns on one pool.
const OTHER_CPU_EPOCHS: u64 = 2 << super::budget::CENSUS_SHIFT;

/// What a worker applies to its own thread when it starts.
pub(super) struct WorkerSetup {
    pub(super) denormal_as_zero: bool,
    pub(super) affinity: Option<Vec<crate::pool::affinity::CpuSet>>,
}

impl Shared {
    pub(super) fn workers(&self) -> usize {
        self.queues.injectors.len()
    }

    /// Wakes up to `n` idle workers, general sleepers and section members
    /// alike. Call after publishing what they should find.
    pub(super) fn wake(&self, n: usize) {
        self.event.notify(n);
        self.sections.team_event.notify(n);
    }

    /// Notes the calling thread's CPU as the one a loop or request runs on
    /// (and the one of the caller before, when it was another thread on
    /// another CPU: `other_cpu`); returns it. `me`: the calling thread's
    /// `caller_number`.
    pub(super) fn note_caller_cpu(&self, me: u64) -> u32 {
        let cpu = crate::pool::cpu::current_cpu();
        let spin = &self.spin;
        if spin.caller_cpu.load(Ordering::Relaxed) == cpu
            && spin.caller.load(Ordering::Relaxed) == me
        {
            return cpu;
        }
        let old = spin.caller_cpu.swap(cpu, Ordering::Relaxed);
        let before = spin.caller.swap(me, Ordering::Relaxed);
        if before != me && old != cpu && old != u32::MAX && cpu != u32::MAX {
            spin.other_cpu
                .store(share_epoch() << 32 | u64::from(old), Ordering::Relaxed);
        }
        cpu
    }

    /// The CPU a worker going to sleep with no request expected leaves out
    /// of its affinity (`worker.rs`), at the CPU share's `epoch`: the one
    /// the last loop or request started on, or, while another caller on
    /// another CPU started loops lately (`other_cpu`), that caller's: of
    /// two callers taking turns on the pool, the one that did not start the
    /// last request is the likelier to start the next, and its CPU is where
    /// a worker woken for it could not run. `u32::MAX`: none.
    pub(super) fn cpu_to_avoid(&self, epoch: u64) -> u32 {
        let other = self.spin.other_cpu.load(Ordering::Relaxed);
        let recent = other != 0 && (other >> 32) + OTHER_CPU_EPOCHS >= epoch & u64::from(u32::MAX);
        if recent {
            other as u32
        } else {
            self.spin.caller_cpu.load(Ordering::Relaxed)
        }
    }

    /// Whether the calling (worker) thread runs on the CPU of the thread
    /// that last started a loop or request.
    pub(super) fn on_caller_cpu(&self) -> bool {
        let cpu = crate::pool::cpu::current_cpu();
        cpu != u32::MAX && cpu == self.spin.caller_cpu.load(Ordering::Relaxed)
    }

    /// Whether an idle worker may keep spinning now: spinning enabled, no
    /// shutdown, and with `force_spinning_stop` a loop or a request (an
    /// unmatched `enable_spinning`) in progress. With the CPU budget, also
    /// only while callers, busy helpers and lingering callers leave a CPU
    /// free at the share's epoch `now` (`budget.rs`, [`share_epoch`]).
    pub(super) fn may_spin(&self, now: u64) -> bool {
        let spin = &self.spin;
        spin.enabled.load(Ordering::Relaxed)
            && !self.shutdown.load(Ordering::Relaxed)
            && (!spin.force_stop
                || spin.loops_active.load(Ordering::Relaxed) > 0
                || spin.requests.load(Ordering::Relaxed) > 0)
            && !(self.cpu_budget && cpu_share().full(now))
    }

    /// Runs a helper's share `f`, counted busy in the CPU share when this
    /// pool takes part.
    pub(super) fn busy<R>(&self, f: impl FnOnce() -> R) -> R {
        if !self.cpu_budget {
            return f();
        }
        cpu_share().busy();
        let r = f();
        cpu_share().idle();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::super::adaptive::caller_number;
    use super::*;
    use crate::pool::{affinity, options::PoolOptions, ThreadPool};

    /// One caller that moves between CPUs leaves the CPU it is on to be
    /// avoided; a second caller on another CPU makes the first caller's
    /// CPU the one to avoid (the likelier to start the next loop), until
    /// that is older than `OTHER_CPU_EPOCHS`. Needs two CPUs (else it says
    /// so and checks the one-CPU case).
    #[test]
    fn the_cpu_to_avoid_is_the_other_callers_while_two_take_turns() {
        let mut opts = PoolOptions::default();
        opts.set_num_threads(2).unwrap();
        let pool = ThreadPool::create(&opts).unwrap().unwrap();
        let shared = &pool.shared;
        let cpus = affinity::allowed_cpus();
        let on = |cpu: usize| {
            std::thread::scope(|s| {
                s.spawn(|| {
                    assert!(affinity::pin_current_thread(&[cpu]));
                    shared.note_caller_cpu(caller_number())
                })
                .join()
                .unwrap()
            })
        };
        let (a, b) = match cpus[..] {
            [a, b, ..] => (a, b),
            [a] => {
                eprintln!("one CPU allowed: only its own case checked");
                assert_eq!(on(a), a as u32);
                assert_eq!(shared.cpu_to_avoid(share_epoch()), a as u32);
                return;
            }
            [] => panic!("no CPU allowed"),
        };
        // One thread that moves: the CPU it is on now.
        std::thread::scope(|s| {
            s.spawn(|| {
                for cpu in [a, b] {
                    assert!(affinity::pin_current_thread(&[cpu]));
                    assert_eq!(shared.note_caller_cpu(caller_number()), cpu as u32);
                }
            });
        });
        let now = share_epoch();
        assert_eq!(shared.cpu_to_avoid(now), b as u32, "one caller that moved");
        // Another thread on the other CPU: the first one's CPU, while recent.
        assert_eq!(on(a), a as u32);
        assert_eq!(
            shared.cpu_to_avoid(now),
            b as u32,
            "two callers: the other's"
        );
        let later = share_epoch() + OTHER_CPU_EPOCHS + 1;
        assert_eq!(
            shared.cpu_to_avoid(later),
            a as u32,
            "expired: the last one's"
        );
    }
}
