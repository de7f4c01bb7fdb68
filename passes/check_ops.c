/* check_ops.c - every node must be an operator we implement, with an arity
 * the table allows.
 *
 * requires: a loaded graph.  provides: no OP_Unknown_ nodes, in subgraphs
 * too.  invalidates: none.
 * All problems are reported in one run, so a user sees the full list of
 * unsupported operators at once instead of one per compile.
 */
#include "passes.h"

#include <string.h>

/* One node: a known operator of its own domain, an arity the table allows,
 * and no empty name in a required input's place.  Reports every problem of the
 * node; false when there was one. */
bool check_op_node(const Node *n, Diag *d) {
  int before = d->n_errors;
  if (n->op == OP_Unknown_) {
    if (n->op_type && strcmp(n->op_type, "ZipMap") == 0)
      /* Its output is a sequence of maps, which the C ABI cannot return. */
      diag_error(d, n, "ZipMap is not supported: its output is a sequence of maps, which "
                       "compiled models cannot return; convert without it (skl2onnx: "
                       "to_onnx(model, X, options={id(model): {'zipmap': False}}))");
    else if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0)
      diag_error(d, n, "unsupported operator (domain '%s')", n->domain);
    else
      diag_error(d, n, "unsupported operator");
    return false;
  }
  const OpInfo *oi = &ir_ops[n->op];
  /* A node built through the API with a row of another domain (the loaders
   * only resolve a name within its own domain). */
  if (ir_op_lookup_in(n->domain, oi->name) != n->op) {
    const char *dom = ir_op_domain(n->op);
    diag_error(d, n, "operator of domain '%s' used in domain '%s'", *dom ? dom : "ai.onnx",
               n->domain && *n->domain ? n->domain : "ai.onnx");
    return false;
  }
  if (n->n_in < oi->min_in || (oi->max_in >= 0 && n->n_in > oi->max_in)) {
    if (oi->max_in < 0)
      diag_error(d, n, "has %d inputs, expected at least %d", n->n_in, oi->min_in);
    else
      diag_error(d, n, "has %d inputs, expected %d to %d", n->n_in, oi->min_in, oi->max_in);
  }
  if (n->n_out < oi->min_out || (oi->max_out >= 0 && n->n_out > oi->max_out))
    diag_error(d, n, "has %d outputs, expected %d to %d", n->n_out, oi->min_out, oi->max_out);
  /* the table's min_in counts positions; Loop's first two (M and cond) are
   * optional in the schema, so "" is allowed there (the only such op) */
  for (int i = n->op == OP_Loop ? 2 : 0; i < oi->min_in && i < n->n_in; i++)
    if (n->in[i]->kind == VK_NONE)
      diag_error(d, n, "required input %d is missing", i);
  return d->n_errors == before;
}

/* The nodes of g and of every graph its nodes hold (If branches, Loop and
 * Scan bodies, at any depth), so one run lists all the unsupported operators
 * a model has, those inside control flow included. */
static void check_nodes(const Graph *g, Diag *d) {
  for (const Node *n = g->first; n; n = n->next) {
    check_op_node(n, d);
    const Graph *sub;
    for (int k = 0; (sub = ir_node_subgraph(n, k)); k++)
      check_nodes(sub, d);
  }
}

bool pass_check_ops(Graph *g, Diag *d) {
  int before = d->n_errors;
  check_nodes(g, d);
  for (int i = 0; i < g->n_inputs; i++)
    if (!dtype_valid(g->inputs[i]->dt) || g->inputs[i]->dt == DT_UNDEF)
      diag_error(d, NULL, "graph input '%s' has no element type", g->inputs[i]->name);
  return d->n_errors == before;
}
