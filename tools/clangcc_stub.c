/* clangcc_stub.c - clangcc.h for builds without the LLVM and Clang
 * development packages: nothing is available, and the drivers use the
 * external C compiler ($CC) as before (docs/clang.md). */
#include "clangcc.h"

#include <stdlib.h>
#include <string.h>

bool clangcc_available(void) { return false; }

const char *clangcc_host_triple(void) { return ""; }

static char *unavailable(void) {
  const char *s = "onnxc was built without the in-process compiler (docs/clang.md)";
  return strdup(s);
}

bool clangcc_compile(const char *const *args, int n_args, void **obj, size_t *len, char **log) {
  (void)args;
  (void)n_args;
  *obj = NULL;
  *len = 0;
  *log = unavailable();
  return false;
}

int clangcc_jit_main(const void *const *objs, const size_t *lens, int n_objs, int argc, char **argv, char **log) {
  (void)objs;
  (void)lens;
  (void)n_objs;
  (void)argc;
  (void)argv;
  *log = unavailable();
  return -1;
}

bool clangcc_object_symbols(const void *obj, size_t len, char **names, size_t *names_len) {
  (void)obj;
  (void)len;
  *names = NULL;
  *names_len = 0;
  return false;
}
