/* Cheap misuse of one maker, detected: a call on a maker from inside that
 * maker's own device callback (begin_run, claim, destroy re-entering an
 * upload) and a call from a second thread while the first is inside one
 * (held in its copy callback) return LRT_ERR_STATE with a message naming
 * the rule, change nothing, print nothing; the outer call completes and
 * ships the whole run, and the maker stays usable and destroyable. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "check.h"
#include "common_device.h"

#define W 16
#define N 5

static lrt_runtime_maker *maker;
static test_device dev;
static atomic_int mode; /* 0 plain, 1 re-enter, 2 hold */
static atomic_int held, release_;
static int reentered_status[3];

static int reentering_to(void *ctx, void *dst, const void *src, size_t n) {
  int m = atomic_load(&mode);
  if (m == 1) {
    atomic_store(&mode, 0); /* once */
    lrt_sm_header *h = NULL;
    lrt_task_slot slot;
    reentered_status[0] = lrt_runtime_maker_begin_run(maker, &h);
    reentered_status[1] = lrt_runtime_maker_claim_slot(maker, &slot);
    lrt_runtime_maker_destroy(maker); /* refused: nothing freed */
    reentered_status[2] = error_contains("another call") ? LRT_ERR_STATE : LRT_OK;
  } else if (m == 2) {
    atomic_store(&held, 1);
    while (!atomic_load(&release_)) {
      struct timespec t = {0, 100000};
      nanosleep(&t, NULL);
    }
    atomic_store(&mode, 0);
  }
  return dev_to(ctx, dst, src, n);
}

static const lrt_host_api_ops reentering_ops = {dev_malloc, dev_free, reentering_to, dev_from};

static int run(int tasks) {
  lrt_sm_header *h = NULL;
  lrt_task_slot slot;
  lrt_upload_report rep;
  if (lrt_runtime_maker_begin_run(maker, &h) != LRT_OK) return 0;
  for (int i = 0; i < tasks; i++)
    if (lrt_runtime_maker_claim_slot(maker, &slot) != LRT_OK) return 0;
  lrt_sm_header *dh = (lrt_sm_header *)lrt_runtime_maker_device_image(maker);
  if (lrt_runtime_maker_upload(maker, &rep) != LRT_OK) return 0;
  return rep.total_tasks == tasks && dh->current_task_index == tasks && dh->orchestrator_done == 1;
}

static void *upload_thread(void *arg) {
  (void)arg;
  atomic_store(&mode, 2);
  CHECK(run(N));
  return NULL;
}

int main(void) {
  lrt_host_api api;
  api.ctx = &dev;
  api.ops = &reentering_ops;
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = W;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &maker), LRT_OK);

  /* 1. Re-entry from the maker's own copy callback. */
  atomic_store(&mode, 1);
  CHECK(run(N)); /* the outer upload ships the whole run */
  CHECK_STATUS(reentered_status[0], LRT_ERR_STATE);
  CHECK_STATUS(reentered_status[1], LRT_ERR_STATE);
  CHECK_STATUS(reentered_status[2], LRT_ERR_STATE);

  /* 2. A second thread while the first is inside an upload. */
  atomic_store(&held, 0);
  atomic_store(&release_, 0);
  pthread_t t;
  pthread_create(&t, NULL, upload_thread, NULL);
  while (!atomic_load(&held)) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  lrt_sm_header *h = NULL;
  lrt_task_slot slot;
  CHECK_STATUS(lrt_runtime_maker_begin_run(maker, &h), LRT_ERR_STATE);
  CHECK(error_contains("lrt_runtime_maker_begin_run: ") && error_contains("another call"));
  CHECK_STATUS(lrt_runtime_maker_claim_slot(maker, &slot), LRT_ERR_STATE);
  CHECK(lrt_runtime_maker_device_image(maker) == NULL);
  atomic_store(&release_, 1);
  pthread_join(t, NULL);

  /* 3. Usable and destroyable afterwards; nothing leaked on the device. */
  CHECK(run(W));
  lrt_runtime_maker_destroy(maker);
  CHECK(test_device_live(&dev) == 0 && dev.violations == 0);
  printf("maker misuse: re-entry from a callback and a second thread refused with LRT_ERR_STATE, "
         "the outer runs complete\n");
  return check_result();
}
