/* Unit tests of the ai.onnx.ml inference hooks (passes/infer_ml.c). */
#include "test_util.h"

static void set_tensor_attr(Node *n, const char *name, DType dt, int count, const double *v) {
  int64_t dims[1] = {count};
  Shape s = shape_make(1, dims);
  Tensor *t = ir_tensor_new(n->g, dt, &s, NULL);
  for (int i = 0; i < count; i++)
    tensor_set_f64(t, i, v[i]);
  ir_attr_add(n, name, AT_TENSOR)->u.t = t;
}

/* One tree: node 0 splits on feature `f`; true -> node 1, false -> leaf 0;
 * node 1: true -> leaf 1, false -> leaf 2. */
static Node *ensemble(Graph *g, int64_t f, int64_t node1_true) {
  int64_t dims[2] = {5, 3};
  Value *x = tin(g, "x", DT_F32, 2, dims);
  Node *n = op(g, OP_TreeEnsemble, 1, &x, 1);
  n->domain = "ai.onnx.ml";
  const int64_t feat[2] = {f, 1}, tn[2] = {1, node1_true}, fn[2] = {0, 2}, tl[2] = {0, 1},
                fl[2] = {1, 1}, targets[3] = {0, 1, 1}, roots[1] = {0};
  ir_attr_set_ints(n, "nodes_featureids", feat, 2);
  ir_attr_set_ints(n, "nodes_truenodeids", tn, 2);
  ir_attr_set_ints(n, "nodes_falsenodeids", fn, 2);
  ir_attr_set_ints(n, "nodes_trueleafs", tl, 2);
  ir_attr_set_ints(n, "nodes_falseleafs", fl, 2);
  ir_attr_set_ints(n, "leaf_targetids", targets, 3);
  ir_attr_set_ints(n, "tree_roots", roots, 1);
  ir_attr_set_int(n, "n_targets", 2);
  const double modes[2] = {0, 1}, splits[2] = {0.5, -1}, weights[3] = {1, 2, 3};
  set_tensor_attr(n, "nodes_modes", DT_U8, 2, modes);
  set_tensor_attr(n, "nodes_splits", DT_F32, 2, splits);
  set_tensor_attr(n, "leaf_weights", DT_F32, 3, weights);
  return n;
}

static void test_tree_ensemble(void **state) {
  (void)state;
  Graph *g = gnew(21);
  Node *n = ensemble(g, 2, 1);
  expect_ok(n);
  int64_t want[2] = {5, 2};
  assert_shape(n->out[0], 2, want);
  expect_error(ensemble(g, 3, 1), "nodes_featureids[0] = 3 is out of range");
  expect_error(ensemble(g, 0, 7), "true leaf 7 is out of range");
  Node *c = ensemble(g, 0, 1);
  const int64_t tl[2] = {0, 0}, cyc[2] = {1, 0};
  ir_attr_set_ints(c, "nodes_trueleafs", tl, 2);
  ir_attr_set_ints(c, "nodes_truenodeids", cyc, 2);
  expect_error(c, "cycle");
  Node *p = ensemble(g, 0, 1);
  ir_attr_set_int(p, "post_transform", 4);
  expect_error(p, "PROBIT");
  ir_graph_free(g);
}

static void test_array_feature_extractor(void **state) {
  (void)state;
  Graph *g = gnew(13);
  int64_t xd[3] = {2, 3, 4}, yd[1] = {2}, x1[1] = {4};
  Value *in[2] = {tin(g, "x", DT_F32, 3, xd), tin(g, "y", DT_I64, 1, yd)};
  Node *n = op(g, OP_ArrayFeatureExtractor, 2, in, 1);
  n->domain = "ai.onnx.ml";
  expect_ok(n);
  int64_t want[3] = {2, 3, 2};
  assert_shape(n->out[0], 3, want);
  Value *in1[2] = {tin(g, "v", DT_F32, 1, x1), in[1]};
  Node *m = op(g, OP_ArrayFeatureExtractor, 2, in1, 1);
  m->domain = "ai.onnx.ml";
  expect_ok(m);
  int64_t want1[2] = {1, 2};
  assert_shape(m->out[0], 2, want1);
  Value *bad[2] = {in[0], tin(g, "z", DT_I32, 1, yd)};
  Node *b = op(g, OP_ArrayFeatureExtractor, 2, bad, 1);
  b->domain = "ai.onnx.ml";
  expect_error(b, "expected int64");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tree_ensemble),
      cmocka_unit_test(test_array_feature_extractor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
