/* lower_flex.c - FlexAttention with score_mod / prob_mod turned into plain
 * dataflow (called by the walk of lower_control.c when it reaches such a node).
 *
 * The modifier subgraphs take the whole (B, Hq, L, S) score or probability
 * tensor and may hold any op, so the node becomes, as in the spec and in the
 * reference (onnx/reference/ops/op_flex_attention.py):
 *   c = sqrt(scale) in the input type T; S = (Q*c) @ Transpose(K*c)
 *   S = Cast(S, C); S = score_mod(S); P = Softmax(S, -1); P = prob_mod(P)
 *   Y = Cast(P @ Cast(V, C), T)
 * with C the softmax precision (f32, f64 for f64 inputs). GQA (Hq = r * Hkv)
 * needs no copy of K and V: query head h = g*r + i is row block i of kv head g,
 * so Q reshapes to (B, Hkv, r*L, E) and the scores back to (B, Hq, L, S).
 * The subgraphs are inlined with lower_inline; the subgraph-free form keeps
 * its own kernel (emit_attention.c). See docs/attention.md.
 */
#include "lower_internal.h"

#include <math.h>

bool lower_flex_wanted(const Node *n) {
  return n->op == OP_FlexAttention && (ir_attr(n, "score_mod") || ir_attr(n, "prob_mod"));
}

static Value *add(Lower *L, Node *n, OpKind op, const char *tag, int n_in, Value *const *in) {
  return lower_node(L, n, op, arena_printf(L->g->arena, "%s_%s", n->name, tag), n_in, in)->out[0];
}

static Value *cast(Lower *L, Node *n, const char *tag, Value *x, DType to) {
  Node *c = lower_node(L, n, OP_Cast, arena_printf(L->g->arena, "%s_%s", n->name, tag), 1, &x);
  ir_attr_set_int(c, "to", to);
  return c->out[0];
}

/* Reshape x to (dim 0 of x, heads, -1, dim 3 of x). */
static Value *regroup(Lower *L, Node *n, const char *tag, Value *x, int64_t heads) {
  int64_t dims[4] = {0, heads, -1, 0};
  Value *in[2] = {x, rewrite_const_i64(L->g, arena_printf(L->g->arena, "%s_%s_shape", n->name, tag), dims, 4)};
  return add(L, n, OP_Reshape, tag, 2, in);
}

/* The graph attribute `name`, NULL when absent; *ok false after an error. */
static Graph *modifier(Lower *L, Node *n, const char *name, bool *ok) {
  const Attr *a = ir_attr(n, name);
  if (!a)
    return NULL;
  if (a->kind != AT_GRAPH || !a->u.g || a->u.g->n_inputs != 1 || a->u.g->n_outputs != 1) {
    *ok = diag_error(L->d, n, "attribute '%s' must be a graph with one input and one output", name);
    return NULL;
  }
  return a->u.g;
}

/* Inlines modifier sub on x (of type C and the scores' shape); the result
 * must keep that shape, and is cast to C as the reference does. */
static Value *apply(Lower *L, Node *n, Graph *sub, const char *name, Value *x, DType C) {
  Value *r = NULL;
  if (!lower_flush(L, n) || !lower_inline(L, sub, n, &x, &r, NULL))
    return NULL;
  r = lower_resolve(L, r);
  if (lower_seq(L, r)) {
    diag_error(L->d, n, "%s gives a sequence, expected a tensor", name);
    return NULL;
  }
  bool same = r->shape.rank < 0 || x->shape.rank < 0 || r->shape.rank == x->shape.rank;
  for (int i = 0; same && i < r->shape.rank && i < x->shape.rank; i++)
    same = r->shape.d[i] < 0 || x->shape.d[i] < 0 || r->shape.d[i] == x->shape.d[i];
  if (!same) {
    char a[128], b[128];
    diag_error(L->d, n, "%s gives shape %s, expected the scores' shape %s", name,
               shape_str(&r->shape, a, sizeof a), shape_str(&x->shape, b, sizeof b));
    return NULL;
  }
  if (r->dt == C)
    return r;
  r = cast(L, n, arena_printf(L->g->arena, "%s_cast", name), r, C);
  return lower_flush(L, n) ? r : NULL;
}

/* The softmax precision: attribute softmax_precision, else f32 (f64 for f64). */
static bool precision(Lower *L, Node *n, DType t, DType *out) {
  int64_t p = ir_attr_int(n, "softmax_precision", t == DT_F64 ? DT_F64 : DT_F32);
  if (p != DT_F32 && p != DT_F64 && p != DT_F16 && p != DT_BF16)
    return diag_error(L->d, n, "softmax_precision %lld is not f16, bf16, f32 or f64", (long long)p);
  *out = (DType)p;
  return true;
}

bool lower_flex(Lower *L, Node *n) {
  if (!flex_attention_check(n, L->d))
    return false;
  bool ok = true;
  Graph *smod = modifier(L, n, "score_mod", &ok), *pmod = modifier(L, n, "prob_mod", &ok);
  DType C = DT_F32;
  if (!ok || !precision(L, n, n->in[0]->dt, &C))
    return false;
  Value *q = n->in[0], *k = n->in[1], *v = n->in[2];
  DType T = q->dt;
  int64_t hq = q->shape.d[1], hkv = k->shape.d[1], e = q->shape.d[3];
  bool gqa = hq != hkv;
  if (gqa && (hq < 0 || hkv < 0))
    return diag_error(L->d, n, "the head counts of Q and K must be static to lower the modifier subgraphs");
  const Attr *sa = ir_attr(n, "scale");
  if (!sa && e < 0)
    return diag_error(L->d, n, "the head size must be static when no scale is given");
  /* The reference rounds the scale to f32, takes its root in f32, then rounds to T. */
  float scale = sa ? ir_attr_float(n, "scale", 1.0f) : (float)(1.0 / sqrt((double)e));
  Shape s0 = shape_scalar();
  Tensor *ct = ir_tensor_new(L->g, T, &s0, L->d);
  if (!ct)
    return false;
  tensor_set_f64(ct, 0, sqrtf(scale));
  Value *c = ir_const_new(L->g, arena_printf(L->g->arena, "%s_sqrt_scale", n->name), ct);

  Value *in[2] = {q, c};
  Value *qs = add(L, n, OP_Mul, "q_scaled", 2, in);
  in[0] = k;
  Value *ks = add(L, n, OP_Mul, "k_scaled", 2, in);
  Node *tr = lower_node(L, n, OP_Transpose, arena_printf(L->g->arena, "%s_kt", n->name), 1, &ks);
  int64_t perm[4] = {0, 1, 3, 2};
  ir_attr_set_ints(tr, "perm", perm, 4);
  in[0] = gqa ? regroup(L, n, "q_grouped", qs, hkv) : qs;
  in[1] = tr->out[0];
  Value *s = add(L, n, OP_MatMul, "qk", 2, in);
  if (gqa)
    s = regroup(L, n, "scores", s, hq);
  if (C != T)
    s = cast(L, n, "scores_cast", s, C);
  if (!lower_flush(L, n))
    return false;
  if (smod && !(s = apply(L, n, smod, "score_mod", s, C)))
    return false;

  Node *sm = lower_node(L, n, OP_Softmax, arena_printf(L->g->arena, "%s_softmax", n->name), 1, &s);
  ir_attr_set_int(sm, "axis", 3);   /* the last axis, also under opset < 13's 2-D coercion */
  Value *p = sm->out[0];
  if (pmod && !(p = apply(L, n, pmod, "prob_mod", p, C)))
    return false;

  in[0] = gqa ? regroup(L, n, "probs_grouped", p, hkv) : p;
  in[1] = C != T ? cast(L, n, "v_cast", v, C) : v;
  Value *y = add(L, n, OP_MatMul, "pv", 2, in);
  if (gqa)
    y = regroup(L, n, "out", y, hq);
  if (C != T)
    y = cast(L, n, "out_cast", y, T);
  if (!lower_flush(L, n))
    return false;
  lower_forward(L, n->out[0], y);
  return true;
}
