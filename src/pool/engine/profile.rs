//! Per-thread counters, the pool's statistics and the profiling report.
//!
//! Each worker's counters are written only by that worker (plain load +
//! store, no RMW) and read by anyone. The callers of loops (any thread that
//! is not a worker) share one set, updated with RMWs. Blocks and time in
//! loops are counted only while profiling is on.
use crate::pool::abi::lrt_pool_stats;
use crate::{Error, Result};
use crossbeam_utils::CachePadded;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Every counter of a pool and the profiling switch.
pub(super) struct Profiling {
    /// One set per worker, each on its own cache lines.
    pub(super) counters: Box<[CachePadded<Counters>]>,
    callers: CachePadded<CallerCounters>,
    /// Blocks and time in loops are counted only while this is on.
    on: AtomicBool,
    start: Mutex<Option<Snapshot>>,
}

/// One worker's counters.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) tasks_run: AtomicU64,
    pub(super) steals: AtomicU64,
    pub(super) spin_iterations: AtomicU64,
    /// Times a spinning worker yielded the CPU of a loop's caller.
    pub(super) spin_yields: AtomicU64,
    pub(super) parks: AtomicU64,
    pub(super) wakeups: AtomicU64,
    /// Sleeps ended by the worker's own timer (`adaptive.rs`).
    pub(super) timer_wakeups: AtomicU64,
    pub(super) asleep: AtomicU64,
    /// Loop blocks run (while profiling).
    pub(super) blocks: AtomicU64,
    /// Nanoseconds spent running loop shares (while profiling).
    pub(super) loop_ns: AtomicU64,
}

/// What the threads that start loops (not workers) did, together.
#[derive(Default)]
struct CallerCounters {
    blocks: AtomicU64,
    loops: AtomicU64,
    loop_ns: AtomicU64,
}

/// Adds `n` to a counter only its owner writes.
pub(super) fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

impl Profiling {
    /// Zeroed counters for `workers` workers, profiling off;
    /// `ErrorKind::NoMemory` if they cannot be allocated.
    pub(super) fn new(workers: usize) -> crate::Result<Profiling> {
        let counters = crate::alloc::try_collect((0..workers).map(|_| CachePadded::default()))?;
        Ok(Profiling {
            counters: counters.into_boxed_slice(),
            callers: CachePadded::default(),
            on: AtomicBool::new(false),
            start: Mutex::new(None),
        })
    }

    /// When profiling is on: now, the start of a share to [`record`](Self::record).
    pub(super) fn clock(&self) -> Option<Instant> {
        self.on.load(Ordering::Relaxed).then(Instant::now)
    }

    /// Records one participant's share of a loop: `blocks` blocks, started
    /// at `t0` (from [`clock`](Self::clock); `None` when profiling is off).
    pub(super) fn record(&self, worker: Option<usize>, blocks: u64, t0: Option<Instant>) {
        let Some(t0) = t0 else {
            return;
        };
        let ns = t0.elapsed().as_nanos() as u64;
        match worker {
            Some(i) => {
                let c = &self.counters[i];
                bump(&c.blocks, blocks);
                bump(&c.loop_ns, ns);
            }
            None => {
                let c = &self.callers;
                c.blocks.fetch_add(blocks, Ordering::Relaxed);
                c.loops.fetch_add(1, Ordering::Relaxed);
                c.loop_ns.fetch_add(ns, Ordering::Relaxed);
            }
        }
    }

    /// Starts (or restarts) profiling from now; `ErrorKind::NoMemory`
    /// (and nothing changed) if the snapshot cannot be allocated.
    pub(super) fn start(&self) -> Result<()> {
        let snap = Snapshot::take(&self.counters, &self.callers)?;
        *self.start.lock().unwrap_or_else(|e| e.into_inner()) = Some(snap);
        self.on.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Stops profiling and reports the figures since [`start`](Self::start)
    /// (`ErrorKind::State` if it was not started).
    /// Everything is allocated before profiling is stopped, so a failure
    /// (`ErrorKind::NoMemory`) leaves it running.
    pub(super) fn stop(&self) -> Result<String> {
        let now = Snapshot::take(&self.counters, &self.callers)?;
        let mut out = String::new();
        crate::alloc::fallible(|| out.try_reserve_exact(report_bytes(now.workers.len())))
            .map_err(|_| crate::alloc::no_memory())?;
        let start = self
            .start
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| Error::state("profiling was not started on this pool"))?;
        self.on.store(false, Ordering::Relaxed);
        report(&mut out, &start, &now);
        Ok(out)
    }

    /// Counters summed over the workers.
    pub(super) fn stats(&self) -> lrt_pool_stats {
        stats(&self.counters)
    }
}

fn stats(counters: &[CachePadded<Counters>]) -> lrt_pool_stats {
    let mut s = lrt_pool_stats::default();
    for c in counters.iter() {
        s.tasks_run += c.tasks_run.load(Ordering::Relaxed);
        s.steals += c.steals.load(Ordering::Relaxed);
        s.spin_iterations += c.spin_iterations.load(Ordering::Relaxed);
        s.parks += c.parks.load(Ordering::Relaxed);
        s.wakeups += c.wakeups.load(Ordering::Relaxed);
        s.workers_asleep += c.asleep.load(Ordering::Relaxed);
    }
    s
}

/// One thread's figures: blocks, tasks, steals, spin iterations, spin
/// yields, parks, timer wake-ups, loop nanoseconds (workers); callers use
/// blocks, loops, loop nanoseconds.
#[derive(Clone, Copy, Default)]
struct Figures([u64; 8]);

const WORKER_KEYS: [&str; 8] = [
    "blocks",
    "tasks",
    "steals",
    "spin_iterations",
    "spin_yields",
    "parks",
    "timer_wakeups",
    "loop_ns",
];

/// Every counter at one moment.
struct Snapshot {
    at: Instant,
    workers: Vec<Figures>,
    callers: [u64; 3],
}

impl Snapshot {
    fn take(counters: &[CachePadded<Counters>], callers: &CallerCounters) -> Result<Snapshot> {
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Ok(Snapshot {
            at: Instant::now(),
            workers: crate::alloc::try_collect(counters.iter().map(|c| {
                Figures([
                    ld(&c.blocks),
                    ld(&c.tasks_run),
                    ld(&c.steals),
                    ld(&c.spin_iterations),
                    ld(&c.spin_yields),
                    ld(&c.parks),
                    ld(&c.timer_wakeups),
                    ld(&c.loop_ns),
                ])
            }))?,
            callers: [
                ld(&callers.blocks),
                ld(&callers.loops),
                ld(&callers.loop_ns),
            ],
        })
    }
}

/// The profiling report between two snapshots, as JSON:
/// `{"duration_ns":N,"main_thread":{"blocks":..,"loops":..,"loop_ns":..},
/// "workers":[{"id":0,"blocks":..,"tasks":..,"steals":..,
/// "spin_iterations":..,"spin_yields":..,"parks":..,"timer_wakeups":..,
/// "loop_ns":..},...]}`.
/// Bytes the report of `workers` workers can take at most (every figure
/// with 20 digits), plus the NUL the C string adds: writing it into a
/// string reserved that large never allocates.
fn report_bytes(workers: usize) -> usize {
    let per_worker = 16 + WORKER_KEYS.iter().map(|k| k.len() + 24).sum::<usize>();
    160 + per_worker * workers + 1
}

fn report(s: &mut String, start: &Snapshot, now: &Snapshot) {
    let d = |a: u64, b: u64| a.wrapping_sub(b);
    let _ = write!(
        s,
        "{{\"duration_ns\":{},\"main_thread\":{{\"blocks\":{},\"loops\":{},\"loop_ns\":{}}},\"workers\":[",
        now.at.duration_since(start.at).as_nanos(),
        d(now.callers[0], start.callers[0]),
        d(now.callers[1], start.callers[1]),
        d(now.callers[2], start.callers[2]),
    );
    for (i, (a, b)) in now.workers.iter().zip(&start.workers).enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{{\"id\":{i}");
        for (k, key) in WORKER_KEYS.iter().enumerate() {
            let _ = write!(s, ",\"{key}\":{}", d(a.0[k], b.0[k]));
        }
        s.push('}');
    }
    s.push_str("]}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_report_fits_its_reservation() {
        let at = Instant::now();
        let start = Snapshot {
            at,
            workers: (0..1023).map(|_| Figures([0; WORKER_KEYS.len()])).collect(),
            callers: [0; 3],
        };
        let now = Snapshot {
            at,
            workers: (0..1023)
                .map(|_| Figures([u64::MAX; WORKER_KEYS.len()]))
                .collect(),
            callers: [u64::MAX; 3],
        };
        let mut s = String::with_capacity(report_bytes(1023));
        let cap = s.capacity();
        report(&mut s, &start, &now);
        assert!(s.len() < report_bytes(1023), "{} bytes", s.len());
        assert_eq!(s.capacity(), cap, "writing it did not reallocate");
        assert!(s.starts_with("{\"duration_ns\":0,") && s.ends_with("}]}"));
    }
}
