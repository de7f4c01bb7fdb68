/* emit_gemm_conv.c - convolutions on the packed GEMM of emit_gemm.c.
 *
 * A float32 2-D conv is an implicit GEMM: Y[M, OH*OW] = W[M, C*KH*KW] x cols,
 * whose columns are gathered while packing from a zero-padded copy of the
 * image through a table of each output pixel's input offset; a 1x1, stride-1,
 * unpadded conv is a plain product with the image. Grouped convs run one
 * product per group. Small output maps are computed transposed
 * (emit_conv_small). The scratch each form needs comes from gk_conv_prod,
 * which the emitter and the planner's question (gemm_scratch_bytes) share.
 */
#include "gemm_internal.h"

/* ---- Conv ------------------------------------------------------------------------ */

/* The window of a 2-D conv, or of a 1-D one as a 2-D conv of one row
 * ([N, C, L] is [N, C, 1, L]: the same bytes), so audio and sequence models'
 * convs take the same products. */
static bool conv_window(const Node *n, Window *w) {
  const Shape *x = &n->in[0]->shape, *ws = &n->in[1]->shape, *y = &n->out[0]->shape;
  int64_t g = ir_attr_int(n, "group", 1);
  /* grouped (not depthwise: emit_conv.c has its own path) when each group has
   * 8 output channels or more and 2 input channels or more */
  if ((x->rank != 4 && x->rank != 3) || ws->rank != x->rank || y->rank != x->rank || g < 1 ||
      (g != 1 && (ws->d[1] < 2 || ws->d[0] / g < 8)))
    return false;
  int r = x->rank - 2, ns, nd;
  const int64_t *s = ir_attr_ints(n, "strides", &ns), *dl = ir_attr_ints(n, "dilations", &nd);
  int64_t in[2], out[2], k[2], st[2], di[2], pb[2], pe[2];
  for (int i = 0; i < r; i++) {
    in[i] = x->d[2 + i];
    out[i] = y->d[2 + i];
    k[i] = ws->d[2 + i];
    st[i] = s && ns == r ? s[i] : 1;
    di[i] = dl && nd == r ? dl[i] : 1;
  }
  ir_window_pads(n, r, in, out, k, st, di, pb, pe);
  for (int i = 0; i < r; i++)
    if (pb[i] < 0 || pe[i] < 0)
      return false;
  memset(w, 0, sizeof *w);
  w->groups = g;
  w->c = x->d[1];
  /* the row dim: the first spatial dim of a 2-D conv, a single row of a 1-D one */
  int h = r == 2 ? 0 : -1, c = r - 1;
  w->h = h < 0 ? 1 : in[h];
  w->kh = h < 0 ? 1 : k[h];
  w->oh = h < 0 ? 1 : out[h];
  w->sh = h < 0 ? 1 : st[h];
  w->dh = h < 0 ? 1 : di[h];
  w->pt = h < 0 ? 0 : pb[h];
  w->pb = h < 0 ? 0 : pe[h];
  w->w = in[c];
  w->kw = k[c];
  w->ow = out[c];
  w->sw = st[c];
  w->dw = di[c];
  w->pl = pb[c];
  w->pr = pe[c];
  w->padded = w->pt || w->pl || w->pb || w->pr;
  return true;
}

bool gk_is_f32(const Node *n) {
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
         gk_prepacked(n->in[1]);
}

/* A stride-1 conv with a window (not 1x1), one group, weights packed at
 * compile time: its product reads B(k, q) = xp[koff(k) + q] straight from the
 * zero-padded image, q running over output rows as wide as the padded image
 * (the columns past OW are computed and dropped), so nothing is packed and
 * no pixel table is needed. */
static bool conv_direct(const Node *n, const Window *w) {
  return w->groups == 1 && w->sh == 1 && w->sw == 1 && w->kh * w->kw > 1 && gk_prepacked(n->in[1]);
}

/* The direct conv computed transposed (emit_conv_direct_t): one group, weights
 * packed at compile time as W^T panels of 32 output channels (M a multiple of
 * 32, K = C * taps at least 128), a window (not 1x1); stride 1 (read from the
 * padded image), or stride 2 in both dims without dilation (read from the
 * padded image's four phase planes, so each tap is again a run at stride 1). */
static bool conv_direct_t(const Node *n, const Window *w, int64_t m) {
  /* a shallow product (K = C * taps below 128: an RGB stem's 27) stores as
   * much as it computes, which the transposed tile does element by element;
   * a 1x1 at stride 2 would copy all four phases to read one */
  if (w->groups != 1 || m % GEMM_NRP != 0 || !gk_prepacked(n->in[1]) || w->c * w->kh * w->kw < 128 ||
      w->kh * w->kw < 2)
    return false;
  if (w->sh == 1 && w->sw == 1)
    return true;
  return w->sh == 2 && w->sw == 2 && w->dh == 1 && w->dw == 1;
}

/* ---- -D ranges: the output map known at run time ---------------------------------- */

/* 1x1, stride 1, unpadded: the image is the product's right operand as it is. */
static bool conv_plain(const Node *n, int r) {
  const Shape *ws = &n->in[1]->shape;
  int ns, np;
  const int64_t *s = ir_attr_ints(n, "strides", &ns), *pads = ir_attr_ints(n, "pads", &np);
  for (int i = 0; i < r; i++)
    if (ws->d[2 + i] != 1 || (s && i < ns && s[i] != 1))
      return false;
  for (int i = 0; pads && i < np; i++)
    if (pads[i] != 0 && strcmp(ir_attr_str(n, "auto_pad", "NOTSET"), "NOTSET") == 0)
      return false;
  return true;
}

/* A 1-D or 2-D conv of one group whose output map is known at run time
 * (OCR-style widths, -D ranges): Y[M, NS] = W x cols with NS = OH * OW the
 * kernel's local, W packed at compile time as the left operand, the columns
 * gathered from the image as B is packed (SRC_IM2COL_RT), or the image
 * itself when the conv is plain; on one thread. */
static bool conv_prod_rt(const Node *n, Prod *p) {
  const Shape *xs = &n->in[0]->shape, *ws = &n->in[1]->shape, *ys = &n->out[0]->shape;
  int r = xs->rank - 2;
  if (r < 1 || r > 2 || ws->rank != xs->rank || !shape_is_static(ws) || ir_attr_int(n, "group", 1) != 1 ||
      !shape_is_bounded(xs) || !shape_is_bounded(ys) || !gk_prepacked(n->in[1]) || ir_has_input(n, 3))
    return false;
  const Graph *g = n->g;
  while (g->parent)
    g = g->parent;
  Arena *a = n->g->arena;
  const DimExpr *np = dx_const(a, 1);
  for (int i = 2; i < ys->rank; i++)
    np = dx_mul(a, np, shape_dx(a, ys, i));
  int64_t lo, hi;
  if (!np || !dx_bounds(g, np, &lo, &hi) || hi < 1)
    return false;
  memset(p, 0, sizeof *p);
  p->threads = 1;
  p->m = ws->d[0];
  p->k = ws->d[1];
  for (int i = 2; i < ws->rank; i++)
    p->k *= ws->d[i];
  p->n = hi;
  p->n_rt = "NS";
  p->a = (Operand){SRC_PACKED, "X1", p->k, NULL};
  /* plain: the image is B as it is; else its columns gathered while packing */
  p->b = conv_plain(n, r) ? (Operand){SRC_ROWS, "pb", hi, "NS"} : (Operand){SRC_IM2COL_RT, "xn", hi, NULL};
  p->y = "py";
  p->ldy = hi;
  p->ldy_rt = "NS";
  gk_layout(p, NULL);
  return gk_worth_packing(p);
}

bool gemm_emit_conv_rt(EmitC *e, const Node *n) {
  Prod p;
  if (!gk_is_f32(n) || !conv_prod_rt(n, &p) || !gk_scratch_ok(e, n, &p))
    return false;
  bool bias = ir_has_input(n, 2);
  gk_set_epilogue(&p, n, bias ? "v + X2[i]" : "v", bias ? "X2 + ic + ir" : "(const float *)0",
                  "(const float *)0");
  ec_line(e, "/* implicit GEMM: [%lld x %lld] packed x [%lld x OH*OW (at most %lld)] */", LL(p.m), LL(p.k),
          LL(p.k), LL(p.n));
  gk_declare_scratch(e, &p);
  ec_line(e, "const long NS = (long)(OH * OW);");
  ec_line(e, "for (long nb = 0; nb < N; nb++) {");
  ec_line(e, "const float *xn = X0 + nb * C * H * W;");
  if (p.b.src == SRC_ROWS)
    ec_line(e, "const float *pb = xn;");
  ec_line(e, "float *py = Y0 + nb * %lld * NS;", LL(p.m));
  gk_emit_core(e, &p, NULL);
  ec_line(e, "}");
  buf_free(&p.epi);
  buf_free(&p.epi_full);
  return true;
}

/* Product plan of a Conv; false when the fast path does not apply. */
bool gk_conv_prod(const Node *n, int threads, Prod *p, Window *w) {
  if (conv_gemv_form(n))
    return false;
  if (gk_is_f32(n) && (!shape_is_static(&n->in[0]->shape) || !shape_is_static(&n->out[0]->shape)))
    return conv_prod_rt(n, p);
  if (!gk_is_f32(n) || !shape_is_static(&n->in[0]->shape) || !shape_is_static(&n->in[1]->shape) ||
      !shape_is_static(&n->out[0]->shape) || !conv_window(n, w))
    return false;
  const Shape *ws = &n->in[1]->shape;
  memset(p, 0, sizeof *p);
  p->threads = threads;
  p->lp = gk_lp(n); /* bf16: the im2col product below, not the small-map or direct forms */
  p->m = ws->d[0];
  p->k = ws->d[1] * w->kh * w->kw;
  p->n = w->oh * w->ow;
  if (!p->lp && conv_small(n, p->m, p->n)) { /* Y^T = cols^T x W^T */
    int64_t rows = up(p->n, GEMM_MRP);
    p->trans = true;
    /* a 1x1 unpadded stride-1 conv's cols^T is the image read with row
     * stride N: only the last partial tile of rows is packed (MR <= 24 rows) */
    p->trans_x = w->kh == 1 && w->kw == 1 && w->sh == 1 && w->sw == 1 && !w->padded;
    int64_t arows = p->trans_x ? GEMM_MRP : rows;
    p->n = p->m;
    p->m = w->oh * w->ow;
    p->a.src = SRC_IM2COL;
    p->b.src = SRC_PACKED;
    p->b.ptr = "X1";
    p->off_a = 0;
    p->off_b = p->off_pix = p->off_img = -1;
    p->bytes = up(arows * p->k * 4, 64);
    if (w->padded) {
      p->off_img = p->bytes;
      p->bytes += up((w->c * (w->h + w->pt + w->pb) * (w->w + w->pl + w->pr) + 16) * 4, 64);
    }
    p->par = threads_worth(threads, ec_cost_ns((double)p->m * p->n * p->k, 0));
    return true;
  }
  if (!p->lp && conv_direct_t(n, w, p->m)) { /* transposed, from the padded image's phases */
    int64_t ph = w->sh, hq = (w->h + w->pt + w->pb + ph - 1) / ph, wq = (w->w + w->pl + w->pr + ph - 1) / ph;
    p->direct = p->dtr = true;
    p->n = p->m;
    p->m = w->oh * w->ow;
    p->a.src = SRC_IM2COL;
    p->b.src = SRC_PACKED;
    p->b.ptr = "X1";
    p->off_a = p->off_b = p->off_pix = -1;
    p->off_img = 0;
    p->bytes = up((w->c * ph * ph * hq * wq + 32) * 4, 64);
    p->par = threads_worth(threads, ec_cost_ns((double)p->m * p->n * p->k, 0));
    return true;
  }
  if (!p->lp && conv_direct(n, w)) { /* no packing: B read from the padded image */
    int64_t hp = w->h + w->pt + w->pb, wp = w->w + w->pl + w->pr;
    p->direct = true;
    p->a.src = SRC_PACKED;
    p->a.ptr = "X1";
    p->off_a = p->off_b = p->off_pix = -1;
    p->off_img = 0;
    p->bytes = up((w->c * hp * wp + 32) * 4, 64);
    p->par = threads_worth(threads, ec_cost_ns((double)p->m * p->n * p->k, 0));
    return true;
  }
  /* the product of one group: wg, xg, yg (and bg) are that group's */
  p->m = ws->d[0] / w->groups;
  p->a.src = gk_prepacked(n->in[1]) ? SRC_PACKED : SRC_ROWS;
  p->a.ptr = "wg";
  p->a.ld = p->k;
  bool plain = w->kh == 1 && w->kw == 1 && w->sh == 1 && w->sw == 1 && !w->padded;
  p->b.src = plain ? SRC_ROWS : SRC_IM2COL;
  p->b.ptr = "xg";
  p->b.ld = p->n;
  p->y = "yg";
  p->ldy = p->n;
  if (bk_conv_t(p, w, n->in[0]->shape.d[0]))
    return gk_worth_packing(p);
  gk_layout(p, w);
  return gk_worth_packing(p);
}

/* Marks the node's function as running on every thread (true), unless the
 * thread count is 1. */
bool gk_want_par(EmitC *e) {
  if (ec_threads(e) <= 1)
    return false;
  ec_set_parallel(e);
  return true;
}

/* Items of a shared conv's set-up: the pixel table (item 0) and the padded
 * image, a share of the channels per item, each plane written once (borders
 * zeroed, rows copied). */
#define CONV_SETUP_ITEMS 8

/* Set-up item `it` of ns: writes its share of the input channels (from src,
 * one image) as zero-padded planes at S + off (borders zeroed, rows copied,
 * each plane once); the last item also zeroes the `tail` floats after the
 * last plane (read past the end by a panel or tile). */
static void emit_padded_share(EmitC *e, const Window *w, int64_t off, const char *src, int64_t ns,
                              int64_t tail) {
  int64_t wp = w->w + w->pl + w->pr, hp = w->h + w->pt + w->pb;
  ec_line(e, "float *xw = (float *)(S + %lld);", LL(off));
  ec_line(e, "if (it == %lld)", LL(ns - 1));
  ec_line(e, "  for (long q = 0; q < %lld; q++) xw[%lld + q] = 0;", LL(tail), LL(w->c * hp * wp));
  ec_line(e, "for (long ch = it * %lld / %lld; ch < (it + 1) * %lld / %lld; ch++) {", LL(w->c),
          LL(ns), LL(w->c), LL(ns));
  ec_line(e, "float *d = xw + ch * %lld;", LL(hp * wp));
  ec_line(e, "const float *s = %s + ch * %lld;", src, LL(w->h * w->w));
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

static void conv_setup_item(EmitC *e, const Prod *p, const Window *w, int64_t nsetup) {
  int64_t wp = w->w + w->pl + w->pr;
  if (p->off_pix >= 0) { /* the pixel table, where the packer reads one */
    ec_line(e, "if (it == 0) {");
    ec_line(e, "int *px = (int *)(S + %lld);", LL(p->off_pix));
    ec_line(e, "for (long q = 0; q < %lld; q++)", LL(up(p->n, GEMM_NRP)));
    ec_line(e, "  px[q] = q < %lld ? (int)(q / %lld * %lld + q %% %lld * %lld) : 0;", LL(p->n),
            LL(w->ow), LL(w->sh * wp), LL(w->ow), LL(w->sw));
    ec_line(e, "}");
  }
  if (w->padded)
    emit_padded_share(e, w, p->off_img, "X0", nsetup, 16);
}

static bool emit_conv_small_products(EmitC *e, const Node *n, const Prod *p, bool shared, int64_t ns,
                                     int64_t cb, int64_t nq, int64_t qr);

/* The small-map conv (conv_small): items 0..NS-1 pack cols^T (all N rows,
 * padded to a 24-row panel, zeros outside the image) for a share of the input
 * channels each; then each item takes a block of output channels (and on
 * the pool a part of the pixels): tiles of Y^T over all of K, each stored
 * transposed into Y with the bias, residual and activation (onnxc_ukr_yt). */
static bool emit_conv_small(EmitC *e, const Node *n, const Prod *p, const Window *w) {
  int64_t N = p->m, M = p->n, K = p->k, rows = up(N, GEMM_MRP), taps = w->kh * w->kw;
  int64_t cb = M % 64 == 0 && M / 64 >= 4 * ec_threads(e) ? 64 : 32, nj = M / cb;
  int64_t ns = p->trans_x ? 1 : min64(w->c, 8);
  bool shared = p->par && gk_want_par(e);
  /* on the pool, each block of channels is cut into nq parts of qr pixels (a
   * multiple of 24, so of every MR) as the cost gives claims: 96 channels are
   * 3 blocks, which 2 threads cannot share evenly, 15 items they can */
  int64_t nq = 1, qr = rows;
  if (shared) {
    int64_t want = threads_chunks(ec_threads(e), nj * (rows / GEMM_MRP), ec_cost_ns((double)N * M * K, 0));
    int64_t nq0 = (want + nj - 1) / nj;
    qr = up((N + nq0 - 1) / nq0, GEMM_MRP);
    nq = (N + qr - 1) / qr;
  }
  ec_line(e, "/* small maps: Y^T[%lld x %lld] = cols^T[%lld x %lld] x W^T, packed weights; "
             "stored transposed%s */", LL(N), LL(M), LL(N), LL(K),
          p->trans_x ? "; cols^T read from the image, the last partial tile packed" : "");
  ec_line(e, "float *ap = (float *)(S + %lld);", LL(p->off_a));
  ec_line(e, "long own = 0, it;");
  ec_line(e, "(void)own;");
  if (shared && p->trans_x && ec_threads(e) <= 4 && N >= 96 * ec_threads(e)) {
    /* on the pool, maps of at least 96 pixels per thread: the pixels in one
     * part per thread, each thread taking its own part's channel blocks first
     * (onnxc_claim_owned), so that the next small-map conv, cut the same way,
     * reads on each thread what that thread wrote (an inverted residual's
     * expansion reads its block's input and residual from the projection
     * before); the caller packs the last partial tile. MobileNetV2, two
     * threads: 4.38 -> 4.17 ms against the claims in pixel-part order.
     * Cutting the depthwise convs between them by rows as well was slower:
     * on 14x14 maps their per-channel work does not halve. */
    int64_t T = ec_threads(e);
    ec_line(e, "if (onnxc_th == 0) {");
    ec_line(e, "const long nfull = %lld / ONNXC_MR * ONNXC_MR;", LL(N));
    ec_line(e, "for (long k = 0; k < %lld; k++)", LL(K));
    ec_line(e, "  for (long i = 0; i < ONNXC_MR; i++)");
    ec_line(e, "    ap[k * ONNXC_MR + i] = nfull + i < %lld ? X0[k * %lld + nfull + i] : 0.0f;", LL(N), LL(N));
    ec_line(e, "onnxc_ready_set(onnxc_nt);");
    ec_line(e, "}");
    ec_line(e, "onnxc_ready_wait(onnxc_nt, 1);");
    ec_line(e, "while ((it = onnxc_nt > 1 ? onnxc_claim_owned(onnxc_th, onnxc_nt, %lld) : own++) < %lld) {",
            LL(nj * T), LL(nj * T));
    ec_line(e, "const long part = it / %lld;", LL(nj));
    return emit_conv_small_products(e, n, p, false, 0, cb, -T, 0);
  }
  if (shared)
    ec_line(e, "while ((it = onnxc_nt > 1 ? onnxc_claim() : own++) < %lld) {", LL(ns + nj * nq));
  else
    ec_line(e, "while ((it = own++) < %lld) {", LL(ns + nj));
  ec_line(e, "if (it < %lld) {", LL(ns));
  if (p->trans_x) { /* rows nfull..N-1 of cols^T, MR per k, zeros past N */
    ec_line(e, "const long nfull = %lld / ONNXC_MR * ONNXC_MR;", LL(N));
    ec_line(e, "for (long k = 0; k < %lld; k++)", LL(K));
    ec_line(e, "  for (long i = 0; i < ONNXC_MR; i++)");
    ec_line(e, "    ap[k * ONNXC_MR + i] = nfull + i < %lld ? X0[k * %lld + nfull + i] : 0.0f;", LL(N), LL(N));
    if (shared)
      ec_line(e, "onnxc_ready_set(onnxc_nt);");
    ec_line(e, "continue;");
    ec_line(e, "}");
    return emit_conv_small_products(e, n, p, shared, ns, cb, nq, qr);
  }
  ec_line(e, "const long c0 = it * %lld / %lld, c1 = (it + 1) * %lld / %lld;", LL(w->c), LL(ns),
          LL(w->c), LL(ns));
  int64_t wp = w->w + w->pl + w->pr, hp = w->h + w->pt + w->pb, sw = w->sw;
  if (w->padded) { /* the item's channels of the zero-padded image */
    emit_padded_share(e, w, p->off_img, "X0", ns, 16);
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
  return emit_conv_small_products(e, n, p, shared, ns, cb, nq, qr);
}

/* The items after the ns packing ones: each a block of cb output channels
 * and a part of qr pixels (nq parts; one: all), its product into Y^T over
 * all of K, then its channels' part of the rows of Y. */
static bool emit_conv_small_products(EmitC *e, const Node *n, const Prod *p, bool shared, int64_t ns,
                                     int64_t cb, int64_t nq, int64_t qr) {
  int64_t N = p->m, K = p->k;
  if (shared)
    ec_line(e, "onnxc_ready_wait(onnxc_nt, %lld);", LL(ns));
  if (nq < 0) { /* -nq parts of whole 24-pixel groups, `part` given */
    int64_t T = -nq;
    ec_line(e, "const long j0 = it %% %lld * %lld;", LL(p->n / cb), LL(cb));
    ec_line(e, "const long q0 = %lld * part / %lld / 24 * 24;", LL(N), LL(T));
    ec_line(e, "const long q1 = part + 1 == %lld ? %lld : %lld * (part + 1) / %lld / 24 * 24;", LL(T), LL(N), LL(N),
            LL(T));
  } else if (nq == 1) { /* all pixels: q0 0, q1 N (one thread writes the same code as before) */
    ec_line(e, "const long j0 = (it - %lld) * %lld;", LL(ns), LL(cb));
  } else {
    /* pixel-part major: items claimed one after the other write different
     * channels' rows of the same pixels, not neighbouring pixels of one row
     * (Y's rows are not line-aligned: two threads writing either side of a
     * part's edge would share the line) */
    int64_t nj = p->n / cb;
    ec_line(e, "const long j0 = (it - %lld) %% %lld * %lld, q0 = (it - %lld) / %lld * %lld;", LL(ns), LL(nj),
            LL(cb), LL(ns), LL(nj), LL(qr));
    ec_line(e, "const long q1 = q0 + %lld < %lld ? q0 + %lld : %lld;", LL(qr), LL(N), LL(qr), LL(N));
  }
  /* each tile runs over all of K in registers (the panels of a small map
   * stay in L2) and is stored transposed straight into Y with its bias,
   * residual and Relu/Clip (onnxc_ukr_yt); another activation or a fused
   * chain then runs over the item's part of Y */
  const char *act = ir_attr_str(n, "activation", "");
  bool chain = ir_attr(n, "epilogue") != NULL;
  int code = chain ? 0 : strcmp(act, "Relu") == 0 ? 1 : strcmp(act, "Clip") == 0 ? 2 : 0;
  bool rest = chain || (act[0] && code == 0);
  char lo[64] = "0.0f", hi[64] = "0.0f";
  if (code == 2) {
    ec_literal(DT_F32, ir_attr_float(n, "activation_min", -INFINITY), lo, sizeof lo);
    ec_literal(DT_F32, ir_attr_float(n, "activation_max", INFINITY), hi, sizeof hi);
  }
  /* depth blocks of at most GEMM_KC, balanced: a block of a weight panel
   * stays in L1 while the item's tiles pass over it; later blocks add to
   * what the earlier ones stored in Y; the bias goes in with the first, the
   * residual and activation with the last */
  int64_t nkb = (K + GEMM_KC - 1) / GEMM_KC, kcb = (K + nkb - 1) / nkb;
  char res[96] = "(const float *)0", bias[32] = "(const float *)0", ract[16];
  if (ir_has_input(n, 3))
    snprintf(res, sizeof res, nkb > 1 ? "last ? X3 + jr * %lld + ir : (const float *)0" : "X3 + jr * %lld + ir",
             LL(N));
  if (ir_has_input(n, 2))
    snprintf(bias, sizeof bias, nkb > 1 ? "pc ? (const float *)0 : X2 + jr" : "X2 + jr");
  snprintf(ract, sizeof ract, nkb > 1 && code ? "last ? %d : 0" : "%d", code);
  ec_line(e, "for (long pc = 0; pc < %lld; pc += %lld) {", LL(K), LL(kcb));
  ec_line(e, "const long kc = %lld - pc < %lld ? %lld - pc : %lld;", LL(K), LL(kcb), LL(K), LL(kcb));
  if (nkb > 1)
    ec_line(e, "const int last = pc + kc == %lld;%s", LL(K), ir_has_input(n, 3) || code ? "" : " (void)last;");
  ec_line(e, "for (long jr = j0; jr < j0 + %lld; jr += ONNXC_NR) {", LL(cb));
  ec_line(e, "const float *b = X1 + (jr - jr %% %d) * %lld + pc * %d + jr %% %d;", GEMM_NRP, LL(K), GEMM_NRP,
          GEMM_NRP);
  if (nq == 1)
    ec_line(e, "for (long ir = 0; ir < %lld; ir += ONNXC_MR) {", LL(N));
  else
    ec_line(e, "for (long ir = q0; ir < q1; ir += ONNXC_MR) {");
  ec_line(e, "const int rows = %lld - ir < ONNXC_MR ? (int)(%lld - ir) : ONNXC_MR;", LL(N), LL(N));
  /* the first tile of a panel also brings the next panel's block (weights
   * come from memory: a model's weights do not stay in cache between runs) */
  ec_line(e, "const float *pf = ir == %s && jr + 32 < %lld ? b + %lld : (const float *)0;",
          nq == 1 ? "0" : "q0", LL(p->n), LL(K * GEMM_NRP));
  if (p->trans_x) /* full tiles from the image (row stride N), the last from its panel */
    ec_line(e, "onnxc_ukr_yt(kc, ir + ONNXC_MR <= %lld ? X0 + pc * %lld + ir : ap + pc * ONNXC_MR, "
               "ir + ONNXC_MR <= %lld ? %lld : ONNXC_MR, b, pf, Y0 + jr * %lld + ir, %lld, rows, pc > 0, %s, %s, "
               "%s, %s, %s);",
            LL(N), LL(N), LL(N), LL(N), LL(N), LL(N), bias, res, ract, lo, hi);
  else
    ec_line(e, "onnxc_ukr_yt(kc, ap + (ir - ir %% %d) * %lld + pc * %d + ir %% %d, %d, b, pf, Y0 + jr * %lld + ir, "
               "%lld, rows, pc > 0, %s, %s, %s, %s, %s);",
            GEMM_MRP, LL(K), GEMM_MRP, GEMM_MRP, GEMM_MRP, LL(N), LL(N), bias, res, ract, lo, hi);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  if (rest) {
    Buf out;
    buf_init(&out);
    gemm_act_expr(n, "v", &out);
    ec_line(e, "for (long ch = j0; ch < j0 + %lld; ch++) {", LL(cb));
    if (nq == 1)
      ec_line(e, "for (long q = 0; q < %lld; q++) {", LL(N));
    else
      ec_line(e, "for (long q = q0; q < q1; q++) {");
    ec_line(e, "const float v = Y0[ch * %lld + q];", LL(N));
    ec_line(e, "Y0[ch * %lld + q] = %s;", LL(N), out.s);
    ec_line(e, "}");
    ec_line(e, "}");
    buf_free(&out);
  }
  ec_line(e, "}");
  return true;
}

/* Items 0..ns-1 of a direct conv: a share of the padded image's channels
 * (the last item zeroes the 32 floats after it, read by the last tile). */
static void direct_setup_item(EmitC *e, const Prod *p, const Window *w, int64_t ns) {
  emit_padded_share(e, w, p->off_img, "xn", ns, 32);
}

typedef void (*SetupItem)(EmitC *, const Prod *, const Window *, int64_t);

/* What both direct convs open with: the tap table koff (tap k of pixel q at
 * xp[koff[k] + q], in the s x s phase planes of hq rows, s = 1: the padded
 * image), the store expression of v for channel i and pixel j (into *epi,
 * which the caller frees), and the loop over the items (the set-up items
 * first; per image when not shared). The caller closes the loop(s). */
static void emit_direct_head(EmitC *e, const Node *n, const Prod *p, const Window *w, int64_t s, int64_t hq,
                             int64_t out, int64_t ns, int64_t items, bool shared, SetupItem setup, Buf *epi) {
  int64_t taps = w->kh * w->kw, wq = (w->w + w->pl + w->pr + s - 1) / s, N = w->oh * w->ow;
  Buf tab;
  buf_init(&tab);
  for (int64_t k = 0; k < p->k; k++) {
    int64_t t = k % taps, i = t / w->kw * w->dh, j = t % w->kw * w->dw;
    int64_t off = k / taps * s * s * hq * wq + (i % s * s + j % s) * hq * wq + i / s * wq + j / s;
    buf_printf(&tab, "%s%lld", k ? (k % 16 ? ", " : ",\n  ") : "", LL(off));
  }
  ec_line(e, "static const int koff[%lld] = {", LL(p->k));
  ec_line(e, "  %s};", tab.s);
  buf_free(&tab);
  ec_line(e, "const float *xp = (const float *)S;");
  Buf base;
  buf_init(epi);
  buf_init(&base);
  buf_printf(&base, "v%s", ir_has_input(n, 2) ? " + X2[i]" : "");
  if (ir_has_input(n, 3))
    buf_printf(&base, " + rn[i * %lld + j]", LL(N));
  gemm_act_expr(n, base.s, epi);
  buf_free(&base);
  ec_line(e, "long own = 0, it;");
  ec_line(e, "(void)own;");
  if (shared) {
    ec_line(e, "const float *xn = X0;");
    ec_line(e, "float *yn = Y0;");
    if (ir_has_input(n, 3))
      ec_line(e, "const float *rn = X3;");
    ec_line(e, "while ((it = onnxc_nt > 1 ? onnxc_claim() : own++) < %lld) {", LL(ns + items));
    gk_emit_setup_items(e, p, w, ns, setup);
    return;
  }
  ec_line(e, "for (long nb = 0; nb < %lld; nb++) {", LL(n->in[0]->shape.d[0]));
  ec_line(e, "const float *xn = X0 + nb * %lld;", LL(w->c * w->h * w->w));
  ec_line(e, "float *yn = Y0 + nb * %lld;", LL(out));
  if (ir_has_input(n, 3))
    ec_line(e, "const float *rn = X3 + nb * %lld;", LL(out));
  ec_line(e, "for (it = 0; it < %lld; it++) {", LL(ns));
  setup(e, p, w, ns);
  ec_line(e, "}");
  ec_line(e, "for (it = 0; it < %lld; it++) {", LL(items));
}

/* The direct conv (conv_direct): tiles of 32 wide columns x MR rows, each
 * computed over all of K in registers into a stack tile, whose real columns
 * are then stored with the bias, residual and activation. */
static bool emit_conv_direct(EmitC *e, const Node *n, const Prod *p, const Window *w) {
  int64_t hp = w->h + w->pt + w->pb, wp = w->w + w->pl + w->pr;
  int64_t M = p->m, K = p->k, N = p->n, nw = (w->oh - 1) * wp + w->ow, nt = (nw + 31) / 32;
  int64_t batch = n->in[0]->shape.d[0], tb = nt >= 16 * ec_threads(e) ? 4 : 1, items = (nt + tb - 1) / tb;
  int64_t ns = min64(w->c, 8);
  bool shared = p->par && batch == 1 && gk_want_par(e);
  ec_line(e, "/* direct conv: [%lld x %lld] x image, %lld output rows %lld wide (%lld used) */", LL(M),
          LL(K), LL(w->oh), LL(wp), LL(w->ow));
  /* B(k, q) = xp[koff[k] + q] */
  Buf epi;
  emit_direct_head(e, n, p, w, 1, hp, M * N, ns, items, shared, direct_setup_item, &epi);
  ec_line(e, "for (long jt = it * %lld; jt < (it + 1) * %lld && jt < %lld; jt++) {", LL(tb), LL(tb),
          LL(nt));
  ec_line(e, "const long q0 = jt * 32;");
  ec_line(e, "for (long ir = 0; ir < %lld; ir += ONNXC_MR) {", LL(M));
  ec_line(e, "float t[ONNXC_MR * 32];");
  ec_line(e, "const float *a = X1 + (ir - ir %% 24) * %lld + ir %% 24;", LL(K));
  ec_line(e, "const long rows = %lld - ir < ONNXC_MR ? %lld - ir : ONNXC_MR;", LL(M), LL(M));
  ec_line(e, "for (long jr = 0; jr < 32; jr += ONNXC_NR)");
  ec_line(e, "  onnxc_ukr(%lld, a, 24, xp + q0 + jr, koff, t + jr, 32, 0, (const float *)0, "
             "(const float *)0, (const float *)0, 0, 0.0f, 0.0f);", LL(K));
  ec_line(e, "for (long x = 0; x < 32; x++) {");
  ec_line(e, "const long q = q0 + x, oy = q / %lld, ox = q %% %lld, j = oy * %lld + ox;", LL(wp),
          LL(wp), LL(w->ow));
  ec_line(e, "if (q >= %lld || ox >= %lld) continue;", LL(nw), LL(w->ow));
  ec_line(e, "for (long r = 0; r < rows; r++) {");
  ec_line(e, "const long i = ir + r;");
  ec_line(e, "const float v = t[r * 32 + x];");
  ec_line(e, "yn[i * %lld + j] = %s;", LL(N), epi.s);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}"); /* ir */
  ec_line(e, "}"); /* jt */
  ec_line(e, "}"); /* items */
  if (!shared)
    ec_line(e, "}"); /* nb */
  buf_free(&epi);
  return true;
}

/* Set-up item `it` of ns for a stride-2 transposed direct conv: its share of
 * the input channels as the four phase planes of the zero-padded image,
 * P[a][b][r][c] = xpad[2r + a][2c + b] (hq x wq each, a channel's four
 * together), zeroed and then filled; the last item zeroes the 32 floats
 * after the last channel (read past the end by the last tile). */
static void dtr_phase_item(EmitC *e, const Prod *p, const Window *w, int64_t ns) {
  int64_t hq = (w->h + w->pt + w->pb + 1) / 2, wq = (w->w + w->pl + w->pr + 1) / 2, pl = hq * wq;
  ec_line(e, "float *xw = (float *)(S + %lld);", LL(p->off_img));
  ec_line(e, "if (it == %lld)", LL(ns - 1));
  ec_line(e, "  for (long q = 0; q < 32; q++) xw[%lld + q] = 0;", LL(w->c * 4 * pl));
  ec_line(e, "for (long ch = it * %lld / %lld; ch < (it + 1) * %lld / %lld; ch++) {", LL(w->c), LL(ns),
          LL(w->c), LL(ns));
  ec_line(e, "float *d = xw + ch * %lld;", LL(4 * pl));
  ec_line(e, "const float *s = xn + ch * %lld;", LL(w->h * w->w));
  ec_line(e, "for (long q = 0; q < %lld; q++) d[q] = 0;", LL(4 * pl));
  ec_line(e, "for (long r = 0; r < %lld; r++) {", LL(w->h));
  ec_line(e, "const long pr = r + %lld;", LL(w->pt));
  ec_line(e, "float *dr = d + pr %% 2 * %lld + pr / 2 * %lld;", LL(2 * pl), LL(wq));
  /* phase b holds padded columns 2c + b: input column 2c + b - pl */
  for (int64_t b = 0; b < 2; b++) {
    int64_t top = w->w - 1 + w->pl - b, lo = (w->pl - b + 1) / 2, hi = top < 0 ? 0 : top / 2 + 1;
    if (lo < 0)
      lo = 0;
    if (hi > wq)
      hi = wq;
    if (hi > lo)
      ec_line(e, "for (long x = %lld; x < %lld; x++) dr[%lld + x] = s[r * %lld + 2 * x + %lld];", LL(lo), LL(hi),
              LL(b * pl), LL(w->w), LL(b - w->pl));
  }
  ec_line(e, "}");
  ec_line(e, "}");
}

/* Pixels of one parallel item of a transposed direct conv (a multiple of
 * every ISA's ONNXC_DMR: 12, 6, 4). */
#define DTR_BLOCK 96

/* The direct conv computed transposed (p->dtr): the same sums as
 * emit_conv_direct, in the same order, with the pixels as the tile's rows
 * (ONNXC_DMR of them, broadcast from the padded image through koff) and 32
 * output channels as its columns (a panel of W^T, read as vectors). A tile
 * of DMR x 32 reuses each broadcast over 32 channels and each weight load
 * over DMR pixels (the weights-as-rows tile loads 32 pixels per k, mostly
 * across cache lines); then its real pixels are stored, channel by channel,
 * with the bias, residual and activation. */
static bool emit_conv_direct_t(EmitC *e, const Node *n, const Prod *p, const Window *w) {
  /* stride s: s x s phase planes of hq x wq (s = 1: the padded image) */
  int64_t s = w->sh, hq = (w->h + w->pt + w->pb + s - 1) / s, wp = (w->w + w->pl + w->pr + s - 1) / s;
  int64_t M = p->n, K = p->k, N = p->m, nw = (w->oh - 1) * wp + w->ow;
  int64_t batch = n->in[0]->shape.d[0], items = (nw + DTR_BLOCK - 1) / DTR_BLOCK;
  int64_t ns = min64(w->c, 8);
  bool shared = p->par && batch == 1 && gk_want_par(e);
  ec_line(e, "/* direct conv, transposed: [%lld x %lld] x W^T, %lld output rows %lld wide (%lld used)%s */",
          LL(nw), LL(K), LL(w->oh), LL(wp), LL(w->ow), s > 1 ? ", read from 2x2 phase planes" : "");
  Buf epi;
  emit_direct_head(e, n, p, w, s, hq, M * N, ns, items, shared, s > 1 ? dtr_phase_item : direct_setup_item,
                   &epi);
  ec_line(e, "const long qe = it * %d + %d < %lld ? it * %d + %d : %lld;", DTR_BLOCK, DTR_BLOCK, LL(nw),
          DTR_BLOCK, DTR_BLOCK, LL(nw));
  ec_line(e, "for (long q0 = it * %d; q0 < qe; q0 += ONNXC_DMR) {", DTR_BLOCK);
  ec_line(e, "const long rows = qe - q0 < ONNXC_DMR ? qe - q0 : ONNXC_DMR;");
  /* the tile's real pixels: their rows in t and places in Y */
  ec_line(e, "long px[ONNXC_DMR], tx[ONNXC_DMR], nr = 0;");
  ec_line(e, "for (long x = 0; x < rows; x++) {");
  ec_line(e, "const long q = q0 + x, ox = q %% %lld;", LL(wp));
  ec_line(e, "if (ox < %lld) {", LL(w->ow));
  ec_line(e, "px[nr] = q / %lld * %lld + ox;", LL(wp), LL(w->ow));
  ec_line(e, "tx[nr++] = x * 32;");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "for (long jr = 0; jr < %lld; jr += 32) {", LL(M));
  ec_line(e, "float t[ONNXC_DMR * 32];");
  ec_line(e, "onnxc_ukr_dt(%lld, xp + q0, koff, X1 + jr * %lld, t);", LL(K), LL(K));
  ec_line(e, "for (long c = 0; c < 32; c++) {");
  ec_line(e, "const long i = jr + c;");
  ec_line(e, "for (long x = 0; x < nr; x++) {");
  ec_line(e, "const long j = px[x];");
  ec_line(e, "const float v = t[tx[x] + c];");
  ec_line(e, "yn[i * %lld + j] = %s;", LL(N), epi.s);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}"); /* jr */
  ec_line(e, "}"); /* q0 */
  ec_line(e, "}"); /* items */
  if (!shared)
    ec_line(e, "}"); /* nb */
  buf_free(&epi);
  return true;
}

bool gemm_emit_conv(EmitC *e, const Node *n) {
  Prod p;
  Window w;
  if (!gk_conv_prod(n, ec_threads(e), &p, &w) || !gk_scratch_ok(e, n, &p))
    return false;
  if (p.trans)
    return emit_conv_small(e, n, &p, &w);
  if (p.dtr)
    return emit_conv_direct_t(e, n, &p, &w);
  if (p.direct)
    return emit_conv_direct(e, n, &p, &w);
  /* a residual fused by passes/fuse_epilogue.c: input 3, rn at the image's */
  bool res = ir_has_input(n, 3), bias = ir_has_input(n, 2);
  char base[96], rterm[48] = "";
  if (res)
    snprintf(rterm, sizeof rterm, " + rn[i * %lld + j]", LL(p.ldy));
  snprintf(base, sizeof base, "v%s%s", bias ? " + bg[i]" : "", rterm);
  gk_set_epilogue(&p, n, base, bias ? "bg + ic + ir" : "(const float *)0", "(const float *)0");
  p.res = res ? "rn" : NULL;
  if (p.bt) { /* bf16 on a small map: pixels as rows (emit_gemm_bf16.c) */
    bool ok = bk_emit_conv_t(e, n, &p, &w, p.par && gk_want_par(e));
    buf_free(&p.epi);
    buf_free(&p.epi_full);
    return ok;
  }
  int64_t batch = n->in[0]->shape.d[0], wp = w.w + w.pl + w.pr, hp = w.h + w.pt + w.pb;
  int64_t img = w.c * w.h * w.w, G = w.groups, cg = w.c / G, mg = p.m;
  /* a group's weights, input planes, output rows and bias */
  int64_t wstride = (p.a.src == SRC_PACKED ? up(mg, GEMM_MRP) : mg) * p.k;
  if (p.lp && p.a.src == SRC_PACKED) /* 16-row panels of bfloat16 pairs, K to 32 (emit_gemm_bf16.c) */
    wstride = up(mg, 16) * up(p.k, 32) / 2;
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
   * in the same per-thread gk_layout the plan sized) */
  bool shared = p.par && batch == 1 && gk_want_par(e);
  ec_line(e, "/* implicit GEMM: %s[%lld x %lld] x [%lld x %lld], %s weights */", label, LL(p.m),
          LL(p.k), LL(p.k), LL(p.n), p.a.src == SRC_PACKED ? "packed" : "runtime-packed");
  if (p.par && !shared)
    ec_line(e, "const int onnxc_th = 0;");
  if (!p.par)
    gk_declare_scratch(e, &p);
  if (shared) {
    /* the pixel table and the padded image are built by the task's first items */
    int64_t nsetup = p.b.src != SRC_IM2COL ? 0 : w.padded ? min64(w.c, CONV_SETUP_ITEMS) : 1;
    if (p.b.src == SRC_IM2COL) {
      if (p.off_pix >= 0)
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
    snprintf(gl, sizeof gl, "const long grp = it / %lld;", LL(gk_par_per(&p)));
    const char *setup[] = {gl, g0, g1, g2, g3, NULL};
    gk_emit_core_par(e, &p, &w, G, setup, true, nsetup, conv_setup_item);
    buf_free(&p.epi);
    buf_free(&p.epi_full);
    return true;
  }
  if (p.b.src == SRC_IM2COL) {
    if (p.off_pix >= 0) {
      ec_line(e, "int *pix = (int *)(S + %lld);", LL(p.off_pix));
      ec_line(e, "for (long q = 0; q < %lld; q++)", LL(up(p.n, GEMM_NRP)));
      ec_line(e, "  pix[q] = q < %lld ? (int)(q / %lld * %lld + q %% %lld * %lld) : 0;", LL(p.n),
              LL(w.ow), LL(w.sh * wp), LL(w.ow), LL(w.sw));
    }
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
      /* row by row through restrict pointers, so that the copy vectorizes */
      ec_line(e, "for (long ch = 0; ch < %lld; ch++) {", LL(w.c * w.h));
      ec_line(e, "float *restrict xd = xp + (ch / %lld * %lld + ch %% %lld + %lld) * %lld + %lld;", LL(w.h), LL(hp),
              LL(w.h), LL(w.pt), LL(wp), LL(w.pl));
      ec_line(e, "const float *restrict xs = xn + ch * %lld;", LL(w.w));
      ec_line(e, "for (long x = 0; x < %lld; x++) xd[x] = xs[x];", LL(w.w));
      ec_line(e, "}");
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
    gk_emit_core_par(e, &p, &w, 1, NULL, false, 0, NULL);
  else
    gk_emit_core(e, &p, &w);
  ec_line(e, "}");
  ec_line(e, "}");
  buf_free(&p.epi);
  return true;
}

