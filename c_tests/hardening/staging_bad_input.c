/* Bad input through the staging C ABI (the one staging bad-input suite):
 * every entry point gets NULLs, out-of-range numbers, invalid enum values,
 * unknown flags, calls out of order, an incomplete device table, a device
 * that cannot allocate or copy, a corrupted task index and corrupted slot
 * pointers. Each gets its status and a message, writes no out-parameter,
 * copies nothing to the device, allocates nothing it keeps and leaves the
 * mirror as it was; afterwards the same maker runs correctly. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "common_device.h"

#define W 64

static void mark(void) {
  /* A fresh, known message so that each check sees the message of its call. */
  lrt_host_api_host(NULL);
}

static const unsigned char *mem(const void *p) { return (const unsigned char *)p; }

int main(void) {
  lrt_sm_segments segs, fill;
  memset(&fill, 0xAB, sizeof fill);

  /* ---- lrt_sm_ring_segment_offsets -------------------------------------- */
  const uint64_t bad_windows[] = {0,          1,          2,          3,          5,          6,         100,
                                 16383,      16385,      2 * LRT_MAX_TASK_WINDOW, 1ull << 30, 1ull << 31, 1ull << 32, 1ull << 40,
                                 UINT64_MAX};
  for (size_t i = 0; i < sizeof bad_windows / sizeof bad_windows[0]; i++) {
    segs = fill;
    mark();
    CHECK_STATUS(lrt_sm_ring_segment_offsets(bad_windows[i], &segs), LRT_ERR_INVALID_ARGUMENT);
    CHECK(memcmp(&segs, &fill, sizeof segs) == 0);
    CHECK(error_contains("lrt_sm_ring_segment_offsets: "));
  }
  CHECK_STATUS(lrt_sm_ring_segment_offsets(W, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_sm_ring_segment_offsets(W, &segs), LRT_OK);
  const lrt_sm_segments want = segs;

  /* ---- lrt_maker_config_init / lrt_runtime_maker_create ----------------- */
  mark();
  lrt_maker_config_init(NULL); /* ignored, with a message */
  CHECK(error_contains("lrt_maker_config_init: "));
  lrt_maker_config cfg;
  memset(&cfg, 0x7b, sizeof cfg); /* every member is overwritten */
  lrt_maker_config_init(&cfg);
  CHECK(cfg.task_window == 0 && cfg.policy == LRT_UPLOAD_BOUNDED && cfg.flags == 0);
  CHECK(cfg.heap_size == 0);

  test_device dev;
  memset(&dev, 0, sizeof dev);
  lrt_host_api api = test_device_api(&dev);
  lrt_runtime_maker *const sentinel = (lrt_runtime_maker *)(uintptr_t)0x5a5a;
  lrt_runtime_maker *m = sentinel;
  cfg.task_window = W;

  CHECK_STATUS(lrt_runtime_maker_create(NULL, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, NULL, &m), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK(m == sentinel);
  const uint64_t bad_create_windows[] = {3, 5, 6, 48, 1000, 16385, 2 * LRT_MAX_TASK_WINDOW, 1u << 20, (uint64_t)1 << 31, UINT64_MAX};
  for (size_t i = 0; i < sizeof bad_create_windows / sizeof bad_create_windows[0]; i++) {
    lrt_maker_config c = cfg;
    c.task_window = bad_create_windows[i];
    CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  }
  lrt_maker_config bad = cfg;
  bad.policy = (lrt_upload_policy)4;
  CHECK_STATUS(lrt_runtime_maker_create(&bad, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  bad.policy = (lrt_upload_policy)-1;
  CHECK_STATUS(lrt_runtime_maker_create(&bad, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  bad = cfg;
  bad.flags = 0x80;
  CHECK_STATUS(lrt_runtime_maker_create(&bad, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  bad.flags = 4; /* the first unknown flag */
  CHECK_STATUS(lrt_runtime_maker_create(&bad, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  lrt_host_api no_ops = {&dev, NULL};
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &no_ops, &m), LRT_ERR_INVALID_ARGUMENT);
  lrt_host_api_ops holes = test_device_ops;
  holes.copy_from_device = NULL;
  lrt_host_api holey = {&dev, &holes};
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, &holey, &m), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("lrt_runtime_maker_create: "));
  CHECK(m == sentinel);
  CHECK_EQ_U64(dev.calls[DEV_MALLOC], 0); /* refused before allocating */
  /* device_malloc returning NULL: LRT_ERR_NO_MEMORY, nothing leaked. */
  dev.fail_always[DEV_MALLOC] = 1;
  for (int p = 0; p <= 2; p++) {
    lrt_maker_config c = cfg;
    c.policy = (lrt_upload_policy)p;
    mark();
    CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_ERR_NO_MEMORY);
    CHECK(error_contains("lrt_runtime_maker_create: "));
    CHECK(m == sentinel);
  }
  CHECK(dev.calls[DEV_MALLOC] == 3 && dev.frees == 0);
  CHECK(test_device_live(&dev) == 0 && dev.violations == 0);
  memset(&dev, 0, sizeof dev);

  /* An invalid environment window is ignored (warning); a valid one is used. */
  setenv("PTO2_RING_TASK_WINDOW", "12345x", 1);
  lrt_maker_config envcfg;
  lrt_maker_config_init(&envcfg);
  CHECK_STATUS(lrt_runtime_maker_create(&envcfg, &api, &m), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_segments(m, &segs), LRT_OK);
  CHECK_EQ_U64(segs.end, 81412416); /* the default window, LRT_DEFAULT_TASK_WINDOW */
  lrt_runtime_maker_destroy(m);
  setenv("PTO2_RING_TASK_WINDOW", "64", 1);
  CHECK_STATUS(lrt_runtime_maker_create(&envcfg, &api, &m), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_segments(m, &segs), LRT_OK);
  CHECK(memcmp(&segs, &want, sizeof segs) == 0);
  lrt_runtime_maker_destroy(m);
  unsetenv("PTO2_RING_TASK_WINDOW");
  CHECK(test_device_live(&dev) == 0 && dev.allocs == 2 && dev.frees == 2);

  /* ---- a maker in every state, with bad calls --------------------------- */
  for (int policy = 0; policy < 4; policy++) {
    memset(&dev, 0, sizeof dev);
    cfg.policy = (lrt_upload_policy)policy;
    m = sentinel;
    CHECK_STATUS(lrt_runtime_maker_create(&cfg, &api, &m), LRT_OK);
    /* AUTO measures its copy cost at create: count from here. */
    memset(dev.calls, 0, sizeof dev.calls);
    dev.bytes_to = 0;
    dev.copies = 0;
    lrt_sm_header *h = NULL;
    lrt_task_slot slot, slot_fill;
    memset(&slot_fill, 0xCD, sizeof slot_fill);
    lrt_upload_report rep, rep_fill;
    memset(&rep_fill, 0xCD, sizeof rep_fill);
    int32_t st = 12345;

    /* fresh: everything but begin_run is out of order */
    slot = slot_fill;
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_ERR_STATE);
    CHECK(memcmp(&slot, &slot_fill, sizeof slot) == 0);
    rep = rep_fill;
    CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_ERR_STATE);
    CHECK(memcmp(&rep, &rep_fill, sizeof rep) == 0);
    CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_ERR_STATE);
    CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_ERR_STATE);
    CHECK(st == 12345);
    CHECK_STATUS(lrt_runtime_maker_begin_run(m, NULL), LRT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_U64(dev.calls[DEV_TO] + dev.calls[DEV_FROM], 0);

    /* NULL maker everywhere */
    CHECK_STATUS(lrt_runtime_maker_begin_run(NULL, &h), LRT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(lrt_runtime_maker_claim_slot(NULL, &slot), LRT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(lrt_runtime_maker_upload(NULL, &rep), LRT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(lrt_runtime_maker_read_status(NULL, &st), LRT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(lrt_runtime_maker_segments(NULL, &segs), LRT_ERR_INVALID_ARGUMENT);
    CHECK(lrt_runtime_maker_device_image(NULL) == NULL);
    lrt_runtime_maker_destroy(NULL);
    CHECK(h == NULL);

    /* mid-run */
    CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
    CHECK(h != NULL && h->current_task_index == 0 && h->task_window_size == W);
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, NULL), LRT_ERR_INVALID_ARGUMENT);
    CHECK(h->current_task_index == 0);
    for (int i = 0; i < W; i++) {
      CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
      CHECK(slot.index == i);
      slot.payload->scalars[0] = 1000u + (uint64_t)i;
      slot.descriptor->kernel_id[0] = i;
    }
    /* full window */
    unsigned char hdr_before[sizeof(lrt_sm_header)];
    memcpy(hdr_before, h, sizeof hdr_before);
    slot = slot_fill;
    mark();
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_ERR_OUT_OF_RANGE);
    CHECK(error_contains("lrt_runtime_maker_claim_slot: "));
    CHECK(memcmp(&slot, &slot_fill, sizeof slot) == 0);
    CHECK(memcmp(hdr_before, h, sizeof hdr_before) == 0);

    /* corrupted index: rejected before copying anything, claims too */
    const int32_t bad_idx[] = {-1, W + 1, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof bad_idx / sizeof bad_idx[0]; i++) {
      h->current_task_index = bad_idx[i];
      memcpy(hdr_before, h, sizeof hdr_before);
      rep = rep_fill;
      mark();
      CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_ERR_OUT_OF_RANGE);
      CHECK(error_contains("lrt_runtime_maker_upload: "));
      CHECK(memcmp(&rep, &rep_fill, sizeof rep) == 0);
      CHECK(memcmp(hdr_before, h, sizeof hdr_before) == 0);
      slot = slot_fill;
      CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_ERR_OUT_OF_RANGE);
      CHECK(memcmp(&slot, &slot_fill, sizeof slot) == 0);
      CHECK(memcmp(hdr_before, h, sizeof hdr_before) == 0);
      CHECK_EQ_U64(dev.calls[DEV_TO], 0);
    }
    h->current_task_index = W;

    /* corrupted slot pointers: rejected before copying, mirror unchanged */
    lrt_task_slot_state *ss = h->slot_states;
    lrt_task_payload *saved_pay = ss[7].payload;
    lrt_task_descriptor *saved_task = ss[9].task;
    ss[7].payload = (lrt_task_payload *)(uintptr_t)0x1000;
    memcpy(hdr_before, h, sizeof hdr_before);
    CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_ERR_INVALID_ARGUMENT);
    CHECK(error_contains("slot 7"));
    CHECK(memcmp(hdr_before, h, sizeof hdr_before) == 0);
    CHECK(ss[7].payload == (lrt_task_payload *)(uintptr_t)0x1000);
    CHECK(mem(ss[0].payload) == mem(h->task_payloads)); /* slot 0 not left relocated */
    static lrt_task_payload elsewhere; /* a real payload, outside the mirror */
    ss[7].payload = &elsewhere;
    CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_ERR_INVALID_ARGUMENT);
    CHECK(ss[7].payload == &elsewhere);
    ss[7].payload = saved_pay;
    ss[9].task = (lrt_task_descriptor *)((char *)saved_task + 1); /* misaligned, inside the mirror */
    CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_ERR_INVALID_ARGUMENT);
    ss[9].task = saved_task;
    CHECK_EQ_U64(dev.calls[DEV_TO], 0);
    CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_ERR_STATE);

    /* a failing copy: LRT_ERR_DEVICE, the maker stays usable */
    dev.fail_at[DEV_TO] = 1;
    rep = rep_fill;
    CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_ERR_DEVICE);
    CHECK(error_contains("copy_to_device"));
    CHECK(memcmp(&rep, &rep_fill, sizeof rep) == 0);
    CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_ERR_STATE);
    CHECK(st == 12345);

    /* after all that, the run uploads correctly */
    CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_OK);
    CHECK(rep.total_tasks == W);
    CHECK_EQ_U64(rep.bytes, dev.bytes_to);
    CHECK(rep.copies == (uint32_t)dev.copies);
    const lrt_sm_header *dh = (const lrt_sm_header *)lrt_runtime_maker_device_image(m);
    CHECK(dh != NULL && dh->current_task_index == W && dh->task_window_size == W);
    if (dh) {
      for (int i = 0; i < W; i++) {
        CHECK(dh->task_payloads[i].scalars[0] == 1000u + (uint64_t)i);
        CHECK(dh->task_descriptors[i].kernel_id[0] == i);
        CHECK(dh->slot_states[i].payload == &dh->task_payloads[i]);
        CHECK(dh->slot_states[i].task == &dh->task_descriptors[i]);
      }
    }
    CHECK(h->slot_states[0].payload == h->task_payloads); /* mirror keeps host pointers */
    CHECK_STATUS(lrt_runtime_maker_read_status(m, NULL), LRT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(lrt_runtime_maker_segments(m, NULL), LRT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_OK);
    CHECK(st == 0);
    /* the report is optional */
    CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
    CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_OK);
    lrt_runtime_maker_destroy(m);
    CHECK(test_device_live(&dev) == 0);
    CHECK_EQ_U64(dev.allocs, dev.frees);
    CHECK_EQ_U64(dev.violations, 0);
  }
  return check_result();
}
