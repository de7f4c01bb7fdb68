/* f16_form.c - one form of the runtime's float16 conversions
 * (runtime/onnxc_rt.h), compiled once per form by tests/opsc.cmake with the
 * flags that select it: portable C, F16C (-mf16c, ONNXC_RT_HALF) and AVX-512
 * (-mavx512f, ONNXC_RT_HALF). F16_FORM prefixes the wrappers, so the forms
 * link into one test (tests/test_f16_forms.c). */
#include "onnxc_rt.h"

#define F16_CAT2(a, b) a##b
#define F16_CAT(a, b) F16_CAT2(a, b)

float F16_CAT(F16_FORM, _to_f32)(uint16_t h);
uint16_t F16_CAT(F16_FORM, _to_f16)(float f);
void F16_CAT(F16_FORM, _to_f32_n)(float *d, const uint16_t *s, ptrdiff_t n);
void F16_CAT(F16_FORM, _to_f16_n)(uint16_t *d, const float *s, ptrdiff_t n);
int F16_CAT(F16_FORM, _instructions)(void);

float F16_CAT(F16_FORM, _to_f32)(uint16_t h) { return onnxc_f16_to_f32(h); }
uint16_t F16_CAT(F16_FORM, _to_f16)(float f) { return onnxc_f32_to_f16(f); }
void F16_CAT(F16_FORM, _to_f32_n)(float *d, const uint16_t *s, ptrdiff_t n) { onnxc_f16_to_f32_n(d, s, n); }
void F16_CAT(F16_FORM, _to_f16_n)(uint16_t *d, const float *s, ptrdiff_t n) { onnxc_f32_to_f16_n(d, s, n); }

/* 1 where this build took the F16C / AVX-512 code, 0 where the portable C */
int F16_CAT(F16_FORM, _instructions)(void) {
#ifdef ONNXC_RT_F16C
  return 1;
#else
  return 0;
#endif
}
