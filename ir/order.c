/* order.c - stable topological sort (Kahn's algorithm with a min-heap keyed
 * on the current position, so a graph already in order is left untouched and
 * otherwise the model's order is kept wherever it is legal). */
#include "ir.h"

#include <stdlib.h>

static void heap_push(int *h, int *n, int x) {
  int i = (*n)++;
  h[i] = x;
  while (i > 0 && h[(i - 1) / 2] > h[i]) {
    int p = (i - 1) / 2, t = h[p];
    h[p] = h[i];
    h[i] = t;
    i = p;
  }
}

static int heap_pop(int *h, int *n) {
  int top = h[0];
  h[0] = h[--*n];
  for (int i = 0;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < *n && h[l] < h[m])
      m = l;
    if (r < *n && h[r] < h[m])
      m = r;
    if (m == i)
      break;
    int t = h[m];
    h[m] = h[i];
    h[i] = t;
    i = m;
  }
  return top;
}

bool ir_toposort(Graph *g, Diag *d) {
  int n = g->n_nodes;
  if (n == 0)
    return true;
  Node **order = calloc((size_t)n, sizeof *order);
  int *pos = calloc((size_t)g->n_node_ids, sizeof *pos);     /* node id -> position */
  int *pending = calloc((size_t)n, sizeof *pending);         /* by position */
  int *heap = calloc((size_t)n, sizeof *heap);
  IR_ASSERT(order && pos && pending && heap);
  int k = 0, nh = 0;
  for (Node *x = g->first; x; x = x->next) {
    pos[x->id] = k;
    order[k++] = x;
  }
  for (int i = 0; i < n; i++) {
    Node *x = order[i];
    for (int j = 0; j < x->n_in; j++)
      if (x->in[j]->kind == VK_NODE && x->in[j]->producer)
        pending[i]++;
    if (!pending[i])
      heap_push(heap, &nh, i);
  }
  Node **sorted = calloc((size_t)n, sizeof *sorted);
  IR_ASSERT(sorted);
  int m = 0;
  while (nh) {
    Node *x = order[heap_pop(heap, &nh)];
    sorted[m++] = x;
    for (int o = 0; o < x->n_out; o++)
      for (int u = 0; u < x->out[o]->n_uses; u++) {
        int p = pos[x->out[o]->uses[u]->id];
        if (--pending[p] == 0)
          heap_push(heap, &nh, p);
      }
  }
  bool ok = m == n;
  if (ok) {
    g->first = g->last = NULL;
    for (int i = 0; i < n; i++) {
      sorted[i]->prev = i ? sorted[i - 1] : NULL;
      sorted[i]->next = i + 1 < n ? sorted[i + 1] : NULL;
    }
    g->first = sorted[0];
    g->last = sorted[n - 1];
  } else {
    /* Walk back along unscheduled producers until a node repeats: that node
     * lies on a cycle, which is more useful to name than the first blocked one. */
    int i = 0;
    while (!pending[i])
      i++;
    char *seen = calloc((size_t)n, 1);
    IR_ASSERT(seen);
    while (!seen[i]) {
      seen[i] = 1;
      Node *x = order[i];
      for (int j = 0; j < x->n_in; j++) {
        Value *v = x->in[j];
        if (v->kind == VK_NODE && v->producer && pending[pos[v->producer->id]]) {
          i = pos[v->producer->id];
          break;
        }
      }
    }
    free(seen);
    diag_error(d, order[i], "graph has a cycle through this node (%d nodes cannot be ordered)",
               n - m);
  }
  free(order);
  free(pos);
  free(pending);
  free(heap);
  free(sorted);
  return ok;
}
