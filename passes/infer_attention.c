/* infer_attention.c - shape inference of the attention family (opsh):
 * Attention, FlexAttention, RotaryEmbedding, LinearAttention,
 * CausalConvWithState, Einsum.
 *
 * Attention (opset 23/24) works on 4-D (batch, heads, seq, head_size) tensors;
 * 3-D inputs (batch, seq, heads * head_size) need q_num_heads/kv_num_heads.
 * With a KV cache the total key length is past + current. Einsum parses its
 * equation here once and rewrites it into an explicit form without ellipsis
 * (each ellipsis dim gets a letter the equation does not use), so that the
 * emitter only reads letters, commas and "->".
 * Reference: the ONNX operator docs and onnx/reference/ops (op_attention.py,
 * op_rotary_embedding.py, op_linear_attention.py, op_causal_conv_with_state.py,
 * op_einsum.py).
 */
#include "passes.h"

#include <string.h>

#define LL(x) ((long long)(x))

static bool is_float(DType t) { return t == DT_F32 || t == DT_F64 || t == DT_F16 || t == DT_BF16; }

/* Extent of dim i of value v; DIM_UNKNOWN when the rank or the dim is unknown. */
static int64_t dim(const Value *v, int i) {
  const Shape *s = &v->shape;
  return s->rank > i && i >= 0 ? s->d[i] : DIM_UNKNOWN;
}

/* a / b when both known and b divides a; DIM_UNKNOWN when unknown. */
static int64_t quot(int64_t a, int64_t b) { return a >= 0 && b > 0 ? a / b : DIM_UNKNOWN; }

static bool want_float(Node *n, Diag *d, int i, const char *what) {
  if (!is_float(n->in[i]->dt))
    return infer_fail(d, n, "input %d (%s) has element type %s, expected f16, bf16, f32 or f64", i,
                      what, dtype_name(n->in[i]->dt));
  return true;
}

static bool want_type(Node *n, Diag *d, int i, const char *what, DType t) {
  if (n->in[i]->dt != t)
    return infer_fail(d, n, "input %d (%s) has element type %s, expected %s", i, what,
                      dtype_name(n->in[i]->dt), dtype_name(t));
  return true;
}

static bool want_rank(Node *n, Diag *d, int i, const char *what, int rank) {
  int r = n->in[i]->shape.rank;
  if (r >= 0 && r != rank)
    return infer_fail(d, n, "input %d (%s) has rank %d, expected %d", i, what, r, rank);
  return true;
}

/* Known extents a and b must agree. */
static bool want_same(Node *n, Diag *d, int64_t a, int64_t b, const char *what) {
  if (a >= 0 && b >= 0 && a != b)
    return infer_fail(d, n, "%s: %lld and %lld differ", what, LL(a), LL(b));
  return true;
}

/* Known extent x must be a multiple of k (k > 0). */
static bool want_div(Node *n, Diag *d, int64_t x, int64_t k, const char *what) {
  if (x >= 0 && k > 0 && x % k != 0)
    return infer_fail(d, n, "%s %lld is not a multiple of %lld", what, LL(x), LL(k));
  return true;
}

static Shape shape4(int64_t a, int64_t b, int64_t c, int64_t e) {
  int64_t v[4] = {a, b, c, e};
  return shape_make(4, v);
}

static Shape shape3(int64_t a, int64_t b, int64_t c) {
  int64_t v[3] = {a, b, c};
  return shape_make(3, v);
}

/* ---- Attention ---------------------------------------------------------------------- */

/* Geometry of an Attention node in the 4-D view (unknown extents are DIM_UNKNOWN). */
typedef struct AttnDims {
  int rank;              /* of Q, K, V: 3 or 4 */
  int64_t b, hq, hkv, sq, skv, dk, dv, past;
} AttnDims;

static bool attn_dims(Node *n, Diag *d, AttnDims *a) {
  const Value *q = n->in[0], *k = n->in[1], *v = n->in[2];
  a->rank = q->shape.rank;
  if (a->rank != 3 && a->rank != 4)
    return infer_fail(d, n, "input 0 (Q) has rank %d, expected 3 or 4", a->rank);
  if (!want_rank(n, d, 1, "K", a->rank) || !want_rank(n, d, 2, "V", a->rank))
    return false;
  a->b = dim(q, 0);
  if (a->rank == 4) {
    a->hq = dim(q, 1);
    a->sq = dim(q, 2);
    a->dk = dim(q, 3);
    a->hkv = dim(k, 1);
    a->skv = dim(k, 2);
    a->dv = dim(v, 3);
    if (!want_same(n, d, a->dk, dim(k, 3), "head sizes of Q and K") ||
        !want_same(n, d, a->hkv, dim(v, 1), "head counts of K and V") ||
        !want_same(n, d, a->skv, dim(v, 2), "sequence lengths of K and V"))
      return false;
  } else {
    a->hq = ir_attr_int(n, "q_num_heads", 0);
    a->hkv = ir_attr_int(n, "kv_num_heads", 0);
    if (a->hq <= 0 || a->hkv <= 0)
      return infer_fail(d, n, "3-D inputs need positive q_num_heads and kv_num_heads attributes");
    if (!want_div(n, d, dim(q, 2), a->hq, "hidden size of Q") ||
        !want_div(n, d, dim(k, 2), a->hkv, "hidden size of K") ||
        !want_div(n, d, dim(v, 2), a->hkv, "hidden size of V"))
      return false;
    a->sq = dim(q, 1);
    a->skv = dim(k, 1);
    a->dk = quot(dim(q, 2), a->hq);
    a->dv = quot(dim(v, 2), a->hkv);
    if (!want_same(n, d, a->dk, quot(dim(k, 2), a->hkv), "head sizes of Q and K") ||
        !want_same(n, d, a->skv, dim(v, 1), "sequence lengths of K and V"))
      return false;
  }
  if (!want_same(n, d, a->b, dim(k, 0), "batch sizes of Q and K") ||
      !want_same(n, d, a->b, dim(v, 0), "batch sizes of Q and V"))
    return false;
  if (a->hq > 0 && a->hkv > 0 && a->hq % a->hkv != 0)
    return infer_fail(d, n, "q_num_heads %lld is not a multiple of kv_num_heads %lld", LL(a->hq),
                      LL(a->hkv));
  a->past = 0;
  if (ir_has_input(n, 4) != ir_has_input(n, 5))
    return infer_fail(d, n, "past_key and past_value must be given together");
  if (ir_has_input(n, 4)) {
    if (!want_rank(n, d, 4, "past_key", 4) || !want_rank(n, d, 5, "past_value", 4))
      return false;
    const Value *pk = n->in[4], *pv = n->in[5];
    a->past = dim(pk, 2);
    if (!want_same(n, d, a->b, dim(pk, 0), "batch sizes of Q and past_key") ||
        !want_same(n, d, a->hkv, dim(pk, 1), "head counts of K and past_key") ||
        !want_same(n, d, a->dk, dim(pk, 3), "head sizes of K and past_key") ||
        !want_same(n, d, a->b, dim(pv, 0), "batch sizes of Q and past_value") ||
        !want_same(n, d, a->hkv, dim(pv, 1), "head counts of V and past_value") ||
        !want_same(n, d, a->past, dim(pv, 2), "sequence lengths of past_key and past_value") ||
        !want_same(n, d, a->dv, dim(pv, 3), "head sizes of V and past_value"))
      return false;
  }
  return true;
}

/* attn_mask broadcasts to (batch, q_heads, q_seq, <= total kv) from the right. */
static bool attn_mask_ok(Node *n, Diag *d, const AttnDims *a, int64_t total) {
  const Value *m = n->in[3];
  if (m->dt != DT_BOOL && m->dt != n->in[0]->dt)
    return infer_fail(d, n, "input 3 (attn_mask) has element type %s, expected bool or %s",
                      dtype_name(m->dt), dtype_name(n->in[0]->dt));
  int r = m->shape.rank;
  if (r < 0)
    return true;
  if (r < 2 || r > 4)
    return infer_fail(d, n, "input 3 (attn_mask) has rank %d, expected 2 to 4", r);
  int64_t full[4] = {a->b, a->hq, a->sq, total};
  for (int i = 0; i < r; i++) {
    int64_t e = m->shape.d[i], want = full[4 - r + i];
    if (e < 0 || want < 0)
      continue;
    bool last = i == r - 1;
    if (last ? e > want : (e != 1 && e != want))
      return infer_fail(d, n, "input 3 (attn_mask) dim %d is %lld, which does not fit %lld", i,
                        LL(e), LL(want));
  }
  return true;
}

bool infer_Attention(Node *n, Diag *d) {
  AttnDims a;
  if (!want_float(n, d, 0, "Q") || !want_type(n, d, 1, "K", n->in[0]->dt) ||
      !want_type(n, d, 2, "V", n->in[0]->dt) || !attn_dims(n, d, &a))
    return false;
  DType t = n->in[0]->dt;
  if (ir_has_input(n, 4) &&
      (!want_type(n, d, 4, "past_key", t) || !want_type(n, d, 5, "past_value", t)))
    return false;
  int64_t total = a.past >= 0 && a.skv >= 0 ? a.past + a.skv : DIM_UNKNOWN;
  if (ir_has_input(n, 3) && !attn_mask_ok(n, d, &a, total))
    return false;
  if (ir_has_input(n, 6)) {
    if (!want_type(n, d, 6, "nonpad_kv_seqlen", DT_I64) || !want_rank(n, d, 6, "nonpad_kv_seqlen", 1))
      return false;
    if (ir_has_input(n, 4))
      return infer_fail(d, n, "nonpad_kv_seqlen cannot be used with past_key/past_value");
  }
  int64_t mode = ir_attr_int(n, "qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    return infer_fail(d, n, "qk_matmul_output_mode %lld is not 0, 1, 2 or 3", LL(mode));
  Shape y = a.rank == 4 ? shape4(a.b, a.hq, a.sq, a.dv)
                        : shape3(a.b, a.sq, a.dv >= 0 ? a.hq * a.dv : DIM_UNKNOWN);
  infer_set(n, 0, t, &y);
  if (n->n_out > 1) {
    Shape pk = shape4(a.b, a.hkv, total, a.dk);
    infer_set(n, 1, t, &pk);
  }
  if (n->n_out > 2) {
    Shape pv = shape4(a.b, a.hkv, total, a.dv);
    infer_set(n, 2, t, &pv);
  }
  if (n->n_out > 3) {
    Shape qk = shape4(a.b, a.hq, a.sq, total);
    infer_set(n, 3, t, &qk);
  }
  return true;
}

/* ---- FlexAttention (ai.onnx.preview) -------------------------------------------------
 * Rank-4 scaled dot-product attention with GQA; a node with score_mod /
 * prob_mod subgraphs is lowered into plain dataflow before inference
 * (lower_flex.c), which checks it here first. */

bool infer_FlexAttention(Node *n, Diag *d) {
  if (ir_attr(n, "score_mod") || ir_attr(n, "prob_mod"))
    return infer_fail(d, n, "score_mod / prob_mod subgraphs must be lowered before inference");
  return flex_attention_check(n, d);
}

bool flex_attention_check(Node *n, Diag *d) {
  if (!want_float(n, d, 0, "Q") || !want_type(n, d, 1, "K", n->in[0]->dt) ||
      !want_type(n, d, 2, "V", n->in[0]->dt))
    return false;
  for (int i = 0; i < 3; i++)
    if (!want_rank(n, d, i, i == 0 ? "Q" : i == 1 ? "K" : "V", 4))
      return false;
  const Value *q = n->in[0], *k = n->in[1], *v = n->in[2];
  int64_t hq = dim(q, 1), hkv = dim(k, 1);
  if (!want_same(n, d, dim(q, 0), dim(k, 0), "batch sizes of Q and K") ||
      !want_same(n, d, dim(q, 0), dim(v, 0), "batch sizes of Q and V") ||
      !want_same(n, d, dim(q, 3), dim(k, 3), "head sizes of Q and K") ||
      !want_same(n, d, hkv, dim(v, 1), "head counts of K and V") ||
      !want_same(n, d, dim(k, 2), dim(v, 2), "sequence lengths of K and V"))
    return false;
  if (hq > 0 && hkv > 0 && hq % hkv != 0)
    return infer_fail(d, n, "Q's %lld heads are not a multiple of K's %lld", LL(hq), LL(hkv));
  Shape y = shape4(dim(q, 0), hq, dim(q, 2), dim(v, 3));
  infer_set(n, 0, q->dt, &y);
  return true;
}

/* ---- RotaryEmbedding ------------------------------------------------------------------ */

bool infer_RotaryEmbedding(Node *n, Diag *d) {
  const Value *x = n->in[0];
  if (!want_float(n, d, 0, "X") || !want_type(n, d, 1, "cos_cache", x->dt) ||
      !want_type(n, d, 2, "sin_cache", x->dt))
    return false;
  int r = x->shape.rank;
  if (r >= 0 && r != 3 && r != 4)
    return infer_fail(d, n, "input 0 (X) has rank %d, expected 3 or 4", r);
  int64_t heads = ir_attr_int(n, "num_heads", 0), rd = ir_attr_int(n, "rotary_embedding_dim", 0);
  int64_t head = DIM_UNKNOWN;
  if (r == 3) {
    if (heads <= 0)
      return infer_fail(d, n, "3-D input needs a positive num_heads attribute");
    if (!want_div(n, d, dim(x, 2), heads, "hidden size of X"))
      return false;
    head = quot(dim(x, 2), heads);
  } else if (r == 4) {
    head = dim(x, 3);
  }
  if (rd < 0 || (rd > 0 && head >= 0 && rd > head))
    return infer_fail(d, n, "rotary_embedding_dim %lld is out of range for head size %lld", LL(rd),
                      LL(head));
  int64_t rot = rd > 0 ? rd : head;
  if (rot >= 0 && rot % 2 != 0)
    return infer_fail(d, n, "rotary dimension %lld is odd", LL(rot));
  bool pos = ir_has_input(n, 3);
  if (pos && !dtype_is_int(n->in[3]->dt))
    return infer_fail(d, n, "input 3 (position_ids) has element type %s, expected an integer type",
                      dtype_name(n->in[3]->dt));
  if (pos && !want_rank(n, d, 3, "position_ids", 2))
    return false;
  for (int i = 1; i <= 2; i++) {
    const char *what = i == 1 ? "cos_cache" : "sin_cache";
    if (!want_rank(n, d, i, what, pos ? 2 : 3))
      return false;
    int cr = n->in[i]->shape.rank;
    if (cr > 0 && rot >= 0 && !want_same(n, d, dim(n->in[i], cr - 1), rot / 2, what))
      return false;
  }
  infer_set(n, 0, x->dt, &x->shape);
  return true;
}

/* ---- LinearAttention ------------------------------------------------------------------- */

static bool read_rule(Node *n, Diag *d, bool *gated, bool *delta) {
  const char *rule = ir_attr_str(n, "update_rule", "gated_delta");
  *gated = strcmp(rule, "gated") == 0 || strcmp(rule, "gated_delta") == 0;
  *delta = strcmp(rule, "delta") == 0 || strcmp(rule, "gated_delta") == 0;
  if (!*gated && !*delta && strcmp(rule, "linear") != 0)
    return infer_fail(d, n, "update_rule '%s' is not linear, gated, delta or gated_delta", rule);
  if (*gated != ir_has_input(n, 4))
    return infer_fail(d, n, "update_rule '%s' %s the decay input", rule,
                      *gated ? "requires" : "forbids");
  if (*delta != ir_has_input(n, 5))
    return infer_fail(d, n, "update_rule '%s' %s the beta input", rule,
                      *delta ? "requires" : "forbids");
  return true;
}

bool infer_LinearAttention(Node *n, Diag *d) {
  const Value *q = n->in[0], *k = n->in[1], *v = n->in[2];
  bool gated, delta;
  if (!want_float(n, d, 0, "query") || !want_type(n, d, 1, "key", q->dt) ||
      !want_type(n, d, 2, "value", q->dt) || !read_rule(n, d, &gated, &delta))
    return false;
  for (int i = 0; i < 3; i++)
    if (!want_rank(n, d, i, i == 0 ? "query" : i == 1 ? "key" : "value", 3))
      return false;
  int64_t hq = ir_attr_int(n, "q_num_heads", 0), hkv = ir_attr_int(n, "kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    return infer_fail(d, n, "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)",
                      LL(hq), LL(hkv));
  if (!want_div(n, d, dim(q, 2), hq, "hidden size of query") ||
      !want_div(n, d, dim(k, 2), hkv, "hidden size of key") ||
      !want_div(n, d, dim(v, 2), hkv, "hidden size of value"))
    return false;
  int64_t b = dim(q, 0), t = dim(q, 1), dk = quot(dim(q, 2), hq), dv = quot(dim(v, 2), hkv);
  if (!want_same(n, d, dk, quot(dim(k, 2), hkv), "head sizes of query and key") ||
      !want_same(n, d, b, dim(k, 0), "batch sizes of query and key") ||
      !want_same(n, d, b, dim(v, 0), "batch sizes of query and value") ||
      !want_same(n, d, t, dim(k, 1), "sequence lengths of query and key") ||
      !want_same(n, d, t, dim(v, 1), "sequence lengths of query and value"))
    return false;
  DType st = q->dt;
  if (ir_has_input(n, 3)) {
    const Value *ps = n->in[3];
    if (!want_float(n, d, 3, "past_state") || !want_rank(n, d, 3, "past_state", 4))
      return false;
    if (!want_same(n, d, b, dim(ps, 0), "past_state batch") ||
        !want_same(n, d, hkv, dim(ps, 1), "past_state heads") ||
        !want_same(n, d, dk, dim(ps, 2), "past_state key size") ||
        !want_same(n, d, dv, dim(ps, 3), "past_state value size"))
      return false;
    st = ps->dt;
  }
  if (gated) {
    if (!want_type(n, d, 4, "decay", q->dt) || !want_rank(n, d, 4, "decay", 3))
      return false;
    int64_t last = dim(n->in[4], 2);
    if (last >= 0 && dk >= 0 && last != hkv && last != hkv * dk)
      return infer_fail(d, n, "decay last dim %lld must be kv_num_heads (%lld) or kv_num_heads*d_k "
                        "(%lld)", LL(last), LL(hkv), LL(hkv * dk));
  }
  if (delta) {
    if (!want_type(n, d, 5, "beta", q->dt) || !want_rank(n, d, 5, "beta", 3))
      return false;
    int64_t last = dim(n->in[5], 2);
    if (last >= 0 && last != hkv && last != 1)
      return infer_fail(d, n, "beta last dim %lld must be kv_num_heads (%lld) or 1", LL(last),
                        LL(hkv));
  }
  Shape y = shape3(b, t, dv >= 0 ? hq * dv : DIM_UNKNOWN), s = shape4(b, hkv, dk, dv);
  infer_set(n, 0, q->dt, &y);
  infer_set(n, 1, st, &s);
  return true;
}

/* ---- CausalConvWithState --------------------------------------------------------------- */

bool infer_CausalConvWithState(Node *n, Diag *d) {
  const Value *x = n->in[0], *w = n->in[1];
  if (!want_float(n, d, 0, "input") || !want_type(n, d, 1, "weight", x->dt) ||
      !want_rank(n, d, 0, "input", 3) || !want_rank(n, d, 1, "weight", 3))
    return false;
  const char *act = ir_attr_str(n, "activation", "none");
  if (strcmp(act, "none") != 0 && strcmp(act, "silu") != 0 && strcmp(act, "swish") != 0)
    return infer_fail(d, n, "activation '%s' is not none, silu or swish", act);
  int64_t b = dim(x, 0), c = dim(x, 1), k = dim(w, 2);
  if (!want_same(n, d, c, dim(w, 0), "channels of input and weight") ||
      !want_same(n, d, 1, dim(w, 1), "weight dim 1"))
    return false;
  if (k == 0)
    return infer_fail(d, n, "weight has kernel size 0");
  if (ir_has_input(n, 2)) {
    if (!want_type(n, d, 2, "bias", x->dt) || !want_rank(n, d, 2, "bias", 1) ||
        !want_same(n, d, c, dim(n->in[2], 0), "channels of input and bias"))
      return false;
  }
  int64_t km1 = k >= 1 ? k - 1 : DIM_UNKNOWN;
  if (ir_has_input(n, 3)) {
    const Value *p = n->in[3];
    if (!want_type(n, d, 3, "past_state", x->dt) || !want_rank(n, d, 3, "past_state", 3) ||
        !want_same(n, d, b, dim(p, 0), "batch of input and past_state") ||
        !want_same(n, d, c, dim(p, 1), "channels of input and past_state") ||
        !want_same(n, d, km1, dim(p, 2), "past_state length and kernel size - 1"))
      return false;
  }
  Shape ps = shape3(b, c, km1);
  infer_set(n, 0, x->dt, &x->shape);
  infer_set(n, 1, x->dt, &ps);
  return true;
}

/* ---- Einsum ------------------------------------------------------------------------------
 * Parsed into terms of labels; an ellipsis becomes the marker '.' in a term and
 * is expanded into letters unused by the equation once every rank is known. */

#define EIN_MAX_TERMS 16
#define EIN_LABELS 52

typedef struct EinTerm {
  char lab[IR_MAX_RANK + 1];   /* letters, '.' for the ellipsis */
  int n;                       /* entries of lab */
  bool ell;
} EinTerm;

static int label_index(char c) {
  if (c >= 'a' && c <= 'z')
    return c - 'a';
  if (c >= 'A' && c <= 'Z')
    return 26 + c - 'A';
  return -1;
}

static char label_char(int i) { return (char)(i < 26 ? 'a' + i : 'A' + (i - 26)); }

/* Parses one term starting at *p up to ',' / '-' / end. */
static bool ein_term(Node *n, Diag *d, const char **p, EinTerm *t) {
  memset(t, 0, sizeof *t);
  const char *s = *p;
  while (*s && *s != ',' && *s != '-') {
    if (*s == ' ') {
      s++;
    } else if (*s == '.') {
      if (strncmp(s, "...", 3) != 0 || t->ell)
        return infer_fail(d, n, "equation has a malformed or repeated ellipsis");
      t->ell = true;
      t->lab[t->n++] = '.';
      s += 3;
    } else if (label_index(*s) >= 0) {
      if (t->n >= IR_MAX_RANK)
        return infer_fail(d, n, "equation term has more than %d labels", IR_MAX_RANK);
      t->lab[t->n++] = *s++;
    } else {
      return infer_fail(d, n, "equation has an invalid character '%c'", *s);
    }
  }
  *p = s;
  return true;
}

typedef struct Einsum {
  EinTerm in[EIN_MAX_TERMS];
  int n_in;
  EinTerm out;
  bool explicit_out;
} Einsum;

static bool ein_parse(Node *n, Diag *d, const char *eq, Einsum *e) {
  memset(e, 0, sizeof *e);
  const char *p = eq;
  for (;;) {
    if (e->n_in >= EIN_MAX_TERMS)
      return infer_fail(d, n, "equation has more than %d operands", EIN_MAX_TERMS);
    if (!ein_term(n, d, &p, &e->in[e->n_in++]))
      return false;
    if (*p == ',') {
      p++;
      continue;
    }
    break;
  }
  if (*p == '-') {
    if (p[1] != '>')
      return infer_fail(d, n, "equation has '-' not followed by '>'");
    p += 2;
    e->explicit_out = true;
    if (!ein_term(n, d, &p, &e->out))
      return false;
    if (*p)
      return infer_fail(d, n, "equation has more than one '->' or a ',' in its output");
  }
  return true;
}

/* Rewrites the equation attribute to text (explicit, no ellipsis). */
static void set_equation(Node *n, const char *text) {
  ir_attr_remove(n, "equation");
  Attr *a = ir_attr_add(n, "equation", AT_STRING);
  a->u.s = arena_strdup(n->g->arena, text);
  a->slen = strlen(text);
}

bool infer_Einsum(Node *n, Diag *d) {
  const Attr *at = ir_attr(n, "equation");
  if (!at || at->kind != AT_STRING)
    return infer_fail(d, n, "missing equation attribute");
  Einsum e;
  if (!ein_parse(n, d, at->u.s, &e))
    return false;
  if (e.n_in != n->n_in)
    return infer_fail(d, n, "equation has %d operands but the node has %d inputs", e.n_in, n->n_in);
  DType t = n->in[0]->dt;
  for (int i = 1; i < n->n_in; i++)
    if (!want_type(n, d, i, "operand", t))
      return false;
  if (t == DT_BOOL || t == DT_STRING || dtype_bits(t) < 8)
    return infer_fail(d, n, "element type %s is not supported", dtype_name(t));
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i]->shape.rank < 0) {
      infer_set(n, 0, t, NULL);
      return true;
    }
  /* Extents per label, counts per label, and the ellipsis dims (broadcast). */
  int64_t ext[EIN_LABELS];
  int count[EIN_LABELS] = {0};
  bool used[EIN_LABELS] = {false};
  int ell_rank = 0;
  int64_t ell[IR_MAX_RANK];
  for (int i = 0; i < EIN_LABELS; i++)
    ext[i] = 1;
  for (int i = 0; i < n->n_in; i++) {
    const EinTerm *tm = &e.in[i];
    const Shape *s = &n->in[i]->shape;
    int letters = tm->n - (tm->ell ? 1 : 0);
    if (tm->ell ? s->rank < letters : s->rank != letters)
      return infer_fail(d, n, "operand %d has rank %d, but its term '%s' names %d dims", i, s->rank,
                        tm->lab, letters);
    int er = s->rank - letters, axis = 0;
    for (int j = 0; j < tm->n; j++) {
      if (tm->lab[j] == '.') {
        /* right-aligned numpy broadcast of the ellipsis dims */
        if (er > ell_rank) {
          for (int k = ell_rank - 1; k >= 0; k--)
            ell[k + er - ell_rank] = ell[k];
          for (int k = 0; k < er - ell_rank; k++)
            ell[k] = 1;
          ell_rank = er;
        }
        for (int k = 0; k < er; k++) {
          int64_t x = s->d[axis + k], *o = &ell[ell_rank - er + k];
          if (x < 0 || *o < 0) {
            *o = DIM_UNKNOWN;
          } else if (*o == 1) {
            *o = x;
          } else if (x != 1 && x != *o) {
            return infer_fail(d, n, "ellipsis dims of operand %d do not broadcast", i);
          }
        }
        axis += er;
        continue;
      }
      int li = label_index(tm->lab[j]);
      int64_t x = s->d[axis++];
      count[li]++;
      if (!used[li]) {
        used[li] = true;
        ext[li] = x;
      } else if (x < 0 || ext[li] < 0) {
        ext[li] = DIM_UNKNOWN;
      } else if (x != ext[li]) {
        if (ext[li] == 1)
          ext[li] = x;
        else if (x != 1)
          return infer_fail(d, n, "label '%c' has extents %lld and %lld", tm->lab[j], LL(ext[li]),
                            LL(x));
      }
    }
  }
  /* The output term: explicit, or the labels used once in alphabetical order
   * (numpy: lower case before upper case) after the ellipsis dims. */
  EinTerm out = e.out;
  if (!e.explicit_out) {
    memset(&out, 0, sizeof out);
    if (ell_rank > 0) {
      out.ell = true;
      out.lab[out.n++] = '.';
    }
    for (int li = 0; li < EIN_LABELS; li++)
      if (count[li] == 1)
        out.lab[out.n++] = label_char(li);
  } else {
    for (int j = 0; j < out.n; j++) {
      if (out.lab[j] == '.')
        continue;
      int li = label_index(out.lab[j]);
      if (!used[li])
        return infer_fail(d, n, "output label '%c' names no input dim", out.lab[j]);
      for (int k = 0; k < j; k++)
        if (out.lab[k] == out.lab[j])
          return infer_fail(d, n, "output label '%c' is repeated", out.lab[j]);
    }
    if (ell_rank > 0 && !out.ell)
      return infer_fail(d, n, "equation has an ellipsis in its inputs but not in its output");
  }
  /* Letters for the ellipsis dims, then the rewritten equation. */
  char ell_lab[IR_MAX_RANK];
  int next = 0;
  for (int k = 0; k < ell_rank; k++) {
    while (next < EIN_LABELS && used[next])
      next++;
    if (next == EIN_LABELS)
      return infer_fail(d, n, "equation uses too many labels");
    ell_lab[k] = label_char(next);
    ext[next] = ell[k];
    used[next++] = true;
  }
  if (out.n - (out.ell ? 1 : 0) + ell_rank > IR_MAX_RANK)
    return infer_fail(d, n, "output rank exceeds %d", IR_MAX_RANK);
  Buf eq;
  buf_init(&eq);
  Shape ys;
  ys.rank = 0;
  for (int i = 0; i <= n->n_in; i++) {
    const EinTerm *tm = i < n->n_in ? &e.in[i] : &out;
    if (i == n->n_in)
      buf_puts(&eq, "->");
    else if (i > 0)
      buf_putc(&eq, ',');
    int er = i < n->n_in ? n->in[i]->shape.rank - (tm->n - (tm->ell ? 1 : 0)) : ell_rank;
    for (int j = 0; j < tm->n; j++) {
      if (tm->lab[j] == '.') {
        for (int k = ell_rank - er; k < ell_rank; k++) {
          buf_putc(&eq, ell_lab[k]);
          if (i == n->n_in)
            ys.d[ys.rank++] = ell[k];
        }
      } else {
        buf_putc(&eq, tm->lab[j]);
        if (i == n->n_in)
          ys.d[ys.rank++] = ext[label_index(tm->lab[j])];
      }
    }
  }
  for (int i = 0; i < ys.rank; i++)
    ys.sym[i] = NULL, ys.x[i] = NULL;
  set_equation(n, eq.s);
  buf_free(&eq);
  infer_set(n, 0, t, &ys);
  return true;
}
