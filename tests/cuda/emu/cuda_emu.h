/* cuda_emu.h - runs onnxc's generated NAME.cu on the CPU, for tests without a GPU.
 *
 * Force-included (g++ -include) when compiling NAME.cu as C++: kernels become
 * plain functions; emu_launch runs one launch with one POSIX thread per CUDA
 * thread of a block, the threads walking the grid's blocks in step, with a
 * barrier for __syncthreads and between blocks, so __shared__ (a static here)
 * behaves as on the device. With ONNXC_EMU_REVERSE_BLOCKS=1 in the environment
 * the blocks run last to first (CUDA promises no order): a kernel, or a
 * batched launch (docs/cuda.md), whose blocks depend on earlier blocks then
 * reads what is not written yet. tests/cuda/emu/cuda_emu.c is the matching driver
 * API (libcuda) on the host side; tests/cuda/emu_check.py drives both.
 */
#ifndef ONNXC_CUDA_EMU_H
#define ONNXC_CUDA_EMU_H
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct emu_dim3 {
  unsigned x, y, z;
};
static thread_local emu_dim3 threadIdx, blockIdx;
static emu_dim3 blockDim, gridDim;
static pthread_barrier_t emu_bar;
static bool emu_reverse;

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define ONNXC_NOINLINE
static inline void __syncthreads(void) { pthread_barrier_wait(&emu_bar); }
static inline int atomicCAS(int *p, int cmp, int val) { return __sync_val_compare_and_swap(p, cmp, val); }

#define EMU_MAX_PARAMS 32
typedef void (*emu_fn)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *,
                       void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *,
                       void *, void *, void *, void *, void *, void *, void *, void *, void *, void *);
struct emu_launch_args {
  emu_fn fn;
  void *p[EMU_MAX_PARAMS];
  unsigned tx, ty, tz;
};

static void *emu_thread(void *arg) {
  emu_launch_args *a = (emu_launch_args *)arg;
  threadIdx.x = a->tx;
  threadIdx.y = a->ty;
  threadIdx.z = a->tz;
  for (unsigned z = 0; z < gridDim.z; z++)
    for (unsigned y = 0; y < gridDim.y; y++)
      for (unsigned x = 0; x < gridDim.x; x++) {
        blockIdx.x = emu_reverse ? gridDim.x - 1 - x : x;
        blockIdx.y = emu_reverse ? gridDim.y - 1 - y : y;
        blockIdx.z = emu_reverse ? gridDim.z - 1 - z : z;
        a->fn(a->p[0], a->p[1], a->p[2], a->p[3], a->p[4], a->p[5], a->p[6], a->p[7], a->p[8], a->p[9], a->p[10],
              a->p[11], a->p[12], a->p[13], a->p[14], a->p[15], a->p[16], a->p[17], a->p[18], a->p[19], a->p[20],
              a->p[21], a->p[22], a->p[23], a->p[24], a->p[25], a->p[26], a->p[27], a->p[28], a->p[29], a->p[30],
              a->p[31]);
        pthread_barrier_wait(&emu_bar);
      }
  return 0;
}

/* Every kernel parameter of onnxc's kernels is a pointer or (-D ranges: the
 * run's dims) an int64_t, both one 8-byte integer register or stack slot in
 * the x86-64 calling convention, so each is passed as the 8 bytes it holds. */
extern "C" int emu_launch(void *fn, int nparams, void **params, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz) {
  unsigned nt = bx * by * bz;
  if (nparams > EMU_MAX_PARAMS)
    return 1;
  const char *rev = getenv("ONNXC_EMU_REVERSE_BLOCKS");
  emu_reverse = rev && rev[0] == '1';
  gridDim.x = gx;
  gridDim.y = gy;
  gridDim.z = gz;
  blockDim.x = bx;
  blockDim.y = by;
  blockDim.z = bz;
  emu_launch_args *args = new emu_launch_args[nt];
  pthread_t *th = new pthread_t[nt];
  pthread_barrier_init(&emu_bar, 0, nt);
  for (unsigned t = 0; t < nt; t++) {
    args[t].fn = (emu_fn)fn;
    for (int i = 0; i < EMU_MAX_PARAMS; i++)
      args[t].p[i] = i < nparams ? *(void **)params[i] : 0;
    args[t].tx = t % bx;
    args[t].ty = t / bx % by;
    args[t].tz = t / (bx * by);
  }
  int rc = 0;
  for (unsigned t = 0; t < nt; t++)
    if (pthread_create(&th[t], 0, emu_thread, &args[t]) != 0)
      rc = 1;
  for (unsigned t = 0; t < nt && rc == 0; t++)
    pthread_join(th[t], 0);
  pthread_barrier_destroy(&emu_bar);
  delete[] args;
  delete[] th;
  return rc;
}
#endif
