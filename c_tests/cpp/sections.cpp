// ThreadPool::ParallelSection: multi-loop sections on NULL and 1-4 thread
// pools with 0-100 loops, every index exactly once per loop, the workers of
// a section the same team across its loops; nesting, a NULL pool, one
// thread, an exception inside a section, a section opened from a worker.
#define LEANRT_ORT_COMPAT
#include "leanrt.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

using onnxruntime::TensorOpCost;
using onnxruntime::concurrency::ThreadPool;

namespace {

struct Counts {
  explicit Counts(std::ptrdiff_t n) : v(static_cast<std::size_t>(n)) {}
  std::vector<std::atomic<int>> v;
  void hit(std::ptrdiff_t i) { v[static_cast<std::size_t>(i)]++; }
  bool all(int want) const {
    for (const auto &x : v)
      if (x.load() != want) return false;
    return true;
  }
};

// Which workers (by CurrentThreadId) ran blocks of one loop.
int popcount(std::uint64_t m) {
  int n = 0;
  for (; m != 0; m &= m - 1) n++;
  return n;
}

struct Workers {
  std::atomic<std::uint64_t> mask{0};
  void note(const ThreadPool *tp) {
    const int id = tp ? tp->CurrentThreadId() : -1;
    if (id >= 0) mask.fetch_or(std::uint64_t{1} << id);
  }
};

// ORT-style: a pool of `threads` in total (0: a NULL pool), one section,
// `loops` loops of each kind inside it.
void multi_loop(int threads, int loops) {
  // LEANRT_TEST_SMALL (valgrind): fewer indices, the same loop counts.
  const std::ptrdiff_t n = std::getenv("LEANRT_TEST_SMALL") ? 64 : 1024;
  Counts simple(n), ranged(n), batched(n);
  std::vector<std::uint64_t> per_loop;
  std::unique_ptr<ThreadPool> pool;
  if (threads > 0) pool.reset(new ThreadPool(threads));
  ThreadPool *tp = pool.get();
  {
    ThreadPool::ParallelSection ps(tp);
    for (int l = 0; l < loops; ++l) {
      Workers w;
      ThreadPool::TrySimpleParallelFor(tp, n, [&](std::ptrdiff_t i) {
        w.note(tp);
        simple.hit(i);
      });
      ThreadPool::TryParallelFor(tp, n, TensorOpCost{64, 64, 10000}, [&](std::ptrdiff_t a, std::ptrdiff_t b) {
        w.note(tp);
        for (auto i = a; i < b; ++i) ranged.hit(i);
      });
      ThreadPool::TryBatchParallelFor(
          tp, n,
          [&](std::ptrdiff_t i) {
            w.note(tp);
            batched.hit(i);
          },
          0);
      per_loop.push_back(w.mask.load());
    }
  }
  CHECK(simple.all(loops));
  CHECK(ranged.all(loops));
  CHECK(batched.all(loops));
  // Only workers of this pool ran blocks, and never more than it has.
  const int workers = tp ? tp->NumThreads() : 0;
  std::uint64_t seen = 0;
  for (std::uint64_t m : per_loop) seen |= m;
  CHECK((seen >> workers) == 0);
  if (workers == 0) CHECK(seen == 0);
}

// The team of a section stays between its loops: a worker that joined
// stays a member until the section ends, and a loop admits new members only
// while the team is smaller than its helper count. Loops of two blocks admit
// one helper, so over all loops of one section at most one worker runs
// blocks. Then loops wanting every worker grow the team, never beyond the
// workers of the pool.
void team_stays(int threads) {
  ThreadPool tp(threads);
  const bool small_run = std::getenv("LEANRT_TEST_SMALL") != nullptr;
  const int small = small_run ? 10 : 40;
  for (int rep = 0; rep < (small_run ? 2 : 5); ++rep) {
    Workers two, all;
    Counts c(2), d(64);
    {
      ThreadPool::ParallelSection ps(&tp);
      for (int l = 0; l < small; ++l)
        ThreadPool::TrySimpleParallelFor(&tp, 2, [&](std::ptrdiff_t i) {
          two.note(&tp);
          const auto t0 = std::chrono::steady_clock::now();
          while (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(200)) {
          }
          c.hit(i);
        });
      const std::uint64_t team_after_small = two.mask.load();
      CHECK(popcount(team_after_small) <= 1);
      for (int l = 0; l < small; ++l)
        ThreadPool::TrySimpleParallelFor(&tp, 64, [&](std::ptrdiff_t i) {
          all.note(&tp);
          d.hit(i);
        });
    }
    CHECK(c.all(small));
    CHECK(d.all(small));
    CHECK((all.mask.load() >> tp.NumThreads()) == 0);
  }
}

// A section that outlives its pool: ending it afterwards only frees it.
void section_outlives_pool() {
  std::unique_ptr<ThreadPool> tp(new ThreadPool(3));
  std::unique_ptr<ThreadPool::ParallelSection> ps(new ThreadPool::ParallelSection(tp.get()));
  Counts c(100);
  ThreadPool::TrySimpleParallelFor(tp.get(), 100, [&](std::ptrdiff_t i) { c.hit(i); });
  CHECK(c.all(1));
  tp.reset();
  ps.reset();
  // This thread has no section open any more: a new one opens.
  ThreadPool again(2);
  ThreadPool::ParallelSection next(&again);
}

// Loops of a section on a pool stay correct when another thread runs loops
// on the same pool at the same time (outside any section).
void concurrent_outside(ThreadPool &tp) {
  const std::ptrdiff_t n = 4096;
  Counts in_section(n), outside(n);
  std::atomic<bool> done{false};
  std::thread other([&] {
    for (int l = 0; l < 20; ++l)
      ThreadPool::TrySimpleParallelFor(&tp, n, [&](std::ptrdiff_t i) { outside.hit(i); });
    done = true;
  });
  {
    ThreadPool::ParallelSection ps(&tp);
    for (int l = 0; l < 20; ++l)
      ThreadPool::TrySimpleParallelFor(&tp, n, [&](std::ptrdiff_t i) { in_section.hit(i); });
  }
  other.join();
  CHECK(done.load());
  CHECK(in_section.all(20));
  CHECK(outside.all(20));
}

void edge_cases() {
  // NULL pool and a one-thread pool: no-ops, loops run on the caller.
  {
    ThreadPool::ParallelSection ps(nullptr);
    Counts c(10);
    ThreadPool::TrySimpleParallelFor(nullptr, 10, [&](std::ptrdiff_t i) { c.hit(i); });
    CHECK(c.all(1));
  }
  {
    ThreadPool one(1);
    ThreadPool::ParallelSection ps(&one);
    ThreadPool::ParallelSection again(&one);  // nothing to nest on a NULL pool
    Counts c(10);
    ThreadPool::TrySimpleParallelFor(&one, 10, [&](std::ptrdiff_t i) { c.hit(i); });
    CHECK(c.all(1));
  }

  ThreadPool tp(4);

  // Nesting on the same thread is refused as ORT refuses it (an exception),
  // and the outer section keeps working.
  {
    ThreadPool::ParallelSection outer(&tp);
    bool refused = false;
    try {
      ThreadPool::ParallelSection inner(&tp);
    } catch (const leanrt::Error &e) {
      refused = e.status() != LRT_OK;
    }
    CHECK(refused);
    Counts c(500);
    ThreadPool::TrySimpleParallelFor(&tp, 500, [&](std::ptrdiff_t i) { c.hit(i); });
    CHECK(c.all(1));
  }

  // An exception from a loop body inside a section: rethrown on the caller
  // after the loop; the section's next loop and the pool still work.
  {
    ThreadPool::ParallelSection ps(&tp);
    std::atomic<int> after{0};
    std::atomic<bool> returned{false};
    bool caught = false;
    try {
      ThreadPool::TrySimpleParallelFor(&tp, 300, [&](std::ptrdiff_t i) {
        if (returned.load()) after++;
        if (i == 42) throw std::runtime_error("body 42");
      });
    } catch (const std::runtime_error &e) {
      returned = true;
      caught = std::string(e.what()) == "body 42";
    }
    CHECK(caught);
    CHECK(after.load() == 0);
    Counts c(300);
    ThreadPool::TrySimpleParallelFor(&tp, 300, [&](std::ptrdiff_t i) { c.hit(i); });
    CHECK(c.all(1));
  }
  // The exception leaves the section's scope: the destructor ends it.
  bool caught = false;
  try {
    ThreadPool::ParallelSection ps(&tp);
    ThreadPool::TryParallelFor(&tp, 100, 1e6, [](std::ptrdiff_t a, std::ptrdiff_t) {
      if (a == 0) throw std::logic_error("first block");
    });
  } catch (const std::logic_error &) {
    caught = true;
  }
  CHECK(caught);
  {
    ThreadPool::ParallelSection ps(&tp);  // a new section opens: the old one ended
    Counts c(100);
    ThreadPool::TrySimpleParallelFor(&tp, 100, [&](std::ptrdiff_t i) { c.hit(i); });
    CHECK(c.all(1));
  }

  // A section opened from inside a loop body (on a worker or the caller) is
  // allowed: its loops run (in a team, or as plain loops when another
  // thread's loop holds the pool's hand-off slot).
  {
    Counts outer(8), inner(8 * 64);
    std::atomic<int> refused{0};
    ThreadPool::TrySimpleParallelFor(&tp, 8, [&](std::ptrdiff_t o) {
      try {
        ThreadPool::ParallelSection ps(&tp);
        for (int l = 0; l < 2; ++l)
          ThreadPool::TrySimpleParallelFor(&tp, 64, [&](std::ptrdiff_t i) {
            if (l == 1) inner.hit(o * 64 + i);
          });
      } catch (const leanrt::Error &) {
        refused++;
        for (std::ptrdiff_t i = 0; i < 64; ++i) inner.hit(o * 64 + i);
      }
      outer.hit(o);
    });
    CHECK(outer.all(1));
    CHECK(inner.all(1));
    CHECK(refused.load() == 0);
  }

  // A section opened by a scheduled task, on a worker thread.
  {
    Counts c(256);
    std::atomic<bool> done{false};
    std::atomic<int> on_worker{-2};
    ThreadPool::Schedule(&tp, [&] {
      on_worker = tp.CurrentThreadId();
      {
        ThreadPool::ParallelSection ps(&tp);
        for (int l = 0; l < 3; ++l)
          ThreadPool::TrySimpleParallelFor(&tp, 256, [&](std::ptrdiff_t i) { c.hit(i); });
      }
      done.store(true);
    });
    const auto t0 = std::chrono::steady_clock::now();
    while (!done.load() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
      std::this_thread::yield();
    CHECK(done.load());
    CHECK(c.all(3));
    CHECK(on_worker.load() >= -1);
  }

  concurrent_outside(tp);
  section_outlives_pool();
  for (int threads = 2; threads <= 4; ++threads) team_stays(threads);
}

}  // namespace

int main() {
  for (int threads = 0; threads <= 4; ++threads)
    for (int loops : {0, 1, 2, 10, 100}) multi_loop(threads, loops);
  edge_cases();
  return check_result();
}
