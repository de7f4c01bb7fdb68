/* emit_misc2.c - C kernels of the opsg family's assorted ops.
 *
 * CumProd views the input as [outer, L, inner] and keeps one product per
 * column of a block of at most BLOCK inner columns, so the inner loop is
 * contiguous; each element is read before its output is written (in place is
 * safe). Integers multiply in the unsigned type (wrapping, no UB). Det
 * factors each matrix by Gaussian elimination with partial pivoting in double
 * (a stack copy up to DET_STACK_M, else the node's scratch). BitCast copies
 * bytes. CenterCropPad and Col2Im run nested loops over static extents;
 * TensorScatter copies the cache then writes each batch's update rows at its
 * write index (modulo the sequence length in circular mode; out of range is
 * ONNXC_ERR_BAD_INDEX in linear mode).
 */
#include "codegen.h"

#include <stdio.h>
#include <string.h>

#define LL(x) ((long long)(x))
#define BLOCK 64       /* CumProd: inner columns accumulated together */
#define DET_STACK_M 16 /* Det: matrices up to this size are factored on the stack */

/* ---- helpers --------------------------------------------------------------- */

static int64_t prod_of(const int64_t *v, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++)
    p *= v[i];
  return p;
}

/* `const CT name = src;` with src of type `from` loaded as ct. */
static void load(EmitC *e, const char *name, DType from, DType ct, const char *src) {
  Buf b;
  buf_init(&b);
  ec_ew_load(&b, from, ct, src);
  ec_line(e, "const %s %s = %s;", dtype_ctype(ct), name, b.s);
  buf_free(&b);
}

/* ---- CumProd --------------------------------------------------------------------- */

bool emitc_CumProd(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  int axis;
  if (!ec_axis_input(e, n, xs->rank, &axis))
    return false;
  if (ec_numel(n->out[0]) == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  bool exclusive = ir_attr_int(n, "exclusive", 0) != 0, reverse = ir_attr_int(n, "reverse", 0) != 0;
  int64_t outer = ec_prod(xs, 0, axis), len = xs->d[axis], inner = ec_prod(xs, axis + 1, xs->rank);
  int64_t bw = inner < BLOCK ? inner : BLOCK;
  DType ct = dtype_is_float(t) ? ec_float_ct(t) : dtype_bits(t) > 32 ? DT_U64 : DT_U32;
  const char *CT = dtype_ctype(ct);
  ec_line(e, "for (ptrdiff_t o = 0; o < %lld; o++) {", LL(outer));
  ec_line(e, "for (ptrdiff_t c0 = 0; c0 < %lld; c0 += %lld) {", LL(inner), LL(bw));
  ec_line(e, "const ptrdiff_t cw = %lld - c0 < %lld ? %lld - c0 : %lld;", LL(inner), LL(bw), LL(inner), LL(bw));
  ec_line(e, "const ptrdiff_t base = o * %lld + c0;", LL(len * inner));
  ec_line(e, "%s acc[%lld];", CT, LL(bw));
  ec_line(e, "for (ptrdiff_t c = 0; c < cw; c++) acc[c] = 1;");
  if (reverse)
    ec_line(e, "for (ptrdiff_t i = %lld; i >= 0; i--) {", LL(len - 1));
  else
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", LL(len));
  ec_line(e, "for (ptrdiff_t c = 0; c < cw; c++) {");
  ec_line(e, "const ptrdiff_t k = base + i * %lld + c;", LL(inner));
  /* Read before write: the kernel may run in place. */
  load(e, "v", t, ct, "X0[k]");
  if (!exclusive)
    ec_line(e, "acc[c] *= v;");
  ec_store_line(e, "Y0[k]", ct, t, "acc[c]");
  if (exclusive)
    ec_line(e, "acc[c] *= v;");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- Det ----------------------------------------------------------------------- */

bool emitc_Det(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  int64_t m = xs->d[xs->rank - 1], batch = ec_prod(xs, 0, xs->rank - 2);
  int64_t scratch = e->plan->scratch_size ? e->plan->scratch_size[n->id] : 0;
  if (batch == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  if (m > DET_STACK_M && scratch < m * m * (int64_t)sizeof(double))
    return diag_error(e->d, n, "internal: Det of %lldx%lld matrices needs %lld bytes of scratch, the plan gives %lld",
                      LL(m), LL(m), LL(m * m * 8), LL(scratch));
  DType ct = ec_float_ct(t);
  if (m == 0) {   /* the determinant of an empty matrix is 1 */
    ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", LL(batch));
    ec_store_line(e, "Y0[b]", DT_F64, t, "1.0");
    ec_line(e, "}");
    return true;
  }
  if (m > DET_STACK_M)
    ec_line(e, "double *a = (double *)(void *)S;");
  else
    ec_line(e, "double a[%lld];", LL(m * m));
  ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", LL(batch));
  ec_line(e, "double det = 1.0;");
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", LL(m * m));
  char src[64];
  snprintf(src, sizeof src, "X0[b * %lld + i]", LL(m * m));
  load(e, "v", t, ct, src);
  ec_line(e, "a[i] = (double)v;");
  ec_line(e, "}");
  ec_line(e, "for (ptrdiff_t k = 0; k < %lld; k++) {", LL(m));
  ec_line(e, "ptrdiff_t p = k;");
  ec_line(e, "for (ptrdiff_t i = k + 1; i < %lld; i++)", LL(m));
  ec_line(e, "  if (fabs(a[i * %lld + k]) > fabs(a[p * %lld + k])) p = i;", LL(m), LL(m));
  ec_line(e, "if (a[p * %lld + k] == 0.0) { det = 0.0; break; }", LL(m));
  ec_line(e, "if (p != k) {");
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", LL(m));
  ec_line(e, "const double s = a[k * %lld + j]; a[k * %lld + j] = a[p * %lld + j]; a[p * %lld + j] = s;", LL(m),
          LL(m), LL(m), LL(m));
  ec_line(e, "}");
  ec_line(e, "det = -det;");
  ec_line(e, "}");
  ec_line(e, "const double piv = a[k * %lld + k];", LL(m));
  ec_line(e, "det *= piv;");
  ec_line(e, "for (ptrdiff_t i = k + 1; i < %lld; i++) {", LL(m));
  ec_line(e, "const double f = a[i * %lld + k] / piv;", LL(m));
  ec_line(e, "for (ptrdiff_t j = k + 1; j < %lld; j++) a[i * %lld + j] -= f * a[k * %lld + j];", LL(m), LL(m),
          LL(m));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_store_line(e, "Y0[b]", DT_F64, t, "det");
  ec_line(e, "}");
  return true;
}

/* ---- BitCast ------------------------------------------------------------------- */

bool emitc_BitCast(EmitC *e, const Node *n) {
  int64_t bytes;
  if (!dtype_bytes(n->in[0]->dt, ec_numel(n->in[0]), &bytes))
    return diag_error(e->d, n, "input 0 is too large");
  if (bytes == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  /* Bytes through unsigned char: allowed for any object type, and gcc makes it a memcpy. */
  ec_line(e, "const unsigned char *src = (const unsigned char *)(const void *)X0;");
  ec_line(e, "unsigned char *dst = (unsigned char *)(void *)Y0;");
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) dst[i] = src[i];", LL(bytes));
  return true;
}

/* ---- CenterCropPad ---------------------------------------------------------------- */

bool emitc_CenterCropPad(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  int r = xs->rank;
  if (ec_numel(n->out[0]) == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  int64_t xst[IR_MAX_RANK];
  ec_strides(xs, xst);
  /* Source index = output index + off: a crop starts at floor((in - out) / 2),
   * a pad puts floor((out - in) / 2) zeros first (the odd one goes last). */
  ec_line(e, "ptrdiff_t o = 0;");
  for (int i = 0; i < r; i++) {
    int64_t off = xs->d[i] >= ys->d[i] ? (xs->d[i] - ys->d[i]) / 2 : -((ys->d[i] - xs->d[i]) / 2);
    ec_line(e, "for (ptrdiff_t i%d = 0; i%d < %lld; i%d++) {", i, i, LL(ys->d[i]), i);
    ec_line(e, "const ptrdiff_t s%d = i%d + %lld;", i, i, LL(off));
    ec_line(e, "const int v%d = s%d >= 0 && s%d < %lld;", i, i, i, LL(xs->d[i]));
  }
  Buf ok, idx;
  buf_init(&ok);
  buf_init(&idx);
  buf_puts(&ok, "1");
  buf_puts(&idx, "0");
  for (int i = 0; i < r; i++) {
    buf_printf(&ok, " && v%d", i);
    buf_printf(&idx, " + s%d * %lld", i, LL(xst[i]));
  }
  if (r == 0)
    ec_line(e, "Y0[0] = X0[0];");
  else
    ec_line(e, "Y0[o++] = (%s) ? X0[%s] : (%s)0;", ok.s, idx.s, dtype_ctype(n->out[0]->dt));
  buf_free(&ok);
  buf_free(&idx);
  for (int i = 0; i < r; i++)
    ec_line(e, "}");
  if (r == 0)
    ec_line(e, "(void)o;");
  return true;
}

/* ---- Col2Im ------------------------------------------------------------------------- */

bool emitc_Col2Im(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  const Value *bv = n->in[2];
  DType t = n->out[0]->dt;
  int k = ys->rank - 2;
  if (bv->kind != VK_CONST || bv->konst->numel != k)
    return diag_error(e->d, n, "input 2 (block_shape) must be a compile-time constant");
  int64_t blk[IR_MAX_RANK], strides[IR_MAX_RANK], dil[IR_MAX_RANK], pads[2 * IR_MAX_RANK], grid[IR_MAX_RANK];
  int cnt;
  const int64_t *a;
  for (int i = 0; i < k; i++) {
    blk[i] = tensor_get_i64(bv->konst, i);
    strides[i] = dil[i] = 1;
    pads[i] = pads[k + i] = 0;
  }
  if ((a = ir_attr_ints(n, "strides", &cnt)) && cnt == k)
    memcpy(strides, a, (size_t)k * sizeof *a);
  if ((a = ir_attr_ints(n, "dilations", &cnt)) && cnt == k)
    memcpy(dil, a, (size_t)k * sizeof *a);
  if ((a = ir_attr_ints(n, "pads", &cnt)) && cnt == 2 * k)
    memcpy(pads, a, (size_t)(2 * k) * sizeof *a);
  int64_t bprod = 1, L = 1;
  for (int i = 0; i < k; i++) {
    bprod *= blk[i];
    grid[i] = (ys->d[2 + i] + pads[i] + pads[k + i] - dil[i] * (blk[i] - 1) - 1) / strides[i] + 1;
    L *= grid[i];
  }
  IR_ASSERT(L == xs->d[2]);
  int64_t total = ec_numel(n->out[0]), img = ec_prod(ys, 2, ys->rank);
  if (total == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  bool half = t == DT_F16 || t == DT_BF16;
  DType ct = dtype_is_float(t) ? ec_float_ct(t) : t;
  /* Integer sums wrap in the unsigned type of the same width (no UB). */
  const char *UT = dtype_is_signed(t) && !dtype_is_float(t) ? (dtype_bits(t) > 32 ? "uint64_t" : "uint32_t") : NULL;
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[i] = 0;", LL(total));
  ec_line(e, "for (ptrdiff_t nc = 0; nc < %lld; nc++) {", LL(ys->d[0] * ys->d[1]));
  ec_line(e, "const %s *x = X0 + nc * %lld;", dtype_ctype(t), LL(bprod * L));
  ec_line(e, "%s *y = Y0 + nc * %lld;", dtype_ctype(t), LL(img));
  Buf kf, gf, yi, ok;
  buf_init(&kf);
  buf_init(&gf);
  buf_init(&yi);
  buf_init(&ok);
  buf_puts(&kf, "0");
  buf_puts(&gf, "0");
  buf_puts(&yi, "0");
  buf_puts(&ok, "1");
  for (int i = 0; i < k; i++)
    ec_line(e, "for (ptrdiff_t k%d = 0; k%d < %lld; k%d++) {", i, i, LL(blk[i]), i);
  for (int i = 0; i < k; i++) {
    ec_line(e, "for (ptrdiff_t g%d = 0; g%d < %lld; g%d++) {", i, i, LL(grid[i]), i);
    ec_line(e, "const ptrdiff_t p%d = g%d * %lld - %lld + k%d * %lld;", i, i, LL(strides[i]), LL(pads[i]), i,
            LL(dil[i]));
    /* Row-major flat indices as sums of index * stride. */
    int64_t ks = prod_of(blk, i + 1, k), gs = prod_of(grid, i + 1, k), ps = ec_prod(ys, 3 + i, ys->rank);
    buf_printf(&kf, " + k%d * %lld", i, LL(ks));
    buf_printf(&gf, " + g%d * %lld", i, LL(gs));
    buf_printf(&yi, " + p%d * %lld", i, LL(ps));
    buf_printf(&ok, " && p%d >= 0 && p%d < %lld", i, i, LL(ys->d[2 + i]));
  }
  ec_line(e, "if (%s) {", ok.s);
  ec_line(e, "const ptrdiff_t yi = %s;", yi.s);
  ec_line(e, "const ptrdiff_t xi = (%s) * %lld + %s;", kf.s, LL(L), gf.s);
  if (UT) {
    ec_line(e, "y[yi] = (%s)((%s)y[yi] + (%s)x[xi]);", dtype_ctype(t), UT, UT);
  } else if (half) {
    load(e, "acc", t, ct, "y[yi]");
    load(e, "v", t, ct, "x[xi]");
    ec_store_line(e, "y[yi]", ct, t, "acc + v");
  } else {
    ec_line(e, "y[yi] = (%s)(y[yi] + x[xi]);", dtype_ctype(t));
  }
  ec_line(e, "}");
  for (int i = 0; i < 2 * k; i++)
    ec_line(e, "}");
  ec_line(e, "}");
  buf_free(&kf);
  buf_free(&gf);
  buf_free(&yi);
  buf_free(&ok);
  return true;
}

/* ---- TensorScatter ------------------------------------------------------------------ */

bool emitc_TensorScatter(EmitC *e, const Node *n) {
  const Shape *ps = &n->in[0]->shape, *us = &n->in[1]->shape;
  int axis;
  IR_ASSERT(shape_axis(ir_attr_int(n, "axis", -2), ps->rank, &axis));
  bool circular = strcmp(ir_attr_str(n, "mode", "linear"), "circular") == 0;
  int64_t total = ec_numel(n->out[0]);
  if (total == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  int64_t batch = ps->d[0], mid = ec_prod(ps, 1, axis), max_seq = ps->d[axis], seq = us->d[axis];
  int64_t inner = ec_prod(ps, axis + 1, ps->rank);
  /* In place X0 == Y0 and the copy is a no-op; either way each element is read first. */
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[i] = X0[i];", LL(total));
  if (ec_numel(n->in[1]) == 0)
    return true;
  ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", LL(batch));
  if (ir_has_input(n, 2))
    ec_line(e, "const int64_t w = X2[b];");
  else
    ec_line(e, "const int64_t w = 0;");
  if (!circular)
    ec_line(e, "if (w < 0 || w > %lld) return ONNXC_ERR_BAD_INDEX;", LL(max_seq - seq));
  ec_line(e, "for (ptrdiff_t m = 0; m < %lld; m++) {", LL(mid));
  ec_line(e, "const ptrdiff_t pm = b * %lld + m;", LL(mid));
  ec_line(e, "for (ptrdiff_t s = 0; s < %lld; s++) {", LL(seq));
  if (circular) {
    /* w may be any int64: reduce it first so w + s cannot overflow. */
    ec_line(e, "int64_t q = w %% %lld;", LL(max_seq));
    ec_line(e, "if (q < 0) q += %lld;", LL(max_seq));
    ec_line(e, "q = (q + s) %% %lld;", LL(max_seq));
  } else {
    ec_line(e, "const int64_t q = w + s;");
  }
  ec_line(e, "const %s *u = X1 + (pm * %lld + s) * %lld;", dtype_ctype(n->in[1]->dt), LL(seq), LL(inner));
  ec_line(e, "%s *y = Y0 + (pm * %lld + (ptrdiff_t)q) * %lld;", dtype_ctype(n->out[0]->dt), LL(max_seq), LL(inner));
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) y[j] = u[j];", LL(inner));
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}
