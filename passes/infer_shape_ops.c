/* infer_shape_ops.c - inference for shape and data-movement ops.
 *
 * Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout, Transpose, Concat,
 * Shape, Gather, Cast, CastLike, Constant. Symbolic dims flow through wherever the op
 * only moves them (Transpose, Concat's other axes, Reshape's 0 entries).
 * Operands that decide a shape (Reshape's shape, Squeeze's axes) must be
 * constant after folding for the shape to be known; otherwise only the rank
 * is inferred (when it can be) and require-static reports the unknown dims.
 * Opset differences handled here: Reshape allowzero (14), negative axes of
 * Flatten/Concat/Gather (11), Squeeze/Unsqueeze axes as input (13; the
 * attribute is also read in case canonicalize did not run), Dropout's mask
 * type (bool from 10) and training_mode input (12), Shape start/end (15).
 */
#include "passes.h"

#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

/* Product of dims [lo, hi) of s: static, or the lone symbolic dim, or unknown. */
static void dim_product(const Shape *s, int lo, int hi, Shape *out, int j) {
  int64_t p = 1;
  int n_unknown = 0, which = -1;
  for (int i = lo; i < hi; i++) {
    if (s->d[i] < 0) {
      n_unknown++;
      which = i;
    } else {
      p = s->d[i] != 0 && p > INT64_MAX / s->d[i] ? -1 : p * s->d[i];
    }
  }
  out->sym[j] = NULL, out->x[j] = NULL;
  if (n_unknown == 0)
    out->d[j] = p < 0 ? DIM_UNKNOWN : p;
  else if (n_unknown == 1 && p == 1)
    infer_copy_dim(out, j, s, which);
  else
    out->d[j] = DIM_UNKNOWN;
}

/* Integer list from input i (constant) or, failing that, attribute `attr`.
 * Returns 1 when found, 0 when neither is there, -1 when the input is present
 * but not constant. */
static int ints_operand(const Node *n, int i, const char *attr, int64_t *v, int *count) {
  if (ir_has_input(n, i))
    return infer_const_ints(n, i, v, count, IR_MAX_RANK) ? 1 : -1;
  const Attr *a = attr ? ir_attr(n, attr) : NULL;
  if (!a || a->kind != AT_INTS)
    return 0;
  if (a->n > IR_MAX_RANK)
    return -1;
  memcpy(v, a->u.is, (size_t)a->n * sizeof *v);
  *count = a->n;
  return 1;
}

/* Normalizes axes against rank; rejects out-of-range and repeated axes. */
static bool norm_axes(Diag *d, const Node *n, const int64_t *axes, int count, int rank, int *out) {
  bool seen[IR_MAX_RANK] = {false};
  for (int i = 0; i < count; i++) {
    if (!shape_axis(axes[i], rank, &out[i]))
      return diag_error(d, n, "axis %lld is out of range for rank %d", (long long)axes[i], rank);
    if (seen[out[i]])
      return diag_error(d, n, "axis %lld is repeated", (long long)axes[i]);
    seen[out[i]] = true;
  }
  return true;
}

static bool is_index_type(DType t) { return t == DT_I32 || t == DT_I64; }

/* ---- view ops ---------------------------------------------------------------- */

/* Reshape's -1 entry: input elements / product of the other output dims.
 * Symbolic input dims cancel when each is copied by a 0 at its own position. */
/* a * b for a, b >= 0; false when it overflows int64. */
static bool mul_dims(int64_t a, int64_t b, int64_t *out) {
  if (b != 0 && a > INT64_MAX / b)
    return false;
  *out = a * b;
  return true;
}

static bool reshape_infer_neg(Diag *d, const Node *n, const Shape *x, Shape *o, int neg, const bool *copied) {
  int64_t in_p = 1, out_p = 1;
  int n_unknown = 0, which = -1;
  bool ok = true;
  for (int i = 0; i < x->rank; i++) {
    if (x->d[i] >= 0)
      ok = ok && mul_dims(in_p, x->d[i], &in_p);
    else if (!(i < o->rank && copied[i])) {
      n_unknown++;
      which = i;
    }
  }
  for (int j = 0; j < o->rank; j++)
    if (j != neg && o->d[j] >= 0)
      ok = ok && mul_dims(out_p, o->d[j], &out_p);
  if (!ok) {
    char b[128], c[128];
    return diag_error(d, n, "cannot reshape %s into %s: an element count overflows",
                      shape_str(x, b, sizeof b), shape_str(o, c, sizeof c));
  }
  if (n_unknown > 0) {
    /* [N,3,4] -> [-1,12]: the lone symbolic dim survives when the rest cancels. */
    o->d[neg] = DIM_UNKNOWN;
    o->sym[neg] = n_unknown == 1 && in_p == out_p ? x->sym[which] : NULL;
    return true;
  }
  if (out_p == 0)
    return diag_error(d, n, "cannot infer the -1 dimension next to a zero-sized one");
  if (in_p % out_p != 0) {
    char b[128];
    return diag_error(d, n, "cannot reshape %s: %lld elements do not divide into dims of product %lld",
                      shape_str(x, b, sizeof b), (long long)in_p, (long long)out_p);
  }
  o->d[neg] = in_p / out_p;
  o->sym[neg] = NULL, o->x[neg] = NULL;
  return true;
}

bool infer_Reshape(Node *n, Diag *d) {
  const Value *x = n->in[0];
  int64_t sh[IR_MAX_RANK];
  int k = 0;
  if (ir_has_input(n, 1) && !is_index_type(n->in[1]->dt))
    return diag_error(d, n, "input 1 (shape) has type %s, expected int64", dtype_name(n->in[1]->dt));
  int got = ints_operand(n, 1, "shape", sh, &k);
  if (got == 0)
    return diag_error(d, n, "the shape input is missing");
  if (got < 0) {
    const Shape *ss = &n->in[1]->shape;
    if (ss->rank == 1 && ss->d[0] > IR_MAX_RANK)
      return diag_error(d, n, "target rank %lld exceeds the supported %d", (long long)ss->d[0], IR_MAX_RANK);
    Shape o = (ss->rank == 1 && ss->d[0] >= 0) ? infer_unknown_dims((int)ss->d[0]) : shape_unknown();
    infer_set(n, 0, x->dt, &o);
    return true;
  }
  bool allowzero = n->g->opset >= 14 && ir_attr_int(n, "allowzero", 0) != 0;
  const Shape *xs = &x->shape;
  Shape o = infer_unknown_dims(k);
  bool copied[IR_MAX_RANK] = {false};
  int neg = -1;
  for (int j = 0; j < k; j++) {
    if (sh[j] == 0 && !allowzero) {
      if (xs->rank >= 0 && j >= xs->rank)
        return diag_error(d, n, "shape entry %d is 0 (copy) but the input has rank %d", j, xs->rank);
      if (xs->rank >= 0) {
        infer_copy_dim(&o, j, xs, j);
        copied[j] = true;
      }
    } else if (sh[j] == -1) {
      if (neg >= 0)
        return diag_error(d, n, "shape has more than one -1 entry");
      neg = j;
    } else if (sh[j] < 0) {
      return diag_error(d, n, "shape entry %d is %lld; only -1 may be negative", j, (long long)sh[j]);
    } else {
      o.d[j] = sh[j];
    }
  }
  if (neg >= 0 && allowzero)
    for (int j = 0; j < k; j++)
      if (sh[j] == 0)
        return diag_error(d, n, "allowzero shape has both 0 and -1 entries");
  if (xs->rank < 0) {
    if (neg >= 0)
      o.d[neg] = DIM_UNKNOWN;
  } else if (neg >= 0) {
    if (!reshape_infer_neg(d, n, xs, &o, neg, copied))
      return false;
  } else {
    int64_t a, b;
    char s1[128], s2[128];
    /* A target whose element count overflows must not pass for a match. */
    if (shape_numel(xs, &a) && shape_is_static(&o) && !shape_numel(&o, &b))
      return diag_error(d, n, "cannot reshape %s (%lld elements) into %s: its element count overflows",
                        shape_str(xs, s1, sizeof s1), (long long)a, shape_str(&o, s2, sizeof s2));
    if (shape_numel(xs, &a) && shape_numel(&o, &b) && a != b)
      return diag_error(d, n, "cannot reshape %s (%lld elements) into %s (%lld elements)",
                        shape_str(xs, s1, sizeof s1), (long long)a, shape_str(&o, s2, sizeof s2), (long long)b);
  }
  infer_set(n, 0, x->dt, &o);
  return true;
}

bool infer_Flatten(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  int64_t axis = ir_attr_int(n, "axis", 1);
  Shape o = infer_unknown_dims(2);
  if (xs->rank >= 0) {
    int r = xs->rank;
    if (axis < -r || axis > r)
      return diag_error(d, n, "axis %lld is out of range [%d, %d]", (long long)axis, -r, r);
    if (axis < 0 && n->g->opset < 11)
      return diag_error(d, n, "negative axis needs opset 11 (model has %lld)", (long long)n->g->opset);
    int a = (int)(axis < 0 ? axis + r : axis);
    dim_product(xs, 0, a, &o, 0);
    dim_product(xs, a, r, &o, 1);
  }
  infer_set(n, 0, n->in[0]->dt, &o);
  return true;
}

bool infer_Squeeze(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  int64_t axes[IR_MAX_RANK];
  int k = 0;
  int got = ints_operand(n, 1, "axes", axes, &k);
  if (ir_has_input(n, 1) && n->in[1]->dt != DT_I64)
    return diag_error(d, n, "input 1 (axes) has type %s, expected int64", dtype_name(n->in[1]->dt));
  if (xs->rank < 0) {
    infer_set(n, 0, n->in[0]->dt, NULL);
    return true;
  }
  Shape o = shape_scalar();
  if (got < 0) {
    const Shape *as = &n->in[1]->shape;
    Shape u = (as->rank == 1 && as->d[0] >= 0 && as->d[0] <= xs->rank) ? infer_unknown_dims(xs->rank - (int)as->d[0])
                                                                         : shape_unknown();
    infer_set(n, 0, n->in[0]->dt, &u);
    return true;
  }
  bool drop[IR_MAX_RANK] = {false};
  if (got == 0 || k == 0) {
    /* No axes: every extent-1 dim goes; symbolic dims are assumed not 1.
     * A range (-D) that admits 1 makes the output's rank depend on the
     * value, which one library cannot give: said once, at that node. */
    for (int i = 0; i < xs->rank; i++) {
      drop[i] = xs->d[i] == 1;
      int64_t lo, hi;
      const Graph *g = n->g;
      while (g->parent)
        g = g->parent;
      if (xs->d[i] < 0 && xs->x[i] && dx_bounds(g, xs->x[i], &lo, &hi) && lo <= 1 && hi > 1 &&
          !ir_attr_int(n, "onnxc.warned_squeeze", 0)) {
        diag_warn(d, n, "no axes, and dim %d of the input may be 1 for some values of the ranges: the output "
                  "keeps it at every value, where ONNX would drop it when it is 1; a range from 2 "
                  "avoids this", i);
        ir_attr_set_int(n, "onnxc.warned_squeeze", 1);
      }
    }
  } else {
    int ax[IR_MAX_RANK];
    if (!norm_axes(d, n, axes, k, xs->rank, ax))
      return false;
    for (int i = 0; i < k; i++) {
      if (xs->d[ax[i]] >= 0 && xs->d[ax[i]] != 1)
        return diag_error(d, n, "cannot squeeze axis %d of extent %lld", ax[i], (long long)xs->d[ax[i]]);
      drop[ax[i]] = true;
    }
  }
  for (int i = 0; i < xs->rank; i++)
    if (!drop[i])
      infer_copy_dim(&o, o.rank++, xs, i);
  infer_set(n, 0, n->in[0]->dt, &o);
  return true;
}

bool infer_Unsqueeze(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  int64_t axes[IR_MAX_RANK];
  int k = 0;
  int got = ints_operand(n, 1, "axes", axes, &k);
  if (ir_has_input(n, 1) && n->in[1]->dt != DT_I64)
    return diag_error(d, n, "input 1 (axes) has type %s, expected int64", dtype_name(n->in[1]->dt));
  if (got == 0)
    return diag_error(d, n, "axes are missing");
  if (got < 0 || xs->rank < 0) {
    const Shape *as = got < 0 ? &n->in[1]->shape : NULL;
    int add = got > 0 ? k : (as->rank == 1 && as->d[0] >= 0) ? (int)as->d[0] : -1;
    Shape u = (xs->rank >= 0 && add >= 0 && xs->rank + add <= IR_MAX_RANK) ? infer_unknown_dims(xs->rank + add)
                                                                           : shape_unknown();
    infer_set(n, 0, n->in[0]->dt, &u);
    return true;
  }
  int r = xs->rank + k;
  if (r > IR_MAX_RANK)
    return diag_error(d, n, "result rank %d exceeds the supported %d", r, IR_MAX_RANK);
  int ax[IR_MAX_RANK];
  if (!norm_axes(d, n, axes, k, r, ax))
    return false;
  bool ins[IR_MAX_RANK] = {false};
  for (int i = 0; i < k; i++)
    ins[ax[i]] = true;
  Shape o = shape_scalar();
  o.rank = r;
  for (int j = 0, i = 0; j < r; j++) {
    if (ins[j])
      o.d[j] = 1;
    else
      infer_copy_dim(&o, j, xs, i++);
  }
  infer_set(n, 0, n->in[0]->dt, &o);
  return true;
}

bool infer_Identity(Node *n, Diag *d) {
  (void)d;
  infer_set(n, 0, n->in[0]->dt, &n->in[0]->shape);
  return true;
}

/* Dropout is deterministic, output = input and mask all true, unless it runs
 * in training mode (training_mode input, opset 12) with a ratio other than 0:
 * then it draws random numbers, which is refused here when both are constant
 * and at run time (ONNXC_ERR_UNSUPPORTED, see emitc_Dropout) otherwise. */
static const char *const dropout_random =
    "training-mode Dropout with ratio > 0 draws random numbers; not supported";

bool infer_Dropout(Node *n, Diag *d) {
  const Value *x = n->in[0];
  if (!dtype_is_float(x->dt))
    return diag_error(d, n, "input 0 has type %s, expected a floating-point type", dtype_name(x->dt));
  int training = 0;  /* 0 no, 1 yes, -1 decided by a run-time input */
  if (ir_has_input(n, 2)) {
    const Value *t = n->in[2];
    if (t->dt != DT_BOOL)
      return diag_error(d, n, "input 2 (training_mode) has type %s, expected bool", dtype_name(t->dt));
    if (t->kind != VK_CONST)
      training = -1;
    else
      training = t->konst->numel >= 1 && tensor_get_i64(t->konst, 0) != 0;
  }
  if (ir_has_input(n, 1)) {
    const Value *r = n->in[1];
    if (!dtype_is_float(r->dt))
      return diag_error(d, n, "input 1 (ratio) has type %s, expected a floating-point type", dtype_name(r->dt));
    if (training == 1 && r->kind == VK_CONST && r->konst->numel >= 1 && tensor_get_f64(r->konst, 0) != 0)
      return diag_error(d, n, "%s", dropout_random);
  } else if (training == 1) {
    return diag_error(d, n, "%s (the default ratio is 0.5)", dropout_random);
  }
  if (n->g->opset < 7 && ir_attr_int(n, "is_test", 0) == 0)
    diag_warn(d, n, "is_test is 0; compiling for inference (no dropout)");
  infer_set(n, 0, x->dt, &x->shape);
  if (n->n_out > 1)
    infer_set(n, 1, n->g->opset >= 10 ? DT_BOOL : x->dt, &x->shape);
  return true;
}

/* ---- data movement ------------------------------------------------------------ */

bool infer_Transpose(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  int count;
  const int64_t *perm = ir_attr_ints(n, "perm", &count);
  if (!perm && ir_attr(n, "perm") && ir_attr(n, "perm")->kind != AT_INTS)
    return diag_error(d, n, "attribute 'perm' must be a list of ints");
  if (xs->rank < 0) {
    Shape u = perm && count <= IR_MAX_RANK ? infer_unknown_dims(count) : shape_unknown();
    infer_set(n, 0, n->in[0]->dt, &u);
    return true;
  }
  int r = xs->rank;
  if (perm && count != r)
    return diag_error(d, n, "perm has %d entries for an input of rank %d", count, r);
  Shape o = shape_scalar();
  o.rank = r;
  bool seen[IR_MAX_RANK] = {false};
  for (int j = 0; j < r; j++) {
    int64_t p = perm ? perm[j] : r - 1 - j;
    if (p < 0 || p >= r || seen[p])
      return diag_error(d, n, "perm is not a permutation of 0..%d", r - 1);
    seen[p] = true;
    infer_copy_dim(&o, j, xs, (int)p);
  }
  infer_set(n, 0, n->in[0]->dt, &o);
  return true;
}

/* Merges dim i of s into o's dim j (Concat's non-axis dims must agree). */
static bool merge_dim(Diag *d, const Node *n, Shape *o, int j, const Shape *s, int input) {
  if (s->d[j] >= 0 && o->d[j] >= 0 && s->d[j] != o->d[j])
    return diag_error(d, n, "input %d has extent %lld on axis %d, expected %lld", input,
                      (long long)s->d[j], j, (long long)o->d[j]);
  if (o->d[j] < 0 && (s->d[j] >= 0 || !o->sym[j]))
    infer_copy_dim(o, j, s, j);
  return true;
}

bool infer_Concat(Node *n, Diag *d) {
  const Attr *aa = ir_attr(n, "axis");
  if (!aa || aa->kind != AT_INT)
    return diag_error(d, n, "attribute 'axis' is required");
  DType dt = n->in[0]->dt;
  int r = -1, first = -1;
  for (int i = 0; i < n->n_in; i++) {
    if (!ir_has_input(n, i))
      return diag_error(d, n, "input %d is missing", i);
    if (n->in[i]->dt != dt)
      return diag_error(d, n, "input %d has type %s, input 0 has %s", i, dtype_name(n->in[i]->dt),
                        dtype_name(dt));
    int ri = n->in[i]->shape.rank;
    if (ri < 0)
      continue;
    if (r >= 0 && ri != r)
      return diag_error(d, n, "input %d has rank %d, input %d has rank %d", i, ri, first, r);
    r = ri;
    if (first < 0)
      first = i;
  }
  if (r < 0) {
    infer_set(n, 0, dt, NULL);
    return true;
  }
  if (r == 0)
    return diag_error(d, n, "cannot concatenate scalars (rank 0)");
  int axis;
  if (!shape_axis(aa->u.i, r, &axis))
    return diag_error(d, n, "axis %lld is out of range for rank %d", (long long)aa->u.i, r);
  Shape o = n->in[first]->shape;
  int64_t sum = 0;
  bool all_known = true;
  for (int i = 0; i < n->n_in; i++) {
    const Shape *s = &n->in[i]->shape;
    if (s->rank < 0) {
      all_known = false;
      continue;
    }
    for (int j = 0; j < r; j++)
      if (j != axis && !merge_dim(d, n, &o, j, s, i))
        return false;
    if (s->d[axis] < 0)
      all_known = false;
    else
      sum += s->d[axis];
  }
  o.d[axis] = all_known ? sum : DIM_UNKNOWN;
  o.sym[axis] = NULL, o.x[axis] = NULL;
  if (!all_known) { /* -D ranges: the sum of the inputs' extents (YOLO heads' scales) */
    const Graph *root = n->g;
    while (root->parent)
      root = root->parent;
    const DimExpr *t = root->n_syms ? dx_const(n->g->arena, 0) : NULL;
    for (int i = 0; i < n->n_in && t; i++)
      t = n->in[i]->shape.rank == r ? dx_add(n->g->arena, t, shape_dx(n->g->arena, &n->in[i]->shape, axis)) : NULL;
    if (t)
      shape_set_dx(root, &o, axis, t);
  }
  infer_set(n, 0, dt, &o);
  return true;
}

bool infer_Shape(Node *n, Diag *d) {
  (void)d;
  const Shape *xs = &n->in[0]->shape;
  int64_t len[1] = {DIM_UNKNOWN};
  if (xs->rank >= 0) {
    int64_t r = xs->rank;
    int64_t start = ir_attr_int(n, "start", 0), end = ir_attr_int(n, "end", r);
    start = start < 0 ? start + r : start;
    end = end < 0 ? end + r : end;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    len[0] = end > start ? end - start : 0;
  }
  Shape o = shape_make(1, len);
  infer_set(n, 0, DT_I64, &o);
  return true;
}

bool infer_Gather(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape, *is = &n->in[1]->shape;
  if (!is_index_type(n->in[1]->dt))
    return diag_error(d, n, "input 1 (indices) has type %s, expected int32 or int64", dtype_name(n->in[1]->dt));
  if (xs->rank == 0)
    return diag_error(d, n, "input 0 is a scalar; Gather needs rank >= 1");
  if (xs->rank < 0 || is->rank < 0) {
    infer_set(n, 0, n->in[0]->dt, NULL);
    return true;
  }
  int axis, r = xs->rank, q = is->rank;
  int64_t a = ir_attr_int(n, "axis", 0);
  if (!shape_axis(a, r, &axis))
    return diag_error(d, n, "axis %lld is out of range for rank %d", (long long)a, r);
  if (q + r - 1 > IR_MAX_RANK)
    return diag_error(d, n, "result rank %d exceeds the supported %d", q + r - 1, IR_MAX_RANK);
  /* Constant indices are checked now rather than at run time. */
  const Value *iv = n->in[1];
  if (iv->kind == VK_CONST && xs->d[axis] >= 0)
    for (int64_t k = 0; k < iv->konst->numel; k++) {
      int64_t v = tensor_get_i64(iv->konst, k);
      if (v < -xs->d[axis] || v >= xs->d[axis])
        return diag_error(d, n, "index %lld is out of range for axis %d of extent %lld", (long long)v, axis,
                          (long long)xs->d[axis]);
    }
  Shape o = shape_scalar();
  for (int j = 0; j < axis; j++)
    infer_copy_dim(&o, o.rank++, xs, j);
  for (int j = 0; j < q; j++)
    infer_copy_dim(&o, o.rank++, is, j);
  for (int j = axis + 1; j < r; j++)
    infer_copy_dim(&o, o.rank++, xs, j);
  infer_set(n, 0, n->in[0]->dt, &o);
  return true;
}

/* Cast and CastLike: saturate (opset 19) is 0 or 1; round_mode (opset 24,
 * e8m0 targets) is up, down or nearest. */
static bool cast_infer(Node *n, DType dt, Diag *d) {
  DType from = n->in[0]->dt;
  if (dt == DT_STRING || from == DT_STRING)
    return diag_error(d, n, "casts from or to string are not supported");
  if (dt == DT_C64 || dt == DT_C128 || from == DT_C64 || from == DT_C128)
    return diag_error(d, n, "casts from or to complex types are not supported");
  const Attr *sat = ir_attr(n, "saturate");
  if (sat && (sat->kind != AT_INT || (sat->u.i != 0 && sat->u.i != 1)))
    return diag_error(d, n, "attribute 'saturate' must be 0 or 1");
  const char *rm = ir_attr_str(n, "round_mode", "up");
  if (strcmp(rm, "up") && strcmp(rm, "down") && strcmp(rm, "nearest"))
    return diag_error(d, n, "attribute 'round_mode' is '%s'; expected up, down or nearest", rm);
  infer_set(n, 0, dt, &n->in[0]->shape);
  return true;
}

bool infer_Cast(Node *n, Diag *d) {
  const Attr *to = ir_attr(n, "to");
  if (!to || to->kind != AT_INT)
    return diag_error(d, n, "attribute 'to' (an element type code) is required");
  if (!dtype_valid((int)to->u.i))
    return diag_error(d, n, "attribute 'to' = %lld is not a known element type", (long long)to->u.i);
  return cast_infer(n, (DType)to->u.i, d);
}

bool infer_CastLike(Node *n, Diag *d) { return cast_infer(n, n->in[1]->dt, d); }

bool infer_Constant(Node *n, Diag *d) {
  if (n->n_attrs != 1)
    return diag_error(d, n, "expected exactly one value attribute, found %d attributes", n->n_attrs);
  const Attr *a = &n->attrs[0];
  const char *nm = a->name;
  if (!strcmp(nm, "value") || !strcmp(nm, "sparse_value")) {
    if ((a->kind != AT_TENSOR && a->kind != AT_SPARSE_TENSOR) || !a->u.t)
      return diag_error(d, n, "attribute '%s' holds no tensor", nm);
    if (a->u.t->dt == DT_STRING)
      return diag_error(d, n, "string constants are not supported");
    infer_set(n, 0, a->u.t->dt, &a->u.t->shape);
  } else if (!strcmp(nm, "value_float") && a->kind == AT_FLOAT) {
    Shape s = shape_scalar();
    infer_set(n, 0, DT_F32, &s);
  } else if (!strcmp(nm, "value_int") && a->kind == AT_INT) {
    Shape s = shape_scalar();
    infer_set(n, 0, DT_I64, &s);
  } else if ((!strcmp(nm, "value_floats") && a->kind == AT_FLOATS) ||
             (!strcmp(nm, "value_ints") && a->kind == AT_INTS)) {
    int64_t len[1] = {a->n};
    Shape s = shape_make(1, len);
    infer_set(n, 0, a->kind == AT_FLOATS ? DT_F32 : DT_I64, &s);
  } else if (!strcmp(nm, "value_string") || !strcmp(nm, "value_strings")) {
    return diag_error(d, n, "string constants are not supported");
  } else {
    return diag_error(d, n, "unknown value attribute '%s'", nm);
  }
  return true;
}
