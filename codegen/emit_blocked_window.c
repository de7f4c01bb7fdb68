/* emit_blocked_window.c - depthwise convs and pools on channel-blocked
 * tensors (NCHW16c, docs/layout.md): per output row, the window rows inside
 * the image are a loop and the row is cut into strips of registers (below);
 * a row the strips do not suit takes the per-pixel path. Group-1 convs, the
 * conversions and the dispatch: emit_blocked.c.
 */
#include "blocked_internal.h"
#include "window.h"

#include <string.h>

/* Depthwise output rows in strips of at most DW_STRIP pixels: a strip's sums
 * stay in registers (one vector per pixel), every tap one unrolled
 * multiply-add, the window rows inside the image (k0 .. k1, the row's) a
 * loop. The strips at the row's ends know at compile time which window
 * columns of each pixel fall inside the image, so the border has no code of
 * its own; the strips between them (every tap inside) are one loop over a
 * base offset. MobileNetV2's 960-channel 7x7 depthwise convs took 88 us
 * through an interior / border split per pixel (of 7 columns, 2 are border
 * columns), ONNX Runtime 30 us. Each pixel's sum: bias, then the taps in
 * (row, column) order, as the interior / border path computes it. */
#define DW_STRIP 14

static void strip_act(EmitC *e, int act, const char *v, const char *lo, const char *hi, int vec) {
  if (vec) {
    const char *p = vec == 1 ? "_mm256" : "_mm512"; /* AVX2 / AVX-512 */
    if (act == 1)
      ec_line(e, "%s = %s_max_ps(%s, %s_setzero_ps());", v, p, v, p);
    else if (act == 2)
      ec_line(e, "%s = %s_min_ps(%s_set1_ps(%s), %s_max_ps(%s_set1_ps(%s), %s));", v, p, p, hi, p, p, lo, v);
    else if (act == 3 && vec == 1) /* no masks on AVX2: a blend */
      ec_line(e, "%s = _mm256_blendv_ps(%s, _mm256_mul_ps(%s, _mm256_set1_ps(%s)), _mm256_cmp_ps(%s, "
                 "_mm256_setzero_ps(), _CMP_NGE_UQ));", v, v, v, lo, v);
    else if (act == 3)
      ec_line(e, "%s = _mm512_mask_mul_ps(%s, _mm512_cmp_ps_mask(%s, _mm512_setzero_ps(), _CMP_NGE_UQ), %s, "
                 "_mm512_set1_ps(%s));", v, v, v, v, lo);
  } else {
    if (act == 1)
      ec_line(e, "%s = %s > 0 ? %s : 0.0f;", v, v, v);
    else if (act == 2)
      ec_line(e, "%s = (%s < %s ? %s : %s) > %s ? %s : (%s < %s ? %s : %s);", v, v, lo, lo, v, hi, hi, v, lo, lo, v);
    else if (act == 3)
      ec_line(e, "%s = %s >= 0 ? %s : %s * %s;", v, v, v, v, lo);
  }
}

/* What a strip computes: a depthwise conv (mode 0: bias + sum of x * w), a
 * MaxPool (1) or an AveragePool (2: the sum over the taps inside, divided by
 * their count, or with count_include_pad by the window's extent inside the
 * padded map, pe the end padding of the row). */
typedef struct StripOp {
  int mode;
  bool cip;
  int64_t pe;
} StripOp;

/* One strip of nw pixels: columns ox0 .. ox0 + nw - 1 of the row at xr / yr
 * (ox0 >= 0: a constant, taps outside the image left out), or (ox0 < 0)
 * columns st * DW_STRIP + o of the loop's strip st, every tap inside. */
static void emit_dw_strip(EmitC *e, const StripOp *op, int64_t W, int64_t ox0, int64_t nw, const int64_t *k,
                          const int64_t *s, const int64_t *dl, int64_t pl, int act, const char *lo, const char *hi) {
  int64_t dh = dl[0] * W * LANES, wrow = k[1] * LANES;
  bool maxp = op->mode == 1, avgp = op->mode == 2, pool = op->mode != 0;
  bool rel = ox0 < 0;
  int64_t base = rel ? 0 : ox0;
  ec_line(e, "{");
  if (rel)
    ec_line(e, "const float *xs = xr + st * %lld;", LL(DW_STRIP * s[1] * LANES));
  else
    ec_line(e, "const float *xs = xr;");
  if (rel)
    ec_line(e, "float *ys = yr + st * %lld;", LL(DW_STRIP * LANES));
  else
    ec_line(e, "float *ys = yr;");
  /* vec 2: AVX-512, a vector per pixel; 1: AVX2, the strip run twice, on
   * lanes q .. q + 7 (a vector per pixel; the weights as memory operands); 0:
   * portable loops */
  for (int vec = 2; vec >= 0; vec--) {
    ec_line(e, vec == 2 ? "#if defined(__AVX512F__)" : vec ? "#elif defined(__AVX2__) && defined(__FMA__)" : "#else");
    const char *P = vec == 2 ? "_mm512_" : "_mm256_", *T = vec == 2 ? "__m512" : "__m256", *Q = vec == 1 ? " + q" : "";
    ec_line(e, vec == 1 ? "for (int q = 0; q < %d; q += 8) {" : "{", LANES);
    /* pools start as the per-pixel path does */
    const char *init = maxp ? "-3.40282347e+38f" : avgp ? "0.0f" : NULL;
    for (int64_t o = 0; o < nw; o++) {
      if (vec && init)
        ec_line(e, "%s c%lld = %sset1_ps(%s);", T, LL(o), P, init);
      else if (vec)
        ec_line(e, "%s c%lld = %sloadu_ps(bias%s);", T, LL(o), P, Q);
      else
        ec_line(e, "float c%lld[%d];", LL(o), LANES);
    }
    for (int64_t o = 0; !vec && o < nw; o++)
      ec_line(e, "for (int l = 0; l < %d; l++) c%lld[l] = %s;", LANES, LL(o), init ? init : "bias[l]");
    /* a strip whose pixels all read only padding (a window wider than a
     * narrow map) keeps its starting sums: its loop reads nothing */
    bool any = rel;
    for (int64_t o = 0; o < nw && !any; o++)
      for (int64_t j = 0; j < k[1] && !any; j++) {
        int64_t c = (base + o) * s[1] - pl + j * dl[1];
        any = c >= 0 && c < W;
      }
    ec_line(e, "for (long i = 0; i < k1 - k0; i++) {");
    if (pool)
      ec_line(e, "const float *xi = xs + i * %lld;", LL(dh));
    else
      ec_line(e, "const float *xi = xs + i * %lld, *wi = w + i * %lld;", LL(dh), LL(wrow));
    if (!any)
      ec_line(e, "(void)xi;");
    if (!any && !pool)
      ec_line(e, "(void)wi;");
    for (int64_t j = 0; vec && !pool && j < k[1]; j++) { /* the window columns some pixel reads */
      bool used = rel;
      for (int64_t o = 0; o < nw && !used; o++) {
        int64_t c = (base + o) * s[1] - pl + j * dl[1];
        used = c >= 0 && c < W;
      }
      if (used)
        ec_line(e, "const %s w%lld = %sloadu_ps(wi + %lld%s);", T, LL(j), P, LL(j * LANES), Q);
    }
    for (int64_t o = 0; o < nw; o++) {
      for (int64_t j = 0; j < k[1]; j++) {
        int64_t c = (base + o) * s[1] - pl + j * dl[1];
        if (!rel && (c < 0 || c >= W))
          continue;
        if (vec && maxp) /* max_ps(x, c): x > c ? x : c, as the per-pixel path (NaN: c) */
          ec_line(e, "c%lld = %smax_ps(%sloadu_ps(xi + %lld%s), c%lld);", LL(o), P, P, LL(c * LANES), Q, LL(o));
        else if (maxp)
          ec_line(e, "for (int l = 0; l < %d; l++) c%lld[l] = xi[%lld + l] > c%lld[l] ? xi[%lld + l] : c%lld[l];",
                  LANES, LL(o), LL(c * LANES), LL(o), LL(c * LANES), LL(o));
        else if (vec && avgp)
          ec_line(e, "c%lld = %sadd_ps(c%lld, %sloadu_ps(xi + %lld%s));", LL(o), P, LL(o), P, LL(c * LANES), Q);
        else if (avgp)
          ec_line(e, "for (int l = 0; l < %d; l++) c%lld[l] += xi[%lld + l];", LANES, LL(o), LL(c * LANES));
        else if (vec)
          ec_line(e, "c%lld = %sfmadd_ps(%sloadu_ps(xi + %lld%s), w%lld, c%lld);", LL(o), P, P, LL(c * LANES), Q,
                  LL(j), LL(o));
        else
          ec_line(e, "for (int l = 0; l < %d; l++) c%lld[l] = ONNXC_FMAF(xi[%lld + l], wi[%lld + l], c%lld[l]);",
                  LANES, LL(o), LL(c * LANES), LL(j * LANES), LL(o));
      }
    }
    ec_line(e, "}");
    for (int64_t o = 0; o < nw; o++) {
      char v[32], div[96] = "";
      if (avgp) { /* the divisor, as the per-pixel path computes it */
        int64_t s1 = (base + o) * s[1] - pl, cols = 0;
        for (int64_t j = 0; j < k[1]; j++)
          cols += rel || (s1 + j * dl[1] >= 0 && s1 + j * dl[1] < W);
        if (op->cip && !rel) {
          int64_t c1 = (W + op->pe + dl[1] - 1 - s1) / dl[1];
          cols = c1 < k[1] ? c1 : k[1];
        }
        snprintf(div, sizeof div, "(float)(%s * %lld)", op->cip ? "cnt0" : "(k1 - k0)", LL(cols));
      }
      if (vec && avgp)
        ec_line(e, "c%lld = %sdiv_ps(c%lld, %sset1_ps(%s));", LL(o), P, LL(o), P, div);
      if (vec) {
        snprintf(v, sizeof v, "c%lld", LL(o));
        strip_act(e, act, v, lo, hi, vec);
        ec_line(e, "%sstoreu_ps(ys + %lld%s, c%lld);", P, LL((base + o) * LANES), Q, LL(o));
      } else {
        ec_line(e, "for (int l = 0; l < %d; l++) {", LANES);
        ec_line(e, "float v = c%lld[l]%s%s;", LL(o), avgp ? " / " : "", div);
        strip_act(e, act, "v", lo, hi, 0);
        ec_line(e, "ys[%lld + l] = v;", LL((base + o) * LANES));
        ec_line(e, "}");
      }
    }
    ec_line(e, "}");
  }
  ec_line(e, "#endif");
  ec_line(e, "}");
}

/* Whether a row of OW outputs (window kw wide, [a, b) its interior columns)
 * takes the strips: the window's columns and a strip's sums fit in the
 * registers, and at most four strips need code of their own (a window wider
 * than the map would unroll every strip). */
static bool strips_fit(int64_t OW, int64_t kw, int64_t a, int64_t b) {
  int64_t nst = (OW + DW_STRIP - 1) / DW_STRIP, special = 0;
  for (int64_t st = 0; st < nst; st++)
    special += !(st * DW_STRIP >= a && (st + 1) * DW_STRIP <= b && (st + 1) * DW_STRIP <= OW);
  return DW_STRIP + kw <= 28 && special <= 4;
}

/* The output row in strips: [a, b) are the columns whose window lies inside
 * the image (window_interior); the strips wholly inside it run as one loop. */
static void emit_dw_strips(EmitC *e, const StripOp *op, int64_t W, int64_t OW, int64_t a, int64_t b, const int64_t *k,
                           const int64_t *s, const int64_t *dl, int64_t pl, int act, const char *lo,
                           const char *hi) {
  int64_t nst = (OW + DW_STRIP - 1) / DW_STRIP;
  for (int64_t st = 0; st < nst;) {
    int64_t x0 = st * DW_STRIP, nw = OW - x0 < DW_STRIP ? OW - x0 : DW_STRIP;
    int64_t run = 0; /* full interior strips from st on */
    while (st + run < nst && (st + run) * DW_STRIP >= a && (st + run + 1) * DW_STRIP <= b &&
           (st + run + 1) * DW_STRIP <= OW)
      run++;
    if (run >= 2) {
      ec_line(e, "for (long st = %lld; st < %lld; st++)", LL(st), LL(st + run));
      emit_dw_strip(e, op, W, -1, DW_STRIP, k, s, dl, pl, act, lo, hi);
      st += run;
    } else {
      emit_dw_strip(e, op, W, x0, nw, k, s, dl, pl, act, lo, hi);
      st++;
    }
  }
}

/* Depthwise: per (image, block, output row), the taps of the window rows
 * inside the image (the others read the zero padding); the row in register
 * strips where they fit (strips_fit), else the columns whose window lies
 * inside the row go to the vector row kernel (four pixels at a time) and the
 * border columns take the taps inside the row one pixel at a time. The padding is the node's own (onnxc.pads: top, left, bottom, right),
 * so nothing is copied. */
bool blocked_emit_dw(EmitC *e, const Node *n) {
  const Shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  int64_t k[2], s[2], dl[2], pd[4] = {0, 0, 0, 0};
  blocked_window_of(n, k, s, dl);
  int np = 0;
  const int64_t *pp = ir_attr_ints(n, "onnxc.pads", &np);
  for (int i = 0; pp && i < 4 && np == 4; i++)
    pd[i] = pp[i];
  int64_t N = x->d[0], CB = (x->d[1] + LANES - 1) / LANES, H = x->d[2], W = x->d[3], OH = y->d[2], OW = y->d[3];
  int64_t T = k[0] * k[1];
  char lo[64], hi[64];
  int act = blocked_act_code(n, lo, hi, sizeof lo);
  int64_t a, b;
  window_interior(W, OW, k[1], s[1], dl[1], pd[1], &a, &b);
  int64_t rows = N * CB * OH;
  ec_line(e, "/* depthwise conv on NCHW16c: %lldx%lld window, stride %lldx%lld, pads %lld,%lld,%lld,%lld */",
          LL(k[0]), LL(k[1]), LL(s[0]), LL(s[1]), LL(pd[0]), LL(pd[1]), LL(pd[2]), LL(pd[3]));
  ec_open_items(e, "r", rows, ec_cost(COST_DW_TAP, (double)(rows * OW * T * LANES)));
  ec_line(e, "const long plane = r / %lld, oy = r %% %lld, cb = plane %% %lld;", LL(OH), LL(OH), LL(CB));
  ec_line(e, "const long iy = oy * %lld - %lld;", LL(s[0]), LL(pd[0]));
  /* window rows inside the image: iy + kh * d in [0, H) */
  ec_line(e, "long k0 = iy >= 0 ? 0 : (%lld - iy) / %lld, k1 = iy >= %lld ? 0 : (%lld - iy) / %lld;",
          LL(dl[0] - 1), LL(dl[0]), LL(H), LL(H + dl[0] - 1), LL(dl[0]));
  ec_line(e, "if (k1 > %lld) k1 = %lld;", LL(k[0]), LL(k[0]));
  ec_line(e, "if (k1 < k0) k1 = k0;");
  ec_line(e, "const float *xr = X0 + (plane * %lld + iy + k0 * %lld) * %lld;", LL(H), LL(dl[0]), LL(W * LANES));
  ec_line(e, "const float *w = X1 + cb * %lld + k0 * %lld, *bias = X2 + cb * %d;", LL(T * LANES),
          LL(k[1] * LANES), LANES);
  ec_line(e, "float *yr = Y0 + r * %lld;", LL(OW * LANES));
  const char *hi_or = act == 2 ? hi : "0.0f";
  /* strips of registers: each pixel's sum and its window's weight columns
   * at once */
  bool small = strips_fit(OW, k[1], a, b);
  if (small) {
    StripOp op = {0, false, 0};
    emit_dw_strips(e, &op, W, OW, a, b, k, s, dl, pd[1], act, lo, hi);
  } else if (b > a) {
    ec_line(e, "const float *xa = xr + %lld;", LL((a * s[1] - pd[1]) * LANES));
    if (k[0] == 3 && k[1] == 3) {
      ec_line(e, "if (k1 - k0 == 3)");
      ec_line(e, "onnxc_bdw_33(xa, %lld, %lld, %lld, w, bias, yr + %lld, %lld, %d, %s, %s);", LL(s[1] * LANES),
              LL(dl[0] * W * LANES), LL(dl[1] * LANES), LL(a * LANES), LL(b - a), act, lo, hi_or);
      ec_line(e, "else");
    }
    ec_line(e, "onnxc_bdw(xa, %lld, %lld, %lld, w, bias, yr + %lld, %lld, (int)(k1 - k0), %lld, %d, %s, %s);",
            LL(s[1] * LANES), LL(dl[0] * W * LANES), LL(dl[1] * LANES), LL(a * LANES), LL(b - a), LL(k[1]), act, lo,
            hi_or);
  }
  if (!small && (a > 0 || b < OW)) {
    /* the border columns */
    ec_open_border(e, "ox", OW, a, b);
    ec_line(e, "const long ix = ox * %lld - %lld;", LL(s[1]), LL(pd[1]));
    ec_line(e, "long j0 = ix >= 0 ? 0 : (%lld - ix) / %lld, j1 = ix >= %lld ? 0 : (%lld - ix) / %lld;",
            LL(dl[1] - 1), LL(dl[1]), LL(W), LL(W + dl[1] - 1), LL(dl[1]));
    ec_line(e, "if (j1 > %lld) j1 = %lld;", LL(k[1]), LL(k[1]));
    ec_line(e, "float acc[%d];", LANES);
    ec_line(e, "for (long l = 0; l < %d; l++) acc[l] = bias[l];", LANES);
    ec_line(e, "for (long i = 0; i < k1 - k0; i++) {");
    ec_line(e, "for (long j = j0; j < j1; j++) {");
    ec_line(e, "const float *xv = xr + (i * %lld + ix + j * %lld) * %d, *wv = w + (i * %lld + j) * %d;",
            LL(dl[0] * W), LL(dl[1]), LANES, LL(k[1]), LANES);
    ec_line(e, "for (long l = 0; l < %d; l++) acc[l] = ONNXC_FMAF(xv[l], wv[l], acc[l]);", LANES);
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "for (long l = 0; l < %d; l++) {", LANES);
    ec_line(e, "float v = acc[l];");
    strip_act(e, act, "v", lo, hi, 0);
    ec_line(e, "yr[ox * %d + l] = v;", LANES);
    ec_line(e, "}");
    ec_line(e, "}");
  }
  if (ir_attr(n, "epilogue")) {
    if (x->d[1] % LANES)
      ec_line(e, "const long real = %lld - cb * %d < %d ? %lld - cb * %d : %d;", LL(x->d[1]), LANES, LANES,
              LL(x->d[1]), LANES, LANES);
    ec_line(e, "{");
    blocked_epilogue(e, n, "yr", arena_printf(e->g->arena, "yr + i * %d", LANES),
                  arena_printf(e->g->arena, "%lld", LL(OW)), x->d[1] % LANES ? "real" : NULL);
    ec_line(e, "}");
  }
  ec_line(e, "}");
  return true;
}

/* ---- pools ------------------------------------------------------------------------------- */

/* MaxPool / AveragePool on a blocked tensor: the register strips where they
 * fit, else the window code of the row-major pool (emit_conv.c) per pixel,
 * over 16 lanes at a time. */
bool blocked_emit_pool(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  bool is_max = n->op == OP_MaxPool, cip = ir_attr_int(n, "count_include_pad", 0) != 0;
  Window g;
  window_read(n, xs, ys, NULL, &g);
  IR_ASSERT(g.r == 2);
  int64_t N = xs->d[0], CB = (xs->d[1] + LANES - 1) / LANES, H = g.in[0], W = g.in[1], OH = g.out[0],
          OW = g.out[1];
  int64_t rows = N * CB * OH;
  ec_open_items(e, "r", rows, ec_cost(COST_DW_TAP, (double)(rows * OW * g.k[0] * g.k[1] * LANES)));
  ec_line(e, "const long plane = r / %lld, o0 = r %% %lld;", LL(OH), LL(OH));
  ec_line(e, "const float *x = X0 + plane * %lld;", LL(H * W * LANES));
  ec_line(e, "float *yr = Y0 + r * %lld;", LL(OW * LANES));
  ec_line(e, "const long s0 = o0 * %lld - %lld;", LL(g.s[0]), LL(g.pb[0]));
  ec_line(e, "const long lo0 = s0 >= 0 ? 0 : (%lld - s0) / %lld;", LL(g.dil[0] - 1), LL(g.dil[0]));
  ec_line(e, "long hi0 = s0 >= %lld ? 0 : (%lld - s0) / %lld;", LL(H), LL(H + g.dil[0] - 1), LL(g.dil[0]));
  ec_line(e, "if (hi0 > %lld) hi0 = %lld;", LL(g.k[0]), LL(g.k[0]));
  ec_line(e, "if (hi0 < lo0) hi0 = lo0;");
  if (cip) {
    ec_line(e, "long cnt0 = (%lld - s0) / %lld;", LL(H + g.pe[0] + g.dil[0] - 1), LL(g.dil[0]));
    ec_line(e, "if (cnt0 > %lld) cnt0 = %lld;", LL(g.k[0]), LL(g.k[0]));
  }
  int64_t a, b;
  window_interior(W, OW, g.k[1], g.s[1], g.dil[1], g.pb[1], &a, &b);
  if (strips_fit(OW, g.k[1], a, b)) { /* strips of registers, as the depthwise convs */
    int64_t kk[2] = {g.k[0], g.k[1]}, ss[2] = {g.s[0], g.s[1]}, dd[2] = {g.dil[0], g.dil[1]};
    ec_line(e, "const long k0 = lo0, k1 = hi0;");
    ec_line(e, "const float *xr = x + (s0 + lo0 * %lld) * %lld;", LL(g.dil[0]), LL(W * LANES));
    StripOp op = {is_max ? 1 : 2, cip, g.pe[1]};
    emit_dw_strips(e, &op, W, OW, a, b, kk, ss, dd, g.pb[1], 0, "0.0f", "0.0f");
    ec_line(e, "}");
    return true;
  }
  ec_line(e, "for (long o1 = 0; o1 < %lld; o1++) {", LL(OW));
  ec_line(e, "const long s1 = o1 * %lld - %lld;", LL(g.s[1]), LL(g.pb[1]));
  ec_line(e, "const long lo1 = s1 >= 0 ? 0 : (%lld - s1) / %lld;", LL(g.dil[1] - 1), LL(g.dil[1]));
  ec_line(e, "long hi1 = s1 >= %lld ? 0 : (%lld - s1) / %lld;", LL(W), LL(W + g.dil[1] - 1), LL(g.dil[1]));
  ec_line(e, "if (hi1 > %lld) hi1 = %lld;", LL(g.k[1]), LL(g.k[1]));
  ec_line(e, "if (hi1 < lo1) hi1 = lo1;");
  ec_line(e, "float acc[%d];", LANES);
  ec_line(e, "for (long l = 0; l < %d; l++) acc[l] = %s;", LANES, is_max ? "(-3.40282347e+38f)" : "0");
  ec_line(e, "for (long k0 = lo0; k0 < hi0; k0++) {");
  ec_line(e, "for (long k1 = lo1; k1 < hi1; k1++) {");
  ec_line(e, "const float *xv = x + ((s0 + k0 * %lld) * %lld + s1 + k1 * %lld) * %d;", LL(g.dil[0]), LL(W),
          LL(g.dil[1]), LANES);
  ec_line(e, "for (long l = 0; l < %d; l++) %s;", LANES,
          is_max ? "acc[l] = xv[l] > acc[l] ? xv[l] : acc[l]" : "acc[l] += xv[l]");
  ec_line(e, "}");
  ec_line(e, "}");
  if (is_max) {
    ec_line(e, "for (long l = 0; l < %d; l++) yr[o1 * %d + l] = acc[l];", LANES, LANES);
  } else if (cip) {
    ec_line(e, "long cnt1 = (%lld - s1) / %lld;", LL(W + g.pe[1] + g.dil[1] - 1), LL(g.dil[1]));
    ec_line(e, "if (cnt1 > %lld) cnt1 = %lld;", LL(g.k[1]), LL(g.k[1]));
    ec_line(e, "for (long l = 0; l < %d; l++) yr[o1 * %d + l] = acc[l] / (float)(cnt0 * cnt1);", LANES, LANES);
  } else {
    ec_line(e, "for (long l = 0; l < %d; l++) yr[o1 * %d + l] = acc[l] / (float)((hi0 - lo0) * (hi1 - lo1));",
            LANES, LANES);
  }
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* GlobalAveragePool / GlobalMaxPool of a blocked tensor into a row-major one. */
bool blocked_emit_global_pool(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  bool is_max = n->op == OP_GlobalMaxPool;
  int64_t N = xs->d[0], C = xs->d[1], CB = (C + LANES - 1) / LANES, HW = xs->d[2] * xs->d[3];
  ec_open_items(e, "nb", N * CB, ec_cost(COST_EW_ELEM, (double)(N * CB * HW * LANES)));
  ec_line(e, "const long n = nb / %lld, cb = nb %% %lld;", LL(CB), LL(CB));
  ec_line(e, "const float *x = X0 + nb * %lld;", LL(HW * LANES));
  ec_line(e, "float acc[%d];", LANES);
  ec_line(e, "for (long l = 0; l < %d; l++) acc[l] = %s;", LANES, is_max ? "(-3.40282347e+38f)" : "0");
  ec_line(e, "for (long p = 0; p < %lld; p++) {", LL(HW));
  ec_line(e, "for (long l = 0; l < %d; l++) %s;", LANES,
          is_max ? "acc[l] = x[p * 16 + l] > acc[l] ? x[p * 16 + l] : acc[l]" : "acc[l] += x[p * 16 + l]");
  ec_line(e, "}");
  ec_line(e, "for (long l = 0; l < %d && cb * %d + l < %lld; l++) {", LANES, LANES, LL(C));
  ec_line(e, "Y0[n * %lld + cb * %d + l] = acc[l]%s;", LL(C), LANES,
          is_max ? "" : arena_printf(e->g->arena, " / (float)%lld", LL(HW)));
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

