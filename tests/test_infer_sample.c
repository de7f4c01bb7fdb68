/* test_infer_sample.c - unit tests of the opsi family's inference hooks
 * (passes/infer_sample.c): Resize (scales, sizes, axes, aspect-ratio
 * policies, opset 10 form), Upsample (opset 7 attribute, opset 9 input),
 * GridSample, AffineGrid, RoiAlign and DeformConv. Shapes, unknown dims and
 * error paths. */
#include "test_util.h"

static void set_str(Node *n, const char *name, const char *s) {
  Attr *a = ir_attr_add(n, name, AT_STRING);
  a->u.s = s;
  a->slen = strlen(s);
}

static Value *f32_vec(Graph *g, const char *name, int count, const double *v) {
  return num_const(g, name, DT_F32, 1, (int64_t[]){count}, v);
}

/* ---- Resize ---------------------------------------------------------------------- */

static void test_resize_scales(void **state) {
  (void)state;
  Graph *g = gnew(19);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 1, 4, 4});
  Value *sc = f32_vec(g, "sc", 4, (double[]){1, 1, 0.6, 2.5});
  Node *n = op(g, OP_Resize, 3, (Value *[]){x, g->none, sc}, 1);
  set_str(n, "mode", "linear");
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 1, 2, 10});
  assert_int_equal(n->out[0]->dt, DT_F32);
  ir_graph_free(g);
}

static void test_resize_sizes_axes_policy(void **state) {
  (void)state;
  Graph *g = gnew(19);
  Value *x = tin(g, "x", DT_U8, 4, (int64_t[]){1, 1, 2, 2});
  Value *sz = ints_const(g, "sz", 2, (int64_t[]){7, 8});
  Value *e = f32_vec(g, "e", 0, NULL);
  Node *n = op(g, OP_Resize, 4, (Value *[]){x, g->none, e, sz}, 1);
  ir_attr_set_ints(n, "axes", (int64_t[]){2, 3}, 2);
  set_str(n, "keep_aspect_ratio_policy", "not_larger");
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 1, 7, 7});
  assert_int_equal(n->out[0]->dt, DT_U8);
  Node *m = op(g, OP_Resize, 4, (Value *[]){x, g->none, g->none, sz}, 1);
  ir_attr_set_ints(m, "axes", (int64_t[]){-1, 2}, 2);
  set_str(m, "keep_aspect_ratio_policy", "not_smaller");
  expect_ok(m);
  assert_shape(m->out[0], 4, (int64_t[]){1, 1, 8, 8});
  Node *s = op(g, OP_Resize, 4, (Value *[]){x, g->none, g->none, sz}, 1);
  ir_attr_set_ints(s, "axes", (int64_t[]){3, 2}, 2);
  expect_ok(s);
  assert_shape(s->out[0], 4, (int64_t[]){1, 1, 8, 7});
  ir_graph_free(g);
}

static void test_resize_unknown(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Shape xs = shape_make(4, (int64_t[]){DIM_UNKNOWN, 3, 4, 4});
  xs.sym[0] = "N";
  Value *x = ir_input_add(g, "x", DT_F32, &xs);
  Value *sc = tin(g, "sc", DT_F32, 1, (int64_t[]){4});
  Node *n = op(g, OP_Resize, 3, (Value *[]){x, g->none, sc}, 1);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){DIM_UNKNOWN, DIM_UNKNOWN, DIM_UNKNOWN, DIM_UNKNOWN});
  /* scales known: the symbolic batch dim stays unknown, the rest is computed */
  Value *k = f32_vec(g, "k", 4, (double[]){1, 1, 2, 3});
  Node *m = op(g, OP_Resize, 3, (Value *[]){x, g->none, k}, 1);
  expect_ok(m);
  assert_shape(m->out[0], 4, (int64_t[]){DIM_UNKNOWN, 3, 8, 12});
  assert_string_equal(m->out[0]->shape.sym[0], "N");
  ir_graph_free(g);
}

static void test_resize_opset10_and_upsample(void **state) {
  (void)state;
  Graph *g = gnew(10);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 2, 3, 4});
  Value *sc = f32_vec(g, "sc", 4, (double[]){1, 1, 2, 1.5});
  Node *n = op(g, OP_Resize, 2, (Value *[]){x, sc}, 1);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 2, 6, 6});
  Node *u = op(g, OP_Upsample, 2, (Value *[]){x, sc}, 1);
  expect_ok(u);
  assert_shape(u->out[0], 4, (int64_t[]){1, 2, 6, 6});
  /* opset 10 Resize takes exactly two inputs */
  Node *bad = op(g, OP_Resize, 4, (Value *[]){x, g->none, sc, g->none}, 1);
  expect_error(bad, "takes 2 inputs");
  ir_graph_free(g);

  g = gnew(7);
  x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 2, 3, 4});
  u = op(g, OP_Upsample, 1, (Value *[]){x}, 1);
  Attr *a = ir_attr_add(u, "scales", AT_FLOATS);
  static float s7[4] = {1, 1, 3, 2};
  a->n = 4;
  a->u.fs = s7;
  expect_ok(u);
  assert_shape(u->out[0], 4, (int64_t[]){1, 2, 9, 8});
  Node *no = op(g, OP_Upsample, 1, (Value *[]){x}, 1);
  expect_error(no, "'scales' is required");
  ir_graph_free(g);
}

static void test_resize_errors(void **state) {
  (void)state;
  Graph *g = gnew(19);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 1, 4, 4});
  Value *sc = f32_vec(g, "sc", 4, (double[]){1, 1, 2, 2});
  Value *sc3 = f32_vec(g, "sc3", 3, (double[]){1, 2, 2});
  Value *neg = f32_vec(g, "neg", 4, (double[]){1, 1, -2, 2});
  Value *sz = ints_const(g, "sz", 4, (int64_t[]){1, 1, 8, 8});
  Node *both = op(g, OP_Resize, 4, (Value *[]){x, g->none, sc, sz}, 1);
  expect_error(both, "exactly one of scales and sizes");
  Node *none = op(g, OP_Resize, 1, (Value *[]){x}, 1);
  expect_error(none, "exactly one of scales and sizes");
  Node *cnt = op(g, OP_Resize, 3, (Value *[]){x, g->none, sc3}, 1);
  expect_error(cnt, "scales has 3 entries, expected 4");
  Node *ng = op(g, OP_Resize, 3, (Value *[]){x, g->none, neg}, 1);
  expect_error(ng, "expected > 0");
  Node *mode = op(g, OP_Resize, 3, (Value *[]){x, g->none, sc}, 1);
  set_str(mode, "mode", "area");
  expect_error(mode, "mode 'area'");
  Node *ctm = op(g, OP_Resize, 3, (Value *[]){x, g->none, sc}, 1);
  set_str(ctm, "coordinate_transformation_mode", "corners");
  expect_error(ctm, "coordinate_transformation_mode 'corners'");
  Node *aa = op(g, OP_Resize, 3, (Value *[]){x, g->none, sc}, 1);
  ir_attr_set_int(aa, "antialias", 1);
  expect_error(aa, "antialias");
  Node *ax = op(g, OP_Resize, 4, (Value *[]){x, g->none, g->none, sz}, 1);
  ir_attr_set_ints(ax, "axes", (int64_t[]){2, 2}, 2);
  expect_error(ax, "repeats axis 2");
  Node *ax2 = op(g, OP_Resize, 4, (Value *[]){x, g->none, g->none, sz}, 1);
  ir_attr_set_ints(ax2, "axes", (int64_t[]){2, 4}, 2);
  expect_error(ax2, "out of range");
  ir_graph_free(g);
}

/* ---- GridSample, AffineGrid ------------------------------------------------------ */

static void test_gridsample(void **state) {
  (void)state;
  Graph *g = gnew(20);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){2, 3, 5, 6});
  Value *grid = tin(g, "grid", DT_F32, 4, (int64_t[]){2, 7, 8, 2});
  Node *n = op(g, OP_GridSample, 2, (Value *[]){x, grid}, 1);
  set_str(n, "mode", "cubic");
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){2, 3, 7, 8});
  Value *x5 = tin(g, "x5", DT_F64, 5, (int64_t[]){1, 2, 3, 4, 5});
  Value *g5 = tin(g, "g5", DT_F64, 5, (int64_t[]){1, 6, 7, 8, 3});
  Node *v = op(g, OP_GridSample, 2, (Value *[]){x5, g5}, 1);
  expect_ok(v);
  assert_shape(v->out[0], 5, (int64_t[]){1, 2, 6, 7, 8});
  Value *g3 = tin(g, "g3", DT_F32, 4, (int64_t[]){2, 7, 8, 3});
  expect_error(op(g, OP_GridSample, 2, (Value *[]){x, g3}, 1), "3 coordinates per point, expected 2");
  expect_error(op(g, OP_GridSample, 2, (Value *[]){x, g5}, 1), "rank 5, expected 4");
  Node *pm = op(g, OP_GridSample, 2, (Value *[]){x, grid}, 1);
  set_str(pm, "padding_mode", "wrap");
  expect_error(pm, "padding_mode 'wrap'");
  Value *gi = tin(g, "gi", DT_I32, 4, (int64_t[]){2, 7, 8, 2});
  expect_error(op(g, OP_GridSample, 2, (Value *[]){x, gi}, 1), "(grid) has element type i32");
  ir_graph_free(g);
}

static void test_affine_grid(void **state) {
  (void)state;
  Graph *g = gnew(20);
  Value *th = tin(g, "th", DT_F32, 3, (int64_t[]){2, 2, 3});
  Value *sz = ints_const(g, "sz", 4, (int64_t[]){2, 3, 5, 6});
  Node *n = op(g, OP_AffineGrid, 2, (Value *[]){th, sz}, 1);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){2, 5, 6, 2});
  Value *th3 = tin(g, "th3", DT_F32, 3, (int64_t[]){2, 3, 4});
  Value *sz3 = ints_const(g, "sz3", 5, (int64_t[]){2, 1, 4, 5, 6});
  Node *m = op(g, OP_AffineGrid, 2, (Value *[]){th3, sz3}, 1);
  expect_ok(m);
  assert_shape(m->out[0], 5, (int64_t[]){2, 4, 5, 6, 3});
  Value *dyn = tin(g, "dyn", DT_I64, 1, (int64_t[]){4});
  Node *u = op(g, OP_AffineGrid, 2, (Value *[]){th, dyn}, 1);
  expect_ok(u);
  assert_int_equal(u->out[0]->shape.rank, 4);
  assert_int_equal(u->out[0]->shape.d[1], DIM_UNKNOWN);
  expect_error(op(g, OP_AffineGrid, 2, (Value *[]){th3, sz}, 1), "expected [N, 2, 3]");
  Value *bad = ints_const(g, "bad", 3, (int64_t[]){2, 3, 5});
  expect_error(op(g, OP_AffineGrid, 2, (Value *[]){th, bad}, 1), "size has 3 entries");
  ir_graph_free(g);
}

/* ---- RoiAlign, DeformConv -------------------------------------------------------- */

static void test_roialign(void **state) {
  (void)state;
  Graph *g = gnew(16);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 3, 10, 10});
  Value *rois = tin(g, "rois", DT_F32, 2, (int64_t[]){5, 4});
  Value *bi = tin(g, "bi", DT_I64, 1, (int64_t[]){5});
  Node *n = op(g, OP_RoiAlign, 3, (Value *[]){x, rois, bi}, 1);
  ir_attr_set_int(n, "output_height", 4);
  ir_attr_set_int(n, "output_width", 6);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){5, 3, 4, 6});
  Node *d = op(g, OP_RoiAlign, 3, (Value *[]){x, rois, bi}, 1);
  expect_ok(d);
  assert_shape(d->out[0], 4, (int64_t[]){5, 3, 1, 1});
  Value *bi4 = tin(g, "bi4", DT_I64, 1, (int64_t[]){4});
  expect_error(op(g, OP_RoiAlign, 3, (Value *[]){x, rois, bi4}, 1), "5 rows but batch_indices 4");
  Value *r5 = tin(g, "r5", DT_F32, 2, (int64_t[]){5, 5});
  expect_error(op(g, OP_RoiAlign, 3, (Value *[]){x, r5, bi}, 1), "5 columns, expected 4");
  Node *m = op(g, OP_RoiAlign, 3, (Value *[]){x, rois, bi}, 1);
  set_str(m, "mode", "min");
  expect_error(m, "mode 'min'");
  ir_graph_free(g);
}

static void test_deform_conv(void **state) {
  (void)state;
  Graph *g = gnew(19);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 4, 5, 5});
  Value *w = tin(g, "w", DT_F32, 4, (int64_t[]){6, 2, 3, 3});
  Value *off = tin(g, "off", DT_F32, 4, (int64_t[]){1, 36, 5, 5});
  Value *b = tin(g, "b", DT_F32, 1, (int64_t[]){6});
  Value *mask = tin(g, "mask", DT_F32, 4, (int64_t[]){1, 18, 5, 5});
  Node *n = op(g, OP_DeformConv, 5, (Value *[]){x, w, off, b, mask}, 1);
  ir_attr_set_int(n, "group", 2);
  ir_attr_set_int(n, "offset_group", 2);
  ir_attr_set_ints(n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 6, 5, 5});
  /* without padding the offsets must have the 3x3 output */
  Node *np = op(g, OP_DeformConv, 3, (Value *[]){x, w, off}, 1);
  ir_attr_set_int(np, "group", 2);
  ir_attr_set_int(np, "offset_group", 2);
  expect_error(np, "offset spatial dim 0 is 5, expected 3");
  Node *gr = op(g, OP_DeformConv, 3, (Value *[]){x, w, off}, 1);
  expect_error(gr, "X has 4 channels, expected W's 2 times group 1");
  Node *og = op(g, OP_DeformConv, 3, (Value *[]){x, w, off}, 1);
  ir_attr_set_int(og, "group", 2);
  ir_attr_set_ints(og, "pads", (int64_t[]){1, 1, 1, 1}, 4);
  expect_error(og, "offset has 36 channels, expected 18");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resize_scales),
      cmocka_unit_test(test_resize_sizes_axes_policy),
      cmocka_unit_test(test_resize_unknown),
      cmocka_unit_test(test_resize_opset10_and_upsample),
      cmocka_unit_test(test_resize_errors),
      cmocka_unit_test(test_gridsample),
      cmocka_unit_test(test_affine_grid),
      cmocka_unit_test(test_roialign),
      cmocka_unit_test(test_deform_conv),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
