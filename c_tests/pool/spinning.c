/* Every spin configuration (-1, 0, 100, 1000 us x backoff 1, 4, 8, 64;
 * spinning disabled; force_spinning_stop) runs loops correctly; after a
 * burst with spin_duration_us = 1000 all workers are asleep (stats) within
 * a bounded wait and wake up for new work; disable_spinning puts spinners to
 * sleep. */
#include "pool_common.h"

static lrt_pool *pool_with(const char *us, const char *backoff, const char *allow, const char *stop) {
  lrt_pool_options *o = NULL;
  lrt_pool *p = NULL;
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 3), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_config(o, LRT_POOL_KEY_SPIN_DURATION_US, us), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_config(o, LRT_POOL_KEY_SPIN_BACKOFF_MAX, backoff), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_config(o, LRT_POOL_KEY_ALLOW_SPINNING, allow), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_config(o, LRT_POOL_KEY_FORCE_SPINNING_STOP, stop), LRT_OK);
  CHECK_STATUS(lrt_pool_create(o, &p), LRT_OK);
  lrt_pool_options_destroy(o);
  return p;
}

static void run_loops(lrt_pool *p) {
  for (int r = 0; r < 5; r++) {
    hits h;
    hits_init(&h, 5000);
    lrt_pool_try_parallel_for(p, 5000, 1e5, range_cb, &h);
    CHECK(hits_once(&h));
    if (r == 2) lrt_pool_disable_spinning(p);
    if (r == 3) lrt_pool_enable_spinning(p);
  }
}

static int wait_asleep(lrt_pool *p, uint64_t want, double limit_s) {
  double t0 = now_s();
  lrt_pool_stats s;
  do {
    CHECK_STATUS(lrt_pool_get_stats(p, &s), LRT_OK);
    if (s.workers_asleep == want) return 1;
    sleep_ms(1);
  } while (now_s() - t0 < limit_s);
  fprintf(stderr, "asleep %llu of %llu after %.1f s\n", (unsigned long long)s.workers_asleep,
          (unsigned long long)want, limit_s);
  return 0;
}

/* A task that counts itself in the atomic_int its ctx points to. */
static void count_task(void *ctx) { atomic_fetch_add((atomic_int *)ctx, 1); }

/* Waits until `*n` reaches `want` (at most `limit_s`). */
static int wait_count(atomic_int *n, int want, double limit_s) {
  double t0 = now_s();
  while (atomic_load(n) < want) {
    if (now_s() - t0 >= limit_s) return 0;
    sleep_ms(1);
  }
  return 1;
}

int main(void) {
  const char *us[] = {"-1", "0", "100", "1000"};
  const char *backoff[] = {"1", "4", "8", "64"};
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      lrt_pool *p = pool_with(us[i], backoff[j], "1", "0");
      run_loops(p);
      lrt_pool_disable_spinning(p); /* do not let legacy spinners burn the box */
      lrt_pool_destroy(p);
    }
  lrt_pool *p = pool_with("1000", "1", "0", "0"); /* spinning not allowed */
  run_loops(p);
  CHECK(wait_asleep(p, 2, 5.0));
  lrt_pool_destroy(p);
  p = pool_with("-1", "1", "1", "1"); /* force_spinning_stop */
  run_loops(p);
  /* run_loops' last enable_spinning opened a request, during which workers
   * may spin for their budget; its end sends them to sleep at once. */
  lrt_pool_disable_spinning(p);
  CHECK(wait_asleep(p, 2, 5.0)); /* no loop running, no request: nobody spins */
  lrt_pool_destroy(p);

  /* All asleep after a burst at 1000 us, then prompt service again. */
  p = pool_with("1000", "8", "1", "0");
  for (int r = 0; r < 50; r++) {
    hits h;
    hits_init(&h, 10000);
    lrt_pool_try_parallel_for(p, 10000, 1e5, range_cb, &h);
    CHECK(hits_once(&h));
  }
  /* The tasks run on the workers (not inline: no queue is full); wait for
   * all of them first, since a worker that was woken but has not run yet
   * still counts as asleep. */
  static atomic_int ran;
  for (int r = 0; r < 1000; r++) lrt_pool_schedule(p, count_task, &ran);
  CHECK(wait_count(&ran, 1000, 10.0));
  CHECK(wait_asleep(p, 2, 5.0));
  lrt_pool_stats s;
  CHECK_STATUS(lrt_pool_get_stats(p, &s), LRT_OK);
  CHECK(s.parks >= 2);
  CHECK(s.tasks_run >= 1000);
  hits h;
  hits_init(&h, 1000);
  lrt_pool_try_simple_parallel_for(p, 1000, index_cb, &h);
  CHECK(hits_once(&h));
  lrt_pool_destroy(p);

  /* disable_spinning: 10 s spinners go to sleep at once. */
  p = pool_with("10000000", "1", "1", "0");
  hits_init(&h, 1000);
  lrt_pool_try_simple_parallel_for(p, 1000, index_cb, &h);
  CHECK(hits_once(&h));
  lrt_pool_disable_spinning(p);
  CHECK(wait_asleep(p, 2, 3.0));
  lrt_pool_destroy(p);
  return check_result();
}
