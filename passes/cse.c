/* cse.c - common-subexpression elimination by hash-consing.
 *
 * requires: inferred types and shapes; use lists.
 * provides: no two constants with the same dtype, shape and bytes; no two
 *   pure nodes with the same op, domain, inputs (the same Value objects; the
 *   two operands of a commutative binary op in either order) and attributes
 *   (kinds and contents, tensors by bytes): the later one's users read the
 *   earlier one's outputs and the later node is removed.
 * invalidates: schedule positions (nodes go); lifetimes (a merged value lives
 *   until the last user of either copy); graph output values may become
 *   shared between output slots or turn into constants.
 * Constants are merged first, so nodes that read equal weights or shape
 * tensors look alike. Nodes are then visited once in schedule order: a
 * node's inputs are final by then (their producers were visited before it),
 * so one table lookup per node finds every duplicate, chains included.
 * Random ops, nodes with subgraphs and unknown ops are never merged.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* ---- hashing ------------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = mix(h, w);
  }
  uint64_t tail = 0;
  for (; i < n; i++)
    tail = (tail << 8) | b[i];
  return mix(h, tail ^ n);
}

static uint64_t hash_str(uint64_t h, const char *s) { return hash_bytes(h, s, strlen(s)); }

static uint64_t hash_tensor(const Tensor *t) {
  uint64_t h = mix((uint64_t)t->dt, (uint64_t)t->shape.rank);
  for (int i = 0; i < t->shape.rank; i++)
    h = mix(h, (uint64_t)t->shape.d[i]);
  if (t->dt != DT_STRING)
    return hash_bytes(h, t->data, (size_t)t->nbytes);
  for (int64_t i = 0; i < t->numel; i++)
    h = hash_str(h, ((const char *const *)t->data)[i]);
  return h;
}

static bool tensor_equal(const Tensor *a, const Tensor *b) {
  if (a == b)
    return true;
  if (a->dt != b->dt || a->shape.rank != b->shape.rank || a->nbytes != b->nbytes)
    return false;
  for (int i = 0; i < a->shape.rank; i++)
    if (a->shape.d[i] != b->shape.d[i])
      return false;
  if (a->dt != DT_STRING)
    return a->data == b->data || memcmp(a->data, b->data, (size_t)a->nbytes) == 0;
  for (int64_t i = 0; i < a->numel; i++)
    if (strcmp(((const char *const *)a->data)[i], ((const char *const *)b->data)[i]) != 0)
      return false;
  return true;
}

/* ---- attributes ------------------------------------------------------------------ */

static uint64_t hash_attr(const Attr *a) {
  uint64_t h = mix(hash_str(0, a->name), (uint64_t)a->kind);
  switch (a->kind) {
  case AT_FLOAT: return hash_bytes(h, &a->u.f, sizeof a->u.f);
  case AT_INT: return mix(h, (uint64_t)a->u.i);
  case AT_STRING: return hash_str(h, a->u.s);
  case AT_FLOATS: return hash_bytes(h, a->u.fs, (size_t)a->n * sizeof(float));
  case AT_INTS: return hash_bytes(h, a->u.is, (size_t)a->n * sizeof(int64_t));
  case AT_STRINGS:
    for (int i = 0; i < a->n; i++)
      h = hash_str(h, a->u.ss[i]);
    return h;
  case AT_TENSOR:
  case AT_SPARSE_TENSOR: return a->u.t ? mix(h, hash_tensor(a->u.t)) : h;
  case AT_TENSORS:
    for (int i = 0; i < a->n; i++)
      h = mix(h, hash_tensor(a->u.ts[i]));
    return h;
  default: return h;
  }
}

static bool attr_equal(const Attr *a, const Attr *b) {
  if (a->kind != b->kind || strcmp(a->name, b->name) != 0)
    return false;
  bool lists = a->kind == AT_FLOATS || a->kind == AT_INTS || a->kind == AT_STRINGS || a->kind == AT_TENSORS;
  if (lists && a->n != b->n)
    return false;
  switch (a->kind) {
  case AT_FLOAT: return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;  /* bits: NaN, -0 */
  case AT_INT: return a->u.i == b->u.i;
  case AT_STRING: return a->slen == b->slen && strcmp(a->u.s, b->u.s) == 0 && memcmp(a->u.s, b->u.s, a->slen) == 0;
  case AT_FLOATS: return !a->n || memcmp(a->u.fs, b->u.fs, (size_t)a->n * sizeof(float)) == 0;
  case AT_INTS: return !a->n || memcmp(a->u.is, b->u.is, (size_t)a->n * sizeof(int64_t)) == 0;
  case AT_STRINGS:
    for (int i = 0; i < a->n; i++)
      if (strcmp(a->u.ss[i], b->u.ss[i]) != 0)
        return false;
    return true;
  case AT_TENSOR:
  case AT_SPARSE_TENSOR: return a->u.t && b->u.t && tensor_equal(a->u.t, b->u.t);
  case AT_TENSORS:
    for (int i = 0; i < a->n; i++)
      if (!tensor_equal(a->u.ts[i], b->u.ts[i]))
        return false;
    return true;
  default: return false;  /* graphs, type protos: never equal */
  }
}

/* onnxc.fused records which ONNX nodes a node computes (for the fusion
 * report), not what it computes: it does not keep two nodes apart. */
static bool bookkeeping(const Attr *a) { return strcmp(a->name, "onnxc.fused") == 0; }

static int counted_attrs(const Node *n) {
  int k = 0;
  for (int i = 0; i < n->n_attrs; i++)
    k += !bookkeeping(&n->attrs[i]);
  return k;
}

/* Same attribute set, in any order (names are unique per node). */
static bool attrs_equal(const Node *a, const Node *b) {
  if (counted_attrs(a) != counted_attrs(b))
    return false;
  for (int i = 0; i < a->n_attrs; i++) {
    if (bookkeeping(&a->attrs[i]))
      continue;
    const Attr *o = ir_attr(b, a->attrs[i].name);
    if (!o || !attr_equal(&a->attrs[i], o))
      return false;
  }
  return true;
}

/* ---- nodes ------------------------------------------------------------------------- */

static bool pure(const Node *n) {
  static const char *const impure[] = {"RandomNormal", "RandomNormalLike", "RandomUniform",
                                       "RandomUniformLike", "Bernoulli", "Multinomial", "Dropout"};
  if (n->op == OP_Unknown_ || (n->domain && *n->domain))
    return false;
  for (size_t i = 0; i < sizeof impure / sizeof impure[0]; i++)
    if (strcmp(n->op_type, impure[i]) == 0)
      return false;
  for (int i = 0; i < n->n_attrs; i++)
    if (n->attrs[i].kind == AT_GRAPH || n->attrs[i].kind == AT_GRAPHS)
      return false;
  return true;
}

/* Commutative in its two operands: they may be matched in either order. */
static bool swappable(const Node *n) { return n->n_in == 2 && (ir_ops[n->op].flags & OPF_COMM); }

static uint64_t hash_node(const Node *n) {
  uint64_t h = mix(hash_str((uint64_t)n->op, n->op_type), (uint64_t)n->n_in);
  h = mix(h, (uint64_t)n->n_out);
  if (swappable(n)) {
    uint64_t a = (uint64_t)(int64_t)n->in[0]->id, b = (uint64_t)(int64_t)n->in[1]->id;
    h = mix(mix(h, a < b ? a : b), a < b ? b : a);
  } else {
    for (int i = 0; i < n->n_in; i++)
      h = mix(h, (uint64_t)(int64_t)n->in[i]->id);
  }
  uint64_t ah = 0;  /* order-independent over the attributes */
  for (int i = 0; i < n->n_attrs; i++)
    ah += bookkeeping(&n->attrs[i]) ? 0 : hash_attr(&n->attrs[i]);
  return mix(h, ah);
}

static bool used(const Value *v) { return v->kind != VK_NONE && (v->n_uses > 0 || v->is_output); }

/* Can b's outputs be replaced by a's? */
static bool node_equal(const Node *a, const Node *b) {
  if (a->op != b->op || strcmp(a->op_type, b->op_type) != 0 || a->n_in != b->n_in || a->n_out != b->n_out)
    return false;
  bool same = true;
  for (int i = 0; i < a->n_in && same; i++)
    same = a->in[i] == b->in[i];
  if (!same && !(swappable(a) && a->in[0] == b->in[1] && a->in[1] == b->in[0]))
    return false;
  for (int i = 0; i < a->n_out; i++) {
    const Value *x = a->out[i], *y = b->out[i];
    if (y->kind == VK_NONE)
      continue;
    if (x->kind == VK_NONE) {
      if (used(y))
        return false;
      continue;
    }
    if (x->dt != y->dt || x->shape.rank != y->shape.rank || (x->shape.rank >= 0 && !shape_equal(&x->shape, &y->shape)))
      return false;
  }
  return attrs_equal(a, b);
}

/* ---- the pass ---------------------------------------------------------------------- */

typedef struct Table {
  void **slot;
  uint64_t *key;
  size_t mask;
} Table;

static Table table_new(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n + 1)
    cap *= 2;
  Table t = {calloc(cap, sizeof(void *)), calloc(cap, sizeof(uint64_t)), cap - 1};
  IR_ASSERT(t.slot && t.key);
  return t;
}

static void table_free(Table *t) {
  free(t->slot);
  free(t->key);
}

static void merge_constants(Graph *g, const Captured *cap) {
  Table t = table_new((size_t)g->n_values);
  for (int i = 0; i < g->n_values; i++) {
    Value *v = g->values[i];
    if (v->kind != VK_CONST || !v->konst || !used(v))
      continue;
    uint64_t h = hash_tensor(v->konst);
    size_t s = h & t.mask;
    for (; t.slot[s]; s = (s + 1) & t.mask) {
      Value *e = t.slot[s];
      if (t.key[s] == h && e->dt == v->dt && tensor_equal(e->konst, v->konst))
        break;
    }
    if (!t.slot[s]) {
      t.slot[s] = v;
      t.key[s] = h;
    } else if (!rewrite_is_captured(cap, v)) {
      ir_value_replace(v, t.slot[s]);
    }
  }
  table_free(&t);
}

static void merge_nodes(Graph *g, const Captured *cap) {
  Table t = table_new((size_t)g->n_nodes);
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (!pure(n))
      continue;
    uint64_t h = hash_node(n);
    size_t s = h & t.mask;
    for (; t.slot[s]; s = (s + 1) & t.mask)
      if (t.key[s] == h && node_equal(t.slot[s], n))
        break;
    if (!t.slot[s]) {
      t.slot[s] = n;
      t.key[s] = h;
      continue;
    }
    Node *first = t.slot[s];
    bool pinned = false;
    for (int i = 0; i < n->n_out; i++)
      pinned |= rewrite_is_captured(cap, n->out[i]);
    if (pinned)
      continue;
    for (int i = 0; i < n->n_out; i++)
      if (n->out[i]->kind != VK_NONE && first->out[i]->kind != VK_NONE)
        ir_value_replace(n->out[i], first->out[i]);
    rewrite_record_fused(first, n);  /* the survivor computes n (fusion report) */
    ir_node_remove(n);
  }
  table_free(&t);
}

bool pass_cse(Graph *g, Diag *d) {
  (void)d;
  Captured cap = rewrite_captured(g);
  merge_constants(g, &cap);
  merge_nodes(g, &cap);
  return true;
}
