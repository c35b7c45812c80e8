// ThreadPool::StartProfiling / StopProfiling (ORT's static signatures):
// the JSON between the two calls has an entry per worker thread; a NULL or
// one-thread pool gives "". The C string is owned by leanrt::StringPtr.
#define LEANRT_ORT_COMPAT
#include "leanrt.hpp"

#include <atomic>
#include <string>
#include <type_traits>

#include "check.h"

using onnxruntime::concurrency::ThreadPool;

static_assert(std::is_same<decltype(ThreadPool::StopProfiling(nullptr)), std::string>::value,
              "StopProfiling returns std::string");
static_assert(std::is_same<decltype(ThreadPool::StartProfiling(nullptr)), void>::value,
              "StartProfiling returns nothing");

static std::size_t count(const std::string &s, const std::string &what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) n++;
  return n;
}

// Brackets balance outside strings and the text is one object or array.
static bool json_shaped(const std::string &s) {
  if (s.empty() || (s.front() != '{' && s.front() != '[')) return false;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') depth++;
    else if (c == '}' || c == ']') {
      if (--depth < 0) return false;
      if (depth == 0 && i + 1 != s.size()) return false;
    }
  }
  return depth == 0 && !in_string;
}

static void run_loops(ThreadPool *tp) {
  std::atomic<long> sum{0};
  for (int l = 0; l < 20; ++l)
    ThreadPool::TrySimpleParallelFor(tp, 256, [&](std::ptrdiff_t i) { sum += i; });
  {
    ThreadPool::ParallelSection ps(tp);
    for (int l = 0; l < 5; ++l)
      ThreadPool::TryParallelFor(tp, 4096, 1e4, [&](std::ptrdiff_t a, std::ptrdiff_t b) { sum += b - a; });
  }
  CHECK(sum.load() == 20L * (255L * 256L / 2) + 5L * 4096L);
}

int main() {
  // NULL and one-thread pools: nothing to profile, "" as ORT.
  ThreadPool::StartProfiling(nullptr);
  run_loops(nullptr);
  CHECK(ThreadPool::StopProfiling(nullptr).empty());
  ThreadPool one(1);
  ThreadPool::StartProfiling(&one);
  run_loops(&one);
  CHECK(ThreadPool::StopProfiling(&one).empty());

  for (int threads = 2; threads <= 4; ++threads) {
    ThreadPool tp(threads);
    // Stopping what was never started: LRT_ERR_STATE as leanrt::Error.
    lrt_status stop_status = LRT_OK;
    try {
      (void)ThreadPool::StopProfiling(&tp);
    } catch (const leanrt::Error &e) {
      stop_status = e.status();
    }
    CHECK(stop_status == LRT_ERR_STATE);
    for (int round = 0; round < 2; ++round) {
      ThreadPool::StartProfiling(&tp);
      run_loops(&tp);
      const std::string json = ThreadPool::StopProfiling(&tp);
      CHECK(json_shaped(json));
      // One entry per worker thread, and the calling threads' figures.
      CHECK(count(json, "\"id\":") == static_cast<std::size_t>(tp.NumThreads()));
      CHECK(count(json, "\"workers\":[") == 1);
      CHECK(count(json, "\"main_thread\":{") == 1);
      for (const char *key : {"\"blocks\":", "\"tasks\":", "\"steals\":", "\"spin_iterations\":",
                              "\"parks\":", "\"loop_ns\":"})
        CHECK(count(json, key) >= static_cast<std::size_t>(tp.NumThreads()));
    }
  }

  // The C function's string, owned by StringPtr (freed with lrt_string_free).
  ThreadPool tp(3);
  CHECK_STATUS(lrt_pool_start_profiling(tp.get()), LRT_OK);
  run_loops(&tp);
  char *raw = nullptr;
  CHECK_STATUS(lrt_pool_stop_profiling(tp.get(), &raw), LRT_OK);
  leanrt::StringPtr owned(raw);
  CHECK(owned && json_shaped(owned.get()));
  return check_result();
}
