//! The parallel runtimes `leanrt pool` compares: leanrt's pool (one per
//! configuration), rayon, and OpenMP (libgomp) through `csrc/omp_shim.c`.
//! Every peer runs the same Rust loop bodies.
//!
//! A peer is a file here implementing [`Peer`], a [`PeerKind`] variant
//! (its name in tables and in the child's spec), a line in [`open`], and
//! its `--peers` names in [`NAMES`] / [`parse_peer`].
pub mod leanrt_pool;
pub mod openmp;
pub mod rayon;

use super::results::Counters;
use super::spec::PeerKind;
use std::time::Duration;

/// The `--peers` names, as the help lists them.
pub const NAMES: [&str; 5] = ["rayon", "openmp", "openmp-passive", "openmp-active", "none"];

/// One `--peers` item: the runtimes it names (`openmp` is both of
/// libgomp's wait policies, `none` is no peer).
pub fn parse_peer(name: &str) -> Result<Vec<PeerKind>, String> {
    let omp = |p: &str| PeerKind::OpenMp {
        wait_policy: p.into(),
    };
    Ok(match name.trim() {
        "none" => vec![],
        "rayon" => vec![PeerKind::Rayon],
        "openmp" => vec![omp("passive"), omp("active")],
        "openmp-passive" => vec![omp("passive")],
        "openmp-active" => vec![omp("active")],
        _ => {
            return Err(format!(
                "unknown peer '{name}' (expected {})",
                NAMES.join(", ")
            ))
        }
    })
}

/// Whether this build of the command can run `kind` (OpenMP needs a C
/// compiler with OpenMP at build time).
pub fn built(kind: &PeerKind) -> bool {
    !matches!(kind, PeerKind::OpenMp { .. }) || openmp::OPENMP_BUILT
}

/// The runtime of one cell, `threads` wide.
pub fn open(kind: &PeerKind, threads: usize) -> Result<Box<dyn Peer>, String> {
    Ok(match kind {
        PeerKind::Leanrt { config } => Box::new(leanrt_pool::LeanrtPool::new(threads, config)?),
        PeerKind::Rayon => Box::new(rayon::Rayon::new(threads)?),
        PeerKind::OpenMp { .. } => Box::new(openmp::OpenMp::new(threads)?),
    })
}

/// A parallel runtime under test.
pub trait Peer {
    /// Degree of parallelism (threads including the caller).
    fn dop(&self) -> usize;
    /// `body(i)` once for every i in [0, total), in parallel, returning when
    /// all are done. `cost_cycles` is the estimated cost of one index (used by
    /// leanrt's cost model, as an ORT kernel passes it).
    fn parallel_for(&self, total: usize, cost_cycles: f64, body: &(dyn Fn(usize) + Sync));
    /// A tiny region: one index per thread, `body(i)` for i in [0, dop).
    fn tiny_region(&self, body: &(dyn Fn(usize) + Sync));
    /// Submits a probe to the runtime's workers and returns how long after
    /// the submission a worker (not the caller, where the runtime has
    /// workers) started running it.
    fn wake_latency(&self) -> Duration;
    /// The pool's counters, for leanrt.
    fn stats(&self) -> Option<Counters> {
        None
    }
    /// Whether `begin_run` / `end_run` tell the runtime anything (leanrt
    /// with `session.force_spinning_stop`, where ONNX Runtime's session
    /// enables spinning when a run starts and disables it when it ends).
    fn hints(&self) -> bool {
        false
    }
    /// `loops` loops of `total` indices each (`body(i)` once per index and
    /// loop) inside one parallel section: the team that joins the first
    /// loop stays for the next ones. Returns whether the loops ran attached
    /// to a team (a section can fall back to plain loops), or None, having
    /// run nothing, where the runtime has no sections.
    fn section_loops(
        &self,
        _loops: u32,
        _total: usize,
        _cost_cycles: f64,
        _body: &(dyn Fn(usize) + Sync),
    ) -> Option<bool> {
        None
    }
    /// An inference run starts.
    fn begin_run(&self) {}
    /// An inference run ended.
    fn end_run(&self) {}
}

#[cfg(test)]
mod tests {
    use super::leanrt_pool::LeanrtPool;
    #[cfg(leanrt_openmp)]
    use super::openmp::{omp_max_threads, OpenMp};
    use super::rayon::Rayon;
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn covers_every_index(p: &dyn Peer) {
        for total in [0usize, 1, 7, 1000] {
            let hits: Vec<AtomicUsize> = (0..total).map(|_| AtomicUsize::new(0)).collect();
            p.parallel_for(total, 100.0, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(
                hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "total {total}"
            );
        }
        let n = AtomicUsize::new(0);
        p.tiny_region(&|_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), p.dop());
        let _ = p.wake_latency();
    }

    #[test]
    fn peer_names_parse() {
        assert_eq!(parse_peer("rayon").unwrap(), vec![PeerKind::Rayon]);
        assert_eq!(parse_peer("openmp").unwrap().len(), 2);
        assert!(parse_peer("none").unwrap().is_empty());
        assert!(parse_peer("tbb")
            .unwrap_err()
            .contains("unknown peer 'tbb'"));
        for n in NAMES {
            assert!(parse_peer(n).is_ok(), "{n}");
        }
    }

    #[test]
    fn rayon_peer_runs_every_index_once() {
        covers_every_index(&Rayon::new(2).unwrap());
    }

    #[test]
    fn leanrt_peer_runs_every_index_once() {
        covers_every_index(&LeanrtPool::new(2, "spin_1000_backoff_8").unwrap());
        covers_every_index(&LeanrtPool::new(1, "default").unwrap());
    }

    #[cfg(leanrt_openmp)]
    #[test]
    fn openmp_peer_runs_every_index_once() {
        covers_every_index(&OpenMp::new(2).unwrap());
        assert!(omp_max_threads() >= 1);
    }
}
