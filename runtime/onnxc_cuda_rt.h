/* onnxc_cuda_rt.h - prelude of onnxc-generated CUDA sources (NAME.cu).
 *
 * Under NVRTC there is no C library: this header supplies the few types and
 * macros that onnxc_rt.h and the kernels use (fixed-width integers, size_t,
 * INFINITY, limits), then includes onnxc_rt.h, whose helpers become
 * __host__ __device__ functions. Under nvcc the ordinary headers serve.
 * It also holds the small device helpers shared by the kernels.
 */
#ifndef ONNXC_CUDA_RT_H
#define ONNXC_CUDA_RT_H

#ifdef __CUDACC_RTC__
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned long size_t;
typedef long ptrdiff_t;
typedef unsigned long uintptr_t;
#define NULL 0
/* Constant expressions (bit casts), so that they may initialize the static
 * const tables of kernel bodies (TreeEnsemble's NaN splits...). */
#define INFINITY __builtin_bit_cast(float, 0x7f800000u)
#define NAN __builtin_bit_cast(float, 0x7fc00000u)
#define HUGE_VAL __builtin_bit_cast(double, 0x7ff0000000000000ull)
#define HUGE_VALF INFINITY
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#define DBL_MAX 1.7976931348623158e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-16
#define INT8_MIN (-128)
#define INT8_MAX 127
#define UINT8_MAX 255
#define INT16_MIN (-32767 - 1)
#define INT16_MAX 32767
#define UINT16_MAX 65535
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295U
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#define UINT64_MAX 18446744073709551615ULL
#define PTRDIFF_MAX INT64_MAX
#define SIZE_MAX UINT64_MAX
#define INT64_C(c) c##LL
#define UINT64_C(c) c##ULL
#define M_PI 3.14159265358979323846
#else
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#endif

/* C99 spellings that the kernel bodies of the C target use. */
#define restrict __restrict__

#include "onnxc_rt.h"

/* Single-thread fallback kernels report a data-dependent status here: the first
 * nonzero code of a run wins (the host resets it before each run). */
static __device__ inline void onnxc_cuda_report(int *status, int st) {
  if (st != 0)
    atomicCAS(status, 0, st);
}

/* Grid-stride loop over n elements. */
#define ONNXC_CUDA_FOR(i, n)                                                           \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (int64_t)(n); \
       i += (int64_t)gridDim.x * blockDim.x)

#endif
