/* Custom create/join thread functions with ORT's signatures: create is
 * called n-1 times with our options pointer, join once per thread at
 * destroy; the workers really run loops; a create that fails (NULL) makes
 * lrt_pool_create fail cleanly. */
#include <pthread.h>

#include "pool_common.h"

#define MAX_T 16
static pthread_t threads[MAX_T];
static atomic_int created, joined;
static int fail_after = 1000;

typedef struct start {
  lrt_thread_worker_fn fn;
  void *param;
} start;

static void *trampoline(void *arg) {
  start s = *(start *)arg;
  free(arg);
  s.fn(s.param);
  return NULL;
}

static lrt_custom_thread_handle create(void *opts, lrt_thread_worker_fn fn, void *param) {
  CHECK(opts == (void *)&created);
  int i = atomic_load(&created);
  if (i >= fail_after || i >= MAX_T) return NULL;
  start *s = (start *)malloc(sizeof *s);
  s->fn = fn;
  s->param = param;
  if (pthread_create(&threads[i], NULL, trampoline, s) != 0) return NULL;
  atomic_fetch_add(&created, 1);
  return (lrt_custom_thread_handle)(uintptr_t)(i + 1);
}

static void join(lrt_custom_thread_handle h) {
  int i = (int)(uintptr_t)h - 1;
  CHECK(i >= 0 && i < MAX_T);
  pthread_join(threads[i], NULL);
  atomic_fetch_add(&joined, 1);
}

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
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(o, create, &created, join), LRT_OK);
  lrt_pool *p = NULL;
  CHECK_STATUS(lrt_pool_create(o, &p), LRT_OK);
  CHECK(atomic_load(&created) == 4);
  CHECK(lrt_pool_num_threads(p) == 4);
  the_pool = p;
  lrt_pool_try_simple_parallel_for(p, 200, note_worker, NULL);
  CHECK(atomic_load(&worker_seen) == 1);
  CHECK(atomic_load(&joined) == 0);
  lrt_pool_destroy(p);
  CHECK(atomic_load(&joined) == 4);

  /* The 3rd create fails: LRT_ERR_NO_MEMORY, the two started are joined. */
  atomic_store(&created, 0);
  atomic_store(&joined, 0);
  fail_after = 2;
  p = (lrt_pool *)0x1;
  CHECK_STATUS(lrt_pool_create(o, &p), LRT_ERR_NO_MEMORY);
  CHECK(p == (lrt_pool *)0x1);
  CHECK(atomic_load(&created) == 2);
  CHECK(atomic_load(&joined) == 2);
  lrt_pool_options_destroy(o);
  return check_result();
}
