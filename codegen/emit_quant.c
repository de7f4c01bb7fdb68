/* emit_quant.c - C kernels of the quantization family (opsj): QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
 * ConvInteger and QLinearConv.
 *
 * Quantize/DequantizeLinear walk the data as [outer, D, inner] around the
 * quantization axis, so the parameter index is 0 (per tensor), a (per axis)
 * or (o * S + a / block) * inner + r (blocked). Minifloats and packed
 * integers go through the onnxc_rt.h helpers that Cast uses; integer results
 * round half to even (rint) and saturate. Packed outputs are zeroed first and
 * each element ORed into its byte.
 * The integer matmul and conv accumulate in uint32_t, which wraps like the
 * int32 arithmetic of the reference (no signed overflow UB). The QLinear ops
 * then requantize: rint(acc * (sa * sb / sy) + zy) in double, clamped, the
 * scale ratio computed in the scales' own type as numpy does.
 * Reference: onnx/reference/ops/op_*quant*.py, op_qlinear_*.py.
 */
#include "codegen.h"

#include <string.h>

#define LL(x) ((long long)(x))
#define ROW_BLOCK 256 /* QLinearMatMul accumulators kept on the stack per row */

/* `expr` (a float) rounded to t when t is a half type, as numpy computes in it. */
static void round_to(Buf *b, DType t, const char *expr) {
  if (t == DT_F16)
    buf_printf(b, "onnxc_f16_to_f32(onnxc_f32_to_f16(%s))", expr);
  else if (t == DT_BF16)
    buf_printf(b, "onnxc_bf16_to_f32(onnxc_f32_to_bf16(%s))", expr);
  else
    buf_puts(b, expr);
}

static int64_t numel_of(const Value *v) {
  int64_t k;
  return shape_numel(&v->shape, &k) ? k : 0;
}

static bool packed(DType t) { return dtype_bits(t) < 8; }

/* Clamping bounds of an integer type. */
static void int_range(DType t, int64_t *lo, int64_t *hi) {
  int bits = dtype_bits(t);
  if (dtype_is_signed(t)) {
    *lo = -((int64_t)1 << (bits - 1));
    *hi = ((int64_t)1 << (bits - 1)) - 1;
  } else {
    *lo = 0;
    *hi = ((int64_t)1 << bits) - 1;
  }
}

/* (void)s for the outputs of an empty kernel. */
static bool emit_nothing(EmitC *e, const Node *n) {
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i))
      ec_line(e, "(void)Y%d;", i);
  return true;
}

/* ---- QuantizeLinear, DequantizeLinear ------------------------------------------ */

/* The [outer, D, inner] walk of a Quantize/DequantizeLinear node; `pidx` is
 * the parameter index expression in terms of o, a, r. */
typedef struct QWalk {
  int64_t outer, dim, inner;
  char pidx[160];
} QWalk;

static void qwalk_read(const Node *n, QWalk *w) {
  const Shape *x = &n->in[0]->shape, *s = &n->in[1]->shape;
  int64_t total = numel_of(n->in[0]);
  w->outer = 1;
  w->dim = total;
  w->inner = 1;
  snprintf(w->pidx, sizeof w->pidx, "0");
  if (numel_of(n->in[1]) == 1 || x->rank == 0)
    return;
  int ax = 0;
  int64_t axis = n->g->opset >= 13 ? ir_attr_int(n, "axis", 1) : 1;
  int64_t block = n->g->opset >= 21 ? ir_attr_int(n, "block_size", 0) : 0;
  shape_axis(axis, x->rank, &ax);
  w->outer = 1;
  for (int i = 0; i < ax; i++)
    w->outer *= x->d[i];
  w->dim = x->d[ax];
  w->inner = 1;
  for (int i = ax + 1; i < x->rank; i++)
    w->inner *= x->d[i];
  if (block <= 0)
    snprintf(w->pidx, sizeof w->pidx, "a");
  else
    snprintf(w->pidx, sizeof w->pidx, "(o * %lld + a / %lld) * %lld + r", LL(s->d[ax]), LL(block),
             LL(w->inner));
}

/* Opens the walk's loops and defines i (element) and p (parameter index). */
static void qwalk_open(EmitC *e, const QWalk *w) {
  ec_line(e, "for (ptrdiff_t o = 0; o < %lld; o++) {", LL(w->outer));
  ec_line(e, "for (ptrdiff_t a = 0; a < %lld; a++) {", LL(w->dim));
  ec_line(e, "for (ptrdiff_t r = 0; r < %lld; r++) {", LL(w->inner));
  ec_line(e, "const ptrdiff_t i = (o * %lld + a) * %lld + r;", LL(w->dim), LL(w->inner));
  ec_line(e, "const ptrdiff_t p = %s;", w->pidx);
  ec_line(e, "(void)p;");
}

static void qwalk_close(EmitC *e) {
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
}

/* Zeroes a packed output before its elements are ORed in. */
static void zero_packed(EmitC *e, const Value *y) {
  int64_t bytes;
  dtype_bytes(y->dt, numel_of(y), &bytes);
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) Y0[j] = 0;", LL(bytes));
}

/* Stores field `bits` (an unsigned) of packed element i of Y0. */
static void store_packed(EmitC *e, DType t, const char *bits) {
  int b = dtype_bits(t), k = 8 / b;
  ec_line(e, "Y0[i / %d] = (uint8_t)(Y0[i / %d] | ((%s) << ((unsigned)(i %% %d) * %du)));", k, k,
          bits, k, b);
}

/* Type the division x / scale is computed in: the precision attribute, else
 * numpy's promotion of the two types (i32 data gives double). */
static DType quant_div_type(const Node *n) {
  int64_t prec = n->g->opset >= 23 ? ir_attr_int(n, "precision", 0) : 0;
  if (prec != 0)
    return (DType)prec;
  DType xt = n->in[0]->dt, st = n->in[1]->dt;
  if (xt == DT_I32)
    return DT_F64;
  if (xt == st && (xt == DT_F16 || xt == DT_BF16))
    return xt;
  return DT_F32;
}

/* Appends `(CT)arr[idx]` (an element of type t), rounded to dt when that is a half type. */
static void div_operand(Buf *out, const char *CT, DType dt, DType t, const char *arr, const char *idx) {
  Buf tmp;
  buf_init(&tmp);
  buf_printf(&tmp, "(%s)", CT);
  ec_load_elem(&tmp, t, arr, idx);
  round_to(out, dt, tmp.s);
  buf_free(&tmp);
}

bool emitc_QuantizeLinear(EmitC *e, const Node *n) {
  const Value *y = n->out[0];
  DType yt = y->dt, xt = n->in[0]->dt, st = n->in[1]->dt, dt = quant_div_type(n);
  if (numel_of(y) == 0)
    return emit_nothing(e, n);
  bool dbl = dt == DT_F64;
  const char *CT = dbl ? "double" : "float", *sfx = dbl ? "" : "f";
  int sat = n->g->opset >= 19 ? ir_attr_int(n, "saturate", 1) != 0 : 1;
  bool zp = ir_has_input(n, 2);
  QWalk w;
  qwalk_read(n, &w);
  if (packed(yt))
    zero_packed(e, y);
  qwalk_open(e, &w);
  Buf xv, sv, q;
  buf_init(&xv);
  buf_init(&sv);
  buf_init(&q);
  /* Operands converted to the division type (rounded to a half type when that
   * is the precision), then the quotient rounded to it. */
  div_operand(&xv, CT, dt, xt, "X0", "i");
  div_operand(&sv, CT, dt, st, "X1", "p");
  ec_line(e, "const %s xs = %s;", CT, xv.s);
  ec_line(e, "const %s ss = %s;", CT, sv.s);
  round_to(&q, dt, "xs / ss");
  ec_line(e, "const %s q = %s;", CT, q.s);
  if (dtype_is_int(yt)) {
    int64_t lo, hi;
    int_range(yt, &lo, &hi);
    Buf z;
    buf_init(&z);
    if (zp)
      ec_load_elem(&z, yt, "X2", "p");
    else
      buf_puts(&z, "0");
    /* NaN fails both compares and takes the low bound, as the reference's
     * int32 conversion does. */
    /* 8-bit results from a float quotient: in float (exact up to 2^24, and past it
     * the clamp decides the same; gcc vectorizes it), else in double */
    const char *VT = !dbl && dtype_bits(yt) <= 8 ? "float" : "double";
    ec_line(e, "const %s v = (%s)rint%s(q) + (%s)%s;", VT, VT, sfx, VT, z.s);
    const char *fs = VT[0] == 'f' ? "f" : "";
    ec_line(e, "const int32_t c = v >= %lld.0%s ? (v <= %lld.0%s ? (int32_t)v : %lld) : %lld;", LL(lo), fs,
            LL(hi), fs, LL(hi), LL(lo));
    if (packed(yt)) {
      char bits[64];
      snprintf(bits, sizeof bits, "(unsigned)c & %uu", (1u << dtype_bits(yt)) - 1u);
      store_packed(e, yt, bits);
    } else {
      ec_line(e, "Y0[i] = (%s)c;", dtype_ctype(yt));
    }
    buf_free(&z);
  } else if (yt == DT_F4E2M1) {
    Buf z;
    buf_init(&z);
    if (zp)
      ec_load_elem(&z, yt, "X2", "p");
    else
      buf_puts(&z, "0.0f");
    ec_line(e, "const unsigned c = onnxc_f32_to_f4e2m1((float)q + %s);", z.s);
    store_packed(e, yt, "c");
    buf_free(&z);
  } else {
    /* float8: the zero point does not take part (it must be zero). */
    const char *enc = yt == DT_F8E4M3FN ? "onnxc_f32_to_f8e4m3fn" : yt == DT_F8E4M3FNUZ ? "onnxc_f32_to_f8e4m3fnuz"
                    : yt == DT_F8E5M2 ? "onnxc_f32_to_f8e5m2" : "onnxc_f32_to_f8e5m2fnuz";
    ec_line(e, "Y0[i] = %s((float)q, %d);", enc, sat);
  }
  qwalk_close(e);
  buf_free(&xv);
  buf_free(&sv);
  buf_free(&q);
  return true;
}

bool emitc_DequantizeLinear(EmitC *e, const Node *n) {
  const Value *y = n->out[0];
  DType yt = y->dt, xt = n->in[0]->dt, st = n->in[1]->dt;
  if (numel_of(y) == 0)
    return emit_nothing(e, n);
  bool dbl = xt == DT_I32;
  const char *CT = dbl ? "double" : "float";
  /* float8 and float4 data ignore the zero point (the reference requires 0). */
  bool zp = ir_has_input(n, 2) && dtype_is_int(xt);
  QWalk w;
  qwalk_read(n, &w);
  qwalk_open(e, &w);
  Buf xv, zv, sv;
  buf_init(&xv);
  buf_init(&zv);
  buf_init(&sv);
  ec_load_elem(&xv, xt, "X0", "i");
  ec_load_elem(&sv, st, "X1", "p");
  if (zp)
    ec_load_elem(&zv, xt, "X2", "p");
  if (dbl)  /* the reference converts i32 data to f32 first */
    ec_line(e, "const double dx = (double)(float)%s%s%s;", xv.s, zp ? " - (double)" : "",
            zp ? zv.s : "");
  else
    ec_line(e, "const float dx = (float)%s%s%s;", xv.s, zp ? " - (float)" : "", zp ? zv.s : "");
  ec_line(e, "const %s v = dx * (%s)%s;", CT, CT, sv.s);
  if (yt == DT_F16)
    ec_line(e, "Y0[i] = onnxc_f32_to_f16((float)v);");
  else if (yt == DT_BF16)
    ec_line(e, "Y0[i] = onnxc_f32_to_bf16((float)v);");
  else
    ec_line(e, "Y0[i] = (float)v;");
  qwalk_close(e);
  buf_free(&xv);
  buf_free(&zv);
  buf_free(&sv);
  return true;
}

bool quant_emit_dql(EmitC *e, const Node *n, const char *count) {
  /* Range of the data widened to include 0; scale and zero point as the
   * reference computes them in float (onnxc_qdql, qint_prelude.c). */
  if (!e->cuda) {
    ec_line(e, "float scale;");
    ec_line(e, "uint8_t zp;");
    ec_line(e, "onnxc_qdql(X0, (long)(%s), Y0, &scale, &zp);", count);
    if (ec_has_output(n, 1))
      ec_line(e, "Y1[0] = scale;");
    if (ec_has_output(n, 2))
      ec_line(e, "Y2[0] = zp;");
    return true;
  }
  /* (CUDA's fallback kernel: the same steps written out, no prelude) */
  ec_line(e, "float mx = 0.0f, mn = 0.0f;");
  ec_line(e, "for (ptrdiff_t i = 0; i < (ptrdiff_t)(%s); i++) {", count);
  ec_line(e, "if (X0[i] > mx) mx = X0[i];");
  ec_line(e, "if (X0[i] < mn) mn = X0[i];");
  ec_line(e, "}");
  ec_line(e, "const float scale = (mx == mn ? 1.0f : mx - mn) / 255.0f;");
  ec_line(e, "const float z0 = 0.0f - mn / scale;");
  ec_line(e, "const float zp = rintf(z0 < 0.0f ? 0.0f : z0 > 255.0f ? 255.0f : z0);");
  ec_line(e, "for (ptrdiff_t i = 0; i < (ptrdiff_t)(%s); i++) {", count);
  ec_line(e, "const float v = rintf(X0[i] / scale) + zp;");
  ec_line(e, "Y0[i] = (uint8_t)(v >= 0.0f ? (v <= 255.0f ? v : 255.0f) : 0.0f);");
  ec_line(e, "}");
  if (ec_has_output(n, 1))
    ec_line(e, "Y1[0] = scale;");
  if (ec_has_output(n, 2))
    ec_line(e, "Y2[0] = (uint8_t)zp;");
  return true;
}

bool emitc_DynamicQuantizeLinear(EmitC *e, const Node *n) {
  char count[32];
  snprintf(count, sizeof count, "%lld", LL(numel_of(n->in[0])));
  return quant_emit_dql(e, n, count);
}

/* ---- MatMulInteger, QLinearMatMul ------------------------------------------------ */

/* Offset expression of one operand's matrix for the flat output batch index
 * bi; `mrank` is how many trailing dims of the operand are the matrix. */
static void batch_offset(const Shape *op, int mrank, const Shape *ys, int nb, int64_t mat,
                         Buf *out) {
  int rank = op->rank - mrank;
  int64_t stride = mat, ostride = 1;
  bool any = false;
  for (int d = nb - 1; d >= 0; d--) {
    int ad = d - (nb - rank);
    int64_t ext = ad >= 0 ? op->d[ad] : 1;
    if (ext == ys->d[d] && ext != 1) {
      buf_printf(out, "%s(bi / %lld %% %lld) * %lld", any ? " + " : "", LL(ostride),
                 LL(ys->d[d]), LL(stride));
      any = true;
    }
    stride *= ext;
    ostride *= ys->d[d];
  }
  if (!any)
    buf_puts(out, "0");
}

/* Matrix dims of a matmul node with operands in slots sa and sb. */
typedef struct QMat {
  int64_t m, k, n, batch;
  Buf ao, bo;          /* batch offsets of A and B */
} QMat;

static void qmat_read(const Node *n, int sa, int sb, QMat *q) {
  const Shape *as = &n->in[sa]->shape, *bs = &n->in[sb]->shape, *ys = &n->out[0]->shape;
  q->m = as->rank >= 2 ? as->d[as->rank - 2] : 1;
  q->k = as->d[as->rank - 1];
  q->n = bs->rank >= 2 ? bs->d[bs->rank - 1] : 1;
  int nb = ys->rank - (as->rank >= 2) - (bs->rank >= 2);
  q->batch = 1;
  for (int i = 0; i < nb; i++)
    q->batch *= ys->d[i];
  buf_init(&q->ao);
  buf_init(&q->bo);
  batch_offset(as, as->rank >= 2 ? 2 : 1, ys, nb, q->m * q->k, &q->ao);
  batch_offset(bs, bs->rank >= 2 ? 2 : 1, ys, nb, q->k * q->n, &q->bo);
}

/* Zero point expression of slot s indexed by `idx` when it has more than one
 * element, as int32_t; "0" when absent. */
static void zp_expr(const Node *n, int s, const char *idx, char *buf, size_t len) {
  if (!ir_has_input(n, s))
    snprintf(buf, len, "0");
  else
    snprintf(buf, len, "(int32_t)X%d[%s]", s, numel_of(n->in[s]) > 1 ? idx : "0");
}

/* Opens the loops over batch and rows with pa/pb pointing at the matrices
 * and `av` the zero-point-adjusted A element for kk. */
static void qmat_open(EmitC *e, const Node *n, const QMat *q, int sa, int sb) {
  ec_line(e, "for (ptrdiff_t bi = 0; bi < %lld; bi++) {", LL(q->batch));
  ec_line(e, "const %s *pa = X%d + %s;", dtype_ctype(n->in[sa]->dt), sa, q->ao.s);
  ec_line(e, "const %s *pb = X%d + %s;", dtype_ctype(n->in[sb]->dt), sb, q->bo.s);
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", LL(q->m));
}

bool emitc_MatMulInteger(EmitC *e, const Node *n) {
  if (numel_of(n->out[0]) == 0)
    return emit_nothing(e, n);
  QMat q;
  qmat_read(n, 0, 1, &q);
  char az[64], bz[64];
  zp_expr(n, 2, "i", az, sizeof az);
  zp_expr(n, 3, "j", bz, sizeof bz);
  qmat_open(e, n, &q, 0, 1);
  ec_line(e, "uint32_t *yr = (uint32_t *)Y0 + (bi * %lld + i) * %lld;", LL(q.m), LL(q.n));
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) yr[j] = 0;", LL(q.n));
  ec_line(e, "for (ptrdiff_t kk = 0; kk < %lld; kk++) {", LL(q.k));
  ec_line(e, "const int32_t av = (int32_t)pa[i * %lld + kk] - %s;", LL(q.k), az);
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++)", LL(q.n));
  ec_line(e, "  yr[j] += (uint32_t)(av * ((int32_t)pb[kk * %lld + j] - %s));", LL(q.n), bz);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  buf_free(&q.ao);
  buf_free(&q.bo);
  return true;
}

/* Type the scale ratio sa * sb / sy is computed in: a half type when all
 * three scales have it, else float. */
static DType ratio_type(const Node *n, int s1, int s2, int s3) {
  DType t = n->in[s1]->dt;
  return n->in[s2]->dt == t && n->in[s3]->dt == t ? t : DT_F32;
}

/* Defines `const double mult` = sa[ia] * sb[ib] / sy[0] in the scales' type. */
static void emit_ratio(EmitC *e, const Node *n, int s1, const char *i1, int s2, const char *i2,
                       int s3) {
  DType rt = ratio_type(n, s1, s2, s3);
  Buf a, b, c, ab, r;
  buf_init(&a);
  buf_init(&b);
  buf_init(&c);
  buf_init(&ab);
  buf_init(&r);
  char arr[8];
  snprintf(arr, sizeof arr, "X%d", s1);
  ec_load_elem(&a, n->in[s1]->dt, arr, numel_of(n->in[s1]) > 1 ? i1 : "0");
  snprintf(arr, sizeof arr, "X%d", s2);
  ec_load_elem(&b, n->in[s2]->dt, arr, numel_of(n->in[s2]) > 1 ? i2 : "0");
  snprintf(arr, sizeof arr, "X%d", s3);
  ec_load_elem(&c, n->in[s3]->dt, arr, "0");
  Buf prod;
  buf_init(&prod);
  buf_printf(&prod, "(float)%s * (float)%s", a.s, b.s);
  round_to(&ab, rt, prod.s);
  buf_free(&prod);
  buf_init(&prod);
  buf_printf(&prod, "(%s) / (float)%s", ab.s, c.s);
  round_to(&r, rt, prod.s);
  ec_line(e, "const double mult = (double)(%s);", r.s);
  buf_free(&prod);
  buf_free(&a);
  buf_free(&b);
  buf_free(&c);
  buf_free(&ab);
  buf_free(&r);
}

/* Stores rint(acc * mult + zy) clamped to the output type as element `idx`. */
static void emit_requant(EmitC *e, const Node *n, int zslot, const char *acc, const char *idx) {
  DType yt = n->out[0]->dt;
  int64_t lo, hi;
  int_range(yt, &lo, &hi);
  char zy[64];
  zp_expr(n, zslot, "0", zy, sizeof zy);
  ec_line(e, "const double v = rint((double)(int32_t)%s * mult + (double)%s);", acc, zy);
  ec_line(e, "Y0[%s] = (%s)(v >= %lld.0 ? (v <= %lld.0 ? v : %lld.0) : %lld.0);", idx,
          dtype_ctype(yt), LL(lo), LL(hi), LL(hi), LL(lo));
}

bool emitc_QLinearMatMul(EmitC *e, const Node *n) {
  if (numel_of(n->out[0]) == 0)
    return emit_nothing(e, n);
  QMat q;
  qmat_read(n, 0, 3, &q);
  char az[64], bz[64];
  zp_expr(n, 2, "i", az, sizeof az);
  zp_expr(n, 5, "j", bz, sizeof bz);
  bool per_elem = numel_of(n->in[1]) > 1 || numel_of(n->in[4]) > 1;
  int64_t jb = q.n < ROW_BLOCK ? q.n : ROW_BLOCK;
  if (!per_elem)
    emit_ratio(e, n, 1, "0", 4, "0", 6);
  qmat_open(e, n, &q, 0, 3);
  ec_line(e, "for (ptrdiff_t j0 = 0; j0 < %lld; j0 += %lld) {", LL(q.n), LL(jb));
  ec_line(e, "const ptrdiff_t j1 = j0 + %lld < %lld ? j0 + %lld : %lld;", LL(jb), LL(q.n), LL(jb),
          LL(q.n));
  ec_line(e, "uint32_t acc[%lld];", LL(jb));
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) acc[j] = 0;", LL(jb));
  ec_line(e, "for (ptrdiff_t kk = 0; kk < %lld; kk++) {", LL(q.k));
  ec_line(e, "const int32_t av = (int32_t)pa[i * %lld + kk] - %s;", LL(q.k), az);
  ec_line(e, "for (ptrdiff_t j = j0; j < j1; j++)");
  ec_line(e, "  acc[j - j0] += (uint32_t)(av * ((int32_t)pb[kk * %lld + j] - %s));", LL(q.n), bz);
  ec_line(e, "}");
  ec_line(e, "for (ptrdiff_t j = j0; j < j1; j++) {");
  if (per_elem)
    emit_ratio(e, n, 1, "i", 4, "j", 6);
  char idx[96];
  snprintf(idx, sizeof idx, "(bi * %lld + i) * %lld + j", LL(q.m), LL(q.n));
  emit_requant(e, n, 7, "acc[j - j0]", idx);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  buf_free(&q.ao);
  buf_free(&q.bo);
  return true;
}

/* ---- ConvInteger, QLinearConv ----------------------------------------------------- */

/* Direct integer convolution: one uint32_t accumulator per output element,
 * taps outside the input skipped (they are zero after the zero point is
 * subtracted). Slots: data xs, weight ws, their zero points xz, wz, int32
 * bias bs (-1: none). `epilogue` stores acc as output element yi. */
typedef void (*ConvEpilogue)(EmitC *e, const Node *n);

static void emit_int_conv(EmitC *e, const Node *n, int xs, int ws, int xz, int wz, int bs,
                          ConvEpilogue epilogue, ConvEpilogue per_channel) {
  const Shape *x = &n->in[xs]->shape, *w = &n->in[ws]->shape, *y = &n->out[0]->shape;
  int r = x->rank - 2;
  int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], dil[IR_MAX_RANK], pb[IR_MAX_RANK];
  ec_conv_window(n, x, y, &w->d[2], k, s, dil, pb);
  int64_t group = ir_attr_int(n, "group", 1), m = w->d[0], mg = m / group, cg = w->d[1];
  int64_t in_plane = 1, out_plane = 1, ktaps = 1;
  for (int i = 0; i < r; i++) {
    in_plane *= x->d[2 + i];
    out_plane *= y->d[2 + i];
    ktaps *= k[i];
  }
  char xzv[64], wzv[64];
  zp_expr(n, xz, "0", xzv, sizeof xzv);
  zp_expr(n, wz, "m", wzv, sizeof wzv);
  ec_line(e, "for (ptrdiff_t nb = 0; nb < %lld; nb++) {", LL(x->d[0]));
  ec_line(e, "for (ptrdiff_t m = 0; m < %lld; m++) {", LL(m));
  ec_line(e, "const ptrdiff_t gi = m / %lld;", LL(mg));
  ec_line(e, "const int32_t wzm = %s;", wzv);
  if (per_channel)
    per_channel(e, n);
  Buf oi, xi, ki;
  buf_init(&oi);
  buf_init(&xi);
  buf_init(&ki);
  for (int i = 0; i < r; i++) {
    ec_line(e, "for (ptrdiff_t o%d = 0; o%d < %lld; o%d++) {", i, i, LL(y->d[2 + i]), i);
    if (i == 0) {
      buf_printf(&oi, "o0");
    } else {
      Buf t;
      buf_init(&t);
      buf_printf(&t, "(%s) * %lld + o%d", oi.s, LL(y->d[2 + i]), i);
      buf_free(&oi);
      oi = t;
    }
  }
  ec_line(e, "const ptrdiff_t yi = (nb * %lld + m) * %lld + %s;", LL(m), LL(out_plane), oi.s);
  if (bs >= 0 && ir_has_input(n, bs))
    ec_line(e, "uint32_t acc = (uint32_t)X%d[m];", bs);
  else
    ec_line(e, "uint32_t acc = 0;");
  ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) {", LL(cg));
  ec_line(e, "const %s *xc = X%d + (nb * %lld + gi * %lld + c) * %lld;", dtype_ctype(n->in[xs]->dt),
          xs, LL(x->d[1]), LL(cg), LL(in_plane));
  ec_line(e, "const %s *wc = X%d + (m * %lld + c) * %lld;", dtype_ctype(n->in[ws]->dt), ws, LL(cg),
          LL(ktaps));
  for (int i = 0; i < r; i++) {
    ec_line(e, "for (ptrdiff_t k%d = 0; k%d < %lld; k%d++) {", i, i, LL(k[i]), i);
    ec_line(e, "const ptrdiff_t i%d = o%d * %lld + k%d * %lld - %lld;", i, i, LL(s[i]), i,
            LL(dil[i]), LL(pb[i]));
    ec_line(e, "if (i%d < 0 || i%d >= %lld) continue;", i, i, LL(x->d[2 + i]));
    if (i == 0) {
      buf_printf(&xi, "i0");
      buf_printf(&ki, "k0");
    } else {
      Buf t, u;
      buf_init(&t);
      buf_init(&u);
      buf_printf(&t, "(%s) * %lld + i%d", xi.s, LL(x->d[2 + i]), i);
      buf_printf(&u, "(%s) * %lld + k%d", ki.s, LL(k[i]), i);
      buf_free(&xi);
      buf_free(&ki);
      xi = t;
      ki = u;
    }
  }
  ec_line(e, "acc += (uint32_t)(((int32_t)xc[%s] - %s) * ((int32_t)wc[%s] - wzm));", xi.s, xzv,
          ki.s);
  for (int i = 0; i < r; i++)
    ec_line(e, "}");
  ec_line(e, "}");  /* c */
  epilogue(e, n);
  for (int i = 0; i < r; i++)
    ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  buf_free(&oi);
  buf_free(&xi);
  buf_free(&ki);
}

static void conv_integer_store(EmitC *e, const Node *n) {
  (void)n;
  ec_line(e, "Y0[yi] = (int32_t)acc;");
}

/* A 2-D ConvInteger (int32 output, what quantize_dynamic writes for a
 * Conv) accumulates in Y itself, one weight tap at a time over runs of an
 * output row: for output channel m, input channel c and tap (ky, kx), every
 * output row whose input row is inside the image adds w * (x - x_zp) over
 * the columns whose input column is inside it. The inner loop has no test
 * and vectorizes; a zero weight (after its zero point) is skipped. The sums
 * are the direct form's, in another order (exact: int32 wraps alike). */
static void emit_conv_integer_rows(EmitC *e, const Node *n) {
  const Shape *x = &n->in[0]->shape, *w = &n->in[1]->shape, *y = &n->out[0]->shape;
  int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], dil[IR_MAX_RANK], pb[IR_MAX_RANK];
  ec_conv_window(n, x, y, &w->d[2], k, s, dil, pb);
  int64_t group = ir_attr_int(n, "group", 1), M = w->d[0], mg = M / group, cg = w->d[1];
  int64_t H = x->d[2], W = x->d[3], OH = y->d[2], OW = y->d[3];
  char xzv[64], wzv[64];
  zp_expr(n, 2, "0", xzv, sizeof xzv);
  zp_expr(n, 3, "m", wzv, sizeof wzv);
  ec_line(e, "const int32_t xz = %s;", xzv);
  ec_line(e, "for (ptrdiff_t nb = 0; nb < %lld; nb++) {", LL(x->d[0]));
  ec_line(e, "for (ptrdiff_t m = 0; m < %lld; m++) {", LL(M));
  ec_line(e, "int32_t *ym = Y0 + (nb * %lld + m) * %lld;", LL(M), LL(OH * OW));
  ec_line(e, "const int32_t wzm = %s;", wzv);
  ec_line(e, "for (ptrdiff_t q = 0; q < %lld; q++) ym[q] = 0;", LL(OH * OW));
  ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) {", LL(cg));
  ec_line(e, "const %s *xc = X0 + (nb * %lld + m / %lld * %lld + c) * %lld;", dtype_ctype(n->in[0]->dt),
          LL(x->d[1]), LL(mg), LL(cg), LL(H * W));
  ec_line(e, "const %s *wc = X1 + (m * %lld + c) * %lld;", dtype_ctype(n->in[1]->dt), LL(cg), LL(k[0] * k[1]));
  ec_line(e, "for (ptrdiff_t ky = 0; ky < %lld; ky++)", LL(k[0]));
  ec_line(e, "for (ptrdiff_t kx = 0; kx < %lld; kx++) {", LL(k[1]));
  ec_line(e, "const int32_t wv = (int32_t)wc[ky * %lld + kx] - wzm;", LL(k[1]));
  ec_line(e, "if (wv == 0)");
  ec_line(e, "  continue;");
  /* columns ox with 0 <= ox*sw + kx*dw - pl < W: ox in [x0, x1) */
  ec_line(e, "const ptrdiff_t cx = kx * %lld - %lld;", LL(dil[1]), LL(pb[1]));
  ec_line(e, "ptrdiff_t x0 = cx >= 0 ? 0 : (-cx + %lld) / %lld;", LL(s[1] - 1), LL(s[1]));
  ec_line(e, "ptrdiff_t x1 = %lld - 1 - cx < 0 ? 0 : (%lld - 1 - cx) / %lld + 1;", LL(W), LL(W), LL(s[1]));
  ec_line(e, "if (x1 > %lld)", LL(OW));
  ec_line(e, "  x1 = %lld;", LL(OW));
  ec_line(e, "for (ptrdiff_t oy = 0; oy < %lld; oy++) {", LL(OH));
  ec_line(e, "const ptrdiff_t iy = oy * %lld + ky * %lld - %lld;", LL(s[0]), LL(dil[0]), LL(pb[0]));
  ec_line(e, "if (iy < 0 || iy >= %lld)", LL(H));
  ec_line(e, "  continue;");
  ec_line(e, "const %s *xr = xc + iy * %lld;", dtype_ctype(n->in[0]->dt), LL(W));
  ec_line(e, "int32_t *yr = ym + oy * %lld;", LL(OW));
  ec_line(e, "for (ptrdiff_t ox = x0; ox < x1; ox++)");
  ec_line(e, "  yr[ox] = (int32_t)((uint32_t)yr[ox] + (uint32_t)(wv * ((int32_t)xr[ox * %lld + cx] - xz)));",
          LL(s[1]));
  ec_line(e, "}");  /* oy */
  ec_line(e, "}");  /* kx */
  ec_line(e, "}");  /* c */
  ec_line(e, "}");  /* m */
  ec_line(e, "}");  /* nb */
}

bool emitc_ConvInteger(EmitC *e, const Node *n) {
  if (numel_of(n->out[0]) == 0)
    return emit_nothing(e, n);
  if (n->in[0]->shape.rank == 4 && n->out[0]->dt == DT_I32) {
    emit_conv_integer_rows(e, n);
    return true;
  }
  emit_int_conv(e, n, 0, 1, 2, 3, -1, conv_integer_store, NULL);
  return true;
}

static void qconv_ratio(EmitC *e, const Node *n) { emit_ratio(e, n, 1, "0", 4, "m", 6); }

static void qconv_store(EmitC *e, const Node *n) { emit_requant(e, n, 7, "acc", "yi"); }

bool emitc_QLinearConv(EmitC *e, const Node *n) {
  if (numel_of(n->out[0]) == 0)
    return emit_nothing(e, n);
  emit_int_conv(e, n, 0, 3, 2, 5, 8, qconv_store, qconv_ratio);
  return true;
}
