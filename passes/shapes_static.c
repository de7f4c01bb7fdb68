/* shapes_static.c - pinning symbolic dims and requiring static shapes.
 *
 * pass_pin_shapes (requires: loaded graph; provides: every graph input named by
 * a --shape has that static shape; runs before inference, like the pins).
 * pass_pin_dims (requires: loaded graph; provides: every dim named by a -D pin
 * is static; runs before inference so pinned extents flow through the graph).
 * pass_require_static (requires: inferred graph; provides: every value the C
 * target touches has a static shape, else one error per unpinned dim name;
 * no node reads a value of data-dependent size, Value.dyn_dims).
 */
#include "passes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- --shape NAME=AxBxC ------------------------------------------------------ */

bool input_shape_parse(const char *spec, InputShape *out, char *err, size_t n_err) {
  /* The last '=' splits: extents never hold one, an ONNX name might. */
  const char *eq = strrchr(spec, '=');
  out->name = NULL;
  out->rank = 0;
  if (!eq || eq == spec) {
    snprintf(err, n_err, "expected NAME=AxBx... (e.g. x=1x3x48x192)");
    return false;
  }
  const char *p = eq + 1;
  if (!*p) {
    snprintf(err, n_err, "no extents after '='");
    return false;
  }
  int64_t numel = 1;
  for (;;) {
    const char *start = p;
    if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z' && *p != 'x') || *p == '_') {
      /* a dim name: -D gives its value or range */
      while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z' && *p != 'x') || *p == '_' ||
             (*p >= '0' && *p <= '9'))
        p++;
      size_t nl = (size_t)(p - start);
      if (*p && *p != 'x') {
        const char *stop = strchr(start, 'x');
        int n = stop ? (int)(stop - start) : (int)strlen(start);
        snprintf(err, n_err, "extent '%.*s' is neither a positive integer nor a dim name", n, start);
        return false;
      }
      if (nl >= sizeof out->sym[0]) {
        snprintf(err, n_err, "dim name '%.*s' is longer than %d characters", (int)nl, start,
                 (int)sizeof out->sym[0] - 1);
        return false;
      }
      if (out->rank == IR_MAX_RANK) {
        snprintf(err, n_err, "more than %d extents", IR_MAX_RANK);
        return false;
      }
      memcpy(out->sym[out->rank], start, nl);
      out->sym[out->rank][nl] = 0;
      out->d[out->rank++] = -1;
      if (!*p)
        break;
      p++;
      continue;
    }
    while (*p >= '0' && *p <= '9')
      p++;
    size_t len = (size_t)(p - start);
    if (len == 0 && (!*start || *start == 'x')) {
      snprintf(err, n_err, "an extent is empty");
      return false;
    }
    if (len == 0 || (*p && *p != 'x')) {
      const char *stop = strchr(start, 'x');
      int n = stop ? (int)(stop - start) : (int)strlen(start);
      snprintf(err, n_err, "extent '%.*s' is not a positive integer", n, start);
      return false;
    }
    char num[32];
    if (len >= sizeof num) {
      snprintf(err, n_err, "extent '%.*s' is too large", (int)len, start);
      return false;
    }
    memcpy(num, start, len);
    num[len] = 0;
    errno = 0;
    long long v = strtoll(num, NULL, 10);
    if (errno == ERANGE) {
      snprintf(err, n_err, "extent '%s' is too large", num);
      return false;
    }
    if (v < 1) {
      snprintf(err, n_err, "extent %lld: every extent must be at least 1", v);
      return false;
    }
    if (out->rank == IR_MAX_RANK) {
      snprintf(err, n_err, "more than %d extents", IR_MAX_RANK);
      return false;
    }
    if (numel > INT64_MAX / 64 / v) {   /* room for the widest dtype's bytes */
      snprintf(err, n_err, "the shape's size overflows");
      return false;
    }
    numel *= v;
    out->sym[out->rank][0] = 0;
    out->d[out->rank++] = v;
    if (!*p)
      break;
    p++;   /* 'x' */
  }
  char *name = malloc((size_t)(eq - spec) + 1);
  if (!name) {
    snprintf(err, n_err, "out of memory");
    return false;
  }
  memcpy(name, spec, (size_t)(eq - spec));
  name[eq - spec] = 0;
  out->name = name;
  return true;
}

static const char *spec_str(const InputShape *s, char *buf, size_t n) {
  int k = snprintf(buf, n, "%s=", s->name);
  for (int i = 0; i < s->rank && k >= 0 && (size_t)k < n; i++)
    k += s->sym[i][0] ? snprintf(buf + k, n - (size_t)k, "%s%s", i ? "x" : "", s->sym[i])
                      : snprintf(buf + k, n - (size_t)k, "%s%lld", i ? "x" : "", (long long)s->d[i]);
  return buf;
}

static const DimPin *pin_of(const char *sym, const DimPin *pins, int n_pins) {
  for (int p = 0; sym && p < n_pins; p++)
    if (strcmp(pins[p].name, sym) == 0)
      return &pins[p];
  return NULL;
}

static void no_such_input(const Graph *g, const char *spec, const char *name, Diag *d) {
  const Value *v = ir_value_find(g, name);
  if (v && v->kind == VK_CONST) {
    diag_error(d, NULL, "--shape %s: '%s' is a weight (an initializer), not an input", spec, name);
    return;
  }
  char list[1024];
  size_t k = 0;
  list[0] = 0;
  for (int i = 0; i < g->n_inputs && k + 4 < sizeof list; i++) {
    int w = snprintf(list + k, sizeof list - k, "%s'%s'", i ? ", " : "", g->inputs[i]->name);
    k = w < 0 ? k : k + (size_t)w >= sizeof list ? sizeof list - 1 : k + (size_t)w;
  }
  diag_error(d, NULL, "--shape %s: the model has no graph input '%s' (its inputs: %s)", spec, name,
             g->n_inputs ? list : "none");
}

/* Checks one --shape against the input's declared shape, then sets it. */
static bool apply_shape(Graph *g, const InputShape *s, const DimPin *pins, int n_pins, Diag *d) {
  char spec[512], sb[512];
  spec_str(s, spec, sizeof spec);
  Value *v = NULL;
  for (int i = 0; i < g->n_inputs && !v; i++)
    if (strcmp(g->inputs[i]->name, s->name) == 0)
      v = g->inputs[i];
  if (!v) {
    no_such_input(g, spec, s->name, d);
    return false;
  }
  Shape *sh = &v->shape;
  if (sh->rank >= 0 && sh->rank != s->rank)
    return diag_error(d, NULL, "--shape %s: input '%s' has rank %d (shape %s), not %d", spec, s->name,
                      sh->rank, shape_str(sh, sb, sizeof sb), s->rank);
  bool ok = true;
  for (int i = 0; i < s->rank && sh->rank >= 0; i++) {
    const DimPin *pin = sh->d[i] < 0 ? pin_of(sh->sym[i], pins, n_pins) : NULL;
    if (s->sym[i][0]) {
      if (sh->d[i] >= 0)
        ok = diag_error(d, NULL, "--shape %s: dimension %d of input '%s' is %lld in the model (shape %s), "
                        "not a dim to name '%s'", spec, i, s->name, (long long)sh->d[i],
                        shape_str(sh, sb, sizeof sb), s->sym[i]);
      continue;
    }
    if (sh->d[i] >= 0 && sh->d[i] != s->d[i])
      ok = diag_error(d, NULL, "--shape %s: dimension %d of input '%s' is %lld in the model (shape %s), "
                      "not %lld", spec, i, s->name, (long long)sh->d[i], shape_str(sh, sb, sizeof sb),
                      (long long)s->d[i]);
    else if (pin && pin->range && (s->d[i] < pin->lo || s->d[i] > pin->value))
      ok = diag_error(d, NULL, "--shape %s: dimension %d of input '%s' is '%s', in %lld..%lld by "
                      "-D, not %lld", spec, i, s->name, pin->name, (long long)pin->lo,
                      (long long)pin->value, (long long)s->d[i]);
    else if (pin && !pin->range && pin->value != s->d[i])
      ok = diag_error(d, NULL, "--shape %s: dimension %d of input '%s' is '%s', pinned to %lld by "
                      "-D %s=%lld, not %lld", spec, i, s->name, pin->name, (long long)pin->value,
                      pin->name, (long long)pin->value, (long long)s->d[i]);
  }
  if (!ok)
    return false;
  sh->rank = s->rank;
  for (int i = 0; i < s->rank; i++) {
    sh->d[i] = s->d[i];
    sh->sym[i] = s->sym[i][0] ? arena_strdup(g->arena, s->sym[i]) : NULL;
    sh->x[i] = NULL;
  }
  return true;
}

bool pass_pin_shapes(Graph *g, const InputShape *shapes, int n_shapes, const DimPin *pins, int n_pins,
                     Diag *d) {
  int before = d->n_errors;
  for (int i = 0; i < n_shapes; i++) {
    for (int j = 0; j < i; j++)
      if (strcmp(shapes[i].name, shapes[j].name) == 0) {
        diag_error(d, NULL, "--shape %s: given twice", shapes[i].name);
        return false;
      }
    apply_shape(g, &shapes[i], pins, n_pins, d);
  }
  return d->n_errors == before;
}

/* ---- -D NAME=VALUE, -D NAME=LO..HI, -D NAME<=HI ------------------------------- */

static bool parse_extent(const char *s, const char *end, int64_t *v) {
  if (s == end || end - s > 18)
    return false;
  int64_t x = 0;
  for (const char *p = s; p < end; p++) {
    if (*p < '0' || *p > '9')
      return false;
    x = x * 10 + (*p - '0');
  }
  *v = x;
  return true;
}

bool dim_pin_parse(const char *spec, DimPin *out, char *err, size_t n_err) {
  const char *le = strstr(spec, "<="), *eq = strchr(spec, '=');
  const char *name_end = le && le < eq ? le : eq;
  memset(out, 0, sizeof *out);
  if (!name_end || name_end == spec) {
    snprintf(err, n_err, "expected DIM=VALUE, DIM=LO..HI or DIM<=HI");
    return false;
  }
  const char *rhs = name_end == le ? le + 2 : eq + 1, *end = rhs + strlen(rhs);
  const char *dots = strstr(rhs, ".."), *colon = dots ? strchr(dots, ':') : NULL;
  if (colon) { /* LO..HI:STEP */
    if (!parse_extent(colon + 1, end, &out->step) || out->step < 1) {
      snprintf(err, n_err, "expected LO..HI:STEP with a positive STEP, got '%s'", rhs);
      return false;
    }
    end = colon;
  }
  if (name_end == le) {
    out->range = true;
    out->lo = 1;
    if (!parse_extent(rhs, end, &out->value)) {
      snprintf(err, n_err, "'%s' is not a non-negative integer", rhs);
      return false;
    }
  } else if (dots) {
    out->range = true;
    if (!parse_extent(rhs, dots, &out->lo) || !parse_extent(dots + 2, end, &out->value)) {
      snprintf(err, n_err, "expected LO..HI with non-negative integers, got '%s'", rhs);
      return false;
    }
  } else if (!parse_extent(rhs, end, &out->value)) {
    snprintf(err, n_err, "'%s' is not a non-negative integer", rhs);
    return false;
  }
  if (out->range && out->lo > out->value) {
    snprintf(err, n_err, "empty range %lld..%lld", (long long)out->lo, (long long)out->value);
    return false;
  }
  if (out->range && out->value < 1) {
    snprintf(err, n_err, "the range's upper bound must be at least 1");
    return false;
  }
  if (out->step > 1 && (out->lo % out->step || out->value % out->step || out->lo < 1)) {
    snprintf(err, n_err, "LO and HI must be positive multiples of STEP %lld", (long long)out->step);
    return false;
  }
  char *name = malloc((size_t)(name_end - spec) + 1);
  if (!name) {
    snprintf(err, n_err, "out of memory");
    return false;
  }
  memcpy(name, spec, (size_t)(name_end - spec));
  name[name_end - spec] = 0;
  out->name = name;
  return true;
}

/* Range pins become the graph's symbols, and every dim of that name a bounded one. */
static bool pin_ranges(Graph *g, const DimPin *pins, int n_pins, bool *used, Diag *d) {
  for (int p = 0; p < n_pins; p++) {
    if (!pins[p].range)
      continue;
    if (g->n_syms == IR_MAX_SYMS)
      return diag_error(d, NULL, "-D %s: at most %d dimensions may be ranges", pins[p].name,
                        IR_MAX_SYMS);
    int id = g->n_syms++;
    int64_t st = pins[p].step > 1 ? pins[p].step : 1;
    g->syms[id] = (DimSym){.name = arena_strdup(g->arena, pins[p].name), .lo = pins[p].lo / st,
                           .hi = pins[p].value / st, .step = st};
    const DimExpr *e = st > 1 ? dx_mul(g->arena, dx_const(g->arena, st), dx_sym(g->arena, id)) : dx_sym(g->arena, id);
    for (int i = 0; i < g->n_values; i++) {
      Shape *s = &g->values[i]->shape;
      for (int k = 0; k < s->rank; k++)
        if (s->d[k] < 0 && s->sym[k] && strcmp(s->sym[k], pins[p].name) == 0) {
          s->x[k] = e;
          used[p] = true;
        }
    }
  }
  return true;
}

static int pin_shape(Shape *s, const DimPin *pins, int n_pins, bool *used) {
  int k = 0;
  for (int i = 0; i < s->rank; i++)
    for (int p = 0; p < n_pins; p++)
      if (!pins[p].range && s->d[i] < 0 && s->sym[i] && strcmp(s->sym[i], pins[p].name) == 0) {
        s->d[i] = pins[p].value;
        s->sym[i] = NULL, s->x[i] = NULL;
        used[p] = true;
        k++;
      }
  return k;
}

bool pass_pin_dims(Graph *g, const DimPin *pins, int n_pins, Diag *d) {
  if (n_pins == 0)
    return true;
  bool used[256] = {false};
  if (n_pins > 256)
    return diag_error(d, NULL, "too many -D pins (%d, at most 256)", n_pins);
  for (int p = 0; p < n_pins; p++)
    if (pins[p].value < 0)
      return diag_error(d, NULL, "-D %s=%lld: a dimension cannot be negative", pins[p].name,
                        (long long)pins[p].value);
  for (int i = 0; i < g->n_values; i++)
    pin_shape(&g->values[i]->shape, pins, n_pins, used);
  if (!pin_ranges(g, pins, n_pins, used, d))
    return false;
  for (int p = 0; p < n_pins; p++)
    if (!used[p])
      diag_warn(d, NULL, "-D %s: the model has no symbolic dimension of that name", pins[p].name);
  return true;
}

/* "--shape x=Nx3xHxW" with the model's static extents, names or '?' elsewhere. */
static const char *shape_hint(const Value *v, char *buf, size_t n) {
  int k = snprintf(buf, n, "--shape %s=", v->name);
  for (int i = 0; i < v->shape.rank && k >= 0 && (size_t)k < n; i++) {
    const char *x = i ? "x" : "";
    if (v->shape.d[i] >= 0)
      k += snprintf(buf + k, n - (size_t)k, "%s%lld", x, (long long)v->shape.d[i]);
    else
      k += snprintf(buf + k, n - (size_t)k, "%s%s", x, v->shape.sym[i] ? v->shape.sym[i] : "?");
  }
  return buf;
}

static void report_value(const Value *v, bool *named, Diag *d) {
  char sb[512], hb[512];
  for (int i = 0; i < v->shape.rank; i++) {
    if (v->shape.d[i] >= 0 || v->shape.x[i])   /* static, or bounded by a -D range */
      continue;
    if (v->kind == VK_INPUT) {
      /* A dim name can be shared by dims of different sizes ('?' twice): the
       * whole shape is what the user can always give. */
      diag_error(d, NULL, "graph input '%s' has shape %s, which is not known at compile time; "
                 "give it with %s%s", v->name, shape_str(&v->shape, sb, sizeof sb),
                 shape_hint(v, hb, sizeof hb),
                 v->shape.sym[i] ? arena_printf(v->g->arena, " (or pin dim '%s' with -D %s=VALUE, or keep it "
                                                "symbolic within a range with -D %s=LO..HI)", v->shape.sym[i],
                                                v->shape.sym[i], v->shape.sym[i]) : "");
    } else if (v->shape.sym[i]) {
      if (*named)
        return;
      *named = true;
      diag_error(d, v->producer, "value '%s' has shape %s: dimension '%s' is symbolic; "
                 "pin it with -D %s=VALUE or bound it with -D %s=LO..HI", v->name,
                 shape_str(&v->shape, sb, sizeof sb), v->shape.sym[i], v->shape.sym[i], v->shape.sym[i]);
    } else {
      diag_error(d, v->producer, "value '%s' has shape %s, which is not known at compile time",
                 v->name, shape_str(&v->shape, sb, sizeof sb));
    }
    return;
  }
  if (v->shape.rank < 0) {
    diag_error(d, v->producer, "value '%s' has an unknown rank", v->name);
    return;
  }
  int64_t numel, bytes;
  if (!shape_numel_max(v->g, &v->shape, &numel) || !dtype_bytes(v->dt, numel, &bytes) || bytes > INT64_MAX / 4)
    diag_error(d, v->producer, "value '%s' of shape %s is too large: its byte size overflows",
               v->name, shape_str(&v->shape, sb, sizeof sb));
}

bool pass_require_static(Graph *g, Diag *d) {
  int before = d->n_errors;
  /* Report inputs first: a symbolic input dim is the usual root cause, and
   * everything downstream would only repeat it. */
  bool named = false;
  for (int i = 0; i < g->n_inputs; i++)
    report_value(g->inputs[i], &named, d);
  if (d->n_errors > before)
    return false;
  for (Node *n = g->first; n; n = n->next)
    for (int i = 0; i < n->n_out; i++)
      if (n->out[i]->kind != VK_NONE) {
        report_value(n->out[i], &named, d);
        if (d->n_errors > before)
          return false;
      }
  /* A data-dependent extent (Value.dyn_dims) is reported to the caller only:
   * kernels are specialized for static shapes, so no node may read one. */
  for (Node *n = g->first; n; n = n->next)
    for (int i = 0; i < n->n_out; i++)
      if (n->out[i]->kind != VK_NONE && n->out[i]->dyn_dims && n->out[i]->n_uses > 0 &&
          !(n->out[i]->uses[0]->op == OP_Identity && shape_is_bounded(&n->out[i]->uses[0]->out[0]->shape) &&
            !shape_is_static(&n->out[i]->uses[0]->out[0]->shape)))
        diag_error(d, n, "output %d ('%s') of node '%s' has a data-dependent size; only graph "
                   "outputs may have one (it is read by node '%s')", i, n->out[i]->name, n->name,
                   n->out[i]->uses[0]->name);
  return d->n_errors == before;
}
