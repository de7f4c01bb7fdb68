/* infer_symbolic.c - shapes that depend on range symbols (-D NAME=LO..HI).
 *
 * Part of pass_infer (docs/dynamic-shapes.md). With a bounded dim in the
 * graph, exporters' shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat
 * -> Reshape, a Slice up to a sequence length) no longer folds to constants.
 * Instead each such small integer tensor carries its content as extents
 * (Value.sval), computed here node by node, and the ops that take a shape
 * operand (Reshape, Slice, Expand) read it from there. The code generator
 * writes a valued node's output from the extents at run time, so the
 * arithmetic costs nothing and needs no kernel of its own.
 */
#include "passes.h"

#include <string.h>

#define SV_MAX 64   /* longest integer tensor followed as extents */

/* Input i as extents: a constant's integers, or the value's sval. */
static bool sv_of(Arena *a, const Node *n, int i, const DimExpr **out, int *count) {
  if (!ir_has_input(n, i))
    return false;
  const Value *v = n->in[i];
  if (v->sval) {
    memcpy(out, v->sval, (size_t)v->n_sval * sizeof *out);
    *count = v->n_sval;
    return true;
  }
  if (v->kind != VK_CONST || !dtype_is_int(v->dt) || v->konst->shape.rank > 1 || v->konst->numel > SV_MAX)
    return false;
  for (int64_t k = 0; k < v->konst->numel; k++)
    out[k] = dx_const(a, tensor_get_i64(v->konst, k));
  *count = (int)v->konst->numel;
  return true;
}

static bool any_symbolic(const DimExpr *const *e, int count) {
  int64_t v;
  for (int k = 0; k < count; k++)
    if (!dx_is_const(e[k], &v))
      return true;
  return false;
}

static void set_sval(Value *v, const DimExpr *const *e, int count) {
  if (v->kind == VK_NONE)
    return;
  for (int k = 0; k < count; k++)
    if (!e[k])
      return;
  if (!any_symbolic(e, count)) {
    /* every element known: the value is a constant (Gather of a static dim) */
    int64_t numel;
    if (!shape_numel(&v->shape, &numel) || numel != count || !dtype_is_int(v->dt))
      return;
    Diag quiet;
    diag_init(&quiet, v->g->file, NULL);
    Tensor *t = ir_tensor_new(v->g, v->dt, &v->shape, &quiet);
    diag_free(&quiet);
    if (!t)
      return;
    for (int k = 0; k < count; k++) {
      int64_t c;
      dx_is_const(e[k], &c);
      tensor_set_i64(t, k, c);
    }
    ir_value_make_const(v, t);
    return;
  }
  v->sval = arena_dup(v->g->arena, e, (size_t)count * sizeof *e);
  v->n_sval = count;

}

/* The root graph, where the symbols live. */
static const Graph *root(const Graph *g) {
  while (g->parent)
    g = g->parent;
  return g;
}

/* Computes Value.sval for n's output from its inputs' extents. */
void infer_sym_values(Node *n) {
  if (root(n->g)->n_syms == 0 || n->n_out < 1 || n->out[0]->kind == VK_NONE)
    return;
  Arena *a = n->g->arena;
  Value *y = n->out[0];
  const DimExpr *e[SV_MAX], *f[SV_MAX], *r[SV_MAX];
  int ne = 0, nf = 0, nr = 0;
  switch (n->op) {
  case OP_Shape: {
    const Shape *s = &n->in[0]->shape;
    if (s->rank < 0 || !shape_is_bounded(s))
      return;
    int64_t rk = s->rank, lo = ir_attr_int(n, "start", 0), hi = ir_attr_int(n, "end", rk);
    lo = lo < 0 ? lo + rk : lo;
    hi = hi < 0 ? hi + rk : hi;
    lo = lo < 0 ? 0 : lo > rk ? rk : lo;
    hi = hi < 0 ? 0 : hi > rk ? rk : hi;
    for (int64_t k = lo; k < hi; k++)
      r[nr++] = shape_dx(a, s, (int)k);
    break;
  }
  case OP_Gather: {
    if (!sv_of(a, n, 0, e, &ne) || !sv_of(a, n, 1, f, &nf) || n->in[0]->shape.rank != 1)
      return;
    for (int k = 0; k < nf; k++) {
      int64_t i;
      if (!dx_is_const(f[k], &i) || i < -ne || i >= ne)
        return;
      r[nr++] = e[i < 0 ? i + ne : i];
    }
    break;
  }
  case OP_Unsqueeze: case OP_Squeeze: case OP_Reshape: case OP_Identity: case OP_Flatten:
    if (!sv_of(a, n, 0, r, &nr))
      return;
    break;
  case OP_Cast:
    if (!dtype_is_int(y->dt) || !sv_of(a, n, 0, r, &nr))
      return;
    break;
  case OP_Slice: { /* a run of a shape vector (Shape -> Slice -> Concat -> Reshape) */
    int64_t st = 0, en = 0, step = 1, c;
    if (!sv_of(a, n, 0, e, &ne) || n->in[0]->shape.rank != 1)
      return;
    if (n->g->opset < 10) {
      int cs, ce, ca;
      const int64_t *sa = ir_attr_ints(n, "starts", &cs), *ea = ir_attr_ints(n, "ends", &ce),
                    *aa = ir_attr_ints(n, "axes", &ca);
      if (!sa || !ea || cs != 1 || ce != 1 || (aa && (ca != 1 || aa[0] != 0)))
        return;
      st = sa[0], en = ea[0];
    } else {
      const DimExpr *t[SV_MAX];
      int nt;
      if (!sv_of(a, n, 1, t, &nt) || nt != 1 || !dx_is_const(t[0], &st) || !sv_of(a, n, 2, t, &nt) || nt != 1 ||
          !dx_is_const(t[0], &en))
        return;
      if (ir_has_input(n, 3) && (!sv_of(a, n, 3, t, &nt) || nt != 1 || !dx_is_const(t[0], &c) || (c != 0 && c != -1)))
        return;
      if (ir_has_input(n, 4) && (!sv_of(a, n, 4, t, &nt) || nt != 1 || !dx_is_const(t[0], &step) || step == 0))
        return;
    }
    /* the spec's clamping: starts/ends past the ends clamp, negatives count from the end */
    if (st < 0)
      st += ne;
    if (en < 0)
      en += ne;
    if (step > 0) {
      st = st < 0 ? 0 : st > ne ? ne : st;
      en = en < 0 ? 0 : en > ne ? ne : en;
      for (int64_t k = st; k < en; k += step)
        r[nr++] = e[k];
    } else {
      st = st < 0 ? -1 : st > ne - 1 ? ne - 1 : st;
      en = en < -1 ? -1 : en > ne - 1 ? ne - 1 : en;
      for (int64_t k = st; k > en; k += step)
        r[nr++] = e[k];
    }
    break;
  }
  case OP_Concat:
    for (int i = 0; i < n->n_in; i++) {
      if (!sv_of(a, n, i, e, &ne) || nr + ne > SV_MAX)
        return;
      memcpy(r + nr, e, (size_t)ne * sizeof *e);
      nr += ne;
    }
    break;
  case OP_Add: case OP_Sub: case OP_Mul: case OP_Div: {
    if (!sv_of(a, n, 0, e, &ne) || !sv_of(a, n, 1, f, &nf) || (ne != nf && ne != 1 && nf != 1))
      return;
    nr = ne > nf ? ne : nf;
    for (int k = 0; k < nr; k++) {
      const DimExpr *p = e[ne == 1 ? 0 : k], *q = f[nf == 1 ? 0 : k];
      int64_t c;
      r[k] = n->op == OP_Add ? dx_add(a, p, q) : n->op == OP_Sub ? dx_sub(a, p, q)
             : n->op == OP_Mul ? dx_mul(a, p, q)
             : dx_is_const(q, &c) ? dx_div_exact(a, p, c) : NULL;
      if (!r[k])
        return;
    }
    break;
  }
  default:
    return;
  }
  set_sval(y, r, nr);
}

/* ---- ops whose result shape comes from a valued operand ------------------------ */

static bool operand_symbolic(const Node *n, int i) {
  return ir_has_input(n, i) && n->in[i]->sval;
}

/* total / (product of the other dims) for a -1 entry; NULL when inexact. */
static const DimExpr *reshape_rest(Arena *a, const Shape *xs, const DimExpr *const *o, int k, int neg) {
  const DimExpr *total = dx_const(a, 1), *part = dx_const(a, 1);
  for (int j = 0; j < xs->rank; j++)
    total = dx_mul(a, total, shape_dx(a, xs, j));
  for (int j = 0; j < k; j++)
    if (j != neg)
      part = dx_mul(a, part, o[j]);
  if (!total || !part)
    return NULL;
  int64_t c;
  if (dx_is_const(part, &c))
    return c > 0 ? dx_div_exact(a, total, c) : NULL;
  /* part is one term c * s1 * ... : divide each term of total by it */
  if (part->n != 1)
    return NULL;
  DimExpr q = {0};
  const DimTerm *p = &part->t[0];
  for (int i = 0; i < total->n; i++) {
    DimTerm t = total->t[i];
    if (t.c % p->c)
      return NULL;
    t.c /= p->c;
    for (int m = 0; m < p->deg; m++) {   /* remove one factor p->s[m] */
      int at = -1;
      for (int u = 0; u < t.deg && at < 0; u++)
        if (t.s[u] == p->s[m])
          at = u;
      if (at < 0)
        return NULL;
      memmove(&t.s[at], &t.s[at + 1], (size_t)(t.deg - at - 1) * sizeof t.s[0]);
      t.deg--;
    }
    q.t[q.n++] = t;   /* distinct terms stay distinct and sorted after removing a common factor */
  }
  return arena_dup(a, &q, sizeof q);
}

static bool sym_reshape(Node *n, Diag *d) {
  Arena *a = n->g->arena;
  const Shape *xs = &n->in[0]->shape;
  const DimExpr *t[SV_MAX], *o[IR_MAX_RANK];
  int k;
  if (!sv_of(a, n, 1, t, &k) || k > IR_MAX_RANK)
    return diag_error(d, n, "the target shape is not known at compile time");
  if (xs->rank < 0 || !shape_is_bounded(xs)) {
    char b[256];
    return diag_error(d, n, "the input's shape %s is not known at compile time", shape_str(xs, b, sizeof b));
  }
  bool allowzero = n->g->opset >= 14 && ir_attr_int(n, "allowzero", 0) != 0;
  int neg = -1;
  for (int j = 0; j < k; j++) {
    int64_t c;
    bool is_c = dx_is_const(t[j], &c);
    if (is_c && c == 0 && !allowzero) {
      if (j >= xs->rank)
        return diag_error(d, n, "shape entry %d is 0 (copy) but the input has rank %d", j, xs->rank);
      o[j] = shape_dx(a, xs, j);
    } else if (is_c && c == -1) {
      if (neg >= 0)
        return diag_error(d, n, "shape has more than one -1 entry");
      neg = j;
    } else if (is_c && c < 0) {
      return diag_error(d, n, "shape entry %d is %lld; only -1 may be negative", j, (long long)c);
    } else {
      o[j] = t[j];
    }
  }
  if (neg >= 0 && !(o[neg] = reshape_rest(a, xs, o, k, neg)))
    return diag_error(d, n, "cannot tell entry %d of the target shape for every value of the dims' "
                      "ranges (the element count does not divide exactly)", neg);
  Shape s = shape_scalar();
  s.rank = k;
  for (int j = 0; j < k; j++)
    shape_set_dx(root(n->g), &s, j, o[j]);
  infer_set(n, 0, n->in[0]->dt, &s);
  return true;
}

/* Slice with extents as starts/ends: step 1 along each listed axis, starts
 * and ends that stay inside the axis over the whole range. */
/* Slice operand i as the negation of extents (-seq: Neg of a valued tensor,
 * through Unsqueeze/Squeeze/Reshape/Identity): the extents themselves.
 * Extents stay monotone (no negative coefficients), so -seq has no sval of
 * its own; sym_slice counts such a bound from the end. */
static bool neg_sv_of(Arena *a, const Node *n, int i, const DimExpr **out, int *count) {
  if (!ir_has_input(n, i))
    return false;
  const Value *v = n->in[i];
  while (v->kind == VK_NODE && v->producer &&
         (v->producer->op == OP_Unsqueeze || v->producer->op == OP_Squeeze || v->producer->op == OP_Reshape ||
          v->producer->op == OP_Identity))
    v = v->producer->in[0];
  return v->kind == VK_NODE && v->producer && v->producer->op == OP_Neg && v->producer->in[0]->sval &&
         sv_of(a, v->producer, 0, out, count);
}

/* A slice bound v as an index from the start: v itself when it is an extent
 * (never negative), dim + v when v is below zero for every value of the
 * ranges and dim + v never is; false otherwise. */
static bool from_end(const Graph *g, Arena *a, const DimExpr *dim, const DimExpr **v) {
  int64_t lo, hi;
  if (dx_bounds(g, *v, &lo, &hi) && lo >= 0)
    return true;
  const DimExpr *neg = dx_sub(a, dx_const(a, 0), *v), *abs_v = neg;
  if (!neg || !dx_bounds(g, abs_v, &lo, &hi) || lo < 1)
    return false;
  const DimExpr *r = dx_sub(a, dim, neg);
  if (!r || !dx_bounds(g, r, &lo, &hi) || lo < 0)
    return false;
  *v = r;
  return true;
}

/* A Slice with constant bounds, one of them negative, along an axis whose
 * extent is a range: the ordinary inference would leave the sliced extent
 * unknown (FSMN-VAD's cache update x[:, :, -19:, :]); sym_slice computes it. */
static bool slice_from_end_ranged(const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (n->g->opset < 10 || xs->rank < 0 || !ir_has_input(n, 2) || n->in[1]->kind != VK_CONST ||
      n->in[2]->kind != VK_CONST || (ir_has_input(n, 3) && n->in[3]->kind != VK_CONST) ||
      (ir_has_input(n, 4) && n->in[4]->kind != VK_CONST))
    return false;
  const Tensor *st = n->in[1]->konst, *en = n->in[2]->konst, *ax = ir_has_input(n, 3) ? n->in[3]->konst : NULL;
  if (st->numel != en->numel || (ax && ax->numel != st->numel))
    return false;
  for (int64_t k = 0; k < st->numel; k++) {
    int ai;
    if (!shape_axis(ax ? tensor_get_i64(ax, k) : k, xs->rank, &ai))
      return false;
    if (xs->d[ai] < 0 && xs->x[ai] && (tensor_get_i64(st, k) < 0 || tensor_get_i64(en, k) < 0))
      return true;
  }
  return false;
}

/* The length of a slice with constant start c0, end c1 and step (not 1)
 * along an axis whose extent dim is a range: the bounds as the spec clamps
 * them (a start past the end for a negative step: dim - 1; INT_MAX-style
 * ends: dim, or -1 before the axis' start going backwards), counted from the
 * end when negative. NULL when the clamping would differ between values of
 * the ranges, which no single extent expresses. codegen/emit_dyn.c clamps
 * the same way at run time. */
static const DimExpr *stepped_len(Node *n, const DimExpr *dim, const DimExpr *b, const DimExpr *e,
                                  int64_t step) {
  Arena *a = n->g->arena;
  Graph *g = (Graph *)root(n->g);
  int64_t c0, c1, dlo, dhi;
  if (!dx_is_const(b, &c0) || !dx_is_const(e, &c1) || !dx_bounds(g, dim, &dlo, &dhi))
    return NULL;
  const DimExpr *lo, *hi; /* the slice covers [lo, hi) going forwards, (hi, lo] backwards */
  if (step > 0) {
    if (c0 >= 0 && c0 <= dlo)
      lo = dx_const(a, c0);
    else if (c0 < 0 && dlo + c0 >= 0)
      lo = dx_add(a, dim, dx_const(a, c0));
    else
      return NULL;
    if (c1 >= dhi)
      hi = dim;
    else if (c1 >= 0 && c1 <= dlo)
      hi = dx_const(a, c1);
    else if (c1 < 0 && dlo + c1 >= 0)
      hi = dx_add(a, dim, dx_const(a, c1));
    else
      return NULL;
  } else {
    if (c0 >= dhi - 1)
      lo = dx_sub(a, dim, dx_const(a, 1));
    else if (c0 >= 0 && c0 <= dlo - 1)
      lo = dx_const(a, c0);
    else if (c0 < 0 && dlo + c0 >= 0)
      lo = dx_add(a, dim, dx_const(a, c0));
    else
      return NULL;
    if (c1 <= -dhi - 1)
      hi = dx_const(a, -1);
    else if (c1 >= 0 && c1 <= dlo - 1)
      hi = dx_const(a, c1);
    else if (c1 < 0 && dlo + c1 >= -1)
      hi = dx_add(a, dim, dx_const(a, c1));
    else
      return NULL;
  }
  int64_t k = step > 0 ? step : -step, llo, lhi;
  const DimExpr *span = step > 0 ? dx_sub(a, hi, lo) : dx_sub(a, lo, hi);
  if (!lo || !hi || !span || !dx_bounds(g, span, &llo, &lhi) || llo < 0)
    return NULL;
  return dx_floordiv(g, dx_add(a, span, dx_const(a, k - 1)), k);
}

static bool sym_slice(Node *n, Diag *d) {
  Arena *a = n->g->arena;
  const Shape *xs = &n->in[0]->shape;
  const DimExpr *st[SV_MAX], *en[SV_MAX], *ax[SV_MAX], *sp[SV_MAX];
  int ns = 0, ne = 0, na = 0, np = 0;
  /* starts or ends given as -extents (neg_sv_of) count from the end */
  bool neg_st = !sv_of(a, n, 1, st, &ns) && neg_sv_of(a, n, 1, st, &ns);
  bool neg_en = !sv_of(a, n, 2, en, &ne) && neg_sv_of(a, n, 2, en, &ne);
  if (n->g->opset < 10 || ns == 0 || ns != ne ||
      (ir_has_input(n, 3) && !sv_of(a, n, 3, ax, &na)) || (ir_has_input(n, 4) && !sv_of(a, n, 4, sp, &np)) ||
      xs->rank < 0)
    return diag_error(d, n, "starts, ends, axes and steps must be constants or extents");
  Shape s = *xs;
  const Graph *g = root(n->g);
  for (int k = 0; k < ns; k++) {
    int64_t axis = k, step = 1, lo, hi, slo, shi, dlo, dhi;
    if (na && !dx_is_const(ax[k], &axis))
      return diag_error(d, n, "axes must be constants");
    if (np && (!dx_is_const(sp[k], &step) || step == 0))
      return diag_error(d, n, "steps must be non-zero constants");
    int ai;
    if (!shape_axis(axis, xs->rank, &ai))
      return diag_error(d, n, "axis %lld is out of range", (long long)axis);
    const DimExpr *dim = shape_dx(a, xs, ai), *b = st[k], *e = en[k];
    if (step != 1) {
      const DimExpr *len = NULL;
      if (neg_st || neg_en || !dim || !(len = stepped_len(n, dim, b, e, step)))
        return diag_error(d, n, "a slice with step %lld along an axis of run-time extent needs constant starts "
                          "and ends that no value of the ranges clamps (x[::-1], x[1::2], x[-2::-1])",
                          (long long)step);
      shape_set_dx(g, &s, ai, len);
      continue;
    }
    int64_t c;
    if (dx_is_const(e, &c) && c >= (int64_t)1 << 31)   /* INT_MAX-style "to the end" */
      e = dim;
    if (!dim || !dx_bounds(g, dim, &dlo, &dhi))
      return diag_error(d, n, "a start or end of the slice is not a bounded extent");
    for (int w = 0; w < 2; w++) {   /* -v with v >= 1 for every value: dim - v */
      const DimExpr **bound = w ? &e : &b;
      int64_t vlo, vhi;
      if (!(w ? neg_en : neg_st))
        continue;
      if (!dx_bounds(g, *bound, &vlo, &vhi) || vlo < 1 || !(*bound = dx_sub(a, dim, *bound)))
        return diag_error(d, n, "a start or end of the slice counts from the end by an extent that may be 0 "
                          "or pass the axis' start");
    }
    /* a start or end below zero for every value counts from the end: dim + it
     * (x[-19:] over a ranged axis, T5's bias[:, :, -seq:]); one that is
     * negative for some values only would clamp, which no extent expresses */
    if (!from_end(g, a, dim, &b) || !from_end(g, a, dim, &e))
      return diag_error(d, n, "a start or end of the slice is negative for some values of the ranges only "
                        "(or counts from the end past the axis' start)");
    if (!dx_bounds(g, b, &slo, &shi) || !dx_bounds(g, e, &lo, &hi))
      return diag_error(d, n, "a start or end of the slice is not a bounded extent");
    if (slo < 0 || lo < 0)
      return diag_error(d, n, "a slice by extents needs non-negative starts and ends");
    /* end <= dim for every value: the same extent, or a range that stays below */
    if (!dx_equal(e, dim) && !(hi <= dlo))
      return diag_error(d, n, "end %s may pass the axis' extent %s", "", "");
    const DimExpr *len = dx_sub(a, e, b);
    int64_t llo, lhi;
    if (!len || !dx_bounds(g, len, &llo, &lhi) || llo < 0)
      return diag_error(d, n, "the slice's length is not a non-negative extent over the whole range");
    shape_set_dx(g, &s, ai, len);
  }
  infer_set(n, 0, n->in[0]->dt, &s);
  return true;
}

/* Range whose limit is a valued extent (torch.arange(seq)): start and delta
 * constant integers, length ceil((limit - start) / delta) for delta > 0. */
/* Operand i of a Range as one extent: an integer constant or valued tensor,
 * a float constant holding an integer, or a Cast to float of a valued
 * integer (torch.arange(w, dtype=float) as YOLO heads export it). */
static bool range_operand(Arena *a, const Node *n, int i, const DimExpr **out) {
  const DimExpr *e[SV_MAX];
  int ne;
  const Value *v = n->in[i];
  if (dtype_is_int(v->dt))
    return sv_of(a, n, i, e, &ne) && ne == 1 && (*out = e[0]);
  if (v->kind == VK_CONST && v->konst->numel == 1) {
    double f = tensor_get_f64(v->konst, 0);
    if (f != (double)(int64_t)f)
      return false;
    *out = dx_const(a, (int64_t)f);
    return true;
  }
  const Node *c = v->kind == VK_NODE ? v->producer : NULL;
  return c && c->op == OP_Cast && dtype_is_int(c->in[0]->dt) && sv_of(a, c, 0, e, &ne) && ne == 1 &&
         (*out = e[0]);
}

static bool sym_range(Node *n, Diag *d) {
  Arena *a = n->g->arena;
  const DimExpr *s[1], *l[1], *t[1];
  int64_t st, dl;
  DType dt = n->in[0]->dt;
  if (n->in[1]->dt != dt || n->in[2]->dt != dt || !range_operand(a, n, 0, s) || !range_operand(a, n, 1, l) ||
      !range_operand(a, n, 2, t) || !dx_is_const(s[0], &st) || !dx_is_const(t[0], &dl) || dl <= 0)
    return diag_error(d, n, "with a run-time limit, Range needs start and delta known at compile time, "
                      "integers (delta > 0)");
  const DimExpr *len = dx_floordiv((Graph *)root(n->g), dx_add(a, l[0], dx_const(a, dl - 1 - st)), dl);
  if (!len)
    return diag_error(d, n, "the range's length is not a known function of the dims for every value of "
                      "their ranges (it may be negative)");
  Shape o = shape_scalar();
  o.rank = 1;
  shape_set_dx(root(n->g), &o, 0, len);
  infer_set(n, 0, dt, &o);
  return true;
}

/* ConstantOfShape of a valued shape: its extents, the value's type. */
static bool sym_constant_of_shape(Node *n, Diag *d) {
  Arena *a = n->g->arena;
  const DimExpr *t[SV_MAX];
  int k;
  if (!sv_of(a, n, 0, t, &k) || k > IR_MAX_RANK)
    return diag_error(d, n, "the shape is not known at compile time");
  const Attr *v = ir_attr(n, "value");
  if (v && (v->kind != AT_TENSOR || !v->u.t || v->u.t->numel != 1 || v->u.t->dt == DT_STRING))
    return diag_error(d, n, "attribute 'value' must be one non-string element");
  Shape o = shape_scalar();
  o.rank = k;
  for (int j = 0; j < k; j++)
    shape_set_dx(root(n->g), &o, j, t[j]);
  infer_set(n, 0, v ? v->u.t->dt : DT_F32, &o);
  return true;
}

static bool sym_expand(Node *n, Diag *d) {
  Arena *a = n->g->arena;
  const DimExpr *t[SV_MAX];
  int k;
  if (!sv_of(a, n, 1, t, &k) || k > IR_MAX_RANK)
    return diag_error(d, n, "the target shape is not known at compile time");
  Shape ts = shape_scalar();
  ts.rank = k;
  for (int j = 0; j < k; j++)
    shape_set_dx(root(n->g), &ts, j, t[j]);
  Shape o;
  if (!shape_broadcast(&n->in[0]->shape, &ts, &o))
    return diag_error(d, n, "input does not broadcast to the target shape");
  infer_set(n, 0, n->in[0]->dt, &o);
  return true;
}

bool infer_symbolic(Node *n, bool *handled, Diag *d) {
  *handled = false;
  if (root(n->g)->n_syms == 0)
    return true;
  switch (n->op) {
  case OP_Reshape: /* a valued target, or a constant one (a -1 entry) over a ranged input */
    if (!operand_symbolic(n, 1) && (shape_is_static(&n->in[0]->shape) || n->in[1]->kind != VK_CONST))
      return true;
    *handled = true;
    return sym_reshape(n, d);
  case OP_Slice: {
    const DimExpr *t[SV_MAX];
    int nt;
    if (!operand_symbolic(n, 1) && !operand_symbolic(n, 2) && !slice_from_end_ranged(n) &&
        !neg_sv_of(n->g->arena, n, 1, t, &nt) && !neg_sv_of(n->g->arena, n, 2, t, &nt))
      return true;
    *handled = true;
    return sym_slice(n, d);
  }
  case OP_Expand:
    if (!operand_symbolic(n, 1))
      return true;
    *handled = true;
    return sym_expand(n, d);
  case OP_ConstantOfShape:
    if (!operand_symbolic(n, 0))
      return true;
    *handled = true;
    return sym_constant_of_shape(n, d);
  case OP_Range: {
    const DimExpr *l[1];
    int64_t c;
    /* a valued limit, or a float one cast from a valued integer */
    if (!operand_symbolic(n, 0) && !operand_symbolic(n, 1) && !operand_symbolic(n, 2) &&
        !(range_operand(n->g->arena, n, 1, l) && !dx_is_const(l[0], &c)))
      return true;
  }
    *handled = true;
    return sym_range(n, d);
  default:
    return true;
  }
}
