/* emit_blocked.c - the C target's kernels on channel-blocked tensors (NCHW16c,
 * passes/layout.c, docs/layout.md): a blocked [N, C, H, W] tensor is stored
 * [N][ceil(C/16)][H][W][16].
 *
 * BlockedConv (group 1) computes tiles of up to 14 output pixels (18 on
 * AVX2, in groups of at most 6) by 32 output channels (two blocks) in
 * registers: per k, one broadcast of
 * each pixel's input value and two vectors of the weight panel, k running
 * over (input block, kh, kw, lane) of the real input channels, read through a
 * table of offsets into the (already padded) input; the tile is stored as two
 * runs of 16-float vectors, plain stores, after the bias, the residual and
 * the activation. The conversions are loops whose innermost dimension is the
 * 16 lanes of a block, which the C compiler turns into vector instructions.
 * Depthwise convs and pools: emit_blocked_window.c.
 */
#include "blocked_internal.h"
#include "gemm.h"
#include "window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* ---- the micro-kernel (the top of NAME.c when some BlockedConv is group 1) ------------ */

static const char *const bk_prelude[] = {
    "/* onnxc_bk: one tile of a blocked conv (docs/layout.md): np output\n"
    " * pixels (<= 14; L to a row: pixel i at column i % L of row i / L), whose\n"
    " * input values for k are ak[(i % L) * ps + (i / L) * rs], ak = a + aoff[0] + ... +\n"
    " * aoff[k] (a table of steps, so each broadcast addresses a register plus a\n"
    " * constant), by\n"
    " * the 32 output channels of a weight panel b (32 floats per k); pixel i\n"
    " * goes to y0 + yo[i] and y1 + yo[i] (the two output blocks; y1 null: one\n"
    " * block; yo[i] < 0: not stored); nb 1 (a constant: the panel's second\n"
    " * block is past the channels) computes the first block only; bias + sum,\n"
    " * + residual r0 / r1 (laid out as y0 / y1), then\n"
    " * act 1: max(v, 0) (NaN -> 0, as Relu), 2: min(hi, max(lo, v)), 3: v >= 0 ?\n"
    " * v : v * lo (LeakyRelu). A product cut in depth: part & 1, the sums start\n"
    " * from y's (an earlier part's) instead of the bias; part & 2, the raw sums\n"
    " * are stored (a later part follows). pf: a line of weights to prefetch\n"
    " * into the L2 per k (the next panel's, while this one's are read from the\n"
    " * L2), pf += pstep (0: the same line again). */\n"
    "#define ONNXC_BK_NPMAX 18 /* pixels of a tile, at most (14 where the emitter tunes for AVX-512) */\n"
    "#if defined(__GNUC__) || defined(__clang__)\n"
    "#define ONNXC_BK_INLINE static inline __attribute__((always_inline))\n"
    "#define ONNXC_BK_UNUSED __attribute__((unused))\n"
    "#define ONNXC_BK_NOINLINE __attribute__((noinline))\n"
    "#define ONNXC_BK_UNROLL _Pragma(\"GCC unroll 16\")\n"
    "/* the two weight vectors of a k step held in registers: without it gcc\n"
    " * folded their loads into every multiply-add of a small group (8 loads a\n"
    " * step instead of 2: a 4-pixel group at 43 instead of 80 GFLOP/s on Zen 3) */\n"
    "#define ONNXC_BK_KEEP(u, v) __asm__(\"\" : \"+x\"(u), \"+x\"(v))\n"
    "#else\n"
    "#define ONNXC_BK_INLINE static\n"
    "#define ONNXC_BK_UNUSED\n"
    "#define ONNXC_BK_NOINLINE\n"
    "#define ONNXC_BK_UNROLL\n"
    "#define ONNXC_BK_KEEP(u, v) (void)0\n"
    "#endif\n"
    ,
    "#if defined(__AVX512F__)\n"
    "#include <immintrin.h>\n"
    "ONNXC_BK_INLINE void onnxc_bk_body(long kc, const float *a, const int *aoff, long ps, long rs, int L,\n"
    "                                   const float *b, float *y0, float *y1, const long *yo,\n"
    "                                   const float *bias, const float *r0, const float *r1, int act,\n"
    "                                   float lo, float hi, int np, int nb, int part, const float *pf,\n"
    "                                   long pstep) {\n"
    "  __m512 c0[ONNXC_BK_NPMAX], c1[ONNXC_BK_NPMAX];\n"
    "  const __m512 bb0 = _mm512_loadu_ps(bias), bb1 = _mm512_loadu_ps(bias + 16);\n"
    "  const __m512 l = _mm512_set1_ps(lo), h = _mm512_set1_ps(hi), z = _mm512_setzero_ps();\n"
    "  long k;\n"
    "  int i;\n"
    "  ONNXC_BK_UNROLL\n"
    "  for (i = 0; i < np; i++) {\n"
    "    c0[i] = bb0;\n"
    "    c1[i] = bb1;\n"
    "    if ((part & 1) && yo[i] >= 0) {\n"
    "      c0[i] = _mm512_loadu_ps(y0 + yo[i]);\n"
    "      if (nb > 1 && y1) c1[i] = _mm512_loadu_ps(y1 + yo[i]);\n"
    "    }\n"
    "  }\n"
    "  const float *ak = a;\n"
    "  for (k = 0; k < kc; k++) {\n"
    "    ak += aoff[k];\n"
    "    _mm_prefetch((const char *)pf, _MM_HINT_T1);\n"
    "    pf += pstep;\n"
    "    const __m512 w0 = _mm512_loadu_ps(b), w1 = nb > 1 ? _mm512_loadu_ps(b + 16) : z;\n"
    "    for (i = 0; i < np; i++) {\n"
    "      const __m512 x = _mm512_set1_ps(ak[(i % L) * ps + (i / L) * rs]);\n"
    "      c0[i] = _mm512_fmadd_ps(x, w0, c0[i]);\n"
    "      if (nb > 1) c1[i] = _mm512_fmadd_ps(x, w1, c1[i]);\n"
    "    }\n"
    "    b += 32;\n"
    "  }\n"
    "  ONNXC_BK_UNROLL\n"
    "  for (i = 0; i < np; i++) {\n"
    "    __m512 u = c0[i], v = c1[i];\n"
    "    const long o = yo[i];\n"
    "    if (o < 0) continue;\n"
    "    if (part & 2) {\n"
    "      _mm512_storeu_ps(y0 + o, u);\n"
    "      if (nb > 1 && y1) _mm512_storeu_ps(y1 + o, v);\n"
    "      continue;\n"
    "    }\n"
    "    if (r0) u = _mm512_add_ps(u, _mm512_loadu_ps(r0 + o));\n"
    "    if (nb > 1 && r1) v = _mm512_add_ps(v, _mm512_loadu_ps(r1 + o));\n"
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
    "    _mm512_storeu_ps(y0 + o, u);\n"
    "    if (nb > 1 && y1) _mm512_storeu_ps(y1 + o, v);\n"
    "  }\n"
    "}\n"
    ,
    "/* onnxc_bdw_body: one output row of a depthwise conv on NCHW16c: ow pixels\n"
    " * (ps floats apart in the input row xr, 16 in yr), taps kh x kw (dh, dw floats\n"
    " * apart), weights w[tap][16], sums from the bias, then the activation (act as\n"
    " * for onnxc_bk); four pixels at a time. */\n"
    "#define ONNXC_BDW_ACT(u) \\\n"
    "  if (act == 1) u = _mm512_max_ps(u, z); \\\n"
    "  else if (act == 2) u = _mm512_min_ps(h, _mm512_max_ps(l, u)); \\\n"
    "  else if (act == 3) u = _mm512_mask_mul_ps(u, _mm512_cmp_ps_mask(u, z, _CMP_NGE_UQ), u, l)\n"
    "ONNXC_BK_INLINE void onnxc_bdw_body(const float *xr, long ps, long dh, long dw, const float *w,\n"
    "                                    const float *bias, float *yr, long ow, int kh, int kw, int act,\n"
    "                                    float lo, float hi) {\n"
    "  const __m512 b = _mm512_loadu_ps(bias), l = _mm512_set1_ps(lo), h = _mm512_set1_ps(hi);\n"
    "  const __m512 z = _mm512_setzero_ps();\n"
    "  long ox = 0;\n"
    "  int i, j;\n"
    "  for (; ox + 4 <= ow; ox += 4) {\n"
    "    __m512 a0 = b, a1 = b, a2 = b, a3 = b;\n"
    "    for (i = 0; i < kh; i++)\n"
    "      for (j = 0; j < kw; j++) {\n"
    "        const float *x = xr + i * dh + j * dw + ox * ps;\n"
    "        const __m512 wv = _mm512_loadu_ps(w + (i * kw + j) * 16);\n"
    "        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x), wv, a0);\n"
    "        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + ps), wv, a1);\n"
    "        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + 2 * ps), wv, a2);\n"
    "        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + 3 * ps), wv, a3);\n"
    "      }\n"
    "    ONNXC_BDW_ACT(a0);\n"
    "    ONNXC_BDW_ACT(a1);\n"
    "    ONNXC_BDW_ACT(a2);\n"
    "    ONNXC_BDW_ACT(a3);\n"
    "    _mm512_storeu_ps(yr + ox * 16, a0);\n"
    "    _mm512_storeu_ps(yr + ox * 16 + 16, a1);\n"
    "    _mm512_storeu_ps(yr + ox * 16 + 32, a2);\n"
    "    _mm512_storeu_ps(yr + ox * 16 + 48, a3);\n"
    "  }\n"
    "  if (ox < ow) {\n"
    "    const float *xo = xr + ox * ps;\n"
    "    float *yo = yr + ox * 16;\n"
    "    const float *const ye = yr + ow * 16;\n"
    "    for (; yo < ye; xo += ps, yo += 16) {\n"
    "      __m512 a0 = b;\n"
    "      for (i = 0; i < kh; i++)\n"
    "        for (j = 0; j < kw; j++)\n"
    "          a0 = _mm512_fmadd_ps(_mm512_loadu_ps(xo + i * dh + j * dw), _mm512_loadu_ps(w + (i * kw + j) * 16),\n"
    "                               a0);\n"
    "      ONNXC_BDW_ACT(a0);\n"
    "      _mm512_storeu_ps(yo, a0);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "#elif defined(__AVX2__) && defined(__FMA__)\n"
    "#include <immintrin.h>\n"
    "/* AVX2: a tile runs as groups of up to 6 pixels by one block of 16 channels\n"
    " * (12 accumulators of 8 lanes), each group a pass over k; the weights of a\n"
    " * pass are half the panel's (32 floats apart per k) */\n"
    ,
    "ONNXC_BK_INLINE void onnxc_bk_grp(long kc, const float *a, const int *aoff, long ps, long rs, int L,\n"
    "                                  const float *b, float *y, const long *yo, const float *bias,\n"
    "                                  const float *r, int act, float lo, float hi, int g0, int gn,\n"
    "                                  int part, const float *pf, long pstep) {\n"
    "  __m256 c0[6], c1[6];\n"
    "  const __m256 z = _mm256_setzero_ps();\n"
    "  long k;\n"
    "  int i;\n"
    "  ONNXC_BK_UNROLL\n"
    "  for (i = 0; i < gn; i++) {\n"
    "    c0[i] = _mm256_loadu_ps(bias);\n"
    "    c1[i] = _mm256_loadu_ps(bias + 8);\n"
    "    if ((part & 1) && yo[g0 + i] >= 0) {\n"
    "      c0[i] = _mm256_loadu_ps(y + yo[g0 + i]);\n"
    "      c1[i] = _mm256_loadu_ps(y + yo[g0 + i] + 8);\n"
    "    }\n"
    "  }\n"
    "  const float *ak = a;\n"
    "  for (k = 0; k < kc; k++) {\n"
    "    ak += aoff[k];\n"
    "    if (pf) {\n"
    "      _mm_prefetch((const char *)pf, _MM_HINT_T1);\n"
    "      pf += pstep;\n"
    "    }\n"
    "    __m256 w0 = _mm256_loadu_ps(b), w1 = _mm256_loadu_ps(b + 8);\n"
    "    ONNXC_BK_KEEP(w0, w1);\n"
    "    ONNXC_BK_UNROLL\n"
    "    for (i = 0; i < gn; i++) {\n"
    "      const __m256 x = _mm256_broadcast_ss(ak + ((g0 + i) % L) * ps + ((g0 + i) / L) * rs);\n"
    "      c0[i] = _mm256_fmadd_ps(x, w0, c0[i]);\n"
    "      c1[i] = _mm256_fmadd_ps(x, w1, c1[i]);\n"
    "    }\n"
    "    b += 32;\n"
    "  }\n"
    "  const __m256 l = _mm256_set1_ps(lo), h = _mm256_set1_ps(hi);\n"
    "  ONNXC_BK_UNROLL\n"
    "  for (i = 0; i < gn; i++) {\n"
    "    __m256 u = c0[i], v = c1[i];\n"
    "    const long o = yo[g0 + i];\n"
    "    if (o < 0) continue;\n"
    "    if (!(part & 2)) {\n"
    "      if (r) {\n"
    "        u = _mm256_add_ps(u, _mm256_loadu_ps(r + o));\n"
    "        v = _mm256_add_ps(v, _mm256_loadu_ps(r + o + 8));\n"
    "      }\n"
    "      if (act == 1) {\n"
    "        u = _mm256_max_ps(u, z);\n"
    "        v = _mm256_max_ps(v, z);\n"
    "      } else if (act == 2) {\n"
    "        u = _mm256_min_ps(h, _mm256_max_ps(l, u));\n"
    "        v = _mm256_min_ps(h, _mm256_max_ps(l, v));\n"
    "      } else if (act == 3) {\n"
    "        u = _mm256_blendv_ps(u, _mm256_mul_ps(u, l), _mm256_cmp_ps(u, z, _CMP_NGE_UQ));\n"
    "        v = _mm256_blendv_ps(v, _mm256_mul_ps(v, l), _mm256_cmp_ps(v, z, _CMP_NGE_UQ));\n"
    "      }\n"
    "    }\n"
    "    _mm256_storeu_ps(y + o, u);\n"
    "    _mm256_storeu_ps(y + o + 8, v);\n"
    "  }\n"
    "}\n"
    ,
    "/* one block of 16 channels: the tile's pixels in groups of 4 to 6 where\n"
    " * np allows (14: 5 + 5 + 4; a group of 2 runs at half speed, its 4\n"
    " * accumulators too few for the FMA latency: 6 + 6 + 2 was 7% slower),\n"
    " * the first group prefetching the next panel's weights */\n"
    "ONNXC_BK_INLINE void onnxc_bk_blk(long kc, const float *a, const int *aoff, long ps, long rs, int L,\n"
    "                                  const float *b, float *y, const long *yo, const float *bias,\n"
    "                                  const float *r, int act, float lo, float hi, int np, int part,\n"
    "                                  const float *pf, long pstep) {\n"
    "  const int ng = (np + 5) / 6;\n"
    "  int g, g0 = 0;\n"
    "  ONNXC_BK_UNROLL\n"
    "  for (g = 0; g < ng; g++) {\n"
    "    const int gn = (np + ng - 1 - g) / ng;\n"
    "    onnxc_bk_grp(kc, a, aoff, ps, rs, L, b, y, yo, bias, r, act, lo, hi, g0, gn, part,\n"
    "                 g ? (const float *)0 : pf, pstep);\n"
    "    g0 += gn;\n"
    "  }\n"
    "}\n"
    "/* ONNXC_BK_DEF below makes each block a function of its own: with both\n"
    " * blocks in one function gcc kept an accumulator of one group on the stack\n"
    " * (a 14-pixel tile 25% slower) */\n"
    "#define ONNXC_BK_PER_BLOCK 1\n"
    ,
    "#define ONNXC_BDW_ACT(u) \\\n"
    "  if (act == 1) u = _mm256_max_ps(u, z); \\\n"
    "  else if (act == 2) u = _mm256_min_ps(h, _mm256_max_ps(l, u)); \\\n"
    "  else if (act == 3) u = _mm256_blendv_ps(u, _mm256_mul_ps(u, l), _mm256_cmp_ps(u, z, _CMP_NGE_UQ))\n"
    "ONNXC_BK_INLINE void onnxc_bdw_body(const float *xr, long ps, long dh, long dw, const float *w,\n"
    "                                    const float *bias, float *yr, long ow, int kh, int kw, int act,\n"
    "                                    float lo, float hi) {\n"
    "  const __m256 l = _mm256_set1_ps(lo), h = _mm256_set1_ps(hi), z = _mm256_setzero_ps();\n"
    "  int q, i, j;\n"
    "  for (q = 0; q < 16; q += 8) {\n"
    "    const __m256 b = _mm256_loadu_ps(bias + q);\n"
    "    long ox = 0;\n"
    "    for (; ox + 4 <= ow; ox += 4) {\n"
    "      __m256 a0 = b, a1 = b, a2 = b, a3 = b;\n"
    "      for (i = 0; i < kh; i++)\n"
    "        for (j = 0; j < kw; j++) {\n"
    "          const float *x = xr + i * dh + j * dw + ox * ps + q;\n"
    "          const __m256 wv = _mm256_loadu_ps(w + (i * kw + j) * 16 + q);\n"
    "          a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x), wv, a0);\n"
    "          a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + ps), wv, a1);\n"
    "          a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + 2 * ps), wv, a2);\n"
    "          a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + 3 * ps), wv, a3);\n"
    "        }\n"
    "      ONNXC_BDW_ACT(a0);\n"
    "      ONNXC_BDW_ACT(a1);\n"
    "      ONNXC_BDW_ACT(a2);\n"
    "      ONNXC_BDW_ACT(a3);\n"
    "      _mm256_storeu_ps(yr + ox * 16 + q, a0);\n"
    "      _mm256_storeu_ps(yr + ox * 16 + 16 + q, a1);\n"
    "      _mm256_storeu_ps(yr + ox * 16 + 32 + q, a2);\n"
    "      _mm256_storeu_ps(yr + ox * 16 + 48 + q, a3);\n"
    "    }\n"
    "    for (; ox < ow; ox++) {\n"
    "      __m256 a0 = b;\n"
    "      for (i = 0; i < kh; i++)\n"
    "        for (j = 0; j < kw; j++)\n"
    "          a0 = _mm256_fmadd_ps(_mm256_loadu_ps(xr + ox * ps + i * dh + j * dw + q),\n"
    "                               _mm256_loadu_ps(w + (i * kw + j) * 16 + q), a0);\n"
    "      ONNXC_BDW_ACT(a0);\n"
    "      _mm256_storeu_ps(yr + ox * 16 + q, a0);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "#else\n",
    "ONNXC_BK_INLINE void onnxc_bdw_body(const float *xr, long ps, long dh, long dw, const float *w,\n"
    "                                    const float *bias, float *yr, long ow, int kh, int kw, int act,\n"
    "                                    float lo, float hi) {\n"
    "  long ox;\n"
    "  int i, j, q;\n"
    "  for (ox = 0; ox < ow; ox++) {\n"
    "    float a[16];\n"
    "    for (q = 0; q < 16; q++) a[q] = bias[q];\n"
    "    for (i = 0; i < kh; i++)\n"
    "      for (j = 0; j < kw; j++) {\n"
    "        const float *x = xr + i * dh + j * dw + ox * ps, *wv = w + (i * kw + j) * 16;\n"
    "        for (q = 0; q < 16; q++) a[q] = ONNXC_FMAF(x[q], wv[q], a[q]);\n"
    "      }\n"
    "    for (q = 0; q < 16; q++) {\n"
    "      float v = a[q];\n"
    "      if (act == 1) v = v > 0 ? v : 0.0f;\n"
    "      else if (act == 2) v = (v < lo ? lo : v) > hi ? hi : (v < lo ? lo : v);\n"
    "      else if (act == 3) v = v >= 0 ? v : v * lo;\n"
    "      yr[ox * 16 + q] = v;\n"
    "    }\n"
    "  }\n"
    "}\n"
    ,
    "ONNXC_BK_INLINE void onnxc_bk_body(long kc, const float *a, const int *aoff, long ps, long rs, int L,\n"
    "                                   const float *b, float *y0, float *y1, const long *yo,\n"
    "                                   const float *bias, const float *r0, const float *r1, int act,\n"
    "                                   float lo, float hi, int np, int nb, int part, const float *pf,\n"
    "                                   long pstep) {\n"
    "  float c[ONNXC_BK_NPMAX][32];\n"
    "  long k;\n"
    "  int i, j;\n"
    "  (void)pf;\n"
    "  (void)pstep;\n"
    "  for (i = 0; i < np; i++)\n"
    "    for (j = 0; j < 16 * nb; j++) {\n"
    "      const float *y = j < 16 ? y0 : y1;\n"
    "      c[i][j] = (part & 1) && y && yo[i] >= 0 ? y[yo[i] + j % 16] : bias[j];\n"
    "    }\n"
    "  const float *ak = a;\n"
    "  for (k = 0; k < kc; k++) {\n"
    "    ak += aoff[k];\n"
    "    for (i = 0; i < np; i++) {\n"
    "      const float x = ak[(i % L) * ps + (i / L) * rs];\n"
    "      for (j = 0; j < 16 * nb; j++) c[i][j] = ONNXC_FMAF(x, b[j], c[i][j]);\n"
    "    }\n"
    "    b += 32;\n"
    "  }\n"
    "  for (i = 0; i < np; i++)\n"
    "    for (j = 0; j < 16 * nb; j++) {\n"
    "      float v = c[i][j];\n"
    "      const float *r = j < 16 ? r0 : r1;\n"
    "      float *y = j < 16 ? y0 : y1;\n"
    "      if (!y || yo[i] < 0) continue;\n"
    "      if (part & 2) {\n"
    "        y[yo[i] + j % 16] = v;\n"
    "        continue;\n"
    "      }\n"
    "      if (r) v = v + r[yo[i] + j % 16];\n"
    "      if (act == 1) v = v > 0 ? v : 0.0f;\n"
    "      else if (act == 2) v = (v < lo ? lo : v) > hi ? hi : (v < lo ? lo : v);\n"
    "      else if (act == 3) v = v >= 0 ? v : v * lo;\n"
    "      y[yo[i] + j % 16] = v;\n"
    "    }\n"
    "}\n"
    "#endif\n"
    ,
    "/* ONNXC_BK_DEF(NB, NP, L, PS): the tile of NP pixels, L to a row (rows rs\n"
    " * floats apart), pixels of a row PS floats apart, by NB blocks of 16\n"
    " * channels; each conv names the ones it calls (blocked_write_prelude emits\n"
    " * those of the model). Not inlined: inlined into a conv's loops (a threaded\n"
    " * build's especially), the tile lost a vector register to the caller and\n"
    " * read a weight vector from memory at every multiply-add (27% slower on\n"
    " * AVX2) */\n"
    "#if defined(ONNXC_BK_PER_BLOCK)\n"
    "#define ONNXC_BK_DEF(NB, NP, L, PS) \\\n"
    "  static ONNXC_BK_NOINLINE void onnxc_bkb##NB##_##NP##_##L##_##PS(long kc, const float *a, const int *aoff, long rs, \\\n"
    "                                              const float *b, float *y, const long *yo, \\\n"
    "                                              const float *bias, const float *r, int act, float lo, \\\n"
    "                                              float hi, int part, const float *pf, long pstep) { \\\n"
    "    onnxc_bk_blk(kc, a, aoff, PS, rs, L, b, y, yo, bias, r, act, lo, hi, NP, part, pf, pstep); \\\n"
    "  } \\\n"
    "  static ONNXC_BK_NOINLINE void onnxc_bk##NB##_##NP##_##L##_##PS(long kc, const float *a, const int *aoff, long rs, \\\n"
    "                                              const float *b, float *y0, float *y1, const long *yo, \\\n"
    "                                              const float *bias, const float *r0, const float *r1, \\\n"
    "                                              int act, float lo, float hi, int part, const float *pf, \\\n"
    "                                              long pstep) { \\\n"
    "    if (y0) \\\n"
    "      onnxc_bkb##NB##_##NP##_##L##_##PS(kc, a, aoff, rs, b, y0, yo, bias, r0, act, lo, hi, part, pf, pstep); \\\n"
    "    if (NB > 1 && y1) \\\n"
    "      onnxc_bkb##NB##_##NP##_##L##_##PS(kc, a, aoff, rs, b + 16, y1, yo, bias + 16, r1, act, lo, hi, part, \\\n"
    "                                        y0 ? (const float *)0 : pf, pstep); \\\n"
    "  }\n"
    "#else\n"
    "#define ONNXC_BK_DEF(NB, NP, L, PS) \\\n"
    "  static ONNXC_BK_NOINLINE void onnxc_bk##NB##_##NP##_##L##_##PS(long kc, const float *a, const int *aoff, long rs, \\\n"
    "                                              const float *b, float *y0, float *y1, const long *yo, \\\n"
    "                                              const float *bias, const float *r0, const float *r1, \\\n"
    "                                              int act, float lo, float hi, int part, const float *pf, \\\n"
    "                                              long pstep) { \\\n"
    "    onnxc_bk_body(kc, a, aoff, PS, rs, L, b, y0, y1, yo, bias, r0, r1, act, lo, hi, NP, NB, part, \\\n"
    "                  pf, pstep); \\\n"
    "  }\n"
    "#endif\n"
    ,
    "/* depthwise rows: a 3x3 window (unrolled), any other */\n"
    "static void onnxc_bdw_33(const float *xr, long ps, long dh, long dw, const float *w, const float *bias,\n"
    "                         float *yr, long ow, int act, float lo, float hi) ONNXC_BK_UNUSED;\n"
    "static void onnxc_bdw_33(const float *xr, long ps, long dh, long dw, const float *w, const float *bias,\n"
    "                         float *yr, long ow, int act, float lo, float hi) {\n"
    "  onnxc_bdw_body(xr, ps, dh, dw, w, bias, yr, ow, 3, 3, act, lo, hi);\n"
    "}\n"
    "static void onnxc_bdw(const float *xr, long ps, long dh, long dw, const float *w, const float *bias,\n"
    "                      float *yr, long ow, int kh, int kw, int act, float lo, float hi) ONNXC_BK_UNUSED;\n"
    "static void onnxc_bdw(const float *xr, long ps, long dh, long dw, const float *w, const float *bias,\n"
    "                      float *yr, long ow, int kh, int kw, int act, float lo, float hi) {\n"
    "  onnxc_bdw_body(xr, ps, dh, dw, w, bias, yr, ow, kh, kw, act, lo, hi);\n"
    "}\n\n",
};

bool blocked_conv_used(const Graph *g) {
  for (const Node *n = g->first; n; n = n->next)
    if (n->op == OP_BlockedConv)
      return true;
  return false;
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
 * zeros, the input row, zeros.  A row inside the input copies its count of
 * values and zeros the rest, a border row copies none: the counts are run
 * time values, with no branch on the row.  (GCC 12.2 at -O3 miscompiles the
 * form with a branch, `if (iy < 0 || iy >= H) { zero the row; continue; }`,
 * when a row is 2 floats: it vectorizes across rows and applies the first
 * pair of rows' mask to every pair. docs/layout.md.) */
bool emitc_BlockedPad(EmitC *e, const Node *n) {
  const Shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  int k = 0;
  const int64_t *p = ir_attr_ints(n, "pads", &k);
  IR_ASSERT(p && k == 4);
  /* a row-major copy (the input of a row-major-input conv): planes of one lane */
  int64_t lanes = n->in[0]->blocked ? LANES : 1;
  int64_t N = x->d[0], CB = (x->d[1] + lanes - 1) / lanes, H = x->d[2], W = x->d[3], Hp = y->d[2], Wp = y->d[3];
  int64_t rows = N * CB * Hp;
  int64_t st[2] = {1, 1};
  const int64_t *sv = ir_attr_ints(n, "strides", &k);
  if (sv && k == 2) {
    st[0] = sv[0];
    st[1] = sv[1];
  }
  if (st[0] > 1 || st[1] > 1) {
    /* every st-th row and column (the input of a strided 1x1 conv; no pads) */
    IR_ASSERT(!p[0] && !p[1] && !p[2] && !p[3]);
    ec_open_items(e, "r", rows, ec_cost(COST_BYTE, 8.0 * (double)(rows * Wp * lanes)));
    ec_line(e, "const long plane = r / %lld, oy = r %% %lld;", LL(Hp), LL(Hp));
    ec_line(e, "float *yr = Y0 + r * %lld;", LL(Wp * lanes));
    ec_line(e, "const float *xr = X0 + (plane * %lld + oy * %lld) * %lld;", LL(H), LL(st[0]), LL(W * lanes));
    ec_line(e, "for (long q = 0; q < %lld; q++)", LL(Wp));
    ec_line(e, "for (long l = 0; l < %lld; l++) yr[q * %lld + l] = xr[q * %lld + l];", LL(lanes), LL(lanes),
            LL(st[1] * lanes));
    ec_line(e, "}");
    return true;
  }
  ec_open_items(e, "r", rows, ec_cost(COST_BYTE, 8.0 * (double)(rows * Wp * lanes)));
  ec_line(e, "const long plane = r / %lld, iy = r %% %lld - %lld;", LL(Hp), LL(Hp), LL(p[0]));
  ec_line(e, "const int in = iy >= 0 && iy < %lld;", LL(H));
  ec_line(e, "const long nc = in ? %lld : 0;", LL(W * lanes));
  ec_line(e, "float *yr = Y0 + r * %lld;", LL(Wp * lanes));
  ec_line(e, "const float *xr = X0 + (plane * %lld + (in ? iy : 0)) * %lld;", LL(H), LL(W * lanes));
  ec_line(e, "const long lead = in ? %lld : %lld;", LL(p[1] * lanes), LL(Wp * lanes));
  ec_line(e, "for (long q = 0; q < lead; q++) yr[q] = 0.0f;");
  ec_line(e, "for (long q = 0; q < nc; q++) yr[lead + q] = xr[q];");
  ec_line(e, "for (long q = lead + nc; q < %lld; q++) yr[q] = 0.0f;", LL(Wp * lanes));
  ec_line(e, "}");
  return true;
}

/* ---- convs ------------------------------------------------------------------------------- */

int blocked_act_code(const Node *n, char *lo, char *hi, size_t sz) {
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

void blocked_epilogue(EmitC *e, const Node *n, const char *ptr0, const char *ptr, const char *count,
                      const char *real) {
  Buf ex;
  buf_init(&ex);
  gemm_act_expr(n, "v", &ex);
  if (!real) {
    ec_line(e, "float *p = %s;", ptr0);
    ec_line(e, "for (long l = 0; l < (%s) * %d; l++) {", count, LANES);
  } else {
    ec_line(e, "for (long i = 0; i < %s; i++) {", count);
    ec_line(e, "float *p = %s;", ptr);
    ec_line(e, "for (long l = 0; l < %s; l++) {", real);
  }
  ec_line(e, "const float v = p[l];");
  ec_line(e, "p[l] = %s;", ex.s);
  ec_line(e, "}");
  if (real)
    ec_line(e, "}");
  buf_free(&ex);
}

void blocked_window_of(const Node *n, int64_t *k, int64_t *s, int64_t *d) {
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

#define BK_NP 14  /* pixels of a tile, at most: 28 accumulators and 2 weight vectors */
#define BK_NP_AVX2 18 /* on AVX2, where a tile runs as groups of at most 6 (ONNXC_BK_NPMAX) */
#define BK_TG 16  /* tiles of one item */
#define BK_L2_DEFAULT (2.0 * 1024 * 1024) /* one core's L2 (the build machine's; 1-2 MB on recent x86), unless --l2-kb */
#define BK_KC 1024 /* depth of one part: 128 KB of weights (a shallower part costs more in its loads and stores than the L2 saves) */
#define BK_KC_AVX2 192 /* the same on AVX2, where a tile makes several passes over k: 24 KB, in the L1 */
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* How a group-1 BlockedConv's output pixels (per image) fall into tiles, each
 * computed by one micro-kernel call, none with pixels past the map:
 *  - RUNS: stride 1 and the input row as wide as the output row (no
 *    horizontal padding or window): the map is one run of OH*OW pixels, cut
 *    into ntile equal runs;
 *  - STRIPS: each output row cut into nst equal strips (rows of 8 or more);
 *  - ROWS: R whole rows (of 7 or fewer pixels) per tile, the last tile's
 *    rows what is left.
 * A tile has np_a or np_b pixels (equal when one size fits all), L to a row. */
typedef enum { BK_RUNS, BK_STRIPS, BK_ROWS } BkMode;
typedef struct {
  BkMode mode;
  int64_t ntile, nst, R;
  int np_a, L_a, np_b, L_b;
  int64_t ps; /* floats between a row's pixels in the input */
} BkTiles;

/* The AVX2 tile's time for np pixels (per block and k step, in units of one
 * multiply-add of 8 lanes at full speed): groups of np / ng pixels
 * (onnxc_bk_blk), each at the speed measured for its size on Zen 3 with
 * the weights in the L1 (a group of 1-3 pixels has too few accumulators for
 * the FMA latency). */
static double bk_avx2_cost(int64_t np) {
  static const double speed[7] = {1, 0.23, 0.46, 0.73, 0.91, 0.94, 0.95};
  int64_t ng = (np + 5) / 6;
  double c = 0;
  for (int64_t g = 0; g < ng; g++) {
    int64_t gn = (np + ng - 1 - g) / ng;
    c += (double)gn / speed[gn];
  }
  return c;
}

/* the cost of cutting n pixels into m near-equal tiles */
static double bk_split_cost(int64_t n, int64_t m) {
  int64_t big = n % m, small = m - big;
  return (double)small * bk_avx2_cost(n / m) + (big ? (double)big * bk_avx2_cost(n / m + 1) : 0);
}

/* into how many tiles of at most npmax pixels to cut n pixels: the fewest,
 * or on AVX2 the count (up to three more) whose groups run 2% faster */
static int64_t bk_cut(int64_t n, int npmax, bool avx2) {
  int64_t m = (n + npmax - 1) / npmax, best = m;
  for (int64_t c = m + 1; avx2 && c <= m + 3 && c <= n; c++)
    if (bk_split_cost(n, c) < bk_split_cost(n, best) * 0.98)
      best = c;
  return best;
}

static void bk_tiles(const Node *n, int vec_bits, BkTiles *t) {
  const Shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  int64_t k[2], s[2], dl[2];
  blocked_window_of(n, k, s, dl);
  int64_t W = x->d[3], OH = y->d[2], OW = y->d[3];
  bool avx2 = vec_bits == 256;
  int npmax = avx2 ? BK_NP_AVX2 : BK_NP;
  memset(t, 0, sizeof *t);
  t->ps = s[1] * (ir_attr_int(n, "onnxc.plain", 0) ? 1 : LANES);
  if (s[0] == 1 && s[1] == 1 && W == OW) {
    int64_t P = OH * OW;
    t->mode = BK_RUNS;
    t->ntile = bk_cut(P, npmax, avx2);
    t->np_a = t->L_a = (int)(P / t->ntile);
    t->np_b = t->L_b = (int)((P + t->ntile - 1) / t->ntile);
  } else if (OW > BK_NP / 2 || OH == 1) {
    t->mode = BK_STRIPS;
    t->nst = bk_cut(OW, npmax, avx2);
    t->ntile = OH * t->nst;
    t->np_a = t->L_a = (int)(OW / t->nst);
    t->np_b = t->L_b = (int)((OW + t->nst - 1) / t->nst);
  } else {
    t->mode = BK_ROWS;
    t->R = min64(OH, npmax / OW);
    /* AVX2: the row count whose tiles run fastest */
    for (int64_t r = t->R - 1; avx2 && r >= 1; r--) {
      int64_t nt = (OH + r - 1) / r, last = (OH - (nt - 1) * r) * OW;
      int64_t ntb = (OH + t->R - 1) / t->R, lastb = (OH - (ntb - 1) * t->R) * OW;
      double c = (double)(nt - 1) * bk_avx2_cost(r * OW) + bk_avx2_cost(last);
      double cb = (double)(ntb - 1) * bk_avx2_cost(t->R * OW) + bk_avx2_cost(lastb);
      if (c < cb * 0.98)
        t->R = r;
    }
    t->ntile = (OH + t->R - 1) / t->R;
    t->np_a = (int)(t->R * OW);
    t->np_b = (int)((OH - (t->ntile - 1) * t->R) * OW);
    t->L_a = t->L_b = (int)OW;
  }
}

static bool bk_group1(const Node *n) { return n->op == OP_BlockedConv && ir_attr_int(n, "group", 1) == 1; }

void blocked_write_prelude(Buf *out, const Graph *g, int vec_bits) {
  for (size_t i = 0; i < sizeof bk_prelude / sizeof bk_prelude[0]; i++)
    buf_puts(out, bk_prelude[i]);
  /* the tile kernels the model's convs call, each once (at most four per
   * conv: two tile sizes, by two blocks and, where the last panel holds one
   * block of channels, by one) */
  int nconv = 0, nseen = 0;
  for (const Node *n = g->first; n; n = n->next)
    nconv += bk_group1(n);
  int64_t(*seen)[4] = malloc((size_t)(4 * nconv + 1) * sizeof *seen);
  IR_ASSERT(seen);
  for (const Node *n = g->first; n; n = n->next) {
    if (!bk_group1(n))
      continue;
    BkTiles t;
    bk_tiles(n, vec_bits, &t);
    int64_t M = n->out[0]->shape.d[1], MB = (M + LANES - 1) / LANES;
    for (int v = 0; v < 4; v++) {
      int64_t nb = v < 2 ? 2 : 1;
      if ((nb == 2 && MB < 2) || (nb == 1 && MB % 2 == 0))
        continue; /* no panel of two blocks / none of one */
      int64_t d[4] = {nb, v % 2 ? t.np_b : t.np_a, v % 2 ? t.L_b : t.L_a, t.ps};
      bool dup = false;
      for (int j = 0; j < nseen && !dup; j++)
        dup = !memcmp(seen[j], d, sizeof d);
      if (dup)
        continue;
      memcpy(seen[nseen++], d, sizeof d);
      buf_printf(out, "ONNXC_BK_DEF(%lld, %lld, %lld, %lld)\n", LL(d[0]), LL(d[1]), LL(d[2]), LL(d[3]));
    }
  }
  free(seen);
  buf_puts(out, "\n");
}

bool emitc_BlockedConv(EmitC *e, const Node *n) {
  if (ir_attr_int(n, "group", 1) != 1)
    return blocked_emit_dw(e, n);
  const Shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  int64_t k[2], s[2], dl[2];
  blocked_window_of(n, k, s, dl);
  int64_t N = x->d[0], C = ir_attr_int(n, "onnxc.c", x->d[1]), CB = (C + LANES - 1) / LANES, H = x->d[2],
          W = x->d[3];
  int64_t M = y->d[1], MB = (M + LANES - 1) / LANES, NPAN = (M + 31) / 32, OH = y->d[2], OW = y->d[3];
  int64_t K = C * k[0] * k[1];
  /* a row-major input (onnxc.plain: an RGB stem): one float per pixel */
  bool plain = ir_attr_int(n, "onnxc.plain", 0) != 0;
  int64_t inl = plain ? 1 : LANES, ximg = (plain ? C : CB * LANES) * H * W;
  BkTiles tp;
  bk_tiles(n, e->vec_bits, &tp);
  char lo[64], hi[64];
  int act = blocked_act_code(n, lo, hi, sizeof lo);
  bool res = ir_has_input(n, 3);
  static const char *const mode_name[] = {"runs of the map", "row strips", "whole rows"};
  ec_line(e, "/* conv %s NCHW16c: [%lld x %lld] x %lld pixels, %lldx%lld window, stride %lldx%lld; tiles (%s) of "
             "%d or %d pixels x 32 channels */",
          plain ? "of a row-major input to" : "on", LL(M), LL(K), LL(N * OH * OW), LL(k[0]), LL(k[1]), LL(s[0]),
          LL(s[1]), mode_name[tp.mode], tp.np_a, tp.np_b);
  /* koff[k]: the input offset of k = (block, kh, kw, lane) from a pixel's tap
   * (0, 0); kdel[k] = koff[k] - koff[k - 1] (kdel[0] = koff[0] = 0), the steps
   * the micro-kernel takes */
  int64_t *ko = malloc((size_t)K * sizeof *ko);
  IR_ASSERT(ko);
  int64_t kk = 0;
  for (int64_t cb = 0; cb < CB; cb++)
    for (int64_t kh = 0; kh < k[0]; kh++)
      for (int64_t kw = 0; kw < k[1]; kw++)
        for (int64_t c = cb * LANES; c < cb * LANES + LANES && c < C; c++, kk++)
          ko[kk] = plain ? (c * H + kh * dl[0]) * W + kw * dl[1]
                         : ((cb * H + kh * dl[0]) * W + kw * dl[1]) * LANES + c % LANES;
  IR_ASSERT(kk == K);
  for (int t = 0; t < 2; t++) {
    ec_line(e, "static const int %s[%lld] = {", t ? "kdel" : "koff", LL(K));
    Buf row;
    buf_init(&row);
    for (int64_t i = 0; i < K; i++) {
      buf_printf(&row, "%lld,", LL(t ? ko[i] - (i ? ko[i - 1] : 0) : ko[i]));
      if (row.len > 100 || i == K - 1) {
        ec_line(e, "%s", row.s);
        row.len = 0;
        row.s[0] = 0;
      }
    }
    buf_free(&row);
    ec_line(e, "};");
  }
  free(ko);
  /* an item: one panel, one image, a group of tiles, over K in parts of KC
   * (the part's weights stay in L1 while every tile of the group reads them) */
  /* groups of equal size, at least 8 items per thread where the tiles allow */
  int64_t ntile = tp.ntile;
  /* the depth of a part: on AVX2 its weights (32 channels x KC) stay in the
   * L1 while the tiles' groups read them again (24 KB of a 32 KB L1 on Zen
   * 3: 1x1 1024 -> 256 at 14x14 1.37 -> 1.25 ms, 3x3 64 -> 64 at 56x56 2.74
   * -> 2.61 ms, against KC 1024); the AVX-512 tile (one pass over k) keeps
   * KC 1024 as measured there */
  const int64_t kcmax = e->vec_bits == 256 ? BK_KC_AVX2 : BK_KC;
  int64_t ngroup = (ntile + BK_TG - 1) / BK_TG, KC = K <= kcmax * 3 / 2 ? K : kcmax;
  int64_t want = (8 * (int64_t)(ec_threads(e) > 1 ? ec_threads(e) : 1) + NPAN * N - 1) / (NPAN * N);
  if (ngroup < want)
    ngroup = min64(want, ntile);
  int64_t items = NPAN * N * ngroup;
  double macs = (double)N * OH * OW * NPAN * 32 * K;
  /* group-major (all panels of a group of tiles, then the next group) when
   * the input does not stay in the L2 from one panel to the next and all the
   * weights do: panel-major read the input from the L3 once per panel
   * (ResNet-50's 1x1 stride-2 projection, 3.2 MB of input, 16 panels) */
  double in_bytes = (double)ximg * 4, w_bytes = (double)K * 32 * 4 * (double)NPAN;
  double l2 = e->l2_bytes > 0 ? (double)e->l2_bytes : BK_L2_DEFAULT;
  bool gmajor = NPAN > 1 && ngroup > 1 && in_bytes > l2 / 2 && w_bytes <= l2 / 4;
  if (e->conv_order) /* --conv-order: the tests reach either order on small maps */
    gmajor = e->conv_order == 2;
  bool pref = !gmajor && NPAN > 1 && w_bytes > 65536.0; /* see pf below */
  /* a prefetching conv: one chunk of consecutive panels per thread, so the
   * next panel a tile prefetches is the one its thread computes next;
   * group-major: chunks of whole groups (every panel of one group of tiles),
   * so a group's input is read into one core's L2, not into both (where
   * there are groups enough for the threads to share evenly) */
  int64_t max_chunks = pref ? ec_threads(e) : gmajor && N * ngroup >= 2 * ec_threads(e) ? N * ngroup : 0;
  ec_open_items_max(e, "t", items, ec_cost(COST_GEMM_MAC, macs), max_chunks);
  const char *end = e->items_end;
  if (gmajor)
    ec_line(e, "const long gr = t / %lld, n = t / %lld %% %lld, pan = t %% %lld;", LL(N * NPAN), LL(NPAN), LL(N),
            LL(NPAN));
  else /* panel-major: the items of one panel keep its weights in the cache */
    ec_line(e, "const long pan = t / %lld, n = t / %lld %% %lld, gr = t %% %lld;", LL(N * ngroup), LL(ngroup), LL(N),
            LL(ngroup));
  ec_line(e, "float *y0 = Y0 + n * %lld + pan * %lld;", LL(MB * OH * OW * LANES), LL(2 * OH * OW * LANES));
  ec_line(e, "float *y1 = pan * 2 + 1 < %lld ? y0 + %lld : (float *)0;", LL(MB), LL(OH * OW * LANES));
  if (res) {
    ec_line(e, "const float *r0 = X3 + (y0 - Y0);");
    ec_line(e, "const float *r1 = y1 ? r0 + %lld : (const float *)0;", LL(OH * OW * LANES));
  } else {
    ec_line(e, "const float *r0 = (const float *)0, *r1 = (const float *)0;");
  }
  ec_line(e, "const float *xn = X0 + n * %lld;", LL(ximg));
  ec_line(e, "for (long k0 = 0; k0 < %lld; k0 += %lld) {", LL(K), LL(KC));
  ec_line(e, "const long kc = %lld - k0 < %lld ? %lld - k0 : %lld;", LL(K), LL(KC), LL(K), LL(KC));
  ec_line(e, "const int part = (k0 > 0 ? 1 : 0) | (k0 + kc < %lld ? 2 : 0);", LL(K));
  ec_line(e, "for (long tl = gr * %lld / %lld; tl < (gr + 1) * %lld / %lld; tl++) {", LL(ntile), LL(ngroup), LL(ntile),
          LL(ngroup));
  /* the tile's first output pixel q0 (its pixels are q0 .. q0 + np - 1 of the
   * map, row-major, in every mode) and its first input pixel */
  ec_line(e, "long yo[%d], q0, np;", BK_NP_AVX2);
  ec_line(e, "const float *a;");
  switch (tp.mode) {
  case BK_RUNS:
    ec_line(e, "q0 = tl * %lld / %lld;", LL(OH * OW), LL(ntile));
    ec_line(e, "np = (tl + 1) * %lld / %lld - q0;", LL(OH * OW), LL(ntile));
    ec_line(e, "a = xn + q0 * %lld;", LL(inl));
    break;
  case BK_STRIPS:
    ec_line(e, "const long oy = tl / %lld, st = tl %% %lld;", LL(tp.nst), LL(tp.nst));
    ec_line(e, "const long x0 = st * %lld / %lld;", LL(OW), LL(tp.nst));
    ec_line(e, "np = (st + 1) * %lld / %lld - x0;", LL(OW), LL(tp.nst));
    ec_line(e, "q0 = oy * %lld + x0;", LL(OW));
    ec_line(e, "a = xn + (oy * %lld + x0 * %lld) * %lld;", LL(s[0] * W), LL(s[1]), LL(inl));
    break;
  case BK_ROWS:
    ec_line(e, "const long oy = tl * %lld;", LL(tp.R));
    ec_line(e, "np = (%lld - oy < %lld ? %lld - oy : %lld) * %lld;", LL(OH), LL(tp.R), LL(OH), LL(tp.R), LL(OW));
    ec_line(e, "q0 = oy * %lld;", LL(OW));
    ec_line(e, "a = xn + oy * %lld;", LL(s[0] * W * inl));
    break;
  }
  ec_line(e, "for (long i = 0; i < np; i++) yo[i] = (q0 + i) * %d;", LANES);
  const char *hi_or_lo = act == 2 ? hi : "0.0f";
  /* the input rows of a ROWS tile: s[0] input rows apart */
  int64_t rs = s[0] * W * inl;
  /* weights over 64 KB (the model's weights do not stay in the L2 from one
   * run to the next: read from the L3 or memory, at 10-15 GB/s on one core
   * here): the first P (<= 4) tiles of a panel's last item each prefetch 1/P
   * of the next panel's part into the L2, while the tiles read this panel's
   * from the L2, when the next item is this thread's (its chunk's).
   * ResNet-50's 7x7 layers: 12.8 -> 10.9 ms on one thread (weights over
   * 1 MB); from 64 KB on, MobileNetV2 5.38 -> 5.11 ms (its 1x1 convs of
   * 100-600 KB on 7x7 maps 135 -> 110 us). */
  if (pref) {
    int64_t ming = ntile / ngroup; /* tiles in the smallest group */
    int64_t P = min64(4, ming < 1 ? 1 : ming);
    int64_t step = (32 + P - 1) / P;
    ec_line(e, "const long j = tl - gr * %lld / %lld;", LL(ntile), LL(ngroup));
    ec_line(e, "const int pfon = (t + 1) %% %lld == 0 && t + 1 < %s && j < %lld;", LL(N * ngroup), end, LL(P));
    ec_line(e, "const float *pf = pfon ? X1 + (pan + 1) * %lld + k0 * 32 + j * kc * %lld : X1;", LL(K * 32), LL(step));
    ec_line(e, "const long pstep = pfon ? %lld : 0;", LL(step));
  } else {
    ec_line(e, "const float *pf = X1;");
    ec_line(e, "const long pstep = 0;");
  }
  /* panels of two blocks, and the last of one block where MB is odd (a
   * 16-channel conv, or 144 = 4 x 32 + 16: computing its empty half would
   * take as long as its real one) */
  for (int nb = 2; nb >= 1; nb--) {
    if ((nb == 2 && MB < 2) || (nb == 1 && MB % 2 == 0))
      continue;
    if (MB % 2 && MB > 1)
      ec_line(e, nb == 2 ? "if (pan < %lld) {" : "else {", LL(NPAN - 1));
    for (int v = 0; v < 2; v++) {
      int np = v ? tp.np_b : tp.np_a, L = v ? tp.L_b : tp.L_a;
      if (v && np == tp.np_a)
        break;
      if (tp.np_a != tp.np_b)
        ec_line(e, v ? "else" : "if (np == %d)", np);
      ec_line(e, "onnxc_bk%d_%d_%d_%lld(kc, a + koff[k0] - kdel[k0], kdel + k0, %lld, X1 + pan * %lld + k0 * 32, y0, "
                 "y1, yo, X2 + pan * 32, r0, r1, %d, %s, %s, part, pf, pstep);",
              nb, np, L, LL(tp.ps), LL(rs), LL(K * 32), act, lo, hi_or_lo);
    }
    if (MB % 2 && MB > 1)
      ec_line(e, "}");
  }
  if (ir_attr(n, "epilogue")) { /* after the last part's store */
    /* real lanes: 16 in every block when M is a multiple of 16 (a constant
     * trip count, so the lane loop is vector code) */
    ec_line(e, "if (k0 + kc == %lld) {", LL(K));
    /* a tile's pixels are q0 .. q0 + np - 1 of the map: one run per block */
    if (M % LANES == 0) {
      ec_line(e, "{");
      blocked_epilogue(e, n, "y0 + q0 * 16", NULL, "np", NULL);
      ec_line(e, "}");
      ec_line(e, "if (y1) {");
      blocked_epilogue(e, n, "y1 + q0 * 16", NULL, "np", NULL);
      ec_line(e, "}");
    } else {
      ec_line(e, "const long real0 = %lld - pan * 32 < 16 ? %lld - pan * 32 : 16;", LL(M), LL(M));
      blocked_epilogue(e, n, NULL, "y0 + yo[i]", "np", "real0");
      ec_line(e, "if (y1) {");
      ec_line(e, "const long real1 = %lld - pan * 32 - 16 < 16 ? %lld - pan * 32 - 16 : 16;", LL(M), LL(M));
      blocked_epilogue(e, n, NULL, "y1 + yo[i]", "np", "real1");
      ec_line(e, "}");
    }
    ec_line(e, "}");
  }
  ec_line(e, "}"); /* tl */
  ec_line(e, "}"); /* k0 */
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
