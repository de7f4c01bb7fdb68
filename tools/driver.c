/* driver.c - from a model path to sources or a built library.
 *
 * driver_compile runs frontend and middle-end; driver_build writes the C
 * sources into a private temporary folder, runs the system C compiler there,
 * and only then moves the result to the requested path, so a failed build
 * never leaves a partial output behind.
 */
#include "tools.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An argument vector; words split from strings ($CC may be "ccache gcc -m32")
 * point into copies the Argv owns and argv_free releases. */
typedef struct Argv {
  char *v[64];
  int n;
  char *owned[8];
  int n_owned;
} Argv;

static void arg(Argv *a, const char *s) {
  IR_ASSERT(a->n < 63);
  a->v[a->n++] = (char *)s;
  a->v[a->n] = NULL;
}

static void arg_words(Argv *a, const char *words) {
  if (!words)
    return;
  IR_ASSERT(a->n_owned < 8);
  char *s = strdup(words);
  IR_ASSERT(s);
  a->owned[a->n_owned++] = s;
  for (char *t = strtok(s, " \t"); t; t = strtok(NULL, " \t"))
    arg(a, t);
}

static void arg_cc(Argv *a) { arg_words(a, sys_cc()); }

static void argv_free(Argv *a) {
  for (int i = 0; i < a->n_owned; i++)
    free(a->owned[i]);
  a->n_owned = 0;
}

const char *driver_default_name(const char *model, char *buf, size_t n) {
  const char *base = strrchr(model, '/');
  base = base ? base + 1 : model;
  size_t k = 0;
  if (isdigit((unsigned char)*base) && k + 1 < n)
    buf[k++] = 'm';
  for (const char *s = base; *s && k + 1 < n; s++) {
    if (strcmp(s, ".onnx") == 0)
      break;
    buf[k++] = isalnum((unsigned char)*s) ? (char)tolower((unsigned char)*s) : '_';
  }
  buf[k] = 0;
  if (k == 0)
    snprintf(buf, n, "model");
  return buf;
}

Graph *driver_compile(const Options *o, Plan *plan, Diag *d) {
  Graph *g = fe_onnx_load(o->model, d);
  if (!g)
    return NULL;
  if (!pass_expand_inputs(g, o->elems, o->n_elems, d)) {
    ir_graph_free(g);
    return NULL;
  }
  infer_string_capacity(g, o->string_bytes);
  Target t;
  codegen_target(&t, o->target, o->threads);
  t.blocked_lanes = driver_blocked_lanes(o);
  t.int8_pairs16 = driver_int8_pairs16(o, g);
  t.int8_lanes = driver_int8_lanes(o, g);
  t.int8_vnni512 = driver_int8_vnni512(o, g);
  PipelineOpts po = {.layout = o->layout, .opt_level = o->opt_level, .pins = o->pins, .n_pins = o->n_pins,
                     .dump_after = o->dump_after, .dump_to = stderr, .verify = o->verify_ir, .target = &t,
                     .shapes = o->shapes, .n_shapes = o->n_shapes, .guard = o->guard, .precision = o->precision,
                     .progress = o->progress ? progress_pass : NULL, .progress_user = o->progress};
  if (!passes_run(g, &po, plan, d)) {
    ir_graph_free(g);
    return NULL;
  }
  return g;
}

/* Generated kernels have constant trip counts that gcc's -O2 cost model
 * declines to vectorize, so the default level already asks for -O3. */
static const char *opt_flag(int level) {
  static const char *const flags[] = {"-O0", "-O1", "-O3", "-O3"};
  return flags[level < 0 ? 0 : level > 3 ? 3 : level];
}

/* The -march flag for code built for this machine (--cpu; default native, so
 * the generated GEMM takes its AVX-512 or AVX2 path where the CPU has it), or
 * NULL: for --cpu generic, or when $CC looks like a cross compiler (a target
 * triple such as arm-none-eabi-gcc) or $CC / ONNXC_CFLAGS already choose an
 * -march or -mcpu. The portable path needs no flag. */
static const char *march_flag(const Options *o, char *buf, size_t n) {
  const char *cpu = o->cpu ? o->cpu : "native";
  if (strcmp(cpu, "generic") == 0)
    return NULL;
  const char *cc = sys_cc(), *cflags = getenv("ONNXC_CFLAGS");
  const char *end = cc + strcspn(cc, " \t"), *base = cc;
  for (const char *s = cc; s < end; s++)
    if (*s == '/')
      base = s + 1;
  int dashes = 0;
  for (const char *s = base; s < end; s++)
    dashes += *s == '-';
  if (dashes >= 2 || strstr(cc, "-march=") || strstr(cc, "-mcpu=") ||
      (cflags && (strstr(cflags, "-march=") || strstr(cflags, "-mcpu="))))
    return NULL;
  snprintf(buf, n, "-march=%s", cpu);
  return buf;
}

/* The widest vector form the host-built code compiles for (the flags the
 * build takes: the -march of --cpu, or one in $CC / ONNXC_CFLAGS): 512 for
 * AVX-512F, 256 for AVX2 with FMA, 0 otherwise (a cross compiler, another
 * architecture). The compiler's own answer (`cc -dM -E`), asked once per
 * process and set of flags. */
typedef struct CcVec {
  int bits;  /* 512, 256 or 0 as above */
  bool vnni; /* __AVX512VNNI__ or __AVXVNNI__: exact u8 x s8 dot products in 32 bits */
  bool vnni512; /* __AVX512VNNI__ with AVX-512F */
  bool amx;  /* __AMX_INT8__ and __AMX_TILE__ */
} CcVec;

static CcVec cc_vector(const Options *o) {
  char march[128], key[600];
  const char *m = march_flag(o, march, sizeof march), *cf = getenv("ONNXC_CFLAGS");
  snprintf(key, sizeof key, "%s|%s|%s", sys_cc(), m ? m : "", cf ? cf : "");
  static char asked[600];
  static CcVec answer;
  static bool have;
  if (have && strcmp(asked, key) == 0)
    return answer;
  snprintf(asked, sizeof asked, "%s", key);
  have = true;
  answer.bits = 0;
  answer.vnni = answer.vnni512 = answer.amx = false;
  Argv a = {{0}, 0, {0}, 0};
  arg_cc(&a);
  if (m)
    arg(&a, m);
  arg_words(&a, cf);
  arg(&a, "-dM");
  arg(&a, "-E");
  arg(&a, "-x");
  arg(&a, "c");
  arg(&a, "/dev/null");
  Buf log;
  buf_init(&log);
  if (sys_run(a.v, &log) == 0 && log.s) {
    if (strstr(log.s, "#define __AVX512F__ "))
      answer.bits = 512;
    else if (strstr(log.s, "#define __AVX2__ ") && strstr(log.s, "#define __FMA__ "))
      answer.bits = 256;
    answer.vnni = strstr(log.s, "#define __AVX512VNNI__ ") || strstr(log.s, "#define __AVXVNNI__ ");
    answer.vnni512 = answer.bits == 512 && strstr(log.s, "#define __AVX512VNNI__ ");
    answer.amx = strstr(log.s, "#define __AMX_INT8__ ") && strstr(log.s, "#define __AMX_TILE__ ");
  }
  buf_free(&log);
  argv_free(&a);
  return answer;
}

/* whether the build is for a known CPU: sources (-S) are built elsewhere,
 * often for firmware, so only when --cpu names the CPU they are for; `onnxc
 * footprint` builds with its own (cross) compiler, for a microcontroller */
static bool host_cpu_known(const Options *o) {
  return !(o->triple || o->footprint || (o->kind == OUT_SRC && !o->cpu));
}

int driver_vector_bits(const Options *o) {
  return strcmp(o->target, "c") == 0 && host_cpu_known(o) ? cc_vector(o).bits : 0;
}

/* Whether the int8 kernels' build facts matter: the C target for a known
 * CPU, and a graph with QDQ groups (no compiler run for the others). */
static bool int8_host(const Options *o, const Graph *g) {
  if (strcmp(o->target, "c") != 0 || !host_cpu_known(o))
    return false;
  for (const Node *n = g->first; n; n = n->next)
    if (n->op == OP_DequantizeLinear || n->op == OP_MatMulInteger || n->op == OP_ConvInteger)
      return true;
  return false;
}

bool driver_int8_pairs16(const Options *o, const Graph *g) {
  /* AVX2 (or AVX-512 without VNNI, whose int8 kernels take the AVX2 form):
   * the int8 conv tile adds pairs of products in 16 bits (fuse_quant.c) */
  if (!int8_host(o, g))
    return false;
  CcVec v = cc_vector(o);
  return v.bits != 0 && !v.vnni;
}

bool driver_int8_vnni512(const Options *o, const Graph *g) {
  /* AVX-512 VNNI: quantize_dynamic's MatMulInteger / ConvInteger take the
   * lanes kernels (fuse_qmatmul.c) */
  return int8_host(o, g) && cc_vector(o).vnni512;
}

bool driver_int8_lanes(const Options *o, const Graph *g) {
  /* AVX-512 VNNI without AMX: int8 convs may take the output channels as the
   * vector lanes (fuse_quant.c); AMX tiles want the other layout */
  if (!int8_host(o, g))
    return false;
  CcVec v = cc_vector(o);
  return v.vnni512 && !v.amx;
}

int driver_blocked_lanes(const Options *o) {
  if (strcmp(o->target, "c") != 0 || o->layout == 1)
    return 0;
  if (o->layout == 2)
    return 16;
  if (!host_cpu_known(o))
    return 0;
  /* AVX-512: 16-lane vectors; AVX2 with FMA: the same blocks as two 8-lane
   * vectors (the tile kernel's AVX2 form, codegen/emit_blocked.c) */
  return cc_vector(o).bits ? 16 : 0;
}

static bool cc_one(const char *dir, const char *src, const char *obj, const Options *o,
                   const char *extra, bool pic, Diag *d) {
  char what[600];
  snprintf(what, sizeof what, "C compiler: %s", src);
  progress_show(o->progress, what, 0, 0);
  Argv a = {{0}, 0, {0}, 0};
  char in[4096], out[4096], inc[4096], march[128];
  snprintf(in, sizeof in, "%s/%s", dir, src);
  snprintf(out, sizeof out, "%s/%s", dir, obj);
  snprintf(inc, sizeof inc, "-I%s", dir);
  arg_cc(&a);
  arg(&a, "-std=c99");
  arg(&a, opt_flag(o->opt_level));
  if (march_flag(o, march, sizeof march))
    arg(&a, march);
  arg(&a, inc);
  if (pic) {
    arg(&a, "-fPIC");
    arg(&a, "-fvisibility=hidden");
  }
  if (o->threads > 1)
    arg(&a, "-pthread");
  arg_words(&a, extra);
  arg_words(&a, getenv("ONNXC_CFLAGS"));
  arg(&a, "-c");
  arg(&a, in);
  arg(&a, "-o");
  arg(&a, out);
  Buf log;
  buf_init(&log);
  int rc = sys_run_ticking(a.v, &log, o->progress ? progress_tick : NULL, o->progress);
  argv_free(&a);
  if (rc != 0) {
    diag_error(d, NULL, "the C compiler (%s) failed on %s (status %d):\n%s", sys_cc(), src, rc,
               log.s ? log.s : "");
    buf_free(&log);
    return false;
  }
  buf_free(&log);
  return true;
}

bool driver_cc(const char *dir, const char *name, const Options *o, const char *extra, bool pic,
               Buf *objects, Diag *d) {
  if (inproc_wanted(o))
    return inproc_cc(dir, name, o, extra, pic, objects, d);
  char src[512], obj[512], wpath[4096];
  snprintf(src, sizeof src, "%s.c", name);
  snprintf(obj, sizeof obj, "%s.o", name);
  if (!cc_one(dir, src, obj, o, extra, pic, d))
    return false;
  buf_printf(objects, "%s/%s\n", dir, obj);
  snprintf(wpath, sizeof wpath, "%s/%s_weights.S", dir, name);
  snprintf(src, sizeof src, access(wpath, F_OK) == 0 ? "%s_weights.S" : "%s_weights.c", name);
  snprintf(obj, sizeof obj, "%s_weights.o", name);
  if (!cc_one(dir, src, obj, o, extra, pic, d))
    return false;
  buf_printf(objects, "%s/%s\n", dir, obj);
  return true;
}

bool driver_link_program(const char *dir, const char *main_src, const char *const *flags, const char *objects,
                         const char *const *libs, int threads, const char *what, Diag *d) {
  char *argv[96], *cc = strdup(sys_cc()), *objs = strdup(objects ? objects : "");
  char inc[4096], src[4096], runner[4096];
  IR_ASSERT(cc && objs);
  int n = 0;
  for (char *t = strtok(cc, " \t"); t && n < 40; t = strtok(NULL, " \t"))
    argv[n++] = t;
  snprintf(inc, sizeof inc, "-I%s", dir);
  snprintf(src, sizeof src, "%s/%s", dir, main_src);
  snprintf(runner, sizeof runner, "%s/runner", dir);
  for (int i = 0; flags && flags[i] && n < 50; i++)
    argv[n++] = (char *)flags[i];
  argv[n++] = inc;
  argv[n++] = src;
  for (char *t = strtok(objs, "\n"); t && n < 80; t = strtok(NULL, "\n"))
    argv[n++] = t;
  for (int i = 0; libs && libs[i] && n < 88; i++)
    argv[n++] = (char *)libs[i];
  argv[n++] = "-lm";
  if (threads > 1)
    argv[n++] = "-pthread";
  argv[n++] = "-o";
  argv[n++] = runner;
  argv[n] = NULL;
  Buf log;
  buf_init(&log);
  bool ok = sys_run(argv, &log) == 0;
  if (!ok)
    diag_error(d, NULL, "building the %s failed:\n%s", what, log.s ? log.s : "");
  buf_free(&log);
  free(objs);
  free(cc);
  return ok;
}

/* Writes sources into dir; the blob form of the weights when `blob`. */
static bool generate(const Graph *g, const Plan *plan, const Options *o, const char *name,
                     const char *dir, bool blob, Diag *d) {
  CodegenOpts co = {.name = name, .model_path = o->model, .weights = blob ? WEIGHTS_BLOB : WEIGHTS_C, .weights_section = o->weights_section, .threads = o->threads, .l2_bytes = o->l2_bytes, .vec_bits = driver_vector_bits(o), .conv_order = o->conv_order,
                    .check_numerics = o->check_numerics, .profile = o->profile,
                    .progress = o->progress ? progress_kernels : NULL, .progress_user = o->progress};
  return codegen_c(g, plan, &co, dir, d);
}

/* Moves every file of `from` into `to` (created if needed). */
static bool move_sources(const char *from, const char *to, const char *name, Diag *d) {
  if (mkdir(to, 0777) != 0 && errno != EEXIST)
    return diag_error(d, NULL, "cannot create %s: %s", to, strerror(errno));
  const char *files[] = {"%s.c", "%s.h", "%s_weights.c", "%s_weights.h", "onnxc_rt.h", "onnxc_image.h"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char f[512], src[4096], dst[4096];
    snprintf(f, sizeof f, files[i], name);
    snprintf(src, sizeof src, "%s/%s", from, f);
    snprintf(dst, sizeof dst, "%s/%s", to, f);
    if (strcmp(files[i], "onnxc_image.h") == 0 && access(src, F_OK) != 0)
      continue; /* written only for models that use ImageDecoder */
    if (rename(src, dst) != 0 && !sys_copy_file(src, dst))
      return diag_error(d, NULL, "cannot write %s: %s", dst, strerror(errno));
  }
  return true;
}

/* The in-process build made one object: a .o is that object, a .a wraps it,
 * a .so is linked by the system linker (inproc.c). */
static bool inproc_output(const Options *o, const char *name, const Buf *objects, const char *tmp_out, Diag *d) {
  char obj[4096];
  snprintf(obj, sizeof obj, "%.*s", (int)strcspn(objects->s, "\n"), objects->s);
  if (o->kind == OUT_SO) {
    if (o->triple)
      return diag_error(d, NULL, "--triple builds a .o or a .a (a cross shared library needs that target's linker)");
    return inproc_link_so(o, obj, tmp_out, d);
  }
  if (o->kind == OUT_O)
    return sys_copy_file(obj, tmp_out) || diag_error(d, NULL, "cannot write %s: %s", tmp_out, strerror(errno));
  Buf bytes;
  buf_init(&bytes);
  char member[300];
  snprintf(member, sizeof member, "%s.o", name);
  bool ok = sys_read_file(obj, &bytes) ? ar_write_one(tmp_out, member, bytes.s, bytes.len, d)
                                       : diag_error(d, NULL, "cannot read %s", obj);
  buf_free(&bytes);
  return ok;
}

static bool link_output(const Options *o, const char *dir, const Buf *objects, const char *tmp_out, Diag *d) {
  Argv a = {{0}, 0, {0}, 0};
  char *list = strdup(objects->s);
  IR_ASSERT(list);
  if (o->kind == OUT_SO) {
    arg_cc(&a);
    arg(&a, "-shared");
    arg(&a, "-o");
    arg(&a, tmp_out);
    for (char *t = strtok(list, "\n"); t; t = strtok(NULL, "\n"))
      arg(&a, t);
    arg(&a, "-lm");
    if (o->threads > 1)
      arg(&a, "-pthread");
  } else if (o->kind == OUT_A) {
    const char *ar = getenv("AR");
    arg(&a, ar && *ar ? ar : "ar");
    arg(&a, "rcs");
    arg(&a, tmp_out);
    for (char *t = strtok(list, "\n"); t; t = strtok(NULL, "\n"))
      arg(&a, t);
  } else {
    /* One relocatable object holding code and weights. */
    arg_cc(&a);
    arg(&a, "-r");
    arg(&a, "-nostdlib");
    arg(&a, "-o");
    arg(&a, tmp_out);
    for (char *t = strtok(list, "\n"); t; t = strtok(NULL, "\n"))
      arg(&a, t);
  }
  (void)dir;
  Buf log;
  buf_init(&log);
  int rc = sys_run(a.v, &log);
  argv_free(&a);
  free(list);
  if (rc != 0)
    diag_error(d, NULL, "linking %s failed (status %d):\n%s", o->out, rc, log.s ? log.s : "");
  buf_free(&log);
  return rc == 0;
}

bool driver_build(const Options *o, Diag *d) {
  Plan plan;
  Graph *g = driver_compile(o, &plan, d);
  if (!g)
    return false;
  char nbuf[256];
  const char *name = o->name ? o->name : driver_default_name(o->model, nbuf, sizeof nbuf);
  bool ok = !o->memory_report || driver_memory_report(g, &plan, o->memory_report, d);
  ok = ok && (!o->memory_svg || driver_memory_svg(g, &plan, o->memory_svg, d));
  ok = ok && (!o->fusion_report || driver_fusion_report(g, &plan, o->fusion_report, d));
  char *dir = ok ? sys_mkdtemp("build") : NULL;
  if (ok && !dir)
    ok = diag_error(d, NULL, "cannot create a temporary folder: %s", strerror(errno));
  if (ok && o->target && strcmp(o->target, "cuda") == 0) {
    ok = cuda_driver_build(g, &plan, o, name, dir, d);
  } else if (ok && o->kind == OUT_SRC) {
    ok = generate(g, &plan, o, name, dir, false, d) && move_sources(dir, o->out, name, d);
  } else if (ok) {
    /* Blob weights assemble in no time; in "auto" mode fall back to C weights
     * when the assembler does not take them (non-ELF toolchains). */
    const char *form = o->weights_form ? o->weights_form : "auto";
    bool blob = strcmp(form, "c") != 0, fallback = strcmp(form, "auto") == 0;
    Buf objects;
    buf_init(&objects);
    Diag quiet;
    diag_init(&quiet, d->file, NULL);
    ok = generate(g, &plan, o, name, dir, blob, d);
    if (ok)
      ok = driver_cc(dir, name, o, NULL, true, &objects, blob && fallback ? &quiet : d);
    if (!ok && blob && fallback && d->n_errors == 0) {
      char wpath[4096];
      snprintf(wpath, sizeof wpath, "%s/%s_weights.S", dir, name);
      unlink(wpath);
      buf_free(&objects);
      buf_init(&objects);
      ok = generate(g, &plan, o, name, dir, false, d) && driver_cc(dir, name, o, NULL, true, &objects, d);
    }
    diag_free(&quiet);
    char tmp_out[4096];
    snprintf(tmp_out, sizeof tmp_out, "%s.tmp%ld", o->out, (long)getpid());
    if (ok)
      ok = inproc_wanted(o) ? inproc_output(o, name, &objects, tmp_out, d) : link_output(o, dir, &objects, tmp_out, d);
    if (ok && rename(tmp_out, o->out) != 0)
      ok = diag_error(d, NULL, "cannot write %s: %s", o->out, strerror(errno));
    if (!ok)
      unlink(tmp_out);
    buf_free(&objects);
  }
  if (dir) {
    if (o->keep_temps)
      fprintf(stderr, "onnxc: kept temporary files in %s\n", dir);
    else
      sys_rmtree(dir);
    free(dir);
  }
  if (!ok && o->memory_report)
    unlink(o->memory_report);
  if (!ok && o->memory_svg)
    unlink(o->memory_svg);
  if (!ok && o->fusion_report)
    unlink(o->fusion_report);
  ir_graph_free(g);
  return ok;
}
