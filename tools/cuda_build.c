/* cuda_build.c - the CUDA target's build: NVRTC at onnxc compile time.
 *
 * codegen_cuda writes NAME.cu (kernels), NAME.c (host code on the CUDA driver
 * API), NAME.h and the weights. Here NVRTC, loaded with dlopen so that onnxc
 * itself runs without the toolkit, compiles NAME.cu once per --cuda-arch to a
 * cubin and once more to PTX for the lowest architecture (forward
 * compatibility: the driver JIT-compiles it on newer GPUs). The images become
 * byte arrays in NAME_cuda_image.c; the host code loads the best one at init.
 * The system C compiler then builds the host objects with the toolkit's
 * include folder; libraries link against libcuda (the stub at build time).
 * Toolkit paths: $ONNXC_CUDA_HOME, else $CUDA_HOME, else the one CMake found.
 */
#include "tools.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef ONNXC_CUDA_HOME_DEFAULT
#define ONNXC_CUDA_HOME_DEFAULT "/usr/local/cuda"
#endif

/* The part of nvrtc.h that we call, declared here so no toolkit is needed to build onnxc. */
typedef int NvrtcResult;
typedef struct NvrtcProg *NvrtcProgram;
typedef struct Nvrtc {
  void *lib;
  const char *(*error_string)(NvrtcResult);
  NvrtcResult (*create)(NvrtcProgram *, const char *, const char *, int, const char *const *,
                        const char *const *);
  NvrtcResult (*destroy)(NvrtcProgram *);
  NvrtcResult (*compile)(NvrtcProgram, int, const char *const *);
  NvrtcResult (*log_size)(NvrtcProgram, size_t *);
  NvrtcResult (*log)(NvrtcProgram, char *);
  NvrtcResult (*ptx_size)(NvrtcProgram, size_t *);
  NvrtcResult (*ptx)(NvrtcProgram, char *);
  NvrtcResult (*cubin_size)(NvrtcProgram, size_t *);
  NvrtcResult (*cubin)(NvrtcProgram, char *);
} Nvrtc;

const char *cuda_home(void) {
  const char *h = getenv("ONNXC_CUDA_HOME");
  if (!h || !*h)
    h = getenv("CUDA_HOME");
  return h && *h ? h : ONNXC_CUDA_HOME_DEFAULT;
}

static bool nvrtc_open(Nvrtc *nv, Diag *d) {
  memset(nv, 0, sizeof *nv);
  char path[4096];
  const char *cands[] = {"%s/lib64/libnvrtc.so", "%s/lib/libnvrtc.so", "%s/lib64/libnvrtc.so.13",
                         "%s/lib64/libnvrtc.so.12", NULL};
  for (int i = 0; cands[i] && !nv->lib; i++) {
    snprintf(path, sizeof path, cands[i], cuda_home());
    nv->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  if (!nv->lib)
    nv->lib = dlopen("libnvrtc.so", RTLD_NOW | RTLD_LOCAL);
  if (!nv->lib)
    return diag_error(d, NULL, "the CUDA target needs NVRTC: libnvrtc.so not found under %s "
                               "(set ONNXC_CUDA_HOME to the CUDA toolkit)", cuda_home());
  bool ok = true;
#define SYM(field, name) ok = ok && (*(void **)&nv->field = dlsym(nv->lib, name)) != NULL
  SYM(error_string, "nvrtcGetErrorString");
  SYM(create, "nvrtcCreateProgram");
  SYM(destroy, "nvrtcDestroyProgram");
  SYM(compile, "nvrtcCompileProgram");
  SYM(log_size, "nvrtcGetProgramLogSize");
  SYM(log, "nvrtcGetProgramLog");
  SYM(ptx_size, "nvrtcGetPTXSize");
  SYM(ptx, "nvrtcGetPTX");
  SYM(cubin_size, "nvrtcGetCUBINSize");
  SYM(cubin, "nvrtcGetCUBIN");
#undef SYM
  if (!ok) {
    dlclose(nv->lib);
    return diag_error(d, NULL, "libnvrtc.so lacks the functions onnxc needs (CUDA 11.2 or newer)");
  }
  return true;
}

/* "sm_90" -> 90; 0 when malformed. */
static int arch_number(const char *arch) {
  if (strncmp(arch, "sm_", 3) != 0 || !arch[3])
    return 0;
  char *end;
  long v = strtol(arch + 3, &end, 10);
  return (*end == 0 || ((*end == 'a' || *end == 'f') && end[1] == 0)) && v >= 50 && v < 1000 ? (int)v : 0;
}

bool cuda_arch_valid(const char *arch) { return arch_number(arch) > 0; }

/* One NVRTC compile of src for `arch_opt`; on success the cubin (want_cubin)
 * or PTX is appended to img. */
static bool nvrtc_one(const Nvrtc *nv, const char *src, const char *file, const char *arch_opt,
                      const char *inc_opt, bool want_cubin, Buf *img, Diag *d) {
  extern const char onnxc_rt_h_text[], onnxc_cuda_rt_h_text[];
  const char *hdrs[] = {onnxc_rt_h_text, onnxc_cuda_rt_h_text};
  const char *hnames[] = {"onnxc_rt.h", "onnxc_cuda_rt.h"};
  NvrtcProgram prog;
  NvrtcResult r = nv->create(&prog, src, file, 2, hdrs, hnames);
  if (r != 0)
    return diag_error(d, NULL, "NVRTC: %s", nv->error_string(r));
  /* inc_opt: -I the sources' folder (onnxc_image.h, when a model decodes images) */
  const char *opts[] = {arch_opt, "-std=c++17", "-lineinfo", inc_opt};
  r = nv->compile(prog, 4, opts);
  bool ok = r == 0;
  if (!ok) {
    size_t n = 0;
    nv->log_size(prog, &n);
    char *log = calloc(n + 1, 1);
    if (log)
      nv->log(prog, log);
    diag_error(d, NULL, "NVRTC (%s) failed on %s: %s\n%s", arch_opt, file, nv->error_string(r), log ? log : "");
    free(log);
  }
  size_t n = 0;
  if (ok)
    ok = (want_cubin ? nv->cubin_size(prog, &n) : nv->ptx_size(prog, &n)) == 0;
  if (ok) {
    char *p = malloc(n ? n : 1);
    ok = p && (want_cubin ? nv->cubin(prog, p) : nv->ptx(prog, p)) == 0;
    if (ok)
      buf_write(img, p, n);
    free(p);
    if (!ok)
      diag_error(d, NULL, "NVRTC produced no %s for %s", want_cubin ? "cubin" : "PTX", file);
  }
  nv->destroy(&prog);
  return ok;
}

/* An image as a string literal (its NUL is the array's last byte): the C
 * compiler reads one 20 times faster than a list of numbers (0.3 s against
 * 6.4 s for DenseNet-121's 7 MB of cubin and PTX). Printable bytes as
 * themselves, others as 3-digit octal escapes, 96 bytes a line. */
static void put_bytes(Buf *c, const char *sym, const Buf *img) {
  buf_printf(c, "static const unsigned char %s[%zu] __attribute__((aligned(64))) =", sym, img->len + 1);
  if (!img->len)
    buf_puts(c, " \"\"");
  for (size_t i = 0; i < img->len; i++) {
    unsigned char b = (unsigned char)img->s[i];
    if (i % 96 == 0)
      buf_puts(c, i ? "\"\n  \"" : "\n  \"");
    if (b >= 32 && b < 127 && b != '\\' && b != '"' && b != '?')
      buf_putc(c, (char)b);
    else
      buf_printf(c, "\\%03o", b);
  }
  buf_puts(c, img->len ? "\";\n" : ";\n");
}

/* Compiles dir/NAME.cu and writes dir/NAME_cuda_image.c: the images in the
 * order the host tries them (cubins as given, then PTX), with their
 * architectures (0 for PTX). Without NVRTC and with `optional`, writes an
 * empty table (NAME_init then returns ONNXC_ERR_NO_CUDA_IMAGE) and warns. */
static bool write_images(const Options *o, const char *dir, const char *name, bool optional, Diag *d) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.cu", dir, name);
  Buf src, c;
  buf_init(&src);
  buf_init(&c);
  if (!sys_read_file(path, &src))
    return diag_error(d, NULL, "cannot read %s", path);
  const char *def_arch[] = {"sm_90"};
  const char *const *archs = o->n_cuda_arch ? o->cuda_arch : def_arch;
  int n_archs = o->n_cuda_arch ? o->n_cuda_arch : 1;
  buf_printf(&c, "/* %s_cuda_image.c - generated by onnxc %s: NVRTC images of %s.cu. Do not edit. */\n",
             name, ONNXC_VERSION, name);
  buf_puts(&c, "#include <stddef.h>\n\n");
  Nvrtc nv;
  Diag quiet;
  diag_init(&quiet, d->file, NULL);
  bool have = nvrtc_open(&nv, optional ? &quiet : d);
  bool ok = have || optional;
  if (!have && optional)
    fprintf(stderr, "onnxc: warning: %s; %s_cuda_image.c holds no kernels (see docs/cuda.md)\n",
            diag_last(&quiet), name);
  diag_free(&quiet);
  int lowest = 0, n_img = 0;
  char inc[4200];
  snprintf(inc, sizeof inc, "-I%s", dir);
  char sym[64][64];
  int arch_of[64];
  for (int i = 0; have && ok && i < n_archs && i < 63; i++) {
    Buf img;
    buf_init(&img);
    char opt[64];
    snprintf(opt, sizeof opt, "-arch=%s", archs[i]);
    ok = nvrtc_one(&nv, src.s, path, opt, inc, true, &img, d);
    if (ok) {
      arch_of[n_img] = arch_number(archs[i]);
      snprintf(sym[n_img], sizeof sym[n_img], "cubin_%s", archs[i]);
      put_bytes(&c, sym[n_img++], &img);
      if (!lowest || arch_number(archs[i]) < lowest)
        lowest = arch_number(archs[i]);
    }
    buf_free(&img);
  }
  if (have && ok) {
    Buf img;
    buf_init(&img);
    char opt[64];
    snprintf(opt, sizeof opt, "-arch=compute_%d", lowest);
    ok = nvrtc_one(&nv, src.s, path, opt, inc, false, &img, d);
    if (ok) {
      arch_of[n_img] = 0;
      snprintf(sym[n_img], sizeof sym[n_img], "ptx_compute_%d", lowest);
      put_bytes(&c, sym[n_img++], &img);
    }
    buf_free(&img);
  }
  if (have)
    dlclose(nv.lib);
  buf_printf(&c, "\nextern const int %s_cuda_n_images;\nconst int %s_cuda_n_images = %d;\n", name, name, n_img);
  buf_printf(&c, "extern const int %s_cuda_image_arch[];\nconst int %s_cuda_image_arch[%d] = {", name, name, n_img + 1);
  for (int i = 0; i < n_img; i++)
    buf_printf(&c, "%d, ", arch_of[i]);
  buf_printf(&c, "-1};\nextern const unsigned char *const %s_cuda_images[];\n"
                 "const unsigned char *const %s_cuda_images[%d] = {", name, name, n_img + 1);
  for (int i = 0; i < n_img; i++)
    buf_printf(&c, "%s, ", sym[i]);
  buf_puts(&c, "NULL};\n");
  snprintf(path, sizeof path, "%s/%s_cuda_image.c", dir, name);
  if (ok && !sys_write_file(path, c.s, c.len))
    ok = diag_error(d, NULL, "cannot write %s: %s", path, strerror(errno));
  buf_free(&src);
  buf_free(&c);
  return ok;
}

bool cuda_generate(const Graph *g, const Plan *plan, const Options *o, const char *name, const char *dir,
                   bool blob, bool images_optional, Diag *d) {
  CodegenOpts co = {.name = name, .model_path = o->model, .weights = blob ? WEIGHTS_BLOB : WEIGHTS_C, .weights_section = o->weights_section, .threads = 1,
                    .no_batch = o->opt_level < 1};
  return codegen_cuda(g, plan, &co, dir, d) && write_images(o, dir, name, images_optional, d);
}

static bool cc_host(const char *dir, const char *file, const char *ext, const Options *o, const char *extra, bool pic,
                    Buf *objects, Diag *d) {
  char *argv[80];
  int n = 0;
  char *cc = strdup(sys_cc());
  for (char *t = strtok(cc, " \t"); t && n < 40; t = strtok(NULL, " \t"))
    argv[n++] = t;
  char in[4096], out[4096], inc[4096], cinc[4096], *ex = extra ? strdup(extra) : NULL;
  snprintf(in, sizeof in, "%s/%s%s", dir, file, ext);
  snprintf(out, sizeof out, "%s/%s.o", dir, file);
  snprintf(inc, sizeof inc, "-I%s", dir);
  snprintf(cinc, sizeof cinc, "%s/include", cuda_home());
  argv[n++] = "-std=c99";
  argv[n++] = o->opt_level ? "-O2" : "-O0";
  argv[n++] = inc;
  argv[n++] = "-isystem"; /* cuda.h is not -pedantic clean */
  argv[n++] = cinc;
  if (pic) {
    argv[n++] = "-fPIC";
    argv[n++] = "-fvisibility=hidden";
  }
  for (char *t = ex ? strtok(ex, " \t") : NULL; t && n < 70; t = strtok(NULL, " \t"))
    argv[n++] = t;
  argv[n++] = "-c";
  argv[n++] = in;
  argv[n++] = "-o";
  argv[n++] = out;
  argv[n] = NULL;
  Buf log;
  buf_init(&log);
  int rc = sys_run(argv, &log);
  if (rc != 0)
    diag_error(d, NULL, "the C compiler (%s) failed on %s%s (status %d):\n%s", sys_cc(), file, ext, rc,
               log.s ? log.s : "");
  else
    buf_printf(objects, "%s\n", out);
  buf_free(&log);
  free(cc);
  free(ex);
  return rc == 0;
}

bool cuda_build_objects(const Graph *g, const Plan *plan, const Options *o, const char *name, const char *dir,
                        const char *extra, bool pic, Buf *objects, Diag *d) {
  /* Weights as C arrays unless asked otherwise or large (a C compiler takes
   * minutes over hundreds of MB of literals; an assembled blob takes none). */
  int64_t wbytes = 0;
  for (int i = 0; i < g->n_values; i++)
    if (g->values[i]->kind == VK_CONST && g->values[i]->n_uses > 0)
      wbytes += g->values[i]->konst->nbytes;
  const char *form = o->weights_form ? o->weights_form : "auto";
  bool blob = strcmp(form, "blob") == 0 || (strcmp(form, "auto") == 0 && wbytes > (8 << 20));
  if (!cuda_generate(g, plan, o, name, dir, blob, false, d))
    return false;
  char f[512];
  snprintf(f, sizeof f, "%s_weights", name);
  bool ok = cc_host(dir, name, ".c", o, extra, pic, objects, d) &&
            cc_host(dir, f, blob ? ".S" : ".c", o, blob ? NULL : extra, pic, objects, d);
  snprintf(f, sizeof f, "%s_cuda_image", name);
  return ok && cc_host(dir, f, ".c", o, NULL, pic, objects, d);
}

const char *cuda_link_flags(char *buf, size_t n) {
  snprintf(buf, n, "-L%s/lib64/stubs -lcuda", cuda_home());
  return buf;
}

/* ---- driver: onnxc --target cuda ------------------------------------------------ */

static bool run_argv(char **argv, const char *what, Diag *d) {
  Buf log;
  buf_init(&log);
  int rc = sys_run(argv, &log);
  if (rc != 0)
    diag_error(d, NULL, "%s failed (status %d):\n%s", what, rc, log.s ? log.s : "");
  buf_free(&log);
  return rc == 0;
}

/* Links the objects into tmp_out as o->kind asks (.so against libcuda). */
static bool cuda_link(const Options *o, const Buf *objects, const char *tmp_out, Diag *d) {
  char *argv[64], lf[4096];
  int n = 0;
  char *cc = strdup(sys_cc()), *list = strdup(objects->s), *lflags = strdup(cuda_link_flags(lf, sizeof lf));
  const char *ar = getenv("AR");
  if (o->kind == OUT_A) {
    argv[n++] = (char *)(ar && *ar ? ar : "ar");
    argv[n++] = "rcs";
  } else {
    for (char *t = strtok(cc, " \t"); t && n < 30; t = strtok(NULL, " \t"))
      argv[n++] = t;
    if (o->kind == OUT_SO) {
      argv[n++] = "-shared";
    } else {
      argv[n++] = "-r";
      argv[n++] = "-nostdlib";
    }
    argv[n++] = "-o";
  }
  argv[n++] = (char *)tmp_out;
  for (char *t = strtok(list, "\n"); t && n < 50; t = strtok(NULL, "\n"))
    argv[n++] = t;
  if (o->kind == OUT_SO) {
    for (char *t = strtok(lflags, " "); t && n < 60; t = strtok(NULL, " "))
      argv[n++] = t;
    argv[n++] = "-lm";
  }
  argv[n] = NULL;
  char what[4200];
  snprintf(what, sizeof what, "linking %s", o->out);
  bool ok = run_argv(argv, what, d);
  free(cc);
  free(list);
  free(lflags);
  return ok;
}

bool cuda_driver_build(const Graph *g, const Plan *plan, const Options *o, const char *name, const char *dir,
                       Diag *d) {
  if (o->kind == OUT_SRC) {
    if (!cuda_generate(g, plan, o, name, dir, false, true, d))
      return false;
    if (mkdir(o->out, 0777) != 0 && errno != EEXIST)
      return diag_error(d, NULL, "cannot create %s: %s", o->out, strerror(errno));
    const char *files[] = {"%s.cu", "%s.c", "%s.h", "%s_weights.c", "%s_weights.h", "%s_cuda_image.c",
                           "onnxc_rt.h", "onnxc_cuda_rt.h", "onnxc_image.h"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
      char f[512], src[4096], dst[4096];
      snprintf(f, sizeof f, files[i], name);
      snprintf(src, sizeof src, "%s/%s", dir, f);
      snprintf(dst, sizeof dst, "%s/%s", o->out, f);
      if (strcmp(files[i], "onnxc_image.h") == 0 && access(src, F_OK) != 0)
        continue; /* written only for models that use ImageDecoder */
      if (!sys_copy_file(src, dst))
        return diag_error(d, NULL, "cannot write %s: %s", dst, strerror(errno));
    }
    return true;
  }
  Buf objects;
  buf_init(&objects);
  char tmp_out[4096];
  snprintf(tmp_out, sizeof tmp_out, "%s.tmp%ld", o->out, (long)getpid());
  bool ok = cuda_build_objects(g, plan, o, name, dir, NULL, true, &objects, d) &&
            cuda_link(o, &objects, tmp_out, d);
  if (ok && rename(tmp_out, o->out) != 0)
    ok = diag_error(d, NULL, "cannot write %s: %s", o->out, strerror(errno));
  if (!ok)
    unlink(tmp_out);
  buf_free(&objects);
  return ok;
}

/* ---- check: the harness that runs a CUDA library on device 0 --------------------- */

/* The same file protocol as the C target's harness (tools/check.c): a string
 * tensor travels as its strings, each NUL-terminated, one after another; a
 * data-dependent output is written at its reported extent and its dims to
 * PATH.dims. On the device a string tensor is an array of device pointers
 * to NUL-terminated characters in device memory (docs/cuda.md). */
void cuda_emit_harness(Buf *h, const Graph *g, const char *name, int64_t arena) {
  int n_in = g->n_inputs, n_out = g->n_outputs, n_dyn = 0;
  bool strs = false;
  for (int i = 0; i < n_in + n_out; i++)
    strs |= (i < n_in ? g->inputs[i] : g->outputs[i - n_in])->dt == DT_STRING;
  for (int i = 0; i < n_out; i++)
    n_dyn += g->outputs[i]->dyn_dims != 0;
  buf_printf(h, "#include <cuda.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"%s.h\"\n\n",
             name);
  buf_puts(h, "static void *load(const char *p, size_t n) {\n"
              "  unsigned char *b = malloc(n ? n : 1);\n  FILE *f = fopen(p, \"rb\");\n"
              "  if (!b || !f || fread(b, 1, n, f) != n) { fprintf(stderr, \"harness: cannot read %s\\n\", p); exit(3); }\n"
              "  fclose(f);\n  return b;\n}\n\n"
              "#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_ = \"?\"; "
              "cuGetErrorString(r_, &s_); fprintf(stderr, \"harness: %s: %s\\n\", #x, s_); return 3; } } while (0)\n\n");
  if (strs)
    buf_puts(h, "/* A string input file (count NUL-terminated strings) to device memory: the\n"
                " * characters at *chars, the device pointers to them at table. */\n"
                "static int put_strs(const char *p, size_t count, CUdeviceptr table, CUdeviceptr *chars) {\n"
                "  FILE *f = fopen(p, \"rb\");\n  long n = -1;\n  size_t i, at = 0;\n  char *b;\n  CUdeviceptr *v;\n"
                "  if (f && fseek(f, 0, SEEK_END) == 0) n = ftell(f);\n"
                "  if (n < 0 || fseek(f, 0, SEEK_SET) != 0) { fprintf(stderr, \"harness: cannot read %s\\n\", p); exit(3); }\n"
                "  b = malloc((size_t)n + 1);\n  v = malloc((count + 1) * sizeof *v);\n"
                "  if (!b || !v || fread(b, 1, (size_t)n, f) != (size_t)n) exit(3);\n  fclose(f);\n  b[n] = 0;\n"
                "  CU(cuMemAlloc(chars, (size_t)n + 1));\n  CU(cuMemcpyHtoD(*chars, b, (size_t)n + 1));\n"
                "  for (i = 0; i < count; i++) {\n    if (at > (size_t)n) exit(3);\n    v[i] = *chars + at;\n"
                "    at += strlen(b + at) + 1;\n  }\n"
                "  if (count) CU(cuMemcpyHtoD(table, v, count * sizeof *v));\n  free(b);\n  free(v);\n  return 0;\n}\n\n"
                "/* Saves the count device strings of the device pointer table, each NUL-terminated. */\n"
                "static int save_strs(const char *p, CUdeviceptr table, size_t count) {\n"
                "  FILE *f = fopen(p, \"wb\");\n  CUdeviceptr *v = malloc((count + 1) * sizeof *v);\n  size_t i;\n"
                "  int ok = f && v;\n"
                "  if (ok && count) ok = cuMemcpyDtoH(v, table, count * sizeof *v) == CUDA_SUCCESS;\n"
                "  for (i = 0; ok && i < count; i++) {\n    CUdeviceptr s = v[i];\n    char c = 1;\n"
                "    if (!s) { ok = 0; break; }\n"
                "    while (ok && c) ok = cuMemcpyDtoH(&c, s++, 1) == CUDA_SUCCESS && fputc(c, f) != EOF;\n  }\n"
                "  if (f && fclose(f) != 0) ok = 0;\n  free(v);\n  return ok ? 0 : -1;\n}\n\n");
  buf_printf(h, "int main(int argc, char **argv) {\n  const void *in[%d];\n  void *out[%d];\n"
                "  CUdeviceptr din[%d], dout[%d], dchars[%d], arena = 0;\n  CUdevice dev;\n  CUcontext cx;\n"
                "  %s_ctx *m = NULL;\n  int rc, i;\n",
             n_in + 1, n_out + 1, n_in + 1, n_out + n_dyn + 1, n_in + 1, name);
  buf_printf(h, "  static const int in_str[%d] = {", n_in + 1);
  for (int i = 0; i < n_in; i++)
    buf_printf(h, "%d, ", g->inputs[i]->dt == DT_STRING);
  buf_printf(h, "0};\n  static const int out_str[%d] = {", n_out + 1);
  for (int i = 0; i < n_out; i++)
    buf_printf(h, "%d, ", g->outputs[i]->dt == DT_STRING);
  buf_printf(h, "0};\n  static const size_t in_bytes[%d] = {", n_in + 1);
  for (int i = 0; i < n_in; i++) {
    int64_t n = 0, b = 0;
    shape_numel(&g->inputs[i]->shape, &n);
    dtype_bytes(g->inputs[i]->dt, n, &b);
    buf_printf(h, "%lld, ", (long long)b);
  }
  buf_printf(h, "0};\n  static size_t out_bytes[%d] = {", n_out + 1);
  for (int i = 0; i < n_out; i++) {
    int64_t n = 0, b = 0;
    shape_numel(&g->outputs[i]->shape, &n);
    dtype_bytes(g->outputs[i]->dt, n, &b);
    buf_printf(h, "%lld, ", (long long)b);
  }
  buf_puts(h, "0};\n");
  for (int i = 0, k = 0; i < n_out; i++) /* dims arrays follow the outputs (docs/abi.md) */
    if (g->outputs[i]->dyn_dims)
      buf_printf(h, "  int64_t dims%d[%d];\n  const int dims%d_at = %d;\n", i, IR_MAX_RANK, i, n_out + k++);
  buf_printf(h, "  if (argc != %d) return 3;\n", 1 + n_in + n_out);
  buf_puts(h, "  CU(cuInit(0));\n  CU(cuDeviceGet(&dev, 0));\n  CU(cuDevicePrimaryCtxRetain(&cx, dev));\n"
              "  CU(cuCtxSetCurrent(cx));\n");
  buf_printf(h, "  if ((rc = %s_init(&m)) != 0) {\n    fprintf(stderr, \"%s_init returned %%d (CUresult %%d)\\n\", rc, "
                "%s_cuda_error(m));\n    return 4;\n  }\n", name, name, name);
  buf_printf(h, "  if (%lld > 0) {\n    CU(cuMemAlloc(&arena, %lld));\n    CU(cuMemsetD8(arena, 0xA5, %lld));\n  }\n",
             (long long)arena, (long long)arena, (long long)arena);
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    dchars[i] = 0;\n"
                "    CU(cuMemAlloc(&din[i], in_bytes[i] ? in_bytes[i] : 1));\n%s"
                "    in[i] = load(argv[1 + i], in_bytes[i]);\n"
                "    if (in_bytes[i]) CU(cuMemcpyHtoD(din[i], in[i], in_bytes[i]));\n  }\n", n_in,
             strs ? "    if (in_str[i]) {\n      in[i] = NULL;\n"
                    "      if (put_strs(argv[1 + i], in_bytes[i] / sizeof(CUdeviceptr), din[i], &dchars[i]) != 0) return 3;\n"
                    "      continue;\n    }\n" : "");
  if (!strs)
    buf_puts(h, "  (void)in_str;\n  (void)out_str;\n");
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    out[i] = malloc(out_bytes[i] ? out_bytes[i] : 1);\n"
                "    if (!out[i]) return 3;\n    CU(cuMemAlloc(&dout[i], out_bytes[i] ? out_bytes[i] : 1));\n"
                "    /* string outputs: NULL pointers, which save_strs catches */\n"
                "    CU(cuMemsetD8(dout[i], out_str[i] ? 0 : 0xCD, out_bytes[i] ? out_bytes[i] : 1));\n  }\n", n_out);
  for (int i = 0; i < n_out; i++)
    if (g->outputs[i]->dyn_dims)
      buf_printf(h, "  CU(cuMemAlloc(&dout[dims%d_at], sizeof dims%d));\n", i, i);
  buf_printf(h, "  rc = %s_run_v(m, NULL, (void *)(uintptr_t)arena, (const void *const *)din, (void *const *)dout);\n"
                "  if (rc == 0) rc = %s_status(m, NULL);\n", name, name);
  buf_printf(h, "  if (rc != 0) fprintf(stderr, \"%s_run returned %%d (CUresult %%d)\\n\", rc, %s_cuda_error(m));\n",
             name, name);
  /* A dynamic output: write its actual extent only, and its dims to PATH.dims. */
  for (int i = 0; i < n_out; i++) {
    const Value *v = g->outputs[i];
    if (!v->dyn_dims)
      continue;
    buf_printf(h, "  if (!rc) {\n    size_t n = %d, k;\n    char p[4200];\n    FILE *f;\n"
                  "    CU(cuMemcpyDtoH(dims%d, dout[dims%d_at], %d));\n"
                  "    for (k = 0; k < %d; k++) n *= (size_t)dims%d[k];\n"
                  "    if (n > out_bytes[%d]) rc = -1; else out_bytes[%d] = n;\n"
                  "    snprintf(p, sizeof p, \"%%s.dims\", argv[1 + %d + %d]);\n    f = fopen(p, \"wb\");\n"
                  "    if (!f || fwrite(dims%d, 8, %d, f) != %d) rc = -1;\n    if (f) fclose(f);\n  }\n",
               v->dt == DT_STRING ? 8 : dtype_bits(v->dt) / 8, i, i, 8 * v->shape.rank, v->shape.rank, i, i, i,
               n_in, i, i, v->shape.rank, v->shape.rank);
  }
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    FILE *f;\n", n_out);
  if (strs)
    buf_printf(h, "    if (out_str[i]) {\n"
                  "      if (!rc && save_strs(argv[1 + %d + i], dout[i], out_bytes[i] / sizeof(CUdeviceptr)) != 0) rc = -1;\n"
                  "      free(out[i]);\n      cuMemFree(dout[i]);\n      continue;\n    }\n", n_in);
  buf_printf(h, "    if (!rc && out_bytes[i]) CU(cuMemcpyDtoH(out[i], dout[i], out_bytes[i]));\n"
                "    f = rc ? NULL : fopen(argv[1 + %d + i], \"wb\");\n"
                "    if (!rc && (!f || fwrite(out[i], 1, out_bytes[i], f) != out_bytes[i])) rc = -1;\n"
                "    if (f) fclose(f);\n    free(out[i]);\n    cuMemFree(dout[i]);\n  }\n",
             n_in);
  for (int i = 0; i < n_out; i++)
    if (g->outputs[i]->dyn_dims)
      buf_printf(h, "  cuMemFree(dout[dims%d_at]);\n", i);
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    free((void *)in[i]);\n    cuMemFree(din[i]);\n"
                "    if (dchars[i]) cuMemFree(dchars[i]);\n  }\n"
                "  if (arena) cuMemFree(arena);\n  %s_free(m);\n  cuDevicePrimaryCtxRelease(dev);\n"
                "  return rc == 0 ? 0 : rc < 0 ? 3 : 4;\n}\n", n_in, name);
}

/* The check harness of a model with -D ranges: the C target's protocol
 * (check.c's emit_harness_dims: argv holds the inputs' and outputs' paths,
 * then the dims, then each input's and output's byte count), on the device.
 * The arena is NAME_arena_bytes(dims) (rounded up to 256), the inputs and
 * outputs exactly this run's bytes; NAME_run_dims_v runs them. */
void cuda_emit_harness_dims(Buf *h, const Graph *g, const char *name) {
  int ni = g->n_inputs, no = g->n_outputs, ns = dx_user_syms(g);
  buf_printf(h, "#include <cuda.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"%s.h\"\n\n",
             name);
  buf_puts(h, "static void *load(const char *p, size_t n) {\n"
              "  unsigned char *b = malloc(n ? n : 1);\n  FILE *f = fopen(p, \"rb\");\n"
              "  if (!b || !f || fread(b, 1, n, f) != n) { fprintf(stderr, \"harness: cannot read %s\\n\", p); exit(3); }\n"
              "  fclose(f);\n  return b;\n}\n\n"
              "#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_ = \"?\"; "
              "cuGetErrorString(r_, &s_); fprintf(stderr, \"harness: %s: %s\\n\", #x, s_); return 3; } } while (0)\n\n");
  buf_printf(h, "int main(int argc, char **argv) {\n  const void *in[%d];\n  void *out[%d];\n  int64_t dims[%d];\n"
                "  size_t in_bytes[%d], out_bytes[%d], ab;\n"
                "  CUdeviceptr din[%d], dout[%d], arena = 0;\n  CUdevice dev;\n  CUcontext cx;\n"
                "  %s_ctx *m = NULL;\n  int rc, i;\n",
             ni + 1, no + 1, ns, ni + 1, no + 1, ni + 1, no + 1, name);
  buf_printf(h, "  if (argc != %d) return 3;\n", 1 + 2 * (ni + no) + ns);
  buf_printf(h, "  for (i = 0; i < %d; i++) dims[i] = strtoll(argv[%d + i], NULL, 10);\n", ns, 1 + ni + no);
  buf_printf(h, "  for (i = 0; i < %d; i++) in_bytes[i] = (size_t)strtoull(argv[%d + i], NULL, 10);\n", ni,
             1 + ni + no + ns);
  buf_printf(h, "  for (i = 0; i < %d; i++) out_bytes[i] = (size_t)strtoull(argv[%d + i], NULL, 10);\n", no,
             1 + 2 * ni + no + ns);
  buf_printf(h, "  if (%s_arena_bytes(dims) < 0) { fprintf(stderr, \"%s_arena_bytes: a dim is out of range\\n\"); return 4; }\n",
             name, name);
  buf_printf(h, "  ab = ((size_t)%s_arena_bytes(dims) + 255) / 256 * 256;\n", name);
  buf_puts(h, "  CU(cuInit(0));\n  CU(cuDeviceGet(&dev, 0));\n  CU(cuDevicePrimaryCtxRetain(&cx, dev));\n"
              "  CU(cuCtxSetCurrent(cx));\n");
  buf_printf(h, "  if ((rc = %s_init(&m)) != 0) {\n    fprintf(stderr, \"%s_init returned %%d (CUresult %%d)\\n\", rc, "
                "%s_cuda_error(m));\n    return 4;\n  }\n", name, name, name);
  buf_puts(h, "  if (ab > 0) {\n    CU(cuMemAlloc(&arena, ab));\n    CU(cuMemsetD8(arena, 0xA5, ab));\n  }\n");
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    CU(cuMemAlloc(&din[i], in_bytes[i] ? in_bytes[i] : 1));\n"
                "    in[i] = load(argv[1 + i], in_bytes[i]);\n"
                "    if (in_bytes[i]) CU(cuMemcpyHtoD(din[i], in[i], in_bytes[i]));\n  }\n", ni);
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    out[i] = malloc(out_bytes[i] ? out_bytes[i] : 1);\n"
                "    if (!out[i]) return 3;\n    CU(cuMemAlloc(&dout[i], out_bytes[i] ? out_bytes[i] : 1));\n"
                "    CU(cuMemsetD8(dout[i], 0xCD, out_bytes[i] ? out_bytes[i] : 1));\n  }\n", no);
  buf_printf(h, "  rc = %s_run_dims_v(m, NULL, (void *)(uintptr_t)arena, dims, (const void *const *)din, "
                "(void *const *)dout);\n  if (rc == 0) rc = %s_status(m, NULL);\n", name, name);
  buf_printf(h, "  if (rc != 0) fprintf(stderr, \"%s_run_dims returned %%d (CUresult %%d)\\n\", rc, %s_cuda_error(m));\n",
             name, name);
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    FILE *f;\n"
                "    if (!rc && out_bytes[i]) CU(cuMemcpyDtoH(out[i], dout[i], out_bytes[i]));\n"
                "    f = rc ? NULL : fopen(argv[1 + %d + i], \"wb\");\n"
                "    if (!rc && (!f || fwrite(out[i], 1, out_bytes[i], f) != out_bytes[i])) rc = -1;\n"
                "    if (f) fclose(f);\n    free(out[i]);\n    cuMemFree(dout[i]);\n  }\n", no, ni);
  buf_printf(h, "  for (i = 0; i < %d; i++) {\n    free((void *)in[i]);\n    cuMemFree(din[i]);\n  }\n"
                "  if (arena) cuMemFree(arena);\n  %s_free(m);\n  cuDevicePrimaryCtxRelease(dev);\n"
                "  return rc == 0 ? 0 : rc < 0 ? 3 : 4;\n}\n", ni, name);
}
