/* emit_norm.c - C kernels for BatchNormalization, Softmax and LogSoftmax.
 *
 * BatchNormalization (inference): y = (x - mean) * (scale / sqrt(var + eps)) + B
 * with the per-channel factor computed once per channel. In training mode
 * (training_mode=1, set by inference for the older forms too) mean and var are
 * the batch's own per channel, over N and the spatial dims: the mean, then the
 * biased variance from a second pass over x - mean, both summed in double.
 * The running statistics are input * momentum + batch * (1 - momentum);
 * before opset 14 outputs 3 and 4 are the batch mean and variance (saved).
 * Softmax/LogSoftmax reduce over L elements at stride `inner`: before opset 13
 * the input is coerced to 2-D at `axis` (L = product of the trailing dims,
 * inner = 1); from 13 on L is the extent of `axis` and inner the product of
 * the dims after it. Three passes per row: the max, the sum of exp(x - max),
 * then the result, so Softmax = exp(x - max) / sum and
 * LogSoftmax = (x - max) - log(sum) stay finite for large inputs. Every pass
 * reads an element before writing it, so the kernels may run in place. With
 * inner > 1 the rows are processed in blocks of ROW_BLOCK adjacent columns so
 * the inner loops stay contiguous. f16/bf16 compute in float and recompute the
 * exponential in the last pass instead of rounding it twice.
 */
#include "codegen.h"

#include <string.h>

#define LL(x) ((long long)(x))
#define ROW_BLOCK 128  /* softmax columns processed together when inner > 1 */

/* Compute type: f16/bf16 widen to float. */
static const char *ctype(DType t) { return t == DT_F64 ? "double" : "float"; }
/* Prefix applied when loading / storing an element (empty: none). */
static const char *ld(DType t) {
  return t == DT_F16 ? "onnxc_f16_to_f32" : t == DT_BF16 ? "onnxc_bf16_to_f32" : "";
}
static const char *st(DType t) {
  return t == DT_F16 ? "onnxc_f32_to_f16" : t == DT_BF16 ? "onnxc_f32_to_bf16" : "";
}

/* ---- BatchNormalization ----------------------------------------------------------- */

/* Training mode: per channel c, the batch statistics over `batch` rows of
 * `plane` elements, then y and the statistics outputs. */
static void batchnorm_training(EmitC *e, const Node *n, int64_t batch, int64_t nch, int64_t plane,
                               const char *eps) {
  DType t = n->in[0]->dt;
  const char *T = dtype_ctype(t), *CT = ctype(t), *L = ld(t), *f = ec_fsuf(t);
  int64_t count = batch * plane;
  char div[64], mom[64], rest[64];
  float momentum = ir_attr_float(n, "momentum", 0.9f);
  if (count > 0)
    snprintf(div, sizeof div, "/ %lld.0", LL(count));
  else
    snprintf(div, sizeof div, "* (double)NAN");  /* no elements: NaN, as numpy's mean */
  ec_literal(DT_F64, momentum, mom, sizeof mom);
  ec_literal(DT_F64, 1.0 - (double)momentum, rest, sizeof rest);
  ec_line(e, "for (long c = 0; c < %lld; c++) {", LL(nch));
  ec_line(e, "double s = 0, q = 0;");
  ec_line(e, "for (long n = 0; n < %lld; n++) {", LL(batch));
  ec_line(e, "const %s *x = X0 + (n * %lld + c) * %lld;", T, LL(nch), LL(plane));
  ec_line(e, "for (long i = 0; i < %lld; i++) s += (double)%s(x[i]);", LL(plane), L);
  ec_line(e, "}");
  ec_line(e, "const double mean = s %s;", div);
  ec_line(e, "for (long n = 0; n < %lld; n++) {", LL(batch));
  ec_line(e, "const %s *x = X0 + (n * %lld + c) * %lld;", T, LL(nch), LL(plane));
  ec_line(e, "for (long i = 0; i < %lld; i++) {", LL(plane));
  ec_line(e, "const double dv = (double)%s(x[i]) - mean;", L);
  ec_line(e, "q += dv * dv;");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "const double var = q %s;", div);
  ec_line(e, "const %s a = (%s)%s(X1[c]) / sqrt%s((%s)var + %s);", CT, CT, ld(n->in[1]->dt), f, CT, eps);
  ec_line(e, "const %s b = (%s)%s(X2[c]), m = (%s)mean;", CT, CT, ld(n->in[2]->dt), CT);
  ec_line(e, "for (long n = 0; n < %lld; n++) {", LL(batch));
  ec_line(e, "const %s *x = X0 + (n * %lld + c) * %lld;", T, LL(nch), LL(plane));
  ec_line(e, "%s *y = Y0 + (n * %lld + c) * %lld;", T, LL(nch), LL(plane));
  ec_line(e, "for (long i = 0; i < %lld; i++) y[i] = %s((%s(x[i]) - m) * a + b);", LL(plane), st(t), L);
  ec_line(e, "}");
  /* Outputs 1, 2: running mean and variance; 3, 4 (opset < 14): the batch's. */
  static const char *const batch_stat[2] = {"mean", "var"};
  for (int i = 1; i < n->n_out && i < 5; i++) {
    if (!ec_has_output(n, i))
      continue;
    DType ot = n->out[i]->dt;
    const char *stat = batch_stat[(i - 1) % 2];
    if (i <= 2)
      ec_line(e, "Y%d[c] = %s((%s)((double)%s(X%d[c]) * %s + %s * %s));", i, st(ot), ctype(ot), ld(n->in[i + 2]->dt),
              i + 2, mom, stat, rest);
    else
      ec_line(e, "Y%d[c] = %s((%s)%s);", i, st(ot), ctype(ot), stat);
  }
  ec_line(e, "}");
}

bool emitc_BatchNormalization(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  const char *T = dtype_ctype(t), *CT = ctype(t);
  bool training = ir_attr_int(n, "training_mode", 0) != 0;
  int64_t numel;
  IR_ASSERT(shape_numel(xs, &numel));
  char eps[64];
  ec_literal(t == DT_F64 ? DT_F64 : DT_F32, ir_attr_float(n, "epsilon", 1e-5f), eps, sizeof eps);
  bool spatial = n->g->opset >= 9 || ir_attr_int(n, "spatial", 1) != 0;
  /* Per parameter "channel": a channel (spatial) or an element of [C, D...]. */
  int64_t batch = xs->d[0], nch = spatial ? xs->d[1] : ec_prod(xs, 1, xs->rank);
  int64_t plane = spatial ? ec_prod(xs, 2, xs->rank) : 1;
  if (numel == 0)
    ec_line(e, "(void)Y0;");
  if (training) {
    if (nch > 0)
      batchnorm_training(e, n, batch, nch, plane, eps);
    else
      for (int i = 1; i < n->n_out; i++)
        if (ec_has_output(n, i))
          ec_line(e, "(void)Y%d;", i);
    return true;
  }
  for (int i = 1; i < n->n_out; i++)
    if (ec_has_output(n, i))
      ec_line(e, "(void)Y%d;", i);  /* unread: dce drops it */
  if (numel == 0)
    return true;
  const char *p[5];
  char pbuf[5][64];
  for (int i = 1; i < 5; i++) {
    snprintf(pbuf[i], sizeof pbuf[i], "(%s)%s(X%d[c])", CT, ld(n->in[i]->dt), i);
    p[i] = pbuf[i];
  }
  ec_line(e, "for (long c = 0; c < %lld; c++) {", LL(nch));
  ec_line(e, "const %s a = %s / sqrt%s(%s + %s);", CT, p[1], ec_fsuf(t), p[4], eps);
  ec_line(e, "const %s mean = %s, b = %s;", CT, p[3], p[2]);
  ec_line(e, "for (long n = 0; n < %lld; n++) {", LL(batch));
  ec_line(e, "const %s *x = X0 + (n * %lld + c) * %lld;", T, LL(nch), LL(plane));
  ec_line(e, "%s *y = Y0 + (n * %lld + c) * %lld;", T, LL(nch), LL(plane));
  ec_line(e, "for (long i = 0; i < %lld; i++) y[i] = %s((%s(x[i]) - mean) * a + b);", LL(plane),
          st(t), ld(t));
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- Softmax, LogSoftmax --------------------------------------------------------------- */

/* A fused prologue (kernel_desc.c): the row's input computed into the
 * output row, which the softmax then reads and overwrites in place. */
static bool prologue_row(EmitC *e, const Node *n, int64_t len) {
  Buf b;
  buf_init(&b);
  buf_puts(&b, "");
  ec_line(e, "for (long l = 0; l < %lld; l++) {", LL(len));
  bool ok = kd_prologue_row(n, "", "o", "l", "y[l]", &b, e->d);
  if (ok)
    ec_lines(e, b.s);
  ec_line(e, "}");
  buf_free(&b);
  return ok;
}

/* Rows of L contiguous elements (inner == 1). */
static bool softmax_rows(EmitC *e, const Node *n, DType t, bool log, int64_t outer, int64_t len) {
  const char *T = dtype_ctype(t), *CT = ctype(t), *L = ld(t), *S = st(t), *f = ec_fsuf(t);
  bool narrow = t == DT_F16 || t == DT_BF16;
  ec_open_rows(e, outer, len); /* --threads: blocks of rows */
  if (ir_attr(n, "prologue")) {
    ec_line(e, "%s *y = Y0 + o * %lld;", T, LL(len));
    if (!prologue_row(e, n, len))
      return false;
    ec_line(e, "const %s *x = y;", T);
  } else {
    ec_line(e, "const %s *x = X0 + o * %lld;", T, LL(len));
    ec_line(e, "%s *y = Y0 + o * %lld;", T, LL(len));
  }
  if (t == DT_F32 && !log && len >= 16) {
    /* perf2: vectorizable exp (onnxc_rt.h) and 8 partial max/sum chains */
    int64_t l8 = len / 8 * 8;
    ec_line(e, "float m8[8], s8[8], mx, sum;");
    ec_line(e, "long l, q;");
    ec_line(e, "for (q = 0; q < 8; q++) m8[q] = x[q];");
    ec_line(e, "for (l = 8; l < %lld; l += 8)", LL(l8));
    ec_line(e, "  for (q = 0; q < 8; q++) m8[q] = x[l + q] > m8[q] ? x[l + q] : m8[q];");
    ec_line(e, "mx = m8[0];");
    ec_line(e, "for (q = 1; q < 8; q++) mx = m8[q] > mx ? m8[q] : mx;");
    ec_line(e, "for (l = %lld; l < %lld; l++) mx = x[l] > mx ? x[l] : mx;", LL(l8), LL(len));
    ec_line(e, "for (l = 0; l < %lld; l++) y[l] = onnxc_expf(x[l] - mx);", LL(len));
    ec_line(e, "for (q = 0; q < 8; q++) s8[q] = y[q];");
    ec_line(e, "for (l = 8; l < %lld; l += 8)", LL(l8));
    ec_line(e, "  for (q = 0; q < 8; q++) s8[q] += y[l + q];");
    ec_line(e, "sum = ((s8[0] + s8[1]) + (s8[2] + s8[3])) + ((s8[4] + s8[5]) + (s8[6] + s8[7]));");
    ec_line(e, "for (l = %lld; l < %lld; l++) sum += y[l];", LL(l8), LL(len));
    ec_line(e, "sum = 1 / sum;");
    ec_line(e, "for (l = 0; l < %lld; l++) y[l] *= sum;", LL(len));
    ec_line(e, "}");
    return true;
  }
  ec_line(e, "%s mx = %s(x[0]);", CT, L);
  ec_line(e, "for (long l = 1; l < %lld; l++) {", LL(len));
  ec_line(e, "const %s v = %s(x[l]);", CT, L);
  ec_line(e, "mx = v > mx ? v : mx;");
  ec_line(e, "}");
  ec_line(e, "%s sum = 0;", CT);
  if (!log && !narrow) {
    ec_line(e, "for (long l = 0; l < %lld; l++) {", LL(len));
    ec_line(e, "const %s v = exp%s(x[l] - mx);", CT, f);
    ec_line(e, "y[l] = v;");
    ec_line(e, "sum += v;");
    ec_line(e, "}");
    ec_line(e, "const %s inv = 1 / sum;", CT);
    ec_line(e, "for (long l = 0; l < %lld; l++) y[l] *= inv;", LL(len));
  } else {
    ec_line(e, "for (long l = 0; l < %lld; l++) sum += exp%s(%s(x[l]) - mx);", LL(len), f, L);
    if (log) {
      ec_line(e, "const %s lsum = log%s(sum);", CT, f);
      ec_line(e, "for (long l = 0; l < %lld; l++) y[l] = %s((%s(x[l]) - mx) - lsum);", LL(len), S,
              L);
    } else {
      ec_line(e, "const %s inv = 1 / sum;", CT);
      ec_line(e, "for (long l = 0; l < %lld; l++) y[l] = %s(exp%s(%s(x[l]) - mx) * inv);", LL(len),
              S, f, L);
    }
  }
  ec_line(e, "}");
  return true;
}

/* Rows at stride inner > 1, ROW_BLOCK adjacent rows at a time. */
static void softmax_strided(EmitC *e, DType t, bool log, int64_t outer, int64_t len,
                            int64_t inner) {
  const char *T = dtype_ctype(t), *CT = ctype(t), *L = ld(t), *S = st(t), *f = ec_fsuf(t);
  bool narrow = t == DT_F16 || t == DT_BF16;
  int64_t ib = inner < ROW_BLOCK ? inner : ROW_BLOCK;
  ec_line(e, "for (long o = 0; o < %lld; o++) {", LL(outer));
  ec_line(e, "for (long i0 = 0; i0 < %lld; i0 += %lld) {", LL(inner), LL(ib));
  ec_line(e, "const long ni = %lld - i0 < %lld ? %lld - i0 : %lld;", LL(inner), LL(ib), LL(inner),
          LL(ib));
  ec_line(e, "const %s *x = X0 + o * %lld + i0;", T, LL(len * inner));
  ec_line(e, "%s *y = Y0 + o * %lld + i0;", T, LL(len * inner));
  ec_line(e, "%s mx[%lld], sum[%lld];", CT, LL(ib), LL(ib));
  ec_line(e, "for (long i = 0; i < ni; i++) {");
  ec_line(e, "mx[i] = %s(x[i]);", L);
  ec_line(e, "sum[i] = 0;");
  ec_line(e, "}");
  ec_line(e, "for (long l = 1; l < %lld; l++) {", LL(len));
  ec_line(e, "for (long i = 0; i < ni; i++) {");
  ec_line(e, "const %s v = %s(x[l * %lld + i]);", CT, L, LL(inner));
  ec_line(e, "mx[i] = v > mx[i] ? v : mx[i];");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "for (long l = 0; l < %lld; l++) {", LL(len));
  ec_line(e, "for (long i = 0; i < ni; i++) {");
  /* float32: the vectorizable exp of onnxc_rt.h, as the contiguous rows use
   * (libm's expf is a call per element: YOLOv8n's DFL Softmax over 16 rows
   * of 8400, 0.9 ms) */
  if (t == DT_F32)
    ec_line(e, "const float v = onnxc_expf(x[l * %lld + i] - mx[i]);", LL(inner));
  else
    ec_line(e, "const %s v = exp%s(%s(x[l * %lld + i]) - mx[i]);", CT, f, L, LL(inner));
  if (!log && !narrow)
    ec_line(e, "y[l * %lld + i] = v;", LL(inner));
  ec_line(e, "sum[i] += v;");
  ec_line(e, "}");
  ec_line(e, "}");
  if (log)
    ec_line(e, "for (long i = 0; i < ni; i++) sum[i] = log%s(sum[i]);", f);
  else
    ec_line(e, "for (long i = 0; i < ni; i++) sum[i] = 1 / sum[i];");
  ec_line(e, "for (long l = 0; l < %lld; l++) {", LL(len));
  ec_line(e, "for (long i = 0; i < ni; i++) {");
  if (log)
    ec_line(e, "y[l * %lld + i] = %s((%s(x[l * %lld + i]) - mx[i]) - sum[i]);", LL(inner), S, L,
            LL(inner));
  else if (narrow)
    ec_line(e, "y[l * %lld + i] = %s(exp%s(%s(x[l * %lld + i]) - mx[i]) * sum[i]);", LL(inner), S,
            f, L, LL(inner));
  else
    ec_line(e, "y[l * %lld + i] *= sum[i];", LL(inner));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
}

static bool emit_softmax(EmitC *e, const Node *n, bool log) {
  const Shape *xs = &n->out[0]->shape;  /* with a fused prologue, in[0] may broadcast */
  DType t = n->out[0]->dt;
  int64_t numel;
  if (!shape_numel(xs, &numel) || numel == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  bool opset13 = n->g->opset >= 13;
  int ax;
  if (!shape_axis(ir_attr_int(n, "axis", opset13 ? -1 : 1), xs->rank, &ax))
    return diag_error(e->d, n, "axis is out of range");
  int64_t outer = ec_prod(xs, 0, ax);
  int64_t len = opset13 ? xs->d[ax] : ec_prod(xs, ax, xs->rank);
  int64_t inner = opset13 ? ec_prod(xs, ax + 1, xs->rank) : 1;
  if (inner == 1)
    return softmax_rows(e, n, t, log, outer, len);
  if (ir_attr(n, "prologue"))
    return diag_error(e->d, n, "internal: a fused prologue needs rows along the last axis");
  softmax_strided(e, t, log, outer, len, inner);
  return true;
}

bool emitc_Softmax(EmitC *e, const Node *n) { return emit_softmax(e, n, false); }

bool emitc_LogSoftmax(EmitC *e, const Node *n) { return emit_softmax(e, n, true); }
