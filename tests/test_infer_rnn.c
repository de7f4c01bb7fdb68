/* test_infer_rnn.c - unit tests of the opsj recurrent hooks (passes/infer_rnn.c):
 * RNN, GRU and LSTM output shapes for both layouts and directions, optional
 * outputs, symbolic dims, the scratch size, and error paths. */
#include "test_util.h"
#include "codegen.h"

static void set_str(Node *n, const char *name, const char *s) {
  Attr *a = ir_attr_add(n, name, AT_STRING);
  a->u.s = s;
  a->slen = strlen(s);
}

static void set_strs(Node *n, const char *name, int count, const char **v) {
  Attr *a = ir_attr_add(n, name, AT_STRINGS);
  a->n = count;
  a->u.ss = v;
}

static void test_lstm_shapes(void **state) {
  (void)state;
  Graph *g = gnew(22);
  /* X [S=5, B=N, I=3], bidirectional, H = 4. */
  Shape xs = shape_make(3, (int64_t[]){5, DIM_UNKNOWN, 3});
  xs.sym[1] = "N";
  Value *x = ir_input_add(g, "x", DT_F32, &xs);
  Value *w = tin(g, "w", DT_F32, 3, (int64_t[]){2, 16, 3}), *r = tin(g, "r", DT_F32, 3, (int64_t[]){2, 16, 4});
  Value *b = tin(g, "b", DT_F32, 2, (int64_t[]){2, 32}), *p = tin(g, "p", DT_F32, 2, (int64_t[]){2, 12});
  Node *n = op(g, OP_LSTM, 8, (Value *[]){x, w, r, b, g->none, g->none, g->none, p}, 3);
  set_str(n, "direction", "bidirectional");
  ir_attr_set_int(n, "hidden_size", 4);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){5, 2, DIM_UNKNOWN, 4});
  assert_string_equal(n->out[0]->shape.sym[2], "N");
  assert_shape(n->out[1], 3, (int64_t[]){2, DIM_UNKNOWN, 4});
  assert_shape(n->out[2], 3, (int64_t[]){2, DIM_UNKNOWN, 4});
  /* per direction (two: they may run side by side): H, C, four gate rows and
   * a temporary row of floats */
  assert_int_equal(rnn_scratch_bytes(n), 2 * (4 + 3) * 4 * 4);
  ir_graph_free(g);
}

static void test_gru_layout1(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *x = tin(g, "x", DT_F64, 3, (int64_t[]){3, 7, 2});  /* [B, S, I] */
  Value *w = tin(g, "w", DT_F64, 3, (int64_t[]){1, 15, 2}), *r = tin(g, "r", DT_F64, 3, (int64_t[]){1, 15, 5});
  Value *h0 = tin(g, "h0", DT_F64, 3, (int64_t[]){3, 1, 5});
  Node *n = op(g, OP_GRU, 6, (Value *[]){x, w, r, g->none, g->none, h0}, 2);
  ir_attr_set_int(n, "layout", 1);
  expect_ok(n);  /* hidden_size taken from W */
  assert_shape(n->out[0], 4, (int64_t[]){3, 7, 1, 5});
  assert_shape(n->out[1], 3, (int64_t[]){3, 1, 5});
  assert_int_equal(n->out[0]->dt, DT_F64);
  assert_int_equal(rnn_scratch_bytes(n), (3 + 3) * 5 * 8);
  /* Before opset 14 layout is not read: the initial state is then [D,B,H]. */
  Graph *old = gnew(7);
  Value *xo = tin(old, "x", DT_F32, 3, (int64_t[]){3, 7, 2});
  Value *wo = tin(old, "w", DT_F32, 3, (int64_t[]){1, 15, 2}), *ro = tin(old, "r", DT_F32, 3, (int64_t[]){1, 15, 5});
  Node *m = op(old, OP_GRU, 3, (Value *[]){xo, wo, ro}, 2);
  ir_attr_set_int(m, "layout", 1);
  expect_ok(m);
  assert_shape(m->out[0], 4, (int64_t[]){3, 1, 7, 5});
  ir_graph_free(old);
  ir_graph_free(g);
}

static void test_rnn_activations(void **state) {
  (void)state;
  Graph *g = gnew(14);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){2, 3, 4});
  Value *w = tin(g, "w", DT_F32, 3, (int64_t[]){2, 5, 4}), *r = tin(g, "r", DT_F32, 3, (int64_t[]){2, 5, 5});
  static const char *two[] = {"Relu", "affine"}, *one[] = {"Tanh"}, *bad[] = {"Tanh", "Swish"};
  Node *n = op(g, OP_RNN, 3, (Value *[]){x, w, r}, 2);
  set_str(n, "direction", "bidirectional");
  set_strs(n, "activations", 2, two);
  expect_ok(n);
  assert_shape(n->out[1], 3, (int64_t[]){2, 3, 5});
  n = op(g, OP_RNN, 3, (Value *[]){x, w, r}, 2);
  set_str(n, "direction", "bidirectional");
  set_strs(n, "activations", 1, one);
  expect_error(n, "has 1 entries, expected 2");
  n = op(g, OP_RNN, 3, (Value *[]){x, w, r}, 2);
  set_str(n, "direction", "bidirectional");
  set_strs(n, "activations", 2, bad);
  expect_error(n, "activation 'Swish' is not supported");
  ir_graph_free(g);
}

static void test_recurrent_errors(void **state) {
  (void)state;
  Graph *g = gnew(22);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){2, 3, 4});
  Value *w = tin(g, "w", DT_F32, 3, (int64_t[]){1, 12, 4}), *r = tin(g, "r", DT_F32, 3, (int64_t[]){1, 12, 3});
  Node *n = op(g, OP_LSTM, 3, (Value *[]){x, w, r}, 2);
  set_str(n, "direction", "sideways");
  expect_error(n, "direction 'sideways'");
  n = op(g, OP_LSTM, 3, (Value *[]){x, w, r}, 2);
  set_str(n, "direction", "bidirectional");
  expect_error(n, "input 1 (W) dim 0 is 1, expected 2");
  n = op(g, OP_LSTM, 3, (Value *[]){x, w, r}, 2);
  ir_attr_set_int(n, "hidden_size", 4);
  expect_error(n, "input 1 (W) dim 1 is 12, expected 16");
  n = op(g, OP_LSTM, 5, (Value *[]){x, w, r, g->none, tin(g, "sl", DT_I64, 1, (int64_t[]){3})}, 2);
  expect_error(n, "input 4 has element type i64, expected i32");
  n = op(g, OP_LSTM, 6, (Value *[]){x, w, r, g->none, g->none, tin(g, "h0", DT_F32, 3, (int64_t[]){1, 2, 3})}, 2);
  expect_error(n, "input 5 (initial_h) dim 1 is 2, expected 3");
  n = op(g, OP_LSTM, 3, (Value *[]){tin(g, "xi", DT_I32, 3, (int64_t[]){2, 3, 4}), w, r}, 1);
  expect_error(n, "input 0 has element type i32");
  n = op(g, OP_LSTM, 3, (Value *[]){x, w, r}, 1);
  ir_attr_set_int(n, "layout", 2);
  expect_error(n, "layout is 2");
  n = op(g, OP_LSTM, 3, (Value *[]){x, w, r}, 1);
  ir_attr_add(n, "clip", AT_FLOAT)->u.f = -1.0f;
  expect_error(n, "'clip' must be a positive float");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lstm_shapes),
      cmocka_unit_test(test_gru_layout1),
      cmocka_unit_test(test_rnn_activations),
      cmocka_unit_test(test_recurrent_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
