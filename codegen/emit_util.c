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

void ec_lines(EmitC *e, const char *text) {
  for (const char *p = text; p && *p;) {
    const char *nl = strchr(p, '\n');
    int len = nl ? (int)(nl - p) : (int)strlen(p);
    ec_line(e, "%.*s", len, p);
    p += len + (nl != NULL);
  }
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

int64_t ec_numel(const Value *v) {
  int64_t n = 0;
  IR_ASSERT(shape_numel(&v->shape, &n));
  return n;
}

int64_t ec_prod(const Shape *s, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++)
    p *= s->d[i];
  return p;
}

void ec_load_elem(Buf *b, DType t, const char *arr, const char *idx) {
  const char *dec = t == DT_F16 ? "onnxc_f16_to_f32" : t == DT_BF16 ? "onnxc_bf16_to_f32"
                  : t == DT_F8E4M3FN ? "onnxc_f8e4m3fn_to_f32" : t == DT_F8E4M3FNUZ ? "onnxc_f8e4m3fnuz_to_f32"
                  : t == DT_F8E5M2 ? "onnxc_f8e5m2_to_f32" : t == DT_F8E5M2FNUZ ? "onnxc_f8e5m2fnuz_to_f32"
                  : t == DT_F8E8M0 ? "onnxc_f8e8m0_to_f32" : NULL;
  if (dec)
    buf_printf(b, "%s(%s[%s])", dec, arr, idx);
  else if (t == DT_F4E2M1)
    buf_printf(b, "onnxc_f4e2m1_to_f32((uint8_t)onnxc_u4_get(%s, %s))", arr, idx);
  else if (t == DT_I4 || t == DT_I2)
    buf_printf(b, "onnxc_i%d_get(%s, %s)", dtype_bits(t), arr, idx);
  else if (t == DT_U4 || t == DT_U2)
    buf_printf(b, "(int)onnxc_u%d_get(%s, %s)", dtype_bits(t), arr, idx);
  else
    buf_printf(b, "%s[%s]", arr, idx);
}

void ec_store_line(EmitC *e, const char *dst, DType ct, DType to, const char *expr) {
  Buf b;
  buf_init(&b);
  ec_ew_store(&b, ct, to, expr);
  ec_line(e, "%s = %s;", dst, b.s);
  buf_free(&b);
}

DType ec_float_ct(DType t) { return t == DT_F64 ? DT_F64 : DT_F32; }

const char *ec_fsuf(DType ct) { return ct == DT_F64 ? "" : "f"; }

bool ec_axis_input(EmitC *e, const Node *n, int rank, int *axis) {
  const Value *av = n->in[1];
  if (av->kind != VK_CONST || av->konst->numel != 1)
    return diag_error(e->d, n, "input 1 (axis) must be a compile-time constant");
  if (!shape_axis(tensor_get_i64(av->konst, 0), rank, axis))
    return diag_error(e->d, n, "axis %lld is out of range for an input of rank %d",
                      (long long)tensor_get_i64(av->konst, 0), rank);
  return true;
}

void ec_open_border(EmitC *e, const char *var, int64_t out, int64_t a, int64_t b) {
  ec_line(e, "for (long %s = 0; %s < %lld; %s++) {", var, var, (long long)out, var);
  if (b > a) {
    ec_line(e, "if (%s == %lld) {", var, (long long)a);
    ec_line(e, "%s = %lld;", var, (long long)(b - 1));
    ec_line(e, "continue;");
    ec_line(e, "}");
  }
}
