/* test_infer_shape_ops.c - unit tests of the shape and data-movement
 * inference hooks (passes/infer_shape_ops.c): Reshape's 0/-1/allowzero rules
 * and symbolic dims, Flatten, Squeeze/Unsqueeze in both opset forms,
 * Dropout, Transpose, Concat, Shape slices, Gather, Cast and Constant. */
#include "test_util.h"

static Node *reshape(Graph *g, Value *x, int count, const int64_t *shape) {
  Value *in[2] = {x, ints_const(g, "shape", count, shape)};
  return op(g, OP_Reshape, 2, in, 1);
}

static void test_reshape_zero_and_neg(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){2, 3, 4});
  Node *n = reshape(g, x, 2, (int64_t[]){0, -1});
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){2, 12});
  expect_error(reshape(g, x, 2, (int64_t[]){5, -1}), "cannot reshape");
  expect_error(reshape(g, x, 2, (int64_t[]){-1, -1}), "more than one -1");
  expect_error(reshape(g, x, 2, (int64_t[]){4, 4}), "24 elements");
  ir_graph_free(g);
}

static void test_reshape_allowzero(void **state) {
  (void)state;
  Graph *g = gnew(14);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){0, 3, 4});
  Node *n = reshape(g, x, 3, (int64_t[]){3, 4, 0});
  ir_attr_set_int(n, "allowzero", 1);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){3, 4, 0});
  ir_graph_free(g);
}

static void test_reshape_symbolic_batch(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){DIM_UNKNOWN, 3, 4});
  x->shape.sym[0] = "N";
  Node *n = reshape(g, x, 2, (int64_t[]){0, -1});
  expect_ok(n);
  assert_string_equal(n->out[0]->shape.sym[0], "N");
  assert_int_equal(n->out[0]->shape.d[1], 12);
  Node *flat = reshape(g, x, 2, (int64_t[]){-1, 12});
  expect_ok(flat);
  assert_int_equal(flat->out[0]->shape.d[0], DIM_UNKNOWN);
  assert_string_equal(flat->out[0]->shape.sym[0], "N");
  /* Shape not constant: only the rank is known. */
  Value *in[2] = {x, tin(g, "s", DT_I64, 1, (int64_t[]){3})};
  Node *m = op(g, OP_Reshape, 2, in, 1);
  expect_ok(m);
  assert_int_equal(m->out[0]->shape.rank, 3);
  assert_int_equal(m->out[0]->shape.d[2], DIM_UNKNOWN);
  ir_graph_free(g);
}

static void test_flatten(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){2, 3, 4, 5});
  Node *n = op(g, OP_Flatten, 1, &x, 1);
  ir_attr_set_int(n, "axis", -1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){24, 5});
  Node *z = op(g, OP_Flatten, 1, &x, 1);
  ir_attr_set_int(z, "axis", 0);
  expect_ok(z);
  assert_shape(z->out[0], 2, (int64_t[]){1, 120});
  Node *bad = op(g, OP_Flatten, 1, &x, 1);
  ir_attr_set_int(bad, "axis", 5);
  expect_error(bad, "out of range");
  ir_graph_free(g);
}

static void test_squeeze_forms(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 3, 1, 5});
  Value *in[2] = {x, ints_const(g, "axes", 1, (int64_t[]){-2})};
  Node *n = op(g, OP_Squeeze, 2, in, 1);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){1, 3, 5});
  Node *all = op(g, OP_Squeeze, 1, &x, 1);
  expect_ok(all);
  assert_shape(all->out[0], 2, (int64_t[]){3, 5});
  Value *bad[2] = {x, ints_const(g, "axes2", 1, (int64_t[]){1})};
  expect_error(op(g, OP_Squeeze, 2, bad, 1), "extent 3");
  ir_graph_free(g);
}

static void test_unsqueeze_attr_form(void **state) {
  (void)state;
  Graph *g = gnew(11);
  Value *x = tin(g, "x", DT_I64, 2, (int64_t[]){3, 4});
  Node *n = op(g, OP_Unsqueeze, 1, &x, 1);
  ir_attr_set_ints(n, "axes", (int64_t[]){0, -1}, 2);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_true(pass_canonicalize(g, &d));
  diag_free(&d);
  assert_int_equal(n->n_in, 2);
  assert_null(ir_attr(n, "axes"));
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 3, 4, 1});
  Node *dup = op(g, OP_Unsqueeze, 1, &x, 1);
  ir_attr_set_ints(dup, "axes", (int64_t[]){1, 1}, 2);
  expect_error(dup, "repeated");
  ir_graph_free(g);
}

static void test_dropout(void **state) {
  (void)state;
  Graph *g = gnew(12);
  Value *x = tin(g, "x", DT_F16, 2, (int64_t[]){3, 4});
  Node *n = op(g, OP_Dropout, 1, &x, 2);
  expect_ok(n);
  assert_int_equal(n->out[1]->dt, DT_BOOL);
  assert_shape(n->out[1], 2, (int64_t[]){3, 4});
  Value *in[3] = {x, NULL, num_const(g, "train", DT_BOOL, 0, NULL, (double[]){1})};
  expect_error(op(g, OP_Dropout, 3, in, 1), "draws random numbers");  /* default ratio 0.5 */
  Value *rt[3] = {x, NULL, tin(g, "t", DT_BOOL, 0, NULL)};
  expect_ok(op(g, OP_Dropout, 3, rt, 1));  /* decided at run time */
  Graph *old = gnew(7);
  Value *y = tin(old, "y", DT_F32, 1, (int64_t[]){3});
  Node *m = op(old, OP_Dropout, 1, &y, 2);
  expect_ok(m);
  assert_int_equal(m->out[1]->dt, DT_F32);
  ir_graph_free(old);
  ir_graph_free(g);
}

static void test_transpose(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){2, 3, 4});
  Node *n = op(g, OP_Transpose, 1, &x, 1);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){4, 3, 2});
  Node *p = op(g, OP_Transpose, 1, &x, 1);
  ir_attr_set_ints(p, "perm", (int64_t[]){1, 2, 0}, 3);
  expect_ok(p);
  assert_shape(p->out[0], 3, (int64_t[]){3, 4, 2});
  Node *bad = op(g, OP_Transpose, 1, &x, 1);
  ir_attr_set_ints(bad, "perm", (int64_t[]){0, 0, 1}, 3);
  expect_error(bad, "not a permutation");
  ir_graph_free(g);
}

static void test_concat(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *a = tin(g, "a", DT_F32, 2, (int64_t[]){DIM_UNKNOWN, 3});
  a->shape.sym[0] = "N";
  Value *in[3] = {a, tin(g, "b", DT_F32, 2, (int64_t[]){DIM_UNKNOWN, 0}), tin(g, "c", DT_F32, 2, (int64_t[]){DIM_UNKNOWN, 2})};
  Node *n = op(g, OP_Concat, 3, in, 1);
  ir_attr_set_int(n, "axis", -1);
  expect_ok(n);
  assert_string_equal(n->out[0]->shape.sym[0], "N");
  assert_int_equal(n->out[0]->shape.d[1], 5);
  Value *bad[2] = {a, tin(g, "d", DT_F32, 1, (int64_t[]){3})};
  Node *m = op(g, OP_Concat, 2, bad, 1);
  ir_attr_set_int(m, "axis", 0);
  expect_error(m, "rank");
  Node *noaxis = op(g, OP_Concat, 1, in, 1);
  expect_error(noaxis, "axis");
  ir_graph_free(g);
}

static void test_shape_slices(void **state) {
  (void)state;
  Graph *g = gnew(15);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){2, 3, 4, 5});
  Node *n = op(g, OP_Shape, 1, &x, 1);
  ir_attr_set_int(n, "start", -3);
  ir_attr_set_int(n, "end", 10);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I64);
  assert_shape(n->out[0], 1, (int64_t[]){3});
  Node *e = op(g, OP_Shape, 1, &x, 1);
  ir_attr_set_int(e, "start", 3);
  ir_attr_set_int(e, "end", 1);
  expect_ok(e);
  assert_shape(e->out[0], 1, (int64_t[]){0});
  ir_graph_free(g);
}

static void test_gather(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *in[2] = {tin(g, "x", DT_F32, 3, (int64_t[]){5, 6, 7}), tin(g, "i", DT_I32, 2, (int64_t[]){2, 3})};
  Node *n = op(g, OP_Gather, 2, in, 1);
  ir_attr_set_int(n, "axis", -2);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){5, 2, 3, 7});
  Value *bad[2] = {in[0], ints_const(g, "k", 1, (int64_t[]){6})};
  expect_error(op(g, OP_Gather, 2, bad, 1), "out of range");
  Value *fl[2] = {in[0], tin(g, "f", DT_F32, 1, (int64_t[]){1})};
  expect_error(op(g, OP_Gather, 2, fl, 1), "int32 or int64");
  ir_graph_free(g);
}

static void test_cast_and_castlike(void **state) {
  (void)state;
  Graph *g = gnew(15);
  Value *x = tin(g, "x", DT_F32, 1, (int64_t[]){3});
  Node *n = op(g, OP_Cast, 1, &x, 1);
  ir_attr_set_int(n, "to", DT_F16);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_F16);
  Node *s = op(g, OP_Cast, 1, &x, 1);
  ir_attr_set_int(s, "to", DT_STRING);
  expect_error(s, "string");
  expect_error(op(g, OP_Cast, 1, &x, 1), "'to'");
  Value *in[2] = {x, tin(g, "t", DT_I8, 0, NULL)};
  Node *cl = op(g, OP_CastLike, 2, in, 1);
  expect_ok(cl);
  assert_int_equal(cl->out[0]->dt, DT_I8);
  ir_graph_free(g);
}

static void test_constant_attr_forms(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Node *f = op(g, OP_Constant, 0, NULL, 1);
  Attr *a = ir_attr_add(f, "value_floats", AT_FLOATS);
  static float vals[3] = {1, 2, 3};
  a->n = 3;
  a->u.fs = vals;
  expect_ok(f);
  assert_int_equal(f->out[0]->dt, DT_F32);
  assert_shape(f->out[0], 1, (int64_t[]){3});
  Node *i = op(g, OP_Constant, 0, NULL, 1);
  ir_attr_set_int(i, "value_int", 4);
  expect_ok(i);
  assert_int_equal(i->out[0]->dt, DT_I64);
  assert_int_equal(i->out[0]->shape.rank, 0);
  Node *s = op(g, OP_Constant, 0, NULL, 1);
  ir_attr_add(s, "value_string", AT_STRING)->u.s = "hi";
  expect_error(s, "string");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reshape_zero_and_neg),
      cmocka_unit_test(test_reshape_allowzero),
      cmocka_unit_test(test_reshape_symbolic_batch),
      cmocka_unit_test(test_flatten),
      cmocka_unit_test(test_squeeze_forms),
      cmocka_unit_test(test_unsqueeze_attr_form),
      cmocka_unit_test(test_dropout),
      cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_concat),
      cmocka_unit_test(test_shape_slices),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_cast_and_castlike),
      cmocka_unit_test(test_constant_attr_forms),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
