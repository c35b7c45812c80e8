/* Linked the way a cargo user links: `cc main.c -I include -L target/release
 * -lleanrt -Wl,-rpath,target/release`. It must start (the dynamic loader
 * finds libleanrt.so.0, the SONAME, beside cargo's libleanrt.so) and call
 * into the library. */
#include <stdio.h>
#include <string.h>

#include "leanrt.h"

int main(void) {
  const char *v = lrt_version();
  if (v == NULL || strncmp(v, "leanrt ", 7) != 0) {
    fprintf(stderr, "unexpected version string\n");
    return 1;
  }
  if (lrt_host_api_host(NULL) != LRT_ERR_INVALID_ARGUMENT) {
    fprintf(stderr, "NULL out was not rejected\n");
    return 1;
  }
  printf("%s\n", v);
  return 0;
}
