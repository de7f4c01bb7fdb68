/* emit_gemm.c - packed, register-blocked float32 GEMM for Conv, Gemm and MatMul.
 *
 * Goto/BLIS blocking with every extent baked in: jc over N by GEMM_NC, pc
 * over K by GEMM_KC (the right operand's KC x NC block is packed into
 * scratch, or was packed at compile time when it is a weight), ic over M by
 * GEMM_MC (the left block likewise), then MR x NR register tiles computed by
 * one micro-kernel per model (gemm_prelude). The kernel is chosen by the C
 * compiler's predefined macros: AVX-512F (8 x 32, 16 zmm accumulators),
 * AVX2 + FMA (6 x 16, 12 ymm), else portable C (4 x 16), so firmware builds
 * take the portable path and stay -std=c99 -pedantic clean. Accumulators are
 * named variables: gcc keeps an accumulator array in memory.
 * Convolution is an implicit GEMM: Y[M, OH*OW] = W[M, C*KH*KW] x cols, whose
 * columns are gathered straight from a zero-padded copy of the image through
 * a table of each output pixel's input offset (no bounds checks); a 1x1,
 * stride-1, unpadded conv is a plain product with the image. A per-row or
 * per-column bias and a fused Relu/Clip are applied by the kernel in
 * registers before its one store; other epilogues (Gemm's alpha, beta, a
 * full C, LeakyRelu) run over each finished tile while it is in L1. Edge
 * tiles go through a small stack buffer.
 */
#include "gemm.h"

#include <math.h>
#include <string.h>

#define LL(x) ((long long)(x))

/* ---- the plan of one product ---------------------------------------------------- */

typedef enum Src {
  SRC_PACKED, /* a weight packed at compile time (gemm.h layouts) */
  SRC_ROWS,   /* row-major: element (r, k) of A or (k, c) of B at ptr[r*ld + k] / ptr[k*ld + c] */
  SRC_TRANS,  /* transposed: A(r, k) at ptr[k*ld + r], B(k, c) at ptr[c*ld + k] */
  SRC_IM2COL, /* B of a conv: xp[koff(k) + pix[c]] */
} Src;

typedef struct Operand {
  Src src;
  const char *ptr;
  int64_t ld;
} Operand;

/* Window of a 2-D conv, with the padded image's extents. */
typedef struct Window {
  int64_t c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, oh, ow;
  int64_t groups; /* a grouped conv: one product per group (channels c / groups in) */
  bool padded;
} Window;

typedef struct Prod {
  int64_t m, n, k;
  Operand a, b;
  const char *y;
  int64_t ldy;
  Buf epi;             /* stored value from v (float), i, j; empty: v */
  bool fast_epi;       /* the kernel applies all of epi itself on full tiles, from: */
  const char *rb, *cb; /* per-row / per-column bias at the tile, or a null pointer */
  const char *res;     /* residual with y's layout (its matrix base), or NULL */
  int act;             /* 0 none, 1 Relu, 2 Clip(lo, hi); -1 another activation */
  char lo[64], hi[64];
  int64_t off_b, off_a, off_pix, off_img; /* scratch offsets, -1 when unused */
  int64_t bytes;       /* scratch needed */
  bool par;            /* runs on every thread (--threads): items of GEMM_MC x GEMM_NCW */
  int64_t slot;        /* then: bytes of one thread's packing buffers (at off_b / off_a) */
  bool trans;          /* a small-map conv computed transposed (emit_conv_small) */
  int64_t off_ct;      /* then: its Y^T in scratch */
} Prod;

static int64_t up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Columns of one parallel item (as passes/memplan_scratch.c). */
static int64_t par_ncw(int64_t m, int64_t n) {
  return (m + GEMM_MC - 1) / GEMM_MC * ((n + 511) / 512) >= 4 * ec_threads() ? 512 : 128;
}

static bool prepacked(const Value *v) {
  return v->kind == VK_CONST && v->n_uses == 1 && !v->is_output;
}

/* Lays out the scratch of the product (mirrors passes/memplan_scratch.c). */
static void layout(Prod *p, const Window *win) {
  int64_t kc = min64(p->k, GEMM_KC), off = 0;
  p->off_b = p->off_a = p->off_pix = p->off_img = -1;
  p->par = ec_threads() > 1 && p->m * p->n * p->k >= GEMM_PAR_MACS;
  p->slot = 0;
  if (p->par) { /* one thread's buffers, then the next thread's */
    if (p->b.src != SRC_PACKED) {
      p->off_b = off;
      off += up(kc * up(min64(p->n, par_ncw(p->m, p->n)), GEMM_NRP) * 4, 64);
    }
    if (p->a.src != SRC_PACKED) {
      p->off_a = off;
      off += up(up(min64(p->m, GEMM_MC), GEMM_MRP) * kc * 4, 64);
    }
    p->slot = off;
    off *= ec_threads();
  } else if (p->b.src != SRC_PACKED) {
    p->off_b = off;
    off += up(kc * up(min64(p->n, GEMM_NC), GEMM_NRP) * 4, 64);
  }
  if (p->a.src != SRC_PACKED && !p->par) {
    p->off_a = off;
    off += up(up(min64(p->m, GEMM_MC), GEMM_MRP) * kc * 4, 64);
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

static bool scratch_ok(const EmitC *e, const Node *n, const Prod *p) {
  int64_t have = e->plan && e->plan->scratch_size ? e->plan->scratch_size[n->id] : 0;
  return p->m > 0 && p->n > 0 && p->k > 0 && have >= p->bytes && p->bytes > 0;
}

void gemm_act_expr(const Node *n, const char *v, Buf *out) {
  const char *act = ir_attr_str(n, "activation", "");
  char lo[64], hi[64];
  if (strcmp(act, "Relu") == 0) {
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
}

/* ---- emission ------------------------------------------------------------------- */

/* Packs B[pc.., jc..] (kc x nc) into 32-column panels at bb. */
static void emit_pack_b(EmitC *e, const Prod *p, const Window *win) {
  const Operand *b = &p->b;
  ec_line(e, "for (long q = 0; q < nc; q += 32) {");
  ec_line(e, "const long w = nc - q < 32 ? nc - q : 32;");
  ec_line(e, "float *d = bb + q * kc;");
  if (b->src == SRC_ROWS) {
    ec_line(e, "const float *s = %s + pc * %lld + jc + q;", b->ptr, LL(b->ld));
    ec_line(e, "for (long kk = 0; kk < kc; kk++) {");
    ec_line(e, "long x = 0;");
    ec_line(e, "if (w == 32) {");
    ec_line(e, "for (x = 0; x < 32; x++) d[kk * 32 + x] = s[kk * %lld + x];", LL(b->ld));
    ec_line(e, "} else {");
    ec_line(e, "for (x = 0; x < w; x++) d[kk * 32 + x] = s[kk * %lld + x];", LL(b->ld));
    ec_line(e, "for (; x < 32; x++) d[kk * 32 + x] = 0;");
    ec_line(e, "}");
    ec_line(e, "}");
  } else if (b->src == SRC_TRANS) {
    ec_line(e, "for (long x = 0; x < 32; x++) {");
    ec_line(e, "if (x < w) {");
    ec_line(e, "const float *s = %s + (jc + q + x) * %lld + pc;", b->ptr, LL(b->ld));
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

/* Packs A[ic.., pc..] (mc x kc) into panels of ONNXC_MR rows at ab. */
static void emit_pack_a(EmitC *e, const Prod *p) {
  const Operand *a = &p->a;
  /* panels of ONNXC_MR rows (the micro-kernel's), k-major; rows past mc are 0 */
  ec_line(e, "for (long r0 = 0; r0 < mc; r0 += ONNXC_MR) {");
  ec_line(e, "float *d = ab + r0 * kc;");
  if (a->src == SRC_ROWS) {
    ec_line(e, "for (long r = 0; r < ONNXC_MR; r++) {");
    ec_line(e, "if (r0 + r < mc) {");
    ec_line(e, "const float *s = %s + (ic + r0 + r) * %lld + pc;", a->ptr, LL(a->ld));
    ec_line(e, "for (long kk = 0; kk < kc; kk++) d[kk * ONNXC_MR + r] = s[kk];");
    ec_line(e, "} else {");
    ec_line(e, "for (long kk = 0; kk < kc; kk++) d[kk * ONNXC_MR + r] = 0;");
    ec_line(e, "}");
    ec_line(e, "}");
  } else {
    ec_line(e, "const long h = mc - r0 < ONNXC_MR ? mc - r0 : ONNXC_MR;");
    ec_line(e, "for (long kk = 0; kk < kc; kk++) {");
    ec_line(e, "const float *s = %s + (pc + kk) * %lld + ic + r0;", a->ptr, LL(a->ld));
    ec_line(e, "long r = 0;");
    ec_line(e, "for (; r < h; r++) d[kk * ONNXC_MR + r] = s[r];");
    ec_line(e, "for (; r < ONNXC_MR; r++) d[kk * ONNXC_MR + r] = 0;");
    ec_line(e, "}");
  }
  ec_line(e, "}");
}

/* The MR x NR tiles of one packed block (expects jc, nc, pc, kc, ic, mc and
 * bb/ab as the operands need). */
static void emit_tiles(EmitC *e, const Prod *p) {
  int64_t K = p->k;
  ec_line(e, "for (long jr = 0; jr < nc; jr += ONNXC_NR) {");
  if (p->b.src == SRC_PACKED)
    ec_line(e, "const float *b = %s + (jc + jr - jr %% 32) * %lld + pc * 32 + jr %% 32;", p->b.ptr,
            LL(K));
  else
    ec_line(e, "const float *b = bb + (jr - jr %% 32) * kc + jr %% 32;");
  ec_line(e, "const long cols = nc - jr < ONNXC_NR ? nc - jr : ONNXC_NR;");
  ec_line(e, "for (long ir = 0; ir < mc; ir += ONNXC_MR) {");
  ec_line(e, "const long as = %s;", p->a.src == SRC_PACKED ? "24" : "ONNXC_MR");
  if (p->a.src == SRC_PACKED)
    ec_line(e, "const float *a = %s + (ic + ir - ir %% 24) * %lld + pc * 24 + ir %% 24;", p->a.ptr,
            LL(K));
  else
    ec_line(e, "const float *a = ab + ir * kc;"); /* panels of ONNXC_MR rows */
  ec_line(e, "const long rows = mc - ir < ONNXC_MR ? mc - ir : ONNXC_MR;");
  ec_line(e, "float *c = %s + (ic + ir) * %lld + jc + jr;", p->y, LL(p->ldy));
  ec_line(e, "const int full = rows == ONNXC_MR && cols == ONNXC_NR;");
  ec_line(e, "const int last = pc + kc == %lld;", LL(K));
  ec_line(e, "(void)last;");
  ec_line(e, "if (full) {");
  if (p->fast_epi && p->res)
    ec_line(e, "onnxc_ukr(kc, a, as, b, c, %lld, pc > 0, last ? %s + (ic + ir) * %lld + jc + jr : "
               "(const float *)0, last ? %s : (const float *)0, last ? %s : (const float *)0, "
               "last ? %d : 0, %s, %s);", LL(p->ldy), p->res, LL(p->ldy), p->rb, p->cb, p->act,
            p->lo, p->hi);
  else if (p->fast_epi)
    ec_line(e, "onnxc_ukr(kc, a, as, b, c, %lld, pc > 0, (const float *)0, last ? %s : (const float *)0, "
               "last ? %s : (const float *)0, last ? %d : 0, "
               "%s, %s);", LL(p->ldy), p->rb, p->cb, p->act, p->lo, p->hi);
  else
    ec_line(e, "onnxc_ukr(kc, a, as, b, c, %lld, pc > 0, (const float *)0, (const float *)0, "
            "(const float *)0, 0, 0.0f, 0.0f);", LL(p->ldy));
  ec_line(e, "} else {");
  ec_line(e, "float t[ONNXC_MR * ONNXC_NR] = {0};");
  ec_line(e, "long r, x;");
  ec_line(e, "if (pc > 0)");
  ec_line(e, "  for (r = 0; r < rows; r++)");
  ec_line(e, "    for (x = 0; x < cols; x++) t[r * ONNXC_NR + x] = c[r * %lld + x];", LL(p->ldy));
  ec_line(e, "onnxc_ukr(kc, a, as, b, t, ONNXC_NR, pc > 0, (const float *)0, (const float *)0, "
             "(const float *)0, 0, "
             "0.0f, 0.0f);");
  ec_line(e, "for (r = 0; r < rows; r++)");
  ec_line(e, "  for (x = 0; x < cols; x++) c[r * %lld + x] = t[r * ONNXC_NR + x];", LL(p->ldy));
  ec_line(e, "}");
  if (p->epi.len) {
    ec_line(e, "if (last%s) {", p->fast_epi ? " && !full" : "");
    ec_line(e, "for (long r = 0; r < rows; r++) {");
    ec_line(e, "const long i = ic + ir + r;");
    ec_line(e, "float *cr = c + r * %lld;", LL(p->ldy));
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
  ec_line(e, "}"); /* ir */
  ec_line(e, "}"); /* jr */
}

/* The blocked product; expects bb/ab/pix/xp declared as the operands need. */
static void emit_core(EmitC *e, const Prod *p, const Window *win) {
  int64_t M = p->m, N = p->n, K = p->k;
  /* a B packed at compile time needs no column blocks: all of N at once, so
   * that each block of A is packed once (not once per column block) */
  int64_t NC = p->b.src == SRC_PACKED ? up(N, GEMM_NRP) : GEMM_NC;
  ec_line(e, "for (long jc = 0; jc < %lld; jc += %lld) {", LL(N), LL(NC));
  ec_line(e, "const long nc = %lld - jc < %lld ? %lld - jc : %lld;", LL(N), LL(NC), LL(N), LL(NC));
  ec_line(e, "for (long pc = 0; pc < %lld; pc += %d) {", LL(K), GEMM_KC);
  ec_line(e, "const long kc = %lld - pc < %d ? %lld - pc : %d;", LL(K), GEMM_KC, LL(K), GEMM_KC);
  if (p->b.src != SRC_PACKED)
    emit_pack_b(e, p, win);
  ec_line(e, "for (long ic = 0; ic < %lld; ic += %d) {", LL(M), GEMM_MC);
  ec_line(e, "const long mc = %lld - ic < %d ? %lld - ic : %d;", LL(M), GEMM_MC, LL(M), GEMM_MC);
  if (p->a.src != SRC_PACKED)
    emit_pack_a(e, p);
  emit_tiles(e, p);
  ec_line(e, "}"); /* ic */
  ec_line(e, "}"); /* pc */
  ec_line(e, "}"); /* jc */
}

/* The product on every thread (p->par): `batch` x (row blocks of GEMM_MC,
 * or all rows when A is packed and there are columns enough, x column
 * blocks of par_ncw) items, claimed one at a time (onnxc_claim: the pool's
 * counter, so a thread that starts late or is preempted takes fewer), each
 * packed by its thread into that thread's buffers; no barriers. `setup` (or
 * NULL) declares pa/pb/py of matrix bi. `shared`: the function runs on every
 * thread (else on one, in the same layout). */
static void emit_core_par(EmitC *e, const Prod *p, const Window *win, int64_t batch,
                          const char *const *setup, bool shared, int64_t nsetup,
                          void (*setup_item)(EmitC *, const Prod *, const Window *, int64_t)) {
  int64_t M = p->m, N = p->n, K = p->k, ncw = par_ncw(M, N);
  int64_t nib = (M + GEMM_MC - 1) / GEMM_MC, njb = (N + ncw - 1) / ncw;
  bool all_rows = p->a.src == SRC_PACKED && njb >= 4 * ec_threads();
  if (all_rows)
    nib = 1;
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
  if (shared && nsetup > 0) { /* the first nsetup items build what the others read */
    ec_line(e, "if (it < %lld) {", LL(nsetup));
    setup_item(e, p, win, nsetup);
    ec_line(e, "onnxc_ready_set(onnxc_nt);");
    ec_line(e, "continue;");
    ec_line(e, "}");
    ec_line(e, "it -= %lld;", LL(nsetup));
    ec_line(e, "onnxc_ready_wait(onnxc_nt, %lld);", LL(nsetup));
  }
  for (int i = 0; setup && setup[i]; i++)
    ec_line(e, "%s", setup[i]);
  if (all_rows)
    ec_line(e, "const long jc = it %% %lld * %lld;", LL(njb), LL(ncw));
  else
    ec_line(e, "const long ic = it %% %lld / %lld * %d, jc = it %% %lld * %lld;", LL(nib * njb),
            LL(njb), GEMM_MC, LL(njb), LL(ncw));
  ec_line(e, "const long nc = %lld - jc < %lld ? %lld - jc : %lld;", LL(N), LL(ncw), LL(N), LL(ncw));
  ec_line(e, "for (long pc = 0; pc < %lld; pc += %d) {", LL(K), GEMM_KC);
  ec_line(e, "const long kc = %lld - pc < %d ? %lld - pc : %d;", LL(K), GEMM_KC, LL(K), GEMM_KC);
  if (p->b.src != SRC_PACKED)
    emit_pack_b(e, p, win);
  if (all_rows)
    ec_line(e, "for (long ic = 0; ic < %lld; ic += %d) {", LL(M), GEMM_MC);
  ec_line(e, "const long mc = %lld - ic < %d ? %lld - ic : %d;", LL(M), GEMM_MC, LL(M), GEMM_MC);
  if (p->a.src != SRC_PACKED)
    emit_pack_a(e, p);
  emit_tiles(e, p);
  if (all_rows)
    ec_line(e, "}"); /* ic */
  ec_line(e, "}"); /* pc */
  ec_line(e, "}"); /* items */
}

static void declare_scratch(EmitC *e, const Prod *p) {
  if (p->off_b >= 0)
    ec_line(e, "float *bb = (float *)(S + %lld);", LL(p->off_b));
  if (p->off_a >= 0)
    ec_line(e, "float *ab = (float *)(S + %lld);", LL(p->off_a));
}

/* Epilogue text: `base` (the value before activation) wrapped in the activation;
 * rb / cb: the bias the kernel adds itself on full tiles ("0": none), or NULL
 * when base is more than v plus such a bias (then the generic loop does all). */
static void set_epilogue(Prod *p, const Node *n, const char *base, const char *rb, const char *cb) {
  const char *act = ir_attr_str(n, "activation", "");
  p->act = strcmp(act, "Relu") == 0 ? 1 : strcmp(act, "Clip") == 0 ? 2 : act[0] ? -1 : 0;
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
  if (!act[0] && strcmp(base, "v") == 0)
    return;
  gemm_act_expr(n, base, &p->epi);
}

/* ---- Conv ------------------------------------------------------------------------ */

static bool conv_window(const Node *n, Window *w) {
  const Shape *x = &n->in[0]->shape, *ws = &n->in[1]->shape, *y = &n->out[0]->shape;
  int64_t g = ir_attr_int(n, "group", 1);
  /* grouped (not depthwise: emit_conv.c has its own path) when each group has
   * 8 output channels or more and 2 input channels or more (as memplan_scratch.c) */
  if (x->rank != 4 || g < 1 || (g != 1 && (ws->d[1] < 2 || ws->d[0] / g < 8)))
    return false;
  memset(w, 0, sizeof *w);
  w->groups = g;
  w->c = x->d[1];
  w->h = x->d[2];
  w->w = x->d[3];
  w->kh = ws->d[2];
  w->kw = ws->d[3];
  w->oh = y->d[2];
  w->ow = y->d[3];
  int ns, nd, np;
  const int64_t *s = ir_attr_ints(n, "strides", &ns), *dl = ir_attr_ints(n, "dilations", &nd);
  const int64_t *pads = ir_attr_ints(n, "pads", &np);
  w->sh = s && ns == 2 ? s[0] : 1;
  w->sw = s && ns == 2 ? s[1] : 1;
  w->dh = dl && nd == 2 ? dl[0] : 1;
  w->dw = dl && nd == 2 ? dl[1] : 1;
  const char *ap = ir_attr_str(n, "auto_pad", "NOTSET");
  int64_t in[2] = {w->h, w->w}, out[2] = {w->oh, w->ow}, k[2] = {w->kh, w->kw};
  int64_t st[2] = {w->sh, w->sw}, di[2] = {w->dh, w->dw}, pb[2] = {0, 0}, pe[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    if (strncmp(ap, "SAME", 4) == 0) {
      int64_t total = (out[i] - 1) * st[i] + (k[i] - 1) * di[i] + 1 - in[i];
      if (total < 0)
        total = 0;
      pb[i] = strcmp(ap, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    } else if (strcmp(ap, "VALID") != 0 && pads && np == 4) {
      pb[i] = pads[i];
      pe[i] = pads[2 + i];
    }
    if (pb[i] < 0 || pe[i] < 0)
      return false;
  }
  w->pt = pb[0];
  w->pl = pb[1];
  w->pb = pe[0];
  w->pr = pe[1];
  w->padded = w->pt || w->pl || w->pb || w->pr;
  return true;
}

static bool is_f32(const Node *n) {
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i) && n->in[i]->dt != DT_F32)
      return false;
  return n->out[0]->dt == DT_F32;
}

/* A conv whose output maps are small (7x7, 14x14: N = OH*OW <= 256 pixels,
 * not a multiple of the 32-column panel) computes Y^T[N x M] instead, its
 * rows the pixels (MR granular) and its columns the M output channels (M a
 * multiple of 32), so no tile is partial; one image, weights packed at
 * compile time as the right operand. */
static bool conv_small(const Node *n, int64_t m, int64_t npix) {
  return ir_attr_int(n, "group", 1) == 1 && n->in[0]->shape.d[0] == 1 && npix <= 256 && npix % GEMM_NRP != 0 && m % GEMM_NRP == 0 &&
         prepacked(n->in[1]);
}

/* Product plan of a Conv; false when the fast path does not apply. */
static bool conv_prod(const Node *n, Prod *p, Window *w) {
  if (!is_f32(n) || !shape_is_static(&n->in[0]->shape) || !shape_is_static(&n->in[1]->shape) ||
      !shape_is_static(&n->out[0]->shape) || !conv_window(n, w))
    return false;
  const Shape *ws = &n->in[1]->shape;
  memset(p, 0, sizeof *p);
  p->m = ws->d[0];
  p->k = ws->d[1] * ws->d[2] * ws->d[3];
  p->n = w->oh * w->ow;
  if (conv_small(n, p->m, p->n)) { /* Y^T = cols^T x W^T (mirrored in memplan_scratch.c) */
    int64_t rows = up(p->n, GEMM_MRP);
    p->trans = true;
    p->n = p->m;
    p->m = w->oh * w->ow;
    p->a.src = SRC_IM2COL;
    p->b.src = SRC_PACKED;
    p->b.ptr = "X1";
    p->off_a = 0;
    p->off_ct = up(rows * p->k * 4, 64);
    p->off_b = p->off_pix = p->off_img = -1;
    p->bytes = p->off_ct + up(rows * (p->n + 16) * 4, 64);
    if (w->padded) {
      p->off_img = p->bytes;
      p->bytes += up((w->c * (w->h + w->pt + w->pb) * (w->w + w->pl + w->pr) + 16) * 4, 64);
    }
    p->par = ec_threads() > 1 && p->m * p->n * p->k >= GEMM_PAR_MACS;
    return true;
  }
  /* the product of one group: wg, xg, yg (and bg) are that group's */
  p->m = ws->d[0] / w->groups;
  p->a.src = prepacked(n->in[1]) ? SRC_PACKED : SRC_ROWS;
  p->a.ptr = "wg";
  p->a.ld = p->k;
  bool plain = w->kh == 1 && w->kw == 1 && w->sh == 1 && w->sw == 1 && !w->padded;
  p->b.src = plain ? SRC_ROWS : SRC_IM2COL;
  p->b.ptr = "xg";
  p->b.ld = p->n;
  p->y = "yg";
  p->ldy = p->n;
  layout(p, w);
  return true;
}

/* Items per matrix of emit_core_par (all rows at once when A is packed and
 * there are columns enough). */
static int64_t par_per(const Prod *p) {
  int64_t ncw = par_ncw(p->m, p->n), nib = (p->m + GEMM_MC - 1) / GEMM_MC, njb = (p->n + ncw - 1) / ncw;
  return (p->a.src == SRC_PACKED && njb >= 4 * ec_threads() ? 1 : nib) * njb;
}

/* Marks the node's function as running on every thread (true), unless the
 * thread count is 1. */
static bool want_par(EmitC *e) {
  if (ec_threads() <= 1)
    return false;
  ec_set_parallel(e);
  return true;
}

/* Items of a shared conv's set-up: the pixel table (item 0) and the padded
 * image, a share of the channels per item, each plane written once (borders
 * zeroed, rows copied). */
#define CONV_SETUP_ITEMS 8

static void conv_setup_item(EmitC *e, const Prod *p, const Window *w, int64_t nsetup) {
  int64_t wp = w->w + w->pl + w->pr, hp = w->h + w->pt + w->pb;
  ec_line(e, "if (it == 0) {");
  ec_line(e, "int *px = (int *)(S + %lld);", LL(p->off_pix));
  ec_line(e, "for (long q = 0; q < %lld; q++)", LL(up(p->n, GEMM_NRP)));
  ec_line(e, "  px[q] = q < %lld ? (int)(q / %lld * %lld + q %% %lld * %lld) : 0;", LL(p->n),
          LL(w->ow), LL(w->sh * wp), LL(w->ow), LL(w->sw));
  ec_line(e, "}");
  if (!w->padded)
    return;
  ec_line(e, "float *xw = (float *)(S + %lld);", LL(p->off_img));
  ec_line(e, "if (it == %lld)", LL(nsetup - 1));
  ec_line(e, "  for (long q = 0; q < 16; q++) xw[%lld + q] = 0;", LL(w->c * hp * wp));
  ec_line(e, "for (long ch = it * %lld / %lld; ch < (it + 1) * %lld / %lld; ch++) {", LL(w->c),
          LL(nsetup), LL(w->c), LL(nsetup));
  ec_line(e, "float *d = xw + ch * %lld;", LL(hp * wp));
  ec_line(e, "const float *s = X0 + ch * %lld;", LL(w->h * w->w));
  if (w->pt)
    ec_line(e, "for (long q = 0; q < %lld; q++) d[q] = 0;", LL(w->pt * wp));
  ec_line(e, "for (long r = 0; r < %lld; r++) {", LL(w->h));
  ec_line(e, "float *dr = d + (r + %lld) * %lld;", LL(w->pt), LL(wp));
  if (w->pl)
    ec_line(e, "for (long x = 0; x < %lld; x++) dr[x] = 0;", LL(w->pl));
  ec_line(e, "for (long x = 0; x < %lld; x++) dr[%lld + x] = s[r * %lld + x];", LL(w->w), LL(w->pl),
          LL(w->w));
  if (w->pr)
    ec_line(e, "for (long x = 0; x < %lld; x++) dr[%lld + x] = 0;", LL(w->pr), LL(w->pl + w->w));
  ec_line(e, "}");
  if (w->pb)
    ec_line(e, "for (long q = 0; q < %lld; q++) d[%lld + q] = 0;", LL(w->pb * wp),
            LL((w->pt + w->h) * wp));
  ec_line(e, "}");
}

/* The small-map conv (conv_small): items 0..NS-1 pack cols^T (all N rows,
 * padded to a 24-row panel, zeros outside the image) for a share of the input
 * channels each; then each item takes a block of output channels: the
 * product into Y^T (scratch, ldc M) over all of K, then its channels' rows of
 * Y with the bias, residual and activation. */
static bool emit_conv_small(EmitC *e, const Node *n, const Prod *p, const Window *w) {
  /* Y^T's row stride: M + 16, as a power-of-two stride would put a column's
   * elements in one cache set */
  int64_t N = p->m, M = p->n, K = p->k, rows = up(N, GEMM_MRP), taps = w->kh * w->kw, ldt = M + 16;
  int64_t cb = M % 64 == 0 && M / 64 >= 4 * ec_threads() ? 64 : 32, nj = M / cb;
  int64_t ns = min64(w->c, 8);
  bool shared = p->par && want_par(e);
  ec_line(e, "/* small maps: Y^T[%lld x %lld] = cols^T[%lld x %lld] x W^T, packed weights; "
             "stored transposed */", LL(N), LL(M), LL(N), LL(K));
  ec_line(e, "float *ap = (float *)(S + %lld);", LL(p->off_a));
  ec_line(e, "float *ct = (float *)(S + %lld);", LL(p->off_ct));
  ec_line(e, "long own = 0, it;");
  ec_line(e, "(void)own;");
  if (shared)
    ec_line(e, "while ((it = onnxc_nt > 1 ? onnxc_claim() : own++) < %lld) {", LL(ns + nj));
  else
    ec_line(e, "while ((it = own++) < %lld) {", LL(ns + nj));
  ec_line(e, "if (it < %lld) {", LL(ns));
  ec_line(e, "const long c0 = it * %lld / %lld, c1 = (it + 1) * %lld / %lld;", LL(w->c), LL(ns),
          LL(w->c), LL(ns));
  int64_t wp = w->w + w->pl + w->pr, hp = w->h + w->pt + w->pb, sw = w->sw;
  if (w->padded) { /* the item's channels of the zero-padded image */
    ec_line(e, "float *xw = (float *)(S + %lld);", LL(p->off_img));
    ec_line(e, "if (it == %lld)", LL(ns - 1));
    ec_line(e, "  for (long q = 0; q < 16; q++) xw[%lld + q] = 0;", LL(w->c * hp * wp));
    ec_line(e, "for (long ch = c0; ch < c1; ch++) {");
    ec_line(e, "float *d = xw + ch * %lld;", LL(hp * wp));
    ec_line(e, "const float *s = X0 + ch * %lld;", LL(w->h * w->w));
    ec_line(e, "for (long q = 0; q < %lld; q++) d[q] = 0;", LL(hp * wp));
    ec_line(e, "for (long r = 0; r < %lld; r++)", LL(w->h));
    ec_line(e, "  for (long x = 0; x < %lld; x++) d[(r + %lld) * %lld + %lld + x] = s[r * %lld + x];",
            LL(w->w), LL(w->pt), LL(wp), LL(w->pl), LL(w->w));
    ec_line(e, "}");
    ec_line(e, "const float *xi = xw;");
  } else {
    ec_line(e, "const float *xi = X0;");
  }
  /* then its rows of cols^T, one 24-pixel panel at a time, as row runs */
  ec_line(e, "for (long q0 = 0; q0 < %lld; q0 += %d) {", LL(rows), GEMM_MRP);
  ec_line(e, "const long w = %lld - q0 < %d ? %lld - q0 : %d;", LL(N), GEMM_MRP, LL(N), GEMM_MRP);
  ec_line(e, "int px[%d], ro[%d], nr = 0;", GEMM_MRP, GEMM_MRP + 1);
  ec_line(e, "for (long x = 0; x < w; x++) {");
  ec_line(e, "px[x] = (int)((q0 + x) / %lld * %lld + (q0 + x) %% %lld * %lld);", LL(w->ow),
          LL(w->sh * wp), LL(w->ow), LL(sw));
  ec_line(e, "if (x == 0 || px[x] != px[x - 1] + %lld) ro[nr++] = (int)x;", LL(sw));
  ec_line(e, "}");
  ec_line(e, "ro[nr] = (int)w;");
  char step[32] = "";
  if (sw != 1)
    snprintf(step, sizeof step, " * %lld", LL(sw));
  ec_line(e, "for (long ch = c0; ch < c1; ch++) {");
  ec_line(e, "for (long t = 0; t < %lld; t++) {", LL(taps));
  ec_line(e, "const float *s = xi + ch * %lld + t / %lld * %lld + t %% %lld * %lld;", LL(hp * wp),
          LL(w->kw), LL(w->dh * wp), LL(w->kw), LL(w->dw));
  ec_line(e, "float *d = ap + q0 * %lld + (ch * %lld + t) * %d;", LL(K), LL(taps), GEMM_MRP);
  ec_line(e, "for (int r = 0; r < nr; r++) {");
  ec_line(e, "const float *sr = s + px[ro[r]];");
  ec_line(e, "float *dr = d + ro[r];");
  ec_line(e, "const long l = ro[r + 1] - ro[r];");
  ec_line(e, "for (long x = 0; x < l; x++) dr[x] = sr[x%s];", step);
  ec_line(e, "}");
  ec_line(e, "for (long x = w; x < %d; x++) d[x] = 0;", GEMM_MRP);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  if (shared)
    ec_line(e, "onnxc_ready_set(onnxc_nt);");
  ec_line(e, "continue;");
  ec_line(e, "}");
  if (shared)
    ec_line(e, "onnxc_ready_wait(onnxc_nt, %lld);", LL(ns));
  ec_line(e, "const long j0 = (it - %lld) * %lld;", LL(ns), LL(cb));
  ec_line(e, "for (long pc = 0; pc < %lld; pc += %d) {", LL(K), GEMM_KC);
  ec_line(e, "const long kc = %lld - pc < %d ? %lld - pc : %d;", LL(K), GEMM_KC, LL(K), GEMM_KC);
  ec_line(e, "for (long jr = j0; jr < j0 + %lld; jr += ONNXC_NR) {", LL(cb));
  ec_line(e, "const float *b = X1 + (jr - jr %% %d) * %lld + pc * %d + jr %% %d;", GEMM_NRP, LL(K),
          GEMM_NRP, GEMM_NRP);
  ec_line(e, "for (long ir = 0; ir < (%lld + ONNXC_MR - 1) / ONNXC_MR * ONNXC_MR; ir += ONNXC_MR) {",
          LL(N));
  ec_line(e, "onnxc_ukr(kc, ap + (ir - ir %% %d) * %lld + pc * %d + ir %% %d, %d, b, ct + ir * %lld + jr, "
             "%lld, pc > 0, (const float *)0, (const float *)0, (const float *)0, 0, 0.0f, 0.0f);",
          GEMM_MRP, LL(K), GEMM_MRP, GEMM_MRP, GEMM_MRP, LL(ldt), LL(ldt));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  Buf v;
  buf_init(&v);
  buf_printf(&v, "ct[q * %lld + ch]%s", LL(ldt), ir_has_input(n, 2) ? " + X2[ch]" : "");
  if (ir_has_input(n, 3))
    buf_printf(&v, " + X3[ch * %lld + q]", LL(N));
  Buf out;
  buf_init(&out);
  gemm_act_expr(n, "v", &out);
  ec_line(e, "for (long ch = j0; ch < j0 + %lld; ch++) {", LL(cb));
  ec_line(e, "for (long q = 0; q < %lld; q++) {", LL(N));
  ec_line(e, "const float v = %s;", v.s);
  ec_line(e, "Y0[ch * %lld + q] = %s;", LL(N), out.s);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  buf_free(&v);
  buf_free(&out);
  return true;
}

bool gemm_emit_conv(EmitC *e, const Node *n) {
  Prod p;
  Window w;
  if (!conv_prod(n, &p, &w) || !scratch_ok(e, n, &p))
    return false;
  if (p.trans)
    return emit_conv_small(e, n, &p, &w);
  /* a residual fused by passes/fuse_epilogue.c: input 3, rn at the image's */
  bool res = ir_has_input(n, 3), bias = ir_has_input(n, 2);
  char base[96], rterm[48] = "";
  if (res)
    snprintf(rterm, sizeof rterm, " + rn[i * %lld + j]", LL(p.ldy));
  snprintf(base, sizeof base, "v%s%s", bias ? " + bg[i]" : "", rterm);
  set_epilogue(&p, n, base, bias ? "bg + ic + ir" : "(const float *)0", "(const float *)0");
  p.res = res ? "rn" : NULL;
  int64_t batch = n->in[0]->shape.d[0], wp = w.w + w.pl + w.pr, hp = w.h + w.pt + w.pb;
  int64_t img = w.c * w.h * w.w, G = w.groups, cg = w.c / G, mg = p.m;
  /* a group's weights, input planes, output rows and bias */
  int64_t wstride = (p.a.src == SRC_PACKED ? up(mg, GEMM_MRP) : mg) * p.k;
  int64_t xstride = cg * (p.b.src == SRC_IM2COL && w.padded ? hp * wp : w.h * w.w);
  char g0[96], g1[96], g2[96], g3[96], label[48] = "";
  snprintf(g0, sizeof g0, "const float *wg = X1 + grp * %lld;", LL(wstride));
  snprintf(g1, sizeof g1, "const float *xg = %s + grp * %lld;",
           p.b.src == SRC_IM2COL ? "xp" : "xn", LL(xstride));
  snprintf(g2, sizeof g2, "float *yg = yn + grp * %lld;", LL(mg * p.n));
  if (bias)
    snprintf(g3, sizeof g3, "const float *bg = X2 + grp * %lld;", LL(mg));
  else
    snprintf(g3, sizeof g3, "(void)grp;");
  if (G > 1)
    snprintf(label, sizeof label, "%lld groups of ", LL(G));
  /* --threads: on every thread when there is one image (else on this thread,
   * in the same per-thread layout the plan sized) */
  bool shared = p.par && batch == 1 && want_par(e);
  ec_line(e, "/* implicit GEMM: %s[%lld x %lld] x [%lld x %lld], %s weights */", label, LL(p.m),
          LL(p.k), LL(p.k), LL(p.n), p.a.src == SRC_PACKED ? "packed" : "runtime-packed");
  if (p.par && !shared)
    ec_line(e, "const int onnxc_th = 0;");
  if (!p.par)
    declare_scratch(e, &p);
  if (shared) {
    /* the pixel table and the padded image are built by the task's first items */
    int64_t nsetup = p.b.src != SRC_IM2COL ? 0 : w.padded ? min64(w.c, CONV_SETUP_ITEMS) : 1;
    if (p.b.src == SRC_IM2COL) {
      ec_line(e, "const int *pix = (const int *)(S + %lld);", LL(p.off_pix));
      if (w.padded)
        ec_line(e, "const float *xp = (const float *)(S + %lld);", LL(p.off_img));
      else
        ec_line(e, "const float *xp = X0;");
    }
    ec_line(e, "const float *xn = X0;");
    ec_line(e, "float *yn = Y0;");
    ec_line(e, "(void)xn;");
    if (res)
      ec_line(e, "const float *rn = X3;");
    char gl[64];
    snprintf(gl, sizeof gl, "const long grp = it / %lld;", LL(par_per(&p)));
    const char *setup[] = {gl, g0, g1, g2, g3, NULL};
    emit_core_par(e, &p, &w, G, setup, true, nsetup, conv_setup_item);
    buf_free(&p.epi);
    return true;
  }
  if (p.b.src == SRC_IM2COL) {
    ec_line(e, "int *pix = (int *)(S + %lld);", LL(p.off_pix));
    ec_line(e, "for (long q = 0; q < %lld; q++)", LL(up(p.n, GEMM_NRP)));
    ec_line(e, "  pix[q] = q < %lld ? (int)(q / %lld * %lld + q %% %lld * %lld) : 0;", LL(p.n),
            LL(w.ow), LL(w.sh * wp), LL(w.ow), LL(w.sw));
    if (w.padded) {
      ec_line(e, "float *xp = (float *)(S + %lld);", LL(p.off_img));
      ec_line(e, "for (long q = 0; q < %lld; q++) xp[q] = 0;", LL(w.c * hp * wp + 16));
    }
  }
  ec_line(e, "for (long nb = 0; nb < %lld; nb++) {", LL(batch));
  ec_line(e, "const float *xn = X0 + nb * %lld;", LL(img));
  ec_line(e, "float *yn = Y0 + nb * %lld;", LL(G * p.m * p.n));
  if (res)
    ec_line(e, "const float *rn = X3 + nb * %lld;", LL(p.m * p.n));
  if (p.b.src == SRC_IM2COL) {
    if (w.padded) {
      ec_line(e, "for (long ch = 0; ch < %lld; ch++)", LL(w.c * w.h));
      ec_line(e, "  for (long x = 0; x < %lld; x++)", LL(w.w));
      ec_line(e, "    xp[(ch / %lld * %lld + ch %% %lld + %lld) * %lld + %lld + x] = xn[ch * %lld + x];",
              LL(w.h), LL(hp), LL(w.h), LL(w.pt), LL(wp), LL(w.pl), LL(w.w));
    } else {
      ec_line(e, "const float *xp = xn;");
    }
  }
  ec_line(e, "for (long grp = 0; grp < %lld; grp++) {", LL(G));
  ec_line(e, "%s", g0);
  ec_line(e, "%s", g1);
  ec_line(e, "%s", g2);
  ec_line(e, "%s", g3);
  if (p.par)
    emit_core_par(e, &p, &w, 1, NULL, false, 0, NULL);
  else
    emit_core(e, &p, &w);
  ec_line(e, "}");
  ec_line(e, "}");
  buf_free(&p.epi);
  return true;
}

/* ---- MatMul, Gemm ----------------------------------------------------------------- */

/* MatMul whose B is a 2-D weight packed at compile time: A's batch dims fold into M. */
static bool matmul_prod(const Node *n, Prod *p, int64_t *batch) {
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape;
  if (!is_f32(n) || as->rank < 1 || bs->rank < 2 || !shape_is_static(as) || !shape_is_static(bs) ||
      !shape_is_static(&n->out[0]->shape))
    return false;
  memset(p, 0, sizeof *p);
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
  if (bs->rank == 2 && prepacked(n->in[1])) {
    for (int i = 0; i + 2 < as->rank; i++)
      p->m *= as->d[i];
    p->b.src = SRC_PACKED;
    p->b.ptr = "X1";
  } else {
    const Shape *ys = &n->out[0]->shape;
    for (int i = 0; i < ys->rank - (as->rank >= 2) - 1; i++)
      *batch *= ys->d[i];
  }
  layout(p, NULL);
  return true;
}

bool gemm_emit_matmul(EmitC *e, const Node *n) {
  Prod p;
  int64_t batch;
  if (!matmul_prod(n, &p, &batch) || !scratch_ok(e, n, &p))
    return false;
  set_epilogue(&p, n, "v", "(const float *)0", "(const float *)0");
  if (!p.par)
    declare_scratch(e, &p);
  else if (!want_par(e))
    ec_line(e, "const int onnxc_th = 0;");
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape, *ys = &n->out[0]->shape;
  if (p.b.src == SRC_PACKED) {
    ec_line(e, "/* packed GEMM: [%lld x %lld] x packed [%lld x %lld] */", LL(p.m), LL(p.k), LL(p.k),
            LL(p.n));
    ec_line(e, "const float *pa = X0;");
    ec_line(e, "float *py = Y0;");
    if (p.par)
      emit_core_par(e, &p, NULL, 1, NULL, true, 0, NULL);
    else
      emit_core(e, &p, NULL);
  } else {
    int nb = ys->rank - (as->rank >= 2) - 1;
    Buf ao, bo;
    buf_init(&ao);
    buf_init(&bo);
    ec_batch_offset(as->d, as->rank >= 2 ? as->rank - 2 : 0, ys->d, nb, p.m * p.k, &ao);
    ec_batch_offset(bs->d, bs->rank - 2, ys->d, nb, p.k * p.n, &bo);
    ec_line(e, "/* packed GEMM: %lld x [%lld x %lld] x [%lld x %lld] */", LL(batch), LL(p.m), LL(p.k),
            LL(p.k), LL(p.n));
    if (p.par) {
      int64_t ncw = par_ncw(p.m, p.n);
      int64_t per = ((p.m + GEMM_MC - 1) / GEMM_MC) * ((p.n + ncw - 1) / ncw);
      char l0[64], l1[512], l2[512], l3[128];
      const char *setup[] = {l0, l1, l2, l3, NULL};
      snprintf(l0, sizeof l0, "const long bi = it / %lld;", LL(per));
      snprintf(l1, sizeof l1, "const float *pa = X0 + %s;", ao.s);
      snprintf(l2, sizeof l2, "const float *pb = X1 + %s;", bo.s);
      snprintf(l3, sizeof l3, "float *py = Y0 + bi * %lld;", LL(p.m * p.n));
      emit_core_par(e, &p, NULL, batch, setup, true, 0, NULL);
    } else {
      ec_line(e, "for (long bi = 0; bi < %lld; bi++) {", LL(batch));
      ec_line(e, "const float *pa = X0 + %s;", ao.s);
      ec_line(e, "const float *pb = X1 + %s;", bo.s);
      ec_line(e, "float *py = Y0 + bi * %lld;", LL(p.m * p.n));
      emit_core(e, &p, NULL);
      ec_line(e, "}");
    }
    buf_free(&ao);
    buf_free(&bo);
  }
  buf_free(&p.epi);
  return true;
}

static bool gemm_prod(const Node *n, Prod *p) {
  const Shape *as = &n->in[0]->shape, *ys = &n->out[0]->shape;
  if (!is_f32(n) || !shape_is_static(as) || !shape_is_static(&n->in[1]->shape) ||
      !shape_is_static(ys))
    return false;
  bool ta = ir_attr_int(n, "transA", 0) == 1, tb = ir_attr_int(n, "transB", 0) == 1;
  memset(p, 0, sizeof *p);
  p->m = ys->d[0];
  p->n = ys->d[1];
  p->k = as->d[ta ? 0 : 1];
  p->a.src = ta ? SRC_TRANS : SRC_ROWS;
  p->a.ptr = "X0";
  p->a.ld = ta ? p->m : p->k;
  p->b.src = prepacked(n->in[1]) ? SRC_PACKED : tb ? SRC_TRANS : SRC_ROWS;
  p->b.ptr = "X1";
  p->b.ld = tb ? p->k : p->n;
  p->y = "Y0";
  p->ldy = p->n;
  layout(p, NULL);
  return true;
}

bool gemm_emit_gemm(EmitC *e, const Node *n) {
  Prod p;
  if (!gemm_prod(n, &p) || !scratch_ok(e, n, &p))
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
  set_epilogue(&p, n, base.s, rb, cb);
  buf_free(&base);
  ec_line(e, "/* packed GEMM: [%lld x %lld] x %s[%lld x %lld] */", LL(p.m), LL(p.k),
          p.b.src == SRC_PACKED ? "packed " : "", LL(p.k), LL(p.n));
  if (p.par) {
    if (!want_par(e))
      ec_line(e, "const int onnxc_th = 0;");
    emit_core_par(e, &p, NULL, 1, NULL, true, 0, NULL);
  } else {
    declare_scratch(e, &p);
    emit_core(e, &p, NULL);
  }
  buf_free(&p.epi);
  return true;
}

/* ---- model-level: prelude and packed weights ------------------------------------- */

static bool node_fast(const Plan *plan, const Node *n, Prod *p) {
  Window w;
  int64_t batch;
  EmitC e;
  memset(&e, 0, sizeof e);
  e.plan = plan;
  bool ok = false;
  if (n->op == OP_Conv)
    ok = conv_prod(n, p, &w);
  else if (n->op == OP_MatMul)
    ok = matmul_prod(n, p, &batch);
  else if (n->op == OP_Gemm)
    ok = gemm_prod(n, p);
  return ok && scratch_ok(&e, n, p);
}

bool gemm_used(const Graph *g, const Plan *plan) {
  Prod p;
  for (const Node *n = g->first; n; n = n->next)
    if (!(plan->elided && plan->elided[n->id]) && node_fast(plan, n, &p))
      return true;
  return false;
}

const Tensor *gemm_weight_data(const Plan *plan, const Value *v, Arena *a) {
  if (!prepacked(v) || v->dt != DT_F32)
    return v->konst;
  const Node *n = v->uses[0];
  Prod p;
  if (!node_fast(plan, n, &p))
    return v->konst;
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
  } else if ((n->op == OP_MatMul || n->op == OP_Gemm || p.trans) && n->in[1] == v &&
             p.b.src == SRC_PACKED) {
    /* B panels: (j / 32) * 32K + k * 32 + j % 32 (a small-map conv: of W^T) */
    bool tb = (n->op == OP_Gemm && ir_attr_int(n, "transB", 0) == 1) || p.trans;
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

int64_t gemm_weight_numel(const Plan *plan, const Value *v) {
  Prod p;
  if (!prepacked(v) || v->dt != DT_F32 || !node_fast(plan, v->uses[0], &p))
    return 0;
  const Node *n = v->uses[0];
  if (n->op == OP_Conv && n->in[1] == v && p.a.src == SRC_PACKED)
    return ir_attr_int(n, "group", 1) * up(p.m, GEMM_MRP) * p.k;
  if ((n->op == OP_MatMul || n->op == OP_Gemm || p.trans) && n->in[1] == v && p.b.src == SRC_PACKED)
    return up(p.n, GEMM_NRP) * p.k;
  return 0;
}
