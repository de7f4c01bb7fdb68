/* onnxc_rt.h - the whole runtime of onnxc-generated C code.
 *
 * Generated sources include this header and nothing else from onnxc. It
 * holds the status codes of NAME_run and a few static inline helpers. It needs
 * only <stdint.h>, <stddef.h> and <math.h>; no allocation, no I/O, no global
 * state, so it builds freestanding (apart from libm) for any C99 target.
 */
#ifndef ONNXC_RT_H
#define ONNXC_RT_H

/* NVRTC has no C library headers: the CUDA target's prelude (onnxc_cuda_rt.h)
 * defines what these would and includes this header after it. */
#ifndef __CUDACC_RTC__
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#endif

/* Helpers are plain static inline C; under CUDA they are usable in kernels too. */
/* gcc: floating-point operations are taken not to trap. The generated code
 * never reads the floating-point exception flags, and no value changes (no
 * reassociation, no contraction). Without it gcc will not turn a select
 * (x < lo ? lo : x) into a blend unless the target has masked vector
 * instructions: on AVX2 every loop through onnxc_expf / onnxc_erff (Softmax,
 * GELU, Sigmoid) and every clamp stayed scalar (BERT-tiny's GELU Gemm 11 ns
 * per element). Clang never keeps such selects as branches. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#pragma GCC optimize("no-trapping-math")
#endif

#ifndef ONNXC_RT_FN
#if defined(__CUDACC__)
#define ONNXC_RT_FN static __host__ __device__ inline
#else
#define ONNXC_RT_FN static inline
#endif
#endif

/* Status codes returned by NAME_run. */
#define ONNXC_OK 0
#define ONNXC_ERR_NULL_ARG 1     /* arena, an input or an output was NULL */
#define ONNXC_ERR_BAD_INDEX 2    /* a data-dependent index (Gather...) was out of range */
#define ONNXC_ERR_UNSUPPORTED 3  /* run-time inputs asked for what the code cannot do
                                    (training-mode Dropout with a ratio > 0) */
/* CUDA target only (docs/cuda.md): */
#define ONNXC_ERR_CUDA 4         /* a CUDA driver call failed (NAME_cuda_error gives its CUresult) */
#define ONNXC_ERR_NO_CUDA_IMAGE 5 /* no embedded cubin or PTX loads on this device */
#define ONNXC_ERR_NO_MEMORY 6    /* NAME_init could not allocate its host context */
/* ImageDecoder (onnxc_image.h): */
#define ONNXC_ERR_BAD_IMAGE 7    /* malformed encoded image, or not of the declared size */
/* String ops (docs/strings.md): */
#define ONNXC_ERR_CAPACITY 8     /* made strings need more than --string-bytes, or more
                                    substrings than StringSplit's bound */
/* If with a condition known only at run time (docs/control-flow.md): */
#define ONNXC_ERR_BRANCH 9       /* the run took an If branch that could not be compiled
                                    for the model's static shapes (the compiler warned) */
/* Guard mode (onnxc --guard, docs/guard.md): */
#define ONNXC_ERR_GUARD 10       /* a node wrote into a red zone (NAME_guard_report says which) */
/* --check-numerics (docs/numerics.md): a kernel's output held NaN (or, without
 * =nan, an infinity). The status also names the schedule step of that node:
 * ONNXC_STATUS_CODE gives the code, NAME_status_node the node's name and op. */
#define ONNXC_ERR_NONFINITE 11
/* -D NAME=LO..HI (docs/dynamic-shapes.md): NAME_run_dims got a dim outside its range. */
#define ONNXC_ERR_DIM 12
#define ONNXC_STATUS_CODE(st) ((st) & 0xff)
#define ONNXC_NONFINITE_AT(step) (ONNXC_ERR_NONFINITE | (((step) + 1) << 8))

/* Weights are placed in this section when the model was compiled with
 * --weights-section; otherwise the attribute is empty. */
#if defined(__GNUC__) || defined(__clang__)
#define ONNXC_ALIGNED(n) __attribute__((aligned(n)))
#define ONNXC_SECTION(s) __attribute__((section(s)))
#else
#define ONNXC_ALIGNED(n)
#define ONNXC_SECTION(s)
#endif

/* Marks NAME_run as the library's exported entry point when the rest of the
 * generated code is built with hidden visibility. */
#if defined(__GNUC__) || defined(__clang__)
#define ONNXC_API __attribute__((visibility("default")))
#else
#define ONNXC_API
#endif

/* Each node's function (nodeN_OP) is called once, from NAME_run. Clang's
 * inliner would put them all into NAME_run, and its loop passes then take
 * minutes on that one function (SqueezeNet: 32 s of CPU instead of 6 s);
 * gcc's growth limits already keep most of them apart (docs/clang.md). */
#if defined(__clang__)
#define ONNXC_NODE_FN static __attribute__((noinline))
#else
#define ONNXC_NODE_FN static
#endif

/* A node function whose loops evaluate onnxc_expf, onnxc_erff or
 * onnxc_tanhf (Softmax rows, GELU epilogues, Sigmoid...): on AVX-512, gcc's
 * cost model vectorizes 256 bits wide by default; these loops are bound by
 * instruction count, so 512-bit vectors do the same element-wise arithmetic
 * in fewer instructions (BERT-tiny's GELU Gemm 1.4x). The results are the
 * same: the vector width changes no operation. Never inlined: gcc inlined
 * a node called once into NAME_run, where the loop stayed scalar (YOLOv8n's
 * first SiLU + Add, 102400 elements: 0.70 ms instead of 0.05). */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8 && defined(__AVX512F__)
#define ONNXC_NODE_FN_W static __attribute__((noinline, target("prefer-vector-width=512")))
#elif defined(__GNUC__) || defined(__clang__)
/* the same inlining, and the same scalar loop, on every other target (AVX2:
 * YOLOv8n's SiLU + Add 1.1 ms) */
#define ONNXC_NODE_FN_W static __attribute__((noinline))
#else
#define ONNXC_NODE_FN_W ONNXC_NODE_FN
#endif

/* a * b + c in one rounding where the target has a fused multiply-add
 * instruction (x86 FMA3, Arm with FMA): gcc and clang compile ISO C without
 * contracting a * b + c, so kernels that want the instruction (depthwise
 * convs) say so; elsewhere two roundings. */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__FMA__) || defined(__ARM_FEATURE_FMA))
#define ONNXC_FMAF(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define ONNXC_FMAF(a, b, c) ((a) * (b) + (c))
#endif

/* The model's description, returned by NAME_info() (docs/abi.md, "The model
 * description"): constant data in NAME.c, so it also works on firmware.
 * Bindings (python/onnxc) read it instead of parsing NAME.h. Fields are only
 * ever added at the end, with a higher ONNXC_INFO_VERSION. */
#define ONNXC_INFO_VERSION 2
#define ONNXC_KIND_TENSOR 0      /* elements of a numeric or bool type, stored as in NAME_run */
#define ONNXC_KIND_STRING 1      /* elements are onnxc_str (const char *) pointers */

typedef struct onnxc_tensor_info {
  const char *name;        /* the ONNX name (a sequence element: the expanded name, e.g. "s_0") */
  const int64_t *dims;     /* rank extents (NULL when rank is 0); upper bounds for dynamic dims */
  int64_t numel;           /* elements (the capacity when dynamic_dims != 0) */
  int64_t bytes;           /* bytes of the caller's buffer (sub-byte types are packed) */
  int32_t elem_type;       /* ONNX TensorProto.DataType: 1 float, 7 int64, 10 float16, 16 bfloat16... */
  int32_t elem_bits;       /* bits of one element: 32 for float, 4 for int4; pointer bits for strings */
  int32_t kind;            /* ONNXC_KIND_TENSOR or ONNXC_KIND_STRING */
  int32_t rank;
  uint32_t dynamic_dims;   /* bit i: dim i is data-dependent; the run writes the actual dims
                              into the rank int64_t array that follows the outputs */
} onnxc_tensor_info;

/* A dim kept symbolic within a range (-D NAME=LO..HI[:STEP], version 2). */
typedef struct onnxc_dim_info {
  const char *name;
  int64_t lo, hi;          /* the range */
  int64_t step;            /* values are multiples of it (1: any) */
} onnxc_dim_info;

typedef struct onnxc_model_info {
  int32_t info_version;    /* ONNXC_INFO_VERSION of the compiler that wrote it */
  int32_t n_inputs;
  int32_t n_outputs;
  int32_t threads;         /* --threads N (1: no pool, no NAME_free_threads) */
  const char *name;        /* the C prefix (--name) */
  const char *onnxc_version;
  int64_t arena_bytes;     /* NAME_ARENA_BYTES */
  int64_t arena_align;     /* the arena's alignment in bytes (64) */
  const onnxc_tensor_info *inputs;   /* n_inputs entries, in NAME_run's order */
  const onnxc_tensor_info *outputs;  /* n_outputs entries */
  int32_t n_dynamic_outputs; /* outputs with dynamic_dims != 0: NAME_run_v's extra entries */
  /* version 2: dims known at run time (-D ranges, docs/dynamic-shapes.md); 0 and NULLs
   * without. inputs[i].dims and outputs[i].dims are then the upper bounds. */
  int32_t n_dims;
  const onnxc_dim_info *dims;       /* n_dims entries: NAME_run_dims's dims[] order */
  const int32_t *input_dims;        /* for each input in order, rank entries: the index of the
                                       range whose value that extent is, -1 for a static extent,
                                       -2 for an expression of the ranges */
  int (*output_shapes)(const int64_t *dims, int64_t *extents); /* every output's extents at dims,
                                       one after another in order (data-dependent ones: their
                                       upper bounds); ONNXC_ERR_DIM when a dim is out of range */
  int (*run_dims_v)(void *arena, const int64_t *dims, const void *const *inputs, void *const *outputs);
  int64_t (*arena_bytes_at)(const int64_t *dims); /* NAME_arena_bytes: the bytes a run at dims uses */
} onnxc_model_info;

/* Portable infinity and NaN for float literals in generated code. */
#define ONNXC_INF_F ((float)INFINITY)
#define ONNXC_NAN_F ((float)NAN)

/* Fast float exp, erf and tanh for generated loops (Exp, Erf, Tanh, Sigmoid,
 * Softmax in float32): no branches (selects only) and no libm calls, so
 * the C compiler vectorizes the loops that use them. Against double precision
 * over every 61st float: exp 1.3 ulp (0 below -87, where exp < 1.7e-38), erf
 * 1.28 ulp (over every float too), tanh 1.4 ulp. erf is three polynomials
 * evaluated side by side and one picked by |x| (no division, no exp: 0.64 ns
 * an element in a 16-lane loop on Zen 4, against 1.17 for the earlier
 * erfc(x) = exp(-x^2) Q(1 / (1 + x / 2)) form); their coefficients were
 * fitted here by weighted least squares on float32 arguments. NaN gives NaN; overflow +inf.
 * Plain multiplies and adds, no fused ones: the same bits on every ISA (the
 * fp16 kernels are checked for that). */
ONNXC_RT_FN float onnxc_expf(float x) {
  union { uint32_t u; float f; } s;
  const float xc = x < -87.0f ? -87.0f : (x > 88.7228f ? 88.7228f : x);
  /* n = round(xc / ln 2) by the 1.5 * 2^23 trick; r = xc - n ln 2 in two steps */
  const float n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (xc - n * 0.693145752f) - n * 1.42860682e-6f;
  float p = 0.00138939498f;
  p = p * r + 0.0083631305f;
  p = p * r + 0.0416669399f;
  p = p * r + 0.166665778f;
  p = p * r + 0.5f;
  p = 1.0f + r + r * r * p;
  /* times 2^n, n in [-126, 128]: as 2^(n-1) * 2 when n > 0 */
  s.u = (uint32_t)((int32_t)n + (n > 0.0f ? 126 : 127)) << 23;
  p = p * s.f * (n > 0.0f ? 2.0f : 1.0f);
  p = x < -87.0f ? 0.0f : p;
  p = x > 88.7228f ? ONNXC_INF_F : p;
  return x != x ? x : p;
}

ONNXC_RT_FN float onnxc_erff(float x) {
  const float a = fabsf(x), z = x * x;
  const float ac = a > 3.96f ? 3.96f : a; /* past 3.92, erf rounds to 1 */
  const float u = ac - 1.525f, v = ac - 3.005f;
  float s = 7.853907e-05f, p = 0.0020736575f, q = 8.72471e-05f, big;
  /* |x| < 1: x + x S(x^2) */
  s = s * z - 0.0008010209f;
  s = s * z + 0.0051883296f;
  s = s * z - 0.026853813f;
  s = s * z + 0.112835854f;
  s = s * z - 0.37612626f;
  s = s * z + 0.12837917f;
  /* 1 <= |x| < 2.05 and 2.05 <= |x|: 1 - erfc, erfc as P(|x| - 1.525) and Q(|x| - 3.005) */
  p = p * u + 0.0041930783f;
  q = q * v - 0.0003866855f;
  p = p * u - 0.018479545f;
  q = q * v + 0.0007679327f;
  p = p * u + 0.012231479f;
  q = q * v - 0.0009994094f;
  p = p * u + 0.04628102f;
  q = q * v + 0.0010031458f;
  p = p * u - 0.13422036f;
  q = q * v - 0.0007666863f;
  p = p * u + 0.16815841f;
  q = q * v + 0.00040817558f;
  p = p * u - 0.11026756f;
  q = q * v - 0.00013526442f;
  p = p * u + 0.031030945f;
  q = q * v + 2.1360318e-05f;
  big = 1.0f - (a < 2.05f ? p : q);
  big = x < 0.0f ? -big : big;
  return a < 1.0f ? x + x * s : big;
}

ONNXC_RT_FN float onnxc_tanhf(float x) {
  const float a = fabsf(x), z = x * x;
  const float e = onnxc_expf(2.0f * (a > 10.0f ? 10.0f : a)); /* past 10, tanh rounds to 1 */
  float p = 0.00230657449f, big = 1.0f - 2.0f / (e + 1.0f);
  /* |x| < 0.625: x + x^3 P(x^2) */
  p = p * z - 0.00835843477f;
  p = p * z + 0.0217743721f;
  p = p * z - 0.0539601371f;
  p = p * z + 0.133333087f;
  p = p * z - 0.333333343f;
  big = x < 0 ? -big : big;
  return a < 0.625f ? x + x * z * p : big;
}

/* IEEE half <-> float, bit exact, round to nearest even. x86: with AVX-512
 * in selects and integer/float arithmetic that the C compiler vectorizes
 * (a loop over float16 data converts 16 elements per instruction); with
 * F16C alone one instruction each (VCVTPH2PS / VCVTPS2PH on a scalar). All
 * three forms give the same bits on every float and half (checked on all
 * 2^32 and 2^16 patterns), except that the portable one keeps a signaling
 * half NaN signaling where the others quiet it. The F16C forms are taken
 * only where the includer defines ONNXC_RT_HALF (generated sources that
 * convert float16 do): <immintrin.h> would otherwise cost every compile
 * about half a second. */
#if defined(__F16C__) && !defined(__CUDACC__) && defined(ONNXC_RT_HALF)
#include <immintrin.h>
#define ONNXC_RT_F16C 1
#endif
ONNXC_RT_FN float onnxc_f16_to_f32(uint16_t h) {
#if defined(ONNXC_RT_F16C) && defined(__AVX512F__)
  union { uint32_t u; float f; } o, m;
  uint32_t u = (uint32_t)(h & 0x7fffu) << 13, e = u & 0x0f800000u, s = (uint32_t)(h & 0x8000u) << 16;
  m.u = u + (113u << 23);
  m.f -= 6.103515625e-05f; /* a subnormal: its significand times 2^-24 */
  o.u = u + (112u << 23);
  o.u = e == 0x0f800000u ? (o.u + (112u << 23)) | ((u & 0x7fffffu) ? 0x400000u : 0u) : o.u;
  o.u = (e == 0 ? m.u : o.u) | s;
  return o.f;
#elif defined(ONNXC_RT_F16C)
  return _cvtsh_ss(h);
#else
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  union { uint32_t u; float f; } c;
  if (exp == 0x1fu) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    float f = (float)man * (1.0f / 16777216.0f);
    return sign ? -f : f;
  } else {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  }
  c.u = bits;
  return c.f;
#endif
}

ONNXC_RT_FN uint16_t onnxc_f32_to_f16(float f) {
#if defined(ONNXC_RT_F16C) && defined(__AVX512F__)
  union { uint32_t u; float f; } v, d;
  uint32_t a, r;
  v.f = f;
  a = v.u & 0x7fffffffu;
  d.u = a;
  d.f += 0.5f; /* under 2^-14: units of 2^-24 in the low bits, to nearest even */
  r = a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x3ffu)
      : a >= 0x477ff000u ? 0x7c00u
      : a >= 0x38800000u ? (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13
      : d.u - 0x3f000000u;
  return (uint16_t)(((v.u >> 16) & 0x8000u) | r);
#elif defined(ONNXC_RT_F16C)
  return (uint16_t)_cvtss_sh(f, 0);
#else
  union { uint32_t u; float f; } c;
  uint32_t x, ax, r;
  uint16_t sign;
  c.f = f;
  x = c.u;
  sign = (uint16_t)((x >> 16) & 0x8000u);
  ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)
    return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  if (ax >= 0x477ff000u)
    return (uint16_t)(sign | 0x7c00u);
  if (ax < 0x38800000u) {
    c.u = ax;
    return (uint16_t)(sign | (uint16_t)lrintf(c.f * 16777216.0f));
  }
  r = ax + 0xfffu + ((ax >> 13) & 1u) - (112u << 23);
  return (uint16_t)(sign | (r >> 13));
#endif
}

/* n halves to floats and back (the Casts around a float16 model's products,
 * passes/precision.c): with AVX-512F or F16C, 16 or 8 per instruction; the
 * same bits as the conversions above. */
ONNXC_RT_FN void onnxc_f16_to_f32_n(float *d, const uint16_t *s, ptrdiff_t n) {
  ptrdiff_t i = 0, nv = 0;
#if defined(ONNXC_RT_F16C) && defined(__AVX512F__)
  nv = n / 16 * 16;
  for (; i < nv; i += 16)
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + i))));
#elif defined(ONNXC_RT_F16C)
  nv = n / 8 * 8;
  for (; i < nv; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
#endif
  for (i = nv; i < n; i++)
    d[i] = onnxc_f16_to_f32(s[i]);
}

ONNXC_RT_FN void onnxc_f32_to_f16_n(uint16_t *d, const float *s, ptrdiff_t n) {
  ptrdiff_t i = 0, nv = 0;
#if defined(ONNXC_RT_F16C) && defined(__AVX512F__)
  nv = n / 16 * 16;
  for (; i < nv; i += 16)
    _mm256_storeu_si256((__m256i *)(d + i), _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
#elif defined(ONNXC_RT_F16C)
  nv = n / 8 * 8;
  for (; i < nv; i += 8)
    _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (i = nv; i < n; i++)
    d[i] = onnxc_f32_to_f16(s[i]);
}

ONNXC_RT_FN float onnxc_bf16_to_f32(uint16_t h) {
  union { uint32_t u; float f; } c;
  c.u = (uint32_t)h << 16;
  return c.f;
}

ONNXC_RT_FN uint16_t onnxc_f32_to_bf16(float f) {
  union { uint32_t u; float f; } c;
  c.f = f;
  if ((c.u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((c.u >> 16) | 0x40u);
  c.u += 0x7fffu + ((c.u >> 16) & 1u);
  return (uint16_t)(c.u >> 16);
}

/* ---- 8- and 4-bit floats, packed 4- and 2-bit integers (Cast) --------------
 * Minifloats carry the names of their ONNX types: f8e4m3fn, f8e4m3fnuz,
 * f8e5m2, f8e5m2fnuz, f4e2m1 (one per nibble) and f8e8m0 (a power of two).
 * Decoding is exact. Encoding takes a float, as ml_dtypes (which the ONNX
 * reference uses) does: a double is rounded to float first, the float then to
 * nearest even. With `sat` a value beyond the largest finite one (infinities
 * included) becomes that value, without it inf (e5m2) or NaN (the others).
 * e2m1 has neither and always saturates. FNUZ types have no -0 (negative values that round to zero
 * give +0) and one NaN, 0x80. NaN encodings match ml_dtypes: 0x7f/0x7e with
 * the sign for e4m3fn/e5m2, and for e2m1 a zero of the opposite sign (the
 * float4 spec's table says 6; the reference and its test data say -0).
 * Packed integers hold element i at bits (i % k) * b of byte i / k (b bits,
 * k = 8 / b elements per byte, low bits first); floats become them by
 * truncation toward zero modulo 2^b, as ml_dtypes does (out of range is
 * undefined in ONNX). */

/* |x| rounded to nearest even into a minifloat with `mb` mantissa bits and
 * exponent bias `bias`: the code (biased exponent << mb | mantissa), which may
 * exceed the type's largest finite code. x is finite or infinite, not NaN. */
ONNXC_RT_FN uint32_t onnxc_mf_round(double x, int mb, int bias) {
  union { double d; uint64_t u; } c;
  uint64_t sig, code, rem, half;
  int e, te, shift;
  c.d = x;
  e = (int)((c.u >> 52) & 0x7ffu);
  if (e == 0)
    return 0;  /* double subnormals are far below every minifloat's range */
  sig = (c.u & 0xfffffffffffffull) | (1ull << 52);
  te = e - 1023 + bias;
  if (te >= 1) {
    shift = 52 - mb;
    code = ((uint64_t)te << mb) | ((sig & 0xfffffffffffffull) >> shift);
  } else {
    shift = 53 - mb - te;
    if (shift > 54)
      return 0;
    code = sig >> shift;
  }
  rem = sig & ((1ull << shift) - 1u);
  half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (code & 1u)))
    code++;
  return code > 0xffffu ? 0xffffu : (uint32_t)code;
}

/* Encodes x: sb is the sign bit, maxc the largest finite code, nan the code of
 * +NaN, infc the code of +inf (0: none), fnuz set for FNUZ types. */
ONNXC_RT_FN uint8_t onnxc_mf_encode(double x, int mb, int bias, uint32_t sb, uint32_t maxc,
                                      uint32_t nan, uint32_t infc, int fnuz, int sat) {
  union { double d; uint64_t u; } c;
  uint32_t sign, code;
  c.d = x;
  sign = (c.u >> 63) ? sb : 0u;
  if (x != x)
    return (uint8_t)(fnuz ? 0x80u : nan ^ sign);
  code = onnxc_mf_round(x, mb, bias);
  if (code > maxc) {
    if (sat)
      code = maxc;
    else
      return (uint8_t)(infc ? infc | sign : fnuz ? 0x80u : nan ^ sign);
  }
  if (code == 0 && fnuz)
    return 0;
  return (uint8_t)(code | sign);
}

/* Decodes a finite, non-NaN code (sign bit sb) to float. */
ONNXC_RT_FN float onnxc_mf_decode(uint32_t v, int mb, int bias, uint32_t sb) {
  union { uint32_t u; float f; } c, scale;
  uint32_t mag = v & (sb - 1u), e = mag >> mb, m = mag & ((1u << mb) - 1u);
  if (e == 0) {  /* subnormal: m * 2^(1 - bias - mb), a power of two exactly */
    scale.u = (uint32_t)(127 + 1 - bias - mb) << 23;
    c.f = (float)m * scale.f;
  } else {
    c.u = ((e + 127u - (uint32_t)bias) << 23) | (m << (23 - mb));
  }
  return (v & sb) ? -c.f : c.f;
}

/* A quiet NaN with the sign of code v (sign bit sb). */
ONNXC_RT_FN float onnxc_mf_nan(uint32_t v, uint32_t sb) {
  union { uint32_t u; float f; } c;
  c.u = (v & sb) ? 0xffc00000u : 0x7fc00000u;
  return c.f;
}

ONNXC_RT_FN uint8_t onnxc_f32_to_f8e4m3fn(float x, int sat) {
  return onnxc_mf_encode(x, 3, 7, 0x80u, 0x7eu, 0x7fu, 0, 0, sat);
}
ONNXC_RT_FN uint8_t onnxc_f32_to_f8e4m3fnuz(float x, int sat) {
  return onnxc_mf_encode(x, 3, 8, 0x80u, 0x7fu, 0x80u, 0, 1, sat);
}
ONNXC_RT_FN uint8_t onnxc_f32_to_f8e5m2(float x, int sat) {
  return onnxc_mf_encode(x, 2, 15, 0x80u, 0x7bu, 0x7eu, 0x7cu, 0, sat);
}
ONNXC_RT_FN uint8_t onnxc_f32_to_f8e5m2fnuz(float x, int sat) {
  return onnxc_mf_encode(x, 2, 16, 0x80u, 0x7fu, 0x80u, 0, 1, sat);
}
/* The nibble of x in e2m1 (always saturating). */
ONNXC_RT_FN uint8_t onnxc_f32_to_f4e2m1(float x) {
  return onnxc_mf_encode(x, 1, 1, 0x8u, 0x7u, 0x8u, 0, 0, 1);
}

ONNXC_RT_FN float onnxc_f8e4m3fn_to_f32(uint8_t v) {
  return (v & 0x7fu) == 0x7fu ? onnxc_mf_nan(v, 0x80u) : onnxc_mf_decode(v, 3, 7, 0x80u);
}
ONNXC_RT_FN float onnxc_f8e4m3fnuz_to_f32(uint8_t v) {
  return v == 0x80u ? onnxc_mf_nan(0, 0x80u) : onnxc_mf_decode(v, 3, 8, 0x80u);
}
ONNXC_RT_FN float onnxc_f8e5m2_to_f32(uint8_t v) {
  if ((v & 0x7cu) == 0x7cu)
    return (v & 3u) ? onnxc_mf_nan(v, 0x80u) : (v & 0x80u) ? -(float)INFINITY : (float)INFINITY;
  return onnxc_mf_decode(v, 2, 15, 0x80u);
}
ONNXC_RT_FN float onnxc_f8e5m2fnuz_to_f32(uint8_t v) {
  return v == 0x80u ? onnxc_mf_nan(0, 0x80u) : onnxc_mf_decode(v, 2, 16, 0x80u);
}
ONNXC_RT_FN float onnxc_f4e2m1_to_f32(uint8_t nibble) {
  return onnxc_mf_decode(nibble & 0xfu, 1, 1, 0x8u);
}

/* e8m0: 2^(v - 127), 0xff is NaN. Encoding follows onnx.numpy_helper.
 * to_float8e8m0 bit for bit: it reads only the float's exponent (the sign is
 * ignored; negative inputs are undefined in ONNX), NaN and inf give 0xff, and
 * the fraction decides rounding by `mode`: ONNXC_E8M0_UP (any fraction rounds
 * up), ONNXC_E8M0_DOWN (truncates) or ONNXC_E8M0_NEAREST. With `sat` a
 * rounding step past the largest exponent (0xfe) is dropped, else it gives
 * NaN. */
#define ONNXC_E8M0_UP 0
#define ONNXC_E8M0_DOWN 1
#define ONNXC_E8M0_NEAREST 2
ONNXC_RT_FN uint8_t onnxc_f32_to_f8e8m0(float x, int sat, int mode) {
  union { float f; uint32_t u; } c;
  uint32_t e, up;
  c.f = x;
  e = (c.u >> 23) & 0xffu;
  if (e == 0xffu)
    return 0xffu;
  if (mode == ONNXC_E8M0_NEAREST)
    up = (c.u & 0x400000u) && ((c.u & 0x3fffffu) || e > 0);  /* ties: up unless e == 0 */
  else
    up = mode == ONNXC_E8M0_UP && (c.u & 0x7fffffu) != 0;
  if (up && sat && e == 0xfeu)
    up = 0;
  return (uint8_t)(e + up);
}
ONNXC_RT_FN float onnxc_f8e8m0_to_f32(uint8_t v) {
  union { uint32_t u; float f; } c;
  if (v == 0xffu)
    return onnxc_mf_nan(0, 0x80u);
  c.u = v ? (uint32_t)v << 23 : 0x400000u;  /* 2^-127 is a float subnormal */
  return c.f;
}

/* Element i of packed data, as an unsigned field or sign-extended. */
ONNXC_RT_FN unsigned onnxc_u4_get(const uint8_t *p, ptrdiff_t i) {
  return (unsigned)(p[i >> 1] >> ((unsigned)(i & 1) * 4u)) & 0xfu;
}
ONNXC_RT_FN int onnxc_i4_get(const uint8_t *p, ptrdiff_t i) {
  unsigned v = onnxc_u4_get(p, i);
  return (int)v - (int)((v & 8u) << 1);
}
ONNXC_RT_FN unsigned onnxc_u2_get(const uint8_t *p, ptrdiff_t i) {
  return (unsigned)(p[i >> 2] >> ((unsigned)(i & 3) * 2u)) & 3u;
}
ONNXC_RT_FN int onnxc_i2_get(const uint8_t *p, ptrdiff_t i) {
  unsigned v = onnxc_u2_get(p, i);
  return (int)v - (int)((v & 2u) << 1);
}

/* The low bits of x truncated toward zero, as a two's complement field under
 * `mask`. NaN, infinities and |x| >= 2^63 give 0: every such double (and
 * float) is a multiple of 2^10, so 0 is its value modulo 16 as well. */
ONNXC_RT_FN unsigned onnxc_f64_to_bits(double x, unsigned mask) {
  if (!(x > -9.2e18 && x < 9.2e18))
    return 0;
  return (unsigned)((uint64_t)(int64_t)x & mask);
}

/* ---- guard mode (onnxc --guard, docs/guard.md) ------------------------------
 * Every arena buffer is fenced by `redzone` bytes before it and, after it, by
 * the bytes up to the next 64-byte boundary plus `redzone`. NAME_run poisons
 * the arena, fills a buffer's red zones at the step that first writes it, and
 * after each node checks the red zones of every buffer live at that step;
 * the first changed byte is recorded in the arena's first bytes. */
#define ONNXC_GUARD_BYTE 0xFA
#define ONNXC_GUARD_MAGIC 0x47415244u

typedef struct onnxc_guard_region {
  int64_t offset, bytes;   /* the buffer: arena bytes [offset, offset + bytes) */
  int32_t first, last;     /* the schedule steps it is live at */
} onnxc_guard_region;

typedef struct onnxc_guard_hit {  /* at the arena's start (PLAN_GUARD_HEADER bytes) */
  uint32_t magic;          /* ONNXC_GUARD_MAGIC once a violation is recorded */
  int32_t step, region, after;
  int64_t at;              /* arena offset of the first changed byte */
} onnxc_guard_hit;

ONNXC_RT_FN int64_t onnxc_guard_end(const onnxc_guard_region *r, int64_t redzone) {
  return (r->offset + r->bytes + 63) / 64 * 64 + redzone;
}

/* Poisons the whole arena (a read of bytes no node wrote sees 0xFA...) and
 * clears the record. */
ONNXC_RT_FN void onnxc_guard_begin(unsigned char *a, int64_t bytes) {
  int64_t i;
  for (i = 0; i < bytes; i++)
    a[i] = ONNXC_GUARD_BYTE;
  ((onnxc_guard_hit *)(void *)a)->magic = 0;
}

/* Fills the red zones of the buffers first written at `step`. */
ONNXC_RT_FN void onnxc_guard_fill(unsigned char *a, const onnxc_guard_region *r, int n, int64_t redzone,
                                  int step) {
  int k;
  int64_t i;
  for (k = 0; k < n; k++)
    if (r[k].first == step) {
      for (i = r[k].offset - redzone; i < r[k].offset; i++)
        a[i] = ONNXC_GUARD_BYTE;
      for (i = r[k].offset + r[k].bytes; i < onnxc_guard_end(&r[k], redzone); i++)
        a[i] = ONNXC_GUARD_BYTE;
    }
}

/* After the node at `step`: 0, or ONNXC_ERR_GUARD after recording the first
 * changed red-zone byte of a buffer live at that step. */
ONNXC_RT_FN int onnxc_guard_check(unsigned char *a, const onnxc_guard_region *r, int n, int64_t redzone,
                                  int step) {
  int k;
  int64_t i;
  for (k = 0; k < n; k++) {
    int64_t hit = -1;
    int after = 0;
    if (r[k].first > step || r[k].last < step)
      continue;
    for (i = r[k].offset - redzone; i < r[k].offset && hit < 0; i++)
      if (a[i] != ONNXC_GUARD_BYTE)
        hit = i;
    for (i = r[k].offset + r[k].bytes; i < onnxc_guard_end(&r[k], redzone) && hit < 0; i++)
      if (a[i] != ONNXC_GUARD_BYTE) {
        hit = i;
        after = 1;
      }
    if (hit >= 0) {
      onnxc_guard_hit *h = (onnxc_guard_hit *)(void *)a;
      h->magic = ONNXC_GUARD_MAGIC;
      h->step = step;
      h->region = k;
      h->after = after;
      h->at = hit;
      return ONNXC_ERR_GUARD;
    }
  }
  return 0;
}

/* --check-numerics (docs/numerics.md): 1 when one of the n elements is NaN
 * or, unless nan_only, infinite. Tested on the bits (all exponent bits set;
 * a NaN also has mantissa bits), so -ffast-math cannot fold the test away,
 * and without an early exit, so the loop vectorizes. float16 and bfloat16
 * are their uint16_t bit patterns. */
ONNXC_RT_FN int onnxc_nonfinite_f32(const float *p, long n, int nan_only) {
  uint32_t bad = 0;
  long i;
  for (i = 0; i < n; i++) {
    union { float f; uint32_t u; } v;
    v.f = p[i];
    bad |= (uint32_t)((v.u & 0x7f800000u) == 0x7f800000u && (!nan_only || (v.u & 0x007fffffu)));
  }
  return bad != 0;
}
ONNXC_RT_FN int onnxc_nonfinite_f64(const double *p, long n, int nan_only) {
  uint32_t bad = 0;
  long i;
  for (i = 0; i < n; i++) {
    union { double f; uint64_t u; } v;
    v.f = p[i];
    bad |= (uint32_t)((v.u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull &&
                      (!nan_only || (v.u & 0x000fffffffffffffull)));
  }
  return bad != 0;
}
/* exp: the exponent mask (float16 0x7c00, bfloat16 0x7f80); the mantissa is
 * the bits below it */
ONNXC_RT_FN int onnxc_nonfinite_u16(const uint16_t *p, long n, unsigned exp, int nan_only) {
  unsigned mant = (exp & (0u - exp)) - 1u; /* the bits below the exponent's lowest */
  uint32_t bad = 0;
  long i;
  for (i = 0; i < n; i++)
    bad |= (uint32_t)((p[i] & exp) == exp && (!nan_only || (p[i] & mant)));
  return bad != 0;
}

#endif
