/* fuse_bn.c - per-channel affine ops folded into the Conv or Gemm before them.
 *
 * requires: inferred types and shapes; constants folded (weights are VK_CONST).
 * provides: no inference BatchNormalization, and no Mul/Div by or Add/Sub of a
 *   per-channel constant, whose input is a Conv or Gemm output that nothing
 *   else reads and whose weights (and bias) are constant f32/f64 data.
 * invalidates: schedule positions (the affine nodes go); the Conv/Gemm reads
 *   new weight and bias constants (the old ones are left to whoever else uses
 *   them, so shared weights are never changed).
 * Each foldable op is y = x * s[c] + t[c] over the output channel c (dim 1):
 *   BatchNormalization  s = scale / sqrt(var + eps), t = B - mean * s
 *   Mul by k / Div by k  s = k (1/k), t = 0;  Add k / Sub k  s = 1, t = +k (-k)
 * where k is a constant that broadcasts per channel ([C,1,1], [1,C,1,1],
 * scalar...) without growing x. Conv(W, b) then becomes Conv(W * s, b * s + t)
 * (W scaled along its output-channel dim 0); Gemm(A, B, C) with beta becomes
 * Gemm(A, B * s, beta * C * s + t) with beta 1 (B scaled per output column:
 * its columns, or its rows under transB). Arithmetic is done in double and
 * rounded once into the weights' type. Nodes are visited in schedule order,
 * so Conv -> BN -> Mul -> Add folds step by step into the one Conv.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

typedef struct Affine {
  double *s, *t;     /* per channel */
  bool scales;       /* s may differ from 1: the weights change */
  bool shifts;       /* t may differ from 0: the bias changes */
} Affine;

static bool const_of(const Value *v, DType dt) { return v->kind == VK_CONST && v->dt == dt; }

/* ---- the absorbing node ------------------------------------------------------ */

/* Gemm's C as one value per output column (times beta); false when C varies
 * along the rows. A missing C is all zeros. */
static bool gemm_bias(const Node *n, int64_t cols, double *c) {
  double beta = ir_attr_float(n, "beta", 1.0f);
  for (int64_t j = 0; j < cols; j++)
    c[j] = 0;
  if (!ir_has_input(n, 2))
    return true;
  const Value *cv = n->in[2];
  if (!const_of(cv, n->out[0]->dt) || cv->shape.rank > 2)
    return false;
  const Shape *s = &cv->shape;
  if (s->rank == 2 && s->d[0] != 1)
    return false;
  int64_t w = s->rank == 0 ? 1 : s->d[s->rank - 1];
  if (w != 1 && w != cols)
    return false;
  for (int64_t j = 0; j < cols; j++)
    c[j] = beta * tensor_get_f64(cv->konst, w == 1 ? 0 : j);
  return true;
}

/* The Conv or Gemm that produces x and can take in a per-channel affine op
 * (x read by that op alone, constant f32/f64 weights and bias); NULL if none.
 * *channels: the output channel count. */
static Node *absorber(const Value *x, const Captured *cap, int64_t *channels) {
  if (x->kind != VK_NODE || !x->producer || x->n_uses != 1 || x->is_output || rewrite_is_captured(cap, x))
    return NULL;
  Node *p = x->producer;
  DType dt = x->dt;
  /* the spatial dims may be -D ranges: only the channels must be known */
  if ((dt != DT_F32 && dt != DT_F64) || x->shape.rank < 2 || x->shape.d[1] < 0)
    return NULL;
  if (p->op == OP_Conv) {
    const Value *w = p->in[1];
    if (!const_of(w, dt) || w->shape.rank < 3 || w->shape.d[0] != x->shape.d[1])
      return NULL;
    if (ir_has_input(p, 2) && (!const_of(p->in[2], dt) || p->in[2]->konst->numel != w->shape.d[0]))
      return NULL;
    *channels = w->shape.d[0];
    return *channels > 0 ? p : NULL;
  }
  if (p->op == OP_Gemm) {
    if (!const_of(p->in[1], dt) || p->in[1]->shape.rank != 2 || x->shape.rank != 2)
      return NULL;
    *channels = x->shape.d[1];
    return *channels > 0 ? p : NULL;
  }
  return NULL;
}

/* ---- the affine op ------------------------------------------------------------ */

static void affine_init(Affine *a, Graph *g, int64_t channels) {
  a->s = arena_alloc(g->arena, (size_t)channels * sizeof(double));
  a->t = arena_alloc(g->arena, (size_t)channels * sizeof(double));
  for (int64_t c = 0; c < channels; c++)
    a->s[c] = 1, a->t[c] = 0;
  a->scales = a->shifts = false;
}

static bool bn_affine(const Node *bn, int64_t channels, Affine *a) {
  if (bn->g->opset < 9 && ir_attr_int(bn, "spatial", 1) == 0)
    return false;  /* parameters per element, not per channel */
  for (int i = 1; i < 5; i++) {
    const Value *p = bn->in[i];
    if (p->kind != VK_CONST || p->shape.rank != 1 || p->konst->numel != channels || !dtype_is_float(p->dt))
      return false;
  }
  double eps = ir_attr_float(bn, "epsilon", 1e-5f);
  for (int64_t c = 0; c < channels; c++) {
    double var = tensor_get_f64(bn->in[4]->konst, c) + eps;
    if (!(var > 0))
      return false;
    a->s[c] = tensor_get_f64(bn->in[1]->konst, c) / sqrt(var);
    a->t[c] = tensor_get_f64(bn->in[2]->konst, c) - tensor_get_f64(bn->in[3]->konst, c) * a->s[c];
  }
  a->scales = a->shifts = true;
  return true;
}

/* k's value for each channel when k broadcasts against x (shape xs) along
 * dim 1 only and does not grow x: rank <= x's, every dim 1 except dim 1,
 * which is 1 or the channel count. */
static bool per_channel(const Value *k, const Shape *xs, int64_t channels, double *out) {
  const Shape *ks = &k->shape;
  if (k->kind != VK_CONST || ks->rank < 0 || ks->rank > xs->rank)
    return false;
  int64_t stride = 0;
  for (int i = 0; i < ks->rank; i++) {
    int axis = xs->rank - ks->rank + i;
    if (ks->d[i] == 1)
      continue;
    if (axis != 1 || ks->d[i] != channels)
      return false;
    stride = 1;  /* the other dims are 1, so channel c sits at index c */
  }
  for (int64_t c = 0; c < channels; c++)
    out[c] = tensor_get_f64(k->konst, c * stride);
  return true;
}

/* Mul/Div/Add/Sub of x and a per-channel constant as an affine map of x. */
static bool ew_affine(const Node *n, const Value *x, int64_t channels, Affine *a) {
  bool x_first = n->in[0] == x;
  const Value *k = x_first ? n->in[1] : n->in[0];
  if (k == x || k->dt != x->dt || n->out[0]->dt != x->dt || !rewrite_same_shape(&n->out[0]->shape, &x->shape))
    return false;
  if (!x_first && (n->op == OP_Sub || n->op == OP_Div))
    return false;  /* k - x, k / x: not affine in this form */
  double *v = n->op == OP_Add || n->op == OP_Sub ? a->t : a->s;
  if (!per_channel(k, &x->shape, channels, v))
    return false;
  for (int64_t c = 0; c < channels; c++) {
    if (n->op == OP_Div) {
      if (v[c] == 0)
        return false;
      v[c] = 1 / v[c];
    } else if (n->op == OP_Sub) {
      v[c] = -v[c];
    }
    if (!isfinite(v[c]))
      return false;
  }
  a->scales = n->op == OP_Mul || n->op == OP_Div;
  a->shifts = !a->scales;
  return true;
}

/* ---- folding ------------------------------------------------------------------ */

/* A new constant named after the one it replaces ("w" -> "w_fused", then
 * "w_fused_1"...) or, for a new bias, after the node. */
static Value *new_const(Node *p, const Value *like, DType dt, const Shape *s, Diag *d) {
  Tensor *t = ir_tensor_new(p->g, dt, s, d);
  if (!t)
    return NULL;
  const char *name = arena_printf(p->g->arena, "%s_bias", p->name);
  if (like) {
    const char *cut = strstr(like->name, "_fused");
    int len = cut ? (int)(cut - like->name) : (int)strlen(like->name);
    name = arena_printf(p->g->arena, "%.*s_fused", len, like->name);
  }
  return ir_const_new(p->g, name, t);
}

/* Weights scaled along one dim: element i belongs to channel (i / inner) % channels. */
static Value *scaled_weights(Node *p, const Affine *a, int64_t channels, int64_t inner, Diag *d) {
  const Value *w = p->in[1];
  Value *nw = new_const(p, w, w->dt, &w->shape, d);
  if (!nw)
    return NULL;
  for (int64_t i = 0; i < w->konst->numel; i++)
    tensor_set_f64(nw->konst, i, tensor_get_f64(w->konst, i) * a->s[(i / inner) % channels]);
  return nw;
}

static void set_bias(Node *p, Value *b) {
  if (p->n_in < 3)
    ir_node_add_input(p, b);
  else
    ir_node_set_input(p, 2, b);
}

static bool fold_conv(Node *p, const Affine *a, int64_t channels, Diag *d) {
  const Value *w = p->in[1];
  if (a->scales) {
    Value *nw = scaled_weights(p, a, channels, w->konst->numel / channels, d);
    if (!nw)
      return false;
    ir_node_set_input(p, 1, nw);
  }
  bool has_bias = ir_has_input(p, 2);
  if (!has_bias && !a->shifts)
    return true;
  Shape bs = shape_make(1, &channels);
  Value *nb = new_const(p, has_bias ? p->in[2] : NULL, w->dt, &bs, d);
  if (!nb)
    return false;
  for (int64_t c = 0; c < channels; c++) {
    double b = has_bias ? tensor_get_f64(p->in[2]->konst, c) : 0;
    tensor_set_f64(nb->konst, c, b * a->s[c] + a->t[c]);
  }
  set_bias(p, nb);
  return true;
}

/* c: beta * C per column (gemm_bias). */
static bool fold_gemm(Node *p, const Affine *a, int64_t channels, const double *c, Diag *d) {
  const Value *w = p->in[1];
  if (a->scales) {
    /* B is [K,N]: channel j is column j (inner 1); under transB it is [N,K]. */
    bool tb = ir_attr_int(p, "transB", 0) != 0;
    Value *nw = scaled_weights(p, a, channels, tb ? w->shape.d[1] : 1, d);
    if (!nw)
      return false;
    ir_node_set_input(p, 1, nw);
  }
  bool has_c = ir_has_input(p, 2);
  if (!has_c && !a->shifts)
    return true;
  Shape cs = shape_make(1, &channels);
  Value *nc = new_const(p, has_c ? p->in[2] : NULL, w->dt, &cs, d);
  if (!nc)
    return false;
  for (int64_t j = 0; j < channels; j++)
    tensor_set_f64(nc->konst, j, c[j] * a->s[j] + a->t[j]);
  set_bias(p, nc);
  ir_attr_add(p, "beta", AT_FLOAT)->u.f = 1.0f;
  return true;
}

/* Folds affine node n into the producer of one of its inputs when it can. */
static bool try_fold(Node *n, const Captured *cap, Diag *d) {
  if (rewrite_is_captured(cap, n->out[0]))
    return true;
  for (int i = 1; i < n->n_out; i++)
    if (n->out[i]->kind != VK_NONE && (n->out[i]->n_uses > 0 || n->out[i]->is_output))
      return true;
  int tries = n->op == OP_Mul || n->op == OP_Add ? 2 : 1;  /* x on either side */
  for (int k = 0; k < tries; k++) {
    Value *x = n->in[k];
    int64_t channels;
    Node *p = absorber(x, cap, &channels);
    if (!p)
      continue;
    Affine a;
    affine_init(&a, n->g, channels);
    bool ok = n->op == OP_BatchNormalization ? rewrite_same_shape(&n->out[0]->shape, &x->shape) &&
                                                   bn_affine(n, channels, &a)
                                             : ew_affine(n, x, channels, &a);
    if (!ok)
      continue;
    double *c = NULL;
    if (p->op == OP_Gemm) {
      c = arena_alloc(n->g->arena, (size_t)channels * sizeof(double));
      if (!gemm_bias(p, channels, c))
        continue;
    }
    if (!(p->op == OP_Conv ? fold_conv(p, &a, channels, d) : fold_gemm(p, &a, channels, c, d)))
      return false;
    rewrite_record_fused(p, n);
    rewrite_forward(n, x);
    return true;
  }
  return true;
}

/* A float32 inference BatchNormalization left after folding (it follows a
 * Concat, a pool, an input) becomes (x - mean) * a + b, a = scale /
 * sqrt(var + eps) computed here, as Sub, Mul and Add by per-channel constants
 * of shape [C, 1, ...]: the same arithmetic as its kernel, which the
 * elementwise fusion then joins with the activation after it (and gives a
 * parallel kernel on CUDA). */
static bool bn_to_elementwise(Graph *g, Node *n, const Captured *cap, Diag *d) {
  Value *x = n->in[0];
  const Shape *xs = &x->shape;
  if (ir_attr_int(n, "training_mode", 0) != 0 || x->dt != DT_F32 || n->out[0]->dt != DT_F32 || xs->rank < 2 ||
      xs->d[1] < 0 || !shape_is_bounded(xs) || rewrite_is_captured(cap, n->out[0]) || n->n_in != 5)
    return true;
  for (int i = 1; i < n->n_out; i++)
    if (n->out[i]->kind != VK_NONE && (n->out[i]->n_uses > 0 || n->out[i]->is_output))
      return true;
  int64_t c = xs->d[1];
  for (int i = 1; i < 5; i++) {
    const Value *p = n->in[i];
    int64_t k;
    if (p->kind != VK_CONST || p->dt != DT_F32 || !shape_numel(&p->shape, &k) || k != c)
      return true;
  }
  int64_t dims[IR_MAX_RANK];
  dims[0] = c;
  for (int i = 1; i < xs->rank - 1; i++)
    dims[i] = 1;
  Shape ps = shape_make(xs->rank - 1, dims);
  float eps = ir_attr_float(n, "epsilon", 1e-5f);
  Tensor *mean = ir_tensor_new(g, DT_F32, &ps, d), *a = ir_tensor_new(g, DT_F32, &ps, d),
         *b = ir_tensor_new(g, DT_F32, &ps, d);
  if (!mean || !a || !b)
    return false;
  for (int64_t i = 0; i < c; i++) {
    float var = (float)tensor_get_f64(n->in[4]->konst, i);
    tensor_set_f64(mean, i, tensor_get_f64(n->in[3]->konst, i));
    tensor_set_f64(a, i, (double)((float)tensor_get_f64(n->in[1]->konst, i) / sqrtf(var + eps)));
    tensor_set_f64(b, i, tensor_get_f64(n->in[2]->konst, i));
  }
  const char *names[3] = {"center", "scale", "shift"};
  Tensor *ts[3] = {mean, a, b};
  OpKind ops[3] = {OP_Sub, OP_Mul, OP_Add};
  const char *types[3] = {"Sub", "Mul", "Add"};
  Value *cur = x;
  Node *last = NULL;
  for (int i = 0; i < 3; i++) {
    Value *in[2] = {cur, ir_const_new(g, arena_printf(g->arena, "%s_%s", n->name, names[i]), ts[i])};
    last = ir_node_insert(g, n, ops[i], types[i], arena_printf(g->arena, "%s_%s", n->name, names[i]), 2, in, 1);
    if (!infer_node(last, d))
      return false;
    cur = last->out[0];
  }
  rewrite_record_fused(last, n);
  rewrite_forward(n, cur);
  return true;
}

bool pass_fuse_bn(Graph *g, Diag *d) {
  Captured cap = rewrite_captured(g);
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    switch (n->op) {
    case OP_BatchNormalization:
      /* Training mode normalizes with batch statistics: nothing to fold. */
      if (ir_attr_int(n, "training_mode", 0) != 0)
        break;
      /* fall through */
    case OP_Mul:
    case OP_Div:
    case OP_Add:
    case OP_Sub:
      if (!try_fold(n, &cap, d))
        return false;
      break;
    default:
      break;
    }
  }
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (n->op == OP_BatchNormalization && !bn_to_elementwise(g, n, &cap, d))
      return false;
  }
  return true;
}
