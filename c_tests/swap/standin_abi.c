/* Plain-C stand-in for the boundary functions (the library a runtime had
 * before leanrt): fixed strings and a per-thread message. */
#include <stdio.h>
#include <string.h>

#include "leanrt.h"

static _Thread_local char standin_last_error[256];

void standin_set_error(const char *msg) {
  snprintf(standin_last_error, sizeof standin_last_error, "%s", msg);
}

const char *lrt_version(void) { return "standin 0.0.0"; }

const char *lrt_status_str(int status) {
  static const char *const names[] = {
      "LRT_OK: success",
      "LRT_ERR_INVALID_ARGUMENT: invalid argument",
      "LRT_ERR_OUT_OF_RANGE: value out of range",
      "LRT_ERR_NO_MEMORY: out of memory",
      "LRT_ERR_DEVICE: device operation failed",
      "LRT_ERR_UNAVAILABLE: backend unavailable",
      "LRT_ERR_STATE: call out of order",
      "LRT_ERR_INTERNAL: internal error"};
  return (status >= 0 && status < 8) ? names[status] : "unknown status";
}

size_t lrt_last_error(char *buf, size_t len) {
  size_t n = strlen(standin_last_error);
  if (buf && len) snprintf(buf, len, "%s", standin_last_error);
  return n;
}
