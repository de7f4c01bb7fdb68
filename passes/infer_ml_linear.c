/* infer_ml_linear.c - inference for the ai.onnx.ml linear models and
 * preprocessors: LinearClassifier, LinearRegressor, Scaler, Normalizer.
 *
 * X is [N, C] (or [C], one row). Every attribute length is checked against C
 * and the target count here, so the emitters bake tables without checks.
 * post_transform strings are read by ml_post_transform (shared with the
 * legacy tree ensembles, infer_ml_trees.c); PROBIT is refused: its inverse
 * error function has no C99 counterpart to match ONNX Runtime's with.
 */
#include "passes.h"

#include <string.h>

const float *ml_attr_floats(const Node *n, const char *name, int *count) {
  const Attr *a = ir_attr(n, name);
  if (!a || a->kind != AT_FLOATS) {
    *count = 0;
    return NULL;
  }
  *count = a->n;
  return a->u.fs;
}

bool ml_no_string_labels(Node *n, Diag *d, const char *ints_attr) {
  if (!ir_attr(n, "classlabels_strings"))
    return true;
  return infer_fail(d, n, "string class labels (classlabels_strings) are not supported: onnxc outputs "
                    "numeric tensors only; train on integer labels (e.g. LabelEncoder in scikit-learn) to get %s",
                    ints_attr);
}

bool ml_post_transform(Node *n, Diag *d, int *code) {
  static const char *const names[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
  const char *s = ir_attr_str(n, "post_transform", "NONE");
  for (int i = 0; i < 5; i++)
    if (strcmp(s, names[i]) == 0) {
      if (i == 4)
        return infer_fail(d, n, "post_transform PROBIT is not supported");
      *code = i;
      return true;
    }
  return infer_fail(d, n, "post_transform '%s' is not one of NONE, SOFTMAX, LOGISTIC, "
                          "SOFTMAX_ZERO, PROBIT", s);
}

/* X of a numeric type and rank 1 or 2 with a known feature count: *rows
 * (DIM_UNKNOWN allowed, its symbol in *sym) and *cols. */
static bool rows_cols(Node *n, Diag *d, int64_t *rows, const char **sym, int64_t *cols) {
  const Value *x = n->in[0];
  DType t = x->dt;
  if (t != DT_F32 && t != DT_F64 && t != DT_I32 && t != DT_I64)
    return infer_fail(d, n, "input 0 has type %s, expected float, double, int32 or int64",
                      dtype_name(t));
  if (x->shape.rank < 0)
    return infer_fail(d, n, "input 0 needs a known rank (1 or 2)");
  if (x->shape.rank != 1 && x->shape.rank != 2)
    return infer_fail(d, n, "input 0 has rank %d, expected 1 ([C]) or 2 ([N, C])",
                      x->shape.rank);
  *cols = x->shape.d[x->shape.rank - 1];
  *rows = x->shape.rank == 2 ? x->shape.d[0] : 1;
  *sym = x->shape.rank == 2 ? x->shape.sym[0] : NULL;
  if (*cols == DIM_UNKNOWN)
    return infer_fail(d, n, "input 0 needs a known feature count (its last dim)");
  return true;
}

static Shape rows_by(int64_t rows, const char *sym, int64_t k) {
  int64_t dims[2] = {rows, k};
  Shape s = shape_make(k < 0 ? 1 : 2, dims);
  s.sym[0] = sym;
  return s;
}

/* coefficients [E * C] and optional intercepts [E]: E in *targets (want > 0:
 * E must equal want). */
static bool weights(Node *n, Diag *d, int64_t cols, int64_t want, int64_t *targets) {
  int nc = 0, ni = 0;
  ml_attr_floats(n, "coefficients", &nc);
  const float *icp = ml_attr_floats(n, "intercepts", &ni);
  if (nc == 0)
    return infer_fail(d, n, "attribute coefficients is required");
  int64_t e = want > 0 ? want : icp ? ni : (cols ? nc / cols : 0);
  if (e < 1 || (int64_t)nc != e * cols)
    return infer_fail(d, n, "attribute coefficients has %d entries, expected %lld "
                            "(%lld targets x %lld features)",
                      nc, (long long)(e * cols), (long long)e, (long long)cols);
  if (icp && ni != e)
    return infer_fail(d, n, "attribute intercepts has %d entries, expected %lld (one per target)",
                      ni, (long long)e);
  *targets = e;
  return true;
}

bool infer_LinearClassifier(Node *n, Diag *d) {
  int64_t rows, cols, e;
  const char *sym;
  int post, nl = 0;
  if (!rows_cols(n, d, &rows, &sym, &cols) || !ml_post_transform(n, d, &post))
    return false;
  if (!ml_no_string_labels(n, d, "classlabels_ints"))
    return false;
  if (!ir_attr_ints(n, "classlabels_ints", &nl))
    return infer_fail(d, n, "attribute classlabels_ints is required");
  if (!weights(n, d, cols, 0, &e))
    return false;
  bool binary = e == 1 && nl == 2;
  if (!binary && nl != e)
    return infer_fail(d, n, "classlabels_ints has %d entries, expected %lld (one per class)%s", nl,
                      (long long)e, e == 1 ? " or 2 (binary)" : "");
  Shape y = rows_by(rows, sym, -1), z = rows_by(rows, sym, binary ? 2 : e);
  infer_set(n, 0, DT_I64, &y);
  if (n->n_out > 1)
    infer_set(n, 1, DT_F32, &z);
  return true;
}

bool infer_LinearRegressor(Node *n, Diag *d) {
  int64_t rows, cols, e;
  const char *sym;
  int post;
  if (!rows_cols(n, d, &rows, &sym, &cols) || !ml_post_transform(n, d, &post))
    return false;
  int64_t targets = ir_attr_int(n, "targets", 1);
  if (targets < 1)
    return infer_fail(d, n, "attribute targets is %lld, expected >= 1", (long long)targets);
  if (!weights(n, d, cols, targets, &e))
    return false;
  Shape y = rows_by(rows, sym, e);
  infer_set(n, 0, DT_F32, &y);
  return true;
}

bool infer_Scaler(Node *n, Diag *d) {
  int64_t rows, cols;
  const char *sym;
  if (!rows_cols(n, d, &rows, &sym, &cols))
    return false;
  const char *names[2] = {"offset", "scale"};
  for (int k = 0; k < 2; k++) {
    int c = 0;
    if (ml_attr_floats(n, names[k], &c) && c != 1 && c != cols)
      return infer_fail(d, n, "attribute %s has %d entries, expected 1 or %lld (one per feature)",
                        names[k], c, (long long)cols);
  }
  infer_set(n, 0, DT_F32, &n->in[0]->shape);
  return true;
}

bool infer_Normalizer(Node *n, Diag *d) {
  int64_t rows, cols;
  const char *sym;
  if (!rows_cols(n, d, &rows, &sym, &cols))
    return false;
  const char *norm = ir_attr_str(n, "norm", "MAX");
  if (strcmp(norm, "MAX") && strcmp(norm, "L1") && strcmp(norm, "L2"))
    return infer_fail(d, n, "norm '%s' is not one of MAX, L1, L2", norm);
  infer_set(n, 0, DT_F32, &n->in[0]->shape);
  return true;
}
