/* emit_loss.c - C kernels of the losses and of the training optimizers.
 *
 * Losses view the input as [N, C, D] (D the product of d1..dk) and the target
 * as [N, D]. A target equal to ignore_index gives loss 0 and weight 0; any
 * other target outside [0, C) is ONNXC_ERR_BAD_INDEX. "mean" divides the sum
 * of the weighted losses by the sum of the weights of the samples not ignored
 * (their count without a weight input), as ONNX Runtime does; sums run in
 * double. SoftmaxCrossEntropyLoss takes log-probabilities as x - logsumexp
 * over C (the max subtracted first), written to log_prob when requested.
 * Optimizers compute elementwise in double from the spec's pseudo code, with
 * the scalar learning rate (and Adam's bias correction) computed once.
 */
#include "codegen.h"

#include <stdio.h>
#include <string.h>

#define LL(x) ((long long)(x))

/* Appends src (an element of type `from`) converted to `to`. */
static const char *conv(Buf *b, DType from, DType to, const char *src) {
  b->len = 0;
  buf_puts(b, "");
  ec_ew_load(b, from, to, src);
  return b->s;
}

/* ---- losses ------------------------------------------------------------------- */

static bool emit_nll(EmitC *e, const Node *n, bool softmax) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  int64_t N = xs->d[0], C = xs->d[1], D = 1;
  for (int i = 2; i < xs->rank; i++)
    D *= xs->d[i];
  const char *red = ir_attr_str(n, "reduction", "mean");
  bool none = strcmp(red, "none") == 0, mean = strcmp(red, "mean") == 0;
  bool has_ii = ir_attr(n, "ignore_index") != NULL, has_w = ir_has_input(n, 2);
  int64_t ii = ir_attr_int(n, "ignore_index", 0);
  bool logp = softmax && ec_has_output(n, 1);
  bool lse = softmax && C > 0;
  DType ct = t == DT_F64 ? DT_F64 : DT_F32;
  const char *CT = dtype_ctype(ct), *f = ct == DT_F32 ? "f" : "";
  Buf b, b2;
  buf_init(&b);
  buf_init(&b2);
  char xc[64], yd[64];   /* x of class c, loss of sample (i, d) */
  snprintf(xc, sizeof xc, "x[c * %lld + d]", LL(D));
  snprintf(yd, sizeof yd, "Y0[i * %lld + d]", LL(D));
  if (!none) /* den only for the mean: clang's -Wall flags a sum that is never read */
    ec_line(e, mean ? "double num = 0.0, den = 0.0;" : "double num = 0.0;");
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", LL(N));
  ec_line(e, "const %s *x = X0 + i * %lld;", dtype_ctype(t), LL(C * D));
  if (logp)
    ec_line(e, "%s *lp = Y1 + i * %lld;", dtype_ctype(t), LL(C * D));
  ec_line(e, "for (ptrdiff_t d = 0; d < %lld; d++) {", LL(D));
  if (lse) {
    /* log-softmax over the classes of this sample: x - (max + log sum exp(x - max)) */
    ec_line(e, "%s mx = %s;", CT, conv(&b, t, ct, "x[d]"));
    ec_line(e, "for (ptrdiff_t c = 1; c < %lld; c++) {", LL(C));
    ec_line(e, "const %s v = %s;", CT, conv(&b, t, ct, xc));
    ec_line(e, "if (v > mx) mx = v;");
    ec_line(e, "}");
    ec_line(e, "%s s = 0;", CT);
    ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) s += exp%s(%s - mx);", LL(C), f, conv(&b, t, ct, xc));
    ec_line(e, "const %s lse = mx + log%s(s);", CT, f);
    if (logp) {
      ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) {", LL(C));
      buf_printf(&b2, "%s - lse", conv(&b, t, ct, xc));
      char lpc[64];
      snprintf(lpc, sizeof lpc, "lp[c * %lld + d]", LL(D));
      ec_store_line(e, lpc, ct, t, b2.s);
      ec_line(e, "}");
    }
  } else if (logp) {
    ec_line(e, "(void)lp;");
  }
  ec_line(e, "const int64_t c = (int64_t)X1[i * %lld + d];", LL(D));
  if (has_ii) {
    ec_line(e, "if (c == INT64_C(%lld)) {", LL(ii));
    if (none)
      ec_store_line(e, yd, DT_F64, t, "0.0");
    ec_line(e, "continue;");
    ec_line(e, "}");
  }
  ec_line(e, "if (c < 0 || c >= %lld) return ONNXC_ERR_BAD_INDEX;", LL(C));
  if (has_w)
    ec_line(e, "const double w = (double)%s;", conv(&b, t, ct, "X2[c]"));
  else
    ec_line(e, "const double w = 1.0;");
  ec_line(e, "const double l = -(double)(%s%s) * w;", conv(&b, t, ct, xc), lse ? " - lse" : "");
  if (none) {
    ec_store_line(e, yd, DT_F64, t, "l");
  } else {
    ec_line(e, "num += l;");
    if (mean)
      ec_line(e, "den += w;");
  }
  ec_line(e, "}");
  ec_line(e, "}");
  if (!none)
    ec_store_line(e, "Y0[0]", DT_F64, t, mean ? "num / den" : "num");
  buf_free(&b);
  buf_free(&b2);
  return true;
}

bool emitc_NegativeLogLikelihoodLoss(EmitC *e, const Node *n) { return emit_nll(e, n, false); }

bool emitc_SoftmaxCrossEntropyLoss(EmitC *e, const Node *n) { return emit_nll(e, n, true); }

/* ---- optimizers ------------------------------------------------------------------ */

/* A float attribute as a double literal. */
static const char *attr_lit(const Node *n, const char *name, float dflt, char *buf, size_t size) {
  return ec_literal(DT_F64, (double)ir_attr_float(n, name, dflt), buf, size);
}

/* Opens the elementwise loop over tensor i of an optimizer with k inputs per
 * tensor: x, g and the states s1.. loaded as doubles. */
static void open_tensor(EmitC *e, const Node *n, int i, int nt, int k) {
  DType t = n->in[2 + i]->dt;
  Buf b;
  buf_init(&b);
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", LL(ec_numel(n->in[2 + i])));
  static const char *const names[] = {"x", "g", "s1", "s2"};
  for (int j = 0; j < k; j++) {
    char src[32];
    snprintf(src, sizeof src, "X%d[j]", 2 + j * nt + i);
    ec_line(e, "const double %s = %s;", names[j], conv(&b, t, DT_F64, src));
  }
  buf_free(&b);
}

/* Stores expr into output slot `slot` (when present) at j. */
static void out_elem(EmitC *e, const Node *n, int slot, const char *expr) {
  if (!ec_has_output(n, slot))
    return;
  char dst[32];
  snprintf(dst, sizeof dst, "Y%d[j]", slot);
  ec_store_line(e, dst, DT_F64, n->out[slot]->dt, expr);
}

/* r and t: the scalar inputs R and T as doubles. */
static void load_rt(EmitC *e, const Node *n) {
  Buf b;
  buf_init(&b);
  ec_line(e, "const double r = %s;", conv(&b, n->in[0]->dt, DT_F64, "X0[0]"));
  ec_line(e, "const int64_t t = X1[0];");
  buf_free(&b);
}

bool emitc_Adagrad(EmitC *e, const Node *n) {
  int nt = (n->n_in - 2) / 3;
  char decay[64], eps[64], norm[64];
  attr_lit(n, "decay_factor", 0.0f, decay, sizeof decay);
  attr_lit(n, "epsilon", 1e-6f, eps, sizeof eps);
  attr_lit(n, "norm_coefficient", 0.0f, norm, sizeof norm);
  load_rt(e, n);
  ec_line(e, "const double rt = r / (1.0 + (double)t * %s);", decay);
  for (int i = 0; i < nt; i++) {
    open_tensor(e, n, i, nt, 3);
    ec_line(e, "const double gr = %s * x + g;", norm);
    ec_line(e, "const double h = s1 + gr * gr;");
    ec_line(e, "const double xn = x - rt * gr / (sqrt(h) + %s);", eps);
    out_elem(e, n, i, "xn");
    out_elem(e, n, nt + i, "h");
    ec_line(e, "}");
  }
  return true;
}

bool emitc_Adam(EmitC *e, const Node *n) {
  int nt = (n->n_in - 2) / 4;
  char alpha[64], beta[64], eps[64], norm[64], post[64];
  attr_lit(n, "alpha", 0.9f, alpha, sizeof alpha);
  attr_lit(n, "beta", 0.999f, beta, sizeof beta);
  attr_lit(n, "epsilon", 1e-6f, eps, sizeof eps);
  attr_lit(n, "norm_coefficient", 0.0f, norm, sizeof norm);
  attr_lit(n, "norm_coefficient_post", 0.0f, post, sizeof post);
  load_rt(e, n);
  /* Bias correction of both running averages, folded into the step size. */
  ec_line(e, "const double ra = t > 0 ? r * sqrt(1.0 - pow(%s, (double)t)) / (1.0 - pow(%s, (double)t)) : r;", beta,
          alpha);
  for (int i = 0; i < nt; i++) {
    open_tensor(e, n, i, nt, 4);
    ec_line(e, "const double gr = %s * x + g;", norm);
    ec_line(e, "const double v = %s * s1 + (1.0 - %s) * gr;", alpha, alpha);
    ec_line(e, "const double h = %s * s2 + (1.0 - %s) * gr * gr;", beta, beta);
    ec_line(e, "const double xn = (1.0 - %s) * (x - ra * (v / (sqrt(h) + %s)));", post, eps);
    out_elem(e, n, i, "xn");
    out_elem(e, n, nt + i, "v");
    out_elem(e, n, 2 * nt + i, "h");
    ec_line(e, "}");
  }
  return true;
}

bool emitc_Momentum(EmitC *e, const Node *n) {
  int nt = (n->n_in - 2) / 3;
  char alpha[64], beta[64], norm[64];
  attr_lit(n, "alpha", 0.0f, alpha, sizeof alpha);
  attr_lit(n, "beta", 0.0f, beta, sizeof beta);
  attr_lit(n, "norm_coefficient", 0.0f, norm, sizeof norm);
  bool nesterov = strcmp(ir_attr_str(n, "mode", "standard"), "nesterov") == 0;
  load_rt(e, n);
  /* The first update (T == 0) takes the whole gradient. */
  ec_line(e, "const double ba = t > 0 ? %s : 1.0;", beta);
  for (int i = 0; i < nt; i++) {
    open_tensor(e, n, i, nt, 3);
    ec_line(e, "const double gr = %s * x + g;", norm);
    ec_line(e, "const double v = %s * s1 + ba * gr;", alpha);
    if (nesterov)
      ec_line(e, "const double xn = x - r * (gr + %s * v);", alpha);
    else
      ec_line(e, "const double xn = x - r * v;");
    out_elem(e, n, i, "xn");
    out_elem(e, n, nt + i, "v");
    ec_line(e, "}");
  }
  return true;
}
