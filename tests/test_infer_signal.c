/* test_infer_signal.c - unit tests of the opsk family: the inference hooks of
 * passes/infer_signal.c (DFT, STFT, the windows, MelWeightMatrix) and
 * passes/infer_dynamic.c (NonZero, Unique, NonMaxSuppression: upper-bound
 * shapes and Value.dyn_dims), the require-static check on values of
 * data-dependent size, and the header ABI of a model with such an output. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "codegen.h"

static Value *i64_scalar(Graph *g, const char *name, int64_t v) {
  Tensor *t = ir_tensor_new(g, DT_I64, &(Shape){0}, NULL);
  tensor_set_i64(t, 0, v);
  return ir_const_new(g, name, t);
}

/* ---- DFT ------------------------------------------------------------------------- */

static void test_dft_opset19_shapes(void **state) {
  (void)state;
  Graph *g = gnew(19);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 10, 10, 1});
  Node *n = op(g, OP_DFT, 1, &x, 1);
  ir_attr_set_int(n, "axis", 1);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 10, 10, 2});
  assert_int_equal(ir_attr_int(n, "onnxc.n", 0), 10);
  /* onesided forward keeps n/2+1 bins; a longer dft_length pads. */
  Value *in2[2] = {x, i64_scalar(g, "n16", 16)};
  Node *r = op(g, OP_DFT, 2, in2, 1);
  ir_attr_set_int(r, "axis", 2);
  ir_attr_set_int(r, "onesided", 1);
  expect_ok(r);
  assert_shape(r->out[0], 4, (int64_t[]){1, 10, 9, 2});
  assert_int_equal(ir_attr_int(r, "onnxc.axis", 0), 2);
  assert_int_equal(n->out[0]->dyn_dims, 0);
  ir_graph_free(g);
}

static void test_dft_opset20_axis_input_and_irfft(void **state) {
  (void)state;
  Graph *g = gnew(20);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){1, 6, 10, 2});
  Value *in[3] = {x, g->none, i64_scalar(g, "ax", 1)};
  Node *n = op(g, OP_DFT, 3, in, 1);
  ir_attr_set_int(n, "inverse", 1);
  ir_attr_set_int(n, "onesided", 1);
  expect_ok(n);
  /* irfft: default length 2 * (6 - 1), real output. */
  assert_shape(n->out[0], 4, (int64_t[]){1, 10, 10, 1});
  /* Without the axis input, opset 20 transforms dim -2. */
  Node *m = op(g, OP_DFT, 1, &x, 1);
  expect_ok(m);
  assert_int_equal(ir_attr_int(m, "onnxc.axis", 0), 2);
  assert_shape(m->out[0], 4, (int64_t[]){1, 6, 10, 2});
  ir_graph_free(g);
}

static void test_dft_errors(void **state) {
  (void)state;
  Graph *g = gnew(20);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){2, 8, 3});
  expect_error(op(g, OP_DFT, 1, &x, 1), "last dim of 3");
  Value *xr = tin(g, "xr", DT_F32, 3, (int64_t[]){2, 8, 1});
  Value *ax = tin(g, "ax", DT_I64, 0, NULL);
  expect_error(op(g, OP_DFT, 3, (Value *[]){xr, g->none, ax}, 1), "must be a constant");
  expect_error(op(g, OP_DFT, 3, (Value *[]){xr, g->none, i64_scalar(g, "a2", 2)}, 1),
               "out of range");
  Node *a = op(g, OP_DFT, 1, &xr, 1);
  ir_attr_set_int(a, "axis", 1);
  expect_error(a, "is an input from opset 20");
  Node *z = op(g, OP_DFT, 2, (Value *[]){xr, i64_scalar(g, "z", 0)}, 1);
  expect_error(z, "at least 1");
  Node *ir = op(g, OP_DFT, 1, &xr, 1);
  ir_attr_set_int(ir, "inverse", 1);
  ir_attr_set_int(ir, "onesided", 1);
  expect_error(ir, "needs a complex input");
  Value *xi = tin(g, "xi", DT_I32, 3, (int64_t[]){2, 8, 1});
  expect_error(op(g, OP_DFT, 1, &xi, 1), "element type i32");
  ir_graph_free(g);
}

/* ---- STFT, windows, MelWeightMatrix ---------------------------------------------- */

static void test_stft_shapes_and_errors(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){1, 128, 1});
  Value *w = tin(g, "w", DT_F32, 1, (int64_t[]){16});
  Node *n = op(g, OP_STFT, 3, (Value *[]){x, i64_scalar(g, "s", 8), w}, 1);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 15, 9, 2});
  Node *m = op(g, OP_STFT, 4, (Value *[]){x, i64_scalar(g, "s2", 8), g->none, i64_scalar(g, "l", 16)}, 1);
  ir_attr_set_int(m, "onesided", 0);
  expect_ok(m);
  assert_shape(m->out[0], 4, (int64_t[]){1, 15, 16, 2});
  assert_int_equal(ir_attr_int(m, "onnxc.n", 0), 16);
  expect_error(op(g, OP_STFT, 3, (Value *[]){x, i64_scalar(g, "s0", 0), w}, 1), "frame_step is 0");
  expect_error(op(g, OP_STFT, 4, (Value *[]){x, i64_scalar(g, "s3", 8), w, i64_scalar(g, "l2", 8)}, 1),
               "differs from the window");
  expect_error(op(g, OP_STFT, 4, (Value *[]){x, i64_scalar(g, "s4", 8), g->none, i64_scalar(g, "l3", 200)}, 1),
               "exceeds the signal length");
  Value *x2 = tin(g, "x2", DT_F32, 2, (int64_t[]){1, 128});
  expect_error(op(g, OP_STFT, 2, (Value *[]){x2, i64_scalar(g, "s5", 8)}, 1), "rank 2");
  ir_graph_free(g);
}

static void test_windows_and_mel(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Value *sz = num_const(g, "sz", DT_I32, 0, NULL, (double[]){10});
  Node *h = op(g, OP_HannWindow, 1, &sz, 1);
  expect_ok(h);
  assert_shape(h->out[0], 1, (int64_t[]){10});
  assert_int_equal(h->out[0]->dt, DT_F32);
  Node *b = op(g, OP_BlackmanWindow, 1, &sz, 1);
  ir_attr_set_int(b, "output_datatype", DT_F64);
  expect_ok(b);
  assert_int_equal(b->out[0]->dt, DT_F64);
  Node *bad = op(g, OP_HammingWindow, 1, &sz, 1);
  ir_attr_set_int(bad, "output_datatype", DT_STRING);
  expect_error(bad, "output_datatype 8");
  Value *dyn = tin(g, "dyn", DT_I32, 0, NULL);
  expect_error(op(g, OP_HammingWindow, 1, &dyn, 1), "must be a constant");
  Value *in[5] = {num_const(g, "m", DT_I32, 0, NULL, (double[]){8}),
                  num_const(g, "d", DT_I32, 0, NULL, (double[]){16}), tin(g, "sr", DT_I32, 0, NULL),
                  tin(g, "lo", DT_F32, 0, NULL), tin(g, "hi", DT_F32, 0, NULL)};
  Node *mel = op(g, OP_MelWeightMatrix, 5, in, 1);
  expect_ok(mel);
  assert_shape(mel->out[0], 2, (int64_t[]){9, 8});
  in[3] = tin(g, "loi", DT_I32, 0, NULL);
  expect_error(op(g, OP_MelWeightMatrix, 5, in, 1), "lower_edge_hertz");
  ir_graph_free(g);
}

/* ---- data-dependent shapes ------------------------------------------------------- */

static void test_nonzero_bound(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_BOOL, 3, (int64_t[]){2, 3, 4});
  Node *n = op(g, OP_NonZero, 1, &x, 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){3, 24});
  assert_int_equal(n->out[0]->dt, DT_I64);
  assert_int_equal(n->out[0]->dyn_dims, 2u);
  ir_graph_free(g);
}

static void test_unique_bounds(void **state) {
  (void)state;
  Graph *g = gnew(11);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){2, 4, 2});
  Node *n = op(g, OP_Unique, 1, &x, 4);
  ir_attr_set_int(n, "axis", -2);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){2, 4, 2});
  assert_int_equal(n->out[0]->dyn_dims, 2u);
  for (int i = 1; i < 4; i++)
    assert_shape(n->out[i], 1, (int64_t[]){4});
  assert_int_equal(n->out[1]->dyn_dims, 1u);
  assert_int_equal(n->out[2]->dyn_dims, 0u); /* inverse_indices: one per slice */
  assert_int_equal(n->out[3]->dyn_dims, 1u);
  Node *f = op(g, OP_Unique, 1, &x, 1);
  expect_ok(f);
  assert_shape(f->out[0], 1, (int64_t[]){16});
  assert_int_equal(ir_attr_int(f, "onnxc.axis", 0), -1);
  Node *bad = op(g, OP_Unique, 1, &x, 1);
  ir_attr_set_int(bad, "axis", 3);
  expect_error(bad, "out of range");
  Node *s = op(g, OP_Unique, 1, &x, 1);
  ir_attr_set_int(s, "sorted", 2);
  expect_error(s, "'sorted' is 2");
  ir_graph_free(g);
}

static void test_nms_bounds(void **state) {
  (void)state;
  Graph *g = gnew(11);
  Value *b = tin(g, "b", DT_F32, 3, (int64_t[]){2, 6, 4});
  Value *s = tin(g, "s", DT_F32, 3, (int64_t[]){2, 3, 6});
  Value *mx = tin(g, "mx", DT_I64, 1, (int64_t[]){1});
  Node *n = op(g, OP_NonMaxSuppression, 3, (Value *[]){b, s, mx}, 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){36, 3});  /* max not constant: every box */
  assert_int_equal(n->out[0]->dyn_dims, 1u);
  Node *c = op(g, OP_NonMaxSuppression, 3, (Value *[]){b, s, ints_const(g, "two", 1, (int64_t[]){2})}, 1);
  expect_ok(c);
  assert_shape(c->out[0], 2, (int64_t[]){12, 3});
  Node *none = op(g, OP_NonMaxSuppression, 2, (Value *[]){b, s}, 1);
  expect_ok(none);
  assert_shape(none->out[0], 2, (int64_t[]){0, 3});
  Value *s5 = tin(g, "s5", DT_F32, 3, (int64_t[]){2, 3, 5});
  expect_error(op(g, OP_NonMaxSuppression, 2, (Value *[]){b, s5}, 1), "boxes hold 6 boxes but scores 5");
  Value *b3 = tin(g, "b3", DT_F32, 3, (int64_t[]){2, 6, 3});
  expect_error(op(g, OP_NonMaxSuppression, 2, (Value *[]){b3, s}, 1), "[batches, boxes, 4]");
  Node *cp = op(g, OP_NonMaxSuppression, 2, (Value *[]){b, s}, 1);
  ir_attr_set_int(cp, "center_point_box", 2);
  expect_error(cp, "center_point_box");
  ir_graph_free(g);
}

/* A value of data-dependent size read by another node is rejected by name. */
/* A data-dependent extent read by another node flows onward as a symbol
 * (docs/dynamic-shapes.md): an Identity gives Neg a [1, len] input, bounded
 * by NonZero's upper bound, and Neg's output (a graph output) reports it. */
static void test_consumed_dynamic_flows_onward(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 1, (int64_t[]){5});
  Node *nz = ir_node_new(g, OP_NonZero, NULL, "nz", 1, &x, 1);
  Node *neg = ir_node_new(g, OP_Neg, NULL, "neg", 1, nz->out, 1);
  ir_output_add(g, neg->out[0]);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_true(pass_infer(g, &d));
  assert_true(pass_require_static(g, &d));
  assert_int_equal(g->n_syms, 1);
  assert_true(g->syms[0].den < 0);
  assert_int_equal(g->syms[0].lo, 0);
  assert_int_equal(g->syms[0].hi, 5);
  assert_int_equal(g->syms[0].src_value, nz->out[0]->id);
  assert_int_equal(nz->out[0]->n_uses, 1);
  assert_int_equal(nz->out[0]->uses[0]->op, OP_Identity);
  const Shape *s = &neg->out[0]->shape;
  assert_int_equal(s->d[0], 1);
  assert_true(s->d[1] < 0 && s->x[1] != NULL);
  assert_int_equal(value_dyn_mask(neg->out[0]), 1u << 1);
  /* inference again (passes may re-run it) adds no second Identity */
  assert_true(pass_infer(g, &d));
  assert_int_equal(g->n_syms, 1);
  assert_true(neg->out[0]->shape.d[1] < 0 && neg->out[0]->shape.x[1] != NULL);
  diag_free(&d);
  ir_graph_free(g);
}

/* The header of a model with a dynamic output: capacity, flags, dims parameter. */
static void test_header_abi_dynamic_output(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){2, 3});
  Node *nz = ir_node_new(g, OP_NonZero, NULL, "nz", 1, &x, 1);
  ir_output_add(g, nz->out[0]);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  Target t;
  codegen_target(&t, "c", 1);
  PipelineOpts po = {.opt_level = 1, .verify = true, .target = &t};
  Plan plan;
  assert_true(passes_run(g, &po, &plan, &d));
  char dir[] = "/tmp/opsk_testXXXXXX";
  assert_non_null(mkdtemp(dir));
  CodegenOpts co = {.name = "m", .model_path = "t.onnx", .weights = WEIGHTS_C, .weights_section = NULL, .threads = 1};
  assert_true(codegen_c(g, &plan, &co, dir, &d));
  char path[256];
  snprintf(path, sizeof path, "%s/m.h", dir);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char text[8192];
  size_t len = fread(text, 1, sizeof text - 1, f);
  text[len] = 0;
  fclose(f);
  assert_non_null(strstr(text, "#define M_OUTPUT0_NUMEL 12\n"));
  assert_non_null(strstr(text, "#define M_OUTPUT0_DYNAMIC 1\n"));
  assert_non_null(strstr(text, "#define M_OUTPUT0_RANK 2\n"));
  assert_non_null(strstr(text, "const float *in_x, int64_t *out_nz, int64_t *out_nz_dims);"));
  snprintf(path, sizeof path, "%s/m.c", dir);
  f = fopen(path, "rb");
  assert_non_null(f);
  len = fread(text, 1, sizeof text - 1, f);
  text[len] = 0;
  fclose(f);
  /* run_v: the dims array follows the outputs. */
  assert_non_null(strstr(text, "(int64_t *)outputs[0], (int64_t *)outputs[1]);"));
  const char *files[] = {"m.h", "m.c", "m_weights.h", "m_weights.c", "onnxc_rt.h"};
  for (int i = 0; i < 5; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
  diag_free(&d);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dft_opset19_shapes),
      cmocka_unit_test(test_dft_opset20_axis_input_and_irfft),
      cmocka_unit_test(test_dft_errors),
      cmocka_unit_test(test_stft_shapes_and_errors),
      cmocka_unit_test(test_windows_and_mel),
      cmocka_unit_test(test_nonzero_bound),
      cmocka_unit_test(test_unique_bounds),
      cmocka_unit_test(test_nms_bounds),
      cmocka_unit_test(test_consumed_dynamic_flows_onward),
      cmocka_unit_test(test_header_abi_dynamic_output),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
