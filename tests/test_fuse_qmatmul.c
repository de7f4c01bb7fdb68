/* test_fuse_qmatmul.c - the lowering of quantize_dynamic's MatMulInteger and
 * ConvInteger to the int8 lanes kernels, and the Gather of a dequantized
 * table (passes/fuse_qmatmul.c): which nodes become QIntMatMul /
 * QIntConvInteger, which stay, and the constants folded (packed weights, the
 * zero points' per-column terms). Numbers against ONNX Runtime and -O0:
 * tests/models/dyn_quant_models.py, int_conv_cases.py and the random models. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static Graph *lowered(const char *text) {
  Diag d;
  diag_init(&d, "t.ir", stderr);
  Graph *g = ir_parse(text, "t.ir", &d);
  assert_non_null(g);
  assert_true(pass_infer(g, &d));
  assert_true(pass_fuse_qmatmul(g, true, &d));
  assert_true(pass_dce(g, &d));
  assert_true(ir_verify(g, true, &d));
  assert_int_equal(d.n_errors, 0);
  diag_free(&d);
  return g;
}

static int count_op(const Graph *g, OpKind op) {
  int k = 0;
  for (const Node *n = g->first; n; n = n->next)
    k += n->op == op;
  return k;
}

static const Node *first_op(const Graph *g, OpKind op) {
  for (const Node *n = g->first; n; n = n->next)
    if (n->op == op)
      return n;
  return NULL;
}

/* A [2, 3, 5] u8 by B [5, 3] u8 with zero point 130, then quantize_dynamic's
 * Cast -> Mul(scale) -> Add(bias). */
static const char *k_chain =
    "graph g opset 19\n"
    "input %a : u8[2,3,5]\n"
    "input %za : u8[]\n"
    "input %s : f32[]\n"
    "const %b : u8[5,3] = [1, 200, 3, 4, 5, 250, 7, 8, 9, 10, 0, 12, 13, 14, 255]\n"
    "const %zb : u8[] = [130]\n"
    "const %bias : f32[3] = [0.5, -1.0, 2.0]\n"
    "%y : i32[2,3,3] = MatMulInteger(%a, %b, %za, %zb) @mm\n"
    "%f : f32[2,3,3] = Cast{to=1}(%y) @cast\n"
    "%m : f32[2,3,3] = Mul(%f, %s) @mul\n"
    "%o : f32[2,3,3] = Add(%m, %bias) @add\n"
    "output %o\n";

static void test_matmul_chain(void **state) {
  (void)state;
  Graph *g = lowered(k_chain);
  assert_int_equal(count_op(g, OP_MatMulInteger), 0);
  assert_int_equal(count_op(g, OP_Cast), 0);
  assert_int_equal(count_op(g, OP_Mul), 0);
  assert_int_equal(count_op(g, OP_Add), 0);
  const Node *q = first_op(g, OP_QIntMatMul);
  assert_non_null(q);
  assert_int_equal(q->n_in, 7);
  assert_int_equal(q->out[0]->dt, DT_F32);
  assert_int_equal(ir_attr_int(q, "out_float", 0), 1);
  assert_int_equal(ir_attr_int(q, "kdim", 0), 5);
  /* B' = B - 128, zb' = 2: ZD[c] = 5 * 2 - sum_k B'[k][c] */
  static const int b[5][3] = {{1, 200, 3}, {4, 5, 250}, {7, 8, 9}, {10, 0, 12}, {13, 14, 255}};
  const int32_t *zd = q->in[2]->konst->data, *zb = q->in[3]->konst->data;
  for (int c = 0; c < 3; c++) {
    int sum = 0;
    for (int k = 0; k < 5; k++)
      sum += b[k][c] - 128;
    assert_int_equal(zd[c], 10 - sum);
    assert_int_equal(zb[c], 2);
  }
  /* W: per 16 columns, ceil(5/4) = 2 words of 4 k per column; k 4 alone in word 1 */
  const uint32_t *w = q->in[1]->konst->data;
  assert_int_equal(q->in[1]->konst->numel, 2 * 16);
  assert_int_equal(w[0], (uint32_t)(uint8_t)(1 - 128) | (uint32_t)(uint8_t)(4 - 128) << 8 |
                             (uint32_t)(uint8_t)(7 - 128) << 16 | (uint32_t)(uint8_t)(10 - 128) << 24);
  assert_int_equal(w[16 + 2], (uint32_t)(uint8_t)(255 - 128));
  assert_int_equal(w[3], 0); /* column 3: none */
  ir_graph_free(g);
}

/* int8 B without zero points; the int32 read by Cast -> Div: no scale to fold */
static void test_matmul_int32(void **state) {
  (void)state;
  Graph *g = lowered("graph g opset 19\n"
                     "input %a : u8[4,4]\n"
                     "const %b : i8[4,2] = [1, -2, 3, -4, 5, -6, 7, -8]\n"
                     "const %dv : f32[] = [3.0]\n"
                     "%y : i32[4,2] = MatMulInteger(%a, %b) @mm\n"
                     "%f : f32[4,2] = Cast{to=1}(%y) @cast\n"
                     "%o : f32[4,2] = Div(%f, %dv) @div\n"
                     "output %o\n");
  const Node *q = first_op(g, OP_QIntMatMul);
  assert_non_null(q);
  assert_int_equal(q->n_in, 3); /* no zero points at all */
  assert_int_equal(q->out[0]->dt, DT_I32);
  assert_int_equal(count_op(g, OP_Cast), 1);
  const int32_t *zd = q->in[2]->konst->data;
  assert_int_equal(zd[0], -(1 + 3 + 5 + 7));
  assert_int_equal(zd[1], 2 + 4 + 6 + 8);
  ir_graph_free(g);
}

/* a per-row zero point of A, and a B given at run time, stay generic */
static void test_matmul_stays(void **state) {
  (void)state;
  Graph *g = lowered("graph g opset 19\n"
                     "input %a : u8[3,4]\n"
                     "input %za : u8[3]\n"
                     "input %bi : i8[4,2]\n"
                     "const %b : i8[4,2] = [1, 2, 3, 4, 5, 6, 7, 8]\n"
                     "%y : i32[3,2] = MatMulInteger(%a, %b, %za) @rows\n"
                     "%z : i32[3,2] = MatMulInteger(%a, %bi) @runtime_b\n"
                     "output %y\n"
                     "output %z\n");
  assert_int_equal(count_op(g, OP_MatMulInteger), 2);
  assert_int_equal(count_op(g, OP_QIntMatMul), 0);
  ir_graph_free(g);
}

static void test_conv_integer(void **state) {
  (void)state;
  Graph *g = lowered("graph g opset 19\n"
                     "input %x : u8[1,2,4,4]\n"
                     "input %zx : u8[]\n"
                     "const %w : u8[1,2,1,2] = [128, 129, 127, 255]\n"
                     "const %zw : u8[] = [128]\n"
                     "%y : i32[1,1,4,3] = ConvInteger{kernel_shape=ints[1,2]}(%x, %w, %zx, %zw) @conv\n"
                     "output %y\n");
  assert_int_equal(count_op(g, OP_ConvInteger), 0);
  const Node *q = first_op(g, OP_QIntConvInteger);
  assert_non_null(q);
  assert_int_equal(ir_attr_int(q, "kdim", 0), 4);
  assert_int_equal(ir_attr_int(q, "kdim_t", 0), 8); /* 2 taps x Cin 2 padded to 4 */
  assert_int_equal(q->n_in, 5);                      /* zx kept; zw' = 128 - 128 = 0: no ZW */
  assert_false(ir_has_input(q, 3));
  /* W' = [0, 1, -1, 127] as (c 0, ci, tap); taps-major depth: k' = tap * 4 + ci */
  const uint32_t *w = q->in[1]->konst->data;
  assert_int_equal(w[0], (uint32_t)(uint8_t)0 | (uint32_t)(uint8_t)(-1) << 8);   /* tap 0: ci 0, 1 */
  assert_int_equal(w[16], (uint32_t)(uint8_t)1 | (uint32_t)(uint8_t)127 << 8);   /* tap 1 */
  assert_int_equal(((const int32_t *)q->in[2]->konst->data)[0], -(0 + 1 - 1 + 127));
  ir_graph_free(g);
}

/* Gather of a per-tensor dequantized constant: the quantized rows gathered */
static void test_gather_sink(void **state) {
  (void)state;
  Graph *g = lowered("graph g opset 19\n"
                     "input %idx : i64[2]\n"
                     "const %t : i8[4,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\n"
                     "const %ts : f32[] = [0.5]\n"
                     "const %tz : i8[] = [1]\n"
                     "%tf : f32[4,3] = DequantizeLinear(%t, %ts, %tz) @dq\n"
                     "%e : f32[2,3] = Gather(%tf, %idx) @gather\n"
                     "output %e\n");
  const Node *ga = first_op(g, OP_Gather), *dq = first_op(g, OP_DequantizeLinear);
  assert_non_null(ga);
  assert_non_null(dq);
  assert_int_equal(ga->in[0]->kind, VK_CONST);
  assert_int_equal(ga->out[0]->dt, DT_I8);
  assert_ptr_equal(dq->in[0], ga->out[0]);
  assert_int_equal(dq->out[0]->shape.d[0], 2);
  assert_true(dq->out[0]->is_output);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_chain), cmocka_unit_test(test_matmul_int32),
      cmocka_unit_test(test_matmul_stays), cmocka_unit_test(test_conv_integer),
      cmocka_unit_test(test_gather_sink),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
