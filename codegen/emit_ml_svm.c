/* emit_ml_svm.c - C emission for ai.onnx.ml SVMClassifier and SVMRegressor.
 *
 * The support vectors, coefficients and rho are static tables. Kernel values
 * are float, as ONNX Runtime computes them (RBF exp(-gamma |x - v|^2); POLY
 * (gamma x.v + coef0)^degree; SIGMOID tanh(gamma x.v + coef0); LINEAR x.v).
 * The classifier sums each one-vs-one pair in double over its two classes'
 * vectors, in vector order (ONNX Runtime's order), adds the pair's rho, and
 * votes; the label is the class of most votes (first on ties). With prob_a /
 * prob_b, pairs go through Platt's sigmoid (clamped to [1e-7, 1 - 1e-7]) and
 * Wu-Lin-Weng pairwise coupling (100 iterations at most, eps 0.005 / C), as
 * libsvm and ONNX Runtime do. Without them a binary SVC writes [-s, s]
 * (post_transform NONE), [logistic(-s), logistic(s)] (LOGISTIC) or [1 - s, s]. infer_ml_svm.c checked every length.
 */
#include "codegen.h"
#include "emit_ml.h"

#include <string.h>

static void float_table(EmitC *e, const char *name, const float *v, int count) {
  MlTable tb;
  char lit[64];
  ml_table_begin(&tb, "float", name, count);
  for (int i = 0; i < count; i++)
    ml_table_add(&tb, ec_literal(DT_F32, v[i], lit, sizeof lit));
  ml_table_end(e, &tb);
}

/* Emits `const float kv = ...;`, the kernel of row x and row `vec` (a float
 * pointer expression) over `feats` features. */
static void emit_kernel(EmitC *e, const Node *n, const char *vec, int64_t feats, bool linear_only) {
  const char *k = linear_only ? "LINEAR" : ir_attr_str(n, "kernel_type", "LINEAR");
  int np = 0;
  const float *p = ml_floats(n, "kernel_params", &np);
  char g[64], c0[64], deg[64];
  ec_literal(DT_F32, np ? p[0] : 0.0, g, sizeof g);
  ec_literal(DT_F32, np ? p[1] : 0.0, c0, sizeof c0);
  ec_literal(DT_F32, np ? p[2] : 0.0, deg, sizeof deg);
  ec_line(e, "float kv = 0.0f;");
  if (strcmp(k, "RBF") == 0) {
    ec_line(e, "for (ptrdiff_t f = 0; f < %lld; f++) { const float t = (float)x[f] - %s[f]; kv += t * t; }",
            (long long)feats, vec);
    ec_line(e, "kv = expf(-%s * kv);", g);
    return;
  }
  ec_line(e, "for (ptrdiff_t f = 0; f < %lld; f++) kv += (float)x[f] * %s[f];", (long long)feats, vec);
  if (strcmp(k, "POLY") == 0) {
    float dv = np ? p[2] : 0.0f;
    ec_line(e, "kv = %s * kv + %s;", g, c0);
    if (dv == 2.0f)
      ec_line(e, "kv = kv * kv;");
    else if (dv == 3.0f)
      ec_line(e, "kv = kv * kv * kv;");
    else
      ec_line(e, "kv = powf(kv, %s);", deg);
  } else if (strcmp(k, "SIGMOID") == 0) {
    ec_line(e, "kv = tanhf(%s * kv + %s);", g, c0);
  }
}

bool emitc_SVMRegressor(EmitC *e, const Node *n) {
  int64_t rows = n->in[0]->shape.d[0], feats = n->in[0]->shape.d[1];
  int64_t v = ir_attr_int(n, "n_supports", 0);
  int nc = 0, nr = 0, ns = 0;
  const float *coef = ml_floats(n, "coefficients", &nc), *rho = ml_floats(n, "rho", &nr);
  const float *sv = ml_floats(n, "support_vectors", &ns);
  char lit[64];
  float_table(e, "COEF", coef, nc);
  if (v > 0)
    float_table(e, "SV", sv, ns);
  ec_line(e, "for (ptrdiff_t r = 0; r < %lld; r++) {", (long long)rows);
  ec_line(e, "const float *x = X0 + r * %lld;", (long long)feats);
  ec_line(e, "float acc = %s;", ec_literal(DT_F32, rho[0], lit, sizeof lit));
  if (v > 0) {
    char vec[64];
    snprintf(vec, sizeof vec, "(SV + m * %lld)", (long long)feats);
    ec_line(e, "for (ptrdiff_t m = 0; m < %lld; m++) {", (long long)v);
    emit_kernel(e, n, vec, feats, false);
    ec_line(e, "acc += COEF[m] * kv;");
    ec_line(e, "}");
  } else {
    emit_kernel(e, n, "COEF", feats, true);
    ec_line(e, "acc += kv;");
  }
  if (ir_attr_int(n, "one_class", 0))
    ec_line(e, "acc = acc > 0.0f ? 1.0f : -1.0f;");
  ec_line(e, "Y0[r] = acc;");
  ec_line(e, "}");
  return true;
}

/* Pairwise coupling of the C x C pair probabilities r into p[C] (libsvm's
 * multiclass_probability, in float as ONNX Runtime). */
static void emit_coupling(EmitC *e, int c) {
  ec_line(e, "{");
  ec_line(e, "float Q[%d], Qp[%d];", c * c, c);
  ec_line(e, "const float eps = 0.005f / (float)%d;", c);
  ec_line(e, "for (int i = 0; i < %d * %d; i++) Q[i] = 0.0f;", c, c);
  ec_line(e, "for (int i = 0; i < %d; i++) {", c);
  ec_line(e, "  p[i] = 1.0f / (float)%d;", c);
  ec_line(e, "  for (int j = 0; j < i; j++) {");
  ec_line(e, "    Q[i * %d + i] += pr[j * %d + i] * pr[j * %d + i];", c, c, c);
  ec_line(e, "    Q[i * %d + j] = Q[j * %d + i];", c, c);
  ec_line(e, "  }");
  ec_line(e, "  for (int j = i + 1; j < %d; j++) {", c);
  ec_line(e, "    Q[i * %d + i] += pr[j * %d + i] * pr[j * %d + i];", c, c, c);
  ec_line(e, "    Q[i * %d + j] = -pr[j * %d + i] * pr[i * %d + j];", c, c, c);
  ec_line(e, "  }");
  ec_line(e, "}");
  ec_line(e, "for (int loop = 0; loop < 100; loop++) {");
  ec_line(e, "  float pQp = 0.0f, max_error = 0.0f;");
  ec_line(e, "  for (int i = 0; i < %d; i++) {", c);
  ec_line(e, "    Qp[i] = 0.0f;");
  ec_line(e, "    for (int j = 0; j < %d; j++) Qp[i] += Q[i * %d + j] * p[j];", c, c);
  ec_line(e, "    pQp += p[i] * Qp[i];");
  ec_line(e, "  }");
  ec_line(e, "  for (int i = 0; i < %d; i++) {", c);
  ec_line(e, "    const float err = fabsf(Qp[i] - pQp);");
  ec_line(e, "    if (err > max_error) max_error = err;");
  ec_line(e, "  }");
  ec_line(e, "  if (max_error < eps) break;");
  ec_line(e, "  for (int i = 0; i < %d; i++) {", c);
  ec_line(e, "    const float diff = (-Qp[i] + pQp) / Q[i * %d + i];", c);
  ec_line(e, "    p[i] += diff;");
  ec_line(e, "    pQp = (pQp + diff * (diff * Q[i * %d + i] + 2.0f * Qp[i])) / (1.0f + diff) / (1.0f + diff);", c);
  ec_line(e, "    for (int j = 0; j < %d; j++) {", c);
  ec_line(e, "      Qp[j] = (Qp[j] + diff * Q[i * %d + j]) / (1.0f + diff);", c);
  ec_line(e, "      p[j] /= (1.0f + diff);");
  ec_line(e, "    }");
  ec_line(e, "  }");
  ec_line(e, "}");
  ec_line(e, "}");
}

/* The linear form (no support vectors): one score per class, x . w_k + rho[0]. */
static void emit_linear_classifier(EmitC *e, const Node *n, int nl, int post) {
  int64_t feats = n->in[0]->shape.d[1];
  int nc = 0, nr = 0, na = 0;
  const float *coef = ml_floats(n, "coefficients", &nc), *rho = ml_floats(n, "rho", &nr);
  ml_floats(n, "prob_a", &na);
  char lit[64], vec[64];
  bool all_pos = true;
  for (int i = 0; i < nc; i++)
    all_pos = all_pos && coef[i] >= 0.0f;
  snprintf(vec, sizeof vec, "(COEF + k * %lld)", (long long)feats);
  ec_line(e, "for (ptrdiff_t k = 0; k < %d; k++) {", nl);
  emit_kernel(e, n, vec, feats, true);
  ec_line(e, "z[k] = kv + %s;", ec_literal(DT_F32, rho[0], lit, sizeof lit));
  ec_line(e, "}");
  ec_line(e, "{");
  ec_line(e, "ptrdiff_t best = 0;");
  ec_line(e, "for (ptrdiff_t k = 1; k < %d; k++) if (z[k] > z[best]) best = k;", nl);
  if (nl == 2 && !na)
    ec_line(e, "Y0[r] = %s ? LABEL[1] : LABEL[best];",
            all_pos ? "z[best] >= 0.5f" : "z[best] > 0.0f");
  else
    ec_line(e, "Y0[r] = LABEL[best];");
  ec_line(e, "}");
  ml_emit_post(e, post, "z", nl);
}

bool emitc_SVMClassifier(EmitC *e, const Node *n) {
  int64_t rows = n->in[0]->shape.d[0], feats = n->in[0]->shape.d[1];
  int nl = 0, nvpc = 0, nc = 0, nr = 0, na = 0, ns = 0;
  const int64_t *labels = ir_attr_ints(n, "classlabels_ints", &nl);
  const int64_t *vpc = ir_attr_ints(n, "vectors_per_class", &nvpc);
  const float *coef = ml_floats(n, "coefficients", &nc), *rho = ml_floats(n, "rho", &nr);
  const float *pa = ml_floats(n, "prob_a", &na), *pb = ml_floats(n, "prob_b", &na);
  const float *sv = ml_floats(n, "support_vectors", &ns);
  int post = ml_post_code(n), pairs = nl * (nl - 1) / 2;
  bool scores = ec_has_output(n, 1);
  int64_t v = 0;
  for (int i = 0; i < nvpc; i++)
    v += vpc[i];
  int width = v > 0 && !na ? (nl > 2 ? pairs : 2) : nl;
  MlTable tb;
  char item[32];
  ml_table_begin(&tb, "int64_t", "LABEL", nl);
  for (int i = 0; i < nl; i++) {
    snprintf(item, sizeof item, "%lld", (long long)labels[i]);
    ml_table_add(&tb, item);
  }
  ml_table_end(e, &tb);
  float_table(e, "COEF", coef, nc);
  if (v > 0) {
    float_table(e, "SV", sv, ns);
    float_table(e, "RHO", rho, pairs);
    /* START[c]: class c's first vector; PAIR[i * C + j]: the index of pair
     * (i, j), i < j. */
    ml_table_begin(&tb, "int32_t", "START", nl + 1);
    for (int c = 0, at = 0; c <= nl; c++) {
      snprintf(item, sizeof item, "%d", at);
      ml_table_add(&tb, item);
      at += c < nl ? (int)vpc[c] : 0;
    }
    ml_table_end(e, &tb);
    ml_table_begin(&tb, "int32_t", "PAIR", nl * nl);
    for (int i = 0, p = 0; i < nl; i++)
      for (int j = 0; j < nl; j++) {
        snprintf(item, sizeof item, "%d", j > i ? p++ : -1);
        ml_table_add(&tb, item);
      }
    ml_table_end(e, &tb);
    if (na) {
      float_table(e, "PROB_A", pa, na);
      float_table(e, "PROB_B", pb, na);
    }
  }
  ec_line(e, "for (ptrdiff_t r = 0; r < %lld; r++) {", (long long)rows);
  ec_line(e, "const %s *x = X0 + r * %lld;", dtype_ctype(n->in[0]->dt), (long long)feats);
  if (scores)
    ec_line(e, "float *z = Y1 + r * %d;", width);
  else
    ec_line(e, "float z[%d];", width);
  if (v == 0) {
    emit_linear_classifier(e, n, nl, post);
  } else {
    char vec[64];
    snprintf(vec, sizeof vec, "(SV + m * %lld)", (long long)feats);
    ec_line(e, "double ps[%d];", pairs);
    ec_line(e, "float s[%d];", pairs);
    ec_line(e, "int votes[%d];", nl);
    ec_line(e, "for (int p = 0; p < %d; p++) ps[p] = 0.0;", pairs);
    ec_line(e, "for (int c = 0; c < %d; c++) votes[c] = 0;", nl);
    ec_line(e, "for (int c = 0; c < %d; c++) {", nl);
    ec_line(e, "for (ptrdiff_t m = START[c]; m < START[c + 1]; m++) {");
    emit_kernel(e, n, vec, feats, false);
    /* Vector m of class c weighs in pair (c, j) with row j - 1 of the
     * coefficients and in pair (j, c) with row j. */
    ec_line(e, "for (int j = 0; j < %d; j++) {", nl);
    ec_line(e, "  if (j > c) ps[PAIR[c * %d + j]] += (double)(COEF[(j - 1) * %lld + m] * kv);", nl,
            (long long)v);
    ec_line(e, "  else if (j < c) ps[PAIR[j * %d + c]] += (double)(COEF[j * %lld + m] * kv);", nl,
            (long long)v);
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "for (int i = 0, p = 0; i < %d; i++) {", nl);
    ec_line(e, "  for (int j = i + 1; j < %d; j++, p++) {", nl);
    ec_line(e, "    s[p] = (float)(ps[p] + (double)RHO[p]);");
    ec_line(e, "    votes[s[p] > 0.0f ? i : j]++;");
    ec_line(e, "  }");
    ec_line(e, "}");
    ec_line(e, "{");
    ec_line(e, "int best = 0;");
    ec_line(e, "for (int c = 1; c < %d; c++) if (votes[c] > votes[best]) best = c;", nl);
    ec_line(e, "Y0[r] = LABEL[best];");
    ec_line(e, "}");
    if (na) {
      ec_line(e, "{");
      ec_line(e, "float pr[%d];", nl * nl);
      ec_line(e, "float *p = z;");
      ec_line(e, "for (int i = 0; i < %d * %d; i++) pr[i] = 0.0f;", nl, nl);
      ec_line(e, "for (int i = 0, q = 0; i < %d; i++) {", nl);
      ec_line(e, "  for (int j = i + 1; j < %d; j++, q++) {", nl);
      /* 1 - logistic(s A + B), with ONNX Runtime's logistic form. */
      ec_line(e, "    const float t = s[q] * PROB_A[q] + PROB_B[q];");
      ec_line(e, "    const float l0 = 1.0f / (1.0f + expf(-fabsf(t)));");
      ec_line(e, "    float q1 = 1.0f - (t < 0.0f ? 1.0f - l0 : l0);");
      ec_line(e, "    if (q1 < 1e-7f) q1 = 1e-7f;");
      ec_line(e, "    if (q1 > 1.0f - 1e-7f) q1 = 1.0f - 1e-7f;");
      ec_line(e, "    pr[i * %d + j] = q1;", nl);
      ec_line(e, "    pr[j * %d + i] = 1.0f - q1;", nl);
      ec_line(e, "  }");
      ec_line(e, "}");
      emit_coupling(e, nl);
      ec_line(e, "}");
      ml_emit_post(e, post, "z", nl);
    } else if (nl > 2) {
      ec_line(e, "for (int p = 0; p < %d; p++) z[p] = s[p];", pairs);
      ml_emit_post(e, post, "z", pairs);
    } else if (post == 0) {
      ec_line(e, "z[0] = -s[0];");
      ec_line(e, "z[1] = s[0];");
    } else if (post == 2) { /* the logistic pair (ONNX Runtime 1.32, measured) */
      ec_line(e, "z[0] = 1.0f / (1.0f + expf(s[0]));");
      ec_line(e, "z[1] = 1.0f / (1.0f + expf(-s[0]));");
    } else {
      ec_line(e, "z[0] = 1.0f - s[0];");
      ec_line(e, "z[1] = s[0];");
    }
  }
  if (!scores)
    ec_line(e, "(void)z;");
  ec_line(e, "}");
  return true;
}
