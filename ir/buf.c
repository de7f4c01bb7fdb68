/* buf.c - growable byte/string buffer used by printers and emitters. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

void buf_init(Buf *b) {
  b->s = NULL;
  b->len = b->cap = 0;
}

void buf_free(Buf *b) {
  free(b->s);
  buf_init(b);
}

static void reserve(Buf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap)
    return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *s = realloc(b->s, cap);
  if (!s)
    ir_die(__FILE__, __LINE__, "out of memory");
  b->s = s;
  b->cap = cap;
}

void buf_write(Buf *b, const void *p, size_t n) {
  reserve(b, n);
  memcpy(b->s + b->len, p, n);
  b->len += n;
  b->s[b->len] = 0;
}

void buf_putc(Buf *b, char c) { buf_write(b, &c, 1); }
void buf_puts(Buf *b, const char *s) { buf_write(b, s, strlen(s)); }

void buf_vprintf(Buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  IR_ASSERT(n >= 0);
  reserve(b, (size_t)n);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  b->len += (size_t)n;
}

void buf_printf(Buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  buf_vprintf(b, fmt, ap);
  va_end(ap);
}
