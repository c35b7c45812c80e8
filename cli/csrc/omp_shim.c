/* The OpenMP peer of `leanrt pool`: parallel constructs that call back
 * into the benchmark's Rust code, so every peer runs the same loop bodies.
 * Built by cli/build.rs only where the C compiler supports -fopenmp.
 * libgomp reads OMP_WAIT_POLICY when it is loaded, so `leanrt pool` runs each
 * OpenMP variant (passive, active) in its own child process. */
#include <omp.h>

typedef void (*leanrt_bench_index_fn)(void *ctx, long index);
typedef void (*leanrt_bench_thread_fn)(void *ctx, int thread);

/* Every index in [0, total) once, statically scheduled over `threads`. */
void leanrt_bench_omp_for(int threads, long total, leanrt_bench_index_fn fn, void *ctx) {
  long i;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (i = 0; i < total; i++) {
    fn(ctx, i);
  }
}

/* One parallel region of `threads` threads; each calls fn with its number
 * (0 is the calling thread). */
void leanrt_bench_omp_region(int threads, leanrt_bench_thread_fn fn, void *ctx) {
#pragma omp parallel num_threads(threads)
  {
    fn(ctx, omp_get_thread_num());
  }
}

/* `loops` loops of `total` indices each inside one parallel region: the
 * team stays between the loops (OpenMP's counterpart of a parallel section);
 * the implicit barrier at the end of each `omp for` separates them. */
void leanrt_bench_omp_section(int threads, int loops, long total, leanrt_bench_index_fn fn,
                              void *ctx) {
#pragma omp parallel num_threads(threads)
  {
    int k;
    long i;
    for (k = 0; k < loops; k++) {
#pragma omp for schedule(static)
      for (i = 0; i < total; i++) {
        fn(ctx, i);
      }
    }
  }
}

/* omp_get_max_threads(), to report the runtime's default. */
int leanrt_bench_omp_max_threads(void) { return omp_get_max_threads(); }
