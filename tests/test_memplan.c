/* test_memplan.c - unit tests of the memory planner (passes/memplan*.c), the
 * scheduler (passes/schedule.c), the plan validator and how the C emitter uses
 * a plan (views without code, in-place calls). Graphs are built by hand
 * (plan_util.h); every plan is validated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <unistd.h>

#include "target_util.h"
#include "codegen_util.h"
#include "codegen.h"
#include "memplan_internal.h"
#include "plan_util.h"

/* Plans g (after inference when `infer`) and validates the plan. */
static void plan_ok(Graph *g, Plan *plan, bool infer) {
  if (infer)
    assert_true(pu_infer(g));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_memplan(g, plan, onnxc_test_target(), &d));
  assert_true(plan_validate(g, plan, &d));
  assert_true(plan->arena_bytes >= plan->lower_bound_bytes);
  diag_free(&d);
}

static int id_of(const Graph *g, const char *name) {
  Value *v = ir_value_find(g, name);
  assert_non_null(v);
  return v->id;
}

static const Node *node_named(const Graph *g, const char *name) {
  for (const Node *n = g->first; n; n = n->next)
    if (strcmp(n->name, name) == 0)
      return n;
  fail_msg("no node %s", name);
  return NULL;
}

/* x[4,16] -> a[4,32] -> b[4,64] -> c[4,16] -> y[4,8] (output), all MatMul. */
static Graph *chain(void) {
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w1", 16, 32));
  Value *b = pu_op2(g, OP_MatMul, "b", a, pu_weight(g, "w2", 32, 64));
  Value *c = pu_op2(g, OP_MatMul, "c", b, pu_weight(g, "w3", 64, 16));
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", c, pu_weight(g, "w4", 16, 8)));
  return g;
}

static void test_memplan_chain_reaches_lower_bound(void **state) {
  (void)state;
  Graph *g = chain();
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.n_tensors, 3);
  assert_int_equal(p.lower_bound_bytes, 512 + 1024);  /* a and b at step 1 */
  assert_int_equal(p.arena_bytes, p.lower_bound_bytes);
  assert_int_equal(p.naive_bytes, 512 + 1024 + 256);
  assert_int_equal(p.scratch_bytes, 0);
  for (int i = 0; i < p.n_tensors; i++)
    assert_int_equal(p.tensors[i].offset % PLAN_ALIGN, 0);
  ir_graph_free(g);
}

/* a feeds two MatMuls whose results meet in an Add, which writes over one. */
static void test_memplan_diamond_adds_in_place(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w1", 16, 16));
  Value *b = pu_op2(g, OP_MatMul, "b", a, pu_weight(g, "w2", 16, 16));
  Value *c = pu_op2(g, OP_MatMul, "c", a, pu_weight(g, "w3", 16, 16));
  Value *s = pu_op2(g, OP_Add, "s", b, c);
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", s, pu_weight(g, "w4", 16, 4)));
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.alias[id_of(g, "s")], id_of(g, "b"));
  assert_int_equal(p.offset[id_of(g, "s")], p.offset[id_of(g, "b")]);
  assert_int_equal(p.lower_bound_bytes, 3 * 256);
  assert_int_equal(p.arena_bytes, p.lower_bound_bytes);
  ir_graph_free(g);
}

static void test_memplan_views_alias_their_root(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w", 16, 16));
  Value *r = pu_reshape(g, "r", a, 8, 8);
  Value *f = pu_op1(g, OP_Flatten, "f", r);
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", f, pu_weight(g, "w2", 8, 4)));
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.alias[id_of(g, "r")], id_of(g, "a"));
  assert_int_equal(p.alias[id_of(g, "f")], id_of(g, "a"));
  assert_true(p.elided[node_named(g, "r")->id]);
  assert_true(p.elided[node_named(g, "f")->id]);
  assert_false(p.elided[node_named(g, "y")->id]);
  /* One buffer, alive from a's step to y's, which reads it through f. */
  assert_int_equal(p.n_tensors, 1);
  assert_int_equal(p.tensors[0].value_id, id_of(g, "a"));
  assert_int_equal(p.tensors[0].first, 0);
  assert_int_equal(p.tensors[0].last, 3);
  assert_int_equal(p.naive_bytes, 3 * 256);   /* as if every view copied */
  ir_graph_free(g);
}

static void test_memplan_view_of_input_takes_no_memory(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *r = pu_reshape(g, "r", x, 8, 8);
  Value *h = pu_op1(g, OP_Relu, "h", r);  /* must not write over the input */
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", h, pu_weight(g, "w", 8, 4)));
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.alias[id_of(g, "r")], id_of(g, "x"));
  assert_int_equal(p.offset[id_of(g, "r")], -1);
  assert_int_equal(p.alias[id_of(g, "h")], -1);
  assert_int_equal(p.n_tensors, 1);
  ir_graph_free(g);
}

/* A buffer that only reaches outputs through views lives in the first
 * output's array; a second view output is a copy from there. */
static void test_memplan_view_output_is_written_in_place(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w", 16, 16));
  ir_output_add(g, pu_reshape(g, "o1", a, 8, 8));
  ir_output_add(g, pu_reshape(g, "o2", a, 2, 32));
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.alias[id_of(g, "a")], id_of(g, "o1"));
  assert_true(p.elided[node_named(g, "o1")->id]);
  assert_false(p.elided[node_named(g, "o2")->id]);
  assert_int_equal(p.n_tensors, 0);
  assert_int_equal(p.arena_bytes, 0);
  ir_graph_free(g);
}

static void test_memplan_inplace_chain_shares_one_buffer(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w", 16, 16));
  Value *b = pu_op1(g, OP_Relu, "b", a);
  Value *c = pu_op1(g, OP_Sigmoid, "c", b);
  Value *s = pu_op1(g, OP_Softmax, "s", c);
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", s, pu_weight(g, "w2", 16, 4)));
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.alias[id_of(g, "b")], id_of(g, "a"));
  assert_int_equal(p.alias[id_of(g, "c")], id_of(g, "a"));
  assert_int_equal(p.alias[id_of(g, "s")], id_of(g, "a"));
  assert_false(p.elided[node_named(g, "b")->id]);  /* in place still runs */
  assert_int_equal(p.n_tensors, 1);
  assert_int_equal(p.arena_bytes, 256);
  ir_graph_free(g);
}

/* Relu's input is read again later, so Relu needs its own buffer; the Add
 * that reads both last may write over either. */
static void test_memplan_inplace_needs_a_dying_input(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w", 16, 16));
  Value *b = pu_op1(g, OP_Relu, "b", a);
  Value *c = pu_op2(g, OP_Add, "c", a, b);
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", c, pu_weight(g, "w2", 16, 4)));
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.alias[id_of(g, "b")], -1);
  assert_int_equal(p.alias[id_of(g, "c")], id_of(g, "a"));
  ir_graph_free(g);
}

/* Add(a[4,1], b[4,16]): b may be overwritten, the broadcast a never; nor a
 * graph output or input. */
static void test_memplan_inplace_never_over_broadcast_or_caller_data(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w1", 16, 1));
  Value *b = pu_op2(g, OP_MatMul, "b", x, pu_weight(g, "w2", 16, 16));
  Value *c = pu_op2(g, OP_Add, "c", a, b);
  Value *o = pu_op2(g, OP_MatMul, "o", c, pu_weight(g, "w3", 16, 16));
  ir_output_add(g, o);
  Value *a2 = pu_op2(g, OP_MatMul, "a2", x, pu_weight(g, "w4", 16, 1));
  ir_output_add(g, pu_op2(g, OP_Add, "d", a2, o));
  ir_output_add(g, pu_op1(g, OP_Relu, "e", pu_op1(g, OP_Neg, "nx", x)));
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.alias[id_of(g, "c")], id_of(g, "b"));
  assert_int_equal(p.alias[id_of(g, "nx")], -1);
  assert_int_equal(p.alias[id_of(g, "d")], -1);
  ir_graph_free(g);
}

static void test_memplan_dropout_without_mask_is_a_view(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w", 16, 16));
  Value *dr = pu_op1(g, OP_Dropout, "dr", a);
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", dr, pu_weight(g, "w2", 16, 4)));
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.alias[id_of(g, "dr")], id_of(g, "a"));
  assert_true(p.elided[node_named(g, "dr")->id]);
  ir_graph_free(g);
}

static Value *concat2(Graph *g, const char *name, Value *a, Value *b, int64_t axis) {
  Value *in[2] = {a, b};
  Node *n = ir_node_new(g, OP_Concat, NULL, name, 2, in, 1);
  ir_attr_set_int(n, "axis", axis);
  return n->out[0];
}

/* Concat on the channel axis of batch 1: each input is a slice of the output,
 * its producer writes there, and the Concat needs no code. */
static void test_memplan_concat_inputs_are_slices(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 1, 16);
  Value *a = pu_op1(g, OP_Relu, "a", pu_op2(g, OP_MatMul, "a0", x, pu_weight(g, "w1", 16, 8)));
  Value *b = pu_op2(g, OP_MatMul, "b", x, pu_weight(g, "w2", 16, 24));
  Value *c = concat2(g, "c", a, b, 1);
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", c, pu_weight(g, "w3", 32, 4)));
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.alias[id_of(g, "a0")], id_of(g, "c"));
  assert_int_equal(p.alias[id_of(g, "a")], id_of(g, "c"));  /* Relu in place, in the slice */
  assert_int_equal(p.alias_offset[id_of(g, "a")], 0);
  assert_int_equal(p.alias[id_of(g, "b")], id_of(g, "c"));
  assert_int_equal(p.alias_offset[id_of(g, "b")], 8 * 4);
  assert_int_equal(p.offset[id_of(g, "b")], p.offset[id_of(g, "c")] + 32);
  assert_true(p.elided[node_named(g, "c")->id]);
  assert_int_equal(p.n_tensors, 1);
  assert_int_equal(p.tensors[0].first, 0);  /* from a0's step to y's */
  assert_int_equal(p.tensors[0].last, 4);
  ir_graph_free(g);
}

/* A repeated input, a graph input or a batch > 1 keep the Concat's copy. */
static void test_memplan_concat_copies_what_cannot_be_a_slice(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 2, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w1", 16, 8));
  Value *batch2 = concat2(g, "batch2", a, a, 1);
  Value *a1 = pu_reshape(g, "a1", a, 1, 16);
  Value *rep = concat2(g, "rep", a1, a1, 1);
  Value *xin = concat2(g, "xin", pu_reshape(g, "x1", x, 1, 32), a1, 1);
  ir_output_add(g, batch2);
  ir_output_add(g, rep);
  ir_output_add(g, xin);
  Plan p;
  plan_ok(g, &p, true);
  assert_false(p.elided[node_named(g, "batch2")->id]);
  assert_false(p.elided[node_named(g, "rep")->id]);
  assert_false(p.elided[node_named(g, "xin")->id]);
  /* a went into rep's first slice (rep is an output: no arena at all). */
  assert_int_equal(p.alias[id_of(g, "a")], id_of(g, "rep"));
  assert_int_equal(p.n_tensors, 0);
  ir_graph_free(g);
}

/* Split of x (axis `axis`) into two equal halves; their values in out[]. */
static void split2(Graph *g, const char *name, Value *x, int64_t axis, Value **out) {
  Node *n = ir_node_new(g, OP_Split, NULL, name, 1, &x, 2);
  ir_attr_set_int(n, "axis", axis);
  out[0] = n->out[0];
  out[1] = n->out[1];
}

/* A Split along the channels of batch 1: its outputs are views of the input
 * at their byte offsets, the Split has no code, and the input's buffer lives
 * until the last reader of either half. */
static void test_memplan_split_outputs_are_views(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 1, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w1", 16, 32));
  Value *h[2];
  split2(g, "sp", a, 1, h);
  Value *p0 = pu_op2(g, OP_MatMul, "p0", h[0], pu_weight(g, "w2", 16, 8));
  Value *p1 = pu_op2(g, OP_MatMul, "p1", h[1], pu_weight(g, "w3", 16, 8));
  ir_output_add(g, pu_op2(g, OP_Add, "y", p0, p1));
  Plan p;
  plan_ok(g, &p, true);
  assert_true(p.elided[node_named(g, "sp")->id]);
  assert_int_equal(p.alias[h[0]->id], id_of(g, "a"));
  assert_int_equal(p.alias[h[1]->id], id_of(g, "a"));
  assert_int_equal(p.alias_offset[h[0]->id], 0);
  assert_int_equal(p.alias_offset[h[1]->id], 16 * 4);
  assert_int_equal(p.offset[h[1]->id], p.offset[id_of(g, "a")] + 64);
  for (int i = 0; i < p.n_tensors; i++)
    if (p.tensors[i].value_id == id_of(g, "a"))
      assert_int_equal(p.tensors[i].last, 3);  /* p1's step */
  char *c = cu_generate(g, &p, NULL);
  assert_null(strstr(c, "_Split("));
  assert_non_null(strstr(c, "(Split): a view of"));
  free(c);
  ir_graph_free(g);
}

/* Batch 2, or a half that is a graph output: the Split copies. */
static void test_memplan_split_copies_what_cannot_be_a_view(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 2, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w1", 16, 16));
  Value *h[2], *k[2];
  split2(g, "batch2", a, 1, h);
  Value *b = pu_reshape(g, "b", a, 1, 32);
  split2(g, "outs", b, 1, k);
  ir_output_add(g, pu_op2(g, OP_Add, "y", h[0], h[1]));
  ir_output_add(g, k[0]);
  ir_output_add(g, pu_op1(g, OP_Relu, "r", k[1]));
  Plan p;
  plan_ok(g, &p, true);
  assert_false(p.elided[node_named(g, "batch2")->id]);
  assert_false(p.elided[node_named(g, "outs")->id]);
  assert_int_equal(p.alias[h[0]->id], -1);
  assert_int_equal(p.alias[k[1]->id], -1);
  ir_graph_free(g);
}

/* Split halves concatenated back in order: the run covers a's buffer, which
 * becomes one slice of the Concat's output; in the other order, a copy. */
static void test_memplan_concat_of_split_run_is_one_slice(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 1, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w1", 16, 32));
  Value *b = pu_op2(g, OP_MatMul, "b", x, pu_weight(g, "w2", 16, 8));
  Value *h[2];
  split2(g, "sp", a, 1, h);
  Value *in[3] = {b, h[0], h[1]};
  Node *cat = ir_node_new(g, OP_Concat, NULL, "cat", 3, in, 1);
  ir_attr_set_int(cat, "axis", 1);
  Value *swapped = concat2(g, "swapped", h[1], h[0], 1);
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", cat->out[0], pu_weight(g, "w3", 40, 4)));
  ir_output_add(g, pu_op2(g, OP_MatMul, "z", swapped, pu_weight(g, "w4", 32, 4)));
  Plan p;
  plan_ok(g, &p, true);
  assert_true(p.elided[node_named(g, "cat")->id]);
  assert_false(p.elided[node_named(g, "swapped")->id]);
  assert_int_equal(p.alias[id_of(g, "a")], id_of(g, "cat"));
  assert_int_equal(p.alias_offset[id_of(g, "a")], 8 * 4);
  assert_int_equal(p.alias[h[1]->id], id_of(g, "cat"));
  assert_int_equal(p.alias_offset[h[1]->id], 8 * 4 + 16 * 4);
  ir_graph_free(g);
}

static Value *i64_const(Graph *g, const char *name, int64_t v) {
  int64_t len[1] = {1};
  Shape s = shape_make(1, len);
  Tensor *t = ir_tensor_new(g, DT_I64, &s, NULL);
  tensor_set_i64(t, 0, v);
  return ir_const_new(g, name, t);
}

/* Slice of x along one axis, [lo, hi) with step `step`. */
static Value *slice1(Graph *g, const char *name, Value *x, int64_t axis, int64_t lo, int64_t hi, int64_t step) {
  char nm[4][64];
  const char *what[4] = {"starts", "ends", "axes", "steps"};
  int64_t val[4] = {lo, hi, axis, step};
  Value *in[5] = {x};
  for (int i = 0; i < 4; i++) {
    snprintf(nm[i], sizeof nm[i], "%s_%s", name, what[i]);
    in[i + 1] = i64_const(g, nm[i], val[i]);
  }
  return ir_node_new(g, OP_Slice, NULL, name, 5, in, 1)->out[0];
}

/* A Slice that keeps one contiguous byte range (channels at batch 1, rows of
 * a matrix) is a view at that range's offset; a strided one copies. */
static void test_memplan_contiguous_slice_is_a_view(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 1, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w1", 16, 32));
  Value *ch = slice1(g, "ch", a, 1, 8, 24, 1);
  Value *m = pu_reshape(g, "m", a, 4, 8);
  Value *rows = slice1(g, "rows", m, 0, 1, 3, 1);
  Value *odd = slice1(g, "odd", a, 1, 1, 32, 2);
  Value *cols = slice1(g, "cols", m, 1, 0, 4, 1);
  Value *rev = slice1(g, "rev", a, 1, -1, -100, -1); /* all of a, reversed */
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", ch, pu_weight(g, "w2", 16, 4)));
  ir_output_add(g, pu_op2(g, OP_MatMul, "z", rows, pu_weight(g, "w3", 8, 4)));
  ir_output_add(g, pu_op1(g, OP_Relu, "u", odd));
  ir_output_add(g, pu_op1(g, OP_Relu, "v", cols));
  ir_output_add(g, pu_op1(g, OP_Relu, "w", rev));
  Plan p;
  plan_ok(g, &p, true);
  assert_true(p.elided[node_named(g, "ch")->id]);
  assert_int_equal(p.alias[ch->id], id_of(g, "a"));
  assert_int_equal(p.alias_offset[ch->id], 8 * 4);
  assert_true(p.elided[node_named(g, "rows")->id]);
  assert_int_equal(p.alias[rows->id], id_of(g, "a"));
  assert_int_equal(p.alias_offset[rows->id], 8 * 4);
  assert_false(p.elided[node_named(g, "odd")->id]);
  assert_false(p.elided[node_named(g, "cols")->id]);
  assert_false(p.elided[node_named(g, "rev")->id]);
  ir_graph_free(g);
}

/* Four branches x -> big -> small joined by a Concat; the model runs all the
 * big MatMuls first, the scheduler one branch at a time. */
static void test_memplan_schedule_lowers_branchy_peak(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 1, 16), *big[4], *small[4];
  char name[32], wname[32];
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "big%d", i);
    snprintf(wname, sizeof wname, "wb%d", i);
    big[i] = pu_op2(g, OP_MatMul, name, x, pu_weight(g, wname, 16, 1024));
  }
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "small%d", i);
    snprintf(wname, sizeof wname, "ws%d", i);
    small[i] = pu_op2(g, OP_MatMul, name, big[i], pu_weight(g, wname, 1024, 4));
  }
  Node *cat = ir_node_new(g, OP_Concat, NULL, "cat", 4, small, 1);
  ir_attr_set_int(cat, "axis", 1);
  ir_output_add(g, cat->out[0]);
  Plan before, after;
  plan_ok(g, &before, true);
  assert_int_equal(before.arena_bytes, 4 * 4096);  /* the smalls are slices of the output */
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_schedule(g, onnxc_test_target(), NULL, &d));
  assert_true(ir_verify(g, true, &d));
  diag_free(&d);
  plan_ok(g, &after, false);
  assert_int_equal(after.arena_bytes, 4096);
  ir_graph_free(g);
}

/* The scheduler keeps the model's order when nothing plans smaller. */
static void test_memplan_schedule_keeps_chain_order(void **state) {
  (void)state;
  Graph *g = chain();
  assert_true(pu_infer(g));
  Node *first = g->first, *last = g->last;
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_schedule(g, onnxc_test_target(), NULL, &d));
  diag_free(&d);
  assert_ptr_equal(g->first, first);
  assert_ptr_equal(g->last, last);
  ir_graph_free(g);
}

/* A body reads outer values through captures, which record no use: the
 * node owning the body must count as their reader, and keeps its place. */
static void test_memplan_subgraph_reads_extend_lifetimes(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 1, 64);
  Shape s = pu_shape2(1, 64);
  Node *na = ir_node_new(g, OP_MatMul, NULL, "a", 1, &x, 1);
  Node *nb = ir_node_new(g, OP_MatMul, NULL, "b", 1, &x, 1);
  Node *nc = ir_node_new(g, OP_MatMul, NULL, "c", 1, &nb->out[0], 1);
  Value *vals[3] = {na->out[0], nb->out[0], nc->out[0]};
  for (int i = 0; i < 3; i++) {
    vals[i]->dt = DT_F32;
    vals[i]->shape = s;
  }
  Graph *body = ir_subgraph_new(g, "body");
  ir_capture_add(body, "a", DT_F32, &s);
  ir_attr_add(nc, "body", AT_GRAPH)->u.g = body;
  ir_output_add(g, nc->out[0]);
  Plan p;
  plan_ok(g, &p, false);
  assert_int_equal(p.n_tensors, 2);
  for (int i = 0; i < p.n_tensors; i++)
    if (p.tensors[i].value_id == na->out[0]->id)
      assert_int_equal(p.tensors[i].last, 2);
  assert_int_not_equal(p.offset[na->out[0]->id], p.offset[nb->out[0]->id]);
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_schedule(g, onnxc_test_target(), NULL, &d));
  diag_free(&d);
  assert_ptr_equal(g->first, na);
  assert_ptr_equal(g->last, nc);
  ir_graph_free(g);
}

/* An instance where every greedy order and the local search miss the bound
 * and the exact search reaches it (found by random search). */
static void test_memplan_exact_search_reaches_bound(void **state) {
  (void)state;
  PlanTensor ts[] = {{0, -1, 0, 192, 2, 9}, {1, -1, 0, 192, 3, 5}, {2, -1, 0, 384, 0, 1},
                     {3, -1, 0, 256, 0, 4}, {4, -1, 0, 384, 5, 9}};
  const char *strategy;
  int64_t arena = memplan_place(ts, 5, 768, &strategy);
  assert_int_equal(arena, 768);
  assert_string_equal(strategy, "exact");
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++) {
      bool live = ts[i].first <= ts[j].last && ts[j].first <= ts[i].last;
      bool mem = ts[i].offset < ts[j].offset + ts[j].size && ts[j].offset < ts[i].offset + ts[i].size;
      assert_false(live && mem);
    }
}

static void expect_invalid(const Graph *g, const Plan *p, const char *what) {
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_false(plan_validate(g, p, &d));
  bool found = false;
  for (int i = 0; i < d.n_msgs; i++)
    found |= strstr(d.msgs[i], what) != NULL;
  if (!found)
    fail_msg("no message with '%s' (last: %s)", what, diag_last(&d));
  diag_free(&d);
}

static void test_memplan_validate_reports_broken_plans(void **state) {
  (void)state;
  Graph *g = chain();
  Plan p;
  plan_ok(g, &p, true);
  PlanTensor saved[3];
  memcpy(saved, p.tensors, sizeof saved);
  int ia = -1, ib = -1;
  for (int i = 0; i < 3; i++) {
    if (p.tensors[i].value_id == id_of(g, "a"))
      ia = i;
    if (p.tensors[i].value_id == id_of(g, "b"))
      ib = i;
  }
  p.tensors[ia].offset = p.tensors[ib].offset;  /* a and b are live together */
  expect_invalid(g, &p, "overlap in memory");
  memcpy(p.tensors, saved, sizeof saved);
  p.tensors[ia].last = 0;  /* b reads a at step 1 */
  expect_invalid(g, &p, "outside its buffer's lifetime");
  memcpy(p.tensors, saved, sizeof saved);
  p.tensors[ia].offset += 8;
  expect_invalid(g, &p, "misplaced");
  memcpy(p.tensors, saved, sizeof saved);
  p.arena_bytes = p.lower_bound_bytes - PLAN_ALIGN;
  expect_invalid(g, &p, "below the lower bound");
  ir_graph_free(g);
}

/* A view placed past its root's bytes (though inside the buffer's 64-byte
 * rounding) is reported: a wrong Split or Slice offset. */
static void test_memplan_validate_reports_view_past_its_root(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 1, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w1", 16, 24)); /* 96 bytes */
  Value *h[2];
  split2(g, "sp", a, 1, h);
  ir_output_add(g, pu_op2(g, OP_Add, "y", h[0], h[1]));
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.alias_offset[h[1]->id], 48);
  p.alias_offset[h[1]->id] += 16;
  p.offset[h[1]->id] += 16;
  expect_invalid(g, &p, "not inside its root's buffer");
  ir_graph_free(g);
}

/* The size the planner must handle quickly (timed by bench_memplan). */
static void test_memplan_5000_tensors_validate(void **state) {
  (void)state;
  for (int reach = 4; reach <= 64; reach *= 4) {
    Graph *g = pu_random_dag(5000, reach, 0, 7u + (uint64_t)reach);
    Plan p;
    plan_ok(g, &p, false);
    assert_true(p.n_tensors > 2500);
    Diag d;
    diag_init(&d, "t.onnx", stderr);
    assert_true(pass_schedule(g, onnxc_test_target(), NULL, &d));
    diag_free(&d);
    Plan q;
    plan_ok(g, &q, false);
    assert_true(q.arena_bytes <= p.arena_bytes);
    ir_graph_free(g);
  }
}


/* Views get no function and an in-place node gets one pointer twice. */
static void test_memplan_codegen_uses_aliases(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w", 16, 16));
  Value *r = pu_op1(g, OP_Relu, "r", pu_reshape(g, "v", a, 8, 8));
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", r, pu_weight(g, "w2", 8, 4)));
  Plan p;
  plan_ok(g, &p, true);
  char *c = cu_generate(g, &p, NULL);
  assert_null(strstr(c, "_Reshape("));
  assert_non_null(strstr(c, "(Reshape): a view of"));
  assert_non_null(strstr(c, "node2_Relu((const float *)(a + 0), (float *)(a + 0))"));
  free(c);
  ir_graph_free(g);
}

/* A Concat that is a graph output: its inputs are written straight into the
 * caller's array, at their offsets. */
static void test_memplan_codegen_concat_output_slices(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 1, 12);
  Value *a = pu_op1(g, OP_Relu, "a", x);
  Value *b = pu_op1(g, OP_Sigmoid, "b", x);
  Value *y = concat2(g, "y", a, b, 1);
  ir_output_add(g, y);
  Plan p;
  plan_ok(g, &p, true);
  assert_int_equal(p.arena_bytes, 0);
  char *c = cu_generate(g, &p, NULL);
  assert_non_null(strstr(c, "node0_Relu(in_x, out_y)"));
  assert_non_null(strstr(c, "node1_Sigmoid(in_x, (float *)((unsigned char *)out_y + 48))"));
  assert_non_null(strstr(c, "(Concat): its inputs were written in place, no code"));
  free(c);
  ir_graph_free(g);
}

/* A node with scratch gets `unsigned char *S`, pointing into the arena. */
static void test_memplan_codegen_passes_scratch(void **state) {
  (void)state;
  Graph *g = chain();
  Plan p;
  plan_ok(g, &p, true);
  const Node *b = node_named(g, "b");
  p.scratch_size[b->id] = 100;
  p.scratch_offset[b->id] = p.arena_bytes;
  p.arena_bytes += 128;
  char *c = cu_generate(g, &p, NULL);
  char call[64];
  assert_non_null(strstr(c, "float *Y0, unsigned char *S) {"));
  /* (a node that cannot fail is called without a status check: `(void)f(...);`) */
  snprintf(call, sizeof call, ", a + %lld)", (long long)p.scratch_offset[b->id]);
  assert_non_null(strstr(c, call));
  free(c);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memplan_chain_reaches_lower_bound),
      cmocka_unit_test(test_memplan_diamond_adds_in_place),
      cmocka_unit_test(test_memplan_views_alias_their_root),
      cmocka_unit_test(test_memplan_view_of_input_takes_no_memory),
      cmocka_unit_test(test_memplan_view_output_is_written_in_place),
      cmocka_unit_test(test_memplan_inplace_chain_shares_one_buffer),
      cmocka_unit_test(test_memplan_inplace_needs_a_dying_input),
      cmocka_unit_test(test_memplan_inplace_never_over_broadcast_or_caller_data),
      cmocka_unit_test(test_memplan_dropout_without_mask_is_a_view),
      cmocka_unit_test(test_memplan_concat_inputs_are_slices),
      cmocka_unit_test(test_memplan_concat_copies_what_cannot_be_a_slice),
      cmocka_unit_test(test_memplan_split_outputs_are_views),
      cmocka_unit_test(test_memplan_split_copies_what_cannot_be_a_view),
      cmocka_unit_test(test_memplan_concat_of_split_run_is_one_slice),
      cmocka_unit_test(test_memplan_contiguous_slice_is_a_view),
      cmocka_unit_test(test_memplan_validate_reports_view_past_its_root),
      cmocka_unit_test(test_memplan_schedule_lowers_branchy_peak),
      cmocka_unit_test(test_memplan_schedule_keeps_chain_order),
      cmocka_unit_test(test_memplan_subgraph_reads_extend_lifetimes),
      cmocka_unit_test(test_memplan_exact_search_reaches_bound),
      cmocka_unit_test(test_memplan_validate_reports_broken_plans),
      cmocka_unit_test(test_memplan_5000_tensors_validate),
      cmocka_unit_test(test_memplan_codegen_uses_aliases),
      cmocka_unit_test(test_memplan_codegen_concat_output_slices),
      cmocka_unit_test(test_memplan_codegen_passes_scratch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
