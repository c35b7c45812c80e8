/* leanrt's thread pool from C: options, a parallel loop, a parallel section
 * of several loops, Schedule, the counters, and how a refused call reports.
 *
 * Build and run against an installed leanrt (see the README for the other
 * ways to link):
 *
 *   cc -std=c11 pool.c $(pkg-config --cflags --libs leanrt) -o pool && ./pool
 *
 * It checks its own results and exits non-zero when one is wrong. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <leanrt.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Prints what went wrong in the last failed call of this thread and exits. */
static void fail(const char *what, lrt_status status) {
  char msg[256];
  lrt_last_error(msg, sizeof msg);
  fprintf(stderr, "%s: %s (%s)\n", what, lrt_status_str(status), msg);
  exit(1);
}

/* ---- a parallel loop: y[i] = a * x[i] + y[i] ---------------------------- */

typedef struct {
  double a;
  const double *x;
  double *y;
} axpy_args;

/* A loop body gets a block [first, last) of indices; blocks of one loop run
 * on several threads at once, each index exactly once. */
static void axpy_block(void *ctx, ptrdiff_t first, ptrdiff_t last) {
  axpy_args *args = (axpy_args *)ctx;
  for (ptrdiff_t i = first; i < last; i++) args->y[i] += args->a * args->x[i];
}

/* ---- a loop over single indices: one counter per index ------------------- */

static void count_index(void *ctx, ptrdiff_t i) {
  atomic_int *hits = (atomic_int *)ctx;
  atomic_fetch_add(&hits[i], 1);
}

/* ---- Schedule: fire-and-forget tasks ------------------------------------ */

static void scheduled_task(void *ctx) {
  atomic_fetch_add((atomic_int *)ctx, 1);
}

int main(void) {
  /* 1. Options: 4 threads (the caller and 3 workers; 0 = one per physical
   *    core), and ORT's session keys for the spin policy: spin for 1000 µs
   *    with exponential backoff, then sleep. A malformed key or value is
   *    refused with LRT_ERR_INVALID_ARGUMENT and changes nothing. */
  lrt_pool_options *opts = NULL;
  lrt_status st = lrt_pool_options_create(&opts);
  if (st != LRT_OK) fail("lrt_pool_options_create", st);
  if ((st = lrt_pool_options_set_num_threads(opts, 4)) != LRT_OK) fail("set_num_threads", st);
  if ((st = lrt_pool_options_set_config(opts, LRT_POOL_KEY_SPIN_DURATION_US, "1000")) !=
      LRT_OK)
    fail("set_config spin_duration_us", st);
  if ((st = lrt_pool_options_set_config(opts, LRT_POOL_KEY_SPIN_BACKOFF_MAX, "8")) != LRT_OK)
    fail("set_config spin_backoff_max", st);
  st = lrt_pool_options_set_config(opts, LRT_POOL_KEY_SPIN_BACKOFF_MAX, "banana");
  if (st != LRT_ERR_INVALID_ARGUMENT) {
    fprintf(stderr, "a malformed value was accepted\n");
    return 1;
  }

  /* 2. The pool. NULL would also be a valid pool (everything runs on the
   *    caller), which is what a 1-thread configuration gives. The options
   *    stay ours: destroy them once the pool exists. */
  lrt_pool *pool = NULL;
  if ((st = lrt_pool_create(opts, &pool)) != LRT_OK) fail("lrt_pool_create", st);
  lrt_pool_options_destroy(opts);
  printf("pool: %d worker threads besides the caller (degree of parallelism %d)\n",
         lrt_pool_num_threads(pool),
         lrt_pool_degree_of_parallelism(pool));

  /* A refused call: no options at all is not "the defaults". */
  lrt_pool *none = NULL;
  st = lrt_pool_create(NULL, &none);
  char msg[256];
  lrt_last_error(msg, sizeof msg);
  printf("lrt_pool_create(NULL, ...) -> %s: %s\n", lrt_status_str(st), msg);
  if (st != LRT_ERR_INVALID_ARGUMENT || none != NULL) return 1;

  /* 3. A parallel loop. The cost per index (compute cycles) lets the pool's
   *    cost model choose the block size, and run small loops on the caller
   *    alone, as ONNX Runtime's TryParallelFor does. */
  enum { N = 100000 };
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  if (!x || !y) return 1;
  for (int i = 0; i < N; i++) {
    x[i] = i;
    y[i] = 1.0;
  }
  axpy_args args = {2.0, x, y};
  lrt_pool_try_parallel_for(pool, N, /*cost_per_unit=*/10.0, axpy_block, &args);
  for (int i = 0; i < N; i++) {
    if (y[i] != 1.0 + 2.0 * i) {
      fprintf(stderr, "y[%d] = %g\n", i, y[i]);
      return 1;
    }
  }
  printf("parallel loop: %d indices done\n", N);

  /* 4. A parallel section: the loops this thread runs until section_end
   *    reuse one team of workers, which wait for the next loop instead of
   *    going back to sleep (ORT's ThreadPool::ParallelSection). */
  enum { M = 64, LOOPS = 3 };
  atomic_int hits[M];
  for (int i = 0; i < M; i++) atomic_init(&hits[i], 0);
  lrt_pool_section *section = NULL;
  if ((st = lrt_pool_section_begin(pool, &section)) != LRT_OK) fail("lrt_pool_section_begin", st);
  for (int k = 0; k < LOOPS; k++) lrt_pool_try_simple_parallel_for(pool, M, count_index, hits);
  lrt_pool_section_end(section);
  for (int i = 0; i < M; i++) {
    if (atomic_load(&hits[i]) != LOOPS) {
      fprintf(stderr, "index %d ran %d times\n", i, atomic_load(&hits[i]));
      return 1;
    }
  }
  printf("section: %d loops of %d indices, each index once per loop\n", LOOPS, M);

  /* 5. Schedule: each task runs once on a worker (on the caller when the
   *    pool is NULL or a queue is full). Here we wait for them; destroying
   *    the pool would also run every task still queued. */
  enum { TASKS = 16 };
  atomic_int done;
  atomic_init(&done, 0);
  for (int t = 0; t < TASKS; t++) lrt_pool_schedule(pool, scheduled_task, &done);
  const struct timespec ms = {0, 1000000};
  for (int waited = 0; atomic_load(&done) < TASKS && waited < 10000; waited++) nanosleep(&ms, NULL);
  if (atomic_load(&done) != TASKS) {
    fprintf(stderr, "%d of %d tasks ran\n", atomic_load(&done), TASKS);
    return 1;
  }
  printf("schedule: %d tasks ran\n", TASKS);

  /* 6. The counters (lrt_pool_get_stats: "get" because C cannot have a
   *    function and the lrt_pool_stats type under one name). */
  lrt_pool_stats stats;
  if ((st = lrt_pool_get_stats(pool, &stats)) != LRT_OK) fail("lrt_pool_get_stats", st);
  printf("stats: %llu jobs on workers, %llu steals, %llu parks, %llu wakeups\n",
         (unsigned long long)stats.tasks_run, (unsigned long long)stats.steals,
         (unsigned long long)stats.parks, (unsigned long long)stats.wakeups);

  /* 7. Destroy joins every worker. */
  lrt_pool_destroy(pool);
  free(x);
  free(y);
  printf("pool example ok\n");
  return 0;
}
