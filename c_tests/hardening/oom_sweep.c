/* Heap exhaustion at every C entry point. For each entry point and each
 * headroom h = 0, 1, 2, ... a forked child prepares what the call needs,
 * arms the failing allocator (c_tests/hardening/failmalloc: h allocations
 * succeed, every later one on any thread returns NULL), makes the call,
 * disarms, and checks: the call returned its usual status or
 * LRT_ERR_NO_MEMORY with a message naming the function; the objects it was
 * given (or made) are still usable and destroyable, nothing of the device
 * is leaked. The parent checks that the child exited normally (no abort)
 * and printed nothing. The sweep of an entry point ends at the first
 * headroom with which the call met no failure. Every exported lrt_*
 * function is the name of at least one case (some cases make a few calls:
 * the queries together, enable with disable, a host api with its
 * release); the maker's calls run on a v1 and on a v2 maker.
 *
 * Then the same cases again under RLIMIT_AS a few sizes above what the
 * child already maps (0 to 16 MiB more): the kernel refuses heap growth,
 * thread stacks and mirrors.
 *
 * Must run with the failing allocator in place: under a sanitizer runtime
 * or valgrind (which replace malloc themselves) it says so and fails
 * (scripts/sanitize.sh and scripts/valgrind.sh leave it out). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "common_device.h"
#include "custom_threads.h"
#include "failmalloc/failmalloc.h"

enum {
  NEED_OPTS = 1,
  NEED_POOL = 2,
  NEED_MAKER = 4,
  NEED_RUN = 8,
  NEED_UPLOAD = 16,
  NEED_PROFILING = 32,
  NEED_SECTION = 64,
  NEED_REGION = 128, /* a device region to lend, allocated before arming */
  NEED_V2_MAKER = 256, /* a maker of LRT_LAYOUT_V2 */
  NEED_V2_RUN = 512,   /* ... with a v2 run begun and one task claimed */
};
#define ANY_STATUS (-2)
#define MAX_HEADROOM 600
#define TOTAL 1000
#define WINDOW 16

typedef struct st {
  lrt_pool_options *opts;
  lrt_pool *pool;
  lrt_pool_section *section;
  lrt_runtime_maker *maker;
  test_device dev;
  lrt_host_api api;
  char *json;
  void *borrowed; /* a device region to lend to the maker (NEED_REGION) */
  size_t borrowed_len;
  int v2; /* the maker is of LRT_LAYOUT_V2 */
} st;

typedef struct scenario {
  const char *name;
  int needs;
  int expected; /* status with enough memory, or ANY_STATUS */
  int (*call)(st *);
} scenario;

/* ---- loop bodies: every index exactly once ---------------------------- */
static atomic_uchar seen[TOTAL];
static atomic_long task_runs;

static void reset_seen(void) {
  for (int i = 0; i < TOTAL; i++) atomic_store(&seen[i], 0);
}
static int all_seen_once(void) {
  for (int i = 0; i < TOTAL; i++)
    if (atomic_load(&seen[i]) != 1) return 0;
  return 1;
}
static void range_body(void *ctx, ptrdiff_t a, ptrdiff_t b) {
  (void)ctx;
  for (ptrdiff_t i = a; i < b; i++) atomic_fetch_add(&seen[i], 1);
}
static void index_body(void *ctx, ptrdiff_t i) {
  (void)ctx;
  atomic_fetch_add(&seen[i], 1);
}
static void kernel_body(void *ctx, size_t i) {
  (void)ctx;
  atomic_fetch_add(&seen[i], 1);
}
static void task_body(void *ctx) {
  (void)ctx;
  atomic_fetch_add(&task_runs, 1);
}
static void log_sink(void *ctx, lrt_log_level level, const char *msg) {
  (void)ctx;
  (void)level;
  (void)msg;
}
/* Loop scenarios: LRT_OK if every index ran once, else 100. */
#define COVERED() (all_seen_once() ? LRT_OK : 100)

/* ---- the calls ---------------------------------------------------------- */
static int c_status_str(st *s) {
  (void)s;
  return lrt_status_str(3)[0] == 'L' ? LRT_OK : 100;
}
static int c_version(st *s) {
  (void)s;
  return strncmp(lrt_version(), "leanrt ", 7) == 0 ? LRT_OK : 100;
}
static int c_last_error(st *s) {
  (void)s;
  char buf[64];
  lrt_last_error(buf, sizeof buf);
  return LRT_OK;
}
static int c_host_api_host(st *s) {
  (void)s;
  lrt_host_api a;
  int rc = lrt_host_api_host(&a);
  if (rc == LRT_OK) lrt_host_api_release(&a);
  return rc;
}
static int c_host_api_cuda(st *s) {
  (void)s;
  lrt_host_api a;
  int rc = lrt_host_api_cuda(0, &a);
  if (rc == LRT_OK) lrt_host_api_release(&a);
  return rc;
}
static int c_set_log_callback(st *s) {
  (void)s;
  int rc = lrt_set_log_callback(log_sink, NULL);
  lrt_set_log_callback(NULL, NULL);
  return rc;
}
static int c_options_create(st *s) {
  lrt_pool_options *o = NULL;
  int rc = lrt_pool_options_create(&o);
  if (rc != LRT_OK && o != NULL) return 101;
  if (rc == LRT_OK) s->opts = o;
  return rc;
}
static int c_options_destroy(st *s) {
  lrt_pool_options_destroy(s->opts);
  s->opts = NULL;
  return LRT_OK;
}
static int c_set_config(st *s) {
  return lrt_pool_options_set_config(s->opts, LRT_POOL_KEY_SPIN_DURATION_US, "100");
}
static int c_set_config_unknown(st *s) {
  return lrt_pool_options_set_config(s->opts, "session.no_such_key_in_this_test", "1");
}
static int c_set_config_affinity(st *s) {
  return lrt_pool_options_set_config(s->opts, LRT_POOL_KEY_THREAD_AFFINITIES, "1;1-2;1");
}
static int c_set_num_threads(st *s) { return lrt_pool_options_set_num_threads(s->opts, 3); }
static int c_set_spin_control(st *s) { return lrt_pool_options_set_spin_control(s->opts, 2); }
static int c_set_spin_duration(st *s) { return lrt_pool_options_set_spin_duration_us(s->opts, 50); }
static int c_set_backoff(st *s) { return lrt_pool_options_set_spin_backoff_max(s->opts, 8); }
static int c_set_block_base(st *s) { return lrt_pool_options_set_dynamic_block_base(s->opts, 2); }
static int c_set_affinity(st *s) { return lrt_pool_options_set_affinity(s->opts, "1;1"); }
static int c_set_denormal(st *s) { return lrt_pool_options_set_denormal_as_zero(s->opts, 1); }
static int c_set_name(st *s) { return lrt_pool_options_set_name(s->opts, "oom-sweep-pool"); }
static int c_set_stack(st *s) { return lrt_pool_options_set_stack_size(s->opts, 1 << 20); }
static int c_set_custom(st *s) {
  return lrt_pool_options_set_custom_thread_fns(s->opts, custom_create, NULL, custom_join);
}
static int create_pool(st *s) {
  lrt_pool *p = NULL;
  int rc = lrt_pool_create(s->opts, &p);
  if (rc != LRT_OK && p != NULL) return 101;
  if (rc == LRT_OK) s->pool = p;
  return rc;
}
static int c_pool_create(st *s) {
  lrt_pool_options_set_num_threads(s->opts, 4);
  return create_pool(s);
}
static int c_pool_create_custom(st *s) {
  lrt_pool_options_set_num_threads(s->opts, 4);
  lrt_pool_options_set_custom_thread_fns(s->opts, custom_create, NULL, custom_join);
  return create_pool(s);
}
static int c_pool_destroy(st *s) {
  lrt_pool_destroy(s->pool);
  s->pool = NULL;
  return LRT_OK;
}
static int c_parallel_for(st *s) {
  lrt_pool_try_parallel_for(s->pool, TOTAL, 1e6, range_body, NULL);
  return COVERED();
}
static int c_parallel_for_cost(st *s) {
  lrt_tensor_op_cost cost = {8.0, 8.0, 1e5};
  lrt_pool_try_parallel_for_cost(s->pool, TOTAL, &cost, range_body, NULL);
  return COVERED();
}
static int c_simple_parallel_for(st *s) {
  lrt_pool_try_simple_parallel_for(s->pool, TOTAL, index_body, NULL);
  return COVERED();
}
static int c_batch_parallel_for(st *s) {
  lrt_pool_try_batch_parallel_for(s->pool, TOTAL, index_body, NULL, 7);
  return COVERED();
}
static int c_kernel_parallel_for(st *s) {
  int rc = lrt_kernel_parallel_for(s->pool, kernel_body, TOTAL, 0, NULL);
  return rc != LRT_OK ? rc : COVERED();
}
static int c_partition_work(st *s) {
  (void)s;
  ptrdiff_t a = -1, b = -1;
  int rc = lrt_partition_work(1, 3, 10, &a, &b);
  return rc != LRT_OK ? rc : (a == 4 && b == 7 ? LRT_OK : 100);
}
static int c_schedule(st *s) {
  long before = atomic_load(&task_runs);
  lrt_pool_schedule(s->pool, task_body, NULL);
  /* Run or queued, never lost: destroy runs every queued task. */
  lrt_pool_destroy(s->pool);
  s->pool = NULL;
  return atomic_load(&task_runs) == before + 1 ? LRT_OK : 100;
}
static int c_section_begin(st *s) {
  lrt_pool_section *sec = NULL;
  int rc = lrt_pool_section_begin(s->pool, &sec);
  if (rc != LRT_OK && sec != NULL) return 101;
  if (rc == LRT_OK) s->section = sec;
  return rc;
}
static int c_section_end(st *s) {
  lrt_pool_section_end(s->section);
  s->section = NULL;
  return LRT_OK;
}
static int c_start_profiling(st *s) { return lrt_pool_start_profiling(s->pool); }
static int c_stop_profiling(st *s) {
  char *json = NULL;
  int rc = lrt_pool_stop_profiling(s->pool, &json);
  if (rc != LRT_OK && json != NULL) return 101;
  if (rc == LRT_OK) s->json = json;
  return rc;
}
static int c_string_free(st *s) {
  lrt_string_free(s->json);
  s->json = NULL;
  return LRT_OK;
}
static int c_pool_queries(st *s) {
  int ok = lrt_pool_degree_of_parallelism(s->pool) >= 4 && lrt_pool_should_parallelize(s->pool) &&
           lrt_pool_num_threads(s->pool) == 3 && lrt_pool_current_thread_id(s->pool) == -1;
  return ok ? LRT_OK : 100;
}
static int c_spinning(st *s) {
  lrt_pool_disable_spinning(s->pool);
  lrt_pool_enable_spinning(s->pool);
  return LRT_OK;
}
static int c_get_stats(st *s) {
  lrt_pool_stats stats;
  return lrt_pool_get_stats(s->pool, &stats);
}
static int c_segment_offsets(st *s) {
  (void)s;
  lrt_sm_segments seg;
  return lrt_sm_ring_segment_offsets(WINDOW, &seg);
}
static int c_segment_offsets_bad(st *s) {
  (void)s;
  lrt_sm_segments seg;
  return lrt_sm_ring_segment_offsets(3, &seg);
}
static int c_config_init(st *s) {
  (void)s;
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  return LRT_OK;
}
static lrt_maker_config maker_config(void) {
  lrt_maker_config cfg;
  lrt_maker_config_init(&cfg);
  cfg.task_window = WINDOW;
  return cfg;
}
static int c_maker_create(st *s) {
  lrt_maker_config cfg = maker_config();
  lrt_runtime_maker *m = NULL;
  int rc = lrt_runtime_maker_create(&cfg, &s->api, &m);
  if (rc != LRT_OK && m != NULL) return 101;
  if (rc == LRT_OK) s->maker = m;
  return rc;
}
static int c_maker_create_fresh(st *s) {
  lrt_maker_config cfg = maker_config();
  cfg.flags = LRT_MAKER_FRESH_MIRROR;
  lrt_runtime_maker *m = NULL;
  int rc = lrt_runtime_maker_create(&cfg, &s->api, &m);
  if (rc != LRT_OK && m != NULL) return 101;
  if (rc == LRT_OK) s->maker = m;
  return rc;
}
/* A borrowed device region: plain host memory of the test's own (the test
 * device's copies accept any region it allocated; this one is checked by
 * size only, as the maker never frees it). */
static int c_maker_create_borrowed(st *s) {
  lrt_maker_config cfg = maker_config();
  lrt_runtime_maker *m = NULL;
  int rc = lrt_runtime_maker_create_borrowed(&cfg, &s->api, s->borrowed, s->borrowed_len, &m);
  if (rc != LRT_OK && m != NULL) return 101;
  if (rc == LRT_OK) s->maker = m;
  return rc;
}
static int c_set_device_image(st *s) {
  return lrt_runtime_maker_set_device_image(s->maker, s->borrowed, s->borrowed_len);
}
static int c_set_api(st *s) { return lrt_runtime_maker_set_api(s->maker, &s->api); }
static int c_abort_run(st *s) { return lrt_runtime_maker_abort_run(s->maker); }
static int c_begin_run(st *s) {
  lrt_sm_header *h = NULL;
  return lrt_runtime_maker_begin_run(s->maker, &h);
}
static int c_claim_slot(st *s) {
  lrt_task_slot slot;
  return lrt_runtime_maker_claim_slot(s->maker, &slot);
}
static int c_claim_desc_init(st *s) {
  (void)s;
  lrt_claim_desc d;
  lrt_claim_desc_init(&d);
  return LRT_OK;
}
static int c_claim_slot_ex(st *s) {
  lrt_claim_desc d;
  lrt_claim_desc_init(&d);
  lrt_task_slot slot;
  return lrt_runtime_maker_claim_slot_ex(s->maker, &d, &slot);
}
static int c_upload(st *s) {
  lrt_upload_report rep;
  return lrt_runtime_maker_upload(s->maker, &rep);
}
static int c_read_status(st *s) {
  int32_t status = 7;
  return lrt_runtime_maker_read_status(s->maker, &status);
}
static int c_segments(st *s) {
  lrt_sm_segments seg;
  return lrt_runtime_maker_segments(s->maker, &seg);
}
static int c_device_image(st *s) { return lrt_runtime_maker_device_image(s->maker) ? LRT_OK : 100; }
static int c_maker_create_v2(st *s) {
  lrt_maker_config cfg = maker_config();
  cfg.layout = LRT_LAYOUT_V2;
  lrt_runtime_maker *m = NULL;
  int rc = lrt_runtime_maker_create(&cfg, &s->api, &m);
  if (rc != LRT_OK && m != NULL) return 101;
  if (rc == LRT_OK) {
    s->maker = m;
    s->v2 = 1;
  }
  return rc;
}
static int c_v2_ring_segments(st *s) {
  (void)s;
  lrt_v2_segments seg;
  return lrt_v2_ring_segment_offsets(WINDOW, &seg);
}
static int c_v2_image_segments(st *s) {
  (void)s;
  lrt_v2_segments seg;
  return lrt_v2_image_segments(4, 16, 2, 8, &seg);
}
static int c_v2_begin_run(st *s) {
  lrt_v2_sm_header *h = NULL;
  return lrt_runtime_maker_v2_begin_run(s->maker, &h);
}
static int c_v2_claim_desc_init(st *s) {
  (void)s;
  lrt_v2_claim_desc d;
  lrt_v2_claim_desc_init(&d);
  return LRT_OK;
}
static int c_v2_claim_slot(st *s) {
  lrt_v2_claim_desc d;
  lrt_v2_claim_desc_init(&d);
  lrt_v2_task_slot slot;
  return lrt_runtime_maker_v2_claim_slot(s->maker, &d, &slot);
}
static int c_v2_maker_segments(st *s) {
  lrt_v2_segments seg;
  return lrt_runtime_maker_v2_image_segments(s->maker, &seg);
}
static int c_v2_upload(st *s) {
  lrt_upload_report rep;
  return lrt_runtime_maker_v2_upload(s->maker, NULL, 0, NULL, 0, &rep);
}
static int c_maker_create_v2_regionless(st *s) {
  lrt_maker_config cfg = maker_config();
  cfg.layout = LRT_LAYOUT_V2;
  cfg.policy = LRT_UPLOAD_AUTO;
  lrt_runtime_maker *m = NULL;
  int rc = lrt_runtime_maker_create_borrowed(&cfg, &s->api, NULL, 0, &m);
  if (rc != LRT_OK && m != NULL) return 101;
  if (rc == LRT_OK) {
    s->maker = m;
    s->v2 = 1;
  }
  return rc;
}
/* A run the host writes itself (one task, no arguments), shipped into the
   lent region: v2_begin_run, v2_set_pool_use and v2_upload_frame. */
static int c_v2_host_written(st *s) {
  lrt_v2_sm_header *h = NULL;
  int rc = lrt_runtime_maker_v2_begin_run(s->maker, &h);
  if (rc != LRT_OK) return rc;
  if (!test_v2_host_task(h, WINDOW)) return 102;
  rc = lrt_runtime_maker_v2_set_pool_use(s->maker, 0, 0, 0);
  if (rc != LRT_OK) return rc;
  unsigned char *image = (unsigned char *)(((uintptr_t)s->borrowed + 64 + 63) & ~(uintptr_t)63);
  static const unsigned char before[64];
  lrt_v2_frame f = {image, (uint64_t)((unsigned char *)s->borrowed + s->borrowed_len - image), before,
                    sizeof before, NULL, 0};
  lrt_upload_report rep;
  return lrt_runtime_maker_v2_upload_frame(s->maker, &f, &rep);
}
static int c_maker_destroy(st *s) {
  lrt_runtime_maker_destroy(s->maker);
  s->maker = NULL;
  return test_device_live(&s->dev) == (s->borrowed ? 1 : 0) ? LRT_OK : 100;
}

static const scenario scenarios[] = {
    {"lrt_status_str", 0, LRT_OK, c_status_str},
    {"lrt_version", 0, LRT_OK, c_version},
    {"lrt_last_error", 0, LRT_OK, c_last_error},
    {"lrt_host_api_host", 0, LRT_OK, c_host_api_host},
    {"lrt_host_api_release", 0, LRT_OK, c_host_api_host},
    {"lrt_host_api_cuda", 0, ANY_STATUS, c_host_api_cuda},
    {"lrt_set_log_callback", 0, LRT_OK, c_set_log_callback},
    {"lrt_pool_options_create", 0, LRT_OK, c_options_create},
    {"lrt_pool_options_destroy", NEED_OPTS, LRT_OK, c_options_destroy},
    {"lrt_pool_options_set_config", NEED_OPTS, LRT_OK, c_set_config},
    {"lrt_pool_options_set_config", NEED_OPTS, LRT_ERR_INVALID_ARGUMENT, c_set_config_unknown},
    {"lrt_pool_options_set_config", NEED_OPTS, LRT_OK, c_set_config_affinity},
    {"lrt_pool_options_set_num_threads", NEED_OPTS, LRT_OK, c_set_num_threads},
    {"lrt_pool_options_set_spin_control", NEED_OPTS, LRT_ERR_INVALID_ARGUMENT, c_set_spin_control},
    {"lrt_pool_options_set_spin_duration_us", NEED_OPTS, LRT_OK, c_set_spin_duration},
    {"lrt_pool_options_set_spin_backoff_max", NEED_OPTS, LRT_OK, c_set_backoff},
    {"lrt_pool_options_set_dynamic_block_base", NEED_OPTS, LRT_OK, c_set_block_base},
    {"lrt_pool_options_set_affinity", NEED_OPTS, LRT_OK, c_set_affinity},
    {"lrt_pool_options_set_denormal_as_zero", NEED_OPTS, LRT_OK, c_set_denormal},
    {"lrt_pool_options_set_name", NEED_OPTS, LRT_OK, c_set_name},
    {"lrt_pool_options_set_stack_size", NEED_OPTS, LRT_OK, c_set_stack},
    {"lrt_pool_options_set_custom_thread_fns", NEED_OPTS, LRT_OK, c_set_custom},
    {"lrt_pool_create", NEED_OPTS, LRT_OK, c_pool_create},
    {"lrt_pool_create", NEED_OPTS, LRT_OK, c_pool_create_custom},
    {"lrt_pool_destroy", NEED_POOL, LRT_OK, c_pool_destroy},
    {"lrt_pool_try_parallel_for", NEED_POOL, LRT_OK, c_parallel_for},
    {"lrt_pool_try_parallel_for_cost", NEED_POOL, LRT_OK, c_parallel_for_cost},
    {"lrt_pool_try_simple_parallel_for", NEED_POOL, LRT_OK, c_simple_parallel_for},
    {"lrt_pool_try_batch_parallel_for", NEED_POOL, LRT_OK, c_batch_parallel_for},
    {"lrt_kernel_parallel_for", NEED_POOL, LRT_OK, c_kernel_parallel_for},
    {"lrt_partition_work", 0, LRT_OK, c_partition_work},
    {"lrt_pool_schedule", NEED_POOL, LRT_OK, c_schedule},
    {"lrt_pool_section_begin", NEED_POOL, LRT_OK, c_section_begin},
    {"lrt_pool_section_end", NEED_SECTION, LRT_OK, c_section_end},
    {"lrt_pool_start_profiling", NEED_POOL, LRT_OK, c_start_profiling},
    {"lrt_pool_stop_profiling", NEED_PROFILING, LRT_OK, c_stop_profiling},
    {"lrt_string_free", NEED_PROFILING, LRT_OK, c_string_free},
    {"lrt_pool_degree_of_parallelism", NEED_POOL, LRT_OK, c_pool_queries},
    {"lrt_pool_should_parallelize", NEED_POOL, LRT_OK, c_pool_queries},
    {"lrt_pool_num_threads", NEED_POOL, LRT_OK, c_pool_queries},
    {"lrt_pool_current_thread_id", NEED_POOL, LRT_OK, c_pool_queries},
    {"lrt_pool_enable_spinning", NEED_POOL, LRT_OK, c_spinning},
    {"lrt_pool_disable_spinning", NEED_POOL, LRT_OK, c_spinning},
    {"lrt_pool_get_stats", NEED_POOL, LRT_OK, c_get_stats},
    {"lrt_sm_ring_segment_offsets", 0, LRT_OK, c_segment_offsets},
    {"lrt_sm_ring_segment_offsets", 0, LRT_ERR_INVALID_ARGUMENT, c_segment_offsets_bad},
    {"lrt_maker_config_init", 0, LRT_OK, c_config_init},
    {"lrt_runtime_maker_create", 0, LRT_OK, c_maker_create},
    {"lrt_runtime_maker_create", 0, LRT_OK, c_maker_create_fresh},
    {"lrt_runtime_maker_create_borrowed", NEED_REGION, LRT_OK, c_maker_create_borrowed},
    {"lrt_runtime_maker_set_device_image", NEED_MAKER | NEED_REGION, LRT_OK, c_set_device_image},
    {"lrt_runtime_maker_set_api", NEED_MAKER, LRT_OK, c_set_api},
    {"lrt_runtime_maker_abort_run", NEED_RUN, LRT_OK, c_abort_run},
    {"lrt_runtime_maker_begin_run", NEED_MAKER, LRT_OK, c_begin_run},
    {"lrt_runtime_maker_claim_slot", NEED_RUN, LRT_OK, c_claim_slot},
    {"lrt_claim_desc_init", 0, LRT_OK, c_claim_desc_init},
    {"lrt_runtime_maker_claim_slot_ex", NEED_RUN, LRT_OK, c_claim_slot_ex},
    {"lrt_runtime_maker_upload", NEED_RUN, LRT_OK, c_upload},
    {"lrt_runtime_maker_read_status", NEED_UPLOAD, LRT_OK, c_read_status},
    {"lrt_runtime_maker_segments", NEED_MAKER, LRT_OK, c_segments},
    {"lrt_runtime_maker_device_image", NEED_MAKER, LRT_OK, c_device_image},
    {"lrt_runtime_maker_destroy", NEED_MAKER, LRT_OK, c_maker_destroy},
    {"lrt_v2_ring_segment_offsets", 0, LRT_OK, c_v2_ring_segments},
    {"lrt_v2_image_segments", 0, LRT_OK, c_v2_image_segments},
    {"lrt_runtime_maker_create", 0, LRT_OK, c_maker_create_v2},
    {"lrt_runtime_maker_v2_begin_run", NEED_V2_MAKER, LRT_OK, c_v2_begin_run},
    {"lrt_v2_claim_desc_init", 0, LRT_OK, c_v2_claim_desc_init},
    {"lrt_runtime_maker_v2_claim_slot", NEED_V2_RUN, LRT_OK, c_v2_claim_slot},
    {"lrt_runtime_maker_v2_image_segments", NEED_V2_RUN, LRT_OK, c_v2_maker_segments},
    {"lrt_runtime_maker_v2_upload", NEED_V2_RUN, LRT_OK, c_v2_upload},
    {"lrt_runtime_maker_create_borrowed", NEED_REGION, LRT_OK, c_maker_create_v2_regionless},
    {"lrt_runtime_maker_v2_set_pool_use", NEED_V2_MAKER | NEED_REGION, LRT_OK, c_v2_host_written},
    {"lrt_runtime_maker_v2_upload_frame", NEED_V2_MAKER | NEED_REGION, LRT_OK, c_v2_host_written},
    {"lrt_runtime_maker_destroy", NEED_V2_MAKER, LRT_OK, c_maker_destroy},
};
#define NSCEN (int)(sizeof scenarios / sizeof scenarios[0])

/* ---- one child ---------------------------------------------------------- */
typedef struct job {
  const scenario *sc;
  long headroom;    /* allocations that succeed (count mode) */
  long as_headroom; /* >= 0: address-space mode, bytes above the current size */
} job;

/* The process's address-space size now, in bytes (/proc/self/statm). */
static long vm_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0;
  if (f) {
    if (fscanf(f, "%ld", &pages) != 1) pages = 0;
    fclose(f);
  }
  return pages * sysconf(_SC_PAGESIZE);
}

#define FAIL_CHILD(code, ...)         \
  do {                                \
    fprintf(stderr, __VA_ARGS__);     \
    fputc('\n', stderr);              \
    return (code);                    \
  } while (0)

static int setup(st *s, int needs) {
  memset(s, 0, sizeof *s);
  s->api = test_device_api(&s->dev);
  if (needs & (NEED_OPTS | NEED_POOL | NEED_PROFILING | NEED_SECTION)) {
    if (lrt_pool_options_create(&s->opts) != LRT_OK) return 0;
  }
  if (needs & (NEED_POOL | NEED_PROFILING | NEED_SECTION)) {
    lrt_pool_options_set_num_threads(s->opts, 4);
    if (lrt_pool_create(s->opts, &s->pool) != LRT_OK || !s->pool) return 0;
  }
  if (needs & NEED_PROFILING) {
    if (lrt_pool_start_profiling(s->pool) != LRT_OK) return 0;
    lrt_pool_try_parallel_for(s->pool, TOTAL, 1e6, range_body, NULL);
    if (lrt_pool_stop_profiling(s->pool, &s->json) != LRT_OK) return 0;
    if (lrt_pool_start_profiling(s->pool) != LRT_OK) return 0;
  }
  if (needs & NEED_SECTION) {
    if (lrt_pool_section_begin(s->pool, &s->section) != LRT_OK) return 0;
  }
  if (needs & NEED_REGION) {
    lrt_sm_segments seg;
    if (lrt_sm_ring_segment_offsets(WINDOW, &seg) != LRT_OK) return 0;
    s->borrowed_len = (size_t)seg.end;
    s->borrowed = dev_malloc(&s->dev, s->borrowed_len);
    if (!s->borrowed) return 0;
  }
  if (needs & (NEED_MAKER | NEED_RUN | NEED_UPLOAD)) {
    lrt_maker_config cfg = maker_config();
    if (lrt_runtime_maker_create(&cfg, &s->api, &s->maker) != LRT_OK) return 0;
  }
  if (needs & (NEED_RUN | NEED_UPLOAD)) {
    lrt_sm_header *h = NULL;
    lrt_task_slot slot;
    if (lrt_runtime_maker_begin_run(s->maker, &h) != LRT_OK) return 0;
    if (lrt_runtime_maker_claim_slot(s->maker, &slot) != LRT_OK) return 0;
  }
  if (needs & NEED_UPLOAD) {
    if (lrt_runtime_maker_upload(s->maker, NULL) != LRT_OK) return 0;
  }
  if (needs & (NEED_V2_MAKER | NEED_V2_RUN)) {
    lrt_maker_config cfg = maker_config();
    cfg.layout = LRT_LAYOUT_V2;
    if (lrt_runtime_maker_create(&cfg, &s->api, &s->maker) != LRT_OK) return 0;
    s->v2 = 1;
  }
  if (needs & NEED_V2_RUN) {
    lrt_v2_sm_header *h = NULL;
    lrt_v2_claim_desc d;
    lrt_v2_task_slot slot;
    lrt_v2_claim_desc_init(&d);
    if (lrt_runtime_maker_v2_begin_run(s->maker, &h) != LRT_OK) return 0;
    if (lrt_runtime_maker_v2_claim_slot(s->maker, &d, &slot) != LRT_OK) return 0;
  }
  return 1;
}

/* The objects work (with memory again) and are destroyed; 0 if not. */
static int use_and_destroy(st *s) {
  int ok = 1;
  if (s->section) lrt_pool_section_end(s->section);
  if (s->json) lrt_string_free(s->json);
  if (s->opts) {
    ok &= lrt_pool_options_set_num_threads(s->opts, 2) == LRT_OK;
    lrt_pool_options_destroy(s->opts);
  }
  if (s->pool) {
    reset_seen();
    lrt_pool_try_parallel_for(s->pool, TOTAL, 1e6, range_body, NULL);
    ok &= all_seen_once();
    lrt_pool_destroy(s->pool);
  }
  if (s->maker && s->v2) {
    lrt_v2_sm_header *h = NULL;
    lrt_v2_claim_desc d;
    lrt_v2_task_slot slot;
    lrt_upload_report rep;
    memset(&rep, 0, sizeof rep);
    lrt_v2_claim_desc_init(&d);
    ok &= lrt_runtime_maker_v2_begin_run(s->maker, &h) == LRT_OK;
    ok &= lrt_runtime_maker_v2_claim_slot(s->maker, &d, &slot) == LRT_OK;
    if (lrt_runtime_maker_device_image(s->maker) != NULL) {
      ok &= lrt_runtime_maker_v2_upload(s->maker, NULL, 0, NULL, 0, &rep) == LRT_OK;
    } else { /* a maker without a region: into the lent one */
      unsigned char *image = (unsigned char *)(((uintptr_t)s->borrowed + 63) & ~(uintptr_t)63);
      lrt_v2_frame f = {image, (uint64_t)((unsigned char *)s->borrowed + s->borrowed_len - image), NULL, 0,
                        NULL, 0};
      ok &= s->borrowed != NULL && lrt_runtime_maker_v2_upload_frame(s->maker, &f, &rep) == LRT_OK;
    }
    ok &= rep.total_tasks == 1;
    lrt_runtime_maker_destroy(s->maker);
  } else if (s->maker) {
    lrt_sm_header *h = NULL;
    lrt_task_slot slot;
    lrt_upload_report rep;
    ok &= lrt_runtime_maker_begin_run(s->maker, &h) == LRT_OK;
    ok &= lrt_runtime_maker_claim_slot(s->maker, &slot) == LRT_OK;
    ok &= lrt_runtime_maker_upload(s->maker, &rep) == LRT_OK && rep.total_tasks == 1;
    lrt_runtime_maker_destroy(s->maker);
  }
  if (s->borrowed) dev_free(&s->dev, s->borrowed);
  ok &= test_device_live(&s->dev) == 0 && s->dev.violations == 0;
  return ok;
}

/* Exit codes: 0 the call met an allocation failure and all was well; 3 it
 * met none (the sweep of this entry point is complete); else a failure,
 * described on stderr. */
static int child_main(void *ctx) {
  const job *j = (const job *)ctx;
  const scenario *sc = j->sc;
  st s;
  if (!setup(&s, sc->needs)) FAIL_CHILD(20, "%s: setup failed", sc->name);
  reset_seen();
  struct rlimit unlimited, limited;
  getrlimit(RLIMIT_AS, &unlimited);
  long failed = 1;
  int rc;
  if (j->as_headroom >= 0) {
    /* Address-space mode: every mapping (heap growth, thread stacks,
     * mirrors) beyond the headroom is refused by the kernel. */
    limited = unlimited;
    limited.rlim_cur = (rlim_t)(vm_bytes() + j->as_headroom);
    if (setrlimit(RLIMIT_AS, &limited) != 0) FAIL_CHILD(26, "%s: setrlimit", sc->name);
    rc = sc->call(&s);
    setrlimit(RLIMIT_AS, &unlimited);
  } else {
    failmalloc_arm(j->headroom);
    rc = sc->call(&s);
    failed = failmalloc_failed();
    failmalloc_disarm();
  }
  char msg[LRT_LAST_ERROR_BYTES];
  lrt_last_error(msg, sizeof msg);
  if (rc >= 100) FAIL_CHILD(21, "%s: wrong effect (code %d)", sc->name, rc);
  if (sc->expected != ANY_STATUS && rc != sc->expected && rc != LRT_ERR_NO_MEMORY)
    FAIL_CHILD(22, "%s: returned %s", sc->name, lrt_status_str(rc));
  if (rc == LRT_ERR_NO_MEMORY && !(strstr(msg, "memory") || strstr(msg, "thread") || strstr(msg, "alloc")))
    FAIL_CHILD(23, "%s: NO_MEMORY with message \"%s\"", sc->name, msg);
  if (rc != LRT_OK && strncmp(msg, sc->name, strlen(sc->name)) != 0)
    FAIL_CHILD(24, "%s: %s with message \"%s\"", sc->name, lrt_status_str(rc), msg);
  if (!use_and_destroy(&s)) FAIL_CHILD(25, "%s: objects unusable afterwards", sc->name);
  /* Report how the call ended through the exit code's upper bits. */
  int ended = rc == LRT_ERR_NO_MEMORY ? 1 : 0;
  return (failed == 0 ? 3 : 0) | (ended << 3);
}

int main(void) {
  unsetenv("LEANRT_LOG");
  if (!failmalloc_active()) {
    fprintf(stderr,
            "the failing allocator is not in use (a sanitizer or valgrind replaces malloc); "
            "this test cannot run here\n");
    return 1;
  }
  /* OOM_SWEEP_CASE=i OOM_SWEEP_HEADROOM=h: one case, in this process (for
   * a debugger); prints the child's exit code. */
  const char *one = getenv("OOM_SWEEP_CASE");
  if (one) {
    const char *hr = getenv("OOM_SWEEP_HEADROOM");
    job j = {&scenarios[atoi(one) % NSCEN], hr ? atol(hr) : 0, -1};
    int code = child_main(&j);
    printf("%s headroom %ld: exit %d\n", j.sc->name, j.headroom, code);
    return 0;
  }
  long children = 0, aborts = 0, nomem = 0, ok_after_failure = 0;
  long max_needed = 0;
  for (int i = 0; i < NSCEN; i++) {
    const scenario *sc = &scenarios[i];
    long h = 0;
    for (;; h++) {
      if (h > MAX_HEADROOM) {
        fprintf(stderr, "%s (#%d): still meets failures at headroom %d\n", sc->name, i,
                MAX_HEADROOM);
        check_failures_++;
        break;
      }
      job j = {sc, h, -1};
      child_result r = run_child_ctx(child_main, &j, 30);
      children++;
      if (!r.exited || r.hung) {
        aborts++;
        fprintf(stderr, "%s (#%d) headroom %ld: %s %d\n%s", sc->name, i, h,
                r.hung ? "hung, killed" : "killed by signal", r.status, r.err);
        check_failures_++;
        break;
      }
      int code = r.status & 7;
      if ((code != 0 && code != 3) || r.err[0] != 0) {
        fprintf(stderr, "%s (#%d) headroom %ld: exit %d, printed:\n%s\n", sc->name, i, h,
                r.status, r.err);
        check_failures_++;
        break;
      }
      if (code == 3) break;
      if (r.status & 8)
        nomem++;
      else
        ok_after_failure++;
    }
    if (h > max_needed) max_needed = h;
  }
  printf("oom sweep: %d entry-point cases x headroom 0..(first that meets no failure, at most %ld): "
         "%ld children, %ld aborts or hangs, %ld LRT_ERR_NO_MEMORY, %ld completed despite "
         "failed allocations\n",
         NSCEN, max_needed, children, aborts, nomem, ok_after_failure);
  /* The same cases under an address-space limit a little above what the
   * child already uses (RLIMIT_AS: the kernel refuses new mappings), for
   * several headroom sizes. */
  static const long as_headrooms[] = {0, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20};
  const int nas = (int)(sizeof as_headrooms / sizeof as_headrooms[0]);
  long as_children = 0, as_aborts = 0, as_nomem = 0;
  for (int i = 0; i < NSCEN; i++) {
    for (int k = 0; k < nas; k++) {
      job j = {&scenarios[i], 0, as_headrooms[k]};
      child_result r = run_child_ctx(child_main, &j, 30);
      as_children++;
      if (!r.exited || r.hung || ((r.status & 7) != 0 && (r.status & 7) != 3) || r.err[0]) {
        if (!r.exited || r.hung) as_aborts++;
        fprintf(stderr, "%s (#%d) RLIMIT_AS +%ld bytes: %s %d\n%s\n", scenarios[i].name, i,
                as_headrooms[k], !r.exited ? "killed by signal" : r.hung ? "hung" : "exit",
                r.status, r.err);
        check_failures_++;
        continue;
      }
      if (r.status & 8) as_nomem++;
    }
  }
  printf("rlimit sweep: %d entry-point cases x RLIMIT_AS headroom {0, 64 KiB, 256 KiB, 1 MiB, "
         "4 MiB, 16 MiB}: %ld children, %ld aborts or hangs, %ld LRT_ERR_NO_MEMORY\n",
         NSCEN, as_children, as_aborts, as_nomem);
  return check_result();
}
