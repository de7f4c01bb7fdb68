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
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SETS 64
#define MAX_IO 2048 /* onnxc compare makes every value an output */

typedef struct DataSet {
  char *dir;
  Tensor *in[MAX_IO], *out[MAX_IO];
  int n_in, n_out;
  /* Sequence / optional inputs are flattened into in[]: their element counts
   * (-1: an empty optional), by the model's input names (docs/abi.md). */
  SeqLen lens[MAX_IO];
  int n_lens;
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
/* A file of a sequence or optional value (the model's type `types[i]`, when
 * types has that value) yields its tensors in order, and its count in lens. */
static int load_tensors(Graph *scratch, const char *dir, const char *prefix, Tensor **out,
                        const Value *const *types, int n_types, SeqLen *lens, int *n_lens, Diag *d) {
  int n = 0;
  for (int i = 0; n < MAX_IO; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, i);
    FILE *f = fopen(path, "rb");
    if (!f)
      break;
    fclose(f);
    ValueType vt = i < n_types ? types[i]->vt : VT_TENSOR;
    int got = 0;
    bool present = true;
    if (!fe_value_load(scratch, path, vt, out + n, MAX_IO - n, &got, &present, d))
      return -1;
    n += got;
    if (vt != VT_TENSOR && n_lens) {
      lens[*n_lens].name = arena_strdup(scratch->arena, types[i]->name);
      lens[(*n_lens)++].n = present ? got : -1;
    }
  }
  return n;
}

static bool same_input_shapes(const DataSet *a, const DataSet *b) {
  if (a->n_in != b->n_in || a->n_lens != b->n_lens)
    return false;
  for (int i = 0; i < a->n_lens; i++)
    if (a->lens[i].n != b->lens[i].n)
      return false;
  for (int i = 0; i < a->n_in; i++)
    if (!shape_equal(&a->in[i]->shape, &b->in[i]->shape))
      return false;
  return true;
}

/* Inputs that plausibly steer shapes rather than carry data: integer or bool
 * vectors (shapes, axes, pads, conditions), scalars of any type (Range
 * bounds, OneHot depth) and short float vectors (Resize scales and roi). */
static bool bindable(const Tensor *t) {
  if (t->dt == DT_STRING) /* never shape-like; their pointers cannot be compiled in */
    return false;
  return ((dtype_is_int(t->dt) || t->dt == DT_BOOL) && t->shape.rank <= 1) || t->shape.rank == 0 ||
         (dtype_is_float(t->dt) && t->shape.rank == 1 && t->numel <= 2 * 8);
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

/* --guard: red zones around each output buffer, checked after the run, and
 * the generated code's own report of a red zone hit in the arena. */
static void emit_harness_guard(Buf *h, const Graph *g, const char *name) {
  buf_printf(h, "#include \"onnxc_rt.h\" /* ONNXC_ERR_GUARD */\n#define OG %d /* red zone bytes around each output */\n"
                "static int guard_report(const void *arena, int rc, void *const *out, const size_t *bytes) {\n"
                "  static const char *const names[%d] = {", PLAN_REDZONE, g->n_outputs + 1);
  for (int i = 0; i < g->n_outputs; i++) {
    const Node *p = g->outputs[i]->producer;
    Buf txt;
    buf_init(&txt);
    buf_printf(&txt, "output '%s'", g->outputs[i]->name);
    if (p)
      buf_printf(&txt, " (written by node '%s' (%s))", p->name, p->op_type);
    buf_putc(h, '"');
    for (const char *c = txt.s; *c; c++) /* a C string literal: no escapes needed */
      buf_putc(h, *c == '"' || *c == '\\' || *c == '?' || (unsigned char)*c < 32 ? '_' : *c);
    buf_puts(h, "\", ");
    buf_free(&txt);
  }
  buf_printf(h, "0};\n  %s_guard_info gi;\n  int i;\n  size_t k;\n", name);
  buf_printf(h, "  if (rc == ONNXC_ERR_GUARD && %s_guard_report(arena, &gi)) {\n"
                "    fprintf(stderr, \"guard: node '%%s' (%%s) wrote out of bounds: red zone %%s %%s (offset %%lld, %%lld bytes; "
                "first changed byte at arena offset %%lld, step %%d)\\n\", gi.node, gi.op, gi.after ? \"after\" : \"before\", "
                "gi.region, gi.offset, gi.bytes, gi.at, gi.step);\n    return 1;\n  }\n", name);
  buf_printf(h, "  for (i = 0; i < %d; i++)\n    for (k = 0; k < OG; k++) {\n"
                "      const unsigned char *b = (const unsigned char *)out[i] - OG;\n"
                "      if (b[k] != 0xFA || b[OG + bytes[i] + k] != 0xFA) {\n"
                "        fprintf(stderr, \"guard: %%s wrote out of bounds: red zone %%s the caller's buffer (%%zu bytes)\\n\",\n"
                "                names[i], b[k] != 0xFA ? \"before\" : \"after\", bytes[i]);\n"
                "        return 1;\n      }\n    }\n  return 0;\n}\n\n", g->n_outputs);
}

/* Both harnesses' includes, guard report (or OG 0) and load(). */
static void emit_harness_head(Buf *h, const Graph *g, const char *name, bool guard) {
  buf_printf(h, "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"%s.h\"\n#include \"onnxc_rt.h\"\n\n", name);
  if (guard)
    emit_harness_guard(h, g, name);
  else
    buf_puts(h, "#define OG 0\n");
  buf_puts(h, "static void *load(const char *p, size_t n) {\n"
              "  unsigned char *b = malloc(n ? n : 1);\n  FILE *f = fopen(p, \"rb\");\n"
              "  if (!b || !f || fread(b, 1, n, f) != n) { fprintf(stderr, \"harness: cannot read %s\\n\", p); exit(3); }\n"
              "  fclose(f);\n  return b;\n}\n\n");
}

static void emit_harness(Buf *h, const Graph *g, const char *name, int64_t arena, bool guard, int numerics) {
  emit_harness_head(h, g, name, guard);
  bool strs = false; /* string inputs and outputs travel as NUL-terminated strings, one after another */
  for (int i = 0; i < g->n_inputs + g->n_outputs; i++)
    strs |= (i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs])->dt == DT_STRING;
  if (strs)
    buf_puts(h, "/* count strings, then the file's bytes at v[count] (to free) */\n"
                "static const char **load_strs(const char *p, size_t count) {\n"
                "  FILE *f = fopen(p, \"rb\");\n  long n = -1;\n  size_t i, at = 0;\n  char *b;\n  const char **v;\n"
                "  if (f && fseek(f, 0, SEEK_END) == 0) n = ftell(f);\n"
                "  if (n < 0 || fseek(f, 0, SEEK_SET) != 0) { fprintf(stderr, \"harness: cannot read %s\\n\", p); exit(3); }\n"
                "  b = malloc((size_t)n + 1);\n  v = malloc((count + 1) * sizeof *v);\n"
                "  if (!b || !v || fread(b, 1, (size_t)n, f) != (size_t)n) exit(3);\n  fclose(f);\n  b[n] = 0;\n"
                "  for (i = 0; i < count; i++) {\n    if (at > (size_t)n) exit(3);\n    v[i] = b + at;\n    at += strlen(b + at) + 1;\n  }\n"
                "  v[count] = b;\n  return v;\n}\n\n"
                "static int save_strs(const char *p, const char *const *v, size_t count) {\n"
                "  FILE *f = fopen(p, \"wb\");\n  size_t i;\n  int ok = f != NULL;\n"
                "  for (i = 0; ok && i < count; i++)\n    ok = v[i] && fwrite(v[i], 1, strlen(v[i]) + 1, f) == strlen(v[i]) + 1;\n"
                "  if (f && fclose(f) != 0) ok = 0;\n  return ok ? 0 : -1;\n}\n\n");
  int n_dyn = 0; /* outputs of data-dependent extent: their dims follow in out[] (docs/abi.md) */
  for (int i = 0; i < g->n_outputs; i++)
    n_dyn += value_dyn_mask(g->outputs[i]) != 0;
  buf_printf(h, "int main(int argc, char **argv) {\n  const void *in[%d];\n  void *out[%d];\n  void *arena = NULL;\n  int rc, i;\n",
             g->n_inputs + 1, g->n_outputs + n_dyn + 1);
  for (int i = 0, k = 0; i < g->n_outputs; i++)
    if (value_dyn_mask(g->outputs[i]))
      buf_printf(h, "  int64_t dims%d[%d];\n  out[%d] = dims%d;\n", i, IR_MAX_RANK, g->n_outputs + k++, i);
  buf_printf(h, "  static const size_t in_bytes[%d] = {", g->n_inputs + 1);
  for (int i = 0; i < g->n_inputs; i++) {
    int64_t n = 0, b = 0;
    shape_numel(&g->inputs[i]->shape, &n);
    dtype_bytes(g->inputs[i]->dt, n, &b);
    buf_printf(h, "%lld, ", g->inputs[i]->dt == DT_STRING ? 0LL : (long long)b); /* strings: load_strs */
  }
  buf_printf(h, "0};\n  static size_t out_bytes[%d] = {", g->n_outputs + 1);
  for (int i = 0; i < g->n_outputs; i++) {
    int64_t n = 0, b = 0;
    if (!shape_numel(&g->outputs[i]->shape, &n)) /* data-dependent extents: the capacity */
      shape_numel_max(g, &g->outputs[i]->shape, &n);
    dtype_bytes(g->outputs[i]->dt, n, &b);
    const char *shrink = guard ? getenv("ONNXC_GUARD_TEST_SHRINK") : NULL; /* guard_test_shrink */
    if (shrink && strcmp(shrink, g->outputs[i]->name) == 0 && b >= 4)
      b -= 4;
    buf_printf(h, "%lld, ", (long long)b);
  }
  buf_printf(h, "0};\n  if (argc != %d) return 3;\n", 1 + g->n_inputs + g->n_outputs);
  if (arena > 0) /* no memset of 0 bytes: clang warns */
    buf_printf(h, "  arena = aligned_alloc(64, %lld);\n  if (!arena) return 3;\n  memset(arena, 0xA5, %lld);\n",
               (long long)arena, (long long)arena);
  buf_printf(h, "  for (i = 0; i < %d; i++) in[i] = load(argv[1 + i], in_bytes[i]);\n", g->n_inputs);
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i]->dt == DT_STRING) {
      int64_t n = 0;
      shape_numel(&g->inputs[i]->shape, &n);
      buf_printf(h, "  free((void *)in[%d]);\n  in[%d] = load_strs(argv[1 + %d], %lld);\n", i, i, i, (long long)n);
    }
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    out[i] = malloc(out_bytes[i] + 2 * OG + 1);\n"
                "    if (!out[i]) return 3;\n    memset(out[i], 0xFA, out_bytes[i] + 2 * OG);\n"
                "    out[i] = (unsigned char *)out[i] + OG;\n    memset(out[i], 0xCD, out_bytes[i]);\n  }\n",
             g->n_outputs);
  for (int i = 0; i < g->n_outputs; i++) /* no stale pointers: NULL is caught */
    if (g->outputs[i]->dt == DT_STRING)
      buf_printf(h, "  memset(out[%d], 0, out_bytes[%d]);\n", i, i);
  if (strs) {
    buf_printf(h, "  static size_t out_count[%d] = {", g->n_outputs + 1);
    for (int i = 0; i < g->n_outputs; i++) {
      int64_t n = 0;
      if (!shape_numel(&g->outputs[i]->shape, &n)) /* data-dependent extents: the capacity */
      shape_numel_max(g, &g->outputs[i]->shape, &n);
      buf_printf(h, "%lld, ", (long long)n);
    }
    buf_puts(h, "0};\n");
  }
  buf_printf(h, "  rc = %s_run_v(arena, in, out);\n", name);
  if (guard) /* exit status 5: a red zone was hit */
    buf_puts(h, "  if (guard_report(arena, rc, out, out_bytes)) {\n    free(arena);\n    return 5;\n  }\n");
  if (numerics) /* exit status 6: a node made the first NaN (or infinity) */
    buf_printf(h, "  if (ONNXC_STATUS_CODE(rc) == ONNXC_ERR_NONFINITE) {\n"
                  "    const char *op = \"?\", *node = %s_status_node(rc, &op);\n"
                  "    fprintf(stderr, \"numerics: the first %s came from node '%%s' (%%s)\\n\", node ? node : \"?\", op);\n"
                  "    free(arena);\n    return 6;\n  }\n", name, numerics == 2 ? "NaN" : "NaN or infinity");
  buf_printf(h, "  if (rc != 0) fprintf(stderr, \"%s_run returned %%d\\n\", rc);\n", name);
  /* A dynamic output: write its actual extent only, and its dims to PATH.dims. */
  for (int i = 0; i < g->n_outputs && n_dyn; i++) {
    const Value *v = g->outputs[i];
    if (!value_dyn_mask(v))
      continue;
    if (v->dt == DT_STRING) /* the count of strings to save */
      buf_printf(h, "  if (!rc) {\n    size_t n = 1, k;\n    for (k = 0; k < %d; k++) n *= (size_t)dims%d[k];\n"
                    "    if (n > out_count[%d]) rc = -1; else out_count[%d] = n;\n  }\n",
                 v->shape.rank, i, i, i);
    buf_printf(h, "  if (!rc) {\n    size_t n = %d, k;\n    char p[4200];\n    FILE *f;\n"
                  "    for (k = 0; k < %d; k++) n *= (size_t)dims%d[k];\n"
                  "    if (n > out_bytes[%d]) rc = -1; else out_bytes[%d] = n;\n"
                  "    snprintf(p, sizeof p, \"%%s.dims\", argv[1 + %d + %d]);\n    f = fopen(p, \"wb\");\n"
                  "    if (!f || fwrite(dims%d, 8, %d, f) != %d) rc = -1;\n    if (f) fclose(f);\n  }\n",
               dtype_bits(v->dt) / 8, v->shape.rank, i, i, i, g->n_inputs, i, i, v->shape.rank, v->shape.rank);
  }
  if (strs) {
    buf_puts(h, "  static const int out_str[] = {");
    for (int i = 0; i < g->n_outputs; i++)
      buf_printf(h, "%d, ", g->outputs[i]->dt == DT_STRING);
    buf_puts(h, "0};\n");
  }
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n", g->n_outputs);
  if (strs)
    buf_printf(h, "    if (out_str[i]) {\n"
                  "      if (!rc && save_strs(argv[1 + %d + i], (const char *const *)out[i], out_count[i]) != 0) rc = -1;\n"
                  "      free((unsigned char *)out[i] - OG);\n      continue;\n    }\n", g->n_inputs);
  buf_printf(h, "    FILE *f = rc ? NULL : fopen(argv[1 + %d + i], \"wb\");\n"
                "    if (!rc && (!f || fwrite(out[i], 1, out_bytes[i], f) != out_bytes[i])) rc = -1;\n"
                "    if (f) fclose(f);\n    free((unsigned char *)out[i] - OG);\n  }\n",
             g->n_inputs);
  for (int i = 0; i < g->n_inputs; i++) /* after the outputs, which may point into them */
    if (g->inputs[i]->dt == DT_STRING) {
      int64_t n = 0;
      shape_numel(&g->inputs[i]->shape, &n);
      buf_printf(h, "  free((void *)((const char **)in[%d])[%lld]);\n", i, (long long)n);
    }
  buf_printf(h, "  for (i = 0; i < %d; i++) free((void *)in[i]);\n  free(arena);\n"
                "  return rc == 0 ? 0 : rc < 0 ? 3 : 4;\n}\n", g->n_inputs);
}

/* -D NAME=LO..HI given: the model is compiled once with those dims symbolic
 * and every data set runs through NAME_run_dims (docs/dynamic-shapes.md). */
static bool has_ranges(const Options *o) {
  for (int i = 0; i < o->n_pins; i++)
    if (o->pins[i].range)
      return true;
  return false;
}

/* The harness of a model with ranges: argv holds the inputs' and outputs'
 * paths, then the dims, then each input's and output's byte count. The arena
 * is exactly NAME_arena_bytes(dims) (rounded up to 64), so a kernel that
 * strays past what the plan gives those dims is caught by --sanitize. */
static void emit_harness_dims(Buf *h, const Graph *g, const char *name, bool guard) {
  int ni = g->n_inputs, no = g->n_outputs, ns = dx_user_syms(g);
  /* red zones around each output too, with --guard: a kernel writing past this run's extent */
  emit_harness_head(h, g, name, guard);
  buf_printf(h, "int main(int argc, char **argv) {\n  const void *in[%d];\n  void *out[%d];\n  int64_t dims[%d];\n"
                "  size_t in_bytes[%d], out_bytes[%d], ab;\n  void *arena;\n  int rc, i;\n",
             ni + 1, no + 1, ns, ni + 1, no + 1);
  buf_printf(h, "  if (argc != %d) return 3;\n", 1 + 2 * (ni + no) + ns);
  buf_printf(h, "  for (i = 0; i < %d; i++) dims[i] = strtoll(argv[%d + i], NULL, 10);\n", ns, 1 + ni + no);
  buf_printf(h, "  for (i = 0; i < %d; i++) in_bytes[i] = (size_t)strtoull(argv[%d + i], NULL, 10);\n", ni,
             1 + ni + no + ns);
  buf_printf(h, "  for (i = 0; i < %d; i++) out_bytes[i] = (size_t)strtoull(argv[%d + i], NULL, 10);\n", no,
             1 + 2 * ni + no + ns);
  buf_printf(h, "  if (%s_arena_bytes(dims) < 0) { fprintf(stderr, \"%s_arena_bytes: a dim is out of range\\n\"); return 4; }\n",
             name, name);
  buf_printf(h, "  ab = ((size_t)%s_arena_bytes(dims) + 63) / 64 * 64;\n", name);
  buf_puts(h, "  arena = aligned_alloc(64, ab ? ab : 64);\n  if (!arena) return 3;\n  memset(arena, 0xA5, ab);\n");
  buf_printf(h, "  for (i = 0; i < %d; i++) in[i] = load(argv[1 + i], in_bytes[i]);\n", ni);
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    out[i] = malloc(out_bytes[i] + 2 * OG + 1);\n"
                "    if (!out[i]) return 3;\n    memset(out[i], 0xFA, out_bytes[i] + 2 * OG);\n"
                "    out[i] = (unsigned char *)out[i] + OG;\n    memset(out[i], 0xCD, out_bytes[i]);\n  }\n", no);
  buf_printf(h, "  rc = %s_run_dims_v(arena, dims, in, out);\n", name);
  if (guard)
    buf_puts(h, "  if (guard_report(arena, rc, out, out_bytes)) {\n    free(arena);\n    return 5;\n  }\n");
  buf_printf(h, "  if (rc != 0) fprintf(stderr, \"%s_run_dims returned %%d\\n\", rc);\n", name);
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    FILE *f = rc ? NULL : fopen(argv[%d + i], \"wb\");\n"
                "    if (!rc && (!f || fwrite(out[i], 1, out_bytes[i], f) != out_bytes[i])) rc = -1;\n"
                "    if (f) fclose(f);\n    free((unsigned char *)out[i] - OG);\n  }\n", no, 1 + ni);
  buf_printf(h, "  for (i = 0; i < %d; i++) free((void *)in[i]);\n  free(arena);\n"
                "  return rc == 0 ? 0 : rc < 0 ? 3 : 4;\n}\n", ni);
}

/* The dims a data set gives: each input dim that is a bare symbol sets it;
 * then every input dim must equal its extent at those values. */
static bool data_dims(const Graph *g, const DataSet *ds, int64_t *vals, Diag *d) {
  bool set[IR_MAX_SYMS] = {false};
  for (int i = 0; i < g->n_inputs && i < ds->n_in; i++) {
    const Shape *s = &g->inputs[i]->shape;
    for (int k = 0; k < s->rank && k < ds->in[i]->shape.rank; k++) {
      const DimExpr *x = s->d[k] < 0 ? s->x[k] : NULL;
      /* a bare symbol, or step * symbol (-D NAME=LO..HI:STEP) */
      if (x && x->n == 1 && x->t[0].deg == 1 && x->t[0].s[0] < dx_user_syms(g) && !set[x->t[0].s[0]]) {
        int sy = x->t[0].s[0];
        int64_t st = g->syms[sy].step > 1 ? g->syms[sy].step : 1, v = ds->in[i]->shape.d[k];
        if (x->t[0].c != st)
          continue;
        if (v % st)
          return diag_error(d, NULL, "%s: '%s' is %lld in the data, not a multiple of its step %lld", ds->dir,
                            g->syms[sy].name, (long long)v, (long long)st);
        vals[sy] = v / st;
        set[sy] = true;
      }
    }
  }
  for (int k = 0; k < dx_user_syms(g); k++) {
    if (!set[k])
      return diag_error(d, NULL, "%s: no input dim gives the value of '%s'", ds->dir, g->syms[k].name);
    int64_t st = g->syms[k].step > 1 ? g->syms[k].step : 1;
    if (vals[k] < g->syms[k].lo || vals[k] > g->syms[k].hi)
      return diag_error(d, NULL, "%s: '%s' is %lld in the data, outside its range %lld..%lld", ds->dir,
                        g->syms[k].name, (long long)(vals[k] * st), (long long)(g->syms[k].lo * st),
                        (long long)(g->syms[k].hi * st));
  }
  for (int k = dx_user_syms(g); k < g->n_syms; k++) { /* derived: floor divisions */
    int64_t v = 0;
    dx_eval(g->syms[k].num, vals, &v);
    vals[k] = v / g->syms[k].den;
  }
  for (int i = 0; i < g->n_inputs && i < ds->n_in; i++) {
    const Shape *s = &g->inputs[i]->shape;
    char sa[512], sb[512];
    bool ok = s->rank == ds->in[i]->shape.rank;
    for (int k = 0; ok && k < s->rank; k++) {
      int64_t v = s->d[k];
      ok = (s->d[k] >= 0 || dx_eval(s->x[k], vals, &v)) && v == ds->in[i]->shape.d[k];
    }
    if (!ok)
      return diag_error(d, NULL, "%s: input '%s' has shape %s, which does not fit the model's %s", ds->dir,
                        g->inputs[i]->name, shape_str(&ds->in[i]->shape, sa, sizeof sa), shape_str(s, sb, sizeof sb));
  }
  return true;
}

/* v's shape with the dims' values put in. */
static Shape shape_at(const Value *v, const int64_t *vals) {
  Shape s = v->shape;
  for (int k = 0; k < s.rank; k++)
    if (s.d[k] < 0 && s.x[k] && dx_eval(s.x[k], vals, &s.d[k])) {
      s.x[k] = NULL;
      s.sym[k] = NULL;
    }
  return s;
}

/* Test hook of guard mode (tests/e2e/test_guard.py, docs/guard.md):
 * ONNXC_GUARD_TEST_SHRINK=NAME shrinks tensor NAME's buffer by 4 bytes in the
 * plan after planning (or, for a graph output, the harness's buffer), so its
 * producer writes into a red zone and the guard must name that node. */
static void guard_test_shrink(const Graph *g, Plan *plan) {
  const char *name = getenv("ONNXC_GUARD_TEST_SHRINK");
  for (int i = 0; name && plan->redzone && i < plan->n_tensors; i++) {
    PlanTensor *t = &plan->tensors[i];
    if (t->value_id >= 0 && strcmp(g->values[t->value_id]->name, name) == 0 && t->size >= 4)
      t->size -= 4;
  }
}

/* Compile time of instrumented code is most of a sanitized conformance run.
 * -g1: line tables only, so reports still name file:line; full -g made gcc
 * 2.4x slower (variable tracking). -fno-inline: gcc inlines every node
 * function (each is called once) into NAME_run, and the instrumented whole
 * at -O3 took 4x longer than the functions apart (an attention model in
 * guard mode: 5.9 s against 1.5 s). Every access is instrumented either way. */
static const char *SAN = "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g1 -fno-inline";
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
  if (!pass_expand_inputs(g, ds->lens, ds->n_lens, d)) {
    ir_graph_free(g);
    return NULL;
  }
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
    /* Shapes come from the data; a --shape for this input must agree with it. */
    for (int k = 0; k < o->n_shapes; k++) {
      const InputShape *s = &o->shapes[k];
      Shape want = shape_make(s->rank, s->d);
      char sa[512], sb[512];
      bool agree = want.rank == ds->in[i]->shape.rank; /* a named dim (-D bounds it) takes any extent */
      for (int j = 0; agree && j < want.rank; j++)
        agree = s->sym[j][0] || want.d[j] == ds->in[i]->shape.d[j];
      if (strcmp(s->name, v->name) == 0 && !agree) {
        diag_error(d, NULL, "--shape %s=%s: the test data in %s gives input '%s' shape %s", s->name,
                   shape_str(&want, sa, sizeof sa), ds->dir, v->name,
                   shape_str(&ds->in[i]->shape, sb, sizeof sb));
        ir_graph_free(g);
        return NULL;
      }
    }
    if (!has_ranges(o))
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
  infer_string_capacity(g, o->string_bytes);
  Plan plan;
  Target target;
  codegen_target(&target, o->target, o->threads);
  target.blocked_lanes = driver_blocked_lanes(o);
  target.int8_pairs16 = driver_int8_pairs16(o, g);
  target.int8_lanes = driver_int8_lanes(o, g);
  target.int8_vnni512 = driver_int8_vnni512(o, g);
  PipelineOpts po = {.layout = o->layout, .opt_level = o->opt_level, .pins = o->pins, .n_pins = o->n_pins,
                     .dump_after = o->dump_after, .dump_to = stderr, .verify = true, .target = &target,
                     .shapes = o->shapes, .n_shapes = o->n_shapes, .guard = o->guard,
                     .precision = o->precision};
  if (!passes_run(g, &po, &plan, d)) {
    ir_graph_free(g);
    return NULL;
  }
  guard_test_shrink(g, &plan);
  /* Small weights go through the portable C form so every check also proves it
   * builds at -pedantic; large ones as an assembled blob, which the C compiler
   * does not have to parse (hundreds of MB of literals take minutes). */
  int64_t wbytes = 0;
  for (int i = 0; i < g->n_values; i++)
    if (g->values[i]->kind == VK_CONST && g->values[i]->n_uses > 0)
      wbytes += g->values[i]->konst->nbytes;
  CodegenOpts co = {.name = "model", .model_path = model, .weights = wbytes > (8 << 20) ? WEIGHTS_BLOB : WEIGHTS_C, .weights_section = NULL, .threads = target.threads,
                    .l2_bytes = o->l2_bytes, .vec_bits = driver_vector_bits(o), .conv_order = o->conv_order, .check_numerics = o->check_numerics};
  Buf objects, h;
  buf_init(&objects);
  buf_init(&h);
  char flags[512];
  snprintf(flags, sizeof flags, "%s %s", STRICT, o->sanitize ? SAN : "");
  bool cuda = o->target && strcmp(o->target, "cuda") == 0; /* docs/cuda.md */
  bool ok = cuda ? cuda_build_objects(g, &plan, o, "model", dir, flags, false, &objects, d)
                 : codegen_c(g, &plan, &co, dir, d) &&
                       driver_cc(dir, "model", o, flags, false, &objects, d);
  if (ok && cuda) {
    if (dx_user_syms(g) > 0) /* -D ranges: the dims protocol of emit_harness_dims */
      cuda_emit_harness_dims(&h, g, "model");
    else
      cuda_emit_harness(&h, g, "model", plan.arena_bytes);
    char path[4096];
    snprintf(path, sizeof path, "%s/harness.c", dir);
    ok = sys_write_file(path, h.s, h.len);
  } else if (ok && dx_user_syms(g) > 0) {
    emit_harness_dims(&h, g, "model", o->guard);
    char path[4096];
    snprintf(path, sizeof path, "%s/harness.c", dir);
    ok = sys_write_file(path, h.s, h.len);
  } else if (ok) {
    emit_harness(&h, g, "model", plan.arena_bytes, o->guard, o->check_numerics);
    char path[4096];
    snprintf(path, sizeof path, "%s/harness.c", dir);
    ok = sys_write_file(path, h.s, h.len);
  }
  buf_free(&h);
  if (ok) {
    const char *san[] = {"-std=c11", "-fsanitize=address,undefined", "-g1", NULL}, *plain[] = {"-std=c11", NULL};
    char cinc[4096], cstub[4096];
    const char *libs[] = {cinc, cstub, "-lcuda", NULL};
    if (cuda) {
      snprintf(cinc, sizeof cinc, "-I%s/include", cuda_home());
      snprintf(cstub, sizeof cstub, "-L%s/lib64/stubs", cuda_home());
    }
    ok = inproc_wanted(o) ? inproc_program(dir, "harness.c", "-std=c11", objects.s, o, d)
                          : driver_link_program(dir, "harness.c", o->sanitize ? san : plain, objects.s,
                                                cuda ? libs : NULL, target.threads, "test harness", d);
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
/* *nan_born is set when the model produced a NaN where the reference has none. */
static bool compare(const char *label, const Value *v, const Tensor *exp, const void *got, const Options *o,
                    bool *nan_born) {
  char sa[512], sb[512];
  if (exp->dt != v->dt || !shape_equal(&exp->shape, &v->shape)) {
    fprintf(stderr, "%s '%s': expected %s%s, the model produced %s%s\n", label, v->name,
            dtype_name(exp->dt), shape_str(&exp->shape, sa, sizeof sa), dtype_name(v->dt),
            shape_str(&v->shape, sb, sizeof sb));
    return false;
  }
  bool is_float = dtype_is_float(exp->dt);
  /* A float32 reference DFT/STFT has absolute errors near eps_f32 times the
   * magnitude of a whole line (a bin that should be 0 reads 2e-7), so there
   * atol grows with the largest expected magnitude. */
  double atol = o->atol;
  if (is_float && v->producer && (v->producer->op == OP_DFT || v->producer->op == OP_STFT))
    for (int64_t i = 0; i < exp->numel; i++)
      atol = fmax(atol, 1e-6 * fabs(tensor_get_f64(exp, i)));
  /* --precision bf16/fp16 without --rtol/--atol: products round their
   * operands to 8 (bf16) or 11 (fp16) significant bits, so an element's error
   * scales with the output's magnitude, not its own: rtol 2^-5 (bf16) or 2^-8
   * (fp16) of the element plus as much of the largest expected magnitude
   * (BERT-base's 12 layers in bf16 end 2% of the output's scale off, as
   * ONNX Runtime does with the same operands rounded: docs/precision.md) */
  double rtol = o->rtol;
  if (is_float && o->precision > 0 && !o->tol_set) {
    rtol = o->precision == 1 ? 1.0 / 32 : 1.0 / 256;
    for (int64_t i = 0; i < exp->numel; i++)
      atol = fmax(atol, rtol * fabs(tensor_get_f64(exp, i)));
  }
  double worst = 0, wg = 0, we = 0, max_abs = 0, max_rel = 0;
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
    if (isnan(g) && !isnan(e))
      *nan_born = true;
    if (isnan(e) || isnan(g))
      score = isnan(e) && isnan(g) ? 0 : INFINITY;
    else if (isinf(e) || isinf(g))
      score = e == g ? 0 : INFINITY;
    else if (!is_float)
      score = INFINITY;
    else
      score = fabs(g - e) / (atol + rtol * fabs(e));
    if (is_float && isfinite(e) && isfinite(g)) {
      max_abs = fmax(max_abs, fabs(g - e));
      if (fabs(e) > atol)   /* relative error of elements above the noise floor */
        max_rel = fmax(max_rel, fabs(g - e) / fabs(e));
    }
    if (score > 1)
      bad++;
    if (score > worst || (wi < 0 && score > 1)) {
      worst = score;
      wi = i;
      wg = g;
      we = e;
    }
  }
  if (o->verbose && is_float)   /* -v: the error figures (tests/models/real_models.py reads them) */
    printf("%s '%s': max abs err %.3g, max rel err %.3g over %lld elements\n", label, v->name, max_abs,
           max_rel, (long long)exp->numel);
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
          label, v->name, (long long)bad, (long long)exp->numel, idx, wg, we, fabs(wg - we), rtol, atol);
  return false;
}

/* Compares a string output (the harness wrote its strings NUL-terminated,
 * one after another) exactly with the expected strings. */
static bool compare_strings(const char *label, const Value *v, const Tensor *exp, const Buf *got) {
  char sa[512], sb[512];
  if (exp->dt != v->dt || !shape_equal(&exp->shape, &v->shape)) {
    fprintf(stderr, "%s '%s': expected %s%s, the model produced %s%s\n", label, v->name,
            dtype_name(exp->dt), shape_str(&exp->shape, sa, sizeof sa), dtype_name(v->dt),
            shape_str(&v->shape, sb, sizeof sb));
    return false;
  }
  size_t at = 0;
  int64_t bad = 0, first = -1;
  const char *fg = NULL;
  for (int64_t i = 0; i < exp->numel; i++) {
    const char *e = ((char *const *)exp->data)[i];
    if (at >= got->len || !memchr(got->s + at, 0, got->len - at)) {
      fprintf(stderr, "%s '%s': the run wrote %lld strings, expected %lld\n", label, v->name, (long long)i,
              (long long)exp->numel);
      return false;
    }
    const char *s = got->s + at;
    at += strlen(s) + 1;
    if (strcmp(s, e) != 0 && bad++ == 0) {
      first = i;
      fg = s;
    }
  }
  if (bad == 0)
    return true;
  fprintf(stderr, "%s '%s': %lld of %lld strings differ; first at flat index %lld: got \"%s\", expected \"%s\"\n",
          label, v->name, (long long)bad, (long long)exp->numel, (long long)first, fg,
          ((char *const *)exp->data)[first]);
  return false;
}

/* check --save-outputs DIR: output i of data set ds as DIR/SET/output_i.pb
 * (SET: the data set folder's name), for tools that look at the values
 * themselves (tests/diff/run_diff.py's float64 referee). */
static bool save_output(const Options *o, const DataSet *ds, int i, const Value *v, const Buf *got) {
  const char *set = strrchr(ds->dir, '/');
  set = set ? set + 1 : ds->dir;
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/%s", o->save_outputs, set);
  if ((mkdir(o->save_outputs, 0777) != 0 && errno != EEXIST) || (mkdir(dir, 0777) != 0 && errno != EEXIST)) {
    fprintf(stderr, "onnxc check: cannot create %s: %s\n", dir, strerror(errno));
    return false;
  }
  snprintf(path, sizeof path, "%s/output_%d.pb", dir, i);
  Diag d;
  diag_init(&d, path, stderr);
  bool ok = fe_tensor_save(path, v->name, v->dt, &v->shape, got->s, got->len, &d);
  diag_free(&d);
  return ok;
}

/* vals: the dims of a model with ranges (data_dims), else NULL. */
static int run_set(const char *dir, const Graph *g, const DataSet *ds, const bool *bound, const Options *o,
                   const int64_t *vals, bool *nan_born) {
  char *argv[4 * MAX_IO + IR_MAX_SYMS + 2];
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
    Buf strs; /* a string tensor: its strings, each NUL-terminated */
    buf_init(&strs);
    for (int64_t k = 0; ds->in[i]->dt == DT_STRING && k < ds->in[i]->numel; k++)
      buf_write(&strs, ((char *const *)ds->in[i]->data)[k], strlen(((char *const *)ds->in[i]->data)[k]) + 1);
    bool wrote = ds->in[i]->dt == DT_STRING ? sys_write_file(p, strs.s ? strs.s : "", strs.len)
                                            : sys_write_file(p, ds->in[i]->data, (size_t)ds->in[i]->nbytes);
    buf_free(&strs);
    if (!wrote) {
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
  int n_paths = n;   /* argv[n_paths - n_outputs ...] are the outputs */
  if (vals) {        /* emit_harness_dims: the dims, then the byte counts */
    char num[32];
    for (int k = 0; k < dx_user_syms(g); k++) {
      /* the user's units: a dim with a step is held as dim / step */
      snprintf(num, sizeof num, "%lld", (long long)(vals[k] * (g->syms[k].step > 1 ? g->syms[k].step : 1)));
      argv[n++] = strdup(num);
    }
    for (int i = 0; i < ds->n_in; i++) {
      snprintf(num, sizeof num, "%lld", (long long)ds->in[i]->nbytes);
      argv[n++] = strdup(num);
    }
    for (int i = 0; i < g->n_outputs; i++) {
      Shape at = shape_at(g->outputs[i], vals);
      int64_t count = 0, bytes = 0;
      if (!shape_numel(&at, &count) || !dtype_bytes(g->outputs[i]->dt, count, &bytes))
        bytes = 0;
      snprintf(num, sizeof num, "%lld", (long long)bytes);
      argv[n++] = strdup(num);
    }
  }
  argv[n] = NULL;
  Buf log;
  buf_init(&log);
  int rc = driver_run_program(argv, &log);
  int status = 0;
  if (rc == 5 && log.s && strncmp(log.s, "guard: ", 7) == 0) { /* --guard: a red zone was hit */
    fprintf(stderr, "%s", log.s);
    status = 1;
  } else if (rc == 6 && log.s && strncmp(log.s, "numerics: ", 10) == 0) { /* --check-numerics */
    fprintf(stderr, "%s: %s", ds->dir, log.s);
    status = 1;
  } else if (rc != 0) {
    fprintf(stderr, "%s: the generated code failed (status %d):\n%s", ds->dir, rc, log.s ? log.s : "");
    status = 1;
  }
  /* --save-outputs: every output is saved (and compared) even after a mismatch */
  bool ran = status == 0;
  for (int i = 0; (status == 0 || (ran && o->save_outputs)) && i < g->n_outputs; i++) {
    Buf got;
    buf_init(&got);
    Value actual = *g->outputs[i]; /* a dynamic output: shaped by the dims it reported */
    if (vals)
      actual.shape = shape_at(g->outputs[i], vals);
    if (value_dyn_mask(g->outputs[i])) {
      char p[4200], sa[512], sb[512];
      snprintf(p, sizeof p, "%s.dims", argv[n_paths - g->n_outputs + i]);
      bool ok = sys_read_file(p, &got) && got.len == (size_t)actual.shape.rank * sizeof(int64_t);
      for (int k = 0; ok && k < actual.shape.rank; k++)
        memcpy(&actual.shape.d[k], got.s + 8 * k, 8);
      got.len = 0;
      if (!ok || !shape_equal(&actual.shape, &ds->out[i]->shape)) {
        fprintf(stderr, "%s: output %d '%s' reported dims %s, expected %s\n", ds->dir, i, actual.name,
                ok ? shape_str(&actual.shape, sa, sizeof sa) : "(none)",
                shape_str(&ds->out[i]->shape, sb, sizeof sb));
        status = 1;
        buf_free(&got);
        break;
      }
    }
    if (actual.dt == DT_STRING) {
      char label[4200];
      snprintf(label, sizeof label, "%s: output %d", ds->dir, i);
      if (!sys_read_file(argv[n_paths - g->n_outputs + i], &got) || !compare_strings(label, &actual, ds->out[i], &got))
        status = 1;
      buf_free(&got);
      continue;
    }
    if (o->save_outputs && sys_read_file(argv[n_paths - g->n_outputs + i], &got) &&
        (int64_t)got.len == ds->out[i]->nbytes && !save_output(o, ds, i, &actual, &got))
      status = 1;
    got.len = 0;
    if (!sys_read_file(argv[n_paths - g->n_outputs + i], &got) || (int64_t)got.len != ds->out[i]->nbytes) {
      fprintf(stderr, "%s: output %d '%s' has %zu bytes, expected %lld\n", ds->dir, i,
              g->outputs[i]->name, got.len, (long long)ds->out[i]->nbytes);
      status = 1;
    } else {
      char label[4200];
      snprintf(label, sizeof label, "%s: output %d", ds->dir, i);
      if (!compare(label, &actual, ds->out[i], got.s, o, nan_born))
        status = 1;
    }
    buf_free(&got);
  }
  buf_free(&log);
  for (int i = 1; i < n; i++)
    free(argv[i]);
  return status;
}

/* A NaN the reference does not have: the model is built again with
 * --check-numerics=nan and run on the same data, and the harness names the
 * node whose output held the first NaN (docs/numerics.md). */
static void locate_nan(const char *model, const DataSet *ds, const Options *o) {
  fprintf(stderr, "%s: the model produced NaN where the reference has none; "
                  "building with --check-numerics=nan to find the node\n", ds->dir);
  Options on = *o;
  on.check_numerics = 2;
  char *dir = sys_mkdtemp("check");
  bool bound[MAX_IO] = {false};
  Diag d;
  diag_init(&d, model, NULL);
  Graph *g = dir ? build_runner(model, ds, &on, dir, false, bound, &d) : NULL;
  bool nan_again = false;
  if (g && run_set(dir, g, ds, bound, &on, NULL, &nan_again) == 0)
    fprintf(stderr, "%s: no NaN with the checks compiled in (the NaN depends on the build)\n", ds->dir);
  else if (!g)
    fprintf(stderr, "%s: the checked build failed: %s\n", ds->dir, diag_last(&d));
  ir_graph_free(g);
  diag_free(&d);
  if (dir) {
    sys_rmtree(dir);
    free(dir);
  }
}

int check_run_inputs(const char *model, Tensor *const *in, int n_in, const Options *o, const char *out_dir) {
  DataSet *ds = calloc(1, sizeof *ds);
  char *dir = sys_mkdtemp("run");
  bool bound[MAX_IO] = {false};
  Diag d;
  diag_init(&d, model, stderr);
  IR_ASSERT(ds && n_in <= MAX_IO);
  ds->dir = (char *)out_dir;
  ds->n_in = n_in;
  for (int i = 0; i < n_in; i++)
    ds->in[i] = in[i];
  Graph *g = dir ? build_runner(model, ds, o, dir, false, bound, &d) : NULL;
  int rc = g ? 0 : 1;
  for (int i = 0; g && i < g->n_inputs + g->n_outputs; i++)
    if ((i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs])->dt == DT_STRING) {
      diag_error(&d, NULL, "run: string inputs and outputs are not supported yet (onnxc check handles them)");
      rc = 1;
      break;
    }
  char *argv[2 * MAX_IO + 2] = {NULL};
  int n = 0;
  if (rc == 0) {
    char p[4200];
    snprintf(p, sizeof p, "%s/runner", dir);
    argv[n++] = strdup(p);
    for (int i = 0; i < n_in && rc == 0; i++) {
      snprintf(p, sizeof p, "%s/in%d.bin", dir, i);
      argv[n++] = strdup(p);
      if (!sys_write_file(p, in[i]->data, (size_t)in[i]->nbytes)) {
        diag_error(&d, NULL, "cannot write %s", p);
        rc = 1;
      }
    }
    for (int i = 0; i < g->n_outputs; i++) {
      snprintf(p, sizeof p, "%s/out%d.bin", dir, i);
      argv[n++] = strdup(p);
    }
  }
  if (rc == 0) {
    Buf log;
    buf_init(&log);
    int st = driver_run_program(argv, &log);
    if (log.len)
      fprintf(stderr, "%.*s", (int)log.len, log.s);
    if (st != 0) {
      diag_error(&d, NULL, "the generated code failed (status %d)", st);
      rc = 1;
    }
    buf_free(&log);
  }
  for (int i = 0; rc == 0 && i < g->n_outputs; i++) {
    Value v = *g->outputs[i];
    Buf got;
    buf_init(&got);
    char p[4200], name[256];
    if (v.dyn_dims) { /* its dims, then its actual extent */
      snprintf(p, sizeof p, "%s.dims", argv[n - g->n_outputs + i]);
      if (!sys_read_file(p, &got) || got.len != (size_t)v.shape.rank * 8)
        rc = 1;
      for (int k = 0; rc == 0 && k < v.shape.rank; k++)
        memcpy(&v.shape.d[k], got.s + 8 * k, 8);
      got.len = 0;
    }
    size_t k = 0;
    for (const char *c = v.name; *c && k + 1 < sizeof name; c++, k++)
      name[k] = (*c == '/' || *c == '\\' || (*c == '.' && k == 0)) ? '_' : *c;
    name[k] = 0;
    snprintf(p, sizeof p, "%s/%s.npy", out_dir, name);
    if (rc != 0 || !sys_read_file(argv[n - g->n_outputs + i], &got) ||
        !run_npy_save(p, v.dt, &v.shape, got.s, got.len, &d))
      rc = 1;
    else
      printf("%s\n", p);
    buf_free(&got);
  }
  for (int i = 0; i < n; i++)
    free(argv[i]);
  ir_graph_free(g);
  diag_free(&d);
  if (dir) {
    if (o->keep_temps)
      fprintf(stderr, "onnxc run: kept %s\n", dir);
    else
      sys_rmtree(dir);
    free(dir);
  }
  free(ds);
  return rc;
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
  /* The model's input and output types say how to read sequence and
   * optional test data; when it does not load, build_runner reports why. */
  Diag quiet;
  diag_init(&quiet, model, NULL);
  Graph *types = fe_onnx_load(model, &quiet);
  diag_free(&quiet);
  for (int s = 0; s < n_sets && status == 0; s++) {
    size_t len = strlen(case_dir) + strlen(names[s]) + 2;
    sets[s].dir = malloc(len);
    snprintf(sets[s].dir, len, "%s/%s", case_dir, names[s]);
    sets[s].n_in = load_tensors(scratch, sets[s].dir, "input", sets[s].in, types ? (const Value *const *)types->inputs : NULL,
                                types ? types->n_inputs : 0, sets[s].lens, &sets[s].n_lens, &d);
    sets[s].n_out = load_tensors(scratch, sets[s].dir, "output", sets[s].out, types ? (const Value *const *)types->outputs : NULL,
                                 types ? types->n_outputs : 0, NULL, NULL, &d);
    if (sets[s].n_in < 0 || sets[s].n_out < 0)
      status = 2;
  }
  ir_graph_free(types);   /* the data is read: free the weights before compiling */

  char *dir = NULL;
  Graph *g = NULL;
  int built_for = -1;
  bool bound[MAX_IO] = {false};
  for (int s = 0; s < n_sets && status != 2; s++) {
    if (built_for < 0 || (!has_ranges(o) && !same_input_shapes(&sets[built_for], &sets[s]))) {
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
      if (!g && dir && !has_ranges(o) && has_small_int_input(&sets[s])) {
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
    bool nan_born = false;
    int64_t vals[IR_MAX_SYMS];
    if (dx_user_syms(g) > 0 && !data_dims(g, &sets[s], vals, &d)) {
      status = 2;
      break;
    }
    int rc = o->build_only ? 0 : run_set(dir, g, &sets[s], bound, o, dx_user_syms(g) > 0 ? vals : NULL, &nan_born);
    if (rc == 1 && nan_born && !o->check_numerics && !(o->target && strcmp(o->target, "cuda") == 0))
      locate_nan(model, &sets[s], o);
    if (rc > status)
      status = rc;
  }
  if (status == 0 && o->verbose)
    printf(o->build_only ? "%s: built for %d data set(s), not run (--build-only)\n" : "%s: %d data set(s) match\n",
           case_dir, n_sets);
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
