/* leanrt as a drop-in for the reference runtime's host side
 * (hw-native-sys/simpler, host_build_graph at commit 6096d3271), through the
 * C API: the values the reference writes, from the goldens table the Rust
 * suite (tests/staging_reference.rs) reads too
 * (tests/staging_support/reference_goldens.inc), reached through the C
 * descriptor (lrt_claim_desc_init, flags, fanin count + pointer).
 *
 * - Segment offsets and ends for every window 4 .. 2^18: the reference's
 *   ring_segment_offsets (pto_shared_memory.h) rounds every segment, the
 *   completion flags included, up to 64 bytes.
 * - Every header field after begin_run: init_header_per_ring
 *   (shared/pto_shared_memory.cpp), with the layout pointers of
 *   setup_pointers_per_ring, and orchestrator_done = 1 in the shipped image
 *   (mark_done in pto_orchestrator.cpp runs before the host's copy).
 * - Every device-read slot field after a claim, for the four tasks of
 *   test_hbg_submit_poison.cpp: a root kernel task on AIV0, a dummy task
 *   depending on it (twice), a hidden allocation (pre-completed) and a plain
 *   dummy task (prepare_task / submit_task_common / alloc_tensors in
 *   pto_orchestrator.cpp).
 * - A non-NULL packed buffer and a pre-completed slot survive upload
 *   unchanged under every policy. */
#include <string.h>

#include "check.h"
#include "../hardening/common_device.h"

typedef struct golden_segments {
  uint64_t w, descriptors, payloads, slot_states, completion_flags, end;
} golden_segments;

/* The goldens table the Rust suite reads too. */
#define GOLDEN_SEGMENTS(w, d, p, s, f, e) {w##u, d##u, p##u, s##u, f##u, e##u},
#define GOLDEN_SLOT(...)
static const golden_segments GOLDEN[] = {
#include "../../tests/staging_support/reference_goldens.inc"
};
#undef GOLDEN_SEGMENTS
#undef GOLDEN_SLOT

static void check_segments(void) {
  for (size_t i = 0; i < sizeof GOLDEN / sizeof GOLDEN[0]; i++) {
    const golden_segments *g = &GOLDEN[i];
    lrt_sm_segments s;
    CHECK_STATUS(lrt_sm_ring_segment_offsets(g->w, &s), LRT_OK);
    CHECK_EQ_U64(s.header, 0);
    CHECK_EQ_U64(s.descriptors, g->descriptors);
    CHECK_EQ_U64(s.payloads, g->payloads);
    CHECK_EQ_U64(s.slot_states, g->slot_states);
    CHECK_EQ_U64(s.completion_flags, g->completion_flags);
    CHECK_EQ_U64(s.end, g->end);
  }
  /* The next window's image exceeds INT32_MAX bytes: refused, naming the
     largest window that fits. */
  lrt_sm_segments s;
  CHECK_STATUS(lrt_sm_ring_segment_offsets(2 * LRT_MAX_TASK_WINDOW, &s), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains_u64(LRT_MAX_TASK_WINDOW));
}

/* The header as init_header_per_ring leaves it on the host, for window w and
   heap heap, with the array pointers of the image at base. */
static void check_header(const lrt_sm_header *h, uint64_t w, uint64_t heap, const unsigned char *base,
                         const lrt_sm_segments *seg, int32_t current, int32_t done) {
  CHECK(h->current_task_index == current);
  CHECK(h->last_task_alive == 0);
  CHECK(h->completed_watermark == -1);
  CHECK_EQ_U64(h->task_window_size, w);
  CHECK(h->task_window_mask == (int32_t)(w - 1));
  CHECK_EQ_U64(h->heap_size, heap);
  CHECK_EQ_U64(h->task_descriptors_offset, 320);
  CHECK((const unsigned char *)h->task_descriptors == base + seg->descriptors);
  CHECK((const unsigned char *)h->task_payloads == base + seg->payloads);
  CHECK((const unsigned char *)h->slot_states == base + seg->slot_states);
  CHECK(h->completion_flags == base + seg->completion_flags);
  CHECK(h->orchestrator_done == done);
  CHECK_EQ_U64(h->total_size, seg->end);
  CHECK(h->orch_error_code == 0);
  CHECK(h->sched_error_bitmap == 0u);
  CHECK(h->sched_error_code == 0);
  CHECK(h->sched_error_thread == -1);
}

/* One device-read slot as the reference's submit path leaves it. */
typedef struct golden_slot {
  int32_t last_consumer_local_id, task_state;
  uint8_t active_mask, task_attrs, task_kind;
  int16_t total_required_subtasks, logical_block_num;
  int32_t fanin_count, fanin0;
  uint8_t completion_flag;
} golden_slot;

/* Slots 0..3 of the poison test's run, from the same table. */
#define GOLDEN_SEGMENTS(...)
#define GOLDEN_SLOT(c, st, mask, attrs, kind, req, blocks, nf, f0, flag) {c, st, mask, attrs, kind, req, blocks, nf, f0, flag},
static const golden_slot SLOTS[4] = {
#include "../../tests/staging_support/reference_goldens.inc"
};
#undef GOLDEN_SEGMENTS
#undef GOLDEN_SLOT

static void check_slot(const lrt_sm_header *h, int i, const golden_slot *g, const void *packed) {
  const lrt_task_descriptor *d = &h->task_descriptors[i];
  const lrt_task_payload *p = &h->task_payloads[i];
  const lrt_task_slot_state *s = &h->slot_states[i];
  CHECK_EQ_U64(d->task_id, (uint64_t)i);
  CHECK(d->packed_buffer_base == packed);
  CHECK(d->packed_buffer_end == (packed ? (const unsigned char *)packed + 4096 : NULL));
  CHECK(p->fanin_count == g->fanin_count);
  if (g->fanin_count > 0) CHECK(p->fanin_local_ids[0] == g->fanin0);
  for (int j = 0; j < 5; j++) CHECK(p->early_dispatch[j] == 0);
  for (int j = 0; j < 3; j++) CHECK(p->predicate[j] == 0);
  CHECK(s->last_consumer_local_id == g->last_consumer_local_id);
  CHECK(s->task_state == g->task_state);
  CHECK(s->payload == p && s->task == d);
  CHECK(s->wake_list_head == NULL && s->next_in_wake_list == NULL);
  CHECK(s->active_mask == g->active_mask);
  CHECK(s->task_attrs == g->task_attrs);
  CHECK(s->any_subtask_deferred == 0);
  CHECK(s->task_kind == g->task_kind);
  CHECK(s->completed_subtasks == 0);
  CHECK(s->total_required_subtasks == g->total_required_subtasks);
  CHECK(s->logical_block_num == g->logical_block_num);
  CHECK(s->next_block_idx == 0);
  CHECK(s->graph_node_index == -1);
  CHECK(s->graph_context == NULL);
  CHECK(h->completion_flags[i] == g->completion_flag);
}

/* Claims the poison test's four tasks over a poisoned mirror. */
static void claim_reference_run(lrt_runtime_maker *m, void *packed) {
  lrt_task_slot slot;
  lrt_claim_desc d;
  lrt_claim_desc_init(&d);
  CHECK(d.active_mask == LRT_SUBTASK_AIV0 && d.task_attrs == 0 && d.logical_block_num == 1);
  CHECK(d.flags == 0 && d.fanin_count == 0 && d.fanin_local_ids == NULL);
  CHECK(d.kernel_id[0] == -1 && d.kernel_id[1] == -1 && d.kernel_id[2] == -1);
  d.kernel_id[1] = 0;
  d.packed_buffer_base = packed;
  d.packed_buffer_end = (unsigned char *)packed + 4096;
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, &d, &slot), LRT_OK);
  CHECK(slot.index == 0);
  slot.payload->tensor_count = 1;
  slot.payload->scalar_count = 1;
  slot.payload->scalars[0] = 42;

  const int32_t deps[2] = {0, 0};
  lrt_claim_desc_init(&d);
  d.active_mask = 0;
  d.fanin_count = 2;
  d.fanin_local_ids = deps;
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, &d, &slot), LRT_OK);
  CHECK(slot.index == 1);

  lrt_claim_desc_init(&d);
  d.active_mask = 0;
  d.task_attrs = LRT_TASK_ATTR_EARLY_RESOLVE;
  d.flags = LRT_CLAIM_COMPLETED;
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, &d, &slot), LRT_OK);

  lrt_claim_desc_init(&d);
  d.active_mask = 0;
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, &d, &slot), LRT_OK);
  CHECK(slot.index == 3);
}

static void check_bad_claims(lrt_runtime_maker *m) {
  lrt_task_slot slot;
  memset(&slot, 0x5c, sizeof slot);
  lrt_claim_desc d;
  lrt_claim_desc_init(&d);
  const int32_t future = 9, self = 4, negative = -1;
  lrt_claim_desc bad = d;
  bad.logical_block_num = 0;
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, &bad, &slot), LRT_ERR_INVALID_ARGUMENT);
  bad = d;
  bad.active_mask = 7;
  bad.logical_block_num = 11000; /* 33000 subtasks > INT16_MAX */
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, &bad, &slot), LRT_ERR_INVALID_ARGUMENT);
  bad = d;
  bad.flags = 2;
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, &bad, &slot), LRT_ERR_INVALID_ARGUMENT);
  bad = d;
  bad.fanin_count = LRT_MAX_FANIN + 1;
  bad.fanin_local_ids = &future;
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, &bad, &slot), LRT_ERR_INVALID_ARGUMENT);
  bad = d;
  bad.fanin_count = 1;
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, &bad, &slot), LRT_ERR_INVALID_ARGUMENT); /* NULL ids */
  const int32_t *ids[3] = {&future, &self, &negative};
  for (int k = 0; k < 3; k++) {
    bad.fanin_local_ids = ids[k];
    CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, &bad, &slot), LRT_ERR_INVALID_ARGUMENT);
  }
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, NULL, &slot), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(m, &d, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_claim_slot_ex(NULL, &d, &slot), LRT_ERR_INVALID_ARGUMENT);
  lrt_claim_desc_init(NULL);
  /* Nothing was claimed: slot untouched, the index unchanged. */
  CHECK(slot.index == 0x5c5c5c5c);
}

static void run_policy(lrt_upload_policy policy, uint64_t heap) {
  test_device ctx;
  lrt_host_api api = test_device_init(&ctx);
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  CHECK_EQ_U64(cfg.heap_size, 0);
  cfg.task_window = 16;
  cfg.policy = policy;
  cfg.heap_size = heap;
  lrt_runtime_maker *m = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_OK);
  if (!m) return;
  lrt_sm_segments seg;
  CHECK_STATUS(lrt_runtime_maker_segments(m, &seg), LRT_OK);
  test_device_reset_copies(&ctx);
  uint64_t want_heap = heap ? heap : LRT_DEFAULT_HEAP_SIZE;
  void *packed = (void *)(uintptr_t)0x7f0000001000ull; /* a device address the host writes */

  for (int run = 0; run < 2; run++) {
    lrt_sm_header *h = NULL;
    CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
    /* Poison the per-slot segments: every device-read field must be written. */
    unsigned char *base = (unsigned char *)h;
    memset(base + seg.descriptors, DEV_POISON, (size_t)(seg.end - seg.descriptors));
    check_header(h, 16, want_heap, base, &seg, 0, 0);
    claim_reference_run(m, packed);
    check_bad_claims(m);
    check_header(h, 16, want_heap, base, &seg, 4, 0);
    for (int i = 0; i < 4; i++) check_slot(h, i, &SLOTS[i], i == 0 ? packed : NULL);

    lrt_upload_report r;
    CHECK_STATUS(lrt_runtime_maker_upload(m, &r), LRT_OK);
    CHECK(r.total_tasks == 4);
    /* The mirror keeps host addresses and what the host wrote. */
    check_header(h, 16, want_heap, base, &seg, 4, 0);
    const lrt_sm_header *dh = (const lrt_sm_header *)lrt_runtime_maker_device_image(m);
    lrt_sm_segments dseg = seg;
    if (policy == LRT_UPLOAD_COMPACT) CHECK_STATUS(lrt_sm_ring_segment_offsets(4, &dseg), LRT_OK);
    check_header(dh, 16, want_heap, (const unsigned char *)dh, &dseg, 4, 1);
    for (int i = 0; i < 4; i++) check_slot(dh, i, &SLOTS[i], i == 0 ? packed : NULL);
    int32_t st = 1;
    CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_OK);
    CHECK(st == 0);
  }
  lrt_runtime_maker_destroy(m);
  CHECK(test_device_live(&ctx) == 0);
}

int main(void) {
  check_segments();
  CHECK_EQ_U64(LRT_DEFAULT_HEAP_SIZE, 268435456u);
  const lrt_upload_policy policies[3] = {LRT_UPLOAD_FULL, LRT_UPLOAD_BOUNDED, LRT_UPLOAD_COMPACT};
  for (int p = 0; p < 3; p++) {
    run_policy(policies[p], 0);
    run_policy(policies[p], 1u << 20);
  }
  /* A heap size below the reference's minimum is refused. */
  test_device ctx;
  lrt_host_api api = test_device_init(&ctx);
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = 16;
  cfg.heap_size = 1023;
  lrt_runtime_maker *m = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  CHECK(m == NULL && ctx.calls[DEV_MALLOC] == 0);
  return check_result();
}
