/* layout.c - the channel-blocked layout (NCHW16c) between convolution-like ops.
 *
 * requires: inferred static shapes; fusion done (fuse-bn, fuse-epilogue,
 *   fuse-elementwise, fuse-siblings), so a Conv carries its bias, activation
 *   and residual; the target stores blocked tensors (Target.blocked_lanes).
 * provides: regions of float32 4-D nodes whose tensors are stored as
 *   [N][ceil(C/16)][H][W][16] (Value.blocked = 16), with a ToBlocked node on
 *   every tensor that enters a region and a FromBlocked node on every tensor
 *   that leaves one, so every node outside reads and writes row-major NCHW as
 *   before. Inside a region:
 *   - a Conv (2-D, group 1, or depthwise) becomes BlockedConv: its padding
 *     moves into a BlockedPad node before it (a copy of the input inside a
 *     zero border), as does the stride of an unpadded 1x1 conv (a copy of
 *     every s-th row and column: the conv then reads whole lines of one
 *     image a quarter the size, not every other pixel of the whole input
 *     once per panel of weights), its weights are repacked
 *     here (group 1: panels of 32 output channels, k = (channel block, kh,
 *     kw, lane) over the real input channels; depthwise: [C/16][KH*KW][16]),
 *     its bias padded to the panel; the fused activation and residual stay.
 *     A group-1 conv of fewer than 16 input channels (an RGB stem) reads its
 *     input row-major (attribute onnxc.plain; its BlockedPad copy is
 *     row-major too) and writes blocked, so the image needs no conversion;
 *   - MaxPool / AveragePool (2-D, one output) run on the blocked tensor;
 *   - GlobalAveragePool / GlobalMaxPool read a blocked tensor and write a
 *     row-major one (they end a region);
 *   - elementwise nodes (and fused chains) whose operands all have the
 *     output's shape, and channel Concat / Split, join when every tensor they
 *     touch has a multiple of 16 channels: the blocked bytes are then those
 *     of NCHW in another order that every lane-wise kernel and every channel
 *     slice of whole blocks sees alike, so their kernels (and the planner's
 *     views of a Concat's and a Split's slices) stay as they are.
 *   Lanes past C are written (zero weights give zero, pools give values of
 *   other padding lanes) but never read into a real lane: a conv sums the
 *   real input channels only.
 * A region is kept when it holds a conv and its convs' multiply-adds are at
 *   least 64 per element the conversions at its borders move (mode 2,
 *   --layout nchw16c, keeps every region that holds a conv: the tests).
 * invalidates: schedule positions.
 */
#include "passes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LANES 16
#define PANEL 32

static int64_t upto(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

static bool all_f32_static4(const Value *v) {
  return v->dt == DT_F32 && v->shape.rank == 4 && shape_is_static(&v->shape) && !v->dyn_dims;
}

/* Begin and end pads of a 2-D conv or pool (explicit, or auto_pad). */
static bool node_pads(const Node *n, const int64_t *in, const int64_t *out, const int64_t *k,
                      const int64_t *st, const int64_t *di, int64_t *pb, int64_t *pe) {
  ir_window_pads(n, 2, in, out, k, st, di, pb, pe);
  for (int i = 0; i < 2; i++)
    if (pb[i] < 0 || pe[i] < 0)
      return false;
  return true;
}

static void ints2(const Node *n, const char *name, int64_t *v) {
  int k = 0;
  const int64_t *a = ir_attr_ints(n, name, &k);
  v[0] = a && k == 2 ? a[0] : 1;
  v[1] = a && k == 2 ? a[1] : 1;
}

/* K_CONVP: a group-1 conv of fewer than 16 input channels (an RGB stem),
 * which reads its input row-major and writes its output blocked */
/* K_AFFINE: a fused elementwise act(a[c] * x + b[c]) of one tensor (a
 * BatchNormalization not after a conv, DenseNet's), run as a depthwise 1x1
 * BlockedConv */
typedef enum Kind { K_NONE, K_CONV, K_CONVP, K_DW, K_POOL, K_GPOOL, K_LANEWISE, K_AFFINE } Kind;

/* What the blocked conv kernels apply on the way out: a Relu, Clip or
 * LeakyRelu in the tile's store, or a fused elementwise epilogue body
 * (SiLU, HardSwish, GELU...: emit_blocked.c's emit_epilogue) after it. */
static bool act_ok(const Node *n) {
  const char *a = ir_attr_str(n, "activation", "");
  if (ir_attr(n, "epilogue"))
    return !*a;
  return !*a || !strcmp(a, "Relu") || !strcmp(a, "Clip") || !strcmp(a, "LeakyRelu");
}

static Kind conv_kind(const Node *n) {
  if (n->n_out != 1 || !ir_has_input(n, 1) || n->in[1]->kind != VK_CONST || !all_f32_static4(n->in[0]) ||
      !all_f32_static4(n->out[0]) || n->in[1]->dt != DT_F32 || n->in[1]->shape.rank != 4 || !act_ok(n) ||
      ir_attr(n, "onnxc.precision"))
    return K_NONE;
  if (ir_has_input(n, 2) && (n->in[2]->kind != VK_CONST || n->in[2]->dt != DT_F32))
    return K_NONE;
  if (ir_has_input(n, 3) && !all_f32_static4(n->in[3]))
    return K_NONE;
  const Shape *x = &n->in[0]->shape, *w = &n->in[1]->shape, *y = &n->out[0]->shape;
  int64_t g = ir_attr_int(n, "group", 1), c = x->d[1], m = y->d[1];
  int64_t st[2], di[2], pb[2], pe[2], k[2] = {w->d[2], w->d[3]};
  ints2(n, "strides", st);
  ints2(n, "dilations", di);
  if (!node_pads(n, x->d + 2, y->d + 2, k, st, di, pb, pe) || st[0] < 1 || st[1] < 1 || di[0] < 1 || di[1] < 1)
    return K_NONE;
  /* the window must stay inside the padded image (no output reads past it) */
  for (int i = 0; i < 2; i++)
    if ((y->d[2 + i] - 1) * st[i] + (k[i] - 1) * di[i] + 1 > x->d[2 + i] + pb[i] + pe[i])
      return K_NONE;
  if (g == 1 && w->d[1] == c && w->d[0] == m)
    return c >= LANES ? K_CONV : K_CONVP;
  if (g == c && g > 1 && m == c && w->d[0] == c && w->d[1] == 1 && !ir_has_input(n, 3))
    return K_DW;
  return K_NONE;
}

/* The values of constant operand v per channel (C of them) when v is a
 * scalar or a per-channel [C, 1, 1] (leading 1s allowed) float32 constant. */
static bool channel_const(const Value *v, int64_t C, float *out) {
  if (v->kind != VK_CONST || v->dt != DT_F32 || !v->konst)
    return false;
  const Shape *s = &v->shape;
  int64_t e = 0;
  if (!shape_numel(s, &e))
    return false;
  if (e == 1) {
    for (int64_t c = 0; c < C; c++)
      out[c] = (float)tensor_get_f64(v->konst, 0);
    return true;
  }
  if (s->rank < 3 || s->rank > 4 || s->d[s->rank - 3] != C || s->d[s->rank - 2] != 1 || s->d[s->rank - 1] != 1 ||
      (s->rank == 4 && s->d[0] != 1))
    return false;
  for (int64_t c = 0; c < C; c++)
    out[c] = (float)tensor_get_f64(v->konst, c);
  return true;
}

/* The one operand of fused elementwise n that is no constant, or -1. */
static int affine_x(const Node *n) {
  int xs = -1;
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i) && n->in[i]->kind != VK_CONST) {
      if (xs >= 0)
        return -1;
      xs = i;
    }
  return xs;
}

/* Whether fused elementwise n computes act(a[c] * x + b[c]) of its one
 * tensor operand x (4-D float32, the output's shape) with every other operand a scalar or
 * per-channel constant: a chain of Add, Sub, Mul and Div (by a constant) on
 * x, then optionally Relu, LeakyRelu or Clip with constant bounds. When a is
 * given, fills a and b (C each) and act / lo / hi as the BlockedConv
 * attributes want them. */
typedef struct Affine {
  float *a, *b;
  const char *act;
  float lo, hi, alpha;
} Affine;

static bool affine_chain(const Node *n, Affine *out) {
  if (n->op != OP_FusedElementwise || n->n_out != 1 || n->n_in < 2 || !all_f32_static4(n->out[0]) ||
      ir_attr(n, "onnxc.precision"))
    return false;
  int xs = affine_x(n);
  if (xs < 0 || !all_f32_static4(n->in[xs]) || !rewrite_same_shape(&n->in[xs]->shape, &n->out[0]->shape))
    return false;
  const Attr *ba = ir_attr(n, "body");
  const Graph *body = ba ? ba->u.g : NULL;
  if (!body || body->n_inputs != n->n_in || body->n_outputs != 1 || body->n_nodes > 16)
    return false;
  int64_t C = n->out[0]->shape.d[1];
  /* the body's values in order: its inputs, then each node's output; kind 1
   * a per-channel constant (v), 2 affine in x (v = a, w = b) */
  enum { MAXV = 48 };
  const Value *val[MAXV];
  int kind[MAXV], nv = 0;
  float *buf = malloc((size_t)(2 * MAXV * C) * sizeof *buf);
  IR_ASSERT(buf);
  bool ok = true;
  const char *act = NULL;
  float lo = -INFINITY, hi = INFINITY, alpha = 0.01f;
  for (int i = 0; i < n->n_in && ok; i++) {
    float *v = buf + 2 * nv * C, *w = v + C;
    val[nv] = body->inputs[i];
    if (i == xs) {
      kind[nv] = 2;
      for (int64_t c = 0; c < C; c++) {
        v[c] = 1.0f;
        w[c] = 0.0f;
      }
    } else {
      kind[nv] = 1;
      ok = ir_has_input(n, i) && channel_const(n->in[i], C, v);
    }
    nv++;
  }
  for (const Node *m = body->first; m && ok; m = m->next) {
    if (act || nv >= MAXV || m->n_out != 1 || m->out[0]->dt != DT_F32) {
      ok = false;
      break;
    }
    int at[3] = {-1, -1, -1};
    for (int j = 0; j < m->n_in && j < 3; j++)
      for (int k = 0; k < nv; k++)
        if (ir_has_input(m, j) && val[k] == m->in[j])
          at[j] = k;
    float *v = buf + 2 * nv * C, *w = v + C;
    val[nv] = m->out[0];
    kind[nv] = 2;
    if (m->op == OP_Relu || m->op == OP_LeakyRelu || m->op == OP_Clip) {
      /* the last node: the activation of the affine value */
      ok = m->n_in >= 1 && at[0] >= 0 && kind[at[0]] == 2 && m == body->last;
      if (ok && m->op == OP_Clip)
        for (int j = 1; j < 3 && ok; j++) {
          if (m->n_in <= j || !ir_has_input(m, j))
            continue;
          const float *cv = at[j] >= 0 && kind[at[j]] == 1 ? buf + 2 * at[j] * C : NULL;
          bool uniform = cv != NULL;
          for (int64_t c = 1; uniform && c < C; c++)
            uniform = cv[c] == cv[0];
          ok = uniform;
          if (ok && j == 1)
            lo = cv[0];
          else if (ok)
            hi = cv[0];
        }
      if (ok) {
        act = m->op_type;
        alpha = ir_attr_float(m, "alpha", 0.01f);
        memcpy(v, buf + 2 * at[0] * C, (size_t)(2 * C) * sizeof *v);
      }
      nv++;
      continue;
    }
    if (m->n_in != 2 || at[0] < 0 || at[1] < 0 || kind[at[0]] + kind[at[1]] != 3 ||
        (m->op != OP_Add && m->op != OP_Sub && m->op != OP_Mul && m->op != OP_Div) ||
        (m->op == OP_Div && kind[at[1]] != 1)) {
      ok = false;
      break;
    }
    bool xfirst = kind[at[0]] == 2;
    const float *xa = buf + 2 * at[xfirst ? 0 : 1] * C, *xb = xa + C, *k = buf + 2 * at[xfirst ? 1 : 0] * C;
    for (int64_t c = 0; c < C; c++) {
      switch (m->op) {
      case OP_Add:
        v[c] = xa[c];
        w[c] = xb[c] + k[c];
        break;
      case OP_Sub:
        v[c] = xfirst ? xa[c] : -xa[c];
        w[c] = xfirst ? xb[c] - k[c] : k[c] - xb[c];
        break;
      case OP_Mul:
        v[c] = xa[c] * k[c];
        w[c] = xb[c] * k[c];
        break;
      default: /* Div by the constant */
        v[c] = xa[c] / k[c];
        w[c] = xb[c] / k[c];
        break;
      }
    }
    nv++;
  }
  ok = ok && nv > n->n_in && val[nv - 1] == body->outputs[0] && kind[nv - 1] == 2;
  for (int64_t c = 0; ok && c < C; c++) /* a finite affine map (not a division by 0) */
    ok = isfinite(buf[2 * (nv - 1) * C + c]) && isfinite(buf[2 * (nv - 1) * C + C + c]);
  if (ok && out) {
    memcpy(out->a, buf + 2 * (nv - 1) * C, (size_t)C * sizeof *out->a);
    memcpy(out->b, buf + 2 * (nv - 1) * C + C, (size_t)C * sizeof *out->b);
    out->act = act;
    out->lo = lo;
    out->hi = hi;
    out->alpha = alpha;
  }
  free(buf);
  return ok;
}

/* Fused elementwise n (affine_chain) as the depthwise 1x1 Conv(x, a, b) with
 * its activation, for rewrite_conv. */
static bool affine_to_conv(Graph *g, Node *n, Diag *d) {
  int64_t C = n->out[0]->shape.d[1];
  int64_t wd[4] = {C, 1, 1, 1}, bd[1] = {C};
  Shape ws = shape_make(4, wd), bs = shape_make(1, bd);
  Tensor *wt = ir_tensor_new(g, DT_F32, &ws, d), *bt = ir_tensor_new(g, DT_F32, &bs, d);
  if (!wt || !bt)
    return false;
  Affine f = {wt->data, bt->data, NULL, 0, 0, 0};
  IR_ASSERT(affine_chain(n, &f));
  Value *x = n->in[affine_x(n)];
  Value *in[3] = {x, ir_const_new(g, arena_printf(g->arena, "%s_scale", n->name), wt),
                  ir_const_new(g, arena_printf(g->arena, "%s_shift", n->name), bt)};
  for (int i = n->n_in - 1; i >= 0; i--)
    ir_node_set_input(n, i, g->none);
  n->n_in = 0;
  for (int i = 0; i < 3; i++)
    ir_node_add_input(n, in[i]);
  ir_attr_remove(n, "body");
  int64_t one[2] = {1, 1};
  ir_attr_set_ints(n, "kernel_shape", one, 2);
  ir_attr_set_int(n, "group", C);
  if (f.act) {
    Attr *a = ir_attr_add(n, "activation", AT_STRING);
    a->u.s = arena_strdup(g->arena, f.act);
    a->slen = strlen(f.act);
    if (!strcmp(f.act, "LeakyRelu"))
      ir_attr_add(n, "activation_alpha", AT_FLOAT)->u.f = f.alpha;
    if (!strcmp(f.act, "Clip")) {
      ir_attr_add(n, "activation_min", AT_FLOAT)->u.f = f.lo;
      ir_attr_add(n, "activation_max", AT_FLOAT)->u.f = f.hi;
    }
  }
  n->op = OP_Conv;
  n->op_type = "Conv";
  n->domain = "";
  return true;
}

static Kind node_kind(const Node *n) {
  switch (n->op) {
  case OP_Conv:
    return conv_kind(n);
  case OP_MaxPool:
  case OP_AveragePool:
    if (n->n_out != 1 || !all_f32_static4(n->in[0]) || !all_f32_static4(n->out[0]))
      return K_NONE;
    return K_POOL;
  case OP_GlobalAveragePool:
  case OP_GlobalMaxPool:
    return all_f32_static4(n->in[0]) && all_f32_static4(n->out[0]) ? K_GPOOL : K_NONE;
  default:
    break;
  }
  if (affine_chain(n, NULL))
    return K_AFFINE;
  bool ew = (ir_ops[n->op].flags & OPF_EW) != 0 || n->op == OP_FusedElementwise;
  bool cat = n->op == OP_Concat || n->op == OP_Split;
  if (!ew && !cat)
    return K_NONE;
  /* a fused kernel that reads an operand through a view (an absorbed Slice,
   * Transpose or Expand: onnxc.views, NCHW strides) is not lane-wise (random
   * CNN seed 7084: a Slice with step -1 fused into a Neg read the blocked
   * tensor with row-major strides) */
  if (n->op == OP_FusedElementwise && ir_attr(n, "onnxc.views"))
    return K_NONE;
  if (cat) {
    int64_t ax = ir_attr_int(n, "axis", n->op == OP_Split ? 0 : 1);
    if (ax != 1 && ax != -3)
      return K_NONE;
    if (n->op == OP_Split && n->n_in > 1 && ir_has_input(n, 1) && n->in[1]->kind != VK_CONST)
      return K_NONE;
  }
  /* every tensor operand 4-D float32 with 16k channels; elementwise: the output's shape */
  for (int i = 0; i < n->n_out; i++)
    if (n->out[i]->kind != VK_NONE && (!all_f32_static4(n->out[i]) || n->out[i]->shape.d[1] % LANES))
      return K_NONE;
  for (int i = 0; i < n->n_in; i++) {
    if (!ir_has_input(n, i))
      continue;
    const Value *v = n->in[i];
    if (n->op == OP_Split && i > 0)
      continue;
    if (v->kind == VK_CONST || !all_f32_static4(v) || v->shape.d[1] % LANES)
      return K_NONE;
    if (ew && !rewrite_same_shape(&v->shape, &n->out[0]->shape))
      return K_NONE;
  }
  return K_LANEWISE;
}

/* Tensor inputs of a region node that travel blocked. */
static bool blocked_input(const Node *n, Kind k, int i) {
  if (!ir_has_input(n, i))
    return false;
  switch (k) {
  case K_CONV:
  case K_DW:
    return i == 0 || i == 3;
  case K_AFFINE:
    return n->in[i]->kind != VK_CONST;
  case K_CONVP:
    return i == 3;
  case K_POOL:
  case K_GPOOL:
    return i == 0;
  case K_LANEWISE:
    return !(n->op == OP_Split && i > 0);
  default:
    return false;
  }
}

/* Whether region node r (kind[r->id]) reads v through a blocked slot only. */
static bool reads_blocked(const Node *r, const Kind *kind, const Value *v) {
  if (kind[r->id] == K_NONE)
    return false;
  for (int s = 0; s < r->n_in; s++)
    if (r->in[s] == v && !blocked_input(r, kind[r->id], s))
      return false;
  return true;
}

/* Whether slot s of r reads a blocked tensor once the pass is done: r kept
 * in a region and s one of its blocked inputs. */
static bool slot_blocked(const Node *r, int s, int nn, const bool *keep, const Kind *kind) {
  return r->id < nn && keep[r->id] && blocked_input(r, kind[r->id], s);
}

static int find(int *par, int i) {
  while (par[i] != i)
    i = par[i] = par[par[i]];
  return i;
}

/* Multiply-adds of a conv node (K_CONV / K_DW). */
static double conv_macs(const Node *n) {
  const Shape *w = &n->in[1]->shape, *y = &n->out[0]->shape;
  return (double)y->d[0] * y->d[1] * y->d[2] * y->d[3] * w->d[1] * w->d[2] * w->d[3];
}

static double numel_d(const Value *v) {
  int64_t e = 0;
  shape_numel(&v->shape, &e);
  return (double)e;
}

/* Group-1 weights [M, C, KH, KW] as panels of 32 output channels:
 * d[p][k][j] = W[32p + j][c][kh][kw], k running over (c / 16, kh, kw, c % 16). */
static Value *pack_conv_weights(Graph *g, const Node *n, Diag *d) {
  const Tensor *wt = n->in[1]->konst;
  const float *src = wt->data;
  int64_t M = wt->shape.d[0], C = wt->shape.d[1], KH = wt->shape.d[2], KW = wt->shape.d[3];
  int64_t K = C * KH * KW, np = (M + PANEL - 1) / PANEL, dims[1] = {np * K * PANEL};
  Shape s = shape_make(1, dims);
  Tensor *t = ir_tensor_new(g, DT_F32, &s, d);
  if (!t)
    return NULL;
  float *dst = t->data;
  for (int64_t p = 0; p < np; p++) {
    int64_t k = 0;
    for (int64_t cb = 0; cb < C; cb += LANES)
      for (int64_t kh = 0; kh < KH; kh++)
        for (int64_t kw = 0; kw < KW; kw++)
          for (int64_t c = cb; c < cb + LANES && c < C; c++, k++)
            for (int64_t j = 0; j < PANEL && p * PANEL + j < M; j++)
              dst[(p * K + k) * PANEL + j] = src[(((p * PANEL + j) * C + c) * KH + kh) * KW + kw];
  }
  return ir_const_new(g, arena_printf(g->arena, "%s_blocked_w", n->name), t);
}

/* Depthwise weights [C, 1, KH, KW] as [C/16][KH*KW][16], zero past C. */
static Value *pack_dw_weights(Graph *g, const Node *n, Diag *d) {
  const Tensor *wt = n->in[1]->konst;
  const float *src = wt->data;
  int64_t C = wt->shape.d[0], T = wt->shape.d[2] * wt->shape.d[3], cb = (C + LANES - 1) / LANES;
  int64_t dims[1] = {cb * T * LANES};
  Shape s = shape_make(1, dims);
  Tensor *t = ir_tensor_new(g, DT_F32, &s, d);
  if (!t)
    return NULL;
  float *dst = t->data;
  for (int64_t c = 0; c < C; c++)
    for (int64_t k = 0; k < T; k++)
      dst[((c / LANES) * T + k) * LANES + c % LANES] = src[c * T + k];
  return ir_const_new(g, arena_printf(g->arena, "%s_blocked_w", n->name), t);
}

/* The bias (or zeros) padded to `len` floats. */
static Value *pad_bias(Graph *g, const Node *n, int64_t m, int64_t len, Diag *d) {
  int64_t dims[1] = {len};
  Shape s = shape_make(1, dims);
  Tensor *t = ir_tensor_new(g, DT_F32, &s, d);
  if (!t)
    return NULL;
  if (ir_has_input(n, 2))
    for (int64_t i = 0; i < m && i < n->in[2]->konst->numel; i++)
      ((float *)t->data)[i] = (float)tensor_get_f64(n->in[2]->konst, i);
  return ir_const_new(g, arena_printf(g->arena, "%s_blocked_b", n->name), t);
}

/* Conv n (blocked input) as BlockedConv, behind a BlockedPad when padded or
 * a strided 1x1. */
static bool rewrite_conv(Graph *g, Node *n, Kind k, bool record_self, Diag *d) {
  const Shape *x = &n->in[0]->shape, *w = &n->in[1]->shape, *y = &n->out[0]->shape;
  int64_t st[2], di[2], pb[2], pe[2], kk[2] = {w->d[2], w->d[3]}, m = y->d[1];
  ints2(n, "strides", st);
  ints2(n, "dilations", di);
  node_pads(n, x->d + 2, y->d + 2, kk, st, di, pb, pe);
  Value *wv = k == K_DW ? pack_dw_weights(g, n, d) : pack_conv_weights(g, n, d);
  Value *bv = pad_bias(g, n, m, k == K_DW ? upto(m, LANES) : upto(m, PANEL), d);
  if (!wv || !bv)
    return false;
  if (k == K_DW) { /* the depthwise kernel reads the padding as zeros itself */
    int64_t pads[4] = {pb[0], pb[1], pe[0], pe[1]};
    ir_attr_set_ints(n, "onnxc.pads", pads, 4);
  } else if (pb[0] || pb[1] || pe[0] || pe[1]) {
    int64_t pd[4] = {x->d[0], x->d[1], x->d[2] + pb[0] + pe[0], x->d[3] + pb[1] + pe[1]};
    Shape ps = shape_make(4, pd);
    Value *in = n->in[0];
    Node *p = ir_node_insert(g, n, OP_BlockedPad, "BlockedPad", arena_printf(g->arena, "%s_pad", n->name), 1,
                             &in, 1);
    p->domain = "onnxc";
    int64_t pads[4] = {pb[0], pb[1], pe[0], pe[1]};
    ir_attr_set_ints(p, "pads", pads, 4);
    p->out[0]->dt = DT_F32;
    p->out[0]->shape = ps;
    p->out[0]->blocked = k == K_CONVP ? 0 : LANES; /* K_CONVP: a row-major copy */
    ir_node_set_input(n, 0, p->out[0]);
  } else if (k == K_CONV && kk[0] == 1 && kk[1] == 1 && (st[0] > 1 || st[1] > 1)) {
    /* ResNet-50's projections on Zen 3, 1x1 512 -> 1024 at 28x28 / 2: 2.98 -> 2.35 ms in
     * the model (the copy 0.03 ms) */
    int64_t pd[4] = {x->d[0], x->d[1], (x->d[2] - 1) / st[0] + 1, (x->d[3] - 1) / st[1] + 1};
    Value *in = n->in[0];
    Node *p = ir_node_insert(g, n, OP_BlockedPad, "BlockedPad", arena_printf(g->arena, "%s_stride", n->name), 1,
                             &in, 1);
    p->domain = "onnxc";
    int64_t pads[4] = {0, 0, 0, 0};
    ir_attr_set_ints(p, "pads", pads, 4);
    ir_attr_set_ints(p, "strides", st, 2);
    p->out[0]->dt = DT_F32;
    p->out[0]->shape = shape_make(4, pd);
    p->out[0]->blocked = LANES;
    ir_node_set_input(n, 0, p->out[0]);
    st[0] = st[1] = 1;
  }
  ir_node_set_input(n, 1, wv);
  if (n->n_in < 3)
    ir_node_add_input(n, bv);
  else
    ir_node_set_input(n, 2, bv);
  ir_attr_remove(n, "pads");
  ir_attr_remove(n, "auto_pad");
  ir_attr_set_ints(n, "kernel_shape", kk, 2);
  ir_attr_set_ints(n, "strides", st, 2);
  ir_attr_set_ints(n, "dilations", di, 2);
  ir_attr_set_int(n, "onnxc.m", m);
  ir_attr_set_int(n, "onnxc.c", x->d[1]);
  if (k == K_CONVP)
    ir_attr_set_int(n, "onnxc.plain", 1);
  /* the record of ONNX nodes this kernel computes starts with the Conv itself
   * (a fused elementwise as a conv, K_AFFINE: its record is whole) */
  if (record_self) {
    Attr *fa = (Attr *)ir_attr(n, "onnxc.fused");
    int old = fa ? fa->n : 0;
    const char **ss = arena_alloc(g->arena, (size_t)(old + 2) * sizeof *ss);
    ss[0] = arena_printf(g->arena, "%s %s", n->op_type, n->name);
    for (int i = 0; i < old; i++)
      ss[i + 1] = fa->u.ss[i];
    if (!fa)
      fa = ir_attr_add(n, "onnxc.fused", AT_STRINGS);
    fa->u.ss = ss;
    fa->n = old + 1;
  }
  n->op = OP_BlockedConv;
  n->op_type = "BlockedConv";
  n->domain = "onnxc";
  return true;
}

bool pass_layout_blocked(Graph *g, int lanes, int mode, Diag *d) {
  if (lanes != LANES || mode == 1 || g->n_nodes == 0)
    return true;
  int nn = g->n_node_ids;
  Kind *kind = calloc((size_t)nn, sizeof *kind);
  int *par = calloc((size_t)nn, sizeof *par);
  double *macs = calloc((size_t)nn, sizeof *macs), *conv = calloc((size_t)nn, sizeof *conv);
  bool *keep = calloc((size_t)nn, sizeof *keep);
  IR_ASSERT(kind && par && macs && conv && keep);
  for (Node *n = g->first; n; n = n->next) {
    par[n->id] = n->id;
    kind[n->id] = node_kind(n);
    /* a row-major-input conv to fewer than 16 channels would compute a
     * panel of 32 for them: by cost it stays NCHW (--layout nchw16c blocks
     * it, the tests) */
    if (mode == 0 && kind[n->id] == K_CONVP && n->out[0]->shape.d[1] < LANES)
      kind[n->id] = K_NONE;
  }
  /* regions: region nodes joined through the blocked tensors between them */
  for (Node *n = g->first; n; n = n->next) {
    Kind k = kind[n->id];
    if (k == K_NONE)
      continue;
    for (int i = 0; i < n->n_in; i++) {
      if (!blocked_input(n, k, i))
        continue;
      const Node *p = n->in[i]->producer;
      if (n->in[i]->kind == VK_NODE && p && kind[p->id] != K_NONE && kind[p->id] != K_GPOOL)
        par[find(par, n->id)] = find(par, p->id);
    }
  }
  /* per region: its convs' multiply-adds and the elements its borders convert */
  for (Node *n = g->first; n; n = n->next) {
    Kind k = kind[n->id];
    if (k == K_NONE)
      continue;
    int r = find(par, n->id);
    if (k == K_CONV || k == K_CONVP || k == K_DW)
      macs[r] += conv_macs(n);
    if (k == K_AFFINE)
      macs[r] += numel_d(n->out[0]);
    if (k == K_CONV || k == K_CONVP)
      conv[r] += 1;
    for (int i = 0; i < n->n_in; i++) {
      const Node *p = ir_has_input(n, i) ? n->in[i]->producer : NULL;
      if (blocked_input(n, k, i) && (n->in[i]->kind != VK_NODE || !p || kind[p->id] == K_NONE ||
                                     kind[p->id] == K_GPOOL))
        macs[r] -= 64.0 * numel_d(n->in[i]);
    }
    if (k == K_GPOOL)
      continue;
    for (int o = 0; o < n->n_out; o++) {
      const Value *v = n->out[o];
      if (v->kind == VK_NONE)
        continue;
      bool out = false;
      for (int u = 0; u < v->n_uses; u++)
        if (!reads_blocked(v->uses[u], kind, v)) /* a reader outside every region, or a row-major slot */
          out = true;
      if (out)
        macs[r] -= 64.0 * numel_d(v);
    }
  }
  for (int i = 0; i < nn; i++)
    if (kind[i] != K_NONE) {
      int r = find(par, i);
      keep[i] = conv[r] > 0 && (mode == 2 || macs[r] >= 0);
    }
  /* kept nodes: outputs blocked (a global pool's stay row-major). A graph
   * output keeps its value (its name is the ABI's): the node writes a new
   * blocked value, and a FromBlocked writes the graph's. */
  bool any = false;
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (n->id >= nn || !keep[n->id] || kind[n->id] == K_GPOOL)
      continue;
    any = true;
    for (int o = 0; o < n->n_out; o++) {
      Value *v = n->out[o];
      if (v->kind == VK_NONE)
        continue;
      if (!v->is_output) {
        v->blocked = LANES;
        continue;
      }
      Value *b = ir_value_new(g, arena_printf(g->arena, "%s_16c", v->name), v->dt, &v->shape);
      b->producer = n;
      b->out_index = o;
      b->blocked = LANES;
      n->out[o] = b;
      for (int u = 0; u < v->n_uses; u++) {
        Node *r = v->uses[u];
        bool moved = false;
        for (int s = 0; s < r->n_in; s++)
          if (r->in[s] == v && slot_blocked(r, s, nn, keep, kind)) {
            ir_node_set_input(r, s, b);
            moved = true;
          }
        if (moved)
          u = -1;
      }
      Node *c = ir_node_insert(g, n->next, OP_FromBlocked, "FromBlocked", arena_printf(g->arena, "%s_nchw", v->name),
                               1, &b, 0);
      c->n_out = 1;
      c->out = arena_alloc(g->arena, sizeof *c->out);
      c->out[0] = v;
      v->producer = c;
      v->out_index = 0;
    }
  }
  bool ok = true;
  if (!any)
    goto done;
  /* borders: a ToBlocked for each row-major tensor a kept node reads blocked,
   * a FromBlocked for each blocked tensor something else reads */
  int nv = g->n_values;
  Value **to = calloc((size_t)nv, sizeof *to), **from = calloc((size_t)nv, sizeof *from);
  IR_ASSERT(to && from);
  Node *first = g->first;
  for (Node *n = first, *next; n; n = next) {
    next = n->next;
    if (n->id < nn && keep[n->id])
      for (int i = 0; i < n->n_in; i++) {
        Value *v = n->in[i];
        if (!blocked_input(n, kind[n->id], i) || v->blocked)
          continue;
        if (!to[v->id]) {
          /* right after the producer (or first), so every reader sees it */
          Node *pos = v->kind == VK_NODE && v->producer ? v->producer->next : g->first;
          Node *c = ir_node_insert(g, pos, OP_ToBlocked, "ToBlocked", arena_printf(g->arena, "%s_to16c", v->name),
                                   1, &v, 1);
          c->domain = "onnxc";
          c->out[0]->dt = v->dt;
          c->out[0]->shape = v->shape;
          c->out[0]->blocked = LANES;
          to[v->id] = c->out[0];
        }
        ir_node_set_input(n, i, to[v->id]);
      }
  }
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (n->id >= nn || !keep[n->id])
      continue;
    for (int o = 0; o < n->n_out; o++) {
      Value *v = n->out[o];
      if (v->kind == VK_NONE || !v->blocked)
        continue;
      for (int u = 0; u < v->n_uses; u++) {
        Node *r = v->uses[u];
        if (r->op == OP_FromBlocked || r->op == OP_ToBlocked)
          continue;
        /* the slots that read v row-major: every slot of a node outside the
         * regions, the plain input of a K_CONVP */
        bool plain = false;
        for (int s = 0; s < r->n_in; s++)
          if (r->in[s] == v && !slot_blocked(r, s, nn, keep, kind))
            plain = true;
        if (!plain)
          continue;
        if (!from[v->id]) {
          Node *c = ir_node_insert(g, n->next, OP_FromBlocked, "FromBlocked",
                                   arena_printf(g->arena, "%s_nchw", v->name), 1, &v, 1);
          c->domain = "onnxc";
          c->out[0]->dt = v->dt;
          c->out[0]->shape = v->shape;
          from[v->id] = c->out[0];
        }
        for (int s = 0; s < r->n_in; s++)
          if (r->in[s] == v && !slot_blocked(r, s, nn, keep, kind))
            ir_node_set_input(r, s, from[v->id]);
        u = -1; /* the uses array changed */
      }
    }
  }
  free(to);
  free(from);
  for (Node *n = g->first; n && ok; n = n->next) {
    if (n->id >= nn || !keep[n->id])
      continue;
    if (kind[n->id] == K_AFFINE)
      ok = affine_to_conv(g, n, d) && rewrite_conv(g, n, K_DW, false, d);
    else if (kind[n->id] == K_CONV || kind[n->id] == K_CONVP || kind[n->id] == K_DW)
      ok = rewrite_conv(g, n, kind[n->id], true, d);
  }
done:
  free(kind);
  free(par);
  free(macs);
  free(conv);
  free(keep);
  return ok;
}

/* ---- inference hooks of the layout's nodes -------------------------------------- */

bool infer_ToBlocked(Node *n, Diag *d) {
  (void)d;
  n->out[0]->dt = n->in[0]->dt;
  n->out[0]->shape = n->in[0]->shape;
  return true;
}

bool infer_FromBlocked(Node *n, Diag *d) { return infer_ToBlocked(n, d); }

bool infer_BlockedPad(Node *n, Diag *d) {
  int k = 0;
  const int64_t *p = ir_attr_ints(n, "pads", &k);
  const Shape *x = &n->in[0]->shape;
  if (!p || k != 4 || x->rank != 4)
    return diag_error(d, n, "internal: BlockedPad without 2-D pads");
  int64_t st[2];
  ints2(n, "strides", st);
  int64_t dims[4] = {x->d[0], x->d[1], (x->d[2] + p[0] + p[2] - 1) / st[0] + 1, (x->d[3] + p[1] + p[3] - 1) / st[1] + 1};
  n->out[0]->dt = n->in[0]->dt;
  n->out[0]->shape = shape_make(4, dims);
  return true;
}

bool infer_BlockedConv(Node *n, Diag *d) {
  int nk = 0;
  const int64_t *k = ir_attr_ints(n, "kernel_shape", &nk);
  const Shape *x = &n->in[0]->shape;
  int64_t st[2], di[2];
  ints2(n, "strides", st);
  ints2(n, "dilations", di);
  if (!k || nk != 2 || x->rank != 4)
    return diag_error(d, n, "internal: BlockedConv without its window");
  int np = 0;
  const int64_t *p = ir_attr_ints(n, "onnxc.pads", &np);
  int64_t ph = p && np == 4 ? p[0] + p[2] : 0, pw = p && np == 4 ? p[1] + p[3] : 0;
  int64_t dims[4] = {x->d[0], ir_attr_int(n, "onnxc.m", 0), (x->d[2] + ph - (k[0] - 1) * di[0] - 1) / st[0] + 1,
                     (x->d[3] + pw - (k[1] - 1) * di[1] - 1) / st[1] + 1};
  n->out[0]->dt = DT_F32;
  n->out[0]->shape = shape_make(4, dims);
  return true;
}
