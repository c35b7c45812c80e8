/* fork over the mock CUDA driver: CUDA does not survive fork, so in a child
 * an inherited CUDA api and maker, and a new CUDA api, are refused with
 * LRT_ERR_UNAVAILABLE and a message naming fork, never a crash; destroying
 * and releasing them there touches nothing of the parent's driver state,
 * and nothing is printed. The parent keeps working. */
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "child.h"

int mock_cuda_set(const char *key, long long value);
long long mock_cuda_get(const char *key);

static int one_run(lrt_runtime_maker *m, lrt_status want) {
  lrt_sm_header *h = NULL;
  lrt_task_slot slot;
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
  lrt_status st = lrt_runtime_maker_upload(m, NULL);
  CHECK_STATUS(st, want);
  return st == want;
}

static int child(lrt_runtime_maker *m, lrt_host_api *api) {
  long long retained = mock_cuda_get("retained"), allocs = mock_cuda_get("live_allocs");
  long long htod = mock_cuda_get("htod_bytes");
  int32_t status = 0;
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &status), LRT_ERR_UNAVAILABLE);
  CHECK(error_contains("fork"));
  one_run(m, LRT_ERR_UNAVAILABLE);
  CHECK(error_contains("CUDA does not survive fork"));
  CHECK(api->ops->device_malloc(api->ctx, 64) == NULL);
  CHECK(error_contains("fork"));
  unsigned char b[8] = {0};
  CHECK(api->ops->copy_to_device(api->ctx, (void *)(uintptr_t)0x1000, b, sizeof b) != 0);
  lrt_host_api fresh;
  CHECK_STATUS(lrt_host_api_cuda(0, &fresh), LRT_ERR_UNAVAILABLE);
  CHECK(error_contains("fork"));
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = 16;
  lrt_runtime_maker *m2 = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, api, &m2), LRT_ERR_UNAVAILABLE);
  CHECK(m2 == NULL);
  lrt_runtime_maker_destroy(m);
  lrt_host_api_release(api);
  /* Nothing of the parent's driver state was touched in the child. */
  CHECK(mock_cuda_get("retained") == retained);
  CHECK(mock_cuda_get("live_allocs") == allocs);
  CHECK(mock_cuda_get("htod_bytes") == htod);
  return check_result();
}

int main(void) {
  if (getenv("LEANRT_CUDA_LIBRARY") == NULL) SKIP("LEANRT_CUDA_LIBRARY is not set (run it through ctest)");
  unsetenv("LEANRT_LOG");
  long long retained = mock_cuda_get("retained");
  lrt_host_api api;
  CHECK_STATUS(lrt_host_api_cuda(0, &api), LRT_OK);
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = 16;
  lrt_runtime_maker *m = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_OK);
  if (!m) return check_result();
  one_run(m, LRT_OK);

  child_result r = run_child_with_maker(child, m, &api, 60);
  CHECK(child_ok_and_silent(&r));

  /* The parent is unaffected. */
  one_run(m, LRT_OK);
  int32_t st = 1;
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_OK);
  CHECK(st == 0);
  lrt_runtime_maker_destroy(m);
  lrt_host_api_release(&api);
  CHECK(mock_cuda_get("retained") == retained);
  return check_result();
}
