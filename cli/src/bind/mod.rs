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
//! * `report`    — tables, headline and charts (layout and units in
//!   `crate::format`)
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
pub use v2::{run_v2, table_v2, V2Cell};

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
}
