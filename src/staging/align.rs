//! Rounding to the 64-byte lines every segment of every generation's image
//! starts on (the device reads the structs aligned, one cache line apart).

/// Every segment starts on a multiple of this many bytes.
pub(crate) const SEGMENT_ALIGN: u64 = 64;

/// `x` rounded up to a multiple of `round` (a power of two).
pub(crate) const fn round_up(x: u64, round: u64) -> u64 {
    (x + round - 1) & !(round - 1)
}

/// `x` rounded up to a segment boundary.
pub(crate) const fn align_up(x: u64) -> u64 {
    round_up(x, SEGMENT_ALIGN)
}
