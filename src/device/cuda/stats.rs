//! Copy counters of one CUDA device: successful copies, their bytes and the
//! wall time spent inside the driver's copy calls.
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A snapshot of the copy counters of one CUDA device (all its users, every
/// thread).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CudaCopyStats {
    pub h2d_copies: u64,
    pub h2d_bytes: u64,
    pub h2d_ns: u64,
    pub d2h_copies: u64,
    pub d2h_bytes: u64,
    pub d2h_ns: u64,
}

/// The counters of one direction.
#[derive(Debug, Default)]
struct DirectionCounters {
    copies: AtomicU64,
    bytes: AtomicU64,
    ns: AtomicU64,
}

impl DirectionCounters {
    fn add(&self, bytes: usize, since: Instant) {
        let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.copies.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        self.ns.fetch_add(ns, Ordering::Relaxed);
    }

    fn read(&self) -> (u64, u64, u64) {
        (
            self.copies.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
            self.ns.load(Ordering::Relaxed),
        )
    }
}

/// Host-to-device and device-to-host counters.
#[derive(Debug, Default)]
pub(super) struct CopyCounters {
    h2d: DirectionCounters,
    d2h: DirectionCounters,
}

impl CopyCounters {
    /// Counts one successful host-to-device copy that started at `since`.
    pub(super) fn add_h2d(&self, bytes: usize, since: Instant) {
        self.h2d.add(bytes, since);
    }

    /// Counts one successful device-to-host copy that started at `since`.
    pub(super) fn add_d2h(&self, bytes: usize, since: Instant) {
        self.d2h.add(bytes, since);
    }

    pub(super) fn snapshot(&self) -> CudaCopyStats {
        let (h2d_copies, h2d_bytes, h2d_ns) = self.h2d.read();
        let (d2h_copies, d2h_bytes, d2h_ns) = self.d2h.read();
        CudaCopyStats {
            h2d_copies,
            h2d_bytes,
            h2d_ns,
            d2h_copies,
            d2h_bytes,
            d2h_ns,
        }
    }
}
