/* dce.c - dead-code elimination.
 *
 * requires: use lists.  provides: every remaining node contributes to a graph
 * output (or to a value a subgraph captures); unused outputs of live nodes
 * become omitted values.
 * invalidates: nothing (ids stay stable; removed nodes leave NULL slots).
 * Walks backwards once: a node is dead when none of its outputs is used, and
 * removing it may kill its producers, which come earlier in the schedule.
 */
#include "passes.h"

static bool value_live(const Value *v, const Captured *cap) {
  return v->kind != VK_NONE && (v->n_uses > 0 || v->is_output || rewrite_is_captured(cap, v));
}

bool pass_dce(Graph *g, Diag *d) {
  (void)d;
  Captured cap = rewrite_captured(g);
  for (Node *n = g->last, *prev; n; n = prev) {
    prev = n->prev;
    bool live = false;
    for (int i = 0; i < n->n_out; i++)
      live |= value_live(n->out[i], &cap);
    if (!live) {
      ir_node_remove(n);
      continue;
    }
    /* The first output is the op's result; later ones are optional extras. */
    for (int i = 1; i < n->n_out; i++)
      if (!value_live(n->out[i], &cap))
        ir_node_drop_output(n, i);
  }
  return true;
}
