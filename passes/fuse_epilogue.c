/* fuse_epilogue.c - activations folded into the Conv, Gemm or MatMul before them.
 *
 * requires: inferred types and shapes; constants folded (Clip bounds are VK_CONST).
 * provides: no Relu, LeakyRelu or Clip (with constant scalar bounds) whose
 *   input is a float32 Conv/Gemm/MatMul output that nothing else reads; the
 *   producer carries the activation instead, as attributes the C emitters
 *   apply while storing each output tile (codegen/emit_gemm.c, gemm.h):
 *     activation = "Relu" | "LeakyRelu" | "Clip"
 *     activation_alpha (LeakyRelu), activation_min / activation_max (Clip)
 * invalidates: schedule positions (the activation nodes go).
 * The producer's output takes the place of the activation's, so the tensor
 * is written once instead of written, read and written again. An activation
 * that is a graph output is left alone (its name is the ABI's).
 */
#include "passes.h"

#include <math.h>
#include <string.h>

/* Constant scalar bound of Clip input i, or dflt when omitted; false when not constant. */
static bool clip_bound(const Node *n, int i, float dflt, float *out) {
  *out = dflt;
  if (!ir_has_input(n, i))
    return true;
  const Value *v = n->in[i];
  if (v->kind != VK_CONST || v->konst->numel != 1 || v->dt != DT_F32)
    return false;
  *out = (float)tensor_get_f64(v->konst, 0);
  return true;
}

static void try_fuse(Node *n, const Captured *cap) {
  Value *x = n->in[0], *y = n->out[0];
  if (x->kind != VK_NODE || !x->producer || x->n_uses != 1 || x->is_output || y->is_output ||
      x->dt != DT_F32 || y->dt != DT_F32 || rewrite_is_captured(cap, x) ||
      rewrite_is_captured(cap, y) || !rewrite_same_shape(&x->shape, &y->shape))
    return;
  Node *p = x->producer;
  if ((p->op != OP_Conv && p->op != OP_Gemm && p->op != OP_MatMul) || ir_attr(p, "activation"))
    return;
  float lo = -INFINITY, hi = INFINITY;
  if (n->op == OP_Clip && (!clip_bound(n, 1, -INFINITY, &lo) || !clip_bound(n, 2, INFINITY, &hi)))
    return;
  Attr *a = ir_attr_add(p, "activation", AT_STRING);
  a->u.s = arena_strdup(p->g->arena, n->op_type);
  a->slen = strlen(n->op_type);
  if (n->op == OP_LeakyRelu)
    ir_attr_add(p, "activation_alpha", AT_FLOAT)->u.f = ir_attr_float(n, "alpha", 0.01f);
  if (n->op == OP_Clip) {
    ir_attr_add(p, "activation_min", AT_FLOAT)->u.f = lo;
    ir_attr_add(p, "activation_max", AT_FLOAT)->u.f = hi;
  }
  rewrite_forward(n, x);
}

bool pass_fuse_epilogue(Graph *g, Diag *d) {
  (void)d;
  Captured cap = rewrite_captured(g);
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (n->op == OP_Relu || n->op == OP_LeakyRelu || n->op == OP_Clip)
      try_fuse(n, &cap);
  }
  return true;
}
