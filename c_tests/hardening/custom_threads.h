/* Custom thread functions for the pool's C tests, with ORT's signatures,
 * made with pthreads: creates and joins are counted, the last `options`
 * pointer create got is kept, and create fails (returns NULL, starting
 * nothing) on its call number `fail_at` (0: never). */
#ifndef LEANRT_TEST_CUSTOM_THREADS_H
#define LEANRT_TEST_CUSTOM_THREADS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "leanrt.h"

static atomic_int creates, joins, create_calls, fail_at;
static void *_Atomic last_create_options;

typedef struct {
  pthread_t t;
  lrt_thread_worker_fn fn;
  void *param;
} custom_thread;

static void *custom_main(void *arg) {
  custom_thread *c = (custom_thread *)arg;
  c->fn(c->param);
  return NULL;
}

static lrt_custom_thread_handle custom_create(void *options, lrt_thread_worker_fn fn, void *param) {
  atomic_store(&last_create_options, options);
  if (atomic_fetch_add(&create_calls, 1) + 1 == atomic_load(&fail_at)) return NULL;
  custom_thread *c = (custom_thread *)malloc(sizeof *c);
  if (!c) return NULL;
  c->fn = fn;
  c->param = param;
  if (pthread_create(&c->t, NULL, custom_main, c) != 0) {
    free(c);
    return NULL;
  }
  atomic_fetch_add(&creates, 1);
  return (lrt_custom_thread_handle)(void *)c;
}

static void custom_join(lrt_custom_thread_handle h) {
  custom_thread *c = (custom_thread *)(void *)h;
  pthread_join(c->t, NULL);
  free(c);
  atomic_fetch_add(&joins, 1);
}

#endif
