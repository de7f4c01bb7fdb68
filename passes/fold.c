/* fold.c - compile-time evaluation of one node (fold_node).
 *
 * A folder computes a node's outputs from constant inputs and turns them into
 * constants (ir_value_make_const); the caller (pass_infer) drops the dead
 * node. Folders are a table keyed by OpKind. Shape also folds when its input
 * is not constant but the requested dims are static: that is what collapses
 * the Shape->Gather->Unsqueeze->Concat->Reshape chains of exported models.
 * Elementwise rows fold through a second table of scalar functions: integer
 * math exact in int64 (wrapping like the generated code), float math in
 * double, rounded once when stored. View-like ops share the input's data.
 * Results over FOLD_MAX_BYTES are left to run time (a sanity limit).
 */
#include "passes.h"

#include <math.h>
#include <string.h>

#define FOLD_MAX_BYTES ((int64_t)64 << 20)

typedef enum FoldResult { FOLD_SKIP, FOLD_DONE, FOLD_ERROR } FoldResult;
typedef FoldResult (*FoldFn)(Node *n, Diag *d);

/* ---- helpers --------------------------------------------------------------- */

static const Tensor *in_t(const Node *n, int i) { return n->in[i]->konst; }

/* Bytes of one element as stored in a Tensor (0: packed sub-byte type). */
static size_t elem_size(DType t) {
  if (t == DT_STRING)
    return sizeof(char *);
  int bits = dtype_bits(t);
  return bits >= 8 ? (size_t)bits / 8 : 0;
}

/* (passes.h) */
bool fold_weight_only(const Value *v) {
  if (v->n_uses == 0 || v->is_output)
    return false;
  for (int u = 0; u < v->n_uses; u++) {
    const Node *c = v->uses[u];
    bool prod = c->op == OP_MatMul || c->op == OP_Gemm || c->op == OP_Conv;
    if (!prod || c->n_in < 2 || c->in[1] != v || c->in[0] == v)
      return false;
  }
  return true;
}

/* Tensor for output i with its inferred type and shape; NULL (no error) when
 * it is not static or too large to fold. */
static Tensor *new_out(Node *n, int i, Diag *d) {
  const Value *v = n->out[i];
  int64_t numel, bytes;
  if (!shape_numel(&v->shape, &numel) || !dtype_bytes(v->dt, numel, &bytes) ||
      bytes > (fold_weight_only(v) ? FOLD_WEIGHT_MAX_BYTES : FOLD_MAX_BYTES))
    return NULL;
  return ir_tensor_new(n->g, v->dt, &v->shape, d);
}

/* The input's data under the output's shape, without a copy. */
static Tensor *view_of(Node *n, const Tensor *src, int out) {
  const Value *v = n->out[out];
  if (!shape_is_static(&v->shape))
    return NULL;
  Tensor *t = arena_alloc(n->g->arena, sizeof *t);
  *t = *src;
  t->shape = v->shape;
  return t;
}

static bool numeric(DType t) {
  return t == DT_BOOL || t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64 ||
         (dtype_is_int(t) && dtype_bits(t) >= 8);
}

/* Stores v into t[i], converting like the generated code: NaN -> 0 and
 * saturation for float -> integer, modular wrap for integer -> integer. */
static void store_f64(Tensor *t, int64_t i, double v) {
  if (dtype_is_int(t->dt)) {
    int bits = dtype_bits(t->dt);
    bool sgn = dtype_is_signed(t->dt);
    double lo = sgn ? -ldexp(1.0, bits - 1) : 0.0, hi = sgn ? ldexp(1.0, bits - 1) : ldexp(1.0, bits);
    if (isnan(v))
      v = 0;
    if (t->dt == DT_U64) {
      ((uint64_t *)t->data)[i] = v <= 0 ? 0 : v >= hi ? UINT64_MAX : (uint64_t)v;
      return;
    }
    if (v <= lo)
      v = lo;
    else if (v >= hi)
      v = hi - 1;  /* exact below 2^53; int64's top saturates in tensor_set_f64 */
  }
  tensor_set_f64(t, i, v);
}

/* ---- Constant ---------------------------------------------------------------- */

static FoldResult fold_Constant(Node *n, Diag *d) {
  if (n->n_attrs != 1)
    return FOLD_SKIP;  /* infer_Constant reported it */
  const Attr *a = &n->attrs[0];
  Tensor *t = NULL;
  if ((a->kind == AT_TENSOR || a->kind == AT_SPARSE_TENSOR) && a->u.t) {
    t = a->u.t;
  } else if (a->kind == AT_FLOAT || a->kind == AT_INT || a->kind == AT_FLOATS || a->kind == AT_INTS) {
    if (!(t = new_out(n, 0, d)))
      return FOLD_SKIP;
    for (int64_t i = 0; i < t->numel; i++) {
      if (a->kind == AT_FLOAT)
        tensor_set_f64(t, i, a->u.f);
      else if (a->kind == AT_INT)
        tensor_set_i64(t, i, a->u.i);
      else if (a->kind == AT_FLOATS)
        tensor_set_f64(t, i, a->u.fs[i]);
      else
        tensor_set_i64(t, i, a->u.is[i]);
    }
  } else {
    return FOLD_SKIP;
  }
  ir_value_make_const(n->out[0], t);
  return FOLD_DONE;
}

/* ---- views: Identity, Dropout, Reshape, Flatten, Squeeze, Unsqueeze ---------- */

static FoldResult fold_view(Node *n, Diag *d) {
  (void)d;
  Tensor *t = view_of(n, in_t(n, 0), 0);
  if (!t)
    return FOLD_SKIP;
  ir_value_make_const(n->out[0], t);
  return FOLD_DONE;
}

static FoldResult fold_Dropout(Node *n, Diag *d) {
  Tensor *mask = NULL;
  if (n->n_out > 1 && n->out[1]->kind != VK_NONE) {
    if (!(mask = new_out(n, 1, d)))
      return FOLD_SKIP;
    for (int64_t i = 0; i < mask->numel; i++)
      tensor_set_i64(mask, i, 1);
  }
  if (fold_view(n, d) != FOLD_DONE)
    return FOLD_SKIP;
  if (mask)
    ir_value_make_const(n->out[1], mask);
  return FOLD_DONE;
}

/* ---- Shape, Gather, Concat, Transpose, Cast ---------------------------------- */

static FoldResult fold_Shape(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  if (xs->rank < 0)
    return FOLD_SKIP;
  int64_t r = xs->rank, start = ir_attr_int(n, "start", 0), end = ir_attr_int(n, "end", r);
  start = start < 0 ? start + r : start;
  end = end < 0 ? end + r : end;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  for (int64_t i = start; i < end; i++)
    if (xs->d[i] < 0)
      return FOLD_SKIP;
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return FOLD_SKIP;
  for (int64_t i = start; i < end; i++)
    tensor_set_i64(t, i - start, xs->d[i]);
  ir_value_make_const(n->out[0], t);
  return FOLD_DONE;
}

static int64_t prod(const Shape *s, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++)
    p *= s->d[i];
  return p;
}

static FoldResult fold_Gather(Node *n, Diag *d) {
  const Tensor *x = in_t(n, 0), *idx = in_t(n, 1);
  size_t es = elem_size(x->dt);
  int axis;
  if (!es || !shape_axis(ir_attr_int(n, "axis", 0), x->shape.rank, &axis))
    return FOLD_SKIP;
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return FOLD_SKIP;
  int64_t outer = prod(&x->shape, 0, axis), dim = x->shape.d[axis];
  int64_t inner = prod(&x->shape, axis + 1, x->shape.rank);
  size_t row = (size_t)inner * es;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < idx->numel; j++) {
      int64_t k = tensor_get_i64(idx, j);
      if (k < -dim || k >= dim) {
        diag_error(d, n, "index %lld is out of range for axis %d of extent %lld", (long long)k, axis,
                   (long long)dim);
        return FOLD_ERROR;
      }
      k = k < 0 ? k + dim : k;
      memcpy((char *)t->data + (size_t)(o * idx->numel + j) * row, (const char *)x->data + (size_t)(o * dim + k) * row,
             row);
    }
  ir_value_make_const(n->out[0], t);
  return FOLD_DONE;
}

static FoldResult fold_Concat(Node *n, Diag *d) {
  const Shape *ys = &n->out[0]->shape;
  size_t es = elem_size(n->out[0]->dt);
  int axis;
  if (!es || ys->rank < 1 || !shape_axis(ir_attr_int(n, "axis", 0), ys->rank, &axis))
    return FOLD_SKIP;
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return FOLD_SKIP;
  int64_t outer = prod(ys, 0, axis);
  char *dst = t->data;
  for (int64_t o = 0; o < outer; o++)
    for (int k = 0; k < n->n_in; k++) {
      const Tensor *x = in_t(n, k);
      int64_t inner = prod(&x->shape, axis, x->shape.rank);
      memcpy(dst, (const char *)x->data + (size_t)(o * inner) * es, (size_t)inner * es);
      dst += (size_t)inner * es;
    }
  ir_value_make_const(n->out[0], t);
  return FOLD_DONE;
}

static FoldResult fold_Transpose(Node *n, Diag *d) {
  const Tensor *x = in_t(n, 0);
  size_t es = elem_size(x->dt);
  if (!es)
    return FOLD_SKIP;
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return FOLD_SKIP;
  int r = x->shape.rank, count;
  const int64_t *perm = ir_attr_ints(n, "perm", &count);
  int64_t xstr[IR_MAX_RANK], pstr[IR_MAX_RANK];
  int64_t acc = 1;
  for (int i = r - 1; i >= 0; i--) {
    xstr[i] = acc;
    acc *= x->shape.d[i];
  }
  for (int j = 0; j < r; j++)
    pstr[j] = xstr[perm ? perm[j] : r - 1 - j];
  for (int64_t o = 0; o < t->numel; o++) {
    int64_t rem = o, src = 0;
    for (int j = r - 1; j >= 0; j--) {
      src += (rem % t->shape.d[j]) * pstr[j];
      rem /= t->shape.d[j];
    }
    memcpy((char *)t->data + (size_t)o * es, (const char *)x->data + (size_t)src * es, es);
  }
  ir_value_make_const(n->out[0], t);
  return FOLD_DONE;
}

static FoldResult fold_Cast(Node *n, Diag *d) {
  const Tensor *x = in_t(n, 0);
  if (!numeric(x->dt) || !numeric(n->out[0]->dt))
    return FOLD_SKIP;
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return FOLD_SKIP;
  bool exact_int = !dtype_is_float(x->dt) && !dtype_is_float(t->dt);
  for (int64_t i = 0; i < x->numel; i++) {
    if (t->dt == DT_BOOL)
      tensor_set_i64(t, i, tensor_get_f64(x, i) != 0);
    else if (exact_int)
      tensor_set_i64(t, i, tensor_get_i64(x, i));
    else
      store_f64(t, i, tensor_get_f64(x, i));
  }
  ir_value_make_const(n->out[0], t);
  return FOLD_DONE;
}

/* ---- elementwise ---------------------------------------------------------------
 * Each row: a double function and an int64 function of the operand array.
 * Variadic rows are binary steps folded left to right. */

typedef double (*F64Fn)(const double *a);
typedef int64_t (*I64Fn)(const int64_t *a);

static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

static double f_add(const double *a) { return a[0] + a[1]; }
static double f_sub(const double *a) { return a[0] - a[1]; }
static double f_mul(const double *a) { return a[0] * a[1]; }
static double f_div(const double *a) { return a[0] / a[1]; }
static double f_neg(const double *a) { return -a[0]; }
static double f_abs(const double *a) { return fabs(a[0]); }
static double f_relu(const double *a) { return a[0] > 0 ? a[0] : 0; }
static double f_sqrt(const double *a) { return sqrt(a[0]); }
static double f_exp(const double *a) { return exp(a[0]); }
static double f_log(const double *a) { return log(a[0]); }
static double f_recip(const double *a) { return 1.0 / a[0]; }
static double f_floor(const double *a) { return floor(a[0]); }
static double f_ceil(const double *a) { return ceil(a[0]); }
static double f_round(const double *a) { return nearbyint(a[0]); }
static double f_sign(const double *a) { return a[0] > 0 ? 1 : a[0] < 0 ? -1 : 0; }
static double f_pow(const double *a) { return pow(a[0], a[1]); }
static double f_max(const double *a) { return (a[0] > a[1] || isnan(a[0])) ? a[0] : a[1]; }
static double f_min(const double *a) { return (a[0] < a[1] || isnan(a[0])) ? a[0] : a[1]; }
static double f_clip(const double *a) { return a[0] < a[1] ? a[1] : a[0] > a[2] ? a[2] : a[0]; }
static double f_eq(const double *a) { return a[0] == a[1]; }
static double f_lt(const double *a) { return a[0] < a[1]; }
static double f_le(const double *a) { return a[0] <= a[1]; }
static double f_gt(const double *a) { return a[0] > a[1]; }
static double f_ge(const double *a) { return a[0] >= a[1]; }
static double f_where(const double *a) { return a[0] != 0 ? a[1] : a[2]; }
static double f_fmod(const double *a) { return fmod(a[0], a[1]); }

static int64_t i_add(const int64_t *a) { return wrap_add(a[0], a[1]); }
static int64_t i_sub(const int64_t *a) { return wrap_sub(a[0], a[1]); }
static int64_t i_mul(const int64_t *a) { return wrap_mul(a[0], a[1]); }
static int64_t i_div(const int64_t *a) {
  return a[1] == 0 ? 0 : a[1] == -1 ? wrap_sub(0, a[0]) : a[0] / a[1];
}
static int64_t i_neg(const int64_t *a) { return wrap_sub(0, a[0]); }
static int64_t i_abs(const int64_t *a) { return a[0] < 0 ? wrap_sub(0, a[0]) : a[0]; }
static int64_t i_relu(const int64_t *a) { return a[0] > 0 ? a[0] : 0; }
static int64_t i_sign(const int64_t *a) { return a[0] > 0 ? 1 : a[0] < 0 ? -1 : 0; }
static int64_t i_max(const int64_t *a) { return a[0] > a[1] ? a[0] : a[1]; }
static int64_t i_min(const int64_t *a) { return a[0] < a[1] ? a[0] : a[1]; }
static int64_t i_clip(const int64_t *a) { return a[0] < a[1] ? a[1] : a[0] > a[2] ? a[2] : a[0]; }
static int64_t i_eq(const int64_t *a) { return a[0] == a[1]; }
static int64_t i_lt(const int64_t *a) { return a[0] < a[1]; }
static int64_t i_le(const int64_t *a) { return a[0] <= a[1]; }
static int64_t i_gt(const int64_t *a) { return a[0] > a[1]; }
static int64_t i_ge(const int64_t *a) { return a[0] >= a[1]; }
static int64_t i_not(const int64_t *a) { return !a[0]; }
static int64_t i_and(const int64_t *a) { return a[0] && a[1]; }
static int64_t i_or(const int64_t *a) { return a[0] || a[1]; }
static int64_t i_xor(const int64_t *a) { return (a[0] != 0) != (a[1] != 0); }
static int64_t i_where(const int64_t *a) { return a[0] ? a[1] : a[2]; }
static int64_t i_fmod(const int64_t *a) { return a[1] == 0 || a[1] == -1 ? 0 : a[0] % a[1]; }
static int64_t i_mod(const int64_t *a) {  /* Python: the result takes the divisor's sign */
  int64_t r = i_fmod(a);
  return r != 0 && (r < 0) != (a[1] < 0) ? r + a[1] : r;
}
static int64_t i_shl(const int64_t *a) { return a[1] < 0 || a[1] >= 64 ? 0 : (int64_t)((uint64_t)a[0] << a[1]); }
static int64_t i_shr(const int64_t *a) { return a[1] < 0 || a[1] >= 64 ? 0 : (int64_t)((uint64_t)a[0] >> a[1]); }

typedef struct EwFold {
  F64Fn f;   /* float inputs (NULL: not folded) */
  I64Fn i;   /* integer and bool inputs (NULL: not folded) */
} EwFold;

static const EwFold ew_folds[OP_COUNT_] = {
    [OP_Add] = {f_add, i_add},       [OP_Sub] = {f_sub, i_sub},
    [OP_Mul] = {f_mul, i_mul},       [OP_Div] = {f_div, i_div},
    [OP_Neg] = {f_neg, i_neg},       [OP_Abs] = {f_abs, i_abs},
    [OP_Relu] = {f_relu, i_relu},    [OP_Sign] = {f_sign, i_sign},
    [OP_Sqrt] = {f_sqrt, NULL},      [OP_Exp] = {f_exp, NULL},
    [OP_Log] = {f_log, NULL},        [OP_Reciprocal] = {f_recip, NULL},
    [OP_Floor] = {f_floor, NULL},    [OP_Ceil] = {f_ceil, NULL},
    [OP_Round] = {f_round, NULL},    [OP_Pow] = {f_pow, NULL},
    [OP_Max] = {f_max, i_max},       [OP_Min] = {f_min, i_min},
    [OP_Sum] = {f_add, i_add},       [OP_Mean] = {f_add, NULL},
    [OP_Clip] = {f_clip, i_clip},    [OP_Equal] = {f_eq, i_eq},
    [OP_Less] = {f_lt, i_lt},        [OP_LessOrEqual] = {f_le, i_le},
    [OP_Greater] = {f_gt, i_gt},     [OP_GreaterOrEqual] = {f_ge, i_ge},
    [OP_Not] = {NULL, i_not},        [OP_And] = {NULL, i_and},
    [OP_Or] = {NULL, i_or},          [OP_Xor] = {NULL, i_xor},
    [OP_Where] = {f_where, i_where},   [OP_Mod] = {f_fmod, i_mod},
    [OP_BitShift] = {NULL, i_shl},
};

/* The row's folder, or the variant an attribute selects. */
static EwFold ew_fold_for(const Node *n) {
  EwFold f = ew_folds[n->op];
  if (n->op == OP_Mod && ir_attr_int(n, "fmod", 0))
    f.i = i_fmod;
  if (n->op == OP_BitShift && !strcmp(ir_attr_str(n, "direction", ""), "RIGHT"))
    f.i = i_shr;
  return f;
}

/* Broadcast strides of input k against the output shape (0 on broadcast dims). */
static void bcast_strides(const Shape *in, const Shape *out, int64_t *st) {
  int64_t acc = 1;
  for (int j = out->rank - 1; j >= 0; j--) {
    int a = j - (out->rank - in->rank);
    if (a < 0 || in->d[a] == 1) {
      st[j] = 0;
    } else {
      st[j] = acc;
      acc *= in->d[a];
    }
  }
}

static FoldResult fold_ew(Node *n, Diag *d) {
  EwFold fold = ew_fold_for(n);
  const EwFold *ef = &fold;
  DType dt = n->in[n->op == OP_Where ? 1 : 0]->dt;
  bool fl = dtype_is_float(dt) || n->op == OP_Pow;
  bool variadic = ir_ops[n->op].max_in < 0;
  int nk = n->n_in;
  for (int k = 0; k < nk; k++)
    if (!numeric(n->in[k]->dt) || n->in[k]->dt == DT_U64)
      return FOLD_SKIP;  /* u64 does not fit the int64 evaluation */
  if ((fl && !ef->f) || (!fl && !ef->i) || (nk > 3 && !variadic))
    return FOLD_SKIP;
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return FOLD_SKIP;
  const Shape *ys = &t->shape;
  /* Scratch in the graph arena: variadic rows may have many operands. */
  int64_t (*stv)[IR_MAX_RANK] = arena_alloc(n->g->arena, (size_t)nk * sizeof *stv);
  int64_t *offs = arena_alloc(n->g->arena, (size_t)nk * sizeof *offs);
  for (int k = 0; k < nk; k++)
    bcast_strides(&n->in[k]->shape, ys, stv[k]);
  for (int64_t o = 0; o < t->numel; o++) {
    int64_t rem = o;
    for (int k = 0; k < nk; k++)
      offs[k] = 0;
    for (int j = ys->rank - 1; j >= 0; j--) {
      int64_t c = rem % ys->d[j];
      rem /= ys->d[j];
      for (int k = 0; k < nk; k++)
        offs[k] += c * stv[k][j];
    }
    if (fl) {
      double a[3];
      if (variadic) {
        a[0] = tensor_get_f64(in_t(n, 0), offs[0]);
        for (int k = 1; k < nk; k++) {
          a[1] = tensor_get_f64(in_t(n, k), offs[k]);
          a[0] = ef->f(a);
        }
        store_f64(t, o, n->op == OP_Mean ? a[0] / nk : a[0]);
      } else {
        for (int k = 0; k < nk; k++)
          a[k] = tensor_get_f64(in_t(n, k), offs[k]);
        store_f64(t, o, ef->f(a));
      }
    } else {
      int64_t a[3];
      a[0] = tensor_get_i64(in_t(n, 0), offs[0]);
      for (int k = 1; k < nk && variadic; k++) {
        a[1] = tensor_get_i64(in_t(n, k), offs[k]);
        a[0] = ef->i(a);
      }
      for (int k = 1; k < nk && !variadic; k++)
        a[k] = tensor_get_i64(in_t(n, k), offs[k]);
      tensor_set_i64(t, o, variadic ? a[0] : ef->i(a));
    }
  }
  ir_value_make_const(n->out[0], t);
  return FOLD_DONE;
}

/* ---- Reduce{Sum,Prod,Max,Min} -------------------------------------------------
 * Shape arithmetic in exported models reduces small integer constants. Like
 * the generated code (and ONNX Runtime), sums and products are computed in
 * double and saturate when stored; Max/Min of integers compare exactly. */

static FoldResult fold_reduce(Node *n, Diag *d) {
  const Tensor *x = in_t(n, 0);
  bool mask[IR_MAX_RANK], noop;
  if (!numeric(x->dt) || !infer_reduce_axes(n, x->shape.rank, mask, &noop))
    return FOLD_SKIP;
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return FOLD_SKIP;
  OpKind op = n->op;
  bool exact = !dtype_is_float(x->dt) && (op == OP_ReduceMax || op == OP_ReduceMin);
  double *fa = arena_alloc(n->g->arena, (size_t)(t->numel + 1) * sizeof *fa);
  int64_t *ia = arena_alloc(n->g->arena, (size_t)(t->numel + 1) * sizeof *ia);
  /* Start values: the identity of each operation, the type's extremes for Max/Min. */
  int bits = dtype_bits(x->dt);
  bool sgn = dtype_is_signed(x->dt);
  int64_t imin = x->dt == DT_BOOL || !sgn ? 0 : bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
  int64_t imax = x->dt == DT_BOOL ? 1 : bits >= 63 ? INT64_MAX : ((int64_t)1 << (sgn ? bits - 1 : bits)) - 1;
  if (x->dt == DT_U64 && exact)
    return FOLD_SKIP;  /* does not fit the int64 evaluation */
  for (int64_t o = 0; o < t->numel; o++) {
    fa[o] = op == OP_ReduceProd ? 1 : op == OP_ReduceMax ? -INFINITY : op == OP_ReduceMin ? INFINITY : 0;
    ia[o] = op == OP_ReduceMax ? imin : imax;
  }
  /* Output index of each input element: its coordinates minus the reduced ones. */
  int r = x->shape.rank;
  int64_t ostride[IR_MAX_RANK], acc = 1;
  for (int i = r - 1; i >= 0; i--) {
    ostride[i] = mask[i] ? 0 : acc;
    acc *= mask[i] ? 1 : x->shape.d[i];
  }
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t rem = i, o = 0;
    for (int j = r - 1; j >= 0; j--) {
      o += (rem % x->shape.d[j]) * ostride[j];
      rem /= x->shape.d[j];
    }
    if (exact) {
      int64_t v = tensor_get_i64(x, i), *a = &ia[o];
      *a = op == OP_ReduceMax ? (v > *a ? v : *a) : (v < *a ? v : *a);
      continue;
    }
    double v = tensor_get_f64(x, i), *a = &fa[o];
    if (op == OP_ReduceSum)
      *a += v;
    else if (op == OP_ReduceProd)
      *a *= v;
    else if (isnan(*a) || isnan(v))  /* Max/Min propagate NaN */
      *a = NAN;
    else
      *a = (op == OP_ReduceMax ? v > *a : v < *a) ? v : *a;
  }
  for (int64_t o = 0; o < t->numel; o++) {
    if (exact)
      tensor_set_i64(t, o, ia[o]);
    else
      store_f64(t, o, fa[o]);
  }
  ir_value_make_const(n->out[0], t);
  return FOLD_DONE;
}

/* ---- the table -------------------------------------------------------------------- */

/* The data-movement family folds in fold_movement.c. */
static FoldResult fold_movement_op(Node *n, Diag *d) {
  int r = fold_movement(n, d);
  return r > 0 ? FOLD_DONE : r < 0 ? FOLD_ERROR : FOLD_SKIP;
}

static const FoldFn folders[OP_COUNT_] = {
    [OP_Constant] = fold_Constant,   [OP_Identity] = fold_view,   [OP_Reshape] = fold_view,
    [OP_Flatten] = fold_view,        [OP_Squeeze] = fold_view,    [OP_Unsqueeze] = fold_view,
    [OP_Dropout] = fold_Dropout,     [OP_Shape] = fold_Shape,     [OP_Gather] = fold_Gather,
    [OP_Concat] = fold_Concat,       [OP_Transpose] = fold_Transpose, [OP_Cast] = fold_Cast,
    [OP_CastLike] = fold_Cast,
    [OP_Slice] = fold_movement_op,   [OP_Pad] = fold_movement_op,    [OP_Expand] = fold_movement_op,
    [OP_Tile] = fold_movement_op,    [OP_Split] = fold_movement_op,  [OP_Size] = fold_movement_op,
    [OP_ConstantOfShape] = fold_movement_op, [OP_Range] = fold_movement_op,
    [OP_ReduceSum] = fold_reduce,    [OP_ReduceProd] = fold_reduce,
    [OP_ReduceMax] = fold_reduce,    [OP_ReduceMin] = fold_reduce,
};

bool fold_node(Node *n, bool *done, Diag *d) {
  *done = false;
  FoldFn f = folders[n->op];
  if (!f && ew_folds[n->op].f == NULL && ew_folds[n->op].i == NULL)
    return true;
  if (!f)
    f = fold_ew;
  /* Every input must be constant, except for Shape and Size, which read only shapes,
   * and CastLike's type-giving input 1. */
  int need = n->op == OP_Shape || n->op == OP_Size ? 0 : n->op == OP_CastLike ? 1 : n->n_in;
  for (int i = 0; i < need; i++)
    if (n->in[i]->kind != VK_CONST && n->in[i]->kind != VK_NONE)
      return true;
  /* A node that must fail at run time (training Dropout...) was rejected by inference. */
  for (int i = 0; i < n->n_out; i++)
    if (n->out[i]->kind != VK_NONE && n->out[i]->dt == DT_UNDEF)
      return true;
  FoldResult r = f(n, d);
  *done = r == FOLD_DONE;
  return r != FOLD_ERROR;
}
