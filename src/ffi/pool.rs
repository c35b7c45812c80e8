//! `lrt_pool_*` and `lrt_kernel_parallel_for`: the thread pool's C ABI.
//! Core: `crate::pool`. A NULL `lrt_pool*` is a valid pool everywhere: it
//! runs loops and tasks serially on the caller (ORT's null thread pool).
use super::boundary::{arg_mut, arg_ref, arg_str, drop_handle, into_handle, OutPtr};
use super::status::lrt_status;
use crate::pool::{
    self, CustomCreateThreadFn, CustomJoinThreadFn, PoolOptions, PoolStats, TensorOpCost,
    ThreadPool,
};
use crate::Error;
use std::ffi::{c_char, c_int, c_void};

/// Loop body over a block `[first, last)`.
pub type RangeFn = Option<unsafe extern "C" fn(ctx: *mut c_void, first: isize, last: isize)>;
/// Loop body over one index.
pub type IndexFn = Option<unsafe extern "C" fn(ctx: *mut c_void, index: isize)>;
/// A scheduled task.
pub type TaskFn = Option<unsafe extern "C" fn(ctx: *mut c_void)>;
/// `KernelContext_ParallelFor`'s body.
pub type KernelFn = Option<unsafe extern "C" fn(usr_data: *mut c_void, index: usize)>;

/// A pool handle that may be NULL (= serial).
///
/// # Safety
/// `pool` is NULL or a live pool from `lrt_pool_create`.
unsafe fn pool_arg<'a>(pool: *const ThreadPool) -> Option<&'a ThreadPool> {
    // SAFETY: NULL or valid per the caller's contract.
    unsafe { pool.as_ref() }
}

fn missing(what: &str) -> Error {
    Error::invalid_argument(format!("`{what}` is NULL"))
}

fn flag(on: c_int, what: &str) -> crate::Result<bool> {
    match on {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::invalid_argument(format!(
            "{what} {on} must be 0 or 1"
        ))),
    }
}

/// Creates pool options with ONNX Runtime's defaults.
///
/// # Safety
/// `out` is NULL or valid for a write of a pointer.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_create(out: *mut *mut PoolOptions) -> lrt_status {
    ffi_status!("lrt_pool_options_create", {
        let out = OutPtr::new(out, "out")?;
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(into_handle(PoolOptions::default())) };
        Ok(())
    })
}

/// Destroys options; NULL is a no-op.
///
/// # Safety
/// `opts` is NULL or came from `lrt_pool_options_create`, not used again.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_destroy(opts: *mut PoolOptions) {
    ffi_value!("lrt_pool_options_destroy", (), {
        // SAFETY: per the contract.
        unsafe { drop_handle(opts) };
        Ok(())
    })
}

/// Sets an option by its ONNX Runtime session config key (see DESIGN.md);
/// unknown key or malformed value: `LRT_ERR_INVALID_ARGUMENT`, unchanged.
///
/// # Safety
/// `opts` is NULL or live; `key`/`value` are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_config(
    opts: *mut PoolOptions,
    key: *const c_char,
    value: *const c_char,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_config", {
        // SAFETY: per the contract.
        let (opts, key, value) = unsafe {
            (
                arg_mut(opts, "opts")?,
                arg_str(key, "key")?,
                arg_str(value, "value")?,
            )
        };
        opts.set_config(key, value)
    })
}

/// Degree of parallelism (SetIntraOpNumThreads): 0 = physical cores,
/// 1 = no pool (NULL), n = n-1 workers + the caller; at most 1024.
///
/// # Safety
/// `opts` is NULL or a live `lrt_pool_options`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_num_threads(
    opts: *mut PoolOptions,
    n: c_int,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_num_threads", {
        // SAFETY: per the contract.
        unsafe { arg_mut(opts, "opts")? }.set_num_threads(n)
    })
}

/// Allow spinning: 0 or 1.
///
/// # Safety
/// `opts` is NULL or a live `lrt_pool_options`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_spin_control(
    opts: *mut PoolOptions,
    allow: c_int,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_spin_control", {
        // SAFETY: per the contract.
        unsafe { arg_mut(opts, "opts")? }.set_spin_control(allow)
    })
}

/// Spin budget: -1 = legacy 2^20 pauses, 0 = no spinning, > 0 = calibrated
/// microseconds (at most 10000000).
///
/// # Safety
/// `opts` is NULL or a live `lrt_pool_options`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_spin_duration_us(
    opts: *mut PoolOptions,
    us: c_int,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_spin_duration_us", {
        // SAFETY: per the contract.
        unsafe { arg_mut(opts, "opts")? }.set_spin_duration_us(us)
    })
}

/// Backoff: 1 = off; >= 2: 1, 2, 4, ... pauses per spin iteration up to this
/// cap (values above 64 are capped at 64).
///
/// # Safety
/// `opts` is NULL or a live `lrt_pool_options`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_spin_backoff_max(
    opts: *mut PoolOptions,
    max: c_int,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_spin_backoff_max", {
        // SAFETY: per the contract.
        unsafe { arg_mut(opts, "opts")? }.set_spin_backoff_max(max)
    })
}

/// 0 = Eigen's fixed blocks; > 0 = ORT's dynamic blocks of
/// remaining / (degree of parallelism * base).
///
/// # Safety
/// `opts` is NULL or a live `lrt_pool_options`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_dynamic_block_base(
    opts: *mut PoolOptions,
    base: c_int,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_dynamic_block_base", {
        // SAFETY: per the contract.
        unsafe { arg_mut(opts, "opts")? }.set_dynamic_block_base(base)
    })
}

/// Worker affinities in ONNX Runtime's format (`"1,2;3-4"`, 1-based ids).
///
/// # Safety
/// `opts` is NULL or live; `affinity` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_affinity(
    opts: *mut PoolOptions,
    affinity: *const c_char,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_affinity", {
        // SAFETY: per the contract.
        let (opts, affinity) = unsafe { (arg_mut(opts, "opts")?, arg_str(affinity, "affinity")?) };
        opts.set_affinity(affinity)
    })
}

/// Flush denormals to zero (FTZ/DAZ) on the workers: 0 or 1.
///
/// # Safety
/// `opts` is NULL or a live `lrt_pool_options`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_denormal_as_zero(
    opts: *mut PoolOptions,
    on: c_int,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_denormal_as_zero", {
        // SAFETY: per the contract.
        let opts = unsafe { arg_mut(opts, "opts")? };
        opts.set_denormal_as_zero(flag(on, "on")?)
    })
}

/// Worker thread name prefix (non-empty).
///
/// # Safety
/// `opts` is NULL or live; `name` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_name(
    opts: *mut PoolOptions,
    name: *const c_char,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_name", {
        // SAFETY: per the contract.
        let (opts, name) = unsafe { (arg_mut(opts, "opts")?, arg_str(name, "name")?) };
        opts.set_name(name)
    })
}

/// Custom thread functions with ORT's signatures: `create` is called once
/// per worker thread (n-1 times) and must return non-NULL; `join` is called
/// for each at destroy. `create` without `join` is
/// `LRT_ERR_INVALID_ARGUMENT`; both NULL restores the built-in threads.
///
/// # Safety
/// `opts` is NULL or live; the functions, if set, follow ORT's contract.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_custom_thread_fns(
    opts: *mut PoolOptions,
    create: CustomCreateThreadFn,
    create_options: *mut c_void,
    join: CustomJoinThreadFn,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_custom_thread_fns", {
        // SAFETY: per the contract.
        let opts = unsafe { arg_mut(opts, "opts")? };
        opts.set_custom_thread_fns(create, create_options, join)
    })
}

/// Creates a pool. With a resolved thread count of 1, `*out = NULL` and
/// `LRT_OK` (a NULL pool runs everything on the caller).
///
/// # Safety
/// `opts` is NULL or live; `out` is NULL or valid for a pointer write.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_create(
    opts: *const PoolOptions,
    out: *mut *mut ThreadPool,
) -> lrt_status {
    ffi_status!("lrt_pool_create", {
        let out = OutPtr::new(out, "out")?;
        // SAFETY: per the contract.
        let opts = unsafe { arg_ref(opts, "opts")? };
        let handle = ThreadPool::create(opts)?.map_or(std::ptr::null_mut(), into_handle);
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(handle) };
        Ok(())
    })
}

/// Runs every scheduled task, joins the workers, frees the pool. NULL is a
/// no-op. Must not be called from a task or loop body of the same pool.
///
/// # Safety
/// `pool` is NULL or came from `lrt_pool_create`, not used again.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_destroy(pool: *mut ThreadPool) {
    ffi_value!("lrt_pool_destroy", (), {
        // SAFETY: per the contract.
        unsafe { drop_handle(pool) };
        Ok(())
    })
}

/// ORT's `TryParallelFor` with `cost_per_unit` compute cycles per
/// iteration: `fn(ctx, first, last)` over blocks covering `[0, total)`.
/// NULL `fn`: nothing runs, the error is recorded for `lrt_last_error`.
///
/// # Safety
/// `pool` is NULL or live; `fn` is safe to call concurrently with `ctx`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_try_parallel_for(
    pool: *mut ThreadPool,
    total: isize,
    cost_per_unit: f64,
    func: RangeFn,
    ctx: *mut c_void,
) {
    ffi_value!("lrt_pool_try_parallel_for", (), {
        let f = func.ok_or_else(|| missing("fn"))?;
        let ctx = ctx as usize;
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        // SAFETY: the caller guarantees `f` may be called concurrently with `ctx`.
        pool::try_parallel_for(pool, total, cost_per_unit, &|a, b| unsafe {
            f(ctx as *mut c_void, a, b)
        });
        Ok(())
    })
}

/// ORT's `TryParallelFor` with a `TensorOpCost`.
///
/// # Safety
/// As `lrt_pool_try_parallel_for`; `cost` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_try_parallel_for_cost(
    pool: *mut ThreadPool,
    total: isize,
    cost: *const TensorOpCost,
    func: RangeFn,
    ctx: *mut c_void,
) {
    ffi_value!("lrt_pool_try_parallel_for_cost", (), {
        // SAFETY: per the contract.
        let cost = *unsafe { arg_ref(cost, "cost")? };
        let f = func.ok_or_else(|| missing("fn"))?;
        let ctx = ctx as usize;
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        // SAFETY: the caller guarantees `f` may be called concurrently with `ctx`.
        pool::try_parallel_for_cost(pool, total, &cost, &|a, b| unsafe {
            f(ctx as *mut c_void, a, b)
        });
        Ok(())
    })
}

/// ORT's `TrySimpleParallelFor`: `fn(ctx, i)` for every i in `[0, total)`.
///
/// # Safety
/// `pool` is NULL or live; `fn` is safe to call concurrently with `ctx`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_try_simple_parallel_for(
    pool: *mut ThreadPool,
    total: isize,
    func: IndexFn,
    ctx: *mut c_void,
) {
    ffi_value!("lrt_pool_try_simple_parallel_for", (), {
        let f = func.ok_or_else(|| missing("fn"))?;
        let ctx = ctx as usize;
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        // SAFETY: the caller guarantees `f` may be called concurrently with `ctx`.
        pool::try_simple_parallel_for(pool, total, &|i| unsafe { f(ctx as *mut c_void, i) });
        Ok(())
    })
}

/// ORT's `TryBatchParallelFor`: `[0, total)` in `num_batches` batches
/// (<= 0: degree of parallelism).
///
/// # Safety
/// `pool` is NULL or live; `fn` is safe to call concurrently with `ctx`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_try_batch_parallel_for(
    pool: *mut ThreadPool,
    total: isize,
    func: IndexFn,
    ctx: *mut c_void,
    num_batches: isize,
) {
    ffi_value!("lrt_pool_try_batch_parallel_for", (), {
        let f = func.ok_or_else(|| missing("fn"))?;
        let ctx = ctx as usize;
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        // SAFETY: the caller guarantees `f` may be called concurrently with `ctx`.
        let body = |i| unsafe { f(ctx as *mut c_void, i) };
        pool::try_batch_parallel_for(pool, total, &body, num_batches);
        Ok(())
    })
}

/// ORT's `Schedule`: runs `fn(ctx)` on a worker; inline on a NULL pool or
/// when the target queue is full. Destroy runs every scheduled task.
///
/// # Safety
/// `pool` is NULL or live; `fn(ctx)` may run on another thread.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_schedule(pool: *mut ThreadPool, func: TaskFn, ctx: *mut c_void) {
    ffi_value!("lrt_pool_schedule", (), {
        let f = func.ok_or_else(|| missing("fn"))?;
        let ctx = ctx as usize;
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        // SAFETY: the caller guarantees `f(ctx)` may run on any thread.
        pool::schedule(pool, Box::new(move || unsafe { f(ctx as *mut c_void) }));
        Ok(())
    })
}

/// ORT's `KernelContext_ParallelFor`: `fn(usr_data, i)` for i in
/// `[0, total)`; `num_batch` 0 = one index per task (TrySimpleParallelFor),
/// else TryBatchParallelFor with `num_batch` batches. NULL `fn`, or a
/// count above PTRDIFF_MAX: `LRT_ERR_INVALID_ARGUMENT`, nothing runs.
///
/// # Safety
/// `pool` is NULL or live; `fn` is safe to call concurrently.
#[no_mangle]
pub unsafe extern "C" fn lrt_kernel_parallel_for(
    pool: *mut ThreadPool,
    func: KernelFn,
    total: usize,
    num_batch: usize,
    usr_data: *mut c_void,
) -> lrt_status {
    ffi_status!("lrt_kernel_parallel_for", {
        let f = func.ok_or_else(|| missing("fn"))?;
        let total = isize::try_from(total)
            .map_err(|_| Error::invalid_argument(format!("total {total} > PTRDIFF_MAX")))?;
        let batches = isize::try_from(num_batch)
            .map_err(|_| Error::invalid_argument(format!("num_batch {num_batch} > PTRDIFF_MAX")))?;
        let ctx = usr_data as usize;
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        // SAFETY: the caller guarantees `f` may be called concurrently.
        let body = |i: isize| unsafe { f(ctx as *mut c_void, i as usize) };
        if batches == 0 {
            pool::try_simple_parallel_for(pool, total, &body);
        } else {
            pool::try_batch_parallel_for(pool, total, &body, batches);
        }
        Ok(())
    })
}

/// Degree of parallelism; 1 for NULL.
///
/// # Safety
/// `pool` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_degree_of_parallelism(pool: *const ThreadPool) -> c_int {
    ffi_value!("lrt_pool_degree_of_parallelism", 1, {
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        Ok(pool::degree_of_parallelism(pool))
    })
}

/// 1 if loops may run in parallel (degree of parallelism > 1), else 0.
///
/// # Safety
/// `pool` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_should_parallelize(pool: *const ThreadPool) -> c_int {
    ffi_value!("lrt_pool_should_parallelize", 0, {
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        Ok(c_int::from(pool::should_parallelize(pool)))
    })
}

/// Worker threads (ORT's NumThreads): thread count - 1; 0 for NULL.
///
/// # Safety
/// `pool` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_num_threads(pool: *const ThreadPool) -> c_int {
    ffi_value!("lrt_pool_num_threads", 0, {
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        Ok(pool.map_or(0, ThreadPool::num_threads))
    })
}

/// 0..lrt_pool_num_threads()-1 on a worker of `pool`, -1 elsewhere (and
/// for NULL).
///
/// # Safety
/// `pool` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_current_thread_id(pool: *const ThreadPool) -> c_int {
    ffi_value!("lrt_pool_current_thread_id", -1, {
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        Ok(pool.map_or(-1, ThreadPool::current_thread_id))
    })
}

/// Restores the configured spin policy. NULL: no-op.
///
/// # Safety
/// `pool` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_enable_spinning(pool: *mut ThreadPool) {
    ffi_value!("lrt_pool_enable_spinning", (), {
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        if let Some(p) = pool {
            p.enable_spinning();
        }
        Ok(())
    })
}

/// Spinning workers go to sleep at once; idle workers sleep without
/// spinning until `lrt_pool_enable_spinning`. NULL: no-op.
///
/// # Safety
/// `pool` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_disable_spinning(pool: *mut ThreadPool) {
    ffi_value!("lrt_pool_disable_spinning", (), {
        // SAFETY: per the contract.
        let pool = unsafe { pool_arg(pool) };
        if let Some(p) = pool {
            p.disable_spinning();
        }
        Ok(())
    })
}

/// Counters (tasks run, steals, spin iterations, parks, wakeups, workers
/// asleep now); all zero for a NULL pool.
///
/// DESIGN.md calls this function `lrt_pool_stats`, the same name as the
/// struct type `lrt_pool_stats`; C does not allow a typedef and a function
/// with one name, so the function is `lrt_pool_get_stats`.
///
/// # Safety
/// `pool` is NULL or live; `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_get_stats(
    pool: *const ThreadPool,
    out: *mut PoolStats,
) -> lrt_status {
    ffi_status!("lrt_pool_get_stats", {
        let out = OutPtr::new(out, "out")?;
        // SAFETY: per the contract.
        let stats = unsafe { pool_arg(pool) }.map_or_else(PoolStats::default, ThreadPool::stats);
        // SAFETY: checked non-NULL; valid per the contract.
        unsafe { out.write(stats) };
        Ok(())
    })
}
