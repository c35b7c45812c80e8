/* lrt_host_api_cuda on a real CUDA device (or on whatever
 * LEANRT_CUDA_LIBRARY names; ctest also runs it over the mock as
 * cuda.gpu_on_mock). Skips with "skipped: no CUDA device" without one.
 * Round trips, fault paths (invalid ordinal, allocation larger than the
 * device, bad copies), and the maker over CUDA under every policy, pinned
 * and not, checked by reading the device image back. */
#include "cuda_common.h"

int main(void) {
  lrt_host_api api;
  lrt_status st = lrt_host_api_cuda(0, &api);
  if (st == LRT_ERR_UNAVAILABLE) {
    char why[LRT_LAST_ERROR_BYTES];
    lrt_last_error(why, sizeof why);
    printf("(%s)\n", why);
    SKIP("no CUDA device");
  }
  CHECK_STATUS(st, LRT_OK);
  if (st != LRT_OK) return check_result();
  const char *lib = getenv("LEANRT_CUDA_LIBRARY");
  printf("CUDA device 0 through %s\n", lib != NULL && *lib ? lib : "libcuda.so.1");

  check_round_trip(&api, (size_t)64 << 20);
  check_round_trip(&api, 4100);

  /* An ordinal no machine has. */
  lrt_host_api other;
  CHECK_STATUS(lrt_host_api_cuda(4096, &other), LRT_ERR_UNAVAILABLE);
  CHECK(error_contains("no CUDA device 4096 (found "));
  /* An allocation larger than any device (1 PiB). */
  CHECK(api.ops->device_malloc(api.ctx, (size_t)1 << 50) == NULL);
  CHECK(error_contains("CUDA_ERROR_OUT_OF_MEMORY"));
  /* A copy to an address outside any allocation. */
  void *dev = api.ops->device_malloc(api.ctx, 4096);
  CHECK(dev != NULL);
  unsigned char buf[256] = {1};
  CHECK(api.ops->copy_to_device(api.ctx, (void *)((uintptr_t)dev + ((uintptr_t)1 << 40)), buf, sizeof buf) != 0);
  CHECK(error_contains("CUDA_ERROR"));
  /* The api still works after the faults. */
  CHECK(round_trip_ok(&api, dev, 4096, 3));
  api.ops->device_free(api.ctx, dev);

  const lrt_upload_policy policies[4] = {LRT_UPLOAD_FULL, LRT_UPLOAD_BOUNDED, LRT_UPLOAD_COMPACT,
                                         LRT_UPLOAD_AUTO};
  for (int p = 0; p < 4; p++) {
    check_maker(&api, 1024, policies[p], 0, 64);
    check_maker(&api, 1024, policies[p], LRT_MAKER_PIN_MIRROR, 1024);
  }
  lrt_host_api_release(&api);
  CHECK(api.ops == NULL);
  return check_result();
}
