/* cuda_emit.h - state shared by the files of the CUDA emitter (emit_cuda*.c).
 *
 * emit_cuda.c owns the files (NAME.cu, NAME.c host code, NAME.h) and the
 * fallback kernels (the C target's body in a single-thread kernel);
 * emit_cuda_kernels.c owns the parallel kernels. Every kernel has the same
 * parameters as the C target's node function (X<slot>, Y<slot>, S when the
 * node has scratch) plus `int *onnxc_status`, so one launch path serves both.
 */
#ifndef ONNXC_CUDA_EMIT_H
#define ONNXC_CUDA_EMIT_H

#include "codegen.h"

typedef struct CudaKernel {
  const Graph *g;
  const Plan *plan;
  Diag *d;
  Buf *cu;                  /* NAME.cu being written */
  const char *fn;           /* the kernel's name (extern "C") */
  const char *params;       /* its parameter list, status included */
  int64_t grid[3];          /* launch configuration chosen by the emitter */
  int block[3];
  int shmem;                /* dynamic shared memory bytes */
  const char *rgrid[3];     /* -D ranges: grid dims as expressions over the host's
                               dims[] (NULL: grid[]), evaluated before the launch */
} CudaKernel;

/* Emits a parallel kernel for n into k->cu and sets the launch configuration.
 * Returns 1 when emitted, 0 when the op (or this instance's types/shapes) has
 * no parallel kernel yet (the caller emits the fallback), -1 after an error. */
int cuda_emit_parallel(CudaKernel *k, const Node *n);

/* Writing a kernel (emit_cuda_kernels.c): one indented line of its body, its
 * opening line (`what` as a comment, k->fn with k->params), its closing brace. */
void ck_line(CudaKernel *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ck_open(CudaKernel *k, const char *what);
void ck_close(CudaKernel *k);

/* The sliding-window kernels (emit_cuda_window.c); same contract as
 * cuda_emit_parallel. */
int cuda_emit_conv(CudaKernel *k, const Node *n);
int cuda_emit_convt(CudaKernel *k, const Node *n);
int cuda_emit_pool(CudaKernel *k, const Node *n, bool is_max);

/* A node whose shapes depend on a -D range (emit_cuda_dyn.c): a kernel with
 * run-time extents, taking the run's dims as `int64_t onnxc_d<k>` parameters
 * (k->params has them) and its grid in k->rgrid; strings from `a`. Same
 * contract as cuda_emit_parallel (0: emit_cuda.c runs emit_dyn.c's body in
 * one thread). */
int cuda_emit_ranged(CudaKernel *k, const Node *n, Arena *a);

/* Blocks for a grid-stride loop over n elements with `threads` per block. */
int64_t cuda_blocks_for(int64_t n, int threads);

#endif
