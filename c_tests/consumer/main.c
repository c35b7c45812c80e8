/* Uses the installed library: prints its version and checks the error path. */
#include <leanrt.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  const char *v = lrt_version();
  if (strncmp(v, "leanrt ", 7) != 0) {
    fprintf(stderr, "unexpected version '%s'\n", v);
    return 1;
  }
  if (lrt_host_api_host(NULL) != LRT_ERR_INVALID_ARGUMENT) {
    fprintf(stderr, "lrt_host_api_host(NULL) did not fail\n");
    return 1;
  }
  char msg[128];
  if (lrt_last_error(msg, sizeof msg) == 0 || strstr(msg, "lrt_host_api_host") == NULL) {
    fprintf(stderr, "no error message: '%s'\n", msg);
    return 1;
  }
  printf("consumer ok: %s\n", v);
  return 0;
}
