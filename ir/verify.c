/* verify.c - structural invariants of a graph, checked between passes in
 * tests and debug runs. A violation here is a compiler bug, but it is reported
 * through the Diag (not an abort) so a test can show every broken rule at once. */
#include "ir.h"

#include <stdlib.h>

static int count_uses(const Value *v, const Node *n) {
  int k = 0;
  for (int i = 0; i < v->n_uses; i++)
    k += v->uses[i] == n;
  return k;
}

static int count_slots(const Node *n, const Value *v) {
  int k = 0;
  for (int i = 0; i < n->n_in; i++)
    k += n->in[i] == v;
  return k;
}

static void verify_node(const Graph *g, const Node *n, const char *seen, bool need_shapes, Diag *d) {
  const OpInfo *oi = &ir_ops[n->op];
  if (n->op != OP_Unknown_) {
    /* passes/fuse_epilogue.c appends inputs that the node's kernel fuses */
    int max_in = oi->max_in < 0 ? -1 : oi->max_in + (int)ir_attr_int(n, "onnxc.fused_inputs", 0);
    if (n->n_in < oi->min_in || (max_in >= 0 && n->n_in > max_in))
      diag_error(d, n, "verify: has %d inputs, the table allows %d..%d", n->n_in, oi->min_in, max_in);
    if (n->n_out < oi->min_out || (oi->max_out >= 0 && n->n_out > oi->max_out))
      diag_error(d, n, "verify: has %d outputs, the table allows %d..%d", n->n_out, oi->min_out, oi->max_out);
  }
  for (int i = 0; i < n->n_in; i++) {
    const Value *v = n->in[i];
    if (v->kind == VK_NONE)
      continue;
    if (v->g != g && v->kind != VK_INPUT)
      diag_error(d, n, "verify: input %d ('%s') belongs to another graph", i, v->name);
    if (count_uses(v, n) != count_slots(n, v))
      diag_error(d, n, "verify: use list of '%s' disagrees with the node's inputs", v->name);
    if (v->kind == VK_NODE && (!v->producer || !seen[v->producer->id]))
      diag_error(d, n, "verify: input '%s' is used before it is produced", v->name);
    if (v->kind == VK_CONST && !v->konst)
      diag_error(d, n, "verify: constant '%s' has no data", v->name);
  }
  for (int i = 0; i < n->n_out; i++) {
    const Value *v = n->out[i];
    if (v->kind == VK_NONE)
      continue;
    if (v->kind != VK_NODE || v->producer != n || v->out_index != i)
      diag_error(d, n, "verify: output %d ('%s') does not point back at its producer", i, v->name);
    if (need_shapes && (v->dt == DT_UNDEF || v->shape.rank < 0))
      diag_error(d, n, "verify: output '%s' has no inferred type or shape", v->name);
  }
}

bool ir_verify(const Graph *g, bool need_shapes, Diag *d) {
  int before = d->n_errors;
  char *seen = calloc((size_t)g->n_node_ids + 1, 1);
  IR_ASSERT(seen);
  int count = 0;
  for (const Node *n = g->first; n; n = n->next) {
    if (n->g != g || n->id < 0 || n->id >= g->n_node_ids || g->nodes[n->id] != n)
      diag_error(d, n, "verify: node is not registered in its graph");
    else if (seen[n->id])
      diag_error(d, n, "verify: node appears twice in the schedule");
    else
      verify_node(g, n, seen, need_shapes, d);
    if (n->id >= 0 && n->id < g->n_node_ids)
      seen[n->id] = 1;
    if (n->next && n->next->prev != n)
      diag_error(d, n, "verify: schedule links are broken after this node");
    count++;
  }
  if (count != g->n_nodes)
    diag_error(d, NULL, "verify: %d nodes scheduled but the graph counts %d", count, g->n_nodes);
  for (int i = 0; i < g->n_values; i++) {
    const Value *v = g->values[i];
    if (v->id != i)
      diag_error(d, NULL, "verify: value '%s' has id %d at index %d", v->name, v->id, i);
    for (int u = 0; u < v->n_uses; u++)
      if (!seen[v->uses[u]->id] || g->nodes[v->uses[u]->id] != v->uses[u])
        diag_error(d, NULL, "verify: value '%s' is used by a node outside the schedule", v->name);
  }
  for (int i = 0; i < g->n_outputs; i++) {
    const Value *v = g->outputs[i];
    if (!v->is_output)
      diag_error(d, NULL, "verify: graph output '%s' is not flagged as output", v->name);
    if (v->kind == VK_NODE && (!v->producer || !seen[v->producer->id]))
      diag_error(d, NULL, "verify: graph output '%s' has no scheduled producer", v->name);
  }
  free(seen);
  return d->n_errors == before;
}
