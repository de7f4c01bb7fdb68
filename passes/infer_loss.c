/* infer_loss.c - inference of the losses (NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss) and of the deterministic optimizers of domain
 * ai.onnx.preview.training (Adagrad, Adam, Momentum).
 *
 * Losses: input [N, C, d1..dk] (k >= 0), target [N, d1..dk] of int32/int64,
 * optional per-class weight [C]; the loss is [N, d1..dk] with reduction
 * "none", else a scalar. SoftmaxCrossEntropyLoss's optional second output
 * (log_prob) has the shape of the scores.
 * Optimizers: inputs R (scalar learning rate), T (scalar int64 update count),
 * then n tensors X, n gradients G and n of each state; outputs the n new X
 * then the new states. Every G and state has the shape of its X.
 */
#include "passes.h"

#include <string.h>

static bool is_float_type(DType t) { return t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64; }

/* ---- losses ------------------------------------------------------------------ */

/* Checks the (input, target, weight) triple and the reduction; sets output 0. */
static bool infer_loss(Node *n, Diag *d, const char *what) {
  const Value *x = n->in[0], *tg = n->in[1];
  const Shape *xs = &x->shape, *ts = &tg->shape;
  if (!is_float_type(x->dt))
    return infer_fail(d, n, "input 0 (%s) has element type %s, expected a floating-point type", what,
                      dtype_name(x->dt));
  if (tg->dt != DT_I32 && tg->dt != DT_I64)
    return infer_fail(d, n, "input 1 has element type %s, expected int32 or int64", dtype_name(tg->dt));
  const char *red = ir_attr_str(n, "reduction", "mean");
  bool none = strcmp(red, "none") == 0;
  if (!none && strcmp(red, "sum") != 0 && strcmp(red, "mean") != 0)
    return infer_fail(d, n, "attribute 'reduction' is '%s', expected 'none', 'sum' or 'mean'", red);
  if (xs->rank >= 0 && xs->rank < 2)
    return infer_fail(d, n, "input 0 (%s) has rank %d, expected at least 2 ([N, C, ...])", what, xs->rank);
  if (xs->rank >= 0 && ts->rank >= 0) {
    if (ts->rank != xs->rank - 1)
      return infer_fail(d, n, "input 1 has rank %d, expected %d (input 0's rank without C)", ts->rank,
                        xs->rank - 1);
    for (int i = 0; i < ts->rank; i++) {
      int64_t want = xs->d[i == 0 ? 0 : i + 1];
      if (want >= 0 && ts->d[i] >= 0 && ts->d[i] != want)
        return infer_fail(d, n, "input 1 dim %d is %lld, expected %lld", i, (long long)ts->d[i], (long long)want);
    }
  }
  if (ir_has_input(n, 2)) {
    const Value *w = n->in[2];
    if (w->dt != x->dt)
      return infer_fail(d, n, "input 2 (weight) has element type %s, expected %s", dtype_name(w->dt),
                        dtype_name(x->dt));
    if (w->shape.rank >= 0 && w->shape.rank != 1)
      return infer_fail(d, n, "input 2 (weight) has rank %d, expected 1", w->shape.rank);
    if (w->shape.rank == 1 && xs->rank >= 2 && w->shape.d[0] >= 0 && xs->d[1] >= 0 && w->shape.d[0] != xs->d[1])
      return infer_fail(d, n, "input 2 (weight) has %lld entries, expected C = %lld", (long long)w->shape.d[0],
                        (long long)xs->d[1]);
  }
  if (!none) {
    Shape s = shape_scalar();
    infer_set(n, 0, x->dt, &s);
  } else if (ts->rank >= 0) {
    infer_set(n, 0, x->dt, ts);
  } else if (xs->rank >= 2) {
    Shape s = *xs;   /* [N, d1..dk]: input 0 without C */
    for (int i = 1; i + 1 < s.rank; i++)
      s.d[i] = s.d[i + 1], s.sym[i] = s.sym[i + 1], s.x[i] = s.x[i + 1];
    s.rank--;
    infer_set(n, 0, x->dt, &s);
  } else {
    infer_set(n, 0, x->dt, NULL);
  }
  return true;
}

bool infer_NegativeLogLikelihoodLoss(Node *n, Diag *d) { return infer_loss(n, d, "input"); }

bool infer_SoftmaxCrossEntropyLoss(Node *n, Diag *d) {
  if (!infer_loss(n, d, "scores"))
    return false;
  if (n->n_out > 1)
    infer_set(n, 1, n->in[0]->dt, &n->in[0]->shape);
  return true;
}

/* ---- optimizers ---------------------------------------------------------------- */

/* Number of per-tensor inputs of an optimizer: X, G and its states. */
static int optimizer_group(OpKind op) { return op == OP_Adam ? 4 : 3; }

static bool need_float_attr(Diag *d, const Node *n, const char *name) {
  const Attr *a = ir_attr(n, name);
  if (!a || a->kind != AT_FLOAT)
    return infer_fail(d, n, "attribute '%s' (a float) is required", name);
  return true;
}

static bool infer_optimizer(Node *n, Diag *d) {
  int k = optimizer_group(n->op), m = n->n_in - 2;
  if (m <= 0 || m % k != 0)
    return infer_fail(d, n, "has %d inputs, expected R, T and %d inputs per optimized tensor", n->n_in, k);
  int nt = m / k;
  if (n->n_out != nt * (k - 1))
    return infer_fail(d, n, "has %d outputs, expected %d for %d optimized tensors", n->n_out, nt * (k - 1), nt);
  const Value *r = n->in[0], *t = n->in[1];
  if (r->dt != DT_F32 && r->dt != DT_F64)
    return infer_fail(d, n, "input 0 (R) has element type %s, expected float or double", dtype_name(r->dt));
  if (t->dt != DT_I64)
    return infer_fail(d, n, "input 1 (T) has element type %s, expected int64", dtype_name(t->dt));
  for (int i = 0; i < 2; i++) {
    int64_t cnt;
    if (n->in[i]->shape.rank > 1 || (shape_numel(&n->in[i]->shape, &cnt) && cnt != 1))
      return infer_fail(d, n, "input %d (%s) must be a scalar", i, i ? "T" : "R");
  }
  for (int i = 0; i < nt; i++) {
    const Value *x = n->in[2 + i];
    if (x->dt != DT_F32 && x->dt != DT_F64)
      return infer_fail(d, n, "input %d has element type %s, expected float or double", 2 + i, dtype_name(x->dt));
    for (int j = 1; j < k; j++) {
      const Value *v = n->in[2 + j * nt + i];
      if (v->dt != x->dt)
        return infer_fail(d, n, "input %d has element type %s, expected %s (that of input %d)", 2 + j * nt + i,
                          dtype_name(v->dt), dtype_name(x->dt), 2 + i);
      if (x->shape.rank >= 0 && v->shape.rank >= 0 && !shape_equal(&x->shape, &v->shape)) {
        char a[128], b[128];
        return infer_fail(d, n, "input %d has shape %s, expected %s (that of input %d)", 2 + j * nt + i,
                          shape_str(&v->shape, a, sizeof a), shape_str(&x->shape, b, sizeof b), 2 + i);
      }
    }
    for (int j = 0; j < k - 1; j++)
      infer_set(n, j * nt + i, x->dt, &x->shape);
  }
  return true;
}

bool infer_Adagrad(Node *n, Diag *d) { return infer_optimizer(n, d); }

bool infer_Adam(Node *n, Diag *d) { return infer_optimizer(n, d); }

bool infer_Momentum(Node *n, Diag *d) {
  if (!need_float_attr(d, n, "alpha") || !need_float_attr(d, n, "beta") ||
      !need_float_attr(d, n, "norm_coefficient"))
    return false;
  const char *mode = ir_attr_str(n, "mode", NULL);
  if (!mode || (strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0))
    return infer_fail(d, n, "attribute 'mode' must be 'standard' or 'nesterov'");
  return infer_optimizer(n, d);
}
