/* test_guard.c - unit tests of guard mode (docs/guard.md): the guarded plan
 * (passes/memplan.c), the validator's view of red zones, the tables and
 * checks the C emitter writes (codegen/c/emit_guard.c), and the runtime's
 * fill/check helpers (runtime/onnxc_rt.h). The whole path, a violation named
 * by `onnxc check --guard`, is tests/e2e/test_guard.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen.h"
#include "onnxc_rt.h"
#include "plan_util.h"
#include "target_util.h"
#include "codegen_util.h"

/* x[4,16] -> a[4,32] -> r (Relu, in place) -> b[4,64] -> c[4,10] -> y (outputs). */
static Graph *chain(void) {
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *a = pu_op2(g, OP_MatMul, "a", x, pu_weight(g, "w1", 16, 32));
  Value *r = pu_op1(g, OP_Relu, "r", a);
  Value *b = pu_op2(g, OP_MatMul, "b", r, pu_weight(g, "w2", 32, 64));
  Value *c = pu_op2(g, OP_MatMul, "c", b, pu_weight(g, "w3", 64, 10));
  ir_output_add(g, pu_op2(g, OP_MatMul, "y", c, pu_weight(g, "w4", 10, 8)));
  assert_true(pu_infer(g));
  return g;
}

static void plan(Graph *g, Plan *p, int64_t redzone) {
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_memplan_guarded(g, p, onnxc_test_target(), redzone, &d));
  assert_true(plan_validate(g, p, &d));
  diag_free(&d);
}

static int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }

/* Every buffer keeps its exact bytes between two red zones that no buffer
 * live at the same time touches; the arena grows; redzone 0 is the plain plan. */
static void test_guard_plan_fences_every_buffer(void **state) {
  (void)state;
  Graph *g = chain();
  Plan plain, p0, pg;
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_memplan(g, &plain, onnxc_test_target(), &d));
  diag_free(&d);
  plan(g, &p0, 0);
  plan(g, &pg, PLAN_REDZONE);
  assert_int_equal(p0.arena_bytes, plain.arena_bytes);
  assert_int_equal(p0.n_tensors, plain.n_tensors);
  for (int i = 0; i < p0.n_tensors; i++)
    assert_memory_equal(&p0.tensors[i], &plain.tensors[i], sizeof(PlanTensor));
  assert_int_equal(plain.redzone, 0);
  assert_int_equal(pg.redzone, PLAN_REDZONE);
  assert_int_equal(pg.n_tensors, plain.n_tensors);
  assert_true(pg.arena_bytes > plain.arena_bytes);
  for (int i = 0; i < pg.n_tensors; i++) {
    const PlanTensor *t = &pg.tensors[i];
    assert_int_equal(t->offset % PLAN_ALIGN, 0);
    assert_true(t->offset - PLAN_REDZONE >= PLAN_GUARD_HEADER);
    assert_true(align64(t->offset + t->size) + PLAN_REDZONE <= pg.arena_bytes);
    const Value *v = g->values[t->value_id];
    int64_t n;
    assert_true(shape_numel(&v->shape, &n));
    assert_int_equal(t->size, n * 4); /* exact bytes, not rounded up */
    for (int j = 0; j < pg.n_tensors; j++) {
      const PlanTensor *u = &pg.tensors[j];
      if (j == i || u->first > t->last || t->first > u->last)
        continue;
      bool apart = u->offset >= align64(t->offset + t->size) + PLAN_REDZONE ||
                   t->offset >= align64(u->offset + u->size) + PLAN_REDZONE;
      assert_true(apart);
    }
  }
  ir_graph_free(g);
}

/* A buffer moved into a live neighbour's red zone is an overlap. */
static void test_guard_validate_sees_red_zones(void **state) {
  (void)state;
  Graph *g = chain();
  Plan p;
  plan(g, &p, PLAN_REDZONE);
  int ia = -1, ib = -1;
  for (int i = 0; i < p.n_tensors; i++) {
    const char *nm = g->values[p.tensors[i].value_id]->name;
    if (strcmp(nm, "a") == 0)
      ia = i;
    if (strcmp(nm, "b") == 0)
      ib = i;
  }
  assert_true(ia >= 0 && ib >= 0); /* a (and r in place) is read by b's MatMul */
  p.tensors[ib].offset = align64(p.tensors[ia].offset + p.tensors[ia].size);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_false(plan_validate(g, &p, &d));
  bool overlap = false;
  for (int i = 0; i < d.n_msgs; i++)
    overlap |= strstr(d.msgs[i], "'a' and 'b' are live together but overlap in memory") != NULL ||
               strstr(d.msgs[i], "'b' and 'a' are live together but overlap in memory") != NULL;
  assert_true(overlap);
  diag_free(&d);
  ir_graph_free(g);
}


static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
    n++;
  return n;
}

/* Guarded code: a region table from the plan, a fill and a check per step,
 * the report; unguarded code has none of it. */
static void test_guard_codegen_tables_and_checks(void **state) {
  (void)state;
  Graph *g = chain();
  Plan p;
  char *c, *h;
  plan(g, &p, PLAN_REDZONE);
  c = cu_generate(g, &p, &h);
  assert_non_null(strstr(c, "static const onnxc_guard_region m_guard_regions["));
  for (int i = 0; i < p.n_tensors; i++) {
    char row[128];
    snprintf(row, sizeof row, "  {%lld, %lld, %d, %d},\n", (long long)p.tensors[i].offset,
             (long long)p.tensors[i].size, p.tensors[i].first, p.tensors[i].last);
    assert_non_null(strstr(c, row));
  }
  assert_non_null(strstr(c, "\"tensor 'b'\""));
  assert_non_null(strstr(c, "{\"r\", \"Relu\", \"Relu\"}")); /* the step table (name, op, what it computes) */
  assert_int_equal(count(c, "onnxc_guard_fill(a,"), g->n_nodes);
  assert_int_equal(count(c, "onnxc_guard_check(a,"), g->n_nodes);
  assert_int_equal(count(c, "onnxc_guard_begin(a,"), 1);
  assert_non_null(strstr(c, "ONNXC_API int m_guard_report(const void *arena, m_guard_info *info)"));
  assert_non_null(strstr(h, "int m_guard_report(const void *arena, m_guard_info *info);"));
  free(c);
  free(h);
  plan(g, &p, 0);
  c = cu_generate(g, &p, &h);
  assert_null(strstr(c, "guard"));
  assert_null(strstr(h, "guard"));
  free(c);
  free(h);
  ir_graph_free(g);
}

/* The runtime helpers: the red zones of a buffer are filled at its first
 * step, a write one byte past it is found at any step it is live, and the
 * record names the region, the step, the side and the byte. */
static void test_guard_runtime_finds_the_first_changed_byte(void **state) {
  (void)state;
  static unsigned char arena[1024] __attribute__((aligned(64)));
  const onnxc_guard_region r[2] = {{128, 100, 0, 2}, {384, 64, 1, 1}};
  onnxc_guard_begin(arena, sizeof arena);
  onnxc_guard_fill(arena, r, 2, 64, 0);
  memset(arena + 128, 1, 100); /* step 0 writes its whole buffer, no more */
  assert_int_equal(onnxc_guard_check(arena, r, 2, 64, 0), 0);
  memset(arena + 384 - 64, 7, 64); /* bytes of region 1's zone, before it is live */
  onnxc_guard_fill(arena, r, 2, 64, 1);
  memset(arena + 384, 2, 64);
  assert_int_equal(onnxc_guard_check(arena, r, 2, 64, 1), 0);
  arena[128 + 100] = 0; /* one byte past region 0, during step 2 */
  assert_int_equal(onnxc_guard_check(arena, r, 2, 64, 2), ONNXC_ERR_GUARD);
  const onnxc_guard_hit *hit = (const onnxc_guard_hit *)(const void *)arena;
  assert_int_equal(hit->magic, ONNXC_GUARD_MAGIC);
  assert_int_equal(hit->step, 2);
  assert_int_equal(hit->region, 0);
  assert_int_equal(hit->after, 1);
  assert_int_equal(hit->at, 228);
  /* Before the buffer: the leading zone. */
  onnxc_guard_begin(arena, sizeof arena);
  onnxc_guard_fill(arena, r, 2, 64, 1);
  arena[384 - 3] = 0;
  assert_int_equal(onnxc_guard_check(arena, r, 2, 64, 1), ONNXC_ERR_GUARD);
  assert_int_equal(hit->region, 1);
  assert_int_equal(hit->after, 0);
  assert_int_equal(hit->at, 381);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_guard_plan_fences_every_buffer),
      cmocka_unit_test(test_guard_validate_sees_red_zones),
      cmocka_unit_test(test_guard_codegen_tables_and_checks),
      cmocka_unit_test(test_guard_runtime_finds_the_first_changed_byte),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
