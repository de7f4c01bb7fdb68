/* test_infer_loss.c - unit tests of the opsg family: the domain-aware op
 * lookup (ir_op_lookup_in, check_ops), the inference hooks of the losses and
 * optimizers (passes/infer_loss.c) and of CumProd, Det, BitCast,
 * CenterCropPad, Col2Im and TensorScatter (passes/infer_misc2.c). Shapes,
 * symbolic dims and error paths. */
#include "test_util.h"

#define TRAINING "ai.onnx.preview.training"

static void set_float(Node *n, const char *name, float v) { ir_attr_add(n, name, AT_FLOAT)->u.f = v; }

static void set_str(Node *n, const char *name, const char *s) {
  Attr *a = ir_attr_add(n, name, AT_STRING);
  a->u.s = s;
  a->slen = strlen(s);
}

/* ---- domains ------------------------------------------------------------------ */

static void test_lookup_domains(void **state) {
  (void)state;
  assert_int_equal(ir_op_lookup_in(TRAINING, "Adam"), OP_Adam);
  assert_int_equal(ir_op_lookup_in(TRAINING, "Momentum"), OP_Momentum);
  /* A training op in the default domain, and a default op elsewhere, are unknown. */
  assert_int_equal(ir_op_lookup("Adam"), OP_Unknown_);
  assert_int_equal(ir_op_lookup_in("", "Adagrad"), OP_Unknown_);
  assert_int_equal(ir_op_lookup_in("ai.onnx", "Adagrad"), OP_Unknown_);
  assert_int_equal(ir_op_lookup_in(TRAINING, "Conv"), OP_Unknown_);
  assert_int_equal(ir_op_lookup_in("ai.onnx.ml", "Conv"), OP_Unknown_);
  assert_int_equal(ir_op_lookup_in("ai.onnx.ml", "Adam"), OP_Unknown_);
  assert_int_equal(ir_op_lookup_in("com.microsoft", "Conv"), OP_Unknown_);
  assert_int_equal(ir_op_lookup_in("ai.onnx", "Conv"), OP_Conv);
  assert_int_equal(ir_op_lookup_in("", "CumProd"), OP_CumProd);
  assert_string_equal(ir_op_domain(OP_Adagrad), TRAINING);
  assert_string_equal(ir_op_domain(OP_Conv), "");
  assert_true(ir_ops[OP_Adam].flags & OPF_DOMAIN_TRAINING);
  assert_false(ir_ops[OP_NegativeLogLikelihoodLoss].flags & (OPF_DOMAIN_TRAINING | OPF_DOMAIN_ML));
  /* Nodes built through the API carry their row's domain. */
  Graph *g = gnew(17);
  Value *in[5] = {tin(g, "r", DT_F32, 0, NULL), tin(g, "t", DT_I64, 0, NULL), tin(g, "x", DT_F32, 1, (int64_t[]){2}),
                  tin(g, "g", DT_F32, 1, (int64_t[]){2}), tin(g, "h", DT_F32, 1, (int64_t[]){2})};
  Node *n = op(g, OP_Adagrad, 5, in, 2);
  assert_string_equal(n->domain, TRAINING);
  Node *c = op(g, OP_CumProd, 2, (Value *[]){in[2], in[1]}, 1);
  assert_string_equal(c->domain, "");
  ir_graph_free(g);
}

static const char *const k_domains_ir =
    "graph g opset 17\n"
    "input %r : f32[]\n"
    "input %t : i64[]\n"
    "input %x : f32[2]\n"
    "input %g : f32[2]\n"
    "input %h : f32[2]\n"
    "%x1 : f32[2], %h1 : f32[2] = ai.onnx.preview.training:Adagrad(%r, %t, %x, %g, %h)\n"
    "%x2 : f32[2], %h2 : f32[2] = Adagrad(%r, %t, %x, %g, %h)\n"
    "%y : f32[2] = ai.onnx.preview.training:Relu(%x)\n"
    "%z : f32[2] = com.example:Adagrad(%x)\n"
    "output %x1\n";

static void test_check_ops_domains(void **state) {
  (void)state;
  Diag d;
  diag_init(&d, "t.ir", NULL);
  Graph *g = ir_parse(k_domains_ir, "t.ir", &d);
  assert_non_null(g);
  Node *ok = g->first;
  assert_int_equal(ok->op, OP_Adagrad);
  /* The printer writes the domain back, so the text round-trips. */
  Buf b;
  buf_init(&b);
  ir_print(g, &b);
  assert_non_null(strstr(b.s, "ai.onnx.preview.training:Adagrad("));
  buf_free(&b);
  assert_false(pass_check_ops(g, &d));
  assert_int_equal(d.n_errors, 3);
  assert_non_null(strstr(d.msgs[0], "node 'Adagrad_1' (Adagrad): unsupported operator"));
  assert_non_null(strstr(d.msgs[1], "(Relu): unsupported operator (domain 'ai.onnx.preview.training')"));
  assert_non_null(strstr(d.msgs[2], "(Adagrad): unsupported operator (domain 'com.example')"));
  ir_graph_free(g);
  diag_free(&d);

  /* A node whose domain was changed after construction. */
  diag_init(&d, "t.ir", NULL);
  g = gnew(17);
  Value *x = tin(g, "x", DT_F32, 1, (int64_t[]){2});
  Node *n = op(g, OP_Relu, 1, &x, 1);
  n->domain = "ai.onnx.ml";
  assert_false(pass_check_ops(g, &d));
  assert_non_null(strstr(diag_last(&d), "operator of domain 'ai.onnx' used in domain 'ai.onnx.ml'"));
  ir_graph_free(g);
  diag_free(&d);
}

/* ---- losses --------------------------------------------------------------------- */

static void test_nll_shapes(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Shape xs = shape_make(4, (int64_t[]){DIM_UNKNOWN, 5, 6, 7}), ts = shape_make(3, (int64_t[]){DIM_UNKNOWN, 6, 7});
  xs.sym[0] = ts.sym[0] = "N";
  Value *x = ir_input_add(g, "x", DT_F32, &xs), *t = ir_input_add(g, "t", DT_I64, &ts);
  Value *w = tin(g, "w", DT_F32, 1, (int64_t[]){5});
  Node *n = op(g, OP_NegativeLogLikelihoodLoss, 3, (Value *[]){x, t, w}, 1);
  set_str(n, "reduction", "none");
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){DIM_UNKNOWN, 6, 7});
  assert_string_equal(n->out[0]->shape.sym[0], "N");
  Node *m = op(g, OP_NegativeLogLikelihoodLoss, 2, (Value *[]){x, t}, 1);   /* default: mean */
  expect_ok(m);
  assert_int_equal(m->out[0]->shape.rank, 0);
  assert_int_equal(m->out[0]->dt, DT_F32);
  /* Unknown target rank: the loss is the input without C. */
  Value *tu = ir_input_add(g, "tu", DT_I32, NULL);
  Node *u = op(g, OP_NegativeLogLikelihoodLoss, 2, (Value *[]){x, tu}, 1);
  set_str(u, "reduction", "none");
  expect_ok(u);
  assert_shape(u->out[0], 3, (int64_t[]){DIM_UNKNOWN, 6, 7});
  ir_graph_free(g);
}

static void test_nll_errors(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){3, 5, 2}), *t = tin(g, "t", DT_I64, 2, (int64_t[]){3, 2});
  Value *t1 = tin(g, "t1", DT_I64, 1, (int64_t[]){3}), *t2 = tin(g, "t2", DT_I64, 2, (int64_t[]){3, 4});
  Value *tf = tin(g, "tf", DT_F32, 2, (int64_t[]){3, 2}), *xi = tin(g, "xi", DT_I32, 3, (int64_t[]){3, 5, 2});
  Value *w4 = tin(g, "w4", DT_F32, 1, (int64_t[]){4}), *x1 = tin(g, "x1", DT_F32, 1, (int64_t[]){5});
  expect_error(op(g, OP_NegativeLogLikelihoodLoss, 2, (Value *[]){x, t1}, 1), "input 1 has rank 1, expected 2");
  expect_error(op(g, OP_NegativeLogLikelihoodLoss, 2, (Value *[]){x, t2}, 1), "input 1 dim 1 is 4, expected 2");
  expect_error(op(g, OP_NegativeLogLikelihoodLoss, 2, (Value *[]){x, tf}, 1), "expected int32 or int64");
  expect_error(op(g, OP_NegativeLogLikelihoodLoss, 2, (Value *[]){xi, t}, 1), "expected a floating-point type");
  expect_error(op(g, OP_NegativeLogLikelihoodLoss, 3, (Value *[]){x, t, w4}, 1), "expected C = 5");
  expect_error(op(g, OP_NegativeLogLikelihoodLoss, 2, (Value *[]){x1, t1}, 1), "has rank 1, expected at least 2");
  Node *r = op(g, OP_NegativeLogLikelihoodLoss, 2, (Value *[]){x, t}, 1);
  set_str(r, "reduction", "avg");
  expect_error(r, "attribute 'reduction' is 'avg'");
  ir_graph_free(g);
}

static void test_sce_log_prob(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F16, 2, (int64_t[]){3, 5}), *t = tin(g, "t", DT_I32, 1, (int64_t[]){3});
  Node *n = op(g, OP_SoftmaxCrossEntropyLoss, 2, (Value *[]){x, t}, 2);
  set_str(n, "reduction", "sum");
  expect_ok(n);
  assert_int_equal(n->out[0]->shape.rank, 0);
  assert_int_equal(n->out[0]->dt, DT_F16);
  assert_shape(n->out[1], 2, (int64_t[]){3, 5});
  Value *w = tin(g, "w", DT_F64, 1, (int64_t[]){5});
  expect_error(op(g, OP_SoftmaxCrossEntropyLoss, 3, (Value *[]){x, t, w}, 1), "input 2 (weight) has element type f64");
  ir_graph_free(g);
}

/* ---- optimizers ---------------------------------------------------------------- */

static void test_optimizers(void **state) {
  (void)state;
  Graph *g = gnew(1);
  Value *r = tin(g, "r", DT_F32, 0, NULL), *t = tin(g, "t", DT_I64, 0, NULL);
  Value *x1 = tin(g, "x1", DT_F32, 1, (int64_t[]){1}), *x2 = tin(g, "x2", DT_F32, 2, (int64_t[]){2, 3});
  Value *g1 = tin(g, "g1", DT_F32, 1, (int64_t[]){1}), *g2 = tin(g, "g2", DT_F32, 2, (int64_t[]){2, 3});
  Value *h1 = tin(g, "h1", DT_F32, 1, (int64_t[]){1}), *h2 = tin(g, "h2", DT_F32, 2, (int64_t[]){2, 3});
  Node *a = op(g, OP_Adagrad, 8, (Value *[]){r, t, x1, x2, g1, g2, h1, h2}, 4);
  expect_ok(a);
  assert_shape(a->out[1], 2, (int64_t[]){2, 3});
  assert_shape(a->out[2], 1, (int64_t[]){1});
  assert_shape(a->out[3], 2, (int64_t[]){2, 3});
  Node *adam = op(g, OP_Adam, 6, (Value *[]){r, t, x2, g2, h2, h2}, 3);
  expect_ok(adam);
  assert_shape(adam->out[2], 2, (int64_t[]){2, 3});
  /* Groups that do not divide, a shape mismatch, wrong scalar types. */
  expect_error(op(g, OP_Adagrad, 6, (Value *[]){r, t, x1, g1, h1, x2}, 2), "3 inputs per optimized tensor");
  expect_error(op(g, OP_Adagrad, 5, (Value *[]){r, t, x1, g2, h1}, 2), "input 3 has shape [2,3], expected [1]");
  expect_error(op(g, OP_Adagrad, 5, (Value *[]){r, t, x1, g1, h1}, 3), "has 3 outputs, expected 2");
  expect_error(op(g, OP_Adagrad, 5, (Value *[]){r, r, x1, g1, h1}, 2), "input 1 (T) has element type f32");
  expect_error(op(g, OP_Adagrad, 5, (Value *[]){x2, t, x1, g1, h1}, 2), "input 0 (R) must be a scalar");
  Node *m = op(g, OP_Momentum, 5, (Value *[]){r, t, x1, g1, h1}, 2);
  expect_error(m, "attribute 'alpha' (a float) is required");
  set_float(m, "alpha", 0.9f);
  set_float(m, "beta", 0.1f);
  set_float(m, "norm_coefficient", 0.0f);
  expect_error(m, "attribute 'mode' must be 'standard' or 'nesterov'");
  set_str(m, "mode", "nesterov");
  expect_ok(m);
  assert_shape(m->out[1], 1, (int64_t[]){1});
  ir_graph_free(g);
}

/* ---- CumProd, Det, BitCast ------------------------------------------------------- */

static void test_cumprod(void **state) {
  (void)state;
  Graph *g = gnew(26);
  Value *x = tin(g, "x", DT_F64, 2, (int64_t[]){2, 3}), *ax = num_const(g, "ax", DT_I32, 0, NULL, (double[]){-1});
  Node *n = op(g, OP_CumProd, 2, (Value *[]){x, ax}, 1);
  ir_attr_set_int(n, "reverse", 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){2, 3});
  Value *bad = num_const(g, "bad", DT_I64, 0, NULL, (double[]){2});
  expect_error(op(g, OP_CumProd, 2, (Value *[]){x, bad}, 1), "axis 2 is out of range");
  Value *b = tin(g, "b", DT_BOOL, 1, (int64_t[]){3});
  expect_error(op(g, OP_CumProd, 2, (Value *[]){b, ax}, 1), "element type bool, which CumProd does not support");
  Node *e = op(g, OP_CumProd, 2, (Value *[]){x, ax}, 1);
  ir_attr_set_int(e, "exclusive", 2);
  expect_error(e, "attribute 'exclusive' is 2, expected 0 or 1");
  ir_graph_free(g);
}

static void test_det_bitcast(void **state) {
  (void)state;
  Graph *g = gnew(26);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){4, 3, 3}), *m = tin(g, "m", DT_F32, 2, (int64_t[]){3, 3});
  Node *n = op(g, OP_Det, 1, &x, 1);
  expect_ok(n);
  assert_shape(n->out[0], 1, (int64_t[]){4});
  Node *s = op(g, OP_Det, 1, &m, 1);
  expect_ok(s);
  assert_int_equal(s->out[0]->shape.rank, 0);
  Value *r = tin(g, "r", DT_F32, 2, (int64_t[]){2, 3}), *i = tin(g, "i", DT_I32, 2, (int64_t[]){2, 2});
  expect_error(op(g, OP_Det, 1, &r, 1), "2x3 matrices, expected square ones");
  expect_error(op(g, OP_Det, 1, &i, 1), "expected a floating-point type");

  Node *c = op(g, OP_BitCast, 1, &x, 1);
  ir_attr_set_int(c, "to", DT_I32);
  expect_ok(c);
  assert_int_equal(c->out[0]->dt, DT_I32);
  assert_shape(c->out[0], 3, (int64_t[]){4, 3, 3});
  Node *w = op(g, OP_BitCast, 1, &x, 1);
  ir_attr_set_int(w, "to", DT_I64);
  expect_error(w, "cannot reinterpret f32 (32 bits) as i64 (64 bits)");
  expect_error(op(g, OP_BitCast, 1, &x, 1), "attribute 'to' (an int element type) is required");
  Node *str = op(g, OP_BitCast, 1, &x, 1);
  ir_attr_set_int(str, "to", DT_STRING);
  expect_error(str, "not a non-string element type");
  ir_graph_free(g);
}

/* ---- CenterCropPad, Col2Im, TensorScatter ------------------------------------------- */

static void test_center_crop_pad(void **state) {
  (void)state;
  Graph *g = gnew(18);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){20, 8, 3});
  Value *sh = ints_const(g, "sh", 2, (int64_t[]){10, 9});
  Node *n = op(g, OP_CenterCropPad, 2, (Value *[]){x, sh}, 1);
  ir_attr_set_ints(n, "axes", (int64_t[]){-3, -2}, 2);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){10, 9, 3});
  /* A run-time shape leaves the cropped axes unknown. */
  Value *rt = tin(g, "rt", DT_I64, 1, (int64_t[]){2});
  Node *u = op(g, OP_CenterCropPad, 2, (Value *[]){x, rt}, 1);
  ir_attr_set_ints(u, "axes", (int64_t[]){1, 2}, 2);
  expect_ok(u);
  assert_shape(u->out[0], 3, (int64_t[]){20, DIM_UNKNOWN, DIM_UNKNOWN});
  expect_error(op(g, OP_CenterCropPad, 2, (Value *[]){x, sh}, 1), "input 1 (shape) has 2 entries, expected 3");
  Node *rep = op(g, OP_CenterCropPad, 2, (Value *[]){x, sh}, 1);
  ir_attr_set_ints(rep, "axes", (int64_t[]){0, -3}, 2);
  expect_error(rep, "axis -3 is repeated");
  ir_graph_free(g);
}

static void test_col2im(void **state) {
  (void)state;
  Graph *g = gnew(18);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){1, 5, 15});
  Value *img = ints_const(g, "img", 2, (int64_t[]){5, 5}), *blk = ints_const(g, "blk", 2, (int64_t[]){1, 5});
  Node *n = op(g, OP_Col2Im, 3, (Value *[]){x, img, blk}, 1);
  ir_attr_set_ints(n, "pads", (int64_t[]){0, 1, 0, 1}, 4);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){1, 1, 5, 5});
  /* Without the pads there are 5 blocks, not 15. */
  expect_error(op(g, OP_Col2Im, 3, (Value *[]){x, img, blk}, 1), "input 0 has 15 blocks (dim 2), the image and block shapes give 5");
  Value *b3 = ints_const(g, "b3", 2, (int64_t[]){3, 3});
  expect_error(op(g, OP_Col2Im, 3, (Value *[]){x, img, b3}, 1), "not a multiple of prod(block_shape) = 9");
  Value *rimg = tin(g, "rimg", DT_I64, 1, (int64_t[]){3});
  Node *u = op(g, OP_Col2Im, 3, (Value *[]){x, rimg, tin(g, "rb", DT_I64, 1, (int64_t[]){3})}, 1);
  expect_ok(u);
  assert_shape(u->out[0], 5, (int64_t[]){1, DIM_UNKNOWN, DIM_UNKNOWN, DIM_UNKNOWN, DIM_UNKNOWN});
  ir_graph_free(g);
}

static void test_tensor_scatter(void **state) {
  (void)state;
  Graph *g = gnew(24);
  Value *p = tin(g, "p", DT_F32, 4, (int64_t[]){2, 1, 4, 5}), *u = tin(g, "u", DT_F32, 4, (int64_t[]){2, 1, 2, 5});
  Value *wi = tin(g, "wi", DT_I64, 1, (int64_t[]){2});
  Node *n = op(g, OP_TensorScatter, 3, (Value *[]){p, u, wi}, 1);
  set_str(n, "mode", "circular");
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){2, 1, 4, 5});
  Node *a0 = op(g, OP_TensorScatter, 2, (Value *[]){p, u}, 1);
  ir_attr_set_int(a0, "axis", 0);
  expect_error(a0, "it must not be 0");
  Node *big = op(g, OP_TensorScatter, 2, (Value *[]){u, p}, 1);
  expect_error(big, "the sequence may not grow");
  Node *m = op(g, OP_TensorScatter, 2, (Value *[]){p, u}, 1);
  set_str(m, "mode", "ring");
  expect_error(m, "attribute 'mode' is 'ring'");
  Value *w3 = tin(g, "w3", DT_I64, 1, (int64_t[]){3});
  expect_error(op(g, OP_TensorScatter, 3, (Value *[]){p, u, w3}, 1), "has 3 entries, the batch is 2");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lookup_domains),
      cmocka_unit_test(test_check_ops_domains),
      cmocka_unit_test(test_nll_shapes),
      cmocka_unit_test(test_nll_errors),
      cmocka_unit_test(test_sce_log_prob),
      cmocka_unit_test(test_optimizers),
      cmocka_unit_test(test_cumprod),
      cmocka_unit_test(test_det_bitcast),
      cmocka_unit_test(test_center_crop_pad),
      cmocka_unit_test(test_col2im),
      cmocka_unit_test(test_tensor_scatter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
