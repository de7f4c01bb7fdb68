/* schedule.c - a memory-aware topological order.
 *
 * requires: a topologically sorted graph with static shapes.
 * provides: a topological order whose planned arena is no larger than the
 *           model's order (which wins ties); the lower bound of the model's
 *           order, for reports. Graphs with subgraphs keep their order.
 * invalidates: the schedule (a plan must be made after it).
 *
 * Candidates are list schedules over the ready nodes: "min-net" takes the node
 * that allocates the fewest bytes net of the buffers it frees (its outputs,
 * minus the inputs it is the last reader of; views allocate nothing), which
 * finishes cheap branches before opening expensive ones; "depth-first" takes
 * the node that reads the most recently produced value, so a branch runs to its
 * join before the next starts. Ties go to the model's order. Each candidate is
 * planned in full (memplan_plan) and the smallest arena kept, so the
 * scheduler's estimate never has to be exact.
 */
#include "memplan_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct Sched {
  const Graph *g;
  Node **orig;              /* model order */
  int n;
  int *pos;                 /* by node id: position in the model order */
  int *store;               /* by value id: value whose storage it uses (views share) */
  int64_t *bytes;           /* by value id: arena bytes of a storage root, 0 if none */
  int *uses_left;           /* by value id (storage roots): unread uses of the group */
  int *made;                /* by value id: step that produced it (-1: before the run) */
} Sched;

enum { MIN_NET, DEPTH_FIRST };

static bool is_view_node(const Node *n) {
  if (n->op == OP_Dropout)
    return n->n_out < 2 || n->out[1]->kind == VK_NONE;
  return (ir_ops[n->op].flags & OPF_VIEW) != 0;
}

static int64_t arena_bytes_of(const Value *v) {
  int64_t numel, bytes;
  if (v->kind != VK_NODE || v->is_output || !shape_numel_max(v->g, &v->shape, &numel) ||
      !dtype_bytes(v->dt, numel, &bytes))
    return 0;
  return (bytes + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
}

static void sched_init(Sched *s, const Graph *g) {
  s->g = g;
  s->orig = memplan_order(g);
  s->n = g->n_nodes;
  s->pos = malloc((size_t)(g->n_node_ids + 1) * sizeof *s->pos);
  s->store = malloc((size_t)(g->n_values + 1) * sizeof *s->store);
  s->bytes = calloc((size_t)g->n_values + 1, sizeof *s->bytes);
  s->uses_left = calloc((size_t)g->n_values + 1, sizeof *s->uses_left);
  s->made = malloc((size_t)(g->n_values + 1) * sizeof *s->made);
  IR_ASSERT(s->pos && s->store && s->bytes && s->uses_left && s->made);
  for (int i = 0; i < s->n; i++)
    s->pos[s->orig[i]->id] = i;
  for (int v = 0; v < g->n_values; v++)
    s->store[v] = v;
  for (int i = 0; i < s->n; i++) {
    const Node *n = s->orig[i];
    for (int k = 0; k < n->n_out; k++)
      if (n->out[k]->kind != VK_NONE)  /* a dropped output is the shared none value */
        s->bytes[n->out[k]->id] = arena_bytes_of(n->out[k]);
    if (is_view_node(n) && n->n_in > 0 && n->out[0]->kind == VK_NODE && !n->out[0]->is_output) {
      s->store[n->out[0]->id] = s->store[n->in[0]->id];
      s->bytes[n->out[0]->id] = 0;
    }
  }
}

static void sched_free(Sched *s) {
  free(s->orig);
  free(s->pos);
  free(s->store);
  free(s->bytes);
  free(s->uses_left);
  free(s->made);
}

/* Bytes n allocates minus the bytes whose last reader it is. */
static int64_t net_bytes(const Sched *s, const Node *n) {
  int64_t net = 0;
  for (int k = 0; k < n->n_out; k++)
    if (n->out[k]->kind == VK_NODE)
      net += s->bytes[n->out[k]->id];
  for (int k = 0; k < n->n_in; k++) {
    if (n->in[k]->kind != VK_NODE)
      continue;
    int r = s->store[n->in[k]->id], reads = 0;
    bool seen = false;
    for (int j = 0; j < n->n_in; j++) {
      if (n->in[j]->kind == VK_NODE && s->store[n->in[j]->id] == r)
        reads++;
      seen |= j < k && n->in[j]->kind == VK_NODE && s->store[n->in[j]->id] == r;
    }
    if (!seen && reads == s->uses_left[r])
      net -= s->bytes[r];
  }
  return net;
}

/* Latest step that produced one of n's inputs (-1 when none). */
static int newest_input(const Sched *s, const Node *n) {
  int m = -1;
  for (int k = 0; k < n->n_in; k++)
    if (n->in[k]->kind == VK_NODE && s->made[n->in[k]->id] > m)
      m = s->made[n->in[k]->id];
  return m;
}

/* A list schedule by `rule`; fills order[0..n). */
static void list_schedule(Sched *s, int rule, Node **order) {
  const Graph *g = s->g;
  int n = s->n;
  int *pending = calloc((size_t)n + 1, sizeof *pending);
  Node **ready = malloc((size_t)(n + 1) * sizeof *ready);
  IR_ASSERT(pending && ready);
  memset(s->uses_left, 0, (size_t)g->n_values * sizeof *s->uses_left);
  for (int v = 0; v < g->n_values; v++) {
    s->made[v] = -1;
    s->uses_left[s->store[v]] += g->values[v]->n_uses;
  }
  int nr = 0;
  for (int i = 0; i < n; i++) {
    const Node *x = s->orig[i];
    for (int k = 0; k < x->n_in; k++)
      pending[i] += x->in[k]->kind == VK_NODE && x->in[k]->producer != NULL;
    if (!pending[i])
      ready[nr++] = s->orig[i];
  }
  for (int step = 0; step < n; step++) {
    IR_ASSERT(nr > 0);
    int pick = 0;
    int64_t best_net = INT64_MAX;
    int best_new = -2;
    for (int i = 0; i < nr; i++) {
      int64_t net = rule == MIN_NET ? net_bytes(s, ready[i]) : 0;
      int nw = newest_input(s, ready[i]);
      bool better = net < best_net || (net == best_net && nw > best_new) ||
                    (net == best_net && nw == best_new && s->pos[ready[i]->id] < s->pos[ready[pick]->id]);
      if (better) {
        pick = i;
        best_net = net;
        best_new = nw;
      }
    }
    Node *x = ready[pick];
    ready[pick] = ready[--nr];
    order[step] = x;
    for (int k = 0; k < x->n_in; k++)
      if (x->in[k]->kind == VK_NODE)
        s->uses_left[s->store[x->in[k]->id]]--;
    for (int k = 0; k < x->n_out; k++) {
      Value *v = x->out[k];
      if (v->kind == VK_NONE)
        continue;
      s->made[v->id] = step;
      for (int u = 0; u < v->n_uses; u++)
        if (--pending[s->pos[v->uses[u]->id]] == 0)
          ready[nr++] = v->uses[u];
    }
  }
  free(pending);
  free(ready);
}

/* Planned arena of a schedule (and its lower bound); -1 after an error. */
static int64_t arena_of(const Graph *g, Node **order, int n, const Target *t, int64_t *lower_bound,
                        Diag *d) {
  Buffers b;
  const char *strategy;
  int64_t arena;
  if (!memplan_plan(g, order, n, t, &b, &arena, &strategy, d))
    return -1;
  if (lower_bound)
    *lower_bound = b.lower_bound;
  memplan_buffers_free(&b);
  return arena;
}

static void apply_order(Graph *g, Node **order, int n) {
  for (int i = 0; i < n; i++) {
    order[i]->prev = i ? order[i - 1] : NULL;
    order[i]->next = i + 1 < n ? order[i + 1] : NULL;
  }
  g->first = order[0];
  g->last = order[n - 1];
}

bool pass_schedule(Graph *g, const Target *t, int64_t *model_order_bound, Diag *d) {
  /* Subgraph reads are not uses, so the ready lists would not see them:
   * graphs with control flow keep the model's order. */
  bool fixed = false;
  for (const Node *n = g->first; n && !fixed; n = n->next)
    fixed = memplan_has_subgraph(n);
  Sched s;
  sched_init(&s, g);
  int n = s.n;
  Node **cand = malloc((size_t)(n + 1) * sizeof *cand), **best = NULL;
  IR_ASSERT(cand);
  int64_t bound = 0;
  int64_t best_arena = arena_of(g, s.orig, n, t, &bound, d);
  bool ok = best_arena >= 0;
  if (model_order_bound)
    *model_order_bound = bound;
  for (int rule = MIN_NET; ok && !fixed && n >= 3 && rule <= DEPTH_FIRST; rule++) {
    list_schedule(&s, rule, cand);
    int64_t arena = arena_of(g, cand, n, t, NULL, d);
    ok = arena >= 0;
    if (ok && arena < best_arena) {
      best_arena = arena;
      if (!best)
        best = malloc((size_t)(n + 1) * sizeof *best);
      IR_ASSERT(best);
      memcpy(best, cand, (size_t)n * sizeof *best);
    }
  }
  if (ok && best)
    apply_order(g, best, n);
  free(best);
  free(cand);
  sched_free(&s);
  return ok;
}
