/* test_threads.c - --threads (codegen/c/threads.c): a kernel runs on the pool
 * only when its estimated cost pays for a wake-up and a join, its work is cut
 * into claims of bounded count, and the splits that keep threads from doing
 * each other's work (GEMM row blocks of all columns, matrix-vector columns)
 * are the ones emitted. The numbers themselves are checked by running the
 * code (e2e.kernel_cases, diff.random with --threads 2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "codegen_util.h"
#include "plan_util.h"

static void plan_for(Graph *g, Plan *p, int threads) {
  static Target t[3];
  if (!t[threads].scratch_bytes)
    codegen_target(&t[threads], "c", threads);
  assert_true(pu_infer(g));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_memplan(g, p, &t[threads], &d));
  diag_free(&d);
}

/* m.c of the graph y = op(x) (or op(x, w)) built for two threads. */
static char *two_threads(Graph *g) {
  Plan p;
  plan_for(g, &p, 2);
  return cu_generate_threads(g, &p, 2, NULL);
}

/* Whether the function of node `fn` ("node0_Softmax") takes the thread
 * parameters (runs on every thread). */
static bool runs_on_pool(const char *c, const char *fn) {
  char sig[128];
  snprintf(sig, sizeof sig, " int %s(", fn); /* ONNXC_NODE_FN or ONNXC_NODE_FN_W */
  const char *at = strstr(c, sig);
  assert_non_null(at);
  const char *end = strchr(at, '{');
  const char *th = strstr(at, "int onnxc_th, int onnxc_nt");
  return th && th < end;
}

static void test_threads_cost_decides(void **state) {
  (void)state;
  assert_false(threads_worth(1, 1e9));    /* one thread: never */
  assert_false(threads_worth(2, 500.0));  /* half a microsecond: under a wake-up */
  assert_true(threads_worth(2, 1e6));     /* a millisecond */
  /* claims: at least one per thread, at most 8 per thread, never more than items */
  assert_int_equal(threads_chunks(2, 1000, 1e9), 16);
  assert_int_equal(threads_chunks(2, 1000, 1.0), 2);
  assert_int_equal(threads_chunks(2, 3, 1e9), 3);
  assert_int_equal(threads_chunks(4, 1000, 12000.0), 8);
  /* rates add up: twice the work costs twice as much */
  assert_true(ec_cost(COST_ROW_ELEM, 2000) == 2 * ec_cost(COST_ROW_ELEM, 1000));
  assert_true(ec_cost_ns(0, 1000) == ec_cost(COST_BYTE, 1000));
}

/* A Softmax over 256 rows of 128 goes on the pool in bounded claims; one
 * over 8 rows of 8 costs less than a wake-up and stays on the caller (and
 * with no parallel node, m.c carries no pool at all). */
static void test_threads_rows_by_cost(void **state) {
  (void)state;
  Graph *g = pu_graph();
  ir_output_add(g, pu_op1(g, OP_Softmax, "y", pu_input(g, "x", 256, 128)));
  char *c = two_threads(g);
  assert_true(runs_on_pool(c, "node0_Softmax"));
  assert_non_null(strstr(c, "onnxc_parallel(node0_Softmax_task"));
  assert_non_null(strstr(c, "< 16)")); /* 8 claims per thread, each of 16 rows */
  free(c);
  ir_graph_free(g);

  g = pu_graph();
  ir_output_add(g, pu_op1(g, OP_Softmax, "y", pu_input(g, "x", 8, 8)));
  c = two_threads(g);
  assert_false(runs_on_pool(c, "node0_Softmax"));
  assert_null(strstr(c, "onnxc_parallel("));
  assert_non_null(strstr(c, "m_free_threads"));
  free(c);
  ir_graph_free(g);
}

/* x[128,128] x W[128,512] with W packed: row blocks of all 512 columns, 16 rows
 * each (8 blocks), so no thread packs rows of x another thread packs. */
static void test_threads_gemm_rows_of_all_columns(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *w = pu_weight(g, "w", 128, 512);
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", pu_input(g, "x", 128, 128), w));
  char *c = two_threads(g);
  assert_true(runs_on_pool(c, "node0_MatMul"));
  assert_non_null(strstr(c, "const long rb = (16 + ONNXC_MR - 1) / ONNXC_MR * ONNXC_MR;"));
  assert_non_null(strstr(c, "< 8) {"));
  free(c);
  ir_graph_free(g);
}

/* A classifier's x[1,1280] x W[1000,1280]^T reads 5 MB of weights: its
 * columns, in groups of 4 (4 weight rows streamed at once), are shared by
 * the threads. */
static void test_threads_matrix_vector_columns(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *w = pu_weight(g, "w", 1000, 1280);
  Value *y = pu_op2(g, OP_Gemm, "y", pu_input(g, "x", 1, 1280), w);
  ir_attr_set_int(y->producer, "transB", 1);
  ir_output_add(g, y);
  char *c = two_threads(g);
  assert_true(runs_on_pool(c, "node0_Gemm"));
  assert_non_null(strstr(c, "for (long jq = it * 250 / 16; jq < (it + 1) * 250 / 16; jq++) {"));
  assert_non_null(strstr(c, "part3[u] += a * (br3[k + u]);"));
  free(c);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads_cost_decides),
      cmocka_unit_test(test_threads_rows_by_cost),
      cmocka_unit_test(test_threads_gemm_rows_of_all_columns),
      cmocka_unit_test(test_threads_matrix_vector_columns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
