// The C++ wrapper: leanrt::ThreadPool (movable, not copyable), ORT's static
// helper signatures through the LEANRT_ORT_COMPAT names, and exceptions
// from loop bodies rethrown on the caller after the loop has finished.
#define LEANRT_ORT_COMPAT
#include "leanrt.hpp"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "check.h"

using onnxruntime::TensorOpCost;
using onnxruntime::concurrency::ThreadPool;

static_assert(!std::is_copy_constructible<ThreadPool>::value, "not copyable");
static_assert(std::is_nothrow_move_constructible<ThreadPool>::value, "movable");
static_assert(std::is_base_of<leanrt::ThreadPool, ThreadPool>::value, "ORT's class is leanrt's pool");

static bool once(const std::vector<std::atomic<int>> &v) {
  for (const auto &x : v)
    if (x.load() != 1) return false;
  return true;
}

// Code written against ORT's header: a null pool and a real one.
static void ort_style(ThreadPool *tp) {
  const std::ptrdiff_t n = 10000;
  std::vector<std::atomic<int>> hits(n);
  ThreadPool::TryParallelFor(tp, n, TensorOpCost{64.0, 64.0, 1000.0},
                             [&](std::ptrdiff_t first, std::ptrdiff_t last) {
                               for (auto i = first; i < last; ++i) hits[i]++;
                             });
  CHECK(once(hits));
  std::vector<std::atomic<int>> h2(n);
  ThreadPool::TryParallelFor(tp, n, 1e5, [&](std::ptrdiff_t a, std::ptrdiff_t b) {
    for (auto i = a; i < b; ++i) h2[i]++;
  });
  CHECK(once(h2));
  std::vector<std::atomic<int>> h3(n);
  ThreadPool::TrySimpleParallelFor(tp, n, [&](std::ptrdiff_t i) { h3[i]++; });
  CHECK(once(h3));
  for (std::ptrdiff_t batches : {0, 1, 10, 20, 100}) {
    std::vector<std::atomic<int>> h4(n);
    ThreadPool::TryBatchParallelFor(tp, n, [&](std::ptrdiff_t i) { h4[i]++; }, batches);
    CHECK(once(h4));
  }
  std::atomic<int> ran{0};
  ThreadPool::Schedule(tp, [&] { ran++; });
  auto t0 = std::chrono::steady_clock::now();
  while (ran.load() == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30))
    std::this_thread::yield();
  CHECK(ran.load() == 1);
  CHECK(ThreadPool::DegreeOfParallelism(tp) >= 1);
  CHECK(ThreadPool::ShouldParallelize(tp) == (ThreadPool::DegreeOfParallelism(tp) > 1));
}

int main() {
  ort_style(nullptr);
  ThreadPool pool(4);
  CHECK(pool.get() != nullptr);
  CHECK(pool.NumThreads() == 3);
  ort_style(&pool);

  // An exception from a body is rethrown on the caller, after the loop:
  // no body runs once TryParallelFor has returned.
  std::atomic<int> running{0}, after{0};
  std::atomic<bool> returned{false};
  bool caught = false;
  try {
    ThreadPool::TrySimpleParallelFor(&pool, 200, [&](std::ptrdiff_t i) {
      running++;
      if (returned.load()) after++;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (i == 17) throw std::runtime_error("body 17");
      running--;
    });
  } catch (const std::runtime_error &e) {
    returned = true;
    caught = std::string(e.what()) == "body 17";
  }
  CHECK(caught);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(after.load() == 0);
  CHECK(running.load() == 1);  // only the throwing body did not finish

  // Same through the cost overload and a null pool.
  caught = false;
  try {
    ThreadPool::TryParallelFor(nullptr, 10, 1.0, [](std::ptrdiff_t, std::ptrdiff_t) {
      throw std::logic_error("serial");
    });
  } catch (const std::logic_error &) {
    caught = true;
  }
  CHECK(caught);

  // Members, move, stats.
  std::vector<std::atomic<int>> h(1000);
  pool.ParallelFor(1000, 1e5, [&](std::ptrdiff_t a, std::ptrdiff_t b) {
    for (auto i = a; i < b; ++i) h[i]++;
  });
  CHECK(once(h));
  ThreadPool moved(std::move(pool));
  CHECK(pool.get() == nullptr);
  CHECK(moved.NumThreads() == 3);
  std::vector<std::atomic<int>> h2(1000);
  moved.SimpleParallelFor(1000, [&](std::ptrdiff_t i) { h2[i]++; });
  CHECK(once(h2));
  CHECK(moved.Stats().tasks_run >= 1);
  ThreadPool serial(1);
  CHECK(serial.get() == nullptr);
  serial = std::move(moved);
  CHECK(serial.NumThreads() == 3);

  // Options constructor and leanrt::Error.
  lrt_pool_options *o = nullptr;
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 2), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_config(o, LRT_POOL_KEY_SPIN_DURATION_US, "100"), LRT_OK);
  ThreadPool from_opts(o);
  CHECK(from_opts.NumThreads() == 1);
  lrt_pool_options_destroy(o);
  caught = false;
  try {
    ThreadPool bad(-3);
  } catch (const leanrt::Error &e) {
    caught = e.status() == LRT_ERR_INVALID_ARGUMENT &&
             std::string(e.what()).find("num_threads") != std::string::npos;
  }
  CHECK(caught);
  return check_result();
}
