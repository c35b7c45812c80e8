/* A batch count far above the number of indices (up to PTRDIFF_MAX, in
 * TryBatchParallelFor and KernelContext_ParallelFor) is bad input like any
 * other: each index still runs once and the call returns promptly (the pool
 * needs no more batches than indices). ctest's timeout (tests.cmake) turns a
 * hang into a failure. */
#include <stdatomic.h>
#include <stdint.h>

#include "../pool/pool_common.h"

static atomic_long count;
static void index_body(void *ctx, ptrdiff_t i) {
  (void)ctx;
  (void)i;
  atomic_fetch_add(&count, 1);
}
static void kernel_body(void *ctx, size_t i) {
  (void)ctx;
  (void)i;
  atomic_fetch_add(&count, 1);
}

int main(void) {
  lrt_pool *p = make_pool(3);
  const ptrdiff_t nbs[] = {1000, (ptrdiff_t)1 << 24, PTRDIFF_MAX / 2, PTRDIFF_MAX};
  lrt_pool *pools[2] = {NULL, p};
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < 4; i++) {
      atomic_store(&count, 0);
      lrt_pool_try_batch_parallel_for(pools[k], 10, index_body, NULL, nbs[i]);
      CHECK(atomic_load(&count) == 10);
      atomic_store(&count, 0);
      CHECK_STATUS(lrt_kernel_parallel_for(pools[k], kernel_body, 10, (size_t)nbs[i], NULL), LRT_OK);
      CHECK(atomic_load(&count) == 10);
    }
  }
  lrt_pool_destroy(p);
  return check_result();
}
