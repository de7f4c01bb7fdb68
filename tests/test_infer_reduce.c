/* test_infer_reduce.c - unit tests of the reduction and axis-scan inference
 * hooks (passes/infer_reduce.c): Reduce* axes as attribute and as input,
 * keepdims, noop_with_empty_axes, run-time axes, symbolic dims; ArgMax/ArgMin,
 * CumSum, TopK (k attribute and input) and Hardmax; the error paths; and the
 * Reduce{Sum,Prod,Max,Min} folders of passes/fold.c. */
#include "test_util.h"

#include <math.h>

/* ---- graph builders ----------------------------------------------------------- */

static Node *node1(Graph *g, OpKind k, Value *x) { return ir_node_new(g, k, NULL, NULL, 1, &x, 1); }

static Node *node2(Graph *g, OpKind k, Value *x, Value *y, int n_out) {
  Value *in[2] = {x, y};
  return ir_node_new(g, k, NULL, NULL, 2, in, n_out);
}

/* ---- Reduce* -------------------------------------------------------------------- */

static void test_reduce_attr_axes(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){2, 3, 4, 5});
  Node *n = node1(g, OP_ReduceMean, x);
  ir_attr_set_ints(n, "axes", (int64_t[]){1, -1}, 2);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){2, 1, 4, 1});
  assert_int_equal(n->out[0]->dt, DT_F32);
  Node *m = node1(g, OP_ReduceMax, x);
  ir_attr_set_ints(m, "axes", (int64_t[]){0, 2}, 2);
  ir_attr_set_int(m, "keepdims", 0);
  expect_ok(m);
  assert_shape(m->out[0], 2, (int64_t[]){3, 5});
  Node *all = node1(g, OP_ReduceL2, x);  /* no axes: every axis */
  ir_attr_set_int(all, "keepdims", 0);
  expect_ok(all);
  assert_int_equal(all->out[0]->shape.rank, 0);
  ir_graph_free(g);
}

static void test_reduce_input_axes(void **state) {
  (void)state;
  Graph *g = gnew(18);
  Value *x = tin(g, "x", DT_F16, 3, (int64_t[]){2, 3, 4});
  Node *n = node2(g, OP_ReduceLogSumExp, x, ints_const(g, "axes", 1, (int64_t[]){-2}), 1);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){2, 1, 4});
  Node *s = node2(g, OP_ReduceSum, x, ints_const(g, "axes", 2, (int64_t[]){0, 2}), 1);
  ir_attr_set_int(s, "keepdims", 0);
  expect_ok(s);
  assert_shape(s->out[0], 1, (int64_t[]){3});
  /* Empty axes: every axis, or the identity with noop_with_empty_axes. */
  Node *e = node2(g, OP_ReduceProd, x, ints_const(g, "axes", 0, NULL), 1);
  expect_ok(e);
  assert_shape(e->out[0], 3, (int64_t[]){1, 1, 1});
  Node *noop = node2(g, OP_ReduceProd, x, ints_const(g, "axes", 0, NULL), 1);
  ir_attr_set_int(noop, "noop_with_empty_axes", 1);
  expect_ok(noop);
  assert_shape(noop->out[0], 3, (int64_t[]){2, 3, 4});
  bool mask[IR_MAX_RANK], is_noop;
  assert_true(infer_reduce_axes(noop, 3, mask, &is_noop));
  assert_true(is_noop);
  assert_true(infer_reduce_axes(s, 3, mask, &is_noop));
  assert_false(is_noop);
  assert_true(mask[0] && !mask[1] && mask[2]);
  ir_graph_free(g);
}

static void test_reduce_runtime_axes(void **state) {
  (void)state;
  Graph *g = gnew(18);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){2, 1, 4});
  Value *a = tin(g, "a", DT_I64, 1, (int64_t[]){2});
  Node *k = node2(g, OP_ReduceMin, x, a, 1);
  expect_ok(k);  /* keepdims: rank stays, extent-1 dims stay 1 */
  assert_shape(k->out[0], 3, (int64_t[]){DIM_UNKNOWN, 1, DIM_UNKNOWN});
  Node *nk = node2(g, OP_ReduceMin, x, a, 1);
  ir_attr_set_int(nk, "keepdims", 0);
  expect_ok(nk);
  assert_int_equal(nk->out[0]->shape.rank, 1);
  bool mask[IR_MAX_RANK], noop;
  assert_false(infer_reduce_axes(nk, 3, mask, &noop));
  /* A run-time axes list of length 0 is known to be empty. */
  Value *none = tin(g, "none", DT_I64, 1, (int64_t[]){0});
  Node *e = node2(g, OP_ReduceSumSquare, x, none, 1);
  ir_attr_set_int(e, "keepdims", 0);
  expect_ok(e);
  assert_int_equal(e->out[0]->shape.rank, 0);
  ir_graph_free(g);
}

static void test_reduce_symbolic_dims(void **state) {
  (void)state;
  Graph *g = gnew(18);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){DIM_UNKNOWN, 3, 4});
  x->shape.sym[0] = "N";
  Node *n = node2(g, OP_ReduceL1, x, ints_const(g, "axes", 1, (int64_t[]){-1}), 1);
  ir_attr_set_int(n, "keepdims", 0);
  expect_ok(n);
  assert_int_equal(n->out[0]->shape.rank, 2);
  assert_int_equal(n->out[0]->shape.d[0], DIM_UNKNOWN);
  assert_string_equal(n->out[0]->shape.sym[0], "N");
  assert_int_equal(n->out[0]->shape.d[1], 3);
  ir_graph_free(g);
}

static void test_reduce_types(void **state) {
  (void)state;
  Graph *g = gnew(20);
  Value *b = tin(g, "b", DT_BOOL, 2, (int64_t[]){4, 2});
  expect_ok(node1(g, OP_ReduceMax, b));
  expect_error(node1(g, OP_ReduceSum, b), "element type bool");
  Value *i8 = tin(g, "i8", DT_I8, 1, (int64_t[]){4});
  Node *n = node1(g, OP_ReduceMin, i8);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I8);
  Value *s = tin(g, "s", DT_STRING, 1, (int64_t[]){4});
  expect_error(node1(g, OP_ReduceMean, s), "does not support");
  ir_graph_free(g);
}

static void test_reduce_errors(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 4});
  Node *range = node1(g, OP_ReduceMean, x);
  ir_attr_set_ints(range, "axes", (int64_t[]){2}, 1);
  expect_error(range, "out of range");
  Node *rep = node1(g, OP_ReduceMean, x);
  ir_attr_set_ints(rep, "axes", (int64_t[]){1, -1}, 2);
  expect_error(rep, "repeated");
  /* ReduceMean takes axes as input only from opset 18, ReduceSum from 13. */
  expect_error(node2(g, OP_ReduceMean, x, ints_const(g, "axes", 1, (int64_t[]){0}), 1), "needs opset 18");
  expect_ok(node2(g, OP_ReduceSum, x, ints_const(g, "axes", 1, (int64_t[]){0}), 1));
  Node *kd = node1(g, OP_ReduceMax, x);
  ir_attr_set_int(kd, "keepdims", 2);
  expect_error(kd, "expected 0 or 1");
  Value *fa = num_const(g, "fa", DT_F32, 1, (int64_t[]){1}, (double[]){0});
  expect_error(node2(g, OP_ReduceSum, x, fa, 1), "expected int64");
  Node *both = node2(g, OP_ReduceSum, x, ints_const(g, "axes", 1, (int64_t[]){0}), 1);
  ir_attr_set_ints(both, "axes", (int64_t[]){0}, 1);
  expect_error(both, "both as attribute and as input");
  ir_graph_free(g);
}

/* ---- ArgMax, ArgMin --------------------------------------------------------------- */

static void test_argmax(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F16, 3, (int64_t[]){2, 3, 4});
  Node *n = node1(g, OP_ArgMax, x);
  ir_attr_set_int(n, "axis", -1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I64);
  assert_shape(n->out[0], 3, (int64_t[]){2, 3, 1});
  Node *m = node1(g, OP_ArgMin, x);  /* default axis 0 */
  ir_attr_set_int(m, "keepdims", 0);
  ir_attr_set_int(m, "select_last_index", 1);
  expect_ok(m);
  assert_shape(m->out[0], 2, (int64_t[]){3, 4});
  Node *bad = node1(g, OP_ArgMax, x);
  ir_attr_set_int(bad, "axis", 3);
  expect_error(bad, "out of range");
  Value *e = tin(g, "e", DT_F32, 2, (int64_t[]){2, 0});
  Node *empty = node1(g, OP_ArgMax, e);
  ir_attr_set_int(empty, "axis", 1);
  expect_error(empty, "extent 0");
  Value *sc = tin(g, "sc", DT_F32, 0, NULL);
  expect_error(node1(g, OP_ArgMin, sc), "scalar");
  Graph *old = gnew(11);
  Value *y = tin(old, "y", DT_F32, 1, (int64_t[]){5});
  Node *last = node1(old, OP_ArgMax, y);
  ir_attr_set_int(last, "select_last_index", 1);
  expect_error(last, "needs opset 12");
  ir_graph_free(old);
  ir_graph_free(g);
}

/* ---- CumSum ------------------------------------------------------------------------- */

static void test_cumsum(void **state) {
  (void)state;
  Graph *g = gnew(14);
  Value *x = tin(g, "x", DT_I32, 2, (int64_t[]){2, 3});
  Node *n = node2(g, OP_CumSum, x, num_const(g, "ax", DT_I32, 0, NULL, (double[]){-1}), 1);
  ir_attr_set_int(n, "exclusive", 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I32);
  assert_shape(n->out[0], 2, (int64_t[]){2, 3});
  expect_ok(node2(g, OP_CumSum, x, tin(g, "rt", DT_I64, 0, NULL), 1));  /* run-time axis: shape still known */
  expect_error(node2(g, OP_CumSum, x, num_const(g, "big", DT_I64, 1, (int64_t[]){1}, (double[]){2}), 1),
               "out of range");
  expect_error(node2(g, OP_CumSum, x, num_const(g, "f", DT_F32, 0, NULL, (double[]){0}), 1), "int32 or int64");
  expect_error(node2(g, OP_CumSum, x, num_const(g, "two", DT_I64, 1, (int64_t[]){2}, (double[]){0, 1}), 1),
               "single value");
  Node *rev = node2(g, OP_CumSum, x, num_const(g, "z", DT_I64, 0, NULL, (double[]){0}), 1);
  ir_attr_set_int(rev, "reverse", 3);
  expect_error(rev, "expected 0 or 1");
  ir_graph_free(g);
}

/* ---- TopK ----------------------------------------------------------------------------- */

static void test_topk(void **state) {
  (void)state;
  Graph *g = gnew(11);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){2, 10, 4});
  Node *n = node2(g, OP_TopK, x, num_const(g, "k", DT_I64, 1, (int64_t[]){1}, (double[]){3}), 2);
  ir_attr_set_int(n, "axis", 1);
  ir_attr_set_int(n, "largest", 0);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){2, 3, 4});
  assert_int_equal(n->out[0]->dt, DT_F32);
  assert_int_equal(n->out[1]->dt, DT_I64);
  assert_shape(n->out[1], 3, (int64_t[]){2, 3, 4});
  Node *rt = node2(g, OP_TopK, x, tin(g, "kr", DT_I64, 1, (int64_t[]){1}), 2);
  expect_ok(rt);  /* k at run time: bounded by the last axis, a data-dependent extent */
  assert_shape(rt->out[0], 3, (int64_t[]){2, 10, 4});
  assert_int_equal(rt->out[0]->dyn_dims, 1u << 2);
  assert_int_equal(rt->out[1]->dyn_dims, 1u << 2);
  expect_error(node2(g, OP_TopK, x, num_const(g, "k5", DT_I64, 1, (int64_t[]){1}, (double[]){5}), 2), "exceeds");
  expect_error(node2(g, OP_TopK, x, num_const(g, "kn", DT_I64, 1, (int64_t[]){1}, (double[]){-1}), 2),
               "non-negative");
  expect_error(node2(g, OP_TopK, x, num_const(g, "ki", DT_I32, 1, (int64_t[]){1}, (double[]){1}), 2),
               "expected int64");
  Value *b = tin(g, "b", DT_BOOL, 1, (int64_t[]){4});
  expect_error(node2(g, OP_TopK, b, num_const(g, "k1", DT_I64, 1, (int64_t[]){1}, (double[]){1}), 2),
               "does not support");
  ir_graph_free(g);
}

static void test_topk_old_opsets(void **state) {
  (void)state;
  Graph *g = gnew(1);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 6});
  Node *n = ir_node_new(g, OP_TopK, NULL, NULL, 1, &x, 2);
  ir_attr_set_int(n, "k", 2);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){3, 2});
  expect_error(ir_node_new(g, OP_TopK, NULL, NULL, 1, &x, 2), "attribute 'k' is required");
  Graph *g10 = gnew(10);
  Value *y = tin(g10, "y", DT_I32, 1, (int64_t[]){6});
  expect_error(node2(g10, OP_TopK, y, num_const(g10, "k", DT_I64, 1, (int64_t[]){1}, (double[]){1}), 2),
               "before opset 11");
  Value *z = tin(g10, "z", DT_F32, 1, (int64_t[]){6});
  expect_error(ir_node_new(g10, OP_TopK, NULL, NULL, 1, &z, 2), "input 1 (K) is required");
  ir_graph_free(g10);
  ir_graph_free(g);
}

/* ---- Hardmax ------------------------------------------------------------------------ */

static void test_hardmax(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_BF16, 3, (int64_t[]){3, 4, 5});
  Node *n = node1(g, OP_Hardmax, x);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){3, 4, 5});
  assert_int_equal(n->out[0]->dt, DT_BF16);
  Node *bad = node1(g, OP_Hardmax, x);
  ir_attr_set_int(bad, "axis", -4);
  expect_error(bad, "out of range");
  Value *i = tin(g, "i", DT_I32, 1, (int64_t[]){5});
  expect_error(node1(g, OP_Hardmax, i), "expected f16");
  ir_graph_free(g);
}

/* ---- folding ------------------------------------------------------------------------ */

static void test_fold_reduce_ints(void **state) {
  (void)state;
  Graph *g = gnew(18);
  /* Shape arithmetic: the product of a shape's dims. */
  Value *dims = num_const(g, "dims", DT_I64, 1, (int64_t[]){3}, (double[]){2, 3, 4});
  Node *p = node1(g, OP_ReduceProd, dims);
  ir_attr_set_int(p, "keepdims", 0);
  Value *pv = infer_fold(p, 0);
  assert_non_null(pv);
  assert_int_equal(pv->kind, VK_CONST);
  assert_int_equal(pv->konst->numel, 1);
  assert_int_equal(tensor_get_i64(pv->konst, 0), 24);
  Value *m = num_const(g, "m", DT_I32, 2, (int64_t[]){2, 3}, (double[]){1, -5, 3, 7, 2, -1});
  Node *mx = node2(g, OP_ReduceMax, m, ints_const(g, "axes", 1, (int64_t[]){1}), 1);
  Value *mxv = infer_fold(mx, 0);
  assert_non_null(mxv);
  assert_shape(mxv, 2, (int64_t[]){2, 1});
  assert_int_equal(tensor_get_i64(mxv->konst, 0), 3);
  assert_int_equal(tensor_get_i64(mxv->konst, 1), 7);
  Node *mn = node2(g, OP_ReduceMin, m, ints_const(g, "axes", 1, (int64_t[]){0}), 1);
  ir_attr_set_int(mn, "keepdims", 0);
  Value *mnv = infer_fold(mn, 0);
  assert_non_null(mnv);
  assert_int_equal(tensor_get_i64(mnv->konst, 1), -5);
  assert_int_equal(tensor_get_i64(mnv->konst, 2), -1);
  /* Sums saturate like the generated code instead of wrapping. */
  Value *big = num_const(g, "big", DT_I32, 1, (int64_t[]){2}, (double[]){2147483647.0, 2});
  Value *sv = infer_fold(node1(g, OP_ReduceSum, big), 0);
  assert_non_null(sv);
  assert_int_equal(tensor_get_i64(sv->konst, 0), 2147483647);
  ir_graph_free(g);
}

static void test_fold_reduce_floats(void **state) {
  (void)state;
  Graph *g = gnew(18);
  Value *x = num_const(g, "x", DT_F32, 2, (int64_t[]){2, 2}, (double[]){1.5, 2.5, NAN, 4});
  Value *s = infer_fold(node2(g, OP_ReduceSum, x, ints_const(g, "axes", 1, (int64_t[]){1}), 1), 0);
  assert_non_null(s);
  assert_true(tensor_get_f64(s->konst, 0) == 4.0);
  assert_true(isnan(tensor_get_f64(s->konst, 1)));
  Node *noop = node2(g, OP_ReduceMax, x, ints_const(g, "axes", 0, NULL), 1);
  ir_attr_set_int(noop, "noop_with_empty_axes", 1);
  Value *nv = infer_fold(noop, 0);  /* the identity folds too */
  assert_non_null(nv);
  assert_true(tensor_get_f64(nv->konst, 3) == 4.0);
  /* Runtime data does not fold; other Reduce ops have no folder. */
  Value *rt = tin(g, "rt", DT_F32, 1, (int64_t[]){3});
  assert_null(infer_fold(node1(g, OP_ReduceSum, rt), 0));
  assert_null(infer_fold(node1(g, OP_ReduceMean, x), 0));
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reduce_attr_axes),    cmocka_unit_test(test_reduce_input_axes),
      cmocka_unit_test(test_reduce_runtime_axes), cmocka_unit_test(test_reduce_symbolic_dims),
      cmocka_unit_test(test_reduce_types),        cmocka_unit_test(test_reduce_errors),
      cmocka_unit_test(test_argmax),              cmocka_unit_test(test_cumsum),
      cmocka_unit_test(test_topk),                cmocka_unit_test(test_topk_old_opsets),
      cmocka_unit_test(test_hardmax),             cmocka_unit_test(test_fold_reduce_ints),
      cmocka_unit_test(test_fold_reduce_floats),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
