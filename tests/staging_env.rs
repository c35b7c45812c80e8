//! Window resolution: config, then PTO2_RING_TASK_WINDOW, then 16384. One
//! test in its own binary because it changes the process environment.
use leanrt::staging::Maker;
use leanrt::staging::{MakerConfig, MakerV1, TASK_WINDOW_ENV};

fn window(configured: u64) -> Result<u64, leanrt::ErrorKind> {
    let cfg = MakerConfig {
        task_window: configured,
        ..MakerConfig::default()
    };
    MakerV1::new(&cfg, std::sync::Arc::new(leanrt::device::host::HostDevice))
        .map(|m| m.task_window())
        .map_err(|e| e.kind())
}

#[test]
fn window_resolution_order() {
    std::env::remove_var(TASK_WINDOW_ENV);
    assert_eq!(window(0), Ok(16384));
    assert_eq!(window(64), Ok(64));
    std::env::set_var(TASK_WINDOW_ENV, "256");
    assert_eq!(window(0), Ok(256), "env used when the config says 0");
    assert_eq!(window(32), Ok(32), "config wins over env");
    // Digits only, as the pool's config values: no spaces, no sign.
    for bad in [
        "abc", "3", "100", "", "-16", "1048576", " 64 ", " 64", "64 ", "+64",
    ] {
        std::env::set_var(TASK_WINDOW_ENV, bad);
        assert_eq!(window(0), Ok(16384), "invalid env {bad:?} ignored");
    }
    std::env::set_var(TASK_WINDOW_ENV, "256");
    assert_eq!(window(3), Err(leanrt::ErrorKind::InvalidArgument));
    std::env::remove_var(TASK_WINDOW_ENV);
}
