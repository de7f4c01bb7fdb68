/* infer_quant.c - shape inference of the quantization family (opsj):
 * QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
 * QLinearMatMul, ConvInteger and QLinearConv.
 *
 * Scales and zero points of Quantize/DequantizeLinear come in three
 * granularities, told apart by the scale's shape against the data's shape x:
 *   per tensor  one element (a scalar or any shape of numel 1)
 *   per axis    1-D of length x[axis]                     (no block_size)
 *   blocked     x's shape with x[axis] replaced by ceil(x[axis] / block_size)
 * The zero point, when given, has the scale's shape and fixes the quantized
 * type (else output_dtype, else u8). The integer ops compute in i32; the
 * QLinear ops requantize to the type of y_zero_point. Conv window geometry is
 * the one of infer_conv.c (infer_conv_window_shape).
 * Reference: the ONNX operator docs and onnx/reference/ops/op_*quant*.py.
 */
#include "passes.h"

static bool is_qint(DType t) {
  return t == DT_U8 || t == DT_I8 || t == DT_U16 || t == DT_I16 || t == DT_U4 || t == DT_I4 ||
         t == DT_U2 || t == DT_I2;
}

static bool is_qfloat(DType t) {
  return t == DT_F8E4M3FN || t == DT_F8E4M3FNUZ || t == DT_F8E5M2 || t == DT_F8E5M2FNUZ ||
         t == DT_F4E2M1;
}

static bool is_scale_type(DType t) {
  return t == DT_F32 || t == DT_F16 || t == DT_BF16 || t == DT_F8E8M0;
}

static bool is_8bit(DType t) { return t == DT_U8 || t == DT_I8; }

/* Elements of a shape when static, else -1. */
static int64_t numel_or(const Shape *s) {
  int64_t k;
  return shape_numel(s, &k) ? k : -1;
}

/* Checks input `slot` (a scale or zero point) against data shape x for the
 * granularity its shape implies; see the file comment. */
static bool qparam_check(Node *n, Diag *d, int slot, const Shape *x, int64_t axis,
                         int64_t block) {
  const Shape *s = &n->in[slot]->shape;
  if (s->rank < 0 || numel_or(s) == 1)
    return true;
  if (x->rank < 0)
    return true;
  int ax;
  if (!shape_axis(axis, x->rank, &ax))
    return infer_fail(d, n, "axis %lld is out of range for input 0 of rank %d", (long long)axis,
                      x->rank);
  if (block <= 0) {
    if (s->rank != 1)
      return infer_fail(d, n,
                        "input %d has rank %d, expected a scalar or 1-D (per-axis) without "
                        "block_size",
                        slot, s->rank);
    if (s->d[0] >= 0 && x->d[ax] >= 0 && s->d[0] != x->d[ax])
      return infer_fail(d, n, "input %d has %lld elements, expected %lld (input 0 dim %d)", slot,
                        (long long)s->d[0], (long long)x->d[ax], ax);
    return true;
  }
  if (s->rank != x->rank)
    return infer_fail(d, n, "input %d has rank %d, expected %d for blocked quantization", slot,
                      s->rank, x->rank);
  for (int i = 0; i < x->rank; i++) {
    if (s->d[i] < 0 || x->d[i] < 0)
      continue;
    int64_t want = i == ax ? (x->d[i] + block - 1) / block : x->d[i];
    if (s->d[i] != want)
      return infer_fail(d, n, "input %d dim %d is %lld, expected %lld", slot, i,
                        (long long)s->d[i], (long long)want);
  }
  return true;
}

/* axis and block_size of a Quantize/DequantizeLinear node by opset. */
static bool q_axis_block(Node *n, Diag *d, int64_t *axis, int64_t *block) {
  *axis = n->g->opset >= 13 ? ir_attr_int(n, "axis", 1) : 1;
  *block = n->g->opset >= 21 ? ir_attr_int(n, "block_size", 0) : 0;
  if (*block < 0)
    return infer_fail(d, n, "block_size is %lld, expected >= 0", (long long)*block);
  if (n->g->opset < 13 && n->in[1]->shape.rank > 0 && numel_or(&n->in[1]->shape) != 1)
    return infer_fail(d, n, "input 1 (scale) must be a scalar before opset 13");
  return true;
}

/* The scale and the optional zero point against x; the zero point's shape
 * must equal the scale's. */
static bool q_params(Node *n, Diag *d, int64_t axis, int64_t block) {
  const Shape *x = &n->in[0]->shape;
  if (!qparam_check(n, d, 1, x, axis, block))
    return false;
  if (!ir_has_input(n, 2))
    return true;
  const Shape *s = &n->in[1]->shape, *z = &n->in[2]->shape;
  if (s->rank >= 0 && z->rank >= 0 && (numel_or(s) != 1 || numel_or(z) != 1) &&
      !shape_equal(s, z)) {
    char a[96], b[96];
    return infer_fail(d, n, "input 2 (zero point) has shape %s, expected %s like the scale",
                      shape_str(z, a, sizeof a), shape_str(s, b, sizeof b));
  }
  return qparam_check(n, d, 2, x, axis, block);
}

bool infer_QuantizeLinear(Node *n, Diag *d) {
  DType xt = n->in[0]->dt, st = n->in[1]->dt;
  if (xt != DT_F32 && xt != DT_F16 && xt != DT_BF16 && xt != DT_I32)
    return infer_fail(d, n, "input 0 has element type %s, expected f32, f16, bf16 or i32",
                      dtype_name(xt));
  if (!is_scale_type(st) && st != DT_I32)
    return infer_fail(d, n, "input 1 (scale) has element type %s, expected f32, f16, bf16, i32 or "
                      "f8e8m0", dtype_name(st));
  int64_t odt = n->g->opset >= 21 ? ir_attr_int(n, "output_dtype", 0) : 0;
  DType yt = DT_U8;
  if (ir_has_input(n, 2)) {
    yt = n->in[2]->dt;
    if (odt != 0 && odt != (int64_t)yt)
      return infer_fail(d, n, "output_dtype %lld differs from the zero point's type %s",
                        (long long)odt, dtype_name(yt));
  } else if (odt != 0) {
    if (!dtype_valid((int)odt))
      return infer_fail(d, n, "output_dtype %lld is not a known element type", (long long)odt);
    yt = (DType)odt;
  }
  if (!is_qint(yt) && !is_qfloat(yt))
    return infer_fail(d, n, "quantized type %s is not supported (8-, 16-, 4- or 2-bit integer, "
                      "float8 or float4)", dtype_name(yt));
  int64_t prec = n->g->opset >= 23 ? ir_attr_int(n, "precision", 0) : 0;
  if (prec != 0 && prec != DT_F32 && prec != DT_F16 && prec != DT_BF16 && prec != DT_F64)
    return infer_fail(d, n, "precision %lld is not f32, f16, bf16 or f64", (long long)prec);
  int64_t axis, block;
  if (!q_axis_block(n, d, &axis, &block) || !q_params(n, d, axis, block))
    return false;
  infer_set(n, 0, yt, &n->in[0]->shape);
  return true;
}

bool infer_DequantizeLinear(Node *n, Diag *d) {
  DType xt = n->in[0]->dt, st = n->in[1]->dt;
  if (!is_qint(xt) && !is_qfloat(xt) && xt != DT_I32)
    return infer_fail(d, n, "input 0 has element type %s, expected a quantized type",
                      dtype_name(xt));
  if (!is_scale_type(st))
    return infer_fail(d, n, "input 1 (scale) has element type %s, expected f32, f16, bf16 or "
                      "f8e8m0", dtype_name(st));
  if (ir_has_input(n, 2) && n->in[2]->dt != xt)
    return infer_fail(d, n, "input 2 (zero point) has element type %s, expected %s like input 0",
                      dtype_name(n->in[2]->dt), dtype_name(xt));
  int64_t odt = n->g->opset >= 23 ? ir_attr_int(n, "output_dtype", 0) : 0;
  DType yt = odt != 0 ? (DType)odt : st;
  if (odt != 0 && !dtype_valid((int)odt))
    return infer_fail(d, n, "output_dtype %lld is not a known element type", (long long)odt);
  if (yt != DT_F32 && yt != DT_F16 && yt != DT_BF16)
    return infer_fail(d, n, "result type %s is not f32, f16 or bf16%s", dtype_name(yt),
                      odt ? "" : " (set output_dtype)");
  int64_t axis, block;
  if (!q_axis_block(n, d, &axis, &block) || !q_params(n, d, axis, block))
    return false;
  infer_set(n, 0, yt, &n->in[0]->shape);
  return true;
}

bool infer_DynamicQuantizeLinear(Node *n, Diag *d) {
  if (n->in[0]->dt != DT_F32)
    return infer_fail(d, n, "input 0 has element type %s, expected f32",
                      dtype_name(n->in[0]->dt));
  Shape sc = shape_scalar();
  infer_set(n, 0, DT_U8, &n->in[0]->shape);
  if (n->n_out > 1)
    infer_set(n, 1, DT_F32, &sc);
  if (n->n_out > 2)
    infer_set(n, 2, DT_U8, &sc);
  return true;
}

/* ---- integer matmul ------------------------------------------------------------ */

/* numpy matmul shape of a and b (either may be 1-D) into out. */
static bool matmul_shape(Node *n, Diag *d, const Shape *a, const Shape *b, Shape *out) {
  if (a->rank == 0 || b->rank == 0)
    return infer_fail(d, n, "a matmul operand is a scalar, expected rank >= 1");
  if (a->rank < 0 || b->rank < 0) {
    *out = shape_unknown();
    return true;
  }
  Shape ab = *a, bb = *b;
  ab.rank = a->rank >= 2 ? a->rank - 2 : 0;
  bb.rank = b->rank >= 2 ? b->rank - 2 : 0;
  int64_t ka = a->d[a->rank - 1], kb = b->rank >= 2 ? b->d[b->rank - 2] : b->d[0];
  if (ka >= 0 && kb >= 0 && ka != kb)
    return infer_fail(d, n, "inner dimensions differ: A has K=%lld, B has K=%lld", (long long)ka,
                      (long long)kb);
  if (!shape_broadcast(&ab, &bb, out))
    return infer_fail(d, n, "the batch dims of A and B do not broadcast");
  if (out->rank + 2 > IR_MAX_RANK)
    return infer_fail(d, n, "result rank exceeds %d", IR_MAX_RANK);
  if (a->rank >= 2) {
    out->d[out->rank] = a->d[a->rank - 2];
    out->x[out->rank] = a->x[a->rank - 2], out->sym[out->rank++] = a->sym[a->rank - 2];
  }
  if (b->rank >= 2) {
    out->d[out->rank] = b->d[b->rank - 1];
    out->x[out->rank] = b->x[b->rank - 1], out->sym[out->rank++] = b->sym[b->rank - 1];
  }
  return true;
}

/* Input `slot` has an 8-bit integer type (`like` >= 0: the type of input like). */
static bool want_8bit(Node *n, Diag *d, int slot, int like) {
  if (!ir_has_input(n, slot))
    return true;
  DType t = n->in[slot]->dt;
  if (!is_8bit(t))
    return infer_fail(d, n, "input %d has element type %s, expected u8 or i8", slot,
                      dtype_name(t));
  if (like >= 0 && t != n->in[like]->dt)
    return infer_fail(d, n, "input %d has element type %s, expected %s like input %d", slot,
                      dtype_name(t), dtype_name(n->in[like]->dt), like);
  return true;
}

/* Input `slot` is a float scale. */
static bool want_scale(Node *n, Diag *d, int slot) {
  DType t = n->in[slot]->dt;
  if (t != DT_F32 && t != DT_F16 && t != DT_BF16)
    return infer_fail(d, n, "input %d (scale) has element type %s, expected f32, f16 or bf16", slot,
                      dtype_name(t));
  return true;
}

/* Per-tensor (numel 1) or 1-D quantization parameter of `len` elements. */
static bool want_qvec(Node *n, Diag *d, int slot, int64_t len) {
  if (!ir_has_input(n, slot))
    return true;
  const Shape *s = &n->in[slot]->shape;
  if (s->rank < 0 || numel_or(s) == 1)
    return true;
  if (s->rank != 1)
    return infer_fail(d, n, "input %d has rank %d, expected a scalar or 1-D", slot, s->rank);
  if (len >= 0 && s->d[0] >= 0 && s->d[0] != len)
    return infer_fail(d, n, "input %d has %lld elements, expected 1 or %lld", slot,
                      (long long)s->d[0], (long long)len);
  return true;
}

/* Rows of A and columns of B of a matmul (DIM_UNKNOWN when not known). */
static int64_t rows_of(const Shape *a) { return a->rank >= 2 ? a->d[a->rank - 2] : a->rank == 1 ? 1 : -1; }
static int64_t cols_of(const Shape *b) { return b->rank >= 2 ? b->d[b->rank - 1] : b->rank == 1 ? 1 : -1; }

bool infer_MatMulInteger(Node *n, Diag *d) {
  if (!want_8bit(n, d, 0, -1) || !want_8bit(n, d, 1, -1) || !want_8bit(n, d, 2, 0) ||
      !want_8bit(n, d, 3, 1))
    return false;
  const Shape *a = &n->in[0]->shape, *b = &n->in[1]->shape;
  if (!want_qvec(n, d, 2, rows_of(a)) || !want_qvec(n, d, 3, cols_of(b)))
    return false;
  Shape out;
  if (!matmul_shape(n, d, a, b, &out))
    return false;
  infer_set(n, 0, DT_I32, out.rank >= 0 ? &out : NULL);
  return true;
}

bool infer_QLinearMatMul(Node *n, Diag *d) {
  if (!want_8bit(n, d, 0, -1) || !want_8bit(n, d, 3, -1) || !want_8bit(n, d, 2, 0) ||
      !want_8bit(n, d, 5, 3) || !want_8bit(n, d, 7, -1))
    return false;
  if (!want_scale(n, d, 1) || !want_scale(n, d, 4) || !want_scale(n, d, 6))
    return false;
  const Shape *a = &n->in[0]->shape, *b = &n->in[3]->shape;
  if (!want_qvec(n, d, 1, rows_of(a)) || !want_qvec(n, d, 2, rows_of(a)) ||
      !want_qvec(n, d, 4, cols_of(b)) || !want_qvec(n, d, 5, cols_of(b)) ||
      !want_qvec(n, d, 6, 1) || !want_qvec(n, d, 7, 1))
    return false;
  Shape out;
  if (!matmul_shape(n, d, a, b, &out))
    return false;
  DType yt = ir_has_input(n, 7) ? n->in[7]->dt : n->in[0]->dt;
  infer_set(n, 0, yt, out.rank >= 0 ? &out : NULL);
  return true;
}

/* ---- integer convolution ----------------------------------------------------------- */

/* Shapes of data x (slot xs) and weight w (slot ws) of a Conv-like node and
 * its output shape; *done when the rank is unknown and the output was set. */
static bool conv_shape(Node *n, Diag *d, int xs, int ws, DType yt, Shape *out, bool *done) {
  const Shape *x = &n->in[xs]->shape, *w = &n->in[ws]->shape;
  *done = false;
  if (x->rank < 0 || w->rank < 0) {
    infer_set(n, 0, yt, NULL);
    *done = true;
    return true;
  }
  if (x->rank < 3)
    return infer_fail(d, n, "input %d has rank %d, expected at least 3 (N, C, spatial...)", xs,
                      x->rank);
  if (w->rank != x->rank)
    return infer_fail(d, n, "input %d (weight) has rank %d, expected %d", ws, w->rank, x->rank);
  int64_t group = ir_attr_int(n, "group", 1);
  if (group < 1)
    return infer_fail(d, n, "group is %lld, expected >= 1", (long long)group);
  int64_t m = w->d[0], cg = w->d[1], c = x->d[1];
  if (m >= 0 && m % group != 0)
    return infer_fail(d, n, "weight has %lld output channels, not a multiple of group %lld",
                      (long long)m, (long long)group);
  if (c >= 0 && cg >= 0 && c != cg * group)
    return infer_fail(d, n, "input %d has %lld channels but the weight expects %lld", xs,
                      (long long)c, (long long)(cg * group));
  return infer_conv_window_shape(n, d, x, w, out);
}

bool infer_ConvInteger(Node *n, Diag *d) {
  if (!want_8bit(n, d, 0, -1) || !want_8bit(n, d, 1, -1) || !want_8bit(n, d, 2, 0) ||
      !want_8bit(n, d, 3, 1))
    return false;
  if (!want_qvec(n, d, 2, 1) || !want_qvec(n, d, 3, n->in[1]->shape.rank > 0 ? n->in[1]->shape.d[0] : -1))
    return false;
  Shape out;
  bool done;
  if (!conv_shape(n, d, 0, 1, DT_I32, &out, &done))
    return false;
  if (!done)
    infer_set(n, 0, DT_I32, &out);
  return true;
}

bool infer_QLinearConv(Node *n, Diag *d) {
  if (!want_8bit(n, d, 0, -1) || !want_8bit(n, d, 3, -1) || !want_8bit(n, d, 2, 0) ||
      !want_8bit(n, d, 5, 3) || !want_8bit(n, d, 7, -1))
    return false;
  if (!want_scale(n, d, 1) || !want_scale(n, d, 4) || !want_scale(n, d, 6))
    return false;
  int64_t m = n->in[3]->shape.rank > 0 ? n->in[3]->shape.d[0] : -1;
  if (!want_qvec(n, d, 1, 1) || !want_qvec(n, d, 2, 1) || !want_qvec(n, d, 4, m) ||
      !want_qvec(n, d, 5, m) || !want_qvec(n, d, 6, 1) || !want_qvec(n, d, 7, 1))
    return false;
  if (ir_has_input(n, 8)) {
    const Value *b = n->in[8];
    if (b->dt != DT_I32)
      return infer_fail(d, n, "input 8 (bias) has element type %s, expected i32",
                        dtype_name(b->dt));
    if (b->shape.rank >= 0 && b->shape.rank != 1)
      return infer_fail(d, n, "input 8 (bias) has rank %d, expected 1", b->shape.rank);
    if (b->shape.rank == 1 && b->shape.d[0] >= 0 && m >= 0 && b->shape.d[0] != m)
      return infer_fail(d, n, "input 8 (bias) has %lld elements, expected %lld",
                        (long long)b->shape.d[0], (long long)m);
  }
  DType yt = ir_has_input(n, 7) ? n->in[7]->dt : n->in[0]->dt;
  Shape out;
  bool done;
  if (!conv_shape(n, d, 0, 3, yt, &out, &done))
    return false;
  if (!done)
    infer_set(n, 0, yt, &out);
  return true;
}
