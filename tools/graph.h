/* graph.h - onnxc graph (docs/graph.md): the compiled graph drawn as SVG,
 * HTML or DOT. graph_layout.c places boxes without Graphviz; graph_view.c
 * collects what is drawn (kernels, values, arena placement) from the Graph
 * and the Plan and writes DOT; graph_svg.c writes SVG and HTML. */
#ifndef ONNXC_GRAPH_H
#define ONNXC_GRAPH_H

#include "tools.h"

/* ---- graph_layout.c: a layered DAG layout ---------------------------------
 * Longest-path layers (top to bottom), a chain of dummy nodes for every edge
 * that spans more than one layer (shared by the edges leaving one node, so a
 * value read far down by many nodes is one line that branches), barycenter sweeps to reduce crossings,
 * then x positions pulled toward the neighbours' mean without overlaps.
 * Nodes must be added in topological order (every edge goes from a lower to
 * a higher index). Deterministic; O((N + D) log(N + D)) per sweep for N
 * nodes and D dummies. */

typedef struct GlNode {
  double w, h;             /* box size (input) */
  double x, y;             /* centre (output) */
  int layer, pos;          /* layer and place in it, left to right (output) */
  bool dummy;              /* a bend point of a long edge */
} GlNode;

typedef struct GlEdge {
  int from, to;
  int bend0, n_dummies;    /* its bend points, one a layer: the dummy nodes
                              bends[bend0 .. bend0 + n_dummies) */
  bool shared;             /* those belong to a longer edge from the same node:
                              this one branches off at its last dummy */
} GlEdge;

typedef struct GraphLayout {
  GlNode *nodes;           /* the real nodes, then the dummies */
  int n_nodes, n_real, cap_nodes;
  GlEdge *edges;
  int n_edges, cap_edges;
  int *bends;              /* edges' dummies; edges from one node share them */
  int n_bends, cap_bends;
  int n_layers;
  double width, height;    /* the drawing's extent, margins included */
  double *layer_y;         /* by layer: top of its row */
  double *layer_h;         /* by layer: tallest box */
} GraphLayout;

void graph_layout_init(GraphLayout *l);
void graph_layout_free(GraphLayout *l);
/* Adds a box of w x h; returns its index. */
int graph_layout_node(GraphLayout *l, double w, double h);
/* Adds an edge; from < to. */
void graph_layout_edge(GraphLayout *l, int from, int to);
/* Layers, orders and places every node. */
void graph_layout_run(GraphLayout *l);

/* ---- graph_view.c: what is drawn ------------------------------------------ */

typedef enum GvKind { GV_INPUT, GV_KERNEL, GV_VIEW, GV_OUTPUT } GvKind;

typedef struct GvBox {
  GvKind kind;
  const Node *node;        /* kernels and views */
  const Value *value;      /* graph inputs and outputs */
  int step;                /* schedule step of a node, else -1 */
  char *title;             /* "FusedElementwise: Div, Erf, Add" or "input x" */
  char *onnx;              /* the ONNX nodes it computes, one "OpType name" a line */
  int n_onnx;
  int n_weights;           /* constant inputs, not drawn as edges */
  int64_t weight_bytes;
  char *lines[6];          /* the text in the box, title first */
  int n_lines;
} GvBox;

typedef struct GvEdge {
  int from, to;            /* boxes */
  const Value *value;
  char *label;             /* "f32[1,128,768]" */
  char *place;             /* "arena @4096, 1536 B, steps 3..7" */
} GvEdge;

typedef struct GraphView {
  const Graph *g;
  const Plan *plan;
  int *tensor_index;       /* memory_tensor_index */
  GvBox *boxes;
  int n_boxes;
  GvEdge *edges;
  int n_edges;
  GraphLayout layout;      /* box i is layout node i; edge i is layout edge i */
} GraphView;

/* Collects the boxes and edges of g after the passes and lays them out. */
void graph_view_build(GraphView *v, const Graph *g, const Plan *plan);
void graph_view_free(GraphView *v);
/* A value's description for tooltips and the side panel:
 * "x: f32[1,3] (arena @64, 12 B, steps 0..2)". Heap string. */
char *graph_value_text(const GraphView *v, const Value *val);
bool graph_write_dot(const GraphView *v, FILE *f);

/* ---- graph_svg.c ---------------------------------------------------------- */
bool graph_write_svg(const GraphView *v, FILE *f);
/* The SVG, a side panel and a search box with an inline script. */
bool graph_write_html(const GraphView *v, FILE *f);

/* onnxc graph MODEL -o OUT.{svg,html,dot}: returns the exit status. */
int graph_run(const Options *o);

#endif
