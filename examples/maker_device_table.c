/* The runtime maker on a device of your own: a runtime that already has its
 * device functions (the reference runtime's HostApiOps: malloc, free, copy
 * to, copy from) hands them to leanrt as an lrt_host_api_ops table.
 *
 *   cc -std=c11 maker_device_table.c $(pkg-config --cflags --libs leanrt) -o maker_device_table
 *   ./maker_device_table
 *
 * The "device" here is host memory that counts what it is sent, so the
 * example runs anywhere and can show what an upload ships and how a
 * device-side error comes back through read_status. It checks its own
 * results and exits non-zero when one is wrong. */
#include <leanrt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The device's state, passed to every callback as `ctx`. */
typedef struct {
  int allocations; /* live device allocations */
  int copies_to;   /* copy_to_device calls */
  uint64_t bytes;  /* bytes sent to the device */
} toy_device;

/* The four callbacks. leanrt may call them from whichever thread uses the
 * maker, so a real device's must be thread-safe; failures are reported by
 * returning NULL (malloc) or non-zero (copies), and leanrt turns them into
 * LRT_ERR_NO_MEMORY / LRT_ERR_DEVICE with a message. */
static void *toy_malloc(void *ctx, size_t size) {
  toy_device *d = (toy_device *)ctx;
  void *p = calloc(1, size);
  if (p) d->allocations++;
  return p;
}

static void toy_free(void *ctx, void *dev_ptr) {
  toy_device *d = (toy_device *)ctx;
  if (dev_ptr) d->allocations--;
  free(dev_ptr);
}

static int32_t toy_copy_to(void *ctx, void *dev_dst, const void *host_src, size_t size) {
  toy_device *d = (toy_device *)ctx;
  d->copies_to++;
  d->bytes += size;
  memcpy(dev_dst, host_src, size);
  return 0;
}

static int32_t toy_copy_from(void *ctx, void *host_dst, const void *dev_src, size_t size) {
  (void)ctx;
  memcpy(host_dst, dev_src, size);
  return 0;
}

/* The table must outlive every maker created on it: a static is simplest. */
static const lrt_host_api_ops toy_ops = {toy_malloc, toy_free, toy_copy_to, toy_copy_from};

static void fail(const char *what, lrt_status status) {
  char msg[256];
  lrt_last_error(msg, sizeof msg);
  fprintf(stderr, "%s: %s (%s)\n", what, lrt_status_str(status), msg);
  exit(1);
}

int main(void) {
  toy_device dev = {0, 0, 0};
  lrt_host_api api = {&dev, &toy_ops};

  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = 4096;
  lrt_runtime_maker *maker = NULL;
  lrt_status st = lrt_runtime_maker_create(&cfg, &api, &maker);
  if (st != LRT_OK) fail("lrt_runtime_maker_create", st);
  printf("device image allocated once: %d allocation(s)\n", dev.allocations);

  /* One run of 16 tasks. */
  lrt_sm_header *sm = NULL;
  if ((st = lrt_runtime_maker_begin_run(maker, &sm)) != LRT_OK) fail("begin_run", st);
  for (int t = 0; t < 16; t++) {
    lrt_task_slot slot;
    if ((st = lrt_runtime_maker_claim_slot(maker, &slot)) != LRT_OK) fail("claim_slot", st);
    slot.descriptor->kernel_id[0] = t;
  }
  lrt_upload_report rep;
  if ((st = lrt_runtime_maker_upload(maker, &rep)) != LRT_OK) fail("upload", st);
  printf("upload: %llu bytes in %u copies (the device saw %d copies, %llu bytes)\n",
         (unsigned long long)rep.bytes, rep.copies, dev.copies_to, (unsigned long long)dev.bytes);
  if ((uint64_t)dev.copies_to != rep.copies || dev.bytes != rep.bytes) return 1;

  /* The device image's header sits at offset 0 and now says what the
   * device is to run: 16 tasks, the orchestration finished. */
  lrt_sm_header *device_sm = (lrt_sm_header *)lrt_runtime_maker_device_image(maker);
  printf("device header: %d tasks, orchestrator_done %d\n", device_sm->current_task_index,
         device_sm->orchestrator_done);
  if (device_sm->current_task_index != 16 || device_sm->orchestrator_done != 1) return 1;

  /* The device ran the tasks; suppose its scheduler reported error 7 in the
   * header. read_status copies the header back and gives -7. */
  device_sm->sched_error_code = 7;
  int32_t status = 0;
  if ((st = lrt_runtime_maker_read_status(maker, &status)) != LRT_OK) fail("read_status", st);
  printf("status after a device-side error: %d\n", status);
  if (status != -7) return 1;

  /* Destroying the maker frees the device image through the table. */
  lrt_runtime_maker_destroy(maker);
  printf("after destroy: %d allocation(s)\n", dev.allocations);
  if (dev.allocations != 0) return 1;
  printf("maker_device_table example ok\n");
  return 0;
}
