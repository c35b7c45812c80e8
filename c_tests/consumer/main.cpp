// C++ consumer: the header in a C++17 translation unit.
#include <leanrt.h>
#include <cstdio>
#include <cstring>

int main() {
  const char *v = lrt_version();
  if (std::strncmp(v, "leanrt ", 7) != 0) return 1;
  if (std::strcmp(lrt_status_str(LRT_ERR_STATE), lrt_status_str(LRT_OK)) == 0) return 1;
  std::printf("c++ consumer ok: %s\n", v);
  return 0;
}
