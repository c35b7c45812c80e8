//! Fault injection for the staging maker, through the core API: the fake
//! device (`tests/staging_support`) fails its k-th `alloc`, `copy_to` or
//! `copy_from` call, for every k along a whole script of runs (create, then
//! six runs of claim / write / upload / read_status with 3, 0, W, 17, 1 and
//! W tasks, then drop), for every upload policy, with and without a fresh
//! mirror per run. For every failure:
//! * the call that met it fails with the right kind (`NoMemory` for an
//!   allocation, `Device` for a copy) and a message;
//! * the script goes on: the failed step is retried (a failed upload: the
//!   whole run is made again, as a host would), and every later run's device
//!   image is checked slot by slot (the device memory is poisoned before
//!   each upload, so nothing stale can pass);
//! * at the end, drop frees every device allocation (allocations and frees
//!   balance) and the device saw no misuse (bad free, copy out of bounds).
//!
//! How each failure reaches a C caller (status, untouched out-parameters,
//! the message naming the function) is `c_tests/hardening/staging_faults.c`.
mod fuzz_common;
mod staging_support;

use fuzz_common::*;
use leanrt::staging::Maker;
use leanrt::staging::{lrt_upload_policy, MakerConfig, MakerV1};
use leanrt::{Error, ErrorKind};
use staging_support::{FakeDevice, Op, POISON};

const W: u64 = 64;
const RUNS: [usize; 6] = [3, 0, W as usize, 17, 1, W as usize];

/// The value the script writes into slot `i` of run `r`.
fn tag(r: usize, i: usize, what: u64) -> u64 {
    ((r as u64) << 40) | ((i as u64) << 8) | what
}

fn counts(dev: &FakeDevice) -> Vec<(Op, u64)> {
    [Op::Malloc, Op::ToDevice, Op::FromDevice]
        .into_iter()
        .map(|op| (op, dev.calls(op)))
        .collect()
}

/// Which injected failure, if any, a call met: the op whose counter passed
/// its `fail_at` during the call.
fn hit(dev: &FakeDevice, before: &[(Op, u64)]) -> Option<Op> {
    let st = dev.state();
    before.iter().find_map(|&(op, n0)| {
        let k = *st.fail_at.get(&op)?;
        let n1 = st.calls.get(&op).copied().unwrap_or(0);
        (n0 < k && k <= n1).then_some(op)
    })
}

/// A failed call's error against the injected op.
fn check_failure(e: &Error, op: Op, context: &str) {
    let want = match op {
        Op::Malloc => ErrorKind::NoMemory,
        _ => ErrorKind::Device,
    };
    assert_eq!(e.kind(), want, "{context}: {}", e.message());
    assert!(e.message().contains("fake device"), "{context}: {e}");
}

#[derive(Default, Debug)]
struct Outcome {
    /// Calls per op over the whole script.
    calls: Vec<(Op, u64)>,
    /// Which step met the injected failure.
    met: Option<&'static str>,
}

/// Runs the script on a fresh device with `fail` injected.
fn script(policy: lrt_upload_policy, fresh: bool, fail: Option<(Op, u64)>) -> Outcome {
    let dev = FakeDevice::new();
    if let Some((op, k)) = fail {
        dev.fail_at(op, k);
    }
    let mut out = Outcome::default();
    let context = format!("policy {policy:?} fresh {fresh} fail {fail:?}");
    let cfg = MakerConfig {
        task_window: W,
        policy,
        fresh_mirror: fresh,
        ..MakerConfig::default()
    };

    // create (retried once after an injected failure)
    let mut maker = loop {
        let before = counts(&dev);
        match MakerV1::new(&cfg, dev.device()) {
            Err(e) => {
                let op = hit(&dev, &before).unwrap_or_else(|| panic!("{context}: create: {e}"));
                check_failure(&e, op, &format!("{context}: create"));
                assert_eq!(dev.live_count(), 0, "{context}: failed create leaked");
                out.met = Some("create");
            }
            Ok(m) => {
                assert!(
                    hit(&dev, &before).is_none(),
                    "{context}: create hid a failure"
                );
                break m;
            }
        }
    };

    let mut r = 0;
    while r < RUNS.len() {
        let n = RUNS[r];
        let h = maker.begin_run().expect("begin_run").cast::<u8>();
        for i in 0..n {
            let slot = maker.claim_slot().expect("claim");
            wr_i32(slot.descriptor.cast(), 8, tag(r, i, 1) as i32);
            // SAFETY: a claimed slot's payload, ours until upload.
            unsafe {
                (*slot.payload).scalars[0] = tag(r, i, 2);
                (*slot.payload).scalars[15] = tag(r, i, 3);
            }
        }
        let image = maker.device_image();
        dev.with_alloc(image, |b| b.fill(POISON));
        let before = counts(&dev);
        let report = match maker.upload() {
            Err(e) => {
                let op = hit(&dev, &before).unwrap_or_else(|| panic!("{context}: upload {r}: {e}"));
                check_failure(&e, op, &format!("{context}: upload {r}"));
                out.met = Some("upload");
                // The host makes the run again: the maker must be usable.
                continue;
            }
            Ok(report) => report,
        };
        assert!(
            hit(&dev, &before).is_none(),
            "{context}: upload hid a failure"
        );
        assert_eq!(report.total_tasks, n as i32);
        assert_eq!(rd_i32(h, 0), n as i32, "{context}: mirror index");
        // The device image holds this run, with device pointers.
        dev.with_alloc(image, |bytes| {
            let base = bytes.as_mut_ptr();
            let h = base.cast::<leanrt::staging::lrt_sm_header>();
            // SAFETY: the device image is host memory holding a shipped
            // header whose pointers address its own segments.
            let h = unsafe { &mut *h };
            assert_eq!(h.current_task_index, n as i32, "{context}: run {r}");
            assert_eq!(h.task_window_size, W, "{context}: run {r}");
            for i in 0..n {
                // SAFETY: i < N; the header's pointers address the image.
                let (d, p, s, f) = unsafe {
                    (
                        &*h.task_descriptors.add(i),
                        &*h.task_payloads.add(i),
                        &*h.slot_states.add(i),
                        *h.completion_flags.add(i),
                    )
                };
                let ctx = format!("{context}: run {r} slot {i}");
                assert_eq!(d.kernel_id[0], tag(r, i, 1) as i32, "{ctx}");
                assert_eq!(p.scalars[0], tag(r, i, 2), "{ctx}");
                assert_eq!(p.scalars[15], tag(r, i, 3), "{ctx}");
                assert_eq!(s.payload as *const _, p as *const _, "{ctx}");
                assert_eq!(s.task as *const _, d as *const _, "{ctx}");
                assert_eq!(f, 0, "{ctx}");
            }
            // The device reports an error code for this run.
            h.orch_error_code = r as i32 + 1;
        });
        // read_status (retried once after an injected failure)
        loop {
            let before = counts(&dev);
            match maker.read_status() {
                Err(e) => {
                    let op = hit(&dev, &before)
                        .unwrap_or_else(|| panic!("{context}: read_status {r}: {e}"));
                    check_failure(&e, op, &format!("{context}: read_status {r}"));
                    out.met = Some("read_status");
                }
                Ok(status) => {
                    assert_eq!(status, -(r as i32 + 1), "{context}: read_status {r}");
                    break;
                }
            }
        }
        r += 1;
    }
    out.calls = counts(&dev);
    drop(maker);
    assert_eq!(dev.live_count(), 0, "{context}: drop leaked device memory");
    {
        let st = dev.state();
        assert_eq!(st.total_allocs, st.total_frees, "{context}: allocations");
    }
    dev.assert_clean(&context);
    out
}

#[test]
fn every_kth_device_call_fails_cleanly() {
    let _dog = Watchdog::new("fault_staging", std::time::Duration::from_secs(240));
    let mut injected = 0u64;
    for policy in [
        lrt_upload_policy::LRT_UPLOAD_FULL,
        lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        lrt_upload_policy::LRT_UPLOAD_COMPACT,
    ] {
        for fresh in [false, true] {
            let dry = script(policy, fresh, None);
            assert!(dry.met.is_none());
            for &(op, total) in &dry.calls {
                assert!(
                    op != Op::Malloc || total >= 1,
                    "create allocates the device image"
                );
                // k = total + 1 is never reached: the script must still pass.
                for k in 1..=total + 1 {
                    let o = script(policy, fresh, Some((op, k)));
                    if k <= total {
                        assert!(
                            o.met.is_some(),
                            "{policy:?} fresh {fresh}: failure {op:?}#{k} not met"
                        );
                        injected += 1;
                    } else {
                        assert!(o.met.is_none());
                    }
                }
            }
        }
    }
    eprintln!("fault_staging: {injected} injected device failures, all recovered");
    assert!(injected > 0);
}
