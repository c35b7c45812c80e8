/* The reference's current image (v2) as C sees it: every size and offset
 * (header 256, payload 192 with region offsets @12/16/20, slot state with
 * payload/task offsets @8/12 and graph_context @48), the mirror table for
 * W = 4 ... 2^18 (W = 16384 in full), compact images, and a compact image
 * shipped by a maker in one framed copy whose every offset resolves, on the
 * device, to the records the claims wrote. */
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "check.h"
#include "../hardening/common_device.h"

#define OFF(T, f, v) _Static_assert(offsetof(T, f) == (v), #T "." #f)

_Static_assert(sizeof(lrt_v2_sm_header) == 256, "v2 header size");
_Static_assert(alignof(lrt_v2_sm_header) == 64, "v2 header align");
OFF(lrt_v2_sm_header, current_task_index, 0);
OFF(lrt_v2_sm_header, completed_watermark, 64);
OFF(lrt_v2_sm_header, task_window_size, 128);
OFF(lrt_v2_sm_header, task_window_mask, 136);
OFF(lrt_v2_sm_header, heap_size, 144);
OFF(lrt_v2_sm_header, task_descriptors_offset, 152);
OFF(lrt_v2_sm_header, task_descriptors, 160);
OFF(lrt_v2_sm_header, task_payloads, 168);
OFF(lrt_v2_sm_header, slot_states, 176);
OFF(lrt_v2_sm_header, completion_flags, 184);
OFF(lrt_v2_sm_header, orchestrator_done, 192);
OFF(lrt_v2_sm_header, total_size, 200);
OFF(lrt_v2_sm_header, orch_error_code, 208);
OFF(lrt_v2_sm_header, sched_error_bitmap, 212);
OFF(lrt_v2_sm_header, sched_error_code, 216);
OFF(lrt_v2_sm_header, sched_error_thread, 220);

_Static_assert(sizeof(lrt_v2_task_payload) == 192, "v2 payload size");
_Static_assert(alignof(lrt_v2_task_payload) == 64, "v2 payload align");
OFF(lrt_v2_task_payload, tensor_count, 0);
OFF(lrt_v2_task_payload, scalar_count, 4);
OFF(lrt_v2_task_payload, fanin_count, 8);
OFF(lrt_v2_task_payload, tensors, 12);
OFF(lrt_v2_task_payload, scalars, 16);
OFF(lrt_v2_task_payload, fanin, 20);
OFF(lrt_v2_task_payload, staged_core_mask, 64);
OFF(lrt_v2_task_payload, dispatch_fanin, 80);
OFF(lrt_v2_task_payload, early_sync_drain_state, 92);
OFF(lrt_v2_task_payload, predicate_addr, 128);
OFF(lrt_v2_task_payload, predicate_op, 145);
OFF(lrt_v2_task_payload, dump_arg_mask, 152);
OFF(lrt_v2_task_payload, dump_scalar_dtypes, 168);
_Static_assert(sizeof(((lrt_v2_task_payload *)0)->tensors) == 4, "int32 offset");

_Static_assert(sizeof(lrt_v2_task_slot_state) == 64, "v2 slot state size");
_Static_assert(alignof(lrt_v2_task_slot_state) == 64, "v2 slot state align");
OFF(lrt_v2_task_slot_state, last_consumer_local_id, 0);
OFF(lrt_v2_task_slot_state, task_state, 4);
OFF(lrt_v2_task_slot_state, payload, 8);
OFF(lrt_v2_task_slot_state, task, 12);
OFF(lrt_v2_task_slot_state, wake_list_head, 16);
OFF(lrt_v2_task_slot_state, next_in_wake_list, 24);
OFF(lrt_v2_task_slot_state, active_mask, 32);
OFF(lrt_v2_task_slot_state, task_kind, 35);
OFF(lrt_v2_task_slot_state, total_required_subtasks, 38);
OFF(lrt_v2_task_slot_state, logical_block_num, 40);
OFF(lrt_v2_task_slot_state, graph_node_index, 44);
OFF(lrt_v2_task_slot_state, graph_context, 48);
_Static_assert(sizeof(((lrt_v2_task_slot_state *)0)->payload) == 4, "int32 offset");

_Static_assert(sizeof(lrt_task_descriptor) == 40, "descriptor shared");
_Static_assert(sizeof(lrt_v2_segments) == 72, "v2 segments");
OFF(lrt_v2_segments, fanin_pool, 40);
OFF(lrt_v2_segments, tensor_pool, 48);
OFF(lrt_v2_segments, scalar_pool, 56);
OFF(lrt_v2_segments, end, 64);
_Static_assert(LRT_LAYOUT_V1 == 0 && LRT_LAYOUT_V2 == 1, "layouts");

#define A64(x) (((x) + 63) & ~(uint64_t)63)
#define W 64

/* The address a self-relative offset stored at `field` names (NULL: unbound). */
static const unsigned char *resolve(const void *field, int32_t delta) {
  return delta == 0 ? NULL : (const unsigned char *)field + delta;
}

static void check_tables(void) {
  lrt_v2_segments s;
  CHECK_STATUS(lrt_v2_ring_segment_offsets(16384, &s), LRT_OK);
  CHECK_EQ_U64(s.header, 0);
  CHECK_EQ_U64(s.descriptors, 256);
  CHECK_EQ_U64(s.payloads, 655616);
  CHECK_EQ_U64(s.slot_states, 3801344);
  CHECK_EQ_U64(s.completion_flags, 4849920);
  CHECK_EQ_U64(s.fanin_pool, 4866304);
  CHECK_EQ_U64(s.tensor_pool, 13254912);
  CHECK_EQ_U64(s.scalar_pool, 80363776);
  CHECK_EQ_U64(s.end, 82460928);
  /* Every window: the reference's formula, within INT32_MAX. */
  for (uint64_t w = 4; w <= (1u << 18); w <<= 1) {
    CHECK_STATUS(lrt_v2_ring_segment_offsets(w, &s), LRT_OK);
    CHECK_EQ_U64(s.payloads, 256 + A64(40 * w));
    CHECK_EQ_U64(s.slot_states, s.payloads + 192 * w);
    CHECK_EQ_U64(s.completion_flags, s.slot_states + 64 * w);
    CHECK_EQ_U64(s.fanin_pool, s.completion_flags + A64(w));
    CHECK_EQ_U64(s.tensor_pool, s.fanin_pool + 4 * 128 * w);
    CHECK_EQ_U64(s.scalar_pool, s.tensor_pool + 128 * 32 * w);
    CHECK_EQ_U64(s.end, s.scalar_pool + 8 * 16 * w);
    CHECK(s.end <= INT32_MAX);
  }
  const uint64_t bad[] = {0, 3, 5, 16383, 2 * LRT_MAX_TASK_WINDOW, (uint64_t)1 << 32, UINT64_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&s, 0x5c, sizeof s);
    CHECK_STATUS(lrt_v2_ring_segment_offsets(bad[i], &s), LRT_ERR_INVALID_ARGUMENT);
    CHECK(s.end == 0x5c5c5c5c5c5c5c5cull);
  }
  CHECK(error_contains("lrt_v2_ring_segment_offsets"));
  CHECK_STATUS(lrt_v2_ring_segment_offsets(16384, NULL), LRT_ERR_INVALID_ARGUMENT);

  /* Compact images: pitch max(n, 1), the pools as used. */
  CHECK_STATUS(lrt_v2_image_segments(0, 0, 0, 0, &s), LRT_OK);
  CHECK_EQ_U64(s.end, 640);
  CHECK_STATUS(lrt_v2_image_segments(1024, 16384, 2048, 8192, &s), LRT_OK);
  CHECK_EQ_U64(s.fanin_pool, 304384);
  CHECK_EQ_U64(s.tensor_pool, 369920);
  CHECK_EQ_U64(s.scalar_pool, 632064);
  CHECK_EQ_U64(s.end, 697600);
  for (uint64_t n = 1; n <= 4096; n = n * 3 + 1) {
    CHECK_STATUS(lrt_v2_image_segments(n, 16 * n, 2 * n, 8 * n, &s), LRT_OK);
    CHECK_EQ_U64(s.end, 256 + A64(40 * n) + 192 * n + 64 * n + A64(n) + 4 * 16 * n + 128 * 2 * n +
                            8 * 8 * n);
  }
  CHECK_STATUS(lrt_v2_image_segments(1, 129, 0, 0, &s), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_v2_image_segments(262145, 0, 0, 0, &s), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_v2_image_segments(1, 0, 0, 0, NULL), LRT_ERR_INVALID_ARGUMENT);
}

/* Tensor record k of task i: a recognisable 128-byte blob. */
static void record(unsigned char *r, int i, int k) {
  for (int b = 0; b < 128; b++) r[b] = (unsigned char)(i * 37 + k * 11 + b);
}

static void check_shipped_image(void) {
  test_device ctx;
  lrt_host_api api = test_device_init(&ctx);
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = W;
  cfg.layout = LRT_LAYOUT_V2;
  cfg.frame_before = 704;
  cfg.frame_after = 256;
  lrt_runtime_maker *m = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_OK);
  if (m == NULL) return;
  lrt_v2_sm_header *h = NULL;
  CHECK_STATUS(lrt_runtime_maker_v2_begin_run(m, &h), LRT_OK);

  /* kernel, dependent kernel, dummy, pre-completed, graph shell, kernel */
  enum { N = 6 };
  const uint8_t masks[N] = {2, 3, 0, 0, 0, 7};
  const int nt[N] = {2, 1, 0, 1, 0, 3};
  const int nsc[N] = {1, 3, 2, 0, 0, 16};
  const int32_t fan[N][3] = {{0}, {0}, {0, 1, 1}, {0}, {3, 1}, {2, 4}};
  const int nf[N] = {0, 1, 3, 0, 2, 2};
  const int distinct[N] = {0, 1, 2, 0, 2, 2};
  unsigned char recs[3][128];
  uint64_t scal[16];
  lrt_v2_task_slot slots[N];
  for (int i = 0; i < N; i++) {
    lrt_v2_claim_desc d;
    lrt_v2_claim_desc_init(&d);
    d.task.active_mask = masks[i];
    d.task.fanin_count = nf[i];
    d.task.fanin_local_ids = fan[i];
    d.task.kernel_id[0] = 100 + i;
    if (i == 3) d.task.flags = LRT_CLAIM_COMPLETED;
    if (i == 4) d.flags = LRT_V2_CLAIM_GRAPH_SHELL;
    for (int k = 0; k < nt[i]; k++) record(recs[k], i, k);
    for (int k = 0; k < nsc[i]; k++) scal[k] = 0x1000u * (uint64_t)i + (uint64_t)k;
    d.tensor_count = nt[i];
    d.tensors = recs;
    d.scalar_count = nsc[i];
    d.scalars = scal;
    CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slots[i]), LRT_OK);
    CHECK(slots[i].index == i);
  }
  /* The pools as the reference's cursors advance them. */
  uint64_t f = 0, t = 0, sc = 0;
  for (int i = 0; i < N; i++) {
    f += (uint64_t)(distinct[i] + 15) / 16 * 16;
    if (i != 4) t += (uint64_t)nt[i], sc += (uint64_t)(nsc[i] + 7) / 8 * 8;
  }
  lrt_v2_segments want, seg;
  CHECK_STATUS(lrt_v2_image_segments(N, f, t, sc, &want), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_v2_image_segments(m, &seg), LRT_OK);
  CHECK(memcmp(&seg, &want, sizeof seg) == 0);

  unsigned char before[704], after[100];
  memset(before, 0x11, sizeof before);
  memset(after, 0x22, sizeof after);
  lrt_upload_report r;
  test_device_reset_copies(&ctx);
  CHECK_STATUS(lrt_runtime_maker_v2_upload(m, before, sizeof before, after, sizeof after, &r), LRT_OK);
  /* One copy: [before | image | after], contiguous. */
  CHECK(ctx.copies == 1);
  CHECK_EQ_U64(r.copies, 1);
  CHECK_EQ_U64(r.bytes, 704 + want.end + 100);
  CHECK(r.total_tasks == N);
  const unsigned char *dev = (const unsigned char *)lrt_runtime_maker_device_image(m);
  CHECK(dev != NULL && ((uintptr_t)dev & 63) == 0);
  CHECK((const unsigned char *)ctx.live[0] + ctx.off[0] == dev - 704);
  CHECK(ctx.len[0] == 704 + want.end + 100);
  CHECK(memcmp(dev - 704, before, 704) == 0);
  CHECK(memcmp(dev + want.end, after, 100) == 0);

  const lrt_v2_sm_header *dh = (const lrt_v2_sm_header *)dev;
  CHECK(dh->task_descriptors == NULL && dh->task_payloads == NULL && dh->slot_states == NULL &&
        dh->completion_flags == NULL);
  CHECK(dh->current_task_index == N && dh->orchestrator_done == 1 && dh->completed_watermark == -1);
  CHECK_EQ_U64(dh->task_window_size, W);
  CHECK(dh->task_window_mask == W - 1);
  CHECK_EQ_U64(dh->task_descriptors_offset, 256);
  lrt_v2_segments mirror;
  CHECK_STATUS(lrt_v2_ring_segment_offsets(W, &mirror), LRT_OK);
  CHECK_EQ_U64(dh->total_size, mirror.end);

  for (int i = 0; i < N; i++) {
    const lrt_task_descriptor *d = (const lrt_task_descriptor *)(dev + want.descriptors) + i;
    const lrt_v2_task_payload *p = (const lrt_v2_task_payload *)(dev + want.payloads) + i;
    const lrt_v2_task_slot_state *s = (const lrt_v2_task_slot_state *)(dev + want.slot_states) + i;
    /* The slot state names its own payload and descriptor in the image. */
    CHECK(resolve(&s->payload, s->payload) == (const unsigned char *)p);
    CHECK(resolve(&s->task, s->task) == (const unsigned char *)d);
    CHECK_EQ_U64(d->task_id, (uint64_t)i);
    CHECK(d->kernel_id[0] == (i == 4 ? -1 : 100 + i));
    CHECK(p->fanin_count == distinct[i]);
    CHECK(p->tensor_count == (i == 4 ? 0 : nt[i]) && p->scalar_count == (i == 4 ? 0 : nsc[i]));
    CHECK(s->task_kind == (i == 4 ? LRT_TASK_KIND_GRAPH : masks[i] ? LRT_TASK_KIND_KERNEL : LRT_TASK_KIND_DUMMY));
    CHECK(s->task_state == (i == 3 ? LRT_TASK_COMPLETED : LRT_TASK_PENDING));
    CHECK(dev[want.completion_flags + (uint64_t)i] == (i == 3));
    CHECK(s->graph_node_index == -1 && s->graph_context == NULL);
    /* Regions resolve inside the image's pools, to what the claims wrote. */
    const unsigned char *tr = resolve(&p->tensors, p->tensors);
    const unsigned char *sr = resolve(&p->scalars, p->scalars);
    const unsigned char *fr = resolve(&p->fanin, p->fanin);
    CHECK(fr != NULL && fr >= dev + want.fanin_pool && fr <= dev + want.tensor_pool);
    if (i == 4) {
      CHECK(tr == NULL && sr == NULL); /* a graph shell's stay unbound */
    } else {
      CHECK(tr != NULL && tr >= dev + want.tensor_pool && tr <= dev + want.scalar_pool);
      CHECK(sr != NULL && sr >= dev + want.scalar_pool && sr <= dev + want.end);
      for (int k = 0; k < nt[i] && tr; k++) {
        unsigned char rec[128];
        record(rec, i, k);
        CHECK(memcmp(tr + 128 * k, rec, 128) == 0);
      }
      for (int k = 0; k < nsc[i] && sr; k++) {
        uint64_t v;
        memcpy(&v, sr + 8 * k, 8);
        CHECK_EQ_U64(v, 0x1000u * (uint64_t)i + (uint64_t)k);
      }
    }
    for (int k = 0, seen = 0; k < nf[i] && fr; k++) {
      int dup = 0;
      for (int j = 0; j < k; j++) dup |= fan[i][j] == fan[i][k];
      if (dup) continue;
      int32_t v;
      memcpy(&v, fr + 4 * seen++, 4);
      CHECK(v == fan[i][k]);
    }
  }
  /* The mirror keeps host form: its header still names the mirror. */
  CHECK(h->task_descriptors != NULL && h->orchestrator_done == 0);
  int32_t st = 1;
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_OK);
  CHECK(st == 0);
  lrt_runtime_maker_destroy(m);
  CHECK(test_device_live(&ctx) == 0 && ctx.violations == 0);
}

int main(void) {
  check_tables();
  check_shipped_image();
  return check_result();
}
