/* test_infer_nn.c - unit tests of the opsf family's inference hooks
 * (passes/infer_nn.c): LayerNormalization, RMSNormalization,
 * InstanceNormalization, GroupNormalization, LpNormalization,
 * MeanVarianceNormalization, LRN, ConvTranspose, LpPool, GlobalLpPool, Gelu,
 * MaxUnpool and the Shrink/Swish elementwise rows. Shapes, symbolic dims, opset
 * differences and error paths. */
#include "test_util.h"

static void set_float(Node *n, const char *name, float v) {
  ir_attr_add(n, name, AT_FLOAT)->u.f = v;
}

static void set_str(Node *n, const char *name, const char *s) {
  Attr *a = ir_attr_add(n, name, AT_STRING);
  a->u.s = s;
  a->slen = strlen(s);
}

static void set_ints(Node *n, const char *name, int count, const int64_t *v) {
  ir_attr_set_ints(n, name, v, count);
}

/* x[N,3,4,5] with a symbolic batch dim. */
static Value *sym_x(Graph *g, DType dt) {
  Shape s = shape_make(4, (int64_t[]){DIM_UNKNOWN, 3, 4, 5});
  s.sym[0] = "N";
  return ir_input_add(g, "x", dt, &s);
}

/* ---- LayerNormalization, RMSNormalization ------------------------------------------ */

static void test_layernorm_shapes(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Value *in[3] = {sym_x(g, DT_F32), tin(g, "s", DT_F32, 2, (int64_t[]){4, 5}),
                  tin(g, "b", DT_F32, 1, (int64_t[]){5})};
  Node *n = op(g, OP_LayerNormalization, 3, in, 3);
  ir_attr_set_int(n, "axis", -2);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){DIM_UNKNOWN, 3, 4, 5});
  assert_string_equal(n->out[0]->shape.sym[0], "N");
  assert_shape(n->out[1], 4, (int64_t[]){DIM_UNKNOWN, 3, 1, 1});
  assert_shape(n->out[2], 4, (int64_t[]){DIM_UNKNOWN, 3, 1, 1});
  assert_int_equal(n->out[1]->dt, DT_F32);
  /* Mean/InvStdDev take the stash type; B is optional. */
  Value *h[2] = {tin(g, "xh", DT_F16, 2, (int64_t[]){2, 8}), tin(g, "sh", DT_F16, 1, (int64_t[]){8})};
  Node *m = op(g, OP_LayerNormalization, 2, h, 2);
  expect_ok(m);
  assert_int_equal(m->out[0]->dt, DT_F16);
  assert_int_equal(m->out[1]->dt, DT_F32);
  assert_shape(m->out[1], 2, (int64_t[]){2, 1});
  ir_graph_free(g);
}

static void test_layernorm_errors(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){2, 3, 4});
  Value *s4 = tin(g, "s4", DT_F32, 1, (int64_t[]){4}), *s3 = tin(g, "s3", DT_F32, 1, (int64_t[]){3});
  Node *n = op(g, OP_LayerNormalization, 2, (Value *[]){x, s4}, 1);
  ir_attr_set_int(n, "axis", 3);
  expect_error(n, "axis 3 is out of range");
  expect_error(op(g, OP_LayerNormalization, 2, (Value *[]){x, s3}, 1), "does not broadcast");
  Value *sd = tin(g, "sd", DT_F64, 1, (int64_t[]){4});
  expect_error(op(g, OP_LayerNormalization, 2, (Value *[]){x, sd}, 1), "expected f32 like input 0");
  Value *xi = tin(g, "xi", DT_I32, 1, (int64_t[]){4}), *si = tin(g, "si", DT_I32, 1, (int64_t[]){4});
  expect_error(op(g, OP_LayerNormalization, 2, (Value *[]){xi, si}, 1), "element type i32");
  Node *st = op(g, OP_LayerNormalization, 2, (Value *[]){x, s4}, 1);
  ir_attr_set_int(st, "stash_type", 7);
  expect_error(st, "stash_type 7");
  Value *big = tin(g, "big", DT_F32, 4, (int64_t[]){1, 2, 3, 4});
  expect_error(op(g, OP_LayerNormalization, 2, (Value *[]){x, big}, 1), "more than input 0's rank");
  ir_graph_free(g);
}

static void test_rmsnorm_types(void **state) {
  (void)state;
  Graph *g = gnew(23);
  Value *in[2] = {tin(g, "x", DT_F16, 3, (int64_t[]){2, 3, 4}), tin(g, "s", DT_F32, 1, (int64_t[]){4})};
  Node *n = op(g, OP_RMSNormalization, 2, in, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_F32);  /* Y has the scale's type */
  assert_shape(n->out[0], 3, (int64_t[]){2, 3, 4});
  Node *m = op(g, OP_RMSNormalization, 2, in, 1);
  ir_attr_set_int(m, "axis", -4);
  expect_error(m, "axis -4 is out of range");
  ir_graph_free(g);
}

/* ---- InstanceNormalization, GroupNormalization ------------------------------------- */

static void test_instancenorm(void **state) {
  (void)state;
  Graph *g = gnew(6);
  Value *x = sym_x(g, DT_F32);
  Value *s = tin(g, "s", DT_F32, 1, (int64_t[]){3}), *b = tin(g, "b", DT_F32, 1, (int64_t[]){3});
  Node *n = op(g, OP_InstanceNormalization, 3, (Value *[]){x, s, b}, 1);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){DIM_UNKNOWN, 3, 4, 5});
  Value *s4 = tin(g, "s4", DT_F32, 1, (int64_t[]){4});
  expect_error(op(g, OP_InstanceNormalization, 3, (Value *[]){x, s4, b}, 1),
               "has 4 elements, expected 3");
  Value *x2 = tin(g, "x2", DT_F32, 2, (int64_t[]){2, 3});
  expect_error(op(g, OP_InstanceNormalization, 3, (Value *[]){x2, s, b}, 1),
               "rank 2, expected at least 3");
  Value *m = tin(g, "m", DT_F32, 2, (int64_t[]){1, 3});
  expect_error(op(g, OP_InstanceNormalization, 3, (Value *[]){x, m, b}, 1), "rank 2, expected 1");
  ir_graph_free(g);
}

static void test_groupnorm_opsets(void **state) {
  (void)state;
  /* Opset 21: scale per channel; opset 18: per group. */
  Graph *g21 = gnew(21), *g18 = gnew(18);
  Value *x21 = tin(g21, "x", DT_F32, 4, (int64_t[]){2, 6, 3, 3});
  Value *c21 = tin(g21, "c", DT_F32, 1, (int64_t[]){6}), *q21 = tin(g21, "q", DT_F32, 1, (int64_t[]){3});
  Node *n = op(g21, OP_GroupNormalization, 3, (Value *[]){x21, c21, c21}, 1);
  ir_attr_set_int(n, "num_groups", 3);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){2, 6, 3, 3});
  Node *bad = op(g21, OP_GroupNormalization, 3, (Value *[]){x21, q21, q21}, 1);
  ir_attr_set_int(bad, "num_groups", 3);
  expect_error(bad, "has 3 elements, expected 6");
  Value *x18 = tin(g18, "x", DT_F32, 4, (int64_t[]){2, 6, 3, 3});
  Value *q18 = tin(g18, "q", DT_F32, 1, (int64_t[]){3});
  Node *m = op(g18, OP_GroupNormalization, 3, (Value *[]){x18, q18, q18}, 1);
  ir_attr_set_int(m, "num_groups", 3);
  expect_ok(m);
  ir_graph_free(g21);
  ir_graph_free(g18);
}

static void test_groupnorm_errors(void **state) {
  (void)state;
  Graph *g = gnew(21);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){2, 6, 3, 3}), *c = tin(g, "c", DT_F32, 1, (int64_t[]){6});
  expect_error(op(g, OP_GroupNormalization, 3, (Value *[]){x, c, c}, 1), "'num_groups'");
  Node *n = op(g, OP_GroupNormalization, 3, (Value *[]){x, c, c}, 1);
  ir_attr_set_int(n, "num_groups", 4);
  expect_error(n, "not a multiple of num_groups 4");
  n = op(g, OP_GroupNormalization, 3, (Value *[]){x, c, c}, 1);
  ir_attr_set_int(n, "num_groups", 0);
  expect_error(n, "num_groups is 0");
  ir_graph_free(g);
}

/* ---- LpNormalization, MVN, LRN ------------------------------------------------------- */

static void test_lpnorm(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *x = sym_x(g, DT_F64);
  Node *n = op(g, OP_LpNormalization, 1, &x, 1);
  ir_attr_set_int(n, "axis", 1);
  ir_attr_set_int(n, "p", 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_F64);
  assert_shape(n->out[0], 4, (int64_t[]){DIM_UNKNOWN, 3, 4, 5});
  Node *m = op(g, OP_LpNormalization, 1, &x, 1);
  ir_attr_set_int(m, "p", 3);
  expect_error(m, "p is 3, expected 1 or 2");
  ir_graph_free(g);
}

static void test_mvn(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = sym_x(g, DT_F32), *x3 = tin(g, "x3", DT_F32, 3, (int64_t[]){2, 3, 4});
  expect_ok(op(g, OP_MeanVarianceNormalization, 1, &x, 1));
  /* The default axes [0, 2, 3] need rank 4. */
  expect_error(op(g, OP_MeanVarianceNormalization, 1, &x3, 1), "axes[2] = 3 is out of range");
  Node *n = op(g, OP_MeanVarianceNormalization, 1, &x3, 1);
  set_ints(n, "axes", 2, (int64_t[]){-1, 1});
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){2, 3, 4});
  n = op(g, OP_MeanVarianceNormalization, 1, &x3, 1);
  set_ints(n, "axes", 2, (int64_t[]){2, -1});
  expect_error(n, "axis 2 twice");
  ir_graph_free(g);
}

static void test_lrn(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = sym_x(g, DT_F32), *x1 = tin(g, "x1", DT_F32, 1, (int64_t[]){3});
  Node *n = op(g, OP_LRN, 1, &x, 1);
  ir_attr_set_int(n, "size", 3);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){DIM_UNKNOWN, 3, 4, 5});
  expect_error(op(g, OP_LRN, 1, &x, 1), "'size'");
  n = op(g, OP_LRN, 1, &x1, 1);
  ir_attr_set_int(n, "size", 3);
  expect_error(n, "rank 1, expected at least 2");
  ir_graph_free(g);
}

/* ---- ConvTranspose ------------------------------------------------------------------- */

static Node *convt(Graph *g, const int64_t *xd, const int64_t *wd, int rank) {
  Value *in[2] = {tin(g, "x", DT_F32, rank, xd), tin(g, "w", DT_F32, rank, wd)};
  return op(g, OP_ConvTranspose, 2, in, 1);
}

static void test_convtranspose_shapes(void **state) {
  (void)state;
  Graph *g = gnew(22);
  /* Default: in 3 -> (3 - 1) + 3 = 5; output channels W[1] * group. */
  Node *n = convt(g, (int64_t[]){1, 2, 3, 3}, (int64_t[]){2, 2, 3, 3}, 4);
  ir_attr_set_int(n, "group", 2);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 4, 5, 5});
  /* Strides, output_padding and pads. */
  n = convt(g, (int64_t[]){1, 1, 3, 3}, (int64_t[]){1, 2, 3, 3}, 4);
  set_ints(n, "strides", 2, (int64_t[]){3, 2});
  set_ints(n, "output_padding", 2, (int64_t[]){1, 1});
  set_ints(n, "pads", 4, (int64_t[]){1, 0, 1, 0});
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 2, 8, 8});
  /* output_shape wins; SAME_* gives in * stride; dilations widen the kernel. */
  n = convt(g, (int64_t[]){1, 1, 3, 3}, (int64_t[]){1, 2, 3, 3}, 4);
  set_ints(n, "output_shape", 2, (int64_t[]){10, 8});
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 2, 10, 8});
  n = convt(g, (int64_t[]){1, 1, 3, 3}, (int64_t[]){1, 2, 3, 3}, 4);
  set_str(n, "auto_pad", "SAME_UPPER");
  set_ints(n, "strides", 2, (int64_t[]){2, 2});
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 2, 6, 6});
  n = convt(g, (int64_t[]){1, 1, 3}, (int64_t[]){1, 1, 2}, 3);
  set_ints(n, "dilations", 1, (int64_t[]){2});
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){1, 1, 5});
  ir_graph_free(g);
}

static void test_convtranspose_symbolic(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *x = sym_x(g, DT_F32), *w = tin(g, "w", DT_F32, 4, (int64_t[]){3, 2, 3, 3});
  Node *n = op(g, OP_ConvTranspose, 2, (Value *[]){x, w}, 1);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){DIM_UNKNOWN, 2, 6, 7});
  assert_string_equal(n->out[0]->shape.sym[0], "N");
  ir_graph_free(g);
}

static void test_convtranspose_errors(void **state) {
  (void)state;
  Graph *g = gnew(22);
  expect_error(convt(g, (int64_t[]){1, 2, 3, 3}, (int64_t[]){3, 2, 3, 3}, 4),
               "dim 0 is 3, expected 2");
  expect_error(convt(g, (int64_t[]){1, 2}, (int64_t[]){2, 2}, 2), "rank 2, expected at least 3");
  Node *n = convt(g, (int64_t[]){1, 3, 3, 3}, (int64_t[]){3, 2, 3, 3}, 4);
  ir_attr_set_int(n, "group", 2);
  expect_error(n, "not a multiple of group 2");
  n = convt(g, (int64_t[]){1, 1, 3, 3}, (int64_t[]){1, 2, 3, 3}, 4);
  set_ints(n, "strides", 1, (int64_t[]){2});
  expect_error(n, "'strides' has 1 values, expected 2");
  n = convt(g, (int64_t[]){1, 1, 3, 3}, (int64_t[]){1, 2, 3, 3}, 4);
  set_ints(n, "output_shape", 3, (int64_t[]){1, 2, 3});
  expect_error(n, "'output_shape' must list 2");
  n = convt(g, (int64_t[]){1, 1, 3, 3}, (int64_t[]){1, 2, 3, 3}, 4);
  set_ints(n, "pads", 4, (int64_t[]){3, 3, 3, 3});
  expect_error(n, "is not positive");
  n = convt(g, (int64_t[]){1, 1, 3, 3}, (int64_t[]){1, 2, 3, 3}, 4);
  set_str(n, "auto_pad", "SAME");
  expect_error(n, "auto_pad 'SAME'");
  Value *in[3] = {tin(g, "x", DT_F32, 4, (int64_t[]){1, 1, 3, 3}),
                  tin(g, "w", DT_F32, 4, (int64_t[]){1, 2, 3, 3}), tin(g, "b", DT_F32, 1, (int64_t[]){3})};
  expect_error(op(g, OP_ConvTranspose, 3, in, 1), "has 3 elements, expected 2");
  ir_graph_free(g);
}

/* ---- LpPool, GlobalLpPool ------------------------------------------------------------ */

static void test_lppool(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 3, 32, 32});
  Node *n = op(g, OP_LpPool, 1, &x, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){5, 5});
  set_ints(n, "strides", 2, (int64_t[]){3, 3});
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 3, 10, 10});
  n = op(g, OP_LpPool, 1, &x, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
  set_str(n, "auto_pad", "SAME_LOWER");
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 3, 32, 32});
  n = op(g, OP_LpPool, 1, &x, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){3, 3});
  set_ints(n, "strides", 2, (int64_t[]){2, 2});
  ir_attr_set_int(n, "ceil_mode", 1);  /* (32 - 3) / 2 + 1 = 15, rounded up */
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 3, 16, 16});
  /* Opset 1 spells p as a float. */
  n = op(g, OP_LpPool, 1, &x, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
  set_float(n, "p", 3.0f);
  expect_ok(n);
  ir_graph_free(g);
}

static void test_lppool_errors(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 3, 4, 4});
  expect_error(op(g, OP_LpPool, 1, &x, 1), "'kernel_shape' is required");
  Node *n = op(g, OP_LpPool, 1, &x, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){5, 5});
  expect_error(n, "smaller than the dilated kernel extent 5");
  n = op(g, OP_LpPool, 1, &x, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
  ir_attr_set_int(n, "p", 0);
  expect_error(n, "p is 0");
  n = op(g, OP_LpPool, 1, &x, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
  set_ints(n, "pads", 4, (int64_t[]){0, -1, 0, 0});
  expect_error(n, "'pads'[1] is -1");
  Value *xi = tin(g, "xi", DT_I8, 4, (int64_t[]){1, 3, 4, 4});
  expect_error(op(g, OP_GlobalLpPool, 1, &xi, 1), "element type i8");
  ir_graph_free(g);
}

static void test_global_lppool(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *x = sym_x(g, DT_F16);
  Node *n = op(g, OP_GlobalLpPool, 1, &x, 1);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){DIM_UNKNOWN, 3, 1, 1});
  assert_int_equal(n->out[0]->dt, DT_F16);
  ir_graph_free(g);
}

/* ---- Gelu, Shrink, Swish ------------------------------------------------------------- */

static void test_gelu_shrink_swish(void **state) {
  (void)state;
  Graph *g = gnew(24);
  Value *x = sym_x(g, DT_BF16), *xi = tin(g, "xi", DT_I32, 1, (int64_t[]){4});
  Node *n = op(g, OP_Gelu, 1, &x, 1);
  set_str(n, "approximate", "tanh");
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_BF16);
  n = op(g, OP_Gelu, 1, &x, 1);
  set_str(n, "approximate", "fast");
  expect_error(n, "approximate is 'fast'");
  expect_error(op(g, OP_Gelu, 1, &xi, 1), "element type i32");
  /* Shrink takes any numeric type, Swish floats only. */
  n = op(g, OP_Shrink, 1, &xi, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I32);
  expect_error(op(g, OP_Swish, 1, &xi, 1), "expected a floating-point type");
  n = op(g, OP_Swish, 1, &x, 1);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){DIM_UNKNOWN, 3, 4, 5});
  ir_graph_free(g);
}

/* ---- MaxUnpool ------------------------------------------------------------------------ */

static void test_maxunpool(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 2, 2, 3});
  Value *ix = tin(g, "i", DT_I64, 4, (int64_t[]){1, 2, 2, 3});
  Node *n = op(g, OP_MaxUnpool, 2, (Value *[]){x, ix}, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
  set_ints(n, "strides", 2, (int64_t[]){2, 2});
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 2, 4, 6});
  /* A constant output_shape may enlarge the result; a runtime one leaves it unknown. */
  Value *os = ints_const(g, "os", 4, (int64_t[]){1, 2, 5, 6});
  n = op(g, OP_MaxUnpool, 3, (Value *[]){x, ix, os}, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
  set_ints(n, "strides", 2, (int64_t[]){2, 2});
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 2, 5, 6});
  Value *dyn = tin(g, "dyn", DT_I64, 1, (int64_t[]){4});
  n = op(g, OP_MaxUnpool, 3, (Value *[]){x, ix, dyn}, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){DIM_UNKNOWN, DIM_UNKNOWN, DIM_UNKNOWN, DIM_UNKNOWN});
  ir_graph_free(g);
}

static void test_maxunpool_errors(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 2, 2, 3});
  Value *ix = tin(g, "i", DT_I64, 4, (int64_t[]){1, 2, 2, 3});
  Value *i32 = tin(g, "i32", DT_I32, 4, (int64_t[]){1, 2, 2, 3});
  Value *ibad = tin(g, "ibad", DT_I64, 4, (int64_t[]){1, 2, 3, 2});
  Node *n = op(g, OP_MaxUnpool, 2, (Value *[]){x, i32}, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
  expect_error(n, "expected i64");
  n = op(g, OP_MaxUnpool, 2, (Value *[]){x, ibad}, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
  expect_error(n, "expected X's shape");
  expect_error(op(g, OP_MaxUnpool, 2, (Value *[]){x, ix}, 1), "'kernel_shape' is required");
  Value *small = ints_const(g, "small", 4, (int64_t[]){1, 2, 2, 2});
  n = op(g, OP_MaxUnpool, 3, (Value *[]){x, ix, small}, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
  expect_error(n, "smaller than the unpooled extent");
  Value *short3 = ints_const(g, "short3", 3, (int64_t[]){1, 2, 9});
  n = op(g, OP_MaxUnpool, 3, (Value *[]){x, ix, short3}, 1);
  set_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
  expect_error(n, "has 3 values, expected 4");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layernorm_shapes),
      cmocka_unit_test(test_layernorm_errors),
      cmocka_unit_test(test_rmsnorm_types),
      cmocka_unit_test(test_instancenorm),
      cmocka_unit_test(test_groupnorm_opsets),
      cmocka_unit_test(test_groupnorm_errors),
      cmocka_unit_test(test_lpnorm),
      cmocka_unit_test(test_mvn),
      cmocka_unit_test(test_lrn),
      cmocka_unit_test(test_convtranspose_shapes),
      cmocka_unit_test(test_convtranspose_symbolic),
      cmocka_unit_test(test_convtranspose_errors),
      cmocka_unit_test(test_lppool),
      cmocka_unit_test(test_lppool_errors),
      cmocka_unit_test(test_global_lppool),
      cmocka_unit_test(test_gelu_shrink_swish),
      cmocka_unit_test(test_maxunpool),
      cmocka_unit_test(test_maxunpool_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
