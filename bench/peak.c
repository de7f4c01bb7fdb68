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

/* acc = acc * a + b converges to b / (1 - a) without denormals or overflow.
 * The 12 chains are named variables (an array in a loop is not unrolled by
 * gcc -O2 and lives in memory), and on x86 an empty asm statement marks
 * them all as read and rewritten every iteration, so no compiler can merge,
 * drop or precompute a chain: clang otherwise ran 11 of the 12 and the probe
 * read 9% high. */
#define DECLARE12(T, init)                                                          \
  T c0 = init(0), c1 = init(1), c2 = init(2), c3 = init(3), c4 = init(4), c5 = init(5), \
    c6 = init(6), c7 = init(7), c8 = init(8), c9 = init(9), c10 = init(10), c11 = init(11)
#define STEP12(F)                                                                   \
  c0 = F(c0), c1 = F(c1), c2 = F(c2), c3 = F(c3), c4 = F(c4), c5 = F(c5), c6 = F(c6),   \
  c7 = F(c7), c8 = F(c8), c9 = F(c9), c10 = F(c10), c11 = F(c11)
#define SUM12(ADD)                                                                  \
  ADD(ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7))),            \
      ADD(ADD(c8, c9), ADD(c10, c11)))
#define OPAQUE12(cons)                                                              \
  __asm__("" : cons(c0), cons(c1), cons(c2), cons(c3), cons(c4), cons(c5), cons(c6),  \
          cons(c7), cons(c8), cons(c9), cons(c10), cons(c11))

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
#define VREG(x) "+v"(x)

__attribute__((target("avx2,fma"))) static float fma_avx2(long iters) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
#define INIT256(j) _mm256_set1_ps((float)(j))
#define FMA256(x) _mm256_fmadd_ps(x, a, b)
  DECLARE12(__m256, INIT256);
  for (long i = 0; i < iters; i++) {
    STEP12(FMA256);
    OPAQUE12(VREG);
  }
  float out[8];
  _mm256_storeu_ps(out, SUM12(_mm256_add_ps));
  return out[0] + out[7];
}

__attribute__((target("avx512f"))) static float fma_avx512(long iters) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
#define INIT512(j) _mm512_set1_ps((float)(j))
#define FMA512(x) _mm512_fmadd_ps(x, a, b)
  DECLARE12(__m512, INIT512);
  for (long i = 0; i < iters; i++) {
    STEP12(FMA512);
    OPAQUE12(VREG);
  }
  return _mm512_reduce_add_ps(SUM12(_mm512_add_ps));
}
#endif

/* Portable: the widest vector the baseline target surely has (16 bytes is
 * SSE2 on x86-64 and NEON on AArch64); multiply and add may not fuse, and
 * without an asm barrier for every architecture the chains stay plain C. */
typedef float v4f __attribute__((vector_size(16)));

static float fma_portable(long iters) {
  const v4f a = {0.999999f, 0.999999f, 0.999999f, 0.999999f};
  const v4f b = {1e-6f, 1e-6f, 1e-6f, 1e-6f};
#define INIT4(j) ((v4f){(float)(j), (float)(j), (float)(j), (float)(j)})
#define MULADD4(x) ((x) * a + b)
#define ADD4(x, y) ((x) + (y))
  DECLARE12(v4f, INIT4);
  for (long i = 0; i < iters; i++) {
    STEP12(MULADD4);
#if defined(__x86_64__) || defined(__i386__)
    OPAQUE12(VREG);
#endif
  }
  v4f s = SUM12(ADD4);
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
