/* float_bits.h - a float's bit pattern and back, for the unit tests that
 * sweep bit patterns (test_casts.c, test_lowp.c, test_f16_forms.c). */
#ifndef ONNXC_TESTS_FLOAT_BITS_H
#define ONNXC_TESTS_FLOAT_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

#endif
