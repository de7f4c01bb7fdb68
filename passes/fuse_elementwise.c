/* fuse_elementwise.c - chains of elementwise nodes become one kernel.
 *
 * requires: inferred types and static shapes; fuse-epilogue done (the
 *   activations a Conv/Gemm takes in its stores are gone already).
 * provides: every group of two or more elementwise nodes (rows of ops.def
 *   with a scalar template, and Casts between types of 8 bits or more but
 *   float8) whose intermediate results are read only inside
 *   the group is one onnxc:FusedElementwise node:
 *     Y = FusedElementwise(operands...){body = graph}
 *   The body is a subgraph in the parent's arena: one input per operand (same
 *   type and shape, in the node's input order), the group's nodes in their
 *   schedule order, and one output, Y's value. It is the kernel description
 *   both targets print (codegen/kernel_desc.c): the iteration space is Y's
 *   shape, each operand is loaded through its broadcast index map, each body
 *   node is one scalar expression of its row's template, and Y is stored once.
 *   A group grows backwards from its last node (the root) over producers that
 *   are elementwise, whose output has Y's shape (no value is recomputed
 *   under broadcasting), that only the group reads, that is no graph output
 *   and that no subgraph captures. Intermediates are never float16/bfloat16
 *   (each would round through its storage type) and every type is one the C
 *   target has; operands and Y may be of any such type.
 *   First, an Expand read by broadcasting elementwise ops whose other
 *   operands give the full shape is read through broadcasting instead (and
 *   goes when nothing else reads it). Last, Transposes and Slices that only a
 *   fused kernel reads are read in place through strides (onnxc.views).
 * invalidates: schedule positions (the group's nodes go, Y's producer takes
 *   the root's place).
 * Intermediates leave the arena: a chain of k nodes reads its operands and
 * writes Y once instead of writing and reading k - 1 tensors.
 */
#include "passes.h"
#include "movement.h"

#include <stdlib.h>
#include <string.h>

/* Largest group: body steps, and operands of the fused node. */
#define FUSE_MAX_STEPS 32
#define FUSE_MAX_OPERANDS 16

static bool plain_type(DType t) {
  return t != DT_STRING && dtype_bits(t) >= 8 && dtype_ctype(t)[0] != 0 &&
         !(t >= DT_F8E4M3FN && t <= DT_F8E5M2FNUZ);
}

/* An elementwise node the kernel description can hold. */
static bool fusable(const Node *n) {
  bool cast = n->op == OP_Cast && n->n_in == 1;  /* a conversion per element */
  if ((!ir_ops[n->op].expr && !cast) || n->n_out != 1 || n->n_in < 1)
    return false;
  if (ir_ops[n->op].max_in < 0 && n->n_in > 8)
    return false;
  if (ir_ops[n->op].max_in >= 0 && n->n_in > 10)
    return false;
  /* extents known at run time (-D ranges): counted at their upper bounds */
  int64_t k;
  if (!shape_numel_max(n->g, &n->out[0]->shape, &k) || k == 0 || !plain_type(n->out[0]->dt))
    return false;
  for (int i = 0; i < n->n_in; i++)
    if (!ir_has_input(n, i) || !plain_type(n->in[i]->dt) || !shape_numel_max(n->g, &n->in[i]->shape, &k))
      return false;
  return true;
}

typedef struct Group {
  Node *node[FUSE_MAX_STEPS];
  int n;
  Value *operand[FUSE_MAX_OPERANDS];
  int n_operands;
} Group;

static bool in_group(const Group *gr, const Node *n) {
  for (int i = 0; i < gr->n; i++)
    if (gr->node[i] == n)
      return true;
  return false;
}

/* Operands the group would have with candidate c added (c's output becomes
 * internal, c's inputs external unless produced inside). */
static int operands_with(const Group *gr, const Node *c) {
  Value *ops[FUSE_MAX_OPERANDS + 16];
  int n = 0;
  for (int i = 0; i < gr->n + 1; i++) {
    const Node *m = i < gr->n ? gr->node[i] : c;
    for (int j = 0; j < m->n_in; j++) {
      Value *v = m->in[j];
      const Node *p = v->kind == VK_NODE ? v->producer : NULL;
      if (p && (p == c || in_group(gr, p)))
        continue;
      bool seen = false;
      for (int k = 0; k < n && !seen; k++)
        seen = ops[k] == v;
      if (!seen) {
        if (n == FUSE_MAX_OPERANDS)
          return FUSE_MAX_OPERANDS + 1;
        ops[n++] = v;
      }
    }
  }
  return n;
}

/* Can producer p of a group member join the group rooted where Y is? */
static bool joinable(const Group *gr, const Node *p, const Value *y, const Captured *cap) {
  if (!p || in_group(gr, p) || !fusable(p))
    return false;
  const Value *v = p->out[0];
  if (v->is_output || rewrite_is_captured(cap, v) || !rewrite_same_shape(&v->shape, &y->shape) ||
      v->dt == DT_F16 || v->dt == DT_BF16)
    return false;
  for (int u = 0; u < v->n_uses; u++)
    if (!in_group(gr, v->uses[u]))
      return false;
  return operands_with(gr, p) <= FUSE_MAX_OPERANDS;
}

static int cmp_pos(const void *a, const void *b, void *pos) {
  const int *p = pos;
  return p[(*(Node *const *)a)->id] - p[(*(Node *const *)b)->id];
}

/* Grows the group of root backwards; members end in schedule order. */
static void grow(Group *gr, Node *root, const Captured *cap, const int *pos) {
  gr->n = 0;
  gr->node[gr->n++] = root;
  for (bool added = true; added && gr->n < FUSE_MAX_STEPS;) {
    added = false;
    for (int i = 0; i < gr->n && !added; i++)
      for (int j = 0; j < gr->node[i]->n_in && !added; j++) {
        Value *v = gr->node[i]->in[j];
        Node *p = v->kind == VK_NODE ? v->producer : NULL;
        if (joinable(gr, p, root->out[0], cap)) {
          gr->node[gr->n++] = p;
          added = true;
        }
      }
  }
  /* insertion sort by schedule position (groups are small) */
  for (int i = 1; i < gr->n; i++)
    for (int j = i; j > 0 && cmp_pos(&gr->node[j - 1], &gr->node[j], (void *)pos) > 0; j--) {
      Node *t = gr->node[j];
      gr->node[j] = gr->node[j - 1];
      gr->node[j - 1] = t;
    }
  gr->n_operands = 0;
  for (int i = 0; i < gr->n; i++)
    for (int j = 0; j < gr->node[i]->n_in; j++) {
      Value *v = gr->node[i]->in[j];
      if (v->kind == VK_NODE && v->producer && in_group(gr, v->producer))
        continue;
      bool seen = false;
      for (int k = 0; k < gr->n_operands && !seen; k++)
        seen = gr->operand[k] == v;
      if (!seen)
        gr->operand[gr->n_operands++] = v;
    }
}

/* Builds the fused node in place of the group's root. */
static Node *fuse(Graph *g, Group *gr) {
  Node *root = gr->node[gr->n - 1];
  Graph *body = ir_subgraph_new(g, arena_printf(g->arena, "%s_body", root->name));
  Value **map_from = malloc((size_t)(gr->n_operands + gr->n) * sizeof *map_from);
  Value **map_to = malloc((size_t)(gr->n_operands + gr->n) * sizeof *map_to);
  IR_ASSERT(map_from && map_to);
  int nm = 0;
  for (int k = 0; k < gr->n_operands; k++) {
    Value *v = gr->operand[k];
    map_from[nm] = v;
    map_to[nm++] = ir_input_add(body, arena_printf(g->arena, "in%d", k), v->dt, &v->shape);
  }
  for (int i = 0; i < gr->n; i++) {
    Node *m = gr->node[i];
    Value *in[FUSE_MAX_OPERANDS + 16];
    IR_ASSERT(m->n_in <= (int)(sizeof in / sizeof in[0]));
    for (int j = 0; j < m->n_in; j++) {
      in[j] = NULL;
      for (int k = 0; k < nm && !in[j]; k++)
        if (map_from[k] == m->in[j])
          in[j] = map_to[k];
      IR_ASSERT(in[j]);
    }
    Node *c = ir_node_new(body, m->op, m->op_type, m->name, m->n_in, in, 1);
    c->domain = m->domain;
    c->attrs = m->attrs;
    c->n_attrs = m->n_attrs;
    c->out[0]->dt = m->out[0]->dt;
    c->out[0]->shape = m->out[0]->shape;
    map_from[nm] = m->out[0];
    map_to[nm++] = c->out[0];
  }
  ir_output_add(body, map_to[nm - 1]);
  Node *f = ir_node_insert(g, root, OP_FusedElementwise, "FusedElementwise", root->name, gr->n_operands,
                           gr->operand, 1);
  f->domain = "onnxc";
  f->out[0]->dt = root->out[0]->dt;
  f->out[0]->shape = root->out[0]->shape;
  Attr *a = ir_attr_add(f, "body", AT_GRAPH);
  a->u.g = body;
  for (int i = 0; i < gr->n; i++)
    rewrite_record_fused(f, gr->node[i]);
  ir_value_replace(root->out[0], f->out[0]);
  for (int i = gr->n - 1; i >= 0; i--)
    ir_node_remove(gr->node[i]);
  free(map_from);
  free(map_to);
  return f;
}

/* ---- epilogues: a float32 chain of one value and constant scalars, stored by
 * the Conv, Gemm or MatMul that makes the value ------------------------------ */

static bool scalar_const(const Value *v) {
  return v->kind == VK_CONST && v->konst && v->konst->numel == 1 && v->dt == DT_F32;
}

/* The producer whose stores can take the group as their epilogue: the
 * group's only operand that is not a constant scalar is a float32 Conv, Gemm
 * or MatMul output of the group's shape, that only the group reads and whose
 * producer has no fused activation yet; every value in the group is float32
 * and each step's result is read once (the epilogue is one expression). */
static Node *epilogue_producer(const Group *gr, const Captured *cap) {
  Value *x = NULL;
  for (int k = 0; k < gr->n_operands; k++) {
    Value *v = gr->operand[k];
    if (scalar_const(v))
      continue;
    if (x)
      return NULL;
    x = v;
  }
  const Value *y = gr->node[gr->n - 1]->out[0];
  if (!x || x->kind != VK_NODE || !x->producer || x->dt != DT_F32 || x->is_output ||
      rewrite_is_captured(cap, x) || !rewrite_same_shape(&x->shape, &y->shape) || y->dt != DT_F32)
    return NULL;
  for (int u = 0; u < x->n_uses; u++)
    if (!in_group(gr, x->uses[u]))
      return NULL;
  Node *p = x->producer;
  /* through a Reshape (the one fuse-epilogue puts after a batched MatMul's
   * Gemm): an elementwise epilogue commutes with it */
  if (p->op == OP_Reshape) {
    const Value *r = p->in[0];
    if (r->kind != VK_NODE || !r->producer || r->n_uses != 1 || r->is_output || rewrite_is_captured(cap, r) ||
        r->dt != DT_F32)
      return NULL;
    p = r->producer;
  }
  if ((p->op != OP_Conv && p->op != OP_Gemm && p->op != OP_MatMul) || ir_attr(p, "activation") ||
      ir_attr(p, "epilogue") || p->n_out != 1)
    return NULL;
  /* -D ranges: a producer of run-time extents takes it as a MatMul or Conv
   * (codegen/emit_dyn.c applies it in the GEMM's store or after the product) */
  const Graph *root = p->g;
  while (root->parent)
    root = root->parent;
  if (root->n_syms > 0 && !shape_is_static(&p->out[0]->shape) &&
      ((p->op != OP_MatMul && p->op != OP_Conv) || p->out[0] != x))
    return NULL;
  for (int i = 0; i < gr->n; i++) {
    const Node *m = gr->node[i];
    if (m->out[0]->dt != DT_F32)
      return NULL;
    for (int j = 0; j < m->n_in; j++)
      if (m->in[j]->dt != DT_F32)
        return NULL;
    if (i + 1 < gr->n && m->out[0]->n_uses != 1)
      return NULL;
  }
  return p;
}

/* The fused node f becomes the epilogue of its operand's producer p: p
 * carries f's body (attribute "epilogue"), the index of the body input that
 * is its own output ("epilogue_input") and the constant scalars of the other
 * inputs ("epilogue_consts"); f goes and p's output takes its place. */
static void to_epilogue(Node *f, Node *p) {
  const Attr *body = ir_attr(f, "body");
  int x = -1;
  float *consts = arena_alloc(f->g->arena, (size_t)f->n_in * sizeof *consts);
  for (int k = 0; k < f->n_in; k++) {
    if (!scalar_const(f->in[k]))
      x = k;
    else
      consts[k] = (float)tensor_get_f64(f->in[k]->konst, 0);
  }
  IR_ASSERT(x >= 0);
  consts[x] = 0;
  ir_attr_add(p, "epilogue", AT_GRAPH)->u.g = body->u.g;
  ir_attr_set_int(p, "epilogue_input", x);
  Attr *c = ir_attr_add(p, "epilogue_consts", AT_FLOATS);
  c->u.fs = consts;
  c->n = f->n_in;
  rewrite_record_fused(p, f);
  rewrite_forward(f, f->in[x]);  /* p's output, or the Reshape of it */
}

/* ---- prologues: the elementwise chain that makes a Softmax's input (the
 * attention scale and mask) computed row by row inside the Softmax ------- */

/* Softmax/LogSoftmax s over contiguous rows whose float32 input only s reads
 * and a fusable group makes: the group's root, else NULL. */
static bool softmax_rows_last(const Node *s) {
  const Shape *xs = &s->out[0]->shape;
  if (s->g->opset < 13)
    return true;  /* coerced to 2-D: rows are contiguous */
  int ax;
  return shape_axis(ir_attr_int(s, "axis", -1), xs->rank, &ax) && ax == xs->rank - 1;
}

static Node *prologue_producer(const Node *s, const Captured *cap) {
  const Value *x = s->in[0];
  if (s->n_in != 1 || x->kind != VK_NODE || !x->producer || x->n_uses != 1 || x->is_output ||
      rewrite_is_captured(cap, x) || x->dt != DT_F32 || s->out[0]->dt != DT_F32 ||
      !rewrite_same_shape(&x->shape, &s->out[0]->shape) || !softmax_rows_last(s))
    return NULL;
  Node *p = x->producer;
  return p->op == OP_FusedElementwise || fusable(p) ? p : NULL;
}

/* Softmax s takes fused node f as its prologue: f's operands become s's
 * inputs, f's body its attribute "prologue" (onnxc.fused_inputs counts the
 * extra inputs for the verifier), and f goes. */
static void to_prologue(Node *s, Node *f) {
  ir_node_set_input(s, 0, f->in[0]);
  for (int k = 1; k < f->n_in; k++)
    ir_node_add_input(s, f->in[k]);
  ir_attr_add(s, "prologue", AT_GRAPH)->u.g = ir_attr(f, "body")->u.g;
  ir_attr_set_int(s, "onnxc.fused_inputs", f->n_in - 1);
  rewrite_record_fused(s, f);
  ir_node_remove(f);
}

static void fuse_prologues(Graph *g, const Captured *cap, const int *pos) {
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    if (n->op != OP_Softmax && n->op != OP_LogSoftmax)
      continue;
    Node *p = prologue_producer(n, cap);
    if (!p)
      continue;
    if (p->op != OP_FusedElementwise) {  /* a single elementwise node: a body of one */
      Group gr;
      grow(&gr, p, cap, pos);
      if (gr.n != 1 || gr.n_operands > FUSE_MAX_OPERANDS)
        continue;
      p = fuse(g, &gr);
    }
    if (p->n_in <= FUSE_MAX_OPERANDS)
      to_prologue(n, p);
  }
}

/* ---- Expand read through broadcasting ---------------------------------------- */

/* An elementwise op whose output shape is the numpy broadcast of all its
 * inputs (not Clip, whose bounds do not widen it, nor PRelu, whose slope
 * broadcasts one way). */
static bool bcast_all(const Node *n) {
  return ir_ops[n->op].expr && (ir_ops[n->op].flags & OPF_BCAST) && n->op != OP_Clip && n->op != OP_PRelu &&
         n->n_out == 1 && shape_is_static(&n->out[0]->shape);
}

/* n's output shape with input j read as `a`: whether it stays the same. */
static bool same_with(const Node *n, int j, const Value *a) {
  Shape s = shape_make(0, NULL);
  for (int k = 0; k < n->n_in; k++) {
    if (!ir_has_input(n, k))
      continue;
    const Shape *sk = k == j ? &a->shape : &n->in[k]->shape;
    Shape t;
    if (!shape_is_static(sk) || !shape_broadcast(&s, sk, &t))
      return false;
    s = t;
  }
  return rewrite_same_shape(&s, &n->out[0]->shape);
}

/* Expand(a, shape) read by broadcasting elementwise ops whose other operands
 * already give the full shape: they read a itself (the loop nest broadcasts
 * it, index arithmetic instead of a copy), and an Expand left unread goes.
 * Exporters write such Expands for attention masks and position tables. */
static void absorb_expands(Graph *g, const Captured *cap) {
  for (Node *n = g->first; n; n = n->next) {
    if (!bcast_all(n))
      continue;
    for (int j = 0; j < n->n_in; j++) {
      Value *v = n->in[j];
      if (!ir_has_input(n, j) || v->kind != VK_NODE || !v->producer || v->producer->op != OP_Expand)
        continue;
      Node *x = v->producer;
      Value *a = x->in[0];
      if (a->dt != v->dt || !same_with(n, j, a))
        continue;
      ir_node_set_input(n, j, a);
      if (v->n_uses == 0 && !v->is_output && !rewrite_is_captured(cap, v)) {
        rewrite_record_fused(n, x);
        ir_node_remove(x);
      }
    }
  }
}

/* ---- Transposes and Slices read through strides ------------------------------ */

/* A Slice whose starts, ends, axes and steps are all known (inference
 * checked them; any message here is dropped). */
static bool slice_known(const Node *t) {
  Diag quiet;
  diag_init(&quiet, "", NULL);
  SliceDim sd[IR_MAX_RANK];
  bool ok = mv_slice_params(t, &quiet, sd) == MV_KNOWN;
  diag_free(&quiet);
  return ok;
}

/* The Transpose or Slice (static parameters) whose result v only one node
 * reads, once: read in place by that node through strides, or NULL. */
static Node *absorbable_view(const Value *v, const Captured *cap) {
  const Node *t = v->kind == VK_NODE ? v->producer : NULL;
  if (!t || (t->op != OP_Transpose && t->op != OP_Slice) || t->n_out != 1 || v->n_uses != 1 || v->is_output ||
      rewrite_is_captured(cap, v) || !shape_is_static(&t->in[0]->shape) || !shape_is_static(&v->shape) ||
      t->in[0]->dt != v->dt || dtype_bits(v->dt) < 8)
    return NULL;
  if (t->op == OP_Transpose) {
    int k = 0;
    const int64_t *perm = ir_attr_ints(t, "perm", &k);
    return perm && k != v->shape.rank ? NULL : (Node *)t;
  }
  return slice_known(t) ? (Node *)t : NULL;
}

/* The view of t's result in the buffer its input x lies in, given x's view
 * there (offset *off, strides st, one per dim of x): updated in place. */
static void view_through(const Node *t, int64_t *off, int64_t *st) {
  const Value *x = t->in[0], *y = t->out[0];
  int64_t xs[IR_MAX_RANK];
  for (int i = 0; i < x->shape.rank; i++)
    xs[i] = st[i];
  if (t->op == OP_Transpose) {
    int k = 0;
    const int64_t *perm = ir_attr_ints(t, "perm", &k);
    for (int i = 0; i < y->shape.rank; i++)
      st[i] = xs[perm ? perm[i] : y->shape.rank - 1 - i];
    return;
  }
  SliceDim sd[IR_MAX_RANK];
  Diag quiet;
  diag_init(&quiet, "", NULL);
  IR_ASSERT(mv_slice_params(t, &quiet, sd) == MV_KNOWN);
  diag_free(&quiet);
  for (int j = 0; j < x->shape.rank; j++) {
    *off += sd[j].start * xs[j];
    st[j] = xs[j] * sd[j].step;
  }
}

/* Operands of fused kernels made by Transposes and Slices (chains of them)
 * that only the kernel reads are read in place: the kernel takes the first
 * buffer and a view of it (attribute onnxc.views: per operand its rank r, 0
 * when read as it is, then the element offset and r strides, one per logical
 * dim); the body input keeps the logical shape, and both targets index the
 * buffer through the view (codegen/kernel_desc.c). The copies go. */
static void absorb_views(Graph *g, const Captured *cap) {
  for (Node *f = g->first; f; f = f->next) {
    if (f->op != OP_FusedElementwise)
      continue;
    int total = 0, any = 0;
    for (int k = 0; k < f->n_in; k++) {
      bool v = absorbable_view(f->in[k], cap) != NULL;
      total += 1 + (v ? 1 + f->in[k]->shape.rank : 0);
      any += v;
    }
    if (!any)
      continue;
    int64_t *enc = arena_alloc(g->arena, (size_t)total * sizeof *enc);
    int at = 0;
    for (int k = 0; k < f->n_in; k++) {
      Value *v = f->in[k];
      Node *chain[8];
      int nc = 0;
      for (Value *u = v; nc < 8; u = chain[nc - 1]->in[0]) {
        Node *t = absorbable_view(u, cap);
        if (!t)
          break;
        chain[nc++] = t;
      }
      if (!nc) {
        enc[at++] = 0;
        continue;
      }
      Value *buf = chain[nc - 1]->in[0];
      int64_t off = 0, st[IR_MAX_RANK], acc = 1;
      for (int i = buf->shape.rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= buf->shape.d[i];
      }
      for (int c = nc - 1; c >= 0; c--)
        view_through(chain[c], &off, st);
      int r = v->shape.rank;
      enc[at++] = r;
      enc[at++] = off;
      for (int i = 0; i < r; i++)
        enc[at++] = st[i];
      ir_node_set_input(f, k, buf);
      for (int c = 0; c < nc; c++) {
        rewrite_record_fused(f, chain[c]);
        ir_node_remove(chain[c]);
      }
    }
    Attr *a = ir_attr_add(f, "onnxc.views", AT_INTS);
    a->u.is = enc;
    a->n = total;
  }
}

/* A group of one elementwise node is worth a fused kernel when an operand's
 * Transpose or Slice can be read in place. */
static bool reads_view(const Group *gr, const Captured *cap) {
  for (int k = 0; k < gr->n_operands; k++)
    if (absorbable_view(gr->operand[k], cap))
      return true;
  return false;
}

/* -D ranges: MatMul(A, W) + Add(bias) with W a float32 constant [K, N] and
 * bias a float32 constant [N] becomes MatMul(A, W, bias) (attribute
 * onnxc.bias; onnxc.fused_inputs counts the input), whose run-time-extent
 * kernel adds the bias in the GEMM's store (codegen/emit_dyn.c). A product
 * whose extents are all static keeps its Add, whatever the graph's. */
static void dyn_matmul_bias(Graph *g, const Captured *cap) {
  for (Node *n = g->first, *next; n; n = next) {
    next = n->next;
    Value *y = n->out[0];
    if (n->op != OP_MatMul || n->n_in != 2 || y->dt != DT_F32 || y->n_uses != 1 || y->is_output ||
        rewrite_is_captured(cap, y) || n->in[1]->kind != VK_CONST || n->in[1]->shape.rank != 2 ||
        n->in[0]->shape.rank < 2)
      continue;
    /* Only a product with a run-time extent is emitted by the kernels that
     * add the bias; one of static extents in the same graph (after a
     * reduction over the run-time axis, say) is emitted as any static
     * MatMul, whose fallback loops, bf16 and CUDA kernels would drop it. */
    if (shape_is_static(&n->in[0]->shape) && shape_is_static(&y->shape))
      continue;
    Node *add = y->uses[0];
    if (add->op != OP_Add || add->n_in != 2 || add->out[0]->is_output || rewrite_is_captured(cap, add->out[0]))
      continue;
    Value *b = add->in[0] == y ? add->in[1] : add->in[0];
    if (b == y || b->kind != VK_CONST || b->dt != DT_F32 || b->shape.rank != 1 ||
        b->shape.d[0] != n->in[1]->shape.d[1] || !rewrite_same_shape(&y->shape, &add->out[0]->shape))
      continue;
    ir_node_add_input(n, b);
    ir_attr_set_int(n, "onnxc.fused_inputs", 1);
    ir_attr_set_int(n, "onnxc.bias", 1);
    Value *z = add->out[0];
    ir_value_replace(z, y);
    if (next == add)
      next = add->next;
    ir_node_remove(add);
  }
}

/* ---- siblings: fused kernels over one iteration space that read one value ----
 * Two elementwise kernels (fused chains, or single elementwise nodes) whose
 * outputs have one shape, that read a common non-constant value and of which
 * neither depends on the other become one FusedElementwise of several
 * outputs: one loop that loads each operand once and stores every output.
 * YOLO heads' box decoding (anchor - lt and anchor + rb from two slices of
 * one tensor, then their difference and their mean) is the case. */

#define SIB_MAX_OUTPUTS 8

/* An operand as a kernel reads it: the value, and the view it is read
 * through (onnxc.views: rank 0 when read as it is), with its logical shape. */
typedef struct SibOperand {
  Value *v;
  const Shape *logical;
  int r;
  int64_t off, st[IR_MAX_RANK];
} SibOperand;

static bool sib_candidate(const Node *n, const Captured *cap) {
  if (n->op != OP_FusedElementwise && !fusable(n))
    return false;
  if (n->n_out < 1 || !shape_is_static(&n->out[0]->shape))
    return false;
  for (int o = 0; o < n->n_out; o++)
    if (rewrite_is_captured(cap, n->out[o]))
      return false;
  return true;
}

static int sib_steps(const Node *n) {
  const Attr *a = n->op == OP_FusedElementwise ? ir_attr(n, "body") : NULL;
  return a ? a->u.g->n_nodes : 1;
}

/* Operand k of kernel n as read (view and logical shape). */
static SibOperand sib_operand(const Node *n, int k) {
  SibOperand o;
  memset(&o, 0, sizeof o);
  o.v = n->in[k];
  const Attr *a = n->op == OP_FusedElementwise ? ir_attr(n, "body") : NULL;
  o.logical = a ? &a->u.g->inputs[k]->shape : &n->in[k]->shape;
  int len = 0;
  const int64_t *enc = ir_attr_ints(n, "onnxc.views", &len);
  for (int at = 0, j = 0; enc && at < len; j++) {
    int r = (int)enc[at];
    if (j == k && r > 0) {
      o.r = r;
      o.off = enc[at + 1];
      for (int i = 0; i < r; i++)
        o.st[i] = enc[at + 2 + i];
      break;
    }
    at += 1 + (r ? 1 + r : 0);
  }
  return o;
}

static bool sib_same_operand(const SibOperand *a, const SibOperand *b) {
  if (a->v != b->v || a->r != b->r || a->off != b->off || !shape_equal(a->logical, b->logical))
    return false;
  for (int i = 0; i < a->r; i++)
    if (a->st[i] != b->st[i])
      return false;
  return true;
}

/* The merged kernel's operands (a's, then b's not already there) into ops;
 * their count, or -1 past FUSE_MAX_OPERANDS. */
static int sib_operands(const Node *a, const Node *b, SibOperand *ops) {
  int n = 0;
  for (int s = 0; s < 2; s++) {
    const Node *m = s ? b : a;
    for (int k = 0; k < m->n_in; k++) {
      SibOperand o = sib_operand(m, k);
      bool seen = false;
      for (int j = 0; j < n && !seen; j++)
        seen = sib_same_operand(&ops[j], &o);
      if (seen)
        continue;
      if (n == FUSE_MAX_OPERANDS)
        return -1;
      ops[n++] = o;
    }
  }
  return n;
}

/* Whether a and b read a common value that is no constant. */
static bool sib_share(const Node *a, const Node *b) {
  for (int i = 0; i < a->n_in; i++)
    for (int j = 0; j < b->n_in; j++)
      if (a->in[i] == b->in[j] && a->in[i]->kind != VK_CONST)
        return true;
  return false;
}

/* Whether `later` reads, through any chain of nodes, an output of `earlier`
 * (seen: scratch by node id, cleared here). */
static bool sib_depends(const Node *later, const Node *earlier, char *seen, int n_ids, Node **stack) {
  memset(seen, 0, (size_t)n_ids + 1);
  int sp = 0;
  stack[sp++] = (Node *)later;
  seen[later->id] = 1;
  while (sp) {
    const Node *x = stack[--sp];
    for (int j = 0; j < x->n_in; j++) {
      const Value *v = x->in[j];
      Node *p = v->kind == VK_NODE ? v->producer : NULL;
      if (!p || seen[p->id])
        continue;
      if (p == earlier)
        return true;
      seen[p->id] = 1;
      stack[sp++] = p;
    }
  }
  return false;
}

/* Merges kernels a and b (b after a, independent, same output shape) into one
 * FusedElementwise inserted where b is; returns it. */
static Node *sib_merge(Graph *g, Node *a, Node *b, const SibOperand *ops, int n_ops) {
  Graph *body = ir_subgraph_new(g, arena_printf(g->arena, "%s_siblings_body", a->name));
  Value *in[FUSE_MAX_OPERANDS];
  Value *bin[FUSE_MAX_OPERANDS];
  bool views = false;
  for (int k = 0; k < n_ops; k++) {
    in[k] = ops[k].v;
    bin[k] = ir_input_add(body, arena_printf(g->arena, "in%d", k), ops[k].v->dt, ops[k].logical);
    views |= ops[k].r > 0;
  }
  Value *outs[SIB_MAX_OUTPUTS], *bouts[SIB_MAX_OUTPUTS];
  int n_out = 0;
  for (int s = 0; s < 2; s++) {
    Node *m = s ? b : a;
    const Attr *ba = m->op == OP_FusedElementwise ? ir_attr(m, "body") : NULL;
    /* map: the sibling's body inputs (or its own operands) to merged inputs */
    Value *from[FUSE_MAX_OPERANDS + FUSE_MAX_STEPS], *to[FUSE_MAX_OPERANDS + FUSE_MAX_STEPS];
    int nm = 0;
    for (int k = 0; k < m->n_in; k++) {
      SibOperand o = sib_operand(m, k);
      int j = 0;
      while (!sib_same_operand(&ops[j], &o))
        j++;
      from[nm] = ba ? ba->u.g->inputs[k] : m->in[k];
      to[nm++] = bin[j];
    }
    const Node *first = ba ? ba->u.g->first : m;
    for (const Node *x = first; x; x = ba ? x->next : NULL) {
      Value *xin[FUSE_MAX_OPERANDS + 16];
      IR_ASSERT(x->n_in <= (int)(sizeof xin / sizeof xin[0]));
      for (int j = 0; j < x->n_in; j++) {
        xin[j] = NULL;
        for (int t = 0; t < nm && !xin[j]; t++)
          if (from[t] == x->in[j])
            xin[j] = to[t];
        IR_ASSERT(xin[j]);
      }
      Node *c = ir_node_new(body, x->op, x->op_type, x->name, x->n_in, xin, 1);
      c->domain = x->domain;
      c->attrs = x->attrs;
      c->n_attrs = x->n_attrs;
      c->out[0]->dt = x->out[0]->dt;
      c->out[0]->shape = x->out[0]->shape;
      from[nm] = x->out[0];
      to[nm++] = c->out[0];
    }
    for (int o = 0; o < m->n_out; o++) {
      const Value *bo = ba ? ba->u.g->outputs[o] : m->out[0];
      for (int t = 0; t < nm; t++)
        if (from[t] == bo)
          bouts[n_out] = to[t];
      outs[n_out++] = m->out[o];
    }
  }
  for (int o = 0; o < n_out; o++)
    ir_output_add(body, bouts[o]);
  Node *f = ir_node_insert(g, b, OP_FusedElementwise, "FusedElementwise", a->name, n_ops, in, n_out);
  f->domain = "onnxc";
  ir_attr_add(f, "body", AT_GRAPH)->u.g = body;
  for (int o = 0; o < n_out; o++) {
    f->out[o]->dt = outs[o]->dt;
    f->out[o]->shape = outs[o]->shape;
  }
  if (views) {
    int total = 0, at = 0;
    for (int k = 0; k < n_ops; k++)
      total += 1 + (ops[k].r ? 1 + ops[k].r : 0);
    int64_t *enc = arena_alloc(g->arena, (size_t)total * sizeof *enc);
    for (int k = 0; k < n_ops; k++) {
      enc[at++] = ops[k].r;
      if (!ops[k].r)
        continue;
      enc[at++] = ops[k].off;
      for (int i = 0; i < ops[k].r; i++)
        enc[at++] = ops[k].st[i];
    }
    Attr *va = ir_attr_add(f, "onnxc.views", AT_INTS);
    va->u.is = enc;
    va->n = total;
  }
  rewrite_record_fused(f, a);
  rewrite_record_fused(f, b);
  for (int o = 0; o < n_out; o++) {
    bool named = outs[o]->is_output; /* ir_value_replace gives a graph output's name */
    ir_value_replace(outs[o], f->out[o]);
    if (!named) { /* each output keeps the name of the value it stands for */
      const char *t = f->out[o]->name;
      f->out[o]->name = outs[o]->name;
      outs[o]->name = t;
    }
  }
  ir_node_remove(a);
  ir_node_remove(b);
  return f;
}

/* Merges sibling kernels, pairwise and again, until none is left; the graph
 * is sorted again after each merge (the readers of the earlier sibling that
 * ran before the later one move after the merged kernel). */
static void merge_siblings(Graph *g, const Captured *cap, Diag *d) {
  /* a body that captures outer values reads them outside the node's inputs,
   * which the dependence walk does not see */
  for (const Node *n = g->first; n; n = n->next)
    for (int i = 0; i < n->n_attrs; i++)
      if (n->attrs[i].kind == AT_GRAPHS || (n->attrs[i].kind == AT_GRAPH && n->attrs[i].u.g &&
                                             n->attrs[i].u.g->n_captures > 0))
        return;
  SibOperand ops[FUSE_MAX_OPERANDS];
  for (bool merged = true; merged;) {
    merged = false;
    int n_ids = g->n_node_ids;
    char *seen = malloc((size_t)n_ids + 1);
    Node **stack = malloc(((size_t)g->n_nodes + 1) * sizeof *stack);
    IR_ASSERT(seen && stack);
    for (Node *a = g->first; a && !merged; a = a->next) {
      if (!sib_candidate(a, cap))
        continue;
      for (Node *b = a->next; b && !merged; b = b->next) {
        if (!sib_candidate(b, cap) || !rewrite_same_shape(&a->out[0]->shape, &b->out[0]->shape) ||
            !sib_share(a, b) || a->n_out + b->n_out > SIB_MAX_OUTPUTS ||
            sib_steps(a) + sib_steps(b) > FUSE_MAX_STEPS)
          continue;
        int n_ops = sib_operands(a, b, ops);
        if (n_ops < 0 || sib_depends(b, a, seen, n_ids, stack))
          continue;
        sib_merge(g, a, b, ops, n_ops);
        merged = true;
      }
    }
    free(seen);
    free(stack);
    if (merged && !ir_toposort(g, d))
      IR_ASSERT(!"sibling merge made a cycle");
  }
}

bool pass_fuse_elementwise(Graph *g, bool epilogue, Diag *d) {
  (void)d;
  /* With extents known at run time (docs/dynamic-shapes.md) the chains,
   * Softmax prologues and MatMul epilogues fuse (codegen/emit_dyn.c loads
   * operands by broadcasting); Expands and strided views are still read
   * through copies. */
  bool dyn = g->n_syms > 0;
  Captured cap = rewrite_captured(g);
  if (!dyn)
    absorb_expands(g, &cap);
  else
    dyn_matmul_bias(g, &cap);
  int *pos = calloc((size_t)g->n_node_ids + 1, sizeof *pos);
  IR_ASSERT(pos);
  int k = 0;
  for (Node *n = g->first; n; n = n->next)
    pos[n->id] = k++;
  Group gr;
  for (Node *n = g->last, *prev; n; n = prev) {
    prev = n->prev;
    if (!fusable(n))
      continue;
    grow(&gr, n, &cap, pos);
    if (gr.n < 2 && !(epilogue && epilogue_producer(&gr, &cap)) && (dyn || !reads_view(&gr, &cap)))
      continue;
    /* the nodes before the fused one are still to be looked at */
    Node *p = epilogue ? epilogue_producer(&gr, &cap) : NULL;
    Node *f = fuse(g, &gr);
    prev = f->prev;
    if (p)
      to_epilogue(f, p);
  }
  fuse_prologues(g, &cap, pos);
  if (!dyn)
    absorb_views(g, &cap);
  free(pos);
  /* siblings: at static extents (emit_dyn.c's fused kernels store one output) */
  if (!dyn)
    merge_siblings(g, &cap, d);
  return true;
}

/* The fused node's outputs keep the types and shapes their roots had (set by
 * the pass): its body's outputs'. */
bool infer_FusedElementwise(Node *n, Diag *d) {
  const Attr *a = ir_attr(n, "body");
  if (!a || a->kind != AT_GRAPH || !a->u.g || a->u.g->n_outputs != n->n_out || a->u.g->n_inputs != n->n_in)
    return diag_error(d, n, "internal: FusedElementwise without its body");
  for (int o = 0; o < n->n_out; o++) {
    const Value *y = a->u.g->outputs[o];
    n->out[o]->dt = y->dt;
    n->out[o]->shape = y->shape;
  }
  return true;
}
