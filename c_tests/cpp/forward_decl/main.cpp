// ORT's forward declarations of onnxruntime::concurrency::ThreadPool and
// onnxruntime::TensorOpCost, and MLAS_THREADPOOL, in both include orders
// and across translation units (fwd_first.cpp, hpp_first.cpp,
// fwd_only.cpp): one program, so the pointer types must be the same class.
#include "mlas_like.h"

#define LEANRT_ORT_COMPAT
#include "leanrt.hpp"

#include <type_traits>
#include <vector>

#include "check.h"

using onnxruntime::TensorOpCost;
using onnxruntime::concurrency::ThreadPool;

static_assert(std::is_class<ThreadPool>::value, "ORT's ThreadPool is a class");
static_assert(std::is_base_of<leanrt::ThreadPool, ThreadPool>::value, "built on leanrt's");
static_assert(std::is_same<MLAS_THREADPOOL, ThreadPool>::value, "MLAS_THREADPOOL");
static_assert(std::is_class<TensorOpCost>::value, "ORT's TensorOpCost is a struct");
static_assert(!std::is_copy_constructible<ThreadPool>::value, "not copyable");
static_assert(std::is_nothrow_move_constructible<ThreadPool>::value, "movable");

static bool all_equal(const std::vector<int> &v, int want) {
  for (int x : v)
    if (x != want) return false;
  return true;
}

static void run(ThreadPool *tp) {
  const std::ptrdiff_t n = 777;
  std::vector<int> out(n, 0);
  KernelLikeRun(tp, out.data(), n);
  CHECK(all_equal(out, 1));
  MlasLikeFill(tp, out.data(), n);
  CHECK(all_equal(out, 2));
  MlasLikeCostLoop(tp, TensorOpCost{4.0, 4.0, 1000.0}, out.data(), n);
  CHECK(all_equal(out, 3));
  CHECK(MlasLikeDegree(tp) == ThreadPool::DegreeOfParallelism(tp));
  CHECK(MlasLikeDegree(tp) >= 1);
}

int main() {
  run(nullptr);
  for (int threads = 1; threads <= 4; ++threads) {
    ThreadPool tp(threads);
    run(&tp);
    CHECK(MlasLikeDegree(&tp) >= threads);
  }
  return check_result();
}
