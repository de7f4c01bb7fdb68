/* fuse_siblings.c - sibling convolutions on one input become one product.
 *
 * requires: inferred static shapes; activations already fused (fuse-epilogue),
 *   so a sibling's epilogue is a set of attributes.
 * provides: float32 Convs that read the same X at batch 1 with constant
 *   weights (constant bias or none), group 1, the same kernel extents and
 *   exactly the same attributes (strides, pads, dilations, auto_pad, and the
 *   fused activation with its parameters), no epilogue body and no residual
 *   input, none a graph output, become one Conv over the weights concatenated
 *   along the output channels at compile time (the biases too, zeros for a
 *   sibling without one), followed by a Split along the channels that gives
 *   each sibling its own output value. At batch 1 a channel range is a
 *   contiguous byte range, so the planner makes the Split's outputs views of
 *   the merged output (memplan.c split_views): nothing is copied. Siblings
 *   with different activations stay in separate groups (only identical
 *   epilogues merge; the kernels apply one epilogue to every channel).
 *   Batch > 1 is left alone (a channel range is then strided per image).
 *   A sibling that a channel Concat at batch 1 reads is already stored in its
 *   slice of the Concat; it joins only when every sibling of the group feeds
 *   that Concat, and nothing else, as a run of consecutive inputs (the channels are
 *   then ordered as the Concat reads them and the merged output becomes one
 *   slice of it), since otherwise the Concat would have to copy it.
 * invalidates: schedule positions.
 */
#include "passes.h"

#include <string.h>

#define MAX_SIBS 64

static bool attr_equal(const Attr *a, const Attr *b) {
  if (a->kind != b->kind || a->n != b->n)
    return false;
  switch (a->kind) {
  case AT_INT:
    return a->u.i == b->u.i;
  case AT_FLOAT:
    return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;
  case AT_STRING:
    return a->slen == b->slen && memcmp(a->u.s, b->u.s, a->slen) == 0;
  case AT_INTS:
    return a->n == 0 || memcmp(a->u.is, b->u.is, (size_t)a->n * sizeof *a->u.is) == 0;
  case AT_FLOATS:
    return a->n == 0 || memcmp(a->u.fs, b->u.fs, (size_t)a->n * sizeof *a->u.fs) == 0;
  default: /* an epilogue body, a tensor: not compared, never merged */
    return false;
  }
}

/* Every attribute of a but its fusion record is in b with the same value,
 * and b has no other. */
static bool same_attrs(const Node *a, const Node *b) {
  int na = 0, nb = 0;
  for (int i = 0; i < a->n_attrs; i++) {
    if (strcmp(a->attrs[i].name, "onnxc.fused") == 0)
      continue;
    na++;
    const Attr *o = ir_attr(b, a->attrs[i].name);
    if (!o || !attr_equal(&a->attrs[i], o))
      return false;
  }
  for (int i = 0; i < b->n_attrs; i++)
    nb += strcmp(b->attrs[i].name, "onnxc.fused") != 0;
  return na == nb;
}

/* A Conv that could join a group: batch 1, float32, constant weights and
 * bias, group 1, no residual input, its result an intermediate. */
static bool conv_plain(const Node *n, const Captured *cap) {
  if (n->op != OP_Conv || n->n_in < 2 || n->n_in > 3 || n->n_out != 1 || ir_attr_int(n, "group", 1) != 1)
    return false;
  const Value *x = n->in[0], *w = n->in[1], *y = n->out[0];
  if (x->dt != DT_F32 || w->kind != VK_CONST || w->dt != DT_F32 || !w->konst || y->dt != DT_F32 ||
      y->is_output || rewrite_is_captured(cap, y) || !shape_is_static(&x->shape) ||
      !shape_is_static(&w->shape) || !shape_is_static(&y->shape) || x->shape.rank < 3 || x->shape.d[0] != 1 ||
      w->shape.rank != x->shape.rank)
    return false;
  if (ir_has_input(n, 2) && (n->in[2]->kind != VK_CONST || n->in[2]->dt != DT_F32 || !n->in[2]->konst))
    return false;
  return true;
}

static bool siblings(const Node *a, const Node *b) {
  if (a->in[0] != b->in[0] || a->in[1]->shape.rank != b->in[1]->shape.rank)
    return false;
  for (int i = 1; i < a->in[1]->shape.rank; i++) /* in-channels and kernel extents */
    if (a->in[1]->shape.d[i] != b->in[1]->shape.d[i])
      return false;
  for (int i = 2; i < a->out[0]->shape.rank; i++)
    if (a->out[0]->shape.d[i] != b->out[0]->shape.d[i])
      return false;
  return same_attrs(a, b);
}

/* A Concat along the channels of batch 1 that reads n's result once (the
 * planner stores the result in its slice), with the input position in *pos;
 * NULL if none. *only: that Concat is the result's only reader. */
static const Node *concat_reader(const Node *n, int *pos, bool *only) {
  const Value *y = n->out[0];
  for (int u = 0; u < y->n_uses; u++) {
    const Node *c = y->uses[u];
    int axis, found = 0;
    if (c->op != OP_Concat || !shape_axis(ir_attr_int(c, "axis", 0), c->out[0]->shape.rank, &axis) || axis != 1)
      continue;
    for (int k = 0; k < c->n_in; k++)
      if (c->in[k] == y) {
        *pos = k;
        found++;
      }
    if (found == 1) {
      *only = y->n_uses == 1;
      return c;
    }
  }
  return NULL;
}

/* Keeps the siblings that can merge without costing a Concat its in-place
 * slices (see the header); they come back in the order their channels take. */
static int filter_concat(Node **sib, int ns) {
  int pos[MAX_SIBS];
  const Node *cat[MAX_SIBS];
  bool one_cat = true;
  for (int i = 0; i < ns; i++) {
    bool only = false;
    cat[i] = concat_reader(sib[i], &pos[i], &only);
    one_cat &= cat[i] && cat[i] == cat[0] && only;
  }
  if (one_cat) { /* every sibling into one Concat: a run of its inputs? */
    for (int i = 1; i < ns; i++) /* sort by position (few siblings) */
      for (int j = i; j > 0 && pos[j - 1] > pos[j]; j--) {
        int tp = pos[j]; pos[j] = pos[j - 1]; pos[j - 1] = tp;
        Node *tn = sib[j]; sib[j] = sib[j - 1]; sib[j - 1] = tn;
      }
    bool run = true;
    for (int i = 1; i < ns; i++)
      run &= pos[i] == pos[i - 1] + 1;
    if (run)
      return ns;
  }
  int keep = 0;
  for (int i = 0; i < ns; i++)
    if (!cat[i])
      sib[keep++] = sib[i];
  return keep;
}

static void record_into(Node *into, Node *const *sib, int ns) {
  for (int i = 0; i < ns; i++)
    rewrite_record_fused(into, sib[i]);
}

/* One Conv over the concatenated weights, a Split back into the siblings'
 * values, inserted before the first sibling in graph order. */
static void merge(Graph *g, Node **sib, int ns) {
  Node *first = NULL;
  for (Node *n = g->first; n && !first; n = n->next)
    for (int i = 0; i < ns; i++)
      if (sib[i] == n)
        first = n;
  const Shape *ws = &sib[0]->in[1]->shape;
  int64_t per = 1, total = 0, split[MAX_SIBS];
  bool bias = false;
  for (int i = 1; i < ws->rank; i++)
    per *= ws->d[i];
  for (int i = 0; i < ns; i++) {
    split[i] = sib[i]->in[1]->shape.d[0];
    total += split[i];
    bias |= ir_has_input(sib[i], 2);
  }
  Shape wshape = *ws, bshape = shape_make(1, &total);
  wshape.d[0] = total;
  Tensor *wt = ir_tensor_new(g, DT_F32, &wshape, NULL), *bt = bias ? ir_tensor_new(g, DT_F32, &bshape, NULL) : NULL;
  float *wd = wt->data, *bd = bt ? bt->data : NULL;
  int64_t off = 0;
  for (int i = 0; i < ns; i++) {
    memcpy(wd + off * per, sib[i]->in[1]->konst->data, (size_t)(split[i] * per) * sizeof *wd);
    if (bd && ir_has_input(sib[i], 2))
      memcpy(bd + off, sib[i]->in[2]->konst->data, (size_t)split[i] * sizeof *bd);
    off += split[i];
  }
  Value *in[3] = {first->in[0], ir_const_new(g, arena_printf(g->arena, "%s_merged_W", first->name), wt),
                  bt ? ir_const_new(g, arena_printf(g->arena, "%s_merged_B", first->name), bt) : NULL};
  const char *yname = arena_printf(g->arena, "%s_siblings", first->out[0]->name);
  Node *mc = ir_node_insert_named(g, first, OP_Conv, "Conv", first->name, bt ? 3 : 2, in, 1, &yname);
  for (int i = 0; i < first->n_attrs; i++)
    if (strcmp(first->attrs[i].name, "onnxc.fused") != 0)
      *ir_attr_add(mc, first->attrs[i].name, first->attrs[i].kind) = first->attrs[i];
  mc->out[0]->dt = DT_F32;
  mc->out[0]->shape = first->out[0]->shape;
  mc->out[0]->shape.d[1] = total;
  record_into(mc, sib, ns);

  /* the Split: sizes as an input from opset 13, an attribute before */
  Value *sin[2] = {mc->out[0], NULL};
  if (g->opset >= 13)
    sin[1] = rewrite_const_i64(g, arena_printf(g->arena, "%s_split", first->name), split, ns);
  const char *names[MAX_SIBS];
  for (int i = 0; i < ns; i++)
    names[i] = arena_printf(g->arena, "%s_part", sib[i]->out[0]->name);
  Node *sp = ir_node_insert_named(g, first, OP_Split, "Split", arena_printf(g->arena, "%s_split", first->name),
                                  sin[1] ? 2 : 1, sin, ns, names);
  ir_attr_set_int(sp, "axis", 1);
  if (!sin[1])
    ir_attr_set_ints(sp, "split", split, ns);
  for (int i = 0; i < ns; i++) {
    Value *y = sib[i]->out[0];
    sp->out[i]->dt = y->dt;
    sp->out[i]->shape = y->shape;
    ir_value_replace(y, sp->out[i]);
    ir_node_remove(sib[i]);
  }
}

/* Groups the siblings of n (n included) and merges them when two or more
 * remain; true when it merged. */
static bool merge_from(Graph *g, Node *n, const Captured *cap) {
  Node *sib[MAX_SIBS];
  int ns = 0;
  const Value *x = n->in[0];
  for (int k = 0; k < x->n_uses && ns < MAX_SIBS; k++) {
    Node *u = x->uses[k];
    bool seen = false;
    for (int i = 0; i < ns; i++)
      seen |= sib[i] == u;
    if (!seen && conv_plain(u, cap) && siblings(n, u))
      sib[ns++] = u;
  }
  ns = filter_concat(sib, ns);
  if (ns < 2)
    return false;
  merge(g, sib, ns);
  return true;
}

bool pass_fuse_siblings(Graph *g, Diag *d) {
  (void)d;
  Captured cap = rewrite_captured(g);
  bool merged = true;
  while (merged) {
    merged = false;
    for (Node *n = g->first; n && !merged; n = n->next)
      merged = conv_plain(n, &cap) && merge_from(g, n, &cap);
  }
  return true;
}
