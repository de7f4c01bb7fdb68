/* test_infer_elementwise.c - unit tests of infer_elementwise (every EW row):
 * broadcasting with static and symbolic dims, the type rules (agreement,
 * float-only, bool-only, Where, Pow, bool results) and Clip's late
 * canonicalization of its bounds. */
#include "test_util.h"

static void test_ew_broadcast_static(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Value *in[2] = {tin(g, "a", DT_F32, 3, (int64_t[]){2, 1, 4}), tin(g, "b", DT_F32, 2, (int64_t[]){3, 1})};
  Node *n = op(g, OP_Add, 2, in, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_F32);
  assert_shape(n->out[0], 3, (int64_t[]){2, 3, 4});
  ir_graph_free(g);
}

static void test_ew_broadcast_symbolic(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Value *a = tin(g, "a", DT_F16, 2, (int64_t[]){DIM_UNKNOWN, 8});
  a->shape.sym[0] = "N";
  Value *in[2] = {a, tin(g, "b", DT_F16, 1, (int64_t[]){8})};
  Node *n = op(g, OP_Mul, 2, in, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->shape.d[0], DIM_UNKNOWN);
  assert_string_equal(n->out[0]->shape.sym[0], "N");
  assert_int_equal(n->out[0]->shape.d[1], 8);
  ir_graph_free(g);
}

static void test_ew_broadcast_mismatch(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Value *in[2] = {tin(g, "a", DT_F32, 2, (int64_t[]){2, 3}), tin(g, "b", DT_F32, 1, (int64_t[]){4})};
  expect_error(op(g, OP_Sub, 2, in, 1), "does not broadcast");
  ir_graph_free(g);
}

static void test_ew_types_must_agree(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Value *in[2] = {tin(g, "a", DT_F32, 1, (int64_t[]){3}), tin(g, "b", DT_F64, 1, (int64_t[]){3})};
  expect_error(op(g, OP_Div, 2, in, 1), "must match");
  ir_graph_free(g);
}

static void test_ew_float_only(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Value *x = tin(g, "x", DT_I32, 1, (int64_t[]){3});
  expect_error(op(g, OP_Sigmoid, 1, &x, 1), "floating-point");
  Value *b = tin(g, "b", DT_BOOL, 1, (int64_t[]){3});
  expect_error(op(g, OP_Relu, 1, &b, 1), "numeric");
  ir_graph_free(g);
}

static void test_ew_bool_rows(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Value *in[2] = {tin(g, "a", DT_I64, 1, (int64_t[]){3}), tin(g, "b", DT_I64, 0, NULL)};
  Node *lt = op(g, OP_Less, 2, in, 1);
  expect_ok(lt);
  assert_int_equal(lt->out[0]->dt, DT_BOOL);
  assert_shape(lt->out[0], 1, (int64_t[]){3});
  expect_error(op(g, OP_And, 2, in, 1), "expected bool");
  Value *bb[2] = {lt->out[0], lt->out[0]};
  Node *x = op(g, OP_Xor, 2, bb, 1);
  expect_ok(x);
  assert_int_equal(x->out[0]->dt, DT_BOOL);
  ir_graph_free(g);
}

static void test_ew_where(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Value *in[3] = {tin(g, "c", DT_BOOL, 2, (int64_t[]){2, 1}), tin(g, "x", DT_I64, 1, (int64_t[]){5}),
                  tin(g, "y", DT_I64, 0, NULL)};
  Node *n = op(g, OP_Where, 3, in, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I64);
  assert_shape(n->out[0], 2, (int64_t[]){2, 5});
  Value *bad[3] = {in[1], in[1], in[2]};
  expect_error(op(g, OP_Where, 3, bad, 1), "condition");
  ir_graph_free(g);
}

static void test_ew_pow_mixed_types(void **state) {
  (void)state;
  Graph *g = gnew(15);
  Value *in[2] = {tin(g, "x", DT_I32, 1, (int64_t[]){3}), tin(g, "e", DT_F32, 0, NULL)};
  Node *n = op(g, OP_Pow, 2, in, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I32);
  ir_graph_free(g);
}

static void test_ew_variadic(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *in[3] = {tin(g, "a", DT_F32, 1, (int64_t[]){4}), tin(g, "b", DT_F32, 2, (int64_t[]){3, 1}),
                  tin(g, "c", DT_F32, 0, NULL)};
  Node *n = op(g, OP_Max, 3, in, 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){3, 4});
  Node *one = op(g, OP_Mean, 1, in, 1);
  expect_ok(one);
  assert_shape(one->out[0], 1, (int64_t[]){4});
  ir_graph_free(g);
}

static void test_ew_clip_gets_typed_bounds(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_I8, 1, (int64_t[]){4});
  Node *n = op(g, OP_Clip, 1, &x, 1);
  expect_ok(n);
  assert_int_equal(n->n_in, 3);
  assert_int_equal(n->in[1]->dt, DT_I8);
  assert_int_equal(tensor_get_i64(n->in[1]->konst, 0), -128);
  assert_int_equal(tensor_get_i64(n->in[2]->konst, 0), 127);
  assert_int_equal(n->out[0]->dt, DT_I8);
  ir_graph_free(g);
}

static void test_ew_clip_placeholder_converted(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_U8, 1, (int64_t[]){4});
  Node *r = op(g, OP_Relu, 1, &x, 1);
  Value *in[3] = {r->out[0], NULL, num_const(g, "hi", DT_F32, 0, NULL, (double[]){300})};
  Node *n = op(g, OP_Clip, 3, in, 1);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  /* Before inference the dtype is unknown: canonicalize leaves f64 placeholders. */
  assert_true(pass_canonicalize(g, &d));
  assert_int_equal(n->in[1]->dt, DT_F64);
  diag_free(&d);
  expect_ok(r);
  expect_ok(n);
  assert_int_equal(n->in[1]->dt, DT_U8);
  assert_int_equal(tensor_get_i64(n->in[1]->konst, 0), 0);
  assert_int_equal(n->in[2]->dt, DT_U8);
  assert_int_equal(tensor_get_i64(n->in[2]->konst, 0), 255);  /* saturated */
  ir_graph_free(g);
}

static void test_ew_clip_bound_type_mismatch(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *in[3] = {tin(g, "x", DT_F32, 1, (int64_t[]){4}), tin(g, "lo", DT_F64, 0, NULL),
                  tin(g, "hi", DT_F32, 0, NULL)};
  expect_error(op(g, OP_Clip, 3, in, 1), "must match");
  ir_graph_free(g);
}

static void test_ew_mod_and_bitshift_attrs(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *f[2] = {tin(g, "a", DT_F32, 1, (int64_t[]){3}), tin(g, "b", DT_F32, 1, (int64_t[]){3})};
  expect_error(op(g, OP_Mod, 2, f, 1), "fmod must be 1");
  Node *ok = op(g, OP_Mod, 2, f, 1);
  ir_attr_set_int(ok, "fmod", 1);
  expect_ok(ok);
  Value *u[2] = {tin(g, "u", DT_U16, 1, (int64_t[]){3}), tin(g, "s", DT_U16, 0, NULL)};
  expect_error(op(g, OP_BitShift, 2, u, 1), "direction");
  Value *i[2] = {tin(g, "i", DT_I16, 1, (int64_t[]){3}), tin(g, "j", DT_I16, 0, NULL)};
  Node *sg = op(g, OP_BitShift, 2, i, 1);
  ir_attr_add(sg, "direction", AT_STRING)->u.s = "LEFT";
  expect_error(sg, "unsigned");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ew_broadcast_static),
      cmocka_unit_test(test_ew_broadcast_symbolic),
      cmocka_unit_test(test_ew_broadcast_mismatch),
      cmocka_unit_test(test_ew_types_must_agree),
      cmocka_unit_test(test_ew_float_only),
      cmocka_unit_test(test_ew_bool_rows),
      cmocka_unit_test(test_ew_where),
      cmocka_unit_test(test_ew_pow_mixed_types),
      cmocka_unit_test(test_ew_variadic),
      cmocka_unit_test(test_ew_clip_gets_typed_bounds),
      cmocka_unit_test(test_ew_clip_placeholder_converted),
      cmocka_unit_test(test_ew_clip_bound_type_mismatch),
      cmocka_unit_test(test_ew_mod_and_bitshift_attrs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
