//! Small statistics and process-measurement helpers shared by the benchmarks.
use serde::Serialize;
use std::time::Duration;

/// The value at quantile `q` (0..=1) of `samples` (nearest-rank on a sorted
/// copy); 0 for an empty slice.
pub fn quantile(samples: &[f64], q: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let q = q.clamp(0.0, 1.0);
    let rank = (q * v.len() as f64).ceil() as usize;
    v[rank.saturating_sub(1).min(v.len() - 1)]
}

/// The median of `samples`.
pub fn median(samples: &[f64]) -> f64 {
    quantile(samples, 0.5)
}

/// p50/p90/p99 of a set of samples, with the samples themselves.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Summary {
    pub n: usize,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Every raw sample, in measurement order.
    pub samples: Vec<f64>,
}

impl Summary {
    /// Adds `other`'s samples (a later turn's, say) to these.
    pub fn add(&mut self, other: Summary) {
        let mut samples = std::mem::take(&mut self.samples);
        samples.extend(other.samples);
        *self = Summary::of(samples);
    }

    /// Summarizes `samples` (kept whole for --json).
    pub fn of(samples: Vec<f64>) -> Summary {
        let n = samples.len();
        let mean = if n == 0 {
            0.0
        } else {
            samples.iter().sum::<f64>() / n as f64
        };
        Summary {
            n,
            p50: quantile(&samples, 0.5),
            p90: quantile(&samples, 0.9),
            p99: quantile(&samples, 0.99),
            min: if n == 0 {
                0.0
            } else {
                samples.iter().copied().fold(f64::INFINITY, f64::min)
            },
            max: samples.iter().copied().fold(0.0, f64::max),
            mean,
            samples,
        }
    }
}

/// Microseconds in a duration, as f64.
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Process resource usage at one instant (getrusage(RUSAGE_SELF)).
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// User + system CPU time of the whole process, seconds.
    pub cpu_s: f64,
    /// Minor page faults of the whole process so far.
    pub minflt: u64,
}

/// CPU seconds over wall seconds, percent (0 wall counts as 1 ns).
pub fn cpu_pct(cpu_s: f64, wall_s: f64) -> f64 {
    100.0 * cpu_s / wall_s.max(1e-9)
}

/// getrusage(RUSAGE_SELF) now.
pub fn usage() -> Usage {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole rusage into the valid, writable
    // buffer; RUSAGE_SELF cannot fail with a valid pointer.
    let ru = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr());
        ru.assume_init()
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Usage {
        cpu_s: tv(ru.ru_utime) + tv(ru.ru_stime),
        minflt: ru.ru_minflt as u64,
    }
}

/// Resident set size of this process in bytes, from /proc/self/statm
/// (0 where it cannot be read).
pub fn resident_bytes() -> u64 {
    let page = page_size() as u64;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * page)
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// The kernel release (uname -r), or "unknown".
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_follow_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.9), 90.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    }

    #[test]
    fn summary_keeps_samples_and_extremes() {
        let s = Summary::of(vec![5.0, 1.0, 3.0]);
        assert_eq!(s.n, 3);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 5.0);
        assert_eq!(s.mean, 3.0);
        assert_eq!(s.samples, vec![5.0, 1.0, 3.0]);
        let e = Summary::of(vec![]);
        assert_eq!((e.n, e.min, e.max, e.p50), (0, 0.0, 0.0, 0.0));
    }

    #[test]
    fn process_figures_are_plausible() {
        let before = usage();
        let v = vec![1u8; 8 << 20];
        std::hint::black_box(&v);
        let after = usage();
        assert!(after.minflt > before.minflt);
        assert!(resident_bytes() >= 8 << 20);
        assert!(page_size() >= 4096);
    }
}
