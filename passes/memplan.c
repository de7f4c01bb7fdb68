/* memplan.c - static memory planning into one arena.
 *
 * requires: a scheduled graph with static shapes.
 * provides: Plan: a buffer for every intermediate tensor and every node's
 *           scratch at a fixed, 64-byte aligned arena offset, such that buffers
 *           whose lifetimes overlap never share bytes; aliases for views and
 *           in-place results; the lower bound and the naive sum.
 * invalidates: nothing; any later change to the schedule needs a new plan.
 *
 * Buffers (memplan_buffers): walking the schedule once, a view's output
 * (Reshape, Flatten, Squeeze, Unsqueeze, Identity, inference Dropout) aliases
 * the root of its input and its node needs no code; an in-place capable node
 * writes over a dying input (rules in docs/memory.md) and its output aliases
 * that input's root; a Concat's inputs may become slices of its output. A
 * root's lifetime runs from the first step that writes it or any alias to the
 * last that reads one. A root that only reaches a graph output through views
 * is stored in that output's caller buffer. Every other intermediate gets a
 * buffer; lifetimes are closed intervals [first, last] of schedule steps.
 * Offsets come from memplan_place.c; memplan_plan tries the Concat slices on
 * and off and keeps the smaller arena. Guard mode (pass_memplan_guarded,
 * docs/guard.md) places every buffer grown by a red zone on each side, so
 * the emitters see ordinary offsets and the arena simply grows.
 */
#include "memplan_internal.h"
#include "movement.h"

#include <stdlib.h>
#include <string.h>

static int64_t align_up(int64_t x) { return (x + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN; }

/* Bytes of a value with a static shape, or at the upper bounds of the range
 * symbols (extents grow with them, so that size covers every value in the
 * ranges); -1 when unknown or absurdly large. */
static int64_t value_bytes(const Value *v) {
  int64_t numel, bytes;
  if (!ir_storage_numel(v, &numel) || !dtype_bytes(v->dt, numel, &bytes) || bytes > INT64_MAX / 4)
    return -1;
  return bytes;
}

static bool has_value(const Value *v) { return v->kind != VK_NONE; }

/* A node whose output 0 is its input 0 reinterpreted: same bytes, same type. */
static bool is_view(const Node *n) {
  bool view = (ir_ops[n->op].flags & OPF_VIEW) != 0;
  /* Inference Dropout forwards its input; the mask (output 1) is real work. */
  if (n->op == OP_Dropout)
    view = n->n_out < 2 || !has_value(n->out[1]);
  if (!view || n->n_in < 1 || n->n_out < 1 || !has_value(n->in[0]) || n->out[0]->kind != VK_NODE)
    return false;
  const Value *x = n->in[0], *y = n->out[0];
  int64_t bx = value_bytes(x);
  return x->dt == y->dt && bx >= 0 && bx == value_bytes(y);
}

/* Same element type and count: element i of x is read for element i of y
 * (an input with the output's element count is never broadcast). */
static bool same_elements(const Value *x, const Value *y) {
  int64_t a, b;
  return x->dt == y->dt && x->blocked == y->blocked && shape_numel(&x->shape, &a) && shape_numel(&y->shape, &b) &&
         a == b;
}

/* The root owning v's storage and v's byte offset in it. During the walk an
 * alias may point at a value that later became a slice of a Concat's output,
 * so this follows the chain. */
static int root_at(const Buffers *b, int v, int64_t *off) {
  int64_t o = 0;
  while (b->alias[v] >= 0) {
    o += b->alias_off[v];
    v = b->alias[v];
  }
  if (off)
    *off = o;
  return v;
}

static int root_of(const Buffers *b, const Value *v) { return root_at(b, v->id, NULL); }

/* A root that owns an arena buffer: an intermediate, not a caller's array. */
static bool in_arena(const Graph *g, const Buffers *b, int r) {
  const Value *v = g->values[r];
  return v->kind == VK_NODE && !v->is_output && b->alias[r] < 0;
}

/* The root whose buffer n may write its output 0 over, or -1. The input must
 * be an arena buffer that dies at this step and hold exactly the output's
 * elements and type. Other operands may share that buffer only in an
 * elementwise op, and only with the output's elements (so they are read at
 * the index being written); a general kernel promises nothing about them. */
static int inplace_root(const Graph *g, const Node *n, const Buffers *b, const int *grp_last, int s) {
  unsigned fl = ir_ops[n->op].flags;
  if (!(fl & OPF_INPLACE) || n->n_out < 1)
    return -1;
  const Value *y = n->out[0];
  if (y->kind != VK_NODE || y->is_output || b->alias[y->id] >= 0)
    return -1;
  /* Elementwise kernels read every operand at the output's index just before
   * storing it; other kernels (Softmax, norms) promise this of input 0 only. */
  int n_cand = (fl & OPF_EW) ? n->n_in : 1;
  for (int k = 0; k < n_cand && k < n->n_in; k++) {
    const Value *x = n->in[k];
    if (x->kind != VK_NODE)
      continue;
    int64_t off;
    int r = root_at(b, x->id, &off);
    if (!in_arena(g, b, r) || grp_last[r] != s || off != 0 || !same_elements(x, y) ||
        value_bytes(g->values[r]) != value_bytes(y))
      continue;
    bool ok = true;
    for (int j = 0; j < n->n_in && ok; j++)
      if (j != k && n->in[j]->kind == VK_NODE && root_of(b, n->in[j]) == r)
        ok = (fl & OPF_EW) && same_elements(n->in[j], y);
    if (ok)
      return r;
  }
  return -1;
}

/* Roots that reach a graph output only through views live in that output's
 * buffer: the producer writes there and the views need no copy. */
static void redirect_to_outputs(const Graph *g, Buffers *b) {
  for (int i = 0; i < g->n_outputs; i++) {
    const Value *o = g->outputs[i];
    bool repeat = false;
    for (int j = 0; j < i; j++)
      repeat |= g->outputs[j] == o;
    if (repeat || o->kind != VK_NODE || !o->producer || b->step[o->producer->id] < 0 ||
        !is_view(o->producer))
      continue;
    const Value *x = o->producer->in[0];
    while (x->kind == VK_NODE && !x->is_output && x->producer && is_view(x->producer))
      x = x->producer->in[0];
    if (x->kind == VK_NODE && !x->is_output && b->alias[x->id] < 0 && x->producer &&
        value_bytes(x) == value_bytes(o) && x->dt == o->dt)
      b->alias[x->id] = o->id;
  }
}

/* Last step that reads v; its producer's step when nothing does. */
static int last_use(const Buffers *b, const Value *v, int produced) {
  int last = b->sub_read[v->id] > produced ? b->sub_read[v->id] : produced;
  for (int u = 0; u < v->n_uses; u++) {
    int s = b->step[v->uses[u]->id];
    IR_ASSERT(s >= 0);  /* every consumer is scheduled */
    if (s > last)
      last = s;
  }
  return last;
}

/* Reads through a subgraph are captures (a nested body's go through its
 * parent body's); a body that captures nothing (FusedElementwise's) reads only
 * the node's inputs. */
bool memplan_has_subgraph(const Node *n) {
  for (int i = 0; i < n->n_attrs; i++) {
    const Attr *a = &n->attrs[i];
    if (a->kind == AT_GRAPH && a->u.g && a->u.g->n_captures > 0)
      return true;
    for (int k = 0; a->kind == AT_GRAPHS && k < a->n; k++)
      if (a->u.gs[k] && a->u.gs[k]->n_captures > 0)
        return true;
  }
  return false;
}

static void mark_sub_reads(const Graph *g, const Graph *sub, int s, int *sub_read) {
  for (int i = 0; sub && i < sub->n_captures; i++) {
    const Value *v = ir_value_find(g, sub->captures[i]->name);
    if (v && sub_read[v->id] < s)
      sub_read[v->id] = s;
  }
}

/* A node owning a subgraph reads what its bodies capture (a nested body
 * captures through its parent body, so the direct bodies name them all). */
static void subgraph_reads(const Graph *g, Node *const *order, int n_nodes, int *sub_read) {
  for (int i = 0; i < g->n_values; i++)
    sub_read[i] = -1;
  for (int s = 0; s < n_nodes; s++)
    for (int i = 0; i < order[s]->n_attrs; i++) {
      const Attr *a = &order[s]->attrs[i];
      if (a->kind == AT_GRAPH)
        mark_sub_reads(g, a->u.g, s, sub_read);
      for (int k = 0; a->kind == AT_GRAPHS && k < a->n; k++)
        mark_sub_reads(g, a->u.gs[k], s, sub_read);
    }
}

Node **memplan_order(const Graph *g) {
  Node **order = malloc((size_t)(g->n_nodes + 1) * sizeof *order);
  IR_ASSERT(order);
  int k = 0;
  for (Node *n = g->first; n; n = n->next)
    order[k++] = n;
  IR_ASSERT(k == g->n_nodes);
  return order;
}

void memplan_buffers_free(Buffers *b) {
  free(b->step);
  free(b->alias);
  free(b->alias_off);
  free(b->elided);
  free(b->scratch);
  free(b->sub_read);
  free(b->ts);
  memset(b, 0, sizeof *b);
}

/* Concat along an axis with only extent-1 dims before it: input k is the
 * bytes [off_k, off_k + size_k) of the output. An input that is a whole arena
 * buffer of its own (and not a repeat) becomes that slice: its producers write
 * straight into the output's buffer, which now lives from the earliest of
 * them. So does a run of consecutive inputs that are views of one arena buffer
 * at offsets 0, size_k, ... covering it exactly (the outputs of a Split, or of
 * sibling convs merged into one, concatenated back in order). The Concat
 * needs no code when every input moved; otherwise it copies the rest (and
 * copies the moved ones onto themselves, harmlessly). */
static void concat_slices(const Graph *g, const Node *n, Buffers *b, int *grp_first, int *grp_last) {
  const Value *y = n->out[0];
  int axis;
  if (n->op != OP_Concat || y->kind != VK_NODE || dtype_bits(y->dt) < 8 || n->n_in > 4096 ||
      !shape_axis(ir_attr_int(n, "axis", 0), y->shape.rank, &axis) || !shape_is_static(&y->shape))
    return;   /* (with extents known only at run time the slices would move) */
  for (int i = 0; i < axis; i++)
    if (y->shape.d[i] != 1)
      return;
  int64_t base;
  int R = root_at(b, y->id, &base), roots[4096];
  bool in_run[4096]; /* a later input of a run: stored with the run's first */
  for (int k = 0; k < n->n_in; k++) {
    int64_t off = 0;
    in_run[k] = false;
    roots[k] = n->in[k]->kind == VK_NODE ? root_at(b, n->in[k]->id, &off) : -1;
    if (roots[k] < 0 || off != 0 || !in_arena(g, b, roots[k]) || roots[k] == R || n->in[k]->dt != y->dt) {
      roots[k] = -1;
      continue;
    }
    int64_t whole = value_bytes(g->values[roots[k]]), have = value_bytes(n->in[k]);
    int j = k + 1;
    for (; j < n->n_in && have < whole && n->in[j]->kind == VK_NODE && n->in[j]->dt == y->dt; j++) {
      int64_t o;
      if (root_at(b, n->in[j]->id, &o) != roots[k] || o != have)
        break;
      have += value_bytes(n->in[j]);
    }
    if (have != whole) {
      roots[k] = -1;
      continue;
    }
    for (int i = 0; i < k && roots[k] >= 0; i++)
      if (roots[i] == roots[k])
        roots[k] = -1;
    if (roots[k] < 0)
      continue;
    for (int i = k + 1; i < j; i++) {
      in_run[i] = true;
      roots[i] = -1;
    }
    k = j - 1;
  }
  bool all = true;
  int64_t off = 0;
  for (int k = 0; k < n->n_in; k++) {
    int r = roots[k];
    if (r >= 0) {
      b->alias[r] = R;
      b->alias_off[r] = base + off;
      b->n_slices++;
      if (in_arena(g, b, R)) {
        grp_first[R] = grp_first[r] < grp_first[R] ? grp_first[r] : grp_first[R];
        grp_last[R] = grp_last[r] > grp_last[R] ? grp_last[r] : grp_last[R];
      }
    }
    all &= r >= 0 || in_run[k];
    off += value_bytes(n->in[k]);
  }
  b->elided[n->id] = all && off == value_bytes(y);
}

/* Split along an axis with only extent-1 dims before it (channels at batch
 * 1): output k is the bytes [off_k, off_k + size_k) of the input, so each
 * output becomes a view of the input's root at that offset and the Split
 * needs no code. Not when an output is a graph output (the Split copies into
 * the caller's arrays), omitted, or of sub-byte or string type. */
static bool split_views(const Graph *g, const Node *n, Buffers *b, int *grp_last, int s) {
  const Value *x = n->in[0];
  int axis;
  if (n->op != OP_Split || x->kind == VK_NONE || dtype_bits(x->dt) < 8 || x->dt == DT_STRING ||
      !shape_is_static(&x->shape) || !shape_axis(ir_attr_int(n, "axis", 0), x->shape.rank, &axis))
    return false;
  for (int i = 0; i < axis; i++)
    if (x->shape.d[i] != 1)
      return false;
  int64_t total = 0;
  for (int k = 0; k < n->n_out; k++) {
    const Value *y = n->out[k];
    if (y->kind != VK_NODE || y->is_output || y->dt != x->dt || !shape_is_static(&y->shape))
      return false;
    total += value_bytes(y);
  }
  if (total != value_bytes(x))
    return false;
  int64_t base, off = 0;
  int r = root_at(b, x->id, &base);
  for (int k = 0; k < n->n_out; k++) {
    const Value *y = n->out[k];
    b->alias[y->id] = r;
    b->alias_off[y->id] = base + off;
    off += value_bytes(y);
    if (in_arena(g, b, r) && last_use(b, y, s) > grp_last[r])
      grp_last[r] = last_use(b, y, s);
  }
  b->elided[n->id] = true;
  return true;
}

/* A Slice whose result is one contiguous byte range of its input (the axes
 * before the sliced one keep one index, the sliced one has step 1, the axes
 * after it are whole: channels at batch 1, rows of a matrix) is a view of
 * the input's root at that range's offset, with no code. */
static bool slice_view(const Graph *g, const Node *n, Buffers *b, int *grp_last, int s) {
  const Value *x = n->in[0], *y = n->out[0];
  if (n->op != OP_Slice || x->kind == VK_NONE || y->kind != VK_NODE || y->is_output || y->dt != x->dt ||
      dtype_bits(x->dt) < 8 || x->dt == DT_STRING || !shape_is_static(&x->shape) ||
      !shape_is_static(&y->shape) || value_bytes(y) <= 0)
    return false;
  SliceDim sd[IR_MAX_RANK];
  Diag d;
  diag_init(&d, "", NULL);
  int known = mv_slice_params(n, &d, sd);
  diag_free(&d);
  if (known != MV_KNOWN)
    return false;
  int r = x->shape.rank, p = -1;
  int64_t off = 0, stride = value_bytes(x);
  for (int i = 0; i < r; i++) {
    if (sd[i].count == -2)
      sd[i] = (SliceDim){0, 1, x->shape.d[i]};
    if (sd[i].count < 0 || sd[i].count != y->shape.d[i])
      return false;
    if (sd[i].count != x->shape.d[i] || sd[i].start != 0 || sd[i].step != 1) /* (a reversal is not whole) */
      p = i;
  }
  for (int i = 0; i < r; i++) {
    stride /= x->shape.d[i];
    if ((i < p && sd[i].count != 1) || (i == p && sd[i].step != 1))
      return false;
    off += sd[i].start * stride;
  }
  int64_t base;
  int root = root_at(b, x->id, &base);
  b->alias[y->id] = root;
  b->alias_off[y->id] = base + off;
  b->elided[n->id] = true;
  if (in_arena(g, b, root) && last_use(b, y, s) > grp_last[root])
    grp_last[root] = last_use(b, y, s);
  return true;
}

/* Walks the schedule: aliases, roots and their group lifetimes. */
static bool assign_roots(const Graph *g, Node *const *order, int n_nodes, bool slices,
                         const Target *t, Buffers *b, int *grp_first, int *grp_last, Diag *d) {
  for (int s = 0; s < n_nodes; s++) {
    const Node *n = order[s];
    for (int i = 0; i < n->n_out; i++)
      if (n->out[i]->kind == VK_NODE && value_bytes(n->out[i]) < 0)
        return diag_error(d, n, "output '%s' is too large to plan", n->out[i]->name);
    if (is_view(n)) {
      const Value *y = n->out[0];
      int64_t off;
      int r = root_at(b, n->in[0]->id, &off);
      if (!y->is_output) {
        b->alias[y->id] = r;
        b->alias_off[y->id] = off;
        b->elided[n->id] = true;
        if (in_arena(g, b, r) && last_use(b, y, s) > grp_last[r])
          grp_last[r] = last_use(b, y, s);
        continue;
      }
      if (r == y->id) {  /* the input was redirected into this output */
        b->elided[n->id] = true;
        continue;
      }
    }
    if (split_views(g, n, b, grp_last, s) || slice_view(g, n, b, grp_last, s))
      continue;
    b->scratch[n->id] = t ? t->scratch_bytes(t, n) : 0;
    int r = inplace_root(g, n, b, grp_last, s);
    for (int i = 0; i < n->n_out; i++) {
      const Value *v = n->out[i];
      if (v->kind != VK_NODE || v->is_output)
        continue;
      if (i == 0 && r >= 0) {
        b->alias[v->id] = r;
        grp_last[r] = last_use(b, v, s);
      } else if (b->alias[v->id] < 0) {
        grp_first[v->id] = s;
        grp_last[v->id] = last_use(b, v, s);
      }
    }
    if (slices)
      concat_slices(g, n, b, grp_first, grp_last);
  }
  return true;
}

/* Lower bound: the bytes live at the heaviest step (a difference array over
 * steps). */
static int64_t heaviest_step(const Buffers *b) {
  int64_t *delta = calloc((size_t)b->n_steps + 2, sizeof *delta);
  IR_ASSERT(delta);
  for (int i = 0; i < b->n; i++) {
    delta[b->ts[i].first] += b->ts[i].size;
    delta[b->ts[i].last + 1] -= b->ts[i].size;
  }
  int64_t live = 0, most = 0;
  for (int s = 0; s < b->n_steps; s++) {
    live += delta[s];
    if (live > most)
      most = live;
  }
  free(delta);
  return most;
}

bool memplan_buffers(const Graph *g, Node *const *order, int n_nodes, bool slices,
                     const Target *t, Buffers *b, Diag *d) {
  memset(b, 0, sizeof *b);
  b->n_steps = n_nodes;
  b->step = malloc((size_t)(g->n_node_ids + 1) * sizeof *b->step);
  b->alias = malloc((size_t)(g->n_values + 1) * sizeof *b->alias);
  b->alias_off = calloc((size_t)g->n_values + 1, sizeof *b->alias_off);
  b->elided = calloc((size_t)g->n_node_ids + 1, sizeof *b->elided);
  b->scratch = calloc((size_t)g->n_node_ids + 1, sizeof *b->scratch);
  b->sub_read = malloc((size_t)(g->n_values + 1) * sizeof *b->sub_read);
  int *grp_last = calloc((size_t)g->n_values + 1, sizeof *grp_last);
  int *grp_first = calloc((size_t)g->n_values + 1, sizeof *grp_first);
  IR_ASSERT(b->step && b->alias && b->alias_off && b->elided && b->scratch && b->sub_read &&
            grp_last && grp_first);
  for (int i = 0; i < g->n_node_ids; i++)
    b->step[i] = -1;
  for (int i = 0; i < g->n_values; i++)
    b->alias[i] = -1;
  for (int s = 0; s < n_nodes; s++)
    b->step[order[s]->id] = s;
  subgraph_reads(g, order, n_nodes, b->sub_read);
  redirect_to_outputs(g, b);
  if (!assign_roots(g, order, n_nodes, slices, t, b, grp_first, grp_last, d)) {
    free(grp_last);
    free(grp_first);
    memplan_buffers_free(b);
    return false;
  }
  /* Every alias straight to its root, with its byte offset there. */
  for (int v = 0; v < g->n_values; v++)
    if (b->alias[v] >= 0) {
      int64_t off;
      b->alias[v] = root_at(b, v, &off);
      b->alias_off[v] = off;
    }

  int count = 0;
  for (int s = 0; s < n_nodes; s++) {
    const Node *n = order[s];
    count += b->scratch[n->id] > 0;
    for (int i = 0; i < n->n_out; i++)
      count += n->out[i]->kind == VK_NODE && in_arena(g, b, n->out[i]->id);
  }
  b->ts = calloc((size_t)count + 1, sizeof *b->ts);
  IR_ASSERT(b->ts);
  for (int s = 0; s < n_nodes; s++) {
    const Node *n = order[s];
    for (int i = 0; i < n->n_out; i++) {
      const Value *v = n->out[i];
      if (v->kind != VK_NODE || v->is_output)
        continue;
      int64_t size = align_up(value_bytes(v) ? value_bytes(v) : 1);
      b->naive += size;
      if (in_arena(g, b, v->id))
        b->ts[b->n++] = (PlanTensor){v->id, -1, 0, size, grp_first[v->id], grp_last[v->id]};
    }
  }
  for (int s = 0; s < n_nodes; s++) {
    const Node *n = order[s];
    if (b->scratch[n->id] > 0) {
      int64_t size = align_up(b->scratch[n->id]);
      b->naive += size;
      /* Characters of strings a node made stay until the end (docs/strings.md). */
      b->ts[b->n++] = (PlanTensor){-1, n->id, 0, size, s, t->scratch_persists(t, n) ? n_nodes - 1 : s};
    }
  }
  IR_ASSERT(b->n == count);
  free(grp_last);
  free(grp_first);

  b->lower_bound = heaviest_step(b);
  return true;
}

/* Guard mode: every buffer grows by a red zone on each side before placement
 * (pass_memplan_guarded moves the offsets past the leading one). */
static void pad_buffers(Buffers *b, int64_t redzone) {
  if (redzone == 0)
    return;
  for (int i = 0; i < b->n; i++)
    b->ts[i].size += 2 * redzone;
  b->lower_bound = heaviest_step(b);
}

static bool plan_padded(const Graph *g, Node *const *order, int n_nodes, const Target *t, int64_t redzone,
                        Buffers *b, int64_t *arena, const char **strategy, Diag *d) {
  if (!memplan_buffers(g, order, n_nodes, true, t, b, d))
    return false;
  pad_buffers(b, redzone);
  *arena = memplan_place(b->ts, b->n, b->lower_bound, strategy);
  if (b->n_slices == 0)
    return true;
  Buffers plain;
  const char *plain_strategy;
  if (!memplan_buffers(g, order, n_nodes, false, t, &plain, d)) {
    memplan_buffers_free(b);
    return false;
  }
  pad_buffers(&plain, redzone);
  int64_t plain_arena = memplan_place(plain.ts, plain.n, plain.lower_bound, &plain_strategy);
  if (plain_arena < *arena) {
    memplan_buffers_free(b);
    *b = plain;
    *arena = plain_arena;
    *strategy = plain_strategy;
  } else {
    memplan_buffers_free(&plain);
  }
  return true;
}

bool memplan_plan(const Graph *g, Node *const *order, int n_nodes, const Target *t, Buffers *b,
                  int64_t *arena, const char **strategy, Diag *d) {
  return plan_padded(g, order, n_nodes, t, 0, b, arena, strategy, d);
}

bool pass_memplan(Graph *g, Plan *plan, const Target *target, Diag *d) {
  return pass_memplan_guarded(g, plan, target, 0, d);
}

/* Guard mode: each padded buffer [p, p + size + 2 redzone) keeps only its
 * exact bytes at p + redzone, and everything moves up past the header. */
static void unpad_buffers(const Graph *g, Buffers *b, int64_t redzone, int64_t *arena) {
  if (redzone == 0)
    return;
  for (int i = 0; i < b->n; i++) {
    PlanTensor *t = &b->ts[i];
    t->offset += PLAN_GUARD_HEADER + redzone;
    t->size = t->value_id >= 0 ? value_bytes(g->values[t->value_id]) : b->scratch[t->node_id];
  }
  *arena += PLAN_GUARD_HEADER;
}

bool pass_memplan_guarded(Graph *g, Plan *plan, const Target *target, int64_t redzone, Diag *d) {
  IR_ASSERT(redzone >= 0 && redzone % PLAN_ALIGN == 0);
  memset(plan, 0, sizeof *plan);
  Node **order = memplan_order(g);
  Buffers b;
  bool ok = plan_padded(g, order, g->n_nodes, target, redzone, &b, &plan->arena_bytes, &plan->strategy, d);
  free(order);
  if (!ok)
    return false;
  unpad_buffers(g, &b, redzone, &plan->arena_bytes);
  plan->redzone = redzone;
  Arena *a = g->arena;
  plan->lower_bound_bytes = b.lower_bound;
  plan->naive_bytes = b.naive;
  plan->n_steps = b.n_steps;
  plan->n_tensors = b.n;
  plan->tensors = arena_dup(a, b.ts, (size_t)(b.n + 1) * sizeof *b.ts);
  plan->offset = arena_alloc(a, (size_t)(g->n_values + 1) * sizeof *plan->offset);
  plan->alias = arena_dup(a, b.alias, (size_t)(g->n_values + 1) * sizeof *plan->alias);
  plan->alias_offset = arena_dup(a, b.alias_off, (size_t)(g->n_values + 1) * sizeof *plan->alias_offset);
  plan->elided = arena_dup(a, b.elided, (size_t)(g->n_node_ids + 1) * sizeof *plan->elided);
  plan->scratch_offset = arena_alloc(a, (size_t)(g->n_node_ids + 1) * sizeof(int64_t));
  plan->scratch_size = arena_alloc(a, (size_t)(g->n_node_ids + 1) * sizeof(int64_t));
  for (int i = 0; i < g->n_values; i++)
    plan->offset[i] = -1;
  for (int i = 0; i < g->n_node_ids; i++)
    plan->scratch_offset[i] = -1;
  for (int i = 0; i < b.n; i++) {
    const PlanTensor *t = &b.ts[i];
    if (t->value_id >= 0) {
      plan->offset[t->value_id] = t->offset;
    } else {
      plan->scratch_offset[t->node_id] = t->offset;
      plan->scratch_size[t->node_id] = b.scratch[t->node_id];
      if (b.scratch[t->node_id] > plan->scratch_bytes)
        plan->scratch_bytes = b.scratch[t->node_id];
    }
  }
  for (int i = 0; i < g->n_values; i++)
    if (b.alias[i] >= 0 && plan->offset[b.alias[i]] >= 0)
      plan->offset[i] = plan->offset[b.alias[i]] + b.alias_off[i];
  memplan_buffers_free(&b);
  return true;
}

static bool overlap_time(const PlanTensor *a, const PlanTensor *b) {
  return a->first <= b->last && b->first <= a->last;
}

static const char *tensor_name(const Graph *g, const PlanTensor *t) {
  if (t->value_id >= 0)
    return g->values[t->value_id]->name;
  return g->nodes[t->node_id] ? g->nodes[t->node_id]->name : "?";
}

/* The bytes a buffer owns: its own, and in guard mode its red zones. */
static int64_t extent_lo(const Plan *plan, const PlanTensor *t) { return t->offset - plan->redzone; }
static int64_t extent_hi(const Plan *plan, const PlanTensor *t) {
  return plan->redzone ? align_up(t->offset + t->size) + plan->redzone : t->offset + t->size;
}

static int cmp_first(const void *a, const void *b) {
  const PlanTensor *const *x = a, *const *y = b;
  return (*x)->first != (*y)->first ? ((*x)->first < (*y)->first ? -1 : 1) : 0;
}

/* Checks buffers pairwise, sweeping in order of first step so that only
 * lifetime-overlapping pairs are compared. */
static void check_overlaps(const Graph *g, const Plan *plan, Diag *d) {
  int n = plan->n_tensors;
  const PlanTensor **by_first = malloc((size_t)(n + 1) * sizeof *by_first);
  IR_ASSERT(by_first);
  for (int i = 0; i < n; i++)
    by_first[i] = &plan->tensors[i];
  qsort(by_first, (size_t)n, sizeof *by_first, cmp_first);
  for (int i = 0; i < n; i++) {
    const PlanTensor *a = by_first[i];
    for (int j = i + 1; j < n && by_first[j]->first <= a->last; j++) {
      const PlanTensor *t = by_first[j];
      if (overlap_time(a, t) && extent_lo(plan, a) < extent_hi(plan, t) && extent_lo(plan, t) < extent_hi(plan, a))
        diag_error(d, NULL, "memory plan: '%s' and '%s' are live together but overlap in memory",
                   tensor_name(g, a), tensor_name(g, t));
    }
  }
  free(by_first);
}

/* Every value a node reads or writes must resolve to storage: its own buffer,
 * a root's, or a caller's array; a buffer must cover every step that uses it. */
static void check_coverage(const Graph *g, const Plan *plan, Diag *d) {
  int *step = malloc((size_t)(g->n_node_ids + 1) * sizeof *step);
  const PlanTensor **of = calloc((size_t)g->n_values + 1, sizeof *of);
  IR_ASSERT(step && of);
  int s = 0;
  for (Node *n = g->first; n; n = n->next)
    step[n->id] = s++;
  for (int i = 0; i < plan->n_tensors; i++)
    if (plan->tensors[i].value_id >= 0)
      of[plan->tensors[i].value_id] = &plan->tensors[i];
  for (Node *n = g->first; n; n = n->next)
    for (int k = 0; k < n->n_in + n->n_out; k++) {
      const Value *v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
      if (v->kind != VK_NODE)
        continue;
      int r = plan->alias && plan->alias[v->id] >= 0 ? plan->alias[v->id] : v->id;
      const Value *root = g->values[r];
      if (root->is_output || root->kind == VK_INPUT || root->kind == VK_CONST)
        continue;
      const PlanTensor *t = of[r];
      if (!t)
        diag_error(d, n, "memory plan: '%s' has no storage", v->name);
      else if (step[n->id] < t->first || step[n->id] > t->last)
        diag_error(d, n, "memory plan: '%s' is used at step %d outside its buffer's lifetime [%d, %d]",
                   v->name, step[n->id], t->first, t->last);
      else if (plan->offset[v->id] != t->offset + (r != v->id && plan->alias_offset ? plan->alias_offset[v->id] : 0) ||
               plan->offset[v->id] + value_bytes(v) > t->offset + value_bytes(root))
        diag_error(d, n, "memory plan: '%s' is not inside its root's buffer", v->name);
    }
  free(step);
  free(of);
}

/* With extents known at run time (-D ranges, data-dependent extents), the
 * plan sized every buffer at the symbols' upper bounds. Checks at the low
 * end, the middle and the top of the ranges (derived symbols computed from
 * the others) that each buffer's bytes there fit its planned size. */
static void check_ranges(const Graph *g, const Plan *plan, Diag *d) {
  if (g->n_syms == 0)
    return;
  for (int step = 0; step <= 2; step++) {
    int64_t vals[IR_MAX_SYMS];
    for (int k = 0; k < g->n_syms; k++) {
      const DimSym *s = &g->syms[k];
      int64_t v = 0;
      if (s->den > 0 && dx_eval(s->num, vals, &v))
        vals[k] = v / s->den;
      else
        vals[k] = s->lo + (s->hi - s->lo) * step / 2;
    }
    for (int i = 0; i < plan->n_tensors; i++) {
      const PlanTensor *t = &plan->tensors[i];
      const Value *v = t->value_id >= 0 ? g->values[t->value_id] : NULL;
      if (!v || shape_is_static(&v->shape) || !shape_is_bounded(&v->shape))
        continue;
      int64_t n = 1, b = 0;
      for (int k = 0; k < v->shape.rank; k++) {
        int64_t e = v->shape.d[k];
        if (e < 0 && !dx_eval(v->shape.x[k], vals, &e))
          e = -1;
        n = e < 0 || n < 0 ? -1 : n * e;
      }
      if (n < 0 || !dtype_bytes(v->dt, n, &b) || b > t->size)
        diag_error(d, NULL, "memory plan: '%s' needs %lld bytes at %s of its dims' ranges, planned %lld",
                   v->name, (long long)b, step == 0 ? "the low end" : step == 1 ? "the middle" : "the top",
                   (long long)t->size);
    }
  }
}

bool plan_validate(const Graph *g, const Plan *plan, Diag *d) {
  int before = d->n_errors;
  for (int i = 0; i < plan->n_tensors; i++) {
    const PlanTensor *a = &plan->tensors[i];
    if (a->offset % PLAN_ALIGN != 0 || a->size < 0 || extent_hi(plan, a) > plan->arena_bytes ||
        extent_lo(plan, a) < (plan->redzone ? PLAN_GUARD_HEADER : 0))
      diag_error(d, NULL, "memory plan: '%s' at %lld+%lld is misplaced (arena %lld)", tensor_name(g, a),
                 (long long)a->offset, (long long)a->size, (long long)plan->arena_bytes);
  }
  check_overlaps(g, plan, d);
  check_coverage(g, plan, d);
  check_ranges(g, plan, d);
  if (plan->arena_bytes < plan->lower_bound_bytes)
    diag_error(d, NULL, "memory plan: arena %lld is below the lower bound %lld",
               (long long)plan->arena_bytes, (long long)plan->lower_bound_bytes);
  return d->n_errors == before;
}
