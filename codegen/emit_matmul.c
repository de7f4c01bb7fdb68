/* emit_matmul.c - C kernels for Gemm and MatMul.
 *
 * Both lower to one matrix-product template over a single [M,K] x [K,N]
 * product. With B stored [K,N] it runs i-k-j: a block of at most COL_BLOCK
 * accumulators of an output row lives on the stack and each k adds
 * a[i,k] * B[k, block], a contiguous, vectorizable inner loop. With B stored
 * transposed ([N,K], Gemm transB=1) each output is a dot product of two
 * contiguous rows, summed in DOT_LANES interleaved partial sums. An epilogue applies Gemm's alpha, beta and C while storing.
 * f16/bf16 accumulate in float; signed integers accumulate in the unsigned
 * type of the same width, so overflow wraps as in ONNX Runtime without UB.
 * MatMul loops over the broadcast batch, computing each operand's offset from
 * the flat batch index with baked-in extents.
 */
#include "codegen.h"

#include <math.h>
#include <string.h>

#define LL(x) ((long long)(x))
#define COL_BLOCK 256  /* accumulators of an output row kept on the stack */
#define DOT_LANES 8    /* partial sums of a dot product (the sum below assumes 8) */

/* Compute type: f16/bf16 widen to float, signed ints use their unsigned twin. */
static const char *ctype(DType t) {
  switch (t) {
  case DT_F64: return "double";
  case DT_I32: return "uint32_t";
  case DT_I64: return "uint64_t";
  default: return dtype_is_float(t) ? "float" : dtype_ctype(t);
  }
}
/* Prefix applied when loading an element (a conversion function or a cast). */
static const char *ld(DType t) {
  switch (t) {
  case DT_F16: return "onnxc_f16_to_f32";
  case DT_BF16: return "onnxc_bf16_to_f32";
  case DT_I32: return "(uint32_t)";
  case DT_I64: return "(uint64_t)";
  default: return "";
  }
}
/* Prefix applied when storing a compute-type value. */
static const char *st(DType t) {
  switch (t) {
  case DT_F16: return "onnxc_f32_to_f16";
  case DT_BF16: return "onnxc_f32_to_bf16";
  case DT_I32: return "(int32_t)";
  case DT_I64: return "(int64_t)";
  default: return "";
  }
}

/* One [M,K] x [K,N] product plus Gemm's epilogue. */
typedef struct Product {
  DType t;
  int64_t m, n, k;
  bool ta, tb;          /* A stored [K,M]; B stored [N,K] */
  const char *a, *b, *y;/* C expressions of the operands' base pointers */
  const char *alpha;    /* literal multiplying A'B', or NULL for 1 */
  const char *beta;     /* literal multiplying C, or NULL for 1 */
  bool has_c;           /* add beta * X2[i * c_si + j * c_sj] */
  int64_t c_si, c_sj;
} Product;

/* The value stored for output (i, j) given accumulator expression acc. */
static void epilogue(const Product *p, const char *acc, const char *j, Buf *out) {
  buf_printf(out, "%s(", st(p->t));
  if (p->alpha)
    buf_printf(out, "%s * ", p->alpha);
  buf_puts(out, acc);
  if (p->has_c) {
    buf_puts(out, " + ");
    if (p->beta)
      buf_printf(out, "%s * ", p->beta);
    buf_printf(out, "%s(X2[i * %lld + (%s) * %lld])", ld(p->t), LL(p->c_si), j, LL(p->c_sj));
  }
  buf_puts(out, ")");
}

/* Expression of A'[i, k] for the k expression `k`. */
static void a_elem(const Product *p, const char *k, char *buf, size_t n) {
  if (p->ta)
    snprintf(buf, n, "%s[(%s) * %lld + i]", p->a, k, LL(p->m));
  else
    snprintf(buf, n, "ar[%s]", k);
}

static void emit_product(EmitC *e, const Product *p) {
  const char *T = dtype_ctype(p->t), *CT = ctype(p->t), *L = ld(p->t);
  Buf epi;
  buf_init(&epi);
  char a_ik[128], a_iku[128];
  a_elem(p, "k", a_ik, sizeof a_ik);
  a_elem(p, "k + u", a_iku, sizeof a_iku);
  ec_line(e, "for (long i = 0; i < %lld; i++) {", LL(p->m));
  if (!p->ta)
    ec_line(e, "const %s *ar = %s + i * %lld;", T, p->a, LL(p->k));
  ec_line(e, "%s *yr = %s + i * %lld;", T, p->y, LL(p->n));
  if (p->tb) {
    epilogue(p, "acc", "j", &epi);
    ec_line(e, "for (long j = 0; j < %lld; j++) {", LL(p->n));
    ec_line(e, "const %s *br = %s + j * %lld;", T, p->b, LL(p->k));
    if (p->k >= 2 * DOT_LANES) {
      /* DOT_LANES partial sums: an explicit reassociation that compilers
       * vectorize without -ffast-math. */
      ec_line(e, "%s part[%d] = {0};", CT, DOT_LANES);
      ec_line(e, "long k = 0;");
      ec_line(e, "for (; k + %d <= %lld; k += %d) {", DOT_LANES, LL(p->k), DOT_LANES);
      ec_line(e, "for (long u = 0; u < %d; u++) part[u] += %s(%s) * %s(br[k + u]);", DOT_LANES, L,
              a_iku, L);
      ec_line(e, "}");
      ec_line(e, "%s acc = ((part[0] + part[1]) + (part[2] + part[3])) + "
                 "((part[4] + part[5]) + (part[6] + part[7]));", CT);
      ec_line(e, "for (; k < %lld; k++) acc += %s(%s) * %s(br[k]);", LL(p->k), L, a_ik, L);
    } else {
      ec_line(e, "%s acc = 0;", CT);
      ec_line(e, "for (long k = 0; k < %lld; k++) acc += %s(%s) * %s(br[k]);", LL(p->k), L, a_ik,
              L);
    }
    ec_line(e, "yr[j] = %s;", epi.s);
    ec_line(e, "}");
  } else {
    int64_t nb = p->n < COL_BLOCK ? p->n : COL_BLOCK;
    epilogue(p, "acc[j]", "j0 + j", &epi);
    ec_line(e, "for (long j0 = 0; j0 < %lld; j0 += %lld) {", LL(p->n), LL(nb));
    ec_line(e, "const long jn = %lld - j0 < %lld ? %lld - j0 : %lld;", LL(p->n), LL(nb), LL(p->n),
            LL(nb));
    ec_line(e, "%s acc[%lld];", CT, LL(nb));
    ec_line(e, "for (long j = 0; j < %lld; j++) acc[j] = 0;", LL(nb));
    ec_line(e, "for (long k = 0; k < %lld; k++) {", LL(p->k));
    ec_line(e, "const %s a = %s(%s);", CT, L, a_ik);
    ec_line(e, "const %s *br = %s + k * %lld + j0;", T, p->b, LL(p->n));
    ec_line(e, "for (long j = 0; j < jn; j++) acc[j] += a * %s(br[j]);", L);
    ec_line(e, "}");
    ec_line(e, "for (long j = 0; j < jn; j++) yr[j0 + j] = %s;", epi.s);
    ec_line(e, "}");
  }
  ec_line(e, "}");
  buf_free(&epi);
}

/* Literal of a Gemm coefficient in the compute type, NULL when it is 1;
 * false with an error for a fractional coefficient of an integer Gemm. */
static bool coef(EmitC *e, const Node *n, const char *name, DType t, char *buf, size_t len,
                 const char **out) {
  double v = ir_attr_float(n, name, 1.0f);
  *out = NULL;
  if (v == 1.0)
    return true;
  if (dtype_is_float(t)) {
    ec_literal(t == DT_F64 ? DT_F64 : DT_F32, v, buf, len);
  } else {
    if (v != floor(v))
      return diag_error(e->d, n, "%s=%g is not an integer, which an integer Gemm cannot apply",
                        name, v);
    snprintf(buf, len, "(%s)(%lld)", ctype(t), LL(v));
  }
  *out = buf;
  return true;
}

static bool emit_nothing(EmitC *e) {
  ec_line(e, "(void)Y0;");
  return true;
}

bool emitc_Gemm(EmitC *e, const Node *n) {
  const Shape *ys = &n->out[0]->shape, *as = &n->in[0]->shape;
  Product p;
  memset(&p, 0, sizeof p);
  p.t = n->in[0]->dt;
  p.m = ys->d[0];
  p.n = ys->d[1];
  p.ta = ir_attr_int(n, "transA", 0) == 1;
  p.tb = ir_attr_int(n, "transB", 0) == 1;
  p.k = as->d[p.ta ? 0 : 1];
  p.a = "X0";
  p.b = "X1";
  p.y = "Y0";
  if (p.m == 0 || p.n == 0)
    return emit_nothing(e);
  char alpha[64], beta[64];
  if (!coef(e, n, "alpha", p.t, alpha, sizeof alpha, &p.alpha) ||
      !coef(e, n, "beta", p.t, beta, sizeof beta, &p.beta))
    return false;
  p.has_c = ir_has_input(n, 2) && ir_attr_float(n, "beta", 1.0f) != 0.0f;
  if (p.has_c) {
    const Shape *cs = &n->in[2]->shape;
    int64_t cm = cs->rank == 2 ? cs->d[0] : 1, cn = cs->rank >= 1 ? cs->d[cs->rank - 1] : 1;
    p.c_si = cm == 1 ? 0 : cn;
    p.c_sj = cn == 1 ? 0 : 1;
  }
  emit_product(e, &p);
  return true;
}

/* Offset expression of one operand's matrix for flat output batch index bi.
 * `dims`/`rank` are the operand's batch dims; `ob`/`nb` the output's. */
static void batch_offset(const int64_t *dims, int rank, const int64_t *ob, int nb, int64_t mat,
                         Buf *out) {
  int64_t stride = mat, ostride = 1;
  bool any = false, plain = true;
  Buf terms;
  buf_init(&terms);
  for (int d = nb - 1; d >= 0; d--) {
    int ad = d - (nb - rank);
    int64_t ext = ad >= 0 ? dims[ad] : 1;
    if (ext == ob[d] && ob[d] != 1) {
      buf_printf(&terms, "%s(bi / %lld %% %lld) * %lld", any ? " + " : "", LL(ostride), LL(ob[d]),
                 LL(stride));
      any = true;
    }
    if (ext != ob[d])
      plain = false;
    stride *= ext;
    ostride *= ob[d];
  }
  if (plain)
    buf_printf(out, "bi * %lld", LL(mat));
  else
    buf_puts(out, any ? terms.s : "0");
  buf_free(&terms);
}

bool emitc_MatMul(EmitC *e, const Node *n) {
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape, *ys = &n->out[0]->shape;
  int64_t ny;
  if (!shape_numel(ys, &ny) || ny == 0)
    return emit_nothing(e);
  Product p;
  memset(&p, 0, sizeof p);
  p.t = n->in[0]->dt;
  p.m = as->rank >= 2 ? as->d[as->rank - 2] : 1;
  p.k = as->d[as->rank - 1];
  p.n = bs->rank >= 2 ? bs->d[bs->rank - 1] : 1;
  int nb = ys->rank - (as->rank >= 2) - (bs->rank >= 2);
  int64_t batch = 1;
  for (int i = 0; i < nb; i++)
    batch *= ys->d[i];
  if (batch == 1) {
    p.a = "X0";
    p.b = "X1";
    p.y = "Y0";
    emit_product(e, &p);
    return true;
  }
  Buf ao, bo;
  buf_init(&ao);
  buf_init(&bo);
  batch_offset(as->d, as->rank >= 2 ? as->rank - 2 : 0, ys->d, nb, p.m * p.k, &ao);
  batch_offset(bs->d, bs->rank >= 2 ? bs->rank - 2 : 0, ys->d, nb, p.k * p.n, &bo);
  ec_line(e, "for (long bi = 0; bi < %lld; bi++) {", LL(batch));
  ec_line(e, "const %s *a = X0 + %s;", dtype_ctype(p.t), ao.s);
  ec_line(e, "const %s *b = X1 + %s;", dtype_ctype(p.t), bo.s);
  ec_line(e, "%s *y = Y0 + bi * %lld;", dtype_ctype(p.t), LL(p.m * p.n));
  p.a = "a";
  p.b = "b";
  p.y = "y";
  emit_product(e, &p);
  ec_line(e, "}");
  buf_free(&ao);
  buf_free(&bo);
  return true;
}
