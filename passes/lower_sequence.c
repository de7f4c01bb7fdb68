/* lower_sequence.c - sequences and optionals as compile-time lists of tensors.
 *
 * A sequence value is the list of tensor values it holds; an optional holds
 * zero or one value (a tensor or a sequence). Both are resolved while
 * lower_control.c walks the graph: SequenceConstruct/Insert/Erase build new
 * lists, SequenceAt and OptionalGetElement forward the chosen element,
 * SequenceLength and OptionalHasElement become constants, SplitToSequence
 * becomes Slice/Gather nodes and ConcatFromSequence an Unsqueeze/Concat.
 * Positions must be known at compile time. Sequence and optional graph inputs
 * are expanded into one tensor input per element (pass_expand_inputs, with
 * the lengths given by the user), outputs into one tensor output per element.
 */
#include "lower_internal.h"

#include <stdlib.h>
#include <string.h>

bool lower_is_sequence_op(OpKind op) {
  switch (op) {
  case OP_SequenceConstruct: case OP_SequenceEmpty: case OP_SequenceAt: case OP_SequenceInsert:
  case OP_SequenceErase: case OP_SequenceLength: case OP_SplitToSequence:
  case OP_ConcatFromSequence: case OP_Optional: case OP_OptionalHasElement:
  case OP_OptionalGetElement:
    return true;
  default:
    return false;
  }
}

static Seq *need_seq(Lower *L, Node *n, int i) {
  Seq *s = lower_seq(L, n->in[i]);
  if (!s || s->opt) {
    diag_error(L->d, n, "input %d must be a sequence", i);
    return NULL;
  }
  return s;
}

/* Optional position input i in [-len, len + extra), normalized; dflt when absent. */
static bool position(Lower *L, Node *n, int i, int len, int extra, int64_t dflt, int64_t *out) {
  if (!ir_has_input(n, i)) {
    *out = dflt;
    return true;
  }
  int64_t p;
  if (!lower_const_scalar(lower_resolve(L, n->in[i]), &p))
    return diag_error(L->d, n, "the position (input %d) must be known at compile time", i);
  if (p < -len || p >= len + extra)
    return diag_error(L->d, n, "position %lld is out of range for a sequence of %d", (long long)p, len);
  *out = p < 0 ? p + len : p;
  return true;
}

static Seq *copy_seq(Lower *L, const Seq *s, int extra) {
  Seq *c = lower_seq_new(L, s->n + extra, false);
  c->n = s->n;
  memcpy(c->v, s->v, (size_t)s->n * sizeof *c->v);
  return c;
}

static bool split_to_sequence(Lower *L, Node *n) {
  Value *x = lower_resolve(L, n->in[0]);
  int rank = x->shape.rank, ax;
  int64_t axis = ir_attr_int(n, "axis", 0);
  if (rank < 0 || !shape_axis(axis, rank, &ax))
    return diag_error(L->d, n, "axis %lld is out of range", (long long)axis);
  int64_t dim = x->shape.d[ax];
  if (dim < 0)
    return diag_error(L->d, n, "the split axis has no static extent");
  int64_t sizes[4096];
  int count = 0;
  bool squeeze = false;
  if (!ir_has_input(n, 1)) {
    squeeze = ir_attr_int(n, "keepdims", 1) == 0;
    for (int64_t i = 0; i < dim && count < 4096; i++)
      sizes[count++] = 1;
  } else {
    Value *sp = lower_resolve(L, n->in[1]);
    if (sp->kind != VK_CONST || !dtype_is_int(sp->dt) || sp->konst->shape.rank > 1)
      return diag_error(L->d, n, "'split' must be a constant integer scalar or vector");
    if (sp->konst->shape.rank == 0) {
      int64_t s = tensor_get_i64(sp->konst, 0);
      if (s <= 0)
        return diag_error(L->d, n, "'split' must be positive");
      for (int64_t i = 0; i < dim && count < 4096; i += s)
        sizes[count++] = i + s <= dim ? s : dim - i;
    } else {
      int64_t sum = 0;
      for (int64_t i = 0; i < sp->konst->numel && count < 4096; i++) {
        sizes[count++] = tensor_get_i64(sp->konst, i);
        sum += sizes[count - 1];
        if (sizes[count - 1] < 0)
          return diag_error(L->d, n, "'split' has a negative size");
      }
      if (sum != dim)
        return diag_error(L->d, n, "'split' sums to %lld, the axis has %lld", (long long)sum, (long long)dim);
    }
  }
  if (count >= 4096)
    return diag_error(L->d, n, "more than 4096 pieces");
  Seq *s = lower_seq_new(L, count, false);
  Arena *ar = L->g->arena;
  int64_t start = 0;
  for (int i = 0; i < count; i++) {
    Node *p;
    if (squeeze) {
      Value *in[2] = {x, lower_const_i64(L, arena_printf(ar, "%s_i%d", n->name, i), i)};
      p = lower_node(L, n, OP_Gather, arena_printf(ar, "%s_%d", n->name, i), 2, in);
      ir_attr_set_int(p, "axis", ax);
    } else {
      int64_t end = start + sizes[i], a64 = ax;
      Value *in[4] = {x, rewrite_const_i64(L->g, arena_printf(ar, "%s_start%d", n->name, i), &start, 1),
                      rewrite_const_i64(L->g, arena_printf(ar, "%s_end%d", n->name, i), &end, 1),
                      rewrite_const_i64(L->g, arena_printf(ar, "%s_axes%d", n->name, i), &a64, 1)};
      p = lower_node(L, n, OP_Slice, arena_printf(ar, "%s_%d", n->name, i), 4, in);
    }
    s->v[i] = p->out[0];
    start += sizes[i];
  }
  lower_seq_set(L, n->out[0], s);
  return lower_flush(L, n);
}

static bool concat_from_sequence(Lower *L, Node *n) {
  Seq *s = need_seq(L, n, 0);
  if (!s)
    return false;
  if (s->n == 0)
    return diag_error(L->d, n, "the sequence is empty");
  int64_t axis = ir_attr_int(n, "axis", 0);
  bool new_axis = ir_attr_int(n, "new_axis", 0) != 0;
  Arena *ar = L->g->arena;
  Value **parts = malloc((size_t)s->n * sizeof *parts);
  IR_ASSERT(parts);
  for (int i = 0; i < s->n; i++)
    parts[i] = lower_resolve(L, s->v[i]);
  if (new_axis) {
    int rank = parts[0]->shape.rank;
    if (rank < 0 || axis < -(rank + 1) || axis > rank) {
      free(parts);
      return diag_error(L->d, n, "axis %lld is out of range", (long long)axis);
    }
    if (axis < 0)
      axis += rank + 1;
    Value *ax = rewrite_const_i64(L->g, arena_printf(ar, "%s_axes", n->name), &axis, 1);
    for (int i = 0; i < s->n; i++) {
      Value *in[2] = {parts[i], ax};
      parts[i] = lower_node(L, n, OP_Unsqueeze, arena_printf(ar, "%s_unsq%d", n->name, i), 2, in)->out[0];
    }
  }
  Node *c = lower_node(L, n, OP_Concat, n->name, s->n, parts);
  ir_attr_set_int(c, "axis", axis);
  free(parts);
  lower_forward(L, n->out[0], c->out[0]);
  return lower_flush(L, n);
}

bool lower_sequence_node(Lower *L, Node *n) {
  Seq *s, *r;
  int64_t p;
  switch (n->op) {
  case OP_Identity:
    lower_forward(L, n->out[0], n->in[0]);
    return true;
  case OP_SequenceEmpty:
    lower_seq_set(L, n->out[0], lower_seq_new(L, 0, false));
    return true;
  case OP_SequenceConstruct:
    r = lower_seq_new(L, n->n_in, false);
    for (int i = 0; i < n->n_in; i++) {
      r->v[i] = lower_resolve(L, n->in[i]);
      if (lower_seq(L, r->v[i]))
        return diag_error(L->d, n, "input %d is not a tensor; sequences hold tensors here", i);
    }
    lower_seq_set(L, n->out[0], r);
    return true;
  case OP_SequenceInsert:
    if (!(s = need_seq(L, n, 0)) || !position(L, n, 2, s->n, 1, s->n, &p))
      return false;
    r = copy_seq(L, s, 1);
    memmove(&r->v[p + 1], &r->v[p], (size_t)(s->n - p) * sizeof *r->v);
    r->v[p] = lower_resolve(L, n->in[1]);
    r->n++;
    lower_seq_set(L, n->out[0], r);
    return true;
  case OP_SequenceErase:
    if (!(s = need_seq(L, n, 0)))
      return false;
    if (s->n == 0)
      return diag_error(L->d, n, "the sequence is empty");
    if (!position(L, n, 1, s->n, 0, s->n - 1, &p))
      return false;
    r = copy_seq(L, s, 0);
    memmove(&r->v[p], &r->v[p + 1], (size_t)(s->n - p - 1) * sizeof *r->v);
    r->n--;
    lower_seq_set(L, n->out[0], r);
    return true;
  case OP_SequenceAt:
    if (!(s = need_seq(L, n, 0)))
      return false;
    if (!ir_has_input(n, 1))
      return diag_error(L->d, n, "the position is missing");
    if (!position(L, n, 1, s->n, 0, 0, &p))
      return false;
    lower_forward(L, n->out[0], s->v[p]);
    return true;
  case OP_SequenceLength:
    if (!(s = need_seq(L, n, 0)))
      return false;
    lower_forward(L, n->out[0], lower_const_i64(L, arena_printf(L->g->arena, "%s_len", n->name), s->n));
    return true;
  case OP_SplitToSequence:
    return split_to_sequence(L, n);
  case OP_ConcatFromSequence:
    return concat_from_sequence(L, n);
  case OP_Optional:
    r = lower_seq_new(L, ir_has_input(n, 0) ? 1 : 0, true);
    if (r->n)
      r->v[0] = lower_resolve(L, n->in[0]);
    lower_seq_set(L, n->out[0], r);
    return true;
  case OP_OptionalHasElement: {
    bool has = false;
    if (ir_has_input(n, 0)) {
      s = lower_seq(L, n->in[0]);
      has = !s || !s->opt || s->n > 0;
    }
    lower_forward(L, n->out[0], lower_const_bool(L, arena_printf(L->g->arena, "%s_has", n->name), has));
    return true;
  }
  case OP_OptionalGetElement:
    s = lower_seq(L, n->in[0]);
    if (s && s->opt && s->n == 0)
      return diag_error(L->d, n, "the optional is empty (known at compile time)");
    lower_forward(L, n->out[0], s && s->opt ? s->v[0] : n->in[0]);
    return true;
  default:
    return diag_error(L->d, n, "internal: not a sequence operator");
  }
}

/* ---- graph outputs ------------------------------------------------------- */

/* Appends the tensors of v (flattening optionals and sequences) to list. */
static void flatten(Lower *L, Value *v, Value ***list, int *n, int *cap) {
  v = lower_resolve(L, v);
  Seq *s = lower_seq(L, v);
  if (!s) {
    if (*n == *cap) {
      *cap = *cap ? *cap * 2 : 8;
      *list = realloc(*list, (size_t)*cap * sizeof **list);
      IR_ASSERT(*list);
    }
    (*list)[(*n)++] = v;
    return;
  }
  for (int i = 0; i < s->n; i++)
    flatten(L, s->v[i], list, n, cap);
}

bool lower_outputs(Lower *L) {
  Graph *g = L->g;
  int n_old = g->n_outputs;
  Value **old = malloc((size_t)(n_old + 1) * sizeof *old);
  IR_ASSERT(old);
  if (n_old)   /* g->outputs is NULL in a graph without outputs */
    memcpy(old, g->outputs, (size_t)n_old * sizeof *old);
  bool any = false;
  for (int i = 0; i < n_old; i++)
    any |= lower_seq(L, old[i]) != NULL;
  if (!any) {
    free(old);
    return true;
  }
  for (int i = 0; i < n_old; i++)
    old[i]->is_output = false;
  g->n_outputs = 0;
  for (int i = 0; i < n_old; i++) {
    if (!lower_seq(L, old[i])) {
      ir_output_add(g, lower_resolve(L, old[i]));
      continue;
    }
    Value **list = NULL;
    int n = 0, cap = 0;
    flatten(L, old[i], &list, &n, &cap);
    for (int k = 0; k < n; k++) {
      /* A fresh value per element: the same tensor may sit in two places. */
      Value *in[1] = {list[k]};
      Node *id = lower_node(L, NULL, OP_Identity, arena_printf(g->arena, "%s_%d", old[i]->name, k), 1, in);
      ir_output_add(g, id->out[0]);
    }
    free(list);
  }
  free(old);
  return lower_walk(L, g->first, NULL);
}

/* ---- graph inputs ------------------------------------------------------------ */

/* Makes v (an input being expanded) the output of a new node before pos. */
static Node *define_by(Graph *g, Node *pos, OpKind op, Value *v, int n_in, Value *const *in) {
  Node *n = ir_node_insert(g, pos, op, ir_ops[op].name, arena_printf(g->arena, "%s_expand", v->name), n_in, in, 0);
  n->n_out = 1;
  n->out = arena_alloc(g->arena, sizeof *n->out);
  n->out[0] = v;
  v->kind = VK_NODE;
  v->producer = n;
  v->out_index = 0;
  return n;
}

bool pass_expand_inputs(Graph *g, const SeqLen *lens, int n_lens, Diag *d) {
  int before = d->n_errors, n_in = g->n_inputs;
  Value **old = malloc((size_t)(n_in + 1) * sizeof *old), **elems = NULL;
  IR_ASSERT(old);
  if (n_in)   /* g->inputs is NULL in a graph without inputs */
    memcpy(old, g->inputs, (size_t)n_in * sizeof *old);
  int n_new = 0;
  Value **neu = NULL;
  for (int i = 0; i < n_in; i++) {
    Value *v = old[i];
    neu = realloc(neu, (size_t)(n_new + 1) * sizeof *neu);
    IR_ASSERT(neu);
    if (v->vt == VT_TENSOR) {
      neu[n_new++] = v;
      continue;
    }
    int64_t len = v->vt == VT_OPTIONAL ? 1 : -2;   /* -2: not given */
    for (int k = 0; k < n_lens; k++)
      if (strcmp(lens[k].name, v->name) == 0)
        len = lens[k].n;
    if (len == -2) {
      diag_error(d, NULL, "%s input '%s' needs its length at compile time (--elements %s=N)",
                 v->vt == VT_SEQUENCE ? "sequence" : "optional sequence", v->name, v->name);
      continue;
    }
    if (len < -1 || (v->vt == VT_OPTIONAL && len > 1) || (v->vt == VT_SEQUENCE && len < 0) || len > 4096) {
      diag_error(d, NULL, "input '%s': %lld elements is not valid for its type", v->name, (long long)len);
      continue;
    }
    if (v->dt == DT_UNDEF) {
      diag_error(d, NULL, "input '%s' has no element type", v->name);
      continue;
    }
    if (v->vt == VT_OPTIONAL && len == 0)
      len = -1;
    int count = len < 0 ? 0 : (int)len;
    elems = realloc(elems, (size_t)(count + 1) * sizeof *elems);
    neu = realloc(neu, (size_t)(n_new + count + 1) * sizeof *neu);
    IR_ASSERT(elems && neu);
    for (int k = 0; k < count; k++)
      neu[n_new++] = elems[k] = ir_input_add(g, arena_printf(g->arena, "%s_%d", v->name, k), v->dt, &v->shape);
    Node *pos = g->first;
    OpKind make = count ? OP_SequenceConstruct : OP_SequenceEmpty;
    if (len < 0) {
      define_by(g, pos, OP_Optional, v, 0, NULL);
    } else if (v->vt == VT_OPTIONAL) {
      define_by(g, pos, OP_Optional, v, 1, elems);
    } else if (v->vt == VT_SEQUENCE) {
      Node *sq = define_by(g, pos, make, v, count, elems);
      if (!count)
        ir_attr_set_int(sq, "dtype", v->dt);
    } else {
      Node *sq = ir_node_insert(g, pos, make, ir_ops[make].name, arena_printf(g->arena, "%s_seq", v->name),
                                count, elems, 1);
      define_by(g, pos, OP_Optional, v, 1, sq->out);
    }
  }
  if (n_new)
    memcpy(g->inputs, neu, (size_t)n_new * sizeof *neu);
  g->n_inputs = n_new;
  free(elems);
  free(old);
  free(neu);
  return d->n_errors == before;
}
