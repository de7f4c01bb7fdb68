/* gemm.c - a packed, register-blocked SGEMM prototype: what the design that
 * onnxc's MatMul/Gemm/Conv emitters should follow reaches on this machine.
 *
 * C[M,N] = A[M,K] * B[K,N], row-major float32, one thread. B plays the weight:
 * it is packed once, before timing (onnxc would do it at compile time), into
 * column panels of NR floats laid out k-major, so the micro-kernel reads it
 * with unit stride. A is packed per MC x KC block into row panels of MR.
 * Blocking (Goto/BLIS order): pc over K by KC, ic over M by MC (the packed A
 * block, MC x KC floats, stays in L2), jr over N by NR (one KC x NR panel of
 * B, 32 KB with AVX-512, streams through L1), then the MR x NR micro-kernel:
 * MR broadcasts of A and NR/16 (or /8) vector loads of B feed MR*NR/lanes
 * independent FMA accumulators held in registers for the whole KC loop.
 *
 *   AVX-512F: MR 8 x NR 32 -> 16 zmm accumulators;  AVX2+FMA: MR 6 x NR 16 -> 12 ymm
 *
 * The path is chosen at run time (__builtin_cpu_supports); --isa forces one.
 * N must be a multiple of NR here; a partial row tile goes through a buffer.
 * The real emitter knows every extent at compile time and would emit masked
 * edge tiles instead.
 *
 * Build: cc -O2 -o gemm bench/gemm.c      Run: ./gemm [--size N] [--isa avx512|avx2] [--json]
 */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if !(defined(__x86_64__) || defined(__i386__))
int main(void) {
  fprintf(stderr, "gemm: x86 only (AVX2/AVX-512 prototype)\n");
  return 2;
}
#else
#include <immintrin.h>

enum { KC = 256, MC = 96 };

typedef struct {
  const char *isa;
  int mr, nr;
  void (*kernel)(int kc, const float *ap, const float *bp, float *c, long ldc, int accumulate);
} Isa;

/* ---- micro-kernels: C[mr x nr] (+)= Ap[kc x mr] . Bp[kc x nr]
 *
 * The accumulators are named variables, written out row by row: with an
 * array and a loop over rows, gcc -O2 does not unroll it and keeps the
 * accumulators in memory (a load and a store around every FMA, ~4x slower).
 * onnxc's emitter generates the code anyway, so it should write them out too. */

#define ROW512(i)                                                   \
  do {                                                              \
    const __m512 a = _mm512_set1_ps(ap[i]);                         \
    c##i##0 = _mm512_fmadd_ps(a, b0, c##i##0);                      \
    c##i##1 = _mm512_fmadd_ps(a, b1, c##i##1);                      \
  } while (0)
#define STORE512(i)                                                 \
  do {                                                              \
    float *ci = c + (i) * ldc;                                      \
    if (accumulate) {                                               \
      c##i##0 = _mm512_add_ps(c##i##0, _mm512_loadu_ps(ci));        \
      c##i##1 = _mm512_add_ps(c##i##1, _mm512_loadu_ps(ci + 16));   \
    }                                                               \
    _mm512_storeu_ps(ci, c##i##0);                                  \
    _mm512_storeu_ps(ci + 16, c##i##1);                             \
  } while (0)

__attribute__((target("avx512f"))) static void kernel_avx512(int kc, const float *ap,
                                                             const float *bp, float *c,
                                                             long ldc, int accumulate) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
         c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00,
         c61 = c00, c70 = c00, c71 = c00;
  for (int k = 0; k < kc; k++) {
    const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
    ROW512(0); ROW512(1); ROW512(2); ROW512(3);
    ROW512(4); ROW512(5); ROW512(6); ROW512(7);
    ap += 8;
    bp += 32;
  }
  STORE512(0); STORE512(1); STORE512(2); STORE512(3);
  STORE512(4); STORE512(5); STORE512(6); STORE512(7);
}

#define ROW256(i)                                                   \
  do {                                                              \
    const __m256 a = _mm256_broadcast_ss(ap + (i));                 \
    c##i##0 = _mm256_fmadd_ps(a, b0, c##i##0);                      \
    c##i##1 = _mm256_fmadd_ps(a, b1, c##i##1);                      \
  } while (0)
#define STORE256(i)                                                 \
  do {                                                              \
    float *ci = c + (i) * ldc;                                      \
    if (accumulate) {                                               \
      c##i##0 = _mm256_add_ps(c##i##0, _mm256_loadu_ps(ci));        \
      c##i##1 = _mm256_add_ps(c##i##1, _mm256_loadu_ps(ci + 8));    \
    }                                                               \
    _mm256_storeu_ps(ci, c##i##0);                                  \
    _mm256_storeu_ps(ci + 8, c##i##1);                              \
  } while (0)

__attribute__((target("avx2,fma"))) static void kernel_avx2(int kc, const float *ap,
                                                            const float *bp, float *c,
                                                            long ldc, int accumulate) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
         c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int k = 0; k < kc; k++) {
    const __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
    ROW256(0); ROW256(1); ROW256(2); ROW256(3); ROW256(4); ROW256(5);
    ap += 6;
    bp += 16;
  }
  STORE256(0); STORE256(1); STORE256(2); STORE256(3); STORE256(4); STORE256(5);
}

/* ---- packing */

/* B[K,N] -> panels: for each NR-wide column panel j, for each k, NR floats. */
static void pack_b(const float *b, int k, int n, int nr, float *bp) {
  for (int j = 0; j < n; j += nr)
    for (int p = 0; p < k; p++)
      for (int x = 0; x < nr; x++) *bp++ = b[(long)p * n + j + x];
}

/* A[ic:ic+mc, pc:pc+kc] -> row panels of mr: for each k, mr floats; rows
 * past mc (the last, partial panel) are zeros. */
static void pack_a(const float *a, long lda, int mc, int kc, int mr, float *ap) {
  for (int i = 0; i < mc; i += mr)
    for (int p = 0; p < kc; p++)
      for (int r = 0; r < mr; r++) *ap++ = i + r < mc ? a[(long)(i + r) * lda + p] : 0.0f;
}

static void sgemm(const Isa *isa, int m, int n, int k, const float *a, const float *bp,
                  float *c, float *abuf) {
  const int mr = isa->mr, nr = isa->nr;
  const int mc = MC / mr * mr;
  for (int pc = 0; pc < k; pc += KC) {
    const int kc = k - pc < KC ? k - pc : KC;
    for (int ic = 0; ic < m; ic += mc) {
      const int mcc = m - ic < mc ? m - ic : mc;
      pack_a(a + (long)ic * k + pc, k, mcc, kc, mr, abuf);
      for (int jr = 0; jr < n; jr += nr) {
        /* panel jr/nr of B, rows pc.. : panel-major layout, k-major inside */
        const float *bpanel = bp + (long)(jr / nr) * k * nr + (long)pc * nr;
        for (int ir = 0; ir < mcc; ir += mr) {
          float *ctile = c + (long)(ic + ir) * n + jr;
          if (ir + mr <= mcc) {
            isa->kernel(kc, abuf + (long)ir * kc, bpanel, ctile, n, pc > 0);
            continue;
          }
          /* partial tile: through a full-size buffer, valid rows copied back */
          float tile[8 * 32];
          const int rows = mcc - ir;
          const size_t row_bytes = sizeof(float) * (size_t)nr;
          for (int r = 0; r < rows; r++) memcpy(tile + r * nr, ctile + (long)r * n, row_bytes);
          isa->kernel(kc, abuf + (long)ir * kc, bpanel, tile, nr, pc > 0);
          for (int r = 0; r < rows; r++) memcpy(ctile + (long)r * n, tile + r * nr, row_bytes);
        }
      }
    }
  }
}

/* ---- driver */

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* LCG: uniform in [-1, 1), the same on every platform */
static float uniform(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)(*s >> 9) / 4194304.0f - 1.0f;
}

static float *aligned_floats(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 64, n * sizeof(float) + 64) != 0) return NULL;
  return p;
}

/* max |C - A.B| / (1 + |A.B|) over a sample of entries, in double */
static double check(int m, int n, int k, const float *a, const float *b, const float *c) {
  double worst = 0;
  for (int s = 0; s < 512; s++) {
    int i = (int)((s * 7919L) % m), j = (int)((s * 104729L) % n);
    double ref = 0;
    for (int p = 0; p < k; p++) ref += (double)a[(long)i * k + p] * b[(long)p * n + j];
    double err = fabs(c[(long)i * n + j] - ref) / (1 + fabs(ref));
    if (err > worst) worst = err;
  }
  return worst;
}

int main(int argc, char **argv) {
  int size = 1024, trials = 20, json = 0;
  const char *want = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--size") && i + 1 < argc) size = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--isa") && i + 1 < argc) want = argv[++i];
    else if (!strcmp(argv[i], "--json")) json = 1;
    else {
      fprintf(stderr, "usage: %s [--size N] [--trials T] [--isa avx512|avx2] [--json]\n",
              argv[0]);
      return 2;
    }
  }
  static const Isa isas[] = {{"avx512", 8, 32, kernel_avx512}, {"avx2", 6, 16, kernel_avx2}};
  __builtin_cpu_init();
  const int has512 = __builtin_cpu_supports("avx512f");
  const int has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const Isa *isa = NULL;
  if ((!want || !strcmp(want, "avx512")) && has512) isa = &isas[0];
  else if ((!want || !strcmp(want, "avx2")) && has2) isa = &isas[1];
  if (!isa) {
    fprintf(stderr, "gemm: the CPU lacks %s\n", want ? want : "AVX2+FMA");
    return 2;
  }
  if (size <= 0 || size % isa->nr != 0) {
    fprintf(stderr, "gemm: --size %d is not a multiple of NR = %d\n", size, isa->nr);
    return 2;
  }
  const int m = size, n = size, k = size;
  float *a = aligned_floats((size_t)m * k), *b = aligned_floats((size_t)k * n);
  float *bp = aligned_floats((size_t)k * n), *c = aligned_floats((size_t)m * n);
  float *abuf = aligned_floats((size_t)MC * KC);
  double *times = malloc(sizeof(double) * (size_t)(trials > 0 ? trials : 1));
  double *cpu = malloc(sizeof(double) * (size_t)(trials > 0 ? trials : 1));
  if (!a || !b || !bp || !c || !abuf || !times || !cpu || trials < 1) {
    fprintf(stderr, "gemm: out of memory or bad --trials\n");
    return 2;
  }
  unsigned s = 12345;
  for (long i = 0; i < (long)m * k; i++) a[i] = uniform(&s);
  for (long i = 0; i < (long)k * n; i++) b[i] = uniform(&s);
  pack_b(b, k, n, isa->nr, bp); /* compile time in onnxc: not timed */

  sgemm(isa, m, n, k, a, bp, c, abuf); /* warm-up */
  double err = check(m, n, k, a, b, c);
  /* wall time, and CPU time of this thread (wall less preemption: the
   * figure that survives a busy machine) */
  for (int t = 0; t < trials; t++) {
    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC);
    sgemm(isa, m, n, k, a, bp, c, abuf);
    times[t] = clock_s(CLOCK_MONOTONIC) - t0;
    cpu[t] = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
  }
  qsort(times, (size_t)trials, sizeof *times, cmp_double);
  qsort(cpu, (size_t)trials, sizeof *cpu, cmp_double);
  const double flop = 2.0 * m * n * k;
  const double best = flop / times[0] * 1e-9, median = flop / times[trials / 2] * 1e-9;
  const double cpu_median = flop / cpu[trials / 2] * 1e-9;
  if (json)
    printf("{\"isa\": \"%s\", \"size\": %d, \"mr\": %d, \"nr\": %d, \"best_gflops\": %.2f, "
           "\"median_gflops\": %.2f, \"cpu_median_gflops\": %.2f, \"best_ms\": %.3f, "
           "\"median_ms\": %.3f, \"cpu_median_ms\": %.3f, \"max_rel_err\": %.2e}\n",
           isa->isa, size, isa->mr, isa->nr, best, median, cpu_median, times[0] * 1e3,
           times[trials / 2] * 1e3, cpu[trials / 2] * 1e3, err);
  else
    printf("sgemm %dx%dx%d %s (%dx%d tile, KC %d, MC %d): wall best %.1f GFLOP/s (%.2f ms), "
           "median %.1f; thread CPU median %.1f GFLOP/s (%.2f ms); max rel err %.1e\n", m, n, k,
           isa->isa, isa->mr, isa->nr, KC, MC, best, times[0] * 1e3, median, cpu_median,
           cpu[trials / 2] * 1e3, err);
  free(a), free(b), free(bp), free(c), free(abuf), free(times), free(cpu);
  return err > 1e-4;
}
#endif
