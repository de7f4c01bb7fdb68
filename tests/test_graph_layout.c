/* test_graph_layout.c - unit tests of onnxc graph's layout
 * (tools/graph_layout.c) and of the view built from a planned graph
 * (tools/graph_view.c): layers follow the edges, boxes of a layer never
 * overlap, long edges bend through one dummy a layer, crossings that
 * barycenter ordering can remove are removed, and a large graph lays out in
 * well under a second. The CLI and the file formats: tests/cli/test_graph.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph.h"
#include "plan_util.h"
#include "target_util.h"

/* Every edge goes down; boxes of one layer do not overlap; rows do not overlap. */
static void check_invariants(const GraphLayout *l) {
  for (int i = 0; i < l->n_edges; i++) {
    const GlEdge *e = &l->edges[i];
    int lf = l->nodes[e->from].layer, lt = l->nodes[e->to].layer;
    assert_true(lf < lt);
    assert_int_equal(e->n_dummies, lt - lf - 1);
    for (int k = 0; k < e->n_dummies; k++)
      assert_int_equal(l->nodes[l->bends[e->bend0 + k]].layer, lf + 1 + k);
  }
  for (int a = 0; a < l->n_nodes; a++) {
    const GlNode *p = &l->nodes[a];
    assert_true(p->x - p->w / 2 >= 0 && p->x + p->w / 2 <= l->width);
    assert_true(p->y - p->h / 2 >= 0 && p->y + p->h / 2 <= l->height);
  }
  /* per layer, sorted by pos: neighbours must not overlap (linear check) */
  int *at = malloc(((size_t)l->n_nodes + 1) * sizeof(int));
  int *start = calloc((size_t)l->n_layers + 2, sizeof(int));
  int *fill = calloc((size_t)l->n_layers + 1, sizeof(int));
  assert_non_null(at);
  for (int v = 0; v < l->n_nodes; v++)
    start[l->nodes[v].layer + 1]++;
  for (int k = 0; k < l->n_layers; k++)
    start[k + 1] += start[k];
  for (int v = 0; v < l->n_nodes; v++) {
    const GlNode *n = &l->nodes[v];
    assert_true(n->pos < start[n->layer + 1] - start[n->layer]);
    at[start[n->layer] + n->pos] = v;
    fill[n->layer]++;
  }
  for (int k = 0; k < l->n_layers; k++)
    for (int i = start[k] + 1; i < start[k + 1]; i++) {
      const GlNode *p = &l->nodes[at[i - 1]], *q = &l->nodes[at[i]];
      assert_true(p->x + p->w / 2 <= q->x - q->w / 2 + 1e-6);
    }
  for (int k = 1; k < l->n_layers; k++)
    assert_true(l->layer_y[k] >= l->layer_y[k - 1] + l->layer_h[k - 1]);
  free(at);
  free(start);
  free(fill);
}

/* a -> b, a -> c, b -> d, c -> d */
static void test_graph_layout_diamond(void **state) {
  (void)state;
  GraphLayout l;
  graph_layout_init(&l);
  int a = graph_layout_node(&l, 100, 30), b = graph_layout_node(&l, 140, 45);
  int c = graph_layout_node(&l, 80, 30), d = graph_layout_node(&l, 100, 30);
  graph_layout_edge(&l, a, b);
  graph_layout_edge(&l, a, c);
  graph_layout_edge(&l, b, d);
  graph_layout_edge(&l, c, d);
  graph_layout_run(&l);
  assert_int_equal(l.n_layers, 3);
  assert_int_equal(l.nodes[a].layer, 0);
  assert_int_equal(l.nodes[b].layer, 1);
  assert_int_equal(l.nodes[c].layer, 1);
  assert_int_equal(l.nodes[d].layer, 2);
  assert_int_equal(l.n_nodes, 4); /* no dummies */
  const GlNode *nb = &l.nodes[b], *nc = &l.nodes[c];
  assert_true(fabs(nb->x - nc->x) >= (nb->w + nc->w) / 2);
  /* b and c share a row whose height is the taller box */
  assert_true(nb->y - nb->h / 2 == nc->y - nc->h / 2 || nb->y == nc->y);
  assert_true(l.nodes[a].y + 15 <= nb->y - nb->h / 2);
  assert_true(nb->y + nb->h / 2 <= l.nodes[d].y - 15);
  /* a and d sit between their two neighbours */
  double lo = fmin(nb->x, nc->x), hi = fmax(nb->x, nc->x);
  assert_true(l.nodes[a].x >= lo && l.nodes[a].x <= hi);
  assert_true(l.nodes[d].x >= lo && l.nodes[d].x <= hi);
  check_invariants(&l);
  graph_layout_free(&l);
}

/* A chain a -> b -> c -> d with a skip a -> d: two dummies; a source that
 * feeds only d moves down next to it. */
static void test_graph_layout_long_edges_and_sources(void **state) {
  (void)state;
  GraphLayout l;
  graph_layout_init(&l);
  int a = graph_layout_node(&l, 60, 30), b = graph_layout_node(&l, 60, 30);
  int c = graph_layout_node(&l, 60, 30), w = graph_layout_node(&l, 60, 30);
  int d = graph_layout_node(&l, 60, 30);
  graph_layout_edge(&l, a, b);
  graph_layout_edge(&l, b, c);
  graph_layout_edge(&l, c, d);
  graph_layout_edge(&l, a, d);
  graph_layout_edge(&l, w, d);
  graph_layout_run(&l);
  assert_int_equal(l.nodes[d].layer, 3);
  assert_int_equal(l.nodes[w].layer, 2);
  assert_int_equal(l.edges[3].n_dummies, 2);
  assert_int_equal(l.n_nodes, 5 + 2);
  check_invariants(&l);
  graph_layout_free(&l);
}

/* s0 -> t1, s1 -> t0 given in crossing order: the sweeps uncross them. */
static void test_graph_layout_uncrosses(void **state) {
  (void)state;
  GraphLayout l;
  graph_layout_init(&l);
  int s0 = graph_layout_node(&l, 50, 20), s1 = graph_layout_node(&l, 50, 20);
  int t0 = graph_layout_node(&l, 50, 20), t1 = graph_layout_node(&l, 50, 20);
  int u = graph_layout_node(&l, 50, 20);
  graph_layout_edge(&l, s0, t1);
  graph_layout_edge(&l, s1, t0);
  graph_layout_edge(&l, s0, u);
  graph_layout_edge(&l, t0, u);
  graph_layout_edge(&l, t1, u);
  graph_layout_run(&l);
  bool s_order = l.nodes[s0].x < l.nodes[s1].x, t_order = l.nodes[t1].x < l.nodes[t0].x;
  assert_true(s_order == t_order);
  check_invariants(&l);
  /* deterministic: a second run gives the same picture */
  GraphLayout m;
  graph_layout_init(&m);
  for (int i = 0; i < 5; i++)
    graph_layout_node(&m, 50, 20);
  for (int i = 0; i < l.n_edges; i++)
    graph_layout_edge(&m, l.edges[i].from, l.edges[i].to);
  graph_layout_run(&m);
  for (int i = 0; i < l.n_nodes; i++)
    assert_true(l.nodes[i].x == m.nodes[i].x && l.nodes[i].y == m.nodes[i].y);
  graph_layout_free(&l);
  graph_layout_free(&m);
}

/* a feeds b, c, d three, four and five layers down (through a chain): one
 * line of dummies that branches, not three. */
static void test_graph_layout_shares_bends(void **state) {
  (void)state;
  GraphLayout l;
  graph_layout_init(&l);
  int n[7];
  for (int i = 0; i < 7; i++)
    n[i] = graph_layout_node(&l, 40, 20);
  for (int i = 1; i < 7; i++)
    graph_layout_edge(&l, n[i - 1], n[i]);
  graph_layout_edge(&l, n[0], n[4]);
  graph_layout_edge(&l, n[0], n[6]);
  graph_layout_edge(&l, n[0], n[5]);
  graph_layout_run(&l);
  assert_int_equal(l.n_nodes, 7 + 5); /* layers 1..5 once */
  const GlEdge *e4 = &l.edges[6], *e6 = &l.edges[7], *e5 = &l.edges[8];
  assert_int_equal(e4->n_dummies, 3);
  assert_int_equal(e6->n_dummies, 5);
  assert_int_equal(e5->n_dummies, 4);
  assert_true(!e6->shared && e4->shared && e5->shared);
  for (int k = 0; k < 3; k++)
    assert_int_equal(l.bends[e4->bend0 + k], l.bends[e6->bend0 + k]);
  for (int k = 0; k < 4; k++)
    assert_int_equal(l.bends[e5->bend0 + k], l.bends[e6->bend0 + k]);
  check_invariants(&l);
  graph_layout_free(&l);
}

/* 20000 nodes, each reading its predecessor, every third the one before, and every 10th the first
 * node (2000 long edges that share one chain of dummies): fast, invariants hold. */
static void test_graph_layout_large(void **state) {
  (void)state;
  enum { N = 20000 };
  GraphLayout l;
  graph_layout_init(&l);
  for (int i = 0; i < N; i++)
    graph_layout_node(&l, 60 + i % 7 * 10, 30);
  for (int i = 1; i < N; i++) {
    graph_layout_edge(&l, i - 1, i);
    if (i >= 2 && i % 3 == 0)
      graph_layout_edge(&l, i - 2, i);
    if (i % 10 == 0)
      graph_layout_edge(&l, 0, i);
  }
  clock_t t0 = clock();
  graph_layout_run(&l);
  double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
  print_message("layout of %d nodes, %d edges, %d dummies: %.3f s\n", N, l.n_edges, l.n_nodes - N, secs);
  assert_true(secs < 2.0);
  check_invariants(&l);
  graph_layout_free(&l);
}

/* x -> Relu -> MatMul(w) -> y: one box per input, node and output; the
 * weight is counted, not drawn; edge labels carry the shapes, and the
 * values in the arena carry the plan's offsets. */
static void test_graph_view_of_a_planned_graph(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *x = pu_input(g, "x", 4, 16);
  Value *r = pu_op1(g, OP_Relu, "r", x);
  Value *y = pu_op2(g, OP_MatMul, "y", r, pu_weight(g, "w", 16, 8));
  ir_output_add(g, y);
  assert_true(pu_infer(g));
  Plan p;
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_memplan(g, &p, onnxc_test_target(), &d));
  GraphView v;
  graph_view_build(&v, g, &p);
  assert_int_equal(v.n_boxes, 4);
  assert_int_equal(v.n_edges, 3);
  assert_int_equal(v.boxes[0].kind, GV_INPUT);
  assert_int_equal(v.boxes[2].kind, GV_KERNEL);
  assert_int_equal(v.boxes[2].n_weights, 1);
  assert_int_equal(v.boxes[2].weight_bytes, 16 * 8 * 4);
  assert_int_equal(v.boxes[3].kind, GV_OUTPUT);
  assert_string_equal(v.edges[0].label, "f32[4,16]");
  assert_string_equal(v.edges[1].label, "f32[4,16]");
  int *index = memory_tensor_index(g, &p);
  MemPlace mp = memory_place(g, &p, index, r);
  assert_int_equal(mp.where, MEM_ARENA);
  char want[128];
  snprintf(want, sizeof want, "arena @%lld, buffer of %lld B, steps %d..%d", (long long)mp.offset,
           (long long)mp.size, mp.first, mp.last);
  assert_non_null(strstr(v.edges[1].place, want));
  assert_non_null(strstr(v.edges[0].place, "graph input"));
  assert_non_null(strstr(v.edges[2].place, "graph output"));
  free(index);
  for (int i = 0; i < 4; i++)
    assert_int_equal(v.layout.nodes[i].layer, i);
  graph_view_free(&v);
  diag_free(&d);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_graph_layout_diamond),
      cmocka_unit_test(test_graph_layout_long_edges_and_sources),
      cmocka_unit_test(test_graph_layout_uncrosses),
      cmocka_unit_test(test_graph_layout_shares_bends),
      cmocka_unit_test(test_graph_layout_large),
      cmocka_unit_test(test_graph_view_of_a_planned_graph),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
