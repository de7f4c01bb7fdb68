/* infer_norm.c - shape inference of BatchNormalization, Softmax, LogSoftmax.
 *
 * BatchNormalization: Y has X's shape and the per-channel parameters (scale,
 * B, mean, var) have shape [C], or X's shape without the batch dim under
 * opset < 9 with spatial=0. Training mode (normalize with the batch's own
 * statistics, update the running ones) is training_mode=1 from opset 14;
 * before, it is the form with the extra outputs (running mean/var, saved
 * mean/var), taken as training when something reads them. The choice is made
 * once here and recorded as training_mode=1, so later passes (dce drops
 * unread outputs) and the emitter see the same mode. The statistics have the
 * parameter shape and the type of input_mean (mean-like) or input_var.
 * Softmax/LogSoftmax keep the input shape; only the axis is checked here.
 */
#include "passes.h"

static bool is_float_dtype(DType t) {
  return t == DT_F32 || t == DT_F64 || t == DT_F16 || t == DT_BF16;
}

static const char *const bn_inputs[5] = {"X", "scale", "B", "input_mean", "input_var"};

bool infer_BatchNormalization(Node *n, Diag *d) {
  const Value *x = n->in[0];
  int64_t opset = n->g->opset;
  for (int i = 0; i < 5; i++)
    if (!is_float_dtype(n->in[i]->dt))
      return infer_fail(d, n, "input %d (%s) has element type %s, expected f16, bf16, f32 or f64",
                        i, bn_inputs[i], dtype_name(n->in[i]->dt));
  const Attr *tm = ir_attr(n, "training_mode");
  if (tm && (tm->kind != AT_INT || (tm->u.i != 0 && tm->u.i != 1)))
    return infer_fail(d, n, "attribute 'training_mode' must be 0 or 1");
  bool training = tm && tm->u.i == 1;
  if (opset >= 14 && n->n_out > 3)
    return infer_fail(d, n, "%d outputs; from opset 14 there are at most 3 (Y, running_mean, running_var)",
                      n->n_out);
  for (int i = 1; i < n->n_out; i++) {
    const Value *v = n->out[i];
    if (v->kind == VK_NONE || (v->n_uses == 0 && !v->is_output))
      continue;
    if (opset >= 14 && !training)
      return infer_fail(d, n, "output %d ('%s') is defined only in training mode (training_mode=1)", i,
                        v->name);
    training = true;
  }
  if (training && !(tm && tm->u.i == 1))
    ir_attr_set_int(n, "training_mode", 1);
  const Shape *xs = &x->shape;
  if (xs->rank >= 0 && xs->rank < 2)
    return infer_fail(d, n, "input 0 (X) has rank %d, expected at least 2 (N, C, ...)",
                      xs->rank);
  bool spatial = opset >= 9 || ir_attr_int(n, "spatial", 1) != 0;
  /* Expected parameter shape: [C], or X's dims after the batch dim. */
  Shape ps = shape_unknown();
  if (xs->rank >= 0) {
    ps.rank = spatial ? 1 : xs->rank - 1;
    for (int i = 0; i < ps.rank; i++)
      ps.d[i] = xs->d[1 + i], ps.sym[i] = xs->sym[1 + i], ps.x[i] = xs->x[1 + i];
  }
  for (int i = 1; i < 5; i++) {
    const Shape *s = &n->in[i]->shape;
    if (s->rank < 0 || ps.rank < 0)
      continue;
    if (s->rank != ps.rank)
      return infer_fail(d, n, "input %d (%s) has rank %d, expected %d", i, bn_inputs[i],
                        s->rank, ps.rank);
    for (int k = 0; k < ps.rank; k++)
      if (s->d[k] >= 0 && ps.d[k] >= 0 && s->d[k] != ps.d[k])
        return infer_fail(d, n, "input %d (%s) dim %d is %lld, expected %lld", i, bn_inputs[i],
                          k, (long long)s->d[k], (long long)ps.d[k]);
  }
  infer_set(n, 0, x->dt, xs);
  for (int i = 1; i < n->n_out; i++)
    infer_set(n, i, n->in[i % 2 ? 3 : 4]->dt, &ps);  /* mean-like, var-like */
  return true;
}

static bool infer_softmax(Node *n, Diag *d) {
  const Value *x = n->in[0];
  if (!is_float_dtype(x->dt))
    return infer_fail(d, n, "input 0 has element type %s, expected f16, bf16, f32 or f64",
                      dtype_name(x->dt));
  int64_t axis = ir_attr_int(n, "axis", n->g->opset >= 13 ? -1 : 1);
  int r = x->shape.rank, ax;
  if (r == 0)
    return infer_fail(d, n, "input 0 is a scalar, expected rank >= 1");
  if (r > 0 && !shape_axis(axis, r, &ax))
    return infer_fail(d, n, "axis %lld is out of range for rank %d", (long long)axis, r);
  infer_set(n, 0, x->dt, &x->shape);
  return true;
}

bool infer_Softmax(Node *n, Diag *d) { return infer_softmax(n, d); }

bool infer_LogSoftmax(Node *n, Diag *d) { return infer_softmax(n, d); }
