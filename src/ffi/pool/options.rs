//! `lrt_pool_options_*`: the pool options' C surface. Core:
//! `crate::pool::PoolOptions`, whose setters validate and leave the options
//! unchanged on error.
use super::super::boundary::{arg_mut, arg_str, drop_handle, try_into_handle, OutPtr};
use crate::error::abi::lrt_status;
use crate::pool::abi::{lrt_custom_create_thread_fn, lrt_custom_join_thread_fn};
use crate::pool::options::{self, PoolOptions};
use std::ffi::{c_char, c_int, c_void};

/// Pool options (`lrt_pool_options_create`); opaque.
#[allow(non_camel_case_types)]
pub struct lrt_pool_options(PoolOptions);

impl lrt_pool_options {
    /// The options behind a C handle (for Rust code that inspects them).
    pub fn options(&self) -> &PoolOptions {
        &self.0
    }
}

/// Creates pool options with ONNX Runtime's defaults (thread count 0 =
/// one per physical core, spinning allowed with the legacy budget, no
/// backoff, fixed blocks). On success `*out` owns them; free them with
/// `lrt_pool_options_destroy`. `out` NULL: `LRT_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_create(out: *mut *mut lrt_pool_options) -> lrt_status {
    ffi_status!({
        let out = OutPtr::new(out, "out")?;
        // SAFETY: checked non-NULL; the caller passes writable storage.
        let handle = try_into_handle(lrt_pool_options(PoolOptions::default()))?;
        // SAFETY: checked non-NULL; the caller passes writable storage.
        unsafe { out.write(handle) };
        Ok(())
    })
}

/// Frees options made by `lrt_pool_options_create`; NULL does nothing.
/// Pools already created from them are not affected.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_destroy(opts: *mut lrt_pool_options) {
    ffi_value!((), {
        // SAFETY: NULL or a live handle from lrt_pool_options_create, not
        // used again by the caller.
        unsafe { drop_handle(opts) };
        Ok(())
    })
}

/// Sets an option by its ONNX Runtime session config key: `key` is one of
/// the LRT_POOL_KEY_* names (each one's doc says its values) and `value`
/// its value as ONNX Runtime writes it (decimal integers, an optional
/// leading `-`, nothing else; switches exactly "0" or "1"), both
/// NUL-terminated strings of at most LRT_MAX_STRING_BYTES bytes. An
/// unknown key, a malformed value, a longer string or a NULL argument is
/// `LRT_ERR_INVALID_ARGUMENT`, and the options are unchanged.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_config(
    opts: *mut lrt_pool_options,
    key: *const c_char,
    value: *const c_char,
) -> lrt_status {
    ffi_status!({
        // SAFETY: each is NULL (rejected) or valid as the contract says.
        let (opts, key, value) = unsafe {
            (
                &mut arg_mut(opts, "opts")?.0,
                arg_str(key, "key")?,
                arg_str(value, "value")?,
            )
        };
        opts.set_config(key, value)
    })
}

/// Thread count, as ONNX Runtime's SetIntraOpNumThreads: 0 = one per
/// physical core (at most LRT_POOL_MAX_THREADS; with an affinity set, one
/// per affinity entry plus the caller), 1 = no pool (`lrt_pool_create` gives NULL), n = n-1
/// worker threads plus the calling thread. Outside [0,
/// LRT_POOL_MAX_THREADS]: `LRT_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_num_threads(
    opts: *mut lrt_pool_options,
    n: c_int,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL (rejected) or live options.
        unsafe { arg_mut(opts, "opts")? }.0.set_num_threads(n)
    })
}

/// Allow spinning: 0 or 1 (anything else: `LRT_ERR_INVALID_ARGUMENT`).
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_spin_control(
    opts: *mut lrt_pool_options,
    allow: c_int,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL (rejected) or live options.
        unsafe { arg_mut(opts, "opts")? }.0.set_spin_control(allow)
    })
}

/// Spin budget of an idle worker before it sleeps: -1 = the legacy 2^20
/// pause iterations (ONNX Runtime's default; at most that with the
/// adaptive budget, which is on for -1 unless LRT_POOL_KEY_ADAPTIVE_SPIN
/// is "0"), 0 = no spinning, > 0 = that many microseconds (calibrated),
/// at most LRT_POOL_MAX_SPIN_US; outside [-1, LRT_POOL_MAX_SPIN_US]:
/// `LRT_ERR_INVALID_ARGUMENT`. This is the one statement of the rule; the
/// docs point here.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_spin_duration_us(
    opts: *mut lrt_pool_options,
    us: c_int,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL (rejected) or live options.
        unsafe { arg_mut(opts, "opts")? }.0.set_spin_duration_us(us)
    })
}

/// Spin backoff: 1 = off; >= 2: 1, 2, 4, ... pauses per spin iteration up
/// to this cap (values above LRT_POOL_MAX_BACKOFF are capped); the
/// wall-clock budget stays the same. Below 1: `LRT_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_spin_backoff_max(
    opts: *mut lrt_pool_options,
    max: c_int,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL (rejected) or live options.
        unsafe { arg_mut(opts, "opts")? }
            .0
            .set_spin_backoff_max(max)
    })
}

/// 0 = fixed blocks (Eigen's count, cut evenly: docs/POOL.md); > 0 =
/// ONNX Runtime's dynamic blocks of remaining / (degree of parallelism *
/// base). Negative: `LRT_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_dynamic_block_base(
    opts: *mut lrt_pool_options,
    base: c_int,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL (rejected) or live options.
        unsafe { arg_mut(opts, "opts")? }
            .0
            .set_dynamic_block_base(base)
    })
}

/// Worker affinities in ONNX Runtime's format, a NUL-terminated string
/// such as "1,2;3-4" (1-based processor ids up to 1024, one `;`-separated
/// entry per worker). At most LRT_MAX_STRING_BYTES bytes and
/// LRT_POOL_MAX_THREADS - 1 entries (with num_threads 0 the pool gets one
/// thread per entry plus the caller); longer or more is
/// `LRT_ERR_INVALID_ARGUMENT`, found before anything is allocated.
/// Checked against the process's CPUs when the pool is created.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_affinity(
    opts: *mut lrt_pool_options,
    affinity: *const c_char,
) -> lrt_status {
    ffi_status!({
        // SAFETY: each is NULL (rejected) or valid as the contract says.
        let (opts, affinity) = unsafe {
            (
                &mut arg_mut(opts, "opts")?.0,
                arg_str(affinity, "affinity")?,
            )
        };
        opts.set_affinity(affinity)
    })
}

/// Flush denormals to zero (FTZ and DAZ) on the worker threads: 0 or 1.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_denormal_as_zero(
    opts: *mut lrt_pool_options,
    on: c_int,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL (rejected) or live options.
        let opts = &mut unsafe { arg_mut(opts, "opts")? }.0;
        opts.set_denormal_as_zero(options::flag(on, "on")?);
        Ok(())
    })
}

/// Worker thread name prefix: a non-empty NUL-terminated string of at most
/// LRT_MAX_STRING_BYTES bytes (the system shows the first 15 bytes of
/// "<prefix>-<index>").
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_name(
    opts: *mut lrt_pool_options,
    name: *const c_char,
) -> lrt_status {
    ffi_status!({
        // SAFETY: each is NULL (rejected) or valid as the contract says.
        let (opts, name) = unsafe { (&mut arg_mut(opts, "opts")?.0, arg_str(name, "name")?) };
        opts.set_name(name)
    })
}

/// Stack size in bytes of every worker thread leanrt starts; 0 = 2 MiB
/// (what Rust's threads get by default). Below the platform minimum (PTHREAD_STACK_MIN):
/// `LRT_ERR_INVALID_ARGUMENT`, options unchanged. A size the system cannot
/// provide makes `lrt_pool_create` fail with `LRT_ERR_NO_MEMORY`. With
/// custom thread functions the host's create function chooses the stacks
/// and this setting is not used.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_stack_size(
    opts: *mut lrt_pool_options,
    bytes: usize,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL (rejected) or live options.
        unsafe { arg_mut(opts, "opts")? }.0.set_stack_size(bytes)
    })
}

/// Custom thread functions with ONNX Runtime's signatures. `create` is
/// called once per worker thread (n-1 times) with `create_options`; it must
/// start a thread that calls the given worker function once with the given
/// parameter, and return a non-NULL handle (NULL: no thread started, and
/// `lrt_pool_create` fails with `LRT_ERR_NO_MEMORY`). `join` is called with
/// each handle when the pool is destroyed and must wait for that thread.
/// Both must stay callable while a pool made from these options exists.
/// `create` without `join` is `LRT_ERR_INVALID_ARGUMENT`; both NULL
/// restores leanrt's own threads.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_custom_thread_fns(
    opts: *mut lrt_pool_options,
    create: lrt_custom_create_thread_fn,
    create_options: *mut c_void,
    join: lrt_custom_join_thread_fn,
) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL (rejected) or live options.
        let opts = &mut unsafe { arg_mut(opts, "opts")? }.0;
        // SAFETY: the C caller accepts the contract above, which is the
        // core's contract for these functions.
        unsafe { opts.set_custom_thread_fns(create, create_options, join) }
    })
}
