/* A custom create-thread function that fails (returns NULL) part-way
 * through lrt_pool_create: the call fails with a status and a message,
 * writes no pool, joins every worker it had started, and leaks nothing
 * (ORT's contract: NULL means no thread was started, so nothing else holds
 * the worker's parameter). Repeated many times, resident memory must stay
 * flat; ASan and valgrind check the same leak-free-ness directly. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emulation.h"

#include "custom_threads.h"

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kib = strtol(line + 6, NULL, 10);
  fclose(f);
  return kib;
}

int main(void) {
  const char *small = getenv("LEANRT_TEST_SMALL");
  int rounds = (small && small[0] == '1') ? 20 : 3000;
  lrt_pool_options *o = NULL;
  CHECK_STATUS(lrt_pool_options_create(&o), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_num_threads(o, 4), LRT_OK);
  CHECK_STATUS(lrt_pool_options_set_custom_thread_fns(o, custom_create, NULL, custom_join), LRT_OK);
  long early = 0;
  for (int r = 0; r < rounds; r++) {
    if (r == rounds / 10) early = rss_kib();
    atomic_store(&create_calls, 0);
    atomic_store(&fail_at, 1 + r % 3); /* the 1st, 2nd or 3rd worker fails */
    lrt_pool *const sentinel = (lrt_pool *)(uintptr_t)0x77;
    lrt_pool *p = sentinel;
    lrt_status s = lrt_pool_create(o, &p);
    CHECK(s != LRT_OK);
    CHECK(p == sentinel);
    char msg[256];
    lrt_last_error(msg, sizeof msg);
    CHECK(strncmp(msg, "lrt_pool_create", 15) == 0);
    CHECK(atomic_load(&creates) == atomic_load(&joins));
  }
  long late = rss_kib();
  if (!small) {
    printf("RSS after %d of %d failed creates: %ld KiB, at the end: %ld KiB\n", rounds / 10, rounds, early, late);
    if (rss_check_meaningful("pool_custom_create_fails")) CHECK(late - early < 4096);
  }
  /* The same options still make a working pool. */
  atomic_store(&fail_at, 0);
  lrt_pool *p = NULL;
  CHECK_STATUS(lrt_pool_create(o, &p), LRT_OK);
  CHECK(p != NULL);
  lrt_pool_destroy(p);
  CHECK(atomic_load(&creates) == atomic_load(&joins));
  lrt_pool_options_destroy(o);
  return check_result();
}
