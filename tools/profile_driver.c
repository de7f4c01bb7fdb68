/* profile_driver.c - the C program that onnxc profile builds and runs.
 *
 * It links two builds of the same compiled model: "model" with --profile
 * hooks and "base" without, as users would ship it. Inputs are random with a
 * fixed seed (floats uniform in [-1, 1), other types zero). After W warm-up
 * runs of each, R rounds (--runs, or as many as fit in about a second, 10
 * to 200) each run base_run_v (the end-to-end figure) and then
 * model_run_profiled, whose hook records every kernel's begin and end on each
 * thread. Then it measures the machine: single-core float32 FMA throughput
 * (the method of bench/peak.c: 12 independent FMA chains in vector registers,
 * best of 2 ms trials) and memory bandwidth (a memcpy of 64 MiB, read plus
 * written bytes, best of 5). It prints one fact a line for profile.c to read:
 *   runs R | peak GFLOPS | bandwidth GBS | run R E2E_US START_US WALL_US |
 *   ev R KERNEL THREAD BEGIN_US END_US (from the first profiled run's start)
 */
#include "tools.h"

#include <string.h>

static const char *const probe_text =
    "#if defined(__AVX512F__)\n#define VB 64\n#elif defined(__AVX__)\n#define VB 32\n#else\n#define VB 16\n#endif\n"
    "typedef float vf __attribute__((vector_size(VB)));\n"
    "#if defined(__AVX512F__)\n#define OPQ(x) __asm__ __volatile__(\"\" : \"+v\"(x))\n"
    "#elif defined(__x86_64__) || defined(__i386__)\n#define OPQ(x) __asm__ __volatile__(\"\" : \"+x\"(x))\n"
    "#elif defined(__aarch64__)\n#define OPQ(x) __asm__ __volatile__(\"\" : \"+w\"(x))\n#else\n#define OPQ(x) (void)0\n#endif\n"
    "#define ALL12(M) M(c0); M(c1); M(c2); M(c3); M(c4); M(c5); M(c6); M(c7); M(c8); M(c9); M(c10); M(c11)\n"
    "#define STEP(x) x = x * a + b\n"
    "/* acc = acc * a + b: an FMA (gnu11 contracts it) that converges, no denormals */\n"
    "static float fma_loop(long iters) {\n"
    "  vf a, b, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, s;\n  int i;\n  long k;\n"
    "  for (i = 0; i < VB / 4; i++) { a[i] = 0.999999f; b[i] = 1e-6f; }\n"
    "  c0 = b * 1.f; c1 = b * 2.f; c2 = b * 3.f; c3 = b * 4.f; c4 = b * 5.f; c5 = b * 6.f;\n"
    "  c6 = b * 7.f; c7 = b * 8.f; c8 = b * 9.f; c9 = b * 10.f; c10 = b * 11.f; c11 = b * 12.f;\n"
    "  for (k = 0; k < iters; k++) {\n    ALL12(STEP);\n    ALL12(OPQ);\n  }\n"
    "  s = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;\n"
    "  for (i = 1; i < VB / 4; i++) s[0] += s[i];\n  return s[0];\n}\n\n"
    "static double peak_gflops(void) {\n"
    "  long it = 1000;\n  double best = 0, t, start;\n  volatile float sink = 0;\n"
    "  for (;;) {\n    t = now_us();\n    sink += fma_loop(it);\n    if (now_us() - t > 2000) break;\n    it *= 2;\n  }\n"
    "  start = now_us();\n"
    "  while (now_us() - start < 200000) {\n    double g;\n    t = now_us();\n    sink += fma_loop(it);\n"
    "    t = now_us() - t;\n    g = 24.0 * (VB / 4) * (double)it / (t * 1e3);\n    if (g > best) best = g;\n  }\n"
    "  (void)sink;\n  return best;\n}\n\n"
    "static double bandwidth_gbs(void) {\n"
    "  size_t n = (size_t)64 << 20;\n  char *x = malloc(n), *y = malloc(n);\n  double best = 0;\n  int i;\n"
    "  /* called through a volatile pointer: clang -O3 saw that one byte of y is\n"
    "   * read and dropped the copy (a bandwidth of millions of GB/s) */\n"
    "  void *(*volatile copy)(void *, const void *, size_t) = memcpy;\n"
    "  if (!x || !y) return 0;\n  memset(x, 1, n);\n  memset(y, 0, n);\n"
    "  for (i = 0; i < 6; i++) {\n    double t = now_us(), g;\n    copy(y, x, n);\n    t = now_us() - t;\n"
    "    g = 2.0 * (double)n / (t * 1e3);\n    if (i > 0 && g > best) best = g; /* the first touches the pages */\n"
    "    x[i] = y[n - 1 - (size_t)i];\n  }\n  free(x);\n  free(y);\n  return best;\n}\n\n";

#define AUTO_MAX_RUNS 200

void profile_emit_driver(Buf *h, const Graph *g, int threads, int runs, int warmup, int64_t arena) {
  buf_puts(h, "#define _POSIX_C_SOURCE 199309L\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
              "#include <time.h>\n#include \"model.h\"\n#include \"base.h\"\n\n");
  buf_printf(h, "#define NK (MODEL_KERNELS > 0 ? MODEL_KERNELS : 1)\n#define NT %d\n#define MAXRUNS %d\n"
                "#define WARMUP %d\n\n", threads, runs > 0 ? runs : AUTO_MAX_RUNS, warmup);
  buf_puts(h, "static double now_us(void) {\n  struct timespec ts;\n  clock_gettime(CLOCK_MONOTONIC, &ts);\n"
              "  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;\n}\n\n");
  buf_puts(h, probe_text);
  buf_puts(h, "typedef struct Rec {\n  double t0;\n  int run;\n  double *ev;\n} Rec;\n\n"
              "/* Threads write different slots: no lock needed. */\n"
              "static void hook(void *user, int k, int phase, int th) {\n  Rec *r = (Rec *)user;\n"
              "  if (r->run >= 0 && k >= 0 && k < NK && th >= 0 && th < NT && (phase == 0 || phase == 1))\n"
              "    r->ev[(((size_t)r->run * NK + (size_t)k) * NT + (size_t)th) * 2 + (size_t)phase] = now_us() - r->t0;\n}\n\n"
              "static unsigned rng = 12345u;\n"
              "static float rnd(void) {\n  rng ^= rng << 13;\n  rng ^= rng >> 17;\n  rng ^= rng << 5;\n"
              "  return (float)(rng >> 8) / 8388608.0f - 1.0f;\n}\n\n");
  int n_dyn = 0;
  for (int i = 0; i < g->n_outputs; i++)
    n_dyn += g->outputs[i]->dyn_dims != 0;
  buf_printf(h, "int main(void) {\n  void *in[%d];\n  void *out[%d];\n  void *arena = NULL;\n"
                "  static double e2e[MAXRUNS], start[MAXRUNS], wall[MAXRUNS];\n  double t;\n  Rec rec;\n"
                "  int r, k, th, rc = 0, runs = %d;\n  size_t i;\n",
             g->n_inputs + 1, g->n_outputs + n_dyn + 1, runs);
  for (int i = 0; i < g->n_inputs; i++) {
    const Value *v = g->inputs[i];
    int64_t n = 0, b = 0;
    shape_numel(&v->shape, &n);
    dtype_bytes(v->dt, n, &b);
    buf_printf(h, "  in[%d] = calloc(1, %lld + 1);\n  if (!in[%d]) return 3;\n", i, (long long)b, i);
    if (v->dt == DT_F32)
      buf_printf(h, "  for (i = 0; i < %lld; i++) ((float *)in[%d])[i] = rnd();\n", (long long)n, i);
    else if (v->dt == DT_F64)
      buf_printf(h, "  for (i = 0; i < %lld; i++) ((double *)in[%d])[i] = rnd();\n", (long long)n, i);
  }
  for (int i = 0, k = 0; i < g->n_outputs; i++) {
    int64_t n = 0, b = 0;
    shape_numel(&g->outputs[i]->shape, &n);
    dtype_bytes(g->outputs[i]->dt, n, &b);
    buf_printf(h, "  out[%d] = calloc(1, %lld + 1);\n  if (!out[%d]) return 3;\n", i, (long long)b, i);
    if (g->outputs[i]->dyn_dims)
      buf_printf(h, "  out[%d] = calloc(%d, 8);\n", g->n_outputs + k++, IR_MAX_RANK);
  }
  if (arena > 0)
    buf_printf(h, "  arena = aligned_alloc(64, %lld);\n  if (!arena) return 3;\n  memset(arena, 0, %lld);\n",
               (long long)((arena + 63) / 64 * 64), (long long)arena);
  buf_puts(h, "  rec.ev = malloc((size_t)MAXRUNS * NK * NT * 2 * sizeof(double));\n  if (!rec.ev) return 3;\n"
              "  for (i = 0; i < (size_t)MAXRUNS * NK * NT * 2; i++) rec.ev[i] = -1;\n  rec.run = -1;\n  rec.t0 = now_us();\n"
              "  for (r = 0; r < WARMUP; r++) {\n"
              "    rc |= base_run_v(arena, (const void *const *)in, out);\n"
              "    rc |= model_run_profiled(arena, (const void *const *)in, out, hook, &rec);\n  }\n"
              "  if (runs == 0) { /* auto: about a second of base runs */\n    t = now_us();\n"
              "    rc |= base_run_v(arena, (const void *const *)in, out);\n    t = now_us() - t;\n"
              "    runs = t * 10 > 1e6 ? 10 : t * MAXRUNS < 1e6 ? MAXRUNS : (int)(1e6 / t);\n  }\n"
              "  /* interleaved, so a busy spell of the machine hits both alike */\n"
              "  for (r = 0; r < runs; r++) {\n    t = now_us();\n"
              "    rc |= base_run_v(arena, (const void *const *)in, out);\n    e2e[r] = now_us() - t;\n"
              "    if (r == 0) rec.t0 = now_us();\n    rec.run = r;\n    t = now_us();\n"
              "    rc |= model_run_profiled(arena, (const void *const *)in, out, hook, &rec);\n"
              "    wall[r] = now_us() - t;\n    start[r] = t - rec.t0;\n    rec.run = -1;\n  }\n");
  if (threads > 1)
    buf_puts(h, "  model_free_threads();\n  base_free_threads();\n");
  buf_puts(h, "  if (rc) {\n    fprintf(stderr, \"the model's run returned an error\\n\");\n    return 4;\n  }\n"
              "  printf(\"runs %d\\npeak %.4f\\nbandwidth %.4f\\n\", runs, peak_gflops(), bandwidth_gbs());\n"
              "  for (r = 0; r < runs; r++) {\n    printf(\"run %d %.3f %.3f %.3f\\n\", r, e2e[r], start[r], wall[r]);\n"
              "    for (k = 0; k < NK; k++)\n      for (th = 0; th < NT; th++) {\n"
              "        const double *e = rec.ev + (((size_t)r * NK + (size_t)k) * NT + (size_t)th) * 2;\n"
              "        if (e[0] >= 0 && e[1] >= e[0])\n"
              "          printf(\"ev %d %d %d %.3f %.3f\\n\", r, k, th, e[0], e[1]);\n      }\n  }\n");
  buf_printf(h, "  for (k = 0; k < %d; k++) free(in[k]);\n  for (k = 0; k < %d; k++) free(out[k]);\n"
                "  free(arena);\n  free(rec.ev);\n  return 0;\n}\n",
             g->n_inputs, g->n_outputs + n_dyn);
}
