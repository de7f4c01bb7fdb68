/* graph_view.c - onnxc graph: what the picture shows, and the DOT form.
 *
 * One box per IR node after the passes (a kernel, or a view that needs no
 * code), titled with its op and the ONNX nodes it computes (the fusion
 * report's record, fusion_onnx_nodes); one box per graph input and output.
 * Edges carry the values between them, labelled with dtype and shape, and
 * their storage (the memory report's placement, memory_place) goes into
 * tooltips. Weights are not drawn: a box counts its constant inputs.
 * graph_run compiles like onnxc does and writes the file through a
 * temporary name, so a failed run leaves nothing behind.
 */
#include "graph.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GV_LINE_CHARS 44   /* a box's text wraps here */
#define GV_CHAR_W 6.6      /* pixels per character at the box font size */

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
  Buf b;
  buf_init(&b);
  va_list ap;
  va_start(ap, f);
  buf_vprintf(&b, f, ap);
  va_end(ap);
  if (!b.s)
    buf_puts(&b, "");
  return b.s;
}

static char *type_text(const Value *v) {
  char sb[512];
  return fmt("%s%s", dtype_name(v->dt), shape_str(&v->shape, sb, sizeof sb));
}

char *graph_value_text(const GraphView *v, const Value *val) {
  char sb[512];
  MemPlace p = memory_place(v->g, v->plan, v->tensor_index, val);
  const char *root = p.root != val->id ? v->g->values[p.root]->name : NULL;
  Buf b;
  buf_init(&b);
  buf_printf(&b, "%s: %s%s", val->name, dtype_name(val->dt), shape_str(&val->shape, sb, sizeof sb));
  switch (p.where) {
  case MEM_ARENA:
    buf_printf(&b, " (arena @%lld, buffer of %lld B, steps %d..%d", (long long)p.offset, (long long)p.size,
               p.first, p.last);
    break;
  case MEM_INPUT: buf_puts(&b, " (graph input: the caller's buffer"); break;
  case MEM_OUTPUT: buf_puts(&b, " (graph output: the caller's buffer"); break;
  case MEM_WEIGHT: buf_puts(&b, " (weight"); break;
  case MEM_NONE: buf_puts(&b, " (no storage"); break;
  }
  if (root)
    buf_printf(&b, "; stored in %s", root);
  buf_putc(&b, ')');
  return b.s;
}

/* ---- boxes ---------------------------------------------------------------- */

typedef struct Collect {
  Buf names;               /* "OpType name\n" each */
  Buf types;               /* "Div, Erf, Add" */
  int n;
} Collect;

static void collect(void *ctx, const char *onnx_node) {
  Collect *c = ctx;
  buf_printf(&c->names, "%s\n", onnx_node);
  size_t type_len = strcspn(onnx_node, " ");
  if (c->n++)
    buf_puts(&c->types, ", ");
  buf_write(&c->types, onnx_node, type_len);
}

static void add_line(GvBox *b, char *s) {
  if (b->n_lines < (int)(sizeof b->lines / sizeof b->lines[0]))
    b->lines[b->n_lines++] = s;
  else
    free(s);
}

/* Wraps text at ", " into lines of GV_LINE_CHARS; the last line says how
 * much is left out when there is no room. */
static void add_wrapped(GvBox *b, const char *text, int max_lines) {
  const char *s = text;
  for (int k = 0; *s && k < max_lines; k++) {
    size_t n = strlen(s);
    if (n <= GV_LINE_CHARS || k == max_lines - 1) {
      if (n > GV_LINE_CHARS) {
        int rest = 1;
        for (const char *t = s + GV_LINE_CHARS - 6; *t; t++)
          rest += t[0] == ',' && t[1] == ' ';
        add_line(b, fmt("%.*s... (+%d)", GV_LINE_CHARS - 8, s, rest));
      } else {
        add_line(b, fmt("%s", s));
      }
      return;
    }
    size_t cut = GV_LINE_CHARS;
    while (cut > 8 && !(s[cut - 1] == ' ' && s[cut - 2] == ','))
      cut--;
    if (cut <= 8)
      cut = GV_LINE_CHARS;
    add_line(b, fmt("%.*s", (int)cut, s));
    s += cut;
  }
}

static char *trimmed(const char *s) {
  size_t n = strlen(s);
  return n <= GV_LINE_CHARS ? fmt("%s", s) : fmt("...%s", s + n - (GV_LINE_CHARS - 3));
}

static void node_box(GvBox *b, const Node *n) {
  Collect c = {{0}, {0}, 0};
  buf_init(&c.names);
  buf_init(&c.types);
  fusion_onnx_nodes(n, collect, &c);
  b->n_onnx = c.n;
  b->onnx = c.names.s ? c.names.s : fmt("%s", "");
  if (c.names.len && b->onnx[c.names.len - 1] == '\n')
    b->onnx[c.names.len - 1] = 0; /* one name a line, no empty last one */
  bool same = c.n == 1 && strncmp(c.types.s, n->op_type, strlen(n->op_type)) == 0 &&
              c.types.s[strlen(n->op_type)] == 0;
  if (c.n == 0 || same)
    b->title = fmt("%s%s", b->kind == GV_VIEW ? "view: " : "", n->op_type);
  else
    b->title = fmt("%s%s: %s", b->kind == GV_VIEW ? "view: " : "", n->op_type, c.types.s);
  buf_free(&c.types);
  add_wrapped(b, b->title, 3);
  add_line(b, trimmed(n->name));
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i]->kind == VK_CONST) {
      b->n_weights++;
      b->weight_bytes += fusion_value_bytes(n->in[i]);
    }
  if (b->n_weights)
    add_line(b, fmt("+%d weight%s, %lld B", b->n_weights, b->n_weights == 1 ? "" : "s",
                    (long long)b->weight_bytes));
}

static void value_box(GvBox *b, const Value *v) {
  b->title = fmt("%s %s", b->kind == GV_INPUT ? "input" : "output", v->name);
  b->onnx = fmt("%s", "");
  add_line(b, trimmed(b->title));
  add_line(b, type_text(v));
}

static int add_box(GraphView *v, GvKind kind, const Node *n, const Value *val, int step) {
  GvBox *b = &v->boxes[v->n_boxes];
  memset(b, 0, sizeof *b);
  b->kind = kind;
  b->node = n;
  b->value = val;
  b->step = step;
  if (n)
    node_box(b, n);
  else
    value_box(b, val);
  size_t longest = 0;
  for (int i = 0; i < b->n_lines; i++)
    if (strlen(b->lines[i]) > longest)
      longest = strlen(b->lines[i]);
  double w = (double)longest * GV_CHAR_W + 16;
  graph_layout_node(&v->layout, w < 90 ? 90 : w, 10 + 15.0 * b->n_lines);
  return v->n_boxes++;
}

static void add_edge(GraphView *v, int from, int to, const Value *val, int *cap) {
  if (from < 0)
    return;
  if (v->n_edges == *cap) {
    *cap = *cap ? 2 * *cap : 64;
    v->edges = realloc(v->edges, (size_t)*cap * sizeof *v->edges);
    IR_ASSERT(v->edges);
  }
  GvEdge *e = &v->edges[v->n_edges++];
  e->from = from;
  e->to = to;
  e->value = val;
  e->label = type_text(val);
  e->place = graph_value_text(v, val);
  graph_layout_edge(&v->layout, from, to);
}

void graph_view_build(GraphView *v, const Graph *g, const Plan *plan) {
  memset(v, 0, sizeof *v);
  v->g = g;
  v->plan = plan;
  v->tensor_index = memory_tensor_index(g, plan);
  graph_layout_init(&v->layout);
  v->boxes = calloc((size_t)g->n_inputs + (size_t)g->n_nodes + (size_t)g->n_outputs + 1, sizeof *v->boxes);
  int *box_of_node = malloc(((size_t)g->n_node_ids + 1) * sizeof(int));
  int *box_of_input = malloc(((size_t)g->n_values + 1) * sizeof(int));
  IR_ASSERT(v->boxes && box_of_node && box_of_input);
  for (int i = 0; i < g->n_values; i++)
    box_of_input[i] = -1;
  for (int i = 0; i < g->n_inputs; i++)
    box_of_input[g->inputs[i]->id] = add_box(v, GV_INPUT, NULL, g->inputs[i], -1);
  int step = 0;
  for (const Node *n = g->first; n; n = n->next, step++)
    box_of_node[n->id] = add_box(v, fusion_is_view(plan, n) ? GV_VIEW : GV_KERNEL, n, NULL, step);
  int cap = 0;
  for (const Node *n = g->first; n; n = n->next)
    for (int i = 0; i < n->n_in; i++) {
      const Value *in = n->in[i];
      bool again = false; /* Mul(x, x): one edge */
      for (int j = 0; j < i; j++)
        again |= n->in[j] == in;
      if (again)
        continue;
      if (in->kind == VK_NODE && in->producer)
        add_edge(v, box_of_node[in->producer->id], box_of_node[n->id], in, &cap);
      else if (in->kind == VK_INPUT)
        add_edge(v, box_of_input[in->id], box_of_node[n->id], in, &cap);
    }
  for (int i = 0; i < g->n_outputs; i++) {
    const Value *out = g->outputs[i];
    int box = add_box(v, GV_OUTPUT, NULL, out, -1);
    if (out->kind == VK_NODE && out->producer)
      add_edge(v, box_of_node[out->producer->id], box, out, &cap);
    else if (out->kind == VK_INPUT)
      add_edge(v, box_of_input[out->id], box, out, &cap);
  }
  free(box_of_node);
  free(box_of_input);
  graph_layout_run(&v->layout);
}

void graph_view_free(GraphView *v) {
  for (int i = 0; i < v->n_boxes; i++) {
    free(v->boxes[i].title);
    free(v->boxes[i].onnx);
    for (int k = 0; k < v->boxes[i].n_lines; k++)
      free(v->boxes[i].lines[k]);
  }
  for (int i = 0; i < v->n_edges; i++) {
    free(v->edges[i].label);
    free(v->edges[i].place);
  }
  free(v->boxes);
  free(v->edges);
  free(v->tensor_index);
  graph_layout_free(&v->layout);
}

/* ---- DOT: clusters are kernels that compute more than one ONNX node -------- */

static void dot_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if (*s == '\n')
      fputs("\\n", f);
    else if ((unsigned char)*s >= 0x20)
      fputc(*s, f);
  }
  fputc('"', f);
}

static bool is_cluster(const GvBox *b) { return b->kind == GV_KERNEL && b->n_onnx > 1; }

/* The DOT node an edge leaves from (last) or enters (first). */
static void dot_end(FILE *f, const GraphView *v, int box, bool last) {
  const GvBox *b = &v->boxes[box];
  if (is_cluster(b))
    fprintf(f, "b%d_%d", box, last ? b->n_onnx - 1 : 0);
  else
    fprintf(f, "b%d", box);
}

static void dot_box(FILE *f, const GraphView *v, int i) {
  const GvBox *b = &v->boxes[i];
  const char *fill = b->kind == GV_INPUT ? "#d8f0d8" : b->kind == GV_OUTPUT ? "#f6dcc8"
                     : b->kind == GV_VIEW ? "#f2f2f2" : "#e4ecf8";
  if (!is_cluster(b)) {
    Buf label;
    buf_init(&label);
    for (int k = 0; k < b->n_lines; k++)
      buf_printf(&label, "%s%s", k ? "\n" : "", b->lines[k]);
    fprintf(f, "  b%d [label=", i);
    dot_str(f, label.s);
    const char *shape = b->kind == GV_INPUT || b->kind == GV_OUTPUT ? ", shape=ellipse"
                        : b->kind == GV_VIEW                       ? ", style=\"dashed,filled\""
                                                                   : "";
    fprintf(f, ", fillcolor=\"%s\"%s, tooltip=", fill, shape);
    dot_str(f, b->onnx[0] ? b->onnx : b->title);
    fputs("];\n", f);
    buf_free(&label);
    return;
  }
  fprintf(f, "  subgraph cluster_b%d {\n    label=", i);
  char *label = fmt("%s (step %d)", b->title, b->step);
  dot_str(f, label);
  free(label);
  fprintf(f, "; style=\"rounded,filled\"; fillcolor=\"%s\"; tooltip=", fill);
  dot_str(f, b->node->name);
  fputs(";\n", f);
  const char *s = b->onnx;
  for (int k = 0; k < b->n_onnx && *s; k++) {
    size_t n = strcspn(s, "\n");
    char *one = fmt("%.*s", (int)n, s);
    fprintf(f, "    b%d_%d [label=", i, k);
    dot_str(f, one);
    fputs(", fillcolor=\"#ffffff\"];\n", f);
    if (k)
      fprintf(f, "    b%d_%d -> b%d_%d [style=dotted, arrowhead=none];\n", i, k - 1, i, k);
    free(one);
    s += n + (s[n] == '\n');
  }
  fputs("  }\n", f);
}

bool graph_write_dot(const GraphView *v, FILE *f) {
  fputs("digraph onnxc {\n  graph [rankdir=TB, compound=true, fontname=\"sans-serif\", label=", f);
  char *title = fmt("%s: %d boxes, %d edges, arena %lld B", v->g->name && *v->g->name ? v->g->name : "model",
                    v->n_boxes, v->n_edges, (long long)v->plan->arena_bytes);
  dot_str(f, title);
  free(title);
  fputs("];\n  node [shape=box, style=\"rounded,filled\", fontname=\"sans-serif\", fontsize=10];\n"
        "  edge [fontname=\"sans-serif\", fontsize=9];\n", f);
  for (int i = 0; i < v->n_boxes; i++)
    dot_box(f, v, i);
  for (int i = 0; i < v->n_edges; i++) {
    const GvEdge *e = &v->edges[i];
    fputs("  ", f);
    dot_end(f, v, e->from, true);
    fputs(" -> ", f);
    dot_end(f, v, e->to, false);
    fputs(" [label=", f);
    dot_str(f, e->label);
    fputs(", tooltip=", f);
    dot_str(f, e->place);
    if (is_cluster(&v->boxes[e->from]))
      fprintf(f, ", ltail=cluster_b%d", e->from);
    if (is_cluster(&v->boxes[e->to]))
      fprintf(f, ", lhead=cluster_b%d", e->to);
    fputs("];\n", f);
  }
  fputs("}\n", f);
  return !ferror(f);
}

/* ---- onnxc graph ------------------------------------------------------------ */

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool write_graph(const GraphView *v, const char *path, Diag *d) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f)
    return diag_error(d, NULL, "cannot write %s: %s", path, strerror(errno));
  bool ok = ends_with(path, ".dot") ? graph_write_dot(v, f)
            : ends_with(path, ".svg") ? graph_write_svg(v, f) : graph_write_html(v, f);
  ok = fclose(f) == 0 && ok;
  if (ok && rename(tmp, path) != 0)
    ok = false;
  if (!ok) {
    int err = errno;
    unlink(tmp);
    return diag_error(d, NULL, "cannot write %s: %s", path, strerror(err));
  }
  return true;
}

int graph_run(const Options *o) {
  Diag d;
  diag_init(&d, o->model, stderr);
  Plan plan;
  Graph *g = driver_compile(o, &plan, &d);
  bool ok = g != NULL;
  ok = ok && (!o->memory_report || driver_memory_report(g, &plan, o->memory_report, &d));
  ok = ok && (!o->memory_svg || driver_memory_svg(g, &plan, o->memory_svg, &d));
  ok = ok && (!o->fusion_report || driver_fusion_report(g, &plan, o->fusion_report, &d));
  if (ok) {
    GraphView v;
    graph_view_build(&v, g, &plan);
    ok = write_graph(&v, o->out, &d);
    graph_view_free(&v);
  }
  if (!ok) {
    const char *reports[] = {o->memory_report, o->memory_svg, o->fusion_report};
    for (int i = 0; i < 3; i++)
      if (reports[i] && g)
        unlink(reports[i]);
  }
  if (g)
    ir_graph_free(g);
  diag_free(&d);
  return ok ? 0 : 1;
}
