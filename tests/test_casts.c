/* test_casts.c - unit tests of the narrow-type conversions and the training
 * corners of BatchNormalization and Dropout.
 *
 * The float8 / float4 / e8m0 / packed-integer conversions exist twice: as
 * static inline functions in runtime/onnxc_rt.h (generated code) and inside
 * ir/tensor.c (folding, `onnxc check`). These tests pin the runtime ones to
 * hand-checked values (round trips, saturation, NaN and inf, ties, packing)
 * and check that tensor.c agrees with them on every code and on a sweep of
 * inputs. Expected encodings are those of ml_dtypes, which the ONNX
 * reference implementation and its test data use. Then Cast/CastLike
 * attributes and the inference of training-mode BatchNormalization and
 * Dropout (passes/infer_shape_ops.c, passes/infer_norm.c).
 */
#include "test_util.h"

#include <math.h>

#include "onnxc_rt.h"
#include "float_bits.h"

/* ---- the runtime's minifloats ------------------------------------------------- */

typedef struct F8 {
  const char *name;
  DType dt;
  uint8_t (*enc)(float, int);
  float (*dec)(uint8_t);
  uint8_t maxc;      /* largest finite code */
  float max;         /* its value */
  bool fnuz;
} F8;

static const F8 f8s[4] = {
    {"e4m3fn", DT_F8E4M3FN, onnxc_f32_to_f8e4m3fn, onnxc_f8e4m3fn_to_f32, 0x7e, 448.0f, false},
    {"e4m3fnuz", DT_F8E4M3FNUZ, onnxc_f32_to_f8e4m3fnuz, onnxc_f8e4m3fnuz_to_f32, 0x7f, 240.0f, true},
    {"e5m2", DT_F8E5M2, onnxc_f32_to_f8e5m2, onnxc_f8e5m2_to_f32, 0x7b, 57344.0f, false},
    {"e5m2fnuz", DT_F8E5M2FNUZ, onnxc_f32_to_f8e5m2fnuz, onnxc_f8e5m2fnuz_to_f32, 0x7f, 57344.0f, true},
};

/* Every code decodes to a value that encodes back to the same code, in both
 * saturation modes; NaN codes decode to NaN and encode to the canonical NaN. */
static void test_f8_round_trip(void **state) {
  (void)state;
  for (int k = 0; k < 4; k++) {
    const F8 *t = &f8s[k];
    for (unsigned v = 0; v < 256; v++) {
      float f = t->dec((uint8_t)v);
      if (isnan(f)) {
        uint8_t c = t->enc(f, 1);
        assert_true(isnan(t->dec(c)));
        continue;
      }
      if (isinf(f)) {  /* e5m2 only: inf survives without saturation */
        assert_int_equal(t->enc(f, 0), v);
        assert_int_equal(t->enc(f, 1), (v & 0x80) | t->maxc);
        continue;
      }
      if (t->enc(f, 1) != v || t->enc(f, 0) != v)
        fail_msg("%s: code 0x%02x -> %g -> 0x%02x", t->name, v, (double)f, t->enc(f, 1));
    }
    assert_true(t->dec(t->maxc) == t->max);
  }
}

static void test_f8_saturation(void **state) {
  (void)state;
  const float big[] = {1e6f, (float)INFINITY, 1e30f};
  for (int k = 0; k < 4; k++) {
    const F8 *t = &f8s[k];
    for (int i = 0; i < 3; i++) {
      assert_int_equal(t->enc(big[i], 1), t->maxc);
      assert_int_equal(t->enc(-big[i], 1), 0x80 | t->maxc);
    }
  }
  /* Without saturation: NaN for e4m3fn (with the sign), inf for e5m2, 0x80 for FNUZ. */
  assert_int_equal(onnxc_f32_to_f8e4m3fn(1e6f, 0), 0x7f);
  assert_int_equal(onnxc_f32_to_f8e4m3fn(-(float)INFINITY, 0), 0xff);
  assert_int_equal(onnxc_f32_to_f8e5m2(1e6f, 0), 0x7c);
  assert_int_equal(onnxc_f32_to_f8e5m2(-1e6f, 0), 0xfc);
  assert_int_equal(onnxc_f32_to_f8e4m3fnuz(1e6f, 0), 0x80);
  assert_int_equal(onnxc_f32_to_f8e5m2fnuz(-(float)INFINITY, 0), 0x80);
  /* The overflow threshold is the rounding midpoint, ties to even: 464 lies
   * between 448 (0x7e, even) and 480 (would be 0x7f). */
  assert_int_equal(onnxc_f32_to_f8e4m3fn(464.0f, 0), 0x7e);
  assert_int_equal(onnxc_f32_to_f8e4m3fn(464.5f, 0), 0x7f);
  assert_int_equal(onnxc_f32_to_f8e5m2(61440.0f, 0), 0x7c);  /* 57344 odd: tie goes up */
  assert_int_equal(onnxc_f32_to_f8e5m2(61439.0f, 0), 0x7b);
}

static void test_f8_nan_zero_inf(void **state) {
  (void)state;
  float nan = (float)NAN, nnan = -(float)NAN;
  assert_int_equal(onnxc_f32_to_f8e4m3fn(nan, 1), 0x7f);
  assert_int_equal(onnxc_f32_to_f8e4m3fn(nnan, 1), 0xff);
  assert_int_equal(onnxc_f32_to_f8e5m2(nan, 0), 0x7e);
  assert_int_equal(onnxc_f32_to_f8e5m2(nnan, 0), 0xfe);
  assert_int_equal(onnxc_f32_to_f8e4m3fnuz(nnan, 1), 0x80);
  assert_int_equal(onnxc_f32_to_f8e5m2fnuz(nan, 0), 0x80);
  /* -0 keeps its sign except in FNUZ, where tiny negatives become +0 too. */
  assert_int_equal(onnxc_f32_to_f8e4m3fn(-0.0f, 1), 0x80);
  assert_int_equal(onnxc_f32_to_f8e5m2(-1e-7f, 1), 0x80);
  assert_int_equal(onnxc_f32_to_f8e4m3fnuz(-0.0f, 1), 0x00);
  assert_int_equal(onnxc_f32_to_f8e5m2fnuz(-1e-7f, 1), 0x00);
  assert_true(isinf(onnxc_f8e5m2_to_f32(0xfc)) && onnxc_f8e5m2_to_f32(0xfc) < 0);
  assert_true(isnan(onnxc_f8e5m2_to_f32(0x7d)));
  assert_true(isnan(onnxc_f8e4m3fn_to_f32(0xff)));
  assert_true(isnan(onnxc_f8e4m3fnuz_to_f32(0x80)));
  assert_true(onnxc_f8e5m2fnuz_to_f32(0x00) == 0.0f);
}

static void test_f8_rounding_ties(void **state) {
  (void)state;
  /* e4m3fn near 1: 1.0 = 0x38, 1.125 = 0x39, 1.25 = 0x3a. */
  assert_int_equal(onnxc_f32_to_f8e4m3fn(1.0625f, 1), 0x38);    /* tie -> even */
  assert_int_equal(onnxc_f32_to_f8e4m3fn(1.1875f, 1), 0x3a);    /* tie -> even (up) */
  assert_int_equal(onnxc_f32_to_f8e4m3fn(1.0626f, 1), 0x39);
  /* Subnormals: the smallest e4m3fn step is 2^-9. */
  assert_int_equal(onnxc_f32_to_f8e4m3fn(ldexpf(1, -9), 1), 0x01);
  assert_int_equal(onnxc_f32_to_f8e4m3fn(ldexpf(1, -10), 1), 0x00);       /* tie -> 0 */
  assert_int_equal(onnxc_f32_to_f8e4m3fn(ldexpf(3, -10), 1), 0x02);       /* 1.5 steps: tie -> 2 */
  assert_int_equal(onnxc_f32_to_f8e4m3fn(ldexpf(15, -10), 1), 0x08);      /* 7.5 steps: up into the normals */
  assert_true(onnxc_f8e4m3fn_to_f32(0x01) == ldexpf(1, -9));
  assert_true(onnxc_f8e5m2_to_f32(0x01) == ldexpf(1, -16));
  /* Values from the ONNX Cast test data. */
  assert_int_equal(onnxc_f32_to_f8e5m2(0.4789254665374756f, 1), 0x38);
  assert_int_equal(onnxc_f32_to_f8e5m2(0.8191054463386536f, 1), 0x3b);
  assert_int_equal(onnxc_f32_to_f8e4m3fnuz(0.48f, 1), 0x37);
  /* A double is rounded to float first (as ml_dtypes does): 2^-10 (1 + 2^-40)
   * becomes the tie 2^-10, which rounds to 0 rather than to 2^-9. */
  double d = ldexp(1.0 + ldexp(1, -40), -10);
  assert_int_equal(onnxc_f32_to_f8e4m3fn((float)d, 1), 0x00);
}

static void test_f4e2m1(void **state) {
  (void)state;
  static const float vals[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (unsigned v = 0; v < 16; v++) {
    float f = onnxc_f4e2m1_to_f32((uint8_t)v);
    assert_true(fabsf(f) == vals[v & 7]);
    assert_true((signbit(f) != 0) == ((v & 8) != 0));
    assert_int_equal(onnxc_f32_to_f4e2m1(f), v);
  }
  /* Saturation, ties to even, and the reference's NaN (a zero of the opposite sign). */
  assert_int_equal(onnxc_f32_to_f4e2m1(9.0f), 0x7);
  assert_int_equal(onnxc_f32_to_f4e2m1(-(float)INFINITY), 0xf);
  assert_int_equal(onnxc_f32_to_f4e2m1(0.25f), 0x0);
  assert_int_equal(onnxc_f32_to_f4e2m1(0.75f), 0x2);
  assert_int_equal(onnxc_f32_to_f4e2m1(-3.5f), 0xe);
  assert_int_equal(onnxc_f32_to_f4e2m1(5.0f), 0x6);
  assert_int_equal(onnxc_f32_to_f4e2m1((float)NAN), 0x8);
  assert_int_equal(onnxc_f32_to_f4e2m1(-(float)NAN), 0x0);
}

static void test_e8m0(void **state) {
  (void)state;
  /* The ONNX test data (saturate, round up). */
  const float in[8] = {0.0f, 0.124f, 0.25f, 0.5f, 1.1f, 2.0f, 4.0f, 8.0f};
  const uint8_t out[8] = {0x00, 0x7c, 0x7d, 0x7e, 0x80, 0x80, 0x81, 0x82};
  for (int i = 0; i < 8; i++)
    assert_int_equal(onnxc_f32_to_f8e8m0(in[i], 1, ONNXC_E8M0_UP), out[i]);
  assert_int_equal(onnxc_f32_to_f8e8m0(1.1f, 1, ONNXC_E8M0_DOWN), 0x7f);
  assert_int_equal(onnxc_f32_to_f8e8m0(1.1f, 1, ONNXC_E8M0_NEAREST), 0x7f);
  assert_int_equal(onnxc_f32_to_f8e8m0(1.5f, 1, ONNXC_E8M0_NEAREST), 0x80);
  assert_int_equal(onnxc_f32_to_f8e8m0(1.75f, 1, ONNXC_E8M0_NEAREST), 0x80);
  /* Largest exponent: saturation drops the rounding step, else NaN. */
  float big = bits_f32(0x7f000001u);
  assert_int_equal(onnxc_f32_to_f8e8m0(big, 1, ONNXC_E8M0_UP), 0xfe);
  assert_int_equal(onnxc_f32_to_f8e8m0(big, 0, ONNXC_E8M0_UP), 0xff);
  assert_int_equal(onnxc_f32_to_f8e8m0((float)NAN, 1, ONNXC_E8M0_UP), 0xff);
  assert_int_equal(onnxc_f32_to_f8e8m0((float)INFINITY, 1, ONNXC_E8M0_UP), 0xff);
  assert_int_equal(f32_bits(onnxc_f8e8m0_to_f32(0x00)), 0x00400000u);  /* 2^-127 */
  assert_true(onnxc_f8e8m0_to_f32(0x7f) == 1.0f);
  assert_true(onnxc_f8e8m0_to_f32(0xfe) == ldexpf(1, 127));
  assert_true(isnan(onnxc_f8e8m0_to_f32(0xff)));
}

static void test_packed_runtime(void **state) {
  (void)state;
  /* ONNX test data: int4 -9..15 packs as 87 a9 cb ed 0f 21 43 65 ...; uint2 [1,2,3,0,...] as 0x39. */
  const uint8_t i4[4] = {0x87, 0xa9, 0x0f, 0x21};
  assert_int_equal(onnxc_i4_get(i4, 0), 7);
  assert_int_equal(onnxc_i4_get(i4, 1), -8);
  assert_int_equal(onnxc_i4_get(i4, 5), 0);
  assert_int_equal(onnxc_i4_get(i4, 4), -1);
  assert_int_equal(onnxc_u4_get(i4, 1), 8);
  const uint8_t u2[1] = {0x39};
  assert_int_equal(onnxc_u2_get(u2, 0), 1);
  assert_int_equal(onnxc_u2_get(u2, 3), 0);
  assert_int_equal(onnxc_i2_get(u2, 1), -2);
  assert_int_equal(onnxc_i2_get(u2, 2), -1);
  /* Floats: truncation toward zero, modulo 2^bits. */
  assert_int_equal(onnxc_f64_to_bits(-9.0, 15u), 7u);
  assert_int_equal(onnxc_f64_to_bits(15.7, 15u), 15u);
  assert_int_equal(onnxc_f64_to_bits(-1.5, 15u), 15u);
  assert_int_equal(onnxc_f64_to_bits(2.9999999999, 3u), 2u);
  assert_int_equal(onnxc_f64_to_bits(NAN, 15u), 0u);
  assert_int_equal(onnxc_f64_to_bits(-INFINITY, 3u), 0u);
  assert_int_equal(onnxc_f64_to_bits(1e30, 15u), 0u);
}

/* ---- tensor.c agrees with the runtime ----------------------------------------- */

static Tensor *vec(Graph *g, DType dt, int64_t n) {
  int64_t dims[1] = {n};
  Shape s = shape_make(1, dims);
  return ir_tensor_new(g, dt, &s, NULL);
}

static bool same_f(double a, double b) {
  return (isnan(a) && isnan(b)) || (a == b && (signbit(a) != 0) == (signbit(b) != 0));
}

static void test_tensor_matches_runtime(void **state) {
  (void)state;
  Graph *g = ir_graph_new("t.onnx");
  for (int k = 0; k < 4; k++) {
    Tensor *t = vec(g, f8s[k].dt, 256);
    for (int v = 0; v < 256; v++) {
      ((uint8_t *)t->data)[v] = (uint8_t)v;
      assert_true(same_f(tensor_get_f64(t, v), f8s[k].dec((uint8_t)v)));
    }
  }
  Tensor *e8 = vec(g, DT_F8E8M0, 256), *f4 = vec(g, DT_F4E2M1, 16);
  for (int v = 0; v < 256; v++) {
    ((uint8_t *)e8->data)[v] = (uint8_t)v;
    assert_true(same_f(tensor_get_f64(e8, v), onnxc_f8e8m0_to_f32((uint8_t)v)));
  }
  for (int v = 0; v < 16; v++) {
    tensor_set_f64(f4, v, onnxc_f4e2m1_to_f32((uint8_t)v));
    assert_true(same_f(tensor_get_f64(f4, v), onnxc_f4e2m1_to_f32((uint8_t)v)));
  }
  /* Encoding: every half value, then a sweep of float bit patterns (both signs). */
  Tensor *one[4];
  for (int k = 0; k < 4; k++)
    one[k] = vec(g, f8s[k].dt, 1);
  Tensor *e1 = vec(g, DT_F8E8M0, 1), *n1 = vec(g, DT_F4E2M1, 1), *i4 = vec(g, DT_I4, 1);
  for (uint64_t u = 0; u < 0x100000000ull + 0x10000; u += u < 0x10000 ? 1 : 65521) {
    float f = u < 0x10000 ? onnxc_f16_to_f32((uint16_t)u) : bits_f32((uint32_t)(u - 0x10000));
    for (int k = 0; k < 4; k++) {
      tensor_set_f64(one[k], 0, f);
      if (((uint8_t *)one[k]->data)[0] != f8s[k].enc(f, 1))
        fail_msg("%s: %a encodes to 0x%02x in tensor.c, 0x%02x in the runtime", f8s[k].name, (double)f,
                 ((uint8_t *)one[k]->data)[0], f8s[k].enc(f, 1));
    }
    tensor_set_f64(e1, 0, f);
    assert_int_equal(((uint8_t *)e1->data)[0], onnxc_f32_to_f8e8m0(f, 1, ONNXC_E8M0_UP));
    tensor_set_f64(n1, 0, f);
    assert_int_equal(((uint8_t *)n1->data)[0], onnxc_f32_to_f4e2m1(f));
    tensor_set_f64(i4, 0, f);
    assert_int_equal(((uint8_t *)i4->data)[0], onnxc_f64_to_bits(f, 15u));
  }
  ir_graph_free(g);
}

/* Element i of a packed tensor: low bits first, neighbours untouched. */
static void test_tensor_packed(void **state) {
  (void)state;
  Graph *g = ir_graph_new("t.onnx");
  Tensor *t = vec(g, DT_I4, 5);
  assert_int_equal(t->nbytes, 3);
  const int64_t v[5] = {-9, -8, 7, -1, 3};  /* -9 wraps to 7 */
  for (int i = 0; i < 5; i++)
    tensor_set_i64(t, i, v[i]);
  const uint8_t *b = t->data;
  assert_int_equal(b[0], 0x87);
  assert_int_equal(b[1], 0xf7);
  assert_int_equal(b[2], 0x03);
  assert_int_equal(tensor_get_i64(t, 0), 7);
  assert_int_equal(tensor_get_i64(t, 1), -8);
  assert_int_equal(tensor_get_i64(t, 3), -1);
  assert_true(tensor_get_f64(t, 4) == 3.0);
  tensor_set_f64(t, 4, -2.7);  /* truncates */
  assert_int_equal(tensor_get_i64(t, 4), -2);
  assert_int_equal(tensor_get_i64(t, 3), -1);
  Tensor *u = vec(g, DT_U2, 7);
  assert_int_equal(u->nbytes, 2);
  for (int i = 0; i < 7; i++)
    tensor_set_f64(u, i, (double)(i - 3));  /* -3..3 -> 1 2 3 0 1 2 3 */
  assert_int_equal(((uint8_t *)u->data)[0], 0x39);
  assert_int_equal(((uint8_t *)u->data)[1], 0x39);
  assert_int_equal(tensor_get_i64(u, 2), 3);
  Tensor *s2 = vec(g, DT_I2, 4);
  tensor_set_i64(s2, 2, -2);
  assert_int_equal(tensor_get_i64(s2, 2), -2);
  assert_int_equal(((uint8_t *)s2->data)[0], 0x20);
  /* f8 through int64: NaN gives 0, values truncate. */
  Tensor *f = vec(g, DT_F8E4M3FN, 2);
  tensor_set_i64(f, 0, 3);
  tensor_set_f64(f, 1, (double)NAN);
  assert_true(tensor_get_f64(f, 0) == 3.0);
  assert_int_equal(tensor_get_i64(f, 1), 0);
  ir_graph_free(g);
}

/* ---- Cast / CastLike inference ------------------------------------------------- */

static Node *cast(Graph *g, Value *x, DType to) {
  Node *n = op(g, OP_Cast, 1, &x, 1);
  ir_attr_set_int(n, "to", to);
  return n;
}

static void test_cast_infer(void **state) {
  (void)state;
  Graph *g = gnew(25);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 5});
  const DType tos[] = {DT_F8E4M3FN, DT_F8E5M2FNUZ, DT_F4E2M1, DT_F8E8M0, DT_I4, DT_U2};
  for (size_t i = 0; i < sizeof tos / sizeof tos[0]; i++) {
    Node *n = cast(g, x, tos[i]);
    expect_ok(n);
    assert_int_equal(n->out[0]->dt, tos[i]);
    assert_shape(n->out[0], 2, (int64_t[]){3, 5});
  }
  Node *n = cast(g, x, DT_F8E4M3FN);
  ir_attr_set_int(n, "saturate", 2);
  expect_error(n, "'saturate' must be 0 or 1");
  n = cast(g, x, DT_F8E8M0);
  ir_attr_add(n, "round_mode", AT_STRING)->u.s = "sideways";
  expect_error(n, "'round_mode' is 'sideways'");
  expect_error(cast(g, x, DT_STRING), "string");
  expect_error(cast(g, x, (DType)99), "not a known element type");
  Value *in[2] = {tin(g, "y", DT_I4, 1, (int64_t[]){7}), tin(g, "like", DT_F8E5M2, 1, (int64_t[]){0})};
  Node *cl = op(g, OP_CastLike, 2, in, 1);
  expect_ok(cl);
  assert_int_equal(cl->out[0]->dt, DT_F8E5M2);
  assert_shape(cl->out[0], 1, (int64_t[]){7});
  ir_graph_free(g);
}

/* ---- Dropout and BatchNormalization in training mode ---------------------------- */

static void test_dropout_training(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 4});
  Value *yes = num_const(g, "yes", DT_BOOL, 0, NULL, (double[]){1});
  Value *no = num_const(g, "no", DT_BOOL, 0, NULL, (double[]){0});
  Value *zero = num_const(g, "zero", DT_F32, 0, NULL, (double[]){0});
  Value *half = num_const(g, "half", DT_F32, 0, NULL, (double[]){0.5});
  Value *r = tin(g, "r", DT_F32, 0, NULL), *t = tin(g, "t", DT_BOOL, 0, NULL);
  /* Deterministic: ratio 0, or not training. */
  Node *n = op(g, OP_Dropout, 3, (Value *[]){x, zero, yes}, 2);
  expect_ok(n);
  assert_int_equal(n->out[1]->dt, DT_BOOL);
  expect_ok(op(g, OP_Dropout, 3, (Value *[]){x, half, no}, 2));
  /* Random: a clear error when both are constant. */
  expect_error(op(g, OP_Dropout, 3, (Value *[]){x, half, yes}, 1),
               "training-mode Dropout with ratio > 0 draws random numbers; not supported");
  /* Decided by run-time inputs: accepted, the kernel checks. */
  expect_ok(op(g, OP_Dropout, 3, (Value *[]){x, r, t}, 2));
  expect_ok(op(g, OP_Dropout, 3, (Value *[]){x, half, t}, 1));
  expect_ok(op(g, OP_Dropout, 3, (Value *[]){x, r, yes}, 1));
  Value *ri = tin(g, "ri", DT_I32, 0, NULL);
  expect_error(op(g, OP_Dropout, 3, (Value *[]){x, ri, no}, 1), "input 1 (ratio) has type i32");
  ir_graph_free(g);
}

static Node *bn(Graph *g, int n_out) {
  Value *in[5] = {tin(g, "x", DT_F32, 4, (int64_t[]){2, 3, 4, 5}), tin(g, "s", DT_F32, 1, (int64_t[]){3}),
                  tin(g, "b", DT_F32, 1, (int64_t[]){3}), tin(g, "m", DT_F16, 1, (int64_t[]){3}),
                  tin(g, "v", DT_F64, 1, (int64_t[]){3})};
  return op(g, OP_BatchNormalization, 5, in, n_out);
}

static void test_batchnorm_training(void **state) {
  (void)state;
  Graph *g = gnew(15);
  Node *n = bn(g, 3);
  ir_attr_set_int(n, "training_mode", 1);
  ir_output_add(g, n->out[1]);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){2, 3, 4, 5});
  assert_shape(n->out[1], 1, (int64_t[]){3});
  assert_int_equal(n->out[1]->dt, DT_F16);  /* input_mean's type */
  assert_int_equal(n->out[2]->dt, DT_F64);  /* input_var's */
  Node *m = bn(g, 3);
  ir_output_add(g, m->out[2]);
  expect_error(m, "defined only in training mode");
  Node *five = bn(g, 5);
  expect_error(five, "at most 3");
  Node *bad = bn(g, 1);
  ir_attr_set_int(bad, "training_mode", 2);
  expect_error(bad, "must be 0 or 1");
  ir_graph_free(g);

  /* Before opset 14 the read statistics make it training mode, recorded as training_mode=1. */
  Graph *old = gnew(9);
  Node *o = bn(old, 5);
  ir_output_add(old, o->out[3]);
  expect_ok(o);
  assert_int_equal(ir_attr_int(o, "training_mode", 0), 1);
  assert_shape(o->out[3], 1, (int64_t[]){3});
  assert_int_equal(o->out[3]->dt, DT_F16);
  assert_int_equal(o->out[4]->dt, DT_F64);
  Node *idle = bn(old, 5);  /* statistics nobody reads: inference */
  expect_ok(idle);
  assert_int_equal(ir_attr_int(idle, "training_mode", 0), 0);
  ir_graph_free(old);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f8_round_trip),        cmocka_unit_test(test_f8_saturation),
      cmocka_unit_test(test_f8_nan_zero_inf),      cmocka_unit_test(test_f8_rounding_ties),
      cmocka_unit_test(test_f4e2m1),               cmocka_unit_test(test_e8m0),
      cmocka_unit_test(test_packed_runtime),       cmocka_unit_test(test_tensor_matches_runtime),
      cmocka_unit_test(test_tensor_packed),        cmocka_unit_test(test_cast_infer),
      cmocka_unit_test(test_dropout_training),     cmocka_unit_test(test_batchnorm_training),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
