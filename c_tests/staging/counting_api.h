/* A counting host api for the staging tests: "device" memory is 64-aligned
 * host memory filled with 0xAA, every copy_to_device is recorded, and
 * device_malloc / the k-th copy_to_device can be made to fail. */
#ifndef LEANRT_COUNTING_API_H
#define LEANRT_COUNTING_API_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "leanrt.h"

#define COUNTING_MAX_COPIES 16
#define POISON_BYTE 0xAA

typedef struct counting_ctx {
  int mallocs, frees, live;
  int fail_malloc;
  int fail_copy_at; /* 1-based call number that fails; 0 = none */
  int copy_calls;   /* calls, failed ones included */
  int copies;       /* successful copies recorded */
  uint64_t bytes;   /* bytes of successful copies */
  size_t off[COUNTING_MAX_COPIES], len[COUNTING_MAX_COPIES];
  unsigned char *base;
  size_t size;
} counting_ctx;

static void *counting_malloc(void *ctx, size_t size) {
  counting_ctx *c = (counting_ctx *)ctx;
  void *p = NULL;
  c->mallocs++;
  if (c->fail_malloc) return NULL;
  if (posix_memalign(&p, 64, size ? size : 1) != 0) return NULL;
  memset(p, POISON_BYTE, size);
  c->live++;
  c->base = (unsigned char *)p;
  c->size = size;
  return p;
}

static void counting_free(void *ctx, void *p) {
  counting_ctx *c = (counting_ctx *)ctx;
  c->frees++;
  if (p) c->live--;
  free(p);
}

static int counting_to(void *ctx, void *dst, const void *src, size_t n) {
  counting_ctx *c = (counting_ctx *)ctx;
  size_t off = (size_t)((unsigned char *)dst - c->base);
  c->copy_calls++;
  if (c->fail_copy_at == c->copy_calls) return -3;
  if ((unsigned char *)dst < c->base || off + n > c->size) return -4; /* outside the image */
  if (c->copies < COUNTING_MAX_COPIES) {
    c->off[c->copies] = off;
    c->len[c->copies] = n;
  }
  c->copies++;
  c->bytes += n;
  memcpy(dst, src, n);
  return 0;
}

static int counting_from(void *ctx, void *dst, const void *src, size_t n) {
  (void)ctx;
  memcpy(dst, src, n);
  return 0;
}

static const lrt_host_api_ops counting_ops = {counting_malloc, counting_free, counting_to,
                                              counting_from};

static lrt_host_api counting_api(counting_ctx *c) {
  lrt_host_api api;
  memset(c, 0, sizeof *c);
  api.ctx = c;
  api.ops = &counting_ops;
  return api;
}

/* Forgets the recorded copies (keeps the failure settings and counters). */
static void counting_reset(counting_ctx *c) {
  c->copies = 0;
  c->bytes = 0;
  c->copy_calls = 0;
}

#endif
