/* Bad input through the v2 calls of the staging C ABI: NULLs, unknown
 * layouts and flags, out-of-range counts and frames, calls on the wrong
 * layout or out of order, a full pool, a latched orchestrator error, a
 * payload region broken through the returned pointers, negative core counts
 * and a sync_start claim with more blocks than the run's cores; and the
 * producer lists the reference takes (repeats, ids of no slot of this run). Each gets its status
 * and a message naming the call, writes no out-parameter, copies nothing to
 * the device and leaves the run as it was; afterwards the same maker
 * uploads correctly. */
#include <string.h>

#include "check.h"
#include "../hardening/common_device.h"

#define W 16

static int names(const char *fn) {
  char buf[LRT_LAST_ERROR_BYTES];
  size_t n = lrt_last_error(buf, sizeof buf);
  return n > strlen(fn) && strncmp(buf, fn, strlen(fn)) == 0;
}

/* The run's compact image as the maker reports it. */
static lrt_v2_segments image_of(lrt_runtime_maker *m) {
  lrt_v2_segments s;
  memset(&s, 0, sizeof s);
  CHECK_STATUS(lrt_runtime_maker_v2_image_segments(m, &s), LRT_OK);
  return s;
}

int main(void) {
  lrt_v2_segments segs, fill;
  memset(&fill, 0xAB, sizeof fill);

  /* ---- the layout functions ------------------------------------------ */
  segs = fill;
  CHECK_STATUS(lrt_v2_image_segments(0, 1, 0, 0, &segs), LRT_ERR_INVALID_ARGUMENT);
  CHECK(names("lrt_v2_image_segments") && memcmp(&segs, &fill, sizeof segs) == 0);
  CHECK_STATUS(lrt_v2_image_segments(2, 0, 65, 0, &segs), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_v2_image_segments(2, 0, 0, 33, &segs), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_v2_image_segments(UINT64_MAX, 0, 0, 0, &segs), LRT_ERR_INVALID_ARGUMENT);
  CHECK(memcmp(&segs, &fill, sizeof segs) == 0);
  CHECK_STATUS(lrt_v2_ring_segment_offsets(2 * LRT_MAX_TASK_WINDOW, &segs), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains_u64(LRT_MAX_TASK_WINDOW));

  /* ---- create: layout, frames, pools --------------------------------- */
  test_device dev;
  lrt_host_api api = test_device_init(&dev);
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  CHECK(cfg.layout == LRT_LAYOUT_V1 && cfg.frame_before == 0 && cfg.frame_after == 0);
  CHECK(cfg.v2_pool_fanin_ids == 0 && cfg.v2_pool_tensors == 0 && cfg.v2_pool_scalars == 0);
  cfg.task_window = W;
  lrt_runtime_maker *m = (lrt_runtime_maker *)&fill;
  const lrt_runtime_maker *keep = m;
  int32_t raw = 7;
  memcpy(&cfg.layout, &raw, sizeof raw);
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  CHECK(names("lrt_runtime_maker_create") && error_contains("layout"));
  cfg.layout = LRT_LAYOUT_V2;
  cfg.frame_before = (1ull << 30) + 1;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  cfg.frame_before = 64;
  cfg.v2_pool_tensors = W * 32 + 1; /* above the reference's */
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  cfg.policy = LRT_UPLOAD_FULL;
  cfg.v2_pool_tensors = 0;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  CHECK(m == keep && dev.allocs == 0);
  cfg.policy = LRT_UPLOAD_BOUNDED;
  cfg.frame_after = 32;
  cfg.v2_pool_tensors = 4; /* a pool that fills */
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_OK);

  /* ---- the wrong layout's calls, and out of order --------------------- */
  lrt_sm_header *h1 = NULL;
  lrt_task_slot s1;
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h1), LRT_ERR_INVALID_ARGUMENT);
  CHECK(names("lrt_runtime_maker_begin_run") && error_contains("layout v2") && h1 == NULL);
  CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &s1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_ERR_INVALID_ARGUMENT);
  lrt_v2_claim_desc d;
  lrt_v2_claim_desc_init(&d);
  CHECK(d.flags == 0 && d.tensor_count == 0 && d.tensors == NULL && d.scalar_count == 0 &&
        d.task.active_mask == LRT_SUBTASK_AIV0);
  lrt_v2_task_slot slot, slot_fill;
  memset(&slot_fill, 0xCD, sizeof slot_fill);
  slot = slot_fill;
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_ERR_STATE);
  CHECK_STATUS(lrt_runtime_maker_v2_upload(m, NULL, 0, NULL, 0, NULL), LRT_ERR_STATE);
  int32_t st = 5;
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_ERR_STATE);
  CHECK(st == 5);

  lrt_v2_sm_header *h = NULL;
  CHECK_STATUS(lrt_runtime_maker_v2_begin_run(NULL, &h), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_v2_begin_run(m, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_v2_begin_run(m, &h), LRT_OK);
  CHECK(h != NULL && h->current_task_index == 0 && h->task_window_size == W);

  /* ---- bad claims: nothing written ------------------------------------ */
  unsigned char recs[3][128];
  memset(recs, 0x3c, sizeof recs);
  uint64_t sc[17] = {0};
  int32_t producers[2] = {0, 1};
  lrt_v2_segments before = image_of(m);
  struct {
    int flags, tensor_count, scalar_count, fanins, null_tensors, null_scalars;
  } bad[] = {
      {2, 0, 0, 0, 0, 0},   /* unknown flag */
      {0, 33, 0, 0, 1, 0},  /* tensors over the cap */
      {0, -1, 0, 0, 0, 0},  /* negative count */
      {0, 0, 17, 0, 0, 0},  /* scalars over the cap */
      {1, 1, 0, 0, 0, 0},   /* a graph shell with tensors */
      {1, 0, 1, 0, 0, 0},   /* a graph shell with scalars */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    lrt_v2_claim_desc_init(&d);
    d.flags = (uint32_t)bad[i].flags;
    d.tensor_count = bad[i].tensor_count;
    d.tensors = bad[i].null_tensors ? NULL : (const void *)recs;
    d.scalar_count = bad[i].scalar_count;
    d.scalars = sc;
    d.task.fanin_count = bad[i].fanins;
    d.task.fanin_local_ids = producers;
    slot = slot_fill;
    CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_ERR_INVALID_ARGUMENT);
    CHECK(names("lrt_runtime_maker_v2_claim_slot"));
    CHECK(memcmp(&slot, &slot_fill, sizeof slot) == 0);
    lrt_v2_segments now = image_of(m);
    CHECK(memcmp(&now, &before, sizeof now) == 0 && h->current_task_index == 0);
  }
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, NULL, &slot), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, NULL), LRT_ERR_INVALID_ARGUMENT);

  /* ---- the run's cores and a sync_start claim (the reference's
     submit_task: block_num > the shape's cores is refused) ------------ */
  CHECK_STATUS(lrt_runtime_maker_v2_set_core_counts(NULL, 4, 8), LRT_ERR_INVALID_ARGUMENT);
  CHECK(names("lrt_runtime_maker_v2_set_core_counts"));
  CHECK_STATUS(lrt_runtime_maker_v2_set_core_counts(m, -1, 8), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_v2_set_core_counts(m, 4, -8), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_v2_set_core_counts(m, 4, 8), LRT_OK);
  lrt_v2_claim_desc_init(&d);
  d.task.task_attrs = LRT_TASK_ATTR_SYNC_START;
  d.task.active_mask = LRT_SUBTASK_AIC;
  d.task.logical_block_num = 5; /* 4 clusters */
  slot = slot_fill;
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_ERR_INVALID_ARGUMENT);
  CHECK(names("lrt_runtime_maker_v2_claim_slot") && error_contains("sync_start"));
  d.task.active_mask = LRT_SUBTASK_AIV0;
  d.task.logical_block_num = 9; /* 8 AIV cores */
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_ERR_INVALID_ARGUMENT);
  CHECK(memcmp(&slot, &slot_fill, sizeof slot) == 0 && h->current_task_index == 0);
  lrt_v2_segments now0 = image_of(m);
  CHECK(memcmp(&now0, &before, sizeof now0) == 0);
  CHECK_STATUS(lrt_runtime_maker_v2_set_core_counts(m, 0, 0), LRT_OK); /* unknown: unchecked */

  /* ---- a full pool: 4 tensor records, 3 taken, 2 more refused -------- */
  lrt_v2_claim_desc_init(&d);
  d.tensor_count = 3;
  d.tensors = recs;
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_OK);
  before = image_of(m);
  d.tensor_count = 2;
  slot = slot_fill;
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_ERR_OUT_OF_RANGE);
  CHECK(error_contains("tensor pool is full") && memcmp(&slot, &slot_fill, sizeof slot) == 0);
  lrt_v2_segments now = image_of(m);
  CHECK(memcmp(&now, &before, sizeof now) == 0 && h->current_task_index == 1);
  d.tensor_count = 1; /* what still fits */
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_OK);

  /* ---- bad uploads: nothing copied ------------------------------------ */
  unsigned char frame[128];
  memset(frame, 0x77, sizeof frame);
  test_device_reset_copies(&dev);
  lrt_upload_report rep, rep_fill;
  memset(&rep_fill, 0xEE, sizeof rep_fill);
  rep = rep_fill;
  CHECK_STATUS(lrt_runtime_maker_v2_upload(m, frame, 65, NULL, 0, &rep), LRT_ERR_INVALID_ARGUMENT);
  CHECK(names("lrt_runtime_maker_v2_upload"));
  CHECK_STATUS(lrt_runtime_maker_v2_upload(m, NULL, 0, frame, 33, &rep), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_v2_upload(m, NULL, 8, NULL, 0, &rep), LRT_ERR_INVALID_ARGUMENT);
  /* A region broken through the returned pointers. */
  int32_t saved = slot.payload->tensors;
  slot.payload->tensors += 4;
  CHECK_STATUS(lrt_runtime_maker_v2_upload(m, NULL, 0, NULL, 0, &rep), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("slot 1"));
  slot.payload->tensors = saved;
  /* A task index out of range. */
  h->current_task_index = W + 1;
  CHECK_STATUS(lrt_runtime_maker_v2_upload(m, NULL, 0, NULL, 0, &rep), LRT_ERR_OUT_OF_RANGE);
  h->current_task_index = 2;
  /* A latched orchestrator error: claims and the upload are refused. */
  h->orch_error_code = 9;
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_ERR_STATE);
  CHECK_STATUS(lrt_runtime_maker_v2_upload(m, frame, 64, frame, 32, &rep), LRT_ERR_STATE);
  CHECK(error_contains("latched") && h->current_task_index == 2);
  CHECK(dev.copies == 0 && dev.calls[DEV_TO] == 0 && memcmp(&rep, &rep_fill, sizeof rep) == 0);
  h->orch_error_code = 0;

  /* ---- the same maker then ships correctly ---------------------------- */
  CHECK_STATUS(lrt_runtime_maker_v2_upload(m, frame, 64, frame, 32, &rep), LRT_OK);
  lrt_v2_segments img = image_of(m);
  CHECK(dev.copies == 1 && rep.copies == 1 && rep.bytes == 64 + img.end + 32 && rep.total_tasks == 2);
  CHECK(rep.path == LRT_UPLOAD_COMPACT);
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_OK);
  CHECK(st == 0);
  /* The v1 segments call still answers for a v2 maker's v1 layout fields;
     the v2 calls refuse a v1 maker. */
  lrt_runtime_maker *m1 = NULL;
  lrt_maker_config_init(&cfg);
  cfg.task_window = W;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m1), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_v2_begin_run(m1, &h), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("layout v1"));
  CHECK_STATUS(lrt_runtime_maker_v2_image_segments(m1, &segs), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_v2_upload(m1, NULL, 0, NULL, 0, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_v2_set_pool_use(m1, 0, 0, 0), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_v2_set_core_counts(m1, 4, 8), LRT_ERR_INVALID_ARGUMENT);
  lrt_v2_frame vf;
  memset(&vf, 0, sizeof vf);
  CHECK_STATUS(lrt_runtime_maker_v2_upload_frame(m1, &vf, NULL), LRT_ERR_INVALID_ARGUMENT);
  lrt_runtime_maker_destroy(m1);
  lrt_runtime_maker_destroy(m);
  CHECK(test_device_live(&dev) == 0 && dev.violations == 0);

  /* ---- a host-written run shipped where the host says ----------------- */
  /* A v2 maker without a region of its own (NULL, 0); a v1 maker may not. */
  lrt_maker_config_init(&cfg);
  cfg.task_window = W;
  CHECK_STATUS(lrt_runtime_maker_create_borrowed(&cfg, &api, NULL, 0, &m1), LRT_ERR_INVALID_ARGUMENT);
  cfg.layout = LRT_LAYOUT_V2;
  cfg.policy = LRT_UPLOAD_AUTO;
  cfg.frame_before = 64;
  CHECK_STATUS(lrt_runtime_maker_create_borrowed(&cfg, &api, NULL, 0, &m), LRT_OK);
  CHECK(dev.allocs == 0 || test_device_live(&dev) == 0);
  CHECK(lrt_runtime_maker_device_image(m) == NULL);
  CHECK_STATUS(lrt_runtime_maker_v2_set_pool_use(NULL, 0, 0, 0), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_v2_set_pool_use(m, 0, 0, 0), LRT_ERR_STATE);
  CHECK(names("lrt_runtime_maker_v2_set_pool_use"));
  CHECK_STATUS(lrt_runtime_maker_v2_begin_run(m, &h), LRT_OK);
  /* The host writes one task without arguments into the mirror itself. */
  CHECK(test_v2_host_task(h, W));
  unsigned char *mirror = (unsigned char *)h;
  uint64_t over = (uint64_t)W * 32 + 1;
  CHECK_STATUS(lrt_runtime_maker_v2_set_pool_use(m, 0, over, 0), LRT_ERR_OUT_OF_RANGE);
  CHECK(error_contains("tensor"));
  CHECK_STATUS(lrt_runtime_maker_v2_set_pool_use(m, 0, 0, 0), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_ERR_STATE);
  /* No region of its own: the maker's upload has nowhere to go. */
  CHECK_STATUS(lrt_runtime_maker_v2_upload(m, NULL, 0, NULL, 0, NULL), LRT_ERR_STATE);
  CHECK(error_contains("no device region"));
  img = image_of(m);
  void *region = api.ops->device_malloc(api.ctx, 192 + img.end + 32);
  CHECK(region != NULL);
  /* The image 64-aligned, with room for the frame before below it. */
  unsigned char *at = (unsigned char *)(((uintptr_t)region + 64 + 63) & ~(uintptr_t)63);
  unsigned char hdr[64], tail[32];
  memset(hdr, 0x5A, sizeof hdr);
  memset(tail, 0xA5, sizeof tail);
  test_device_reset_copies(&dev);
  lrt_v2_frame good = {at, img.end + 32, hdr, sizeof hdr, tail, sizeof tail};
  rep.copies = 77;
  vf = good;
  CHECK_STATUS(lrt_runtime_maker_v2_upload_frame(NULL, &vf, &rep), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_v2_upload_frame(m, NULL, &rep), LRT_ERR_INVALID_ARGUMENT);
  CHECK(names("lrt_runtime_maker_v2_upload_frame"));
  vf.device_image = NULL;
  CHECK_STATUS(lrt_runtime_maker_v2_upload_frame(m, &vf, &rep), LRT_ERR_INVALID_ARGUMENT);
  vf = good;
  vf.device_image = at + 1;
  CHECK_STATUS(lrt_runtime_maker_v2_upload_frame(m, &vf, &rep), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("64"));
  vf = good;
  vf.before = NULL;
  CHECK_STATUS(lrt_runtime_maker_v2_upload_frame(m, &vf, &rep), LRT_ERR_INVALID_ARGUMENT);
  vf = good;
  vf.device_room = img.end + 31;
  CHECK_STATUS(lrt_runtime_maker_v2_upload_frame(m, &vf, &rep), LRT_ERR_OUT_OF_RANGE);
  CHECK(error_contains("needs"));
  CHECK(dev.copies == 0 && rep.copies == 77);
  /* The refusals left the run open: it ships. */
  vf = good;
  CHECK_STATUS(lrt_runtime_maker_v2_upload_frame(m, &vf, &rep), LRT_OK);
  CHECK(rep.total_tasks == 1 && rep.bytes >= sizeof hdr + sizeof tail + 256);
  CHECK(rep.path == LRT_UPLOAD_COMPACT || rep.path == LRT_UPLOAD_BOUNDED);
  const unsigned char *dimg = at;
  const lrt_v2_sm_header *dh = (const lrt_v2_sm_header *)dimg;
  CHECK(dh->current_task_index == 1 && dh->orchestrator_done == 1 && dh->task_payloads == NULL);
  CHECK(memcmp(dimg - sizeof hdr, hdr, sizeof hdr) == 0 && memcmp(dimg + img.end, tail, sizeof tail) == 0);
  CHECK(h->task_payloads != NULL && h->orchestrator_done == 0); /* the mirror's header is back */
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_OK);
  CHECK(st == 0);
  /* A host-written run is not claimed into: the next run is written the same way. */
  CHECK_STATUS(lrt_runtime_maker_v2_begin_run(m, &h), LRT_OK);
  CHECK((unsigned char *)h == mirror);
  lrt_runtime_maker_destroy(m);
  api.ops->device_free(api.ctx, region);
  CHECK(test_device_live(&dev) == 0 && dev.violations == 0);

  /* ---- producer lists as the reference's append_fanin_or_fail takes
     them: repeats dropped (the cap of 128 is on distinct producers, not
     the list), ids of no slot of this run dropped ---------------------- */
  lrt_maker_config_init(&cfg);
  cfg.task_window = 256;
  cfg.layout = LRT_LAYOUT_V2;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_v2_begin_run(m, &h), LRT_OK);
  lrt_v2_claim_desc_init(&d);
  for (int i = 0; i < 130; i++) CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_OK);
  int32_t ids[260];
  for (int i = 0; i < 130; i++) ids[i] = i % 100; /* 130 ids, 100 distinct */
  d.task.fanin_local_ids = ids;
  d.task.fanin_count = 130;
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_OK);
  CHECK(slot.payload->fanin_count == 100 && slot.fanin[99] == 99);
  int32_t odd[5] = {-1, 131, 200, 3, 3}; /* self, later, negative: no producer */
  d.task.fanin_local_ids = odd;
  d.task.fanin_count = 5;
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_OK);
  CHECK(slot.payload->fanin_count == 1 && slot.fanin[0] == 3);
  for (int i = 0; i < 260; i++) ids[i] = i % 129; /* 129 distinct: refused */
  d.task.fanin_local_ids = ids;
  d.task.fanin_count = 260;
  slot = slot_fill;
  CHECK_STATUS(lrt_runtime_maker_v2_claim_slot(m, &d, &slot), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("128") && memcmp(&slot, &slot_fill, sizeof slot) == 0 && h->current_task_index == 132);
  lrt_runtime_maker_destroy(m);
  CHECK(test_device_live(&dev) == 0 && dev.violations == 0);
  return check_result();
}
