/* A mock of the CUDA driver API entry points leanrt's CUDA backend uses,
 * on host memory, so that the dlopen / callback / error paths are exercised
 * on machines without a GPU. Point leanrt at it with
 * LEANRT_CUDA_LIBRARY=/path/to/libleanrt_mock_cuda.so.
 *
 * It is deliberately strict, so that it catches backend bugs that a real
 * driver would also punish:
 *  - every call but cuDriverGetVersion / cuGetError* needs cuInit first
 *    (CUDA_ERROR_NOT_INITIALIZED);
 *  - memory calls need a current context on the calling thread, pushed with
 *    cuCtxPushCurrent_v2 from a retained primary context
 *    (CUDA_ERROR_INVALID_CONTEXT otherwise, counted in "no_ctx_errors");
 *  - device pointers are fake addresses, not host pointers; a copy must lie
 *    entirely inside one live allocation (CUDA_ERROR_INVALID_VALUE);
 *  - fresh allocations are filled with 0xCD (key "fill"), as device memory
 *    holds garbage;
 *  - host registrations may not overlap (..._ALREADY_REGISTERED), and only a
 *    registered base may be unregistered (..._NOT_REGISTERED);
 *  - a host-to-device copy whose source does not lie entirely inside one
 *    registration is a copy from pageable memory: it works, and is counted
 *    in "htod_unpinned_calls" / "htod_unpinned_bytes".
 *
 * Configuration: read from the environment at first use (MOCK_CUDA_DEVICE_COUNT,
 * MOCK_CUDA_TOTAL_MEM, MOCK_CUDA_FAIL_INIT, MOCK_CUDA_FILL), then adjustable
 * through mock_cuda_set(key, value); counters are read with mock_cuda_get(key).
 * Keys: see the tables `settings` and `counters` below. One global mutex
 * guards all state (the context stack is per thread). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

#define EXPORT __attribute__((visibility("default")))

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  CUDA_ERROR_UNKNOWN = 999
};

#define MAX_DEVICES 8
#define MAX_ALLOCS 4096
#define MAX_REGS 256
#define MAX_DEPTH 16

struct mock_context {
  int device;
};

struct allocation {
  CUdeviceptr base;
  size_t size;
  unsigned char *mem;
};

struct registration {
  uintptr_t base;
  size_t size;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_loaded;      /* configuration read from the environment */
static int g_initialized; /* cuInit succeeded */

/* Settings (mock_cuda_set). */
static long long s_device_count = 1;
static long long s_total_mem = 4LL << 30;
static long long s_fail_init;     /* cuInit returns this code when non-zero */
static long long s_fail_retain;   /* cuDevicePrimaryCtxRetain returns this */
static long long s_fail_register; /* cuMemHostRegister_v2 returns this */
static long long s_fail_alloc_at; /* the k-th cuMemAlloc_v2 from now fails (OOM) */
static long long s_fail_htod_at;  /* the k-th cuMemcpyHtoD_v2 from now fails */
static long long s_fail_dtoh_at;  /* the k-th cuMemcpyDtoH_v2 from now fails */
static long long s_fail_code = CUDA_ERROR_UNKNOWN; /* code for failing copies */
static long long s_fill = 1;                       /* fill fresh allocations with 0xCD */

/* Counters (mock_cuda_get). */
static long long c_init_calls, c_alloc_calls, c_free_calls, c_htod_calls, c_htod_bytes,
    c_dtoh_calls, c_dtoh_bytes, c_register_calls, c_unregister_calls, c_no_ctx_errors,
    c_bad_copies, c_last_register_flags = -1, c_pushes, c_pops, c_htod_unpinned_calls,
    c_htod_unpinned_bytes, c_max_registered_bytes;

static struct mock_context g_contexts[MAX_DEVICES];
static long long g_retain[MAX_DEVICES];
static struct allocation g_allocs[MAX_ALLOCS];
static long long g_live_allocs, g_live_bytes;
static CUdeviceptr g_next_addr = 0x500000000000ULL;
static struct registration g_regs[MAX_REGS];
static long long g_live_regs, g_registered_bytes;

static _Thread_local struct mock_context *t_stack[MAX_DEPTH];
static _Thread_local int t_depth;

static long long env_ll(const char *name, long long dflt) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0') return dflt;
  return strtoll(v, NULL, 0);
}

/* Requires g_lock. */
static void load_config(void) {
  if (g_loaded) return;
  g_loaded = 1;
  s_device_count = env_ll("MOCK_CUDA_DEVICE_COUNT", s_device_count);
  if (s_device_count > MAX_DEVICES) s_device_count = MAX_DEVICES;
  s_total_mem = env_ll("MOCK_CUDA_TOTAL_MEM", s_total_mem);
  s_fail_init = env_ll("MOCK_CUDA_FAIL_INIT", s_fail_init);
  s_fill = env_ll("MOCK_CUDA_FILL", s_fill);
  for (int i = 0; i < MAX_DEVICES; i++) g_contexts[i].device = i;
}

static void lock(void) {
  pthread_mutex_lock(&g_lock);
  load_config();
}
static void unlock(void) { pthread_mutex_unlock(&g_lock); }

/* Requires g_lock: the current context if it is live, else NULL. */
static struct mock_context *current(void) {
  if (t_depth == 0) return NULL;
  struct mock_context *c = t_stack[t_depth - 1];
  if (g_retain[c->device] <= 0) return NULL;
  return c;
}

/* Requires g_lock: counts a k-th-call failure trigger down. */
static int trips(long long *at) {
  if (*at <= 0) return 0;
  return --*at == 0;
}

/* Requires g_lock: whether [p, p + n) lies inside one host registration. */
static int registered(const void *p, size_t n) {
  uintptr_t b = (uintptr_t)p;
  for (int i = 0; i < MAX_REGS; i++) {
    const struct registration *r = &g_regs[i];
    if (r->size != 0 && b >= r->base && b - r->base <= r->size && n <= r->size - (b - r->base))
      return 1;
  }
  return 0;
}

/* Requires g_lock: the allocation holding [p, p + n), or NULL. */
static struct allocation *find_alloc(CUdeviceptr p, size_t n) {
  for (int i = 0; i < MAX_ALLOCS; i++) {
    struct allocation *a = &g_allocs[i];
    if (a->mem != NULL && p >= a->base && p - a->base <= a->size && n <= a->size - (p - a->base))
      return a;
  }
  return NULL;
}

#define REQUIRE_INIT()               \
  do {                               \
    if (!g_initialized) {            \
      unlock();                      \
      return CUDA_ERROR_NOT_INITIALIZED; \
    }                                \
  } while (0)

#define REQUIRE_CTX()                \
  do {                               \
    if (current() == NULL) {         \
      c_no_ctx_errors++;             \
      unlock();                      \
      return CUDA_ERROR_INVALID_CONTEXT; \
    }                                \
  } while (0)

EXPORT CUresult cuInit(unsigned int flags) {
  lock();
  c_init_calls++;
  CUresult rc = CUDA_SUCCESS;
  if (flags != 0)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (s_fail_init != 0)
    rc = (CUresult)s_fail_init;
  else if (s_device_count <= 0)
    rc = CUDA_ERROR_NO_DEVICE;
  else
    g_initialized = 1;
  unlock();
  return rc;
}

EXPORT CUresult cuDriverGetVersion(int *v) {
  if (v == NULL) return CUDA_ERROR_INVALID_VALUE;
  *v = 12040;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n) {
  lock();
  REQUIRE_INIT();
  if (n == NULL) {
    unlock();
    return CUDA_ERROR_INVALID_VALUE;
  }
  *n = (int)s_device_count;
  unlock();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  lock();
  REQUIRE_INIT();
  CUresult rc = CUDA_SUCCESS;
  if (d == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (ordinal < 0 || ordinal >= s_device_count)
    rc = CUDA_ERROR_INVALID_DEVICE;
  else
    *d = ordinal;
  unlock();
  return rc;
}

static int valid_device(CUdevice d) { return d >= 0 && d < s_device_count; }

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  lock();
  REQUIRE_INIT();
  CUresult rc = CUDA_SUCCESS;
  if (name == NULL || len <= 0)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (!valid_device(d))
    rc = CUDA_ERROR_INVALID_DEVICE;
  else
    snprintf(name, (size_t)len, "leanrt mock CUDA device %d", d);
  unlock();
  return rc;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
  lock();
  REQUIRE_INIT();
  CUresult rc = CUDA_SUCCESS;
  if (bytes == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (!valid_device(d))
    rc = CUDA_ERROR_INVALID_DEVICE;
  else
    *bytes = (size_t)s_total_mem;
  unlock();
  return rc;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d) {
  lock();
  REQUIRE_INIT();
  CUresult rc = CUDA_SUCCESS;
  if (ctx == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (!valid_device(d))
    rc = CUDA_ERROR_INVALID_DEVICE;
  else if (s_fail_retain != 0)
    rc = (CUresult)s_fail_retain;
  else {
    g_retain[d]++;
    *ctx = &g_contexts[d];
  }
  unlock();
  return rc;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  lock();
  REQUIRE_INIT();
  CUresult rc = CUDA_SUCCESS;
  if (!valid_device(d))
    rc = CUDA_ERROR_INVALID_DEVICE;
  else if (g_retain[d] <= 0)
    rc = CUDA_ERROR_INVALID_CONTEXT;
  else
    g_retain[d]--;
  unlock();
  return rc;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  lock();
  REQUIRE_INIT();
  CUresult rc = CUDA_SUCCESS;
  struct mock_context *c = NULL;
  for (int i = 0; i < MAX_DEVICES; i++)
    if (ctx == (CUcontext)&g_contexts[i]) c = &g_contexts[i];
  if (c == NULL || g_retain[c->device] <= 0)
    rc = CUDA_ERROR_INVALID_CONTEXT;
  else if (t_depth == MAX_DEPTH)
    rc = CUDA_ERROR_INVALID_VALUE;
  else {
    t_stack[t_depth++] = c;
    c_pushes++;
  }
  unlock();
  return rc;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *old) {
  lock();
  REQUIRE_INIT();
  CUresult rc = CUDA_SUCCESS;
  if (t_depth == 0)
    rc = CUDA_ERROR_INVALID_CONTEXT;
  else {
    struct mock_context *c = t_stack[--t_depth];
    if (old != NULL) *old = c;
    c_pops++;
  }
  unlock();
  return rc;
}

EXPORT CUresult cuCtxSynchronize(void) {
  lock();
  REQUIRE_INIT();
  REQUIRE_CTX();
  unlock();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
  lock();
  REQUIRE_INIT();
  REQUIRE_CTX();
  c_alloc_calls++;
  CUresult rc = CUDA_SUCCESS;
  int slot = -1;
  for (int i = 0; i < MAX_ALLOCS && slot < 0; i++)
    if (g_allocs[i].mem == NULL) slot = i;
  if (p == NULL || size == 0)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (trips(&s_fail_alloc_at) || slot < 0 || size > (size_t)s_total_mem ||
           (long long)size > s_total_mem - g_live_bytes)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  else {
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      if (s_fill) memset(mem, 0xCD, size);
      g_allocs[slot].base = g_next_addr;
      g_allocs[slot].size = size;
      g_allocs[slot].mem = mem;
      g_next_addr += ((size + 0xFFFF) & ~(CUdeviceptr)0xFFFF) + 0x10000; /* a gap after each */
      g_live_allocs++;
      g_live_bytes += (long long)size;
      *p = g_allocs[slot].base;
    }
  }
  unlock();
  return rc;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  lock();
  REQUIRE_INIT();
  REQUIRE_CTX();
  c_free_calls++;
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < MAX_ALLOCS; i++) {
    struct allocation *a = &g_allocs[i];
    if (a->mem != NULL && a->base == p) {
      munmap(a->mem, a->size);
      g_live_allocs--;
      g_live_bytes -= (long long)a->size;
      memset(a, 0, sizeof *a);
      rc = CUDA_SUCCESS;
      break;
    }
  }
  unlock();
  return rc;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  lock();
  REQUIRE_INIT();
  REQUIRE_CTX();
  c_htod_calls++;
  CUresult rc = CUDA_SUCCESS;
  struct allocation *a = find_alloc(dst, n);
  if (src == NULL || a == NULL) {
    c_bad_copies++;
    rc = CUDA_ERROR_INVALID_VALUE;
  } else if (trips(&s_fail_htod_at)) {
    rc = (CUresult)s_fail_code;
  } else {
    memcpy(a->mem + (dst - a->base), src, n);
    c_htod_bytes += (long long)n;
    if (!registered(src, n)) {
      c_htod_unpinned_calls++;
      c_htod_unpinned_bytes += (long long)n;
    }
  }
  unlock();
  return rc;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  lock();
  REQUIRE_INIT();
  REQUIRE_CTX();
  c_dtoh_calls++;
  CUresult rc = CUDA_SUCCESS;
  struct allocation *a = find_alloc(src, n);
  if (dst == NULL || a == NULL) {
    c_bad_copies++;
    rc = CUDA_ERROR_INVALID_VALUE;
  } else if (trips(&s_fail_dtoh_at)) {
    rc = (CUresult)s_fail_code;
  } else {
    memcpy(dst, a->mem + (src - a->base), n);
    c_dtoh_bytes += (long long)n;
  }
  unlock();
  return rc;
}

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags) {
  lock();
  REQUIRE_INIT();
  REQUIRE_CTX();
  c_register_calls++;
  c_last_register_flags = flags;
  CUresult rc = CUDA_SUCCESS;
  uintptr_t b = (uintptr_t)p;
  int slot = -1;
  if (p == NULL || n == 0 || (flags & ~0x0FU) != 0) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else if (s_fail_register != 0) {
    rc = (CUresult)s_fail_register;
  } else {
    for (int i = 0; i < MAX_REGS; i++) {
      struct registration *r = &g_regs[i];
      if (r->size == 0) {
        if (slot < 0) slot = i;
      } else if (b < r->base + r->size && r->base < b + n) {
        rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
      }
    }
    if (rc == CUDA_SUCCESS && slot < 0) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
      g_regs[slot].base = b;
      g_regs[slot].size = n;
      g_live_regs++;
      g_registered_bytes += (long long)n;
      if (g_registered_bytes > c_max_registered_bytes) c_max_registered_bytes = g_registered_bytes;
    }
  }
  unlock();
  return rc;
}

EXPORT CUresult cuMemHostUnregister(void *p) {
  lock();
  REQUIRE_INIT();
  REQUIRE_CTX();
  c_unregister_calls++;
  CUresult rc = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  for (int i = 0; i < MAX_REGS; i++) {
    struct registration *r = &g_regs[i];
    if (r->size != 0 && r->base == (uintptr_t)p) {
      g_live_regs--;
      g_registered_bytes -= (long long)r->size;
      r->base = 0;
      r->size = 0;
      rc = CUDA_SUCCESS;
      break;
    }
  }
  unlock();
  return rc;
}

static const struct {
  CUresult code;
  const char *name;
  const char *text;
} g_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult error_text(CUresult code, const char **out, int want_name) {
  if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++) {
    if (g_errors[i].code == code) {
      *out = want_name ? g_errors[i].name : g_errors[i].text;
      return CUDA_SUCCESS;
    }
  }
  *out = NULL; /* as the real driver does for an unknown code */
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult code, const char **out) { return error_text(code, out, 1); }
EXPORT CUresult cuGetErrorString(CUresult code, const char **out) { return error_text(code, out, 0); }

/* ---- control interface for tests ---- */

static long long *setting(const char *key) {
  static const struct {
    const char *key;
    long long *value;
  } settings[] = {
      {"device_count", &s_device_count}, {"total_mem", &s_total_mem},
      {"fail_init", &s_fail_init},       {"fail_retain", &s_fail_retain},
      {"fail_register", &s_fail_register}, {"fail_alloc_at", &s_fail_alloc_at},
      {"fail_htod_at", &s_fail_htod_at}, {"fail_dtoh_at", &s_fail_dtoh_at},
      {"fail_code", &s_fail_code},       {"fill", &s_fill},
  };
  for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
    if (strcmp(settings[i].key, key) == 0) return settings[i].value;
  return NULL;
}

/* Sets a setting; returns 0, or -1 for an unknown key. */
EXPORT int mock_cuda_set(const char *key, long long value) {
  lock();
  long long *s = key ? setting(key) : NULL;
  if (s != NULL) {
    if (strcmp(key, "device_count") == 0 && (value < 0 || value > MAX_DEVICES)) value = MAX_DEVICES;
    *s = value;
  }
  unlock();
  return s != NULL ? 0 : -1;
}

/* A setting or counter; LLONG_MIN for an unknown key. */
EXPORT long long mock_cuda_get(const char *key) {
  static const struct {
    const char *key;
    long long *value;
  } counters[] = {
      {"init_calls", &c_init_calls},       {"alloc_calls", &c_alloc_calls},
      {"free_calls", &c_free_calls},       {"htod_calls", &c_htod_calls},
      {"htod_bytes", &c_htod_bytes},       {"dtoh_calls", &c_dtoh_calls},
      {"dtoh_bytes", &c_dtoh_bytes},       {"register_calls", &c_register_calls},
      {"unregister_calls", &c_unregister_calls}, {"no_ctx_errors", &c_no_ctx_errors},
      {"bad_copies", &c_bad_copies},       {"last_register_flags", &c_last_register_flags},
      {"pushes", &c_pushes},               {"pops", &c_pops},
      {"live_allocs", &g_live_allocs},     {"live_bytes", &g_live_bytes},
      {"live_registrations", &g_live_regs}, {"registered_bytes", &g_registered_bytes},
      {"htod_unpinned_calls", &c_htod_unpinned_calls},
      {"htod_unpinned_bytes", &c_htod_unpinned_bytes},
      {"max_registered_bytes", &c_max_registered_bytes},
  };
  long long v = LLONG_MIN;
  lock();
  if (key != NULL) {
    long long *s = setting(key);
    if (s != NULL) v = *s;
    for (size_t i = 0; i < sizeof counters / sizeof counters[0] && s == NULL; i++)
      if (strcmp(counters[i].key, key) == 0) v = *counters[i].value;
    if (strcmp(key, "retained") == 0) {
      v = 0;
      for (int d = 0; d < MAX_DEVICES; d++) v += g_retain[d];
    }
    if (strcmp(key, "thread_depth") == 0) v = t_depth;
  }
  unlock();
  return v;
}
