/* test_infer_movement.c - unit tests of the data-movement family's inference
 * hooks (passes/infer_movement.c) and folders (passes/fold_movement.c):
 * Slice's clamping and negative steps in both opset forms, Pad's attribute
 * and input forms, Expand/Tile broadcasting, Split's uneven parts, the gather
 * and scatter shape rules, OneHot, DepthToSpace, Compress, and the values the
 * folders compute. Error paths check the message. */
#include "test_util.h"

static void assert_values(const Value *v, int count, const int64_t *want) {
  assert_non_null(v);
  assert_int_equal(v->kind, VK_CONST);
  assert_int_equal(v->konst->numel, count);
  for (int i = 0; i < count; i++)
    if (tensor_get_i64(v->konst, i) != want[i])
      fail_msg("element %d is %lld, expected %lld", i, (long long)tensor_get_i64(v->konst, i), (long long)want[i]);
}

/* 1-D i64 constant 0, 1, ..., count-1. */
static Value *iota(Graph *g, const char *name, int count) {
  int64_t v[64];
  for (int i = 0; i < count; i++)
    v[i] = i;
  return ints_const(g, name, count, v);
}

static Node *slice4(Graph *g, Value *x, int k, const int64_t *st, const int64_t *en, const int64_t *ax,
                    const int64_t *sp) {
  Value *in[5] = {x, ints_const(g, "st", k, st), ints_const(g, "en", k, en), ax ? ints_const(g, "ax", k, ax) : g->none,
                  sp ? ints_const(g, "sp", k, sp) : g->none};
  return op(g, OP_Slice, 5, in, 1);
}

/* ---- Slice ---------------------------------------------------------------------- */

static void test_slice_clamping(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){20, 10, 5});
  Node *n = slice4(g, x, 2, (int64_t[]){0, 0}, (int64_t[]){3, 10}, (int64_t[]){0, 1}, (int64_t[]){1, 1});
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){3, 10, 5});
  /* Out-of-range starts clamp to the end; negative ends count from it. */
  n = slice4(g, x, 1, (int64_t[]){1000}, (int64_t[]){1000}, (int64_t[]){1}, NULL);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){20, 0, 5});
  n = slice4(g, x, 1, (int64_t[]){0}, (int64_t[]){-1}, (int64_t[]){-1}, NULL);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){20, 10, 4});
  /* Negative steps walk back to INT64_MIN's clamp of -1: the whole axis. */
  n = slice4(g, x, 1, (int64_t[]){-1}, (int64_t[]){INT64_MIN}, (int64_t[]){1}, (int64_t[]){-1});
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){20, 10, 5});
  n = slice4(g, x, 1, (int64_t[]){20}, (int64_t[]){0}, (int64_t[]){0}, (int64_t[]){-3});
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){7, 10, 5});  /* 19, 16, ..., 1 */
  n = slice4(g, x, 1, (int64_t[]){0}, (int64_t[]){INT64_MAX}, (int64_t[]){2}, (int64_t[]){INT64_MAX});
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){20, 10, 1});
  ir_graph_free(g);
}

static void test_slice_errors(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){4, 4});
  expect_error(slice4(g, x, 1, (int64_t[]){0}, (int64_t[]){2}, NULL, (int64_t[]){0}), "steps entry 0 is 0");
  expect_error(slice4(g, x, 2, (int64_t[]){0, 0}, (int64_t[]){2, 2}, (int64_t[]){1, -1}, NULL), "repeated");
  expect_error(slice4(g, x, 1, (int64_t[]){0}, (int64_t[]){2}, (int64_t[]){2}, NULL), "out of range");
  Value *in[3] = {x, ints_const(g, "s", 1, (int64_t[]){0}), ints_const(g, "e", 2, (int64_t[]){1, 1})};
  expect_error(op(g, OP_Slice, 3, in, 1), "must match");
  Value *s = tin(g, "s0", DT_F32, 0, NULL);
  expect_error(slice4(g, s, 1, (int64_t[]){0}, (int64_t[]){1}, NULL, NULL), "scalar");
  ir_graph_free(g);
}

static void test_slice_attr_form_and_symbols(void **state) {
  (void)state;
  Graph *g = gnew(9);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){DIM_UNKNOWN, 10});
  x->shape.sym[0] = "N";
  Node *n = op(g, OP_Slice, 1, &x, 1);
  ir_attr_set_ints(n, "starts", (int64_t[]){2}, 1);
  ir_attr_set_ints(n, "ends", (int64_t[]){-2}, 1);
  ir_attr_set_ints(n, "axes", (int64_t[]){1}, 1);
  expect_ok(n);
  assert_string_equal(n->out[0]->shape.sym[0], "N");
  assert_int_equal(n->out[0]->shape.d[1], 6);
  /* x[0:INT_MAX] on the symbolic axis keeps the symbol. */
  Node *m = op(g, OP_Slice, 1, &x, 1);
  ir_attr_set_ints(m, "starts", (int64_t[]){0}, 1);
  ir_attr_set_ints(m, "ends", (int64_t[]){INT64_MAX}, 1);
  expect_ok(m);
  assert_string_equal(m->out[0]->shape.sym[0], "N");
  Node *bad = op(g, OP_Slice, 1, &x, 1);
  ir_attr_set_ints(bad, "starts", (int64_t[]){0}, 1);
  expect_error(bad, "required");
  ir_graph_free(g);
  /* Run-time starts: the sliced axis is unknown, the other is kept. */
  g = gnew(13);
  x = tin(g, "x", DT_F32, 2, (int64_t[]){4, 6});
  Value *in[4] = {x, tin(g, "s", DT_I64, 1, (int64_t[]){1}), ints_const(g, "e", 1, (int64_t[]){3}),
                  ints_const(g, "a", 1, (int64_t[]){1})};
  n = op(g, OP_Slice, 4, in, 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){4, DIM_UNKNOWN});
  ir_graph_free(g);
}

static void test_slice_fold(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = iota(g, "x", 10);
  Node *n = slice4(g, x, 1, (int64_t[]){8}, (int64_t[]){1}, NULL, (int64_t[]){-3});
  assert_values(infer_fold(n, 0), 3, (int64_t[]){8, 5, 2});
  ir_graph_free(g);
}

/* ---- Pad ------------------------------------------------------------------------ */

static void test_pad_forms(void **state) {
  (void)state;
  Graph *g = gnew(11);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 2});
  Value *in[2] = {x, ints_const(g, "p", 4, (int64_t[]){0, 2, 0, 0})};
  Node *n = op(g, OP_Pad, 2, in, 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){3, 4});
  /* Negative pads crop. */
  in[1] = ints_const(g, "q", 4, (int64_t[]){-1, 0, 0, 1});
  n = op(g, OP_Pad, 2, in, 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){2, 3});
  in[1] = ints_const(g, "r", 3, (int64_t[]){0, 0, 0});
  expect_error(op(g, OP_Pad, 2, in, 1), "expected 4");
  Value *in3[3] = {x, in[1], tin(g, "v", DT_I32, 0, NULL)};
  expect_error(op(g, OP_Pad, 3, in3, 1), "constant_value");
  n = op(g, OP_Pad, 2, in, 1);
  ir_attr_add(n, "mode", AT_STRING)->u.s = "mirror";
  expect_error(n, "mode 'mirror'");
  ir_graph_free(g);

  g = gnew(2);
  x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 0});
  n = op(g, OP_Pad, 1, &x, 1);
  ir_attr_set_ints(n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){5, 2});
  Node *r = op(g, OP_Pad, 1, &x, 1);
  ir_attr_set_ints(r, "pads", (int64_t[]){1, 1, 1, 1}, 4);
  ir_attr_add(r, "mode", AT_STRING)->u.s = "reflect";
  expect_error(r, "no elements");
  ir_graph_free(g);

  g = gnew(18);
  x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 3, 4, 5});
  Value *in4[4] = {x, ints_const(g, "p", 4, (int64_t[]){0, 3, 0, 4}), g->none, ints_const(g, "a", 2, (int64_t[]){1, -1})};
  n = op(g, OP_Pad, 4, in4, 1);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 3, 4, 12});
  ir_graph_free(g);
}

static void test_pad_fold_modes(void **state) {
  (void)state;
  Graph *g = gnew(19);
  Value *x = iota(g, "x", 3);  /* [0, 1, 2] */
  static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
  static const int64_t want[4][8] = {
      {0, 0, 0, 0, 1, 2, 0, 0}, {1, 2, 1, 0, 1, 2, 1, 0}, {0, 0, 0, 0, 1, 2, 2, 2}, {0, 1, 2, 0, 1, 2, 0, 1}};
  for (int m = 0; m < 4; m++) {
    Value *in[2] = {x, ints_const(g, "p", 2, (int64_t[]){3, 2})};
    Node *n = op(g, OP_Pad, 2, in, 1);
    ir_attr_add(n, "mode", AT_STRING)->u.s = modes[m];
    assert_values(infer_fold(n, 0), 8, want[m]);
  }
  ir_graph_free(g);
}

/* ---- Expand, Tile ------------------------------------------------------------------- */

static void test_expand(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 1});
  Value *in[2] = {x, ints_const(g, "s", 3, (int64_t[]){2, 1, 6})};
  Node *n = op(g, OP_Expand, 2, in, 1);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){2, 3, 6});
  Value *y = tin(g, "y", DT_F32, 2, (int64_t[]){3, 2});
  Value *bad[2] = {y, ints_const(g, "t", 2, (int64_t[]){3, 4})};
  expect_error(op(g, OP_Expand, 2, bad, 1), "cannot expand");
  /* Run-time shape: extents other than 1 survive, the rest are unknown. */
  Value *dyn[2] = {y, tin(g, "u", DT_I64, 1, (int64_t[]){3})};
  n = op(g, OP_Expand, 2, dyn, 1);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){DIM_UNKNOWN, 3, 2});
  /* Folding broadcasts the values. */
  Value *c = iota(g, "c", 2);
  Value *fi[2] = {c, ints_const(g, "f", 2, (int64_t[]){2, 2})};
  assert_values(infer_fold(op(g, OP_Expand, 2, fi, 1), 0), 4, (int64_t[]){0, 1, 0, 1});
  ir_graph_free(g);
}

static void test_tile(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){2, 3});
  Value *in[2] = {x, ints_const(g, "r", 2, (int64_t[]){2, 1})};
  Node *n = op(g, OP_Tile, 2, in, 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){4, 3});
  in[1] = ints_const(g, "q", 1, (int64_t[]){2});
  expect_error(op(g, OP_Tile, 2, in, 1), "rank 2");
  in[1] = ints_const(g, "z", 2, (int64_t[]){1, -1});
  expect_error(op(g, OP_Tile, 2, in, 1), "negative");
  Value *c = iota(g, "c", 3);
  Value *fi[2] = {c, ints_const(g, "f", 1, (int64_t[]){2})};
  assert_values(infer_fold(op(g, OP_Tile, 2, fi, 1), 0), 6, (int64_t[]){0, 1, 2, 0, 1, 2});
  ir_graph_free(g);
}

/* ---- ConstantOfShape, Range, Size ------------------------------------------------ */

static void test_constant_of_shape(void **state) {
  (void)state;
  Graph *g = gnew(9);
  Value *s = ints_const(g, "s", 2, (int64_t[]){2, 3});
  Node *n = op(g, OP_ConstantOfShape, 1, &s, 1);
  Shape one = shape_make(1, (int64_t[]){1});
  Tensor *t = ir_tensor_new(g, DT_I32, &one, NULL);
  tensor_set_i64(t, 0, 7);
  ir_attr_add(n, "value", AT_TENSOR)->u.t = t;
  Value *v = infer_fold(n, 0);
  assert_non_null(v);
  assert_int_equal(v->dt, DT_I32);
  assert_values(v, 6, (int64_t[]){7, 7, 7, 7, 7, 7});
  Node *dflt = op(g, OP_ConstantOfShape, 1, &s, 1);
  expect_ok(dflt);
  assert_int_equal(dflt->out[0]->dt, DT_F32);
  Node *bad = op(g, OP_ConstantOfShape, 1, &s, 1);
  Shape two = shape_make(1, (int64_t[]){2});
  ir_attr_add(bad, "value", AT_TENSOR)->u.t = ir_tensor_new(g, DT_F32, &two, NULL);
  expect_error(bad, "exactly one element");
  ir_graph_free(g);
}

static void test_range(void **state) {
  (void)state;
  Graph *g = gnew(11);
  Shape sc = shape_scalar();
  Value *in[3] = {num_const(g, "a", DT_I32, 0, NULL, (double[]){10}), num_const(g, "b", DT_I32, 0, NULL, (double[]){4}),
                  num_const(g, "c", DT_I32, 0, NULL, (double[]){-2})};
  assert_values(infer_fold(op(g, OP_Range, 3, in, 1), 0), 3, (int64_t[]){10, 8, 6});
  Value *f[3] = {num_const(g, "fa", DT_F32, 0, NULL, (double[]){0}), num_const(g, "fb", DT_F32, 0, NULL, (double[]){1}),
                 num_const(g, "fc", DT_F32, 0, NULL, (double[]){0.3})};
  Node *n = op(g, OP_Range, 3, f, 1);
  expect_ok(n);
  assert_shape(n->out[0], 1, (int64_t[]){4});
  in[2] = num_const(g, "z", DT_I32, 0, NULL, (double[]){0});
  expect_error(op(g, OP_Range, 3, in, 1), "delta is 0");
  in[2] = f[2];
  expect_error(op(g, OP_Range, 3, in, 1), "type f32");
  Value *ra = ir_input_add(g, "ra", DT_I64, &sc), *rb = ir_input_add(g, "rb", DT_I64, &sc);
  Value *r[3] = {ra, rb, rb};
  n = op(g, OP_Range, 3, r, 1);
  expect_ok(n);
  assert_shape(n->out[0], 1, (int64_t[]){DIM_UNKNOWN});
  ir_graph_free(g);
}

static void test_size_folds_from_shape(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){2, 3, 4});
  assert_values(infer_fold(op(g, OP_Size, 1, &x, 1), 0), 1, (int64_t[]){24});
  Value *y = tin(g, "y", DT_F32, 2, (int64_t[]){DIM_UNKNOWN, 3});
  Node *n = op(g, OP_Size, 1, &y, 1);
  assert_null(infer_fold(n, 0));
  assert_int_equal(n->out[0]->shape.rank, 0);
  ir_graph_free(g);
}

/* ---- Split ------------------------------------------------------------------------ */

static void test_split(void **state) {
  (void)state;
  Graph *g = gnew(18);
  Value *x = tin(g, "x", DT_F32, 1, (int64_t[]){7});
  Node *n = op(g, OP_Split, 1, &x, 4);
  ir_attr_set_int(n, "num_outputs", 4);
  expect_ok(n);
  for (int i = 0; i < 4; i++)
    assert_shape(n->out[i], 1, (int64_t[]){i < 3 ? 2 : 1});
  Value *in[2] = {x, ints_const(g, "s", 2, (int64_t[]){3, 3})};
  expect_error(op(g, OP_Split, 2, in, 2), "add up to 6");
  expect_error(op(g, OP_Split, 2, in, 3), "2 entries for 3 outputs");
  Node *m = op(g, OP_Split, 1, &x, 2);
  ir_attr_set_int(m, "num_outputs", 3);
  expect_error(m, "num_outputs is 3");
  ir_graph_free(g);

  g = gnew(11);
  Value *y = tin(g, "y", DT_F32, 2, (int64_t[]){2, 6});
  n = op(g, OP_Split, 1, &y, 2);
  ir_attr_set_int(n, "axis", -1);
  ir_attr_set_ints(n, "split", (int64_t[]){2, 4}, 2);
  expect_ok(n);
  assert_shape(n->out[1], 2, (int64_t[]){2, 4});
  Value *c = iota(g, "c", 5);
  Node *f = op(g, OP_Split, 1, &c, 2);
  ir_attr_set_ints(f, "split", (int64_t[]){2, 3}, 2);
  Value *b = f->out[1];
  assert_values(infer_fold(f, 0), 2, (int64_t[]){0, 1});
  assert_values(b, 3, (int64_t[]){2, 3, 4});
  ir_graph_free(g);
}

/* ---- gathers and scatters ----------------------------------------------------------- */

static void test_gather_elements_nd(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 3});
  Value *in[2] = {x, tin(g, "i", DT_I64, 2, (int64_t[]){2, 3})};
  Node *n = op(g, OP_GatherElements, 2, in, 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){2, 3});
  in[1] = tin(g, "j", DT_I64, 1, (int64_t[]){3});
  expect_error(op(g, OP_GatherElements, 2, in, 1), "must match");
  in[1] = num_const(g, "k", DT_I64, 2, (int64_t[]){1, 1}, (double[]){3});
  expect_error(op(g, OP_GatherElements, 2, in, 1), "index 3 is out of range");

  Value *d = tin(g, "d", DT_F32, 3, (int64_t[]){2, 2, 2});
  Value *nd[2] = {d, tin(g, "t", DT_I64, 2, (int64_t[]){2, 1})};
  n = op(g, OP_GatherND, 2, nd, 1);
  ir_attr_set_int(n, "batch_dims", 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){2, 2});
  nd[1] = tin(g, "u", DT_I64, 2, (int64_t[]){2, 4});
  expect_error(op(g, OP_GatherND, 2, nd, 1), "last indices extent is 4");
  ir_graph_free(g);
}

static void test_scatters(void **state) {
  (void)state;
  Graph *g = gnew(16);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 3});
  Value *in[3] = {x, tin(g, "i", DT_I64, 2, (int64_t[]){1, 2}), tin(g, "u", DT_F32, 2, (int64_t[]){1, 2})};
  Node *n = op(g, OP_ScatterElements, 3, in, 1);
  ir_attr_add(n, "reduction", AT_STRING)->u.s = "add";
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){3, 3});
  n = op(g, OP_ScatterElements, 3, in, 1);
  ir_attr_add(n, "reduction", AT_STRING)->u.s = "max";
  expect_error(n, "needs opset 18");
  in[2] = tin(g, "w", DT_F32, 2, (int64_t[]){1, 3});
  expect_error(op(g, OP_ScatterElements, 3, in, 1), "differ on axis 1");

  Value *d = tin(g, "d", DT_F32, 3, (int64_t[]){4, 4, 4});
  Value *nd[3] = {d, tin(g, "t", DT_I64, 2, (int64_t[]){2, 1}), tin(g, "v", DT_F32, 3, (int64_t[]){2, 4, 4})};
  expect_ok(op(g, OP_ScatterND, 3, nd, 1));
  nd[2] = tin(g, "bad", DT_F32, 3, (int64_t[]){2, 4, 3});
  expect_error(op(g, OP_ScatterND, 3, nd, 1), "updates extent 3");
  ir_graph_free(g);
}

/* ---- OneHot, Trilu, DepthToSpace, EyeLike, ReverseSequence, Compress --------------- */

static void test_onehot(void **state) {
  (void)state;
  Graph *g = gnew(11);
  Value *in[3] = {tin(g, "i", DT_I64, 2, (int64_t[]){2, 3}), num_const(g, "d", DT_F32, 0, NULL, (double[]){5}),
                  tin(g, "v", DT_I32, 1, (int64_t[]){2})};
  Node *n = op(g, OP_OneHot, 3, in, 1);
  ir_attr_set_int(n, "axis", 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I32);
  assert_shape(n->out[0], 3, (int64_t[]){2, 5, 3});
  in[2] = tin(g, "w", DT_I32, 1, (int64_t[]){3});
  expect_error(op(g, OP_OneHot, 3, in, 1), "values");
  ir_graph_free(g);
}

static void test_trilu_space_depth_eyelike(void **state) {
  (void)state;
  Graph *g = gnew(14);
  Value *v = tin(g, "v", DT_F32, 1, (int64_t[]){4});
  expect_error(op(g, OP_Trilu, 1, &v, 1), "rank >= 2");
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 8, 2, 3});
  Node *n = op(g, OP_DepthToSpace, 1, &x, 1);
  ir_attr_set_int(n, "blocksize", 2);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 2, 4, 6});
  Node *s = op(g, OP_SpaceToDepth, 1, &n->out[0], 1);
  ir_attr_set_int(s, "blocksize", 2);
  expect_ok(s);
  assert_shape(s->out[0], 4, (int64_t[]){1, 8, 2, 3});
  Node *bad = op(g, OP_DepthToSpace, 1, &x, 1);
  ir_attr_set_int(bad, "blocksize", 3);
  expect_error(bad, "multiple of blocksize");
  expect_error(op(g, OP_DepthToSpace, 1, &x, 1), "blocksize");
  Value *m = tin(g, "m", DT_I32, 2, (int64_t[]){3, 4});
  Node *e = op(g, OP_EyeLike, 1, &m, 1);
  ir_attr_set_int(e, "dtype", DT_F64);
  expect_ok(e);
  assert_int_equal(e->out[0]->dt, DT_F64);
  expect_error(op(g, OP_EyeLike, 1, &x, 1), "rank 4");
  ir_graph_free(g);
}

static void test_reverse_sequence_and_compress(void **state) {
  (void)state;
  Graph *g = gnew(11);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 2});
  Value *rs[2] = {x, tin(g, "l", DT_I64, 1, (int64_t[]){3})};
  Node *r = op(g, OP_ReverseSequence, 2, rs, 1);
  ir_attr_set_int(r, "batch_axis", 0);
  expect_error(r, "batch_axis");
  ir_attr_set_int(r, "time_axis", 1);
  expect_ok(r);
  Value *c = num_const(g, "c", DT_BOOL, 1, (int64_t[]){3}, (double[]){0, 1, 1});
  Value *in[2] = {x, c};
  Node *n = op(g, OP_Compress, 2, in, 1);
  ir_attr_set_int(n, "axis", 0);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){2, 2});
  Node *flat = op(g, OP_Compress, 2, in, 1);
  expect_ok(flat);
  assert_shape(flat->out[0], 1, (int64_t[]){2});
  in[1] = num_const(g, "far", DT_BOOL, 1, (int64_t[]){4}, (double[]){0, 0, 0, 1});
  Node *far = op(g, OP_Compress, 2, in, 1);
  ir_attr_set_int(far, "axis", 0);
  expect_error(far, "beyond the extent 3");
  /* a condition known at run time: the kept count is a data-dependent extent,
   * bounded by the axis (or the element count) and the condition's length */
  in[1] = tin(g, "rt", DT_BOOL, 1, (int64_t[]){3});
  Node *rc = op(g, OP_Compress, 2, in, 1);
  ir_attr_set_int(rc, "axis", 0);
  expect_ok(rc);
  assert_shape(rc->out[0], 2, (int64_t[]){3, 2});
  assert_int_equal(rc->out[0]->dyn_dims, 1u << 0);
  Node *rf = op(g, OP_Compress, 2, in, 1);
  expect_ok(rf);
  assert_shape(rf->out[0], 1, (int64_t[]){3});
  assert_int_equal(rf->out[0]->dyn_dims, 1u);
  in[1] = tin(g, "rtu", DT_BOOL, 1, (int64_t[]){DIM_UNKNOWN});
  expect_error(op(g, OP_Compress, 2, in, 1), "a static length");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slice_clamping),
      cmocka_unit_test(test_slice_errors),
      cmocka_unit_test(test_slice_attr_form_and_symbols),
      cmocka_unit_test(test_slice_fold),
      cmocka_unit_test(test_pad_forms),
      cmocka_unit_test(test_pad_fold_modes),
      cmocka_unit_test(test_expand),
      cmocka_unit_test(test_tile),
      cmocka_unit_test(test_constant_of_shape),
      cmocka_unit_test(test_range),
      cmocka_unit_test(test_size_folds_from_shape),
      cmocka_unit_test(test_split),
      cmocka_unit_test(test_gather_elements_nd),
      cmocka_unit_test(test_scatters),
      cmocka_unit_test(test_onehot),
      cmocka_unit_test(test_trilu_space_depth_eyelike),
      cmocka_unit_test(test_reverse_sequence_and_compress),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
