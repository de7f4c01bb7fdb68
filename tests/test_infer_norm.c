/* test_infer_norm.c - unit tests of BatchNormalization, Softmax and
 * LogSoftmax inference (passes/infer_norm.c): shapes, opset-dependent
 * defaults, and the inference-only restrictions of BatchNormalization. */
#include "test_util.h"

/* ---- tiny graph builders ---------------------------------------------------- */

static void set_float(Node *n, const char *name, float v) {
  ir_attr_add(n, name, AT_FLOAT)->u.f = v;
}

/* ---- BatchNormalization --------------------------------------------------------------- */

/* BatchNormalization of x[2,3,4,5] with parameters of rank `pr` and dims `pd`. */
static Node *bn(Graph *g, int n_out, int pr, const int64_t *pd) {
  Value *in[5] = {tin(g, "x", DT_F32, 4, (int64_t[]){2, 3, 4, 5}), tin(g, "scale", DT_F32, pr, pd),
                  tin(g, "bias", DT_F32, pr, pd), tin(g, "mean", DT_F64, pr, pd),
                  tin(g, "var", DT_F64, pr, pd)};
  return op(g, OP_BatchNormalization, 5, in, n_out);
}

static void test_batchnorm_shapes(void **state) {
  (void)state;
  Graph *g = gnew(15);
  Node *n = bn(g, 1, 1, (int64_t[]){3});
  set_float(n, "epsilon", 1e-3f);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){2, 3, 4, 5});
  assert_int_equal(n->out[0]->dt, DT_F32);
  /* Unused training outputs are tolerated (dce drops them). */
  Node *m = bn(g, 3, 1, (int64_t[]){3});
  expect_ok(m);
  assert_shape(m->out[1], 1, (int64_t[]){3});
  assert_int_equal(m->out[2]->dt, DT_F64);
  ir_graph_free(g);
}

static void test_batchnorm_spatial0_before_opset9(void **state) {
  (void)state;
  Graph *g = gnew(7);
  Node *n = bn(g, 1, 3, (int64_t[]){3, 4, 5});
  ir_attr_set_int(n, "spatial", 0);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){2, 3, 4, 5});
  Node *m = bn(g, 1, 3, (int64_t[]){3, 4, 5});  /* spatial defaults to 1 */
  expect_error(m, "rank 3, expected 1");
  ir_graph_free(g);
}

static void test_batchnorm_errors(void **state) {
  (void)state;
  Graph *g = gnew(15);
  Node *n = bn(g, 3, 1, (int64_t[]){3});
  ir_output_add(g, n->out[1]);
  expect_error(n, "defined only in training mode");
  expect_error(bn(g, 1, 1, (int64_t[]){4}), "dim 0 is 4, expected 3");
  Value *in[5] = {tin(g, "xi", DT_I32, 2, (int64_t[]){2, 3}),
                  tin(g, "s", DT_F32, 1, (int64_t[]){3}), tin(g, "b", DT_F32, 1, (int64_t[]){3}),
                  tin(g, "m", DT_F32, 1, (int64_t[]){3}), tin(g, "v", DT_F32, 1, (int64_t[]){3})};
  expect_error(op(g, OP_BatchNormalization, 5, in, 1), "element type i32");
  Value *r1[5] = {tin(g, "x1", DT_F32, 1, (int64_t[]){3}), in[1], in[2], in[3], in[4]};
  expect_error(op(g, OP_BatchNormalization, 5, r1, 1), "rank 1, expected at least 2");
  ir_graph_free(g);
}

/* ---- Softmax, LogSoftmax ------------------------------------------------------------------ */

static void test_softmax_keeps_shape(void **state) {
  (void)state;
  const OpKind kinds[2] = {OP_Softmax, OP_LogSoftmax};
  for (int k = 0; k < 2; k++) {
    Graph *g = gnew(13);
    Shape xs = shape_make(3, (int64_t[]){DIM_UNKNOWN, 3, 4});
    xs.sym[0] = "N";
    Value *x = ir_input_add(g, "x", DT_F16, &xs);
    Node *n = op(g, kinds[k], 1, &x, 1);
    ir_attr_set_int(n, "axis", -3);
    expect_ok(n);
    assert_shape(n->out[0], 3, (int64_t[]){DIM_UNKNOWN, 3, 4});
    assert_string_equal(n->out[0]->shape.sym[0], "N");
    assert_int_equal(n->out[0]->dt, DT_F16);
    ir_graph_free(g);
  }
}

static void test_softmax_axis_defaults_by_opset(void **state) {
  (void)state;
  /* A 1-D input is fine with the opset-13 default -1 but not with the old default 1. */
  Graph *g13 = gnew(13), *g11 = gnew(11);
  Value *x13 = tin(g13, "x", DT_F32, 1, (int64_t[]){5});
  Value *x11 = tin(g11, "x", DT_F32, 1, (int64_t[]){5});
  expect_ok(op(g13, OP_Softmax, 1, &x13, 1));
  expect_error(op(g11, OP_LogSoftmax, 1, &x11, 1), "axis 1 is out of range for rank 1");
  ir_graph_free(g13);
  ir_graph_free(g11);
}

static void test_softmax_errors(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){2, 3});
  Node *n = op(g, OP_Softmax, 1, &x, 1);
  ir_attr_set_int(n, "axis", 2);
  expect_error(n, "axis 2 is out of range for rank 2");
  Value *xi = tin(g, "xi", DT_I64, 2, (int64_t[]){2, 3});
  expect_error(op(g, OP_LogSoftmax, 1, &xi, 1), "element type i64");
  Value *s = tin(g, "s", DT_F32, 0, NULL);
  expect_error(op(g, OP_Softmax, 1, &s, 1), "scalar");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batchnorm_shapes),
      cmocka_unit_test(test_batchnorm_spatial0_before_opset9),
      cmocka_unit_test(test_batchnorm_errors),
      cmocka_unit_test(test_softmax_keeps_shape),
      cmocka_unit_test(test_softmax_axis_defaults_by_opset),
      cmocka_unit_test(test_softmax_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
