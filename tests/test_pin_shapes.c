/* test_pin_shapes.c - --shape NAME=AxBx... (passes/shapes_static.c): the
 * parser's refusals, and pass_pin_shapes on inputs whose dims are unnamed, share
 * one name, are static, or are pinned by -D. */
#include "test_util.h"

#include <stdlib.h>

static void parse_fails(const char *spec, const char *why) {
  InputShape s;
  char err[256] = "";
  if (input_shape_parse(spec, &s, err, sizeof err))
    fail_msg("'%s' parsed", spec);
  if (!strstr(err, why))
    fail_msg("'%s': message '%s' lacks '%s'", spec, err, why);
  assert_null(s.name);
}

static void test_input_shape_parse_accepts_extents(void **state) {
  (void)state;
  InputShape s;
  char err[256];
  assert_true(input_shape_parse("x=1x3x48x192", &s, err, sizeof err));
  assert_string_equal(s.name, "x");
  assert_int_equal(s.rank, 4);
  assert_int_equal(s.d[0], 1);
  assert_int_equal(s.d[3], 192);
  free((char *)s.name);
  /* the last '=' splits, so a name may hold one */
  assert_true(input_shape_parse("a=b=7", &s, err, sizeof err));
  assert_string_equal(s.name, "a=b");
  assert_int_equal(s.rank, 1);
  assert_int_equal(s.d[0], 7);
  free((char *)s.name);
  /* a dim name in place of an extent, for -D to fix or bound */
  assert_true(input_shape_parse("x=1x3x48xW_1", &s, err, sizeof err));
  assert_int_equal(s.rank, 4);
  assert_int_equal(s.d[2], 48);
  assert_string_equal(s.sym[2], "");
  assert_int_equal(s.d[3], -1);
  assert_string_equal(s.sym[3], "W_1");
  free((char *)s.name);
}

static void test_input_shape_parse_refuses_bad_specs(void **state) {
  (void)state;
  parse_fails("x", "expected NAME=");
  parse_fails("=1x2", "expected NAME=");
  parse_fails("x=", "no extents");
  parse_fails("x=1x3x", "empty");
  parse_fails("x=1xx3", "empty");
  parse_fails("x=1x0x3", "at least 1");
  parse_fails("x=1x-3", "'-3' is not a positive integer");
  parse_fails("x=1,3", "'1,3' is not a positive integer");
  parse_fails("x=1x3Ax3", "'3A' is not a positive integer");
  parse_fails("x=1xA-x3", "'A-' is neither a positive integer nor a dim name");
  parse_fails("x=99999999999999999999", "too large");
  parse_fails("x=4294967296x4294967296", "overflows");
  parse_fails("x=1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1", "more than 16");
}

/* x: [?, 3, '?', '?'] as Paddle2ONNX writes it; y: [N, 4]. */
static Graph *two_inputs(void) {
  Graph *g = gnew(13);
  Value *x = tin(g, "x", DT_F32, 4, (int64_t[]){DIM_UNKNOWN, 3, DIM_UNKNOWN, DIM_UNKNOWN});
  x->shape.sym[2] = x->shape.sym[3] = "?";
  Value *y = tin(g, "y", DT_F32, 2, (int64_t[]){DIM_UNKNOWN, 4});
  y->shape.sym[0] = "N";
  return g;
}

static const char *pin_fails(const char *spec, const DimPin *pins, int n_pins) {
  static char msg[1024];
  Graph *g = two_inputs();
  InputShape s;
  char err[256];
  assert_true(input_shape_parse(spec, &s, err, sizeof err));
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_false(pass_pin_shapes(g, &s, 1, pins, n_pins, &d));
  assert_int_equal(d.n_errors, 1);
  snprintf(msg, sizeof msg, "%s", diag_last(&d));
  diag_free(&d);
  free((char *)s.name);
  ir_graph_free(g);
  return msg;
}

static void test_pin_shapes_sets_dims_sharing_a_name(void **state) {
  (void)state;
  Graph *g = two_inputs();
  InputShape s[2];
  char err[256];
  assert_true(input_shape_parse("x=1x3x48x192", &s[0], err, sizeof err));
  assert_true(input_shape_parse("y=2x4", &s[1], err, sizeof err));
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_true(pass_pin_shapes(g, s, 2, NULL, 0, &d));
  const Shape *x = &g->inputs[0]->shape;
  assert_int_equal(x->d[0], 1);
  assert_int_equal(x->d[2], 48);
  assert_int_equal(x->d[3], 192);
  assert_null(x->sym[2]);
  assert_true(shape_is_static(&g->inputs[1]->shape));
  diag_free(&d);
  free((char *)s[0].name);
  free((char *)s[1].name);
  ir_graph_free(g);
  /* a name for an unnamed dim: left symbolic under that name for -D */
  g = two_inputs();
  assert_true(input_shape_parse("x=1x3x48xW", &s[0], err, sizeof err));
  diag_init(&d, "t.onnx", NULL);
  assert_true(pass_pin_shapes(g, s, 1, NULL, 0, &d));
  x = &g->inputs[0]->shape;
  assert_int_equal(x->d[2], 48);
  assert_true(x->d[3] < 0);
  assert_string_equal(x->sym[3], "W");
  diag_free(&d);
  free((char *)s[0].name);
  ir_graph_free(g);
}

static void test_pin_shapes_reports_conflicts(void **state) {
  (void)state;
  const char *m = pin_fails("z=1x2", NULL, 0);
  assert_non_null(strstr(m, "no graph input 'z' (its inputs: 'x', 'y')"));
  m = pin_fails("x=1x3x48", NULL, 0);
  assert_non_null(strstr(m, "input 'x' has rank 4"));
  assert_non_null(strstr(m, "not 3"));
  m = pin_fails("x=1xCx48x192", NULL, 0);
  assert_non_null(strstr(m, "dimension 1 of input 'x' is 3 in the model"));
  assert_non_null(strstr(m, "not a dim to name 'C'"));
  m = pin_fails("x=1x4x48x192", NULL, 0);
  assert_non_null(strstr(m, "dimension 1 of input 'x' is 3 in the model"));
  DimPin pin = {.name = "N", .value = 5};
  m = pin_fails("y=2x4", &pin, 1);
  assert_non_null(strstr(m, "pinned to 5 by -D N=5, not 2"));
}

static void test_pin_shapes_refuses_twice_and_weights(void **state) {
  (void)state;
  Graph *g = two_inputs();
  ints_const(g, "w", 2, (int64_t[]){1, 2});
  InputShape s[2];
  char err[256];
  assert_true(input_shape_parse("y=2x4", &s[0], err, sizeof err));
  assert_true(input_shape_parse("y=3x4", &s[1], err, sizeof err));
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_false(pass_pin_shapes(g, s, 2, NULL, 0, &d));
  assert_non_null(strstr(diag_last(&d), "given twice"));
  diag_free(&d);
  free((char *)s[1].name);
  assert_true(input_shape_parse("w=2", &s[1], err, sizeof err));
  diag_init(&d, "t.onnx", NULL);
  assert_false(pass_pin_shapes(g, &s[1], 1, NULL, 0, &d));
  assert_non_null(strstr(diag_last(&d), "'w' is a weight"));
  diag_free(&d);
  free((char *)s[0].name);
  free((char *)s[1].name);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_input_shape_parse_accepts_extents),
      cmocka_unit_test(test_input_shape_parse_refuses_bad_specs),
      cmocka_unit_test(test_pin_shapes_sets_dims_sharing_a_name),
      cmocka_unit_test(test_pin_shapes_reports_conflicts),
      cmocka_unit_test(test_pin_shapes_refuses_twice_and_weights),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
