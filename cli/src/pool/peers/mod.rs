//! The parallel runtimes `leanrt pool` compares: leanrt's pool (one per
//! configuration; other builds of it through their libraries,
//! `leanrt_lib`), rayon, OpenMP (libgomp) through `csrc/omp_shim.c`, and
//! ONNX Runtime's own intra-op pool through a custom op (`ort`, one per
//! configuration that uses ORT's keys only). Every peer runs the same Rust
//! loop bodies.
//!
//! A peer is a file here implementing [`Peer`] (`peer.rs`), a [`PeerKind`] variant
//! (its name in tables and in the child's spec), a line in [`open`], and
//! its `--peers` names in [`NAMES`] / [`parse_peer`].
pub mod leanrt_lib;
pub mod leanrt_pool;
pub mod openmp;
pub mod ort;
mod peer;
pub mod rayon;

pub use peer::Peer;

use super::spec::PeerKind;

/// The `--peers` names, as the help lists them.
pub const NAMES: [&str; 6] = [
    "rayon",
    "openmp",
    "openmp-passive",
    "openmp-active",
    "ort",
    "none",
];

/// One `--peers` item: the runtimes it names (`openmp` is both of
/// libgomp's wait policies, `ort` ONNX Runtime's pool with every
/// configuration, its library found by `available`; `none` is no peer).
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
        "ort" => vec![PeerKind::Ort {
            config: String::new(),
            library: String::new(),
            version: String::new(),
        }],
        _ => {
            return Err(format!(
                "unknown peer '{name}' (expected {})",
                NAMES.join(", ")
            ))
        }
    })
}

/// `kind` as this command can run it, or why it cannot, for the warning
/// that skips it: OpenMP needs a C compiler with OpenMP at build time, ONNX
/// Runtime its library at run time (`ort::find_library`, which fills in
/// the library and its version).
pub fn available(kind: &PeerKind) -> Result<PeerKind, String> {
    match kind {
        PeerKind::OpenMp { .. } if !openmp::OPENMP_BUILT => Err(format!(
            "this leanrt command was built without an OpenMP compiler; skipping {}",
            kind.label()
        )),
        PeerKind::Ort { config, .. } => match ort::find_library() {
            Ok(lib) => Ok(PeerKind::Ort {
                config: config.clone(),
                library: lib.path.to_string_lossy().into_owned(),
                version: lib.version,
            }),
            Err(why) => Err(format!("skipping the ort peer: {why}")),
        },
        other => Ok(other.clone()),
    }
}

/// The runtime of one cell, `threads` wide.
pub fn open(kind: &PeerKind, threads: usize) -> Result<Box<dyn Peer>, String> {
    Ok(match kind {
        PeerKind::Leanrt { config } => Box::new(leanrt_pool::LeanrtPool::new(threads, config)?),
        PeerKind::LeanrtLib {
            config, library, ..
        } => Box::new(leanrt_lib::LeanrtLib::new(library, threads, config)?),
        PeerKind::Rayon => Box::new(rayon::Rayon::new(threads)?),
        PeerKind::OpenMp { .. } => Box::new(openmp::OpenMp::new(threads)?),
        PeerKind::Ort {
            config, library, ..
        } => Box::new(ort::Ort::new(
            threads,
            config,
            std::path::Path::new(library),
        )?),
    })
}

/// Checks a peer's loops: each index of a loop runs exactly once, a tiny
/// region once per thread (the peers' tests share it).
#[cfg(test)]
pub fn covers_every_index(p: &dyn Peer) {
    use std::sync::atomic::{AtomicUsize, Ordering};
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

#[cfg(test)]
mod tests {
    use super::leanrt_pool::LeanrtPool;
    #[cfg(leanrt_openmp)]
    use super::openmp::{omp_max_threads, OpenMp};
    use super::rayon::Rayon;
    use super::*;

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
