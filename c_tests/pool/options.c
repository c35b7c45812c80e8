/* Options from C: every setter and ORT config key accepts its valid
 * values, and the pool made from them has the thread count they say (an
 * affinity's entries give it; 1 gives the NULL pool). Bad input: the one
 * suite in c_tests/hardening/pool_bad_input.c. */
#include "pool_common.h"

int main(void) {
  lrt_pool_options *o = NULL;
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  CHECK(o != NULL);

  /* Valid values. */
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 3), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_spin_control(o, 1), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(o, 1000), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(o, -1), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(o, 0), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_spin_backoff_max(o, 8), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_spin_backoff_max(o, 1000), LRT_OK); /* capped at 64 */
  CHECK_STATUS(lrt_pool_options_set_dynamic_block_base(o, 4), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_dynamic_block_base(o, 0), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_denormal_as_zero(o, 1), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_name(o, "ctest-pool"), LRT_OK);
  static const char *good[][2] = {
      {LRT_POOL_KEY_ALLOW_SPINNING, "1"},   {LRT_POOL_KEY_ALLOW_SPINNING, "0"},
      {LRT_POOL_KEY_SPIN_DURATION_US, "-1"}, {LRT_POOL_KEY_SPIN_DURATION_US, "100"},
      {LRT_POOL_KEY_SPIN_BACKOFF_MAX, "4"},  {LRT_POOL_KEY_DYNAMIC_BLOCK_BASE, "2"},
      {LRT_POOL_KEY_FORCE_SPINNING_STOP, "1"},        {LRT_POOL_KEY_FORCE_SPINNING_STOP, "0"},
      {LRT_POOL_KEY_CPU_BUDGET, "0"},                  {LRT_POOL_KEY_CPU_BUDGET, "1"},
      {LRT_POOL_KEY_ALLOW_SPINNING, "1"},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    CHECK_STATUS(lrt_pool_options_set_config(o, good[i][0], good[i][1]), LRT_OK);
  CHECK(threads_of(o) == 3);

  /* An affinity gives one worker per entry: thread count 0 = entries + 1. */
  CHECK_STATUS(lrt_pool_options_set_config(o, LRT_POOL_KEY_THREAD_AFFINITIES, "1;1"), LRT_OK);
  CHECK(threads_of(o) == 3);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 0), LRT_OK);
  CHECK(threads_of(o) == 3);

  /* Both custom thread functions NULL: leanrt's own threads. */
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(o, NULL, NULL, NULL), LRT_OK);
  CHECK(threads_of(o) == 3);

  /* A thread count of 1 gives a NULL pool and LRT_OK. */
  lrt_pool_options *one = NULL;
  CHECK_STATUS(lrt_pool_options_create(&one), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(one, 1), LRT_OK);
  lrt_pool *p = (lrt_pool *)0x1;
  CHECK_STATUS(lrt_pool_create(one, &p), LRT_OK);
  CHECK(p == NULL);
  lrt_pool_options_destroy(one);
  lrt_pool_options_destroy(o);
  lrt_pool_options_destroy(NULL);
  return check_result();
}
