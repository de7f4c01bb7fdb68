/* fuse_layout.c - batched MatMuls read and write through the Transposes
 * around them instead of copying, and sibling Gemms on one input become one
 * product whose columns those MatMuls read in place.
 *
 * requires: inferred static shapes; the target reads strided MatMul operands
 *   (Target.strided_matmul: the C and CUDA targets).
 * provides: no Transpose whose output only a batched MatMul reads (the MatMul
 *   reads the Transpose's input with the attribute onnxc.perm_a / perm_b =
 *   the perm), and no Transpose that is the only reader of a batched MatMul's
 *   output (the MatMul writes in the transposed layout, onnxc.perm_y = the
 *   perm, its output taking the Transpose's shape). The product's logical
 *   operand i is dimension perm[i] of the buffer (codegen/emit_matmul.c
 *   mm_view); a read keeps a unit stride along its rows or columns, a write
 *   along its columns. Attention's Q, K^T and V heads and the merge of the
 *   heads after it are then read and written in place. Sibling Gemms: see
 *   merge_from below (onnxc.view_a / view_b on the MatMuls).
 * invalidates: schedule positions.
 * Operands and output keep their batch dims (no broadcasting) when permuted.
 */
#include "passes.h"

#include <string.h>

/* Row-major element strides of a static shape. */
static void strides_of(const Shape *s, int64_t *st) {
  int64_t acc = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= s->d[i];
  }
}

/* The perm of Transpose t (default: reversed), false when malformed. */
static bool perm_of(const Node *t, int rank, int64_t *perm) {
  int k = 0;
  const int64_t *p = ir_attr_ints(t, "perm", &k);
  bool seen[IR_MAX_RANK] = {false};
  for (int i = 0; i < rank; i++) {
    perm[i] = p ? (i < k ? p[i] : -1) : rank - 1 - i;
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]])
      return false;
    seen[perm[i]] = true;
  }
  return !p || k == rank;
}

static bool same_batch(const Shape *a, const Shape *y) {
  if (a->rank != y->rank)
    return false;
  for (int i = 0; i + 2 < y->rank; i++)
    if (a->d[i] != y->d[i])
      return false;
  return true;
}

/* Operand slot s of m read through the Transpose that makes it, when that
 * Transpose has no other reader and the read keeps a unit stride along the
 * logical rows or columns. */
static void absorb_input(Node *m, int s, const Captured *cap) {
  Value *v = m->in[s];
  Node *t = v->kind == VK_NODE ? v->producer : NULL;
  int r = v->shape.rank;
  int64_t perm[IR_MAX_RANK], ps[IR_MAX_RANK];
  if (!t || t->op != OP_Transpose || v->n_uses != 1 || v->is_output || rewrite_is_captured(cap, v) ||
      !perm_of(t, r, perm) || !shape_is_static(&t->in[0]->shape) || t->in[0]->shape.rank != r)
    return;
  strides_of(&t->in[0]->shape, ps);
  if (ps[perm[r - 1]] != 1 && ps[perm[r - 2]] != 1)
    return;
  ir_node_set_input(m, s, t->in[0]);
  ir_attr_set_ints(m, s == 0 ? "onnxc.perm_a" : "onnxc.perm_b", perm, r);
  rewrite_record_fused(m, t);
  ir_node_remove(t);
}

/* m's output written in the layout of the Transpose that alone reads it. */
static void absorb_output(Node *m, const Captured *cap) {
  Value *y = m->out[0];
  int r = y->shape.rank;
  int64_t perm[IR_MAX_RANK];
  if (y->n_uses != 1 || y->is_output || rewrite_is_captured(cap, y))
    return;
  Node *t = y->uses[0];
  if (t->op != OP_Transpose || t->in[0] != y || !perm_of(t, r, perm) || perm[r - 1] != r - 1 ||
      t->out[0]->dt != y->dt || rewrite_is_captured(cap, t->out[0]))
    return;
  y->shape = t->out[0]->shape;
  ir_attr_set_ints(m, "onnxc.perm_y", perm, r);
  rewrite_record_fused(m, t);
  rewrite_forward(t, y);
}

/* ---- sibling products merged (horizontal fusion) ----------------------------------
 * Gemms that read the same A, each with a constant 2-D B and a constant [N]
 * bias (or none), alpha = beta = 1 and no transA, fused epilogue or
 * activation, become one Gemm over the concatenated weights, Y = A * [B_0 |
 * B_1 | ...] + [c_0 | c_1 | ...], when every reader of each sibling's result
 * (through Reshapes, which keep the element order) is a batched MatMul's
 * operand: that MatMul then reads its columns in place (onnxc.view_a /
 * view_b: offset, the view's dims and their strides in the merged result),
 * keeping unit stride along its rows or columns. Attention's Q, K and V
 * projections become one product. */

#define MAX_SIBS 8
#define MAX_READERS 16

#define MAX_PATH 6

typedef struct Reader {
  Node *m;     /* the MatMul */
  int slot;    /* 0: A, 1: B */
  Value *w;    /* the value it reads (the sibling's result through Reshapes) */
  Node *path[MAX_PATH]; /* those Reshapes */
  int n_path;
} Reader;

static bool gemm_plain(const Node *n) {
  if (n->op != OP_Gemm || n->n_in < 2 || n->n_out != 1 || ir_attr_int(n, "transA", 0) ||
      ir_attr_float(n, "alpha", 1.0f) != 1.0f || ir_attr_float(n, "beta", 1.0f) != 1.0f ||
      ir_attr(n, "epilogue") || ir_attr(n, "activation") || ir_attr(n, "onnxc.fused_inputs"))
    return false;
  const Value *a = n->in[0], *b = n->in[1], *y = n->out[0];
  if (a->dt != DT_F32 || b->dt != DT_F32 || y->dt != DT_F32 || b->kind != VK_CONST || b->shape.rank != 2 ||
      a->shape.rank != 2 || y->shape.rank != 2 || !shape_is_static(&y->shape) || y->is_output)
    return false;
  if (ir_has_input(n, 2)) {
    const Value *c = n->in[2];
    if (c->kind != VK_CONST || c->dt != DT_F32 || c->shape.rank != 1 || c->shape.d[0] != y->shape.d[1])
      return false;
  }
  return true;
}

/* A MatMul of an A of rank >= 2 by a constant 2-D B (a projection without
 * bias: A's leading dims are the rows). */
static bool matmul_plain(const Node *n) {
  if (n->op != OP_MatMul || n->n_in != 2 || n->n_out != 1 || ir_attr(n, "epilogue") || ir_attr(n, "activation") ||
      ir_attr(n, "onnxc.perm_a") || ir_attr(n, "onnxc.perm_b") || ir_attr(n, "onnxc.perm_y") ||
      ir_attr(n, "onnxc.view_a") || ir_attr(n, "onnxc.view_b"))
    return false;
  const Value *a = n->in[0], *b = n->in[1], *y = n->out[0];
  return a->dt == DT_F32 && b->dt == DT_F32 && y->dt == DT_F32 && b->kind == VK_CONST && b->shape.rank == 2 &&
         a->shape.rank >= 2 && shape_is_static(&a->shape) && y->shape.rank == a->shape.rank &&
         shape_is_static(&y->shape) && !y->is_output && a->shape.d[a->shape.rank - 1] == b->shape.d[0];
}

static bool product_plain(const Node *n) { return gemm_plain(n) || matmul_plain(n); }

/* The rows (A's dims but the last) and columns of a plain product. */
static int64_t rows_of(const Node *n) {
  const Shape *a = &n->in[0]->shape;
  int64_t r = 1;
  for (int i = 0; i + 1 < a->rank; i++)
    r *= a->d[i];
  return r;
}

static int64_t cols_of(const Node *n) { return n->out[0]->shape.d[n->out[0]->shape.rank - 1]; }

/* A batched MatMul that fuse-layout may read through a view: both operands
 * of the result's rank (a MatMul by a 2-D weight broadcasts it, and the
 * strided products take batched operands only). */
static bool mm_batched(const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  return n->op == OP_MatMul && n->n_in == 2 && !ir_attr(n, "onnxc.fused_inputs") && ys->rank >= 3 && shape_is_static(ys) && shape_is_static(&n->in[0]->shape) &&
         shape_is_static(&n->in[1]->shape) && n->in[0] != n->in[1] && n->in[0]->shape.rank == ys->rank &&
         n->in[1]->shape.rank == ys->rank;
}

/* Slot s of MatMul m, reading v (through m's perm of that slot, if any),
 * has m's batch dims: no broadcasting. */
static bool logical_same_batch(const Node *m, int s, const Value *v) {
  Shape ys = m->out[0]->shape; /* logical: the buffer's dim i is logical perm_y[i] */
  int r = v->shape.rank, k = 0, ky = 0;
  if (r != ys.rank)
    return false;
  const int64_t *py = ir_attr_ints(m, "onnxc.perm_y", &ky);
  if (py && ky == r)
    for (int i = 0; i < r; i++)
      ys.d[py[i]] = m->out[0]->shape.d[i];
  const int64_t *perm = ir_attr_ints(m, s ? "onnxc.perm_b" : "onnxc.perm_a", &k);
  for (int i = 0; i + 2 < r; i++)
    if ((perm && k == r ? v->shape.d[perm[i]] : v->shape.d[i]) != ys.d[i])
      return false;
  return true;
}

/* Every reader of v, through the Reshapes path[0..np), as MatMul operands;
 * false when any reader is something else. */
static bool collect_readers(Value *v, const Captured *cap, Reader *r, int *nr, Node **path, int np) {
  if (v->is_output || rewrite_is_captured(cap, v))
    return false;
  for (int k = 0; k < v->n_uses; k++) {
    Node *u = v->uses[k];
    if (u->op == OP_Reshape && u->in[0] == v && u->n_out == 1 && np < MAX_PATH) {
      path[np] = u;
      if (!collect_readers(u->out[0], cap, r, nr, path, np + 1))
        return false;
    } else if (mm_batched(u) && (u->in[0] == v || u->in[1] == v) && *nr < MAX_READERS) {
      int slot = u->in[0] == v ? 0 : 1;
      if (ir_attr(u, slot ? "onnxc.view_b" : "onnxc.view_a") || !logical_same_batch(u, slot, v))
        return false;
      Reader *q = &r[(*nr)++];
      *q = (Reader){u, slot, v, {NULL}, np};
      memcpy(q->path, path, (size_t)np * sizeof *path);
    } else {
      return false;
    }
  }
  return true;
}

/* The view of w (a reshape of columns [off, off + n) of an [rows, total]
 * result) as [offset, dims, strides]; false when w's dims do not split into
 * a part spanning the rows and a part spanning the columns. */
static bool slice_view(const Value *w, int64_t rows, int64_t n, int64_t total, int64_t off, int64_t *view) {
  const Shape *s = &w->shape;
  int r = s->rank, p = 0;
  int64_t pre = 1;
  while (p < r && pre < rows)
    pre *= s->d[p++];
  if (pre != rows)
    return false;
  int64_t acc = 1;
  view[0] = off;
  for (int i = r - 1; i >= p; i--) {
    view[1 + i] = s->d[i];
    view[1 + r + i] = acc;
    acc *= s->d[i];
  }
  if (acc != n)
    return false;
  acc = total;
  for (int i = p - 1; i >= 0; i--) {
    view[1 + i] = s->d[i];
    view[1 + r + i] = acc;
    acc *= s->d[i];
  }
  return true;
}

/* Unit stride along the logical rows or columns of slot s of m read through
 * view (and m's perm of that slot, if any). */
static bool view_readable(const Node *m, int s, const int64_t *view, int r) {
  int k = 0;
  const int64_t *perm = ir_attr_ints(m, s ? "onnxc.perm_b" : "onnxc.perm_a", &k);
  int64_t last = perm && k == r ? perm[r - 1] : r - 1, prev = perm && k == r ? perm[r - 2] : r - 2;
  return view[1 + r + last] == 1 || view[1 + r + prev] == 1;
}

static void concat_weights(Graph *g, Node **sib, int ns, bool transb, int64_t total, Value **b, Value **c) {
  int64_t K = transb ? sib[0]->in[1]->shape.d[1] : sib[0]->in[1]->shape.d[0];
  int64_t bd2[2] = {transb ? total : K, transb ? K : total};
  Shape bs = shape_make(2, bd2), cs = shape_make(1, &total);
  bool bias = sib[0]->op == OP_Gemm && ir_has_input(sib[0], 2);
  Tensor *bt = ir_tensor_new(g, DT_F32, &bs, NULL), *ct = bias ? ir_tensor_new(g, DT_F32, &cs, NULL) : NULL;
  float *bd = bt->data, *cd = ct ? ct->data : NULL;
  int64_t off = 0;
  for (int i = 0; i < ns; i++) {
    const float *w = sib[i]->in[1]->konst->data;
    int64_t n = cols_of(sib[i]);
    if (transb)
      memcpy(bd + off * K, w, (size_t)(n * K) * sizeof *bd);
    else
      for (int64_t k = 0; k < K; k++)
        memcpy(bd + k * total + off, w + k * n, (size_t)n * sizeof *bd);
    if (cd)
      memcpy(cd + off, sib[i]->in[2]->konst->data, (size_t)n * sizeof *cd);
    off += n;
  }
  *b = ir_const_new(g, arena_printf(g->arena, "%s_merged_B", sib[0]->name), bt);
  *c = ct ? ir_const_new(g, arena_printf(g->arena, "%s_merged_C", sib[0]->name), ct) : NULL;
}

/* A of Gemm n, or the value it reshapes: siblings may read A through
 * Reshapes of their own (fuse-epilogue makes one per MatMul). */
static const Value *a_root(const Node *n) {
  const Value *a = n->in[0];
  return a->kind == VK_NODE && a->producer && a->producer->op == OP_Reshape ? a->producer->in[0] : a;
}

static void add_sibling(Node **sib, int *ns, Node *u, const Node *g0) {
  const Value *a = g0->in[0];
  bool transb = g0->op == OP_Gemm && ir_attr_int(g0, "transB", 0) != 0;
  for (int i = 0; i < *ns; i++)
    if (sib[i] == u)
      return;
  if (*ns < MAX_SIBS && u->op == g0->op && product_plain(u) && a_root(u) == a_root(g0) &&
      rewrite_same_shape(&u->in[0]->shape, &a->shape) &&
      (u->op == OP_Gemm && ir_attr_int(u, "transB", 0) != 0) == transb &&
      ir_has_input(u, 2) == ir_has_input(g0, 2) &&
      u->in[1]->shape.d[transb ? 1 : 0] == u->in[0]->shape.d[u->in[0]->shape.rank - 1])
    sib[(*ns)++] = u;
}

/* Records the ONNX nodes sibling `from` computed in `into`. A Gemm that
 * fuse-epilogue made in a MatMul's place (its record names a node of its
 * own name) is not itself an ONNX node: only its record is copied. */
static void record_sibling(Node *into, const Node *from) {
  bool made = rewrite_stands_in(from);
  const Attr *before = ir_attr(into, "onnxc.fused");
  int old = before ? before->n : 0;
  rewrite_record_fused(into, from);
  if (made) { /* drop the entry naming `from` itself, the first one added */
    Attr *a = (Attr *)ir_attr(into, "onnxc.fused");
    for (int i = old; i + 1 < a->n; i++)
      a->u.ss[i] = a->u.ss[i + 1];
    a->n--;
  }
}

/* Merges g0 and the plain products (all Gemms, or all bias-free MatMuls)
 * reading the same A. */
static bool merge_from(Graph *g, Node *g0, const Captured *cap) {
  const Value *root = a_root(g0);
  bool transb = g0->op == OP_Gemm && ir_attr_int(g0, "transB", 0) != 0;
  int64_t rows = rows_of(g0);
  Node *sib[MAX_SIBS];
  int ns = 0;
  for (int k = 0; k < root->n_uses; k++) {
    Node *u = root->uses[k];
    if ((u->op == OP_Gemm || u->op == OP_MatMul) && u->in[0] == root)
      add_sibling(sib, &ns, u, g0);
    else if (u->op == OP_Reshape && u->in[0] == root)
      for (int j = 0; j < u->out[0]->n_uses; j++)
        if (u->out[0]->uses[j]->in[0] == u->out[0])
          add_sibling(sib, &ns, u->out[0]->uses[j], g0);
  }
  /* the siblings whose every reader can take a view; their columns in order */
  Reader rd[MAX_SIBS][MAX_READERS];
  int nr[MAX_SIBS] = {0}, keep = 0;
  for (int i = 0; i < ns; i++) {
    Node *path[MAX_PATH];
    nr[keep] = 0;
    if (collect_readers(sib[i]->out[0], cap, rd[keep], &nr[keep], path, 0) && nr[keep] > 0)
      sib[keep++] = sib[i];
  }
  ns = keep;
  if (ns < 2)
    return false;
  int64_t total = 0, off[MAX_SIBS];
  for (int i = 0; i < ns; i++) {
    off[i] = total;
    total += cols_of(sib[i]);
  }
  int64_t views[MAX_SIBS][MAX_READERS][1 + 2 * IR_MAX_RANK];
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < nr[i]; j++) {
      const Reader *q = &rd[i][j];
      if (!slice_view(q->w, rows, cols_of(sib[i]), total, off[i], views[i][j]) ||
          !view_readable(q->m, q->slot, views[i][j], q->w->shape.rank))
        return false;
    }
  /* the merged product goes where the first sibling was */
  Node *first = sib[0];
  for (Node *n = g->first; n; n = n->next) {
    bool is = false;
    for (int i = 0; i < ns; i++)
      is |= sib[i] == n;
    if (is) {
      first = n;
      break;
    }
  }
  Value *b, *c;
  concat_weights(g, sib, ns, transb, total, &b, &c);
  Value *a2 = first->in[0]; /* A as [rows, K]: MatMul siblings' leading dims folded */
  if (a2->shape.rank != 2) {
    int64_t mk[2] = {rows, a2->shape.d[a2->shape.rank - 1]};
    Value *shp = rewrite_const_i64(g, arena_printf(g->arena, "%s_siblings_mk", first->name), mk, 2);
    Value *rin[2] = {a2, shp};
    Node *rs = ir_node_insert(g, first, OP_Reshape, "Reshape", arena_printf(g->arena, "%s_siblings_2d", first->name),
                              2, rin, 1);
    rs->out[0]->dt = DT_F32;
    rs->out[0]->shape = shape_make(2, mk);
    a2 = rs->out[0];
  }
  Value *in[3] = {a2, b, c};
  /* named after the first sibling (the name of an ONNX node it computes, as
   * fuse-epilogue names its Gemms); its output gets a name of its own */
  const char *yname = arena_printf(g->arena, "%s_siblings", first->out[0]->name);
  Node *mg = ir_node_insert_named(g, first, OP_Gemm, "Gemm", first->name, c ? 3 : 2, in, 1, &yname);
  if (transb)
    ir_attr_set_int(mg, "transB", 1);
  mg->out[0]->dt = DT_F32;
  int64_t yd[2] = {rows, total};
  mg->out[0]->shape = shape_make(2, yd);
  for (int i = 0; i < ns; i++) {
    for (int j = 0; j < nr[i]; j++) {
      const Reader *q = &rd[i][j];
      ir_node_set_input(q->m, q->slot, mg->out[0]);
      ir_attr_set_ints(q->m, q->slot ? "onnxc.view_b" : "onnxc.view_a", views[i][j], 1 + 2 * q->w->shape.rank);
      for (int p = 0; p < q->n_path; p++) { /* the Reshapes read through, each recorded once */
        bool seen = false;
        for (int jj = 0; jj < j && !seen; jj++)
          for (int pp = 0; pp < rd[i][jj].n_path; pp++)
            seen |= rd[i][jj].path[pp] == q->path[p];
        if (!seen)
          rewrite_record_fused(q->m, q->path[p]);
      }
    }
    record_sibling(mg, sib[i]);
  }
  return true;
}

bool pass_fuse_layout(Graph *g, Diag *d) {
  Captured cap = rewrite_captured(g);
  for (Node *n = g->first; n; n = n->next) {
    if (n->op != OP_MatMul || n->n_in != 2 || ir_attr(n, "onnxc.perm_a") || ir_attr(n, "onnxc.perm_b") ||
        ir_attr(n, "onnxc.perm_y") || ir_attr(n, "onnxc.fused_inputs"))
      continue;
    const Shape *ys = &n->out[0]->shape;
    if (ys->rank < 3 || !shape_is_static(ys) || !shape_is_static(&n->in[0]->shape) ||
        !shape_is_static(&n->in[1]->shape) || !same_batch(&n->in[0]->shape, ys) ||
        !same_batch(&n->in[1]->shape, ys))
      continue;
    absorb_input(n, 0, &cap);
    absorb_input(n, 1, &cap);
    absorb_output(n, &cap);
  }
  /* Siblings: the readers counted above must be all that is left of each
   * sibling's result, so the dead shape computations go first. */
  if (!pass_dce(g, d))
    return false;
  cap = rewrite_captured(g);
  bool merged = true;
  while (merged) {
    merged = false;
    for (Node *n = g->first; n && !merged; n = n->next)
      merged = product_plain(n) && merge_from(g, n, &cap);
    if (merged && !pass_dce(g, d)) /* the merged siblings and their Reshapes */
      return false;
  }
  return true;
}
