/* Swap test for the maker: a host program written against the old path
 * (the stand-in) gets the same device-visible results from leanrt. */
#include <stdio.h>
#include <string.h>

#include "leanrt.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* What the device sees for task i, as a digest (pointers as indices). */
static uint64_t device_task(const lrt_sm_header *dh, int i) {
  const lrt_task_descriptor *d = &dh->task_descriptors[i];
  const lrt_task_payload *p = &dh->task_payloads[i];
  const lrt_task_slot_state *s = &dh->slot_states[i];
  uint64_t h = 1469598103934665603ull;
  h = fnv(h, &d->task_id, 8);
  h = fnv(h, d->kernel_id, 12);
  h = fnv(h, p, 12);
  h = fnv(h, p->fanin_local_ids, 4 * (size_t)p->fanin_count);
  h = fnv(h, p->tensors, 128 * (size_t)p->tensor_count);
  h = fnv(h, p->scalars, 8 * (size_t)p->scalar_count);
  long pi = (long)(s->payload - dh->task_payloads), ti = (long)(s->task - dh->task_descriptors);
  h = fnv(h, &pi, sizeof pi);
  h = fnv(h, &ti, sizeof ti);
  h = fnv(h, &s->last_consumer_local_id, 4);
  h = fnv(h, &s->task_state, 4);
  h = fnv(h, &s->active_mask, 1);
  h = fnv(h, &s->task_attrs, 1);
  h = fnv(h, &s->task_kind, 1);
  h = fnv(h, &s->completed_subtasks, 2);
  h = fnv(h, &s->total_required_subtasks, 2);
  h = fnv(h, &s->logical_block_num, 2);
  h = fnv(h, &s->graph_node_index, 4);
  h = fnv(h, &dh->completion_flags[i], 1);
  return h;
}

static void run_policy(lrt_upload_policy policy) {
  lrt_host_api api;
  lrt_maker_config cfg;
  lrt_runtime_maker *m = NULL;
  lrt_maker_config_init(&cfg);
  cfg.task_window = 64;
  cfg.policy = policy;
  printf("host_api: %d\n", (int)lrt_host_api_host(&api));
  printf("create: %d\n", (int)lrt_runtime_maker_create(&cfg, &api, &m));
  if (!m) return;
  lrt_upload_report rep;
  printf("upload before begin_run: %d\n", (int)lrt_runtime_maker_upload(m, &rep));
  const int ns[3] = {5, 9, 0};
  for (int r = 0; r < 3; r++) {
    lrt_sm_header *h = NULL;
    lrt_task_slot slot;
    printf("begin_run: %d\n", (int)lrt_runtime_maker_begin_run(m, &h));
    for (int k = 0; k < ns[r]; k++) {
      lrt_runtime_maker_claim_slot(m, &slot);
      slot.descriptor->kernel_id[0] = k + r;
      slot.payload->tensor_count = k % 3;
      for (int t = 0; t < k % 3; t++)
        for (int w = 0; w < 16; w++) slot.payload->tensors[t][w] = (uint64_t)(r * 1000 + k * 16 + w);
      slot.payload->scalar_count = 1;
      slot.payload->scalars[0] = (uint64_t)(k * k);
      slot.payload->fanin_count = k > 0 ? 1 : 0;
      slot.payload->fanin_local_ids[0] = k - 1;
    }
    printf("upload: %d\n", (int)lrt_runtime_maker_upload(m, &rep));
    printf("total_tasks: %d\n", rep.total_tasks);
    if (policy == LRT_UPLOAD_FULL) printf("full copies %u bytes %llu\n", rep.copies, (unsigned long long)rep.bytes);
    const lrt_sm_header *dh = (const lrt_sm_header *)lrt_runtime_maker_device_image(m);
    printf("device current_task_index %d window %llu\n", dh->current_task_index,
           (unsigned long long)dh->task_window_size);
    printf("device header: alive %d watermark %d mask %d heap %llu offset %llu done %d errors %d %u %d %d\n",
           dh->last_task_alive, dh->completed_watermark, dh->task_window_mask, (unsigned long long)dh->heap_size,
           (unsigned long long)dh->task_descriptors_offset, dh->orchestrator_done, dh->orch_error_code,
           dh->sched_error_bitmap, dh->sched_error_code, dh->sched_error_thread);
    for (int i = 0; i < ns[r]; i++) printf("task %d: %016llx\n", i, (unsigned long long)device_task(dh, i));
    int32_t st = 1;
    int rs = (int)lrt_runtime_maker_read_status(m, &st);
    printf("read_status: %d -> %d\n", rs, st);
    printf("host pointers restored: %d\n", h->task_descriptors == (lrt_task_descriptor *)((char *)h + 320));
  }
  lrt_sm_header *h = NULL;
  lrt_task_slot slot;
  lrt_runtime_maker_begin_run(m, &h);
  h->current_task_index = 65;
  printf("corrupted index upload: %d\n", (int)lrt_runtime_maker_upload(m, &rep));
  h->current_task_index = 64;
  printf("claim past window: %d\n", (int)lrt_runtime_maker_claim_slot(m, &slot));
  lrt_runtime_maker_destroy(m);
  lrt_host_api_release(&api);
}

int main(void) {
  printf("served-by: %s\n", lrt_version());
  lrt_sm_segments s;
  printf("segments(16384): %d", (int)lrt_sm_ring_segment_offsets(16384, &s));
  printf(" %llu %llu %llu %llu %llu\n", (unsigned long long)s.descriptors, (unsigned long long)s.payloads,
         (unsigned long long)s.slot_states, (unsigned long long)s.completion_flags, (unsigned long long)s.end);
  printf("segments(3): %d\n", (int)lrt_sm_ring_segment_offsets(3, &s));
  for (uint64_t w = 4; w <= 64; w <<= 1) {
    printf("segments(%llu): %d", (unsigned long long)w, (int)lrt_sm_ring_segment_offsets(w, &s));
    printf(" end %llu\n", (unsigned long long)s.end);
  }
  printf("create(NULL): %d\n", (int)lrt_runtime_maker_create(NULL, NULL, NULL));
  run_policy(LRT_UPLOAD_FULL);
  run_policy(LRT_UPLOAD_BOUNDED);
  run_policy(LRT_UPLOAD_COMPACT);
  lrt_runtime_maker_destroy(NULL);
  return 0;
}
