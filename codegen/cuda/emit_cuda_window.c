/* emit_cuda_window.c - the CUDA target's sliding-window kernels: Conv
 * (direct, one thread per output element, any spatial rank, groups,
 * dilations, pads, a fused residual) and MaxPool / AveragePool (one thread
 * per output element, Indices too), from the window geometry the C target
 * reads too (codegen/window.c), and ConvTranspose (gathered, one thread per
 * output element). f32 and f64; anything else returns 0 and
 * gets the single-thread fallback. */
#include "cuda_emit.h"
#include "gemm.h"
#include "window.h"

#include <string.h>

#define LL(x) ((long long)(x))
#define EW_THREADS 256

/* ---- Conv -------------------------------------------------------------------------- */

/* Opens the grid-stride loop over the ny outputs of a window kernel (one
 * thread per output element) and unravels i into (nb, m, o0..o{r-1}). */
static void open_output_loop(CudaKernel *k, const Shape *ys, int r, int64_t ny) {
  k->block[0] = EW_THREADS;
  k->grid[0] = cuda_blocks_for(ny, EW_THREADS);
  ck_line(k, "ONNXC_CUDA_FOR(i, %lld) {", LL(ny));
  ck_line(k, "  int64_t rest = i;");
  for (int d = r - 1; d >= 0; d--) {
    ck_line(k, "  const int64_t o%d = rest %% %lld;", d, LL(ys->d[2 + d]));
    ck_line(k, "  rest /= %lld;", LL(ys->d[2 + d]));
  }
  ck_line(k, "  const int64_t m = rest %% %lld, nb = rest / %lld;", LL(ys->d[1]), LL(ys->d[1]));
}

int cuda_emit_conv(CudaKernel *k, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ws = &n->in[1]->shape, *ys = &n->out[0]->shape;
  DType t = n->in[0]->dt;
  int64_t ny;
  if ((t != DT_F32 && t != DT_F64) || !shape_numel(ys, &ny) || ny == 0 || xs->rank < 3)
    return 0;
  Window w;
  window_read(n, xs, ys, &ws->d[2], &w);
  int r = w.r;
  const int64_t *kk = w.k, *s = w.s, *dil = w.dil, *pb = w.pb;
  int64_t group = ir_attr_int(n, "group", 1), cg = ws->d[1], mg = ys->d[1] / group;
  const char *ct = dtype_ctype(t);
  ck_open(k, "Conv: direct, one thread per output element");
  open_output_loop(k, ys, r, ny);
  ck_line(k, "  const int64_t g = m / %lld;", LL(mg));
  ck_line(k, "  %s acc = %s;", ct, ir_has_input(n, 2) ? "X2[m]" : "0");
  ck_line(k, "  for (int64_t c = 0; c < %lld; c++) {", LL(cg));
  int64_t xplane = 1;
  for (int d = 0; d < r; d++)
    xplane *= xs->d[2 + d];
  ck_line(k, "    const %s *xp = X0 + (nb * %lld + g * %lld + c) * %lld;", ct, LL(xs->d[1]), LL(cg), LL(xplane));
  int64_t wplane = 1;
  for (int d = 0; d < r; d++)
    wplane *= kk[d];
  ck_line(k, "    const %s *wp = X1 + (m * %lld + c) * %lld;", ct, LL(cg), LL(wplane));
  Buf xi, wi;
  buf_init(&xi);
  buf_init(&wi);
  for (int d = 0; d < r; d++) {
    int ind = 4 + 2 * d;
    ck_line(k, "%*sfor (int64_t k%d = 0; k%d < %lld; k%d++) {", ind, "", d, d, LL(kk[d]), d);
    ck_line(k, "%*s  const int64_t x%d = o%d * %lld + k%d * %lld - %lld;", ind, "", d, d, LL(s[d]), d, LL(dil[d]),
          LL(pb[d]));
    ck_line(k, "%*s  if (x%d < 0 || x%d >= %lld) continue;", ind, "", d, d, LL(xs->d[2 + d]));
    if (d == 0) {
      buf_printf(&xi, "x0");
      buf_printf(&wi, "k0");
    } else {
      Buf t2;
      buf_init(&t2);
      buf_printf(&t2, "(%s) * %lld + x%d", xi.s, LL(xs->d[2 + d]), d);
      buf_free(&xi);
      xi = t2;
      buf_init(&t2);
      buf_printf(&t2, "(%s) * %lld + k%d", wi.s, LL(kk[d]), d);
      buf_free(&wi);
      wi = t2;
    }
  }
  ck_line(k, "%*sacc += xp[%s] * wp[%s];", 6 + 2 * (r - 1), "", xi.s, wi.s);
  for (int d = r - 1; d >= 0; d--)
    ck_line(k, "%*s}", 4 + 2 * d, "");
  ck_line(k, "  }");
  if (ir_has_input(n, 3)) /* a residual fused by passes/fuse_epilogue.c: of the output's shape, before the activation */
    ck_line(k, "  acc += X3[i];");
  Buf act; /* the fused activation, if any (passes/fuse_epilogue.c) */
  buf_init(&act);
  gemm_act_expr(n, "acc", &act);
  ck_line(k, "  Y0[i] = %s;", act.s);
  buf_free(&act);
  ck_line(k, "}");
  ck_close(k);
  buf_free(&xi);
  buf_free(&wi);
  return 1;
}

/* ---- ConvTranspose ----------------------------------------------------------------- */

/* One thread per output element, gathering: output o along an axis takes
 * tap k from input (o + pb - k * d) / s where that divides exactly and lies
 * inside the input (window_read_convt, as the C target's scatter loop);
 * groups, dilations, strides, output_shape / auto_pad pads, any spatial
 * rank. Weights [C, M/group, k...]. */
int cuda_emit_convt(CudaKernel *k, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ws = &n->in[1]->shape, *ys = &n->out[0]->shape;
  DType t = n->in[0]->dt;
  int64_t ny;
  if ((t != DT_F32 && t != DT_F64) || !shape_numel(ys, &ny) || ny == 0 || xs->rank < 3)
    return 0;
  Window w;
  window_read_convt(n, xs, ws, ys, &w);
  int r = w.r;
  int64_t group = ir_attr_int(n, "group", 1), cg = xs->d[1] / group, mg = ws->d[1], taps = 1;
  for (int d = 0; d < r; d++)
    taps *= w.k[d];
  const char *ct = dtype_ctype(t);
  ck_open(k, "ConvTranspose: gathered, one thread per output element");
  open_output_loop(k, ys, r, ny);
  ck_line(k, "  const int64_t g = m / %lld, ml = m %% %lld;", LL(mg), LL(mg));
  ck_line(k, "  %s acc = %s;", ct, ir_has_input(n, 2) ? "X2[m]" : "0");
  ck_line(k, "  for (int64_t c = 0; c < %lld; c++) {", LL(cg));
  ck_line(k, "    const %s *xp = X0 + (nb * %lld + g * %lld + c) * %lld;", ct, LL(xs->d[1]), LL(cg), LL(w.in_plane));
  ck_line(k, "    const %s *wp = X1 + ((g * %lld + c) * %lld + ml) * %lld;", ct, LL(cg), LL(mg), LL(taps));
  Buf xi, wi;
  buf_init(&xi);
  buf_init(&wi);
  for (int d = 0; d < r; d++) {
    int ind = 4 + 2 * d;
    ck_line(k, "%*sfor (int64_t k%d = 0; k%d < %lld; k%d++) {", ind, "", d, d, LL(w.k[d]), d);
    ck_line(k, "%*s  const int64_t t%d = o%d + %lld - k%d * %lld;", ind, "", d, d, LL(w.pb[d]), d, LL(w.dil[d]));
    if (w.s[d] == 1)
      ck_line(k, "%*s  if (t%d < 0 || t%d >= %lld) continue;", ind, "", d, d, LL(w.in[d]));
    else
      ck_line(k, "%*s  if (t%d < 0 || t%d %% %lld != 0 || t%d / %lld >= %lld) continue;", ind, "", d, d,
              LL(w.s[d]), d, LL(w.s[d]), LL(w.in[d]));
    ck_line(k, "%*s  const int64_t x%d = t%d / %lld;", ind, "", d, d, LL(w.s[d]));
    if (d == 0) {
      buf_printf(&xi, "x0");
      buf_printf(&wi, "k0");
    } else {
      Buf t2;
      buf_init(&t2);
      buf_printf(&t2, "(%s) * %lld + x%d", xi.s, LL(w.in[d]), d);
      buf_free(&xi);
      xi = t2;
      buf_init(&t2);
      buf_printf(&t2, "(%s) * %lld + k%d", wi.s, LL(w.k[d]), d);
      buf_free(&wi);
      wi = t2;
    }
  }
  ck_line(k, "%*sacc += xp[%s] * wp[%s];", 6 + 2 * (r - 1), "", xi.s, wi.s);
  for (int d = r - 1; d >= 0; d--)
    ck_line(k, "%*s}", 4 + 2 * d, "");
  ck_line(k, "  }");
  ck_line(k, "  Y0[i] = acc;");
  ck_line(k, "}");
  ck_close(k);
  buf_free(&xi);
  buf_free(&wi);
  return 1;
}

/* ---- MaxPool, AveragePool ------------------------------------------------------------ */

/* One thread per output element; per spatial dim the in-bounds tap range
 * [lo, hi) and, for count_include_pad, the taps before the end of the padding
 * (cnt), as the C target computes them (emit_conv.c), so the two targets sum
 * the same taps in the same order. A window over padding only gives the
 * lowest finite value (MaxPool) as ONNX Runtime does. MaxPool's Indices:
 * the flat input offset, row-major or (storage_order 1) column-major inside
 * the plane. */
int cuda_emit_pool(CudaKernel *k, const Node *n, bool is_max) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  DType t = n->in[0]->dt;
  int64_t ny;
  if ((t != DT_F32 && t != DT_F64) || !shape_numel(ys, &ny) || ny == 0 || xs->rank < 3)
    return 0;
  Window w;
  window_read(n, xs, ys, NULL, &w);
  bool with_ix = is_max && ec_has_output(n, 1);
  bool col_major = ir_attr_int(n, "storage_order", 0) == 1;
  bool cip = !is_max && ir_attr_int(n, "count_include_pad", 0) == 1;
  const char *ct = dtype_ctype(t);
  const char *lowest = t == DT_F64 ? "(-1.7976931348623157e+308)" : "(-3.40282347e+38f)";
  ck_open(k, is_max ? "MaxPool: one thread per output element" : "AveragePool: one thread per output element");
  k->block[0] = EW_THREADS;
  k->grid[0] = cuda_blocks_for(ny, EW_THREADS);
  ck_line(k, "ONNXC_CUDA_FOR(i, %lld) {", LL(ny));
  ck_line(k, "  int64_t rest = i;");
  for (int d = w.r - 1; d >= 0; d--) {
    ck_line(k, "  const int64_t o%d = rest %% %lld;", d, LL(w.out[d]));
    ck_line(k, "  rest /= %lld;", LL(w.out[d]));
  }
  ck_line(k, "  const %s *x = X0 + rest * %lld;", ct, LL(w.in_plane));
  Buf rm, cm, cnt;
  buf_init(&rm);
  buf_init(&cm);
  buf_init(&cnt);
  int64_t below = 1;
  for (int d = 0; d < w.r; d++) {
    int64_t s = w.s[d], dl = w.dil[d], kk = w.k[d], in = w.in[d];
    ck_line(k, "  const int64_t s%d = o%d * %lld - %lld;", d, d, LL(s), LL(w.pb[d]));
    ck_line(k, "  const int64_t lo%d = s%d >= 0 ? 0 : (%lld - s%d) / %lld;", d, d, LL(dl - 1), d, LL(dl));
    ck_line(k, "  int64_t hi%d = s%d >= %lld ? 0 : (%lld - s%d) / %lld;", d, d, LL(in), LL(in + dl - 1), d, LL(dl));
    ck_line(k, "  if (hi%d > %lld) hi%d = %lld;", d, LL(kk), d, LL(kk));
    ck_line(k, "  if (hi%d < lo%d) hi%d = lo%d;", d, d, d, d);
    if (cip) {
      ck_line(k, "  int64_t cnt%d = (%lld - s%d) / %lld;", d, LL(in + w.pe[d] + dl - 1), d, LL(dl));
      ck_line(k, "  if (cnt%d > %lld) cnt%d = %lld;", d, LL(kk), d, LL(kk));
      buf_printf(&cnt, "%scnt%d", d ? " * " : "", d);
    } else {
      buf_printf(&cnt, "%s(hi%d - lo%d)", d ? " * " : "", d, d);
    }
    if (d == 0)
      buf_printf(&rm, "i0");
    else {
      Buf t2;
      buf_init(&t2);
      buf_printf(&t2, "(%s) * %lld + i%d", rm.s, LL(in), d);
      buf_free(&rm);
      rm = t2;
    }
    buf_printf(&cm, "%si%d * %lld", d ? " + " : "", d, LL(below));
    below *= in;
  }
  ck_line(k, "  %s acc = %s;", ct, is_max ? lowest : "0");
  if (with_ix)
    ck_line(k, "  int64_t best = -1;");
  for (int d = 0; d < w.r; d++) {
    ck_line(k, "%*sfor (int64_t k%d = lo%d; k%d < hi%d; k%d++) {", 2 + 2 * d, "", d, d, d, d, d);
    ck_line(k, "%*s  const int64_t i%d = s%d + k%d * %lld;", 2 + 2 * d, "", d, d, d, LL(w.dil[d]));
  }
  int ind = 2 + 2 * w.r;
  ck_line(k, "%*sconst %s v = x[%s];", ind, "", ct, rm.s);
  if (with_ix) {
    ck_line(k, "%*sif (best < 0 || v > acc) {", ind, "");
    ck_line(k, "%*s  acc = v;", ind, "");
    ck_line(k, "%*s  best = %s;", ind, "", col_major ? cm.s : rm.s);
    ck_line(k, "%*s}", ind, "");
  } else {
    ck_line(k, "%*s%s", ind, "", is_max ? "acc = v > acc ? v : acc;" : "acc += v;");
  }
  for (int d = w.r - 1; d >= 0; d--)
    ck_line(k, "%*s}", 2 + 2 * d, "");
  if (!is_max)
    ck_line(k, "  acc /= (%s)(%s);", ct, cnt.s);
  ck_line(k, "  Y0[i] = acc;");
  if (with_ix)
    ck_line(k, "  Y1[i] = best < 0 ? -1 : rest * %lld + best;", LL(w.in_plane));
  ck_line(k, "}");
  ck_close(k);
  buf_free(&rm);
  buf_free(&cm);
  buf_free(&cnt);
  return 1;
}
