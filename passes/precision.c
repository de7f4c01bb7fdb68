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
    if ((n->op == OP_Conv || n->op == OP_Gemm || n->op == OP_MatMul) && all_f32(n) && finite_weight(n) &&
        !ir_attr(n, "onnxc.precision")) /* a float16 model's products stay float16 (pass_f16_products) */
      ir_attr_set_int(n, "onnxc.precision", precision);
}

/* ---- float16 models (docs/precision.md, "Float16 models") ---------------------------
 * A Conv, Gemm or MatMul whose operands and result are float16 (static
 * shapes) runs on the float32 kernels, as ONNX Runtime's CPU provider runs
 * it (Casts around a float32 kernel):
 *   x32 = Cast(x16, FLOAT)        each activation operand (exact)
 *   y32 = Op(x32, W32, B32)       constants widened at compile time (exact),
 *                                 onnxc.precision = 2: packed as float16 again
 *   y16 = Cast(y32, FLOAT16)      the float32 result rounded once
 * Packed as float16, the operands are the model's own values, and the sums
 * are float32. A Relu, or a Clip with constant bounds, that is the result's
 * only reader moves before the rounding (rounding to nearest is monotone and
 * keeps every float16, so clamping the float32 value at float16 bounds and
 * rounding gives what rounding and clamping gives); there it fuses into the
 * product's epilogue. The Casts are elementwise kernels: a Cast pair between
 * two products rounds the float32 result to float16 and widens it back.
 * Softmax and LayerNormalization (one output) take their float32 kernels
 * between the same Casts. */

static bool all_f16(const Node *n) {
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i) && (n->in[i]->dt != DT_F16 || !shape_is_static(&n->in[i]->shape)))
      return false;
  return n->n_out == 1 && n->out[0]->dt == DT_F16 && shape_is_static(&n->out[0]->shape);
}

/* A float32 constant holding float16 constant v's values; NULL when v is not constant. */
static Value *widen_const(Graph *g, Value *v, Diag *d) {
  if (v->kind != VK_CONST || !v->konst)
    return NULL;
  Tensor *t = ir_tensor_new(g, DT_F32, &v->konst->shape, d);
  if (!t)
    return NULL;
  const uint16_t *s = v->konst->data;
  float *f = t->data;
  for (int64_t i = 0; i < t->numel; i++)
    f[i] = ir_f16_to_f32(s[i]);
  return ir_const_new(g, arena_printf(g->arena, "%s_f32", v->name), t);
}

/* Input i of n (float16) as float32: a widened constant, else a Cast before n. */
static bool widen_input(Graph *g, Node *n, int i, Diag *d) {
  Value *v = n->in[i], *w = widen_const(g, v, d);
  if (v->kind == VK_CONST && !w)
    return false;
  if (!w) {
    Node *c = ir_node_insert(g, n, OP_Cast, "Cast", arena_printf(g->arena, "%s_f32_in%d", n->name, i), 1,
                             &v, 1);
    ir_attr_set_int(c, "to", 1); /* FLOAT */
    c->out[0]->dt = DT_F32;
    c->out[0]->shape = v->shape;
    w = c->out[0];
  }
  ir_node_set_input(n, i, w);
  return true;
}

/* A Relu, or Clip with constant (or no) bounds: commutes with rounding to float16. */
static bool commutes_with_rounding(const Node *a) {
  if (a->op == OP_Relu)
    return true;
  if (a->op != OP_Clip)
    return false;
  for (int i = 1; i < a->n_in; i++)
    if (ir_has_input(a, i) && a->in[i]->kind != VK_CONST)
      return false;
  return true;
}

bool pass_f16_products(Graph *g, Diag *d) {
  for (Node *n = g->first; n; n = n->next) {
    /* Softmax and LayerNormalization: their float32 kernels between the
     * same Casts (each computes in float32 and rounds its result once, as
     * their float16 loops do, which use libm's scalar exp and do not
     * vectorize) */
    if ((n->op == OP_Softmax || n->op == OP_LayerNormalization) && all_f16(n)) {
      for (int i = 0; i < n->n_in; i++)
        if (ir_has_input(n, i) && !widen_input(g, n, i, d))
          return false;
      Value *y = n->out[0];
      y->dt = DT_F32;
      Node *c = ir_node_insert(g, n->next, OP_Cast, "Cast", arena_printf(g->arena, "%s_f16_out", n->name), 1,
                               &y, 1);
      ir_attr_set_int(c, "to", 10); /* FLOAT16 */
      c->out[0]->dt = DT_F16;
      c->out[0]->shape = y->shape;
      ir_value_replace(y, c->out[0]);
      ir_node_set_input(c, 0, y);
      n = c;
      continue;
    }
    if ((n->op != OP_Conv && n->op != OP_Gemm && n->op != OP_MatMul) || !all_f16(n))
      continue;
    for (int i = 0; i < n->n_in; i++)
      if (ir_has_input(n, i) && !widen_input(g, n, i, d))
        return false;
    Value *y = n->out[0];
    y->dt = DT_F32;
    Node *last = n;
    /* a Relu/Clip that alone reads the result computes in float32 too */
    if (!y->is_output && y->n_uses == 1 && commutes_with_rounding(y->uses[0])) {
      Node *a = y->uses[0];
      for (int i = 1; i < a->n_in; i++)
        if (ir_has_input(a, i) && !widen_input(g, a, i, d))
          return false;
      a->out[0]->dt = DT_F32;
      last = a;
    }
    Value *r = last->out[0];
    Node *c = ir_node_insert(g, last->next, OP_Cast, "Cast", arena_printf(g->arena, "%s_f16_out", last->name),
                             1, &r, 1);
    ir_attr_set_int(c, "to", 10); /* FLOAT16 */
    c->out[0]->dt = DT_F16;
    c->out[0]->shape = r->shape;
    ir_value_replace(r, c->out[0]);
    ir_node_set_input(c, 0, r);
    if (n->in[1]->kind == VK_CONST && finite_weight(n))
      ir_attr_set_int(n, "onnxc.precision", 2);
    /* on from n: a moved Relu may come after other products (it and the
     * Casts are float32 on one side now, so they are passed over) */
  }
  return true;
}
