/* precision.c - --precision bf16|fp16 (docs/precision.md).
 *
 * Marks the products the reduced type applies to: every Conv, Gemm and
 * MatMul whose operands and result are float32 (and whose constant weight,
 * if any, is finite) gets the int attribute `onnxc.precision` (1 bf16, 2
 * fp16). The packed-GEMM emitters
 * (codegen/emit_gemm*.c) read it when they plan a product, so the scratch
 * the planner asks for and the code emitted agree; a product that keeps
 * another kernel (run-time extents, small maps, matrix-vector) stays float32.
 * Values between nodes stay float32: the reduced type lives in the packed
 * panels only.
 */
#include "passes.h"

#include <math.h>

static bool all_f32(const Node *n) {
  for (int i = 0; i < n->n_in && i < 2; i++)
    if (!n->in[i] || n->in[i]->dt != DT_F32)
      return false;
  return n->n_out >= 1 && n->out[0] && n->out[0]->dt == DT_F32;
}

/* A constant weight holding an infinity or NaN keeps float32: packed as
 * bfloat16 (or float16) pairs, its words could read as NaN floats, which the
 * C form of the weights does not keep bit for bit (codegen/weights.c). A
 * finite float16 weight past 65504 becomes an infinity in the high half of a
 * word, whose float exponent (0xf8) is not all ones: no NaN word. */
static bool finite_weight(const Node *n) {
  const Value *w = n->in[1];
  if (w->kind != VK_CONST || !w->konst)
    return true;
  const float *d = w->konst->data;
  for (int64_t i = 0; i < w->konst->numel; i++)
    if (!isfinite(d[i]))
      return false;
  return true;
}

void pass_mark_precision(Graph *g, int precision) {
  if (precision <= 0)
    return;
  for (Node *n = g->first; n; n = n->next)
    if ((n->op == OP_Conv || n->op == OP_Gemm || n->op == OP_MatMul) && all_f32(n) && finite_weight(n))
      ir_attr_set_int(n, "onnxc.precision", precision);
}
