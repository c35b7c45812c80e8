//! Fault injection for the staging maker, through the C ABI.
//!
//! A simulated device (`DeviceSim`, see `fuzz_common`) fails its k-th
//! `device_malloc`, `copy_to_device` or `copy_from_device` call, for every k
//! along a whole script of runs (create, then six runs of claim / write /
//! upload / read_status with 3, 0, W, 17, 1 and W tasks, then destroy), for
//! every upload policy, with and without `LRT_MAKER_FRESH_MIRROR`.
//! For every failure:
//! * the call that met it reports the right status (`LRT_ERR_NO_MEMORY` for
//!   an allocation, `LRT_ERR_DEVICE` for a copy), leaves its out-parameters
//!   untouched and a message in `lrt_last_error`;
//! * the script goes on: the failed step is retried (a failed upload: the
//!   whole run is made again, as a host would), and every later run's device
//!   image is checked slot by slot (the device memory is poisoned before
//!   each upload, so nothing stale can pass);
//! * at the end, destroy frees every device allocation (allocations and frees
//!   balance) and the device saw no misuse (bad free, copy out of bounds).
mod fuzz_common;

use leanrt::ffi::staging::lrt_runtime_maker;
use std::ffi::c_void;
use std::ptr::null_mut;

use fuzz_common::*;
use leanrt::ffi::staging as ffi;
use leanrt::ffi::staging::{lrt_task_slot, lrt_upload_report};

const OK: i32 = 0;
const NO_MEMORY: i32 = 3;
const DEVICE: i32 = 4;

const W: u64 = 64;
const RUNS: [usize; 6] = [3, 0, W as usize, 17, 1, W as usize];

const H_CTI: usize = 0;
const H_WINDOW: usize = 192;
const H_DESC_PTR: usize = 224;
const H_PAY_PTR: usize = 232;
const H_SS_PTR: usize = 240;
const H_FLAGS_PTR: usize = 248;
const H_ORCH_ERR: usize = 272;
const DESC: usize = 40;
const PAY: usize = 4864;
const SS: usize = 64;
const D_KERNEL: usize = 8;
const P_SCALARS: usize = 4736;
const S_PAYLOAD: usize = 8;
const S_TASK: usize = 16;

#[repr(C)]
struct RawCfg {
    task_window: u64,
    policy: u32,
    flags: u32,
    heap_size: u64,
}

/// The value the script writes into slot `i` of run `r`.
fn tag(r: usize, i: usize, what: u64) -> u64 {
    ((r as u64) << 40) | ((i as u64) << 8) | what
}

/// Which injected failure, if any, a call met: the op whose counter passed
/// its `fail_at` during the call.
fn hit(sim: &DeviceSim, before: &[(Op, u64)]) -> Option<Op> {
    let st = sim.state();
    before.iter().find_map(|&(op, n0)| {
        let k = *st.fail_at.get(&op)?;
        let n1 = st.calls.get(&op).copied().unwrap_or(0);
        (n0 < k && k <= n1).then_some(op)
    })
}

fn counts(sim: &DeviceSim) -> Vec<(Op, u64)> {
    [Op::Malloc, Op::ToDevice, Op::FromDevice]
        .into_iter()
        .map(|op| (op, sim.calls(op)))
        .collect()
}

fn expected_status(op: Op) -> i32 {
    match op {
        Op::Malloc => NO_MEMORY,
        _ => DEVICE,
    }
}

#[derive(Default, Debug)]
struct Outcome {
    /// Calls per op over the whole script.
    calls: Vec<(Op, u64)>,
    /// Whether the injected failure was met (and by which function).
    met: Option<&'static str>,
    c_calls: u64,
}

/// Runs the script on a fresh device with `fail` injected.
fn script(policy: u32, flags: u32, fail: Option<(Op, u64)>) -> Outcome {
    let sim = Box::new(DeviceSim::new());
    if let Some((op, k)) = fail {
        sim.state().fail_at.insert(op, k);
    }
    let mut out = Outcome::default();
    let context = format!("policy {policy} flags {flags} fail {fail:?}");
    let api = sim.api();
    let cfg = RawCfg {
        task_window: W,
        policy,
        flags,
        heap_size: 0,
    };

    // create (retried once after an injected failure)
    let maker: *mut lrt_runtime_maker = loop {
        let before = counts(&sim);
        let mut m = 0x42 as *mut lrt_runtime_maker;
        mark_last_error();
        // SAFETY: valid config, api and out; the sim outlives the maker.
        let st =
            unsafe { ffi::lrt_runtime_maker_create((&cfg as *const RawCfg).cast(), &api, &mut m) }
                as i32;
        out.c_calls += 1;
        match hit(&sim, &before) {
            Some(op) => {
                assert_eq!(
                    st,
                    expected_status(op),
                    "{context}: create: {}",
                    last_error()
                );
                assert_eq!(m as usize, 0x42, "{context}: create wrote *out on failure");
                assert_error_names("lrt_runtime_maker_create", &context);
                assert_eq!(
                    sim.live_count(),
                    0,
                    "{context}: failed create leaked device memory"
                );
                out.met = Some("create");
            }
            None => {
                assert_eq!(st, OK, "{context}: create: {}", last_error());
                break m;
            }
        }
    };

    let mut r = 0;
    while r < RUNS.len() {
        let n = RUNS[r];
        let mut hdr = null_mut();
        // SAFETY: live maker, valid out.
        let st = unsafe { ffi::lrt_runtime_maker_begin_run(maker, &mut hdr) } as i32;
        out.c_calls += 1;
        assert_eq!(st, OK, "{context}: begin_run {r}: {}", last_error());
        let h = hdr.cast::<u8>();
        for i in 0..n {
            let mut slot = lrt_task_slot {
                index: -1,
                descriptor: null_mut(),
                payload: null_mut(),
                slot_state: null_mut(),
            };
            // SAFETY: live maker, valid out.
            let st = unsafe { ffi::lrt_runtime_maker_claim_slot(maker, &mut slot) } as i32;
            out.c_calls += 1;
            assert_eq!(st, OK, "{context}: claim {i} of run {r}: {}", last_error());
            wr_i32(slot.descriptor.cast(), D_KERNEL, tag(r, i, 1) as i32);
            wr_u64(slot.payload.cast(), P_SCALARS, tag(r, i, 2));
            wr_u64(slot.payload.cast(), P_SCALARS + 8 * 15, tag(r, i, 3));
        }
        let image = sim
            .state()
            .live
            .keys()
            .next()
            .copied()
            .expect("device image");
        sim.with_alloc(image as *mut c_void, |b| b.fill(POISON));
        let before = counts(&sim);
        let mut report = lrt_upload_report {
            total_tasks: -9,
            ..Default::default()
        };
        mark_last_error();
        // SAFETY: live maker, valid report.
        let st = unsafe { ffi::lrt_runtime_maker_upload(maker, &mut report) } as i32;
        out.c_calls += 1;
        if let Some(op) = hit(&sim, &before) {
            assert_eq!(
                st,
                expected_status(op),
                "{context}: upload {r}: {}",
                last_error()
            );
            assert_eq!(
                report.total_tasks, -9,
                "{context}: report written on failure"
            );
            assert_error_names("lrt_runtime_maker_upload", &context);
            out.met = Some("upload");
            // The host makes the run again: the maker must be usable.
            continue;
        }
        assert_eq!(st, OK, "{context}: upload {r}: {}", last_error());
        assert_eq!(report.total_tasks, n as i32);
        assert_eq!(rd_i32(h, H_CTI), n as i32);
        // The device image holds this run, with device pointers.
        sim.with_alloc(image as *mut c_void, |dev| {
            let base = dev.as_mut_ptr();
            let lo = base as u64;
            assert_eq!(
                rd_i32(base, H_CTI),
                n as i32,
                "{context}: run {r}: device cti"
            );
            assert_eq!(
                rd_u64(base, H_WINDOW),
                W,
                "{context}: run {r}: device window"
            );
            let off = |f: usize| rd_u64(base, f).wrapping_sub(lo) as usize;
            let (d0, p0, s0, f0) = (
                off(H_DESC_PTR),
                off(H_PAY_PTR),
                off(H_SS_PTR),
                off(H_FLAGS_PTR),
            );
            for i in 0..n {
                let (d, p, s) = (d0 + i * DESC, p0 + i * PAY, s0 + i * SS);
                assert_eq!(
                    rd_i32(base, d + D_KERNEL),
                    tag(r, i, 1) as i32,
                    "{context}: run {r} slot {i} kernel"
                );
                assert_eq!(
                    rd_u64(base, p + P_SCALARS),
                    tag(r, i, 2),
                    "{context}: run {r} slot {i} scalar0"
                );
                assert_eq!(
                    rd_u64(base, p + P_SCALARS + 120),
                    tag(r, i, 3),
                    "{context}: run {r} slot {i} scalar15"
                );
                assert_eq!(
                    rd_u64(base, s + S_PAYLOAD),
                    lo + p as u64,
                    "{context}: run {r} slot {i} payload ptr"
                );
                assert_eq!(
                    rd_u64(base, s + S_TASK),
                    lo + d as u64,
                    "{context}: run {r} slot {i} task ptr"
                );
                assert_eq!(dev[f0 + i], 0, "{context}: run {r} slot {i} flag");
            }
            // The device reports an error code for this run.
            wr_i32(base, H_ORCH_ERR, r as i32 + 1);
        });
        // read_status (retried once after an injected failure)
        loop {
            let before = counts(&sim);
            let mut status = 0x7777;
            mark_last_error();
            // SAFETY: live maker, valid out.
            let st = unsafe { ffi::lrt_runtime_maker_read_status(maker, &mut status) } as i32;
            out.c_calls += 1;
            if let Some(op) = hit(&sim, &before) {
                assert_eq!(
                    st,
                    expected_status(op),
                    "{context}: read_status {r}: {}",
                    last_error()
                );
                assert_eq!(
                    status, 0x7777,
                    "{context}: read_status wrote *out on failure"
                );
                assert_error_names("lrt_runtime_maker_read_status", &context);
                out.met = Some("read_status");
                continue;
            }
            assert_eq!(st, OK, "{context}: read_status {r}: {}", last_error());
            assert_eq!(status, -(r as i32 + 1), "{context}: read_status {r}");
            break;
        }
        r += 1;
    }
    out.calls = counts(&sim);
    // SAFETY: live maker, not used again.
    unsafe { ffi::lrt_runtime_maker_destroy(maker) };
    out.c_calls += 1;
    assert_eq!(
        sim.live_count(),
        0,
        "{context}: destroy leaked device memory"
    );
    {
        let st = sim.state();
        assert_eq!(
            st.total_allocs, st.total_frees,
            "{context}: allocations unbalanced"
        );
    }
    sim.assert_clean(&context);
    out
}

#[test]
fn every_kth_device_call_fails_cleanly() {
    let _dog = Watchdog::new("fault_staging", std::time::Duration::from_secs(240));
    let mut injected = 0u64;
    let mut c_calls = 0u64;
    for policy in 0..3u32 {
        for flags in [0u32, 2] {
            let dry = script(policy, flags, None);
            assert!(dry.met.is_none());
            c_calls += dry.c_calls;
            for &(op, total) in &dry.calls {
                assert!(
                    op != Op::Malloc || total >= 1,
                    "create allocates the device image"
                );
                // k = total + 1 is never reached: the script must still pass.
                for k in 1..=total + 1 {
                    let o = script(policy, flags, Some((op, k)));
                    c_calls += o.c_calls;
                    if k <= total {
                        assert!(
                            o.met.is_some(),
                            "policy {policy} flags {flags}: failure {op:?}#{k} not met"
                        );
                        injected += 1;
                    } else {
                        assert!(o.met.is_none());
                    }
                }
            }
        }
    }
    eprintln!(
        "fault_staging: {injected} injected device failures, {c_calls} C calls, all recovered"
    );
    assert!(injected > 0);
}
