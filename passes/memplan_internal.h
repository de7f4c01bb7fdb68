/* memplan_internal.h - what the memory planner's files share: the buffer
 * analysis of a schedule (memplan.c), the offset placement (memplan_place.c)
 * and the scheduler (schedule.c), which plans candidate orders to compare. */
#ifndef ONNXC_MEMPLAN_INTERNAL_H
#define ONNXC_MEMPLAN_INTERNAL_H

#include "passes.h"

/* The buffers of one schedule: heap memory, freed by memplan_buffers_free. */
typedef struct Buffers {
  int n_steps;
  int *step;               /* by node id: schedule step, -1 when not scheduled */
  int *alias;              /* by value id: root value id, or -1 */
  int64_t *alias_off;      /* by value id: byte offset of an alias in its root */
  int n_slices;            /* Concat inputs stored in their slice of the output */
  bool *elided;            /* by node id: a view with no code */
  int64_t *scratch;        /* by node id: scratch bytes (unaligned), 0 when none */
  int *sub_read;           /* by value id: last step whose subgraph reads it, or -1 */
  PlanTensor *ts;          /* arena buffers: roots, then scratch */
  int n;
  int64_t lower_bound;     /* most bytes live at one step */
  int64_t naive;           /* every intermediate value and scratch on its own */
} Buffers;

/* Analyzes the schedule `order` (every live node of g once, topologically
 * sorted): views and in-place results become aliases, and with `slices` the
 * inputs of a Concat become slices of its output; every remaining
 * intermediate and scratch a buffer with its lifetime. Offsets are left 0.
 * False after a diag error (a tensor too large to plan). */
bool memplan_buffers(const Graph *g, Node *const *order, int n_nodes, bool slices,
                     const Target *t, Buffers *b, Diag *d);
void memplan_buffers_free(Buffers *b);
/* Buffers and offsets for `order`: with Concat slices and without (when any
 * Concat could use them), keeping the smaller arena. Kernel scratch as the
 * target t sizes it (none when t is NULL). */
bool memplan_plan(const Graph *g, Node *const *order, int n_nodes, const Target *t, Buffers *b,
                  int64_t *arena, const char **strategy, Diag *d);

/* Places ts[0..n) in one arena (offsets PLAN_ALIGN-aligned, sizes already
 * aligned) so that no two lifetime-overlapping buffers share bytes. Tries
 * several strategies and keeps the smallest arena; stops early once it
 * reaches lower_bound. Returns the arena size; *strategy names the winner.
 * Deterministic: the same input gives the same offsets. */
int64_t memplan_place(PlanTensor *ts, int n, int64_t lower_bound, const char **strategy);
/* Work units the exact search may spend in one memplan_place (memplan_place.c
 * explains the unit); past it, the best placement found so far is kept. */
#define MEMPLAN_EXACT_WORK (8L << 20)
/* memplan_place that also reports the units its exact search spent (0 when
 * it did not run): at most MEMPLAN_EXACT_WORK plus one search node's. */
int64_t memplan_place_work(PlanTensor *ts, int n, int64_t lower_bound, const char **strategy,
                           long *exact_work);

/* The graph's nodes in schedule order (heap array of g->n_nodes). */
Node **memplan_order(const Graph *g);
/* True when n owns a subgraph (If/Loop/Scan bodies): its body reads outer
 * values through captures, which record no use on them. */
bool memplan_has_subgraph(const Node *n);

#endif
