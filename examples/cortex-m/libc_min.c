/* libc_min.c - the C-library symbols the firmware needs, so that it links
 * without newlib's libc (whose errno support alone brings a ~1 KB struct _reent
 * into RAM). --gc-sections drops the ones a model does not call.
 *
 *   memcpy, memset, memmove  gcc emits calls to them for block copies and
 *                   clears, in generated kernels (copies, zeroed accumulators)
 *                   and in startup.c's .data/.bss loops.
 *   __errno         newlib's libm stores errno through it (expf on overflow...).
 *   __aeabi_mem*    the ARM run-time ABI's copies and clears, which Clang calls
 *                   instead of memcpy/memset for AEABI targets (objects from
 *                   onnxc --triple thumbv7em-none-eabihf, docs/clang.md).
 *
 * Build this file with -fno-tree-loop-distribute-patterns, or gcc may turn the
 * loops below back into calls to memcpy and memset themselves.
 */
#include <stddef.h>
#include <stdint.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memset(void *dst, int c, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int *__errno(void);
void __aeabi_memcpy(void *dst, const void *src, size_t n);
void __aeabi_memcpy4(void *dst, const void *src, size_t n);
void __aeabi_memcpy8(void *dst, const void *src, size_t n);
void __aeabi_memmove(void *dst, const void *src, size_t n);
void __aeabi_memmove4(void *dst, const void *src, size_t n);
void __aeabi_memmove8(void *dst, const void *src, size_t n);
void __aeabi_memset(void *dst, size_t n, int c);
void __aeabi_memset4(void *dst, size_t n, int c);
void __aeabi_memset8(void *dst, size_t n, int c);
void __aeabi_memclr(void *dst, size_t n);
void __aeabi_memclr4(void *dst, size_t n);
void __aeabi_memclr8(void *dst, size_t n);

/* Word accesses to memory of any type: may_alias keeps them legal C for gcc. */
typedef uint32_t __attribute__((may_alias)) Word;

void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if ((((uintptr_t)d | (uintptr_t)s) & 3) == 0) {
    for (; n >= 4; n -= 4, d += 4, s += 4)
      *(Word *)(void *)d = *(const Word *)(const void *)s;
  }
  while (n--)
    *d++ = *s++;
  return dst;
}

void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  if (((uintptr_t)d & 3) == 0) {
    uint32_t w = (unsigned char)c * 0x01010101u;
    for (; n >= 4; n -= 4, d += 4)
      *(Word *)(void *)d = w;
  }
  while (n--)
    *d++ = (unsigned char)c;
  return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d <= s) {
    for (size_t i = 0; i < n; i++)
      d[i] = s[i];
  } else {
    while (n--)
      d[n] = s[n];
  }
  return dst;
}

int *__errno(void) {
  static int err;
  return &err;
}

/* The run-time ABI's forms: memset's arguments in another order, no result. */
void __aeabi_memcpy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
void __aeabi_memcpy4(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
void __aeabi_memcpy8(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
void __aeabi_memmove(void *dst, const void *src, size_t n) { memmove(dst, src, n); }
void __aeabi_memmove4(void *dst, const void *src, size_t n) { memmove(dst, src, n); }
void __aeabi_memmove8(void *dst, const void *src, size_t n) { memmove(dst, src, n); }
void __aeabi_memset(void *dst, size_t n, int c) { memset(dst, c, n); }
void __aeabi_memset4(void *dst, size_t n, int c) { memset(dst, c, n); }
void __aeabi_memset8(void *dst, size_t n, int c) { memset(dst, c, n); }
void __aeabi_memclr(void *dst, size_t n) { memset(dst, 0, n); }
void __aeabi_memclr4(void *dst, size_t n) { memset(dst, 0, n); }
void __aeabi_memclr8(void *dst, size_t n) { memset(dst, 0, n); }
