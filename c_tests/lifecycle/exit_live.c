/* A process that ends with live pools, live makers and scheduled tasks still
 * queued or running neither hangs nor crashes, whether it calls exit() or
 * returns from main, and prints nothing. */
#include <stdatomic.h>

#include "check.h"
#include "child.h" /* c_tests/common */

static atomic_int ran;

static void slow_task(void *ctx) {
  (void)ctx;
  usleep(2000);
  atomic_fetch_add(&ran, 1);
}

static void body(void *ctx, ptrdiff_t first, ptrdiff_t last) {
  (void)ctx;
  (void)first;
  (void)last;
}

/* Leaves a 4-thread pool with 200 slow tasks pending and a maker that has
 * uploaded a run, all alive. */
static void leave_everything_alive(void) {
  lrt_pool_options *o = NULL;
  lrt_pool *p = NULL;
  if (lrt_pool_options_create(&o) != LRT_OK || lrt_pool_options_set_num_threads(o, 4) != LRT_OK ||
      lrt_pool_create(o, &p) != LRT_OK || p == NULL)
    exit(10);
  lrt_pool_try_parallel_for(p, 1000, 1e6, body, NULL);
  for (int i = 0; i < 200; i++) lrt_pool_schedule(p, slow_task, NULL);
  lrt_host_api api;
  lrt_maker_config cfg;
  lrt_runtime_maker *m = NULL;
  lrt_sm_header *sm = NULL;
  lrt_task_slot slot;
  lrt_maker_config_init(&cfg);
  cfg.task_window = 64;
  if (lrt_host_api_host(&api) != LRT_OK || lrt_runtime_maker_create(&cfg, &api, &m) != LRT_OK ||
      lrt_runtime_maker_begin_run(m, &sm) != LRT_OK || lrt_runtime_maker_claim_slot(m, &slot) != LRT_OK ||
      lrt_runtime_maker_upload(m, NULL) != LRT_OK)
    exit(11);
}

static int calls_exit(void *unused) {
  (void)unused;
  leave_everything_alive();
  exit(0);
}

static int returns(void *unused) {
  (void)unused;
  leave_everything_alive();
  return 0; /* run_child_ctx passes this to exit(), as returning from main does */
}

static int quick_exit_path(void *unused) {
  (void)unused;
  leave_everything_alive();
  _exit(0);
}

int main(void) {
  int (*scenarios[])(void *) = {calls_exit, returns, quick_exit_path};
  const char *names[] = {"exit()", "return from main", "_exit()"};
  for (int i = 0; i < 3; i++) {
    child_result r = run_child_ctx(scenarios[i], NULL, 60);
    printf("%s: hung %d, exited %d, status %d, stderr \"%s\"\n", names[i], r.hung, r.exited, r.status,
           r.err);
    CHECK(!r.hung);
    CHECK(r.exited && r.status == 0);
    CHECK(r.err[0] == 0);
  }
  return check_result();
}
