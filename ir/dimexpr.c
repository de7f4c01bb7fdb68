/* dimexpr.c - bounded symbolic extents: canonical integer polynomials over
 * the graph's range symbols (docs/dynamic-shapes.md). */
#include "ir.h"

#include <string.h>

static int term_cmp(const DimTerm *a, const DimTerm *b) {
  if (a->deg != b->deg)
    return a->deg < b->deg ? -1 : 1;
  for (int i = 0; i < a->deg; i++)
    if (a->s[i] != b->s[i])
      return a->s[i] < b->s[i] ? -1 : 1;
  return 0;
}

static bool add_ok(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }
static bool mul_ok(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* Adds term t into the sorted expression e (merging like terms). */
static bool put_term(DimExpr *e, const DimTerm *t) {
  if (t->c == 0)
    return true;
  int i = 0;
  while (i < e->n && term_cmp(&e->t[i], t) < 0)
    i++;
  if (i < e->n && term_cmp(&e->t[i], t) == 0) {
    if (!add_ok(e->t[i].c, t->c, &e->t[i].c))
      return false;
    if (e->t[i].c == 0) {
      memmove(&e->t[i], &e->t[i + 1], (size_t)(e->n - i - 1) * sizeof e->t[0]);
      e->n--;
    }
    return true;
  }
  if (e->n == DX_MAX_TERMS)
    return false;
  memmove(&e->t[i + 1], &e->t[i], (size_t)(e->n - i) * sizeof e->t[0]);
  e->t[i] = *t;
  e->n++;
  return true;
}

static const DimExpr *keep(Arena *a, const DimExpr *e) {
  for (int i = 0; i < e->n; i++)   /* monotone: only the constant may be negative */
    if (e->t[i].deg > 0 && e->t[i].c < 0)
      return NULL;
  return arena_dup(a, e, sizeof *e);
}

const DimExpr *dx_const(Arena *a, int64_t v) {
  DimExpr e = {0};
  DimTerm t = {v, 0, {0}};
  put_term(&e, &t);
  return arena_dup(a, &e, sizeof e);
}

const DimExpr *dx_sym(Arena *a, int id) {
  DimExpr e = {0};
  DimTerm t = {1, 1, {id}};
  put_term(&e, &t);
  return arena_dup(a, &e, sizeof e);
}

static const DimExpr *add_scaled(Arena *a, const DimExpr *x, const DimExpr *y, int64_t k) {
  if (!x || !y)
    return NULL;
  DimExpr e = *x;
  for (int i = 0; i < y->n; i++) {
    DimTerm t = y->t[i];
    if (!mul_ok(t.c, k, &t.c) || !put_term(&e, &t))
      return NULL;
  }
  return keep(a, &e);
}

const DimExpr *dx_add(Arena *a, const DimExpr *x, const DimExpr *y) { return add_scaled(a, x, y, 1); }
const DimExpr *dx_sub(Arena *a, const DimExpr *x, const DimExpr *y) { return add_scaled(a, x, y, -1); }

const DimExpr *dx_mul(Arena *a, const DimExpr *x, const DimExpr *y) {
  if (!x || !y)
    return NULL;
  DimExpr e = {0};
  for (int i = 0; i < x->n; i++)
    for (int j = 0; j < y->n; j++) {
      const DimTerm *p = &x->t[i], *q = &y->t[j];
      DimTerm t = {0, p->deg + q->deg, {0}};
      if (t.deg > DX_MAX_DEG || !mul_ok(p->c, q->c, &t.c))
        return NULL;
      /* merge the two ascending factor lists */
      int u = 0, v = 0, w = 0;
      while (u < p->deg || v < q->deg)
        t.s[w++] = v >= q->deg || (u < p->deg && p->s[u] <= q->s[v]) ? p->s[u++] : q->s[v++];
      if (!put_term(&e, &t))
        return NULL;
    }
  return keep(a, &e);
}

const DimExpr *dx_div_exact(Arena *a, const DimExpr *x, int64_t k) {
  if (!x || k <= 0)
    return NULL;
  DimExpr e = *x;
  for (int i = 0; i < e.n; i++) {
    if (e.t[i].c % k)
      return NULL;
    e.t[i].c /= k;
  }
  return keep(a, &e);
}

bool dx_is_const(const DimExpr *x, int64_t *v) {
  if (!x || x->n > 1 || (x->n == 1 && x->t[0].deg > 0))
    return false;
  *v = x->n ? x->t[0].c : 0;
  return true;
}

bool dx_equal(const DimExpr *x, const DimExpr *y) {
  if (!x || !y || x->n != y->n)
    return false;
  for (int i = 0; i < x->n; i++)
    if (x->t[i].c != y->t[i].c || term_cmp(&x->t[i], &y->t[i]) != 0)
      return false;
  return true;
}

bool dx_eval(const DimExpr *x, const int64_t *vals, int64_t *out) {
  int64_t sum = 0;
  for (int i = 0; i < x->n; i++) {
    int64_t v = x->t[i].c;
    for (int k = 0; k < x->t[i].deg; k++)
      if (!mul_ok(v, vals[x->t[i].s[k]], &v))
        return false;
    if (!add_ok(sum, v, &sum))
      return false;
  }
  *out = sum;
  return true;
}

bool dx_bounds(const Graph *g, const DimExpr *x, int64_t *lo, int64_t *hi) {
  int64_t vlo[IR_MAX_SYMS], vhi[IR_MAX_SYMS];
  while (g->parent)
    g = g->parent;
  for (int i = 0; i < g->n_syms; i++) {
    vlo[i] = g->syms[i].lo;
    vhi[i] = g->syms[i].hi;
  }
  for (int i = 0; i < x->n; i++)
    if (x->t[i].deg > 0 && x->t[i].c < 0)
      return false;
  return dx_eval(x, vlo, lo) && dx_eval(x, vhi, hi);
}

void dx_print(const Graph *g, const DimExpr *x, const char *c_dims, Buf *out) {
  while (g->parent)
    g = g->parent;
  if (x->n == 0) {
    buf_puts(out, "0");
    return;
  }
  if (c_dims)
    buf_putc(out, '(');
  for (int i = x->n - 1; i >= 0; i--) {   /* highest degree first */
    const DimTerm *t = &x->t[i];
    int64_t c = t->c;
    if (i < x->n - 1)
      buf_puts(out, c < 0 ? "-" : "+");
    else if (c < 0)
      buf_puts(out, "-");
    uint64_t m = c < 0 ? (uint64_t)0 - (uint64_t)c : (uint64_t)c;
    bool first = true;
    if (m != 1 || t->deg == 0) {
      buf_printf(out, c_dims ? "(int64_t)%llu" : "%llu", (unsigned long long)m);
      first = false;
    }
    for (int k = 0; k < t->deg; k++) {
      if (!first)
        buf_putc(out, '*');
      first = false;
      if (c_dims)
        buf_printf(out, "%s[%d]", c_dims, t->s[k]);
      else if (t->s[k] < g->n_syms && g->syms[t->s[k]].step > 1)
        buf_printf(out, "(%s/%lld)", g->syms[t->s[k]].name, (long long)g->syms[t->s[k]].step);
      else
        buf_puts(out, t->s[k] < g->n_syms ? g->syms[t->s[k]].name : "?");
    }
  }
  if (c_dims)
    buf_putc(out, ')');
}

const DimExpr *shape_dx(Arena *a, const Shape *s, int i) {
  if (i < 0 || i >= s->rank)
    return NULL;
  if (s->d[i] >= 0)
    return dx_const(a, s->d[i]);
  return s->x[i];
}

void shape_set_dx(const Graph *g, Shape *s, int i, const DimExpr *e) {
  int64_t v;
  if (e && dx_is_const(e, &v) && v >= 0) {
    s->d[i] = v;
    s->sym[i] = NULL;
    s->x[i] = NULL;
    return;
  }
  s->d[i] = DIM_UNKNOWN;
  s->x[i] = e;
  s->sym[i] = NULL;
  if (e) {
    Buf b;
    buf_init(&b);
    dx_print(g, e, NULL, &b);
    s->sym[i] = arena_strdup(g->arena, b.s);
    buf_free(&b);
  }
}

bool shape_is_bounded(const Shape *s) {
  if (s->rank < 0)
    return false;
  for (int i = 0; i < s->rank; i++)
    if (s->d[i] < 0 && !s->x[i])
      return false;
  return true;
}

bool shape_numel_max(const Graph *g, const Shape *s, int64_t *out) {
  if (!shape_is_bounded(s))
    return false;
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    int64_t lo, hi = s->d[i];
    if (s->d[i] < 0 && !dx_bounds(g, s->x[i], &lo, &hi))
      return false;
    if (hi < 0 || !mul_ok(n, hi, &n))
      return false;
  }
  *out = n;
  return true;
}

int dx_user_syms(const Graph *g) {
  while (g->parent)
    g = g->parent;
  int k = 0;
  while (k < g->n_syms && g->syms[k].den == 0)
    k++;
  return k;
}

const DimExpr *dx_floordiv(Graph *g, const DimExpr *x, int64_t k) {
  if (!x || k <= 0)
    return NULL;
  Graph *r = g;
  while (r->parent)
    r = r->parent;
  int64_t c, lo, hi;
  if (dx_is_const(x, &c))
    return c >= 0 ? dx_const(g->arena, c / k) : NULL;
  if (!dx_bounds(r, x, &lo, &hi) || lo < 0)
    return NULL;
  for (int t = 0; t < x->n; t++)   /* derived dims are computed before any kernel runs */
    for (int f = 0; f < x->t[t].deg; f++)
      if (r->syms[x->t[t].s[f]].den < 0)
        return NULL;
  const DimExpr *q = dx_div_exact(g->arena, x, k);
  if (q)
    return q;
  { /* k * Q + c with Q integer-valued: Q + floor(c / k), no new symbol */
    DimExpr rest = *x;
    int64_t c0 = 0;
    bool split = true;
    rest.n = 0;
    for (int t = 0; t < x->n; t++) {
      if (x->t[t].deg == 0)
        c0 = x->t[t].c;
      else if (x->t[t].c % k == 0)
        rest.t[rest.n++] = x->t[t];
      else
        split = false;
    }
    if (split && rest.n > 0) {
      const DimExpr *p = dx_div_exact(g->arena, &rest, k);
      int64_t f = c0 >= 0 ? c0 / k : -((-c0 + k - 1) / k);
      if (p)
        return dx_add(g->arena, p, dx_const(g->arena, f));
    }
  }
  for (int i = 0; i < r->n_syms; i++)
    if (r->syms[i].den == k && dx_equal(r->syms[i].num, x))
      return dx_sym(g->arena, i);
  if (r->n_syms == IR_MAX_SYMS)
    return NULL;
  Buf b;
  buf_init(&b);
  buf_puts(&b, "floor((");
  dx_print(r, x, NULL, &b);
  buf_printf(&b, ")/%lld)", (long long)k);
  int id = r->n_syms++;
  r->syms[id] = (DimSym){.name = arena_strdup(r->arena, b.s), .lo = lo / k, .hi = hi / k, .num = x, .den = k};
  buf_free(&b);
  return dx_sym(g->arena, id);
}

uint32_t value_dyn_mask(const Value *v) {
  uint32_t m = v->dyn_dims;
  if (!v->is_output)
    return m;
  const Graph *g = v->g;
  while (g->parent)
    g = g->parent;
  for (int i = 0; i < v->shape.rank; i++) {
    const DimExpr *x = v->shape.d[i] < 0 ? v->shape.x[i] : NULL;
    for (int t = 0; x && t < x->n; t++)
      for (int f = 0; f < x->t[t].deg; f++)
        if (g->syms[x->t[t].s[f]].den < 0)
          m |= 1u << i;
  }
  return m;
}

bool ir_storage_numel(const Value *v, int64_t *out) {
  if (!shape_numel_max(v->g, &v->shape, out))
    return false;
  if (v->blocked > 0 && v->shape.rank >= 2 && v->shape.d[1] > 0) {
    int64_t c = v->shape.d[1], cb = (c + v->blocked - 1) / v->blocked * v->blocked;
    *out = *out / c * cb;
  }
  return true;
}
