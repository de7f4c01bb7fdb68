/* rewrite.c - small helpers shared by the rewriting passes (simplify,
 * fuse-bn, cse, dce).
 *
 * A subgraph (If/Loop/Scan body) reads outer values by name through its
 * captures, and a capture records no use on the outer value. A rewrite that
 * replaced such a value, or removed its producer because it looked unused,
 * would leave the body naming a value that no longer computes anything; the
 * Captured set lets the passes leave those values alone.
 */
#include "passes.h"

#include <string.h>

static bool has_subgraph(const Node *n) {
  for (int i = 0; i < n->n_attrs; i++)
    if (n->attrs[i].kind == AT_GRAPH || n->attrs[i].kind == AT_GRAPHS)
      return true;
  return false;
}

static void mark_captures(const Graph *g, const Graph *sub, bool *by_id) {
  if (!sub)
    return;
  for (int i = 0; i < sub->n_captures; i++) {
    const Value *v = ir_value_find(g, sub->captures[i]->name);
    if (v && v->id >= 0)
      by_id[v->id] = true;
  }
}

Captured rewrite_captured(Graph *g) {
  Captured c = {NULL, 0};
  for (const Node *n = g->first; n; n = n->next) {
    if (!has_subgraph(n))
      continue;
    if (!c.by_id) {
      c.n = g->n_values;
      c.by_id = arena_alloc(g->arena, (size_t)c.n + 1);
    }
    /* A nested body captures through its parent body, so the direct
     * subgraphs' captures name every outer value read. */
    for (int i = 0; i < n->n_attrs; i++) {
      const Attr *a = &n->attrs[i];
      if (a->kind == AT_GRAPH)
        mark_captures(g, a->u.g, c.by_id);
      for (int k = 0; a->kind == AT_GRAPHS && k < a->n; k++)
        mark_captures(g, a->u.gs[k], c.by_id);
    }
  }
  return c;
}

bool rewrite_is_captured(const Captured *c, const Value *v) {
  return c->by_id && v->id >= 0 && v->id < c->n && c->by_id[v->id];
}

bool rewrite_same_shape(const Shape *a, const Shape *b) {
  return a->rank >= 0 && shape_equal(a, b);
}

void rewrite_record_fused(Node *into, const Node *from) {
  const Attr *fa = ir_attr(from, "onnxc.fused");
  Attr *a = (Attr *)ir_attr(into, "onnxc.fused");
  bool self = !(ir_ops[from->op].flags & OPF_INTERNAL);
  int old = a ? a->n : 0, add = (self ? 1 : 0) + (fa ? fa->n : 0);
  const char **ss = arena_alloc(into->g->arena, (size_t)(old + add + 1) * sizeof *ss);
  for (int i = 0; i < old; i++)
    ss[i] = a->u.ss[i];
  int k = old;
  if (self)
    ss[k++] = arena_printf(into->g->arena, "%s %s", from->op_type, from->name);
  for (int i = 0; fa && i < fa->n; i++)
    ss[k++] = fa->u.ss[i];
  if (!a)
    a = ir_attr_add(into, "onnxc.fused", AT_STRINGS);
  a->u.ss = ss;
  a->n = k;
}

bool rewrite_stands_in(const Node *n) {
  const Attr *a = ir_attr(n, "onnxc.fused");
  size_t nl = strlen(n->name);
  for (int i = 0; a && a->kind == AT_STRINGS && i < a->n; i++) {
    size_t l = strlen(a->u.ss[i]);
    if (l > nl && a->u.ss[i][l - nl - 1] == ' ' && strcmp(a->u.ss[i] + l - nl, n->name) == 0)
      return true;
  }
  return false;
}

void rewrite_forward(Node *n, Value *v) {
  ir_value_replace(n->out[0], v);
  for (int i = 1; i < n->n_out; i++)
    if (n->out[i]->kind != VK_NONE)
      ir_node_drop_output(n, i);
  ir_node_remove(n);
}

Value *rewrite_const_i64(Graph *g, const char *name, const int64_t *v, int count) {
  int64_t dims[1] = {count};
  Shape s = shape_make(1, dims);
  Tensor *t = ir_tensor_new(g, DT_I64, &s, NULL);
  IR_ASSERT(t);
  if (count)
    memcpy(t->data, v, (size_t)count * sizeof(int64_t));
  return ir_const_new(g, name, t);
}
