/* bench_memplan.c - time of the memory planner and the scheduler on large
 * synthetic graphs (random DAGs, plan_util.h). Not a test: it prints, per
 * graph, the tensors planned, the milliseconds of pass_memplan and of
 * pass_schedule (CPU time), the arena over the lower bound of the model's
 * order, and the arena after scheduling over the arena before. The planner's
 * budget is 50 ms for 5,000 tensors (docs/memory.md).
 *   bench_memplan [N_NODES [REACH]]     defaults: 5000 and 4, 16, 64
 */
#include <stdio.h>
#include <time.h>

#include "target_util.h"
#include "plan_util.h"

/* CPU time of this process: the figure that matters on a busy machine. */
static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int bench(int n, int reach, uint64_t seed) {
  Graph *g = pu_random_dag(n, reach, 0, seed);
  Diag d;
  diag_init(&d, "bench", stderr);
  Plan plan;
  double t0 = now_ms();
  bool ok = pass_memplan(g, &plan, onnxc_test_target(), &d);
  double t1 = now_ms();
  ok = ok && plan_validate(g, &plan, &d);
  int64_t before = plan.arena_bytes, lb = plan.lower_bound_bytes ? plan.lower_bound_bytes : 1;
  const char *strategy = plan.strategy;
  double t2 = now_ms();
  ok = ok && pass_schedule(g, onnxc_test_target(), NULL, &d);
  double t3 = now_ms();
  ok = ok && pass_memplan(g, &plan, onnxc_test_target(), &d) && plan_validate(g, &plan, &d);
  if (ok)
    printf("nodes %5d reach %3d: %5d tensors  memplan %7.2f ms  schedule %8.2f ms  "
           "arena/lb %.4f (%s)  after schedule %.4f\n",
           n, reach, plan.n_tensors, t1 - t0, t3 - t2,
           (double)before / (double)lb, strategy, (double)plan.arena_bytes / (double)before);
  diag_free(&d);
  ir_graph_free(g);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 5000;
  int rc = 0;
  if (argc > 2)
    return bench(n, atoi(argv[2]), 1);
  const int reaches[] = {4, 16, 64};
  for (int i = 0; i < 3; i++)
    rc |= bench(n, reaches[i], 12345u + (uint64_t)i);
  return rc;
}
