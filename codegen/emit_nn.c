/* emit_nn.c - C kernels of the opsf family: LayerNormalization,
 * RMSNormalization, InstanceNormalization, GroupNormalization,
 * LpNormalization, MeanVarianceNormalization, LRN, ConvTranspose, LpPool,
 * GlobalLpPool, Gelu and MaxUnpool.
 *
 * The normalizations work on rows: for each row two passes over the input
 * give the mean and the variance (the mean of (x - mean)^2, never negative),
 * then a third pass writes (x - mean) * (1 / sqrt(var + eps)) * scale + bias.
 * They compute in double whatever the element type: outputs near zero come
 * from cancellation (x - mean, + bias), where float rounding alone would
 * exceed the 1e-7 absolute tolerance. Mean and 1 / stddev stay double too
 * (stash_type asks for at least float32): a row whose spread is near float32's
 * resolution of its mean would lose its digits to a rounded mean. Rows are
 * contiguous except for MVN's arbitrary axes (nested loops over merged kept /
 * reduced dims) and LpNormalization on an inner axis
 * (blocks of adjacent columns). The other kernels compute f16/bf16 in float.
 * ConvTranspose needs no scratch: each output row (last spatial dim) is built
 * in a small stack buffer of accumulators; the outer output dims gather the
 * input rows that reach them (o + pad = i * stride + k * dilation), and along
 * the row each input element is accumulated into the outputs it touches.
 * Geometry follows the ONNX docs, as in passes/infer_nn.c.
 */
#include "codegen.h"
#include "window.h"

#include <string.h>

#define LL(x) ((long long)(x))
#define ACC_BYTES 4096 /* stack accumulators of one ConvTranspose tile */
#define CHAN_BLOCK 16  /* ConvTranspose output channels computed together */
#define COL_BLOCK 256  /* columns processed together by strided kernels */

/* ---- types and small helpers ------------------------------------------------------ */

static const char *cty(DType ct) { return dtype_ctype(ct); }

/* A C expression text: one operand or one statement's right-hand side. */
typedef struct Expr {
  char s[1024];
} Expr;

static const char *fmt(Expr *x, const char *f, ...) __attribute__((format(printf, 2, 3)));
static const char *fmt(Expr *x, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  int len = vsnprintf(x->s, sizeof x->s, f, ap);
  va_end(ap);
  IR_ASSERT(len >= 0 && (size_t)len < sizeof x->s);
  return x->s;
}

/* src (an element of type `from`) converted to compute type ct. */
static const char *ld(Expr *x, DType from, DType ct, const char *src) {
  return ec_ew_load_str(x->s, sizeof x->s, from, ct, src);
}

/* expr (of compute type ct) converted for storing as `to`. */
static const char *st(Expr *x, DType ct, DType to, const char *expr) {
  return ec_ew_store_str(x->s, sizeof x->s, ct, to, expr);
}

static const char *lit(Expr *x, DType ct, double v) { return ec_literal(ct, v, x->s, sizeof x->s); }

/* (void)s for the outputs of a kernel with nothing to compute. */
static bool emit_nothing(EmitC *e, const Node *n) {
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i))
      ec_line(e, "(void)Y%d;", i);
  return true;
}

static bool is_empty(const Value *v) {
  int64_t k;
  return !shape_numel(&v->shape, &k) || k == 0;
}

/* Emits the statistics of the row x[0 .. len) in double: `mean` (when
 * centered) and `inv` = 1 / sqrt(var + eps), or 1 / sqrt(mean(x^2) + eps)
 * uncentered. They stay double for the normalization whatever stash_type
 * says (at least as precise as the spec asks: a row whose spread is near
 * float32's resolution of its mean loses every digit when the mean is
 * rounded to float first); only the Mean/InvStdDev outputs are rounded to
 * their element type. */
/* acc += the sum over i < len of v(i) (center NULL), or of (v(i) - center)^2:
 * in eight partial sums over blocks of 8 (vj: v at i + j), then the tail (vi). */
static void emit_sum8(EmitC *e, int64_t len, const char *acc, const char *vj, const char *vi,
                      const char *center) {
  char tj[256], ti[256];
  if (center) {
    snprintf(tj, sizeof tj, "(%s - %s) * (%s - %s)", vj, center, vj, center);
    snprintf(ti, sizeof ti, "(%s - %s) * (%s - %s)", vi, center, vi, center);
  } else {
    snprintf(tj, sizeof tj, "%s", vj);
    snprintf(ti, sizeof ti, "%s", vi);
  }
  ec_line(e, "{");
  ec_line(e, "double p8[8] = {0, 0, 0, 0, 0, 0, 0, 0};");
  ec_line(e, "long i = 0;");
  ec_line(e, "for (; i + 8 <= %lld; i += 8)", LL(len));
  ec_line(e, "  for (int j = 0; j < 8; j++) p8[j] += %s;", tj);
  ec_line(e, "%s += ((p8[0] + p8[1]) + (p8[2] + p8[3])) + ((p8[4] + p8[5]) + (p8[6] + p8[7]));", acc);
  ec_line(e, "for (; i < %lld; i++) %s += %s;", LL(len), acc, ti);
  ec_line(e, "}");
}

static void emit_row_stats(EmitC *e, DType from, int64_t len, bool centered, const char *eps) {
  Expr a, b;
  /* eight double partial sums (a loop the compiler vectorizes), then the rest */
  ec_line(e, "double s = 0;");
  if (centered) {
    emit_sum8(e, len, "s", ld(&a, from, DT_F64, "x[i + j]"), ld(&b, from, DT_F64, "x[i]"), NULL);
    ec_line(e, "const double mean = s / %lld;", LL(len));
    ec_line(e, "double q = 0;");
    emit_sum8(e, len, "q", ld(&a, from, DT_F64, "x[i + j]"), ld(&b, from, DT_F64, "x[i]"), "mean");
    ec_line(e, "const double inv = 1 / sqrt(q / %lld + %s);", LL(len), eps);
  } else {
    emit_sum8(e, len, "s", ld(&a, from, DT_F64, "x[i + j]"), ld(&b, from, DT_F64, "x[i]"), "0");
    ec_line(e, "const double inv = 1 / sqrt(s / %lld + %s);", LL(len), eps);
  }
}

/* Epsilon attribute as a double literal (the float attribute, widened). */
static const char *eps_lit(Expr *x, const Node *n, float dflt) {
  return lit(x, DT_F64, (double)ir_attr_float(n, "epsilon", dflt));
}

/* ---- parameters broadcast to X ---------------------------------------------------- */

/* Appends the part of the index into parameter p (unidirectionally broadcast
 * to xs) that comes from x's dims [a, b), whose flat offset is the C variable
 * v. Runs of dims contiguous in p share one term ((v / stride) % extent) * pstride. */
static void param_part(Buf *out, const Shape *ps, const Shape *xs, int a, int b, const char *v) {
  int r = xs->rank, lead = r - ps->rank;
  int64_t pst[IR_MAX_RANK];
  ec_strides(ps, pst);
  int j = a;
  while (j < b) {
    int pj = j - lead;
    if (pj < 0 || ps->d[pj] == 1) {
      j++;
      continue;
    }
    int j1 = j;  /* extend the run while p stays contiguous */
    while (j1 + 1 < b && j1 + 1 - lead >= 0 && ps->d[j1 + 1 - lead] != 1 &&
           pst[j1 - lead] == pst[j1 + 1 - lead] * ps->d[j1 + 1 - lead])
      j1++;
    int64_t below = ec_prod(xs, j1 + 1, b), ext = ec_prod(xs, j, j1 + 1), pstride = pst[j1 - lead];
    Buf t;
    buf_init(&t);
    if (below == 1)
      buf_puts(&t, v);
    else
      buf_printf(&t, "%s / %lld", v, LL(below));
    if (j != a) {
      Buf u;
      buf_init(&u);
      buf_printf(&u, "(%s) %% %lld", t.s, LL(ext));
      buf_free(&t);
      t = u;
    }
    buf_printf(out, "%s", out->len ? " + " : "");
    if (pstride == 1)
      buf_printf(out, "%s%s%s", below == 1 && j == a ? "" : "(", t.s,
                 below == 1 && j == a ? "" : ")");
    else
      buf_printf(out, "(%s) * %lld", t.s, LL(pstride));
    buf_free(&t);
    j = j1 + 1;
  }
}

/* Index of parameter p for row o (x's dims before ax) and in-row offset i. */
static void param_index(Buf *out, const Shape *ps, const Shape *xs, int ax) {
  Buf b;
  buf_init(&b);
  param_part(&b, ps, xs, 0, ax, "o");
  param_part(&b, ps, xs, ax, xs->rank, "i");
  buf_puts(out, b.len ? b.s : "0");
  buf_free(&b);
}

/* ---- LayerNormalization, RMSNormalization ---------------------------------------- */

static int norm_axis(const Node *n, int r) {
  int ax = 0;
  IR_ASSERT(shape_axis(ir_attr_int(n, "axis", -1), r, &ax));
  return ax;
}

/* Fills outputs that have elements although X has none (LayerNorm's Mean/InvStdDev). */
static void fill_nan_outputs(EmitC *e, const Node *n) {
  for (int i = 0; i < n->n_out; i++) {
    if (!ec_has_output(n, i))
      continue;
    int64_t k = 0;
    if (!shape_numel(&n->out[i]->shape, &k) || k == 0) {
      ec_line(e, "(void)Y%d;", i);
      continue;
    }
    Expr a;
    ec_line(e, "for (long i = 0; i < %lld; i++) Y%d[i] = %s;", LL(k), i,
            st(&a, DT_F32, n->out[i]->dt, "(float)NAN"));
  }
}

/* rows_rt: the row count as C text when it is known only at run time (-D
 * ranges, emit_dyn.c; the normalized dims are static there), else NULL. */
static bool emit_layer_rms(EmitC *e, const Node *n, bool centered, const char *rows_rt, int64_t rows_hi) {
  const Shape *xs = &n->in[0]->shape;
  if (!rows_rt && is_empty(n->in[0])) {
    fill_nan_outputs(e, n);
    return true;
  }
  DType tx = n->in[0]->dt, tp = n->in[1]->dt, ty = n->out[0]->dt;
  DType ct = DT_F64;  /* at least as precise as any stash_type */
  int ax = norm_axis(n, xs->rank);
  int64_t len = ec_prod(xs, ax, xs->rank);
  Expr a;
  if (rows_rt) /* --threads: blocks of rows when this run's rows pay */
    ec_open_items_rt(e, "o", rows_rt, rows_hi, ec_cost(COST_ROW_ELEM, (double)rows_hi * (double)len),
                     arena_printf(e->g->arena, "(%s) * %lld", rows_rt, LL(len)), COST_ROW_ELEM);
  else
    ec_open_rows(e, ec_prod(xs, 0, ax), len); /* --threads: blocks of rows */
  if (ir_attr_int(n, "onnxc.fused_inputs", 0) == 1) {
    /* the residual Add before it (passes/fuse_norm.c): the row's sum is
     * written to the output row first, and normalized there in place */
    ec_line(e, "%s *y = Y0 + o * %lld;", dtype_ctype(ty), LL(len));
    ec_line(e, "for (long i = 0; i < %lld; i++) y[i] = X0[o * %lld + i] + X%d[o * %lld + i];", LL(len), LL(len),
            n->n_in - 1, LL(len));
    ec_line(e, "const %s *x = y;", dtype_ctype(tx));
  } else {
    ec_line(e, "const %s *x = X0 + o * %lld;", dtype_ctype(tx), LL(len));
    ec_line(e, "%s *y = Y0 + o * %lld;", dtype_ctype(ty), LL(len));
  }
  emit_row_stats(e, tx, len, centered, eps_lit(&a, n, 1e-5f));
  if (centered && ec_has_output(n, 1))
    ec_line(e, "Y1[o] = %s;", st(&a, ct, n->out[1]->dt, "mean"));
  if (centered && ec_has_output(n, 2))
    ec_line(e, "Y2[o] = %s;", st(&a, ct, n->out[2]->dt, "inv"));
  /* y = (x - mean) * inv * scale + bias, parameters indexed by broadcasting. */
  Buf idx, expr;
  buf_init(&idx);
  buf_init(&expr);
  buf_printf(&expr, centered ? "(%s - mean) * inv" : "%s * inv", ld(&a, tx, ct, "x[i]"));
  buf_puts(&idx, "X1[");
  param_index(&idx, &n->in[1]->shape, xs, ax);
  buf_puts(&idx, "]");
  buf_printf(&expr, " * %s", ld(&a, tp, ct, idx.s));
  if (centered && ir_has_input(n, 2)) {
    buf_free(&idx);
    buf_init(&idx);
    buf_puts(&idx, "X2[");
    param_index(&idx, &n->in[2]->shape, xs, ax);
    buf_puts(&idx, "]");
    buf_printf(&expr, " + %s", ld(&a, n->in[2]->dt, ct, idx.s));
  }
  ec_line(e, "for (long i = 0; i < %lld; i++) y[i] = %s;", LL(len), st(&a, ct, ty, expr.s));
  ec_line(e, "}");
  buf_free(&idx);
  buf_free(&expr);
  return true;
}

bool emitc_LayerNormalization(EmitC *e, const Node *n) { return emit_layer_rms(e, n, true, NULL, 0); }

bool emitc_RMSNormalization(EmitC *e, const Node *n) { return emit_layer_rms(e, n, false, NULL, 0); }

bool ec_norm_rows_rt(EmitC *e, const Node *n, const char *rows, int64_t rows_hi) {
  return emit_layer_rms(e, n, n->op == OP_LayerNormalization, rows, rows_hi < 1 ? 1 : rows_hi);
}

/* ---- InstanceNormalization, GroupNormalization ------------------------------------- */

/* Rows of `len` elements, one per (batch, group); `chans` channels of
 * `plane` elements per row. The affine parameters are per channel
 * (per_channel, index group * chans + channel) or per group. */
static void emit_group_rows(EmitC *e, const Node *n, int64_t groups, int64_t chans,
                            int64_t plane, bool per_channel) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt, ct = DT_F64;
  const char *T = dtype_ctype(t), *CT = cty(ct);
  int64_t len = chans * plane;
  Expr a, b, xi, y;
  fmt(&y, "(%s - mean) * sc + bi", ld(&xi, t, ct, "x[i]"));
  ec_line(e, "for (long o = 0; o < %lld; o++) {", LL(xs->d[0] * groups));
  ec_line(e, "const %s *x = X0 + o * %lld;", T, LL(len));
  ec_line(e, "%s *y = Y0 + o * %lld;", T, LL(len));
  emit_row_stats(e, t, len, true, eps_lit(&a, n, 1e-5f));
  if (per_channel) {
    ec_line(e, "for (long c = 0; c < %lld; c++) {", LL(chans));
    ec_line(e, "const long p = o %% %lld * %lld + c;", LL(groups), LL(chans));
    ec_line(e, "const %s sc = inv * %s, bi = %s;", CT, ld(&a, n->in[1]->dt, ct, "X1[p]"),
            ld(&b, n->in[2]->dt, ct, "X2[p]"));
    ec_line(e, "for (long i = c * %lld; i < (c + 1) * %lld; i++) y[i] = %s;", LL(plane),
            LL(plane), st(&b, ct, t, y.s));
    ec_line(e, "}");
  } else {
    ec_line(e, "const long p = o %% %lld;", LL(groups));
    ec_line(e, "const %s sc = inv * %s, bi = %s;", CT, ld(&a, n->in[1]->dt, ct, "X1[p]"),
            ld(&b, n->in[2]->dt, ct, "X2[p]"));
    ec_line(e, "for (long i = 0; i < %lld; i++) y[i] = %s;", LL(len),
            st(&b, ct, t, y.s));
  }
  ec_line(e, "}");
}

bool emitc_InstanceNormalization(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (is_empty(n->in[0]))
    return emit_nothing(e, n);
  emit_group_rows(e, n, xs->d[1], 1, ec_prod(xs, 2, xs->rank), false);
  return true;
}

bool emitc_GroupNormalization(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (is_empty(n->in[0]))
    return emit_nothing(e, n);
  int64_t groups = ir_attr_int(n, "num_groups", 1);
  emit_group_rows(e, n, groups, xs->d[1] / groups, ec_prod(xs, 2, xs->rank),
                  n->g->opset >= 21);
  return true;
}

/* ---- LpNormalization ---------------------------------------------------------------- */

bool emitc_LpNormalization(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (is_empty(n->in[0]))
    return emit_nothing(e, n);
  DType t = n->in[0]->dt, ct = DT_F64;
  const char *T = dtype_ctype(t), *CT = cty(ct);
  int ax = norm_axis(n, xs->rank);
  bool l1 = ir_attr_int(n, "p", 2) == 1;
  int64_t outer = ec_prod(xs, 0, ax), len = xs->d[ax], inner = ec_prod(xs, ax + 1, xs->rank);
  Expr a, b, c;
  /* acc: sum of |x| or x^2 over the axis, then 1 / norm (0 for a zero norm). */
  const char *term = l1 ? "fabs(v)" : "v * v";
  const char *fin = l1 ? "%s > 0 ? 1 / %s : 0" : "%s > 0 ? 1 / sqrt(%s) : 0";
  ec_line(e, "for (long o = 0; o < %lld; o++) {", LL(outer));
  ec_line(e, "const %s *x = X0 + o * %lld;", T, LL(len * inner));
  ec_line(e, "%s *y = Y0 + o * %lld;", T, LL(len * inner));
  if (inner == 1) {
    ec_line(e, "double acc = 0;");
    ec_line(e, "for (long l = 0; l < %lld; l++) {", LL(len));
    ec_line(e, "const double v = %s;", ld(&a, t, DT_F64, "x[l]"));
    ec_line(e, "acc += %s;", term);
    ec_line(e, "}");
    ec_line(e, "const %s inv = (%s)(%s);", CT, CT, fmt(&b, fin, "acc", "acc"));
    ec_line(e, "for (long l = 0; l < %lld; l++) y[l] = %s;", LL(len),
            st(&c, ct, t, fmt(&b, "%s * inv", ld(&a, t, ct, "x[l]"))));
  } else {
    int64_t cb = inner < COL_BLOCK ? inner : COL_BLOCK;
    ec_line(e, "for (long j0 = 0; j0 < %lld; j0 += %lld) {", LL(inner), LL(cb));
    ec_line(e, "const long nj = %lld - j0 < %lld ? %lld - j0 : %lld;", LL(inner), LL(cb),
            LL(inner), LL(cb));
    ec_line(e, "double acc[%lld];", LL(cb));
    ec_line(e, "for (long j = 0; j < nj; j++) acc[j] = 0;");
    ec_line(e, "for (long l = 0; l < %lld; l++) {", LL(len));
    ec_line(e, "for (long j = 0; j < nj; j++) {");
    ec_line(e, "const double v = %s;",
            ld(&a, t, DT_F64, fmt(&b, "x[l * %lld + j0 + j]", LL(inner))));
    ec_line(e, "acc[j] += %s;", term);
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "for (long j = 0; j < nj; j++) acc[j] = %s;", fmt(&b, fin, "acc[j]", "acc[j]"));
    ec_line(e, "for (long l = 0; l < %lld; l++) {", LL(len));
    ec_line(e, "for (long j = 0; j < nj; j++) {");
    ec_line(e, "const long k = l * %lld + j0 + j;", LL(inner));
    ec_line(e, "y[k] = %s;", st(&c, ct, t, fmt(&b, "%s * (%s)acc[j]", ld(&a, t, ct, "x[k]"), CT)));
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "}");
  }
  ec_line(e, "}");
  return true;
}

/* ---- MeanVarianceNormalization -------------------------------------------------------- */

/* Loop dims: extents and element strides. */
typedef struct Dims {
  int n;
  int64_t ext[IR_MAX_RANK], stride[IR_MAX_RANK];
} Dims;

/* Opens one loop per dim (variables <var>0, <var>1, ...) and sets idx to the
 * offset expression; the caller closes ds->n braces. */
static void open_loops(EmitC *e, const Dims *ds, const char *var, Buf *idx) {
  for (int i = 0; i < ds->n; i++) {
    ec_line(e, "for (long %s%d = 0; %s%d < %lld; %s%d++) {", var, i, var, i, LL(ds->ext[i]), var,
            i);
    if (ds->stride[i] == 1)
      buf_printf(idx, "%s%s%d", idx->len ? " + " : "", var, i);
    else
      buf_printf(idx, "%s%s%d * %lld", idx->len ? " + " : "", var, i, LL(ds->stride[i]));
  }
  if (idx->len == 0)
    buf_puts(idx, "0");
}

static void close_loops(EmitC *e, int n) {
  for (int i = 0; i < n; i++)
    ec_line(e, "}");
}

bool emitc_MeanVarianceNormalization(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (is_empty(n->in[0]))
    return emit_nothing(e, n);
  DType t = n->in[0]->dt, ct = DT_F64;
  const char *T = dtype_ctype(t), *CT = cty(ct);
  static const int64_t dflt[3] = {0, 2, 3};
  int cnt = 3;
  const int64_t *axes = ir_attr(n, "axes") ? ir_attr_ints(n, "axes", &cnt) : dflt;
  bool red[IR_MAX_RANK] = {false};
  for (int i = 0; i < cnt; i++) {
    int ax = 0;
    IR_ASSERT(shape_axis(axes[i], xs->rank, &ax));
    red[ax] = true;
  }
  /* Kept and reduced dims, extent-1 dims dropped, neighbours of a class merged. */
  int64_t xst[IR_MAX_RANK];
  ec_strides(xs, xst);
  Dims keep = {0, {0}, {0}}, rd = {0, {0}, {0}};
  int last = -1;  /* class of the previous kept dim: 0 keep, 1 reduce */
  for (int i = 0; i < xs->rank; i++) {
    if (xs->d[i] == 1)
      continue;
    Dims *ds = red[i] ? &rd : &keep;
    if (last == (int)red[i] && ds->stride[ds->n - 1] == xst[i] * xs->d[i]) {
      ds->ext[ds->n - 1] *= xs->d[i];
      ds->stride[ds->n - 1] = xst[i];
    } else {
      ds->ext[ds->n] = xs->d[i];
      ds->stride[ds->n++] = xst[i];
    }
    last = red[i];
  }
  int64_t count = 1;
  for (int i = 0; i < rd.n; i++)
    count *= rd.ext[i];
  Buf kidx, ridx;
  buf_init(&kidx);
  buf_init(&ridx);
  Expr a, b, c, xr;
  open_loops(e, &keep, "k", &kidx);
  ec_line(e, "const %s *x = X0 + %s;", T, kidx.s);
  ec_line(e, "%s *y = Y0 + %s;", T, kidx.s);
  ec_line(e, "double s = 0, q = 0;");
  open_loops(e, &rd, "r", &ridx);
  ec_line(e, "s += %s;", ld(&a, t, DT_F64, fmt(&b, "x[%s]", ridx.s)));
  close_loops(e, rd.n);
  ec_line(e, "const double mean = s / %lld;", LL(count));
  buf_free(&ridx);
  buf_init(&ridx);
  open_loops(e, &rd, "r", &ridx);
  ec_line(e, "const %s v = %s - mean;", CT, ld(&a, t, ct, fmt(&b, "x[%s]", ridx.s)));
  ec_line(e, "q += v * v;");
  close_loops(e, rd.n);
  /* (x - E[x]) / (sqrt(Var[x]) + 1e-9), the epsilon of the ONNX function body. */
  ec_line(e, "const double inv = 1 / (sqrt(q / %lld) + 1e-9);", LL(count));
  buf_free(&ridx);
  buf_init(&ridx);
  open_loops(e, &rd, "r", &ridx);
  ec_line(e, "y[%s] = %s;", ridx.s,
          st(&c, ct, t, fmt(&b, "(%s - mean) * inv", ld(&a, t, ct, fmt(&xr, "x[%s]", ridx.s)))));
  close_loops(e, rd.n);
  close_loops(e, keep.n);
  buf_free(&kidx);
  buf_free(&ridx);
  return true;
}

/* ---- LRN --------------------------------------------------------------------------- */

/* Y[c] = X[c] / (bias + alpha / size * sum of X[c']^2 over the channel window)^beta,
 * in blocks of COL_BLOCK positions so the window sums stay on the stack. */
bool emitc_LRN(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (is_empty(n->in[0]))
    return emit_nothing(e, n);
  DType t = n->in[0]->dt, ct = ec_float_ct(t);
  const char *T = dtype_ctype(t), *CT = cty(ct), *f = ec_fsuf(ct);
  int64_t size = ir_attr_int(n, "size", 1), c = xs->d[1], plane = ec_prod(xs, 2, xs->rank);
  int64_t before = (size - 1) / 2, after = size / 2;  /* floor and ceil of (size - 1) / 2 */
  int64_t cb = plane < COL_BLOCK ? plane : COL_BLOCK;
  Expr a, b, k0, k1, k2;
  lit(&k0, ct, (double)ir_attr_float(n, "alpha", 1e-4f) / (double)size);
  lit(&k1, ct, (double)ir_attr_float(n, "bias", 1.0f));
  lit(&k2, ct, (double)ir_attr_float(n, "beta", 0.75f));
  ec_line(e, "for (long nb = 0; nb < %lld; nb++) {", LL(xs->d[0]));
  ec_line(e, "const %s *x = X0 + nb * %lld;", T, LL(c * plane));
  ec_line(e, "%s *y = Y0 + nb * %lld;", T, LL(c * plane));
  ec_line(e, "for (long ch = 0; ch < %lld; ch++) {", LL(c));
  ec_line(e, "const long c0 = ch - %lld < 0 ? 0 : ch - %lld;", LL(before), LL(before));
  ec_line(e, "const long c1 = ch + %lld > %lld ? %lld : ch + %lld;", LL(after), LL(c - 1),
          LL(c - 1), LL(after));
  ec_line(e, "for (long j0 = 0; j0 < %lld; j0 += %lld) {", LL(plane), LL(cb));
  ec_line(e, "const long nj = %lld - j0 < %lld ? %lld - j0 : %lld;", LL(plane), LL(cb), LL(plane),
          LL(cb));
  ec_line(e, "%s acc[%lld];", CT, LL(cb));
  ec_line(e, "for (long j = 0; j < nj; j++) acc[j] = 0;");
  ec_line(e, "for (long cc = c0; cc <= c1; cc++) {");
  ec_line(e, "for (long j = 0; j < nj; j++) {");
  ec_line(e, "const %s v = %s;", CT, ld(&a, t, ct, fmt(&b, "x[cc * %lld + j0 + j]", LL(plane))));
  ec_line(e, "acc[j] += v * v;");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "for (long j = 0; j < nj; j++) {");
  ec_line(e, "const long k = ch * %lld + j0 + j;", LL(plane));
  ec_line(e, "y[k] = %s;",
          st(&b, ct, t,
             fmt(&a, "%s / pow%s(%s + %s * acc[j], %s)", ld(&b, t, ct, "x[k]"), f, k1.s, k0.s,
                 k2.s)));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- LpPool, GlobalLpPool ---------------------------------------------------------- */

/* p-th power of v >= 0 and the p-th root, with the common p spelled out. */
static const char *pow_p(Expr *x, DType ct, double p, const char *v) {
  if (p == 1)
    return fmt(x, "%s", v);
  if (p == 2)
    return fmt(x, "%s * %s", v, v);
  if (p == 3)
    return fmt(x, "%s * %s * %s", v, v, v);
  if (p == 4)
    return fmt(x, "%s * %s * %s * %s", v, v, v, v);
  Expr l;
  return fmt(x, "pow%s(%s, %s)", ec_fsuf(ct), v, lit(&l, ct, p));
}

static const char *root_p(Expr *x, DType ct, double p, const char *v) {
  if (p == 1)
    return fmt(x, "%s", v);
  if (p == 2)
    return fmt(x, "sqrt%s(%s)", ec_fsuf(ct), v);
  Expr l;
  return fmt(x, "pow%s(%s, %s)", ec_fsuf(ct), v, lit(&l, ct, 1.0 / p));
}

static int64_t ints_at(const Node *n, const char *name, int want, int i, int64_t dflt) {
  int cnt;
  const int64_t *v = ir_attr_ints(n, name, &cnt);
  return v && cnt == want ? v[i] : dflt;
}

bool emitc_LpPool(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  if (is_empty(n->out[0]) || is_empty(n->in[0]))
    return emit_nothing(e, n);
  DType t = n->in[0]->dt, ct = ec_float_ct(t);
  const char *T = dtype_ctype(t), *CT = cty(ct);
  double p = ir_attr_float(n, "p", 2.0f);
  int r = xs->rank - 2;
  const char *ap = ir_attr_str(n, "auto_pad", "NOTSET");
  bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
  bool valid = strcmp(ap, "VALID") == 0;
  int64_t in_plane = ec_prod(xs, 2, xs->rank), out_plane = ec_prod(ys, 2, ys->rank);
  Expr a, b, c;
  ec_line(e, "for (long nc = 0; nc < %lld; nc++) {", LL(xs->d[0] * xs->d[1]));
  ec_line(e, "const %s *x = X0 + nc * %lld;", T, LL(in_plane));
  ec_line(e, "%s *y = Y0 + nc * %lld;", T, LL(out_plane));
  Buf xi, yi;
  buf_init(&xi);
  buf_init(&yi);
  /* Output loops; per dim the in-bounds taps [lo, hi) of the window at s. */
  for (int i = 0; i < r; i++) {
    int64_t in = xs->d[2 + i], out = ys->d[2 + i];
    int64_t k = ints_at(n, "kernel_shape", r, i, 1), s = ints_at(n, "strides", r, i, 1);
    int64_t dl = ints_at(n, "dilations", r, i, 1), pb = ints_at(n, "pads", 2 * r, i, 0);
    if (upper || lower) {
      int64_t total = (out - 1) * s + (k - 1) * dl + 1 - in;
      total = total < 0 ? 0 : total;
      pb = upper ? total / 2 : total - total / 2;
    } else if (valid) {
      pb = 0;
    }
    ec_line(e, "for (long o%d = 0; o%d < %lld; o%d++) {", i, i, LL(out), i);
    ec_line(e, "const long s%d = o%d * %lld - %lld;", i, i, LL(s), LL(pb));
    ec_line(e, "const long lo%d = s%d >= 0 ? 0 : (%lld - s%d) / %lld;", i, i, LL(dl - 1), i,
            LL(dl));
    ec_line(e, "long hi%d = s%d >= %lld ? 0 : (%lld - s%d) / %lld;", i, i, LL(in),
            LL(in + dl - 1), i, LL(dl));
    ec_line(e, "if (hi%d > %lld) hi%d = %lld;", i, LL(k), i, LL(k));
    if (i == 0) {
      buf_printf(&xi, "i0");
      buf_printf(&yi, "o0");
    } else {
      Buf t1, t2;
      buf_init(&t1);
      buf_init(&t2);
      buf_printf(&t1, "(%s) * %lld + i%d", xi.s, LL(in), i);
      buf_printf(&t2, "(%s) * %lld + o%d", yi.s, LL(out), i);
      buf_free(&xi);
      buf_free(&yi);
      xi = t1;
      yi = t2;
    }
  }
  ec_line(e, "%s acc = 0;", CT);
  for (int i = 0; i < r; i++) {
    int64_t dl = ints_at(n, "dilations", r, i, 1);
    ec_line(e, "for (long k%d = lo%d; k%d < hi%d; k%d++) {", i, i, i, i, i);
    ec_line(e, "const long i%d = s%d + k%d * %lld;", i, i, i, LL(dl));
  }
  ec_line(e, "const %s v = fabs%s(%s);", CT, ec_fsuf(ct), ld(&a, t, ct, fmt(&b, "x[%s]", xi.s)));
  ec_line(e, "acc += %s;", pow_p(&a, ct, p, "v"));
  close_loops(e, r);
  ec_line(e, "y[%s] = %s;", yi.s, st(&c, ct, t, root_p(&a, ct, p, "acc")));
  close_loops(e, r);
  ec_line(e, "}");
  buf_free(&xi);
  buf_free(&yi);
  return true;
}

bool emitc_GlobalLpPool(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (is_empty(n->in[0]))
    return emit_nothing(e, n);
  DType t = n->in[0]->dt, ct = ec_float_ct(t);
  const char *T = dtype_ctype(t), *CT = cty(ct);
  double p = ir_attr_float(n, "p", 2.0f);
  int64_t plane = ec_prod(xs, 2, xs->rank);
  Expr a, b;
  ec_line(e, "for (long nc = 0; nc < %lld; nc++) {", LL(xs->d[0] * xs->d[1]));
  ec_line(e, "const %s *x = X0 + nc * %lld;", T, LL(plane));
  ec_line(e, "%s acc = 0;", CT);
  ec_line(e, "for (long i = 0; i < %lld; i++) {", LL(plane));
  ec_line(e, "const %s v = fabs%s(%s);", CT, ec_fsuf(ct), ld(&a, t, ct, "x[i]"));
  ec_line(e, "acc += %s;", pow_p(&a, ct, p, "v"));
  ec_line(e, "}");
  ec_line(e, "Y0[nc] = %s;", st(&b, ct, t, root_p(&a, ct, p, "acc")));
  ec_line(e, "}");
  return true;
}

/* ---- Gelu ---------------------------------------------------------------------------- */

bool emitc_Gelu(EmitC *e, const Node *n) {
  int64_t numel;
  if (!shape_numel(&n->out[0]->shape, &numel) || numel == 0)
    return emit_nothing(e, n);
  DType t = n->in[0]->dt, ct = ec_float_ct(t);
  const char *CT = cty(ct), *f = ec_fsuf(ct);
  bool tanh_form = strcmp(ir_attr_str(n, "approximate", "none"), "tanh") == 0;
  Expr a, b, k0, k1;
  ec_line(e, "for (long i = 0; i < %lld; i++) {", LL(numel));
  ec_line(e, "const %s v = %s;", CT, ld(&a, t, ct, "X0[i]"));
  if (tanh_form)
    fmt(&a, "(%s)0.5 * v * ((%s)1 + tanh%s(%s * (v + %s * v * v * v)))", CT, CT, f,
        lit(&k0, ct, 0.79788456080286535588), lit(&k1, ct, 0.044715));
  else
    fmt(&a, "(%s)0.5 * v * ((%s)1 + erf%s(v * %s))", CT, CT, f,
        lit(&k0, ct, 0.70710678118654752440));
  ec_line(e, "Y0[i] = %s;", st(&b, ct, t, a.s));
  ec_line(e, "}");
  return true;
}

/* ---- ConvTranspose -------------------------------------------------------------------- */

/* Geometry of one ConvTranspose node, all extents static. pb may be
 * negative (an output_shape larger than the full result). */
typedef struct TGeom {
  int r;
  int64_t in[IR_MAX_RANK], out[IR_MAX_RANK], k[IR_MAX_RANK];
  int64_t s[IR_MAX_RANK], dil[IR_MAX_RANK], pb[IR_MAX_RANK];
  int64_t in_plane, out_plane, ktaps;
  int64_t cg, mg;                          /* input / output channels per group */
} TGeom;

/* The begin pads as the ONNX docs derive them (window.c's
 * window_read_convt, which the CUDA target reads too). */
static void tgeom_read(const Node *n, TGeom *g) {
  const Shape *xs = &n->in[0]->shape, *ws = &n->in[1]->shape, *ys = &n->out[0]->shape;
  Window w;
  window_read_convt(n, xs, ws, ys, &w);
  int r = g->r = w.r;
  for (int i = 0; i < r; i++) {
    g->in[i] = w.in[i];
    g->out[i] = w.out[i];
    g->k[i] = w.k[i];
    g->s[i] = w.s[i];
    g->dil[i] = w.dil[i];
    g->pb[i] = w.pb[i];
  }
  g->in_plane = w.in_plane;
  g->out_plane = w.out_plane;
  g->ktaps = 1;
  for (int i = 0; i < r; i++)
    g->ktaps *= g->k[i];
  int64_t group = ir_attr_int(n, "group", 1);
  g->cg = xs->d[1] / group;
  g->mg = ws->d[1];
}

/* Output channels m0 .. m0 + rows - 1 of one group, for batch item nb; xg
 * points at the group's first input channel, wm at weight (0, m0 local). */
static void emit_convt_tile(EmitC *e, const Node *n, const TGeom *g, int rows) {
  DType t = n->in[0]->dt, ct = ec_float_ct(t);
  const char *T = dtype_ctype(t), *CT = cty(ct);
  int r = g->r, last = r - 1;
  int64_t ow = g->out[last], sl = g->s[last], il = g->in[last];
  /* Accumulators of a chunk of rb = sl * qb outputs, stored by phase
   * (output mod stride): the outputs one kernel tap reaches along the row
   * are then contiguous, so the innermost loop is a plain axpy. */
  int64_t cap = ACC_BYTES / rows / (ct == DT_F64 ? 8 : 4);
  int64_t qb = (ow + sl - 1) / sl, qcap = cap / sl > 0 ? cap / sl : 1;
  qb = qb < qcap ? qb : qcap;
  int64_t rb = qb * sl;
  int64_t cstride = g->mg * g->ktaps;  /* weights of one input channel */
  Expr a, b;
  Buf row, tap;
  buf_init(&row);
  buf_init(&tap);
  ec_line(e, "%s *y = Y0 + (nb * %lld + m0) * %lld;", T,
          LL(n->out[0]->shape.d[1]), LL(g->out_plane));
  for (int i = 0; i < last; i++) {
    ec_line(e, "for (long o%d = 0; o%d < %lld; o%d++) {", i, i, LL(g->out[i]), i);
    if (i == 0)
      buf_printf(&row, "o0");
    else {
      Buf t1;
      buf_init(&t1);
      buf_printf(&t1, "(%s) * %lld + o%d", row.s, LL(g->out[i]), i);
      buf_free(&row);
      row = t1;
    }
  }
  ec_line(e, "%s *yrow = y + %s%s;", T, last ? fmt(&a, "(%s) * ", row.s) : "",
          last ? fmt(&b, "%lld", LL(ow)) : "0");
  ec_line(e, "for (long ow0 = 0; ow0 < %lld; ow0 += %lld) {", LL(ow), LL(rb));
  ec_line(e, "const long ow1 = ow0 + %lld < %lld ? ow0 + %lld : %lld;", LL(rb), LL(ow), LL(rb),
          LL(ow));
  for (int k = 0; k < rows; k++) {
    ec_line(e, "%s acc%d[%lld];", CT, k, LL(rb));
    if (ir_has_input(n, 2))
      ec_line(e, "for (long j = 0; j < %lld; j++) acc%d[j] = %s;", LL(rb), k,
              ld(&a, n->in[2]->dt, ct, fmt(&b, "X2[m0 + %d]", k)));
    else
      ec_line(e, "for (long j = 0; j < %lld; j++) acc%d[j] = 0;", LL(rb), k);
  }
  ec_line(e, "for (long c = 0; c < %lld; c++) {", LL(g->cg));
  ec_line(e, "const %s *xr0 = xg + c * %lld;", T, LL(g->in_plane));
  ec_line(e, "const %s *wc = wm + c * %lld;", T, LL(cstride));
  /* Outer dims: the kernel taps k reaching output o read input (o + pb - k * d) / s. */
  for (int i = 0; i < last; i++) {
    int64_t rowlen = 1;
    for (int j = i + 1; j < r; j++)
      rowlen *= g->in[j];
    ec_line(e, "for (long k%d = 0; k%d < %lld; k%d++) {", i, i, LL(g->k[i]), i);
    ec_line(e, "const long t%d = o%d + %lld - k%d * %lld;", i, i, LL(g->pb[i]), i, LL(g->dil[i]));
    if (g->s[i] == 1)
      ec_line(e, "if (t%d < 0 || t%d >= %lld) continue;", i, i, LL(g->in[i]));
    else
      ec_line(e, "if (t%d < 0 || t%d %% %lld != 0 || t%d / %lld >= %lld) continue;", i, i,
              LL(g->s[i]), i, LL(g->s[i]), LL(g->in[i]));
    ec_line(e, "const %s *xr%d = xr%d + t%d / %lld * %lld;", T, i + 1, i, i, LL(g->s[i]),
            LL(rowlen));
    if (i == 0)
      buf_printf(&tap, "k0");
    else {
      Buf t1;
      buf_init(&t1);
      buf_printf(&t1, "(%s) * %lld + k%d", tap.s, LL(g->k[i]), i);
      buf_free(&tap);
      tap = t1;
    }
  }
  if (last == 0)
    buf_printf(&tap, "kl");
  else {
    Buf t1;
    buf_init(&t1);
    buf_printf(&t1, "(%s) * %lld + kl", tap.s, LL(g->k[last]));
    buf_free(&tap);
    tap = t1;
  }
  ec_line(e, "for (long kl = 0; kl < %lld; kl++) {", LL(g->k[last]));
  for (int k = 0; k < rows; k++)
    ec_line(e, "const %s w%d = %s;", CT, k,
            ld(&a, t, ct, fmt(&b, "wc[%lld + %s]", LL(k * g->ktaps), tap.s)));
  /* Input i lands on output i * s + off, phase p = off mod s, slot
   * q = i + qo of that phase; keep 0 <= q < the phase's count in the chunk. */
  ec_line(e, "const long off = kl * %lld - %lld;", LL(g->dil[last]), LL(g->pb[last]));
  if (sl == 1) {
    ec_line(e, "const long qo = off - ow0, nq = ow1 - ow0;");
  } else {
    ec_line(e, "const long p = (off %% %lld + %lld) %% %lld;", LL(sl), LL(sl), LL(sl));
    ec_line(e, "const long qo = (off - p) / %lld - ow0 / %lld;", LL(sl), LL(sl));
    ec_line(e, "const long nq = ow1 - ow0 > p ? (ow1 - ow0 - p + %lld) / %lld : 0;", LL(sl - 1),
            LL(sl));
  }
  ec_line(e, "const long lo = qo < 0 ? -qo : 0;");
  ec_line(e, "const long hi = nq - qo < %lld ? nq - qo : %lld;", LL(il), LL(il));
  Expr slot;
  if (sl == 1)
    fmt(&slot, "qo + i");
  else
    fmt(&slot, "p * %lld + qo + i", LL(qb));
  ec_line(e, "for (long i = lo; i < hi; i++) {");
  ec_line(e, "const %s v = %s;", CT, ld(&a, t, ct, fmt(&b, "xr%d[i]", last)));
  for (int k = 0; k < rows; k++)
    ec_line(e, "acc%d[%s] += w%d * v;", k, slot.s, k);
  ec_line(e, "}");
  ec_line(e, "}");
  close_loops(e, last);
  ec_line(e, "}");  /* c */
  for (int k = 0; k < rows; k++)
    ec_line(e, "for (long j = ow0; j < ow1; j++) yrow[%lld + j] = %s;", LL(k * g->out_plane),
            st(&a, ct, t,
               sl == 1 ? fmt(&b, "acc%d[j - ow0]", k)
                       : fmt(&b, "acc%d[(j - ow0) %% %lld * %lld + (j - ow0) / %lld]", k, LL(sl),
                             LL(qb), LL(sl))));
  ec_line(e, "}");  /* ow0 */
  close_loops(e, last);
  buf_free(&row);
  buf_free(&tap);
}

bool emitc_ConvTranspose(EmitC *e, const Node *n) {
  if (is_empty(n->out[0]))
    return emit_nothing(e, n);
  const Shape *xs = &n->in[0]->shape;
  TGeom g;
  memset(&g, 0, sizeof g);
  tgeom_read(n, &g);
  int64_t group = ir_attr_int(n, "group", 1);
  /* Blocks of up to CHAN_BLOCK output channels, then one block of the rest. */
  int64_t blk = g.mg < CHAN_BLOCK ? g.mg : CHAN_BLOCK, full = g.mg / blk * blk;
  const char *T = dtype_ctype(n->in[0]->dt);
  ec_line(e, "for (long nb = 0; nb < %lld; nb++) {", LL(xs->d[0]));
  ec_line(e, "for (long gi = 0; gi < %lld; gi++) {", LL(group));
  ec_line(e, "const %s *xg = X0 + (nb * %lld + gi * %lld) * %lld;", T, LL(xs->d[1]), LL(g.cg),
          LL(g.in_plane));
  for (int pass = 0; pass < 2; pass++) {
    int rows = (int)(pass == 0 ? blk : g.mg - full);
    int64_t from = pass == 0 ? 0 : full, to = pass == 0 ? full : g.mg;
    if (from >= to)
      continue;
    ec_line(e, "for (long ml = %lld; ml < %lld; ml += %d) {", LL(from), LL(to), rows);
    ec_line(e, "const long m0 = gi * %lld + ml;", LL(g.mg));
    ec_line(e, "const %s *wm = X1 + gi * %lld + ml * %lld;", T, LL(g.cg * g.mg * g.ktaps),
            LL(g.ktaps));
    emit_convt_tile(e, n, &g, rows);
    ec_line(e, "}");
  }
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- MaxUnpool -------------------------------------------------------------------------- */

/* Zeroes Y, then Y[I[j]] = X[j]; I indexes the unpooled shape (X's spatial
 * extents (in - 1) * s + k - pads), which an output_shape input may embed
 * in a larger Y at the origin. An index outside it is a run-time error. */
bool emitc_MaxUnpool(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  if (is_empty(n->out[0]))
    return emit_nothing(e, n);
  int r = xs->rank - 2;
  Shape inf = *xs;
  for (int i = 0; i < r; i++)
    inf.d[2 + i] = (xs->d[2 + i] - 1) * ints_at(n, "strides", r, i, 1) +
                   ints_at(n, "kernel_shape", r, i, 1) - ints_at(n, "pads", 2 * r, i, 0) -
                   ints_at(n, "pads", 2 * r, r + i, 0);
  int64_t nx = 0, ny = 0, ni = 0;
  IR_ASSERT(shape_numel(xs, &nx) && shape_numel(ys, &ny) && shape_numel(&inf, &ni));
  ec_line(e, "for (long i = 0; i < %lld; i++) Y0[i] = 0;", LL(ny));
  ec_line(e, "for (long j = 0; j < %lld; j++) {", LL(nx));
  ec_line(e, "const int64_t k = X1[j];");
  ec_line(e, "if (k < 0 || k >= %lld) return ONNXC_ERR_BAD_INDEX;", LL(ni));
  if (shape_equal(&inf, ys)) {
    ec_line(e, "Y0[k] = X0[j];");
  } else {
    /* Coordinates in the unpooled shape, re-linearized in Y's. */
    int64_t yst[IR_MAX_RANK];
    ec_strides(ys, yst);
    Buf idx;
    buf_init(&idx);
    int64_t below = ni;
    for (int i = 0; i < xs->rank; i++) {
      below /= inf.d[i];
      buf_printf(&idx, "%s(k / %lld %% %lld) * %lld", i ? " + " : "", LL(below), LL(inf.d[i]),
                 LL(yst[i]));
    }
    ec_line(e, "Y0[%s] = X0[j];", idx.s);
    buf_free(&idx);
  }
  ec_line(e, "}");
  return true;
}
