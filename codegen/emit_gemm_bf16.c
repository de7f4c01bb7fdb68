/* emit_gemm_bf16.c - the packed product of --precision bf16 (docs/precision.md).
 *
 * A Conv, Gemm or MatMul marked `onnxc.precision` = 1 (passes/precision.c)
 * takes the same blocking as emit_gemm.c's float32 product (jc over N, pc
 * over K by GEMM_KC, ic over M by GEMM_MC), with both operands packed as
 * bfloat16 and every sum in float32:
 *   left operand  (A, M x K): panels of 16 rows; per chunk of 32 k, the 16
 *     rows' 32 values row by row (the AMX A tile: 16 rows of 64 bytes)
 *   right operand (B, K x N): panels of 32 columns; per pair of k, the 32
 *     columns' two values side by side (the VNNI layout of vdpbf16ps and of
 *     the AMX B tile: 16 pairs x 16 columns per tile)
 * K is padded with zeros to a multiple of 32 in each depth block. Weights
 * are converted and packed at compile time (bk_weight_data); activations
 * are converted while they are packed, so values between nodes stay
 * float32 and the epilogues (bias, residual, activation, fused chains) run
 * on the float32 result as they do for float32 products.
 * The micro-kernels compute a 32 x 32 tile (two A panels; onnxc_bkr2) where
 * 32 full rows remain, else 16 x 32 (onnxc_bkr): with AMX-BF16 (Linux
 * x86-64, permission asked once per product) 16 x 16 float32 C tiles += A
 * tiles x two B tiles per 32 k; without it (or when the kernel refuses AMX)
 * vdpbf16ps (AVX512-BF16) or a portable loop over the same bfloat16
 * operands, whose products are exact in float32 but whose sums run in
 * another order (not bit-identical).
 * With --threads, bk_emit_core_par splits the product as bk_par_split says.
 */
#include "gemm_internal.h"
#include "lowp.h"

#define BK_MR 16 /* rows of a panel and of the smaller micro-kernel's tile */
#define BK_NR 32 /* columns of a panel and of the tile */
#define BK_KQ 32 /* depth of one chunk (one AMX A tile row) */

int gk_lp(const Node *n) {
  int64_t v = ir_attr_int(n, "onnxc.precision", 0);
  return v == 1 || v == 2 ? (int)v : 0;
}

/* The generated function of the product's type: bf16 (1) or fp16 (2) */
static const char *kn(const Prod *p, const char *bf16, const char *fp16) { return p->lp == 2 ? fp16 : bf16; }

/* How bk_emit_core_par cuts one matrix into items: A packed (a conv's
 * weight): column blocks of all rows, each packing its part of B once (with
 * row blocks too where the columns make fewer than two blocks a thread); B
 * packed and A not: row blocks (multiples of 16 rows, at most GEMM_MC) of
 * all columns, at least 4 per thread where the rows allow, each packing its
 * rows of A once; else row blocks of GEMM_MC x column blocks. */
ParSplit bk_par_split(const Prod *p) {
  ParSplit s;
  int64_t M = p->m, N = p->n;
  s.ncw = gk_par_ncw(M, N, p->threads);
  s.nib = (M + GEMM_MC - 1) / GEMM_MC;
  s.njb = (N + s.ncw - 1) / s.ncw;
  s.all_rows = p->a.src == SRC_PACKED;
  if (s.all_rows) {
    /* too few column blocks for the threads (a conv on a 7x7 or 14x14 map:
     * 49 or 196 columns, one block): row blocks of at least 32 rows too, each
     * item packing its columns (few: the repeated packing costs little) */
    int64_t want = (2 * (int64_t)p->threads + s.njb - 1) / s.njb, most = (M + 31) / 32;
    s.nib = s.njb < 2 * (int64_t)p->threads ? (want < most ? want : most) : 1;
    if (s.nib > 1)
      s.all_rows = false;
    else
      s.nib = 1;
  } else if (p->b.src == SRC_PACKED) {
    int64_t want = 4 * (int64_t)p->threads, most = (M + BK_MR - 1) / BK_MR;
    s.nib = s.nib > want ? s.nib : want < most ? want : most;
    s.ncw = up(N, BK_NR);
    s.njb = 1;
  }
  return s;
}

void bk_layout(Prod *p, const Window *win) {
  int64_t kcp = up(min64(p->k, GEMM_KC), BK_KQ), off = 0;
  p->off_b = p->off_a = p->off_pix = p->off_img = -1;
  p->par = threads_worth(p->threads, ec_cost_ns((double)p->m * p->n * p->k, 0));
  p->slot = 0;
  /* --threads: one thread's packing buffers (an item's columns and at most
   * GEMM_MC rows), then the next thread's */
  int64_t ncol = p->par ? min64(p->n, bk_par_split(p).ncw) : min64(p->n, GEMM_NC);
  if (p->b.src != SRC_PACKED) {
    p->off_b = off;
    off += up(kcp * up(ncol, BK_NR) * 2, 64);
  }
  if (p->a.src != SRC_PACKED) {
    p->off_a = off;
    off += up(up(min64(p->m, GEMM_MC), BK_MR) * kcp * 2, 64);
  }
  if (p->par) {
    p->slot = off;
    off *= p->threads;
  }
  if (p->b.src == SRC_IM2COL) {
    if (p->lp != 1) { /* the pixel table (bf16 packs runs of output rows without it) */
      p->off_pix = off;
      off += up(up(p->n, GEMM_NRP) * 4, 64);
    }
    if (win->padded) {
      p->off_img = off;
      off += up((win->c * (win->h + win->pt + win->pb) * (win->w + win->pl + win->pr) + 16) * 4, 64);
    }
  }
  p->bytes = off;
}

void bk_declare_scratch(EmitC *e, const Prod *p) {
  if (p->off_b >= 0)
    ec_line(e, "unsigned short *bb = (unsigned short *)(S + %lld);", LL(p->off_b));
  if (p->off_a >= 0)
    ec_line(e, "unsigned short *ab = (unsigned short *)(S + %lld);", LL(p->off_a));
}

/* Packs B[pc.., jc..] (kc x nc) at bb: per panel of 32 columns, kcp / 2
 * pairs of 64 values; rows past kc and columns past nc are 0. */
static void bk_pack_b(EmitC *e, const Prod *p, const Window *win) {
  const Operand *b = &p->b;
  if (p->lp == 1 && (b->src == SRC_ROWS || b->src == SRC_IM2COL)) {
    /* bf16 from rows or an image window: per pair of depth rows, every
     * column of the block straight from the source (onnxc_bf16_win: runs of
     * one output row), then zeros in the last panel's missing columns */
    ec_line(e, "for (long kk = 0; kk < kcp; kk += 2) {");
    ec_line(e, "const float *s2[2] = {0, 0};");
    ec_line(e, "for (long h = 0; h < 2; h++)");
    ec_line(e, "if (kk + h < kc) {");
    if (b->src == SRC_ROWS) {
      ec_line(e, "s2[h] = %s + (pc + kk + h) * %lld;", b->ptr, LL(b->ld));
    } else {
      int64_t wp = win->w + win->pl + win->pr, plane = (win->h + win->pt + win->pb) * wp,
              taps = win->kh * win->kw;
      ec_line(e, "const long kg = pc + kk + h, t = kg %% %lld;", LL(taps));
      ec_line(e, "s2[h] = %s + kg / %lld * %lld + t / %lld * %lld + t %% %lld * %lld;", b->ptr, LL(taps), LL(plane),
              LL(win->kw), LL(win->dh * wp), LL(win->kw), LL(win->dw));
    }
    ec_line(e, "}");
    if (b->src == SRC_ROWS)
      ec_line(e, "onnxc_bf16_win(bb + kk * 32, 32 * kcp, s2[0], s2[1], jc, nc, %lld, 0, 1);", LL(p->n));
    else
      ec_line(e, "onnxc_bf16_win(bb + kk * 32, 32 * kcp, s2[0], s2[1], jc, nc, %lld, %lld, %lld);", LL(win->ow),
              LL(win->sh * (win->w + win->pl + win->pr)), LL(win->sw));
    ec_line(e, "}");
    ec_line(e, "if (nc %% 32) {");
    ec_line(e, "unsigned short *z = bb + nc / 32 * 32 * kcp;");
    ec_line(e, "for (long kk = 0; kk < kcp; kk += 2)");
    ec_line(e, "  for (long x = nc %% 32; x < 32; x++) z[kk * 32 + 2 * x] = z[kk * 32 + 2 * x + 1] = 0;");
    ec_line(e, "}");
    return;
  }
  ec_line(e, "for (long q = 0; q < nc; q += 32) {");
  ec_line(e, "const long w = nc - q < 32 ? nc - q : 32;");
  ec_line(e, "unsigned short *d = bb + q * kcp;");
  int64_t taps = 0, plane = 0, wp = 0;
  if (b->src == SRC_IM2COL) {
    wp = win->w + win->pl + win->pr;
    plane = (win->h + win->pt + win->pb) * wp;
    taps = win->kh * win->kw;
    ec_line(e, "const int *px = pix + jc + q;");
    ec_line(e, "const int run = w == 32 && px[31] - px[0] == %lld;", LL(31 * win->sw));
  }
  /* bf16: pairs of k (two rows of 32 values), fp16: one k at a time */
  ec_line(e, "for (long kk = 0; kk < kcp; kk += %d) {", p->lp == 2 ? 1 : 2);
  ec_line(e, "float f[2][32];");
  ec_line(e, "for (long h = 0; h < %d; h++) {", p->lp == 2 ? 1 : 2);
  ec_line(e, "float *fh = f[h];");
  ec_line(e, "long x = 0;");
  ec_line(e, "if (kk + h < kc) {");
  if (b->src == SRC_ROWS) {
    ec_line(e, "const float *s = %s + (pc + kk + h) * %lld + jc + q;", b->ptr, LL(b->ld));
    ec_line(e, "for (; x < w; x++) fh[x] = s[x];");
  } else if (b->src == SRC_TRANS) {
    ec_line(e, "const float *s = %s + (jc + q) * %lld + pc + kk + h;", b->ptr, LL(b->ld));
    ec_line(e, "for (; x < w; x++) fh[x] = s[x * %lld];", LL(b->ld));
  } else { /* SRC_IM2COL: tap (c, kh, kw) of depth kg, the panel's pixels */
    ec_line(e, "const long kg = pc + kk + h, t = kg %% %lld;", LL(taps));
    ec_line(e, "const float *s = %s + kg / %lld * %lld + t / %lld * %lld + t %% %lld * %lld;", b->ptr,
            LL(taps), LL(plane), LL(win->kw), LL(win->dh * wp), LL(win->kw), LL(win->dw));
    ec_line(e, "if (run) {");
    ec_line(e, "const float *s0 = s + px[0];");
    ec_line(e, "for (; x < 32; x++) fh[x] = s0[x * %lld];", LL(win->sw));
    ec_line(e, "} else {");
    ec_line(e, "for (; x < w; x++) fh[x] = s[px[x]];");
    ec_line(e, "}");
  }
  ec_line(e, "}");
  ec_line(e, "for (; x < 32; x++) fh[x] = 0.0f;");
  ec_line(e, "}");
  if (p->lp == 2)
    ec_line(e, "onnxc_f16_32(d + kk * 32, f[0]);");
  else
    ec_line(e, "onnxc_bf16_pair(d + kk * 32, f[0], f[1]);");
  ec_line(e, "}");
  ec_line(e, "}");
}

/* Packs A[ic.., pc..] (mc x kc) at ab: panels of 16 rows, per chunk of 32
 * k the rows one after the other; rows past mc and k past kc are 0. */
static void bk_pack_a(EmitC *e, const Prod *p) {
  const Operand *a = &p->a;
  if (p->lp == 2) { /* fp16: per k, the panel's 16 rows side by side */
    ec_line(e, "for (long r0 = 0; r0 < mc; r0 += 16) {");
    ec_line(e, "unsigned short *d = ab + r0 * kcp;");
    ec_line(e, "const long nr = mc - r0 < 16 ? mc - r0 : 16;");
    ec_line(e, "for (long kk = 0; kk < kcp; kk++) {");
    ec_line(e, "float f[16];");
    ec_line(e, "long r = 0;");
    ec_line(e, "if (kk < kc) {");
    if (a->src == SRC_ROWS) {
      ec_line(e, "const float *s = %s + (ic + r0) * %lld + pc + kk;", a->ptr, LL(a->ld));
      ec_line(e, "for (; r < nr; r++) f[r] = s[r * %lld];", LL(a->ld));
    } else {
      ec_line(e, "const float *s = %s + (pc + kk) * %lld + ic + r0;", a->ptr, LL(a->ld));
      ec_line(e, "for (; r < nr; r++) f[r] = s[r];");
    }
    ec_line(e, "}");
    ec_line(e, "for (; r < 16; r++) f[r] = 0.0f;");
    ec_line(e, "onnxc_f16_16(d + kk * 16, f);");
    ec_line(e, "}");
    ec_line(e, "}");
    return;
  }
  ec_line(e, "for (long r0 = 0; r0 < mc; r0 += 16) {");
  ec_line(e, "unsigned short *d = ab + r0 * kcp;");
  ec_line(e, "for (long r = 0; r < 16; r++) {");
  ec_line(e, "for (long c0 = 0; c0 < kcp; c0 += 32) {");
  ec_line(e, "float f[32];");
  ec_line(e, "long x = 0;");
  ec_line(e, "if (r0 + r < mc) {");
  ec_line(e, "const long nk = kc - c0 < 32 ? kc - c0 : 32;");
  if (a->src == SRC_ROWS) {
    ec_line(e, "const float *s = %s + (ic + r0 + r) * %lld + pc + c0;", a->ptr, LL(a->ld));
    ec_line(e, "for (; x < nk; x++) f[x] = s[x];");
  } else {
    ec_line(e, "const float *s = %s + (pc + c0) * %lld + ic + r0 + r;", a->ptr, LL(a->ld));
    ec_line(e, "for (; x < nk; x++) f[x] = s[x * %lld];", LL(a->ld));
  }
  ec_line(e, "}");
  ec_line(e, "for (; x < 32; x++) f[x] = 0.0f;");
  ec_line(e, "onnxc_bf16_row(d + c0 * 16 + r * 32, f);");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
}

/* The 16 x 32 tiles of one packed block. */
static void bk_tiles(EmitC *e, const Prod *p) {
  int64_t Kp = up(p->k, BK_KQ);
  ec_line(e, "for (long jr = 0; jr < nc; jr += 32) {");
  if (p->b.src == SRC_PACKED)
    ec_line(e, "const unsigned short *b = (const unsigned short *)%s + (jc + jr) * %lld + pc * 32;", p->b.ptr,
            LL(Kp));
  else
    ec_line(e, "const unsigned short *b = bb + jr * kcp;");
  ec_line(e, "const long cols = nc - jr < 32 ? nc - jr : 32;");
  /* two 16-row panels at once where there are 32 full rows (the kernel's
   * four C tiles share each B tile load), else one */
  ec_line(e, "for (long ir = 0, step = 16; ir < mc; ir += step) {");
  ec_line(e, "step = mc - ir >= 32 && cols == 32 ? 32 : 16;");
  if (p->a.src == SRC_PACKED && p->lp == 1) /* bk_weight_data: the depth block's panels in order */
    ec_line(e, "const unsigned short *a = (const unsigned short *)%s + pc * %lld + (ic + ir) * kcp;", p->a.ptr,
            LL(up(p->m, BK_MR)));
  else if (p->a.src == SRC_PACKED)
    ec_line(e, "const unsigned short *a = (const unsigned short *)%s + (ic + ir) * %lld + pc * 16;", p->a.ptr,
            LL(Kp));
  else
    ec_line(e, "const unsigned short *a = ab + ir * kcp;");
  ec_line(e, "const long rows = mc - ir < step ? mc - ir : step;");
  ec_line(e, "float *c = %s + (ic + ir) * %lld + jc + jr;", p->y, LL(p->ldy));
  ec_line(e, "if (step == 32) {");
  ec_line(e, "%s(amx, kcp, a, %s, b, c, %lld, pc > 0);", kn(p, "onnxc_bkr2", "onnxc_hkr2"),
          p->a.src == SRC_PACKED && p->lp == 2 ? arena_printf(e->g->arena, "%lld", LL(16 * Kp)) : "16 * kcp",
          LL(p->ldy));
  ec_line(e, "} else if (rows == 16 && cols == 32) {");
  ec_line(e, "%s(amx, kcp, a, b, c, %lld, pc > 0);", kn(p, "onnxc_bkr", "onnxc_hkr"), LL(p->ldy));
  ec_line(e, "} else {");
  ec_line(e, "float t[16 * 32];");
  ec_line(e, "long r, x;");
  ec_line(e, "if (pc > 0)");
  ec_line(e, "  for (r = 0; r < rows; r++)");
  ec_line(e, "    for (x = 0; x < cols; x++) t[r * 32 + x] = c[r * %lld + x];", LL(p->ldy));
  ec_line(e, "%s(amx, kcp, a, b, t, 32, pc > 0);", kn(p, "onnxc_bkr", "onnxc_hkr"));
  ec_line(e, "for (r = 0; r < rows; r++)");
  ec_line(e, "  for (x = 0; x < cols; x++) c[r * %lld + x] = t[r * 32 + x];", LL(p->ldy));
  ec_line(e, "}");
  if (p->epi.len) { /* the whole epilogue, on the finished float32 tile: each row
                        through a local copy, so that no store of the loop can
                        alias what the epilogue reads and the loop vectorizes */
    ec_line(e, "if (pc + kc == %lld) {", LL(p->k));
    ec_line(e, "for (long r = 0; r < rows; r++) {");
    ec_line(e, "const long i = ic + ir + r;");
    ec_line(e, "float *cr = c + r * %lld, er[32];", LL(p->ldy));
    ec_line(e, "(void)i;");
    ec_line(e, "for (long x = 0; x < cols; x++) {");
    ec_line(e, "const long j = jc + jr + x;");
    ec_line(e, "const float v = cr[x];");
    ec_line(e, "(void)j;");
    ec_line(e, "er[x] = %s;", p->epi.s);
    ec_line(e, "}");
    ec_line(e, "for (long x = 0; x < cols; x++) cr[x] = er[x];");
    ec_line(e, "}");
    ec_line(e, "}");
  }
  ec_line(e, "}"); /* ir */
  ec_line(e, "}"); /* jr */
}

void bk_emit_core(EmitC *e, const Prod *p, const Window *win) {
  int64_t M = p->m, N = p->n, K = p->k;
  int64_t NC = p->b.src == SRC_PACKED ? up(N, BK_NR) : GEMM_NC;
  ec_line(e, "{");
  if (p->lp == 2)
    ec_line(e, "const int amx = 0; /* float16 operands, float32 sums */");
  else
    ec_line(e, "const int amx = onnxc_lp_begin(); /* bfloat16 operands, float32 sums */");
  ec_line(e, "for (long jc = 0; jc < %lld; jc += %lld) {", LL(N), LL(NC));
  ec_line(e, "const long nc = %lld - jc < %lld ? %lld - jc : %lld;", LL(N), LL(NC), LL(N), LL(NC));
  ec_line(e, "for (long pc = 0; pc < %lld; pc += %d) {", LL(K), GEMM_KC);
  ec_line(e, "const long kc = %lld - pc < %d ? %lld - pc : %d;", LL(K), GEMM_KC, LL(K), GEMM_KC);
  ec_line(e, "const long kcp = (kc + 31) / 32 * 32;");
  if (p->b.src != SRC_PACKED)
    bk_pack_b(e, p, win);
  ec_line(e, "for (long ic = 0; ic < %lld; ic += %d) {", LL(M), GEMM_MC);
  ec_line(e, "const long mc = %lld - ic < %d ? %lld - ic : %d;", LL(M), GEMM_MC, LL(M), GEMM_MC);
  if (p->a.src != SRC_PACKED)
    bk_pack_a(e, p);
  bk_tiles(e, p);
  ec_line(e, "}"); /* ic */
  ec_line(e, "}"); /* pc */
  ec_line(e, "}"); /* jc */
  ec_line(e, "%s(amx);", kn(p, "onnxc_lp_end", "onnxc_hp_end"));
  ec_line(e, "}");
}

/* The product as items claimed by every thread (--threads), with
 * gk_emit_core_par's arguments: `batch` matrices, `setup` lines per item
 * (pa/pb/py of matrix it / items per matrix), `shared`: the function runs on
 * every thread, whose first nsetup items run setup_item. */
void bk_emit_core_par(EmitC *e, const Prod *p, const Window *win, int64_t batch, const char *const *setup,
                      bool shared, int64_t nsetup,
                      void (*setup_item)(EmitC *, const Prod *, const Window *, int64_t)) {
  int64_t M = p->m, N = p->n, K = p->k;
  ParSplit sp = bk_par_split(p);
  ec_line(e, "{");
  ec_line(e, "long own = 0, it;");
  if (p->off_b >= 0)
    ec_line(e, "unsigned short *bb = (unsigned short *)(S + %lld + (long)onnxc_th * %lld);", LL(p->off_b),
            LL(p->slot));
  if (p->off_a >= 0)
    ec_line(e, "unsigned short *ab = (unsigned short *)(S + %lld + (long)onnxc_th * %lld);", LL(p->off_a),
            LL(p->slot));
  if (p->lp == 2)
    ec_line(e, "const int amx = 0; /* float16 operands, float32 sums */");
  else
    ec_line(e, "const int amx = onnxc_lp_begin(); /* bfloat16 operands, float32 sums */");
  ec_line(e, "(void)own;");
  if (shared)
    ec_line(e, "while ((it = onnxc_nt > 1 ? onnxc_claim() : own++) < %lld) {",
            LL(nsetup + batch * sp.nib * sp.njb));
  else
    ec_line(e, "while ((it = own++) < %lld) {", LL(batch * sp.nib * sp.njb));
  if (shared && nsetup > 0)
    gk_emit_setup_items(e, p, win, nsetup, setup_item);
  for (int i = 0; setup && setup[i]; i++)
    ec_line(e, "%s", setup[i]);
  if (sp.all_rows) {
    ec_line(e, "const long jc = it %% %lld * %lld;", LL(sp.njb), LL(sp.ncw));
  } else {
    ec_line(e, "const long rb = %lld;", LL(up((M + sp.nib - 1) / sp.nib, BK_MR)));
    ec_line(e, "const long ic = it %% %lld / %lld * rb, jc = it %% %lld * %lld;", LL(sp.nib * sp.njb),
            LL(sp.njb), LL(sp.njb), LL(sp.ncw));
    ec_line(e, "if (ic >= %lld)", LL(M));
    ec_line(e, "  continue;");
  }
  ec_line(e, "const long nc = %lld - jc < %lld ? %lld - jc : %lld;", LL(N), LL(sp.ncw), LL(N), LL(sp.ncw));
  ec_line(e, "for (long pc = 0; pc < %lld; pc += %d) {", LL(K), GEMM_KC);
  ec_line(e, "const long kc = %lld - pc < %d ? %lld - pc : %d;", LL(K), GEMM_KC, LL(K), GEMM_KC);
  ec_line(e, "const long kcp = (kc + 31) / 32 * 32;");
  if (p->b.src != SRC_PACKED)
    bk_pack_b(e, p, win);
  if (sp.all_rows) {
    ec_line(e, "for (long ic = 0; ic < %lld; ic += %d) {", LL(M), GEMM_MC);
    ec_line(e, "const long mc = %lld - ic < %d ? %lld - ic : %d;", LL(M), GEMM_MC, LL(M), GEMM_MC);
  } else {
    ec_line(e, "const long mc = %lld - ic < rb ? %lld - ic : rb;", LL(M), LL(M));
  }
  if (p->a.src != SRC_PACKED)
    bk_pack_a(e, p);
  bk_tiles(e, p);
  if (sp.all_rows)
    ec_line(e, "}"); /* ic */
  ec_line(e, "}"); /* pc */
  ec_line(e, "}"); /* items */
  ec_line(e, "%s(amx);", kn(p, "onnxc_lp_end", "onnxc_hp_end"));
  ec_line(e, "}");
}

/* ---- small maps transposed ---------------------------------------------------------- */

/* A bf16 conv of one image whose pixels fill 32-column panels badly (7x7: 49
 * of 64 columns computed, 14x14: 196 of 224) computes Y^T = cols^T x W^T
 * instead: pixels are the rows of 16-row panels whose last 8 may be skipped
 * (49 of 56, 196 of 200), output channels the 32 columns, the weight packed
 * at compile time as W^T column panels (bk_weight_data). cols^T is packed
 * once, whole (all of K: each tile runs over K in registers), by gathers
 * from the unpadded image through a table of depth offsets. */
bool bk_conv_t(Prod *p, const Window *w, int64_t batch) {
  int64_t N = p->n, M = p->m, K = p->k;
  if (p->lp != 1 || batch != 1 || w->groups != 1 || p->a.src != SRC_PACKED || N > 256 ||
      (int64_t)w->c * w->h * w->w >= (1LL << 30))
    return false;
  /* cost in multiply-adds: the rows or columns computed, plus what each form
   * pays per element, fitted to single convs timed both ways on a Zen 4
   * (vdpbf16ps): the transposed store with its epilogue (about 90 per
   * output), the gathers (30 per cols^T value); the usual form's packing (10
   * per value) and C's tile read and written again for each depth block (10
   * per output). ResNet-50's 3x3 convs on 14x14 and 7x7 maps (12-14% faster
   * transposed) and its 1x1 convs on 7x7 (6-9%) go transposed; its 1x1 convs
   * on 14x14 and MobileNetV2's (7% and 8% slower transposed) stay. */
  double nkb = (double)((K + GEMM_KC - 1) / GEMM_KC);
  double usual = (double)up(N, BK_NR) * M * K + 10.0 * N * K + 10.0 * nkb * N * M;
  double trans = (double)up(N, 8) * M * K + 90.0 * N * M + 30.0 * N * K;
  if (trans >= usual)
    return false;
  p->bt = true;
  p->off_a = 0;
  p->off_b = p->off_pix = p->off_img = -1;
  p->slot = 0;
  p->bytes = up(up(N, BK_MR) * up(p->k, BK_KQ) * 2, 64);
  p->par = threads_worth(p->threads, ec_cost_ns((double)p->m * p->n * p->k, 0));
  return true;
}

bool bk_emit_conv_t(EmitC *e, const Node *n, const Prod *p, const Window *w, bool shared) {
  int64_t N = p->n, M = p->m, K = p->k, Kp = up(K, BK_KQ), taps = w->kh * w->kw, npan = (N + 15) / 16;
  int64_t nj = up(M, BK_NR) / BK_NR, ns = shared ? min64(npan, 2 * (int64_t)ec_threads(e)) : 1;
  ec_line(e, "/* bf16, small map transposed: Y^T[%lld x %lld] = cols^T[%lld x %lld] x W^T, packed weights */",
          LL(N), LL(M), LL(N), LL(K));
  /* depth k: image offset, row and column of its tap relative to the output
   * pixel's corner; past K a row no pixel reaches */
  ec_line(e, "static const int kt[%lld] = {", LL(3 * Kp));
  for (int part = 0; part < 3; part++)
    for (int64_t k0 = 0; k0 < Kp; k0 += 12) {
      char line[256];
      int len = 0;
      for (int64_t k = k0; k < k0 + 12 && k < Kp; k++) {
        int64_t ch = k / taps, t = k % taps, ky = t / w->kw * w->dh - w->pt, kx = t % w->kw * w->dw - w->pl;
        int64_t v = k >= K ? (part == 1 ? -(1LL << 30) : 0)
                           : part == 0 ? ch * w->h * w->w + ky * w->w + kx : part == 1 ? ky : kx;
        len += snprintf(line + len, sizeof line - (size_t)len, "%lld, ", LL(v));
      }
      ec_line(e, "%s", line);
    }
  ec_line(e, "};");
  ec_line(e, "unsigned short *ap = (unsigned short *)(S + %lld);", LL(p->off_a));
  ec_line(e, "const int amx = onnxc_lp_begin(); /* bfloat16 operands, float32 sums */");
  if (ir_has_input(n, 2))
    ec_line(e, "const float *bg = X2;");
  if (ir_has_input(n, 3))
    ec_line(e, "const float *rn = X3;");
  ec_line(e, "long own = 0, it;");
  ec_line(e, "(void)own;");
  if (shared)
    ec_line(e, "while ((it = onnxc_nt > 1 ? onnxc_claim() : own++) < %lld) {", LL(ns + nj));
  else
    ec_line(e, "while ((it = own++) < %lld) {", LL(ns + nj));
  /* the first ns items pack cols^T, panels of 16 pixels each (the rows past
   * N zero); the others each compute 32 output channels for every pixel */
  ec_line(e, "if (it < %lld) {", LL(ns));
  ec_line(e, "const long p0 = it * %lld / %lld * 16, pe = (it + 1) * %lld / %lld * 16;", LL(npan), LL(ns), LL(npan),
          LL(ns));
  ec_line(e, "const long p1 = pe < %lld ? pe : %lld;", LL(N), LL(N));
  ec_line(e, "onnxc_bf16_colst(ap, %lld, X0, kt, p0, p1, %lld, %lld, %lld, %lld, %lld);", LL(Kp), LL(w->ow),
          LL(w->sh), LL(w->sw), LL(w->h), LL(w->w));
  ec_line(e, "for (long q = p1; q < pe; q++)");
  ec_line(e, "  for (long k = 0; k < %lld; k++) ap[q / 16 * %lld + k / 32 * 512 + q %% 16 * 32 + k %% 32] = 0;",
          LL(Kp), LL(16 * Kp));
  if (shared)
    ec_line(e, "onnxc_ready_set(onnxc_nt);");
  ec_line(e, "continue;");
  ec_line(e, "}");
  if (shared)
    ec_line(e, "onnxc_ready_wait(onnxc_nt, %lld);", LL(ns));
  ec_line(e, "const long jr = (it - %lld) * 32;", LL(ns));
  ec_line(e, "const unsigned short *b = (const unsigned short *)X1 + jr * %lld;", LL(Kp));
  ec_line(e, "const long cols = %lld - jr < 32 ? %lld - jr : 32;", LL(M), LL(M));
  ec_line(e, "for (long ir = 0; ir < %lld; ir += 16) {", LL(N));
  ec_line(e, "const long rows = %lld - ir < 16 ? %lld - ir : 16;", LL(N), LL(N));
  ec_line(e, "float t[16 * 32];");
  ec_line(e, "if (rows > 8 || amx)");
  ec_line(e, "  onnxc_bkr(amx, %lld, ap + ir * %lld, b, t, 32, 0);", LL(Kp), LL(Kp));
  ec_line(e, "else /* the last panel's first 8 rows */");
  ec_line(e, "  onnxc_bkr_v(%lld, ap + ir * %lld, b, t, 32, 0, 8);", LL(Kp), LL(Kp));
  /* stored transposed: Y[i][j] for channel i, pixel j, with the epilogue */
  ec_line(e, "for (long x = 0; x < cols; x++) {");
  ec_line(e, "const long i = jr + x;");
  ec_line(e, "float *yr = Y0 + i * %lld + ir;", LL(N));
  ec_line(e, "(void)i;");
  ec_line(e, "for (long r = 0; r < rows; r++) {");
  ec_line(e, "const long j = ir + r;");
  ec_line(e, "const float v = t[r * 32 + x];");
  ec_line(e, "(void)j;");
  ec_line(e, "yr[r] = %s;", p->epi.len ? p->epi.s : "v");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}"); /* ir */
  ec_line(e, "}"); /* items */
  ec_line(e, "onnxc_lp_end(amx);");
  return true;
}

/* ---- weights packed at compile time ----------------------------------------------- */

/* Elements (floats, two bfloat16 each) of the packed form of v for product p. */
int64_t bk_weight_numel(const Prod *p, const Node *n, const Value *v) {
  int64_t Kp = up(p->k, BK_KQ);
  if (p->bt && n->op == OP_Conv && n->in[1] == v) /* W^T as column panels (bk_conv_t) */
    return up(p->m, BK_NR) * Kp / 2;
  if (n->op == OP_Conv && n->in[1] == v && p->a.src == SRC_PACKED)
    return ir_attr_int(n, "group", 1) * up(p->m, BK_MR) * Kp / 2;
  if ((n->op == OP_MatMul || n->op == OP_Gemm) && n->in[1] == v && p->b.src == SRC_PACKED)
    return up(p->n, BK_NR) * Kp / 2;
  return 0;
}

const Tensor *bk_weight_data(const Prod *p, const Node *n, const Value *v, Arena *a) {
  int64_t K = p->k, Kp = up(K, BK_KQ), total = 2 * bk_weight_numel(p, n, v);
  if (total == 0)
    return v->konst;
  const float *src = v->konst->data;
  uint16_t *d = arena_alloc(a, (size_t)total * sizeof(uint16_t));
  memset(d, 0, (size_t)total * sizeof(uint16_t));
  if (p->lp == 2 && n->op == OP_Conv) {
    /* fp16 A: group g, row i, depth k at g*rows*Kp + (i/16)*16*Kp + k*16 + i%16 */
    int64_t rows = up(p->m, BK_MR), G = ir_attr_int(n, "group", 1);
    for (int64_t g = 0; g < G; g++)
      for (int64_t i = 0; i < p->m; i++)
        for (int64_t k = 0; k < K; k++)
          d[g * rows * Kp + (i / BK_MR) * BK_MR * Kp + k * BK_MR + i % BK_MR] =
              lowp_f16(src[(g * p->m + i) * K + k]);
  } else if (p->lp == 2) {
    /* fp16 B: column j, depth k at (j/32)*32*Kp + k*32 + j%32 */
    bool tb = n->op == OP_Gemm && ir_attr_int(n, "transB", 0) == 1;
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < p->n; j++)
        d[(j / BK_NR) * BK_NR * Kp + k * BK_NR + j % BK_NR] = lowp_f16(tb ? src[j * K + k] : src[k * p->n + j]);
  } else if (p->bt) {
    /* W^T for a conv computed transposed: output channel j, depth k at
     * (j/32)*32*Kp + (k/2)*64 + (j%32)*2 + k%2 (B's layout) */
    for (int64_t j = 0; j < p->m; j++)
      for (int64_t k = 0; k < K; k++)
        d[(j / BK_NR) * BK_NR * Kp + (k / 2) * 2 * BK_NR + (j % BK_NR) * 2 + k % 2] = lowp_bf16(src[j * K + k]);
  } else if (n->op == OP_Conv) {
    /* A, in the order the tiles read it: group g, depth block pc (GEMM_KC deep,
     * kcp padded to 32), row i, depth k = pc + kk at g*rows*Kp + pc*rows +
     * (i/16)*16*kcp + (kk/32)*512 + (i%16)*32 + kk%32: a depth block's panels
     * one after the other, so that the weight streams in order */
    int64_t rows = up(p->m, BK_MR), G = ir_attr_int(n, "group", 1);
    for (int64_t g = 0; g < G; g++)
      for (int64_t i = 0; i < p->m; i++)
        for (int64_t k = 0; k < K; k++) {
          int64_t pc = k / GEMM_KC * GEMM_KC, kk = k - pc, kcp = up(min64(GEMM_KC, K - pc), BK_KQ);
          d[g * rows * Kp + pc * rows + (i / BK_MR) * BK_MR * kcp + (kk / BK_KQ) * BK_KQ * BK_MR +
            (i % BK_MR) * BK_KQ + kk % BK_KQ] = lowp_bf16(src[(g * p->m + i) * K + k]);
        }
  } else {
    /* B: column j, depth k at (j/32)*32*Kp + (k/2)*64 + (j%32)*2 + k%2 */
    bool tb = n->op == OP_Gemm && ir_attr_int(n, "transB", 0) == 1;
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < p->n; j++)
        d[(j / BK_NR) * BK_NR * Kp + (k / 2) * 2 * BK_NR + (j % BK_NR) * 2 + k % 2] =
            lowp_bf16(tb ? src[j * K + k] : src[k * p->n + j]);
  }
  Tensor *t = arena_alloc(a, sizeof *t);
  memset(t, 0, sizeof *t);
  t->dt = DT_F32; /* two bfloat16 per float32 word: the kernel's parameter keeps its type */
  t->numel = total / 2;
  t->nbytes = total * 2;
  t->data = d;
  t->shape = shape_make(1, &t->numel);
  return t;
}

/* ---- the generated kernels -------------------------------------------------------- */

static const char *const prelude[] = {
    "/* --precision bf16 (docs/precision.md): operands packed as bfloat16\n"
    " * (float32 rounded to nearest even, subnormals to zero, as VCVTNEPS2BF16),\n"
    " * 16 x 32 float32 tiles += A (16 rows per 32 k) x B (pairs of k per column). */\n"
    "#if defined(__AVX512BF16__) && defined(__AVX512F__)\n"
    "#include <immintrin.h>\n"
    "static void onnxc_bf16_row(unsigned short *d, const float *s) {\n"
    "  _mm256_storeu_si256((__m256i *)d, (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(s)));\n"
    "  _mm256_storeu_si256((__m256i *)(d + 16), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(s + 16)));\n"
    "}\n"
    "static void onnxc_bf16_pair(unsigned short *d, const float *s0, const float *s1) {\n"
    "  int h;\n"
    "  for (h = 0; h < 32; h += 16) {\n"
    "    const __m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(s0 + h)));\n"
    "    const __m512i hi = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(s1 + h)));\n"
    "    _mm512_storeu_si512((void *)(d + 2 * h), _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));\n"
    "  }\n"
    "}\n"
    ,
    "/* m values of an image row from s (sw apart) into lanes l..l+m-1, the\n"
    " * other lanes 0 (masked loads: lanes outside are not read) */\n"
    "static __m512 onnxc_win_ld(const float *s, long l, long m, long sw) {\n"
    "  if (sw == 1)\n"
    "    return _mm512_maskz_loadu_ps((__mmask16)(((1u << m) - 1u) << l), s - l);\n"
    "  if (sw == 2) {\n"
    "    const unsigned long long r =\n"
    "        (((1ull << (2 * (l + m))) - 1ull) ^ ((1ull << (2 * l)) - 1ull)) & 0x55555555ull;\n"
    "    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);\n"
    "    return _mm512_permutex2var_ps(_mm512_maskz_loadu_ps((__mmask16)r, s - 2 * l), ev,\n"
    "                                  _mm512_maskz_loadu_ps((__mmask16)(r >> 16), s - 2 * l + 16));\n"
    "  } else {\n"
    "    float t[16] = {0.0f};\n"
    "    long j;\n"
    "    for (j = 0; j < m; j++) t[l + j] = s[j * sw];\n"
    "    return _mm512_loadu_ps(t);\n"
    "  }\n"
    "}\n"
    "/* Packs columns j0..j0+n-1 of two depth rows into the pair rows of the\n"
    " * panels at d (pq values apart): column j is output pixel j of a map of\n"
    " * ow pixels a row, read at s0 / s1 + (j / ow) * rs + (j % ow) * sw (a null\n"
    " * s0 or s1: zeros), runs of one output row at a time, never across 16\n"
    " * columns of a panel */\n"
    "static void onnxc_bf16_win(unsigned short *d, long pq, const float *s0, const float *s1, long j0,\n"
    "                           long n, long ow, long rs, long sw) {\n"
    "  long c = 0, y = j0 / ow, x = j0 % ow;\n"
    "  while (c < n) {\n"
    "    const long l = c & 15, run = ow - x < n - c ? ow - x : n - c;\n"
    "    const long m = 16 - l < run ? 16 - l : run;\n"
    "    const long off = y * rs + x * sw;\n"
    "    const __m512 a = s0 ? onnxc_win_ld(s0 + off, l, m, sw) : _mm512_setzero_ps();\n"
    "    const __m512 b = s1 ? onnxc_win_ld(s1 + off, l, m, sw) : _mm512_setzero_ps();\n"
    "    const __m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(a));\n"
    "    const __m512i hi = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(b));\n"
    "    _mm512_mask_storeu_epi32((void *)(d + (c >> 5) * pq + 2 * (c & 16)),\n"
    "                             (__mmask16)(((1u << m) - 1u) << l),\n"
    "                             _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));\n"
    "    c += m;\n"
    "    x += m;\n"
    "    if (x == ow) {\n"
    "      x = 0;\n"
    "      y++;\n"
    "    }\n"
    "  }\n"
    "}\n"
    ,
    "/* Rows p0..p1-1 of cols^T (output pixels x depth) of a conv on an h x w\n"
    " * image x, as A panels (16 rows; per chunk of 32 k the rows one after\n"
    " * the other) of kp k: depth k of pixel (oy, ox) is x[kt[k] + oy*sh*w +\n"
    " * ox*sw] where kt[kp + k] + oy*sh and kt[2kp + k] + ox*sw fall inside\n"
    " * the image, else 0 (padding, and depth past K); masked gathers */\n"
    "static void onnxc_bf16_colst(unsigned short *d, long kp, const float *x, const int *kt, long p0,\n"
    "                             long p1, long ow, long sh, long sw, long h, long w) {\n"
    "  const __m512i vh = _mm512_set1_epi32((int)h), vw = _mm512_set1_epi32((int)w);\n"
    "  const __m512i zero = _mm512_setzero_si512();\n"
    "  long p, c;\n"
    "  for (p = p0; p < p1; p++) {\n"
    "    const long oy = p / ow * sh, ox = p % ow * sw;\n"
    "    const __m512i vy = _mm512_set1_epi32((int)oy), vx = _mm512_set1_epi32((int)ox);\n"
    "    const __m512i vp = _mm512_set1_epi32((int)(oy * w + ox));\n"
    "    unsigned short *row = d + p / 16 * 16 * kp + p % 16 * 32;\n"
    "    for (c = 0; c < kp; c += 32) {\n"
    "      __m512 g[2];\n"
    "      int q;\n"
    "      for (q = 0; q < 2; q++) {\n"
    "        const long k = c + 16 * q;\n"
    "        const __m512i iy = _mm512_add_epi32(_mm512_loadu_si512((const void *)(kt + kp + k)), vy);\n"
    "        const __m512i ix = _mm512_add_epi32(_mm512_loadu_si512((const void *)(kt + 2 * kp + k)), vx);\n"
    "        const __mmask16 m = _mm512_cmpge_epi32_mask(iy, zero) & _mm512_cmplt_epi32_mask(iy, vh) &\n"
    "                            _mm512_cmpge_epi32_mask(ix, zero) & _mm512_cmplt_epi32_mask(ix, vw);\n"
    "        const __m512i at = _mm512_add_epi32(_mm512_loadu_si512((const void *)(kt + k)), vp);\n"
    "        g[q] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, at, x, 4);\n"
    "      }\n"
    "      _mm512_storeu_si512((void *)(row + c * 16), (__m512i)_mm512_cvtne2ps_pbh(g[1], g[0]));\n"
    "    }\n"
    "  }\n"
    "}\n"
    "#else\n"
    "static unsigned short onnxc_bf16(float f) {\n"
    "  union { float f; unsigned int u; } v;\n"
    "  v.f = f;\n"
    "  if ((v.u & 0x7f800000u) == 0) /* zero and subnormals: signed zero */\n"
    "    return (unsigned short)((v.u >> 16) & 0x8000u);\n"
    "  if ((v.u & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet */\n"
    "    return (unsigned short)((v.u >> 16) | 0x40u);\n"
    "  return (unsigned short)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "static void onnxc_bf16_row(unsigned short *d, const float *s) {\n"
    "  int x;\n"
    "  for (x = 0; x < 32; x++) d[x] = onnxc_bf16(s[x]);\n"
    "}\n"
    "static void onnxc_bf16_pair(unsigned short *d, const float *s0, const float *s1) {\n"
    "  int x;\n"
    "  for (x = 0; x < 32; x++) {\n"
    "    d[2 * x] = onnxc_bf16(s0[x]);\n"
    "    d[2 * x + 1] = onnxc_bf16(s1[x]);\n"
    "  }\n"
    "}\n"
    ,
    "static void onnxc_bf16_win(unsigned short *d, long pq, const float *s0, const float *s1, long j0,\n"
    "                           long n, long ow, long rs, long sw) {\n"
    "  long c;\n"
    "  for (c = 0; c < n; c++) {\n"
    "    const long p = j0 + c, off = p / ow * rs + p % ow * sw;\n"
    "    unsigned short *w = d + (c >> 5) * pq + 2 * (c & 31);\n"
    "    w[0] = s0 ? onnxc_bf16(s0[off]) : (unsigned short)0;\n"
    "    w[1] = s1 ? onnxc_bf16(s1[off]) : (unsigned short)0;\n"
    "  }\n"
    "}\n"
    "static void onnxc_bf16_colst(unsigned short *d, long kp, const float *x, const int *kt, long p0,\n"
    "                             long p1, long ow, long sh, long sw, long h, long w) {\n"
    "  long p, k;\n"
    "  for (p = p0; p < p1; p++) {\n"
    "    const long oy = p / ow * sh, ox = p % ow * sw;\n"
    "    unsigned short *row = d + p / 16 * 16 * kp + p % 16 * 32;\n"
    "    for (k = 0; k < kp; k++) {\n"
    "      const long iy = kt[kp + k] + oy, ix = kt[2 * kp + k] + ox;\n"
    "      const float v = iy >= 0 && iy < h && ix >= 0 && ix < w ? x[kt[k] + oy * w + ox] : 0.0f;\n"
    "      row[k / 32 * 512 + k % 32] = onnxc_bf16(v);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "#endif\n",
    "/* C (16 x 32, row stride ldc) (+)= A x B over kcp (a multiple of 32) k,\n"
    " * summed in float32; what runs without AMX (or when Linux refuses it). */\n"
    "#if defined(__AVX512BF16__) && defined(__AVX512F__)\n"
    "/* vdpbf16ps: per 32-bit lane, c += a0 * b0 + a1 * b1 over a pair of k;\n"
    " * 8 rows x 32 columns in 16 accumulators, twice */\n"
    "#define ONNXC_BROW(i) x = (__m512bh)_mm512_set1_epi32((int)((unsigned int)ar[(i) * 32] | \\\n"
    "  (unsigned int)ar[(i) * 32 + 1] << 16)); \\\n"
    "  c##i##0 = _mm512_dpbf16_ps(c##i##0, x, b0); c##i##1 = _mm512_dpbf16_ps(c##i##1, x, b1)\n"
    "#define ONNXC_BLD(i) c##i##0 = acc ? _mm512_loadu_ps(cr + (i) * ldc) : _mm512_setzero_ps(); \\\n"
    "  c##i##1 = acc ? _mm512_loadu_ps(cr + (i) * ldc + 16) : _mm512_setzero_ps()\n"
    "#define ONNXC_BST(i) _mm512_storeu_ps(cr + (i) * ldc, c##i##0); \\\n"
    "  _mm512_storeu_ps(cr + (i) * ldc + 16, c##i##1)\n"
    "static void onnxc_bkr_v(long kcp, const unsigned short *a, const unsigned short *b, float *c,\n"
    "                        long ldc, int acc, long nh) {\n"
    "  long h, k;\n"
    "  for (h = 0; h < nh; h += 8) {\n"
    "    float *cr = c + h * ldc;\n"
    "    __m512 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71;\n"
    "    __m512bh x;\n"
    "    ONNXC_BLD(0); ONNXC_BLD(1); ONNXC_BLD(2); ONNXC_BLD(3);\n"
    "    ONNXC_BLD(4); ONNXC_BLD(5); ONNXC_BLD(6); ONNXC_BLD(7);\n"
    "    for (k = 0; k < kcp; k += 2) {\n"
    "      const unsigned short *ar = a + (k >> 5) * 512 + h * 32 + (k & 31);\n"
    "      const __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)(b + k * 32));\n"
    "      const __m512bh b1 = (__m512bh)_mm512_loadu_si512((const void *)(b + k * 32 + 32));\n"
    "      ONNXC_BROW(0); ONNXC_BROW(1); ONNXC_BROW(2); ONNXC_BROW(3);\n"
    "      ONNXC_BROW(4); ONNXC_BROW(5); ONNXC_BROW(6); ONNXC_BROW(7);\n"
    "    }\n"
    "    ONNXC_BST(0); ONNXC_BST(1); ONNXC_BST(2); ONNXC_BST(3);\n"
    "    ONNXC_BST(4); ONNXC_BST(5); ONNXC_BST(6); ONNXC_BST(7);\n"
    "  }\n"
    "}\n"
    "#else\n"
    "static float onnxc_f32b(unsigned short h) {\n"
    "  union { unsigned int u; float f; } v;\n"
    "  v.u = (unsigned int)h << 16;\n"
    "  return v.f;\n"
    "}\n"
    "/* each k's 32 values of B and nh (16 or 8) of A converted once, then\n"
    " * their multiply-adds in float32 (exact products, k in order) */\n"
    "static void onnxc_bkr_v(long kcp, const unsigned short *a, const unsigned short *b, float *c,\n"
    "                        long ldc, int acc, long nh) {\n"
    "  float t[16][32], bf[32], af[16];\n"
    "  long i, j, k;\n"
    "  for (i = 0; i < nh; i++)\n"
    "    for (j = 0; j < 32; j++) t[i][j] = acc ? c[i * ldc + j] : 0.0f;\n"
    "  for (k = 0; k < kcp; k++) {\n"
    "    const unsigned short *bk = b + (k >> 1) * 64 + (k & 1);\n"
    "    for (j = 0; j < 32; j++) bf[j] = onnxc_f32b(bk[j * 2]);\n"
    "    for (i = 0; i < nh; i++) af[i] = onnxc_f32b(a[(k >> 5) * 512 + i * 32 + (k & 31)]);\n"
    "    for (i = 0; i < nh; i++)\n"
    "      for (j = 0; j < 32; j++) t[i][j] += af[i] * bf[j];\n"
    "  }\n"
    "  for (i = 0; i < nh; i++)\n"
    "    for (j = 0; j < 32; j++) c[i * ldc + j] = t[i][j];\n"
    "}\n"
    "#endif\n"
    ,
    "#if defined(__AMX_BF16__) && defined(__AMX_TILE__) && defined(__x86_64__) && defined(__linux__)\n"
    "#include <immintrin.h>\n"
    "/* Asks Linux for the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM,\n"
    " * XFEATURE_XTILEDATA) and configures tiles 0-7 as 16 rows of 64 bytes:\n"
    " * 1 when the tiles are ready, else 0 (then onnxc_bkr_v runs). */\n"
    "static int onnxc_lp_begin(void) {\n"
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
    "static void onnxc_bkr2(int amx, long kcp, const unsigned short *a, long a2, const unsigned short *b,\n"
    "                       float *c, long ldc, int acc);\n"
    "static void onnxc_lp_end(int amx) {\n"
    "  (void)onnxc_bf16_row; /* packers a model may not need (weights packed at compile time) */\n"
    "  (void)onnxc_bkr2; /* and the 32-row kernel (small maps take 16 rows at a time) */\n"
    "  (void)onnxc_bf16_pair;\n"
    "  (void)onnxc_bf16_win;\n"
    "  (void)onnxc_bf16_colst;\n"
    "  if (amx)\n"
    "    _tile_release();\n"
    "}\n"
    "static void onnxc_bkr(int amx, long kcp, const unsigned short *a, const unsigned short *b, float *c,\n"
    "                      long ldc, int acc) {\n"
    "  long q;\n"
    "  if (!amx) {\n"
    "    onnxc_bkr_v(kcp, a, b, c, ldc, acc, 16);\n"
    "    return;\n"
    "  }\n"
    "  if (acc) {\n"
    "    _tile_loadd(0, c, ldc * 4);\n"
    "    _tile_loadd(1, c + 16, ldc * 4);\n"
    "  } else {\n"
    "    _tile_zero(0);\n"
    "    _tile_zero(1);\n"
    "  }\n"
    "  for (q = 0; q < kcp; q += 32) {\n"
    "    _tile_loadd(4, a + q * 16, 64);\n"
    "    _tile_loadd(6, b + q * 32, 128);\n"
    "    _tile_loadd(7, b + q * 32 + 32, 128);\n"
    "    _tile_dpbf16ps(0, 4, 6);\n"
    "    _tile_dpbf16ps(1, 4, 7);\n"
    "  }\n"
    "  _tile_stored(0, c, ldc * 4);\n"
    "  _tile_stored(1, c + 16, ldc * 4);\n"
    "}\n"
    ,
    "/* 32 x 32: rows 16-31 from the next panel, at a + a2 */\n"
    "static void onnxc_bkr2(int amx, long kcp, const unsigned short *a, long a2, const unsigned short *b,\n"
    "                       float *c, long ldc, int acc) {\n"
    "  long q;\n"
    "  if (!amx) {\n"
    "    onnxc_bkr_v(kcp, a, b, c, ldc, acc, 16);\n"
    "    onnxc_bkr_v(kcp, a + a2, b, c + 16 * ldc, ldc, acc, 16);\n"
    "    return;\n"
    "  }\n"
    "  if (acc) {\n"
    "    _tile_loadd(0, c, ldc * 4);\n"
    "    _tile_loadd(1, c + 16, ldc * 4);\n"
    "    _tile_loadd(2, c + 16 * ldc, ldc * 4);\n"
    "    _tile_loadd(3, c + 16 * ldc + 16, ldc * 4);\n"
    "  } else {\n"
    "    _tile_zero(0);\n"
    "    _tile_zero(1);\n"
    "    _tile_zero(2);\n"
    "    _tile_zero(3);\n"
    "  }\n"
    "  for (q = 0; q < kcp; q += 32) {\n"
    "    _tile_loadd(4, a + q * 16, 64);\n"
    "    _tile_loadd(5, a + a2 + q * 16, 64);\n"
    "    _tile_loadd(6, b + q * 32, 128);\n"
    "    _tile_loadd(7, b + q * 32 + 32, 128);\n"
    "    _tile_dpbf16ps(0, 4, 6);\n"
    "    _tile_dpbf16ps(1, 4, 7);\n"
    "    _tile_dpbf16ps(2, 5, 6);\n"
    "    _tile_dpbf16ps(3, 5, 7);\n"
    "  }\n"
    "  _tile_stored(0, c, ldc * 4);\n"
    "  _tile_stored(1, c + 16, ldc * 4);\n"
    "  _tile_stored(2, c + 16 * ldc, ldc * 4);\n"
    "  _tile_stored(3, c + 16 * ldc + 16, ldc * 4);\n"
    "}\n"
    "#else\n"
    "static int onnxc_lp_begin(void) { return 0; }\n"
    "static void onnxc_bkr2(int amx, long kcp, const unsigned short *a, long a2, const unsigned short *b,\n"
    "                       float *c, long ldc, int acc);\n"
    "static void onnxc_lp_end(int amx) {\n"
    "  (void)amx;\n"
    "  (void)onnxc_bkr2;\n"
    "  (void)onnxc_bf16_row;\n"
    "  (void)onnxc_bf16_pair;\n"
    "  (void)onnxc_bf16_win;\n"
    "  (void)onnxc_bf16_colst;\n"
    "}\n"
    "static void onnxc_bkr(int amx, long kcp, const unsigned short *a, const unsigned short *b, float *c,\n"
    "                      long ldc, int acc) {\n"
    "  (void)amx;\n"
    "  onnxc_bkr_v(kcp, a, b, c, ldc, acc, 16);\n"
    "}\n"
    "static void onnxc_bkr2(int amx, long kcp, const unsigned short *a, long a2, const unsigned short *b,\n"
    "                       float *c, long ldc, int acc) {\n"
    "  (void)amx;\n"
    "  onnxc_bkr_v(kcp, a, b, c, ldc, acc, 16);\n"
    "  onnxc_bkr_v(kcp, a + a2, b, c + 16 * ldc, ldc, acc, 16);\n"
    "}\n"
    "#endif\n\n",
    NULL};

/* --precision fp16 and float16 models. No x86 instruction multiplies
 * float16 with float32 sums short of AMX-FP16 (not on the machines this was
 * built on; AVX512-FP16 sums in float16), so each half is widened to float32
 * (exact) and the products, exact in float32, are summed in k order with
 * float32 FMA: every path gives the same bits. */
static const char *const prelude_h[] = {
    "/* --precision fp16 (docs/precision.md): operands packed as IEEE half\n"
    " * (float32 rounded to nearest even, as VCVTPS2PH), 16 x 32 float32 tiles\n"
    " * += A (per k, 16 rows) x B (per k, 32 columns): halves widened to float32\n"
    " * (exact), products (exact) summed in k order on every path. */\n"
    "#if defined(__AVX512F__) || defined(__F16C__)\n"
    "#include <immintrin.h>\n"
    "#endif\n"
    "#if defined(__AVX512F__)\n"
    "static void onnxc_f16_16(unsigned short *d, const float *s) {\n"
    "  _mm256_storeu_si256((__m256i *)d, _mm512_cvtps_ph(_mm512_loadu_ps(s), _MM_FROUND_TO_NEAREST_INT));\n"
    "}\n"
    "#elif defined(__F16C__)\n"
    "static void onnxc_f16_16(unsigned short *d, const float *s) {\n"
    "  _mm_storeu_si128((__m128i *)d, _mm256_cvtps_ph(_mm256_loadu_ps(s), _MM_FROUND_TO_NEAREST_INT));\n"
    "  _mm_storeu_si128((__m128i *)(d + 8), _mm256_cvtps_ph(_mm256_loadu_ps(s + 8), _MM_FROUND_TO_NEAREST_INT));\n"
    "}\n"
    "#else\n"
    "/* float32 -> half, to nearest even; overflow to infinity; NaN quiet */\n"
    "static unsigned short onnxc_f16(float f) {\n"
    "  union { float f; unsigned int u; } v;\n"
    "  unsigned int a, e, m, sh, q, rem, hw;\n"
    "  unsigned short sign;\n"
    "  v.f = f;\n"
    "  sign = (unsigned short)((v.u >> 16) & 0x8000u);\n"
    "  a = v.u & 0x7fffffffu;\n"
    "  if (a > 0x7f800000u)\n"
    "    return (unsigned short)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));\n"
    "  if (a >= 0x477ff000u)\n"
    "    return (unsigned short)(sign | 0x7c00u);\n"
    "  if (a >= 0x38800000u)\n"
    "    return (unsigned short)(sign | ((a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13));\n"
    "  if (a < 0x33000000u)\n"
    "    return sign;\n"
    "  e = a >> 23;\n"
    "  m = (a & 0x7fffffu) | 0x800000u;\n"
    "  sh = 126u - e;\n"
    "  q = m >> sh;\n"
    "  rem = m & ((1u << sh) - 1u);\n"
    "  hw = 1u << (sh - 1u);\n"
    "  if (rem > hw || (rem == hw && (q & 1u)))\n"
    "    q++;\n"
    "  return (unsigned short)(sign | q);\n"
    "}\n"
    "static void onnxc_f16_16(unsigned short *d, const float *s) {\n"
    "  int x;\n"
    "  for (x = 0; x < 16; x++) d[x] = onnxc_f16(s[x]);\n"
    "}\n"
    "#endif\n"
    "static void onnxc_f16_32(unsigned short *d, const float *s) {\n"
    "  onnxc_f16_16(d, s);\n"
    "  onnxc_f16_16(d + 16, s + 16);\n"
    "}\n"
    "static void onnxc_hp_end(int amx) {\n"
    "  (void)amx;\n"
    "  (void)onnxc_f16_32; /* packers a model may not need (weights packed at compile time) */\n"
    "}\n",
    "/* C (16 x 32, row stride ldc) (+)= A x B over kcp k: c = c + a * b in\n"
    " * k order (each product exact, so FMA or not, the same sums) */\n"
    "#if defined(__AVX512F__)\n"
    "#define ONNXC_HROW(i) x = _mm512_set1_ps(ar[i]); \\\n"
    "  c##i##0 = _mm512_fmadd_ps(x, b0, c##i##0); c##i##1 = _mm512_fmadd_ps(x, b1, c##i##1)\n"
    "#define ONNXC_HLD(i) c##i##0 = acc ? _mm512_loadu_ps(cr + (i) * ldc) : _mm512_setzero_ps(); \\\n"
    "  c##i##1 = acc ? _mm512_loadu_ps(cr + (i) * ldc + 16) : _mm512_setzero_ps()\n"
    "#define ONNXC_HST(i) _mm512_storeu_ps(cr + (i) * ldc, c##i##0); \\\n"
    "  _mm512_storeu_ps(cr + (i) * ldc + 16, c##i##1)\n"
    "/* the A panel widened once (vcvtph2ps), then 8 rows x 32 columns in 16\n"
    " * accumulators, twice, B widened in registers */\n"
    "static void onnxc_hkr(int amx, long kcp, const unsigned short *a, const unsigned short *b, float *c,\n"
    "                      long ldc, int acc) {\n"
    "  float af[256 * 16];\n"
    "  long h, k;\n"
    "  (void)amx;\n"
    "  for (k = 0; k < kcp; k++)\n"
    "    _mm512_storeu_ps(af + k * 16, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(a + k * 16))));\n"
    "  for (h = 0; h < 16; h += 8) {\n"
    "    float *cr = c + h * ldc;\n"
    "    const float *ar = af + h;\n"
    "    const unsigned short *bk = b;\n"
    "    __m512 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71, x;\n"
    "    ONNXC_HLD(0); ONNXC_HLD(1); ONNXC_HLD(2); ONNXC_HLD(3);\n"
    "    ONNXC_HLD(4); ONNXC_HLD(5); ONNXC_HLD(6); ONNXC_HLD(7);\n"
    "    for (k = 0; k < kcp; k++) {\n"
    "      const __m512 b0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)bk));\n"
    "      const __m512 b1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(bk + 16)));\n"
    "      ONNXC_HROW(0); ONNXC_HROW(1); ONNXC_HROW(2); ONNXC_HROW(3);\n"
    "      ONNXC_HROW(4); ONNXC_HROW(5); ONNXC_HROW(6); ONNXC_HROW(7);\n"
    "      ar += 16;\n"
    "      bk += 32;\n"
    "    }\n"
    "    ONNXC_HST(0); ONNXC_HST(1); ONNXC_HST(2); ONNXC_HST(3);\n"
    "    ONNXC_HST(4); ONNXC_HST(5); ONNXC_HST(6); ONNXC_HST(7);\n"
    "  }\n"
    "}\n"
    "#else\n"
    "#if defined(__F16C__)\n"
    "static void onnxc_h2f(float *d, const unsigned short *s, int n) {\n"
    "  int x;\n"
    "  for (x = 0; x < n; x += 8) _mm256_storeu_ps(d + x, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + x))));\n"
    "}\n"
    "#else\n"
    "/* half -> float32, exact (NaN quiet, as VCVTPH2PS) */\n"
    "static float onnxc_f32h(unsigned short h) {\n"
    "  union { unsigned int u; float f; } v;\n"
    "  unsigned int sign = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "  if (e == 0x1fu) {\n"
    "    v.u = sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u);\n"
    "  } else if (e) {\n"
    "    v.u = sign | ((e + 112u) << 23) | (m << 13);\n"
    "  } else if (m) {\n"
    "    e = 113u;\n"
    "    while (!(m & 0x400u)) {\n"
    "      m <<= 1;\n"
    "      e--;\n"
    "    }\n"
    "    v.u = sign | (e << 23) | ((m & 0x3ffu) << 13);\n"
    "  } else {\n"
    "    v.u = sign;\n"
    "  }\n"
    "  return v.f;\n"
    "}\n"
    "static void onnxc_h2f(float *d, const unsigned short *s, int n) {\n"
    "  int x;\n"
    "  for (x = 0; x < n; x++) d[x] = onnxc_f32h(s[x]);\n"
    "}\n"
    "#endif\n"
    "/* each k's 32 values of B and 16 of A widened once, then 512\n"
    " * multiply-adds in float32 */\n"
    "static void onnxc_hkr(int amx, long kcp, const unsigned short *a, const unsigned short *b, float *c,\n"
    "                      long ldc, int acc) {\n"
    "  float t[16][32], bf[32], af[16];\n"
    "  long i, j, k;\n"
    "  (void)amx;\n"
    "  for (i = 0; i < 16; i++)\n"
    "    for (j = 0; j < 32; j++) t[i][j] = acc ? c[i * ldc + j] : 0.0f;\n"
    "  for (k = 0; k < kcp; k++) {\n"
    "    onnxc_h2f(bf, b + k * 32, 32);\n"
    "    onnxc_h2f(af, a + k * 16, 16);\n"
    "    for (i = 0; i < 16; i++)\n"
    "      for (j = 0; j < 32; j++) t[i][j] += af[i] * bf[j];\n"
    "  }\n"
    "  for (i = 0; i < 16; i++)\n"
    "    for (j = 0; j < 32; j++) c[i * ldc + j] = t[i][j];\n"
    "}\n"
    "#endif\n"
    "/* 32 x 32: rows 16-31 from the next panel, at a + a2 */\n"
    "static void onnxc_hkr2(int amx, long kcp, const unsigned short *a, long a2, const unsigned short *b,\n"
    "                       float *c, long ldc, int acc) {\n"
    "  onnxc_hkr(amx, kcp, a, b, c, ldc, acc);\n"
    "  onnxc_hkr(amx, kcp, a + a2, b, c + 16 * ldc, ldc, acc);\n"
    "}\n\n",
    NULL};

void gemm_write_prelude_lp(Buf *out, int which) {
  for (int i = 0; (which & 1) && prelude[i]; i++)
    buf_puts(out, prelude[i]);
  for (int i = 0; (which & 2) && prelude_h[i]; i++)
    buf_puts(out, prelude_h[i]);
}
