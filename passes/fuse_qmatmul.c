/* fuse_qmatmul.c - MatMulInteger and ConvInteger by constant weights lowered
 * to the int8 lanes kernels (docs/int8.md, "quantize_dynamic's products").
 *
 * requires: inferred types and static shapes; runs with fuse-quant (before
 *   simplify and before fuse-elementwise takes the Cast/Mul/Add chain).
 * provides: Y = MatMulInteger(A u8 [..., K], B [K, N] constant int8 or uint8,
 *   za (scalar, run-time or constant; absent = 0), zb (constant, scalar or
 *   [N]; absent = 0)) becomes QIntMatMul(A, W, ZD, ZB?, za?) with
 *     W  = B' (B - 128 when B is uint8, so int8) packed as the product
 *          kernel reads it: per 16 columns, ceil(K/4) words of 4 k per column
 *          ([N/16][K/4][16] int32, k % 4 in byte k % 4, zero past K and N);
 *     ZB = zb' (zb - 128 for uint8 B), omitted when every one is 0;
 *     ZD = K zb' - sum_k B'[k][n].
 *   Then sum_k (A - za)(B - zb) = A B' - zb' rowsum(A) + za ZD exactly in
 *   int32 (K <= 16384 bounds every partial sum). When the int32 result is
 *   only read by Cast(to float) -> Mul(by a float scalar or [N] S) [-> Add of a
 *   constant float [N] bias], as quantize_dynamic writes each MatMul, the
 *   chain folds in: QIntMatMul(..., za, S [, BIAS]) gives the float result
 *   float(v) * S + BIAS, the same roundings as the three nodes.
 *   ConvInteger(X u8 [N, C, H, W], W constant [M, C, kh, kw], group 1, zx
 *   scalar, zw constant scalar or [M]) becomes QIntConvInteger(X, W', D
 *   [, ZW, zx]) in the same way (fuse_conv: the lanes conv's weight layout),
 *   int32 out; its Cast/Mul stay for fuse-elementwise. And a Gather of a
 *   per-tensor DequantizeLinear of a constant gathers the quantized rows,
 *   then dequantizes them (sink_gather).
 * invalidates: the MatMulInteger / ConvInteger and the folded chain go; the
 *   weights stay for dce.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#define QMM_MAX_K 16384

static Node *only_user(const Value *v) { return v->n_uses == 1 && !v->is_output ? v->uses[0] : NULL; }

/* v is constant and has one element or N along its last dim (rank <= r). */
static bool per_col(const Value *v, int64_t N, int r) {
  int64_t k;
  if (!shape_numel(&v->shape, &k) || v->shape.rank > r)
    return false;
  return k == 1 || (k == N && v->shape.rank >= 1 && v->shape.d[v->shape.rank - 1] == N);
}

/* The other operand of a binary node n, one of whose operands is v. */
static Value *other_in(const Node *n, const Value *v) {
  if (n->n_in != 2)
    return NULL;
  return n->in[0] == v ? n->in[1] : n->in[1] == v ? n->in[0] : NULL;
}

/* The Cast -> Mul [-> Add] chain after y (the MatMulInteger's output): its
 * nodes in chain[], the scale and bias (NULL when none). */
static int float_chain(Value *y, Node **chain, Value **scale, Value **bias) {
  Node *c = only_user(y);
  if (!c || c->op != OP_Cast || ir_attr_int(c, "to", 0) != 1 || c->out[0]->dt != DT_F32)
    return 0;
  Node *m = only_user(c->out[0]);
  Value *s = m && m->op == OP_Mul ? other_in(m, c->out[0]) : NULL;
  int r = y->shape.rank;
  int64_t N = r > 0 ? y->shape.d[r - 1] : 1;
  if (!s || s->dt != DT_F32 || !per_col(s, N, r) || !shape_equal(&m->out[0]->shape, &y->shape))
    return 0;
  chain[0] = c;
  chain[1] = m;
  *scale = s;
  *bias = NULL;
  Node *a = only_user(m->out[0]);
  Value *b = a && a->op == OP_Add ? other_in(a, m->out[0]) : NULL;
  if (b && b != m->out[0] && b->kind == VK_CONST && b->dt == DT_F32 && per_col(b, N, r) &&
      shape_equal(&a->out[0]->shape, &y->shape)) {
    chain[2] = a;
    *bias = b;
    return 3;
  }
  return 2;
}

static Value *new_const(Graph *g, const char *name, DType dt, int rank, const int64_t *dims, Diag *d) {
  Shape s = shape_make(rank, dims);
  Tensor *t = ir_tensor_new(g, dt, &s, d);
  return t ? ir_const_new(g, name, t) : NULL;
}

static bool fuse_one(Graph *g, Node *n, bool *done, Diag *d) {
  *done = false;
  Value *A = n->in[0], *B = n->in[1];
  const Shape *as = &A->shape, *bs = &B->shape, *ys = &n->out[0]->shape;
  if (A->dt != DT_U8 || B->kind != VK_CONST || bs->rank != 2 || (B->dt != DT_I8 && B->dt != DT_U8) ||
      as->rank < 1 || !shape_is_static(as) || !shape_is_static(ys))
    return true;
  int64_t K = bs->d[0], N = bs->d[1], rows;
  if (as->d[as->rank - 1] != K || K < 1 || K > QMM_MAX_K || N < 1 || !shape_numel(as, &rows) || rows < 1)
    return true;
  Value *za = ir_has_input(n, 2) ? n->in[2] : NULL, *zbv = ir_has_input(n, 3) ? n->in[3] : NULL;
  int64_t cnt;
  if (za && (za->dt != DT_U8 || !shape_numel(&za->shape, &cnt) || cnt != 1))
    return true;  /* (a per-row zero point keeps the generic loop) */
  if (zbv && (zbv->kind != VK_CONST || zbv->dt != B->dt ||
              (zbv->konst->numel != 1 && zbv->konst->numel != N)))
    return true;

  Node *chain[3];
  Value *scale = NULL, *bias = NULL;
  int nch = float_chain(n->out[0], chain, &scale, &bias);

  int64_t K4 = (K + 3) / 4, N16 = (N + 15) / 16;
  int64_t wdims[2] = {N16 * K4, 16};
  Value *wv = new_const(g, arena_printf(g->arena, "%s_qmw", n->name), DT_I32, 2, wdims, d);
  Value *zdv = new_const(g, arena_printf(g->arena, "%s_qmzd", n->name), DT_I32, 1, &N, d);
  Value *zbp = new_const(g, arena_printf(g->arena, "%s_qmzb", n->name), DT_I32, 1, &N, d);
  if (!wv || !zdv || !zbp)
    return false;
  uint32_t *wq = wv->konst->data;
  int32_t *zd = zdv->konst->data, *zb = zbp->konst->data;
  int32_t off = B->dt == DT_U8 ? 128 : 0;
  bool any_zb = false;
  const int8_t *bs8 = B->konst->data;
  const uint8_t *bu8 = B->konst->data;
  for (int64_t c = 0; c < N; c++) {
    int64_t sum = 0;
    for (int64_t k = 0; k < K; k++) {
      int32_t w = off ? (int32_t)bu8[k * N + c] - off : (int32_t)bs8[k * N + c];
      sum += w;
      wq[((c / 16) * K4 + k / 4) * 16 + c % 16] |= ((uint32_t)w & 0xffu) << (8 * (k % 4));
    }
    int32_t z = (zbv ? (int32_t)tensor_get_i64(zbv->konst, zbv->konst->numel == 1 ? 0 : c) : 0) - off;
    zb[c] = z;
    any_zb = any_zb || z != 0;
    zd[c] = (int32_t)(K * z - sum);
  }
  Value *in[7] = {A, wv, zdv, any_zb ? zbp : NULL, za, nch ? scale : NULL, nch == 3 ? bias : NULL};
  int n_in = nch == 3 ? 7 : nch ? 6 : za ? 5 : any_zb ? 4 : 3;
  Node *pos = nch ? chain[nch - 1] : n;
  Node *q = ir_node_insert(g, pos, OP_QIntMatMul, "QIntMatMul", n->name, n_in, in, 1);
  q->domain = "onnxc";
  ir_attr_set_int(q, "kdim", K);
  ir_attr_set_int(q, "cout", N);
  ir_attr_set_int(q, "out_float", nch ? 1 : 0);
  ir_attr_set_ints(q, "yshape", ys->d, ys->rank);
  rewrite_record_fused(q, n);
  for (int i = 0; i < nch; i++)
    rewrite_record_fused(q, chain[i]);
  Value *last = nch ? chain[nch - 1]->out[0] : n->out[0];
  q->out[0]->dt = nch ? DT_F32 : DT_I32;
  q->out[0]->shape = *ys;
  ir_value_replace(last, q->out[0]);
  for (int i = nch - 1; i >= 0; i--)
    ir_node_remove(chain[i]);
  ir_node_remove(n);
  *done = true;
  return true;
}

/* ConvInteger (2-D, group 1) by a constant W -> QIntConvInteger: W' (W - 128
 * for uint8) in the int8 convs' transposed blocks with a taps-major depth
 * (k' = tap * Cin4 + ci, zero for ci >= Cin and past C: fuse_quant.c's wt
 * layout), D[c] = K zw'[c] - sum W'[c] over the K = taps * Cin real k. */
static bool fuse_conv(Graph *g, Node *n, bool *done, Diag *d) {
  *done = false;
  Value *X = n->in[0], *W = n->in[1];
  const Shape *xs = &X->shape, *wsh = &W->shape, *ys = &n->out[0]->shape;
  if (X->dt != DT_U8 || W->kind != VK_CONST || (W->dt != DT_I8 && W->dt != DT_U8) || xs->rank != 4 ||
      wsh->rank != 4 || ys->rank != 4 || !shape_is_static(xs) || !shape_is_static(ys) ||
      ir_attr_int(n, "group", 1) != 1 || wsh->d[1] != xs->d[1])
    return true;
  int64_t C = wsh->d[0], cin = wsh->d[1], taps = wsh->d[2] * wsh->d[3], cin4 = (cin + 3) / 4 * 4;
  int64_t K = taps * cin, kt = taps * cin4, nch = (kt + 63) / 64, cnt;
  if (C < 1 || K < 1 || K > QMM_MAX_K || ys->d[1] != C)
    return true;
  Value *zx = ir_has_input(n, 2) ? n->in[2] : NULL, *zwv = ir_has_input(n, 3) ? n->in[3] : NULL;
  if (zx && (zx->dt != DT_U8 || !shape_numel(&zx->shape, &cnt) || cnt != 1))
    return true;
  if (zwv && (zwv->kind != VK_CONST || zwv->dt != W->dt || (zwv->konst->numel != 1 && zwv->konst->numel != C)))
    return true;
  int64_t wdims[2] = {(C + 15) / 16 * nch, 256};
  Value *wv = new_const(g, arena_printf(g->arena, "%s_qcw", n->name), DT_I32, 2, wdims, d);
  Value *dv = new_const(g, arena_printf(g->arena, "%s_qcd", n->name), DT_I32, 1, &C, d);
  Value *zv = new_const(g, arena_printf(g->arena, "%s_qcz", n->name), DT_I32, 1, &C, d);
  if (!wv || !dv || !zv)
    return false;
  uint32_t *wq = wv->konst->data;
  int32_t *dd = dv->konst->data, *zw = zv->konst->data;
  int32_t off = W->dt == DT_U8 ? 128 : 0;
  const int8_t *ws8 = W->konst->data;
  const uint8_t *wu8 = W->konst->data;
  bool any_zw = false;
  for (int64_t c = 0; c < C; c++) {
    int64_t sum = 0;
    for (int64_t ci = 0; ci < cin; ci++)
      for (int64_t t = 0; t < taps; t++) {
        int64_t src = (c * cin + ci) * taps + t, k = t * cin4 + ci;
        int32_t w = off ? (int32_t)wu8[src] - off : (int32_t)ws8[src];
        sum += w;
        wq[((c / 16) * nch + k / 64) * 256 + (k % 64) / 4 * 16 + c % 16] |= ((uint32_t)w & 0xffu) << (8 * (k % 4));
      }
    int32_t z = (zwv ? (int32_t)tensor_get_i64(zwv->konst, zwv->konst->numel == 1 ? 0 : c) : 0) - off;
    zw[c] = z;
    any_zw = any_zw || z != 0;
    dd[c] = (int32_t)(K * z - sum);
  }
  Value *in[5] = {X, wv, dv, any_zw ? zv : NULL, zx};
  Node *q = ir_node_insert(g, n, OP_QIntConvInteger, "QIntConvInteger", n->name, zx ? 5 : any_zw ? 4 : 3, in, 1);
  q->domain = "onnxc";
  for (int i = 0; i < n->n_attrs; i++)
    *ir_attr_add(q, n->attrs[i].name, n->attrs[i].kind) = n->attrs[i];
  if (!ir_attr(q, "kernel_shape"))
    ir_attr_set_ints(q, "kernel_shape", &wsh->d[2], 2);
  ir_attr_set_int(q, "cout", C);
  ir_attr_set_int(q, "kdim", K);
  ir_attr_set_int(q, "kdim_t", kt);
  ir_attr_set_ints(q, "yshape", ys->d, ys->rank);
  rewrite_record_fused(q, n);
  q->out[0]->dt = DT_I32;
  q->out[0]->shape = *ys;
  ir_value_replace(n->out[0], q->out[0]);
  ir_node_remove(n);
  *done = true;
  return true;
}

/* Gather(DequantizeLinear(q constant, scalar scale [, scalar zero point]),
 * idx) -> DequantizeLinear(Gather(q, idx), scale, zero point): the rows a
 * quantized embedding table gives are dequantized, not the whole table on
 * every run (quantize_static's QDQ embeddings; BERT-tiny's word table is 3.9
 * M elements, 0.64 ms a run). Exact: the dequantization is elementwise. */
static bool sink_gather(Graph *g, Node *n, bool *done) {
  *done = false;
  Value *v = n->in[0];
  if (v->kind != VK_NODE || v->producer->op != OP_DequantizeLinear || !shape_is_static(&n->out[0]->shape))
    return true;
  Node *dq = v->producer;
  int64_t k;
  if (dq->in[0]->kind != VK_CONST || !shape_numel(&dq->in[1]->shape, &k) || k != 1 ||
      ir_attr_int(dq, "block_size", 0) != 0 ||
      (ir_has_input(dq, 2) && (!shape_numel(&dq->in[2]->shape, &k) || k != 1)))
    return true;
  Value *gin[2] = {dq->in[0], n->in[1]};
  Node *ga = ir_node_insert(g, n, OP_Gather, "Gather", arena_printf(g->arena, "%s_quantized", n->name), 2, gin, 1);
  for (int i = 0; i < n->n_attrs; i++)
    *ir_attr_add(ga, n->attrs[i].name, n->attrs[i].kind) = n->attrs[i];
  ga->out[0]->dt = dq->in[0]->dt;
  ga->out[0]->shape = n->out[0]->shape;
  Value *din[3] = {ga->out[0], dq->in[1], ir_has_input(dq, 2) ? dq->in[2] : NULL};
  Node *nd = ir_node_insert(g, n, OP_DequantizeLinear, "DequantizeLinear", dq->name, ir_has_input(dq, 2) ? 3 : 2,
                            din, 1);
  for (int i = 0; i < dq->n_attrs; i++)
    *ir_attr_add(nd, dq->attrs[i].name, dq->attrs[i].kind) = dq->attrs[i];
  nd->out[0]->dt = n->out[0]->dt;
  nd->out[0]->shape = n->out[0]->shape;
  rewrite_record_fused(ga, n);
  ir_value_replace(n->out[0], nd->out[0]);
  ir_node_remove(n);
  *done = true;
  return true;
}

bool pass_fuse_qmatmul(Graph *g, bool vnni512, Diag *d) {
  Node *next;
  for (Node *n = g->first; n; n = next) {
    next = n->next;
    if (n->op != OP_Gather && (!vnni512 || (n->op != OP_MatMulInteger && n->op != OP_ConvInteger)))
      continue;
    bool done;
    if (!(n->op == OP_Gather       ? sink_gather(g, n, &done)
          : n->op == OP_ConvInteger ? fuse_conv(g, n, &done, d)
                                    : fuse_one(g, n, &done, d)))
      return false;
    if (done)  /* the chain after n may have held `next` */
      next = g->first;
  }
  return true;
}

bool infer_QIntMatMul(Node *n, Diag *d) {
  int r;
  const int64_t *ys = ir_attr_ints(n, "yshape", &r);
  int64_t K = ir_attr_int(n, "kdim", 0), N = ir_attr_int(n, "cout", 0);
  bool fl = ir_attr_int(n, "out_float", 0) != 0;
  if (!ys || r < 1 || r > IR_MAX_RANK || ys[r - 1] != N || n->in[0]->dt != DT_U8 || n->in[1]->dt != DT_I32 ||
      n->in[2]->dt != DT_I32 || n->in[0]->shape.rank < 1 ||
      n->in[0]->shape.d[n->in[0]->shape.rank - 1] != K || (ir_has_input(n, 3) && n->in[3]->dt != DT_I32) ||
      (ir_has_input(n, 4) && n->in[4]->dt != DT_U8) || (ir_has_input(n, 5) && n->in[5]->dt != DT_F32) ||
      (ir_has_input(n, 6) && n->in[6]->dt != DT_F32) || fl != ir_has_input(n, 5))
    return diag_error(d, n, "internal: malformed QIntMatMul");
  n->out[0]->dt = fl ? DT_F32 : DT_I32;
  n->out[0]->shape = shape_make(r, ys);
  return true;
}

bool infer_QIntConvInteger(Node *n, Diag *d) {
  int r;
  const int64_t *ys = ir_attr_ints(n, "yshape", &r);
  if (!ys || r != 4 || n->in[0]->dt != DT_U8 || n->in[0]->shape.rank != 4 || n->in[1]->dt != DT_I32 ||
      n->in[2]->dt != DT_I32 || (ir_has_input(n, 3) && n->in[3]->dt != DT_I32) ||
      (ir_has_input(n, 4) && n->in[4]->dt != DT_U8) || ys[1] != ir_attr_int(n, "cout", 0))
    return diag_error(d, n, "internal: malformed QIntConvInteger");
  n->out[0]->dt = DT_I32;
  n->out[0]->shape = shape_make(r, ys);
  return true;
}
