/* Unit tests of the text-processing inference hooks (passes/infer_text.c). */
#include "test_util.h"

static Node *tfidf(Graph *g, DType dt, int rank, const int64_t *dims) {
  Value *x = tin(g, "x", dt, rank, dims);
  Node *n = op(g, OP_TfIdfVectorizer, 1, &x, 1);
  static const int64_t counts[] = {0, 4}, pool[] = {2, 3, 5, 4, 5, 6, 7, 8, 6, 7};
  static const int64_t idx[] = {0, 1, 2, 3, 4, 5, 6};
  ir_attr_set_ints(n, "ngram_counts", counts, 2);
  ir_attr_set_ints(n, "pool_int64s", pool, 10);
  ir_attr_set_ints(n, "ngram_indexes", idx, 7);
  ir_attr_set_int(n, "min_gram_length", 1);
  ir_attr_set_int(n, "max_gram_length", 2);
  Attr *a = ir_attr_add(n, "mode", AT_STRING);
  a->u.s = "TF";
  a->slen = 2;
  return n;
}

static void test_tfidf_shapes(void **state) {
  (void)state;
  Graph *g = gnew(13);
  int64_t d2[2] = {3, 12}, d1[1] = {12};
  Node *n = tfidf(g, DT_I32, 2, d2);
  expect_ok(n);
  int64_t want2[2] = {3, 7};
  assert_int_equal(n->out[0]->dt, DT_F32);
  assert_shape(n->out[0], 2, want2);
  Node *m = tfidf(g, DT_I64, 1, d1);
  expect_ok(m);
  int64_t want1[1] = {7};
  assert_shape(m->out[0], 1, want1);
  ir_graph_free(g);
}

static void test_tfidf_errors(void **state) {
  (void)state;
  Graph *g = gnew(13);
  int64_t d3[3] = {2, 2, 3}, d1[1] = {4};
  expect_error(tfidf(g, DT_I32, 3, d3), "rank 3");
  expect_error(tfidf(g, DT_F32, 1, d1), "expected int32 or int64");

  Node *n = tfidf(g, DT_I32, 1, d1);
  static const int64_t short_idx[] = {0, 1};
  ir_attr_set_ints(n, "ngram_indexes", short_idx, 2);
  expect_error(n, "ngram_indexes has 2 entries");

  n = tfidf(g, DT_I32, 1, d1);
  static const int64_t odd_counts[] = {0, 3};   /* 7 items of bigrams */
  ir_attr_set_ints(n, "ngram_counts", odd_counts, 2);
  expect_error(n, "not a multiple of 2");

  n = tfidf(g, DT_I32, 1, d1);
  Attr *a = ir_attr_add(n, "mode", AT_STRING);
  a->u.s = "BM25";
  a->slen = 4;
  expect_error(n, "mode 'BM25'");

  n = tfidf(g, DT_I32, 1, d1);
  ir_attr_set_int(n, "min_gram_length", 3);
  expect_error(n, "min_gram_length 3");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tfidf_shapes),
      cmocka_unit_test(test_tfidf_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
