/* leanrt C++ wrapper (hand-written; the C API is in leanrt.h, generated).
 * The full contract is docs/CPP.md.
 *
 * - leanrt::ThreadPool owns an lrt_pool (a pool of 1 thread holds a NULL
 *   pool, which runs everything on the caller) and offers ONNX Runtime's
 *   static helper signatures, ThreadPool::ParallelSection,
 *   ThreadPool::PartitionWork / WorkInfo and StartProfiling / StopProfiling.
 * - leanrt::PoolOptions, leanrt::HostApi, leanrt::RuntimeMaker and
 *   leanrt::StringPtr own what the C API hands out: C++ code never calls a
 *   *_destroy / *_release / *_free function by hand. All are movable and
 *   not copyable.
 * - A failed leanrt call throws leanrt::Error (the lrt_status and the text of
 *   lrt_last_error). An exception thrown by a loop body is caught on the
 *   thread that ran the body and rethrown on the caller after the whole loop
 *   has finished (the first one wins).
 *
 * With LEANRT_ORT_COMPAT defined before including this header, code written
 * against ORT's onnxruntime::concurrency::ThreadPool compiles unchanged:
 *
 *   #define LEANRT_ORT_COMPAT
 *   #include <leanrt.hpp>
 *   using onnxruntime::concurrency::ThreadPool;
 *   ThreadPool tp(4);
 *   {
 *     ThreadPool::ParallelSection ps(&tp);
 *     ThreadPool::TryParallelFor(&tp, n, onnxruntime::TensorOpCost{8, 8, 40}, fn);
 *   }
 *
 * onnxruntime::concurrency::ThreadPool is then a class derived from
 * leanrt::ThreadPool and onnxruntime::TensorOpCost a struct, so ORT's
 * forward declarations (`namespace onnxruntime { namespace concurrency {
 * class ThreadPool; } }`, MLAS's MLAS_THREADPOOL, `struct TensorOpCost;`)
 * compile before or after this header. */
#ifndef LEANRT_HPP
#define LEANRT_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "leanrt.h"

namespace leanrt {

/** ORT's TensorOpCost: bytes_loaded, bytes_stored, compute_cycles. */
using TensorOpCost = ::lrt_tensor_op_cost;

/** A failed leanrt call: the status and lrt_last_error's message. */
class Error : public std::runtime_error {
 public:
  Error(lrt_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  lrt_status status() const noexcept { return status_; }

 private:
  lrt_status status_;
};

namespace detail {

/* Throws leanrt::Error for anything but LRT_OK, with this thread's
 * lrt_last_error text. */
inline void check(lrt_status status) {
  if (status != LRT_OK) {
    std::string msg(lrt_last_error(nullptr, 0) + 1, '\0');
    const std::size_t len = lrt_last_error(&msg[0], msg.size());
    msg.resize(len < msg.size() ? len : msg.size() - 1);
    throw Error(status, msg);
  }
}

/* Keeps the first exception thrown by any loop body. */
class ExceptionSlot {
 public:
  void capture() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::current_exception();
    failed_.store(true, std::memory_order_relaxed);
  }
  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  void rethrow() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

template <typename F>
struct LoopCtx {
  F *fn;
  ExceptionSlot slot;
};

/* C callbacks: run the body, never let an exception cross into leanrt. Once
 * a body threw, the remaining blocks are skipped. */
template <typename F>
void range_trampoline(void *ctx, std::ptrdiff_t first, std::ptrdiff_t last) {
  auto *c = static_cast<LoopCtx<F> *>(ctx);
  if (c->slot.failed()) return;
  try {
    (*c->fn)(first, last);
  } catch (...) {
    c->slot.capture();
  }
}

template <typename F>
void index_trampoline(void *ctx, std::ptrdiff_t i) {
  auto *c = static_cast<LoopCtx<F> *>(ctx);
  if (c->slot.failed()) return;
  try {
    (*c->fn)(i);
  } catch (...) {
    c->slot.capture();
  }
}

/* A scheduled task runs on a worker with nobody to rethrow to: an escaping
 * exception terminates the process, as it would from a std::thread. */
inline void task_trampoline(void *ctx) noexcept {
  std::unique_ptr<std::function<void()>> fn(static_cast<std::function<void()> *>(ctx));
  (*fn)();
}

}  // namespace detail

/** Frees a string leanrt handed out (lrt_string_free). */
struct StringFree {
  void operator()(char *s) const noexcept { lrt_string_free(s); }
};
/** Owns a string leanrt handed out, e.g. lrt_pool_stop_profiling's JSON. */
using StringPtr = std::unique_ptr<char, StringFree>;

/** Owns an lrt_pool_options (movable, not copyable). Setters throw
 * leanrt::Error when leanrt rejects the value; the options are then
 * unchanged. Setters return *this, so they chain. */
class PoolOptions {
 public:
  /** ONNX Runtime's defaults. */
  PoolOptions() { detail::check(lrt_pool_options_create(&opts_)); }
  ~PoolOptions() { lrt_pool_options_destroy(opts_); }
  PoolOptions(PoolOptions &&other) noexcept : opts_(other.opts_) { other.opts_ = nullptr; }
  PoolOptions &operator=(PoolOptions &&other) noexcept {
    if (this != &other) {
      lrt_pool_options_destroy(opts_);
      opts_ = other.opts_;
      other.opts_ = nullptr;
    }
    return *this;
  }
  PoolOptions(const PoolOptions &) = delete;
  PoolOptions &operator=(const PoolOptions &) = delete;

  /** A configuration key with ORT's name and value syntax. */
  PoolOptions &SetConfig(const std::string &key, const std::string &value) {
    detail::check(lrt_pool_options_set_config(opts_, key.c_str(), value.c_str()));
    return *this;
  }
  /** Degree of parallelism (0: one per physical core). */
  PoolOptions &SetNumThreads(int n) {
    detail::check(lrt_pool_options_set_num_threads(opts_, n));
    return *this;
  }
  PoolOptions &SetSpinControl(bool allow) {
    detail::check(lrt_pool_options_set_spin_control(opts_, allow ? 1 : 0));
    return *this;
  }
  PoolOptions &SetSpinDurationUs(int us) {
    detail::check(lrt_pool_options_set_spin_duration_us(opts_, us));
    return *this;
  }
  PoolOptions &SetSpinBackoffMax(int max) {
    detail::check(lrt_pool_options_set_spin_backoff_max(opts_, max));
    return *this;
  }
  PoolOptions &SetDynamicBlockBase(int base) {
    detail::check(lrt_pool_options_set_dynamic_block_base(opts_, base));
    return *this;
  }
  PoolOptions &SetAffinity(const std::string &affinity) {
    detail::check(lrt_pool_options_set_affinity(opts_, affinity.c_str()));
    return *this;
  }
  PoolOptions &SetDenormalAsZero(bool on) {
    detail::check(lrt_pool_options_set_denormal_as_zero(opts_, on ? 1 : 0));
    return *this;
  }
  PoolOptions &SetName(const std::string &name) {
    detail::check(lrt_pool_options_set_name(opts_, name.c_str()));
    return *this;
  }
  PoolOptions &SetCustomThreadFns(lrt_custom_create_thread_fn create, void *create_options,
                                  lrt_custom_join_thread_fn join) {
    detail::check(lrt_pool_options_set_custom_thread_fns(opts_, create, create_options, join));
    return *this;
  }
  /** Stack size in bytes of every worker thread leanrt creates (ORT's
   * ThreadOptions::stack_size); 0 keeps the platform default. */
  PoolOptions &SetStackSize(std::size_t bytes) {
    detail::check(lrt_pool_options_set_stack_size(opts_, bytes));
    return *this;
  }

  /** The C handle (NULL after a move). */
  lrt_pool_options *get() noexcept { return opts_; }
  const lrt_pool_options *get() const noexcept { return opts_; }
  /** Gives up ownership: the caller destroys the handle. */
  lrt_pool_options *release() noexcept {
    lrt_pool_options *o = opts_;
    opts_ = nullptr;
    return o;
  }

 private:
  lrt_pool_options *opts_ = nullptr;
};

/** An intra-op thread pool with ONNX Runtime's semantics (movable, not
 * copyable). */
class ThreadPool {
 public:
  /** ORT's WorkInfo: the batch [start, end). */
  struct WorkInfo {
    std::ptrdiff_t start{0};
    std::ptrdiff_t end{0};
  };

  /** ORT's multi-loop parallel section (RAII, not copyable, not movable).
   * Loops this thread runs on `tp` while the section is open reuse one team
   * of workers. A NULL pool or a pool of one thread makes it a no-op.
   * Throws leanrt::Error when leanrt refuses the section (e.g. nested in
   * another section of this thread). */
  class ParallelSection {
   public:
    explicit ParallelSection(ThreadPool *tp) {
      lrt_pool *pool = ThreadPool::handle(tp);
      if (pool != nullptr) detail::check(lrt_pool_section_begin(pool, &section_));
    }
    ~ParallelSection() {
      if (section_ != nullptr) lrt_pool_section_end(section_);
    }
    ParallelSection(const ParallelSection &) = delete;
    ParallelSection &operator=(const ParallelSection &) = delete;
    ParallelSection(ParallelSection &&) = delete;
    ParallelSection &operator=(ParallelSection &&) = delete;

   private:
    lrt_pool_section *section_ = nullptr;
  };

  /** A pool of `num_threads` (0: one per physical core; 1: no worker
   * threads, everything runs on the caller). */
  explicit ThreadPool(int num_threads) {
    PoolOptions opts;
    opts.SetNumThreads(num_threads);
    detail::check(lrt_pool_create(opts.get(), &pool_));
  }
  /** A pool from options (read, not taken over). */
  explicit ThreadPool(const PoolOptions &opts) {
    detail::check(lrt_pool_create(opts.get(), &pool_));
  }
  /** A pool from C options (read, not taken over; destroy them yourself). */
  explicit ThreadPool(const lrt_pool_options *opts) { detail::check(lrt_pool_create(opts, &pool_)); }
  virtual ~ThreadPool() { lrt_pool_destroy(pool_); }
  ThreadPool(ThreadPool &&other) noexcept : pool_(other.pool_) { other.pool_ = nullptr; }
  ThreadPool &operator=(ThreadPool &&other) noexcept {
    if (this != &other) {
      lrt_pool_destroy(pool_);
      pool_ = other.pool_;
      other.pool_ = nullptr;
    }
    return *this;
  }
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /** The C handle (NULL for a one-thread pool and after a move). */
  lrt_pool *get() const noexcept { return pool_; }

  /** Worker threads (thread count - 1). */
  int NumThreads() const noexcept { return lrt_pool_num_threads(pool_); }
  /** 0..NumThreads()-1 on a worker of this pool, -1 elsewhere. */
  int CurrentThreadId() const noexcept { return lrt_pool_current_thread_id(pool_); }
  void EnableSpinning() noexcept { lrt_pool_enable_spinning(pool_); }
  void DisableSpinning() noexcept { lrt_pool_disable_spinning(pool_); }
  lrt_pool_stats Stats() const {
    lrt_pool_stats s{};
    detail::check(lrt_pool_get_stats(pool_, &s));
    return s;
  }

  /* ORT's member functions. */
  void ParallelFor(std::ptrdiff_t total, double cost_per_unit,
                   const std::function<void(std::ptrdiff_t, std::ptrdiff_t)> &fn) {
    TryParallelFor(this, total, cost_per_unit, fn);
  }
  void ParallelFor(std::ptrdiff_t total, const TensorOpCost &cost,
                   const std::function<void(std::ptrdiff_t, std::ptrdiff_t)> &fn) {
    TryParallelFor(this, total, cost, fn);
  }
  void SimpleParallelFor(std::ptrdiff_t total, const std::function<void(std::ptrdiff_t)> &fn) {
    TrySimpleParallelFor(this, total, fn);
  }
  void Schedule(std::function<void()> fn) { Schedule(this, std::move(fn)); }

  /* ORT's static helpers: a NULL `tp` runs serially on the caller. */
  static void TryParallelFor(ThreadPool *tp, std::ptrdiff_t total, double cost_per_unit,
                             const std::function<void(std::ptrdiff_t, std::ptrdiff_t)> &fn) {
    using F = const std::function<void(std::ptrdiff_t, std::ptrdiff_t)>;
    detail::LoopCtx<F> ctx{&fn, {}};
    lrt_pool_try_parallel_for(handle(tp), total, cost_per_unit, &detail::range_trampoline<F>, &ctx);
    ctx.slot.rethrow();
  }
  static void TryParallelFor(ThreadPool *tp, std::ptrdiff_t total, const TensorOpCost &cost,
                             const std::function<void(std::ptrdiff_t, std::ptrdiff_t)> &fn) {
    using F = const std::function<void(std::ptrdiff_t, std::ptrdiff_t)>;
    detail::LoopCtx<F> ctx{&fn, {}};
    lrt_pool_try_parallel_for_cost(handle(tp), total, &cost, &detail::range_trampoline<F>, &ctx);
    ctx.slot.rethrow();
  }
  static void TrySimpleParallelFor(ThreadPool *tp, std::ptrdiff_t total,
                                   const std::function<void(std::ptrdiff_t)> &fn) {
    using F = const std::function<void(std::ptrdiff_t)>;
    detail::LoopCtx<F> ctx{&fn, {}};
    lrt_pool_try_simple_parallel_for(handle(tp), total, &detail::index_trampoline<F>, &ctx);
    ctx.slot.rethrow();
  }

  /** ORT's partition of `total_work` into `num_batches` batches: the first
   * `total_work % num_batches` batches get one more. Throws leanrt::Error
   * for arguments leanrt rejects (num_batches <= 0, batch_idx outside
   * [0, num_batches), total_work < 0). */
  static WorkInfo PartitionWork(std::ptrdiff_t batch_idx, std::ptrdiff_t num_batches,
                                std::ptrdiff_t total_work) {
    WorkInfo info;
    detail::check(lrt_partition_work(batch_idx, num_batches, total_work, &info.start, &info.end));
    return info;
  }

  /** Calls fn(i) for every i in [0, total), split into `num_batches`
   * batches by PartitionWork (<= 0: DegreeOfParallelism(tp)), one loop
   * block per batch. `fn` is called through a non-const reference, so a
   * mutable lambda works; it is never copied. */
  template <typename F>
  static void TryBatchParallelFor(ThreadPool *tp, std::ptrdiff_t total, F &&fn,
                                  std::ptrdiff_t num_batches) {
    if (tp == nullptr) {
      for (std::ptrdiff_t i = 0; i < total; ++i) fn(i);
      return;
    }
    if (total <= 0) return;
    if (total == 1) {
      fn(0);
      return;
    }
    if (num_batches <= 0) {
      const std::ptrdiff_t dop = DegreeOfParallelism(tp);
      num_batches = total < dop ? total : dop;
    }
    if (num_batches <= 1) {
      for (std::ptrdiff_t i = 0; i < total; ++i) fn(i);
      return;
    }
    /* More batches than indices only adds empty batches; the partition of
     * the indices is the same. */
    if (num_batches > total) num_batches = total;
    using G = typename std::remove_reference<F>::type;
    BatchCtx<G> ctx{&fn, num_batches, total, {}};
    lrt_pool_try_simple_parallel_for(handle(tp), num_batches, &batch_trampoline<G>, &ctx);
    ctx.slot.rethrow();
  }

  /** Runs `fn` on a worker; inline on a NULL pool (exceptions then reach
   * the caller) or when the queue is full. */
  static void Schedule(ThreadPool *tp, std::function<void()> fn) {
    if (handle(tp) == nullptr) {
      fn();
      return;
    }
    auto *task = new std::function<void()>(std::move(fn));
    lrt_pool_schedule(handle(tp), &detail::task_trampoline, task);
  }
  static int DegreeOfParallelism(const ThreadPool *tp) noexcept {
    return lrt_pool_degree_of_parallelism(handle(tp));
  }
  static bool ShouldParallelize(const ThreadPool *tp) noexcept {
    return lrt_pool_should_parallelize(handle(tp)) != 0;
  }

  /** Starts collecting per-thread figures of `tp`; a no-op for a NULL or
   * one-thread pool. Throws leanrt::Error when leanrt refuses. */
  static void StartProfiling(ThreadPool *tp) {
    lrt_pool *pool = handle(tp);
    if (pool != nullptr) detail::check(lrt_pool_start_profiling(pool));
  }
  /** Stops collecting and returns the figures since StartProfiling as JSON;
   * "" for a NULL or one-thread pool. Throws leanrt::Error when leanrt
   * refuses (e.g. profiling was not started). */
  static std::string StopProfiling(ThreadPool *tp) {
    lrt_pool *pool = handle(tp);
    if (pool == nullptr) return std::string();
    char *raw = nullptr;
    detail::check(lrt_pool_stop_profiling(pool, &raw));
    StringPtr json(raw);
    return json ? std::string(json.get()) : std::string();
  }

 private:
  template <typename F>
  struct BatchCtx {
    F *fn;
    std::ptrdiff_t num_batches;
    std::ptrdiff_t total;
    detail::ExceptionSlot slot;
  };

  template <typename F>
  static void batch_trampoline(void *ctx, std::ptrdiff_t batch) {
    auto *c = static_cast<BatchCtx<F> *>(ctx);
    if (c->slot.failed()) return;
    try {
      const WorkInfo work = PartitionWork(batch, c->num_batches, c->total);
      F &fn = *c->fn;
      for (std::ptrdiff_t i = work.start; i < work.end; ++i) fn(i);
    } catch (...) {
      c->slot.capture();
    }
  }

  static lrt_pool *handle(const ThreadPool *tp) noexcept { return tp ? tp->pool_ : nullptr; }
  lrt_pool *pool_ = nullptr;
};

/** Owns an lrt_host_api filled by leanrt and releases it (movable, not
 * copyable). A maker created from it keeps its own reference to the
 * device, so the HostApi may go before the maker. */
class HostApi {
 public:
  /** The built-in host backend (device memory is host memory). */
  static HostApi Host() {
    HostApi api;
    detail::check(lrt_host_api_host(&api.api_));
    return api;
  }
  /** A backend on CUDA device `device`; throws leanrt::Error with
   * LRT_ERR_UNAVAILABLE without a driver or device. */
  static HostApi Cuda(int device) {
    HostApi api;
    detail::check(lrt_host_api_cuda(device, &api.api_));
    return api;
  }
  /** An empty api (nothing to release). */
  HostApi() noexcept = default;
  ~HostApi() { lrt_host_api_release(&api_); }
  HostApi(HostApi &&other) noexcept : api_(other.api_) { other.api_ = lrt_host_api{}; }
  HostApi &operator=(HostApi &&other) noexcept {
    if (this != &other) {
      lrt_host_api_release(&api_);
      api_ = other.api_;
      other.api_ = lrt_host_api{};
    }
    return *this;
  }
  HostApi(const HostApi &) = delete;
  HostApi &operator=(const HostApi &) = delete;

  const lrt_host_api *get() const noexcept { return &api_; }
  /** Whether it holds a backend (false when empty or moved from). */
  explicit operator bool() const noexcept { return api_.ops != nullptr; }

 private:
  lrt_host_api api_{};
};

/** Owns an lrt_runtime_maker (movable, not copyable): a thin layer over
 * the lrt_runtime_maker_* functions that throws leanrt::Error where they
 * return a status. leanrt's own backends (HostApi) may be released before
 * the maker; a host's own callback table must stay valid until the maker
 * is destroyed. */
class RuntimeMaker {
 public:
  /** lrt_maker_config_init's defaults. */
  static lrt_maker_config DefaultConfig() noexcept {
    lrt_maker_config cfg{};
    lrt_maker_config_init(&cfg);
    return cfg;
  }
  RuntimeMaker(const lrt_maker_config &cfg, const lrt_host_api &api) {
    detail::check(lrt_runtime_maker_create(&cfg, &api, &maker_));
  }
  explicit RuntimeMaker(const lrt_host_api &api) : RuntimeMaker(DefaultConfig(), api) {}
  RuntimeMaker(const lrt_maker_config &cfg, const HostApi &api) : RuntimeMaker(cfg, *api.get()) {}
  explicit RuntimeMaker(const HostApi &api) : RuntimeMaker(DefaultConfig(), *api.get()) {}
  ~RuntimeMaker() { lrt_runtime_maker_destroy(maker_); }
  RuntimeMaker(RuntimeMaker &&other) noexcept : maker_(other.maker_) { other.maker_ = nullptr; }
  RuntimeMaker &operator=(RuntimeMaker &&other) noexcept {
    if (this != &other) {
      lrt_runtime_maker_destroy(maker_);
      maker_ = other.maker_;
      other.maker_ = nullptr;
    }
    return *this;
  }
  RuntimeMaker(const RuntimeMaker &) = delete;
  RuntimeMaker &operator=(const RuntimeMaker &) = delete;

  /** lrt_runtime_maker_begin_run: the mirror's header. */
  lrt_sm_header *BeginRun() {
    lrt_sm_header *sm = nullptr;
    detail::check(lrt_runtime_maker_begin_run(maker_, &sm));
    return sm;
  }
  /** lrt_runtime_maker_claim_slot (LRT_ERR_OUT_OF_RANGE when full). */
  lrt_task_slot ClaimSlot() {
    lrt_task_slot slot{};
    detail::check(lrt_runtime_maker_claim_slot(maker_, &slot));
    return slot;
  }
  /** lrt_claim_desc_init's defaults: a root kernel task on one AIV core. */
  static lrt_claim_desc DefaultClaim() noexcept {
    lrt_claim_desc desc{};
    lrt_claim_desc_init(&desc);
    return desc;
  }
  /** lrt_runtime_maker_claim_slot_ex: claims a slot for the task `desc`
   * describes. */
  lrt_task_slot ClaimSlot(const lrt_claim_desc &desc) {
    lrt_task_slot slot{};
    detail::check(lrt_runtime_maker_claim_slot_ex(maker_, &desc, &slot));
    return slot;
  }
  /** lrt_runtime_maker_upload: what the upload did. */
  lrt_upload_report Upload() {
    lrt_upload_report report{};
    detail::check(lrt_runtime_maker_upload(maker_, &report));
    return report;
  }
  /** lrt_runtime_maker_read_status: 0 or a negated error code. */
  std::int32_t ReadStatus() {
    std::int32_t status = 0;
    detail::check(lrt_runtime_maker_read_status(maker_, &status));
    return status;
  }
  lrt_sm_segments Segments() const {
    lrt_sm_segments seg{};
    detail::check(lrt_runtime_maker_segments(maker_, &seg));
    return seg;
  }
  void *DeviceImage() const noexcept { return lrt_runtime_maker_device_image(maker_); }

  /** The C handle (NULL after a move), for the functions not wrapped here. */
  lrt_runtime_maker *get() const noexcept { return maker_; }
  /** Gives up ownership: the caller destroys the handle. */
  lrt_runtime_maker *release() noexcept {
    lrt_runtime_maker *m = maker_;
    maker_ = nullptr;
    return m;
  }

 private:
  lrt_runtime_maker *maker_ = nullptr;
};

}  // namespace leanrt

#ifdef LEANRT_ORT_COMPAT
namespace onnxruntime {

/** ORT's TensorOpCost, a struct as ORT declares it (so `struct
 * TensorOpCost;` forward declarations match); converts to leanrt's. */
struct TensorOpCost {
  double bytes_loaded;
  double bytes_stored;
  double compute_cycles;
  operator ::leanrt::TensorOpCost() const noexcept {
    return ::leanrt::TensorOpCost{bytes_loaded, bytes_stored, compute_cycles};
  }
};

namespace concurrency {

/** ORT's ThreadPool: a class (so `class ThreadPool;` forward declarations
 * and MLAS_THREADPOOL match) with everything of leanrt::ThreadPool. The
 * static helpers take leanrt::ThreadPool*, to which a pointer to this class
 * converts. */
class ThreadPool : public ::leanrt::ThreadPool {
 public:
  using ::leanrt::ThreadPool::ThreadPool;
};

}  // namespace concurrency
}  // namespace onnxruntime
#endif

#endif /* LEANRT_HPP */
