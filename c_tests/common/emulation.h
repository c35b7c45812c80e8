/* Whether a test runs under a user-mode emulator: scripts/test.sh's ARM64
 * stage runs the aarch64 programs under qemu-user with
 * LEANRT_EMULATED=qemu-user in their environment. qemu-user counts its
 * translation cache and per-thread state (not freed when a thread exits) in
 * the process's resident memory, so a check that resident memory stays flat
 * means nothing there; such checks call rss_check_meaningful(), which says
 * when it skips. qemu also runs a thread of its own in every process, so
 * thread counts are taken relative to the count at start. */
#ifndef LEANRT_EMULATION_H
#define LEANRT_EMULATION_H

#include <stdio.h>
#include <stdlib.h>

static inline int rss_check_meaningful(const char *what) {
  const char *how = getenv("LEANRT_EMULATED");
  if (how != NULL && how[0] != '\0') {
    printf("%s: resident-memory check skipped under emulation (%s)\n", what, how);
    return 0;
  }
  return 1;
}

#endif
