/* main.c - the onnxc command line (contract in docs/cli.md).
 *
 *   onnxc [options] MODEL.onnx -o OUT     OUT: .so, .a, .o; with -S a folder
 *   onnxc check [options] CASE_DIR        run an ONNX backend test case
 *   onnxc graph [options] MODEL.onnx -o OUT.svg|.html|.dot   draw the compiled graph
 *   onnxc profile [options] MODEL.onnx    time every kernel (docs/profile.md)
 * Exit status: 0 success; 1 an error in the model (or a check mismatch);
 * 2 bad usage (or, for check, a model that cannot be compiled).
 */
#include "clangcc.h"
#include "graph.h"
#include "tools.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: onnxc [options] MODEL.onnx -o OUT\n"
          "       onnxc check [options] CASE_DIR\n"
          "       onnxc footprint [options] MODEL.onnx\n"
          "       onnxc graph [options] MODEL.onnx -o OUT.svg|OUT.html|OUT.dot\n"
          "       onnxc profile [options] MODEL.onnx\n"
          "       onnxc run [options] MODEL.onnx --input NAME=FILE.npy|FILE.pb ... --output DIR\n"
          "\n"
          "Compiles an ONNX model to standalone C: OUT ending in .so builds a shared\n"
          "library, .a a static library, .o an object; with -S, OUT is a folder that\n"
          "receives the C sources (NAME.c, NAME.h, NAME_weights.c/.h, onnxc_rt.h).\n"
          "\n"
          "options:\n"
          "  -o OUT                 output path\n"
          "  -S                     write C sources instead of building\n"
          "  --name NAME            C prefix of generated symbols (default: from MODEL)\n"
          "  --target c|cuda        code generation target (default c)\n"
          "  -D DIM=VALUE           pin the symbolic dimension DIM (repeatable)\n"
          "  -D DIM=LO..HI, DIM<=HI keep DIM symbolic within a range: one library for\n"
          "                         every value (docs/dynamic-shapes.md); LO..HI:STEP\n"
          "                         admits the multiples of STEP only\n"
          "  --shape NAME=AxBx...   the whole shape of graph input NAME, e.g.\n"
          "                         --shape x=1x3x48x192 (repeatable; for dims that are\n"
          "                         unnamed or share a name; check: must match the data);\n"
          "                         an extent may be a dim name for -D: x=1x3x48xW\n"
          "  --elements NAME=N      sequence input NAME holds N tensors; NAME=none: the\n"
          "                         optional input NAME is empty (docs/abi.md)\n"
          "  --string-bytes N       characters each string-making node may write\n"
          "                         (default 4096; docs/strings.md)\n"
          "  -O0 -O1 -O2 -O3        optimization level (default -O2)\n");
  fprintf(f,
          "  --memory-report FILE   write the memory plan as JSON\n"
          "  --fusion-report FILE   write the kernels and the ONNX nodes each computes as JSON\n"
          "  --memory-svg FILE      draw the arena over time as SVG\n"
          "  --dump-ir-after PASS   print the IR after PASS (or 'all') to stderr\n"
          "  --verify-ir            run the IR verifier after every pass\n"
          "  --weights c|blob|auto  weights as C arrays or an assembled blob (default auto)\n"
          "  --weights-section SEC  place weights in linker section SEC\n"
          "  --keep-temps           keep the temporary build folder\n"
          "  --cpu native|generic|ARCH  -march for host-built code (default native);\n"
          "                         with --triple, the target CPU (-mcpu), e.g. cortex-m4\n"
          "  --triple TRIPLE        cross-compile with the in-process compiler to a .o or\n"
          "                         .a for TRIPLE, e.g. thumbv7em-none-eabihf (docs/clang.md)\n"
          "  --threads N            generated code splits its large kernels over N\n"
          "                         threads (pthreads; default 1: no threads)\n"
          "  --l2-kb N              the L2 cache (KB per core) the blocked convs size\n"
          "                         their loop order for (default 2048; docs/layout.md)\n"
          "  --conv-order auto|panel|group  the blocked convs' item order (default\n"
          "                         auto: by the cache sizes; for tests and tuning)\n"
          "  --layout auto|nchw|nchw16c  tensors between convs stored channel-blocked\n"
          "                         (NCHW16c); auto: where it pays on an AVX-512 CPU\n"
          "                         (docs/layout.md)\n"
          "  --precision f32|bf16|fp16  Conv, Gemm and MatMul products with bfloat16 or\n"
          "                         float16 operands and float32 sums; f32 (default) as\n"
          "                         written (docs/precision.md)\n"
          "  --guard                fence every arena buffer with red zones that the\n"
          "                         generated code checks after each node (docs/guard.md)\n"
          "  --check-numerics[=nan] generated code tests each node's float outputs for\n"
          "                         NaN and Inf (=nan: NaN only) and returns a status that\n"
          "                         names the first offending node (docs/numerics.md)\n"
          "  --profile              timing hooks: NAME_run_profiled calls a function of\n"
          "                         the caller's around every kernel (docs/profile.md)\n"
          "  --cuda-arch sm_XX      CUDA target: cubin architecture (repeatable;\n"
          "                         default sm_90; PTX of the lowest is added)\n"
          "  -q, --quiet            no progress line (shown on a terminal for compiles\n"
          "                         over 2 s: the pass, kernels emitted, the C compiler)\n"
          "  --help, --version\n");
  fprintf(f,
          "\n"
          "check options: --sanitize (ASan+UBSan), --rtol R, --atol A, -v (also error figures),\n"
          "  --save-outputs DIR (each data set's outputs as DIR/SET/output_N.pb),\n"
          "  -O, -D, --shape, --threads, --keep-temps,\n"
          "  --target c|cuda, --build-only (compile and link, do not run: no GPU needed)\n"
          "  Environment: CC (C compiler: set, it replaces the in-process one), AR, ONNXC_CFLAGS (extra C flags),\n"
          "  ONNXC_CHECK_SANITIZE=1 (same as --sanitize), ONNXC_CHECK_GUARD=1 (same as --guard),\n"
          "  ONNXC_INT8_LANES=0|1 (any compile: force an int8 conv form where the CPU allows both;\n"
          "  for tests, docs/int8.md).\n"
          "graph: draws the graph after the passes (docs/graph.md), the format from OUT's\n"
          "  extension; takes the compile options (-O, -D, --shape, --target, --threads, ...)\n"
          "  and --memory-report, --fusion-report, --memory-svg of the same compile\n"
          "footprint options: --cc CC (default arm-none-eabi-gcc), --cflags \"FLAGS\" (default\n"
          "  Cortex-M4F, -Os), --json FILE|-, --name, -D, -O, --weights-section, --keep-temps\n"
          "run: compiles the model for the inputs' shapes, runs it once and writes each output\n"
          "  as DIR/NAME.npy; under the JIT with the in-process compiler (docs/clang.md)\n"
          "profile options: --runs R (default: 10 to 200, about 1 s), --warmup W (default 2), --top K (rows,\n"
          "  default 20, 0: all), --trace FILE.json (Chrome/Perfetto trace), --json FILE,\n"
          "  --threads, -D, --shape, -O, --cpu, --keep-temps (docs/profile.md)\n"
          "passes: ");
  for (int i = 0; passes_names[i]; i++)
    fprintf(f, "%s%s", i ? " " : "", passes_names[i]);
  fprintf(f, "\n");
}

/* The index of v in the NULL-ended names, or -1. */
static int pick(const char *v, const char *const *names) {
  for (int i = 0; names[i]; i++)
    if (strcmp(v, names[i]) == 0)
      return i;
  return -1;
}

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "onnxc: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(see onnxc --help)\n");
  return 2;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool parse_pin(Options *o, const char *s, char *why, size_t n_why) {
  if (o->n_pins == 256) {
    snprintf(why, n_why, "at most 256 -D options");
    return false;
  }
  if (!dim_pin_parse(s, &o->pins[o->n_pins], why, n_why))
    return false;
  o->n_pins++;
  return true;
}

/* NAME=N (a sequence input's length) or NAME=none (an empty optional input). */
static bool parse_elements(Options *o, const char *s) {
  const char *eq = strchr(s, '=');
  if (!eq || eq == s || o->n_elems == 64)
    return false;
  char *end;
  long long v = strcmp(eq + 1, "none") == 0 ? -1 : strtoll(eq + 1, &end, 10);
  if (v >= 0 && (*end || end == eq + 1))
    return false;
  o->elems[o->n_elems].name = strndup(s, (size_t)(eq - s));
  o->elems[o->n_elems].n = v;
  o->n_elems++;
  return true;
}

/* Parses argv into o; returns -1 to continue, else an exit status. */
static int parse(int argc, char **argv, Options *o, bool check, const char **positional) {
  *positional = NULL;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_ARG() do { if (!next) return bad_usage("%s needs an argument", a); i++; } while (0)
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("onnxc %s\n", ONNXC_VERSION);
      return 0;
    } else if (strcmp(a, "-o") == 0) {
      NEED_ARG();
      o->out = next;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      o->quiet = true;
    } else if (strcmp(a, "-S") == 0) {
      o->kind = OUT_SRC;
    } else if (strcmp(a, "--name") == 0) {
      NEED_ARG();
      o->name = next;
    } else if (strcmp(a, "--cpu") == 0) {
      NEED_ARG();
      o->cpu = next;
    } else if (strcmp(a, "--triple") == 0) {
      NEED_ARG();
      o->triple = next;
    } else if (strcmp(a, "--target") == 0) {
      NEED_ARG();
      o->target = next;
    } else if (strncmp(a, "-D", 2) == 0) {
      const char *pin = a[2] ? a + 2 : next;
      if (!a[2]) {
        NEED_ARG();
      }
      char why[256];
      if (!parse_pin(o, pin, why, sizeof why)) {
        fprintf(stderr, "onnxc: bad -D '%s': %s\n(see onnxc --help)\n", pin ? pin : "", why);
        return 2;
      }
    } else if (strcmp(a, "--shape") == 0) {
      NEED_ARG();
      char why[256];
      if (o->n_shapes == 64)
        return bad_usage("bad --shape '%s' (at most 64 --shape options)", next);
      if (!input_shape_parse(next, &o->shapes[o->n_shapes], why, sizeof why)) {
        fprintf(stderr, "onnxc: bad --shape '%s': %s\n(see onnxc --help)\n", next, why);
        return 2;
      }
      o->n_shapes++;
    } else if (strcmp(a, "--elements") == 0) {
      NEED_ARG();
      if (!parse_elements(o, next))
        return bad_usage("bad --elements '%s' (expected NAME=N or NAME=none)", next);
    } else if (strcmp(a, "--string-bytes") == 0) {
      NEED_ARG();
      char *end = NULL;
      long long v = strtoll(next, &end, 10);
      if (!end || *end || v < 1 || v > (1LL << 40))
        return bad_usage("bad --string-bytes '%s' (expected a positive byte count)", next);
      o->string_bytes = v;
    } else if (strncmp(a, "-O", 2) == 0 && a[2] >= '0' && a[2] <= '3' && !a[3]) {
      o->opt_level = a[2] - '0';
    } else if (strcmp(a, "-O") == 0) {
      o->opt_level = 2;
    } else if (strcmp(a, "--fusion-report") == 0) {
      NEED_ARG();
      o->fusion_report = next;
    } else if (strcmp(a, "--memory-report") == 0) {
      NEED_ARG();
      o->memory_report = next;
    } else if (strcmp(a, "--memory-svg") == 0) {
      NEED_ARG();
      o->memory_svg = next;
    } else if (strcmp(a, "--dump-ir-after") == 0) {
      NEED_ARG();
      o->dump_after = next;
    } else if (strcmp(a, "--verify-ir") == 0) {
      o->verify_ir = true;
    } else if (strcmp(a, "--weights") == 0) {
      NEED_ARG();
      if (strcmp(next, "c") && strcmp(next, "blob") && strcmp(next, "auto"))
        return bad_usage("--weights takes c, blob or auto, not '%s'", next);
      o->weights_form = next;
    } else if (strcmp(a, "--weights-section") == 0) {
      NEED_ARG();
      o->weights_section = next;
    } else if (strcmp(a, "--threads") == 0) {
      NEED_ARG();
      char *end = NULL;
      long v = strtol(next, &end, 10);
      if (!end || *end || v < 1 || v > 256)
        return bad_usage("bad --threads '%s' (expected 1 to 256)", next);
      o->threads = (int)v;
    } else if (strcmp(a, "--l2-kb") == 0) {
      NEED_ARG();
      char *end = NULL;
      long v = strtol(next, &end, 10);
      if (!end || *end || v < 16 || v > (1L << 20))
        return bad_usage("bad --l2-kb '%s' (expected 16 to 1048576)", next);
      o->l2_bytes = (int64_t)v * 1024;
    } else if (strcmp(a, "--conv-order") == 0) {
      NEED_ARG();
      if (strcmp(next, "auto") == 0)
        o->conv_order = 0;
      else if (strcmp(next, "panel") == 0)
        o->conv_order = 1;
      else if (strcmp(next, "group") == 0)
        o->conv_order = 2;
      else
        return bad_usage("bad --conv-order '%s' (expected auto, panel or group)", next);
    } else if (strcmp(a, "--precision") == 0) {
      NEED_ARG();
      static const char *const precisions[] = {"f32", "bf16", "fp16", NULL};
      if ((o->precision = pick(next, precisions)) < 0)
        return bad_usage("--precision takes f32, bf16 or fp16, not '%s'", next);
    } else if (strcmp(a, "--layout") == 0) {
      NEED_ARG();
      static const char *const layouts[] = {"auto", "nchw", "nchw16c", NULL};
      if ((o->layout = pick(next, layouts)) < 0)
        return bad_usage("--layout takes auto, nchw or nchw16c, not '%s'", next);
    } else if (strcmp(a, "--profile") == 0) {
      o->profile = true;
    } else if (o->profiling && (strcmp(a, "--runs") == 0 || strcmp(a, "--warmup") == 0 || strcmp(a, "--top") == 0)) {
      NEED_ARG();
      char *end = NULL;
      long v = strtol(next, &end, 10);
      if (!end || *end || v < (a[2] == 'r') || v > 10000)
        return bad_usage("bad count '%s'", next);
      *(a[2] == 'r' ? &o->prof_runs : a[2] == 'w' ? &o->prof_warmup : &o->prof_top) = (int)v;
    } else if (o->profiling && strcmp(a, "--trace") == 0) {
      NEED_ARG();
      o->prof_trace = next;
    } else if (o->profiling && strcmp(a, "--json") == 0) {
      NEED_ARG();
      o->prof_json = next;
    } else if (strcmp(a, "--guard") == 0) {
      o->guard = true;
    } else if (strcmp(a, "--check-numerics") == 0 || strcmp(a, "--check-numerics=all") == 0) {
      o->check_numerics = 1;
    } else if (strcmp(a, "--check-numerics=nan") == 0) {
      o->check_numerics = 2;
    } else if (strncmp(a, "--check-numerics=", 17) == 0) {
      return bad_usage("bad --check-numerics value '%s' (expected nan or all)", a + 17);
    } else if (strcmp(a, "--keep-temps") == 0) {
      o->keep_temps = true;
    } else if (o->footprint && strcmp(a, "--cc") == 0) {
      NEED_ARG();
      o->fp_cc = next;
    } else if (o->footprint && strcmp(a, "--cflags") == 0) {
      NEED_ARG();
      o->fp_cflags = next;
    } else if (o->footprint && strcmp(a, "--json") == 0) {
      NEED_ARG();
      o->fp_json = next;
    } else if (strcmp(a, "--cuda-arch") == 0) {
      NEED_ARG();
      if (!cuda_arch_valid(next) || o->n_cuda_arch == 16)
        return bad_usage("bad --cuda-arch '%s' (expected sm_XX, e.g. sm_90)", next);
      o->cuda_arch[o->n_cuda_arch++] = next;
    } else if (o->run_inputs && strcmp(a, "--input") == 0) {
      NEED_ARG();
      if (*o->n_run_inputs == 256)
        return bad_usage("%s", "at most 256 --input options");
      o->run_inputs[(*o->n_run_inputs)++] = (char *)next;
    } else if (o->run_inputs && strcmp(a, "--output") == 0) {
      NEED_ARG();
      o->out = next;
    } else if (check && strcmp(a, "--build-only") == 0) {
      o->build_only = true;
    } else if (check && strcmp(a, "--sanitize") == 0) {
      o->sanitize = true;
    } else if (check && strcmp(a, "-v") == 0) {
      o->verbose = true;
    } else if (check && strcmp(a, "--save-outputs") == 0) {
      NEED_ARG();
      o->save_outputs = next;
    } else if (check && (strcmp(a, "--rtol") == 0 || strcmp(a, "--atol") == 0)) {
      NEED_ARG();
      double v = strtod(next, NULL);
      o->tol_set = true;
      if (a[2] == 'r')
        o->rtol = v;
      else
        o->atol = v;
    } else if (a[0] == '-' && a[1]) {
      return bad_usage("unknown option '%s'", a);
    } else if (*positional) {
      return bad_usage("more than one input given ('%s')", a);
    } else {
      *positional = a;
    }
#undef NEED_ARG
  }
  return -1;
}

static void options_free(Options *o) {
  for (int i = 0; i < o->n_pins; i++)
    free((char *)o->pins[i].name);
  for (int i = 0; i < o->n_elems; i++)
    free((char *)o->elems[i].name);
  for (int i = 0; i < o->n_shapes; i++)
    free((char *)o->shapes[i].name);
}

int main(int argc, char **argv) {
  Options o;
  memset(&o, 0, sizeof o);
  o.target = "c";
  o.opt_level = 2;
  o.kind = OUT_SO;
  o.rtol = 1e-3;
  o.atol = 1e-7;
  if (argc > 1 && strcmp(argv[1], "compare") == 0) /* its options are its own (compare.c) */
    return compare_main(argc - 2, argv + 2, argv[0]);
  bool check = argc > 1 && strcmp(argv[1], "check") == 0;
  o.footprint = argc > 1 && strcmp(argv[1], "footprint") == 0;
  bool graph = argc > 1 && strcmp(argv[1], "graph") == 0;
  bool run = argc > 1 && strcmp(argv[1], "run") == 0;
  char *run_inputs[256];
  int n_run_inputs = 0;
  if (run) {
    o.run_inputs = run_inputs;
    o.n_run_inputs = &n_run_inputs;
  }
  o.profiling = argc > 1 && strcmp(argv[1], "profile") == 0;
  o.prof_warmup = 2;
  o.prof_top = 20;
  int skip = 1 + (check || o.footprint || graph || o.profiling || run);
  const char *pos;
  int rc = parse(argc - skip, argv + skip, &o, check, &pos);
  if (rc >= 0)
    return rc;
  if (strcmp(o.target, "c") != 0 && strcmp(o.target, "cuda") != 0) {
    fprintf(stderr, "onnxc: unknown target '%s' (expected c or cuda)\n", o.target);
    return 2;
  }
  if (o.triple && !clangcc_available())
    return bad_usage("--triple '%s' needs onnxc built with the in-process compiler (docs/clang.md)", o.triple);
  if (o.triple && (strcmp(o.target, "c") != 0 || check || o.profiling || o.footprint))
    return bad_usage("%s", "--triple cross-builds the C target's .o, .a or sources");
  if (o.precision && strcmp(o.target, "c") != 0)
    return bad_usage("%s", "--precision bf16|fp16 is for the C target");
  if (o.guard && strcmp(o.target, "c") != 0)
    return bad_usage("%s", "--guard is for the C target");
  if (o.profile && strcmp(o.target, "c") != 0)
    return bad_usage("%s", "--profile is for the C target");
  if (o.check_numerics && strcmp(o.target, "c") != 0)
    return bad_usage("%s", "--check-numerics is for the C target");
  if (o.footprint && strcmp(o.target, "c") != 0)
    return bad_usage("%s", "footprint measures the C target only");
  if (o.dump_after && strcmp(o.dump_after, "all") != 0) {
    bool known = false;
    for (int i = 0; passes_names[i]; i++)
      known |= strcmp(passes_names[i], o.dump_after) == 0;
    if (!known)
      return bad_usage("--dump-ir-after: no pass named '%s'", o.dump_after);
  }
  if (check) {
    if (!pos)
      return bad_usage("%s", "check needs a test case folder");
    const char *san = getenv("ONNXC_CHECK_SANITIZE");
    if (san && *san && strcmp(san, "0") != 0)
      o.sanitize = true;
    const char *guard = getenv("ONNXC_CHECK_GUARD");
    if (guard && *guard && strcmp(guard, "0") != 0 && strcmp(o.target, "c") == 0)
      o.guard = true;
    rc = check_case(pos, &o);
    options_free(&o);
    return rc;
  }
  if (!pos)
    return bad_usage("%s", "no input model given");
  if (run) {
    if (!o.out || o.kind == OUT_SRC || strcmp(o.target, "c") != 0 || o.triple)
      return bad_usage("%s", "run needs --output DIR, and runs the C target on this machine");
    o.model = pos;
    rc = run_main(&o, run_inputs, n_run_inputs, o.out);
    options_free(&o);
    return rc;
  }
  if (o.profiling) {
    if (o.out || o.kind == OUT_SRC || strcmp(o.target, "c") != 0 || o.guard)
      return bad_usage("%s", "profile times the C target and writes no output (-o, -S, --guard); see --trace, --json");
    o.model = pos;
    rc = profile_run(&o);
    options_free(&o);
    return rc;
  }
  if (o.footprint) {
    if (o.out || o.kind == OUT_SRC)
      return bad_usage("%s", "footprint writes no output (-o, -S); see --json FILE");
    o.model = pos;
    rc = footprint_run(&o);
    options_free(&o);
    return rc;
  }
  if (graph) {
    if (!o.out)
      return bad_usage("%s", "graph needs an output (-o OUT.svg, OUT.html or OUT.dot)");
    if (o.kind == OUT_SRC)
      return bad_usage("%s", "graph writes one file (-o OUT.svg, OUT.html or OUT.dot), not sources (-S)");
    if (!ends_with(o.out, ".svg") && !ends_with(o.out, ".html") && !ends_with(o.out, ".dot"))
      return bad_usage("cannot tell what to draw from '%s' (use .svg, .html or .dot)", o.out);
    o.model = pos;
    rc = graph_run(&o);
    options_free(&o);
    return rc;
  }
  if (!o.out)
    return bad_usage("%s", "no output given (-o OUT)");
  o.model = pos;
  if (o.kind != OUT_SRC) {
    if (ends_with(o.out, ".so"))
      o.kind = OUT_SO;
    else if (ends_with(o.out, ".a"))
      o.kind = OUT_A;
    else if (ends_with(o.out, ".o"))
      o.kind = OUT_O;
    else
      return bad_usage("cannot tell what to build from '%s' (use .so, .a, .o, or -S DIR)", o.out);
  }
  /* With a progress line on the terminal, messages wait until it is cleared. */
  Progress prog;
  progress_init(&prog, o.quiet);
  o.progress = &prog;
  Diag d;
  diag_init(&d, o.model, prog.on ? NULL : stderr);
  bool ok = driver_build(&o, &d);
  progress_end(&prog);
  for (int i = 0; prog.on && i < d.n_msgs; i++)
    fprintf(stderr, "%s\n", d.msgs[i]);
  diag_free(&d);
  options_free(&o);
  return ok ? 0 : 1;
}
