//! A v2 run the host writes into the mirror itself (as the reference's own
//! orchestrator does) and ships to a device region it names per upload:
//! `v2_set_pool_use` and `v2_upload_frame`, by both of AUTO's routes (the
//! one framed copy and the split route, its pools copied straight from the
//! mirror), against
//! the image the maker's own claims make; a maker without a region of its
//! own; and what each call refuses, with nothing copied.
mod staging_support;

use leanrt::device::{CopyCost, Device};
use leanrt::staging::Maker;
use leanrt::staging::{
    lrt_layout, lrt_upload_policy, lrt_v2_segments, lrt_v2_task_payload, BorrowedImage, ClaimDesc,
    MakerConfig, MakerV2, TensorRecord, V2ClaimDesc, V2Frame, V2PoolUse,
};
use leanrt::ErrorKind;
use staging_support::{FakeDevice, Op};
use std::sync::Arc;

const W: u64 = 64;
const BEFORE: usize = 704;
const AFTER: usize = 300;

fn config(policy: lrt_upload_policy) -> MakerConfig {
    MakerConfig {
        task_window: W,
        layout: lrt_layout::LRT_LAYOUT_V2,
        policy,
        frame_before: BEFORE as u64,
        frame_after: AFTER as u64,
        ..MakerConfig::default()
    }
}

/// A region-less maker (its uploads name their destination).
fn regionless(cfg: &MakerConfig, device: Arc<dyn Device>) -> MakerV2 {
    let none = BorrowedImage {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
    MakerV2::with_image(cfg, device, none).expect("a v2 maker without a region")
}

/// `n` tasks of 2 tensors, 1 scalar and 1 producer (the one before): what
/// they put in the pools is 16 ids per consumer, 2 records and 8 scalars
/// per task (the reference's rounding).
fn claim_chain(m: &mut MakerV2, n: u64) -> V2PoolUse {
    let mut recs: [TensorRecord; 2] = [[0u8; 128]; 2];
    for (k, rec) in recs.iter_mut().enumerate() {
        for (b, x) in rec.iter_mut().enumerate() {
            *x = (k * 37 + b) as u8;
        }
    }
    for i in 0..n {
        let producer = [i as i32 - 1];
        let scalar = [i * 7 + 1];
        let d = V2ClaimDesc {
            task: ClaimDesc {
                fanins: if i == 0 { &[] } else { &producer },
                ..ClaimDesc::default()
            },
            tensor_count: 2,
            tensors: Some(&recs),
            scalar_count: 1,
            scalars: Some(&scalar),
            graph_shell: false,
        };
        m.claim_slot(&d).expect("claim");
    }
    V2PoolUse {
        fanin_ids: 16 * n.saturating_sub(1),
        tensors: 2 * n,
        scalars: 8 * n,
    }
}

/// A run of `n` tasks as the host would write it: claimed by a scratch
/// maker with the same layout, whose mirror is then copied into `m`'s
/// (every offset in it is self-relative, so the bytes mean the same there).
/// Returns the pools' use, the compact image the claims make and `m`'s
/// mirror (its length in `mirror_len`).
fn host_writes(m: &mut MakerV2, n: u64) -> (V2PoolUse, Vec<u8>, *mut u8) {
    let mut scratch = MakerV2::new(
        &config(lrt_upload_policy::LRT_UPLOAD_COMPACT),
        Arc::new(leanrt::device::host::HostDevice),
    )
    .unwrap();
    let from = scratch.begin_run().unwrap().cast::<u8>();
    let used = claim_chain(&mut scratch, n);
    let mut image = vec![0u8; scratch.image_segments().end as usize + 64];
    let off = image.as_ptr().align_offset(64);
    let seg = scratch.compact_into(&mut image[off..]).unwrap();
    let image = image[off..off + seg.end as usize].to_vec();
    let to = m.begin_run().unwrap().cast::<u8>();
    let len = m.mirror_segments().end as usize;
    assert_eq!(len as u64, scratch.mirror_segments().end);
    // SAFETY: both mirrors are `len` bytes long, live, distinct.
    unsafe { std::ptr::copy_nonoverlapping(from, to, len) };
    (used, image, to)
}

fn mirror_len(m: &MakerV2) -> usize {
    m.mirror_segments().end as usize
}

/// A device region with room for the frames and the window's image: its
/// base, and the frame for an image at base + 768 (64-aligned, the frame
/// before below it).
fn region(dev: &FakeDevice, after: &[u8]) -> (*mut u8, usize) {
    let seg = leanrt::staging::v2_ring_segment_offsets(W).unwrap();
    let len = 768 + seg.end as usize + after.len();
    (dev.device().alloc(len).unwrap(), len)
}

fn frame<'a>(base: *mut u8, len: usize, before: &'a [u8], after: &'a [u8]) -> V2Frame<'a> {
    V2Frame {
        image: base.wrapping_add(768),
        room: (len - 768) as u64,
        before,
        after,
    }
}

/// The bytes the split route ships of an image `c`: its per-task part
/// (header and slot segments with their padding) and each pool's used part
/// (the padding after it excluded).
fn split_ranges(c: &lrt_v2_segments, used: V2PoolUse) -> Vec<(usize, usize)> {
    vec![
        (0, c.fanin_pool as usize),
        (
            c.fanin_pool as usize,
            (c.fanin_pool + 4 * used.fanin_ids) as usize,
        ),
        (
            c.tensor_pool as usize,
            (c.tensor_pool + 128 * used.tensors) as usize,
        ),
        (
            c.scalar_pool as usize,
            (c.scalar_pool + 8 * used.scalars) as usize,
        ),
    ]
}

/// The bytes the direct route ships of the image `c` of `n` tasks: the
/// header, each slot segment's live part and each pool's used part (the
/// padding after each excluded): every byte a device reads.
fn live_ranges(c: &lrt_v2_segments, used: V2PoolUse, n: u64) -> Vec<(usize, usize)> {
    let mut ranges = vec![(0, 256)];
    for (at, size) in [
        (c.descriptors, 40),
        (c.payloads, 192),
        (c.slot_states, 64),
        (c.completion_flags, 1),
    ] {
        ranges.push((at as usize, (at + n * size) as usize));
    }
    ranges.extend_from_slice(&split_ranges(c, used)[1..]);
    ranges
}

/// Copies cost nothing: AUTO takes the direct route (everything but the
/// header straight from the mirror), or the split route (the pools
/// straight from the mirror) when the slots are not bound as claims bind
/// them.
const FREE_COPIES: CopyCost = CopyCost {
    latency_ns: 0.0,
    bytes_per_ns: 10.0,
};
/// Copies cost a second each: AUTO ships the one framed copy, whatever
/// the host's gather measures (under emulation a cold gather can take
/// milliseconds).
const DEAR_COPIES: CopyCost = CopyCost {
    latency_ns: 1e9,
    bytes_per_ns: 10.0,
};

#[test]
fn a_host_written_run_ships_the_claimed_image_by_either_route() {
    let before = vec![0x11u8; BEFORE];
    let after = vec![0x22u8; AFTER];
    for (cost, unbound, path, copies) in [
        // The header with the frame before, the four slot segments, three
        // pools, the frame after.
        (FREE_COPIES, false, lrt_upload_policy::LRT_UPLOAD_BOUNDED, 9),
        // The per-task part with the frame before, three pools, the frame
        // after: one slot state not bound as a claim binds it (the image
        // binds it all the same).
        (FREE_COPIES, true, lrt_upload_policy::LRT_UPLOAD_BOUNDED, 5),
        (DEAR_COPIES, false, lrt_upload_policy::LRT_UPLOAD_COMPACT, 1),
    ] {
        let dev = FakeDevice::new();
        let mut m = regionless(
            &config(lrt_upload_policy::LRT_UPLOAD_AUTO),
            dev.device_with_cost(cost),
        );
        assert!(m.device_image().is_null());
        let (base, len) = region(&dev, &after);
        // Three runs of different sizes: the route and the bytes hold for
        // each, and nothing is guessed from one run for the next.
        for n in [50u64, 7, 50] {
            let (used, expected, at) = host_writes(&mut m, n);
            if unbound {
                let state = at.wrapping_add(m.mirror_segments().slot_states as usize + 64 * 3);
                // SAFETY: slot state 3's `payload` field in the live mirror.
                unsafe { *state.add(8).cast::<i32>() = 0 };
            }
            m.set_pool_use(used).unwrap();
            let c = m.image_segments();
            assert_eq!(c.end as usize, expected.len());
            let mirror = mirror_bytes(at, mirror_len(&m));
            dev.reset_copies();
            let r = m.upload_frame(&frame(base, len, &before, &after)).unwrap();
            assert_eq!(
                (r.path, r.copies, r.total_tasks),
                (path, copies, n as i32),
                "n = {n}"
            );
            // The one copy ships the padding after each pool, the split
            // route does not, the direct route no padding at all.
            let ranges = match (path, unbound) {
                (lrt_upload_policy::LRT_UPLOAD_COMPACT, _) => vec![(0, c.end as usize)],
                (_, true) => split_ranges(&c, used),
                (_, false) => live_ranges(&c, used, n),
            };
            let image_bytes: usize = ranges.iter().map(|(a, b)| b - a).sum();
            assert_eq!(r.bytes as usize, BEFORE + image_bytes + AFTER, "n = {n}");
            assert_eq!(dev.copies().len(), copies as usize);
            dev.with_alloc(base.cast(), |bytes| {
                assert_frames(bytes, c.end as usize);
                assert_image(&bytes[768..], &expected, &ranges, &format!("n = {n}"));
            })
            .unwrap();
            assert!(
                mirror_bytes(at, mirror_len(&m)) == mirror,
                "n = {n}: the mirror changed"
            );
            assert_eq!(m.read_status().unwrap(), 0);
        }
        // SAFETY: allocated above through this device, freed once.
        unsafe { dev.device().free(base) };
        drop(m);
        dev.assert_clean("host-written v2 runs");
    }
}

/// The shipped `image` holds the claims' `expected` image on each of
/// `ranges` (the bytes a device reads).
fn assert_image(image: &[u8], expected: &[u8], ranges: &[(usize, usize)], what: &str) {
    for &(a, b) in ranges {
        assert!(
            image[a..b] == expected[a..b],
            "{what}: bytes [{a}, {b}) differ"
        );
    }
}

/// The device region `bytes` (the image at 768, `end` bytes long) holds
/// the frame before (0x11) below the image and the frame after (0x22)
/// right after it.
fn assert_frames(bytes: &[u8], end: usize) {
    assert!(bytes[768 - BEFORE..768].iter().all(|&b| b == 0x11));
    assert!(bytes[768 + end..768 + end + AFTER]
        .iter()
        .all(|&b| b == 0x22));
}

/// The maker's mirror (`len` bytes at `at`, the header v2_begin_run
/// returned), copied.
fn mirror_bytes(at: *mut u8, len: usize) -> Vec<u8> {
    // SAFETY: the maker's live mirror, `len` bytes long; no write is in
    // progress.
    unsafe { std::slice::from_raw_parts(at, len) }.to_vec()
}

#[test]
fn frames_longer_than_their_rooms_travel_on_their_own() {
    let dev = FakeDevice::new();
    let cfg = MakerConfig {
        frame_before: 64,
        frame_after: 0,
        ..config(lrt_upload_policy::LRT_UPLOAD_COMPACT)
    };
    let mut m = regionless(&cfg, dev.device());
    let before = vec![0x33u8; BEFORE];
    let after = vec![0x44u8; AFTER];
    let (base, len) = region(&dev, &after);
    let (used, expected, _) = host_writes(&mut m, 20);
    m.set_pool_use(used).unwrap();
    let r = m.upload_frame(&frame(base, len, &before, &after)).unwrap();
    assert_eq!(
        (r.path, r.copies),
        (lrt_upload_policy::LRT_UPLOAD_COMPACT, 3)
    );
    dev.with_alloc(base.cast(), |bytes| {
        assert!(bytes[768 - BEFORE..768].iter().all(|&b| b == 0x33));
        assert!(bytes[768..768 + expected.len()] == expected[..]);
        let end = 768 + expected.len();
        assert!(bytes[end..end + AFTER].iter().all(|&b| b == 0x44));
    })
    .unwrap();
    // SAFETY: allocated above through this device, freed once.
    unsafe { dev.device().free(base) };
    drop(m);
    dev.assert_clean("frames on their own");
}

#[test]
fn what_the_host_written_calls_refuse_changes_and_copies_nothing() {
    let dev = FakeDevice::new();
    let mut m = regionless(
        &config(lrt_upload_policy::LRT_UPLOAD_AUTO),
        dev.device_with_cost(FREE_COPIES),
    );
    let (before, after) = (vec![1u8; 16], vec![2u8; 16]);
    let (base, len) = region(&dev, &after);

    // Before a run.
    assert_eq!(kind(m.set_pool_use(V2PoolUse::default())), ErrorKind::State);
    assert_eq!(
        kind(m.upload_frame(&frame(base, len, &before, &after))),
        ErrorKind::State
    );

    let (used, _, at) = host_writes(&mut m, 10);
    let len_m = mirror_len(&m);
    // No region of its own.
    assert_eq!(kind(m.upload(&before, &after)), ErrorKind::State);
    // A pool past its capacity.
    let caps = m.pool_capacities();
    let over = V2PoolUse {
        tensors: caps.tensors + 1,
        ..used
    };
    assert_eq!(kind(m.set_pool_use(over)), ErrorKind::OutOfRange);
    m.set_pool_use(used).unwrap();
    // No claims once the host said it wrote the run.
    assert_eq!(kind(claim(&mut m)), ErrorKind::State);
    // A bad destination: NULL, unaligned, a frame before below address 0,
    // too little room.
    let mut f = frame(base, len, &before, &after);
    f.image = std::ptr::null_mut();
    assert_eq!(kind(m.upload_frame(&f)), ErrorKind::InvalidArgument);
    let mut f = frame(base, len, &before, &after);
    f.image = f.image.wrapping_add(8);
    assert_eq!(kind(m.upload_frame(&f)), ErrorKind::InvalidArgument);
    let mut f = frame(base, len, &before, &after);
    f.image = 64 as *mut u8;
    f.before = &[0u8; 128];
    assert_eq!(kind(m.upload_frame(&f)), ErrorKind::InvalidArgument);
    let mut f = frame(base, len, &before, &after);
    f.room = m.image_segments().end + after.len() as u64 - 1;
    assert_eq!(kind(m.upload_frame(&f)), ErrorKind::OutOfRange);
    // A region outside its pool (the host broke a payload): refused by the
    // split route's check before its first copy, the mirror unchanged.
    let seg = m.mirror_segments();
    let mirror_before = mirror_bytes(at, len_m);
    let p = at
        .wrapping_add(seg.payloads as usize + 192 * 3)
        .cast::<lrt_v2_task_payload>();
    // SAFETY: payload 3 of the live run in the maker's mirror.
    let saved = unsafe { (*p).tensors };
    // SAFETY: as above.
    unsafe { (*p).tensors = saved + 8 };
    let broken = mirror_bytes(at, len_m);
    dev.reset_copies();
    assert_eq!(
        kind(m.upload_frame(&frame(base, len, &before, &after))),
        ErrorKind::InvalidArgument
    );
    assert!(
        mirror_bytes(at, len_m) == broken,
        "a refused upload changed the mirror"
    );
    assert!(
        dev.copies().is_empty(),
        "a refused upload copied {:?}",
        dev.copies()
    );
    // Mended, the same run ships (the refusals left it open).
    // SAFETY: as above.
    unsafe { (*p).tensors = saved };
    assert!(mirror_bytes(at, len_m) == mirror_before);
    let r = m.upload_frame(&frame(base, len, &before, &after)).unwrap();
    assert_eq!(
        (r.path, r.copies),
        (lrt_upload_policy::LRT_UPLOAD_BOUNDED, 9)
    );

    // A copy that fails after the slots left the mirror (their offsets
    // moved there for the image): `Device`, the mirror as the host wrote it.
    for failing in [2, 3, 4, 9] {
        let (used, _, at) = host_writes(&mut m, 10);
        m.set_pool_use(used).unwrap();
        let written = mirror_bytes(at, len_m);
        dev.fail_at(Op::ToDevice, dev.calls(Op::ToDevice) + failing);
        assert_eq!(
            kind(m.upload_frame(&frame(base, len, &before, &after))),
            ErrorKind::Device,
            "copy {failing} failing"
        );
        assert!(
            mirror_bytes(at, len_m) == written,
            "copy {failing} failing: the mirror changed"
        );
    }

    // Claims first, then set_pool_use: refused.
    m.begin_run().unwrap();
    claim(&mut m).unwrap();
    assert_eq!(kind(m.set_pool_use(used)), ErrorKind::State);
    // SAFETY: allocated above through this device, freed once.
    unsafe { dev.device().free(base) };
    drop(m);
    dev.assert_clean("refusals");
}

fn kind<T: std::fmt::Debug>(r: leanrt::Result<T>) -> ErrorKind {
    r.unwrap_err().kind()
}

fn claim(m: &mut MakerV2) -> leanrt::Result<()> {
    let d = V2ClaimDesc {
        task: ClaimDesc::default(),
        tensor_count: 0,
        tensors: None,
        scalar_count: 0,
        scalars: None,
        graph_shell: false,
    };
    m.claim_slot(&d).map(|_| ())
}

/// Writes `n` tasks into `m`'s mirror as the reference's orchestrator does
/// (each task: one tensor record, one scalar, the task before as its
/// producer; regions at the pools' cursors with the reference's rounding),
/// and says what the pools hold. A `dirty` host fills every byte it may
/// (whole records, fanin and scalar regions, the payload's lines 1 and 2,
/// the slot state, the descriptor's padding) with junk before writing the
/// fields; a clean one writes only the fields, the first 48 bytes of each
/// record and the ids and scalars the counts cover (as the reference's
/// orchestrator leaves a fanin tail, the strides past `ndims`, the unused
/// predicate bytes and the dump metadata).
fn host_writes_tasks(m: &mut MakerV2, n: u64, dirty: bool) {
    let s = m.mirror_segments();
    let base = m.begin_run().unwrap().cast::<u8>();
    let at = |off: u64| base.wrapping_add(off as usize);
    let rel = |field: *mut u8, target: *mut u8| (target as isize - field as isize) as i32;
    for i in 0..n {
        let (d, p, st) = (
            at(s.descriptors + 40 * i),
            at(s.payloads + 192 * i),
            at(s.slot_states + 64 * i),
        );
        let (t, sc, f) = (
            at(s.tensor_pool + 128 * i),
            at(s.scalar_pool + 64 * i),
            at(s.fanin_pool + 64 * i.saturating_sub(1)),
        );
        // SAFETY: slot i < W and its regions lie inside the mirror's
        // segments and pools (the reference's capacities); plain bytes.
        unsafe {
            if dirty {
                for (ptr, len, junk) in [
                    (d, 40, 0xD1),
                    (p, 192, 0x99),
                    (st, 64, 0xAB),
                    (t, 128, 0xEE),
                ] {
                    std::ptr::write_bytes(ptr, junk, len);
                }
                std::ptr::write_bytes(sc, 0x77, 64);
                if i > 0 {
                    std::ptr::write_bytes(f, 0x55, 64);
                }
            }
            let dd = &mut *d.cast::<leanrt::staging::lrt_task_descriptor>();
            dd.task_id = i;
            dd.kernel_id = [i as i32, -1, -1];
            dd.packed_buffer_base = std::ptr::null_mut();
            dd.packed_buffer_end = std::ptr::null_mut();
            std::ptr::write_bytes(t, (i as u8) | 1, 48);
            *sc.cast::<u64>() = 1000 + i;
            if i > 0 {
                *f.cast::<i32>() = i as i32 - 1;
            }
            let pp = &mut *p.cast::<lrt_v2_task_payload>();
            pp.tensor_count = 1;
            pp.scalar_count = 1;
            pp.fanin_count = i32::from(i > 0);
            pp.tensors = rel(p.wrapping_add(12), t);
            pp.scalars = rel(p.wrapping_add(16), sc);
            pp.fanin = rel(p.wrapping_add(20), f);
            pp.staged_core_mask = [0; 2];
            pp.dispatch_fanin = 0;
            pp.early_dispatch_state = 0;
            pp.predicate_addr = 0;
            pp.predicate_target = 0;
            let ss = &mut *st.cast::<leanrt::staging::lrt_v2_task_slot_state>();
            ss.last_consumer_local_id = (i + 1).min(n - 1) as i32;
            ss.task_state = 0;
            ss.payload = rel(st.wrapping_add(8), p);
            ss.task = rel(st.wrapping_add(12), d);
            ss.active_mask = 2;
            ss.task_kind = 0;
            ss.total_required_subtasks = 1;
            ss.logical_block_num = 1;
            *at(s.completion_flags + i) = 0;
        }
    }
    // SAFETY: the mirror's header.
    unsafe { (*base.cast::<leanrt::staging::lrt_v2_sm_header>()).current_task_index = n as i32 };
    m.set_pool_use(V2PoolUse {
        fanin_ids: 16 * n.saturating_sub(1),
        tensors: n,
        scalars: 8 * n,
    })
    .unwrap();
}

/// What a maker ships for its run: the bytes of the image a device reads
/// (the whole image for the one copy, the split ranges for the split route).
fn shipped(m: &mut MakerV2, dev: &FakeDevice, used: V2PoolUse) -> (lrt_upload_policy, Vec<u8>) {
    let (base, len) = region(dev, &[]);
    let c = m.image_segments();
    let r = m.upload_frame(&frame(base, len, &[], &[])).unwrap();
    let bytes = dev
        .with_alloc(base.cast(), |bytes| {
            let image = &bytes[768..768 + c.end as usize];
            match r.path {
                lrt_upload_policy::LRT_UPLOAD_COMPACT => image.to_vec(),
                _ => live_ranges(&c, used, r.total_tasks as u64)
                    .iter()
                    .flat_map(|&(a, b)| image[a..b].to_vec())
                    .collect(),
            }
        })
        .unwrap();
    // SAFETY: allocated above through this device, freed once.
    unsafe { dev.device().free(base) };
    (r.path, bytes)
}

/// The kept mirror's contract (docs/STAGING.md): two makers that write the
/// same run after different histories ship the same bytes, by either route
/// and for a host-written and a claimed run: one maker first runs a larger,
/// dirty host-written run and a claimed one, the other nothing.
#[test]
fn the_shipped_image_does_not_depend_on_history() {
    for (cost, path) in [
        (FREE_COPIES, lrt_upload_policy::LRT_UPLOAD_BOUNDED),
        (DEAR_COPIES, lrt_upload_policy::LRT_UPLOAD_COMPACT),
    ] {
        for claimed in [false, true] {
            let dev = FakeDevice::new();
            let mut images = Vec::new();
            for history in [true, false] {
                let mut m = regionless(
                    &config(lrt_upload_policy::LRT_UPLOAD_AUTO),
                    dev.device_with_cost(cost),
                );
                if history {
                    host_writes_tasks(&mut m, 50, true);
                    shipped(
                        &mut m,
                        &dev,
                        V2PoolUse {
                            fanin_ids: 16 * 49,
                            tensors: 50,
                            scalars: 400,
                        },
                    );
                    m.begin_run().unwrap();
                    let used = claim_chain(&mut m, 30);
                    shipped(&mut m, &dev, used);
                    host_writes_tasks(&mut m, 40, true);
                    shipped(
                        &mut m,
                        &dev,
                        V2PoolUse {
                            fanin_ids: 16 * 39,
                            tensors: 40,
                            scalars: 320,
                        },
                    );
                }
                let n = 7;
                let used = if claimed {
                    m.begin_run().unwrap();
                    claim_chain(&mut m, n)
                } else {
                    host_writes_tasks(&mut m, n, false);
                    V2PoolUse {
                        fanin_ids: 16 * (n - 1),
                        tensors: n,
                        scalars: 8 * n,
                    }
                };
                let (p, bytes) = shipped(&mut m, &dev, used);
                if !claimed {
                    assert_eq!(p, path);
                }
                images.push((p, bytes));
                drop(m);
            }
            assert_eq!(images[0].0, images[1].0);
            assert!(
                images[0].1 == images[1].1,
                "{path:?}, claimed {claimed}: the shipped image depends on the maker's history"
            );
            dev.assert_clean("history");
        }
    }
}

/// Seeded random host-written runs (random N, each run's slots and regions
/// as claims make them, some broken, before or after `set_pool_use`: a
/// region moved off its pool, a slot bound to another payload or
/// descriptor), shipped under copies that cost
/// nothing, a microsecond and a millisecond (every route AUTO has): a run
/// with a bad region is refused with nothing copied; any other ships, on
/// every byte a device reads, the image its claims make (a slot bound
/// elsewhere is bound to its own payload and descriptor there); the mirror
/// holds the same bytes after every upload.
#[test]
fn random_host_written_runs_ship_their_image_by_every_route() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut below = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mid = CopyCost {
        latency_ns: 1000.0,
        bytes_per_ns: 10.0,
    };
    let mut routes = std::collections::BTreeSet::new();
    for cost in [FREE_COPIES, mid, DEAR_COPIES] {
        let dev = FakeDevice::new();
        let mut m = regionless(
            &config(lrt_upload_policy::LRT_UPLOAD_AUTO),
            dev.device_with_cost(cost),
        );
        let (base, len) = region(&dev, &[]);
        for _ in 0..40 {
            let n = below(W + 1);
            let (used, expected, at) = host_writes(&mut m, n);
            let s = m.mirror_segments();
            // 0: as claimed; 1: a region off its pool; 2, 3: a slot's
            // payload / task bound elsewhere.
            let broken = if n == 0 { 0 } else { below(4) };
            let i = if n == 0 { 0 } else { below(n) } as usize;
            // A tensor region of a task without tensors stays unbound.
            let region_bound = i as u64 * 2 < used.tensors;
            // Half the runs break after set_pool_use, which plans the
            // route (and checks the direct route's slots): the upload
            // must check again.
            let late = below(2) == 0;
            if late {
                m.set_pool_use(used).unwrap();
            }
            // SAFETY: fields of slot i < n of the live mirror.
            unsafe {
                match broken {
                    1 => *at.add(s.payloads as usize + 192 * i + 12).cast::<i32>() += 8,
                    2 => *at.add(s.slot_states as usize + 64 * i + 8).cast::<i32>() += 192,
                    3 => *at.add(s.slot_states as usize + 64 * i + 12).cast::<i32>() -= 40,
                    _ => {}
                }
            }
            if !late {
                m.set_pool_use(used).unwrap();
            }
            let c = m.image_segments();
            let mirror = mirror_bytes(at, mirror_len(&m));
            dev.reset_copies();
            let r = m.upload_frame(&frame(base, len, &[], &[]));
            assert!(
                mirror_bytes(at, mirror_len(&m)) == mirror,
                "n = {n}, broken {broken}: the mirror changed"
            );
            if broken == 1 && region_bound {
                assert_eq!(kind(r), ErrorKind::InvalidArgument, "n = {n}");
                assert!(dev.copies().is_empty(), "a refused upload copied");
                m.begin_run().unwrap();
                continue;
            }
            let r = r.unwrap();
            routes.insert((r.path as i32, r.copies));
            dev.with_alloc(base.cast(), |bytes| {
                let what = format!("n = {n}, broken {broken}");
                assert_image(&bytes[768..], &expected, &live_ranges(&c, used, n), &what);
            })
            .unwrap();
        }
        // SAFETY: allocated above through this device, freed once.
        unsafe { dev.device().free(base) };
        drop(m);
        dev.assert_clean("random host-written runs");
    }
    // Every route ran: the one copy, the split route (5 copies at most),
    // the direct route (more).
    let paths: std::collections::BTreeSet<_> = routes.iter().map(|r| r.0).collect();
    assert_eq!(paths.len(), 2, "routes seen: {routes:?}");
    assert!(
        routes.iter().any(|r| r.1 > 5),
        "no direct route: {routes:?}"
    );
    assert!(
        routes
            .iter()
            .any(|r| r.0 == lrt_upload_policy::LRT_UPLOAD_BOUNDED as i32 && r.1 <= 5),
        "no split route: {routes:?}"
    );
}

/// `set_pool_use` plans the route for the frames of the last upload:
/// runs of two sizes whose uploads alternate between frames and none
/// (so that every other plan was made for other frames and other pools)
/// each ship the direct route with the copies their own frames make, the
/// claims' image on every byte a device reads, the frames around it, and
/// leave the mirror as it was.
#[test]
fn uploads_with_other_frames_than_planned_for_ship_their_own() {
    let before = vec![0x11u8; BEFORE];
    let after = vec![0x22u8; AFTER];
    let dev = FakeDevice::new();
    let mut m = regionless(
        &config(lrt_upload_policy::LRT_UPLOAD_AUTO),
        dev.device_with_cost(FREE_COPIES),
    );
    let (base, len) = region(&dev, &after);
    // (frames of this upload, copies): the direct route, with the frames
    // each their own copy or not there at all.
    for (with_frames, copies) in [(false, 8), (true, 9), (false, 8), (false, 8), (true, 9)] {
        let n = if copies == 8 { 20 } else { 33 };
        let (used, expected, at) = host_writes(&mut m, n);
        m.set_pool_use(used).unwrap();
        let c = m.image_segments();
        let mirror = mirror_bytes(at, mirror_len(&m));
        let (b, a): (&[u8], &[u8]) = if with_frames {
            (&before, &after)
        } else {
            (&[], &[])
        };
        let r = m.upload_frame(&frame(base, len, b, a)).unwrap();
        assert_eq!(
            (r.path, r.copies),
            (lrt_upload_policy::LRT_UPLOAD_BOUNDED, copies),
            "n = {n}, frames {with_frames}"
        );
        dev.with_alloc(base.cast(), |bytes| {
            let ranges = live_ranges(&c, used, n);
            assert_image(&bytes[768..], &expected, &ranges, &format!("n = {n}"));
            if with_frames {
                assert_frames(bytes, c.end as usize);
            }
        })
        .unwrap();
        assert!(
            mirror_bytes(at, mirror_len(&m)) == mirror,
            "n = {n}: the mirror changed"
        );
    }
    // SAFETY: allocated above through this device, freed once.
    unsafe { dev.device().free(base) };
    drop(m);
    dev.assert_clean("planned routes");
}
