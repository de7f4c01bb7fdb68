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

bool pass_infer(Graph *g, Diag *d) {
  int before = d->n_errors;
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (!infer_node(n, d))
      continue;  /* keep going: report every independent error */
    infer_sym_values(n);
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
