/* Hostile sizes through the string arguments: a 1 MiB affinity string (by
 * lrt_pool_options_set_affinity and by the config key) and a 1 MiB name,
 * key or value are rejected in under 10 ms with under 1 MiB of extra
 * memory, with a message naming LRT_MAX_STRING_BYTES, nothing printed, and
 * the options unchanged and usable. At the limits: an affinity string of
 * LRT_POOL_MAX_THREADS - 1 entries of "1-1024" is parsed (ranges are not
 * expanded), one more entry is refused; a name of exactly
 * LRT_MAX_STRING_BYTES bytes is accepted. Each case runs in a child whose
 * peak resident memory is compared before and after. Under valgrind and
 * the sanitizers (LEANRT_TEST_SMALL=1) the time and memory bounds are not
 * checked (their own overhead swamps them); status and message still are. */
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "check.h"
#include "child.h"

#define MIB (1024 * 1024)

static char *huge;
static int measure = 1;

static long peak_kib(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

typedef struct hcase {
  const char *what;
  int (*call)(lrt_pool_options *o, const char *s);
  char fill;      /* the string: repeated "1-1024;" (fill 'a') or one byte */
  size_t len;     /* bytes */
  int want;       /* status */
  const char *msg; /* expected in the message (when not OK) */
} hcase;

static int set_affinity(lrt_pool_options *o, const char *s) { return lrt_pool_options_set_affinity(o, s); }
static int set_affinity_key(lrt_pool_options *o, const char *s) {
  return lrt_pool_options_set_config(o, LRT_POOL_KEY_THREAD_AFFINITIES, s);
}
static int set_name(lrt_pool_options *o, const char *s) { return lrt_pool_options_set_name(o, s); }
static int set_key(lrt_pool_options *o, const char *s) { return lrt_pool_options_set_config(o, s, "1"); }
static int set_value(lrt_pool_options *o, const char *s) {
  return lrt_pool_options_set_config(o, LRT_POOL_KEY_SPIN_DURATION_US, s);
}

/* n entries of "1-1024" joined by ';'. */
static size_t affinity_entries(char *buf, int n) {
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    memcpy(buf + at, i ? ";1-1024" : "1-1024", i ? 7 : 6);
    at += i ? 7 : 6;
  }
  buf[at] = 0;
  return at;
}

static const hcase cases[] = {
    {"set_affinity 1 MiB", set_affinity, 'a', MIB, LRT_ERR_INVALID_ARGUMENT, "LRT_MAX_STRING_BYTES"},
    {"set_config affinity 1 MiB", set_affinity_key, 'a', MIB, LRT_ERR_INVALID_ARGUMENT, "LRT_MAX_STRING_BYTES"},
    {"set_name 1 MiB", set_name, 'n', MIB, LRT_ERR_INVALID_ARGUMENT, "LRT_MAX_STRING_BYTES"},
    {"set_config key 1 MiB", set_key, 'k', MIB, LRT_ERR_INVALID_ARGUMENT, "LRT_MAX_STRING_BYTES"},
    {"set_config value 1 MiB", set_value, '9', MIB, LRT_ERR_INVALID_ARGUMENT, "LRT_MAX_STRING_BYTES"},
    {"set_name at the limit", set_name, 'n', LRT_MAX_STRING_BYTES, LRT_OK, NULL},
    {"set_name over the limit", set_name, 'n', LRT_MAX_STRING_BYTES + 1, LRT_ERR_INVALID_ARGUMENT,
     "LRT_MAX_STRING_BYTES"},
    {"affinity of the most entries", set_affinity, 'e', LRT_POOL_MAX_THREADS - 1, LRT_OK, NULL},
    {"affinity of one entry more", set_affinity, 'e', LRT_POOL_MAX_THREADS, LRT_ERR_INVALID_ARGUMENT,
     "at most 1023"},
    {"set_value of a bad 60 KiB number", set_value, '9', 60 * 1024, LRT_ERR_INVALID_ARGUMENT,
     "out of range"},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static int run_case(void *ctx) {
  const hcase *c = (const hcase *)ctx;
  if (c->fill == 'a') {
    /* "1-1024;1-1024;..." up to len bytes */
    size_t at = 0;
    while (at + 7 < c->len) {
      memcpy(huge + at, "1-1024;", 7);
      at += 7;
    }
    memset(huge + at, '1', c->len - at);
    huge[c->len] = 0;
  } else if (c->fill == 'e') {
    affinity_entries(huge, (int)c->len);
  } else {
    memset(huge, c->fill, c->len);
    huge[c->len] = 0;
  }
  lrt_pool_options *o = NULL;
  if (lrt_pool_options_create(&o) != LRT_OK) return 10;
  /* Fault the options in and settle the peak before measuring. */
  lrt_pool_options_set_num_threads(o, 2);
  long before = peak_kib();
  double t0 = now_ms();
  int rc = c->call(o, huge);
  double ms = now_ms() - t0;
  long grew = peak_kib() - before;
  if (rc != c->want) {
    fprintf(stderr, "%s: %s, expected %s\n", c->what, lrt_status_str(rc), lrt_status_str(c->want));
    return 11;
  }
  if (c->msg && !error_contains(c->msg)) return 12;
  if (measure && rc != LRT_OK && ms >= 10.0) {
    fprintf(stderr, "%s: rejected in %.2f ms (limit 10)\n", c->what, ms);
    return 13;
  }
  if (measure && rc != LRT_OK && grew >= 1024) {
    fprintf(stderr, "%s: peak resident memory grew by %ld KiB (limit 1024)\n", c->what, grew);
    return 14;
  }
  /* Still usable, then destroyed. */
  if (lrt_pool_options_set_num_threads(o, 3) != LRT_OK) return 15;
  lrt_pool *p = NULL;
  if (lrt_pool_create(o, &p) != LRT_OK && c->fill != 'e') return 16;
  lrt_pool_destroy(p);
  lrt_pool_options_destroy(o);
  printf("%-36s %-26s %6.3f ms, peak +%ld KiB\n", c->what, lrt_status_str(rc), ms, grew);
  return 0;
}

int main(void) {
  unsetenv("LEANRT_LOG");
  const char *small = getenv("LEANRT_TEST_SMALL");
  measure = !(small && small[0] == '1');
  if (!measure) printf("LEANRT_TEST_SMALL=1: time and memory bounds not checked\n");
  huge = (char *)malloc(2 * MIB);
  if (!huge) return 2;
  for (int i = 0; i < NCASES; i++) {
    child_result r = run_child_ctx(run_case, (void *)&cases[i], 30);
    if (!r.exited || r.status != 0 || r.err[0]) {
      fprintf(stderr, "%s: %s %d\n%s\n", cases[i].what, r.exited ? "exit" : "signal", r.status,
              r.err);
      check_failures_++;
    }
  }
  fflush(stdout);
  free(huge);
  return check_result();
}
