/* infer.c - dtype and shape inference over the whole graph.
 *
 * requires: a graph whose nodes all have table rows (pass_check_ops).
 * provides: every node output has a dtype and a shape (possibly with symbolic
 *           or unknown dims); constant-dependent shapes use folded constants.
 * invalidates: nothing.
 * Nodes are visited in schedule order, so a node sees its inputs' final types.
 * Inference also folds as it goes: Shape->Gather->Concat->Reshape chains need
 * the folded shape before Reshape's output can be known.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

typedef bool (*InferFn)(Node *, Diag *);

static const InferFn infer_tab[OP_COUNT_] = {
#define OP(name, ...) [OP_##name] = infer_##name,
#define EW(name, ...) [OP_##name] = infer_elementwise,
#include "ops.def"
#undef OP
#undef EW
};

void infer_set(Node *n, int i, DType dt, const Shape *s) {
  IR_ASSERT(i >= 0 && i < n->n_out);
  Value *v = n->out[i];
  if (v->kind == VK_NONE)
    return;
  v->dt = dt;
  v->shape = s ? *s : shape_unknown();
}

Shape infer_unknown_dims(int rank) {
  Shape s = shape_scalar();
  s.rank = rank;
  for (int i = 0; i < rank; i++)
    s.d[i] = DIM_UNKNOWN;
  return s;
}

void infer_copy_dim(Shape *b, int j, const Shape *a, int i) {
  b->d[j] = a->d[i];
  b->sym[j] = a->sym[i];
  b->x[j] = a->x[i];
}

bool infer_const_ints(const Node *n, int i, int64_t *dims, int *count, int max) {
  if (!ir_has_input(n, i) || n->in[i]->kind != VK_CONST)
    return false;
  const Tensor *t = n->in[i]->konst;
  if (t->shape.rank > 1 || t->numel > max || !(dtype_is_int(t->dt)))
    return false;
  for (int64_t k = 0; k < t->numel; k++)
    dims[k] = tensor_get_i64(t, k);
  *count = (int)t->numel;
  return true;
}

bool infer_attr_ints(const Node *n, Diag *d, const char *name, int want, int64_t min, int64_t dflt,
                     int64_t *out) {
  const Attr *a = ir_attr(n, name);
  if (!a) {
    for (int i = 0; i < want; i++)
      out[i] = dflt;
    return true;
  }
  if (a->kind != AT_INTS)
    return infer_fail(d, n, "attribute '%s' must be a list of ints", name);
  if (a->n != want)
    return infer_fail(d, n, "attribute '%s' has %d values, expected %d", name, a->n, want);
  for (int i = 0; i < want; i++) {
    if (a->u.is[i] < min)
      return infer_fail(d, n, "attribute '%s'[%d] is %lld, expected >= %lld", name, i,
                        (long long)a->u.is[i], (long long)min);
    out[i] = a->u.is[i];
  }
  return true;
}

void infer_report(Diag *d, const Node *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Buf b;
  buf_init(&b);
  buf_vprintf(&b, fmt, ap);
  va_end(ap);
  diag_error(d, n, "%s", b.s);
  buf_free(&b);
}

bool infer_node(Node *n, Diag *d) {
  IR_ASSERT(n->op > OP_Unknown_ && n->op < OP_COUNT_);
  for (int i = 0; i < n->n_in; i++) {
    const Value *v = n->in[i];
    if (v->kind != VK_NONE && v->dt == DT_UNDEF)
      return diag_error(d, n, "input %d ('%s') has no known element type", i, v->name);
  }
  bool handled;
  if (!infer_symbolic(n, &handled, d))
    return false;
  return handled || infer_tab[n->op](n, d);
}

/* A data-dependent extent (Value.dyn_dims) read by other nodes flows onward
 * as a symbol (docs/dynamic-shapes.md): an Identity after n gives the
 * consumers the value with that dim symbolic (0..its upper bound), and the
 * generated code sets the symbol from the extent n's kernel reports. */
static void bind_data_dims(Node *n, Diag *d) {
  Graph *g = n->g;
  for (int i = 0; i < n->n_out; i++) {
    Value *v = n->out[i];
    int readers = 0;   /* not counting an Identity this made before (inference may run again) */
    for (int u = 0; u < v->n_uses; u++) {
      const Node *c = v->uses[u];
      bool bound = c->op == OP_Identity && c->out[0]->shape.rank > 0 && c->out[0]->shape.d[0] < 0 &&
                   c->out[0]->shape.x[0];
      for (int k = 0; k < c->out[0]->shape.rank && c->op == OP_Identity; k++)
        bound |= c->out[0]->shape.d[k] < 0 && c->out[0]->shape.x[k] != NULL;
      readers += c != n && !bound;
    }
    if (v->kind == VK_NONE || !v->dyn_dims || readers == 0 || g->parent)
      continue;
    Shape s = v->shape;
    for (int k = 0; k < s.rank; k++) {
      if (!(v->dyn_dims & (1u << k)) || s.d[k] < 0)
        continue;
      if (g->n_syms == IR_MAX_SYMS) {
        diag_error(d, n, "too many data-dependent extents (at most %d symbols)", IR_MAX_SYMS);
        return;
      }
      int id = g->n_syms++;
      g->syms[id] = (DimSym){.name = arena_printf(g->arena, "len(%s,%d)", v->name, k), .lo = 0, .hi = s.d[k],
                             .den = -1, .src_value = v->id, .src_axis = k};
      shape_set_dx(g, &s, k, dx_sym(g->arena, id));
      s.sym[k] = g->syms[id].name;
    }
    Node *users[4096];
    int nu = 0;
    for (int u = 0; u < v->n_uses && nu < 4096; u++)
      users[nu++] = v->uses[u];
    Node *id_node = ir_node_insert(g, n->next, OP_Identity, "Identity",
                                   arena_printf(g->arena, "%s/data_dims", n->name), 1, &v, 1);
    id_node->out[0]->dt = v->dt;
    id_node->out[0]->shape = s;
    for (int u = 0; u < nu; u++) {
      Node *c = users[u];
      for (int k = 0; k < c->n_in; k++)
        if (c->in[k] == v)
          ir_node_set_input(c, k, id_node->out[0]);
    }
  }
}

bool pass_infer(Graph *g, Diag *d) {
  int before = d->n_errors;
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (!infer_node(n, d))
      continue;  /* keep going: report every independent error */
    infer_sym_values(n);
    bind_data_dims(n, d);
    /* fold_node decides what it can fold: all-constant inputs, and also
     * Shape of a statically shaped value or CastLike of a constant. */
    bool done = false;
    if (!fold_node(n, &done, d))
      continue;
    if (done) {
      for (int i = 0; i < n->n_out; i++)
        if (n->out[i]->n_uses == 0 && !n->out[i]->is_output)
          ir_node_drop_output(n, i);
    }
  }
  return d->n_errors == before;
}
