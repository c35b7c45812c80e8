/* The pool's one bad-input suite, through the C ABI: NULL handles, NULL
 * functions and out-parameters, out-of-range integers, malformed config
 * keys and values and affinities, custom thread functions without join.
 * Each gets its status and a message naming the function, leaves the
 * options as they were (observed through the pool they make), writes no
 * out-parameter and runs nothing. (A create that fails part-way:
 * pool_custom_create_fails.c; batch counts far above total:
 * pool_huge_batches.c.) */
#include "../pool/pool_common.h"
#include "custom_threads.h"

/* Blocks of a loop that must not run. */
static atomic_int calls;
static void never_range(void *ctx, ptrdiff_t first, ptrdiff_t last) {
  (void)ctx;
  (void)first;
  (void)last;
  atomic_fetch_add(&calls, 1);
}
static void never_index(void *ctx, ptrdiff_t i) {
  (void)ctx;
  (void)i;
  atomic_fetch_add(&calls, 1);
}

int main(void) {
  lrt_pool_options *o = NULL;
  CHECK_STATUS(lrt_pool_options_create(NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("lrt_pool_options_create"));
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  lrt_pool_options_destroy(NULL);

  /* NULL options handle: every setter. */
  CHECK_STATUS(lrt_pool_options_set_config(NULL, LRT_POOL_KEY_ALLOW_SPINNING, "1"), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_num_threads(NULL, 2), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("lrt_pool_options_set_num_threads"));
  CHECK_STATUS(lrt_pool_options_set_spin_control(NULL, 1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(NULL, 1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_backoff_max(NULL, 2), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_dynamic_block_base(NULL, 2), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_affinity(NULL, "1"), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_denormal_as_zero(NULL, 1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_name(NULL, "x"), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_stack_size(NULL, 0), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(NULL, custom_create, NULL, custom_join), LRT_ERR_INVALID_ARGUMENT);

  /* Rejected values leave the options as they were: 3 threads. */
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 3), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(o, 0), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, -1), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("lrt_pool_options_set_num_threads"));
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, LRT_POOL_MAX_THREADS + 1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_control(o, 2), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_control(o, -1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(o, -2), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(o, LRT_POOL_MAX_SPIN_US + 1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_backoff_max(o, 0), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_dynamic_block_base(o, -1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_denormal_as_zero(o, 7), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_name(o, ""), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_name(o, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_stack_size(o, 1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_affinity(o, NULL), LRT_ERR_INVALID_ARGUMENT);
  const char *bad_affinities[] = {"0", "1;;2", "3-1", "1,a", ""};
  for (size_t a = 0; a < sizeof bad_affinities / sizeof bad_affinities[0]; a++)
    CHECK_STATUS(lrt_pool_options_set_affinity(o, bad_affinities[a]), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(o, custom_create, NULL, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("lrt_pool_options_set_custom_thread_fns"));
  CHECK(threads_of(o) == 3);

  /* Config keys: malformed values, unknown or misspelt keys, NULLs. */
  const char *keys[] = {LRT_POOL_KEY_ALLOW_SPINNING, LRT_POOL_KEY_SPIN_DURATION_US,
                        LRT_POOL_KEY_SPIN_BACKOFF_MAX, LRT_POOL_KEY_DYNAMIC_BLOCK_BASE,
                        LRT_POOL_KEY_FORCE_SPINNING_STOP, LRT_POOL_KEY_CPU_BUDGET};
  const char *bad_values[] = {"", " ", "x", "1x", "0x10", "1.5", "1e3", " 10", "--1", "99999999999999999999", "\xff\xfe"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    for (size_t v = 0; v < sizeof bad_values / sizeof bad_values[0]; v++) {
      CHECK_STATUS(lrt_pool_options_set_config(o, keys[k], bad_values[v]), LRT_ERR_INVALID_ARGUMENT);
      CHECK(error_contains("lrt_pool_options_set_config"));
    }
    CHECK_STATUS(lrt_pool_options_set_config(o, keys[k], NULL), LRT_ERR_INVALID_ARGUMENT);
  }
  static const char *bad_pairs[][2] = {
      {LRT_POOL_KEY_ALLOW_SPINNING, "2"},     {LRT_POOL_KEY_ALLOW_SPINNING, "yes"},
      {LRT_POOL_KEY_SPIN_DURATION_US, "-2"},  {LRT_POOL_KEY_SPIN_BACKOFF_MAX, "0"},
      {LRT_POOL_KEY_DYNAMIC_BLOCK_BASE, "-4"},         {LRT_POOL_KEY_FORCE_SPINNING_STOP, "true"},
      {LRT_POOL_KEY_THREAD_AFFINITIES, ""},   {LRT_POOL_KEY_THREAD_AFFINITIES, "1,a"},
      {LRT_POOL_KEY_CPU_BUDGET, "2"},         {LRT_POOL_KEY_CPU_BUDGET, "-1"},
  };
  for (size_t i = 0; i < sizeof bad_pairs / sizeof bad_pairs[0]; i++)
    CHECK_STATUS(lrt_pool_options_set_config(o, bad_pairs[i][0], bad_pairs[i][1]), LRT_ERR_INVALID_ARGUMENT);
  const char *bad_keys[] = {"", "session.", "SESSION.INTRA_OP.ALLOW_SPINNING", "session.intra_op.allow_spinning ",
                            "session.inter_op.allow_spinning", "session.no_such_key", "\xc3\x28"};
  for (size_t k = 0; k < sizeof bad_keys / sizeof bad_keys[0]; k++)
    CHECK_STATUS(lrt_pool_options_set_config(o, bad_keys[k], "1"), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_config(o, NULL, "1"), LRT_ERR_INVALID_ARGUMENT);
  CHECK(threads_of(o) == 3);

  /* lrt_pool_create: NULL arguments, an affinity with the wrong number of
   * entries; *out is untouched on failure. */
  lrt_pool *const sentinel = (lrt_pool *)(uintptr_t)0x77;
  lrt_pool *p = sentinel;
  CHECK_STATUS(lrt_pool_create(NULL, &p), LRT_ERR_INVALID_ARGUMENT);
  CHECK(p == sentinel);
  CHECK_STATUS(lrt_pool_create(o, NULL), LRT_ERR_INVALID_ARGUMENT);
  lrt_pool_options *aff = NULL;
  CHECK_STATUS(lrt_pool_options_create(&aff), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_config(aff, LRT_POOL_KEY_THREAD_AFFINITIES, "1;1"), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(aff, 2), LRT_OK);
  CHECK_STATUS(lrt_pool_create(aff, &p), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("lrt_pool_create"));
  CHECK(p == sentinel);
  lrt_pool_options_destroy(aff);

  /* Out-parameters: NULL is refused, on the NULL pool and a real one. */
  CHECK_STATUS(lrt_pool_get_stats(NULL, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_section_begin(NULL, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_stop_profiling(NULL, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_start_profiling(NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_create(o, &p), LRT_OK);
  CHECK(p != NULL && p != sentinel);
  CHECK_STATUS(lrt_pool_get_stats(p, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_section_begin(p, NULL), LRT_ERR_INVALID_ARGUMENT);
  char *json = (char *)sentinel;
  CHECK_STATUS(lrt_pool_stop_profiling(p, &json), LRT_ERR_STATE); /* not started */
  CHECK(json == (char *)sentinel);

  /* NULL functions and cost, on the NULL pool and a real one: nothing
   * runs, the error names the function and the missing `func`. */
  lrt_pool *pools[2] = {NULL, p};
  for (int k = 0; k < 2; k++) {
    lrt_pool *q = pools[k];
    lrt_pool_try_parallel_for(q, 10, 1.0, NULL, NULL);
    CHECK(error_contains("lrt_pool_try_parallel_for") && error_contains("func"));
    lrt_pool_try_simple_parallel_for(q, 10, NULL, NULL);
    CHECK(error_contains("lrt_pool_try_simple_parallel_for"));
    lrt_pool_try_batch_parallel_for(q, 10, NULL, NULL, 3);
    CHECK(error_contains("lrt_pool_try_batch_parallel_for"));
    lrt_pool_try_parallel_for_cost(q, 10, NULL, never_range, NULL);
    CHECK(error_contains("cost"));
    lrt_pool_schedule(q, NULL, NULL);
    CHECK(error_contains("lrt_pool_schedule"));
    CHECK_STATUS(lrt_kernel_parallel_for(q, NULL, 10, 2, NULL), LRT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(lrt_kernel_parallel_for(q, kernel_cb, (size_t)PTRDIFF_MAX + 1, 0, NULL),
                 LRT_ERR_INVALID_ARGUMENT);
    /* total <= 0 calls nothing */
    lrt_pool_try_parallel_for(q, 0, 1.0, never_range, NULL);
    lrt_pool_try_parallel_for(q, -5, 1.0, never_range, NULL);
    lrt_pool_try_parallel_for(q, PTRDIFF_MIN, 1.0, never_range, NULL);
    lrt_pool_try_simple_parallel_for(q, -1, never_index, NULL);
    lrt_pool_try_batch_parallel_for(q, 0, never_index, NULL, 4);
    CHECK(atomic_load(&calls) == 0);
    /* Odd costs and batch counts still cover [0, n) exactly once. */
    const double costs[] = {0.0, -1.0, 1e300, 1.0 / 0.0, 0.0 / 0.0};
    for (int c = 0; c < 5; c++) {
      hits h;
      hits_init(&h, 37);
      lrt_pool_try_parallel_for(q, 37, costs[c], range_cb, &h);
      CHECK(hits_once(&h));
    }
    const ptrdiff_t batches[] = {-3, 0, 1, 7, 37, 38, 1000};
    for (int b = 0; b < 7; b++) {
      hits h;
      hits_init(&h, 37);
      lrt_pool_try_batch_parallel_for(q, 37, index_cb, &h, batches[b]);
      CHECK(hits_once(&h));
    }
  }
  /* A NULL pool's queries are defined (the serial pool). */
  struct lrt_pool_stats stats;
  memset(&stats, 0xCD, sizeof stats);
  CHECK_STATUS(lrt_pool_get_stats(NULL, &stats), LRT_OK);
  CHECK(stats.tasks_run == 0 && stats.steals == 0 && stats.parks == 0 && stats.workers_asleep == 0);

  lrt_pool_destroy(p);
  lrt_pool_options_destroy(o);
  return check_result();
}
