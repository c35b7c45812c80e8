/* Parallel sections, lrt_partition_work, profiling and worker stack size
 * through the C API. */
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "pool_common.h"

/* Which worker ids ran blocks (bit i: worker i; -1, the caller, is not
 * recorded), plus the hit counters of the loop. */
typedef struct team_loop {
  hits h;
  const lrt_pool *pool;
  atomic_ullong workers;
} team_loop;

static void team_cb(void *ctx, ptrdiff_t i) {
  team_loop *t = (team_loop *)ctx;
  hit(&t->h, i);
  int id = lrt_pool_current_thread_id(t->pool);
  if (id >= 0 && id < 64) atomic_fetch_or(&t->workers, 1ull << id);
}

static int popcount(unsigned long long x) {
  int n = 0;
  for (; x; x &= x - 1) n++;
  return n;
}

/* `loops` loops of total(k) indices inside one section: every index of
 * every loop exactly once; returns the set of workers that ran blocks. */
static unsigned long long section_run(lrt_pool *p, int loops, ptrdiff_t (*total)(int)) {
  lrt_pool_section *s = (lrt_pool_section *)0x1;
  CHECK_STATUS(lrt_pool_section_begin(p, &s), LRT_OK);
  if (p == NULL) CHECK(s == NULL);
  unsigned long long seen = 0;
  for (int k = 0; k < loops; k++) {
    team_loop t;
    hits_init(&t.h, total(k));
    t.pool = p;
    atomic_init(&t.workers, 0);
    lrt_pool_try_simple_parallel_for(p, t.h.n, team_cb, &t);
    CHECK(hits_once(&t.h));
    seen |= atomic_load(&t.workers);
  }
  lrt_pool_section_end(s);
  return seen;
}

static ptrdiff_t mixed(int k) { return (ptrdiff_t)((k * 37) % 200); }
static ptrdiff_t two(int k) { (void)k; return 2; }

static void test_section_loops(void) {
  static const int loop_counts[] = {0, 1, 2, 10, 100};
  for (int threads = 0; threads <= 4; threads++) {
    lrt_pool *p = make_pool(threads);
    CHECK((threads == 1) == (p == NULL));
    for (size_t i = 0; i < sizeof loop_counts / sizeof *loop_counts; i++)
      section_run(p, loop_counts[i], mixed);
    lrt_pool_destroy(p);
  }
}

static void test_team_stays(void) {
  /* Each loop of two indices wants one helper: inside one section the same
   * worker (or none) runs every helper share. */
  lrt_pool *p = make_pool(4);
  for (int r = 0; r < 20; r++) {
    unsigned long long seen = section_run(p, 100, two);
    CHECK(popcount(seen) <= 1);
  }
  lrt_pool_destroy(p);
}

typedef struct cross_end {
  lrt_pool_section *s;
  int status;
} cross_end;

static void *end_elsewhere(void *arg) {
  cross_end *c = (cross_end *)arg;
  char before[8];
  lrt_last_error(before, sizeof before);
  lrt_pool_section_end(c->s); /* refused: not the thread that began it */
  char msg[256];
  lrt_last_error(msg, sizeof msg);
  c->status = strstr(msg, "lrt_pool_section_end") != NULL;
  return NULL;
}

static void test_section_rules(void) {
  lrt_pool *p = make_pool(3);
  lrt_pool *q = make_pool(2);
  lrt_pool_section *s = NULL, *s2 = (lrt_pool_section *)0x1;
  CHECK_STATUS(lrt_pool_section_begin(p, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_section_begin(p, &s), LRT_OK);
  CHECK(s != NULL);
  /* Sections do not nest, on the same pool or another, or a NULL one. */
  CHECK_STATUS(lrt_pool_section_begin(p, &s2), LRT_ERR_STATE);
  CHECK_STATUS(lrt_pool_section_begin(q, &s2), LRT_ERR_STATE);
  CHECK_STATUS(lrt_pool_section_begin(NULL, &s2), LRT_ERR_STATE);
  CHECK(s2 == (lrt_pool_section *)0x1);
  /* Ending on another thread is refused; the section stays open. */
  cross_end c = {s, 0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, end_elsewhere, &c) == 0);
  pthread_join(t, NULL);
  CHECK(c.status == 1);
  CHECK_STATUS(lrt_pool_section_begin(p, &s2), LRT_ERR_STATE);
  lrt_pool_section_end(s);
  lrt_pool_section_end(NULL);
  /* A NULL pool gives a NULL section. */
  CHECK_STATUS(lrt_pool_section_begin(NULL, &s2), LRT_OK);
  CHECK(s2 == NULL);
  lrt_pool_section_end(s2);
  /* A section left open when its pool is destroyed. */
  CHECK_STATUS(lrt_pool_section_begin(q, &s), LRT_OK);
  for (int k = 0; k < 3; k++) {
    hits h;
    hits_init(&h, 100);
    lrt_pool_try_simple_parallel_for(q, h.n, index_cb, &h);
    CHECK(hits_once(&h));
  }
  lrt_pool_destroy(q);
  lrt_pool_section_end(s); /* only frees the handle */
  CHECK_STATUS(lrt_pool_section_begin(p, &s), LRT_OK);
  lrt_pool_section_end(s);
  lrt_pool_destroy(p);
}

/* A section opened by a task on a worker. */
typedef struct on_worker {
  lrt_pool *pool;
  atomic_int done;
  int ok;
} on_worker;

static void section_task(void *ctx) {
  on_worker *w = (on_worker *)ctx;
  lrt_pool_section *s = NULL;
  int ok = lrt_pool_current_thread_id(w->pool) >= 0;
  ok &= lrt_pool_section_begin(w->pool, &s) == LRT_OK;
  for (int k = 0; k < 20; k++) {
    hits h;
    hits_init(&h, 50 + k);
    lrt_pool_try_simple_parallel_for(w->pool, h.n, index_cb, &h);
    ok &= hits_once(&h);
  }
  lrt_pool_section_end(s);
  w->ok = ok;
  atomic_store(&w->done, 1);
}

static void test_section_on_worker(void) {
  on_worker w = {make_pool(4), 0, 0};
  lrt_pool_schedule(w.pool, section_task, &w);
  double t0 = now_s();
  while (!atomic_load(&w.done) && now_s() - t0 < 60) sleep_ms(1);
  CHECK(atomic_load(&w.done) && w.ok);
  lrt_pool_destroy(w.pool);
}

static void test_partition(void) {
  ptrdiff_t s = -7, e = -7;
  CHECK_STATUS(lrt_partition_work(0, 3, 10, &s, &e), LRT_OK);
  CHECK(s == 0 && e == 4);
  CHECK_STATUS(lrt_partition_work(1, 3, 10, &s, &e), LRT_OK);
  CHECK(s == 4 && e == 7);
  CHECK_STATUS(lrt_partition_work(2, 3, 10, &s, &e), LRT_OK);
  CHECK(s == 7 && e == 10);
  CHECK_STATUS(lrt_partition_work(4, 5, 3, &s, &e), LRT_OK);
  CHECK(s == 3 && e == 3);
  for (ptrdiff_t total = 0; total < 40; total += 7)
    for (ptrdiff_t n = 1; n < 9; n++) {
      ptrdiff_t at = 0;
      for (ptrdiff_t i = 0; i < n; i++) {
        CHECK_STATUS(lrt_partition_work(i, n, total, &s, &e), LRT_OK);
        CHECK(s == at && (e - s == total / n || e - s == total / n + 1));
        at = e;
      }
      CHECK(at == total);
    }
  s = e = -7;
  CHECK_STATUS(lrt_partition_work(0, 0, 10, &s, &e), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_partition_work(3, 3, 10, &s, &e), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_partition_work(-1, 3, 10, &s, &e), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_partition_work(0, 3, -1, &s, &e), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_partition_work(0, 3, 10, NULL, &e), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_partition_work(0, 3, 10, &s, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK(s == -7 && e == -7);
}

/* The unsigned value after "key": in json, searching from `from`. */
static unsigned long long field(const char *from, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *at = strstr(from, pat);
  if (!at) return ~0ull;
  return strtoull(at + strlen(pat), NULL, 10);
}

static void test_profiling(void) {
  lrt_pool *p = make_pool(3);
  char *json = (char *)0x1;
  CHECK_STATUS(lrt_pool_start_profiling(NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_stop_profiling(p, &json), LRT_ERR_STATE);
  CHECK(json == (char *)0x1);
  CHECK_STATUS(lrt_pool_start_profiling(p), LRT_OK);
  CHECK_STATUS(lrt_pool_stop_profiling(p, NULL), LRT_ERR_INVALID_ARGUMENT);
  for (int r = 0; r < 10; r++) {
    hits h;
    hits_init(&h, 500);
    lrt_pool_try_simple_parallel_for(p, h.n, index_cb, &h);
    CHECK(hits_once(&h));
  }
  CHECK_STATUS(lrt_pool_stop_profiling(p, &json), LRT_OK);
  CHECK(json != NULL && json != (char *)0x1);
  if (json && json != (char *)0x1) {
    const char *main_thread = strstr(json, "\"main_thread\"");
    const char *workers = strstr(json, "\"workers\":[");
    CHECK(main_thread && workers);
    if (main_thread && workers) {
      unsigned long long blocks = field(main_thread, "blocks");
      CHECK(field(main_thread, "loops") == 10);
      const char *w = workers;
      for (int id = 0; id < lrt_pool_num_threads(p); id++) {
        char pat[32];
        snprintf(pat, sizeof pat, "{\"id\":%d,", id);
        w = strstr(w, pat);
        CHECK(w != NULL);
        if (!w) break;
        blocks += field(w, "blocks");
        CHECK(field(w, "tasks") != ~0ull && field(w, "steals") != ~0ull &&
              field(w, "spin_iterations") != ~0ull && field(w, "parks") != ~0ull &&
              field(w, "loop_ns") != ~0ull);
        w++;
      }
      CHECK_EQ_U64(blocks, 10 * 500);
    }
    lrt_string_free(json);
  }
  lrt_string_free(NULL);
  lrt_pool_destroy(p);
}

static atomic_size_t smallest_stack;

static void stack_cb(void *ctx, ptrdiff_t i) {
  (void)i;
  const lrt_pool *p = (const lrt_pool *)ctx;
  if (lrt_pool_current_thread_id(p) < 0) return;
  pthread_attr_t a;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &a) == 0) {
    pthread_attr_getstacksize(&a, &size);
    pthread_attr_destroy(&a);
  }
  size_t cur = atomic_load(&smallest_stack);
  while (size < cur && !atomic_compare_exchange_weak(&smallest_stack, &cur, size)) {
  }
  sleep_ms(1);
}

static void test_stack_size(void) {
  lrt_pool_options *o = NULL;
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_stack_size(NULL, 1 << 20), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_stack_size(o, 1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_stack_size(o, (size_t)PTHREAD_STACK_MIN - 1),
               LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_pool_options_set_stack_size(o, 0), LRT_OK);
  const size_t want = 8u << 20;
  CHECK_STATUS(lrt_pool_options_set_stack_size(o, want), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 3), LRT_OK);
  lrt_pool *p = NULL;
  CHECK_STATUS(lrt_pool_create(o, &p), LRT_OK);
  atomic_store(&smallest_stack, (size_t)-1);
  lrt_pool_try_simple_parallel_for(p, 64, stack_cb, p);
  size_t got = atomic_load(&smallest_stack);
  CHECK(got == (size_t)-1 || got >= want); /* -1: no worker ran a block */
  lrt_pool_destroy(p);
  lrt_pool_options_destroy(o);
}

int main(void) {
  test_section_loops();
  test_team_stays();
  test_section_rules();
  test_section_on_worker();
  test_partition();
  test_profiling();
  test_stack_size();
  return check_result();
}
