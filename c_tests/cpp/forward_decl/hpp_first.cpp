// leanrt.hpp with LEANRT_ORT_COMPAT first, then the forward declarations.
#define LEANRT_ORT_COMPAT
#include "leanrt.hpp"

#include "mlas_like.h"

int MlasLikeDegree(MLAS_THREADPOOL *tp) {
  return onnxruntime::concurrency::ThreadPool::DegreeOfParallelism(tp);
}

void MlasLikeCostLoop(MLAS_THREADPOOL *tp, const onnxruntime::TensorOpCost &cost, int *out,
                      std::ptrdiff_t n) {
  onnxruntime::concurrency::ThreadPool::TryParallelFor(tp, n, cost,
                                                       [&](std::ptrdiff_t a, std::ptrdiff_t b) {
                                                         for (auto i = a; i < b; ++i) out[i] += 1;
                                                       });
}
