/* Unit tests of the ai.onnx.ml model inference hooks: linear models and
 * preprocessors (passes/infer_ml_linear.c), the legacy tree ensembles
 * (infer_ml_trees.c) and the SVMs (infer_ml_svm.c); error paths included. */
#include "test_util.h"

static void floats(Node *n, const char *name, int count, const float *v) {
  Attr *a = ir_attr_add(n, name, AT_FLOATS);
  a->n = count;
  a->u.fs = arena_dup(n->g->arena, v, (size_t)count * sizeof *v);
}

static void str(Node *n, const char *name, const char *s) {
  Attr *a = ir_attr_add(n, name, AT_STRING);
  a->u.s = arena_strdup(n->g->arena, s);
  a->slen = strlen(s);
}

static void strs(Node *n, const char *name, int count, const char *const *s) {
  Attr *a = ir_attr_add(n, name, AT_STRINGS);
  a->n = count;
  a->u.ss = arena_alloc(n->g->arena, (size_t)count * sizeof *a->u.ss);
  for (int i = 0; i < count; i++)
    a->u.ss[i] = arena_strdup(n->g->arena, s[i]);
}

static Node *ml_node(Graph *g, OpKind k, int n_out) {
  int64_t dims[2] = {4, 2};
  Value *x = tin(g, "x", DT_F32, 2, dims);
  Node *n = op(g, k, 1, &x, n_out);
  n->domain = "ai.onnx.ml";
  return n;
}

/* A LinearClassifier over 2 features with `classes` score columns. */
static Node *linear_classifier(Graph *g, int classes, int labels) {
  Node *n = ml_node(g, OP_LinearClassifier, 2);
  const float w[6] = {1, 2, 3, 4, 5, 6}, b[3] = {0, 1, 2};
  const int64_t l[3] = {7, 8, 9};
  floats(n, "coefficients", 2 * classes, w);
  floats(n, "intercepts", classes, b);
  ir_attr_set_ints(n, "classlabels_ints", l, labels);
  return n;
}

static void test_linear_classifier(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Node *n = linear_classifier(g, 3, 3);
  expect_ok(n);
  int64_t y[1] = {4}, z3[2] = {4, 3}, z2[2] = {4, 2};
  assert_shape(n->out[0], 1, y);
  assert_shape(n->out[1], 2, z3);
  assert_int_equal(n->out[0]->dt, DT_I64);
  Node *b = linear_classifier(g, 1, 2); /* binary: one score, two columns */
  expect_ok(b);
  assert_shape(b->out[1], 2, z2);
  expect_error(linear_classifier(g, 3, 2), "classlabels_ints has 2 entries, expected 3");
  Node *w = linear_classifier(g, 3, 3);
  const float five[5] = {0};
  floats(w, "coefficients", 5, five);
  expect_error(w, "coefficients has 5 entries, expected 6");
  Node *s = linear_classifier(g, 3, 3);
  strs(s, "classlabels_strings", 3, (const char *const[]){"a", "b", "c"});
  expect_error(s, "string class labels");
  Node *p = linear_classifier(g, 3, 3);
  str(p, "post_transform", "PROBIT");
  expect_error(p, "PROBIT is not supported");
  ir_graph_free(g);
}

static void test_scaler_normalizer(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Node *s = ml_node(g, OP_Scaler, 1);
  const float v[3] = {1, 2, 3};
  floats(s, "offset", 1, v);
  floats(s, "scale", 2, v);
  expect_ok(s);
  assert_int_equal(s->out[0]->dt, DT_F32);
  floats(s, "scale", 3, v);
  expect_error(s, "scale has 3 entries, expected 1 or 2");
  Node *n = ml_node(g, OP_Normalizer, 1);
  str(n, "norm", "L2");
  expect_ok(n);
  str(n, "norm", "L3");
  expect_error(n, "norm 'L3' is not one of MAX, L1, L2");
  Node *r = ml_node(g, OP_LinearRegressor, 1);
  floats(r, "coefficients", 3, v);
  expect_error(r, "coefficients has 3 entries, expected 2");
  ir_graph_free(g);
}

/* Tree 5: node 0 (feature 1 <= 0.5) -> node 1 (leaf) or node 2 (leaf). */
static Node *tree_regressor(Graph *g, int64_t true_id, int64_t weight_node) {
  Node *n = ml_node(g, OP_TreeEnsembleRegressor, 1);
  const int64_t tree[3] = {5, 5, 5}, id[3] = {0, 1, 2}, feat[3] = {1, 0, 0};
  const int64_t tn[3] = {true_id, 0, 0}, fn[3] = {2, 0, 0}, tid[2] = {0, 0},
                tnode[2] = {1, weight_node}, ttree[2] = {5, 5};
  const float vals[3] = {0.5f, 0, 0}, w[2] = {1, 2};
  ir_attr_set_ints(n, "nodes_treeids", tree, 3);
  ir_attr_set_ints(n, "nodes_nodeids", id, 3);
  ir_attr_set_ints(n, "nodes_featureids", feat, 3);
  ir_attr_set_ints(n, "nodes_truenodeids", tn, 3);
  ir_attr_set_ints(n, "nodes_falsenodeids", fn, 3);
  floats(n, "nodes_values", 3, vals);
  strs(n, "nodes_modes", 3, (const char *const[]){"BRANCH_LEQ", "LEAF", "LEAF"});
  ir_attr_set_ints(n, "target_ids", tid, 2);
  ir_attr_set_ints(n, "target_nodeids", tnode, 2);
  ir_attr_set_ints(n, "target_treeids", ttree, 2);
  floats(n, "target_weights", 2, w);
  ir_attr_set_int(n, "n_targets", 1);
  return n;
}

static void test_tree_ensemble_regressor(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Node *n = tree_regressor(g, 1, 2);
  expect_ok(n);
  int64_t want[2] = {4, 1};
  assert_shape(n->out[0], 2, want);
  expect_error(tree_regressor(g, 9, 2), "its true node 9 is not in the tree");
  expect_error(tree_regressor(g, 0, 2), "cycle");
  expect_error(tree_regressor(g, 1, 4), "node 4 of tree 5 does not exist");
  Node *m = tree_regressor(g, 1, 2);
  strs(m, "nodes_modes", 3, (const char *const[]){"BRANCH_LEQ", "LEAF", "BRANCH_XX"});
  expect_error(m, "nodes_modes[2] is 'BRANCH_XX'");
  Node *t = tree_regressor(g, 1, 2);
  ir_attr_set_int(t, "n_targets", 0);
  expect_error(t, "n_targets is 0");
  Node *f = tree_regressor(g, 1, 2);
  const int64_t feat[3] = {2, 0, 0};
  ir_attr_set_ints(f, "nodes_featureids", feat, 3);
  expect_error(f, "nodes_featureids[0] = 2 is out of range [0, 2)");
  ir_graph_free(g);
}

static void test_svm(void **state) {
  (void)state;
  Graph *g = gnew(17);
  Node *n = ml_node(g, OP_SVMClassifier, 2);
  const int64_t l[2] = {0, 1}, vpc[2] = {1, 2};
  const float sv[6] = {0}, coef[3] = {1, -1, 1}, rho[1] = {0.5f};
  ir_attr_set_ints(n, "classlabels_ints", l, 2);
  ir_attr_set_ints(n, "vectors_per_class", vpc, 2);
  floats(n, "support_vectors", 6, sv);
  floats(n, "coefficients", 3, coef);
  floats(n, "rho", 1, rho);
  str(n, "kernel_type", "RBF");
  expect_ok(n);
  int64_t z[2] = {4, 2};
  assert_shape(n->out[1], 2, z);
  floats(n, "coefficients", 2, coef);
  expect_error(n, "coefficients has 2 entries, expected 3");
  floats(n, "coefficients", 3, coef);
  floats(n, "prob_a", 1, rho);
  expect_error(n, "prob_a and prob_b have 1 and 0 entries");
  floats(n, "prob_b", 1, rho);
  expect_ok(n);
  str(n, "kernel_type", "CUBIC");
  expect_error(n, "kernel_type 'CUBIC'");
  Node *r = ml_node(g, OP_SVMRegressor, 1);
  ir_attr_set_int(r, "n_supports", 3);
  floats(r, "support_vectors", 5, sv);
  floats(r, "coefficients", 3, coef);
  floats(r, "rho", 1, rho);
  expect_error(r, "support_vectors has 5 entries, expected 6");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_linear_classifier),
      cmocka_unit_test(test_scaler_normalizer),
      cmocka_unit_test(test_tree_ensemble_regressor),
      cmocka_unit_test(test_svm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
