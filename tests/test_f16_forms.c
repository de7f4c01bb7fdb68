/* test_f16_forms.c - the three forms of the runtime's float16 conversions
 * (runtime/onnxc_rt.h: portable C; F16C instructions; AVX-512 selects and
 * vectors) give the same bits. Generated code takes the instruction forms
 * only where it converts float16 (ONNXC_RT_HALF) and the build's -march has
 * them, so a model's results must not depend on which form it got.
 *
 * Every half to float, and floats to half over a sweep of bit patterns
 * (every 61st of all 2^32, which meets every residue of the 13 bits that
 * rounding looks at, in every exponent), scalar and n-vector functions. The
 * one allowed difference, stated in the header: the portable half-to-float
 * keeps a signaling NaN signaling, where the instructions quiet it. A form
 * this CPU cannot run is reported as skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "float_bits.h"

#define FORM_DECLS(p)                                                  \
  float p##_to_f32(uint16_t h);                                        \
  uint16_t p##_to_f16(float f);                                        \
  void p##_to_f32_n(float *d, const uint16_t *s, ptrdiff_t n);         \
  void p##_to_f16_n(uint16_t *d, const float *s, ptrdiff_t n);         \
  int p##_instructions(void);
FORM_DECLS(port)
FORM_DECLS(f16c)
FORM_DECLS(avx512)

typedef struct Form {
  const char *name, *cpu;
  float (*to_f32)(uint16_t);
  uint16_t (*to_f16)(float);
  void (*to_f32_n)(float *, const uint16_t *, ptrdiff_t);
  void (*to_f16_n)(uint16_t *, const float *, ptrdiff_t);
  int (*instructions)(void);
} Form;

static const Form forms[] = {
  {"F16C", "f16c", f16c_to_f32, f16c_to_f16, f16c_to_f32_n, f16c_to_f16_n, f16c_instructions},
  {"AVX-512", "avx512f", avx512_to_f32, avx512_to_f16, avx512_to_f32_n, avx512_to_f16_n, avx512_instructions},
};


static int runnable(const Form *f) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (f->cpu[0] == 'f' ? !__builtin_cpu_supports("f16c") : !__builtin_cpu_supports("avx512f"))
    return 0;
  return 1;
#else
  (void)f;
  return 0;
#endif
}

enum { CHUNK = 4096 };

static void check_form(void **state) {
  const Form *f = *state;
  if (!runnable(f))
    skip();
  assert_int_equal(f->instructions(), 1); /* the build selected the instruction form */
  assert_int_equal(port_instructions(), 0);
  /* every half */
  static uint16_t h[65536];
  static float want[65536], got_n[65536];
  for (uint32_t u = 0; u < 65536; u++)
    h[u] = (uint16_t)u;
  port_to_f32_n(want, h, 65536);
  f->to_f32_n(got_n, h, 65536);
  for (uint32_t u = 0; u < 65536; u++) {
    uint32_t w = f32_bits(want[u]), g = f32_bits(f->to_f32((uint16_t)u)), gn = f32_bits(got_n[u]);
    assert_int_equal(w, f32_bits(port_to_f32((uint16_t)u)));
    int snan = (u & 0x7c00u) == 0x7c00u && (u & 0x3ffu) && !(u & 0x200u);
    if (snan)
      w |= 0x400000u; /* the instructions quiet a signaling NaN */
    if (g != w || gn != w)
      fail_msg("%s: half 0x%04x -> 0x%08x (scalar) 0x%08x (vector), portable 0x%08x", f->name, u, g, gn, w);
  }
  /* floats over a sweep of patterns, in chunks through the vector forms */
  static float x[CHUNK];
  static uint16_t wv[CHUNK], gv[CHUNK];
  uint64_t u = 0;
  while (u < 0x100000000ull) {
    int n = 0;
    for (; n < CHUNK && u < 0x100000000ull; n++, u += 61)
      x[n] = bits_f32((uint32_t)u);
    port_to_f16_n(wv, x, n);
    f->to_f16_n(gv, x, n);
    for (int i = 0; i < n; i++) {
      uint16_t ws = port_to_f16(x[i]), gs = f->to_f16(x[i]);
      if (ws != wv[i] || gs != wv[i] || gv[i] != wv[i])
        fail_msg("%s: float 0x%08x -> 0x%04x (scalar) 0x%04x (vector), portable 0x%04x / 0x%04x", f->name,
                 f32_bits(x[i]), gs, gv[i], ws, wv[i]);
    }
  }
  /* odd lengths: the vector loops' tails */
  for (int n = 1; n < 40; n++) {
    float a[40], b[40];
    uint16_t c[40], d[40];
    port_to_f32_n(a, h + 15000, n);
    f->to_f32_n(b, h + 15000, n);
    assert_memory_equal(a, b, sizeof(float) * (size_t)n);
    port_to_f16_n(c, a, n);
    f->to_f16_n(d, a, n);
    assert_memory_equal(c, d, sizeof(uint16_t) * (size_t)n);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    {"F16C_form", check_form, NULL, NULL, (void *)&forms[0]},
    {"AVX512_form", check_form, NULL, NULL, (void *)&forms[1]},
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
