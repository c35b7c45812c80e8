// The generated header compiles as C++17 with -Wall -Wextra -Werror -pedantic.
#include "leanrt.h"
#include "check.h"
#include <cstring>
#include <type_traits>

static_assert(LRT_OK == 0, "LRT_OK");
static_assert(std::is_enum<lrt_status>::value, "lrt_status is an enum");
static_assert(std::is_standard_layout<lrt_host_api>::value, "lrt_host_api is a C struct");

int main() {
  CHECK(std::strncmp(lrt_version(), "leanrt ", 7) == 0);
  lrt_host_api api{};
  CHECK_STATUS(lrt_host_api_host(nullptr), LRT_ERR_INVALID_ARGUMENT);
  (void)api;
  return check_result();
}
