/* infer_matmul.c - shape inference of Gemm and MatMul.
 *
 * Gemm: Y[M,N] = alpha * A'[M,K] x B'[K,N] + beta * C, where A' and B' are A
 * and B optionally transposed and C (optional from opset 11) broadcasts
 * unidirectionally to [M,N].
 * MatMul: numpy matmul. Operands of rank >= 2 are stacks of matrices whose
 * batch dims broadcast; a 1-D first operand is a row vector [1,K] and a 1-D
 * second operand a column [K,1], the added dim being removed from the result.
 */
#include "passes.h"

static bool is_matmul_dtype(DType t) {
  return t == DT_F32 || t == DT_F64 || t == DT_F16 || t == DT_BF16 || t == DT_I32 ||
         t == DT_I64 || t == DT_U32 || t == DT_U64;
}

/* Common dtype checks: both operands of one supported type. */
static bool check_operands(Node *n, Diag *d) {
  DType t = n->in[0]->dt;
  if (!is_matmul_dtype(t))
    return infer_fail(d, n,
                      "input 0 has element type %s, expected f16, bf16, f32, f64, i32, i64, "
                      "u32 or u64",
                      dtype_name(t));
  if (n->in[1]->dt != t)
    return infer_fail(d, n, "input 1 has element type %s, expected %s like input 0",
                      dtype_name(n->in[1]->dt), dtype_name(t));
  return true;
}

/* Two dims that must agree (either may be unknown); false when both are
 * known and differ. */
static bool dims_agree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

bool infer_Gemm(Node *n, Diag *d) {
  if (!check_operands(n, d))
    return false;
  const Shape *a = &n->in[0]->shape, *b = &n->in[1]->shape;
  if (a->rank >= 0 && a->rank != 2)
    return infer_fail(d, n, "input 0 (A) has rank %d, expected 2", a->rank);
  if (b->rank >= 0 && b->rank != 2)
    return infer_fail(d, n, "input 1 (B) has rank %d, expected 2", b->rank);
  int64_t ta = ir_attr_int(n, "transA", 0), tb = ir_attr_int(n, "transB", 0);
  if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
    return infer_fail(d, n, "transA and transB must be 0 or 1");
  Shape out = shape_unknown();
  out.rank = 2;
  out.d[0] = out.d[1] = DIM_UNKNOWN;
  int64_t ka = DIM_UNKNOWN, kb = DIM_UNKNOWN;
  if (a->rank == 2) {
    out.d[0] = a->d[ta];
    out.sym[0] = a->sym[ta], out.x[0] = a->x[ta];
    ka = a->d[1 - ta];
  }
  if (b->rank == 2) {
    out.d[1] = b->d[1 - tb];
    out.sym[1] = b->sym[1 - tb], out.x[1] = b->x[1 - tb];
    kb = b->d[tb];
  }
  if (!dims_agree(ka, kb))
    return infer_fail(d, n, "inner dimensions differ: A' is [M,%lld] and B' is [%lld,N]",
                      (long long)ka, (long long)kb);
  if (ir_has_input(n, 2)) {
    const Value *c = n->in[2];
    if (c->dt != n->in[0]->dt)
      return infer_fail(d, n, "input 2 (C) has element type %s, expected %s",
                        dtype_name(c->dt), dtype_name(n->in[0]->dt));
    if (c->shape.rank > 2)
      return infer_fail(d, n, "input 2 (C) has rank %d, expected at most 2", c->shape.rank);
    for (int i = 0; i < c->shape.rank; i++) {
      int64_t cd = c->shape.d[i], od = out.d[2 - c->shape.rank + i];
      if (cd >= 0 && cd != 1 && !dims_agree(cd, od))
        return infer_fail(d, n,
                          "input 2 (C) dim %d is %lld, cannot broadcast to the result's %lld",
                          i, (long long)cd, (long long)od);
    }
  }
  infer_set(n, 0, n->in[0]->dt, &out);
  return true;
}

bool infer_MatMul(Node *n, Diag *d) {
  if (!check_operands(n, d))
    return false;
  const Shape *a = &n->in[0]->shape, *b = &n->in[1]->shape;
  if (a->rank == 0 || b->rank == 0)
    return infer_fail(d, n, "input %d is a scalar, expected rank >= 1", a->rank == 0 ? 0 : 1);
  if (a->rank < 0 || b->rank < 0) {
    infer_set(n, 0, n->in[0]->dt, NULL);
    return true;
  }
  /* Split into batch dims and the matrix dims [M,K] x [K,N]. */
  Shape ab = *a, bb = *b;
  ab.rank = a->rank >= 2 ? a->rank - 2 : 0;
  bb.rank = b->rank >= 2 ? b->rank - 2 : 0;
  int64_t ka = a->d[a->rank - 1];
  int64_t kb = b->rank >= 2 ? b->d[b->rank - 2] : b->d[0];
  if (!dims_agree(ka, kb))
    return infer_fail(d, n, "inner dimensions differ: input 0 has K=%lld, input 1 has K=%lld",
                      (long long)ka, (long long)kb);
  Shape out;
  if (!shape_broadcast(&ab, &bb, &out)) {
    char s1[128], s2[128];
    return infer_fail(d, n, "batch dims %s and %s do not broadcast", shape_str(&ab, s1, sizeof s1),
                      shape_str(&bb, s2, sizeof s2));
  }
  if (out.rank + 2 > IR_MAX_RANK)
    return infer_fail(d, n, "result rank exceeds %d", IR_MAX_RANK);
  if (a->rank >= 2) {
    out.d[out.rank] = a->d[a->rank - 2];
    out.x[out.rank] = a->x[a->rank - 2], out.sym[out.rank++] = a->sym[a->rank - 2];
  }
  if (b->rank >= 2) {
    out.d[out.rank] = b->d[b->rank - 1];
    out.x[out.rank] = b->x[b->rank - 1], out.sym[out.rank++] = b->sym[b->rank - 1];
  }
  infer_set(n, 0, n->in[0]->dt, &out);
  return true;
}
