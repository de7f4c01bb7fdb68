/* cuda_emu.c - the part of the CUDA driver API that onnxc's host code and
 * check harness call, on the CPU (device memory is host memory), for tests
 * without a GPU. Built as libcuda.so.1; cuModuleLoadData ignores the image and
 * loads $ONNXC_CUDA_EMU_KERNELS, NAME.cu compiled for the CPU with cuda_emu.h. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*EmuLaunch)(void *, int, void **, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned);
typedef struct EmuFn {
  void *fn;
  int nparams;
  EmuLaunch launch; /* emu_launch of the kernels' library */
} EmuFn;

CUresult cuInit(unsigned flags) { (void)flags; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) { *d = ordinal; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { (void)d; *c = (CUcontext)(uintptr_t)1; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRelease(CUdevice d) { (void)d; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
CUresult cuCtxGetDevice(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  (void)d;
  *v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult r, const char **s) { (void)r; *s = "emulated error"; return CUDA_SUCCESS; }
CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  (void)image;
  const char *p = getenv("ONNXC_CUDA_EMU_KERNELS");
  void *h = p ? dlopen(p, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!h) {
    fprintf(stderr, "cuda_emu: cannot load %s: %s\n", p ? p : "$ONNXC_CUDA_EMU_KERNELS", dlerror());
    return CUDA_ERROR_INVALID_IMAGE;
  }
  *m = (CUmodule)h;
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) { dlclose((void *)m); return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  int (*np)(const char *) = (int (*)(const char *))dlsym((void *)m, "emu_nparams");
  EmuFn *e = malloc(sizeof *e);
  e->fn = dlsym((void *)m, name);
  e->nparams = np ? np(name) : -1;
  *(void **)&e->launch = dlsym((void *)m, "emu_launch");
  if (!e->fn || e->nparams < 0 || !e->launch) {
    free(e);
    return CUDA_ERROR_NOT_FOUND;
  }
  *f = (CUfunction)e;
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, CUstream s, void **params, void **extra) {
  (void)shmem; (void)s; (void)extra;
  EmuFn *e = (EmuFn *)f;
  return e->launch(e->fn, e->nparams, params, gx, gy, gz, bx, by, bz) ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
  void *m = aligned_alloc(256, (n + 255) / 256 * 256);
  *p = (CUdeviceptr)(uintptr_t)m;
  return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFree(CUdeviceptr p) { free((void *)(uintptr_t)p); return CUDA_SUCCESS; }
CUresult cuMemsetD8(CUdeviceptr p, unsigned char v, size_t n) { memset((void *)(uintptr_t)p, v, n); return CUDA_SUCCESS; }
CUresult cuMemsetD32(CUdeviceptr p, unsigned v, size_t n) {
  for (size_t i = 0; i < n; i++)
    ((unsigned *)(uintptr_t)p)[i] = v;
  return CUDA_SUCCESS;
}
CUresult cuMemsetD32Async(CUdeviceptr p, unsigned v, size_t n, CUstream s) { (void)s; return cuMemsetD32(p, v, n); }
CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  (void)st;
  memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream s) { (void)s; return CUDA_SUCCESS; }
