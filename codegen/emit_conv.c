/* emit_conv.c - C kernels for Conv, MaxPool, AveragePool and the global pools.
 *
 * Conv is a direct convolution that needs no scratch memory. For a tile of
 * CHAN_BLOCK output channels of one group and each output row (the last
 * spatial dim) it keeps a block of accumulators per channel on the stack
 * (ACC_BYTES in all) and adds, for every input channel of the group and every
 * kernel tap, w * x over the row range whose input positions are in bounds, so
 * each loaded input feeds CHAN_BLOCK multiply-adds. The innermost loop walks
 * contiguous accumulators (and contiguous inputs at stride 1), so compilers
 * vectorize it, and no padded reads ever happen. f16/bf16 accumulate in float.
 * The pools visit each output element once and loop over the in-bounds part of
 * its window, whose per-dim tap ranges are computed once per output index.
 * Window geometry follows the ONNX docs (see passes/infer_conv.c); the output
 * extents are taken from the inferred output shape.
 */
#include "gemm.h"
#include "window.h"

#include <string.h>

#define LL(x) ((long long)(x))
#define ACC_BYTES 4096 /* Conv accumulators kept on the stack */
#define CHAN_BLOCK 4   /* output channels computed together by Conv */

/* Compute type of the kernels: f16/bf16 widen to float. */
static const char *ctype(DType t) {
  return t == DT_F64 ? "double" : dtype_is_float(t) ? "float" : dtype_ctype(t);
}
/* Function applied when loading / storing an element (empty: none). */
static const char *ld(DType t) {
  return t == DT_F16 ? "onnxc_f16_to_f32" : t == DT_BF16 ? "onnxc_bf16_to_f32" : "";
}
static const char *st(DType t) {
  return t == DT_F16 ? "onnxc_f32_to_f16" : t == DT_BF16 ? "onnxc_f32_to_bf16" : "";
}


/* Extends the row-major index expression b by one dim: "(b) * ext + var<i>". */
static void index_push(Buf *b, int64_t ext, const char *var, int i) {
  if (b->len == 0) {
    buf_printf(b, "%s%d", var, i);
    return;
  }
  Buf nx;
  buf_init(&nx);
  buf_printf(&nx, "(%s) * %lld + %s%d", b->s, LL(ext), var, i);
  buf_free(b);
  *b = nx;
}

/* (void)s for the outputs of an empty kernel. */
static bool emit_nothing(EmitC *e, const Node *n) {
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i))
      ec_line(e, "(void)Y%d;", i);
  return true;
}

/* ---- Conv --------------------------------------------------------------------- */

/* The facts every Conv tile needs. */
typedef struct ConvInfo {
  const Node *n;
  Window g;
  DType t;
  int64_t cg;          /* input channels per group */
  int64_t ktaps;       /* kernel elements per (output, input) channel pair */
} ConvInfo;

/* Body computing output channels m0 .. m0 + rows - 1 (one group) of batch
 * item nb, whose group's input starts at xg. */
static void emit_conv_tile(EmitC *e, const ConvInfo *ci, int rows) {
  const Window *g = &ci->g;
  const char *T = dtype_ctype(ci->t), *CT = ctype(ci->t), *L = ld(ci->t);
  int r = g->r, last = r - 1;
  int64_t ow = g->out[last], sl = g->s[last], il = g->in[last];
  int64_t cap = ACC_BYTES / rows / (ci->t == DT_F64 ? 8 : 4);
  int64_t rb = ow < cap ? ow : cap;
  int64_t wstride = ci->cg * ci->ktaps;  /* weights of one output channel */
  ec_line(e, "const %s *wm = X1 + m0 * %lld;", T, LL(wstride));
  ec_line(e, "%s *y = Y0 + (nb * %lld + m0) * %lld;", T, LL(ci->n->out[0]->shape.d[1]),
          LL(g->out_plane));
  /* Loops over the outer output dims; yrow is the output row. */
  Buf row, tap;
  buf_init(&row);
  buf_init(&tap);
  for (int i = 0; i < last; i++) {
    ec_line(e, "for (long o%d = 0; o%d < %lld; o%d++) {", i, i, LL(g->out[i]), i);
    index_push(&row, g->out[i], "o", i);
  }
  if (last > 0)
    ec_line(e, "%s *yrow = y + (%s) * %lld;", T, row.s, LL(ow));
  else
    ec_line(e, "%s *yrow = y;", T);
  ec_line(e, "for (long ow0 = 0; ow0 < %lld; ow0 += %lld) {", LL(ow), LL(rb));
  ec_line(e, "const long ow1 = ow0 + %lld < %lld ? ow0 + %lld : %lld;", LL(rb), LL(ow), LL(rb),
          LL(ow));
  for (int k = 0; k < rows; k++) {
    ec_line(e, "%s acc%d[%lld];", CT, k, LL(rb));
    if (ir_has_input(ci->n, 2))
      ec_line(e, "for (long j = 0; j < %lld; j++) acc%d[j] = %s(X2[m0 + %d]);", LL(rb), k, L, k);
    else
      ec_line(e, "for (long j = 0; j < %lld; j++) acc%d[j] = 0;", LL(rb), k);
  }
  ec_line(e, "for (long c = 0; c < %lld; c++) {", LL(ci->cg));
  ec_line(e, "const %s *xr0 = xg + c * %lld;", T, LL(g->in_plane));
  ec_line(e, "const %s *wc = wm + c * %lld;", T, LL(ci->ktaps));
  /* Kernel taps of the outer dims narrow xr to one input row, skipping rows
   * that fall into the padding. */
  for (int i = 0; i < last; i++) {
    int64_t rowlen = 1;
    for (int j = i + 1; j < r; j++)
      rowlen *= g->in[j];
    ec_line(e, "for (long k%d = 0; k%d < %lld; k%d++) {", i, i, LL(g->k[i]), i);
    ec_line(e, "const long i%d = o%d * %lld + k%d * %lld - %lld;", i, i, LL(g->s[i]), i,
            LL(g->dil[i]), LL(g->pb[i]));
    ec_line(e, "if (i%d < 0 || i%d >= %lld) continue;", i, i, LL(g->in[i]));
    ec_line(e, "const %s *xr%d = xr%d + i%d * %lld;", T, i + 1, i, i, LL(rowlen));
    index_push(&tap, g->k[i], "k", i);
  }
  index_push(&tap, g->k[last], "k", last);
  ec_line(e, "for (long k%d = 0; k%d < %lld; k%d++) {", last, last, LL(g->k[last]), last);
  for (int k = 0; k < rows; k++)
    ec_line(e, "const %s w%d = %s(wc[%lld + %s]);", CT, k, L, LL(k * wstride), tap.s);
  /* Input column o * s + off is in bounds for o in [lo, hi). */
  ec_line(e, "const long off = k%d * %lld - %lld;", last, LL(g->dil[last]), LL(g->pb[last]));
  ec_line(e, "long lo = off >= 0 ? 0 : (%lld - off) / %lld;", LL(sl - 1), LL(sl));
  ec_line(e, "long hi = off >= %lld ? 0 : (%lld - off) / %lld + 1;", LL(il), LL(il - 1), LL(sl));
  ec_line(e, "if (lo < ow0) lo = ow0;");
  ec_line(e, "if (hi > ow1) hi = ow1;");
  ec_line(e, "for (long o = lo; o < hi; o++) {");
  ec_line(e, "const %s v = %s(xr%d[o * %lld + off]);", CT, L, last, LL(sl));
  for (int k = 0; k < rows; k++)
    ec_line(e, "acc%d[o - ow0] += w%d * v;", k, k);
  ec_line(e, "}");
  ec_line(e, "}");
  for (int i = 0; i < last; i++)
    ec_line(e, "}");
  ec_line(e, "}");  /* c */
  /* a residual fused by passes/fuse_epilogue.c (input 3, float32, the output's
   * shape): added before the activation, as the packed paths do */
  bool res = ir_has_input(ci->n, 3);
  if (res)
    ec_line(e, "const %s *rrow = X3 + (yrow - Y0);", T);
  for (int k = 0; k < rows; k++) {
    char v[96];
    Buf act;  /* the fused activation, if any (passes/fuse_epilogue.c) */
    buf_init(&act);
    if (res)
      snprintf(v, sizeof v, "acc%d[o - ow0] + rrow[%lld + o]", k, LL(k * g->out_plane));
    else
      snprintf(v, sizeof v, "acc%d[o - ow0]", k);
    gemm_act_expr(ci->n, v, &act);
    ec_line(e, "for (long o = ow0; o < ow1; o++) yrow[%lld + o] = %s(%s);", LL(k * g->out_plane),
            st(ci->t), act.s);
    buf_free(&act);
  }
  ec_line(e, "}");  /* ow0 */
  for (int i = 0; i < last; i++)
    ec_line(e, "}");
  buf_free(&row);
  buf_free(&tap);
}

int64_t conv_scratch_bytes(const Node *n, int threads) {
  int64_t gemm = gemm_scratch_bytes(n, threads);
  return gemm > 0 ? gemm : depthwise_scratch_bytes(n, threads);
}

/* ---- a one-pixel output map: dot products ------------------------------------------ */

#define GEMV_MAX_K 1024 /* floats of the gathered input column (on the stack) */
#define GEMV_LANES 16   /* partial sums of each dot product */
#define GEMV_ROWS 4     /* output channels at a time */

bool conv_gemv_form(const Node *n) {
  if (n->op != OP_Conv || n->n_in < 2 || n->n_out != 1 || ir_attr_int(n, "group", 1) != 1)
    return false;
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i) && (n->in[i]->dt != DT_F32 || !shape_is_static(&n->in[i]->shape)))
      return false;
  const Shape *x = &n->in[0]->shape, *w = &n->in[1]->shape, *y = &n->out[0]->shape;
  if (n->out[0]->dt != DT_F32 || !shape_is_static(y) || x->rank < 3 || w->rank != x->rank ||
      y->rank != x->rank)
    return false;
  int64_t k = w->d[1];
  for (int i = 2; i < w->rank; i++) {
    if (y->d[i] != 1)
      return false;
    k *= w->d[i];
  }
  return y->d[0] > 0 && y->d[1] > 0 && k >= GEMV_LANES && k <= GEMV_MAX_K;
}

/* A conv whose output map is one pixel (the last convs of a streaming audio
 * encoder, a squeeze-excite gate's 1x1 map): each output channel is the dot
 * product of its weight row with the pixel's input column, gathered once
 * (zeros where a tap falls in the padding), summed in GEMV_LANES partial sums
 * that compilers vectorize, GEMV_ROWS channels at a time so the column is
 * loaded once for them. The weights are read once, as stored. */
static bool emit_conv_gemv(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ws = &n->in[1]->shape, *ys = &n->out[0]->shape;
  Window g;
  window_read(n, xs, ys, &ws->d[2], &g);
  int64_t C = ws->d[1], M = ws->d[0], taps = 1;
  for (int i = 0; i < g.r; i++)
    taps *= g.k[i];
  int64_t K = C * taps, full = K / GEMV_LANES * GEMV_LANES, m4 = M / GEMV_ROWS * GEMV_ROWS;
  /* each tap's input offset in a channel's plane, -1 in the padding */
  ec_line(e, "static const int toff[%lld] = {", LL(taps));
  Buf tb;
  buf_init(&tb);
  for (int64_t t = 0; t < taps; t++) {
    int64_t rem = t, off = 0, stride = 1;
    bool in = true;
    for (int i = g.r - 1; i >= 0; i--) {
      int64_t ki = rem % g.k[i], pos = ki * g.dil[i] - g.pb[i];
      rem /= g.k[i];
      in = in && pos >= 0 && pos < g.in[i];
      off += pos * stride;
      stride *= g.in[i];
    }
    buf_printf(&tb, "%lld,", LL(in ? off : -1));
    if (tb.len > 100) {
      ec_line(e, "%s", tb.s);
      tb.len = 0;
      tb.s[0] = 0;
    }
  }
  if (tb.len)
    ec_line(e, "%s", tb.s);
  buf_free(&tb);
  ec_line(e, "};");
  bool bias = ir_has_input(n, 2), res = ir_has_input(n, 3);
  ec_line(e, "for (long nb = 0; nb < %lld; nb++) {", LL(xs->d[0]));
  ec_line(e, "const float *xn = X0 + nb * %lld;", LL(C * g.in_plane));
  ec_line(e, "float *yn = Y0 + nb * %lld;", LL(M));
  if (res)
    ec_line(e, "const float *rn = X3 + nb * %lld;", LL(M));
  ec_line(e, "float col[%lld];", LL(K));
  ec_line(e, "for (long c = 0; c < %lld; c++)", LL(C));
  ec_line(e, "  for (long t = 0; t < %lld; t++) col[c * %lld + t] = toff[t] < 0 ? 0.0f : xn[c * %lld + toff[t]];",
          LL(taps), LL(taps), LL(g.in_plane));
  for (int pass = 0; pass < 2; pass++) {
    int rows = pass == 0 ? GEMV_ROWS : 1;
    int64_t lo = pass == 0 ? 0 : m4, hi = pass == 0 ? m4 : M;
    if (lo >= hi)
      continue;
    ec_line(e, "for (long m0 = %lld; m0 < %lld; m0 += %d) {", LL(lo), LL(hi), rows);
    for (int r = 0; r < rows; r++) {
      ec_line(e, "const float *w%d = X1 + (m0 + %d) * %lld;", r, r, LL(K));
      ec_line(e, "float part%d[%d] = {0};", r, GEMV_LANES);
    }
    ec_line(e, "for (long k = 0; k < %lld; k += %d) {", LL(full), GEMV_LANES);
    ec_line(e, "for (long u = 0; u < %d; u++) {", GEMV_LANES);
    ec_line(e, "const float v = col[k + u];");
    for (int r = 0; r < rows; r++)
      ec_line(e, "part%d[u] += v * w%d[k + u];", r, r);
    ec_line(e, "}");
    ec_line(e, "}");
    for (int r = 0; r < rows; r++) {
      ec_line(e, "{");
      if (bias)
        ec_line(e, "float acc = X2[m0 + %d];", r);
      else
        ec_line(e, "float acc = 0;");
      ec_line(e, "for (long u = 0; u < %d; u++) acc += part%d[u];", GEMV_LANES, r);
      ec_line(e, "for (long k = %lld; k < %lld; k++) acc += col[k] * w%d[k];", LL(full), LL(K), r);
      char v[64];
      Buf act;
      buf_init(&act);
      snprintf(v, sizeof v, res ? "acc + rn[m0 + %d]" : "acc", r);
      gemm_act_expr(n, v, &act);
      ec_line(e, "yn[m0 + %d] = %s;", r, act.s);
      buf_free(&act);
      ec_line(e, "}");
    }
    ec_line(e, "}");
  }
  ec_line(e, "}");
  return true;
}

bool emitc_Conv(EmitC *e, const Node *n) {
  if (conv_gemv_form(n))
    return emit_conv_gemv(e, n);
  if (gemm_emit_conv(e, n) || conv_emit_depthwise(e, n))
    return true;
  const Shape *xs = &n->in[0]->shape, *ws = &n->in[1]->shape, *ys = &n->out[0]->shape;
  int64_t ny;
  if (!shape_numel(ys, &ny) || ny == 0)
    return emit_nothing(e, n);
  ConvInfo ci;
  ci.n = n;
  ci.t = n->in[0]->dt;
  window_read(n, xs, ys, &ws->d[2], &ci.g);
  ci.cg = ws->d[1];
  ci.ktaps = 1;
  for (int i = 0; i < ci.g.r; i++)
    ci.ktaps *= ci.g.k[i];
  int64_t group = ir_attr_int(n, "group", 1), mg = ys->d[1] / group;
  int64_t full = mg / CHAN_BLOCK * CHAN_BLOCK;
  ec_line(e, "for (long nb = 0; nb < %lld; nb++) {", LL(xs->d[0]));
  ec_line(e, "for (long gi = 0; gi < %lld; gi++) {", LL(group));
  ec_line(e, "const %s *xg = X0 + (nb * %lld + gi * %lld) * %lld;", dtype_ctype(ci.t),
          LL(xs->d[1]), LL(ci.cg), LL(ci.g.in_plane));
  if (full > 0) {
    ec_line(e, "for (long m0 = gi * %lld; m0 < gi * %lld + %lld; m0 += %d) {", LL(mg), LL(mg),
            LL(full), CHAN_BLOCK);
    emit_conv_tile(e, &ci, CHAN_BLOCK);
    ec_line(e, "}");
  }
  if (full < mg) {
    ec_line(e, "for (long m0 = gi * %lld + %lld; m0 < (gi + 1) * %lld; m0++) {", LL(mg), LL(full),
            LL(mg));
    emit_conv_tile(e, &ci, 1);
    ec_line(e, "}");
  }
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- MaxPool, AveragePool ---------------------------------------------------------- */

/* Opens one loop per output dim; at each level the window's in-bounds tap
 * range [lo, hi) and, for count_include_pad, the taps before the end of the
 * padding (cnt) are computed once. Returns nothing; caller closes r braces. */
static void pool_open_outputs(EmitC *e, const Window *g, bool want_cnt) {
  for (int i = 0; i < g->r; i++) {
    int64_t s = g->s[i], dl = g->dil[i], k = g->k[i];
    ec_line(e, "for (long o%d = 0; o%d < %lld; o%d++) {", i, i, LL(g->out[i]), i);
    ec_line(e, "const long s%d = o%d * %lld - %lld;", i, i, LL(s), LL(g->pb[i]));
    ec_line(e, "const long lo%d = s%d >= 0 ? 0 : (%lld - s%d) / %lld;", i, i, LL(dl - 1), i,
            LL(dl));
    ec_line(e, "long hi%d = s%d >= %lld ? 0 : (%lld - s%d) / %lld;", i, i, LL(g->in[i]),
            LL(g->in[i] + dl - 1), i, LL(dl));
    ec_line(e, "if (hi%d > %lld) hi%d = %lld;", i, LL(k), i, LL(k));
    ec_line(e, "if (hi%d < lo%d) hi%d = lo%d;", i, i, i, i);
    if (want_cnt) {
      ec_line(e, "long cnt%d = (%lld - s%d) / %lld;", i, LL(g->in[i] + g->pe[i] + dl - 1), i,
              LL(dl));
      ec_line(e, "if (cnt%d > %lld) cnt%d = %lld;", i, LL(k), i, LL(k));
    }
  }
}

/* Opens the tap loops and defines `v`, the input element, and `ix`, its
 * row-major (or column-major when col_major) offset in the input plane. */
static void pool_open_taps(EmitC *e, const Window *g, DType t, bool col_major, bool want_ix) {
  Buf rm, cm;
  buf_init(&rm);
  buf_init(&cm);
  int64_t below = 1;  /* product of the extents of the dims before i */
  for (int i = 0; i < g->r; i++) {
    ec_line(e, "for (long k%d = lo%d; k%d < hi%d; k%d++) {", i, i, i, i, i);
    ec_line(e, "const long i%d = s%d + k%d * %lld;", i, i, i, LL(g->dil[i]));
    index_push(&rm, g->in[i], "i", i);
    buf_printf(&cm, "%si%d * %lld", i ? " + " : "", i, LL(below));
    below *= g->in[i];
  }
  ec_line(e, "const %s v = %s(x[%s]);", ctype(t), ld(t), rm.s);
  if (want_ix)
    ec_line(e, "const long ix = %s;", col_major ? cm.s : rm.s);
  buf_free(&rm);
  buf_free(&cm);
}

/* Row-major offset of the current output element. */
static void out_index(const Window *g, Buf *b) {
  for (int i = 0; i < g->r; i++)
    index_push(b, g->out[i], "o", i);
}

/* Lowest finite value of the compute type, the start of a max reduction: a
 * window that covers only padding gives it, as in ONNX Runtime (-FLT_MAX,
 * not -inf, which a following BatchNormalization or Conv turns into NaN). */
static const char *lowest(DType t) {
  switch (t) {
  case DT_I8: return "(-128)";
  case DT_U8: return "0";
  case DT_F64: return "(-1.7976931348623157e+308)";
  default: return "(-3.40282347e+38f)";
  }
}

/* One float32 plane of a 2-D pool (x, y declared): per output row, the
 * columns whose window lies inside the row (the interior) in chunks of 64
 * with the taps unrolled, so the loop over the chunk vectorizes; the border
 * columns take the general window code. Same results as the general path. */
static void emit_pool2d_plane(EmitC *e, const Window *g, bool is_max, bool cip, DType t) {
  const char *T = dtype_ctype(t); /* float32, or a MaxPool of int8 / uint8 (int8 QDQ models) */
  int64_t W = g->in[1], OW = g->out[1], S1 = g->s[1], D1 = g->dil[1], P1 = g->pb[1], KW = g->k[1];
  int64_t a, b;
  window_interior(W, OW, KW, S1, D1, P1, &a, &b);
  const char *init = is_max ? lowest(t) : "0";
  ec_line(e, "for (long o0 = 0; o0 < %lld; o0++) {", LL(g->out[0]));
  ec_line(e, "const long s0 = o0 * %lld - %lld;", LL(g->s[0]), LL(g->pb[0]));
  ec_line(e, "const long lo0 = s0 >= 0 ? 0 : (%lld - s0) / %lld;", LL(g->dil[0] - 1), LL(g->dil[0]));
  ec_line(e, "long hi0 = s0 >= %lld ? 0 : (%lld - s0) / %lld;", LL(g->in[0]),
          LL(g->in[0] + g->dil[0] - 1), LL(g->dil[0]));
  ec_line(e, "if (hi0 > %lld) hi0 = %lld;", LL(g->k[0]), LL(g->k[0]));
  ec_line(e, "if (hi0 < lo0) hi0 = lo0;");
  if (cip) {
    ec_line(e, "long cnt0 = (%lld - s0) / %lld;", LL(g->in[0] + g->pe[0] + g->dil[0] - 1),
            LL(g->dil[0]));
    ec_line(e, "if (cnt0 > %lld) cnt0 = %lld;", LL(g->k[0]), LL(g->k[0]));
  }
  ec_line(e, "%s *yr = y + o0 * %lld;", T, LL(OW));
  /* the border columns */
  ec_open_border(e, "o1", OW, a, b);
  ec_line(e, "const long s1 = o1 * %lld - %lld;", LL(S1), LL(P1));
  ec_line(e, "const long lo1 = s1 >= 0 ? 0 : (%lld - s1) / %lld;", LL(D1 - 1), LL(D1));
  ec_line(e, "long hi1 = s1 >= %lld ? 0 : (%lld - s1) / %lld;", LL(W), LL(W + D1 - 1), LL(D1));
  ec_line(e, "if (hi1 > %lld) hi1 = %lld;", LL(KW), LL(KW));
  ec_line(e, "if (hi1 < lo1) hi1 = lo1;");
  ec_line(e, "%s acc = %s;", T, init);
  ec_line(e, "for (long k0 = lo0; k0 < hi0; k0++) {");
  ec_line(e, "for (long k1 = lo1; k1 < hi1; k1++) {");
  ec_line(e, "const %s v = x[(s0 + k0 * %lld) * %lld + s1 + k1 * %lld];", T, LL(g->dil[0]), LL(W),
          LL(D1));
  ec_line(e, "%s", is_max ? "acc = v > acc ? v : acc;" : "acc += v;");
  ec_line(e, "}");
  ec_line(e, "}");
  if (is_max) {
    ec_line(e, "yr[o1] = acc;");
  } else if (cip) {
    ec_line(e, "long cnt1 = (%lld - s1) / %lld;", LL(W + g->pe[1] + D1 - 1), LL(D1));
    ec_line(e, "if (cnt1 > %lld) cnt1 = %lld;", LL(KW), LL(KW));
    ec_line(e, "yr[o1] = acc / (float)(cnt0 * cnt1);");
  } else {
    ec_line(e, "yr[o1] = acc / (float)((hi0 - lo0) * (hi1 - lo1));");
  }
  ec_line(e, "}");
  if (b > a) {
    /* the interior, 64 columns at a time, the taps of a row unrolled */
    ec_line(e, "for (long c0 = %lld; c0 < %lld; c0 += 64) {", LL(a), LL(b));
    ec_line(e, "const long nw = %lld - c0 < 64 ? %lld - c0 : 64;", LL(b), LL(b));
    ec_line(e, "%s acc[64];", T);
    ec_line(e, "for (long j = 0; j < nw; j++) acc[j] = %s;", init);
    ec_line(e, "for (long k0 = lo0; k0 < hi0; k0++) {");
    ec_line(e, "const %s *xr = x + (s0 + k0 * %lld) * %lld + c0 * %lld - %lld;", T, LL(g->dil[0]),
            LL(W), LL(S1), LL(P1));
    ec_line(e, "for (long j = 0; j < nw; j++) {");
    ec_line(e, "%s m = acc[j];", T);
    for (int64_t k = 0; k < KW; k++) {
      ec_line(e, "{");
      ec_line(e, "const %s v = xr[j * %lld + %lld];", T, LL(S1), LL(k * D1));
      ec_line(e, "%s", is_max ? "m = v > m ? v : m;" : "m += v;");
      ec_line(e, "}");
    }
    ec_line(e, "acc[j] = m;");
    ec_line(e, "}");
    ec_line(e, "}");
    if (is_max)
      ec_line(e, "for (long j = 0; j < nw; j++) yr[c0 + j] = acc[j];");
    else
      ec_line(e, "for (long j = 0; j < nw; j++) yr[c0 + j] = acc[j] / (float)(%s * %lld);",
              cip ? "cnt0" : "(hi0 - lo0)", LL(KW));
    ec_line(e, "}");
  }
  ec_line(e, "}"); /* o0 */
}

static bool emit_pool(EmitC *e, const Node *n, bool is_max) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  DType t = n->in[0]->dt;
  const char *T = dtype_ctype(t), *CT = ctype(t);
  int64_t ny;
  if (!shape_numel(ys, &ny) || ny == 0)
    return emit_nothing(e, n);
  Window g;
  window_read(n, xs, ys, NULL, &g);
  bool with_ix = is_max && ec_has_output(n, 1);
  bool col_major = ir_attr_int(n, "storage_order", 0) == 1;
  bool cip = !is_max && ir_attr_int(n, "count_include_pad", 0) == 1;
  int64_t taps = 1;
  for (int i = 0; i < g.r; i++)
    taps *= g.k[i];
  /* --threads: chunks of planes claimed by every thread when the cost pays */
  ec_open_items(e, "nc", xs->d[0] * xs->d[1], ec_cost(COST_DW_TAP, (double)ny * (double)taps));
  ec_line(e, "const %s *x = X0 + nc * %lld;", T, LL(g.in_plane));
  ec_line(e, "%s *y = Y0 + nc * %lld;", T, LL(g.out_plane));
  if (with_ix)
    ec_line(e, "int64_t *yi = Y1 + nc * %lld;", LL(g.out_plane));
  if (g.r == 2 && (t == DT_F32 || (is_max && (t == DT_U8 || t == DT_I8))) && !with_ix && g.k[1] <= 16) {
    emit_pool2d_plane(e, &g, is_max, cip, t);
    ec_line(e, "}");
    return true;
  }
  pool_open_outputs(e, &g, cip);
  ec_line(e, "%s acc = %s;", CT, is_max ? lowest(t) : "0");
  if (with_ix)
    ec_line(e, "long best = -1;");
  pool_open_taps(e, &g, t, col_major, with_ix);
  if (with_ix) {
    ec_line(e, "if (best < 0 || v > acc) {");
    ec_line(e, "acc = v;");
    ec_line(e, "best = ix;");
    ec_line(e, "}");
  } else if (is_max) {
    ec_line(e, "acc = v > acc ? v : acc;");
  } else {
    ec_line(e, "acc += v;");
  }
  for (int i = 0; i < g.r; i++)
    ec_line(e, "}");
  Buf oi;
  buf_init(&oi);
  out_index(&g, &oi);
  if (!is_max) {
    Buf cnt;
    buf_init(&cnt);
    for (int i = 0; i < g.r; i++) {
      if (cip)
        buf_printf(&cnt, "%scnt%d", i ? " * " : "", i);
      else
        buf_printf(&cnt, "%s(hi%d - lo%d)", i ? " * " : "", i, i);
    }
    ec_line(e, "acc /= (%s)(%s);", CT, cnt.s);
    buf_free(&cnt);
  }
  ec_line(e, "y[%s] = %s(acc);", oi.s, st(t));
  if (with_ix)
    ec_line(e, "yi[%s] = best < 0 ? -1 : nc * %lld + best;", oi.s, LL(g.in_plane));
  buf_free(&oi);
  for (int i = 0; i < g.r; i++)
    ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

bool emitc_MaxPool(EmitC *e, const Node *n) { return emit_pool(e, n, true); }

bool emitc_AveragePool(EmitC *e, const Node *n) { return emit_pool(e, n, false); }

/* ---- GlobalAveragePool, GlobalMaxPool ----------------------------------------------- */

static bool emit_global_pool(EmitC *e, const Node *n, bool is_max) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  const char *T = dtype_ctype(t), *CT = ctype(t);
  int64_t nx, nc = xs->d[0] * xs->d[1];
  if (!shape_numel(xs, &nx) || nx == 0)
    return emit_nothing(e, n);
  int64_t plane = nx / nc;
  ec_line(e, "for (long nc = 0; nc < %lld; nc++) {", LL(nc));
  ec_line(e, "const %s *x = X0 + nc * %lld;", T, LL(plane));
  ec_line(e, "%s acc = %s;", CT, is_max ? lowest(t) : "0");
  ec_line(e, "for (long i = 0; i < %lld; i++) {", LL(plane));
  ec_line(e, "const %s v = %s(x[i]);", CT, ld(t));
  ec_line(e, is_max ? "acc = v > acc ? v : acc;" : "acc += v;");
  ec_line(e, "}");
  if (!is_max)
    ec_line(e, "acc /= (%s)%lld;", CT, LL(plane));
  ec_line(e, "Y0[nc] = %s(acc);", st(t));
  ec_line(e, "}");
  return true;
}

bool emitc_GlobalAveragePool(EmitC *e, const Node *n) { return emit_global_pool(e, n, false); }

bool emitc_GlobalMaxPool(EmitC *e, const Node *n) { return emit_global_pool(e, n, true); }

/* Window geometry of a Conv-like node for other emitters (QLinearConv,
 * ConvInteger: emit_quant.c): per spatial dim the kernel extent, stride,
 * dilation and begin padding; `kernel` as for window_read. */
void ec_conv_window(const Node *n, const Shape *x, const Shape *y, const int64_t *kernel,
                    int64_t *k, int64_t *s, int64_t *dil, int64_t *pb) {
  Window g;
  window_read(n, x, y, kernel, &g);
  for (int i = 0; i < g.r; i++) {
    k[i] = g.k[i];
    s[i] = g.s[i];
    dil[i] = g.dil[i];
    pb[i] = g.pb[i];
  }
}
