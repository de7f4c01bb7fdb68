/* emit_util.c - small helpers shared by the per-op C emitters. */
#include "codegen.h"

#include <math.h>
#include <string.h>

void ec_line(EmitC *e, const char *fmt, ...) {
  if (fmt[0] == '}' && e->indent > 0)
    e->indent--;
  for (int i = 0; i < e->indent + 1; i++)
    buf_puts(e->b, "  ");
  va_list ap;
  va_start(ap, fmt);
  buf_vprintf(e->b, fmt, ap);
  va_end(ap);
  buf_putc(e->b, '\n');
  size_t n = strlen(fmt);
  if (n && fmt[n - 1] == '{')
    e->indent++;
}

bool ec_has_output(const Node *n, int i) { return i < n->n_out && n->out[i]->kind != VK_NONE; }

const char *ec_literal(DType t, double v, char *buf, size_t n) {
  if (t == DT_F32 || t == DT_F64 || t == DT_F16 || t == DT_BF16) {
    const char *suffix = t == DT_F64 ? "" : "f";
    if (isnan(v))
      snprintf(buf, n, t == DT_F64 ? "((double)NAN)" : "((float)NAN)");
    else if (isinf(v))
      snprintf(buf, n, "(%s(%s)INFINITY)", v < 0 ? "-" : "", t == DT_F64 ? "double" : "float");
    else {
      char tmp[64];
      if (t == DT_F64)
        snprintf(tmp, sizeof tmp, "%.17g", v);
      else
        snprintf(tmp, sizeof tmp, "%.9g", (double)(float)v);
      /* "1" -> "1.0f" so the literal has the right type. */
      snprintf(buf, n, "%s%s%s", tmp, strpbrk(tmp, ".en") ? "" : ".0", suffix);
    }
    return buf;
  }
  if (t == DT_I64) {
    if (v <= -9.2233720368547758e18)
      snprintf(buf, n, "(-9223372036854775807LL - 1)");
    else
      snprintf(buf, n, "%lldLL", (long long)v);
  } else if (t == DT_U64) {
    snprintf(buf, n, "%lluULL", (unsigned long long)v);
  } else if (t == DT_U32) {
    snprintf(buf, n, "%lluU", (unsigned long long)v);
  } else if (t == DT_I32 && v <= -2147483648.0) {
    snprintf(buf, n, "(-2147483647 - 1)");
  } else {
    snprintf(buf, n, "%lld", (long long)v);
  }
  return buf;
}

void ec_strides(const Shape *s, int64_t *strides) {
  int64_t acc = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    strides[i] = acc;
    acc *= s->d[i];
  }
}
