// lrt_pool_destroy reached from inside the pool through the C++ wrapper
// (a loop body of TrySimpleParallelFor, a task given to Schedule, a section's
// loop): refused with LRT_ERR_STATE's message in lrt_last_error, no
// exception, nothing printed, and the pool stays whole: later loops run
// every index once and the owner destroys it normally from outside.
#include "leanrt.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "check.h"

namespace {

struct Probe {
  leanrt::ThreadPool *tp;
  std::atomic<int> calls{0};
  std::atomic<int> refused{0};

  void DestroyHere() {
    calls++;
    lrt_pool_destroy(tp->get());
    char msg[256];
    lrt_last_error(msg, sizeof msg);
    if (std::strstr(msg, "lrt_pool_destroy") != nullptr && tp->NumThreads() == 3) refused++;
  }
};

void CheckLoopStillRuns(leanrt::ThreadPool &tp) {
  std::vector<std::atomic<int>> seen(257);
  leanrt::ThreadPool::TrySimpleParallelFor(&tp, 257, [&](std::ptrdiff_t i) { seen[i]++; });
  for (auto &s : seen) CHECK(s.load() == 1);
}

}  // namespace

int main() {
  leanrt::ThreadPool tp(4);
  Probe probe{&tp};

  leanrt::ThreadPool::TrySimpleParallelFor(&tp, 16, [&](std::ptrdiff_t) { probe.DestroyHere(); });
  CHECK(probe.calls.load() == 16);
  CHECK(probe.refused.load() == 16);
  CheckLoopStillRuns(tp);

  std::atomic<bool> done{false};
  leanrt::ThreadPool::Schedule(&tp, [&] {
    probe.DestroyHere();
    done = true;
  });
  for (int i = 0; i < 10000 && !done.load(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(done.load());
  CHECK(probe.refused.load() == 17);
  CheckLoopStillRuns(tp);

  {
    leanrt::ThreadPool::ParallelSection section(&tp);
    leanrt::ThreadPool::TrySimpleParallelFor(&tp, 8, [&](std::ptrdiff_t) { probe.DestroyHere(); });
  }
  CHECK(probe.refused.load() == 25);
  CheckLoopStillRuns(tp);
  return check_result();
}
