/* Thread limits: in a child that may start no thread (RLIMIT_NPROC 0, as
 * an unprivileged user: a child of a root run drops to "nobody" first,
 * since the limit does not bind root), lrt_pool_create fails with
 * LRT_ERR_NO_MEMORY naming the worker thread, leaves *out untouched,
 * prints nothing, and the options stay usable; with the limit lifted again
 * the same options make a working pool. Also with custom thread functions
 * (their create fails: no thread) and a NULL pool (no threads needed). */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "custom_threads.h"

static atomic_long hits;
static void body(void *ctx, ptrdiff_t a, ptrdiff_t b) {
  (void)ctx;
  atomic_fetch_add(&hits, (long)(b - a));
}

static void *nothing(void *arg) { return arg; }

static int drop_privileges(void) {
  if (geteuid() != 0) return 1;
  if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0) return 0;
  return geteuid() == 65534;
}

static int limited(void *ctx) {
  int custom = *(int *)ctx;
  if (!drop_privileges()) {
    fprintf(stderr, "cannot drop to an unprivileged user\n");
    return 10;
  }
  struct rlimit old;
  getrlimit(RLIMIT_NPROC, &old);
  struct rlimit none = {0, old.rlim_max};
  if (setrlimit(RLIMIT_NPROC, &none) != 0) return 11;
  /* The limit binds: a plain pthread cannot start either. */
  pthread_t t;
  if (pthread_create(&t, NULL, nothing, NULL) == 0) {
    pthread_join(t, NULL);
    fprintf(stderr, "RLIMIT_NPROC 0 did not stop a thread\n");
    return 12;
  }
  lrt_pool_options *o = NULL;
  if (lrt_pool_options_create(&o) != LRT_OK) return 13;
  lrt_pool_options_set_num_threads(o, 4);
  if (custom) lrt_pool_options_set_custom_thread_fns(o, custom_create, NULL, custom_join);
  lrt_pool *p = (lrt_pool *)(void *)&t; /* a pattern: must stay untouched */
  int rc = lrt_pool_create(o, &p);
  if (rc != LRT_ERR_NO_MEMORY) {
    fprintf(stderr, "lrt_pool_create under RLIMIT_NPROC 0: %s\n", lrt_status_str(rc));
    return 14;
  }
  if (p != (lrt_pool *)(void *)&t) return 15;
  if (!error_contains("lrt_pool_create: ") || !error_contains("thread")) return 16;
  /* No pool: loops run on the caller. */
  atomic_store(&hits, 0);
  lrt_pool_try_parallel_for(NULL, 1000, 1e6, body, NULL);
  if (atomic_load(&hits) != 1000) return 17;
  /* The limit lifted, the same options work. */
  if (setrlimit(RLIMIT_NPROC, &old) != 0) return 18;
  p = NULL;
  if (lrt_pool_create(o, &p) != LRT_OK || !p) return 19;
  atomic_store(&hits, 0);
  lrt_pool_try_parallel_for(p, 1000, 1e6, body, NULL);
  if (atomic_load(&hits) != 1000) return 20;
  lrt_pool_destroy(p);
  lrt_pool_options_destroy(o);
  return 0;
}

int main(void) {
  unsetenv("LEANRT_LOG");
  for (int custom = 0; custom < 2; custom++) {
    child_result r = run_child_ctx(limited, &custom, 30);
    if (!r.exited || r.status != 0 || r.err[0]) {
      fprintf(stderr, "%s threads: %s %d\n%s\n", custom ? "custom" : "built-in",
              r.exited ? "exit" : "signal", r.status, r.err);
      check_failures_++;
    }
  }
  printf("thread limits: pool create under RLIMIT_NPROC 0 (built-in and custom threads): "
         "LRT_ERR_NO_MEMORY, nothing printed, options usable after\n");
  return check_result();
}
