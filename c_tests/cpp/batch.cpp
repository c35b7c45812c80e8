// ThreadPool::PartitionWork / WorkInfo (ORT's partition: the first
// total % num_batches batches get one more) and TryBatchParallelFor built on
// it: every index once, for mutable functors called through a non-const
// reference and never copied, on NULL, one-thread and 2-4 thread pools.
#define LEANRT_ORT_COMPAT
#include "leanrt.hpp"

#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "check.h"

using onnxruntime::concurrency::ThreadPool;

static_assert(std::is_same<decltype(ThreadPool::WorkInfo::start), std::ptrdiff_t>::value &&
                  std::is_same<decltype(ThreadPool::WorkInfo::end), std::ptrdiff_t>::value,
              "WorkInfo {start, end} as ptrdiff_t");
static_assert(std::is_same<decltype(ThreadPool::PartitionWork(0, 1, 1)), ThreadPool::WorkInfo>::value,
              "PartitionWork returns WorkInfo");

static void partition() {
  // Worked examples.
  ThreadPool::WorkInfo w = ThreadPool::PartitionWork(0, 3, 10);
  CHECK(w.start == 0 && w.end == 4);
  w = ThreadPool::PartitionWork(1, 3, 10);
  CHECK(w.start == 4 && w.end == 7);
  w = ThreadPool::PartitionWork(2, 3, 10);
  CHECK(w.start == 7 && w.end == 10);
  w = ThreadPool::PartitionWork(4, 5, 3);  // more batches than work: empty tail
  CHECK(w.start == 3 && w.end == 3);
  ThreadPool::WorkInfo zero{};
  CHECK(zero.start == 0 && zero.end == 0);

  // Contiguous cover of [0, total), sizes differ by at most one, larger first.
  for (std::ptrdiff_t total : {0, 1, 2, 7, 64, 1000, 1001}) {
    for (std::ptrdiff_t batches : {1, 2, 3, 7, 16, 1500}) {
      std::ptrdiff_t next = 0;
      for (std::ptrdiff_t b = 0; b < batches; ++b) {
        const ThreadPool::WorkInfo p = ThreadPool::PartitionWork(b, batches, total);
        const std::ptrdiff_t size = p.end - p.start;
        const std::ptrdiff_t want = total / batches + (b < total % batches ? 1 : 0);
        CHECK(p.start == next);
        CHECK(size == want);
        next = p.end;
      }
      CHECK(next == total);
    }
  }

  // Arguments leanrt rejects are a leanrt::Error, not a division by zero.
  bool threw = false;
  try {
    ThreadPool::PartitionWork(0, 0, 10);
  } catch (const leanrt::Error &e) {
    threw = e.status() == LRT_ERR_INVALID_ARGUMENT;
  }
  CHECK(threw);
}

// A functor whose call operator is not const, and which must not be copied.
struct Counter {
  std::vector<std::atomic<int>> *hits;
  std::atomic<long> calls{0};
  Counter(const Counter &) = delete;
  Counter &operator=(const Counter &) = delete;
  explicit Counter(std::vector<std::atomic<int>> *h) : hits(h) {}
  void operator()(std::ptrdiff_t i) {
    (*hits)[static_cast<std::size_t>(i)]++;
    calls++;
  }
};

static bool each_once(const std::vector<std::atomic<int>> &v) {
  for (const auto &x : v)
    if (x.load() != 1) return false;
  return true;
}

static void batches(ThreadPool *tp) {
  for (std::ptrdiff_t total : {0, 1, 2, 50, 81, 1000}) {
    for (std::ptrdiff_t nb : {-1, 0, 1, 2, 10, 20, 100, 5000}) {
      // Non-copyable functor with a non-const operator(), as an lvalue.
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(total));
      Counter counter(&hits);
      ThreadPool::TryBatchParallelFor(tp, total, counter, nb);
      CHECK(each_once(hits));
      CHECK(counter.calls.load() == total);

      // A mutable lambda holding its own (atomic) state, as an rvalue.
      std::vector<std::atomic<int>> h2(static_cast<std::size_t>(total));
      std::atomic<long> seen{0};
      ThreadPool::TryBatchParallelFor(
          tp, total,
          [&h2, &seen, c = std::atomic<long>{0}](std::ptrdiff_t i) mutable {
            h2[static_cast<std::size_t>(i)]++;
            seen.store(++c);
          },
          nb);
      CHECK(each_once(h2));
      if (total > 0) CHECK(seen.load() >= 1);
    }
  }

  // A mutable lambda with a plain counter, on the serial paths (NULL pool,
  // one batch): ORT's example `[c = 0](std::ptrdiff_t) mutable {...}`.
  int last = -1;
  ThreadPool::TryBatchParallelFor(
      nullptr, 10, [&last, c = 0](std::ptrdiff_t) mutable { last = c++; }, 0);
  CHECK(last == 9);
  last = -1;
  ThreadPool::TryBatchParallelFor(
      tp, 10, [&last, c = 0](std::ptrdiff_t) mutable { last = c++; }, 1);
  CHECK(last == 9);

  // A const functor still works.
  std::vector<std::atomic<int>> h3(100);
  const auto body = [&h3](std::ptrdiff_t i) { h3[static_cast<std::size_t>(i)]++; };
  ThreadPool::TryBatchParallelFor(tp, 100, body, 7);
  CHECK(each_once(h3));

  // An exception from one index is rethrown on the caller after the loop;
  // the other batches still ran or were skipped, none runs afterwards.
  std::atomic<int> after{0};
  std::atomic<bool> returned{false};
  bool caught = false;
  try {
    ThreadPool::TryBatchParallelFor(
        tp, 200,
        [&](std::ptrdiff_t i) {
          if (returned.load()) after++;
          if (i == 123) throw std::runtime_error("index 123");
        },
        8);
  } catch (const std::runtime_error &e) {
    returned = true;
    caught = std::string(e.what()) == "index 123";
  }
  CHECK(caught);
  CHECK(after.load() == 0);
}

int main() {
  partition();
  batches(nullptr);
  for (int threads = 1; threads <= 4; ++threads) {
    ThreadPool tp(threads);
    batches(&tp);
  }
  return check_result();
}
