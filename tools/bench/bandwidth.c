/* Memory read bandwidth of this machine, as `pnpm bench` reports it (tools/bench/bench.mjs compiles and runs it).
 * Sums a float array much larger than the caches with T threads (OpenMP), best of R passes; prints one JSON line.
 * build: cc -O3 -march=native -fopenmp -ffast-math bandwidth.c -o bandwidth;  run: ./bandwidth [MB=2048] [THREADS=2] [PASSES=7] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t mb = argc > 1 ? strtoul(argv[1], 0, 10) : 2048;
  int threads = argc > 2 ? atoi(argv[2]) : 2;
  int passes = argc > 3 ? atoi(argv[3]) : 7;
  size_t n = mb * 1024 * 1024 / sizeof(float);
  float *a = aligned_alloc(64, n * sizeof(float));
  if (!a) {
    fprintf(stderr, "bandwidth: cannot allocate %zu MB\n", mb);
    return 1;
  }
  omp_set_num_threads(threads);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) a[i] = (float)(i & 1023) * 1e-3f;
  double best = 1e30, sum = 0;
  for (int p = 0; p < passes; p++) {
    float s = 0;
    double t0 = now();
    /* simd: many independent vector accumulators, so the loop is bound by memory, not by the add latency. */
#pragma omp parallel for simd schedule(static) reduction(+ : s)
    for (size_t i = 0; i < n; i++) s += a[i];
    double dt = now() - t0;
    if (dt < best) best = dt;
    sum += s;
  }
  printf("{\"method\":\"C sum of a %zu MB float array, %d threads (OpenMP), best of %d\",\"gbps\":%.3f,\"check\":%.1f}\n", mb,
         threads, passes, (double)n * sizeof(float) / best / 1e9, sum);
  free(a);
  return 0;
}
