/* Custom create/join thread functions with ORT's signatures, through C:
 * create is called n-1 times with the given options pointer, the threads it
 * starts really run the pool's loops, and join is called once per thread
 * at destroy. (A create that fails part-way:
 * c_tests/hardening/pool_custom_create_fails.c.) */
#include "pool_common.h"
#include "../hardening/custom_threads.h"

static atomic_int worker_seen;
static lrt_pool *the_pool;
static void note_worker(void *ctx, ptrdiff_t i) {
  (void)ctx;
  (void)i;
  if (lrt_pool_current_thread_id(the_pool) >= 0) atomic_store(&worker_seen, 1);
  sleep_ms(1);
}

int main(void) {
  lrt_pool_options *o = NULL;
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 5), LRT_OK);
  int marker = 0;
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(o, custom_create, &marker, custom_join), LRT_OK);
  lrt_pool *p = NULL;
  CHECK_STATUS(lrt_pool_create(o, &p), LRT_OK);
  CHECK(atomic_load(&creates) == 4);
  CHECK(atomic_load(&last_create_options) == (void *)&marker);
  CHECK(lrt_pool_num_threads(p) == 4);
  the_pool = p;
  lrt_pool_try_simple_parallel_for(p, 200, note_worker, NULL);
  CHECK(atomic_load(&worker_seen) == 1);
  CHECK(atomic_load(&joins) == 0);
  lrt_pool_destroy(p);
  CHECK(atomic_load(&joins) == 4);
  lrt_pool_options_destroy(o);
  return check_result();
}
