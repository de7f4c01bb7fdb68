/* infer_dynamic.c - shape inference of the ops whose output extent depends on
 * the data (opsk family): NonZero, Unique, NonMaxSuppression.
 *
 * Each such output gets its static upper bound as shape and the dynamic dim
 * marked in Value.dyn_dims; the buffer is sized by the bound and the kernel
 * reports the actual extent (docs/abi.md). Bounds, for an input of N elements:
 *   NonZero            [rank, N]                      (dim 1 dynamic)
 *   Unique             Y: [N] or the input's shape     (dim 0 / axis dynamic)
 *                      indices, counts: [N or X.d[axis]] (dynamic)
 *                      inverse_indices: the same, static
 *   NonMaxSuppression  [batches * classes * min(max_output_boxes, boxes), 3]
 *                      (dim 0 dynamic; max_output_boxes when constant)
 * Unique records the sorted length in attribute "onnxc.n" and the normalized
 * axis in "onnxc.axis" (-1: flattened) for the scratch planner and emitter.
 * Reference: the ONNX operator docs (onnx/defs) and onnx/reference/ops.
 */
#include "passes.h"

static void set_dyn(Node *n, int i, uint32_t mask) {
  if (n->out[i]->kind != VK_NONE)
    n->out[i]->dyn_dims = mask;
}

bool infer_NonZero(Node *n, Diag *d) {
  const Shape *x = &n->in[0]->shape;
  if (!dtype_ctype(n->in[0]->dt)[0] || n->in[0]->dt == DT_STRING)
    return infer_fail(d, n, "input 0 has element type %s, which NonZero does not support",
                      dtype_name(n->in[0]->dt));
  int64_t numel = DIM_UNKNOWN;
  if (x->rank < 0 || !shape_numel(x, &numel))
    numel = DIM_UNKNOWN;
  Shape y = shape_make(2, (int64_t[]){x->rank < 0 ? DIM_UNKNOWN : x->rank, numel});
  infer_set(n, 0, DT_I64, &y);
  set_dyn(n, 0, 1u << 1);
  return true;
}

bool infer_Unique(Node *n, Diag *d) {
  const Shape *x = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  if (t == DT_STRING || !dtype_ctype(t)[0] || dtype_bits(t) < 8)
    return infer_fail(d, n, "input 0 has element type %s, which Unique does not support",
                      dtype_name(t));
  int64_t sorted = ir_attr_int(n, "sorted", 1);
  if (sorted != 0 && sorted != 1)
    return infer_fail(d, n, "attribute 'sorted' is %lld, expected 0 or 1", (long long)sorted);
  const Attr *ax = ir_attr(n, "axis");
  if (x->rank < 0) {
    for (int i = 0; i < n->n_out; i++)
      infer_set(n, i, i ? DT_I64 : t, NULL);
    return true;
  }
  Shape y, v;
  int a = -1;
  int64_t len;
  if (ax) {
    if (ax->kind != AT_INT || !shape_axis(ax->u.i, x->rank, &a))
      return infer_fail(d, n, "axis %lld is out of range for an input of rank %d",
                        (long long)(ax->kind == AT_INT ? ax->u.i : 0), x->rank);
    len = x->d[a];
    y = *x;
    y.sym[a] = NULL, y.x[a] = NULL;
  } else if (!shape_numel(x, &len)) {
    len = DIM_UNKNOWN;
  }
  if (!ax)
    y = shape_make(1, &len);
  v = shape_make(1, &len);
  infer_set(n, 0, t, &y);
  set_dyn(n, 0, 1u << (a < 0 ? 0 : a));
  for (int i = 1; i < n->n_out; i++) {
    infer_set(n, i, DT_I64, &v);
    set_dyn(n, i, i == 2 ? 0 : 1u);
  }
  ir_attr_set_int(n, "onnxc.n", len);
  ir_attr_set_int(n, "onnxc.axis", a);
  return true;
}

bool infer_NonMaxSuppression(Node *n, Diag *d) {
  const Shape *b = &n->in[0]->shape, *s = &n->in[1]->shape;
  DType t = n->in[0]->dt;
  if (t != DT_F32 && t != DT_F64 && t != DT_F16 && t != DT_BF16)
    return infer_fail(d, n, "input 0 (boxes) has element type %s, expected a float type",
                      dtype_name(t));
  if (n->in[1]->dt != t)
    return infer_fail(d, n, "input 1 (scores) has element type %s, expected %s like the boxes",
                      dtype_name(n->in[1]->dt), dtype_name(t));
  if (b->rank >= 0 && (b->rank != 3 || (b->d[2] >= 0 && b->d[2] != 4)))
    return infer_fail(d, n, "input 0 (boxes) must be [batches, boxes, 4]");
  if (s->rank >= 0 && s->rank != 3)
    return infer_fail(d, n, "input 1 (scores) has rank %d, expected 3 [batches, classes, boxes]",
                      s->rank);
  if (ir_has_input(n, 2) && !dtype_is_int(n->in[2]->dt))
    return infer_fail(d, n, "input 2 (max_output_boxes_per_class) has element type %s, expected int64",
                      dtype_name(n->in[2]->dt));
  for (int i = 3; i < 5; i++)
    if (ir_has_input(n, i) && n->in[i]->dt != DT_F32)
      return infer_fail(d, n, "input %d has element type %s, expected f32", i, dtype_name(n->in[i]->dt));
  int64_t cpb = ir_attr_int(n, "center_point_box", 0);
  if (cpb != 0 && cpb != 1)
    return infer_fail(d, n, "attribute 'center_point_box' is %lld, expected 0 or 1", (long long)cpb);
  int64_t rows = DIM_UNKNOWN;
  if (b->rank == 3 && s->rank == 3) {
    if (b->d[0] >= 0 && s->d[0] >= 0 && b->d[0] != s->d[0])
      return infer_fail(d, n, "boxes have %lld batches but scores %lld", (long long)b->d[0],
                        (long long)s->d[0]);
    if (b->d[1] >= 0 && s->d[2] >= 0 && b->d[1] != s->d[2])
      return infer_fail(d, n, "boxes hold %lld boxes but scores %lld", (long long)b->d[1],
                        (long long)s->d[2]);
    int64_t per = b->d[1], mx[1];
    int count = 0;
    if (!ir_has_input(n, 2))
      per = 0;
    else if (infer_const_ints(n, 2, mx, &count, 1) && count == 1 && mx[0] < per)
      per = mx[0] < 0 ? 0 : mx[0];
    if (b->d[0] >= 0 && s->d[1] >= 0 && per >= 0)
      rows = b->d[0] * s->d[1] * per;
  }
  Shape y = shape_make(2, (int64_t[]){rows, 3});
  infer_set(n, 0, DT_I64, &y);
  set_dyn(n, 0, 1u);
  return true;
}
