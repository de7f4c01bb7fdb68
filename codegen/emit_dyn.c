/* emit_dyn.c - C kernels whose extents are known only at run time.
 *
 * With -D NAME=LO..HI (docs/dynamic-shapes.md) a node whose shapes involve a
 * range symbol gets one of these bodies instead of its static hook. Every
 * extent is a C expression over the run's dims (`dims[k]`, the parameter the
 * framework adds), printed from the value's DimExpr; buffers were planned at
 * the upper bounds, so any value in range fits. The kernels are plain loop
 * nests in the shape of the static ones' fallbacks: rows over a contiguous
 * innermost run, so the compiler vectorizes the inner loop. A node without a
 * kernel here is reported by dyn_check with its op, so a user sees at once
 * what the range would need.
 */
#include "codegen.h"
#include "gemm.h"
#include "window.h"

#include <stdlib.h>
#include <string.h>

/* ---- extents as C text --------------------------------------------------------- */

typedef struct Dx {
  EmitC *e;
  Arena *a;
  const Graph *root;
} Dx;

static const char *ext_of(Dx *x, const DimExpr *v) {
  int64_t c;
  if (dx_is_const(v, &c))
    return arena_printf(x->a, "%lld", (long long)c);
  Buf b;
  buf_init(&b);
  dx_print(x->root, v, "dims", &b);
  const char *s = arena_strdup(x->a, b.s);
  buf_free(&b);
  return s;
}

/* Dim i of s as C text. */
static const char *dim_c(Dx *x, const Shape *s, int i) { return ext_of(x, shape_dx(x->a, s, i)); }

/* Product of dims [lo, hi) of s as C text. */
static const char *prod_c(Dx *x, const Shape *s, int lo, int hi) {
  const DimExpr *p = dx_const(x->a, 1);
  for (int i = lo; i < hi; i++)
    p = dx_mul(x->a, p, shape_dx(x->a, s, i));
  return p ? ext_of(x, p) : NULL;
}

/* The product of dims [lo, hi) of s at their upper bounds; -1 when unbounded. */
static int64_t prod_hi(Dx *x, const Shape *s, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++) {
    int64_t l, h;
    const DimExpr *d = shape_dx(x->a, s, i);
    if (!d || !dx_bounds(x->root, d, &l, &h))
      return -1;
    p *= h;
  }
  return p;
}

/* Opens the loop over the rows `o` of a row kernel (rows_c rows of cols_c
 * elements, C text over dims; s split at `split` into rows and columns): on
 * every thread with --threads when the work at the upper bounds pays, and
 * then only for runs whose own work does (ec_open_items_rt). */
static void open_rows(Dx *x, const Shape *s, int split, CostKind k, const char *rows_c, const char *cols_c) {
  int64_t rh = prod_hi(x, s, 0, split), ch = prod_hi(x, s, split, s->rank);
  if (rh < 0 || ch < 0) {
    ec_line(x->e, "for (long o = 0; o < (long)(%s); o++) {", rows_c);
    return;
  }
  ec_open_items_rt(x->e, "o", rows_c, rh, ec_cost(k, (double)rh * (double)ch),
                   arena_printf(x->a, "(%s) * (%s)", rows_c, cols_c), k);
}

static bool shape_dynamic(const Shape *s) {
  for (int i = 0; i < s->rank; i++)
    if (s->d[i] < 0 && s->x[i])
      return true;
  return false;
}

bool dyn_node_is_dynamic(const Node *n) {
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i) && shape_dynamic(&n->in[i]->shape))
      return true;
  for (int i = 0; i < n->n_out; i++)
    if (n->out[i]->kind != VK_NONE && (shape_dynamic(&n->out[i]->shape) || n->out[i]->sval))
      return true;
  return false;
}

/* ---- kernels --------------------------------------------------------------------- */

/* A valued node (Shape, Gather of a shape, Concat of dims...): its output is
 * the extents it holds. */
static bool k_values(Dx *x, const Node *n) {
  const Value *y = n->out[0];
  for (int k = 0; k < y->n_sval; k++)
    ec_line(x->e, "Y0[%d] = (%s)%s;", k, dtype_ctype(y->dt), ext_of(x, y->sval[k]));
  return true;
}

static bool k_copy(Dx *x, const Node *n) {
  ec_line(x->e, "for (int64_t i = 0; i < %s; i++) Y0[i] = X0[i];",
          prod_c(x, &n->out[0]->shape, 0, n->out[0]->shape.rank));
  return true;
}

/* Stride of input dim t (contiguous, row-major) as C text. */
static const char *in_stride(Dx *x, const Shape *s, int t) { return prod_c(x, s, t + 1, s->rank); }

/* Output dim j's index i<j> split from the row counter `o` over dims [0, r-1). */
static void split_rows(Dx *x, const Shape *ys, int r) {
  if (r <= 1)
    return;
  ec_line(x->e, "int64_t q = o;");
  for (int j = r - 2; j >= 0; j--) {
    const char *d = dim_c(x, ys, j);
    ec_line(x->e, "const int64_t i%d = q %% %s;", j, d);
    ec_line(x->e, "(void)i%d;", j);
    if (j)
      ec_line(x->e, "q /= %s;", d);
  }
  ec_line(x->e, "(void)q;");
}

/* Offset into input k (broadcast to output rank r) for output row indices
 * i0..i(r-2), and its stride along the last dim. */
static void bcast_offset(Dx *x, const Shape *is, int r, Buf *off, const char **last) {
  int lead = r - is->rank;
  buf_puts(off, "0");
  for (int j = 0; j < r - 1; j++) {
    int t = j - lead;
    if (t < 0 || is->d[t] == 1)
      continue;
    buf_printf(off, " + i%d * %s", j, in_stride(x, is, t));
  }
  int t = r - 1 - lead;
  *last = t < 0 || is->d[t] == 1 ? "0" : "1";
}

static bool ew_expr(Dx *x, const Node *n, DType compute, const char *const *ops, Buf *out) {
  const char *tmpl = ec_ew_template_c(n, compute);
  Buf ex;
  buf_init(&ex);
  bool ok = true;
  if (ir_ops[n->op].max_in < 0) { /* variadic (Max, Min, Sum, Mean): folded left */
    buf_puts(&ex, ops[0]);
    for (int k = 1; k < n->n_in && ok; k++) {
      Buf step;
      buf_init(&step);
      const char *pair[2] = {ex.s, ops[k]};
      ok = ec_expand_expr(x->e->d, n, tmpl, pair, 2, compute, &step);
      ex.len = 0;
      buf_puts(&ex, step.s ? step.s : "");
      buf_free(&step);
    }
    if (ok && n->op == OP_Mean) {
      Buf m;
      buf_init(&m);
      buf_printf(&m, "(%s) / (%s)%d", ex.s, dtype_ctype(compute), n->n_in);
      ex.len = 0;
      buf_puts(&ex, m.s);
      buf_free(&m);
    }
  } else {
    ok = ec_expand_expr(x->e->d, n, tmpl, ops, n->n_in, compute, &ex);
  }
  if (ok)
    ec_ew_store(out, compute, n->out[0]->dt, ex.s);
  buf_free(&ex);
  return ok;
}

/* Elementwise rows of ops.def (fixed arity) and Cast, with numpy broadcasting. */
static bool k_elementwise(Dx *x, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  int r = ys->rank;
  DType in_t = n->op == OP_Where ? n->in[1]->dt : n->in[0]->dt; /* Where: condition, then values */
  DType compute = in_t == DT_F16 || in_t == DT_BF16 ? DT_F32 : in_t;
  if (n->n_in > 8)
    return diag_error(x->e->d, n, "run-time extents: at most 8 operands");
  char names[8][16];
  const char *ops[8];
  for (int k = 0; k < n->n_in; k++) {
    snprintf(names[k], sizeof names[k], "a%d", k);
    ops[k] = names[k];
  }
  Buf st;
  buf_init(&st);
  if (n->op == OP_Cast)
    ec_ew_store(&st, compute, n->out[0]->dt, "a0");
  else if (!ew_expr(x, n, compute, ops, &st)) {
    buf_free(&st);
    return false;
  }
  EmitC *e = x->e;
  const char *cols = r ? dim_c(x, ys, r - 1) : "1", *rows = r ? prod_c(x, ys, 0, r - 1) : "1";
  ec_line(e, "const int64_t cols = %s, rows = %s;", cols, rows);
  ec_line(e, "(void)rows;");
  open_rows(x, ys, r ? r - 1 : 0, COST_EW_ELEM, rows, cols);
  e->indent++;
  split_rows(x, ys, r);
  const char *last[8];
  for (int k = 0; k < n->n_in; k++) {
    Buf off;
    buf_init(&off);
    bcast_offset(x, &n->in[k]->shape, r, &off, &last[k]);
    ec_line(e, "const %s *x%d = X%d + %s;", dtype_ctype(n->in[k]->dt), k, k, off.s);
    buf_free(&off);
  }
  ec_line(e, "%s *y = Y0 + o * cols;", dtype_ctype(n->out[0]->dt));
  ec_line(e, "for (int64_t j = 0; j < cols; j++) {");
  e->indent++;
  for (int k = 0; k < n->n_in; k++) {
    Buf ld, src;
    buf_init(&ld);
    buf_init(&src);
    buf_printf(&src, strcmp(last[k], "0") ? "x%d[j]" : "x%d[0]", k);
    DType kt = n->op == OP_Where && k == 0 ? DT_BOOL : compute;
    ec_ew_load(&ld, n->in[k]->dt, kt, src.s);
    ec_line(e, "const %s a%d = %s;", dtype_ctype(kt), k, ld.s);
    buf_free(&ld);
    buf_free(&src);
  }
  ec_line(e, "y[j] = %s;", st.s);
  e->indent--;
  ec_line(e, "}");
  e->indent--;
  ec_line(e, "}");
  buf_free(&st);
  return true;
}

/* Inside the row loop over output rows `o` of ys (split_rows done): the
 * body of attribute "body", or "prologue" when prologue (kernel_desc.c), over operands X0..X(n_in-1)
 * broadcast to ys, its value stored to y[j] for j < cols. A fused chain's
 * whole kernel, or a Softmax's prologue (its row, computed into the output). */
static bool fused_row(Dx *x, const Node *n, bool prologue, const Shape *ys) {
  EmitC *e = x->e;
  int r = ys->rank;
  if (n->n_in > 64)
    return diag_error(e->d, n, "run-time extents: at most 64 operands");
  Kdesc kd;
  Buf st, res;
  buf_init(&st);
  buf_init(&res);
  buf_puts(&st, "");
  buf_puts(&res, "");
  bool ok = prologue ? kd_prologue_body(n, &st, &res, e->d)
                     : kd_build(n, &kd, e->d) && kd_emit(&kd, true, "", &st, &res, e->d);
  if (ok) {
    const char *last[64];
    for (int k = 0; k < n->n_in; k++) {
      Buf off;
      buf_init(&off);
      bcast_offset(x, &n->in[k]->shape, r, &off, &last[k]);
      ec_line(e, "const %s *x%d = X%d + %s;", dtype_ctype(n->in[k]->dt), k, k, off.s);
      buf_free(&off);
    }
    ec_line(e, "for (int64_t j = 0; j < cols; j++) {");
    e->indent++;
    for (int k = 0; k < n->n_in; k++) {
      Buf ld, src;
      buf_init(&ld);
      buf_init(&src);
      buf_printf(&src, strcmp(last[k], "0") ? "x%d[j]" : "x%d[0]", k);
      DType t = kd_operand_type(n->in[k]->dt);
      ec_ew_load(&ld, n->in[k]->dt, t, src.s);
      ec_line(e, "const %s a%d = %s;", dtype_ctype(t), k, ld.s);
      buf_free(&ld);
      buf_free(&src);
    }
    ec_lines(e, st.s);
    ec_line(e, "y[j] = %s;", res.s);
    e->indent--;
    ec_line(e, "}");
  }
  buf_free(&st);
  buf_free(&res);
  return ok;
}

/* A fused elementwise chain (passes/fuse_elementwise.c): k_elementwise's
 * broadcasting loop nest, the body from the kernel description. */
static bool k_fused(Dx *x, const Node *n) {
  if (ir_attr(n, "onnxc.views"))
    return diag_error(x->e->d, n, "run-time extents: a fused kernel reading strided views");
  if (n->n_out != 1) /* fuse-elementwise merges siblings at static extents only */
    return diag_error(x->e->d, n, "run-time extents: a fused kernel of several outputs");
  const Shape *ys = &n->out[0]->shape;
  int r = ys->rank;
  EmitC *e = x->e;
  const char *cols = r ? dim_c(x, ys, r - 1) : "1", *rows = r ? prod_c(x, ys, 0, r - 1) : "1";
  ec_line(e, "const int64_t cols = %s, rows = %s;", cols, rows);
  ec_line(e, "(void)rows;");
  open_rows(x, ys, r ? r - 1 : 0, COST_EW_ELEM, rows, cols);
  e->indent++;
  split_rows(x, ys, r);
  ec_line(e, "%s *y = Y0 + o * cols;", dtype_ctype(n->out[0]->dt));
  bool ok = fused_row(x, n, false, ys);
  e->indent--;
  ec_line(e, "}");
  return ok;
}

/* MatMul of rank >= 2 operands, batch dims broadcast; float32. */
static bool k_matmul_body(Dx *x, const Node *n);

/* MatMul; with onnxc.bias (fuse_elementwise.c) + X2[j] and with a fused
 * elementwise epilogue (GELU...), in the GEMM's store when a weight packed at
 * compile time takes it, else in a pass after the product. */
static bool k_matmul(Dx *x, const Node *n) {
  if (gemm_emit_matmul(x->e, n)) /* a weight packed at compile time, rows at run time */
    return true;
  if (!k_matmul_body(x, n))
    return false;
  bool bias = ir_attr_int(n, "onnxc.bias", 0) != 0, chain = ir_attr(n, "epilogue") != NULL;
  if (bias || chain) {
    const Shape *ys = &n->out[0]->shape;
    Buf v;
    buf_init(&v);
    gemm_act_expr(n, bias ? "Y0[r * N + j] + X2[j]" : "Y0[r * N + j]", &v);
    /* (N: k_matmul_body's, the output's last extent) */
    ec_line(x->e, "for (int64_t r = 0; r < %s; r++) {", prod_c(x, ys, 0, ys->rank - 1));
    ec_line(x->e, "  for (int64_t j = 0; j < N; j++) Y0[r * N + j] = %s;", v.s);
    ec_line(x->e, "}");
    buf_free(&v);
  }
  return true;
}

static bool k_matmul_body(Dx *x, const Node *n) {
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape, *ys = &n->out[0]->shape;
  if (as->rank < 2 || bs->rank < 2 || n->out[0]->dt != DT_F32)
    return diag_error(x->e->d, n, "run-time extents: MatMul needs float32 operands of rank >= 2");
  EmitC *e = x->e;
  int r = ys->rank;
  const char *Mc = dim_c(x, as, as->rank - 2), *Kc = dim_c(x, as, as->rank - 1), *Nc = dim_c(x, bs, bs->rank - 1),
             *Bc = prod_c(x, ys, 0, r - 2);
  ec_line(e, "const int64_t M = %s, K = %s, N = %s, batch = %s;", Mc, Kc, Nc, Bc);
  /* --threads: the batch's matrices (attention's heads) claimed by every
   * thread, each packing into its own buffers; not when a pass follows the
   * product (a bias or epilogue k_matmul adds on every thread) */
  int64_t bh = prod_hi(x, ys, 0, r - 2), mh = prod_hi(x, as, as->rank - 2, as->rank - 1),
          kh = prod_hi(x, as, as->rank - 1, as->rank), nh = prod_hi(x, bs, bs->rank - 1, bs->rank);
  double cost = bh > 0 && mh > 0 && kh > 0 && nh > 0 ? ec_cost(COST_GEMM_MAC, (double)bh * mh * kh * nh) : 0;
  bool can_par = bh >= 2 && cost > 0 && ec_par_worth(e, cost) && !ir_attr_int(n, "onnxc.bias", 0) &&
                 !ir_attr(n, "epilogue");
  /* the packed GEMM with run-time M, N, K when the plan gave it scratch */
  Buf probe;
  buf_init(&probe);
  Buf *keep = e->b;
  e->b = &probe;
  int indent = e->indent;
  e->indent++;
  ec_line(e, "{ const float *pa = A, *pb = B; float *py = C;");
  bool packed = gemm_emit_matmul_rt(e, n, can_par);
  ec_line(e, "}");
  e->b = keep;
  e->indent = indent;
  if (packed && can_par)
    ec_open_items_rt(e, "o", "batch", bh, cost, arena_printf(x->a, "(%s) * (%s) * (%s) * (%s)", Bc, Mc, Kc, Nc),
                     COST_GEMM_MAC);
  else
    ec_line(e, "for (int64_t o = 0; o < batch; o++) {");
  e->indent++;
  /* batch indices i0..i(r-3) of the output; split_rows over r-1 dims gives them */
  split_rows(x, ys, r - 1);
  const Shape *in[2] = {as, bs};
  for (int k = 0; k < 2; k++) {
    Buf off;
    buf_init(&off);
    buf_puts(&off, "0");
    int lead = (r - 2) - (in[k]->rank - 2);
    for (int j = 0; j < r - 2; j++) {
      int t = j - lead;
      if (t < 0 || in[k]->d[t] == 1)
        continue;
      buf_printf(&off, " + i%d * %s", j, in_stride(x, in[k], t));
    }
    ec_line(e, "const float *%s = X%d + %s;", k ? "B" : "A", k, off.s);
    buf_free(&off);
  }
  ec_line(e, "float *C = Y0 + o * M * N;");
  if (packed) { /* packing pays from the size the static kernels start it at (gemm.h) */
    ec_line(e, "if (M >= 4 && M * N * K >= %d) {", GEMM_MIN_MACS);
    buf_puts(e->b, probe.s);
    ec_line(e, "} else {");
  }
  buf_free(&probe);
  /* four rows of C at a time: each row of B is loaded once for all four */
  ec_line(e, "int64_t i = 0;");
  ec_line(e, "for (; i + 4 <= M; i += 4) {");
  ec_line(e, "  float *restrict c0 = C + i * N, *restrict c1 = c0 + N, *restrict c2 = c1 + N, *restrict c3 = c2 + N;");
  ec_line(e, "  for (int64_t j = 0; j < N; j++) c0[j] = c1[j] = c2[j] = c3[j] = 0.0f;");
  ec_line(e, "  for (int64_t k = 0; k < K; k++) {");
  ec_line(e, "    const float a0 = A[i * K + k], a1 = A[(i + 1) * K + k], a2 = A[(i + 2) * K + k],");
  ec_line(e, "                a3 = A[(i + 3) * K + k];");
  ec_line(e, "    const float *restrict b = B + k * N;");
  ec_line(e, "    for (int64_t j = 0; j < N; j++) {");
  ec_line(e, "      const float v = b[j];");
  ec_line(e, "      c0[j] += a0 * v; c1[j] += a1 * v; c2[j] += a2 * v; c3[j] += a3 * v;");
  ec_line(e, "    }");
  ec_line(e, "  }");
  ec_line(e, "}");
  ec_line(e, "for (; i < M; i++) {");
  ec_line(e, "  float *restrict c = C + i * N;");
  ec_line(e, "  for (int64_t j = 0; j < N; j++) c[j] = 0.0f;");
  ec_line(e, "  for (int64_t k = 0; k < K; k++) {");
  ec_line(e, "    const float a = A[i * K + k], *restrict b = B + k * N;");
  ec_line(e, "    for (int64_t j = 0; j < N; j++) c[j] += a * b[j];");
  ec_line(e, "  }");
  ec_line(e, "}");
  if (packed)
    ec_line(e, "}");
  e->indent--;
  ec_line(e, "}");
  return true;
}

static bool last_axis(const Node *n, int64_t dflt, int rank, int *axis) {
  return shape_axis(ir_attr_int(n, "axis", dflt), rank, axis);
}

/* Softmax over the last axis (any opset: the flattened form is the same
 * there), the static kernel's passes (emit_norm.c: eight partial max and sum
 * chains, the vectorizable exp) with the row length known at run time; with
 * a fused prologue (the attention scale and mask, fuse_elementwise.c) the row
 * is computed into the output first. */
static bool k_softmax(Dx *x, const Node *n) {
  const Shape *s = &n->out[0]->shape;
  int axis;
  if (!last_axis(n, n->g->opset >= 13 ? -1 : 1, s->rank, &axis) || n->out[0]->dt != DT_F32 ||
      (!ir_attr(n, "prologue") && n->in[0]->dt != DT_F32) || (ir_attr(n, "prologue") && axis != s->rank - 1))
    return diag_error(x->e->d, n, "run-time extents: Softmax of float32 (a fused prologue: over the last axis)");
  EmitC *e = x->e;
  /* rows: contiguous runs (before opset 13 the input is coerced to 2-D at axis) */
  const char *rows_c = prod_c(x, s, 0, n->g->opset < 13 ? axis : s->rank - 1);
  const char *cols_c = n->g->opset < 13 ? prod_c(x, s, axis, s->rank) : dim_c(x, s, s->rank - 1);
  if (axis != s->rank - 1 && n->g->opset >= 13) {
    /* along an inner axis (YOLO's DFL): blocks of 64 adjacent columns at stride inner */
    ec_line(e, "const int64_t outer = %s, len = %s, inner = %s;", prod_c(x, s, 0, axis), dim_c(x, s, axis),
            prod_c(x, s, axis + 1, s->rank));
    ec_line(e, "for (int64_t o = 0; o < outer; o++) {");
    ec_line(e, "for (int64_t i0 = 0; i0 < inner; i0 += 64) {");
    ec_line(e, "const int64_t ni = inner - i0 < 64 ? inner - i0 : 64;");
    ec_line(e, "const float *xb = X0 + o * len * inner + i0;");
    ec_line(e, "float *yb = Y0 + o * len * inner + i0, mx[64], sum[64];");
    ec_line(e, "for (int64_t i = 0; i < ni; i++) { mx[i] = xb[i]; sum[i] = 0.0f; }");
    ec_line(e, "for (int64_t l = 1; l < len; l++)");
    ec_line(e, "  for (int64_t i = 0; i < ni; i++) mx[i] = xb[l * inner + i] > mx[i] ? xb[l * inner + i] : mx[i];");
    ec_line(e, "for (int64_t l = 0; l < len; l++) {");
    ec_line(e, "for (int64_t i = 0; i < ni; i++) {");
    ec_line(e, "const float v = onnxc_expf(xb[l * inner + i] - mx[i]);");
    ec_line(e, "yb[l * inner + i] = v;");
    ec_line(e, "sum[i] += v;");
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "for (int64_t i = 0; i < ni; i++) sum[i] = 1 / sum[i];");
    ec_line(e, "for (int64_t l = 0; l < len; l++)");
    ec_line(e, "  for (int64_t i = 0; i < ni; i++) yb[l * inner + i] *= sum[i];");
    ec_line(e, "}");
    ec_line(e, "}");
    return true;
  }
  ec_line(e, "const int64_t cols = %s, rows = %s;", cols_c, rows_c);
  ec_line(e, "(void)rows;");
  open_rows(x, s, n->g->opset < 13 ? axis : s->rank - 1, COST_ROW_ELEM, rows_c, cols_c);
  e->indent++;
  ec_line(e, "if (cols < 1)");
  ec_line(e, "  continue;");
  ec_line(e, "float *y = Y0 + o * cols;");
  if (ir_attr(n, "prologue")) {
    split_rows(x, s, s->rank);
    if (!fused_row(x, n, true, s))
      return false;
    ec_line(e, "const float *xr = y;");
  } else {
    ec_line(e, "const float *xr = X0 + o * cols;");
  }
  ec_line(e, "const int64_t c8 = cols / 8 * 8;");
  ec_line(e, "float mx = xr[0], sum = 0.0f;");
  ec_line(e, "int64_t l = 0;");
  ec_line(e, "if (c8) {");
  ec_line(e, "  float m8[8];");
  ec_line(e, "  for (int u = 0; u < 8; u++) m8[u] = xr[u];");
  ec_line(e, "  for (l = 8; l < c8; l += 8)");
  ec_line(e, "    for (int u = 0; u < 8; u++) m8[u] = xr[l + u] > m8[u] ? xr[l + u] : m8[u];");
  ec_line(e, "  mx = m8[0];");
  ec_line(e, "  for (int u = 1; u < 8; u++) mx = m8[u] > mx ? m8[u] : mx;");
  ec_line(e, "}");
  ec_line(e, "for (; l < cols; l++) mx = xr[l] > mx ? xr[l] : mx;");
  ec_line(e, "for (l = 0; l < cols; l++) y[l] = onnxc_expf(xr[l] - mx);");
  ec_line(e, "l = 0;");
  ec_line(e, "if (c8) {");
  ec_line(e, "  float s8[8];");
  ec_line(e, "  for (int u = 0; u < 8; u++) s8[u] = y[u];");
  ec_line(e, "  for (l = 8; l < c8; l += 8)");
  ec_line(e, "    for (int u = 0; u < 8; u++) s8[u] += y[l + u];");
  ec_line(e, "  sum = ((s8[0] + s8[1]) + (s8[2] + s8[3])) + ((s8[4] + s8[5]) + (s8[6] + s8[7]));");
  ec_line(e, "}");
  ec_line(e, "for (; l < cols; l++) sum += y[l];");
  ec_line(e, "sum = 1 / sum;");
  ec_line(e, "for (l = 0; l < cols; l++) y[l] *= sum;");
  e->indent--;
  ec_line(e, "}");
  return true;
}

/* LayerNormalization / RMSNormalization over dims [axis, rank) with scale and
 * bias of that size. */
static bool k_layernorm(Dx *x, const Node *n) {
  const Shape *s = &n->in[0]->shape;
  int axis;
  if (!last_axis(n, -1, s->rank, &axis) || n->out[0]->dt != DT_F32 ||
      (n->n_out > 1 && ec_has_output(n, 1)) || (n->n_out > 2 && ec_has_output(n, 2)))
    return diag_error(x->e->d, n, "run-time extents: LayerNormalization of float32, one output");
  int64_t inner = 1;
  for (int i = axis; i < s->rank; i++)
    inner = s->d[i] < 0 || inner < 0 ? -1 : inner * s->d[i];
  int64_t sn = 0, bn = 0;
  /* input 2 is LayerNorm's bias unless it is the fused residual (last) */
  bool bias = n->op == OP_LayerNormalization && ir_has_input(n, 2) &&
              !(ir_attr_int(n, "onnxc.fused_inputs", 0) == 1 && n->n_in == 3);
  if (inner < 0 || !shape_numel(&n->in[1]->shape, &sn) || sn != inner ||
      (bias && (!shape_numel(&n->in[2]->shape, &bn) || bn != inner)))
    return diag_error(x->e->d, n, "run-time extents: LayerNormalization needs static normalized "
                      "dims and a full scale and bias");
  /* the static kernel (emit_nn.c: statistics in double over eight partial
   * sums), its row count at run time */
  return ec_norm_rows_rt(x->e, n, prod_c(x, s, 0, axis), prod_hi(x, s, 0, axis));
}

/* Loops over every output index i0..i(r-1), reading X0 at `src` (C text over
 * the indices) into Y0 in order. */
static void index_nest(Dx *x, const Shape *ys, const char *src) {
  EmitC *e = x->e;
  int r = ys->rank;
  ec_line(e, "int64_t w = 0;");
  for (int j = 0; j < r; j++) {
    ec_line(e, "for (int64_t i%d = 0; i%d < %s; i%d++)", j, j, dim_c(x, ys, j), j);
    e->indent++;
  }
  ec_line(e, "Y0[w++] = X0[%s];", src);
  e->indent -= r;
}

static bool k_transpose(Dx *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  int cnt, r = xs->rank;
  const int64_t *perm = ir_attr_ints(n, "perm", &cnt);
  Buf src;
  buf_init(&src);
  buf_puts(&src, "0");
  for (int j = 0; j < r; j++) {
    int p = perm ? (int)perm[j] : r - 1 - j;
    buf_printf(&src, " + i%d * %s", j, in_stride(x, xs, p));
  }
  index_nest(x, ys, src.s);
  buf_free(&src);
  return true;
}

/* Input i (a constant or extents) as C text per element; count in *cnt. */
static bool operand_exts(Dx *x, const Node *n, int i, const char **out, int *cnt, int max) {
  const Value *v = n->in[i];
  if (v->sval) {
    if (v->n_sval > max)
      return false;
    for (int k = 0; k < v->n_sval; k++)
      out[k] = ext_of(x, v->sval[k]);
    *cnt = v->n_sval;
    return true;
  }
  if (v->kind != VK_CONST || v->konst->numel > max)
    return false;
  for (int64_t k = 0; k < v->konst->numel; k++)
    out[k] = arena_printf(x->a, "%lld", (long long)tensor_get_i64(v->konst, k));
  *cnt = (int)v->konst->numel;
  return true;
}

/* Slice; along an axis listed with a step other than 1, constant bounds
 * (what infer_symbolic admits), clamped here as the spec says. */
static bool k_slice(Dx *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  const char *st[IR_MAX_RANK], *ax[IR_MAX_RANK];
  int ns, na = 0;
  const char *start[IR_MAX_RANK];
  for (int j = 0; j < xs->rank; j++)
    start[j] = "0";
  /* starts that are not extents (-seq, a constant -19) are read at run time,
   * counted from the end and clamped as the spec says; the output's extents
   * (inference) already count them so */
  bool rt = !operand_exts(x, n, 1, st, &ns, IR_MAX_RANK);
  if (rt) {
    const Shape *ss = &n->in[1]->shape;
    ns = ss->rank == 1 && ss->d[0] > 0 && ss->d[0] <= IR_MAX_RANK ? (int)ss->d[0] : 0;
  }
  if (ns == 0 || (ir_has_input(n, 3) && !operand_exts(x, n, 3, ax, &na, IR_MAX_RANK)))
    return diag_error(x->e->d, n, "run-time extents: axes must be constants and starts a known count");
  int64_t step[IR_MAX_RANK], step_of[IR_MAX_RANK]; /* per listed axis, per input axis */
  for (int j = 0; j < xs->rank; j++)
    step_of[j] = 1;
  for (int k = 0; k < ns; k++)
    step[k] = 1;
  if (ir_has_input(n, 4)) {
    const Value *sp = n->in[4];
    if (sp->kind != VK_CONST || sp->konst->numel != ns)
      return diag_error(x->e->d, n, "run-time extents: Slice steps must be constants");
    for (int k = 0; k < ns; k++)
      if ((step[k] = tensor_get_i64(sp->konst, k)) == 0)
        return diag_error(x->e->d, n, "run-time extents: a Slice step of 0");
  }
  for (int k = 0; k < ns; k++) {
    int a = k;
    if (na && !shape_axis(strtoll(ax[k], NULL, 10), xs->rank, &a))
      return diag_error(x->e->d, n, "run-time extents: bad axis");
    if (step[k] != 1) {
      /* constant bounds (infer_symbolic.c stepped_len), clamped as the spec
       * says for the step's sign; INT_MAX-style bounds kept in range */
      if (rt)
        return diag_error(x->e->d, n, "run-time extents: a stepped Slice needs constant starts");
      const char *dim = dim_c(x, xs, a);
      long long c = strtoll(st[k], NULL, 10), lim = (long long)1 << 40;
      c = c > lim ? lim : c < -lim ? -lim : c;
      ec_line(x->e, "const int64_t s%d = %lld < 0 ? %lld + (%s) : %lld;", k, c, c, dim, c);
      if (step[k] > 0)
        ec_line(x->e, "const int64_t c%d = s%d < 0 ? 0 : s%d > (%s) ? (%s) : s%d;", k, k, k, dim, dim, k);
      else
        ec_line(x->e, "const int64_t c%d = s%d < 0 ? 0 : s%d > (%s) - 1 ? (%s) - 1 : s%d;", k, k, k, dim, dim, k);
      start[a] = arena_printf(x->a, "c%d", k);
      step_of[a] = step[k];
      continue;
    }
    if (rt || st[k][0] == '-') {
      const char *dim = dim_c(x, xs, a);
      ec_line(x->e, "const int64_t s%d = (int64_t)X1[%d] < 0 ? (int64_t)X1[%d] + (%s) : (int64_t)X1[%d];", k, k, k,
              dim, k);
      ec_line(x->e, "const int64_t c%d = s%d < 0 ? 0 : s%d > (%s) ? (%s) : s%d;", k, k, k, dim, dim, k);
      start[a] = arena_printf(x->a, "c%d", k);
    } else {
      start[a] = st[k];
    }
  }
  Buf src;
  buf_init(&src);
  buf_puts(&src, "0");
  for (int j = 0; j < xs->rank; j++)
    if (step_of[j] == 1)
      buf_printf(&src, " + (i%d + %s) * %s", j, start[j], in_stride(x, xs, j));
    else
      buf_printf(&src, " + (i%d * (%lld) + %s) * %s", j, (long long)step_of[j], start[j], in_stride(x, xs, j));
  index_nest(x, ys, src.s);
  buf_free(&src);
  return true;
}

static bool k_gather(Dx *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *is = &n->in[1]->shape;
  int axis;
  if (!shape_axis(ir_attr_int(n, "axis", 0), xs->rank, &axis))
    return diag_error(x->e->d, n, "run-time extents: bad axis");
  EmitC *e = x->e;
  ec_line(e, "const int64_t outer = %s, dim = %s, ni = %s, inner = %s;", prod_c(x, xs, 0, axis),
          dim_c(x, xs, axis), prod_c(x, is, 0, is->rank), prod_c(x, xs, axis + 1, xs->rank));
  ec_line(e, "for (int64_t o = 0; o < outer; o++)");
  ec_line(e, "  for (int64_t j = 0; j < ni; j++) {");
  ec_line(e, "    int64_t ix = (int64_t)X1[j];");
  ec_line(e, "    if (ix < 0) ix += dim;");
  ec_line(e, "    if (ix < 0 || ix >= dim) return ONNXC_ERR_BAD_INDEX;");
  ec_line(e, "    for (int64_t k = 0; k < inner; k++)");
  ec_line(e, "      Y0[(o * ni + j) * inner + k] = X0[(o * dim + ix) * inner + k];");
  ec_line(e, "  }");
  return true;
}

/* Concat along any axis: per outer index, each input's chunk in turn. */
static bool k_concat(Dx *x, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  int axis;
  if (!shape_axis(ir_attr_int(n, "axis", 0), ys->rank, &axis))
    return diag_error(x->e->d, n, "run-time extents: bad axis");
  EmitC *e = x->e;
  const char *T = dtype_ctype(n->out[0]->dt);
  ec_line(e, "const int64_t outer = %s, inner = %s;", prod_c(x, ys, 0, axis), prod_c(x, ys, axis + 1, ys->rank));
  ec_line(e, "%s *y = Y0;", T);
  ec_line(e, "for (int64_t o = 0; o < outer; o++) {");
  e->indent++;
  for (int i = 0; i < n->n_in; i++) {
    if (!ir_has_input(n, i))
      continue;
    ec_line(e, "{ const int64_t c = %s * inner; const %s *src = X%d + o * c;", dim_c(x, &n->in[i]->shape, axis), T, i);
    ec_line(e, "  for (int64_t k = 0; k < c; k++) y[k] = src[k];");
    ec_line(e, "  y += c; }");
  }
  e->indent--;
  ec_line(e, "}");
  return true;
}

/* ReduceSum/Mean/Max/Min/Prod/SumSquare/L1/L2 over one axis, keepdims either way. */
static bool k_reduce(Dx *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  int count = 0;
  const int64_t *axes = ir_attr_ints(n, "axes", &count);
  int64_t ax_in[IR_MAX_RANK];
  if (!axes && ir_has_input(n, 1) && n->in[1]->kind == VK_CONST && n->in[1]->konst->numel <= IR_MAX_RANK) {
    count = (int)n->in[1]->konst->numel;
    for (int k = 0; k < count; k++)
      ax_in[k] = tensor_get_i64(n->in[1]->konst, k);
    axes = ax_in;
  }
  /* the reduced axes must be one run lo..hi (GlobalAveragePool's [2, 3]):
   * reduced as one axis of their product; no axes (and no noop flag): all */
  bool ok = n->out[0]->dt == DT_F32 && xs->rank >= 1 && (!ir_has_input(n, 1) || axes);
  int lo = xs->rank, hi = -1;
  bool seen[IR_MAX_RANK] = {false};
  if (ok && count == 0) {
    ok = ir_attr_int(n, "noop_with_empty_axes", 0) == 0;
    lo = 0, hi = xs->rank - 1;
  }
  for (int k = 0; ok && k < count; k++) {
    int a;
    ok = shape_axis(axes[k], xs->rank, &a) && !seen[a];
    if (ok) {
      seen[a] = true;
      lo = a < lo ? a : lo;
      hi = a > hi ? a : hi;
    }
  }
  ok = ok && hi >= lo && hi - lo + 1 == (count ? count : xs->rank);
  if (!ok)
    return diag_error(x->e->d, n, "run-time extents: %s of float32 over constant, consecutive axes", n->op_type);
  int axis = lo;
  /* sums accumulate in double, as the static kernels (emit_reduce.c) */
  const char *acc_t = "double", *init = "0.0", *step = "acc += v;", *fin = "(float)acc";
  switch (n->op) {
  case OP_ReduceMean: fin = "(float)(acc / (double)len)"; break;
  case OP_ReduceMax: acc_t = "float"; init = "-INFINITY"; step = "acc = v > acc || v != v ? v : acc;"; break;
  case OP_ReduceMin: acc_t = "float"; init = "INFINITY"; step = "acc = v < acc || v != v ? v : acc;"; break;
  case OP_ReduceProd: init = "1.0"; step = "acc *= v;"; break;
  case OP_ReduceSumSquare: step = "acc += (double)v * v;"; break;
  case OP_ReduceL1: step = "acc += fabs((double)v);"; break;
  case OP_ReduceL2: step = "acc += (double)v * v;"; fin = "(float)sqrt(acc)"; break;
  default: break;
  }
  EmitC *e = x->e;
  ec_line(e, "const int64_t outer = %s, len = %s, inner = %s;", prod_c(x, xs, 0, axis), prod_c(x, xs, axis, hi + 1),
          prod_c(x, xs, hi + 1, xs->rank));
  ec_line(e, "for (int64_t o = 0; o < outer; o++)");
  ec_line(e, "  for (int64_t i = 0; i < inner; i++) {");
  ec_line(e, "    %s acc = %s;", acc_t, init);
  ec_line(e, "    for (int64_t j = 0; j < len; j++) { const float v = X0[(o * len + j) * inner + i]; %s }", step);
  ec_line(e, "    Y0[o * inner + i] = %s;", fin);
  ec_line(e, "  }");
  return true;
}

/* Gemm with run-time M: Y = alpha * A (M x K) * op(B) + beta * C, C broadcast. */
static bool k_gemm(Dx *x, const Node *n) {
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape, *ys = &n->out[0]->shape;
  if (n->out[0]->dt != DT_F32 || ir_attr_int(n, "transA", 0) || as->rank != 2)
    return diag_error(x->e->d, n, "run-time extents: Gemm of float32 without transA");
  bool tb = ir_attr_int(n, "transB", 0) != 0;
  float alpha = ir_attr_float(n, "alpha", 1.0f), beta = ir_attr_float(n, "beta", 1.0f);
  EmitC *e = x->e;
  ec_line(e, "const int64_t M = %s, K = %s, N = %s;", dim_c(x, as, 0), dim_c(x, as, 1), dim_c(x, ys, 1));
  ec_line(e, "for (int64_t i = 0; i < M; i++) {");
  ec_line(e, "  float *c = Y0 + i * N;");
  ec_line(e, "  for (int64_t j = 0; j < N; j++) c[j] = 0.0f;");
  if (tb)
    ec_line(e, "  for (int64_t j = 0; j < N; j++) { float acc = 0.0f; for (int64_t k = 0; k < K; k++) "
               "acc += X0[i * K + k] * X1[j * K + k]; c[j] = acc; }");
  else
    ec_line(e, "  for (int64_t k = 0; k < K; k++) { const float a = X0[i * K + k]; const float *b = X1 + k * N; "
               "for (int64_t j = 0; j < N; j++) c[j] += a * b[j]; }");
  Buf cb;
  buf_init(&cb);
  if (ir_has_input(n, 2) && beta != 0.0f) {
    const Shape *cs = &n->in[2]->shape;
    bool row = cs->rank == 2 && cs->d[0] != 1, col = cs->rank >= 1 && cs->d[cs->rank - 1] != 1;
    buf_printf(&cb, " + %.9ef * X2[%s%s%s]", (double)beta, row ? "i * " : "", row ? (col ? "N + " : "1 + ") : "",
               col ? "j" : "0");
    if (row && !col) { /* C of shape [M, 1] */
      cb.len = 0;
      buf_printf(&cb, " + %.9ef * X2[i]", (double)beta);
    }
  }
  ec_line(e, "  for (int64_t j = 0; j < N; j++) c[j] = %.9ef * c[j]%s;", (double)alpha, cb.len ? cb.s : "");
  ec_line(e, "}");
  (void)bs;
  buf_free(&cb);
  return true;
}

/* ---- windows over extents known at run time (Conv, pools) ------------------------------ */

/* The begin pad of spatial dim i as C text: the attribute, or for auto_pad
 * SAME_* the split of max(0, (out - 1) * s + dk - in) (infer_conv.c's rule). */
static const char *pad_c(Dx *x, const Node *n, const Shape *xs, const Shape *ys, int i, int r,
                          const int64_t *k, bool end) {
  const char *ap = ir_attr_str(n, "auto_pad", "NOTSET");
  int64_t s[IR_MAX_RANK], dil[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
  window_ints(n, "strides", r, 1, s);
  window_ints(n, "dilations", r, 1, dil);
  window_ints(n, "pads", 2 * r, 0, pads);
  if (strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER"))
    return strcmp(ap, "VALID") ? arena_printf(x->a, "%lld", (long long)pads[end ? r + i : i]) : "0";
  int64_t dk = (k[i] - 1) * dil[i] + 1;
  const char *tot = arena_printf(x->a, "((%s - 1) * %lld + %lld - %s)", dim_c(x, ys, 2 + i), (long long)s[i],
                                 (long long)dk, dim_c(x, xs, 2 + i));
  bool upper_begin = !strcmp(ap, "SAME_UPPER") != end; /* SAME_UPPER: the smaller half first */
  return arena_printf(x->a, upper_begin ? "(%s > 0 ? %s / 2 : 0)" : "(%s > 0 ? %s - %s / 2 : 0)", tot, tot, tot);
}

/* Declares N, C, H, W, OH, OW, the window (KH KW SH SW DH DW) and pads PT PL
 * for a 1-D or 2-D window (1-D as H = 1). */
static bool window_decl(Dx *x, const Node *n, const int64_t *kernel, int *r_out) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  int r = xs->rank - 2;
  if (r < 1 || r > 2)
    return diag_error(x->e->d, n, "run-time extents: %s over 1 or 2 spatial dims only", n->op_type);
  int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], dil[IR_MAX_RANK];
  if (kernel)
    memcpy(k, kernel, sizeof(int64_t) * (size_t)r);
  else
    window_ints(n, "kernel_shape", r, 1, k);
  window_ints(n, "strides", r, 1, s);
  window_ints(n, "dilations", r, 1, dil);
  EmitC *e = x->e;
  ec_line(e, "const int64_t N = %s, C = %s, H = %s, W = %s, OH = %s, OW = %s;", dim_c(x, xs, 0), dim_c(x, xs, 1),
          r == 2 ? dim_c(x, xs, 2) : "1", dim_c(x, xs, r + 1), r == 2 ? dim_c(x, ys, 2) : "1", dim_c(x, ys, r + 1));
  ec_line(e, "const int64_t KH = %lld, KW = %lld, SH = %lld, SW = %lld, DH = %lld, DW = %lld;",
          (long long)(r == 2 ? k[0] : 1), (long long)k[r - 1], (long long)(r == 2 ? s[0] : 1), (long long)s[r - 1],
          (long long)(r == 2 ? dil[0] : 1), (long long)dil[r - 1]);
  ec_line(e, "const int64_t PT = %s, PL = %s, PB = %s, PR = %s;", r == 2 ? pad_c(x, n, xs, ys, 0, r, k, false) : "0",
          pad_c(x, n, xs, ys, r - 1, r, k, false), r == 2 ? pad_c(x, n, xs, ys, 0, r, k, true) : "0",
          pad_c(x, n, xs, ys, r - 1, r, k, true));
  ec_line(e, "(void)N; (void)C; (void)KH; (void)KW; (void)SH; (void)SW; (void)DH; (void)DW; (void)PT; (void)PL;");
  ec_line(e, "(void)PB; (void)PR;");
  *r_out = r;
  return true;
}

/* Conv: of one group with a weight packed at compile time, an im2col and the
 * packed GEMM (gemm_emit_conv_rt); otherwise (grouped, depthwise, small)
 * direct loops whose innermost runs along an output row, branch-free over
 * the columns a tap reads inside the image. A fused elementwise epilogue
 * (fuse_elementwise.c) applies in the GEMM's store or in a last pass over
 * each output plane. */
static bool k_conv(Dx *x, const Node *n) {
  const Shape *ws = &n->in[1]->shape;
  if (n->out[0]->dt != DT_F32 || !shape_is_static(ws) || ir_attr(n, "activation") || ir_has_input(n, 3))
    return diag_error(x->e->d, n, "run-time extents: a Conv needs float32 data, a static weight and no "
                      "fused activation (this one: %s data, %s weight)", dtype_name(n->out[0]->dt),
                      shape_is_static(ws) ? "static" : "run-time");
  int r;
  int64_t k[2] = {ws->d[2], ws->rank > 3 ? ws->d[3] : 1};
  if (ws->rank == 3)
    k[0] = ws->d[2];
  if (!window_decl(x, n, k, &r))
    return false;
  EmitC *e = x->e;
  if (gemm_emit_conv_rt(e, n))
    return true;
  int64_t group = ir_attr_int(n, "group", 1), m = ws->d[0], cg = ws->d[1];
  ec_line(e, "const int64_t M = %lld, CG = %lld, MG = %lld;", (long long)m, (long long)cg, (long long)(m / group));
  /* per output row: each (channel, kernel row) adds its taps in one pass over
   * the row, the interior (every tap inside the image) branch-free with the
   * taps unrolled, the borders checked; per element the taps in (c, kh, kw)
   * order, as the plain loops sum them */
  ec_line(e, "for (int64_t b = 0; b < N; b++) {");
  ec_line(e, "for (int64_t oc = 0; oc < M; oc++) {");
  ec_line(e, "const int64_t c0 = oc / MG * CG;");
  ec_line(e, "float *yp = Y0 + (b * M + oc) * OH * OW;");
  ec_line(e, "const float bv = %s;", ir_has_input(n, 2) ? "X2[oc]" : "0.0f");
  ec_line(e, "int64_t L = 0, R = OW;"); /* ow whose taps are all inside the image */
  ec_line(e, "for (int64_t kw = 0; kw < KW; kw++) {");
  ec_line(e, "const int64_t off = kw * DW - PL;");
  ec_line(e, "const int64_t lo = off >= 0 ? 0 : (-off + SW - 1) / SW, hi = W - off <= 0 ? 0 : (W - off - 1) / SW + 1;");
  ec_line(e, "L = lo > L ? lo : L;");
  ec_line(e, "R = hi < R ? hi : R;");
  ec_line(e, "}");
  ec_line(e, "if (L > R)");
  ec_line(e, "  L = R = OW;");
  ec_line(e, "for (int64_t oh = 0; oh < OH; oh++) {");
  ec_line(e, "float *yr = yp + oh * OW;");
  ec_line(e, "for (int64_t ow = 0; ow < OW; ow++) yr[ow] = bv;");
  ec_line(e, "for (int64_t c = 0; c < CG; c++) {");
  ec_line(e, "for (int64_t kh = 0; kh < KH; kh++) {");
  ec_line(e, "const int64_t ih = oh * SH - PT + kh * DH;");
  ec_line(e, "if (ih < 0 || ih >= H) continue;");
  ec_line(e, "const float *xr = X0 + ((b * C + c0 + c) * H + ih) * W;");
  ec_line(e, "const float *wr = X1 + ((oc * CG + c) * KH + kh) * KW;");
  ec_line(e, "for (int64_t ow = 0; ow < OW; ow++) {");
  ec_line(e, "if (ow == L) ow = R;");
  ec_line(e, "if (ow >= OW) break;");
  ec_line(e, "float acc = yr[ow];");
  ec_line(e, "for (int64_t kw = 0; kw < KW; kw++) {");
  ec_line(e, "const int64_t iw = ow * SW - PL + kw * DW;");
  ec_line(e, "if (iw >= 0 && iw < W) acc += wr[kw] * xr[iw];");
  ec_line(e, "}");
  ec_line(e, "yr[ow] = acc;");
  ec_line(e, "}");
  ec_line(e, "for (int64_t ow = L; ow < R; ow++) {");
  ec_line(e, "float acc = yr[ow];");
  ec_line(e, "for (int64_t kw = 0; kw < KW; kw++) acc += wr[kw] * xr[ow * SW - PL + kw * DW];");
  ec_line(e, "yr[ow] = acc;");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  if (ir_attr(n, "epilogue")) {
    Buf v;
    buf_init(&v);
    gemm_act_expr(n, "v", &v);
    ec_line(e, "for (int64_t i = 0; i < OH * OW; i++) {");
    ec_line(e, "const float v = yp[i];");
    ec_line(e, "yp[i] = %s;", v.s);
    ec_line(e, "}");
    buf_free(&v);
  }
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ConvTranspose (2-D, NCHW; no output_shape): each input pixel scattered
 * through the kernel into the output, which starts at the bias; the taps
 * landing inside the output only (begin pads from the pads attribute, or
 * SAME's split of the total padding). */
static bool k_conv_transpose(Dx *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ws = &n->in[1]->shape, *ys = &n->out[0]->shape;
  const char *ap = ir_attr_str(n, "auto_pad", "NOTSET");
  if (xs->rank != 4 || !shape_is_static(ws) || n->out[0]->dt != DT_F32 || ir_attr(n, "output_shape"))
    return diag_error(x->e->d, n, "run-time extents: ConvTranspose of float32, 2-D, a static weight, no "
                      "output_shape");
  int64_t s[2], dil[2], pads[4], g = ir_attr_int(n, "group", 1);
  window_ints(n, "strides", 2, 1, s);
  window_ints(n, "dilations", 2, 1, dil);
  window_ints(n, "pads", 4, 0, pads);
  const char *pt[2];
  for (int i = 0; i < 2; i++) {
    if (!strncmp(ap, "SAME", 4)) { /* total = in*s... the spec: total = s*(in-1) + opad + (k-1)*d + 1 - out */
      const char *tot = arena_printf(x->a, "(%lld * (%s - 1) + %lld - %s)", (long long)s[i], dim_c(x, xs, 2 + i),
                                     (long long)((ws->d[2 + i] - 1) * dil[i] + 1), dim_c(x, ys, 2 + i));
      pt[i] = arena_printf(x->a, strcmp(ap, "SAME_UPPER") == 0 ? "(%s / 2)" : "(%s - %s / 2)", tot, tot);
    } else {
      pt[i] = arena_printf(x->a, "%lld", (long long)(strcmp(ap, "VALID") ? pads[i] : 0));
    }
  }
  EmitC *e = x->e;
  ec_line(e, "const int64_t N = %s, C = %lld, H = %s, W = %s, M = %lld, OH = %s, OW = %s;", dim_c(x, xs, 0),
          (long long)xs->d[1], dim_c(x, xs, 2), dim_c(x, xs, 3), (long long)(ws->d[1] * g), dim_c(x, ys, 2),
          dim_c(x, ys, 3));
  ec_line(e, "const int64_t KH = %lld, KW = %lld, SH = %lld, SW = %lld, DH = %lld, DW = %lld, PT = %s, PL = %s;",
          (long long)ws->d[2], (long long)ws->d[3], (long long)s[0], (long long)s[1], (long long)dil[0],
          (long long)dil[1], pt[0], pt[1]);
  ec_line(e, "const int64_t CG = C / %lld, MG = M / %lld;", (long long)g, (long long)g);
  ec_line(e, "for (int64_t b = 0; b < N; b++) {");
  ec_line(e, "for (int64_t m = 0; m < M; m++) {");
  ec_line(e, "float *yp = Y0 + (b * M + m) * OH * OW;");
  ec_line(e, "const float bv = %s;", ir_has_input(n, 2) ? "X2[m]" : "0.0f");
  ec_line(e, "for (int64_t i = 0; i < OH * OW; i++) yp[i] = bv;");
  ec_line(e, "const int64_t gr = m / MG, mm = m %% MG;");
  ec_line(e, "for (int64_t c = gr * CG; c < (gr + 1) * CG; c++) {");
  ec_line(e, "const float *xp = X0 + (b * C + c) * H * W;");
  ec_line(e, "for (int64_t kh = 0; kh < KH; kh++) {");
  ec_line(e, "for (int64_t kw = 0; kw < KW; kw++) {");
  ec_line(e, "const float wv = X1[((c * MG + mm) * KH + kh) * KW + kw];");
  ec_line(e, "for (int64_t ih = 0; ih < H; ih++) {");
  ec_line(e, "const int64_t oh = ih * SH - PT + kh * DH;");
  ec_line(e, "if (oh < 0 || oh >= OH) continue;");
  ec_line(e, "float *yr = yp + oh * OW;");
  ec_line(e, "const float *xr = xp + ih * W;");
  ec_line(e, "for (int64_t iw = 0; iw < W; iw++) {");
  ec_line(e, "const int64_t ow = iw * SW - PL + kw * DW;");
  ec_line(e, "if (ow >= 0 && ow < OW) yr[ow] += wv * xr[iw];");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* MaxPool / AveragePool row by row: each tap of the window adds a run of an
 * input row to the output row, branch-free over the columns inside the
 * image; an average divides by its count of rows times columns (inside the
 * image, or the padded extent with count_include_pad), in the taps' order of
 * the plain loops. */
static bool k_pool(Dx *x, const Node *n) {
  if (n->out[0]->dt != DT_F32 || (n->n_out > 1 && ec_has_output(n, 1)) || ir_attr_int(n, "ceil_mode", 0))
    return diag_error(x->e->d, n, "run-time extents: %s of float32, one output, no ceil_mode", n->op_type);
  int r;
  if (!window_decl(x, n, NULL, &r))
    return false;
  bool mx = n->op == OP_MaxPool, cip = ir_attr_int(n, "count_include_pad", 0) != 0;
  EmitC *e = x->e;
  const char *acc = mx ? "yr[ow] = v > yr[ow] || v != v ? v : yr[ow]" : "yr[ow] += v";
  ec_line(e, "for (int64_t p = 0; p < N * C; p++) {");
  ec_line(e, "for (int64_t oh = 0; oh < OH; oh++) {");
  ec_line(e, "float *yr = Y0 + (p * OH + oh) * OW;");
  ec_line(e, "int64_t ch = 0;");
  ec_line(e, "(void)ch;");
  ec_line(e, "for (int64_t ow = 0; ow < OW; ow++) yr[ow] = %s;", mx ? "-INFINITY" : "0.0f");
  ec_line(e, "for (int64_t kh = 0; kh < KH; kh++) {");
  ec_line(e, "const int64_t ih = oh * SH - PT + kh * DH;");
  if (!mx && cip) /* the padded extent counts: positions inside input + pads */
    ec_line(e, "if (ih >= -PT && ih < H + PB) ch++;");
  ec_line(e, "if (ih < 0 || ih >= H) continue;");
  if (!mx && !cip)
    ec_line(e, "ch++;");
  ec_line(e, "const float *xr = X0 + (p * H + ih) * W;");
  ec_line(e, "for (int64_t kw = 0; kw < KW; kw++) {");
  ec_line(e, "const int64_t off = kw * DW - PL;");
  /* ow in [lo, hi): 0 <= ow * SW + off < W */
  ec_line(e, "int64_t lo = off >= 0 ? 0 : (-off + SW - 1) / SW, hi = W - off <= 0 ? 0 : (W - off - 1) / SW + 1;");
  ec_line(e, "if (hi > OW) hi = OW;");
  ec_line(e, "if (SW == 1)");
  ec_line(e, "  for (int64_t ow = lo; ow < hi; ow++) { const float v = xr[ow + off]; %s; }", acc);
  ec_line(e, "else");
  ec_line(e, "  for (int64_t ow = lo; ow < hi; ow++) { const float v = xr[ow * SW + off]; %s; }", acc);
  ec_line(e, "}");
  ec_line(e, "}");
  if (!mx) {
    ec_line(e, "for (int64_t ow = 0; ow < OW; ow++) {");
    ec_line(e, "int64_t cw = 0;");
    ec_line(e, "for (int64_t kw = 0; kw < KW; kw++) {");
    ec_line(e, "const int64_t iw = ow * SW - PL + kw * DW;");
    ec_line(e, cip ? "if (iw >= -PL && iw < W + PR) cw++;" : "if (iw >= 0 && iw < W) cw++;");
    ec_line(e, "}");
    ec_line(e, "yr[ow] = ch * cw != 0 ? yr[ow] / (float)(ch * cw) : 0.0f;");
    ec_line(e, "}");
  }
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

static bool k_global_pool(Dx *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (n->out[0]->dt != DT_F32)
    return diag_error(x->e->d, n, "run-time extents: %s of float32 only", n->op_type);
  bool mx = n->op == OP_GlobalMaxPool;
  EmitC *e = x->e;
  ec_line(e, "const int64_t P = %s, S = %s;", prod_c(x, xs, 0, 2), prod_c(x, xs, 2, xs->rank));
  ec_line(e, "for (int64_t p = 0; p < P; p++) {");
  ec_line(e, "  %s acc = %s;", mx ? "float" : "double", mx ? "-INFINITY" : "0.0");
  ec_line(e, "  for (int64_t i = 0; i < S; i++) { const float v = X0[p * S + i]; %s }",
          mx ? "acc = v > acc || v != v ? v : acc;" : "acc += v;");
  ec_line(e, "  Y0[p] = %s;", mx ? "acc" : "(float)(acc / (double)S)");
  ec_line(e, "}");
  return true;
}

static bool k_batchnorm(Dx *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (n->out[0]->dt != DT_F32 || n->n_out > 1 || ir_attr_int(n, "training_mode", 0))
    return diag_error(x->e->d, n, "run-time extents: BatchNormalization of float32, inference");
  float eps = ir_attr_float(n, "epsilon", 1e-5f);
  EmitC *e = x->e;
  ec_line(e, "const int64_t N = %s, C = %s, S = %s;", dim_c(x, xs, 0), dim_c(x, xs, 1), prod_c(x, xs, 2, xs->rank));
  ec_line(e, "for (int64_t b = 0; b < N; b++)");
  ec_line(e, "  for (int64_t c = 0; c < C; c++) {");
  ec_line(e, "    const float k = X1[c] / sqrtf(X4[c] + %.9ef), o = X2[c] - X3[c] * k;", (double)eps);
  ec_line(e, "    for (int64_t i = 0; i < S; i++) Y0[(b * C + c) * S + i] = X0[(b * C + c) * S + i] * k + o;");
  ec_line(e, "  }");
  return true;
}

/* Split along an axis: each output takes its run of the axis from every
 * outer row (k_concat the other way round). */
static bool k_split(Dx *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  int axis;
  if (!shape_axis(ir_attr_int(n, "axis", 0), xs->rank, &axis))
    return diag_error(x->e->d, n, "run-time extents: bad axis");
  EmitC *e = x->e;
  const char *T = dtype_ctype(n->in[0]->dt);
  ec_line(e, "const int64_t outer = %s, inner = %s;", prod_c(x, xs, 0, axis), prod_c(x, xs, axis + 1, xs->rank));
  ec_line(e, "const %s *src = X0;", T);
  ec_line(e, "for (int64_t o = 0; o < outer; o++) {");
  e->indent++;
  for (int i = 0; i < n->n_out; i++) {
    const char *c = dim_c(x, &n->out[i]->shape, axis);
    if (!ec_has_output(n, i)) {
      ec_line(e, "(void)Y%d;", i);
      ec_line(e, "src += %s * inner;", c);
      continue;
    }
    ec_line(e, "{ const int64_t c = %s * inner; %s *y = Y%d + o * c;", c, T, i);
    ec_line(e, "  for (int64_t k = 0; k < c; k++) y[k] = src[k];");
    ec_line(e, "  src += c; }");
  }
  e->indent--;
  ec_line(e, "}");
  return true;
}

/* Resize / Upsample over the last two axes (NCHW) with run-time extents:
 * nearest or linear, the coordinate transformations of the static kernel
 * (emit_sample.c, whose tap rules these follow: linear reads floor(x) and the
 * next index, clamped to the image; nearest rounds by nearest_mode), the
 * source coordinate computed per output row and column instead of tabled. */
static const char *resize_src(Dx *x, const char *ctm, const char *y, const char *in, const char *s) {
  if (!strcmp(ctm, "align_corners"))
    return arena_printf(x->a, "(%s * (double)%s == 1.0 ? 0.0 : (double)%s * ((double)%s - 1) / (%s * (double)%s - 1))",
                        s, in, y, in, s, in);
  if (!strcmp(ctm, "asymmetric"))
    return arena_printf(x->a, "((double)%s / %s)", y, s);
  if (!strcmp(ctm, "pytorch_half_pixel"))
    return arena_printf(x->a, "(%s * (double)%s == 1.0 ? -0.5 : ((double)%s + 0.5) / %s - 0.5)", s, in, y, s);
  if (!strcmp(ctm, "tf_half_pixel_for_nn"))
    return arena_printf(x->a, "(((double)%s + 0.5) / %s)", y, s);
  return arena_printf(x->a, "(((double)%s + 0.5) / %s - 0.5)", y, s); /* half_pixel */
}

static bool k_resize(Dx *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  bool old = n->op == OP_Upsample || n->g->opset < 11;
  int r = xs->rank, scales_slot = n->op == OP_Upsample ? (n->g->opset < 9 ? -1 : 1) : (old ? 1 : 2);
  const char *mode = ir_attr_str(n, "mode", "nearest");
  const char *ctm = old ? "asymmetric" : ir_attr_str(n, "coordinate_transformation_mode", "half_pixel");
  const char *nm = old ? "floor" : ir_attr_str(n, "nearest_mode", "round_prefer_floor");
  bool lin = !strcmp(mode, "linear") || !strcmp(mode, "bilinear");
  DType t = n->out[0]->dt;
  bool ok = r >= 2 && (lin || !strcmp(mode, "nearest")) && !ir_attr_int(n, "antialias", 0) && !ir_attr(n, "axes") &&
            !strcmp(ir_attr_str(n, "keep_aspect_ratio_policy", "stretch"), "stretch") &&
            (t == DT_F32 || t == DT_F64 || (!lin && dtype_is_int(t))) &&
            (!strcmp(ctm, "half_pixel") || !strcmp(ctm, "pytorch_half_pixel") || !strcmp(ctm, "align_corners") ||
             !strcmp(ctm, "asymmetric") || !strcmp(ctm, "tf_half_pixel_for_nn"));
  for (int i = 0; ok && i + 2 < r; i++) /* only the last two axes resized */
    ok = dx_equal(shape_dx(x->a, xs, i), shape_dx(x->a, ys, i));
  if (!ok)
    return diag_error(x->e->d, n, "run-time extents: %s needs nearest or linear over the last two axes, "
                      "a half_pixel, pytorch_half_pixel, align_corners, asymmetric or tf_half_pixel_for_nn "
                      "transformation, no antialias or axes", n->op_type);
  /* the two scales: constants (scales given) or output / input (sizes given) */
  const char *sc[2];
  double v[2 * IR_MAX_RANK];
  int cnt = 0;
  const Value *sv = scales_slot >= 0 && ir_has_input(n, scales_slot) ? n->in[scales_slot] : NULL;
  if (scales_slot < 0) {
    const Attr *at = ir_attr(n, "scales");
    cnt = at ? at->n : 0;
    for (int i = 0; i < cnt && i < 2 * IR_MAX_RANK; i++)
      v[i] = at->u.fs[i];
  } else if (sv && sv->kind == VK_CONST && sv->konst->numel == r) {
    cnt = r;
    for (int i = 0; i < r; i++)
      v[i] = tensor_get_f64(sv->konst, i);
  }
  for (int i = 0; i < 2; i++) {
    int ax = r - 2 + i;
    sc[i] = cnt == r ? arena_printf(x->a, "%.17g", v[ax])
                     : arena_printf(x->a, "((double)%s / (double)%s)", dim_c(x, ys, ax), dim_c(x, xs, ax));
  }
  EmitC *e = x->e;
  const char *T = dtype_ctype(t);
  ec_line(e, "const int64_t P = %s, IH = %s, IW = %s, OH = %s, OW = %s;", prod_c(x, ys, 0, r - 2), dim_c(x, xs, r - 2),
          dim_c(x, xs, r - 1), dim_c(x, ys, r - 2), dim_c(x, ys, r - 1));
  ec_line(e, "const double sh = %s, sw = %s;", sc[0], sc[1]);
  ec_line(e, "(void)sh; (void)sw;");
  /* nearest: whether a fractional coordinate rounds up */
  const char *hi = old ? "(s < 1)" : !strcmp(nm, "round_prefer_ceil") ? "(f >= 0.5)" : !strcmp(nm, "floor") ? "0"
                   : !strcmp(nm, "ceil") ? "1" : "(f > 0.5)";
  ec_line(e, "for (int64_t p = 0; p < P; p++) {");
  ec_line(e, "for (int64_t oh = 0; oh < OH; oh++) {");
  ec_line(e, "const double ch = %s, fh = floor(ch);", resize_src(x, ctm, "oh", "IH", "sh"));
  ec_line(e, "%s *yr = Y0 + (p * OH + oh) * OW;", T);
  if (lin) {
    ec_line(e, "int64_t h0 = (int64_t)fh, h1 = h0 + 1;");
    ec_line(e, "const double wh = ch - fh;");
    ec_line(e, "h0 = h0 < 0 ? 0 : h0 >= IH ? IH - 1 : h0;");
    ec_line(e, "h1 = h1 < 0 ? 0 : h1 >= IH ? IH - 1 : h1;");
    ec_line(e, "const %s *r0 = X0 + (p * IH + h0) * IW, *r1 = X0 + (p * IH + h1) * IW;", T);
    ec_line(e, "for (int64_t ow = 0; ow < OW; ow++) {");
    ec_line(e, "const double cw = %s, fw = floor(cw), ww = cw - fw;", resize_src(x, ctm, "ow", "IW", "sw"));
    ec_line(e, "int64_t w0 = (int64_t)fw, w1 = w0 + 1;");
    ec_line(e, "w0 = w0 < 0 ? 0 : w0 >= IW ? IW - 1 : w0;");
    ec_line(e, "w1 = w1 < 0 ? 0 : w1 >= IW ? IW - 1 : w1;");
    ec_line(e, "yr[ow] = (%s)((1 - wh) * ((1 - ww) * r0[w0] + ww * r0[w1]) + wh * ((1 - ww) * r1[w0] + ww * r1[w1]));", T);
    ec_line(e, "}");
  } else {
    ec_line(e, "int64_t ih;");
    ec_line(e, "{ const double s = sh, f = ch - fh; (void)s; ih = (int64_t)fh + (f != 0 && %s); }", hi);
    ec_line(e, "ih = ih < 0 ? 0 : ih >= IH ? IH - 1 : ih;");
    ec_line(e, "const %s *xr = X0 + (p * IH + ih) * IW;", T);
    ec_line(e, "for (int64_t ow = 0; ow < OW; ow++) {");
    ec_line(e, "const double cw = %s, fw = floor(cw);", resize_src(x, ctm, "ow", "IW", "sw"));
    ec_line(e, "int64_t iw;");
    ec_line(e, "{ const double s = sw, f = cw - fw; (void)s; iw = (int64_t)fw + (f != 0 && %s); }", hi);
    ec_line(e, "iw = iw < 0 ? 0 : iw >= IW ? IW - 1 : iw;");
    ec_line(e, "yr[ow] = xr[iw];");
    ec_line(e, "}");
  }
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* Expand: the input broadcast to the output's run-time shape (the target
 * shape operand is valued, so only X0 is read), row by row. */
static bool k_expand(Dx *x, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  int r = ys->rank;
  EmitC *e = x->e;
  const char *cols = r ? dim_c(x, ys, r - 1) : "1", *rows = r ? prod_c(x, ys, 0, r - 1) : "1";
  ec_line(e, "const int64_t cols = %s, rows = %s;", cols, rows);
  ec_line(e, "(void)rows;");
  open_rows(x, ys, r ? r - 1 : 0, COST_EW_ELEM, rows, cols);
  e->indent++;
  split_rows(x, ys, r);
  Buf off;
  buf_init(&off);
  const char *last;
  bcast_offset(x, &n->in[0]->shape, r, &off, &last);
  ec_line(e, "const %s *x0 = X0 + %s;", dtype_ctype(n->in[0]->dt), off.s);
  buf_free(&off);
  ec_line(e, "%s *y = Y0 + o * cols;", dtype_ctype(n->out[0]->dt));
  ec_line(e, "for (int64_t j = 0; j < cols; j++) y[j] = x0[%s];", strcmp(last, "0") ? "j" : "0");
  e->indent--;
  ec_line(e, "}");
  return true;
}

/* Range of a run-time length (passes/infer_symbolic.c): start + i * delta. */
static bool k_range(Dx *x, const Node *n) {
  DType t = n->out[0]->dt;
  if (t == DT_F16 || t == DT_BF16)
    return diag_error(x->e->d, n, "run-time extents: Range of float16/bfloat16");
  const char *T = dtype_ctype(t);
  ec_line(x->e, "for (int64_t i = 0; i < %s; i++) Y0[i] = (%s)(X0[0] + (%s)i * X2[0]);", dim_c(x, &n->out[0]->shape, 0),
          T, T);
  return true;
}

/* ConstantOfShape of a run-time shape: the value in every element. */
static bool k_constant_of_shape(Dx *x, const Node *n) {
  const Attr *a = ir_attr(n, "value");
  DType t = n->out[0]->dt;
  char lit[64];
  if (t == DT_F16 || t == DT_BF16)
    return diag_error(x->e->d, n, "run-time extents: ConstantOfShape of float16/bfloat16");
  if (!a)
    snprintf(lit, sizeof lit, "0.0f");
  else if (dtype_is_float(t))
    ec_literal(t, tensor_get_f64(a->u.t, 0), lit, sizeof lit);
  else
    snprintf(lit, sizeof lit, "(%s)%lldLL", dtype_ctype(t), (long long)tensor_get_i64(a->u.t, 0));
  const Shape *ys = &n->out[0]->shape;
  ec_line(x->e, "for (int64_t i = 0; i < %s; i++) Y0[i] = %s;", prod_c(x, ys, 0, ys->rank), lit);
  return true;
}

/* RNN/GRU/LSTM over a run-time sequence length or batch (emit_rnn.c's loops;
 * the state and gate rows are sized by the static hidden size). */
static bool k_recurrent(Dx *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  bool bfirst = n->g->opset >= 14 && ir_attr_int(n, "layout", 0) == 1;
  return rnn_emit_rt(x->e, n, dim_c(x, xs, bfirst ? 1 : 0), dim_c(x, xs, bfirst ? 0 : 1), prod_hi(x, xs, 0, 2));
}

/* DynamicQuantizeLinear over a run-time element count (emit_quant.c's loops). */
static bool k_dql(Dx *x, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  return quant_emit_dql(x->e, n, prod_c(x, xs, 0, xs->rank));
}

/* Elements of a statically shaped value (zero points); -1 when not static. */
static int64_t static_numel(const Value *v) {
  int64_t n;
  return shape_is_static(&v->shape) && shape_numel(&v->shape, &n) ? n : -1;
}

/* MatMulInteger of activations with run-time rows by a 2-D B ([K, N], the
 * weight of quantize_dynamic's products): int32 sums as the static loops
 * (emit_quant.c), A's zero point one scalar, B's a scalar or one per column. */
static bool k_matmul_integer(Dx *x, const Node *n) {
  const Shape *as = &n->in[0]->shape, *bs = &n->in[1]->shape;
  if (as->rank < 2 || bs->rank != 2 || !shape_is_static(bs) || as->d[as->rank - 1] != bs->d[0] ||
      (ir_has_input(n, 2) && static_numel(n->in[2]) != 1) ||
      (ir_has_input(n, 3) && static_numel(n->in[3]) != 1 && static_numel(n->in[3]) != bs->d[1]))
    return diag_error(x->e->d, n, "run-time extents: MatMulInteger of [..., M, K] by a static [K, N] with a "
                      "scalar zero point of A");
  EmitC *e = x->e;
  int64_t k = bs->d[0], nn = bs->d[1];
  const char *bz = !ir_has_input(n, 3) ? "0" : static_numel(n->in[3]) > 1 ? "(int32_t)X3[j]" : "(int32_t)X3[0]";
  ec_line(e, "const int64_t rows = %s;", prod_c(x, as, 0, as->rank - 1));
  ec_line(e, "const int32_t az = %s;", ir_has_input(n, 2) ? "(int32_t)X2[0]" : "0");
  ec_line(e, "for (int64_t i = 0; i < rows; i++) {");
  ec_line(e, "uint32_t *yr = (uint32_t *)Y0 + i * %lld;", (long long)nn);
  ec_line(e, "for (int64_t j = 0; j < %lld; j++) yr[j] = 0;", (long long)nn);
  ec_line(e, "for (int64_t kk = 0; kk < %lld; kk++) {", (long long)k);
  ec_line(e, "const int32_t av = (int32_t)X0[i * %lld + kk] - az;", (long long)k);
  ec_line(e, "for (int64_t j = 0; j < %lld; j++)", (long long)nn);
  ec_line(e, "  yr[j] += (uint32_t)(av * ((int32_t)X1[kk * %lld + j] - %s));", (long long)nn, bz);
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* DequantizeLinear with one scale (and zero point) over a run-time element
 * count, into float32: the arithmetic of the static kernel (emit_quant.c:
 * int8/uint8 data in float, int32 data through double). */
static bool k_dequant(Dx *x, const Node *n) {
  DType xt = n->in[0]->dt;
  if (n->out[0]->dt != DT_F32 || n->in[1]->dt != DT_F32 || static_numel(n->in[1]) != 1 ||
      (ir_has_input(n, 2) && static_numel(n->in[2]) != 1) || (xt != DT_U8 && xt != DT_I8 && xt != DT_I32))
    return diag_error(x->e->d, n, "run-time extents: DequantizeLinear of int8/uint8/int32 data to float32 "
                      "with one scale");
  const Shape *xs = &n->in[0]->shape;
  const char *zp = ir_has_input(n, 2) ? "X2[0]" : "0";
  EmitC *e = x->e;
  ec_line(e, "for (int64_t i = 0; i < %s; i++) {", prod_c(x, xs, 0, xs->rank));
  if (xt == DT_I32)
    ec_line(e, "  const double dx = (double)(float)X0[i] - (double)%s;", zp);
  else
    ec_line(e, "  const float dx = (float)X0[i] - (float)%s;", zp);
  ec_line(e, "  Y0[i] = (float)(dx * (%s)X1[0]);", xt == DT_I32 ? "double" : "float");
  ec_line(e, "}");
  return true;
}

/* ---- dispatch ------------------------------------------------------------------------ */

typedef bool (*DynFn)(Dx *, const Node *);

static DynFn dyn_kernel(const Node *n) {
  if (n->n_out >= 1 && n->out[0]->sval)
    return k_values;
  if (ir_ops[n->op].flags & OPF_EW)
    return k_elementwise;
  switch (n->op) {
  case OP_Cast: return k_elementwise;
  case OP_Identity: case OP_Reshape: case OP_Unsqueeze: case OP_Squeeze: case OP_Flatten:
    return k_copy;
  case OP_MatMul: return k_matmul;
  case OP_Expand: return k_expand;
  case OP_Split: return k_split;
  case OP_Resize: case OP_Upsample: return k_resize;
  case OP_Range: return k_range;
  case OP_ConstantOfShape: return k_constant_of_shape;
  case OP_Softmax: return k_softmax;
  case OP_LayerNormalization: case OP_RMSNormalization: return k_layernorm;
  case OP_Transpose: return k_transpose;
  case OP_Slice: return k_slice;
  case OP_Gather: return k_gather;
  case OP_Concat: return k_concat;
  case OP_FusedElementwise: return n->n_in <= 64 ? k_fused : NULL;
  case OP_Conv: return k_conv;
  case OP_ConvTranspose: return k_conv_transpose;
  case OP_MaxPool: case OP_AveragePool: return k_pool;
  case OP_GlobalAveragePool: case OP_GlobalMaxPool: return k_global_pool;
  case OP_BatchNormalization: return k_batchnorm;
  case OP_Gemm: return k_gemm;
  case OP_RNN: case OP_GRU: case OP_LSTM: return k_recurrent;
  case OP_DynamicQuantizeLinear: return k_dql;
  case OP_DequantizeLinear: return k_dequant;
  case OP_MatMulInteger: return k_matmul_integer;
  case OP_ReduceSum: case OP_ReduceMean: case OP_ReduceMax: case OP_ReduceMin: case OP_ReduceProd:
  case OP_ReduceSumSquare: case OP_ReduceL1: case OP_ReduceL2:
    return k_reduce;
  default: return NULL;
  }
}

bool dyn_check(const Graph *g, Diag *d) {
  int before = d->n_errors;
  for (const Node *n = g->first; n; n = n->next)
    if (dyn_node_is_dynamic(n) && !dyn_kernel(n))
      diag_error(d, n, "no kernel with run-time extents for %s yet (its shapes depend on a -D range; "
                 "pin the dim with -D NAME=VALUE instead)", n->op_type);
  return d->n_errors == before;
}

bool dyn_emit_body(EmitC *e, const Node *n) {
  DynFn fn = dyn_kernel(n);
  if (!fn)
    return diag_error(e->d, n, "no kernel with run-time extents for %s", n->op_type);
  const Graph *root = n->g;
  while (root->parent)
    root = root->parent;
  Dx x = {e, arena_new(), root};
  ec_line(e, "(void)dims;");
  bool ok = fn(&x, n);
  arena_free(x.a);
  return ok;
}

const char *dyn_numel_c(const Value *v, Arena *a) {
  const Graph *g = v->g;
  while (g->parent)
    g = g->parent;
  Dx x = {NULL, a, g};
  return prod_c(&x, &v->shape, 0, v->shape.rank);
}

/* ---- the ABI of a model with ranges (the C target's NAME.h / NAME.c) ------------------ */

#include "codegen_internal.h"

#include <ctype.h>

static const char *sym_macro(Arena *a, const char *up, const char *sym) {
  Buf b;
  buf_init(&b);
  buf_printf(&b, "%s_DIM_", up);
  for (const char *p = sym; *p; p++)
    buf_putc(&b, isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_');
  const char *s = arena_strdup(a, b.s);
  buf_free(&b);
  return s;
}

/* `int64_t dims[]` from the caller's `dims_in`: the user's dims, then the
 * derived ones (floor divisions of earlier ones), in id order. */
static void write_derived(const Graph *g, Buf *c) {
  Arena *a = arena_new();
  Dx x = {NULL, a, g};
  buf_printf(c, "  int64_t dims[%d] = {0};\n", g->n_syms);
  for (int k = 0; k < g->n_syms; k++)
    if (g->syms[k].den < 0) /* data-dependent: set after its kernel runs */
      continue;
    else if (g->syms[k].den == 0 && g->syms[k].step > 1) /* in units of its step */
      buf_printf(c, "  dims[%d] = dims_in[%d] / %lld;\n", k, k, (long long)g->syms[k].step);
    else if (g->syms[k].den == 0)
      buf_printf(c, "  dims[%d] = dims_in[%d];\n", k, k);
    else
      buf_printf(c, "  dims[%d] = %s / %lld; /* %s */\n", k, ext_of(&x, g->syms[k].num),
                 (long long)g->syms[k].den, g->syms[k].name);
  arena_free(a);
}

void dyn_write_data_dims(const Graph *g, Buf *c) {
  buf_puts(c, "  const int64_t *dims_in = 0;\n  (void)dims_in;\n");
  write_derived(g, c);
  buf_puts(c, "  (void)dims;\n");
}

void dyn_write_output_dims(const CGen *cg, Buf *c) {
  const Graph *g = cg->g;
  Arena *a = arena_new();
  Dx x = {NULL, a, g};
  for (int i = 0; i < g->n_outputs; i++) {
    const Value *v = g->outputs[i];
    if (v->dyn_dims || !value_dyn_mask(v))
      continue; /* a kernel reports the former itself */
    for (int k = 0; k < v->shape.rank; k++)
      buf_printf(c, "  %s_dims[%d] = %s;\n", cg->out_param[i], k, dim_c(&x, &v->shape, k));
  }
  arena_free(a);
}

/* The user's dim k outside its range (or off its step): `fail`. */
static void write_range_check(const Graph *g, int k, const char *fail, Buf *c) {
  const DimSym *s = &g->syms[k];
  int64_t st = s->step > 1 ? s->step : 1;
  buf_printf(c, "  if (dims_in[%d] < %lld || dims_in[%d] > %lld", k, (long long)(s->lo * st), k, (long long)(s->hi * st));
  if (st > 1)
    buf_printf(c, " || dims_in[%d] %% %lld != 0", k, (long long)st);
  buf_printf(c, ") /* %s */\n    %s\n", s->name, fail);
}

void dyn_write_dims_check(const Graph *g, Buf *c) {
  buf_puts(c, "  if (!dims_in)\n    return ONNXC_ERR_NULL_ARG;\n");
  for (int k = 0; k < dx_user_syms(g); k++)
    write_range_check(g, k, "return ONNXC_ERR_DIM;", c);
  write_derived(g, c);
}

void dyn_write_header(const CGen *cg, const char *up, Buf *h) {
  const Graph *g = cg->g;
  const char *nm = cg->o->name;
  Arena *a = arena_new();
  buf_printf(h, "\n/* Dims kept symbolic within a range (-D NAME=LO..HI, docs/dynamic-shapes.md).\n"
                " * %s_run_dims takes their values in dims[] (indexed by the %s_DIM_* macros);\n"
                " * every extent above then follows from them, and each input and output\n"
                " * holds exactly that many elements (the _NUMEL macros are the counts at\n"
                " * the upper bounds). A dim outside its range returns ONNXC_ERR_DIM.\n"
                " * %s_run runs with every dim at its upper bound. %s_arena_bytes(dims) is\n"
                " * the arena a run with those dims touches (at most %s_ARENA_BYTES; -1 when\n"
                " * a dim is out of range). */\n#define %s_NUM_DIMS %d\n",
             nm, up, nm, nm, up, up, dx_user_syms(g));
  for (int k = 0; k < dx_user_syms(g); k++) {
    const char *m = sym_macro(a, up, g->syms[k].name);
    int64_t st = g->syms[k].step > 1 ? g->syms[k].step : 1;
    buf_printf(h, "#define %s %d /* %s */\n#define %s_MIN %lld\n#define %s_MAX %lld\n", m, k,
               g->syms[k].name, m, (long long)(g->syms[k].lo * st), m, (long long)(g->syms[k].hi * st));
    if (st > 1)
      buf_printf(h, "#define %s_STEP %lld /* a multiple of it */\n", m, (long long)st);
  }
  buf_printf(h, "int %s_run_dims(void *arena, const int64_t *dims", nm);
  cg_run_params(cg, true, h);
  buf_printf(h, ");\nint %s_run_dims_v(void *arena, const int64_t *dims, const void *const *inputs,\n"
                "                  void *const *outputs);\nint64_t %s_arena_bytes(const int64_t *dims);\n", nm, nm);
  arena_free(a);
}

/* Some dim of s depends on a data-dependent extent (known only once a kernel ran). */
static bool on_data(const Graph *g, const Shape *s) {
  for (int i = 0; i < s->rank; i++)
    for (int t = 0; s->d[i] < 0 && s->x[i] && t < s->x[i]->n; t++)
      for (int f = 0; f < s->x[i]->t[t].deg; f++)
        if (g->syms[s->x[i]->t[t].s[f]].den < 0)
          return true;
  return false;
}

/* A PlanTensor's bytes at the run's dims, as C text (its planned size when
 * it depends on a data-dependent extent, not known when the table is made). */
static const char *tensor_bytes_c(Dx *x, const Graph *g, const PlanTensor *t) {
  const Value *v = t->value_id >= 0 ? g->values[t->value_id] : NULL;
  if (v && shape_is_bounded(&v->shape) && !shape_is_static(&v->shape) && dtype_bits(v->dt) >= 8 &&
      !on_data(g, &v->shape))
    return arena_printf(x->a, "%s * %d", prod_c(x, &v->shape, 0, v->shape.rank), dtype_bits(v->dt) / 8);
  return arena_printf(x->a, "%lld", (long long)t->size);
}

void dyn_write_guard_regions(const Graph *g, const Plan *plan, Buf *run) {
  Arena *a = arena_new();
  Dx x = {NULL, a, g};
  int n = plan->n_tensors;
  buf_printf(run, "  const onnxc_guard_region rt_guard_regions[%d] = {\n", n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    const PlanTensor *t = &plan->tensors[i];
    buf_printf(run, "    {%lld, %s, %d, %d},\n", (long long)t->offset, tensor_bytes_c(&x, g, t), t->first, t->last);
  }
  if (n == 0)
    buf_puts(run, "    {0, 0, -1, -1},\n");
  buf_puts(run, "  };\n");
  arena_free(a);
}

void dyn_write_info_tables(const CGen *cg, Buf *c) {
  const Graph *g = cg->g;
  const char *nm = cg->o->name;
  Arena *a = arena_new();
  Dx x = {NULL, a, g};
  int nd = dx_user_syms(g), total = 0;
  buf_printf(c, "static const onnxc_dim_info %s_info_dims[%d] = {\n", nm, nd);
  for (int k = 0; k < nd; k++) {
    int64_t st = g->syms[k].step > 1 ? g->syms[k].step : 1;
    buf_puts(c, "  {");
    cg_c_string(c, g->syms[k].name);
    buf_printf(c, ", %lld, %lld, %lld},\n", (long long)(g->syms[k].lo * st), (long long)(g->syms[k].hi * st),
               (long long)st);
  }
  buf_puts(c, "};\n");
  for (int i = 0; i < g->n_inputs; i++)
    total += g->inputs[i]->shape.rank;
  buf_printf(c, "static const int32_t %s_info_input_dims[%d] = {", nm, total > 0 ? total : 1);
  bool first = true;
  for (int i = 0; i < g->n_inputs; i++) {
    const Shape *s = &g->inputs[i]->shape;
    for (int k = 0; k < s->rank; k++) {
      int v = -1;
      const DimExpr *e = s->d[k] < 0 ? s->x[k] : NULL;
      if (e) {
        v = -2;
        if (e->n == 1 && e->t[0].deg == 1 && e->t[0].s[0] < nd &&
            e->t[0].c == (g->syms[e->t[0].s[0]].step > 1 ? g->syms[e->t[0].s[0]].step : 1))
          v = e->t[0].s[0];
      }
      buf_printf(c, "%s%d", first ? "" : ", ", v);
      first = false;
    }
  }
  buf_printf(c, "%s};\n", first ? "0" : "");
  /* every output's extents at the caller's dims */
  buf_printf(c, "static int %s_output_shapes(const int64_t *dims_in, int64_t *extents) {\n", nm);
  buf_puts(c, "  if (!dims_in || !extents)\n    return ONNXC_ERR_NULL_ARG;\n");
  for (int k = 0; k < nd; k++)
    write_range_check(g, k, "return ONNXC_ERR_DIM;", c);
  write_derived(g, c);
  buf_puts(c, "  (void)dims;\n");
  int at = 0;
  for (int i = 0; i < g->n_outputs; i++) {
    const Value *v = g->outputs[i];
    uint32_t data = value_dyn_mask(v);
    for (int k = 0; k < v->shape.rank; k++, at++) {
      int64_t lo, hi = v->shape.d[k];
      const char *ext;
      if (hi >= 0)
        ext = arena_printf(a, "%lld", (long long)hi);
      else if (v->shape.x[k] && !(on_data(g, &v->shape) && (data >> k & 1)) && !on_data(g, &v->shape))
        ext = dim_c(&x, &v->shape, k);
      else if (v->shape.x[k] && dx_bounds(g, v->shape.x[k], &lo, &hi))
        ext = arena_printf(a, "%lld", (long long)hi);
      else
        ext = "-1";
      buf_printf(c, "  extents[%d] = %s;\n", at, ext);
    }
  }
  buf_puts(c, "  return ONNXC_OK;\n}\n\n");
  arena_free(a);
}

void dyn_write_arena_fn(const Graph *g, const Plan *plan, const char *nm, Buf *c) {
  Arena *a = arena_new();
  Dx x = {NULL, a, g};
  buf_printf(c, "ONNXC_API int64_t %s_arena_bytes(const int64_t *dims_in) {\n  int64_t n = 0, e;\n"
                "  if (!dims_in)\n    return -1;\n", nm);
  for (int k = 0; k < dx_user_syms(g); k++)
    write_range_check(g, k, "return -1;", c);
  if (plan->redzone > 0) { /* guard mode poisons and checks the whole arena */
    buf_printf(c, "  (void)e;\n  (void)n;\n  return %lld;\n}\n\n", (long long)plan->arena_bytes);
    arena_free(a);
    return;
  }
  write_derived(g, c);
  buf_puts(c, "  (void)dims;\n  (void)e;\n");
  for (int i = 0; i < plan->n_tensors; i++) {
    const PlanTensor *t = &plan->tensors[i];
    buf_printf(c, "  e = %lld + %s;\n  n = e > n ? e : n;\n", (long long)t->offset, tensor_bytes_c(&x, g, t));
  }
  buf_puts(c, "  return n;\n}\n\n");
  arena_free(a);
}
