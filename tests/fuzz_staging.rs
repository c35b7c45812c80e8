//! Fuzz harness for the staging half of the C ABI (`lrt_sm_ring_segment_offsets`,
//! `lrt_maker_config_init`, `lrt_runtime_maker_*`).
//!
//! Seeded random call sequences drive up to three makers through every
//! lifecycle state (fresh, mid-run, full window, after a failed or rejected
//! upload, after read_status, destroyed and recreated) with NULLs,
//! out-of-range numbers, invalid enum values, corrupted indices and pointers
//! and injected device failures. Every call is checked against a model:
//! * the status is the one the contract gives (or, where the contract leaves
//!   the choice open, a valid status), with a message in `lrt_last_error`;
//! * a rejected call changes nothing observable: out-parameters keep their
//!   fill pattern, the mirror's header and slots keep their bytes, the
//!   device sees no copy and no allocation;
//! * a successful upload ships exactly what the device reads: the device
//!   image (poisoned before each upload) holds the run's header, descriptors,
//!   payloads, slot states and flags with device pointers;
//! * destroy frees every device allocation, the simulated device sees no
//!   misuse (bad free, out-of-bounds copy), the thread count does not grow.
//!
//! `LEANRT_FUZZ_ITERS` (default 6000) and `LEANRT_FUZZ_SEED` size the run; a
//! watchdog aborts on a hang.
mod emulation;
mod fuzz_common;
mod staging_support;

use leanrt::ffi::staging::lrt_runtime_maker;
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::time::Duration;

use fuzz_common::*;
use leanrt::ffi::device::lrt_host_api as HostApi;
use leanrt::ffi::staging as ffi;
use leanrt::ffi::staging::{lrt_task_slot, lrt_upload_report};
use leanrt::staging::lrt_sm_segments;
use staging_support::{golden_segments_for, FakeDevice, Op, POISON};

/// The simulated device's capacity: larger allocations fail (NULL), as on a
/// device that is out of memory.
const SIM_MAX_ALLOC: usize = 128 << 20;

// Status values, as a C caller sees them.
const OK: i32 = 0;
const INVALID: i32 = 1;
const OUT_OF_RANGE: i32 = 2;
const NO_MEMORY: i32 = 3;
const DEVICE: i32 = 4;
const STATE: i32 = 6;

// Layout facts from the design contract (bytes).
const HDR: usize = 320;
const DESC: usize = 40;
const PAY: usize = 4864;
const SS: usize = 64;
const H_CTI: usize = 0;
const H_WINDOW: usize = 192;
const H_MASK: usize = 200;
const H_DESC_PTR: usize = 224;
const H_PAY_PTR: usize = 232;
const H_SS_PTR: usize = 240;
const H_FLAGS_PTR: usize = 248;
const H_ORCH_ERR: usize = 272;
const H_SCHED_ERR: usize = 280;
const D_KERNEL: usize = 8;
const P_SCALARS: usize = 4736;
const S_PAYLOAD: usize = 8;
const S_TASK: usize = 16;
const S_GRAPH_NODE: usize = 52;

/// `lrt_maker_config` as C lays it out, so that any integer can be put in
/// the enum-typed `policy` field.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct RawCfg {
    task_window: u64,
    policy: u32,
    flags: u32,
    heap_size: u64,
    /// The layout-v2 members (v1 here: all 0).
    layout: u32,
    pad: u32,
    v2: [u64; 5],
}
const _: () = assert!(
    std::mem::size_of::<RawCfg>() == std::mem::size_of::<leanrt::ffi::staging::lrt_maker_config>()
);

/// The end of a compact image for `n` slots (every segment rounded to 64).
fn compact_end(n: u64) -> u64 {
    let up = |x: u64| (x + 63) & !63;
    320 + up(DESC as u64 * n) + up(PAY as u64 * n) + up(SS as u64 * n) + up(n)
}

/// The reference's segment offsets for window `w` (descriptors, payloads,
/// slot states, flags, end), from the goldens table; None for a window the
/// contract refuses.
fn expected_segments(w: u64) -> Option<[u64; 5]> {
    golden_segments_for(w).map(|g| [g[1], g[2], g[3], g[4], g[5]])
}

fn seg_array(s: &lrt_sm_segments) -> [u64; 6] {
    [
        s.header,
        s.descriptors,
        s.payloads,
        s.slot_states,
        s.completion_flags,
        s.end,
    ]
}

fn filled_segments() -> lrt_sm_segments {
    lrt_sm_segments {
        header: 0xdead,
        descriptors: 0xdead,
        payloads: 0xdead,
        slot_states: 0xdead,
        completion_flags: 0xdead,
        end: 0xdead,
    }
}

fn segments_untouched(s: &lrt_sm_segments) -> bool {
    seg_array(s).iter().all(|&v| v == 0xdead)
}

// Raw reads and writes at byte offsets: `rd_*`/`wr_*` in fuzz_common.
fn bytes(base: *const u8, off: usize, len: usize) -> Vec<u8> {
    // SAFETY: callers pass a range inside a live image.
    unsafe { std::slice::from_raw_parts(base.add(off), len) }.to_vec()
}

/// Content the fuzzer wrote into a claimed slot, checked on the device.
#[derive(Clone, Copy, Debug)]
struct SlotContent {
    kernel0: i32,
    scalar0: u64,
    scalar15: u64,
    graph_node: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Created, no begin_run yet.
    Fresh,
    /// begin_run done; tasks being claimed.
    InRun,
    /// The last upload failed or was rejected.
    AfterFailure,
    /// The last upload succeeded.
    Uploaded,
}

struct Maker {
    h: *mut lrt_runtime_maker,
    sim: Box<FakeDevice>,
    window: u64,
    policy: u32,
    segs: [u64; 5],
    header: *mut u8,
    phase: Phase,
    /// What each claimed slot of the current run holds.
    slots: Vec<SlotContent>,
    /// `LRT_MAKER_FRESH_MIRROR`: a new mirror every run.
    fresh: bool,
    /// Whether the last upload that got to copying succeeded (read_status
    /// is allowed only then).
    uploaded: bool,
}

struct Fuzz {
    rng: Rng,
    calls: u64,
    makers: Vec<Option<Maker>>,
    created: u64,
    uploads_ok: u64,
    rejected: u64,
}

fn cfg_for(rng: &mut Rng) -> RawCfg {
    let window = match rng.below(10) {
        0 => rng.edgy_u64(),
        1 => 0,
        2 => 1u64 << rng.below(22),
        _ => 1u64 << rng.range_i64(2, 8),
    };
    let policy = match rng.below(8) {
        0 => rng.next_u64() as u32,
        1 => 3,
        _ => rng.below(3) as u32,
    };
    let flags = match rng.below(8) {
        0 => rng.next_u64() as u32,
        1 => 4,
        _ => rng.below(4) as u32,
    };
    RawCfg {
        task_window: window,
        policy,
        flags,
        heap_size: 0,
        layout: 0,
        pad: 0,
        v2: [0; 5],
    }
}

impl Fuzz {
    fn status(&mut self, st: leanrt::ffi::lrt_status) -> i32 {
        self.calls += 1;
        st as i32
    }

    fn fuzz_segment_offsets(&mut self) {
        let w = match self.rng.below(3) {
            0 => self.rng.edgy_u64(),
            _ => 1u64 << self.rng.below(40),
        };
        let mut out = filled_segments();
        let with_null = self.rng.chance(1, 8);
        mark_last_error();
        // SAFETY: out is NULL or a valid lrt_sm_segments.
        let st = self.status(unsafe {
            ffi::lrt_sm_ring_segment_offsets(w, if with_null { null_mut() } else { &mut out })
        });
        match (expected_segments(w), with_null) {
            (_, true) => {
                assert_eq!(st, INVALID, "segment_offsets(W={w}, NULL)");
                assert_error_names("lrt_sm_ring_segment_offsets", "NULL out");
            }
            (None, false) => {
                assert_ne!(st, OK, "segment_offsets accepted invalid window {w}");
                assert!(segments_untouched(&out), "W={w}: out written on error");
                assert_error_names("lrt_sm_ring_segment_offsets", "bad window");
            }
            (Some(e), false) => {
                assert_eq!(
                    st,
                    OK,
                    "segment_offsets rejected valid window {w}: {}",
                    last_error()
                );
                let got = seg_array(&out);
                assert_eq!(got[0], 0);
                assert_eq!(&got[1..5], &e[..4], "W={w}");
                assert!(
                    got[5] == e[4] || got[5] == (e[4] + 63) & !63,
                    "W={w}: end {} vs {}",
                    got[5],
                    e[4]
                );
            }
        }
    }

    fn free_slot(&self) -> Option<usize> {
        self.makers.iter().position(|m| m.is_none())
    }

    fn random_maker(&mut self) -> Option<usize> {
        let live: Vec<usize> = (0..self.makers.len())
            .filter(|&i| self.makers[i].is_some())
            .collect();
        if live.is_empty() {
            None
        } else {
            Some(*self.rng.pick(&live))
        }
    }

    fn fuzz_create(&mut self) {
        let Some(slot) = self.free_slot() else {
            return;
        };
        let sim = Box::new(FakeDevice::limited(SIM_MAX_ALLOC));
        let mut cfg = cfg_for(&mut self.rng);
        // Mostly small windows (fast); sometimes the default (0 = 16384).
        if self.rng.chance(1, 100) {
            cfg.task_window = 0;
        }
        // The simulated device holds 128 MiB: a larger valid window is a
        // device out of memory (LRT_ERR_NO_MEMORY), like an injected failure.
        let too_big =
            expected_segments(cfg.task_window).is_some_and(|e| e[4] as usize > SIM_MAX_ALLOC);
        let fail_malloc = self.rng.chance(1, 12) || too_big;
        if fail_malloc {
            sim.state().fail_always.push(Op::Malloc);
        }
        // The api: the checked device, a NULL pointer, no ops, or an ops
        // table with a NULL callback.
        static NO_FREE: leanrt::ffi::device::lrt_host_api_ops =
            leanrt::ffi::device::lrt_host_api_ops {
                device_malloc: None,
                device_free: None,
                copy_to_device: None,
                copy_from_device: None,
            };
        let api_kind = self.rng.below(12);
        let api = match api_kind {
            0 => HostApi {
                ctx: null_mut(),
                ops: null(),
            },
            1 => HostApi {
                ctx: null_mut(),
                ops: &NO_FREE,
            },
            _ => sim.host_api(),
        };
        let null_cfg = self.rng.chance(1, 15);
        let null_api = self.rng.chance(1, 15);
        let null_out = self.rng.chance(1, 15);
        let sentinel = 0x5a5a_usize as *mut lrt_runtime_maker;
        let mut out = sentinel;
        let window_ok = cfg.task_window == 0 || expected_segments(cfg.task_window).is_some();
        let policy_ok = cfg.policy < 4 && cfg.flags & !3 == 0;
        mark_last_error();
        // SAFETY: every pointer is NULL or valid; the sim outlives the maker.
        let st = self.status(unsafe {
            ffi::lrt_runtime_maker_create(
                if null_cfg {
                    null()
                } else {
                    (&cfg as *const RawCfg).cast()
                },
                if null_api { null() } else { &api },
                if null_out { null_mut() } else { &mut out },
            )
        });
        let invalid = null_cfg || null_out || null_api || api_kind <= 1 || !window_ok || !policy_ok;
        let must_fail = invalid || fail_malloc;
        let context = format!(
            "create(cfg={cfg:?} null_cfg={null_cfg} null_api={null_api} null_out={null_out} api_kind={api_kind} fail_malloc={fail_malloc})"
        );
        if st != OK {
            assert!(must_fail, "{context}: unexpected {st}: {}", last_error());
            assert_eq!(out, sentinel, "{context}: *out written on failure");
            assert_error_names("lrt_runtime_maker_create", &context);
            if invalid {
                assert_eq!(st, INVALID, "{context}: {}", last_error());
            } else if fail_malloc {
                assert_eq!(st, NO_MEMORY, "{context}: {}", last_error());
            }
            assert_eq!(sim.live_count(), 0, "{context}: device memory leaked");
            sim.assert_clean(&context);
            self.rejected += 1;
            return;
        }
        assert!(!must_fail, "{context}: accepted");
        assert!(!out.is_null() && out != sentinel, "{context}: no handle");
        // Learn the resolved window from the maker's segments.
        let mut segs = filled_segments();
        // SAFETY: out is a live maker, segs a valid lrt_sm_segments.
        let st = self.status(unsafe { ffi::lrt_runtime_maker_segments(out, &mut segs) });
        assert_eq!(st, OK);
        let s = seg_array(&segs);
        // The flags segment is rounded up to 64 bytes, so find the W whose
        // flags offset and end both match.
        let window = (2..=30)
            .map(|b| 1u64 << b)
            .find(|&w| expected_segments(w).map(|e| (e[3], e[4])) == Some((s[4], s[5])))
            .expect("segments match some window");
        let e = expected_segments(window).unwrap();
        assert_eq!(&s[1..5], &e[..4], "{context}: segments");
        if !null_cfg && cfg.task_window != 0 {
            assert_eq!(window, cfg.task_window, "{context}: window");
        }
        assert_eq!(sim.live_count(), 1, "{context}: one device allocation");
        // SAFETY: out is a live maker.
        let image = unsafe { ffi::lrt_runtime_maker_device_image(out) };
        self.calls += 1;
        assert!(
            sim.with_alloc(image, |b| b.len() as u64 >= e[4])
                .unwrap_or(false),
            "{context}: device_image is not the allocation"
        );
        self.created += 1;
        self.makers[slot] = Some(Maker {
            h: out,
            sim,
            window,
            policy: cfg.policy,
            fresh: cfg.flags & 2 != 0,
            segs: e,
            header: null_mut(),
            phase: Phase::Fresh,
            slots: Vec::new(),
            uploaded: false,
        });
    }

    fn fuzz_destroy(&mut self, i: usize) {
        let m = self.makers[i].take().unwrap();
        // SAFETY: a live maker, not used again.
        unsafe { ffi::lrt_runtime_maker_destroy(m.h) };
        self.calls += 1;
        assert_eq!(m.sim.live_count(), 0, "destroy leaked device memory");
        let st = m.sim.state();
        assert_eq!(st.total_allocs, st.total_frees, "allocs/frees unbalanced");
        drop(st);
        m.sim.assert_clean("destroy");
    }

    fn fuzz_begin_run(&mut self, i: usize) {
        let null_out = self.rng.chance(1, 10);
        let m = self.makers[i].as_mut().unwrap();
        let mut hdr: *mut leanrt::staging::lrt_sm_header = 0x77 as *mut _;
        mark_last_error();
        // SAFETY: live maker; hdr valid or NULL.
        let st = unsafe {
            ffi::lrt_runtime_maker_begin_run(m.h, if null_out { null_mut() } else { &mut hdr })
        } as i32;
        self.calls += 1;
        if null_out {
            assert_eq!(st, INVALID, "begin_run(NULL out)");
            assert_eq!(hdr as usize, 0x77);
            assert_error_names("lrt_runtime_maker_begin_run", "NULL out");
            return;
        }
        assert_eq!(st, OK, "begin_run: {}", last_error());
        let h = hdr.cast::<u8>();
        assert!(
            m.header.is_null() || m.header == h || m.fresh,
            "mirror moved"
        );
        m.header = h;
        let w = m.window;
        assert_eq!(rd_i32(h, H_CTI), 0);
        assert_eq!(rd_u64(h, H_WINDOW), w);
        assert_eq!(rd_u64(h, H_MASK), w - 1);
        for (off, seg) in [
            (H_DESC_PTR, m.segs[0]),
            (H_PAY_PTR, m.segs[1]),
            (H_SS_PTR, m.segs[2]),
            (H_FLAGS_PTR, m.segs[3]),
        ] {
            assert_eq!(
                rd_u64(h, off),
                h as u64 + seg,
                "header array pointer @{off}"
            );
        }
        assert_eq!(rd_i32(h, H_ORCH_ERR), 0);
        m.phase = Phase::InRun;
        m.slots.clear();
    }

    fn fuzz_claim(&mut self, i: usize) {
        let null_out = self.rng.chance(1, 12);
        let write = self.rng.chance(7, 8);
        let content = SlotContent {
            kernel0: self.rng.next_u64() as i32,
            scalar0: self.rng.next_u64(),
            scalar15: self.rng.next_u64(),
            graph_node: self.rng.next_u64() as i32,
        };
        let m = self.makers[i].as_mut().unwrap();
        let mut out = lrt_task_slot {
            index: -77,
            descriptor: null_mut(),
            payload: null_mut(),
            slot_state: null_mut(),
        };
        let before = (!m.header.is_null()).then(|| bytes(m.header, 0, HDR));
        let cti = if m.header.is_null() {
            -1
        } else {
            rd_i32(m.header, H_CTI)
        };
        mark_last_error();
        // SAFETY: live maker; out valid or NULL.
        let st = unsafe {
            ffi::lrt_runtime_maker_claim_slot(m.h, if null_out { null_mut() } else { &mut out })
        } as i32;
        self.calls += 1;
        let expect = if null_out {
            INVALID
        } else if m.phase == Phase::Fresh {
            STATE
        } else if before.is_some() && (cti < 0 || cti as u64 >= m.window) {
            OUT_OF_RANGE
        } else {
            OK
        };
        if m.phase != Phase::InRun && m.phase != Phase::Fresh && st == OK {
            // Claiming after an upload (same run) is allowed by the contract.
        }
        if expect != OK || st != OK {
            assert!(
                st == expect || (m.phase != Phase::InRun && st == STATE),
                "claim_slot: expected {expect}, got {st} (phase {:?}, cti {cti}): {}",
                m.phase,
                last_error()
            );
            assert_eq!(out.index, -77, "claim_slot wrote *out on failure");
            if let Some(b) = before {
                assert_eq!(
                    b,
                    bytes(m.header, 0, HDR),
                    "claim_slot changed the header on failure"
                );
            }
            assert_error_names("lrt_runtime_maker_claim_slot", "rejected claim");
            self.rejected += 1;
            return;
        }
        let h = m.header;
        let idx = cti as usize;
        assert_eq!(out.index, idx as i32, "claim_slot index");
        assert_eq!(
            rd_i32(h, H_CTI),
            idx as i32 + 1,
            "current_task_index not incremented"
        );
        let d = out.descriptor.cast::<u8>();
        let p = out.payload.cast::<u8>();
        let s = out.slot_state.cast::<u8>();
        assert_eq!(d as u64, h as u64 + m.segs[0] + (idx * DESC) as u64);
        assert_eq!(p as u64, h as u64 + m.segs[1] + (idx * PAY) as u64);
        assert_eq!(s as u64, h as u64 + m.segs[2] + (idx * SS) as u64);
        assert_eq!(rd_u64(s, S_PAYLOAD), p as u64, "slot payload pointer");
        assert_eq!(rd_u64(s, S_TASK), d as u64, "slot task pointer");
        // SAFETY: flags segment of the live mirror.
        let flag = unsafe { *h.add(m.segs[3] as usize + idx) };
        assert_eq!(flag, 0, "completion flag");
        m.slots.truncate(idx);
        if write {
            wr_i32(d, D_KERNEL, content.kernel0);
            wr_u64(p, P_SCALARS, content.scalar0);
            wr_u64(p, P_SCALARS + 15 * 8, content.scalar15);
            wr_i32(s, S_GRAPH_NODE, content.graph_node);
            m.slots.push(content);
        } else {
            m.slots.push(SlotContent {
                kernel0: rd_i32(d, D_KERNEL),
                scalar0: rd_u64(p, P_SCALARS),
                scalar15: rd_u64(p, P_SCALARS + 15 * 8),
                graph_node: rd_i32(s, S_GRAPH_NODE),
            });
        }
        if m.phase != Phase::InRun {
            m.phase = Phase::InRun;
        }
    }

    /// Checks that the device image holds the run that was just uploaded.
    fn check_device(m: &Maker, n: usize, context: &str) {
        let image = m.sim.state().live.keys().next().copied().expect("image");
        m.sim
            .with_alloc(image as *mut c_void, |dev| {
                let base = dev.as_ptr();
                let dev_lo = base as u64;
                let dev_hi = dev_lo + dev.len() as u64;
                assert_eq!(rd_i32(base, H_CTI), n as i32, "{context}: device cti");
                assert_eq!(rd_u64(base, H_WINDOW), m.window, "{context}: device window");
                let ptr = |off: usize| {
                    let p = rd_u64(base, off);
                    assert!(
                        p >= dev_lo && p < dev_hi || n == 0,
                        "{context}: header pointer @{off} = {p:#x} outside the device image"
                    );
                    p.wrapping_sub(dev_lo) as usize
                };
                let (d0, p0, s0, f0) = (
                    ptr(H_DESC_PTR),
                    ptr(H_PAY_PTR),
                    ptr(H_SS_PTR),
                    ptr(H_FLAGS_PTR),
                );
                for (k, c) in m.slots.iter().take(n).enumerate() {
                    let d = d0 + k * DESC;
                    let p = p0 + k * PAY;
                    let s = s0 + k * SS;
                    assert_eq!(
                        rd_i32(base, d + D_KERNEL),
                        c.kernel0,
                        "{context}: slot {k} kernel"
                    );
                    assert_eq!(
                        rd_u64(base, p + P_SCALARS),
                        c.scalar0,
                        "{context}: slot {k} scalar0"
                    );
                    assert_eq!(
                        rd_u64(base, p + P_SCALARS + 120),
                        c.scalar15,
                        "{context}: slot {k} scalar15"
                    );
                    assert_eq!(
                        rd_i32(base, s + S_GRAPH_NODE),
                        c.graph_node,
                        "{context}: slot {k} node"
                    );
                    assert_eq!(
                        rd_u64(base, s + S_PAYLOAD),
                        dev_lo + p as u64,
                        "{context}: slot {k} payload ptr"
                    );
                    assert_eq!(
                        rd_u64(base, s + S_TASK),
                        dev_lo + d as u64,
                        "{context}: slot {k} task ptr"
                    );
                    assert_eq!(dev[f0 + k], 0, "{context}: slot {k} flag");
                }
            })
            .expect("device image is live");
    }

    fn fuzz_upload(&mut self, i: usize) {
        let null_report = self.rng.chance(1, 6);
        let fail_copy = self.rng.chance(1, 10);
        // Corruptions a buggy host may make before uploading.
        let corrupt = self.rng.below(14);
        let bad_cti = match self.rng.below(4) {
            0 => -1 - self.rng.below(1000) as i32,
            1 => i32::MIN,
            _ => 0,
        };
        let garbage_ptr = 0x10_0000 + self.rng.below(1 << 30) * 8;
        let m = self.makers[i].as_mut().unwrap();
        let h = m.header;
        let mut expect_reject = None;
        if !h.is_null() && m.phase != Phase::Fresh {
            let cti = rd_i32(h, H_CTI);
            match corrupt {
                0 => {
                    let v = if bad_cti != 0 {
                        bad_cti
                    } else {
                        m.window as i32 + 1 + (garbage_ptr % 97) as i32
                    };
                    wr_i32(h, H_CTI, v);
                    expect_reject = Some((OUT_OF_RANGE, cti));
                }
                1 if cti > 0 && (cti as usize) <= m.slots.len() => {
                    // A slot pointer outside the mirror: rejected, and the
                    // host (this test) then repairs it.
                    let k = (garbage_ptr % cti as u64) as usize;
                    let off = m.segs[2] as usize + k * SS;
                    let off = off
                        + if garbage_ptr % 16 == 0 {
                            S_PAYLOAD
                        } else {
                            S_TASK
                        };
                    let old = rd_u64(h, off);
                    wr_u64(h, off, garbage_ptr);
                    self.upload_rejected(i, null_report, cti);
                    let m = self.makers[i].as_mut().unwrap();
                    wr_u64(m.header, off, old);
                    return;
                }
                _ => {}
            }
        }
        let m = self.makers[i].as_mut().unwrap();
        if fail_copy {
            m.sim.state().fail_always.push(Op::ToDevice);
        }
        let mut report = lrt_upload_report {
            total_tasks: -5,
            copies: 77,
            bytes: 77,
            zero_ns: 0,
            relocate_ns: 0,
            copy_ns: 0,
            path: leanrt::ffi::staging::lrt_upload_policy::LRT_UPLOAD_FULL,
        };
        let copies_before = m.sim.calls(Op::ToDevice);
        let bytes_before = m.sim.copied_bytes() as u64;
        let hdr_before = (!h.is_null()).then(|| bytes(h, 0, HDR));
        // Poison the device image: whatever the run needs must be shipped now.
        let image = m.sim.state().live.keys().next().copied().unwrap();
        m.sim.with_alloc(image as *mut c_void, |b| b.fill(POISON));
        mark_last_error();
        // SAFETY: live maker; report valid or NULL.
        let st = unsafe {
            ffi::lrt_runtime_maker_upload(m.h, if null_report { null_mut() } else { &mut report })
        } as i32;
        self.calls += 1;
        m.sim.state().fail_always.retain(|&o| o != Op::ToDevice);
        let context = format!(
            "upload(phase {:?}, corrupt {corrupt}, fail_copy {fail_copy})",
            m.phase
        );
        if m.phase == Phase::Fresh {
            assert_eq!(st, STATE, "{context}: {}", last_error());
        } else if let Some((code, cti)) = expect_reject {
            assert_eq!(st, code, "{context}: {}", last_error());
            wr_i32(h, H_CTI, cti);
        } else if fail_copy {
            assert_eq!(st, DEVICE, "{context}: {}", last_error());
        } else {
            assert_eq!(st, OK, "{context}: {}", last_error());
        }
        if st != OK {
            assert_error_names("lrt_runtime_maker_upload", &context);
            assert_eq!(
                report.total_tasks, -5,
                "{context}: report written on failure"
            );
            if st != DEVICE {
                assert_eq!(
                    m.sim.calls(Op::ToDevice),
                    copies_before,
                    "{context}: copied before rejecting"
                );
                if let (Some(b), false) = (hdr_before, h.is_null()) {
                    let mut after = bytes(h, 0, HDR);
                    // the test itself restored the index above
                    after[..4].copy_from_slice(&b[..4]);
                    assert_eq!(b, after, "{context}: header changed by a rejected upload");
                }
                self.rejected += 1;
            } else {
                m.phase = Phase::AfterFailure;
                m.uploaded = false;
            }
            m.sim.assert_clean(&context);
            return;
        }
        let n = rd_i32(h, H_CTI) as usize;
        let shipped = m.sim.copied_bytes() as u64 - bytes_before;
        if !null_report {
            assert_eq!(
                report.total_tasks, n as i32,
                "{context}: report.total_tasks"
            );
            assert_eq!(
                report.bytes, shipped,
                "{context}: report.bytes vs bytes copied"
            );
            assert_eq!(
                report.copies as u64,
                m.sim.calls(Op::ToDevice) - copies_before,
                "{context}: report.copies"
            );
        }
        let copies = m.sim.calls(Op::ToDevice) - copies_before;
        match m.policy {
            0 => assert!(
                shipped >= m.segs[4] - 64,
                "{context}: FULL shipped {shipped}"
            ),
            1 => {
                assert_eq!(shipped, 320 + 4969 * n as u64, "{context}: BOUNDED bytes");
                assert!(copies <= 4, "{context}: BOUNDED copies {copies}");
            }
            _ => {
                // COMPACT gathers into one copy up to 192 KiB (or ships the
                // whole mirror at N = W), else copies the live prefixes
                // straight to their compact offsets. AUTO picks BOUNDED or
                // the gathered COMPACT and says which in the report.
                let compact_end = compact_end(n as u64);
                let gathered = n as u64 == m.window || compact_end <= 192 * 1024;
                // AUTO without a report: either of its two shapes.
                let auto_bounded = m.policy == 3
                    && if null_report {
                        copies != 1 || shipped == 320 + 4969 * n as u64
                    } else {
                        report.path == leanrt::ffi::staging::lrt_upload_policy::LRT_UPLOAD_BOUNDED
                    };
                if auto_bounded {
                    assert_eq!(
                        shipped,
                        320 + 4969 * n as u64,
                        "{context}: AUTO/BOUNDED bytes"
                    );
                } else if m.policy == 3 || gathered {
                    assert_eq!(copies, 1, "{context}: COMPACT copies");
                } else {
                    assert!(copies <= 4, "{context}: COMPACT direct copies {copies}");
                    assert_eq!(
                        shipped,
                        320 + 4969 * n as u64,
                        "{context}: COMPACT direct bytes"
                    );
                }
            }
        }
        m.sim.assert_clean(&context);
        if n <= m.slots.len() {
            Self::check_device(m, n, &context);
        }
        m.phase = Phase::Uploaded;
        m.uploaded = true;
        self.uploads_ok += 1;
    }

    fn upload_rejected(&mut self, i: usize, null_report: bool, cti: i32) {
        let m = self.makers[i].as_mut().unwrap();
        let h = m.header;
        let copies_before = m.sim.calls(Op::ToDevice);
        let n = cti as usize;
        let ss_off = m.segs[2] as usize;
        let mirror_before = (bytes(h, 0, HDR), bytes(h, ss_off, n * SS));
        let mut report = lrt_upload_report {
            total_tasks: -5,
            ..Default::default()
        };
        mark_last_error();
        // SAFETY: live maker; report valid or NULL.
        let st = unsafe {
            ffi::lrt_runtime_maker_upload(m.h, if null_report { null_mut() } else { &mut report })
        } as i32;
        self.calls += 1;
        assert!(
            st == INVALID || st == OUT_OF_RANGE,
            "upload with a slot pointer outside the mirror: got {st}: {}",
            last_error()
        );
        assert_error_names("lrt_runtime_maker_upload", "bad slot pointer");
        assert_eq!(report.total_tasks, -5);
        assert_eq!(
            m.sim.calls(Op::ToDevice),
            copies_before,
            "copied before rejecting a bad pointer"
        );
        assert_eq!(
            mirror_before,
            (bytes(h, 0, HDR), bytes(h, ss_off, n * SS)),
            "a rejected upload changed the mirror (header or slot states)"
        );
        self.rejected += 1;
    }

    fn fuzz_read_status(&mut self, i: usize) {
        let null_out = self.rng.chance(1, 8);
        let fail = self.rng.chance(1, 8);
        let codes = match self.rng.below(4) {
            0 => (self.rng.range_i64(1, 1000) as i32, 0),
            1 => (0, self.rng.range_i64(1, 1000) as i32),
            2 => (
                self.rng.range_i64(1, 9) as i32,
                self.rng.range_i64(1, 9) as i32,
            ),
            _ => (0, 0),
        };
        let m = self.makers[i].as_mut().unwrap();
        let can_poke = m.uploaded;
        if can_poke {
            let image = m.sim.state().live.keys().next().copied().unwrap();
            m.sim.with_alloc(image as *mut c_void, |b| {
                wr_i32(b.as_mut_ptr(), H_ORCH_ERR, codes.0);
                wr_i32(b.as_mut_ptr(), H_SCHED_ERR, codes.1);
            });
        }
        if fail {
            m.sim.state().fail_always.push(Op::FromDevice);
        }
        let mut out = 0x1234_5678;
        mark_last_error();
        // SAFETY: live maker; out valid or NULL.
        let st = unsafe {
            ffi::lrt_runtime_maker_read_status(m.h, if null_out { null_mut() } else { &mut out })
        } as i32;
        self.calls += 1;
        m.sim.state().fail_always.retain(|&o| o != Op::FromDevice);
        let context = format!(
            "read_status(null_out {null_out}, fail {fail}, phase {:?})",
            m.phase
        );
        if null_out {
            assert_eq!(st, INVALID, "{context}");
        } else if !m.uploaded {
            assert_eq!(
                st, STATE,
                "{context}: read_status before a successful upload"
            );
        } else if fail {
            assert_eq!(st, DEVICE, "{context}: {}", last_error());
        } else if can_poke {
            assert_eq!(st, OK, "{context}: {}", last_error());
            let expect = if codes.0 != 0 { -codes.0 } else { -codes.1 };
            assert_eq!(out, expect, "{context}: codes {codes:?}");
        }
        if st != OK {
            assert_eq!(out, 0x1234_5678, "{context}: *out written on failure");
            assert_error_names("lrt_runtime_maker_read_status", &context);
        }
        m.sim.assert_clean(&context);
    }

    fn fuzz_null_handle(&mut self) {
        let mut segs = filled_segments();
        let mut hdr = null_mut();
        let mut slot = lrt_task_slot {
            index: -77,
            descriptor: null_mut(),
            payload: null_mut(),
            slot_state: null_mut(),
        };
        let mut status = 9;
        let mut report = lrt_upload_report::default();
        // SAFETY: NULL handles must be rejected without being dereferenced.
        unsafe {
            let r = [
                ffi::lrt_runtime_maker_begin_run(null_mut(), &mut hdr) as i32,
                ffi::lrt_runtime_maker_claim_slot(null_mut(), &mut slot) as i32,
                ffi::lrt_runtime_maker_upload(null_mut(), &mut report) as i32,
                ffi::lrt_runtime_maker_read_status(null_mut(), &mut status) as i32,
                ffi::lrt_runtime_maker_segments(null(), &mut segs) as i32,
            ];
            assert_eq!(r, [INVALID; 5], "NULL maker handle");
            assert!(ffi::lrt_runtime_maker_device_image(null()).is_null());
            ffi::lrt_runtime_maker_destroy(null_mut());
            ffi::lrt_maker_config_init(null_mut());
        }
        self.calls += 8;
        assert!(hdr.is_null() && slot.index == -77 && status == 9 && segments_untouched(&segs));
        assert_error_names("lrt_maker_config_init", "NULL config");
    }

    fn fuzz_segments_of(&mut self, i: usize) {
        let null_out = self.rng.chance(1, 4);
        let m = self.makers[i].as_ref().unwrap();
        let mut segs = filled_segments();
        // SAFETY: live maker; out valid or NULL.
        let st = unsafe {
            ffi::lrt_runtime_maker_segments(m.h, if null_out { null_mut() } else { &mut segs })
        } as i32;
        self.calls += 1;
        if null_out {
            assert_eq!(st, INVALID);
        } else {
            assert_eq!(st, OK);
            assert_eq!(&seg_array(&segs)[1..5], &m.segs[..4]);
        }
    }

    fn step(&mut self) {
        let action = self.rng.below(100);
        let target = self.random_maker();
        match (action, target) {
            (0..=4, _) => self.fuzz_segment_offsets(),
            (5..=9, _) => self.fuzz_null_handle(),
            (10..=11, _) => {
                let mut cfg = RawCfg {
                    task_window: 99,
                    policy: 99,
                    flags: 99,
                    heap_size: 99,
                    layout: 99,
                    pad: 0,
                    v2: [99; 5],
                };
                // SAFETY: cfg has the layout of lrt_maker_config.
                unsafe { ffi::lrt_maker_config_init((&mut cfg as *mut RawCfg).cast()) };
                self.calls += 1;
                assert_eq!(
                    (cfg.task_window, cfg.policy, cfg.flags, cfg.heap_size),
                    (0, 1, 0, 0),
                    "config_init"
                );
                assert_eq!(
                    (cfg.layout, cfg.v2),
                    (0, [0; 5]),
                    "config_init (v2 members)"
                );
            }
            (12..=19, _) | (_, None) => self.fuzz_create(),
            (20..=23, Some(i)) => self.fuzz_destroy(i),
            (24..=33, Some(i)) => self.fuzz_begin_run(i),
            (34..=64, Some(i)) => self.fuzz_claim(i),
            (65..=82, Some(i)) => self.fuzz_upload(i),
            (83..=92, Some(i)) => self.fuzz_read_status(i),
            (_, Some(i)) => self.fuzz_segments_of(i),
        }
    }
}

#[test]
fn fuzz_staging_c_abi() {
    let seed = fuzz_seed("fuzz_staging_c_abi", 0x5ea9_1e57_0001);
    let iters = fuzz_iters(6000);
    let _dog = Watchdog::new("fuzz_staging_c_abi", Duration::from_secs(60 + iters / 50));
    let threads_before = proc_status().threads;
    let mut f = Fuzz {
        rng: Rng::new(seed),
        calls: 0,
        makers: (0..3).map(|_| None).collect(),
        created: 0,
        uploads_ok: 0,
        rejected: 0,
    };
    for _ in 0..iters {
        f.step();
    }
    for i in 0..f.makers.len() {
        if f.makers[i].is_some() {
            f.fuzz_destroy(i);
        }
    }
    // Repeated create / run / destroy cycles with the built-in host backend
    // and the checked device: resident memory must not grow.
    let fuzz_calls = f.calls;
    let rss = cycles_rss(&mut f);
    let threads_after = wait_threads_at_most(threads_before, Duration::from_secs(2));
    assert!(
        threads_after <= threads_before,
        "threads grew: {threads_before} -> {threads_after}"
    );
    eprintln!(
        "fuzz_staging_c_abi: {fuzz_calls} random C calls in {iters} steps, {} with the cycles ({} makers created, {} uploads ok, {} calls rejected)",
        f.calls, f.created, f.uploads_ok, f.rejected
    );
    eprintln!(
        "fuzz_staging_c_abi: RSS over {CYCLES} create/run/destroy cycles: {} KiB -> {} KiB",
        rss.0, rss.1
    );
    assert!(
        f.uploads_ok > 0 && f.created > 0 && f.rejected > 0,
        "the fuzzer did not reach every state"
    );
}

const CYCLES: usize = 300;

/// Create, run (claim all of a 256-slot window, upload, read_status) and
/// destroy a maker `CYCLES` times, alternating the built-in host backend
/// and the checked device; returns RSS (KiB) after the first tenth and at
/// the end, and fails if it grew by more than 2 MiB.
fn cycles_rss(f: &mut Fuzz) -> (u64, u64) {
    let mut host = HostApi {
        ctx: null_mut(),
        ops: null(),
    };
    // SAFETY: valid out.
    let st = unsafe { leanrt::ffi::device::lrt_host_api_host(&mut host) };
    assert_eq!(st as i32, OK);
    let mut early = 0;
    for c in 0..CYCLES {
        if c == CYCLES / 10 {
            early = proc_status().rss_kib;
        }
        let sim = FakeDevice::limited(SIM_MAX_ALLOC);
        let api = if c % 2 == 0 { host } else { sim.host_api() };
        let cfg = RawCfg {
            task_window: 256,
            policy: (c % 4) as u32,
            flags: if c % 5 == 0 { 2 } else { 0 },
            heap_size: 0,
            layout: 0,
            pad: 0,
            v2: [0; 5],
        };
        let mut m = null_mut();
        let mut hdr = null_mut();
        let mut slot = lrt_task_slot {
            index: 0,
            descriptor: null_mut(),
            payload: null_mut(),
            slot_state: null_mut(),
        };
        let mut status = 1;
        // SAFETY: valid arguments; the sim outlives the maker.
        unsafe {
            assert_eq!(
                ffi::lrt_runtime_maker_create((&cfg as *const RawCfg).cast(), &api, &mut m) as i32,
                OK
            );
            assert_eq!(ffi::lrt_runtime_maker_begin_run(m, &mut hdr) as i32, OK);
            for _ in 0..256 {
                assert_eq!(ffi::lrt_runtime_maker_claim_slot(m, &mut slot) as i32, OK);
            }
            assert_eq!(
                ffi::lrt_runtime_maker_claim_slot(m, &mut slot) as i32,
                OUT_OF_RANGE
            );
            assert_eq!(ffi::lrt_runtime_maker_upload(m, null_mut()) as i32, OK);
            assert_eq!(
                ffi::lrt_runtime_maker_read_status(m, &mut status) as i32,
                OK
            );
            assert_eq!(status, 0);
            ffi::lrt_runtime_maker_destroy(m);
        }
        f.calls += 263;
        assert_eq!(sim.live_count(), 0);
    }
    let late = proc_status().rss_kib;
    // SAFETY: filled by leanrt.
    unsafe { leanrt::ffi::device::lrt_host_api_release(&mut host) };
    assert!(
        late <= early + 2048
            || !emulation::counters_meaningful("fuzz_staging_c_abi", "resident-memory"),
        "RSS grew over {CYCLES} maker cycles: {early} KiB -> {late} KiB"
    );
    (early, late)
}
