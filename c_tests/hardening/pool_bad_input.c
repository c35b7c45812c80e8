/* Bad input through the thread-pool C ABI: NULL handles and functions,
 * out-of-range integers, malformed config keys and values, custom thread
 * functions that are incomplete or fail. Each gets its status and a message,
 * leaves the options as they were (observed through the pool they make) and
 * leaks no thread. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static int last_error_names(const char *fn) {
  char buf[512];
  size_t n = lrt_last_error(buf, sizeof buf);
  return n > strlen(fn) + 2 && strncmp(buf, fn, strlen(fn)) == 0;
}

static void mark(void) { lrt_host_api_host(NULL); }

static atomic_int hits[64];
static void count_range(void *ctx, ptrdiff_t first, ptrdiff_t last) {
  (void)ctx;
  for (ptrdiff_t i = first; i < last; i++) atomic_fetch_add(&hits[i], 1);
}
static void count_index(void *ctx, ptrdiff_t i) {
  (void)ctx;
  atomic_fetch_add(&hits[i], 1);
}
static void clear_hits(void) {
  for (int i = 0; i < 64; i++) atomic_store(&hits[i], 0);
}
static int all_hit(int n, int times) {
  for (int i = 0; i < 64; i++)
    if (atomic_load(&hits[i]) != (i < n ? times : 0)) return 0;
  return 1;
}

/* Custom threads made with pthreads; create fails on call number fail_at. */
#include "custom_threads.h"

/* The DOP of a pool made from opts (1 for the NULL pool). */
static int dop_of(const lrt_pool_options *opts) {
  lrt_pool *p = NULL;
  if (lrt_pool_create(opts, &p) != LRT_OK) return -1;
  int d = lrt_pool_degree_of_parallelism(p);
  lrt_pool_destroy(p);
  return d;
}

int main(void) {
  lrt_pool_options *o = NULL;
  CHECK_STATUS(lrt_pool_options_create(NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  lrt_pool_options_destroy(NULL);

  /* NULL options handle: every setter */
  CHECK_STATUS(lrt_pool_options_set_config(NULL, "session.intra_op.allow_spinning", "1"), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_num_threads(NULL, 2), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_control(NULL, 1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(NULL, 1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_backoff_max(NULL, 2), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_dynamic_block_base(NULL, 2), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_affinity(NULL, "0"), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_denormal_as_zero(NULL, 1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_name(NULL, "x"), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(NULL, custom_create, NULL, custom_join), LRT_ERR_INVALID_ARGUMENT);

  /* Rejected values leave the options as they were: DOP stays 3. */
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 3), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(o, 0), LRT_OK);
  mark();
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, -1), LRT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_names("lrt_pool_options_set_num_threads"));
  CHECK_STATUS(lrt_pool_options_set_spin_control(o, 2), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_control(o, -1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_affinity(o, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_name(o, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(o, custom_create, NULL, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_names("lrt_pool_options_set_custom_thread_fns"));

  const char *keys[] = {"session.intra_op.allow_spinning", "session.intra_op.spin_duration_us",
                        "session.intra_op.spin_backoff_max", "session.dynamic_block_base",
                        "session.force_spinning_stop"};
  const char *bad_values[] = {"", " ", "x", "1x", "0x10", "1.5", "--1", "99999999999999999999", "\xff\xfe"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    for (size_t v = 0; v < sizeof bad_values / sizeof bad_values[0]; v++) {
      mark();
      CHECK_STATUS(lrt_pool_options_set_config(o, keys[k], bad_values[v]), LRT_ERR_INVALID_ARGUMENT);
      CHECK(last_error_names("lrt_pool_options_set_config"));
    }
    CHECK_STATUS(lrt_pool_options_set_config(o, keys[k], NULL), LRT_ERR_INVALID_ARGUMENT);
  }
  CHECK_STATUS(lrt_pool_options_set_config(o, "session.intra_op.allow_spinning", "2"), LRT_ERR_INVALID_ARGUMENT);
  const char *bad_keys[] = {"", "session.", "SESSION.INTRA_OP.ALLOW_SPINNING", "session.intra_op.allow_spinning ",
                            "session.inter_op.allow_spinning", "\xc3\x28"};
  for (size_t k = 0; k < sizeof bad_keys / sizeof bad_keys[0]; k++)
    CHECK_STATUS(lrt_pool_options_set_config(o, bad_keys[k], "1"), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_config(o, NULL, "1"), LRT_ERR_INVALID_ARGUMENT);
  CHECK(dop_of(o) == 3);

  /* lrt_pool_create */
  lrt_pool *const sentinel = (lrt_pool *)(uintptr_t)0x77;
  lrt_pool *p = sentinel;
  CHECK_STATUS(lrt_pool_create(NULL, &p), LRT_ERR_INVALID_ARGUMENT);
  CHECK(p == sentinel);
  CHECK_STATUS(lrt_pool_create(o, NULL), LRT_ERR_INVALID_ARGUMENT);
  lrt_pool_options *one = NULL;
  CHECK_STATUS(lrt_pool_options_create(&one), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(one, 1), LRT_OK);
  CHECK_STATUS(lrt_pool_create(one, &p), LRT_OK);
  CHECK(p == NULL); /* DOP 1: the NULL pool */
  lrt_pool_options_destroy(one);

  /* The NULL pool: serial, every query defined */
  CHECK(lrt_pool_degree_of_parallelism(NULL) == 1);
  CHECK(lrt_pool_should_parallelize(NULL) == 0);
  CHECK(lrt_pool_current_thread_id(NULL) == -1);
  lrt_pool_enable_spinning(NULL);
  lrt_pool_disable_spinning(NULL);
  lrt_pool_destroy(NULL);
  struct lrt_pool_stats stats;
  memset(&stats, 0xCD, sizeof stats);
  struct lrt_pool_stats fill = stats;
  CHECK_STATUS(lrt_pool_get_stats(NULL, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_get_stats(NULL, &stats), LRT_OK); /* the serial pool: all zero */
  CHECK(stats.tasks_run == 0 && stats.steals == 0 && stats.parks == 0);
  (void)fill;

  /* A real pool with NULL functions and odd numbers */
  CHECK_STATUS(lrt_pool_create(o, &p), LRT_OK);
  CHECK(p != NULL);
  CHECK_STATUS(lrt_pool_get_stats(p, NULL), LRT_ERR_INVALID_ARGUMENT);
  lrt_pool *pools[2] = {NULL, p};
  for (int k = 0; k < 2; k++) {
    lrt_pool *q = pools[k];
    clear_hits();
    mark();
    lrt_pool_try_parallel_for(q, 10, 1.0, NULL, NULL);
    CHECK(last_error_names("lrt_pool_try_parallel_for"));
    lrt_pool_try_simple_parallel_for(q, 10, NULL, NULL);
    lrt_pool_try_batch_parallel_for(q, 10, NULL, NULL, 3);
    lrt_pool_try_parallel_for_cost(q, 10, NULL, count_range, NULL); /* NULL cost */
    lrt_pool_schedule(q, NULL, NULL);
    CHECK_STATUS(lrt_kernel_parallel_for(q, NULL, 10, 2, NULL), LRT_ERR_INVALID_ARGUMENT);
    CHECK(all_hit(0, 0));
    /* total <= 0 calls nothing; odd costs and batch counts still cover [0, n) once */
    lrt_pool_try_parallel_for(q, 0, 1.0, count_range, NULL);
    lrt_pool_try_parallel_for(q, -5, 1.0, count_range, NULL);
    lrt_pool_try_parallel_for(q, PTRDIFF_MIN, 1.0, count_range, NULL);
    lrt_pool_try_simple_parallel_for(q, -1, count_index, NULL);
    lrt_pool_try_batch_parallel_for(q, 0, count_index, NULL, 4);
    CHECK(all_hit(0, 0));
    const double costs[] = {0.0, -1.0, 1e300, 1.0 / 0.0, 0.0 / 0.0};
    for (int c = 0; c < 5; c++) lrt_pool_try_parallel_for(q, 37, costs[c], count_range, NULL);
    CHECK(all_hit(37, 5));
    clear_hits();
    /* (batch counts far above total: c_tests/hardening/pool_huge_batches.c) */
    const ptrdiff_t batches[] = {-3, 0, 1, 7, 37, 38, 1000};
    for (int b = 0; b < 7; b++) lrt_pool_try_batch_parallel_for(q, 37, count_index, NULL, batches[b]);
    CHECK(all_hit(37, 7));
  }

  /* Custom threads (a create that fails part-way: pool_custom_create_fails.c) */
  lrt_pool_options *co = NULL;
  CHECK_STATUS(lrt_pool_options_create(&co), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(co, 4), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(co, custom_create, NULL, custom_join), LRT_OK);
  lrt_pool *cp = sentinel;
  atomic_store(&fail_at, 0);
  int c0 = atomic_load(&creates);
  CHECK_STATUS(lrt_pool_create(co, &cp), LRT_OK);
  CHECK(atomic_load(&creates) - c0 == 3); /* DOP 4: three workers plus the caller */
  CHECK(cp != NULL && cp != sentinel);
  clear_hits();
  lrt_pool_try_simple_parallel_for(cp, 50, count_index, NULL);
  CHECK(all_hit(50, 1));
  lrt_pool_destroy(cp);
  CHECK(atomic_load(&creates) == atomic_load(&joins));
  /* both NULL restores the built-in threads */
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(co, NULL, NULL, NULL), LRT_OK);
  int before = atomic_load(&creates);
  CHECK(dop_of(co) == 4);
  CHECK(atomic_load(&creates) == before);
  lrt_pool_options_destroy(co);

  lrt_pool_destroy(p);
  lrt_pool_options_destroy(o);
  return check_result();
}
