//! The thread pool's C-visible plain data, under the names C sees: the
//! limits, the config keys, the counters, the cost of an iteration, the loop-body and task
//! function types and the custom-thread callback types. This file is the
//! one definition (the core uses these types directly; `src/ffi/pool`
//! re-exports them), and cbindgen reads it for the header, so each doc
//! comment here is written for C readers.
#![allow(non_camel_case_types)]
use std::ffi::{c_int, c_void};

/// Most threads a pool may have (`lrt_pool_options_set_num_threads`).
pub const LRT_POOL_MAX_THREADS: c_int = 1024;
/// Largest spin budget in microseconds (`lrt_pool_options_set_spin_duration_us`), 10 s.
pub const LRT_POOL_MAX_SPIN_US: c_int = 10_000_000;
/// Largest backoff cap (`lrt_pool_options_set_spin_backoff_max`); larger values are capped to it.
pub const LRT_POOL_MAX_BACKOFF: c_int = 64;

/// lrt_pool_options_set_config key, ONNX Runtime's session config key of
/// the same name (as are the next five): "0" or "1", as
/// lrt_pool_options_set_spin_control.
pub const LRT_POOL_KEY_ALLOW_SPINNING: &str = "session.intra_op.allow_spinning";
/// lrt_pool_options_set_config key, ONNX Runtime's: an integer, as
/// lrt_pool_options_set_spin_duration_us.
pub const LRT_POOL_KEY_SPIN_DURATION_US: &str = "session.intra_op.spin_duration_us";
/// lrt_pool_options_set_config key, ONNX Runtime's: an integer, as
/// lrt_pool_options_set_spin_backoff_max.
pub const LRT_POOL_KEY_SPIN_BACKOFF_MAX: &str = "session.intra_op.spin_backoff_max";
/// lrt_pool_options_set_config key, ONNX Runtime's: an integer, as
/// lrt_pool_options_set_dynamic_block_base.
pub const LRT_POOL_KEY_DYNAMIC_BLOCK_BASE: &str = "session.dynamic_block_base";
/// lrt_pool_options_set_config key, ONNX Runtime's: an affinity string, as
/// lrt_pool_options_set_affinity.
pub const LRT_POOL_KEY_THREAD_AFFINITIES: &str = "session.intra_op_thread_affinities";
/// lrt_pool_options_set_config key, ONNX Runtime's: "0" (the default) or
/// "1": workers spin only while a loop or a request is in progress
/// (docs/POOL.md, "Spinning").
pub const LRT_POOL_KEY_FORCE_SPINNING_STOP: &str = "session.force_spinning_stop";
/// lrt_pool_options_set_config key, leanrt's own (ONNX Runtime has none):
/// "1" or "0": the spin budget follows the measured gaps between loops,
/// and for a caller whose requests come on a steady cadence idle workers
/// wake on a timer shortly before the next one is due (docs/POOL.md,
/// "Spinning"). Not set: on with the legacy budget (spin_duration_us -1,
/// the default), off with a budget in microseconds.
pub const LRT_POOL_KEY_ADAPTIVE_SPIN: &str = "leanrt.intra_op.adaptive_spin";
/// lrt_pool_options_set_config key, leanrt's own (ONNX Runtime has none):
/// "1" (the default) or "0": the pool takes part in the process-wide CPU
/// share. With "1", a loop invites helpers only for the CPUs that the
/// threads inside loops of taking-part pools (callers and their helpers,
/// across every such pool in the process; a caller also for 65.5-131 µs
/// after its loop ends) leave free, and runs inline on
/// its caller when there is none; idle workers stop spinning while those
/// threads occupy every CPU online. "0": helpers are invited whatever
/// other pools and callers do (docs/POOL.md, "Many callers").
pub const LRT_POOL_KEY_CPU_BUDGET: &str = "leanrt.intra_op.cpu_budget";

/// A pool's counters, summed over its worker threads (`lrt_pool_get_stats`).
#[repr(C)]
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

/// The cost of one loop iteration (ONNX Runtime's TensorOpCost): bytes read,
/// bytes written and compute cycles per iteration.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct lrt_tensor_op_cost {
    /// Bytes read per iteration.
    pub bytes_loaded: f64,
    /// Bytes written per iteration.
    pub bytes_stored: f64,
    /// Compute cycles per iteration.
    pub compute_cycles: f64,
}

/// Loop body over a block of indices `[first, last)`.
pub type lrt_range_fn = Option<unsafe extern "C" fn(ctx: *mut c_void, first: isize, last: isize)>;
/// Loop body over one index.
pub type lrt_index_fn = Option<unsafe extern "C" fn(ctx: *mut c_void, index: isize)>;
/// A scheduled task.
pub type lrt_task_fn = Option<unsafe extern "C" fn(ctx: *mut c_void)>;
/// The body of `lrt_kernel_parallel_for` (ONNX Runtime's KernelContext_ParallelFor).
pub type lrt_kernel_fn = Option<unsafe extern "C" fn(usr_data: *mut c_void, index: usize)>;

/// The function a custom thread must run once, with its parameter (ONNX
/// Runtime's OrtThreadWorkerFn).
pub type lrt_thread_worker_fn = Option<unsafe extern "C" fn(param: *mut c_void)>;

/// What a custom handle points to (never dereferenced by leanrt).
pub struct lrt_custom_thread_handle_t {
    _private: u8,
}

/// A custom thread's handle, as the create function returns it (ONNX
/// Runtime's OrtCustomThreadHandle).
pub type lrt_custom_thread_handle = *const lrt_custom_thread_handle_t;

/// Starts a thread that calls `worker(param)` once; returns its handle, or
/// NULL when no thread was started (ONNX Runtime's OrtCustomCreateThreadFn).
pub type lrt_custom_create_thread_fn = Option<
    unsafe extern "C" fn(
        options: *mut c_void,
        worker: lrt_thread_worker_fn,
        param: *mut c_void,
    ) -> lrt_custom_thread_handle,
>;

/// Waits until a thread made by the create function has finished (ONNX
/// Runtime's OrtCustomJoinThreadFn).
pub type lrt_custom_join_thread_fn = Option<unsafe extern "C" fn(handle: lrt_custom_thread_handle)>;
