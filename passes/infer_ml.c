/* infer_ml.c - inference for ai.onnx.ml operators on numeric tensors:
 * Binarizer, ArrayFeatureExtractor, TreeEnsemble.
 *
 * TreeEnsemble's trees are checked whole here (every index in range, every
 * tree acyclic and finite, membership sets matched to BRANCH_MEMBER nodes),
 * so the emitter can bake them into tables and walk them without checks.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

static bool numeric_io(Node *n, Diag *d) {
  DType t = n->in[0]->dt;
  if (t != DT_F32 && t != DT_F64 && t != DT_I32 && t != DT_I64)
    return infer_fail(d, n, "input 0 has type %s, expected float, double, int32 or int64",
                      dtype_name(t));
  return true;
}

bool infer_Binarizer(Node *n, Diag *d) {
  if (!numeric_io(n, d))
    return false;
  infer_set(n, 0, n->in[0]->dt, &n->in[0]->shape);
  return true;
}

bool infer_ArrayFeatureExtractor(Node *n, Diag *d) {
  if (!numeric_io(n, d))
    return false;
  const Value *x = n->in[0], *y = n->in[1];
  if (y->dt != DT_I64)
    return infer_fail(d, n, "input 1 (Y) has type %s, expected int64", dtype_name(y->dt));
  if (x->shape.rank == 0)
    return infer_fail(d, n, "input 0 (X) is a scalar; it needs at least one axis");
  Shape s = shape_unknown();
  if (x->shape.rank > 0 && y->shape.rank >= 0) {
    int64_t k = 1;
    bool known = true;
    for (int i = 0; i < y->shape.rank; i++) {
      known = known && y->shape.d[i] != DIM_UNKNOWN;
      k *= y->shape.d[i] != DIM_UNKNOWN ? y->shape.d[i] : 1;
    }
    if (x->shape.rank == 1) {
      int64_t dims[2] = {1, known ? k : DIM_UNKNOWN};
      s = shape_make(2, dims);
    } else {
      s = x->shape;
      s.d[s.rank - 1] = known ? k : DIM_UNKNOWN;
      s.sym[s.rank - 1] = NULL, s.x[s.rank - 1] = NULL;
    }
  }
  infer_set(n, 0, x->dt, &s);
  return true;
}

/* ---- TreeEnsemble ---------------------------------------------------------- */

/* Reads the INTS attribute `name`, which must have `want` entries (want < 0:
 * any count, returned in *count). */
static const int64_t *ints_of(const Node *n, Diag *d, const char *name, int want, int *count,
                              bool required) {
  int c = 0;
  const int64_t *v = ir_attr_ints(n, name, &c);
  if (!v && required) {
    (void)infer_fail(d, n, "attribute %s is required", name);
    return NULL;
  }
  if (v && want >= 0 && c != want) {
    (void)infer_fail(d, n, "attribute %s has %d entries, expected %d (one per %s)", name, c, want,
               strncmp(name, "leaf", 4) ? "interior node" : "leaf");
    return NULL;
  }
  if (count)
    *count = c;
  return v;
}

static const Tensor *tensor_attr(const Node *n, Diag *d, const char *name, int64_t want,
                                 bool required) {
  const Attr *a = ir_attr(n, name);
  if (!a) {
    if (required)
      (void)infer_fail(d, n, "attribute %s is required", name);
    return NULL;
  }
  if (a->kind != AT_TENSOR) {
    (void)infer_fail(d, n, "attribute %s must be a tensor", name);
    return NULL;
  }
  if (want >= 0 && a->u.t->numel != want) {
    (void)infer_fail(d, n, "attribute %s has %lld entries, expected %lld", name,
               (long long)a->u.t->numel, (long long)want);
    return NULL;
  }
  return a->u.t;
}

/* Depth-first walk from node i; *steps counts visits so a cycle (or a
 * shared subtree, which is allowed but bounded) cannot run forever. */
static bool walk_tree(const Node *n, Diag *d, int64_t i, int depth, int n_nodes, int n_leaves,
                      const int64_t *tn, const int64_t *fn, const int64_t *tl, const int64_t *fl) {
  if (depth > n_nodes)
    return infer_fail(d, n, "the trees have a cycle through interior node %lld", (long long)i);
  const int64_t next[2] = {tn[i], fn[i]}, leaf[2] = {tl[i], fl[i]};
  for (int b = 0; b < 2; b++) {
    if (leaf[b]) {
      if (next[b] < 0 || next[b] >= n_leaves)
        return infer_fail(d, n, "interior node %lld: %s leaf %lld is out of range [0, %d)",
                          (long long)i, b ? "false" : "true", (long long)next[b], n_leaves);
    } else {
      if (next[b] < 0 || next[b] >= n_nodes)
        return infer_fail(d, n, "interior node %lld: %s node %lld is out of range [0, %d)",
                          (long long)i, b ? "false" : "true", (long long)next[b], n_nodes);
      if (!walk_tree(n, d, next[b], depth + 1, n_nodes, n_leaves, tn, fn, tl, fl))
        return false;
    }
  }
  return true;
}

bool infer_TreeEnsemble(Node *n, Diag *d) {
  const Value *x = n->in[0];
  if (x->dt != DT_F32 && x->dt != DT_F64)
    return infer_fail(d, n, "input 0 has type %s, expected float or double", dtype_name(x->dt));
  if (x->shape.rank >= 0 && x->shape.rank != 2)
    return infer_fail(d, n, "input 0 has rank %d, expected 2 ([N, F])", x->shape.rank);
  int nn = 0, nl = 0, nr = 0;
  const int64_t *feat = ints_of(n, d, "nodes_featureids", -1, &nn, true);
  if (!feat)
    return false;
  const int64_t *tn = ints_of(n, d, "nodes_truenodeids", nn, NULL, true);
  const int64_t *fn = tn ? ints_of(n, d, "nodes_falsenodeids", nn, NULL, true) : NULL;
  const int64_t *tl = fn ? ints_of(n, d, "nodes_trueleafs", nn, NULL, true) : NULL;
  const int64_t *fl = tl ? ints_of(n, d, "nodes_falseleafs", nn, NULL, true) : NULL;
  if (!fl)
    return false;
  int nmiss = 0;
  ir_attr_ints(n, "nodes_missing_value_tracks_true", &nmiss);
  if (nmiss && nmiss != nn)
    return infer_fail(d, n, "attribute nodes_missing_value_tracks_true has %d entries, expected %d",
                      nmiss, nn);
  const int64_t *targets = ints_of(n, d, "leaf_targetids", -1, &nl, true);
  if (!targets)
    return false;
  const int64_t *roots = ints_of(n, d, "tree_roots", -1, &nr, true);
  if (!roots)
    return false;
  const Tensor *modes = tensor_attr(n, d, "nodes_modes", nn, true);
  const Tensor *splits = modes ? tensor_attr(n, d, "nodes_splits", nn, true) : NULL;
  const Tensor *weights = splits ? tensor_attr(n, d, "leaf_weights", nl, true) : NULL;
  if (!weights)
    return false;
  if (splits->dt != x->dt || weights->dt != x->dt)
    return infer_fail(d, n, "nodes_splits and leaf_weights must have the input's type %s",
                      dtype_name(x->dt));
  int64_t n_targets = ir_attr_int(n, "n_targets", -1);
  if (n_targets < 1)
    return infer_fail(d, n, "attribute n_targets must be >= 1");
  int64_t agg = ir_attr_int(n, "aggregate_function", 1), post = ir_attr_int(n, "post_transform", 0);
  if (agg < 0 || agg > 3)
    return infer_fail(d, n, "aggregate_function %lld is not one of 0..3", (long long)agg);
  if (post < 0 || post > 3)
    return infer_fail(d, n, post == 4 ? "post_transform PROBIT (4) is not supported"
                                      : "post_transform %lld is not one of 0..4", (long long)post);
  int64_t members = 0;
  for (int i = 0; i < nn; i++) {
    int64_t m = tensor_get_i64(modes, i);
    if (m < 0 || m > 6)
      return infer_fail(d, n, "nodes_modes[%d] is %lld, not one of 0..6", i, (long long)m);
    members += m == 6;
    if (feat[i] < 0 || (x->shape.rank == 2 && x->shape.d[1] != DIM_UNKNOWN && feat[i] >= x->shape.d[1]))
      return infer_fail(d, n, "nodes_featureids[%d] = %lld is out of range for the input's features",
                        i, (long long)feat[i]);
  }
  const Tensor *mv = tensor_attr(n, d, "membership_values", -1, false);
  if (members) {
    if (!mv)
      return infer_fail(d, n, "BRANCH_MEMBER nodes need the membership_values attribute");
    int64_t sets = 0;
    for (int64_t i = 0; i < mv->numel; i++)
      sets += isnan(tensor_get_f64(mv, i));
    /* A trailing set may end without its NaN. */
    if (mv->numel && !isnan(tensor_get_f64(mv, mv->numel - 1)))
      sets++;
    if (sets != members)
      return infer_fail(d, n, "membership_values holds %lld sets, the trees have %lld BRANCH_MEMBER nodes",
                        (long long)sets, (long long)members);
  }
  for (int i = 0; i < nl; i++)
    if (targets[i] < 0 || targets[i] >= n_targets)
      return infer_fail(d, n, "leaf_targetids[%d] = %lld is out of range [0, %lld)", i,
                        (long long)targets[i], (long long)n_targets);
  for (int r = 0; r < nr; r++) {
    if (roots[r] < 0 || roots[r] >= nn)
      return infer_fail(d, n, "tree_roots[%d] = %lld is out of range [0, %d)", r,
                        (long long)roots[r], nn);
    if (!walk_tree(n, d, roots[r], 0, nn, nl, tn, fn, tl, fl))
      return false;
  }
  Shape s = shape_unknown();
  if (x->shape.rank == 2) {
    int64_t dims[2] = {x->shape.d[0], n_targets};
    s = shape_make(2, dims);
    s.sym[0] = x->shape.sym[0];
  }
  infer_set(n, 0, x->dt, &s);
  return true;
}
