/* RLIMIT_MEMLOCK far below the image: makers that ask for a pinned mirror
 * (every policy, reused and fresh mirrors) are created and run normally on
 * the host backend, the fallback is reported exactly once per maker
 * through the log callback (never printed), and each maker ships complete
 * runs. In a child that drops root first (the limit does not bind root).
 * Where mlock does not bind at all (AddressSanitizer makes it a no-op) the
 * warning count is not checked; the rest is. */
#include <grp.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "child.h"

static atomic_int warnings, pin_warnings;
static void on_log(void *ctx, lrt_log_level level, const char *msg) {
  (void)ctx;
  (void)level;
  atomic_fetch_add(&warnings, 1);
  if (strstr(msg, "pin")) atomic_fetch_add(&pin_warnings, 1);
}

static int limited(void *ctx) {
  (void)ctx;
  if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
    return 10;
  struct rlimit lim = {64 * 1024, 64 * 1024};
  if (setrlimit(RLIMIT_MEMLOCK, &lim) != 0) return 11;
  /* Whether the limit binds here: AddressSanitizer makes mlock a no-op that
   * succeeds, and then nothing falls back (the count is not checked). */
  size_t probe_len = 1 << 20;
  char *probe = (char *)malloc(probe_len);
  if (!probe) return 19;
  int binds = mlock(probe, probe_len) != 0;
  if (!binds) munlock(probe, probe_len);
  free(probe);
  if (lrt_set_log_callback(on_log, NULL) != LRT_OK) return 12;
  lrt_host_api api;
  if (lrt_host_api_host(&api) != LRT_OK) return 13;
  const lrt_upload_policy policies[] = {LRT_UPLOAD_FULL, LRT_UPLOAD_BOUNDED, LRT_UPLOAD_COMPACT,
                                        LRT_UPLOAD_AUTO};
  for (int p = 0; p < 4; p++) {
    for (int fresh = 0; fresh < 2; fresh++) {
      lrt_maker_config cfg;
      lrt_maker_config_init(&cfg);
      cfg.task_window = 1024;
      cfg.policy = policies[p];
      cfg.flags = LRT_MAKER_PIN_MIRROR | (fresh ? LRT_MAKER_FRESH_MIRROR : 0);
      atomic_store(&warnings, 0);
      atomic_store(&pin_warnings, 0);
      lrt_runtime_maker *m = NULL;
      int rc = lrt_runtime_maker_create(&cfg, &api, &m);
      if (rc != LRT_OK) {
        fprintf(stderr, "policy %d fresh %d: create %s\n", p, fresh, lrt_status_str(rc));
        return 14;
      }
      for (int run = 0; run < 3; run++) {
        lrt_sm_header *h = NULL;
        lrt_task_slot slot;
        lrt_upload_report rep;
        if (lrt_runtime_maker_begin_run(m, &h) != LRT_OK) return 15;
        for (int i = 0; i <= run; i++)
          if (lrt_runtime_maker_claim_slot(m, &slot) != LRT_OK) return 16;
        if (lrt_runtime_maker_upload(m, &rep) != LRT_OK || rep.total_tasks != run + 1) return 17;
      }
      lrt_runtime_maker_destroy(m);
      if (binds && (atomic_load(&pin_warnings) != 1 || atomic_load(&warnings) != 1)) {
        fprintf(stderr, "policy %d fresh %d: %d warnings (%d about pinning), expected 1\n", p,
                fresh, atomic_load(&warnings), atomic_load(&pin_warnings));
        return 18;
      }
    }
  }
  lrt_host_api_release(&api);
  lrt_set_log_callback(NULL, NULL);
  printf("memlock 64 KiB: 8 makers (4 policies x reused/fresh mirror) ran 3 runs each, %s\n",
         binds ? "one pin-fallback warning each, nothing printed"
               : "nothing printed (mlock does not bind here: warnings not counted)");
  fflush(stdout);
  return 0;
}

int main(void) {
  unsetenv("LEANRT_LOG");
  child_result r = run_child_ctx(limited, NULL, 60);
  if (!r.exited || r.status != 0 || r.err[0]) {
    fprintf(stderr, "memlock child: %s %d\n%s\n", r.exited ? "exit" : "signal", r.status, r.err);
    check_failures_++;
  }
  return check_result();
}
