/* plan_util.h - graph builders shared by the memory planner's unit tests
 * (test_memplan.c) and its benchmark (bench_memplan.c). */
#ifndef ONNXC_TESTS_PLAN_UTIL_H
#define ONNXC_TESTS_PLAN_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "passes.h"

static inline Graph *pu_graph(void) {
  Graph *g = ir_graph_new("t.onnx");
  g->opset = 17;
  return g;
}

static inline Shape pu_shape2(int64_t a, int64_t b) {
  int64_t d[2] = {a, b};
  return shape_make(2, d);
}

static inline Value *pu_input(Graph *g, const char *name, int64_t a, int64_t b) {
  Shape s = pu_shape2(a, b);
  return ir_input_add(g, name, DT_F32, &s);
}

/* A float weight of shape [a, b] (zeros). */
static inline Value *pu_weight(Graph *g, const char *name, int64_t a, int64_t b) {
  Shape s = pu_shape2(a, b);
  return ir_const_new(g, name, ir_tensor_new(g, DT_F32, &s, NULL));
}

static inline Value *pu_op1(Graph *g, OpKind k, const char *name, Value *x) {
  return ir_node_new(g, k, NULL, name, 1, &x, 1)->out[0];
}

static inline Value *pu_op2(Graph *g, OpKind k, const char *name, Value *x, Value *y) {
  Value *in[2] = {x, y};
  return ir_node_new(g, k, NULL, name, 2, in, 1)->out[0];
}

/* Reshape of x to [a, b] (the shape as an int64 constant). */
static inline Value *pu_reshape(Graph *g, const char *name, Value *x, int64_t a, int64_t b) {
  int64_t len[1] = {2};
  Shape s = shape_make(1, len);
  Tensor *t = ir_tensor_new(g, DT_I64, &s, NULL);
  tensor_set_i64(t, 0, a);
  tensor_set_i64(t, 1, b);
  char cname[64];
  snprintf(cname, sizeof cname, "%s_shape", name);
  return pu_op2(g, OP_Reshape, name, x, ir_const_new(g, cname, t));
}

/* Runs inference (the builders leave shapes to it); false after an error. */
static inline bool pu_infer(Graph *g) {
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  bool ok = pass_infer(g, &d);
  diag_free(&d);
  return ok;
}

static inline uint64_t pu_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* A random DAG of n two-input nodes, each reading two of the `reach` values
 * made before it, with outputs of random size ([1, 16..16384] floats); shapes
 * are set here, not inferred (the planner reads nothing else; MatMul only
 * because it has no in-place, view or slice rule). Dead ends, the last value
 * and every `n_out`-th one are graph outputs. */
static inline Graph *pu_random_dag(int n, int reach, int n_out, uint64_t seed) {
  Graph *g = pu_graph();
  Value **v = malloc((size_t)(n + 1) * sizeof *v);
  v[0] = pu_input(g, "x", 1, 64);
  for (int i = 1; i <= n; i++) {
    int lo = i > reach ? i - reach : 0;
    Value *a = v[lo + (int)(pu_rand(&seed) % (uint64_t)(i - lo))];
    Value *b = v[lo + (int)(pu_rand(&seed) % (uint64_t)(i - lo))];
    Value *in[2] = {a, b};
    char name[32];
    snprintf(name, sizeof name, "n%d", i);
    Node *nd = ir_node_new(g, OP_MatMul, NULL, name, 2, in, 1);
    int64_t width = 16 << (pu_rand(&seed) % 11);
    width += (int64_t)(pu_rand(&seed) % 16) * 16;
    nd->out[0]->dt = DT_F32;
    nd->out[0]->shape = pu_shape2(1, width);
    v[i] = nd->out[0];
  }
  /* Dead ends become outputs so every node is live. */
  for (int i = 1; i <= n; i++)
    if (v[i]->n_uses == 0 || (n_out > 0 && i % n_out == 0) || i == n)
      ir_output_add(g, v[i]);
  free(v);
  return g;
}

#endif
