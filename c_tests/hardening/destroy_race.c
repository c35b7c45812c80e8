/* lrt_pool_destroy while other threads are inside the pool: three caller
 * threads are held inside loop bodies of a pool (and one inside a parallel
 * section), and the main thread destroys the pool. The documented outcome:
 * destroy refuses, returns at once with LRT_ERR_STATE in lrt_last_error,
 * and leaves the pool intact; the held loops then finish with every index
 * run once, and the destroy that follows succeeds. Then a section left
 * open on another thread that is not inside a call: destroy goes ahead
 * and ends it, and the section's end only frees its handle. 20 rounds
 * (without the refusal this was a use after free: heap corruption in some
 * runs). */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "../pool/pool_common.h"

#define CALLERS 3
#define TOTAL 4096

static lrt_pool *pool;
static atomic_int inside, release_;
static atomic_long ran;

static void nap_us(long us) {
  struct timespec t = {0, us * 1000};
  nanosleep(&t, NULL);
}

static void held_body(void *ctx, ptrdiff_t a, ptrdiff_t b) {
  (void)ctx;
  if (a == 0) {
    atomic_fetch_add(&inside, 1);
    while (!atomic_load(&release_)) nap_us(100);
  }
  atomic_fetch_add(&ran, (long)(b - a));
}

static void *held_caller(void *arg) {
  (void)arg;
  lrt_pool_try_parallel_for(pool, TOTAL, 1e6, held_body, NULL);
  return NULL;
}

static void quick_body(void *ctx, ptrdiff_t a, ptrdiff_t b) {
  (void)ctx;
  atomic_fetch_add(&ran, (long)(b - a));
}

/* Destroy with a message slot reset, then: 1 if refused with STATE. */
static int destroy_refused(lrt_pool *p) {
  lrt_pool_try_parallel_for(NULL, 1, 0.0, NULL, NULL); /* records a NULL-fn message */
  lrt_pool_destroy(p);
  char msg[LRT_LAST_ERROR_BYTES];
  lrt_last_error(msg, sizeof msg);
  if (strncmp(msg, "lrt_pool_destroy: ", 18) != 0 || strstr(msg, "inside") == NULL) {
    fprintf(stderr, "destroy's message: \"%s\"\n", msg);
    return 0;
  }
  return 1;
}

static atomic_int section_open, section_release;
static void *section_holder(void *arg) {
  (void)arg;
  lrt_pool_section *sec = NULL;
  CHECK_STATUS(lrt_pool_section_begin(pool, &sec), LRT_OK);
  lrt_pool_try_parallel_for(pool, TOTAL, 1e6, quick_body, NULL);
  atomic_store(&section_open, 1);
  while (!atomic_load(&section_release)) nap_us(100);
  /* The pool is gone: its section was ended by destroy; this frees the
   * handle only. */
  lrt_pool_section_end(sec);
  return NULL;
}

int main(void) {
  int refused = 0;
  pthread_t t[CALLERS];
  for (int round = 0; round < 20; round++) {
    /* Callers held inside loop bodies. */
    pool = make_pool(4);
    atomic_store(&ran, 0);
    atomic_store(&inside, 0);
    atomic_store(&release_, 0);
    for (int i = 0; i < CALLERS; i++) pthread_create(&t[i], NULL, held_caller, NULL);
    while (atomic_load(&inside) < CALLERS) nap_us(100);
    if (destroy_refused(pool)) {
      refused++;
    } else {
      fprintf(stderr, "round %d: destroy with %d callers inside was not refused\n", round,
              CALLERS);
      return 1; /* the pool may be gone: nothing more can be checked */
    }
    atomic_store(&release_, 1);
    for (int i = 0; i < CALLERS; i++) pthread_join(t[i], NULL);
    CHECK_EQ_U64(atomic_load(&ran), (uint64_t)CALLERS * TOTAL);
    /* Intact and usable. */
    atomic_store(&ran, 0);
    lrt_pool_try_parallel_for(pool, TOTAL, 1e6, quick_body, NULL);
    CHECK_EQ_U64(atomic_load(&ran), TOTAL);

    /* A section left open on another thread that is not inside a call:
     * destroy goes ahead and ends it (documented); its end then only frees
     * the handle. */
    atomic_store(&section_open, 0);
    atomic_store(&section_release, 0);
    pthread_create(&t[0], NULL, section_holder, NULL);
    while (!atomic_load(&section_open)) nap_us(100);
    lrt_pool_destroy(pool);
    atomic_store(&section_release, 1);
    pthread_join(t[0], NULL);
  }
  printf("destroy with callers inside: refused %d times with LRT_ERR_STATE, pools intact\n",
         refused);
  return check_result();
}
