//! The v2 maker through the Rust API: the framed one-copy upload on the
//! fake device, the fresh-mirror baseline shipping the same bytes as a
//! reused mirror, the layouts' calls kept apart, and no page touched by a
//! warm run. (The image itself, field by field, is checked by the unit tests
//! of `src/staging/v2/claim.rs`, from C by `c_tests/staging/v2_layout.c`, and over
//! random claim mixes by `tests/fuzz_staging_v2.rs`.)
mod emulation;
mod staging_support;

use leanrt::device::host::HostDevice;
use leanrt::staging::Maker;
use leanrt::staging::{
    lrt_layout, lrt_v2_sm_header, lrt_v2_task_payload, rel_decode, ClaimDesc, MakerConfig, MakerV1,
    MakerV2, RuntimeMaker, TensorRecord, V2ClaimDesc,
};
use leanrt::ErrorKind;
use staging_support::FakeDevice;
use std::sync::Arc;

fn v2_config(window: u64, before: u64, after: u64) -> MakerConfig {
    MakerConfig {
        task_window: window,
        layout: lrt_layout::LRT_LAYOUT_V2,
        frame_before: before,
        frame_after: after,
        ..MakerConfig::default()
    }
}

/// Claims `n` tasks of 2 tensors, 1 scalar and 1 producer (the previous
/// task), the bind benchmark's shape.
fn claim_chain(m: &mut MakerV2, n: u64, records: &[TensorRecord; 2]) {
    for i in 0..n {
        let producer = [i as i32 - 1];
        let scalar = [i * 3];
        let d = V2ClaimDesc {
            task: ClaimDesc {
                fanins: if i == 0 { &[] } else { &producer },
                ..ClaimDesc::default()
            },
            tensor_count: 2,
            tensors: Some(records),
            scalar_count: 1,
            scalars: Some(&scalar),
            graph_shell: false,
        };
        m.claim_slot(&d).expect("claim");
    }
}

fn records() -> [TensorRecord; 2] {
    let mut r = [[0u8; 128]; 2];
    for (k, rec) in r.iter_mut().enumerate() {
        for (b, x) in rec.iter_mut().enumerate() {
            *x = (k * 101 + b) as u8;
        }
    }
    r
}

#[test]
fn one_framed_copy_lands_contiguous_on_the_device() {
    let dev = FakeDevice::new();
    let mut m = MakerV2::new(&v2_config(64, 704, 300), dev.device()).unwrap();
    let recs = records();
    for n in [0u64, 1, 17, 64] {
        m.begin_run().unwrap();
        claim_chain(&mut m, n, &recs);
        let seg = m.image_segments();
        let before = vec![0x11u8; 704];
        let after = vec![0x22u8; 300];
        dev.reset_copies();
        let r = m.upload(&before, &after).unwrap();
        assert_eq!((r.copies, r.total_tasks), (1, n as i32));
        assert_eq!(r.bytes, 704 + seg.end + 300);
        let image = m.device_image() as usize;
        assert_eq!(image % 64, 0);
        let copies = dev.copies();
        assert_eq!(copies.len(), 1, "N = {n}");
        let base = dev
            .state()
            .live
            .keys()
            .copied()
            .next()
            .expect("one allocation");
        assert_eq!(
            base + copies[0].0,
            image - 704,
            "N = {n}: the frame ends where the image starts"
        );
        assert_eq!(copies[0].1 as u64, r.bytes);
        dev.with_alloc(base as *mut _, |bytes| {
            let at = image - base;
            assert!(bytes[at - 704..at].iter().all(|&b| b == 0x11));
            let end = at + seg.end as usize;
            assert!(bytes[end..end + 300].iter().all(|&b| b == 0x22));
        })
        .unwrap();
        // SAFETY: the fake device's memory is host memory; the image holds
        // its header and n payloads.
        let h = unsafe { &*(image as *const lrt_v2_sm_header) };
        assert!(h.task_payloads.is_null() && h.orchestrator_done == 1);
        assert_eq!(h.current_task_index, n as i32);
        if n > 1 {
            // The last task's producer region names the task before it.
            let p_at = image + seg.payloads as usize + 192 * (n as usize - 1);
            // SAFETY: payload n - 1 of the image.
            let p = unsafe { &*(p_at as *const lrt_v2_task_payload) };
            let f = rel_decode(p_at + 20, p.fanin).unwrap();
            assert!(f >= image + seg.fanin_pool as usize && f < image + seg.tensor_pool as usize);
            // SAFETY: inside the shipped fanin pool.
            assert_eq!(unsafe { *(f as *const i32) }, n as i32 - 2);
        }
        assert_eq!(m.read_status().unwrap(), 0);
    }
    drop(m);
    assert_eq!(dev.live_count(), 0);
    dev.assert_clean("v2 upload");
}

#[test]
fn a_fresh_mirror_every_run_ships_the_same_bytes() {
    let recs = records();
    let image_of = |fresh: bool| {
        let cfg = MakerConfig {
            fresh_mirror: fresh,
            ..v2_config(256, 0, 0)
        };
        let mut m = MakerV2::new(&cfg, Arc::new(HostDevice)).unwrap();
        let mut shipped = Vec::new();
        for n in [200u64, 33, 90] {
            m.begin_run().unwrap();
            claim_chain(&mut m, n, &recs);
            let mut out = vec![0u8; m.image_segments().end as usize + 64];
            let off = out.as_ptr().align_offset(64);
            let seg = m.compact_into(&mut out[off..]).unwrap();
            shipped.push(out[off..off + seg.end as usize].to_vec());
        }
        shipped
    };
    assert_eq!(image_of(true), image_of(false));
}

#[test]
fn each_layout_refuses_the_other_layouts_calls() {
    // The C handle's maker: one of the generations, chosen at create; a
    // call of the other generation's is refused at its door.
    let dev = FakeDevice::new();
    let mut v2 = RuntimeMaker::create(&v2_config(16, 0, 0), dev.device(), None).unwrap();
    assert_eq!(v2.layout(), lrt_layout::LRT_LAYOUT_V2);
    let v1_call = |m: &mut RuntimeMaker, call: fn(&mut MakerV1) -> leanrt::Result<()>| {
        m.generation_mut::<MakerV1>()
            .and_then(call)
            .unwrap_err()
            .kind()
    };
    assert_eq!(
        v1_call(&mut v2, |m| m.begin_run().map(drop)),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        v1_call(&mut v2, |m| m.claim_slot().map(drop)),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        v1_call(&mut v2, |m| m.upload().map(drop)),
        ErrorKind::InvalidArgument
    );
    let mut v1 = RuntimeMaker::create(
        &MakerConfig {
            task_window: 16,
            ..MakerConfig::default()
        },
        dev.device(),
        None,
    )
    .unwrap();
    assert_eq!(v1.layout(), lrt_layout::LRT_LAYOUT_V1);
    let v2_call = |m: &mut RuntimeMaker, call: fn(&mut MakerV2) -> leanrt::Result<()>| {
        m.generation_mut::<MakerV2>()
            .and_then(call)
            .unwrap_err()
            .kind()
    };
    assert_eq!(
        v2_call(&mut v1, |m| m.begin_run().map(drop)),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        v2_call(&mut v1, |m| m.claim_slot(&V2ClaimDesc::default()).map(drop)),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        v2_call(&mut v1, |m| m.upload(&[], &[]).map(drop)),
        ErrorKind::InvalidArgument
    );
    // A too-small or unaligned buffer for the image is refused.
    let v2 = v2.generation_mut::<MakerV2>().unwrap();
    v2.begin_run().unwrap();
    let mut small = vec![0u8; 128];
    assert_eq!(
        v2.compact_into(&mut small).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

/// Minor page faults of this thread so far.
fn thread_faults() -> u64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_THREAD)");
    u.ru_minflt as u64
}

#[test]
fn warm_runs_touch_no_new_pages() {
    let recs = records();
    let before = vec![7u8; 704];
    for (w, n) in [(1024u64, 1024u64), (16384, 2000)] {
        let mut m = MakerV2::new(&v2_config(w, 704, 0), Arc::new(HostDevice)).unwrap();
        let run = |m: &mut MakerV2| {
            m.begin_run().unwrap();
            claim_chain(m, n, &recs);
            m.upload(&before, &[]).unwrap();
        };
        run(&mut m);
        run(&mut m);
        let f0 = thread_faults();
        for _ in 0..5 {
            run(&mut m);
        }
        let faults = thread_faults() - f0;
        assert!(
            faults == 0
                || !emulation::counters_meaningful("warm_runs_touch_no_new_pages", "page-fault"),
            "W = {w}, N = {n}: warm runs faulted {faults} pages"
        );
    }
}

/// Claims `n` tasks of a shape that varies with `seed`: 0-3 tensors, 0-9
/// scalars, one or two producers, a graph shell and a pre-completed task
/// now and then.
fn claim_mix(m: &mut MakerV2, n: u64, seed: u64, records: &[TensorRecord; 2]) {
    let recs: Vec<TensorRecord> = (0..3).map(|k| records[k % 2]).collect();
    for i in 0..n {
        let producers = [i as i32 - 1, i as i32 - 2];
        let np = match i {
            0 => 0,
            1 => 1,
            _ if i % 3 == 0 => 2,
            _ => 1,
        };
        let graph = i % 17 == 5;
        let nt = if graph { 0 } else { ((i + seed) % 4) as usize };
        let ns = if graph { 0 } else { ((i * seed) % 10) as usize };
        let scalars: Vec<u64> = (0..ns as u64).map(|k| k + i * 100 + seed).collect();
        let d = V2ClaimDesc {
            task: ClaimDesc {
                fanins: &producers[..np],
                completed: i % 11 == 3,
                kernel_id: [i as i32, -1, -1],
                ..ClaimDesc::default()
            },
            tensor_count: nt,
            tensors: Some(&recs[..nt]),
            scalar_count: ns,
            scalars: Some(&scalars),
            graph_shell: graph,
        };
        m.claim_slot(&d).expect("claim");
    }
}

#[test]
fn a_run_claimed_in_place_ships_what_a_gathered_one_does() {
    // Runs that repeat the last shape are claimed straight into the image
    // they ship; others (fewer tasks, more, other pool use) are gathered
    // from the image buffer and the mirror. Each must ship exactly the
    // bytes a maker that always gathers ships.
    let recs = records();
    let runs = [
        (200u64, 1u64),
        (200, 1),
        (200, 1),
        (33, 1),
        (90, 2),
        (90, 2),
        (300, 2),
        (300, 3),
        (300, 3),
        (0, 3),
        (1, 3),
        (1, 3),
    ];
    let mut makers: Vec<MakerV2> = [false, true]
        .into_iter()
        .map(|fresh| {
            let cfg = MakerConfig {
                fresh_mirror: fresh,
                ..v2_config(512, 704, 64)
            };
            MakerV2::new(&cfg, Arc::new(HostDevice)).unwrap()
        })
        .collect();
    for (k, &(n, seed)) in runs.iter().enumerate() {
        let mut shipped = Vec::new();
        for m in makers.iter_mut() {
            m.begin_run().unwrap();
            claim_mix(m, n, seed, &recs);
            let r = m.upload(&[0x5a; 704], &[0xa5; 64]).unwrap();
            let image = m.device_image() as *const u8;
            // SAFETY: the host backend's device image is host memory holding
            // the framed image around `image`.
            let bytes = unsafe { std::slice::from_raw_parts(image.sub(704), r.bytes as usize) };
            shipped.push(bytes.to_vec());
        }
        assert_eq!(shipped[0].len(), shipped[1].len(), "run {k}");
        assert!(
            shipped[0] == shipped[1],
            "run {k} (N = {n}, seed {seed}) ships other bytes in place"
        );
    }
}

#[test]
fn a_run_claimed_in_place_checks_its_regions_too() {
    let dev = FakeDevice::new();
    let mut m = MakerV2::new(&v2_config(64, 0, 0), dev.device()).unwrap();
    let recs = records();
    for field in 0..4 {
        // The first run sets the shape, the second is claimed in place.
        for _ in 0..2 {
            m.begin_run().unwrap();
            claim_chain(&mut m, 8, &recs);
            m.upload(&[], &[]).unwrap();
        }
        m.begin_run().unwrap();
        claim_chain(&mut m, 7, &recs);
        let producer = [6];
        let slot = m
            .claim_slot(&V2ClaimDesc {
                task: ClaimDesc {
                    fanins: &producer,
                    ..ClaimDesc::default()
                },
                tensor_count: 2,
                tensors: Some(&recs),
                scalar_count: 1,
                scalars: Some(&[1]),
                graph_shell: false,
            })
            .unwrap();
        // SAFETY: the claimed slot's payload, valid until the next begin.
        let p = unsafe { &mut *slot.payload };
        match field {
            0 => p.tensors += 8,
            1 => p.scalar_count = 17,
            2 => p.fanin = 0,
            _ => p.tensor_count = 3,
        }
        dev.reset_copies();
        let e = m.upload(&[], &[]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{field}: {e}");
        assert!(e.to_string().contains("slot 7"), "{e}");
        assert!(dev.copies().is_empty(), "a refused upload copied");
    }
}
