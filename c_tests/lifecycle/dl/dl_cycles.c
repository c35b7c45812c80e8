/* 200 cycles of dlopen -> create a 4-thread pool -> run a loop -> destroy ->
 * dlclose leave no thread behind and no growth of resident memory. */
#include "dl_common.h"
#include "emulation.h"

int main(void) {
  const int cycles = 200, warmup = 20;
  long rss_after_warmup = 0;
  const int base = thread_count(); /* main, and an emulator's own thread */
  for (int c = 0; c < cycles; c++) {
    leanrt_fns f = leanrt_open(RTLD_NOW | RTLD_LOCAL);
    lrt_pool *p = make_pool(&f, 4);
    run_loop(&f, p, 64);
    f.pool_destroy(p);
    DL_CHECK(settled_thread_count(base) == base, "cycle %d: %d threads after destroy", c, thread_count());
    DL_CHECK(dlclose(f.handle) == 0, "dlclose: %s", dlerror());
    if (c + 1 == warmup) rss_after_warmup = rss_kib();
  }
  long growth = rss_kib() - rss_after_warmup;
  printf("threads %d, resident growth over %d cycles: %ld KiB, leanrt mapped after: %d\n",
         thread_count(), cycles - warmup, growth, leanrt_mapped());
  DL_CHECK(thread_count() == base, "threads left: %d", thread_count());
  /* Flat: well under one cycle's worth of pool stacks or mirrors. */
  if (rss_check_meaningful("dl_cycles")) DL_CHECK(growth < 2048, "resident memory grew by %ld KiB", growth);
  return 0;
}
