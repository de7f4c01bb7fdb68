/* simplify.c - algebraic clean-up.
 *
 * requires: inferred types.  provides: no Identity nodes, no inference-mode
 * Dropout whose mask is unused.  invalidates: schedule positions (nodes go).
 * An op that only forwards its input is removed by pointing its users (and
 * graph output slots) at the input; codegen copies when an output ends up
 * being an input or a constant.
 */
#include "passes.h"

static bool forwards_input(const Node *n) {
  switch (n->op) {
  case OP_Identity:
    return true;
  case OP_Dropout:
    return n->n_out < 2 || n->out[1]->kind == VK_NONE ||
           (n->out[1]->n_uses == 0 && !n->out[1]->is_output);
  default:
    return false;
  }
}

bool pass_simplify(Graph *g, Diag *d) {
  (void)d;
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (!forwards_input(n))
      continue;
    Value *in = n->in[0], *out = n->out[0];
    /* A graph output that becomes another output's value is copied by codegen. */
    ir_value_replace(out, in);
    for (int i = 1; i < n->n_out; i++)
      if (n->out[i]->kind != VK_NONE)
        ir_node_drop_output(n, i);
    ir_node_remove(n);
  }
  return true;
}
