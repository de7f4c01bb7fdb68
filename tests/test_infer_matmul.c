/* test_infer_matmul.c - unit tests of Gemm and MatMul shape inference
 * (passes/infer_matmul.c): transposes, C broadcasting, batch broadcasting,
 * 1-D operands, symbolic dims and the error paths. */
#include "test_util.h"

/* ---- tiny graph builders ---------------------------------------------------- */

static void set_float(Node *n, const char *name, float v) {
  ir_attr_add(n, name, AT_FLOAT)->u.f = v;
}

/* ---- Gemm ------------------------------------------------------------------------ */

static Node *gemm(Graph *g, DType dt, const int64_t *a, const int64_t *b, int c_rank,
                  const int64_t *c) {
  Value *in[3] = {tin(g, "a", dt, 2, a), tin(g, "b", dt, 2, b),
                  c ? tin(g, "c", dt, c_rank, c) : NULL};
  return op(g, OP_Gemm, 3, in, 1);
}

static void test_gemm_transposes_and_bias_shapes(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Node *n = gemm(g, DT_F32, (int64_t[]){5, 3}, (int64_t[]){4, 5}, 2, (int64_t[]){3, 1});
  ir_attr_set_int(n, "transA", 1);
  ir_attr_set_int(n, "transB", 1);
  set_float(n, "alpha", 0.5f);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){3, 4});
  const int64_t cs[4][2] = {{1, 4}, {4, 0}, {1, 0}, {0, 0}};
  const int ranks[4] = {2, 1, 1, 0};
  for (int i = 0; i < 4; i++) {
    Node *m = gemm(g, DT_I64, (int64_t[]){3, 5}, (int64_t[]){5, 4}, ranks[i], cs[i]);
    expect_ok(m);
    assert_shape(m->out[0], 2, (int64_t[]){3, 4});
    assert_int_equal(m->out[0]->dt, DT_I64);
  }
  Node *nc = gemm(g, DT_BF16, (int64_t[]){3, 5}, (int64_t[]){5, 4}, 0, NULL);
  expect_ok(nc);
  assert_shape(nc->out[0], 2, (int64_t[]){3, 4});
  ir_graph_free(g);
}

static void test_gemm_symbolic_m(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Shape as = shape_make(2, (int64_t[]){DIM_UNKNOWN, 8});
  as.sym[0] = "batch";
  Value *in[2] = {ir_input_add(g, "a", DT_F32, &as), tin(g, "b", DT_F32, 2, (int64_t[]){10, 8})};
  Node *n = op(g, OP_Gemm, 2, in, 1);
  ir_attr_set_int(n, "transB", 1);
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){DIM_UNKNOWN, 10});
  assert_string_equal(n->out[0]->shape.sym[0], "batch");
  ir_graph_free(g);
}

static void test_gemm_errors(void **state) {
  (void)state;
  Graph *g = gnew(13);
  expect_error(gemm(g, DT_F32, (int64_t[]){3, 5}, (int64_t[]){4, 5}, 0, NULL),
               "inner dimensions differ");
  expect_error(gemm(g, DT_F32, (int64_t[]){3, 5}, (int64_t[]){5, 4}, 2, (int64_t[]){2, 4}),
               "cannot broadcast");
  expect_error(gemm(g, DT_F32, (int64_t[]){3, 5}, (int64_t[]){5, 4}, 1, (int64_t[]){3}),
               "cannot broadcast");
  expect_error(gemm(g, DT_U8, (int64_t[]){3, 5}, (int64_t[]){5, 4}, 0, NULL), "element type u8");
  Value *in[2] = {tin(g, "a3", DT_F32, 3, (int64_t[]){1, 3, 5}),
                  tin(g, "b3", DT_F32, 2, (int64_t[]){5, 4})};
  expect_error(op(g, OP_Gemm, 2, in, 1), "rank 3, expected 2");
  Value *mix[2] = {tin(g, "a4", DT_F32, 2, (int64_t[]){3, 5}),
                   tin(g, "b4", DT_F64, 2, (int64_t[]){5, 4})};
  expect_error(op(g, OP_Gemm, 2, mix, 1), "element type f64, expected f32");
  ir_graph_free(g);
}

/* ---- MatMul ------------------------------------------------------------------------ */

static Node *matmul(Graph *g, int ra, const int64_t *a, int rb, const int64_t *b) {
  Value *in[2] = {tin(g, "a", DT_F32, ra, a), tin(g, "b", DT_F32, rb, b)};
  return op(g, OP_MatMul, 2, in, 1);
}

static void test_matmul_batch_broadcast(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Node *n = matmul(g, 4, (int64_t[]){2, 1, 3, 4}, 3, (int64_t[]){5, 4, 6});
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){2, 5, 3, 6});
  n = matmul(g, 2, (int64_t[]){3, 4}, 3, (int64_t[]){7, 4, 6});
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){7, 3, 6});
  ir_graph_free(g);
}

static void test_matmul_vectors(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Node *n = matmul(g, 1, (int64_t[]){4}, 1, (int64_t[]){4});
  expect_ok(n);
  assert_int_equal(n->out[0]->shape.rank, 0);
  n = matmul(g, 1, (int64_t[]){4}, 3, (int64_t[]){2, 4, 5});
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){2, 5});
  n = matmul(g, 3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){4});
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){2, 3});
  ir_graph_free(g);
}

static void test_matmul_symbolic_dims(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Shape as = shape_make(3, (int64_t[]){DIM_UNKNOWN, DIM_UNKNOWN, 64});
  as.sym[0] = "B";
  as.sym[1] = "S";
  Value *in[2] = {ir_input_add(g, "a", DT_F16, &as), tin(g, "w", DT_F16, 2, (int64_t[]){64, 32})};
  Node *n = op(g, OP_MatMul, 2, in, 1);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){DIM_UNKNOWN, DIM_UNKNOWN, 32});
  assert_string_equal(n->out[0]->shape.sym[0], "B");
  assert_string_equal(n->out[0]->shape.sym[1], "S");
  ir_graph_free(g);
}

static void test_matmul_errors(void **state) {
  (void)state;
  Graph *g = gnew(13);
  expect_error(matmul(g, 2, (int64_t[]){3, 4}, 2, (int64_t[]){5, 6}), "inner dimensions differ");
  expect_error(matmul(g, 3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){3, 4, 5}), "do not broadcast");
  expect_error(matmul(g, 0, NULL, 1, (int64_t[]){3}), "scalar");
  Value *in[2] = {tin(g, "ab", DT_BOOL, 2, (int64_t[]){2, 2}),
                  tin(g, "bb", DT_BOOL, 2, (int64_t[]){2, 2})};
  expect_error(op(g, OP_MatMul, 2, in, 1), "element type bool");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm_transposes_and_bias_shapes),
      cmocka_unit_test(test_gemm_symbolic_m),
      cmocka_unit_test(test_gemm_errors),
      cmocka_unit_test(test_matmul_batch_broadcast),
      cmocka_unit_test(test_matmul_vectors),
      cmocka_unit_test(test_matmul_symbolic_dims),
      cmocka_unit_test(test_matmul_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
