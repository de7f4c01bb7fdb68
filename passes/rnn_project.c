/* rnn_project.c - the input projection of RNN/GRU/LSTM taken out of the time loop.
 *
 * requires: inferred shapes.
 * provides: a float32 RNN, GRU or LSTM (layout 0) with a constant W
 *   [D, G*H, I] of at least 32 KB, a constant B or none, a static input size
 *   I and more than one row of input (sequence x batch, at its upper bound
 *   under -D ranges)
 *   reads, instead of X, the product P = X W^T + Wb of every time step at
 *   once: a MatMul of X [S, B, I] by the constant W^T [I, D*G*H] (the
 *   directions side by side), plus the W half of the bias, [D*G*H], as an
 *   Add that fuse-epilogue folds into the product. The node keeps R, the R
 *   half of B and its other inputs, drops W, and carries onnxc.xproj = 1:
 *   its gate rows start from P[t, b, d*G*H + j] (codegen/emit_rnn.c). Per
 *   step, only R h is left, a matrix-vector product; the W x_t products that
 *   reread W at every step (8 MB per direction for ddddocr's 512-wide
 *   bidirectional LSTM) become one packed GEMM over all steps. The sums are
 *   the same terms in another order (the float32 tolerance covers it).
 * invalidates: schedule positions.
 *
 * pass_rnn_transpose_r (the C target): R stored transposed for small hidden
 * sizes, see below.
 */
#include "passes.h"

#include <string.h>

/* Weights (floats, all directions) from which the products are hoisted: 32 KB. */
#define RNN_PROJECT_MIN_W 8192

/* The rows of input (S * B) at their upper bound; -1 when unknown. */
static int64_t rows_hi(const Graph *g, const Shape *xs) {
  int64_t rows = 1;
  for (int i = 0; i < 2; i++) {
    int64_t lo, hi = xs->d[i];
    if (hi < 0 && (!xs->x[i] || !dx_bounds(g, xs->x[i], &lo, &hi)))
      return -1;
    rows *= hi;
  }
  return rows;
}

static bool qualifies(const Graph *g, const Node *n) {
  if ((n->op != OP_RNN && n->op != OP_GRU && n->op != OP_LSTM) || ir_attr(n, "onnxc.xproj"))
    return false;
  if (n->g->opset >= 14 && ir_attr_int(n, "layout", 0) != 0)
    return false;
  const Value *x = n->in[0], *w = n->in[1];
  if (x->dt != DT_F32 || x->shape.rank != 3 || x->shape.d[2] < 1)
    return false;
  if (!w->konst || w->dt != DT_F32 || !shape_is_static(&w->shape) || w->shape.rank != 3 ||
      w->shape.d[2] != x->shape.d[2])
    return false;
  if (ir_has_input(n, 3) && (!n->in[3]->konst || n->in[3]->dt != DT_F32 || !shape_is_static(&n->in[3]->shape)))
    return false;
  const Shape *rs = &n->in[2]->shape;
  if (rs->rank != 3 || rs->d[2] < 1 || w->shape.d[1] != rnn_gates(n) * rs->d[2] || w->shape.d[0] != rs->d[0])
    return false;
  /* a small W (a keyword spotter's GRU) stays in the L1/L2 between steps:
   * the hoisted products would gain little and cost S x B x D*G*H floats of
   * arena, which firmware counts */
  if (w->shape.d[0] * w->shape.d[1] * w->shape.d[2] < RNN_PROJECT_MIN_W)
    return false;
  int64_t rows = rows_hi(g, &x->shape);
  return rows >= 2;
}

static void project(Graph *g, Node *n) {
  const Value *x = n->in[0], *w = n->in[1];
  int64_t nd = w->shape.d[0], gh = w->shape.d[1], in = w->shape.d[2], cols = nd * gh;
  /* W^T: [I, D*G*H], column d*G*H + j is row j of direction d */
  int64_t wt_dims[2] = {in, cols};
  Shape wts = shape_make(2, wt_dims);
  Tensor *wt = ir_tensor_new(g, DT_F32, &wts, NULL);
  const float *wd = w->konst->data;
  float *td = wt->data;
  for (int64_t d = 0; d < nd; d++)
    for (int64_t j = 0; j < gh; j++)
      for (int64_t k = 0; k < in; k++)
        td[k * cols + d * gh + j] = wd[(d * gh + j) * in + k];
  Value *mm_in[2] = {n->in[0], ir_const_new(g, arena_printf(g->arena, "%s_WT", n->name), wt)};
  const char *pname = arena_printf(g->arena, "%s_xproj", n->name);
  Node *mm = ir_node_insert_named(g, n, OP_MatMul, "MatMul", arena_printf(g->arena, "%s_xproj", n->name), 2,
                                  mm_in, 1, &pname);
  Shape ps = x->shape;
  ps.d[2] = cols, ps.sym[2] = NULL, ps.x[2] = NULL;
  mm->out[0]->dt = DT_F32;
  mm->out[0]->shape = ps;
  Value *p = mm->out[0];
  if (ir_has_input(n, 3)) {   /* Wb of each direction: B[d, 0 : G*H] */
    Shape bs = shape_make(1, &cols);
    Tensor *bt = ir_tensor_new(g, DT_F32, &bs, NULL);
    const float *bd = n->in[3]->konst->data;
    for (int64_t d = 0; d < nd; d++)
      memcpy((float *)bt->data + d * gh, bd + d * 2 * gh, (size_t)gh * sizeof(float));
    Value *add_in[2] = {p, ir_const_new(g, arena_printf(g->arena, "%s_Wb", n->name), bt)};
    const char *aname = arena_printf(g->arena, "%s_xproj_b", n->name);
    Node *add = ir_node_insert_named(g, n, OP_Add, "Add", aname, 2, add_in, 1, &aname);
    add->out[0]->dt = DT_F32;
    add->out[0]->shape = ps;
    p = add->out[0];
  }
  if (!ir_attr(n, "hidden_size"))
    ir_attr_set_int(n, "hidden_size", n->in[2]->shape.d[2]);
  ir_node_set_input(n, 0, p);
  ir_node_set_input(n, 1, NULL);
  ir_attr_set_int(n, "onnxc.xproj", 1);
}

/* Hidden sizes up to this take R transposed (pass_rnn_transpose_r): Baidu
 * LAC's 128-wide GRUs 0.57 -> 0.36 ms; past it (ddddocr's 512) the row dot
 * products read R with one load per multiply-add, the axpys with three. */
#define RNN_RT_MAX_HID 128

/* R h as axpys: with a small hidden size (madmom's 25-wide LSTMs, keyword
 * spotters' GRUs) the step's products are too short for the per-row dot
 * products of codegen/emit_rnn.c, whose lane sums cost as much as the
 * multiplies; over R^T [D, H, G*H] the step adds h[k] times row k to every
 * gate at once, in contiguous vectors. The node reads R^T in R's slot and
 * carries onnxc.rt = 1 (and hidden_size); infer_rnn.c checks that shape.
 * A W left in the step (no projection) is stored the same way, W^T
 * [D, I, G*H] with onnxc.wt = 1. */
bool pass_rnn_transpose_r(Graph *g, Diag *d) {
  for (Node *n = g->first; n; n = n->next) {
    if ((n->op != OP_RNN && n->op != OP_GRU && n->op != OP_LSTM) || ir_attr(n, "onnxc.rt"))
      continue;
    const Value *rv = n->in[2];
    const Shape *rs = &rv->shape;
    if (!rv->konst || rv->dt != DT_F32 || n->in[0]->dt != DT_F32 || rs->rank != 3 || !shape_is_static(rs) ||
        rs->d[2] < 1 || rs->d[2] > RNN_RT_MAX_HID || rs->d[1] != rnn_gates(n) * rs->d[2])
      continue;
    int64_t nd = rs->d[0], gh = rs->d[1], hid = rs->d[2];
    int64_t dims[3] = {nd, hid, gh};
    Shape ts = shape_make(3, dims);
    Tensor *t = ir_tensor_new(g, DT_F32, &ts, d);
    if (!t)
      return false;
    const float *src = rv->konst->data;
    float *dst = t->data;
    for (int64_t dd = 0; dd < nd; dd++)
      for (int64_t j = 0; j < gh; j++)
        for (int64_t k = 0; k < hid; k++)
          dst[(dd * hid + k) * gh + j] = src[(dd * gh + j) * hid + k];
    if (!ir_attr(n, "hidden_size"))
      ir_attr_set_int(n, "hidden_size", hid);
    ir_node_set_input(n, 2, ir_const_new(g, arena_printf(g->arena, "%s_RT", n->name), t));
    ir_attr_set_int(n, "onnxc.rt", 1);
    /* W x_t the same way when it stays in the step (no projection) */
    const Value *wv = n->in[1];
    if (ir_attr(n, "onnxc.xproj") || !wv->konst || wv->dt != DT_F32 || wv->shape.rank != 3 ||
        !shape_is_static(&wv->shape) || wv->shape.d[1] != gh || wv->shape.d[0] != nd)
      continue;
    int64_t in = wv->shape.d[2], wdims[3] = {nd, in, gh};
    Shape wts = shape_make(3, wdims);
    Tensor *wt = ir_tensor_new(g, DT_F32, &wts, d);
    if (!wt)
      return false;
    const float *ws = wv->konst->data;
    float *wd = wt->data;
    for (int64_t dd = 0; dd < nd; dd++)
      for (int64_t j = 0; j < gh; j++)
        for (int64_t k = 0; k < in; k++)
          wd[(dd * in + k) * gh + j] = ws[(dd * gh + j) * in + k];
    ir_node_set_input(n, 1, ir_const_new(g, arena_printf(g->arena, "%s_WT", n->name), wt));
    ir_attr_set_int(n, "onnxc.wt", 1);
  }
  return true;
}

bool pass_rnn_project(Graph *g, Diag *d) {
  (void)d;
  for (Node *n = g->first; n; n = n->next)
    if (qualifies(g, n))
      project(g, n);
  return true;
}
