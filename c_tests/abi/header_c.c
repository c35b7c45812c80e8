/* The generated header compiles as C11 with -Wall -Wextra -Werror -pedantic,
 * and its enum values are the contract's. */
#include "leanrt.h"
#include "check.h"

_Static_assert(LRT_OK == 0, "LRT_OK");
_Static_assert(LRT_ERR_INVALID_ARGUMENT == 1, "status value");
_Static_assert(LRT_ERR_OUT_OF_RANGE == 2, "status value");
_Static_assert(LRT_ERR_NO_MEMORY == 3, "status value");
_Static_assert(LRT_ERR_DEVICE == 4, "status value");
_Static_assert(LRT_ERR_UNAVAILABLE == 5, "status value");
_Static_assert(LRT_ERR_STATE == 6, "status value");
_Static_assert(LRT_ERR_INTERNAL == 7, "status value");

int main(void) {
  lrt_status s = LRT_OK;
  CHECK(lrt_status_str(s) != NULL);
  CHECK(lrt_version() != NULL);
  return check_result();
}
