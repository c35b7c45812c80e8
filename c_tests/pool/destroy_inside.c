/* lrt_pool_destroy called from inside the pool (a task on a worker, a loop
 * body on a worker or on the calling thread) is refused: it returns at
 * once, records LRT_ERR_STATE's message for lrt_last_error, leaves the pool
 * intact, and prints nothing. */
#include <string.h>
#include <unistd.h>

#include "pool_common.h"

typedef struct inside {
  lrt_pool *pool;
  atomic_int refused;
  atomic_int calls;
  atomic_int done;
} inside;

/* Destroys the pool from where it runs; counts a refusal when the message
 * names lrt_pool_destroy and the pool still answers. */
static void destroy_here(inside *in) {
  atomic_fetch_add(&in->calls, 1);
  lrt_pool_destroy(in->pool);
  char msg[256];
  lrt_last_error(msg, sizeof msg);
  if (strstr(msg, "lrt_pool_destroy") && strstr(msg, "left intact") &&
      lrt_pool_num_threads(in->pool) == 3)
    atomic_fetch_add(&in->refused, 1);
}

static void destroy_task(void *ctx) {
  inside *in = (inside *)ctx;
  destroy_here(in);
  atomic_store(&in->done, 1);
}

static void destroy_body(void *ctx, ptrdiff_t i) {
  (void)i;
  destroy_here((inside *)ctx);
}

int main(void) {
  /* Everything leanrt might print would land in this file. */
  FILE *err = tmpfile();
  int saved = dup(2);
  CHECK(err != NULL && saved >= 0);
  if (err) dup2(fileno(err), 2);

  inside in = {make_pool(4), 0, 0, 0};
  lrt_pool_schedule(in.pool, destroy_task, &in);
  double t0 = now_s();
  while (!atomic_load(&in.done) && now_s() - t0 < 60) sleep_ms(1);
  lrt_pool_try_simple_parallel_for(in.pool, 64, destroy_body, &in);
  int calls = atomic_load(&in.calls), refused = atomic_load(&in.refused);

  /* Still a working pool. */
  hits h;
  hits_init(&h, 1000);
  lrt_pool_try_simple_parallel_for(in.pool, h.n, index_cb, &h);
  int loop_ok = hits_once(&h);
  lrt_pool_destroy(in.pool);

  fflush(stderr);
  long printed = err ? ftell(err) : -1;
  if (saved >= 0) dup2(saved, 2);
  CHECK(atomic_load(&in.done));
  CHECK(calls == 65);
  CHECK(refused == calls);
  CHECK(loop_ok);
  CHECK(printed == 0);
  return check_result();
}
