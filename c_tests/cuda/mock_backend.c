/* lrt_host_api_cuda over the mock driver (mock/mock_cuda.c, which this
 * program links for its control functions; ctest points LEANRT_CUDA_LIBRARY
 * at the same library): argument and ordinal checks, round trips from
 * several threads, CUDA errors in lrt_last_error, injected faults, pinning,
 * the maker over CUDA, and release. */
#include "cuda_common.h"

int mock_cuda_set(const char *key, long long value);
long long mock_cuda_get(const char *key);

static void check_faults(const lrt_host_api *api) {
  /* Larger than the device. */
  CHECK(api->ops->device_malloc(api->ctx, (size_t)1 << 46) == NULL);
  CHECK(error_contains("CUDA_ERROR_OUT_OF_MEMORY"));
  CHECK(error_contains("cuMemAlloc_v2"));
  void *dev = api->ops->device_malloc(api->ctx, 4096);
  CHECK(dev != NULL);
  unsigned char buf[64] = {0};
  /* Outside the allocation: the driver's error, no crash. */
  void *beyond = (void *)((uintptr_t)dev + ((uintptr_t)1 << 40));
  CHECK(api->ops->copy_to_device(api->ctx, beyond, buf, sizeof buf) != 0);
  CHECK(error_contains("CUDA_ERROR_INVALID_VALUE"));
  CHECK(api->ops->copy_to_device(api->ctx, dev, NULL, sizeof buf) != 0);
  CHECK(api->ops->copy_from_device(api->ctx, NULL, dev, sizeof buf) != 0);
  CHECK(api->ops->copy_to_device(api->ctx, dev, buf, 0) == 0);
  /* An injected failure on the 2nd copy, then recovery. */
  CHECK(mock_cuda_set("fail_htod_at", 2) == 0);
  CHECK(api->ops->copy_to_device(api->ctx, dev, buf, sizeof buf) == 0);
  CHECK(api->ops->copy_to_device(api->ctx, dev, buf, sizeof buf) != 0);
  CHECK(error_contains("cuda copy_to_device: cuMemcpyHtoD_v2"));
  CHECK(error_contains("CUDA_ERROR_UNKNOWN (unknown error)"));
  CHECK(api->ops->copy_to_device(api->ctx, dev, buf, sizeof buf) == 0);
  api->ops->device_free(api->ctx, dev);
  api->ops->device_free(api->ctx, NULL); /* no-op */
}

static void check_maker_faults(const lrt_host_api *api) {
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = 64;
  cfg.flags = LRT_MAKER_PIN_MIRROR;
  long long allocs = mock_cuda_get("live_allocs"), regs = mock_cuda_get("live_registrations");

  /* The image does not fit the device: NO_MEMORY, nothing leaked. */
  CHECK(mock_cuda_set("total_mem", 4096) == 0);
  lrt_runtime_maker *m = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, api, &m), LRT_ERR_NO_MEMORY);
  CHECK(m == NULL);
  CHECK(mock_cuda_get("live_allocs") == allocs);
  CHECK(mock_cuda_get("live_registrations") == regs);
  CHECK(mock_cuda_set("total_mem", 4LL << 30) == 0);

  /* Pinned mirror: one registration of the whole mirror, undone at destroy. */
  long long bytes = mock_cuda_get("registered_bytes");
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, api, &m), LRT_OK);
  lrt_sm_segments seg;
  CHECK_STATUS(lrt_runtime_maker_segments(m, &seg), LRT_OK);
  CHECK(mock_cuda_get("live_registrations") == regs + 1);
  CHECK_EQ_U64(mock_cuda_get("registered_bytes") - bytes, seg.end);
  CHECK(mock_cuda_get("last_register_flags") == 1); /* CU_MEMHOSTREGISTER_PORTABLE */

  /* A copy failing mid-upload: LRT_ERR_DEVICE, and the next run works. */
  lrt_sm_header *h;
  lrt_task_slot slot;
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  for (int i = 0; i < 6; i++) {
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
    write_task(&slot, 1);
  }
  CHECK(mock_cuda_set("fail_htod_at", 3) == 0);
  CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_ERR_DEVICE);
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  for (int i = 0; i < 5; i++) {
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
    write_task(&slot, 2);
  }
  long long htod = mock_cuda_get("htod_bytes");
  lrt_upload_report r;
  CHECK_STATUS(lrt_runtime_maker_upload(m, &r), LRT_OK);
  CHECK_EQ_U64(r.bytes, 320u + 4969u * 5u);
  CHECK_EQ_U64(mock_cuda_get("htod_bytes") - htod, r.bytes);
  check_device_image(api, m, 5, 2);
  lrt_runtime_maker_destroy(m);
  CHECK(mock_cuda_get("live_registrations") == regs);
  CHECK(mock_cuda_get("live_allocs") == allocs);

  /* Pinning refused by the driver: a warning, the maker works unpinned. */
  CHECK(mock_cuda_set("fail_register", 2) == 0);
  m = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, api, &m), LRT_OK);
  CHECK(mock_cuda_get("live_registrations") == regs);
  if (m != NULL) {
    CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
    CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_OK);
    lrt_runtime_maker_destroy(m);
  }
  CHECK(mock_cuda_set("fail_register", 0) == 0);
}

/* One run of n tasks; the device image's slots are checked. */
static void pinned_run(const lrt_host_api *api, lrt_runtime_maker *m, int n, int run) {
  lrt_sm_header *h;
  lrt_task_slot slot;
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  for (int i = 0; i < n; i++) {
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
    write_task(&slot, run);
  }
  CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_OK);
  check_device_image(api, m, n, run);
}

/* LRT_MAKER_PIN_MIRROR pins what the runs read, growing with N: a large
 * window registers far less than its image at create, no copy reads
 * unregistered memory, repeated runs register nothing, destroy unregisters
 * everything. */
static void check_pinning_follows_runs(const lrt_host_api *api) {
  long long regs = mock_cuda_get("live_registrations"), bytes = mock_cuda_get("registered_bytes");
  long long unpinned = mock_cuda_get("htod_unpinned_calls");
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = 131072;
  cfg.flags = LRT_MAKER_PIN_MIRROR;
  lrt_runtime_maker *m = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, api, &m), LRT_OK);
  lrt_sm_segments seg;
  CHECK_STATUS(lrt_runtime_maker_segments(m, &seg), LRT_OK);
  long long at_create = mock_cuda_get("registered_bytes") - bytes;
  CHECK(at_create > 0 && at_create < (1 << 20));
  CHECK((uint64_t)at_create * 1000 < seg.end);
  for (int run = 1; run <= 3; run++) pinned_run(api, m, 64, run);
  CHECK(mock_cuda_get("registered_bytes") - bytes == at_create);
  long long calls = mock_cuda_get("register_calls");
  pinned_run(api, m, 1000, 4); /* grows to 1024 slots */
  CHECK(mock_cuda_get("register_calls") > calls);
  calls = mock_cuda_get("register_calls");
  pinned_run(api, m, 1000, 5);
  pinned_run(api, m, 3, 6);
  pinned_run(api, m, 1024, 7);
  CHECK(mock_cuda_get("register_calls") == calls);
  CHECK(mock_cuda_get("htod_unpinned_calls") == unpinned);
  lrt_runtime_maker_destroy(m);
  CHECK(mock_cuda_get("registered_bytes") == bytes);
  CHECK(mock_cuda_get("live_registrations") == regs);
}

int main(void) {
  if (getenv("LEANRT_CUDA_LIBRARY") == NULL) SKIP("LEANRT_CUDA_LIBRARY is not set (run it through ctest)");
  lrt_host_api api, before;
  memset(&api, 0x5a, sizeof api);
  before = api;

  /* Bad arguments and devices: a status and a message, *out untouched. */
  CHECK_STATUS(lrt_host_api_cuda(0, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_host_api_cuda(1, &api), LRT_ERR_UNAVAILABLE);
  CHECK(error_contains("lrt_host_api_cuda: no CUDA device 1 (found 1)"));
  CHECK_STATUS(lrt_host_api_cuda(-7, &api), LRT_ERR_UNAVAILABLE);
  CHECK(error_contains("no CUDA device -7 (found 1)"));
  CHECK(mock_cuda_set("device_count", 0) == 0);
  CHECK_STATUS(lrt_host_api_cuda(0, &api), LRT_ERR_UNAVAILABLE);
  CHECK(error_contains("no CUDA device 0 (found 0)"));
  CHECK(mock_cuda_set("device_count", 1) == 0);
  CHECK(memcmp(&api, &before, sizeof api) == 0);

  long long retained = mock_cuda_get("retained");
  long long no_ctx = mock_cuda_get("no_ctx_errors");
  CHECK_STATUS(lrt_host_api_cuda(0, &api), LRT_OK);
  CHECK(mock_cuda_get("retained") == retained + 1);

  check_round_trip(&api, (size_t)1 << 20);
  check_faults(&api);
  check_maker(&api, 64, LRT_UPLOAD_BOUNDED, 0, 40);
  check_maker(&api, 64, LRT_UPLOAD_COMPACT, LRT_MAKER_PIN_MIRROR, 64);
  check_maker(&api, 64, LRT_UPLOAD_FULL, 0, 17);
  check_maker(&api, 64, LRT_UPLOAD_COMPACT, 0, 50); /* 249 KB: straight to its offsets */
  check_maker(&api, 64, LRT_UPLOAD_AUTO, 0, 50);
  check_maker(&api, 64, LRT_UPLOAD_AUTO, LRT_MAKER_PIN_MIRROR, 5);
  check_maker_faults(&api);
  check_pinning_follows_runs(&api);
  CHECK(mock_cuda_get("no_ctx_errors") == no_ctx);
  CHECK(mock_cuda_get("thread_depth") == 0);

  /* A maker holds its own reference to the device: releasing the api before
   * destroying the maker is safe, and the retain goes back at destroy. */
  {
    lrt_host_api tmp;
    CHECK_STATUS(lrt_host_api_cuda(0, &tmp), LRT_OK);
    CHECK(mock_cuda_get("retained") == retained + 2);
    lrt_maker_config cfg;
    lrt_maker_config_init(&cfg);
    cfg.task_window = 16;
    lrt_runtime_maker *m = NULL;
    CHECK_STATUS(lrt_runtime_maker_create(&cfg, &tmp, &m), LRT_OK);
    lrt_host_api_release(&tmp);
    CHECK(mock_cuda_get("retained") == retained + 2);
    lrt_sm_header *h;
    lrt_task_slot slot;
    CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
    CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_OK);
    int32_t st = -1;
    CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_OK);
    CHECK(st == 0);
    /* A released api cannot make a new maker. */
    lrt_runtime_maker *m2 = NULL;
    CHECK_STATUS(lrt_runtime_maker_create(&cfg, &tmp, &m2), LRT_ERR_INVALID_ARGUMENT);
    CHECK(m2 == NULL);
    lrt_runtime_maker_destroy(m);
    CHECK(mock_cuda_get("retained") == retained + 1);
  }

  /* Release: the context retain goes back; a stale copy fails cleanly. */
  lrt_host_api stale = api;
  lrt_host_api_release(&api);
  CHECK(api.ctx == NULL && api.ops == NULL);
  CHECK(mock_cuda_get("retained") == retained);
  CHECK(stale.ops->device_malloc(stale.ctx, 64) == NULL);
  CHECK(error_contains("not live"));
  unsigned char b[8] = {0};
  CHECK(stale.ops->copy_to_device(stale.ctx, (void *)(uintptr_t)0x1000, b, sizeof b) != 0);
  lrt_host_api_release(&stale);
  lrt_host_api_release(&api);
  lrt_host_api_release(NULL);
  CHECK(mock_cuda_get("retained") == retained);

  /* No driver library at all: UNAVAILABLE naming the path. */
  setenv("LEANRT_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  CHECK_STATUS(lrt_host_api_cuda(0, &api), LRT_ERR_UNAVAILABLE);
  CHECK(error_contains("/nonexistent/libcuda.so.1"));
  return check_result();
}
