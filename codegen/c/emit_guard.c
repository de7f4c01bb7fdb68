/* emit_guard.c - guard mode of the C target (onnxc --guard, docs/guard.md).
 *
 * With a plan that has red zones (Plan.redzone > 0), NAME.c gets a table of
 * the arena's buffers (offset, exact bytes, live steps) and the name and op
 * of the node at each schedule step; NAME_run poisons the arena, fills the
 * red zones of the buffers a step writes first, and after each step checks
 * the red zones of the buffers live there (onnxc_rt.h's onnxc_guard_*).
 * NAME_guard_report turns the record a failed check leaves in the arena
 * into names. Without red zones this file writes nothing, so the normal
 * output is unchanged.
 */
#include "codegen_internal.h"

#include <string.h>

bool guard_on(const Plan *plan) { return plan->redzone > 0; }

static const char *region_name(const Graph *g, const PlanTensor *t, char *buf, size_t n) {
  if (t->value_id >= 0)
    snprintf(buf, n, "tensor '%s'", g->values[t->value_id]->name);
  else
    snprintf(buf, n, "scratch of node '%s'", g->nodes[t->node_id] ? g->nodes[t->node_id]->name : "?");
  return buf;
}

void guard_write_tables(const Graph *g, const Plan *plan, const char *nm, Buf *c) {
  if (!guard_on(plan))
    return;
  char buf[1200];
  int n = plan->n_tensors;
  buf_puts(c, "/* Guard mode (docs/guard.md): the arena's buffers and the node of each step. */\n");
  buf_printf(c, "static const onnxc_guard_region %s_guard_regions[%d] = {\n", nm, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    const PlanTensor *t = &plan->tensors[i];
    buf_printf(c, "  {%lld, %lld, %d, %d},\n", (long long)t->offset, (long long)t->size, t->first, t->last);
  }
  if (n == 0)
    buf_puts(c, "  {0, 0, -1, -1},\n");
  buf_printf(c, "};\nstatic const char *const %s_guard_region_names[%d] = {\n", nm, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    buf_puts(c, "  ");
    cg_c_string(c, region_name(g, &plan->tensors[i], buf, sizeof buf));
    buf_puts(c, ",\n");
  }
  if (n == 0)
    buf_puts(c, "  \"\",\n");
  buf_printf(c, "};\nstatic const char *const %s_guard_nodes[%d][2] = {\n", nm, g->n_nodes > 0 ? g->n_nodes : 1);
  for (const Node *x = g->first; x; x = x->next) {
    buf_puts(c, "  {");
    cg_c_string(c, x->name);
    buf_puts(c, ", ");
    cg_c_string(c, x->op_type);
    buf_puts(c, "},\n");
  }
  if (!g->first)
    buf_puts(c, "  {\"\", \"\"},\n");
  buf_puts(c, "};\n\n");
}

void guard_run_begin(const Plan *plan, Buf *run) {
  if (guard_on(plan))
    buf_printf(run, "  onnxc_guard_begin(a, %lld);\n", (long long)plan->arena_bytes);
}

void guard_step_begin(const Plan *plan, const char *nm, int step, Buf *run) {
  if (guard_on(plan))
    buf_printf(run, "  onnxc_guard_fill(a, %s_guard_regions, %d, %lld, %d);\n", nm, plan->n_tensors,
               (long long)plan->redzone, step);
}

void guard_step_end(const Plan *plan, const char *nm, int step, Buf *run) {
  if (guard_on(plan))
    buf_printf(run, "  if (onnxc_guard_check(a, %s_guard_regions, %d, %lld, %d))\n"
                    "    return ONNXC_ERR_GUARD;\n", nm, plan->n_tensors, (long long)plan->redzone, step);
}

void guard_write_report(const Plan *plan, const char *nm, int n_steps, Buf *c) {
  if (!guard_on(plan))
    return;
  buf_printf(c, "\nONNXC_API int %s_guard_report(const void *arena, %s_guard_info *info) {\n"
                "  const onnxc_guard_hit *h = (const onnxc_guard_hit *)arena;\n"
                "  const onnxc_guard_region *r;\n"
                "  if (!h || !info || h->magic != ONNXC_GUARD_MAGIC || h->region < 0 || h->region >= %d ||\n"
                "      h->step < 0 || h->step >= %d)\n"
                "    return 0;\n"
                "  r = &%s_guard_regions[h->region];\n"
                "  info->step = h->step;\n"
                "  info->node = %s_guard_nodes[h->step][0];\n"
                "  info->op = %s_guard_nodes[h->step][1];\n"
                "  info->region = %s_guard_region_names[h->region];\n"
                "  info->offset = r->offset;\n  info->bytes = r->bytes;\n"
                "  info->after = h->after;\n  info->at = h->at;\n  return 1;\n}\n",
             nm, nm, plan->n_tensors, n_steps, nm, nm, nm, nm);
}

void guard_write_header(const Plan *plan, const char *nm, Buf *h) {
  if (!guard_on(plan))
    return;
  buf_printf(h, "/* Built with --guard (docs/guard.md): every arena buffer is fenced by red\n"
                " * zones that %s_run checks after each node; it returns ONNXC_ERR_GUARD (10)\n"
                " * when a node wrote into one. %s_guard_report then fills *info from the\n"
                " * record left in the arena and returns 1 (0 when there is none). */\n"
                "typedef struct %s_guard_info {\n"
                "  int step;                /* schedule step of the node that wrote out of bounds */\n"
                "  const char *node, *op;   /* its ONNX name and op type */\n"
                "  const char *region;      /* \"tensor 'NAME'\" or \"scratch of node 'NAME'\" */\n"
                "  long long offset, bytes; /* that buffer's place in the arena */\n"
                "  int after;               /* 1: the red zone after it; 0: before it */\n"
                "  long long at;            /* arena offset of the first changed byte */\n"
                "} %s_guard_info;\n"
                "int %s_guard_report(const void *arena, %s_guard_info *info);\n\n",
             nm, nm, nm, nm, nm, nm);
}
