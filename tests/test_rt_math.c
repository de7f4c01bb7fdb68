/* test_rt_math.c - the accuracy of the runtime's vectorizable float
 * functions (runtime/onnxc_rt.h: onnxc_expf, onnxc_erff, onnxc_tanhf), which
 * generated loops use for Exp, Erf, Tanh, Sigmoid, Softmax and GELU
 * epilogues: against the C library in double precision over a sweep of
 * float bit patterns (every 1021st, both signs), in ulps of the exact result,
 * and their special values. The bounds are those the header states, with a
 * margin for builds without fused multiply-adds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "onnxc_rt.h"

static double ulps(float got, double want) {
  float w = (float)fabs(want);
  int e = 0;
  frexpf(w, &e);
  double ulp = ldexp(1.0, e - 24), tiny = ldexp(1.0, -149);
  if (w == 0.0f || ulp < tiny)
    ulp = tiny;
  return fabs((double)got - want) / ulp;
}

typedef struct Sweep {
  double worst;
  float at;
} Sweep;

/* f against ref over |x| in [lo, hi] (bit patterns), both signs */
static Sweep sweep(float (*f)(float), double (*ref)(double), float lo, float hi) {
  Sweep s = {0.0, 0.0f};
  uint32_t a, b;
  memcpy(&a, &lo, 4);
  memcpy(&b, &hi, 4);
  for (uint32_t u = a; u <= b && u >= a; u += 1021) {
    float x;
    memcpy(&x, &u, 4);
    for (int sg = 0; sg < 2; sg++) {
      float v = sg ? -x : x;
      double d = ulps(f(v), ref((double)v));
      if (d > s.worst) {
        s.worst = d;
        s.at = v;
      }
    }
  }
  return s;
}

static float rt_erf(float x) { return onnxc_erff(x); }
static float rt_tanh(float x) { return onnxc_tanhf(x); }
static float rt_exp(float x) { return onnxc_expf(x); }
static double exp_pos(double x) { return exp(x); }

static void test_erf(void **state) {
  (void)state;
  Sweep s = sweep(rt_erf, erf, 1e-30f, 10.0f);
  print_message("erf: %.2f ulp at %g\n", s.worst, (double)s.at);
  assert_true(s.worst <= 2.0);
  assert_true(isnan(onnxc_erff(NAN)));
  assert_true(onnxc_erff(INFINITY) == 1.0f && onnxc_erff(-INFINITY) == -1.0f);
  assert_true(onnxc_erff(0.0f) == 0.0f && signbit(onnxc_erff(-0.0f)));
  assert_true(onnxc_erff(3.95f) == 1.0f && onnxc_erff(-20.0f) == -1.0f);
  /* both sides of the pieces' borders, |x| = 1 and 2.05, and the clamp at 3.96 */
  {
    const float at[] = {0.99999994f, 1.0f, 2.0499997f, 2.05f, 2.0500002f, 3.9199998f, 3.96f, 3.9600003f};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
      assert_true(ulps(onnxc_erff(at[i]), erf((double)at[i])) <= 2.0);
      assert_true(onnxc_erff(-at[i]) == -onnxc_erff(at[i]));
    }
  }
}

static void test_tanh(void **state) {
  (void)state;
  Sweep s = sweep(rt_tanh, tanh, 1e-30f, 20.0f);
  print_message("tanh: %.2f ulp at %g\n", s.worst, (double)s.at);
  assert_true(s.worst <= 3.0);
  assert_true(isnan(onnxc_tanhf(NAN)));
  assert_true(onnxc_tanhf(INFINITY) == 1.0f && onnxc_tanhf(-INFINITY) == -1.0f);
  assert_true(onnxc_tanhf(12.0f) == 1.0f && onnxc_tanhf(0.0f) == 0.0f);
}

static void test_exp(void **state) {
  (void)state;
  /* normal results: |x| up to 87 */
  Sweep s = sweep(rt_exp, exp_pos, 1e-30f, 87.0f);
  print_message("exp: %.2f ulp at %g\n", s.worst, (double)s.at);
  assert_true(s.worst <= 2.0);
  assert_true(isnan(onnxc_expf(NAN)));
  assert_true(onnxc_expf(-100.0f) == 0.0f && isinf(onnxc_expf(100.0f)));
  assert_true(onnxc_expf(0.0f) == 1.0f);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_erf), cmocka_unit_test(test_tanh),
                                     cmocka_unit_test(test_exp)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
