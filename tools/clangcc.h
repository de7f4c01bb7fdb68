/* clangcc.h - the in-process C compiler (docs/clang.md): the C interface of
 * clangcc.cpp, the one C++ file of onnxc, built when CMake finds the LLVM and
 * Clang development packages (ONNXC_WITH_CLANG). Without them, clangcc_stub.c
 * provides the same functions, and clangcc_available() is false. */
#ifndef ONNXC_CLANGCC_H
#define ONNXC_CLANGCC_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True when onnxc was built with the in-process compiler. */
bool clangcc_available(void);

/* Compiles one C file with a clang command line (args: the flags and the
 * source path, as for `clang -c`, without "clang", "-c" or "-o"), into an
 * object in memory: *obj (free() it) of *len bytes. On failure returns false
 * and *log (free() it) holds the diagnostics; on success *log holds the
 * warnings, or is NULL. */
bool clangcc_compile(const char *const *args, int n_args, void **obj, size_t *len, char **log);

/* The global symbols an object defines, each NUL-terminated, one after
 * another, in *names (free() it) of *len bytes; false when it does not parse. */
bool clangcc_object_symbols(const void *obj, size_t len, char **names, size_t *names_len);

/* The default target triple of this machine ("x86_64-pc-linux-gnu"). */
const char *clangcc_host_triple(void);

/* Links the objects in memory with LLVM's JIT (ORC) against this process's
 * libraries, and calls their `int main(int, char **)`; returns its status,
 * or -1 with *log set when linking fails. Runs in the calling process: run it
 * in a child to survive a crash of the code. */
int clangcc_jit_main(const void *const *objs, const size_t *lens, int n_objs, int argc, char **argv,
                     char **log);

#ifdef __cplusplus
}
#endif

#endif
