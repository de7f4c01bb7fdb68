/* test_infer_conv.c - unit tests of Conv and pooling shape inference
 * (passes/infer_conv.c): output extents for every padding mode, symbolic
 * dims, and the error paths for bad ranks, channels and attributes. */
#include "test_util.h"

/* ---- tiny graph builders ---------------------------------------------------- */

static void set_ints(Node *n, const char *name, int count, const int64_t *v) {
  ir_attr_set_ints(n, name, v, count);
}

static void set_str(Node *n, const char *name, const char *s) {
  Attr *a = ir_attr_add(n, name, AT_STRING);
  a->u.s = s;
  a->slen = strlen(s);
}

/* Conv of x[1,3,7,5] by w[2,3,3,3]. */
static Node *conv_graph(Graph *g, int64_t c_in, int64_t w_cin) {
  Value *in[3] = {tin(g, "x", DT_F32, 4, (int64_t[]){1, c_in, 7, 5}),
                  tin(g, "w", DT_F32, 4, (int64_t[]){2, w_cin, 3, 3}), NULL};
  return op(g, OP_Conv, 3, in, 1);
}

/* ---- Conv ------------------------------------------------------------------- */

static void test_conv_explicit_pads_and_strides(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Node *n = conv_graph(g, 3, 3);
  set_ints(n, "strides", 2, (int64_t[]){2, 2});
  set_ints(n, "pads", 4, (int64_t[]){1, 0, 1, 0});
  expect_ok(n);
  /* H: (7 + 2 - 3) / 2 + 1 = 4, W: (5 - 3) / 2 + 1 = 2 */
  assert_shape(n->out[0], 4, (int64_t[]){1, 2, 4, 2});
  assert_int_equal(n->out[0]->dt, DT_F32);
  ir_graph_free(g);
}

static void test_conv_auto_pad_modes(void **state) {
  (void)state;
  const char *modes[3] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
  const int64_t want[3][2] = {{4, 3}, {4, 3}, {3, 2}};
  for (int i = 0; i < 3; i++) {
    Graph *g = gnew(13);
    Node *n = conv_graph(g, 3, 3);
    set_str(n, "auto_pad", modes[i]);
    set_ints(n, "strides", 2, (int64_t[]){2, 2});
    expect_ok(n);
    assert_shape(n->out[0], 4, (int64_t[]){1, 2, want[i][0], want[i][1]});
    ir_graph_free(g);
  }
}

static void test_conv_dilation_group_and_symbolic_batch(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Shape xs = shape_make(4, (int64_t[]){DIM_UNKNOWN, 4, 9, 9});
  xs.sym[0] = "N";
  Value *in[3] = {ir_input_add(g, "x", DT_F16, &xs),
                  tin(g, "w", DT_F16, 4, (int64_t[]){6, 2, 3, 3}),
                  tin(g, "b", DT_F16, 1, (int64_t[]){6})};
  Node *n = op(g, OP_Conv, 3, in, 1);
  ir_attr_set_int(n, "group", 2);
  set_ints(n, "dilations", 2, (int64_t[]){2, 3});
  expect_ok(n);
  /* dilated kernels 5 and 7: 9 - 5 + 1 = 5, 9 - 7 + 1 = 3 */
  assert_shape(n->out[0], 4, (int64_t[]){DIM_UNKNOWN, 6, 5, 3});
  assert_string_equal(n->out[0]->shape.sym[0], "N");
  ir_graph_free(g);
}

static void test_conv_symbolic_extent_through_same_size_window(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Shape xs = shape_make(4, (int64_t[]){1, 3, DIM_UNKNOWN, DIM_UNKNOWN});
  xs.sym[2] = "H";
  xs.sym[3] = "W";
  Value *in[2] = {ir_input_add(g, "x", DT_F32, &xs),
                  tin(g, "w", DT_F32, 4, (int64_t[]){2, 3, 3, 3})};
  Node *n = op(g, OP_Conv, 2, in, 1);
  set_ints(n, "pads", 4, (int64_t[]){1, 0, 1, 0});  /* H keeps its extent, W shrinks */
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 2, DIM_UNKNOWN, DIM_UNKNOWN});
  assert_string_equal(n->out[0]->shape.sym[2], "H");
  assert_null(n->out[0]->shape.sym[3]);
  ir_graph_free(g);
}

static void test_conv_1d_and_3d(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *a[2] = {tin(g, "x", DT_F32, 3, (int64_t[]){2, 3, 10}),
                 tin(g, "w", DT_F32, 3, (int64_t[]){4, 3, 4})};
  Node *c1 = op(g, OP_Conv, 2, a, 1);
  set_ints(c1, "strides", 1, (int64_t[]){3});
  expect_ok(c1);
  assert_shape(c1->out[0], 3, (int64_t[]){2, 4, 3});
  Value *b[2] = {tin(g, "x3", DT_F64, 5, (int64_t[]){1, 1, 4, 5, 6}),
                 tin(g, "w3", DT_F64, 5, (int64_t[]){2, 1, 2, 2, 2})};
  Node *c3 = op(g, OP_Conv, 2, b, 1);
  set_ints(c3, "kernel_shape", 3, (int64_t[]){2, 2, 2});
  expect_ok(c3);
  assert_shape(c3->out[0], 5, (int64_t[]){1, 2, 3, 4, 5});
  ir_graph_free(g);
}

static void test_conv_errors(void **state) {
  (void)state;
  Graph *g = gnew(13);
  expect_error(conv_graph(g, 4, 3), "input 0 has 4 channels");
  Node *n = conv_graph(g, 3, 3);
  set_str(n, "auto_pad", "SAME");
  expect_error(n, "auto_pad 'SAME'");
  n = conv_graph(g, 3, 3);
  set_ints(n, "kernel_shape", 2, (int64_t[]){3, 2});
  expect_error(n, "kernel_shape[1] is 2");
  n = conv_graph(g, 3, 3);
  set_ints(n, "strides", 1, (int64_t[]){1});
  expect_error(n, "'strides' has 1 values, expected 2");
  n = conv_graph(g, 3, 3);
  set_ints(n, "pads", 4, (int64_t[]){0, -1, 0, 0});
  expect_error(n, "'pads'[1] is -1");
  Value *bad[2] = {tin(g, "x5", DT_F32, 4, (int64_t[]){1, 3, 2, 2}),
                   tin(g, "w5", DT_F32, 3, (int64_t[]){2, 3, 3})};
  expect_error(op(g, OP_Conv, 2, bad, 1), "rank 3, expected 4");
  Value *small[2] = {tin(g, "x6", DT_F32, 4, (int64_t[]){1, 3, 2, 2}),
                     tin(g, "w6", DT_F32, 4, (int64_t[]){2, 3, 3, 3})};
  expect_error(op(g, OP_Conv, 2, small, 1), "smaller than the dilated kernel");
  Value *ints[2] = {tin(g, "x7", DT_I32, 4, (int64_t[]){1, 3, 4, 4}),
                    tin(g, "w7", DT_I32, 4, (int64_t[]){2, 3, 3, 3})};
  expect_error(op(g, OP_Conv, 2, ints, 1), "element type i32");
  Value *bias[3] = {tin(g, "x8", DT_F32, 4, (int64_t[]){1, 3, 4, 4}),
                    tin(g, "w8", DT_F32, 4, (int64_t[]){2, 3, 3, 3}),
                    tin(g, "b8", DT_F32, 1, (int64_t[]){3})};
  expect_error(op(g, OP_Conv, 3, bias, 1), "bias) has 3 elements, expected 2");
  ir_graph_free(g);
}

/* ---- pools --------------------------------------------------------------------- */

static Node *pool_graph(Graph *g, OpKind k, DType dt, int n_out, const int64_t *kernel) {
  Value *x = tin(g, "x", dt, 4, (int64_t[]){1, 2, 8, 10});
  Node *n = op(g, k, 1, &x, n_out);
  if (kernel)
    set_ints(n, "kernel_shape", 2, kernel);
  return n;
}

static void test_maxpool_ceil_mode_drops_window_in_padding(void **state) {
  (void)state;
  Graph *g = gnew(12);
  Node *n = pool_graph(g, OP_MaxPool, DT_F32, 2, (int64_t[]){2, 2});
  set_ints(n, "strides", 2, (int64_t[]){3, 3});
  set_ints(n, "pads", 4, (int64_t[]){1, 0, 1, 1});
  ir_attr_set_int(n, "ceil_mode", 1);
  expect_ok(n);
  /* H: ceil((8+2-2)/3)+1 = 4, but window 3 would start at 9 >= 8+1: 3.
   * W: ceil((10+1-2)/3)+1 = 4, window 3 starts at 9 < 10: kept. */
  assert_shape(n->out[0], 4, (int64_t[]){1, 2, 3, 4});
  assert_int_equal(n->out[1]->dt, DT_I64);
  assert_shape(n->out[1], 4, (int64_t[]){1, 2, 3, 4});
  ir_graph_free(g);
}

static void test_pool_same_and_dilations(void **state) {
  (void)state;
  Graph *g = gnew(19);
  Node *n = pool_graph(g, OP_AveragePool, DT_F64, 1, (int64_t[]){3, 3});
  set_str(n, "auto_pad", "SAME_LOWER");
  set_ints(n, "strides", 2, (int64_t[]){3, 4});
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 2, 3, 3});
  Node *m = pool_graph(g, OP_MaxPool, DT_U8, 1, (int64_t[]){2, 3});
  set_ints(m, "dilations", 2, (int64_t[]){3, 2});
  expect_ok(m);
  assert_shape(m->out[0], 4, (int64_t[]){1, 2, 5, 6});
  ir_graph_free(g);
}

static void test_pool_errors(void **state) {
  (void)state;
  Graph *g = gnew(19);
  expect_error(pool_graph(g, OP_MaxPool, DT_F32, 1, NULL), "'kernel_shape' is required");
  expect_error(pool_graph(g, OP_AveragePool, DT_I8, 1, (int64_t[]){2, 2}), "element type i8");
  Node *n = pool_graph(g, OP_MaxPool, DT_F32, 1, (int64_t[]){2, 2});
  ir_attr_set_int(n, "storage_order", 2);
  expect_error(n, "storage_order is 2");
  n = pool_graph(g, OP_AveragePool, DT_F32, 1, (int64_t[]){2, 2});
  ir_attr_set_int(n, "ceil_mode", 3);
  expect_error(n, "ceil_mode is 3");
  n = pool_graph(g, OP_AveragePool, DT_F32, 1, (int64_t[]){2, 2});
  set_str(n, "auto_pad", "VALID");
  set_ints(n, "pads", 4, (int64_t[]){1, 1, 1, 1});
  expect_error(n, "cannot be used with auto_pad");
  Value *x2 = tin(g, "x2", DT_F32, 2, (int64_t[]){1, 2});
  Node *p2 = op(g, OP_MaxPool, 1, &x2, 1);
  set_ints(p2, "kernel_shape", 1, (int64_t[]){1});
  expect_error(p2, "rank 2, expected at least 3");
  ir_graph_free(g);
}

static void test_global_pools(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Shape xs = shape_make(5, (int64_t[]){DIM_UNKNOWN, 3, 4, DIM_UNKNOWN, 6});
  xs.sym[0] = "N";
  xs.sym[3] = "H";
  Value *x = ir_input_add(g, "x", DT_F32, &xs);
  Node *a = op(g, OP_GlobalAveragePool, 1, &x, 1);
  Node *m = op(g, OP_GlobalMaxPool, 1, &x, 1);
  expect_ok(a);
  expect_ok(m);
  assert_shape(a->out[0], 5, (int64_t[]){DIM_UNKNOWN, 3, 1, 1, 1});
  assert_string_equal(a->out[0]->shape.sym[0], "N");
  assert_null(m->out[0]->shape.sym[3]);
  Value *xi = tin(g, "xi", DT_I32, 3, (int64_t[]){1, 2, 3});
  expect_error(op(g, OP_GlobalMaxPool, 1, &xi, 1), "element type i32");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_explicit_pads_and_strides),
      cmocka_unit_test(test_conv_auto_pad_modes),
      cmocka_unit_test(test_conv_dilation_group_and_symbolic_batch),
      cmocka_unit_test(test_conv_symbolic_extent_through_same_size_window),
      cmocka_unit_test(test_conv_1d_and_3d),
      cmocka_unit_test(test_conv_errors),
      cmocka_unit_test(test_maxpool_ceil_mode_drops_window_in_padding),
      cmocka_unit_test(test_pool_same_and_dilations),
      cmocka_unit_test(test_pool_errors),
      cmocka_unit_test(test_global_pools),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
