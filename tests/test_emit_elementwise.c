/* test_emit_elementwise.c - unit tests of the elementwise emitter
 * (codegen/emit_elementwise.c): template expansion, compute types, per-type
 * template variants, and the shape of the broadcast loop nest. */
#include "test_util.h"

#include <stdlib.h>

#include "codegen.h"

/* Emits the body of n's kernel after inferring it; caller frees. */
static char *emit_body(Node *n) {
  expect_ok(n);
  Buf b;
  buf_init(&b);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  EmitC e = {n->g, NULL, &b, 0, &d, "m", 1, false, false, 0, 0, NULL, NULL, 0, 0, 0};
  if (!emitc_elementwise(&e, n))
    fail_msg("emit failed: %s", diag_last(&d));
  diag_free(&d);
  return b.s;
}

static void assert_contains(const char *s, const char *what) {
  if (!strstr(s, what))
    fail_msg("'%s' not found in:\n%s", what, s);
}

static void test_expand_escapes(void **state) {
  (void)state;
  Graph *g = gnew(16);
  Value *x = tin(g, "x", DT_F32, 1, (int64_t[]){3});
  Node *n = op(g, OP_LeakyRelu, 1, &x, 1);
  ir_attr_add(n, "alpha", AT_FLOAT)->u.f = 0.5f;
  const char *ops[2] = {"a", "b"};
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  Buf out;
  buf_init(&out);
  assert_true(ec_expand_expr(&d, n, "exp%f(%0) * (%T)%{alpha=0.01} + %{beta=2} %% %1", ops, 2, DT_F32, &out));
  assert_string_equal(out.s, "expf(a) * (float)0.5f + 2.0f % b");
  buf_free(&out);
  buf_init(&out);
  assert_true(ec_expand_expr(&d, n, "exp%f(%0)", ops, 2, DT_F64, &out));
  assert_string_equal(out.s, "exp(a)");
  buf_free(&out);
  buf_init(&out);
  assert_false(ec_expand_expr(&d, n, "%2", ops, 2, DT_F32, &out));
  assert_false(ec_expand_expr(&d, n, "%q", ops, 2, DT_F32, &out));
  buf_free(&out);
  diag_free(&d);
  ir_graph_free(g);
}

static void test_compute_types(void **state) {
  (void)state;
  Graph *g = gnew(15);
  Value *h = tin(g, "h", DT_F16, 1, (int64_t[]){3});
  Value *i8 = tin(g, "i8", DT_I8, 1, (int64_t[]){3});
  Value *i64 = tin(g, "i64", DT_I64, 1, (int64_t[]){3});
  Value *hh[2] = {h, h}, *bb[2] = {i8, i8}, *ll[2] = {i64, i64}, *pw[2] = {i8, h};
  assert_int_equal(ec_ew_compute_type(op(g, OP_Add, 2, hh, 1)), DT_F32);
  assert_int_equal(ec_ew_compute_type(op(g, OP_Add, 2, bb, 1)), DT_U32);   /* wraps */
  assert_int_equal(ec_ew_compute_type(op(g, OP_Mul, 2, ll, 1)), DT_U64);
  assert_int_equal(ec_ew_compute_type(op(g, OP_Div, 2, bb, 1)), DT_I8);
  assert_int_equal(ec_ew_compute_type(op(g, OP_Pow, 2, pw, 1)), DT_F64);
  Node *ud = op(g, OP_Div, 2, ll, 1);
  assert_non_null(strstr(ec_ew_template(ud, DT_I64), "== 0"));
  ir_graph_free(g);
}

static void test_loops_flat_when_shapes_match(void **state) {
  (void)state;
  Graph *g = gnew(14);
  Value *in[2] = {tin(g, "a", DT_F32, 3, (int64_t[]){2, 3, 4}), tin(g, "b", DT_F32, 3, (int64_t[]){2, 3, 4})};
  char *s = emit_body(op(g, OP_Add, 2, in, 1));
  assert_contains(s, "i0 < 24");
  assert_null(strstr(s, "i1"));
  free(s);
  ir_graph_free(g);
}

static void test_loops_hoist_broadcast_operand(void **state) {
  (void)state;
  Graph *g = gnew(14);
  /* [2,3,4] * [3,1]: dims 0 and 2 stay apart; b is loaded outside the inner loop. */
  Value *in[2] = {tin(g, "a", DT_F16, 3, (int64_t[]){2, 3, 4}), tin(g, "b", DT_F16, 2, (int64_t[]){3, 1})};
  char *s = emit_body(op(g, OP_Mul, 2, in, 1));
  assert_contains(s, "const float a1 = onnxc_f16_to_f32(X1[i1]);");
  assert_true(strstr(s, "a1 = ") < strstr(s, "for (ptrdiff_t i2"));
  assert_contains(s, "onnxc_f32_to_f16(");
  free(s);
  ir_graph_free(g);
}

static void test_scalar_operand_loaded_once(void **state) {
  (void)state;
  Graph *g = gnew(14);
  Value *in[2] = {tin(g, "a", DT_I32, 2, (int64_t[]){5, 6}), tin(g, "b", DT_I32, 0, NULL)};
  char *s = emit_body(op(g, OP_Sub, 2, in, 1));
  assert_true(strstr(s, "const uint32_t a1 = (uint32_t)X1[0];") < strstr(s, "for ("));
  assert_contains(s, "Y0[i0] = (int32_t)(");
  free(s);
  ir_graph_free(g);
}

static void test_variadic_fold_and_mean(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *in[3] = {tin(g, "a", DT_F32, 1, (int64_t[]){4}), tin(g, "b", DT_F32, 1, (int64_t[]){4}),
                  tin(g, "c", DT_F32, 1, (int64_t[]){4})};
  char *s = emit_body(op(g, OP_Mean, 3, in, 1));
  assert_contains(s, "float r = a0;");
  assert_contains(s, "r = (r + a2);");
  assert_contains(s, "r / (float)3");
  free(s);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_expand_escapes),
      cmocka_unit_test(test_compute_types),
      cmocka_unit_test(test_loops_flat_when_shapes_match),
      cmocka_unit_test(test_loops_hoist_broadcast_operand),
      cmocka_unit_test(test_scalar_operand_loaded_once),
      cmocka_unit_test(test_variadic_fold_and_mean),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
