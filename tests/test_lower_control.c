/* test_lower_control.c - the control-flow and sequence lowering
 * (passes/lower_control.c, passes/lower_sequence.c): sequences resolved to
 * tensors, expanded graph inputs and outputs, unrolled loops and scans, and
 * the errors where no compile-time bound exists. */
#include "test_util.h"

static Value *scalar_i64(Graph *g, const char *name, int64_t v) {
  double d = (double)v;
  return num_const(g, name, DT_I64, 0, NULL, &d);
}

/* Runs the pass; returns NULL on success, else the last message (static copy). */
static const char *lower(Graph *g) {
  static char msg[512];
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  bool ok = pass_lower_control(g, &d) && ir_verify(g, true, &d);
  snprintf(msg, sizeof msg, "%s", ok ? "" : diag_last(&d));
  diag_free(&d);
  return ok ? NULL : msg;
}

static void expect_lower_error(Graph *g, const char *what) {
  const char *m = lower(g);
  if (!m)
    fail_msg("lowering succeeded, expected an error with '%s'", what);
  if (!strstr(m, what))
    fail_msg("message '%s' lacks '%s'", m, what);
}

static int count_op(const Graph *g, OpKind k) {
  int c = 0;
  for (const Node *n = g->first; n; n = n->next)
    c += n->op == k;
  return c;
}

/* Construct(a, b) -> Insert(c at 0) -> At(-1) is b; Length is 3. */
static void test_sequence_at_insert_length(void **state) {
  (void)state;
  Graph *g = gnew(17);
  int64_t d2[1] = {2};
  Value *a = tin(g, "a", DT_F32, 1, d2), *b = tin(g, "b", DT_F32, 1, d2), *c = tin(g, "c", DT_F32, 1, d2);
  Value *ab[2] = {a, b};
  Node *sc = op(g, OP_SequenceConstruct, 2, ab, 1);
  Value *ins[3] = {sc->out[0], c, scalar_i64(g, "zero", 0)};
  Node *si = op(g, OP_SequenceInsert, 3, ins, 1);
  Value *at_in[2] = {si->out[0], scalar_i64(g, "last", -1)};
  Node *at = op(g, OP_SequenceAt, 2, at_in, 1);
  Node *len = op(g, OP_SequenceLength, 1, si->out, 1);
  Value *neg_in[1] = {at->out[0]};
  Node *neg = op(g, OP_Neg, 1, neg_in, 1);
  ir_output_add(g, neg->out[0]);
  ir_output_add(g, len->out[0]);
  assert_null(lower(g));
  assert_ptr_equal(neg->in[0], b);
  Value *l = g->outputs[1];
  assert_int_equal(l->kind, VK_CONST);
  assert_int_equal(tensor_get_i64(l->konst, 0), 3);
  assert_int_equal(count_op(g, OP_SequenceInsert) + count_op(g, OP_SequenceConstruct), 0);
  ir_graph_free(g);
}

static void test_sequence_at_runtime_position_fails(void **state) {
  (void)state;
  Graph *g = gnew(17);
  int64_t d2[1] = {2};
  Value *a = tin(g, "a", DT_F32, 1, d2), *p = tin(g, "p", DT_I64, 0, NULL);
  Node *sc = op(g, OP_SequenceConstruct, 1, &a, 1);
  Value *at_in[2] = {sc->out[0], p};
  Node *at = op(g, OP_SequenceAt, 2, at_in, 1);
  ir_output_add(g, at->out[0]);
  expect_lower_error(g, "must be known at compile time");
  ir_graph_free(g);
}

/* SplitToSequence of [5,2] in pieces of 2 (2, 2, 1) then ConcatFromSequence
 * with new_axis: the last piece has another shape, so Concat must fail;
 * without new_axis it gives back [5,2]. */
static void test_split_then_concat(void **state) {
  (void)state;
  Graph *g = gnew(17);
  int64_t d[2] = {5, 2};
  Value *x = tin(g, "x", DT_F32, 2, d);
  Value *sp_in[2] = {x, scalar_i64(g, "two", 2)};
  Node *sp = op(g, OP_SplitToSequence, 2, sp_in, 1);
  Node *len = op(g, OP_SequenceLength, 1, sp->out, 1);
  Node *cat = op(g, OP_ConcatFromSequence, 1, sp->out, 1);
  ir_attr_set_int(cat, "axis", 0);
  ir_output_add(g, cat->out[0]);
  ir_output_add(g, len->out[0]);
  assert_null(lower(g));
  assert_int_equal(tensor_get_i64(g->outputs[1]->konst, 0), 3);
  assert_shape(g->outputs[0], 2, d);
  assert_int_equal(count_op(g, OP_Slice), 3);
  ir_graph_free(g);
}

/* A sequence graph input becomes NAME_0.. inputs; a sequence output one
 * output per element; without a length the expansion fails. */
static void test_sequence_io_expansion(void **state) {
  (void)state;
  Graph *g = gnew(17);
  int64_t d3[1] = {3};
  Value *s = tin(g, "s", DT_F32, 1, d3);
  s->vt = VT_SEQUENCE;
  Node *id = op(g, OP_Identity, 1, &s, 1);
  id->out[0]->vt = VT_SEQUENCE;
  ir_output_add(g, id->out[0]);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  SeqLen lens[1] = {{"s", 2}};
  assert_true(pass_expand_inputs(g, lens, 1, &d));
  diag_free(&d);
  assert_int_equal(g->n_inputs, 2);
  assert_string_equal(g->inputs[0]->name, "s_0");
  assert_null(lower(g));
  assert_int_equal(g->n_outputs, 2);
  ir_graph_free(g);

  g = gnew(17);
  s = tin(g, "s", DT_F32, 1, d3);
  s->vt = VT_SEQUENCE;
  id = op(g, OP_Identity, 1, &s, 1);
  ir_output_add(g, id->out[0]);
  expect_lower_error(g, "needs its length at compile time");
  ir_graph_free(g);
}

/* An empty optional input: OptionalHasElement folds to false and the input
 * disappears from the signature. */
static void test_optional_input_absent(void **state) {
  (void)state;
  Graph *g = gnew(18);
  Value *o = tin(g, "o", DT_I32, 0, NULL);
  o->vt = VT_OPTIONAL;
  Node *has = op(g, OP_OptionalHasElement, 1, &o, 1);
  ir_output_add(g, has->out[0]);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  SeqLen lens[1] = {{"o", -1}};
  assert_true(pass_expand_inputs(g, lens, 1, &d));
  diag_free(&d);
  assert_int_equal(g->n_inputs, 0);
  assert_null(lower(g));
  assert_int_equal(g->outputs[0]->kind, VK_CONST);
  assert_int_equal(tensor_get_i64(g->outputs[0]->konst, 0), 0);
  ir_graph_free(g);
}

/* Scan over axis 1 of [2,3] in reverse, summing: 3 iterations of the body. */
static void test_scan_unrolls_reverse(void **state) {
  (void)state;
  Graph *g = gnew(16);
  int64_t d2[1] = {2}, dx[2] = {2, 3};
  Value *init = tin(g, "init", DT_F32, 1, d2), *x = tin(g, "x", DT_F32, 2, dx);
  Graph *body = ir_subgraph_new(g, "body");
  Value *bs = ir_input_add(body, "s", DT_F32, NULL), *be = ir_input_add(body, "e", DT_F32, NULL);
  Value *add_in[2] = {bs, be};
  Node *add = ir_node_new(body, OP_Add, NULL, "add", 2, add_in, 1);
  ir_output_add(body, add->out[0]);
  Value *in[2] = {init, x};
  Node *scan = op(g, OP_Scan, 2, in, 1);
  ir_attr_set_int(scan, "num_scan_inputs", 1);
  int64_t axes[1] = {1}, dirs[1] = {1};
  ir_attr_set_ints(scan, "scan_input_axes", axes, 1);
  ir_attr_set_ints(scan, "scan_input_directions", dirs, 1);
  ir_attr_add(scan, "body", AT_GRAPH)->u.g = body;
  ir_output_add(g, scan->out[0]);
  assert_null(lower(g));
  assert_int_equal(count_op(g, OP_Add), 3);
  assert_int_equal(count_op(g, OP_Gather), 3);
  assert_int_equal(count_op(g, OP_Scan), 0);
  /* reverse: the first Gather reads index 2 */
  for (Node *n = g->first; n; n = n->next)
    if (n->op == OP_Gather) {
      assert_int_equal(tensor_get_i64(n->in[1]->konst, 0), 2);
      break;
    }
  assert_shape(g->outputs[0], 1, d2);
  ir_graph_free(g);
}

/* A loop beyond the trip budget is an error, not a huge unrolled graph. */
static void test_loop_trip_budget(void **state) {
  (void)state;
  Graph *g = gnew(13);
  int64_t d1[1] = {1};
  Value *x = tin(g, "x", DT_F32, 1, d1);
  Graph *body = ir_subgraph_new(g, "body");
  ir_input_add(body, "i", DT_I64, NULL);
  Value *c = ir_input_add(body, "c", DT_BOOL, NULL);
  Value *s = ir_input_add(body, "s", DT_F32, NULL);
  ir_output_add(body, c);
  ir_output_add(body, s);
  Value *in[3] = {scalar_i64(g, "m", 1000000), g->none, x};
  Node *loop = op(g, OP_Loop, 3, in, 1);
  ir_attr_add(loop, "body", AT_GRAPH)->u.g = body;
  ir_output_add(g, loop->out[0]);
  expect_lower_error(g, "more than");
  ir_graph_free(g);
}

/* A graph without control flow is left alone. */
static void test_plain_graph_untouched(void **state) {
  (void)state;
  Graph *g = gnew(13);
  int64_t d1[1] = {4};
  Value *x = tin(g, "x", DT_F32, 1, d1);
  Node *neg = op(g, OP_Neg, 1, &x, 1);
  ir_output_add(g, neg->out[0]);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_true(pass_lower_control(g, &d));
  diag_free(&d);
  assert_int_equal(neg->out[0]->dt, DT_UNDEF);   /* not even inferred */
  ir_graph_free(g);
}


/* An If on a run-time condition whose else branch cannot be inferred for the
 * static shapes (as Silero VAD's 8 kHz half): the compile only warns, the
 * else branch leaves no node (its first node was inferred before the error), and
 * the then branch's output goes through a BranchGuard that fails when the
 * condition is false. The text of the result round-trips through the reader. */
static const char k_if_bad_else[] =
    "graph g opset 16\n"
    "input %x : f32[1,8]\n"
    "input %c : bool[]\n"
    "subgraph then_body\n"
    "%t : f32[1,8] = Neg(%x) @neg\n"
    "output %t\n"
    "end\n"
    "subgraph else_body\n"
    "%in : f32[1,8] = Abs(%x) @else_abs\n"
    "%e : f32[1,4] = MatMul(%in, %x) @bad_mm\n"
    "output %e\n"
    "end\n"
    "%y : f32[1,8] = If{then_branch=graph then_body, else_branch=graph else_body}(%c) @pick\n"
    "output %y\n";

static void test_if_bad_branch_guarded(void **state) {
  (void)state;
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  Graph *g = ir_parse(k_if_bad_else, "t.ir", &d);
  assert_non_null(g);
  assert_true(pass_lower_control(g, &d));
  assert_true(ir_verify(g, true, &d));
  assert_int_equal(d.n_errors, 0);
  assert_int_equal(d.n_warnings, 1);
  assert_non_null(strstr(diag_last(&d), "node 'pick' (If): else branch cannot run"));
  assert_non_null(strstr(diag_last(&d), "node 'bad_mm' (MatMul)"));
  assert_non_null(strstr(diag_last(&d), "ONNXC_ERR_BRANCH"));
  assert_int_equal(count_op(g, OP_BranchGuard), 1);
  assert_int_equal(count_op(g, OP_Neg), 1);
  assert_int_equal(count_op(g, OP_Where) + count_op(g, OP_MatMul) + count_op(g, OP_Abs) +
                   count_op(g, OP_If), 0);
  Value *y = g->outputs[0];
  assert_int_equal(y->producer->op, OP_BranchGuard);
  assert_int_equal(ir_attr_int(y->producer, "fail_if", -1), 0);
  assert_int_equal(y->dt, DT_F32);
  assert_int_equal(y->shape.rank, 2);
  assert_int_equal(y->shape.d[1], 8);
  Buf b;
  buf_init(&b);
  ir_print(g, &b);
  assert_non_null(strstr(b.s, "onnxc:BranchGuard{fail_if=0}("));
  Graph *g2 = ir_parse(b.s, "t.ir", &d);
  assert_non_null(g2);
  assert_int_equal(g2->outputs[0]->producer->op, OP_BranchGuard);
  buf_free(&b);
  ir_graph_free(g2);
  ir_graph_free(g);
  diag_free(&d);
}

/* Both branches broken: one error naming both reasons. */
static void test_if_both_branches_bad(void **state) {
  (void)state;
  static const char text[] =
      "graph g opset 16\n"
      "input %x : f32[1,8]\n"
      "input %c : bool[1]\n"
      "subgraph then_body\n"
      "%t : f32[1,8] = MatMul(%x, %x) @mm_then\n"
      "output %t\n"
      "end\n"
      "subgraph else_body\n"
      "%e : f32[1,8] = MatMul(%x, %x) @mm_else\n"
      "output %e\n"
      "end\n"
      "%y : f32[1,8] = If{then_branch=graph then_body, else_branch=graph else_body}(%c) @pick\n"
      "output %y\n";
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  Graph *g = ir_parse(text, "t.ir", &d);
  assert_non_null(g);
  assert_false(pass_lower_control(g, &d));
  assert_int_equal(d.n_errors, 1);
  const char *m = diag_last(&d);
  assert_non_null(strstr(m, "node 'pick' (If): neither branch can run"));
  assert_non_null(strstr(m, "then branch: node 'mm_then' (MatMul)"));
  assert_non_null(strstr(m, "else branch: node 'mm_else' (MatMul)"));
  ir_graph_free(g);
  diag_free(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sequence_at_insert_length),
      cmocka_unit_test(test_sequence_at_runtime_position_fails),
      cmocka_unit_test(test_split_then_concat),
      cmocka_unit_test(test_sequence_io_expansion),
      cmocka_unit_test(test_optional_input_absent),
      cmocka_unit_test(test_scan_unrolls_reverse),
      cmocka_unit_test(test_loop_trip_budget),
      cmocka_unit_test(test_plain_graph_untouched),
      cmocka_unit_test(test_if_bad_branch_guarded),
      cmocka_unit_test(test_if_both_branches_bad),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
