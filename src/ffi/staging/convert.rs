//! C claim input of the maker's entry points turned into the core's types:
//! claim descriptors (count + pointer -> slice, flags -> booleans) and the
//! arrays they point to. (lrt_maker_config's conversion, both ways, is the
//! core's: `MakerConfig::from_c` / `to_c`.)
use super::*;

/// The C form of the default claim (a root kernel task on one AIV core).
pub(super) fn default_claim_desc() -> lrt_claim_desc {
    let d = ClaimDesc::default();
    lrt_claim_desc {
        active_mask: d.active_mask,
        task_attrs: d.task_attrs,
        logical_block_num: d.logical_block_num,
        flags: 0,
        kernel_id: d.kernel_id,
        fanin_count: 0,
        fanin_local_ids: std::ptr::null(),
        packed_buffer_base: d.packed_buffer_base,
        packed_buffer_end: d.packed_buffer_end,
    }
}

/// `count` elements at `ptr` (NULL allowed only for 0), `what` naming them;
/// `None` for NULL with `reserve_on_null` (the region is reserved, not
/// copied), an error otherwise; the count must be in `[0, max]`.
///
/// # Safety
/// A non-NULL `ptr` is readable for `count` elements for `'a`.
pub(super) unsafe fn c_array<'a, T>(
    ptr: *const T,
    count: i32,
    max: usize,
    what: &str,
    reserve_on_null: bool,
) -> Result<(usize, Option<&'a [T]>)> {
    let n = usize::try_from(count)
        .ok()
        .filter(|&n| n <= max)
        .ok_or_else(|| {
            Error::invalid_argument(format!("{what} count {count} is outside [0, {max}]"))
        })?;
    match (n, ptr.is_null()) {
        (0, _) => Ok((0, Some(&[]))),
        (_, true) if reserve_on_null => Ok((n, None)),
        (_, true) => Err(Error::invalid_argument(format!(
            "`{what}` is NULL with a non-zero count"
        ))),
        // SAFETY: non-NULL and readable for n elements, per the contract.
        (_, false) => Ok((n, Some(unsafe { std::slice::from_raw_parts(ptr, n) }))),
    }
}

/// The core form of a C claim descriptor: flags checked, the producer
/// array as a slice of at most `max_fanins` ids.
///
/// # Safety
/// `d.fanin_local_ids` is readable for `d.fanin_count` entries for `'a`.
pub(super) unsafe fn claim_from_c<'a>(
    d: &lrt_claim_desc,
    max_fanins: usize,
) -> Result<ClaimDesc<'a>> {
    if d.flags & !LRT_CLAIM_COMPLETED != 0 {
        return Err(Error::invalid_argument(format!(
            "unknown claim flags {:#x}",
            d.flags & !LRT_CLAIM_COMPLETED
        )));
    }
    // SAFETY: the caller's contract.
    let (_, fanins) = unsafe {
        c_array(
            d.fanin_local_ids,
            d.fanin_count,
            max_fanins,
            "fanin_local_ids",
            false,
        )
    }?;
    Ok(ClaimDesc {
        active_mask: d.active_mask,
        task_attrs: d.task_attrs,
        logical_block_num: d.logical_block_num,
        kernel_id: d.kernel_id,
        fanins: fanins.unwrap_or(&[]),
        completed: d.flags & LRT_CLAIM_COMPLETED != 0,
        packed_buffer_base: d.packed_buffer_base,
        packed_buffer_end: d.packed_buffer_end,
    })
}
