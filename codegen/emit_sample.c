/* emit_sample.c - C kernels of the resampling family (opsi): Resize,
 * Upsample, GridSample, AffineGrid, RoiAlign and DeformConv.
 *
 * Resize (and Upsample and opset-10 Resize: the same kernel with asymmetric
 * coordinates, nearest rounding down when an axis grows and up when it
 * shrinks, as ONNX Runtime does) is separable with every coordinate known
 * at compile time: for each resized axis the compiler evaluates the ONNX 1-D rule (coordinate
 * transformation, neighbour window, nearest / linear / cubic / antialiased
 * coefficients, exclude_outside, edge clamping) into a table of taps, each an
 * input offset and a weight, emitted as static const arrays. The kernel then
 * walks the output once and sums the tensor product of the taps; an axis
 * whose taps are single with weight 1 (nearest) is a plain gather, an axis
 * the resize leaves alone is a plain stride. tf_crop_and_resize positions
 * outside the input take extrapolation_value (one flag table per axis).
 * GridSample, AffineGrid, RoiAlign and DeformConv depend on run-time
 * coordinates and compute them in the loops, following onnx/reference/ops
 * (GridSample after PyTorch's grid_sampler: borders, reflection, rint for
 * nearest; RoiAlign after the ONNX Runtime kernel).
 */
#include "codegen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LL(x) ((long long)(x))
#define MAX_TAPS 64  /* taps of one output position along one axis (antialias) */

typedef struct Expr {
  char s[512];
} Expr;

static const char *ld(Expr *x, DType from, DType ct, const char *src) {
  return ec_ew_load_str(x->s, sizeof x->s, from, ct, src);
}

static const char *st(Expr *x, DType ct, DType to, const char *expr) {
  return ec_ew_store_str(x->s, sizeof x->s, ct, to, expr);
}

static bool is_empty(const Value *v) {
  int64_t k;
  return !shape_numel(&v->shape, &k) || k == 0;
}

/* ---- Resize: compile-time geometry -------------------------------------------------- */

typedef enum { RM_NEAREST, RM_LINEAR, RM_CUBIC } ResizeMode;

typedef struct ResizeGeom {
  int rank;
  int64_t in[IR_MAX_RANK], out[IR_MAX_RANK];
  double scale[IR_MAX_RANK], roi0[IR_MAX_RANK], roi1[IR_MAX_RANK];
  bool resized[IR_MAX_RANK];  /* axis named by `axes` (all when absent) */
  ResizeMode mode;
  const char *ctm, *nearest;
  double a, extrap;
  bool exclude, antialias;
  bool simple;  /* opset < 11 nearest: floor when upsampling, ceil when downsampling an axis */
} ResizeGeom;

static bool const_doubles(const Node *n, int slot, double *v, int *cnt) {
  if (!ir_has_input(n, slot) || n->in[slot]->kind != VK_CONST || n->in[slot]->konst->numel > 2 * IR_MAX_RANK)
    return false;
  const Tensor *t = n->in[slot]->konst;
  for (int64_t i = 0; i < t->numel; i++)
    v[i] = tensor_get_f64(t, i);
  *cnt = (int)t->numel;
  return true;
}

/* Fills g from the node (shapes static; scales / sizes / roi constant). */
static bool resize_geom(EmitC *e, const Node *n, ResizeGeom *g) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  bool old = n->op == OP_Upsample || n->g->opset < 11;
  int r = xs->rank, scales_slot = n->op == OP_Upsample ? (n->g->opset < 9 ? -1 : 1) : (old ? 1 : 2);
  int sizes_slot = old ? -1 : 3;
  memset(g, 0, sizeof *g);
  g->rank = r;
  const char *mode = ir_attr_str(n, "mode", "nearest");
  g->mode = strcmp(mode, "nearest") == 0 ? RM_NEAREST : strcmp(mode, "cubic") == 0 ? RM_CUBIC : RM_LINEAR;
  g->ctm = old ? "asymmetric" : ir_attr_str(n, "coordinate_transformation_mode", "half_pixel");
  g->nearest = old ? "floor" : ir_attr_str(n, "nearest_mode", "round_prefer_floor");
  g->simple = old;
  g->a = ir_attr_float(n, "cubic_coeff_a", -0.75f);
  g->extrap = ir_attr_float(n, "extrapolation_value", 0.0f);
  g->exclude = ir_attr_int(n, "exclude_outside", 0) != 0;
  g->antialias = ir_attr_int(n, "antialias", 0) != 0;
  int ax[IR_MAX_RANK], na = r, cnt = 0;
  const int64_t *axes = ir_attr_ints(n, "axes", &cnt);
  if (axes) {
    na = cnt;
    for (int i = 0; i < cnt; i++)
      ax[i] = (int)(axes[i] < 0 ? axes[i] + r : axes[i]);
  } else {
    for (int i = 0; i < r; i++)
      ax[i] = i;
  }
  for (int i = 0; i < r; i++) {
    g->in[i] = xs->d[i];
    g->out[i] = ys->d[i];
    g->scale[i] = 1.0;
    g->roi0[i] = 0.0;
    g->roi1[i] = 1.0;
  }
  for (int i = 0; i < na; i++)
    g->resized[ax[i]] = true;
  double v[2 * IR_MAX_RANK];
  bool have_scales = false;
  if (scales_slot < 0) {
    const Attr *at = ir_attr(n, "scales");
    for (int i = 0; at && i < at->n && i < r; i++)
      g->scale[i] = at->u.fs[i];
    have_scales = true;
  } else if (const_doubles(n, scales_slot, v, &cnt) && cnt > 0) {
    for (int i = 0; i < na && i < cnt; i++)
      g->scale[ax[i]] = v[i];
    have_scales = true;
  } else if (ir_has_input(n, scales_slot) && n->in[scales_slot]->kind != VK_CONST &&
             !(n->in[scales_slot]->shape.rank == 1 && n->in[scales_slot]->shape.d[0] == 0)) {
    return diag_error(e->d, n, "scales must be a constant for the C target");
  }
  if (!have_scales) {
    if (sizes_slot < 0 || !const_doubles(n, sizes_slot, v, &cnt) || cnt != na)
      return diag_error(e->d, n, "sizes must be a constant for the C target");
    const char *pol = ir_attr_str(n, "keep_aspect_ratio_policy", "stretch");
    if (strcmp(pol, "stretch") == 0) {
      for (int i = 0; i < na; i++)
        g->scale[ax[i]] = g->in[ax[i]] ? v[i] / (double)g->in[ax[i]] : 1.0;
    } else {
      bool larger = strcmp(pol, "not_larger") == 0;
      double s = larger ? INFINITY : -INFINITY;
      for (int i = 0; i < na; i++)
        if (g->in[ax[i]] > 0) {
          double q = v[i] / (double)g->in[ax[i]];
          s = larger ? fmin(s, q) : fmax(s, q);
        }
      for (int i = 0; i < na; i++)
        g->scale[ax[i]] = s;
    }
  }
  if (strcmp(g->ctm, "tf_crop_and_resize") == 0) {
    if (!const_doubles(n, 1, v, &cnt) || cnt != 2 * na)
      return diag_error(e->d, n, "roi must be a constant of %d values for tf_crop_and_resize", 2 * na);
    for (int i = 0; i < na; i++) {
      g->roi0[ax[i]] = v[i];
      g->roi1[ax[i]] = v[na + i];
    }
  }
  return true;
}

/* One axis's table: K taps per output position. */
typedef struct Taps {
  int64_t out;
  int k;
  int64_t *idx;       /* out * k input indices (clamped) */
  double *w;          /* out * k weights */
  unsigned char *ext; /* out flags: position takes extrapolation_value */
  bool any_ext, unit; /* unit: one tap of weight 1 everywhere (a gather) */
} Taps;

static double cubic_w(double x, double a) {
  x = fabs(x);
  if (x <= 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2)
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/* Coefficients for fractional position `ratio` in (0, 1]; returns the count. */
static int coeffs(const ResizeGeom *g, double ratio, double scale, double *c) {
  if (g->mode == RM_NEAREST) {
    bool hi;
    if (ratio == floor(ratio))
      hi = true;
    else if (g->simple)
      hi = scale < 1;
    else if (strcmp(g->nearest, "round_prefer_ceil") == 0)
      hi = ratio >= 0.5;
    else if (strcmp(g->nearest, "floor") == 0)
      hi = false;
    else if (strcmp(g->nearest, "ceil") == 0)
      hi = true;
    else
      hi = ratio > 0.5;
    c[0] = hi ? 0 : 1;
    c[1] = hi ? 1 : 0;
    return 2;
  }
  if (!g->antialias) {
    if (g->mode == RM_LINEAR) {
      c[0] = 1 - ratio;
      c[1] = ratio;
      return 2;
    }
    double a = g->a;
    c[0] = ((a * (ratio + 1) - 5 * a) * (ratio + 1) + 8 * a) * (ratio + 1) - 4 * a;
    c[1] = ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1;
    c[2] = ((a + 2) * (1 - ratio) - (a + 3)) * (1 - ratio) * (1 - ratio) + 1;
    c[3] = ((a * ((1 - ratio) + 1) - 5 * a) * ((1 - ratio) + 1) + 8 * a) * ((1 - ratio) + 1) - 4 * a;
    return 4;
  }
  double s = fmin(scale, 1.0), sum = 0;
  int start, cnt;
  if (g->mode == RM_LINEAR) {
    start = (int)(floor(-1 / s) + 1);
    cnt = 2 - 2 * start;
  } else {
    start = (int)(floor(-2 / s) + 1);
    cnt = 2 - 2 * start;
  }
  if (cnt > MAX_TAPS)
    return -1;
  for (int i = 0; i < cnt; i++) {
    double x = ((double)(start + i) - ratio) * s;
    c[i] = g->mode == RM_LINEAR ? fmax(0.0, fmin(1.0, 1 - fabs(x))) : cubic_w(x, g->a);
    sum += c[i];
  }
  for (int i = 0; i < cnt; i++)
    c[i] /= sum;
  return cnt;
}

/* Source coordinate of output position y along axis i; *ext when outside. */
static double src_coord(const ResizeGeom *g, int i, double y, bool *ext) {
  double in = (double)g->in[i], s = g->scale[i], ow = s * in, owi = (double)g->out[i];
  const char *m = g->ctm;
  *ext = false;
  if (strcmp(m, "align_corners") == 0)
    return ow == 1 ? 0.0 : y * (in - 1) / (ow - 1);
  if (strcmp(m, "asymmetric") == 0)
    return y / s;
  if (strcmp(m, "tf_crop_and_resize") == 0) {
    double r0 = g->roi0[i], r1 = g->roi1[i];
    double x = ow == 1 ? (r1 - r0) * (in - 1) / 2 : y * (r1 - r0) * (in - 1) / (ow - 1);
    x += r0 * (in - 1);
    *ext = x < 0 || x > in - 1;
    return x;
  }
  if (strcmp(m, "pytorch_half_pixel") == 0)
    return ow == 1 ? -0.5 : (y + 0.5) / s - 0.5;
  if (strcmp(m, "half_pixel_symmetric") == 0) {
    double adj = owi / ow, off = in / 2 * (1 - adj);
    return off + (y + 0.5) / s - 0.5;
  }
  if (strcmp(m, "tf_half_pixel_for_nn") == 0)
    return (y + 0.5) / s;
  return (y + 0.5) / s - 0.5;  /* half_pixel */
}

/* Builds axis i's taps (arrays allocated from the graph arena). */
static bool build_taps(EmitC *e, const Node *n, const ResizeGeom *g, int i, Taps *t) {
  Arena *ar = e->g->arena;
  int64_t out = g->out[i], in = g->in[i];
  double c[MAX_TAPS];
  int kmax = 1;
  /* First pass: the widest merged row. */
  int64_t *ri = arena_alloc(ar, sizeof(int64_t) * (size_t)(out * MAX_TAPS + 1));
  double *rw = arena_alloc(ar, sizeof(double) * (size_t)(out * MAX_TAPS + 1));
  int *rk = arena_alloc(ar, sizeof(int) * (size_t)(out + 1));
  t->ext = arena_alloc(ar, (size_t)out + 1);
  t->any_ext = false;
  for (int64_t o = 0; o < out; o++) {
    bool ext;
    double x = src_coord(g, i, (double)o, &ext);
    t->ext[o] = ext;
    t->any_ext |= ext;
    double fl = floor(x), ratio = x == fl ? 1.0 : x - fl;
    int cnt = coeffs(g, ratio, g->scale[i], c);
    if (cnt < 0)
      return diag_error(e->d, n, "antialias window of axis %d exceeds %d taps", i, MAX_TAPS);
    int pad = (cnt + 1) / 2;
    double xp = x + pad, pp = floor(xp), frac = xp - pp;
    int64_t off;
    if (cnt % 2 == 0)
      off = frac == 0 ? -(cnt / 2) : -(cnt / 2) + 1;
    else
      off = frac <= 0.5 ? -((cnt - 1) / 2) : -((cnt - 1) / 2) + 1;
    int64_t start = (int64_t)pp + off - pad;
    if (g->exclude) {
      double sum = 0;
      for (int j = 0; j < cnt; j++) {
        if (start + j < 0 || start + j >= in)
          c[j] = 0;
        sum += c[j];
      }
      if (sum == 0)
        sum = 1;
      for (int j = 0; j < cnt; j++)
        c[j] /= sum;
    }
    /* Merge taps that clamp to the same index; drop zero weights. */
    int k = 0;
    for (int j = 0; j < cnt; j++) {
      int64_t q = start + j;
      q = q < 0 ? 0 : q >= in ? in - 1 : q;
      if (c[j] == 0)
        continue;
      int m = 0;
      while (m < k && ri[o * MAX_TAPS + m] != q)
        m++;
      if (m == k) {
        ri[o * MAX_TAPS + k] = q;
        rw[o * MAX_TAPS + k] = 0;
        k++;
      }
      rw[o * MAX_TAPS + m] += c[j];
    }
    if (k == 0) {  /* every weight zero: one tap of weight 0 */
      ri[o * MAX_TAPS] = 0;
      rw[o * MAX_TAPS] = 0;
      k = 1;
    }
    rk[o] = k;
    if (k > kmax)
      kmax = k;
  }
  t->out = out;
  t->k = kmax;
  t->idx = arena_alloc(ar, sizeof(int64_t) * (size_t)(out * kmax + 1));
  t->w = arena_alloc(ar, sizeof(double) * (size_t)(out * kmax + 1));
  t->unit = true;
  for (int64_t o = 0; o < out; o++)
    for (int j = 0; j < kmax; j++) {
      bool real = j < rk[o];
      t->idx[o * kmax + j] = real ? ri[o * MAX_TAPS + j] : ri[o * MAX_TAPS];
      t->w[o * kmax + j] = real ? rw[o * MAX_TAPS + j] : 0;
      if (!real || t->w[o * kmax + j] != 1.0)
        t->unit = false;
    }
  return true;
}

/* The axis is the identity: taps 0..out-1 with weight 1 and nothing outside. */
static bool taps_identity(const Taps *t, int64_t in) {
  if (t->out != in || !t->unit || t->any_ext)
    return false;
  for (int64_t o = 0; o < t->out; o++)
    if (t->idx[o] != o)
      return false;
  return true;
}

static void emit_table_i(EmitC *e, const char *name, const int64_t *v, int64_t count, int64_t mul) {
  ec_line(e, "static const ptrdiff_t %s[%lld] = {", name, LL(count));
  Buf line;
  buf_init(&line);
  for (int64_t i = 0; i < count; i++) {
    buf_printf(&line, "%lld,", LL(v[i] * mul));
    if (i % 16 == 15 || i == count - 1) {
      ec_line(e, "%s", line.s);
      line.len = 0;
      line.s[0] = 0;
    }
  }
  buf_free(&line);
  ec_line(e, "};");
}

static void emit_table_w(EmitC *e, const char *name, DType ct, const double *v, int64_t count) {
  ec_line(e, "static const %s %s[%lld] = {", dtype_ctype(ct), name, LL(count));
  Buf line;
  buf_init(&line);
  char tmp[64];
  for (int64_t i = 0; i < count; i++) {
    buf_printf(&line, "%s,", ec_literal(ct, v[i], tmp, sizeof tmp));
    if (i % 8 == 7 || i == count - 1) {
      ec_line(e, "%s", line.s);
      line.len = 0;
      line.s[0] = 0;
    }
  }
  buf_free(&line);
  ec_line(e, "};");
}

static void emit_table_b(EmitC *e, const char *name, const unsigned char *v, int64_t count) {
  ec_line(e, "static const unsigned char %s[%lld] = {", name, LL(count));
  Buf line;
  buf_init(&line);
  for (int64_t i = 0; i < count; i++) {
    buf_printf(&line, "%d,", v[i]);
    if (i % 32 == 31 || i == count - 1) {
      ec_line(e, "%s", line.s);
      line.len = 0;
      line.s[0] = 0;
    }
  }
  buf_free(&line);
  ec_line(e, "};");
}

static bool emit_resize(EmitC *e, const Node *n) {
  if (is_empty(n->out[0])) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  ResizeGeom g;
  if (!resize_geom(e, n, &g))
    return false;
  int r = g.rank;
  DType dt = n->in[0]->dt, ct = ec_float_ct(dt);
  bool num = dtype_is_float(dt) || dtype_is_int(dt);
  int64_t xst[IR_MAX_RANK];
  ec_strides(&n->in[0]->shape, xst);
  Taps t[IR_MAX_RANK];
  bool active[IR_MAX_RANK], any_ext = false, weighted = false;
  for (int i = 0; i < r; i++) {
    active[i] = false;
    if (!build_taps(e, n, &g, i, &t[i]))
      return false;
    if (taps_identity(&t[i], g.in[i]))
      continue;
    active[i] = true;
    any_ext |= t[i].any_ext;
    weighted |= !t[i].unit;
  }
  if (weighted && !num)
    return diag_error(e->d, n, "element type %s cannot be interpolated", dtype_name(dt));
  char nm[32];
  for (int i = 0; i < r; i++) {
    if (!active[i])
      continue;
    snprintf(nm, sizeof nm, "I%d", i);
    emit_table_i(e, nm, t[i].idx, t[i].out * t[i].k, xst[i]);
    if (!t[i].unit) {
      snprintf(nm, sizeof nm, "W%d", i);
      emit_table_w(e, nm, ct, t[i].w, t[i].out * t[i].k);
    }
    if (t[i].any_ext) {
      snprintf(nm, sizeof nm, "E%d", i);
      emit_table_b(e, nm, t[i].ext, t[i].out);
    }
  }
  ec_line(e, "ptrdiff_t y = 0;");
  for (int i = 0; i < r; i++)
    ec_line(e, "for (ptrdiff_t o%d = 0; o%d < %lld; o%d++) {", i, i, LL(g.out[i]), i);
  /* Offset from the axes the resize leaves alone and the gather axes. */
  Buf base;
  buf_init(&base);
  buf_puts(&base, "0");
  for (int i = 0; i < r; i++) {
    if (!active[i])
      buf_printf(&base, " + o%d * %lld", i, LL(xst[i]));
    else if (t[i].unit)
      buf_printf(&base, " + I%d[o%d]", i, i);
  }
  Expr a, b;
  if (any_ext) {
    Buf cond;
    buf_init(&cond);
    for (int i = 0; i < r; i++)
      if (active[i] && t[i].any_ext)
        buf_printf(&cond, "%sE%d[o%d]", cond.len ? " | " : "", i, i);
    char lit[64];
    ec_literal(ct, g.extrap, lit, sizeof lit);
    ec_line(e, "if (%s) {", cond.s);
    ec_line(e, "Y0[y++] = %s;", st(&a, ct, dt, lit));
    ec_line(e, "continue;");
    ec_line(e, "}");
    buf_free(&cond);
  }
  ec_line(e, "const ptrdiff_t p = %s;", base.s);
  buf_free(&base);
  if (!weighted) {
    ec_line(e, "Y0[y++] = X0[p];");
  } else {
    const char *T = dtype_ctype(ct);
    ec_line(e, "%s acc = 0;", T);
    const char *prev_p = "p", *prev_w = NULL;
    char pv[IR_MAX_RANK][16], wv[IR_MAX_RANK][16];
    int opened = 0;
    for (int i = 0; i < r; i++) {
      if (!active[i] || t[i].unit)
        continue;
      snprintf(pv[i], sizeof pv[i], "p%d", i);
      snprintf(wv[i], sizeof wv[i], "w%d", i);
      ec_line(e, "for (int k%d = 0; k%d < %d; k%d++) {", i, i, t[i].k, i);
      ec_line(e, "const ptrdiff_t p%d = %s + I%d[o%d * %d + k%d];", i, prev_p, i, i, t[i].k, i);
      if (prev_w)
        ec_line(e, "const %s w%d = %s * W%d[o%d * %d + k%d];", T, i, prev_w, i, i, t[i].k, i);
      else
        ec_line(e, "const %s w%d = W%d[o%d * %d + k%d];", T, i, i, i, t[i].k, i);
      prev_p = pv[i];
      prev_w = wv[i];
      opened++;
    }
    char src[64];
    snprintf(src, sizeof src, "X0[%s]", prev_p);
    ec_line(e, "acc += %s * %s;", prev_w, ld(&b, dt, ct, src));
    for (int i = 0; i < opened; i++)
      ec_line(e, "}");
    if (dtype_is_int(dt)) {
      /* Round to nearest and saturate, as the reference's saturate_cast. */
      char lo[64], hi[64], lo_t[64], hi_t[64];
      int bits = dtype_bits(dt);
      double mn = dtype_is_signed(dt) ? -ldexp(1.0, bits - 1) : 0;
      double mx = dtype_is_signed(dt) ? ldexp(1.0, bits - 1) - 1 : ldexp(1.0, bits) - 1;
      ec_literal(ct, mn, lo, sizeof lo);
      ec_literal(ct, mx, hi, sizeof hi);
      ec_literal(dt, mn, lo_t, sizeof lo_t);
      ec_literal(dt, mx, hi_t, sizeof hi_t);
      const char *ty = dtype_ctype(dt);
      ec_line(e, "acc = rint%s(acc);", ec_fsuf(ct));
      ec_line(e, "Y0[y++] = acc <= %s ? (%s)%s : acc >= %s ? (%s)%s : (%s)acc;", lo, ty, lo_t, hi, ty,
              hi_t, ty);
    } else {
      ec_line(e, "Y0[y++] = %s;", st(&a, ct, dt, "acc"));
    }
  }
  for (int i = 0; i < r; i++)
    ec_line(e, "}");
  return true;
}

bool emitc_Resize(EmitC *e, const Node *n) { return emit_resize(e, n); }
bool emitc_Upsample(EmitC *e, const Node *n) { return emit_resize(e, n); }

/* ---- GridSample ------------------------------------------------------------------- */

/* Reflects ct variable v into [lo, hi] by the nearer border, repeatedly
 * (PyTorch's reflect_coordinates for float borders). */
static void emit_reflect(EmitC *e, DType ct, const char *v, const char *lo, const char *hi) {
  const char *T = dtype_ctype(ct);
  ec_line(e, "if (%s < %s || %s > %s) {", v, lo, v, hi);
  ec_line(e, "const %s rng = %s - %s;", T, hi, lo);
  ec_line(e, "if (rng <= 0) {");
  ec_line(e, "%s = %s;", v, lo);
  ec_line(e, "} else {");
  ec_line(e, "const %s dx = %s < %s ? %s - %s : %s - %s;", T, v, lo, lo, v, v, hi);
  ec_line(e, "const ptrdiff_t k = (ptrdiff_t)(dx / rng);");
  ec_line(e, "const %s rr = dx - (%s)k * rng;", T, T);
  ec_line(e, "%s = (%s < %s) == (k %% 2 == 0) ? %s + rr : %s - rr;", v, v, lo, lo, hi);
  ec_line(e, "}");
  ec_line(e, "}");
}

bool emitc_GridSample(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  if (is_empty(n->out[0])) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  DType dt = n->in[0]->dt, gt = n->in[1]->dt, ct = ec_float_ct(dt);
  const char *T = dtype_ctype(ct), *f = ec_fsuf(ct);
  int nd = xs->rank - 2;
  const char *mode = ir_attr_str(n, "mode", n->g->opset >= 20 ? "linear" : "bilinear");
  const char *pad = ir_attr_str(n, "padding_mode", "zeros");
  bool align = ir_attr_int(n, "align_corners", 0) != 0;
  int kind = strcmp(mode, "nearest") == 0 ? 0 : (strcmp(mode, "bicubic") == 0 || strcmp(mode, "cubic") == 0) ? 2 : 1;
  int K = kind == 0 ? 1 : kind == 1 ? 2 : 4;
  int64_t N = xs->d[0], C = xs->d[1], S = 1, P = 1, xst[IR_MAX_RANK];
  ec_strides(xs, xst);
  for (int i = 0; i < nd; i++) {
    S *= xs->d[2 + i];
    P *= ys->d[2 + i];
  }
  Expr a;
  char lo[64], hi[64], big[64];
  ec_literal(ct, 1048576.0, big, sizeof big);
  ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", LL(N));
  ec_line(e, "for (ptrdiff_t q = 0; q < %lld; q++) {", LL(P));
  for (int i = 0; i < nd; i++) {
    int64_t D = xs->d[2 + i];
    ec_literal(ct, align ? 0.0 : -0.5, lo, sizeof lo);
    ec_literal(ct, align ? (double)D - 1 : (double)D - 0.5, hi, sizeof hi);
    char src[96];
    snprintf(src, sizeof src, "X1[(b * %lld + q) * %d + %d]", LL(P), nd, nd - 1 - i);
    ec_line(e, "ptrdiff_t off%d[%d];", i, K);
    ec_line(e, "%s w%d[%d];", T, i, K);
    ec_line(e, "{");
    ec_line(e, "%s x = %s;", T, ld(&a, gt, ct, src));
    if (align)
      ec_line(e, "x = (x + 1) / 2 * (%s)%lld;", T, LL(D - 1));
    else
      ec_line(e, "x = ((x + 1) * (%s)%lld - 1) / 2;", T, LL(D));
    ec_line(e, "if (!(x >= -%s)) x = -%s;", big, big);
    ec_line(e, "if (x > %s) x = %s;", big, big);
    if (kind == 0)
      ec_line(e, "x = rint%s(x);", f);
    if (strcmp(pad, "border") == 0)
      ec_line(e, "if (x < %s || x > %s) x = x < 0 ? 0 : x > (%s)%lld ? (%s)%lld : x;", lo, hi, T,
              LL(D - 1), T, LL(D - 1));
    else if (strcmp(pad, "reflection") == 0)
      emit_reflect(e, ct, "x", lo, hi);
    if (kind == 0) {
      ec_line(e, "const ptrdiff_t i0 = (ptrdiff_t)x;");
      ec_line(e, "w%d[0] = 1;", i);
    } else {
      ec_line(e, "const %s fl = floor%s(x), t = x - fl;", T, f);
      ec_line(e, "const ptrdiff_t i0 = (ptrdiff_t)fl;");
      if (kind == 1) {
        ec_line(e, "w%d[0] = 1 - t;", i);
        ec_line(e, "w%d[1] = t;", i);
      } else {
        const char *A = ct == DT_F64 ? "-0.75" : "-0.75f";
        ec_line(e, "const %s A = %s, u = 1 - t;", T, A);
        ec_line(e, "w%d[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;", i);
        ec_line(e, "w%d[1] = ((A + 2) * t - (A + 3)) * t * t + 1;", i);
        ec_line(e, "w%d[2] = ((A + 2) * u - (A + 3)) * u * u + 1;", i);
        ec_line(e, "w%d[3] = ((A * (u + 1) - 5 * A) * (u + 1) + 8 * A) * (u + 1) - 4 * A;", i);
      }
    }
    ec_line(e, "for (int j = 0; j < %d; j++) {", K);
    ec_line(e, "ptrdiff_t qi = i0 + j%s;", kind == 2 ? " - 1" : "");
    if (strcmp(pad, "zeros") == 0) {
      ec_line(e, "if (qi < 0 || qi >= %lld) {", LL(D));
      ec_line(e, "qi = 0;");
      ec_line(e, "w%d[j] = 0;", i);
      ec_line(e, "}");
    } else if (strcmp(pad, "border") == 0) {
      ec_line(e, "qi = qi < 0 ? 0 : qi >= %lld ? %lld : qi;", LL(D), LL(D - 1));
    } else {
      ec_line(e, "%s v = (%s)qi;", T, T);
      emit_reflect(e, ct, "v", lo, hi);
      ec_line(e, "qi = (ptrdiff_t)v;");
      ec_line(e, "qi = qi < 0 ? 0 : qi >= %lld ? %lld : qi;", LL(D), LL(D - 1));
    }
    ec_line(e, "off%d[j] = qi * %lld;", i, LL(xst[2 + i]));
    ec_line(e, "}");
    ec_line(e, "}");
  }
  ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) {", LL(C));
  ec_line(e, "const ptrdiff_t xc = (b * %lld + c) * %lld;", LL(C), LL(S));
  ec_line(e, "%s acc = 0;", T);
  Buf idx, w;
  buf_init(&idx);
  buf_init(&w);
  buf_puts(&idx, "xc");
  for (int i = 0; i < nd; i++) {
    ec_line(e, "for (int j%d = 0; j%d < %d; j%d++) {", i, i, K, i);
    buf_printf(&idx, " + off%d[j%d]", i, i);
    buf_printf(&w, "%sw%d[j%d]", i ? " * " : "", i, i);
  }
  char src[256];
  snprintf(src, sizeof src, "X0[%s]", idx.s);
  Expr b2;
  ec_line(e, "acc += %s * %s;", w.s, ld(&b2, dt, ct, src));
  for (int i = 0; i < nd; i++)
    ec_line(e, "}");
  buf_free(&idx);
  buf_free(&w);
  ec_line(e, "Y0[(b * %lld + c) * %lld + q] = %s;", LL(C), LL(P), st(&a, ct, dt, "acc"));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- AffineGrid ------------------------------------------------------------------- */

bool emitc_AffineGrid(EmitC *e, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  if (is_empty(n->out[0])) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  DType dt = n->in[0]->dt;
  int nd = ys->rank - 2;
  bool align = ir_attr_int(n, "align_corners", 0) != 0;
  Expr a;
  ec_line(e, "ptrdiff_t y = 0;");
  ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", LL(ys->d[0]));
  for (int i = 0; i < nd; i++) {
    int64_t S = ys->d[1 + i];
    ec_line(e, "for (ptrdiff_t s%d = 0; s%d < %lld; s%d++) {", i, i, LL(S), i);
    /* base coordinate of spatial dim i; component nd-1-i of the homogeneous point */
    if (align)
      ec_line(e, "const double c%d = %s;", nd - 1 - i,
              S == 1 ? "-1.0" : arena_printf(e->g->arena, "-1.0 + 2.0 * (double)s%d / %lld.0", i, LL(S - 1)));
    else
      ec_line(e, "const double c%d = -1.0 + (2.0 * (double)s%d + 1.0) / %lld.0;", nd - 1 - i, i, LL(S));
  }
  for (int k = 0; k < nd; k++) {
    Buf sum;
    buf_init(&sum);
    char src[96];
    snprintf(src, sizeof src, "X0[b * %d + %d]", nd * (nd + 1), k * (nd + 1) + nd);
    buf_puts(&sum, ld(&a, dt, DT_F64, src));
    for (int j = 0; j < nd; j++) {
      snprintf(src, sizeof src, "X0[b * %d + %d]", nd * (nd + 1), k * (nd + 1) + j);
      buf_printf(&sum, " + %s * c%d", ld(&a, dt, DT_F64, src), j);
    }
    ec_line(e, "Y0[y++] = %s;", st(&a, DT_F64, dt, sum.s));
    buf_free(&sum);
  }
  for (int i = 0; i < nd; i++)
    ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- RoiAlign --------------------------------------------------------------------- */

/* Emits the bilinear weights of RoiAlign's sample (yy, xx) into pos1..4 /
 * w1..4 (ONNX Runtime's pre-calculation), zero weights outside [-1, H] x [-1, W]. */
static void emit_roi_sample(EmitC *e, int64_t H, int64_t W) {
  ec_line(e, "double y = yy, x = xx, w1 = 0, w2 = 0, w3 = 0, w4 = 0;");
  ec_line(e, "ptrdiff_t pos1 = 0, pos2 = 0, pos3 = 0, pos4 = 0;");
  ec_line(e, "if (!(y < -1.0 || y > %lld.0 || x < -1.0 || x > %lld.0)) {", LL(H), LL(W));
  ec_line(e, "if (y < 0) y = 0;");
  ec_line(e, "if (x < 0) x = 0;");
  ec_line(e, "ptrdiff_t yl = (ptrdiff_t)y, xl = (ptrdiff_t)x, yh, xh;");
  ec_line(e, "if (yl >= %lld) {", LL(H - 1));
  ec_line(e, "yh = yl = %lld;", LL(H - 1));
  ec_line(e, "y = (double)yl;");
  ec_line(e, "} else {");
  ec_line(e, "yh = yl + 1;");
  ec_line(e, "}");
  ec_line(e, "if (xl >= %lld) {", LL(W - 1));
  ec_line(e, "xh = xl = %lld;", LL(W - 1));
  ec_line(e, "x = (double)xl;");
  ec_line(e, "} else {");
  ec_line(e, "xh = xl + 1;");
  ec_line(e, "}");
  ec_line(e, "const double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;");
  ec_line(e, "w1 = hy * hx;");
  ec_line(e, "w2 = hy * lx;");
  ec_line(e, "w3 = ly * hx;");
  ec_line(e, "w4 = ly * lx;");
  ec_line(e, "pos1 = yl * %lld + xl;", LL(W));
  ec_line(e, "pos2 = yl * %lld + xh;", LL(W));
  ec_line(e, "pos3 = yh * %lld + xl;", LL(W));
  ec_line(e, "pos4 = yh * %lld + xh;", LL(W));
  ec_line(e, "}");
}

bool emitc_RoiAlign(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  if (is_empty(n->out[0])) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  DType dt = n->in[0]->dt;
  int64_t N = xs->d[0], C = xs->d[1], H = xs->d[2], W = xs->d[3];
  int64_t R = ys->d[0], OH = ys->d[2], OW = ys->d[3];
  int64_t sr = ir_attr_int(n, "sampling_ratio", 0);
  bool maxm = strcmp(ir_attr_str(n, "mode", "avg"), "max") == 0;
  bool half = n->g->opset >= 16 &&
              strcmp(ir_attr_str(n, "coordinate_transformation_mode", "half_pixel"), "half_pixel") == 0;
  char ss[64];
  ec_literal(DT_F64, (double)ir_attr_float(n, "spatial_scale", 1.0f), ss, sizeof ss);
  Expr a;
  char src[64];
  ec_line(e, "for (ptrdiff_t r = 0; r < %lld; r++) {", LL(R));
  ec_line(e, "const long long bi = (long long)X2[r];");
  ec_line(e, "if (bi < 0 || bi >= %lld) return ONNXC_ERR_BAD_INDEX;", LL(N));
  static const char *const nm[4] = {"sw", "sh", "ew", "eh"};
  for (int k = 0; k < 4; k++) {
    snprintf(src, sizeof src, "X1[r * 4 + %d]", k);
    ec_line(e, "const double %s = %s * %s - %s;", nm[k], ld(&a, dt, DT_F64, src), ss, half ? "0.5" : "0.0");
  }
  ec_line(e, "double rw = ew - sw, rh = eh - sh;");
  if (!half) {
    ec_line(e, "if (rw < 1) rw = 1;");
    ec_line(e, "if (rh < 1) rh = 1;");
  }
  ec_line(e, "const double bh = rh / %lld.0, bw = rw / %lld.0;", LL(OH), LL(OW));
  if (sr > 0) {
    ec_line(e, "const ptrdiff_t gh = %lld, gw = %lld;", LL(sr), LL(sr));
  } else {
    /* ceil(rh / OH), kept in a sane range before the conversion */
    ec_line(e, "double fgh = ceil(bh), fgw = ceil(bw);");
    ec_line(e, "if (!(fgh > 0)) fgh = 0;");
    ec_line(e, "if (!(fgw > 0)) fgw = 0;");
    ec_line(e, "if (fgh > 65536) fgh = 65536;");
    ec_line(e, "if (fgw > 65536) fgw = 65536;");
    ec_line(e, "const ptrdiff_t gh = (ptrdiff_t)fgh, gw = (ptrdiff_t)fgw;");
  }
  if (!maxm)
    ec_line(e, "const double cnt = gh * gw > 1 ? (double)(gh * gw) : 1.0;");
  ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) {", LL(C));
  ec_line(e, "const ptrdiff_t xc = ((ptrdiff_t)bi * %lld + c) * %lld;", LL(C), LL(H * W));
  ec_line(e, "for (ptrdiff_t ph = 0; ph < %lld; ph++) {", LL(OH));
  ec_line(e, "for (ptrdiff_t pw = 0; pw < %lld; pw++) {", LL(OW));
  ec_line(e, "double acc = 0;");
  if (maxm)
    ec_line(e, "int first = 1;");
  ec_line(e, "for (ptrdiff_t iy = 0; iy < gh; iy++) {");
  ec_line(e, "const double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;");
  ec_line(e, "for (ptrdiff_t ix = 0; ix < gw; ix++) {");
  ec_line(e, "const double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;");
  emit_roi_sample(e, H, W);
  Expr v1, v2, v3, v4;
  ld(&v1, dt, DT_F64, "X0[xc + pos1]");
  ld(&v2, dt, DT_F64, "X0[xc + pos2]");
  ld(&v3, dt, DT_F64, "X0[xc + pos3]");
  ld(&v4, dt, DT_F64, "X0[xc + pos4]");
  if (!maxm) {
    ec_line(e, "acc += w1 * %s + w2 * %s + w3 * %s + w4 * %s;", v1.s, v2.s, v3.s, v4.s);
  } else {
    ec_line(e, "double v = w1 * %s, t;", v1.s);
    ec_line(e, "t = w2 * %s;", v2.s);
    ec_line(e, "if (t > v) v = t;");
    ec_line(e, "t = w3 * %s;", v3.s);
    ec_line(e, "if (t > v) v = t;");
    ec_line(e, "t = w4 * %s;", v4.s);
    ec_line(e, "if (t > v) v = t;");
    ec_line(e, "if (first || v > acc) acc = v;");
    ec_line(e, "first = 0;");
  }
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "Y0[((r * %lld + c) * %lld + ph) * %lld + pw] = %s;", LL(C), LL(OH), LL(OW),
          st(&a, DT_F64, dt, maxm ? "acc" : "acc / cnt"));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- DeformConv ------------------------------------------------------------------- */

bool emitc_DeformConv(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ws = &n->in[1]->shape, *ys = &n->out[0]->shape;
  if (is_empty(n->out[0]) || is_empty(n->in[0])) {
    ec_line(e, "(void)Y0;");
    if (!is_empty(n->out[0]))
      return diag_error(e->d, n, "empty input with a non-empty output");
    return true;
  }
  DType dt = n->in[0]->dt;
  int64_t N = xs->d[0], C = xs->d[1], H = xs->d[2], W = xs->d[3];
  int64_t OC = ws->d[0], CG = ws->d[1], KH = ws->d[2], KW = ws->d[3], OH = ys->d[2], OW = ys->d[3];
  int64_t group = ir_attr_int(n, "group", 1), og = ir_attr_int(n, "offset_group", 1);
  int64_t str[2] = {1, 1}, dl[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
  int cnt;
  const int64_t *v;
  if ((v = ir_attr_ints(n, "strides", &cnt)) && cnt == 2)
    str[0] = v[0], str[1] = v[1];
  if ((v = ir_attr_ints(n, "dilations", &cnt)) && cnt == 2)
    dl[0] = v[0], dl[1] = v[1];
  if ((v = ir_attr_ints(n, "pads", &cnt)) && cnt == 4)
    pads[0] = v[0], pads[1] = v[1];
  int64_t OCG = OC / group, CPO = C / og, KK = KH * KW, OS = OH * OW;
  bool bias = ir_has_input(n, 3), mask = ir_has_input(n, 4);
  Expr a;
  char src[160];
  ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", LL(N));
  ec_line(e, "for (ptrdiff_t oc = 0; oc < %lld; oc++) {", LL(OC));
  ec_line(e, "const ptrdiff_t g = oc / %lld;", LL(OCG));
  ec_line(e, "for (ptrdiff_t oy = 0; oy < %lld; oy++) {", LL(OH));
  ec_line(e, "for (ptrdiff_t ox = 0; ox < %lld; ox++) {", LL(OW));
  ec_line(e, "const ptrdiff_t os = oy * %lld + ox;", LL(OW));
  ec_line(e, "double acc = %s;", bias ? ld(&a, dt, DT_F64, "X3[oc]") : "0");
  ec_line(e, "for (ptrdiff_t icg = 0; icg < %lld; icg++) {", LL(CG));
  ec_line(e, "const ptrdiff_t ic = g * %lld + icg, og = ic / %lld;", LL(CG), LL(CPO));
  ec_line(e, "const ptrdiff_t xc = (b * %lld + ic) * %lld;", LL(C), LL(H * W));
  ec_line(e, "for (ptrdiff_t kk = 0; kk < %lld; kk++) {", LL(KK));
  ec_line(e, "const ptrdiff_t ky = kk / %lld, kx = kk %% %lld;", LL(KW), LL(KW));
  ec_line(e, "const ptrdiff_t oc2 = ((b * %lld + og * %lld + kk) * 2) * %lld + os;", LL(og * KK), LL(KK), LL(OS));
  snprintf(src, sizeof src, "X2[oc2]");
  ec_line(e, "double y = (double)(oy * %lld - %lld + ky * %lld) + %s;", LL(str[0]), LL(pads[0]), LL(dl[0]),
          ld(&a, dt, DT_F64, src));
  snprintf(src, sizeof src, "X2[oc2 + %lld]", LL(OS));
  ec_line(e, "double x = (double)(ox * %lld - %lld + kx * %lld) + %s;", LL(str[1]), LL(pads[1]), LL(dl[1]),
          ld(&a, dt, DT_F64, src));
  if (mask) {
    snprintf(src, sizeof src, "X4[(b * %lld + og * %lld + kk) * %lld + os]", LL(og * KK), LL(KK), LL(OS));
    ec_line(e, "const double m = %s;", ld(&a, dt, DT_F64, src));
  } else {
    ec_line(e, "const double m = 1;");
  }
  ec_line(e, "if (!(y > -2.0 && y < %lld.0 && x > -2.0 && x < %lld.0)) continue;", LL(H + 1), LL(W + 1));
  ec_line(e, "const double fy = floor(y), fx = floor(x), ty = y - fy, tx = x - fx;");
  ec_line(e, "const ptrdiff_t y0 = (ptrdiff_t)fy, x0 = (ptrdiff_t)fx;");
  ec_line(e, "double s = 0;");
  ec_line(e, "for (int j = 0; j < 4; j++) {");
  ec_line(e, "const ptrdiff_t yi = y0 + (j >> 1), xi = x0 + (j & 1);");
  ec_line(e, "if (yi < 0 || yi >= %lld || xi < 0 || xi >= %lld) continue;", LL(H), LL(W));
  snprintf(src, sizeof src, "X0[xc + yi * %lld + xi]", LL(W));
  ec_line(e, "s += ((j >> 1) ? ty : 1 - ty) * ((j & 1) ? tx : 1 - tx) * %s;", ld(&a, dt, DT_F64, src));
  ec_line(e, "}");
  snprintf(src, sizeof src, "X1[(oc * %lld + icg) * %lld + kk]", LL(CG), LL(KK));
  ec_line(e, "acc += %s * m * s;", ld(&a, dt, DT_F64, src));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "Y0[(b * %lld + oc) * %lld + os] = %s;", LL(OC), LL(OS), st(&a, DT_F64, dt, "acc"));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}
