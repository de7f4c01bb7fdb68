/* codegen_util.h - the sources codegen_c writes for a planned graph, read
 * back as strings, for tests that check the emitted text. */
#ifndef ONNXC_CODEGEN_UTIL_H
#define ONNXC_CODEGEN_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "codegen.h"

/* The file's bytes as a heap string, or NULL when it cannot be read. */
static inline char *cu_slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  Buf b;
  buf_init(&b);
  char tmp[4096];
  size_t k;
  while ((k = fread(tmp, 1, sizeof tmp, f)) > 0)
    buf_write(&b, tmp, k);
  fclose(f);
  if (!b.s)
    buf_puts(&b, "");
  return b.s;
}

/* Writes g with plan p as model "m" built for `threads` threads (the plan
 * made for as many) into a fresh folder, reads back m.c and, when h is not
 * NULL, m.h (heap strings), and removes the files. */
static inline char *cu_generate_threads(const Graph *g, const Plan *p, int threads, char **h) {
  char dir[] = "/tmp/onnxc-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  CodegenOpts co = {.name = "m", .model_path = "t.onnx", .weights = WEIGHTS_C, .weights_section = NULL, .threads = threads};
  assert_true(codegen_c(g, p, &co, dir, &d));
  diag_free(&d);
  char path[4096], *c = NULL;
  const char *files[] = {"m.c", "m.h", "m_weights.c", "m_weights.h", "onnxc_rt.h"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    if (i == 0)
      c = cu_slurp(path);
    else if (i == 1 && h)
      *h = cu_slurp(path);
    unlink(path);
  }
  rmdir(dir);
  assert_non_null(c);
  return c;
}

/* The same for one thread. */
static inline char *cu_generate(const Graph *g, const Plan *p, char **h) {
  return cu_generate_threads(g, p, 1, h);
}

#endif
