/* test_infer_quant.c - unit tests of the opsj quantization hooks
 * (passes/infer_quant.c): QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and
 * QLinearConv. Result types, granularities, opset differences, conv window
 * shapes and error paths. */
#include "test_util.h"

static Value *scalar(Graph *g, const char *name, DType dt) {
  return tin(g, name, dt, 0, NULL);
}

/* ---- QuantizeLinear ---------------------------------------------------------------- */

static void test_quantize_types(void **state) {
  (void)state;
  Graph *g = gnew(25);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 4});
  /* The zero point fixes the type; without one, output_dtype, else u8. */
  Node *n = op(g, OP_QuantizeLinear, 3, (Value *[]){x, scalar(g, "s", DT_F32), scalar(g, "z", DT_I4)}, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I4);
  assert_shape(n->out[0], 2, (int64_t[]){3, 4});
  n = op(g, OP_QuantizeLinear, 2, (Value *[]){x, scalar(g, "s2", DT_F32)}, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_U8);
  n = op(g, OP_QuantizeLinear, 2, (Value *[]){x, scalar(g, "s3", DT_F16)}, 1);
  ir_attr_set_int(n, "output_dtype", DT_F8E4M3FN);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_F8E4M3FN);
  /* output_dtype is not read before opset 21. */
  Graph *old = gnew(19);
  Value *xo = tin(old, "x", DT_F32, 1, (int64_t[]){4});
  Node *m = op(old, OP_QuantizeLinear, 2, (Value *[]){xo, scalar(old, "s", DT_F32)}, 1);
  ir_attr_set_int(m, "output_dtype", DT_I8);
  expect_ok(m);
  assert_int_equal(m->out[0]->dt, DT_U8);
  ir_graph_free(old);
  ir_graph_free(g);
}

static void test_quantize_granularity(void **state) {
  (void)state;
  Graph *g = gnew(25);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){2, 5, 3});
  /* Per axis (default axis 1), blocked with a remainder block. */
  Node *n = op(g, OP_QuantizeLinear, 3,
               (Value *[]){x, tin(g, "s", DT_F32, 1, (int64_t[]){5}), tin(g, "z", DT_I8, 1, (int64_t[]){5})}, 1);
  expect_ok(n);
  n = op(g, OP_QuantizeLinear, 2, (Value *[]){x, tin(g, "sb", DT_F32, 3, (int64_t[]){2, 2, 3})}, 1);
  ir_attr_set_int(n, "block_size", 3);
  expect_ok(n);
  n = op(g, OP_QuantizeLinear, 2, (Value *[]){x, tin(g, "sc", DT_F32, 3, (int64_t[]){2, 1, 3})}, 1);
  ir_attr_set_int(n, "block_size", 3);
  expect_error(n, "input 1 dim 1 is 1, expected 2");
  n = op(g, OP_QuantizeLinear, 2, (Value *[]){x, tin(g, "sd", DT_F32, 1, (int64_t[]){3})}, 1);
  expect_error(n, "input 1 has 3 elements, expected 5");
  n = op(g, OP_QuantizeLinear, 2, (Value *[]){x, tin(g, "se", DT_F32, 1, (int64_t[]){3})}, 1);
  ir_attr_set_int(n, "axis", -1);
  expect_ok(n);
  n = op(g, OP_QuantizeLinear, 2, (Value *[]){x, tin(g, "sf", DT_F32, 1, (int64_t[]){3})}, 1);
  ir_attr_set_int(n, "axis", 3);
  expect_error(n, "axis 3 is out of range");
  n = op(g, OP_QuantizeLinear, 3,
         (Value *[]){x, tin(g, "sg", DT_F32, 1, (int64_t[]){5}), tin(g, "zg", DT_I8, 1, (int64_t[]){3})}, 1);
  expect_error(n, "zero point");
  n = op(g, OP_QuantizeLinear, 3, (Value *[]){x, scalar(g, "sh", DT_F32), tin(g, "zh", DT_I8, 1, (int64_t[]){5})}, 1);
  expect_error(n, "input 2 (zero point) has shape [5], expected []");
  ir_graph_free(g);
}

static void test_quantize_errors(void **state) {
  (void)state;
  Graph *g = gnew(25);
  Value *x = tin(g, "x", DT_F32, 1, (int64_t[]){4});
  Node *n = op(g, OP_QuantizeLinear, 3, (Value *[]){x, scalar(g, "s", DT_F32), scalar(g, "z", DT_I8)}, 1);
  ir_attr_set_int(n, "output_dtype", DT_U8);
  expect_error(n, "differs from the zero point's type i8");
  n = op(g, OP_QuantizeLinear, 2, (Value *[]){tin(g, "xi", DT_I8, 1, (int64_t[]){4}), scalar(g, "s2", DT_F32)}, 1);
  expect_error(n, "input 0 has element type i8");
  n = op(g, OP_QuantizeLinear, 2, (Value *[]){x, scalar(g, "s3", DT_F32)}, 1);
  ir_attr_set_int(n, "output_dtype", DT_I32);
  expect_error(n, "quantized type i32 is not supported");
  n = op(g, OP_QuantizeLinear, 2, (Value *[]){x, scalar(g, "s4", DT_F32)}, 1);
  ir_attr_set_int(n, "block_size", -2);
  expect_error(n, "block_size is -2");
  Graph *old = gnew(10);
  Value *xo = tin(old, "x", DT_F32, 2, (int64_t[]){2, 3});
  Node *m = op(old, OP_QuantizeLinear, 2, (Value *[]){xo, tin(old, "s", DT_F32, 1, (int64_t[]){3})}, 1);
  expect_error(m, "must be a scalar before opset 13");
  ir_graph_free(old);
  ir_graph_free(g);
}

/* ---- DequantizeLinear, DynamicQuantizeLinear ---------------------------------------- */

static void test_dequantize(void **state) {
  (void)state;
  Graph *g = gnew(25);
  Value *x = tin(g, "x", DT_U4, 2, (int64_t[]){3, 4});
  Node *n = op(g, OP_DequantizeLinear, 3,
               (Value *[]){x, tin(g, "s", DT_F16, 1, (int64_t[]){4}), tin(g, "z", DT_U4, 1, (int64_t[]){4})}, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_F16);
  assert_shape(n->out[0], 2, (int64_t[]){3, 4});
  n = op(g, OP_DequantizeLinear, 2, (Value *[]){x, scalar(g, "s2", DT_F32)}, 1);
  ir_attr_set_int(n, "output_dtype", DT_BF16);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_BF16);
  n = op(g, OP_DequantizeLinear, 3, (Value *[]){x, scalar(g, "s3", DT_F32), scalar(g, "z3", DT_I4)}, 1);
  expect_error(n, "expected u4 like input 0");
  n = op(g, OP_DequantizeLinear, 2, (Value *[]){tin(g, "xf", DT_F32, 1, (int64_t[]){2}), scalar(g, "s4", DT_F32)}, 1);
  expect_error(n, "expected a quantized type");
  n = op(g, OP_DequantizeLinear, 2, (Value *[]){x, scalar(g, "s5", DT_F8E8M0)}, 1);
  expect_error(n, "set output_dtype");
  ir_graph_free(g);
}

static void test_dynamic_quantize(void **state) {
  (void)state;
  Graph *g = gnew(11);
  Node *n = op(g, OP_DynamicQuantizeLinear, 1, (Value *[]){tin(g, "x", DT_F32, 2, (int64_t[]){3, 4})}, 3);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_U8);
  assert_shape(n->out[0], 2, (int64_t[]){3, 4});
  assert_int_equal(n->out[1]->dt, DT_F32);
  assert_int_equal(n->out[1]->shape.rank, 0);
  assert_int_equal(n->out[2]->dt, DT_U8);
  n = op(g, OP_DynamicQuantizeLinear, 1, (Value *[]){tin(g, "xd", DT_F64, 1, (int64_t[]){3})}, 3);
  expect_error(n, "expected f32");
  ir_graph_free(g);
}

/* ---- integer matmul and conv ---------------------------------------------------------- */

static void test_matmul_integer(void **state) {
  (void)state;
  Graph *g = gnew(10);
  Value *a = tin(g, "a", DT_U8, 4, (int64_t[]){2, 3, 4, 5}), *b = tin(g, "b", DT_I8, 3, (int64_t[]){3, 5, 6});
  Node *n = op(g, OP_MatMulInteger, 4, (Value *[]){a, b, scalar(g, "az", DT_U8), tin(g, "bz", DT_I8, 1, (int64_t[]){6})}, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I32);
  assert_shape(n->out[0], 4, (int64_t[]){2, 3, 4, 6});
  n = op(g, OP_MatMulInteger, 2, (Value *[]){tin(g, "v", DT_U8, 1, (int64_t[]){5}), b}, 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){3, 6});
  n = op(g, OP_MatMulInteger, 2, (Value *[]){a, tin(g, "b2", DT_U8, 2, (int64_t[]){4, 6})}, 1);
  expect_error(n, "inner dimensions differ");
  n = op(g, OP_MatMulInteger, 3, (Value *[]){a, b, scalar(g, "az2", DT_I8)}, 1);
  expect_error(n, "expected u8 like input 0");
  n = op(g, OP_MatMulInteger, 4, (Value *[]){a, b, g->none, tin(g, "bz2", DT_I8, 1, (int64_t[]){5})}, 1);
  expect_error(n, "expected 1 or 6");
  n = op(g, OP_MatMulInteger, 2, (Value *[]){tin(g, "af", DT_F32, 2, (int64_t[]){2, 5}), b}, 1);
  expect_error(n, "expected u8 or i8");
  ir_graph_free(g);
}

static void test_qlinear_matmul(void **state) {
  (void)state;
  Graph *g = gnew(21);
  Value *a = tin(g, "a", DT_I8, 2, (int64_t[]){2, 4}), *b = tin(g, "b", DT_I8, 2, (int64_t[]){4, 3});
  Value *in[8] = {a, scalar(g, "as", DT_F16), scalar(g, "az", DT_I8), b, scalar(g, "bs", DT_F16),
                  scalar(g, "bz", DT_I8), scalar(g, "ys", DT_F16), scalar(g, "yz", DT_U8)};
  Node *n = op(g, OP_QLinearMatMul, 8, in, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_U8);
  assert_shape(n->out[0], 2, (int64_t[]){2, 3});
  in[6] = scalar(g, "ys2", DT_I32);
  n = op(g, OP_QLinearMatMul, 8, in, 1);
  expect_error(n, "input 6 (scale) has element type i32");
  ir_graph_free(g);
}

static void test_conv_integer(void **state) {
  (void)state;
  Graph *g = gnew(10);
  Value *x = tin(g, "x", DT_U8, 4, (int64_t[]){1, 4, 7, 6}), *w = tin(g, "w", DT_U8, 4, (int64_t[]){6, 2, 3, 2});
  Node *n = op(g, OP_ConvInteger, 4, (Value *[]){x, w, scalar(g, "xz", DT_U8), tin(g, "wz", DT_U8, 1, (int64_t[]){6})}, 1);
  ir_attr_set_int(n, "group", 2);
  ir_attr_set_ints(n, "strides", (int64_t[]){2, 1}, 2);
  ir_attr_set_ints(n, "pads", (int64_t[]){1, 0, 1, 1}, 4);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I32);
  assert_shape(n->out[0], 4, (int64_t[]){1, 6, 4, 6});
  n = op(g, OP_ConvInteger, 2, (Value *[]){x, w}, 1);
  expect_error(n, "input 0 has 4 channels but the weight expects 2");
  n = op(g, OP_ConvInteger, 2, (Value *[]){x, tin(g, "w3", DT_U8, 3, (int64_t[]){6, 4, 3})}, 1);
  expect_error(n, "has rank 3, expected 4");
  n = op(g, OP_ConvInteger, 2, (Value *[]){x, tin(g, "wbig", DT_U8, 4, (int64_t[]){2, 4, 9, 2})}, 1);
  expect_error(n, "smaller than the dilated kernel");
  ir_graph_free(g);
}

static void test_qlinear_conv(void **state) {
  (void)state;
  Graph *g = gnew(10);
  Value *x = tin(g, "x", DT_U8, 4, (int64_t[]){1, 2, 5, 5}), *w = tin(g, "w", DT_I8, 4, (int64_t[]){3, 2, 3, 3});
  Value *in[9] = {x, scalar(g, "xs", DT_F32), scalar(g, "xz", DT_U8), w, tin(g, "ws", DT_F32, 1, (int64_t[]){3}),
                  tin(g, "wz", DT_I8, 1, (int64_t[]){3}), scalar(g, "ys", DT_F32), scalar(g, "yz", DT_I8),
                  tin(g, "b", DT_I32, 1, (int64_t[]){3})};
  Node *n = op(g, OP_QLinearConv, 9, in, 1);
  Attr *a = ir_attr_add(n, "auto_pad", AT_STRING);
  a->u.s = "SAME_UPPER";
  a->slen = strlen(a->u.s);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I8);
  assert_shape(n->out[0], 4, (int64_t[]){1, 3, 5, 5});
  in[8] = tin(g, "b2", DT_I32, 1, (int64_t[]){2});
  n = op(g, OP_QLinearConv, 9, in, 1);
  expect_error(n, "input 8 (bias) has 2 elements, expected 3");
  in[8] = tin(g, "b3", DT_F32, 1, (int64_t[]){3});
  n = op(g, OP_QLinearConv, 9, in, 1);
  expect_error(n, "expected i32");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quantize_types),
      cmocka_unit_test(test_quantize_granularity),
      cmocka_unit_test(test_quantize_errors),
      cmocka_unit_test(test_dequantize),
      cmocka_unit_test(test_dynamic_quantize),
      cmocka_unit_test(test_matmul_integer),
      cmocka_unit_test(test_qlinear_matmul),
      cmocka_unit_test(test_conv_integer),
      cmocka_unit_test(test_qlinear_conv),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
