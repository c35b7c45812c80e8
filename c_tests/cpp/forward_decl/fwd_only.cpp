// A translation unit that only ever sees the forward declarations: it
// passes MLAS_THREADPOOL* through, as ORT kernels pass the pool to MLAS.
#include "mlas_like.h"

void KernelLikeRun(MLAS_THREADPOOL *tp, int *out, std::ptrdiff_t n) {
  MlasLikeFill(tp, out, n);
}
