/* peak.c - the peak probe: single-core float32 FMA throughput in GFLOP/s.
 *
 * A loop of independent fused multiply-adds on vector registers, enough
 * accumulators (12) to cover FMA latency x ports on current x86 cores (Zen 3:
 * 4 cycles x 2 pipes = 8 in flight). Nothing is loaded from memory, so the
 * number is the arithmetic ceiling that SGEMM efficiency is measured against.
 *
 * ISA: every path the CPU reports at run time (__builtin_cpu_supports) is
 * measured: AVX-512F (512-bit), AVX2+FMA (256-bit), and a portable path built
 * from GCC vector extensions (what -O2 gives for the host, e.g. SSE2 or NEON).
 * The peak is the best of them: on Zen 4 a 512-bit FMA takes both 256-bit
 * pipes, so AVX-512 and AVX2 tie; on Intel server cores AVX-512 doubles it.
 *
 * Each figure is the best of many short trials (2 ms by default): on a busy
 * machine some trials still run uninterrupted, where one long trial would
 * average in the time the core spent on other processes.
 *
 * Build: cc -O2 -o peak bench/peak.c      Run: ./peak [--json] [--seconds S] [--trials N]
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_ACC 12

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* acc = acc * a + b converges to b / (1 - a) without denormals or overflow. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1

__attribute__((target("avx2,fma"))) static float fma_avx2(long iters) {
  __m256 acc[N_ACC];
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  for (int j = 0; j < N_ACC; j++) acc[j] = _mm256_set1_ps((float)j);
  for (long i = 0; i < iters; i++) {
    /* unrolled by hand: the compiler must keep all 12 chains in registers */
    acc[0] = _mm256_fmadd_ps(acc[0], a, b);
    acc[1] = _mm256_fmadd_ps(acc[1], a, b);
    acc[2] = _mm256_fmadd_ps(acc[2], a, b);
    acc[3] = _mm256_fmadd_ps(acc[3], a, b);
    acc[4] = _mm256_fmadd_ps(acc[4], a, b);
    acc[5] = _mm256_fmadd_ps(acc[5], a, b);
    acc[6] = _mm256_fmadd_ps(acc[6], a, b);
    acc[7] = _mm256_fmadd_ps(acc[7], a, b);
    acc[8] = _mm256_fmadd_ps(acc[8], a, b);
    acc[9] = _mm256_fmadd_ps(acc[9], a, b);
    acc[10] = _mm256_fmadd_ps(acc[10], a, b);
    acc[11] = _mm256_fmadd_ps(acc[11], a, b);
  }
  __m256 s = acc[0];
  for (int j = 1; j < N_ACC; j++) s = _mm256_add_ps(s, acc[j]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

__attribute__((target("avx512f"))) static float fma_avx512(long iters) {
  __m512 acc[N_ACC];
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  for (int j = 0; j < N_ACC; j++) acc[j] = _mm512_set1_ps((float)j);
  for (long i = 0; i < iters; i++) {
    acc[0] = _mm512_fmadd_ps(acc[0], a, b);
    acc[1] = _mm512_fmadd_ps(acc[1], a, b);
    acc[2] = _mm512_fmadd_ps(acc[2], a, b);
    acc[3] = _mm512_fmadd_ps(acc[3], a, b);
    acc[4] = _mm512_fmadd_ps(acc[4], a, b);
    acc[5] = _mm512_fmadd_ps(acc[5], a, b);
    acc[6] = _mm512_fmadd_ps(acc[6], a, b);
    acc[7] = _mm512_fmadd_ps(acc[7], a, b);
    acc[8] = _mm512_fmadd_ps(acc[8], a, b);
    acc[9] = _mm512_fmadd_ps(acc[9], a, b);
    acc[10] = _mm512_fmadd_ps(acc[10], a, b);
    acc[11] = _mm512_fmadd_ps(acc[11], a, b);
  }
  __m512 s = acc[0];
  for (int j = 1; j < N_ACC; j++) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}
#endif

/* Portable: the widest vector the baseline target surely has (16 bytes is
 * SSE2 on x86-64 and NEON on AArch64); multiply and add may not fuse. */
typedef float v4f __attribute__((vector_size(16)));

static float fma_portable(long iters) {
  v4f acc[N_ACC];
  const v4f a = {0.999999f, 0.999999f, 0.999999f, 0.999999f};
  const v4f b = {1e-6f, 1e-6f, 1e-6f, 1e-6f};
  for (int j = 0; j < N_ACC; j++) acc[j] = (v4f){(float)j, (float)j, (float)j, (float)j};
  for (long i = 0; i < iters; i++)
    for (int j = 0; j < N_ACC; j++) acc[j] = acc[j] * a + b;
  v4f s = acc[0];
  for (int j = 1; j < N_ACC; j++) s += acc[j];
  return s[0] + s[3];
}

typedef float (*Kernel)(long);

/* Best GFLOP/s over `trials` runs of about `seconds` each. */
static double measure(Kernel k, int lanes, double seconds, int trials, volatile float *sink) {
  long iters = 1000;
  for (;;) { /* calibrate to ~seconds */
    double t0 = now_s();
    *sink += k(iters);
    double dt = now_s() - t0;
    if (dt > seconds / 4) {
      iters = (long)((double)iters * seconds / dt) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int t = 0; t < trials; t++) {
    double t0 = now_s();
    *sink += k(iters);
    double dt = now_s() - t0;
    double gflops = 2.0 * N_ACC * lanes * (double)iters / dt * 1e-9;
    if (gflops > best) best = gflops;
  }
  return best;
}

typedef struct {
  const char *isa;
  int lanes;
  Kernel kernel;
  double gflops;
} Path;

int main(int argc, char **argv) {
  int json = 0, trials = 200;
  double seconds = 0.002;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--json] [--seconds S] [--trials N]\n", argv[0]);
      return 2;
    }
  }
  if (seconds <= 0 || trials < 1) {
    fprintf(stderr, "%s: --seconds and --trials must be positive\n", argv[0]);
    return 2;
  }
  volatile float sink = 0;
  Path paths[3];
  int n = 0;
  paths[n++] = (Path){"portable-128", 4, fma_portable, 0};
#ifdef HAVE_AVX2_PATH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    paths[n++] = (Path){"avx2+fma", 8, fma_avx2, 0};
  if (__builtin_cpu_supports("avx512f"))
    paths[n++] = (Path){"avx512f", 16, fma_avx512, 0};
#endif
  int best = 0;
  for (int i = 0; i < n; i++) {
    paths[i].gflops = measure(paths[i].kernel, paths[i].lanes, seconds, trials, &sink);
    if (paths[i].gflops > paths[best].gflops) best = i;
  }
  if (json) {
    printf("{\"isa\": \"%s\", \"gflops\": %.2f, \"trials\": %d, \"seconds\": %.4f, "
           "\"paths\": {", paths[best].isa, paths[best].gflops, trials, seconds);
    for (int i = 0; i < n; i++)
      printf("%s\"%s\": %.2f", i ? ", " : "", paths[i].isa, paths[i].gflops);
    printf("}}\n");
  } else {
    for (int i = 0; i < n; i++)
      printf("%-13s %7.2f GFLOP/s  (%d floats x %d accumulators)\n", paths[i].isa,
             paths[i].gflops, paths[i].lanes, N_ACC);
    printf("peak: %.2f GFLOP/s single core, float32 %s, best of %d x %.1f ms\n",
           paths[best].gflops, paths[best].isa, trials, seconds * 1e3);
  }
  return sink == 12345.0f; /* keeps the work observable; never true */
}
