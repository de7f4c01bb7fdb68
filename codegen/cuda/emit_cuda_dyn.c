/* emit_cuda_dyn.c - the CUDA target's kernels with extents known only at run
 * time (-D NAME=LO..HI, docs/dynamic-shapes.md).
 *
 * A node whose shapes involve a range symbol gets one of these instead of its
 * static kernel. Every extent is a C expression over `dims[]`, printed from
 * the value's DimExpr (dx_print); the kernel receives the run's dims by value,
 * one `int64_t onnxc_d<k>` parameter per symbol (user ranges, then the
 * derived floor divisions the host computed before the launch), and rebuilds
 * the array `dims[]` from them, so the same text serves the kernel and the
 * host: the launch configuration (k->rgrid) is an expression over the host's
 * `dims[]`, evaluated in NAME_run_dims before each launch. No kernel reads
 * the dims from device memory.
 *
 *   elementwise rows (broadcasting), Cast, Where, FusedElementwise, Expand,
 *   BatchNormalization, copies, Range, ConstantOfShape, Transpose, Slice,
 *   Gather, Concat    one thread per output element, grid-stride loop, the
 *                     output index unravelled over the run-time dims
 *   MatMul, Gemm      16x16 shared-memory tiles, batches on grid z, run-time
 *                     M, N, K; onnxc.bias and the fused epilogue in the store
 *   Softmax (last axis, with a fused prologue), LayerNormalization /
 *   RMSNormalization (with the fused residual), Reduce* over one axis,
 *   GlobalAverage/MaxPool   one block per row (grid-stride over rows), block
 *                     reductions
 *   Conv (1-D/2-D, groups, dilations, pads incl. SAME at run time, bias,
 *   fused epilogue), MaxPool / AveragePool   one thread per output element
 *   valued nodes (shape arithmetic: Shape, Gather of a shape...)   one thread
 *                     writes the few extents
 * Anything else returns 0: emit_cuda.c then runs emit_dyn.c's C body in one
 * thread (the ranged fallback).
 */
#include "cuda_emit.h"
#include "gemm.h"
#include "window.h"

#include <stdlib.h>
#include <string.h>

#define LL(x) ((long long)(x))
#define EW_THREADS 256
#define ROW_THREADS 256
#define TILE 16

typedef struct R {
  CudaKernel *k;
  Arena *a;
  const Graph *root;
} R;

static const char *ext(R *x, const DimExpr *v) {
  int64_t c;
  if (!v)
    return NULL;
  if (dx_is_const(v, &c))
    return arena_printf(x->a, "%lld", LL(c));
  Buf b;
  buf_init(&b);
  dx_print(x->root, v, "dims", &b);
  const char *s = arena_printf(x->a, "(%s)", b.s);
  buf_free(&b);
  return s;
}

static const char *rdim(R *x, const Shape *s, int i) { return ext(x, shape_dx(x->a, s, i)); }

static const char *rprod(R *x, const Shape *s, int lo, int hi) {
  const DimExpr *p = dx_const(x->a, 1);
  for (int i = lo; p && i < hi; i++) {
    const DimExpr *d = shape_dx(x->a, s, i);
    p = d ? dx_mul(x->a, p, d) : NULL;
  }
  return ext(x, p);
}

static bool all_known(R *x, const Shape *s) { return rprod(x, s, 0, s->rank) != NULL; }

/* Dim i of s is the constant 1 (broadcast). */
static bool is_one(const Shape *s, int i) { return s->d[i] == 1; }

/* The host's launch configuration: blocks for n work items of `per` each. */
static const char *host_blocks(R *x, const char *n, int per, int64_t max) {
  return arena_printf(x->a, "grid_of(%s, %d, %lld)", n, per, LL(max));
}

static void ropen(R *x, const char *what) {
  CudaKernel *k = x->k;
  ck_open(k, what);
  Buf b;
  buf_init(&b);
  buf_printf(&b, "const int64_t dims[%d] = {", x->root->n_syms);
  for (int i = 0; i < x->root->n_syms; i++)
    buf_printf(&b, "%sonnxc_d%d", i ? ", " : "", i);
  buf_puts(&b, "};");
  ck_line(k, "%s", b.s);
  ck_line(k, "(void)dims;");
  buf_free(&b);
}

/* One thread per element of an n-element output (grid-stride). */
static void flat_launch(R *x, const char *n) {
  x->k->block[0] = EW_THREADS;
  x->k->rgrid[0] = host_blocks(x, n, EW_THREADS, 65535);
}

/* Inside a loop over flat output index `i` of ys: i0..i(r-1) unravelled. */
static void unravel(R *x, const Shape *ys, const char *var, const char *ind) {
  int r = ys->rank;
  ck_line(x->k, "%sint64_t q = %s;", ind, var);
  for (int j = r - 1; j >= 0; j--) {
    const char *d = rdim(x, ys, j);
    ck_line(x->k, "%sconst int64_t i%d = q %% %s;", ind, j, d);
    ck_line(x->k, "%s(void)i%d;", ind, j);
    if (j)
      ck_line(x->k, "%sq /= %s;", ind, d);
  }
  ck_line(x->k, "%s(void)q;", ind);
}

/* Offset into `is` (broadcast to output rank r) for output indices i0..,
 * over dims [0, upto). */
static const char *bcast_off(R *x, const Shape *is, int r, int upto) {
  Buf b;
  buf_init(&b);
  buf_puts(&b, "0");
  int lead = r - is->rank;
  for (int j = 0; j < upto; j++) {
    int t = j - lead;
    if (t < 0 || is_one(is, t))
      continue;
    buf_printf(&b, " + i%d * %s", j, rprod(x, is, t + 1, is->rank));
  }
  const char *s = arena_strdup(x->a, b.s);
  buf_free(&b);
  return s;
}

/* ---- elementwise ----------------------------------------------------------------- */

static int k_elementwise(R *x, const Node *n) {
  const Value *y = n->out[0];
  const Shape *ys = &y->shape;
  int nk = n->n_in, r = ys->rank;
  bool cast = n->op == OP_Cast;
  if ((!cast && ir_ops[n->op].max_in >= 0 && nk > EC_EXPR_MAX_OPS) || dtype_bits(y->dt) < 8 || !all_known(x, ys))
    return 0;
  for (int i = 0; i < nk; i++)
    if (!ir_has_input(n, i) || dtype_bits(n->in[i]->dt) < 8 || !all_known(x, &n->in[i]->shape))
      return 0;
  DType compute = cast ? (n->in[0]->dt == DT_F16 || n->in[0]->dt == DT_BF16 ? DT_F32 : n->in[0]->dt)
                       : ec_ew_compute_type(n);
  if (!cast && !ir_ops[n->op].expr)
    return 0;
  const char *ct = dtype_ctype(compute);
  const char *ny = rprod(x, ys, 0, r);
  char buf[96];
  snprintf(buf, sizeof buf, "elementwise %s, run-time extents: one thread per element", n->op_type);
  ropen(x, buf);
  flat_launch(x, ny);
  CudaKernel *k = x->k;
  ck_line(k, "ONNXC_CUDA_FOR(i, %s) {", ny);
  unravel(x, ys, "i", "  ");
  Buf ld, ex, st, src;
  buf_init(&ld);
  buf_init(&ex);
  buf_init(&st);
  buf_init(&src);
  for (int i = 0; i < nk; i++) {
    ld.len = 0;
    src.len = 0;
    buf_puts(&ld, "");
    buf_printf(&src, "X%d[%s]", i, bcast_off(x, &n->in[i]->shape, r, r));
    ec_ew_load(&ld, n->in[i]->dt, compute, src.s);
    ck_line(k, "  const %s a%d = %s;", ct, i, ld.s);
  }
  bool ok = true;
  buf_puts(&ex, "");
  if (cast) {
    buf_puts(&ex, "a0");
  } else if (ir_ops[n->op].max_in < 0) { /* variadic: folded left */
    const char *tmpl = ec_ew_template(n, compute);
    char names[2][16];
    const char *ops[2] = {"r", names[1]};
    ck_line(k, "  %s r = a0;", ct);
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
    char names[EC_EXPR_MAX_OPS][16];
    const char *ops[EC_EXPR_MAX_OPS];
    for (int i = 0; i < nk; i++) {
      snprintf(names[i], sizeof names[i], "a%d", i);
      ops[i] = names[i];
    }
    ok = ec_expand_expr(k->d, n, ec_ew_template(n, compute), ops, nk, compute, &ex);
  }
  if (ok) {
    ec_ew_store(&st, compute, y->dt, ex.s);
    ck_line(k, "  Y0[i] = %s;", st.s);
  }
  ck_line(k, "}");
  ck_close(k);
  buf_free(&ld);
  buf_free(&ex);
  buf_free(&st);
  buf_free(&src);
  return ok ? 1 : -1;
}

/* A fused elementwise chain: the kernel description's body (kernel_desc.c). */
static int k_fused(R *x, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  int r = ys->rank;
  Kdesc kd;
  if (ir_attr(n, "onnxc.views") || n->n_out != 1 || !all_known(x, ys) || !kd_build(n, &kd, x->k->d))
    return 0;
  for (int i = 0; i < n->n_in; i++)
    if (dtype_bits(n->in[i]->dt) < 8 || !all_known(x, &n->in[i]->shape))
      return 0;
  CudaKernel *k = x->k;
  Buf what, ld, src, st, res;
  buf_init(&what);
  buf_init(&ld);
  buf_init(&src);
  buf_init(&st);
  buf_init(&res);
  buf_puts(&what, "fused elementwise, run-time extents, one thread per element: ");
  kd_describe(&kd, &what);
  const char *ny = rprod(x, ys, 0, r);
  ropen(x, what.s);
  flat_launch(x, ny);
  ck_line(k, "ONNXC_CUDA_FOR(i, %s) {", ny);
  unravel(x, ys, "i", "  ");
  for (int i = 0; i < n->n_in; i++) {
    DType to = kd_operand_type(n->in[i]->dt);
    ld.len = 0;
    src.len = 0;
    buf_puts(&ld, "");
    buf_printf(&src, "X%d[%s]", i, bcast_off(x, &n->in[i]->shape, r, r));
    ec_ew_load(&ld, n->in[i]->dt, to, src.s);
    ck_line(k, "  const %s a%d = %s;", dtype_ctype(to), i, ld.s);
  }
  buf_puts(&st, "");
  buf_puts(&res, "");
  bool ok = kd_emit(&kd, false, "    ", &st, &res, k->d);
  if (ok) {
    buf_puts(k->cu, st.s);
    ck_line(k, "  Y0[i] = %s;", res.s);
  }
  ck_line(k, "}");
  ck_close(k);
  buf_free(&what);
  buf_free(&ld);
  buf_free(&src);
  buf_free(&st);
  buf_free(&res);
  return ok ? 1 : -1;
}

/* Expand (the shape operand is valued: only X0 is read). */
static int k_expand(R *x, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  if (dtype_bits(n->in[0]->dt) < 8 || !all_known(x, ys) || !all_known(x, &n->in[0]->shape))
    return 0;
  const char *ny = rprod(x, ys, 0, ys->rank);
  ropen(x, "Expand, run-time extents: one thread per output element");
  flat_launch(x, ny);
  ck_line(x->k, "(void)X1;");
  ck_line(x->k, "ONNXC_CUDA_FOR(i, %s) {", ny);
  unravel(x, ys, "i", "  ");
  ck_line(x->k, "  Y0[i] = X0[%s];", bcast_off(x, &n->in[0]->shape, ys->rank, ys->rank));
  ck_line(x->k, "}");
  ck_close(x->k);
  return 1;
}

static int k_batchnorm(R *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (n->out[0]->dt != DT_F32 || n->n_out > 1 || ir_attr_int(n, "training_mode", 0) || xs->rank < 2 ||
      !all_known(x, xs))
    return 0;
  float eps = ir_attr_float(n, "epsilon", 1e-5f);
  const char *ny = rprod(x, xs, 0, xs->rank);
  ropen(x, "BatchNormalization, run-time extents: one thread per element");
  flat_launch(x, ny);
  ck_line(x->k, "ONNXC_CUDA_FOR(i, %s) {", ny);
  ck_line(x->k, "  const int64_t c = i / %s %% %s;", rprod(x, xs, 2, xs->rank), rdim(x, xs, 1));
  ck_line(x->k, "  const float kk = X1[c] / sqrtf(X4[c] + %.9ef), o = X2[c] - X3[c] * kk;", (double)eps);
  ck_line(x->k, "  Y0[i] = X0[i] * kk + o;");
  ck_line(x->k, "}");
  ck_close(x->k);
  return 1;
}

/* Reshape-like nodes the plan did not elide: a copy of this run's elements. */
static int k_copy(R *x, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  if (dtype_bits(n->out[0]->dt) < 8 || !all_known(x, ys))
    return 0;
  const char *ny = rprod(x, ys, 0, ys->rank);
  ropen(x, "copy, run-time extents: one thread per element");
  flat_launch(x, ny);
  for (int i = 1; i < n->n_in; i++)
    if (ir_has_input(n, i))
      ck_line(x->k, "(void)X%d;", i);
  ck_line(x->k, "ONNXC_CUDA_FOR(i, %s)", ny);
  ck_line(x->k, "  Y0[i] = X0[i];");
  ck_close(x->k);
  return 1;
}

/* A valued node (Shape, Gather of a shape, Concat of dims...): its output is
 * the extents it holds, written by one thread. */
static int k_values(R *x, const Node *n) {
  const Value *y = n->out[0];
  if (!dtype_ctype(y->dt)[0] || dtype_bits(y->dt) < 8)
    return 0;
  ropen(x, "extents known at run time, written by one thread");
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i))
      ck_line(x->k, "(void)X%d;", i);
  ck_line(x->k, "if (blockIdx.x != 0 || threadIdx.x != 0)");
  ck_line(x->k, "  return;");
  for (int i = 0; i < y->n_sval; i++)
    ck_line(x->k, "Y0[%d] = (%s)%s;", i, dtype_ctype(y->dt), ext(x, y->sval[i]));
  ck_close(x->k);
  x->k->block[0] = 1;
  return 1;
}

static int k_range(R *x, const Node *n) {
  DType t = n->out[0]->dt;
  const Shape *ys = &n->out[0]->shape;
  if (t == DT_F16 || t == DT_BF16 || !dtype_ctype(t)[0] || ys->rank != 1 || !all_known(x, ys))
    return 0;
  const char *T = dtype_ctype(t), *ny = rdim(x, ys, 0);
  ropen(x, "Range, run-time extent: one thread per element");
  flat_launch(x, ny);
  ck_line(x->k, "(void)X1;");
  ck_line(x->k, "ONNXC_CUDA_FOR(i, %s)", ny);
  ck_line(x->k, "  Y0[i] = (%s)(X0[0] + (%s)i * X2[0]);", T, T);
  ck_close(x->k);
  return 1;
}

static int k_constant_of_shape(R *x, const Node *n) {
  const Attr *a = ir_attr(n, "value");
  DType t = n->out[0]->dt;
  const Shape *ys = &n->out[0]->shape;
  char lit[64];
  if (t == DT_F16 || t == DT_BF16 || dtype_bits(t) < 8 || !all_known(x, ys))
    return 0;
  if (!a)
    snprintf(lit, sizeof lit, "0.0f");
  else if (dtype_is_float(t))
    ec_literal(t, tensor_get_f64(a->u.t, 0), lit, sizeof lit);
  else
    snprintf(lit, sizeof lit, "(%s)%lldLL", dtype_ctype(t), LL(tensor_get_i64(a->u.t, 0)));
  const char *ny = rprod(x, ys, 0, ys->rank);
  ropen(x, "ConstantOfShape, run-time extents: one thread per element");
  flat_launch(x, ny);
  if (ir_has_input(n, 0))
    ck_line(x->k, "(void)X0;");
  ck_line(x->k, "ONNXC_CUDA_FOR(i, %s)", ny);
  ck_line(x->k, "  Y0[i] = %s;", lit);
  ck_close(x->k);
  return 1;
}

/* ---- movement ------------------------------------------------------------------------ */

static int k_transpose(R *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  int cnt, r = xs->rank;
  if (dtype_bits(n->in[0]->dt) < 8 || r == 0 || !all_known(x, ys) || !all_known(x, xs))
    return 0;
  const int64_t *pa = ir_attr_ints(n, "perm", &cnt);
  const char *ny = rprod(x, ys, 0, r);
  ropen(x, "Transpose, run-time extents: one thread per output element");
  flat_launch(x, ny);
  ck_line(x->k, "ONNXC_CUDA_FOR(i, %s) {", ny);
  unravel(x, ys, "i", "  ");
  Buf src;
  buf_init(&src);
  buf_puts(&src, "0");
  for (int j = 0; j < r; j++) {
    int p = pa && cnt == r ? (int)pa[j] : r - 1 - j;
    buf_printf(&src, " + i%d * %s", j, rprod(x, xs, p + 1, r));
  }
  ck_line(x->k, "  Y0[i] = X0[%s];", src.s);
  buf_free(&src);
  ck_line(x->k, "}");
  ck_close(x->k);
  return 1;
}

/* Input i (a constant or extents) as C text per element; count in *cnt. */
static bool operand_exts(R *x, const Node *n, int i, const char **out, int *cnt, int max) {
  const Value *v = n->in[i];
  if (v->sval) {
    if (v->n_sval > max)
      return false;
    for (int k = 0; k < v->n_sval; k++)
      out[k] = ext(x, v->sval[k]);
    *cnt = v->n_sval;
    return true;
  }
  if (v->kind != VK_CONST || v->konst->numel > max)
    return false;
  for (int64_t k = 0; k < v->konst->numel; k++)
    out[k] = arena_printf(x->a, "%lld", LL(tensor_get_i64(v->konst, k)));
  *cnt = (int)v->konst->numel;
  return true;
}

/* Slice with non-negative starts, or constant ones along an axis listed
 * with a step other than 1 (what emit_dyn.c takes). */
static int k_slice(R *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  const char *st[IR_MAX_RANK], *ax[IR_MAX_RANK], *start[IR_MAX_RANK];
  int ns, na = 0;
  if (dtype_bits(n->in[0]->dt) < 8 || !all_known(x, ys) || !all_known(x, xs))
    return 0;
  for (int j = 0; j < xs->rank; j++)
    start[j] = "0";
  if (!operand_exts(x, n, 1, st, &ns, IR_MAX_RANK) || (ir_has_input(n, 3) && !operand_exts(x, n, 3, ax, &na, IR_MAX_RANK)))
    return 0;
  int64_t step[IR_MAX_RANK], step_of[IR_MAX_RANK];
  for (int j = 0; j < xs->rank; j++)
    step_of[j] = 1;
  for (int k = 0; k < ns; k++)
    step[k] = 1;
  if (ir_has_input(n, 4)) {
    const Value *sp = n->in[4];
    if (sp->kind != VK_CONST || sp->konst->numel != ns)
      return 0;
    for (int k = 0; k < ns; k++)
      if ((step[k] = tensor_get_i64(sp->konst, k)) == 0)
        return 0;
  }
  for (int k = 0; k < ns; k++) {
    int a = k;
    if (na && !shape_axis(strtoll(ax[k], NULL, 10), xs->rank, &a))
      return 0;
    if (step[k] != 1) { /* constant bounds, clamped as emit_dyn.c's k_slice does */
      long long c = strtoll(st[k], NULL, 10), lim = (long long)1 << 40;
      c = c > lim ? lim : c < -lim ? -lim : c;
      const char *d = rprod(x, xs, a, a + 1);
      const char *s0 = arena_printf(x->a, "(%lldLL < 0 ? %lldLL + (%s) : %lldLL)", c, c, d, c);
      const char *top = step[k] > 0 ? arena_printf(x->a, "(%s)", d) : arena_printf(x->a, "((%s) - 1)", d);
      start[a] = arena_printf(x->a, "(%s < 0 ? 0 : %s > %s ? %s : %s)", s0, s0, top, top, s0);
      step_of[a] = step[k];
      continue;
    }
    if (st[k][0] == '-')
      return 0;
    start[a] = st[k];
  }
  const char *ny = rprod(x, ys, 0, ys->rank);
  ropen(x, "Slice, run-time extents: one thread per output element");
  flat_launch(x, ny);
  for (int i = 1; i < n->n_in; i++)
    if (ir_has_input(n, i))
      ck_line(x->k, "(void)X%d;", i);
  ck_line(x->k, "ONNXC_CUDA_FOR(i, %s) {", ny);
  unravel(x, ys, "i", "  ");
  Buf src;
  buf_init(&src);
  buf_puts(&src, "0");
  for (int j = 0; j < xs->rank; j++)
    if (step_of[j] == 1)
      buf_printf(&src, " + (i%d + %s) * %s", j, start[j], rprod(x, xs, j + 1, xs->rank));
    else
      buf_printf(&src, " + (i%d * (%lld) + %s) * %s", j, (long long)step_of[j], start[j],
                 rprod(x, xs, j + 1, xs->rank));
  ck_line(x->k, "  Y0[i] = X0[%s];", src.s);
  buf_free(&src);
  ck_line(x->k, "}");
  ck_close(x->k);
  return 1;
}

static int k_gather(R *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *is = &n->in[1]->shape, *ys = &n->out[0]->shape;
  DType it = n->in[1]->dt;
  int ax;
  if (dtype_bits(n->in[0]->dt) < 8 || (it != DT_I32 && it != DT_I64) || !all_known(x, xs) || !all_known(x, is) ||
      !all_known(x, ys) || !shape_axis(ir_attr_int(n, "axis", 0), xs->rank, &ax))
    return 0;
  const char *ny = rprod(x, ys, 0, ys->rank), *ni = rprod(x, is, 0, is->rank), *inner = rprod(x, xs, ax + 1, xs->rank),
             *dim = rdim(x, xs, ax);
  CudaKernel *k = x->k;
  ropen(x, "Gather, run-time extents: one thread per output element; an index out of range reports "
           "ONNXC_ERR_BAD_INDEX");
  flat_launch(x, ny);
  ck_line(k, "const int64_t ni = %s, inner = %s, dim = %s;", ni, inner, dim);
  ck_line(k, "ONNXC_CUDA_FOR(i, %s) {", ny);
  ck_line(k, "  const int64_t o = i / (ni * inner), j = i / inner %% ni, r = i %% inner;");
  ck_line(k, "  int64_t idx = (int64_t)X1[j];");
  ck_line(k, "  if (idx < 0)");
  ck_line(k, "    idx += dim;");
  ck_line(k, "  if (idx < 0 || idx >= dim) {");
  ck_line(k, "    onnxc_cuda_report(onnxc_status, ONNXC_ERR_BAD_INDEX);");
  ck_line(k, "    continue;");
  ck_line(k, "  }");
  ck_line(k, "  Y0[i] = X0[(o * dim + idx) * inner + r];");
  ck_line(k, "}");
  ck_close(k);
  return 1;
}

static int k_concat(R *x, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  int ax;
  if (dtype_bits(n->out[0]->dt) < 8 || !all_known(x, ys) || !shape_axis(ir_attr_int(n, "axis", 0), ys->rank, &ax))
    return 0;
  for (int i = 0; i < n->n_in; i++)
    if (!ir_has_input(n, i) || !all_known(x, &n->in[i]->shape))
      return 0;
  CudaKernel *k = x->k;
  const char *ny = rprod(x, ys, 0, ys->rank);
  ropen(x, "Concat, run-time extents: one thread per output element");
  flat_launch(x, ny);
  ck_line(k, "const int64_t inner = %s, total = %s;", rprod(x, ys, ax + 1, ys->rank), rdim(x, ys, ax));
  for (int i = 0; i < n->n_in; i++)
    ck_line(k, "const int64_t len%d = %s;", i, rdim(x, &n->in[i]->shape, ax));
  ck_line(k, "ONNXC_CUDA_FOR(i, %s) {", ny);
  ck_line(k, "  const int64_t o = i / (total * inner), r = i %% inner;");
  ck_line(k, "  int64_t a = i / inner %% total;");
  for (int i = 0; i < n->n_in; i++) {
    ck_line(k, "  if (a < len%d) {", i);
    ck_line(k, "    Y0[i] = X%d[(o * len%d + a) * inner + r];", i, i);
    ck_line(k, "    continue;");
    ck_line(k, "  }");
    ck_line(k, "  a -= len%d;", i);
  }
  ck_line(k, "}");
  ck_close(k);
  return 1;
}

/* ---- MatMul, Gemm: 16x16 tiles, everything at run time -------------------------------- */

typedef struct RMm {
  DType t;
  const char *m, *n, *k, *batch;
  const char *sai, *sak, *sbk, *sbj; /* element strides of A[i,k], B[k,j] */
  const char *ao, *bo;               /* batch offsets (over the output batch indices i0..) */
  const Shape *ys;                   /* batch dims: ys[0, nb) */
  int nb;
  const char *alpha, *beta;          /* literals, NULL for 1 */
  const char *cterm;                 /* "+ X2[...]" text over i, j, or NULL */
  const Node *node;
} RMm;

static void tiled(R *x, const RMm *p, const char *what) {
  CudaKernel *k = x->k;
  const char *ct = dtype_ctype(p->t);
  ropen(x, what);
  k->block[0] = k->block[1] = TILE;
  k->rgrid[0] = host_blocks(x, p->n, TILE, 65535);
  k->rgrid[1] = host_blocks(x, p->m, TILE, 65535);
  k->rgrid[2] = host_blocks(x, p->batch, 1, 65535);
  ck_line(k, "__shared__ %s ta[%d][%d], tb[%d][%d];", ct, TILE, TILE, TILE, TILE + 1);
  ck_line(k, "const int64_t M = %s, N = %s, K = %s, batch = %s;", p->m, p->n, p->k, p->batch);
  /* every loop bound is uniform over the block, so __syncthreads is reached by all */
  ck_line(k, "for (int64_t bz = blockIdx.z; bz < batch; bz += gridDim.z) {");
  if (p->nb > 0) {
    ck_line(k, "  int64_t q = bz;");
    for (int j = p->nb - 1; j >= 0; j--) {
      const char *d = rdim(x, p->ys, j);
      ck_line(k, "  const int64_t i%d = q %% %s;", j, d);
      ck_line(k, "  (void)i%d;", j);
      if (j)
        ck_line(k, "  q /= %s;", d);
    }
    ck_line(k, "  (void)q;");
  }
  ck_line(k, "  const %s *pa = X0 + %s;", ct, p->ao);
  ck_line(k, "  const %s *pb = X1 + %s;", ct, p->bo);
  ck_line(k, "  %s *py = Y0 + bz * M * N;", ct);
  ck_line(k, "  for (int64_t by = blockIdx.y; by * %d < M; by += gridDim.y)", TILE);
  ck_line(k, "  for (int64_t bx = blockIdx.x; bx * %d < N; bx += gridDim.x) {", TILE);
  ck_line(k, "    const int64_t i = by * %d + threadIdx.y, j = bx * %d + threadIdx.x;", TILE, TILE);
  ck_line(k, "    %s acc = 0;", ct);
  ck_line(k, "    for (int64_t k0 = 0; k0 < K; k0 += %d) {", TILE);
  ck_line(k, "      const int64_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;");
  ck_line(k, "      ta[threadIdx.y][threadIdx.x] = (i < M && ka < K) ? pa[i * %s + ka * %s] : (%s)0;", p->sai, p->sak, ct);
  ck_line(k, "      tb[threadIdx.y][threadIdx.x] = (kb < K && j < N) ? pb[kb * %s + j * %s] : (%s)0;", p->sbk, p->sbj, ct);
  ck_line(k, "      __syncthreads();");
  ck_line(k, "      for (int kk = 0; kk < %d; kk++)", TILE);
  ck_line(k, "        acc += ta[threadIdx.y][kk] * tb[kk][threadIdx.x];");
  ck_line(k, "      __syncthreads();");
  ck_line(k, "    }");
  ck_line(k, "    if (i < M && j < N) {");
  Buf e, act;
  buf_init(&e);
  buf_init(&act);
  if (p->alpha)
    buf_printf(&e, "%s * acc", p->alpha);
  else
    buf_puts(&e, "acc");
  if (p->cterm)
    buf_printf(&e, " + %s%s%s", p->beta ? p->beta : "", p->beta ? " * " : "", p->cterm);
  ck_line(k, "      const %s r = %s;", ct, e.s);
  gemm_act_expr(p->node, "r", &act); /* the fused activation or epilogue, if any */
  ck_line(k, "      py[i * N + j] = %s;", act.s);
  ck_line(k, "    }");
  ck_line(k, "  }");
  ck_line(k, "}");
  ck_close(k);
  buf_free(&e);
  buf_free(&act);
}

static int k_matmul(R *x, const Node *n) {
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape, *ys = &n->out[0]->shape;
  DType t = n->out[0]->dt;
  if ((t != DT_F32 && t != DT_F64) || n->in[0]->dt != t || n->in[1]->dt != t || as->rank < 2 || bs->rank < 2 ||
      mm_permuted(n) || !all_known(x, as) || !all_known(x, bs) || !all_known(x, ys))
    return 0;
  int r = ys->rank, nb = r - 2;
  RMm p;
  memset(&p, 0, sizeof p);
  p.t = t;
  p.node = n;
  p.m = rdim(x, as, as->rank - 2);
  p.k = rdim(x, as, as->rank - 1);
  p.n = rdim(x, bs, bs->rank - 1);
  p.batch = rprod(x, ys, 0, nb);
  p.sai = p.k;
  p.sak = "1";
  p.sbk = p.n;
  p.sbj = "1";
  p.ys = ys;
  p.nb = nb;
  /* batch offsets: each operand's batch dims broadcast against the output's */
  const Shape *in[2] = {as, bs};
  const char **off[2] = {&p.ao, &p.bo};
  for (int q = 0; q < 2; q++) {
    Buf b;
    buf_init(&b);
    buf_puts(&b, "0");
    int lead = nb - (in[q]->rank - 2);
    for (int j = 0; j < nb; j++) {
      int tt = j - lead;
      if (tt < 0 || is_one(in[q], tt))
        continue;
      buf_printf(&b, " + i%d * %s", j, rprod(x, in[q], tt + 1, in[q]->rank));
    }
    *off[q] = arena_strdup(x->a, b.s);
    buf_free(&b);
  }
  if (ir_attr_int(n, "onnxc.bias", 0)) /* a column bias fused in (fuse_elementwise.c) */
    p.cterm = "X2[j]";
  tiled(x, &p, "MatMul, run-time extents: 16x16 shared-memory tiles, batches on grid z");
  return 1;
}

static const char *coef_lit(R *x, const Node *n, const char *name, DType t) {
  double v = ir_attr_float(n, name, 1.0f);
  char buf[64];
  if (v == 1.0)
    return NULL;
  return arena_strdup(x->a, ec_literal(t, v, buf, sizeof buf));
}

static int k_gemm(R *x, const Node *n) {
  const Shape *as = &n->in[0]->shape, *ys = &n->out[0]->shape;
  DType t = n->in[0]->dt;
  if ((t != DT_F32 && t != DT_F64) || as->rank != 2 || ys->rank != 2 || !all_known(x, as) || !all_known(x, ys))
    return 0;
  bool ta = ir_attr_int(n, "transA", 0) == 1, tb = ir_attr_int(n, "transB", 0) == 1;
  RMm p;
  memset(&p, 0, sizeof p);
  p.t = t;
  p.node = n;
  p.m = rdim(x, ys, 0);
  p.n = rdim(x, ys, 1);
  p.k = rdim(x, as, ta ? 0 : 1);
  p.batch = "1";
  p.sai = ta ? "1" : p.k;
  p.sak = ta ? p.m : "1";
  p.sbk = tb ? "1" : p.n;
  p.sbj = tb ? p.k : "1";
  p.ao = p.bo = "0";
  p.ys = ys;
  p.alpha = coef_lit(x, n, "alpha", t);
  p.beta = coef_lit(x, n, "beta", t);
  if (ir_has_input(n, 2) && ir_attr_float(n, "beta", 1.0f) != 0.0f) {
    const Shape *cs = &n->in[2]->shape;
    if (!all_known(x, cs))
      return 0;
    bool row = cs->rank == 2 && !is_one(cs, 0), col = cs->rank >= 1 && !is_one(cs, cs->rank - 1);
    p.cterm = arena_printf(x->a, "X2[%s%s%s]", row ? "i * " : "", row ? (col ? arena_printf(x->a, "%s + ", rdim(x, cs, 1)) : "1 + ") : "",
                           col ? "j" : "0");
  }
  tiled(x, &p, "Gemm, run-time extents: 16x16 shared-memory tiles");
  return 1;
}

/* ---- rows: Softmax, LayerNormalization, reductions --------------------------------- */

/* The kernel's loop over rows, one block each (grid-stride: the loop bound is
 * uniform over the block). */
static void row_loop(R *x, const char *rows) {
  x->k->block[0] = ROW_THREADS;
  x->k->rgrid[0] = host_blocks(x, rows, 1, 2147483647);
  ck_line(x->k, "for (int64_t o = blockIdx.x; o < %s; o += gridDim.x) {", rows);
}

static void block_reduce(CudaKernel *k, const char *var, const char *combine) {
  ck_line(k, "  red[threadIdx.x] = %s;", var);
  ck_line(k, "  __syncthreads();");
  ck_line(k, "  for (int h = blockDim.x / 2; h > 0; h /= 2) {");
  ck_line(k, "    if ((int)threadIdx.x < h) red[threadIdx.x] = %s;", combine);
  ck_line(k, "    __syncthreads();");
  ck_line(k, "  }");
  ck_line(k, "  %s = red[0];", var);
  ck_line(k, "  __syncthreads();");
}

static int k_softmax(R *x, const Node *n) {
  const Shape *s = &n->out[0]->shape;
  int axis, r = s->rank;
  bool pro = ir_attr(n, "prologue") != NULL;
  if (r < 1 || !shape_axis(ir_attr_int(n, "axis", n->g->opset >= 13 ? -1 : 1), r, &axis) || axis != r - 1 ||
      n->out[0]->dt != DT_F32 || (!pro && n->in[0]->dt != DT_F32) || !all_known(x, s))
    return 0;
  for (int i = 0; i < n->n_in; i++)
    if (!ir_has_input(n, i) || !all_known(x, &n->in[i]->shape))
      return 0;
  CudaKernel *k = x->k;
  Buf st, res;
  buf_init(&st);
  buf_init(&res);
  buf_puts(&st, "");
  buf_puts(&res, "");
  if (pro && !kd_prologue_body(n, &st, &res, k->d)) {
    buf_free(&st);
    buf_free(&res);
    return -1;
  }
  ropen(x, pro ? "Softmax, run-time extents, fused prologue: one block per row, block reductions"
               : "Softmax, run-time extents: one block per row, block reductions");
  ck_line(k, "__shared__ float red[%d];", ROW_THREADS);
  ck_line(k, "const int64_t cols = %s;", rdim(x, s, r - 1));
  row_loop(x, rprod(x, s, 0, r - 1));
  ck_line(k, "  float *y = Y0 + o * cols;");
  if (pro) {
    /* the row's input (the attention scale and mask...) computed into the output row */
    unravel(x, s, "o * cols", "  ");
    for (int i = 0; i < n->n_in; i++) {
      ck_line(k, "  const %s *x%d = X%d + %s;", dtype_ctype(n->in[i]->dt), i, i, bcast_off(x, &n->in[i]->shape, r, r - 1));
    }
    ck_line(k, "  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {");
    for (int i = 0; i < n->n_in; i++) {
      const Shape *is = &n->in[i]->shape;
      int t = r - 1 - (r - is->rank);
      bool lastb = t < 0 || is_one(is, t);
      Buf ld, src;
      buf_init(&ld);
      buf_init(&src);
      buf_puts(&ld, "");
      buf_printf(&src, lastb ? "x%d[0]" : "x%d[j]", i);
      DType to = kd_operand_type(n->in[i]->dt);
      ec_ew_load(&ld, n->in[i]->dt, to, src.s);
      ck_line(k, "    const %s a%d = %s;", dtype_ctype(to), i, ld.s);
      buf_free(&ld);
      buf_free(&src);
    }
    buf_puts(k->cu, st.s);
    ck_line(k, "    y[j] = %s;", res.s);
    ck_line(k, "  }");
    ck_line(k, "  __syncthreads();");
    ck_line(k, "  const float *xr = y;");
  } else {
    ck_line(k, "  const float *xr = X0 + o * cols;");
  }
  ck_line(k, "  float v = -INFINITY;");
  ck_line(k, "  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)");
  ck_line(k, "    v = fmaxf(v, xr[j]);");
  block_reduce(k, "v", "fmaxf(red[threadIdx.x], red[threadIdx.x + h])");
  ck_line(k, "  const float mx = v;");
  ck_line(k, "  v = 0;");
  ck_line(k, "  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)");
  ck_line(k, "    v += expf(xr[j] - mx);");
  block_reduce(k, "v", "red[threadIdx.x] + red[threadIdx.x + h]");
  ck_line(k, "  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)");
  ck_line(k, "    y[j] = expf(xr[j] - mx) / v;");
  ck_line(k, "  __syncthreads();");
  ck_line(k, "}");
  ck_close(k);
  buf_free(&st);
  buf_free(&res);
  return 1;
}

/* LayerNormalization / RMSNormalization over static normalized dims, the
 * rows at run time; with onnxc.fused_inputs == 1 the residual (last input)
 * is added first, into the output row. */
static int k_layernorm(R *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  DType tx = n->in[0]->dt, ty = n->out[0]->dt;
  bool centered = n->op == OP_LayerNormalization;
  int ax;
  if (dtype_bits(tx) < 16 || !dtype_is_float(tx) || !shape_axis(ir_attr_int(n, "axis", -1), xs->rank, &ax) ||
      !all_known(x, xs))
    return 0;
  int64_t len = 1, np = 0, nb = 0;
  for (int i = ax; i < xs->rank; i++) {
    if (xs->d[i] < 0)
      return 0;
    len *= xs->d[i];
  }
  bool fused = ir_attr_int(n, "onnxc.fused_inputs", 0) == 1;
  bool bias = centered && ir_has_input(n, 2) && !(fused && n->n_in == 3);
  if (!shape_numel(&n->in[1]->shape, &np) || np != len || (bias && (!shape_numel(&n->in[2]->shape, &nb) || nb != len)))
    return 0;
  for (int i = 1; i <= 2 && i < n->n_out; i++)
    if (ec_has_output(n, i))
      return 0; /* Mean / InvStdDev outputs: the fallback */
  CudaKernel *k = x->k;
  char eps[64];
  ec_literal(DT_F64, ir_attr_float(n, "epsilon", 1e-5f), eps, sizeof eps);
  ropen(x, centered ? "LayerNormalization, run-time rows: one block per row, block reductions (double)"
                    : "RMSNormalization, run-time rows: one block per row, block reduction (double)");
  ck_line(k, "__shared__ double red[%d];", ROW_THREADS);
  row_loop(x, rprod(x, xs, 0, ax));
  ck_line(k, "  %s *y = Y0 + o * %lld;", dtype_ctype(ty), LL(len));
  if (fused) {
    ck_line(k, "  for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x)", LL(len));
    ck_line(k, "    y[j] = X0[o * %lld + j] + X%d[o * %lld + j];", LL(len), n->n_in - 1, LL(len));
    ck_line(k, "  __syncthreads();");
    ck_line(k, "  const %s *xr = y;", dtype_ctype(tx));
  } else {
    ck_line(k, "  const %s *xr = X0 + o * %lld;", dtype_ctype(tx), LL(len));
  }
  Buf ld, st, ex;
  buf_init(&ld);
  buf_init(&st);
  buf_init(&ex);
  ec_ew_load(&ld, tx, DT_F64, "xr[j]");
  ck_line(k, "  double mean = 0, ss = 0;");
  if (centered) {
    ck_line(k, "  for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x)", LL(len));
    ck_line(k, "    mean += %s;", ld.s);
    block_reduce(k, "mean", "red[threadIdx.x] + red[threadIdx.x + h]");
    ck_line(k, "  mean /= %lld;", LL(len));
  }
  ck_line(k, "  for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x) {", LL(len));
  ck_line(k, "    const double d = %s - mean;", ld.s);
  ck_line(k, "    ss += d * d;");
  ck_line(k, "  }");
  block_reduce(k, "ss", "red[threadIdx.x] + red[threadIdx.x + h]");
  ck_line(k, "  const double inv = 1.0 / sqrt(ss / %lld + %s);", LL(len), eps);
  buf_printf(&ex, "(%s - mean) * inv * ", ld.s);
  ec_ew_load(&ex, n->in[1]->dt, DT_F64, "X1[j]");
  if (bias) {
    buf_puts(&ex, " + ");
    ec_ew_load(&ex, n->in[2]->dt, DT_F64, "X2[j]");
  }
  ec_ew_store(&st, DT_F64, ty, ex.s);
  ck_line(k, "  for (int64_t j = threadIdx.x; j < %lld; j += blockDim.x)", LL(len));
  ck_line(k, "    y[j] = %s;", st.s);
  ck_line(k, "  __syncthreads();");
  ck_line(k, "}");
  ck_close(k);
  buf_free(&ld);
  buf_free(&st);
  buf_free(&ex);
  return 1;
}

/* Reduce* over one constant axis, keepdims either way; GlobalAverage/MaxPool.
 * One block per output element, sums in double, Max/Min keep NaN. */
static int k_reduce(R *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  bool global = n->op == OP_GlobalAveragePool || n->op == OP_GlobalMaxPool;
  if (n->in[0]->dt != DT_F32 || n->out[0]->dt != DT_F32 || !all_known(x, xs))
    return 0;
  const char *outer, *len, *inner;
  if (global) {
    if (xs->rank < 2)
      return 0;
    outer = rprod(x, xs, 0, 2);
    len = rprod(x, xs, 2, xs->rank);
    inner = "1";
  } else {
    int count = 0, axis;
    const int64_t *axes = ir_attr_ints(n, "axes", &count);
    int64_t ax_in[2];
    if (!axes && ir_has_input(n, 1) && n->in[1]->kind == VK_CONST && n->in[1]->konst->numel <= 2) {
      count = (int)n->in[1]->konst->numel;
      for (int q = 0; q < count; q++)
        ax_in[q] = tensor_get_i64(n->in[1]->konst, q);
      axes = ax_in;
    }
    if (count != 1 || !shape_axis(axes[0], xs->rank, &axis))
      return 0;
    outer = rprod(x, xs, 0, axis);
    len = rdim(x, xs, axis);
    inner = rprod(x, xs, axis + 1, xs->rank);
  }
  const char *acc_t = "double", *init = "0.0", *step = "a += v;", *comb = "red[threadIdx.x] + red[threadIdx.x + h]",
             *fin = "(float)a";
  const char *mxc = "(red[threadIdx.x + h] > red[threadIdx.x] || red[threadIdx.x + h] != red[threadIdx.x + h]) ? "
                    "red[threadIdx.x + h] : red[threadIdx.x]";
  const char *mnc = "(red[threadIdx.x + h] < red[threadIdx.x] || red[threadIdx.x + h] != red[threadIdx.x + h]) ? "
                    "red[threadIdx.x + h] : red[threadIdx.x]";
  switch (n->op) {
  case OP_ReduceSum: break;
  case OP_GlobalAveragePool:
  case OP_ReduceMean: fin = "(float)(a / (double)len)"; break;
  case OP_GlobalMaxPool:
  case OP_ReduceMax: acc_t = "float"; init = "-INFINITY"; step = "a = v > a || v != v ? v : a;"; comb = mxc; break;
  case OP_ReduceMin: acc_t = "float"; init = "INFINITY"; step = "a = v < a || v != v ? v : a;"; comb = mnc; break;
  case OP_ReduceProd: init = "1.0"; step = "a *= v;"; comb = "red[threadIdx.x] * red[threadIdx.x + h]"; break;
  case OP_ReduceSumSquare: step = "a += (double)v * v;"; break;
  case OP_ReduceL1: step = "a += fabs((double)v);"; break;
  case OP_ReduceL2: step = "a += (double)v * v;"; fin = "(float)sqrt(a)"; break;
  default: return 0;
  }
  CudaKernel *k = x->k;
  char what[128];
  snprintf(what, sizeof what, "%s, run-time extents: one block per output element, block reduction", n->op_type);
  ropen(x, what);
  for (int i = 1; i < n->n_in; i++)
    if (ir_has_input(n, i))
      ck_line(k, "(void)X%d;", i);
  ck_line(k, "__shared__ %s red[%d];", acc_t, ROW_THREADS);
  ck_line(k, "const int64_t len = %s, inner = %s;", len, inner);
  row_loop(x, arena_printf(x->a, "%s * %s", outer, inner));
  ck_line(k, "  const int64_t ob = o / inner, ib = o %% inner;");
  ck_line(k, "  %s a = %s;", acc_t, init);
  ck_line(k, "  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {");
  ck_line(k, "    const float v = X0[(ob * len + j) * inner + ib];");
  ck_line(k, "    %s", step);
  ck_line(k, "  }");
  block_reduce(k, "a", comb);
  ck_line(k, "  if (threadIdx.x == 0)");
  ck_line(k, "    Y0[o] = %s;", fin);
  ck_line(k, "}");
  ck_close(k);
  return 1;
}

/* ---- windows: Conv, MaxPool, AveragePool ---------------------------------------------- */

/* The begin (end) pad of spatial dim i as C text: the attribute, or for
 * auto_pad SAME_* the split of max(0, (out - 1) * s + dk - in). */
static const char *pad_c(R *x, const Node *n, const Shape *xs, const Shape *ys, int i, int r, const int64_t *k,
                         bool end) {
  const char *ap = ir_attr_str(n, "auto_pad", "NOTSET");
  int64_t s[IR_MAX_RANK], dil[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
  window_ints(n, "strides", r, 1, s);
  window_ints(n, "dilations", r, 1, dil);
  window_ints(n, "pads", 2 * r, 0, pads);
  if (strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER"))
    return strcmp(ap, "VALID") ? arena_printf(x->a, "%lld", LL(pads[end ? r + i : i])) : "0";
  int64_t dk = (k[i] - 1) * dil[i] + 1;
  const char *tot = arena_printf(x->a, "((%s - 1) * %lld + %lld - %s)", rdim(x, ys, 2 + i), LL(s[i]), LL(dk),
                                 rdim(x, xs, 2 + i));
  bool upper_begin = !strcmp(ap, "SAME_UPPER") != end;
  return arena_printf(x->a, upper_begin ? "(%s > 0 ? %s / 2 : 0)" : "(%s > 0 ? %s - %s / 2 : 0)", tot, tot, tot);
}

/* Declares N, C, H, W, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR for a
 * 1-D (H = 1) or 2-D window. */
static bool window_decl(R *x, const Node *n, const int64_t *kernel) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  int r = xs->rank - 2;
  if (r < 1 || r > 2 || !all_known(x, xs) || !all_known(x, ys))
    return false;
  int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], dil[IR_MAX_RANK];
  if (kernel)
    memcpy(k, kernel, sizeof(int64_t) * (size_t)r);
  else
    window_ints(n, "kernel_shape", r, 1, k);
  window_ints(n, "strides", r, 1, s);
  window_ints(n, "dilations", r, 1, dil);
  CudaKernel *c = x->k;
  ck_line(c, "const int64_t N = %s, C = %s, H = %s, W = %s, OH = %s, OW = %s;", rdim(x, xs, 0), rdim(x, xs, 1),
          r == 2 ? rdim(x, xs, 2) : "1", rdim(x, xs, r + 1), r == 2 ? rdim(x, ys, 2) : "1", rdim(x, ys, r + 1));
  ck_line(c, "const int64_t KH = %lld, KW = %lld, SH = %lld, SW = %lld, DH = %lld, DW = %lld;", LL(r == 2 ? k[0] : 1),
          LL(k[r - 1]), LL(r == 2 ? s[0] : 1), LL(s[r - 1]), LL(r == 2 ? dil[0] : 1), LL(dil[r - 1]));
  ck_line(c, "const int64_t PT = %s, PL = %s, PB = %s, PR = %s;", r == 2 ? pad_c(x, n, xs, ys, 0, r, k, false) : "0",
          pad_c(x, n, xs, ys, r - 1, r, k, false), r == 2 ? pad_c(x, n, xs, ys, 0, r, k, true) : "0",
          pad_c(x, n, xs, ys, r - 1, r, k, true));
  ck_line(c, "(void)N; (void)C; (void)PB; (void)PR;");
  return true;
}

static int k_conv(R *x, const Node *n) {
  const Shape *ws = &n->in[1]->shape, *ys = &n->out[0]->shape;
  if (n->out[0]->dt != DT_F32 || n->in[0]->dt != DT_F32 || !shape_is_static(ws) || ws->rank < 3 || ws->rank > 4 ||
      (ir_has_input(n, 3) && !all_known(x, &n->in[3]->shape)))
    return 0;
  int64_t kk[2] = {ws->d[2], ws->rank > 3 ? ws->d[3] : 1};
  int64_t group = ir_attr_int(n, "group", 1), m = ws->d[0], cg = ws->d[1];
  if (group < 1 || m % group)
    return 0;
  CudaKernel *k = x->k;
  const char *ny = rprod(x, ys, 0, ys->rank);
  if (!ny)
    return 0;
  /* the header first into a probe: window_decl may refuse */
  size_t at = k->cu->len;
  ropen(x, "Conv, run-time extents: direct, one thread per output element");
  if (!window_decl(x, n, kk)) {
    k->cu->len = at;
    k->cu->s[at] = 0;
    return 0;
  }
  flat_launch(x, ny);
  ck_line(k, "const int64_t M = %lld, CG = %lld, MG = %lld;", LL(m), LL(cg), LL(m / group));
  ck_line(k, "ONNXC_CUDA_FOR(i, %s) {", ny);
  ck_line(k, "  const int64_t ow = i %% OW, oh = i / OW %% OH, oc = i / (OW * OH) %% M, b = i / (OW * OH * M);");
  ck_line(k, "  const int64_t c0 = oc / MG * CG;");
  ck_line(k, "  float acc = %s;", ir_has_input(n, 2) ? "X2[oc]" : "0.0f");
  ck_line(k, "  for (int64_t c = 0; c < CG; c++) {");
  ck_line(k, "    const float *xp = X0 + (b * C + c0 + c) * H * W;");
  ck_line(k, "    const float *wp = X1 + (oc * CG + c) * KH * KW;");
  ck_line(k, "    for (int64_t kh = 0; kh < KH; kh++) {");
  ck_line(k, "      const int64_t ih = oh * SH - PT + kh * DH;");
  ck_line(k, "      if (ih < 0 || ih >= H) continue;");
  ck_line(k, "      for (int64_t kw = 0; kw < KW; kw++) {");
  ck_line(k, "        const int64_t iw = ow * SW - PL + kw * DW;");
  ck_line(k, "        if (iw < 0 || iw >= W) continue;");
  ck_line(k, "        acc += wp[kh * KW + kw] * xp[ih * W + iw];");
  ck_line(k, "      }");
  ck_line(k, "    }");
  ck_line(k, "  }");
  if (ir_has_input(n, 3)) /* a residual of the output's shape, before the activation */
    ck_line(k, "  acc += X3[i];");
  Buf act;
  buf_init(&act);
  gemm_act_expr(n, "acc", &act);
  ck_line(k, "  Y0[i] = %s;", act.s);
  buf_free(&act);
  ck_line(k, "}");
  ck_close(k);
  return 1;
}

static int k_pool(R *x, const Node *n) {
  if (n->out[0]->dt != DT_F32 || n->in[0]->dt != DT_F32 || (n->n_out > 1 && ec_has_output(n, 1)) ||
      ir_attr_int(n, "ceil_mode", 0))
    return 0;
  bool mx = n->op == OP_MaxPool, cip = ir_attr_int(n, "count_include_pad", 0) != 0;
  CudaKernel *k = x->k;
  const Shape *ys = &n->out[0]->shape;
  const char *ny = rprod(x, ys, 0, ys->rank);
  if (!ny)
    return 0;
  size_t at = k->cu->len;
  ropen(x, mx ? "MaxPool, run-time extents: one thread per output element"
              : "AveragePool, run-time extents: one thread per output element");
  if (!window_decl(x, n, NULL)) {
    k->cu->len = at;
    k->cu->s[at] = 0;
    return 0;
  }
  flat_launch(x, ny);
  ck_line(k, "ONNXC_CUDA_FOR(i, %s) {", ny);
  ck_line(k, "  const int64_t ow = i %% OW, oh = i / OW %% OH, p = i / (OW * OH);");
  ck_line(k, "  const float *xp = X0 + p * H * W;");
  ck_line(k, "  float acc = %s;", mx ? "-INFINITY" : "0.0f");
  ck_line(k, "  int64_t ch = 0, cw = 0;");
  ck_line(k, "  for (int64_t kh = 0; kh < KH; kh++) {");
  ck_line(k, "    const int64_t ih = oh * SH - PT + kh * DH;");
  if (!mx && cip)
    ck_line(k, "    if (ih >= -PT && ih < H + PB) ch++;");
  ck_line(k, "    if (ih < 0 || ih >= H) continue;");
  if (!mx && !cip)
    ck_line(k, "    ch++;");
  ck_line(k, "    for (int64_t kw = 0; kw < KW; kw++) {");
  ck_line(k, "      const int64_t iw = ow * SW - PL + kw * DW;");
  ck_line(k, "      if (iw < 0 || iw >= W) continue;");
  ck_line(k, "      const float v = xp[ih * W + iw];");
  ck_line(k, mx ? "      acc = v > acc || v != v ? v : acc;" : "      acc += v;");
  ck_line(k, "    }");
  ck_line(k, "  }");
  if (!mx) {
    ck_line(k, "  for (int64_t kw = 0; kw < KW; kw++) {");
    ck_line(k, "    const int64_t iw = ow * SW - PL + kw * DW;");
    ck_line(k, cip ? "    if (iw >= -PL && iw < W + PR) cw++;" : "    if (iw >= 0 && iw < W) cw++;");
    ck_line(k, "  }");
    ck_line(k, "  acc = ch * cw != 0 ? acc / (float)(ch * cw) : 0.0f;");
  } else {
    ck_line(k, "  (void)ch; (void)cw;");
  }
  ck_line(k, "  Y0[i] = acc;");
  ck_line(k, "}");
  ck_close(k);
  return 1;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

int cuda_emit_ranged(CudaKernel *k, const Node *n, Arena *a) {
  const Graph *root = n->g;
  while (root->parent)
    root = root->parent;
  R x = {k, a, root};
  int r = 0;
  if (n->n_out >= 1 && n->out[0]->sval)
    r = k_values(&x, n);
  else if (ir_ops[n->op].flags & OPF_EW)
    r = k_elementwise(&x, n);
  else
    switch (n->op) {
    case OP_Cast: r = k_elementwise(&x, n); break;
    case OP_Identity: case OP_Reshape: case OP_Unsqueeze: case OP_Squeeze: case OP_Flatten: r = k_copy(&x, n); break;
    case OP_FusedElementwise: r = k_fused(&x, n); break;
    case OP_Expand: r = k_expand(&x, n); break;
    case OP_BatchNormalization: r = k_batchnorm(&x, n); break;
    case OP_Range: r = k_range(&x, n); break;
    case OP_ConstantOfShape: r = k_constant_of_shape(&x, n); break;
    case OP_Transpose: r = k_transpose(&x, n); break;
    case OP_Slice: r = k_slice(&x, n); break;
    case OP_Gather: r = k_gather(&x, n); break;
    case OP_Concat: r = k_concat(&x, n); break;
    case OP_MatMul: r = k_matmul(&x, n); break;
    case OP_Gemm: r = k_gemm(&x, n); break;
    case OP_Softmax: r = k_softmax(&x, n); break;
    case OP_LayerNormalization: case OP_RMSNormalization: r = k_layernorm(&x, n); break;
    case OP_ReduceSum: case OP_ReduceMean: case OP_ReduceMax: case OP_ReduceMin: case OP_ReduceProd:
    case OP_ReduceSumSquare: case OP_ReduceL1: case OP_ReduceL2: case OP_GlobalAveragePool: case OP_GlobalMaxPool:
      r = k_reduce(&x, n);
      break;
    case OP_Conv: r = k_conv(&x, n); break;
    case OP_MaxPool: case OP_AveragePool: r = k_pool(&x, n); break;
    default: r = 0; break;
    }
  return r;
}
