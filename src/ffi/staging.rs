//! `lrt_sm_*`, `lrt_maker_config_init`, `lrt_runtime_maker_*`: the runtime
//! maker, which builds each run's shared-memory task image in a host mirror
//! and uploads only the part the device will read.
//!
//! Life cycle: lrt_runtime_maker_create once; then per run
//! lrt_runtime_maker_begin_run, lrt_runtime_maker_claim_slot once per task
//! (the host then writes the task's content through the returned pointers),
//! lrt_runtime_maker_upload, the device runs, lrt_runtime_maker_read_status;
//! lrt_runtime_maker_destroy at the end. One thread uses a maker at a time
//! (any thread, not two at once); different makers are independent.
//! docs/STAGING.md holds the full contract.
use std::ffi::c_void;
use std::ptr::addr_of;

use super::boundary::{arg_mut, arg_ref, drop_handle, into_handle, OutPtr};
use super::device::{device_for_api, lrt_host_api};
use super::status::lrt_status;
use crate::staging::{
    self, MakerConfig, RuntimeMaker, SmHeader, SmSegments, TaskDescriptor, TaskPayload, TaskSlot,
    TaskSlotState, UploadPolicy, UploadReport,
};
use crate::{Error, Result};

/// How lrt_runtime_maker_upload ships the image.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum lrt_upload_policy {
    /// The old path: zero the whole mirror every run, ship the whole image
    /// (the baseline).
    LRT_UPLOAD_FULL = 0,
    /// Init-on-write; ship the header and descriptors[0,N), payloads[0,N),
    /// slot_states[0,N) and flags[0,N) at their full-window offsets:
    /// 320 + 4969*N bytes in at most 4 copies.
    LRT_UPLOAD_BOUNDED = 1,
    /// The live prefixes as one image laid out for N slots; one copy.
    LRT_UPLOAD_COMPACT = 2,
}

impl lrt_upload_policy {
    /// The core policy for a raw C value; unknown values are rejected.
    fn from_raw(raw: u32) -> Result<UploadPolicy> {
        match raw {
            0 => Ok(UploadPolicy::Full),
            1 => Ok(UploadPolicy::Bounded),
            2 => Ok(UploadPolicy::Compact),
            _ => Err(Error::invalid_argument(format!(
                "unknown upload policy {raw} (expected 0, 1 or 2)"
            ))),
        }
    }
}

impl From<UploadPolicy> for lrt_upload_policy {
    fn from(p: UploadPolicy) -> Self {
        match p {
            UploadPolicy::Full => lrt_upload_policy::LRT_UPLOAD_FULL,
            UploadPolicy::Bounded => lrt_upload_policy::LRT_UPLOAD_BOUNDED,
            UploadPolicy::Compact => lrt_upload_policy::LRT_UPLOAD_COMPACT,
        }
    }
}

/// lrt_maker_config flag: page-lock the host mirror (and COMPACT's staging
/// buffer) once at create, so copies from it are direct DMA. A device that
/// cannot pin leaves them pageable (a warning through leanrt's log channel).
pub const LRT_MAKER_PIN_MIRROR: u32 = 1;
/// lrt_maker_config flag: map a fresh mirror for every run instead of
/// reusing one (the baseline's behaviour; for measurements).
pub const LRT_MAKER_FRESH_MIRROR: u32 = 2;
const KNOWN_FLAGS: u32 = LRT_MAKER_PIN_MIRROR | LRT_MAKER_FRESH_MIRROR;

/// Maker configuration. Fill it with lrt_maker_config_init, then change the
/// members you need.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_maker_config {
    /// Slots in the ring: a power of two in [4, 262144]. 0 (the default):
    /// the environment variable PTO2_RING_TASK_WINDOW, else 16384.
    pub task_window: u64,
    /// Default LRT_UPLOAD_BOUNDED.
    pub policy: lrt_upload_policy,
    /// LRT_MAKER_PIN_MIRROR and/or LRT_MAKER_FRESH_MIRROR; default 0.
    pub flags: u32,
}

/// A claimed slot: its index and the host-mirror addresses of its
/// descriptor, payload and slot state, which the host writes the task's
/// content through. The pointers stay valid until the next
/// lrt_runtime_maker_begin_run or lrt_runtime_maker_destroy.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct lrt_task_slot {
    pub index: i32,
    pub descriptor: *mut TaskDescriptor,
    pub payload: *mut TaskPayload,
    pub slot_state: *mut TaskSlotState,
}

impl From<TaskSlot> for lrt_task_slot {
    fn from(s: TaskSlot) -> Self {
        lrt_task_slot {
            index: s.index,
            descriptor: s.descriptor,
            payload: s.payload,
            slot_state: s.slot_state,
        }
    }
}

/// What one lrt_runtime_maker_upload did.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default)]
pub struct lrt_upload_report {
    /// current_task_index at upload: the live slots [0, N).
    pub total_tasks: i32,
    /// copy_to_device calls made.
    pub copies: u32,
    /// Bytes shipped.
    pub bytes: u64,
    /// Nanoseconds the run's begin_run spent zeroing.
    pub zero_ns: u64,
    /// Nanoseconds spent validating and rewriting host pointers to device
    /// addresses.
    pub relocate_ns: u64,
    /// Nanoseconds spent gathering (COMPACT) and copying to the device.
    pub copy_ns: u64,
}

impl From<UploadReport> for lrt_upload_report {
    fn from(r: UploadReport) -> Self {
        lrt_upload_report {
            total_tasks: r.total_tasks,
            copies: r.copies,
            bytes: r.bytes,
            zero_ns: r.zero_ns,
            relocate_ns: r.relocate_ns,
            copy_ns: r.copy_ns,
        }
    }
}

/// The core config for a C config whose fields were read as raw integers.
fn config_from_raw(task_window: u64, raw_policy: u32, flags: u32) -> Result<MakerConfig> {
    if flags & !KNOWN_FLAGS != 0 {
        return Err(Error::invalid_argument(format!(
            "unknown maker flags {:#x}",
            flags & !KNOWN_FLAGS
        )));
    }
    Ok(MakerConfig {
        task_window,
        policy: lrt_upload_policy::from_raw(raw_policy)?,
        pin_mirror: flags & LRT_MAKER_PIN_MIRROR != 0,
        fresh_mirror: flags & LRT_MAKER_FRESH_MIRROR != 0,
    })
}

/// Writes to `*out` the byte offsets of the segments of the image for a
/// window of `task_window` slots (header, descriptors, payloads, slot
/// states, completion flags, and the end = the image size).
///
/// `out` must point to writable storage for an lrt_sm_segments; it is
/// written only on success. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a
/// NULL `out` or a window that is not a power of two in [4, 262144] (the
/// largest whose image fits in INT32_MAX bytes). Any thread may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_sm_ring_segment_offsets(
    task_window: u64,
    out: *mut SmSegments,
) -> lrt_status {
    ffi_status!("lrt_sm_ring_segment_offsets", {
        let out = OutPtr::new(out, "out")?;
        let segments = staging::segment_offsets(task_window)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(segments) };
        Ok(())
    })
}

/// Sets `*cfg` to the defaults: window 0 (the environment, else 16384),
/// LRT_UPLOAD_BOUNDED, no flags. `cfg` must be NULL or point to writable
/// storage for an lrt_maker_config; NULL is ignored (and recorded for
/// lrt_last_error). Any thread may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_maker_config_init(cfg: *mut lrt_maker_config) {
    ffi_value!("lrt_maker_config_init", (), {
        let out = OutPtr::new(cfg, "cfg")?;
        let d = MakerConfig::default();
        let mut flags = 0;
        if d.pin_mirror {
            flags |= LRT_MAKER_PIN_MIRROR;
        }
        if d.fresh_mirror {
            flags |= LRT_MAKER_FRESH_MIRROR;
        }
        let value = lrt_maker_config {
            task_window: d.task_window,
            policy: d.policy.into(),
            flags,
        };
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Creates a maker: resolves the window (`cfg->task_window`, else the
/// environment variable PTO2_RING_TASK_WINDOW, else 16384; an unusable
/// environment value is ignored with a warning), allocates the device image
/// once through `api` and reserves the untouched host mirror (pinned when
/// asked).
///
/// `cfg` and `api` must point to an lrt_maker_config and an lrt_host_api;
/// `out` to writable storage for a maker pointer, written only on success.
/// leanrt's own apis (lrt_host_api_host, lrt_host_api_cuda) are used
/// directly: the maker keeps its own reference to the device, so the api
/// may be released before the maker is destroyed. For a host's own table,
/// `api->ops` and the callbacks' `ctx` must stay valid until
/// lrt_runtime_maker_destroy returns, and the callbacks must work from
/// whichever thread uses the maker.
///
/// Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL argument, an unknown
/// policy or flag, a bad window, or a table that is NULL or has a NULL
/// callback; LRT_ERR_STATE for a released CUDA api; LRT_ERR_NO_MEMORY when
/// the host mirror or the device image cannot be allocated (the message
/// carries the device's own reason, e.g. CUDA's error name); LRT_ERR_UNAVAILABLE
/// for a CUDA api inherited across fork. Nothing is leaked on failure. Any
/// thread may call it.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_create(
    cfg: *const lrt_maker_config,
    api: *const lrt_host_api,
    out: *mut *mut RuntimeMaker,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_create", {
        if cfg.is_null() {
            return Err(Error::invalid_argument("`cfg` is NULL"));
        }
        // SAFETY: cfg is non-NULL and readable; the enum field is read as its
        // raw integer so that any value a C caller stored is defined.
        let (task_window, raw_policy, flags) = unsafe {
            (
                addr_of!((*cfg).task_window).read(),
                addr_of!((*cfg).policy).cast::<u32>().read(),
                addr_of!((*cfg).flags).read(),
            )
        };
        // SAFETY: NULL or valid per the contract.
        let api = unsafe { arg_ref(api, "api") }?;
        let out = OutPtr::new(out, "out")?;
        let config = config_from_raw(task_window, raw_policy, flags)?;
        // SAFETY: the table's validity and thread rules are the caller's
        // contract above.
        let device = unsafe { device_for_api(api) }?;
        let maker = RuntimeMaker::new(&config, device)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(into_handle(maker)) };
        Ok(())
    })
}

/// Starts a run: zeroes the mirror's header (LRT_UPLOAD_FULL: the whole
/// mirror), writes every header field the device reads (docs/STAGING.md
/// lists them), sets current_task_index to 0 and writes the mirror's
/// header address to `*host_sm`. The header stays valid until the next
/// begin_run or destroy.
///
/// `maker` must be NULL or a live maker; `host_sm` must point to writable
/// storage for a pointer. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a
/// NULL argument; LRT_ERR_NO_MEMORY when LRT_MAKER_FRESH_MIRROR cannot map
/// a new mirror.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_begin_run(
    maker: *mut RuntimeMaker,
    host_sm: *mut *mut SmHeader,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_begin_run", {
        // SAFETY: NULL or a live maker not used by another thread, per the
        // contract.
        let maker = unsafe { arg_mut(maker, "maker") }?;
        let out = OutPtr::new(host_sm, "host_sm")?;
        let header = maker.begin_run()?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(header) };
        Ok(())
    })
}

/// Claims slot current_task_index: writes everything the device reads for
/// it (docs/STAGING.md lists each field and its value), increments
/// current_task_index and writes the slot's index and host-mirror addresses
/// to `*out`. The host then writes the task's content.
///
/// `maker` must be NULL or a live maker; `out` must point to writable
/// storage for an lrt_task_slot. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT
/// for a NULL argument; LRT_ERR_STATE before begin_run;
/// LRT_ERR_OUT_OF_RANGE when the window is full.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_claim_slot(
    maker: *mut RuntimeMaker,
    out: *mut lrt_task_slot,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_claim_slot", {
        // SAFETY: NULL or a live maker not used by another thread, per the
        // contract.
        let maker = unsafe { arg_mut(maker, "maker") }?;
        let out = OutPtr::new(out, "out")?;
        let slot = maker.claim_slot()?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(slot.into()) };
        Ok(())
    })
}

/// Ships the run to the device. Reads N = current_task_index and checks it
/// and every live slot's payload/task pointer before changing or copying
/// anything; rewrites the host addresses to device addresses for the copy,
/// ships per the policy, and restores the host addresses in the mirror.
///
/// `maker` must be NULL or a live maker; `report` may be NULL, else it must
/// point to writable storage for an lrt_upload_report, filled on success.
/// Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL maker or a slot
/// pointer that is neither NULL nor a live element of the mirror;
/// LRT_ERR_STATE before begin_run; LRT_ERR_OUT_OF_RANGE when N is outside
/// [0, W]; LRT_ERR_DEVICE when a copy fails (the message carries the
/// device's reason). The maker stays usable for the next run after any
/// failure.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_upload(
    maker: *mut RuntimeMaker,
    report: *mut lrt_upload_report,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_upload", {
        // SAFETY: NULL or a live maker not used by another thread, per the
        // contract.
        let maker = unsafe { arg_mut(maker, "maker") }?;
        let result = maker.upload()?;
        if let Ok(out) = OutPtr::new(report, "report") {
            // SAFETY: non-NULL; writable per the contract.
            unsafe { out.write(result.into()) };
        }
        Ok(())
    })
}

/// Copies the device's header back and writes the run's status to
/// `*runtime_status`: 0, or the negated orch_error_code when it is non-zero,
/// else the negated sched_error_code.
///
/// `maker` must be NULL or a live maker; `runtime_status` must point to a
/// writable int32_t. Returns LRT_OK; LRT_ERR_INVALID_ARGUMENT for a NULL
/// argument; LRT_ERR_STATE before a successful upload; LRT_ERR_DEVICE when
/// the copy fails.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_read_status(
    maker: *mut RuntimeMaker,
    runtime_status: *mut i32,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_read_status", {
        // SAFETY: NULL or a live maker not used by another thread, per the
        // contract.
        let maker = unsafe { arg_mut(maker, "maker") }?;
        let out = OutPtr::new(runtime_status, "runtime_status")?;
        let status = maker.read_status()?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(status) };
        Ok(())
    })
}

/// Writes the segment offsets of the maker's full image to `*out`.
/// `maker` must be NULL or a live maker; `out` must point to writable
/// storage for an lrt_sm_segments. Returns LRT_OK, or
/// LRT_ERR_INVALID_ARGUMENT for a NULL argument.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_segments(
    maker: *const RuntimeMaker,
    out: *mut SmSegments,
) -> lrt_status {
    ffi_status!("lrt_runtime_maker_segments", {
        // SAFETY: NULL or a live maker per the contract.
        let maker = unsafe { arg_ref(maker, "maker") }?;
        let out = OutPtr::new(out, "out")?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(maker.segments()) };
        Ok(())
    })
}

/// The device image's address (its header is at offset 0 under every
/// policy), owned by the maker; NULL for a NULL maker. `maker` must be NULL
/// or a live maker.
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_device_image(maker: *const RuntimeMaker) -> *mut c_void {
    ffi_value!("lrt_runtime_maker_device_image", std::ptr::null_mut(), {
        // SAFETY: NULL or a live maker per the contract.
        let maker = unsafe { arg_ref(maker, "maker") }?;
        Ok(maker.device_image())
    })
}

/// Frees the device image and the mirror (unpinning it) and the maker. NULL
/// is a no-op. `maker` must be NULL or a maker from lrt_runtime_maker_create
/// that no other thread is using; it must not be used afterwards. Works in a
/// child process after fork (a CUDA image then stays with the parent).
#[no_mangle]
pub unsafe extern "C" fn lrt_runtime_maker_destroy(maker: *mut RuntimeMaker) {
    ffi_value!("lrt_runtime_maker_destroy", (), {
        // SAFETY: NULL or an unused handle from into_handle, per the contract.
        unsafe { drop_handle(maker) };
        Ok(())
    })
}
