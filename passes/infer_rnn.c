/* infer_rnn.c - shape inference of the recurrent ops RNN, GRU and LSTM (opsj).
 *
 * With G gates (RNN 1, GRU 3, LSTM 4), D directions (2 when bidirectional)
 * and H = hidden_size, the inputs are X [S,B,I], W [D,G*H,I], R [D,G*H,H],
 * B [D,2*G*H], sequence_lens [B], initial_h and initial_c [D,B,H] and the
 * LSTM peepholes P [D,3*H]; the outputs Y [S,D,B,H], Y_h and Y_c [D,B,H].
 * layout 1 (opset 14) puts the batch first: X [B,S,I], Y [B,S,D,H], the
 * states [B,D,H]. Every output is optional. The kernels keep their state in
 * scratch memory (rnn_scratch_bytes, codegen/emit_rnn.c). Reference: the ONNX operator docs.
 */
#include "passes.h"

#include <string.h>

/* Gates of an op and the activation functions it applies per direction. */
int rnn_gates(const Node *n) { return n->op == OP_LSTM ? 4 : n->op == OP_GRU ? 3 : 1; }
static int acts_of(const Node *n) { return n->op == OP_LSTM ? 3 : n->op == OP_GRU ? 2 : 1; }

static bool is_rnn_dtype(DType t) {
  return t == DT_F32 || t == DT_F64 || t == DT_F16 || t == DT_BF16;
}

/* Case-insensitive equality of ASCII names. */
static bool name_eq(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
    char y = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;
    if (x != y)
      return false;
  }
  return *a == *b;
}

static bool known_activation(const char *s) {
  static const char *const names[] = {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu",
                                      "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu",
                                      "Softsign", "Softplus"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (name_eq(s, names[i]))
      return true;
  return false;
}

/* Directions of the node (1 or 2); 0 after an error. */
static int directions(Node *n, Diag *d) {
  const char *dir = ir_attr_str(n, "direction", "forward");
  if (!strcmp(dir, "forward") || !strcmp(dir, "reverse"))
    return 1;
  if (!strcmp(dir, "bidirectional"))
    return 2;
  (void)infer_fail(d, n, "direction '%s' is not forward, reverse or bidirectional", dir);
  return 0;
}

/* Checks input `slot` (when present) against the expected dims; DIM_UNKNOWN
 * entries of `want` are not checked. */
static bool want_dims(Node *n, Diag *d, int slot, const char *what, int rank, const int64_t *want) {
  if (!ir_has_input(n, slot))
    return true;
  const Shape *s = &n->in[slot]->shape;
  if (s->rank < 0)
    return true;
  if (s->rank != rank)
    return infer_fail(d, n, "input %d (%s) has rank %d, expected %d", slot, what, s->rank, rank);
  for (int i = 0; i < rank; i++)
    if (want[i] >= 0 && s->d[i] >= 0 && s->d[i] != want[i])
      return infer_fail(d, n, "input %d (%s) dim %d is %lld, expected %lld", slot, what, i,
                        (long long)s->d[i], (long long)want[i]);
  return true;
}

static bool check_attrs(Node *n, Diag *d, int nd) {
  const Attr *a = ir_attr(n, "activations");
  if (a) {
    if (a->kind != AT_STRINGS)
      return infer_fail(d, n, "attribute 'activations' must be a list of strings");
    if (a->n != acts_of(n) * nd)
      return infer_fail(d, n, "attribute 'activations' has %d entries, expected %d", a->n,
                        acts_of(n) * nd);
    for (int i = 0; i < a->n; i++)
      if (!known_activation(a->u.ss[i]))
        return infer_fail(d, n, "activation '%s' is not supported", a->u.ss[i]);
  }
  const Attr *clip = ir_attr(n, "clip");
  if (clip && (clip->kind != AT_FLOAT || !(clip->u.f > 0)))
    return infer_fail(d, n, "attribute 'clip' must be a positive float");
  int64_t layout = n->g->opset >= 14 ? ir_attr_int(n, "layout", 0) : 0;
  if (layout != 0 && layout != 1)
    return infer_fail(d, n, "layout is %lld, expected 0 or 1", (long long)layout);
  if (n->op == OP_LSTM) {
    int64_t f = ir_attr_int(n, "input_forget", 0);
    if (f != 0 && f != 1)
      return infer_fail(d, n, "input_forget is %lld, expected 0 or 1", (long long)f);
  }
  return true;
}

/* The state shape [D,B,H] (layout 1: [B,D,H]). */
static Shape state_shape(int64_t nd, int64_t batch, const char *bsym, const DimExpr *bx, int64_t hid,
                         bool bfirst) {
  Shape s = shape_unknown();
  s.rank = 3;
  s.d[bfirst ? 0 : 1] = batch;
  s.sym[bfirst ? 0 : 1] = batch >= 0 ? NULL : bsym;
  s.x[bfirst ? 0 : 1] = batch >= 0 ? NULL : bx;
  s.d[bfirst ? 1 : 0] = nd;
  s.sym[bfirst ? 1 : 0] = NULL, s.x[bfirst ? 1 : 0] = NULL;
  s.d[2] = hid;
  s.sym[2] = NULL, s.x[2] = NULL;
  return s;
}

static bool infer_recurrent(Node *n, Diag *d) {
  const Value *x = n->in[0];
  if (!is_rnn_dtype(x->dt))
    return infer_fail(d, n, "input 0 has element type %s, expected f16, bf16, f32 or f64",
                      dtype_name(x->dt));
  for (int i = 1; i < n->n_in; i++) {
    if (!ir_has_input(n, i))
      continue;
    DType want = i == 4 ? DT_I32 : x->dt;
    if (n->in[i]->dt != want)
      return infer_fail(d, n, "input %d has element type %s, expected %s", i,
                        dtype_name(n->in[i]->dt), dtype_name(want));
  }
  int nd = directions(n, d);
  if (nd == 0 || !check_attrs(n, d, nd))
    return false;
  int g = rnn_gates(n);
  bool bfirst = n->g->opset >= 14 && ir_attr_int(n, "layout", 0) == 1;
  const Shape *xs = &x->shape, *ws = &n->in[1]->shape;
  int64_t hid = ir_attr_int(n, "hidden_size", DIM_UNKNOWN);
  if (hid == DIM_UNKNOWN && ws->rank == 3 && ws->d[1] >= 0)
    hid = ws->d[1] / g;
  if (ir_attr(n, "hidden_size") && hid < 1)
    return infer_fail(d, n, "hidden_size is %lld, expected >= 1", (long long)hid);
  if (xs->rank >= 0 && xs->rank != 3)
    return infer_fail(d, n, "input 0 (X) has rank %d, expected 3", xs->rank);
  int64_t seq = xs->rank == 3 ? xs->d[bfirst ? 1 : 0] : DIM_UNKNOWN;
  int64_t batch = xs->rank == 3 ? xs->d[bfirst ? 0 : 1] : DIM_UNKNOWN;
  int64_t in = xs->rank == 3 ? xs->d[2] : DIM_UNKNOWN;
  const char *ssym = xs->rank == 3 ? xs->sym[bfirst ? 1 : 0] : NULL;
  const char *bsym = xs->rank == 3 ? xs->sym[bfirst ? 0 : 1] : NULL;
  /* a symbolic dim keeps its expression with its name (shape_is_bounded needs both) */
  const DimExpr *sx = xs->rank == 3 && seq < 0 ? xs->x[bfirst ? 1 : 0] : NULL;
  const DimExpr *bx = xs->rank == 3 && batch < 0 ? xs->x[bfirst ? 0 : 1] : NULL;
  int64_t gh = hid >= 0 ? g * hid : DIM_UNKNOWN;
  bool rt = ir_attr_int(n, "onnxc.rt", 0) != 0;   /* R^T [D, H, G*H] (rnn_project.c) */
  bool wt = ir_attr_int(n, "onnxc.wt", 0) != 0;   /* W^T [D, I, G*H] */
  int64_t wd[3] = {nd, wt ? in : gh, wt ? gh : in}, rd[3] = {nd, rt ? hid : gh, rt ? gh : hid}, bd[2] = {nd, gh >= 0 ? 2 * gh : -1};
  int64_t sl[1] = {batch}, pd[2] = {nd, hid >= 0 ? 3 * hid : -1};
  int64_t hd[3] = {bfirst ? batch : nd, bfirst ? nd : batch, hid};
  if (!want_dims(n, d, 1, "W", 3, wd) || !want_dims(n, d, 2, "R", 3, rd) ||
      !want_dims(n, d, 3, "B", 2, bd) || !want_dims(n, d, 4, "sequence_lens", 1, sl) ||
      !want_dims(n, d, 5, "initial_h", 3, hd))
    return false;
  if (n->op == OP_LSTM &&
      (!want_dims(n, d, 6, "initial_c", 3, hd) || !want_dims(n, d, 7, "P", 2, pd)))
    return false;
  Shape y = shape_unknown();
  y.rank = 4;
  y.d[0] = bfirst ? batch : seq;
  y.sym[0] = bfirst ? (batch >= 0 ? NULL : bsym) : (seq >= 0 ? NULL : ssym);
  y.x[0] = bfirst ? bx : sx;
  y.d[1] = bfirst ? seq : nd;
  y.sym[1] = bfirst && seq < 0 ? ssym : NULL;
  y.x[1] = bfirst ? sx : NULL;
  y.d[2] = bfirst ? nd : batch;
  y.sym[2] = !bfirst && batch < 0 ? bsym : NULL;
  y.x[2] = bfirst ? NULL : bx;
  y.d[3] = hid;
  y.sym[3] = NULL, y.x[3] = NULL;
  Shape h = state_shape(nd, batch, bsym, bx, hid, bfirst);
  for (int i = 0; i < n->n_out; i++)
    infer_set(n, i, x->dt, i == 0 ? &y : &h);
  return true;
}

bool infer_RNN(Node *n, Diag *d) { return infer_recurrent(n, d); }
bool infer_GRU(Node *n, Diag *d) { return infer_recurrent(n, d); }
bool infer_LSTM(Node *n, Diag *d) { return infer_recurrent(n, d); }
