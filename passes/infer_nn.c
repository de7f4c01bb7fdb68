/* infer_nn.c - shape inference of the normalization and "nn" ops of the opsf
 * family: LayerNormalization, RMSNormalization, InstanceNormalization,
 * GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN,
 * ConvTranspose, LpPool, GlobalLpPool, Gelu and MaxUnpool.
 *
 * Most keep the input's shape (symbolic dims included) and only validate
 * types, axes and the shapes of their parameters. ConvTranspose and LpPool
 * compute spatial extents:
 *   ConvTranspose  out = s * (in - 1) + output_padding + (k - 1) * d + 1 - pb - pe,
 *                  or output_shape when given, or in * s under SAME_* auto_pad
 *   LpPool         the sliding-window extents of the other pools (see infer_conv.c)
 * Reference: the ONNX operator docs (onnx/defs) and onnx/reference/ops.
 */
#include "passes.h"

#include <string.h>

static bool float_dtype(DType t) {
  return t == DT_F32 || t == DT_F64 || t == DT_F16 || t == DT_BF16;
}

/* Checks that input i has a floating-point element type. */
static bool want_float(Node *n, Diag *d, int i, const char *what) {
  DType t = n->in[i]->dt;
  if (!float_dtype(t))
    return infer_fail(d, n, "input %d (%s) has element type %s, expected f16, bf16, f32 or f64", i,
                      what, dtype_name(t));
  return true;
}

/* Checks that input i has the element type of input 0. */
static bool want_same_type(Node *n, Diag *d, int i, const char *what) {
  if (n->in[i]->dt != n->in[0]->dt)
    return infer_fail(d, n, "input %d (%s) has element type %s, expected %s like input 0", i, what,
                      dtype_name(n->in[i]->dt), dtype_name(n->in[0]->dt));
  return true;
}

/* Checks that input i is 1-D with `len` elements (len < 0: unknown, not checked). */
static bool want_vector(Node *n, Diag *d, int i, const char *what, int64_t len) {
  const Shape *s = &n->in[i]->shape;
  if (s->rank < 0)
    return true;
  if (s->rank != 1)
    return infer_fail(d, n, "input %d (%s) has rank %d, expected 1", i, what, s->rank);
  if (len >= 0 && s->d[0] >= 0 && s->d[0] != len)
    return infer_fail(d, n, "input %d (%s) has %lld elements, expected %lld", i, what,
                      (long long)s->d[0], (long long)len);
  return true;
}

/* Checks that input i broadcasts unidirectionally to shape x (numpy rules,
 * every dim of the input either 1 or x's extent). */
static bool want_bcast_to(Node *n, Diag *d, int i, const char *what, const Shape *x) {
  const Shape *s = &n->in[i]->shape;
  if (s->rank < 0 || x->rank < 0)
    return true;
  if (s->rank > x->rank)
    return infer_fail(d, n, "input %d (%s) has rank %d, more than input 0's rank %d", i, what,
                      s->rank, x->rank);
  for (int k = 0; k < s->rank; k++) {
    int64_t a = s->d[k], b = x->d[x->rank - s->rank + k];
    if (a >= 0 && a != 1 && b >= 0 && a != b)
      return infer_fail(d, n,
                        "input %d (%s) dim %d is %lld, which does not broadcast to input 0's %lld",
                        i, what, k, (long long)a, (long long)b);
  }
  return true;
}

/* Reads `axis` (default dflt) into *ax for rank r (r < 0: not checked). */
static bool read_axis(Node *n, Diag *d, int64_t dflt, int r, int *ax) {
  int64_t axis = ir_attr_int(n, "axis", dflt);
  *ax = 0;
  if (r >= 0 && !shape_axis(axis, r, ax))
    return infer_fail(d, n, "axis %lld is out of range for input 0 of rank %d", (long long)axis, r);
  return true;
}

/* The element type named by stash_type (ONNX TensorProto codes). */
static bool read_stash(Node *n, Diag *d, DType *out) {
  int64_t st = ir_attr_int(n, "stash_type", 1);
  *out = DT_F32; /* defined on failure too (gcc -O3 cannot see through infer_fail) */
  if (st != DT_F32 && st != DT_F64 && st != DT_BF16 && st != DT_F16)
    return infer_fail(d, n, "stash_type %lld is not a floating-point type (1, 10, 11 or 16)",
                      (long long)st);
  *out = (DType)st;
  return true;
}

static bool want_rank_at_least(Node *n, Diag *d, int min, const char *layout) {
  int r = n->in[0]->shape.rank;
  if (r >= 0 && r < min)
    return infer_fail(d, n, "input 0 has rank %d, expected at least %d (%s)", r, min, layout);
  return true;
}

/* ---- LayerNormalization, RMSNormalization ------------------------------------------- */

bool infer_LayerNormalization(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  DType stash;
  int ax;
  if (!want_float(n, d, 0, "X") || !want_same_type(n, d, 1, "Scale") ||
      (ir_has_input(n, 2) && !want_same_type(n, d, 2, "B")) || !read_stash(n, d, &stash))
    return false;
  if (xs->rank == 0)
    return infer_fail(d, n, "input 0 (X) is a scalar, expected rank >= 1");
  if (!read_axis(n, d, -1, xs->rank, &ax) || !want_bcast_to(n, d, 1, "Scale", xs) ||
      (ir_has_input(n, 2) && !want_bcast_to(n, d, 2, "B", xs)))
    return false;
  infer_set(n, 0, n->in[0]->dt, xs);
  /* Mean and InvStdDev: X's shape with the normalized dims set to 1. */
  Shape ms = *xs;
  for (int i = ax; i < ms.rank; i++) {
    ms.d[i] = 1;
    ms.sym[i] = NULL, ms.x[i] = NULL;
  }
  for (int i = 1; i < n->n_out; i++)
    infer_set(n, i, stash, &ms);
  return true;
}

bool infer_RMSNormalization(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  DType stash;
  int ax;
  if (!want_float(n, d, 0, "X") || !want_float(n, d, 1, "scale") || !read_stash(n, d, &stash))
    return false;
  if (xs->rank == 0)
    return infer_fail(d, n, "input 0 (X) is a scalar, expected rank >= 1");
  if (!read_axis(n, d, -1, xs->rank, &ax) || !want_bcast_to(n, d, 1, "scale", xs))
    return false;
  infer_set(n, 0, n->in[1]->dt, xs);  /* Y has the scale's type (V) */
  return true;
}

/* ---- InstanceNormalization, GroupNormalization -------------------------------------- */

bool infer_InstanceNormalization(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  if (!want_float(n, d, 0, "input") || !want_same_type(n, d, 1, "scale") ||
      !want_same_type(n, d, 2, "B") || !want_rank_at_least(n, d, 3, "N, C, spatial..."))
    return false;
  int64_t c = xs->rank >= 0 ? xs->d[1] : DIM_UNKNOWN;
  if (!want_vector(n, d, 1, "scale", c) || !want_vector(n, d, 2, "B", c))
    return false;
  infer_set(n, 0, n->in[0]->dt, xs);
  return true;
}

bool infer_GroupNormalization(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  DType stash;
  if (!want_float(n, d, 0, "X") || !want_same_type(n, d, 1, "scale") ||
      !want_same_type(n, d, 2, "bias") || !want_rank_at_least(n, d, 2, "N, C, ...") ||
      !read_stash(n, d, &stash))
    return false;
  const Attr *a = ir_attr(n, "num_groups");
  if (!a || a->kind != AT_INT)
    return infer_fail(d, n, "attribute 'num_groups' (an int) is required");
  int64_t groups = a->u.i, c = xs->rank >= 0 ? xs->d[1] : DIM_UNKNOWN;
  if (groups < 1)
    return infer_fail(d, n, "num_groups is %lld, expected >= 1", (long long)groups);
  if (c >= 0 && c % groups != 0)
    return infer_fail(d, n, "input 0 has %lld channels, not a multiple of num_groups %lld",
                      (long long)c, (long long)groups);
  /* Opset 18 scales per group; opset 21 per channel. */
  int64_t len = n->g->opset >= 21 ? c : groups;
  if (!want_vector(n, d, 1, "scale", len) || !want_vector(n, d, 2, "bias", len))
    return false;
  infer_set(n, 0, n->in[0]->dt, xs);
  return true;
}

/* ---- LpNormalization, MeanVarianceNormalization, LRN -------------------------------- */

bool infer_LpNormalization(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  int ax;
  if (!want_float(n, d, 0, "input"))
    return false;
  if (xs->rank == 0)
    return infer_fail(d, n, "input 0 is a scalar, expected rank >= 1");
  if (!read_axis(n, d, -1, xs->rank, &ax))
    return false;
  int64_t p = ir_attr_int(n, "p", 2);
  if (p != 1 && p != 2)
    return infer_fail(d, n, "p is %lld, expected 1 or 2", (long long)p);
  infer_set(n, 0, n->in[0]->dt, xs);
  return true;
}

bool infer_MeanVarianceNormalization(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  if (!want_float(n, d, 0, "X"))
    return false;
  static const int64_t dflt[3] = {0, 2, 3};
  int cnt = 3;
  const int64_t *axes = dflt;
  const Attr *a = ir_attr(n, "axes");
  if (a && a->kind != AT_INTS)
    return infer_fail(d, n, "attribute 'axes' must be a list of ints");
  if (a)
    axes = ir_attr_ints(n, "axes", &cnt);
  if (xs->rank >= 0) {
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < cnt; i++) {
      int ax;
      if (!shape_axis(axes[i], xs->rank, &ax))
        return infer_fail(d, n, "axes[%d] = %lld is out of range for input 0 of rank %d", i,
                          (long long)axes[i], xs->rank);
      if (seen[ax])
        return infer_fail(d, n, "axes lists axis %d twice", ax);
      seen[ax] = true;
    }
  }
  infer_set(n, 0, n->in[0]->dt, xs);
  return true;
}

bool infer_LRN(Node *n, Diag *d) {
  if (!want_float(n, d, 0, "X") || !want_rank_at_least(n, d, 2, "N, C, ..."))
    return false;
  const Attr *a = ir_attr(n, "size");
  if (!a || a->kind != AT_INT)
    return infer_fail(d, n, "attribute 'size' (an int) is required");
  if (a->u.i < 1)
    return infer_fail(d, n, "size is %lld, expected >= 1", (long long)a->u.i);
  infer_set(n, 0, n->in[0]->dt, &n->in[0]->shape);
  return true;
}

/* ---- sliding-window attributes ----------------------------------------------------- */

typedef enum AutoPad { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID } AutoPad;

static bool read_auto_pad(Node *n, Diag *d, AutoPad *out) {
  const char *ap = ir_attr_str(n, "auto_pad", "NOTSET");
  if (strcmp(ap, "NOTSET") == 0 || ap[0] == '\0')
    *out = PAD_NOTSET;
  else if (strcmp(ap, "SAME_UPPER") == 0)
    *out = PAD_SAME_UPPER;
  else if (strcmp(ap, "SAME_LOWER") == 0)
    *out = PAD_SAME_LOWER;
  else if (strcmp(ap, "VALID") == 0)
    *out = PAD_VALID;
  else
    return infer_fail(d, n, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                      ap);
  return true;
}

/* kernel_shape, strides, dilations and pads of r spatial dims; kernel_shape
 * is taken from `kernel` when absent (NULL: required). */
typedef struct Win {
  AutoPad pad;
  int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], dil[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
} Win;

static bool read_win(Node *n, Diag *d, int r, const int64_t *kernel, Win *w) {
  memset(w, 0, sizeof *w);
  if (!read_auto_pad(n, d, &w->pad))
    return false;
  if (ir_attr(n, "kernel_shape")) {
    if (!infer_attr_ints(n, d, "kernel_shape", r, 1, 1, w->k))
      return false;
    for (int i = 0; kernel && i < r; i++)
      if (kernel[i] >= 0 && kernel[i] != w->k[i])
        return infer_fail(d, n, "kernel_shape[%d] is %lld but the weight has %lld", i,
                          (long long)w->k[i], (long long)kernel[i]);
  } else if (kernel) {
    memcpy(w->k, kernel, (size_t)r * sizeof *w->k);
  } else {
    return infer_fail(d, n, "attribute 'kernel_shape' is required");
  }
  return infer_attr_ints(n, d, "strides", r, 1, 1, w->s) &&
         infer_attr_ints(n, d, "dilations", r, 1, 1, w->dil) &&
         infer_attr_ints(n, d, "pads", 2 * r, 0, 0, w->pads);
}

/* ---- LpPool, GlobalLpPool ----------------------------------------------------------- */

static bool read_p(Node *n, Diag *d) {
  float p = ir_attr_float(n, "p", 2.0f);
  if (!(p > 0))
    return infer_fail(d, n, "p is %g, expected > 0", (double)p);
  return true;
}

bool infer_LpPool(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape;
  if (!want_float(n, d, 0, "X") || !want_rank_at_least(n, d, 3, "N, C, spatial...") ||
      !read_p(n, d))
    return false;
  if (xs->rank < 0) {
    infer_set(n, 0, n->in[0]->dt, NULL);
    return true;
  }
  int r = xs->rank - 2;
  Win w;
  if (!read_win(n, d, r, NULL, &w))
    return false;
  int64_t cm = ir_attr_int(n, "ceil_mode", 0);
  if (cm != 0 && cm != 1)
    return infer_fail(d, n, "ceil_mode is %lld, expected 0 or 1", (long long)cm);
  Shape out = *xs;
  for (int i = 0; i < r; i++) {
    int64_t in = xs->d[2 + i], dk = (w.k[i] - 1) * w.dil[i] + 1, s = w.s[i];
    out.sym[2 + i] = NULL, out.x[2 + i] = NULL;
    if (in < 0) {
      out.d[2 + i] = DIM_UNKNOWN;
      continue;
    }
    if (w.pad == PAD_SAME_UPPER || w.pad == PAD_SAME_LOWER) {
      out.d[2 + i] = (in + s - 1) / s;
      continue;
    }
    int64_t pb = w.pad == PAD_VALID ? 0 : w.pads[i];
    int64_t span = in + (w.pad == PAD_VALID ? 0 : w.pads[i] + w.pads[r + i]);
    if (span < dk)
      return infer_fail(d, n,
                        "spatial dim %d: padded input extent %lld is smaller than the dilated "
                        "kernel extent %lld",
                        i, (long long)span, (long long)dk);
    int64_t o = (span - dk) / s + 1;
    if (cm && (span - dk) % s != 0 && o * s < in + pb)
      o++;  /* ceil, unless the last window would start in the end padding */
    out.d[2 + i] = o;
  }
  infer_set(n, 0, n->in[0]->dt, &out);
  return true;
}

bool infer_GlobalLpPool(Node *n, Diag *d) {
  if (!want_float(n, d, 0, "X") || !want_rank_at_least(n, d, 2, "N, C, ...") || !read_p(n, d))
    return false;
  Shape out = n->in[0]->shape;
  for (int i = 2; i < out.rank; i++) {
    out.d[i] = 1;
    out.sym[i] = NULL, out.x[i] = NULL;
  }
  infer_set(n, 0, n->in[0]->dt, &out);
  return true;
}

/* ---- ConvTranspose ------------------------------------------------------------------- */

bool infer_ConvTranspose(Node *n, Diag *d) {
  const Value *x = n->in[0], *wt = n->in[1];
  if (!want_float(n, d, 0, "X") || !want_same_type(n, d, 1, "W") ||
      (ir_has_input(n, 2) && !want_same_type(n, d, 2, "B")))
    return false;
  int rank = x->shape.rank >= 0 ? x->shape.rank : wt->shape.rank;
  if (rank < 0) {
    infer_set(n, 0, x->dt, NULL);
    return true;
  }
  if (rank < 3)
    return infer_fail(d, n, "input 0 (X) has rank %d, expected at least 3 (N, C, spatial...)",
                      rank);
  if (wt->shape.rank >= 0 && wt->shape.rank != rank)
    return infer_fail(d, n, "input 1 (W) has rank %d, expected %d like input 0", wt->shape.rank,
                      rank);
  Shape xs = x->shape, ws = wt->shape;
  if (xs.rank < 0)
    xs = infer_unknown_dims(rank);
  if (ws.rank < 0)
    ws = infer_unknown_dims(rank);
  int64_t group = ir_attr_int(n, "group", 1), c = xs.d[1];
  if (group < 1)
    return infer_fail(d, n, "group is %lld, expected >= 1", (long long)group);
  if (c >= 0 && c % group != 0)
    return infer_fail(d, n, "input 0 has %lld channels, not a multiple of group %lld",
                      (long long)c, (long long)group);
  if (c >= 0 && ws.d[0] >= 0 && ws.d[0] != c)
    return infer_fail(d, n, "input 1 (W) dim 0 is %lld, expected %lld (the input channels)",
                      (long long)ws.d[0], (long long)c);
  int64_t m = ws.d[1] >= 0 ? ws.d[1] * group : DIM_UNKNOWN;
  if (ir_has_input(n, 2) && !want_vector(n, d, 2, "B", m))
    return false;
  int r = rank - 2;
  Win w;
  int64_t opad[IR_MAX_RANK], oshape[IR_MAX_RANK + 2];
  if (!read_win(n, d, r, &ws.d[2], &w) || !infer_attr_ints(n, d, "output_padding", r, 0, 0, opad))
    return false;
  const Attr *os = ir_attr(n, "output_shape");
  int n_os = 0;
  if (os) {
    n_os = os->kind == AT_INTS ? os->n : -1;
    if (n_os != r && n_os != r + 2)
      return infer_fail(d, n, "attribute 'output_shape' must list %d spatial extents", r);
    if (!infer_attr_ints(n, d, "output_shape", n_os, 1, 1, oshape))
      return false;
  }
  Shape out = xs;
  out.d[1] = m;
  out.sym[1] = NULL, out.x[1] = NULL;
  for (int i = 0; i < r; i++) {
    int64_t in = xs.d[2 + i], o = DIM_UNKNOWN;
    out.sym[2 + i] = NULL, out.x[2 + i] = NULL;
    if (os)
      o = oshape[n_os - r + i];
    else if (in < 0 && xs.x[2 + i] && w.k[i] >= 0) { /* -D ranges: s * in + a constant */
      Graph *root = n->g;
      while (root->parent)
        root = root->parent;
      int64_t pads = w.pad == PAD_VALID || w.pad == PAD_SAME_UPPER || w.pad == PAD_SAME_LOWER
                         ? 0 : w.pads[i] + w.pads[r + i];
      int64_t add = w.pad == PAD_SAME_UPPER || w.pad == PAD_SAME_LOWER
                        ? 0 : opad[i] + (w.k[i] - 1) * w.dil[i] + 1 - pads - w.s[i];
      const DimExpr *e = dx_add(n->g->arena, dx_mul(n->g->arena, dx_const(n->g->arena, w.s[i]), xs.x[2 + i]),
                                dx_const(n->g->arena, add));
      int64_t lo, hi;
      if (!e || !dx_bounds(root, e, &lo, &hi) || lo < 1)
        return infer_fail(d, n, "spatial dim %d: the output extent is not positive over the dims' ranges", i);
      shape_set_dx(root, &out, 2 + i, e);
      continue;
    } else if (in < 0 || w.k[i] < 0)
      o = DIM_UNKNOWN;
    else if (w.pad == PAD_SAME_UPPER || w.pad == PAD_SAME_LOWER)
      o = in * w.s[i];
    else {
      int64_t pads = w.pad == PAD_VALID ? 0 : w.pads[i] + w.pads[r + i];
      o = w.s[i] * (in - 1) + opad[i] + (w.k[i] - 1) * w.dil[i] + 1 - pads;
      if (o < 1)
        return infer_fail(d, n, "spatial dim %d: the output extent %lld is not positive", i,
                          (long long)o);
    }
    out.d[2 + i] = o;
  }
  infer_set(n, 0, x->dt, &out);
  return true;
}

/* ---- Gelu ------------------------------------------------------------------------- */

bool infer_Gelu(Node *n, Diag *d) {
  if (!want_float(n, d, 0, "X"))
    return false;
  const char *ap = ir_attr_str(n, "approximate", "none");
  if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0)
    return infer_fail(d, n, "approximate is '%s', expected 'none' or 'tanh'", ap);
  infer_set(n, 0, n->in[0]->dt, &n->in[0]->shape);
  return true;
}

/* ---- MaxUnpool ---------------------------------------------------------------------- */

/* Y has the "inferred" shape (in - 1) * s + k - pb - pe per spatial dim, or
 * the output_shape input (constant), which may only enlarge it: the indices
 * address the inferred shape, whose elements keep their coordinates. */
bool infer_MaxUnpool(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape, *is = &n->in[1]->shape;
  if (!want_float(n, d, 0, "X") || !want_rank_at_least(n, d, 3, "N, C, spatial..."))
    return false;
  if (n->in[1]->dt != DT_I64)
    return infer_fail(d, n, "input 1 (I) has element type %s, expected i64",
                      dtype_name(n->in[1]->dt));
  if (xs->rank >= 0 && is->rank >= 0 && !shape_equal(xs, is)) {
    char a[128], b[128];
    return infer_fail(d, n, "input 1 (I) has shape %s, expected X's shape %s",
                      shape_str(is, a, sizeof a), shape_str(xs, b, sizeof b));
  }
  if (xs->rank < 0) {
    infer_set(n, 0, n->in[0]->dt, NULL);
    return true;
  }
  int r = xs->rank - 2;
  Win w;
  if (!read_win(n, d, r, NULL, &w))
    return false;
  Shape out = *xs;
  for (int i = 0; i < r; i++) {
    int64_t in = xs->d[2 + i];
    out.sym[2 + i] = NULL, out.x[2 + i] = NULL;
    out.d[2 + i] = in < 0 ? DIM_UNKNOWN : (in - 1) * w.s[i] + w.k[i] - w.pads[i] - w.pads[r + i];
    if (in >= 0 && out.d[2 + i] < 1)
      return infer_fail(d, n, "spatial dim %d: the output extent %lld is not positive", i,
                        (long long)out.d[2 + i]);
  }
  if (ir_has_input(n, 2)) {
    int64_t dims[IR_MAX_RANK];
    int cnt = 0;
    if (n->in[2]->dt != DT_I64)
      return infer_fail(d, n, "input 2 (output_shape) has element type %s, expected i64",
                        dtype_name(n->in[2]->dt));
    if (!infer_const_ints(n, 2, dims, &cnt, IR_MAX_RANK)) {
      /* Known only at run time: the rank is all we know. */
      for (int i = 0; i < out.rank; i++)
        out.d[i] = DIM_UNKNOWN, out.sym[i] = NULL, out.x[i] = NULL;
    } else {
      if (cnt != xs->rank)
        return infer_fail(d, n, "input 2 (output_shape) has %d values, expected %d", cnt,
                          xs->rank);
      for (int i = 0; i < cnt; i++) {
        if (out.d[i] >= 0 && dims[i] < out.d[i])
          return infer_fail(d, n,
                            "output_shape[%d] is %lld, smaller than the unpooled extent %lld", i,
                            (long long)dims[i], (long long)out.d[i]);
        if (i < 2 && out.d[i] >= 0 && dims[i] != out.d[i])
          return infer_fail(d, n, "output_shape[%d] is %lld, expected %lld like X", i,
                            (long long)dims[i], (long long)out.d[i]);
        out.d[i] = dims[i];
        out.sym[i] = NULL, out.x[i] = NULL;
      }
    }
  }
  infer_set(n, 0, n->in[0]->dt, &out);
  return true;
}
