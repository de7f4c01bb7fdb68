/* tensor.c - constant tensors and scalar element access.
 *
 * Element access goes through double or int64 so folding code is written once
 * for every numeric type, the 8- and 4-bit floats and the packed 4- and 2-bit
 * integers included (element i of a packed tensor sits at bits (i % k) * b of
 * byte i / k, low bits first). Conversions round to nearest even. The float8 /
 * float4 / e8m0 / packed rules are those of runtime/onnxc_rt.h (same
 * algorithms, kept in step by tests/test_casts.c): minifloats saturate to
 * their largest finite value (the Cast default), e8m0 rounds up, floats become
 * packed integers by truncation modulo 2^b.
 */
#include "ir.h"

#include <math.h>
#include <string.h>

Tensor *ir_tensor_new(Graph *g, DType dt, const Shape *s, Diag *d) {
  int64_t numel, nbytes;
  char sb[256];
  if (!shape_numel(s, &numel) || !dtype_bytes(dt, numel, &nbytes) || (uint64_t)nbytes > SIZE_MAX / 2) {
    if (d)
      diag_error(d, NULL, "tensor of type %s and shape %s is too large", dtype_name(dt),
                 shape_str(s, sb, sizeof sb));
    return NULL;
  }
  Tensor *t = arena_alloc(g->arena, sizeof *t);
  t->dt = dt;
  t->shape = *s;
  t->numel = numel;
  t->nbytes = nbytes;
  t->data = arena_alloc(g->arena, (size_t)nbytes);
  return t;
}

float ir_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    float f = ldexpf((float)man, -24);
    return sign ? -f : f;
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t ir_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)  /* inf or nan */
    return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
  if (ax >= 0x477ff000u)  /* rounds to >= 65520: overflow to inf */
    return (uint16_t)(sign | 0x7c00);
  if (ax < 0x38800000u) { /* subnormal half (or zero) */
    float a;
    memcpy(&a, &ax, 4);
    return (uint16_t)(sign | (uint16_t)lrintf(a * 16777216.0f)); /* 2^24, ties to even */
  }
  uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u) - (112u << 23);
  return (uint16_t)(sign | (r >> 13));
}

float ir_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t ir_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* ---- minifloats: float8 (four kinds), float4 e2m1, e8m0 --------------------- */

typedef struct MiniFloat {
  int mb, bias;          /* mantissa bits, exponent bias */
  uint32_t sb, maxc;     /* sign bit, largest finite code */
  uint32_t nan, infc;    /* code of +NaN; of +inf (0: none) */
  bool fnuz;             /* no -0, NaN is 0x80 */
} MiniFloat;

static const MiniFloat *minifloat(DType t) {
  static const MiniFloat e4m3fn = {3, 7, 0x80, 0x7e, 0x7f, 0, false};
  static const MiniFloat e4m3fnuz = {3, 8, 0x80, 0x7f, 0x80, 0, true};
  static const MiniFloat e5m2 = {2, 15, 0x80, 0x7b, 0x7e, 0x7c, false};
  static const MiniFloat e5m2fnuz = {2, 16, 0x80, 0x7f, 0x80, 0, true};
  static const MiniFloat e2m1 = {1, 1, 0x8, 0x7, 0x8, 0, false};
  switch (t) {
  case DT_F8E4M3FN: return &e4m3fn;
  case DT_F8E4M3FNUZ: return &e4m3fnuz;
  case DT_F8E5M2: return &e5m2;
  case DT_F8E5M2FNUZ: return &e5m2fnuz;
  case DT_F4E2M1: return &e2m1;
  default: return NULL;
  }
}

/* |x| (not NaN) rounded to nearest even: biased exponent << mb | mantissa,
 * possibly above the largest finite code. */
static uint32_t mf_round(double x, int mb, int bias) {
  uint64_t u;
  memcpy(&u, &x, 8);
  int e = (int)((u >> 52) & 0x7ff);
  if (e == 0)
    return 0;  /* double subnormals round to 0 in every minifloat */
  uint64_t frac = u & 0xfffffffffffffull, sig = frac | (1ull << 52), code;
  int te = e - 1023 + bias, shift;
  if (te >= 1) {
    shift = 52 - mb;
    code = ((uint64_t)te << mb) | (frac >> shift);
  } else {
    shift = 53 - mb - te;
    if (shift > 54)
      return 0;
    code = sig >> shift;
  }
  uint64_t rem = sig & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (code & 1)))
    code++;
  return code > 0xffff ? 0xffff : (uint32_t)code;
}

/* Saturating, as Cast by default: a value beyond the largest finite one
 * (infinities included) becomes it. Like ml_dtypes (the ONNX reference), a
 * double is rounded to float first. */
static uint8_t mf_encode(const MiniFloat *f, double v) {
  double x = (float)v;
  uint32_t sign = signbit(x) ? f->sb : 0;
  if (isnan(x))
    return (uint8_t)(f->fnuz ? 0x80 : f->nan ^ sign);
  uint32_t code = mf_round(x, f->mb, f->bias);
  if (code > f->maxc)
    code = f->maxc;
  if (code == 0 && f->fnuz)
    return 0;
  return (uint8_t)(code | sign);
}

static double mf_decode(const MiniFloat *f, uint32_t v) {
  uint32_t mag = v & (f->sb - 1), e = mag >> f->mb, m = mag & ((1u << f->mb) - 1);
  bool neg = (v & f->sb) != 0;
  /* NaN: 0x80 (FNUZ); above inf (e5m2); the +NaN code's magnitude (e4m3fn; e2m1 has none). */
  if (f->fnuz ? v == 0x80 : f->infc ? mag > f->infc : mag == f->nan)
    return neg ? -NAN : NAN;
  if (f->infc && mag == f->infc)
    return neg ? -INFINITY : INFINITY;
  double r = e == 0 ? ldexp(m, 1 - f->bias - f->mb) : ldexp(1.0 + ldexp(m, -f->mb), (int)e - f->bias);
  return neg ? -r : r;
}

/* e8m0 as onnx.numpy_helper.to_float8e8m0 computes it (saturate, round up). */
static uint8_t e8m0_encode(double x) {
  float f = (float)x;
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t e = (u >> 23) & 0xff;
  if (e == 0xff)
    return 0xff;
  return (uint8_t)(e + ((u & 0x7fffff) != 0 && e != 0xfe));
}

static double e8m0_decode(uint32_t v) { return v == 0xff ? NAN : ldexp(1.0, (int)v - 127); }

/* ---- packed 4- and 2-bit integers ------------------------------------------- */

static int64_t packed_get(const Tensor *t, int64_t i) {
  int bits = dtype_bits(t->dt), k = 8 / bits;
  unsigned v = (((const uint8_t *)t->data)[i / k] >> ((i % k) * bits)) & ((1u << bits) - 1);
  return dtype_is_signed(t->dt) && (v >> (bits - 1)) ? (int64_t)v - (1 << bits) : (int64_t)v;
}

static void packed_set(Tensor *t, int64_t i, uint64_t v) {
  int bits = dtype_bits(t->dt), k = 8 / bits, sh = (int)(i % k) * bits;
  unsigned mask = (1u << bits) - 1;
  uint8_t *p = (uint8_t *)t->data + i / k;
  *p = (uint8_t)((*p & ~(mask << sh)) | ((unsigned)(v & mask) << sh));
}

double tensor_get_f64(const Tensor *t, int64_t i) {
  const void *p = t->data;
  switch (t->dt) {
  case DT_F32: return ((const float *)p)[i];
  case DT_F64: return ((const double *)p)[i];
  case DT_F16: return ir_f16_to_f32(((const uint16_t *)p)[i]);
  case DT_BF16: return ir_bf16_to_f32(((const uint16_t *)p)[i]);
  case DT_U64: return (double)((const uint64_t *)p)[i];
  case DT_F8E8M0: return e8m0_decode(((const uint8_t *)p)[i]);
  case DT_F4E2M1: return mf_decode(minifloat(t->dt), (uint32_t)packed_get(t, i) & 0xf);
  case DT_F8E4M3FN: case DT_F8E4M3FNUZ: case DT_F8E5M2: case DT_F8E5M2FNUZ:
    return mf_decode(minifloat(t->dt), ((const uint8_t *)p)[i]);
  default: return (double)tensor_get_i64(t, i);
  }
}

int64_t tensor_get_i64(const Tensor *t, int64_t i) {
  const void *p = t->data;
  switch (t->dt) {
  case DT_U8: case DT_BOOL: return ((const uint8_t *)p)[i];
  case DT_I8: return ((const int8_t *)p)[i];
  case DT_U16: return ((const uint16_t *)p)[i];
  case DT_I16: return ((const int16_t *)p)[i];
  case DT_I32: return ((const int32_t *)p)[i];
  case DT_I64: return ((const int64_t *)p)[i];
  case DT_U32: return ((const uint32_t *)p)[i];
  case DT_U64: return (int64_t)((const uint64_t *)p)[i];
  case DT_U4: case DT_I4: case DT_U2: case DT_I2: return packed_get(t, i);
  case DT_F32: case DT_F64: case DT_F16: case DT_BF16: case DT_F8E4M3FN: case DT_F8E4M3FNUZ:
  case DT_F8E5M2: case DT_F8E5M2FNUZ: case DT_F4E2M1: case DT_F8E8M0: {
    double v = tensor_get_f64(t, i);
    if (isnan(v))
      return 0;
    if (v >= 9.2233720368547758e18)
      return INT64_MAX;
    if (v <= -9.2233720368547758e18)
      return INT64_MIN;
    return (int64_t)v;
  }
  default:
    IR_ASSERT(!"tensor_get_i64: unsupported dtype");
    return 0;
  }
}

void tensor_set_f64(Tensor *t, int64_t i, double v) {
  void *p = t->data;
  switch (t->dt) {
  case DT_F32: ((float *)p)[i] = (float)v; return;
  case DT_F64: ((double *)p)[i] = v; return;
  case DT_F16: ((uint16_t *)p)[i] = ir_f32_to_f16((float)v); return;
  case DT_BF16: ((uint16_t *)p)[i] = ir_f32_to_bf16((float)v); return;
  case DT_BOOL: ((uint8_t *)p)[i] = v != 0; return;
  case DT_F8E8M0: ((uint8_t *)p)[i] = e8m0_encode(v); return;
  case DT_F4E2M1: packed_set(t, i, mf_encode(minifloat(t->dt), v)); return;
  case DT_F8E4M3FN: case DT_F8E4M3FNUZ: case DT_F8E5M2: case DT_F8E5M2FNUZ:
    ((uint8_t *)p)[i] = mf_encode(minifloat(t->dt), v);
    return;
  case DT_U4: case DT_I4: case DT_U2: case DT_I2:
    /* Truncation modulo 2^bits; NaN, inf and huge values (multiples of 16) give 0. */
    packed_set(t, i, v > -9.2e18 && v < 9.2e18 ? (uint64_t)(int64_t)v : 0);
    return;
  default:
    if (isnan(v))
      v = 0;
    tensor_set_i64(t, i, v >= 9.2233720368547758e18 ? INT64_MAX
                         : v <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)v);
  }
}

void tensor_set_i64(Tensor *t, int64_t i, int64_t v) {
  void *p = t->data;
  switch (t->dt) {
  case DT_U8: ((uint8_t *)p)[i] = (uint8_t)v; return;
  case DT_BOOL: ((uint8_t *)p)[i] = v != 0; return;
  case DT_I8: ((int8_t *)p)[i] = (int8_t)v; return;
  case DT_U16: ((uint16_t *)p)[i] = (uint16_t)v; return;
  case DT_I16: ((int16_t *)p)[i] = (int16_t)v; return;
  case DT_I32: ((int32_t *)p)[i] = (int32_t)v; return;
  case DT_I64: ((int64_t *)p)[i] = v; return;
  case DT_U32: ((uint32_t *)p)[i] = (uint32_t)v; return;
  case DT_U64: ((uint64_t *)p)[i] = (uint64_t)v; return;
  case DT_U4: case DT_I4: case DT_U2: case DT_I2: packed_set(t, i, (uint64_t)v); return;
  case DT_F32: case DT_F64: case DT_F16: case DT_BF16: case DT_F8E4M3FN: case DT_F8E4M3FNUZ:
  case DT_F8E5M2: case DT_F8E5M2FNUZ: case DT_F4E2M1: case DT_F8E8M0:
    tensor_set_f64(t, i, (double)v);
    return;
  default:
    IR_ASSERT(!"tensor_set_i64: unsupported dtype");
  }
}
