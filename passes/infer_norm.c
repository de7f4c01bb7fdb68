/* infer_norm.c - shape inference of BatchNormalization, Softmax, LogSoftmax.
 *
 * BatchNormalization is supported in inference mode only: Y has X's shape and
 * the per-channel parameters (scale, B, mean, var) have shape [C], or X's
 * shape without the batch dim under opset < 9 with spatial=0. The training
 * outputs (running mean/var, and saved mean/var before opset 14) may be
 * present only when nothing reads them; dce then drops them.
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
  if (opset >= 14 && ir_attr_int(n, "training_mode", 0) != 0)
    return infer_fail(d, n, "training_mode=1 is not supported (inference only)");
  for (int i = 1; i < n->n_out; i++) {
    const Value *v = n->out[i];
    if (v->kind != VK_NONE && (v->n_uses > 0 || v->is_output))
      return infer_fail(d, n,
                        "output %d ('%s') is a training-mode statistic, which is not "
                        "supported (inference only)",
                        i, v->name);
  }
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
      ps.d[i] = xs->d[1 + i], ps.sym[i] = xs->sym[1 + i];
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
