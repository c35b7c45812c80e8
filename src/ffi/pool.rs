//! `lrt_pool_*`, `lrt_partition_work`, `lrt_kernel_parallel_for`,
//! `lrt_string_free`: the thread pool's C surface. Core: `crate::pool`.
//! Every function here checks its arguments, calls the core and maps its
//! error to a status; the pool's behaviour lives in the core.
//!
//! For C readers: a NULL `lrt_pool*` is a valid pool everywhere and runs
//! loops and tasks serially on the calling thread (ONNX Runtime's null
//! thread pool). Any thread may use a pool; only its destroy must not race
//! with other calls on it.
use super::boundary::{arg_mut, arg_ref, arg_str, drop_handle, into_handle, null_arg, OutPtr};
use super::status::lrt_status;
use crate::pool::{
    self, options, CustomCreateThreadFn, CustomJoinThreadFn, PoolOptions, PoolStats, SectionHandle,
    TensorOpCost, ThreadPool,
};
use crate::Error;
use std::ffi::{c_char, c_int, c_void, CString};

/// Most threads a pool may have (`lrt_pool_options_set_num_threads`).
pub const LRT_POOL_MAX_THREADS: c_int = 1024;
/// Largest spin budget in microseconds (`lrt_pool_options_set_spin_duration_us`), 10 s.
pub const LRT_POOL_MAX_SPIN_US: c_int = 10_000_000;
/// Largest backoff cap (`lrt_pool_options_set_spin_backoff_max`); larger values are capped to it.
pub const LRT_POOL_MAX_BACKOFF: c_int = 64;

const _: () = assert!(LRT_POOL_MAX_THREADS == options::MAX_THREADS);
const _: () = assert!(LRT_POOL_MAX_SPIN_US == options::MAX_SPIN_US);
const _: () = assert!(LRT_POOL_MAX_BACKOFF as u32 == pool::spin::MAX_BACKOFF);

/// Loop body over a block of indices `[first, last)`.
pub type RangeFn = Option<unsafe extern "C" fn(ctx: *mut c_void, first: isize, last: isize)>;
/// Loop body over one index.
pub type IndexFn = Option<unsafe extern "C" fn(ctx: *mut c_void, index: isize)>;
/// A scheduled task.
pub type TaskFn = Option<unsafe extern "C" fn(ctx: *mut c_void)>;
/// The body of `lrt_kernel_parallel_for` (ONNX Runtime's KernelContext_ParallelFor).
pub type KernelFn = Option<unsafe extern "C" fn(usr_data: *mut c_void, index: usize)>;

/// The cost of one loop iteration (ONNX Runtime's TensorOpCost): bytes read,
/// bytes written and compute cycles per iteration.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct lrt_tensor_op_cost {
    /// Bytes read per iteration.
    pub bytes_loaded: f64,
    /// Bytes written per iteration.
    pub bytes_stored: f64,
    /// Compute cycles per iteration.
    pub compute_cycles: f64,
}

impl From<lrt_tensor_op_cost> for TensorOpCost {
    fn from(c: lrt_tensor_op_cost) -> Self {
        TensorOpCost {
            bytes_loaded: c.bytes_loaded,
            bytes_stored: c.bytes_stored,
            compute_cycles: c.compute_cycles,
        }
    }
}

/// A pool's counters, summed over its worker threads (`lrt_pool_get_stats`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct lrt_pool_stats {
    /// Jobs run by worker threads (scheduled tasks and shares of loops;
    /// tasks run inline on a caller are not counted).
    pub tasks_run: u64,
    /// Jobs a worker took from another worker's queues.
    pub steals: u64,
    /// Spin iterations (polls for work while spinning).
    pub spin_iterations: u64,
    /// Times a worker went to sleep.
    pub parks: u64,
    /// Times a sleeping worker was woken.
    pub wakeups: u64,
    /// Workers asleep right now.
    pub workers_asleep: u64,
}

impl From<PoolStats> for lrt_pool_stats {
    fn from(s: PoolStats) -> Self {
        lrt_pool_stats {
            tasks_run: s.tasks_run,
            steals: s.steals,
            spin_iterations: s.spin_iterations,
            parks: s.parks,
            wakeups: s.wakeups,
            workers_asleep: s.workers_asleep,
        }
    }
}

/// Pool options (`lrt_pool_options_create`); opaque.
#[allow(non_camel_case_types)]
pub struct lrt_pool_options(PoolOptions);

impl lrt_pool_options {
    /// The options behind a C handle (for Rust code that inspects them).
    pub fn options(&self) -> &PoolOptions {
        &self.0
    }
}

/// A thread pool (`lrt_pool_create`); opaque. NULL is a valid pool that
/// runs everything on the calling thread.
#[allow(non_camel_case_types)]
pub struct lrt_pool(ThreadPool);

/// An open parallel section (`lrt_pool_section_begin`); opaque.
#[allow(non_camel_case_types)]
pub struct lrt_pool_section(SectionHandle);

/// The function a custom thread must run once, with its parameter (ONNX
/// Runtime's OrtThreadWorkerFn).
#[allow(non_camel_case_types)]
pub type lrt_thread_worker_fn = Option<unsafe extern "C" fn(param: *mut c_void)>;

/// What a custom handle points to (never dereferenced by leanrt).
#[allow(non_camel_case_types)]
pub struct lrt_custom_thread_handle_t {
    _private: u8,
}

/// A custom thread's handle, as the create function returns it (ONNX
/// Runtime's OrtCustomThreadHandle).
#[allow(non_camel_case_types)]
pub type lrt_custom_thread_handle = *const lrt_custom_thread_handle_t;

/// Starts a thread that calls `worker(param)` once; returns its handle, or
/// NULL when no thread was started (ONNX Runtime's OrtCustomCreateThreadFn).
#[allow(non_camel_case_types)]
pub type lrt_custom_create_thread_fn = Option<
    unsafe extern "C" fn(
        options: *mut c_void,
        worker: lrt_thread_worker_fn,
        param: *mut c_void,
    ) -> lrt_custom_thread_handle,
>;

/// Waits until a thread made by the create function has finished (ONNX
/// Runtime's OrtCustomJoinThreadFn).
#[allow(non_camel_case_types)]
pub type lrt_custom_join_thread_fn = Option<unsafe extern "C" fn(handle: lrt_custom_thread_handle)>;

/// A pool handle that may be NULL (= serial).
///
/// # Safety
/// `pool` is NULL or a live pool from `lrt_pool_create`.
unsafe fn pool_arg<'a>(pool: *const lrt_pool) -> Option<&'a ThreadPool> {
    // SAFETY: NULL or valid per the caller's contract.
    unsafe { pool.as_ref() }.map(|p| &p.0)
}

/// The caller's context pointer, to be passed back to its callbacks from
/// any thread (the caller promised they may run concurrently).
#[derive(Clone, Copy)]
struct Ctx(*mut c_void);
// SAFETY: the pointer is only handed back to the caller's own callbacks,
// which the C contract allows to run on any thread at the same time.
unsafe impl Send for Ctx {}
// SAFETY: as above; leanrt never dereferences it.
unsafe impl Sync for Ctx {}
impl Ctx {
    fn get(self) -> *mut c_void {
        self.0
    }
}

/// Creates pool options with ONNX Runtime's defaults (thread count 0 =
/// one per physical core, spinning allowed with the legacy budget, no
/// backoff, fixed blocks). On success `*out` owns them; free them with
/// `lrt_pool_options_destroy`. `out` NULL: `LRT_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_create(out: *mut *mut lrt_pool_options) -> lrt_status {
    ffi_status!("lrt_pool_options_create", {
        let out = OutPtr::new(out, "out")?;
        // SAFETY: checked non-NULL; the caller passes writable storage.
        unsafe { out.write(into_handle(lrt_pool_options(PoolOptions::default()))) };
        Ok(())
    })
}

/// Frees options made by `lrt_pool_options_create`; NULL does nothing.
/// Pools already created from them are not affected.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_destroy(opts: *mut lrt_pool_options) {
    ffi_value!("lrt_pool_options_destroy", (), {
        // SAFETY: NULL or a live handle from lrt_pool_options_create, not
        // used again by the caller.
        unsafe { drop_handle(opts) };
        Ok(())
    })
}

/// Sets an option by its ONNX Runtime session config key: `key` and
/// `value` are NUL-terminated strings (keys and value syntax in
/// docs/POOL.md). An unknown key, a malformed value or a NULL argument is
/// `LRT_ERR_INVALID_ARGUMENT`, and the options are unchanged.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_config(
    opts: *mut lrt_pool_options,
    key: *const c_char,
    value: *const c_char,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_config", {
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
/// physical core, 1 = no pool (`lrt_pool_create` gives NULL), n = n-1
/// worker threads plus the calling thread. Outside [0,
/// LRT_POOL_MAX_THREADS]: `LRT_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_num_threads(
    opts: *mut lrt_pool_options,
    n: c_int,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_num_threads", {
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
    ffi_status!("lrt_pool_options_set_spin_control", {
        // SAFETY: NULL (rejected) or live options.
        unsafe { arg_mut(opts, "opts")? }.0.set_spin_control(allow)
    })
}

/// Spin budget of an idle worker before it sleeps: -1 = the legacy 2^20
/// pause iterations, 0 = no spinning, > 0 = that many microseconds
/// (calibrated), at most LRT_POOL_MAX_SPIN_US.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_spin_duration_us(
    opts: *mut lrt_pool_options,
    us: c_int,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_spin_duration_us", {
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
    ffi_status!("lrt_pool_options_set_spin_backoff_max", {
        // SAFETY: NULL (rejected) or live options.
        unsafe { arg_mut(opts, "opts")? }
            .0
            .set_spin_backoff_max(max)
    })
}

/// 0 = Eigen's fixed blocks; > 0 = ONNX Runtime's dynamic blocks of
/// remaining / (degree of parallelism * base). Negative:
/// `LRT_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_dynamic_block_base(
    opts: *mut lrt_pool_options,
    base: c_int,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_dynamic_block_base", {
        // SAFETY: NULL (rejected) or live options.
        unsafe { arg_mut(opts, "opts")? }
            .0
            .set_dynamic_block_base(base)
    })
}

/// Worker affinities in ONNX Runtime's format, a NUL-terminated string
/// such as "1,2;3-4" (1-based processor ids, one `;`-separated entry per
/// worker). Checked against the process's CPUs when the pool is created.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_affinity(
    opts: *mut lrt_pool_options,
    affinity: *const c_char,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_affinity", {
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
    ffi_status!("lrt_pool_options_set_denormal_as_zero", {
        // SAFETY: NULL (rejected) or live options.
        let opts = &mut unsafe { arg_mut(opts, "opts")? }.0;
        opts.set_denormal_as_zero(options::flag(on, "on")?);
        Ok(())
    })
}

/// Worker thread name prefix: a non-empty NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_name(
    opts: *mut lrt_pool_options,
    name: *const c_char,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_name", {
        // SAFETY: each is NULL (rejected) or valid as the contract says.
        let (opts, name) = unsafe { (&mut arg_mut(opts, "opts")?.0, arg_str(name, "name")?) };
        opts.set_name(name)
    })
}

/// Stack size in bytes of every worker thread leanrt starts; 0 = the
/// platform's default. Below the platform minimum (PTHREAD_STACK_MIN):
/// `LRT_ERR_INVALID_ARGUMENT`, options unchanged. A size the system cannot
/// provide makes `lrt_pool_create` fail with `LRT_ERR_NO_MEMORY`. With
/// custom thread functions the host's create function chooses the stacks
/// and this setting is not used.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_options_set_stack_size(
    opts: *mut lrt_pool_options,
    bytes: usize,
) -> lrt_status {
    ffi_status!("lrt_pool_options_set_stack_size", {
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
    ffi_status!("lrt_pool_options_set_custom_thread_fns", {
        // SAFETY: NULL (rejected) or live options.
        let opts = &mut unsafe { arg_mut(opts, "opts")? }.0;
        // SAFETY: the C and the core signatures differ only in the type the
        // handle pointer points to (opaque on both sides, never
        // dereferenced), so the function pointers have the same ABI.
        let (create, join) = unsafe {
            (
                std::mem::transmute::<lrt_custom_create_thread_fn, CustomCreateThreadFn>(create),
                std::mem::transmute::<lrt_custom_join_thread_fn, CustomJoinThreadFn>(join),
            )
        };
        // SAFETY: the C caller accepts the contract above, which is the
        // core's contract for these functions.
        unsafe { opts.set_custom_thread_fns(create, create_options, join) }
    })
}

/// Creates a pool from `opts` (which stay owned by the caller). On success
/// `*out` is the pool, or NULL when the resolved thread count is 1 (a NULL
/// pool runs everything on the caller). Failure to start a worker thread:
/// `LRT_ERR_NO_MEMORY`, `*out` untouched.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_create(
    opts: *const lrt_pool_options,
    out: *mut *mut lrt_pool,
) -> lrt_status {
    ffi_status!("lrt_pool_create", {
        let out = OutPtr::new(out, "out")?;
        // SAFETY: NULL (rejected) or live options.
        let opts = unsafe { arg_ref(opts, "opts")? };
        let handle =
            ThreadPool::create(&opts.0)?.map_or(std::ptr::null_mut(), |p| into_handle(lrt_pool(p)));
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
/// destroyed from elsewhere. In a forked child, destroying an inherited
/// pool returns at once (its threads do not exist there; see docs/POOL.md).
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_destroy(pool: *mut lrt_pool) {
    ffi_value!("lrt_pool_destroy", (), {
        // SAFETY: NULL or a live pool, per the contract.
        if let Some(p) = unsafe { pool_arg(pool) } {
            p.check_destroy_here()?;
        }
        // SAFETY: NULL or a handle from lrt_pool_create, not used again.
        unsafe { drop_handle(pool) };
        Ok(())
    })
}

/// ONNX Runtime's TryParallelFor with `cost_per_unit` compute cycles per
/// iteration: calls `fn(ctx, first, last)` over blocks that cover [0,
/// total) exactly once, on the calling thread and the workers; returns when
/// all are done. `fn` must be safe to call from several threads at once.
/// NULL `fn`: nothing runs, and the error is recorded for `lrt_last_error`.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_try_parallel_for(
    pool: *mut lrt_pool,
    total: isize,
    cost_per_unit: f64,
    func: RangeFn,
    ctx: *mut c_void,
) {
    ffi_value!("lrt_pool_try_parallel_for", (), {
        let f = func.ok_or_else(|| null_arg("fn"))?;
        let ctx = Ctx(ctx);
        // SAFETY: NULL or a live pool.
        let pool = unsafe { pool_arg(pool) };
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
    func: RangeFn,
    ctx: *mut c_void,
) {
    ffi_value!("lrt_pool_try_parallel_for_cost", (), {
        // SAFETY: NULL (rejected) or a valid lrt_tensor_op_cost.
        let cost = TensorOpCost::from(*unsafe { arg_ref(cost, "cost")? });
        let f = func.ok_or_else(|| null_arg("fn"))?;
        let ctx = Ctx(ctx);
        // SAFETY: NULL or a live pool.
        let pool = unsafe { pool_arg(pool) };
        // SAFETY: the caller allows `f` to run concurrently with `ctx`.
        pool::try_parallel_for_cost(pool, total, &cost, &|a, b| unsafe { f(ctx.get(), a, b) });
        Ok(())
    })
}

/// ONNX Runtime's TrySimpleParallelFor: `fn(ctx, i)` once for every i in
/// [0, total), from several threads at once.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_try_simple_parallel_for(
    pool: *mut lrt_pool,
    total: isize,
    func: IndexFn,
    ctx: *mut c_void,
) {
    ffi_value!("lrt_pool_try_simple_parallel_for", (), {
        let f = func.ok_or_else(|| null_arg("fn"))?;
        let ctx = Ctx(ctx);
        // SAFETY: NULL or a live pool.
        let pool = unsafe { pool_arg(pool) };
        // SAFETY: the caller allows `f` to run concurrently with `ctx`.
        pool::try_simple_parallel_for(pool, total, &|i| unsafe { f(ctx.get(), i) });
        Ok(())
    })
}

/// ONNX Runtime's TryBatchParallelFor: [0, total) split into `num_batches`
/// batches as `lrt_partition_work` splits it (<= 0: the degree of
/// parallelism; never more batches than items), each batch calling
/// `fn(ctx, i)` for its indices.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_try_batch_parallel_for(
    pool: *mut lrt_pool,
    total: isize,
    func: IndexFn,
    ctx: *mut c_void,
    num_batches: isize,
) {
    ffi_value!("lrt_pool_try_batch_parallel_for", (), {
        let f = func.ok_or_else(|| null_arg("fn"))?;
        let ctx = Ctx(ctx);
        // SAFETY: NULL or a live pool.
        let pool = unsafe { pool_arg(pool) };
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
    ffi_status!("lrt_partition_work", {
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

/// ONNX Runtime's Schedule: runs `fn(ctx)` on a worker thread; on the
/// calling thread instead when `pool` is NULL or the chosen queue is full.
/// Destroying the pool runs every task still queued.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_schedule(pool: *mut lrt_pool, func: TaskFn, ctx: *mut c_void) {
    ffi_value!("lrt_pool_schedule", (), {
        let f = func.ok_or_else(|| null_arg("fn"))?;
        let ctx = Ctx(ctx);
        // SAFETY: NULL or a live pool.
        let pool = unsafe { pool_arg(pool) };
        // SAFETY: the caller allows `f(ctx)` to run on any thread.
        pool::schedule(pool, Box::new(move || unsafe { f(ctx.get()) }));
        Ok(())
    })
}

/// ONNX Runtime's KernelContext_ParallelFor: `fn(usr_data, i)` for every i
/// in [0, total); `num_batch` 0 = one index at a time
/// (TrySimpleParallelFor), else TryBatchParallelFor with `num_batch`
/// batches. NULL `fn`, or a count above PTRDIFF_MAX:
/// `LRT_ERR_INVALID_ARGUMENT`, nothing runs.
#[no_mangle]
pub unsafe extern "C" fn lrt_kernel_parallel_for(
    pool: *mut lrt_pool,
    func: KernelFn,
    total: usize,
    num_batch: usize,
    usr_data: *mut c_void,
) -> lrt_status {
    ffi_status!("lrt_kernel_parallel_for", {
        let f = func.ok_or_else(|| null_arg("fn"))?;
        let ctx = Ctx(usr_data);
        // SAFETY: NULL or a live pool.
        let pool = unsafe { pool_arg(pool) };
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
    ffi_status!("lrt_pool_section_begin", {
        let out = OutPtr::new(out, "out")?;
        // SAFETY: NULL or a live pool.
        let handle = match pool::begin_section(unsafe { pool_arg(pool) })? {
            Some(section) => into_handle(lrt_pool_section(section)),
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
    ffi_value!("lrt_pool_section_end", (), {
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
    ffi_status!("lrt_pool_start_profiling", {
        // SAFETY: NULL (rejected) or a live pool.
        unsafe { arg_ref(pool, "pool")? }.0.start_profiling()
    })
}

/// Stops profiling and writes to `*json_out` a NUL-terminated JSON string
/// with the figures of each thread since `lrt_pool_start_profiling`
/// (schema in docs/POOL.md: blocks run, tasks, steals, spin iterations,
/// parks and nanoseconds in loops per worker; blocks, loops and
/// nanoseconds for the calling threads together). The caller owns the
/// string and frees it with `lrt_string_free`. Profiling not started:
/// `LRT_ERR_STATE`, `*json_out` untouched.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_stop_profiling(
    pool: *mut lrt_pool,
    json_out: *mut *mut c_char,
) -> lrt_status {
    ffi_status!("lrt_pool_stop_profiling", {
        let out = OutPtr::new(json_out, "json_out")?;
        // SAFETY: NULL (rejected) or a live pool.
        let pool = unsafe { arg_ref(pool, "pool")? };
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
    ffi_value!("lrt_string_free", (), {
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
    ffi_value!("lrt_pool_degree_of_parallelism", 1, {
        // SAFETY: NULL or a live pool.
        let pool = unsafe { pool_arg(pool) };
        Ok(pool::degree_of_parallelism(pool))
    })
}

/// 1 if loops may run in parallel (degree of parallelism > 1), else 0.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_should_parallelize(pool: *const lrt_pool) -> c_int {
    ffi_value!("lrt_pool_should_parallelize", 0, {
        // SAFETY: NULL or a live pool.
        let pool = unsafe { pool_arg(pool) };
        Ok(c_int::from(pool::should_parallelize(pool)))
    })
}

/// Worker threads (ONNX Runtime's NumThreads): thread count - 1; 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_num_threads(pool: *const lrt_pool) -> c_int {
    ffi_value!("lrt_pool_num_threads", 0, {
        // SAFETY: NULL or a live pool.
        let pool = unsafe { pool_arg(pool) };
        Ok(pool.map_or(0, ThreadPool::num_threads))
    })
}

/// 0 .. lrt_pool_num_threads() - 1 when called on a worker thread of
/// `pool`, -1 on any other thread (and for NULL).
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_current_thread_id(pool: *const lrt_pool) -> c_int {
    ffi_value!("lrt_pool_current_thread_id", -1, {
        // SAFETY: NULL or a live pool.
        let pool = unsafe { pool_arg(pool) };
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
    ffi_value!("lrt_pool_enable_spinning", (), {
        // SAFETY: NULL or a live pool.
        if let Some(p) = unsafe { pool_arg(pool) } {
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
    ffi_value!("lrt_pool_disable_spinning", (), {
        // SAFETY: NULL or a live pool.
        if let Some(p) = unsafe { pool_arg(pool) } {
            p.disable_spinning();
        }
        Ok(())
    })
}

/// Writes the pool's counters to `*out` (all zero for a NULL pool).
/// The natural name lrt_pool_stats is the struct's; C does
/// not allow a type and a function with one name, hence lrt_pool_get_stats.
#[no_mangle]
pub unsafe extern "C" fn lrt_pool_get_stats(
    pool: *const lrt_pool,
    out: *mut lrt_pool_stats,
) -> lrt_status {
    ffi_status!("lrt_pool_get_stats", {
        let out = OutPtr::new(out, "out")?;
        // SAFETY: NULL or a live pool.
        let stats = unsafe { pool_arg(pool) }.map_or_else(PoolStats::default, ThreadPool::stats);
        // SAFETY: checked non-NULL; the caller passes writable storage.
        unsafe { out.write(stats.into()) };
        Ok(())
    })
}
