/* parse.c - reads the textual IR written by print.c, so that pass tests can
 * state their input graph and expected output in a few lines.
 * Recursive descent over one line at a time; errors name the line. Constants
 * printed as "<N elements>" read back as zeros (digests are for humans). */
#include "ir.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct P {
  const char *s;   /* cursor */
  int line;
  Graph *g;       /* the graph lines go to: top, or a subgraph block */
  Diag *d;
  bool failed;
  Graph *top;
  Graph *subs[64]; /* "subgraph NAME ... end" blocks, for `graph NAME` attributes */
  int n_subs;
} P;

static bool fail(P *p, const char *what) {
  if (!p->failed)
    diag_error(p->d, NULL, "line %d: %s near '%.20s'", p->line, what, p->s);
  p->failed = true;
  return false;
}

static void skip_ws(P *p) {
  while (*p->s == ' ' || *p->s == '\t' || *p->s == '\r')
    p->s++;
}

static bool eat(P *p, char c) {
  skip_ws(p);
  if (*p->s != c)
    return false;
  p->s++;
  return true;
}

static bool expect(P *p, char c) {
  if (eat(p, c))
    return true;
  char msg[32];
  snprintf(msg, sizeof msg, "expected '%c'", c);
  return fail(p, msg);
}

static bool word(P *p, const char *w) {
  skip_ws(p);
  size_t n = strlen(w);
  if (strncmp(p->s, w, n) != 0 || isalnum((unsigned char)p->s[n]) || p->s[n] == '_')
    return false;
  p->s += n;
  return true;
}

/* A plain name ([A-Za-z0-9_.]+) or a quoted string with \" and \\ escapes. */
static const char *name(P *p) {
  skip_ws(p);
  Buf b;
  buf_init(&b);
  if (*p->s == '"') {
    p->s++;
    while (*p->s && *p->s != '"' && *p->s != '\n') {
      if (*p->s == '\\' && p->s[1])
        p->s++;
      buf_putc(&b, *p->s++);
    }
    if (*p->s != '"') {
      buf_free(&b);
      fail(p, "unterminated string");
      return NULL;
    }
    p->s++;
  } else {
    while (isalnum((unsigned char)*p->s) || *p->s == '_' || *p->s == '.')
      buf_putc(&b, *p->s++);
  }
  if (!b.s) {
    buf_puts(&b, "");
  }
  char *r = arena_strdup(p->g->arena, b.s);
  buf_free(&b);
  return r;
}

static bool number(P *p, double *out, bool *is_float) {
  skip_ws(p);
  const char *s = p->s;
  bool neg = *s == '-';
  const char *t = neg ? s + 1 : s;
  if (strncmp(t, "inf", 3) == 0 || strncmp(t, "nan", 3) == 0) {
    *out = t[0] == 'i' ? (neg ? -INFINITY : INFINITY) : NAN;
    *is_float = true;
    p->s = t + 3;
    return true;
  }
  char *end;
  *out = strtod(s, &end);
  if (end == s)
    return fail(p, "expected a number");
  *is_float = false;
  for (const char *c = s; c < end; c++)
    if (*c == '.' || *c == 'e' || *c == 'E')
      *is_float = true;
  if (!*is_float) /* integers exactly, beyond 2^53 too */
    *out = (double)strtoll(s, NULL, 10);
  p->s = end;
  return true;
}

static bool type(P *p, DType *dt, Shape *sh) {
  skip_ws(p);
  char tn[32];
  int k = 0;
  while ((isalnum((unsigned char)*p->s)) && k < 31)
    tn[k++] = *p->s++;
  tn[k] = 0;
  if (!dtype_from_name(tn, dt))
    return fail(p, "unknown element type");
  if (!expect(p, '['))
    return false;
  *sh = shape_scalar();
  if (eat(p, '*')) {
    *sh = shape_unknown();
    return expect(p, ']');
  }
  if (eat(p, ']'))
    return true;
  do {
    if (sh->rank == IR_MAX_RANK)
      return fail(p, "rank too large");
    skip_ws(p);
    if (isdigit((unsigned char)*p->s)) {
      sh->d[sh->rank] = strtoll(p->s, (char **)&p->s, 10);
    } else {
      sh->d[sh->rank] = DIM_UNKNOWN;
      if (!eat(p, '?'))
        sh->sym[sh->rank] = name(p);
    }
    sh->rank++;
  } while (eat(p, ','));
  return expect(p, ']');
}

static Tensor *data(P *p, DType dt, const Shape *sh) {
  Tensor *t = ir_tensor_new(p->g, dt, sh, p->d);
  if (!t)
    return NULL;
  if (eat(p, '<')) {
    while (*p->s && *p->s != '>' && *p->s != '\n')
      p->s++;
    return expect(p, '>') ? t : NULL;
  }
  if (!expect(p, '['))
    return NULL;
  for (int64_t i = 0; i < t->numel; i++) {
    double v;
    bool f;
    const char *at = p->s;
    if ((i && !expect(p, ',')) || !number(p, &v, &f))
      return NULL;
    if (dtype_is_float(dt))
      tensor_set_f64(t, i, v);
    else if (!f) /* read again as an integer: through a double, 2^63 - 1 wrapped to -2^63 */
      tensor_set_i64(t, i, strtoll(at + (i ? strspn(at, " \t\n,") : strspn(at, " \t\n")), NULL, 10));
    else
      tensor_set_i64(t, i, (int64_t)v);
  }
  return expect(p, ']') ? t : NULL;
}

static Value *value_ref(P *p) {
  if (eat(p, '_'))
    return p->g->none;
  if (!expect(p, '%'))
    return NULL;
  const char *n = name(p);
  Value *v = n ? ir_value_find(p->g, n) : NULL;
  Value *outer = !v && n && p->g->parent ? ir_value_find(p->g->parent, n) : NULL;
  if (outer)   /* a subgraph block reads a value of the enclosing graph */
    v = ir_capture_add(p->g, n, outer->dt, &outer->shape);
  if (!v && n)
    fail(p, "undefined value");
  return v;
}

static bool attr(P *p, Node *n) {
  const char *an = name(p);
  if (!an || !expect(p, '='))
    return false;
  skip_ws(p);
  if (*p->s == '"') {
    Attr *a = ir_attr_add(n, an, AT_STRING);
    a->u.s = name(p);
    a->slen = a->u.s ? strlen(a->u.s) : 0;
    return a->u.s != NULL;
  }
  bool ints = word(p, "ints");
  if (ints || word(p, "floats")) {
    if (!expect(p, '['))
      return false;
    double vals[256];
    int k = 0;
    bool f;
    if (!eat(p, ']')) {
      do {
        if (k == 256 || !number(p, &vals[k++], &f))
          return fail(p, "bad list");
      } while (eat(p, ','));
      if (!expect(p, ']'))
        return false;
    }
    Attr *a = ir_attr_add(n, an, ints ? AT_INTS : AT_FLOATS);
    a->n = k;
    if (ints) {
      a->u.is = arena_alloc(p->g->arena, (size_t)(k + 1) * sizeof(int64_t));
      for (int i = 0; i < k; i++)
        a->u.is[i] = (int64_t)vals[i];
    } else {
      a->u.fs = arena_alloc(p->g->arena, (size_t)(k + 1) * sizeof(float));
      for (int i = 0; i < k; i++)
        a->u.fs[i] = (float)vals[i];
    }
    return true;
  }
  if (word(p, "strings")) {
    if (!expect(p, '['))
      return false;
    const char *vals[256];
    int k = 0;
    if (!eat(p, ']')) {
      do {
        if (k == 256 || !(vals[k++] = name(p)))
          return fail(p, "bad list");
      } while (eat(p, ','));
      if (!expect(p, ']'))
        return false;
    }
    Attr *a = ir_attr_add(n, an, AT_STRINGS);
    a->n = k;
    a->u.ss = arena_dup(p->g->arena, vals, (size_t)(k + 1) * sizeof(char *));
    return true;
  }
  if (word(p, "graph")) {
    const char *gn = name(p);
    for (int i = 0; gn && i < p->n_subs; i++)
      if (strcmp(p->subs[i]->name, gn) == 0) {
        ir_attr_add(n, an, AT_GRAPH)->u.g = p->subs[i];
        return true;
      }
    return fail(p, "no subgraph block of that name");
  }
  if (word(p, "tensor")) {
    DType dt;
    Shape sh;
    if (!type(p, &dt, &sh) || !expect(p, '='))
      return false;
    Tensor *t = data(p, dt, &sh);
    if (!t)
      return false;
    ir_attr_add(n, an, AT_TENSOR)->u.t = t;
    return true;
  }
  double v;
  bool f;
  if (!number(p, &v, &f))
    return false;
  if (f)
    ir_attr_add(n, an, AT_FLOAT)->u.f = (float)v;
  else
    ir_attr_set_int(n, an, (int64_t)v);
  return true;
}

typedef struct OutDecl {
  const char *name;   /* NULL for "_" */
  DType dt;
  Shape sh;
} OutDecl;

static bool node_line(P *p) {
  OutDecl outs[16];
  int n_out = 0;
  do {
    if (n_out == 16)
      return fail(p, "too many outputs");
    OutDecl *o = &outs[n_out++];
    o->name = NULL;
    o->dt = DT_UNDEF;
    o->sh = shape_unknown();
    if (eat(p, '_'))
      continue;
    if (!expect(p, '%') || !(o->name = name(p)))
      return false;
    if (eat(p, ':') && !type(p, &o->dt, &o->sh))
      return false;
  } while (eat(p, ','));
  if (!expect(p, '='))
    return false;
  const char *op = name(p), *domain = "";
  if (!op)
    return false;
  if (eat(p, ':')) {
    domain = op;
    if (!(op = name(p)))
      return false;
  }
  Value *ins[64];
  int n_in = 0;
  Node tmp;  /* attributes are parsed onto a scratch node, then moved */
  memset(&tmp, 0, sizeof tmp);
  tmp.g = p->g;
  if (eat(p, '{')) {
    do {
      if (!attr(p, &tmp))
        return false;
    } while (eat(p, ','));
    if (!expect(p, '}'))
      return false;
  }
  if (!expect(p, '('))
    return false;
  if (!eat(p, ')')) {
    do {
      if (n_in == 64 || !(ins[n_in++] = value_ref(p)))
        return fail(p, "bad input list");
    } while (eat(p, ','));
    if (!expect(p, ')'))
      return false;
  }
  const char *nn = NULL;
  if (eat(p, '@') && !(nn = name(p)))
    return false;
  const char *out_names[16];
  for (int i = 0; i < n_out; i++) {
    out_names[i] = outs[i].name;
    if (outs[i].name && ir_value_find(p->g, outs[i].name))
      return fail(p, "value defined twice");
  }
  OpKind kind = ir_op_lookup_in(domain, op);
  Node *n = ir_node_insert_named(p->g, NULL, kind, op, nn, n_in, ins, n_out, out_names);
  n->domain = domain;
  n->attrs = tmp.attrs;
  n->n_attrs = tmp.n_attrs;
  for (int i = 0; i < n_out; i++) {
    if (!outs[i].name) {
      ir_node_drop_output(n, i);
      continue;
    }
    n->out[i]->dt = outs[i].dt;
    n->out[i]->shape = outs[i].sh;
  }
  return true;
}

static bool line(P *p) {
  skip_ws(p);
  if (*p->s == '\n' || *p->s == '#' || *p->s == 0)
    return true;
  if (word(p, "graph")) {
    const char *gn = name(p);
    if (!gn)
      return false;
    p->g->name = gn;
    if (word(p, "opset")) {
      double v;
      bool f;
      if (!number(p, &v, &f))
        return false;
      p->g->opset = (int64_t)v;
    }
    return true;
  }
  bool is_input = word(p, "input");
  if (is_input || word(p, "const")) {
    DType dt;
    Shape sh;
    if (!expect(p, '%'))
      return false;
    const char *vn = name(p);
    if (!vn || !expect(p, ':') || !type(p, &dt, &sh))
      return false;
    if (ir_value_find(p->g, vn))
      return fail(p, "value defined twice");
    if (is_input) {
      ir_input_add(p->g, vn, dt, &sh);
      return true;
    }
    if (!expect(p, '='))
      return false;
    Tensor *t = data(p, dt, &sh);
    return t && ir_const_new(p->g, vn, t);
  }
  if (word(p, "subgraph")) {   /* subgraph NAME, its lines, then end */
    const char *gn = name(p);
    if (!gn || p->g != p->top || p->n_subs == 64)
      return fail(p, "bad subgraph block");
    p->g = p->subs[p->n_subs++] = ir_subgraph_new(p->top, gn);
    p->g->opset = p->top->opset;
    return true;
  }
  if (word(p, "end")) {
    if (p->g == p->top)
      return fail(p, "'end' outside a subgraph block");
    p->g = p->top;
    return true;
  }
  if (word(p, "output")) {
    Value *v = value_ref(p);
    if (!v || v->kind == VK_NONE)
      return fail(p, "bad output");
    ir_output_add(p->g, v);
    return true;
  }
  return node_line(p);
}

Graph *ir_parse(const char *text, const char *file, Diag *d) {
  P p = {text, 1, ir_graph_new(file), d, false, NULL, {NULL}, 0};
  p.top = p.g;
  while (*p.s) {
    if (!line(&p))
      break;
    skip_ws(&p);
    if (*p.s == '#')
      while (*p.s && *p.s != '\n')
        p.s++;
    if (*p.s && *p.s != '\n') {
      fail(&p, "unexpected text at end of line");
      break;
    }
    if (*p.s == '\n') {
      p.s++;
      p.line++;
    }
  }
  if (!p.failed && p.g != p.top)
    fail(&p, "subgraph block without 'end'");
  p.g = p.top;
  if (p.failed) {
    ir_graph_free(p.g);
    return NULL;
  }
  return p.g;
}
