/* emit_ml.c - C emission for ai.onnx.ml operators on numeric tensors:
 * Binarizer, ArrayFeatureExtractor, TreeEnsemble.
 *
 * TreeEnsemble bakes the ensemble into static const tables (interior nodes:
 * feature, split, mode, NaN direction, both successors with leaves encoded as
 * -(leaf + 1); leaves: weight and target) and walks each tree per row; the
 * inference hook proved every walk finite and every index in range.
 *
 * post_transform follows the ONNX spec's numbering (1 SOFTMAX, 2 LOGISTIC,
 * 3 SOFTMAX_ZERO). ONNX Runtime 1.32 swaps 1 and 2 for this operator
 * (checked with random ensembles: its "1" is the logistic function); the
 * backend tests use 0, where both agree.
 */
#include "codegen.h"
#include "emit_ml.h"

#include <math.h>
#include <string.h>

bool emitc_Binarizer(EmitC *e, const Node *n) {
  DType t = n->in[0]->dt;
  char lit[64];
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++)", (long long)ec_numel(n->out[0]));
  ec_line(e, "  Y0[i] = X0[i] > %s ? (%s)1 : (%s)0;",
          ec_literal(t, ir_attr_float(n, "threshold", 0.0f), lit, sizeof lit), dtype_ctype(t),
          dtype_ctype(t));
  return true;
}

bool emitc_ArrayFeatureExtractor(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  int64_t last = xs->d[xs->rank - 1], outer = 1, k = ec_numel(n->in[1]);
  for (int i = 0; i + 1 < xs->rank; i++)
    outer *= xs->d[i];
  if (outer * k == 0)
    return true;
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++)", (long long)k);
  ec_line(e, "  if (X1[j] < 0 || X1[j] >= %lld) return ONNXC_ERR_BAD_INDEX;", (long long)last);
  ec_line(e, "for (ptrdiff_t o = 0; o < %lld; o++)", (long long)outer);
  ec_line(e, "  for (ptrdiff_t j = 0; j < %lld; j++)", (long long)k);
  ec_line(e, "    Y0[o * %lld + j] = X0[o * %lld + X1[j]];", (long long)k, (long long)last);
  return true;
}

void ml_table_begin(MlTable *t, const char *ctype, const char *name, int count) {
  buf_init(&t->b);
  t->count = 0;
  buf_printf(&t->b, "static const %s %s[%d] = {", ctype, name, count > 0 ? count : 1);
}

void ml_table_add(MlTable *t, const char *item) {
  buf_printf(&t->b, "%s%s", t->count++ ? ", " : "", item);
}

void ml_table_end(EmitC *e, MlTable *t) {
  if (t->count == 0)
    buf_puts(&t->b, "0");
  buf_puts(&t->b, "};");
  ec_line(e, "%s", t->b.s);
  buf_free(&t->b);
}

bool emitc_TreeEnsemble(EmitC *e, const Node *n) {
  DType t = n->in[0]->dt;
  const char *ct = dtype_ctype(t), *sfx = t == DT_F32 ? "f" : "";
  int nn = 0, nl = 0, nr = 0, nmiss = 0;
  const int64_t *feat = ir_attr_ints(n, "nodes_featureids", &nn);
  const int64_t *tn = ir_attr_ints(n, "nodes_truenodeids", &nn);
  const int64_t *fn = ir_attr_ints(n, "nodes_falsenodeids", &nn);
  const int64_t *tl = ir_attr_ints(n, "nodes_trueleafs", &nn);
  const int64_t *fl = ir_attr_ints(n, "nodes_falseleafs", &nn);
  const int64_t *miss = ir_attr_ints(n, "nodes_missing_value_tracks_true", &nmiss);
  const int64_t *targets = ir_attr_ints(n, "leaf_targetids", &nl);
  const int64_t *roots = ir_attr_ints(n, "tree_roots", &nr);
  const Tensor *modes = ir_attr(n, "nodes_modes")->u.t;
  const Tensor *splits = ir_attr(n, "nodes_splits")->u.t;
  const Tensor *weights = ir_attr(n, "leaf_weights")->u.t;
  const Attr *mva = ir_attr(n, "membership_values");
  const Tensor *mv = mva ? mva->u.t : NULL;
  int64_t n_targets = ir_attr_int(n, "n_targets", 1);
  int64_t agg = ir_attr_int(n, "aggregate_function", 1), post = ir_attr_int(n, "post_transform", 0);
  int64_t rows = n->in[0]->shape.d[0], feats = n->in[0]->shape.d[1];
  char lit[64], item[96];

  ec_line(e, "/* %d trees, %d interior nodes, %d leaves */", nr, nn, nl);
  MlTable tb;
  ml_table_begin(&tb, "int32_t", "FEAT", nn);
  for (int i = 0; i < nn; i++) {
    snprintf(item, sizeof item, "%lld", (long long)feat[i]);
    ml_table_add(&tb, item);
  }
  ml_table_end(e, &tb);
  ml_table_begin(&tb, ct, "SPLIT", nn);
  for (int i = 0; i < nn; i++)
    ml_table_add(&tb, ec_literal(t, tensor_get_f64(splits, i), lit, sizeof lit));
  ml_table_end(e, &tb);
  ml_table_begin(&tb, "uint8_t", "MODE", nn);
  for (int i = 0; i < nn; i++) {
    snprintf(item, sizeof item, "%lld", (long long)tensor_get_i64(modes, i));
    ml_table_add(&tb, item);
  }
  ml_table_end(e, &tb);
  ml_table_begin(&tb, "uint8_t", "NAN_TRUE", nn);
  for (int i = 0; i < nn; i++)
    ml_table_add(&tb, nmiss && miss[i] ? "1" : "0");
  ml_table_end(e, &tb);
  const char *names[2] = {"NEXT_T", "NEXT_F"};
  for (int b = 0; b < 2; b++) {
    ml_table_begin(&tb, "int32_t", names[b], nn);
    for (int i = 0; i < nn; i++) {
      int64_t to = b ? fn[i] : tn[i];
      bool leaf = b ? fl[i] : tl[i];
      snprintf(item, sizeof item, "%lld", (long long)(leaf ? -(to + 1) : to));
      ml_table_add(&tb, item);
    }
    ml_table_end(e, &tb);
  }
  ml_table_begin(&tb, ct, "LEAF_W", nl);
  for (int i = 0; i < nl; i++)
    ml_table_add(&tb, ec_literal(t, tensor_get_f64(weights, i), lit, sizeof lit));
  ml_table_end(e, &tb);
  ml_table_begin(&tb, "int32_t", "LEAF_T", nl);
  for (int i = 0; i < nl; i++) {
    snprintf(item, sizeof item, "%lld", (long long)targets[i]);
    ml_table_add(&tb, item);
  }
  ml_table_end(e, &tb);
  /* Roots: a degenerate tree (both successors the same leaf) is that leaf. */
  ml_table_begin(&tb, "int32_t", "ROOT", nr);
  for (int r = 0; r < nr; r++) {
    int64_t i = roots[r];
    bool lone = tl[i] && fl[i] && tn[i] == fn[i];
    snprintf(item, sizeof item, "%lld", (long long)(lone ? -(tn[i] + 1) : i));
    ml_table_add(&tb, item);
  }
  ml_table_end(e, &tb);

  /* Membership sets, in the order of the BRANCH_MEMBER nodes. */
  bool any_member = false;
  for (int i = 0; i < nn; i++)
    any_member = any_member || tensor_get_i64(modes, i) == 6;
  if (any_member) {
    MlTable off, cnt, val;
    ml_table_begin(&off, "int32_t", "SET_AT", nn);
    ml_table_begin(&cnt, "int32_t", "SET_N", nn);
    int64_t pos = 0, stored = 0;
    int64_t nv = mv->numel;
    ml_table_begin(&val, ct, "SET_V", (int)nv);
    for (int i = 0; i < nn; i++) {
      int64_t start = stored, count = 0;
      if (tensor_get_i64(modes, i) == 6) {
        while (pos < nv && !isnan(tensor_get_f64(mv, pos))) {
          ml_table_add(&val, ec_literal(t, tensor_get_f64(mv, pos), lit, sizeof lit));
          pos++;
          stored++;
          count++;
        }
        pos++;   /* the NaN delimiter */
      }
      snprintf(item, sizeof item, "%lld", (long long)start);
      ml_table_add(&off, item);
      snprintf(item, sizeof item, "%lld", (long long)count);
      ml_table_add(&cnt, item);
    }
    ml_table_end(e, &off);
    ml_table_end(e, &cnt);
    ml_table_end(e, &val);
  }

  const char *big = t == DT_F32 ? "3.40282347e+38f" : "1.7976931348623157e+308";
  ec_line(e, "for (ptrdiff_t r = 0; r < %lld; r++) {", (long long)rows);
  ec_line(e, "const %s *x = X0 + r * %lld;", ct, (long long)feats);
  ec_line(e, "%s *y = Y0 + r * %lld;", ct, (long long)n_targets);
  ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) y[k] = %s%s;", (long long)n_targets,
          agg == 2 ? "" : agg == 3 ? "-" : "", agg >= 2 ? big : (t == DT_F32 ? "0.0f" : "0.0"));
  ec_line(e, "for (ptrdiff_t tr = 0; tr < %d; tr++) {", nr);
  ec_line(e, "int32_t i = ROOT[tr];");
  ec_line(e, "while (i >= 0) {");
  ec_line(e, "const %s v = x[FEAT[i]], s = SPLIT[i];", ct);
  ec_line(e, "int go;");
  ec_line(e, "switch (MODE[i]) {");
  ec_line(e, "case 0: go = v <= s; break;");
  ec_line(e, "case 1: go = v < s; break;");
  ec_line(e, "case 2: go = v >= s; break;");
  ec_line(e, "case 3: go = v > s; break;");
  ec_line(e, "case 4: go = v == s; break;");
  ec_line(e, "case 5: go = v != s; break;");
  if (any_member) {
    ec_line(e, "default: go = 0;");
    ec_line(e, "  for (int32_t m = 0; m < SET_N[i]; m++) go |= v == SET_V[SET_AT[i] + m];");
    ec_line(e, "  break;");
  } else {
    ec_line(e, "default: go = 0; break;");
  }
  ec_line(e, "}");
  ec_line(e, "if (v != v && NAN_TRUE[i]) go = 1;");
  ec_line(e, "i = go ? NEXT_T[i] : NEXT_F[i];");
  ec_line(e, "}");
  ec_line(e, "{");
  ec_line(e, "const int32_t leaf = -i - 1;");
  ec_line(e, "%s *acc = &y[LEAF_T[leaf]];", ct);
  switch (agg) {
  case 0: ec_line(e, "*acc += LEAF_W[leaf] / (%s)%d;", ct, nr); break;
  case 1: ec_line(e, "*acc += LEAF_W[leaf];"); break;
  case 2: ec_line(e, "if (LEAF_W[leaf] < *acc) *acc = LEAF_W[leaf];"); break;
  default: ec_line(e, "if (LEAF_W[leaf] > *acc) *acc = LEAF_W[leaf];"); break;
  }
  ec_line(e, "}");
  ec_line(e, "}");
  if (agg >= 2) /* a target no leaf reached scores 0 (as ONNX Runtime does) */
    ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) if (y[k] == %s%s) y[k] = 0;",
            (long long)n_targets, agg == 3 ? "-" : "", big);
  if (post == 2) {
    ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) y[k] = 1 / (1 + exp%s(-y[k]));",
            (long long)n_targets, sfx);
  } else if (post == 1 || post == 3) {
    /* SOFTMAX_ZERO leaves zero scores at zero and ignores them. */
    bool z = post == 3;
    ec_line(e, "{");
    ec_line(e, "%s mx = -%s, sum = 0;", ct, big);
    ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) if (%sy[k] > mx) mx = y[k];",
            (long long)n_targets, z ? "y[k] != 0 && " : "");
    ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) {", (long long)n_targets);
    ec_line(e, "  y[k] = %sexp%s(y[k] - mx);", z ? "y[k] == 0 ? 0 : " : "", sfx);
    ec_line(e, "  sum += y[k];");
    ec_line(e, "}");
    ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) y[k] /= sum;", (long long)n_targets);
    ec_line(e, "}");
  }
  ec_line(e, "}");
  return true;
}
