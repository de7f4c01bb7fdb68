/* emit_rnn.c - C kernels of the recurrent ops RNN, GRU and LSTM (opsj).
 *
 * Each batch item runs its own sequence (the recurrences of different items
 * never meet), so the state is one row: scratch S holds H and C (hidden and
 * cell state), the gate pre-activations Gt (G*hid) and a temporary row T.
 * Per time step the gates are Wb + Rb + W x_t + R h_{t-1}, one dot product
 * per gate row, then the op's update (ONNX equations, gate orders RNN i, GRU
 * zrh, LSTM iofc). Directions are emitted one after the other, each with its
 * own activations; reverse walks t = len - 1 .. 0 where len is the item's
 * sequence_lens entry (clamped to [0, S]), and Y rows at t >= len are zero.
 * clip bounds every activation's input. activation_alpha/beta are consumed in
 * order by the activations that take them (Affine, LeakyRelu,
 * ThresholdedRelu, ScaledTanh, HardSigmoid, Elu), defaults as in the
 * corresponding ONNX ops. f16/bf16 compute in float, f64 in double.
 * A node with onnxc.xproj (passes/rnn_project.c) reads, instead of X and W,
 * the projection P [S, B, D*G*H] = X W^T + Wb computed for every step by a
 * MatMul before it: its gate rows start from P's row and add only Rb + R h.
 */
#include "codegen.h"

#include <string.h>

#define LL(x) ((long long)(x))

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

/* One activation: its name, alpha and beta defaults and whether it takes them. */
typedef struct Act {
  const char *name;
  bool alpha, beta;
  double da, db;
} Act;

static const Act acts[] = {
    {"Relu", false, false, 0, 0},         {"Tanh", false, false, 0, 0},
    {"Sigmoid", false, false, 0, 0},      {"Affine", true, true, 1.0, 0.0},
    {"LeakyRelu", true, false, 0.01, 0},  {"ThresholdedRelu", true, false, 1.0, 0},
    {"ScaledTanh", true, true, 1.0, 1.0}, {"HardSigmoid", true, true, 0.2, 0.5},
    {"Elu", true, false, 1.0, 0},         {"Softsign", false, false, 0, 0},
    {"Softplus", false, false, 0, 0},
};

/* A resolved activation of one gate: which function and its parameters. */
typedef struct Fn {
  const Act *act;
  double alpha, beta;
} Fn;

/* The node's activations (acts_per_dir * nd of them) with their parameters. */
static bool read_fns(EmitC *e, const Node *n, int per_dir, int nd, Fn *fns) {
  const char *def_rnn[1] = {"Tanh"}, *def_gru[2] = {"Sigmoid", "Tanh"},
             *def_lstm[3] = {"Sigmoid", "Tanh", "Tanh"};
  const char *const *defs = per_dir == 3 ? def_lstm : per_dir == 2 ? def_gru : def_rnn;
  const Attr *a = ir_attr(n, "activations");
  const Attr *al = ir_attr(n, "activation_alpha"), *be = ir_attr(n, "activation_beta");
  int ia = 0, ib = 0;
  for (int i = 0; i < per_dir * nd; i++) {
    const char *name = a && a->kind == AT_STRINGS && i < a->n ? a->u.ss[i] : defs[i % per_dir];
    fns[i].act = NULL;
    for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++)
      if (name_eq(name, acts[k].name))
        fns[i].act = &acts[k];
    if (!fns[i].act)
      return diag_error(e->d, n, "activation '%s' is not supported", name);
    fns[i].alpha = fns[i].act->da;
    fns[i].beta = fns[i].act->db;
    if (fns[i].act->alpha && al && al->kind == AT_FLOATS && ia < al->n)
      fns[i].alpha = al->u.fs[ia++];
    if (fns[i].act->beta && be && be->kind == AT_FLOATS && ib < be->n)
      fns[i].beta = be->u.fs[ib++];
  }
  return true;
}

/* Per-node facts shared by the emitters below. */
typedef struct Rnn {
  const Node *n;
  DType t;
  const char *CT, *f;          /* compute type and math suffix */
  int g, nd;
  int64_t seq, batch, in, hid;
  bool bfirst, has_clip;
  bool xproj;                  /* X is the projection P [S, B, D*G*H] (passes/rnn_project.c) */
  bool rt;                     /* R is R^T [D, H, G*H]: R h as axpys (pass_rnn_transpose_r) */
  bool wt;                     /* W is W^T [D, I, G*H]: W x_t as axpys (the same) */
  double clip;
  Fn fns[6];
} Rnn;

/* The hidden size: R's last extent, or its middle one when R is stored
 * transposed (onnxc.rt, passes/rnn_project.c). */
static int64_t rnn_hidden(const Node *n) {
  const Shape *rs = &n->in[2]->shape;
  return rs->rank != 3 ? -1 : rs->d[ir_attr_int(n, "onnxc.rt", 0) ? 1 : 2];
}

/* Load of element `idx` of array `arr` in the compute type. */
static void ld(Buf *b, const Rnn *r, const char *arr, const char *idx) {
  if (r->t == DT_F16)
    buf_printf(b, "onnxc_f16_to_f32(%s[%s])", arr, idx);
  else if (r->t == DT_BF16)
    buf_printf(b, "onnxc_bf16_to_f32(%s[%s])", arr, idx);
  else
    buf_printf(b, "%s[%s]", arr, idx);
}

static const char *st(const Rnn *r) {
  return r->t == DT_F16 ? "onnxc_f32_to_f16" : r->t == DT_BF16 ? "onnxc_f32_to_bf16" : "";
}

/* Emits `const CT out = fn(clip(in));`. */
static void emit_act(EmitC *e, const Rnn *r, const Fn *fn, const char *out, const char *in) {
  char lit[64], lit2[64];
  const char *CT = r->CT, *f = r->f;
  if (r->has_clip) {
    ec_line(e, "const %s %s_a = %s < -%s ? -%s : %s > %s ? %s : %s;", CT, out, in,
            ec_literal(r->t == DT_F64 ? DT_F64 : DT_F32, r->clip, lit, sizeof lit), lit, in, lit, lit,
            in);
  } else {
    ec_line(e, "const %s %s_a = %s;", CT, out, in);
  }
  DType lt = r->t == DT_F64 ? DT_F64 : DT_F32;
  ec_literal(lt, fn->alpha, lit, sizeof lit);
  ec_literal(lt, fn->beta, lit2, sizeof lit2);
  const char *nm = fn->act->name, *x = out;
  char a[80];
  snprintf(a, sizeof a, "%s_a", x);
  /* float gates: the runtime's exp and tanh (onnxc_rt.h: 1.3 and 1.4 ulp, no
   * libm call), so the gate loop vectorizes (ddddocr's 512-wide bidirectional
   * LSTM spent 2.3 of its 5.5 ms in scalar expf and tanhf calls); double
   * keeps libm */
  const char *tanh_fn = r->t == DT_F64 ? "tanh" : "onnxc_tanhf", *exp_fn = r->t == DT_F64 ? "exp" : "onnxc_expf";
  if (!strcmp(nm, "Relu"))
    ec_line(e, "const %s %s = %s > 0 ? %s : (%s)0;", CT, out, a, a, CT);
  else if (!strcmp(nm, "Tanh"))
    ec_line(e, "const %s %s = %s(%s);", CT, out, tanh_fn, a);
  else if (!strcmp(nm, "Sigmoid"))
    ec_line(e, "const %s %s = (%s)1 / ((%s)1 + %s(-%s));", CT, out, CT, CT, exp_fn, a);
  else if (!strcmp(nm, "Affine"))
    ec_line(e, "const %s %s = %s * %s + %s;", CT, out, lit, a, lit2);
  else if (!strcmp(nm, "LeakyRelu"))
    ec_line(e, "const %s %s = %s >= 0 ? %s : %s * %s;", CT, out, a, a, lit, a);
  else if (!strcmp(nm, "ThresholdedRelu"))
    ec_line(e, "const %s %s = %s > %s ? %s : (%s)0;", CT, out, a, lit, a, CT);
  else if (!strcmp(nm, "ScaledTanh"))
    ec_line(e, "const %s %s = %s * %s(%s * %s);", CT, out, lit, tanh_fn, lit2, a);
  else if (!strcmp(nm, "HardSigmoid"))
    ec_line(e, "const %s %s = fmax%s((%s)0, fmin%s((%s)1, %s * %s + %s));", CT, out, f, CT, f, CT,
            lit, a, lit2);
  else if (!strcmp(nm, "Elu"))
    ec_line(e, "const %s %s = %s >= 0 ? %s : %s * (%s(%s) - (%s)1);", CT, out, a, a, lit, exp_fn, a, CT);
  else if (!strcmp(nm, "Softsign"))
    ec_line(e, "const %s %s = %s / ((%s)1 + fabs%s(%s));", CT, out, a, CT, f, a);
  else
    ec_line(e, "const %s %s = log%s((%s)1 + exp%s(%s));", CT, out, f, CT, f, a);
}

/* Index expressions of X, Y and the states for the layout. */
static void x_index(const Rnn *r, char *buf, size_t len) {
  if (r->bfirst)
    snprintf(buf, len, "(b * SEQ + t) * %lld", LL(r->in));
  else
    snprintf(buf, len, "(t * NB + b) * %lld", LL(r->in));
}

static void y_index(const Rnn *r, int d, const char *t, char *buf, size_t len) {
  if (r->bfirst)
    snprintf(buf, len, "((b * SEQ + %s) * %d + %d) * %lld", t, r->nd, d, LL(r->hid));
  else
    snprintf(buf, len, "((%s * %d + %d) * NB + b) * %lld", t, r->nd, d, LL(r->hid));
}

static void h_index(const Rnn *r, int d, char *buf, size_t len) {
  if (r->bfirst)
    snprintf(buf, len, "(b * %d + %d) * %lld", r->nd, d, LL(r->hid));
  else
    snprintf(buf, len, "(%d * NB + b) * %lld", d, LL(r->hid));
}

/* Rows of the gate matrices per step of emit_gates, and the partial sums of
 * each dot product: an explicit reassociation that compilers vectorize
 * without -ffast-math (one scalar sum per row was bound by the latency of
 * its adds: Silero VAD's LSTM step, 512 rows of 128 + 128, took 0.11 ms). */
#define GATE_ROWS 4
#define GATE_LANES 16

/* The dot products of `rows` gate rows from row j0 of direction d with the
 * vector `vec` (an element expression of k) over `len`, matrix X<slot>
 * ([dirs, G*hid, len]), added to part<r>; the tail past the lanes goes to
 * acc<r>. */
static void emit_gate_dots(EmitC *e, const Rnn *r, int d, int rows, int slot, const char *vec,
                           int64_t len) {
  int64_t gh = r->g * r->hid, full = len / GATE_LANES * GATE_LANES;
  for (int i = 0; i < rows; i++)
    ec_line(e, "const %s *m%d_%d = X%d + (%lld + j0 + %d) * %lld;", dtype_ctype(r->t), slot, i, slot,
            LL(d * gh), i, LL(len));
  /* the lanes (k + u into part<i>), then the tail (k into acc<i>) */
  for (int tail = 0; tail < 2; tail++) {
    const char *k = tail ? "k" : "k + u";
    if (tail ? full == len : full == 0)
      continue;
    if (tail) {
      ec_line(e, "for (ptrdiff_t k = %lld; k < %lld; k++) {", LL(full), LL(len));
    } else {
      ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k += %d) {", LL(full), GATE_LANES);
      ec_line(e, "for (ptrdiff_t u = 0; u < %d; u++) {", GATE_LANES);
    }
    Buf v, m;
    buf_init(&v);
    buf_printf(&v, vec, k);
    ec_line(e, "const %s v = %s;", r->CT, v.s);
    buf_free(&v);
    for (int i = 0; i < rows; i++) {
      char arr[24];
      snprintf(arr, sizeof arr, "m%d_%d", slot, i);
      buf_init(&m);
      ld(&m, r, arr, k);
      if (tail)
        ec_line(e, "acc%d += v * %s;", i, m.s);
      else
        ec_line(e, "part%d[u] += v * %s;", i, m.s);
      buf_free(&m);
    }
    ec_line(e, "}");
    if (!tail)
      ec_line(e, "}");
  }
}

/* Gt[j] for rows [lo, hi) of direction d: biases + W x_t (+ R h when with_r),
 * GATE_ROWS rows at a time (x_t and h loaded once for all of them). */
static void emit_gate_rows(EmitC *e, const Rnn *r, int d, int rows, bool with_r) {
  const Node *n = r->n;
  int64_t gh = r->g * r->hid;
  /* no dot product left when both products are axpys (or W x_t projected) */
  bool dots = (!r->xproj && !r->wt) || (with_r && !r->rt);
  for (int i = 0; i < rows && dots; i++) {
    ec_line(e, "%s part%d[%d] = {0};", r->CT, i, GATE_LANES);
    ec_line(e, "%s acc%d = 0;", r->CT, i);
  }
  if (!r->xproj && !r->wt) {
    Buf xv;
    buf_init(&xv);
    ld(&xv, r, "xt", "%s");
    emit_gate_dots(e, r, d, rows, 1, xv.s, r->in);
    buf_free(&xv);
  }
  if (with_r && !r->rt)
    emit_gate_dots(e, r, d, rows, 2, "H[%s]", r->hid);
  for (int i = 0; i < rows; i++) {
    ec_line(e, "{");
    if (r->xproj) {   /* P holds W x_t + Wb; the R half of B stays here */
      char pi[64], bi[64];
      Buf pv, br;
      buf_init(&pv);
      buf_init(&br);
      snprintf(pi, sizeof pi, "%lld + j0 + %d", LL(d * gh), i);
      ld(&pv, r, "xt", pi);
      if (with_r && ir_has_input(n, 3)) {
        snprintf(bi, sizeof bi, "%lld + j0 + %d", LL(d * 2 * gh + gh), i);
        ld(&br, r, "X3", bi);
        ec_line(e, "%s s = %s + %s;", r->CT, pv.s, br.s);
      } else {
        ec_line(e, "%s s = %s;", r->CT, pv.s);
      }
      buf_free(&pv);
      buf_free(&br);
    } else if (ir_has_input(n, 3)) {
      char i1[64], i2[64];
      Buf bw, br;
      buf_init(&bw);
      buf_init(&br);
      snprintf(i1, sizeof i1, "%lld + j0 + %d", LL(d * 2 * gh), i);
      snprintf(i2, sizeof i2, "%lld + j0 + %d", LL(d * 2 * gh + gh), i);
      ld(&bw, r, "X3", i1);
      ld(&br, r, "X3", i2);
      if (with_r)
        ec_line(e, "%s s = %s + %s;", r->CT, bw.s, br.s);
      else
        ec_line(e, "%s s = %s;", r->CT, bw.s);
      buf_free(&bw);
      buf_free(&br);
    } else {
      ec_line(e, "%s s = 0;", r->CT);
    }
    if (dots) {
      ec_line(e, "for (ptrdiff_t u = 0; u < %d; u++) s += part%d[u];", GATE_LANES, i);
      ec_line(e, "Gt[j0 + %d] = s + acc%d;", i, i);
    } else {
      ec_line(e, "Gt[j0 + %d] = s;", i);
    }
    ec_line(e, "}");
  }
}

/* dst[j - lo] += sum_k xt[k] W[d, j, k] (with_w) + sum_k rvec[k] R[d, j, k]
 * (rvec non-NULL) for gate rows [lo, hi), read from W^T (X1 [D, I, G*H])
 * and R^T (X2 [D, H, G*H]): one contiguous axpy per k into a local block of
 * hi - lo sums (at most 4 x 128), which the compiler keeps in vector
 * registers (or L1) across the k loop, where summing into dst itself went through
 * memory at every k (madmom's 25-wide LSTM step: 740 -> 490-520 ns). */
static void emit_t_axpys(EmitC *e, const Rnn *r, int d, int64_t lo, int64_t hi, bool with_w, const char *rvec,
                         const char *dst) {
  int64_t gh = r->g * r->hid, w = hi - lo;
  const char *at = strcmp(dst, "Gt") == 0 ? arena_printf(e->g->arena, "%lld + ", LL(lo)) : "";
  ec_line(e, "{");
  ec_line(e, "%s acc[%lld];", r->CT, LL(w));
  ec_line(e, "for (ptrdiff_t u = 0; u < %lld; u++) acc[u] = %s[%su];", LL(w), dst, at);
  for (int m = 0; m < 2; m++) {
    if (m == 0 ? !with_w : !rvec)
      continue;
    int64_t len = m == 0 ? r->in : r->hid;
    ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) {", LL(len));
    ec_line(e, "const %s v = %s[k], *restrict rt = X%d + (%lld + k) * %lld + %lld;", r->CT, m == 0 ? "xt" : rvec,
            m == 0 ? 1 : 2, LL(d * len), LL(gh), LL(lo));
    ec_line(e, "for (ptrdiff_t u = 0; u < %lld; u++) acc[u] += v * rt[u];", LL(w));
    ec_line(e, "}");
  }
  ec_line(e, "for (ptrdiff_t u = 0; u < %lld; u++) %s[%su] = acc[u];", LL(w), dst, at);
  ec_line(e, "}");
}

static void emit_gates(EmitC *e, const Rnn *r, int d, int64_t lo, int64_t hi, bool with_r) {
  int64_t full = (hi - lo) / GATE_ROWS * GATE_ROWS;
  if (full > 0) {
    ec_line(e, "for (ptrdiff_t j0 = %lld; j0 < %lld; j0 += %d) {", LL(lo), LL(lo + full), GATE_ROWS);
    emit_gate_rows(e, r, d, GATE_ROWS, with_r);
    ec_line(e, "}");
  }
  if (lo + full < hi) {
    ec_line(e, "for (ptrdiff_t j0 = %lld; j0 < %lld; j0++) {", LL(lo + full), LL(hi));
    emit_gate_rows(e, r, d, 1, with_r);
    ec_line(e, "}");
  }
  if (r->wt || (with_r && r->rt))
    emit_t_axpys(e, r, d, lo, hi, r->wt, with_r && r->rt ? "H" : NULL, "Gt");
}

/* Loads `dst[j]` from state input `slot` (or zero) for direction d. */
static void emit_state_init(EmitC *e, const Rnn *r, int d, int slot, const char *dst) {
  if (!ir_has_input(r->n, slot)) {
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) %s[j] = 0;", LL(r->hid), dst);
    return;
  }
  char hi[96], idx[128], arr[8];
  h_index(r, d, hi, sizeof hi);
  snprintf(idx, sizeof idx, "%s + j", hi);
  snprintf(arr, sizeof arr, "X%d", slot);
  Buf b;
  buf_init(&b);
  ld(&b, r, arr, idx);
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) %s[j] = %s;", LL(r->hid), dst, b.s);
  buf_free(&b);
}

/* The update of one time step: H (and C) from Gt. */
static void emit_update(EmitC *e, const Rnn *r, int d) {
  const Node *n = r->n;
  int64_t h = r->hid;
  const Fn *fn = &r->fns[d * (r->g == 4 ? 3 : r->g == 3 ? 2 : 1)];
  if (r->g == 1) {
    emit_gates(e, r, d, 0, h, true);
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", LL(h));
    emit_act(e, r, &fn[0], "hn", "Gt[j]");
    ec_line(e, "H[j] = hn;");
    ec_line(e, "}");
  } else if (r->g == 3) {
    /* z and r from full gates, the h gate's W part first; then its R part. */
    bool lbr = ir_attr_int(n, "linear_before_reset", 0) != 0;
    emit_gates(e, r, d, 0, 2 * h, true);
    emit_gates(e, r, d, 2 * h, 3 * h, false);
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", LL(2 * h));
    emit_act(e, r, &fn[0], "gv", "Gt[j]");
    ec_line(e, "Gt[j] = gv;");
    ec_line(e, "}");
    Buf rb;
    buf_init(&rb);
    char bi[64];
    snprintf(bi, sizeof bi, "%lld + j", LL(d * 6 * h + 5 * h));
    if (ir_has_input(n, 3))
      ld(&rb, r, "X3", bi);
    else
      buf_puts(&rb, "0");
    if (!lbr)
      ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) T[k] = Gt[%lld + k] * H[k];", LL(h), LL(h));
    if (r->rt) {   /* R^T: the h gate's R part summed into C (unused by a GRU) */
      ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) C[j] = %s;", LL(h), rb.s);
      emit_t_axpys(e, r, d, 2 * h, 3 * h, false, lbr ? "H" : "T", "C");
      ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) Gt[%lld + j] += %sC[j];", LL(h), LL(2 * h),
              lbr ? arena_printf(e->g->arena, "Gt[%lld + j] * ", LL(h)) : "");
    } else {
      ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", LL(h));
      ec_line(e, "const ptrdiff_t j0 = %lld + j;", LL(2 * h)); /* the h gate's row of R */
      ec_line(e, "%s part0[%d] = {0};", r->CT, GATE_LANES);
      ec_line(e, "%s acc0 = %s;", r->CT, rb.s);
      emit_gate_dots(e, r, d, 1, 2, lbr ? "H[%s]" : "T[%s]", h);
      ec_line(e, "for (ptrdiff_t u = 0; u < %d; u++) acc0 += part0[u];", GATE_LANES);
      ec_line(e, "const %s acc = acc0;", r->CT);
      if (lbr)
        ec_line(e, "Gt[%lld + j] += Gt[%lld + j] * acc;", LL(2 * h), LL(h));
      else
        ec_line(e, "Gt[%lld + j] += acc;", LL(2 * h));
      ec_line(e, "}");
    }
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", LL(h));
    char hin[48];
    snprintf(hin, sizeof hin, "Gt[%lld + j]", LL(2 * h));
    emit_act(e, r, &fn[1], "hh", hin);
    ec_line(e, "H[j] = ((%s)1 - Gt[j]) * hh + Gt[j] * H[j];", r->CT);
    ec_line(e, "}");
    buf_free(&rb);
  } else {
    bool peep = ir_has_input(n, 7), coupled = ir_attr_int(n, "input_forget", 0) != 0;
    emit_gates(e, r, d, 0, 4 * h, true);
    Buf pi, po, pf;
    buf_init(&pi);
    buf_init(&po);
    buf_init(&pf);
    char ii[64];
    snprintf(ii, sizeof ii, "%lld + j", LL(d * 3 * h));
    ld(&pi, r, "X7", ii);
    snprintf(ii, sizeof ii, "%lld + j", LL(d * 3 * h + h));
    ld(&po, r, "X7", ii);
    snprintf(ii, sizeof ii, "%lld + j", LL(d * 3 * h + 2 * h));
    ld(&pf, r, "X7", ii);
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", LL(h));
    ec_line(e, "const %s cp = C[j];", r->CT);
    if (peep) {
      ec_line(e, "const %s gi_in = Gt[j] + %s * cp;", r->CT, pi.s);
      ec_line(e, "const %s gf_in = Gt[%lld + j] + %s * cp;", r->CT, LL(2 * h), pf.s);
    } else {
      ec_line(e, "const %s gi_in = Gt[j];", r->CT);
      ec_line(e, "const %s gf_in = Gt[%lld + j];", r->CT, LL(2 * h));
    }
    emit_act(e, r, &fn[0], "gi", "gi_in");
    if (coupled) {
      ec_line(e, "(void)gf_in;");
      ec_line(e, "const %s gf = (%s)1 - gi;", r->CT, r->CT);
    } else {
      emit_act(e, r, &fn[0], "gf", "gf_in");
    }
    char gc_in[48];
    snprintf(gc_in, sizeof gc_in, "Gt[%lld + j]", LL(3 * h));
    emit_act(e, r, &fn[1], "gc", gc_in);
    ec_line(e, "const %s cn = gf * cp + gi * gc;", r->CT);
    if (peep)
      ec_line(e, "const %s go_in = Gt[%lld + j] + %s * cn;", r->CT, LL(h), po.s);
    else
      ec_line(e, "const %s go_in = Gt[%lld + j];", r->CT, LL(h));
    emit_act(e, r, &fn[0], "go", "go_in");
    /* h(C) takes no clip: clip bounds the gate inputs. */
    Rnn noclip = *r;
    noclip.has_clip = false;
    emit_act(e, &noclip, &fn[2], "hc", "cn");
    ec_line(e, "C[j] = cn;");
    ec_line(e, "H[j] = go * hc;");
    ec_line(e, "}");
    buf_free(&pi);
    buf_free(&po);
    buf_free(&pf);
  }
}

/* One direction over every batch item. */
static void emit_direction(EmitC *e, const Rnn *r, int d, bool rev) {
  const Node *n = r->n;
  const char *T = dtype_ctype(r->t), *S = st(r);
  char xi[96], yi[128], hi[96];
  x_index(r, xi, sizeof xi);
  h_index(r, d, hi, sizeof hi);
  ec_line(e, "for (ptrdiff_t b = 0; b < NB; b++) {");
  if (ir_has_input(n, 4))
    ec_line(e, "const ptrdiff_t len = X4[b] < 0 ? 0 : X4[b] > SEQ ? SEQ : (ptrdiff_t)X4[b];");
  else
    ec_line(e, "const ptrdiff_t len = SEQ;");
  emit_state_init(e, r, d, 5, "H");
  if (r->g == 4)
    emit_state_init(e, r, d, 6, "C");
  ec_line(e, "for (ptrdiff_t s = 0; s < len; s++) {");
  ec_line(e, "const ptrdiff_t t = %s;", rev ? "len - 1 - s" : "s");
  ec_line(e, "const %s *xt = X0 + %s;", T, xi);
  emit_update(e, r, d);
  if (ec_has_output(n, 0)) {
    y_index(r, d, "t", yi, sizeof yi);
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) Y0[%s + j] = %s(H[j]);", LL(r->hid), yi, S);
  }
  ec_line(e, "}");
  if (ec_has_output(n, 0)) {
    y_index(r, d, "t", yi, sizeof yi);
    ec_line(e, "for (ptrdiff_t t = len; t < SEQ; t++)");
    ec_line(e, "  for (ptrdiff_t j = 0; j < %lld; j++) Y0[%s + j] = %s(0);", LL(r->hid), yi, S);
  }
  if (ec_has_output(n, 1))
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) Y1[%s + j] = %s(H[j]);", LL(r->hid), hi, S);
  if (r->g == 4 && ec_has_output(n, 2))
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) Y2[%s + j] = %s(C[j]);", LL(r->hid), hi, S);
  ec_line(e, "}");
}

/* seq and batch: C expressions of the sequence length and the batch (numbers
 * for the static hooks, run-time dims for emit_dyn.c); every other extent is
 * static. */
static bool emit_recurrent(EmitC *e, const Node *n, int g, const char *seq, const char *batch, int64_t rows_hi) {
  Rnn r;
  memset(&r, 0, sizeof r);
  r.n = n;
  r.t = n->in[0]->dt;
  r.CT = r.t == DT_F64 ? "double" : "float";
  r.f = r.t == DT_F64 ? "" : "f";
  r.g = g;
  const char *dir = ir_attr_str(n, "direction", "forward");
  r.nd = !strcmp(dir, "bidirectional") ? 2 : 1;
  r.bfirst = n->g->opset >= 14 && ir_attr_int(n, "layout", 0) == 1;
  const Shape *xs = &n->in[0]->shape;
  r.seq = xs->d[r.bfirst ? 1 : 0];
  r.batch = xs->d[r.bfirst ? 0 : 1];
  r.in = xs->d[2];
  r.rt = ir_attr_int(n, "onnxc.rt", 0) != 0;
  r.wt = ir_attr_int(n, "onnxc.wt", 0) != 0;
  r.hid = rnn_hidden(n);
  r.xproj = ir_attr_int(n, "onnxc.xproj", 0) != 0;
  const Attr *clip = ir_attr(n, "clip");
  r.has_clip = clip && clip->kind == AT_FLOAT;
  r.clip = r.has_clip ? clip->u.f : 0;
  int per_dir = g == 4 ? 3 : g == 3 ? 2 : 1;
  if (!read_fns(e, n, per_dir, r.nd, r.fns))
    return false;
  int64_t per = (g + 3) * r.hid, need = per * r.nd * (r.t == DT_F64 ? 8 : 4);
  if (need == 0 || r.batch == 0 || r.seq == 0) {  /* no state or no steps: only empty outputs */
    for (int i = 0; i < n->n_out; i++)
      if (ec_has_output(n, i))
        ec_line(e, "(void)Y%d;", i);
    if (e->plan->scratch_size[n->id] > 0)
      ec_line(e, "(void)S;");
    return true;
  }
  if (e->plan->scratch_size[n->id] < need)
    return diag_error(e->d, n, "internal: scratch of %lld bytes, expected %lld",
                      LL(e->plan->scratch_size[n->id]), LL(need));
  /* --threads: the two directions of a bidirectional node are independent,
   * one per thread when a direction's products (at their rate as
   * matrix-vector products, about a quarter of the packed GEMM's) pay for it */
  double dir_ns = 4 * ec_cost(COST_GEMM_MAC, (double)rows_hi * (double)(g * r.hid) *
                                                 (double)(r.hid + (r.xproj ? 0 : r.in)));
  bool par = r.nd == 2 && rows_hi > 0 && ec_par_worth(e, 2 * dir_ns);
  ec_line(e, "const ptrdiff_t SEQ = %s, NB = %s;", seq, batch);
  if (par)
    ec_open_items(e, "dir", 2, 2 * dir_ns);
  /* each direction's state of its own: H, C, the gates Gt and T */
  ec_line(e, "%s *H = (%s *)(void *)S%s;", r.CT, r.CT, par ? arena_printf(e->g->arena, " + dir * %lld", LL(per)) : "");
  ec_line(e, "%s *C = H + %lld;", r.CT, LL(r.hid));
  ec_line(e, "%s *Gt = C + %lld;", r.CT, LL(r.hid));
  ec_line(e, "%s *T = Gt + %lld;", r.CT, LL(g * r.hid));
  ec_line(e, "(void)C;");
  ec_line(e, "(void)T;");
  bool reverse = !strcmp(dir, "reverse");
  for (int d = 0; d < r.nd; d++) {
    if (par)
      ec_line(e, d == 0 ? "if (dir == 0) {" : "} else {");
    emit_direction(e, &r, d, reverse || d == 1);
  }
  if (par) {
    ec_line(e, "}");
    ec_line(e, "}");
  }
  return true;
}

static int gates_of(const Node *n) { return n->op == OP_LSTM ? 4 : n->op == OP_GRU ? 3 : 1; }

static bool emit_static(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  bool bfirst = n->g->opset >= 14 && ir_attr_int(n, "layout", 0) == 1;
  char seq[24], batch[24];
  snprintf(seq, sizeof seq, "%lld", LL(xs->d[bfirst ? 1 : 0]));
  snprintf(batch, sizeof batch, "%lld", LL(xs->d[bfirst ? 0 : 1]));
  return emit_recurrent(e, n, gates_of(n), seq, batch, xs->d[0] * xs->d[1]);
}

bool emitc_RNN(EmitC *e, const Node *n) { return emit_static(e, n); }
bool emitc_GRU(EmitC *e, const Node *n) { return emit_static(e, n); }
bool emitc_LSTM(EmitC *e, const Node *n) { return emit_static(e, n); }
/* Never reached: canonicalize makes it an LSTM (passes/canonicalize.c). */
bool emitc_DynamicQuantizeLSTM(EmitC *e, const Node *n) {
  return diag_error(e->d, n, "DynamicQuantizeLSTM must be rewritten into LSTM before code generation");
}

bool rnn_emit_rt(EmitC *e, const Node *n, const char *seq, const char *batch, int64_t rows_hi) {
  if (n->in[0]->shape.d[2] < 0 || n->in[2]->shape.rank != 3 || rnn_hidden(n) < 0)
    return diag_error(e->d, n, "run-time extents: %s with a static input size and hidden size", n->op_type);
  return emit_recurrent(e, n, gates_of(n), seq, batch, rows_hi);
}

/* Scratch (asked by the planner through codegen/target.c), per direction:
 * states H and C, the gate pre-activations (G*H) and one temporary row (H),
 * in the compute type (double for f64, else float). */
int64_t rnn_scratch_bytes(const Node *n) {
  const Shape *r = &n->in[2]->shape;
  if (r->rank != 3 || rnn_hidden(n) < 0)
    return 0;
  int64_t gates = n->op == OP_LSTM ? 4 : n->op == OP_GRU ? 3 : 1;
  int64_t hid = rnn_hidden(n), esz = n->in[0]->dt == DT_F64 ? 8 : 4;
  int64_t dirs = !strcmp(ir_attr_str(n, "direction", "forward"), "bidirectional") ? 2 : 1;
  return (gates + 3) * hid * esz * dirs;   /* one state per direction (they may run side by side) */
}
