/* The fake device of the C tests (staging and hardening): "device" memory
 * is malloc'ed host memory filled with DEV_POISON (so ASan and valgrind see
 * it, and unshipped bytes show), every callback is counted and checked
 * (copies inside a live allocation, frees of live allocations only), the
 * first DEV_MAX_COPIES successful copies to the device are recorded, and the
 * k-th call of a callback (or every call) can be made to fail.
 * Not a test by itself (a header: ctest registers only .c/.cpp files). */
#ifndef LEANRT_HARDENING_DEVICE_H
#define LEANRT_HARDENING_DEVICE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "leanrt.h"

enum { DEV_MALLOC = 0, DEV_FREE = 1, DEV_TO = 2, DEV_FROM = 3, DEV_OPS = 4, DEV_MAX_LIVE = 8 };
enum { DEV_MAX_COPIES = 16, DEV_POISON = 0xA5 };

typedef struct test_device {
  void *live[DEV_MAX_LIVE];
  size_t size[DEV_MAX_LIVE];
  uint64_t calls[DEV_OPS];    /* failed calls included */
  uint64_t fail_at[DEV_OPS];  /* 1-based call number to fail; 0 = never */
  int fail_always[DEV_OPS];   /* non-zero: every call fails */
  uint64_t allocs, frees, violations, bytes_to;
  int copies;                 /* successful copies to the device */
  size_t off[DEV_MAX_COPIES]; /* offset in its allocation of each recorded copy */
  size_t len[DEV_MAX_COPIES];
} test_device;

static int dev_slot_of(test_device *d, const void *p, size_t n) {
  for (int i = 0; i < DEV_MAX_LIVE; i++) {
    const char *b = (const char *)d->live[i];
    if (b && (const char *)p >= b && (size_t)((const char *)p - b) + n <= d->size[i]) return i;
  }
  return -1;
}

static int dev_enter(test_device *d, int op) {
  d->calls[op]++;
  return d->fail_always[op] || (d->fail_at[op] != 0 && d->calls[op] == d->fail_at[op]);
}

static void *dev_malloc(void *ctx, size_t size) {
  test_device *d = (test_device *)ctx;
  if (dev_enter(d, DEV_MALLOC)) return NULL;
  for (int i = 0; i < DEV_MAX_LIVE; i++) {
    if (!d->live[i]) {
      d->live[i] = malloc(size);
      if (!d->live[i]) return NULL;
      memset(d->live[i], DEV_POISON, size); /* stale content */
      d->size[i] = size;
      d->allocs++;
      return d->live[i];
    }
  }
  d->violations++;
  return NULL;
}

static void dev_free(void *ctx, void *p) {
  test_device *d = (test_device *)ctx;
  dev_enter(d, DEV_FREE);
  for (int i = 0; i < DEV_MAX_LIVE; i++) {
    if (d->live[i] && d->live[i] == p) {
      free(p);
      d->live[i] = NULL;
      d->frees++;
      return;
    }
  }
  d->violations++; /* free of something that is not a live allocation */
}

static int dev_to(void *ctx, void *dst, const void *src, size_t n) {
  test_device *d = (test_device *)ctx;
  if (dev_enter(d, DEV_TO)) return 1;
  int slot = src ? dev_slot_of(d, dst, n) : -1;
  if (slot < 0) {
    d->violations++;
    return 1;
  }
  memcpy(dst, src, n);
  d->bytes_to += n;
  if (d->copies < DEV_MAX_COPIES) {
    d->off[d->copies] = (size_t)((char *)dst - (char *)d->live[slot]);
    d->len[d->copies] = n;
  }
  d->copies++;
  return 0;
}

static int dev_from(void *ctx, void *dst, const void *src, size_t n) {
  test_device *d = (test_device *)ctx;
  if (dev_enter(d, DEV_FROM)) return 1;
  if (!dst || dev_slot_of(d, src, n) < 0) {
    d->violations++;
    return 1;
  }
  memcpy(dst, src, n);
  return 0;
}

static const lrt_host_api_ops test_device_ops = {dev_malloc, dev_free, dev_to, dev_from};

static inline lrt_host_api test_device_api(test_device *d) {
  lrt_host_api api;
  api.ctx = d;
  api.ops = &test_device_ops;
  return api;
}

/* Clears `*d` and returns its api. */
static inline lrt_host_api test_device_init(test_device *d) {
  memset(d, 0, sizeof *d);
  return test_device_api(d);
}

/* Forgets the copies to the device: their count, call count and record
 * (a fail_at[DEV_TO] then counts from here). */
static inline void test_device_reset_copies(test_device *d) {
  d->calls[DEV_TO] = 0;
  d->copies = 0;
  d->bytes_to = 0;
}

static inline int test_device_live(const test_device *d) {
  int n = 0;
  for (int i = 0; i < DEV_MAX_LIVE; i++) n += d->live[i] != NULL;
  return n;
}

/* The host writes a v2 run of one task without arguments into the mirror
 * itself, as the reference's orchestrator does (descriptor with kernel ids
 * -1, payload, slot state and flag zeroed, current_task_index 1), at the
 * mirror layout of `window`. 0 if the window is refused. */
static inline int test_v2_host_task(lrt_v2_sm_header *h, uint64_t window) {
  lrt_v2_segments s;
  if (lrt_v2_ring_segment_offsets(window, &s) != LRT_OK) return 0;
  unsigned char *mirror = (unsigned char *)h;
  lrt_task_descriptor *d = (lrt_task_descriptor *)(mirror + s.descriptors);
  memset(d, 0, sizeof *d);
  d->kernel_id[0] = d->kernel_id[1] = d->kernel_id[2] = -1;
  memset(mirror + s.payloads, 0, sizeof(lrt_v2_task_payload));
  memset(mirror + s.slot_states, 0, sizeof(lrt_v2_task_slot_state));
  mirror[s.completion_flags] = 0;
  h->current_task_index = 1;
  return 1;
}

/* Smaller sizes under valgrind and sanitizers: LEANRT_TEST_SMALL=1. */
static inline int test_small(void) {
  const char *s = getenv("LEANRT_TEST_SMALL");
  return s && s[0] == '1';
}

#endif
