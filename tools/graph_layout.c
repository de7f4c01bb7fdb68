/* graph_layout.c - a layered layout of a DAG for onnxc graph, no Graphviz.
 *
 * 1. Layers: longest path from the sources, in index order (the nodes come
 *    in topological order); a source then moves down to just above its
 *    first consumer, so a kernel fed only by weights sits next to its use.
 * 2. Every edge spanning k > 1 layers gets k - 1 dummy nodes, one a layer,
 *    so that later steps see only edges between adjacent layers; the edges
 *    leaving one node share one chain (a trunk with branches).
 * 3. Order within layers: barycenter sweeps, down then up, twice; each
 *    layer is sorted by the mean position of its neighbours in the layer
 *    before it (ties keep the current order: deterministic).
 * 4. x: each node wants the mean x of its neighbours in the previous layer;
 *    a left-to-right scan keeps the order and the gaps, then the layer shifts
 *    so that its mean displacement is zero. y: rows as tall as their tallest box.
 * Every step is linear in nodes + edges except the sorts.
 */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

#define GL_MARGIN 20.0
#define GL_GAP_X 28.0      /* between boxes of a layer */
#define GL_GAP_Y 56.0      /* between layers: room for edge labels */
#define GL_DUMMY_W 14.0

void graph_layout_init(GraphLayout *l) { memset(l, 0, sizeof *l); }

void graph_layout_free(GraphLayout *l) {
  free(l->nodes);
  free(l->edges);
  free(l->bends);
  free(l->layer_y);
  free(l->layer_h);
  memset(l, 0, sizeof *l);
}

static int add_node(GraphLayout *l, double w, double h, bool dummy) {
  if (l->n_nodes == l->cap_nodes) {
    l->cap_nodes = l->cap_nodes ? 2 * l->cap_nodes : 64;
    l->nodes = realloc(l->nodes, (size_t)l->cap_nodes * sizeof *l->nodes);
    IR_ASSERT(l->nodes);
  }
  GlNode *n = &l->nodes[l->n_nodes];
  memset(n, 0, sizeof *n);
  n->w = w;
  n->h = h;
  n->dummy = dummy;
  return l->n_nodes++;
}

int graph_layout_node(GraphLayout *l, double w, double h) {
  IR_ASSERT(l->n_nodes == l->n_real); /* no real node after the dummies */
  l->n_real++;
  return add_node(l, w, h, false);
}

void graph_layout_edge(GraphLayout *l, int from, int to) {
  IR_ASSERT(from >= 0 && from < to && to < l->n_real);
  if (l->n_edges == l->cap_edges) {
    l->cap_edges = l->cap_edges ? 2 * l->cap_edges : 64;
    l->edges = realloc(l->edges, (size_t)l->cap_edges * sizeof *l->edges);
    IR_ASSERT(l->edges);
  }
  l->edges[l->n_edges++] = (GlEdge){from, to, 0, 0, false};
}

/* Adjacency between adjacent layers, as compressed lists: up[v] the
 * neighbours one layer above, down[v] those one layer below. */
typedef struct Adj {
  int *up_start, *up;      /* up[up_start[v] .. up_start[v + 1]) */
  int *dn_start, *dn;
} Adj;

/* The nodes an edge passes, k = 0 .. n_dummies + 1: its source, its dummies, its target. */
static int seg_node(const GraphLayout *l, const GlEdge *e, int k) {
  return k == 0 ? e->from : k == e->n_dummies + 1 ? e->to : l->bends[e->bend0 + k - 1];
}

/* The first segment an edge adds: a shared chain's segments come once, from its owner. */
static int first_seg(const GlEdge *e) { return e->shared ? e->n_dummies : 0; }

static void adj_build(const GraphLayout *l, Adj *a) {
  int n = l->n_nodes;
  a->up_start = calloc((size_t)n + 2, sizeof(int));
  a->dn_start = calloc((size_t)n + 2, sizeof(int));
  int segs = 0;
  for (int i = 0; i < l->n_edges; i++)
    segs += l->edges[i].shared ? 1 : l->edges[i].n_dummies + 1;
  a->up = malloc(((size_t)segs + 1) * sizeof(int));
  a->dn = malloc(((size_t)segs + 1) * sizeof(int));
  IR_ASSERT(a->up_start && a->dn_start && a->up && a->dn);
  for (int i = 0; i < l->n_edges; i++)
    for (int k = first_seg(&l->edges[i]); k <= l->edges[i].n_dummies; k++) {
      a->dn_start[seg_node(l, &l->edges[i], k) + 1]++;
      a->up_start[seg_node(l, &l->edges[i], k + 1) + 1]++;
    }
  for (int v = 0; v < n; v++) {
    a->up_start[v + 1] += a->up_start[v];
    a->dn_start[v + 1] += a->dn_start[v];
  }
  int *fill_up = calloc((size_t)n + 1, sizeof(int)), *fill_dn = calloc((size_t)n + 1, sizeof(int));
  IR_ASSERT(fill_up && fill_dn);
  for (int i = 0; i < l->n_edges; i++)
    for (int k = first_seg(&l->edges[i]); k <= l->edges[i].n_dummies; k++) {
      int s = seg_node(l, &l->edges[i], k), t = seg_node(l, &l->edges[i], k + 1);
      a->dn[a->dn_start[s] + fill_dn[s]++] = t;
      a->up[a->up_start[t] + fill_up[t]++] = s;
    }
  free(fill_up);
  free(fill_dn);
}

static void adj_free(Adj *a) {
  free(a->up_start);
  free(a->up);
  free(a->dn_start);
  free(a->dn);
}

/* Step 1: longest-path layers, then sources pulled down to their consumers. */
static void assign_layers(GraphLayout *l) {
  int n = l->n_real;
  int *min_succ = malloc(((size_t)n + 1) * sizeof(int));
  bool *has_pred = calloc((size_t)n + 1, sizeof(bool));
  IR_ASSERT(min_succ && has_pred);
  for (int v = 0; v < n; v++) {
    l->nodes[v].layer = 0;
    min_succ[v] = -1;
  }
  /* in-edges grouped by target (a counting sort); visiting targets in index
   * order settles a node's layer before any edge leaving it is read, since
   * every edge goes from a lower index to a higher one */
  int *order = malloc(((size_t)l->n_edges + 1) * sizeof(int));
  int *start = calloc((size_t)n + 2, sizeof(int));
  IR_ASSERT(order && start);
  for (int i = 0; i < l->n_edges; i++)
    start[l->edges[i].to + 1]++;
  for (int v = 0; v < n; v++)
    start[v + 1] += start[v];
  int *fill = calloc((size_t)n + 1, sizeof(int));
  IR_ASSERT(fill);
  for (int i = 0; i < l->n_edges; i++)
    order[start[l->edges[i].to] + fill[l->edges[i].to]++] = i;
  for (int v = 0; v < n; v++)
    for (int k = start[v]; k < start[v + 1]; k++) {
      const GlEdge *e = &l->edges[order[k]];
      if (l->nodes[e->from].layer + 1 > l->nodes[v].layer)
        l->nodes[v].layer = l->nodes[e->from].layer + 1;
      has_pred[v] = true;
    }
  for (int i = 0; i < l->n_edges; i++) {
    const GlEdge *e = &l->edges[i];
    int lt = l->nodes[e->to].layer;
    if (min_succ[e->from] < 0 || lt < min_succ[e->from])
      min_succ[e->from] = lt;
  }
  l->n_layers = 0;
  for (int v = 0; v < n; v++) {
    if (!has_pred[v] && min_succ[v] > 0)
      l->nodes[v].layer = min_succ[v] - 1;
    if (l->nodes[v].layer + 1 > l->n_layers)
      l->n_layers = l->nodes[v].layer + 1;
  }
  free(order);
  free(start);
  free(fill);
  free(min_succ);
  free(has_pred);
}

static int add_bend(GraphLayout *l, int node) {
  if (l->n_bends == l->cap_bends) {
    l->cap_bends = l->cap_bends ? 2 * l->cap_bends : 64;
    l->bends = realloc(l->bends, (size_t)l->cap_bends * sizeof *l->bends);
    IR_ASSERT(l->bends);
  }
  l->bends[l->n_bends] = node;
  return l->n_bends++;
}

static const GraphLayout *sort_layout; /* qsort has no context argument */

/* Edges by source, the longest first. */
static int by_source_longest(const void *pa, const void *pb) {
  const GlEdge *a = &sort_layout->edges[*(const int *)pa], *b = &sort_layout->edges[*(const int *)pb];
  if (a->from != b->from)
    return a->from < b->from ? -1 : 1;
  int la = sort_layout->nodes[a->to].layer, lb = sort_layout->nodes[b->to].layer;
  if (la != lb)
    return la > lb ? -1 : 1;
  return *(const int *)pa < *(const int *)pb ? -1 : 1;
}

/* Step 2: dummies on long edges. Edges leaving one node start in the same
 * layer, so each one's dummies are a prefix of the chain made for the
 * longest of them, which comes first: one chain per node, no copies. */
static void add_dummies(GraphLayout *l) {
  int *chain = malloc(((size_t)l->n_real + 1) * sizeof(int)), *len = calloc((size_t)l->n_real + 1, sizeof(int));
  int *order = malloc(((size_t)l->n_edges + 1) * sizeof(int));
  IR_ASSERT(chain && len && order);
  for (int i = 0; i < l->n_edges; i++)
    order[i] = i;
  sort_layout = l;
  qsort(order, (size_t)l->n_edges, sizeof *order, by_source_longest);
  for (int i = 0; i < l->n_edges; i++) {
    GlEdge *e = &l->edges[order[i]];
    int lf = l->nodes[e->from].layer, need = l->nodes[e->to].layer - lf - 1;
    e->n_dummies = need;
    if (need > len[e->from]) { /* the longest edge from e->from: it owns the chain */
      IR_ASSERT(len[e->from] == 0);
      chain[e->from] = l->n_bends;
      for (int k = 0; k < need; k++) {
        int d = add_node(l, GL_DUMMY_W, 0, true);
        l->nodes[d].layer = lf + 1 + k;
        add_bend(l, d);
      }
      len[e->from] = need;
    } else {
      e->shared = need > 0;
    }
    e->bend0 = need ? chain[e->from] : 0;
  }
  free(chain);
  free(len);
  free(order);
}

/* Nodes of each layer, in order: members[start[k] .. start[k + 1]). */
typedef struct Layers {
  int *start, *members;
  double *key;             /* by node: the sort key of the current sweep */
} Layers;

static const double *sort_key;     /* qsort has no context argument */
static const GlNode *sort_nodes;

/* By key; ties keep the current order, so the result is deterministic. */
static int by_key(const void *pa, const void *pb) {
  int a = *(const int *)pa, b = *(const int *)pb;
  if (sort_key[a] != sort_key[b])
    return sort_key[a] < sort_key[b] ? -1 : 1;
  return sort_nodes[a].pos < sort_nodes[b].pos ? -1 : sort_nodes[a].pos > sort_nodes[b].pos;
}

static void layers_build(GraphLayout *l, Layers *ls) {
  int L = l->n_layers;
  ls->start = calloc((size_t)L + 2, sizeof(int));
  ls->members = malloc(((size_t)l->n_nodes + 1) * sizeof(int));
  ls->key = malloc(((size_t)l->n_nodes + 1) * sizeof(double));
  int *fill = calloc((size_t)L + 1, sizeof(int));
  IR_ASSERT(ls->start && ls->members && ls->key && fill);
  for (int v = 0; v < l->n_nodes; v++)
    ls->start[l->nodes[v].layer + 1]++;
  for (int k = 0; k < L; k++)
    ls->start[k + 1] += ls->start[k];
  for (int v = 0; v < l->n_nodes; v++) {
    int k = l->nodes[v].layer;
    l->nodes[v].pos = fill[k];
    ls->members[ls->start[k] + fill[k]++] = v;
  }
  free(fill);
}

/* Sorts layer k by the mean position of each node's neighbours in nb. */
static void sort_layer(GraphLayout *l, Layers *ls, int k, const int *nb_start, const int *nb) {
  int *m = ls->members + ls->start[k], cnt = ls->start[k + 1] - ls->start[k];
  for (int i = 0; i < cnt; i++) {
    int v = m[i], deg = nb_start[v + 1] - nb_start[v];
    double sum = 0;
    for (int j = nb_start[v]; j < nb_start[v + 1]; j++)
      sum += l->nodes[nb[j]].pos;
    /* no neighbours there: stay put (positions scale alike in both layers) */
    ls->key[v] = deg ? sum / deg : l->nodes[v].pos;
  }
  sort_key = ls->key;
  sort_nodes = l->nodes;
  qsort(m, (size_t)cnt, sizeof *m, by_key);
  for (int i = 0; i < cnt; i++)
    l->nodes[m[i]].pos = i;
}

/* Places layer k: each node wants the mean x of its neighbours in nb. */
static void place_layer(GraphLayout *l, const Layers *ls, int k, const int *nb_start, const int *nb) {
  const int *m = ls->members + ls->start[k];
  int cnt = ls->start[k + 1] - ls->start[k];
  double shift = 0, right = -1e300;
  double *want = malloc(((size_t)cnt + 1) * sizeof(double));
  IR_ASSERT(want);
  for (int i = 0; i < cnt; i++) {
    GlNode *n = &l->nodes[m[i]];
    int deg = nb_start[m[i] + 1] - nb_start[m[i]];
    double sum = 0;
    for (int j = nb_start[m[i]]; j < nb_start[m[i] + 1]; j++)
      sum += l->nodes[nb[j]].x;
    want[i] = deg ? sum / deg : n->x;
    double x = want[i];
    if (x - n->w / 2 < right + GL_GAP_X)
      x = right + GL_GAP_X + n->w / 2;
    n->x = x;
    right = x + n->w / 2;
    shift += x - want[i];
  }
  shift = cnt ? shift / cnt : 0;
  for (int i = 0; i < cnt; i++)
    l->nodes[m[i]].x -= shift;
  free(want);
}

static void place_y(GraphLayout *l, const Layers *ls) {
  l->layer_y = malloc(((size_t)l->n_layers + 1) * sizeof(double));
  l->layer_h = calloc((size_t)l->n_layers + 1, sizeof(double));
  IR_ASSERT(l->layer_y && l->layer_h);
  double y = GL_MARGIN;
  for (int k = 0; k < l->n_layers; k++) {
    for (int i = ls->start[k]; i < ls->start[k + 1]; i++)
      if (l->nodes[ls->members[i]].h > l->layer_h[k])
        l->layer_h[k] = l->nodes[ls->members[i]].h;
    l->layer_y[k] = y;
    for (int i = ls->start[k]; i < ls->start[k + 1]; i++)
      l->nodes[ls->members[i]].y = y + l->layer_h[k] / 2;
    y += l->layer_h[k] + GL_GAP_Y;
  }
  l->height = y - GL_GAP_Y + GL_MARGIN;
}

void graph_layout_run(GraphLayout *l) {
  assign_layers(l);
  add_dummies(l);
  Adj a;
  adj_build(l, &a);
  Layers ls;
  layers_build(l, &ls);
  for (int round = 0; round < 2; round++) {
    for (int k = 1; k < l->n_layers; k++)
      sort_layer(l, &ls, k, a.up_start, a.up);
    for (int k = l->n_layers - 2; k >= 0; k--)
      sort_layer(l, &ls, k, a.dn_start, a.dn);
  }
  /* x: packed rows first, then pulled toward the neighbours */
  for (int k = 0; k < l->n_layers; k++) {
    double x = 0;
    for (int i = ls.start[k]; i < ls.start[k + 1]; i++) {
      GlNode *n = &l->nodes[ls.members[i]];
      n->x = x + n->w / 2;
      x += n->w + GL_GAP_X;
    }
  }
  for (int round = 0; round < 2; round++) {
    for (int k = 1; k < l->n_layers; k++)
      place_layer(l, &ls, k, a.up_start, a.up);
    for (int k = l->n_layers - 2; k >= 0; k--)
      place_layer(l, &ls, k, a.dn_start, a.dn);
  }
  for (int k = 1; k < l->n_layers; k++)
    place_layer(l, &ls, k, a.up_start, a.up);
  double left = 1e300, right = -1e300;
  for (int v = 0; v < l->n_nodes; v++) {
    if (l->nodes[v].x - l->nodes[v].w / 2 < left)
      left = l->nodes[v].x - l->nodes[v].w / 2;
    if (l->nodes[v].x + l->nodes[v].w / 2 > right)
      right = l->nodes[v].x + l->nodes[v].w / 2;
  }
  if (l->n_nodes == 0)
    left = right = 0;
  for (int v = 0; v < l->n_nodes; v++)
    l->nodes[v].x += GL_MARGIN - left;
  l->width = right - left + 2 * GL_MARGIN;
  place_y(l, &ls);
  free(ls.start);
  free(ls.members);
  free(ls.key);
  adj_free(&a);
}
