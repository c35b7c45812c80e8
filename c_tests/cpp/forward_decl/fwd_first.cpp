// Forward declarations first, then leanrt.hpp with LEANRT_ORT_COMPAT.
#include "mlas_like.h"

#define LEANRT_ORT_COMPAT
#include "leanrt.hpp"

void MlasLikeFill(MLAS_THREADPOOL *tp, int *out, std::ptrdiff_t n) {
  using onnxruntime::concurrency::ThreadPool;
  const std::ptrdiff_t batches = ThreadPool::DegreeOfParallelism(tp);
  ThreadPool::TrySimpleParallelFor(tp, batches, [&](std::ptrdiff_t b) {
    const ThreadPool::WorkInfo w = ThreadPool::PartitionWork(b, batches, n);
    for (std::ptrdiff_t i = w.start; i < w.end; ++i) out[i] += 1;
  });
}
