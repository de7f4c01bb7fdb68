/* test_infer_attention.c - unit tests of the attention family's inference
 * hooks (passes/infer_attention.c): Attention, RotaryEmbedding,
 * LinearAttention, CausalConvWithState and Einsum (shapes, the rewritten
 * explicit equation), their error paths, and the scratch sizes. */
#include "test_util.h"
#include "codegen.h"

static void set_str(Node *n, const char *name, const char *s) {
  Attr *a = ir_attr_add(n, name, AT_STRING);
  a->u.s = s;
  a->slen = strlen(s);
}

static Value *t3(Graph *g, const char *name, DType dt, int64_t a, int64_t b, int64_t c) {
  return tin(g, name, dt, 3, (int64_t[]){a, b, c});
}

static Value *t4(Graph *g, const char *name, DType dt, int64_t a, int64_t b, int64_t c, int64_t d) {
  return tin(g, name, dt, 4, (int64_t[]){a, b, c, d});
}

/* ---- Attention ------------------------------------------------------------------------ */

static void test_attention_4d(void **state) {
  (void)state;
  Graph *g = gnew(23);
  Value *in[3] = {t4(g, "q", DT_F32, 2, 9, 4, 8), t4(g, "k", DT_F32, 2, 3, 6, 8),
                  t4(g, "v", DT_F32, 2, 3, 6, 10)};
  Node *n = op(g, OP_Attention, 3, in, 1);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){2, 9, 4, 10});
  assert_int_equal(attn_scratch_bytes(n), 6 * 4);
  ir_graph_free(g);
}

static void test_attention_3d_past_present(void **state) {
  (void)state;
  Graph *g = gnew(23);
  Value *in[6] = {t3(g, "q", DT_F64, 2, 4, 72), t3(g, "k", DT_F64, 2, 6, 24),
                  t3(g, "v", DT_F64, 2, 6, 30), tin(g, "m", DT_BOOL, 2, (int64_t[]){4, 18}),
                  t4(g, "pk", DT_F64, 2, 3, 12, 8), t4(g, "pv", DT_F64, 2, 3, 12, 10)};
  Node *n = op(g, OP_Attention, 6, in, 4);
  ir_attr_set_int(n, "q_num_heads", 9);
  ir_attr_set_int(n, "kv_num_heads", 3);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){2, 4, 90});
  assert_shape(n->out[1], 4, (int64_t[]){2, 3, 18, 8});
  assert_shape(n->out[2], 4, (int64_t[]){2, 3, 18, 10});
  assert_shape(n->out[3], 4, (int64_t[]){2, 9, 4, 18});
  assert_int_equal(n->out[3]->dt, DT_F64);
  assert_int_equal(attn_scratch_bytes(n), 18 * 8);
  ir_graph_free(g);
}

static void test_attention_errors(void **state) {
  (void)state;
  Graph *g = gnew(23);
  Value *q = t3(g, "q", DT_F32, 2, 4, 24), *k = t3(g, "k", DT_F32, 2, 6, 24);
  Value *v = t3(g, "v", DT_F32, 2, 6, 24);
  /* 3-D without head counts */
  expect_error(op(g, OP_Attention, 3, (Value *[]){q, k, v}, 1), "q_num_heads");
  /* q heads not a multiple of kv heads */
  Value *k18 = t3(g, "k18", DT_F32, 2, 6, 18);
  Node *n = op(g, OP_Attention, 3, (Value *[]){q, k18, k18}, 1);
  ir_attr_set_int(n, "q_num_heads", 4);
  ir_attr_set_int(n, "kv_num_heads", 3);
  expect_error(n, "multiple");
  /* past_key without past_value */
  Value *pk = t4(g, "pk", DT_F32, 2, 3, 5, 8);
  n = op(g, OP_Attention, 5, (Value *[]){q, k, v, g->none, pk}, 1);
  ir_attr_set_int(n, "q_num_heads", 3);
  ir_attr_set_int(n, "kv_num_heads", 3);
  expect_error(n, "together");
  /* integer Q, mismatched ranks, a mask longer than the keys, a bad mode */
  Value *qi = t4(g, "qi", DT_I32, 1, 1, 2, 2), *q4 = t4(g, "q4", DT_F32, 1, 1, 2, 2);
  Value *k4 = t4(g, "k4", DT_F32, 1, 1, 3, 2);
  expect_error(op(g, OP_Attention, 3, (Value *[]){qi, k4, k4}, 1), "element type");
  expect_error(op(g, OP_Attention, 3, (Value *[]){q4, k, k4}, 1), "rank");
  Value *m = tin(g, "m", DT_F32, 2, (int64_t[]){2, 4});
  expect_error(op(g, OP_Attention, 4, (Value *[]){q4, k4, k4, m}, 1), "attn_mask");
  n = op(g, OP_Attention, 3, (Value *[]){q4, k4, k4}, 1);
  ir_attr_set_int(n, "qk_matmul_output_mode", 4);
  expect_error(n, "qk_matmul_output_mode");
  ir_graph_free(g);
}

static void test_flex_attention(void **state) {
  (void)state;
  Graph *g = gnew(26);
  Value *in[3] = {t4(g, "q", DT_F16, 2, 8, 4, 16), t4(g, "k", DT_F16, 2, 2, 6, 16),
                  t4(g, "v", DT_F16, 2, 2, 6, 32)};
  Node *n = op(g, OP_FlexAttention, 3, in, 1);
  assert_string_equal(n->domain, "ai.onnx.preview");
  assert_int_equal(ir_op_lookup_in("ai.onnx.preview", "FlexAttention"), OP_FlexAttention);
  assert_int_equal(ir_op_lookup_in("", "FlexAttention"), OP_Unknown_);
  expect_ok(n);
  assert_shape(n->out[0], 4, (int64_t[]){2, 8, 4, 32});
  assert_int_equal(n->out[0]->dt, DT_F16);
  assert_int_equal(attn_scratch_bytes(n), 6 * 4);
  /* modifier subgraphs are not supported; K/V head counts must divide Q's */
  Node *m = op(g, OP_FlexAttention, 3, in, 1);
  ir_attr_add(m, "score_mod", AT_GRAPH)->u.g = ir_subgraph_new(g, "mod");
  expect_error(m, "score_mod");
  Value *k3 = t4(g, "k3", DT_F16, 2, 3, 6, 16), *v3 = t4(g, "v3", DT_F16, 2, 3, 6, 16);
  expect_error(op(g, OP_FlexAttention, 3, (Value *[]){in[0], k3, v3}, 1), "multiple");
  ir_graph_free(g);
}

/* ---- RotaryEmbedding -------------------------------------------------------------------- */

static void test_rotary(void **state) {
  (void)state;
  Graph *g = gnew(23);
  Value *x = t3(g, "x", DT_F32, 2, 3, 32), *c = tin(g, "c", DT_F32, 2, (int64_t[]){50, 2});
  Value *p = tin(g, "p", DT_I64, 2, (int64_t[]){2, 3});
  Node *n = op(g, OP_RotaryEmbedding, 4, (Value *[]){x, c, c, p}, 1);
  ir_attr_set_int(n, "num_heads", 4);
  ir_attr_set_int(n, "rotary_embedding_dim", 4);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){2, 3, 32});
  /* the cache's last dim must be rotary_embedding_dim / 2 */
  ir_attr_set_int(n, "rotary_embedding_dim", 8);
  expect_error(n, "cos_cache");
  /* 3-D input needs num_heads; odd rotary dims are rejected */
  Node *m = op(g, OP_RotaryEmbedding, 4, (Value *[]){x, c, c, p}, 1);
  expect_error(m, "num_heads");
  ir_attr_set_int(m, "num_heads", 4);
  ir_attr_set_int(m, "rotary_embedding_dim", 3);
  expect_error(m, "odd");
  ir_graph_free(g);
}

/* ---- LinearAttention ---------------------------------------------------------------------- */

static void test_linear_attention(void **state) {
  (void)state;
  Graph *g = gnew(27);
  Value *q = t3(g, "q", DT_F16, 2, 4, 64), *k = t3(g, "k", DT_F16, 2, 4, 32);
  Value *v = t3(g, "v", DT_F16, 2, 4, 40), *dc = t3(g, "d", DT_F16, 2, 4, 4);
  Value *b = t3(g, "b", DT_F16, 2, 4, 1), *ps = t4(g, "s", DT_F32, 2, 4, 8, 10);
  Node *n = op(g, OP_LinearAttention, 6, (Value *[]){q, k, v, ps, dc, b}, 2);
  ir_attr_set_int(n, "q_num_heads", 8);
  ir_attr_set_int(n, "kv_num_heads", 4);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){2, 4, 80});
  assert_int_equal(n->out[0]->dt, DT_F16);
  assert_shape(n->out[1], 4, (int64_t[]){2, 4, 8, 10});
  assert_int_equal(n->out[1]->dt, DT_F32);
  assert_int_equal(attn_scratch_bytes(n), 8 * 10 * 4);
  /* gated_delta (the default) needs decay and beta; linear forbids them */
  Node *m = op(g, OP_LinearAttention, 3, (Value *[]){q, k, v}, 2);
  ir_attr_set_int(m, "q_num_heads", 8);
  ir_attr_set_int(m, "kv_num_heads", 4);
  expect_error(m, "requires the decay");
  set_str(m, "update_rule", "linear");
  expect_ok(m);
  Node *l = op(g, OP_LinearAttention, 5, (Value *[]){q, k, v, g->none, dc}, 2);
  ir_attr_set_int(l, "q_num_heads", 8);
  ir_attr_set_int(l, "kv_num_heads", 4);
  set_str(l, "update_rule", "linear");
  expect_error(l, "forbids the decay");
  set_str(l, "update_rule", "fast");
  expect_error(l, "update_rule");
  ir_graph_free(g);
}

/* ---- CausalConvWithState ------------------------------------------------------------------ */

static void test_causal_conv(void **state) {
  (void)state;
  Graph *g = gnew(27);
  Value *x = t3(g, "x", DT_F32, 2, 4, 8), *w = t3(g, "w", DT_F32, 4, 1, 5);
  Node *n = op(g, OP_CausalConvWithState, 2, (Value *[]){x, w}, 2);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){2, 4, 8});
  assert_shape(n->out[1], 3, (int64_t[]){2, 4, 4});
  Value *bad = t3(g, "p", DT_F32, 2, 4, 3);
  expect_error(op(g, OP_CausalConvWithState, 4, (Value *[]){x, w, g->none, bad}, 2),
               "past_state length");
  Node *m = op(g, OP_CausalConvWithState, 2, (Value *[]){x, w}, 2);
  set_str(m, "activation", "relu");
  expect_error(m, "activation");
  Value *w3 = t3(g, "w3", DT_F32, 3, 1, 5);
  expect_error(op(g, OP_CausalConvWithState, 2, (Value *[]){x, w3}, 2), "channels");
  ir_graph_free(g);
}

/* ---- Einsum --------------------------------------------------------------------------------- */

static Node *einsum(Graph *g, const char *eq, int n_in, Value **in) {
  Node *n = op(g, OP_Einsum, n_in, in, 1);
  set_str(n, "equation", eq);
  return n;
}

static void test_einsum_shapes(void **state) {
  (void)state;
  Graph *g = gnew(12);
  Value *a = t3(g, "a", DT_F64, 5, 2, 3), *b = t3(g, "b", DT_F64, 5, 3, 4);
  Node *n = einsum(g, "bij, bjk -> bik", 2, (Value *[]){a, b});
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){5, 2, 4});
  assert_string_equal(ir_attr_str(n, "equation", ""), "bij,bjk->bik");
  /* implicit output: labels used once, alphabetical */
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 4}), *y = tin(g, "y", DT_F32, 2, (int64_t[]){4, 6});
  n = einsum(g, "ij,jk", 2, (Value *[]){x, y});
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){3, 6});
  assert_string_equal(ir_attr_str(n, "equation", ""), "ij,jk->ik");
  n = einsum(g, "ba", 1, (Value *[]){x});
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){4, 3});
  /* ellipsis (broadcast) and a diagonal */
  Value *c = t3(g, "c", DT_F64, 3, 5, 5);
  n = einsum(g, "...ii ->...i", 1, (Value *[]){c});
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){3, 5});
  assert_string_equal(ir_attr_str(n, "equation", ""), "aii->ai");
  Value *e1 = t3(g, "e1", DT_F32, 7, 1, 2), *e2 = tin(g, "e2", DT_F32, 2, (int64_t[]){6, 2});
  n = einsum(g, "...j,...j->...", 2, (Value *[]){e1, e2});
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){7, 6});
  /* scalar */
  Value *s = tin(g, "s", DT_F64, 0, NULL);
  n = einsum(g, "->", 1, (Value *[]){s});
  expect_ok(n);
  assert_int_equal(n->out[0]->shape.rank, 0);
  ir_graph_free(g);
}

static void test_einsum_errors(void **state) {
  (void)state;
  Graph *g = gnew(12);
  Value *x = tin(g, "x", DT_F32, 2, (int64_t[]){3, 4}), *y = tin(g, "y", DT_F32, 2, (int64_t[]){5, 6});
  expect_error(einsum(g, "ij,jk->ik", 2, (Value *[]){x, y}), "label 'j'");
  expect_error(einsum(g, "ijk->i", 1, (Value *[]){x}), "rank");
  expect_error(einsum(g, "ij->iz", 1, (Value *[]){x}), "'z'");
  expect_error(einsum(g, "ij->ii", 1, (Value *[]){x}), "repeated");
  expect_error(einsum(g, "i$->i", 1, (Value *[]){x}), "invalid character");
  expect_error(einsum(g, "ij,ij->i", 1, (Value *[]){x}), "operands");
  Node *n = op(g, OP_Einsum, 1, (Value *[]){x}, 1);
  expect_error(n, "equation");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attention_4d),
      cmocka_unit_test(test_attention_3d_past_present),
      cmocka_unit_test(test_attention_errors),
      cmocka_unit_test(test_flex_attention),
      cmocka_unit_test(test_rotary),
      cmocka_unit_test(test_linear_attention),
      cmocka_unit_test(test_causal_conv),
      cmocka_unit_test(test_einsum_shapes),
      cmocka_unit_test(test_einsum_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
