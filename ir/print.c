/* print.c - the textual IR (format documented in ir.h), used by
 * --dump-ir-after and by golden tests, and read back by parse.c. */
#include "ir.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#define PRINT_MAX_ELEMS 16

static bool plain_name(const char *s) {
  if (!*s)
    return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.')
      return false;
  return true;
}

static void put_quoted(Buf *b, const char *s) {
  buf_putc(b, '"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      buf_putc(b, '\\');
    buf_putc(b, *s);
  }
  buf_putc(b, '"');
}

static void put_name(Buf *b, const char *s) {
  if (plain_name(s))
    buf_puts(b, s);
  else
    put_quoted(b, s);
}

static void put_value(Buf *b, const Value *v) {
  if (v->kind == VK_NONE) {
    buf_putc(b, '_');
    return;
  }
  buf_putc(b, '%');
  put_name(b, v->name);
}

static void put_type(Buf *b, DType dt, const Shape *s) {
  char sb[512];
  buf_printf(b, "%s%s", dtype_name(dt), shape_str(s, sb, sizeof sb));
}

/* Floats print with enough digits to round-trip and always look like floats. */
static void put_float(Buf *b, double v) {
  if (isnan(v)) {
    buf_puts(b, "nan");
    return;
  }
  if (isinf(v)) {
    buf_puts(b, v < 0 ? "-inf" : "inf");
    return;
  }
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%.17g", v);
  buf_puts(b, tmp);
  if (!strpbrk(tmp, ".e"))
    buf_puts(b, ".0");
}

static void put_tensor_data(Buf *b, const Tensor *t) {
  if (t->numel > PRINT_MAX_ELEMS || t->dt == DT_STRING || !(dtype_is_float(t->dt) || dtype_is_int(t->dt) || t->dt == DT_BOOL)) {
    buf_printf(b, "<%lld elements>", (long long)t->numel);
    return;
  }
  buf_putc(b, '[');
  for (int64_t i = 0; i < t->numel; i++) {
    if (i)
      buf_puts(b, ", ");
    if (dtype_is_float(t->dt))
      put_float(b, tensor_get_f64(t, i));
    else
      buf_printf(b, "%lld", (long long)tensor_get_i64(t, i));
  }
  buf_putc(b, ']');
}

static void put_attr(Buf *b, const Attr *a, bool bodies) {
  put_name(b, a->name);
  buf_putc(b, '=');
  switch (a->kind) {
  case AT_INT: buf_printf(b, "%lld", (long long)a->u.i); break;
  case AT_FLOAT: put_float(b, a->u.f); break;
  case AT_STRING: put_quoted(b, a->u.s); break;
  case AT_INTS:
    buf_puts(b, "ints[");
    for (int i = 0; i < a->n; i++)
      buf_printf(b, "%s%lld", i ? "," : "", (long long)a->u.is[i]);
    buf_putc(b, ']');
    break;
  case AT_FLOATS:
    buf_puts(b, "floats[");
    for (int i = 0; i < a->n; i++) {
      if (i)
        buf_putc(b, ',');
      put_float(b, a->u.fs[i]);
    }
    buf_putc(b, ']');
    break;
  case AT_STRINGS:
    buf_puts(b, "strings[");
    for (int i = 0; i < a->n; i++) {
      if (i)
        buf_putc(b, ',');
      put_quoted(b, a->u.ss[i]);
    }
    buf_putc(b, ']');
    break;
  case AT_TENSOR:
    buf_puts(b, "tensor ");
    put_type(b, a->u.t->dt, &a->u.t->shape);
    buf_puts(b, " = ");
    put_tensor_data(b, a->u.t);
    break;
  case AT_GRAPH:
    if (bodies && a->u.g && a->u.g->name) { /* printed as a subgraph block before */
      buf_puts(b, "graph ");
      put_name(b, a->u.g->name);
    } else {
      buf_printf(b, "<graph %s>", a->u.g && a->u.g->name ? a->u.g->name : "");
    }
    break;
  default: buf_printf(b, "<attr kind %d>", (int)a->kind); break;
  }
}

static void print_node(Buf *b, const Node *n, bool bodies) {
  for (int i = 0; i < n->n_out; i++) {
    if (i)
      buf_puts(b, ", ");
    put_value(b, n->out[i]);
    if (n->out[i]->kind != VK_NONE) {
      buf_puts(b, " : ");
      put_type(b, n->out[i]->dt, &n->out[i]->shape);
      if (n->out[i]->blocked) /* stored channel-blocked (passes/layout.c) */
        buf_printf(b, " nchw%dc", n->out[i]->blocked);
    }
  }
  buf_puts(b, " = ");
  if (n->domain && *n->domain) {
    put_name(b, n->domain);
    buf_putc(b, ':');
  }
  put_name(b, n->op_type);
  if (n->n_attrs) {
    buf_putc(b, '{');
    for (int i = 0; i < n->n_attrs; i++) {
      if (i)
        buf_puts(b, ", ");
      put_attr(b, &n->attrs[i], bodies);
    }
    buf_putc(b, '}');
  }
  buf_putc(b, '(');
  for (int i = 0; i < n->n_in; i++) {
    if (i)
      buf_puts(b, ", ");
    put_value(b, n->in[i]);
  }
  buf_puts(b, ") @");
  put_name(b, n->name);
  buf_putc(b, '\n');
}

/* Inputs, used constants, nodes and outputs of g; with `blocks`, each graph
 * attribute's graph first as a `subgraph NAME ... end` block (one level:
 * what ir_parse reads) and the attribute as `graph NAME`. */
static void print_lines(const Graph *g, Buf *b, bool blocks) {
  for (int i = 0; i < g->n_inputs; i++) {
    buf_puts(b, "input ");
    put_value(b, g->inputs[i]);
    buf_puts(b, " : ");
    put_type(b, g->inputs[i]->dt, &g->inputs[i]->shape);
    buf_putc(b, '\n');
  }
  for (int i = 0; i < g->n_values; i++) {
    const Value *v = g->values[i];
    if (v->kind != VK_CONST || (v->n_uses == 0 && !v->is_output))
      continue;
    buf_puts(b, "const ");
    put_value(b, v);
    buf_puts(b, " : ");
    put_type(b, v->dt, &v->shape);
    buf_puts(b, " = ");
    put_tensor_data(b, v->konst);
    buf_putc(b, '\n');
  }
  for (const Node *n = g->first; n; n = n->next) {
    for (int i = 0; blocks && i < n->n_attrs; i++) {
      const Graph *s = n->attrs[i].kind == AT_GRAPH ? n->attrs[i].u.g : NULL;
      if (!s || !s->name)
        continue;
      buf_puts(b, "subgraph ");
      put_name(b, s->name);
      buf_putc(b, '\n');
      print_lines(s, b, false);
      buf_puts(b, "end\n");
    }
    print_node(b, n, blocks);
  }
  for (int i = 0; i < g->n_outputs; i++) {
    buf_puts(b, "output ");
    put_value(b, g->outputs[i]);
    buf_putc(b, '\n');
  }
}

static void print_graph(const Graph *g, Buf *b, bool blocks) {
  buf_puts(b, "graph ");
  put_name(b, g->name && *g->name ? g->name : "main");
  buf_printf(b, " opset %lld\n", (long long)g->opset);
  print_lines(g, b, blocks);
}

void ir_print(const Graph *g, Buf *b) { print_graph(g, b, false); }

void ir_print_blocks(const Graph *g, Buf *b) { print_graph(g, b, true); }

void ir_print_file(const Graph *g, FILE *f) {
  Buf b;
  buf_init(&b);
  ir_print(g, &b);
  if (b.s)
    fputs(b.s, f);
  buf_free(&b);
}
