/* simplify.c - algebraic clean-up: local rewrites that remove or merge nodes.
 *
 * requires: inferred types and shapes.
 * provides: no Identity; no inference Dropout whose mask is unused; no Cast or
 *   CastLike to the input's own type; no Transpose whose input is a Transpose,
 *   nor one with the identity permutation; no Reshape/Flatten/Squeeze/Unsqueeze
 *   that keeps its input's shape; chains of those collapsed into one Reshape
 *   whenever the final shape is static (or the last Reshape has a constant
 *   shape that does not copy dims); no Add/Sub of constant 0, Mul/Div by
 *   constant 1 whose result is the other operand (same type and shape); no
 *   float Pow by constant 2 (a Mul of x by itself instead).
 * invalidates: schedule positions (nodes go); graph output values may become
 *   an input, a constant or another node's value (codegen copies then).
 * One walk in schedule order suffices: each rule reads only the node and its
 * producers, which come earlier and are already in final form. A rewritten
 * node keeps its output value; a removed node's users read its input. Nodes
 * left without users are dce's to remove. Values a subgraph captures are
 * never replaced (rewrite_captured).
 */
#include "passes.h"

#include <string.h>

static bool produced_by(const Value *v, OpKind op) {
  return v->kind == VK_NODE && v->producer && v->producer->op == op;
}

/* ---- forwarding ops: Identity, Dropout, same-type Cast -------------------- */

static bool const_false(const Value *v) {
  return v->kind == VK_CONST && v->konst->numel == 1 && tensor_get_i64(v->konst, 0) == 0;
}

static bool const_zero(const Value *v) {
  return v->kind == VK_CONST && v->konst->numel == 1 && tensor_get_f64(v->konst, 0) == 0.0;
}

/* A Slice (opset 10+: starts, ends, axes and steps as inputs) whose result is
 * its whole input: the same static shape, every step 1 (tf2onnx writes one
 * after each Conv of a Keras Conv1D). */
static bool slice_keeps_all(const Node *n) {
  const Shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  if (n->n_in < 3 || !shape_is_static(x) || !shape_equal(x, y))
    return false;
  if (ir_has_input(n, 4)) {
    const Value *st = n->in[4];
    if (st->kind != VK_CONST || !st->konst)
      return false;
    for (int64_t i = 0; i < st->konst->numel; i++)
      if (tensor_get_i64(st->konst, i) != 1)
        return false;
  }
  return true;
}

static bool forwards_input(const Node *n) {
  switch (n->op) {
  case OP_Identity:
    /* not the one that gives a data-dependent extent its symbol (infer.c) */
    return shape_equal(&n->in[0]->shape, &n->out[0]->shape);
  case OP_Dropout:
    /* Only inference Dropout forwards: training must be provably off
     * (no training_mode input or a constant false) or the ratio a constant 0. */
    if (ir_has_input(n, 2) && !const_false(n->in[2]) && !(ir_has_input(n, 1) && const_zero(n->in[1])))
      return false;
    return n->n_out < 2 || n->out[1]->kind == VK_NONE ||
           (n->out[1]->n_uses == 0 && !n->out[1]->is_output);
  case OP_Cast:
  case OP_CastLike:
    return n->out[0]->dt != DT_UNDEF && n->out[0]->dt == n->in[0]->dt;
  case OP_Slice:
    return slice_keeps_all(n);
  default:
    return false;
  }
}

/* ---- Transpose pairs -------------------------------------------------------- */

/* The permutation of Transpose t over an input of rank r (default: reversed). */
static bool perm_of(const Node *t, int r, int64_t *p) {
  int count;
  const int64_t *perm = ir_attr_ints(t, "perm", &count);
  if (perm && count != r)
    return false;
  for (int j = 0; j < r; j++)
    p[j] = perm ? perm[j] : r - 1 - j;
  return true;
}

/* Transpose(Transpose(x, p1), p2) is Transpose(x, c) with c[j] = p1[p2[j]]
 * (output dim j of a Transpose is input dim perm[j]). Returns the value to
 * forward to when the composed permutation is the identity, else NULL. */
static Value *transpose(Node *n) {
  Value *x = n->in[0];
  int r = x->shape.rank;
  int64_t p2[IR_MAX_RANK], c[IR_MAX_RANK];
  if (r < 0 || !perm_of(n, r, p2))
    return NULL;
  bool pair = produced_by(x, OP_Transpose);
  if (pair) {
    Node *t1 = x->producer;
    int64_t p1[IR_MAX_RANK];
    if (t1->in[0]->shape.rank != r || !perm_of(t1, r, p1))
      return NULL;
    for (int j = 0; j < r; j++)
      c[j] = p1[p2[j]];
    x = t1->in[0];
  } else {
    memcpy(c, p2, (size_t)r * sizeof c[0]);
  }
  bool identity = true;
  for (int j = 0; j < r; j++)
    identity &= c[j] == j;
  if (identity)
    return x;
  if (pair) {
    ir_node_set_input(n, 0, x);
    ir_attr_set_ints(n, "perm", c, r);
  }
  return NULL;
}

/* ---- reshape chains ---------------------------------------------------------- */

static bool reshape_like(const Value *v) {
  if (v->kind != VK_NODE || !v->producer)
    return false;
  OpKind op = v->producer->op;
  return op == OP_Reshape || op == OP_Flatten || op == OP_Squeeze || op == OP_Unsqueeze;
}

/* A Reshape whose shape input is constant and whose result therefore does not
 * depend on its input's dims: no 0 entry copies one (unless allowzero). */
static bool reshape_is_absolute(const Node *n) {
  if (n->op != OP_Reshape || !ir_has_input(n, 1) || n->in[1]->kind != VK_CONST)
    return false;
  if (n->g->opset >= 14 && ir_attr_int(n, "allowzero", 0) != 0)
    return true;
  const Tensor *t = n->in[1]->konst;
  for (int64_t i = 0; i < t->numel; i++)
    if (tensor_get_i64(t, i) == 0)
      return false;
  return true;
}

/* Turns n (any reshape-like op) into Reshape(x, constant shape of its output). */
static void become_reshape(Node *n, Value *x) {
  const Shape *ys = &n->out[0]->shape;
  Value *shape = rewrite_const_i64(n->g, arena_printf(n->g->arena, "%s_shape", n->name), ys->d, ys->rank);
  n->op = OP_Reshape;
  n->op_type = "Reshape";
  n->n_attrs = 0;
  ir_node_set_input(n, 0, x);
  if (n->n_in < 2)
    ir_node_add_input(n, shape);
  else
    ir_node_set_input(n, 1, shape);
}

/* n is reshape-like. Returns the value to forward to when n keeps the shape
 * of its (chain's) input; else collapses a chain into n when it can. */
static Value *reshape_chain(Node *n) {
  const Value *y = n->out[0];
  if (rewrite_same_shape(&n->in[0]->shape, &y->shape))
    return n->in[0];
  if (!reshape_like(n->in[0]))
    return NULL;
  Value *root = n->in[0];
  while (reshape_like(root))
    root = root->producer->in[0];
  if (rewrite_same_shape(&root->shape, &y->shape))
    return root;
  int64_t numel;
  if (reshape_is_absolute(n))
    ir_node_set_input(n, 0, root);
  else if (shape_numel(&y->shape, &numel) && numel > 0)
    become_reshape(n, root);
  return NULL;
}

/* ---- neutral constants: x + 0, x - 0, x * 1, x / 1 ------------------------------ */

static bool all_equal(const Value *c, double want) {
  if (c->kind != VK_CONST)
    return false;
  DType t = c->dt;
  bool numeric = t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64 ||
                 (dtype_is_int(t) && dtype_bits(t) >= 8);
  if (!numeric)
    return false;
  for (int64_t i = 0; i < c->konst->numel; i++)
    if (tensor_get_f64(c->konst, i) != want)
      return false;
  return true;
}

/* The operand that n returns unchanged, or NULL. The other operand must not
 * broadcast it to a larger shape. (x + 0 turns -0.0 into +0.0; the two
 * compare equal, and no model output depends on the sign of a zero sum.) */
static Value *neutral(const Node *n) {
  double unit = n->op == OP_Add || n->op == OP_Sub ? 0.0 : 1.0;
  bool comm = n->op == OP_Add || n->op == OP_Mul;
  Value *keep = NULL;
  if (all_equal(n->in[1], unit))
    keep = n->in[0];
  else if (comm && all_equal(n->in[0], unit))
    keep = n->in[1];
  if (keep && keep->dt == n->out[0]->dt && rewrite_same_shape(&keep->shape, &n->out[0]->shape))
    return keep;
  return NULL;
}

/* ---- x ^ 2 -> x * x ------------------------------------------------------------ */

/* Pow(x, 2) of a float x becomes Mul(x, x): the same value (pow is exact
 * there: one rounding of the square), without a call to pow per element
 * (Silero VAD's spectrum magnitude, variances written as primitives). The
 * exponent must not broadcast x to a larger shape. */
static void square(Node *n) {
  Value *x = n->in[0];
  DType t = x->dt;
  bool fl = t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64;
  if (!fl || n->n_in != 2 || n->out[0]->dt != t || !all_equal(n->in[1], 2.0) || n->in[1]->konst->numel < 1 ||
      !rewrite_same_shape(&x->shape, &n->out[0]->shape))
    return;
  n->op = OP_Mul;
  n->op_type = "Mul";
  ir_node_set_input(n, 1, x);
}

/* ---- squeeze-like reshapes sunk below elementwise nodes ------------------------- */

/* A reshape-like node whose static input and output shapes differ only in
 * dims of extent 1 (a Squeeze or an Unsqueeze, whatever op wrote it). */
static bool squeeze_like(const Node *r) {
  if ((r->op != OP_Reshape && r->op != OP_Squeeze && r->op != OP_Unsqueeze && r->op != OP_Flatten) ||
      r->n_out != 1)
    return false;
  const Shape *a = &r->in[0]->shape, *b = &r->out[0]->shape;
  if (!shape_is_static(a) || !shape_is_static(b))
    return false;
  int i = 0, j = 0;
  for (;;) {
    while (i < a->rank && a->d[i] == 1)
      i++;
    while (j < b->rank && b->d[j] == 1)
      j++;
    if (i == a->rank || j == b->rank)
      return i == a->rank && j == b->rank;
    if (a->d[i++] != b->d[j++])
      return false;
  }
}

/* c (broadcast against `to`) as the same data broadcast against `from`, where
 * a squeeze-like reshape takes `from` to `to`: each dim of `from` above 1 takes
 * the extent c has at the matching dim of `to`. NULL when c does not fit. */
static Value *rebroadcast(Graph *g, const Node *at, const Value *c, const Shape *from, const Shape *to) {
  if (c->konst->numel == 1)
    return (Value *)c;
  const Shape *cs = &c->shape;
  if (cs->rank > to->rank)
    return NULL;
  int64_t dims[IR_MAX_RANK];
  int j = 0;
  for (int i = 0; i < from->rank; i++) {
    dims[i] = 1;
    if (from->d[i] == 1)
      continue;
    while (j < to->rank && to->d[j] == 1) {
      int k = j - (to->rank - cs->rank);
      if (k >= 0 && cs->d[k] != 1)
        return NULL;
      j++;
    }
    int k = j - (to->rank - cs->rank);
    dims[i] = k >= 0 ? cs->d[k] : 1;
    j++;
  }
  Shape s = shape_make(from->rank, dims);
  Tensor *t = ir_tensor_new(g, c->dt, &s, NULL);
  IR_ASSERT(t && t->nbytes == c->konst->nbytes);
  memcpy(t->data, c->konst->data, (size_t)t->nbytes);
  return ir_const_new(g, arena_printf(g->arena, "%s_%s", at->name, c->name), t);
}

/* E(R(y), c...) with R squeeze-like and y made by a Conv (or by an
 * elementwise node: the chain after it) becomes R'(E(y, c'...)), c' the
 * constants broadcast against y: the elementwise chain then meets the Conv,
 * so fuse-bn folds a bias Add into it and fuse-elementwise stores the rest
 * as its epilogue (tf2onnx's Keras Conv1D: Conv, Squeeze, BiasAdd,
 * activation). Every non-constant operand must come through such a reshape
 * from values of one shape. Returns whether n was rewritten (it is then the
 * Reshape R'). */
static bool sink_reshape(Node *n, const Captured *cap, Diag *d) {
  Graph *g = n->g;
  if (!ir_ops[n->op].expr || n->n_out != 1 || n->n_in < 1 || n->n_in > 3 || !ir_has_input(n, 0) ||
      rewrite_is_captured(cap, n->out[0]) || !shape_is_static(&n->out[0]->shape))
    return false;
  const Shape *so = &n->out[0]->shape, *si = NULL;
  Value *in[3];
  for (int i = 0; i < n->n_in; i++) {
    Value *v = n->in[i];
    if (!ir_has_input(n, i))
      return false;
    if (v->kind == VK_CONST) {
      if (!v->konst || v->dt == DT_STRING)
        return false;
      continue;
    }
    Node *r = v->kind == VK_NODE ? v->producer : NULL;
    if (!r || !squeeze_like(r) || !shape_equal(&v->shape, so))
      return false;
    Value *y = r->in[0];
    const Node *p = y->kind == VK_NODE ? y->producer : NULL;
    if (!p || (p->op != OP_Conv && p->op != OP_ConvTranspose && !ir_ops[p->op].expr) || p->n_out != 1)
      return false;
    if (si && !shape_equal(si, &y->shape))
      return false;
    si = &y->shape;
    in[i] = y;
  }
  if (!si || shape_equal(si, so))
    return false;
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i]->kind == VK_CONST && !(in[i] = rebroadcast(g, n, n->in[i], si, so)))
      return false;
  Node *e = ir_node_insert(g, n, n->op, n->op_type, arena_printf(g->arena, "%s_unsqueezed", n->name), n->n_in,
                           in, 1);
  for (int a = 0; a < n->n_attrs; a++)
    *ir_attr_add(e, n->attrs[a].name, n->attrs[a].kind) = n->attrs[a];
  if (!infer_node(e, d) || !shape_equal(&e->out[0]->shape, si) || e->out[0]->dt != n->out[0]->dt) {
    ir_node_remove(e);
    return false;
  }
  Node *old[3] = {0};
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i]->kind == VK_NODE)
      old[i] = n->in[i]->producer;
  /* n becomes Reshape(e's result): its operands (a Clip's bounds too) let go */
  for (int i = n->n_in - 1; i >= 1; i--)
    ir_node_set_input(n, i, g->none);
  n->n_in = 1;
  become_reshape(n, e->out[0]);
  for (int i = 0; i < 3; i++) /* the reshapes only n read: gone now, so the Conv has one reader */
    if (old[i] && old[i]->out[0]->n_uses == 0 && !old[i]->out[0]->is_output &&
        !rewrite_is_captured(cap, old[i]->out[0])) {
      for (int k = i + 1; k < 3; k++)
        if (old[k] == old[i])
          old[k] = NULL;
      ir_node_remove(old[i]);
    }
  return true;
}

/* ---- the pass ------------------------------------------------------------------- */

/* Applies the node's rule: rewrites n in place, or returns the value that
 * replaces n's output (NULL: n stays). */
static Value *simplify_node(Node *n) {
  if (forwards_input(n))
    return n->in[0];
  switch (n->op) {
  case OP_Transpose:
    return transpose(n);
  case OP_Reshape:
  case OP_Flatten:
  case OP_Squeeze:
  case OP_Unsqueeze:
    return reshape_chain(n);
  case OP_Add:
  case OP_Sub:
  case OP_Mul:
  case OP_Div:
    return neutral(n);
  case OP_Pow:
    square(n);
    return NULL;
  default:
    return NULL;
  }
}

bool pass_simplify(Graph *g, Diag *d) {
  Captured cap = rewrite_captured(g);
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (sink_reshape(n, &cap, d))
      continue;
    Value *by = simplify_node(n);
    if (!by || rewrite_is_captured(&cap, n->out[0]))
      continue;
    bool extras_used = false;
    for (int i = 1; i < n->n_out; i++)
      extras_used |= n->out[i]->kind != VK_NONE && (n->out[i]->n_uses > 0 || n->out[i]->is_output);
    if (!extras_used)
      rewrite_forward(n, by);
  }
  return true;
}
