/* Shared by the dlopen tests: load libleanrt.so by path (LEANRT_LIB) and
 * resolve the few entry points they use. These programs are not linked
 * against leanrt, so dlclose can really unload it. */
#ifndef LEANRT_DL_COMMON_H
#define LEANRT_DL_COMMON_H
#include <dirent.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leanrt.h"

typedef struct leanrt_fns {
  void *handle;
  lrt_status (*options_create)(lrt_pool_options **);
  void (*options_destroy)(lrt_pool_options *);
  lrt_status (*set_num_threads)(lrt_pool_options *, int);
  lrt_status (*pool_create)(const lrt_pool_options *, lrt_pool **);
  void (*pool_destroy)(lrt_pool *);
  void (*simple_parallel_for)(lrt_pool *, ptrdiff_t, void (*)(void *, ptrdiff_t), void *);
} leanrt_fns;

#define DL_CHECK(cond, ...)                                               \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                       \
      fprintf(stderr, "\n");                                              \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

static inline const char *leanrt_path(void) {
  const char *p = getenv("LEANRT_LIB");
  DL_CHECK(p != NULL && *p, "LEANRT_LIB is not set");
  return p;
}

static inline void *sym(void *h, const char *name) {
  void *f = dlsym(h, name);
  DL_CHECK(f != NULL, "dlsym %s: %s", name, dlerror());
  return f;
}

/* dlopen + resolve. The casts go through a union-free memcpy so that
 * -pedantic accepts converting an object pointer to a function pointer. */
#define LOAD_FN(dst, h, name) do { void *p_ = sym((h), (name)); memcpy(&(dst), &p_, sizeof p_); } while (0)

static inline leanrt_fns leanrt_open(int flags) {
  leanrt_fns f;
  memset(&f, 0, sizeof f);
  f.handle = dlopen(leanrt_path(), flags);
  DL_CHECK(f.handle != NULL, "dlopen: %s", dlerror());
  LOAD_FN(f.options_create, f.handle, "lrt_pool_options_create");
  LOAD_FN(f.options_destroy, f.handle, "lrt_pool_options_destroy");
  LOAD_FN(f.set_num_threads, f.handle, "lrt_pool_options_set_num_threads");
  LOAD_FN(f.pool_create, f.handle, "lrt_pool_create");
  LOAD_FN(f.pool_destroy, f.handle, "lrt_pool_destroy");
  LOAD_FN(f.simple_parallel_for, f.handle, "lrt_pool_try_simple_parallel_for");
  return f;
}

/* Threads of this process (entries of /proc/self/task). */
static inline int thread_count(void) {
  DIR *d = opendir("/proc/self/task");
  DL_CHECK(d != NULL, "opendir /proc/self/task");
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] != '.') n++;
  }
  closedir(d);
  return n;
}

/* Threads of this process once exited threads have left /proc: a joined
 * thread can stay listed for a moment after pthread_join returns (the
 * kernel clears the join futex before it releases the task). */
static inline int settled_thread_count(int expected) {
  int n = thread_count();
  for (int i = 0; i < 1000 && n != expected; i++) {
    usleep(1000);
    n = thread_count();
  }
  return n;
}

/* Resident memory in KiB (/proc/self/statm, second field, in pages). */
static inline long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  DL_CHECK(f != NULL, "fopen /proc/self/statm");
  long size = 0, resident = 0;
  DL_CHECK(fscanf(f, "%ld %ld", &size, &resident) == 2, "statm");
  fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* True while leanrt is mapped into the process. */
static inline int leanrt_mapped(void) {
  void *h = dlopen(leanrt_path(), RTLD_NOW | RTLD_NOLOAD);
  if (h == NULL) return 0;
  dlclose(h);
  return 1;
}

static inline void mark(void *ctx, ptrdiff_t i) { ((volatile char *)ctx)[i] = 1; }

/* Runs a loop of n indices on pool p and checks every index ran once. */
static inline void run_loop(const leanrt_fns *f, lrt_pool *p, ptrdiff_t n) {
  char seen[256];
  DL_CHECK(n <= (ptrdiff_t)sizeof seen, "loop too large");
  memset(seen, 0, sizeof seen);
  f->simple_parallel_for(p, n, mark, seen);
  for (ptrdiff_t i = 0; i < n; i++) DL_CHECK(seen[i] == 1, "index %td did not run", i);
}

static inline lrt_pool *make_pool(const leanrt_fns *f, int threads) {
  lrt_pool_options *o = NULL;
  DL_CHECK(f->options_create(&o) == LRT_OK, "options_create");
  DL_CHECK(f->set_num_threads(o, threads) == LRT_OK, "set_num_threads");
  lrt_pool *p = NULL;
  DL_CHECK(f->pool_create(o, &p) == LRT_OK && p != NULL, "pool_create");
  f->options_destroy(o);
  return p;
}
#endif
