/* fuse_quant.c - QDQ groups lowered to integer kernels (docs/int8.md).
 *
 * requires: inferred types and shapes; runs before simplify, so the
 *   DequantizeLinear of a constant weight is still a node (not folded).
 * provides: each group below becomes uint8 data flow:
 *   DQ(x) [, DQ(W), DQ(b)] -> Conv | Gemm | MatMul [-> Relu | Clip] -> Q
 *       => QIntConv(x, W', b', mult){mode: 0 conv GEMM (W' int32 blocks
 *          [C/16][K/64][16][16] of 4 int8 along k; with wt = 1, each block
 *          transposed: Target.int8_lanes, lanes_cheaper), 1 X W^T (W' int8 [C, K]; with
 *          Target.int8_lanes and wt = 1, int32 [C/16][K/4][16] of 4 k: the lanes product),
 *          2 depthwise (W' int8 [C, taps])}
 *   DQ(a), DQ(b) -> Add [-> Relu | Clip] -> Q      => QIntAdd(a, b)
 *   DQ(x) -> GlobalAveragePool -> Q               => QIntGlobalAvgPool(x)
 *   DQ(x) -> MaxPool | Reshape | Flatten | Squeeze | Unsqueeze | Transpose -> Q
 *       with Q's scale and zero point those of DQ => the op on the uint8 x
 *   DQ(x_i) -> Concat -> Q                        => Concat of x_i, each
 *       requantized by a 256-entry table (QIntLut) when its parameters differ
 *   x is uint8 with scalar parameters, W an int8 constant with zero points 0,
 *   per tensor or per output channel, b an int32 constant with zero point 0
 *   and scale x_scale * W_scale (as quantize_static writes it).
 * invalidates: the grouped float nodes and the Q go (their DQs are left to
 *   dce when nothing else reads them); new constants hold the packed weights.
 * Arithmetic (ONNX Runtime's, so its integer kernels and onnxc agree):
 *   acc = sum (x - zx) W + b in exact int32 (bias folded: b - zx * sum W);
 *   y = sat(rne(clamp(float(acc) * m)) + zy), m = (sx * sw[c]) / sy in float.
 *   A Relu or Clip before Q narrows the clamp to [Q(lo), Q(hi)], which is
 *   exact since Q is monotonic. Add: fma(a, sa / sy, fma(b, sb / sy, fixed))
 *   with fixed = zy - fma(sa / sy, za, (sb / sy) * zb), rounded and
 *   clamped (MLAS's QLinearAdd); GlobalAveragePool: m = sx / (sy * HW) on
 *   sum x - zx * HW; table entries sat(rne(float(x - zx) * sx / sy) + zy).
 */
#include "passes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The conv GEMM's weight layout (codegen/emit_qint.c): blocks of 16 output
 * channels x 64 k (the AMX A tile: 16 rows of 64 bytes; the VNNI kernel
 * reads 8 of its rows, 4 k per int32 word). */
#define QINT_CB 16
#define QINT_KC 64

typedef struct QParam {
  Value *v;      /* the quantized value (input of the DQ; output of the Q) */
  float s;
  int32_t z;
} QParam;

static bool konst_scalar(const Value *v, DType dt) {
  int64_t k;
  return v->kind == VK_CONST && v->dt == dt && shape_numel(&v->shape, &k) && k == 1;
}

/* v = DequantizeLinear(q u8, scalar scale, scalar zp): *p. */
static bool dq_u8(const Value *v, QParam *p) {
  if (v->kind != VK_NODE || v->producer->op != OP_DequantizeLinear)
    return false;
  const Node *n = v->producer;
  if (n->in[0]->dt != DT_U8 || !konst_scalar(n->in[1], DT_F32) ||
      ir_attr_int(n, "block_size", 0) != 0)
    return false;
  if (ir_has_input(n, 2) && !konst_scalar(n->in[2], DT_U8))
    return false;
  p->v = n->in[0];
  p->s = (float)tensor_get_f64(n->in[1]->konst, 0);
  p->z = ir_has_input(n, 2) ? (int32_t)tensor_get_i64(n->in[2]->konst, 0) : 0;
  return p->s > 0 && isfinite(p->s);
}

/* The only reader of v, when v is no graph output; else NULL. */
static Node *sole_user(const Value *v) {
  return v->n_uses == 1 && !v->is_output ? v->uses[0] : NULL;
}

/* n = QuantizeLinear(_, scalar scale, scalar u8 zp) -> u8: *p (v: its output). */
static bool q_u8(const Node *n, QParam *p) {
  if (!n || n->op != OP_QuantizeLinear || n->out[0]->dt != DT_U8 ||
      !konst_scalar(n->in[1], DT_F32) || ir_attr_int(n, "block_size", 0) != 0)
    return false;
  if (ir_has_input(n, 2) && !konst_scalar(n->in[2], DT_U8))
    return false;
  p->v = n->out[0];
  p->s = (float)tensor_get_f64(n->in[1]->konst, 0);
  p->z = ir_has_input(n, 2) ? (int32_t)tensor_get_i64(n->in[2]->konst, 0) : 0;
  return p->s > 0 && isfinite(p->s);
}

static bool same_param(const QParam *a, const QParam *b) { return a->s == b->s && a->z == b->z; }

/* Q of a float as ONNX Runtime computes it: sat(rne(x / s) + z) to uint8. */
static int32_t quantize(float x, const QParam *p) {
  float q = rintf(x / p->s) + (float)p->z;
  return q < 0 ? 0 : q > 255 ? 255 : (int32_t)q;
}

/* The chain after a float op's output y: an optional Relu / Clip (constant
 * scalar bounds), then a u8 Q. *q its parameters, *lo, *hi the clamp in the
 * quantized domain; *chain the nodes to remove (up to 2, in order). */
static bool q_chain(Value *y, QParam *q, int32_t *lo, int32_t *hi, Node **chain, int *n_chain) {
  Node *u = sole_user(y);
  if (!u)
    return false;
  *n_chain = 0;
  float flo = -INFINITY, fhi = INFINITY;
  if (u->op == OP_Relu || u->op == OP_Clip) {
    if (u->op == OP_Relu) {
      flo = 0;
    } else {
      if (ir_has_input(u, 1)) {
        if (!konst_scalar(u->in[1], DT_F32))
          return false;
        flo = (float)tensor_get_f64(u->in[1]->konst, 0);
      }
      if (ir_has_input(u, 2)) {
        if (!konst_scalar(u->in[2], DT_F32))
          return false;
        fhi = (float)tensor_get_f64(u->in[2]->konst, 0);
      }
      if (isnan(flo) || isnan(fhi) || flo > fhi)
        return false;
    }
    chain[(*n_chain)++] = u;
    u = sole_user(u->out[0]);
    if (!u)
      return false;
  }
  if (!q_u8(u, q))
    return false;
  chain[(*n_chain)++] = u;
  *lo = isinf(flo) ? 0 : quantize(flo, q);
  *hi = isinf(fhi) ? 255 : quantize(fhi, q);
  return true;
}

/* Replaces the group ending in chain[n_chain-1] (a Q) by `nn`, whose output
 * takes the Q output's place; removes the chain, then `op`. */
static void replace_group(Node *op, Node **chain, int n_chain, Node *nn) {
  Value *qv = chain[n_chain - 1]->out[0];
  nn->out[0]->dt = DT_U8;
  nn->out[0]->shape = qv->shape;
  ir_value_replace(qv, nn->out[0]);
  for (int i = n_chain - 1; i >= 0; i--)
    ir_node_remove(chain[i]);
  if (op)
    ir_node_remove(op);
}

static Value *new_const(Graph *g, const char *name, DType dt, int rank, const int64_t *dims,
                        Diag *d) {
  Shape s = shape_make(rank, dims);
  Tensor *t = ir_tensor_new(g, dt, &s, d);
  return t ? ir_const_new(g, name, t) : NULL;
}

/* ---- Conv / Gemm / MatMul ------------------------------------------------------ */

typedef struct WInfo {
  const Tensor *w;        /* int8 data */
  const Tensor *ws;       /* scales: 1 or C */
  int64_t C, K;           /* output channels, reduction length */
  bool trans;             /* w is [K, C] (MatMul, Gemm without transB) rather than [C, ...] */
  const int64_t *perm;    /* the conv GEMM's k order (pair_order), NULL: as is */
} WInfo;

/* v = DequantizeLinear(W int8 const, scales, zero points 0) per tensor or
 * per channel along `axis` (the output-channel dim) with C channels. */
static bool dq_weight(const Value *v, int axis, int64_t C, const Tensor **w, const Tensor **ws) {
  if (v->kind != VK_NODE || v->producer->op != OP_DequantizeLinear)
    return false;
  const Node *n = v->producer;
  const Value *q = n->in[0], *s = n->in[1];
  if (q->kind != VK_CONST || q->dt != DT_I8 || s->kind != VK_CONST || s->dt != DT_F32 ||
      ir_attr_int(n, "block_size", 0) != 0)
    return false;
  int64_t ns = s->konst->numel;
  if (ns != 1) {
    int ax;
    if (s->shape.rank != 1 || ns != C || !shape_axis(ir_attr_int(n, "axis", 1), q->shape.rank, &ax) ||
        ax != axis)
      return false;
  }
  if (ir_has_input(n, 2)) {
    const Value *z = n->in[2];
    if (z->kind != VK_CONST || z->dt != DT_I8 || z->konst->numel != ns)
      return false;
    for (int64_t i = 0; i < ns; i++)
      if (tensor_get_i64(z->konst, i) != 0)
        return false;
  }
  for (int64_t i = 0; i < ns; i++) {
    double x = tensor_get_f64(s->konst, i);
    if (!(x > 0) || !isfinite(x))
      return false;
  }
  *w = q->konst;
  *ws = s->konst;
  return true;
}

static float scale_at(const Tensor *t, int64_t c) { return (float)tensor_get_f64(t, t->numel == 1 ? 0 : c); }

/* v = DequantizeLinear(b int32 const [C], scale ~ sx * sw[c], zero point 0). */
static bool dq_bias(const Value *v, int64_t C, float sx, const Tensor *ws, const Tensor **b) {
  if (v->kind != VK_NODE || v->producer->op != OP_DequantizeLinear)
    return false;
  const Node *n = v->producer;
  const Value *q = n->in[0], *s = n->in[1];
  if (q->kind != VK_CONST || q->dt != DT_I32 || q->konst->numel != C || s->kind != VK_CONST ||
      s->dt != DT_F32 || (s->konst->numel != 1 && s->konst->numel != C))
    return false;
  if (ir_has_input(n, 2)) {
    const Value *z = n->in[2];
    if (z->kind != VK_CONST || z->dt != DT_I32)
      return false;
    for (int64_t i = 0; i < z->konst->numel; i++)
      if (tensor_get_i64(z->konst, i) != 0)
        return false;
  }
  for (int64_t c = 0; c < C; c++) {
    double want = (double)(sx * scale_at(ws, c)), got = tensor_get_f64(s->konst, s->konst->numel == 1 ? 0 : c);
    if (fabs(got - want) > 1e-6 * fabs(want))
      return false;
  }
  *b = q->konst;
  return true;
}

/* W element (c, k) of the weight as [C, K]. */
static int32_t w_at(const WInfo *wi, int64_t c, int64_t k) {
  if (wi->perm)
    k = wi->perm[k];
  return (int32_t)tensor_get_i64(wi->w, wi->trans ? k * wi->C + c : c * wi->K + k);
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* AVX2's vpmaddubsw adds the products of two u8 x s8 pairs in 16 bits,
 * saturating: with x up to 255, the pair (a, b) is safe when its positive
 * weights add to at most 128 and its negative ones to at least -128
 * (255 x 128 = 32640). An unsafe pair keeps 128 (or -128) and gives the
 * excess of its larger weight to the residual r, itself a safe pair (the
 * excess is at most half the pair's sum). a + r is the weight unchanged. */
static int32_t pos_sum(int32_t a, int32_t b) { return (a > 0 ? a : 0) + (b > 0 ? b : 0); }
static int32_t neg_sum(int32_t a, int32_t b) { return (a < 0 ? -a : 0) + (b < 0 ? -b : 0); }
static bool pair_safe(int32_t a, int32_t b) { return pos_sum(a, b) <= 128 && neg_sum(a, b) <= 128; }

/* Splits (a, b) into a safe pair and its residual (both returned in place). */
static void split_pair(int32_t *a, int32_t *b, int32_t *ra, int32_t *rb) {
  int32_t pos = pos_sum(*a, *b), neg = neg_sum(*a, *b);
  bool a_big = *a > 0 ? *a >= *b : *a <= *b;
  int32_t *big = a_big ? a : b, *rbig = a_big ? ra : rb;
  *ra = *rb = 0;
  if (pos > 128) {
    *rbig = pos - 128;
    *big -= pos - 128;
  } else if (neg > 128) {
    *rbig = -(neg - 128);
    *big += neg - 128;
  }
}

/* A k and how many of its weights lie beyond 64: most first, then by k. */
typedef struct KHeavy {
  int64_t heavy, k;
} KHeavy;
static int by_heavy(const void *a, const void *b) {
  const KHeavy *x = a, *y = b;
  if (x->heavy != y->heavy)
    return x->heavy > y->heavy ? -1 : 1;
  return x->k < y->k ? -1 : x->k > y->k;
}

/* A k order for split weights with fewer unsafe pairs (split_pair), so fewer
 * residual words: only a weight beyond 64 can make a pair unsafe, so each k
 * with such weights, most first, is paired with the unused k, of up to 64
 * from the light end, that leaves the fewest unsafe channels; the light rest
 * keep their order. perm[i]: the k at place i; NULL when that is the order
 * as is (or out of memory: the order as is, still right). */
static int64_t *pair_order(const WInfo *wi) {
  int64_t C = wi->C, K = wi->K;
  int64_t *perm = malloc((size_t)K * sizeof *perm);
  KHeavy *order = calloc((size_t)K, sizeof *order);
  int32_t *col = malloc((size_t)(C * K) * sizeof *col);
  bool *used = calloc((size_t)K, sizeof *used);
  bool ok = perm && order && col && used;
  int64_t n = 0;
  if (ok) {
    for (int64_t k = 0; k < K; k++) {
      order[k].k = k;
      for (int64_t c = 0; c < C; c++) {
        int32_t w = w_at(wi, c, k);
        col[k * C + c] = w;
        order[k].heavy += w > 64 || w < -64;
      }
    }
    qsort(order, (size_t)K, sizeof *order, by_heavy);
    int64_t light = K - 1;  /* the lightest unused place of order */
    for (int64_t i = 0; i < K && order[i].heavy > 0; i++) {
      int64_t k = order[i].k;
      if (used[k])
        continue;
      used[k] = true;
      perm[n++] = k;
      int64_t best = -1, best_cost = C + 1, seen = 0;
      for (int64_t t = light; t > i && seen < 64 && best_cost > 0; t--) {
        int64_t j = order[t].k;
        if (used[j])
          continue;
        seen++;
        int64_t cost = 0;
        const int32_t *a = col + k * C, *b = col + j * C;
        for (int64_t c = 0; c < C; c++)
          cost += !pair_safe(a[c], b[c]);
        if (cost < best_cost) {
          best_cost = cost;
          best = j;
        }
      }
      if (best >= 0) {
        used[best] = true;
        perm[n++] = best;
      }
      while (light > i && used[order[light].k])
        light--;
    }
    for (int64_t k = 0; k < K; k++)
      if (!used[k])
        perm[n++] = k;
  }
  bool same = true;
  for (int64_t k = 0; ok && same && k < K; k++)
    same = perm[k] == k;
  free(order);
  free(col);
  free(used);
  if (ok && !same)
    return perm;
  free(perm);  /* the order as is (also when out of memory: still right) */
  return NULL;
}

/* Whether a conv of C channels, depth K (Kt in the taps-major order of the
 * transposed form: taps x Cin rounded up to 4), X input bytes and P output
 * pixels costs less with the output channels as the vector lanes
 * (codegen's emit_conv_lanes: tiles of 4 pixels x 64 channels reading an
 * NHWC copy of the input, or a 1x1 conv's interleaved columns; a transposed
 * store) than with the pixels as the lanes (emit_conv_gemm: 8 channels x 32
 * pixels over im2col columns, the last tile of 32 pixels partly wasted).
 * Estimated ns on Zen 4 (AVX-512 VNNI), fitted to ResNet-50's 53 convs timed
 * in both forms (`onnxc profile`; docs/int8.md): the products, the stores,
 * the packing (the copy), the per-tap pointers. Small maps and 3x3 convs go
 * transposed; shallow 1x1 convs on large maps do not. */
static bool lanes_cheaper(int64_t C, int64_t K, int64_t Kt, int64_t taps, int64_t X, int64_t P) {
  double p32 = (double)round_up(P, 32), p4 = (double)round_up(P, 4), k = (double)K;
  double pc = (double)P * (double)C, c16 = (double)round_up(C, 16);
  double pixels_lanes = 0.0054 * p32 * (double)round_up(C, 8) * k + 0.121 * pc + 0.0104 * k * p32;
  bool direct = taps == 1 && X == K * P;  /* 1x1, stride 1, no padding */
  double channels_lanes =
      direct ? 0.00454 * p4 * c16 * k + 0.369 * pc + 0.0104 * k * p32
             : 0.00448 * p4 * c16 * (double)Kt + 0.0623 * pc + 0.268 * (double)X +
                   0.581 * p4 * (double)taps * (double)((C + 63) / 64);
  const char *force = getenv("ONNXC_INT8_LANES");  /* tests: 0 never, 1 always (docs/int8.md) */
  if (force && (*force == '0' || *force == '1'))
    return *force == '1';
  return channels_lanes < pixels_lanes;
}

/* Weight w of channel c at k into the conv GEMM's blocks [C/16][K/64][16][16]
 * (4 int8 per int32, k % 4 in byte k % 4); wt: each block transposed, [K/64][16 groups of 4 k][16
 * channels] (the output channels as the vector lanes, attribute wt). */
static void put_panel(uint32_t *wq, int64_t nch, int64_t c, int64_t k, int32_t w, bool wt) {
  int64_t in = wt ? (k % QINT_KC) / 4 * QINT_CB + c % QINT_CB : (c % QINT_CB) * (QINT_KC / 4) + (k % QINT_KC) / 4;
  wq[((c / QINT_CB) * nch + k / QINT_KC) * (QINT_CB * QINT_KC / 4) + in] |= ((uint32_t)w & 0xffu)
                                                                           << (8 * (k % 4));
}

/* The residual table of split weights (conv GEMM, Target.int8_pairs16): int32
 * [Cp + 1 offsets][pairs (k4 group, 4 int8 word)], Cp = C rounded up to 8;
 * row c's words (k 4j..4j+3 of channel c) lie from table[c] to table[c + 1]
 * (absolute indices, 2 per entry); rows past C have none. res[c * K4 + j]:
 * each word, 0 where nothing is left over. */
static Value *residual_table(Graph *g, const char *name, const uint32_t *res, int64_t C, int64_t K4,
                             Diag *d) {
  int64_t Cp = round_up(C, 8), n = 0;
  for (int64_t i = 0; i < C * K4; i++)
    n += res[i] != 0;
  int64_t len = Cp + 1 + 2 * n;
  Value *v = new_const(g, name, DT_I32, 1, &len, d);
  if (!v)
    return NULL;
  int32_t *t = v->konst->data;
  int64_t at = Cp + 1;
  for (int64_t c = 0; c < Cp; c++) {
    t[c] = (int32_t)at;
    for (int64_t j = 0; c < C && j < K4; j++)
      if (res[c * K4 + j]) {
        t[at++] = (int32_t)j;
        t[at++] = (int32_t)res[c * K4 + j];
      }
  }
  t[Cp] = (int32_t)at;
  return v;
}

/* Builds the QIntConv for `op` (Conv, Gemm or MatMul) when its group matches;
 * split: the conv GEMM's weights as a saturation-free part and a residual
 * table (split_pair, residual_table). */
static bool fuse_linear(Graph *g, Node *op, bool split, bool lanes, bool *done, Diag *d) {
  *done = false;
  QParam x, y;
  if (!dq_u8(op->in[0], &x))
    return true;
  const Shape *xs = &op->in[0]->shape, *wsh = &op->in[1]->shape;
  WInfo wi = {0};
  bool depthwise = false, gemm = false;
  int waxis = 0;
  if (op->op == OP_Conv) {
    int64_t group = ir_attr_int(op, "group", 1);
    if (xs->rank != 4 || wsh->rank != 4 || !shape_is_static(wsh))
      return true;
    wi.C = wsh->d[0];
    if (group == 1) {
      wi.K = wsh->d[1] * wsh->d[2] * wsh->d[3];
    } else if (group == xs->d[1] && group == wi.C && wsh->d[1] == 1) {
      depthwise = true;
      wi.K = wsh->d[2] * wsh->d[3];
    } else {
      return true;
    }
  } else if (op->op == OP_Gemm) {
    if (ir_attr_int(op, "transA", 0) || ir_attr_float(op, "alpha", 1.0f) != 1.0f ||
        (ir_has_input(op, 2) && ir_attr_float(op, "beta", 1.0f) != 1.0f) || wsh->rank != 2 ||
        xs->rank != 2)
      return true;
    gemm = true;
    wi.trans = !ir_attr_int(op, "transB", 0);
    wi.C = wi.trans ? wsh->d[1] : wsh->d[0];
    wi.K = wi.trans ? wsh->d[0] : wsh->d[1];
    waxis = wi.trans ? 1 : 0;
  } else {  /* MatMul with a [K, N] weight */
    if (wsh->rank != 2 || xs->rank < 2)
      return true;
    gemm = true;
    wi.trans = true;
    wi.C = wsh->d[1];
    wi.K = wsh->d[0];
    waxis = 1;
  }
  if (!dq_weight(op->in[1], waxis, wi.C, &wi.w, &wi.ws))
    return true;
  const Tensor *bias = NULL;
  if (op->op != OP_MatMul && ir_has_input(op, 2) && !dq_bias(op->in[2], wi.C, x.s, wi.ws, &bias))
    return true;
  int32_t lo, hi;
  Node *chain[2];
  int n_chain;
  if (!q_chain(op->out[0], &y, &lo, &hi, chain, &n_chain))
    return true;

  for (int64_t c = 0; c < wi.C; c++) {  /* the folded bias must fit int32 */
    int64_t sum = 0;
    for (int64_t k = 0; k < wi.K; k++)
      sum += w_at(&wi, c, k);
    int64_t b = (bias ? tensor_get_i64(bias, c) : 0) - (int64_t)x.z * sum;
    if (b < INT32_MIN || b > INT32_MAX)
      return true;
  }
  /* W': depthwise and gemm keep [C, K]; the conv GEMM's blocks are
   * [C/16][K/64][16 channels][64 k] (rows past C and k past K zero). With wt
   * (the output channels as the lanes, read from an NHWC copy of the input)
   * the depth is ordered tap by tap, each tap's input channels padded to a
   * multiple of 4: k' = tap * Cin4 + ci, K' = taps * Cin4. */
  bool panels = !depthwise && !gemm;
  int64_t taps = panels ? wsh->d[2] * wsh->d[3] : 1, cin4 = panels ? round_up(wsh->d[1], 4) : 0;
  bool wt = panels && !split && lanes && op->out[0]->shape.rank == 4 && shape_is_static(&op->out[0]->shape) &&
            lanes_cheaper(wi.C, wi.K, taps * cin4, taps, xs->d[1] * xs->d[2] * xs->d[3],
                          op->out[0]->shape.d[2] * op->out[0]->shape.d[3]);
  /* a product (mode 1) with the lanes: W' as [C/16][K/4][16] int32 of 4 k (emit_gemm_lanes) */
  bool gt = gemm && lanes;
  int64_t kd = wt ? taps * cin4 : wi.K;  /* the packed depth */
  int64_t nch = round_up(kd, QINT_KC) / QINT_KC, Cp = round_up(wi.C, QINT_CB);
  int64_t wdims[2] = {panels ? Cp / QINT_CB * nch : gt ? Cp / QINT_CB * round_up(wi.K, 4) / 4 : wi.C,
                      panels ? QINT_CB * QINT_KC / 4 : gt ? QINT_CB : wi.K};
  Value *wv = new_const(g, arena_printf(g->arena, "%s_qw", op->name), panels || gt ? DT_I32 : DT_I8,
                        2, wdims, d);
  Value *bv = new_const(g, arena_printf(g->arena, "%s_qb", op->name), DT_I32, 1, &wi.C, d);
  Value *mv = new_const(g, arena_printf(g->arena, "%s_qm", op->name), DT_F32, 1, &wi.C, d);
  if (!wv || !bv || !mv)
    return false;
  int8_t *wp = wv->konst->data;
  uint32_t *wq = wv->konst->data;  /* panels: 4 int8 per int32, k % 4 in byte k % 4 */
  int32_t *bp = bv->konst->data;
  float *mp = mv->konst->data;
  int64_t K4 = round_up(wi.K, 4) / 4;
  /* (the residual table's int32 offsets must reach its end) */
  split = split && panels && wi.C * K4 * 2 + round_up(wi.C, 8) < INT32_MAX;
  int64_t *perm = split ? pair_order(&wi) : NULL;
  wi.perm = perm;
  uint32_t *res = split ? calloc((size_t)(wi.C * K4), sizeof *res) : NULL;
  if (split && !res) {
    free(perm);
    return diag_error(d, op, "out of memory");
  }
  for (int64_t c = 0; c < wi.C; c++) {
    int64_t sum = 0;
    for (int64_t k = 0; k < wi.K; k++) {
      int32_t w = w_at(&wi, c, k);
      sum += w;
      if (gt) {
        wq[((c / QINT_CB) * (round_up(wi.K, 4) / 4) + k / 4) * QINT_CB + c % QINT_CB] |= ((uint32_t)w & 0xffu)
                                                                                    << (8 * (k % 4));
      } else if (!panels) {
        wp[c * wi.K + k] = (int8_t)w;
      } else if (split && k % 2 == 0 && k + 1 < wi.K) { /* the pair (k, k + 1) */
        int32_t w1 = w_at(&wi, c, k + 1), r0, r1;
        sum += w1;
        split_pair(&w, &w1, &r0, &r1);
        res[c * K4 + k / 4] |= (((uint32_t)r0 & 0xffu) | ((uint32_t)r1 & 0xffu) << 8) << (8 * (k % 4));
        put_panel(wq, nch, c, k, w, wt);
        put_panel(wq, nch, c, ++k, w1, wt);
      } else {
        put_panel(wq, nch, c, wt ? k % taps * cin4 + k / taps : k, w, wt);
      }
    }
    bp[c] = (int32_t)((bias ? tensor_get_i64(bias, c) : 0) - (int64_t)x.z * sum);
    float m = x.s * scale_at(wi.ws, c);
    mp[c] = m / y.s;
  }
  wi.perm = NULL;
  Value *rt = NULL;
  if (split) {
    rt = residual_table(g, arena_printf(g->arena, "%s_qr", op->name), res, wi.C, K4, d);
    free(res);
    if (!rt) {
      free(perm);
      return false;
    }
  }
  Value *in[6] = {x.v, wv, bv, mv, NULL, rt};
  Node *nn = ir_node_insert(g, chain[n_chain - 1], OP_QIntConv, "QIntConv", op->name, split ? 6 : 4, in, 1);
  nn->domain = "onnxc";
  for (int i = 0; i < op->n_attrs; i++)
    if (op->op == OP_Conv)
      *ir_attr_add(nn, op->attrs[i].name, op->attrs[i].kind) = op->attrs[i];
  if (op->op == OP_Conv && !ir_attr(nn, "kernel_shape"))
    ir_attr_set_ints(nn, "kernel_shape", &wsh->d[2], 2);
  if (perm) {  /* the columns' k order (the emitter's im2col rows) */
    ir_attr_set_ints(nn, "kperm", perm, (int)wi.K);
    free(perm);
  }
  ir_attr_set_int(nn, "mode", depthwise ? 2 : gemm ? 1 : 0);
  if (wt) {
    ir_attr_set_int(nn, "wt", 1);
    ir_attr_set_int(nn, "kdim_t", kd);
  }
  if (gt)
    ir_attr_set_int(nn, "wt", 1);
  ir_attr_set_int(nn, "cout", wi.C);
  ir_attr_set_int(nn, "kdim", wi.K);
  ir_attr_set_int(nn, "x_zero_point", x.z);
  ir_attr_set_int(nn, "y_zero_point", y.z);
  ir_attr_set_int(nn, "lo", lo);
  ir_attr_set_int(nn, "hi", hi);
  const Shape *ys = &chain[n_chain - 1]->out[0]->shape;
  ir_attr_set_ints(nn, "yshape", ys->d, ys->rank);
  replace_group(op, chain, n_chain, nn);
  *done = true;
  return true;
}

/* ---- Add, GlobalAveragePool, ops that keep the parameters, Concat -------------- */

static void set_float(Node *n, const char *name, float v) {
  Attr *a = ir_attr_add(n, name, AT_FLOAT);
  a->u.f = v;
}

static bool fuse_add(Graph *g, Node *op, bool *done) {
  *done = false;
  QParam a, b, y;
  int32_t lo, hi;
  Node *chain[2];
  int n_chain;
  if (!dq_u8(op->in[0], &a) || !dq_u8(op->in[1], &b) ||
      !shape_equal(&op->in[0]->shape, &op->in[1]->shape) || !shape_is_static(&op->in[0]->shape) ||
      !q_chain(op->out[0], &y, &lo, &hi, chain, &n_chain))
    return true;
  Value *in[2] = {a.v, b.v};
  Node *nn = ir_node_insert(g, chain[n_chain - 1], OP_QIntAdd, "QIntAdd", op->name, 2, in, 1);
  nn->domain = "onnxc";
  float ra = a.s / y.s, rb = b.s / y.s;
  /* ORT's x86 build contracts ra * za + rb * zb into one fma (its AVX2 QLinearAdd
   * kernel's fixed part): one rounding fewer than two products and a sum, which
   * moved one element of random seed 74 by a quantum */
  float tb = rb * (float)b.z;
  set_float(nn, "a_ratio", ra);
  set_float(nn, "b_ratio", rb);
  set_float(nn, "fixed", (float)y.z - fmaf(ra, (float)a.z, tb));
  ir_attr_set_int(nn, "lo", lo);
  ir_attr_set_int(nn, "hi", hi);
  replace_group(op, chain, n_chain, nn);
  *done = true;
  return true;
}

static bool fuse_gap(Graph *g, Node *op, bool *done) {
  *done = false;
  QParam x, y;
  int32_t lo, hi;
  Node *chain[2];
  int n_chain;
  const Shape *xs = &op->in[0]->shape;
  if (!dq_u8(op->in[0], &x) || xs->rank < 3 || !shape_is_static(xs) ||
      !q_chain(op->out[0], &y, &lo, &hi, chain, &n_chain))
    return true;
  int64_t hw = 1;
  for (int i = 2; i < xs->rank; i++)
    hw *= xs->d[i];
  if (hw <= 0 || hw >= (1 << 23))
    return true;
  Value *in[1] = {x.v};
  Node *nn = ir_node_insert(g, chain[n_chain - 1], OP_QIntGlobalAvgPool, "QIntGlobalAvgPool",
                            op->name, 1, in, 1);
  nn->domain = "onnxc";
  set_float(nn, "mult", x.s / (y.s * (float)hw));
  ir_attr_set_int(nn, "bias", -(int64_t)x.z * hw);
  ir_attr_set_int(nn, "y_zero_point", y.z);
  ir_attr_set_int(nn, "lo", lo);
  ir_attr_set_int(nn, "hi", hi);
  replace_group(op, chain, n_chain, nn);
  *done = true;
  return true;
}

/* MaxPool and movement ops commute with DQ/Q of one set of parameters. */
static bool fuse_passthrough(Node *op, bool *done) {
  *done = false;
  QParam x, y;
  if (op->n_out < 1 || !dq_u8(op->in[0], &x) || !q_u8(sole_user(op->out[0]), &y) ||
      !same_param(&x, &y))
    return true;
  if (op->op == OP_MaxPool && (op->n_out > 1 && op->out[1]->kind != VK_NONE))
    return true;
  Node *q = sole_user(op->out[0]);
  ir_node_set_input(op, 0, x.v);
  op->out[0]->dt = DT_U8;
  ir_value_replace(q->out[0], op->out[0]);
  ir_node_remove(q);
  *done = true;
  return true;
}

static bool fuse_concat(Graph *g, Node *op, bool *done, Diag *d) {
  *done = false;
  QParam y;
  if (!q_u8(sole_user(op->out[0]), &y))
    return true;
  QParam xs[64];
  if (op->n_in > 64)
    return true;
  for (int i = 0; i < op->n_in; i++)
    if (!dq_u8(op->in[i], &xs[i]))
      return true;
  Node *q = sole_user(op->out[0]);
  for (int i = 0; i < op->n_in; i++) {
    Value *src = xs[i].v;
    if (!same_param(&xs[i], &y)) {
      int64_t n256 = 256;
      Value *tv = new_const(g, arena_printf(g->arena, "%s_lut%d", op->name, i), DT_U8, 1, &n256, d);
      if (!tv)
        return false;
      uint8_t *t = tv->konst->data;
      for (int v = 0; v < 256; v++)
        t[v] = (uint8_t)quantize((float)(v - xs[i].z) * xs[i].s, &y);
      Value *in[2] = {src, tv};
      Node *ln = ir_node_insert(g, op, OP_QIntLut, "QIntLut",
                                arena_printf(g->arena, "%s_requant%d", op->name, i), 2, in, 1);
      ln->domain = "onnxc";
      ln->out[0]->dt = DT_U8;
      ln->out[0]->shape = src->shape;
      src = ln->out[0];
    }
    ir_node_set_input(op, i, src);
  }
  op->out[0]->dt = DT_U8;
  ir_value_replace(q->out[0], op->out[0]);
  ir_node_remove(q);
  *done = true;
  return true;
}

/* A QIntAdd one of whose operands is a conv GEMM's output that nothing else
 * reads: the add moves into that QIntConv's store (a fifth input, the other
 * operand; res_* attributes, the QIntAdd's constants), computed exactly as
 * QIntAdd computes it from the conv's requantized byte, so the results do not
 * change. Of two such convs, the later one in node order takes it (the other
 * operand must exist when the conv runs). pos: each node's place in the list. */
/* The only reader of v other than nodes whose outputs nobody reads (the DQs
 * that the groups above left for dce), when v is no graph output; else NULL. */
static Node *sole_live_user(const Value *v) {
  Node *u = NULL;
  if (v->is_output)
    return NULL;
  for (int i = 0; i < v->n_uses; i++) {
    Node *n = v->uses[i];
    bool dead = n->op == OP_DequantizeLinear && n->out[0]->n_uses == 0 && !n->out[0]->is_output;
    if (dead)
      continue;
    if (u && u != n)
      return NULL;
    u = n;
  }
  return u;
}

static void fuse_residual(Node *add, const int64_t *pos) {
  Node *best = NULL;
  int bj = 0;
  for (int j = 0; j < 2; j++) {
    Value *v = add->in[j], *o = add->in[1 - j];
    if (v->kind != VK_NODE || v == o)
      continue;
    Node *c = v->producer;
    if (c->op != OP_QIntConv || ir_attr_int(c, "mode", 0) != 0 || ir_has_input(c, 4) || sole_live_user(v) != add ||
        !shape_is_static(&v->shape))
      continue;
    if (o->kind == VK_NODE && pos[o->producer->id] > pos[c->id])
      continue;
    if (!best || pos[c->id] > pos[best->id]) {
      best = c;
      bj = j;
    }
  }
  if (!best)
    return;
  if (best->n_in > 4)  /* the slot before the residual table of split weights */
    ir_node_set_input(best, 4, add->in[1 - bj]);
  else
    ir_node_add_input(best, add->in[1 - bj]);
  set_float(best, "res_a_ratio", ir_attr_float(add, "a_ratio", 1));
  set_float(best, "res_b_ratio", ir_attr_float(add, "b_ratio", 1));
  set_float(best, "res_fixed", ir_attr_float(add, "fixed", 0));
  ir_attr_set_int(best, "res_lo", ir_attr_int(add, "lo", 0));
  ir_attr_set_int(best, "res_hi", ir_attr_int(add, "hi", 255));
  ir_attr_set_int(best, "res_conv_a", bj == 0);
  ir_value_replace(add->out[0], best->out[0]);
  ir_node_remove(add);
}

bool pass_fuse_quant(Graph *g, bool split, bool lanes, Diag *d) {
  Node *next;
  for (Node *n = g->first; n; n = next) {
    next = n->next;
    bool done = false, ok = true;
    switch (n->op) {
    case OP_Conv:
    case OP_Gemm:
    case OP_MatMul:
      ok = fuse_linear(g, n, split, lanes, &done, d);
      break;
    case OP_Add:
      ok = fuse_add(g, n, &done);
      break;
    case OP_GlobalAveragePool:
      ok = fuse_gap(g, n, &done);
      break;
    case OP_MaxPool:
    case OP_Reshape:
    case OP_Flatten:
    case OP_Squeeze:
    case OP_Unsqueeze:
    case OP_Transpose:
      ok = fuse_passthrough(n, &done);
      break;
    case OP_Concat:
      ok = fuse_concat(g, n, &done, d);
      break;
    default:
      break;
    }
    if (!ok)
      return false;
    if (done)  /* the nodes after n may have gone: rescan (groups are few) */
      next = g->first;
  }
  int64_t nid = 0, i = 0;
  for (Node *n = g->first; n; n = n->next)
    nid = n->id >= nid ? n->id + 1 : nid;
  int64_t *pos = arena_alloc(g->arena, (size_t)(nid > 0 ? nid : 1) * sizeof *pos);
  if (!pos)
    return diag_error(d, NULL, "out of memory");
  for (Node *n = g->first; n; n = n->next)
    pos[n->id] = i++;
  for (Node *n = g->first; n; n = next) {
    next = n->next;
    if (n->op == OP_QIntAdd)
      fuse_residual(n, pos);
  }
  return true;
}

/* ---- inference of the internal ops ----------------------------------------------- */

static bool u8_in(Node *n, int i, Diag *d) {
  if (n->in[i]->dt != DT_U8)
    return diag_error(d, n, "internal: input %d of %s must be uint8", i, n->op_type);
  return true;
}

bool infer_QIntConv(Node *n, Diag *d) {
  int r;
  const int64_t *ys = ir_attr_ints(n, "yshape", &r);
  if (!u8_in(n, 0, d))
    return false;
  if (!ys || r < 1 || r > IR_MAX_RANK ||
      (n->in[1]->dt != DT_I8 && n->in[1]->dt != DT_I32) || n->in[2]->dt != DT_I32 ||
      n->in[3]->dt != DT_F32)
    return diag_error(d, n, "internal: malformed QIntConv");
  n->out[0]->dt = DT_U8;
  n->out[0]->shape = shape_make(r, ys);
  if (ir_has_input(n, 4) && (!u8_in(n, 4, d) || !shape_equal(&n->in[4]->shape, &n->out[0]->shape)))
    return diag_error(d, n, "internal: QIntConv residual must be uint8 of the output's shape");
  if (ir_has_input(n, 5) && (n->in[5]->dt != DT_I32 || n->in[5]->shape.rank != 1 || !n->in[5]->konst ||
                             ir_attr_int(n, "mode", 0) != 0))
    return diag_error(d, n, "internal: QIntConv's residual weights must be an int32 table (conv GEMM)");
  return true;
}

bool infer_QIntAdd(Node *n, Diag *d) {
  if (!u8_in(n, 0, d) || !u8_in(n, 1, d))
    return false;
  if (!shape_equal(&n->in[0]->shape, &n->in[1]->shape))
    return diag_error(d, n, "internal: QIntAdd operands differ in shape");
  n->out[0]->dt = DT_U8;
  n->out[0]->shape = n->in[0]->shape;
  return true;
}

bool infer_QIntGlobalAvgPool(Node *n, Diag *d) {
  if (!u8_in(n, 0, d))
    return false;
  Shape s = n->in[0]->shape;
  if (s.rank < 3)
    return diag_error(d, n, "internal: QIntGlobalAvgPool needs rank >= 3");
  for (int i = 2; i < s.rank; i++) {
    s.d[i] = 1;
    s.sym[i] = NULL;
    s.x[i] = NULL;
  }
  n->out[0]->dt = DT_U8;
  n->out[0]->shape = s;
  return true;
}

bool infer_QIntLut(Node *n, Diag *d) {
  if (!u8_in(n, 0, d) || !u8_in(n, 1, d))
    return false;
  if (n->in[1]->kind != VK_CONST || n->in[1]->konst->numel != 256)
    return diag_error(d, n, "internal: QIntLut needs a constant table of 256 entries");
  n->out[0]->dt = DT_U8;
  n->out[0]->shape = n->in[0]->shape;
  return true;
}
