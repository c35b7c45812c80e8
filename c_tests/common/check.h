/* Minimal assertions for the C/C++ tests. A failed check prints where and
 * why and marks the test failed; the test ends with `return check_result();`.
 * Exit code 77 means "skipped" (SKIP prints the reason). */
#ifndef LEANRT_CHECK_H
#define LEANRT_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leanrt.h"

static int check_failures_ = 0;

/* True if this thread's last error message contains `needle`; says what it
 * was otherwise. */
static inline int error_contains(const char *needle) {
  char buf[LRT_LAST_ERROR_BYTES];
  lrt_last_error(buf, sizeof buf);
  if (strstr(buf, needle) != NULL) return 1;
  fprintf(stderr, "lrt_last_error \"%s\" lacks \"%s\"\n", buf, needle);
  return 0;
}

/* error_contains for the decimal digits of `value` (a limit the message
 * names). */
static inline int error_contains_u64(uint64_t value) {
  char digits[24];
  snprintf(digits, sizeof digits, "%" PRIu64, value);
  return error_contains(digits);
}

static inline void check_fail_(const char *file, int line, const char *what) {
  char msg[LRT_LAST_ERROR_BYTES];
  lrt_last_error(msg, sizeof msg);
  fprintf(stderr, "%s:%d: CHECK failed: %s (lrt_last_error: \"%s\")\n", file, line, what, msg);
  check_failures_++;
}

#define CHECK(cond)                                 \
  do {                                              \
    if (!(cond)) check_fail_(__FILE__, __LINE__, #cond); \
  } while (0)

#define CHECK_STATUS(call, expected)                                                   \
  do {                                                                                 \
    int got_ = (int)(call);                                                            \
    int want_ = (int)(expected);                                                       \
    if (got_ != want_) {                                                               \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #call, \
              lrt_status_str(got_), lrt_status_str(want_));                            \
      check_fail_(__FILE__, __LINE__, #call);                                          \
    }                                                                                  \
  } while (0)

#define CHECK_EQ_U64(a, b)                                                               \
  do {                                                                                   \
    uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                     \
    if (a_ != b_) {                                                                      \
      fprintf(stderr, "%s:%d: %s == %s: %" PRIu64 " != %" PRIu64 "\n", __FILE__, __LINE__, \
              #a, #b, a_, b_);                                                           \
      check_fail_(__FILE__, __LINE__, #a " == " #b);                                     \
    }                                                                                    \
  } while (0)

#define SKIP(reason)                          \
  do {                                        \
    printf("skipped: %s\n", (reason));        \
    fflush(stdout);                           \
    exit(77);                                 \
  } while (0)

static inline int check_result(void) {
  if (check_failures_) fprintf(stderr, "%d check(s) failed\n", check_failures_);
  return check_failures_ ? 1 : 0;
}

#endif
