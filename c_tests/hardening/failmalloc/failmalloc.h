/* A failing allocator for the resource-exhaustion tests: interposes malloc,
 * calloc, realloc, posix_memalign, aligned_alloc, memalign and valloc
 * (linked into the test program, or through LD_PRELOAD) and, once armed,
 * lets `headroom` allocations through and makes every later one return NULL
 * with errno ENOMEM, on every thread, until disarmed: the process is then
 * out of heap as under a strict commit limit. Unarmed it only forwards to
 * glibc's allocator. */
#ifndef LEANRT_FAILMALLOC_H
#define LEANRT_FAILMALLOC_H

#ifdef __cplusplus
extern "C" {
#endif

/* From now on, the first `headroom` allocation requests succeed and every
 * later one fails. */
void failmalloc_arm(long headroom);
/* Back to plain forwarding. */
void failmalloc_disarm(void);
/* Requests refused since the last arm. */
long failmalloc_failed(void);
/* Requests seen since the last arm. */
long failmalloc_seen(void);
/* 1: this allocator is the one the process uses (a sanitizer runtime or
 * valgrind that replaces malloc first makes it 0). */
int failmalloc_active(void);

#ifdef __cplusplus
}
#endif
#endif
