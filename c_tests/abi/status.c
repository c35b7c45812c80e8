/* lrt_status_str covers every status with a distinct, non-NULL string and
 * answers any other integer; lrt_version has the documented form. */
#include <string.h>

#include "check.h"

int main(void) {
  const lrt_status all[] = {LRT_OK,          LRT_ERR_INVALID_ARGUMENT, LRT_ERR_OUT_OF_RANGE,
                            LRT_ERR_NO_MEMORY, LRT_ERR_DEVICE,         LRT_ERR_UNAVAILABLE,
                            LRT_ERR_STATE,   LRT_ERR_INTERNAL};
  const char *names[] = {"LRT_OK",         "LRT_ERR_INVALID_ARGUMENT", "LRT_ERR_OUT_OF_RANGE",
                         "LRT_ERR_NO_MEMORY", "LRT_ERR_DEVICE",        "LRT_ERR_UNAVAILABLE",
                         "LRT_ERR_STATE",  "LRT_ERR_INTERNAL"};
  const size_t n = sizeof all / sizeof all[0];
  for (size_t i = 0; i < n; i++) {
    const char *s = lrt_status_str(all[i]);
    CHECK(s != NULL);
    if (!s) continue;
    /* Each description starts with the status's own name followed by ':'. */
    CHECK(strncmp(s, names[i], strlen(names[i])) == 0 && s[strlen(names[i])] == ':');
    for (size_t j = 0; j < i; j++) CHECK(strcmp(s, lrt_status_str(all[j])) != 0);
  }
  CHECK(strcmp(lrt_status_str(8), "unknown status") == 0);
  CHECK(strcmp(lrt_status_str(-1), "unknown status") == 0);
  CHECK(strcmp(lrt_status_str(1 << 30), "unknown status") == 0);

  const char *v = lrt_version();
  unsigned major, minor, patch;
  CHECK(sscanf(v, "leanrt %u.%u.%u", &major, &minor, &patch) == 3);
  return check_result();
}
