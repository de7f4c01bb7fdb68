/* emit_gemm.c - packed, register-blocked float32 GEMM for Conv, Gemm and MatMul.
 *
 * Goto/BLIS blocking with every extent baked in: jc over N by GEMM_NC, pc
 * over K by GEMM_KC (the right operand's KC x NC block is packed into
 * scratch, or was packed at compile time when it is a weight), ic over M by
 * GEMM_MC (the left block likewise), then MR x NR register tiles computed by
 * one micro-kernel per model (gemm_prelude); a weight packed at compile time
 * times a few rows instead takes depth groups per panel (gk_deep). The
 * kernel is chosen by the C compiler's predefined macros: AVX-512F (8 x 32,
 * 16 zmm accumulators), AVX2 + FMA (6 x 16, 12 ymm), else portable C
 * (4 x 16), so firmware builds take the portable path and stay -std=c99
 * -pedantic clean. Accumulators are named variables: gcc keeps an
 * accumulator array in memory.
 * Convolutions build on it in emit_gemm_conv.c. A per-row or
 * per-column bias and a fused Relu/Clip are applied by the kernel in
 * registers before its one store; other epilogues (Gemm's alpha, beta, a
 * full C, LeakyRelu) run over each finished tile while it is in L1. Edge
 * tiles go through a small stack buffer.
 */
#include "gemm_internal.h"

/* Columns of one parallel item: 512 when that still gives 4 items per
 * thread, else 128 (narrower items were slower on BERT-tiny). */
int64_t gk_par_ncw(int64_t m, int64_t n, int threads) {
  return (m + GEMM_MC - 1) / GEMM_MC * ((n + 511) / 512) >= 4 * threads ? 512 : 128;
}

bool gk_prepacked(const Value *v) {
  return v->kind == VK_CONST && v->n_uses == 1 && !v->is_output;
}

/* Rows of A per block on one thread: all of them, up to 2 GEMM_MC, when B
 * was packed at compile time (a weight: the jc loop takes all of N at once),
 * so that each block of the weight is read from memory once rather than once
 * per row block (BERT-base's [128 x 768] x [768 x 3072]: the A block, 128 x
 * 256 floats, stays in L2); else GEMM_MC. */
static int64_t gk_mc(const Prod *p) {
  return !p->m_rt && p->b.src == SRC_PACKED && p->m <= 2 * GEMM_MC ? up(p->m, GEMM_MRP) : GEMM_MC;
}

bool gk_worth_packing(const Prod *p) { return p->m >= 4 && p->m * p->n * p->k >= GEMM_MIN_MACS; }

/* Packed A of one depth group at most this large for p->deep: with all of
 * BERT-base's [128 x 3072] A packed (1.5 MB) beside the weight's stream in a
 * 2 MB L2 the deep order was slower than the usual one. */
#define GEMM_DEEP_A_BYTES (512 * 1024)

/* Depth of one group of p->deep: the most depth blocks whose packed A fits
 * GEMM_DEEP_A_BYTES, all of K when it fits (one group). */
static int64_t gk_deep_group(const Prod *p) {
  int64_t blocks = GEMM_DEEP_A_BYTES / (up(p->m, GEMM_MRP) * GEMM_KC * 4);
  return min64(p->k, blocks * GEMM_KC);
}

/* Depth groups per panel (p->deep): a weight packed at compile time times
 * one block of rows (at most 2 GEMM_MC, the jc loop one block too); on the
 * pool only with column blocks of all rows. A is packed one depth group
 * (gk_deep_group) at a time, and the tiles of each 32-column panel run over
 * all depth blocks of the group before the next panel, so the weight streams
 * from memory in its stored order ([panel][k][32]: a group's part of each
 * panel is one run) and a panel's tiles of C stay in cache between depth
 * blocks, where the usual order stored and reloaded all of C once per depth
 * block. Each element's sum: the same blocks in the same order. */
static bool gk_deep(const Prod *p) {
  if (p->b.src != SRC_PACKED || p->a.src == SRC_PACKED || p->m_rt || p->n_rt || p->k_rt || p->lp ||
      p->k <= GEMM_KC || p->m > 2 * GEMM_MC || gk_deep_group(p) < 2 * GEMM_KC)
    return false;
  return !p->par || gk_par_split(p).all_rows;
}

/* Lays out the scratch of the product for p->threads threads: the one
 * layout both the emitted code and the planned size (gemm_scratch_bytes)
 * come from. */
void gk_layout(Prod *p, const Window *win) {
  if (p->lp) {
    bk_layout(p, win);
    return;
  }
  int64_t kc = min64(p->k, GEMM_KC), off = 0;
  p->off_b = p->off_a = p->off_pix = p->off_img = -1;
  p->par = threads_worth(p->threads, ec_cost_ns((double)p->m * p->n * p->k, 0));
  p->slot = 0;
  p->deep = gk_deep(p);
  /* rows x depth of one packed A: a block of it, or all depth blocks (deep) */
  int64_t a_floats = p->deep ? up(p->m, GEMM_MRP) * gk_deep_group(p)
                             : up(min64(p->m, p->par ? GEMM_MC : gk_mc(p)), GEMM_MRP) * kc;
  if (p->par) { /* one thread's buffers, then the next thread's */
    if (p->b.src != SRC_PACKED) {
      p->off_b = off;
      off += up(kc * up(min64(p->n, gk_par_ncw(p->m, p->n, p->threads)), GEMM_NRP) * 4, 64);
    }
    if (p->a.src != SRC_PACKED) {
      p->off_a = off;
      off += up(a_floats * 4, 64);
    }
    p->slot = off;
    off *= p->threads;
  } else if (p->b.src != SRC_PACKED) {
    p->off_b = off;
    off += up(kc * up(min64(p->n, GEMM_NC), GEMM_NRP) * 4, 64);
  }
  if (p->a.src != SRC_PACKED && !p->par) {
    p->off_a = off;
    off += up(a_floats * 4, 64);
  }
  if (p->b.src == SRC_IM2COL) {
    p->off_pix = off;
    off += up(up(p->n, GEMM_NRP) * 4, 64);
    if (win->padded) {
      p->off_img = off;
      off += up((win->c * (win->h + win->pt + win->pb) * (win->w + win->pl + win->pr) + 16) * 4, 64);
    }
  }
  p->bytes = off;
}

bool gk_scratch_ok(const EmitC *e, const Node *n, const Prod *p) {
  int64_t have = e->plan && e->plan->scratch_size ? e->plan->scratch_size[n->id] : 0;
  return p->m > 0 && p->n > 0 && p->k > 0 && have >= p->bytes && p->bytes > 0;
}

void gemm_act_expr(const Node *n, const char *operand, Buf *out) {
  const char *act = ir_attr_str(n, "activation", "");
  char lo[64], hi[64];
  /* The operand may be a sum ("v + bg[i]"): substituted bare into "v * alpha"
   * it would scale only the last term, so it always goes in parenthesized. */
  Buf wrapped = {0};
  buf_printf(&wrapped, "(%s)", operand);
  const char *v = wrapped.s;
  if (ir_attr(n, "epilogue")) {  /* an elementwise chain from fusion (kernel_desc.c) */
    Diag d;
    diag_init(&d, n->g->file ? n->g->file : "", stderr);
    IR_ASSERT(kd_epilogue_expr(n, v, out, &d));
    diag_free(&d);
  } else if (strcmp(act, "Relu") == 0) {
    buf_printf(out, "(%s > 0 ? %s : 0.0f)", v, v);
  } else if (strcmp(act, "Clip") == 0) {
    ec_literal(DT_F32, ir_attr_float(n, "activation_min", -INFINITY), lo, sizeof lo);
    ec_literal(DT_F32, ir_attr_float(n, "activation_max", INFINITY), hi, sizeof hi);
    buf_printf(out, "((%s < %s ? %s : %s) > %s ? %s : (%s < %s ? %s : %s))", v, lo, lo, v, hi, hi,
               v, lo, lo, v);
  } else if (strcmp(act, "LeakyRelu") == 0) {
    ec_literal(DT_F32, ir_attr_float(n, "activation_alpha", 0.01f), lo, sizeof lo);
    buf_printf(out, "(%s >= 0 ? %s : %s * %s)", v, v, v, lo);
  } else {
    buf_puts(out, v);
  }
  buf_free(&wrapped);
}

/* ---- emission ------------------------------------------------------------------- */

/* v as C text, or rt (its run-time expression) when set; from a ring of
 * buffers, so a few can be live in one ec_line call. */
static const char *rtv(int64_t v, const char *rt) {
  static char ring[8][256];
  static int at;
  if (rt)
    return rt;
  char *b = ring[at++ % 8];
  snprintf(b, sizeof ring[0], "%lld", LL(v));
  return b;
}

/* Packs B[pc.., jc..] (kc x nc) into 32-column panels at bb. */
static void emit_pack_b(EmitC *e, const Prod *p, const Window *win) {
  const Operand *b = &p->b;
  if (b->src == SRC_IM2COL_RT) { /* the depth block's taps, once for all its panels */
    ec_line(e, "long tap_c[%d], tap_h[%d], tap_off[%d], tap_lo[%d], tap_hi[%d];", GEMM_KC, GEMM_KC, GEMM_KC,
            GEMM_KC, GEMM_KC);
    ec_line(e, "for (long kk = 0; kk < kc; kk++) {");
    ec_line(e, "const long kg = pc + kk, t = kg %% (KH * KW), kw = t %% KW, off = kw * DW - PL;");
    ec_line(e, "const long hi = W - off <= 0 ? 0 : (W - off - 1) / SW + 1;");
    ec_line(e, "tap_c[kk] = kg / (KH * KW) * H;");
    ec_line(e, "tap_h[kk] = t / KW * DH - PT;");
    ec_line(e, "tap_off[kk] = off;");
    ec_line(e, "tap_lo[kk] = off >= 0 ? 0 : (-off + SW - 1) / SW;");
    ec_line(e, "tap_hi[kk] = hi > OW ? OW : hi;");
    ec_line(e, "}");
  }
  ec_line(e, "for (long q = 0; q < nc; q += 32) {");
  ec_line(e, "const long w = nc - q < 32 ? nc - q : 32;");
  ec_line(e, "float *d = bb + q * kc;");
  if (b->src == SRC_ROWS) {
    const char *ld = rtv(b->ld, b->ld_rt);
    ec_line(e, "const float *s = %s + pc * %s + jc + q;", b->ptr, ld);
    ec_line(e, "for (long kk = 0; kk < kc; kk++) {");
    ec_line(e, "long x = 0;");
    ec_line(e, "if (w == 32) {");
    ec_line(e, "for (x = 0; x < 32; x++) d[kk * 32 + x] = s[kk * %s + x];", ld);
    ec_line(e, "} else {");
    ec_line(e, "for (x = 0; x < w; x++) d[kk * 32 + x] = s[kk * %s + x];", ld);
    ec_line(e, "for (; x < 32; x++) d[kk * 32 + x] = 0;");
    ec_line(e, "}");
    ec_line(e, "}");
  } else if (b->src == SRC_IM2COL_RT) {
    /* column q + x is output pixel jc + q + x; row kk is tap (c, kh, kw) of
     * depth pc + kk (its image plane, row shift, column shift and the output
     * columns it reads inside the image: tables made before the panels, in
     * emit_pack_b's caller's block); the panel's pixels are runs along output
     * rows, found once per panel, each copying the input row under the tap */
    ec_line(e, "long rx[34], roh[34], row0[34], nr = 0;");
    ec_line(e, "{");
    ec_line(e, "long x = 0, pp = jc + q, oh = pp / OW, ow = pp %% OW;");
    ec_line(e, "while (x < w) {");
    ec_line(e, "const long r = OW - ow < w - x ? OW - ow : w - x;");
    ec_line(e, "rx[nr] = x, roh[nr] = oh, row0[nr] = ow, nr++;");
    ec_line(e, "x += r, ow = 0, oh++;");
    ec_line(e, "}");
    ec_line(e, "rx[nr] = w;");
    ec_line(e, "}");
    ec_line(e, "for (long kk = 0; kk < kc; kk++) {");
    ec_line(e, "float *dk = d + kk * 32;");
    ec_line(e, "const long tc = tap_c[kk], th = tap_h[kk], off = tap_off[kk], lo = tap_lo[kk], hi = tap_hi[kk];");
    ec_line(e, "for (long rr = 0; rr < nr; rr++) {");
    ec_line(e, "const long ow = row0[rr], a1 = ow + rx[rr + 1] - rx[rr], ih = roh[rr] * SH + th;");
    ec_line(e, "float *dx = dk + rx[rr];");
    ec_line(e, "if (ih < 0 || ih >= H) {");
    ec_line(e, "for (long u = ow; u < a1; u++) dx[u - ow] = 0;");
    ec_line(e, "continue;");
    ec_line(e, "}");
    ec_line(e, "const float *xr = %s + (tc + ih) * W;", b->ptr);
    ec_line(e, "const long v0 = ow > lo ? ow : lo, v1 = a1 < hi ? a1 : hi;");
    ec_line(e, "long u = ow;");
    ec_line(e, "for (; u < v0 && u < a1; u++) dx[u - ow] = 0;");
    ec_line(e, "if (SW == 1)");
    ec_line(e, "  for (; u < v1; u++) dx[u - ow] = xr[u + off];");
    ec_line(e, "else");
    ec_line(e, "  for (; u < v1; u++) dx[u - ow] = xr[u * SW + off];");
    ec_line(e, "for (; u < a1; u++) dx[u - ow] = 0;");
    ec_line(e, "}");
    ec_line(e, "for (long x = w; x < 32; x++) dk[x] = 0;");
    ec_line(e, "}");
  } else if (b->src == SRC_TRANS) {
    ec_line(e, "for (long x = 0; x < 32; x++) {");
    ec_line(e, "if (x < w) {");
    ec_line(e, "const float *s = %s + (jc + q + x) * %s + pc;", b->ptr, rtv(b->ld, b->ld_rt));
    ec_line(e, "for (long kk = 0; kk < kc; kk++) d[kk * 32 + x] = s[kk];");
    ec_line(e, "} else {");
    ec_line(e, "for (long kk = 0; kk < kc; kk++) d[kk * 32 + x] = 0;");
    ec_line(e, "}");
    ec_line(e, "}");
  } else {
    int64_t wp = win->w + win->pl + win->pr, plane = (win->h + win->pt + win->pb) * wp;
    int64_t taps = win->kh * win->kw;
    /* the panel's pixels as runs of one output row (step sw in the image):
     * a row's run is copied by a vectorizable loop, not gathered */
    int64_t sw = win->sw;
    char step[32] = "";
    if (sw != 1)
      snprintf(step, sizeof step, " * %lld", LL(sw));
    ec_line(e, "const int *px = pix + jc + q;");
    ec_line(e, "const int run = w == 32 && px[31] - px[0] == %lld;", LL(31 * sw));
    ec_line(e, "int ro[33], nr = 0;");
    ec_line(e, "for (long x = 0; x < w && !run; x++)");
    ec_line(e, "  if (x == 0 || px[x] != px[x - 1] + %lld) ro[nr++] = (int)x;", LL(sw));
    ec_line(e, "ro[nr] = (int)w;");
    ec_line(e, "for (long kk = 0; kk < kc; kk++) {");
    ec_line(e, "const long kg = pc + kk, t = kg %% %lld;", LL(taps));
    ec_line(e, "const float *s = %s + kg / %lld * %lld + t / %lld * %lld + t %% %lld * %lld;",
            b->ptr, LL(taps), LL(plane), LL(win->kw), LL(win->dh * wp), LL(win->kw), LL(win->dw));
    ec_line(e, "float *dk = d + kk * 32;");
    ec_line(e, "if (run) {");
    ec_line(e, "const float *s0 = s + px[0];");
    ec_line(e, "for (long x = 0; x < 32; x++) dk[x] = s0[x%s];", step);
    ec_line(e, "} else {");
    ec_line(e, "for (int r = 0; r < nr; r++) {");
    ec_line(e, "const float *sr = s + px[ro[r]];");
    ec_line(e, "float *dr = dk + ro[r];");
    ec_line(e, "const long l = ro[r + 1] - ro[r];");
    ec_line(e, "for (long x = 0; x < l; x++) dr[x] = sr[x%s];", step);
    ec_line(e, "}");
    ec_line(e, "for (long x = w; x < 32; x++) dk[x] = 0;");
    ec_line(e, "}");
    ec_line(e, "}");
  }
  ec_line(e, "}");
}

/* Packs A[ic.., pc..] (mc x kc) into panels of ONNXC_MR rows at ab (a C
 * expression). */
static void emit_pack_a(EmitC *e, const Prod *p, const char *ab) {
  const Operand *a = &p->a;
  /* panels of ONNXC_MR rows (the micro-kernel's), k-major; rows past mc are 0 */
  ec_line(e, "for (long r0 = 0; r0 < mc; r0 += ONNXC_MR) {");
  ec_line(e, "float *d = %s + r0 * kc;", ab);
  if (a->src == SRC_ROWS) {
    /* a full panel: one pass over its k, MR rows each (its stores in order;
     * the row-by-row loop stored every MR-th float and took 5% of SGEMM
     * 1024^3); the last, partial one row by row with zeros after */
    const char *ld = rtv(a->ld, a->ld_rt);
    ec_line(e, "if (r0 + ONNXC_MR <= mc) {");
    ec_line(e, "const float *s = %s + (ic + r0) * %s + pc;", a->ptr, ld);
    ec_line(e, "for (long kk = 0; kk < kc; kk++) {");
    ec_line(e, "float *dk = d + kk * ONNXC_MR;");
    ec_line(e, "for (long r = 0; r < ONNXC_MR; r++) dk[r] = s[r * %s + kk];", ld);
    ec_line(e, "}");
    ec_line(e, "} else");
    ec_line(e, "for (long r = 0; r < ONNXC_MR; r++) {");
    ec_line(e, "if (r0 + r < mc) {");
    ec_line(e, "const float *s = %s + (ic + r0 + r) * %s + pc;", a->ptr, rtv(a->ld, a->ld_rt));
    ec_line(e, "for (long kk = 0; kk < kc; kk++) d[kk * ONNXC_MR + r] = s[kk];");
    ec_line(e, "} else {");
    ec_line(e, "for (long kk = 0; kk < kc; kk++) d[kk * ONNXC_MR + r] = 0;");
    ec_line(e, "}");
    ec_line(e, "}");
  } else {
    ec_line(e, "const long h = mc - r0 < ONNXC_MR ? mc - r0 : ONNXC_MR;");
    ec_line(e, "for (long kk = 0; kk < kc; kk++) {");
    ec_line(e, "const float *s = %s + (pc + kk) * %s + ic + r0;", a->ptr, rtv(a->ld, a->ld_rt));
    ec_line(e, "long r = 0;");
    ec_line(e, "for (; r < h; r++) d[kk * ONNXC_MR + r] = s[r];");
    ec_line(e, "for (; r < ONNXC_MR; r++) d[kk * ONNXC_MR + r] = 0;");
    ec_line(e, "}");
  }
  ec_line(e, "}");
}

/* The MR x NR tiles of one packed block (expects jc, nc, pc, kc, ic, mc and
 * bb/ab as the operands need); p->deep: of the depth group pg..ge, each panel
 * over every block of it (declares pc and kc; A's block pc at ab + (pc - pg)
 * x rows, rows rounded up to GEMM_MRP). */
static void emit_tiles(EmitC *e, const Prod *p) {
  int64_t K = p->k;
  const char *ldy = rtv(p->ldy, p->ldy_rt), *Kt = rtv(K, p->k_rt);
  ec_line(e, "for (long jr = 0; jr < nc; jr += ONNXC_NR) {");
  if (p->deep) {
    ec_line(e, "for (long pc = pg; pc < ge; pc += %d) {", GEMM_KC);
    ec_line(e, "const long kc = ge - pc < %d ? ge - pc : %d;", GEMM_KC, GEMM_KC);
  }
  if (p->b.src == SRC_PACKED)
    ec_line(e, "const float *b = %s + (jc + jr - jr %% 32) * %lld + pc * 32 + jr %% 32;", p->b.ptr,
            LL(K));
  else
    ec_line(e, "const float *b = bb + (jr - jr %% 32) * kc + jr %% 32;");
  ec_line(e, "const long cols = nc - jr < ONNXC_NR ? nc - jr : ONNXC_NR;");
  /* No software prefetch of the next weight panel: the panels are read in
   * address order, and on Zen 4 the hardware prefetcher alone streams them
   * faster. A share of the next block prefetched by each tile (as up to the
   * 25th session) cost [20 x 1024] x [1024 x 8210] 4.2 -> 5.3 ms, [96 x 1024] x
   * [1024 x 8210] 14.9 -> 17.2 ms and three FFN pairs of BERT-base's shapes
   * 33.0 -> 35.8 ms (weights from DRAM each run; BERT-base itself 231 vs 235-239
   * ms, sum of kernels). */
  ec_line(e, "for (long ir = 0; ir < mc; ir += ONNXC_MR) {");
  ec_line(e, "const long as = %s;", p->a.src == SRC_PACKED ? "24" : "ONNXC_MR");
  if (p->a.src == SRC_PACKED)
    ec_line(e, "const float *a = %s + (ic + ir - ir %% 24) * %lld + pc * 24 + ir %% 24;", p->a.ptr,
            LL(K));
  else
    ec_line(e, "const float *a = ab + %s ir * kc;", /* panels of ONNXC_MR rows */
            p->deep ? arena_printf(e->g->arena, "(pc - pg) * %lld +", LL(up(p->m, GEMM_MRP))) : "");
  ec_line(e, "const long rows = mc - ir < ONNXC_MR ? mc - ir : ONNXC_MR;");
  ec_line(e, "float *c = %s + (ic + ir) * %s + jc + jr;", p->y, ldy);
  /* full: the micro-kernel's whole tile; q4: a tile of up to 4 rows and full
   * width, where the target has onnxc_ukr4 (the same sums); both store into Y
   * directly, the rest goes through t */
  ec_line(e, "const int full = rows == ONNXC_MR && cols == ONNXC_NR;");
  ec_line(e, "const int q4 = ONNXC_UKR4 && !full && rows <= 4 && cols == ONNXC_NR;");
  ec_line(e, "const int last = pc + kc == %s;", Kt);
  ec_line(e, "(void)last;");
  for (int v = 0; v < 2; v++) {
    const char *head = v == 0 ? "onnxc_ukr(kc, a, as, b, (const int *)0," : "onnxc_ukr4((int)rows, kc, a, as, b,";
    ec_line(e, v == 0 ? "if (full) {" : "} else if (q4) {");
    if (p->fast_epi && p->res)
      ec_line(e, "%s c, %s, pc > 0, last ? %s + (ic + ir) * %s + jc + jr : "
                 "(const float *)0, last ? %s : (const float *)0, last ? %s : (const float *)0, "
                 "last ? %d : 0, %s, %s);", head, ldy, p->res, ldy, p->rb, p->cb, p->act,
              p->lo, p->hi);
    else if (p->fast_epi)
      ec_line(e, "%s c, %s, pc > 0, (const float *)0, last ? %s : (const float *)0, "
                 "last ? %s : (const float *)0, last ? %d : 0, "
                 "%s, %s);", head, ldy, p->rb, p->cb, p->act, p->lo, p->hi);
    else
      ec_line(e, "%s c, %s, pc > 0, (const float *)0, (const float *)0, "
              "(const float *)0, 0, 0.0f, 0.0f);", head, ldy);
  }
  ec_line(e, "} else {");
  ec_line(e, "float t[ONNXC_MR * ONNXC_NR] = {0};");
  ec_line(e, "long r, x;");
  ec_line(e, "if (pc > 0)");
  ec_line(e, "  for (r = 0; r < rows; r++)");
  ec_line(e, "    for (x = 0; x < cols; x++) t[r * ONNXC_NR + x] = c[r * %s + x];", ldy);
  ec_line(e, "onnxc_ukr(kc, a, as, b, (const int *)0, t, ONNXC_NR, pc > 0, (const float *)0, (const float *)0, "
             "(const float *)0, 0, "
             "0.0f, 0.0f);");
  ec_line(e, "for (r = 0; r < rows; r++)");
  ec_line(e, "  for (x = 0; x < cols; x++) c[r * %s + x] = t[r * ONNXC_NR + x];", ldy);
  ec_line(e, "}");
  if (p->epi.len) {
    ec_line(e, "if (last%s) {", p->fast_epi ? " && !full && !q4" : "");
    ec_line(e, "for (long r = 0; r < rows; r++) {");
    ec_line(e, "const long i = ic + ir + r;");
    ec_line(e, "float *cr = c + r * %s;", ldy);
    ec_line(e, "(void)i;");
    ec_line(e, "for (long x = 0; x < cols; x++) {");
    ec_line(e, "const long j = jc + jr + x;");
    ec_line(e, "const float v = cr[x];");
    ec_line(e, "(void)j;");
    ec_line(e, "cr[x] = %s;", p->epi.s);
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "}");
  }
  if (p->epi_full.len) {
    ec_line(e, "if (last && (full || q4)) {");
    ec_line(e, "for (long r = 0; r < rows; r++) {");
    ec_line(e, "float *cr = c + r * %s;", ldy);
    ec_line(e, "for (long x = 0; x < ONNXC_NR; x++) {");
    ec_line(e, "const float v = cr[x];");
    ec_line(e, "cr[x] = %s;", p->epi_full.s);
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "}");
  }
  ec_line(e, "}"); /* ir */
  if (p->deep)
    ec_line(e, "}"); /* pc */
  ec_line(e, "}"); /* jr */
}

/* p->deep, per depth group pg..ge: A's depth blocks packed one after the
 * other (emit_tiles reads block pc at ab + (pc - pg) x rows, rows rounded up
 * to GEMM_MRP), then the tiles (expects jc, nc, ic and mc). */
static void emit_deep(EmitC *e, const Prod *p) {
  int64_t K = p->k, G = gk_deep_group(p);
  ec_line(e, "for (long pg = 0; pg < %lld; pg += %lld) {", LL(K), LL(G));
  ec_line(e, "const long ge = %lld - pg < %lld ? %lld : pg + %lld;", LL(K), LL(G), LL(K), LL(G));
  ec_line(e, "for (long pc = pg; pc < ge; pc += %d) {", GEMM_KC);
  ec_line(e, "const long kc = ge - pc < %d ? ge - pc : %d;", GEMM_KC, GEMM_KC);
  emit_pack_a(e, p, arena_printf(e->g->arena, "(ab + (pc - pg) * %lld)", LL(up(p->m, GEMM_MRP))));
  ec_line(e, "}");
  emit_tiles(e, p);
  ec_line(e, "}"); /* pg */
}

/* The blocked product; expects bb/ab/pix/xp declared as the operands need. */
void gk_emit_core(EmitC *e, const Prod *p, const Window *win) {
  if (p->lp) {
    bk_emit_core(e, p, win);
    return;
  }
  int64_t M = p->m, N = p->n, K = p->k;
  /* a B packed at compile time needs no column blocks: all of N at once, so
   * that each block of A is packed once (not once per column block) */
  int64_t NC = p->b.src == SRC_PACKED ? up(N, GEMM_NRP) : GEMM_NC;
  const char *Nt = rtv(N, p->n_rt), *Kt = rtv(K, p->k_rt);
  if (p->deep) { /* one block of rows and of columns (gk_deep) */
    ec_line(e, "{");
    ec_line(e, "const long jc = 0, nc = %lld, ic = 0, mc = %lld;", LL(N), LL(M));
    emit_deep(e, p);
    ec_line(e, "}");
    return;
  }
  ec_line(e, "for (long jc = 0; jc < %s; jc += %lld) {", Nt, LL(NC));
  ec_line(e, "const long nc = %s - jc < %lld ? %s - jc : %lld;", Nt, LL(NC), Nt, LL(NC));
  ec_line(e, "for (long pc = 0; pc < %s; pc += %d) {", Kt, GEMM_KC);
  ec_line(e, "const long kc = %s - pc < %d ? %s - pc : %d;", Kt, GEMM_KC, Kt, GEMM_KC);
  if (p->b.src != SRC_PACKED)
    emit_pack_b(e, p, win);
  if (p->m_rt) { /* rows known at run time */
    ec_line(e, "const long m_rt = (long)%s;", p->m_rt);
    ec_line(e, "for (long ic = 0; ic < m_rt; ic += %d) {", GEMM_MC);
    ec_line(e, "const long mc = m_rt - ic < %d ? m_rt - ic : %d;", GEMM_MC, GEMM_MC);
  } else {
    int64_t MC = gk_mc(p);
    ec_line(e, "for (long ic = 0; ic < %lld; ic += %lld) {", LL(M), LL(MC));
    ec_line(e, "const long mc = %lld - ic < %lld ? %lld - ic : %lld;", LL(M), LL(MC), LL(M), LL(MC));
  }
  if (p->a.src != SRC_PACKED)
    emit_pack_a(e, p, "ab");
  emit_tiles(e, p);
  ec_line(e, "}"); /* ic */
  ec_line(e, "}"); /* pc */
  ec_line(e, "}"); /* jc */
}

/* The product on every thread (p->par): `batch` x (row blocks of GEMM_MC,
 * or all rows when A is packed and there are columns enough, x column
 * blocks of gk_par_ncw) items, claimed one at a time (onnxc_claim: the pool's
 * counter, so a thread that starts late or is preempted takes fewer), each
 * packed by its thread into that thread's buffers; no barriers. `setup` (or
 * NULL) declares pa/pb/py of matrix bi. `shared`: the function runs on every
 * thread (else on one, in the same gk_layout). */
void gk_emit_setup_items(EmitC *e, const Prod *p, const Window *win, int64_t ns,
                         void (*item)(EmitC *, const Prod *, const Window *, int64_t)) {
  ec_line(e, "if (it < %lld) {", LL(ns));
  item(e, p, win, ns);
  ec_line(e, "onnxc_ready_set(onnxc_nt);");
  ec_line(e, "continue;");
  ec_line(e, "}");
  ec_line(e, "it -= %lld;", LL(ns));
  ec_line(e, "onnxc_ready_wait(onnxc_nt, %lld);", LL(ns));
}

/* How gk_emit_core_par cuts one matrix (docs/threads.md). Row blocks hold
 * the same number of rows, rounded up to the micro-kernel's MR in the
 * generated code, so two threads get equal shares of 128 rows (not 96 + 32).
 * A packed (a weight) with columns enough: column blocks of all rows, each
 * packing its part of B once. B packed and A not: row blocks of all columns,
 * as many as the cost gives claims (at least 16 rows each), so no thread packs
 * rows of A another packs too. Else row blocks of at most GEMM_MC rows x
 * column blocks of gk_par_ncw. */
ParSplit gk_par_split(const Prod *p) {
  if (p->lp)
    return bk_par_split(p);
  ParSplit s;
  int64_t M = p->m, N = p->n;
  s.ncw = gk_par_ncw(M, N, p->threads);
  s.nib = (M + GEMM_MC - 1) / GEMM_MC;
  s.njb = (N + s.ncw - 1) / s.ncw;
  s.all_rows = p->a.src == SRC_PACKED && s.njb >= 4 * p->threads;
  /* a weight too large for a core's L2 (BERT-base's 2.4-9.4 MB): column
   * blocks of all rows, so that each panel of it is read from memory by one
   * thread once; every item packs the rows of A again (a few percent) */
  bool big_b = p->b.src == SRC_PACKED && p->a.src != SRC_PACKED && !p->m_rt && p->k * N * 4 >= (1 << 20) &&
               (N + 127) / 128 >= 2 * p->threads;
  if (big_b) {
    /* one column block per thread: each packs the rows of A once, and the
     * blocks are even (BERT-base's 768 columns in 128-wide blocks were
     * six items, each packing all of A again: 1.4x on two threads) */
    s.ncw = up((N + p->threads - 1) / p->threads, GEMM_NRP);
    s.njb = (N + s.ncw - 1) / s.ncw;
    s.all_rows = true;
  }
  if (s.all_rows) {
    s.nib = 1;
  } else if (p->b.src == SRC_PACKED && p->a.src != SRC_PACKED) {
    int64_t by_cost = threads_chunks(p->threads, (M + 15) / 16, ec_cost_ns((double)M * N * p->k, 0));
    s.ncw = up(N, GEMM_NRP);
    s.njb = 1;
    s.nib = by_cost > s.nib ? by_cost : s.nib;
  }
  return s;
}

int64_t gk_par_per(const Prod *p) {
  ParSplit s = gk_par_split(p);
  return s.nib * s.njb;
}

void gk_emit_core_par(EmitC *e, const Prod *p, const Window *win, int64_t batch,
                          const char *const *setup, bool shared, int64_t nsetup,
                          void (*setup_item)(EmitC *, const Prod *, const Window *, int64_t)) {
  if (p->lp) {
    bk_emit_core_par(e, p, win, batch, setup, shared, nsetup, setup_item);
    return;
  }
  int64_t M = p->m, N = p->n, K = p->k;
  ParSplit sp = gk_par_split(p);
  int64_t ncw = sp.ncw, nib = sp.nib, njb = sp.njb;
  bool all_rows = sp.all_rows;
  ec_line(e, "long own = 0, it;");
  if (p->off_b >= 0)
    ec_line(e, "float *bb = (float *)(S + %lld + (long)onnxc_th * %lld);", LL(p->off_b), LL(p->slot));
  if (p->off_a >= 0)
    ec_line(e, "float *ab = (float *)(S + %lld + (long)onnxc_th * %lld);", LL(p->off_a), LL(p->slot));
  ec_line(e, "(void)own;");
  if (shared)
    ec_line(e, "while ((it = onnxc_nt > 1 ? onnxc_claim() : own++) < %lld) {",
            LL(nsetup + batch * nib * njb));
  else
    ec_line(e, "while ((it = own++) < %lld) {", LL(batch * nib * njb));
  if (shared && nsetup > 0)
    gk_emit_setup_items(e, p, win, nsetup, setup_item);
  for (int i = 0; setup && setup[i]; i++)
    ec_line(e, "%s", setup[i]);
  if (all_rows) {
    ec_line(e, "const long jc = it %% %lld * %lld;", LL(njb), LL(ncw));
  } else {
    /* rows per block: M / nib rounded up to MR, or to the 24-row panels of a
     * packed A (at most GEMM_MC either way, as nib >= M / GEMM_MC) */
    if (p->m_rt) /* rows known at run time (-D ranges): the same blocks of this run's rows */
      ec_line(e, "const long m_rt = (long)%s, rb = ((m_rt + %lld - 1) / %lld + ONNXC_MR - 1) / ONNXC_MR * ONNXC_MR;",
              p->m_rt, LL(nib), LL(nib));
    else if (p->a.src == SRC_PACKED)
      ec_line(e, "const long rb = %lld;", LL(up((M + nib - 1) / nib, GEMM_MRP)));
    else
      ec_line(e, "const long rb = (%lld + ONNXC_MR - 1) / ONNXC_MR * ONNXC_MR;", LL((M + nib - 1) / nib));
    ec_line(e, "const long ic = it %% %lld / %lld * rb, jc = it %% %lld * %lld;", LL(nib * njb), LL(njb),
            LL(njb), LL(ncw));
    ec_line(e, "if (ic >= %s)", p->m_rt ? "m_rt" : arena_printf(e->g->arena, "%lld", LL(M)));
    ec_line(e, "  continue;");
  }
  ec_line(e, "const long nc = %lld - jc < %lld ? %lld - jc : %lld;", LL(N), LL(ncw), LL(N), LL(ncw));
  if (p->deep) { /* all rows (gk_deep) */
    ec_line(e, "const long ic = 0, mc = %lld;", LL(M));
    emit_deep(e, p);
    ec_line(e, "}"); /* items */
    return;
  }
  ec_line(e, "for (long pc = 0; pc < %lld; pc += %d) {", LL(K), GEMM_KC);
  ec_line(e, "const long kc = %lld - pc < %d ? %lld - pc : %d;", LL(K), GEMM_KC, LL(K), GEMM_KC);
  if (p->b.src != SRC_PACKED)
    emit_pack_b(e, p, win);
  if (all_rows) {
    ec_line(e, "for (long ic = 0; ic < %lld; ic += %d) {", LL(M), GEMM_MC);
    ec_line(e, "const long mc = %lld - ic < %d ? %lld - ic : %d;", LL(M), GEMM_MC, LL(M), GEMM_MC);
  } else {
    if (p->m_rt)
      ec_line(e, "const long mc = m_rt - ic < rb ? m_rt - ic : rb;");
    else
      ec_line(e, "const long mc = %lld - ic < rb ? %lld - ic : rb;", LL(M), LL(M));
  }
  if (p->a.src != SRC_PACKED)
    emit_pack_a(e, p, "ab");
  emit_tiles(e, p);
  if (all_rows)
    ec_line(e, "}"); /* ic */
  ec_line(e, "}"); /* pc */
  ec_line(e, "}"); /* items */
}

void gk_declare_scratch(EmitC *e, const Prod *p) {
  if (p->lp) {
    bk_declare_scratch(e, p);
    return;
  }
  if (p->off_b >= 0)
    ec_line(e, "float *bb = (float *)(S + %lld);", LL(p->off_b));
  if (p->off_a >= 0)
    ec_line(e, "float *ab = (float *)(S + %lld);", LL(p->off_a));
}

/* Epilogue text: `base` (the value before activation) wrapped in the activation;
 * rb / cb: the bias the kernel adds itself on full tiles ("0": none), or NULL
 * when base is more than v plus such a bias (then the generic loop does all). */
void gk_set_epilogue(Prod *p, const Node *n, const char *base, const char *rb, const char *cb) {
  const char *act = ir_attr_str(n, "activation", "");
  /* a fused elementwise chain: on full tiles the kernel adds the bias and the
   * chain runs over the tile after it (epi_full); partial tiles take it all */
  bool chain = ir_attr(n, "epilogue") != NULL;
  p->act = chain ? 0 : strcmp(act, "Relu") == 0 ? 1 : strcmp(act, "Clip") == 0 ? 2 : act[0] ? -1 : 0;
  p->fast_epi = rb && cb && p->act >= 0;
  p->rb = rb;
  p->cb = cb;
  snprintf(p->lo, sizeof p->lo, "0.0f");
  snprintf(p->hi, sizeof p->hi, "0.0f");
  if (p->act == 2) {
    ec_literal(DT_F32, ir_attr_float(n, "activation_min", -INFINITY), p->lo, sizeof p->lo);
    ec_literal(DT_F32, ir_attr_float(n, "activation_max", INFINITY), p->hi, sizeof p->hi);
  }
  buf_init(&p->epi);
  buf_init(&p->epi_full);
  if (chain && p->fast_epi)
    gemm_act_expr(n, "v", &p->epi_full);
  if (!act[0] && !chain && strcmp(base, "v") == 0)
    return;
  gemm_act_expr(n, base, &p->epi);
}

/* ---- MatMul, Gemm ----------------------------------------------------------------- */

/* MatMul whose B is a 2-D weight packed at compile time: A's batch dims fold into M. */
/* A batched MatMul through folded Transposes (mm_view): each operand row- or
 * column-major with its own leading dimension, batches at the views' strides. */
static bool matmul_prod_permuted(const Node *n, int threads, Prod *p, int64_t *batch) {
  MmStrides ms;
  if (!mm_strides(n, &ms) || (ms.a_cs != 1 && ms.a_rs != 1) || (ms.b_cs != 1 && ms.b_rs != 1))
    return false;
  memset(p, 0, sizeof *p);
  p->threads = threads;
  p->lp = gk_lp(n);
  p->m = ms.m;
  p->k = ms.k;
  p->n = ms.n;
  p->a.src = ms.a_cs == 1 ? SRC_ROWS : SRC_TRANS;
  p->a.ptr = "pa";
  p->a.ld = ms.a_cs == 1 ? ms.a_rs : ms.a_cs;
  p->b.src = ms.b_cs == 1 ? SRC_ROWS : SRC_TRANS;
  p->b.ptr = "pb";
  p->b.ld = ms.b_cs == 1 ? ms.b_rs : ms.b_cs;
  p->y = "py";
  p->ldy = ms.y_rs;
  *batch = ms.batch;
  gk_layout(p, NULL);
  return gk_worth_packing(p);
}

/* A [.., M, K] whose leading dims are known at run time (-D ranges) times a
 * weight [K, N] packed at compile time: one product of run-time M rows, laid
 * out (scratch) for M's upper bound, on one thread. */
static bool matmul_prod_rows_rt(const Node *n, int threads, Prod *p, int64_t *batch) {
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape;
  if (as->rank < 2 || bs->rank != 2 || !shape_is_static(bs) || !gk_prepacked(n->in[1]) ||
      !shape_is_bounded(as) || as->d[as->rank - 1] < 0 || !shape_is_bounded(&n->out[0]->shape) ||
      mm_permuted(n))
    return false;
  const Graph *g = n->g;
  while (g->parent)
    g = g->parent;
  Arena *a = n->g->arena;
  const DimExpr *m = dx_const(a, 1);
  for (int i = 0; i + 1 < as->rank; i++)
    m = dx_mul(a, m, shape_dx(a, as, i));
  int64_t lo, hi;
  if (!m || !dx_bounds(g, m, &lo, &hi))
    return false;
  memset(p, 0, sizeof *p);
  p->threads = threads;
  p->m = hi;
  p->k = as->d[as->rank - 1];
  p->n = bs->d[1];
  Buf b;
  buf_init(&b);
  dx_print(g, m, "dims", &b);
  p->m_rt = arena_strdup(a, b.s);
  buf_free(&b);
  p->a = (Operand){SRC_ROWS, "pa", p->k, NULL};
  p->b = (Operand){SRC_PACKED, "X1", p->n, NULL};
  p->y = "py";
  p->ldy = p->n;
  *batch = 1;
  gk_layout(p, NULL);
  return gk_worth_packing(p);
}

/* The upper bound of dim i of s (static or bounded). */
static int64_t dim_hi(const Node *n, const Shape *s, int i) {
  int64_t lo, hi = s->d[i];
  const Graph *g = n->g;
  while (g->parent)
    g = g->parent;
  if (hi < 0 && !(s->x[i] && dx_bounds(g, s->x[i], &lo, &hi)))
    return -1;
  return hi;
}

/* A product whose rows, columns or depth are known at run time, neither
 * operand a weight (attention's scores and context): per batch matrix, A
 * [M, K] and B [K, N] row-major at pa / pb, Y at py, with M, N and K the
 * kernel's locals (gemm_emit_matmul_rt); the scratch sized at the bounds. */
static bool matmul_prod_all_rt(const Node *n, int threads, Prod *p) {
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape, *ys = &n->out[0]->shape;
  if (as->rank < 2 || bs->rank < 2 || !shape_is_bounded(as) || !shape_is_bounded(bs) ||
      !shape_is_bounded(ys) || mm_permuted(n))
    return false;
  int64_t m = dim_hi(n, as, as->rank - 2), k = dim_hi(n, as, as->rank - 1), nn = dim_hi(n, bs, bs->rank - 1);
  if (m < 1 || k < 1 || nn < 1)
    return false;
  memset(p, 0, sizeof *p);
  p->threads = 1;
  p->m = m;
  p->k = k;
  p->n = nn;
  p->m_rt = "M";
  p->n_rt = "N";
  p->k_rt = "K";
  p->a = (Operand){SRC_ROWS, "pa", k, "K"};
  p->b = (Operand){SRC_ROWS, "pb", nn, "N"};
  p->y = "py";
  p->ldy = nn;
  p->ldy_rt = "N";
  gk_layout(p, NULL);
  if (threads > 1) { /* the batch's matrices on every thread (emit_dyn.c): one set of buffers each */
    p->slot = p->bytes;
    p->bytes *= threads;
  }
  return gk_worth_packing(p);
}

bool gemm_emit_matmul_rt(EmitC *e, const Node *n, bool per_thread) {
  Prod p;
  if (!gk_is_f32(n) || !matmul_prod_all_rt(n, ec_threads(e), &p) || !gk_scratch_ok(e, n, &p))
    return false;
  if (per_thread && p.slot > 0) {
    if (p.off_b >= 0)
      ec_line(e, "float *bb = (float *)(S + %lld + (long)onnxc_th * %lld);", LL(p.off_b), LL(p.slot));
    if (p.off_a >= 0)
      ec_line(e, "float *ab = (float *)(S + %lld + (long)onnxc_th * %lld);", LL(p.off_a), LL(p.slot));
  } else {
    gk_declare_scratch(e, &p);
  }
  gk_emit_core(e, &p, NULL);
  return true;
}

static bool matmul_prod(const Node *n, int threads, Prod *p, int64_t *batch) {
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape;
  if (gk_is_f32(n) && (!shape_is_static(as) || !shape_is_static(bs)) && shape_is_bounded(as) &&
      shape_is_bounded(bs)) {
    *batch = 1;
    return matmul_prod_rows_rt(n, threads, p, batch) || matmul_prod_all_rt(n, threads, p);
  }
  if (!gk_is_f32(n) || as->rank < 1 || bs->rank < 2 || !shape_is_static(as) || !shape_is_static(bs) ||
      !shape_is_static(&n->out[0]->shape))
    return false;
  if (mm_permuted(n))
    return matmul_prod_permuted(n, threads, p, batch);
  memset(p, 0, sizeof *p);
  p->threads = threads;
  p->lp = gk_lp(n);
  p->m = as->rank >= 2 ? as->d[as->rank - 2] : 1;
  p->k = as->d[as->rank - 1];
  p->n = bs->d[bs->rank - 1];
  p->a.src = SRC_ROWS;
  p->a.ptr = "pa";
  p->a.ld = p->k;
  p->b.src = SRC_ROWS;
  p->b.ptr = "pb";
  p->b.ld = p->n;
  p->y = "py";
  p->ldy = p->n;
  *batch = 1;
  if (bs->rank == 2 && gk_prepacked(n->in[1])) {
    for (int i = 0; i + 2 < as->rank; i++)
      p->m *= as->d[i];
    p->b.src = SRC_PACKED;
    p->b.ptr = "X1";
  } else {
    const Shape *ys = &n->out[0]->shape;
    for (int i = 0; i < ys->rank - (as->rank >= 2) - 1; i++)
      *batch *= ys->d[i];
  }
  gk_layout(p, NULL);
  return gk_worth_packing(p);
}

bool gemm_emit_matmul(EmitC *e, const Node *n) {
  Prod p;
  int64_t batch;
  if (!matmul_prod(n, ec_threads(e), &p, &batch) || !gk_scratch_ok(e, n, &p) ||
      (p.m_rt && p.b.src != SRC_PACKED)) /* the latter: gemm_emit_matmul_rt */
    return false;
  if (ir_attr_int(n, "onnxc.bias", 0)) /* -D ranges: a column bias fused in (fuse_elementwise.c) */
    gk_set_epilogue(&p, n, "v + X2[j]", "(const float *)0", "X2 + jc + jr");
  else
    gk_set_epilogue(&p, n, "v", "(const float *)0", "(const float *)0");
  if (!p.par)
    gk_declare_scratch(e, &p);
  else if (!gk_want_par(e))
    ec_line(e, "const int onnxc_th = 0;");
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape, *ys = &n->out[0]->shape;
  if (p.b.src == SRC_PACKED) {
    if (p.m_rt)
      ec_line(e, "/* packed GEMM: [%s (at most %lld) x %lld] x packed [%lld x %lld] */", p.m_rt, LL(p.m),
              LL(p.k), LL(p.k), LL(p.n));
    else
      ec_line(e, "/* packed GEMM: [%lld x %lld] x packed [%lld x %lld] */", LL(p.m), LL(p.k), LL(p.k),
              LL(p.n));
    if (p.m_rt) {
      /* fewer rows than half the register tile (a sequence of 1 to 3): a
       * matrix-vector product per row over the packed panels, which the
       * micro-kernel's 8 rows would mostly pad */
      ec_line(e, "if ((%s) < 4) {", p.m_rt);
      /* (with --threads, reached on one thread only: the call site's
       * par_when sends runs this small to the calling thread) */
      if (p.par)
        ec_line(e, "const long rows = onnxc_th == 0 ? (long)(%s) : 0;", p.m_rt);
      else
        ec_line(e, "const long rows = (long)(%s);", p.m_rt);
      ec_line(e, "for (long i = 0; i < rows; i++) {");
      ec_line(e, "float *yr = Y0 + i * %lld;", LL(p.n));
      ec_line(e, "for (long jp = 0; jp < %lld; jp += %d) {", LL(p.n), GEMM_NRP);
      ec_line(e, "const float *ar = X0 + i * %lld, *bp = X1 + jp * %lld;", LL(p.k), LL(p.k));
      /* four independent sums along k: one chain would wait on the FMA latency */
      ec_line(e, "float acc[4][%d];", GEMM_NRP);
      ec_line(e, "for (int u = 0; u < %d; u++) acc[0][u] = acc[1][u] = acc[2][u] = acc[3][u] = 0.0f;", GEMM_NRP);
      ec_line(e, "long k = 0;");
      ec_line(e, "for (; k + 4 <= %lld; k += 4)", LL(p.k));
      ec_line(e, "  for (int q = 0; q < 4; q++)");
      ec_line(e, "    for (int u = 0; u < %d; u++) acc[q][u] += ar[k + q] * bp[(k + q) * %d + u];", GEMM_NRP,
              GEMM_NRP);
      ec_line(e, "for (; k < %lld; k++)", LL(p.k));
      ec_line(e, "  for (int u = 0; u < %d; u++) acc[0][u] += ar[k] * bp[k * %d + u];", GEMM_NRP, GEMM_NRP);
      ec_line(e, "const long nc = %lld - jp < %d ? %lld - jp : %d;", LL(p.n), GEMM_NRP, LL(p.n), GEMM_NRP);
      ec_line(e, "for (long u = 0; u < nc; u++) {");
      ec_line(e, "const long j = jp + u;");
      ec_line(e, "const float v = (acc[0][u] + acc[1][u]) + (acc[2][u] + acc[3][u]);");
      ec_line(e, "yr[j] = %s;", p.epi.len ? p.epi.s : "v");
      ec_line(e, "}");
      ec_line(e, "}");
      ec_line(e, "}");
      ec_line(e, "} else {");
    }
    ec_line(e, "const float *pa = X0;");
    ec_line(e, "float *py = Y0;");
    if (p.par && p.m_rt && gk_want_par(e)) /* the pool only for runs whose product pays */
      e->par_when = arena_printf(e->g->arena, "(%s) >= 4 && %s", p.m_rt,
                                 ec_par_when(e, arena_printf(e->g->arena, "(%s) * %lld", p.m_rt, LL(p.n * p.k)),
                                             COST_GEMM_MAC));
    if (p.par)
      gk_emit_core_par(e, &p, NULL, 1, NULL, true, 0, NULL);
    else
      gk_emit_core(e, &p, NULL);
    if (p.m_rt)
      ec_line(e, "}");
  } else {
    int nb = ys->rank - (as->rank >= 2) - 1;
    Buf ao, bo, yo;
    buf_init(&ao);
    buf_init(&bo);
    buf_init(&yo);
    if (mm_permuted(n)) { /* through folded Transposes (passes/fuse_layout.c) */
      mm_operand_offset(n, 0, nb, &ao);
      mm_operand_offset(n, 1, nb, &bo);
      mm_operand_offset(n, 2, nb, &yo);
    } else {
      ec_batch_offset(as->d, as->rank >= 2 ? as->rank - 2 : 0, ys->d, nb, p.m * p.k, &ao);
      ec_batch_offset(bs->d, bs->rank - 2, ys->d, nb, p.k * p.n, &bo);
      buf_printf(&yo, "bi * %lld", LL(p.m * p.n));
    }
    ec_line(e, "/* packed GEMM: %lld x [%lld x %lld] x [%lld x %lld] */", LL(batch), LL(p.m), LL(p.k),
            LL(p.k), LL(p.n));
    if (p.par) {
      int64_t per = gk_par_per(&p);
      char l0[64], l1[512], l2[512], l3[512];
      const char *setup[] = {l0, l1, l2, l3, NULL};
      /* (void)bi: a batch of one through views has constant offsets
       * (seed 170987 of the long run: -Werror=unused-variable) */
      snprintf(l0, sizeof l0, "const long bi = it / %lld; (void)bi;", LL(per));
      snprintf(l1, sizeof l1, "const float *pa = X0 + %s;", ao.s);
      snprintf(l2, sizeof l2, "const float *pb = X1 + %s;", bo.s);
      snprintf(l3, sizeof l3, "float *py = Y0 + %s;", yo.s);
      gk_emit_core_par(e, &p, NULL, batch, setup, true, 0, NULL);
    } else {
      ec_line(e, "for (long bi = 0; bi < %lld; bi++) {", LL(batch));
      ec_line(e, "const float *pa = X0 + %s;", ao.s);
      ec_line(e, "const float *pb = X1 + %s;", bo.s);
      ec_line(e, "float *py = Y0 + %s;", yo.s);
      gk_emit_core(e, &p, NULL);
      ec_line(e, "}");
    }
    buf_free(&ao);
    buf_free(&bo);
    buf_free(&yo);
  }
  buf_free(&p.epi);
  buf_free(&p.epi_full);
  return true;
}

static bool gemm_prod(const Node *n, int threads, Prod *p) {
  const Shape *as = &n->in[0]->shape, *ys = &n->out[0]->shape;
  if (!gk_is_f32(n) || !shape_is_static(as) || !shape_is_static(&n->in[1]->shape) ||
      !shape_is_static(ys))
    return false;
  bool ta = ir_attr_int(n, "transA", 0) == 1, tb = ir_attr_int(n, "transB", 0) == 1;
  memset(p, 0, sizeof *p);
  p->threads = threads;
  p->lp = gk_lp(n);
  p->m = ys->d[0];
  p->n = ys->d[1];
  p->k = as->d[ta ? 0 : 1];
  p->a.src = ta ? SRC_TRANS : SRC_ROWS;
  p->a.ptr = "X0";
  p->a.ld = ta ? p->m : p->k;
  p->b.src = gk_prepacked(n->in[1]) ? SRC_PACKED : tb ? SRC_TRANS : SRC_ROWS;
  p->b.ptr = "X1";
  p->b.ld = tb ? p->k : p->n;
  p->y = "Y0";
  p->ldy = p->n;
  gk_layout(p, NULL);
  return gk_worth_packing(p);
}

bool gemm_emit_gemm(EmitC *e, const Node *n) {
  Prod p;
  if (!gemm_prod(n, ec_threads(e), &p) || !gk_scratch_ok(e, n, &p))
    return false;
  double alpha = ir_attr_float(n, "alpha", 1.0f), beta = ir_attr_float(n, "beta", 1.0f);
  char al[64], be[64];
  Buf base;
  buf_init(&base);
  const char *rb = "(const float *)0", *cb = rb;
  if (alpha != 1.0)
    buf_printf(&base, "%s * ", ec_literal(DT_F32, alpha, al, sizeof al));
  buf_puts(&base, "v");
  if (ir_has_input(n, 2) && beta != 0.0) {
    const Shape *cs = &n->in[2]->shape;
    int64_t cm = cs->rank == 2 ? cs->d[0] : 1, cn = cs->rank >= 1 ? cs->d[cs->rank - 1] : 1;
    buf_puts(&base, " + ");
    if (beta != 1.0)
      buf_printf(&base, "%s * ", ec_literal(DT_F32, beta, be, sizeof be));
    if (cm != 1 && cn != 1)
      buf_printf(&base, "X2[i * %lld + j]", LL(cn));
    else
      buf_printf(&base, "X2[%s]", cn != 1 ? "j" : cm != 1 ? "i" : "0");
    if (beta != 1.0 || (cm != 1 && cn != 1) || (cm == 1 && cn == 1))
      rb = cb = NULL;
    else if (cn != 1)
      cb = "X2 + jc + jr";
    else
      rb = "X2 + ic + ir";
  }
  if (alpha != 1.0)
    rb = cb = NULL;
  gk_set_epilogue(&p, n, base.s, rb, cb);
  buf_free(&base);
  ec_line(e, "/* packed GEMM: [%lld x %lld] x %s[%lld x %lld] */", LL(p.m), LL(p.k),
          p.b.src == SRC_PACKED ? "packed " : "", LL(p.k), LL(p.n));
  if (p.par) {
    if (!gk_want_par(e))
      ec_line(e, "const int onnxc_th = 0;");
    gk_emit_core_par(e, &p, NULL, 1, NULL, true, 0, NULL);
  } else {
    gk_declare_scratch(e, &p);
    gk_emit_core(e, &p, NULL);
  }
  buf_free(&p.epi);
  buf_free(&p.epi_full);
  return true;
}

/* ---- model-level: prelude and packed weights ------------------------------------- */

static bool node_fast(const Plan *plan, const Node *n, int threads, Prod *p) {
  Window w;
  int64_t batch;
  EmitC e;
  memset(&e, 0, sizeof e);
  e.plan = plan;
  e.threads = threads;
  bool ok = false;
  if (n->op == OP_Conv)
    ok = gk_conv_prod(n, ec_threads(&e), p, &w);
  else if (n->op == OP_MatMul)
    ok = matmul_prod(n, ec_threads(&e), p, &batch);
  else if (n->op == OP_Gemm)
    ok = gemm_prod(n, ec_threads(&e), p);
  return ok && gk_scratch_ok(&e, n, p);
}

int64_t gemm_scratch_bytes(const Node *n, int threads) {
  Prod p;
  Window w;
  int64_t batch, bytes = 0;
  memset(&p, 0, sizeof p);
  bool gemm_family = n->op == OP_Conv || n->op == OP_MatMul || n->op == OP_Gemm;
  if (!gemm_family || n->n_in < 2 || !ir_has_input(n, 0) || !ir_has_input(n, 1) || n->n_out < 1)
    return 0;
  if (n->op == OP_Conv ? gk_conv_prod(n, threads, &p, &w)
      : n->op == OP_MatMul ? matmul_prod(n, threads, &p, &batch)
                           : gemm_prod(n, threads, &p))
    bytes = p.bytes;
  buf_free(&p.epi);
  buf_free(&p.epi_full);
  return bytes;
}

bool gemm_used(const Graph *g, const Plan *plan, int threads) {
  Prod p;
  for (const Node *n = g->first; n; n = n->next)
    if (!(plan->elided && plan->elided[n->id]) && node_fast(plan, n, threads, &p) && !p.lp)
      return true;
  return false;
}

int gemm_lp_used(const Graph *g, const Plan *plan, int threads) {
  Prod p;
  int which = 0;
  for (const Node *n = g->first; n; n = n->next)
    if (!(plan->elided && plan->elided[n->id]) && node_fast(plan, n, threads, &p) && p.lp)
      which |= p.lp; /* 1 bf16, 2 fp16 */
  return which;
}

const Tensor *gemm_weight_data(const Plan *plan, const Value *v, Arena *a, int threads) {
  if (!gk_prepacked(v) || v->dt != DT_F32)
    return v->konst;
  const Node *n = v->uses[0];
  Prod p;
  if (!node_fast(plan, n, threads, &p))
    return v->konst;
  if (p.lp)
    return bk_weight_data(&p, n, v, a);
  const float *src = v->konst->data;
  int64_t K = p.k;
  Tensor *t = arena_alloc(a, sizeof *t);
  t->dt = DT_F32;
  if (n->op == OP_Conv && n->in[1] == v && p.a.src == SRC_PACKED) {
    /* A panels: (i / 24) * 24K + k * 24 + i % 24, one set per group */
    int64_t rows = up(p.m, GEMM_MRP), G = ir_attr_int(n, "group", 1);
    float *d = arena_alloc(a, (size_t)(G * rows * K) * sizeof(float));
    for (int64_t g = 0; g < G; g++)
      for (int64_t i = 0; i < p.m; i++)
        for (int64_t k = 0; k < K; k++)
          d[g * rows * K + (i / GEMM_MRP) * GEMM_MRP * K + k * GEMM_MRP + i % GEMM_MRP] =
              src[(g * p.m + i) * K + k];
    t->numel = G * rows * K;
    t->data = d;
  } else if ((n->op == OP_MatMul || n->op == OP_Gemm || p.trans || p.dtr) && n->in[1] == v &&
             p.b.src == SRC_PACKED) {
    /* B panels: (j / 32) * 32K + k * 32 + j % 32 (a small-map conv: of W^T) */
    bool tb = (n->op == OP_Gemm && ir_attr_int(n, "transB", 0) == 1) || p.trans || p.dtr;
    int64_t cols = up(p.n, GEMM_NRP);
    float *d = arena_alloc(a, (size_t)(cols * K) * sizeof(float));
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < p.n; j++)
        d[(j / GEMM_NRP) * GEMM_NRP * K + k * GEMM_NRP + j % GEMM_NRP] =
            tb ? src[j * K + k] : src[k * p.n + j];
    t->numel = cols * K;
    t->data = d;
  } else {
    return v->konst;
  }
  t->nbytes = t->numel * 4;
  t->shape = shape_make(1, &t->numel);
  return t;
}

int64_t gemm_weight_numel(const Plan *plan, const Value *v, int threads) {
  Prod p;
  if (!gk_prepacked(v) || v->dt != DT_F32 || !node_fast(plan, v->uses[0], threads, &p))
    return 0;
  const Node *n = v->uses[0];
  if (p.lp)
    return bk_weight_numel(&p, n, v);
  if (n->op == OP_Conv && n->in[1] == v && p.a.src == SRC_PACKED)
    return ir_attr_int(n, "group", 1) * up(p.m, GEMM_MRP) * p.k;
  if ((n->op == OP_MatMul || n->op == OP_Gemm || p.trans || p.dtr) && n->in[1] == v && p.b.src == SRC_PACKED)
    return up(p.n, GEMM_NRP) * p.k;
  return 0;
}
