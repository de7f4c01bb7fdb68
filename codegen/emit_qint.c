/* emit_qint.c - C kernels of the int8 ops that fuse-quant makes
 * (passes/fuse_quant.c; docs/int8.md): QIntConv, QIntAdd,
 * QIntGlobalAvgPool, QIntLut.
 *
 * QIntConv mode 0 (a conv as a GEMM): the uint8 columns (im2col, padding
 * with the input's zero point) are interleaved, per tile of 32 pixels, into
 * rows of 32 pixels x 4 consecutive k (one 32-bit lane per pixel; K rounded
 * up to 64 per tile). The weights are int32 blocks of 16 channels x 64 k
 * (fuse_quant.c); split for AVX2 (Target.int8_pairs16: a part whose pairs
 * cannot saturate vpmaddubsw, an input 5 residual table, attribute kperm the
 * k order of the columns). The micro-kernels are in qint_prelude.c: AMX
 * (32 channels x 32 pixels), AVX-512 VNNI (8 x 32), AVX2 split (32 x 32 a
 * call, 4 x 16 in registers) and unsplit, portable C.
 * The requantization is fused into the store: float(acc + b) * m clamped,
 * rounded half to even, + zero point; with a fifth input (a residual Add
 * folded by fuse_quant.c), then MLAS's QLinearAdd of that byte and the
 * residual's, in registers.
 * Mode 0 with wt (Target.int8_lanes, fuse_quant.c's cost): the output
 * channels as the vector lanes over an NHWC copy of the input and a table of
 * each tap's pixel (emit_conv_lanes; docs/int8.md).
 * Mode 1 (X W^T, Gemm/MatMul): one int32 dot product per output; with wt
 * (Target.int8_lanes) the lanes product kernel (emit_gemm_lanes).
 * Mode 2 (depthwise): per channel, a copy of the plane padded with the zero
 * point, then per output row: vpermb + vpdpbusd (AVX-512 VBMI/VNNI), 16
 * pixels with every tap in registers (AVX2), else rows of int32 accumulators.
 */
#include "codegen_internal.h"


#define LL(x) ((long long)(x))
#define QT_NP 32 /* pixels per tile of the conv GEMM */
#define QT_MR 8  /* weight rows per call of the vpdpbusd / portable micro-kernel */
#define QT_CB 32 /* channels per call of the AMX micro-kernel, per item on the pool */
#define QT_KC 64 /* k per weight block (fuse_quant.c's layout: 16 channels x 64 k) */
#define QT_CT 64 /* channels per call of the transposed micro-kernel (onnxc_qtile_t) */

/* ---- QIntConv ----------------------------------------------------------------- */

typedef struct QConv {
  int64_t cin, h, w, cout, oh, ow, k[2], s[2], dil[2], pb[2], kdim, k4, kp, batch;
  DType yt; /* the output's type: uint8 (QIntConv), int32 (QIntConvInteger) */
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
  q->yt = n->out[0]->dt;
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

/* QIntConvInteger's scratch: the NHWC copy with its zero-point pixel, then
 * (with weight zero points) each input pixel's byte sum, int32. */
static int64_t ci_copy_bytes(const QConv *q) { return ((q->h * q->w + 1) * ((q->cin + 3) / 4 * 4) + 63) / 64 * 64; }

int64_t qint_scratch_bytes(const Node *n, int threads) {
  int64_t th = threads > 1 ? threads : 1;  /* per-thread parts when the kernel runs on the pool */
  if (n->op == OP_QIntConvInteger) {
    QConv q;
    qconv_geometry(n, &q);
    return ci_copy_bytes(&q) + (ir_has_input(n, 3) ? 4 * (q.h * q.w + 1) : 0);
  }
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
  if (ir_attr_int(n, "wt", 0))  /* 1x1: the interleaved columns; else the NHWC copy of the input and its
                                 * zero-point pixel */
    return direct_1x1(&q) ? q.kp * pp : (q.h * q.w + 1) * ((q.cin + 3) / 4 * 4);
  return q.kp * pp + (direct_1x1(&q) ? 0 : th * 4 * pp);
}

static void clamp_consts(EmitC *e, const Node *n) {
  int64_t zy = ir_attr_int(n, "y_zero_point", 0);
  ec_line(e, "const float lo = %lld.0f, hi = %lld.0f;", LL(ir_attr_int(n, "lo", 0) - zy),
          LL(ir_attr_int(n, "hi", 255) - zy));
  ec_line(e, "const int32_t zy = %lld;", LL(zy));
}

/* The constants of a residual QLinearAdd folded into the store (fuse_quant.c). */
static void residual_consts(EmitC *e, const Node *n) {
  if (ir_has_input(n, 4))
    ec_line(e, "static const float rc[5] = {%.9ef, %.9ef, %.9ef, %lld.0f, %lld.0f};",
            (double)ir_attr_float(n, "res_a_ratio", 1), (double)ir_attr_float(n, "res_b_ratio", 1),
            (double)ir_attr_float(n, "res_fixed", 0), LL(ir_attr_int(n, "res_lo", 0)),
            LL(ir_attr_int(n, "res_hi", 255)));
}

/* Both conv forms' work loop, per image of the batch: items 0..ns-1 prepare
 * the operand (packing or copying), the next nci each a run of the ni items
 * of products, claimed from the pool (par) or taken in order. claims_open
 * leaves the preparing branch open (`it` its item); claims_items closes it
 * and opens the loop over the run's items (`item`). */
static void claims_open(EmitC *e, const QConv *q, bool par, bool res, int64_t ns, int64_t nci) {
  int64_t P = q->oh * q->ow;
  ec_line(e, "for (long nb = 0; nb < %lld; nb++) {", LL(q->batch));
  ec_line(e, "const uint8_t *x = X0 + nb * %lld;", LL(q->cin * q->h * q->w));
  ec_line(e, "%s *y = Y0 + nb * %lld;", dtype_ctype(q->yt), LL(q->cout * P));
  if (res)
    ec_line(e, "const uint8_t *res = X4 + nb * %lld;", LL(q->cout * P));
  ec_line(e, "long own = 0, it;");
  ec_line(e, "(void)own;");
  ec_line(e, "while ((it = %s) < %lld) {", par ? "onnxc_nt > 1 ? onnxc_claim() : own++" : "own++",
          LL(ns + nci));
  ec_line(e, "if (it < %lld) {", LL(ns));
}

static void claims_items(EmitC *e, bool par, int64_t ns, int64_t ni, int64_t nci) {
  if (par)
    ec_line(e, "onnxc_ready_set(onnxc_nt);");
  ec_line(e, "continue;");
  ec_line(e, "}");
  if (par)
    ec_line(e, "onnxc_ready_wait(onnxc_nt, %lld);", LL(ns));
  ec_line(e, "const long run = it - %lld;", LL(ns));
  ec_line(e, "for (long item = run * %lld / %lld; item < (run + 1) * %lld / %lld; item++) {", LL(ni), LL(nci),
          LL(ni), LL(nci));
}

/* The lanes form's tap table for the 4 pixels p0.. of a tile (past np, the
 * last one again): src[4 tap + i] = pixel i's input pixel under that tap in
 * the NHWC copy xt (cin4 bytes a pixel), or its zero-point pixel (index HW)
 * where the tap falls in the padding; with sums, sp[i] += s1 of each. */
static void tap_table(EmitC *e, const QConv *q, int64_t cin4, bool sums) {
  ec_line(e, "for (int i = 0; i < 4; i++) {");
  ec_line(e, "const long p = p0 + (i < np ? i : np - 1), oh = p / %lld, ow = p %% %lld;", LL(q->ow), LL(q->ow));
  ec_line(e, "for (long kh = 0; kh < %lld; kh++) {", LL(q->k[0]));
  ec_line(e, "const long ih = oh * %lld - %lld + kh * %lld;", LL(q->s[0]), LL(q->pb[0]), LL(q->dil[0]));
  ec_line(e, "for (long kw = 0; kw < %lld; kw++) {", LL(q->k[1]));
  ec_line(e, "const long iw = ow * %lld - %lld + kw * %lld;", LL(q->s[1]), LL(q->pb[1]), LL(q->dil[1]));
  ec_line(e, "const long ip = (unsigned long)ih < %lluu && (unsigned long)iw < %lluu ? ih * %lld + iw : %lld;",
          (unsigned long long)q->h, (unsigned long long)q->w, LL(q->w), LL(q->h * q->w));
  ec_line(e, "src[(kh * %lld + kw) * 4 + i] = xt + ip * %lld;", LL(q->k[1]), LL(cin4));
  if (sums)
    ec_line(e, "sp[i] += s1[ip];");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
}

/* Items of the packing: groups of k, as many as 4 per thread. */
static int64_t pack_items(const EmitC *e, bool par, int64_t groups) {
  return !par ? 1 : groups < 4 * ec_threads(e) ? groups : 4 * ec_threads(e);
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
  int64_t ns = pack_items(e, par, G);
  int64_t ni = w_outer ? ncb : nt, nci = par ? ec_par_chunks(e, ni, ec_cost_ns(macs / 4, 0)) : ni;
  if (par)
    ec_set_parallel(e);
  clamp_consts(e, n);
  ec_line(e, "#if defined(ONNXC_QAMX)");
  ec_line(e, "const int amx = onnxc_qamx_begin();");
  ec_line(e, "#endif");
  residual_consts(e, n);
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
  claims_open(e, q, par, res, ns, nci);
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
  claims_items(e, par, ns, ni, nci);
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

/* Mode 0 with wt (fuse_quant.c: the output channels as the vector lanes).
 * The input is first copied channels-last (xt[pixel][Cin4], Cin4 = Cin
 * rounded up to 4, the padding channels and one more pixel the zero point);
 * then per tile of 4 output pixels a table of each tap's input pixel (the
 * zero-point pixel where the tap falls in the padding), and onnxc_qtile_n
 * reads 4 bytes of each pixel per group straight from xt: no im2col. Items:
 * a block of 64 channels x a run of pixels (several runs when the channel
 * blocks are too few to share out over the threads), after the copy (split
 * over the threads by pixels). */
static void emit_conv_lanes(EmitC *e, const Node *n, const QConv *q) {
  int64_t P = q->oh * q->ow, HW = q->h * q->w, zx = ir_attr_int(n, "x_zero_point", 0);
  int64_t cin4 = (q->cin + 3) / 4 * 4, taps = q->k[0] * q->k[1], kd = ir_attr_int(n, "kdim_t", taps * cin4);
  int64_t nch = (kd + QT_KC - 1) / QT_KC;
  bool res = ir_has_input(n, 4);
  double macs = (double)q->cout * (double)P * (double)q->kdim;
  bool par = q->batch == 1 && ec_par_worth(e, ec_cost_ns(macs / 4, 0));
  int64_t nct = (q->cout + QT_CT - 1) / QT_CT, p4 = (P + 3) / 4;
  int64_t npc = par && nct < 4 * ec_threads(e) ? (4 * ec_threads(e) + nct - 1) / nct : 1;
  npc = npc > p4 ? p4 : npc;
  int64_t ni = nct * npc, nci = par ? ec_par_chunks(e, ni, ec_cost_ns(macs / 4, 0)) : ni;
  /* 1x1, stride 1: the columns interleaved as emit_conv_gemm does (G groups of 4 k, tiles of 32
   * pixels Gp groups each), read in place; else the NHWC copy */
  bool direct = direct_1x1(q);
  int64_t G = q->k4 / 4, Gp = q->kp / 4;
  int64_t ns = direct ? pack_items(e, par, G) : par ? 2 * ec_threads(e) : 1;
  if (par)
    ec_set_parallel(e);
  clamp_consts(e, n);
  residual_consts(e, n);
  ec_line(e, "uint8_t *xt = S;");
  claims_open(e, q, par, res, ns, nci);
  if (direct) {
    ec_line(e, "for (long g = it * %lld / %lld; g < (it + 1) * %lld / %lld; g++) {", LL(G), LL(ns), LL(G), LL(ns));
    ec_line(e, "const uint8_t *r[4];");
    ec_line(e, "for (int j = 0; j < 4; j++) r[j] = x + (4 * g + j < %lld ? 4 * g + j : 0) * %lld;", LL(q->kdim),
            LL(P));
    ec_line(e, "for (long t = 0; t < %lld; t++)", LL((P + QT_NP - 1) / QT_NP));
    ec_line(e, "  onnxc_qinterleave(r[0] + t * %d, r[1] + t * %d, r[2] + t * %d, r[3] + t * %d, "
               "%lld - t * %d < %d ? %lld - t * %d : %d, xt + (t * %lld + g) * %d);",
            QT_NP, QT_NP, QT_NP, QT_NP, LL(P), QT_NP, QT_NP, LL(P), QT_NP, QT_NP, LL(Gp), QT_NP * 4);
    ec_line(e, "}");
    goto copied;
  }
  ec_line(e, "const long q0 = it * %lld / %lld, q1 = (it + 1) * %lld / %lld;", LL(HW), LL(ns), LL(HW), LL(ns));
  ec_line(e, "onnxc_qnhwc(x, %lld, %lld, %lld, q0, q1, xt);", LL(q->cin), LL(cin4), LL(HW));
  for (int64_t c = q->cin / 4 * 4; c < cin4; c++) {  /* the last channels, then the zero-point padding */
    if (c < q->cin)
      ec_line(e, "for (long p = q0; p < q1; p++) xt[p * %lld + %lld] = x[%lld + p];", LL(cin4), LL(c), LL(c * HW));
    else
      ec_line(e, "for (long p = q0; p < q1; p++) xt[p * %lld + %lld] = %lld;", LL(cin4), LL(c), LL(zx));
  }
  ec_line(e, "if (it == %lld) for (long c = 0; c < %lld; c++) xt[%lld + c] = %lld;", LL(ns - 1), LL(cin4),
          LL(HW * cin4), LL(zx));
copied:
  claims_items(e, par, ns, ni, nci);
  ec_line(e, "const long c0 = item / %lld * %d, pc = item %% %lld;", LL(npc), QT_CT, LL(npc));
  ec_line(e, "for (long p0 = pc * %lld / %lld * 4; p0 < (pc + 1) * %lld / %lld * 4 && p0 < %lld; p0 += 4) {",
          LL(p4), LL(npc), LL(p4), LL(npc), LL(P));
  ec_line(e, "const int np = (int)(%lld - p0 < 4 ? %lld - p0 : 4);", LL(P), LL(P));
  ec_line(e, "const uint8_t *src[%lld];", LL(4 * taps));
  if (direct) {
    ec_line(e, "for (int i = 0; i < 4; i++) {");
    ec_line(e, "const long p = p0 + (i < np ? i : np - 1);");
    ec_line(e, "src[i] = xt + (p >> 5) * %lld + 4 * (p & 31);", LL(Gp * QT_NP * 4));
    ec_line(e, "}");
  } else {
  tap_table(e, q, cin4, false);
  }
  ec_line(e, "onnxc_qtile_n(%lld, %lld, %d, src, X1 + c0 / 16 * %lld, %lld, np, X2 + c0, X3 + c0, "
             "(int)(%lld - c0 < %d ? %lld - c0 : %d), y + c0 * %lld + p0, %lld, lo, hi, zy, %s, %s, %d);",
          LL(taps), LL(direct ? G : cin4 / 4), direct ? QT_NP * 4 : 4, LL(nch * 256), LL(nch * 256), LL(q->cout), QT_CT, LL(q->cout), QT_CT, LL(P),
          LL(P), arena_printf(e->g->arena, res ? "res + c0 * %lld + p0" : "(const uint8_t *)0", LL(P)),
          res ? "rc" : "(const float *)0", res ? (int)ir_attr_int(n, "res_conv_a", 1) : 0);
  ec_line(e, "}");  /* p0 */
  ec_line(e, "}");  /* items of the run */
  ec_line(e, "}");  /* claims */
  ec_line(e, "}");  /* nb */
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

/* Mode 1 with wt (Target.int8_lanes): the product kernel of QIntMatMul
 * (emit_qmatmul.c): rows of X read in place 4 at a time, 64 columns of int32
 * sums in registers (onnxc_qacc_n), requantized row by row (onnxc_qput_r).
 * Items: a block of 64 columns x a run of rows. */
static void emit_gemm_lanes(EmitC *e, int64_t M, int64_t C, int64_t K) {
  qmm_open_rows(e, M, C, K, false);
  ec_line(e, "onnxc_qput_r(acc, np, nc, X2 + c0, X3 + c0, lo, hi, zy, Y0 + m0 * %lld + c0, %lld);", LL(C), LL(C));
  ec_line(e, "}");
  ec_line(e, "}");
}

static void emit_gemm_mode(EmitC *e, const Node *n) {
  int64_t C = ir_attr_int(n, "cout", 0), K = ir_attr_int(n, "kdim", 0), M, numel;
  shape_numel(&n->in[0]->shape, &numel);
  M = K > 0 ? numel / K : 0;
  clamp_consts(e, n);
  if (ir_attr_int(n, "wt", 0)) {
    emit_gemm_lanes(e, M, C, K);
    return;
  }
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
  else if (ir_attr_int(n, "wt", 0))
    emit_conv_lanes(e, n, &q);
  else
    emit_conv_gemm(e, n, &q);
  return true;
}

/* ---- QIntConvInteger -------------------------------------------------------------- */

/* ConvInteger (quantize_dynamic's convs; fuse_qmatmul.c) in the lanes form:
 * the NHWC copy of the input (channels past Cin 0, the padding pixel the
 * run-time zero point zx, so a tap in the padding adds (zx - zx) w = 0),
 * the tap table, onnxc_qacc_n; then int32 y = acc + zx D[c] - zw'[c] S(p),
 * S(p) the bytes summed over p's window (each input pixel's sum taken in
 * the copy, then summed over the taps), only when some zw' is not 0. */
static void emit_conv_integer(EmitC *e, const Node *n, const QConv *q) {
  int64_t P = q->oh * q->ow, HW = q->h * q->w, cin4 = (q->cin + 3) / 4 * 4, taps = q->k[0] * q->k[1];
  int64_t nch = (ir_attr_int(n, "kdim_t", taps * cin4) + QT_KC - 1) / QT_KC, wcs = nch * 256;
  bool zw = ir_has_input(n, 3);
  double macs = (double)q->cout * (double)P * (double)q->kdim;
  bool par = q->batch == 1 && ec_par_worth(e, ec_cost_ns(macs / 4, 0));
  int64_t nct = (q->cout + QT_CT - 1) / QT_CT, p4 = (P + 3) / 4;
  int64_t npc = par && nct < 4 * ec_threads(e) ? (4 * ec_threads(e) + nct - 1) / nct : 1;
  npc = npc > p4 ? p4 : npc;
  int64_t ni = nct * npc, nci = par ? ec_par_chunks(e, ni, ec_cost_ns(macs / 4, 0)) : ni;
  int64_t ns = par ? 2 * ec_threads(e) : 1;
  if (par)
    ec_set_parallel(e);
  ec_line(e, "uint8_t *xt = S;");
  if (zw)
    ec_line(e, "int32_t *s1 = (int32_t *)(void *)(S + %lld);", LL(ci_copy_bytes(q)));
  ec_line(e, "const int32_t zx = %s;", ir_has_input(n, 4) ? "(int32_t)X4[0]" : "0");
  claims_open(e, q, par, false, ns, nci);
  ec_line(e, "const long q0 = it * %lld / %lld, q1 = (it + 1) * %lld / %lld;", LL(HW), LL(ns), LL(HW), LL(ns));
  ec_line(e, "onnxc_qnhwc(x, %lld, %lld, %lld, q0, q1, xt);", LL(q->cin), LL(cin4), LL(HW));
  for (int64_t c = q->cin / 4 * 4; c < cin4; c++)
    if (c < q->cin)
      ec_line(e, "for (long p = q0; p < q1; p++) xt[p * %lld + %lld] = x[%lld + p];", LL(cin4), LL(c), LL(c * HW));
    else
      ec_line(e, "for (long p = q0; p < q1; p++) xt[p * %lld + %lld] = 0;", LL(cin4), LL(c));
  if (zw)
    ec_line(e, "for (long p = q0; p < q1; p++) s1[p] = onnxc_qsum(xt + p * %lld, %lld);", LL(cin4), LL(cin4));
  ec_line(e, "if (it == %lld) {", LL(ns - 1));
  ec_line(e, "for (long c = 0; c < %lld; c++) xt[%lld + c] = (uint8_t)(c < %lld ? zx : 0);", LL(cin4), LL(HW * cin4),
          LL(q->cin));
  if (zw)
    ec_line(e, "s1[%lld] = %lld * zx;", LL(HW), LL(q->cin));
  ec_line(e, "}");
  claims_items(e, par, ns, ni, nci);
  ec_line(e, "const long c0 = item / %lld * %d, pc = item %% %lld;", LL(npc), QT_CT, LL(npc));
  ec_line(e, "const int nc = (int)(%lld - c0 < %d ? %lld - c0 : %d);", LL(q->cout), QT_CT, LL(q->cout), QT_CT);
  ec_line(e, "for (long p0 = pc * %lld / %lld * 4; p0 < (pc + 1) * %lld / %lld * 4 && p0 < %lld; p0 += 4) {",
          LL(p4), LL(npc), LL(p4), LL(npc), LL(P));
  ec_line(e, "const int np = (int)(%lld - p0 < 4 ? %lld - p0 : 4);", LL(P), LL(P));
  ec_line(e, "const uint8_t *src[%lld];", LL(4 * taps));
  ec_line(e, "int32_t acc[4 * %d]%s;", QT_CT, zw ? ", sp[4] = {0, 0, 0, 0}" : "");
  tap_table(e, q, cin4, zw);
  ec_line(e, "onnxc_qacc_n(%lld, %lld, 4, src, X1 + c0 / 16 * %lld, %lld, nc, acc);", LL(taps), LL(cin4 / 4), LL(wcs),
          LL(wcs));
  ec_line(e, "for (int c = 0; c < nc; c++) {");
  ec_line(e, "const int32_t zd = zx * X2[c0 + c]%s;", zw ? ", zc = X3[c0 + c]" : "");
  ec_line(e, "int32_t *yc = y + (c0 + c) * %lld + p0;", LL(P));
  ec_line(e, "for (int i = 0; i < np; i++) yc[i] = acc[64 * (c >> 4) + 16 * i + (c & 15)] + zd%s;",
          zw ? " - zc * sp[i]" : "");
  ec_line(e, "}");
  ec_line(e, "}");  /* p0 */
  ec_line(e, "}");  /* items of the run */
  ec_line(e, "}");  /* claims */
  ec_line(e, "}");  /* nb */
}

bool emitc_QIntConvInteger(EmitC *e, const Node *n) {
  int64_t numel;
  if (!shape_numel(&n->out[0]->shape, &numel) || numel == 0) {
    for (int i = 0; i < n->n_in; i++)
      if (ir_has_input(n, i))
        ec_line(e, "(void)X%d;", i);
    ec_line(e, "(void)Y0;");
    return true;
  }
  QConv q;
  qconv_geometry(n, &q);
  if (e->plan->scratch_size[n->id] < qint_scratch_bytes(n, e->threads))
    return diag_error(e->d, n, "internal: QIntConvInteger without its scratch");
  emit_conv_integer(e, n, &q);
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
