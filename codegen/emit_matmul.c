/* emit_matmul.c - C kernels for Gemm and MatMul.
 *
 * Both lower to one matrix-product template over a single [M,K] x [K,N]
 * product. With B stored [K,N] it runs i-k-j on tiles of ROW_BLOCK output rows
 * by a block of columns whose accumulators (ACC_BYTES) live on the stack: each
 * k adds a[i,k] * B[k, block] to every row of the tile, a contiguous,
 * vectorizable inner loop that reuses the B stretch from L1. With B stored
 * transposed ([N,K], Gemm transB=1) each output is a dot product of two
 * contiguous rows, summed in DOT_LANES interleaved partial sums, again on
 * tiles of ROW_BLOCK rows. An epilogue applies Gemm's alpha, beta and C while
 * storing.
 * f16/bf16 accumulate in float; signed integers accumulate in the unsigned
 * type of the same width, so overflow wraps as in ONNX Runtime without UB.
 * MatMul loops over the broadcast batch, computing each operand's offset from
 * the flat batch index with baked-in extents.
 */
#include "gemm.h"

#include <math.h>
#include <string.h>

#define LL(x) ((long long)(x))
#define ACC_BYTES 4096 /* stack accumulators of the i-k-j tile */
#define ROW_BLOCK 4    /* rows of A per tile */
#define DOT_LANES 32   /* partial sums of a dot product (emit_dot_tile adds them up) */

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
  bool ta, tb;           /* A stored [K,M]; B stored [N,K] */
  const char *a, *b, *y; /* C expressions of the operands' base pointers */
  const char *alpha;     /* literal multiplying A'B', or NULL for 1 */
  const char *beta;      /* literal multiplying C, or NULL for 1 */
  bool has_c;            /* add beta * X2[i * c_si + j * c_sj], c_sj 0 or 1 */
  int64_t c_si, c_sj;
  const Node *node;      /* for its fused activation (passes/fuse_epilogue.c) */
  /* element strides: A(i, k) at a[i * a_rs + k * a_cs], B(k, j) at
   * b[k * b_ks + j * b_js] (b_js 1: rows of B; b_ks 1: B stored [N, K], tb),
   * Y(i, j) at y[i * y_rs + j] (product_strides sets the plain layouts) */
  int64_t a_rs, a_cs, b_ks, b_js, y_rs;
  double par_cost;       /* > 0: a matrix-vector product (m 1, B stored [N, K]) whose
                            columns the threads may share, of this cost (codegen.h) */
} Product;

/* The strides of plain row-major operands (A transposed when ta, B when tb). */
static void product_strides(Product *p) {
  p->a_rs = p->ta ? 1 : p->k;
  p->a_cs = p->ta ? p->m : 1;
  p->b_ks = p->tb ? 1 : p->n;
  p->b_js = p->tb ? p->k : 1;
  p->y_rs = p->n;
}

/* "e * s" (or e alone when s is 1) into buf. */
static const char *scaled(char *buf, size_t n, const char *e, int64_t s) {
  if (s == 1)
    snprintf(buf, n, "(%s)", e);
  else
    snprintf(buf, n, "(%s) * %lld", e, LL(s));
  return buf;
}

/* The value stored for output (i, j) given accumulator expression acc. */
static void epilogue(const Product *p, const char *acc, const char *j, Buf *out) {
  bool act = p->node && (ir_attr(p->node, "activation") || ir_attr(p->node, "epilogue"));
  buf_printf(out, "%s(", st(p->t));
  Buf inner;
  Buf *whole = out;
  if (act) {
    buf_init(&inner);
    out = &inner;
  }
  if (p->alpha)
    buf_printf(out, "%s * ", p->alpha);
  buf_puts(out, acc);
  if (p->has_c) {
    buf_puts(out, " + ");
    if (p->beta)
      buf_printf(out, "%s * ", p->beta);
    buf_printf(out, "%s(X2[", ld(p->t));
    if (p->c_si)
      buf_printf(out, "i * %lld%s", LL(p->c_si), p->c_sj ? " + " : "");
    if (p->c_sj)
      buf_puts(out, j);
    buf_puts(out, p->c_si || p->c_sj ? "])" : "0])");
  }
  if (act) {
    Buf wrapped;
    buf_init(&wrapped);
    buf_printf(&wrapped, "(%s)", inner.s);
    gemm_act_expr(p->node, wrapped.s, whole);
    buf_free(&wrapped);
    buf_free(&inner);
  }
  buf_puts(whole, ")");
}

/* Expression of A'[i, k] for the row and column expressions i and k. */
static void a_elem(const Product *p, const char *i, const char *k, char *buf, size_t n) {
  char x[96], y[96];
  snprintf(buf, n, "%s[%s + %s]", p->a, scaled(x, sizeof x, i, p->a_rs), scaled(y, sizeof y, k, p->a_cs));
}

/* Dot products of `rows` rows of A' starting at row i0 with every row of B
 * (stored [N,K]), each summed in DOT_LANES interleaved partial sums: an
 * explicit reassociation that compilers vectorize without -ffast-math, with
 * each loaded stretch of a B row serving all rows. */
/* The body of column j's loop: `rows` rows of A' from i0 against row j of B
 * (`epi`: the epilogue of acc), up to the loop's closing brace. */
static void emit_dot_body(EmitC *e, const Product *p, int rows, const char *epi) {
  const char *T = dtype_ctype(p->t), *CT = ctype(p->t), *L = ld(p->t);
  char a_el[512], idx[32];
  ec_line(e, "const %s *br = %s + j * %lld;", T, p->b, LL(p->b_js));
  for (int r = 0; r < rows; r++)
    ec_line(e, "%s part%d[%d] = {0};", CT, r, DOT_LANES);
  ec_line(e, "long k = 0;");
  ec_line(e, "for (; k + %d <= %lld; k += %d) {", DOT_LANES, LL(p->k), DOT_LANES);
  ec_line(e, "for (long u = 0; u < %d; u++) {", DOT_LANES);
  ec_line(e, "const %s b = %s(br[k + u]);", CT, L);
  for (int r = 0; r < rows; r++) {
    snprintf(idx, sizeof idx, "(i0 + %d)", r);
    a_elem(p, idx, "k + u", a_el, sizeof a_el);
    ec_line(e, "part%d[u] += %s(%s) * b;", r, L, a_el);
  }
  ec_line(e, "}");
  ec_line(e, "}");
  a_elem(p, "i", "kk", a_el, sizeof a_el);
  for (int r = 0; r < rows; r++) {
    ec_line(e, "{");
    ec_line(e, "const long i = i0 + %d;", r);
    ec_line(e, "%s acc = 0;", CT);
    ec_line(e, "for (long u = 0; u < %d; u++) acc += part%d[u];", DOT_LANES, r);
    ec_line(e, "for (long kk = k; kk < %lld; kk++) acc += %s(%s) * %s(br[kk]);", LL(p->k), L, a_el,
            L);
    ec_line(e, "%s[i * %lld + j] = %s;", p->y, LL(p->y_rs), epi);
    ec_line(e, "}");
  }
}

static void emit_dot_tile(EmitC *e, const Product *p, int rows) {
  Buf epi;
  buf_init(&epi);
  epilogue(p, "acc", "j", &epi);
  if (p->par_cost > 0) /* --threads: chunks of columns, when the cost pays */
    ec_open_items(e, "j", p->n, p->par_cost);
  else
    ec_line(e, "for (long j = 0; j < %lld; j++) {", LL(p->n));
  emit_dot_body(e, p, rows, epi.s);
  ec_line(e, "}");
  buf_free(&epi);
}

/* One row of A' against DOT_COLS rows of B at a time (a matrix-vector
 * product: a classifier head), so that DOT_COLS streams of B are in flight
 * at once; per element the same partial sums in the same order as
 * emit_dot_tile, the last columns one by one. */
#define DOT_COLS 4
static void emit_dot_cols(EmitC *e, const Product *p) {
  const char *T = dtype_ctype(p->t), *CT = ctype(p->t), *L = ld(p->t);
  char a_el[512];
  Buf epi;
  buf_init(&epi);
  epilogue(p, "acc", "j", &epi);
  int64_t nq = (p->n + DOT_COLS - 1) / DOT_COLS;
  if (p->par_cost > 0)
    ec_open_items(e, "jq", nq, p->par_cost);
  else
    ec_line(e, "for (long jq = 0; jq < %lld; jq++) {", LL(nq));
  ec_line(e, "const long j0 = jq * %d;", DOT_COLS);
  ec_line(e, "if (j0 + %d <= %lld) {", DOT_COLS, LL(p->n));
  for (int c = 0; c < DOT_COLS; c++) {
    ec_line(e, "const %s *br%d = %s + (j0 + %d) * %lld;", T, c, p->b, c, LL(p->b_js));
    ec_line(e, "%s part%d[%d] = {0};", CT, c, DOT_LANES);
  }
  ec_line(e, "long k = 0;");
  ec_line(e, "for (; k + %d <= %lld; k += %d) {", DOT_LANES, LL(p->k), DOT_LANES);
  ec_line(e, "for (long u = 0; u < %d; u++) {", DOT_LANES);
  a_elem(p, "i0", "k + u", a_el, sizeof a_el);
  ec_line(e, "const %s a = %s(%s);", CT, L, a_el);
  for (int c = 0; c < DOT_COLS; c++)
    ec_line(e, "part%d[u] += a * %s(br%d[k + u]);", c, L, c);
  ec_line(e, "}");
  ec_line(e, "}");
  a_elem(p, "i", "kk", a_el, sizeof a_el);
  for (int c = 0; c < DOT_COLS; c++) {
    ec_line(e, "{");
    ec_line(e, "const long i = i0, j = j0 + %d;", c);
    ec_line(e, "%s acc = 0;", CT);
    ec_line(e, "for (long u = 0; u < %d; u++) acc += part%d[u];", DOT_LANES, c);
    ec_line(e, "for (long kk = k; kk < %lld; kk++) acc += %s(%s) * %s(br%d[kk]);", LL(p->k), L, a_el, L, c);
    ec_line(e, "%s[i * %lld + j] = %s;", p->y, LL(p->y_rs), epi.s);
    ec_line(e, "}");
  }
  ec_line(e, "} else {");
  ec_line(e, "for (long j = j0; j < %lld; j++) {", LL(p->n));
  emit_dot_body(e, p, 1, epi.s);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  buf_free(&epi);
}

/* B stored [N,K]: full tiles of ROW_BLOCK rows, then the remaining rows one by
 * one (DOT_COLS columns at a time when there are enough). */
static void emit_dot_product(EmitC *e, const Product *p) {
  int64_t full = p->m / ROW_BLOCK * ROW_BLOCK;
  if (full > 0) {
    ec_line(e, "for (long i0 = 0; i0 < %lld; i0 += %d) {", LL(full), ROW_BLOCK);
    emit_dot_tile(e, p, ROW_BLOCK);
    ec_line(e, "}");
  }
  if (full < p->m) {
    ec_line(e, "for (long i0 = %lld; i0 < %lld; i0++) {", LL(full), LL(p->m));
    if (p->n >= 2 * DOT_COLS && p->k >= DOT_LANES)
      emit_dot_cols(e, p);
    else
      emit_dot_tile(e, p, 1);
    ec_line(e, "}");
  }
}

/* B stored [K,N]: i-k-j over a tile of ROW_BLOCK rows and up to a block of
 * columns, so each loaded stretch of a B row serves every row of the tile. */
static void emit_row_product(EmitC *e, const Product *p) {
  const char *T = dtype_ctype(p->t), *CT = ctype(p->t), *L = ld(p->t);
  bool wide = p->t == DT_F64 || p->t == DT_I64 || p->t == DT_U64;  /* 8-byte compute type */
  int64_t cols = ACC_BYTES / ROW_BLOCK / (wide ? 8 : 4);
  int64_t nb = p->n < cols ? p->n : cols, mb = p->m < ROW_BLOCK ? p->m : ROW_BLOCK;
  char a_ik[512];
  a_elem(p, "i", "k", a_ik, sizeof a_ik);
  Buf epi;
  buf_init(&epi);
  epilogue(p, "acc[r][j]", "j0 + j", &epi);
  int64_t jstart = 0;
  if (p->t == DT_F32 && p->m <= ROW_BLOCK && p->n >= 32) {
    /* a matrix-vector product of up to ROW_BLOCK rows: full panels of 32
     * columns whose accumulators (rows x 32 floats) stay in registers while k
     * runs (B read once, nothing stored until the panel ends; 2.7x the tiles
     * below on 3 x 128 x 512), the remaining columns by the tiles; per element
     * the same sum in the same order */
    jstart = p->n / 32 * 32;
    ec_line(e, "for (long j0 = 0; j0 < %lld; j0 += 32) {", LL(jstart));
    ec_line(e, "float acc[%lld][32];", LL(p->m));
    ec_line(e, "for (long r = 0; r < %lld; r++)", LL(p->m));
    ec_line(e, "  for (long j = 0; j < 32; j++) acc[r][j] = 0;");
    ec_line(e, "for (long k = 0; k < %lld; k++) {", LL(p->k));
    ec_line(e, "const %s *br = %s + k * %lld + j0;", T, p->b, LL(p->b_ks));
    ec_line(e, "for (long r = 0; r < %lld; r++) {", LL(p->m));
    ec_line(e, "const long i = r;");
    ec_line(e, "const float a = %s(%s);", L, a_ik);
    ec_line(e, "for (long j = 0; j < 32; j++) acc[r][j] += a * %s(br[j]);", L);
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "for (long r = 0; r < %lld; r++) {", LL(p->m));
    ec_line(e, "const long i = r;");
    ec_line(e, "%s *yr = %s + i * %lld + j0;", T, p->y, LL(p->y_rs));
    ec_line(e, "for (long j = 0; j < 32; j++) yr[j] = %s;", epi.s);
    ec_line(e, "}");
    ec_line(e, "}");
    if (jstart == p->n) {
      buf_free(&epi);
      return;
    }
  }
  ec_line(e, "for (long i0 = 0; i0 < %lld; i0 += %lld) {", LL(p->m), LL(mb));
  ec_line(e, "const long ni = %lld - i0 < %lld ? %lld - i0 : %lld;", LL(p->m), LL(mb), LL(p->m),
          LL(mb));
  ec_line(e, "for (long j0 = %lld; j0 < %lld; j0 += %lld) {", LL(jstart), LL(p->n), LL(nb));
  ec_line(e, "const long jn = %lld - j0 < %lld ? %lld - j0 : %lld;", LL(p->n), LL(nb), LL(p->n),
          LL(nb));
  ec_line(e, "%s acc[%lld][%lld];", CT, LL(mb), LL(nb));
  ec_line(e, "for (long r = 0; r < %lld; r++)", LL(mb));
  ec_line(e, "  for (long j = 0; j < %lld; j++) acc[r][j] = 0;", LL(nb));
  ec_line(e, "for (long k = 0; k < %lld; k++) {", LL(p->k));
  ec_line(e, "const %s *br = %s + k * %lld + j0;", T, p->b, LL(p->b_ks));
  ec_line(e, "for (long r = 0; r < ni; r++) {");
  ec_line(e, "const long i = i0 + r;");
  ec_line(e, "const %s a = %s(%s);", CT, L, a_ik);
  ec_line(e, "for (long j = 0; j < jn; j++) acc[r][j] += a * %s(br[j]);", L);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "for (long r = 0; r < ni; r++) {");
  ec_line(e, "const long i = i0 + r;");
  ec_line(e, "%s *yr = %s + i * %lld + j0;", T, p->y, LL(p->y_rs));
  ec_line(e, "for (long j = 0; j < jn; j++) yr[j] = %s;", epi.s);
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  buf_free(&epi);
}

static void emit_product(EmitC *e, const Product *p) {
  if (p->tb)
    emit_dot_product(e, p);
  else
    emit_row_product(e, p);
}

bool mm_permuted(const Node *n) {
  return n->op == OP_MatMul && (ir_attr(n, "onnxc.perm_a") || ir_attr(n, "onnxc.perm_b") ||
                                ir_attr(n, "onnxc.perm_y") || ir_attr(n, "onnxc.view_a") ||
                                ir_attr(n, "onnxc.view_b"));
}

/* onnxc.view_a / view_b (passes/fuse_layout.c): [offset, d_0..d_{r-1},
 * s_0..s_{r-1}], the operand buffer seen as shape d with strides s from
 * element `offset` of the input (a slice of a merged sibling product). */
static const int64_t *operand_view(const Node *n, int which, int *rank) {
  int k = 0;
  const int64_t *v = which < 2 ? ir_attr_ints(n, which ? "onnxc.view_b" : "onnxc.view_a", &k) : NULL;
  if (!v || k < 3 || (k - 1) % 2 || (k - 1) / 2 > IR_MAX_RANK)
    return NULL;
  *rank = (k - 1) / 2;
  return v;
}

int64_t mm_view_offset(const Node *n, int which) {
  int r;
  const int64_t *v = operand_view(n, which, &r);
  return v ? v[0] : 0;
}

void mm_view(const Node *n, int which, Shape *shape, int64_t *stride) {
  static const char *const names[3] = {"onnxc.perm_a", "onnxc.perm_b", "onnxc.perm_y"};
  Shape ps = which == 2 ? n->out[0]->shape : n->in[which]->shape;
  int64_t pst[IR_MAX_RANK], acc = 1;
  for (int i = ps.rank - 1; i >= 0; i--) {
    pst[i] = acc;
    acc *= ps.d[i];
  }
  int vr;
  const int64_t *view = operand_view(n, which, &vr);
  if (view) {
    ps.rank = vr;
    for (int i = 0; i < vr; i++) {
      ps.d[i] = view[1 + i];
      pst[i] = view[1 + vr + i];
    }
  }
  int k = 0;
  const int64_t *perm = ir_attr_ints(n, names[which], &k);
  *shape = ps;
  for (int i = 0; i < ps.rank; i++)
    stride[i] = pst[i];
  if (!perm || k != ps.rank)
    return;
  for (int i = 0; i < ps.rank; i++) {
    if (which == 2) { /* the buffer is the logical result transposed: its dim i is logical perm[i] */
      shape->d[perm[i]] = ps.d[i];
      stride[perm[i]] = pst[i];
    } else { /* logical dim i is the buffer's dim perm[i] */
      shape->d[i] = ps.d[perm[i]];
      stride[i] = pst[perm[i]];
    }
  }
}

bool mm_strides(const Node *n, MmStrides *s) {
  Shape va, vb, vy;
  int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK], sy[IR_MAX_RANK];
  mm_view(n, 0, &va, sa);
  mm_view(n, 1, &vb, sb);
  mm_view(n, 2, &vy, sy);
  int r = vy.rank;
  if (va.rank != r || vb.rank != r || r < 3 || sy[r - 1] != 1)
    return false;
  s->rank = r;
  s->m = va.d[r - 2];
  s->k = va.d[r - 1];
  s->n = vb.d[r - 1];
  s->a_rs = sa[r - 2];
  s->a_cs = sa[r - 1];
  s->b_rs = sb[r - 2];
  s->b_cs = sb[r - 1];
  s->y_rs = sy[r - 2];
  s->batch = 1;
  for (int i = 0; i < r - 2; i++)
    s->batch *= vy.d[i];
  return true;
}

void mm_operand_offset(const Node *n, int which, int nb, Buf *out) {
  Shape v;
  int64_t st[IR_MAX_RANK];
  mm_view(n, which, &v, st);
  mm_batch_offset(&v, st, nb, out);
  int64_t off = mm_view_offset(n, which);
  if (off)
    buf_printf(out, " + %lld", LL(off));
}

void mm_batch_offset(const Shape *shape, const int64_t *stride, int nb, Buf *out) {
  int64_t inner = 1;
  bool any = false;
  for (int d = nb - 1; d >= 0; d--) {
    if (shape->d[d] != 1) {
      buf_printf(out, "%s(bi / %lld %% %lld) * %lld", any ? " + " : "", LL(inner), LL(shape->d[d]),
                 LL(stride[d]));
      any = true;
    }
    inner *= shape->d[d];
  }
  if (!any)
    buf_puts(out, "0");
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
  if (gemm_emit_gemm(e, n))
    return true;
  const Shape *ys = &n->out[0]->shape, *as = &n->in[0]->shape;
  Product p;
  memset(&p, 0, sizeof p);
  p.t = n->in[0]->dt;
  p.node = n;
  p.m = ys->d[0];
  p.n = ys->d[1];
  p.ta = ir_attr_int(n, "transA", 0) == 1;
  p.tb = ir_attr_int(n, "transB", 0) == 1;
  p.k = as->d[p.ta ? 0 : 1];
  p.a = "X0";
  p.b = "X1";
  p.y = "Y0";
  product_strides(&p);
  if (p.m == 0 || p.n == 0)
    return emit_nothing(e);
  char alpha[64], beta[64];
  if (!coef(e, n, "alpha", p.t, alpha, sizeof alpha, &p.alpha) ||
      !coef(e, n, "beta", p.t, beta, sizeof beta, &p.beta))
    return false;
  /* a matrix-vector product reads every weight once: memory-bound, its
   * columns shared by the threads when that pays (one claim loop per node) */
  if (p.m == 1 && p.tb)
    p.par_cost = ec_cost_ns((double)p.n * p.k, (double)p.n * p.k * (p.t == DT_F64 ? 8 : 4));
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

/* Offset expression of one operand's matrix for flat output batch index bi
 * (codegen.h). */
void ec_batch_offset(const int64_t *dims, int rank, const int64_t *ob, int nb, int64_t mat,
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

/* A MatMul reading or writing through folded Transposes (passes/fuse_layout.c):
 * the views' strides, one product per batch, no broadcasting. */
static bool emit_permuted(EmitC *e, const Node *n, Product *p) {
  MmStrides ms;
  if (!mm_strides(n, &ms))
    return diag_error(e->d, n, "internal: a permuted MatMul needs batched operands and unit-stride rows");
  int nb = ms.rank - 2;
  p->m = ms.m;
  p->k = ms.k;
  p->n = ms.n;
  p->a_rs = ms.a_rs;
  p->a_cs = ms.a_cs;
  p->b_ks = ms.b_rs;
  p->b_js = ms.b_cs;
  p->y_rs = ms.y_rs;
  p->tb = p->b_js != 1;
  if (p->tb && p->b_ks != 1)
    return diag_error(e->d, n, "internal: a permuted MatMul operand B needs unit-stride rows or columns");
  int64_t batch = ms.batch;
  Buf ao, bo, yo;
  buf_init(&ao);
  buf_init(&bo);
  buf_init(&yo);
  mm_operand_offset(n, 0, nb, &ao);
  mm_operand_offset(n, 1, nb, &bo);
  mm_operand_offset(n, 2, nb, &yo);
  const char *T = dtype_ctype(p->t);
  ec_line(e, "/* batched MatMul read and written in place of the Transposes around it */");
  ec_line(e, "for (long bi = 0; bi < %lld; bi++) {", LL(batch));
  ec_line(e, "const %s *pa = X0 + %s;", T, ao.s);
  ec_line(e, "const %s *pb = X1 + %s;", T, bo.s);
  ec_line(e, "%s *py = Y0 + %s;", T, yo.s);
  p->a = "pa";
  p->b = "pb";
  p->y = "py";
  emit_product(e, p);
  ec_line(e, "}");
  buf_free(&ao);
  buf_free(&bo);
  buf_free(&yo);
  return true;
}

bool emitc_MatMul(EmitC *e, const Node *n) {
  if (gemm_emit_matmul(e, n))
    return true;
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape, *ys = &n->out[0]->shape;
  int64_t ny;
  if (!shape_numel(ys, &ny) || ny == 0)
    return emit_nothing(e);
  Product p;
  memset(&p, 0, sizeof p);
  p.t = n->in[0]->dt;
  p.node = n;
  if (mm_permuted(n))
    return emit_permuted(e, n, &p);
  p.m = as->rank >= 2 ? as->d[as->rank - 2] : 1;
  p.k = as->d[as->rank - 1];
  p.n = bs->rank >= 2 ? bs->d[bs->rank - 1] : 1;
  product_strides(&p);
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
  ec_batch_offset(as->d, as->rank >= 2 ? as->rank - 2 : 0, ys->d, nb, p.m * p.k, &ao);
  ec_batch_offset(bs->d, bs->rank >= 2 ? bs->rank - 2 : 0, ys->d, nb, p.k * p.n, &bo);
  ec_line(e, "for (long bi = 0; bi < %lld; bi++) {", LL(batch));
  ec_line(e, "const %s *pa = X0 + %s;", dtype_ctype(p.t), ao.s);
  ec_line(e, "const %s *pb = X1 + %s;", dtype_ctype(p.t), bo.s);
  ec_line(e, "%s *py = Y0 + bi * %lld;", dtype_ctype(p.t), LL(p.m * p.n));
  p.a = "pa";
  p.b = "pb";
  p.y = "py";
  emit_product(e, &p);
  ec_line(e, "}");
  buf_free(&ao);
  buf_free(&bo);
  return true;
}
