//! Fuzz over v2 claim mixes: seeded random runs on makers of random windows,
//! pool capacities and frames, each task a random kernel, dummy,
//! pre-completed or graph-shell task with random tensors, scalars and
//! producers (duplicates and bad ones included), some runs with a latched
//! orchestrator error. A model follows every claim:
//! * a claim the contract refuses (bad producer, too many arguments, a graph
//!   shell with arguments, a full window or pool, a latched error) fails
//!   with its status and changes nothing: the pool cursors and the compact
//!   image of the run stay what they were;
//! * an upload ships one copy of `[before | image | after]`, and on the
//!   device every slot names its own payload and descriptor and every region
//!   resolves, inside the image's own pool, to the records, scalars and
//!   distinct producers the model holds; a graph shell's tensor and scalar
//!   regions stay unbound;
//! * an upload with an error latched is `State` and leaves the device as it
//!   was.
//!
//! `LEANRT_FUZZ_ITERS` (runs, default 300) and `LEANRT_FUZZ_SEED` size it.
mod fuzz_common;

use std::sync::Arc;
use std::time::Duration;

use fuzz_common::*;
use leanrt::device::host::HostDevice;
use leanrt::staging::Maker;
use leanrt::staging::{
    lrt_layout, lrt_task_descriptor, lrt_v2_sm_header, lrt_v2_task_payload, lrt_v2_task_slot_state,
    rel_decode, v2_image_segments, ClaimDesc, MakerConfig, MakerV2, TensorRecord, V2ClaimDesc,
    V2PoolUse,
};
use leanrt::ErrorKind;

/// What the model keeps of a claimed task.
struct Task {
    kind: u8,
    completed: bool,
    records: Vec<TensorRecord>,
    scalars: Vec<u64>,
    distinct: Vec<i32>,
    kernel0: i32,
}

fn up(x: u64, r: u64) -> u64 {
    x.div_ceil(r) * r
}

fn record(rng: &mut Rng) -> TensorRecord {
    let mut r = [0u8; 128];
    for b in r.iter_mut() {
        *b = rng.next_u64() as u8;
    }
    r
}

/// One run on `maker`: random claims against the model, then the upload
/// checked on the device. Returns (tasks claimed, whether it was uploaded).
fn one_run(
    rng: &mut Rng,
    maker: &mut MakerV2,
    window: u64,
    caps: V2PoolUse,
    frames: (usize, usize),
) -> (u64, bool) {
    let h = maker.begin_run().expect("begin_run");
    let mut tasks: Vec<Task> = Vec::new();
    let mut used = V2PoolUse::default();
    let latch = rng.chance(1, 8);
    let attempts = rng.below(window + 8);
    for _ in 0..attempts {
        if latch && rng.chance(1, 20) {
            // SAFETY: the mirror's header, valid until the next begin_run.
            unsafe { (*h).orch_error_code = -(1 + rng.below(100) as i32) };
        }
        let graph = rng.chance(1, 8);
        let completed = !graph && rng.chance(1, 8);
        let mask = if graph || rng.chance(1, 5) {
            0
        } else {
            1 + rng.below(7) as u8
        };
        let nt = if rng.chance(1, 30) {
            33
        } else if graph && !rng.chance(1, 10) {
            0
        } else {
            rng.below(6) as usize
        };
        let ns = if rng.chance(1, 30) {
            17
        } else if graph && !rng.chance(1, 10) {
            0
        } else {
            rng.below(17) as usize
        };
        let nt_ok = nt.min(32);
        let records: Vec<TensorRecord> = (0..nt_ok).map(|_| record(rng)).collect();
        let scalars: Vec<u64> = (0..ns.min(16)).map(|_| rng.next_u64()).collect();
        let idx = tasks.len() as i32;
        let mut fanins: Vec<i32> = (0..rng.below(6))
            .map(|_| rng.below(idx.max(1) as u64) as i32)
            .collect();
        if rng.chance(1, 30) {
            fanins.push(if rng.chance(1, 2) { idx } else { -1 });
        }
        let kernel0 = rng.below(1000) as i32;
        let d = V2ClaimDesc {
            task: ClaimDesc {
                active_mask: mask,
                fanins: &fanins,
                completed,
                kernel_id: [kernel0, -1, -1],
                ..ClaimDesc::default()
            },
            tensor_count: nt,
            tensors: (nt <= 32).then_some(records.as_slice()),
            scalar_count: ns,
            scalars: (ns <= 16).then_some(scalars.as_slice()),
            graph_shell: graph,
        };
        // The reference's append_fanin_or_fail: repeats and ids of no slot
        // of this run ([0, idx)) are no producers.
        let mut distinct: Vec<i32> = Vec::new();
        for &p in &fanins {
            if (0..idx).contains(&p) && !distinct.contains(&p) {
                distinct.push(p);
            }
        }
        // SAFETY: as above.
        let latched = unsafe { (*h).orch_error_code } != 0;
        let bad_args = nt > 32 || ns > 16 || (graph && (nt > 0 || ns > 0));
        let need = V2PoolUse {
            fanin_ids: used.fanin_ids + up(distinct.len() as u64, 16),
            tensors: used.tensors + if graph { 0 } else { nt as u64 },
            scalars: used.scalars + if graph { 0 } else { up(ns as u64, 8) },
        };
        let full = need.fanin_ids > caps.fanin_ids
            || need.tensors > caps.tensors
            || need.scalars > caps.scalars;
        let before = maker.image_segments();
        let got = maker.claim_slot(&d);
        let want = if latched {
            Some(ErrorKind::State)
        } else if tasks.len() as u64 == window {
            Some(ErrorKind::OutOfRange)
        } else if bad_args {
            Some(ErrorKind::InvalidArgument)
        } else if full {
            Some(ErrorKind::OutOfRange)
        } else {
            None
        };
        match (got, want) {
            (Ok(slot), None) => {
                assert_eq!(slot.index, idx);
                used = need;
                tasks.push(Task {
                    kind: if graph {
                        2
                    } else if mask != 0 {
                        0
                    } else {
                        1
                    },
                    completed,
                    records: if graph { vec![] } else { records },
                    scalars: if graph { vec![] } else { scalars },
                    distinct,
                    kernel0: if graph { -1 } else { kernel0 },
                });
            }
            (Err(e), Some(kind)) => {
                assert_eq!(e.kind(), kind, "claim {idx}: {e}");
                assert_eq!(
                    maker.image_segments(),
                    before,
                    "a refused claim changed the run"
                );
            }
            (got, want) => panic!("claim {idx}: got {got:?}, the model wants {want:?}"),
        }
    }
    let n = tasks.len() as u64;
    let seg = v2_image_segments(n, used.fanin_ids, used.tensors, used.scalars).unwrap();
    assert_eq!(maker.image_segments(), seg);
    let before: Vec<u8> = (0..frames.0).map(|_| rng.next_u64() as u8).collect();
    let after: Vec<u8> = (0..frames.1).map(|_| rng.next_u64() as u8).collect();
    let dev = maker.device_image() as *mut u8;
    let total = frames.0 + seg.end as usize + frames.1;
    // SAFETY: the host backend's device image is host memory holding the
    // before frame's capacity ahead of the image start and the largest
    // framed image after it.
    let device = unsafe { std::slice::from_raw_parts_mut(dev.sub(frames.0), total) };
    device.fill(0xAA);
    // SAFETY: as above.
    let latched = unsafe { (*h).orch_error_code } != 0;
    let r = maker.upload(&before, &after);
    if latched {
        assert_eq!(r.unwrap_err().kind(), ErrorKind::State);
        assert!(
            device.iter().all(|&b| b == 0xAA),
            "a refused upload wrote to the device"
        );
        return (n, false);
    }
    let r = r.expect("upload");
    assert_eq!(
        (r.copies, r.bytes, r.total_tasks),
        (1, total as u64, n as i32)
    );
    assert_eq!(&device[..frames.0], before.as_slice());
    assert_eq!(&device[frames.0 + seg.end as usize..], after.as_slice());
    let base = dev as usize;
    // SAFETY: the image's header at the image start.
    let hd = unsafe { &*(dev as *const lrt_v2_sm_header) };
    assert!(hd.task_descriptors.is_null() && hd.task_payloads.is_null());
    assert!(hd.slot_states.is_null() && hd.completion_flags.is_null());
    assert_eq!((hd.current_task_index, hd.orchestrator_done), (n as i32, 1));
    let mut last_consumer: Vec<i32> = (0..n as i32).collect();
    for (i, t) in tasks.iter().enumerate() {
        for &p in &t.distinct {
            last_consumer[p as usize] = last_consumer[p as usize].max(i as i32);
        }
    }
    for (i, t) in tasks.iter().enumerate() {
        let d_at = base + seg.descriptors as usize + 40 * i;
        let p_at = base + seg.payloads as usize + 192 * i;
        let s_at = base + seg.slot_states as usize + 64 * i;
        // SAFETY: element i < n of each segment of the shipped image.
        let (d, p, s) = unsafe {
            (
                &*(d_at as *const lrt_task_descriptor),
                &*(p_at as *const lrt_v2_task_payload),
                &*(s_at as *const lrt_v2_task_slot_state),
            )
        };
        assert_eq!(rel_decode(s_at + 8, s.payload), Some(p_at), "slot {i}");
        assert_eq!(rel_decode(s_at + 12, s.task), Some(d_at), "slot {i}");
        assert_eq!((d.task_id, d.kernel_id[0]), (i as u64, t.kernel0));
        assert_eq!(
            (s.task_kind, s.task_state),
            (t.kind, i32::from(t.completed))
        );
        assert_eq!(s.last_consumer_local_id, last_consumer[i]);
        assert_eq!(
            device[frames.0 + seg.completion_flags as usize + i],
            u8::from(t.completed)
        );
        assert_eq!(
            (p.tensor_count, p.scalar_count, p.fanin_count),
            (
                t.records.len() as i32,
                t.scalars.len() as i32,
                t.distinct.len() as i32
            )
        );
        let inside = |a: usize, from: u64, to: u64| {
            assert!(
                a >= base + from as usize && a <= base + to as usize,
                "slot {i}: region outside its pool"
            );
            a
        };
        match rel_decode(p_at + 12, p.tensors) {
            None => assert_eq!(t.kind, 2, "slot {i}: unbound tensors"),
            Some(a) => {
                let a = inside(a, seg.tensor_pool, seg.scalar_pool) - base + frames.0;
                assert_eq!(
                    &device[a..a + 128 * t.records.len()],
                    t.records.concat().as_slice()
                );
            }
        }
        match rel_decode(p_at + 16, p.scalars) {
            None => assert_eq!(t.kind, 2, "slot {i}: unbound scalars"),
            Some(a) => {
                let a = inside(a, seg.scalar_pool, seg.end) - base + frames.0;
                let got: Vec<u64> = device[a..a + 8 * t.scalars.len()]
                    .chunks(8)
                    .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
                    .collect();
                assert_eq!(got, t.scalars);
            }
        }
        let a = inside(
            rel_decode(p_at + 20, p.fanin).expect("fanin bound"),
            seg.fanin_pool,
            seg.tensor_pool,
        ) - base
            + frames.0;
        let got: Vec<i32> = device[a..a + 4 * t.distinct.len()]
            .chunks(4)
            .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, t.distinct);
    }
    (n, true)
}

#[test]
fn fuzz_v2_claim_mixes() {
    let seed = fuzz_seed("fuzz_v2_claim_mixes", 0x5eed_0002);
    let iters = fuzz_iters(300);
    let _dog = Watchdog::new("fuzz_v2_claim_mixes", Duration::from_secs(600));
    let mut rng = Rng::new(seed);
    let (mut made, mut claimed, mut uploads) = (0, 0u64, 0u64);
    while made < iters {
        let window = 1u64 << (2 + rng.below(7));
        let small = rng.chance(1, 3);
        let caps = V2PoolUse {
            fanin_ids: if small {
                16 * (1 + rng.below(window))
            } else {
                window * 128
            },
            tensors: if small {
                rng.below(window * 4)
            } else {
                window * 32
            },
            scalars: if small {
                8 * rng.below(window)
            } else {
                window * 16
            },
        };
        let frames = (rng.below(1024) as usize, rng.below(300) as usize);
        let cfg = MakerConfig {
            task_window: window,
            layout: lrt_layout::LRT_LAYOUT_V2,
            frame_before: frames.0 as u64 + rng.below(100),
            frame_after: frames.1 as u64 + rng.below(100),
            v2_pools: caps,
            fresh_mirror: rng.chance(1, 10),
            ..MakerConfig::default()
        };
        let mut maker = match MakerV2::new(&cfg, Arc::new(HostDevice)) {
            Ok(m) => m,
            // A pool of 0 elements means "the reference's": never refused.
            Err(e) => panic!("create (W={window}, {caps:?}): {e}"),
        };
        // Several runs on one maker: a reused mirror ships only this run.
        for _ in 0..1 + rng.below(3) {
            note_step(|| format!("W={window} caps={caps:?} frames={frames:?}"));
            let resolved = maker.pool_capacities();
            if rng.chance(1, 2) {
                // The same run twice: the second is claimed in place.
                let mut again = rng.clone();
                one_run(&mut again, &mut maker, window, resolved, frames);
            }
            let (n, uploaded) = one_run(&mut rng, &mut maker, window, resolved, frames);
            claimed += n;
            uploads += u64::from(uploaded);
            made += 1;
        }
    }
    // The mixes exercised what they are for: many tasks claimed and shipped.
    assert!(claimed > 5 * made, "{claimed} tasks claimed in {made} runs");
    assert!(uploads * 2 > made, "{uploads} of {made} runs uploaded");
}
