//! The maker's lifecycle, errors and status, through the Rust API and the
//! C entry points.
mod emulation;
mod staging_support;

use leanrt::staging::Maker;
use leanrt::staging::{lrt_sm_header, lrt_upload_policy, MakerConfig, MakerV1};
use leanrt::ErrorKind;
use staging_support::*;

fn cfg(w: u64, policy: lrt_upload_policy) -> MakerConfig {
    MakerConfig {
        task_window: w,
        policy,
        ..MakerConfig::default()
    }
}

fn host_api() -> std::sync::Arc<dyn leanrt::device::Device> {
    host_device()
}

fn set_index(h: *mut lrt_sm_header, v: i32) {
    // SAFETY: h is the live mirror header from begin_run.
    unsafe { (*h).current_task_index = v };
}

#[test]
fn host_backend_round_trip_and_status() {
    for policy in [
        lrt_upload_policy::LRT_UPLOAD_FULL,
        lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        lrt_upload_policy::LRT_UPLOAD_COMPACT,
    ] {
        let mut m = MakerV1::new(&cfg(64, policy), host_api()).unwrap();
        assert_eq!(m.task_window(), 64);
        assert_eq!(m.policy(), policy);
        assert_eq!(
            m.read_status().unwrap_err().kind(),
            ErrorKind::State,
            "read_status before any upload"
        );
        let h = m.begin_run().unwrap();
        for k in 0..10 {
            let s = m.claim_slot().unwrap();
            write_content(s.descriptor, s.payload, &content_for(3, k));
        }
        let r = m.upload().unwrap();
        assert_eq!(r.total_tasks, 10);
        let dh = device_header(m.device_image());
        for k in 0..10 {
            assert_eq!(device_task(&dh, k).content, content_for(3, k));
        }
        assert_eq!(m.read_status().unwrap(), 0);
        // The device reports errors in its header: orch first, then sched.
        let dev = m.device_image() as *mut lrt_sm_header;
        // SAFETY: the host backend's device image is host memory, 64-aligned.
        unsafe {
            (*dev).sched_error_code = 9;
        }
        assert_eq!(m.read_status().unwrap(), -9);
        // SAFETY: as above.
        unsafe {
            (*dev).orch_error_code = 4;
        }
        assert_eq!(m.read_status().unwrap(), -4);
        // The mirror still holds host pointers after upload.
        // SAFETY: live mirror header.
        let hh = unsafe { &*h };
        assert_eq!(hh.task_descriptors as usize, h as usize + 320);
    }
}

#[test]
fn claim_past_the_window_and_corrupted_index() {
    let api = FakeDevice::new();
    let mut m = MakerV1::new(&cfg(4, lrt_upload_policy::LRT_UPLOAD_BOUNDED), api.device()).unwrap();
    assert_eq!(m.claim_slot().unwrap_err().kind(), ErrorKind::State);
    assert_eq!(m.upload().unwrap_err().kind(), ErrorKind::State);
    assert_eq!(api.calls(Op::ToDevice), 0);
    let h = m.begin_run().unwrap();
    for _ in 0..4 {
        m.claim_slot().unwrap();
    }
    assert_eq!(m.claim_slot().unwrap_err().kind(), ErrorKind::OutOfRange);
    // SAFETY: live mirror header.
    let index = unsafe { (*h).current_task_index };
    assert_eq!(index, 4, "failed claim changed nothing");
    for bad in [-1, 5, i32::MIN, i32::MAX] {
        set_index(h, bad);
        assert_eq!(
            m.upload().unwrap_err().kind(),
            ErrorKind::OutOfRange,
            "{bad}"
        );
        assert_eq!(m.claim_slot().unwrap_err().kind(), ErrorKind::OutOfRange);
    }
    assert_eq!(api.calls(Op::ToDevice), 0, "nothing copied");
    set_index(h, 4);
    assert_eq!(m.upload().unwrap().total_tasks, 4);
}

#[test]
fn slot_pointer_outside_the_mirror_is_rejected_before_copying() {
    let api = FakeDevice::new();
    let mut m = MakerV1::new(
        &cfg(16, lrt_upload_policy::LRT_UPLOAD_BOUNDED),
        api.device(),
    )
    .unwrap();
    m.begin_run().unwrap();
    let slots: Vec<_> = (0..3).map(|_| m.claim_slot().unwrap()).collect();
    let mut outside = 0u64;
    let good_payload = slots[1].payload;
    let good_task = slots[2].descriptor;
    let cases: [(usize, bool, usize); 4] = [
        (1, true, &mut outside as *mut u64 as usize), // payload outside the mirror
        (2, false, 0x10),                             // task outside the mirror
        (1, true, good_payload as usize + 8),         // inside, not an element
        (2, false, slots[0].descriptor as usize + 40 * 5), // a descriptor not live
    ];
    for (slot, is_payload, addr) in cases {
        // SAFETY: slot states from claim_slot live in the mirror.
        let ss = slots[slot].slot_state;
        // SAFETY: as above.
        let st = unsafe { &mut *ss };
        if is_payload {
            st.payload = addr as *mut _;
        } else {
            st.task = addr as *mut _;
        }
        let e = m.upload().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e.message());
        assert_eq!(api.calls(Op::ToDevice), 0, "nothing copied");
        // The rejected upload left the mirror as it was.
        let after = if is_payload {
            st.payload as usize
        } else {
            st.task as usize
        };
        assert_eq!(after, addr);
        st.payload = if slot == 1 {
            good_payload
        } else {
            slots[slot].payload
        };
        st.task = if slot == 2 {
            good_task
        } else {
            slots[slot].descriptor
        };
    }
    // NULL pointers are allowed (nothing to relocate).
    // SAFETY: as above.
    let ss0 = slots[0].slot_state;
    // SAFETY: as above.
    unsafe { (*ss0).payload = std::ptr::null_mut() };
    m.upload().unwrap();
    let dh = device_header(m.device_image());
    assert_eq!(device_task(&dh, 0).payload_index, None);
    assert_eq!(device_task(&dh, 1).payload_index, Some(1));
}

#[test]
fn failing_copy_then_next_run_succeeds() {
    for policy in [
        lrt_upload_policy::LRT_UPLOAD_FULL,
        lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        lrt_upload_policy::LRT_UPLOAD_COMPACT,
    ] {
        let max_k = if policy == lrt_upload_policy::LRT_UPLOAD_BOUNDED {
            4
        } else {
            1
        };
        for k in 1..=max_k {
            let api = FakeDevice::new();
            let mut m = MakerV1::new(&cfg(32, policy), api.device()).unwrap();
            let h = m.begin_run().unwrap();
            let slots: Vec<_> = (0..5).map(|_| m.claim_slot().unwrap()).collect();
            // SAFETY: live mirror header.
            let before = unsafe { *h };
            api.fail_at(Op::ToDevice, k as u64);
            let e = m.upload().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Device, "{policy:?} k={k}");
            assert_eq!(m.read_status().unwrap_err().kind(), ErrorKind::State);
            // Host pointers restored after the failure.
            // SAFETY: as above.
            assert_eq!(bytes_of(&before), bytes_of(unsafe { &*h }));
            for s in &slots {
                // SAFETY: slot state in the mirror.
                assert_eq!(unsafe { (*s.slot_state).payload }, s.payload);
            }
            m.begin_run().unwrap();
            for j in 0..3 {
                let s = m.claim_slot().unwrap();
                write_content(s.descriptor, s.payload, &content_for(8, j));
            }
            let r = m.upload().unwrap();
            assert_eq!(r.total_tasks, 3);
            let dh = device_header(m.device_image());
            for j in 0..3 {
                assert_eq!(device_task(&dh, j).content, content_for(8, j));
            }
            assert_eq!(m.read_status().unwrap(), 0);
        }
    }
}

#[test]
fn create_errors_leak_nothing() {
    let api = FakeDevice::new();
    api.fail_always(Op::Malloc);
    let e = MakerV1::new(
        &cfg(16, lrt_upload_policy::LRT_UPLOAD_COMPACT),
        api.device(),
    )
    .err()
    .unwrap();
    assert_eq!(e.kind(), ErrorKind::NoMemory);
    assert_eq!((api.calls(Op::Malloc), api.live_count()), (1, 0));
    for w in [3, 5, 6, 1 << 19, 1 << 31, u64::MAX] {
        let e = MakerV1::new(&cfg(w, lrt_upload_policy::LRT_UPLOAD_BOUNDED), host_api())
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{w}");
    }
    let api = FakeDevice::new();
    {
        let _m = MakerV1::new(
            &cfg(16, lrt_upload_policy::LRT_UPLOAD_BOUNDED),
            api.device(),
        )
        .unwrap();
        assert_eq!(api.live_count(), 1);
    }
    assert_eq!(
        (api.calls(Op::Malloc), api.calls(Op::Free), api.live_count()),
        (1, 1, 0)
    );
}

#[test]
fn fresh_and_pinned_mirrors_work() {
    for (fresh_mirror, pin_mirror) in [(true, false), (false, true), (true, true)] {
        for policy in [
            lrt_upload_policy::LRT_UPLOAD_FULL,
            lrt_upload_policy::LRT_UPLOAD_COMPACT,
        ] {
            let c = MakerConfig {
                task_window: 16,
                policy,
                pin_mirror,
                fresh_mirror,
                ..MakerConfig::default()
            };
            let mut m = MakerV1::new(&c, host_api()).unwrap();
            for run in 0..3 {
                m.begin_run().unwrap();
                for k in 0..run + 2 {
                    let s = m.claim_slot().unwrap();
                    write_content(s.descriptor, s.payload, &content_for(run as u64, k));
                }
                let r = m.upload().unwrap();
                assert_eq!(r.total_tasks as usize, run + 2);
                let dh = device_header(m.device_image());
                for k in 0..run + 2 {
                    assert_eq!(device_task(&dh, k).content, content_for(run as u64, k));
                }
            }
        }
    }
}

fn thread_minor_faults() -> i64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_THREAD, &mut u), 0);
        u.ru_minflt
    }
}

#[test]
fn reused_mirror_stops_faulting_fresh_full_mirror_faults_every_run() {
    // Page faults are counted for this thread only (RUSAGE_THREAD).
    let runs = 50;
    let mut m = MakerV1::new(
        &cfg(16384, lrt_upload_policy::LRT_UPLOAD_BOUNDED),
        host_api(),
    )
    .unwrap();
    let go = |m: &mut MakerV1, n: usize| {
        m.begin_run().unwrap();
        for _ in 0..n {
            m.claim_slot().unwrap();
        }
        m.upload().unwrap();
    };
    go(&mut m, 64); // warms the pages this run shape touches
    let f0 = thread_minor_faults();
    for _ in 0..runs {
        go(&mut m, 64);
    }
    let warm = thread_minor_faults() - f0;
    // Zero in practice; the bound only leaves room for the kernel reclaiming
    // a page now and then. A per-run fault would give >= runs.
    assert!(
        warm < runs as i64
            || !emulation::counters_meaningful(
                "reused_mirror_stops_faulting_fresh_full_mirror_faults_every_run",
                "page-fault"
            ),
        "{warm} faults in {runs} warm BOUNDED runs"
    );

    // The baseline maps and zeroes a fresh mirror each run, so it faults on
    // every run (once per page of the ~5 MB image with 4 KiB pages; fewer
    // with transparent huge pages, hence the loose bound).
    let c = MakerConfig {
        fresh_mirror: true,
        ..cfg(1024, lrt_upload_policy::LRT_UPLOAD_FULL)
    };
    let mut fresh = MakerV1::new(&c, host_api()).unwrap();
    go(&mut fresh, 8);
    let f0 = thread_minor_faults();
    for _ in 0..5 {
        go(&mut fresh, 8);
    }
    let cold = thread_minor_faults() - f0;
    assert!(cold >= 5, "FULL+fresh faulted only {cold} times in 5 runs");
}

#[test]
fn auto_follows_the_device_cost_model() {
    use leanrt::device::CopyCost;
    // Copies that cost a second each: one gathered copy beats four,
    // whatever the host's gather measures (under emulation a cold gather
    // can take milliseconds: a 1 ms copy lost to it under qemu).
    let api = FakeDevice::new();
    let slow = CopyCost {
        latency_ns: 1e9,
        bytes_per_ns: 10.0,
    };
    let mut m = MakerV1::new(
        &cfg(64, lrt_upload_policy::LRT_UPLOAD_AUTO),
        api.device_with_cost(slow),
    )
    .unwrap();
    assert_eq!(m.cost_model().copy, slow);
    assert_eq!(api.calls(Op::ToDevice), 0, "a given cost is not measured");
    // Free copies: BOUNDED's four copies beat any host gather.
    let api2 = FakeDevice::new();
    let free = CopyCost {
        latency_ns: 0.0,
        bytes_per_ns: 10.0,
    };
    let mut m2 = MakerV1::new(
        &cfg(64, lrt_upload_policy::LRT_UPLOAD_AUTO),
        api2.device_with_cost(free),
    )
    .unwrap();
    for n in [1usize, 5, 40, 64] {
        for (maker, want) in [
            (&mut m, lrt_upload_policy::LRT_UPLOAD_COMPACT),
            (&mut m2, lrt_upload_policy::LRT_UPLOAD_BOUNDED),
        ] {
            maker.begin_run().unwrap();
            for k in 0..n {
                let s = maker.claim_slot().unwrap();
                write_content(s.descriptor, s.payload, &content_for(3, k));
            }
            let r = maker.upload().unwrap();
            assert_eq!(r.path, want, "N={n}");
            if want == lrt_upload_policy::LRT_UPLOAD_COMPACT {
                assert_eq!(r.copies, 1, "N={n}");
            } else {
                assert_eq!(r.bytes, 320 + 4969 * n as u64, "N={n}");
            }
            let dh = device_header(maker.device_image());
            for k in 0..n {
                assert_eq!(device_task(&dh, k).content, content_for(3, k));
            }
        }
    }
    // Without figures from the device, AUTO measures them at create.
    let api3 = FakeDevice::new();
    let m3 = MakerV1::new(&cfg(64, lrt_upload_policy::LRT_UPLOAD_AUTO), api3.device()).unwrap();
    assert!(
        api3.calls(Op::ToDevice) >= 6,
        "five small copies and one large"
    );
    let model = m3.cost_model();
    assert!(model.copy.latency_ns >= 0.0 && model.copy.bytes_per_ns > 0.0);
    assert!(model.gather_bytes_per_ns > 0.0);
}
