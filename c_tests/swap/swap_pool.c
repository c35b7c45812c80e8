/* Swap test for the pool: a program written against the serial stand-in
 * gets the same results from leanrt's pool (LD_PRELOAD), which runs the
 * loops on worker threads. Results are order-independent sums. */
#include <stdatomic.h>
#include <stdio.h>

#include "leanrt.h"

static void range_sum(void *ctx, ptrdiff_t a, ptrdiff_t b) {
  long long s = 0;
  for (ptrdiff_t i = a; i < b; i++) s += (long long)i * i;
  atomic_fetch_add((atomic_llong *)ctx, s);
}

static void index_sum(void *ctx, ptrdiff_t i) { atomic_fetch_add((atomic_llong *)ctx, (long long)i * 3 + 1); }

static void kernel_sum(void *ctx, size_t i) { atomic_fetch_add((atomic_llong *)ctx, (long long)i); }

static void task(void *ctx) { atomic_fetch_add((atomic_llong *)ctx, 1); }

int main(void) {
  printf("served-by: %s\n", lrt_version());
  lrt_pool_options *o = NULL;
  lrt_pool *p = NULL;
  if (lrt_pool_options_create(&o) != LRT_OK) return 1;
  printf("set_num_threads(4): %d\n", (int)lrt_pool_options_set_num_threads(o, 4));
  printf("set_num_threads(-1): %d\n", (int)lrt_pool_options_set_num_threads(o, -1));
  printf("set_config(spin 1000): %d\n",
         (int)lrt_pool_options_set_config(o, LRT_POOL_KEY_SPIN_DURATION_US, "1000"));
  printf("create: %d\n", (int)lrt_pool_create(o, &p));
  const ptrdiff_t totals[] = {0, 1, 50, 81, 100000};
  for (int t = 0; t < 5; t++) {
    atomic_llong a, b, c, d;
    atomic_init(&a, 0);
    atomic_init(&b, 0);
    atomic_init(&c, 0);
    atomic_init(&d, 0);
    lrt_pool_try_parallel_for(p, totals[t], 1e5, range_sum, &a);
    lrt_pool_try_simple_parallel_for(p, totals[t], index_sum, &b);
    lrt_pool_try_batch_parallel_for(p, totals[t], index_sum, &c, 7);
    lrt_status st = lrt_kernel_parallel_for(p, kernel_sum, (size_t)totals[t], 3, &d);
    printf("total %td: range %lld simple %lld batch %lld kernel %lld (%d)\n", totals[t],
           (long long)atomic_load(&a), (long long)atomic_load(&b), (long long)atomic_load(&c),
           (long long)atomic_load(&d), (int)st);
  }
  printf("kernel NULL fn: %d\n", (int)lrt_kernel_parallel_for(p, NULL, 10, 0, NULL));
  atomic_llong tasks;
  atomic_init(&tasks, 0);
  for (int i = 0; i < 1000; i++) lrt_pool_schedule(p, task, &tasks);
  lrt_pool_destroy(p); /* runs every scheduled task */
  printf("tasks run: %lld\n", (long long)atomic_load(&tasks));
  lrt_pool_options_destroy(o);
  return 0;
}
