/* memplan_place.c - offsets for buffers with known lifetimes (the dynamic
 * storage allocation problem: rectangles of fixed width in time, stacked in
 * memory without overlap, lowest total height).
 *
 * 1. Greedy placements: buffers taken in an order and each put at the lowest
 *    offset (first fit) or into the tightest gap (best fit) that clears every
 *    placed buffer whose lifetime overlaps its own. Orders: by size, by
 *    breadth (the live bytes at the busiest step a buffer spans, then size;
 *    Pisarchyk and Lee, "Efficient Memory Management for Deep Neural Net
 *    Inference", 2020), by conflicts (bytes of the buffers it overlaps) and by
 *    lifetime length. Every order with both fits; the smallest arena wins.
 * 2. If that misses the lower bound: an exact branch and bound for up to
 *    EXACT_MAX buffers, else a local search that moves buffers on top of the
 *    arena earlier in the best order. The exact search builds "compacted"
 *    solutions in order of increasing offset, where each buffer sits on the
 *    highest placed buffer it overlaps (every optimum can be compacted to
 *    one), pruned by max over steps of (floor + bytes still to place there).
 *    It is bounded by a work counter, not by a clock, so a plan never depends
 *    on the machine's speed: each search node adds the entries it scans or
 *    copies (points, buffers, conflicts, saved state), and past
 *    MEMPLAN_EXACT_WORK units (memplan_internal.h; about 50 ms optimized) the
 *    search stops and keeps the best placement found so far, at worst the
 *    greedy or local-search one it started from. The planner may run up to
 *    eight searches per model (three schedules, with and without Concat
 *    slices, and the final plan). Before this bound (a cap of a million
 *    nodes, each costing up to a few hundred units), a 36-buffer instance took
 *    0.8 s per search optimized, and a 34-node model over 15 s under the
 *    fuzzer's sanitizers (docs/fuzzing.md).
 * Conflicts are an adjacency list built by a sweep over start steps, so a
 * greedy pass costs O(E log E) for E overlapping pairs.
 */
#include "memplan_internal.h"

#include <stdlib.h>
#include <string.h>

#define EXACT_MAX 40            /* buffers for the exact search */
#define MAX_EDGES (4 << 20)     /* denser conflict graphs scan instead */
#define PLACE_WORK (3 << 20)    /* greedy and local search: conflict visits in all */
#define LOCAL_ITERS 1000

typedef struct Span {
  int64_t lo, hi;
} Span;

typedef struct Work {
  int n;
  const PlanTensor *ts;
  int *adj_start, *adj;         /* CSR conflict lists; NULL when too dense */
  int64_t edges;
  int64_t *off;
  bool *placed;
  int *placed_list;             /* dense mode: the placed buffers */
  Span *spans;
} Work;

/* ---- conflicts -------------------------------------------------------------- */

/* Key-sorted index arrays: a key tuple per buffer, sorted with qsort. */
typedef struct Key {
  int64_t k[3];
  int idx;
} Key;

static int cmp_key(const void *a, const void *b) {
  const Key *x = a, *y = b;
  for (int i = 0; i < 3; i++)
    if (x->k[i] != y->k[i])
      return x->k[i] < y->k[i] ? -1 : 1;
  return x->idx - y->idx;
}

static int *sorted_by_first(const PlanTensor *ts, int n) {
  Key *keys = malloc((size_t)(n + 1) * sizeof *keys);
  int *idx = malloc((size_t)(n + 1) * sizeof *idx);
  IR_ASSERT(keys && idx);
  for (int i = 0; i < n; i++)
    keys[i] = (Key){{ts[i].first, 0, 0}, i};
  qsort(keys, (size_t)n, sizeof *keys, cmp_key);
  for (int i = 0; i < n; i++)
    idx[i] = keys[i].idx;
  free(keys);
  return idx;
}

/* Pairs (i, j) with first[i] <= first[j] <= last[i] are exactly the
 * overlapping pairs; a sweep in order of first finds each once. */
static void build_conflicts(Work *w) {
  int n = w->n;
  const PlanTensor *ts = w->ts;
  int *by = sorted_by_first(ts, n);
  int64_t edges = 0;
  for (int a = 0; a < n && edges <= MAX_EDGES; a++)
    for (int b = a + 1; b < n && ts[by[b]].first <= ts[by[a]].last; b++)
      edges++;
  w->edges = edges;
  if (edges > MAX_EDGES) {
    free(by);
    return;
  }
  int *deg = calloc((size_t)n + 1, sizeof *deg);
  IR_ASSERT(deg);
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n && ts[by[b]].first <= ts[by[a]].last; b++) {
      deg[by[a]]++;
      deg[by[b]]++;
    }
  w->adj_start = malloc((size_t)(n + 1) * sizeof *w->adj_start);
  w->adj = malloc((size_t)(2 * edges + 1) * sizeof *w->adj);
  IR_ASSERT(w->adj_start && w->adj);
  w->adj_start[0] = 0;
  for (int i = 0; i < n; i++)
    w->adj_start[i + 1] = w->adj_start[i] + deg[i];
  for (int i = 0; i < n; i++)
    deg[i] = w->adj_start[i];
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n && ts[by[b]].first <= ts[by[a]].last; b++) {
      w->adj[deg[by[a]]++] = by[b];
      w->adj[deg[by[b]]++] = by[a];
    }
  free(deg);
  free(by);
}

/* ---- greedy placement --------------------------------------------------------- */

/* Shell sort by lo: no calls per comparison and no allocation (qsort's
 * merge sort was most of the planner's time). Gaps of Ciura's sequence. */
static void sort_spans(Span *sp, int k) {
  static const int gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
  for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
    int gap = gaps[g];
    for (int i = gap; i < k; i++) {
      Span x = sp[i];
      int j = i;
      for (; j >= gap && sp[j - gap].lo > x.lo; j -= gap)
        sp[j] = sp[j - gap];
      sp[j] = x;
    }
  }
}

static bool overlap(const PlanTensor *a, const PlanTensor *b) {
  return a->first <= b->last && b->first <= a->last;
}

/* Memory spans of the placed buffers that overlap t in time, sorted. */
static int placed_spans(Work *w, int t, int n_placed) {
  int k = 0;
  if (w->adj) {
    for (int e = w->adj_start[t]; e < w->adj_start[t + 1]; e++) {
      int j = w->adj[e];
      if (w->placed[j])
        w->spans[k++] = (Span){w->off[j], w->off[j] + w->ts[j].size};
    }
  } else {
    for (int i = 0; i < n_placed; i++) {
      int j = w->placed_list[i];
      if (overlap(&w->ts[t], &w->ts[j]))
        w->spans[k++] = (Span){w->off[j], w->off[j] + w->ts[j].size};
    }
  }
  sort_spans(w->spans, k);
  return k;
}

/* Lowest offset (first fit) or the smallest gap that fits (best fit). */
static int64_t fit(const Span *sp, int k, int64_t size, bool best_fit) {
  int64_t cursor = 0, best = -1, best_gap = INT64_MAX;
  for (int i = 0; i < k; i++) {
    if (sp[i].lo > cursor) {
      int64_t gap = sp[i].lo - cursor;
      if (gap >= size && !best_fit)
        return cursor;
      if (gap >= size && gap < best_gap) {
        best = cursor;
        best_gap = gap;
      }
    }
    if (sp[i].hi > cursor)
      cursor = sp[i].hi;
  }
  return best >= 0 ? best : cursor;
}

/* Places buffers in `order`; the arena, or -1 once it would reach `cap`. */
static int64_t place_order(Work *w, const int *order, bool best_fit, int64_t cap) {
  memset(w->placed, 0, (size_t)w->n * sizeof *w->placed);
  int64_t arena = 0;
  for (int i = 0; i < w->n; i++) {
    int t = order[i];
    int k = placed_spans(w, t, i);
    int64_t off = fit(w->spans, k, w->ts[t].size, best_fit);
    w->off[t] = off;
    w->placed[t] = true;
    w->placed_list[i] = t;
    if (off + w->ts[t].size > arena)
      arena = off + w->ts[t].size;
    if (arena >= cap)
      return -1;
  }
  return arena;
}

/* ---- orders ------------------------------------------------------------------------ */

enum { BY_SIZE, BY_BREADTH, BY_CONFLICT, BY_LIFETIME, N_ORDERS };
static const char *const order_names[N_ORDERS][2] = {
    {"greedy-size/first-fit", "greedy-size/best-fit"},
    {"greedy-breadth/first-fit", "greedy-breadth/best-fit"},
    {"greedy-conflict/first-fit", "greedy-conflict/best-fit"},
    {"greedy-lifetime/first-fit", "greedy-lifetime/best-fit"},
};

/* Greedy runs, most often best first (on random DAGs of 30 to 1,000 buffers);
 * large instances stop when the work budget is spent, after the first two. */
static const struct { int order, best_fit; } greedy_runs[] = {
    {BY_SIZE, 0}, {BY_BREADTH, 1}, {BY_SIZE, 1}, {BY_BREADTH, 0},
    {BY_CONFLICT, 0}, {BY_CONFLICT, 1}, {BY_LIFETIME, 0}, {BY_LIFETIME, 1},
};

/* Live bytes at the busiest step of each buffer's lifetime. The profile only
 * peaks where a buffer starts, so it is sampled at the distinct first steps. */
static void breadths(const Work *w, int64_t *out) {
  int n = w->n;
  int *by = sorted_by_first(w->ts, n);
  int *pts = malloc((size_t)(n + 1) * sizeof *pts);
  int64_t *live = calloc((size_t)n + 2, sizeof *live);
  IR_ASSERT(pts && live);
  int np = 0;
  for (int i = 0; i < n; i++)
    if (np == 0 || pts[np - 1] != w->ts[by[i]].first)
      pts[np++] = w->ts[by[i]].first;
  /* Point range [lo, hi] of each buffer; difference array of live bytes. */
  int *lo = malloc((size_t)(n + 1) * sizeof *lo), *hi = malloc((size_t)(n + 1) * sizeof *hi);
  IR_ASSERT(lo && hi);
  for (int t = 0; t < n; t++) {
    int a = 0, b = np;  /* first point >= first */
    while (a < b) {
      int m = (a + b) / 2;
      if (pts[m] < w->ts[t].first) a = m + 1; else b = m;
    }
    lo[t] = a;
    a = 0, b = np;      /* first point > last, minus one */
    while (a < b) {
      int m = (a + b) / 2;
      if (pts[m] <= w->ts[t].last) a = m + 1; else b = m;
    }
    hi[t] = a - 1;
    live[lo[t]] += w->ts[t].size;
    live[hi[t] + 1] -= w->ts[t].size;
  }
  for (int p = 1; p < np; p++)
    live[p] += live[p - 1];
  /* Range maxima with a sparse table. */
  int levels = 1;
  while ((1 << levels) <= np)
    levels++;
  int64_t *st = malloc((size_t)levels * (size_t)(np + 1) * sizeof *st);
  IR_ASSERT(st);
  for (int p = 0; p < np; p++)
    st[p] = live[p];
  for (int l = 1; l < levels; l++)
    for (int p = 0; p + (1 << l) <= np; p++) {
      int64_t x = st[(l - 1) * (np + 1) + p], y = st[(l - 1) * (np + 1) + p + (1 << (l - 1))];
      st[l * (np + 1) + p] = x > y ? x : y;
    }
  for (int t = 0; t < n; t++) {
    int len = hi[t] - lo[t] + 1, l = 0;
    while ((2 << l) <= len)
      l++;
    int64_t x = st[l * (np + 1) + lo[t]], y = st[l * (np + 1) + hi[t] - (1 << l) + 1];
    out[t] = x > y ? x : y;
  }
  free(st);
  free(lo);
  free(hi);
  free(live);
  free(pts);
  free(by);
}

static void make_order(const Work *w, int kind, const int64_t *breadth, int *order) {
  int n = w->n;
  Key *keys = malloc((size_t)(n + 1) * sizeof *keys);
  IR_ASSERT(keys);
  for (int t = 0; t < n; t++) {
    const PlanTensor *x = &w->ts[t];
    int64_t len = x->last - x->first, conflict = x->size;
    if (kind == BY_CONFLICT) {
      if (w->adj)
        for (int e = w->adj_start[t]; e < w->adj_start[t + 1]; e++)
          conflict += w->ts[w->adj[e]].size;
      else
        conflict = breadth[t];
    }
    /* Keys sort ascending: negate what goes first when large. */
    switch (kind) {
    case BY_SIZE: keys[t] = (Key){{-x->size, -len, x->first}, t}; break;
    case BY_BREADTH: keys[t] = (Key){{-breadth[t], -x->size, x->first}, t}; break;
    case BY_CONFLICT: keys[t] = (Key){{-conflict, -x->size, x->first}, t}; break;
    default: keys[t] = (Key){{-len, -x->size, x->first}, t}; break;
    }
  }
  qsort(keys, (size_t)n, sizeof *keys, cmp_key);
  for (int i = 0; i < n; i++)
    order[i] = keys[i].idx;
  free(keys);
}

/* ---- exact search for small instances ------------------------------------------ */

typedef struct Exact {
  Work *w;
  int np;                 /* distinct first steps */
  int *lo_pt, *hi_pt;     /* point range of each buffer */
  int64_t lower_bound;
  int64_t best;           /* arena of the best solution so far */
  int64_t *best_off;
  int64_t *floor;         /* per buffer: top of the placed buffers it overlaps */
  int64_t *sky;           /* per point: top of the placed buffers live there */
  int64_t *unplaced;      /* per point: bytes of unplaced buffers live there */
  Key *kids;              /* per depth: n + 1 children */
  int64_t *save;          /* per depth: n + np + 1 saved floors and skyline */
  long work;              /* units spent (entries scanned or copied) */
} Exact;

static bool exact_done(const Exact *x) {
  return x->best == x->lower_bound || x->work > MEMPLAN_EXACT_WORK;
}

static void exact_dfs(Exact *x, int depth, int64_t cur_off, int cur_idx, int64_t height) {
  Work *w = x->w;
  int n = w->n;
  x->work += n + x->np;   /* the bound scan and the children scan below */
  if (x->work > MEMPLAN_EXACT_WORK)
    return;
  if (depth == n) {
    if (height < x->best) {
      x->best = height;
      memcpy(x->best_off, w->off, (size_t)n * sizeof *w->off);
    }
    return;
  }
  for (int p = 0; p < x->np; p++)
    if (x->unplaced[p] > 0 && (x->sky[p] > cur_off ? x->sky[p] : cur_off) + x->unplaced[p] >= x->best)
      return;
  /* Children in order of offset, larger buffers first on ties. */
  Key *kids = x->kids + (size_t)depth * (size_t)(n + 1);
  int64_t *save = x->save + (size_t)depth * (size_t)(n + x->np + 1);
  int nk = 0;
  for (int t = 0; t < n; t++) {
    if (w->placed[t])
      continue;
    int64_t o = x->floor[t];
    if ((o < cur_off || (o == cur_off && t < cur_idx)) || o + w->ts[t].size >= x->best)
      continue;
    kids[nk++] = (Key){{o, -w->ts[t].size, 0}, t};
  }
  qsort(kids, (size_t)nk, sizeof *kids, cmp_key);
  for (int i = 0; i < nk && !exact_done(x); i++) {
    int t = kids[i].idx;
    int64_t o = x->floor[t], end = o + w->ts[t].size;
    x->work += 2 * (n + x->np) + (w->adj_start[t + 1] - w->adj_start[t]) + nk;
    memcpy(save, x->floor, (size_t)n * sizeof *save);
    memcpy(save + n, x->sky, (size_t)x->np * sizeof *save);
    w->placed[t] = true;
    w->off[t] = o;
    for (int e = w->adj_start[t]; e < w->adj_start[t + 1]; e++)
      if (x->floor[w->adj[e]] < end)
        x->floor[w->adj[e]] = end;
    for (int p = x->lo_pt[t]; p <= x->hi_pt[t]; p++) {
      if (x->sky[p] < end)
        x->sky[p] = end;
      x->unplaced[p] -= w->ts[t].size;
    }
    exact_dfs(x, depth + 1, o, t, height > end ? height : end);
    for (int p = x->lo_pt[t]; p <= x->hi_pt[t]; p++)
      x->unplaced[p] += w->ts[t].size;
    memcpy(x->floor, save, (size_t)n * sizeof *save);
    memcpy(x->sky, save + n, (size_t)x->np * sizeof *save);
    w->placed[t] = false;
  }
}

/* Improves best_off/best in place when it finds a smaller arena. */
static int64_t exact_search(Work *w, int64_t lower_bound, int64_t best, int64_t *best_off,
                            long *work) {
  int n = w->n;
  Exact x = {w, 0, NULL, NULL, lower_bound, best, best_off, NULL, NULL, NULL, NULL, NULL, 0};
  int *by = sorted_by_first(w->ts, n);
  int *pts = malloc((size_t)(n + 1) * sizeof *pts);
  x.lo_pt = malloc((size_t)(n + 1) * sizeof *x.lo_pt);
  x.hi_pt = malloc((size_t)(n + 1) * sizeof *x.hi_pt);
  x.floor = calloc((size_t)n + 1, sizeof *x.floor);
  x.sky = calloc((size_t)n + 1, sizeof *x.sky);
  x.unplaced = calloc((size_t)n + 1, sizeof *x.unplaced);
  IR_ASSERT(pts && x.lo_pt && x.hi_pt && x.floor && x.sky && x.unplaced);
  for (int i = 0; i < n; i++)
    if (x.np == 0 || pts[x.np - 1] != w->ts[by[i]].first)
      pts[x.np++] = w->ts[by[i]].first;
  for (int t = 0; t < n; t++) {
    x.lo_pt[t] = x.np;
    x.hi_pt[t] = -1;
    for (int p = 0; p < x.np; p++)
      if (pts[p] >= w->ts[t].first && pts[p] <= w->ts[t].last) {
        if (x.lo_pt[t] > p)
          x.lo_pt[t] = p;
        x.hi_pt[t] = p;
        x.unplaced[p] += w->ts[t].size;
      }
  }
  memset(w->placed, 0, (size_t)n * sizeof *w->placed);
  x.kids = malloc((size_t)(n + 1) * (size_t)(n + 1) * sizeof *x.kids);
  x.save = malloc((size_t)(n + 1) * (size_t)(n + x.np + 1) * sizeof *x.save);
  IR_ASSERT(x.kids && x.save);
  exact_dfs(&x, 0, 0, -1, 0);
  free(x.kids);
  free(x.save);
  *work = x.work;
  free(by);
  free(pts);
  free(x.lo_pt);
  free(x.hi_pt);
  free(x.floor);
  free(x.sky);
  free(x.unplaced);
  return x.best;
}

/* ---- local search for larger instances ------------------------------------------- */

static uint64_t xorshift(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Buffers whose top is the arena's top (the ones a better plan must move). */
static int at_top(const Work *w, const int64_t *off, int64_t arena, int *out, const int *pos) {
  int k = 0;
  for (int t = 0; t < w->n; t++)
    if (off[t] + w->ts[t].size == arena && (!pos || pos[t] > 0))
      out[k++] = t;
  return k;
}

/* Starts from the best plan's buffers in order of offset (first fit in that
 * order never does worse: it compacts the plan). Each step moves a buffer
 * that touches the top to a random earlier place and replays first fit; the
 * new order stays when the arena shrinks, or stays equal with fewer buffers
 * at the top (a plateau move toward a lower top). */
static int64_t local_search(Work *w, int *order, int64_t lower_bound, int64_t best, int64_t *best_off,
                            int iters) {
  int n = w->n;
  int *cand = malloc((size_t)(n + 1) * sizeof *cand);
  int *pos = malloc((size_t)(n + 1) * sizeof *pos);
  Key *keys = malloc((size_t)(n + 1) * sizeof *keys);
  IR_ASSERT(cand && pos && keys);
  for (int t = 0; t < n; t++)
    keys[t] = (Key){{best_off[t], -w->ts[t].size, w->ts[t].first}, t};
  qsort(keys, (size_t)n, sizeof *keys, cmp_key);
  for (int i = 0; i < n; i++)
    order[i] = keys[i].idx;
  free(keys);
  int n_top = at_top(w, best_off, best, cand, NULL);
  uint64_t seed = 0x9E3779B97F4A7C15u;
  for (int it = 0; it < iters && best > lower_bound; it++) {
    for (int i = 0; i < n; i++)
      pos[order[i]] = i;
    int k = at_top(w, best_off, best, cand, pos);
    if (k == 0)
      break;
    int t = cand[xorshift(&seed) % (uint64_t)k];
    int from = pos[t], to = (int)(xorshift(&seed) % (uint64_t)from);
    memmove(order + to + 1, order + to, (size_t)(from - to) * sizeof *order);
    order[to] = t;
    int64_t arena = place_order(w, order, false, best + 1);
    int tops = arena >= 0 ? at_top(w, w->off, arena, cand, NULL) : 0;
    if (arena >= 0 && (arena < best || tops < n_top)) {
      best = arena;
      n_top = tops;
      memcpy(best_off, w->off, (size_t)n * sizeof *best_off);
    } else {
      memmove(order + to, order + to + 1, (size_t)(from - to) * sizeof *order);
      order[from] = t;
    }
  }
  free(cand);
  free(pos);
  return best;
}

/* ---- the driver ------------------------------------------------------------------- */

int64_t memplan_place(PlanTensor *ts, int n, int64_t lower_bound, const char **strategy) {
  long work;
  return memplan_place_work(ts, n, lower_bound, strategy, &work);
}

int64_t memplan_place_work(PlanTensor *ts, int n, int64_t lower_bound, const char **strategy,
                           long *exact_work) {
  *strategy = "none";
  *exact_work = 0;
  if (n <= 0)
    return 0;
  Work w = {n, ts, NULL, NULL, 0, NULL, NULL, NULL, NULL};
  w.off = malloc((size_t)(n + 1) * sizeof *w.off);
  w.placed = malloc((size_t)(n + 1) * sizeof *w.placed);
  w.placed_list = malloc((size_t)(n + 1) * sizeof *w.placed_list);
  w.spans = malloc((size_t)(n + 1) * sizeof *w.spans);
  int64_t *best_off = malloc((size_t)(n + 1) * sizeof *best_off);
  int64_t *breadth = malloc((size_t)(n + 1) * sizeof *breadth);
  int *order = malloc((size_t)(n + 1) * sizeof *order);
  IR_ASSERT(w.off && w.placed && w.placed_list && w.spans && best_off && breadth && order);
  build_conflicts(&w);
  breadths(&w, breadth);
  /* Cost of one placement pass, in conflict visits. */
  int64_t run_cost = w.adj ? 2 * w.edges + n : (int64_t)n * n / 2 + n;
  int64_t work_left = PLACE_WORK, best = INT64_MAX;
  for (size_t r = 0; r < sizeof greedy_runs / sizeof greedy_runs[0] && best > lower_bound; r++) {
    if (r >= 2 && work_left < run_cost)
      break;
    work_left -= run_cost;
    int kind = greedy_runs[r].order, bf = greedy_runs[r].best_fit;
    make_order(&w, kind, breadth, order);
    int64_t arena = place_order(&w, order, bf, best);
    if (arena < 0)
      continue;
    best = arena;
    *strategy = order_names[kind][bf];
    memcpy(best_off, w.off, (size_t)n * sizeof *best_off);
  }
  if (best > lower_bound && work_left >= run_cost) {
    int64_t iters = work_left / run_cost < LOCAL_ITERS ? work_left / run_cost : LOCAL_ITERS;
    int64_t arena = local_search(&w, order, lower_bound, best, best_off, (int)iters);
    if (arena < best) {
      best = arena;
      *strategy = "local-search";
    }
  }
  if (best > lower_bound && n <= EXACT_MAX && w.adj) {
    int64_t arena = exact_search(&w, lower_bound, best, best_off, exact_work);
    if (arena < best) {
      best = arena;
      *strategy = "exact";
    }
  }
  for (int t = 0; t < n; t++)
    ts[t].offset = best_off[t];
  free(w.adj_start);
  free(w.adj);
  free(w.off);
  free(w.placed);
  free(w.placed_list);
  free(w.spans);
  free(best_off);
  free(breadth);
  free(order);
  return best;
}
