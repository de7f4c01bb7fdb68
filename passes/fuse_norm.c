/* fuse_norm.c - LayerNorm and RMSNorm written as primitive ops become one
 * LayerNormalization or RMSNormalization node.
 *
 * requires: inferred types and static shapes; cse (so the two reads of x
 *   and of the centered value are one value each).
 * provides: the pattern exporters write for LayerNorm before opset 17
 *     m = ReduceMean(x, axes = A)          A: the last k dims, keepdims
 *     c = Sub(x, m)
 *     p = Pow(c, 2)  or  Mul(c, c)
 *     v = ReduceMean(p, axes = A)
 *     e = Add(v, eps)                      eps: a constant scalar
 *     s = Sqrt(e)
 *     n = Div(c, s)
 *     [y = Mul(n, gamma)] [z = Add(y, beta)]   gamma, beta: constants that
 *                                          broadcast over the normalized dims
 *   is one LayerNormalization(x, gamma, beta){axis = rank - k, epsilon = eps}
 *   (gamma a constant of ones when the Mul is absent), float32 and float64
 *   only. Every intermediate must be read only inside the pattern, be no graph
 *   output and not be captured by a subgraph. Nine loops over x (and five
 *   intermediates in the arena) become the LayerNormalization kernel's one
 *   row pass (codegen/emit_nn.c), which computes the statistics in double.
 *   RMSNorm as exports write it (LLaMA, T5: no centering)
 *     p = Pow(x, 2) or Mul(x, x);  v = ReduceMean(p, axes = A);
 *     s = Sqrt(Add(v, eps));  n = Div(x, s) or Mul(x, Reciprocal(s)) or
 *     Mul(x, Div(1, s));  [y = Mul(n, gamma)]
 *   is one RMSNormalization(x, gamma){axis, epsilon}; x may have other
 *   readers (the residual stream), the intermediates may not.
 *   Then a LayerNormalization or RMSNormalization of an Add (the residual
 *   before the norm in transformer layers), all float32 of one shape, takes
 *   the Add's second operand as its last input, after the optional ones
 *   (LayerNormalization's 3, RMSNormalization's 2; onnxc.fused_inputs = 1): the
 *   kernel writes the row's sum to its output row and normalizes it there.
 * invalidates: schedule positions (the pattern's nodes go; the new node takes
 *   the last one's place).
 */
#include "passes.h"

#include <math.h>
#include <string.h>

/* The single consumer of v, or NULL when v has another use or is an output. */
static Node *sole_user(const Value *v, const Captured *cap) {
  if (v->n_uses != 1 || v->is_output || rewrite_is_captured(cap, v))
    return NULL;
  return v->uses[0];
}

/* Value of a constant scalar (any rank, one element) of a float type. */
static bool const_scalar(const Value *v, double *out) {
  if (v->kind != VK_CONST || !v->konst || v->konst->numel != 1 || !dtype_is_float(v->dt))
    return false;
  *out = tensor_get_f64(v->konst, 0);
  return true;
}

/* The operand of binary n that is not `self` (n's other input), or NULL when
 * self is not among n's first two inputs. */
static Value *other(const Node *n, const Value *self) {
  if (n->n_in != 2)
    return NULL;
  return n->in[0] == self ? n->in[1] : n->in[1] == self ? n->in[0] : NULL;
}

/* A ReduceMean over the last k dims of a rank-r input, keepdims: k, else 0. */
static int mean_suffix(const Node *n) {
  if (n->op != OP_ReduceMean || ir_attr_int(n, "keepdims", 1) != 1)
    return 0;
  int r = n->in[0]->shape.rank;
  bool mask[IR_MAX_RANK], noop = false;
  if (r < 1 || !infer_reduce_axes(n, r, mask, &noop) || noop)
    return 0;
  int k = 0;
  while (k < r && mask[r - 1 - k])
    k++;
  for (int i = 0; i < r - k; i++)
    if (mask[i])
      return 0;
  return k;
}

/* A parameter (gamma, beta) that broadcasts over the normalized dims only. */
static bool param_ok(const Value *p, const Value *x, int axis) {
  if (p->kind != VK_CONST || p->dt != x->dt)
    return false;
  int r = x->shape.rank;
  if (p->shape.rank > r)
    return false;
  for (int i = 0; i < p->shape.rank; i++) {
    int xi = r - p->shape.rank + i;
    int64_t d = p->shape.d[i];
    if (xi < axis ? d != 1 : (d != 1 && d != x->shape.d[xi]))
      return false;
  }
  return true;
}

/* The scale of a norm written without its Mul: a scalar 1 named after the
 * pattern's first node. */
static Value *ones_scale(Graph *g, DType dt, const char *stem) {
  Shape ps = shape_make(0, NULL);
  Tensor *one = ir_tensor_new(g, dt, &ps, NULL);
  tensor_set_f64(one, 0, 1.0);
  return ir_const_new(g, arena_printf(g->arena, "%s_scale", stem), one);
}

/* The norm node `op` over in[0] = x replaces the pattern ending in `last`:
 * it takes last's place and result, records the pattern's nodes (gone, last
 * first, NULL for the optional ones absent) as fused, and they go. */
static void replace_pattern(Graph *g, Node *last, OpKind op, const char *op_type, Value **in, int n_in, int axis,
                            double eps, Node **gone, int n_gone) {
  const Value *x = in[0];
  Node *nn = ir_node_insert(g, last, op, op_type,
                            arena_printf(g->arena, "%s_%s", last->name,
                                         op == OP_LayerNormalization ? "layernorm" : "rmsnorm"),
                            n_in, in, 1);
  ir_attr_set_int(nn, "axis", axis);
  ir_attr_add(nn, "epsilon", AT_FLOAT)->u.f = (float)eps;
  nn->out[0]->dt = x->dt;
  nn->out[0]->shape = x->shape;
  ir_value_replace(last->out[0], nn->out[0]);
  for (int i = n_gone - 1; i >= 0; i--)
    if (gone[i])
      rewrite_record_fused(nn, gone[i]);
  for (int i = 0; i < n_gone; i++)
    if (gone[i])
      ir_node_remove(gone[i]);
}

static bool try_layer_norm(Graph *g, Node *m, const Captured *cap) {
  Value *x = m->in[0];
  if ((x->dt != DT_F32 && x->dt != DT_F64) || !shape_is_static(&x->shape))
    return false;
  int k = mean_suffix(m);
  if (k == 0)
    return false;
  int axis = x->shape.rank - k;
  Node *sub = sole_user(m->out[0], cap);
  if (!sub || sub->op != OP_Sub || sub->in[0] != x || sub->in[1] != m->out[0])
    return false;
  Value *c = sub->out[0];
  /* read by the square (Pow, or Mul(c, c): two uses) and the Div only */
  if (c->n_uses < 2 || c->n_uses > 3 || c->is_output || rewrite_is_captured(cap, c))
    return false;
  Node *sq = NULL, *div = NULL;
  for (int u = 0; u < c->n_uses; u++) {
    Node *n = c->uses[u];
    double two;
    if (n->op == OP_Pow && n->in[0] == c && const_scalar(n->in[1], &two) && two == 2.0)
      sq = n;
    else if (n->op == OP_Mul && n->in[0] == c && n->in[1] == c)
      sq = n;
    else if (n->op == OP_Div && n->in[0] == c)
      div = n;
  }
  if (!sq || !div || c->n_uses != (sq->op == OP_Mul ? 3 : 2))
    return false;
  Node *var = sole_user(sq->out[0], cap);
  if (!var || mean_suffix(var) != k || var->in[0] != sq->out[0])
    return false;
  Node *add = sole_user(var->out[0], cap);
  double eps;
  Value *ev = add && add->op == OP_Add ? other(add, var->out[0]) : NULL;
  if (!ev || !const_scalar(ev, &eps) || !(eps >= 0))
    return false;
  Node *sqrt = sole_user(add->out[0], cap);
  if (!sqrt || sqrt->op != OP_Sqrt || sole_user(sqrt->out[0], cap) != div || div->in[1] != sqrt->out[0])
    return false;
  /* optional scale and shift */
  Node *last = div, *mul = NULL, *bias = NULL;
  Value *gamma = NULL, *beta = NULL;
  Node *n1 = sole_user(div->out[0], cap);
  if (n1 && n1->op == OP_Mul && (gamma = other(n1, div->out[0])) && param_ok(gamma, x, axis)) {
    mul = last = n1;
    Node *n2 = sole_user(mul->out[0], cap);
    if (n2 && n2->op == OP_Add && (beta = other(n2, mul->out[0])) && param_ok(beta, x, axis))
      bias = last = n2;
    else
      beta = NULL;
  } else {
    gamma = NULL;
  }
  if (!rewrite_same_shape(&last->out[0]->shape, &x->shape) || last->out[0]->dt != x->dt)
    return false;
  if (!gamma)
    gamma = ones_scale(g, x->dt, m->name);
  Value *in[3] = {x, gamma, beta ? beta : g->none};
  Node *gone[9] = {bias, mul, div, sqrt, add, var, sq, sub, m};
  replace_pattern(g, last, OP_LayerNormalization, "LayerNormalization", in, beta ? 3 : 2, axis, eps, gone, 9);
  return true;
}

/* RMSNorm as LLaMA/T5-style exports write it: the square (Pow(x, 2) or
 * Mul(x, x)) whose ReduceMean over the last k dims gets eps added and its Sqrt
 * taken, x divided by that (Div(x, s)) or multiplied by its reciprocal
 * (Mul(x, Reciprocal(s)) or Mul(x, Div(1, s)), either operand order), then
 * optionally times gamma. x may have other readers (the residual stream). */
static bool try_rms_norm(Graph *g, Node *var, const Captured *cap) {
  int k = mean_suffix(var);
  Value *p = var->in[0];
  if (k == 0 || p->kind != VK_NODE || !p->producer || sole_user(p, cap) != var)
    return false;
  Node *sq = p->producer;
  Value *x = sq->in[0];
  double two = 0;
  const Value *e2 = sq->n_in == 2 ? sq->in[1] : NULL;  /* an exponent of any numeric type */
  if (sq->op == OP_Pow && e2->kind == VK_CONST && e2->konst && e2->konst->numel == 1 && e2->dt != DT_STRING)
    two = tensor_get_f64(e2->konst, 0);
  if (!((sq->op == OP_Pow && two == 2.0) ||
        (sq->op == OP_Mul && sq->in[1] == x)))
    return false;
  if ((x->dt != DT_F32 && x->dt != DT_F64) || !shape_is_static(&x->shape) || var->out[0]->dt != x->dt)
    return false;
  int axis = x->shape.rank - k;
  Node *add = sole_user(var->out[0], cap);
  double eps;
  Value *ev = add && add->op == OP_Add ? other(add, var->out[0]) : NULL;
  if (!ev || !const_scalar(ev, &eps) || !(eps >= 0))
    return false;
  Node *sqrt = sole_user(add->out[0], cap);
  if (!sqrt || sqrt->op != OP_Sqrt)
    return false;
  Node *u = sole_user(sqrt->out[0], cap), *recip = NULL, *norm = NULL;
  double one = 0;
  if (u && u->op == OP_Div && u->in[0] == x && u->in[1] == sqrt->out[0]) {
    norm = u;
  } else if (u && ((u->op == OP_Reciprocal) ||
                   (u->op == OP_Div && u->in[1] == sqrt->out[0] && const_scalar(u->in[0], &one) && one == 1.0))) {
    recip = u;
    Node *m = sole_user(recip->out[0], cap);
    if (m && m->op == OP_Mul && other(m, recip->out[0]) == x && m->in[0] != m->in[1])
      norm = m;
  }
  if (!norm)
    return false;
  Node *last = norm, *mul = NULL;
  Value *gamma = NULL;
  Node *n1 = sole_user(norm->out[0], cap);
  if (n1 && n1->op == OP_Mul && (gamma = other(n1, norm->out[0])) && param_ok(gamma, x, axis))
    mul = last = n1;
  else
    gamma = NULL;
  if (!rewrite_same_shape(&last->out[0]->shape, &x->shape) || last->out[0]->dt != x->dt)
    return false;
  if (!gamma)
    gamma = ones_scale(g, x->dt, var->name);
  Value *in[2] = {x, gamma};
  Node *gone[7] = {mul, norm, recip, sqrt, add, var, sq};
  replace_pattern(g, last, OP_RMSNormalization, "RMSNormalization", in, 2, axis, eps, gone, 7);
  return true;
}

/* LayerNormalization/RMSNormalization(Add(a, b), ...), a, b and the output
 * float32 of one shape, the sum read only here: the Add goes, b becomes the
 * node's last input (onnxc.fused_inputs = 1) and the kernel adds it while
 * reading its rows. */
static void try_residual(Node *n, const Captured *cap) {
  Value *x = n->in[0];
  if (n->n_in > 3 || ir_attr(n, "onnxc.fused_inputs") || x->kind != VK_NODE || !x->producer ||
      x->producer->op != OP_Add || x->n_uses != 1 || x->is_output || rewrite_is_captured(cap, x) ||
      x->dt != DT_F32 || n->out[0]->dt != DT_F32)
    return;
  Node *add = x->producer;
  Value *a = add->in[0], *b = add->in[1];
  if (a->dt != DT_F32 || b->dt != DT_F32 || !rewrite_same_shape(&a->shape, &x->shape) ||
      !rewrite_same_shape(&b->shape, &x->shape))
    return;
  ir_node_set_input(n, 0, a);
  while (n->n_in < ir_ops[n->op].max_in)  /* the residual follows the optional inputs */
    ir_node_add_input(n, n->g->none);
  ir_node_add_input(n, b);
  ir_attr_set_int(n, "onnxc.fused_inputs", 1);
  rewrite_record_fused(n, add);
  ir_node_remove(add);
}

bool pass_fuse_norm(Graph *g, Diag *d) {
  (void)d;
  Captured cap = rewrite_captured(g);
  bool again = true;
  while (again) {
    again = false;
    for (Node *n = g->first; n && !again; n = n->next)
      if (n->op == OP_ReduceMean)
        again = try_layer_norm(g, n, &cap) || try_rms_norm(g, n, &cap);
  }
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (n->op == OP_LayerNormalization || n->op == OP_RMSNormalization)
      try_residual(n, &cap);
  }
  return true;
}
