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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::{cells, PoolPlan, WorkKind, CONCURRENT};

    fn spec(peer: PeerKind, callers: usize, arrangement: Arrangement) -> CellSpec {
        CellSpec {
            peer,
            threads: 2,
            scenarios: vec![],
            sizes: Sizes::tiny(),
            oversubscribe: false,
            concurrent: Some(Concurrent {
                callers,
                arrangement,
            }),
        }
    }

    /// Every caller runs `concurrent_runs` runs per gap, on each of leanrt's
    /// arrangements and the baseline, with either kernel.
    #[test]
    fn every_caller_runs_its_runs_at_every_gap() {
        let leanrt = PeerKind::Leanrt {
            config: "default".into(),
        };
        for a in [
            Arrangement::Serial,
            Arrangement::Shared,
            Arrangement::PerCaller,
        ] {
            let mut sp = spec(leanrt.clone(), 3, a);
            for work in [WorkKind::Spin, WorkKind::Sgemm] {
                sp.sizes.work = work;
                let v = concurrent(&sp, &sp.concurrent.unwrap()).unwrap();
                assert_eq!(v.len(), 2, "{a:?}");
                for (r, gap) in v.iter().zip([0.0, 0.1]) {
                    assert_eq!(r.gap_ms, gap);
                    assert_eq!(r.runs, 3 * 2, "{a:?}");
                    assert_eq!(r.latency_us.n, 6);
                    assert!(r.wall_s > 0.0 && r.runs_per_s > 0.0);
                    assert!(r.cpu_per_run_ms() >= 0.0);
                }
            }
        }
        // By duration: at least one run per caller.
        let mut sp = spec(leanrt.clone(), 2, Arrangement::Shared);
        sp.sizes.concurrent_runs = 0;
        let v = concurrent(&sp, &sp.concurrent.unwrap()).unwrap();
        assert!(v.iter().all(|r| r.runs >= 2));
        // ORT's arrangements are ORT's only.
        let err = concurrent(
            &spec(leanrt, 1, Arrangement::Global),
            &Concurrent {
                callers: 1,
                arrangement: Arrangement::Global,
            },
        )
        .unwrap_err();
        assert!(err.contains("no arrangement 'global pools'"), "{err}");
    }

    /// A failing runtime fails the cell; no caller waits forever.
    #[test]
    fn a_caller_whose_runtime_fails_fails_the_cell() {
        // ORT refuses leanrt's own key when each caller opens its session.
        let sp = spec(
            PeerKind::Ort {
                config: "adaptive".into(),
                library: "/nonexistent/libonnxruntime.so.1.31.1".into(),
                version: "1.31.1".into(),
            },
            2,
            Arrangement::PerCaller,
        );
        let err = concurrent(&sp, &sp.concurrent.unwrap()).unwrap_err();
        assert!(err.contains("not run on ONNX Runtime"), "{err}");
    }

    /// ORT's arrangements in process (the global pools need an environment
    /// of their own, so a process of their own: the CLI's tests run them).
    #[test]
    fn ort_arrangements_run_concurrent_callers() {
        let Some(lib) = crate::pool::peers::ort::tests::library_for_test() else {
            return;
        };
        let ort = PeerKind::Ort {
            config: "default".into(),
            library: lib.path.to_string_lossy().into_owned(),
            version: lib.version.clone(),
        };
        for a in [
            Arrangement::PerCaller,
            Arrangement::Shared,
            Arrangement::OneThread,
        ] {
            let mut sp = spec(ort.clone(), 2, a);
            sp.sizes.work = WorkKind::Sgemm;
            let v = concurrent(&sp, &sp.concurrent.unwrap()).unwrap();
            assert!(v.iter().all(|r| r.runs == 4), "{a:?}");
        }
    }

    /// The concurrent cells of a plan: per caller count the baseline, then
    /// leanrt's arrangements per configuration, then ORT's per library.
    #[test]
    fn plans_have_one_cell_per_caller_count_and_arrangement() {
        let ort = |v: &str| PeerKind::Ort {
            config: String::new(),
            library: format!("/x/libonnxruntime.so.{v}"),
            version: v.into(),
        };
        let plan = PoolPlan {
            threads: vec![2],
            configs: vec!["default".into(), "adaptive".into()],
            peers: vec![ort("1.31.1"), ort("1.32.0")],
            scenarios: vec!["request".into(), "concurrent".into()],
            sizes: Sizes::tiny(),
            oversubscribe: false,
            callers: vec![1, 4],
        };
        let v = cells(&plan);
        let single: Vec<_> = v.iter().filter(|c| c.concurrent.is_none()).collect();
        // leanrt × 2 configurations + ORT default × 2 libraries (adaptive
        // is leanrt's own key).
        assert_eq!(single.len(), 4);
        assert!(single.iter().all(|c| c.scenarios == ["request"]));
        let conc: Vec<_> = v.iter().filter_map(|c| Some((c, c.concurrent?))).collect();
        // Per K: 1 baseline + 2 × 2 leanrt + 2 libraries × 4 ORT.
        assert_eq!(conc.len(), 2 * (1 + 4 + 8));
        let (first, c) = conc[0];
        assert_eq!(c.arrangement, Arrangement::Serial);
        assert_eq!(first.scenarios, [CONCURRENT]);
        assert_eq!(conc.iter().filter(|(_, c)| c.callers == 4).count(), 13);
        let ort_rows: Vec<_> = conc
            .iter()
            .filter(|(s, c)| c.callers == 1 && matches!(s.peer, PeerKind::Ort { .. }))
            .map(|(s, c)| (s.peer.label(), c.arrangement))
            .collect();
        assert_eq!(ort_rows.len(), 8);
        assert_eq!(
            ort_rows[0],
            ("ort 1.31.1 default".into(), Arrangement::PerCaller)
        );
        assert_eq!(
            ort_rows[7],
            ("ort 1.32.0 default".into(), Arrangement::OneThread)
        );
    }
}
