/* emit_qmatmul.c - the C kernel of QIntMatMul (passes/fuse_qmatmul.c;
 * docs/int8.md, "quantize_dynamic's products"): MatMulInteger of u8 rows by
 * a constant int8 B packed with the columns as the vector lanes.
 *
 * The rows of A ([..., K] flattened, read in place) are taken 4 at a time;
 * onnxc_qacc_n (qint_prelude.c, the kernel of the int8 convs' lanes form)
 * computes 4 rows x 64 columns in 16 zmm accumulators, broadcasting 4 bytes
 * of each row per group of 4 k against 4 vectors of packed weights
 * (vpdpbusd), exact int32 sums. A K that is no multiple of 4 leaves 1-3 k to
 * onnxc_qacc_tail. onnxc_qmm_put folds the zero points in (za ZD[c], and
 * ZB[c] times the row's byte sum when B's zero points are not all 0) and
 * stores int32, or float(v) * S (+ BIAS) when the pass folded the Cast,
 * Mul and Add. Items: a block of 64 columns x a run of rows.
 */
#include "codegen_internal.h"

#define LL(x) ((long long)(x))
#define QMM_NC 64 /* columns per call of the micro-kernel */

/* The lanes product's loops (QIntMatMul, and QIntConv mode 1 with wt in
 * emit_qint.c): over items of 64 columns x a run of rows, per 4 rows m0..
 * (np of them) the int32 sums acc of columns c0.. (nc of them) of X0 [M, K]
 * by the packed X1; with sums, rs[i] = row i's byte sum. The caller writes
 * the store, then closes two braces. */
void qmm_open_rows(EmitC *e, int64_t M, int64_t N, int64_t K, bool sums) {
  int64_t K4 = (K + 3) / 4, wcs = 16 * K4;
  double cost = ec_cost_ns((double)M * (double)N * (double)K / 4, 0);
  bool par = ec_par_worth(e, cost);
  /* items: blocks of 64 columns, each over runs of rows when they are too few for the threads */
  int64_t nct = (N + QMM_NC - 1) / QMM_NC, r4 = (M + 3) / 4;
  int64_t npc = par && nct < 4 * ec_threads(e) ? (4 * ec_threads(e) + nct - 1) / nct : 1;
  npc = npc > r4 ? r4 : npc;
  ec_open_items(e, "item", nct * npc, cost);
  ec_line(e, "const long c0 = item / %lld * %d, rc = item %% %lld;", LL(npc), QMM_NC, LL(npc));
  ec_line(e, "const int nc = (int)(%lld - c0 < %d ? %lld - c0 : %d);", LL(N), QMM_NC, LL(N), QMM_NC);
  ec_line(e, "for (long m0 = rc * %lld / %lld * 4; m0 < (rc + 1) * %lld / %lld * 4 && m0 < %lld; m0 += 4) {",
          LL(r4), LL(npc), LL(r4), LL(npc), LL(M));
  ec_line(e, "const int np = (int)(%lld - m0 < 4 ? %lld - m0 : 4);", LL(M), LL(M));
  ec_line(e, "const uint8_t *src[4];");
  ec_line(e, "int32_t %sacc[4 * %d];", sums ? "rs[4], " : "", QMM_NC);
  ec_line(e, "for (int i = 0; i < 4; i++) {");
  ec_line(e, "src[i] = X0 + (m0 + (i < np ? i : np - 1)) * %lld;", LL(K));
  if (sums)
    ec_line(e, "rs[i] = onnxc_qsum(src[i], %lld);", LL(K));
  ec_line(e, "}");
  ec_line(e, "onnxc_qacc_n(1, %lld, 4, src, X1 + c0 / 16 * %lld, %lld, nc, acc);", LL(K / 4), LL(wcs), LL(wcs));
  if (K % 4)
    ec_line(e, "onnxc_qacc_tail(src, %lld, %lld, X1 + c0 / 16 * %lld, %lld, nc, acc);", LL(K / 4), LL(K % 4), LL(wcs),
            LL(wcs));
}

bool emitc_QIntMatMul(EmitC *e, const Node *n) {
  int64_t K = ir_attr_int(n, "kdim", 0), N = ir_attr_int(n, "cout", 0), numel;
  if (!shape_numel(&n->out[0]->shape, &numel) || numel == 0 || K < 1 || N < 1) {
    for (int i = 0; i < n->n_in; i++)
      if (ir_has_input(n, i))
        ec_line(e, "(void)X%d;", i);
    ec_line(e, "(void)Y0;");
    return true;
  }
  bool fl = ir_attr_int(n, "out_float", 0) != 0, zb = ir_has_input(n, 3), za = ir_has_input(n, 4);
  bool bias = fl && ir_has_input(n, 6);
  int64_t ns = 1;
  if (fl)
    shape_numel(&n->in[5]->shape, &ns);
  int64_t ss = ns > 1 ? 1 : 0;
  ec_line(e, "const int32_t za = %s;", za ? "(int32_t)X4[0]" : "0");
  qmm_open_rows(e, numel / N, N, K, zb);
  const char *y = arena_printf(e->g->arena, "Y0 + m0 * %lld + c0", LL(N));
  ec_line(e, "onnxc_qmm_put(acc, np, nc, za, X2 + c0, %s, %s, %s, %lld, %s, %s, %lld);",
          zb ? "X3 + c0" : "(const int32_t *)0", zb ? "rs" : "(const int32_t *)0",
          fl ? (ss ? "X5 + c0" : "X5") : "(const float *)0", LL(ss), bias ? "X6 + c0" : "(const float *)0", y, LL(N));
  ec_line(e, "}");  /* m0 */
  ec_line(e, "}");  /* items */
  return true;
}
