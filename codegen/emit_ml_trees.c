/* emit_ml_trees.c - C emission for the legacy ai.onnx.ml tree ensembles,
 * TreeEnsembleClassifier and TreeEnsembleRegressor.
 *
 * passes/infer_ml_trees.c resolved the (tree id, node id) names into node
 * indices (_te_* attributes); this bakes them into static tables and walks
 * each tree per row. Thresholds are float, as the attribute is; a float
 * feature is compared in float (double input: in double), as ONNX Runtime
 * does. Scores accumulate in float with a has-score flag per target, and are
 * finalized as ONNX Runtime 1.32 does (its tree_ensemble_aggregator.h, and
 * where 1.32 departs from that source, what it measurably does; checked by
 * tests/models/ml_tree_forms.py): a single target counts every tree (a leaf
 * without weights as 0), always adds its base value and ignores
 * post_transform; of several targets, one no leaf weighed is 0. The
 * classifier's binary forms (one weight column, at most one base value)
 * decide the label on 0.5 or 0 and expand one score to two ([1 - s, s],
 * [-s, s] or the logistic pair).
 */
#include "codegen.h"
#include "emit_ml.h"

#include <string.h>

static void int_table(EmitC *e, const char *ctype, const char *name, const int64_t *v, int count) {
  MlTable tb;
  char item[32];
  ml_table_begin(&tb, ctype, name, count);
  for (int i = 0; i < count; i++) {
    snprintf(item, sizeof item, "%lld", (long long)v[i]);
    ml_table_add(&tb, item);
  }
  ml_table_end(e, &tb);
}

/* The tables and the walk accumulating into float s[k], unsigned char h[k]
 * (agg 0 SUM, 1 MIN, 2 MAX; AVERAGE sums); opens the row loop over r. */
static void walk_rows(EmitC *e, const Node *n, bool classifier, int64_t k, int agg) {
  const char *pre = classifier ? "class_" : "target_";
  char name[32], lit[64];
  int nn = 0, nw = 0, nr = 0, nmiss = 0, c = 0;
  const int64_t *feat = ir_attr_ints(n, "nodes_featureids", &c);
  const int64_t *mode = ir_attr_ints(n, "_te_mode", &nn);
  const int64_t *t = ir_attr_ints(n, "_te_true", &c), *f = ir_attr_ints(n, "_te_false", &c);
  const int64_t *w_at = ir_attr_ints(n, "_te_w_at", &c), *w_n = ir_attr_ints(n, "_te_w_n", &c);
  const int64_t *w = ir_attr_ints(n, "_te_w", &nw), *roots = ir_attr_ints(n, "_te_roots", &nr);
  const int64_t *miss = ir_attr_ints(n, "nodes_missing_value_tracks_true", &nmiss);
  const float *vals = ml_floats(n, "nodes_values", &c);
  snprintf(name, sizeof name, "%sids", pre);
  const int64_t *wk = ir_attr_ints(n, name, &c);
  snprintf(name, sizeof name, "%sweights", pre);
  const float *wv = ml_floats(n, name, &c);
  int64_t rows = n->in[0]->shape.d[0], feats = n->in[0]->shape.d[1];
  const char *ct = n->in[0]->dt == DT_F64 ? "double" : "float";

  ec_line(e, "/* %d trees, %d nodes, %d leaf weights */", nr, nn, nw);
  MlTable tb;
  ml_table_begin(&tb, "int32_t", "FEAT", nn);
  for (int i = 0; i < nn; i++) {
    snprintf(lit, sizeof lit, "%lld", (long long)(mode[i] == 6 ? 0 : feat[i]));
    ml_table_add(&tb, lit);
  }
  ml_table_end(e, &tb);
  ml_table_begin(&tb, "float", "SPLIT", nn);
  for (int i = 0; i < nn; i++)
    ml_table_add(&tb, ec_literal(DT_F32, vals[i], lit, sizeof lit));
  ml_table_end(e, &tb);
  int_table(e, "uint8_t", "MODE", mode, nn);
  ml_table_begin(&tb, "uint8_t", "NAN_TRUE", nn);
  for (int i = 0; i < nn; i++)
    ml_table_add(&tb, nmiss && miss[i] ? "1" : "0");
  ml_table_end(e, &tb);
  int_table(e, "int32_t", "NEXT_T", t, nn);
  int_table(e, "int32_t", "NEXT_F", f, nn);
  int_table(e, "int32_t", "W_AT", w_at, nn);
  int_table(e, "int32_t", "W_N", w_n, nn);
  ml_table_begin(&tb, "int32_t", "W_K", nw);
  for (int j = 0; j < nw; j++) {
    snprintf(lit, sizeof lit, "%lld", (long long)wk[w[j]]);
    ml_table_add(&tb, lit);
  }
  ml_table_end(e, &tb);
  ml_table_begin(&tb, "float", "W_V", nw);
  for (int j = 0; j < nw; j++)
    ml_table_add(&tb, ec_literal(DT_F32, wv[w[j]], lit, sizeof lit));
  ml_table_end(e, &tb);
  int_table(e, "int32_t", "ROOT", roots, nr);

  ec_line(e, "for (ptrdiff_t r = 0; r < %lld; r++) {", (long long)rows);
  ec_line(e, "const %s *x = X0 + r * %lld;", dtype_ctype(n->in[0]->dt), (long long)feats);
  ec_line(e, "float s[%lld];", (long long)k);
  ec_line(e, "unsigned char h[%lld];", (long long)k);
  ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) s[k] = 0.0f, h[k] = 0;", (long long)k);
  ec_line(e, "for (ptrdiff_t tr = 0; tr < %d; tr++) {", nr);
  ec_line(e, "int32_t i = ROOT[tr];");
  ec_line(e, "while (MODE[i] != 6) {");
  ec_line(e, "const %s v = (%s)x[FEAT[i]], th = (%s)SPLIT[i];", ct, ct, ct);
  ec_line(e, "int go;");
  ec_line(e, "switch (MODE[i]) {");
  ec_line(e, "case 0: go = v <= th; break;");
  ec_line(e, "case 1: go = v < th; break;");
  ec_line(e, "case 2: go = v >= th; break;");
  ec_line(e, "case 3: go = v > th; break;");
  ec_line(e, "case 4: go = v == th; break;");
  ec_line(e, "default: go = v != th; break;");
  ec_line(e, "}");
  ec_line(e, "if (v != v && NAN_TRUE[i]) go = 1;");
  ec_line(e, "i = go ? NEXT_T[i] : NEXT_F[i];");
  ec_line(e, "}");
  if (!classifier && k == 1) {
    /* One target: every tree counts, a leaf without weights as 0. */
    ec_line(e, "{");
    ec_line(e, "float lv = 0.0f;");
    ec_line(e, "(void)W_K;");
    ec_line(e, "for (int32_t m = W_AT[i]; m < W_AT[i] + W_N[i]; m++) lv += W_V[m];");
    if (agg == 0)
      ec_line(e, "s[0] += lv;");
    else
      ec_line(e, "if (!h[0] || lv %s s[0]) s[0] = lv;", agg == 1 ? "<" : ">");
    ec_line(e, "h[0] = 1;");
    ec_line(e, "}");
  } else {
    ec_line(e, "for (int32_t m = W_AT[i]; m < W_AT[i] + W_N[i]; m++) {");
    ec_line(e, "const int32_t k = W_K[m];");
    if (agg == 0)
      ec_line(e, "s[k] += W_V[m];");
    else
      ec_line(e, "if (!h[k] || W_V[m] %s s[k]) s[k] = W_V[m];", agg == 1 ? "<" : ">");
    ec_line(e, "h[k] = 1;");
    ec_line(e, "}");
  }
  ec_line(e, "}");
}

bool emitc_TreeEnsembleRegressor(EmitC *e, const Node *n) {
  int64_t k = ir_attr_int(n, "n_targets", 1);
  const char *agg = ir_attr_str(n, "aggregate_function", "SUM");
  bool avg = strcmp(agg, "AVERAGE") == 0, mn = strcmp(agg, "MIN") == 0;
  bool mm = mn || strcmp(agg, "MAX") == 0;
  int nb = 0, nr = 0;
  const float *base = ml_floats(n, "base_values", &nb);
  ir_attr_ints(n, "_te_roots", &nr);
  char lit[64];
  MlTable tb;
  /* One target: base_values[0] when it is the only one (ONNX Runtime's
   * "origin"); several: base_values when there is one per target. */
  bool use = nb == k;
  ml_table_begin(&tb, "float", "BASE", (int)k);
  for (int64_t j = 0; j < k; j++)
    ml_table_add(&tb, ec_literal(DT_F32, use || (k == 1 && nb == 1) ? base[j] : 0.0, lit, sizeof lit));
  ml_table_end(e, &tb);
  walk_rows(e, n, false, k, mm ? (mn ? 1 : 2) : 0);
  ec_line(e, "float *y = Y0 + r * %lld;", (long long)k);
  if (k == 1)
    ec_line(e, "(void)h;");
  /* ONNX Runtime 1.32 (measured): one target gets its base value always;
   * of several, a target no leaf weighed is 0, base value or not. */
  char term[64];
  if (avg)
    snprintf(term, sizeof term, "s[k] / (float)%d", nr);
  else
    snprintf(term, sizeof term, "s[k]");
  ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++)", (long long)k);
  ec_line(e, "  y[k] = %s(%s) + BASE[k]%s;", k > 1 ? "h[k] ? " : "", term, k > 1 ? " : 0.0f" : "");
  if (k > 1)
    ml_emit_post(e, ml_post_code(n), "y", k);
  ec_line(e, "}");
  return true;
}

bool emitc_TreeEnsembleClassifier(EmitC *e, const Node *n) {
  int nl = 0, nb = 0, nw = 0;
  const int64_t *labels = ir_attr_ints(n, "classlabels_int64s", &nl);
  const float *base = ml_floats(n, "base_values", &nb);
  const int64_t *ids = ir_attr_ints(n, "class_ids", &nw);
  const float *wv = ml_floats(n, "class_weights", &nw);
  int post = ml_post_code(n);
  bool scores = ec_has_output(n, 1);
  char lit[64];
  /* ONNX Runtime's binary case: two labels, weights for one class only. */
  bool one_class = nw > 0, all_pos = true;
  for (int j = 0; j < nw; j++) {
    one_class = one_class && ids[j] == ids[0];
    all_pos = all_pos && wv[j] >= 0;
  }
  bool binary_case = nl == 2 && one_class;
  int_table(e, "int64_t", "LABEL", labels, nl);
  walk_rows(e, n, true, nl, 0);
  if (scores)
    ec_line(e, "float *z = Y1 + r * %d;", nl);
  else
    ec_line(e, "float z[%d];", nl);
  if (nl > 2) {
    for (int j = 0; j < nb; j++)
      ec_line(e, "s[%d] = h[%d] ? s[%d] + %s : %s, h[%d] = 1;", j, j, j,
              ec_literal(DT_F32, base[j], lit, sizeof lit), lit, j);
    ec_line(e, "{");
    ec_line(e, "ptrdiff_t best = -1;");
    ec_line(e, "for (ptrdiff_t k = 0; k < %d; k++) if (h[k] && (best < 0 || s[k] > s[best])) best = k;",
            nl);
    ec_line(e, "Y0[r] = LABEL[best < 0 ? 0 : best];");
    ec_line(e, "}");
    ec_line(e, "for (ptrdiff_t k = 0; k < %d; k++) z[k] = s[k];", nl);
    ml_emit_post(e, post, "z", nl);
  } else {
    /* size: how many scores ONNX Runtime keeps (1 expands to 2 below); wa its
     * add_second_class. */
    char b0[64], b1[64];
    ec_literal(DT_F32, nb >= 1 ? base[0] : 0.0, b0, sizeof b0);
    ec_literal(DT_F32, nb >= 2 ? base[1] : 0.0, b1, sizeof b1);
    ec_line(e, "int size = 2, wa = %d;", nb == 0 ? 3 : -1);
    ec_line(e, "float pos;");
    if (nb == 2) {
      ec_line(e, "if (h[1]) { s[1] = %s + s[0]; s[0] = -s[1]; }", b1);
      ec_line(e, "else { s[1] += %s; s[0] += %s; }", b1, b0);
    } else if (nb == 1) {
      ec_line(e, "s[0] += %s;", b0);
      ec_line(e, "if (!h[1]) size = 1;");
    } else {
      ec_line(e, "if (!h[1]) size = 1;");
    }
    ec_line(e, "pos = size == 2 && h[1] ? s[1] : h[0] ? s[0] : 0.0f;");
    if (binary_case) {
      if (all_pos)
        ec_line(e, "if (pos > 0.5f) { Y0[r] = LABEL[1]; wa = 0; } else { Y0[r] = LABEL[0]; wa = 1; }");
      else
        ec_line(e, "if (pos > 0.0f) { Y0[r] = LABEL[1]; wa = 2; } else { Y0[r] = LABEL[0]; wa = 3; }");
    } else {
      ec_line(e, "Y0[r] = pos > 0.0f ? 1 : 0;");
      ec_line(e, "(void)LABEL;");
    }
    ec_line(e, "if (size == 2) {");
    ec_line(e, "z[0] = s[0];");
    ec_line(e, "z[1] = s[1];");
    ml_emit_post(e, post, "z", 2);
    /* With LOGISTIC, ONNX Runtime 1.32 writes the logistic pair for all-positive
     * weights too (measured), though it labels on 0.5. */
    ec_line(e, "} else if ((wa == 0 || wa == 1) && %d) {", post != 2);
    ec_line(e, "z[0] = 1.0f - s[0];");
    ec_line(e, "z[1] = s[0];");
    ec_line(e, "} else if (wa >= 0) {");
    if (post == 2) {
      ec_line(e, "z[0] = 1.0f / (1.0f + expf(s[0]));");
      ec_line(e, "z[1] = 1.0f / (1.0f + expf(-s[0]));");
    } else {
      ec_line(e, "z[0] = -s[0];");
      ec_line(e, "z[1] = s[0];");
    }
    ec_line(e, "} else {");
    ec_line(e, "z[0] = s[0];");
    ec_line(e, "z[1] = 0.0f;");
    ec_line(e, "}");
  }
  if (!scores)
    ec_line(e, "(void)z;");
  ec_line(e, "}");
  return true;
}
