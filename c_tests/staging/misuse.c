/* One call at a time per maker, and the calls that change a maker's device
 * image or device table between runs, as C sees them:
 *  - from inside the maker's own copy_to_device, every call on that maker
 *    (begin_run, claim, upload, read_status, segments, device_image,
 *    set_device_image, set_api, destroy) is refused with LRT_ERR_STATE and a
 *    message naming the rule; the outer upload still ships the run intact;
 *  - while one thread is inside a call, a second thread's calls are refused
 *    the same way, and the maker works for both afterwards; four threads
 *    calling at once get OK, LRT_ERR_STATE or a full window, nothing else;
 *  - create_borrowed, set_device_image and set_api: status, messages,
 *    nothing allocated or freed on a borrowed image, refused in a run. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "check.h"
#include "../hardening/common_device.h"

#define W 64
#define RULE "one call at a time per maker"

/* A device whose copy_to_device first runs a hook. */
typedef struct hooked {
  test_device dev;
  lrt_runtime_maker *m;
  void (*hook)(struct hooked *);
  int hooked_calls;
  /* for the two-thread test */
  atomic_int inside, release;
} hooked;

static int hooked_to(void *ctx, void *dst, const void *src, size_t n) {
  hooked *h = (hooked *)ctx;
  if (h->hook) h->hook(h);
  return dev_to(&h->dev, dst, src, n);
}

static const lrt_host_api_ops hooked_ops = {dev_malloc, dev_free, hooked_to, dev_from};

/* hooked_ops' callbacks other than copy_to_device take the test_device
   itself: it is the first member. */
static lrt_host_api hooked_api(hooked *h) {
  memset(h, 0, sizeof *h);
  lrt_host_api api = {h, &hooked_ops};
  return api;
}

static lrt_maker_config config(void) {
  lrt_maker_config c;
  lrt_maker_config_init(&c);
  c.task_window = W;
  return c;
}

static void refused(lrt_status s) {
  CHECK_STATUS(s, LRT_ERR_STATE);
  CHECK(error_contains(RULE));
}

/* Every maker call, from inside the maker's own callback. */
static void reenter(hooked *h) {
  lrt_runtime_maker *m = h->m;
  lrt_sm_header *hdr = (lrt_sm_header *)0x1;
  lrt_task_slot slot;
  memset(&slot, 0x3c, sizeof slot);
  lrt_upload_report rep;
  memset(&rep, 0x3c, sizeof rep);
  int32_t st = 77;
  lrt_sm_segments seg;
  memset(&seg, 0x3c, sizeof seg);
  h->hooked_calls++;
  refused(lrt_runtime_maker_begin_run(m, &hdr));
  CHECK(hdr == (lrt_sm_header *)0x1);
  refused(lrt_runtime_maker_claim_slot(m, &slot));
  CHECK(slot.index == 0x3c3c3c3c);
  refused(lrt_runtime_maker_upload(m, &rep));
  CHECK(rep.total_tasks == 0x3c3c3c3c);
  refused(lrt_runtime_maker_read_status(m, &st));
  CHECK(st == 77);
  refused(lrt_runtime_maker_segments(m, &seg));
  CHECK(seg.end == 0x3c3c3c3c3c3c3c3cull);
  CHECK(lrt_runtime_maker_device_image(m) == NULL);
  CHECK(error_contains(RULE));
  refused(lrt_runtime_maker_set_device_image(m, NULL, 0));
  refused(lrt_runtime_maker_abort_run(m));
  lrt_host_api host;
  CHECK_STATUS(lrt_host_api_host(&host), LRT_OK); /* other leanrt calls are fine */
  refused(lrt_runtime_maker_set_api(m, &host));
  lrt_host_api_release(&host);
  lrt_runtime_maker_destroy(m); /* refused: the maker lives on */
  CHECK(error_contains(RULE));
}

static void reentrant_calls(int policy) {
  hooked h;
  lrt_host_api api = hooked_api(&h);
  lrt_maker_config c = config();
  c.policy = (lrt_upload_policy)policy;
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &h.m), LRT_OK);
  if (!h.m) return;
  lrt_sm_header *hdr = NULL;
  CHECK_STATUS(lrt_runtime_maker_begin_run(h.m, &hdr), LRT_OK);
  lrt_task_slot slot;
  for (int i = 0; i < 10; i++) {
    CHECK_STATUS(lrt_runtime_maker_claim_slot(h.m, &slot), LRT_OK);
    slot.payload->scalar_count = 1;
    slot.payload->scalars[0] = 500u + (uint64_t)i;
  }
  h.hook = reenter;
  lrt_upload_report rep;
  CHECK_STATUS(lrt_runtime_maker_upload(h.m, &rep), LRT_OK);
  h.hook = NULL;
  CHECK(h.hooked_calls >= 1);
  CHECK(rep.total_tasks == 10);
  /* The run shipped intact: nothing the refused calls would have done. */
  const lrt_sm_header *dh = (const lrt_sm_header *)lrt_runtime_maker_device_image(h.m);
  CHECK(dh != NULL);
  if (dh) {
    CHECK(dh->current_task_index == 10 && dh->orchestrator_done == 1);
    CHECK((const unsigned char *)dh->task_payloads != (const unsigned char *)hdr->task_payloads);
    for (int i = 0; i < 10; i++) CHECK_EQ_U64(dh->task_payloads[i].scalars[0], 500u + (uint64_t)i);
  }
  CHECK(hdr->current_task_index == 10);
  int32_t st = 1;
  CHECK_STATUS(lrt_runtime_maker_read_status(h.m, &st), LRT_OK);
  CHECK(st == 0);
  lrt_runtime_maker_destroy(h.m);
  CHECK(test_device_live(&h.dev) == 0 && h.dev.violations == 0);
}

/* The second thread: parks inside copy_to_device until released. */
static void park(hooked *h) {
  atomic_store(&h->inside, 1);
  while (!atomic_load(&h->release)) {
  }
}

static void *upload_thread(void *arg) {
  hooked *h = (hooked *)arg;
  lrt_upload_report rep;
  lrt_status s = lrt_runtime_maker_upload(h->m, &rep);
  return (void *)(intptr_t)(s == LRT_OK && rep.total_tasks == 3);
}

static void two_threads(void) {
  hooked h;
  lrt_host_api api = hooked_api(&h);
  lrt_maker_config c = config();
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &h.m), LRT_OK);
  if (!h.m) return;
  lrt_sm_header *hdr = NULL;
  lrt_task_slot slot;
  CHECK_STATUS(lrt_runtime_maker_begin_run(h.m, &hdr), LRT_OK);
  for (int i = 0; i < 3; i++) CHECK_STATUS(lrt_runtime_maker_claim_slot(h.m, &slot), LRT_OK);
  h.hook = park;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, upload_thread, &h) == 0);
  while (!atomic_load(&h.inside)) {
  }
  /* The other thread is inside upload: this one is refused, nothing changes. */
  lrt_sm_header *hdr2 = NULL;
  refused(lrt_runtime_maker_begin_run(h.m, &hdr2));
  CHECK(hdr2 == NULL);
  refused(lrt_runtime_maker_claim_slot(h.m, &slot));
  int32_t st = 5;
  refused(lrt_runtime_maker_read_status(h.m, &st));
  CHECK(st == 5 && hdr->current_task_index == 3);
  h.hook = NULL;
  atomic_store(&h.release, 1);
  void *ok = NULL;
  CHECK(pthread_join(t, &ok) == 0);
  CHECK(ok != NULL);
  /* Both threads may use it now, one after the other. */
  CHECK_STATUS(lrt_runtime_maker_read_status(h.m, &st), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_begin_run(h.m, &hdr2), LRT_OK);
  CHECK(hdr2 == hdr);
  lrt_runtime_maker_destroy(h.m);
  CHECK(test_device_live(&h.dev) == 0 && h.dev.violations == 0);
}

/* Real threads on one maker: every call is OK, refused or finds the window
   full, never a crash or a torn image; afterwards the maker runs cleanly. */
#define STRESS_THREADS 4
#define STRESS_ROUNDS 2000

typedef struct stress {
  lrt_runtime_maker *m;
  int ok, refused, other;
} stress;

/* OK; refused (another call, or read_status before an upload); or, as
   runs of different threads interleave, a full window. */
static void count(stress *s, lrt_status st) {
  if (st == LRT_OK || st == LRT_ERR_OUT_OF_RANGE)
    s->ok++;
  else if (st == LRT_ERR_STATE)
    s->refused++;
  else
    s->other++;
}

static void *stress_thread(void *arg) {
  stress *s = (stress *)arg;
  for (int r = 0; r < STRESS_ROUNDS; r++) {
    lrt_sm_header *h;
    lrt_task_slot slot;
    lrt_upload_report rep;
    int32_t st;
    count(s, lrt_runtime_maker_begin_run(s->m, &h));
    count(s, lrt_runtime_maker_claim_slot(s->m, &slot));
    count(s, lrt_runtime_maker_claim_slot(s->m, &slot));
    count(s, lrt_runtime_maker_upload(s->m, &rep));
    lrt_status rs = lrt_runtime_maker_read_status(s->m, &st);
    count(s, rs);
  }
  return NULL;
}

/* Gives the other threads the core inside a copy, so that calls overlap. */
static void yield(hooked *h) {
  (void)h;
  sched_yield();
}

static void stress_threads(void) {
  hooked hk;
  lrt_host_api api = hooked_api(&hk);
  lrt_maker_config c = config();
  lrt_runtime_maker *m = NULL;
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_OK);
  hk.hook = yield;
  if (!m) return;
  pthread_t t[STRESS_THREADS];
  stress s[STRESS_THREADS];
  for (int i = 0; i < STRESS_THREADS; i++) {
    memset(&s[i], 0, sizeof s[i]);
    s[i].m = m;
    CHECK(pthread_create(&t[i], NULL, stress_thread, &s[i]) == 0);
  }
  int refused_calls = 0, ok_calls = 0;
  for (int i = 0; i < STRESS_THREADS; i++) {
    CHECK(pthread_join(t[i], NULL) == 0);
    CHECK(s[i].other == 0);
    refused_calls += s[i].refused;
    ok_calls += s[i].ok;
  }
  CHECK(ok_calls > 0);
  printf("stress: %d of %d calls refused as concurrent\n", refused_calls,
         STRESS_THREADS * STRESS_ROUNDS * 5);
  lrt_sm_header *h = NULL;
  lrt_task_slot slot;
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  for (int i = 0; i < 4; i++) {
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
    slot.payload->scalars[0] = 900u + (uint64_t)i;
  }
  CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_OK);
  const lrt_sm_header *dh = (const lrt_sm_header *)lrt_runtime_maker_device_image(m);
  CHECK(dh && dh->current_task_index == 4);
  if (dh)
    for (int i = 0; i < 4; i++) CHECK_EQ_U64(dh->task_payloads[i].scalars[0], 900u + (uint64_t)i);
  lrt_runtime_maker_destroy(m);
  CHECK(test_device_live(&hk.dev) == 0 && hk.dev.violations == 0);
}

static void borrowed_and_rebound(void) {
  test_device dev;
  lrt_host_api api = test_device_init(&dev);
  lrt_maker_config c = config();
  lrt_sm_segments seg;
  CHECK_STATUS(lrt_sm_ring_segment_offsets(W, &seg), LRT_OK);
  size_t size = (size_t)seg.end;
  void *a = dev_malloc(&dev, size), *b = dev_malloc(&dev, size + 100);
  CHECK(a && b);
  uint64_t mallocs = dev.calls[DEV_MALLOC];
  lrt_runtime_maker *m = (lrt_runtime_maker *)0x1;

  CHECK_STATUS(lrt_runtime_maker_create_borrowed(&c, &api, NULL, size, &m), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("lrt_runtime_maker_create_borrowed"));
  CHECK_STATUS(lrt_runtime_maker_create_borrowed(&c, &api, a, size - 1, &m), LRT_ERR_INVALID_ARGUMENT);
  CHECK(error_contains("needs"));
  CHECK(m == (lrt_runtime_maker *)0x1);
  CHECK_STATUS(lrt_runtime_maker_create_borrowed(&c, &api, a, size, &m), LRT_OK);
  CHECK(lrt_runtime_maker_device_image(m) == a);
  CHECK_EQ_U64(dev.calls[DEV_MALLOC], mallocs);

  lrt_sm_header *h = NULL;
  lrt_task_slot slot;
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
  /* In a run: neither the image nor the table may change. */
  CHECK_STATUS(lrt_runtime_maker_set_device_image(m, b, size + 100), LRT_ERR_STATE);
  CHECK(error_contains("between runs"));
  CHECK_STATUS(lrt_runtime_maker_set_api(m, &api), LRT_ERR_STATE);
  CHECK(lrt_runtime_maker_device_image(m) == a);
  CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_OK);
  CHECK(((const lrt_sm_header *)a)->current_task_index == 1);

  /* An abandoned run: abort_run ends it, and the image may change again. */
  CHECK_STATUS(lrt_runtime_maker_abort_run(NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_set_device_image(m, b, size + 100), LRT_ERR_STATE);
  CHECK_STATUS(lrt_runtime_maker_abort_run(m), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_ERR_STATE);
  CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_ERR_STATE);
  CHECK_STATUS(lrt_runtime_maker_abort_run(m), LRT_OK); /* nothing open: a no-op */

  /* Between runs. */
  CHECK_STATUS(lrt_runtime_maker_set_device_image(NULL, b, size), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_set_device_image(m, b, size - 1), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_set_device_image(m, NULL, 0), LRT_ERR_INVALID_ARGUMENT); /* no own image */
  CHECK(error_contains("of its own"));
  CHECK_STATUS(lrt_runtime_maker_set_device_image(m, b, size + 100), LRT_OK);
  int32_t st = 3;
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_ERR_STATE); /* nothing uploaded to b yet */
  CHECK(st == 3);
  CHECK_STATUS(lrt_runtime_maker_set_api(m, NULL), LRT_ERR_INVALID_ARGUMENT);
  lrt_host_api_ops holes = test_device_ops;
  holes.copy_to_device = NULL;
  lrt_host_api holey = {&dev, &holes};
  CHECK_STATUS(lrt_runtime_maker_set_api(m, &holey), LRT_ERR_INVALID_ARGUMENT);
  test_device other;
  lrt_host_api api2 = test_device_init(&other);
  other.live[0] = b; /* the same memory, seen by the second table */
  other.size[0] = size + 100;
  CHECK_STATUS(lrt_runtime_maker_set_api(m, &api2), LRT_OK);
  uint64_t to_before = dev.calls[DEV_TO];
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  for (int i = 0; i < 2; i++) CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_OK);
  CHECK(other.calls[DEV_TO] > 0 && dev.calls[DEV_TO] == to_before);
  CHECK(((const lrt_sm_header *)b)->current_task_index == 2);
  CHECK(((const lrt_sm_header *)a)->current_task_index == 1); /* left alone */
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_OK);
  lrt_runtime_maker_destroy(m);
  CHECK_EQ_U64(dev.frees + other.frees, 0); /* borrowed: never freed */
  other.live[0] = NULL;
  dev_free(&dev, a);
  dev_free(&dev, b);
  CHECK(test_device_live(&dev) == 0 && dev.violations == 0 && other.violations == 0);
}

int main(void) {
  for (int policy = 0; policy < 4; policy++) reentrant_calls(policy);
  two_threads();
  stress_threads();
  borrowed_and_rebound();
  return check_result();
}
