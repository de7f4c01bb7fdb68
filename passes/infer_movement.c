/* infer_movement.c - inference for data-movement and indexing ops.
 *
 * Slice, Pad, Expand, Tile, ConstantOfShape, Range, Size, Split,
 * GatherElements, GatherND, ScatterElements, ScatterND, Scatter, OneHot,
 * Trilu, DepthToSpace, SpaceToDepth, EyeLike, ReverseSequence, Compress.
 * Operands that decide a shape (Slice's starts, Pad's pads, Tile's repeats,
 * Range's bounds...) must be constant after folding for the shape to be
 * known; otherwise the affected dims stay unknown and require-static reports
 * them. Symbolic dims pass through wherever an axis is only copied.
 * Opset differences: Slice's attributes become inputs (10) and gain steps;
 * Pad's attribute forms (`paddings` in 1, `pads`/`value` in 2) become inputs
 * (11) and gain axes (18) and wrap mode (19); Split's `split` becomes an input
 * (13) and num_outputs appears with an uneven last part (18); reductions of
 * ScatterElements/ScatterND (add/mul 16, max/min 18); GatherND's batch_dims
 * (12); OneHot's negative indices (11); Tile-1's (tiles, axis) form is not
 * supported.
 */
#include "movement.h"

#include <math.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

enum { OPND_ABSENT = 2 };

static bool is_index_type(DType t) { return t == DT_I32 || t == DT_I64; }

/* Types with arithmetic in generated code (reductions, Range, OneHot). */
static bool is_number(DType t) {
  return t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64 || (dtype_is_int(t) && dtype_bits(t) >= 8);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* An integer list: input i when present, else attribute `attr`. Returns
 * MV_KNOWN, MV_DYNAMIC (input not constant), OPND_ABSENT or MV_ERROR. */
static int int_operand(const Node *n, Diag *d, int i, const char *attr, const char *what, int64_t *v, int *count,
                       int max) {
  if (i >= 0 && ir_has_input(n, i)) {
    const Value *x = n->in[i];
    if (!dtype_is_int(x->dt))
      return diag_error(d, n, "input %d (%s) has type %s, expected int64", i, what, dtype_name(x->dt)), MV_ERROR;
    if (x->kind != VK_CONST)
      return MV_DYNAMIC;
    const Tensor *t = x->konst;
    if (t->shape.rank > 1)
      return diag_error(d, n, "input %d (%s) has rank %d, expected 1", i, what, t->shape.rank), MV_ERROR;
    if (t->numel > max)
      return diag_error(d, n, "input %d (%s) has %lld entries, at most %d allowed here", i, what,
                        (long long)t->numel, max), MV_ERROR;
    for (int64_t k = 0; k < t->numel; k++)
      v[k] = tensor_get_i64(t, k);
    *count = (int)t->numel;
    return MV_KNOWN;
  }
  const Attr *a = attr ? ir_attr(n, attr) : NULL;
  if (!a)
    return OPND_ABSENT;
  if (a->kind != AT_INTS)
    return diag_error(d, n, "attribute '%s' must be a list of ints", attr), MV_ERROR;
  if (a->n > max)
    return diag_error(d, n, "attribute '%s' has %d entries, at most %d allowed here", attr, a->n, max), MV_ERROR;
  memcpy(v, a->u.is, (size_t)a->n * sizeof *v);
  *count = a->n;
  return MV_KNOWN;
}

/* Normalizes axes against rank r; rejects out-of-range and repeated ones. */
static bool norm_axes(Diag *d, const Node *n, const char *what, const int64_t *axes, int count, int r, int *out) {
  bool seen[IR_MAX_RANK] = {false};
  for (int i = 0; i < count; i++) {
    if (!shape_axis(axes[i], r, &out[i]))
      return diag_error(d, n, "%s entry %lld is out of range for rank %d", what, (long long)axes[i], r);
    if (seen[out[i]])
      return diag_error(d, n, "%s entry %lld is repeated", what, (long long)axes[i]);
    seen[out[i]] = true;
  }
  return true;
}

/* Value of a scalar (or one-element) constant input as int64; false when it
 * is not constant. Floats truncate toward zero. */
static bool const_scalar_i64(const Node *n, int i, int64_t *v) {
  if (!ir_has_input(n, i) || n->in[i]->kind != VK_CONST || n->in[i]->konst->numel != 1)
    return false;
  const Tensor *t = n->in[i]->konst;
  if (dtype_is_float(t->dt)) {
    double f = tensor_get_f64(t, 0);
    if (!(f > -9.2e18 && f < 9.2e18))
      return false;
    *v = (int64_t)f;
  } else {
    *v = tensor_get_i64(t, 0);
  }
  return true;
}

/* Checks that an input holds one element (a scalar or a [1] tensor). */
static bool check_one_element(Diag *d, const Node *n, int i, const char *what) {
  const Shape *s = &n->in[i]->shape;
  int64_t numel;
  if (s->rank > 1 || (shape_numel(s, &numel) && numel != 1))
    return diag_error(d, n, "input %d (%s) must hold exactly one element", i, what);
  return true;
}

/* ---- Slice ---------------------------------------------------------------- */

/* Clamps one axis per the Slice-13 rules (negative starts/ends count from the
 * end; the ranges differ for negative steps). */
static void slice_axis(int64_t dim, int64_t s, int64_t e, int64_t step, SliceDim *o) {
  o->start = 0;
  o->step = 1;
  if (dim < 0) {
    /* Unknown extent: only x[0:INT_MAX] (the exporters' "to the end") is known to keep it. */
    o->count = (s == 0 && step == 1 && e >= INT32_MAX) ? -2 : -1;
    return;
  }
  o->count = 0;
  if (dim == 0)
    return;
  if (s < 0)
    s += dim;
  if (e < 0)
    e += dim;
  uint64_t c = 0;
  if (step > 0) {
    s = clamp64(s, 0, dim);
    e = clamp64(e, 0, dim);
    if (e > s)
      c = 1 + (uint64_t)(e - s - 1) / (uint64_t)step;
  } else {
    s = clamp64(s, 0, dim - 1);
    e = clamp64(e, -1, dim - 1);
    if (s > e)
      c = 1 + (uint64_t)(s - e - 1) / (0 - (uint64_t)step);
  }
  o->start = s;
  o->count = (int64_t)c;
  o->step = c > 1 ? step : 1;
}

/* sd[j].count: >= 0 static, -1 unknown, -2 the input's extent (symbol kept).
 * Axes the node does not slice get {0, 1, -2}. */
int mv_slice_params(const Node *n, Diag *d, SliceDim *sd) {
  const Shape *xs = &n->in[0]->shape;
  int r = xs->rank;
  int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
  int ns = 0, ne = 0, na = 0, nsp = 0;
  int gs = int_operand(n, d, 1, "starts", "starts", st, &ns, r);
  int ge = int_operand(n, d, 2, "ends", "ends", en, &ne, r);
  int ga = int_operand(n, d, 3, "axes", "axes", ax, &na, r);
  int gp = int_operand(n, d, 4, NULL, "steps", sp, &nsp, r);
  if (gs == MV_ERROR || ge == MV_ERROR || ga == MV_ERROR || gp == MV_ERROR)
    return MV_ERROR;
  if (gs == OPND_ABSENT || ge == OPND_ABSENT)
    return diag_error(d, n, n->g->opset < 10 ? "attributes 'starts' and 'ends' are required"
                                             : "inputs 1 (starts) and 2 (ends) are required"), MV_ERROR;
  for (int j = 0; j < r; j++)
    sd[j] = (SliceDim){0, 1, -2};
  if (ga == MV_DYNAMIC) {
    for (int j = 0; j < r; j++)
      sd[j].count = -1;
    return MV_DYNAMIC;
  }
  int count = gs == MV_KNOWN ? ns : ge == MV_KNOWN ? ne : ga == MV_KNOWN ? na : -1;
  if (count < 0) {
    /* Only the axes are known (or defaulted): those get unknown extents. */
    const Shape *ss = &n->in[1]->shape;
    count = ss->rank == 1 && ss->d[0] >= 0 ? (int)ss->d[0] : -1;
    if (count < 0 || count > r) {
      for (int j = 0; j < r; j++)
        sd[j].count = -1;
      return MV_DYNAMIC;
    }
  }
  if ((gs == MV_KNOWN && ns != count) || (ge == MV_KNOWN && ne != count))
    return diag_error(d, n, "starts has %d entries and ends %d; they must match", gs == MV_KNOWN ? ns : count,
                      ge == MV_KNOWN ? ne : count), MV_ERROR;
  if (ga == MV_KNOWN && na != count)
    return diag_error(d, n, "axes has %d entries, starts has %d", na, count), MV_ERROR;
  if (gp == MV_KNOWN && nsp != count)
    return diag_error(d, n, "steps has %d entries, starts has %d", nsp, count), MV_ERROR;
  int axes[IR_MAX_RANK];
  if (ga == OPND_ABSENT)
    for (int i = 0; i < count; i++)
      ax[i] = i;
  if (!norm_axes(d, n, "axes", ax, count, r, axes))
    return MV_ERROR;
  for (int i = 0; i < count && gp == MV_KNOWN; i++)
    if (sp[i] == 0)
      return diag_error(d, n, "steps entry %d is 0", i), MV_ERROR;
  bool known = gs == MV_KNOWN && ge == MV_KNOWN && gp != MV_DYNAMIC;
  for (int i = 0; i < count; i++) {
    if (known)
      slice_axis(xs->d[axes[i]], st[i], en[i], gp == MV_KNOWN ? sp[i] : 1, &sd[axes[i]]);
    else
      sd[axes[i]].count = -1;
  }
  return known ? MV_KNOWN : MV_DYNAMIC;
}

bool infer_Slice(Node *n, Diag *d) {
  const Value *x = n->in[0];
  if (x->shape.rank == 0)
    return diag_error(d, n, "input 0 is a scalar; Slice needs rank >= 1");
  if (x->shape.rank < 0) {
    infer_set(n, 0, x->dt, NULL);
    return true;
  }
  SliceDim sd[IR_MAX_RANK];
  if (mv_slice_params(n, d, sd) == MV_ERROR)
    return false;
  Shape o = x->shape;
  for (int j = 0; j < o.rank; j++)
    if (sd[j].count != -2) {
      o.d[j] = sd[j].count < 0 ? DIM_UNKNOWN : sd[j].count;
      o.sym[j] = NULL, o.x[j] = NULL;
    }
  infer_set(n, 0, x->dt, &o);
  return true;
}

/* ---- Pad ------------------------------------------------------------------ */

static bool pad_mode(const Node *n, Diag *d, PadMode *mode) {
  static const char *const names[] = {"constant", "reflect", "edge", "wrap"};
  const char *m = ir_attr_str(n, "mode", "constant");
  for (int i = 0; i < 4; i++)
    if (!strcmp(m, names[i])) {
      *mode = (PadMode)i;
      return true;
    }
  return diag_error(d, n, "mode '%s' is not one of constant, reflect, edge, wrap", m);
}

int mv_pad_params(const Node *n, Diag *d, int64_t *begin, int64_t *end, PadMode *mode) {
  int r = n->in[0]->shape.rank;
  if (!pad_mode(n, d, mode))
    return MV_ERROR;
  for (int j = 0; j < r; j++)
    begin[j] = end[j] = 0;
  int64_t pads[2 * IR_MAX_RANK], ax[IR_MAX_RANK];
  int np = 0, na = 0;
  /* Opset 1 spelled the attribute `paddings`; 2..10 `pads`; 11 on, input 1. */
  const char *attr = ir_attr(n, "paddings") && !ir_attr(n, "pads") ? "paddings" : "pads";
  int gp = int_operand(n, d, 1, attr, "pads", pads, &np, 2 * IR_MAX_RANK);
  int ga = int_operand(n, d, 3, NULL, "axes", ax, &na, IR_MAX_RANK);
  if (gp == MV_ERROR || ga == MV_ERROR)
    return MV_ERROR;
  if (gp == OPND_ABSENT)
    return diag_error(d, n, n->g->opset < 11 ? "attribute 'pads' is required" : "input 1 (pads) is required"),
           MV_ERROR;
  if (gp == MV_DYNAMIC || ga == MV_DYNAMIC)
    return MV_DYNAMIC;
  if (ga == OPND_ABSENT) {
    na = r;
    for (int j = 0; j < r; j++)
      ax[j] = j;
  }
  int axes[IR_MAX_RANK];
  if (!norm_axes(d, n, "axes", ax, na, r, axes))
    return MV_ERROR;
  if (np != 2 * na)
    return diag_error(d, n, "pads has %d entries, expected %d (a begin and an end for each of %d axes)", np,
                      2 * na, na), MV_ERROR;
  for (int i = 0; i < na; i++) {
    begin[axes[i]] = pads[i];
    end[axes[i]] = pads[i + na];
  }
  return MV_KNOWN;
}

bool infer_Pad(Node *n, Diag *d) {
  const Value *x = n->in[0];
  const Shape *xs = &x->shape;
  if (ir_has_input(n, 2)) {
    if (n->in[2]->dt != x->dt)
      return diag_error(d, n, "input 2 (constant_value) has type %s, input 0 has %s", dtype_name(n->in[2]->dt),
                        dtype_name(x->dt));
    if (!check_one_element(d, n, 2, "constant_value"))
      return false;
  }
  if (xs->rank < 0) {
    PadMode mode;
    if (!pad_mode(n, d, &mode))
      return false;
    infer_set(n, 0, x->dt, NULL);
    return true;
  }
  int64_t b[IR_MAX_RANK], e[IR_MAX_RANK];
  PadMode mode;
  int got = mv_pad_params(n, d, b, e, &mode);
  if (got == MV_ERROR)
    return false;
  if (got == MV_DYNAMIC) {
    Shape u = infer_unknown_dims(xs->rank);
    infer_set(n, 0, x->dt, &u);
    return true;
  }
  Shape o = *xs;
  for (int j = 0; j < xs->rank; j++) {
    if (b[j] == 0 && e[j] == 0)
      continue;
    o.sym[j] = NULL, o.x[j] = NULL;
    if (xs->d[j] < 0) {
      o.d[j] = DIM_UNKNOWN;
      continue;
    }
    /* Negative pads crop first; the other modes need something left to copy. */
    int64_t kept = xs->d[j] + (b[j] < 0 ? b[j] : 0) + (e[j] < 0 ? e[j] : 0);
    if (mode != PAD_CONSTANT && kept <= 0 && (b[j] > 0 || e[j] > 0))
      return diag_error(d, n, "cannot pad axis %d in %s mode: it has no elements%s", j, ir_attr_str(n, "mode", ""),
                        xs->d[j] > 0 ? " left after cropping" : "");
    /* Pads fit in int64 only when they are sane; reject the rest. */
    if (b[j] < -xs->d[j] || e[j] < -xs->d[j] || b[j] > INT32_MAX * (int64_t)64 || e[j] > INT32_MAX * (int64_t)64 ||
        xs->d[j] + b[j] + e[j] < 0)
      return diag_error(d, n, "pads %lld and %lld do not fit axis %d of extent %lld", (long long)b[j],
                        (long long)e[j], j, (long long)xs->d[j]);
    o.d[j] = xs->d[j] + b[j] + e[j];
  }
  infer_set(n, 0, x->dt, &o);
  return true;
}

/* ---- Expand, Tile ------------------------------------------------------------ */

bool infer_Expand(Node *n, Diag *d) {
  const Value *x = n->in[0];
  const Shape *xs = &x->shape;
  if (n->in[1]->dt != DT_I64)
    return diag_error(d, n, "input 1 (shape) has type %s, expected int64", dtype_name(n->in[1]->dt));
  int64_t sh[IR_MAX_RANK];
  int k = 0;
  int got = int_operand(n, d, 1, NULL, "shape", sh, &k, IR_MAX_RANK);
  if (got == MV_ERROR)
    return false;
  if (got != MV_KNOWN || xs->rank < 0) {
    const Shape *ss = &n->in[1]->shape;
    int len = got == MV_KNOWN ? k : ss->rank == 1 && ss->d[0] >= 0 && ss->d[0] <= IR_MAX_RANK ? (int)ss->d[0] : -1;
    if (len < 0 || xs->rank < 0) {
      infer_set(n, 0, x->dt, NULL);
      return true;
    }
    /* Dims of the input other than 1 survive whatever the shape says. */
    int r = len > xs->rank ? len : xs->rank;
    Shape o = infer_unknown_dims(r);
    for (int j = 0; j < xs->rank; j++)
      if (xs->d[j] > 1)
        infer_copy_dim(&o, j + r - xs->rank, xs, j);
    infer_set(n, 0, x->dt, &o);
    return true;
  }
  int r = k > xs->rank ? k : xs->rank;
  Shape o = infer_unknown_dims(r);
  for (int j = 0; j < r; j++) {
    int ia = j - (r - xs->rank), ib = j - (r - k);
    int64_t a = ia >= 0 ? xs->d[ia] : 1, s = ib >= 0 ? sh[ib] : 1;
    if (s < 0)
      return diag_error(d, n, "shape entry %d is %lld; extents cannot be negative", ib, (long long)s);
    if (s == 1 && ia >= 0)
      infer_copy_dim(&o, j, xs, ia);
    else if (s == 1 || a == 1 || a < 0 || a == s)
      o.d[j] = s;  /* an unknown input extent must be s or 1 */
    else
      return diag_error(d, n, "cannot expand extent %lld of input axis %d to %lld", (long long)a, ia, (long long)s);
  }
  infer_set(n, 0, x->dt, &o);
  return true;
}

bool infer_Tile(Node *n, Diag *d) {
  const Value *x = n->in[0];
  const Shape *xs = &x->shape;
  if (n->n_in > 2)
    return diag_error(d, n, "Tile-1 (tiles and axis inputs) is not supported; use opset 6 or later");
  if (!dtype_is_int(n->in[1]->dt))
    return diag_error(d, n, "input 1 (repeats) has type %s, expected int64", dtype_name(n->in[1]->dt));
  if (xs->rank < 0) {
    infer_set(n, 0, x->dt, NULL);
    return true;
  }
  int64_t rep[IR_MAX_RANK];
  int k = 0;
  int got = int_operand(n, d, 1, NULL, "repeats", rep, &k, IR_MAX_RANK);
  if (got == MV_ERROR)
    return false;
  if (got != MV_KNOWN) {
    Shape u = infer_unknown_dims(xs->rank);
    infer_set(n, 0, x->dt, &u);
    return true;
  }
  if (k != xs->rank)
    return diag_error(d, n, "repeats has %d entries for an input of rank %d", k, xs->rank);
  Shape o = *xs;
  for (int j = 0; j < k; j++) {
    if (rep[j] < 0)
      return diag_error(d, n, "repeats entry %d is %lld; it cannot be negative", j, (long long)rep[j]);
    if (rep[j] == 1)
      continue;
    o.sym[j] = NULL, o.x[j] = NULL;
    if (xs->d[j] < 0)
      o.d[j] = rep[j] == 0 ? 0 : DIM_UNKNOWN;
    else if (xs->d[j] != 0 && rep[j] > INT64_MAX / 4 / xs->d[j])
      return diag_error(d, n, "axis %d: %lld repeats of extent %lld overflow", j, (long long)rep[j],
                        (long long)xs->d[j]);
    else
      o.d[j] = xs->d[j] * rep[j];
  }
  infer_set(n, 0, x->dt, &o);
  return true;
}

/* ---- ConstantOfShape, Range, Size, EyeLike ---------------------------------- */

bool infer_ConstantOfShape(Node *n, Diag *d) {
  const Value *s = n->in[0];
  if (s->dt != DT_I64)
    return diag_error(d, n, "input 0 (shape) has type %s, expected int64", dtype_name(s->dt));
  DType dt = DT_F32;
  const Attr *a = ir_attr(n, "value");
  if (a) {
    if (a->kind != AT_TENSOR || !a->u.t)
      return diag_error(d, n, "attribute 'value' must be a tensor");
    if (a->u.t->numel != 1)
      return diag_error(d, n, "attribute 'value' must hold exactly one element, it has %lld",
                        (long long)a->u.t->numel);
    dt = a->u.t->dt;
    if (dt == DT_STRING)
      return diag_error(d, n, "string values are not supported");
  }
  int64_t sh[IR_MAX_RANK];
  int k = 0;
  int got = int_operand(n, d, 0, NULL, "shape", sh, &k, IR_MAX_RANK);
  if (got == MV_ERROR)
    return false;
  if (got != MV_KNOWN) {
    const Shape *ss = &s->shape;
    Shape u = ss->rank == 1 && ss->d[0] >= 0 && ss->d[0] <= IR_MAX_RANK ? infer_unknown_dims((int)ss->d[0]) : shape_unknown();
    infer_set(n, 0, dt, &u);
    return true;
  }
  for (int j = 0; j < k; j++)
    if (sh[j] < 0)
      return diag_error(d, n, "shape entry %d is %lld; extents cannot be negative", j, (long long)sh[j]);
  Shape o = shape_make(k, sh);
  int64_t numel;
  if (!shape_numel(&o, &numel))
    return diag_error(d, n, "the requested shape has too many elements");
  infer_set(n, 0, dt, &o);
  return true;
}

bool infer_Range(Node *n, Diag *d) {
  DType dt = n->in[0]->dt;
  for (int i = 0; i < 3; i++) {
    if (n->in[i]->dt != dt)
      return diag_error(d, n, "input %d has type %s, input 0 has %s", i, dtype_name(n->in[i]->dt), dtype_name(dt));
    if (!check_one_element(d, n, i, i == 0 ? "start" : i == 1 ? "limit" : "delta"))
      return false;
  }
  if (!(dt == DT_F32 || dt == DT_F64 || dt == DT_F16 || dt == DT_BF16 || dt == DT_I16 || dt == DT_I32 ||
        dt == DT_I64))
    return diag_error(d, n, "type %s is not supported (float, double, int16, int32, int64, float16, bfloat16)",
                      dtype_name(dt));
  int64_t len[1] = {DIM_UNKNOWN};
  bool known = n->in[0]->kind == VK_CONST && n->in[1]->kind == VK_CONST && n->in[2]->kind == VK_CONST;
  if (known && dtype_is_int(dt)) {
    int64_t s = tensor_get_i64(n->in[0]->konst, 0), l = tensor_get_i64(n->in[1]->konst, 0);
    int64_t dl = tensor_get_i64(n->in[2]->konst, 0);
    if (dl == 0)
      return diag_error(d, n, "delta is 0");
    /* ceil((l - s) / dl) without overflow: the distance fits in uint64. */
    uint64_t c = 0;
    if (dl > 0 && l > s)
      c = 1 + ((uint64_t)l - (uint64_t)s - 1) / (uint64_t)dl;
    else if (dl < 0 && l < s)
      c = 1 + ((uint64_t)s - (uint64_t)l - 1) / (0 - (uint64_t)dl);
    if (c > (uint64_t)1 << 40)
      return diag_error(d, n, "the range has %llu elements, too many", (unsigned long long)c);
    len[0] = (int64_t)c;
  } else if (known) {
    double s = tensor_get_f64(n->in[0]->konst, 0), l = tensor_get_f64(n->in[1]->konst, 0);
    double dl = tensor_get_f64(n->in[2]->konst, 0);
    if (dl == 0)
      return diag_error(d, n, "delta is 0");
    double c = ceil((l - s) / dl);
    if (!(c < 1099511627776.0))
      return diag_error(d, n, "the range from %g to %g by %g has too many elements", s, l, dl);
    len[0] = c > 0 ? (int64_t)c : 0;
  }
  Shape o = shape_make(1, len);
  infer_set(n, 0, dt, &o);
  return true;
}

bool infer_Size(Node *n, Diag *d) {
  (void)d;
  Shape s = shape_scalar();
  infer_set(n, 0, DT_I64, &s);
  return true;
}

bool infer_EyeLike(Node *n, Diag *d) {
  const Value *x = n->in[0];
  if (x->shape.rank >= 0 && x->shape.rank != 2)
    return diag_error(d, n, "input 0 has rank %d, expected 2", x->shape.rank);
  DType dt = x->dt;
  const Attr *a = ir_attr(n, "dtype");
  if (a) {
    if (a->kind != AT_INT || !dtype_valid((int)a->u.i))
      return diag_error(d, n, "attribute 'dtype' is not a known element type");
    dt = (DType)a->u.i;
  }
  if (!is_number(dt) && dt != DT_BOOL)
    return diag_error(d, n, "output type %s is not supported", dtype_name(dt));
  Shape o = x->shape.rank < 0 ? infer_unknown_dims(2) : x->shape;
  infer_set(n, 0, dt, &o);
  return true;
}

/* ---- Split ---------------------------------------------------------------------- */

bool mv_split_axis(const Node *n, Diag *d, int r, int *axis) {
  int64_t a = ir_attr_int(n, "axis", 0);
  if (!shape_axis(a, r, axis))
    return diag_error(d, n, "axis %lld is out of range for rank %d", (long long)a, r);
  return true;
}

static int split_list(const Node *n, Diag *d, int64_t dim, int64_t *sizes, const Tensor *t, const Attr *a) {
  int64_t count = t ? t->numel : a->n;
  if (count != n->n_out)
    return diag_error(d, n, "split has %lld entries for %d outputs", (long long)count, n->n_out), MV_ERROR;
  int64_t sum = 0;
  for (int i = 0; i < n->n_out; i++) {
    sizes[i] = t ? tensor_get_i64(t, i) : a->u.is[i];
    if (sizes[i] < 0 || sizes[i] > INT64_MAX / 4 - sum)
      return diag_error(d, n, "split entry %d is %lld", i, (long long)sizes[i]), MV_ERROR;
    sum += sizes[i];
  }
  if (dim >= 0 && sum != dim)
    return diag_error(d, n, "split sizes add up to %lld but the axis has extent %lld", (long long)sum,
                      (long long)dim), MV_ERROR;
  return MV_KNOWN;
}

int mv_split_sizes(const Node *n, Diag *d, int64_t dim, int64_t *sizes) {
  int k = n->n_out;
  if (ir_has_input(n, 1)) {
    const Value *s = n->in[1];
    if (!dtype_is_int(s->dt))
      return diag_error(d, n, "input 1 (split) has type %s, expected int64", dtype_name(s->dt)), MV_ERROR;
    if (s->kind != VK_CONST)
      return MV_DYNAMIC;
    if (s->konst->shape.rank > 1)
      return diag_error(d, n, "input 1 (split) has rank %d, expected 1", s->konst->shape.rank), MV_ERROR;
    return split_list(n, d, dim, sizes, s->konst, NULL);
  }
  const Attr *a = ir_attr(n, "split");
  if (a && a->kind == AT_INTS && a->n > 0)
    return split_list(n, d, dim, sizes, NULL, a);
  const Attr *no = ir_attr(n, "num_outputs");
  if (no && (no->kind != AT_INT || no->u.i != k))
    return diag_error(d, n, "num_outputs is %lld but the node has %d outputs", (long long)no->u.i, k), MV_ERROR;
  /* Equal parts; an uneven extent gives ceil-sized parts and a smaller last one. */
  int64_t part = dim < 0 ? DIM_UNKNOWN : dim % k == 0 ? dim / k : dim / k + 1;
  for (int i = 0; i < k; i++)
    sizes[i] = part;
  if (dim >= 0 && dim % k != 0) {
    sizes[k - 1] = dim - part * (k - 1);
    if (sizes[k - 1] < 0)
      return diag_error(d, n, "cannot split extent %lld into %d parts", (long long)dim, k), MV_ERROR;
  }
  return MV_KNOWN;
}

bool infer_Split(Node *n, Diag *d) {
  const Value *x = n->in[0];
  const Shape *xs = &x->shape;
  if (xs->rank == 0)
    return diag_error(d, n, "input 0 is a scalar; Split needs rank >= 1");
  if (xs->rank < 0) {
    for (int i = 0; i < n->n_out; i++)
      infer_set(n, i, x->dt, NULL);
    return true;
  }
  int axis;
  if (!mv_split_axis(n, d, xs->rank, &axis))
    return false;
  int64_t *sizes = arena_alloc(n->g->arena, (size_t)n->n_out * sizeof *sizes);
  int got = mv_split_sizes(n, d, xs->d[axis], sizes);
  if (got == MV_ERROR)
    return false;
  for (int i = 0; i < n->n_out; i++) {
    Shape o = *xs;
    o.d[axis] = got == MV_KNOWN ? sizes[i] : DIM_UNKNOWN;
    o.sym[axis] = NULL, o.x[axis] = NULL;
    if (n->n_out == 1 && got == MV_KNOWN)
      infer_copy_dim(&o, axis, xs, axis);
    infer_set(n, i, x->dt, &o);
  }
  return true;
}

/* ---- gathers ------------------------------------------------------------------- */

/* Constant indices are checked against a known extent now rather than at run time. */
static bool check_const_indices(Diag *d, const Node *n, int i, int64_t dim, int axis) {
  const Value *iv = n->in[i];
  if (iv->kind != VK_CONST || dim < 0)
    return true;
  for (int64_t k = 0; k < iv->konst->numel; k++) {
    int64_t v = tensor_get_i64(iv->konst, k);
    if (v < -dim || v >= dim)
      return diag_error(d, n, "index %lld is out of range for axis %d of extent %lld", (long long)v, axis,
                        (long long)dim);
  }
  return true;
}

bool infer_GatherElements(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape, *is = &n->in[1]->shape;
  if (!is_index_type(n->in[1]->dt))
    return diag_error(d, n, "input 1 (indices) has type %s, expected int32 or int64", dtype_name(n->in[1]->dt));
  if (xs->rank == 0)
    return diag_error(d, n, "input 0 is a scalar; GatherElements needs rank >= 1");
  if (xs->rank >= 0 && is->rank >= 0 && xs->rank != is->rank)
    return diag_error(d, n, "input 1 (indices) has rank %d, input 0 has rank %d; they must match", is->rank,
                      xs->rank);
  int r = xs->rank >= 0 ? xs->rank : is->rank, axis = 0;
  if (r >= 0 && !shape_axis(ir_attr_int(n, "axis", 0), r, &axis))
    return diag_error(d, n, "axis %lld is out of range for rank %d", (long long)ir_attr_int(n, "axis", 0), r);
  if (xs->rank >= 0 && is->rank >= 0) {
    for (int j = 0; j < r; j++)
      if (j != axis && xs->d[j] >= 0 && is->d[j] > xs->d[j])
        return diag_error(d, n, "indices extent %lld on axis %d exceeds the data's %lld", (long long)is->d[j], j,
                          (long long)xs->d[j]);
    if (!check_const_indices(d, n, 1, xs->d[axis], axis))
      return false;
  }
  infer_set(n, 0, n->in[0]->dt, is->rank >= 0 ? is : NULL);
  return true;
}

bool infer_GatherND(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape, *is = &n->in[1]->shape;
  if (!is_index_type(n->in[1]->dt))
    return diag_error(d, n, "input 1 (indices) has type %s, expected int64", dtype_name(n->in[1]->dt));
  int64_t b = n->g->opset >= 12 ? ir_attr_int(n, "batch_dims", 0) : 0;
  if (xs->rank == 0 || is->rank == 0)
    return diag_error(d, n, "input %d is a scalar; GatherND needs rank >= 1", xs->rank == 0 ? 0 : 1);
  if (xs->rank < 0 || is->rank < 0 || is->d[is->rank - 1] < 0) {
    infer_set(n, 0, n->in[0]->dt, NULL);
    return true;
  }
  int r = xs->rank, q = is->rank;
  int64_t k = is->d[q - 1];
  if (b < 0 || b >= (r < q ? r : q))
    return diag_error(d, n, "batch_dims %lld must be in [0, %d)", (long long)b, r < q ? r : q);
  if (k < 1 || k > r - b)
    return diag_error(d, n, "the last indices extent is %lld; it must be in [1, %lld]", (long long)k,
                      (long long)(r - b));
  for (int j = 0; j < b; j++)
    if (xs->d[j] >= 0 && is->d[j] >= 0 && xs->d[j] != is->d[j])
      return diag_error(d, n, "batch axis %d has extent %lld in the data and %lld in the indices", j,
                        (long long)xs->d[j], (long long)is->d[j]);
  int orank = q - 1 + r - (int)b - (int)k;
  if (orank > IR_MAX_RANK)
    return diag_error(d, n, "result rank %d exceeds the supported %d", orank, IR_MAX_RANK);
  Shape o = shape_scalar();
  for (int j = 0; j < q - 1; j++)
    infer_copy_dim(&o, o.rank++, j < b && xs->d[j] >= 0 ? xs : is, j);
  for (int j = (int)(b + k); j < r; j++)
    infer_copy_dim(&o, o.rank++, xs, j);
  infer_set(n, 0, n->in[0]->dt, &o);
  return true;
}

/* ---- scatters ------------------------------------------------------------------ */

static bool check_reduction(Diag *d, const Node *n, DType dt) {
  const char *red = ir_attr_str(n, "reduction", "none");
  int64_t need = !strcmp(red, "none") ? 0 : !strcmp(red, "add") || !strcmp(red, "mul") ? 16
                 : !strcmp(red, "max") || !strcmp(red, "min")                           ? 18 : -1;
  if (need < 0)
    return diag_error(d, n, "reduction '%s' is not one of none, add, mul, max, min", red);
  if (n->op == OP_Scatter && need > 0)
    return diag_error(d, n, "Scatter has no reduction; use ScatterElements");
  if (n->g->opset < need)
    return diag_error(d, n, "reduction '%s' needs opset %lld (model has %lld)", red, (long long)need,
                      (long long)n->g->opset);
  if (need > 0 && !is_number(dt) && dt != DT_BOOL)
    return diag_error(d, n, "reduction '%s' is not supported for type %s", red, dtype_name(dt));
  return true;
}

static bool scatter_elements(Node *n, Diag *d) {
  const Value *x = n->in[0], *u = n->in[2];
  const Shape *xs = &x->shape, *is = &n->in[1]->shape, *us = &u->shape;
  if (!is_index_type(n->in[1]->dt))
    return diag_error(d, n, "input 1 (indices) has type %s, expected int32 or int64", dtype_name(n->in[1]->dt));
  if (u->dt != x->dt)
    return diag_error(d, n, "input 2 (updates) has type %s, input 0 has %s", dtype_name(u->dt), dtype_name(x->dt));
  if (!check_reduction(d, n, x->dt))
    return false;
  if (xs->rank == 0)
    return diag_error(d, n, "input 0 is a scalar; it needs rank >= 1");
  if (xs->rank >= 0) {
    int axis;
    if (!shape_axis(ir_attr_int(n, "axis", 0), xs->rank, &axis))
      return diag_error(d, n, "axis %lld is out of range for rank %d", (long long)ir_attr_int(n, "axis", 0),
                        xs->rank);
    if (is->rank >= 0 && is->rank != xs->rank)
      return diag_error(d, n, "input 1 (indices) has rank %d, input 0 has rank %d", is->rank, xs->rank);
    if (is->rank >= 0 && !check_const_indices(d, n, 1, xs->d[axis], axis))
      return false;
    for (int j = 0; j < is->rank; j++)
      if (j != axis && xs->d[j] >= 0 && is->d[j] > xs->d[j])
        return diag_error(d, n, "indices extent %lld on axis %d exceeds the data's %lld", (long long)is->d[j], j,
                          (long long)xs->d[j]);
  }
  if (is->rank >= 0 && us->rank >= 0) {
    if (is->rank != us->rank)
      return diag_error(d, n, "input 2 (updates) has rank %d, input 1 (indices) has rank %d", us->rank, is->rank);
    for (int j = 0; j < is->rank; j++)
      if (is->d[j] >= 0 && us->d[j] >= 0 && is->d[j] != us->d[j])
        return diag_error(d, n, "updates and indices differ on axis %d (%lld vs %lld)", j, (long long)us->d[j],
                          (long long)is->d[j]);
  }
  infer_set(n, 0, x->dt, xs->rank >= 0 ? xs : NULL);
  return true;
}

bool infer_ScatterElements(Node *n, Diag *d) { return scatter_elements(n, d); }
bool infer_Scatter(Node *n, Diag *d) { return scatter_elements(n, d); }

bool infer_ScatterND(Node *n, Diag *d) {
  const Value *x = n->in[0], *u = n->in[2];
  const Shape *xs = &x->shape, *is = &n->in[1]->shape, *us = &u->shape;
  if (!is_index_type(n->in[1]->dt))
    return diag_error(d, n, "input 1 (indices) has type %s, expected int64", dtype_name(n->in[1]->dt));
  if (u->dt != x->dt)
    return diag_error(d, n, "input 2 (updates) has type %s, input 0 has %s", dtype_name(u->dt), dtype_name(x->dt));
  if (!check_reduction(d, n, x->dt))
    return false;
  if (xs->rank == 0 || is->rank == 0)
    return diag_error(d, n, "input %d is a scalar; ScatterND needs rank >= 1", xs->rank == 0 ? 0 : 1);
  if (xs->rank >= 0 && is->rank >= 0 && is->d[is->rank - 1] >= 0) {
    int r = xs->rank, q = is->rank;
    int64_t k = is->d[q - 1];
    if (k < 1 || k > r)
      return diag_error(d, n, "the last indices extent is %lld; it must be in [1, %d]", (long long)k, r);
    if (us->rank >= 0) {
      int want = q - 1 + r - (int)k;
      if (us->rank != want)
        return diag_error(d, n, "input 2 (updates) has rank %d, expected %d", us->rank, want);
      for (int j = 0; j < want; j++) {
        int64_t e = j < q - 1 ? is->d[j] : xs->d[k + j - (q - 1)];
        if (e >= 0 && us->d[j] >= 0 && e != us->d[j])
          return diag_error(d, n, "updates extent %lld on axis %d, expected %lld", (long long)us->d[j], j,
                            (long long)e);
      }
    }
  }
  infer_set(n, 0, x->dt, xs->rank >= 0 ? xs : NULL);
  return true;
}

/* ---- OneHot ----------------------------------------------------------------------- */

bool infer_OneHot(Node *n, Diag *d) {
  const Value *ind = n->in[0], *vals = n->in[2];
  const Shape *is = &ind->shape;
  if (!is_number(ind->dt))
    return diag_error(d, n, "input 0 (indices) has type %s, expected a numeric type", dtype_name(ind->dt));
  if (!is_number(n->in[1]->dt))
    return diag_error(d, n, "input 1 (depth) has type %s, expected a numeric type", dtype_name(n->in[1]->dt));
  if (!check_one_element(d, n, 1, "depth"))
    return false;
  const Shape *vs = &vals->shape;
  if (vs->rank >= 0 && (vs->rank != 1 || (vs->d[0] >= 0 && vs->d[0] != 2)))
    return diag_error(d, n, "input 2 (values) must be [off_value, on_value], a 1-D tensor of 2 elements");
  if (is->rank < 0) {
    infer_set(n, 0, vals->dt, NULL);
    return true;
  }
  int r = is->rank + 1;
  if (r > IR_MAX_RANK)
    return diag_error(d, n, "result rank %d exceeds the supported %d", r, IR_MAX_RANK);
  int axis;
  if (!shape_axis(ir_attr_int(n, "axis", -1), r, &axis))
    return diag_error(d, n, "axis %lld is out of range for rank %d", (long long)ir_attr_int(n, "axis", -1), r);
  int64_t depth = DIM_UNKNOWN;
  if (const_scalar_i64(n, 1, &depth) && depth < 0)
    return diag_error(d, n, "depth is %lld; it cannot be negative", (long long)depth);
  Shape o = shape_scalar();
  o.rank = r;
  for (int j = 0, i = 0; j < r; j++) {
    if (j == axis) {
      o.d[j] = depth;
      o.sym[j] = NULL, o.x[j] = NULL;
    } else {
      infer_copy_dim(&o, j, is, i++);
    }
  }
  infer_set(n, 0, vals->dt, &o);
  return true;
}

/* ---- Trilu, DepthToSpace, SpaceToDepth, ReverseSequence ----------------------- */

bool infer_Trilu(Node *n, Diag *d) {
  const Value *x = n->in[0];
  if (x->shape.rank >= 0 && x->shape.rank < 2)
    return diag_error(d, n, "input 0 has rank %d; Trilu needs rank >= 2", x->shape.rank);
  if (ir_has_input(n, 1)) {
    if (n->in[1]->dt != DT_I64)
      return diag_error(d, n, "input 1 (k) has type %s, expected int64", dtype_name(n->in[1]->dt));
    if (!check_one_element(d, n, 1, "k"))
      return false;
  }
  infer_set(n, 0, x->dt, x->shape.rank >= 0 ? &x->shape : NULL);
  return true;
}

/* DepthToSpace (to_space) and SpaceToDepth share the checks of a 4-D input. */
static bool space_depth(Node *n, Diag *d, bool to_space) {
  const Value *x = n->in[0];
  const Shape *xs = &x->shape;
  const Attr *ba = ir_attr(n, "blocksize");
  if (!ba || ba->kind != AT_INT)
    return diag_error(d, n, "attribute 'blocksize' is required");
  int64_t bs = ba->u.i;
  if (bs < 1 || bs > 65536)
    return diag_error(d, n, "blocksize %lld must be in [1, 65536]", (long long)bs);
  if (to_space) {
    const char *m = ir_attr_str(n, "mode", "DCR");
    if (strcmp(m, "DCR") && strcmp(m, "CRD"))
      return diag_error(d, n, "mode '%s' is not DCR or CRD", m);
  }
  if (xs->rank < 0) {
    Shape u = infer_unknown_dims(4);
    infer_set(n, 0, x->dt, &u);
    return true;
  }
  if (xs->rank != 4)
    return diag_error(d, n, "input 0 has rank %d, expected 4 (N, C, H, W)", xs->rank);
  Shape o = infer_unknown_dims(4);
  infer_copy_dim(&o, 0, xs, 0);
  int64_t c = xs->d[1], h = xs->d[2], w = xs->d[3];
  if (to_space) {
    if (c >= 0 && c % (bs * bs) != 0)
      return diag_error(d, n, "channels %lld are not a multiple of blocksize^2 = %lld", (long long)c,
                        (long long)(bs * bs));
    o.d[1] = c < 0 ? DIM_UNKNOWN : c / (bs * bs);
    o.d[2] = h < 0 ? DIM_UNKNOWN : h * bs;
    o.d[3] = w < 0 ? DIM_UNKNOWN : w * bs;
  } else {
    if ((h >= 0 && h % bs != 0) || (w >= 0 && w % bs != 0))
      return diag_error(d, n, "height %lld and width %lld must be multiples of blocksize %lld", (long long)h,
                        (long long)w, (long long)bs);
    o.d[1] = c < 0 ? DIM_UNKNOWN : c * bs * bs;
    o.d[2] = h < 0 ? DIM_UNKNOWN : h / bs;
    o.d[3] = w < 0 ? DIM_UNKNOWN : w / bs;
  }
  infer_set(n, 0, x->dt, &o);
  return true;
}

bool infer_DepthToSpace(Node *n, Diag *d) { return space_depth(n, d, true); }
bool infer_SpaceToDepth(Node *n, Diag *d) { return space_depth(n, d, false); }

bool infer_ReverseSequence(Node *n, Diag *d) {
  const Value *x = n->in[0], *l = n->in[1];
  const Shape *xs = &x->shape;
  if (l->dt != DT_I64)
    return diag_error(d, n, "input 1 (sequence_lens) has type %s, expected int64", dtype_name(l->dt));
  int64_t ba = ir_attr_int(n, "batch_axis", 1), ta = ir_attr_int(n, "time_axis", 0);
  if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
    return diag_error(d, n, "batch_axis (%lld) and time_axis (%lld) must be 0 and 1 in some order", (long long)ba,
                      (long long)ta);
  if (xs->rank >= 0 && xs->rank < 2)
    return diag_error(d, n, "input 0 has rank %d; ReverseSequence needs rank >= 2", xs->rank);
  const Shape *ls = &l->shape;
  if (ls->rank >= 0 && ls->rank != 1)
    return diag_error(d, n, "input 1 (sequence_lens) has rank %d, expected 1", ls->rank);
  if (xs->rank >= 0 && ls->rank == 1 && xs->d[ba] >= 0 && ls->d[0] >= 0 && xs->d[ba] != ls->d[0])
    return diag_error(d, n, "sequence_lens has %lld entries for a batch of %lld", (long long)ls->d[0],
                      (long long)xs->d[ba]);
  if (l->kind == VK_CONST && xs->rank >= 0 && xs->d[ta] >= 0)
    for (int64_t i = 0; i < l->konst->numel; i++) {
      int64_t v = tensor_get_i64(l->konst, i);
      if (v < 0 || v > xs->d[ta])
        return diag_error(d, n, "sequence length %lld is outside [0, %lld]", (long long)v, (long long)xs->d[ta]);
    }
  infer_set(n, 0, x->dt, xs->rank >= 0 ? xs : NULL);
  return true;
}

/* ---- Compress ---------------------------------------------------------------------- */

bool infer_Compress(Node *n, Diag *d) {
  const Value *x = n->in[0], *c = n->in[1];
  const Shape *xs = &x->shape;
  if (c->dt != DT_BOOL)
    return diag_error(d, n, "input 1 (condition) has type %s, expected bool", dtype_name(c->dt));
  if (c->shape.rank >= 0 && c->shape.rank != 1)
    return diag_error(d, n, "input 1 (condition) has rank %d, expected 1", c->shape.rank);
  const Attr *aa = ir_attr(n, "axis");
  int axis = -1;
  if (aa && xs->rank >= 0 && !shape_axis(aa->u.i, xs->rank, &axis))
    return diag_error(d, n, "axis %lld is out of range for rank %d", (long long)aa->u.i, xs->rank);
  if (c->kind != VK_CONST) {
    /* a data-dependent extent (docs/dynamic-shapes.md): bounded by the
     * selected axis (or the element count) and the condition's length; the
     * kernel reports how many it kept */
    int64_t dim = DIM_UNKNOWN;
    if (xs->rank >= 0 && (aa ? xs->d[axis] >= 0 : shape_numel(xs, &dim)))
      dim = aa ? xs->d[axis] : dim;
    if (dim < 0 || c->shape.rank != 1 || c->shape.d[0] < 0)
      return diag_error(d, n, "with a condition known only at run time, input 0 needs a static %s and "
                              "input 1 a static length", aa ? "extent along axis" : "shape");
    int64_t bound = c->shape.d[0] < dim ? c->shape.d[0] : dim;
    Shape o;
    if (aa) {
      o = *xs;
      o.d[axis] = bound;
      o.sym[axis] = NULL, o.x[axis] = NULL;
    } else {
      o = shape_make(1, &bound);
    }
    infer_set(n, 0, x->dt, &o);
    if (n->out[0]->kind != VK_NONE)
      n->out[0]->dyn_dims = 1u << (aa ? axis : 0);
    return true;
  }
  if (xs->rank < 0) {
    infer_set(n, 0, x->dt, NULL);
    return true;
  }
  int64_t dim;
  if (aa)
    dim = xs->d[axis];
  else if (!shape_numel(xs, &dim))
    dim = DIM_UNKNOWN;
  int64_t kept = 0;
  for (int64_t i = 0; i < c->konst->numel; i++)
    if (tensor_get_i64(c->konst, i) != 0) {
      if (dim >= 0 && i >= dim)
        return diag_error(d, n, "condition selects index %lld, beyond the extent %lld", (long long)i,
                          (long long)dim);
      kept++;
    }
  Shape o;
  if (aa) {
    o = *xs;
    o.d[axis] = kept;
    o.sym[axis] = NULL, o.x[axis] = NULL;
  } else {
    o = shape_make(1, &kept);
  }
  infer_set(n, 0, x->dt, &o);
  return true;
}
