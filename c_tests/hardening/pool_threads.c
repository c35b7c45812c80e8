/* The pool under concurrent C callers (also the ThreadSanitizer target):
 * several pthreads run loops on one shared pool at once, one of them nesting
 * a loop inside a loop body; a storm thread schedules tasks; a toggler
 * disables and enables spinning; a churn thread creates and destroys small
 * pools. Every index runs exactly once (plain, non-atomic per-index writes:
 * correct only if the pool orders each body before the loop returns), every
 * scheduled task runs, and destroy returns only after all of them did.
 * LEANRT_TEST_SMALL=1 (valgrind, sanitizers) runs fewer rounds. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define CALLERS 3
#define N 512

static lrt_pool *pool;
static int rounds;
static atomic_int failures;
static atomic_long scheduled, ran;
static atomic_int stop;

typedef struct {
  unsigned char hits[N]; /* plain bytes: each index is written by one body */
  lrt_pool *nest;
} loop_ctx;

static void range_body(void *ctx, ptrdiff_t first, ptrdiff_t last);

static void check_once(const loop_ctx *c, ptrdiff_t n) {
  for (ptrdiff_t i = 0; i < N; i++) {
    if (c->hits[i] != (i < n ? 1 : 0)) {
      atomic_fetch_add(&failures, 1);
      fprintf(stderr, "index %td ran %d times (total %td)\n", i, c->hits[i], n);
      return;
    }
  }
}

static void range_body(void *ctx, ptrdiff_t first, ptrdiff_t last) {
  loop_ctx *c = (loop_ctx *)ctx;
  for (ptrdiff_t i = first; i < last; i++) c->hits[i]++;
  if (first == 0 && c->nest) {
    loop_ctx *inner = (loop_ctx *)calloc(1, sizeof *inner);
    if (!inner) return;
    lrt_pool_try_parallel_for(c->nest, 64, 5e4, range_body, inner);
    check_once(inner, 64);
    free(inner);
  }
}

static void index_body(void *ctx, ptrdiff_t i) { ((loop_ctx *)ctx)->hits[i]++; }

static void pause_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

static void task(void *ctx) {
  atomic_fetch_add((atomic_long *)ctx, 1);
}

static void *caller(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;
  loop_ctx *c = (loop_ctx *)malloc(sizeof *c);
  if (!c) return NULL;
  for (int r = 0; r < rounds; r++) {
    seed = seed * 1103515245u + 12345u;
    ptrdiff_t n = (ptrdiff_t)((seed >> 8) % N);
    memset(c, 0, sizeof *c);
    c->nest = (r % 7 == 0) ? pool : NULL;
    switch (r % 3) {
      case 0: lrt_pool_try_parallel_for(pool, n, (double)((seed >> 4) % 100000), range_body, c); break;
      case 1: lrt_pool_try_simple_parallel_for(pool, n, index_body, c); break;
      default: lrt_pool_try_batch_parallel_for(pool, n, index_body, c, (ptrdiff_t)(seed % 9)); break;
    }
    check_once(c, n);
  }
  free(c);
  return NULL;
}

static void *storm(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    for (int i = 0; i < 200; i++) {
      lrt_pool_schedule(pool, task, &ran);
      atomic_fetch_add(&scheduled, 1);
    }
    pause_us(200);
  }
  return NULL;
}

static void *toggler(void *arg) {
  (void)arg;
  int k = 0;
  while (!atomic_load(&stop)) {
    if (k++ % 2) lrt_pool_disable_spinning(pool); else lrt_pool_enable_spinning(pool);
    pause_us(100);
  }
  return NULL;
}

static void *churn(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    lrt_pool_options *o = NULL;
    lrt_pool *p = NULL;
    if (lrt_pool_options_create(&o) != LRT_OK) { atomic_fetch_add(&failures, 1); return NULL; }
    lrt_pool_options_set_num_threads(o, 2);
    if (lrt_pool_create(o, &p) != LRT_OK) atomic_fetch_add(&failures, 1);
    lrt_pool_options_destroy(o);
    atomic_long mine = 0;
    for (int i = 0; i < 50; i++) lrt_pool_schedule(p, task, &mine);
    loop_ctx *c = (loop_ctx *)calloc(1, sizeof *c);
    if (c) {
      lrt_pool_try_simple_parallel_for(p, 100, index_body, c);
      check_once(c, 100);
      free(c);
    }
    lrt_pool_destroy(p);
    if (atomic_load(&mine) != 50) {
      fprintf(stderr, "churned pool: %ld of 50 scheduled tasks ran before destroy returned\n", (long)atomic_load(&mine));
      atomic_fetch_add(&failures, 1);
    }
  }
  return NULL;
}

int main(void) {
  const char *small = getenv("LEANRT_TEST_SMALL");
  rounds = (small && small[0] == '1') ? 40 : 400;
  lrt_pool_options *o = NULL;
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 4), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(o, 50), LRT_OK);
  CHECK_STATUS(lrt_pool_create(o, &pool), LRT_OK);
  lrt_pool_options_destroy(o);
  if (!pool) return check_result();

  pthread_t callers[CALLERS], helpers[3];
  for (int i = 0; i < CALLERS; i++) CHECK(pthread_create(&callers[i], NULL, caller, (void *)(uintptr_t)(i + 1)) == 0);
  CHECK(pthread_create(&helpers[0], NULL, storm, NULL) == 0);
  CHECK(pthread_create(&helpers[1], NULL, toggler, NULL) == 0);
  CHECK(pthread_create(&helpers[2], NULL, churn, NULL) == 0);
  for (int i = 0; i < CALLERS; i++) pthread_join(callers[i], NULL);
  atomic_store(&stop, 1);
  for (int i = 0; i < 3; i++) pthread_join(helpers[i], NULL);
  lrt_pool_enable_spinning(pool);
  lrt_pool_destroy(pool);
  CHECK(atomic_load(&failures) == 0);
  CHECK(atomic_load(&ran) == atomic_load(&scheduled));
  printf("pool_threads: %d callers x %d loops, %ld tasks scheduled and run\n", CALLERS, rounds,
         (long)atomic_load(&scheduled));
  return check_result();
}
