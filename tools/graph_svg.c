/* graph_svg.c - onnxc graph as SVG (standalone, no external resources) and
 * as HTML: the same SVG inline, a side panel that shows what a clicked box
 * computes (its ONNX nodes, op, inputs and outputs with shapes and arena
 * placement) and a search box over ONNX node names; a few lines of script,
 * the data as JSON in the page.
 */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

#define SVG_TOP 34.0       /* header line above the layout */

/* Escaped text that keeps its line breaks (tooltips show them). */
static void xml_lines(FILE *f, const char *s) {
  for (;;) {
    size_t n = strcspn(s, "\n");
    char *line = strndup(s, n);
    IR_ASSERT(line);
    xml_str(f, line);
    free(line);
    if (!s[n])
      return;
    fputc('\n', f);
    s += n + 1;
  }
}

static const char *kind_name(GvKind k) {
  static const char *const names[] = {"input", "kernel", "view", "output"};
  return names[k];
}

/* x where in-edge `e` enters its target: the in-edges of a box spread over
 * its top edge, ordered by where they come from. */
static double *in_ports(const GraphView *v) {
  const GraphLayout *l = &v->layout;
  double *port = malloc(((size_t)v->n_edges + 1) * sizeof *port);
  int *count = calloc((size_t)v->n_boxes + 1, sizeof(int));
  int *rank = calloc((size_t)v->n_edges + 1, sizeof(int));
  IR_ASSERT(port && count && rank);
  /* the x an edge arrives from: its last bend point, else its source */
  for (int i = 0; i < v->n_edges; i++) {
    const GlEdge *e = &l->edges[i];
    port[i] = l->nodes[e->n_dummies ? l->bends[e->bend0 + e->n_dummies - 1] : e->from].x;
    count[e->to]++;
  }
  /* rank among the target's in-edges: a box has few, so the pairwise count
   * costs the sum of squared in-degrees */
  int *start = calloc((size_t)v->n_boxes + 2, sizeof(int)), *list = malloc(((size_t)v->n_edges + 1) * sizeof(int));
  int *fill = calloc((size_t)v->n_boxes + 1, sizeof(int));
  IR_ASSERT(start && list && fill);
  for (int b = 0; b < v->n_boxes; b++)
    start[b + 1] = start[b] + count[b];
  for (int i = 0; i < v->n_edges; i++)
    list[start[l->edges[i].to] + fill[l->edges[i].to]++] = i;
  for (int b = 0; b < v->n_boxes; b++)
    for (int p = start[b]; p < start[b + 1]; p++)
      for (int q = start[b]; q < start[b + 1]; q++)
        rank[list[p]] += port[list[q]] < port[list[p]] || (port[list[q]] == port[list[p]] && q < p);
  for (int i = 0; i < v->n_edges; i++) {
    const GlNode *t = &l->nodes[l->edges[i].to];
    port[i] = t->x - t->w / 2 + t->w * (rank[i] + 1) / (count[l->edges[i].to] + 1);
  }
  free(count);
  free(rank);
  free(start);
  free(list);
  free(fill);
  return port;
}

static void svg_edge(FILE *f, const GraphView *v, int i, double port) {
  const GraphLayout *l = &v->layout;
  const GlEdge *e = &l->edges[i];
  const GlNode *s = &l->nodes[e->from], *t = &l->nodes[e->to];
  double px = s->x, py = s->y + s->h / 2 + SVG_TOP;
  int k0 = 0;
  if (e->shared) { /* a branch off the trunk that a longer edge draws */
    k0 = e->n_dummies;
    px = l->nodes[l->bends[e->bend0 + k0 - 1]].x;
    py = l->nodes[l->bends[e->bend0 + k0 - 1]].y + SVG_TOP;
  }
  fprintf(f, "<g class=\"edge\" data-from=\"b%d\" data-to=\"b%d\"><title>", e->from, e->to);
  xml_str(f, v->edges[i].place);
  fprintf(f, "</title><path d=\"M%.1f,%.1f", px, py);
  for (int k = k0; k <= e->n_dummies; k++) {
    const GlNode *bend = k < e->n_dummies ? &l->nodes[l->bends[e->bend0 + k]] : NULL;
    double x = bend ? bend->x : port;
    double y = bend ? bend->y + SVG_TOP : t->y - t->h / 2 + SVG_TOP;
    double my = (py + y) / 2;
    if (k == e->n_dummies) {
      fprintf(f, " C%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>", px, my, x, my, x, y);
      fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", (px + x) / 2 + 4, my + 3);
      xml_str(f, v->edges[i].label);
      fputs("</text></g>\n", f);
      return;
    }
    fprintf(f, " C%.1f,%.1f %.1f,%.1f %.1f,%.1f", px, my, x, my, x, y);
    px = x;
    py = y;
  }
}

/* A box's tooltip: what it computes and the values it reads and writes. */
static void svg_box_title(FILE *f, const GraphView *v, const GvBox *b) {
  xml_str(f, b->title);
  if (b->node) {
    fprintf(f, "\n%s '", kind_name(b->kind));
    xml_str(f, b->node->name);
    fprintf(f, "', step %d", b->step);
    if (b->n_onnx) {
      fputs("\nONNX nodes:\n", f);
      xml_lines(f, b->onnx);
    }
    for (int i = 0; i < b->node->n_out; i++) {
      if (b->node->out[i]->kind == VK_NONE)
        continue;
      char *t = graph_value_text(v, b->node->out[i]);
      fputs("\nout ", f);
      xml_str(f, t);
      free(t);
    }
  } else {
    char *t = graph_value_text(v, b->value);
    fputc('\n', f);
    xml_str(f, t);
    free(t);
  }
}

static void svg_box(FILE *f, const GraphView *v, int i) {
  const GvBox *b = &v->boxes[i];
  const GlNode *n = &v->layout.nodes[i];
  double x = n->x - n->w / 2, y = n->y - n->h / 2 + SVG_TOP;
  fprintf(f, "<g class=\"box %s\" id=\"b%d\"><title>", kind_name(b->kind), i);
  svg_box_title(f, v, b);
  fprintf(f, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"%d\"/>", x, y, n->w,
          n->h, b->kind == GV_INPUT || b->kind == GV_OUTPUT ? 14 : 4);
  for (int k = 0; k < b->n_lines; k++) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\"%s>", n->x, y + 17 + 15.0 * k, k == 0 ? " class=\"t\"" : "");
    xml_str(f, b->lines[k]);
    fputs("</text>", f);
  }
  fputs("</g>\n", f);
}

static void svg_body(const GraphView *v, FILE *f) {
  const GraphLayout *l = &v->layout;
  double w = l->width < 480 ? 480 : l->width, h = l->height + SVG_TOP;
  int kernels = 0, views = 0;
  for (int i = 0; i < v->n_boxes; i++) {
    kernels += v->boxes[i].kind == GV_KERNEL;
    views += v->boxes[i].kind == GV_VIEW;
  }
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
             "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
          w, h, w, h);
  fputs("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
        "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#667\"/></marker>\n"
        "<style>"
        ".edge path{fill:none;stroke:#889;stroke-width:1.2;marker-end:url(#arrow)}"
        ".edge text{font-size:9px;fill:#445;paint-order:stroke;stroke:#fff;stroke-width:3px}"
        ".box rect{fill:#e4ecf8;stroke:#4a6fa5}.box text{text-anchor:middle}.box .t{font-weight:bold}"
        ".view rect{fill:#f2f2f2;stroke:#999;stroke-dasharray:4 3}"
        ".input rect{fill:#d8f0d8;stroke:#4a8a4a}.output rect{fill:#f6dcc8;stroke:#b0703a}"
        ".box.sel rect{stroke:#d33;stroke-width:3}.box.hit rect{fill:#fff3a0}"
        "</style></defs>\n", f);
  fputs("<text x=\"20\" y=\"22\" font-size=\"14\">", f);
  xml_str(f, v->g->name && *v->g->name ? v->g->name : "model");
  fprintf(f, ": %d kernels, %d views, %d edges, arena %lld B (%s)</text>\n", kernels, views, v->n_edges,
          (long long)v->plan->arena_bytes, v->plan->strategy ? v->plan->strategy : "none");
  double *port = in_ports(v);
  fputs("<g class=\"edges\">\n", f);
  for (int i = 0; i < v->n_edges; i++)
    svg_edge(f, v, i, port[i]);
  fputs("</g>\n<g class=\"boxes\">\n", f);
  for (int i = 0; i < v->n_boxes; i++)
    svg_box(f, v, i);
  fputs("</g>\n</svg>\n", f);
  free(port);
}

bool graph_write_svg(const GraphView *v, FILE *f) {
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
  svg_body(v, f);
  return !ferror(f);
}

/* ---- HTML ------------------------------------------------------------------- */

/* A JSON string that is also safe inside <script>: no '<', '>' or '&'. */
static void js_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20 || c == '<' || c == '>' || c == '&')
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void js_values(FILE *f, const GraphView *v, Value *const *vals, int n, bool skip_const) {
  fputc('[', f);
  bool first = true;
  for (int i = 0; i < n; i++) {
    if (vals[i]->kind == VK_NONE || (skip_const && vals[i]->kind == VK_CONST))
      continue;
    char *t = graph_value_text(v, vals[i]);
    fputs(first ? "" : ",", f);
    js_str(f, t);
    free(t);
    first = false;
  }
  fputc(']', f);
}

static void js_box(FILE *f, const GraphView *v, int i) {
  const GvBox *b = &v->boxes[i];
  fprintf(f, "%s\n{\"id\":\"b%d\",\"kind\":\"%s\",\"step\":%d,\"title\":", i ? "," : "", i, kind_name(b->kind),
          b->step);
  js_str(f, b->title);
  fputs(",\"onnx\":[", f);
  const char *s = b->onnx;
  for (int k = 0; *s; k++) {
    size_t n = strcspn(s, "\n");
    char *one = strndup(s, n);
    IR_ASSERT(one);
    fputs(k ? "," : "", f);
    js_str(f, one);
    free(one);
    s += n + (s[n] == '\n');
  }
  fputc(']', f);
  if (b->node) {
    const Node *n = b->node;
    fputs(",\"name\":", f);
    js_str(f, n->name);
    fputs(",\"op\":", f);
    js_str(f, n->op_type);
    fputs(",\"inputs\":", f);
    js_values(f, v, n->in, n->n_in, true);
    fputs(",\"outputs\":", f);
    js_values(f, v, n->out, n->n_out, false);
    fprintf(f, ",\"weights\":%d,\"weight_bytes\":%lld,\"flops\":%lld", b->n_weights,
            (long long)b->weight_bytes, (long long)fusion_flops(n));
    const Plan *p = v->plan;
    if (p->scratch_size && p->scratch_offset && p->scratch_size[n->id] > 0)
      fprintf(f, ",\"scratch\":\"arena @%lld, %lld B\"", (long long)p->scratch_offset[n->id],
              (long long)p->scratch_size[n->id]);
  } else {
    Value *const one[1] = {(Value *)b->value};
    fputs(b->kind == GV_INPUT ? ",\"outputs\":" : ",\"inputs\":", f);
    js_values(f, v, one, 1, false);
  }
  fputc('}', f);
}

static const char *const html_head =
  "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>onnxc graph</title>\n<style>\n"
  "body{margin:0;font-family:sans-serif;font-size:13px;display:flex;flex-direction:column;height:100vh}\n"
  "#bar{padding:6px 10px;border-bottom:1px solid #ccc;background:#f7f7f7}\n"
  "#bar input{width:320px}\n#main{flex:1;display:flex;min-height:0}\n"
  "#view{flex:1;overflow:auto}\n#panel{width:380px;overflow:auto;border-left:1px solid #ccc;padding:8px 12px}\n"
  "#panel h2{font-size:15px;word-break:break-word}#panel li{word-break:break-all;margin-bottom:3px}\n"
  ".box{cursor:pointer}\n</style></head><body>\n"
  "<div id=\"bar\"><input id=\"q\" type=\"search\" placeholder=\"find an ONNX node (name or op); Enter: next\">\n"
  " <span id=\"hits\"></span> <button id=\"zin\">+</button> <button id=\"zout\">&#8722;</button></div>\n"
  "<div id=\"main\"><div id=\"view\">\n";

static const char *const html_script =
  "<script>\n(function () {\n"
  "var data = JSON.parse(document.getElementById('gdata').textContent), by = {}, sel = null;\n"
  "data.boxes.forEach(function (b) { by[b.id] = b; });\n"
  "var panel = document.getElementById('panel'), q = document.getElementById('q');\n"
  "var hits = document.getElementById('hits'), svg = document.querySelector('#view svg');\n"
  "function esc(s) { return String(s).replace(/[&<>\"]/g, function (c) {\n"
  "  return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '\"': '&quot;'}[c]; }); }\n"
  "function list(t, a) { return a && a.length ? '<h3>' + t + '</h3><ul>' +\n"
  "  a.map(function (x) { return '<li>' + esc(x) + '</li>'; }).join('') + '</ul>' : ''; }\n"
  "function show(id) {\n"
  "  var b = by[id]; if (!b) return;\n"
  "  if (sel) sel.classList.remove('sel');\n"
  "  sel = document.getElementById(id); sel.classList.add('sel');\n"
  "  panel.innerHTML = '<h2>' + esc(b.title) + '</h2><p>' + b.kind + (b.step >= 0 ? ', step ' + b.step : '') +\n"
  "    (b.name ? ', IR node <code>' + esc(b.name) + '</code>' : '') + '</p>' +\n"
  "    list('ONNX nodes', b.onnx) + list('inputs', b.inputs) + list('outputs', b.outputs) +\n"
  "    (b.weights ? '<p>' + b.weights + ' weight input(s), ' + b.weight_bytes + ' B</p>' : '') +\n"
  "    (b.flops ? '<p>about ' + b.flops + ' floating-point operations</p>' : '') +\n"
  "    (b.scratch ? '<p>scratch: ' + esc(b.scratch) + '</p>' : '');\n"
  "}\n"
  "document.querySelectorAll('g.box').forEach(function (g) {\n"
  "  g.addEventListener('click', function () { show(g.id); }); });\n"
  "var found = [], at = 0;\n"
  "function go() { if (!found.length) return; var id = found[at % found.length]; show(id);\n"
  "  document.getElementById(id).scrollIntoView({block: 'center', inline: 'center'}); }\n"
  "q.addEventListener('input', function () {\n"
  "  var s = q.value.toLowerCase(); found = []; at = 0;\n"
  "  data.boxes.forEach(function (b) {\n"
  "    var text = (b.title + '\\n' + (b.name || '') + '\\n' + b.onnx.join('\\n')).toLowerCase();\n"
  "    var m = s.length > 0 && text.indexOf(s) >= 0;\n"
  "    document.getElementById(b.id).classList.toggle('hit', m); if (m) found.push(b.id); });\n"
  "  hits.textContent = s ? found.length + ' found' : ''; go(); });\n"
  "q.addEventListener('keydown', function (e) { if (e.key === 'Enter') { at++; go(); } });\n"
  "var w = svg.width.baseVal.value, h = svg.height.baseVal.value, z = 1;\n"
  "function zoom(k) { z *= k; svg.setAttribute('width', w * z); svg.setAttribute('height', h * z); }\n"
  "document.getElementById('zin').onclick = function () { zoom(1.25); };\n"
  "document.getElementById('zout').onclick = function () { zoom(0.8); };\n"
  "})();\n</script>\n";

bool graph_write_html(const GraphView *v, FILE *f) {
  fputs(html_head, f);
  svg_body(v, f);
  fputs("</div><div id=\"panel\"><p>Click a box to see the ONNX nodes it computes, its inputs and "
        "outputs with their shapes and arena placement.</p></div></div>\n"
        "<script type=\"application/json\" id=\"gdata\">{\"model\":", f);
  js_str(f, v->g->file ? v->g->file : "");
  fputs(",\"boxes\":[", f);
  for (int i = 0; i < v->n_boxes; i++)
    js_box(f, v, i);
  fputs("\n]}</script>\n", f);
  fputs(html_script, f);
  fputs("</body></html>\n", f);
  return !ferror(f);
}
