/* fork: a maker and a host api (host backend) inherited by a child keep
 * working there. The child runs several runs on the inherited maker, checks
 * the device image, creates and destroys a maker of its own, destroys the
 * inherited one and releases the api, with its stderr captured: leanrt
 * must print nothing. The parent's maker is unaffected and works after. */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"

#define W 64

/* One run of n tasks tagged with tag; 1 when the device image is right. */
static int run_once(lrt_runtime_maker *m, int n, uint64_t tag) {
  lrt_sm_header *h = NULL;
  lrt_task_slot slot;
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  for (int i = 0; i < n; i++) {
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
    slot.payload->scalar_count = 1;
    slot.payload->scalars[0] = tag * 1000u + (uint64_t)i;
  }
  lrt_upload_report r;
  CHECK_STATUS(lrt_runtime_maker_upload(m, &r), LRT_OK);
  CHECK(r.total_tasks == n);
  const lrt_sm_header *dh = (const lrt_sm_header *)lrt_runtime_maker_device_image(m);
  int ok = dh != NULL && dh->current_task_index == n;
  for (int i = 0; ok && i < n; i++)
    ok = dh->task_payloads[i].scalar_count == 1 && dh->task_payloads[i].scalars[0] == tag * 1000u + (uint64_t)i;
  CHECK(ok);
  int32_t st = 1;
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_OK);
  CHECK(st == 0);
  return ok;
}

static int child(lrt_runtime_maker *m, lrt_host_api *api) {
  for (int k = 0; k < 3; k++) run_once(m, 5 + k, 100u + (uint64_t)k);
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = W;
  cfg.policy = LRT_UPLOAD_COMPACT;
  lrt_runtime_maker *own = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, api, &own), LRT_OK);
  if (own) {
    run_once(own, 9, 7);
    lrt_runtime_maker_destroy(own);
  }
  lrt_runtime_maker_destroy(m);
  lrt_host_api_release(api);
  return check_result();
}

int main(void) {
  unsetenv("LEANRT_LOG"); /* leanrt's own warnings stay silent by default */
  lrt_host_api api;
  CHECK_STATUS(lrt_host_api_host(&api), LRT_OK);
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = W;
  cfg.flags = LRT_MAKER_PIN_MIRROR; /* mlock may be refused: a silent warning */
  lrt_runtime_maker *m = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_OK);
  if (!m) return check_result();
  run_once(m, 4, 1);

  child_result r = run_child_with_maker(child, m, &api, 60);
  CHECK(child_ok_and_silent(&r));

  /* The parent's maker and api are unaffected. */
  run_once(m, 6, 2);
  lrt_runtime_maker_destroy(m);
  lrt_host_api_release(&api);
  return check_result();
}
