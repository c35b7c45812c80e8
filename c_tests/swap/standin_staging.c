/* Plain-C stand-in for the maker: what the old path did. Every run
 * allocates and zeroes the whole host image, and upload relocates and ships
 * the whole image (whatever the policy). */
#include <stdlib.h>
#include <string.h>

#include "leanrt.h"

void standin_set_error(const char *msg);

struct lrt_runtime_maker {
  lrt_host_api api;
  uint64_t w;
  uint64_t heap;
  lrt_sm_segments seg;
  unsigned char *mirror;
  unsigned char *dev;
  int open, uploaded;
};

static void *sa_malloc(void *ctx, size_t n) {
  void *p = NULL;
  (void)ctx;
  return posix_memalign(&p, 64, n ? n : 1) == 0 ? p : NULL;
}
static void sa_free(void *ctx, void *p) {
  (void)ctx;
  free(p);
}
static int sa_copy(void *ctx, void *dst, const void *src, size_t n) {
  (void)ctx;
  memmove(dst, src, n);
  return 0;
}
static int sa_copy_from(void *ctx, void *dst, const void *src, size_t n) {
  (void)ctx;
  memmove(dst, src, n);
  return 0;
}
static const lrt_host_api_ops sa_ops = {sa_malloc, sa_free, sa_copy, sa_copy_from};

static lrt_status fail(lrt_status s, const char *msg) {
  standin_set_error(msg);
  return s;
}

lrt_status lrt_host_api_host(lrt_host_api *out) {
  if (!out) return fail(LRT_ERR_INVALID_ARGUMENT, "lrt_host_api_host: `out` is NULL");
  out->ctx = NULL;
  out->ops = &sa_ops;
  return LRT_OK;
}

void lrt_host_api_release(lrt_host_api *api) {
  if (api) {
    api->ctx = NULL;
    api->ops = NULL;
  }
}

static uint64_t up64(uint64_t x) { return (x + 63u) & ~(uint64_t)63u; }

lrt_status lrt_sm_ring_segment_offsets(uint64_t w, lrt_sm_segments *out) {
  if (!out) return fail(LRT_ERR_INVALID_ARGUMENT, "lrt_sm_ring_segment_offsets: `out` is NULL");
  if (w < 4 || w > INT32_MAX || (w & (w - 1)) != 0)
    return fail(LRT_ERR_INVALID_ARGUMENT, "lrt_sm_ring_segment_offsets: bad window");
  lrt_sm_segments s;
  s.header = 0;
  s.descriptors = up64(sizeof(lrt_sm_header));
  s.payloads = s.descriptors + up64(w * sizeof(lrt_task_descriptor));
  s.slot_states = s.payloads + up64(w * sizeof(lrt_task_payload));
  s.completion_flags = s.slot_states + up64(w * sizeof(lrt_task_slot_state));
  s.end = s.completion_flags + up64(w);
  if (s.end > INT32_MAX) return fail(LRT_ERR_INVALID_ARGUMENT, "lrt_sm_ring_segment_offsets: image too large");
  *out = s;
  return LRT_OK;
}

void lrt_maker_config_init(lrt_maker_config *cfg) {
  if (!cfg) return;
  cfg->task_window = 0;
  cfg->policy = LRT_UPLOAD_BOUNDED;
  cfg->flags = 0;
  cfg->heap_size = 0;
}

lrt_status lrt_runtime_maker_create(const lrt_maker_config *cfg, const lrt_host_api *api,
                                    lrt_runtime_maker **out) {
  if (!cfg || !api || !out || !api->ops) return fail(LRT_ERR_INVALID_ARGUMENT, "create: NULL");
  uint64_t w = cfg->task_window;
  if (w == 0) {
    const char *env = getenv("PTO2_RING_TASK_WINDOW");
    w = env ? strtoull(env, NULL, 10) : LRT_DEFAULT_TASK_WINDOW;
  }
  lrt_sm_segments seg;
  if (lrt_sm_ring_segment_offsets(w, &seg) != LRT_OK) return LRT_ERR_INVALID_ARGUMENT;
  lrt_runtime_maker *m = (lrt_runtime_maker *)calloc(1, sizeof *m);
  if (!m) return fail(LRT_ERR_NO_MEMORY, "create: out of memory");
  m->api = *api;
  m->w = w;
  m->heap = cfg->heap_size ? cfg->heap_size : 268435456u;
  m->seg = seg;
  m->dev = (unsigned char *)api->ops->device_malloc(api->ctx, seg.end);
  if (!m->dev) {
    free(m);
    return fail(LRT_ERR_NO_MEMORY, "create: device_malloc failed");
  }
  *out = m;
  return LRT_OK;
}

static void stamp(lrt_sm_header *h, unsigned char *base, const lrt_runtime_maker *m) {
  h->task_window_size = m->w;
  h->task_window_mask = (int32_t)(m->w - 1);
  h->task_descriptors_offset = m->seg.descriptors;
  h->task_descriptors = (lrt_task_descriptor *)(base + m->seg.descriptors);
  h->task_payloads = (lrt_task_payload *)(base + m->seg.payloads);
  h->slot_states = (lrt_task_slot_state *)(base + m->seg.slot_states);
  h->completion_flags = base + m->seg.completion_flags;
  h->total_size = m->seg.end;
}

lrt_status lrt_runtime_maker_begin_run(lrt_runtime_maker *m, lrt_sm_header **host_sm) {
  if (!m || !host_sm) return fail(LRT_ERR_INVALID_ARGUMENT, "begin_run: NULL");
  free(m->mirror); /* the old path: a new, zeroed image every run */
  m->mirror = NULL;
  if (posix_memalign((void **)&m->mirror, 64, m->seg.end) != 0) return fail(LRT_ERR_NO_MEMORY, "begin_run");
  memset(m->mirror, 0, m->seg.end);
  lrt_sm_header *h = (lrt_sm_header *)m->mirror;
  stamp(h, m->mirror, m);
  /* What the old path's header init wrote besides the layout. */
  h->completed_watermark = -1;
  h->heap_size = m->heap;
  h->sched_error_thread = -1;
  m->open = 1;
  *host_sm = h;
  return LRT_OK;
}

lrt_status lrt_runtime_maker_claim_slot(lrt_runtime_maker *m, lrt_task_slot *out) {
  if (!m || !out) return fail(LRT_ERR_INVALID_ARGUMENT, "claim_slot: NULL");
  if (!m->open) return fail(LRT_ERR_STATE, "claim_slot before begin_run");
  lrt_sm_header *h = (lrt_sm_header *)m->mirror;
  int32_t i = h->current_task_index;
  if (i < 0 || (uint64_t)i >= m->w) return fail(LRT_ERR_OUT_OF_RANGE, "claim_slot: window full");
  lrt_task_descriptor *d = &h->task_descriptors[i];
  lrt_task_payload *p = &h->task_payloads[i];
  lrt_task_slot_state *s = &h->slot_states[i];
  d->task_id = (uint64_t)i;
  d->kernel_id[0] = d->kernel_id[1] = d->kernel_id[2] = -1;
  /* The old submit path's values for a root kernel task on one AIV core. */
  s->last_consumer_local_id = i;
  s->task_state = 0;
  s->active_mask = 2;
  s->task_kind = 0;
  s->total_required_subtasks = 1;
  s->graph_node_index = -1;
  s->logical_block_num = 1;
  s->payload = p;
  s->task = d;
  h->current_task_index = i + 1;
  out->index = i;
  out->descriptor = d;
  out->payload = p;
  out->slot_state = s;
  return LRT_OK;
}

lrt_status lrt_runtime_maker_upload(lrt_runtime_maker *m, lrt_upload_report *report) {
  if (!m) return fail(LRT_ERR_INVALID_ARGUMENT, "upload: NULL");
  if (!m->open) return fail(LRT_ERR_STATE, "upload before begin_run");
  lrt_sm_header *h = (lrt_sm_header *)m->mirror;
  int32_t n = h->current_task_index;
  if (n < 0 || (uint64_t)n > m->w) return fail(LRT_ERR_OUT_OF_RANGE, "upload: bad total_tasks");
  long delta = (long)(m->dev - m->mirror);
  for (int32_t i = 0; i < n; i++) {
    lrt_task_slot_state *s = &h->slot_states[i];
    if (s->payload) s->payload = (lrt_task_payload *)((unsigned char *)s->payload + delta);
    if (s->task) s->task = (lrt_task_descriptor *)((unsigned char *)s->task + delta);
  }
  stamp(h, m->dev, m);
  h->orchestrator_done = 1; /* the orchestration is over when the image ships */
  int rc = m->api.ops->copy_to_device(m->api.ctx, m->dev, m->mirror, m->seg.end);
  h->orchestrator_done = 0;
  stamp(h, m->mirror, m);
  for (int32_t i = 0; i < n; i++) {
    lrt_task_slot_state *s = &h->slot_states[i];
    if (s->payload) s->payload = (lrt_task_payload *)((unsigned char *)s->payload - delta);
    if (s->task) s->task = (lrt_task_descriptor *)((unsigned char *)s->task - delta);
  }
  if (rc != 0) return fail(LRT_ERR_DEVICE, "upload: copy_to_device failed");
  m->uploaded = 1;
  if (report) {
    memset(report, 0, sizeof *report);
    report->total_tasks = n;
    report->copies = 1;
    report->bytes = m->seg.end;
  }
  return LRT_OK;
}

lrt_status lrt_runtime_maker_read_status(lrt_runtime_maker *m, int32_t *status) {
  if (!m || !status) return fail(LRT_ERR_INVALID_ARGUMENT, "read_status: NULL");
  if (!m->uploaded) return fail(LRT_ERR_STATE, "read_status before upload");
  lrt_sm_header h;
  if (m->api.ops->copy_from_device(m->api.ctx, &h, m->dev, sizeof h) != 0)
    return fail(LRT_ERR_DEVICE, "read_status: copy failed");
  *status = h.orch_error_code ? -h.orch_error_code : -h.sched_error_code;
  return LRT_OK;
}

lrt_status lrt_runtime_maker_segments(const lrt_runtime_maker *m, lrt_sm_segments *out) {
  if (!m || !out) return fail(LRT_ERR_INVALID_ARGUMENT, "segments: NULL");
  *out = m->seg;
  return LRT_OK;
}

void *lrt_runtime_maker_device_image(const lrt_runtime_maker *m) { return m ? m->dev : NULL; }

void lrt_runtime_maker_destroy(lrt_runtime_maker *m) {
  if (!m) return;
  m->api.ops->device_free(m->api.ctx, m->dev);
  free(m->mirror);
  free(m);
}
