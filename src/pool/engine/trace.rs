//! An event trace of the pool, for finding where a loop's time goes: when
//! each worker woke, spun, entered a loop, left it and slept, and what the
//! caller of a loop did (published, ran its share, waited at the end gate).
//!
//! Compiled in only with the cargo feature `trace`; without it every
//! function here is an empty inline function (zero cost). With it, events go
//! to one process-wide ring of `RING` slots (a relaxed `fetch_add` claims a
//! slot; two relaxed stores fill it), and a pool dropped while the
//! environment variable `LEANRT_POOL_TRACE` names a file appends its events
//! there (a file it cannot append to: one warning on leanrt's log channel),
//! one line each: `pid/pool t_ns who event cpu arg` (`who`: 0 = a thread
//! that is not a worker, i + 1 = worker i; `cpu`: `sched_getcpu`). A ring that
//! wrapped keeps only the newest events. `scripts/pool-trace.py` summarises
//! such a file.

/// What happened (the `event` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[allow(dead_code)]
pub(super) enum Ev {
    /// `enable_spinning` (arg: the wake-ups it issued, capped).
    Enable = 1,
    /// `disable_spinning` (arg: 1 if spinning went off).
    Disable = 2,
    /// A caller published a loop (arg: 0 section slot, 1 broadcast slot,
    /// 2 queues; helpers wanted in the upper bits, arg >> 2).
    Publish = 3,
    /// The caller's own share is done (arg: blocks it ran).
    ShareDone = 4,
    /// The caller's end-gate wait is over (arg: blocks all helpers ran).
    GateDone = 5,
    /// A worker returned from its sleep (arg: 1 its timer ended it,
    /// `adaptive.rs`; 0 a notify).
    Woke = 6,
    /// A worker starts spinning.
    SpinStart = 7,
    /// A worker stops spinning (arg: 1 found work, 0 budget spent or
    /// spinning disabled).
    SpinEnd = 8,
    /// A worker is about to sleep.
    Park = 9,
    /// A worker entered a loop.
    Enter = 10,
    /// A worker left a loop (arg: blocks it ran).
    Leave = 11,
}

#[cfg(feature = "trace")]
mod ring {
    use super::Ev;
    use std::fmt::Write as _;
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

    /// The environment variable naming the trace file.
    const TRACE_ENV: &str = "LEANRT_POOL_TRACE";
    use std::sync::OnceLock;
    use std::time::Instant;

    const RING: usize = 1 << 20;

    struct Slot {
        t: AtomicU64,
        /// pool (16) | who (16) | event (8) | cpu (12) | arg (12), from the top.
        what: AtomicU64,
    }

    static NEXT: AtomicUsize = AtomicUsize::new(0);
    static SLOTS: OnceLock<Box<[Slot]>> = OnceLock::new();
    static BASE: OnceLock<Instant> = OnceLock::new();

    fn slots() -> &'static [Slot] {
        SLOTS.get_or_init(|| {
            (0..RING)
                .map(|_| Slot {
                    t: AtomicU64::new(0),
                    what: AtomicU64::new(0),
                })
                .collect()
        })
    }

    pub(in super::super) fn record(pool: usize, who: usize, ev: Ev, arg: u64) {
        let t = BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64;
        // SAFETY: sched_getcpu takes no arguments and only reads.
        let cpu = unsafe { libc::sched_getcpu() }.max(0) as u64;
        let what = ((pool as u64 & 0xffff) << 48)
            | ((who as u64 & 0xffff) << 32)
            | ((ev as u64) << 24)
            | ((cpu & 0xfff) << 12)
            | arg.min(0xfff);
        let s = &slots()[NEXT.fetch_add(1, Ordering::Relaxed) % RING];
        s.t.store(t.max(1), Ordering::Relaxed);
        s.what.store(what, Ordering::Relaxed);
    }

    pub(in super::super) fn dump(pool: usize) {
        let Some(path) = std::env::var_os(TRACE_ENV) else {
            return;
        };
        let mut rows: Vec<(u64, u64)> = slots()
            .iter()
            .map(|s| (s.t.load(Ordering::Relaxed), s.what.load(Ordering::Relaxed)))
            .filter(|&(t, w)| t != 0 && (w >> 48) as usize == pool & 0xffff)
            .collect();
        rows.sort_unstable();
        let mut out = String::with_capacity(rows.len() * 32);
        let pid = std::process::id();
        for (t, w) in rows {
            out.push_str(&format!(
                "{pid}/{} {} {} {} {} {}\n",
                pool,
                t,
                (w >> 32) & 0xffff,
                (w >> 24) & 0xff,
                (w >> 12) & 0xfff,
                w & 0xfff
            ));
        }
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(out.as_bytes()));
        if let Err(e) = written {
            // Once per process, like leanrt's other environment warnings.
            static WARNED: AtomicBool = AtomicBool::new(false);
            if !WARNED.swap(true, Ordering::Relaxed) {
                let mut text = crate::diag::Text::join(&["ignoring ", TRACE_ENV, "=\""]);
                let _ = write!(
                    text,
                    "{}\" (cannot append to it: {e}); using none: this trace is dropped",
                    crate::error::quoted(&path.to_string_lossy())
                );
                crate::diag::warn(text.as_str());
            }
        }
    }
}

/// Records one event of pool `pool` by `who` (0: not a worker; i + 1:
/// worker i).
#[inline(always)]
pub(super) fn record(pool: usize, who: usize, ev: Ev, arg: u64) {
    #[cfg(feature = "trace")]
    ring::record(pool, who, ev, arg);
    #[cfg(not(feature = "trace"))]
    let _ = (pool, who, ev, arg);
}

/// Appends pool `pool`'s events to `$LEANRT_POOL_TRACE` (a pool's drop).
#[inline(always)]
pub(super) fn dump(pool: usize) {
    #[cfg(feature = "trace")]
    ring::dump(pool);
    #[cfg(not(feature = "trace"))]
    let _ = pool;
}

/// `who` of the calling thread: `worker.map_or(0, |i| i + 1)`.
#[inline(always)]
pub(super) fn who(worker: Option<usize>) -> usize {
    worker.map_or(0, |i| i + 1)
}
