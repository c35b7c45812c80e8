/* Plain-C stand-in for the pool functions (what a runtime had before
 * leanrt): no threads, every loop and task runs serially on the caller. */
#include <stdlib.h>
#include <string.h>

#include "leanrt.h"

void standin_set_error(const char *msg);

struct lrt_pool_options {
  int num_threads;
};

lrt_status lrt_pool_options_create(lrt_pool_options **out) {
  if (!out) return LRT_ERR_INVALID_ARGUMENT;
  *out = (lrt_pool_options *)calloc(1, sizeof **out);
  return *out ? LRT_OK : LRT_ERR_NO_MEMORY;
}

void lrt_pool_options_destroy(lrt_pool_options *o) { free(o); }

lrt_status lrt_pool_options_set_num_threads(lrt_pool_options *o, int n) {
  if (!o || n < 0) {
    standin_set_error("lrt_pool_options_set_num_threads: bad argument");
    return LRT_ERR_INVALID_ARGUMENT;
  }
  o->num_threads = n;
  return LRT_OK;
}

lrt_status lrt_pool_options_set_config(lrt_pool_options *o, const char *key, const char *value) {
  if (!o || !key || !value) return LRT_ERR_INVALID_ARGUMENT;
  if (strncmp(key, "session.", 8) != 0) return LRT_ERR_INVALID_ARGUMENT;
  return LRT_OK; /* the stand-in has no knobs */
}

/* The stand-in never creates threads: every pool is the NULL pool. */
lrt_status lrt_pool_create(const lrt_pool_options *o, lrt_pool **out) {
  if (!o || !out) return LRT_ERR_INVALID_ARGUMENT;
  *out = NULL;
  return LRT_OK;
}

void lrt_pool_destroy(lrt_pool *p) { (void)p; }

void lrt_pool_try_parallel_for(lrt_pool *p, ptrdiff_t total, double cost, lrt_range_fn fn, void *ctx) {
  (void)p;
  (void)cost;
  if (fn && total > 0) fn(ctx, 0, total);
}

void lrt_pool_try_simple_parallel_for(lrt_pool *p, ptrdiff_t total, lrt_index_fn fn, void *ctx) {
  (void)p;
  for (ptrdiff_t i = 0; fn && i < total; i++) fn(ctx, i);
}

void lrt_pool_try_batch_parallel_for(lrt_pool *p, ptrdiff_t total, lrt_index_fn fn, void *ctx,
                                     ptrdiff_t num_batches) {
  (void)p;
  (void)num_batches;
  for (ptrdiff_t i = 0; fn && i < total; i++) fn(ctx, i);
}

void lrt_pool_schedule(lrt_pool *p, lrt_task_fn fn, void *ctx) {
  (void)p;
  if (fn) fn(ctx);
}

lrt_status lrt_kernel_parallel_for(lrt_pool *p, lrt_kernel_fn fn, size_t total, size_t num_batch,
                                   void *usr_data) {
  (void)p;
  (void)num_batch;
  if (!fn) return LRT_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < total; i++) fn(usr_data, i);
  return LRT_OK;
}

int lrt_pool_degree_of_parallelism(const lrt_pool *p) {
  (void)p;
  return 1;
}
