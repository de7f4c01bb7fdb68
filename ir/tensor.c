/* tensor.c - constant tensors and scalar element access.
 *
 * Element access goes through double or int64 so folding code is written once
 * for every numeric type. f16/bf16 conversions round to nearest even.
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

double tensor_get_f64(const Tensor *t, int64_t i) {
  const void *p = t->data;
  switch (t->dt) {
  case DT_F32: return ((const float *)p)[i];
  case DT_F64: return ((const double *)p)[i];
  case DT_F16: return ir_f16_to_f32(((const uint16_t *)p)[i]);
  case DT_BF16: return ir_bf16_to_f32(((const uint16_t *)p)[i]);
  case DT_U64: return (double)((const uint64_t *)p)[i];
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
  case DT_F32: case DT_F64: case DT_F16: case DT_BF16: {
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
  case DT_F32: case DT_F64: case DT_F16: case DT_BF16:
    tensor_set_f64(t, i, (double)v);
    return;
  default:
    IR_ASSERT(!"tensor_set_i64: unsupported dtype");
  }
}
