/* leanrt C++ wrapper for the thread pool (hand-written; the C API is in
 * leanrt.h, generated).
 *
 * leanrt::ThreadPool owns an lrt_pool (a pool of 1 thread holds a NULL pool,
 * which runs everything on the caller) and offers ONNX Runtime's static
 * helper signatures, so code written against
 * onnxruntime::concurrency::ThreadPool compiles unchanged when
 * LEANRT_ORT_COMPAT is defined before including this header:
 *
 *   #define LEANRT_ORT_COMPAT
 *   #include <leanrt.hpp>
 *   using onnxruntime::concurrency::ThreadPool;
 *   ThreadPool::TryParallelFor(tp, n, onnxruntime::TensorOpCost{8, 8, 40}, fn);
 *
 * An exception thrown by a loop body is caught on the thread that ran the
 * body and rethrown on the caller after the whole loop has finished (the
 * first one wins). Errors from leanrt calls throw leanrt::Error. */
#ifndef LEANRT_HPP
#define LEANRT_HPP

#include <atomic>
#include <cstddef>
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

inline void check(lrt_status status) {
  if (status != LRT_OK) {
    std::string msg(lrt_last_error(nullptr, 0) + 1, '\0');
    lrt_last_error(&msg[0], msg.size());
    msg.resize(msg.size() - 1);
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
  const F *fn;
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

/** An intra-op thread pool with ONNX Runtime's semantics (movable, not
 * copyable). */
class ThreadPool {
 public:
  /** A pool of `num_threads` (0: one per physical core; 1: no worker
   * threads, everything runs on the caller). */
  explicit ThreadPool(int num_threads) {
    lrt_pool_options *opts = nullptr;
    detail::check(lrt_pool_options_create(&opts));
    std::unique_ptr<lrt_pool_options, void (*)(lrt_pool_options *)> guard(
        opts, lrt_pool_options_destroy);
    detail::check(lrt_pool_options_set_num_threads(opts, num_threads));
    detail::check(lrt_pool_create(opts, &pool_));
  }
  /** A pool from options (not taken over; destroy them yourself). */
  explicit ThreadPool(const lrt_pool_options *opts) { detail::check(lrt_pool_create(opts, &pool_)); }
  ~ThreadPool() { lrt_pool_destroy(pool_); }
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

  /** The C handle (NULL for a one-thread pool). */
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
    using F = std::function<void(std::ptrdiff_t, std::ptrdiff_t)>;
    detail::LoopCtx<F> ctx{&fn, {}};
    lrt_pool_try_parallel_for(handle(tp), total, cost_per_unit, &detail::range_trampoline<F>, &ctx);
    ctx.slot.rethrow();
  }
  static void TryParallelFor(ThreadPool *tp, std::ptrdiff_t total, const TensorOpCost &cost,
                             const std::function<void(std::ptrdiff_t, std::ptrdiff_t)> &fn) {
    using F = std::function<void(std::ptrdiff_t, std::ptrdiff_t)>;
    detail::LoopCtx<F> ctx{&fn, {}};
    lrt_pool_try_parallel_for_cost(handle(tp), total, &cost, &detail::range_trampoline<F>, &ctx);
    ctx.slot.rethrow();
  }
  static void TrySimpleParallelFor(ThreadPool *tp, std::ptrdiff_t total,
                                   const std::function<void(std::ptrdiff_t)> &fn) {
    using F = std::function<void(std::ptrdiff_t)>;
    detail::LoopCtx<F> ctx{&fn, {}};
    lrt_pool_try_simple_parallel_for(handle(tp), total, &detail::index_trampoline<F>, &ctx);
    ctx.slot.rethrow();
  }
  template <typename F>
  static void TryBatchParallelFor(ThreadPool *tp, std::ptrdiff_t total, F &&fn,
                                  std::ptrdiff_t num_batches) {
    using G = typename std::remove_reference<F>::type;
    detail::LoopCtx<G> ctx{&fn, {}};
    lrt_pool_try_batch_parallel_for(handle(tp), total, &detail::index_trampoline<G>, &ctx,
                                    num_batches);
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

 private:
  static lrt_pool *handle(const ThreadPool *tp) noexcept { return tp ? tp->pool_ : nullptr; }
  lrt_pool *pool_ = nullptr;
};

}  // namespace leanrt

#ifdef LEANRT_ORT_COMPAT
namespace onnxruntime {
using TensorOpCost = ::leanrt::TensorOpCost;
namespace concurrency {
using ThreadPool = ::leanrt::ThreadPool;
}  // namespace concurrency
}  // namespace onnxruntime
#endif

#endif /* LEANRT_HPP */
