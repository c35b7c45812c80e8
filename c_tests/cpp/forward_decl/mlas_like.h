// A header shaped like MLAS's mlas.h and ORT's kernel headers: it forward
// declares ORT's thread pool and cost struct without including leanrt.hpp,
// names the pool MLAS_THREADPOOL and declares functions taking it.
#ifndef LEANRT_TEST_MLAS_LIKE_H
#define LEANRT_TEST_MLAS_LIKE_H

#include <cstddef>

namespace onnxruntime {
namespace concurrency {
class ThreadPool;
}  // namespace concurrency
struct TensorOpCost;
}  // namespace onnxruntime

using MLAS_THREADPOOL = onnxruntime::concurrency::ThreadPool;

// Defined in fwd_first.cpp (forward declarations seen before leanrt.hpp).
void MlasLikeFill(MLAS_THREADPOOL *tp, int *out, std::ptrdiff_t n);
// Defined in hpp_first.cpp (leanrt.hpp seen before the forward declarations).
int MlasLikeDegree(MLAS_THREADPOOL *tp);
void MlasLikeCostLoop(MLAS_THREADPOOL *tp, const onnxruntime::TensorOpCost &cost, int *out,
                      std::ptrdiff_t n);
// Defined in fwd_only.cpp, a translation unit that never sees leanrt.hpp.
void KernelLikeRun(MLAS_THREADPOOL *tp, int *out, std::ptrdiff_t n);

#endif
