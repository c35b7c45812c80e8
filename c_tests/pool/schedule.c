/* Schedule: inline on a NULL pool; bursts of 0..65536 tasks from outside
 * and from inside the pool (the queue-full path runs tasks inline); destroy
 * runs every scheduled task; pools created and destroyed in a loop. */
#include "pool_common.h"

static atomic_long ran;
static void count_task(void *ctx) {
  (void)ctx;
  atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

typedef struct burst {
  lrt_pool *pool;
  long n;
  atomic_int done;
} burst;

static void burst_task(void *ctx) {
  burst *b = (burst *)ctx;
  CHECK(lrt_pool_current_thread_id(b->pool) >= 0);
  for (long i = 0; i < b->n; i++) lrt_pool_schedule(b->pool, count_task, NULL);
  atomic_store(&b->done, 1);
}

int main(void) {
  /* NULL pool: inline, at once. */
  atomic_store(&ran, 0);
  lrt_pool_schedule(NULL, count_task, NULL);
  CHECK(atomic_load(&ran) == 1);

  static const long bursts[] = {0, 1, 100, 1024, 4096, 65536};
  int sizes[] = {2, 4, 8};
  for (size_t b = 0; b < sizeof bursts / sizeof bursts[0]; b++) {
    for (size_t s = 0; s < 3; s++) {
      atomic_store(&ran, 0);
      lrt_pool *p = make_pool(sizes[s]);
      for (long i = 0; i < bursts[b]; i++) lrt_pool_schedule(p, count_task, NULL);
      lrt_pool_destroy(p);
      if (atomic_load(&ran) != bursts[b]) {
        fprintf(stderr, "outside burst %ld threads %d: ran %ld\n", bursts[b], sizes[s], atomic_load(&ran));
        CHECK(0);
      }
    }
    /* From inside: a task schedules the burst into its own queue. */
    atomic_store(&ran, 0);
    burst bt;
    bt.pool = make_pool(4);
    bt.n = bursts[b];
    atomic_init(&bt.done, 0);
    lrt_pool_schedule(bt.pool, burst_task, &bt);
    double t0 = now_s();
    while (!atomic_load(&bt.done) && now_s() - t0 < 60) sleep_ms(1);
    CHECK(atomic_load(&bt.done) == 1);
    lrt_pool_destroy(bt.pool);
    if (atomic_load(&ran) != bursts[b]) {
      fprintf(stderr, "inside burst %ld: ran %ld\n", bursts[b], atomic_load(&ran));
      CHECK(0);
    }
  }

  /* Create/destroy in a loop, some with work. */
  for (int i = 0; i < 200; i++) {
    lrt_pool *p = make_pool(2 + i % 4);
    CHECK(p != NULL);
    if (i % 5 == 0) {
      hits h;
      hits_init(&h, 100);
      lrt_pool_try_simple_parallel_for(p, 100, index_cb, &h);
      CHECK(hits_once(&h));
      atomic_store(&ran, 0);
      for (int k = 0; k < 10; k++) lrt_pool_schedule(p, count_task, NULL);
    }
    lrt_pool_destroy(p);
    if (i % 5 == 0) CHECK(atomic_load(&ran) == 10);
  }
  return check_result();
}
