/* test_emit_gemm.c - the packed GEMM's contract between the memory plan
 * (codegen/target.c, asked by the planner) and the emitter (codegen/emit_gemm.c): the plan
 * gives a node the scratch the emitter needs, weights are packed in the
 * kernels' panel layout exactly when the fast path reads them, and small or
 * shared cases fall back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "target_util.h"
#include "codegen_util.h"
#include "gemm.h"
#include "plan_util.h"

static void plan_of(Graph *g, Plan *p) {
  assert_true(pu_infer(g));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_memplan(g, p, onnxc_test_target(), &d));
  diag_free(&d);
}

/* Fills a constant with its own flat index. */
static void iota(Value *w) {
  float *f = w->konst->data;
  for (int64_t i = 0; i < w->konst->numel; i++)
    f[i] = (float)i;
}


/* [64,300] x W[300,70]: scratch for A's block, W packed in 32-column panels. */
static void test_emit_gemm_matmul_weight_packed_in_column_panels(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *w = pu_weight(g, "w", 300, 70);
  iota(w);
  Value *y = pu_op2(g, OP_MatMul, "y", pu_input(g, "x", 64, 300), w);
  ir_output_add(g, y);
  Plan p;
  plan_of(g, &p);
  /* A block: 72 (64 rounded to 24) rows x 256 deep, floats */
  assert_int_equal(p.scratch_size[y->producer->id], 72 * 256 * 4);
  assert_true(gemm_used(g, &p, 1));
  assert_int_equal(gemm_weight_numel(&p, w, 1), 96 * 300);
  Arena *a = arena_new();
  const Tensor *t = gemm_weight_data(&p, w, a, 1);
  const float *pk = t->data;
  assert_int_equal(t->numel, 96 * 300);
  /* (k, j) of W sits at panel j / 32, row k, lane j % 32; lanes past N are 0 */
  assert_true(pk[(69 / 32) * 32 * 300 + 5 * 32 + 69 % 32] == (float)(5 * 70 + 69));
  assert_true(pk[0 * 32 * 300 + 299 * 32 + 1] == (float)(299 * 70 + 1));
  assert_true(pk[2 * 32 * 300 + 7 * 32 + 31] == 0.0f);
  arena_free(a);
  char *c = cu_generate(g, &p, NULL);
  assert_non_null(strstr(c, "#if defined(__AVX512F__)"));
  assert_non_null(strstr(c, "onnxc_ukr(kc, a, as, b, (const int *)0, c, 70"));
  assert_non_null(strstr(c, "const long as = ONNXC_MR;")); /* A packed at run time */
  free(c);
  ir_graph_free(g);
}

/* Conv weights [30,3,3,3] go to 24-row panels of the left operand. */
static void test_emit_gemm_conv_weight_packed_in_row_panels(void **state) {
  (void)state;
  Graph *g = pu_graph();
  int64_t xd[4] = {1, 3, 10, 10}, wd[4] = {30, 3, 3, 3};
  Shape xs = shape_make(4, xd), ws = shape_make(4, wd);
  Value *in[2] = {ir_input_add(g, "x", DT_F32, &xs),
                  ir_const_new(g, "w", ir_tensor_new(g, DT_F32, &ws, NULL))};
  iota(in[1]);
  Node *conv = ir_node_new(g, OP_Conv, NULL, "conv", 2, in, 1);
  int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {2, 1};
  ir_attr_set_ints(conv, "pads", pads, 4);
  ir_attr_set_ints(conv, "strides", strides, 2);
  ir_output_add(g, conv->out[0]);
  Plan p;
  plan_of(g, &p);
  /* 5 x 10 outputs: B block 27 x 64 + pixel table 64 ints + padded image 3 x 12 x 12 (+16) */
  int64_t want = (27 * 64 * 4 + 63) / 64 * 64 + 256 + ((3 * 12 * 12 + 16) * 4 + 63) / 64 * 64;
  assert_int_equal(p.scratch_size[conv->id], want);
  assert_int_equal(gemm_weight_numel(&p, in[1], 1), 48 * 27);
  Arena *a = arena_new();
  const float *pk = gemm_weight_data(&p, in[1], a, 1)->data;
  /* (i, k) at panel i / 24, row k, lane i % 24 */
  assert_true(pk[1 * 24 * 27 + 26 * 24 + 29 % 24] == (float)(29 * 27 + 26));
  assert_true(pk[1 * 24 * 27 + 3 * 24 + 23] == 0.0f);
  arena_free(a);
  ir_graph_free(g);
}

/* A stride-1 3x3 conv with packed weights reads its image directly: the
 * scratch is the padded image (+ 32 floats), the offsets a static table. */
static void test_emit_gemm_direct_conv(void **state) {
  (void)state;
  Graph *g = pu_graph();
  int64_t xd[4] = {2, 5, 20, 30}, wd[4] = {40, 5, 3, 3};
  Shape xs = shape_make(4, xd), ws = shape_make(4, wd);
  Value *in[2] = {ir_input_add(g, "x", DT_F32, &xs),
                  ir_const_new(g, "w", ir_tensor_new(g, DT_F32, &ws, NULL))};
  iota(in[1]);
  Node *conv = ir_node_new(g, OP_Conv, NULL, "conv", 2, in, 1);
  int64_t pads[4] = {1, 0, 1, 2};
  ir_attr_set_ints(conv, "pads", pads, 4);
  ir_output_add(g, conv->out[0]);
  Plan p;
  plan_of(g, &p);
  assert_int_equal(p.scratch_size[conv->id], ((5 * 22 * 32 + 32) * 4 + 63) / 64 * 64);
  assert_int_equal(gemm_weight_numel(&p, in[1], 1), 48 * 45);
  char *c = cu_generate(g, &p, NULL);
  assert_non_null(strstr(c, "/* direct conv: [40 x 45] x image, 20 output rows 32 wide (30 used) */"));
  /* k = 44: channel 4, tap (2, 2): 4 * 22 * 32 + 2 * 32 + 2 */
  assert_non_null(strstr(c, "static const int koff[45]"));
  assert_non_null(strstr(c, ", 2882};"));
  free(c);
  ir_graph_free(g);
}

/* A conv with small maps (7x7: 49 pixels) and M a multiple of 32 computes Y^T:
 * W^T goes to 32-column panels of the right operand; scratch for cols^T (49
 * pixels padded to 72 rows x K 72) and the padded image; Y^T never leaves the
 * registers (stored transposed into Y by onnxc_ukr_yt). */
static void test_emit_gemm_small_map_conv_transposed(void **state) {
  (void)state;
  Graph *g = pu_graph();
  int64_t xd[4] = {1, 8, 7, 7}, wd[4] = {64, 8, 3, 3};
  Shape xs = shape_make(4, xd), ws = shape_make(4, wd);
  Value *in[2] = {ir_input_add(g, "x", DT_F32, &xs),
                  ir_const_new(g, "w", ir_tensor_new(g, DT_F32, &ws, NULL))};
  iota(in[1]);
  Node *conv = ir_node_new(g, OP_Conv, NULL, "conv", 2, in, 1);
  int64_t pads[4] = {1, 1, 1, 1};
  ir_attr_set_ints(conv, "pads", pads, 4);
  ir_output_add(g, conv->out[0]);
  Plan p;
  plan_of(g, &p);
  int64_t want = (72 * 72 * 4 + 63) / 64 * 64 + ((8 * 9 * 9 + 16) * 4 + 63) / 64 * 64;
  assert_int_equal(p.scratch_size[conv->id], want);
  assert_int_equal(gemm_weight_numel(&p, in[1], 1), 64 * 72);
  Arena *a = arena_new();
  const float *pk = gemm_weight_data(&p, in[1], a, 1)->data;
  /* (k, j) of W^T = W[j][k] at panel j / 32, row k, lane j % 32 */
  assert_true(pk[1 * 32 * 72 + 70 * 32 + 45 % 32] == (float)(45 * 72 + 70));
  assert_true(pk[0 * 32 * 72 + 3 * 32 + 31] == (float)(31 * 72 + 3));
  arena_free(a);
  char *c = cu_generate(g, &p, NULL);
  assert_non_null(strstr(c, "/* small maps: Y^T[49 x 64]"));
  assert_non_null(strstr(c, "onnxc_ukr_yt(kc, ap + (ir - ir % 24) * 72 + pc * 24 + ir % 24, 24, b, pf, Y0 + jr * 49 + ir, 49, rows, pc > 0,"));
  free(c);
  ir_graph_free(g);
}

/* Under 16384 multiply-adds, or one row: no scratch, plain loops, weights as they are. */
static void test_emit_gemm_small_products_stay_generic(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *w1 = pu_weight(g, "w1", 16, 32), *w2 = pu_weight(g, "w2", 512, 512);
  Value *y1 = pu_op2(g, OP_MatMul, "y1", pu_input(g, "x1", 4, 16), w1);
  Value *y2 = pu_op2(g, OP_MatMul, "y2", pu_input(g, "x2", 1, 512), w2);
  ir_output_add(g, y1);
  ir_output_add(g, y2);
  Plan p;
  plan_of(g, &p);
  assert_int_equal(p.scratch_size[y1->producer->id], 0);
  assert_int_equal(p.scratch_size[y2->producer->id], 0);
  assert_false(gemm_used(g, &p, 1));
  assert_int_equal(gemm_weight_numel(&p, w1, 1), 0);
  Arena *a = arena_new();
  assert_ptr_equal(gemm_weight_data(&p, w2, a, 1), w2->konst);
  arena_free(a);
  char *c = cu_generate(g, &p, NULL);
  assert_null(strstr(c, "onnxc_ukr"));
  free(c);
  ir_graph_free(g);
}

/* A weight two nodes read is packed at run time by each, never in the blob. */
static void test_emit_gemm_shared_weight_packed_at_run_time(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *w = pu_weight(g, "w", 64, 64);
  Value *x = pu_input(g, "x", 32, 64);
  Value *y1 = pu_op2(g, OP_MatMul, "y1", x, w), *y2 = pu_op2(g, OP_MatMul, "y2", x, w);
  ir_output_add(g, y1);
  ir_output_add(g, y2);
  Plan p;
  plan_of(g, &p);
  /* both blocks: B 64 x 64, A 48 x 64 */
  assert_int_equal(p.scratch_size[y1->producer->id], 64 * 64 * 4 + 48 * 64 * 4);
  assert_true(gemm_used(g, &p, 1));
  assert_int_equal(gemm_weight_numel(&p, w, 1), 0);
  ir_graph_free(g);
}

/* The plan's scratch is the emitter's precondition: with less, generic code. */
static void test_emit_gemm_without_scratch_falls_back(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *y = pu_op2(g, OP_MatMul, "y", pu_input(g, "x", 64, 300), pu_weight(g, "w", 300, 70));
  ir_output_add(g, y);
  Plan p;
  plan_of(g, &p);
  p.scratch_size[y->producer->id] -= 64;
  assert_false(gemm_used(g, &p, 1));
  assert_int_equal(gemm_weight_numel(&p, ir_value_find(g, "w"), 1), 0);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_emit_gemm_matmul_weight_packed_in_column_panels),
      cmocka_unit_test(test_emit_gemm_conv_weight_packed_in_row_panels),
      cmocka_unit_test(test_emit_gemm_small_map_conv_transposed),
      cmocka_unit_test(test_emit_gemm_direct_conv),
      cmocka_unit_test(test_emit_gemm_small_products_stay_generic),
      cmocka_unit_test(test_emit_gemm_shared_weight_packed_at_run_time),
      cmocka_unit_test(test_emit_gemm_without_scratch_falls_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
