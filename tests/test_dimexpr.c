/* test_dimexpr.c - bounded symbolic extents (ir/dimexpr.c): canonical forms,
 * arithmetic, bounds, floor divisions into derived symbols, printing, and
 * shapes with such dims (docs/dynamic-shapes.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "ir.h"

static Graph *two_syms(void) {
  Graph *g = ir_graph_new("t.onnx");
  g->syms[0] = (DimSym){.name = "seq", .lo = 1, .hi = 512};
  g->syms[1] = (DimSym){.name = "b", .lo = 2, .hi = 8};
  g->n_syms = 2;
  return g;
}

static const char *show(const Graph *g, const DimExpr *x, const char *c_dims) {
  static char out[256];
  Buf b;
  buf_init(&b);
  dx_print(g, x, c_dims, &b);
  snprintf(out, sizeof out, "%s", b.s);
  buf_free(&b);
  return out;
}

static void test_canonical_equality(void **state) {
  (void)state;
  Graph *g = two_syms();
  Arena *a = g->arena;
  const DimExpr *s = dx_sym(a, 0), *b = dx_sym(a, 1);
  /* (seq + 1) * b and b * seq + b are the same polynomial */
  const DimExpr *x = dx_mul(a, dx_add(a, s, dx_const(a, 1)), b);
  const DimExpr *y = dx_add(a, dx_mul(a, b, s), b);
  assert_true(dx_equal(x, y));
  assert_false(dx_equal(x, dx_mul(a, s, b)));
  /* like terms cancel: seq*128 - seq*64 - 64*seq is the constant 0 */
  int64_t c = -1;
  const DimExpr *z = dx_sub(a, dx_sub(a, dx_mul(a, s, dx_const(a, 128)), dx_mul(a, s, dx_const(a, 64))),
                            dx_mul(a, dx_const(a, 64), s));
  assert_true(dx_is_const(z, &c));
  assert_int_equal(c, 0);
  /* a negative slope is refused: seq*64 - seq*128 */
  assert_null(dx_sub(a, dx_mul(a, s, dx_const(a, 64)), dx_mul(a, s, dx_const(a, 128))));
  ir_graph_free(g);
}

static void test_bounds_and_monotone(void **state) {
  (void)state;
  Graph *g = two_syms();
  Arena *a = g->arena;
  const DimExpr *s = dx_sym(a, 0), *b = dx_sym(a, 1);
  int64_t lo, hi;
  const DimExpr *x = dx_add(a, dx_mul(a, s, s), dx_mul(a, b, dx_const(a, 3))); /* seq^2 + 3b */
  assert_true(dx_bounds(g, x, &lo, &hi));
  assert_int_equal(lo, 1 + 6);
  assert_int_equal(hi, 512 * 512 + 24);
  /* seq - 1 is fine (only the constant is negative); 1 - seq is refused */
  assert_non_null(dx_sub(a, s, dx_const(a, 1)));
  assert_null(dx_sub(a, dx_const(a, 1), s));
  int64_t vals[2] = {7, 3}, v;
  assert_true(dx_eval(x, vals, &v));
  assert_int_equal(v, 49 + 9);
  ir_graph_free(g);
}

static void test_division(void **state) {
  (void)state;
  Graph *g = two_syms();
  Arena *a = g->arena;
  const DimExpr *s = dx_sym(a, 0);
  /* exact: (128 seq) / 64 = 2 seq; inexact: NULL */
  const DimExpr *x = dx_div_exact(a, dx_mul(a, s, dx_const(a, 128)), 64);
  assert_true(dx_equal(x, dx_mul(a, s, dx_const(a, 2))));
  assert_null(dx_div_exact(a, dx_add(a, s, dx_const(a, 1)), 2));
  /* floor((seq + 1) / 2) becomes a derived symbol, once */
  int before = g->n_syms;
  const DimExpr *f = dx_floordiv(g, dx_add(a, s, dx_const(a, 1)), 2);
  const DimExpr *f2 = dx_floordiv(g, dx_add(a, s, dx_const(a, 1)), 2);
  assert_non_null(f);
  assert_int_equal(g->n_syms, before + 1);
  assert_true(dx_equal(f, f2));
  const DimSym *d = &g->syms[before];
  assert_int_equal(d->den, 2);
  assert_int_equal(d->lo, 1);
  assert_int_equal(d->hi, 256);
  assert_string_equal(d->name, "floor((seq+1)/2)");
  assert_int_equal(dx_user_syms(g), 2);
  /* divisible: no new symbol */
  const DimExpr *e = dx_floordiv(g, dx_mul(a, s, dx_const(a, 4)), 2);
  assert_int_equal(g->n_syms, before + 1);
  assert_true(dx_equal(e, dx_mul(a, s, dx_const(a, 2))));
  /* possibly negative numerator: refused */
  assert_null(dx_floordiv(g, dx_sub(a, s, dx_const(a, 5)), 2));
  /* a multiple of the divisor plus a constant: floor((32 seq + 1) / 2) = 16 seq,
   * floor((32 seq + 31) / 16) = 2 seq + 1, no new symbol */
  int n0 = g->n_syms;
  assert_true(dx_equal(dx_floordiv(g, dx_add(a, dx_mul(a, s, dx_const(a, 32)), dx_const(a, 1)), 2),
                       dx_mul(a, s, dx_const(a, 16))));
  assert_true(dx_equal(dx_floordiv(g, dx_add(a, dx_mul(a, s, dx_const(a, 32)), dx_const(a, 31)), 16),
                       dx_add(a, dx_mul(a, s, dx_const(a, 2)), dx_const(a, 1))));
  assert_int_equal(g->n_syms, n0);
  ir_graph_free(g);
}

/* -D H=32..640:32: the symbol is H / 32, printed so. */
static void test_step(void **state) {
  (void)state;
  Graph *g = ir_graph_new("t.onnx");
  g->syms[0] = (DimSym){.name = "H", .lo = 1, .hi = 20, .step = 32};
  g->n_syms = 1;
  Arena *a = g->arena;
  const DimExpr *h = dx_mul(a, dx_sym(a, 0), dx_const(a, 32));
  assert_string_equal(show(g, h, NULL), "32*(H/32)");
  int64_t lo, hi;
  assert_true(dx_bounds(g, h, &lo, &hi));
  assert_int_equal(lo, 32);
  assert_int_equal(hi, 640);
  ir_graph_free(g);
}

static void test_printing(void **state) {
  (void)state;
  Graph *g = two_syms();
  Arena *a = g->arena;
  const DimExpr *s = dx_sym(a, 0), *b = dx_sym(a, 1);
  const DimExpr *x = dx_add(a, dx_mul(a, dx_mul(a, s, b), dx_const(a, 64)), dx_const(a, 3));
  assert_string_equal(show(g, x, NULL), "64*seq*b+3");
  assert_string_equal(show(g, x, "dims"), "((int64_t)64*dims[0]*dims[1]+(int64_t)3)");
  assert_string_equal(show(g, dx_sub(a, s, dx_const(a, 1)), NULL), "seq-1");
  ir_graph_free(g);
}

static void test_shapes(void **state) {
  (void)state;
  Graph *g = two_syms();
  Arena *a = g->arena;
  Shape x = shape_make(3, (int64_t[]){1, 0, 128}), y = shape_make(4, (int64_t[]){2, 1, 1, 0}), o;
  shape_set_dx(g, &x, 1, dx_sym(a, 0));
  shape_set_dx(g, &y, 3, dx_sym(a, 0));
  assert_true(shape_is_bounded(&x));
  assert_false(shape_is_static(&x));
  int64_t n;
  assert_true(shape_numel_max(g, &x, &n));
  assert_int_equal(n, 512 * 128);
  char buf[64];
  assert_string_equal(shape_str(&x, buf, sizeof buf), "[1,seq,128]");
  /* seq against 1 broadcasts; seq against seq matches; seq against 128 does not */
  Shape m = shape_make(4, (int64_t[]){1, 2, 0, 0});
  shape_set_dx(g, &m, 2, dx_sym(a, 0));
  shape_set_dx(g, &m, 3, dx_sym(a, 0));
  assert_true(shape_broadcast(&m, &y, &o));
  assert_string_equal(shape_str(&o, buf, sizeof buf), "[2,2,seq,seq]");
  Shape w = shape_make(3, (int64_t[]){1, 128, 128});
  assert_false(shape_broadcast(&x, &w, &o));
  /* a constant expression makes a static dim */
  shape_set_dx(g, &x, 1, dx_const(a, 9));
  assert_true(shape_is_static(&x));
  assert_int_equal(x.d[1], 9);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_canonical_equality), cmocka_unit_test(test_bounds_and_monotone),
      cmocka_unit_test(test_division), cmocka_unit_test(test_printing), cmocka_unit_test(test_step),
      cmocka_unit_test(test_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
