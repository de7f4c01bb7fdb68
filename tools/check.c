/* check.c - `onnxc check CASE_DIR`: compile an ONNX backend test case, run
 * every data set, compare with the expected outputs.
 *
 * The generated sources are built exactly as users build them, with
 * -std=c99 -Wall -Wextra -Werror -pedantic, plus a small harness (the only
 * code here that uses stdio and malloc) that reads raw inputs and writes raw
 * outputs. Running it as a child process keeps a crash, or a sanitizer report
 * with --sanitize, from taking the checker down. Exit status: 0 all outputs
 * match, 1 a mismatch or a failed run, 2 the model cannot be compiled.
 */
#include "tools.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SETS 64
#define MAX_IO 64

typedef struct DataSet {
  char *dir;
  Tensor *in[MAX_IO], *out[MAX_IO];
  int n_in, n_out;
} DataSet;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted file names in dir starting with prefix (heap strings). */
static int list_dir(const char *dir, const char *prefix, char **names, int max) {
  DIR *dp = opendir(dir);
  if (!dp)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dp)) && n < max)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
      names[n++] = strdup(e->d_name);
  closedir(dp);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  return n;
}

/* input_10.pb sorts before input_2.pb: order by the number instead. */
static int load_tensors(Graph *scratch, const char *dir, const char *prefix, Tensor **out, Diag *d) {
  int n = 0;
  for (; n < MAX_IO; n++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, n);
    FILE *f = fopen(path, "rb");
    if (!f)
      break;
    fclose(f);
    const char *nm;
    out[n] = fe_tensor_load(scratch, path, &nm, d);
    if (!out[n])
      return -1;
  }
  return n;
}

static bool same_input_shapes(const DataSet *a, const DataSet *b) {
  if (a->n_in != b->n_in)
    return false;
  for (int i = 0; i < a->n_in; i++)
    if (!shape_equal(&a->in[i]->shape, &b->in[i]->shape))
      return false;
  return true;
}

/* Inputs that plausibly steer shapes rather than carry data: integer or bool
 * vectors (shapes, axes, pads, conditions) and scalars of any type (Range
 * bounds, OneHot depth). */
static bool bindable(const Tensor *t) {
  return ((dtype_is_int(t->dt) || t->dt == DT_BOOL) && t->shape.rank <= 1) || t->shape.rank == 0;
}

static bool has_small_int_input(const DataSet *ds) {
  for (int i = 0; i < ds->n_in; i++)
    if (bindable(ds->in[i]))
      return true;
  return false;
}

static bool same_input_values_bound(const DataSet *a, const DataSet *b, const bool *bound) {
  for (int i = 0; i < a->n_in && i < b->n_in; i++)
    if (bound[i] && (a->in[i]->nbytes != b->in[i]->nbytes ||
                     memcmp(a->in[i]->data, b->in[i]->data, (size_t)a->in[i]->nbytes) != 0))
      return false;
  return true;
}

static void emit_harness(Buf *h, const Graph *g, const char *name, int64_t arena) {
  buf_printf(h, "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"%s.h\"\n\n", name);
  buf_puts(h, "static void *load(const char *p, size_t n) {\n"
              "  unsigned char *b = malloc(n ? n : 1);\n  FILE *f = fopen(p, \"rb\");\n"
              "  if (!b || !f || fread(b, 1, n, f) != n) { fprintf(stderr, \"harness: cannot read %s\\n\", p); exit(3); }\n"
              "  fclose(f);\n  return b;\n}\n\n");
  buf_printf(h, "int main(int argc, char **argv) {\n  const void *in[%d];\n  void *out[%d];\n  void *arena = NULL;\n  int rc, i;\n",
             g->n_inputs + 1, g->n_outputs + 1);
  buf_printf(h, "  static const size_t in_bytes[%d] = {", g->n_inputs + 1);
  for (int i = 0; i < g->n_inputs; i++) {
    int64_t n = 0, b = 0;
    shape_numel(&g->inputs[i]->shape, &n);
    dtype_bytes(g->inputs[i]->dt, n, &b);
    buf_printf(h, "%lld, ", (long long)b);
  }
  buf_printf(h, "0};\n  static const size_t out_bytes[%d] = {", g->n_outputs + 1);
  for (int i = 0; i < g->n_outputs; i++) {
    int64_t n = 0, b = 0;
    shape_numel(&g->outputs[i]->shape, &n);
    dtype_bytes(g->outputs[i]->dt, n, &b);
    buf_printf(h, "%lld, ", (long long)b);
  }
  buf_printf(h, "0};\n  if (argc != %d) return 3;\n", 1 + g->n_inputs + g->n_outputs);
  buf_printf(h, "  if (%lld > 0) {\n    arena = aligned_alloc(64, %lld);\n"
                "    if (!arena) return 3;\n    memset(arena, 0xA5, %lld);\n  }\n",
             (long long)arena, (long long)arena, (long long)arena);
  buf_printf(h, "  for (i = 0; i < %d; i++) in[i] = load(argv[1 + i], in_bytes[i]);\n", g->n_inputs);
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    out[i] = malloc(out_bytes[i] ? out_bytes[i] : 1);\n"
                "    if (!out[i]) return 3;\n    memset(out[i], 0xCD, out_bytes[i]);\n  }\n", g->n_outputs);
  buf_printf(h, "  rc = %s_run_v(arena, in, out);\n", name);
  buf_printf(h, "  if (rc != 0) fprintf(stderr, \"%s_run returned %%d\\n\", rc);\n", name);
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    FILE *f = rc ? NULL : fopen(argv[1 + %d + i], \"wb\");\n"
                "    if (!rc && (!f || fwrite(out[i], 1, out_bytes[i], f) != out_bytes[i])) rc = -1;\n"
                "    if (f) fclose(f);\n    free(out[i]);\n  }\n",
             g->n_outputs, g->n_inputs);
  buf_printf(h, "  for (i = 0; i < %d; i++) free((void *)in[i]);\n  free(arena);\n"
                "  return rc == 0 ? 0 : rc < 0 ? 3 : 4;\n}\n", g->n_inputs);
}

static const char *SAN = "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g";
static const char *STRICT = "-Wall -Wextra -Werror -pedantic";

/* Compiles the model with its inputs fixed to the data set's shapes and builds
 * the harness into dir/runner. Returns the graph (caller frees) or NULL. */
/* With `bind`, small integer inputs (shape tensors, axes, indices: rank <= 1)
 * are compiled in as constants holding the data set's values, and bound[i]
 * records which. The C target needs static shapes, and in some test models an
 * output's shape is computed from such an input's value. */
static Graph *build_runner(const char *model, const DataSet *ds, const Options *o, const char *dir,
                           bool bind, bool *bound, Diag *d) {
  Graph *g = fe_onnx_load(model, d);
  if (!g)
    return NULL;
  if (ds->n_in != g->n_inputs) {
    diag_error(d, NULL, "the model has %d inputs but %s has %d", g->n_inputs, ds->dir, ds->n_in);
    ir_graph_free(g);
    return NULL;
  }
  for (int i = 0; i < g->n_inputs; i++) {
    Value *v = g->inputs[i];
    if (v->dt != ds->in[i]->dt) {
      diag_error(d, NULL, "input '%s' is %s in the model but %s in the test data", v->name,
                 dtype_name(v->dt), dtype_name(ds->in[i]->dt));
      ir_graph_free(g);
      return NULL;
    }
    v->shape = ds->in[i]->shape;
    bound[i] = false;
  }
  if (bind) {
    int k = 0;
    for (int i = 0; i < ds->n_in; i++) {
      Value *v = g->inputs[k];
      if (bindable(ds->in[i])) {
        Tensor *t = ir_tensor_new(g, v->dt, &ds->in[i]->shape, d);
        memcpy(t->data, ds->in[i]->data, (size_t)t->nbytes);
        ir_value_make_const(v, t);
        memmove(&g->inputs[k], &g->inputs[k + 1], (size_t)(g->n_inputs - k - 1) * sizeof(Value *));
        g->n_inputs--;
        bound[i] = true;
      } else {
        k++;
      }
    }
  }
  Plan plan;
  PipelineOpts po = {o->opt_level, o->pins, o->n_pins, o->dump_after, stderr, true};
  if (!passes_run(g, &po, &plan, d)) {
    ir_graph_free(g);
    return NULL;
  }
  /* Small weights go through the portable C form so every check also proves it
   * builds at -pedantic; large ones as an assembled blob, which the C compiler
   * does not have to parse (hundreds of MB of literals take minutes). */
  int64_t wbytes = 0;
  for (int i = 0; i < g->n_values; i++)
    if (g->values[i]->kind == VK_CONST && g->values[i]->n_uses > 0)
      wbytes += g->values[i]->konst->nbytes;
  CodegenOpts co = {"model", model, wbytes > (8 << 20) ? WEIGHTS_BLOB : WEIGHTS_C, NULL};
  Buf objects, h;
  buf_init(&objects);
  buf_init(&h);
  char flags[512];
  snprintf(flags, sizeof flags, "%s %s", STRICT, o->sanitize ? SAN : "");
  bool ok = codegen_c(g, &plan, &co, dir, d) && driver_cc(dir, "model", o, flags, false, &objects, d);
  if (ok) {
    emit_harness(&h, g, "model", plan.arena_bytes);
    char path[4096];
    snprintf(path, sizeof path, "%s/harness.c", dir);
    ok = sys_write_file(path, h.s, h.len);
  }
  buf_free(&h);
  if (ok) {
    char *argv[64];
    int n = 0;
    char *cc = strdup(sys_cc());
    for (char *t = strtok(cc, " \t"); t && n < 40; t = strtok(NULL, " \t"))
      argv[n++] = t;
    char harness[4096], runner[4096], inc[4096];
    snprintf(harness, sizeof harness, "%s/harness.c", dir);
    snprintf(runner, sizeof runner, "%s/runner", dir);
    snprintf(inc, sizeof inc, "-I%s", dir);
    argv[n++] = "-std=c11";
    argv[n++] = inc;
    if (o->sanitize) {
      argv[n++] = "-fsanitize=address,undefined";
      argv[n++] = "-g";
    }
    argv[n++] = harness;
    char *objs = strdup(objects.s);
    for (char *t = strtok(objs, "\n"); t && n < 60; t = strtok(NULL, "\n"))
      argv[n++] = t;
    argv[n++] = "-lm";
    argv[n++] = "-o";
    argv[n++] = runner;
    argv[n] = NULL;
    Buf log;
    buf_init(&log);
    if (sys_run(argv, &log) != 0)
      ok = diag_error(d, NULL, "building the test harness failed:\n%s", log.s ? log.s : "");
    buf_free(&log);
    free(objs);
    free(cc);
  }
  buf_free(&objects);
  if (!ok) {
    ir_graph_free(g);
    return NULL;
  }
  return g;
}

static double elem(const Tensor *t, const void *raw, int64_t i) {
  Tensor tmp = *t;
  tmp.data = (void *)raw;
  return tensor_get_f64(&tmp, i);
}

/* Compares one output; prints the worst element on a mismatch. */
static bool compare(const char *label, const Value *v, const Tensor *exp, const void *got, const Options *o) {
  char sa[512], sb[512];
  if (exp->dt != v->dt || !shape_equal(&exp->shape, &v->shape)) {
    fprintf(stderr, "%s '%s': expected %s%s, the model produced %s%s\n", label, v->name,
            dtype_name(exp->dt), shape_str(&exp->shape, sa, sizeof sa), dtype_name(v->dt),
            shape_str(&v->shape, sb, sizeof sb));
    return false;
  }
  bool is_float = dtype_is_float(exp->dt);
  double worst = 0, wg = 0, we = 0;
  int64_t wi = -1, bad = 0;
  for (int64_t i = 0; i < exp->numel; i++) {
    double e, g;
    if (is_float) {
      e = tensor_get_f64(exp, i);
      g = elem(exp, got, i);
    } else {
      Tensor tmp = *exp;
      tmp.data = (void *)got;
      e = (double)tensor_get_i64(exp, i);
      g = (double)tensor_get_i64(&tmp, i);
      if (tensor_get_i64(exp, i) == tensor_get_i64(&tmp, i))
        continue;
    }
    double score;
    if (isnan(e) || isnan(g))
      score = isnan(e) && isnan(g) ? 0 : INFINITY;
    else if (isinf(e) || isinf(g))
      score = e == g ? 0 : INFINITY;
    else if (!is_float)
      score = INFINITY;
    else
      score = fabs(g - e) / (o->atol + o->rtol * fabs(e));
    if (score > 1)
      bad++;
    if (score > worst || (wi < 0 && score > 1)) {
      worst = score;
      wi = i;
      wg = g;
      we = e;
    }
  }
  if (bad == 0)
    return true;
  /* Index of the worst element in the tensor's coordinates. */
  char idx[512];
  size_t k = 0;
  int64_t rem = wi, strides[IR_MAX_RANK];
  int64_t acc = 1;
  for (int i = exp->shape.rank - 1; i >= 0; i--) {
    strides[i] = acc;
    acc *= exp->shape.d[i];
  }
  k += (size_t)snprintf(idx + k, sizeof idx - k, "[");
  for (int i = 0; i < exp->shape.rank && k < sizeof idx; i++) {
    k += (size_t)snprintf(idx + k, sizeof idx - k, "%s%lld", i ? "," : "", (long long)(rem / strides[i]));
    rem %= strides[i];
  }
  if (k < sizeof idx)
    snprintf(idx + k, sizeof idx - k, "]");
  fprintf(stderr, "%s '%s': %lld of %lld elements differ; worst at %s: got %.9g, expected %.9g "
                  "(abs err %.3g, rtol %g, atol %g)\n",
          label, v->name, (long long)bad, (long long)exp->numel, idx, wg, we, fabs(wg - we), o->rtol, o->atol);
  return false;
}

static int run_set(const char *dir, const Graph *g, const DataSet *ds, const bool *bound, const Options *o) {
  char *argv[2 * MAX_IO + 2];
  char paths[2 * MAX_IO][64];
  int n = 0;
  char runner[4096];
  snprintf(runner, sizeof runner, "%s/runner", dir);
  argv[n++] = runner;
  for (int i = 0; i < ds->n_in; i++) {
    if (bound[i])
      continue;
    snprintf(paths[i], sizeof paths[i], "in%d.bin", i);
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, paths[i]);
    if (!sys_write_file(p, ds->in[i]->data, (size_t)ds->in[i]->nbytes)) {
      fprintf(stderr, "onnxc check: cannot write %s\n", p);
      return 2;
    }
    argv[n++] = strdup(p);
  }
  for (int i = 0; i < g->n_outputs; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/out%d.bin", dir, i);
    argv[n++] = strdup(p);
  }
  argv[n] = NULL;
  Buf log;
  buf_init(&log);
  int rc = sys_run(argv, &log);
  int status = 0;
  if (rc != 0) {
    fprintf(stderr, "%s: the generated code failed (status %d):\n%s", ds->dir, rc, log.s ? log.s : "");
    status = 1;
  }
  for (int i = 0; status == 0 && i < g->n_outputs; i++) {
    Buf got;
    buf_init(&got);
    if (!sys_read_file(argv[n - g->n_outputs + i], &got) || (int64_t)got.len != ds->out[i]->nbytes) {
      fprintf(stderr, "%s: output %d '%s' has %zu bytes, expected %lld\n", ds->dir, i,
              g->outputs[i]->name, got.len, (long long)ds->out[i]->nbytes);
      status = 1;
    } else {
      char label[4200];
      snprintf(label, sizeof label, "%s: output %d", ds->dir, i);
      if (!compare(label, g->outputs[i], ds->out[i], got.s, o))
        status = 1;
    }
    buf_free(&got);
  }
  buf_free(&log);
  for (int i = 1; i < n; i++)
    free(argv[i]);
  return status;
}

int check_case(const char *case_dir, const Options *o) {
  char model[4096];
  snprintf(model, sizeof model, "%s/model.onnx", case_dir);
  Diag d;
  diag_init(&d, model, stderr);
  char *names[MAX_SETS];
  int n_sets = list_dir(case_dir, "test_data_set_", names, MAX_SETS);
  if (n_sets == 0) {
    diag_error(&d, NULL, "no test_data_set_* folders in %s", case_dir);
    diag_free(&d);
    return 2;
  }
  Graph *scratch = ir_graph_new(model);
  DataSet *sets = calloc((size_t)n_sets, sizeof *sets);
  int status = 0;
  for (int s = 0; s < n_sets && status == 0; s++) {
    size_t len = strlen(case_dir) + strlen(names[s]) + 2;
    sets[s].dir = malloc(len);
    snprintf(sets[s].dir, len, "%s/%s", case_dir, names[s]);
    sets[s].n_in = load_tensors(scratch, sets[s].dir, "input", sets[s].in, &d);
    sets[s].n_out = load_tensors(scratch, sets[s].dir, "output", sets[s].out, &d);
    if (sets[s].n_in < 0 || sets[s].n_out < 0)
      status = 2;
  }
  char *dir = NULL;
  Graph *g = NULL;
  int built_for = -1;
  bool bound[MAX_IO] = {false};
  for (int s = 0; s < n_sets && status != 2; s++) {
    if (built_for < 0 || !same_input_shapes(&sets[built_for], &sets[s])) {
      if (dir) {
        sys_rmtree(dir);
        free(dir);
      }
      ir_graph_free(g);
      dir = sys_mkdtemp("check");
      /* First as the model stands; if that fails and the data set has
       * shape-like integer inputs, again with those compiled in. Only the
       * first attempt's errors are shown when both fail. */
      Diag first;
      diag_init(&first, model, NULL);
      g = dir ? build_runner(model, &sets[s], o, dir, false, bound, &first) : NULL;
      if (!g && dir && has_small_int_input(&sets[s])) {
        Diag retry;
        diag_init(&retry, model, NULL);
        g = build_runner(model, &sets[s], o, dir, true, bound, &retry);
        diag_free(&retry);
        if (g)
          fprintf(stderr, "%s: note: compiled with its integer inputs bound to the values of %s, "
                          "because without them: %s\n", model, names[s], diag_last(&first));
      }
      if (!g)
        for (int i = 0; i < first.n_msgs; i++)
          fprintf(stderr, "%s\n", first.msgs[i]);
      diag_free(&first);
      if (!g) {
        status = 2;
        break;
      }
      built_for = s;
    }
    if (sets[s].n_out != g->n_outputs) {
      diag_error(&d, NULL, "the model has %d outputs but %s has %d", g->n_outputs, sets[s].dir, sets[s].n_out);
      status = 2;
      break;
    }
    if (!same_input_values_bound(&sets[built_for], &sets[s], bound)) {
      /* A bound input changed value: this data set needs its own compile. */
      built_for = -1;
      s--;
      continue;
    }
    int rc = run_set(dir, g, &sets[s], bound, o);
    if (rc > status)
      status = rc;
  }
  if (status == 0 && o->verbose)
    printf("%s: %d data set(s) match\n", case_dir, n_sets);
  if (dir) {
    if (o->keep_temps)
      fprintf(stderr, "onnxc check: kept %s\n", dir);
    else
      sys_rmtree(dir);
    free(dir);
  }
  ir_graph_free(g);
  ir_graph_free(scratch);
  for (int s = 0; s < n_sets; s++) {
    free(sets[s].dir);
    free(names[s]);
  }
  free(sets);
  diag_free(&d);
  return status;
}
