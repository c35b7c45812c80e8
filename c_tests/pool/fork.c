/* A pool and options inherited by a forked child: loops run correctly on the
 * calling thread, Schedule runs its tasks (inline), sections are accepted,
 * destroy returns at once, nothing is printed, and the parent's pool is
 * unaffected. Also a fork while another parent thread is inside a loop. */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pool_common.h"

static atomic_int tasks_run;
static void count_task(void *ctx) {
  (void)ctx;
  atomic_fetch_add(&tasks_run, 1);
}

/* Loops of every kind on `p`, each index exactly once. */
static int loops_ok(lrt_pool *p) {
  int ok = 1;
  for (int r = 0; r < 20; r++) {
    hits h;
    hits_init(&h, 1000 + r);
    lrt_pool_try_parallel_for(p, h.n, 1e5, range_cb, &h);
    ok &= hits_once(&h);
    hits_init(&h, 300);
    lrt_pool_try_simple_parallel_for(p, h.n, index_cb, &h);
    ok &= hits_once(&h);
    hits_init(&h, 77);
    lrt_pool_try_batch_parallel_for(p, h.n, index_cb, &h, 5);
    ok &= hits_once(&h);
    hits_init(&h, 64);
    ok &= lrt_kernel_parallel_for(p, kernel_cb, 64, 4, &h) == LRT_OK;
    ok &= hits_once(&h);
  }
  return ok;
}

/* The child's part: exit code 0 when everything behaved. */
static int child(lrt_pool *p, lrt_pool_options *o) {
  alarm(60); /* a hang is a failure, not a stuck test */
  CHECK(loops_ok(p));
  atomic_store(&tasks_run, 0);
  for (int i = 0; i < 100; i++) lrt_pool_schedule(p, count_task, NULL);
  CHECK(atomic_load(&tasks_run) == 100); /* ran on the caller */
  lrt_pool_section *s = NULL;
  CHECK_STATUS(lrt_pool_section_begin(p, &s), LRT_OK);
  CHECK(loops_ok(p));
  lrt_pool_section_end(s);
  lrt_pool_stats st;
  CHECK_STATUS(lrt_pool_get_stats(p, &st), LRT_OK);
  CHECK_STATUS(lrt_pool_start_profiling(p), LRT_ERR_STATE);
  CHECK(lrt_pool_num_threads(p) == 3);
  lrt_pool_enable_spinning(p);
  lrt_pool_disable_spinning(p);
  lrt_pool_destroy(p);
  /* The inherited options make a working pool in the child. */
  lrt_pool *q = NULL;
  CHECK_STATUS(lrt_pool_create(o, &q), LRT_OK);
  CHECK(q != NULL && loops_ok(q));
  atomic_store(&tasks_run, 0);
  for (int i = 0; i < 100; i++) lrt_pool_schedule(q, count_task, NULL);
  lrt_pool_destroy(q);
  CHECK(atomic_load(&tasks_run) == 100);
  lrt_pool_options_destroy(o);
  return check_result();
}

/* Forks; the child runs `child` with its stderr in a pipe. Returns 1 if the
 * child exited 0 and wrote nothing to stderr. */
static int run_child(lrt_pool *p, lrt_pool_options *o) {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    _exit(child(p, o));
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n, total = 0;
  while ((n = read(fds[0], buf, sizeof buf - 1)) > 0) {
    buf[n] = 0;
    fprintf(stderr, "child stderr: %s", buf);
    total += n;
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 && total == 0;
}

/* A parent thread that keeps running loops while the main thread forks. */
typedef struct busy {
  lrt_pool *p;
  atomic_int stop;
  atomic_int loops;
} busy;

static void slow_cb(void *ctx, ptrdiff_t i) {
  (void)ctx;
  (void)i;
  volatile int x = 0;
  for (int k = 0; k < 2000; k++) x += k;
}

static void *busy_main(void *arg) {
  busy *b = (busy *)arg;
  while (!atomic_load(&b->stop)) {
    /* Every other round inside a parallel section. */
    lrt_pool_section *s = NULL;
    if (atomic_load(&b->loops) % 2 && lrt_pool_section_begin(b->p, &s) != LRT_OK) return NULL;
    for (int k = 0; k < 3; k++) lrt_pool_try_simple_parallel_for(b->p, 64, slow_cb, NULL);
    lrt_pool_section_end(s);
    atomic_fetch_add(&b->loops, 1);
  }
  return NULL;
}

int main(void) {
  lrt_pool_options *o = NULL;
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 4), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_spin_duration_us(o, 50), LRT_OK);
  lrt_pool *p = NULL;
  CHECK_STATUS(lrt_pool_create(o, &p), LRT_OK);
  CHECK(loops_ok(p));

  /* 1. A quiet fork. */
  CHECK(run_child(p, o));
  CHECK(loops_ok(p)); /* the parent's pool is unaffected */

  /* 2. Forks while another thread is inside loops (and a section). */
  busy b = {p, 0, 0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, busy_main, &b) == 0);
  for (int r = 0; r < 10; r++) {
    while (atomic_load(&b.loops) < 5 * (r + 1)) sleep_ms(1);
    CHECK(run_child(p, o));
  }
  atomic_store(&b.stop, 1);
  pthread_join(t, NULL);
  CHECK(loops_ok(p));

  atomic_store(&tasks_run, 0);
  for (int i = 0; i < 100; i++) lrt_pool_schedule(p, count_task, NULL);
  lrt_pool_destroy(p);
  CHECK(atomic_load(&tasks_run) == 100);
  lrt_pool_options_destroy(o);
  return check_result();
}
