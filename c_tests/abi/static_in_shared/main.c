/* Runs the plugin that carries a static copy of leanrt. */
#include <stdio.h>
#include <string.h>

const char *plugin_leanrt_version(void);

int main(void) {
  const char *v = plugin_leanrt_version();
  if (strncmp(v, "leanrt ", 7) != 0) {
    fprintf(stderr, "unexpected version '%s'\n", v);
    return 1;
  }
  printf("static copy in a shared object: %s\n", v);
  return 0;
}
