/* test_memplan_place.c - the offset placement's exact search is bounded
 * (passes/memplan_place.c): an instance on which the unbounded search ran
 * for seconds now stops at MEMPLAN_EXACT_WORK units with a valid placement,
 * the same on every run. Found by random search over 30-40 buffers (the
 * fuzzer's slow model had 34 nodes, tests/fuzz/). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <time.h>

#include "memplan_internal.h"

/* {value_id, node_id, offset, size, first, last}: 36 buffers on which the
 * search capped at a million nodes took 0.8 s (optimized build) per call. */
static const PlanTensor hard[] = {
    {0, -1, 0, 640, 21, 21},   {1, -1, 0, 64, 19, 20},    {2, -1, 0, 2112, 34, 34},
    {3, -1, 0, 1408, 32, 33},  {4, -1, 0, 1600, 29, 30},  {5, -1, 0, 192, 21, 22},
    {6, -1, 0, 1280, 30, 32},  {7, -1, 0, 256, 27, 30},   {8, -1, 0, 384, 24, 24},
    {9, -1, 0, 1536, 34, 35},  {10, -1, 0, 192, 13, 15},  {11, -1, 0, 2240, 28, 30},
    {12, -1, 0, 1408, 32, 35}, {13, -1, 0, 64, 13, 13},   {14, -1, 0, 192, 22, 24},
    {15, -1, 0, 128, 33, 33},  {16, -1, 0, 2432, 29, 29}, {17, -1, 0, 2240, 30, 30},
    {18, -1, 0, 256, 7, 9},    {19, -1, 0, 2112, 23, 23}, {20, -1, 0, 1600, 26, 31},
    {21, -1, 0, 384, 14, 16},  {22, -1, 0, 640, 23, 26},  {23, -1, 0, 128, 31, 34},
    {24, -1, 0, 64, 23, 24},   {25, -1, 0, 192, 7, 9},    {26, -1, 0, 64, 21, 25},
    {27, -1, 0, 1280, 2, 2},   {28, -1, 0, 256, 25, 26},  {29, -1, 0, 256, 2, 2},
    {30, -1, 0, 128, 19, 26},  {31, -1, 0, 1792, 18, 20}, {32, -1, 0, 1600, 19, 20},
    {33, -1, 0, 64, 19, 21},   {34, -1, 0, 1920, 7, 8},   {35, -1, 0, 1216, 8, 9},
};
#define N_HARD ((int)(sizeof hard / sizeof hard[0]))

/* Most bytes live at one step. */
static int64_t lower_bound(const PlanTensor *ts, int n) {
  int64_t best = 0;
  for (int s = 0; s < 64; s++) {
    int64_t live = 0;
    for (int t = 0; t < n; t++)
      live += ts[t].first <= s && s <= ts[t].last ? ts[t].size : 0;
    best = live > best ? live : best;
  }
  return best;
}

/* Aligned, inside the arena, and no two buffers live at once share a byte. */
static void assert_valid(const PlanTensor *ts, int n, int64_t arena) {
  for (int i = 0; i < n; i++) {
    assert_true(ts[i].offset >= 0 && ts[i].offset % PLAN_ALIGN == 0);
    assert_true(ts[i].offset + ts[i].size <= arena);
    for (int j = i + 1; j < n; j++) {
      bool live = ts[i].first <= ts[j].last && ts[j].first <= ts[i].last;
      bool mem = ts[i].offset < ts[j].offset + ts[j].size && ts[j].offset < ts[i].offset + ts[i].size;
      if (live && mem)
        fail_msg("buffers %d and %d overlap in time and memory", i, j);
    }
  }
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void test_place_exact_search_stops_at_its_budget(void **state) {
  (void)state;
  PlanTensor ts[N_HARD];
  memcpy(ts, hard, sizeof hard);
  int64_t lb = lower_bound(ts, N_HARD);
  const char *strategy;
  long work;
  double t0 = seconds();
  int64_t arena = memplan_place_work(ts, N_HARD, lb, &strategy, &work);
  double dt = seconds() - t0;
  /* The greedy orders miss the bound, the search runs and is cut: the
   * instance still exercises the budget... */
  assert_true(arena > lb);
  assert_true(work > MEMPLAN_EXACT_WORK);
  /* ...and overshoots it by at most one search node's own work. */
  assert_true(work <= MEMPLAN_EXACT_WORK + 8L * (N_HARD + 1) * (N_HARD + 1));
  assert_valid(ts, N_HARD, arena);
  /* Generous for sanitized Debug builds; the budget is ~50 ms optimized. */
  if (dt > 5.0)
    fail_msg("placing %d buffers took %.2f s", N_HARD, dt);
}

static void test_place_bounded_search_is_deterministic(void **state) {
  (void)state;
  PlanTensor a[N_HARD], b[N_HARD];
  memcpy(a, hard, sizeof hard);
  memcpy(b, hard, sizeof hard);
  int64_t lb = lower_bound(a, N_HARD);
  const char *sa, *sb;
  long wa, wb;
  int64_t arena_a = memplan_place_work(a, N_HARD, lb, &sa, &wa);
  int64_t arena_b = memplan_place_work(b, N_HARD, lb, &sb, &wb);
  assert_int_equal(arena_a, arena_b);
  assert_int_equal(wa, wb);
  assert_string_equal(sa, sb);
  for (int t = 0; t < N_HARD; t++)
    assert_int_equal(a[t].offset, b[t].offset);
}

/* A smaller instance of the same kind stays exact: the budget only cuts
 * searches that would have run long. */
static void test_place_small_instance_still_solved_exactly(void **state) {
  (void)state;
  PlanTensor ts[] = {{0, -1, 0, 192, 2, 9}, {1, -1, 0, 192, 3, 5}, {2, -1, 0, 384, 0, 1},
                     {3, -1, 0, 256, 0, 4}, {4, -1, 0, 384, 5, 9}};
  const char *strategy;
  long work;
  int64_t arena = memplan_place_work(ts, 5, 768, &strategy, &work);
  assert_int_equal(arena, 768);
  assert_string_equal(strategy, "exact");
  assert_true(work > 0 && work <= MEMPLAN_EXACT_WORK);
  assert_valid(ts, 5, arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_place_exact_search_stops_at_its_budget),
      cmocka_unit_test(test_place_bounded_search_is_deterministic),
      cmocka_unit_test(test_place_small_instance_still_solved_exactly),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
