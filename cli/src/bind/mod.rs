//! `leanrt bind`: the staging benchmark.
//!
//! * `policies`  — per-run cost of each upload policy across windows and task
//!   counts (the default mode)
//! * `bandwidth` — copy_to_device bandwidth from pageable and pinned memory
//!   (`--bandwidth`)
//! * `backend`   — the device, the maker and the measurement of one run: with
//!   `backend_v2`, the only modules of the command that call leanrt's staging
//!   and device API
//! * `v2`, `backend_v2` — `--layout v2`: the reference's current image on
//!   leanrt's maker and on the reference's own per-run path
//! * `model`     — the policies and one run's figures
//! * `report`    — tables, headline, charts and unit formatting
mod backend;
mod backend_v2;
mod bandwidth;
mod model;
mod policies;
mod report;
mod v2;

pub use backend::{cuda_detail, parse_backend, Backend};
pub use bandwidth::{bandwidth, bandwidth_charts, bandwidth_table, BandwidthCell};
pub use model::Policy;
pub use policies::{pairs, parse_window, run, BindCell, BindPlan};
pub use report::{charts, headline, table};
#[cfg(test)]
pub use report::{fmt_bytes, fmt_ns, times};
pub use v2::{run_v2, table_v2};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_must_be_powers_of_two_that_fit() {
        assert_eq!(parse_window("16384"), Ok(16384));
        assert_eq!(parse_window("4"), Ok(4));
        assert!(parse_window("3").is_err());
        assert!(parse_window("0").is_err());
        assert!(parse_window("1000").is_err());
        assert!(parse_window("abc").is_err());
        // 2^20 slots need about 5 GB: over INT32_MAX bytes.
        assert!(parse_window("1048576").is_err());
    }

    #[test]
    fn backends_parse() {
        assert_eq!(parse_backend("host"), Ok(Backend::Host));
        assert_eq!(parse_backend("cuda"), Ok(Backend::Cuda(0)));
        assert_eq!(parse_backend("cuda:3"), Ok(Backend::Cuda(3)));
        assert!(parse_backend("cuda:-1").is_err());
        assert!(parse_backend("gpu").is_err());
    }

    #[test]
    fn tasks_above_the_window_are_skipped() {
        let plan = BindPlan {
            windows: vec![4, 16],
            tasks: vec![0, 8, 16],
            policies: vec![Policy::Bounded],
            backend: Backend::Host,
            runs: 1,
            min_time_ms: 0,
            max_runs: 1,
            warmup: 1,
            pin_mirror: false,
        };
        assert_eq!(pairs(&plan), vec![(4, 0), (16, 0), (16, 8), (16, 16)]);
    }

    #[test]
    fn units_format() {
        assert_eq!(fmt_ns(1500.0), "1.5 µs");
        assert_eq!(fmt_ns(2.5e6), "2.50 ms");
        assert_eq!(fmt_bytes(81_412_416.0), "81.41 MB");
        assert_eq!(times(3.25), "3.2×");
        assert_eq!(times(6952.6), "6953×");
    }
}
