/* memplan.c - static memory planning into one arena.
 *
 * requires: a scheduled graph with static shapes.
 * provides: Plan: an offset for every intermediate tensor (node outputs that
 *           are not graph outputs), 64-byte aligned, such that tensors whose
 *           lifetimes overlap never overlap in memory; the lower bound (the
 *           largest total of live bytes at any step) and the naive sum.
 * invalidates: nothing; any later change to the schedule needs a new plan.
 * Algorithm: greedy by size (largest first); each tensor takes the lowest
 * offset that fits between the already placed tensors whose lifetimes overlap
 * its own. Lifetimes are closed intervals of schedule steps [first, last].
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

static int64_t align_up(int64_t x) { return (x + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN; }

static int cmp_size_desc(const void *a, const void *b) {
  const PlanTensor *x = a, *y = b;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  if (x->first != y->first)
    return x->first < y->first ? -1 : 1;
  return x->value_id - y->value_id;
}

static int cmp_offset(const void *a, const void *b) {
  const PlanTensor *const *x = a, *const *y = b;
  if ((*x)->offset != (*y)->offset)
    return (*x)->offset < (*y)->offset ? -1 : 1;
  return 0;
}

static bool overlap_time(const PlanTensor *a, const PlanTensor *b) {
  return a->first <= b->last && b->first <= a->last;
}

/* Places t at the lowest offset that clears every placed, time-overlapping tensor. */
static void place(PlanTensor *t, PlanTensor **placed, int n_placed, PlanTensor **tmp) {
  int k = 0;
  for (int i = 0; i < n_placed; i++)
    if (overlap_time(t, placed[i]))
      tmp[k++] = placed[i];
  qsort(tmp, (size_t)k, sizeof *tmp, cmp_offset);
  int64_t off = 0;
  for (int i = 0; i < k; i++) {
    if (tmp[i]->offset >= off + t->size)
      break;  /* the gap before tmp[i] is large enough */
    int64_t end = tmp[i]->offset + tmp[i]->size;
    if (end > off)
      off = end;
  }
  t->offset = off;
}

bool pass_memplan(Graph *g, Plan *plan, Diag *d) {
  memset(plan, 0, sizeof *plan);
  Arena *a = g->arena;
  plan->offset = arena_alloc(a, (size_t)(g->n_values + 1) * sizeof(int64_t));
  for (int i = 0; i < g->n_values; i++)
    plan->offset[i] = -1;
  plan->scratch_offset = arena_alloc(a, (size_t)(g->n_node_ids + 1) * sizeof(int64_t));
  plan->scratch_size = arena_alloc(a, (size_t)(g->n_node_ids + 1) * sizeof(int64_t));
  for (int i = 0; i < g->n_node_ids; i++)
    plan->scratch_offset[i] = -1;

  int *step = calloc((size_t)g->n_node_ids + 1, sizeof *step);
  IR_ASSERT(step);
  int n_steps = 0, count = 0;
  for (Node *n = g->first; n; n = n->next) {
    step[n->id] = n_steps++;
    for (int i = 0; i < n->n_out; i++)
      count += n->out[i]->kind == VK_NODE && !n->out[i]->is_output;
  }
  PlanTensor *ts = arena_alloc(a, (size_t)(count + 1) * sizeof *ts);
  int k = 0;
  for (Node *n = g->first; n; n = n->next)
    for (int i = 0; i < n->n_out; i++) {
      Value *v = n->out[i];
      if (v->kind != VK_NODE || v->is_output)
        continue;
      int64_t numel, bytes;
      if (!shape_numel(&v->shape, &numel) || !dtype_bytes(v->dt, numel, &bytes) ||
          bytes > INT64_MAX / 4) {
        free(step);
        return diag_error(d, n, "output '%s' is too large to plan", v->name);
      }
      PlanTensor *t = &ts[k++];
      t->value_id = v->id;
      t->size = align_up(bytes ? bytes : 1);
      t->first = step[n->id];
      t->last = t->first;
      for (int u = 0; u < v->n_uses; u++)
        if (step[v->uses[u]->id] > t->last)
          t->last = step[v->uses[u]->id];
    }
  IR_ASSERT(k == count);

  /* Lower bound: the heaviest step. Difference array over steps. */
  int64_t *delta = calloc((size_t)n_steps + 2, sizeof *delta);
  IR_ASSERT(delta);
  for (int i = 0; i < count; i++) {
    delta[ts[i].first] += ts[i].size;
    delta[ts[i].last + 1] -= ts[i].size;
    plan->naive_bytes += ts[i].size;
  }
  int64_t live = 0;
  for (int s = 0; s < n_steps; s++) {
    live += delta[s];
    if (live > plan->lower_bound_bytes)
      plan->lower_bound_bytes = live;
  }

  qsort(ts, (size_t)count, sizeof *ts, cmp_size_desc);
  PlanTensor **placed = malloc((size_t)(count + 1) * sizeof *placed);
  PlanTensor **tmp = malloc((size_t)(count + 1) * sizeof *tmp);
  IR_ASSERT(placed && tmp);
  for (int i = 0; i < count; i++) {
    place(&ts[i], placed, i, tmp);
    placed[i] = &ts[i];
    if (ts[i].offset + ts[i].size > plan->arena_bytes)
      plan->arena_bytes = ts[i].offset + ts[i].size;
    plan->offset[ts[i].value_id] = ts[i].offset;
  }
  plan->tensors = ts;
  plan->n_tensors = count;
  free(placed);
  free(tmp);
  free(delta);
  free(step);
  return true;
}

bool plan_validate(const Graph *g, const Plan *plan, Diag *d) {
  int before = d->n_errors;
  for (int i = 0; i < plan->n_tensors; i++) {
    const PlanTensor *a = &plan->tensors[i];
    const char *an = g->values[a->value_id]->name;
    if (a->offset % PLAN_ALIGN != 0 || a->offset < 0 || a->offset + a->size > plan->arena_bytes)
      diag_error(d, NULL, "memory plan: tensor '%s' at %lld+%lld is misplaced (arena %lld)", an,
                 (long long)a->offset, (long long)a->size, (long long)plan->arena_bytes);
    for (int j = i + 1; j < plan->n_tensors; j++) {
      const PlanTensor *b = &plan->tensors[j];
      if (overlap_time(a, b) && a->offset < b->offset + b->size && b->offset < a->offset + a->size)
        diag_error(d, NULL, "memory plan: tensors '%s' and '%s' are live together but overlap in memory",
                   an, g->values[b->value_id]->name);
    }
  }
  if (plan->arena_bytes < plan->lower_bound_bytes)
    diag_error(d, NULL, "memory plan: arena %lld is below the lower bound %lld",
               (long long)plan->arena_bytes, (long long)plan->lower_bound_bytes);
  return d->n_errors == before;
}
