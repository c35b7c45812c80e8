// RAII owners for everything the C API hands out: leanrt::PoolOptions
// (throwing setters, stack size), a pool built from them, leanrt::HostApi,
// leanrt::RuntimeMaker and leanrt::StringPtr. Run under valgrind/ASan, this
// program must not leak.
#include "leanrt.hpp"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "check.h"

template <typename T>
constexpr bool move_only() {
  return !std::is_copy_constructible<T>::value && !std::is_copy_assignable<T>::value &&
         std::is_nothrow_move_constructible<T>::value && std::is_nothrow_move_assignable<T>::value;
}
static_assert(move_only<leanrt::PoolOptions>(), "PoolOptions: movable, not copyable");
static_assert(move_only<leanrt::ThreadPool>(), "ThreadPool: movable, not copyable");
static_assert(move_only<leanrt::HostApi>(), "HostApi: movable, not copyable");
static_assert(move_only<leanrt::RuntimeMaker>(), "RuntimeMaker: movable, not copyable");
static_assert(move_only<leanrt::StringPtr>(), "StringPtr: movable, not copyable");
static_assert(!std::is_default_constructible<leanrt::ThreadPool::ParallelSection>::value &&
                  !std::is_copy_constructible<leanrt::ThreadPool::ParallelSection>::value &&
                  !std::is_move_constructible<leanrt::ThreadPool::ParallelSection>::value,
              "ParallelSection: neither copyable nor movable");

// Runs `fn` and reports the status of the leanrt::Error it throws (LRT_OK
// when it throws nothing), checking that the message is not empty.
template <typename Fn>
static lrt_status status_of(Fn &&fn) {
  try {
    fn();
  } catch (const leanrt::Error &e) {
    CHECK(std::string(e.what()).size() > 0);
    return e.status();
  }
  return LRT_OK;
}

// The stack size of the worker that runs a scheduled task; 0 when the task
// ran on the caller (queue full) or pthread_getattr_np failed.
static std::size_t worker_stack_size(leanrt::ThreadPool &tp) {
  std::atomic<bool> done{false};
  std::size_t size = 0;
  leanrt::ThreadPool::Schedule(&tp, [&] {
    if (tp.CurrentThreadId() >= 0) {
      pthread_attr_t attr;
      if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstacksize(&attr, &size);
        pthread_attr_destroy(&attr);
      }
    }
    done.store(true, std::memory_order_release);
  });
  const auto t0 = std::chrono::steady_clock::now();
  while (!done.load(std::memory_order_acquire) &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::yield();
  CHECK(done.load());
  return size;
}

static void pool_options() {
  leanrt::PoolOptions opts;
  CHECK(opts.get() != nullptr);
  opts.SetNumThreads(3)
      .SetSpinControl(true)
      .SetSpinDurationUs(50)
      .SetSpinBackoffMax(4)
      .SetDynamicBlockBase(0)
      .SetDenormalAsZero(false)
      .SetName("cpp-raii")
      .SetConfig(LRT_POOL_KEY_ALLOW_SPINNING, "1");

  // A rejected value throws with leanrt's status and message and leaves the
  // options as they were: the pool below still gets 3 threads.
  CHECK(status_of([&] { opts.SetNumThreads(-3); }) == LRT_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { opts.SetConfig("session.no_such_key", "1"); }) == LRT_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { opts.SetConfig(LRT_POOL_KEY_ALLOW_SPINNING, "yes"); }) ==
        LRT_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { opts.SetSpinDurationUs(-7); }) == LRT_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { opts.SetStackSize(1); }) == LRT_ERR_INVALID_ARGUMENT);
  try {
    opts.SetNumThreads(-3);
  } catch (const leanrt::Error &e) {
    CHECK(std::string(e.what()).find("num_threads") != std::string::npos);
  }

  // Stack size, applied to every worker thread.
  const std::size_t stack = std::size_t{24} << 20;  // above glibc's usual 8 MiB default
  opts.SetStackSize(stack);
  {
    leanrt::ThreadPool tp(opts);
    CHECK(tp.NumThreads() == 2);
    const std::size_t got = worker_stack_size(tp);
    if (got != 0) CHECK(got >= stack);
    std::atomic<int> sum{0};
    tp.SimpleParallelFor(100, [&](std::ptrdiff_t i) { sum += static_cast<int>(i); });
    CHECK(sum.load() == 4950);
  }

  // Move, release, and the moved-from object.
  leanrt::PoolOptions moved(std::move(opts));
  CHECK(opts.get() == nullptr && moved.get() != nullptr);
  CHECK(status_of([&] { opts.SetNumThreads(2); }) == LRT_ERR_INVALID_ARGUMENT);
  leanrt::PoolOptions other;
  other = std::move(moved);
  CHECK(moved.get() == nullptr && other.get() != nullptr);
  {
    leanrt::ThreadPool tp(other);  // still the 3-thread options
    CHECK(tp.NumThreads() == 2);
  }
  lrt_pool_options *raw = other.release();
  CHECK(raw != nullptr && other.get() == nullptr);
  {
    leanrt::ThreadPool tp(raw);  // the C handle, read, not taken over
    CHECK(tp.NumThreads() == 2);
  }
  lrt_pool_options_destroy(raw);

  // One thread: no workers, a NULL pool.
  leanrt::PoolOptions one;
  one.SetNumThreads(1);
  leanrt::ThreadPool serial(one);
  CHECK(serial.get() == nullptr);
  CHECK(leanrt::ThreadPool::DegreeOfParallelism(&serial) == 1);
}

static void host_api() {
  leanrt::HostApi empty;
  CHECK(!empty);
  leanrt::HostApi host = leanrt::HostApi::Host();
  CHECK(static_cast<bool>(host) && host.get()->ops != nullptr);
  leanrt::HostApi moved(std::move(host));
  CHECK(!host && static_cast<bool>(moved));
  empty = std::move(moved);
  CHECK(static_cast<bool>(empty) && !moved);

  // CUDA: a backend where a driver and device exist, else leanrt::Error.
  const lrt_status cuda = status_of([] {
    leanrt::HostApi gpu = leanrt::HostApi::Cuda(0);
    CHECK(static_cast<bool>(gpu));
  });
  CHECK(cuda == LRT_OK || cuda == LRT_ERR_UNAVAILABLE || cuda == LRT_ERR_DEVICE);
  CHECK(status_of([] { leanrt::HostApi::Cuda(-1); }) != LRT_OK);
}

static void runtime_maker() {
  leanrt::HostApi api = leanrt::HostApi::Host();
  lrt_maker_config cfg = leanrt::RuntimeMaker::DefaultConfig();
  CHECK(cfg.policy == LRT_UPLOAD_BOUNDED);
  cfg.task_window = 16;
  leanrt::RuntimeMaker maker(cfg, api);
  CHECK(maker.get() != nullptr && maker.DeviceImage() != nullptr);
  CHECK(maker.Segments().end > 0);

  // Using the maker before a run is a leanrt::Error, not a crash.
  CHECK(status_of([&] { maker.ClaimSlot(); }) == LRT_ERR_STATE);

  for (int run = 0; run < 3; ++run) {
    lrt_sm_header *sm = maker.BeginRun();
    CHECK(sm != nullptr);
    const int n = 5 + run;
    for (int k = 0; k < n; ++k) {
      lrt_task_slot slot = maker.ClaimSlot();
      CHECK(slot.index == k);
    }
    // A described task: a dependency on the first slot of this run.
    lrt_claim_desc desc = leanrt::RuntimeMaker::DefaultClaim();
    const int32_t producer = 0;
    desc.fanin_count = 1;
    desc.fanin_local_ids = &producer;
    desc.kernel_id[1] = 7;
    lrt_task_slot dep = maker.ClaimSlot(desc);
    CHECK(dep.index == n);
    CHECK(dep.payload->fanin_count == 1 && dep.descriptor->kernel_id[1] == 7);
    const lrt_upload_report report = maker.Upload();
    CHECK(report.total_tasks == n + 1);
    CHECK(report.bytes > 0);
    CHECK(maker.ReadStatus() == 0);
  }

  // A full window: LRT_ERR_OUT_OF_RANGE through leanrt::Error.
  maker.BeginRun();
  for (int k = 0; k < 16; ++k) maker.ClaimSlot();
  CHECK(status_of([&] { maker.ClaimSlot(); }) == LRT_ERR_OUT_OF_RANGE);

  // Move; the moved-from maker is empty and its calls are errors.
  leanrt::RuntimeMaker moved(std::move(maker));
  CHECK(maker.get() == nullptr && moved.get() != nullptr);
  CHECK(status_of([&] { maker.BeginRun(); }) == LRT_ERR_INVALID_ARGUMENT);
  CHECK(maker.DeviceImage() == nullptr);
  moved.BeginRun();
  CHECK(moved.Upload().total_tasks == 0);

  // A described task leanrt rejects (a producer not claimed yet): nothing
  // is claimed.
  moved.BeginRun();
  lrt_claim_desc bad_desc = leanrt::RuntimeMaker::DefaultClaim();
  const int32_t future = 5;
  bad_desc.fanin_count = 1;
  bad_desc.fanin_local_ids = &future;
  CHECK(status_of([&] { moved.ClaimSlot(bad_desc); }) == LRT_ERR_INVALID_ARGUMENT);
  CHECK(moved.ClaimSlot().index == 0);

  // Default config, and assignment over a live maker (the old one is freed).
  leanrt::RuntimeMaker second(api);
  second = std::move(moved);
  CHECK(second.get() != nullptr && moved.get() == nullptr);
  lrt_runtime_maker *raw = second.release();
  CHECK(raw != nullptr && second.get() == nullptr);
  lrt_runtime_maker_destroy(raw);

  // A maker from a temporary HostApi: leanrt's backends may be released
  // before the maker, which keeps its own reference to the device.
  {
    leanrt::RuntimeMaker own(cfg, leanrt::HostApi::Host());
    own.BeginRun();
    own.ClaimSlot();
    CHECK(own.Upload().total_tasks == 1);
  }

  // A bad window is rejected by the constructor.
  lrt_maker_config bad = leanrt::RuntimeMaker::DefaultConfig();
  bad.task_window = 3;
  CHECK(status_of([&] { leanrt::RuntimeMaker m(bad, api); }) == LRT_ERR_INVALID_ARGUMENT);
}

static void strings() {
  leanrt::StringPtr none;
  CHECK(!none);
  leanrt::StringPtr null_owned(nullptr);  // lrt_string_free(NULL) is never reached
  CHECK(null_owned.get() == nullptr);
}

int main() {
  pool_options();
  host_api();
  runtime_maker();
  strings();
  return check_result();
}
