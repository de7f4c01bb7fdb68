/* fuse_epilogue.c - activations folded into the Conv, Gemm or MatMul before them.
 *
 * requires: inferred types and shapes; constants folded (Clip bounds are VK_CONST).
 * provides: no Relu, LeakyRelu or Clip (with constant scalar bounds) whose
 *   input is a float32 Conv/Gemm/MatMul output that nothing else reads; the
 *   producer carries the activation instead, as attributes the C emitters
 *   apply while storing each output tile (codegen/emit_gemm.c, gemm.h):
 *     activation = "Relu" | "LeakyRelu" | "Clip"
 *     activation_alpha (LeakyRelu), activation_min / activation_max (Clip)
 *   Also (perf2): MatMul(A, W) + Add(bias), with W a 2-D float32 constant that
 *   only this MatMul reads and bias a constant [N], becomes Gemm(A, W, bias)
 *   (through Reshapes to and from [M, K] when A has batch dims), so the GEMM
 *   kernel adds the column bias in registers and W is packed at compile time.
 *   And (residual): Add(Conv(..), r) (or Sum of the two), r of the Conv's output shape,
 *   float32, a 2-D group-1 Conv (the packed-GEMM conv of codegen/emit_gemm.c)
 *   whose output nothing else reads: r becomes the Conv's input 3 (slot 2, the
 *   bias, left empty when absent; attribute onnxc.fused_inputs = 1, which
 *   ir_verify counts), added in the store before the activation, so the
 *   activation after the Add then folds in too. The Conv moves down to the
 *   Add's place, after r's producer. Both targets' conv kernels add it
 *   (Target.fuse_residual; a target without keeps them apart).
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
  rewrite_record_fused(p, n);
  rewrite_forward(n, x);
}

/* MatMul + Add(constant bias [N]) -> [Reshape] Gemm(A, W, bias) [Reshape]. */
static bool try_bias(Graph *g, Node *n, const Captured *cap, Diag *d) {
  Value *y = n->out[0];
  if (n->n_in != 2 || y->is_output || rewrite_is_captured(cap, y) || y->dt != DT_F32)
    return true;
  for (int side = 0; side < 2; side++) {
    Value *x = n->in[side], *b = n->in[1 - side];
    if (x->kind != VK_NODE || !x->producer || x->producer->op != OP_MatMul || x->n_uses != 1 ||
        x->is_output || rewrite_is_captured(cap, x) || x->dt != DT_F32)
      continue;
    Node *mm = x->producer;
    Value *a = mm->in[0], *w = mm->in[1];
    const Shape *as = &a->shape, *xs = &x->shape;
    if (ir_attr(mm, "activation") || a->dt != DT_F32 || w->kind != VK_CONST || w->dt != DT_F32 ||
        w->n_uses != 1 || w->is_output || w->shape.rank != 2 || as->rank < 2 ||
        !shape_is_static(as) || !shape_is_static(xs) || !rewrite_same_shape(xs, &y->shape))
      continue;
    int64_t k = w->shape.d[0], nn = w->shape.d[1], m = 1;
    /* [N], or [1, ..., 1, N] (tf2onnx's Dense bias after a rank-3 einsum) */
    bool row = b->kind == VK_CONST && b->konst && b->shape.rank >= 1 && b->shape.d[b->shape.rank - 1] == nn;
    for (int i = 0; row && i + 1 < b->shape.rank; i++)
      row = b->shape.d[i] == 1;
    if (!row || b->dt != DT_F32 || as->d[as->rank - 1] != k)
      continue;
    if (b->shape.rank != 1) {
      Shape s1 = shape_make(1, &nn);
      Tensor *t = ir_tensor_new(g, DT_F32, &s1, NULL);
      IR_ASSERT(t);
      memcpy(t->data, b->konst->data, (size_t)t->nbytes);
      b = ir_const_new(g, arena_printf(g->arena, "%s_bias", mm->name), t);
    }
    for (int i = 0; i + 1 < as->rank; i++)
      m *= as->d[i];
    Value *ga = a;
    if (as->rank != 2) {
      int64_t mk[2] = {m, k};
      Value *in[2] = {a, rewrite_const_i64(g, arena_printf(g->arena, "%s_mk", mm->name), mk, 2)};
      Node *r = ir_node_insert(g, n, OP_Reshape, "Reshape",
                               arena_printf(g->arena, "%s_2d", mm->name), 2, in, 1);
      if (!infer_node(r, d))
        return false;
      ga = r->out[0];
    }
    Value *gin[3] = {ga, w, b};
    Node *gm = ir_node_insert(g, n, OP_Gemm, "Gemm", mm->name, 3, gin, 1);
    if (!infer_node(gm, d))
      return false;
    Value *out = gm->out[0];
    if (as->rank != 2) {
      Value *in[2] = {out, rewrite_const_i64(g, arena_printf(g->arena, "%s_shape", mm->name),
                                             xs->d, xs->rank)};
      Node *r = ir_node_insert(g, n, OP_Reshape, "Reshape",
                               arena_printf(g->arena, "%s_nd", mm->name), 2, in, 1);
      if (!infer_node(r, d))
        return false;
      out = r->out[0];
    }
    rewrite_record_fused(gm, mm);
    rewrite_record_fused(gm, n);
    rewrite_forward(n, out);
    ir_node_remove(mm);
    return true;
  }
  return true;
}

/* A float32 2-D Conv that the packed-GEMM path of codegen/emit_gemm.c takes
 * (group 1, static shapes, not empty): the one kernel that adds a residual. */
static bool gemm_conv(const Node *c) {
  if (c->op != OP_Conv || c->n_in > 3 || c->n_out != 1 || ir_attr_int(c, "group", 1) != 1 ||
      (c->in[0]->shape.rank != 4 && c->in[0]->shape.rank != 3) || !shape_is_static(&c->in[0]->shape) ||
      !shape_is_static(&c->in[1]->shape) || !shape_is_static(&c->out[0]->shape))
    return false;
  for (int i = 0; i < c->n_in; i++)
    if (ir_has_input(c, i) && c->in[i]->dt != DT_F32)
      return false;
  for (int i = 0; i < c->out[0]->shape.rank; i++)
    if (c->out[0]->shape.d[i] <= 0)
      return false;
  return true;
}

/* Add(Conv(..), r) with r of the Conv's shape: r becomes the Conv's input 3
 * ("onnxc.fused_inputs" = 1), added in the store before the activation. */
static void try_residual(Node *n, const Captured *cap) {
  Value *y = n->out[0];
  if (n->n_in != 2 || y->is_output || rewrite_is_captured(cap, y) || y->dt != DT_F32)
    return;
  for (int side = 0; side < 2; side++) {
    Value *x = n->in[side], *r = n->in[1 - side];
    if (x->kind != VK_NODE || !x->producer || x->n_uses != 1 || x->is_output || x == r ||
        rewrite_is_captured(cap, x) || r->dt != DT_F32 || !rewrite_same_shape(&x->shape, &y->shape) ||
        !rewrite_same_shape(&r->shape, &y->shape))
      continue;
    Node *c = x->producer;
    if (!gemm_conv(c) || ir_attr(c, "activation") || ir_attr(c, "onnxc.fused_inputs"))
      continue;
    if (c->n_in < 3) /* the residual is input 3: slot 2 (no bias) stays empty */
      ir_node_add_input(c, c->g->none);
    ir_node_add_input(c, r);
    ir_attr_set_int(c, "onnxc.fused_inputs", 1);
    ir_node_move_before(c, n); /* r may be made after the Conv was */
    rewrite_record_fused(c, n);
    rewrite_forward(n, x);
    return;
  }
}

bool pass_fuse_epilogue(Graph *g, Diag *d, bool residual) {
  Captured cap = rewrite_captured(g);
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (n->op == OP_Add && !try_bias(g, n, &cap, d))
      return false;
  }
  for (Node *n = g->first, *next; residual && n; n = next) {
    next = n->next;
    if (n->op == OP_Add || n->op == OP_Sum) /* Sum of two: older exports' residual Add */
      try_residual(n, &cap);
  }
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (n->op == OP_Relu || n->op == OP_LeakyRelu || n->op == OP_Clip)
      try_fuse(n, &cap);
  }
  return true;
}
