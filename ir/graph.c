/* graph.c - building and editing the SSA graph.
 *
 * Invariants kept here (checked by verify.c): a value's `uses` lists each
 * consuming input slot once; a node's outputs point back at it; names are
 * unique within a graph (an index by name makes lookups O(1)).
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

static uint32_t hash_str(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

static void name_insert(Graph *g, Value *v);

static void name_grow(Graph *g) {
  Value **old = g->name_tab;
  int old_cap = g->name_cap;
  g->name_cap = old_cap ? old_cap * 2 : 64;
  g->name_tab = arena_alloc(g->arena, (size_t)g->name_cap * sizeof(Value *));
  for (int i = 0; i < old_cap; i++)
    if (old[i])
      name_insert(g, old[i]);
}

static void name_insert(Graph *g, Value *v) {
  uint32_t mask = (uint32_t)g->name_cap - 1;
  for (uint32_t i = hash_str(v->name) & mask;; i = (i + 1) & mask)
    if (!g->name_tab[i]) {
      g->name_tab[i] = v;
      return;
    }
}

Value *ir_value_find(const Graph *g, const char *name) {
  if (!g->name_cap)
    return NULL;
  uint32_t mask = (uint32_t)g->name_cap - 1;
  for (uint32_t i = hash_str(name) & mask; g->name_tab[i]; i = (i + 1) & mask)
    if (strcmp(g->name_tab[i]->name, name) == 0)
      return g->name_tab[i];
  return NULL;
}

#define GROW(g, arr, n, cap)                                                     \
  do {                                                                           \
    if ((n) == (cap)) {                                                          \
      int nc_ = (cap) ? (cap) * 2 : 16;                                          \
      void *p_ = arena_alloc((g)->arena, (size_t)nc_ * sizeof *(arr));           \
      if (n)                                                                     \
        memcpy(p_, (arr), (size_t)(n) * sizeof *(arr));                          \
      (arr) = p_;                                                                \
      (cap) = nc_;                                                               \
    }                                                                            \
  } while (0)

static Graph *graph_init(Arena *a, const char *file) {
  Graph *g = arena_alloc(a, sizeof *g);
  g->arena = a;
  g->file = arena_strdup(a, file ? file : "<input>");
  g->name = "";
  Value *none = arena_alloc(a, sizeof *none);
  none->id = -1;
  none->name = "";
  none->kind = VK_NONE;
  none->g = g;
  none->shape = shape_unknown();
  g->none = none;
  return g;
}

Graph *ir_graph_new(const char *file) {
  Arena *a = arena_new();
  Graph *g = graph_init(a, file);
  g->owns_arena = true;
  return g;
}

Graph *ir_subgraph_new(Graph *parent, const char *name) {
  Graph *g = graph_init(parent->arena, parent->file);
  g->parent = parent;
  g->name = arena_strdup(g->arena, name ? name : "");
  g->opset = parent->opset;
  g->imports = parent->imports;
  g->n_imports = parent->n_imports;
  return g;
}

Graph *ir_node_subgraph(const Node *n, int k) {
  for (int i = 0; i < n->n_attrs; i++) {
    const Attr *a = &n->attrs[i];
    if (a->kind == AT_GRAPH && a->u.g && k-- == 0)
      return a->u.g;
    for (int j = 0; a->kind == AT_GRAPHS && j < a->n; j++)
      if (a->u.gs[j] && k-- == 0)
        return a->u.gs[j];
  }
  return NULL;
}

void ir_graph_free(Graph *g) {
  if (g && g->owns_arena)
    arena_free(g->arena);
}

Value *ir_value_new(Graph *g, const char *name, DType dt, const Shape *s) {
  Value *v = arena_alloc(g->arena, sizeof *v);
  if (!name || !*name)
    name = arena_printf(g->arena, "t%d", g->n_anon++);
  if (ir_value_find(g, name)) {
    const char *base = name;
    for (int k = 1; ir_value_find(g, name); k++)
      name = arena_printf(g->arena, "%s_%d", base, k);
  } else {
    name = arena_strdup(g->arena, name);
  }
  v->name = name;
  v->g = g;
  v->kind = VK_NODE;
  v->dt = dt;
  v->shape = s ? *s : shape_unknown();
  GROW(g, g->values, g->n_values, g->cap_values);
  v->id = g->n_values;
  g->values[g->n_values++] = v;
  if ((g->n_values + 1) * 2 > g->name_cap)
    name_grow(g);
  name_insert(g, v);
  return v;
}

Value *ir_input_add(Graph *g, const char *name, DType dt, const Shape *s) {
  Value *v = ir_value_new(g, name, dt, s);
  v->kind = VK_INPUT;
  GROW(g, g->inputs, g->n_inputs, g->cap_inputs);
  g->inputs[g->n_inputs++] = v;
  return v;
}

Value *ir_capture_add(Graph *g, const char *name, DType dt, const Shape *s) {
  Value *v = ir_value_new(g, name, dt, s);
  v->kind = VK_INPUT;
  GROW(g, g->captures, g->n_captures, g->cap_captures);
  g->captures[g->n_captures++] = v;
  return v;
}

Value *ir_const_new(Graph *g, const char *name, Tensor *t) {
  Value *v = ir_value_new(g, name, t->dt, &t->shape);
  v->kind = VK_CONST;
  v->konst = t;
  return v;
}

void ir_output_add(Graph *g, Value *v) {
  int cap = g->cap_outputs; /* the names grow with the outputs */
  GROW(g, g->outputs, g->n_outputs, g->cap_outputs);
  GROW(g, g->output_names, g->n_outputs, cap);
  g->output_names[g->n_outputs] = v->name;
  g->outputs[g->n_outputs++] = v;
  v->is_output = true;
}

static void use_add(Value *v, Node *n, Graph *g) {
  if (v->kind == VK_NONE)
    return;
  GROW(g, v->uses, v->n_uses, v->cap_uses);
  v->uses[v->n_uses++] = n;
}

static void use_remove(Value *v, Node *n) {
  if (v->kind == VK_NONE)
    return;
  for (int i = 0; i < v->n_uses; i++)
    if (v->uses[i] == n) {
      v->uses[i] = v->uses[--v->n_uses];
      return;
    }
  IR_ASSERT(!"use_remove: node is not a use of the value");
}

static void link_before(Graph *g, Node *n, Node *pos) {
  if (!pos) {
    n->prev = g->last;
    n->next = NULL;
    if (g->last)
      g->last->next = n;
    else
      g->first = n;
    g->last = n;
  } else {
    n->next = pos;
    n->prev = pos->prev;
    if (pos->prev)
      pos->prev->next = n;
    else
      g->first = n;
    pos->prev = n;
  }
}

static void unlink_node(Graph *g, Node *n) {
  if (n->prev)
    n->prev->next = n->next;
  else
    g->first = n->next;
  if (n->next)
    n->next->prev = n->prev;
  else
    g->last = n->prev;
  n->prev = n->next = NULL;
}

Node *ir_node_insert(Graph *g, Node *pos, OpKind op, const char *op_type, const char *name,
                     int n_in, Value *const *in, int n_out) {
  return ir_node_insert_named(g, pos, op, op_type, name, n_in, in, n_out, NULL);
}

void ir_node_drop_output(Node *n, int i) {
  Value *v = n->out[i];
  IR_ASSERT(v->n_uses == 0 && !v->is_output);
  if (v->kind == VK_NONE)
    return;
  v->producer = NULL;
  v->kind = VK_NONE;  /* stays in the id table, reachable from nothing */
  n->out[i] = n->g->none;
}

Node *ir_node_insert_named(Graph *g, Node *pos, OpKind op, const char *op_type, const char *name,
                           int n_in, Value *const *in, int n_out, const char *const *out_names) {
  Node *n = arena_alloc(g->arena, sizeof *n);
  n->g = g;
  n->op = op;
  n->op_type = arena_strdup(g->arena, op_type ? op_type : ir_ops[op].name);
  n->domain = ir_op_domain(op);
  GROW(g, g->nodes, g->n_node_ids, g->cap_nodes);
  n->id = g->n_node_ids;
  g->nodes[g->n_node_ids++] = n;
  n->name = (name && *name) ? arena_strdup(g->arena, name)
                            : arena_printf(g->arena, "%s_%d", n->op_type, n->id);
  n->n_in = n_in;
  n->in = arena_alloc(g->arena, (size_t)(n_in ? n_in : 1) * sizeof(Value *));
  for (int i = 0; i < n_in; i++) {
    n->in[i] = in[i] ? in[i] : g->none;
    use_add(n->in[i], n, g);
  }
  n->n_out = n_out;
  n->out = arena_alloc(g->arena, (size_t)(n_out ? n_out : 1) * sizeof(Value *));
  for (int i = 0; i < n_out; i++) {
    const char *vn = out_names && out_names[i] && *out_names[i] ? out_names[i]
                     : n_out == 1 ? n->name : arena_printf(g->arena, "%s_%d", n->name, i);
    Value *v = ir_value_new(g, vn, DT_UNDEF, NULL);
    v->producer = n;
    v->out_index = i;
    n->out[i] = v;
  }
  link_before(g, n, pos);
  g->n_nodes++;
  return n;
}

Node *ir_node_new(Graph *g, OpKind op, const char *op_type, const char *name, int n_in,
                  Value *const *in, int n_out) {
  return ir_node_insert(g, NULL, op, op_type, name, n_in, in, n_out);
}

void ir_node_set_input(Node *n, int i, Value *v) {
  IR_ASSERT(i >= 0 && i < n->n_in);
  use_remove(n->in[i], n);
  n->in[i] = v ? v : n->g->none;
  use_add(n->in[i], n, n->g);
}

void ir_node_add_input(Node *n, Value *v) {
  Value **in = arena_alloc(n->g->arena, (size_t)(n->n_in + 1) * sizeof(Value *));
  memcpy(in, n->in, (size_t)n->n_in * sizeof(Value *));
  in[n->n_in] = v ? v : n->g->none;
  n->in = in;
  n->n_in++;
  use_add(n->in[n->n_in - 1], n, n->g);
}

void ir_node_remove(Node *n) {
  Graph *g = n->g;
  for (int i = 0; i < n->n_out; i++)
    IR_ASSERT(n->out[i]->n_uses == 0 && !n->out[i]->is_output);
  for (int i = 0; i < n->n_in; i++)
    use_remove(n->in[i], n);
  unlink_node(g, n);
  g->nodes[n->id] = NULL;
  g->n_nodes--;
}

void ir_node_move_before(Node *n, Node *pos) {
  if (n == pos)
    return;
  unlink_node(n->g, n);
  link_before(n->g, n, pos);
}

void ir_value_replace(Value *from, Value *to) {
  if (from == to)
    return;
  while (from->n_uses > 0) {
    Node *u = from->uses[0];
    for (int i = 0; i < u->n_in; i++)
      if (u->in[i] == from) {
        ir_node_set_input(u, i, to);
        break;
      }
  }
  if (from->is_output) {
    Graph *g = from->g;
    for (int gi = 0; gi < g->n_outputs; gi++)
      if (g->outputs[gi] == from)
        g->outputs[gi] = to;
    from->is_output = false;
    /* The output's name is the ABI's (NAME_run's parameter, the ONNX
     * output): an intermediate that takes its place takes its name too. */
    if (!to->is_output && to->kind == VK_NODE && from->name) {
      const char *old = to->name;
      to->name = from->name;
      from->name = old;
    }
    to->is_output = true;
  }
}

void ir_value_make_const(Value *v, Tensor *t) {
  Node *p = v->producer;
  if (p) {
    /* The producer keeps a fresh, unused output in this slot so it can die. */
    Value *dummy = ir_value_new(p->g, NULL, v->dt, &v->shape);
    dummy->producer = p;
    dummy->out_index = v->out_index;
    p->out[v->out_index] = dummy;
  }
  v->kind = VK_CONST;
  v->producer = NULL;
  v->out_index = 0;
  v->konst = t;
  v->dt = t->dt;
  v->shape = t->shape;
}

/* ---- attributes -------------------------------------------------------------- */

Attr *ir_attr_add(Node *n, const char *name, AttrKind kind) {
  ir_attr_remove(n, name);
  Attr *a = arena_alloc(n->g->arena, (size_t)(n->n_attrs + 1) * sizeof *a);
  if (n->n_attrs)
    memcpy(a, n->attrs, (size_t)n->n_attrs * sizeof *a);
  n->attrs = a;
  Attr *at = &a[n->n_attrs++];
  at->name = arena_strdup(n->g->arena, name);
  at->kind = kind;
  return at;
}

const Attr *ir_attr(const Node *n, const char *name) {
  for (int i = 0; i < n->n_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0)
      return &n->attrs[i];
  return NULL;
}

int64_t ir_attr_int(const Node *n, const char *name, int64_t dflt) {
  const Attr *a = ir_attr(n, name);
  return a && a->kind == AT_INT ? a->u.i : dflt;
}

float ir_attr_float(const Node *n, const char *name, float dflt) {
  const Attr *a = ir_attr(n, name);
  if (a && a->kind == AT_FLOAT)
    return a->u.f;
  if (a && a->kind == AT_INT)
    return (float)a->u.i;
  return dflt;
}

const char *ir_attr_str(const Node *n, const char *name, const char *dflt) {
  const Attr *a = ir_attr(n, name);
  return a && a->kind == AT_STRING ? a->u.s : dflt;
}

const int64_t *ir_attr_ints(const Node *n, const char *name, int *count) {
  const Attr *a = ir_attr(n, name);
  if (!a || a->kind != AT_INTS) {
    *count = 0;
    return NULL;
  }
  *count = a->n;
  return a->u.is;
}

void ir_attr_set_int(Node *n, const char *name, int64_t v) {
  ir_attr_add(n, name, AT_INT)->u.i = v;
}

void ir_attr_set_ints(Node *n, const char *name, const int64_t *v, int count) {
  Attr *a = ir_attr_add(n, name, AT_INTS);
  a->n = count;
  a->u.is = arena_dup(n->g->arena, v, (size_t)count * sizeof(int64_t));
}

void ir_attr_remove(Node *n, const char *name) {
  for (int i = 0; i < n->n_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) {
      n->attrs[i] = n->attrs[--n->n_attrs];
      return;
    }
}
