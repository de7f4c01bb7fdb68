/* test_util.h - tiny graph builders shared by the unit tests of the
 * inference hooks, folding and canonicalization (test_infer_*.c,
 * test_fold.c, ...). */
#ifndef ONNXC_TESTS_TEST_UTIL_H
#define ONNXC_TESTS_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "passes.h"

static inline Graph *gnew(int64_t opset) {
  Graph *g = ir_graph_new("t.onnx");
  g->opset = opset;
  return g;
}

static inline Value *tin(Graph *g, const char *name, DType dt, int rank, const int64_t *dims) {
  Shape s = shape_make(rank, dims);
  return ir_input_add(g, name, dt, &s);
}

/* 1-D int64 constant. */
static inline Value *ints_const(Graph *g, const char *name, int count, const int64_t *v) {
  int64_t len[1] = {count};
  Shape s = shape_make(1, len);
  Tensor *t = ir_tensor_new(g, DT_I64, &s, NULL);
  for (int i = 0; i < count; i++)
    tensor_set_i64(t, i, v[i]);
  return ir_const_new(g, name, t);
}

/* Constant of dtype dt and shape (rank, dims) holding vals (as doubles). */
static inline Value *num_const(Graph *g, const char *name, DType dt, int rank, const int64_t *dims,
                               const double *vals) {
  Shape s = shape_make(rank, dims);
  Tensor *t = ir_tensor_new(g, dt, &s, NULL);
  for (int64_t i = 0; i < t->numel; i++)
    tensor_set_f64(t, i, vals[i]);
  return ir_const_new(g, name, t);
}

static inline Node *op(Graph *g, OpKind k, int n_in, Value **in, int n_out) {
  return ir_node_new(g, k, NULL, NULL, n_in, in, n_out);
}

static inline void assert_shape(const Value *v, int rank, const int64_t *dims) {
  assert_int_equal(v->shape.rank, rank);
  for (int i = 0; i < rank; i++)
    assert_int_equal(v->shape.d[i], dims[i]);
}

/* Runs inference expecting one error whose message contains `what`. */
static inline void expect_error(Node *n, const char *what) {
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_false(infer_node(n, &d));
  assert_int_equal(d.n_errors, 1);
  if (!strstr(diag_last(&d), what))
    fail_msg("message '%s' lacks '%s'", diag_last(&d), what);
  diag_free(&d);
}

static inline void expect_ok(Node *n) {
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  if (!infer_node(n, &d))
    fail_msg("unexpected error: %s", diag_last(&d));
  diag_free(&d);
}

/* Infers then folds n; returns its (former) output i when it folded, else
 * NULL. Folding moves the value off the node, which keeps a dead stand-in. */
static inline Value *infer_fold(Node *n, int i) {
  Value *v = n->out[i];
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  if (!infer_node(n, &d))
    fail_msg("inference failed: %s", diag_last(&d));
  bool done = false;
  if (!fold_node(n, &done, &d))
    fail_msg("fold failed: %s", diag_last(&d));
  diag_free(&d);
  return done ? v : NULL;
}

#endif
