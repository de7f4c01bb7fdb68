/* test_emit_movement.c - unit tests of the data-movement emitters
 * (codegen/emit_movement.c): the loop nests they choose (merged contiguous
 * runs, broadcast strides, merged unpadded Pad axes), Split offsets with a
 * dropped output, run-time bounds checks, and the errors for operands that
 * must be constant. The kernels' results are checked end to end by the ONNX
 * node tests (`onnxc check`). */
#include "test_util.h"

#include <stdlib.h>

#include "codegen.h"

/* Emits the body of n's kernel after inferring it; NULL (message in *msg)
 * when emission fails. Caller frees. */
static char *emit(Node *n, const char **msg) {
  expect_ok(n);
  Buf b;
  buf_init(&b);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  EmitC e = {n->g, NULL, &b, 0, &d, "m", 1, false, false, 0, 0, NULL, NULL, 0, 0, 0};
  typedef bool (*Fn)(EmitC *, const Node *);
  static const Fn fns[OP_COUNT_] = {
      [OP_Slice] = emitc_Slice, [OP_Pad] = emitc_Pad,     [OP_Expand] = emitc_Expand,
      [OP_Split] = emitc_Split, [OP_Range] = emitc_Range, [OP_GatherElements] = emitc_GatherElements,
      [OP_Compress] = emitc_Compress, [OP_Tile] = emitc_Tile,
  };
  bool ok = fns[n->op](&e, n);
  static char last[512];
  snprintf(last, sizeof last, "%s", d.n_msgs ? diag_last(&d) : "");
  if (msg)
    *msg = last;
  diag_free(&d);
  if (!ok) {
    buf_free(&b);
    return NULL;
  }
  return b.s;
}

static void assert_contains(const char *s, const char *what) {
  if (!strstr(s, what))
    fail_msg("'%s' not found in:\n%s", what, s);
}

static void test_slice_inner_run(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 3, (int64_t[]){4, 6, 8});
  Value *in[4] = {x, ints_const(g, "s", 1, (int64_t[]){1}), ints_const(g, "e", 1, (int64_t[]){3}),
                  ints_const(g, "a", 1, (int64_t[]){1})};
  char *s = emit(op(g, OP_Slice, 4, in, 1), NULL);
  /* Rows 1..2 of each 6x8 plane are one contiguous run of 16. */
  assert_contains(s, "i1 < 16");
  assert_contains(s, "Y0[i0 * 16 + i1] = X0[i0 * 48 + i1 + 8]");
  free(s);
  Value *rt[4] = {x, tin(g, "rs", DT_I64, 1, (int64_t[]){1}), in[2], in[3]};
  Node *n = op(g, OP_Slice, 4, rt, 1);
  n->out[0]->shape = shape_make(3, (int64_t[]){4, 2, 8});  /* as if pinned */
  Buf b;
  buf_init(&b);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  EmitC e = {g, NULL, &b, 0, &d, "m", 1, false, false, 0, 0, NULL, NULL, 0, 0, 0};
  assert_false(emitc_Slice(&e, n));
  assert_non_null(strstr(diag_last(&d), "input 1 (starts) must be a compile-time constant"));
  diag_free(&d);
  buf_free(&b);
  ir_graph_free(g);
}

static void test_pad_merges_unpadded_axes(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){2, 3, 4, 5});
  Value *in[2] = {x, ints_const(g, "p", 8, (int64_t[]){0, 0, 1, 1, 0, 0, 1, 1})};
  char *s = emit(op(g, OP_Pad, 2, in, 1), NULL);
  assert_contains(s, "c0 < 6");   /* N and C share a loop */
  assert_contains(s, "c1 < 6");   /* padded H */
  assert_null(strstr(s, "c2 <"));
  free(s);
  ir_graph_free(g);
}

static void test_expand_broadcasts_with_zero_stride(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *in[2] = {tin(g, "x", DT_F32, 2, (int64_t[]){3, 1}), ints_const(g, "s", 2, (int64_t[]){3, 4})};
  char *s = emit(op(g, OP_Expand, 2, in, 1), NULL);
  assert_contains(s, "Y0[i0 * 4 + i1] = X0[i0]");
  free(s);
  ir_graph_free(g);
}

static void test_split_dropped_output(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *in[2] = {tin(g, "x", DT_F32, 2, (int64_t[]){2, 6}), ints_const(g, "s", 3, (int64_t[]){1, 2, 3})};
  Node *n = op(g, OP_Split, 2, in, 3);
  ir_attr_set_int(n, "axis", 1);
  ir_node_drop_output(n, 1);
  char *s = emit(n, NULL);
  /* Output 2 starts after 1 + 2 elements of each row. */
  assert_contains(s, "Y2[i0 * 3 + i1] = X0[i0 * 6 + i1 + 3]");
  assert_null(strstr(s, "Y1"));
  free(s);
  ir_graph_free(g);
}

static void test_range_and_gather_checks(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *r[3] = {num_const(g, "a", DT_I64, 0, NULL, (double[]){2}), num_const(g, "b", DT_I64, 0, NULL, (double[]){9}),
                 num_const(g, "c", DT_I64, 0, NULL, (double[]){3})};
  char *s = emit(op(g, OP_Range, 3, r, 1), NULL);
  assert_contains(s, "i < 3");
  assert_contains(s, "(uint64_t)X0[0] + (uint64_t)i * (uint64_t)X2[0]");
  free(s);
  Value *ge[2] = {tin(g, "x", DT_F32, 2, (int64_t[]){3, 4}), tin(g, "i", DT_I32, 2, (int64_t[]){2, 4})};
  s = emit(op(g, OP_GatherElements, 2, ge, 1), NULL);
  assert_contains(s, "X1[t] < -3 || X1[t] >= 3");
  assert_contains(s, "return ONNXC_ERR_BAD_INDEX;");
  free(s);
  ir_graph_free(g);
}

static void test_tile_and_compress(void **state) {
  (void)state;
  Graph *g = gnew(13);
  Value *t[2] = {tin(g, "x", DT_U8, 1, (int64_t[]){5}), ints_const(g, "r", 1, (int64_t[]){3})};
  char *s = emit(op(g, OP_Tile, 2, t, 1), NULL);
  assert_contains(s, "Y0[i0 * 5 + i1] = X0[i1]");
  free(s);
  Value *c[2] = {tin(g, "y", DT_F32, 2, (int64_t[]){3, 2}),
                 num_const(g, "k", DT_BOOL, 1, (int64_t[]){3}, (double[]){1, 0, 1})};
  Node *n = op(g, OP_Compress, 2, c, 1);
  ir_attr_set_int(n, "axis", 0);
  s = emit(n, NULL);
  assert_contains(s, "sel[2] = {0, 2}");
  free(s);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slice_inner_run),
      cmocka_unit_test(test_pad_merges_unpadded_axes),
      cmocka_unit_test(test_expand_broadcasts_with_zero_stride),
      cmocka_unit_test(test_split_dropped_output),
      cmocka_unit_test(test_range_and_gather_checks),
      cmocka_unit_test(test_tile_and_compress),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
