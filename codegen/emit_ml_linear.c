/* emit_ml_linear.c - C emission for the ai.onnx.ml linear models and
 * preprocessors: LinearClassifier, LinearRegressor, Scaler, Normalizer; and
 * the post_transform epilogue the legacy tree ensembles share.
 *
 * Scores are computed in float, as ONNX Runtime does: each target's dot
 * product over the features from static coefficient tables, plus its
 * intercept. The classifier's label is the first class of highest raw score;
 * a binary classifier (one score s, two labels) labels s > 0 positive and
 * writes the scores [1 - p, p], p = s or logistic(s), as ONNX Runtime 1.32
 * does (it skips SOFTMAX there). infer_ml_linear.c checked every length.
 */
#include "codegen.h"
#include "emit_ml.h"

#include <string.h>

const float *ml_floats(const Node *n, const char *name, int *count) {
  const Attr *a = ir_attr(n, name);
  *count = a && a->kind == AT_FLOATS ? a->n : 0;
  return *count ? a->u.fs : NULL;
}

int ml_post_code(const Node *n) {
  static const char *const names[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"};
  const char *s = ir_attr_str(n, "post_transform", "NONE");
  for (int i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0)
      return i;
  return 0;
}

void ml_emit_post(EmitC *e, int post, const char *y, int64_t k) {
  if (post == 2) {
    ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) %s[k] = 1.0f / (1.0f + expf(-%s[k]));",
            (long long)k, y, y);
  } else if (post == 1 || post == 3) {
    /* SOFTMAX_ZERO as ONNX Runtime: scores within 1e-7 of zero stay zero
     * (times exp(-max)) and are left out of the sum. */
    bool z = post == 3;
    ec_line(e, "{");
    ec_line(e, "float mx = %s[0], sum = 0.0f;", y);
    ec_line(e, "for (ptrdiff_t k = 1; k < %lld; k++) if (%s[k] > mx) mx = %s[k];", (long long)k,
            y, y);
    ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) {", (long long)k);
    if (z) {
      ec_line(e, "  if (%s[k] > 1e-7f || %s[k] < -1e-7f) { %s[k] = expf(%s[k] - mx); sum += %s[k]; }",
              y, y, y, y, y);
      ec_line(e, "  else %s[k] *= expf(-mx);", y);
    } else {
      ec_line(e, "  %s[k] = expf(%s[k] - mx);", y, y);
      ec_line(e, "  sum += %s[k];", y);
    }
    ec_line(e, "}");
    ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) %s[k] /= sum;", (long long)k, y);
    ec_line(e, "}");
  }
}

static void float_table(EmitC *e, const char *name, const float *v, int count, float dflt,
                        int want) {
  MlTable tb;
  char lit[64];
  ml_table_begin(&tb, "float", name, want);
  for (int i = 0; i < want; i++)
    ml_table_add(&tb, ec_literal(DT_F32, v ? v[count == 1 ? 0 : i] : dflt, lit, sizeof lit));
  ml_table_end(e, &tb);
}

/* Emits the per-row dot products into float row `z` (E targets, C features)
 * and opens the row loop over r; the caller closes it. */
static void linear_rows(EmitC *e, const Node *n, int64_t *targets, const char *z_decl) {
  const Shape *xs = &n->in[0]->shape;
  int64_t cols = xs->d[xs->rank - 1], rows = xs->rank == 2 ? xs->d[0] : 1;
  int nc = 0, ni = 0;
  const float *w = ml_floats(n, "coefficients", &nc);
  const float *b = ml_floats(n, "intercepts", &ni);
  int64_t t = nc / cols;
  *targets = t;
  float_table(e, "W", w, nc, 0.0f, nc);
  float_table(e, "B", b, ni, 0.0f, (int)t);
  ec_line(e, "for (ptrdiff_t r = 0; r < %lld; r++) {", (long long)rows);
  ec_line(e, "const %s *x = X0 + r * %lld;", dtype_ctype(n->in[0]->dt), (long long)cols);
  ec_line(e, "%s", z_decl);
  ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) {", (long long)t);
  ec_line(e, "  float acc = B[k];");
  ec_line(e, "  for (ptrdiff_t c = 0; c < %lld; c++) acc += W[k * %lld + c] * (float)x[c];",
          (long long)cols, (long long)cols);
  ec_line(e, "  z[k] = acc;");
  ec_line(e, "}");
}

bool emitc_LinearClassifier(EmitC *e, const Node *n) {
  int nl = 0, nc = 0, ni = 0;
  const int64_t *labels = ir_attr_ints(n, "classlabels_ints", &nl);
  const Shape *xs = &n->in[0]->shape;
  ml_floats(n, "coefficients", &nc);
  ml_floats(n, "intercepts", &ni);
  int64_t t = nc / xs->d[xs->rank - 1];
  bool binary = t == 1 && nl == 2, scores = ec_has_output(n, 1);
  int post = ml_post_code(n);
  char decl[128], item[32];
  MlTable tb;
  ml_table_begin(&tb, "int64_t", "LABEL", nl);
  for (int i = 0; i < nl; i++) {
    snprintf(item, sizeof item, "%lld", (long long)labels[i]);
    ml_table_add(&tb, item);
  }
  ml_table_end(e, &tb);
  if (scores)
    snprintf(decl, sizeof decl, "float *z = Y1 + r * %lld;", (long long)(binary ? 2 : t));
  else
    snprintf(decl, sizeof decl, "float z[%lld];", (long long)(binary ? 2 : t));
  linear_rows(e, n, &t, decl);
  if (binary) {
    ec_line(e, "{");
    ec_line(e, "const float s = z[0], p = %s;", post == 2 ? "1.0f / (1.0f + expf(-s))" : "s");
    ec_line(e, "Y0[r] = s > 0.0f ? LABEL[1] : LABEL[0];");
    ec_line(e, "z[0] = 1.0f - p;");
    ec_line(e, "z[1] = p;");
    ec_line(e, "}");
  } else {
    ec_line(e, "{");
    ec_line(e, "ptrdiff_t best = 0;");
    ec_line(e, "for (ptrdiff_t k = 1; k < %lld; k++) if (z[k] > z[best]) best = k;", (long long)t);
    ec_line(e, "Y0[r] = LABEL[best];");
    ec_line(e, "}");
    if (scores)
      ml_emit_post(e, post, "z", t);
  }
  if (!scores)
    ec_line(e, "(void)z;");
  ec_line(e, "}");
  return true;
}

bool emitc_LinearRegressor(EmitC *e, const Node *n) {
  int64_t t = 0;
  const Shape *xs = &n->in[0]->shape;
  int nc = 0;
  ml_floats(n, "coefficients", &nc);
  char decl[96];
  snprintf(decl, sizeof decl, "float *z = Y0 + r * %lld;", (long long)(nc / xs->d[xs->rank - 1]));
  linear_rows(e, n, &t, decl);
  ml_emit_post(e, ml_post_code(n), "z", t);
  ec_line(e, "}");
  return true;
}

bool emitc_Scaler(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  int64_t cols = xs->d[xs->rank - 1], numel = ec_numel(n->in[0]);
  int no = 0, ns = 0;
  const float *off = ml_floats(n, "offset", &no), *sc = ml_floats(n, "scale", &ns);
  if (numel == 0)
    return true;
  float_table(e, "OFF", off, no, 0.0f, (int)cols);
  float_table(e, "SC", sc, ns, 1.0f, (int)cols);
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++)", (long long)numel);
  ec_line(e, "  Y0[i] = ((float)X0[i] - OFF[i %% %lld]) * SC[i %% %lld];", (long long)cols,
          (long long)cols);
  return true;
}

/* A row whose norm is zero is copied unchanged (ONNX Runtime). */
bool emitc_Normalizer(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  int64_t cols = xs->d[xs->rank - 1], rows = xs->rank == 2 ? xs->d[0] : 1;
  const char *norm = ir_attr_str(n, "norm", "MAX");
  if (rows * cols == 0)
    return true;
  ec_line(e, "for (ptrdiff_t r = 0; r < %lld; r++) {", (long long)rows);
  ec_line(e, "const %s *x = X0 + r * %lld;", dtype_ctype(n->in[0]->dt), (long long)cols);
  ec_line(e, "float *y = Y0 + r * %lld;", (long long)cols);
  if (strcmp(norm, "MAX") == 0) {
    ec_line(e, "float m = (float)x[0];");
    ec_line(e, "for (ptrdiff_t c = 1; c < %lld; c++) if ((float)x[c] > m) m = (float)x[c];",
            (long long)cols);
  } else {
    bool l1 = strcmp(norm, "L1") == 0;
    ec_line(e, "float m = 0.0f;");
    ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) m += %s;", (long long)cols,
            l1 ? "fabsf((float)x[c])" : "(float)x[c] * (float)x[c]");
    if (!l1)
      ec_line(e, "m = sqrtf(m);");
  }
  ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) y[c] = m != 0.0f ? (float)x[c] / m : (float)x[c];",
          (long long)cols);
  ec_line(e, "}");
  return true;
}
