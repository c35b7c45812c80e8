use super::super::super::align::align_up;
use super::super::layout::*;
use super::*;

/// The mirror's segment offsets for W = 4 ... 2^18, printed by a
/// throwaway program compiled against the reference's
/// `pto_shared_memory.h` at 6ebaf7715 (`ring_segment_offsets(W)`):
/// descriptors, payloads, slot states, flags, fanin, tensors, scalars,
/// end.
const MIRROR_GOLDENS: [(u64, [u64; 8]); 17] = [
    (4, [256, 448, 1216, 1472, 1536, 3584, 19968, 20480]),
    (8, [256, 576, 2112, 2624, 2688, 6784, 39552, 40576]),
    (16, [256, 896, 3968, 4992, 5056, 13248, 78784, 80832]),
    (32, [256, 1536, 7680, 9728, 9792, 26176, 157248, 161344]),
    (64, [256, 2816, 15104, 19200, 19264, 52032, 314176, 322368]),
    (
        128,
        [256, 5376, 29952, 38144, 38272, 103808, 628096, 644480],
    ),
    (
        256,
        [256, 10496, 59648, 76032, 76288, 207360, 1255936, 1288704],
    ),
    (
        512,
        [256, 20736, 119040, 151808, 152320, 414464, 2511616, 2577152],
    ),
    (
        1024,
        [256, 41216, 237824, 303360, 304384, 828672, 5022976, 5154048],
    ),
    (
        2048,
        [
            256, 82176, 475392, 606464, 608512, 1657088, 10045696, 10307840,
        ],
    ),
    (
        4096,
        [
            256, 164096, 950528, 1212672, 1216768, 3313920, 20091136, 20615424,
        ],
    ),
    (
        8192,
        [
            256, 327936, 1900800, 2425088, 2433280, 6627584, 40182016, 41230592,
        ],
    ),
    (
        16384,
        [
            256, 655616, 3801344, 4849920, 4866304, 13254912, 80363776, 82460928,
        ],
    ),
    (
        32768,
        [
            256, 1310976, 7602432, 9699584, 9732352, 26509568, 160727296, 164921600,
        ],
    ),
    (
        65536,
        [
            256, 2621696, 15204608, 19398912, 19464448, 53018880, 321454336, 329842944,
        ],
    ),
    (
        131072,
        [
            256, 5243136, 30408960, 38797568, 38928640, 106037504, 642908416, 659685632,
        ],
    ),
    (
        262144,
        [
            256, 10486016, 60817664, 77594880, 77857024, 212074752, 1285816576, 1319371008,
        ],
    ),
];

/// Compact images `(n, F, T, S)` from the same program
/// (`ring_segment_offsets(image_extents({n, F, T, S}))`).
const IMAGE_GOLDENS: [([u64; 4], [u64; 8]); 10] = [
    ([0, 0, 0, 0], [256, 320, 512, 576, 640, 640, 640, 640]),
    ([1, 0, 0, 0], [256, 320, 512, 576, 640, 640, 640, 640]),
    ([1, 16, 2, 8], [256, 320, 512, 576, 640, 704, 960, 1024]),
    (
        [5, 80, 10, 15],
        [256, 512, 1472, 1792, 1856, 2176, 3456, 3584],
    ),
    (
        [64, 1024, 128, 512],
        [256, 2816, 15104, 19200, 19264, 23360, 39744, 43840],
    ),
    (
        [1024, 16384, 2048, 8192],
        [256, 41216, 237824, 303360, 304384, 369920, 632064, 697600],
    ),
    (
        [16384, 262144, 32768, 131072],
        [
            256, 655616, 3801344, 4849920, 4866304, 5914880, 10109184, 11157760,
        ],
    ),
    (
        [131072, 2097152, 262144, 1048576],
        [
            256, 5243136, 30408960, 38797568, 38928640, 47317248, 80871680, 89260288,
        ],
    ),
    ([3, 0, 0, 0], [256, 384, 960, 1152, 1216, 1216, 1216, 1216]),
    (
        [7, 16, 1, 8],
        [256, 576, 1920, 2368, 2432, 2496, 2624, 2688],
    ),
];

fn tuple(s: &lrt_v2_segments) -> [u64; 8] {
    [
        s.descriptors,
        s.payloads,
        s.slot_states,
        s.completion_flags,
        s.fanin_pool,
        s.tensor_pool,
        s.scalar_pool,
        s.end,
    ]
}

#[test]
fn mirror_goldens_from_the_reference() {
    for (w, want) in MIRROR_GOLDENS {
        let s = v2_ring_segment_offsets(w).unwrap();
        assert_eq!(s.header, 0);
        assert_eq!(tuple(&s), want, "W = {w}");
    }
}

#[test]
fn image_goldens_from_the_reference() {
    for ([n, f, t, s], want) in IMAGE_GOLDENS {
        let seg = v2_image_segments(n, f, t, s).unwrap();
        assert_eq!(tuple(&seg), want, "n = {n}, F = {f}, T = {t}, S = {s}");
    }
}

#[test]
fn compact_image_formula() {
    // end = 256 + up64(40P) + 192P + 64P + up64(P) + 4F + 128T + 8S for
    // pools in whole cache lines (the reference's rounding gives them).
    for n in [0u64, 1, 2, 3, 17, 64, 1000, 1024, 16384, 131072, 262144] {
        let p = n.max(1);
        let (f, t, s) = (16 * n, 2 * n, 8 * n);
        let want =
            256 + align_up(40 * p) + 192 * p + 64 * p + align_up(p) + 4 * f + 128 * t + 8 * s;
        assert_eq!(v2_image_segments(n, f, t, s).unwrap().end, want, "n = {n}");
    }
}

#[test]
fn windows_beyond_offset_reach_are_refused() {
    for w in [
        0,
        1,
        2,
        3,
        5,
        12,
        16385,
        1 << 19,
        1 << 20,
        1 << 31,
        1 << 62,
        u64::MAX,
    ] {
        assert!(v2_ring_segment_offsets(w).is_err(), "{w}");
    }
    let e = v2_ring_segment_offsets(1 << 19).unwrap_err();
    assert!(e.to_string().contains("262144"), "{e}");
    assert!(v2_ring_segment_offsets(LRT_MAX_TASK_WINDOW).unwrap().end <= i32::MAX as u64);
}

#[test]
fn image_arguments_are_checked() {
    assert!(v2_image_segments(LRT_MAX_TASK_WINDOW + 1, 0, 0, 0).is_err());
    assert!(v2_image_segments(0, 16, 0, 0).is_err());
    assert!(v2_image_segments(1, 129, 0, 0).is_err());
    assert!(v2_image_segments(1, 0, 33, 0).is_err());
    assert!(v2_image_segments(1, 0, 0, 17).is_err());
    let max = v2_image_segments(
        LRT_MAX_TASK_WINDOW,
        LRT_MAX_TASK_WINDOW * 128,
        LRT_MAX_TASK_WINDOW * 32,
        LRT_MAX_TASK_WINDOW * 16,
    )
    .unwrap();
    assert_eq!(max, v2_ring_segment_offsets(LRT_MAX_TASK_WINDOW).unwrap());
}

#[test]
fn self_relative_offsets() {
    // Unbound reads back as none; zeroed memory is unbound.
    assert_eq!(rel_encode(0x1000, 0), 0);
    assert_eq!(rel_decode(0x1000, 0), None);
    // Both signs.
    assert_eq!(rel_encode(0x1000, 0x1400), 0x400);
    assert_eq!(rel_encode(0x1400, 0x1000), -0x400);
    assert_eq!(rel_decode(0x1400, -0x400), Some(0x1000));
    assert_eq!(rel_decode(0x1000, 0x400), Some(0x1400));
    // The int32 range rule: the extremes fit, one past is unbound.
    let f = 0x1_0000_0000usize;
    assert_eq!(rel_encode(f, f + i32::MAX as usize), i32::MAX);
    assert_eq!(rel_encode(f, f - (1usize << 31)), i32::MIN);
    assert_eq!(rel_encode(f, f + (1usize << 31)), 0);
    assert_eq!(rel_encode(f, f - (1usize << 31) - 1), 0);
    // An offset survives a block copy: the same delta names the same
    // relative position at another base.
    let d = rel_encode(0x2000 + 12, 0x2000 + 4096);
    assert_eq!(rel_decode(0x9000 + 12, d), Some(0x9000 + 4096));
}
