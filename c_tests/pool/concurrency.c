/* Loops from many caller threads at once (on one pool, and on a pool per
 * caller: several pools in one process, taking part in the process-wide
 * CPU share or not, LRT_POOL_KEY_CPU_BUDGET), loops from inside Schedule'd
 * tasks, and loops nested in loop bodies (no deadlock). */
#include <pthread.h>

#include "pool_common.h"

static lrt_pool *pool;

static void *caller(void *arg) {
  long id = (long)(intptr_t)arg;
  for (int r = 0; r < 30; r++) {
    ptrdiff_t n = 1000 + id * 31 + r;
    hits h;
    hits_init(&h, n);
    lrt_pool_try_parallel_for(pool, n, 1e6, range_cb, &h);
    CHECK(hits_once(&h));
    hits_init(&h, n);
    lrt_pool_try_batch_parallel_for(pool, n, index_cb, &h, 7);
    CHECK(hits_once(&h));
  }
  return NULL;
}

typedef struct nest {
  hits *h;
  ptrdiff_t inner;
} nest;

typedef struct inner_ctx {
  hits *h;
  ptrdiff_t base;
} inner_ctx;

static void inner_range(void *ctx, ptrdiff_t a, ptrdiff_t b) {
  inner_ctx *c = (inner_ctx *)ctx;
  for (ptrdiff_t i = a; i < b; i++) hit(c->h, c->base + i);
}

static void outer_index(void *ctx, ptrdiff_t o) {
  nest *n = (nest *)ctx;
  inner_ctx c = {n->h, o * n->inner};
  lrt_pool_try_parallel_for(pool, n->inner, 1e6, inner_range, &c);
}

static atomic_int tasks_done;
static void loop_task(void *ctx) {
  (void)ctx;
  hits h;
  hits_init(&h, 3000);
  lrt_pool_try_parallel_for(pool, 3000, 1e6, range_cb, &h);
  CHECK(hits_once(&h));
  hits_init(&h, 100);
  CHECK_STATUS(lrt_kernel_parallel_for(pool, kernel_cb, 100, 0, &h), LRT_OK);
  CHECK(hits_once(&h));
  atomic_fetch_add(&tasks_done, 1);
}

/* A caller with a pool of its own: odd callers' pools stay out of the
 * CPU share. Every loop still runs each index once. */
static void *own_pool_caller(void *arg) {
  long id = (long)(intptr_t)arg;
  lrt_pool_options *o = NULL;
  lrt_pool *own = NULL;
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 2), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_config(o, LRT_POOL_KEY_CPU_BUDGET, id % 2 ? "0" : "1"), LRT_OK);
  CHECK_STATUS(lrt_pool_create(o, &own), LRT_OK);
  lrt_pool_options_destroy(o);
  for (int r = 0; r < 200; r++) {
    ptrdiff_t n = 64 + id + r % 7;
    hits h;
    hits_init(&h, n);
    lrt_pool_try_parallel_for(own, n, 1e6, range_cb, &h);
    CHECK(hits_once(&h));
  }
  lrt_pool_destroy(own);
  return NULL;
}

int main(void) {
  {
    pthread_t t[6];
    for (long i = 0; i < 6; i++) pthread_create(&t[i], NULL, own_pool_caller, (void *)(intptr_t)i);
    for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);
  }
  int sizes[] = {2, 4, 8};
  for (int s = 0; s < 3; s++) {
    pool = make_pool(sizes[s]);
    pthread_t t[6];
    for (long i = 0; i < 6; i++) pthread_create(&t[i], NULL, caller, (void *)(intptr_t)i);
    for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);

    hits h;
    nest n = {&h, 400};
    hits_init(&h, 16 * 400);
    lrt_pool_try_simple_parallel_for(pool, 16, outer_index, &n);
    CHECK(hits_once(&h));

    atomic_store(&tasks_done, 0);
    for (int i = 0; i < 20; i++) lrt_pool_schedule(pool, loop_task, NULL);
    double t0 = now_s();
    while (atomic_load(&tasks_done) < 20 && now_s() - t0 < 60) sleep_ms(1);
    CHECK(atomic_load(&tasks_done) == 20);
    lrt_pool_destroy(pool);
  }
  return check_result();
}
