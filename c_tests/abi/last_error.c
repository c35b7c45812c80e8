/* lrt_last_error: this thread's message for its last failed call. */
#include <pthread.h>
#include <string.h>

#include "check.h"

static void *other_thread(void *arg) {
  char buf[256];
  /* A thread that never failed has an empty message. */
  size_t n = lrt_last_error(buf, sizeof buf);
  *(int *)arg = (n == 0 && buf[0] == '\0');
  return NULL;
}

int main(void) {
  char buf[256];
  memset(buf, 'x', sizeof buf);
  CHECK_EQ_U64(lrt_last_error(buf, sizeof buf), 0);
  CHECK(buf[0] == '\0');

  CHECK_STATUS(lrt_host_api_host(NULL), LRT_ERR_INVALID_ARGUMENT);
  size_t n = lrt_last_error(buf, sizeof buf);
  CHECK(n == strlen(buf));
  CHECK(error_contains("lrt_host_api_host"));
  CHECK(error_contains("NULL"));

  /* Asking for the length only, then truncation like snprintf. */
  CHECK_EQ_U64(lrt_last_error(NULL, 0), n);
  char small[8];
  CHECK_EQ_U64(lrt_last_error(small, sizeof small), n);
  CHECK(strlen(small) == sizeof small - 1);
  CHECK(strncmp(small, buf, sizeof small - 1) == 0);

  /* A successful call does not erase the last failure's message. */
  lrt_host_api api;
  CHECK_STATUS(lrt_host_api_host(&api), LRT_OK);
  lrt_host_api_release(&api);
  char again[256];
  lrt_last_error(again, sizeof again);
  CHECK(strcmp(again, buf) == 0);

  /* The message is per thread. */
  pthread_t t;
  int clean = 0;
  CHECK(pthread_create(&t, NULL, other_thread, &clean) == 0);
  pthread_join(t, NULL);
  CHECK(clean);

  /* Releasing NULL is a no-op, not a failure. */
  lrt_host_api_release(NULL);
  return check_result();
}
