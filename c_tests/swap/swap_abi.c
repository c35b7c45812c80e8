/* Swap test for the boundary functions: the same results from the stand-in
 * and from leanrt. */
#include <stdio.h>

#include "leanrt.h"

int main(void) {
  printf("served-by: %s\n", lrt_version());
  for (int s = -1; s <= 8; s++) printf("status %d: %s\n", s, lrt_status_str(s));
  printf("last_error before any failure: %zu\n", lrt_last_error(NULL, 0));
  return 0;
}
