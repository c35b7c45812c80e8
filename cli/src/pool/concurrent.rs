//! The concurrent scenario: K request threads ("callers") in one process,
//! each running the request scenario's inference runs one after another
//! (back to back, or with a gap after each), against one arrangement of
//! the runtime: one pool shared by the callers, one pool per caller, ORT's
//! global pools or one-thread sessions, or no pool at all (the baseline:
//! one thread per caller). One cell per caller count and arrangement, in a
//! child process of its own.
//!
//! Per gap the cell measures every caller's run latencies, the runs of all
//! callers over the wall time from the moment they all start to the moment
//! the last one is done (throughput), and the process's CPU over the same
//! wall time (getrusage: every thread, inside and between runs).
use super::peers::{self, leanrt_pool::LeanrtPool, ort, Peer};
use super::results::ConcurrentRun;
use super::spec::{Arrangement, CellSpec, Concurrent, PeerKind, Sizes};
use super::workload::{inference_run, inference_run_serial, IS_CALLER};
use crate::stats::{us, usage, Summary};
use std::path::Path;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// One caller's runtime: what one inference run is on it.
type Run<'a> = Box<dyn Fn(&Sizes) + 'a>;

/// Runs one concurrent cell.
pub fn concurrent(spec: &CellSpec, c: &Concurrent) -> Result<Vec<ConcurrentRun>, String> {
    let (s, t) = (&spec.sizes, spec.threads);
    let per_caller = |kind: PeerKind, threads: usize| {
        move || -> Result<Run<'static>, String> {
            let p: Box<dyn Peer> = peers::open(&kind, threads)?;
            Ok(Box::new(move |s: &Sizes| inference_run(p.as_ref(), s)))
        }
    };
    match (c.arrangement, &spec.peer) {
        (Arrangement::Serial, _) => drive(c.callers, s, &|| Ok(Box::new(inference_run_serial))),
        (Arrangement::PerCaller, kind) => drive(c.callers, s, &per_caller(kind.clone(), t)),
        (Arrangement::Shared, PeerKind::Leanrt { config }) => {
            let pool = LeanrtPool::new(t, config)?;
            drive(c.callers, s, &|| {
                let p = &pool;
                Ok(Box::new(move |s: &Sizes| inference_run(p, s)))
            })
        }
        (
            Arrangement::Shared,
            PeerKind::Ort {
                config, library, ..
            },
        ) => {
            let session = ort::SharedSession::new(t, config, Path::new(library), s)?;
            drive(c.callers, s, &|| {
                let session = &session;
                Ok(Box::new(move |_: &Sizes| session.run()))
            })
        }
        (Arrangement::OneThread, kind @ PeerKind::Ort { .. }) => {
            drive(c.callers, s, &per_caller(kind.clone(), 1))
        }
        (
            Arrangement::Global,
            PeerKind::Ort {
                config, library, ..
            },
        ) => drive(c.callers, s, &|| {
            let p = ort::Ort::new_global(t, config, Path::new(library))?;
            Ok(Box::new(move |s: &Sizes| {
                inference_run(&p, s);
            }))
        }),
        (a, kind) => Err(format!(
            "the concurrent scenario has no arrangement '{}' for {}",
            a.label(),
            kind.label()
        )),
    }
}

/// `callers` threads, each making its runtime with `make` (on that thread),
/// warming it up, then running every gap of the sizes in step with the
/// others; this thread reads the clock and the process's CPU when they all
/// start and when the last is done.
fn drive<'a>(
    callers: usize,
    s: &Sizes,
    make: &(dyn Fn() -> Result<Run<'a>, String> + Sync),
) -> Result<Vec<ConcurrentRun>, String> {
    let gaps = &s.concurrent_gaps_ms;
    let barrier = Barrier::new(callers + 1);
    let failed: Mutex<Option<String>> = Mutex::new(None);
    let (latencies, marks) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..callers)
            .map(|_| {
                scope.spawn(|| {
                    IS_CALLER.with(|c| c.set(true));
                    let run = match make() {
                        Ok(run) => Some(run),
                        Err(e) => {
                            failed
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .get_or_insert(e);
                            None
                        }
                    };
                    if let Some(run) = &run {
                        for _ in 0..3 {
                            run(s);
                        }
                    }
                    let mut per_gap = Vec::with_capacity(gaps.len());
                    for &gap in gaps {
                        // A caller whose runtime failed still keeps step, so
                        // that no one waits for it.
                        barrier.wait();
                        let v = run.as_ref().map_or(vec![], |run| runs(run, s, gap));
                        barrier.wait();
                        per_gap.push(v);
                    }
                    per_gap
                })
            })
            .collect();
        let mut marks = Vec::with_capacity(gaps.len());
        for _ in gaps {
            barrier.wait();
            let (u0, w0) = (usage(), Instant::now());
            barrier.wait();
            marks.push((w0.elapsed().as_secs_f64(), usage().cpu_s - u0.cpu_s));
        }
        let latencies: Vec<Vec<Vec<f64>>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        (latencies, marks)
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    Ok(gaps
        .iter()
        .enumerate()
        .map(|(g, &gap_ms)| {
            let all: Vec<f64> = latencies
                .iter()
                .flat_map(|c| c[g].iter().copied())
                .collect();
            let (wall_s, cpu_s) = marks[g];
            ConcurrentRun {
                gap_ms,
                runs: all.len() as u64,
                wall_s,
                runs_per_s: all.len() as f64 / wall_s.max(1e-9),
                latency_us: Summary::of(all),
                cpu_s,
            }
        })
        .collect())
}

/// One caller's runs at one gap: `concurrent_runs` of them, or as many as
/// start within `concurrent_ms` (at least one); returns their latencies, µs.
fn runs(run: &Run<'_>, s: &Sizes, gap_ms: f64) -> Vec<f64> {
    let gap = Duration::from_secs_f64(gap_ms / 1e3);
    let end = Instant::now() + Duration::from_millis(s.concurrent_ms);
    let mut v = Vec::new();
    loop {
        let done = if s.concurrent_runs > 0 {
            v.len() >= s.concurrent_runs as usize
        } else {
            !v.is_empty() && Instant::now() >= end
        };
        if done {
            return v;
        }
        let t = Instant::now();
        run(s);
        v.push(us(t.elapsed()));
        if gap_ms > 0.0 {
            // A plain sleep, as in the request scenario.
            std::thread::sleep(gap);
        }
    }
}
