/* lower_gradient.c - the Gradient operator (ai.onnx.preview.training) as
 * plain dataflow, by reverse-mode differentiation at compile time.
 *
 * Gradient(xs..., attributes xs = names, y = name) outputs dy/dx for each x:
 * the derivative of sum(y) with respect to x, of x's shape. After inference
 * (every shape known), this pass walks the nodes between the xs and y in
 * reverse order, seeding y with ones, and emits the adjoint of each node as
 * ordinary nodes (Mul, Div, Transpose, MatMul, ReduceSum...), summing the
 * contributions a value receives from several uses and reducing broadcast
 * axes back to the operand's shape. The new nodes are inferred as they are
 * made, the Gradient node's outputs are replaced by the results and the
 * graph is re-sorted.
 *
 * Differentiable ops: Add, Sub, Mul, Div, Neg, Identity, Relu, Sigmoid,
 * Tanh, Exp, Log, Sqrt and 2-D MatMul. Any other op between an x and y is an
 * error naming it. An x that y does not depend on gets zeros.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct Grad {
  Graph *g;
  Node *at;        /* the Gradient node (names, messages) */
  Diag *d;
  Value **adj;     /* by value id: accumulated gradient, or NULL */
  int counter;
  bool ok;
} Grad;

static Node *mk(Grad *G, OpKind op, int n_in, Value *const *in) {
  const char *name = arena_printf(G->g->arena, "%s/d%d", G->at->name, G->counter++);
  Node *n = ir_node_new(G->g, op, NULL, name, n_in, in, 1);
  if (!infer_node(n, G->d))
    G->ok = false;
  return n;
}

static Value *op1(Grad *G, OpKind op, Value *a) { return mk(G, op, 1, &a)->out[0]; }

static Value *op2(Grad *G, OpKind op, Value *a, Value *b) {
  Value *in[2] = {a, b};
  return mk(G, op, 2, in)->out[0];
}

static Value *filled(Grad *G, DType dt, const Shape *s, double v) {
  Tensor *t = ir_tensor_new(G->g, dt, s, G->d);
  if (!t) {
    G->ok = false;
    return NULL;
  }
  for (int64_t i = 0; i < t->numel; i++)
    tensor_set_f64(t, i, v);
  return ir_const_new(G->g, arena_printf(G->g->arena, "%s/c%d", G->at->name, G->counter++), t);
}

/* Sums g (a gradient of the broadcast result's shape) down to x's shape. */
static Value *unbroadcast(Grad *G, Value *g, const Value *x) {
  const Shape *gs = &g->shape, *xs = &x->shape;
  if (!G->ok || shape_equal(gs, xs))
    return g;
  int64_t axes[IR_MAX_RANK];
  int na = 0, lead = gs->rank - xs->rank;
  for (int i = 0; i < gs->rank; i++)
    if (i < lead || (xs->d[i - lead] == 1 && gs->d[i] != 1))
      axes[na++] = i;
  Value *r = g;
  if (na) {
    Node *n;
    if (G->g->opset >= 13) {
      Value *in[2] = {g, rewrite_const_i64(G->g, arena_printf(G->g->arena, "%s/axes%d", G->at->name,
                                                               G->counter++), axes, na)};
      const char *name = arena_printf(G->g->arena, "%s/d%d", G->at->name, G->counter++);
      n = ir_node_new(G->g, OP_ReduceSum, NULL, name, 2, in, 1);
    } else {
      const char *name = arena_printf(G->g->arena, "%s/d%d", G->at->name, G->counter++);
      n = ir_node_new(G->g, OP_ReduceSum, NULL, name, 1, &g, 1);
      ir_attr_set_ints(n, "axes", axes, na);
    }
    ir_attr_set_int(n, "keepdims", 1);
    if (!infer_node(n, G->d))
      G->ok = false;
    r = n->out[0];
  }
  int64_t dims[IR_MAX_RANK];
  for (int i = 0; i < xs->rank; i++)
    dims[i] = xs->d[i];
  Value *shape = rewrite_const_i64(G->g, arena_printf(G->g->arena, "%s/shape%d", G->at->name,
                                                      G->counter++), dims, xs->rank);
  return op2(G, OP_Reshape, r, shape);
}

static void accumulate(Grad *G, Value *x, Value *g) {
  if (!G->ok || !g || x->id < 0) /* an omitted input ("") takes no gradient */
    return;
  g = unbroadcast(G, g, x);
  G->adj[x->id] = G->adj[x->id] ? op2(G, OP_Add, G->adj[x->id], g) : g;
}

static Value *transpose2(Grad *G, Value *a) {
  Node *n = ir_node_new(G->g, OP_Transpose, NULL,
                        arena_printf(G->g->arena, "%s/d%d", G->at->name, G->counter++), 1, &a, 1);
  const int64_t perm[2] = {1, 0};
  ir_attr_set_ints(n, "perm", perm, 2);
  if (!infer_node(n, G->d))
    G->ok = false;
  return n->out[0];
}

/* Adds the adjoint of n (its output's gradient gy) to its inputs' gradients. */
static void backprop(Grad *G, Node *n, Value *gy) {
  Value *a = n->in[0], *b = n->n_in > 1 ? n->in[1] : NULL, *y = n->out[0];
  switch (n->op) {
  case OP_Add:
    accumulate(G, a, gy);
    accumulate(G, b, gy);
    break;
  case OP_Sub:
    accumulate(G, a, gy);
    accumulate(G, b, op1(G, OP_Neg, gy));
    break;
  case OP_Mul:
    accumulate(G, a, op2(G, OP_Mul, gy, b));
    accumulate(G, b, op2(G, OP_Mul, gy, a));
    break;
  case OP_Div: /* d(a/b) = ga/b - g*a/b^2 */
    accumulate(G, a, op2(G, OP_Div, gy, b));
    accumulate(G, b, op1(G, OP_Neg, op2(G, OP_Div, op2(G, OP_Mul, gy, y), b)));
    break;
  case OP_Neg:
    accumulate(G, a, op1(G, OP_Neg, gy));
    break;
  case OP_Identity:
    accumulate(G, a, gy);
    break;
  case OP_Relu: {
    Value *zero = filled(G, a->dt, &(Shape){0}, 0.0);
    Value *mask = op2(G, OP_Greater, a, zero);
    Node *c = ir_node_new(G->g, OP_Cast, NULL,
                          arena_printf(G->g->arena, "%s/d%d", G->at->name, G->counter++), 1, &mask, 1);
    ir_attr_set_int(c, "to", a->dt);
    if (!infer_node(c, G->d))
      G->ok = false;
    accumulate(G, a, op2(G, OP_Mul, gy, c->out[0]));
    break;
  }
  case OP_Sigmoid: { /* s (1 - s) */
    Value *one = filled(G, a->dt, &(Shape){0}, 1.0);
    accumulate(G, a, op2(G, OP_Mul, gy, op2(G, OP_Mul, y, op2(G, OP_Sub, one, y))));
    break;
  }
  case OP_Tanh: { /* 1 - t^2 */
    Value *one = filled(G, a->dt, &(Shape){0}, 1.0);
    accumulate(G, a, op2(G, OP_Mul, gy, op2(G, OP_Sub, one, op2(G, OP_Mul, y, y))));
    break;
  }
  case OP_Exp:
    accumulate(G, a, op2(G, OP_Mul, gy, y));
    break;
  case OP_Log:
    accumulate(G, a, op2(G, OP_Div, gy, a));
    break;
  case OP_Sqrt: { /* 1 / (2 sqrt(a)) */
    Value *two = filled(G, a->dt, &(Shape){0}, 2.0);
    accumulate(G, a, op2(G, OP_Div, gy, op2(G, OP_Mul, two, y)));
    break;
  }
  case OP_MatMul:
    if (a->shape.rank != 2 || b->shape.rank != 2) {
      diag_error(G->d, G->at, "cannot differentiate node '%s' (MatMul): only 2-D operands are supported",
                 n->name);
      G->ok = false;
      return;
    }
    accumulate(G, a, op2(G, OP_MatMul, gy, transpose2(G, b)));
    accumulate(G, b, op2(G, OP_MatMul, transpose2(G, a), gy));
    break;
  default:
    diag_error(G->d, G->at, "cannot differentiate node '%s' (%s) on the way from xs to y", n->name,
               ir_ops[n->op].name);
    G->ok = false;
  }
}

static bool lower_one(Graph *g, Node *gn, Diag *d) {
  int nx = 0;
  const Attr *xa = ir_attr(gn, "xs");
  const char *yname = ir_attr_str(gn, "y", NULL);
  if (!xa || xa->kind != AT_STRINGS || !yname)
    return diag_error(d, gn, "needs the attributes xs (strings) and y (string)");
  nx = xa->n;
  if (nx != gn->n_out)
    return diag_error(d, gn, "has %d outputs for %d names in xs", gn->n_out, nx);
  Value *yv = ir_value_find(g, yname);
  if (!yv)
    return diag_error(d, gn, "y names '%s', which is not a value of the graph", yname);
  if (!dtype_is_float(yv->dt) || !shape_is_static(&yv->shape))
    return diag_error(d, gn, "y ('%s') must be a floating-point tensor of static shape", yname);

  Grad G = {g, gn, d, calloc((size_t)g->n_values + 1, sizeof(Value *)), 0, true};
  IR_ASSERT(G.adj != NULL);
  int n_before = g->n_values;

  /* Nodes that depend on some x: forward from the xs in graph order. */
  bool *dep = calloc((size_t)g->n_values + 1, sizeof(bool));
  IR_ASSERT(dep != NULL);
  Value **xv = calloc((size_t)(nx ? nx : 1), sizeof(Value *));
  IR_ASSERT(xv != NULL);
  for (int i = 0; i < nx; i++) {
    xv[i] = ir_value_find(g, xa->u.ss[i]);
    if (!xv[i]) {
      diag_error(d, gn, "xs[%d] names '%s', which is not a value of the graph", i, xa->u.ss[i]);
      G.ok = false;
      continue;
    }
    dep[xv[i]->id] = true;
  }
  int n_nodes = 0;
  for (Node *n = g->first; n; n = n->next)
    n_nodes++;
  Node **order = calloc((size_t)(n_nodes ? n_nodes : 1), sizeof(Node *));
  IR_ASSERT(order != NULL);
  int k = 0;
  for (Node *n = g->first; n; n = n->next) {
    order[k++] = n;
    if (n == gn)
      continue;
    bool any = false;
    /* an omitted input or output ("") is the graph's shared none value, id -1 */
    for (int i = 0; i < n->n_in; i++)
      any = any || (n->in[i]->id >= 0 && n->in[i]->id < n_before && dep[n->in[i]->id]);
    if (any)
      for (int j = 0; j < n->n_out; j++)
        if (n->out[j] && n->out[j]->id >= 0 && n->out[j]->id < n_before)
          dep[n->out[j]->id] = true;
  }

  if (G.ok) {
    G.adj[yv->id] = filled(&G, yv->dt, &yv->shape, 1.0);
    /* Reverse order: a node's output gradient is complete before its adjoint. */
    for (int i = k - 1; i >= 0 && G.ok; i--) {
      Node *n = order[i];
      if (n == gn || n->n_out < 1 || !n->out[0] || n->out[0]->id < 0 || n->out[0]->id >= n_before)
        continue;
      Value *gy = G.adj[n->out[0]->id];
      if (!gy)
        continue;
      bool any = false;
      for (int j = 0; j < n->n_in; j++)
        any = any || (n->in[j]->id >= 0 && n->in[j]->id < n_before && (dep[n->in[j]->id] || G.adj[n->in[j]->id]));
      if (!any)
        continue;
      if (n->n_out != 1) {
        diag_error(d, gn, "cannot differentiate node '%s' (%s): it has several outputs", n->name,
                   ir_ops[n->op].name);
        G.ok = false;
        break;
      }
      backprop(&G, n, gy);
    }
  }
  if (G.ok) {
    for (int i = 0; i < nx; i++) {
      Value *r = G.adj[xv[i]->id];
      if (!r)
        r = filled(&G, xv[i]->dt, &xv[i]->shape, 0.0);
      else if (r == xv[i] || r->kind != VK_NODE)
        r = op1(&G, OP_Identity, r);   /* an output of its own, not an alias */
      if (r && G.ok && gn->out[i])
        ir_value_replace(gn->out[i], r);
    }
  }
  free(order);
  free(xv);
  free(dep);
  free(G.adj);
  if (!G.ok)
    return false;
  ir_node_remove(gn);
  return true;
}

bool pass_lower_gradient(Graph *g, Diag *d) {
  bool any = false, ok = true;
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (n->op == OP_Gradient) {
      ok = lower_one(g, n, d) && ok;
      any = true;
    }
  }
  return ok && (!any || ir_toposort(g, d));
}

/* The hooks: inference gives each output its x's type and shape; emission
 * is never reached, since lower-gradient replaces the node. */
bool infer_Gradient(Node *n, Diag *d) {
  const Attr *xa = ir_attr(n, "xs");
  if (!xa || xa->kind != AT_STRINGS || xa->n != n->n_out)
    return infer_fail(d, n, "attribute xs must list one name per output");
  for (int i = 0; i < n->n_out; i++) {
    const Value *x = ir_value_find(n->g, xa->u.ss[i]);
    if (!x)
      return infer_fail(d, n, "xs[%d] names '%s', which is not a value of the graph", i, xa->u.ss[i]);
    if (n->out[i])
      infer_set(n, i, x->dt, &x->shape);
  }
  return true;
}
