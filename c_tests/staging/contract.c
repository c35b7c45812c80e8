/* The init-on-write and copy contracts from C, on a counting host api whose
 * device memory starts as 0xAA:
 *  - the mirror's per-slot segments (and the device image) are poisoned
 *    before a run; after claim + writes + upload, every field the device
 *    reads for slots [0, N) holds what was written, on every run of a reused
 *    mirror with a different N each time (the 2nd and 10th included);
 *  - BOUNDED ships exactly 320 + 4969*N bytes in at most 4 non-empty copies,
 *    COMPACT one copy, FULL the whole image;
 *  - the content read back through the device header's pointers is the same
 *    under all three policies. */
#include <string.h>

#include "check.h"
#include "../hardening/common_device.h"

#define W 512
static const int ns[10] = {37, 5, 64, 1, 300, 0, 17, 250, 3, 128};

/* Task k of run r: empty, tensors + scalars, fanins, or everything. */
static void fill(lrt_task_slot *s, int r, int k) {
  int kind = k % 4;
  uint64_t seed = (uint64_t)r * 1000003u + (uint64_t)k;
  int nt = (kind == 1 || kind == 3) ? 1 + k % 32 : 0;
  int ns_ = (kind == 1 || kind == 3) ? 1 + k % 16 : 0;
  int nf = ((kind == 2 || kind == 3) && k > 0) ? 1 + (k < 127 ? k : 127) : 0;
  if (kind) {
    s->descriptor->kernel_id[0] = k;
    s->descriptor->kernel_id[1] = 7;
  }
  s->payload->tensor_count = nt;
  s->payload->scalar_count = ns_;
  s->payload->fanin_count = nf;
  for (int t = 0; t < nt; t++)
    for (int w = 0; w < 16; w++) s->payload->tensors[t][w] = seed ^ ((uint64_t)t << 8) ^ (uint64_t)w;
  for (int j = 0; j < ns_; j++) s->payload->scalars[j] = seed * 31u + (uint64_t)j;
  for (int j = 0; j < nf; j++) s->payload->fanin_local_ids[j] = j % k;
}

static int poisoned(const void *p, size_t n) { /* a 4-byte run of poison */
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i + 4 <= n; i++)
    if (b[i] == DEV_POISON && b[i + 1] == DEV_POISON && b[i + 2] == DEV_POISON &&
        b[i + 3] == DEV_POISON)
      return 1;
  return 0;
}

/* Checks every device-read field of slot i against what claim + fill wrote. */
static void check_slot(const lrt_sm_header *dh, int r, int i) {
  const lrt_task_descriptor *d = &dh->task_descriptors[i];
  const lrt_task_payload *p = &dh->task_payloads[i];
  const lrt_task_slot_state *s = &dh->slot_states[i];
  lrt_task_slot want_slot;
  lrt_task_descriptor wd;
  static lrt_task_payload wp;
  memset(&wd, 0, sizeof wd);
  memset(&wp, 0, sizeof wp);
  wd.kernel_id[0] = wd.kernel_id[1] = wd.kernel_id[2] = -1;
  want_slot.descriptor = &wd;
  want_slot.payload = &wp;
  fill(&want_slot, r, i);
  CHECK_EQ_U64(d->task_id, (uint64_t)i);
  CHECK(memcmp(d->kernel_id, wd.kernel_id, sizeof wd.kernel_id) == 0);
  CHECK(d->packed_buffer_base == NULL && d->packed_buffer_end == NULL);
  CHECK(p->tensor_count == wp.tensor_count && p->scalar_count == wp.scalar_count &&
        p->fanin_count == wp.fanin_count);
  if (p->tensor_count == wp.tensor_count)
    CHECK(memcmp(p->tensors, wp.tensors, sizeof p->tensors[0] * (size_t)wp.tensor_count) == 0);
  if (p->scalar_count == wp.scalar_count)
    CHECK(memcmp(p->scalars, wp.scalars, sizeof p->scalars[0] * (size_t)wp.scalar_count) == 0);
  if (p->fanin_count == wp.fanin_count)
    CHECK(memcmp(p->fanin_local_ids, wp.fanin_local_ids, sizeof(int32_t) * (size_t)wp.fanin_count) == 0);
  CHECK(!poisoned(p->early_dispatch, sizeof p->early_dispatch));
  CHECK(!poisoned(p->predicate, sizeof p->predicate));
  for (int j = 0; j < 5; j++) CHECK(p->early_dispatch[j] == 0);
  for (int j = 0; j < 3; j++) CHECK(p->predicate[j] == 0);
  CHECK(!poisoned(s, sizeof *s));
  CHECK(s->payload == p && s->task == d); /* device addresses */
  CHECK(s->wake_list_head == NULL && s->next_in_wake_list == NULL && s->graph_context == NULL);
  /* claim_slot: a root kernel task on one AIV core, as the reference submits it. */
  CHECK(s->last_consumer_local_id == i && s->task_state == LRT_TASK_PENDING && s->graph_node_index == -1);
  CHECK(s->active_mask == LRT_SUBTASK_AIV0 && s->task_attrs == 0 && s->any_subtask_deferred == 0 &&
        s->task_kind == LRT_TASK_KIND_KERNEL);
  CHECK(s->completed_subtasks == 0 && s->total_required_subtasks == 1);
  CHECK(s->logical_block_num == 1 && s->next_block_idx == 0);
  CHECK(dh->completion_flags[i] == 0);
}

/* A digest of what the device sees for slots [0, n), layout-independent. */
static uint64_t digest(const lrt_sm_header *dh, int n) {
  uint64_t h = 1469598103934665603ull;
#define MIX(ptr, len)                                                       \
  do {                                                                      \
    const unsigned char *b_ = (const unsigned char *)(ptr);                 \
    for (size_t j_ = 0; j_ < (size_t)(len); j_++) h = (h ^ b_[j_]) * 1099511628211ull; \
  } while (0)
  for (int i = 0; i < n; i++) {
    const lrt_task_payload *p = &dh->task_payloads[i];
    lrt_task_slot_state s = dh->slot_states[i];
    s.payload = NULL;
    s.task = NULL;
    MIX(&dh->task_descriptors[i], sizeof(lrt_task_descriptor));
    MIX(p, 12);
    MIX(p->fanin_local_ids, 4 * (size_t)p->fanin_count);
    MIX(p->early_dispatch, 64);
    MIX(p->tensors, 128 * (size_t)p->tensor_count);
    MIX(p->scalars, 8 * (size_t)p->scalar_count);
    MIX(&s, sizeof s);
    MIX(&dh->completion_flags[i], 1);
  }
#undef MIX
  return h;
}

int main(void) {
  lrt_sm_segments seg;
  CHECK_STATUS(lrt_sm_ring_segment_offsets(W, &seg), LRT_OK);
  uint64_t digests[4][10];
  for (int policy = 0; policy <= 3; policy++) {
    test_device ctx;
    lrt_host_api api = test_device_init(&ctx);
    lrt_maker_config c;
    lrt_maker_config_init(&c);
    c.task_window = W;
    c.policy = (lrt_upload_policy)policy;
    lrt_runtime_maker *m = NULL;
    CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_OK);
    if (!m) return check_result();
    unsigned char *dev = (unsigned char *)lrt_runtime_maker_device_image(m);
    for (int r = 1; r <= 10; r++) {
      int n = ns[r - 1];
      lrt_sm_header *h = NULL;
      lrt_task_slot slot;
      lrt_upload_report rep;
      CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
      memset((unsigned char *)h + seg.descriptors, DEV_POISON, seg.end - seg.descriptors);
      memset(dev + seg.descriptors, DEV_POISON, seg.end - seg.descriptors);
      for (int k = 0; k < n; k++) {
        CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
        fill(&slot, r, k);
      }
      test_device_reset_copies(&ctx);
      CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_OK);
      CHECK(rep.total_tasks == n);
      CHECK(rep.copies == (uint32_t)ctx.copies && rep.bytes == ctx.bytes_to);
      for (int j = 0; j < ctx.copies && j < DEV_MAX_COPIES; j++) CHECK(ctx.len[j] > 0);
      const lrt_sm_header *dh = (const lrt_sm_header *)dev;
      /* AUTO ships as BOUNDED or as a gathered COMPACT, and says which. */
      int shape = policy == LRT_UPLOAD_AUTO ? (int)rep.path : policy;
      CHECK(policy == LRT_UPLOAD_AUTO ? shape != LRT_UPLOAD_FULL : (int)rep.path == policy);
      /* COMPACT copies an image over 192 KiB straight to its offsets. */
      int direct = policy == LRT_UPLOAD_COMPACT && n != W && 320u + 4969u * (uint64_t)n > 192u * 1024u;
      if (shape == LRT_UPLOAD_BOUNDED) {
        CHECK_EQ_U64(rep.bytes, 320u + 4969u * (uint64_t)n);
        CHECK(rep.copies == (n ? 4u : 1u));
      } else if (shape == LRT_UPLOAD_COMPACT && direct) {
        CHECK(rep.copies == 4);
        CHECK_EQ_U64(rep.bytes, 320u + 4969u * (uint64_t)n);
        CHECK_EQ_U64(ctx.off[0], 0);
        CHECK_EQ_U64(ctx.off[1], (uint64_t)((unsigned char *)dh->task_payloads - dev));
        CHECK_EQ_U64(ctx.off[2], (uint64_t)((unsigned char *)dh->slot_states - dev));
        CHECK_EQ_U64(ctx.off[3], (uint64_t)(dh->completion_flags - dev));
        CHECK(dh->total_size < seg.end);
      } else if (shape == LRT_UPLOAD_COMPACT) {
        CHECK(rep.copies == 1);
        CHECK_EQ_U64(ctx.off[0], 0);
        CHECK_EQ_U64(rep.bytes, dh->total_size);
        CHECK(rep.bytes >= 320u + 4969u * (uint64_t)n && rep.bytes < 320u + 4969u * (uint64_t)n + 256);
        CHECK((unsigned char *)dh->task_descriptors == dev + 320);
      } else {
        CHECK(rep.copies == 1);
        CHECK_EQ_U64(rep.bytes, seg.end);
      }
      CHECK(dh->current_task_index == n);
      CHECK_EQ_U64(dh->task_window_size, W);
      CHECK_EQ_U64(dh->task_window_mask, W - 1);
      CHECK(h->task_descriptors == (lrt_task_descriptor *)((unsigned char *)h + seg.descriptors));
      for (int i = 0; i < n; i++) check_slot(dh, r, i);
      digests[policy][r - 1] = digest(dh, n);
    }
    lrt_runtime_maker_destroy(m);
    CHECK(test_device_live(&ctx) == 0);
  }
  for (int r = 0; r < 10; r++) {
    CHECK_EQ_U64(digests[0][r], digests[1][r]);
    CHECK_EQ_U64(digests[1][r], digests[2][r]);
    CHECK_EQ_U64(digests[1][r], digests[3][r]);
  }
  return check_result();
}
