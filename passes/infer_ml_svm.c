/* infer_ml_svm.c - inference for ai.onnx.ml SVMClassifier and SVMRegressor.
 *
 * Support-vector form (vectors_per_class / n_supports > 0): V support vectors
 * of F features, one-vs-one coefficients [(C - 1) x V] and one rho per class
 * pair; linear form (no support vectors): coefficients [C x F] and rho[0].
 * Every length is checked here against X's feature count, so the emitter
 * (codegen/emit_ml_svm.c) bakes its tables without checks.
 */
#include "passes.h"

#include <string.h>

static bool kernel_ok(Node *n, Diag *d) {
  const char *k = ir_attr_str(n, "kernel_type", "LINEAR");
  if (strcmp(k, "LINEAR") && strcmp(k, "POLY") && strcmp(k, "RBF") && strcmp(k, "SIGMOID"))
    return infer_fail(d, n, "kernel_type '%s' is not one of LINEAR, POLY, RBF, SIGMOID", k);
  int np = 0;
  ml_attr_floats(n, "kernel_params", &np);
  if (np != 0 && np != 3)
    return infer_fail(d, n, "attribute kernel_params has %d entries, expected 3 (gamma, coef0, degree)",
                      np);
  return true;
}

static bool x_ok(Node *n, Diag *d, int64_t *feats) {
  const Value *x = n->in[0];
  if (x->dt != DT_F32 && x->dt != DT_F64 && x->dt != DT_I32 && x->dt != DT_I64)
    return infer_fail(d, n, "input 0 has type %s, expected float, double, int32 or int64",
                      dtype_name(x->dt));
  if (x->shape.rank != 2 || x->shape.d[1] == DIM_UNKNOWN)
    return infer_fail(d, n, "input 0 must have rank 2 ([N, F]) with a known feature count");
  *feats = x->shape.d[1];
  return true;
}

/* Support vectors [v x feats] (v > 0), or none when v == 0. */
static bool vectors_ok(Node *n, Diag *d, int64_t v, int64_t feats) {
  int ns = 0;
  ml_attr_floats(n, "support_vectors", &ns);
  if (v > 0 && ns != v * feats)
    return infer_fail(d, n, "attribute support_vectors has %d entries, expected %lld (%lld vectors x "
                            "%lld features)", ns, (long long)(v * feats), (long long)v,
                      (long long)feats);
  return true;
}

bool infer_SVMClassifier(Node *n, Diag *d) {
  int64_t feats;
  int post, nl = 0, nvpc = 0, nc = 0, nr = 0, na = 0, nb = 0;
  if (!x_ok(n, d, &feats) || !kernel_ok(n, d) || !ml_post_transform(n, d, &post))
    return false;
  if (!ml_no_string_labels(n, d, "classlabels_ints"))
    return false;
  if (!ir_attr_ints(n, "classlabels_ints", &nl) || nl < 2)
    return infer_fail(d, n, "attribute classlabels_ints must hold at least 2 labels");
  const int64_t *vpc = ir_attr_ints(n, "vectors_per_class", &nvpc);
  ml_attr_floats(n, "coefficients", &nc);
  ml_attr_floats(n, "rho", &nr);
  ml_attr_floats(n, "prob_a", &na);
  ml_attr_floats(n, "prob_b", &nb);
  int64_t v = 0, pairs = (int64_t)nl * (nl - 1) / 2;
  for (int i = 0; i < nvpc; i++) {
    if (vpc[i] < 0)
      return infer_fail(d, n, "vectors_per_class[%d] is negative", i);
    v += vpc[i];
  }
  if (v > 0 && nvpc != nl)
    return infer_fail(d, n, "attribute vectors_per_class has %d entries, expected %d (one per class)",
                      nvpc, nl);
  if (!vectors_ok(n, d, v, feats))
    return false;
  int64_t want_c = v > 0 ? (nl - 1) * v : nl * feats, want_r = v > 0 ? pairs : 1;
  if (nc != want_c)
    return infer_fail(d, n, "attribute coefficients has %d entries, expected %lld", nc,
                      (long long)want_c);
  if (nr < want_r)
    return infer_fail(d, n, "attribute rho has %d entries, expected %lld", nr, (long long)want_r);
  if (na != nb || (na && na != pairs))
    return infer_fail(d, n, "attributes prob_a and prob_b have %d and %d entries, expected %lld each "
                            "(one per class pair) or none", na, nb, (long long)pairs);
  int64_t width = v > 0 && !na ? (nl > 2 ? pairs : 2) : nl;
  int64_t dims[2] = {n->in[0]->shape.d[0], width};
  Shape y = shape_make(1, dims), z = shape_make(2, dims);
  y.sym[0] = z.sym[0] = n->in[0]->shape.sym[0];
  infer_set(n, 0, DT_I64, &y);
  if (n->n_out > 1)
    infer_set(n, 1, DT_F32, &z);
  return true;
}

bool infer_SVMRegressor(Node *n, Diag *d) {
  int64_t feats;
  int post, nc = 0, nr = 0;
  if (!x_ok(n, d, &feats) || !kernel_ok(n, d) || !ml_post_transform(n, d, &post))
    return false;
  if (n->in[0]->dt != DT_F32)
    return infer_fail(d, n, "input 0 has type %s, expected float", dtype_name(n->in[0]->dt));
  int64_t v = ir_attr_int(n, "n_supports", 0);
  if (v < 0)
    return infer_fail(d, n, "attribute n_supports is negative");
  if (!vectors_ok(n, d, v, feats))
    return false;
  ml_attr_floats(n, "coefficients", &nc);
  ml_attr_floats(n, "rho", &nr);
  int64_t want = v > 0 ? v : feats;
  if (nc != want)
    return infer_fail(d, n, "attribute coefficients has %d entries, expected %lld", nc, (long long)want);
  if (nr < 1)
    return infer_fail(d, n, "attribute rho is required");
  int64_t dims[2] = {n->in[0]->shape.d[0], 1};
  Shape s = shape_make(2, dims);
  s.sym[0] = n->in[0]->shape.sym[0];
  infer_set(n, 0, DT_F32, &s);
  return true;
}
