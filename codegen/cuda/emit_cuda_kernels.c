/* emit_cuda_kernels.c - the CUDA target's parallel kernels.
 *
 *   elementwise   every EW row, from the same templates as the C target
 *                 (ec_ew_template / ec_expand_expr / ec_ew_load / ec_ew_store):
 *                 one thread per output element in a grid-stride loop, each
 *                 operand's broadcast offset unravelled from the flat index;
 *                 FusedElementwise the same, its body from the kernel
 *                 description the C target prints (kernel_desc.c)
 *   Gemm, MatMul  16x16 shared-memory tiles, one thread per output element,
 *                 batches (MatMul broadcasting) on grid z; f32 and f64; a
 *                 MatMul reads and writes through fuse-layout's views (mm_view)
 *   Conv          (emit_cuda_window.c) direct convolution, one thread per output element (any
 *                 spatial rank, groups, dilations, pads), a fused residual
 *                 added before the activation; f32 and f64
 *   MaxPool, AveragePool  (emit_cuda_window.c) one thread per output element, the C target's
 *                 window arithmetic (window.h); f32 and f64, Indices too
 *   Softmax, LogSoftmax  one block per row: block reductions (max, then sum)
 *   LayerNormalization, RMSNormalization  one block per row, sums in double
 *   Transpose, Expand, Concat, Gather  one thread per output element (Gather
 *                 reports an index out of range through onnxc_status)
 *   ReduceSum/Mean/Max/Min/SumSquare/L1/L2, GlobalAveragePool/MaxPool
 *                 one block per output element, block reduction (sums in
 *                 double); f32 and f64
 * Anything else returns 0 and gets the single-thread fallback (emit_cuda.c).
 * Shapes are static: extents and strides are baked in as constants.
 */
#include "cuda_emit.h"
#include "gemm.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define LL(x) ((long long)(x))
#define EW_THREADS 256
#define TILE 16
#define ROW_THREADS 256

int64_t cuda_blocks_for(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  return b < 1 ? 1 : b > 65535 ? 65535 : b;
}

void ck_line(CudaKernel *k, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  buf_puts(k->cu, "  ");
  buf_vprintf(k->cu, fmt, ap);
  buf_putc(k->cu, '\n');
  va_end(ap);
}

void ck_open(CudaKernel *k, const char *what) {
  buf_printf(k->cu, "/* %s */\nextern \"C\" __global__ void %s(%s) {\n  (void)onnxc_status;\n", what, k->fn, k->params);
}

void ck_close(CudaKernel *k) { buf_puts(k->cu, "}\n\n"); }

static bool numel(const Value *v, int64_t *n) { return shape_numel(&v->shape, n); }

static int64_t prod(const Shape *s, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++)
    p *= s->d[i];
  return p;
}

/* ---- elementwise ------------------------------------------------------------------- */

static int emit_elementwise(CudaKernel *k, const Node *n) {
  const Value *y = n->out[0];
  int64_t ny;
  if (!numel(y, &ny))
    return 0;
  int nk = n->n_in;
  if (ir_ops[n->op].max_in >= 0 && nk > EC_EXPR_MAX_OPS)
    return 0;
  for (int i = 0; i < nk; i++)
    if (!ir_has_input(n, i) || dtype_bits(n->in[i]->dt) < 8)
      return 0;
  if (dtype_bits(y->dt) < 8)
    return 0;
  DType compute = ec_ew_compute_type(n);
  const char *ct = dtype_ctype(compute), *tmpl = ec_ew_template(n, compute);
  char buf[64];
  snprintf(buf, sizeof buf, "elementwise %s: one thread per element", n->op_type);
  ck_open(k, buf);
  k->block[0] = EW_THREADS;
  k->grid[0] = cuda_blocks_for(ny, EW_THREADS);
  ck_line(k, "ONNXC_CUDA_FOR(i, %lld) {", LL(ny));
  Buf src, ld, ex, st;
  buf_init(&src);
  buf_init(&ld);
  buf_init(&ex);
  buf_init(&st);
  char names[EC_EXPR_MAX_OPS][16];
  const char *ops[EC_EXPR_MAX_OPS];
  bool ok = true;
  for (int i = 0; i < nk; i++) {
    src.len = 0;
    ld.len = 0;
    buf_printf(&src, "X%d[", i);
    kd_bcast_offset(&n->in[i]->shape, &y->shape, "i", &src);
    buf_putc(&src, ']');
    ec_ew_load(&ld, n->in[i]->dt, compute, src.s);
    ck_line(k, "  const %s a%d = %s;", ct, i, ld.s);
  }
  if (ir_ops[n->op].max_in < 0) {
    ck_line(k, "  %s r = a0;", ct);
    ops[0] = "r";
    ops[1] = names[1];
    for (int i = 1; i < nk && ok; i++) {
      snprintf(names[1], sizeof names[1], "a%d", i);
      ex.len = 0;
      buf_puts(&ex, "");
      ok = ec_expand_expr(k->d, n, tmpl, ops, 2, compute, &ex);
      if (ok)
        ck_line(k, "  r = %s;", ex.s);
    }
    ex.len = 0;
    buf_puts(&ex, "");
    if (n->op == OP_Mean)
      buf_printf(&ex, "r / (%s)%d", ct, nk);
    else
      buf_puts(&ex, "r");
  } else {
    for (int i = 0; i < nk; i++) {
      snprintf(names[i], sizeof names[i], "a%d", i);
      ops[i] = names[i];
    }
    ok = ec_expand_expr(k->d, n, tmpl, ops, nk, compute, &ex);
  }
  if (ok) {
    ec_ew_store(&st, compute, y->dt, ex.s);
    ck_line(k, "  Y0[i] = %s;", st.s);
  }
  ck_line(k, "}");
  ck_close(k);
  buf_free(&src);
  buf_free(&ld);
  buf_free(&ex);
  buf_free(&st);
  return ok ? 1 : -1;
}

/* A fused elementwise chain: the kernel description (kernel_desc.c) in the
 * same one-thread-per-element loop, operands loaded in their own types; each
 * output stored at the thread's index (merged siblings have several). */
static int emit_fused(CudaKernel *k, const Node *n) {
  const Value *y = n->out[0];
  int64_t ny;
  Kdesc kd;
  if (!numel(y, &ny) || ny == 0 || !kd_build(n, &kd, k->d))
    return 0;
  for (int i = 0; i < n->n_in; i++)
    if (dtype_bits(n->in[i]->dt) < 8)
      return 0;
  Buf what, src, ld, st, res[KD_MAX_OUTPUTS];
  buf_init(&what);
  buf_init(&src);
  buf_init(&ld);
  buf_init(&st);
  for (int o = 0; o < kd.n_out; o++) {
    buf_init(&res[o]);
    buf_puts(&res[o], "");
  }
  buf_puts(&what, "fused elementwise, one thread per element: ");
  kd_describe(&kd, &what);
  ck_open(k, what.s);
  k->block[0] = EW_THREADS;
  k->grid[0] = cuda_blocks_for(ny, EW_THREADS);
  ck_line(k, "ONNXC_CUDA_FOR(i, %lld) {", LL(ny));
  for (int i = 0; i < n->n_in; i++) {
    DType to = kd_operand_type(n->in[i]->dt);
    src.len = 0;
    ld.len = 0;
    buf_printf(&src, "X%d[", i);
    int64_t voff, vst[IR_MAX_RANK];
    if (kd_operand_view(n, i, &voff, vst)) /* read in place of Transposes and Slices */
      kd_operand_offset(n, i, &y->shape, "i", &src);
    else
      kd_bcast_offset(&n->in[i]->shape, &y->shape, "i", &src);
    buf_putc(&src, ']');
    ec_ew_load(&ld, n->in[i]->dt, to, src.s);
    ck_line(k, "  const %s a%d = %s;", dtype_ctype(to), i, ld.s);
  }
  buf_puts(&st, "");
  bool ok = kd_emit_outputs(&kd, false, "    ", &st, res, k->d);
  if (ok) {
    buf_puts(k->cu, st.s);
    for (int o = 0; o < kd.n_out; o++) /* an output nothing reads: no parameter, its value dropped */
      if (ec_has_output(n, o))
        ck_line(k, "  Y%d[i] = %s;", o, res[o].s);
      else
        ck_line(k, "  (void)(%s);", res[o].s);
  }
  ck_line(k, "}");
  ck_close(k);
  buf_free(&what);
  buf_free(&src);
  buf_free(&ld);
  buf_free(&st);
  for (int o = 0; o < kd.n_out; o++)
    buf_free(&res[o]);
  return ok ? 1 : -1;
}

/* ---- Gemm, MatMul ------------------------------------------------------------------ */

typedef struct Mm {
  DType t;
  int64_t m, n, k, batch;
  int64_t sai, sak, sbk, sbj;       /* element strides of A[i,k], B[k,j] */
  const char *ao, *bo, *yo;         /* batch offsets of A, B and Y (in bi) */
  int64_t syi;                      /* Y's row stride (its columns are contiguous) */
  const char *alpha, *beta;         /* literals, NULL for 1 */
  bool has_c;
  int64_t c_si, c_sj;
  const Node *node;                 /* for its fused activation */
} Mm;

static void emit_tiled(CudaKernel *k, const Mm *p, const char *what) {
  const char *ct = dtype_ctype(p->t);
  ck_open(k, what);
  k->block[0] = k->block[1] = TILE;
  k->grid[0] = (p->n + TILE - 1) / TILE;
  k->grid[1] = (p->m + TILE - 1) / TILE;
  k->grid[2] = p->batch;
  ck_line(k, "__shared__ %s ta[%d][%d], tb[%d][%d];", ct, TILE, TILE + 1, TILE, TILE + 1);
  ck_line(k, "const int64_t bi = blockIdx.z;");
  ck_line(k, "const int64_t i = (int64_t)blockIdx.y * %d + threadIdx.y, j = (int64_t)blockIdx.x * %d + threadIdx.x;",
        TILE, TILE);
  ck_line(k, "const %s *pa = X0 + %s;", ct, p->ao);
  ck_line(k, "const %s *pb = X1 + %s;", ct, p->bo);
  ck_line(k, "%s acc = 0;", ct);
  ck_line(k, "(void)bi;");
  ck_line(k, "for (int64_t k0 = 0; k0 < %lld; k0 += %d) {", LL(p->k), TILE);
  ck_line(k, "  const int64_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;");
  ck_line(k, "  ta[threadIdx.y][threadIdx.x] = (i < %lld && ka < %lld) ? pa[i * %lld + ka * %lld] : (%s)0;", LL(p->m),
        LL(p->k), LL(p->sai), LL(p->sak), ct);
  ck_line(k, "  tb[threadIdx.y][threadIdx.x] = (kb < %lld && j < %lld) ? pb[kb * %lld + j * %lld] : (%s)0;", LL(p->k),
        LL(p->n), LL(p->sbk), LL(p->sbj), ct);
  ck_line(k, "  __syncthreads();");
  ck_line(k, "  for (int kk = 0; kk < %d; kk++)", TILE);
  ck_line(k, "    acc += ta[threadIdx.y][kk] * tb[kk][threadIdx.x];");
  ck_line(k, "  __syncthreads();");
  ck_line(k, "}");
  ck_line(k, "if (i < %lld && j < %lld) {", LL(p->m), LL(p->n));
  Buf e;
  buf_init(&e);
  if (p->alpha)
    buf_printf(&e, "%s * acc", p->alpha);
  else
    buf_puts(&e, "acc");
  if (p->has_c)
    buf_printf(&e, " + %s%sX2[i * %lld + j * %lld]", p->beta ? p->beta : "", p->beta ? " * " : "", LL(p->c_si),
               LL(p->c_sj));
  ck_line(k, "  const %s r = %s;", ct, e.s);
  Buf act; /* the fused activation, if any (passes/fuse_epilogue.c) */
  buf_init(&act);
  gemm_act_expr(p->node, "r", &act);
  ck_line(k, "  Y0[%s + i * %lld + j] = %s;", p->yo, LL(p->syi), act.s);
  buf_free(&act);
  buf_free(&e);
  ck_line(k, "}");
  ck_close(k);
}

static const char *coef_lit(const Node *n, const char *name, DType t, char *buf, size_t len) {
  double v = ir_attr_float(n, name, 1.0f);
  if (v == 1.0)
    return NULL;
  return ec_literal(t, v, buf, len);
}

static int emit_gemm(CudaKernel *k, const Node *n) {
  const Shape *ys = &n->out[0]->shape, *as = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  if ((t != DT_F32 && t != DT_F64) || ys->d[0] == 0 || ys->d[1] == 0)
    return 0;
  Mm p;
  memset(&p, 0, sizeof p);
  p.node = n;
  p.t = t;
  p.m = ys->d[0];
  p.n = ys->d[1];
  bool ta = ir_attr_int(n, "transA", 0) == 1, tb = ir_attr_int(n, "transB", 0) == 1;
  p.k = as->d[ta ? 0 : 1];
  p.sai = ta ? 1 : p.k;
  p.sak = ta ? p.m : 1;
  p.sbk = tb ? 1 : p.n;
  p.sbj = tb ? p.k : 1;
  p.ao = p.bo = p.yo = "0";
  p.syi = p.n;
  p.batch = 1;
  if ((p.m + TILE - 1) / TILE > 65535)
    return 0;
  char al[64], be[64];
  p.alpha = coef_lit(n, "alpha", t, al, sizeof al);
  p.beta = coef_lit(n, "beta", t, be, sizeof be);
  p.has_c = ir_has_input(n, 2) && ir_attr_float(n, "beta", 1.0f) != 0.0f;
  if (p.has_c) {
    const Shape *cs = &n->in[2]->shape;
    int64_t cm = cs->rank == 2 ? cs->d[0] : 1, cn = cs->rank >= 1 ? cs->d[cs->rank - 1] : 1;
    p.c_si = cm == 1 ? 0 : cn;
    p.c_sj = cn == 1 ? 0 : 1;
  }
  emit_tiled(k, &p, "Gemm: 16x16 shared-memory tiles");
  return 1;
}

static int emit_matmul(CudaKernel *k, const Node *n) {
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape, *ys = &n->out[0]->shape;
  DType t = n->in[0]->dt;
  int64_t ny;
  if ((t != DT_F32 && t != DT_F64) || !shape_numel(ys, &ny) || ny == 0)
    return 0;
  Mm p;
  memset(&p, 0, sizeof p);
  p.node = n;
  p.t = t;
  p.m = as->rank >= 2 ? as->d[as->rank - 2] : 1;
  p.k = as->d[as->rank - 1];
  p.n = bs->rank >= 2 ? bs->d[bs->rank - 1] : 1;
  p.sai = p.k;
  p.sak = 1;
  p.sbk = p.n;
  p.sbj = 1;
  int nb = ys->rank - (as->rank >= 2) - (bs->rank >= 2);
  Buf ao, bo, yo;
  buf_init(&ao);
  buf_init(&bo);
  buf_init(&yo);
  if (mm_permuted(n)) { /* through the Transposes and slices fuse-layout folded in (mm_view) */
    MmStrides ms;
    if (!mm_strides(n, &ms)) {
      buf_free(&ao);
      buf_free(&bo);
      buf_free(&yo);
      return 0;
    }
    nb = ms.rank - 2;
    p.m = ms.m;
    p.k = ms.k;
    p.n = ms.n;
    p.sai = ms.a_rs;
    p.sak = ms.a_cs;
    p.sbk = ms.b_rs;
    p.sbj = ms.b_cs;
    p.syi = ms.y_rs;
    mm_operand_offset(n, 0, nb, &ao);
    mm_operand_offset(n, 1, nb, &bo);
    mm_operand_offset(n, 2, nb, &yo);
    p.batch = ms.batch;
  } else {
    p.syi = p.n;
    ec_batch_offset(as->d, as->rank >= 2 ? as->rank - 2 : 0, ys->d, nb, p.m * p.k, &ao);
    ec_batch_offset(bs->d, bs->rank >= 2 ? bs->rank - 2 : 0, ys->d, nb, p.k * p.n, &bo);
    buf_printf(&yo, "bi * %lld", LL(p.m * p.n));
    p.batch = 1;
    for (int i = 0; i < nb; i++)
      p.batch *= ys->d[i];
  }
  p.ao = ao.s;
  p.bo = bo.s;
  p.yo = yo.s;
  int ok = p.batch <= 65535 && (p.m + TILE - 1) / TILE <= 65535;
  if (ok)
    emit_tiled(k, &p, mm_permuted(n) ? "MatMul: 16x16 shared-memory tiles, batches on grid z, operands and result "
                                       "read and written through views"
                                     : "MatMul: 16x16 shared-memory tiles, batches on grid z");
  buf_free(&ao);
  buf_free(&bo);
  buf_free(&yo);
  return ok;
}

/* ---- Softmax, LogSoftmax ------------------------------------------------------------ */


static int emit_softmax(CudaKernel *k, const Node *n, bool log) {
  const Shape *xs = &n->out[0]->shape;  /* with a fused prologue, in[0] may broadcast */
  DType t = n->out[0]->dt;
  bool pro = ir_attr(n, "prologue") != NULL;
  int64_t nx;
  if ((t != DT_F32 && t != DT_F64) || !shape_numel(xs, &nx) || nx == 0)
    return 0;
  bool opset13 = n->g->opset >= 13;
  int ax;
  if (!shape_axis(ir_attr_int(n, "axis", opset13 ? -1 : 1), xs->rank, &ax))
    return 0;
  int64_t outer = prod(xs, 0, ax);
  int64_t len = opset13 ? xs->d[ax] : prod(xs, ax, xs->rank);
  int64_t inner = opset13 ? prod(xs, ax + 1, xs->rank) : 1;
  int64_t rows = outer * inner;
  if (rows > 2147483647 || (pro && inner != 1))
    return 0;
  const char *ct = dtype_ctype(t), *f = t == DT_F64 ? "" : "f";
  ck_open(k, log ? "LogSoftmax: one block per row, block reductions"
                     : "Softmax: one block per row, block reductions");
  k->block[0] = ROW_THREADS;
  k->grid[0] = rows;
  ck_line(k, "__shared__ %s red[%d];", ct, ROW_THREADS);
  ck_line(k, "const int64_t row = blockIdx.x, o = row / %lld, in = row %% %lld;", LL(inner), LL(inner));
  ck_line(k, "%s *y = Y0 + o * %lld + in;", ct, LL(len * inner));
  if (pro) {
    /* the fused prologue (kernel_desc.c): the row's input computed into the
     * output row, read and overwritten there */
    Buf b;
    buf_init(&b);
    buf_puts(&b, "");
    bool ok = kd_prologue_row(n, "    ", "o", "j", "y[j]", &b, k->d);
    ck_line(k, "for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x) {", LL(len));
    buf_puts(k->cu, b.s);
    ck_line(k, "}");
    ck_line(k, "__syncthreads();");
    ck_line(k, "const %s *x = y;", ct);
    buf_free(&b);
    if (!ok)
      return -1;
  } else {
    ck_line(k, "const %s *x = X0 + o * %lld + in;", ct, LL(len * inner));
  }
  ck_line(k, "%s v = -INFINITY;", ct);
  ck_line(k, "for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x)", LL(len));
  ck_line(k, "  v = fmax%s(v, x[j * %lld]);", f, LL(inner));
  ck_line(k, "red[threadIdx.x] = v;");
  ck_line(k, "__syncthreads();");
  ck_line(k, "for (int h = blockDim.x / 2; h > 0; h /= 2) {");
  ck_line(k, "  if ((int)threadIdx.x < h) red[threadIdx.x] = fmax%s(red[threadIdx.x], red[threadIdx.x + h]);", f);
  ck_line(k, "  __syncthreads();");
  ck_line(k, "}");
  ck_line(k, "const %s mx = red[0];", ct);
  ck_line(k, "__syncthreads();");
  ck_line(k, "v = 0;");
  ck_line(k, "for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x)", LL(len));
  ck_line(k, "  v += exp%s(x[j * %lld] - mx);", f, LL(inner));
  ck_line(k, "red[threadIdx.x] = v;");
  ck_line(k, "__syncthreads();");
  ck_line(k, "for (int h = blockDim.x / 2; h > 0; h /= 2) {");
  ck_line(k, "  if ((int)threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];");
  ck_line(k, "  __syncthreads();");
  ck_line(k, "}");
  ck_line(k, "const %s sum = red[0];", ct);
  if (log) {
    ck_line(k, "const %s ls = log%s(sum);", ct, f);
    ck_line(k, "for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x)", LL(len));
    ck_line(k, "  y[j * %lld] = x[j * %lld] - mx - ls;", LL(inner), LL(inner));
  } else {
    ck_line(k, "for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x)", LL(len));
    ck_line(k, "  y[j * %lld] = exp%s(x[j * %lld] - mx) / sum;", LL(inner), f, LL(inner));
  }
  ck_close(k);
  return 1;
}

/* ---- Transpose ----------------------------------------------------------------------- */

static int emit_transpose(CudaKernel *k, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  int64_t ny;
  int r = xs->rank, cnt;
  if (dtype_bits(n->in[0]->dt) < 8 || !shape_numel(ys, &ny) || ny == 0 || r == 0)
    return 0;
  int64_t perm[IR_MAX_RANK], xstride[IR_MAX_RANK];
  const int64_t *pa = ir_attr_ints(n, "perm", &cnt);
  for (int i = 0; i < r; i++)
    perm[i] = pa && cnt == r ? pa[i] : r - 1 - i;
  int64_t acc = 1;
  for (int i = r - 1; i >= 0; i--) {
    xstride[i] = acc;
    acc *= xs->d[i];
  }
  ck_open(k, "Transpose: one thread per output element");
  k->block[0] = EW_THREADS;
  k->grid[0] = cuda_blocks_for(ny, EW_THREADS);
  ck_line(k, "ONNXC_CUDA_FOR(i, %lld) {", LL(ny));
  ck_line(k, "  int64_t rest = i, src = 0;");
  for (int d = r - 1; d >= 0; d--) {
    if (ys->d[d] == 1)
      continue;
    ck_line(k, "  src += (rest %% %lld) * %lld;", LL(ys->d[d]), LL(xstride[perm[d]]));
    ck_line(k, "  rest /= %lld;", LL(ys->d[d]));
  }
  ck_line(k, "  Y0[i] = X0[src];");
  ck_line(k, "}");
  ck_close(k);
  return 1;
}

/* ---- LRN: one thread per output element ------------------------------------------------ */

/* Y[c] = X[c] / (bias + alpha / size * sum of X[c']^2 over the channel window)^beta,
 * the sum in the C target's order and type (emit_nn.c). The C body, in one thread,
 * keeps blocks of window sums in a local array that NVRTC unrolls: 36k PTX lines
 * per node and a 5 MB cubin for AlexNet-sized inputs. */
static int emit_lrn(CudaKernel *k, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  int64_t nx;
  if ((t != DT_F32 && t != DT_F64) || xs->rank < 2 || !shape_numel(xs, &nx) || nx == 0)
    return 0;
  const char *ct = dtype_ctype(t), *f = t == DT_F64 ? "" : "f";
  int64_t size = ir_attr_int(n, "size", 1), c = xs->d[1], plane = prod(xs, 2, xs->rank);
  int64_t before = (size - 1) / 2, after = size / 2;
  double k0 = (double)ir_attr_float(n, "alpha", 1e-4f) / (double)size;
  double bias = (double)ir_attr_float(n, "bias", 1.0f), beta = (double)ir_attr_float(n, "beta", 0.75f);
  char lk0[64], lbias[64], lbeta[64]; /* the C target's literals (ec_literal) */
  ec_literal(t, k0, lk0, sizeof lk0);
  ec_literal(t, bias, lbias, sizeof lbias);
  ec_literal(t, beta, lbeta, sizeof lbeta);
  ck_open(k, "LRN: one thread per output element");
  k->block[0] = EW_THREADS;
  k->grid[0] = cuda_blocks_for(nx, EW_THREADS);
  ck_line(k, "ONNXC_CUDA_FOR(i, %lld) {", LL(nx));
  ck_line(k, "  const int64_t p = i %% %lld, ch = i / %lld %% %lld, nb = i / %lld;", LL(plane), LL(plane), LL(c),
        LL(c * plane));
  ck_line(k, "  const int64_t c0 = ch - %lld < 0 ? 0 : ch - %lld;", LL(before), LL(before));
  ck_line(k, "  const int64_t c1 = ch + %lld > %lld ? %lld : ch + %lld;", LL(after), LL(c - 1), LL(c - 1), LL(after));
  ck_line(k, "  const %s *x = X0 + nb * %lld + p;", ct, LL(c * plane));
  ck_line(k, "  %s acc = 0;", ct);
  ck_line(k, "  for (int64_t cc = c0; cc <= c1; cc++) {");
  ck_line(k, "    const %s v = x[cc * %lld];", ct, LL(plane));
  ck_line(k, "    acc += v * v;");
  ck_line(k, "  }");
  ck_line(k, "  Y0[i] = (%s)(X0[i] / pow%s(%s + %s * acc, %s));", ct, f, lbias, lk0, lbeta);
  ck_line(k, "}");
  ck_close(k);
  return 1;
}

/* ---- Expand, Concat, Gather: one thread per output element ----------------------------- */

static int emit_expand(CudaKernel *k, const Node *n) {
  int64_t ny;
  if (dtype_bits(n->in[0]->dt) < 8 || !numel(n->out[0], &ny) || ny == 0)
    return 0;
  ck_open(k, "Expand: one thread per output element");
  k->block[0] = EW_THREADS;
  k->grid[0] = cuda_blocks_for(ny, EW_THREADS);
  Buf src;
  buf_init(&src);
  kd_bcast_offset(&n->in[0]->shape, &n->out[0]->shape, "i", &src);
  ck_line(k, "(void)X1;");
  ck_line(k, "ONNXC_CUDA_FOR(i, %lld)", LL(ny));
  ck_line(k, "  Y0[i] = X0[%s];", src.s);
  buf_free(&src);
  ck_close(k);
  return 1;
}

static int emit_concat(CudaKernel *k, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  int64_t ny;
  int ax;
  if (dtype_bits(n->out[0]->dt) < 8 || !shape_numel(ys, &ny) || ny == 0 ||
      !shape_axis(ir_attr_int(n, "axis", 0), ys->rank, &ax))
    return 0;
  for (int i = 0; i < n->n_in; i++)
    if (!ir_has_input(n, i))
      return 0;
  int64_t inner = prod(ys, ax + 1, ys->rank), total = ys->d[ax];
  ck_open(k, "Concat: one thread per output element");
  k->block[0] = EW_THREADS;
  k->grid[0] = cuda_blocks_for(ny, EW_THREADS);
  ck_line(k, "ONNXC_CUDA_FOR(i, %lld) {", LL(ny));
  ck_line(k, "  const int64_t o = i / %lld, a = i / %lld %% %lld, r = i %% %lld;", LL(total * inner), LL(inner),
        LL(total), LL(inner));
  ck_line(k, "  (void)o;");
  int64_t off = 0;
  bool first = true;
  for (int i = 0; i < n->n_in; i++) {
    int64_t len = n->in[i]->shape.d[ax];
    if (len == 0)
      continue;
    ck_line(k, "  %sif (a < %lld)", first ? "" : "else ", LL(off + len));
    ck_line(k, "    Y0[i] = X%d[(o * %lld + a - %lld) * %lld + r];", i, LL(len), LL(off), LL(inner));
    first = false;
    off += len;
  }
  ck_line(k, "}");
  ck_close(k);
  return 1;
}

static int emit_gather(CudaKernel *k, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  int64_t ny, ni;
  int ax;
  DType it = n->in[1]->dt;
  if (dtype_bits(n->in[0]->dt) < 8 || (it != DT_I32 && it != DT_I64) || !numel(n->out[0], &ny) || ny == 0 ||
      !numel(n->in[1], &ni) || ni == 0 || !shape_axis(ir_attr_int(n, "axis", 0), xs->rank, &ax))
    return 0;
  int64_t inner = prod(xs, ax + 1, xs->rank), dim = xs->d[ax];
  ck_open(k, "Gather: one thread per output element; an index out of range reports ONNXC_ERR_BAD_INDEX");
  k->block[0] = EW_THREADS;
  k->grid[0] = cuda_blocks_for(ny, EW_THREADS);
  ck_line(k, "ONNXC_CUDA_FOR(i, %lld) {", LL(ny));
  ck_line(k, "  const int64_t o = i / %lld, j = i / %lld %% %lld, r = i %% %lld;", LL(ni * inner), LL(inner), LL(ni),
        LL(inner));
  ck_line(k, "  int64_t idx = (int64_t)X1[j];");
  ck_line(k, "  if (idx < 0)");
  ck_line(k, "    idx += %lld;", LL(dim));
  ck_line(k, "  if (idx < 0 || idx >= %lld) {", LL(dim));
  ck_line(k, "    onnxc_cuda_report(onnxc_status, ONNXC_ERR_BAD_INDEX);");
  ck_line(k, "    continue;");
  ck_line(k, "  }");
  ck_line(k, "  Y0[i] = X0[(o * %lld + idx) * %lld + r];", LL(dim), LL(inner));
  ck_line(k, "}");
  ck_close(k);
  return 1;
}

/* ---- LayerNormalization, RMSNormalization: one block per row ------------------------------ */

/* Sums `var` (a double) over the block into every thread's `var`. */
static void block_sum(CudaKernel *k, const char *var) {
  ck_line(k, "red[threadIdx.x] = %s;", var);
  ck_line(k, "__syncthreads();");
  ck_line(k, "for (int h = blockDim.x / 2; h > 0; h /= 2) {");
  ck_line(k, "  if ((int)threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];");
  ck_line(k, "  __syncthreads();");
  ck_line(k, "}");
  ck_line(k, "%s = red[0];", var);
  ck_line(k, "__syncthreads();");
}

static int emit_layer_rms(CudaKernel *k, const Node *n, bool centered) {
  const Shape *xs = &n->in[0]->shape;
  DType tx = n->in[0]->dt, ty = n->out[0]->dt;
  int64_t nx, np, nb = 0;
  int ax;
  if (dtype_bits(tx) < 16 || !dtype_is_float(tx) || !shape_numel(xs, &nx) || nx == 0 ||
      !shape_axis(ir_attr_int(n, "axis", -1), xs->rank, &ax) || !numel(n->in[1], &np))
    return 0;
  int64_t outer = prod(xs, 0, ax), len = prod(xs, ax, xs->rank);
  bool bias = centered && ir_has_input(n, 2);
  if (np != len || (bias && (!numel(n->in[2], &nb) || nb != len)) || outer > 2147483647)
    return 0; /* parameters broadcast over part of a row: the fallback handles it */
  char eps[64];
  ec_literal(DT_F64, ir_attr_float(n, "epsilon", 1e-5f), eps, sizeof eps);
  ck_open(k, centered ? "LayerNormalization: one block per row, block reductions (double)"
                          : "RMSNormalization: one block per row, block reduction (double)");
  k->block[0] = ROW_THREADS;
  k->grid[0] = outer;
  Buf ld, st, ex;
  buf_init(&ld);
  buf_init(&st);
  buf_init(&ex);
  ck_line(k, "__shared__ double red[%d];", ROW_THREADS);
  ck_line(k, "const int64_t o = blockIdx.x;");
  ck_line(k, "%s *y = Y0 + o * %lld;", dtype_ctype(ty), LL(len));
  if (ir_attr_int(n, "onnxc.fused_inputs", 0) == 1) {
    /* the residual Add before it (passes/fuse_norm.c): the row's sum goes to
     * the output row, normalized there in place */
    ck_line(k, "for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x)", LL(len));
    ck_line(k, "  y[j] = X0[o * %lld + j] + X%d[o * %lld + j];", LL(len), n->n_in - 1, LL(len));
    ck_line(k, "__syncthreads();");
    ck_line(k, "const %s *x = y;", dtype_ctype(tx));
  } else {
    ck_line(k, "const %s *x = X0 + o * %lld;", dtype_ctype(tx), LL(len));
  }
  ec_ew_load(&ld, tx, DT_F64, "x[j]");
  ck_line(k, "double mean = 0, ss = 0;");
  if (centered) {
    ck_line(k, "for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x)", LL(len));
    ck_line(k, "  mean += %s;", ld.s);
    block_sum(k, "mean");
    ck_line(k, "mean /= %lld;", LL(len));
  }
  ck_line(k, "for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x) {", LL(len));
  ck_line(k, "  const double d = %s - mean;", ld.s);
  ck_line(k, "  ss += d * d;");
  ck_line(k, "}");
  block_sum(k, "ss");
  ck_line(k, "const double inv = 1.0 / sqrt(ss / %lld + %s);", LL(len), eps);
  buf_printf(&ex, "(%s - mean) * inv * ", ld.s);
  ec_ew_load(&ex, n->in[1]->dt, DT_F64, "X1[j]");
  if (bias) {
    buf_puts(&ex, " + ");
    ec_ew_load(&ex, n->in[2]->dt, DT_F64, "X2[j]");
  }
  ec_ew_store(&st, DT_F64, ty, ex.s);
  ck_line(k, "for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x)", LL(len));
  ck_line(k, "  y[j] = %s;", st.s);
  for (int i = 1; centered && i <= 2; i++)
    if (ec_has_output(n, i)) {
      st.len = 0;
      buf_puts(&st, "");
      ec_ew_store(&st, DT_F64, n->out[i]->dt, i == 1 ? "mean" : "inv");
      ck_line(k, "if (threadIdx.x == 0)");
      ck_line(k, "  Y%d[o] = %s;", i, st.s);
    }
  ck_close(k);
  buf_free(&ld);
  buf_free(&st);
  buf_free(&ex);
  return 1;
}

/* ---- Reduce* (f32/f64): one block per output element ---------------------------------- */

static int emit_reduce(CudaKernel *k, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  bool mask[IR_MAX_RANK], noop = false;
  int64_t nx, ny;
  bool global = n->op == OP_GlobalAveragePool || n->op == OP_GlobalMaxPool;
  if (global)
    for (int i = 0; i < xs->rank; i++)
      mask[i] = i >= 2; /* the spatial dims */
  if ((t != DT_F32 && t != DT_F64) || !shape_numel(xs, &nx) || !shape_numel(&n->out[0]->shape, &ny) || nx == 0 ||
      ny == 0 || ny > 2147483647 || (!global && (!ec_reduce_mask(n, xs->rank, mask, &noop) || noop)))
    return 0;
  bool mx = n->op == OP_ReduceMax || n->op == OP_GlobalMaxPool, mn = n->op == OP_ReduceMin;
  const char *term = "v", *fin = "a";
  switch (n->op) {
  case OP_ReduceSum: break;
  case OP_ReduceMax: break;
  case OP_ReduceMin: break;
  case OP_GlobalMaxPool: break;
  case OP_GlobalAveragePool:
  case OP_ReduceMean: fin = "a / (double)COUNT"; break;
  case OP_ReduceSumSquare: term = "v * v"; break;
  case OP_ReduceL1: term = "fabs(v)"; break;
  case OP_ReduceL2: term = "v * v"; fin = "sqrt(a)"; break;
  default: return 0;
  }
  int64_t count = nx / ny, stride[IR_MAX_RANK], acc = 1;
  for (int i = xs->rank - 1; i >= 0; i--) {
    stride[i] = acc;
    acc *= xs->d[i];
  }
  /* Max/Min compare in the input type and keep NaN; the sums accumulate in double. */
  const char *ct = mx || mn ? dtype_ctype(t) : "double";
  char init[64];
  if (mx || mn)
    snprintf(init, sizeof init, "(%s)(%sINFINITY)", ct, mx ? "-" : "");
  else
    snprintf(init, sizeof init, "0.0");
  char buf[96];
  snprintf(buf, sizeof buf, "%s: one block per output element, block reduction", n->op_type);
  ck_open(k, buf);
  k->block[0] = ROW_THREADS;
  k->grid[0] = ny;
  ck_line(k, "__shared__ %s red[%d];", ct, ROW_THREADS);
  ck_line(k, "int64_t q = blockIdx.x, base = 0;");
  ck_line(k, "(void)q;");
  for (int d = xs->rank - 1; d >= 0; d--)
    if (!mask[d] && xs->d[d] != 1) {
      ck_line(k, "base += (q %% %lld) * %lld;", LL(xs->d[d]), LL(stride[d]));
      ck_line(k, "q /= %lld;", LL(xs->d[d]));
    }
  ck_line(k, "%s a = %s;", ct, init);
  ck_line(k, "for (int64_t r = threadIdx.x; r < %lld; r += blockDim.x) {", LL(count));
  ck_line(k, "  int64_t off = base, t = r;");
  for (int d = xs->rank - 1; d >= 0; d--)
    if (mask[d] && xs->d[d] != 1) {
      ck_line(k, "  off += (t %% %lld) * %lld;", LL(xs->d[d]), LL(stride[d]));
      ck_line(k, "  t /= %lld;", LL(xs->d[d]));
    }
  ck_line(k, "  const %s v = (%s)X0[off];", ct, ct);
  if (mx || mn)
    ck_line(k, "  a = (v %s a || v != v) ? v : a;", mx ? ">" : "<");
  else
    ck_line(k, "  a += %s;", term);
  ck_line(k, "}");
  ck_line(k, "red[threadIdx.x] = a;");
  ck_line(k, "__syncthreads();");
  ck_line(k, "for (int h = blockDim.x / 2; h > 0; h /= 2) {");
  ck_line(k, "  if ((int)threadIdx.x < h) {");
  ck_line(k, "    const %s v = red[threadIdx.x + h];", ct);
  if (mx || mn)
    ck_line(k, "    red[threadIdx.x] = (v %s red[threadIdx.x] || v != v) ? v : red[threadIdx.x];", mx ? ">" : "<");
  else
    ck_line(k, "    red[threadIdx.x] += v;");
  ck_line(k, "  }");
  ck_line(k, "  __syncthreads();");
  ck_line(k, "}");
  ck_line(k, "if (threadIdx.x == 0) {");
  ck_line(k, "  const %s a0 = red[0];", ct);
  Buf f;
  buf_init(&f);
  for (const char *p = fin; *p; p++) {
    if (strncmp(p, "COUNT", 5) == 0) {
      buf_printf(&f, "%lld", LL(count));
      p += 4;
    } else if (*p == 'a' && (p == fin || p[-1] == '(') && !isalnum((unsigned char)p[1])) {
      buf_puts(&f, "a0");
    } else {
      buf_putc(&f, *p);
    }
  }
  ck_line(k, "  Y0[blockIdx.x] = (%s)(%s);", dtype_ctype(t), f.s);
  buf_free(&f);
  ck_line(k, "}");
  ck_close(k);
  return 1;
}

int cuda_emit_parallel(CudaKernel *k, const Node *n) {
  if (ir_ops[n->op].expr)
    return emit_elementwise(k, n);
  switch (n->op) {
  case OP_FusedElementwise:
    return emit_fused(k, n);
  case OP_Gemm:
    return emit_gemm(k, n);
  case OP_MatMul:
    return emit_matmul(k, n);
  case OP_Conv:
    return cuda_emit_conv(k, n);
  case OP_ConvTranspose:
    return cuda_emit_convt(k, n);
  case OP_MaxPool:
    return cuda_emit_pool(k, n, true);
  case OP_AveragePool:
    return cuda_emit_pool(k, n, false);
  case OP_Softmax:
    return emit_softmax(k, n, false);
  case OP_LogSoftmax:
    return emit_softmax(k, n, true);
  case OP_Transpose:
    return emit_transpose(k, n);
  case OP_LRN:
    return emit_lrn(k, n);
  case OP_Expand:
    return emit_expand(k, n);
  case OP_LayerNormalization:
    return emit_layer_rms(k, n, true);
  case OP_RMSNormalization:
    return emit_layer_rms(k, n, false);
  case OP_Concat:
    return emit_concat(k, n);
  case OP_Gather:
    return emit_gather(k, n);
  case OP_ReduceSum:
  case OP_ReduceMean:
  case OP_ReduceMax:
  case OP_ReduceMin:
  case OP_ReduceSumSquare:
  case OP_ReduceL1:
  case OP_ReduceL2:
  case OP_GlobalAveragePool:
  case OP_GlobalMaxPool:
    return emit_reduce(k, n);
  default:
    return 0;
  }
}
