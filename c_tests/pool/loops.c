/* Every index exactly once for every loop kind, on NULL, 1, 2, 4 and
 * 8-thread pools, totals 0, 1, 50, 81, 1000000, batches 0, 1, 10, 20, 100;
 * lrt_kernel_parallel_for; NULL callbacks are rejected without running. */
#include "pool_common.h"

/* LEANRT_TEST_SMALL=1 (valgrind, sanitizers) replaces 1000000 with 20000. */
static ptrdiff_t totals[] = {0, 1, 50, 81, 1000000};
static const ptrdiff_t batches[] = {0, 1, 10, 20, 100};

static void never(void *ctx, ptrdiff_t a, ptrdiff_t b) {
  (void)a;
  (void)b;
  atomic_fetch_add((atomic_int *)ctx, 1);
}

int main(void) {
  /* tests.cmake also runs this with LEANRT_POOL_FORCE_HYBRID=1 (DOP x4). */
  const char *forced = getenv("LEANRT_POOL_FORCE_HYBRID");
  int factor = (forced && strcmp(forced, "1") == 0) ? 4 : 1;
  if (getenv("LEANRT_TEST_SMALL")) totals[4] = 20000;
  int sizes[] = {0 /* NULL pool */, 1, 2, 4, 8};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    lrt_pool *p = sizes[s] ? make_pool(sizes[s]) : NULL;
    if (sizes[s] == 1) CHECK(p == NULL); /* one thread: no pool */
    if (sizes[s] > 1) {
      CHECK(p != NULL);
      CHECK(lrt_pool_num_threads(p) == sizes[s] - 1);
      CHECK(lrt_pool_should_parallelize(p) == 1);
      CHECK(lrt_pool_degree_of_parallelism(p) % (sizes[s] * factor) == 0);
    }
    for (size_t t = 0; t < sizeof totals / sizeof totals[0]; t++) {
      ptrdiff_t n = totals[t];
      double costs[] = {0.0, 1.0, 1e4, 1e7};
      for (size_t c = 0; c < 4; c++) {
        hits h;
        hits_init(&h, n);
        lrt_pool_try_parallel_for(p, n, costs[c], range_cb, &h);
        if (!hits_once(&h)) {
          fprintf(stderr, "try_parallel_for threads %d total %td cost %g\n", sizes[s], n, costs[c]);
          CHECK(0);
        }
      }
      hits h;
      lrt_tensor_op_cost cost = {64.0, 64.0, 1000.0};
      hits_init(&h, n);
      lrt_pool_try_parallel_for_cost(p, n, &cost, range_cb, &h);
      CHECK(hits_once(&h));
      hits_init(&h, n);
      lrt_pool_try_simple_parallel_for(p, n, index_cb, &h);
      CHECK(hits_once(&h));
      for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        hits_init(&h, n);
        lrt_pool_try_batch_parallel_for(p, n, index_cb, &h, batches[b]);
        if (!hits_once(&h)) {
          fprintf(stderr, "batch threads %d total %td batches %td\n", sizes[s], n, batches[b]);
          CHECK(0);
        }
        hits_init(&h, n);
        CHECK_STATUS(lrt_kernel_parallel_for(p, kernel_cb, (size_t)n, (size_t)batches[b], &h), LRT_OK);
        CHECK(hits_once(&h));
      }
    }
    /* Negative totals call nothing. */
    atomic_int calls;
    atomic_init(&calls, 0);
    lrt_pool_try_parallel_for(p, -3, 1e9, never, &calls);
    CHECK(atomic_load(&calls) == 0);
    /* NULL callbacks and cost: an error, nothing runs, the pool still works. */
    lrt_pool_try_parallel_for(p, 10, 1.0, NULL, NULL);
    char msg[256];
    lrt_last_error(msg, sizeof msg);
    CHECK(strstr(msg, "lrt_pool_try_parallel_for") != NULL);
    lrt_pool_try_parallel_for_cost(p, 10, NULL, never, &calls);
    CHECK(atomic_load(&calls) == 0);
    lrt_pool_try_simple_parallel_for(p, 10, NULL, NULL);
    lrt_pool_try_batch_parallel_for(p, 10, NULL, NULL, 2);
    lrt_pool_schedule(p, NULL, NULL);
    CHECK_STATUS(lrt_kernel_parallel_for(p, NULL, 10, 0, NULL), LRT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(lrt_kernel_parallel_for(p, kernel_cb, (size_t)PTRDIFF_MAX + 1, 0, NULL),
                 LRT_ERR_INVALID_ARGUMENT);
    hits h;
    hits_init(&h, 1000);
    lrt_pool_try_simple_parallel_for(p, 1000, index_cb, &h);
    CHECK(hits_once(&h));
    lrt_pool_destroy(p);
  }
  /* NULL pool queries. */
  CHECK(lrt_pool_degree_of_parallelism(NULL) == 1);
  CHECK(lrt_pool_should_parallelize(NULL) == 0);
  CHECK(lrt_pool_num_threads(NULL) == 0);
  CHECK(lrt_pool_current_thread_id(NULL) == -1);
  lrt_pool_enable_spinning(NULL);
  lrt_pool_disable_spinning(NULL);
  lrt_pool_stats st;
  memset(&st, 0xff, sizeof st);
  CHECK_STATUS(lrt_pool_get_stats(NULL, &st), LRT_OK);
  CHECK_EQ_U64(st.tasks_run, 0);
  CHECK_STATUS(lrt_pool_get_stats(NULL, NULL), LRT_ERR_INVALID_ARGUMENT);
  lrt_pool_destroy(NULL);
  return check_result();
}
