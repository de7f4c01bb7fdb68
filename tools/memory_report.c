/* memory_report.c - the memory plan for people: --memory-report (JSON, the
 * contract in docs/cli.md) and --memory-svg (a picture of the arena over
 * time: x is the schedule step, y the arena offset, one rectangle per buffer
 * with its name, size and lifetime as a tooltip, and the live-bytes profile
 * whose peak is the lower bound). Both are written to a temporary name and
 * renamed, so a failed write leaves nothing behind.
 */
#include "tools.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Name of a buffer: its root value, or "scratch:NODE". */
static const char *buffer_name(const Graph *g, const PlanTensor *t, char *buf, size_t n) {
  if (t->value_id >= 0)
    return g->values[t->value_id]->name;
  snprintf(buf, n, "scratch:%s", g->nodes[t->node_id] ? g->nodes[t->node_id]->name : "?");
  return buf;
}

void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

void xml_str(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default:
      if ((unsigned char)*s >= 0x20)
        fputc(*s, f);
    }
  }
}

int *memory_tensor_index(const Graph *g, const Plan *plan) {
  int *of = malloc(((size_t)g->n_values + 1) * sizeof *of);
  IR_ASSERT(of);
  for (int i = 0; i < g->n_values; i++)
    of[i] = -1;
  for (int i = 0; i < plan->n_tensors; i++)
    if (plan->tensors[i].value_id >= 0)
      of[plan->tensors[i].value_id] = i;
  return of;
}

/* The storage of v: the root it aliases (a view, an in-place result, a Concat
 * input written into its slice of the output) decides where it lives. */
MemPlace memory_place(const Graph *g, const Plan *plan, const int *tensor_index, const Value *v) {
  MemPlace p = {MEM_NONE, v->id, -1, 0, -1, -1};
  if (v->kind == VK_NONE)
    return p;
  if (plan->alias && plan->alias[v->id] >= 0)
    p.root = plan->alias[v->id];
  const Value *root = g->values[p.root];
  if (root->kind == VK_CONST || v->kind == VK_CONST) {
    p.where = MEM_WEIGHT;
  } else if (root->kind == VK_INPUT) {
    p.where = MEM_INPUT;
  } else if (root->is_output) {
    p.where = MEM_OUTPUT;
  } else if (tensor_index[p.root] >= 0) {
    const PlanTensor *t = &plan->tensors[tensor_index[p.root]];
    p.where = MEM_ARENA;
    p.offset = plan->offset ? plan->offset[v->id] : t->offset;
    p.size = t->size;
    p.first = t->first;
    p.last = t->last;
  }
  return p;
}

/* Opens path's temporary sibling; finish() renames it into place. */
static FILE *open_tmp(const char *path, char *tmp, size_t n, Diag *d) {
  snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f)
    diag_error(d, NULL, "cannot write %s: %s", path, strerror(errno));
  return f;
}

static bool finish(FILE *f, const char *tmp, const char *path, Diag *d) {
  bool ok = !ferror(f);
  if (fclose(f) != 0)
    ok = false;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return diag_error(d, NULL, "cannot write %s: %s", path, strerror(errno));
  }
  return true;
}

bool driver_memory_report(const Graph *g, const Plan *plan, const char *path, Diag *d) {
  char tmp[4096], nb[512];
  FILE *f = open_tmp(path, tmp, sizeof tmp, d);
  if (!f)
    return false;
  fprintf(f, "{\"arena_bytes\": %lld, \"scratch_bytes\": %lld, \"lower_bound_bytes\": %lld, "
             "\"naive_bytes\": %lld, \"model_order_lower_bound_bytes\": %lld, \"steps\": %d, "
             "\"strategy\": ",
          (long long)plan->arena_bytes, (long long)plan->scratch_bytes,
          (long long)plan->lower_bound_bytes, (long long)plan->naive_bytes,
          (long long)plan->model_order_bound_bytes, plan->n_steps);
  json_str(f, plan->strategy ? plan->strategy : "none");
  if (g->n_syms > 0) { /* extents known at run time (docs/dynamic-shapes.md) */
    fputs(", \"dims\": [", f);
    for (int k = 0; k < g->n_syms; k++) {
      const DimSym *s = &g->syms[k];
      fputs(k ? ", {\"name\": " : "{\"name\": ", f);
      json_str(f, s->name);
      int64_t st = s->den == 0 && s->step > 1 ? s->step : 1; /* the user's units */
      fprintf(f, ", \"lo\": %lld, \"hi\": %lld, \"step\": %lld, \"kind\": \"%s\"}", (long long)(s->lo * st),
              (long long)(s->hi * st), (long long)st, s->den == 0 ? "range" : s->den > 0 ? "derived" : "data");
    }
    fputs("]", f);
  }
  fputs(", \"tensors\": [", f);
  for (int i = 0; i < plan->n_tensors; i++) {
    const PlanTensor *t = &plan->tensors[i];
    fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
    json_str(f, buffer_name(g, t, nb, sizeof nb));
    fprintf(f, ", \"offset\": %lld, \"size\": %lld, \"first\": %d, \"last\": %d",
            (long long)t->offset, (long long)t->size, t->first, t->last);
    const Value *tv = t->value_id >= 0 ? g->values[t->value_id] : NULL;
    if (tv && !shape_is_static(&tv->shape) && shape_is_bounded(&tv->shape)) {
      /* the element count as the dims give it (size is at the upper bounds) */
      Buf e;
      buf_init(&e);
      for (int k = 0; k < tv->shape.rank; k++) {
        if (k)
          buf_putc(&e, '*');
        if (tv->shape.d[k] >= 0)
          buf_printf(&e, "%lld", (long long)tv->shape.d[k]);
        else
          dx_print(g, tv->shape.x[k], NULL, &e);
      }
      fputs(", \"elements\": ", f);
      json_str(f, e.s ? e.s : "1");
      buf_free(&e);
    }
    /* Views and in-place results stored in this buffer. */
    bool any = false;
    for (int v = 0; t->value_id >= 0 && plan->alias && v < g->n_values; v++)
      if (plan->alias[v] == t->value_id) {
        fputs(any ? ", " : ", \"aliases\": [", f);
        json_str(f, g->values[v]->name);
        any = true;
      }
    fputs(any ? "]}" : "}", f);
  }
  fprintf(f, "\n]}\n");
  return finish(f, tmp, path, d);
}

/* ---- SVG ---------------------------------------------------------------------- */

#define SVG_W 960    /* plot area, pixels */
#define SVG_H 540
#define SVG_L 90     /* margins */
#define SVG_T 40
#define SVG_B 50

static unsigned hash_name(const char *s) {
  unsigned h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static void svg_axes(FILE *f, const Plan *plan, double sx, double sy, int64_t top) {
  int steps = plan->n_steps > 0 ? plan->n_steps : 1;
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n",
          SVG_L, SVG_T, SVG_W, SVG_H);
  for (int k = 0; k <= 4; k++) {
    int64_t bytes = top * k / 4;
    double y = SVG_T + SVG_H - (double)bytes * sy;
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%lld</text>\n",
            SVG_L - 6, y + 4, (long long)bytes);
  }
  for (int k = 0; k <= 4; k++) {
    int s = (int)((int64_t)(steps - 1) * k / 4);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"11\">%d</text>\n",
            SVG_L + (s + 0.5) * sx, SVG_T + SVG_H + 16, s);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\">schedule step</text>\n",
          SVG_L + SVG_W / 2, SVG_T + SVG_H + 36);
  fprintf(f, "<text x=\"14\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 14 %d)\" "
             "text-anchor=\"middle\">arena offset (bytes)</text>\n", SVG_T + SVG_H / 2, SVG_T + SVG_H / 2);
}

/* The live-bytes profile: its peak is the lower bound. */
static void svg_profile(FILE *f, const Plan *plan, double sx, double sy) {
  int steps = plan->n_steps;
  int64_t *live = calloc((size_t)steps + 2, sizeof *live);
  IR_ASSERT(live);
  for (int i = 0; i < plan->n_tensors; i++) {
    live[plan->tensors[i].first] += plan->tensors[i].size;
    live[plan->tensors[i].last + 1] -= plan->tensors[i].size;
  }
  fputs("<polyline fill=\"none\" stroke=\"#000\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\" points=\"", f);
  int64_t acc = 0;
  for (int s = 0; s < steps; s++) {
    acc += live[s];
    double y = SVG_T + SVG_H - (double)acc * sy;
    fprintf(f, "%.1f,%.1f %.1f,%.1f ", SVG_L + s * sx, y, SVG_L + (s + 1) * sx, y);
  }
  fputs("\"><title>live bytes per step (peak = lower bound)</title></polyline>\n", f);
  free(live);
}

/* -D ranges: the bytes tensor t holds with the dims at vals (its planned size
 * when its extents do not follow them, or when that size is not known). */
static int64_t bytes_at(const Graph *g, const PlanTensor *t, const int64_t *vals) {
  const Value *v = t->value_id >= 0 ? g->values[t->value_id] : NULL;
  if (!v || shape_is_static(&v->shape) || dtype_bits(v->dt) < 8)
    return t->size;
  int64_t n = 1;
  for (int k = 0; k < v->shape.rank; k++) {
    int64_t e = v->shape.d[k];
    if (e < 0 && !(v->shape.x[k] && dx_eval(v->shape.x[k], vals, &e)))
      return t->size;
    n *= e;
  }
  int64_t b = n * (dtype_bits(v->dt) / 8);
  return b < t->size ? b : t->size;
}

/* The dims at their lower bounds: ranges at LO, derived ones computed from
 * them, data-dependent ones at 0. */
static void dims_low(const Graph *g, int64_t *vals) {
  for (int k = 0; k < g->n_syms; k++) {
    const DimSym *s = &g->syms[k];
    int64_t v = s->lo;
    if (s->den > 0 && dx_eval(s->num, vals, &v))
      v /= s->den;
    vals[k] = s->den < 0 ? 0 : v;
  }
}

bool driver_memory_svg(const Graph *g, const Plan *plan, const char *path, Diag *d) {
  char tmp[4096], nb[512];
  FILE *f = open_tmp(path, tmp, sizeof tmp, d);
  if (!f)
    return false;
  int steps = plan->n_steps > 0 ? plan->n_steps : 1;
  int64_t top = plan->arena_bytes > 0 ? plan->arena_bytes : 1;
  double sx = (double)SVG_W / steps, sy = (double)SVG_H / (double)top;
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
             "font-family=\"sans-serif\">\n", SVG_L + SVG_W + 20, SVG_T + SVG_H + SVG_B);
  fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"14\">", SVG_L);
  xml_str(f, g->name && *g->name ? g->name : "model");
  fprintf(f, ": arena %lld bytes, lower bound %lld, naive %lld, scratch %lld (%s)</text>\n",
          (long long)plan->arena_bytes, (long long)plan->lower_bound_bytes,
          (long long)plan->naive_bytes, (long long)plan->scratch_bytes,
          plan->strategy ? plan->strategy : "none");
  int64_t vals[IR_MAX_SYMS];
  bool ranged = g->n_syms > 0;
  if (ranged) { /* how the arena fills as the dims vary (docs/dynamic-shapes.md) */
    dims_low(g, vals);
    fprintf(f, "<text x=\"%d\" y=\"36\" font-size=\"11\">each buffer outlined at the dims' upper bounds, "
               "filled as far as it is used at their lower bounds:", SVG_L);
    for (int k = 0; k < g->n_syms; k++) {
      const DimSym *s = &g->syms[k];
      if (s->den != 0)
        continue;
      int64_t st = s->step > 1 ? s->step : 1;
      fputc(' ', f);
      xml_str(f, s->name);
      fprintf(f, "=%lld..%lld", (long long)(s->lo * st), (long long)(s->hi * st));
    }
    fputs("</text>\n", f);
  }
  svg_axes(f, plan, sx, sy, top);
  for (int i = 0; i < plan->n_tensors; i++) {
    const PlanTensor *t = &plan->tensors[i];
    const char *name = buffer_name(g, t, nb, sizeof nb);
    unsigned h = hash_name(name);
    int64_t lo = ranged ? bytes_at(g, t, vals) : t->size;
    double x = SVG_L + t->first * sx, w = (t->last - t->first + 1) * sx;
    double y = SVG_T + SVG_H - (double)(t->offset + t->size) * sy, hh = (double)t->size * sy;
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
               "fill=\"hsl(%u,60%%,%u%%)\" fill-opacity=\"%s\" stroke=\"#333\" stroke-width=\"0.3\"><title>",
            x, y, w, hh, h % 360, t->value_id >= 0 ? 65u : 85u, lo < t->size ? "0.3" : "1");
    xml_str(f, name);
    fprintf(f, ": %lld bytes at offset %lld, steps %d..%d", (long long)t->size, (long long)t->offset, t->first,
            t->last);
    if (lo < t->size)
      fprintf(f, "; %lld at the dims' lower bounds", (long long)lo);
    fputs("</title></rect>\n", f);
    if (lo < t->size && lo > 0) /* the part a run at the lower bounds uses */
      fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"hsl(%u,60%%,%u%%)\"/>\n",
              x, SVG_T + SVG_H - (double)(t->offset + lo) * sy, w, (double)lo * sy, h % 360,
              t->value_id >= 0 ? 65u : 85u);
  }
  svg_profile(f, plan, sx, sy);
  fputs("</svg>\n", f);
  return finish(f, tmp, path, d);
}
