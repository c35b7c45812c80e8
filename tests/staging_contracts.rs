//! The init-on-write contract (poison test) and the copy contract, on a
//! counting host api whose device memory starts poisoned.
mod staging_support;

use leanrt::staging::Maker;
use leanrt::staging::{
    lrt_task_slot_state, lrt_upload_policy, segment_offsets, MakerConfig, MakerV1,
    COMPACT_GATHER_MAX_BYTES,
};

/// [descriptors, payloads, slot_states, completion_flags, end] of a compact
/// image for `n` slots, computed independently (every segment rounded to 64).
fn leanrt_compact_offsets(n: u64) -> [u64; 5] {
    let up = |x: u64| (x + 63) & !63;
    let d = 320;
    let p = d + up(40 * n);
    let s = p + up(4864 * n);
    let f = s + up(64 * n);
    [d, p, s, f, f + up(n)]
}
use staging_support::*;

const W: u64 = 1024;
const POLICIES: [lrt_upload_policy; 4] = [
    lrt_upload_policy::LRT_UPLOAD_FULL,
    lrt_upload_policy::LRT_UPLOAD_BOUNDED,
    lrt_upload_policy::LRT_UPLOAD_COMPACT,
    lrt_upload_policy::LRT_UPLOAD_AUTO,
];

fn maker(api: &FakeDevice, policy: lrt_upload_policy) -> MakerV1 {
    let cfg = MakerConfig {
        task_window: W,
        policy,
        ..MakerConfig::default()
    };
    MakerV1::new(&cfg, api.device()).expect("create")
}

/// Runs one run of `n` tasks with the mixed content of `run`; when `poison`
/// is set the mirror's per-slot segments and the device image's are filled
/// with 0xAA first. Returns the device tasks read through the device header.
fn one_run(
    m: &mut MakerV1,
    api: &FakeDevice,
    run: u64,
    n: usize,
    poison: bool,
) -> (leanrt::staging::lrt_upload_report, Vec<DeviceTask>) {
    let h = m.begin_run().expect("begin_run");
    let seg = m.segments();
    if poison {
        // SAFETY: the mirror is seg.end bytes long, the header at its start.
        unsafe {
            let base = (h as *mut u8).add(seg.descriptors as usize);
            std::ptr::write_bytes(base, POISON, (seg.end - seg.descriptors) as usize);
            let dev = (m.device_image() as *mut u8).add(seg.descriptors as usize);
            std::ptr::write_bytes(dev, POISON, (seg.end - seg.descriptors) as usize);
        }
    }
    for k in 0..n {
        let slot = m.claim_slot().expect("claim");
        assert_eq!(slot.index as usize, k);
        write_content(slot.descriptor, slot.payload, &content_for(run, k));
    }
    api.reset_copies();
    let report = m.upload().expect("upload");
    assert_eq!(report.total_tasks as usize, n);
    let dh = device_header(m.device_image());
    let tasks = (0..n).map(|i| device_task(&dh, i)).collect();
    (report, tasks)
}

/// What claim_slot writes for slot `i` (a root kernel task on one AIV core,
/// as the reference's submit path writes it), pointers cleared.
fn expected_state(i: usize) -> lrt_task_slot_state {
    lrt_task_slot_state {
        last_consumer_local_id: i as i32,
        task_state: 0,
        payload: std::ptr::null_mut(),
        task: std::ptr::null_mut(),
        wake_list_head: std::ptr::null_mut(),
        next_in_wake_list: std::ptr::null_mut(),
        active_mask: 2,
        task_attrs: 0,
        any_subtask_deferred: 0,
        task_kind: 0,
        completed_subtasks: 0,
        total_required_subtasks: 1,
        logical_block_num: 1,
        next_block_idx: 0,
        graph_node_index: -1,
        graph_context: std::ptr::null_mut(),
    }
}

/// Every field the device reads for slot `i` holds what claim_slot and the
/// host wrote, and nothing holds poison.
fn check_task(policy: lrt_upload_policy, run: u64, i: usize, t: &DeviceTask) {
    let ctx = format!("{policy:?} run {run} slot {i}");
    let want = content_for(run, i);
    assert_eq!(t.task_id, i as u64, "{ctx}: task_id");
    assert_eq!(t.packed, (0, 0), "{ctx}: packed buffer pointers");
    assert_eq!(t.content, want, "{ctx}: content");
    assert_eq!(t.early_dispatch, [0; 5], "{ctx}: early-dispatch state");
    assert_eq!(t.predicate, [0; 3], "{ctx}: predicate");
    assert_eq!(t.payload_index, Some(i), "{ctx}: slot payload pointer");
    assert_eq!(t.task_index, Some(i), "{ctx}: slot task pointer");
    assert_eq!(t.flag, 0, "{ctx}: completion flag");
    assert_eq!(t.state, bytes_of(&expected_state(i)), "{ctx}: slot state");
    assert!(!t.state_poisoned, "{ctx}: poison in slot state");
    for tensor in &t.content.tensors {
        assert!(!has_poison(bytes_of(tensor)), "{ctx}: poison in a tensor");
    }
}

#[test]
fn init_on_write_no_poison_reaches_the_device() {
    // A different N each run; checked on every run, the 2nd and the 10th
    // included, of one reused mirror per policy.
    let ns = [37usize, 5, 64, 1, 300, 0, 17, 250, 3, 128];
    for policy in POLICIES {
        let api = FakeDevice::new();
        let mut m = maker(&api, policy);
        for (r, &n) in ns.iter().enumerate() {
            let run = r as u64 + 1;
            let (_, tasks) = one_run(&mut m, &api, run, n, true);
            for (i, t) in tasks.iter().enumerate() {
                check_task(policy, run, i, t);
            }
            let dh = device_header(m.device_image());
            assert_eq!(dh.current_task_index as usize, n);
            assert_eq!(dh.task_window_size, W);
            assert_eq!(dh.task_window_mask as u64, W - 1);
            assert_eq!(dh.orch_error_code, 0);
            assert_eq!(dh.sched_error_code, 0);
        }
    }
}

#[test]
fn stale_slots_from_a_bigger_run_do_not_leak() {
    // Without re-poisoning: run 1 leaves 300 slots of content; run 2 claims
    // fewer, with different content. The device must see run 2 only.
    for policy in POLICIES {
        let api = FakeDevice::new();
        let mut m = maker(&api, policy);
        one_run(&mut m, &api, 1, 300, true);
        let (_, tasks) = one_run(&mut m, &api, 2, 40, false);
        for (i, t) in tasks.iter().enumerate() {
            check_task(policy, 2, i, t);
        }
    }
}

#[test]
fn copy_contract_per_policy() {
    let seg = segment_offsets(W).unwrap();
    // 300 slots make a 1.5 MB compact image: COMPACT copies it straight to
    // its offsets; the smaller ones are gathered into one copy.
    for n in [0usize, 1, 7, 300, W as usize] {
        let mut per_policy = Vec::new();
        for policy in POLICIES {
            let api = FakeDevice::new();
            let mut m = maker(&api, policy);
            // Two runs: the second one is checked (reused mirror).
            one_run(&mut m, &api, 1, 50, true);
            let (report, tasks) = one_run(&mut m, &api, 2, n, false);
            let copies = api.copies();
            assert_eq!(report.copies as usize, copies.len(), "{policy:?} N={n}");
            assert_eq!(
                report.bytes as usize,
                api.copied_bytes(),
                "{policy:?} N={n}"
            );
            assert!(
                copies.iter().all(|c| c.1 > 0),
                "zero-length copy: {copies:?}"
            );
            // AUTO ships as BOUNDED or as a gathered COMPACT, and says which.
            let shape = match policy {
                lrt_upload_policy::LRT_UPLOAD_AUTO => {
                    assert_ne!(report.path, lrt_upload_policy::LRT_UPLOAD_FULL);
                    report.path
                }
                p => {
                    assert_eq!(report.path, p);
                    p
                }
            };
            match shape {
                lrt_upload_policy::LRT_UPLOAD_BOUNDED => {
                    assert_eq!(report.bytes, 320 + 4969 * n as u64, "N={n}");
                    assert!(copies.len() <= 4);
                    assert_eq!(copies.len(), if n == 0 { 1 } else { 4 });
                    // Exactly the live prefixes of the segments.
                    let mut want = vec![(0, 320 + 40 * n)];
                    if n > 0 {
                        want.push((seg.payloads as usize, 4864 * n));
                        want.push((seg.slot_states as usize, 64 * n));
                        want.push((seg.completion_flags as usize, n));
                    }
                    assert_eq!(copies, want);
                }
                lrt_upload_policy::LRT_UPLOAD_COMPACT => {
                    let dh = device_header(m.device_image());
                    let c = leanrt_compact_offsets(n as u64);
                    assert_eq!(dh.total_size, c[4], "compact image size in header");
                    let gathered = policy == lrt_upload_policy::LRT_UPLOAD_AUTO
                        || n as u64 == W
                        || c[4] <= COMPACT_GATHER_MAX_BYTES;
                    if gathered {
                        // One copy of the whole compact image.
                        assert_eq!(copies, vec![(0, c[4] as usize)], "N={n}");
                    } else {
                        // The live prefixes straight to their compact offsets.
                        let want = vec![
                            (0, 320 + 40 * n),
                            (c[1] as usize, 4864 * n),
                            (c[2] as usize, 64 * n),
                            (c[3] as usize, n),
                        ];
                        assert_eq!(copies, want, "N={n}");
                    }
                }
                _ => {
                    assert_eq!(copies, vec![(0, seg.end as usize)]);
                }
            }
            for (i, t) in tasks.iter().enumerate() {
                check_task(policy, 2, i, t);
            }
            per_policy.push(tasks);
        }
        assert_eq!(per_policy[0], per_policy[1], "FULL vs BOUNDED, N={n}");
        assert_eq!(per_policy[1], per_policy[2], "BOUNDED vs COMPACT, N={n}");
        assert_eq!(per_policy[1], per_policy[3], "BOUNDED vs AUTO, N={n}");
    }
}

#[test]
fn upload_leaves_host_pointers_in_the_mirror() {
    for policy in POLICIES {
        let api = FakeDevice::new();
        let mut m = maker(&api, policy);
        let h = m.begin_run().unwrap();
        let slots: Vec<_> = (0..5).map(|_| m.claim_slot().unwrap()).collect();
        // SAFETY: h is the live mirror header.
        let before = unsafe { *h };
        api.reset_copies(); // AUTO measured its copy cost at create
        m.upload().unwrap();
        // SAFETY: as above.
        let after = unsafe { *h };
        assert_eq!(
            bytes_of(&before),
            bytes_of(&after),
            "{policy:?}: header restored"
        );
        for s in &slots {
            // SAFETY: the slot state lives in the mirror.
            let st = unsafe { &*s.slot_state };
            assert_eq!(st.payload, s.payload);
            assert_eq!(st.task, s.descriptor);
        }
        // Uploading the same run again ships the same image.
        let first = api.copies();
        api.reset_copies();
        m.upload().unwrap();
        assert_eq!(api.copies(), first);
    }
}
