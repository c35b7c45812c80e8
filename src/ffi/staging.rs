//! `lrt_sm_*`, `lrt_maker_config_init`, `lrt_runtime_maker_*`: the runtime
//! maker. Core: `crate::staging`.
use std::ffi::c_void;
use std::ptr::addr_of;

use super::boundary::{arg_mut, arg_ref, drop_handle, into_handle, OutPtr};
use super::status::lrt_status;
use crate::device::HostApi;
use crate::staging::{
    self, MakerConfig, RuntimeMaker, SmHeader, SmSegments, TaskSlot, UploadPolicy, UploadReport,
};

/// How `lrt_runtime_maker_upload` ships the image.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum lrt_upload_policy {
    /// The old path: zero the whole mirror, ship the whole image (baseline).
    LRT_UPLOAD_FULL = 0,
    /// Init-on-write; ship header + descriptors[0,N), payloads[0,N),
    /// slot_states[0,N), flags[0,N): 320 + 4969*N bytes in at most 4 copies.
    LRT_UPLOAD_BOUNDED = 1,
    /// Gather the live prefixes into one image pitched to N; one copy.
    LRT_UPLOAD_COMPACT = 2,
}

// LRT_MAKER_PIN_MIRROR / LRT_MAKER_FRESH_MIRROR and LRT_MAX_FANIN /
// LRT_MAX_TENSORS / LRT_MAX_SCALARS are the core's `staging::MAKER_*` and
// `staging::MAX_*` constants, renamed for C in cbindgen.toml.

/// Maker configuration; fill with `lrt_maker_config_init` first.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_maker_config {
    /// Slots in the ring; 0: env PTO2_RING_TASK_WINDOW, else 16384.
    pub task_window: u64,
    /// Default `LRT_UPLOAD_BOUNDED`.
    pub policy: lrt_upload_policy,
    /// `LRT_MAKER_PIN_MIRROR | LRT_MAKER_FRESH_MIRROR`.
    pub flags: u32,
}

/// Writes the segment offsets of the image for window `task_window` to
/// `*out`. `LRT_ERR_INVALID_ARGUMENT` unless the window is a power of two in
/// [4, INT32_MAX] whose image fits in INT32_MAX bytes.
///
/// # Safety
/// `out` is NULL or valid for a write of `lrt_sm_segments`.
#[no_mangle]
pub unsafe extern "C" fn lrt_sm_ring_segment_offsets(
    task_window: u64,
    out: *mut SmSegments,
) -> lrt_status {
    ffi_status!("lrt_sm_ring_segment_offsets", {
        let out = OutPtr::new(out, "out")?;
        let segments = staging::segment_offsets(task_window)?;
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(segments) };
        Ok(())
    })
}

/// Sets `*cfg` to the defaults: window 0 (env, else 16384), BOUNDED, no
/// flags. NULL is ignored (and recorded for `lrt_last_error`).
///
/// # Safety
/// `cfg` is NULL or valid for a write of `lrt_maker_config`.
#[no_mangle]
pub unsafe extern "C" fn lrt_maker_config_init(cfg: *mut lrt_maker_config) {
    ffi_value!("lrt_maker_config_init", (), {
        let out = OutPtr::new(cfg, "cfg")?;
        let d = MakerConfig::default();
        let policy = match d.policy {
            UploadPolicy::Full => lrt_upload_policy::LRT_UPLOAD_FULL,
            UploadPolicy::Bounded => lrt_upload_policy::LRT_UPLOAD_BOUNDED,
            UploadPolicy::Compact => lrt_upload_policy::LRT_UPLOAD_COMPACT,
        };
        let value = lrt_maker_config {
            task_window: d.task_window,
            policy,
            flags: d.flags,
        };
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Creates a maker: resolves the window (config, then env
/// PTO2_RING_TASK_WINDOW, then 16384), allocates the device image once
/// through `api` and reserves the untouched host mirror. `*out` is written
/// only on success. `LRT_ERR_INVALID_ARGUMENT` for NULL arguments, an
/// unknown policy or flag, a bad window or an incomplete `api`;
/// `LRT_ERR_NO_MEMORY` when `device_malloc` returns NULL (nothing leaked).
/// `api->ops` must outlive the maker.
///
/// # Safety
/// `cfg`, `api` and `out` are NULL or valid for their reads/write.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_create(
    cfg: *const lrt_maker_config,
    api: *const HostApi,
    out: *mut *mut RuntimeMaker,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_create", {
        if cfg.is_null() {
            return Err(crate::Error::invalid_argument("`cfg` is NULL"));
        }
        // SAFETY: cfg is non-NULL and valid for reads; the enum field is read
        // as its raw integer so that any value a C caller stored is defined.
        let (task_window, raw_policy, flags) = unsafe {
            (
                addr_of!((*cfg).task_window).read(),
                addr_of!((*cfg).policy).cast::<u32>().read(),
                addr_of!((*cfg).flags).read(),
            )
        };
        // SAFETY: NULL or valid per the contract.
        let api = *unsafe { arg_ref(api, "api") }?;
        let out = OutPtr::new(out, "out")?;
        let config = MakerConfig {
            task_window,
            policy: UploadPolicy::from_raw(raw_policy)?,
            flags,
        };
        let maker = RuntimeMaker::new(&config, api)?;
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(into_handle(maker)) };
        Ok(())
    })
}

/// Starts a run: zeroes the header (FULL: the whole mirror), stamps the
/// constants and array pointers, sets `current_task_index = 0`, and writes
/// the mirror's header to `*host_sm`.
///
/// # Safety
/// `maker` is NULL or a live maker; `host_sm` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_begin_run(
    maker: *mut RuntimeMaker,
    host_sm: *mut *mut SmHeader,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_begin_run", {
        // SAFETY: NULL or a live, unaliased maker per the contract.
        let maker = unsafe { arg_mut(maker, "maker") }?;
        let out = OutPtr::new(host_sm, "host_sm")?;
        let header = maker.begin_run()?;
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(header) };
        Ok(())
    })
}

/// Claims slot `current_task_index`, initializing everything the device
/// reads for it, and writes its index and mirror addresses to `*out`.
/// `LRT_ERR_OUT_OF_RANGE` when the window is full, `LRT_ERR_STATE` before
/// `begin_run`.
///
/// # Safety
/// `maker` is NULL or a live maker; `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_claim_slot(
    maker: *mut RuntimeMaker,
    out: *mut TaskSlot,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_claim_slot", {
        // SAFETY: NULL or a live, unaliased maker per the contract.
        let maker = unsafe { arg_mut(maker, "maker") }?;
        let out = OutPtr::new(out, "out")?;
        let slot = maker.claim_slot()?;
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(slot) };
        Ok(())
    })
}

/// Validates `total_tasks = current_task_index` (in [0, W], else
/// `LRT_ERR_OUT_OF_RANGE`) and the live slots' pointers (else
/// `LRT_ERR_INVALID_ARGUMENT`) before copying anything, relocates them to
/// device addresses, ships the image per policy and restores the mirror.
/// A failing `copy_to_device` is `LRT_ERR_DEVICE`; the next run still works.
/// `report` may be NULL.
///
/// # Safety
/// `maker` is NULL or a live maker; `report` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_upload(
    maker: *mut RuntimeMaker,
    report: *mut UploadReport,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_upload", {
        // SAFETY: NULL or a live, unaliased maker per the contract.
        let maker = unsafe { arg_mut(maker, "maker") }?;
        let result = maker.upload()?;
        if let Ok(out) = OutPtr::new(report, "report") {
            // SAFETY: non-NULL; valid per the contract.
            unsafe { out.write(result) };
        }
        Ok(())
    })
}

/// Copies the device header back and writes 0, or the negated
/// `orch_error_code`, else the negated `sched_error_code`, to
/// `*runtime_status`. `LRT_ERR_STATE` before a successful upload.
///
/// # Safety
/// `maker` is NULL or a live maker; `runtime_status` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_read_status(
    maker: *mut RuntimeMaker,
    runtime_status: *mut i32,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_read_status", {
        // SAFETY: NULL or a live, unaliased maker per the contract.
        let maker = unsafe { arg_mut(maker, "maker") }?;
        let out = OutPtr::new(runtime_status, "runtime_status")?;
        let status = maker.read_status()?;
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(status) };
        Ok(())
    })
}

/// Writes the full image's segment offsets to `*out`.
///
/// # Safety
/// `maker` is NULL or a live maker; `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_segments(
    maker: *const RuntimeMaker,
    out: *mut SmSegments,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_segments", {
        // SAFETY: NULL or a live maker per the contract.
        let maker = unsafe { arg_ref(maker, "maker") }?;
        let out = OutPtr::new(out, "out")?;
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(maker.segments()) };
        Ok(())
    })
}

/// The device image (its header is at offset 0 under every policy); NULL
/// for a NULL maker.
///
/// # Safety
/// `maker` is NULL or a live maker.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_device_image(maker: *const RuntimeMaker) -> *mut c_void {
    ffi_value!("lrt_runtime_maker_device_image", std::ptr::null_mut(), {
        // SAFETY: NULL or a live maker per the contract.
        let maker = unsafe { arg_ref(maker, "maker") }?;
        Ok(maker.device_image())
    })
}

/// Frees the device image and the mirror (unpinning it). NULL is a no-op.
///
/// # Safety
/// `maker` is NULL or a maker from `lrt_runtime_maker_create`, not used again.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_destroy(maker: *mut RuntimeMaker) {
    ffi_value!("lrt_runtime_maker_destroy", (), {
        // SAFETY: NULL or an unused handle from into_handle, per the contract.
        unsafe { drop_handle(maker) };
        Ok(())
    })
}
