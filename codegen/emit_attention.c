/* emit_attention.c - C kernels of the attention family (opsh): Attention,
 * FlexAttention, RotaryEmbedding, LinearAttention, CausalConvWithState, Einsum.
 *
 * Attention runs one query row at a time: the scores of the row against every
 * key (past keys first, then the current ones) go to a scratch row of the
 * compute type (f32, f64 for f64 data), softcap, mask, causal and padding
 * biases are applied in the reference's order, then a softmax with max
 * subtraction and the weighted sum of the values. A fully masked row has a
 * -inf maximum and yields NaN, as the ONNX reference does. GQA maps query
 * head h to kv head h / (q_heads / kv_heads). 3-D inputs are read in place
 * through strides (no transposes). LinearAttention keeps the f32 state of one
 * kv head in scratch and runs the recurrence over time; Einsum reads the
 * explicit equation written by inference and emits one loop nest with a
 * scalar accumulator per output element.
 */
#include "codegen.h"

#include <math.h>
#include <string.h>

#define LL(x) ((long long)(x))

/* A C expression text. */
typedef struct Expr {
  char s[512];
} Expr;

/* src (an element of type `from`) converted to compute type ct. */
static const char *ld(Expr *x, DType from, DType ct, const char *src) {
  return ec_ew_load_str(x->s, sizeof x->s, from, ct, src);
}

/* expr (of compute type ct) converted for storing as `to`. */
static const char *st(Expr *x, DType ct, DType to, const char *expr) {
  return ec_ew_store_str(x->s, sizeof x->s, ct, to, expr);
}

static const char *lit(Expr *x, DType ct, double v) { return ec_literal(ct, v, x->s, sizeof x->s); }

/* "acc * <v>" with v a literal of type ct. */
static const char *lit_mul(Expr *x, DType ct, double v) {
  char l[64];
  ec_literal(ct, v, l, sizeof l);
  snprintf(x->s, sizeof x->s, "acc * %s", l);
  return x->s;
}

static int64_t numel(const Value *v) {
  int64_t k = 0;
  return shape_numel(&v->shape, &k) ? k : 0;
}

/* (void)s every parameter: for kernels with nothing (or not everything) to compute. */
static bool void_all(EmitC *e, const Node *n) {
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i))
      ec_line(e, "(void)X%d;", i);
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i))
      ec_line(e, "(void)Y%d;", i);
  return true;
}

/* ---- Attention ---------------------------------------------------------------------- */

typedef struct Attn {
  int64_t b, hq, hkv, sq, skv, dk, dv, past, total;
  /* element strides of (batch, head, seq) in Q, K, V and Y; the head dim is contiguous */
  int64_t q[3], k[3], v[3], y[3];
} Attn;

static void attn_geom(const Node *n, Attn *a) {
  const Shape *q = &n->in[0]->shape, *k = &n->in[1]->shape, *v = &n->in[2]->shape;
  a->b = q->d[0];
  if (q->rank == 4) {
    a->hq = q->d[1], a->sq = q->d[2], a->dk = q->d[3];
    a->hkv = k->d[1], a->skv = k->d[2], a->dv = v->d[3];
  } else {
    a->hq = ir_attr_int(n, "q_num_heads", 1), a->hkv = ir_attr_int(n, "kv_num_heads", 1);
    a->sq = q->d[1], a->skv = k->d[1];
    a->dk = q->d[2] / a->hq, a->dv = v->d[2] / a->hkv;
  }
  a->past = ir_has_input(n, 4) ? n->in[4]->shape.d[2] : 0;
  a->total = a->past + a->skv;
  int64_t h[4] = {a->hq, a->hkv, a->hkv, a->hq}, s[4] = {a->sq, a->skv, a->skv, a->sq};
  int64_t dd[4] = {a->dk, a->dk, a->dv, a->dv};
  int64_t *out[4] = {a->q, a->k, a->v, a->y};
  for (int i = 0; i < 4; i++) {
    if (q->rank == 4) {   /* (b, h, s, d) */
      out[i][0] = h[i] * s[i] * dd[i], out[i][1] = s[i] * dd[i], out[i][2] = dd[i];
    } else {              /* (b, s, h * d) */
      out[i][0] = s[i] * h[i] * dd[i], out[i][1] = dd[i], out[i][2] = h[i] * dd[i];
    }
  }
}

/* present = concat(past, current) along the sequence, 4-D. */
static void attn_present(EmitC *e, const Node *n, const Attn *a, int slot, int cur, int past,
                         int64_t dd, const int64_t *cs) {
  ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", LL(a->b));
  ec_line(e, "for (ptrdiff_t g = 0; g < %lld; g++) {", LL(a->hkv));
  ec_line(e, "%s *dst = Y%d + (b * %lld + g) * %lld;", dtype_ctype(n->out[slot]->dt), slot,
          LL(a->hkv), LL(a->total * dd));
  if (a->past > 0)
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) dst[i] = X%d[(b * %lld + g) * %lld + i];",
            LL(a->past * dd), past, LL(a->hkv), LL(a->past * dd));
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++)", LL(a->skv));
  ec_line(e, "  for (ptrdiff_t c = 0; c < %lld; c++)", LL(dd));
  ec_line(e, "    dst[(%lld + j) * %lld + c] = X%d[b * %lld + g * %lld + j * %lld + c];", LL(a->past),
          LL(dd), cur, LL(cs[0]), LL(cs[1]), LL(cs[2]));
  ec_line(e, "}");
  ec_line(e, "}");
}

/* Index of the attn_mask element for (b, h, i, j), broadcast from the right. */
static void mask_index(const Node *n, const Attn *a, Buf *out) {
  const Shape *m = &n->in[3]->shape;
  int64_t st[IR_MAX_RANK];
  const char *var[4] = {"b", "h", "i", "j"};
  ec_strides(m, st);
  (void)a;
  for (int i = 0; i < m->rank; i++)
    if (m->d[i] != 1)   /* broadcast dims add nothing */
      buf_printf(out, "%s%s * %lld", out->len ? " + " : "", var[4 - m->rank + i], LL(st[i]));
  if (!out->len)
    buf_puts(out, "0");
}

/* Writes qk_matmul_output[b, h, i, j] = v when the mode asks for this stage. */
static void qk_store(EmitC *e, const Node *n, const Attn *a, int64_t mode, int64_t stage,
                     const char *v, DType ct) {
  if (n->n_out < 4 || !ec_has_output(n, 3) || mode != stage)
    return;
  Expr x;
  ec_line(e, "Y3[((b * %lld + h) * %lld + i) * %lld + j] = %s;", LL(a->hq), LL(a->sq),
          LL(a->total), st(&x, ct, n->out[3]->dt, v));
}

/* The scores of one query row into sc[j], with their maximum in mx. */
static void attn_scores(EmitC *e, const Node *n, const Attn *a, DType t, DType ct) {
  Expr x, y, z;
  const char *T = dtype_ctype(ct), *f = ec_fsuf(ct);
  int64_t mode = ir_attr_int(n, "qk_matmul_output_mode", 0);
  float cap = ir_attr_float(n, "softcap", 0.0f);
  double scale = ir_attr(n, "scale") ? (double)ir_attr_float(n, "scale", 1.0f)
                                     : 1.0 / sqrt((double)a->dk);
  ec_line(e, "%s mx = -(%s)INFINITY;", T, T);
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", LL(a->total));
  if (a->past > 0)
    ec_line(e, "const %s *k = j < %lld ? X4 + ((b * %lld + g) * %lld + j) * %lld : "
            "X1 + b * %lld + g * %lld + (j - %lld) * %lld;", dtype_ctype(t), LL(a->past),
            LL(a->hkv), LL(a->past), LL(a->dk), LL(a->k[0]), LL(a->k[1]), LL(a->past),
            LL(a->k[2]));
  else
    ec_line(e, "const %s *k = X1 + b * %lld + g * %lld + j * %lld;", dtype_ctype(t), LL(a->k[0]),
            LL(a->k[1]), LL(a->k[2]));
  ec_line(e, "%s acc = 0;", T);
  ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) acc += %s * %s;", LL(a->dk),
          ld(&x, t, ct, "q[c]"), ld(&y, t, ct, "k[c]"));
  ec_line(e, "%s v = acc * %s;", T, lit(&z, ct, scale));
  qk_store(e, n, a, mode, 0, "v", ct);
  if (cap > 0) {
    ec_line(e, "v = %s * tanh%s(v / %s);", lit(&x, ct, cap), f, lit(&y, ct, cap));
    qk_store(e, n, a, mode, 1, "v", ct);
  } else {
    qk_store(e, n, a, mode, 1, "v", ct);
  }
  if (ir_has_input(n, 3)) {
    const Value *m = n->in[3];
    int64_t mt = m->shape.d[m->shape.rank - 1];
    Buf idx;
    buf_init(&idx);
    mask_index(n, a, &idx);
    const char *pad = mt < a->total ? "" : NULL;
    if (pad)
      ec_line(e, "if (j >= %lld) v += -(%s)INFINITY; else", LL(mt), T);
    if (m->dt == DT_BOOL) {
      ec_line(e, "%sif (!X3[%s]) v += -(%s)INFINITY;", pad ? "  " : "", idx.s, T);
    } else {
      Buf src;
      buf_init(&src);
      buf_printf(&src, "X3[%s]", idx.s);
      ec_line(e, "%sv += %s;", pad ? "  " : "", ld(&x, m->dt, ct, src.s));
      buf_free(&src);
    }
    buf_free(&idx);
  }
  if (ir_attr_int(n, "is_causal", 0))
    ec_line(e, "if (j > %lld + i) v += -(%s)INFINITY;", LL(a->past), T);
  if (ir_has_input(n, 6))
    ec_line(e, "if ((int64_t)j >= X6[b]) v += -(%s)INFINITY;", T);
  qk_store(e, n, a, mode, 2, "v", ct);
  ec_line(e, "sc[j] = v;");
  ec_line(e, "if (v > mx) mx = v;");
  ec_line(e, "}");
}

bool emitc_Attention(EmitC *e, const Node *n) {
  Attn a;
  attn_geom(n, &a);
  DType t = n->in[0]->dt, ct = ec_float_ct(t);
  const char *T = dtype_ctype(ct), *f = ec_fsuf(ct);
  Expr x;
  char src[64];
  if (n->n_out > 1 && ec_has_output(n, 1))
    attn_present(e, n, &a, 1, 1, 4, a.dk, a.k);
  if (n->n_out > 2 && ec_has_output(n, 2))
    attn_present(e, n, &a, 2, 2, 5, a.dv, a.v);
  if (numel(n->out[0]) == 0)
    return void_all(e, n);
  if (a.total == 0) {
    void_all(e, n);   /* no keys: the empty weighted sum */
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[i] = %s;", LL(numel(n->out[0])),
            st(&x, ct, t, "0"));
    return true;
  }
  IR_ASSERT(e->plan->scratch_size[n->id] >= a.total * (int64_t)(ct == DT_F64 ? 8 : 4));
  ec_line(e, "%s *sc = (%s *)(void *)S;   /* scores of one query row */", T, T);
  ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", LL(a.b));
  ec_line(e, "for (ptrdiff_t h = 0; h < %lld; h++) {", LL(a.hq));
  ec_line(e, "const ptrdiff_t g = h / %lld;", LL(a.hq / a.hkv));
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", LL(a.sq));
  ec_line(e, "const %s *q = X0 + b * %lld + h * %lld + i * %lld;", dtype_ctype(t), LL(a.q[0]),
          LL(a.q[1]), LL(a.q[2]));
  attn_scores(e, n, &a, t, ct);
  ec_line(e, "%s sum = 0;", T);
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", LL(a.total));
  ec_line(e, "sc[j] = exp%s(sc[j] - mx);", f);
  ec_line(e, "sum += sc[j];");
  ec_line(e, "}");
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", LL(a.total));
  ec_line(e, "sc[j] /= sum;");
  qk_store(e, n, &a, ir_attr_int(n, "qk_matmul_output_mode", 0), 3, "sc[j]", ct);
  ec_line(e, "}");
  ec_line(e, "%s *y = Y0 + b * %lld + h * %lld + i * %lld;", dtype_ctype(t), LL(a.y[0]), LL(a.y[1]),
          LL(a.y[2]));
  ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) {", LL(a.dv));
  ec_line(e, "%s acc = 0;", T);
  if (a.past > 0) {
    ec_line(e, "const %s *pv = X5 + (b * %lld + g) * %lld + c;", dtype_ctype(t), LL(a.hkv),
            LL(a.past * a.dv));
    snprintf(src, sizeof src, "pv[j * %lld]", LL(a.dv));
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) acc += sc[j] * %s;", LL(a.past),
            ld(&x, t, ct, src));
  }
  ec_line(e, "const %s *cv = X2 + b * %lld + g * %lld + c;", dtype_ctype(t), LL(a.v[0]), LL(a.v[1]));
  snprintf(src, sizeof src, "cv[j * %lld]", LL(a.v[2]));
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) acc += sc[%lld + j] * %s;", LL(a.skv),
          LL(a.past), ld(&x, t, ct, src));
  ec_line(e, "y[c] = %s;", st(&x, ct, t, "acc"));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* FlexAttention without modifier subgraphs is 4-D Attention without masks
 * (inference rejects score_mod / prob_mod). */
bool emitc_FlexAttention(EmitC *e, const Node *n) { return emitc_Attention(e, n); }

/* ---- RotaryEmbedding -------------------------------------------------------------------
 * X is (b, h, s, d) or (b, s, h * d); the cos/sin row of (b, s) is
 * cache[position_ids[b, s]] or cache[b, s]. The first rd entries of each head
 * rotate in pairs (k, k + rd/2), or (2k, 2k + 1) when interleaved. */

bool emitc_RotaryEmbedding(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt, ct = ec_float_ct(t);
  const char *T = dtype_ctype(ct), *E = dtype_ctype(t);
  int64_t b = xs->d[0], h, s, d, sb, sh, ss;
  if (xs->rank == 4) {
    h = xs->d[1], s = xs->d[2], d = xs->d[3];
    sb = h * s * d, sh = s * d, ss = d;
  } else {
    h = ir_attr_int(n, "num_heads", 1), s = xs->d[1], d = xs->d[2] / h;
    sb = s * h * d, sh = d, ss = h * d;
  }
  int64_t rd = ir_attr_int(n, "rotary_embedding_dim", 0);
  if (rd <= 0)
    rd = d;
  int64_t half = rd / 2;
  bool inter = ir_attr_int(n, "interleaved", 0) != 0, pos = ir_has_input(n, 3);
  if (b * h * s * d == 0)
    return void_all(e, n);
  Expr x1, x2, c, sn, y;
  ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", LL(b));
  ec_line(e, "for (ptrdiff_t s = 0; s < %lld; s++) {", LL(s));
  if (pos) {
    int64_t maxpos = n->in[1]->shape.d[0];
    ec_line(e, "const int64_t p = (int64_t)X3[b * %lld + s];", LL(s));
    ec_line(e, "if (p < 0 || p >= %lld) return ONNXC_ERR_BAD_INDEX;", LL(maxpos));
    ec_line(e, "const %s *cs = X1 + p * %lld, *sn = X2 + p * %lld;", E, LL(half), LL(half));
  } else {
    ec_line(e, "const %s *cs = X1 + (b * %lld + s) * %lld, *sn = X2 + (b * %lld + s) * %lld;", E,
            LL(s), LL(half), LL(s), LL(half));
  }
  ec_line(e, "for (ptrdiff_t h = 0; h < %lld; h++) {", LL(h));
  ec_line(e, "const %s *x = X0 + b * %lld + h * %lld + s * %lld;", E, LL(sb), LL(sh), LL(ss));
  ec_line(e, "%s *y = Y0 + b * %lld + h * %lld + s * %lld;", E, LL(sb), LL(sh), LL(ss));
  ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) {", LL(half));
  const char *i1 = inter ? "2 * k" : "k";
  char i2[64], a1[80], a2[80];
  if (inter)
    snprintf(i2, sizeof i2, "2 * k + 1");
  else
    snprintf(i2, sizeof i2, "k + %lld", LL(half));
  snprintf(a1, sizeof a1, "x[%s]", i1);
  snprintf(a2, sizeof a2, "x[%s]", i2);
  ec_line(e, "const %s x1 = %s, x2 = %s;", T, ld(&x1, t, ct, a1), ld(&x2, t, ct, a2));
  ec_line(e, "const %s c = %s, sv = %s;", T, ld(&c, t, ct, "cs[k]"), ld(&sn, t, ct, "sn[k]"));
  ec_line(e, "y[%s] = %s;", i1, st(&y, ct, t, "c * x1 - sv * x2"));
  ec_line(e, "y[%s] = %s;", i2, st(&y, ct, t, "sv * x1 + c * x2"));
  ec_line(e, "}");
  if (rd < d)
    ec_line(e, "for (ptrdiff_t k = %lld; k < %lld; k++) y[k] = x[k];", LL(rd), LL(d));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- CausalConvWithState -----------------------------------------------------------------
 * Depthwise causal conv1d over concat(past_state or zeros, input) along time:
 * out[b, c, t] = bias[c] + sum_k w[c, k] * padded[b, c, t + k]; present_state
 * is the last kernel - 1 steps of padded. The conv result is rounded to the
 * element type before SiLU, as the reference does. */

/* padded[b, c, idx] as an expression of the compute type. */
static void ccs_padded(Buf *out, const Node *n, DType ct, int64_t km1, int64_t len,
                       const char *idx) {
  Expr a, b;
  DType t = n->in[0]->dt;
  char cur[128], past[128];
  snprintf(cur, sizeof cur, "x[%s - %lld]", idx, LL(km1));
  snprintf(past, sizeof past, "p[%s]", idx);
  (void)len;
  if (ir_has_input(n, 3))
    buf_printf(out, "(%s < %lld ? %s : %s)", idx, LL(km1), ld(&a, t, ct, past), ld(&b, t, ct, cur));
  else
    buf_printf(out, "(%s < %lld ? (%s)0 : %s)", idx, LL(km1), dtype_ctype(ct), ld(&b, t, ct, cur));
}

bool emitc_CausalConvWithState(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt, ct = ec_float_ct(t);
  const char *T = dtype_ctype(ct), *E = dtype_ctype(t), *f = ec_fsuf(ct);
  int64_t b = xs->d[0], c = xs->d[1], len = xs->d[2], k = n->in[1]->shape.d[2], km1 = k - 1;
  bool silu = strcmp(ir_attr_str(n, "activation", "none"), "none") != 0;
  Expr a, w, y;
  if (b * c == 0 || km1 == 0 || len == 0)
    void_all(e, n);
  if (b * c == 0)
    return true;
  ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", LL(b));
  ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) {", LL(c));
  ec_line(e, "const %s *x = X0 + (b * %lld + c) * %lld;", E, LL(c), LL(len));
  if (ir_has_input(n, 3))
    ec_line(e, "const %s *p = X3 + (b * %lld + c) * %lld;", E, LL(c), LL(km1));
  ec_line(e, "const %s *w = X1 + c * %lld;", E, LL(k));
  if (len > 0) {
    ec_line(e, "for (ptrdiff_t t = 0; t < %lld; t++) {", LL(len));
    ec_line(e, "%s acc = %s;", T, ir_has_input(n, 2) ? ld(&a, t, ct, "X2[c]") : "0");
    Buf pv;
    buf_init(&pv);
    ccs_padded(&pv, n, ct, km1, len, "t + k");
    ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) acc += %s * %s;", LL(k), ld(&w, t, ct, "w[k]"),
            pv.s);
    buf_free(&pv);
    if (silu) {
      if (t != DT_F32 && t != DT_F64)   /* round to the element type like the reference */
        ec_line(e, "acc = %s;", ld(&a, t, ct, st(&y, ct, t, "acc")));
      ec_line(e, "acc = acc / ((%s)1 + exp%s(-acc));", T, f);
    }
    ec_line(e, "Y0[(b * %lld + c) * %lld + t] = %s;", LL(c), LL(len), st(&y, ct, t, "acc"));
    ec_line(e, "}");
  }
  if (km1 > 0 && ec_has_output(n, 1)) {
    Buf pv;
    buf_init(&pv);
    char idx[64];
    snprintf(idx, sizeof idx, "(m + %lld)", LL(len));
    ccs_padded(&pv, n, ct, km1, len, idx);
    ec_line(e, "for (ptrdiff_t m = 0; m < %lld; m++)", LL(km1));
    ec_line(e, "  Y1[(b * %lld + c) * %lld + m] = %s;", LL(c), LL(km1), st(&y, ct, t, pv.s));
    buf_free(&pv);
  }
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- LinearAttention -----------------------------------------------------------------------
 * Per batch and kv head, the state S (d_k x d_v, f32 or f64, in scratch) runs
 * over time: S *= exp(decay_t) (gated); v_t = beta_t * (v_t - S^T k_t)
 * (delta); S += k_t v_t^T; then each query head of the group reads
 * out = scale * q_t^T S. Columns of S are independent, so the delta update
 * works column by column without a buffer for S^T k_t. */

bool emitc_LinearAttention(EmitC *e, const Node *n) {
  const Shape *qs = &n->in[0]->shape;
  DType t = n->in[0]->dt, ct = ec_float_ct(t);
  const char *T = dtype_ctype(ct), *E = dtype_ctype(t), *f = ec_fsuf(ct);
  int64_t hq = ir_attr_int(n, "q_num_heads", 1), hkv = ir_attr_int(n, "kv_num_heads", 1);
  int64_t b = qs->d[0], tl = qs->d[1], dk = qs->d[2] / hq, dv = n->in[2]->shape.d[2] / hkv;
  int64_t grp = hq / hkv;
  float sattr = ir_attr_float(n, "scale", 0.0f);
  double scale = sattr != 0.0f ? (double)sattr : 1.0 / sqrt((double)dk);
  bool gated = ir_has_input(n, 4), delta = ir_has_input(n, 5);
  DType sdt = n->out[1]->dt;
  Expr a, c, y;
  char src[128];
  if (b * hkv * dk * dv == 0) {
    void_all(e, n);
    if (numel(n->out[0]) > 0)
      ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[i] = %s;", LL(numel(n->out[0])),
              st(&y, ct, t, "0"));
    if (numel(n->out[1]) > 0 && ec_has_output(n, 1))
      ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y1[i] = %s;", LL(numel(n->out[1])),
              st(&y, ct, sdt, "0"));
    return true;
  }
  IR_ASSERT(e->plan->scratch_size[n->id] >= dk * dv * (int64_t)(ct == DT_F64 ? 8 : 4));
  ec_line(e, "%s *st = (%s *)(void *)S;   /* state of one kv head, d_k x d_v */", T, T);
  ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", LL(b));
  ec_line(e, "for (ptrdiff_t g = 0; g < %lld; g++) {", LL(hkv));
  if (ir_has_input(n, 3)) {
    DType pt = n->in[3]->dt;
    snprintf(src, sizeof src, "X3[(b * %lld + g) * %lld + i]", LL(hkv), LL(dk * dv));
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) st[i] = %s;", LL(dk * dv), ld(&a, pt, ct, src));
  } else {
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) st[i] = 0;", LL(dk * dv));
  }
  ec_line(e, "for (ptrdiff_t t = 0; t < %lld; t++) {", LL(tl));
  ec_line(e, "const %s *k = X1 + (b * %lld + t) * %lld + g * %lld;", E, LL(tl), LL(hkv * dk), LL(dk));
  ec_line(e, "const %s *v = X2 + (b * %lld + t) * %lld + g * %lld;", E, LL(tl), LL(hkv * dv), LL(dv));
  if (gated) {
    int64_t last = n->in[4]->shape.d[2];
    if (last == hkv) {
      snprintf(src, sizeof src, "X4[(b * %lld + t) * %lld + g]", LL(tl), LL(hkv));
      ec_line(e, "const %s gd = exp%s(%s);", T, f, ld(&a, t, ct, src));
      ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) st[i] *= gd;", LL(dk * dv));
    } else {
      ec_line(e, "const %s *dc = X4 + (b * %lld + t) * %lld + g * %lld;", E, LL(tl), LL(hkv * dk),
              LL(dk));
      ec_line(e, "for (ptrdiff_t r = 0; r < %lld; r++) {", LL(dk));
      ec_line(e, "const %s gd = exp%s(%s);", T, f, ld(&a, t, ct, "dc[r]"));
      ec_line(e, "for (ptrdiff_t m = 0; m < %lld; m++) st[r * %lld + m] *= gd;", LL(dv), LL(dv));
      ec_line(e, "}");
    }
  }
  ec_line(e, "for (ptrdiff_t m = 0; m < %lld; m++) {", LL(dv));
  if (delta) {
    int64_t last = n->in[5]->shape.d[2];
    snprintf(src, sizeof src, "X5[(b * %lld + t) * %lld%s]", LL(tl), LL(last),
             last == 1 ? "" : " + g");
    ec_line(e, "%s r = 0;", T);
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) r += st[i * %lld + m] * %s;", LL(dk), LL(dv),
            ld(&a, t, ct, "k[i]"));
    ec_line(e, "const %s vm = %s * (%s - r);", T, ld(&a, t, ct, src), ld(&c, t, ct, "v[m]"));
  } else {
    ec_line(e, "const %s vm = %s;", T, ld(&c, t, ct, "v[m]"));
  }
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) st[i * %lld + m] += %s * vm;", LL(dk), LL(dv),
          ld(&a, t, ct, "k[i]"));
  ec_line(e, "}");
  ec_line(e, "for (ptrdiff_t h = g * %lld; h < (g + 1) * %lld; h++) {", LL(grp), LL(grp));
  ec_line(e, "const %s *q = X0 + (b * %lld + t) * %lld + h * %lld;", E, LL(tl), LL(hq * dk), LL(dk));
  ec_line(e, "%s *y = Y0 + (b * %lld + t) * %lld + h * %lld;", E, LL(tl), LL(hq * dv), LL(dv));
  ec_line(e, "for (ptrdiff_t m = 0; m < %lld; m++) {", LL(dv));
  ec_line(e, "%s acc = 0;", T);
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) acc += %s * st[i * %lld + m];", LL(dk),
          ld(&a, t, ct, "q[i]"), LL(dv));
  ec_line(e, "y[m] = %s;", st(&y, ct, t, lit_mul(&c, ct, scale)));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  if (ec_has_output(n, 1))
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y1[(b * %lld + g) * %lld + i] = %s;",
            LL(dk * dv), LL(hkv), LL(dk * dv), st(&y, ct, sdt, "st[i]"));
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- Einsum ----------------------------------------------------------------------------------
 * The equation is explicit here ("ab,bc->ac", no ellipsis: see
 * infer_attention.c). Loops run over the output labels, then over the summed
 * labels; each operand is indexed by its labels' loop variables (a repeated
 * label reads a diagonal) with stride 0 along dims of extent 1 that broadcast. */

#define EIN_LABELS 52

static int ein_label(char ch) {
  if (ch >= 'a' && ch <= 'z')
    return ch - 'a';
  if (ch >= 'A' && ch <= 'Z')
    return 26 + ch - 'A';
  return -1;
}

bool emitc_Einsum(EmitC *e, const Node *n) {
  const char *eq = ir_attr_str(n, "equation", "");
  const char *arrow = strstr(eq, "->");
  IR_ASSERT(arrow != NULL);
  DType t = n->out[0]->dt;
  /* integers accumulate in u64: wraps without UB, the low bits equal the signed result */
  DType ct = dtype_is_float(t) ? ec_float_ct(t) : DT_U64;
  const char *T = dtype_ctype(ct);
  int64_t ext[EIN_LABELS];
  bool in_out[EIN_LABELS] = {false}, used[EIN_LABELS] = {false};
  for (int i = 0; i < EIN_LABELS; i++)
    ext[i] = 1;
  /* Extents and per-operand index expressions. */
  Buf idx[IR_MAX_RANK + 16];
  int op = 0, axis = 0;
  buf_init(&idx[0]);
  int64_t st_[IR_MAX_RANK];
  ec_strides(&n->in[0]->shape, st_);
  for (const char *p = eq; p < arrow; p++) {
    if (*p == ',') {
      op++;
      axis = 0;
      IR_ASSERT(op < n->n_in);
      buf_init(&idx[op]);
      ec_strides(&n->in[op]->shape, st_);
      continue;
    }
    int li = ein_label(*p);
    IR_ASSERT(li >= 0);
    int64_t x = n->in[op]->shape.d[axis];
    if (x > ext[li])
      ext[li] = x;
    used[li] = true;
    if (x != 1)
      buf_printf(&idx[op], "%si%d * %lld", idx[op].len ? " + " : "", li, LL(st_[axis]));
    axis++;
  }
  IR_ASSERT(op + 1 == n->n_in);
  for (const char *p = arrow + 2; *p; p++)
    in_out[ein_label(*p)] = true;
  int64_t ostr[IR_MAX_RANK];
  ec_strides(&n->out[0]->shape, ostr);
  Buf oidx;
  buf_init(&oidx);
  int depth = 0, k = 0;
  for (const char *p = arrow + 2; *p; p++, k++) {
    int li = ein_label(*p);
    if (n->out[0]->shape.d[k] != 1)
      buf_printf(&oidx, "%si%d * %lld", oidx.len ? " + " : "", li, LL(ostr[k]));
    ec_line(e, "for (ptrdiff_t i%d = 0; i%d < %lld; i%d++) {", li, li, LL(ext[li]), li);
    depth++;
  }
  ec_line(e, "%s acc = 0;", T);
  int inner = 0;
  for (int li = 0; li < EIN_LABELS; li++) {
    if (!used[li] || in_out[li])
      continue;
    ec_line(e, "for (ptrdiff_t i%d = 0; i%d < %lld; i%d++) {", li, li, LL(ext[li]), li);
    inner++;
  }
  Buf prod;
  buf_init(&prod);
  for (int i = 0; i < n->n_in; i++) {
    Expr x;
    char src[600];
    snprintf(src, sizeof src, "X%d[%s]", i, idx[i].len ? idx[i].s : "0");
    buf_printf(&prod, "%s%s", i ? " * " : "", ld(&x, n->in[i]->dt, ct, src));
    buf_free(&idx[i]);
  }
  ec_line(e, "acc += %s;", prod.s);
  buf_free(&prod);
  for (int i = 0; i < inner; i++)
    ec_line(e, "}");
  Expr y;
  ec_line(e, "Y0[%s] = %s;", oidx.len ? oidx.s : "0", st(&y, ct, t, "acc"));
  buf_free(&oidx);
  for (int i = 0; i < depth; i++)
    ec_line(e, "}");
  return true;
}

/* ---- scratch (asked by the planner through codegen/target.c) --------------------
 * Attention keeps one row of scores (total kv length) in the compute type;
 * LinearAttention the state of one kv head (d_k x d_v). */

static int64_t extent(const Value *v, int i) {
  return v->shape.rank > i && i >= 0 ? v->shape.d[i] : -1;
}

int64_t attn_scratch_bytes(const Node *n) {
  int64_t el = n->in[0]->dt == DT_F64 ? 8 : 4;
  if (n->op == OP_Attention || n->op == OP_FlexAttention) {
    const Value *k = n->in[1];
    int64_t total = k->shape.rank == 4 ? extent(k, 2) : extent(k, 1);
    if (ir_has_input(n, 4))
      total += extent(n->in[4], 2);
    return total > 0 ? total * el : 0;
  }
  if (n->op == OP_LinearAttention) {
    int64_t hq = ir_attr_int(n, "q_num_heads", 1), hkv = ir_attr_int(n, "kv_num_heads", 1);
    int64_t q = extent(n->in[0], 2), v = extent(n->in[2], 2);
    int64_t dk = q >= 0 && hq > 0 ? q / hq : -1, dv = v >= 0 && hkv > 0 ? v / hkv : -1;
    return dk > 0 && dv > 0 ? dk * dv * el : 0;
  }
  return 0;
}
