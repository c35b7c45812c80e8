/* dlclose while a pool is alive: the documented outcome is that leanrt stays
 * mapped while the pool's worker threads exist (they hold thread-local
 * destructors of the library, and the C library does not unload an object
 * in that state), so nothing runs unmapped code; the pool stays usable
 * through a new handle and unloads once destroyed. */
#include "dl_common.h"

int main(void) {
  const int base = thread_count(); /* main, and an emulator's own thread */
  leanrt_fns f = leanrt_open(RTLD_NOW | RTLD_LOCAL);
  lrt_pool *p = make_pool(&f, 4);
  run_loop(&f, p, 64);
  DL_CHECK(settled_thread_count(base + 3) == base + 3, "expected 3 workers + %d, found %d", base,
           thread_count());
  DL_CHECK(dlclose(f.handle) == 0, "dlclose: %s", dlerror());
  usleep(20 * 1000); /* the workers spin out and go to sleep in leanrt's code */
  DL_CHECK(leanrt_mapped(), "leanrt was unmapped under its live worker threads");
  /* Still usable: reopen (same mapping), run, destroy. */
  leanrt_fns g = leanrt_open(RTLD_NOW | RTLD_LOCAL);
  DL_CHECK(g.pool_destroy == f.pool_destroy, "a second copy of leanrt was loaded");
  run_loop(&g, p, 64);
  g.pool_destroy(p);
  DL_CHECK(settled_thread_count(base) == base, "threads left after destroy: %d", thread_count());
  DL_CHECK(dlclose(g.handle) == 0, "dlclose: %s", dlerror());
  printf("mapped after the last dlclose: %d\n", leanrt_mapped());
  return 0;
}
