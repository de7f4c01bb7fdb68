/* infer_conv.c - shape inference of convolution and pooling.
 *
 * Conv, MaxPool and AveragePool share one sliding-window geometry: per spatial
 * dim a kernel extent k, stride s, dilation d and pads (begin pb, end pe),
 * either explicit or derived from auto_pad. With the dilated kernel
 * dk = (k - 1) * d + 1 the output extent is
 *   NOTSET  floor((in + pb + pe - dk) / s) + 1   (ceil for pools with ceil_mode,
 *           dropping a last window that would start in the end padding)
 *   SAME_*  ceil(in / s)
 *   VALID   floor((in - dk) / s) + 1
 * Reference: the ONNX operator docs and onnx/reference/ops/op_pool_common.py.
 * Symbolic batch dims pass through; an unknown spatial extent stays unknown.
 */
#include "passes.h"

#include <string.h>

typedef enum AutoPad { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID } AutoPad;

typedef struct Window {
  int r;                                  /* spatial rank */
  AutoPad pad;
  bool ceil_mode;
  int64_t k[IR_MAX_RANK];                 /* DIM_UNKNOWN when not known */
  int64_t s[IR_MAX_RANK], dil[IR_MAX_RANK];
  int64_t pb[IR_MAX_RANK], pe[IR_MAX_RANK];
} Window;

static bool is_conv_dtype(DType t) {
  return t == DT_F32 || t == DT_F64 || t == DT_F16 || t == DT_BF16;
}

/* Reads the window attributes for `r` spatial dims. `kernel` holds the kernel
 * extents taken from a weight shape (Conv) or NULL when kernel_shape is
 * required (pools). */
static bool read_window(const Node *n, Diag *d, int r, const int64_t *kernel, bool pool,
                        Window *w) {
  memset(w, 0, sizeof *w);
  w->r = r;
  const char *ap = ir_attr_str(n, "auto_pad", "NOTSET");
  if (strcmp(ap, "NOTSET") == 0 || ap[0] == '\0')
    w->pad = PAD_NOTSET;
  else if (strcmp(ap, "SAME_UPPER") == 0)
    w->pad = PAD_SAME_UPPER;
  else if (strcmp(ap, "SAME_LOWER") == 0)
    w->pad = PAD_SAME_LOWER;
  else if (strcmp(ap, "VALID") == 0)
    w->pad = PAD_VALID;
  else
    return infer_fail(d, n, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                      ap);
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
  if (!infer_attr_ints(n, d, "strides", r, 1, 1, w->s) ||
      !infer_attr_ints(n, d, "dilations", r, 1, 1, w->dil))
    return false;
  int64_t pads[2 * IR_MAX_RANK];
  if (!infer_attr_ints(n, d, "pads", 2 * r, 0, 0, pads))
    return false;
  if (w->pad != PAD_NOTSET && ir_attr(n, "pads")) {
    for (int i = 0; i < 2 * r; i++)
      if (pads[i] != 0)
        return infer_fail(d, n, "attribute 'pads' cannot be used with auto_pad '%s'", ap);
  }
  for (int i = 0; i < r; i++) {
    w->pb[i] = pads[i];
    w->pe[i] = pads[r + i];
  }
  int64_t cm = pool ? ir_attr_int(n, "ceil_mode", 0) : 0;
  if (cm != 0 && cm != 1)
    return infer_fail(d, n, "ceil_mode is %lld, expected 0 or 1", (long long)cm);
  w->ceil_mode = cm == 1;
  return true;
}

/* Output extent of spatial dim i for input extent `in` (DIM_UNKNOWN passes
 * through); false with an error when the input is smaller than the window. */
static bool window_out(const Node *n, Diag *d, const Window *w, int i, int64_t in,
                       int64_t *out) {
  if (in < 0 || w->k[i] < 0) {
    *out = DIM_UNKNOWN;
    return true;
  }
  int64_t dk = (w->k[i] - 1) * w->dil[i] + 1, s = w->s[i];
  if (w->pad == PAD_SAME_UPPER || w->pad == PAD_SAME_LOWER) {
    *out = (in + s - 1) / s;
    return true;
  }
  int64_t span = in + (w->pad == PAD_VALID ? 0 : w->pb[i] + w->pe[i]);
  if (span < dk)
    return infer_fail(d, n,
                      "spatial dim %d: padded input extent %lld is smaller than the "
                      "dilated kernel extent %lld",
                      i, (long long)span, (long long)dk);
  int64_t o = (span - dk) / s + 1;
  if (w->pad == PAD_NOTSET && w->ceil_mode && (span - dk) % s != 0) {
    o++;
    if ((o - 1) * s >= in + w->pb[i])  /* last window would start in the end padding */
      o--;
  }
  *out = o;
  return true;
}

/* The output extent of spatial dim i over a bounded input extent `in`
 * (-D ranges, docs/dynamic-shapes.md): floor((in + pads - dk) / s) + 1 as
 * floor((in + pads - dk + s) / s), a derived symbol unless s divides it. */
static bool window_out_bounded(Node *n, Diag *d, const Window *w, int i, const DimExpr *in,
                               Shape *out, int j) {
  Graph *g = n->g;
  while (g->parent)
    g = g->parent;
  int64_t dk = (w->k[i] - 1) * w->dil[i] + 1, s = w->s[i], lo, hi;
  Arena *a = n->g->arena;
  const DimExpr *num;
  if (w->k[i] < 0)
    return infer_fail(d, n, "spatial dim %d: the kernel extent is not known", i);
  if (w->pad == PAD_SAME_UPPER || w->pad == PAD_SAME_LOWER) {
    num = dx_add(a, in, dx_const(a, s - 1));
  } else {
    if (w->ceil_mode)
      return infer_fail(d, n, "ceil_mode over an extent known only at run time is not supported yet");
    int64_t pads = w->pad == PAD_VALID ? 0 : w->pb[i] + w->pe[i];
    const DimExpr *span = dx_add(a, in, dx_const(a, pads));
    if (!span || !dx_bounds(g, span, &lo, &hi) || lo < dk)
      return infer_fail(d, n, "spatial dim %d: at the low end of its range the padded input extent "
                        "is smaller than the dilated kernel extent %lld", i, (long long)dk);
    num = dx_add(a, span, dx_const(a, s - dk));
  }
  const DimExpr *o = dx_floordiv(g, num, s);
  if (!o)
    return infer_fail(d, n, "spatial dim %d: the output extent is not representable", i);
  shape_set_dx(g, out, j, o);
  return true;
}

/* Output shape [N, C_out, spatial...] of a windowed op over input x. */
static bool window_shape(const Node *n, Diag *d, const Window *w, const Shape *x,
                         int64_t c_out, const char *c_sym, Shape *out) {
  *out = *x;
  out->d[1] = c_out;
  out->sym[1] = c_out >= 0 ? NULL : c_sym;
  for (int i = 0; i < w->r; i++) {
    if (x->d[2 + i] < 0 && x->x[2 + i]) {
      if (!window_out_bounded((Node *)n, d, w, i, x->x[2 + i], out, 2 + i))
        return false;
      continue;
    }
    if (!window_out(n, d, w, i, x->d[2 + i], &out->d[2 + i]))
      return false;
    /* A symbolic extent survives only a window that maps it onto itself. */
    int64_t dk = (w->k[i] - 1) * w->dil[i] + 1;
    int64_t pads = w->pad == PAD_VALID ? 0 : w->pb[i] + w->pe[i];
    bool same = w->s[i] == 1 && (w->pad == PAD_SAME_UPPER || w->pad == PAD_SAME_LOWER ||
                                 pads + 1 == dk);
    if (out->d[2 + i] >= 0 || !same)
      out->sym[2 + i] = NULL, out->x[2 + i] = NULL;
  }
  return true;
}

bool infer_Conv(Node *n, Diag *d) {
  const Value *x = n->in[0], *wt = n->in[1];
  if (!is_conv_dtype(x->dt))
    return infer_fail(d, n, "input 0 has element type %s, expected f16, bf16, f32 or f64",
                      dtype_name(x->dt));
  if (wt->dt != x->dt)
    return infer_fail(d, n, "input 1 (weight) has element type %s, expected %s like input 0",
                      dtype_name(wt->dt), dtype_name(x->dt));
  int rank = x->shape.rank >= 0 ? x->shape.rank : wt->shape.rank;
  if (rank < 0) {
    infer_set(n, 0, x->dt, NULL);
    return true;
  }
  if (rank < 3)
    return infer_fail(d, n, "input 0 has rank %d, expected at least 3 (N, C, spatial...)",
                      rank);
  if (wt->shape.rank >= 0 && wt->shape.rank != rank)
    return infer_fail(d, n, "input 1 (weight) has rank %d, expected %d like input 0",
                      wt->shape.rank, rank);
  Shape xs = x->shape, ws = wt->shape;
  if (xs.rank < 0) {
    xs.rank = rank;
    for (int i = 0; i < rank; i++)
      xs.d[i] = DIM_UNKNOWN, xs.sym[i] = NULL, xs.x[i] = NULL;
  }
  if (ws.rank < 0) {
    ws.rank = rank;
    for (int i = 0; i < rank; i++)
      ws.d[i] = DIM_UNKNOWN, ws.sym[i] = NULL, ws.x[i] = NULL;
  }
  int64_t group = ir_attr_int(n, "group", 1);
  if (group < 1)
    return infer_fail(d, n, "group is %lld, expected >= 1", (long long)group);
  int64_t m = ws.d[0], cg = ws.d[1], c = xs.d[1];
  if (m >= 0 && m % group != 0)
    return infer_fail(d, n, "weight has %lld output channels, not a multiple of group %lld",
                      (long long)m, (long long)group);
  if (c >= 0 && cg >= 0 && c != cg * group)
    return infer_fail(d, n,
                      "input 0 has %lld channels but weight expects %lld (%lld per group x "
                      "group %lld)",
                      (long long)c, (long long)(cg * group), (long long)cg, (long long)group);
  if (ir_has_input(n, 2)) {
    const Value *b = n->in[2];
    if (b->dt != x->dt)
      return infer_fail(d, n, "input 2 (bias) has element type %s, expected %s",
                        dtype_name(b->dt), dtype_name(x->dt));
    if (b->shape.rank >= 0 && b->shape.rank != 1)
      return infer_fail(d, n, "input 2 (bias) has rank %d, expected 1", b->shape.rank);
    if (b->shape.rank == 1 && b->shape.d[0] >= 0 && m >= 0 && b->shape.d[0] != m)
      return infer_fail(d, n, "input 2 (bias) has %lld elements, expected %lld",
                        (long long)b->shape.d[0], (long long)m);
  }
  Window w;
  if (!read_window(n, d, rank - 2, &ws.d[2], false, &w))
    return false;
  Shape out;
  if (!window_shape(n, d, &w, &xs, m, ws.sym[0], &out))
    return false;
  infer_set(n, 0, x->dt, &out);
  return true;
}

/* Checks the element type and rank of a pooling op's input; false with an error. */
static bool pool_input(Node *n, Diag *d, bool allow_int8, int min_rank) {
  const Value *x = n->in[0];
  if (!is_conv_dtype(x->dt) && !(allow_int8 && (x->dt == DT_I8 || x->dt == DT_U8)))
    return infer_fail(d, n, "input 0 has element type %s, expected f16, bf16, f32, f64%s",
                      dtype_name(x->dt), allow_int8 ? ", i8 or u8" : "");
  if (x->shape.rank >= 0 && x->shape.rank < min_rank)
    return infer_fail(d, n, "input 0 has rank %d, expected at least %d (N, C, spatial...)",
                      x->shape.rank, min_rank);
  return true;
}

static bool infer_pool(Node *n, Diag *d, bool is_max) {
  if (!pool_input(n, d, is_max, 3))
    return false;
  const Value *x = n->in[0];
  if (x->shape.rank < 0) {
    infer_set(n, 0, x->dt, NULL);
    if (n->n_out > 1)   /* MaxPool's Indices output is optional */
      infer_set(n, 1, DT_I64, NULL);
    return true;
  }
  Window w;
  if (!read_window(n, d, x->shape.rank - 2, NULL, true, &w))
    return false;
  if (is_max) {
    int64_t so = ir_attr_int(n, "storage_order", 0);
    if (so != 0 && so != 1)
      return infer_fail(d, n, "storage_order is %lld, expected 0 or 1", (long long)so);
  } else {
    int64_t cip = ir_attr_int(n, "count_include_pad", 0);
    if (cip != 0 && cip != 1)
      return infer_fail(d, n, "count_include_pad is %lld, expected 0 or 1", (long long)cip);
  }
  Shape out;
  if (!window_shape(n, d, &w, &x->shape, x->shape.d[1], x->shape.sym[1], &out))
    return false;
  infer_set(n, 0, x->dt, &out);
  if (n->n_out > 1)
    infer_set(n, 1, DT_I64, &out);
  return true;
}

bool infer_MaxPool(Node *n, Diag *d) { return infer_pool(n, d, true); }

bool infer_AveragePool(Node *n, Diag *d) { return infer_pool(n, d, false); }

static bool infer_global_pool(Node *n, Diag *d) {
  if (!pool_input(n, d, false, 2))
    return false;
  Shape out = n->in[0]->shape;
  for (int i = 2; i < out.rank; i++) {
    out.d[i] = 1;
    out.sym[i] = NULL, out.x[i] = NULL;
  }
  infer_set(n, 0, n->in[0]->dt, &out);
  return true;
}

bool infer_GlobalAveragePool(Node *n, Diag *d) { return infer_global_pool(n, d); }

bool infer_GlobalMaxPool(Node *n, Diag *d) { return infer_global_pool(n, d); }

/* Output shape of a Conv-like node (QLinearConv, ConvInteger: infer_quant.c)
 * over data shape x (rank >= 3) with weight shape w of the same rank: the
 * window attributes of n, kernel extents from w unless kernel_shape is given. */
bool infer_conv_window_shape(const Node *n, Diag *d, const Shape *x, const Shape *w, Shape *out) {
  Window win;
  if (!read_window(n, d, x->rank - 2, &w->d[2], false, &win))
    return false;
  return window_shape(n, d, &win, x, w->d[0], w->sym[0], out);
}
