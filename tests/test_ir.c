/* test_ir.c - unit tests of the IR: arena, shapes, graph editing, ordering,
 * verifier, and the text printer/reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "ir.h"

static Shape sh2(int64_t a, int64_t b) {
  int64_t d[2] = {a, b};
  return shape_make(2, d);
}

static void test_arena_alloc_zeroed_and_aligned(void **state) {
  (void)state;
  Arena *a = arena_new();
  for (int i = 1; i < 2000; i += 37) {
    unsigned char *p = arena_alloc(a, (size_t)i);
    assert_int_equal((uintptr_t)p % 16, 0);
    for (int k = 0; k < i; k++)
      assert_int_equal(p[k], 0);
    memset(p, 0xff, (size_t)i);
  }
  char *big = arena_alloc(a, 10u << 20);  /* dedicated chunk */
  assert_non_null(big);
  assert_string_equal(arena_printf(a, "%s-%d", "x", 7), "x-7");
  arena_free(a);
}

static void test_shape_broadcast_rules(void **state) {
  (void)state;
  Shape a = sh2(3, 1), b = shape_make(1, (int64_t[]){4}), out;
  assert_true(shape_broadcast(&a, &b, &out));
  assert_int_equal(out.rank, 2);
  assert_int_equal(out.d[0], 3);
  assert_int_equal(out.d[1], 4);
  Shape c = sh2(3, 2);
  assert_false(shape_broadcast(&c, &b, &out));
  Shape s = sh2(DIM_UNKNOWN, 5);
  s.sym[0] = "N";
  assert_true(shape_broadcast(&s, &b, &out) == false);  /* 5 vs 4 */
  Shape t = shape_make(1, (int64_t[]){5});
  assert_true(shape_broadcast(&s, &t, &out));
  assert_string_equal(out.sym[0], "N");
  char buf[64];
  assert_string_equal(shape_str(&out, buf, sizeof buf), "[N,5]");
}

static void test_shape_numel_overflow(void **state) {
  (void)state;
  Shape s = sh2((int64_t)1 << 40, (int64_t)1 << 40);
  int64_t n;
  assert_false(shape_numel(&s, &n));
  int64_t bytes;
  assert_false(dtype_bytes(DT_F32, INT64_MAX / 2, &bytes));
  assert_true(dtype_bytes(DT_I4, 3, &bytes));
  assert_int_equal(bytes, 2);
  Graph *g = ir_graph_new("t.onnx");
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  Shape big = sh2((int64_t)1 << 31, (int64_t)1 << 31);
  assert_null(ir_tensor_new(g, DT_F64, &big, &d));
  assert_int_equal(d.n_errors, 1);
  assert_non_null(strstr(diag_last(&d), "too large"));
  diag_free(&d);
  ir_graph_free(g);
}

static void test_f16_roundtrip(void **state) {
  (void)state;
  const float vals[] = {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
    assert_true(ir_f16_to_f32(ir_f32_to_f16(vals[i])) == vals[i]);
  assert_true(isinf(ir_f16_to_f32(ir_f32_to_f16(1e6f))));
  assert_true(isnan(ir_f16_to_f32(ir_f32_to_f16(NAN))));
  assert_true(ir_bf16_to_f32(ir_f32_to_bf16(1.5f)) == 1.5f);
}

/* x -> Relu -> Add(., x) -> out */
static Graph *small_graph(Node **relu, Node **add) {
  Graph *g = ir_graph_new("t.onnx");
  Shape s = sh2(2, 3);
  Value *x = ir_input_add(g, "x", DT_F32, &s);
  *relu = ir_node_new(g, OP_Relu, NULL, "r", 1, &x, 1);
  Value *in[2] = {(*relu)->out[0], x};
  *add = ir_node_new(g, OP_Add, NULL, "a", 2, in, 1);
  ir_output_add(g, (*add)->out[0]);
  return g;
}

static void test_graph_uses_and_replace(void **state) {
  (void)state;
  Node *relu, *add;
  Graph *g = small_graph(&relu, &add);
  Value *x = g->inputs[0];
  assert_int_equal(x->n_uses, 2);
  assert_int_equal(relu->out[0]->n_uses, 1);
  assert_ptr_equal(ir_value_find(g, "x"), x);
  ir_value_replace(relu->out[0], x);
  assert_int_equal(x->n_uses, 3);  /* add uses x twice now */
  assert_int_equal(relu->out[0]->n_uses, 0);
  ir_node_remove(relu);
  assert_int_equal(g->n_nodes, 1);
  assert_int_equal(x->n_uses, 2);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_true(ir_verify(g, false, &d));
  diag_free(&d);
  ir_graph_free(g);
}

/* An output slot keeps its ONNX name when a graph input or another output
 * takes its place (the value's own name then differs). */
static void test_output_names_survive_replace(void **state) {
  (void)state;
  Node *relu, *add;
  Graph *g = small_graph(&relu, &add);
  ir_output_add(g, relu->out[0]);
  add->out[0]->name = "sum";
  g->output_names[0] = "sum";
  ir_value_replace(add->out[0], relu->out[0]); /* one value in both slots */
  ir_value_replace(relu->out[0], g->inputs[0]);
  assert_ptr_equal(g->outputs[0], g->inputs[0]);
  assert_ptr_equal(g->outputs[1], g->inputs[0]);
  assert_string_equal(g->output_names[0], "sum");
  assert_string_equal(g->output_names[1], relu->out[0]->name);
  assert_string_equal(g->outputs[0]->name, "x");
  for (int i = 0; i < 40; i++) /* the names grow with the outputs */
    ir_output_add(g, g->inputs[0]);
  assert_int_equal(g->n_outputs, 42);
  assert_string_equal(g->output_names[0], "sum");
  assert_string_equal(g->output_names[41], "x");
  ir_graph_free(g);
}

static void test_value_names_unique(void **state) {
  (void)state;
  Graph *g = ir_graph_new(NULL);
  Value *a = ir_value_new(g, "v", DT_F32, NULL);
  Value *b = ir_value_new(g, "v", DT_F32, NULL);
  assert_string_not_equal(a->name, b->name);
  for (int i = 0; i < 1000; i++)
    ir_value_new(g, "w", DT_I64, NULL);
  assert_non_null(ir_value_find(g, "w_999"));
  ir_graph_free(g);
}

static void test_toposort_stable_and_reorders(void **state) {
  (void)state;
  Node *relu, *add;
  Graph *g = small_graph(&relu, &add);
  ir_node_move_before(add, relu);  /* now out of order */
  assert_ptr_equal(g->first, add);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_false(ir_verify(g, false, &d));  /* used before produced */
  diag_free(&d);
  diag_init(&d, "t.onnx", NULL);
  assert_true(ir_toposort(g, &d));
  assert_ptr_equal(g->first, relu);
  assert_ptr_equal(g->last, add);
  assert_true(ir_verify(g, false, &d));
  diag_free(&d);
  ir_graph_free(g);
}

static void test_toposort_reports_cycle(void **state) {
  (void)state;
  Graph *g = ir_graph_new("cyc.onnx");
  Shape s = sh2(1, 1);
  Value *x = ir_input_add(g, "x", DT_F32, &s);
  Value *in[2] = {x, x};
  Node *a = ir_node_new(g, OP_Add, NULL, "a", 2, in, 1);
  Node *b = ir_node_new(g, OP_Relu, NULL, "b", 1, &a->out[0], 1);
  ir_node_set_input(a, 1, b->out[0]);  /* a <- b <- a */
  ir_output_add(g, b->out[0]);
  Diag d;
  diag_init(&d, "cyc.onnx", NULL);
  assert_false(ir_toposort(g, &d));
  assert_int_equal(d.n_errors, 1);
  assert_non_null(strstr(d.msgs[0], "cyc.onnx: node '"));
  assert_non_null(strstr(d.msgs[0], "cycle"));
  diag_free(&d);
  ir_graph_free(g);
}

static void test_verify_catches_broken_uses(void **state) {
  (void)state;
  Node *relu, *add;
  Graph *g = small_graph(&relu, &add);
  g->inputs[0]->n_uses = 0;  /* corrupt the use list */
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_false(ir_verify(g, false, &d));
  assert_non_null(strstr(d.msgs[0], "use list"));
  diag_free(&d);
  diag_init(&d, "t.onnx", NULL);
  g->inputs[0]->n_uses = 2;
  assert_false(ir_verify(g, true, &d));  /* no inferred shapes yet */
  diag_free(&d);
  ir_graph_free(g);
}

static const char *const golden =
    "graph g opset 13\n"
    "input %x : f32[N,3]\n"
    "input %u : f32[?,12]\n"
    "const %w : f32[3] = [1.0, -2.5, 0.125]\n"
    "const %\"odd name/0\" : i64[2] = [7, -1]\n"
    "%y : f32[N,3] = Mul(%x, %w) @m\n"
    "%z : f32[N,3], _ = Dropout{ratio=0.5, axes=ints[1,2], mode=\"a b\"}(%y) @drop\n"
    "%r : f32[*] = Reshape(%z, %\"odd name/0\") @\"re shape\"\n"
    "output %r\n";

static void test_print_parse_roundtrip(void **state) {
  (void)state;
  Diag d;
  diag_init(&d, "golden", NULL);
  Graph *g = ir_parse(golden, "golden", &d);
  assert_non_null(g);
  assert_int_equal(d.n_errors, 0);
  assert_true(ir_verify(g, false, &d));
  Buf b;
  buf_init(&b);
  ir_print(g, &b);
  assert_string_equal(b.s, golden);
  /* And the printed text parses to the same text again. */
  Graph *g2 = ir_parse(b.s, "golden2", &d);
  assert_non_null(g2);
  Buf b2;
  buf_init(&b2);
  ir_print(g2, &b2);
  assert_string_equal(b.s, b2.s);
  buf_free(&b);
  buf_free(&b2);
  ir_graph_free(g);
  ir_graph_free(g2);
  diag_free(&d);
}

static void test_parse_errors_name_line(void **state) {
  (void)state;
  Diag d;
  diag_init(&d, "bad.ir", NULL);
  assert_null(ir_parse("graph g opset 13\ninput %x : f32[2]\n%y : f32[2] = Relu(%nope)\n", "bad.ir", &d));
  assert_non_null(strstr(diag_last(&d), "line 3"));
  assert_null(ir_parse("input %x : q77[2]\n", "bad.ir", &d));
  assert_null(ir_parse("input %x : f32[2\n", "bad.ir", &d));
  assert_int_equal(d.n_errors, 3);
  diag_free(&d);
}

static void test_op_table(void **state) {
  (void)state;
  assert_int_equal(ir_op_lookup("Conv"), OP_Conv);
  assert_int_equal(ir_op_lookup("NoSuchOp"), OP_Unknown_);
  assert_true(ir_ops[OP_Add].flags & OPF_EW);
  assert_non_null(ir_ops[OP_Add].expr);
  assert_null(ir_ops[OP_Conv].expr);
  assert_true(ir_ops[OP_Reshape].flags & OPF_VIEW);
}

static void test_attrs(void **state) {
  (void)state;
  Node *relu, *add;
  Graph *g = small_graph(&relu, &add);
  ir_attr_set_int(relu, "k", 3);
  int64_t v[3] = {1, 2, 3};
  ir_attr_set_ints(relu, "p", v, 3);
  ir_attr_add(relu, "f", AT_FLOAT)->u.f = 0.5f;
  assert_int_equal(ir_attr_int(relu, "k", 0), 3);
  assert_int_equal(ir_attr_int(relu, "missing", 9), 9);
  assert_true(ir_attr_float(relu, "f", 0) == 0.5f);
  int n;
  const int64_t *p = ir_attr_ints(relu, "p", &n);
  assert_int_equal(n, 3);
  assert_int_equal(p[2], 3);
  ir_attr_set_int(relu, "k", 4);  /* replaces */
  assert_int_equal(relu->n_attrs, 3);
  ir_attr_remove(relu, "k");
  assert_null(ir_attr(relu, "k"));
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arena_alloc_zeroed_and_aligned),
      cmocka_unit_test(test_shape_broadcast_rules),
      cmocka_unit_test(test_shape_numel_overflow),
      cmocka_unit_test(test_f16_roundtrip),
      cmocka_unit_test(test_graph_uses_and_replace),
      cmocka_unit_test(test_output_names_survive_replace),
      cmocka_unit_test(test_value_names_unique),
      cmocka_unit_test(test_toposort_stable_and_reorders),
      cmocka_unit_test(test_toposort_reports_cycle),
      cmocka_unit_test(test_verify_catches_broken_uses),
      cmocka_unit_test(test_print_parse_roundtrip),
      cmocka_unit_test(test_parse_errors_name_line),
      cmocka_unit_test(test_op_table),
      cmocka_unit_test(test_attrs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
