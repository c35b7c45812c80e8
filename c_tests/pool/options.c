/* Options from C: every setter, ORT config keys, malformed values rejected
 * with LRT_ERR_INVALID_ARGUMENT and the options left unchanged, NULL
 * arguments, custom thread functions without join. */
#include "pool_common.h"

/* The effective thread count, observed through a pool made from `o`. */
static int threads_of(const lrt_pool_options *o) {
  lrt_pool *p = NULL;
  if (lrt_pool_create(o, &p) != LRT_OK) return -100;
  int n = p ? lrt_pool_num_threads(p) + 1 : 1;
  lrt_pool_destroy(p);
  return n;
}

static lrt_custom_thread_handle dummy_create(void *opts, lrt_thread_worker_fn fn, void *param) {
  (void)opts;
  (void)fn;
  (void)param;
  return NULL;
}

int main(void) {
  lrt_pool_options *o = NULL;
  CHECK_STATUS(lrt_pool_options_create(NULL), LRT_ERR_INVALID_ARGUMENT);
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
      {"session.intra_op.allow_spinning", "1"},   {"session.intra_op.allow_spinning", "0"},
      {"session.intra_op.spin_duration_us", "-1"}, {"session.intra_op.spin_duration_us", "100"},
      {"session.intra_op.spin_backoff_max", "4"},  {"session.dynamic_block_base", "2"},
      {"session.force_spinning_stop", "1"},        {"session.force_spinning_stop", "0"},
      {"session.intra_op.allow_spinning", "1"},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    CHECK_STATUS(lrt_pool_options_set_config(o, good[i][0], good[i][1]), LRT_OK);
  CHECK(threads_of(o) == 3);

  /* Bad values: INVALID_ARGUMENT, message names the function, state unchanged. */
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, -1), LRT_ERR_INVALID_ARGUMENT);
  char msg[256];
  lrt_last_error(msg, sizeof msg);
  CHECK(strstr(msg, "lrt_pool_options_set_num_threads") != NULL);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 1000000), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_control(o, 2), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(o, -2), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_spin_backoff_max(o, 0), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_dynamic_block_base(o, -1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_denormal_as_zero(o, 7), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_name(o, ""), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_affinity(o, "0"), LRT_ERR_INVALID_ARGUMENT); /* 1-based */
  CHECK_STATUS(lrt_pool_options_set_affinity(o, "1;;2"), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_affinity(o, "3-1"), LRT_ERR_INVALID_ARGUMENT);
  static const char *bad[][2] = {
      {"session.intra_op.allow_spinning", "yes"},   {"session.intra_op.allow_spinning", ""},
      {"session.intra_op.spin_duration_us", "-2"},  {"session.intra_op.spin_duration_us", "1e3"},
      {"session.intra_op.spin_duration_us", " 10"}, {"session.intra_op.spin_duration_us", "99999999999"},
      {"session.intra_op.spin_backoff_max", "0"},   {"session.intra_op.spin_backoff_max", "x"},
      {"session.dynamic_block_base", "-4"},         {"session.force_spinning_stop", "true"},
      {"session.intra_op_thread_affinities", ""},   {"session.intra_op_thread_affinities", "1,a"},
      {"session.no_such_key", "1"},                 {"", ""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_STATUS(lrt_pool_options_set_config(o, bad[i][0], bad[i][1]), LRT_ERR_INVALID_ARGUMENT);
  }
  CHECK(threads_of(o) == 3); /* unchanged: still 3 threads, no affinity */

  /* An affinity must have one entry per worker. */
  CHECK_STATUS(lrt_pool_options_set_config(o, "session.intra_op_thread_affinities", "1;1"), LRT_OK);
  CHECK(threads_of(o) == 3);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 2), LRT_OK);
  lrt_pool *p = (lrt_pool *)0x1;
  CHECK_STATUS(lrt_pool_create(o, &p), LRT_ERR_INVALID_ARGUMENT);
  CHECK(p == (lrt_pool *)0x1); /* out untouched on failure */
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 0), LRT_OK); /* 0: entries + 1 */
  CHECK(threads_of(o) == 3);

  /* NULL arguments. */
  CHECK_STATUS(lrt_pool_options_set_num_threads(NULL, 2), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_config(NULL, "session.force_spinning_stop", "1"),
               LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_config(o, NULL, "1"), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_config(o, "session.force_spinning_stop", NULL),
               LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_affinity(o, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_name(NULL, "x"), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_create(NULL, &p), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_create(o, NULL), LRT_ERR_INVALID_ARGUMENT);

  /* Custom create without join is rejected; both NULL is fine. */
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(o, dummy_create, NULL, NULL),
               LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(o, NULL, NULL, NULL), LRT_OK);
  CHECK(threads_of(o) == 3);

  /* A thread count of 1 gives a NULL pool and LRT_OK. */
  lrt_pool_options *one = NULL;
  CHECK_STATUS(lrt_pool_options_create(&one), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(one, 1), LRT_OK);
  p = (lrt_pool *)0x1;
  CHECK_STATUS(lrt_pool_create(one, &p), LRT_OK);
  CHECK(p == NULL);
  lrt_pool_options_destroy(one);
  lrt_pool_options_destroy(o);
  lrt_pool_options_destroy(NULL);
  return check_result();
}
