/* emit_reduce.c - C kernels for reductions and the ops that scan one axis.
 *
 * Reduce*: extent-1 dims are dropped and adjacent dims that are both reduced
 * or both kept are merged, so the input is a few groups alternating kept /
 * reduced. When the last group is reduced, each output element accumulates a
 * contiguous run (in LANES partial accumulators, which the C compiler turns
 * into vector code without reassociating anything itself). When the last
 * group is kept, the kernel accumulates whole rows: a block of up to BLOCK
 * columns of accumulators on the stack, added to row by row, so the inner
 * loop stays contiguous. Float sums (Sum, Mean, SumSquare, L1, L2, LogSum,
 * LogSumExp) accumulate in double, so a mean of equal values is that value
 * and a sum rounds once; Max, Min and Prod of f16/bf16 compute in float. Integer Max/Min compare exactly; the other
 * integer reductions run in double and saturate when stored, which is what
 * ONNX Runtime computes. An empty reduction yields the op's identity (0, 1,
 * -inf, +inf, log 0; a mean of nothing is 0, as in ONNX Runtime).
 * ArgMax/ArgMin/Hardmax/CumSum view the input as [outer, L, inner] and use
 * the same row blocking when inner > 1; integer CumSum wraps in the unsigned
 * type (no signed-overflow UB), like ONNX Runtime. TopK keeps a heap of indices
 * in the Indices output (or a small stack buffer when that output is unused)
 * ordered by (value, index), so ties go to the lower index as in ONNX Runtime,
 * and heap-sorts it at the end.
 */
#include "codegen.h"

#include <math.h>
#include <string.h>

#define LL(x) ((long long)(x))
#define BLOCK 128        /* row-accumulation columns per block */
#define LANES 32         /* partial accumulators of a contiguous reduction: enough
                            * that gcc vectorizes the lane loop instead of unrolling it */
#define TOPK_STACK 512   /* TopK index buffer on the stack when Indices is unused */

/* ---- helpers --------------------------------------------------------------- */

static bool is_half(DType t) { return t == DT_F16 || t == DT_BF16; }

/* Appends the element `src` of type `from` converted to `ct`. */
static void load(Buf *b, DType from, DType ct, const char *src) { ec_ew_load(b, from, ct, src); }

/* Name of the lowest or highest value of integer type t ("INT32_MIN"). */
static void int_limit(char *buf, size_t n, DType t, bool lowest) {
  if (!dtype_is_signed(t) && lowest)
    snprintf(buf, n, "0");
  else
    snprintf(buf, n, "%sINT%d_%s", dtype_is_signed(t) ? "" : "U", dtype_bits(t), lowest ? "MIN" : "MAX");
}

/* Writes `dst = expr` where expr has type ct and dst type `to`. Float to
 * integer conversions saturate instead of being UB; NaN gives the lowest
 * value, like ONNX Runtime's integer reductions on x86. */
static void emit_store(EmitC *e, const char *dst, DType ct, DType to, const char *expr) {
  if (dtype_is_float(ct) && dtype_is_int(to)) {
    int bits = dtype_bits(to);
    bool sgn = dtype_is_signed(to);
    const char *T = dtype_ctype(to);
    char lo[32], hi[32];
    int_limit(lo, sizeof lo, to, true);
    int_limit(hi, sizeof hi, to, false);
    /* The bounds are powers of two, exact in double. */
    double dlo = sgn ? -ldexp(1.0, bits - 1) : 0.0, dhi = ldexp(1.0, sgn ? bits - 1 : bits);
    ec_line(e, "{ const double r_ = (double)(%s);", expr);
    ec_line(e, "  %s = !(r_ > %.1f) ? (%s)%s : r_ >= %.1f ? (%s)%s : (%s)r_; }", dst, dlo, T, lo, dhi, T, hi, T);
    return;
  }
  ec_store_line(e, dst, ct, to, expr);
}

/* ---- Reduce*: the operation ---------------------------------------------------- */

typedef enum RKind { RK_SUM, RK_MEAN, RK_MAX, RK_MIN, RK_PROD, RK_L1, RK_L2, RK_LOGSUM, RK_LSE, RK_SUMSQ } RKind;

typedef struct Red {
  RKind k;
  DType in, out;       /* element types of input and output (equal) */
  DType ct;            /* accumulator type */
  int64_t count;       /* input elements per output element */
  char init[48];       /* accumulator start: the identity of the combine step */
} Red;

static RKind red_kind(OpKind op) {
  switch (op) {
  case OP_ReduceSum: return RK_SUM;
  case OP_ReduceMean: return RK_MEAN;
  case OP_ReduceMax: return RK_MAX;
  case OP_ReduceMin: return RK_MIN;
  case OP_ReduceProd: return RK_PROD;
  case OP_ReduceL1: return RK_L1;
  case OP_ReduceL2: return RK_L2;
  case OP_ReduceLogSum: return RK_LOGSUM;
  case OP_ReduceLogSumExp: return RK_LSE;
  default: return RK_SUMSQ;
  }
}

static DType red_ct(RKind k, DType in, int64_t count) {
  if (dtype_is_float(in)) {
    if (in == DT_F64)
      return DT_F64;
    bool sumlike = k != RK_MAX && k != RK_MIN && k != RK_PROD;
    return sumlike ? DT_F64 : DT_F32;
  }
  if (in == DT_BOOL)
    return DT_U8;
  /* Integers: Max/Min compare exactly; the rest go through double and
   * saturate, as ONNX Runtime does. */
  return k == RK_MAX || k == RK_MIN ? in : DT_F64;
}

/* The extreme value of ct: its minimum (lowest) or maximum. */
static void extreme(char *buf, size_t n, DType ct, bool lowest) {
  if (dtype_is_float(ct))
    snprintf(buf, n, "%s(%s)INFINITY)", lowest ? "(-" : "(", dtype_ctype(ct));
  else
    int_limit(buf, n, ct, lowest);
}

static void red_init(Red *r, const Node *n, int64_t count) {
  r->k = red_kind(n->op);
  r->in = n->in[0]->dt;
  r->out = n->out[0]->dt;
  r->count = count;
  r->ct = red_ct(r->k, r->in, count);
  if (r->k == RK_MAX || r->k == RK_MIN) {
    if (r->in == DT_BOOL)
      snprintf(r->init, sizeof r->init, "%d", r->k == RK_MAX ? 0 : 1);
    else
      extreme(r->init, sizeof r->init, r->ct, r->k == RK_MAX);
  } else {
    snprintf(r->init, sizeof r->init, "(%s)%d", dtype_ctype(r->ct), r->k == RK_PROD ? 1 : 0);
  }
}

/* The value an element `v` (already of type ct) contributes. */
static void red_term(const Red *r, Buf *b, const char *v) {
  switch (r->k) {
  case RK_L1:
    buf_printf(b, "fabs%s(%s)", r->ct == DT_F32 ? "f" : "", v);
    break;
  case RK_L2:
  case RK_SUMSQ:
    buf_printf(b, "%s * %s", v, v);
    break;
  default:
    buf_puts(b, v);
  }
}

/* Statement folding term t into accumulator a. */
static void red_combine(const Red *r, Buf *b, const char *a, const char *t) {
  bool fl = dtype_is_float(r->ct);
  switch (r->k) {
  case RK_PROD:
    buf_printf(b, "%s *= %s;", a, t);
    break;
  case RK_MAX:
  case RK_MIN:
    /* NaN propagates like numpy; ints need no NaN test. */
    if (fl)
      buf_printf(b, "%s = ((%s %s %s) | (%s != %s)) ? %s : %s;", a, t, r->k == RK_MAX ? ">" : "<", a, t, t, t, a);
    else
      buf_printf(b, "%s = %s %s %s ? %s : %s;", a, t, r->k == RK_MAX ? ">" : "<", a, t, a);
    break;
  default:
    buf_printf(b, "%s += %s;", a, t);
  }
}

/* One element: `const CT v = LOAD(src); a = a (+) TERM(v);` (the caller
 * gives it a scope of its own). */
static void red_step(EmitC *e, const Red *r, const char *a, const char *src) {
  Buf b, t, s;
  buf_init(&b);
  buf_init(&t);
  buf_init(&s);
  load(&b, r->in, r->ct, src);
  red_term(r, &t, "v");
  red_combine(r, &s, a, t.s);
  ec_line(e, "const %s v = %s;", dtype_ctype(r->ct), b.s);
  ec_line(e, "%s", s.s);
  buf_free(&b);
  buf_free(&t);
  buf_free(&s);
}

/* exp(v - mx) for LogSumExp. ONNX Runtime's int32/int64 kernels sum in an
 * integer accumulator, so each term (at most 1) is truncated there; we do the
 * same. Its other types use the op's function body, which is exact. */
static const char *lse_term(char *buf, size_t n, const Red *r, const char *v, const char *mx) {
  if (dtype_is_float(r->in) || !dtype_is_signed(r->in))
    snprintf(buf, n, "exp%s(%s - %s)", r->ct == DT_F32 ? "f" : "", v, mx);
  else
    snprintf(buf, n, "(double)(int)exp(%s - %s)", v, mx);
  return buf;
}

/* Stores the final value of accumulator `a` (and max `mx` for LogSumExp) to dst. */
static void red_finish(EmitC *e, const Red *r, const char *dst, const char *a, const char *mx) {
  const char *f = r->ct == DT_F32 ? "f" : "";
  const char *CT = dtype_ctype(r->ct);
  char x[256];
  switch (r->k) {
  case RK_MEAN:  /* the mean of nothing is 0, as in ONNX Runtime */
    if (r->count == 0)
      snprintf(x, sizeof x, "(%s)0", CT);
    else
      snprintf(x, sizeof x, "%s / (%s)%lld", a, CT, LL(r->count));
    break;
  case RK_L2:
    snprintf(x, sizeof x, "sqrt%s(%s)", f, a);
    break;
  case RK_LOGSUM:
    snprintf(x, sizeof x, "log%s(%s)", f, a);
    break;
  case RK_LSE:
    snprintf(x, sizeof x, "log%s(%s) + %s", f, a, mx);
    break;
  default:
    snprintf(x, sizeof x, "%s", a);
  }
  emit_store(e, dst, r->ct, r->out, x);
}

/* ---- Reduce*: the loop nest ------------------------------------------------------- */

/* The input as merged groups of dims, each wholly reduced or wholly kept. */
typedef struct Groups {
  int n;
  int64_t ext[IR_MAX_RANK];
  int64_t istr[IR_MAX_RANK];   /* input stride (elements) */
  int64_t ostr[IR_MAX_RANK];   /* output stride; 0 for reduced groups */
  bool red[IR_MAX_RANK];
} Groups;

static void groups_build(const Shape *xs, const bool *mask, Groups *g) {
  g->n = 0;
  for (int i = 0; i < xs->rank; i++) {
    if (xs->d[i] == 1)
      continue;
    if (g->n > 0 && g->red[g->n - 1] == mask[i]) {
      g->ext[g->n - 1] *= xs->d[i];
    } else {
      g->ext[g->n] = xs->d[i];
      g->red[g->n++] = mask[i];
    }
  }
  int64_t in = 1, out = 1;
  for (int m = g->n - 1; m >= 0; m--) {
    g->istr[m] = in;
    in *= g->ext[m];
    g->ostr[m] = g->red[m] ? 0 : out;
    if (!g->red[m])
      out *= g->ext[m];
  }
}

/* Opens a loop over group m; returns 1 (loops opened). */
static int open_loop(EmitC *e, const Groups *g, int m) {
  ec_line(e, "for (ptrdiff_t i%d = 0; i%d < %lld; i%d++) {", m, m, LL(g->ext[m]), m);
  return 1;
}

/* Appends " + i<m> * stride" for the groups selected by `which` (bit m). */
static void index_expr(Buf *b, const Groups *g, unsigned which, bool out) {
  bool any = false;
  for (int m = 0; m < g->n; m++) {
    if (!(which & (1u << m)))
      continue;
    int64_t s = out ? g->ostr[m] : g->istr[m];
    buf_printf(b, "%si%d", any ? " + " : "", m);
    if (s != 1)
      buf_printf(b, " * %lld", LL(s));
    any = true;
  }
  if (!any)
    buf_puts(b, "0");
}

static void close_loops(EmitC *e, int k) {
  while (k-- > 0)
    ec_line(e, "}");
}

/* Last group reduced: every output element accumulates its elements, the
 * last (contiguous) group in LANES partial accumulators when it is long. */
static void reduce_by_element(EmitC *e, const Red *r, const Groups *g) {
  const char *T = dtype_ctype(r->in), *CT = dtype_ctype(r->ct);
  unsigned kept = 0, red = 0;
  for (int m = 0; m < g->n; m++) {
    if (g->red[m])
      red |= 1u << m;
    else
      kept |= 1u << m;
  }
  int last = g->n - 1;
  bool contiguous = g->n > 0 && g->red[last];
  int64_t len = contiguous ? g->ext[last] : 1;
  bool lanes = contiguous && len >= 2 * LANES && r->k != RK_LSE;
  unsigned outer_red = contiguous ? red & ~(1u << last) : red;
  int opened = 0;
  for (int m = 0; m < g->n; m++)
    if (!g->red[m])
      opened += open_loop(e, g, m);
  Buf ib, ob;
  buf_init(&ib);
  buf_init(&ob);
  index_expr(&ob, g, kept, true);
  char src[512];
  if (r->k == RK_LSE) {
    /* Two sweeps: the max, then the sum of exp(x - max). */
    int k = 0;
    index_expr(&ib, g, kept | red, false);
    snprintf(src, sizeof src, "X0[%s]", ib.s);
    char lo[48];
    extreme(lo, sizeof lo, r->ct, true);
    ec_line(e, "%s mx = %s, acc = (%s)0;", CT, lo, CT);
    for (int m = 0; m < g->n; m++)
      if (g->red[m])
        k += open_loop(e, g, m);
    Buf b;
    buf_init(&b);
    load(&b, r->in, r->ct, src);
    ec_line(e, "{ const %s v = %s; if (v > mx) mx = v; }", CT, b.s);
    close_loops(e, k);
    ec_line(e, "if (!isfinite(mx)) mx = 0;");
    k = 0;
    for (int m = 0; m < g->n; m++)
      if (g->red[m])
        k += open_loop(e, g, m);
    char term[600];
    ec_line(e, "acc += %s;", lse_term(term, sizeof term, r, b.s, "mx"));
    close_loops(e, k);
    buf_free(&b);
    char dst[512];
    snprintf(dst, sizeof dst, "Y0[%s]", ob.s);
    red_finish(e, r, dst, "acc", "mx");
  } else {
    ec_line(e, "%s acc = %s;", CT, r->init);
    int k = 0;
    for (int m = 0; m < g->n; m++)
      if ((outer_red >> m) & 1u)
        k += open_loop(e, g, m);
    index_expr(&ib, g, kept | outer_red, false);
    if (contiguous) {
      ec_line(e, "const %s *xr = X0 + %s;", T, ib.s);
      int64_t body = lanes ? len - len % LANES : 0;
      if (lanes) {
        ec_line(e, "%s l[%d];", CT, LANES);
        ec_line(e, "for (ptrdiff_t u = 0; u < %d; u++) l[u] = %s;", LANES, r->init);
        ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j += %d) {", LL(body), LANES);
        ec_line(e, "for (ptrdiff_t u = 0; u < %d; u++) {", LANES);
        red_step(e, r, "l[u]", "xr[j + u]");
        ec_line(e, "}");
        ec_line(e, "}");
      }
      if (len > body) {
        ec_line(e, "for (ptrdiff_t j = %lld; j < %lld; j++) {", LL(body), LL(len));
        red_step(e, r, "acc", "xr[j]");
        ec_line(e, "}");
      }
      if (lanes) {
        Buf s;
        buf_init(&s);
        red_combine(r, &s, "acc", "l[u]");
        ec_line(e, "for (ptrdiff_t u = 0; u < %d; u++) %s", LANES, s.s);
        buf_free(&s);
      }
    } else {
      snprintf(src, sizeof src, "X0[%s]", ib.s);
      ec_line(e, "{");
      red_step(e, r, "acc", src);
      ec_line(e, "}");
    }
    close_loops(e, k);
    char dst[512];
    snprintf(dst, sizeof dst, "Y0[%s]", ob.s);
    red_finish(e, r, dst, "acc", NULL);
  }
  buf_free(&ib);
  buf_free(&ob);
  close_loops(e, opened);
}

/* Last group kept: blocks of output columns accumulate whole input rows. */
static void reduce_by_rows(EmitC *e, const Red *r, const Groups *g) {
  const char *T = dtype_ctype(r->in), *CT = dtype_ctype(r->ct);
  int last = g->n - 1;
  int64_t w = g->ext[last], bw = w < BLOCK ? w : BLOCK;
  unsigned outer_kept = 0, red = 0;
  for (int m = 0; m < last; m++) {
    if (g->red[m])
      red |= 1u << m;
    else
      outer_kept |= 1u << m;
  }
  int opened = 0;
  for (int m = 0; m < last; m++)
    if (!g->red[m])
      opened += open_loop(e, g, m);
  const char *cw;
  char cwbuf[32];
  if (w > BLOCK) {
    ec_line(e, "for (ptrdiff_t c0 = 0; c0 < %lld; c0 += %d) {", LL(w), BLOCK);
    ec_line(e, "const ptrdiff_t cw = %lld - c0 < %d ? %lld - c0 : %d;", LL(w), BLOCK, LL(w), BLOCK);
    opened++;
    cw = "cw";
  } else {
    snprintf(cwbuf, sizeof cwbuf, "%lld", LL(w));
    cw = cwbuf;
  }
  Buf ib, ob;
  buf_init(&ib);
  buf_init(&ob);
  index_expr(&ib, g, outer_kept | red, false);
  index_expr(&ob, g, outer_kept, true);
  char dst[600], xoff[32] = "";
  if (w > BLOCK)
    snprintf(xoff, sizeof xoff, " + c0");
  snprintf(dst, sizeof dst, "Y0[%s%s + c]", ob.s, xoff);
  Buf b;
  buf_init(&b);
  load(&b, r->in, r->ct, "xr[c]");
  if (r->k == RK_LSE) {
    char lo[48];
    extreme(lo, sizeof lo, r->ct, true);
    ec_line(e, "%s mx[%lld], acc[%lld];", CT, LL(bw), LL(bw));
    ec_line(e, "for (ptrdiff_t c = 0; c < %s; c++) { mx[c] = %s; acc[c] = (%s)0; }", cw, lo, CT);
    for (int pass = 0; pass < 2; pass++) {
      int k = 0;
      for (int m = 0; m < last; m++)
        if (g->red[m])
          k += open_loop(e, g, m);
      ec_line(e, "const %s *xr = X0 + %s%s;", T, ib.s, xoff);
      if (pass == 0)
        ec_line(e, "for (ptrdiff_t c = 0; c < %s; c++) { const %s v = %s; mx[c] = v > mx[c] ? v : mx[c]; }", cw,
                CT, b.s);
      else
      {
        char term[600];
        ec_line(e, "for (ptrdiff_t c = 0; c < %s; c++) acc[c] += %s;", cw,
                lse_term(term, sizeof term, r, b.s, "mx[c]"));
      }
      close_loops(e, k);
      if (pass == 0)
        ec_line(e, "for (ptrdiff_t c = 0; c < %s; c++) if (!isfinite(mx[c])) mx[c] = 0;", cw);
    }
    ec_line(e, "for (ptrdiff_t c = 0; c < %s; c++) {", cw);
    red_finish(e, r, dst, "acc[c]", "mx[c]");
    ec_line(e, "}");
  } else {
    ec_line(e, "%s acc[%lld];", CT, LL(bw));
    ec_line(e, "for (ptrdiff_t c = 0; c < %s; c++) acc[c] = %s;", cw, r->init);
    int k = 0;
    for (int m = 0; m < last; m++)
      if (g->red[m])
        k += open_loop(e, g, m);
    ec_line(e, "const %s *xr = X0 + %s%s;", T, ib.s, xoff);
    ec_line(e, "for (ptrdiff_t c = 0; c < %s; c++) {", cw);
    red_step(e, r, "acc[c]", "xr[c]");
    ec_line(e, "}");
    close_loops(e, k);
    ec_line(e, "for (ptrdiff_t c = 0; c < %s; c++) {", cw);
    red_finish(e, r, dst, "acc[c]", NULL);
    ec_line(e, "}");
  }
  buf_free(&b);
  buf_free(&ib);
  buf_free(&ob);
  close_loops(e, opened);
}

/* Reduced axes, as inference found them (the axes input is constant here,
 * or a run-time input known to be empty). */
bool ec_reduce_mask(const Node *n, int rank, bool *mask, bool *noop) {
  int64_t axes[IR_MAX_RANK];
  int count = 0;
  bool input_form = ir_has_input(n, 1) || n->g->opset >= (n->op == OP_ReduceSum ? 13 : 18);
  if (ir_has_input(n, 1)) {
    const Value *a = n->in[1];
    int64_t len = 0;
    if (a->kind == VK_CONST) {
      if (a->konst->numel > IR_MAX_RANK)
        return false;
      for (int64_t i = 0; i < a->konst->numel; i++)
        axes[count++] = ((const int64_t *)a->konst->data)[i];
    } else if (!shape_numel(&a->shape, &len) || len != 0) {
      return false;
    }
  } else {
    const int64_t *a = ir_attr_ints(n, "axes", &count);
    if (count > IR_MAX_RANK)
      return false;
    if (count)
      memcpy(axes, a, (size_t)count * sizeof *axes);
  }
  *noop = count == 0 && input_form && ir_attr_int(n, "noop_with_empty_axes", 0) != 0;
  for (int i = 0; i < rank; i++)
    mask[i] = count == 0 && !*noop;
  for (int i = 0; i < count; i++) {
    int ax;
    if (!shape_axis(axes[i], rank, &ax))
      return false;
    mask[ax] = true;
  }
  return true;
}

static bool emit_reduce(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  bool mask[IR_MAX_RANK], noop;
  if (!ec_reduce_mask(n, xs->rank, mask, &noop))
    return diag_error(e->d, n, "input 1 (axes) must be a compile-time constant");
  int64_t n_out = ec_numel(n->out[0]), n_in = ec_numel(n->in[0]);
  if (n_out == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  Red r;
  red_init(&r, n, n_in / n_out);
  if (n_in == 0) {
    /* Empty reduction: every output is the identity of the operation. */
    ec_line(e, "for (ptrdiff_t o = 0; o < %lld; o++) {", LL(n_out));
    if (r.k != RK_MEAN)  /* the mean of nothing does not read it */
      ec_line(e, "const %s acc = %s;", dtype_ctype(r.ct), r.init);
    red_finish(e, &r, "Y0[o]", "acc", "0");
    ec_line(e, "}");
    return true;
  }
  Groups g;
  groups_build(xs, mask, &g);
  if (g.n > 0 && !g.red[g.n - 1] && (g.n > 1))
    reduce_by_rows(e, &r, &g);
  else
    reduce_by_element(e, &r, &g);
  return true;
}

bool emitc_ReduceSum(EmitC *e, const Node *n) { return emit_reduce(e, n); }
bool emitc_ReduceMean(EmitC *e, const Node *n) { return emit_reduce(e, n); }
bool emitc_ReduceMax(EmitC *e, const Node *n) { return emit_reduce(e, n); }
bool emitc_ReduceMin(EmitC *e, const Node *n) { return emit_reduce(e, n); }
bool emitc_ReduceProd(EmitC *e, const Node *n) { return emit_reduce(e, n); }
bool emitc_ReduceL1(EmitC *e, const Node *n) { return emit_reduce(e, n); }
bool emitc_ReduceL2(EmitC *e, const Node *n) { return emit_reduce(e, n); }
bool emitc_ReduceLogSum(EmitC *e, const Node *n) { return emit_reduce(e, n); }
bool emitc_ReduceLogSumExp(EmitC *e, const Node *n) { return emit_reduce(e, n); }
bool emitc_ReduceSumSquare(EmitC *e, const Node *n) { return emit_reduce(e, n); }

/* ---- ArgMax, ArgMin, Hardmax ------------------------------------------------------ */

/* Extents of x viewed as [outer, len, inner] around `axis`. */
static void split3(const Shape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner) {
  *outer = ec_prod(s, 0, axis);
  *len = s->d[axis];
  *inner = ec_prod(s, axis + 1, s->rank);
}

static DType float_ct(DType t) { return is_half(t) ? DT_F32 : t; }

/* Opens the loops over outer rows and (when inner > 1) column blocks and
 * declares cw (block width) and `x`, the first element of the block.
 * Returns the loops opened; *bw the block width bound. */
static int open_rows(EmitC *e, const char *T, int64_t outer, int64_t len, int64_t inner, int64_t *bw) {
  int opened = 1;
  ec_line(e, "for (ptrdiff_t o = 0; o < %lld; o++) {", LL(outer));
  if (inner == 1) {
    *bw = 1;
    ec_line(e, "const %s *x = X0 + o * %lld;", T, LL(len));
    return opened;
  }
  *bw = inner < BLOCK ? inner : BLOCK;
  if (inner > BLOCK) {
    ec_line(e, "for (ptrdiff_t c0 = 0; c0 < %lld; c0 += %d) {", LL(inner), BLOCK);
    ec_line(e, "const ptrdiff_t cw = %lld - c0 < %d ? %lld - c0 : %d;", LL(inner), BLOCK, LL(inner), BLOCK);
    opened++;
  } else {
    ec_line(e, "const ptrdiff_t c0 = 0, cw = %lld;", LL(inner));
  }
  ec_line(e, "const %s *x = X0 + o * %lld + c0;", T, LL(len * inner));
  return opened;
}

/* Type ArgMax/ArgMin/Hardmax compare in: half types widen to float, small
 * integers to int32. */
static DType arg_ct(DType in) {
  if (is_half(in))
    return DT_F32;
  return dtype_is_int(in) && dtype_bits(in) < 32 ? DT_I32 : in;
}

/* Index type of the row-blocked scan: as wide as the compared values, so
 * the column loop vectorizes with mask arithmetic instead of branches. */
static const char *arg_it(DType ct, int64_t len) {
  return dtype_bits(ct) == 32 && len <= INT32_MAX ? "int32_t" : "int64_t";
}

/* Declares `bi` (a scalar, or an array over the column block) holding the
 * index of the first extreme of each column along the axis (the last one
 * with `last`). NaNs are skipped unless first, like ONNX Runtime. */
static void emit_argscan(EmitC *e, DType in, int64_t len, int64_t inner, int64_t bw, bool is_max, bool last) {
  DType ct = arg_ct(in);
  const char *CT = dtype_ctype(ct);
  const char *cmp = is_max ? (last ? ">=" : ">") : (last ? "<=" : "<");
  Buf l0, li;
  buf_init(&l0);
  buf_init(&li);
  if (inner == 1) {
    load(&l0, in, ct, "x[0]");
    load(&li, in, ct, "x[i]");
    ec_line(e, "%s best = %s;", CT, l0.s);
    ec_line(e, "int64_t bi = 0;");
    ec_line(e, "for (ptrdiff_t i = 1; i < %lld; i++) {", LL(len));
    ec_line(e, "const %s v = %s;", CT, li.s);
    ec_line(e, "if (v %s best) { best = v; bi = i; }", cmp);
    ec_line(e, "}");
  } else {
    const char *IT = arg_it(ct, len);
    load(&l0, in, ct, "x[c]");
    load(&li, in, ct, "xr[c]");
    ec_line(e, "%s best[%lld];", CT, LL(bw));
    ec_line(e, "%s bi[%lld];", IT, LL(bw));
    ec_line(e, "for (ptrdiff_t c = 0; c < cw; c++) { best[c] = %s; bi[c] = 0; }", l0.s);
    ec_line(e, "for (%s i = 1; i < %lld; i++) {", IT, LL(len));
    ec_line(e, "const %s *xr = x + (ptrdiff_t)i * %lld;", dtype_ctype(in), LL(inner));
    ec_line(e, "for (ptrdiff_t c = 0; c < cw; c++) {");
    ec_line(e, "const %s v = %s, b = best[c];", CT, li.s);
    ec_line(e, "const %s m = -(%s)(v %s b);", IT, IT, cmp);
    ec_line(e, "bi[c] = (bi[c] & ~m) | (i & m);");
    ec_line(e, "best[c] = v %s b ? v : b;", cmp);
    ec_line(e, "}");
    ec_line(e, "}");
  }
  buf_free(&l0);
  buf_free(&li);
}

static bool emit_arg(EmitC *e, const Node *n, bool is_max) {
  const Shape *xs = &n->in[0]->shape;
  DType in = n->in[0]->dt;
  int axis;
  IR_ASSERT(shape_axis(ir_attr_int(n, "axis", 0), xs->rank, &axis));
  bool last = ir_attr_int(n, "select_last_index", 0) != 0;
  int64_t outer, len, inner, bw;
  split3(xs, axis, &outer, &len, &inner);
  if (ec_numel(n->out[0]) == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  int opened = open_rows(e, dtype_ctype(in), outer, len, inner, &bw);
  emit_argscan(e, in, len, inner, bw, is_max, last);
  if (inner == 1)
    ec_line(e, "Y0[o] = bi;");
  else
    ec_line(e, "for (ptrdiff_t c = 0; c < cw; c++) Y0[o * %lld + c0 + c] = bi[c];", LL(inner));
  close_loops(e, opened);
  return true;
}

bool emitc_ArgMax(EmitC *e, const Node *n) { return emit_arg(e, n, true); }
bool emitc_ArgMin(EmitC *e, const Node *n) { return emit_arg(e, n, false); }

bool emitc_Hardmax(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  const char *T = dtype_ctype(t);
  bool coerce = n->g->opset < 13;
  int axis;
  IR_ASSERT(shape_axis(ir_attr_int(n, "axis", coerce ? 1 : -1), xs->rank, &axis));
  int64_t outer, len, inner, bw;
  split3(xs, axis, &outer, &len, &inner);
  if (coerce) {  /* before opset 13: the input as 2-D [outer, rest] */
    len = ec_prod(xs, axis, xs->rank);
    inner = 1;
  }
  if (ec_numel(n->out[0]) == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  Buf one, zero;
  buf_init(&one);
  buf_init(&zero);
  ec_ew_store(&one, DT_F32, t, "1.0f");
  ec_ew_store(&zero, DT_F32, t, "0.0f");
  ec_line(e, "const %s one = %s, zero = %s;", T, one.s, zero.s);
  buf_free(&one);
  buf_free(&zero);
  int opened = open_rows(e, T, outer, len, inner, &bw);
  emit_argscan(e, t, len, inner, bw, true, false);
  if (inner == 1) {
    ec_line(e, "%s *y = Y0 + o * %lld;", T, LL(len));
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) y[i] = zero;", LL(len));
    ec_line(e, "y[bi] = one;");
  } else {
    ec_line(e, "%s *y = Y0 + o * %lld + c0;", T, LL(len * inner));
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++)", LL(len));
    ec_line(e, "  for (ptrdiff_t c = 0; c < cw; c++) y[i * %lld + c] = i == bi[c] ? one : zero;", LL(inner));
  }
  close_loops(e, opened);
  return true;
}

/* ---- CumSum ------------------------------------------------------------------------ */

bool emitc_CumSum(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  int axis;
  if (!ec_axis_input(e, n, xs->rank, &axis))
    return false;
  bool exclusive = ir_attr_int(n, "exclusive", 0) != 0, reverse = ir_attr_int(n, "reverse", 0) != 0;
  int64_t outer, len, inner, bw;
  split3(xs, axis, &outer, &len, &inner);
  if (ec_numel(n->out[0]) == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  DType ct = dtype_is_float(t) ? float_ct(t) : dtype_bits(t) > 32 ? DT_U64 : DT_U32;
  const char *T = dtype_ctype(t), *CT = dtype_ctype(ct);
  int opened = open_rows(e, T, outer, len, inner, &bw);
  bool rows = inner > 1;
  const char *a = rows ? "acc[c]" : "acc";
  if (rows) {
    ec_line(e, "%s *y = Y0 + o * %lld + c0;", T, LL(len * inner));
    ec_line(e, "%s acc[%lld];", CT, LL(bw));
    ec_line(e, "for (ptrdiff_t c = 0; c < cw; c++) acc[c] = 0;");
  } else {
    ec_line(e, "%s *y = Y0 + o * %lld;", T, LL(len));
    ec_line(e, "%s acc = 0;", CT);
  }
  if (reverse)
    ec_line(e, "for (ptrdiff_t i = %lld; i >= 0; i--) {", LL(len - 1));
  else
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", LL(len));
  char src[64], dst[64];
  if (rows) {
    ec_line(e, "for (ptrdiff_t c = 0; c < cw; c++) {");
    snprintf(src, sizeof src, "x[i * %lld + c]", LL(inner));
    snprintf(dst, sizeof dst, "y[i * %lld + c]", LL(inner));
  } else {
    snprintf(src, sizeof src, "x[i]");
    snprintf(dst, sizeof dst, "y[i]");
  }
  /* Read before write: the kernel may run in place. */
  Buf b;
  buf_init(&b);
  load(&b, t, ct, src);
  ec_line(e, "const %s v = %s;", CT, b.s);
  buf_free(&b);
  if (!exclusive)
    ec_line(e, "%s += v;", a);
  emit_store(e, dst, ct, t, a);
  if (exclusive)
    ec_line(e, "%s += v;", a);
  if (rows)
    ec_line(e, "}");
  ec_line(e, "}");
  close_loops(e, opened);
  return true;
}

/* ---- TopK ---------------------------------------------------------------------------- */

/* Declares xa, xb: the elements at indices a and b in the compute type. */
static void topk_pair(Buf *b, DType t, int64_t inner, const char *a, const char *bx) {
  char sa[160], sb[160];
  if (inner == 1) {
    snprintf(sa, sizeof sa, "x[%s]", a);
    snprintf(sb, sizeof sb, "x[%s]", bx);
  } else {
    snprintf(sa, sizeof sa, "x[%s * %lld]", a, LL(inner));
    snprintf(sb, sizeof sb, "x[%s * %lld]", bx, LL(inner));
  }
  DType ct = float_ct(t);
  buf_printf(b, "const %s xa = ", dtype_ctype(ct));
  load(b, t, ct, sa);
  buf_puts(b, ", xb = ");
  load(b, t, ct, sb);
  buf_puts(b, ";");
}

/* C expression: element xa (index a) ranks after xb (index b), i.e. a is
 * worse: by value, then the lower index first. Like ONNX Runtime, NaN counts
 * as larger than every number. */
static void topk_worse(Buf *b, DType t, bool largest, const char *a, const char *bx) {
  const char *cmp = largest ? "<" : ">";
  if (dtype_is_float(t))  /* the larger value of the pair decides when it is NaN */
    buf_printf(b, "(%s != %s ? (%s == %s || %s > %s) : (xa %s xb || (xa == xb && %s > %s)))",
               largest ? "xb" : "xa", largest ? "xb" : "xa", largest ? "xa" : "xb", largest ? "xa" : "xb", a, bx,
               cmp, a, bx);
  else
    buf_printf(b, "(xa %s xb || (xa == xb && %s > %s))", cmp, a, bx);
}

/* One comparison statement: `{ const CT xa = .., xb = ..; if (WORSE) stmt }`
 * (with `negate`, if not WORSE), run only when `guard` holds if one is given. */
static void topk_test(EmitC *e, DType t, bool largest, int64_t inner, const char *guard, const char *a,
                      const char *bx, bool negate, const char *stmt) {
  Buf p, w;
  buf_init(&p);
  buf_init(&w);
  topk_pair(&p, t, inner, a, bx);
  topk_worse(&w, t, largest, a, bx);
  if (guard)
    ec_line(e, "if (%s) {", guard);
  else
    ec_line(e, "{");
  ec_line(e, "%s", p.s);
  ec_line(e, "if (%s%s) %s", negate ? "!" : "", w.s, stmt);
  ec_line(e, "}");
  buf_free(&p);
  buf_free(&w);
}

/* Slot j of the index buffer. */
static const char *hslot(char *buf, size_t n, int64_t stride, const char *j) {
  if (stride == 1)
    snprintf(buf, n, "h[%s]", j);
  else
    snprintf(buf, n, strchr(j, ' ') ? "h[(%s) * %lld]" : "h[%s * %lld]", j, LL(stride));
  return buf;
}

/* Heap of the k best indices seen, worst at the root, then heap-sorted so
 * slot 0 holds the best. One sift-down loop serves all three phases:
 * heapify, replacing the root by a better element, and extraction. */
static void topk_heap(EmitC *e, DType t, bool largest, int64_t len, int64_t k, int64_t inner, int64_t hstride) {
  char h0[64], hp[64], hc[64], hc1[64], hend[64], hj[64];
  hslot(h0, sizeof h0, hstride, "0");
  hslot(hp, sizeof hp, hstride, "p");
  hslot(hc, sizeof hc, hstride, "ch");
  hslot(hc1, sizeof hc1, hstride, "ch + 1");
  hslot(hend, sizeof hend, hstride, "end");
  hslot(hj, sizeof hj, hstride, "j");
  ec_line(e, "ptrdiff_t left = %lld, next = %lld, end = %lld;", LL(k / 2), LL(k), LL(k));
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) %s = j;", LL(k), hj);
  ec_line(e, "for (;;) {");
  ec_line(e, "ptrdiff_t p = 0, m = %lld;", LL(k));
  ec_line(e, "int64_t v;");
  ec_line(e, "if (left > 0) {");
  ec_line(e, "p = --left;");
  ec_line(e, "v = %s;", hp);
  ec_line(e, "} else if (next < %lld) {", LL(len));
  ec_line(e, "v = next++;");
  topk_test(e, t, largest, inner, NULL, h0, "v", true, "continue;");
  ec_line(e, "} else if (end > 1) {");
  ec_line(e, "m = --end;");
  ec_line(e, "v = %s;", hend);
  ec_line(e, "%s = %s;", hend, h0);
  ec_line(e, "} else {");
  ec_line(e, "break;");
  ec_line(e, "}");
  ec_line(e, "for (;;) {");
  ec_line(e, "ptrdiff_t ch = 2 * p + 1;");
  ec_line(e, "if (ch >= m) break;");
  topk_test(e, t, largest, inner, "ch + 1 < m", hc1, hc, false, "ch++;");
  topk_test(e, t, largest, inner, NULL, hc, "v", true, "break;");
  ec_line(e, "%s = %s;", hp, hc);
  ec_line(e, "p = ch;");
  ec_line(e, "}");
  ec_line(e, "%s = v;", hp);
  ec_line(e, "}");
}

/* Without an index buffer: the j-th best is the best element ranking after
 * the (j-1)-th. O(k * len), used only for large k with Indices unused. */
static void topk_select(EmitC *e, DType t, bool largest, int64_t len, int64_t k, int64_t inner) {
  ec_line(e, "int64_t prev = -1;");
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", LL(k));
  ec_line(e, "int64_t best = -1;");
  ec_line(e, "for (int64_t i = 0; i < %lld; i++) {", LL(len));
  topk_test(e, t, largest, inner, "prev >= 0", "i", "prev", true, "continue;");
  ec_line(e, "if (best < 0) {");
  ec_line(e, "best = i;");
  ec_line(e, "continue;");
  ec_line(e, "}");
  topk_test(e, t, largest, inner, NULL, "best", "i", false, "best = i;");
  ec_line(e, "}");
  ec_line(e, "if (best < 0) best = 0;  /* only with NaNs */");
  ec_line(e, "y[j * %lld] = x[best * %lld];", LL(inner), LL(inner));
  ec_line(e, "prev = best;");
  ec_line(e, "}");
}

bool emitc_TopK(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  const char *T = dtype_ctype(t);
  int axis;
  IR_ASSERT(shape_axis(ir_attr_int(n, "axis", -1), xs->rank, &axis));
  bool largest = ir_attr_int(n, "largest", 1) != 0;
  int64_t outer, len, inner;
  split3(xs, axis, &outer, &len, &inner);
  int64_t k = n->out[0]->shape.d[axis];
  bool has_idx = ec_has_output(n, 1);
  if (n->g->opset >= 10 && n->in[1]->kind != VK_CONST) {
    /* k read at run time (infer_TopK): the outputs packed at that k, which
     * D0/D1 report; each next element is the best one ranking after the
     * previous in (value, then lower index) order, so no scratch is needed */
    const char *better = largest ? ">" : "<";
    ec_line(e, "const int64_t k = X1[0];");
    ec_line(e, "if (k < 0 || k > %lld)", LL(len));
    ec_line(e, "  return ONNXC_ERR_DIM;");
    for (int i = 0; i < 2; i++)
      if (ec_has_output(n, i))
        for (int q = 0; q < xs->rank; q++)
          ec_line(e, "D%d[%d] = %s;", i, q, q == axis ? "k" : arena_printf(e->g->arena, "%lld", LL(xs->d[q])));
    if (!has_idx && n->n_out > 1)
      ec_line(e, "(void)Y1;");
    ec_line(e, "for (ptrdiff_t o = 0; o < %lld; o++) {", LL(outer));
    ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) {", LL(inner));
    ec_line(e, "const %s *x = X0 + o * %lld + c;", T, LL(len * inner));
    ec_line(e, "%s lv = x[0];", T);
    ec_line(e, "ptrdiff_t li = -1;");
    ec_line(e, "for (ptrdiff_t j = 0; j < k; j++) {");
    ec_line(e, "ptrdiff_t bi = -1;");
    ec_line(e, "%s bv = x[0];", T);
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", LL(len));
    ec_line(e, "const %s v = x[i * %lld];", T, LL(inner));
    ec_line(e, "if (li >= 0 && !(v %s lv ? 0 : v == lv ? i > li : 1))", better);
    ec_line(e, "  continue;");
    ec_line(e, "if (bi < 0 || v %s bv)", better);
    ec_line(e, "  bi = i, bv = v;");
    ec_line(e, "}");
    ec_line(e, "Y0[(o * k + j) * %lld + c] = bv;", LL(inner));
    if (has_idx)
      ec_line(e, "Y1[(o * k + j) * %lld + c] = (int64_t)bi;", LL(inner));
    ec_line(e, "li = bi, lv = bv;");
    ec_line(e, "}");
    ec_line(e, "}");
    ec_line(e, "}");
    return true;
  }
  if (ec_numel(n->out[0]) == 0) {
    ec_line(e, has_idx ? "(void)Y0, (void)Y1;" : "(void)Y0;");
    return true;
  }
  ec_line(e, "for (ptrdiff_t o = 0; o < %lld; o++) {", LL(outer));
  ec_line(e, "for (ptrdiff_t c = 0; c < %lld; c++) {", LL(inner));
  ec_line(e, "const %s *x = X0 + o * %lld + c;", T, LL(len * inner));
  ec_line(e, "%s *y = Y0 + o * %lld + c;", T, LL(k * inner));
  int64_t hstride = inner;
  if (has_idx) {
    ec_line(e, "int64_t *h = Y1 + o * %lld + c;", LL(k * inner));
  } else if (k <= TOPK_STACK) {
    ec_line(e, "int64_t h[%lld];", LL(k));
    hstride = 1;
  } else {
    topk_select(e, t, largest, len, k, inner);
    ec_line(e, "}");
    ec_line(e, "}");
    return true;
  }
  topk_heap(e, t, largest, len, k, inner, hstride);
  char hj[64];
  hslot(hj, sizeof hj, hstride, "j");
  if (inner == 1)
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) y[j] = x[%s];", LL(k), hj);
  else
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) y[j * %lld] = x[%s * %lld];", LL(k), LL(inner), hj,
            LL(inner));
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}
