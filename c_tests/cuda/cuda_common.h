/* Checks shared by the CUDA C tests (mock and real device). */
#ifndef LEANRT_CUDA_COMMON_H
#define LEANRT_CUDA_COMMON_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void fill_pattern(unsigned char *p, size_t len, unsigned seed) {
  uint32_t x = seed * 2654435761u + 1u;
  for (size_t i = 0; i < len; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = (unsigned char)x;
  }
}

/* Copies len bytes of a pattern to the device and back; 1 when equal. */
static int round_trip_ok(const lrt_host_api *api, void *dev, size_t len, unsigned seed) {
  unsigned char *src = malloc(len), *back = malloc(len);
  int ok = src != NULL && back != NULL;
  if (ok) {
    fill_pattern(src, len, seed);
    memset(back, 0, len);
    ok = api->ops->copy_to_device(api->ctx, dev, src, len) == 0 &&
         api->ops->copy_from_device(api->ctx, back, dev, len) == 0 && memcmp(src, back, len) == 0;
  }
  free(src);
  free(back);
  return ok;
}

struct thread_arg {
  const lrt_host_api *api;
  void *dev;
  size_t len;
  unsigned seed;
  int ok;
};

static void *thread_round_trip(void *p) {
  struct thread_arg *a = p;
  a->ok = round_trip_ok(a->api, a->dev, a->len, a->seed);
  return NULL;
}

/* A round trip of len bytes from this thread, then from 4 threads at once,
 * each in its own quarter of the allocation. */
static void check_round_trip(const lrt_host_api *api, size_t len) {
  void *dev = api->ops->device_malloc(api->ctx, len);
  CHECK(dev != NULL);
  if (dev == NULL) return;
  CHECK(round_trip_ok(api, dev, len, 1));
  pthread_t t[4];
  struct thread_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i].api = api;
    args[i].dev = (void *)((uintptr_t)dev + (uintptr_t)i * (len / 4));
    args[i].len = len / 4;
    args[i].seed = 10u + (unsigned)i;
    args[i].ok = 0;
    CHECK(pthread_create(&t[i], NULL, thread_round_trip, &args[i]) == 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK(args[i].ok);
  }
  api->ops->device_free(api->ctx, dev);
}

static void write_task(const lrt_task_slot *s, int run) {
  int i = s->index;
  s->descriptor->kernel_id[0] = i;
  if (i % 2 == 0) {
    s->payload->tensor_count = 1 + i % 3;
    for (int t = 0; t < s->payload->tensor_count; t++)
      for (int w = 0; w < 16; w++)
        s->payload->tensors[t][w] = ((uint64_t)run << 40) | ((uint64_t)i << 16) | (uint64_t)(t * 16 + w);
    s->payload->scalar_count = 2;
    s->payload->scalars[0] = (uint64_t)i;
    s->payload->scalars[1] = (uint64_t)run;
    s->payload->fanin_count = i > 0 ? 1 : 0;
    s->payload->fanin_local_ids[0] = i - 1;
  }
}

/* Checks the device image of a run of n tasks, read back whole, through the
 * device header's pointers. */
static void check_device_image(const lrt_host_api *api, lrt_runtime_maker *m, int n, int run) {
  lrt_sm_segments seg;
  CHECK_STATUS(lrt_runtime_maker_segments(m, &seg), LRT_OK);
  uintptr_t base = (uintptr_t)lrt_runtime_maker_device_image(m);
  unsigned char *img = malloc((size_t)seg.end);
  CHECK(img != NULL && base != 0);
  if (img == NULL || base == 0) {
    free(img);
    return;
  }
  CHECK(api->ops->copy_from_device(api->ctx, img, (void *)base, (size_t)seg.end) == 0);
  lrt_sm_header h;
  memcpy(&h, img, sizeof h);
  CHECK(h.current_task_index == n);
  uintptr_t d = (uintptr_t)h.task_descriptors, p = (uintptr_t)h.task_payloads,
            s = (uintptr_t)h.slot_states, f = (uintptr_t)h.completion_flags;
  CHECK(d >= base && p > d && s > p && f > s && f + (uintptr_t)n <= base + seg.end);
  if (!(d >= base && p > d && s > p && f > s && f + (uintptr_t)n <= base + seg.end)) {
    free(img);
    return;
  }
  int bad = 0;
  for (int i = 0; i < n && bad < 5; i++) {
    lrt_task_descriptor desc;
    lrt_task_payload pay;
    lrt_task_slot_state st;
    size_t doff = (size_t)(d - base) + (size_t)i * sizeof desc;
    size_t poff = (size_t)(p - base) + (size_t)i * sizeof pay;
    size_t soff = (size_t)(s - base) + (size_t)i * sizeof st;
    memcpy(&desc, img + doff, sizeof desc);
    memcpy(&pay, img + poff, sizeof pay);
    memcpy(&st, img + soff, sizeof st);
    int ok = desc.task_id == (uint64_t)i && desc.kernel_id[0] == i &&
             (uintptr_t)st.payload == base + poff && (uintptr_t)st.task == base + doff &&
             img[(size_t)(f - base) + (size_t)i] == 0 && pay.early_dispatch[0] == 0 && pay.predicate[0] == 0;
    if (i % 2 == 0) {
      ok = ok && pay.tensor_count == 1 + i % 3 && pay.scalar_count == 2 &&
           pay.scalars[0] == (uint64_t)i && pay.scalars[1] == (uint64_t)run &&
           pay.fanin_count == (i > 0 ? 1 : 0) && (i == 0 || pay.fanin_local_ids[0] == i - 1);
      for (int t = 0; ok && t < pay.tensor_count; t++)
        for (int w = 0; w < 16; w++)
          ok = ok && pay.tensors[t][w] == (((uint64_t)run << 40) | ((uint64_t)i << 16) | (uint64_t)(t * 16 + w));
    } else {
      ok = ok && pay.tensor_count == 0 && pay.scalar_count == 0 && pay.fanin_count == 0;
    }
    if (!ok) {
      fprintf(stderr, "run %d: slot %d of %d is wrong on the device\n", run, i, n);
      bad++;
    }
  }
  CHECK(bad == 0);
  free(img);
}

/* Runs of n tasks (n, then n/2, then n) through a maker on api. */
static void check_maker(const lrt_host_api *api, uint64_t window, lrt_upload_policy policy,
                        uint32_t flags, int n) {
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = window;
  cfg.policy = policy;
  cfg.flags = flags;
  lrt_runtime_maker *m = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&cfg, api, &m), LRT_OK);
  if (m == NULL) return;
  for (int run = 1; run <= 3; run++) {
    int tasks = run == 2 ? n / 2 : n;
    lrt_sm_header *h = NULL;
    CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
    for (int i = 0; i < tasks; i++) {
      lrt_task_slot slot;
      CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
      write_task(&slot, run);
    }
    lrt_upload_report r;
    CHECK_STATUS(lrt_runtime_maker_upload(m, &r), LRT_OK);
    CHECK(r.total_tasks == tasks);
    if (policy == LRT_UPLOAD_BOUNDED) CHECK_EQ_U64(r.bytes, 320u + 4969u * (uint64_t)tasks);
    /* COMPACT gathers an image of up to 192 KiB into one copy, else copies
       the live prefixes straight to their compact offsets. */
    if (policy == LRT_UPLOAD_COMPACT) {
      if ((uint64_t)tasks != window && 320u + 4969u * (uint64_t)tasks > 192u * 1024u)
        CHECK(r.copies == 4 && r.bytes == 320u + 4969u * (uint64_t)tasks);
      else
        CHECK(r.copies == 1);
    }
    /* AUTO ships as BOUNDED or as a gathered COMPACT, and says which. */
    if (policy == LRT_UPLOAD_AUTO) {
      CHECK(r.path == LRT_UPLOAD_BOUNDED || r.path == LRT_UPLOAD_COMPACT);
      if (r.path == LRT_UPLOAD_BOUNDED) CHECK_EQ_U64(r.bytes, 320u + 4969u * (uint64_t)tasks);
      if (r.path == LRT_UPLOAD_COMPACT) CHECK(r.copies == 1);
    } else {
      CHECK(r.path == policy);
    }
    check_device_image(api, m, tasks, run);
    int32_t status = 1;
    CHECK_STATUS(lrt_runtime_maker_read_status(m, &status), LRT_OK);
    CHECK(status == 0);
  }
  lrt_runtime_maker_destroy(m);
}

#endif
