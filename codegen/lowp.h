/* lowp.h - float32 <-> bfloat16 / float16 conversions of --precision
 * (docs/precision.md), for the weights packed at compile time; the
 * generated code carries the same rules (emit_gemm_bf16.c's prelude).
 *
 * float32 -> bfloat16 as VCVTNEPS2BF16 (AVX512-BF16) does it: round to
 * nearest, ties to even; overflow past the largest bfloat16 gives infinity;
 * NaN stays NaN (quiet, sign kept); float32 subnormals become a signed zero.
 * bfloat16 -> float32 is exact.
 */
#ifndef ONNXC_LOWP_H
#define ONNXC_LOWP_H

#include <stdint.h>
#include <string.h>

static inline uint16_t lowp_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0) /* zero and subnormals */
    return (uint16_t)((u >> 16) & 0x8000u);
  if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep the sign and the top payload bits, quiet */
    return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float lowp_bf16_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

#endif
