/* fuse_layout.c - batched MatMuls read and write through the Transposes
 * around them instead of copying.
 *
 * requires: inferred static shapes; the target reads strided MatMul operands
 *   (Target.strided_matmul: the C target).
 * provides: no Transpose whose output only a batched MatMul reads (the MatMul
 *   reads the Transpose's input with the attribute onnxc.perm_a / perm_b =
 *   the perm), and no Transpose that is the only reader of a batched MatMul's
 *   output (the MatMul writes in the transposed layout, onnxc.perm_y = the
 *   perm, its output taking the Transpose's shape). The product's logical
 *   operand i is dimension perm[i] of the buffer (codegen/emit_matmul.c
 *   mm_view); a read keeps a unit stride along its rows or columns, a write
 *   along its columns. Attention's Q, K^T and V heads and the merge of the
 *   heads after it are then read and written in place.
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

bool pass_fuse_layout(Graph *g, Diag *d) {
  (void)d;
  Captured cap = rewrite_captured(g);
  for (Node *n = g->first; n; n = n->next) {
    if (n->op != OP_MatMul || n->n_in != 2 || ir_attr(n, "onnxc.perm_a") || ir_attr(n, "onnxc.perm_b") ||
        ir_attr(n, "onnxc.perm_y") || ir_attr(n, "epilogue") || ir_attr(n, "activation"))
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
  return true;
}
