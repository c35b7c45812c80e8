/* Loop totals at the top of ptrdiff_t: for every total in
 * [PTRDIFF_MAX - 14, PTRDIFF_MAX] and a few below, costs 0, 1, 1e9, inf
 * and DBL_MAX, TryParallelFor and TryParallelFor with a TensorOpCost run
 * every index exactly once, in few blocks, and return at once. The body
 * records the blocks (it cannot visit 2^63 indices); the check sorts them
 * and requires that they tile [0, total) with no gap and no overlap.
 * A watchdog (alarm) turns a loop that does not return into a failure. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "../pool/pool_common.h"

#define MAX_BLOCKS 4096

typedef struct blocks {
  pthread_mutex_t lock;
  int n, overflow;
  ptrdiff_t first[MAX_BLOCKS], last[MAX_BLOCKS];
} blocks;

static void record(void *ctx, ptrdiff_t a, ptrdiff_t b) {
  blocks *bl = (blocks *)ctx;
  pthread_mutex_lock(&bl->lock);
  if (bl->n < MAX_BLOCKS) {
    bl->first[bl->n] = a;
    bl->last[bl->n] = b;
    bl->n++;
  } else {
    bl->overflow = 1;
  }
  pthread_mutex_unlock(&bl->lock);
}

static int by_first(const void *x, const void *y) {
  ptrdiff_t a = *(const ptrdiff_t *)x, b = *(const ptrdiff_t *)y;
  return a < b ? -1 : a > b;
}

/* 1 if the recorded blocks tile [0, total) exactly. */
static int tiles(blocks *bl, ptrdiff_t total) {
  if (bl->overflow || bl->n == 0) return 0;
  ptrdiff_t pairs[MAX_BLOCKS][2];
  for (int i = 0; i < bl->n; i++) {
    pairs[i][0] = bl->first[i];
    pairs[i][1] = bl->last[i];
  }
  qsort(pairs, (size_t)bl->n, sizeof pairs[0], by_first);
  ptrdiff_t at = 0;
  for (int i = 0; i < bl->n; i++) {
    if (pairs[i][0] != at || pairs[i][1] <= pairs[i][0]) return 0;
    at = pairs[i][1];
  }
  return at == total;
}

static blocks bl = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}, {0}};

int main(void) {
  alarm(120);
  lrt_pool *p = make_pool(4);
  const double costs[] = {0.0, 1.0, 1e9, INFINITY, DBL_MAX};
  ptrdiff_t totals[24];
  int nt = 0;
  for (ptrdiff_t d = 0; d <= 14; d++) totals[nt++] = PTRDIFF_MAX - d;
  totals[nt++] = PTRDIFF_MAX / 2;
  totals[nt++] = PTRDIFF_MAX / 3 + 1;
  totals[nt++] = (ptrdiff_t)1 << 62;
  totals[nt++] = (ptrdiff_t)1 << 40;
  int loops = 0, max_blocks = 0;
  for (int t = 0; t < nt; t++) {
    for (int c = 0; c < 5; c++) {
      for (int kind = 0; kind < 2; kind++) {
        bl.n = 0;
        bl.overflow = 0;
        if (kind == 0) {
          lrt_pool_try_parallel_for(p, totals[t], costs[c], record, &bl);
        } else {
          lrt_tensor_op_cost cost = {0.0, 0.0, costs[c]};
          lrt_pool_try_parallel_for_cost(p, totals[t], &cost, record, &bl);
        }
        loops++;
        if (bl.n > max_blocks) max_blocks = bl.n;
        if (!tiles(&bl, totals[t])) {
          fprintf(stderr, "total %td cost %g (%s): %d blocks%s do not tile [0, total)\n",
                  totals[t], costs[c], kind ? "cost struct" : "cost_per_unit", bl.n,
                  bl.overflow ? " (more than 4096)" : "");
          check_failures_++;
        }
      }
    }
  }
  lrt_pool_destroy(p);
  printf("huge totals: %d loops up to PTRDIFF_MAX, every index once, at most %d blocks\n", loops,
         max_blocks);
  return check_result();
}
