/* fuzz_compile.c - the compiler under fuzzing: bytes -> model -> C sources.
 *
 * LLVMFuzzerTestOneInput runs what `onnxc -O2 model.onnx` runs: the frontend
 * loads the bytes as a ModelProto (no model path, so external data is
 * refused), sequence and optional inputs are expanded, the whole middle-end
 * runs at -O2, and the C target is written (blob weights) into a private
 * scratch folder whose file names are links to /dev/null: the emitters
 * build every text in memory and write it into that sink, so no input costs
 * disk space or I/O (a folded weight may be hundreds of MB). A model error is a
 * normal outcome: it is reported into a Diag and dropped. A crash, a
 * sanitizer report, a leak or an input that runs past the fuzzer's timeout
 * is a bug (docs/fuzzing.md).
 *
 * Built twice: with libFuzzer's main (ONNXC_FUZZ=ON, clang) as fuzz_compile,
 * and with tests/fuzz/replay.c's main as fuzz_replay, which replays files
 * through this same entry point under any compiler and sanitizer.
 *
 * ONNXC_FUZZ_VERBOSE=1 in the environment echoes the diagnostics to stderr.
 */
#include "codegen.h"
#include "frontend.h"
#include "passes.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char out_dir[4096];

/* What codegen_c writes for --name fuzz (codegen/c/emit_c.c). A file it may
 * write in future that is missing here lands in the folder and is removed
 * with it at exit. */
static const char *const files[] = {"fuzz.c", "fuzz.h", "fuzz_weights.h", "fuzz_weights.bin",
                                    "fuzz_weights.S", "fuzz_weights.c", "onnxc_rt.h",
                                    "onnxc_image.h"};

/* Removes the scratch folder's links and the folder (at exit). */
static void remove_out_dir(void) {
  char path[4200];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", out_dir, files[i]);
    unlink(path);
  }
  rmdir(out_dir);
}

/* The scratch folder in $TMPDIR or /tmp, created on first use, each file
 * name a link to /dev/null. */
static const char *scratch_dir(void) {
  if (out_dir[0])
    return out_dir;
  const char *base = getenv("TMPDIR");
  snprintf(out_dir, sizeof out_dir, "%s/onnxc-fuzz-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(out_dir)) {
    perror("fuzz_compile: mkdtemp");
    abort();
  }
  atexit(remove_out_dir);
  char path[4200];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", out_dir, files[i]);
    if (symlink("/dev/null", path) != 0) {
      perror("fuzz_compile: symlink");
      abort();
    }
  }
  return out_dir;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int verbose = -1;
  if (verbose < 0) {
    const char *v = getenv("ONNXC_FUZZ_VERBOSE");
    verbose = v && *v && strcmp(v, "0") != 0;
  }
  const char *dir = scratch_dir();
  Diag d;
  diag_init(&d, "fuzz.onnx", verbose ? stderr : NULL);
  Graph *g = fe_onnx_load_buffer(data, size, NULL, &d);
  if (g && pass_expand_inputs(g, NULL, 0, &d)) {
    infer_string_capacity(g, 0);
    Target t;
    codegen_target(&t, "c", 1);
    PipelineOpts po = {.opt_level = 2, .target = &t};
    Plan plan;
    memset(&plan, 0, sizeof plan);
    if (passes_run(g, &po, &plan, &d)) {
      CodegenOpts co = {.name = "fuzz", .model_path = "fuzz.onnx", .weights = WEIGHTS_BLOB, .weights_section = NULL, .threads = 1};
      codegen_c(g, &plan, &co, dir, &d);
    }
  }
  if (g)
    ir_graph_free(g);
  diag_free(&d);
  return 0;
}
