/* emit_signal.c - C kernels of the signal ops of the opsk family: DFT, STFT,
 * HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix.
 *
 * DFT and STFT transform one line at a time in double precision: the line is
 * gathered into scratch A (complex, zero-padded or truncated to the transform
 * length n), transformed into scratch B, and the wanted bins are stored. The
 * twiddle factors e^(2 pi i k / n) are a static const table computed here, at
 * compile time. A power-of-two n takes an iterative radix-2 FFT (bit-reversed
 * copy, then butterflies: O(n log n)); any other n a direct DFT (O(n^2)),
 * both accumulating in double. The inverse scales by 1/n; the inverse
 * onesided form (irfft) first rebuilds the full Hermitian spectrum and keeps
 * the real part. Scratch: 2 * n complex doubles (codegen/target.c).
 * The windows and MelWeightMatrix compute in double and store in the output
 * type. Formulas follow the ONNX docs and onnx/reference/ops.
 */
#include "codegen.h"

#include <math.h>
#include <string.h>

#define LL(x) ((long long)(x))
#define PI 3.14159265358979323846

typedef struct Txt {
  char s[512];
} Txt;

static const char *ld(Txt *x, DType from, const char *src) {
  return ec_ew_load_str(x->s, sizeof x->s, from, DT_F64, src);
}

static const char *st(Txt *x, DType to, const char *expr) {
  return ec_ew_store_str(x->s, sizeof x->s, DT_F64, to, expr);
}

/* static const double tw[2n]: cos and sin of 2 pi k / n. */
static void emit_twiddles(EmitC *e, int64_t n) {
  Buf b;
  buf_init(&b);
  buf_printf(&b, "static const double tw[%lld] = {", LL(2 * n));
  for (int64_t k = 0; k < n; k++) {
    double ang = 2.0 * PI * (double)k / (double)n;
    /* Exact zeros and ones at the quarter turns keep small outputs clean. */
    double c = cos(ang), s = sin(ang);
    if (4 * k == n || 4 * k == 3 * n)
      c = 0;
    if (2 * k == n)
      s = 0;
    buf_printf(&b, "%s%.17g, %.17g", k ? ", " : "", c, s);
    if (k % 4 == 3 && k + 1 < n)
      buf_puts(&b, "\n   ");
  }
  buf_puts(&b, "};");
  ec_line(e, "%s", b.s);
  buf_free(&b);
}

/* Transforms A (n complex doubles) into B: B[k] = sum_t A[t] e^(sign 2 pi i k t / n)
 * for k < kmax (all k for the FFT). */
static void emit_transform(EmitC *e, int64_t n, bool inverse, int64_t kmax) {
  const char *sg = inverse ? "" : "-";
  if ((n & (n - 1)) == 0) {
    int lg = 0;
    while (((int64_t)1 << lg) < n)
      lg++;
    ec_line(e, "for (t = 0; t < %lld; t++) {", LL(n));
    ec_line(e, "ptrdiff_t r = 0, q;");
    ec_line(e, "for (q = 0; q < %d; q++)", lg);
    ec_line(e, "  r |= ((t >> q) & 1) << (%d - q);", lg - 1);
    ec_line(e, "B[2 * r] = A[2 * t];");
    ec_line(e, "B[2 * r + 1] = A[2 * t + 1];");
    ec_line(e, "}");
    ec_line(e, "for (len = 2; len <= %lld; len *= 2) {", LL(n));
    ec_line(e, "const ptrdiff_t h = len / 2, step = %lld / len;", LL(n));
    ec_line(e, "for (j = 0; j < %lld; j += len)", LL(n));
    ec_line(e, "for (k = 0; k < h; k++) {");
    ec_line(e, "const double wr = tw[2 * k * step], wi = %stw[2 * k * step + 1];", sg);
    ec_line(e, "double *p = B + 2 * (j + k), *q = B + 2 * (j + k + h);");
    ec_line(e, "const double xr = q[0] * wr - q[1] * wi, xi = q[0] * wi + q[1] * wr;");
    ec_line(e, "q[0] = p[0] - xr;");
    ec_line(e, "q[1] = p[1] - xi;");
    ec_line(e, "p[0] += xr;");
    ec_line(e, "p[1] += xi;");
    ec_line(e, "}");
    ec_line(e, "}");
    return;
  }
  ec_line(e, "for (k = 0; k < %lld; k++) {", LL(kmax));
  ec_line(e, "double sr = 0, si = 0;");
  ec_line(e, "ptrdiff_t idx = 0;");
  ec_line(e, "for (t = 0; t < %lld; t++) {", LL(n));
  ec_line(e, "const double wr = tw[2 * idx], wi = %stw[2 * idx + 1];", sg);
  ec_line(e, "sr += A[2 * t] * wr - A[2 * t + 1] * wi;");
  ec_line(e, "si += A[2 * t] * wi + A[2 * t + 1] * wr;");
  ec_line(e, "idx += k;");
  ec_line(e, "if (idx >= %lld)", LL(n));
  ec_line(e, "  idx -= %lld;", LL(n));
  ec_line(e, "}");
  ec_line(e, "B[2 * k] = sr;");
  ec_line(e, "B[2 * k + 1] = si;");
  ec_line(e, "}");
}

static void emit_transform_decls(EmitC *e, int64_t n) {
  emit_twiddles(e, n);
  ec_line(e, "double *A = (double *)(void *)S, *B = A + %lld;", LL(2 * n));
  ec_line(e, "ptrdiff_t t, k, j, len;");
  ec_line(e, "(void)j;");
  ec_line(e, "(void)len;");
}

bool emitc_DFT(EmitC *e, const Node *n) {
  const Shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  int64_t dn = ir_attr_int(n, "onnxc.n", 0);
  int a = (int)ir_attr_int(n, "onnxc.axis", 1);
  bool inverse = ir_attr_int(n, "inverse", 0) != 0, onesided = ir_attr_int(n, "onesided", 0) != 0;
  int64_t outer = 1, inner = 1, len = x->d[a], m = y->d[a];
  for (int i = 0; i < a; i++)
    outer *= x->d[i];
  for (int i = a + 1; i < x->rank - 1; i++)
    inner *= x->d[i];
  int64_t cin = x->d[x->rank - 1], cout = y->d[y->rank - 1];
  DType dt = n->in[0]->dt;
  Txt t1, t2;
  char src[128];
  emit_transform_decls(e, dn);
  ec_line(e, "ptrdiff_t o, i;");
  ec_line(e, "for (o = 0; o < %lld; o++)", LL(outer));
  ec_line(e, "for (i = 0; i < %lld; i++) {", LL(inner));
  ec_line(e, "const ptrdiff_t ib = o * %lld + i * %lld, ob = o * %lld + i * %lld;", LL(len * inner * cin),
          LL(cin), LL(m * inner * cout), LL(cout));
  /* Input bins used: all of the line, or n/2+1 of a onesided spectrum. */
  int64_t use = inverse && onesided ? dn / 2 + 1 : dn;
  ec_line(e, "for (t = 0; t < %lld; t++) {", LL(use));
  ec_line(e, "if (t >= %lld) {", LL(len));
  ec_line(e, "A[2 * t] = 0;");
  ec_line(e, "A[2 * t + 1] = 0;");
  ec_line(e, "continue;");
  ec_line(e, "}");
  snprintf(src, sizeof src, "X0[ib + t * %lld]", LL(inner * cin));
  ec_line(e, "A[2 * t] = %s;", ld(&t1, dt, src));
  if (cin == 2) {
    snprintf(src, sizeof src, "X0[ib + t * %lld + 1]", LL(inner * cin));
    ec_line(e, "A[2 * t + 1] = %s;", ld(&t2, dt, src));
  } else {
    ec_line(e, "A[2 * t + 1] = 0;");
  }
  ec_line(e, "}");
  if (inverse && onesided) {
    ec_line(e, "for (t = %lld; t < %lld; t++) {", LL(use), LL(dn));
    ec_line(e, "A[2 * t] = A[2 * (%lld - t)];", LL(dn));
    ec_line(e, "A[2 * t + 1] = -A[2 * (%lld - t) + 1];", LL(dn));
    ec_line(e, "}");
  }
  emit_transform(e, dn, inverse, m);
  char v[160];
  const char *scale = inverse ? arena_printf(n->g->arena, " * %.17g", 1.0 / (double)dn) : "";
  ec_line(e, "for (k = 0; k < %lld; k++) {", LL(m));
  snprintf(v, sizeof v, "B[2 * k]%s", scale);
  ec_line(e, "Y0[ob + k * %lld] = %s;", LL(inner * cout), st(&t1, dt, v));
  if (cout == 2) {
    snprintf(v, sizeof v, "B[2 * k + 1]%s", scale);
    ec_line(e, "Y0[ob + k * %lld + 1] = %s;", LL(inner * cout), st(&t1, dt, v));
  }
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

bool emitc_STFT(EmitC *e, const Node *n) {
  const Shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
  int64_t dn = ir_attr_int(n, "onnxc.n", 0), step = 0;
  const Tensor *ts = n->in[1]->konst;
  IR_ASSERT(ts != NULL);
  step = tensor_get_i64(ts, 0);
  int64_t nb = x->d[0], slen = x->d[1], cin = x->d[2], frames = y->d[1], m = y->d[2];
  DType dt = n->in[0]->dt;
  Txt t1, t2, tw;
  char src[128];
  emit_transform_decls(e, dn);
  ec_line(e, "ptrdiff_t bt, f;");
  ec_line(e, "for (bt = 0; bt < %lld; bt++)", LL(nb));
  ec_line(e, "for (f = 0; f < %lld; f++) {", LL(frames));
  ec_line(e, "const ptrdiff_t ib = bt * %lld + f * %lld, ob = (bt * %lld + f) * %lld;", LL(slen * cin),
          LL(step * cin), LL(frames), LL(m * 2));
  ec_line(e, "for (t = 0; t < %lld; t++) {", LL(dn));
  ec_line(e, "const double w = %s;", ir_has_input(n, 2) ? ld(&tw, n->in[2]->dt, "X2[t]") : "1.0");
  snprintf(src, sizeof src, "X0[ib + t * %lld]", LL(cin));
  ec_line(e, "A[2 * t] = %s * w;", ld(&t1, dt, src));
  if (cin == 2) {
    snprintf(src, sizeof src, "X0[ib + t * %lld + 1]", LL(cin));
    ec_line(e, "A[2 * t + 1] = %s * w;", ld(&t2, dt, src));
  } else {
    ec_line(e, "A[2 * t + 1] = 0;");
  }
  ec_line(e, "}");
  emit_transform(e, dn, false, m);
  ec_line(e, "for (k = 0; k < %lld; k++) {", LL(m));
  ec_line(e, "Y0[ob + 2 * k] = %s;", st(&t1, dt, "B[2 * k]"));
  ec_line(e, "Y0[ob + 2 * k + 1] = %s;", st(&t1, dt, "B[2 * k + 1]"));
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* w[i] for i < size: expr of x = 2 pi i / D, D = size (periodic) or size - 1. */
static bool emit_window(EmitC *e, const Node *n, const char *expr) {
  int64_t size = n->out[0]->shape.d[0];
  int64_t den = ir_attr_int(n, "periodic", 1) ? size : size - 1;
  Txt t1;
  ec_line(e, "ptrdiff_t i;");
  ec_line(e, "for (i = 0; i < %lld; i++) {", LL(size));
  if (den <= 0)  /* one point of a symmetric window */
    ec_line(e, "const double x = 0;");
  else
    ec_line(e, "const double x = (double)i * %.17g;", 2.0 * PI / (double)den);
  ec_line(e, "Y0[i] = %s;", st(&t1, n->out[0]->dt, expr));
  ec_line(e, "}");
  return true;
}

bool emitc_HannWindow(EmitC *e, const Node *n) {
  return emit_window(e, n, "sin(x / 2) * sin(x / 2)");
}
bool emitc_HammingWindow(EmitC *e, const Node *n) {
  return emit_window(e, n, "25.0 / 46.0 - (21.0 / 46.0) * cos(x)");
}
bool emitc_BlackmanWindow(EmitC *e, const Node *n) {
  return emit_window(e, n, "0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x)");
}

/* Triangular filters between mel-spaced edges (the reference's integer bins:
 * floor((dft_length + 1) * hz / sample_rate)). An edge outside the spectrum
 * is ONNXC_ERR_BAD_INDEX. */
bool emitc_MelWeightMatrix(EmitC *e, const Node *n) {
  int64_t bins = n->out[0]->shape.d[0], mels = n->out[0]->shape.d[1];
  int64_t dft = tensor_get_i64(n->in[1]->konst, 0);
  DType dt = n->out[0]->dt;
  Txt t1, t2, t3;
  ec_line(e, "const double sr = %s, lo = %s, hi = %s;", ld(&t1, n->in[2]->dt, "X2[0]"),
          ld(&t2, n->in[3]->dt, "X3[0]"), ld(&t3, n->in[4]->dt, "X4[0]"));
  ec_line(e, "const double lmel = 2595.0 * log10(1.0 + lo / 700.0), hmel = 2595.0 * log10(1.0 + hi / 700.0);");
  ec_line(e, "const double step = (hmel - lmel) / %lld.0;", LL(mels + 2));
  ec_line(e, "ptrdiff_t i, j, q;");
  ec_line(e, "for (i = 0; i < %lld; i++)", LL(bins * mels));
  ec_line(e, "  Y0[i] = %s;", st(&t1, dt, "0.0"));
  ec_line(e, "for (i = 0; i < %lld; i++) {", LL(mels));
  ec_line(e, "ptrdiff_t edge[3];");
  ec_line(e, "for (q = 0; q < 3; q++) {");
  ec_line(e, "const double hz = 700.0 * (pow(10.0, ((double)(i + q) * step + lmel) / 2595.0) - 1.0);");
  ec_line(e, "const double fb = floor(%lld.0 * hz / sr);", LL(dft + 1));
  ec_line(e, "if (!(fb >= 0.0 && fb <= %lld.0))", LL(bins));
  ec_line(e, "  return ONNXC_ERR_BAD_INDEX;");
  ec_line(e, "edge[q] = (ptrdiff_t)fb;");
  ec_line(e, "}");
  ec_line(e, "if (edge[1] >= %lld)", LL(bins));
  ec_line(e, "  return ONNXC_ERR_BAD_INDEX;");
  ec_line(e, "if (edge[1] == edge[0])");
  ec_line(e, "  Y0[edge[1] * %lld + i] = %s;", LL(mels), st(&t1, dt, "1.0"));
  ec_line(e, "else");
  ec_line(e, "  for (j = edge[0]; j <= edge[1]; j++)");
  ec_line(e, "    Y0[j * %lld + i] = %s;", LL(mels),
          st(&t1, dt, "(double)(j - edge[0]) / (double)(edge[1] - edge[0])"));
  ec_line(e, "for (j = edge[1]; j < edge[2]; j++)");
  ec_line(e, "  Y0[j * %lld + i] = %s;", LL(mels),
          st(&t1, dt, "(double)(edge[2] - j) / (double)(edge[2] - edge[1])"));
  ec_line(e, "}");
  return true;
}
