//! leanrt as a drop-in for the reference runtime's host side
//! (hw-native-sys/simpler, host_build_graph at commit 6096d3271), through the
//! Rust API, against the goldens table both suites read
//! (`tests/staging_support/reference_goldens.inc`). The C suite
//! (`c_tests/staging/reference.c`) checks the same run through the C
//! descriptor and flags.
//!
//! Sources of the facts: `ring_segment_offsets` (pto_shared_memory.h),
//! `init_header_per_ring` (shared/pto_shared_memory.cpp), `prepare_task`,
//! `submit_task_common`, `alloc_tensors` and `mark_done`
//! (orchestrator_core/pto_orchestrator.cpp), and the four tasks of
//! `test_hbg_submit_poison.cpp`.
mod staging_support;

use std::ffi::c_void;

use leanrt::staging::Maker;
use leanrt::staging::{
    lrt_sm_header, lrt_sm_segments, lrt_upload_policy, segment_offsets, ClaimDesc, MakerConfig,
    MakerV1,
};
use leanrt::ErrorKind;
use staging_support::*;

#[test]
fn segments_match_the_reference_for_every_window() {
    for [w, d, p, s, f, e] in golden_segments() {
        let seg = segment_offsets(w).unwrap();
        assert_eq!(
            (seg.header, seg.descriptors, seg.payloads, seg.slot_states),
            (0, d, p, s),
            "W={w}"
        );
        assert_eq!((seg.completion_flags, seg.end), (f, e), "W={w}");
    }
    let e = segment_offsets(524_288).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("262144"), "{}", e.message());
}

fn check_header(
    h: &lrt_sm_header,
    heap: u64,
    base: usize,
    seg: &lrt_sm_segments,
    current: i32,
    done: i32,
) {
    assert_eq!(h.current_task_index, current);
    assert_eq!(h.last_task_alive, 0);
    assert_eq!(h.completed_watermark, -1);
    assert_eq!(h.task_window_size, 16);
    assert_eq!(h.task_window_mask, 15);
    assert_eq!(h._pad_mask, [0; 4]);
    assert_eq!(h.heap_size, heap);
    assert_eq!(h.task_descriptors_offset, 320);
    assert_eq!(h.task_descriptors as usize, base + seg.descriptors as usize);
    assert_eq!(h.task_payloads as usize, base + seg.payloads as usize);
    assert_eq!(h.slot_states as usize, base + seg.slot_states as usize);
    assert_eq!(
        h.completion_flags as usize,
        base + seg.completion_flags as usize
    );
    assert_eq!(h.orchestrator_done, done);
    assert_eq!(h.total_size, seg.end);
    assert_eq!(h.orch_error_code, 0);
    assert_eq!(h.sched_error_bitmap, 0);
    assert_eq!(h.sched_error_code, 0);
    assert_eq!(h.sched_error_thread, -1);
}

const PACKED: usize = 0x7f00_0000_1000;

fn check_slots(h: &lrt_sm_header) {
    for (i, want) in golden_slots().into_iter().enumerate() {
        // SAFETY: i < 4 = N; the header's pointers address the slots of a
        // host-memory image (mirror or device image of the counting device).
        let (d, p, s, f) = unsafe {
            (
                &*h.task_descriptors.add(i),
                &*h.task_payloads.add(i),
                &*h.slot_states.add(i),
                *h.completion_flags.add(i),
            )
        };
        let ctx = format!("slot {i}");
        assert_eq!(d.task_id, i as u64, "{ctx}");
        let packed = if i == 0 { PACKED } else { 0 };
        assert_eq!(d.packed_buffer_base as usize, packed, "{ctx}");
        assert_eq!(
            d.packed_buffer_end as usize,
            if i == 0 { PACKED + 4096 } else { 0 },
            "{ctx}"
        );
        if want.fanin_count > 0 {
            assert_eq!(p.fanin_local_ids[0], want.fanin0, "{ctx}");
        }
        assert_eq!((p.early_dispatch, p.predicate), ([0; 5], [0; 3]), "{ctx}");
        let got = GoldenSlot {
            last_consumer_local_id: s.last_consumer_local_id,
            task_state: s.task_state,
            active_mask: s.active_mask,
            task_attrs: s.task_attrs,
            task_kind: s.task_kind,
            total_required_subtasks: s.total_required_subtasks,
            logical_block_num: s.logical_block_num,
            fanin_count: p.fanin_count,
            fanin0: if p.fanin_count > 0 {
                p.fanin_local_ids[0]
            } else {
                0
            },
            completion_flag: f,
        };
        assert_eq!(got, want, "{ctx}");
        assert_eq!(s.payload as usize, p as *const _ as usize, "{ctx}");
        assert_eq!(s.task as usize, d as *const _ as usize, "{ctx}");
        assert!(s.wake_list_head.is_null() && s.next_in_wake_list.is_null());
        assert_eq!(s.any_subtask_deferred, 0, "{ctx}");
        assert_eq!((s.completed_subtasks, s.next_block_idx), (0, 0), "{ctx}");
        assert_eq!(s.graph_node_index, -1, "{ctx}");
        assert!(s.graph_context.is_null(), "{ctx}");
    }
}

fn claim_reference_run(m: &mut MakerV1) {
    let root = ClaimDesc {
        kernel_id: [-1, 0, -1],
        packed_buffer_base: PACKED as *mut c_void,
        packed_buffer_end: (PACKED + 4096) as *mut c_void,
        ..ClaimDesc::default()
    };
    let s = m.claim_slot_with(&root).unwrap();
    // SAFETY: a claimed slot's payload, ours until upload.
    unsafe {
        (*s.payload).tensor_count = 1;
        (*s.payload).scalar_count = 1;
        (*s.payload).scalars[0] = 42;
    }
    let dummy = ClaimDesc {
        active_mask: 0,
        ..ClaimDesc::default()
    };
    m.claim_slot_with(&ClaimDesc {
        fanins: &[0, 0],
        ..dummy
    })
    .unwrap();
    m.claim_slot_with(&ClaimDesc {
        task_attrs: 1,
        completed: true,
        ..dummy
    })
    .unwrap();
    // Refused claims write nothing and keep the index.
    for bad in [
        ClaimDesc {
            logical_block_num: 0,
            ..dummy
        },
        ClaimDesc {
            active_mask: 7,
            logical_block_num: 11_000,
            ..dummy
        },
        ClaimDesc {
            fanins: &[3],
            ..dummy
        },
        ClaimDesc {
            fanins: &[-1],
            ..dummy
        },
        ClaimDesc {
            fanins: &[0; 129],
            ..dummy
        },
    ] {
        let e = m.claim_slot_with(&bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}");
    }
    assert_eq!(m.claim_slot_with(&dummy).unwrap().index, 3);
}

#[test]
fn begin_run_and_claims_write_the_reference_values_under_every_policy() {
    for policy in [
        lrt_upload_policy::LRT_UPLOAD_FULL,
        lrt_upload_policy::LRT_UPLOAD_BOUNDED,
        lrt_upload_policy::LRT_UPLOAD_COMPACT,
    ] {
        for heap in [0, 1 << 20] {
            let api = FakeDevice::new();
            let cfg = MakerConfig {
                task_window: 16,
                policy,
                heap_size: heap,
                ..MakerConfig::default()
            };
            let mut m = MakerV1::new(&cfg, api.device()).unwrap();
            let want_heap = if heap == 0 { 268_435_456 } else { heap };
            assert_eq!(m.heap_size(), want_heap);
            let seg = m.segments();
            for _run in 0..2 {
                let h = m.begin_run().unwrap();
                let base = h as usize;
                // Poison the per-slot segments.
                // SAFETY: the mirror is seg.end bytes long.
                unsafe {
                    std::ptr::write_bytes(
                        (h as *mut u8).add(seg.descriptors as usize),
                        POISON,
                        (seg.end - seg.descriptors) as usize,
                    )
                };
                // SAFETY: the mirror's header, no other reference live.
                check_header(unsafe { &*h }, want_heap, base, &seg, 0, 0);
                claim_reference_run(&mut m);
                // SAFETY: as above.
                let hh = unsafe { &*h };
                check_header(hh, want_heap, base, &seg, 4, 0);
                check_slots(hh);
                assert_eq!(m.upload().unwrap().total_tasks, 4);
                // SAFETY: as above.
                check_header(unsafe { &*h }, want_heap, base, &seg, 4, 0);
                let image = m.device_image();
                let dh = device_header(image);
                let dseg = if policy == lrt_upload_policy::LRT_UPLOAD_COMPACT {
                    segment_offsets(4).unwrap()
                } else {
                    seg
                };
                check_header(&dh, want_heap, image as usize, &dseg, 4, 1);
                check_slots(&dh);
                assert_eq!(m.read_status().unwrap(), 0);
            }
        }
    }
    let cfg = MakerConfig {
        task_window: 16,
        heap_size: 1023,
        ..MakerConfig::default()
    };
    let api = FakeDevice::new();
    let e = MakerV1::new(&cfg, api.device()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(api.calls(Op::Malloc), 0);
}
