//! `lrt_pool_*`, `lrt_partition_work`, `lrt_kernel_parallel_for`,
//! `lrt_string_free`: the thread pool's C surface. Core: `crate::pool`.
//! Every function here checks its arguments, calls the core and maps its
//! error to a status; the pool's behaviour lives in the core.
//!
//! For C readers: a NULL `lrt_pool*` is a valid pool everywhere and runs
//! loops and tasks serially on the calling thread (ONNX Runtime's null
//! thread pool). Any thread may use a pool; a destroy while other threads
//! are inside calls on it is refused.
use super::boundary::{arg_ref, drop_handle, null_arg, try_into_handle, HostContext, OutPtr};
use crate::error::abi::lrt_status;
use crate::pool::{self, CallGuard, SectionHandle, ThreadPool};
use crate::Error;
use std::ffi::{c_char, c_int, c_void, CString};

mod options;
pub use options::*;

pub use crate::pool::abi::{
    lrt_custom_create_thread_fn, lrt_custom_join_thread_fn, lrt_custom_thread_handle,
    lrt_custom_thread_handle_t, lrt_index_fn, lrt_kernel_fn, lrt_pool_stats, lrt_range_fn,
    lrt_task_fn, lrt_tensor_op_cost, lrt_thread_worker_fn, LRT_POOL_MAX_BACKOFF,
    LRT_POOL_MAX_SPIN_US, LRT_POOL_MAX_THREADS,
};

/// A thread pool (`lrt_pool_create`); opaque. NULL is a valid pool that
/// runs everything on the calling thread.
#[allow(non_camel_case_types)]
pub struct lrt_pool(ThreadPool);

/// An open parallel section (`lrt_pool_section_begin`); opaque.
#[allow(non_camel_case_types)]
pub struct lrt_pool_section(SectionHandle);

/// A pool handle that may be NULL (= serial).
///
/// # Safety
/// `pool` is NULL or a live pool from `lrt_pool_create`.
unsafe fn pool_ref<'a>(pool: *const lrt_pool) -> Option<&'a ThreadPool> {
    // SAFETY: NULL or valid per the caller's contract.
    unsafe { pool.as_ref() }.map(|p| &p.0)
}

/// A pool handle that may be NULL (= serial), with the call counted as in
/// progress on the pool until the guard drops, so that a destroy racing it
/// is refused (`ThreadPool::enter_call`).
///
/// # Safety
/// As for [`pool_ref`].
unsafe fn pool_arg<'a>(
    pool: *const lrt_pool,
) -> Result<(Option<&'a ThreadPool>, Option<CallGuard<'a>>), Error> {
    // SAFETY: the caller's contract.
    let pool = unsafe { pool_ref(pool) };
    let call = pool.map(ThreadPool::enter_call).transpose()?;
    Ok((pool, call))
}

/// Creates a pool from `opts` (which stay owned by the caller). On success
/// `*out` is the pool, or NULL when the resolved thread count is 1 (a NULL
/// pool runs everything on the caller). Failure to start a worker thread:
/// `LRT_ERR_NO_MEMORY`, `*out` untouched. `opts` must not be NULL:
/// `lrt_pool_create(NULL, &pool)` is `LRT_ERR_INVALID_ARGUMENT` and leaves
/// `*out` untouched; for the defaults, pass options fresh from
/// `lrt_pool_options_create`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_create(
    opts: *const lrt_pool_options,
    out: *mut *mut lrt_pool,
) -> lrt_status {
    ffi_status!({
        let out = OutPtr::new(out, "out")?;
        // SAFETY: NULL (rejected) or live options.
        let opts = unsafe { arg_ref(opts, "opts")? };
        let handle = match ThreadPool::create(opts.options())? {
            Some(p) => try_into_handle(lrt_pool(p))?,
            None => std::ptr::null_mut(),
        };
        // SAFETY: checked non-NULL; the caller passes writable storage.
        unsafe { out.write(handle) };
        Ok(())
    })
}

/// Runs every task still scheduled, joins the workers and frees the pool.
/// NULL does nothing. A parallel section still open on the pool is ended
/// (its `lrt_pool_section_end` then only frees the handle). Called from one
/// of the pool's own worker threads, or from a loop body or task running on
/// this pool, it does nothing and records `LRT_ERR_STATE` for
/// `lrt_last_error`: the pool stays intact and usable, and must be
/// destroyed from elsewhere. The same while other threads are inside calls
/// on this pool (a loop, Schedule, a query; the pool's own workers are
/// waited for instead): destroy it again once they have returned. A call
/// that starts after destroy began is a use after destroy, which no check
/// can catch. In a forked child, destroying an inherited
/// pool returns at once (its threads do not exist there; see docs/POOL.md).
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_destroy(pool: *mut lrt_pool) {
    ffi_value!((), {
        // SAFETY: NULL or a live pool, per the contract.
        if let Some(p) = unsafe { pool_ref(pool) } {
            p.check_destroy_here()?;
        }
        // SAFETY: NULL or a handle from lrt_pool_create, not used again.
        unsafe { drop_handle(pool) };
        Ok(())
    })
}

/// ONNX Runtime's TryParallelFor with `cost_per_unit` compute cycles per
/// iteration: calls `func(ctx, first, last)` over blocks that cover [0,
/// total) exactly once, on the calling thread and the workers; returns when
/// all are done. `func` must be safe to call from several threads at once.
/// NULL `func`: nothing runs, and the error is recorded for `lrt_last_error`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_try_parallel_for(
    pool: *mut lrt_pool,
    total: isize,
    cost_per_unit: f64,
    func: lrt_range_fn,
    ctx: *mut c_void,
) {
    ffi_value!((), {
        let f = func.ok_or_else(|| null_arg("func"))?;
        let ctx = HostContext(ctx);
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        // SAFETY: the caller allows `f` to run concurrently with `ctx`.
        pool::try_parallel_for(pool, total, cost_per_unit, &|a, b| unsafe {
            f(ctx.get(), a, b)
        });
        Ok(())
    })
}

/// As `lrt_pool_try_parallel_for`, with the cost of one iteration given as
/// bytes loaded, bytes stored and compute cycles (`cost` must not be NULL).
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_try_parallel_for_cost(
    pool: *mut lrt_pool,
    total: isize,
    cost: *const lrt_tensor_op_cost,
    func: lrt_range_fn,
    ctx: *mut c_void,
) {
    ffi_value!((), {
        // SAFETY: NULL (rejected) or a valid lrt_tensor_op_cost.
        let cost = *unsafe { arg_ref(cost, "cost")? };
        let f = func.ok_or_else(|| null_arg("func"))?;
        let ctx = HostContext(ctx);
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        // SAFETY: the caller allows `f` to run concurrently with `ctx`.
        pool::try_parallel_for_cost(pool, total, &cost, &|a, b| unsafe { f(ctx.get(), a, b) });
        Ok(())
    })
}

/// ONNX Runtime's TrySimpleParallelFor: `func(ctx, i)` once for every i in
/// [0, total), from several threads at once.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_try_simple_parallel_for(
    pool: *mut lrt_pool,
    total: isize,
    func: lrt_index_fn,
    ctx: *mut c_void,
) {
    ffi_value!((), {
        let f = func.ok_or_else(|| null_arg("func"))?;
        let ctx = HostContext(ctx);
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        // SAFETY: the caller allows `f` to run concurrently with `ctx`.
        pool::try_simple_parallel_for(pool, total, &|i| unsafe { f(ctx.get(), i) });
        Ok(())
    })
}

/// ONNX Runtime's TryBatchParallelFor: [0, total) split into `num_batches`
/// batches as `lrt_partition_work` splits it (<= 0: the degree of
/// parallelism; never more batches than items), each batch calling
/// `func(ctx, i)` for its indices.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_try_batch_parallel_for(
    pool: *mut lrt_pool,
    total: isize,
    func: lrt_index_fn,
    ctx: *mut c_void,
    num_batches: isize,
) {
    ffi_value!((), {
        let f = func.ok_or_else(|| null_arg("func"))?;
        let ctx = HostContext(ctx);
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        // SAFETY: the caller allows `f` to run concurrently with `ctx`.
        let body = |i| unsafe { f(ctx.get(), i) };
        pool::try_batch_parallel_for(pool, total, &body, num_batches);
        Ok(())
    })
}

/// ONNX Runtime's PartitionWork: writes to `*start` and `*end` the index
/// range [start, end) of batch `batch_idx` when `total` items are split
/// into `num_batches` batches; the first `total % num_batches` batches get
/// one item more. Needs `num_batches > 0`, `0 <= batch_idx < num_batches`,
/// `total >= 0` and non-NULL `start` and `end`; otherwise
/// `LRT_ERR_INVALID_ARGUMENT` and nothing is written.
#[no_mangle]
pub unsafe extern "C" fn lrt_partition_work(
    batch_idx: isize,
    num_batches: isize,
    total: isize,
    start: *mut isize,
    end: *mut isize,
) -> lrt_status {
    ffi_status!({
        let (start, end) = (OutPtr::new(start, "start")?, OutPtr::new(end, "end")?);
        let (s, e) = pool::try_partition_work(batch_idx, num_batches, total)?;
        // SAFETY: both checked non-NULL; the caller passes writable storage.
        unsafe {
            start.write(s);
            end.write(e);
        }
        Ok(())
    })
}

/// ONNX Runtime's Schedule: runs `func(ctx)` on a worker thread; on the
/// calling thread instead when `pool` is NULL, the chosen queue is full or
/// there is no memory to queue it.
/// Destroying the pool runs every task still queued.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_schedule(
    pool: *mut lrt_pool,
    func: lrt_task_fn,
    ctx: *mut c_void,
) {
    ffi_value!((), {
        let f = func.ok_or_else(|| null_arg("func"))?;
        let ctx = HostContext(ctx);
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        // SAFETY: the caller allows `f(ctx)` to run on any thread.
        let task = move || unsafe { f(ctx.get()) };
        match crate::alloc::try_box_or_back(task) {
            Ok(task) => pool::schedule(pool, task),
            // No memory for the queued task: it runs here, as when the
            // queue is full (never lost).
            Err(task) => task(),
        }
        Ok(())
    })
}

/// ONNX Runtime's KernelContext_ParallelFor: `func(usr_data, i)` for every i
/// in [0, total); `num_batch` 0 = one index at a time
/// (TrySimpleParallelFor), else TryBatchParallelFor with `num_batch`
/// batches. NULL `func`, or a count above PTRDIFF_MAX:
/// `LRT_ERR_INVALID_ARGUMENT`, nothing runs.
#[no_mangle]
pub unsafe extern "C" fn lrt_kernel_parallel_for(
    pool: *mut lrt_pool,
    func: lrt_kernel_fn,
    total: usize,
    num_batch: usize,
    usr_data: *mut c_void,
) -> lrt_status {
    ffi_status!({
        let f = func.ok_or_else(|| null_arg("func"))?;
        let ctx = HostContext(usr_data);
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        // SAFETY: the caller allows `f` to run concurrently.
        pool::kernel_parallel_for(pool, total, num_batch, &|i| unsafe { f(ctx.get(), i) })
    })
}

/// Opens a parallel section (ONNX Runtime's ThreadPool::ParallelSection) on
/// the calling thread: until `lrt_pool_section_end`, the loops this thread
/// runs on `pool` reuse one team of workers that wait for the next loop
/// instead of going back to sleep. On success `*out` is the section; end it
/// on the same thread with `lrt_pool_section_end`, before or after
/// destroying the pool. A NULL pool (or a 1-thread pool, which is NULL):
/// `*out = NULL` and `LRT_OK`, a section with nothing to do. Sections do
/// not nest: when this thread already has one open (on any pool),
/// `LRT_ERR_STATE` and `*out` untouched. Allowed from a worker thread and
/// from a loop body; when another thread's loop or section holds the pool's
/// hand-off slot, the section is still opened but its loops run as loops
/// outside a section do. `out` NULL: `LRT_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_section_begin(
    pool: *mut lrt_pool,
    out: *mut *mut lrt_pool_section,
) -> lrt_status {
    ffi_status!({
        let out = OutPtr::new(out, "out")?;
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        let handle = match pool::begin_section(pool)? {
            Some(section) => try_into_handle(lrt_pool_section(section))?,
            None => std::ptr::null_mut(),
        };
        // SAFETY: checked non-NULL; the caller passes writable storage.
        unsafe { out.write(handle) };
        Ok(())
    })
}

/// Ends a section from `lrt_pool_section_begin` and frees it; NULL does
/// nothing. Must be called on the thread that began the section; on
/// another thread it does nothing and records `LRT_ERR_STATE` for
/// `lrt_last_error` (the section stays open and the handle valid). After
/// the pool was destroyed it only frees the handle.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_section_end(section: *mut lrt_pool_section) {
    ffi_value!((), {
        if section.is_null() {
            return Ok(());
        }
        // SAFETY: non-NULL, a live handle from lrt_pool_section_begin.
        unsafe { &mut *section }.0.end()?;
        // SAFETY: ended above; the handle is not used again.
        unsafe { drop_handle(section) };
        Ok(())
    })
}

/// Starts (or restarts) profiling `pool`: `lrt_pool_stop_profiling`
/// reports what each thread did from now on. NULL pool:
/// `LRT_ERR_INVALID_ARGUMENT`. A pool inherited across fork():
/// `LRT_ERR_STATE`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_start_profiling(pool: *mut lrt_pool) -> lrt_status {
    ffi_status!({
        // SAFETY: NULL (rejected) or a live pool.
        let pool = unsafe { arg_ref(pool, "pool")? };
        let _call = pool.0.enter_call()?;
        pool.0.start_profiling()
    })
}

/// Stops profiling and writes to `*json_out` a NUL-terminated JSON string
/// with the figures of each thread since `lrt_pool_start_profiling`
/// (schema in docs/POOL.md: blocks run, tasks, steals, spin iterations,
/// spin yields, parks and nanoseconds in loops per worker; blocks, loops
/// and nanoseconds for the calling threads together). The caller owns the
/// string and frees it with `lrt_string_free`. Profiling not started:
/// `LRT_ERR_STATE`, `*json_out` untouched.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_stop_profiling(
    pool: *mut lrt_pool,
    json_out: *mut *mut c_char,
) -> lrt_status {
    ffi_status!({
        let out = OutPtr::new(json_out, "json_out")?;
        // SAFETY: NULL (rejected) or a live pool.
        let pool = unsafe { arg_ref(pool, "pool")? };
        let _call = pool.0.enter_call()?;
        // The report was reserved with room for the NUL: no allocation here.
        let json = pool.0.stop_profiling()?;
        let json = CString::new(json).map_err(|_| Error::internal("NUL in profiling report"))?;
        // SAFETY: checked non-NULL; the caller passes writable storage.
        unsafe { out.write(json.into_raw()) };
        Ok(())
    })
}

/// Frees a string leanrt returned (`lrt_pool_stop_profiling`); NULL does
/// nothing.
#[no_mangle]
pub unsafe extern "C" fn lrt_string_free(s: *mut c_char) {
    ffi_value!((), {
        if !s.is_null() {
            // SAFETY: a string from CString::into_raw in leanrt, freed once.
            drop(unsafe { CString::from_raw(s) });
        }
        Ok(())
    })
}

/// Degree of parallelism (thread count, times 4 on hybrid CPUs); 1 for
/// NULL.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_degree_of_parallelism(pool: *const lrt_pool) -> c_int {
    ffi_value!(1, {
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        Ok(pool::degree_of_parallelism(pool))
    })
}

/// 1 if loops may run in parallel (degree of parallelism > 1), else 0.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_should_parallelize(pool: *const lrt_pool) -> c_int {
    ffi_value!(0, {
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        Ok(c_int::from(pool::should_parallelize(pool)))
    })
}

/// Worker threads (ONNX Runtime's NumThreads): thread count - 1; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_num_threads(pool: *const lrt_pool) -> c_int {
    ffi_value!(0, {
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        Ok(pool.map_or(0, ThreadPool::num_threads))
    })
}

/// 0 .. lrt_pool_num_threads() - 1 when called on a worker thread of
/// `pool`, -1 on any other thread (and for NULL).
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_current_thread_id(pool: *const lrt_pool) -> c_int {
    ffi_value!(-1, {
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        Ok(pool.map_or(-1, ThreadPool::current_thread_id))
    })
}

/// A request starts (ONNX Runtime's spinning switch): restores the
/// configured spin policy and wakes sleeping workers at once (the caller
/// does not wait for them), so they are spinning when the request's first
/// loop comes. Calls are counted: spinning stays on until each has been
/// matched by `lrt_pool_disable_spinning`. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_enable_spinning(pool: *mut lrt_pool) {
    ffi_value!((), {
        // SAFETY: NULL or a live pool.
        if let (Some(p), _call) = unsafe { pool_arg(pool) }? {
            p.enable_spinning();
        }
        Ok(())
    })
}

/// A request ends: once every `lrt_pool_enable_spinning` has been matched
/// (or when there was none), spinning workers go to sleep at once and idle
/// workers sleep without spinning until the next
/// `lrt_pool_enable_spinning`. Extra calls are harmless. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_disable_spinning(pool: *mut lrt_pool) {
    ffi_value!((), {
        // SAFETY: NULL or a live pool.
        if let (Some(p), _call) = unsafe { pool_arg(pool) }? {
            p.disable_spinning();
        }
        Ok(())
    })
}

/// Writes the pool's counters to `*out` (all zero for a NULL pool). Named
/// `_get_stats` because C does not allow a function and the struct
/// `lrt_pool_stats` to share a name.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_get_stats(
    pool: *const lrt_pool,
    out: *mut lrt_pool_stats,
) -> lrt_status {
    ffi_status!({
        let out = OutPtr::new(out, "out")?;
        // SAFETY: NULL or a live pool.
        let (pool, _call) = unsafe { pool_arg(pool) }?;
        let stats = pool.map_or_else(lrt_pool_stats::default, ThreadPool::stats);
        // SAFETY: checked non-NULL; the caller passes writable storage.
        unsafe { out.write(stats) };
        Ok(())
    })
}
