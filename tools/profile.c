/* profile.c - `onnxc profile MODEL.onnx`: time every kernel of the compiled model.
 *
 * Compiles the model once, writes it twice into a temporary folder (with the
 * --profile hooks as "model" and without as "base"), builds them with the
 * driver program of profile_driver.c, runs it and reads what it printed.
 * Per kernel: the mean of its span on the calling thread over the faster
 * half of the runs (on a busy machine a preempted kernel is an outlier, and
 * a per-kernel median would not add up to a run: which kernel was preempted
 * differs from run to run); the
 * table puts those beside the fusion report's facts (ONNX nodes, FLOPs,
 * bytes: one source, fusion_report.c) and the machine's measured peak and
 * bandwidth. A kernel is memory-bound when its FLOPs per byte moved fall
 * below the machine's ridge point (peak / bandwidth). The sum of the kernels
 * is compared with the end-to-end time of the build without hooks. The
 * Chrome trace holds every span of every run, one track per thread.
 */
#include "tools.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Span {
  int run, kernel, thread;
  double begin, end; /* microseconds from the first profiled run's start */
} Span;

typedef struct Kernel {
  const Node *n;
  double ms;          /* mean over the faster runs, calling thread */
  double *per_run;
  int threads_seen;   /* 1 + the workers that reported a part */
  int64_t flops, bytes;
  bool memory_bound;
} Kernel;

typedef struct Result {
  double peak, bandwidth; /* GFLOP/s of one core, GB/s */
  int n_runs;             /* the timed runs the driver made */
  double *e2e, *start, *wall;
  Span *spans;
  int n_spans, cap_spans;
} Result;

static const char *STRICT = "-Wall -Wextra -Werror -pedantic";

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The mean of the values at or below the median: the faster half. With
 * `pick`, which runs those were; with `use`, only those runs count. */
static double fast_mean(const double *v, int n, bool *pick, const bool *use);

static double median(const double *v, int n) {
  if (n <= 0)
    return 0;
  double *s = malloc((size_t)n * sizeof *s);
  IR_ASSERT(s);
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  free(s);
  return m;
}

static double fast_mean(const double *v, int n, bool *pick, const bool *use) {
  double m = median(v, n), sum = 0;
  int k = 0;
  for (int i = 0; i < n; i++) {
    bool in = use ? use[i] : v[i] <= m;
    if (pick)
      pick[i] = in;
    if (in) {
      sum += v[i];
      k++;
    }
  }
  return k ? sum / k : 0;
}

/* Generates both builds and the driver into dir and links dir/runner. */
static bool build(const Graph *g, const Plan *plan, const Options *o, const char *dir, Diag *d) {
  int64_t wbytes = 0; /* large weights as an assembled blob, like check */
  for (int i = 0; i < g->n_values; i++)
    if (g->values[i]->kind == VK_CONST && g->values[i]->n_uses > 0)
      wbytes += g->values[i]->konst->nbytes;
  WeightsForm wf = wbytes > (8 << 20) ? WEIGHTS_BLOB : WEIGHTS_C;
  CodegenOpts prof = {.name = "model", .model_path = o->model, .weights = wf, .threads = o->threads, .l2_bytes = o->l2_bytes, .vec_bits = driver_vector_bits(o), .conv_order = o->conv_order, .profile = true};
  CodegenOpts base = {.name = "base", .model_path = o->model, .weights = wf, .threads = o->threads, .l2_bytes = o->l2_bytes, .vec_bits = driver_vector_bits(o), .conv_order = o->conv_order};
  Buf objects, h;
  buf_init(&objects);
  buf_init(&h);
  bool ok = codegen_c(g, plan, &prof, dir, d) && driver_cc(dir, "model", o, STRICT, false, &objects, d) &&
            codegen_c(g, plan, &base, dir, d) && driver_cc(dir, "base", o, STRICT, false, &objects, d);
  char path[4096];
  snprintf(path, sizeof path, "%s/driver.c", dir);
  if (ok) {
    profile_emit_driver(&h, g, o->threads > 1 ? o->threads : 1, o->prof_runs, o->prof_warmup, plan->arena_bytes);
    ok = sys_write_file(path, h.s, h.len);
  }
  if (ok) {
    char march[128];
    snprintf(march, sizeof march, "-march=%s", o->cpu ? o->cpu : "native");
    /* the probe: vector extensions, contracted FMAs */
    const char *flags[] = {"-std=gnu11", "-O2", strcmp(march, "-march=generic") != 0 ? march : NULL, NULL};
    ok = inproc_wanted(o) ? inproc_program(dir, "driver.c", "-std=gnu11", objects.s, o, d)
                          : driver_link_program(dir, "driver.c", flags, objects.s, NULL, o->threads, "profile driver", d);
  }
  buf_free(&h);
  buf_free(&objects);
  return ok;
}

static bool parse_output(const char *text, Result *r) {
  int runs = 0, seen_runs = 0;
  if (sscanf(text, "runs %d", &runs) != 1 || runs < 1 || runs > 1000000)
    return false;
  r->n_runs = runs;
  r->e2e = calloc((size_t)runs, sizeof(double));
  r->start = calloc((size_t)runs, sizeof(double));
  r->wall = calloc((size_t)runs, sizeof(double));
  IR_ASSERT(r->e2e && r->start && r->wall);
  for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    Span s;
    int run;
    double a, b, c;
    if (sscanf(line, "peak %lf", &a) == 1) {
      r->peak = a;
    } else if (sscanf(line, "bandwidth %lf", &a) == 1) {
      r->bandwidth = a;
    } else if (sscanf(line, "run %d %lf %lf %lf", &run, &a, &b, &c) == 4 && run >= 0 && run < runs) {
      r->e2e[run] = a;
      r->start[run] = b;
      r->wall[run] = c;
      seen_runs++;
    } else if (sscanf(line, "ev %d %d %d %lf %lf", &s.run, &s.kernel, &s.thread, &s.begin, &s.end) == 5) {
      if (r->n_spans == r->cap_spans) {
        r->cap_spans = r->cap_spans ? 2 * r->cap_spans : 1024;
        r->spans = realloc(r->spans, (size_t)r->cap_spans * sizeof *r->spans);
        IR_ASSERT(r->spans);
      }
      r->spans[r->n_spans++] = s;
    }
  }
  return seen_runs == runs && r->peak > 0 && r->bandwidth > 0;
}

/* "Conv conv1, Relu relu1" (at most max bytes, "..." when cut). */
static void node_list(const Node *n, char *out, size_t max) {
  char buf[4096];
  const char *s;
  size_t k = 0;
  out[0] = 0;
  for (int i = 0; (s = fusion_node(n, i, buf, sizeof buf)) && k < max; i++)
    k += (size_t)snprintf(out + k, max - k, "%s%s", i ? ", " : "", s);
  if (k >= max && max > 4)
    strcpy(out + max - 4, "...");
  if (!out[0])
    snprintf(out, max, "(%s %s)", n->op_type, n->name); /* made by the compiler */
}

static int cmp_kernel(const void *a, const void *b) {
  const Kernel *x = a, *y = b;
  return x->ms > y->ms ? -1 : x->ms < y->ms;
}

static void json_nodes(FILE *f, const Node *n) {
  char buf[4096];
  const char *s;
  fputc('[', f);
  for (int i = 0; (s = fusion_node(n, i, buf, sizeof buf)); i++) {
    fputs(i ? ", " : "", f);
    json_str(f, s);
  }
  fputc(']', f);
}

static bool write_trace(const char *path, const Kernel *ks, int nk, const Result *r, int runs, int threads) {
  FILE *f = fopen(path, "w");
  if (!f)
    return false;
  fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", f);
  for (int t = 0; t < threads; t++)
    fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": %d, \"args\": {\"name\": \"%s %d\"}},\n",
            t, t ? "worker" : "main", t);
  for (int i = 0; i < runs; i++)
    fprintf(f, "{\"ph\": \"X\", \"cat\": \"run\", \"name\": \"run %d\", \"pid\": 1, \"tid\": 0, \"ts\": %.3f, "
               "\"dur\": %.3f},\n", i, r->start[i], r->wall[i]);
  char sb[512];
  for (int i = 0; i < r->n_spans; i++) {
    const Span *s = &r->spans[i];
    if (s->kernel < 0 || s->kernel >= nk)
      continue;
    const Node *n = ks[s->kernel].n;
    char label[4096];
    snprintf(label, sizeof label, "%s %s", n->op_type, n->name);
    fprintf(f, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": ");
    json_str(f, label);
    fprintf(f, ", \"pid\": 1, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"kernel\": %d, \"run\": %d, "
               "\"node\": ", s->thread, s->begin, s->end - s->begin, s->kernel, s->run);
    json_str(f, n->name);
    fprintf(f, ", \"op\": ");
    json_str(f, n->op_type);
    fprintf(f, ", \"shape\": ");
    json_str(f, shape_str(&n->out[0]->shape, sb, sizeof sb));
    fprintf(f, ", \"nodes\": ");
    json_nodes(f, n);
    fprintf(f, "}}%s\n", i + 1 < r->n_spans ? "," : "");
  }
  fputs("]}\n", f);
  return fclose(f) == 0;
}

static bool write_json(const char *path, const Options *o, const Kernel *ks, int nk, const Result *r,
                       double sum, double e2e, double wall, int64_t arena) {
  FILE *f = fopen(path, "w");
  if (!f)
    return false;
  fprintf(f, "{\n  \"model\": ");
  json_str(f, o->model);
  fprintf(f, ",\n  \"threads\": %d,\n  \"runs\": %d,\n  \"warmup\": %d,\n  \"peak_gflops\": %.3f,\n"
             "  \"bandwidth_gbs\": %.3f,\n  \"kernel_sum_ms\": %.6f,\n  \"profiled_run_ms\": %.6f,\n"
             "  \"end_to_end_ms\": %.6f,\n  \"sum_over_end_to_end\": %.6f,\n  \"arena_bytes\": %lld,\n  \"kernels\": [",
          o->threads > 1 ? o->threads : 1, r->n_runs, o->prof_warmup, r->peak, r->bandwidth, sum, wall, e2e,
          e2e > 0 ? sum / e2e : 0, (long long)arena);
  char sb[512];
  for (int i = 0; i < nk; i++) {
    const Kernel *k = &ks[i];
    double gf = k->ms > 0 ? (double)k->flops / (k->ms * 1e6) : 0;
    fprintf(f, "%s\n    {\"rank\": %d, \"name\": ", i ? "," : "", i + 1);
    json_str(f, k->n->name);
    fprintf(f, ", \"op\": ");
    json_str(f, k->n->op_type);
    fprintf(f, ", \"shape\": ");
    json_str(f, shape_str(&k->n->out[0]->shape, sb, sizeof sb));
    fprintf(f, ", \"nodes\": ");
    json_nodes(f, k->n);
    fprintf(f, ", \"ms\": %.6f, \"share\": %.6f, \"flops\": %lld, \"bytes\": %lld, \"gflops\": %.3f, "
               "\"peak_pct\": %.3f, \"threads\": %d, \"bound\": \"%s\"}",
            k->ms, sum > 0 ? 100 * k->ms / sum : 0, (long long)k->flops, (long long)k->bytes, gf,
            100 * gf / (r->peak * k->threads_seen), k->threads_seen, k->memory_bound ? "memory" : "compute");
  }
  fputs("\n  ]\n}\n", f);
  return fclose(f) == 0;
}

static void print_table(const Options *o, const Kernel *ks, int nk, const Result *r, double ridge) {
  int threads = o->threads > 1 ? o->threads : 1;
  printf("onnxc profile: %s, %d thread%s, %d runs after %d warm-up (times: mean of the faster half of the runs)\n", o->model,
         threads, threads > 1 ? "s" : "", r->n_runs, o->prof_warmup);
  printf("machine: peak %.1f GFLOP/s per core (FMA probe), memory copy %.1f GB/s; ridge %.1f FLOP/byte\n\n",
         r->peak, r->bandwidth, ridge);
  printf("%4s %9s %6s %8s %6s %-7s %-20s %-18s %s\n", "rank", "ms", "share", "GFLOP/s", "%peak", "bound", "op",
         "output", "ONNX nodes");
  double sum = 0;
  for (int i = 0; i < nk; i++)
    sum += ks[i].ms;
  int shown = o->prof_top > 0 && o->prof_top < nk ? o->prof_top : nk;
  char sb[512], nodes[96];
  for (int i = 0; i < shown; i++) {
    const Kernel *k = &ks[i];
    double gf = k->ms > 0 ? (double)k->flops / (k->ms * 1e6) : 0;
    node_list(k->n, nodes, sizeof nodes);
    printf("%4d %9.4f %5.1f%% %8.2f %5.1f%% %-7s %-20s %-18s %s\n", i + 1, k->ms, sum > 0 ? 100 * k->ms / sum : 0,
           gf, 100 * gf / (r->peak * k->threads_seen), k->memory_bound ? "memory" : "compute", k->n->op_type,
           shape_str(&k->n->out[0]->shape, sb, sizeof sb), nodes);
  }
  if (shown < nk)
    printf("   ... %d more kernel%s (--top 0 lists all)\n", nk - shown, nk - shown > 1 ? "s" : "");
}

/* Per-kernel figures from the spans. Returns the kernel count. */
static Kernel *gather(const Graph *g, const Plan *plan, const Result *r, int runs, const bool *fast, double ridge,
                      int *nk) {
  int n = 0;
  for (const Node *x = g->first; x; x = x->next)
    n += !(plan->elided && plan->elided[x->id]);
  Kernel *ks = calloc((size_t)(n ? n : 1), sizeof *ks);
  IR_ASSERT(ks);
  int k = 0;
  for (const Node *x = g->first; x; x = x->next) {
    if (plan->elided && plan->elided[x->id])
      continue;
    int64_t rd, wr;
    fusion_bytes(x, &rd, &wr);
    ks[k].n = x;
    ks[k].flops = fusion_flops(x);
    ks[k].bytes = rd + wr;
    ks[k].memory_bound = ks[k].bytes > 0 && (double)ks[k].flops / (double)ks[k].bytes < ridge;
    ks[k].per_run = calloc((size_t)runs, sizeof(double));
    ks[k].threads_seen = 1;
    IR_ASSERT(ks[k].per_run);
    k++;
  }
  unsigned char *seen = calloc((size_t)(n ? n : 1) * 256, 1);
  IR_ASSERT(seen);
  for (int i = 0; i < r->n_spans; i++) {
    const Span *s = &r->spans[i];
    if (s->kernel < 0 || s->kernel >= n || s->run < 0 || s->run >= runs)
      continue;
    if (s->thread == 0)
      ks[s->kernel].per_run[s->run] = (s->end - s->begin) * 1e-3;
    else if (s->thread < 256 && !seen[s->kernel * 256 + s->thread]++)
      ks[s->kernel].threads_seen++;
  }
  free(seen);
  for (int i = 0; i < n; i++)
    ks[i].ms = fast_mean(ks[i].per_run, runs, NULL, fast);
  *nk = n;
  return ks;
}

static void report(const Options *o, const Graph *g, const Plan *plan, const Result *r, bool *ok, Diag *d) {
  int runs = r->n_runs, nk = 0;
  double ridge = r->peak / r->bandwidth;
  bool *fast = calloc((size_t)runs, sizeof *fast);
  IR_ASSERT(fast);
  double wall = fast_mean(r->wall, runs, fast, NULL) * 1e-3, e2e = fast_mean(r->e2e, runs, NULL, NULL) * 1e-3;
  Kernel *ks = gather(g, plan, r, runs, fast, ridge, &nk);
  Kernel *unsorted = malloc((size_t)(nk ? nk : 1) * sizeof *ks);
  IR_ASSERT(unsorted);
  memcpy(unsorted, ks, (size_t)nk * sizeof *ks);
  if (o->prof_trace && !write_trace(o->prof_trace, unsorted, nk, r, runs, o->threads > 1 ? o->threads : 1))
    *ok = diag_error(d, NULL, "cannot write %s: %s", o->prof_trace, strerror(errno));
  qsort(ks, (size_t)nk, sizeof *ks, cmp_kernel);
  double sum = 0, mem = 0;
  for (int i = 0; i < nk; i++) {
    sum += ks[i].ms;
    mem += ks[i].memory_bound ? ks[i].ms : 0;
  }
  print_table(o, ks, nk, r, ridge);
  printf("\n%d kernels; time in memory-bound kernels %.1f%%, compute-bound %.1f%%\n", nk,
         sum > 0 ? 100 * mem / sum : 0, sum > 0 ? 100 * (sum - mem) / sum : 0);
  printf("sum of kernels %.4f ms; profiled run %.4f ms; end-to-end without --profile %.4f ms; "
         "sum / end-to-end %.3f\n", sum, wall, e2e, e2e > 0 ? sum / e2e : 0);
  printf("peak arena use %lld bytes (%.2f MiB)\n", (long long)plan->arena_bytes,
         (double)plan->arena_bytes / (1 << 20));
  if (o->prof_json && !write_json(o->prof_json, o, ks, nk, r, sum, e2e, wall, plan->arena_bytes))
    *ok = diag_error(d, NULL, "cannot write %s: %s", o->prof_json, strerror(errno));
  for (int i = 0; i < nk; i++)
    free(ks[i].per_run);
  free(ks);
  free(unsorted);
  free(fast);
}

int profile_run(const Options *o) {
  Diag d;
  diag_init(&d, o->model, stderr);
  Plan plan;
  Graph *g = driver_compile(o, &plan, &d);
  if (!g) {
    diag_free(&d);
    return 1;
  }
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i]->dt == DT_STRING) {
      diag_error(&d, NULL, "input '%s' holds strings: profile makes up numeric inputs only", g->inputs[i]->name);
      ir_graph_free(g);
      diag_free(&d);
      return 1;
    }
  char *dir = sys_mkdtemp("profile");
  bool ok = dir != NULL;
  if (!ok)
    diag_error(&d, NULL, "cannot create a temporary folder: %s", strerror(errno));
  ok = ok && build(g, &plan, o, dir, &d);
  Result r;
  memset(&r, 0, sizeof r);
  if (ok) {
    char runner[4096];
    snprintf(runner, sizeof runner, "%s/runner", dir);
    char *argv[] = {runner, NULL};
    Buf log;
    buf_init(&log);
    int rc = driver_run_program(argv, &log);
    if (rc != 0)
      ok = diag_error(&d, NULL, "the profile run failed (status %d):\n%s", rc, log.s ? log.s : "");
    else if (!parse_output(log.s ? log.s : "", &r))
      ok = diag_error(&d, NULL, "the profile run printed no usable figures:\n%s", log.s ? log.s : "");
    buf_free(&log);
  }
  if (ok)
    report(o, g, &plan, &r, &ok, &d);
  if (dir) {
    if (o->keep_temps)
      fprintf(stderr, "onnxc profile: kept %s\n", dir);
    else
      sys_rmtree(dir);
    free(dir);
  }
  free(r.e2e);
  free(r.start);
  free(r.wall);
  free(r.spans);
  ir_graph_free(g);
  diag_free(&d);
  return ok ? 0 : 1;
}
