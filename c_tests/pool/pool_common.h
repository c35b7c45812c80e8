/* Helpers shared by the pool's C tests. */
#ifndef LEANRT_POOL_COMMON_H
#define LEANRT_POOL_COMMON_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

/* Makes a pool of `threads` with a short spin (keeps the CI box free). */
static inline lrt_pool *make_pool(int threads) {
  lrt_pool_options *o = NULL;
  lrt_pool *p = NULL;
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, threads), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(o, 50), LRT_OK);
  CHECK_STATUS(lrt_pool_create(o, &p), LRT_OK);
  lrt_pool_options_destroy(o);
  return p;
}

/* The thread count of a pool made from `o` (1 for the NULL pool; -100 when
 * it cannot be made). */
static inline int threads_of(const lrt_pool_options *o) {
  lrt_pool *p = NULL;
  if (lrt_pool_create(o, &p) != LRT_OK) return -100;
  int n = p ? lrt_pool_num_threads(p) + 1 : 1;
  lrt_pool_destroy(p);
  return n;
}

/* Per-index hit counters. */
typedef struct hits {
  atomic_uchar *h;
  ptrdiff_t n;
  atomic_int bad; /* blocks outside [0, n) */
} hits;

static inline void hits_init(hits *h, ptrdiff_t n) {
  h->n = n;
  h->h = (atomic_uchar *)calloc((size_t)(n > 0 ? n : 1), sizeof(atomic_uchar));
  atomic_init(&h->bad, 0);
}

static inline void hit(hits *h, ptrdiff_t i) {
  if (i < 0 || i >= h->n)
    atomic_fetch_add(&h->bad, 1);
  else
    atomic_fetch_add_explicit(&h->h[i], 1, memory_order_relaxed);
}

/* Returns 1 if every index was hit exactly once; frees the counters. */
static inline int hits_once(hits *h) {
  int ok = atomic_load(&h->bad) == 0;
  for (ptrdiff_t i = 0; i < h->n && ok; i++) ok = atomic_load(&h->h[i]) == 1;
  free(h->h);
  return ok;
}

static inline void range_cb(void *ctx, ptrdiff_t first, ptrdiff_t last) {
  hits *h = (hits *)ctx;
  if (first < 0 || last > h->n || first >= last) atomic_fetch_add(&h->bad, 1);
  for (ptrdiff_t i = first; i < last; i++) hit(h, i);
}

static inline void index_cb(void *ctx, ptrdiff_t i) { hit((hits *)ctx, i); }

static inline void kernel_cb(void *ctx, size_t i) { hit((hits *)ctx, (ptrdiff_t)i); }

static inline double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

#endif
