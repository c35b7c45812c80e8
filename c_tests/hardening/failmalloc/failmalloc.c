/* See failmalloc.h. The real allocator is reached through glibc's
 * __libc_* entry points (dlsym would allocate on first use). free is not
 * interposed: everything handed out comes from glibc's allocator. */
#include "failmalloc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

static atomic_int armed;
static atomic_long headroom_;
static atomic_long seen_;
static atomic_long failed_;
static atomic_long calls_;

void failmalloc_arm(long headroom) {
  atomic_store(&seen_, 0);
  atomic_store(&failed_, 0);
  atomic_store(&headroom_, headroom);
  atomic_store(&armed, 1);
}

void failmalloc_disarm(void) { atomic_store(&armed, 0); }
long failmalloc_failed(void) { return atomic_load(&failed_); }
long failmalloc_seen(void) { return atomic_load(&seen_); }

int failmalloc_active(void) {
  long before = atomic_load(&calls_);
  void *p = malloc(16);
  /* Keep the call: the compiler may not elide a malloc/free pair whose
   * pointer escapes through a volatile. */
  void *volatile keep = p;
  free(keep);
  return atomic_load(&calls_) > before;
}

/* Whether this request fails. */
static int refuse(void) {
  atomic_fetch_add(&calls_, 1);
  if (!atomic_load(&armed)) return 0;
  if (atomic_fetch_add(&seen_, 1) < atomic_load(&headroom_)) return 0;
  atomic_fetch_add(&failed_, 1);
  errno = ENOMEM;
  return 1;
}

void *malloc(size_t size) { return refuse() ? NULL : __libc_malloc(size); }
void *calloc(size_t n, size_t size) { return refuse() ? NULL : __libc_calloc(n, size); }
void *realloc(void *p, size_t size) {
  if (p == NULL) return malloc(size);
  return refuse() ? NULL : __libc_realloc(p, size);
}
void *memalign(size_t align, size_t size) { return refuse() ? NULL : __libc_memalign(align, size); }
void *aligned_alloc(size_t align, size_t size) { return memalign(align, size); }
void *valloc(size_t size) { return memalign(4096, size); }
int posix_memalign(void **out, size_t align, size_t size) {
  if (refuse()) return ENOMEM;
  void *p = __libc_memalign(align, size);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
