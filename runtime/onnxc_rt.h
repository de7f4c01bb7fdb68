/* onnxc_rt.h - the whole runtime of onnxc-generated C code.
 *
 * Generated sources include this header and nothing else from onnxc. It
 * holds the status codes of NAME_run and a few static inline helpers. It needs
 * only <stdint.h>, <stddef.h> and <math.h>; no allocation, no I/O, no global
 * state, so it builds freestanding (apart from libm) for any C99 target.
 */
#ifndef ONNXC_RT_H
#define ONNXC_RT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Status codes returned by NAME_run. */
#define ONNXC_OK 0
#define ONNXC_ERR_NULL_ARG 1     /* arena, an input or an output was NULL */
#define ONNXC_ERR_BAD_INDEX 2    /* a data-dependent index (Gather...) was out of range */

/* Weights are placed in this section when the model was compiled with
 * --weights-section; otherwise the attribute is empty. */
#if defined(__GNUC__) || defined(__clang__)
#define ONNXC_ALIGNED(n) __attribute__((aligned(n)))
#define ONNXC_SECTION(s) __attribute__((section(s)))
#else
#define ONNXC_ALIGNED(n)
#define ONNXC_SECTION(s)
#endif

/* Marks NAME_run as the library's exported entry point when the rest of the
 * generated code is built with hidden visibility. */
#if defined(__GNUC__) || defined(__clang__)
#define ONNXC_API __attribute__((visibility("default")))
#else
#define ONNXC_API
#endif

/* Portable infinity and NaN for float literals in generated code. */
#define ONNXC_INF_F ((float)INFINITY)
#define ONNXC_NAN_F ((float)NAN)

/* IEEE half <-> float, bit exact, round to nearest even. */
static inline float onnxc_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  union { uint32_t u; float f; } c;
  if (exp == 0x1fu) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    float f = (float)man * (1.0f / 16777216.0f);
    return sign ? -f : f;
  } else {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  }
  c.u = bits;
  return c.f;
}

static inline uint16_t onnxc_f32_to_f16(float f) {
  union { uint32_t u; float f; } c;
  uint32_t x, ax, r;
  uint16_t sign;
  c.f = f;
  x = c.u;
  sign = (uint16_t)((x >> 16) & 0x8000u);
  ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)
    return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  if (ax >= 0x477ff000u)
    return (uint16_t)(sign | 0x7c00u);
  if (ax < 0x38800000u) {
    c.u = ax;
    return (uint16_t)(sign | (uint16_t)lrintf(c.f * 16777216.0f));
  }
  r = ax + 0xfffu + ((ax >> 13) & 1u) - (112u << 23);
  return (uint16_t)(sign | (r >> 13));
}

static inline float onnxc_bf16_to_f32(uint16_t h) {
  union { uint32_t u; float f; } c;
  c.u = (uint32_t)h << 16;
  return c.f;
}

static inline uint16_t onnxc_f32_to_bf16(float f) {
  union { uint32_t u; float f; } c;
  c.f = f;
  if ((c.u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((c.u >> 16) | 0x40u);
  c.u += 0x7fffu + ((c.u >> 16) & 1u);
  return (uint16_t)(c.u >> 16);
}

#endif
