/* infer_ml_trees.c - inference for the legacy ai.onnx.ml tree ensembles
 * (TreeEnsembleClassifier, TreeEnsembleRegressor; ML opsets 1 and 3).
 *
 * The ONNX form names nodes by (tree id, node id) pairs and attaches leaf
 * weights by the same pairs. This hook checks every attribute and resolves
 * the names once, into node indices it stores on the node as internal INTS
 * attributes the emitter (codegen/emit_ml_trees.c) reads:
 *   _te_mode   per node: 0..5 BRANCH_LEQ, LT, GTE, GT, EQ, NEQ; 6 LEAF
 *   _te_true, _te_false   per node: successor node indices
 *   _te_w_at, _te_w_n     per node: its run in _te_w (leaves only)
 *   _te_w      weight entries grouped by leaf (indices into the weight lists)
 *   _te_roots  the first node of each tree, trees in order of appearance
 * Every walk from a root is proved finite and every index in range. The
 * *_as_tensor (double) attribute forms are refused.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct Key {
  int64_t tree, node;
  int at;
} Key;

static int key_cmp(const void *a, const void *b) {
  const Key *x = a, *y = b;
  if (x->tree != y->tree)
    return x->tree < y->tree ? -1 : 1;
  return x->node < y->node ? -1 : x->node > y->node;
}

/* Index of node (tree, node) in the sorted keys, or -1. */
static int find(const Key *keys, int n, int64_t tree, int64_t node) {
  Key k = {tree, node, 0};
  const Key *hit = bsearch(&k, keys, (size_t)n, sizeof k, key_cmp);
  return hit ? hit->at : -1;
}

static const int64_t *ints_n(Node *n, Diag *d, const char *name, int want, bool *ok) {
  int c = 0;
  const int64_t *v = ir_attr_ints(n, name, &c);
  if (!*ok)
    return NULL;
  if (!v || c != want) {
    *ok = false;
    if (!v && want == 0)
      return NULL;
    (void)infer_fail(d, n, v ? "attribute %s has %d entries, expected %d" : "attribute %s is required",
                     name, c, want);
  }
  return v;
}

static bool refuse_tensor_forms(Node *n, Diag *d, const char *prefix) {
  const char *names[] = {"nodes_values_as_tensor", "base_values_as_tensor", "nodes_hitrates_as_tensor",
                         NULL};
  char w[64];
  snprintf(w, sizeof w, "%sweights_as_tensor", prefix);
  names[2] = w;
  for (int i = 0; i < 3; i++)
    if (ir_attr(n, names[i]))
      return infer_fail(d, n, "attribute %s (double thresholds or weights) is not supported", names[i]);
  return true;
}

static bool mode_code(Node *n, Diag *d, const char *s, int i, int64_t *code) {
  static const char *const names[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT",
                                      "BRANCH_EQ",  "BRANCH_NEQ", "LEAF"};
  for (int k = 0; k < 7; k++)
    if (strcmp(s, names[k]) == 0) {
      *code = k;
      return true;
    }
  return infer_fail(d, n, "nodes_modes[%d] is '%s', not one of BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, "
                          "BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, LEAF", i, s);
}

/* Depth-bounded walk: a cycle cannot pass as a tree. */
static bool walk(Node *n, Diag *d, int i, int depth, int nn, const int64_t *mode,
                 const int64_t *t, const int64_t *f) {
  if (depth > nn)
    return infer_fail(d, n, "the trees have a cycle through node index %d", i);
  if (mode[i] == 6)
    return true;
  return walk(n, d, (int)t[i], depth + 1, nn, mode, t, f) &&
         walk(n, d, (int)f[i], depth + 1, nn, mode, t, f);
}

/* Checks and resolves the ensemble; *k_out is the target/class count the
 * weights index (n_targets or the label count). */
static bool resolve(Node *n, Diag *d, bool classifier, int64_t k_out) {
  const char *pre = classifier ? "class_" : "target_";
  char name[4][32];
  if (!refuse_tensor_forms(n, d, pre))
    return false;
  const Value *x = n->in[0];
  if (x->dt != DT_F32 && x->dt != DT_F64 && x->dt != DT_I32 && x->dt != DT_I64)
    return infer_fail(d, n, "input 0 has type %s, expected float, double, int32 or int64",
                      dtype_name(x->dt));
  if (x->shape.rank != 2 || x->shape.d[1] == DIM_UNKNOWN)
    return infer_fail(d, n, "input 0 must have rank 2 ([N, F]) with a known feature count");
  int nn = 0, nw = 0, nv = 0;
  const int64_t *trees = ir_attr_ints(n, "nodes_treeids", &nn);
  if (!trees || nn == 0)
    return infer_fail(d, n, "attribute nodes_treeids is required");
  bool ok = true;
  const int64_t *ids = ints_n(n, d, "nodes_nodeids", nn, &ok);
  const int64_t *feat = ints_n(n, d, "nodes_featureids", nn, &ok);
  const int64_t *tn = ints_n(n, d, "nodes_truenodeids", nn, &ok);
  const int64_t *fn = ints_n(n, d, "nodes_falsenodeids", nn, &ok);
  if (!ok)
    return false;
  int nmiss = 0;
  const int64_t *miss = ir_attr_ints(n, "nodes_missing_value_tracks_true", &nmiss);
  if (miss && nmiss != nn)
    return infer_fail(d, n, "attribute nodes_missing_value_tracks_true has %d entries, expected %d",
                      nmiss, nn);
  ml_attr_floats(n, "nodes_values", &nv);
  if (nv != nn)
    return infer_fail(d, n, "attribute nodes_values has %d entries, expected %d", nv, nn);
  const Attr *ma = ir_attr(n, "nodes_modes");
  if (!ma || ma->kind != AT_STRINGS || ma->n != nn)
    return infer_fail(d, n, "attribute nodes_modes must be %d strings", nn);
  snprintf(name[0], sizeof name[0], "%sids", pre);
  snprintf(name[1], sizeof name[1], "%snodeids", pre);
  snprintf(name[2], sizeof name[2], "%streeids", pre);
  snprintf(name[3], sizeof name[3], "%sweights", pre);
  const int64_t *wk = ir_attr_ints(n, name[0], &nw);
  const int64_t *wnode = ints_n(n, d, name[1], nw, &ok);
  const int64_t *wtree = ints_n(n, d, name[2], nw, &ok);
  if (!ok)
    return false;
  int nwv = 0;
  ml_attr_floats(n, name[3], &nwv);
  if (nwv != nw)
    return infer_fail(d, n, "attribute %s has %d entries, expected %d", name[3], nwv, nw);

  Arena *ar = n->g->arena;
  Key *keys = arena_alloc(ar, (size_t)nn * sizeof *keys);
  int64_t *mode = arena_alloc(ar, (size_t)nn * sizeof *mode);
  int64_t *t = arena_alloc(ar, (size_t)nn * sizeof *t), *f = arena_alloc(ar, (size_t)nn * sizeof *f);
  int64_t *w_at = arena_alloc(ar, (size_t)nn * sizeof *w_at);
  int64_t *w_n = arena_alloc(ar, (size_t)nn * sizeof *w_n);
  int64_t *w = arena_alloc(ar, (size_t)(nw ? nw : 1) * sizeof *w);
  int64_t *roots = arena_alloc(ar, (size_t)nn * sizeof *roots);
  int nr = 0;
  for (int i = 0; i < nn; i++) {
    keys[i] = (Key){trees[i], ids[i], i};
    if (!mode_code(n, d, ma->u.ss[i], i, &mode[i]))
      return false;
    if (mode[i] != 6 && (feat[i] < 0 || feat[i] >= x->shape.d[1]))
      return infer_fail(d, n, "nodes_featureids[%d] = %lld is out of range [0, %lld)", i,
                        (long long)feat[i], (long long)x->shape.d[1]);
    bool seen = false;
    for (int r = 0; r < nr && !seen; r++)
      seen = trees[roots[r]] == trees[i];
    if (!seen)
      roots[nr++] = i;
  }
  qsort(keys, (size_t)nn, sizeof *keys, key_cmp);
  for (int i = 1; i < nn; i++)
    if (key_cmp(&keys[i - 1], &keys[i]) == 0)
      return infer_fail(d, n, "node %lld of tree %lld appears twice", (long long)keys[i].node,
                        (long long)keys[i].tree);
  for (int i = 0; i < nn; i++) {
    if (mode[i] == 6)
      continue;
    t[i] = find(keys, nn, trees[i], tn[i]);
    f[i] = find(keys, nn, trees[i], fn[i]);
    if (t[i] < 0 || f[i] < 0)
      return infer_fail(d, n, "node %lld of tree %lld: its %s node %lld is not in the tree",
                        (long long)ids[i], (long long)trees[i], t[i] < 0 ? "true" : "false",
                        (long long)(t[i] < 0 ? tn[i] : fn[i]));
  }
  /* Group the weights by leaf, keeping their order within a leaf. */
  int *owner = arena_alloc(ar, (size_t)(nw ? nw : 1) * sizeof *owner);
  for (int j = 0; j < nw; j++) {
    if (wk[j] < 0 || wk[j] >= k_out)
      return infer_fail(d, n, "%s[%d] = %lld is out of range [0, %lld)", name[0], j,
                        (long long)wk[j], (long long)k_out);
    owner[j] = find(keys, nn, wtree[j], wnode[j]);
    if (owner[j] < 0)
      return infer_fail(d, n, "%s[%d]: node %lld of tree %lld does not exist", name[3], j,
                        (long long)wnode[j], (long long)wtree[j]);
    w_n[owner[j]]++;
  }
  int64_t at = 0;
  for (int i = 0; i < nn; i++)
    w_at[i] = at, at += w_n[i], w_n[i] = 0;
  for (int j = 0; j < nw; j++)
    w[w_at[owner[j]] + w_n[owner[j]]++] = j;
  for (int r = 0; r < nr; r++)
    if (!walk(n, d, (int)roots[r], 0, nn, mode, t, f))
      return false;
  ir_attr_set_ints(n, "_te_mode", mode, nn);
  ir_attr_set_ints(n, "_te_true", t, nn);
  ir_attr_set_ints(n, "_te_false", f, nn);
  ir_attr_set_ints(n, "_te_w_at", w_at, nn);
  ir_attr_set_ints(n, "_te_w_n", w_n, nn);
  ir_attr_set_ints(n, "_te_w", w, nw);
  ir_attr_set_ints(n, "_te_roots", roots, nr);
  return true;
}

static bool base_values(Node *n, Diag *d, int64_t k) {
  int nb = 0;
  ml_attr_floats(n, "base_values", &nb);
  if (nb && nb != k && nb != 1)
    return infer_fail(d, n, "attribute base_values has %d entries, expected %lld or 1", nb,
                      (long long)k);
  return true;
}

bool infer_TreeEnsembleRegressor(Node *n, Diag *d) {
  int post;
  if (!ml_post_transform(n, d, &post))
    return false;
  int64_t k = ir_attr_int(n, "n_targets", 1);
  if (k < 1)
    return infer_fail(d, n, "attribute n_targets is %lld, expected >= 1", (long long)k);
  const char *agg = ir_attr_str(n, "aggregate_function", "SUM");
  if (strcmp(agg, "SUM") && strcmp(agg, "AVERAGE") && strcmp(agg, "MIN") && strcmp(agg, "MAX"))
    return infer_fail(d, n, "aggregate_function '%s' is not one of SUM, AVERAGE, MIN, MAX", agg);
  if (!base_values(n, d, k) || !resolve(n, d, false, k))
    return false;
  int64_t dims[2] = {n->in[0]->shape.d[0], k};
  Shape s = shape_make(2, dims);
  s.sym[0] = n->in[0]->shape.sym[0];
  infer_set(n, 0, DT_F32, &s);
  return true;
}

bool infer_TreeEnsembleClassifier(Node *n, Diag *d) {
  int post, nl = 0;
  if (!ml_post_transform(n, d, &post))
    return false;
  if (!ml_no_string_labels(n, d, "classlabels_int64s"))
    return false;
  if (!ir_attr_ints(n, "classlabels_int64s", &nl) || nl < 2)
    return infer_fail(d, n, "attribute classlabels_int64s must hold at least 2 labels");
  if (!base_values(n, d, nl) || !resolve(n, d, true, nl))
    return false;
  /* Two labels, weights for one class only: ONNX Runtime 1.32 writes scores
   * for these forms that follow no rule we could reproduce (measured): class 1
   * with base values, or two base values. */
  int nw = 0, nb = 0;
  const int64_t *ids = ir_attr_ints(n, "class_ids", &nw);
  ml_attr_floats(n, "base_values", &nb);
  bool one = nw > 0;
  for (int j = 1; j < nw; j++)
    one = one && ids[j] == ids[0];
  if (nl == 2 && one && (nb == 2 || (ids[0] == 1 && nb > 0)))
    return infer_fail(d, n, "a two-class ensemble with weights for class %lld only and %d base "
                            "values is not supported (its ONNX Runtime scores are not reproduced); "
                            "give weights for both classes or for class 0 with at most one base value",
                      (long long)ids[0], nb);
  int64_t dims[2] = {n->in[0]->shape.d[0], nl};
  Shape y = shape_make(1, dims), z = shape_make(2, dims);
  y.sym[0] = z.sym[0] = n->in[0]->shape.sym[0];
  infer_set(n, 0, DT_I64, &y);
  if (n->n_out > 1)
    infer_set(n, 1, DT_F32, &z);
  return true;
}
