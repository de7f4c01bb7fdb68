/* inproc.c - builds with the in-process compiler (clangcc.h, docs/clang.md).
 *
 * When onnxc has it and no external compiler was asked for ($CC), generated
 * sources are compiled in memory by Clang with the flags the external path
 * gives $CC. The model's code and its weights are one translation unit (the
 * blob's assembly becomes top-level asm), so every output holds one object:
 * a .o is that object, a .a wraps it (ar.c), a .so is linked by the system
 * linker (ld, else ld.lld). Programs (check's harness, profile's driver) are
 * not linked at all: their objects run under the JIT in a child process.
 */
#include "clangcc.h"
#include "tools.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* An executable named prog in a folder of $PATH. */
static bool on_path(const char *prog) {
  const char *path = getenv("PATH");
  while (path && *path) {
    const char *end = strchr(path, ':');
    size_t len = end ? (size_t)(end - path) : strlen(path);
    char full[4096];
    if (len > 0 && len + strlen(prog) + 2 < sizeof full) {
      memcpy(full, path, len);
      snprintf(full + len, sizeof full - len, "/%s", prog);
      if (access(full, X_OK) == 0)
        return true;
    }
    path = end ? end + 1 : NULL;
  }
  return false;
}

/* The in-process compiler is used for cross targets, when asked for
 * (ONNXC_INPROC=1), and when no external C compiler is there: gcc builds
 * the generated code about four times faster than Clang (docs/clang.md), so
 * a machine that has one keeps it. CC set, --sanitize and the CUDA target
 * always take the external path; ONNXC_INPROC=0 too. */
bool inproc_wanted(const Options *o) {
  if (o->triple)
    return true; /* only the in-process compiler cross-compiles; main.c checks it is there */
  const char *cc = getenv("CC"), *want = getenv("ONNXC_INPROC");
  if (!clangcc_available() || (cc && *cc) || o->sanitize || (o->target && strcmp(o->target, "cuda") == 0))
    return false;
  if (want && *want)
    return strcmp(want, "0") != 0;
  return !on_path("cc");
}

/* A cross target with no C library: generated code needs only <math.h> beyond
 * Clang's freestanding headers, so it gets declarations that newlib's (or any
 * C99) libm satisfies at link time. */
static const char FREESTANDING_MATH[] =
    "/* <math.h> for onnxc's in-process cross builds (docs/clang.md). */\n"
    "#ifndef ONNXC_FREESTANDING_MATH_H\n#define ONNXC_FREESTANDING_MATH_H\n"
    "#define INFINITY (__builtin_inff())\n#define NAN (__builtin_nanf(\"\"))\n"
    "#define HUGE_VAL (__builtin_huge_val())\n#define HUGE_VALF (__builtin_huge_valf())\n"
    "#define isnan(x) __builtin_isnan(x)\n#define isinf(x) __builtin_isinf(x)\n"
    "#define isfinite(x) __builtin_isfinite(x)\n#define signbit(x) __builtin_signbit(x)\n"
    "#define isgreater(x, y) __builtin_isgreater(x, y)\n#define isless(x, y) __builtin_isless(x, y)\n"
    "#define M_PI 3.14159265358979323846\n"
    "#define ONNXC_M1(f) double f(double); float f##f(float);\n"
    "#define ONNXC_M2(f) double f(double, double); float f##f(float, float);\n"
    "ONNXC_M1(fabs) ONNXC_M1(sqrt) ONNXC_M1(exp) ONNXC_M1(exp2) ONNXC_M1(expm1) ONNXC_M1(log)\n"
    "ONNXC_M1(log2) ONNXC_M1(log10) ONNXC_M1(log1p) ONNXC_M1(sin) ONNXC_M1(cos) ONNXC_M1(tan)\n"
    "ONNXC_M1(asin) ONNXC_M1(acos) ONNXC_M1(atan) ONNXC_M1(sinh) ONNXC_M1(cosh) ONNXC_M1(tanh)\n"
    "ONNXC_M1(asinh) ONNXC_M1(acosh) ONNXC_M1(atanh) ONNXC_M1(floor) ONNXC_M1(ceil)\n"
    "ONNXC_M1(round) ONNXC_M1(trunc) ONNXC_M1(rint) ONNXC_M1(nearbyint) ONNXC_M1(erf)\n"
    "ONNXC_M1(erfc) ONNXC_M1(tgamma) ONNXC_M1(lgamma) ONNXC_M1(cbrt)\n"
    "ONNXC_M2(pow) ONNXC_M2(fmod) ONNXC_M2(atan2) ONNXC_M2(fmin) ONNXC_M2(fmax)\n"
    "ONNXC_M2(remainder) ONNXC_M2(copysign) ONNXC_M2(hypot) ONNXC_M2(nextafter)\n"
    "double fma(double, double, double); float fmaf(float, float, float);\n"
    "double ldexp(double, int); float ldexpf(float, int);\n"
    "double frexp(double, int *); float frexpf(float, int *);\n"
    "double modf(double, double *); float modff(float, float *);\n"
    "long lround(double); long lroundf(float); long lrint(double); long lrintf(float);\n"
    "long long llround(double); long long llroundf(float);\n"
    "long long llrint(double); long long llrintf(float);\n"
    "#undef ONNXC_M1\n#undef ONNXC_M2\n#endif\n";

static const char FREESTANDING_STRING[] =
    "/* <string.h> for onnxc's in-process cross builds (docs/clang.md). */\n"
    "#ifndef ONNXC_FREESTANDING_STRING_H\n#define ONNXC_FREESTANDING_STRING_H\n#include <stddef.h>\n"
    "void *memcpy(void *, const void *, size_t); void *memmove(void *, const void *, size_t);\n"
    "void *memset(void *, int, size_t); int memcmp(const void *, const void *, size_t);\n"
    "size_t strlen(const char *); int strcmp(const char *, const char *);\n"
    "int strncmp(const char *, const char *, size_t); char *strchr(const char *, int);\n"
    "char *strstr(const char *, const char *); char *strcpy(char *, const char *);\n"
    "char *strncpy(char *, const char *, size_t);\n#endif\n";

/* The words of s (space-separated) appended to v. */
static int add_words(const char **v, int n, int max, char *s) {
  for (char *t = s ? strtok(s, " \t") : NULL; t && n < max; t = strtok(NULL, " \t"))
    v[n++] = t;
  return n;
}

static bool is_x86(const char *triple) {
  return strncmp(triple, "x86_64", 6) == 0 || (triple[0] == 'i' && strstr(triple, "86-"));
}

/* Compiles dir/src to dir/obj in memory and writes it; `pic`, `extra` and the
 * level and CPU flags as driver_cc gives them to $CC. */
static bool compile_file(const char *dir, const char *src, const char *shown, const char *obj, const Options *o,
                         const char *std, const char *extra, bool pic, Diag *d) {
  char what[600], in[4096], out[4096], inc[4096], cpu[160], target[200], fsinc[4200];
  snprintf(what, sizeof what, "in-process C compiler: %s", shown);
  progress_show(o->progress, what, 0, 0);
  snprintf(in, sizeof in, "%s/%s", dir, src);
  snprintf(out, sizeof out, "%s/%s", dir, obj);
  snprintf(inc, sizeof inc, "-I%s", dir);
  static const char *const levels[] = {"-O0", "-O1", "-O3", "-O3"}; /* driver.c's opt_flag */
  const char *v[128];
  int n = 0;
  v[n++] = std;
  v[n++] = levels[o->opt_level < 0 ? 0 : o->opt_level > 3 ? 3 : o->opt_level];
  const char *c = o->cpu ? o->cpu : o->triple ? NULL : "native";
  if (o->triple) {
    snprintf(target, sizeof target, "--target=%s", o->triple);
    v[n++] = target;
    /* No C library: Clang's freestanding headers and the two above. */
    snprintf(fsinc, sizeof fsinc, "-isystem%s/onnxc_freestanding", dir);
    v[n++] = "-nostdlibinc";
    if (strstr(o->triple, "-none-eabi")) /* arm-none-eabi-gcc's enum size: objects link together quietly */
      v[n++] = "-fshort-enums";
    v[n++] = fsinc;
  }
  if (c && strcmp(c, "generic") != 0) {
    bool march = !o->triple || is_x86(o->triple);
    snprintf(cpu, sizeof cpu, "%s=%s", march ? "-march" : "-mcpu", c);
    v[n++] = cpu;
  }
  v[n++] = inc;
  if (pic) {
    v[n++] = "-fPIC";
    v[n++] = "-fvisibility=hidden";
  }
  if (o->threads > 1)
    v[n++] = "-pthread";
  char *ex = extra ? strdup(extra) : NULL, *env = getenv("ONNXC_CFLAGS") ? strdup(getenv("ONNXC_CFLAGS")) : NULL;
  n = add_words(v, n, 120, ex);
  n = add_words(v, n, 120, env);
  v[n++] = in;
  void *bytes = NULL;
  size_t len = 0;
  char *log = NULL;
  bool ok = clangcc_compile(v, n, &bytes, &len, &log);
  free(ex);
  free(env);
  if (!ok)
    diag_error(d, NULL, "the in-process C compiler failed on %s:\n%s", src, log ? log : "");
  else if (!sys_write_file(out, bytes, len))
    ok = diag_error(d, NULL, "cannot write %s: %s", out, strerror(errno));
  free(log);
  free(bytes);
  return ok;
}

/* dir/NAME_all.c: the model's code and its weights as one translation unit. */
static bool write_unit(const char *dir, const char *name, const Options *o, Diag *d) {
  char path[4096];
  Buf u, s;
  buf_init(&u);
  buf_init(&s);
  buf_printf(&u, "/* %s.c and its weights in one unit for the in-process compiler (docs/clang.md). */\n"
                 "#include \"%s.c\"\n", name, name);
  snprintf(path, sizeof path, "%s/%s_weights.S", dir, name);
  if (sys_read_file(path, &s)) { /* the blob: its assembly as top-level asm, a statement a line
                                  * (one string would pass -pedantic's 4095 characters) */
    for (char *line = s.s; line && *line;) {
      char *end = strchr(line, '\n');
      size_t k = end ? (size_t)(end - line) : strlen(line);
      if (!(k >= 2 && line[0] == '/' && line[1] == '*')) {
        buf_puts(&u, "__asm__(\"");
        for (size_t i = 0; i < k; i++) {
          if (line[i] == '"' || line[i] == '\\')
            buf_putc(&u, '\\');
          buf_putc(&u, line[i]);
        }
        buf_puts(&u, "\\n\");\n");
      }
      line = end ? end + 1 : NULL;
    }
  } else {
    buf_printf(&u, "#include \"%s_weights.c\"\n", name);
  }
  snprintf(path, sizeof path, "%s/%s_all.c", dir, name);
  bool ok = sys_write_file(path, u.s, u.len);
  if (ok && o->triple) {
    snprintf(path, sizeof path, "%s/onnxc_freestanding", dir);
    char mpath[4200], spath[4200];
    snprintf(mpath, sizeof mpath, "%s/math.h", path);
    snprintf(spath, sizeof spath, "%s/string.h", path);
    ok = (sys_is_dir(path) || mkdir(path, 0777) == 0) &&
         sys_write_file(mpath, FREESTANDING_MATH, strlen(FREESTANDING_MATH)) &&
         sys_write_file(spath, FREESTANDING_STRING, strlen(FREESTANDING_STRING));
  }
  buf_free(&u);
  buf_free(&s);
  if (!ok)
    diag_error(d, NULL, "cannot write the sources in %s: %s", dir, strerror(errno));
  return ok;
}

bool inproc_cc(const char *dir, const char *name, const Options *o, const char *extra, bool pic, Buf *objects,
               Diag *d) {
  char src[512], obj[512], shown[512];
  snprintf(src, sizeof src, "%s_all.c", name);
  snprintf(shown, sizeof shown, "%s.c", name);
  snprintf(obj, sizeof obj, "%s.o", name);
  if (!write_unit(dir, name, o, d) || !compile_file(dir, src, shown, obj, o, "-std=c99", extra, pic, d))
    return false;
  buf_printf(objects, "%s/%s\n", dir, obj);
  return true;
}

/* The system linker for a host .so: $ONNXC_LD, else ld, else ld.lld. */
bool inproc_link_so(const Options *o, const char *object, const char *tmp_out, Diag *d) {
  const char *env = getenv("ONNXC_LD");
  const char *linkers[] = {env && *env ? env : "ld", "ld.lld"};
  Buf log;
  buf_init(&log);
  int rc = -1;
  for (int i = 0; i < 2 && rc == -1; i++) {
    char *argv[] = {(char *)linkers[i], "-shared", "-o", (char *)tmp_out, (char *)object,
                    "-lm", "-lc", o->threads > 1 ? "-lpthread" : NULL, NULL};
    log.len = 0;
    rc = sys_run(argv, &log);
    if (env && *env)
      break;
  }
  if (rc != 0)
    diag_error(d, NULL, "linking %s failed (status %d):\n%s", o->out, rc, log.s ? log.s : "");
  buf_free(&log);
  return rc == 0;
}

bool inproc_program(const char *dir, const char *main_src, const char *std, const char *objects, const Options *o,
                    Diag *d) {
  char jit[4096];
  Options ho = *o;
  ho.triple = NULL;
  if (!compile_file(dir, main_src, main_src, "main.o", &ho, std, NULL, true, d))
    return false;
  Buf list;
  buf_init(&list);
  buf_printf(&list, "%s/main.o\n%s", dir, objects ? objects : "");
  snprintf(jit, sizeof jit, "%s/runner.jit", dir);
  bool ok = sys_write_file(jit, list.s, list.len);
  buf_free(&list);
  if (!ok)
    diag_error(d, NULL, "cannot write %s: %s", jit, strerror(errno));
  return ok;
}

/* The child: loads the objects, runs main under the JIT, exits with its status. */
static void jit_child(const char *list_path, char *const argv[]) {
  Buf list;
  buf_init(&list);
  if (!sys_read_file(list_path, &list)) {
    fprintf(stderr, "cannot read %s\n", list_path);
    _exit(3);
  }
  void *objs[64];
  size_t lens[64];
  int n = 0;
  Buf bytes[64];
  for (char *t = strtok(list.s, "\n"); t && n < 64; t = strtok(NULL, "\n")) {
    buf_init(&bytes[n]);
    if (!sys_read_file(t, &bytes[n])) {
      fprintf(stderr, "cannot read %s\n", t);
      _exit(3);
    }
    objs[n] = bytes[n].s;
    lens[n] = bytes[n].len;
    n++;
  }
  int argc = 0;
  while (argv[argc])
    argc++;
  char *log = NULL;
  int rc = clangcc_jit_main((const void *const *)objs, lens, n, argc, (char **)argv, &log);
  if (rc == -1 && log)
    fprintf(stderr, "JIT: %s\n", log);
  fflush(NULL);
  _exit(rc < 0 ? 3 : rc & 0xff);
}

int driver_run_program(char *const argv[], Buf *log) {
  char jit[4200];
  snprintf(jit, sizeof jit, "%s.jit", argv[0]);
  if (access(jit, F_OK) != 0)
    return sys_run(argv, log);
  int fds[2] = {-1, -1};
  if (log && pipe(fds) != 0)
    return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    if (log) {
      dup2(fds[1], 1);
      dup2(fds[1], 2);
      close(fds[0]);
      close(fds[1]);
    }
    jit_child(jit, argv);
  }
  if (log) {
    close(fds[1]);
    char tmp[4096];
    ssize_t k;
    while ((k = read(fds[0], tmp, sizeof tmp)) != 0) {
      if (k < 0 && errno == EINTR)
        continue;
      if (k < 0)
        break;
      if (log->len < (1u << 20))
        buf_write(log, tmp, (size_t)k);
    }
    close(fds[0]);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return -1;
}
