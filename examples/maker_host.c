/* The runtime maker on leanrt's host backend: each run begins, claims task
 * slots and fills them, uploads only what the device reads, and reads the
 * run's status back.
 *
 *   cc -std=c11 maker_host.c $(pkg-config --cflags --libs leanrt) -o maker_host && ./maker_host
 *
 * The host backend's "device" is host memory, so this runs anywhere; with a
 * GPU, lrt_host_api_cuda(0, &api) in place of lrt_host_api_host(&api) is the
 * only change. It checks its own results and exits non-zero when one is
 * wrong. */
#include <leanrt.h>
#include <stdio.h>
#include <stdlib.h>

static void fail(const char *what, lrt_status status) {
  char msg[256];
  lrt_last_error(msg, sizeof msg);
  fprintf(stderr, "%s: %s (%s)\n", what, lrt_status_str(status), msg);
  exit(1);
}

static const char *path_name(lrt_upload_policy p) {
  switch (p) {
    case LRT_UPLOAD_FULL: return "full";
    case LRT_UPLOAD_BOUNDED: return "bounded";
    case LRT_UPLOAD_COMPACT: return "compact";
    default: return "auto";
  }
}

int main(void) {
  /* 1. A device: leanrt's host backend (an lrt_host_api is a context and a
   *    table of four callbacks; maker_device_table.c brings its own). */
  lrt_host_api api;
  lrt_status st = lrt_host_api_host(&api);
  if (st != LRT_OK) fail("lrt_host_api_host", st);

  /* 2. A maker for a window of 1024 task slots (0 = PTO2_RING_TASK_WINDOW
   *    from the environment, else 16384). The default policy is
   *    LRT_UPLOAD_BOUNDED: the header and the live slots only. Creating it
   *    allocates the device image once; the host mirror is touched only
   *    where a run writes. */
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = 1024;
  lrt_runtime_maker *maker = NULL;
  if ((st = lrt_runtime_maker_create(&cfg, &api, &maker)) != LRT_OK)
    fail("lrt_runtime_maker_create", st);

  for (int run = 0; run < 3; run++) {
    /* 3. begin_run zeroes the header and gives the mirror's header. */
    lrt_sm_header *sm = NULL;
    if ((st = lrt_runtime_maker_begin_run(maker, &sm)) != LRT_OK) fail("begin_run", st);

    /* 4. Claim slots: claim_slot writes what the device reads for a root
     *    kernel task on one AIV core and gives the slot's host addresses;
     *    the task's own content goes into its descriptor and payload. */
    int tasks = 8 * (run + 1);
    for (int t = 0; t < tasks; t++) {
      lrt_task_slot slot;
      if ((st = lrt_runtime_maker_claim_slot(maker, &slot)) != LRT_OK) fail("claim_slot", st);
      slot.descriptor->kernel_id[0] = 100 + t; /* which kernel this task runs */
    }

    /* 5. A task that depends on the first two (claim_slot_ex takes the
     *    reference runtime's task description: kind, cores, fanins). */
    lrt_claim_desc desc;
    lrt_claim_desc_init(&desc);
    const int32_t producers[2] = {0, 1};
    desc.fanin_count = 2;
    desc.fanin_local_ids = producers;
    lrt_task_slot joined;
    if ((st = lrt_runtime_maker_claim_slot_ex(maker, &desc, &joined)) != LRT_OK)
      fail("claim_slot_ex", st);
    if (joined.payload->fanin_count != 2 || sm->current_task_index != tasks + 1) {
      fprintf(stderr, "claim_slot_ex did not write the fanins\n");
      return 1;
    }

    /* 6. Upload: checks every live slot, then ships the header and slots
     *    [0, N) only; the report says what it cost. */
    lrt_upload_report rep;
    if ((st = lrt_runtime_maker_upload(maker, &rep)) != LRT_OK) fail("upload", st);
    printf("run %d: %d tasks, %llu bytes in %u copies (%s)\n", run, rep.total_tasks,
           (unsigned long long)rep.bytes, rep.copies, path_name(rep.path));
    if (rep.total_tasks != tasks + 1 || rep.copies == 0) return 1;

    /* 7. After the device ran the tasks: the run's status (0, or the
     *    negated error code the device wrote into the header). Nothing runs
     *    on the host backend, so it is 0. */
    int32_t status = -1;
    if ((st = lrt_runtime_maker_read_status(maker, &status)) != LRT_OK) fail("read_status", st);
    printf("run %d: status %d\n", run, status);
    if (status != 0) return 1;
  }

  /* A call out of order is refused and changes nothing: a second maker
   * that never began a run cannot upload. */
  lrt_runtime_maker *idle = NULL;
  if ((st = lrt_runtime_maker_create(&cfg, &api, &idle)) != LRT_OK) fail("create", st);
  st = lrt_runtime_maker_upload(idle, NULL);
  char msg[256];
  lrt_last_error(msg, sizeof msg);
  printf("upload before begin_run -> %s: %s\n", lrt_status_str(st), msg);
  if (st != LRT_ERR_STATE) return 1;

  /* 8. Makers first, then the api they were created on. */
  lrt_runtime_maker_destroy(idle);
  lrt_runtime_maker_destroy(maker);
  lrt_host_api_release(&api);
  printf("maker_host example ok\n");
  return 0;
}
