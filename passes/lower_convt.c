/* lower_convt.c - ConvTranspose as convolutions, one per output phase.
 *
 * A transposed convolution of stride s scatters every input pixel onto s x s
 * output phases; read from the output side, the outputs of one phase (o mod
 * s == phi along each axis) form an ordinary convolution of the input with the
 * taps t = phi + pb (mod s) of the kernel, flipped. So a ConvTranspose whose
 * output extents are multiples of the strides becomes s1 * s2 Convs (kernels
 * of about k/s taps per axis, each with its own pads), their outputs
 * concatenated along channels and interleaved by a Reshape, Transpose and
 * Reshape (DepthToSpace's DCR order). The convs then run on the compiler's
 * conv kernels (blocked, threaded, fused epilogues) instead of the scatter
 * loop (emit_nn.c), which reaches about a tenth of the FMA peak: a decoder's
 * 4x4 stride-2 upsampling (U-Nets, GAN generators, the ViT decoders of
 * dense prediction) is the case. Stride 1 is a single Conv.
 *
 * For axis i (in, k, stride s, pads pb and pe, out = s (in - 1) + k - pb - pe,
 * Q = out / s) and phase phi:
 *   t0 = (phi + pb) mod s, K = ceil((k - t0) / s) taps t0, t0 + s, ...;
 *   output s q + phi reads input q + c0 - j for tap t0 + j s, c0 = (phi + pb - t0) / s;
 *   as a Conv: weight tap j' = K - 1 - j, pads K - 1 - c0 and Q - in - (K - 1 - c0) + K - 1.
 * Taken where every phase has a tap and both pads are >= 0; float32, group 1,
 * dilation 1, explicit pads (no output_shape, auto_pad or output_padding),
 * constant weights, static shapes. -O1 and up, both targets (the CUDA target
 * has parallel conv kernels and no parallel ConvTranspose). */
#include "passes.h"

#include <string.h>

#define MAX_AX 2

typedef struct Axis {
  int64_t in, k, s, pb, out, q;
  int64_t t0[8], taps[8], padb[8], pade[8];   /* per phase (s <= 8) */
} Axis;

static bool plan_axis(Axis *a) {
  if (a->s < 1 || a->s > 8 || a->out % a->s != 0)
    return false;
  a->q = a->out / a->s;
  for (int64_t phi = 0; phi < a->s; phi++) {
    int64_t t0 = (phi + a->pb) % a->s;
    if (t0 >= a->k)
      return false;
    int64_t K = (a->k - t0 + a->s - 1) / a->s, c0 = (phi + a->pb - t0) / a->s;
    int64_t pb = K - 1 - c0, pe = a->q - a->in - pb + K - 1;
    if (pb < 0 || pe < 0)
      return false;
    a->t0[phi] = t0;
    a->taps[phi] = K;
    a->padb[phi] = pb;
    a->pade[phi] = pe;
  }
  return true;
}

static bool ints_all(const Node *n, const char *name, int64_t v) {
  int c = 0;
  const int64_t *p = ir_attr_ints(n, name, &c);
  for (int i = 0; p && i < c; i++)
    if (p[i] != v)
      return false;
  return true;
}

static bool takes(const Node *n, Axis *ax, int *r_out) {
  if (n->op != OP_ConvTranspose || n->n_out < 1 || !ir_has_input(n, 0) || !ir_has_input(n, 1))
    return false;
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  if (n->out[0]->dt != DT_F32 || xs->rank < 3 || xs->rank > 2 + MAX_AX ||
      !shape_is_static(xs) || !shape_is_static(ys) || n->in[1]->kind != VK_CONST ||
      (ir_has_input(n, 2) && n->in[2]->kind != VK_CONST) || ir_attr_int(n, "group", 1) != 1 ||
      ir_attr(n, "output_shape") || strcmp(ir_attr_str(n, "auto_pad", "NOTSET"), "NOTSET") != 0 ||
      !ints_all(n, "dilations", 1) || !ints_all(n, "output_padding", 0))
    return false;
  int r = xs->rank - 2, cs = 0, cp = 0;
  const int64_t *st = ir_attr_ints(n, "strides", &cs), *pads = ir_attr_ints(n, "pads", &cp);
  if ((st && cs != r) || (pads && cp != 2 * r))
    return false;
  const Shape *ws = &n->in[1]->shape;
  for (int i = 0; i < r; i++) {
    Axis *a = &ax[i];
    memset(a, 0, sizeof *a);
    a->in = xs->d[2 + i];
    a->k = ws->d[2 + i];
    a->s = st ? st[i] : 1;
    a->pb = pads ? pads[i] : 0;
    a->out = ys->d[2 + i];
    if (a->out != a->s * (a->in - 1) + a->k - a->pb - (pads ? pads[r + i] : 0) || !plan_axis(a))
      return false;
  }
  *r_out = r;
  return true;
}

/* The Conv of phase (p0, p1): weight [M, C, K0 (, K1)] from W [C, M, k0 (, k1)]. */
static Node *phase_conv(Graph *g, Node *n, const Axis *ax, int r, const int64_t *phi, int idx, Diag *d) {
  const Tensor *w = n->in[1]->konst;
  int64_t C = w->shape.d[0], M = w->shape.d[1];
  int64_t K[MAX_AX] = {1, 1}, k[MAX_AX] = {1, 1};
  for (int i = 0; i < r; i++) {
    K[i] = ax[i].taps[phi[i]];
    k[i] = ax[i].k;
  }
  Shape s = shape_scalar();
  s.rank = 2 + r;
  s.d[0] = M;
  s.d[1] = C;
  for (int i = 0; i < r; i++)
    s.d[2 + i] = K[i];
  Tensor *t = ir_tensor_new(g, DT_F32, &s, d);
  if (!t)
    return NULL;
  const float *src = w->data;
  float *dst = t->data;
  for (int64_t m = 0; m < M; m++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t j0 = 0; j0 < K[0]; j0++)
        for (int64_t j1 = 0; j1 < K[1]; j1++) {
          int64_t t0 = ax[0].t0[phi[0]] + (K[0] - 1 - j0) * ax[0].s;
          int64_t t1 = r > 1 ? ax[1].t0[phi[1]] + (K[1] - 1 - j1) * ax[1].s : 0;
          dst[((m * C + c) * K[0] + j0) * K[1] + j1] = src[((c * M + m) * k[0] + t0) * k[1] + t1];
        }
  const char *base = arena_printf(g->arena, "%s_phase%d", n->name, idx);
  Value *in[3] = {n->in[0], ir_const_new(g, arena_printf(g->arena, "%s_w", base), t),
                  ir_has_input(n, 2) ? n->in[2] : NULL};
  Node *cv = ir_node_insert(g, n, OP_Conv, "Conv", base, in[2] ? 3 : 2, in, 1);
  int64_t ks[MAX_AX], pads[2 * MAX_AX], ones[MAX_AX] = {1, 1};
  for (int i = 0; i < r; i++) {
    ks[i] = K[i];
    pads[i] = ax[i].padb[phi[i]];
    pads[r + i] = ax[i].pade[phi[i]];
  }
  ir_attr_set_ints(cv, "kernel_shape", ks, r);
  ir_attr_set_ints(cv, "pads", pads, 2 * r);
  ir_attr_set_ints(cv, "strides", ones, r);
  ir_attr_set_ints(cv, "dilations", ones, r);
  if (!infer_node(cv, d))
    return NULL;
  rewrite_record_fused(cv, n);
  return cv;
}

static Node *add_node(Graph *g, Node *pos, OpKind op, const char *type, const char *name, int n_in, Value **in,
                      Diag *d) {
  Node *m = ir_node_insert(g, pos, op, type, name, n_in, in, 1);
  return infer_node(m, d) ? m : NULL;
}

static bool lower_one(Graph *g, Node *n, const Axis *ax, int r, Diag *d) {
  int64_t P = 1;
  for (int i = 0; i < r; i++)
    P *= ax[i].s;
  Value *parts[64];
  int idx = 0;
  int64_t phi[MAX_AX] = {0, 0};
  for (phi[0] = 0; phi[0] < ax[0].s; phi[0]++)
    for (phi[1] = 0; phi[1] < (r > 1 ? ax[1].s : 1); phi[1]++) {
      Node *cv = phase_conv(g, n, ax, r, phi, idx, d);
      if (!cv)
        return false;
      parts[idx++] = cv->out[0];
    }
  if (P == 1) {
    rewrite_forward(n, parts[0]);
    return true;
  }
  const Shape *ys = &n->out[0]->shape;
  int64_t N = ys->d[0], M = ys->d[1];
  Node *cat = ir_node_insert(g, n, OP_Concat, "Concat", arena_printf(g->arena, "%s_phases", n->name), idx,
                             parts, 1);
  ir_attr_set_int(cat, "axis", 1);
  if (!infer_node(cat, d))
    return false;
  /* [N, s0 (, s1), M, Q0 (, Q1)] -> [N, M, Q0, s0 (, Q1, s1)] -> Y's shape */
  int64_t split[2 + 2 * MAX_AX], perm[2 + 2 * MAX_AX];
  int k = 0;
  split[k++] = N;
  for (int i = 0; i < r; i++)
    split[k++] = ax[i].s;
  split[k++] = M;
  for (int i = 0; i < r; i++)
    split[k++] = ax[i].q;
  int p = 0;
  perm[p++] = 0;
  perm[p++] = 1 + r;
  for (int i = 0; i < r; i++) {
    perm[p++] = 2 + r + i;
    perm[p++] = 1 + i;
  }
  Value *in2[2] = {cat->out[0], rewrite_const_i64(g, arena_printf(g->arena, "%s_split", n->name), split, k)};
  Node *rs = add_node(g, n, OP_Reshape, "Reshape", arena_printf(g->arena, "%s_split", n->name), 2, in2, d);
  if (!rs)
    return false;
  Value *in1[1] = {rs->out[0]};
  Node *tr = ir_node_insert(g, n, OP_Transpose, "Transpose", arena_printf(g->arena, "%s_interleave", n->name), 1,
                            in1, 1);
  ir_attr_set_ints(tr, "perm", perm, p);
  if (!infer_node(tr, d))
    return false;
  Value *in3[2] = {tr->out[0], rewrite_const_i64(g, arena_printf(g->arena, "%s_shape", n->name), ys->d, ys->rank)};
  Node *out = add_node(g, n, OP_Reshape, "Reshape", arena_printf(g->arena, "%s_merge", n->name), 2, in3, d);
  if (!out)
    return false;
  rewrite_forward(n, out->out[0]);
  return true;
}

bool pass_lower_convt(Graph *g, Diag *d) {
  Captured cap = rewrite_captured(g);
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    Axis ax[MAX_AX];
    memset(ax, 0, sizeof ax);
    int r = 0;
    if (!takes(n, ax, &r) || rewrite_is_captured(&cap, n->out[0]))
      continue;
    int64_t P = 1;
    for (int i = 0; i < r; i++)
      P *= ax[i].s;
    if (P > 64)
      continue;
    if (!lower_one(g, n, ax, r, d))
      return false;
  }
  return true;
}
