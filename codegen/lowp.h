/* lowp.h - float32 <-> bfloat16 / float16 conversions of --precision
 * (docs/precision.md), for the weights packed at compile time; the
 * generated code carries the same rules (emit_gemm_bf16.c's prelude).
 *
 * float32 -> bfloat16 as VCVTNEPS2BF16 (AVX512-BF16) does it: round to
 * nearest, ties to even; overflow past the largest bfloat16 gives infinity;
 * NaN stays NaN (quiet, sign kept); float32 subnormals become a signed zero.
 * bfloat16 -> float32 is exact.
 *
 * float32 -> float16 (IEEE half) as VCVTPS2PH with rounding 0 does it:
 * round to nearest, ties to even, half subnormals kept (float32 subnormals
 * are far below the smallest half and give a signed zero); overflow past
 * the largest half (65504; 65520 and above round up) gives infinity; NaN
 * stays NaN (quiet, sign and the top 9 payload bits kept). float16 ->
 * float32 is exact (NaN quieted, as VCVTPH2PS).
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

static inline uint16_t lowp_f16(float f) {
  uint32_t u, a;
  memcpy(&u, &f, 4);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  a = u & 0x7fffffffu;
  if (a > 0x7f800000u) /* NaN: quiet, the payload's top bits */
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) /* 65520 and above (infinity included): infinity */
    return (uint16_t)(sign | 0x7c00u);
  if (a >= 0x38800000u) /* a normal half: drop 13 bits, to nearest even; a carry may reach the exponent */
    return (uint16_t)(sign | ((a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13));
  if (a < 0x33000000u) /* below 2^-25 (half the smallest subnormal, 2^-24): zero */
    return sign;
  /* a half subnormal: the significand with its hidden bit, shifted to units of 2^-24 */
  uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126u - e; /* 14..24 */
  uint32_t q = m >> sh, rem = m & ((1u << sh) - 1u), halfw = 1u << (sh - 1u);
  if (rem > halfw || (rem == halfw && (q & 1u)))
    q++;
  return (uint16_t)(sign | q);
}

static inline float lowp_f16_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0x1fu) {
    u = sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u);
  } else if (e) {
    u = sign | ((e + 112u) << 23) | (m << 13);
  } else if (m) { /* subnormal: normalize */
    e = 113u;
    while (!(m & 0x400u)) {
      m <<= 1;
      e--;
    }
    u = sign | (e << 23) | ((m & 0x3ffu) << 13);
  } else {
    u = sign;
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}

#endif
