use super::super::super::abi::LRT_MAX_TASK_WINDOW;
use super::super::layout::{lrt_v2_segments, lrt_v2_sm_header, rel_decode};
use super::super::segments::{v2_image_segments, v2_ring_segment_offsets};
use super::*;
use crate::staging::abi::{LRT_TASK_ATTR_HAS_PREDICATE, LRT_TASK_ATTR_SYNC_START};
use crate::ErrorKind;

const W: u64 = 64;

fn reference_caps(w: u64) -> V2PoolUse {
    V2PoolUse {
        fanin_ids: w * LRT_MAX_FANIN as u64,
        tensors: w * LRT_MAX_TENSORS as u64,
        scalars: w * LRT_MAX_SCALARS as u64,
    }
}

fn run_with(caps: V2PoolUse) -> (V2Run, Mapping) {
    let run = V2Run::new(W, caps, v2_ring_segment_offsets(W).unwrap().end);
    let m = Mapping::new(run.segments().end as usize).unwrap();
    (run, m)
}

fn record(tag: u64) -> TensorRecord {
    let mut r = [0u8; LRT_V2_TENSOR_BYTES];
    for (k, b) in r.iter_mut().enumerate() {
        *b = (tag as u8).wrapping_mul(31).wrapping_add(k as u8);
    }
    r
}

struct Task {
    mask: u8,
    fanins: Vec<i32>,
    tensors: Vec<TensorRecord>,
    scalars: Vec<u64>,
    completed: bool,
    graph: bool,
}

/// Kernel (root), dependent kernel, dummy with a duplicate producer,
/// pre-completed allocation, graph shell with no tensors, a task at
/// every cap but the fanin one.
fn mixed() -> Vec<Task> {
    let t = |mask, fanins: &[i32], nt: u64, ns: u64, completed, graph| Task {
        mask,
        fanins: fanins.to_vec(),
        tensors: (0..nt).map(|k| record(100 + k)).collect(),
        scalars: (0..ns).map(|k| 0x3000 + k).collect(),
        completed,
        graph,
    };
    vec![
        t(2, &[], 2, 3, false, false),
        t(3, &[0], 1, 1, false, false),
        t(0, &[0, 1, 1], 0, 2, false, false),
        t(0, &[], 1, 0, true, false),
        t(0, &[3, 1], 0, 0, false, true),
        t(7, &[0, 1, 2, 3, 4], 32, 16, false, false),
    ]
}

fn claim_all(run: &mut V2Run, m: &Mapping, tasks: &[Task]) -> Vec<lrt_v2_task_slot> {
    tasks
        .iter()
        .map(|t| {
            let d = V2ClaimDesc {
                task: ClaimDesc {
                    active_mask: t.mask,
                    fanins: &t.fanins,
                    completed: t.completed,
                    kernel_id: [7, 8, 9],
                    ..ClaimDesc::default()
                },
                tensor_count: t.tensors.len(),
                tensors: Some(&t.tensors),
                scalar_count: t.scalars.len(),
                scalars: Some(&t.scalars),
                graph_shell: t.graph,
            };
            run.claim(m, std::ptr::null_mut(), &d).unwrap()
        })
        .collect()
}

/// The compact image copied to `device` at byte `at` (as the one copy
/// does), through a staging buffer.
fn ship(run: &V2Run, m: &Mapping, at: usize) -> (Mapping, lrt_v2_segments) {
    let n = V2Run::current_index(m) as u64;
    let len = run.image_segments(n).end as usize;
    let staging = Mapping::new(len).unwrap();
    // SAFETY: staging holds len bytes and is not the mirror.
    let seg = unsafe { run.compact_into(m, std::ptr::null_mut(), n, staging.as_ptr()) }.unwrap();
    assert_eq!(seg.end as usize, len);
    let device = Mapping::new(at + len).unwrap();
    // SAFETY: both hold len bytes past their offsets.
    unsafe { std::ptr::copy_nonoverlapping(staging.as_ptr(), device.as_ptr().add(at), len) };
    (device, seg)
}

fn bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    // SAFETY: test buffers are live mappings at least this long.
    unsafe { std::slice::from_raw_parts(p, len) }
}

#[test]
fn a_mixed_run_compacts_and_every_offset_resolves_on_the_device() {
    let (mut run, m) = run_with(reference_caps(W));
    run.begin(&m, std::ptr::null_mut(), 1 << 20);
    let tasks = mixed();
    let slots = claim_all(&mut run, &m, &tasks);
    let n = tasks.len() as u64;
    // The pools as the reference's cursors advance them.
    let used = run.used();
    let want_f: u64 = tasks
        .iter()
        .map(|t| {
            let mut d = t.fanins.clone();
            d.dedup();
            round_up(d.len() as u64, 16)
        })
        .sum();
    assert_eq!(used.fanin_ids, want_f);
    assert_eq!(
        used.tensors,
        tasks.iter().map(|t| t.tensors.len() as u64).sum::<u64>()
    );
    assert_eq!(
        used.scalars,
        tasks
            .iter()
            .map(|t| round_up(t.scalars.len() as u64, 8))
            .sum::<u64>()
    );

    let at = 704; // a 704-byte block before the image, as the reference frames it
    let (device, c) = ship(&run, &m, at);
    assert_eq!(
        c,
        v2_image_segments(n, used.fanin_ids, used.tensors, used.scalars).unwrap()
    );
    let dev = device.as_ptr() as usize + at;
    // SAFETY: the device copy holds c.end bytes at `dev`, 64-aligned.
    let h = unsafe { &*(dev as *const lrt_v2_sm_header) };
    assert!(h.task_descriptors.is_null() && h.task_payloads.is_null());
    assert!(h.slot_states.is_null() && h.completion_flags.is_null());
    assert_eq!(h.current_task_index, n as i32);
    assert_eq!(h.completed_watermark, -1);
    assert_eq!(h.orchestrator_done, 1);
    assert_eq!((h.task_window_size, h.task_window_mask), (W, W as i32 - 1));
    assert_eq!(h.task_descriptors_offset, 256);
    assert_eq!(h.heap_size, 1 << 20);
    assert_eq!(h.total_size, v2_ring_segment_offsets(W).unwrap().end);
    assert_eq!((h.orch_error_code, h.sched_error_thread), (0, -1));

    for (i, (t, s)) in tasks.iter().zip(&slots).enumerate() {
        let i64_ = i as u64;
        // SAFETY: element i of each device segment, i < n.
        let (d_desc, d_pay, d_state, d_flag) = unsafe {
            (
                &*((dev + c.descriptors as usize + 40 * i) as *const lrt_task_descriptor),
                &*((dev + c.payloads as usize + 192 * i) as *const lrt_v2_task_payload),
                &*((dev + c.slot_states as usize + 64 * i) as *const lrt_v2_task_slot_state),
                *((dev + c.completion_flags as usize + i) as *const u8),
            )
        };
        // SAFETY: the claimed slot's mirror elements.
        let (m_desc, m_pay, m_state) = unsafe { (&*s.descriptor, &*s.payload, &*s.slot_state) };
        // The slot state names its own payload and descriptor.
        let sa = d_state as *const _ as usize;
        assert_eq!(
            rel_decode(sa + 8, d_state.payload),
            Some(d_pay as *const _ as usize),
            "slot {i}"
        );
        assert_eq!(
            rel_decode(sa + 12, d_state.task),
            Some(d_desc as *const _ as usize),
            "slot {i}"
        );
        // Field by field with the mirror (offsets aside).
        assert_eq!(d_desc.task_id, i64_);
        assert_eq!(
            bytes(d_desc as *const _ as *const u8, 40),
            bytes(m_desc as *const _ as *const u8, 40)
        );
        let mut a = *d_state;
        let mut b = *m_state;
        (a.payload, a.task, b.payload, b.task) = (0, 0, 0, 0);
        assert_eq!(
            bytes(&a as *const _ as *const u8, 64),
            bytes(&b as *const _ as *const u8, 64),
            "slot {i}"
        );
        let mut a = *d_pay;
        let mut b = *m_pay;
        (a.tensors, a.scalars, a.fanin, b.tensors, b.scalars, b.fanin) = (0, 0, 0, 0, 0, 0);
        assert_eq!(
            bytes(&a as *const _ as *const u8, 192),
            bytes(&b as *const _ as *const u8, 192),
            "slot {i}"
        );
        assert_eq!(d_flag, u8::from(t.completed));
        // The reference's per-kind values.
        let kind = if t.graph {
            2
        } else if t.mask != 0 {
            0
        } else {
            1
        };
        assert_eq!(d_state.task_kind, kind, "slot {i}");
        assert_eq!(d_state.task_state, i32::from(t.completed));
        assert_eq!(d_state.graph_node_index, -1);
        let mut distinct = t.fanins.clone();
        distinct.dedup();
        assert_eq!(d_pay.fanin_count as usize, distinct.len());
        // Every region resolves inside the device image's own pool and
        // holds the mirror's content; a graph shell's stay unbound.
        let pa = d_pay as *const _ as usize;
        let region = |off: usize, delta: i32, pool: u64, next: u64| {
            rel_decode(pa + off, delta).inspect(|&a| {
                assert!(
                    a >= dev + pool as usize && a <= dev + next as usize,
                    "slot {i}"
                );
            })
        };
        match region(12, d_pay.tensors, c.tensor_pool, c.scalar_pool) {
            None => assert!(t.graph, "slot {i}"),
            Some(a) => {
                let got = bytes(a as *const u8, 128 * t.tensors.len());
                assert_eq!(got, t.tensors.concat().as_slice(), "slot {i}");
            }
        }
        match region(16, d_pay.scalars, c.scalar_pool, c.end) {
            None => assert!(t.graph, "slot {i}"),
            Some(a) => {
                // SAFETY: inside the device image (checked above).
                let got = unsafe {
                    std::slice::from_raw_parts(
                        a as *const u64,
                        round_up(t.scalars.len() as u64, 8) as usize,
                    )
                };
                assert_eq!(&got[..t.scalars.len()], t.scalars.as_slice());
                assert!(got[t.scalars.len()..].iter().all(|&v| v == 0));
            }
        }
        let a =
            region(20, d_pay.fanin, c.fanin_pool, c.tensor_pool).expect("fanin is always bound");
        // SAFETY: inside the device image.
        let got = unsafe { std::slice::from_raw_parts(a as *const i32, distinct.len()) };
        assert_eq!(got, distinct.as_slice(), "slot {i}");
    }
    // Each producer's last consumer is its latest consumer.
    // SAFETY: slot states 0..n of the device image.
    let last = |p: usize| unsafe {
        (*((dev + c.slot_states as usize + 64 * p) as *const lrt_v2_task_slot_state))
            .last_consumer_local_id
    };
    assert_eq!(
        (last(0), last(1), last(2), last(3), last(4), last(5)),
        (5, 5, 5, 5, 5, 5)
    );
    // Padding between segments is zero.
    let tail = |from: u64, to: u64| {
        bytes((dev + from as usize) as *const u8, (to - from) as usize)
            .iter()
            .all(|&b| b == 0)
    };
    assert!(tail(c.descriptors + 40 * n, c.payloads));
    assert!(tail(c.completion_flags + n, c.fanin_pool));
}

#[test]
fn a_reused_mirror_ships_what_a_fresh_one_does() {
    let tasks = mixed();
    let (mut run, m) = run_with(reference_caps(W));
    // A first, larger run leaves stale slots, regions and pads behind.
    run.begin(&m, std::ptr::null_mut(), 1 << 20);
    let big: Vec<Task> = (0..40)
        .map(|k| Task {
            mask: 2,
            fanins: if k > 0 { vec![k - 1] } else { vec![] },
            tensors: vec![record(k as u64); 3],
            scalars: vec![u64::MAX; 5],
            completed: k % 3 == 0,
            graph: false,
        })
        .collect();
    claim_all(&mut run, &m, &big);
    run.begin(&m, std::ptr::null_mut(), 1 << 20);
    claim_all(&mut run, &m, &tasks);
    let (reused, c1) = ship(&run, &m, 0);
    let (mut fresh_run, fresh) = run_with(reference_caps(W));
    fresh_run.begin(&fresh, std::ptr::null_mut(), 1 << 20);
    claim_all(&mut fresh_run, &fresh, &tasks);
    let (fresh_dev, c2) = ship(&fresh_run, &fresh, 0);
    assert_eq!(c1, c2);
    let n = c1.end as usize;
    // The header differs only in nothing: both pointers-null copies.
    assert_eq!(bytes(reused.as_ptr(), n), bytes(fresh_dev.as_ptr(), n));
}

#[test]
fn no_tasks_ship_the_header_and_one_slot_of_pitch() {
    let (mut run, m) = run_with(reference_caps(W));
    run.begin(&m, std::ptr::null_mut(), 1 << 20);
    let (device, c) = ship(&run, &m, 0);
    assert_eq!(c, v2_image_segments(0, 0, 0, 0).unwrap());
    assert_eq!(c.end, 640);
    // Nothing but the header is non-zero past it.
    assert!(bytes(device.as_ptr(), 640)[256..].iter().all(|&b| b == 0));
}

fn snapshot(run: &V2Run, m: &Mapping) -> Vec<u8> {
    bytes(m.as_ptr(), run.segments().end as usize).to_vec()
}

fn task(fanins: &[i32], tensors: usize, scalars: usize) -> Task {
    Task {
        mask: 2,
        fanins: fanins.to_vec(),
        tensors: vec![record(1); tensors],
        scalars: vec![1; scalars],
        completed: false,
        graph: false,
    }
}

#[test]
fn full_pools_refuse_a_claim_and_write_nothing() {
    let caps = |f, t, s| V2PoolUse {
        fanin_ids: f,
        tensors: t,
        scalars: s,
    };
    // (pool capacities, tasks that fill them, the task that no longer fits)
    let cases = [
        (
            caps(16, 64, 64),
            vec![task(&[], 0, 0), task(&[0], 0, 0)],
            task(&[0], 0, 0),
        ),
        (caps(64, 3, 64), vec![task(&[], 2, 0)], task(&[], 2, 0)),
        (caps(64, 64, 8), vec![task(&[], 0, 1)], task(&[], 0, 1)),
    ];
    for (caps, fill, last) in cases {
        let (mut run, m) = run_with(caps);
        run.begin(&m, std::ptr::null_mut(), 1 << 20);
        claim_all(&mut run, &m, &fill);
        let before = snapshot(&run, &m);
        let used = run.used();
        let d = V2ClaimDesc {
            task: ClaimDesc {
                fanins: &last.fanins,
                ..ClaimDesc::default()
            },
            tensor_count: last.tensors.len(),
            tensors: Some(&last.tensors),
            scalar_count: last.scalars.len(),
            scalars: Some(&last.scalars),
            graph_shell: false,
        };
        let e = run.claim(&m, std::ptr::null_mut(), &d).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfRange, "{e}");
        assert!(e.to_string().contains("pool is full"), "{e}");
        assert_eq!(snapshot(&run, &m), before);
        assert_eq!(run.used(), used);
    }
}

#[test]
fn a_latched_orchestrator_error_refuses_claims() {
    let (mut run, m) = run_with(reference_caps(W));
    let h = run.begin(&m, std::ptr::null_mut(), 1 << 20);
    // SAFETY: the mirror's header.
    unsafe { (*h).orch_error_code = 7 };
    let before = snapshot(&run, &m);
    let e = run
        .claim(&m, std::ptr::null_mut(), &V2ClaimDesc::default())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State);
    assert_eq!(snapshot(&run, &m), before);
}

#[test]
fn bad_claims_write_nothing() {
    let (mut run, m) = run_with(reference_caps(W));
    run.begin(&m, std::ptr::null_mut(), 1 << 20);
    claim_all(&mut run, &m, &mixed()[..1]);
    let before = snapshot(&run, &m);
    let recs = [record(0); 2];
    let scal = [1u64; 17];
    let bad = [
        V2ClaimDesc {
            task: ClaimDesc {
                logical_block_num: 0,
                ..ClaimDesc::default()
            },
            ..V2ClaimDesc::default()
        },
        V2ClaimDesc {
            task: ClaimDesc {
                active_mask: 7,
                logical_block_num: 20000,
                ..ClaimDesc::default()
            },
            ..V2ClaimDesc::default()
        },
        V2ClaimDesc {
            tensor_count: 33,
            ..V2ClaimDesc::default()
        },
        V2ClaimDesc {
            scalar_count: 17,
            scalars: Some(&scal),
            ..V2ClaimDesc::default()
        },
        V2ClaimDesc {
            tensor_count: 1,
            tensors: Some(&recs),
            ..V2ClaimDesc::default()
        },
        V2ClaimDesc {
            tensor_count: 2,
            tensors: Some(&recs),
            graph_shell: true,
            ..V2ClaimDesc::default()
        },
    ];
    for d in &bad {
        let e = run.claim(&m, std::ptr::null_mut(), d).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{d:?}: {e}");
        assert_eq!(snapshot(&run, &m), before, "{d:?}");
    }
}

#[test]
fn a_broken_region_is_refused_at_compaction() {
    for field in 0..4 {
        let (mut run, m) = run_with(reference_caps(W));
        run.begin(&m, std::ptr::null_mut(), 1 << 20);
        let slots = claim_all(&mut run, &m, &mixed());
        let ptr = slots[1].payload;
        // SAFETY: the claimed slot's mirror payload.
        let p = unsafe { &mut *ptr };
        match field {
            0 => p.tensors += 8,         // not a record boundary
            1 => p.scalar_count = 17,    // over the cap
            2 => p.fanin = 0,            // unbound with a count
            _ => p.tensors = -p.tensors, // outside the pool
        }
        let n = V2Run::current_index(&m) as u64;
        let out = Mapping::new(run.image_segments(n).end as usize).unwrap();
        // SAFETY: out holds the image and is not the mirror.
        let e = unsafe { run.compact_into(&m, std::ptr::null_mut(), n, out.as_ptr()) }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{field}: {e}");
        assert!(e.to_string().contains("slot 1"), "{e}");
    }
}

#[test]
fn the_largest_window_keeps_every_offset_in_reach() {
    let w = LRT_MAX_TASK_WINDOW;
    let run = V2Run::new(
        w,
        reference_caps(w),
        v2_ring_segment_offsets(w).unwrap().end,
    );
    let s = run.segments();
    // The farthest distances a claim encodes: the last payload to the
    // end of the scalar pool, the last slot state to payload 0.
    assert!(s.end - s.payloads <= i32::MAX as u64);
    let far = rel_encode(s.payloads as usize + 0x1000, s.end as usize + 0x1000 - 8);
    assert_ne!(far, 0);
}

/// Claims a task whose only content is the producer list `fanins`.
fn claim_producers(
    run: &mut V2Run,
    m: &Mapping,
    fanins: &[i32],
) -> crate::error::Result<lrt_v2_task_slot> {
    run.claim(
        m,
        std::ptr::null_mut(),
        &V2ClaimDesc {
            task: ClaimDesc {
                fanins,
                ..ClaimDesc::default()
            },
            ..V2ClaimDesc::default()
        },
    )
}

/// A window of `w` slots with the reference's pools.
fn run_of(w: u64) -> (V2Run, Mapping) {
    let run = V2Run::new(
        w,
        reference_caps(w),
        v2_ring_segment_offsets(w).unwrap().end,
    );
    let m = Mapping::new(run.segments().end as usize).unwrap();
    (run, m)
}

fn fanin_of(slot: &lrt_v2_task_slot) -> Vec<i32> {
    // SAFETY: a claimed slot's payload and fanin region.
    unsafe {
        let n = (*slot.payload).fanin_count as usize;
        std::slice::from_raw_parts(slot.fanin, n).to_vec()
    }
}

/// The reference's `append_fanin_or_fail` (6ebaf7715, pto_orchestrator.cpp)
/// de-duplicates by slot, caps DISTINCT producers at PTO2_MAX_FANIN = 128
/// (not the list's length), and drops an id whose slot holds no task of
/// this run (`prod_state->task == nullptr || task_id != producer`: in its
/// fresh mirror, any id outside [0, current)).
#[test]
fn producers_are_taken_as_the_reference_takes_them() {
    let (mut run, m) = run_of(256);
    run.begin(&m, std::ptr::null_mut(), 1 << 20);
    claim_all(
        &mut run,
        &m,
        &(0..130).map(|_| task(&[], 0, 0)).collect::<Vec<_>>(),
    );
    // 130 ids, 100 distinct: taken, first-occurrence order.
    let ids: Vec<i32> = (0..100).chain(0..30).collect();
    let s = claim_producers(&mut run, &m, &ids).unwrap();
    assert_eq!(fanin_of(&s), (0..100).collect::<Vec<_>>());
    // Ids not of this run (self, later, negative, past the window) dropped.
    let idx = s.index + 1;
    let odd = [-1, idx, idx + 5, 1000, 3, 3];
    let s = claim_producers(&mut run, &m, &odd).unwrap();
    assert_eq!(fanin_of(&s), vec![3]);
    // 129 distinct producers: refused, nothing written.
    let before = snapshot(&run, &m);
    let ids: Vec<i32> = (0..129).chain(0..129).collect();
    let e = claim_producers(&mut run, &m, &ids).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert_eq!(snapshot(&run, &m), before);
}

fn attrs_mask_kernels(
    run: &mut V2Run,
    m: &Mapping,
    d: ClaimDesc<'_>,
) -> Result<(u8, u8, [i32; 3])> {
    let s = run.claim(
        m,
        std::ptr::null_mut(),
        &V2ClaimDesc {
            task: d,
            ..V2ClaimDesc::default()
        },
    )?;
    // SAFETY: the claimed slot's state and descriptor.
    unsafe {
        Ok((
            (*s.slot_state).task_attrs,
            (*s.slot_state).active_mask,
            (*s.descriptor).kernel_id,
        ))
    }
}

/// The reference's `submit_task` (6ebaf7715, pto_orchestrator.cpp):
/// `require_sync_start` with `block_num > 1` is refused when `block_num`
/// exceeds `total_aiv_count` (shape AIV) or `total_cluster_count` (MIX, AIC),
/// a limit of 0 checking nothing; sync_start is set only for
/// `block_num > 1`; an AIV1-only task moves to AIV0; `submit_dummy_task`
/// carries no sync_start nor has_predicate.
#[test]
fn sync_start_and_masks_follow_submit_task() {
    let (mut run, m) = run_of(64);
    run.begin(&m, std::ptr::null_mut(), 1 << 20);
    let sync = LRT_TASK_ATTR_SYNC_START;
    let d = |mask: u8, blocks: i16, attrs: u8| ClaimDesc {
        active_mask: mask,
        logical_block_num: blocks,
        task_attrs: attrs,
        kernel_id: [5, 6, 7],
        ..ClaimDesc::default()
    };
    // Unknown cores: nothing checked.
    assert!(attrs_mask_kernels(&mut run, &m, d(1, 100, sync)).is_ok());
    run.set_cores(4, 8).unwrap();
    for (mask, ok, bad) in [
        (1u8, 4i16, 5i16),
        (3, 4, 5),
        (7, 4, 5),
        (2, 8, 9),
        (4, 8, 9),
    ] {
        assert_eq!(
            attrs_mask_kernels(&mut run, &m, d(mask, ok, sync))
                .unwrap()
                .0,
            sync
        );
        let before = snapshot(&run, &m);
        let e = attrs_mask_kernels(&mut run, &m, d(mask, bad, sync)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{mask} {bad}: {e}");
        assert_eq!(snapshot(&run, &m), before);
        // Without sync_start the same blocks are fine.
        assert!(attrs_mask_kernels(&mut run, &m, d(mask, bad, 0)).is_ok());
    }
    // One block: sync_start is not kept.
    assert_eq!(
        attrs_mask_kernels(&mut run, &m, d(1, 1, sync | 1))
            .unwrap()
            .0,
        1
    );
    // A dummy keeps neither sync_start nor has_predicate.
    let a = attrs_mask_kernels(
        &mut run,
        &m,
        d(0, 9, sync | LRT_TASK_ATTR_HAS_PREDICATE | 1),
    );
    assert_eq!(a.unwrap().0, 1);
    // AIV1 alone moves to AIV0 with its kernel.
    let (_, mask, k) = attrs_mask_kernels(&mut run, &m, d(4 | 0x80, 1, 0)).unwrap();
    assert_eq!((mask, k), (2 | 0x80, [5, 7, -1]));
    // Negative core counts are refused.
    assert!(run.set_cores(-1, 0).is_err());
}

/// The kept mirror's contract (fresh.rs): after a larger run, every byte of
/// the mirror reads as in a zeroed one at begin (the footprint reset), on
/// every route the previous run took.
#[test]
fn a_kept_mirror_reads_as_a_fresh_one_after_any_run() {
    let big: Vec<Task> = (0..40)
        .map(|k| task(if k > 0 { &[0] } else { &[] }, 3, 5))
        .collect();
    let zeroed = |run: &V2Run, m: &Mapping| {
        // Everything past the header (which begin writes) reads zero.
        bytes(m.as_ptr(), run.segments().end as usize)[256..]
            .iter()
            .all(|&b| b == 0)
    };
    for route in 0..3 {
        let (mut run, m) = run_with(reference_caps(W));
        run.begin(&m, std::ptr::null_mut(), 1 << 20);
        let slots = claim_all(&mut run, &m, &big);
        match route {
            // Claimed and shipped.
            0 => {}
            // Written by the host and described.
            1 => {
                let used = run.used();
                run.claims = 0;
                run.set_host_use(used).unwrap();
            }
            // Written by the host, then abandoned (no description).
            _ => {
                run.claims = 0;
                run.claimed_to = 0;
            }
        }
        assert!(!zeroed(&run, &m));
        // The reference's producer check would find slot 20 bound.
        // SAFETY: the claimed slot state.
        assert_ne!(unsafe { (*slots[20].slot_state).task }, 0);
        run.reset_kept(&m);
        run.begin(&m, std::ptr::null_mut(), 1 << 20);
        assert!(zeroed(&run, &m), "route {route}");
    }
}
