/* emit_blocked.c - the C target's kernels on channel-blocked tensors (NCHW16c,
 * passes/layout.c, docs/layout.md): a blocked [N, C, H, W] tensor is stored
 * [N][ceil(C/16)][H][W][16].
 *
 * BlockedConv (group 1) computes tiles of up to 12 output pixels of one row
 * by 32 output channels (two blocks) in registers: per k, one broadcast of
 * each pixel's input value and two vectors of the weight panel, k running
 * over (input block, kh, kw, lane) of the real input channels, read through a
 * table of offsets into the (already padded) input; the tile is stored as two
 * runs of 16-float vectors, plain stores, after the bias, the residual and
 * the activation. Depthwise convs, pools and the conversions are loops whose
 * innermost dimension is the 16 lanes of a block, which the C compiler turns
 * into vector instructions.
 */
#include "codegen_internal.h"
#include "window.h"

#include <math.h>
#include <string.h>

#define LL(x) ((long long)(x))
#define LANES 16

/* ---- the micro-kernel (the top of NAME.c when some BlockedConv is group 1) ------------ */

static const char *const bk_prelude[] = {
    "/* onnxc_bk: one tile of a blocked conv (docs/layout.md): np (<= 12) output\n"
    " * pixels of one row, whose input values for k are a[aoff[k] + i * ps], by\n"
    " * the 32 output channels of a weight panel b (32 floats per k); y0 and y1\n"
    " * the two output blocks at the first pixel (y1 null: one block), each pixel\n"
    " * 16 floats on; bias + sum, + residual r0 / r1 (laid out as y0 / y1), then\n"
    " * act 1: max(v, 0) (NaN -> 0, as Relu), 2: min(hi, max(lo, v)), 3: v >= 0 ?\n"
    " * v : v * lo (LeakyRelu). */\n"
    "#if defined(__GNUC__) || defined(__clang__)\n"
    "#define ONNXC_BK_INLINE static inline __attribute__((always_inline))\n"
    "#define ONNXC_BK_UNUSED __attribute__((unused))\n"
    "#else\n"
    "#define ONNXC_BK_INLINE static\n"
    "#define ONNXC_BK_UNUSED\n"
    "#endif\n"
    "#if defined(__AVX512F__)\n"
    "#include <immintrin.h>\n"
    "ONNXC_BK_INLINE void onnxc_bk_body(long kc, const float *a, const int *aoff, long ps, const float *b,\n"
    "                                   float *y0, float *y1, const float *bias, const float *r0,\n"
    "                                   const float *r1, int act, float lo, float hi, int np) {\n"
    "  __m512 c0[12], c1[12];\n"
    "  const __m512 bb0 = _mm512_loadu_ps(bias), bb1 = _mm512_loadu_ps(bias + 16);\n"
    "  const __m512 l = _mm512_set1_ps(lo), h = _mm512_set1_ps(hi), z = _mm512_setzero_ps();\n"
    "  long k;\n"
    "  int i;\n"
    "  for (i = 0; i < np; i++) {\n"
    "    c0[i] = bb0;\n"
    "    c1[i] = bb1;\n"
    "  }\n"
    "  for (k = 0; k < kc; k++) {\n"
    "    const float *ak = a + aoff[k];\n"
    "    const __m512 w0 = _mm512_loadu_ps(b), w1 = _mm512_loadu_ps(b + 16);\n"
    "    for (i = 0; i < np; i++) {\n"
    "      const __m512 x = _mm512_set1_ps(ak[i * ps]);\n"
    "      c0[i] = _mm512_fmadd_ps(x, w0, c0[i]);\n"
    "      c1[i] = _mm512_fmadd_ps(x, w1, c1[i]);\n"
    "    }\n"
    "    b += 32;\n"
    "  }\n"
    "  for (i = 0; i < np; i++) {\n"
    "    __m512 u = c0[i], v = c1[i];\n"
    "    if (r0) u = _mm512_add_ps(u, _mm512_loadu_ps(r0 + i * 16));\n"
    "    if (r1) v = _mm512_add_ps(v, _mm512_loadu_ps(r1 + i * 16));\n"
    "    if (act == 1) {\n"
    "      u = _mm512_max_ps(u, z);\n"
    "      v = _mm512_max_ps(v, z);\n"
    "    } else if (act == 2) {\n"
    "      u = _mm512_min_ps(h, _mm512_max_ps(l, u));\n"
    "      v = _mm512_min_ps(h, _mm512_max_ps(l, v));\n"
    "    } else if (act == 3) {\n"
    "      u = _mm512_mask_mul_ps(u, _mm512_cmp_ps_mask(u, z, _CMP_NGE_UQ), u, l);\n"
    "      v = _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, z, _CMP_NGE_UQ), v, l);\n"
    "    }\n"
    "    _mm512_storeu_ps(y0 + i * 16, u);\n"
    "    if (y1) _mm512_storeu_ps(y1 + i * 16, v);\n"
    "  }\n"
    "}\n"
    "#else\n",
    "ONNXC_BK_INLINE void onnxc_bk_body(long kc, const float *a, const int *aoff, long ps, const float *b,\n"
    "                                   float *y0, float *y1, const float *bias, const float *r0,\n"
    "                                   const float *r1, int act, float lo, float hi, int np) {\n"
    "  float c[12][32];\n"
    "  long k;\n"
    "  int i, j;\n"
    "  for (i = 0; i < np; i++)\n"
    "    for (j = 0; j < 32; j++) c[i][j] = bias[j];\n"
    "  for (k = 0; k < kc; k++) {\n"
    "    const float *ak = a + aoff[k];\n"
    "    for (i = 0; i < np; i++) {\n"
    "      const float x = ak[i * ps];\n"
    "      for (j = 0; j < 32; j++) c[i][j] = ONNXC_FMAF(x, b[j], c[i][j]);\n"
    "    }\n"
    "    b += 32;\n"
    "  }\n"
    "  for (i = 0; i < np; i++)\n"
    "    for (j = 0; j < 32; j++) {\n"
    "      float v = c[i][j];\n"
    "      const float *r = j < 16 ? r0 : r1;\n"
    "      float *y = j < 16 ? y0 : y1;\n"
    "      if (!y) continue;\n"
    "      if (r) v = v + r[i * 16 + j % 16];\n"
    "      if (act == 1) v = v > 0 ? v : 0.0f;\n"
    "      else if (act == 2) v = (v < lo ? lo : v) > hi ? hi : (v < lo ? lo : v);\n"
    "      else if (act == 3) v = v >= 0 ? v : v * lo;\n"
    "      y[i * 16 + j % 16] = v;\n"
    "    }\n"
    "}\n"
    "#endif\n"
    "#define ONNXC_BK_DEF(NP, S) \\\n"
    "  static void onnxc_bk_##NP##_##S(long kc, const float *a, const int *aoff, const float *b, \\\n"
    "                                  float *y0, float *y1, const float *bias, const float *r0, \\\n"
    "                                  const float *r1, int act, float lo, float hi) ONNXC_BK_UNUSED; \\\n"
    "  static void onnxc_bk_##NP##_##S(long kc, const float *a, const int *aoff, const float *b, \\\n"
    "                                  float *y0, float *y1, const float *bias, const float *r0, \\\n"
    "                                  const float *r1, int act, float lo, float hi) { \\\n"
    "    onnxc_bk_body(kc, a, aoff, 16 * (S), b, y0, y1, bias, r0, r1, act, lo, hi, NP); \\\n"
    "  }\n"
    "#define ONNXC_BK_DEFS(S) ONNXC_BK_DEF(1, S) ONNXC_BK_DEF(2, S) ONNXC_BK_DEF(3, S) \\\n"
    "  ONNXC_BK_DEF(4, S) ONNXC_BK_DEF(5, S) ONNXC_BK_DEF(6, S) ONNXC_BK_DEF(7, S) ONNXC_BK_DEF(8, S) \\\n"
    "  ONNXC_BK_DEF(9, S) ONNXC_BK_DEF(10, S) ONNXC_BK_DEF(11, S) ONNXC_BK_DEF(12, S)\n"
    "ONNXC_BK_DEFS(1)\n"
    "ONNXC_BK_DEFS(2)\n"
    "typedef void (*onnxc_bk_fn)(long, const float *, const int *, const float *, float *, float *,\n"
    "                            const float *, const float *, const float *, int, float, float);\n"
    "static const onnxc_bk_fn onnxc_bk_tab[2][12] ONNXC_BK_UNUSED = {\n"
    "    {onnxc_bk_1_1, onnxc_bk_2_1, onnxc_bk_3_1, onnxc_bk_4_1, onnxc_bk_5_1, onnxc_bk_6_1,\n"
    "     onnxc_bk_7_1, onnxc_bk_8_1, onnxc_bk_9_1, onnxc_bk_10_1, onnxc_bk_11_1, onnxc_bk_12_1},\n"
    "    {onnxc_bk_1_2, onnxc_bk_2_2, onnxc_bk_3_2, onnxc_bk_4_2, onnxc_bk_5_2, onnxc_bk_6_2,\n"
    "     onnxc_bk_7_2, onnxc_bk_8_2, onnxc_bk_9_2, onnxc_bk_10_2, onnxc_bk_11_2, onnxc_bk_12_2}};\n"
    "/* any other pixel stride ps (floats): the same sums, np not unrolled */\n"
    "static void onnxc_bk_any(long kc, const float *a, const int *aoff, long ps, const float *b, float *y0,\n"
    "                         float *y1, const float *bias, const float *r0, const float *r1, int act,\n"
    "                         float lo, float hi, int np) ONNXC_BK_UNUSED;\n"
    "static void onnxc_bk_any(long kc, const float *a, const int *aoff, long ps, const float *b, float *y0,\n"
    "                         float *y1, const float *bias, const float *r0, const float *r1, int act,\n"
    "                         float lo, float hi, int np) {\n"
    "  onnxc_bk_body(kc, a, aoff, ps, b, y0, y1, bias, r0, r1, act, lo, hi, np);\n"
    "}\n\n",
};

bool blocked_conv_used(const Graph *g) {
  for (const Node *n = g->first; n; n = n->next)
    if (n->op == OP_BlockedConv && ir_attr_int(n, "group", 1) == 1)
      return true;
  return false;
}

void blocked_write_prelude(Buf *out) {
  for (size_t i = 0; i < sizeof bk_prelude / sizeof bk_prelude[0]; i++)
    buf_puts(out, bk_prelude[i]);
}

/* ---- conversions ------------------------------------------------------------------------- */

bool emitc_ToBlocked(EmitC *e, const Node *n) {
  const Shape *s = &n->in[0]->shape;
  int64_t N = s->d[0], C = s->d[1], HW = s->d[2] * s->d[3], CB = (C + LANES - 1) / LANES;
  ec_open_items(e, "nb", N * CB, ec_cost(COST_BYTE, 8.0 * (double)(N * CB * HW * LANES)));
  ec_line(e, "const long n = nb / %lld, cb = nb %% %lld;", LL(CB), LL(CB));
  ec_line(e, "const float *x = X0 + (n * %lld + cb * %d) * %lld;", LL(C), LANES, LL(HW));
  ec_line(e, "float *y = Y0 + nb * %lld;", LL(HW * LANES));
  ec_line(e, "const long real = %lld - cb * %d < %d ? %lld - cb * %d : %d;", LL(C), LANES, LANES, LL(C), LANES,
          LANES);
  ec_line(e, "for (long p = 0; p < %lld; p++) {", LL(HW));
  ec_line(e, "for (long l = 0; l < %d; l++) y[p * %d + l] = l < real ? x[l * %lld + p] : 0.0f;", LANES, LANES,
          LL(HW));
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

bool emitc_FromBlocked(EmitC *e, const Node *n) {
  const Shape *s = &n->in[0]->shape;
  int64_t N = s->d[0], C = s->d[1], HW = s->d[2] * s->d[3], CB = (C + LANES - 1) / LANES;
  ec_open_items(e, "nc", N * C, ec_cost(COST_BYTE, 8.0 * (double)(N * C * HW)));
  ec_line(e, "const long n = nc / %lld, c = nc %% %lld;", LL(C), LL(C));
  ec_line(e, "const float *x = X0 + ((n * %lld + c / %d) * %lld) * %d + c %% %d;", LL(CB), LANES, LL(HW), LANES,
          LANES);
  ec_line(e, "float *y = Y0 + nc * %lld;", LL(HW));
  ec_line(e, "for (long p = 0; p < %lld; p++) y[p] = x[p * %d];", LL(HW), LANES);
  ec_line(e, "}");
  return true;
}

/* The blocked input inside a zero border: rows of the padded plane, each
 * zeros, the input row, zeros. */
bool emitc_BlockedPad(EmitC *e, const Node *n) {
  const Shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  int k = 0;
  const int64_t *p = ir_attr_ints(n, "pads", &k);
  IR_ASSERT(p && k == 4);
  int64_t N = x->d[0], CB = (x->d[1] + LANES - 1) / LANES, H = x->d[2], W = x->d[3], Hp = y->d[2], Wp = y->d[3];
  int64_t rows = N * CB * Hp;
  ec_open_items(e, "r", rows, ec_cost(COST_BYTE, 8.0 * (double)(rows * Wp * LANES)));
  ec_line(e, "const long plane = r / %lld, py = r %% %lld, iy = py - %lld;", LL(Hp), LL(Hp), LL(p[0]));
  ec_line(e, "float *yr = Y0 + r * %lld;", LL(Wp * LANES));
  ec_line(e, "if (iy < 0 || iy >= %lld) {", LL(H));
  ec_line(e, "for (long q = 0; q < %lld; q++) yr[q] = 0.0f;", LL(Wp * LANES));
  ec_line(e, "continue;");
  ec_line(e, "}");
  ec_line(e, "const float *xr = X0 + (plane * %lld + iy) * %lld;", LL(H), LL(W * LANES));
  ec_line(e, "for (long q = 0; q < %lld; q++) yr[q] = 0.0f;", LL(p[1] * LANES));
  ec_line(e, "for (long q = 0; q < %lld; q++) yr[%lld + q] = xr[q];", LL(W * LANES), LL(p[1] * LANES));
  ec_line(e, "for (long q = %lld; q < %lld; q++) yr[q] = 0.0f;", LL((p[1] + W) * LANES), LL(Wp * LANES));
  ec_line(e, "}");
  return true;
}

/* ---- convs ------------------------------------------------------------------------------- */

/* The fused activation as the micro-kernel's act code and its lo / hi. */
static int act_code(const Node *n, char *lo, char *hi, size_t sz) {
  const char *a = ir_attr_str(n, "activation", "");
  snprintf(lo, sz, "0.0f");
  snprintf(hi, sz, "0.0f");
  if (!strcmp(a, "Relu"))
    return 1;
  if (!strcmp(a, "Clip")) {
    ec_literal(DT_F32, ir_attr_float(n, "activation_min", -INFINITY), lo, sz);
    ec_literal(DT_F32, ir_attr_float(n, "activation_max", INFINITY), hi, sz);
    return 2;
  }
  if (!strcmp(a, "LeakyRelu")) {
    ec_literal(DT_F32, ir_attr_float(n, "activation_alpha", 0.01f), lo, sz);
    return 3;
  }
  return 0;
}

static void window_of(const Node *n, int64_t *k, int64_t *s, int64_t *d) {
  int c = 0;
  const int64_t *v = ir_attr_ints(n, "kernel_shape", &c);
  IR_ASSERT(v && c == 2);
  k[0] = v[0];
  k[1] = v[1];
  v = ir_attr_ints(n, "strides", &c);
  s[0] = v && c == 2 ? v[0] : 1;
  s[1] = v && c == 2 ? v[1] : 1;
  v = ir_attr_ints(n, "dilations", &c);
  d[0] = v && c == 2 ? v[0] : 1;
  d[1] = v && c == 2 ? v[1] : 1;
}

/* Depthwise: per (image, block, output row), each pixel's 16 lanes summed
 * over the taps from the bias, then the residual-free epilogue. */
static bool emit_dw(EmitC *e, const Node *n) {
  const Shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  int64_t k[2], s[2], dl[2];
  window_of(n, k, s, dl);
  int64_t N = x->d[0], CB = (x->d[1] + LANES - 1) / LANES, H = x->d[2], W = x->d[3], OH = y->d[2], OW = y->d[3];
  int64_t T = k[0] * k[1];
  char lo[64], hi[64];
  int act = act_code(n, lo, hi, sizeof lo);
  int64_t rows = N * CB * OH;
  ec_line(e, "/* depthwise conv on NCHW16c: %lldx%lld window, stride %lldx%lld */", LL(k[0]), LL(k[1]), LL(s[0]),
          LL(s[1]));
  ec_open_items(e, "r", rows, ec_cost(COST_DW_TAP, (double)(rows * OW * T * LANES)));
  ec_line(e, "const long plane = r / %lld, oy = r %% %lld, cb = plane %% %lld;", LL(OH), LL(OH), LL(CB));
  ec_line(e, "const float *xr = X0 + (plane * %lld + oy * %lld) * %lld;", LL(H), LL(s[0]), LL(W * LANES));
  ec_line(e, "const float *w = X1 + cb * %lld, *bias = X2 + cb * %d;", LL(T * LANES), LANES);
  ec_line(e, "float *yr = Y0 + r * %lld;", LL(OW * LANES));
  ec_line(e, "for (long ox = 0; ox < %lld; ox++) {", LL(OW));
  ec_line(e, "float acc[%d];", LANES);
  ec_line(e, "for (long l = 0; l < %d; l++) acc[l] = bias[l];", LANES);
  ec_line(e, "for (long kh = 0; kh < %lld; kh++) {", LL(k[0]));
  ec_line(e, "for (long kw = 0; kw < %lld; kw++) {", LL(k[1]));
  ec_line(e, "const float *xv = xr + (kh * %lld + ox * %lld + kw * %lld) * %d;", LL(dl[0] * W), LL(s[1]),
          LL(dl[1]), LANES);
  ec_line(e, "const float *wv = w + (kh * %lld + kw) * %d;", LL(k[1]), LANES);
  ec_line(e, "for (long l = 0; l < %d; l++) acc[l] = ONNXC_FMAF(xv[l], wv[l], acc[l]);", LANES);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "for (long l = 0; l < %d; l++) {", LANES);
  ec_line(e, "float v = acc[l];");
  if (act == 1)
    ec_line(e, "v = v > 0 ? v : 0.0f;");
  else if (act == 2)
    ec_line(e, "v = (v < %s ? %s : v) > %s ? %s : (v < %s ? %s : v);", lo, lo, hi, hi, lo, lo);
  else if (act == 3)
    ec_line(e, "v = v >= 0 ? v : v * %s;", lo);
  ec_line(e, "yr[ox * %d + l] = v;", LANES);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

#define BK_NP 12

bool emitc_BlockedConv(EmitC *e, const Node *n) {
  if (ir_attr_int(n, "group", 1) != 1)
    return emit_dw(e, n);
  const Shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  int64_t k[2], s[2], dl[2];
  window_of(n, k, s, dl);
  int64_t N = x->d[0], C = ir_attr_int(n, "onnxc.c", x->d[1]), CB = (C + LANES - 1) / LANES, H = x->d[2],
          W = x->d[3];
  int64_t M = y->d[1], MB = (M + LANES - 1) / LANES, NPAN = (M + 31) / 32, OH = y->d[2], OW = y->d[3];
  int64_t K = C * k[0] * k[1], nst = (OW + BK_NP - 1) / BK_NP;
  char lo[64], hi[64];
  int act = act_code(n, lo, hi, sizeof lo);
  bool res = ir_has_input(n, 3);
  ec_line(e, "/* conv on NCHW16c: [%lld x %lld] x %lld pixels, %lldx%lld window, stride %lldx%lld; tiles of up "
             "to %d pixels x 32 channels */",
          LL(M), LL(K), LL(N * OH * OW), LL(k[0]), LL(k[1]), LL(s[0]), LL(s[1]), BK_NP);
  /* koff[k]: the input offset of k = (block, kh, kw, lane) from a pixel's tap (0, 0) */
  ec_line(e, "static const int koff[%lld] = {", LL(K));
  Buf row;
  buf_init(&row);
  int64_t kk = 0;
  for (int64_t cb = 0; cb < CB; cb++)
    for (int64_t kh = 0; kh < k[0]; kh++)
      for (int64_t kw = 0; kw < k[1]; kw++)
        for (int64_t c = cb * LANES; c < cb * LANES + LANES && c < C; c++, kk++) {
          buf_printf(&row, "%lld,", LL(((cb * H + kh * dl[0]) * W + kw * dl[1]) * LANES + c % LANES));
          if (row.len > 100) {
            ec_line(e, "%s", row.s);
            row.len = 0;
            row.s[0] = 0;
          }
        }
  if (row.len)
    ec_line(e, "%s", row.s);
  buf_free(&row);
  ec_line(e, "};");
  int64_t items = NPAN * N * OH * nst;
  double macs = (double)N * OH * OW * NPAN * 32 * K;
  ec_open_items(e, "t", items, ec_cost(COST_GEMM_MAC, macs));
  /* panel-major: the items of one panel keep its weights in the cache */
  ec_line(e, "const long pan = t / %lld, rest = t %% %lld;", LL(N * OH * nst), LL(N * OH * nst));
  ec_line(e, "const long n = rest / %lld, oy = rest / %lld %% %lld, st = rest %% %lld;", LL(OH * nst), LL(nst),
          LL(OH), LL(nst));
  ec_line(e, "const long x0 = st * %lld / %lld, np = (st + 1) * %lld / %lld - x0;", LL(OW), LL(nst), LL(OW),
          LL(nst));
  ec_line(e, "const float *a = X0 + n * %lld + (oy * %lld * %lld + x0 * %lld) * %d;", LL(CB * H * W * LANES),
          LL(s[0]), LL(W), LL(s[1]), LANES);
  ec_line(e, "const long yo = n * %lld + pan * %lld + (oy * %lld + x0) * %d;", LL(MB * OH * OW * LANES),
          LL(2 * OH * OW * LANES), LL(OW), LANES);
  ec_line(e, "float *y0 = Y0 + yo;");
  ec_line(e, "float *y1 = pan * 2 + 1 < %lld ? y0 + %lld : (float *)0;", LL(MB), LL(OH * OW * LANES));
  if (res) {
    ec_line(e, "const float *r0 = X3 + yo;");
    ec_line(e, "const float *r1 = y1 ? r0 + %lld : (const float *)0;", LL(OH * OW * LANES));
  } else {
    ec_line(e, "const float *r0 = (const float *)0, *r1 = (const float *)0;");
  }
  const char *hi_or_lo = act == 2 ? hi : "0.0f";
  if (s[1] <= 2)
    ec_line(e, "onnxc_bk_tab[%lld][np - 1](%lld, a, koff, X1 + pan * %lld, y0, y1, X2 + pan * 32, r0, r1, %d, %s, %s);",
            LL(s[1] - 1), LL(K), LL(K * 32), act, lo, hi_or_lo);
  else
    ec_line(e, "onnxc_bk_any(%lld, a, koff, %lld, X1 + pan * %lld, y0, y1, X2 + pan * 32, r0, r1, %d, %s, %s, "
               "(int)np);",
            LL(K), LL(s[1] * LANES), LL(K * 32), act, lo, hi_or_lo);
  ec_line(e, "}");
  return true;
}

/* ---- pools ------------------------------------------------------------------------------- */

/* MaxPool / AveragePool on a blocked tensor: the window code of the row-major
 * pool (emit_conv.c) per pixel, over 16 lanes at a time. */
static bool blocked_emit_pool(EmitC *e, const Node *n) {
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
static bool blocked_emit_global_pool(EmitC *e, const Node *n) {
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

/* A node that reads or writes a blocked tensor gets a kernel that knows it,
 * or, for the lane-wise ones the pass admits (every tensor 16k channels),
 * its own; anything else is a compiler bug, reported rather than miscompiled. */
bool blocked_dispatch(EmitC *e, const Node *n, bool *done) {
  bool any = false;
  for (int i = 0; i < n->n_in && !any; i++)
    any = ir_has_input(n, i) && n->in[i]->blocked;
  for (int i = 0; i < n->n_out && !any; i++)
    any = n->out[i]->kind != VK_NONE && n->out[i]->blocked;
  *done = false;
  if (!any)
    return true;
  switch (n->op) {
  case OP_ToBlocked:
  case OP_FromBlocked:
  case OP_BlockedPad:
  case OP_BlockedConv:
    return true;
  case OP_MaxPool:
  case OP_AveragePool:
    *done = true;
    return blocked_emit_pool(e, n);
  case OP_GlobalAveragePool:
  case OP_GlobalMaxPool:
    *done = true;
    return blocked_emit_global_pool(e, n);
  case OP_Concat:
  case OP_Split:
  case OP_FusedElementwise:
    break;
  default:
    if (ir_ops[n->op].flags & OPF_EW)
      break;
    *done = true;
    return diag_error(e->d, n, "internal: node '%s' (%s) has a channel-blocked operand and no kernel for it",
                      n->name, n->op_type);
  }
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i) && n->in[i]->kind != VK_CONST && n->in[i]->shape.rank == 4 &&
        (n->in[i]->shape.d[1] % LANES || !n->in[i]->blocked) && !(n->op == OP_Split && i > 0)) {
      *done = true;
      return diag_error(e->d, n, "internal: node '%s' (%s) mixes layouts", n->name, n->op_type);
    }
  return true;
}
