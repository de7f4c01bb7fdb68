/* infer_misc2.c - inference of the opsg family's assorted ops: CumProd (a
 * scan like CumSum), Det (batched determinants), BitCast (same-width type
 * reinterpretation), CenterCropPad, Col2Im (the inverse of im2col) and
 * TensorScatter (a KV-cache update).
 *
 * Shape-like inputs (CenterCropPad's shape, Col2Im's image_shape and
 * block_shape) are read when constant; otherwise the dims they decide stay
 * unknown and emission, which needs static shapes, reports it.
 */
#include "passes.h"

#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

static bool is_float_type(DType t) { return t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64; }

static bool flag01(Diag *d, const Node *n, const char *name) {
  int64_t v = ir_attr_int(n, name, 0);
  if (v != 0 && v != 1)
    return infer_fail(d, n, "attribute '%s' is %lld, expected 0 or 1", name, (long long)v);
  return true;
}

/* A single-value axis input (a scalar or a 1-element tensor) of type int32/int64. */
static bool axis_input_ok(Diag *d, const Node *n, int i) {
  const Value *a = n->in[i];
  if (a->dt != DT_I32 && a->dt != DT_I64)
    return infer_fail(d, n, "input %d (axis) has element type %s, expected int32 or int64", i,
                      dtype_name(a->dt));
  if (a->shape.rank > 1 || (a->shape.rank == 1 && a->shape.d[0] >= 0 && a->shape.d[0] != 1))
    return infer_fail(d, n, "input %d (axis) must hold a single value (a scalar or a 1-element tensor)", i);
  return true;
}

/* ---- CumProd ----------------------------------------------------------------- */

bool infer_CumProd(Node *n, Diag *d) {
  const Value *x = n->in[0];
  DType t = x->dt;
  if (!is_float_type(t) && t != DT_I32 && t != DT_I64 && t != DT_U32 && t != DT_U64)
    return infer_fail(d, n, "input 0 has element type %s, which CumProd does not support", dtype_name(t));
  if (!axis_input_ok(d, n, 1) || !flag01(d, n, "exclusive") || !flag01(d, n, "reverse"))
    return false;
  if (x->shape.rank == 0)
    return infer_fail(d, n, "input 0 is a scalar; CumProd needs rank >= 1");
  int64_t v[1];
  int count, axis;
  if (x->shape.rank > 0 && infer_const_ints(n, 1, v, &count, 1) && count == 1 &&
      !shape_axis(v[0], x->shape.rank, &axis))
    return infer_fail(d, n, "axis %lld is out of range for an input of rank %d", (long long)v[0], x->shape.rank);
  infer_set(n, 0, t, &x->shape);
  return true;
}

/* ---- Det --------------------------------------------------------------------- */

bool infer_Det(Node *n, Diag *d) {
  const Value *x = n->in[0];
  const Shape *xs = &x->shape;
  if (!is_float_type(x->dt))
    return infer_fail(d, n, "input 0 has element type %s, expected a floating-point type", dtype_name(x->dt));
  if (xs->rank < 0) {
    infer_set(n, 0, x->dt, NULL);
    return true;
  }
  if (xs->rank < 2)
    return infer_fail(d, n, "input 0 has rank %d, expected at least 2 ([*, M, M])", xs->rank);
  int64_t r = xs->d[xs->rank - 2], c = xs->d[xs->rank - 1];
  if (r >= 0 && c >= 0 && r != c)
    return infer_fail(d, n, "input 0 holds %lldx%lld matrices, expected square ones", (long long)r, (long long)c);
  Shape out = *xs;
  out.rank -= 2;
  infer_set(n, 0, x->dt, &out);
  return true;
}

/* ---- BitCast ----------------------------------------------------------------- */

bool infer_BitCast(Node *n, Diag *d) {
  const Value *x = n->in[0];
  const Attr *a = ir_attr(n, "to");
  if (!a || a->kind != AT_INT)
    return infer_fail(d, n, "attribute 'to' (an int element type) is required");
  if (!dtype_valid((int)a->u.i) || a->u.i == DT_UNDEF || a->u.i == DT_STRING)
    return infer_fail(d, n, "attribute 'to' is %lld, which is not a non-string element type", (long long)a->u.i);
  DType to = (DType)a->u.i;
  if (x->dt == DT_STRING)
    return infer_fail(d, n, "input 0 has element type string, which BitCast does not support");
  if (dtype_bits(to) != dtype_bits(x->dt))
    return infer_fail(d, n, "cannot reinterpret %s (%d bits) as %s (%d bits): the widths differ",
                      dtype_name(x->dt), dtype_bits(x->dt), dtype_name(to), dtype_bits(to));
  infer_set(n, 0, to, &x->shape);
  return true;
}

/* ---- CenterCropPad ------------------------------------------------------------ */

bool infer_CenterCropPad(Node *n, Diag *d) {
  const Value *x = n->in[0], *sv = n->in[1];
  if (x->dt == DT_STRING)
    return infer_fail(d, n, "input 0 has element type string, which the C target does not support");
  if (sv->dt != DT_I32 && sv->dt != DT_I64)
    return infer_fail(d, n, "input 1 (shape) has element type %s, expected int32 or int64", dtype_name(sv->dt));
  if (sv->shape.rank >= 0 && sv->shape.rank != 1)
    return infer_fail(d, n, "input 1 (shape) has rank %d, expected 1", sv->shape.rank);
  int rank = x->shape.rank;
  if (rank < 0) {
    infer_set(n, 0, x->dt, NULL);
    return true;
  }
  int n_axes = 0;
  const int64_t *attr_axes = ir_attr_ints(n, "axes", &n_axes);
  int axes[IR_MAX_RANK];
  bool seen[IR_MAX_RANK] = {false};
  if (!attr_axes)
    n_axes = rank;
  if (n_axes > rank)
    return infer_fail(d, n, "attribute 'axes' has %d entries for an input of rank %d", n_axes, rank);
  for (int i = 0; i < n_axes; i++) {
    int64_t ax = attr_axes ? attr_axes[i] : i;
    if (!shape_axis(ax, rank, &axes[i]))
      return infer_fail(d, n, "axis %lld is out of range for an input of rank %d", (long long)ax, rank);
    if (seen[axes[i]])
      return infer_fail(d, n, "axis %lld is repeated in attribute 'axes'", (long long)ax);
    seen[axes[i]] = true;
  }
  if (sv->shape.rank == 1 && sv->shape.d[0] >= 0 && sv->shape.d[0] != n_axes)
    return infer_fail(d, n, "input 1 (shape) has %lld entries, expected %d (one per axis)",
                      (long long)sv->shape.d[0], n_axes);
  Shape out = x->shape;
  int64_t want[IR_MAX_RANK];
  int count;
  bool known = infer_const_ints(n, 1, want, &count, IR_MAX_RANK) && count == n_axes;
  for (int i = 0; i < n_axes; i++) {
    if (known && want[i] < 0)
      return infer_fail(d, n, "input 1 (shape)[%d] is %lld, expected >= 0", i, (long long)want[i]);
    out.d[axes[i]] = known ? want[i] : DIM_UNKNOWN;
    out.sym[axes[i]] = NULL;
  }
  infer_set(n, 0, x->dt, &out);
  return true;
}

/* ---- Col2Im -------------------------------------------------------------------- */

/* Reads a constant 1-D int64 input of k entries, each >= 1; false without an
 * error when not constant, false with *bad set after an error. */
static bool col2im_dims(Diag *d, const Node *n, int i, const char *what, int k, int64_t *v, bool *bad) {
  int count;
  if (!infer_const_ints(n, i, v, &count, IR_MAX_RANK))
    return false;
  if (count != k) {
    *bad = true;
    return infer_fail(d, n, "input %d (%s) has %d entries, expected %d", i, what, count, k);
  }
  for (int j = 0; j < k; j++)
    if (v[j] < 1) {
      *bad = true;
      return infer_fail(d, n, "input %d (%s)[%d] is %lld, expected >= 1", i, what, j, (long long)v[j]);
    }
  return true;
}

bool infer_Col2Im(Node *n, Diag *d) {
  const Value *x = n->in[0];
  const Shape *xs = &x->shape;
  if (x->dt == DT_STRING)
    return infer_fail(d, n, "input 0 has element type string, which the C target does not support");
  for (int i = 1; i <= 2; i++) {
    const Value *v = n->in[i];
    if (v->dt != DT_I64)
      return infer_fail(d, n, "input %d has element type %s, expected int64", i, dtype_name(v->dt));
    if (v->shape.rank >= 0 && v->shape.rank != 1)
      return infer_fail(d, n, "input %d has rank %d, expected 1", i, v->shape.rank);
  }
  if (xs->rank >= 0 && xs->rank != 3)
    return infer_fail(d, n, "input 0 has rank %d, expected 3 ([N, C * prod(block_shape), L])", xs->rank);
  /* k spatial dims: from the image_shape input's length. */
  const Shape *is = &n->in[1]->shape;
  if (is->rank != 1 || is->d[0] < 0) {
    infer_set(n, 0, x->dt, NULL);
    return true;
  }
  int k = (int)is->d[0];
  if (k < 1 || k + 2 > IR_MAX_RANK)
    return infer_fail(d, n, "input 1 (image_shape) has %d entries, expected 1 to %d", k, IR_MAX_RANK - 2);
  int64_t strides[IR_MAX_RANK], dil[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
  if (!infer_attr_ints(n, d, "strides", k, 1, 1, strides) || !infer_attr_ints(n, d, "dilations", k, 1, 1, dil) ||
      !infer_attr_ints(n, d, "pads", 2 * k, 0, 0, pads))
    return false;
  Shape out = infer_unknown_dims(k + 2);
  if (xs->rank == 3)
    out.d[0] = xs->d[0], out.sym[0] = xs->sym[0], out.x[0] = xs->x[0];
  int64_t img[IR_MAX_RANK], blk[IR_MAX_RANK];
  bool bad = false, have_img = col2im_dims(d, n, 1, "image_shape", k, img, &bad);
  if (bad)
    return false;
  bool have_blk = col2im_dims(d, n, 2, "block_shape", k, blk, &bad);
  if (bad)
    return false;
  if (have_img)
    for (int i = 0; i < k; i++)
      out.d[2 + i] = img[i];
  if (have_blk && xs->rank == 3) {
    int64_t bprod = 1, blocks = 1;
    for (int i = 0; i < k; i++)
      bprod *= blk[i];
    if (xs->d[1] >= 0) {
      if (xs->d[1] % bprod != 0)
        return infer_fail(d, n, "input 0 dim 1 (%lld) is not a multiple of prod(block_shape) = %lld",
                          (long long)xs->d[1], (long long)bprod);
      out.d[1] = xs->d[1] / bprod;
    }
    for (int i = 0; have_img && i < k; i++) {
      int64_t span = dil[i] * (blk[i] - 1) + 1, padded = img[i] + pads[i] + pads[k + i];
      if (padded < span)
        return infer_fail(d, n, "block %lld (dilated %lld) does not fit the padded image extent %lld on axis %d",
                          (long long)blk[i], (long long)span, (long long)padded, i);
      blocks *= (padded - span) / strides[i] + 1;
    }
    if (have_img && xs->d[2] >= 0 && xs->d[2] != blocks)
      return infer_fail(d, n, "input 0 has %lld blocks (dim 2), the image and block shapes give %lld",
                        (long long)xs->d[2], (long long)blocks);
  }
  infer_set(n, 0, x->dt, &out);
  return true;
}

/* ---- TensorScatter ---------------------------------------------------------------- */

bool infer_TensorScatter(Node *n, Diag *d) {
  const Value *past = n->in[0], *upd = n->in[1];
  const Shape *ps = &past->shape, *us = &upd->shape;
  if (past->dt == DT_STRING)
    return infer_fail(d, n, "input 0 has element type string, which the C target does not support");
  if (upd->dt != past->dt)
    return infer_fail(d, n, "input 1 (update) has element type %s, input 0 (past_cache) %s", dtype_name(upd->dt),
                      dtype_name(past->dt));
  const char *mode = ir_attr_str(n, "mode", "linear");
  if (strcmp(mode, "linear") != 0 && strcmp(mode, "circular") != 0)
    return infer_fail(d, n, "attribute 'mode' is '%s', expected 'linear' or 'circular'", mode);
  if (ir_has_input(n, 2)) {
    const Value *wi = n->in[2];
    if (wi->dt != DT_I64)
      return infer_fail(d, n, "input 2 (write_indices) has element type %s, expected int64", dtype_name(wi->dt));
    if (wi->shape.rank >= 0 && wi->shape.rank != 1)
      return infer_fail(d, n, "input 2 (write_indices) has rank %d, expected 1", wi->shape.rank);
    if (wi->shape.rank == 1 && ps->rank >= 1 && wi->shape.d[0] >= 0 && ps->d[0] >= 0 && wi->shape.d[0] != ps->d[0])
      return infer_fail(d, n, "input 2 (write_indices) has %lld entries, the batch is %lld",
                        (long long)wi->shape.d[0], (long long)ps->d[0]);
  }
  if (ps->rank >= 0) {
    int axis;
    int64_t a = ir_attr_int(n, "axis", -2);
    if (ps->rank < 2 || !shape_axis(a, ps->rank, &axis) || axis == 0)
      return infer_fail(d, n, "axis %lld is not a sequence axis of an input of rank %d (it must not be 0)",
                        (long long)a, ps->rank);
    if (us->rank >= 0) {
      if (us->rank != ps->rank)
        return infer_fail(d, n, "input 1 (update) has rank %d, input 0 (past_cache) %d", us->rank, ps->rank);
      for (int i = 0; i < ps->rank; i++) {
        if (ps->d[i] < 0 || us->d[i] < 0)
          continue;
        if (i == axis ? us->d[i] > ps->d[i] : us->d[i] != ps->d[i])
          return infer_fail(d, n, "input 1 (update) dim %d is %lld, past_cache's is %lld%s", i,
                            (long long)us->d[i], (long long)ps->d[i], i == axis ? " (the sequence may not grow)" : "");
      }
    }
  }
  infer_set(n, 0, past->dt, ps);
  return true;
}
