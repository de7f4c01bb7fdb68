/* test_rewrite.c - unit tests of the rewriting passes' shared rules
 * (passes/rewrite.c): values a subgraph captures by name are never replaced
 * or dropped by simplify, cse, fuse-bn or dce, since a capture records no use
 * on the outer value; and the passes are no-ops on graphs they cannot improve.
 * Golden IR tests (tests/golden/) cover the rewrites themselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "passes.h"

static Graph *parse(const char *text) {
  Diag d;
  diag_init(&d, "t", NULL);
  Graph *g = ir_parse(text, "t", &d);
  if (!g)
    fail_msg("parse: %s", diag_last(&d));
  diag_free(&d);
  return g;
}

/* Gives node `host` a subgraph attribute whose body captures outer `name`. */
static void capture(Graph *g, const char *host, const char *name) {
  Node *n = NULL;
  for (Node *m = g->first; m; m = m->next)
    if (strcmp(m->name, host) == 0)
      n = m;
  assert_non_null(n);
  const Value *v = ir_value_find(g, name);
  assert_non_null(v);
  Graph *body = ir_subgraph_new(g, "body");
  ir_capture_add(body, name, v->dt, &v->shape);
  ir_attr_add(n, arena_printf(g->arena, "body_%s", name), AT_GRAPH)->u.g = body;
}

static bool has_node(const Graph *g, const char *name) {
  for (const Node *n = g->first; n; n = n->next)
    if (strcmp(n->name, name) == 0)
      return true;
  return false;
}

static void run(Graph *g, bool (*pass)(Graph *, Diag *)) {
  Diag d;
  diag_init(&d, "t", NULL);
  assert_true(pass(g, &d));
  assert_true(ir_verify(g, true, &d));
  diag_free(&d);
}

static const char *const k_graph =
    "graph g opset 13\n"
    "input %x : f32[1,2,2,2]\n"
    "const %w : f32[2,2,1,1] = [1.0, 0.0, 0.0, 1.0]\n"
    "const %k : f32[2,1,1] = [2.0, 3.0]\n"
    "%i : f32[1,2,2,2] = Identity(%x) @id\n"
    "%a1 : f32[1,2,2,2] = Relu(%x) @relu1\n"
    "%a2 : f32[1,2,2,2] = Relu(%x) @relu2\n"
    "%y : f32[1,2,2,2] = Conv{kernel_shape=ints[1,1]}(%x, %w) @conv\n"
    "%m : f32[1,2,2,2] = Mul(%y, %k) @mul\n"
    "%s : f32[1,2,2,2] = Add(%a1, %m) @add\n"
    "%h : f32[1,2,2,2] = Sigmoid(%s) @host\n"
    "output %h\n";

static void test_rewrite_captured_marks_outer_values(void **state) {
  (void)state;
  Graph *g = parse(k_graph);
  Captured none = rewrite_captured(g);
  assert_null(none.by_id);
  assert_false(rewrite_is_captured(&none, ir_value_find(g, "i")));
  capture(g, "host", "i");
  Captured c = rewrite_captured(g);
  assert_true(rewrite_is_captured(&c, ir_value_find(g, "i")));
  assert_false(rewrite_is_captured(&c, ir_value_find(g, "a1")));
  /* values made after the set was computed are never captured */
  Value *late = ir_value_new(g, "late", DT_F32, NULL);
  assert_false(rewrite_is_captured(&c, late));
  ir_graph_free(g);
}

static void test_rewrite_passes_keep_captured_values(void **state) {
  (void)state;
  Graph *g = parse(k_graph);
  capture(g, "host", "i");   /* Identity output: simplify would forward it */
  capture(g, "host", "a2");  /* duplicate Relu: cse would merge it, dce drop it */
  capture(g, "host", "y");   /* Conv output: fuse-bn would fold the Mul into it */
  run(g, pass_simplify);
  run(g, pass_fuse_bn);
  run(g, pass_cse);
  run(g, pass_dce);
  assert_true(has_node(g, "id"));
  assert_true(has_node(g, "relu2"));
  assert_true(has_node(g, "mul"));
  assert_ptr_equal(ir_value_find(g, "y")->producer->in[1], ir_value_find(g, "w"));
  ir_graph_free(g);
}

static void test_rewrite_passes_fire_without_captures(void **state) {
  (void)state;
  Graph *g = parse(k_graph);
  run(g, pass_simplify);
  run(g, pass_fuse_bn);
  run(g, pass_cse);
  run(g, pass_dce);
  assert_false(has_node(g, "id"));
  assert_false(has_node(g, "relu2"));
  assert_false(has_node(g, "mul"));
  assert_int_equal(g->n_nodes, 4);  /* relu1, conv, add, host */
  ir_graph_free(g);
}

static void test_rewrite_passes_are_idempotent(void **state) {
  (void)state;
  Graph *g = parse(k_graph);
  bool (*const passes[])(Graph *, Diag *) = {pass_simplify, pass_fuse_bn, pass_cse, pass_dce};
  for (int i = 0; i < 4; i++)
    run(g, passes[i]);
  Buf once, twice;
  buf_init(&once);
  buf_init(&twice);
  ir_print(g, &once);
  for (int i = 0; i < 4; i++)
    run(g, passes[i]);
  ir_print(g, &twice);
  assert_string_equal(once.s, twice.s);
  buf_free(&once);
  buf_free(&twice);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rewrite_captured_marks_outer_values),
      cmocka_unit_test(test_rewrite_passes_keep_captured_values),
      cmocka_unit_test(test_rewrite_passes_fire_without_captures),
      cmocka_unit_test(test_rewrite_passes_are_idempotent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
