/* infer_reduce.c - inference for reductions and the ops that scan one axis.
 *
 * ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax,
 * ArgMin, CumSum, TopK and Hardmax. Opset differences handled here: Reduce*
 * axes are an attribute before opset 18 (13 for ReduceSum) and an optional
 * input from then on, with noop_with_empty_axes; ArgMax/ArgMin
 * select_last_index (12); TopK's k is an attribute before 10 and input 1
 * after, largest/sorted from 11; Hardmax coerces its input to 2-D at `axis`
 * (default 1) before 13 and works along `axis` (default -1) from 13.
 * A Reduce* axes input that is not constant leaves the reduced dims unknown
 * (rank kept with keepdims=1); TopK's k likewise leaves the axis unknown.
 */
#include "passes.h"

#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

static bool is_float_dtype(DType t) { return t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64; }

/* Numeric element types the kernels compute with (integers of 8 bits or more). */
static bool is_numeric(DType t) { return is_float_dtype(t) || (dtype_is_int(t) && dtype_bits(t) >= 8); }

/* Opset from which a Reduce* op takes its axes as input 1. */
static int64_t axes_input_since(OpKind op) { return op == OP_ReduceSum ? 13 : 18; }

/* The axes of a Reduce* node: 1 when known (count may be 0), 0 when the axes
 * input holds a run-time value, with *count its length or -1 if unknown. */
static int reduce_axes_list(const Node *n, int64_t *axes, int *count) {
  *count = 0;
  if (ir_has_input(n, 1)) {
    if (infer_const_ints(n, 1, axes, count, IR_MAX_RANK))
      return 1;
    const Shape *s = &n->in[1]->shape;
    *count = s->rank == 1 && s->d[0] >= 0 && s->d[0] <= IR_MAX_RANK ? (int)s->d[0] : -1;
    return *count == 0 ? 1 : 0;  /* an empty run-time list is as good as a constant one */
  }
  int k;
  const int64_t *a = ir_attr_ints(n, "axes", &k);
  if (a && k <= IR_MAX_RANK) {
    memcpy(axes, a, (size_t)k * sizeof *axes);
    *count = k;
  }
  return 1;
}

bool infer_reduce_axes(const Node *n, int rank, bool *mask, bool *noop) {
  int64_t axes[IR_MAX_RANK];
  int count;
  if (reduce_axes_list(n, axes, &count) != 1)
    return false;
  bool input_form = ir_has_input(n, 1) || n->g->opset >= axes_input_since(n->op);
  *noop = count == 0 && input_form && ir_attr_int(n, "noop_with_empty_axes", 0) != 0;
  for (int i = 0; i < rank; i++)
    mask[i] = count == 0 && !*noop;
  for (int i = 0; i < count; i++) {
    int a;
    if (!shape_axis(axes[i], rank, &a))
      return false;
    mask[a] = true;
  }
  return true;
}

/* Integer attribute that must be 0 or 1. */
static bool flag_attr(Diag *d, const Node *n, const char *name, int64_t dflt, bool *out) {
  int64_t v = ir_attr_int(n, name, dflt);
  if (v != 0 && v != 1)
    return infer_fail(d, n, "attribute '%s' is %lld, expected 0 or 1", name, (long long)v);
  *out = v != 0;
  return true;
}

/* ---- Reduce* ---------------------------------------------------------------- */

static bool reduce_type_ok(OpKind op, DType t) {
  if (t == DT_BOOL)
    return op == OP_ReduceMax || op == OP_ReduceMin;
  return is_numeric(t);
}

/* Output shape when the axes are a run-time value: with keepdims the rank
 * stays and extent-1 dims stay 1; without it the rank drops by the list's
 * length when that is known. */
static Shape reduce_unknown_axes(const Shape *xs, bool keepdims, int count) {
  if (keepdims) {
    Shape o = infer_unknown_dims(xs->rank);
    for (int i = 0; i < xs->rank; i++)
      if (xs->d[i] == 1)
        o.d[i] = 1;
    return o;
  }
  return count >= 0 && count <= xs->rank ? infer_unknown_dims(xs->rank - count) : shape_unknown();
}

static bool infer_reduce(Node *n, Diag *d) {
  const Value *x = n->in[0];
  const Shape *xs = &x->shape;
  if (!reduce_type_ok(n->op, x->dt))
    return infer_fail(d, n, "input 0 has element type %s, which %s does not support", dtype_name(x->dt),
                      n->op_type);
  int64_t since = axes_input_since(n->op);
  if (ir_has_input(n, 1)) {
    if (n->g->opset < since)
      return infer_fail(d, n, "axes as input 1 needs opset %lld (the model has %lld); use the 'axes' attribute",
                        (long long)since, (long long)n->g->opset);
    if (n->in[1]->dt != DT_I64)
      return infer_fail(d, n, "input 1 (axes) has element type %s, expected int64", dtype_name(n->in[1]->dt));
    if (n->in[1]->shape.rank > 1)
      return infer_fail(d, n, "input 1 (axes) has rank %d, expected 1", n->in[1]->shape.rank);
    if (ir_attr(n, "axes"))
      return infer_fail(d, n, "axes given both as attribute and as input 1");
  }
  const Attr *aa = ir_attr(n, "axes");
  if (aa && aa->kind != AT_INTS)
    return infer_fail(d, n, "attribute 'axes' must be a list of ints");
  if (aa && aa->n > IR_MAX_RANK)
    return infer_fail(d, n, "attribute 'axes' has %d entries, more than the supported rank %d", aa->n,
                      IR_MAX_RANK);
  bool keepdims = true, noop_flag = false;
  if (!flag_attr(d, n, "keepdims", 1, &keepdims) || !flag_attr(d, n, "noop_with_empty_axes", 0, &noop_flag))
    return false;
  if (xs->rank < 0) {
    infer_set(n, 0, x->dt, NULL);
    return true;
  }
  int64_t axes[IR_MAX_RANK];
  int count;
  if (reduce_axes_list(n, axes, &count) != 1) {
    Shape o = reduce_unknown_axes(xs, keepdims, count);
    infer_set(n, 0, x->dt, &o);
    return true;
  }
  bool mask[IR_MAX_RANK], noop;
  for (int i = 0; i < count; i++) {
    int a;
    if (!shape_axis(axes[i], xs->rank, &a))
      return infer_fail(d, n, "axis %lld is out of range for an input of rank %d", (long long)axes[i], xs->rank);
    for (int j = 0; j < i; j++) {
      int b;
      shape_axis(axes[j], xs->rank, &b);
      if (a == b)
        return infer_fail(d, n, "axis %lld is repeated in axes", (long long)axes[i]);
    }
  }
  IR_ASSERT(infer_reduce_axes(n, xs->rank, mask, &noop));
  Shape o = shape_scalar();
  for (int i = 0; i < xs->rank; i++) {
    if (!mask[i]) {
      o.d[o.rank] = xs->d[i];
      o.x[o.rank] = xs->x[i], o.sym[o.rank++] = xs->sym[i];
    } else if (keepdims) {
      o.d[o.rank++] = 1;
    }
  }
  infer_set(n, 0, x->dt, &o);
  return true;
}

bool infer_ReduceSum(Node *n, Diag *d) { return infer_reduce(n, d); }
bool infer_ReduceMean(Node *n, Diag *d) { return infer_reduce(n, d); }
bool infer_ReduceMax(Node *n, Diag *d) { return infer_reduce(n, d); }
bool infer_ReduceMin(Node *n, Diag *d) { return infer_reduce(n, d); }
bool infer_ReduceProd(Node *n, Diag *d) { return infer_reduce(n, d); }
bool infer_ReduceL1(Node *n, Diag *d) { return infer_reduce(n, d); }
bool infer_ReduceL2(Node *n, Diag *d) { return infer_reduce(n, d); }
bool infer_ReduceLogSum(Node *n, Diag *d) { return infer_reduce(n, d); }
bool infer_ReduceLogSumExp(Node *n, Diag *d) { return infer_reduce(n, d); }
bool infer_ReduceSumSquare(Node *n, Diag *d) { return infer_reduce(n, d); }

/* ---- ArgMax, ArgMin ------------------------------------------------------------ */

static bool infer_arg(Node *n, Diag *d) {
  const Value *x = n->in[0];
  const Shape *xs = &x->shape;
  if (!is_numeric(x->dt))
    return infer_fail(d, n, "input 0 has element type %s, which %s does not support", dtype_name(x->dt),
                      n->op_type);
  bool keepdims = true, last = false;
  if (!flag_attr(d, n, "keepdims", 1, &keepdims) || !flag_attr(d, n, "select_last_index", 0, &last))
    return false;
  if (last && n->g->opset < 12)
    return infer_fail(d, n, "select_last_index needs opset 12 (the model has %lld)", (long long)n->g->opset);
  if (xs->rank < 0) {
    infer_set(n, 0, DT_I64, NULL);
    return true;
  }
  int64_t a = ir_attr_int(n, "axis", 0);
  int axis;
  if (xs->rank == 0)
    return infer_fail(d, n, "input 0 is a scalar; %s needs rank >= 1", n->op_type);
  if (!shape_axis(a, xs->rank, &axis))
    return infer_fail(d, n, "axis %lld is out of range for an input of rank %d", (long long)a, xs->rank);
  if (xs->d[axis] == 0)
    return infer_fail(d, n, "axis %d has extent 0: %s of an empty set is undefined", axis, n->op_type);
  Shape o = shape_scalar();
  for (int i = 0; i < xs->rank; i++) {
    if (i != axis) {
      o.d[o.rank] = xs->d[i];
      o.x[o.rank] = xs->x[i], o.sym[o.rank++] = xs->sym[i];
    } else if (keepdims) {
      o.d[o.rank++] = 1;
    }
  }
  infer_set(n, 0, DT_I64, &o);
  return true;
}

bool infer_ArgMax(Node *n, Diag *d) { return infer_arg(n, d); }
bool infer_ArgMin(Node *n, Diag *d) { return infer_arg(n, d); }

/* ---- CumSum --------------------------------------------------------------------- */

bool infer_CumSum(Node *n, Diag *d) {
  const Value *x = n->in[0], *ax = n->in[1];
  if (!is_numeric(x->dt))
    return infer_fail(d, n, "input 0 has element type %s, which CumSum does not support", dtype_name(x->dt));
  if (ax->dt != DT_I32 && ax->dt != DT_I64)
    return infer_fail(d, n, "input 1 (axis) has element type %s, expected int32 or int64", dtype_name(ax->dt));
  if (ax->shape.rank > 1 || (ax->shape.rank == 1 && ax->shape.d[0] >= 0 && ax->shape.d[0] != 1))
    return infer_fail(d, n, "input 1 (axis) must hold a single value (a scalar or a 1-element tensor)");
  bool flag;
  if (!flag_attr(d, n, "exclusive", 0, &flag) || !flag_attr(d, n, "reverse", 0, &flag))
    return false;
  int64_t v[1];
  int count;
  int axis;
  if (x->shape.rank == 0)
    return infer_fail(d, n, "input 0 is a scalar; CumSum needs rank >= 1");
  if (x->shape.rank > 0 && infer_const_ints(n, 1, v, &count, 1) && count == 1 &&
      !shape_axis(v[0], x->shape.rank, &axis))
    return infer_fail(d, n, "axis %lld is out of range for an input of rank %d", (long long)v[0], x->shape.rank);
  infer_set(n, 0, x->dt, &x->shape);
  return true;
}

/* ---- TopK ------------------------------------------------------------------------- */

bool infer_TopK(Node *n, Diag *d) {
  const Value *x = n->in[0];
  const Shape *xs = &x->shape;
  int64_t opset = n->g->opset;
  if (!is_numeric(x->dt))
    return infer_fail(d, n, "input 0 has element type %s, which TopK does not support", dtype_name(x->dt));
  if (opset < 11 && !is_float_dtype(x->dt))
    return infer_fail(d, n, "input 0 has element type %s; TopK before opset 11 takes floating-point data",
                      dtype_name(x->dt));
  bool largest = true, sorted = true;
  if (!flag_attr(d, n, "largest", 1, &largest) || !flag_attr(d, n, "sorted", 1, &sorted))
    return false;
  if (opset < 11 && (!largest || !sorted))
    return infer_fail(d, n, "attributes 'largest' and 'sorted' need opset 11 (the model has %lld)",
                      (long long)opset);
  /* k: the attribute before opset 10, input 1 from then on; -1 while unknown. */
  int64_t k = -1;
  if (opset < 10) {
    const Attr *ka = ir_attr(n, "k");
    if (!ka || ka->kind != AT_INT)
      return infer_fail(d, n, "attribute 'k' is required before opset 10");
    if (ka->u.i < 0)
      return infer_fail(d, n, "k is %lld, expected a non-negative count", (long long)ka->u.i);
    k = ka->u.i;
  } else {
    if (!ir_has_input(n, 1))
      return infer_fail(d, n, "input 1 (K) is required from opset 10");
    const Value *kv = n->in[1];
    if (kv->dt != DT_I64)
      return infer_fail(d, n, "input 1 (K) has element type %s, expected int64", dtype_name(kv->dt));
    if (kv->shape.rank > 1 || (kv->shape.rank == 1 && kv->shape.d[0] >= 0 && kv->shape.d[0] != 1))
      return infer_fail(d, n, "input 1 (K) must hold a single value (a 1-element tensor)");
    int64_t v[1];
    int count;
    if (infer_const_ints(n, 1, v, &count, 1) && count == 1) {
      if (v[0] < 0)
        return infer_fail(d, n, "k is %lld, expected a non-negative count", (long long)v[0]);
      k = v[0];
    }
  }
  if (xs->rank < 0) {
    infer_set(n, 0, x->dt, NULL);
    infer_set(n, 1, DT_I64, NULL);
    return true;
  }
  int64_t a = ir_attr_int(n, "axis", -1);
  int axis;
  if (xs->rank == 0)
    return infer_fail(d, n, "input 0 is a scalar; TopK needs rank >= 1");
  if (!shape_axis(a, xs->rank, &axis))
    return infer_fail(d, n, "axis %lld is out of range for an input of rank %d", (long long)a, xs->rank);
  if (k >= 0 && xs->d[axis] >= 0 && k > xs->d[axis])
    return infer_fail(d, n, "k = %lld exceeds the extent %lld of axis %d", (long long)k, (long long)xs->d[axis],
                      axis);
  Shape o = *xs;
  /* k known only at run time (opset 10+): bounded by the axis, reported by the
   * kernel (a data-dependent extent, docs/dynamic-shapes.md) */
  bool rt = k < 0 && n->g->opset >= 10 && xs->d[axis] >= 0 && shape_is_static(xs);
  o.d[axis] = k >= 0 ? k : rt ? xs->d[axis] : DIM_UNKNOWN;
  o.sym[axis] = NULL, o.x[axis] = NULL;
  infer_set(n, 0, x->dt, &o);
  infer_set(n, 1, DT_I64, &o);
  for (int i = 0; rt && i < 2 && i < n->n_out; i++)
    if (n->out[i]->kind != VK_NONE)
      n->out[i]->dyn_dims = 1u << axis;
  return true;
}

/* ---- Hardmax ------------------------------------------------------------------------ */

bool infer_Hardmax(Node *n, Diag *d) {
  const Value *x = n->in[0];
  if (!is_float_dtype(x->dt))
    return infer_fail(d, n, "input 0 has element type %s, expected f16, bf16, f32 or f64", dtype_name(x->dt));
  int r = x->shape.rank, axis;
  int64_t a = ir_attr_int(n, "axis", n->g->opset >= 13 ? -1 : 1);
  if (r == 0)
    return infer_fail(d, n, "input 0 is a scalar, expected rank >= 1");
  if (r > 0 && !shape_axis(a, r, &axis))
    return infer_fail(d, n, "axis %lld is out of range for an input of rank %d", (long long)a, r);
  infer_set(n, 0, x->dt, &x->shape);
  return true;
}
