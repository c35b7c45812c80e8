// Code written against ONNX Runtime's thread pool, compiled against leanrt:
// with LEANRT_ORT_COMPAT defined, leanrt.hpp provides
// onnxruntime::concurrency::ThreadPool and onnxruntime::TensorOpCost with
// ORT's static helpers, so the kernel below is what an ORT kernel writes.
//
//   c++ -std=c++17 ort_compat.cpp $(pkg-config --cflags --libs leanrt) -o ort_compat && ./ort_compat
//
// It checks its own results and exits non-zero when one is wrong.
#define LEANRT_ORT_COMPAT
#include <leanrt.hpp>

#include <atomic>
#include <cstdio>
#include <vector>

using onnxruntime::TensorOpCost;
using onnxruntime::concurrency::ThreadPool;

// An element-wise kernel as ORT writes one: the cost of one element tells the
// pool how to block the loop (and to run a small one on the caller alone).
static void Relu(ThreadPool *tp, const std::vector<float> &in, std::vector<float> &out) {
  const TensorOpCost cost{sizeof(float), sizeof(float), 1.0};
  ThreadPool::TryParallelFor(tp, static_cast<std::ptrdiff_t>(in.size()), cost,
                             [&](std::ptrdiff_t first, std::ptrdiff_t last) {
                               for (std::ptrdiff_t i = first; i < last; ++i)
                                 out[i] = in[i] > 0.0f ? in[i] : 0.0f;
                             });
}

int main() {
  // The session's intra-op pool: 4 threads, ORT's spin keys.
  leanrt::PoolOptions opts;
  opts.SetNumThreads(4)
      .SetConfig(LRT_POOL_KEY_SPIN_DURATION_US, "1000")
      .SetConfig(LRT_POOL_KEY_SPIN_BACKOFF_MAX, "8");
  ThreadPool tp(opts);

  std::vector<float> in(1 << 16), out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 7) - 3.0f;

  // Several kernels of one inference run inside one parallel section: they
  // reuse one team of workers.
  {
    ThreadPool::ParallelSection section(&tp);
    for (int k = 0; k < 3; ++k) Relu(&tp, in, out);
  }
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (out[i] != (in[i] > 0.0f ? in[i] : 0.0f)) {
      std::fprintf(stderr, "out[%zu] = %g\n", i, static_cast<double>(out[i]));
      return 1;
    }
  }

  // Batches as ORT partitions them, and the same helpers with a null pool
  // (everything on the caller), as ORT allows.
  std::atomic<long> sum{0};
  ThreadPool::TryBatchParallelFor(
      &tp, 1000, [&](std::ptrdiff_t i) { sum += static_cast<long>(i); }, 0);
  ThreadPool::TrySimpleParallelFor(nullptr, 10, [&](std::ptrdiff_t i) { sum += static_cast<long>(i); });
  if (sum != 999L * 1000 / 2 + 45) {
    std::fprintf(stderr, "sum %ld\n", sum.load());
    return 1;
  }

  // A refused call throws leanrt::Error with the status and the message.
  try {
    leanrt::PoolOptions bad;
    bad.SetConfig(LRT_POOL_KEY_SPIN_BACKOFF_MAX, "banana");
    std::fprintf(stderr, "a malformed value was accepted\n");
    return 1;
  } catch (const leanrt::Error &e) {
    std::printf("refused as expected: %s\n", e.what());
  }

  std::printf("degree of parallelism %d; ort_compat example ok\n",
              ThreadPool::DegreeOfParallelism(&tp));
  return 0;
}
