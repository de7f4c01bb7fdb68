/* emit_qint.c - C kernels of the int8 ops that fuse-quant makes
 * (passes/fuse_quant.c; docs/int8.md): QIntConv, QIntAdd,
 * QIntGlobalAvgPool, QIntLut.
 *
 * QIntConv mode 0 (a conv as a GEMM): the uint8 columns (im2col, padding
 * with the input's zero point) are interleaved, per tile of 32 pixels, into
 * rows of 32 pixels x 4 consecutive k (one 32-bit lane per pixel; K rounded
 * up to 64 per tile). The weights are int32 blocks of 16 channels x 64 k
 * (fuse_quant.c). Micro-kernels, all with exact int32 sums and the same bytes:
 * AMX (onnxc_qtile_amx: tdpbsud, 32 channels x 32 pixels, where the target
 * has AMX-INT8 and Linux grants the tiles), AVX-512 VNNI (onnxc_qtile:
 * vpdpbusd, 8 channels x 32 pixels), else portable C (AVX2 and Cortex-M
 * compilers vectorize it as they can: no int16 saturation anywhere).
 * The requantization is fused into the store: float(acc + b) * m clamped,
 * rounded half to even, + zero point; with a fifth input (a residual Add
 * folded by fuse_quant.c), then MLAS's QLinearAdd of that byte and the
 * residual's, in registers.
 * Mode 1 (X W^T, Gemm/MatMul): one int32 dot product per output.
 * Mode 2 (depthwise): per channel, a copy of the plane padded with the zero
 * point, then rows of int32 accumulators.
 */
#include "codegen_internal.h"

#include <string.h>

#define LL(x) ((long long)(x))
#define QT_NP 32 /* pixels per tile of the conv GEMM */
#define QT_MR 8  /* weight rows per call of the vpdpbusd / portable micro-kernel */
#define QT_CB 32 /* channels per call of the AMX micro-kernel, per item on the pool */
#define QT_KC 64 /* k per weight block (fuse_quant.c's layout: 16 channels x 64 k) */

static const char *const prelude[] = {
    "/* int8 kernels (emit_qint.c): requantization and the u8 x s8 micro-kernel. */\n"
    "/* (a model uses some of these helpers: the others are no warning) */\n"
    "#if defined(__GNUC__)\n"
    "#define ONNXC_QFN static inline __attribute__((unused))\n"
    "#define ONNXC_QFN_NI static __attribute__((unused, noinline))\n"
    "#else\n"
    "#define ONNXC_QFN static inline\n"
    "#define ONNXC_QFN_NI static\n"
    "#endif\n"
    "ONNXC_QFN float onnxc_qround(float v) { /* half to even for |v| < 2^22 */\n"
    "  v = v + 12582912.0f;\n"
    "  return v - 12582912.0f;\n"
    "}\n"
    "ONNXC_QFN uint8_t onnxc_qstore(int32_t acc, float m, float lo, float hi, int32_t zy) {\n"
    "  float f = (float)acc * m;\n"
    "  f = f < lo ? lo : f;\n"
    "  f = f > hi ? hi : f;\n"
    "  return (uint8_t)((int32_t)onnxc_qround(f) + zy);\n"
    "}\n"
    "#if defined(__AVX2__) && !defined(__AVX512F__)\n"
    "/* 16 int32 in [0, 255] (a: the first 8) to 16 bytes at y */\n"
    "ONNXC_QFN void onnxc_qpack16(__m256i a, __m256i b, uint8_t *y) {\n"
    "  const __m256i p = _mm256_packus_epi16(_mm256_packus_epi32(a, b), _mm256_setzero_si256());\n"
    "  const __m256i q = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));\n"
    "  _mm_storeu_si128((__m128i *)y, _mm256_castsi256_si128(q));\n"
    "}\n"
    "#endif\n"
    ,
    "/* y[i] = requant(acc[i]) for i < n (lo, hi: the clamp minus zy) */\n"
    "ONNXC_QFN void onnxc_qrow(const int32_t *acc, long n, float m, float lo, float hi, int32_t zy,\n"
    "                       uint8_t *y) {\n"
    "  long i = 0;\n"
    "#if defined(__AVX512F__)\n"
    "  const __m512 vm = _mm512_set1_ps(m), vl = _mm512_set1_ps(lo), vh = _mm512_set1_ps(hi);\n"
    "  const __m512i vz = _mm512_set1_epi32(zy);\n"
    "  for (; i + 16 <= n; i += 16) {\n"
    "    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(acc + i)), vm);\n"
    "    f = _mm512_min_ps(_mm512_max_ps(f, vl), vh);\n"
    "    _mm_storeu_si128((__m128i *)(y + i),\n"
    "                     _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(f), vz)));\n"
    "  }\n"
    "#elif defined(__AVX2__)\n"
    "  /* vcvtps2dq rounds half to even (the default MXCSR), as onnxc_qround */\n"
    "  const __m256 vm = _mm256_set1_ps(m), vl = _mm256_set1_ps(lo), vh = _mm256_set1_ps(hi);\n"
    "  const __m256i vz = _mm256_set1_epi32(zy);\n"
    "  for (; i + 16 <= n; i += 16) {\n"
    "    __m256 f0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(acc + i))), vm);\n"
    "    __m256 f1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(acc + i + 8))), vm);\n"
    "    f0 = _mm256_min_ps(_mm256_max_ps(f0, vl), vh);\n"
    "    f1 = _mm256_min_ps(_mm256_max_ps(f1, vl), vh);\n"
    "    onnxc_qpack16(_mm256_add_epi32(_mm256_cvtps_epi32(f0), vz), _mm256_add_epi32(_mm256_cvtps_epi32(f1), vz),\n"
    "                  y + i);\n"
    "  }\n"
    "#endif\n"
    "  for (; i < n; i++)\n"
    "    y[i] = onnxc_qstore(acc[i], m, lo, hi, zy);\n"
    "}\n"
    "/* MLAS's QLinearAdd: y[i] = sat(rne(clamp(fma(a[i], c[0], fma(b[i], c[1], c[2])), c[3], c[4])))\n"
    " * (c: ratio of a, ratio of b, the folded zero points, the clamp); y may be a or b. */\n"
    "ONNXC_QFN void onnxc_qaddrow(const uint8_t *a, const uint8_t *b, long n, const float *c,\n"
    "                                 uint8_t *y) {\n"
    "  long i = 0;\n"
    "#if defined(__AVX512F__)\n"
    "  const __m512 va = _mm512_set1_ps(c[0]), vb = _mm512_set1_ps(c[1]), vf = _mm512_set1_ps(c[2]);\n"
    "  const __m512 vl = _mm512_set1_ps(c[3]), vh = _mm512_set1_ps(c[4]);\n"
    "  for (; i + 16 <= n; i += 16) {\n"
    "    const __m512 fa = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(a + i))));\n"
    "    const __m512 fb = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b + i))));\n"
    "    __m512 f = _mm512_fmadd_ps(fa, va, _mm512_fmadd_ps(fb, vb, vf));\n"
    "    f = _mm512_min_ps(_mm512_max_ps(f, vl), vh);\n"
    "    _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(f)));\n"
    "  }\n"
    "#elif defined(__AVX2__) && defined(__FMA__)\n"
    "  const __m256 va = _mm256_set1_ps(c[0]), vb = _mm256_set1_ps(c[1]), vf = _mm256_set1_ps(c[2]);\n"
    "  const __m256 vl = _mm256_set1_ps(c[3]), vh = _mm256_set1_ps(c[4]);\n"
    "  for (; i + 16 <= n; i += 16) {\n"
    "    __m256i q[2];\n"
    "    for (int h = 0; h < 2; h++) {\n"
    "      const __m256 fa = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(a + i + 8 * h))));\n"
    "      const __m256 fb = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(b + i + 8 * h))));\n"
    "      __m256 f = _mm256_fmadd_ps(fa, va, _mm256_fmadd_ps(fb, vb, vf));\n"
    "      q[h] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(f, vl), vh));\n"
    "    }\n"
    "    onnxc_qpack16(q[0], q[1], y + i);\n"
    "  }\n"
    "#endif\n"
    "  for (; i < n; i++) {\n"
    "    float f = fmaf((float)b[i], c[1], c[2]);\n"
    "    f = fmaf((float)a[i], c[0], f);\n"
    "    f = f < c[3] ? c[3] : f;\n"
    "    f = f > c[4] ? c[4] : f;\n"
    "    y[i] = (uint8_t)(int32_t)onnxc_qround(f);\n"
    "  }\n"
    "}\n",
    "#if defined(__AVX512F__) && defined(__AVX512VNNI__) && defined(__AVX512VBMI__)\n"
    "/* One output row of a depthwise conv (kernel width <= 4): r is the padded input row\n"
    " * of kernel row 0, rs the bytes to the next kernel row; vpermb gathers each\n"
    " * pixel's taps of a kernel row into one 32-bit lane (idx), vpdpbusd multiplies them\n"
    " * by that row's weights w4[kh] (4 int8, 0 past the kernel width). */\n"
    "ONNXC_QFN void onnxc_qdw_row(const uint8_t *r, long rs, int kh_n, const int32_t *w4, long n,\n"
    "                                 long s, __m512i idx, int32_t bias, float m, float lo, float hi,\n"
    "                                 int32_t zy, uint8_t *y) {\n"
    "  const __m512 vm = _mm512_set1_ps(m), vl = _mm512_set1_ps(lo), vh = _mm512_set1_ps(hi);\n"
    "  const __m512i vz = _mm512_set1_epi32(zy), vb = _mm512_set1_epi32(bias);\n"
    "  for (long o = 0; o < n; o += 16) {\n"
    "    __m512i acc = vb;\n"
    "    for (int kh = 0; kh < kh_n; kh++)\n"
    "      acc = _mm512_dpbusd_epi32(acc, _mm512_permutexvar_epi8(idx, _mm512_loadu_si512(r + kh * rs + o * s)),\n"
    "                                _mm512_set1_epi32(w4[kh]));\n"
    "    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), vm);\n"
    "    f = _mm512_min_ps(_mm512_max_ps(f, vl), vh);\n"
    "    const __mmask16 mk = (__mmask16)(n - o >= 16 ? 0xffff : (1u << (n - o)) - 1u);\n"
    "    _mm512_mask_cvtepi32_storeu_epi8(y + o, mk, _mm512_add_epi32(_mm512_cvtps_epi32(f), vz));\n"
    "  }\n"
    "}\n"
    "#endif\n"
    "/* sum_k x[k] w[k], u8 x s8 in exact int32 */\n"
    "ONNXC_QFN int32_t onnxc_qdot(const uint8_t *x, const int8_t *w, long n) {\n"
    "  int32_t acc = 0;\n"
    "  long k = 0;\n"
    "#if defined(__AVX512F__) && defined(__AVX512VNNI__)\n"
    "  __m512i v = _mm512_setzero_si512();\n"
    "  for (; k + 64 <= n; k += 64)\n"
    "    v = _mm512_dpbusd_epi32(v, _mm512_loadu_si512(x + k), _mm512_loadu_si512(w + k));\n"
    "  acc = _mm512_reduce_add_epi32(v);\n"
    "#elif defined(__AVX2__)\n"
    "  __m256i v = _mm256_setzero_si256();\n"
    "  for (; k + 16 <= n; k += 16)\n"
    "    v = _mm256_add_epi32(v, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(x + k))),\n"
    "                                              _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + k)))));\n"
    "  __m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));\n"
    "  h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));\n"
    "  h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));\n"
    "  acc = _mm_cvtsi128_si32(h);\n"
    "#endif\n"
    "  for (; k < n; k++)\n"
    "    acc += (int32_t)x[k] * (int32_t)w[k];\n"
    "  return acc;\n"
    "}\n"
    "/* 4 rows r[0..3] of n (a multiple of 16) bytes -> n x 4 bytes, pixel-major */\n"
    "ONNXC_QFN void onnxc_qinterleave(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,\n"
    "                              const uint8_t *r3, long n, uint8_t *out) {\n"
    "  long p = 0;\n"
    "#if defined(__SSE2__)\n"
    "  for (; p + 16 <= n; p += 16) {\n"
    "    __m128i a = _mm_loadu_si128((const __m128i *)(r0 + p));\n"
    "    __m128i b = _mm_loadu_si128((const __m128i *)(r1 + p));\n"
    "    __m128i c = _mm_loadu_si128((const __m128i *)(r2 + p));\n"
    "    __m128i d = _mm_loadu_si128((const __m128i *)(r3 + p));\n"
    "    __m128i abl = _mm_unpacklo_epi8(a, b), abh = _mm_unpackhi_epi8(a, b);\n"
    "    __m128i cdl = _mm_unpacklo_epi8(c, d), cdh = _mm_unpackhi_epi8(c, d);\n"
    "    _mm_storeu_si128((__m128i *)(out + 4 * p), _mm_unpacklo_epi16(abl, cdl));\n"
    "    _mm_storeu_si128((__m128i *)(out + 4 * p + 16), _mm_unpackhi_epi16(abl, cdl));\n"
    "    _mm_storeu_si128((__m128i *)(out + 4 * p + 32), _mm_unpacklo_epi16(abh, cdh));\n"
    "    _mm_storeu_si128((__m128i *)(out + 4 * p + 48), _mm_unpackhi_epi16(abh, cdh));\n"
    "  }\n"
    "#endif\n"
    "  for (uint8_t *o = out + 4 * p; p < n; p++, o += 4) {\n"
    "    o[0] = r0[p];\n"
    "    o[1] = r1[p];\n"
    "    o[2] = r2[p];\n"
    "    o[3] = r3[p];\n"
    "  }\n"
    "}\n",
    "/* Y[i][p] = requant(sum_k W[i][k] B[k][p] + bias[i]) for i < nr (<= 8), p < np (<= 32):\n"
    " * w: 8 rows of a weight block (fuse_quant.c: per 64 k, 16 rows of 16 int32 of 4 int8; the\n"
    " * next 64 k 256 words on), k4 groups of 4 k; b: k4 rows (ldb bytes apart) of 32 pixels x 4 uint8.\n"
    " * With res (a residual QLinearAdd folded into the store; rows ldy apart like Y): Y[i][p] =\n"
    " * onnxc_qaddrow's value of (that requantized byte, res[i][p]), in that order when ca, else\n"
    " * swapped (rc: its constants). */\n"
    "#if defined(__AVX512F__) && defined(__AVX512VNNI__)\n"
    "/* the residual add of 16 lanes (m: those to load): q the conv's requantized bytes as int32 */\n"
    "ONNXC_QFN __m512i onnxc_qadd16(__m512i q, const uint8_t *r, __mmask16 m, const float *c, int ca) {\n"
    "#if defined(__AVX512BW__) && defined(__AVX512VL__)\n"
    "  const __m128i rv = _mm_maskz_loadu_epi8(m, r);\n"
    "#else\n"
    "  uint8_t t[16];\n"
    "  for (int j = 0; j < 16; j++)\n"
    "    t[j] = (m >> j) & 1u ? r[j] : 0;\n"
    "  const __m128i rv = _mm_loadu_si128((const __m128i *)t);\n"
    "#endif\n"
    "  const __m512 fq = _mm512_cvtepi32_ps(q), fr = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(rv));\n"
    "  __m512 f = _mm512_fmadd_ps(ca ? fq : fr, _mm512_set1_ps(c[0]),\n"
    "                             _mm512_fmadd_ps(ca ? fr : fq, _mm512_set1_ps(c[1]), _mm512_set1_ps(c[2])));\n"
    "  f = _mm512_min_ps(_mm512_max_ps(f, _mm512_set1_ps(c[3])), _mm512_set1_ps(c[4]));\n"
    "  return _mm512_cvtps_epi32(f);\n"
    "}\n"
    "#endif\n",
    "#if defined(__AVX512F__) && defined(__AVX512VNNI__)\n"
    "/* (gcc 12 copies the accumulators of the intrinsic around the loop: asm there) */\n"
    "#if defined(__GNUC__) && !defined(__clang__)\n"
    "#define ONNXC_DPBUSD(c, b, w) __asm__(\"vpdpbusd %2, %1, %0\" : \"+v\"(c) : \"v\"(b), \"v\"(w))\n"
    "#else\n"
    "#define ONNXC_DPBUSD(c, b, w) c = _mm512_dpbusd_epi32(c, b, w)\n"
    "#endif\n"
    "#define ONNXC_QROW(i) { const __m512i wv = _mm512_set1_epi32(w[j + 16 * (i)]); \\\n"
    "    ONNXC_DPBUSD(c##i##0, b0, wv); ONNXC_DPBUSD(c##i##1, b1, wv); }\n"
    "#define ONNXC_QPUT(i) if ((i) < nr) { \\\n"
    "    const __m512i bi = _mm512_set1_epi32(bias[i]); const __m512 mi = _mm512_set1_ps(mult[i]); \\\n"
    "    __m512 f0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(c##i##0, bi)), mi); \\\n"
    "    __m512 f1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(c##i##1, bi)), mi); \\\n"
    "    f0 = _mm512_min_ps(_mm512_max_ps(f0, vl), vh); f1 = _mm512_min_ps(_mm512_max_ps(f1, vl), vh); \\\n"
    "    __m512i q0 = _mm512_add_epi32(_mm512_cvtps_epi32(f0), vz), q1 = _mm512_add_epi32(_mm512_cvtps_epi32(f1), vz); \\\n"
    "    if (res) { q0 = onnxc_qadd16(q0, res + (i) * ldy, m0, rc, ca); \\\n"
    "               q1 = onnxc_qadd16(q1, res + (i) * ldy + 16, m1, rc, ca); } \\\n"
    "    _mm512_mask_cvtepi32_storeu_epi8(y + (i) * ldy, m0, q0); \\\n"
    "    _mm512_mask_cvtepi32_storeu_epi8(y + (i) * ldy + 16, m1, q1); }\n"
    "ONNXC_QFN void onnxc_qtile(long k4, const int32_t *w, const uint8_t *b, long ldb, const int32_t *bias,\n"
    "                        const float *mult, int nr, uint8_t *y, long ldy, int np, float lo,\n"
    "                        float hi, int32_t zy, const uint8_t *res, const float *rc, int ca,\n"
    "                        const int32_t *rt, long rr) {\n"
    "  __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,\n"
    "          c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00,\n"
    "          c61 = c00, c70 = c00, c71 = c00;\n"
    "  for (long k = 0; k < k4; k += 16, w += 256) {\n"
    "    const long jn = k4 - k < 16 ? k4 - k : 16;\n"
    "    for (long j = 0; j < jn; j++, b += ldb) {\n"
    "      const __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 64);\n"
    "      ONNXC_QROW(0); ONNXC_QROW(1); ONNXC_QROW(2); ONNXC_QROW(3);\n"
    "      ONNXC_QROW(4); ONNXC_QROW(5); ONNXC_QROW(6); ONNXC_QROW(7);\n"
    "    }\n"
    "  }\n"
    "  if (rt) { /* split weights' residual (exact here too) */\n"
    "    b -= k4 * ldb;\n"
    "#define ONNXC_QRESV(i) for (long e = rt[rr + (i)]; e < rt[rr + (i) + 1]; e += 2) { \\\n"
    "      const __m512i b0 = _mm512_loadu_si512(b + rt[e] * ldb), b1 = _mm512_loadu_si512(b + rt[e] * ldb + 64); \\\n"
    "      const __m512i wv = _mm512_set1_epi32(rt[e + 1]); ONNXC_DPBUSD(c##i##0, b0, wv); ONNXC_DPBUSD(c##i##1, b1, wv); }\n"
    "    ONNXC_QRESV(0) ONNXC_QRESV(1) ONNXC_QRESV(2) ONNXC_QRESV(3)\n"
    "    ONNXC_QRESV(4) ONNXC_QRESV(5) ONNXC_QRESV(6) ONNXC_QRESV(7)\n"
    "#undef ONNXC_QRESV\n"
    "  }\n"
    "  const __m512 vl = _mm512_set1_ps(lo), vh = _mm512_set1_ps(hi);\n"
    "  const __m512i vz = _mm512_set1_epi32(zy);\n"
    "  const __mmask16 m0 = (__mmask16)(np >= 16 ? 0xffff : (1u << np) - 1u);\n"
    "  const __mmask16 m1 = (__mmask16)(np >= 32 ? 0xffff : np <= 16 ? 0 : (1u << (np - 16)) - 1u);\n"
    "  ONNXC_QPUT(0); ONNXC_QPUT(1); ONNXC_QPUT(2); ONNXC_QPUT(3);\n"
    "  ONNXC_QPUT(4); ONNXC_QPUT(5); ONNXC_QPUT(6); ONNXC_QPUT(7);\n"
    "}\n"
    ,
    "#else\n"
    "ONNXC_QFN void onnxc_qtile(long k4, const int32_t *w, const uint8_t *b, long ldb, const int32_t *bias,\n"
    "                        const float *mult, int nr, uint8_t *y, long ldy, int np, float lo,\n"
    "                        float hi, int32_t zy, const uint8_t *res, const float *rc, int ca,\n"
    "                        const int32_t *rt, long rr) {\n"
    "  int32_t acc[8][32];\n"
    "  const uint8_t *b0 = b;\n"
    "#if defined(__AVX2__)\n"
    "  /* 8 pixels at a time, the 8 rows' sums in 8 registers. Exact, unlike\n"
    "   * vpmaddubsw (whose pairs of products saturate in 16 bits): the bytes\n"
    "   * widened to 16 bits, even and odd k apart, and vpmaddwd adds each pair\n"
    "   * of products (at most 2 x 255 x 128) in 32 bits */\n"
    "  const __m256i lo8 = _mm256_set1_epi16(0x00ff);\n"
    "  for (int v = 0; v < 4 && 8 * v < np; v++) {\n"
    "    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;\n"
    "    const uint8_t *bv = b + 32 * v;\n"
    "    const int32_t *wk = w;\n"
    "    for (long k = 0; k < k4; k += 16, wk += 256) {\n"
    "      const long jn = k4 - k < 16 ? k4 - k : 16;\n"
    "      for (long j = 0; j < jn; j++, bv += ldb) {\n"
    "        const __m256i x = _mm256_loadu_si256((const __m256i *)bv);\n"
    "        const __m256i xe = _mm256_and_si256(x, lo8), xo = _mm256_srli_epi16(x, 8);\n"
    "#define ONNXC_QROW2(i) { const __m256i wv = _mm256_set1_epi32(wk[j + 16 * (i)]); \\\n"
    "          c##i = _mm256_add_epi32(c##i, _mm256_add_epi32( \\\n"
    "            _mm256_madd_epi16(xe, _mm256_srai_epi16(_mm256_slli_epi16(wv, 8), 8)), \\\n"
    "            _mm256_madd_epi16(xo, _mm256_srai_epi16(wv, 8)))); }\n"
    "        ONNXC_QROW2(0); ONNXC_QROW2(1); ONNXC_QROW2(2); ONNXC_QROW2(3);\n"
    "        ONNXC_QROW2(4); ONNXC_QROW2(5); ONNXC_QROW2(6); ONNXC_QROW2(7);\n"
    "#undef ONNXC_QROW2\n"
    "      }\n"
    "    }\n"
    "    _mm256_storeu_si256((__m256i *)(acc[0] + 8 * v), c0);\n"
    "    _mm256_storeu_si256((__m256i *)(acc[1] + 8 * v), c1);\n"
    "    _mm256_storeu_si256((__m256i *)(acc[2] + 8 * v), c2);\n"
    "    _mm256_storeu_si256((__m256i *)(acc[3] + 8 * v), c3);\n"
    "    _mm256_storeu_si256((__m256i *)(acc[4] + 8 * v), c4);\n"
    "    _mm256_storeu_si256((__m256i *)(acc[5] + 8 * v), c5);\n"
    "    _mm256_storeu_si256((__m256i *)(acc[6] + 8 * v), c6);\n"
    "    _mm256_storeu_si256((__m256i *)(acc[7] + 8 * v), c7);\n"
    "  }\n"
    "#else\n"
    "  for (int i = 0; i < 8; i++)\n"
    "    for (int p = 0; p < 32; p++)\n"
    "      acc[i][p] = 0;\n"
    "  for (long k = 0; k < k4; k++, b += ldb)\n"
    "    for (int i = 0; i < 8; i++) {\n"
    "      const uint32_t wv = (uint32_t)w[(k >> 4) * 256 + 16 * i + (k & 15)];\n"
    "      const int32_t w0 = (int32_t)(int8_t)(uint8_t)(wv & 0xffu);\n"
    "      const int32_t w1 = (int32_t)(int8_t)(uint8_t)((wv >> 8) & 0xffu);\n"
    "      const int32_t w2 = (int32_t)(int8_t)(uint8_t)((wv >> 16) & 0xffu);\n"
    "      const int32_t w3 = (int32_t)(int8_t)(uint8_t)(wv >> 24);\n"
    "      for (int p = 0; p < 32; p++)\n"
    "        acc[i][p] += (int32_t)b[4 * p] * w0 + (int32_t)b[4 * p + 1] * w1 +\n"
    "                     (int32_t)b[4 * p + 2] * w2 + (int32_t)b[4 * p + 3] * w3;\n"
    "    }\n"
    "#endif\n"
    "  for (int i = 0; rt && i < 8; i++) /* split weights' residual (onnxc_qtile_u is the fast form) */\n"
    "    for (long e = rt[rr + i]; e < rt[rr + i + 1]; e += 2) {\n"
    "      const uint8_t *be = b0 + rt[e] * ldb;\n"
    "      const uint32_t wv = (uint32_t)rt[e + 1];\n"
    "      for (int p = 0; p < 32; p++)\n"
    "        for (int j = 0; j < 4; j++)\n"
    "          acc[i][p] += (int32_t)be[4 * p + j] * (int32_t)(int8_t)(uint8_t)((wv >> (8 * j)) & 0xffu);\n"
    "    }\n"
    "  for (int i = 0; i < nr; i++) {\n"
    "    for (int p = 0; p < np; p++)\n"
    "      acc[i][p] += bias[i];\n"
    "    onnxc_qrow(acc[i], np, mult[i], lo, hi, zy, y + i * ldy);\n"
    "    if (res)\n"
    "      onnxc_qaddrow(ca ? y + i * ldy : res + i * ldy, ca ? res + i * ldy : y + i * ldy, np, rc,\n"
    "                    y + i * ldy);\n"
    "  }\n"
    "}\n"
    "#endif\n",
    "#if defined(__AVX2__) && !(defined(__AVX512F__) && defined(__AVX512VNNI__))\n"
    "#define ONNXC_QTILE_U 1\n"
    "/* (noinline: one copy of this large function, not one per conv) */\n"
    "/* onnxc_qtile for split weights (fuse_quant.c) and nr <= 32 rows (w: row 0's block; rows\n"
    " * 16.. wcs words on): no pair of products saturates vpmaddubsw's 16 bits, and the\n"
    " * residual table rt (rows rr.., pairs of k4 group and word) adds what the split left\n"
    " * over, also in safe pairs: exact int32 sums */\n"
    "ONNXC_QFN_NI void onnxc_qtile_u(long k4, const int32_t *w, long wcs, const uint8_t *b, long ldb,\n"
    "                          const int32_t *bias, const float *mult, int nr, uint8_t *y, long ldy, int np,\n"
    "                          float lo, float hi, int32_t zy, const uint8_t *res, const float *rc, int ca,\n"
    "                          const int32_t *rt, long rr) {\n"
    "  int32_t acc[32][32];\n"
    "    const __m256i one = _mm256_set1_epi16(1);\n"
    "#define ONNXC_QROWU(i, wd) { const __m256i wv = _mm256_set1_epi32(wd); \\\n"
    "      c##i##0 = _mm256_add_epi32(c##i##0, _mm256_madd_epi16(_mm256_maddubs_epi16(x0, wv), one)); \\\n"
    "      c##i##1 = _mm256_add_epi32(c##i##1, _mm256_madd_epi16(_mm256_maddubs_epi16(x1, wv), one)); }\n"
    "#define ONNXC_QRESU(i) for (long e = rt[rr + 4 * g + (i)]; e < rt[rr + 4 * g + (i) + 1]; e += 2) { \\\n"
    "      const uint8_t *be = b + 64 * v + rt[e] * ldb; \\\n"
    "      const __m256i x0 = _mm256_loadu_si256((const __m256i *)be), x1 = _mm256_loadu_si256((const __m256i *)(be + 32)); \\\n"
    "      ONNXC_QROWU(i, rt[e + 1]) }\n"
    "#define ONNXC_QACC(i) \\\n"
    "      c##i##0 = k0 ? _mm256_loadu_si256((const __m256i *)(acc[4 * g + (i)] + 16 * v)) : _mm256_setzero_si256(); \\\n"
    "      c##i##1 = k0 ? _mm256_loadu_si256((const __m256i *)(acc[4 * g + (i)] + 16 * v + 8)) : _mm256_setzero_si256()\n"
    "#define ONNXC_QSAV(i) _mm256_storeu_si256((__m256i *)(acc[4 * g + (i)] + 16 * v), c##i##0); \\\n"
    "      _mm256_storeu_si256((__m256i *)(acc[4 * g + (i)] + 16 * v + 8), c##i##1)\n"
    ,
    "    /* parts of 64 k4 groups (8 KB of b and 1 KB of weights per 4 rows: L1) for all rows and\n"
    "     * pixels, 4 rows x 16 pixels in registers (a broadcast weight serves 2 vectors) */\n"
    "    for (long k0 = 0; k0 < k4; k0 += 64) {\n"
    "      const long kn = k4 - k0 < 64 ? k4 - k0 : 64;\n"
    "      for (int g = 0; 4 * g < nr; g++) {\n"
    "      const int32_t *wg = w + (g >> 2) * wcs + (g & 3) * 64 + k0 * 16;\n"
    "      for (int v = 0; v < 2 && 16 * v < np; v++) {\n"
    "        if (np - 16 * v <= 8) { /* the last 8 pixels or fewer: one vector */\n"
    "          __m256i c0, c1, c2, c3;\n"
    "#define ONNXC_QROW1(i, wd) c##i = _mm256_add_epi32(c##i, \\\n"
    "            _mm256_madd_epi16(_mm256_maddubs_epi16(x0, _mm256_set1_epi32(wd)), one))\n"
    "#define ONNXC_QACC1(i) c##i = k0 ? _mm256_loadu_si256((const __m256i *)(acc[4 * g + (i)] + 16 * v)) \\\n"
    "                                 : _mm256_setzero_si256()\n"
    "          ONNXC_QACC1(0); ONNXC_QACC1(1); ONNXC_QACC1(2); ONNXC_QACC1(3);\n"
    "          const uint8_t *bv = b + 64 * v + k0 * ldb;\n"
    "          const int32_t *wk = wg;\n"
    "          for (long k = 0; k < kn; k += 16, wk += 256) {\n"
    "            const long jn = kn - k < 16 ? kn - k : 16;\n"
    "            for (long j = 0; j < jn; j++, bv += ldb) {\n"
    "              const __m256i x0 = _mm256_loadu_si256((const __m256i *)bv);\n"
    "              ONNXC_QROW1(0, wk[j]); ONNXC_QROW1(1, wk[j + 16]); ONNXC_QROW1(2, wk[j + 32]);\n"
    "              ONNXC_QROW1(3, wk[j + 48]);\n"
    "            }\n"
    "          }\n"
    "          for (int i = 0; k0 + 64 >= k4 && i < 4; i++)\n"
    "            for (long e = rt[rr + 4 * g + i]; e < rt[rr + 4 * g + i + 1]; e += 2) {\n"
    "              const __m256i x0 = _mm256_loadu_si256((const __m256i *)(b + 64 * v + rt[e] * ldb));\n"
    "              const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(x0, _mm256_set1_epi32(rt[e + 1])), one);\n"
    "              if (i == 0) c0 = _mm256_add_epi32(c0, p);\n"
    "              else if (i == 1) c1 = _mm256_add_epi32(c1, p);\n"
    "              else if (i == 2) c2 = _mm256_add_epi32(c2, p);\n"
    "              else c3 = _mm256_add_epi32(c3, p);\n"
    "            }\n"
    "          _mm256_storeu_si256((__m256i *)(acc[4 * g] + 16 * v), c0);\n"
    "          _mm256_storeu_si256((__m256i *)(acc[4 * g + 1] + 16 * v), c1);\n"
    "          _mm256_storeu_si256((__m256i *)(acc[4 * g + 2] + 16 * v), c2);\n"
    "          _mm256_storeu_si256((__m256i *)(acc[4 * g + 3] + 16 * v), c3);\n"
    "#undef ONNXC_QROW1\n"
    "#undef ONNXC_QACC1\n"
    "          continue;\n"
    "        }\n"
    ,
    "        __m256i c00, c01, c10, c11, c20, c21, c30, c31;\n"
    "        ONNXC_QACC(0); ONNXC_QACC(1); ONNXC_QACC(2); ONNXC_QACC(3);\n"
    "        const uint8_t *bv = b + 64 * v + k0 * ldb;\n"
    "        const int32_t *wk = wg;\n"
    "        for (long k = 0; k < kn; k += 16, wk += 256) {\n"
    "          const long jn = kn - k < 16 ? kn - k : 16;\n"
    "          for (long j = 0; j < jn; j++, bv += ldb) {\n"
    "            const __m256i x0 = _mm256_loadu_si256((const __m256i *)bv);\n"
    "            const __m256i x1 = _mm256_loadu_si256((const __m256i *)(bv + 32));\n"
    "            ONNXC_QROWU(0, wk[j]) ONNXC_QROWU(1, wk[j + 16]) ONNXC_QROWU(2, wk[j + 32])\n"
    "            ONNXC_QROWU(3, wk[j + 48])\n"
    "          }\n"
    "        }\n"
    "        if (k0 + 64 >= k4) {\n"
    "          ONNXC_QRESU(0) ONNXC_QRESU(1) ONNXC_QRESU(2) ONNXC_QRESU(3)\n"
    "        }\n"
    "        ONNXC_QSAV(0); ONNXC_QSAV(1); ONNXC_QSAV(2); ONNXC_QSAV(3);\n"
    "      }\n"
    "      }\n"
    "    }\n"
    "#undef ONNXC_QACC\n"
    "#undef ONNXC_QSAV\n"
    "#undef ONNXC_QROWU\n"
    "#undef ONNXC_QRESU\n"
    "  for (int i = 0; i < nr; i++) {\n"
    "    for (int p = 0; p < np; p++)\n"
    "      acc[i][p] += bias[i];\n"
    "    onnxc_qrow(acc[i], np, mult[i], lo, hi, zy, y + i * ldy);\n"
    "    if (res)\n"
    "      onnxc_qaddrow(ca ? y + i * ldy : res + i * ldy, ca ? res + i * ldy : y + i * ldy, np, rc,\n"
    "                    y + i * ldy);\n"
    "  }\n"
    "}\n"
    "#endif\n",
    "#if defined(__AMX_INT8__) && defined(__AMX_TILE__) && defined(__AVX512F__) && defined(__AVX512VNNI__) && \\\n"
    "    defined(__x86_64__) && defined(__linux__)\n"
    "#define ONNXC_QAMX 1\n"
    "/* Asks Linux for the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)\n"
    " * and configures tiles 0-7 as 16 rows of 64 bytes: 1 when the tiles are ready, else 0\n"
    " * (then the vpdpbusd kernel runs). */\n"
    "ONNXC_QFN int onnxc_qamx_begin(void) {\n"
    "  static const unsigned char cfg[64] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,\n"
    "                                        64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0,\n"
    "                                        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,\n"
    "                                        16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0};\n"
    "  long r;\n"
    "  __asm__ volatile(\"syscall\" : \"=a\"(r) : \"a\"(158L), \"D\"(0x1023L), \"S\"(18L) : \"rcx\", \"r11\", \"memory\");\n"
    "  if (r != 0)\n"
    "    return 0;\n"
    "  _tile_loadconfig(cfg);\n"
    "  return 1;\n"
    "}\n"
    "ONNXC_QFN void onnxc_qamx_end(int amx) {\n"
    "  if (amx)\n"
    "    _tile_release();\n"
    "}\n"
    "/* As onnxc_qtile for nr <= 32 channels (w: their first weight block; the next 16\n"
    " * channels' block nch * 256 words on) x 32 pixels, nch chunks of 64 k: AMX tdpbsud\n"
    " * (s8 weights x u8 columns, exact int32 sums), C tiles 0-3 (16 channels x 16 pixels),\n"
    " * A tiles 4-5 (the weight blocks), B tiles 6-7 (16 groups of 4 k x 16 pixels of b). */\n"
    "ONNXC_QFN void onnxc_qtile_amx(long nch, const int32_t *w, const uint8_t *b, const int32_t *bias,\n"
    "                            const float *mult, int nr, uint8_t *y, long ldy, int np, float lo,\n"
    "                            float hi, int32_t zy, const uint8_t *res, const float *rc, int ca) {\n"
    "  int32_t t[32 * 32];\n"
    "  _tile_zero(0);\n"
    "  _tile_zero(1);\n"
    "  if (nr > 16) {\n"
    "    const int32_t *w2 = w + nch * 256;\n"
    "    _tile_zero(2);\n"
    "    _tile_zero(3);\n"
    "    for (long q = 0; q < nch; q++) {\n"
    "      _tile_loadd(6, b + q * 2048, 128);\n"
    "      _tile_loadd(7, b + q * 2048 + 64, 128);\n"
    "      _tile_loadd(4, w + q * 256, 64);\n"
    "      _tile_loadd(5, w2 + q * 256, 64);\n"
    "      _tile_dpbsud(0, 4, 6);\n"
    "      _tile_dpbsud(1, 4, 7);\n"
    "      _tile_dpbsud(2, 5, 6);\n"
    "      _tile_dpbsud(3, 5, 7);\n"
    "    }\n"
    "    _tile_stored(2, t + 512, 128);\n"
    "    _tile_stored(3, t + 528, 128);\n"
    "  } else {\n"
    "    for (long q = 0; q < nch; q++) {\n"
    "      _tile_loadd(6, b + q * 2048, 128);\n"
    "      _tile_loadd(7, b + q * 2048 + 64, 128);\n"
    "      _tile_loadd(4, w + q * 256, 64);\n"
    "      _tile_dpbsud(0, 4, 6);\n"
    "      _tile_dpbsud(1, 4, 7);\n"
    "    }\n"
    "  }\n"
    "  _tile_stored(0, t, 128);\n"
    "  _tile_stored(1, t + 16, 128);\n"
    "  const __m512 vl = _mm512_set1_ps(lo), vh = _mm512_set1_ps(hi);\n"
    "  const __m512i vz = _mm512_set1_epi32(zy);\n"
    "  const __mmask16 m0 = (__mmask16)(np >= 16 ? 0xffff : (1u << np) - 1u);\n"
    "  const __mmask16 m1 = (__mmask16)(np >= 32 ? 0xffff : np <= 16 ? 0 : (1u << (np - 16)) - 1u);\n"
    "  for (int i = 0; i < nr; i++) {\n"
    "    const __m512i bi = _mm512_set1_epi32(bias[i]);\n"
    "    const __m512 mi = _mm512_set1_ps(mult[i]);\n"
    "    __m512 f0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_loadu_si512(t + 32 * i), bi)), mi);\n"
    "    __m512 f1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_loadu_si512(t + 32 * i + 16), bi)), mi);\n"
    "    f0 = _mm512_min_ps(_mm512_max_ps(f0, vl), vh);\n"
    "    f1 = _mm512_min_ps(_mm512_max_ps(f1, vl), vh);\n"
    "    __m512i q0 = _mm512_add_epi32(_mm512_cvtps_epi32(f0), vz), q1 = _mm512_add_epi32(_mm512_cvtps_epi32(f1), vz);\n"
    "    if (res) {\n"
    "      q0 = onnxc_qadd16(q0, res + i * ldy, m0, rc, ca);\n"
    "      q1 = onnxc_qadd16(q1, res + i * ldy + 16, m1, rc, ca);\n"
    "    }\n"
    "    _mm512_mask_cvtepi32_storeu_epi8(y + i * ldy, m0, q0);\n"
    "    _mm512_mask_cvtepi32_storeu_epi8(y + i * ldy + 16, m1, q1);\n"
    "  }\n"
    "}\n"
    "#endif\n",
};

bool qint_used(const Graph *g) {
  for (const Node *n = g->first; n; n = n->next)
    if (n->op == OP_QIntConv || n->op == OP_QIntAdd || n->op == OP_QIntGlobalAvgPool)
      return true;
  return false;
}

void qint_write_prelude(Buf *out) {
  buf_puts(out, "#if defined(__SSE2__) || defined(__AVX512F__)\n#include <immintrin.h>\n#endif\n");
  for (size_t i = 0; i < sizeof prelude / sizeof prelude[0]; i++)
    buf_puts(out, prelude[i]);
  buf_puts(out, "\n");
}

/* ---- QIntConv ----------------------------------------------------------------- */

typedef struct QConv {
  int64_t cin, h, w, cout, oh, ow, k[2], s[2], dil[2], pb[2], kdim, k4, kp, batch;
} QConv;

static void qconv_geometry(const Node *n, QConv *q) {
  const Shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  ec_conv_window(n, x, y, NULL, q->k, q->s, q->dil, q->pb);
  q->batch = x->d[0];
  q->cin = x->d[1];
  q->h = x->d[2];
  q->w = x->d[3];
  q->cout = y->d[1];
  q->oh = y->d[2];
  q->ow = y->d[3];
  q->kdim = ir_attr_int(n, "kdim", 0);
  q->k4 = (q->kdim + 3) / 4 * 4;
  q->kp = (q->kdim + QT_KC - 1) / QT_KC * QT_KC;  /* the columns' depth: whole weight blocks */
}

static bool direct_1x1(const QConv *q) {
  return q->k[0] == 1 && q->k[1] == 1 && q->s[0] == 1 && q->s[1] == 1 && q->pb[0] == 0 &&
         q->pb[1] == 0 && q->oh == q->h && q->ow == q->w;
}

/* Depthwise: a plane padded with the zero point (rows of pw bytes), then
 * int32 accumulators: with stride 1 over the padded width (one flat loop per
 * tap; the columns past OW are computed and dropped), else OH x OW. */
static void dw_dims(const QConv *q, int64_t *ph, int64_t *pw) {
  *ph = (q->oh - 1) * q->s[0] + (q->k[0] - 1) * q->dil[0] + 1;
  *pw = (q->ow - 1) * q->s[1] + (q->k[1] - 1) * q->dil[1] + 1;
  if (*ph < q->h + q->pb[0])
    *ph = q->h + q->pb[0];
  if (*pw < q->w + q->pb[1])
    *pw = q->w + q->pb[1];
}

static int64_t dw_acc_row(const QConv *q, int64_t pw) { return q->s[1] == 1 ? pw : q->ow; }

/* One thread's depthwise scratch: the plane (and 64 bytes), the accumulators. */
static int64_t dw_part(const QConv *q, int64_t ph, int64_t pw) {
  return (ph * pw + 64 + 63) / 64 * 64 + (q->oh * dw_acc_row(q, pw) * 4 + 63) / 64 * 64;
}

int64_t qint_scratch_bytes(const Node *n, int threads) {
  int64_t th = threads > 1 ? threads : 1;  /* per-thread parts when the kernel runs on the pool */
  if (n->op != OP_QIntConv)
    return 0;
  int64_t mode = ir_attr_int(n, "mode", 0);
  if (mode == 1)
    return 0;
  QConv q;
  qconv_geometry(n, &q);
  if (mode == 2) {
    int64_t ph, pw;
    dw_dims(&q, &ph, &pw);
    return th * dw_part(&q, ph, pw);
  }
  /* the interleaved columns, plus 4 im2col rows per thread unless the input is read directly */
  int64_t pp = (q.oh * q.ow + QT_NP - 1) / QT_NP * QT_NP;
  return q.kp * pp + (direct_1x1(&q) ? 0 : th * 4 * pp);
}

static void clamp_consts(EmitC *e, const Node *n) {
  int64_t zy = ir_attr_int(n, "y_zero_point", 0);
  ec_line(e, "const float lo = %lld.0f, hi = %lld.0f;", LL(ir_attr_int(n, "lo", 0) - zy),
          LL(ir_attr_int(n, "hi", 255) - zy));
  ec_line(e, "const int32_t zy = %lld;", LL(zy));
}

/* Mode 0. B = the uint8 columns, interleaved, tile by tile: for each tile of
 * 32 pixels, K/4 rows of 128 bytes, row g holding k = 4g..4g+3 of each of
 * its pixels (the last tile zero-padded). Each
 * group of 4 k is first gathered as 4 plain rows of P bytes (im2col, the
 * padding the input's zero point; a 1x1 stride-1 conv reads the input planes),
 * then interleaved. Then per tile of 32 pixels, the weight blocks (or per
 * block of 32 channels, the tiles, when the weights are the larger operand). */
static void emit_conv_gemm(EmitC *e, const Node *n, const QConv *q) {
  int64_t P = q->oh * q->ow, zx = ir_attr_int(n, "x_zero_point", 0);
  int64_t Pp = (P + QT_NP - 1) / QT_NP * QT_NP;
  bool direct = direct_1x1(q), res = ir_has_input(n, 4), split = ir_has_input(n, 5);
  /* Gp groups of 4 k per tile (whole weight blocks); G of them packed, the rest (k past
   * K4) meet zero weights only, so whatever bytes they hold add 0; ncb items of QT_CB
   * channels, nch weight blocks along k */
  int64_t G = q->k4 / 4, Gp = q->kp / 4, ncb = (q->cout + QT_CB - 1) / QT_CB, nt = Pp / QT_NP, nch = q->kp / QT_KC;
  /* the larger operand outside: read once from memory, the smaller one reused from cache */
  bool w_outer = q->cout > Pp;
  /* --threads (batch 1): items 0..ns-1 pack groups of k, the others each a
   * run of blocks of 32 channels (w_outer) or of tiles of pixels, after the
   * packing (runs: as few claims as keep the threads finishing together) */
  double macs = (double)q->cout * (double)P * (double)q->kdim;
  bool par = q->batch == 1 && ec_par_worth(e, ec_cost_ns(macs / 4, 0));
  int64_t ns = par ? (G < 4 * ec_threads(e) ? G : 4 * ec_threads(e)) : 1;
  int64_t ni = w_outer ? ncb : nt, nci = par ? ec_par_chunks(e, ni, ec_cost_ns(macs / 4, 0)) : ni;
  if (par)
    ec_set_parallel(e);
  clamp_consts(e, n);
  ec_line(e, "#if defined(ONNXC_QAMX)");
  ec_line(e, "const int amx = onnxc_qamx_begin();");
  ec_line(e, "#endif");
  if (res)  /* a residual QLinearAdd folded into the store (fuse_quant.c) */
    ec_line(e, "static const float rc[5] = {%.9ef, %.9ef, %.9ef, %lld.0f, %lld.0f};",
            (double)ir_attr_float(n, "res_a_ratio", 1), (double)ir_attr_float(n, "res_b_ratio", 1),
            (double)ir_attr_float(n, "res_fixed", 0), LL(ir_attr_int(n, "res_lo", 0)),
            LL(ir_attr_int(n, "res_hi", 255)));
  /* split weights: the columns' k order that pairs large weights with small ones */
  int nkp = 0;
  const int64_t *kperm = ir_attr_ints(n, "kperm", &nkp);
  if (kperm && nkp == q->kdim) {
    Buf kb;
    buf_init(&kb);
    for (int i = 0; i < nkp; i++)
      buf_printf(&kb, "%s%lld", i == 0 ? "" : i % 16 ? ", " : ",\n", LL(kperm[i]));
    ec_line(e, "static const int32_t kp[%d] = {\n%s};", nkp, kb.s);
    buf_free(&kb);
  } else {
    kperm = NULL;
  }
  ec_line(e, "uint8_t *B = S;");
  if (!direct)
    ec_line(e, "uint8_t *restrict rows = S + %lld + %s * %lld;", LL(q->kp * Pp), par ? "onnxc_th" : "0",
            LL(4 * Pp));
  ec_line(e, "for (long nb = 0; nb < %lld; nb++) {", LL(q->batch));
  ec_line(e, "const uint8_t *x = X0 + nb * %lld;", LL(q->cin * q->h * q->w));
  ec_line(e, "uint8_t *y = Y0 + nb * %lld;", LL(q->cout * P));
  if (res)
    ec_line(e, "const uint8_t *res = X4 + nb * %lld;", LL(q->cout * P));
  ec_line(e, "long own = 0, it;");
  ec_line(e, "(void)own;");
  ec_line(e, "while ((it = %s) < %lld) {", par ? "onnxc_nt > 1 ? onnxc_claim() : own++" : "own++",
          LL(ns + nci));
  ec_line(e, "if (it < %lld) {", LL(ns));
  ec_line(e, "for (long g = it * %lld / %lld; g < (it + 1) * %lld / %lld; g++) {", LL(G), LL(ns), LL(G),
          LL(ns));
  ec_line(e, "const uint8_t *r[4];");
  ec_line(e, "for (int j = 0; j < 4; j++) {");
  ec_line(e, "const long k = 4 * g + j;");
  if (direct) {
    ec_line(e, "r[j] = x + (k < %lld ? %s : 0) * %lld;", LL(q->kdim), kperm ? "kp[k]" : "k", LL(P));
    ec_line(e, "}");
    /* k past K multiplies zero weights: any row will do */
  } else {
    ec_line(e, "uint8_t *restrict row = rows + j * %lld;", LL(Pp));
    ec_line(e, "r[j] = row;");
    ec_line(e, "if (k >= %lld) { for (long p = 0; p < %lld; p++) row[p] = 0; continue; }", LL(q->kdim),
            LL(P));
    ec_line(e, "const long kk = %s;", kperm ? "kp[k]" : "k");
    ec_line(e, "const long ci = kk / %lld, kh = kk / %lld %% %lld, kw = kk %% %lld;",
            LL(q->k[0] * q->k[1]), LL(q->k[1]), LL(q->k[0]), LL(q->k[1]));
    ec_line(e, "const uint8_t *xc = x + ci * %lld;", LL(q->h * q->w));
    ec_line(e, "const long off = kw * %lld - %lld;", LL(q->dil[1]), LL(q->pb[1]));
    /* output columns j0..j1 read the input row, the others are padding */
    if (q->s[0] == 1 && q->s[1] == 1 && q->ow == q->w) {
      /* stride 1, output rows as long as input rows: row[p] = plane[p + delta]
       * over the valid output rows (one copy), then the padding columns */
      ec_line(e, "const long dh = kh * %lld - %lld;", LL(q->dil[0]), LL(q->pb[0]));
      ec_line(e, "long r0 = dh < 0 ? -dh : 0, r1 = %lld - dh;", LL(q->h));
      ec_line(e, "r1 = r1 > %lld ? %lld : r1;", LL(q->oh), LL(q->oh));
      ec_line(e, "r0 = r0 > r1 ? r1 : r0;");
      ec_line(e, "for (long p = 0; p < r0 * %lld; p++) row[p] = %lld;", LL(q->w), LL(zx));
      ec_line(e, "{");
      ec_line(e, "const uint8_t *src = xc + (r0 + dh) * %lld + off;", LL(q->w));
      ec_line(e, "uint8_t *restrict dst = row + r0 * %lld;", LL(q->w));
      ec_line(e, "long a = 0, b = (r1 - r0) * %lld;", LL(q->w));
      /* (the first and last elements may lie outside the plane: padding columns, set below) */
      ec_line(e, "if (r1 > r0 && (r0 + dh) * %lld + off < 0) a = -((r0 + dh) * %lld + off);", LL(q->w),
              LL(q->w));
      ec_line(e, "if (r1 > r0 && (r1 + dh) * %lld + off > %lld) b -= (r1 + dh) * %lld + off - %lld;",
              LL(q->w), LL(q->h * q->w), LL(q->w), LL(q->h * q->w));
      ec_line(e, "for (long p = a; p < b; p++) dst[p] = src[p];");
      ec_line(e, "}");
      ec_line(e, "for (long p = r1 * %lld; p < %lld; p++) row[p] = %lld;", LL(q->w), LL(P), LL(zx));
      ec_line(e, "if (off != 0)");
      ec_line(e, "  for (long oh = r0; oh < r1; oh++) {");
      ec_line(e, "    uint8_t *rp = row + oh * %lld;", LL(q->w));
      ec_line(e, "    if (off < 0) for (long j = 0; j < -off && j < %lld; j++) rp[j] = %lld;", LL(q->w),
              LL(zx));
      ec_line(e, "    else for (long j = %lld - off; j < %lld; j++) rp[j < 0 ? 0 : j] = %lld;", LL(q->w),
              LL(q->w), LL(zx));
      ec_line(e, "  }");
      ec_line(e, "}");
      goto interleave;
    }
    ec_line(e, "long j0 = off >= 0 ? 0 : (-off + %lld) / %lld, j1 = (%lld - off + %lld) / %lld;",
            LL(q->s[1] - 1), LL(q->s[1]), LL(q->w), LL(q->s[1] - 1), LL(q->s[1]));
    ec_line(e, "j0 = j0 > %lld ? %lld : j0;", LL(q->ow), LL(q->ow));
    ec_line(e, "j1 = j1 < j0 ? j0 : j1 > %lld ? %lld : j1;", LL(q->ow), LL(q->ow));
    ec_line(e, "for (long oh = 0; oh < %lld; oh++) {", LL(q->oh));
    ec_line(e, "uint8_t *restrict rp = row + oh * %lld;", LL(q->ow));
    ec_line(e, "const long ih = oh * %lld + kh * %lld - %lld;", LL(q->s[0]), LL(q->dil[0]),
            LL(q->pb[0]));
    ec_line(e, "if (ih < 0 || ih >= %lld) { for (long j = 0; j < %lld; j++) rp[j] = %lld; continue; }",
            LL(q->h), LL(q->ow), LL(zx));
    ec_line(e, "const uint8_t *xr = xc + ih * %lld;", LL(q->w));
    ec_line(e, "for (long j = 0; j < j0; j++) rp[j] = %lld;", LL(zx));
    if (q->s[1] == 1)
      ec_line(e, "for (long j = j0; j < j1; j++) rp[j] = xr[j + off];");
    else
      ec_line(e, "for (long j = j0; j < j1; j++) rp[j] = xr[j * %lld + off];", LL(q->s[1]));
    ec_line(e, "for (long j = j1; j < %lld; j++) rp[j] = %lld;", LL(q->ow), LL(zx));
    ec_line(e, "}");
    ec_line(e, "}");
  }
interleave:
  /* tile-major: tile t's K/4 rows of 128 bytes are contiguous */
  ec_line(e, "for (long t = 0; t < %lld; t++) {", LL(Pp / QT_NP));
  ec_line(e, "uint8_t *bt = B + (t * %lld + g) * %d;", LL(Gp), QT_NP * 4);
  ec_line(e, "const long np = %lld - t * %d < %d ? %lld - t * %d : %d;", LL(P), QT_NP, QT_NP, LL(P),
          QT_NP, QT_NP);
  ec_line(e, "onnxc_qinterleave(r[0] + t * %d, r[1] + t * %d, r[2] + t * %d, r[3] + t * %d, np, bt);",
          QT_NP, QT_NP, QT_NP, QT_NP);
  if (Pp > P)  /* the last tile's columns past P are computed, never stored: zeroed */
    ec_line(e, "for (long i = 4 * np; i < %d; i++) bt[i] = 0;", QT_NP * 4);
  ec_line(e, "}");  /* t */
  ec_line(e, "}");  /* g */
  if (par)
    ec_line(e, "onnxc_ready_set(onnxc_nt);");
  ec_line(e, "continue;");
  ec_line(e, "}");
  if (par)
    ec_line(e, "onnxc_ready_wait(onnxc_nt, %lld);", LL(ns));
  ec_line(e, "const long run = it - %lld;", LL(ns));
  ec_line(e, "for (long item = run * %lld / %lld; item < (run + 1) * %lld / %lld; item++) {", LL(ni), LL(nci),
          LL(ni), LL(nci));
  if (w_outer) {
    ec_line(e, "const long c0 = item * %d;", QT_CB);
    ec_line(e, "for (long p0 = 0; p0 < %lld; p0 += %d) {", LL(P), QT_NP);
  } else {
    ec_line(e, "const long p0 = item * %d;", QT_NP);
    ec_line(e, "for (long c0 = 0; c0 < %lld; c0 += %d) {", LL(q->cout), QT_CB);
  }
  ec_line(e, "const int np = (int)(%lld - p0 < %d ? %lld - p0 : %d);", LL(P), QT_NP, LL(P), QT_NP);
  const char *rs = res ? "res + c * %lld + p0" : "(const uint8_t *)0";
  const char *rcs = res ? "rc" : "(const float *)0";
  int ca = res ? (int)ir_attr_int(n, "res_conv_a", 1) : 0;
  if (!split) {  /* (split weights: the AVX2 build, no AMX) */
  ec_line(e, "#if defined(ONNXC_QAMX)");
  ec_line(e, "if (amx) {");
  ec_line(e, "const long c = c0;");
  ec_line(e, "onnxc_qtile_amx(%lld, X1 + c / 16 * %lld, B + p0 * %lld, X2 + c, X3 + c, "
             "(int)(%lld - c < %d ? %lld - c : %d), y + c * %lld + p0, %lld, np, lo, hi, zy, %s, %s, %d);",
          LL(nch), LL(nch * 256), LL(q->kp), LL(q->cout), QT_CB, LL(q->cout), QT_CB, LL(P), LL(P),
          arena_printf(e->g->arena, rs, LL(P)), rcs, ca);
  ec_line(e, "continue;");
  ec_line(e, "}");
  ec_line(e, "#endif");
  }
  if (split) {
    ec_line(e, "#if defined(ONNXC_QTILE_U)");
    ec_line(e, "onnxc_qtile_u(%lld, X1 + c0 / 16 * %lld, %lld, B + p0 * %lld, %d, X2 + c0, X3 + c0, "
               "(int)(%lld - c0 < %d ? %lld - c0 : %d), y + c0 * %lld + p0, %lld, np, lo, hi, zy, %s, %s, %d, X5, c0);",
            LL(q->k4 / 4), LL(nch * 256), LL(nch * 256), LL(q->kp), QT_NP * 4, LL(q->cout), QT_CB, LL(q->cout), QT_CB,
            LL(P), LL(P), arena_printf(e->g->arena, res ? "res + c0 * %lld + p0" : "(const uint8_t *)0", LL(P)),
            rcs, ca);
    ec_line(e, "#else");
  }
  ec_line(e, "for (long c = c0; c < c0 + %d && c < %lld; c += %d)", QT_CB, LL(q->cout), QT_MR);
  ec_line(e, "  onnxc_qtile(%lld, X1 + c / 16 * %lld + c %% 16 * 16, B + p0 * %lld, %d, X2 + c, X3 + c, "
             "(int)(%lld - c < %d ? %lld - c : %d), y + c * %lld + p0, %lld, np, lo, hi, zy, %s, %s, %d, %s, c);",
          LL(q->k4 / 4), LL(nch * 256), LL(q->kp), QT_NP * 4, LL(q->cout), QT_MR, LL(q->cout), QT_MR,
          LL(P), LL(P), arena_printf(e->g->arena, rs, LL(P)), rcs, ca, split ? "X5" : "(const int32_t *)0");
  if (split)
    ec_line(e, "#endif");
  ec_line(e, "}");
  ec_line(e, "}");  /* items of the run */
  ec_line(e, "}");  /* claims */
  ec_line(e, "}");  /* nb */
  ec_line(e, "#if defined(ONNXC_QAMX)");
  ec_line(e, "onnxc_qamx_end(amx);");
  ec_line(e, "#endif");
}

static void emit_depthwise(EmitC *e, const Node *n, const QConv *q) {
  int64_t ph, pw, zx = ir_attr_int(n, "x_zero_point", 0), taps = q->k[0] * q->k[1];
  dw_dims(q, &ph, &pw);
  int64_t ar = dw_acc_row(q, pw);
  /* --threads: channels claimed by every thread, each with its own plane and accumulators */
  bool par = ec_par_worth(e, ec_cost(COST_DW_TAP, (double)(q->batch * q->cout * q->oh * q->ow * taps)));
  if (par)
    ec_set_parallel(e);
  clamp_consts(e, n);
  ec_line(e, "uint8_t *restrict pl = S + %s * %lld;", par ? "onnxc_th" : "0", LL(dw_part(q, ph, pw)));
  ec_line(e, "int32_t *restrict acc = (int32_t *)(void *)(pl + %lld);",
          LL((ph * pw + 64 + 63) / 64 * 64));
  /* (64 bytes past the plane: the vector path's last loads read into them) */
  ec_line(e, "for (long i = 0; i < %lld; i++) pl[i] = %lld;", LL(ph * pw + 64), LL(zx));
  ec_line(e, "long own = 0, it;");
  ec_line(e, "(void)own;");
  /* runs of channels: one claim for a channel of a 7 x 7 map cost more than its taps */
  int64_t nplanes = q->batch * q->cout,
          nrun = par ? ec_par_chunks(e, nplanes, ec_cost(COST_DW_TAP, (double)(nplanes * q->oh * q->ow * taps)))
                     : nplanes;
  ec_line(e, "while ((it = %s) < %lld)", par ? "onnxc_nt > 1 ? onnxc_claim() : own++" : "own++", LL(nrun));
  ec_line(e, "for (long ic = it * %lld / %lld; ic < (it + 1) * %lld / %lld; ic++) {", LL(nplanes), LL(nrun),
          LL(nplanes), LL(nrun));
  ec_line(e, "const long nb = ic / %lld, c = ic %% %lld;", LL(q->cout), LL(q->cout));
  ec_line(e, "const uint8_t *x = X0 + (nb * %lld + c) * %lld;", LL(q->cin), LL(q->h * q->w));
  ec_line(e, "uint8_t *y = Y0 + (nb * %lld + c) * %lld;", LL(q->cout), LL(q->oh * q->ow));
  ec_line(e, "const int8_t *w = X1 + c * %lld;", LL(taps));
  ec_line(e, "for (long r = 0; r < %lld; r++)", LL(q->h));
  ec_line(e, "  for (long j = 0; j < %lld; j++) pl[(r + %lld) * %lld + %lld + j] = x[r * %lld + j];",
          LL(q->w), LL(q->pb[0]), LL(pw), LL(q->pb[1]), LL(q->w));
  bool vbmi = q->k[1] <= 4 && 15 * q->s[1] + (q->k[1] - 1) * q->dil[1] < 64;
  if (vbmi) {
    Buf ix;
    buf_init(&ix);
    for (int l = 0; l < 16; l++)
      for (int j = 0; j < 4; j++)
        buf_printf(&ix, "%s%lld", l || j ? ", " : "",
                   LL(l * q->s[1] + (j < q->k[1] ? j * q->dil[1] : 0)));
    ec_line(e, "#if defined(__AVX512F__) && defined(__AVX512VNNI__) && defined(__AVX512VBMI__)");
    ec_line(e, "{");
    ec_line(e, "static const uint8_t ix[64] = {%s};", ix.s);
    buf_free(&ix);
    ec_line(e, "const __m512i idx = _mm512_loadu_si512(ix);");
    ec_line(e, "int32_t w4[%lld];", LL(q->k[0]));
    ec_line(e, "for (long kh = 0; kh < %lld; kh++) {", LL(q->k[0]));
    ec_line(e, "uint32_t v = 0;");
    ec_line(e, "for (long kw = 0; kw < %lld; kw++) v |= (uint32_t)(uint8_t)w[kh * %lld + kw] << (8 * kw);",
            LL(q->k[1]), LL(q->k[1]));
    ec_line(e, "w4[kh] = (int32_t)v;");
    ec_line(e, "}");
    ec_line(e, "(void)acc;");
    ec_line(e, "for (long oh = 0; oh < %lld; oh++)", LL(q->oh));
    ec_line(e, "  onnxc_qdw_row(pl + oh * %lld, %lld, %lld, w4, %lld, %lld, idx, X2[c], X3[c], lo, hi, zy, "
               "y + oh * %lld);",
            LL(q->s[0] * pw), LL(q->dil[0] * pw), LL(q->k[0]), LL(q->ow), LL(q->s[1]), LL(q->ow));
    ec_line(e, "}");
  }
  /* AVX2: 16 pixels of an output row at a time, all taps in registers: the taps in
   * pairs, each pixel's two bytes widened to a pair of 16-bit words (stride 2: the
   * even bytes of 32) and vpmaddwd by the pair of weights, exact in int32 */
  bool avx2 = q->s[1] <= 2;
  if (avx2) {
    int64_t np2 = (taps + 1) / 2;
    ec_line(e, "#%s defined(__AVX2__)", vbmi ? "elif" : "if");
    ec_line(e, "{");
    ec_line(e, "int32_t wp[%lld];", LL(np2));
    ec_line(e, "long to[%lld];", LL(2 * np2));
    ec_line(e, "for (long t = 0; t < %lld; t++) {", LL(2 * np2));
    ec_line(e, "const long tt = t < %lld ? t : 0;", LL(taps));
    ec_line(e, "to[t] = tt / %lld * %lld + tt %% %lld * %lld;", LL(q->k[1]), LL(q->dil[0] * pw), LL(q->k[1]),
            LL(q->dil[1]));
    ec_line(e, "}");
    ec_line(e, "for (long t = 0; t < %lld; t++)", LL(np2));
    ec_line(e, "  wp[t] = (int32_t)((uint32_t)(uint16_t)(int16_t)w[2 * t] | "
               "(2 * t + 1 < %lld ? (uint32_t)(uint16_t)(int16_t)w[2 * t + 1] << 16 : 0u));",
            LL(taps));
    ec_line(e, "(void)acc;");
    ec_line(e, "const __m256i vb = _mm256_set1_epi32(X2[c]), vz = _mm256_set1_epi32(zy);");
    ec_line(e, "const __m256 vm = _mm256_set1_ps(X3[c]), vl = _mm256_set1_ps(lo), vh = _mm256_set1_ps(hi);");
    if (q->s[1] == 2)
      ec_line(e, "const __m256i ev = _mm256_set1_epi16(0x00ff);");
    ec_line(e, "for (long oh = 0; oh < %lld; oh++) {", LL(q->oh));
    ec_line(e, "const uint8_t *row = pl + oh * %lld;", LL(q->s[0] * pw));
    ec_line(e, "uint8_t *yr = y + oh * %lld;", LL(q->ow));
    ec_line(e, "for (long o = 0; o < %lld; o += 16) {", LL(q->ow));
    ec_line(e, "__m256i a0 = vb, a1 = _mm256_setzero_si256();");
    ec_line(e, "for (long t = 0; t < %lld; t++) {", LL(np2));
    if (q->s[1] == 1) {
      ec_line(e, "const __m256i u = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(row + o + to[2 * t])));");
      ec_line(e, "const __m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(row + o + to[2 * t + 1])));");
    } else {
      ec_line(e, "const __m256i u = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(row + 2 * o + to[2 * t])), ev);");
      ec_line(e, "const __m256i v = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(row + 2 * o + to[2 * t + 1])), ev);");
    }
    ec_line(e, "const __m256i wv = _mm256_set1_epi32(wp[t]);");
    ec_line(e, "a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_unpacklo_epi16(u, v), wv));");
    ec_line(e, "a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_unpackhi_epi16(u, v), wv));");
    ec_line(e, "}");
    ec_line(e, "a1 = _mm256_add_epi32(a1, vb);");
    /* a0: pixels 0-3 and 8-11, a1: 4-7 and 12-15; packus_epi32 puts them in order */
    ec_line(e, "__m256 f0 = _mm256_mul_ps(_mm256_cvtepi32_ps(a0), vm), f1 = _mm256_mul_ps(_mm256_cvtepi32_ps(a1), vm);");
    ec_line(e, "f0 = _mm256_min_ps(_mm256_max_ps(f0, vl), vh);");
    ec_line(e, "f1 = _mm256_min_ps(_mm256_max_ps(f1, vl), vh);");
    ec_line(e, "const __m256i q16 = _mm256_packus_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(f0), vz), "
               "_mm256_add_epi32(_mm256_cvtps_epi32(f1), vz));");
    ec_line(e, "const __m128i q8 = _mm256_castsi256_si128(_mm256_permute4x64_epi64("
               "_mm256_packus_epi16(q16, q16), 0xd8));");
    ec_line(e, "if (o + 16 <= %lld) {", LL(q->ow));
    ec_line(e, "_mm_storeu_si128((__m128i *)(yr + o), q8);");
    ec_line(e, "} else {");
    ec_line(e, "uint8_t tail[16];");
    ec_line(e, "_mm_storeu_si128((__m128i *)tail, q8);");
    ec_line(e, "for (long j = o; j < %lld; j++) yr[j] = tail[j - o];", LL(q->ow));
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "}");
  }
  if (vbmi || avx2)
    ec_line(e, "#else");
  ec_line(e, "for (long i = 0; i < %lld; i++) acc[i] = X2[c];", LL(q->oh * ar));
  ec_line(e, "for (long kh = 0; kh < %lld; kh++)", LL(q->k[0]));
  ec_line(e, "for (long kw = 0; kw < %lld; kw++) {", LL(q->k[1]));
  ec_line(e, "const int32_t wv = w[kh * %lld + kw];", LL(q->k[1]));
  if (q->s[1] == 1) {
    ec_line(e, "const uint8_t *restrict src = pl + kh * %lld + kw * %lld;", LL(q->dil[0] * pw),
            LL(q->dil[1]));
    if (q->s[0] == 1) {
      ec_line(e, "for (long i = 0; i < %lld; i++) acc[i] += (int32_t)src[i] * wv;",
              LL((q->oh - 1) * pw + q->ow));
    } else {
      ec_line(e, "for (long oh = 0; oh < %lld; oh++)", LL(q->oh));
      ec_line(e, "  for (long ow = 0; ow < %lld; ow++) acc[oh * %lld + ow] += (int32_t)src[oh * %lld + ow] * wv;",
              LL(q->ow), LL(pw), LL(q->s[0] * pw));
    }
  } else {
    ec_line(e, "const uint8_t *restrict src = pl + kh * %lld + kw * %lld;", LL(q->dil[0] * pw),
            LL(q->dil[1]));
    ec_line(e, "for (long oh = 0; oh < %lld; oh++)", LL(q->oh));
    ec_line(e, "  for (long ow = 0; ow < %lld; ow++) acc[oh * %lld + ow] += (int32_t)src[oh * %lld + ow * %lld] * wv;",
            LL(q->ow), LL(q->ow), LL(q->s[0] * pw), LL(q->s[1]));
  }
  ec_line(e, "}");
  ec_line(e, "for (long oh = 0; oh < %lld; oh++)", LL(q->oh));
  ec_line(e, "  onnxc_qrow(acc + oh * %lld, %lld, X3[c], lo, hi, zy, y + oh * %lld);", LL(ar),
          LL(q->ow), LL(q->ow));
  if (vbmi || avx2)
    ec_line(e, "#endif");
  ec_line(e, "}");
}

static void emit_gemm_mode(EmitC *e, const Node *n) {
  int64_t C = ir_attr_int(n, "cout", 0), K = ir_attr_int(n, "kdim", 0), M, numel;
  shape_numel(&n->in[0]->shape, &numel);
  M = K > 0 ? numel / K : 0;
  clamp_consts(e, n);
  ec_line(e, "for (long m = 0; m < %lld; m++)", LL(M));
  ec_line(e, "for (long c = 0; c < %lld; c++) {", LL(C));
  ec_line(e, "const uint8_t *x = X0 + m * %lld;", LL(K));
  ec_line(e, "const int8_t *w = X1 + c * %lld;", LL(K));
  ec_line(e, "Y0[m * %lld + c] = onnxc_qstore(onnxc_qdot(x, w, %lld) + X2[c], X3[c], lo, hi, zy);",
          LL(C), LL(K));
  ec_line(e, "}");
}

bool emitc_QIntConv(EmitC *e, const Node *n) {
  int64_t mode = ir_attr_int(n, "mode", 0), numel;
  if (!shape_numel(&n->out[0]->shape, &numel) || numel == 0) {
    ec_line(e, "(void)X0; (void)X1; (void)X2; (void)X3; (void)Y0;");
    return true;
  }
  if (mode == 1) {
    emit_gemm_mode(e, n);
    return true;
  }
  QConv q;
  qconv_geometry(n, &q);
  if (e->plan->scratch_size[n->id] < qint_scratch_bytes(n, e->threads))
    return diag_error(e->d, n, "internal: QIntConv without its scratch");
  if (mode == 2)
    emit_depthwise(e, n, &q);
  else
    emit_conv_gemm(e, n, &q);
  return true;
}

/* ---- QIntAdd, QIntGlobalAvgPool, QIntLut ------------------------------------------ */

/* MLAS's QLinearAdd: the zero points folded into one constant, two fused
 * multiply-adds (fmaf: one rounding each, on every target), rounded half to
 * even, saturated. */
bool emitc_QIntAdd(EmitC *e, const Node *n) {
  int64_t numel;
  shape_numel(&n->out[0]->shape, &numel);
  ec_line(e, "static const float c[5] = {%.9ef, %.9ef, %.9ef, %lld.0f, %lld.0f};",
          (double)ir_attr_float(n, "a_ratio", 1), (double)ir_attr_float(n, "b_ratio", 1),
          (double)ir_attr_float(n, "fixed", 0), LL(ir_attr_int(n, "lo", 0)), LL(ir_attr_int(n, "hi", 255)));
  ec_line(e, "onnxc_qaddrow(X0, X1, %lld, c, Y0);", LL(numel));
  return true;
}

bool emitc_QIntGlobalAvgPool(EmitC *e, const Node *n) {
  const Shape *x = &n->in[0]->shape;
  int64_t hw = 1;
  for (int i = 2; i < x->rank; i++)
    hw *= x->d[i];
  clamp_consts(e, n);
  ec_flat_for(e, "c", x->d[0] * x->d[1]);
  ec_line(e, "int32_t acc = %lld;", LL(ir_attr_int(n, "bias", 0)));
  ec_line(e, "for (long i = 0; i < %lld; i++) acc += X0[c * %lld + i];", LL(hw), LL(hw));
  ec_line(e, "Y0[c] = onnxc_qstore(acc, %.9ef, lo, hi, zy);", (double)ir_attr_float(n, "mult", 1));
  ec_line(e, "}");
  return true;
}

bool emitc_QIntLut(EmitC *e, const Node *n) {
  int64_t numel;
  shape_numel(&n->out[0]->shape, &numel);
  ec_flat_for(e, "i", numel);
  ec_line(e, "Y0[i] = X1[X0[i]];");
  ec_line(e, "}");
  return true;
}
