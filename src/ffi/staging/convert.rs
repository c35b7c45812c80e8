//! C input of the maker's entry points turned into the core's types: the
//! flags, policy and layout numbers, lrt_maker_config, claim descriptors.
use super::*;

/// Flags lrt_maker_config.flags may hold.
pub(super) const KNOWN_FLAGS: u32 = LRT_MAKER_PIN_MIRROR | LRT_MAKER_FRESH_MIRROR;

/// The policy for a raw C value (a C caller may store any integer in the
/// enum-typed field); unknown values are rejected.
pub(super) fn policy_from_raw(raw: u32) -> Result<lrt_upload_policy> {
    use lrt_upload_policy::*;
    [
        LRT_UPLOAD_FULL,
        LRT_UPLOAD_BOUNDED,
        LRT_UPLOAD_COMPACT,
        LRT_UPLOAD_AUTO,
    ]
    .into_iter()
    .find(|&p| p as u32 == raw)
    .ok_or_else(|| {
        Error::invalid_argument(format!(
            "unknown upload policy {raw} (expected 0, 1, 2 or 3)"
        ))
    })
}

/// The layout for a raw C value; unknown values are rejected.
pub(super) fn layout_from_raw(raw: u32) -> Result<lrt_layout> {
    use lrt_layout::*;
    [LRT_LAYOUT_V1, LRT_LAYOUT_V2]
        .into_iter()
        .find(|&l| l as u32 == raw)
        .ok_or_else(|| Error::invalid_argument(format!("unknown layout {raw} (expected 0 or 1)")))
}

/// The core config for a C config (non-NULL, readable); the enum fields are
/// read as their raw integers so that any value a C caller stored is
/// defined.
///
/// # Safety
/// `cfg` points to a readable lrt_maker_config.
pub(super) unsafe fn config_from_c(cfg: *const lrt_maker_config) -> Result<MakerConfig> {
    // SAFETY: readable per the contract; every field is read as a plain
    // integer (the enums as their raw values).
    let (raw_policy, raw_layout, flags, c) = unsafe {
        (
            addr_of!((*cfg).policy).cast::<u32>().read(),
            addr_of!((*cfg).layout).cast::<u32>().read(),
            addr_of!((*cfg).flags).read(),
            [
                addr_of!((*cfg).task_window).read(),
                addr_of!((*cfg).heap_size).read(),
                addr_of!((*cfg).frame_before).read(),
                addr_of!((*cfg).frame_after).read(),
                addr_of!((*cfg).v2_pool_fanin_ids).read(),
                addr_of!((*cfg).v2_pool_tensors).read(),
                addr_of!((*cfg).v2_pool_scalars).read(),
            ],
        )
    };
    if flags & !KNOWN_FLAGS != 0 {
        return Err(Error::invalid_argument(format!(
            "unknown maker flags {:#x}",
            flags & !KNOWN_FLAGS
        )));
    }
    Ok(MakerConfig {
        task_window: c[0],
        policy: policy_from_raw(raw_policy)?,
        pin_mirror: flags & LRT_MAKER_PIN_MIRROR != 0,
        fresh_mirror: flags & LRT_MAKER_FRESH_MIRROR != 0,
        heap_size: c[1],
        layout: layout_from_raw(raw_layout)?,
        frame_before: c[2],
        frame_after: c[3],
        v2_pools: staging::V2PoolUse {
            fanin_ids: c[4],
            tensors: c[5],
            scalars: c[6],
        },
    })
}

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
/// array as a slice.
///
/// # Safety
/// `d.fanin_local_ids` is readable for `d.fanin_count` entries for `'a`.
pub(super) unsafe fn claim_from_c<'a>(d: &lrt_claim_desc) -> Result<ClaimDesc<'a>> {
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
            staging::LRT_MAX_FANIN,
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
