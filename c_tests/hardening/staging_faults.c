/* Device failures as a C caller sees them: the k-th device_malloc,
 * copy_to_device or copy_from_device fails, for every k along a script of
 * runs, for every upload policy. The failing call returns NO_MEMORY /
 * DEVICE with a message that names the function and the callback, writes
 * no out-parameter, and the script retries it (a failed upload: the whole
 * run again); at the end every device allocation has been freed (the
 * device memory is malloc'ed here, so ASan and valgrind see any leak or
 * stray access too). What the maker ships after each failure is checked
 * slot by slot in tests/fault_staging.rs. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "common_device.h"

#define W 16
static const int runs[] = {2, 0, W, 5, W};
#define NRUNS (int)(sizeof runs / sizeof runs[0])

/* Whether the injected failure was met during the last call. */
static int met(const test_device *d, const uint64_t before[DEV_OPS], int *op) {
  for (int o = 0; o < DEV_OPS; o++) {
    if (d->fail_at[o] && before[o] < d->fail_at[o] && d->fail_at[o] <= d->calls[o]) {
      *op = o;
      return 1;
    }
  }
  return 0;
}

static lrt_status want(int op) { return op == DEV_MALLOC ? LRT_ERR_NO_MEMORY : LRT_ERR_DEVICE; }

/* The message of a failed call: the function, then the callback. */
static void check_message(const char *function, int op) {
  static const char *const callback[DEV_OPS] = {"device_malloc", "device_free", "copy_to_device",
                                                "copy_from_device"};
  CHECK(error_contains(function));
  CHECK(error_contains(callback[op]));
}

/* Runs the script; returns the number of failures met. */
static int script(int policy, int fail_op, uint64_t k, uint64_t totals[DEV_OPS]) {
  test_device dev;
  memset(&dev, 0, sizeof dev);
  if (fail_op >= 0) dev.fail_at[fail_op] = k;
  lrt_host_api api = test_device_api(&dev);
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = W;
  cfg.policy = (lrt_upload_policy)policy;
  int hits = 0, op = -1;
  uint64_t before[DEV_OPS];
  lrt_runtime_maker *m = NULL;
  for (;;) {
    memcpy(before, dev.calls, sizeof before);
    lrt_status s = lrt_runtime_maker_create(&cfg, &api, &m);
    if (met(&dev, before, &op)) {
      CHECK_STATUS(s, want(op));
      check_message("lrt_runtime_maker_create", op);
      CHECK(m == NULL);
      CHECK(test_device_live(&dev) == 0);
      hits++;
      continue;
    }
    CHECK_STATUS(s, LRT_OK);
    break;
  }
  if (!m) return hits;
  for (int r = 0; r < NRUNS;) {
    lrt_sm_header *h = NULL;
    CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
    for (int i = 0; i < runs[r]; i++) {
      lrt_task_slot slot;
      CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
      slot.payload->scalars[3] = ((uint64_t)r << 32) | (uint64_t)i;
      slot.descriptor->kernel_id[1] = r * 100 + i;
    }
    lrt_sm_header *dh = (lrt_sm_header *)lrt_runtime_maker_device_image(m);
    memset(dh, 0xA5, sizeof *dh); /* stale device header */
    lrt_upload_report rep;
    rep.total_tasks = -7;
    memcpy(before, dev.calls, sizeof before);
    lrt_status s = lrt_runtime_maker_upload(m, &rep);
    if (met(&dev, before, &op)) {
      CHECK_STATUS(s, want(op));
      check_message("lrt_runtime_maker_upload", op);
      CHECK(rep.total_tasks == -7);
      hits++;
      continue; /* the host makes the run again */
    }
    CHECK_STATUS(s, LRT_OK);
    CHECK(rep.total_tasks == runs[r] && dh->current_task_index == runs[r]);
    if (runs[r] > 0) CHECK(dh->task_payloads[runs[r] - 1].scalars[3] == (((uint64_t)r << 32) | (uint64_t)(runs[r] - 1)));
    dh->sched_error_code = r + 1;
    for (;;) {
      int32_t st = 777;
      memcpy(before, dev.calls, sizeof before);
      s = lrt_runtime_maker_read_status(m, &st);
      if (met(&dev, before, &op)) {
        CHECK_STATUS(s, want(op));
        check_message("lrt_runtime_maker_read_status", op);
        CHECK(st == 777);
        hits++;
        continue;
      }
      CHECK_STATUS(s, LRT_OK);
      CHECK(st == -(r + 1));
      break;
    }
    r++;
  }
  lrt_runtime_maker_destroy(m);
  CHECK(test_device_live(&dev) == 0);
  CHECK_EQ_U64(dev.allocs, dev.frees);
  CHECK_EQ_U64(dev.violations, 0);
  if (totals) memcpy(totals, dev.calls, sizeof dev.calls);
  return hits;
}

int main(void) {
  int injected = 0;
  for (int policy = 0; policy < 3; policy++) {
    uint64_t totals[DEV_OPS];
    CHECK(script(policy, -1, 0, totals) == 0);
    const int ops[] = {DEV_MALLOC, DEV_TO, DEV_FROM};
    for (int j = 0; j < 3; j++) {
      for (uint64_t k = 1; k <= totals[ops[j]]; k++) {
        int h = script(policy, ops[j], k, NULL);
        if (h != 1) fprintf(stderr, "policy %d op %d k %llu: %d failures met\n", policy, ops[j], (unsigned long long)k, h);
        CHECK(h == 1);
        injected += h;
      }
    }
  }
  printf("staging_faults: %d injected failures, all recovered\n", injected);
  CHECK(injected > 0);
  return check_result();
}
