/* emit_elementwise.c - C kernels for every EW row of ops.def.
 *
 * A kernel is a loop nest over the output with one load per operand and the
 * row's scalar template in the innermost body. Broadcasting is resolved at
 * compile time: output dims of extent 1 are dropped, adjacent dims that every
 * operand treats alike (all present, or all broadcast) are merged, and each
 * operand gets a stride per merged dim (0 where it broadcasts). A load sits in
 * the innermost loop its index depends on, so scalars and row vectors are read
 * once per row, and equal shapes give one flat, vectorizable loop.
 * f16/bf16 are computed in float; integer Add/Sub/Mul/Neg/Sum in the unsigned
 * type of the same width (wraparound like ORT, no signed-overflow UB).
 */
#include "codegen.h"

#include <stdlib.h>
#include <string.h>

/* ---- types and templates -------------------------------------------------- */

static bool wraps(OpKind op) {
  return op == OP_Add || op == OP_Sub || op == OP_Mul || op == OP_Neg || op == OP_Sum || op == OP_BitShift;
}

static DType unsigned_of(DType t) {
  return dtype_bits(t) > 32 ? DT_U64 : DT_U32;
}

static DType float_compute(DType t) {
  return t == DT_F64 ? DT_F64 : DT_F32;
}

DType ec_ew_compute_type(const Node *n) {
  if (n->op == OP_Cast)
    return ec_cast_mid(n->in[0]->dt);
  DType dt = n->in[n->op == OP_Where ? 1 : 0]->dt;
  if (n->op == OP_Pow) {
    DType e = n->in[1]->dt;
    if (!dtype_is_float(dt) || dt == DT_F64 || e == DT_F64)
      return DT_F64;  /* integer base: exact for any result an integer can hold */
    return DT_F32;
  }
  if (dtype_is_float(dt))
    return float_compute(dt);
  if (dtype_is_int(dt) && wraps(n->op))
    return unsigned_of(dt);
  return dt;
}

static bool is_unsigned(DType t) {
  return dtype_is_int(t) && !dtype_is_signed(t);
}

/* The C target's float32 template: the exponential functions through
 * onnxc_rt.h's branch-free versions (onnxc_expf 1.3 ulp, onnxc_erff 1.3,
 * onnxc_tanhf 1.4: tests/test_rt_math.c), so that loops of them vectorize;
 * other types and ops, and the CUDA target, keep ec_ew_template's libm. */
const char *ec_ew_template_c(const Node *n, DType compute) {
  if (compute == DT_F32)
    switch (n->op) {
    case OP_Exp: return "onnxc_expf(%0)";
    case OP_Erf: return "onnxc_erff(%0)";
    case OP_Tanh: return "onnxc_tanhf(%0)";
    case OP_Sigmoid: return "(1.0f / (1.0f + onnxc_expf(-%0)))";
    case OP_Elu: return "(%0 >= 0 ? %0 : (%T)%{alpha=1.0} * (onnxc_expf(%0) - 1.0f))";
    case OP_Selu:
      return "((%T)%{gamma=1.05070102214813232421875} * (%0 > 0 ? %0 : "
             "(%T)%{alpha=1.67326319217681884765625} * (onnxc_expf(%0) - 1.0f)))";
    case OP_Celu: return "(%0 > 0 ? %0 : (%T)%{alpha=1.0} * (onnxc_expf(%0 / (%T)%{alpha=1.0}) - 1.0f))";
    case OP_Swish: return "(%0 / (1.0f + onnxc_expf(-(%T)%{alpha=1.0} * %0)))";
    default: break;
    }
  return ec_ew_template(n, compute);
}

const char *ec_ew_template(const Node *n, DType compute) {
  const char *row = ir_ops[n->op].expr;
  bool sint = dtype_is_int(compute) && dtype_is_signed(compute);
  bool uint = is_unsigned(compute) || compute == DT_BOOL;
  switch (n->op) {
  case OP_Div:
    /* ONNX leaves x/0 undefined; C makes it (and INT_MIN/-1) UB: yield 0 and wrap. */
    if (sint)
      return "(%1 == 0 ? (%T)0 : (%1 == -1 ? (%T)(0 - (uint64_t)%0) : (%T)(%0 / %1)))";
    if (uint)
      return "(%1 == 0 ? (%T)0 : (%T)(%0 / %1))";
    return row;
  case OP_Abs:
    if (sint)
      return "(%0 < 0 ? (%T)(0 - (uint64_t)%0) : %0)";
    return uint ? "%0" : row;
  case OP_Sign:
    return uint ? "(%T)(%0 > 0)" : row;
  case OP_PRelu:
    return uint ? "%0" : row;
  case OP_Mod:
    if (uint)
      return "(%1 == 0 ? (%T)0 : (%T)(%0 %% %1))";
    if (!sint)
      return row;
    if (ir_attr_int(n, "fmod", 0))
      return "(%1 == 0 || %1 == -1 ? (%T)0 : (%T)(%0 %% %1))";
    return "(%1 == 0 || %1 == -1 ? (%T)0 : "
           "(%T)((%0 %% %1) != 0 && ((%0 %% %1) < 0) != (%1 < 0) ? (%0 %% %1) + %1 : (%0 %% %1)))";
  case OP_BitShift:
    if (!strcmp(ir_attr_str(n, "direction", ""), "RIGHT"))
      return "(%1 >= sizeof(%T) * 8 ? (%T)0 : (%T)(%0 >> %1))";
    return row;
  case OP_Max:
    return dtype_is_float(compute) ? row : "(%0 > %1 ? %0 : %1)";
  case OP_Min:
    return dtype_is_float(compute) ? row : "(%0 < %1 ? %0 : %1)";
  default:
    return row;
  }
}

bool ec_expand_expr(Diag *d, const Node *n, const char *expr, const char *const *operands,
                    int n_operands, DType compute, Buf *out) {
  for (const char *p = expr; *p; p++) {
    if (*p != '%') {
      buf_putc(out, *p);
      continue;
    }
    p++;
    if (*p >= '0' && *p <= '9') {
      int k = *p - '0';
      if (k >= n_operands)
        return diag_error(d, n, "internal: template '%s' names operand %d of %d", expr, k, n_operands);
      /* a compound operand ("a + b", a cast) goes in parenthesized so the
       * template's operators bind to all of it */
      if (strspn(operands[k], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_[]") ==
          strlen(operands[k]))
        buf_puts(out, operands[k]);
      else
        buf_printf(out, "(%s)", operands[k]);
    } else if (*p == 'f') {
      buf_puts(out, compute == DT_F32 ? "f" : "");
    } else if (*p == 'T') {
      buf_puts(out, dtype_ctype(compute));
    } else if (*p == '%') {
      buf_putc(out, '%');
    } else if (*p == '{') {
      const char *eq = strchr(p, '='), *end = strchr(p, '}');
      if (!eq || !end || eq > end)
        return diag_error(d, n, "internal: malformed attribute in template '%s'", expr);
      char name[64], lit[64];
      size_t len = (size_t)(eq - p - 1);
      if (len >= sizeof name)
        return diag_error(d, n, "internal: attribute name too long in template '%s'", expr);
      memcpy(name, p + 1, len);
      name[len] = 0;
      /* ONNX float attributes are 32-bit: round the default the same way. */
      float dflt = (float)strtod(eq + 1, NULL);
      double v = ir_attr_float(n, name, dflt);
      buf_puts(out, ec_literal(dtype_is_float(compute) ? compute : DT_F32, v, lit, sizeof lit));
      p = end;
    } else {
      return diag_error(d, n, "internal: bad escape '%%%c' in template '%s'", *p ? *p : '0', expr);
    }
  }
  return true;
}

void ec_ew_load(Buf *out, DType from, DType compute, const char *src) {
  const char *cv = dtype_ctype(compute);
  if (from == DT_F16 || from == DT_BF16) {
    const char *fn = from == DT_F16 ? "onnxc_f16_to_f32" : "onnxc_bf16_to_f32";
    if (compute == DT_F32)
      buf_printf(out, "%s(%s)", fn, src);
    else
      buf_printf(out, "(%s)%s(%s)", cv, fn, src);
  } else if (from == compute) {
    buf_puts(out, src);
  } else {
    buf_printf(out, "(%s)%s", cv, src);
  }
}

void ec_ew_store(Buf *out, DType compute, DType to, const char *expr) {
  if (to == DT_F16 || to == DT_BF16)
    buf_printf(out, "%s(%s(%s))", to == DT_F16 ? "onnxc_f32_to_f16" : "onnxc_f32_to_bf16",
               compute == DT_F32 ? "" : "(float)", expr);
  else
    buf_printf(out, "(%s)(%s)", dtype_ctype(to), expr);
}

/* Copies a finished expression into the caller's buffer; the whole text must fit. */
static const char *copy_out(char *buf, size_t n, Buf *b) {
  size_t len = b->len;
  IR_ASSERT(len < n);
  memcpy(buf, b->s, len + 1);
  buf_free(b);
  return buf;
}

const char *ec_ew_load_str(char *buf, size_t n, DType from, DType compute, const char *src) {
  Buf b;
  buf_init(&b);
  ec_ew_load(&b, from, compute, src);
  return copy_out(buf, n, &b);
}

const char *ec_ew_store_str(char *buf, size_t n, DType compute, DType to, const char *expr) {
  Buf b;
  buf_init(&b);
  ec_ew_store(&b, compute, to, expr);
  return copy_out(buf, n, &b);
}

/* ---- broadcast loop nest -------------------------------------------------- */

typedef struct Nest {
  int rank;                        /* merged dims; 0: a single element */
  int64_t ext[IR_MAX_RANK];
  int64_t ostride[IR_MAX_RANK];    /* output, row-major */
  int n_ops;
  int64_t (*stride)[IR_MAX_RANK];  /* per operand, 0 on broadcast dims */
  int *depth;                      /* per operand: deepest dim its index uses, -1: scalar */
  int64_t *base;                   /* per operand: element offset (a view's), else 0 */
} Nest;

/* An operand is "full" along an output dim when it spans it rather than
 * broadcasting; dims are merged where every operand's fullness agrees. */
static void nest_build(const Node *n, Nest *ns) {
  const Shape *os = &n->out[0]->shape;
  int r = os->rank, nk = ns->n_ops;
  bool full[IR_MAX_RANK];
  int keep[IR_MAX_RANK], nkeep = 0;
  for (int j = 0; j < r; j++)
    if (os->d[j] != 1)
      keep[nkeep++] = j;
  if (ir_attr(n, "onnxc.views")) {
    /* an operand read in place of Transposes and Slices: one loop per dim,
     * each operand at its own strides and offset (its view) */
    ns->rank = nkeep;
    int64_t acc = 1;
    for (int q = nkeep - 1; q >= 0; q--) {
      ns->ext[q] = os->d[keep[q]];
      ns->ostride[q] = acc;
      acc *= ns->ext[q];
    }
    for (int k = 0; k < nk; k++) {
      const Shape *ls = kd_operand_shape(n, k);
      int64_t st[IR_MAX_RANK];
      ns->base[k] = kd_operand_strides(n, k, st);
      ns->depth[k] = -1;
      for (int q = 0; q < nkeep; q++) {
        int a = keep[q] - (r - ls->rank);
        ns->stride[k][q] = a >= 0 && ls->d[a] != 1 ? st[a] : 0;
        if (ns->stride[k][q])
          ns->depth[k] = q;
      }
    }
    return;
  }
  /* Merge runs of kept dims whose full/broadcast pattern matches. */
  int group[IR_MAX_RANK];
  ns->rank = 0;
  for (int q = 0; q < nkeep; q++) {
    int j = keep[q];
    bool same = q > 0;
    for (int k = 0; k < nk && same; k++) {
      const Shape *s = &n->in[k]->shape;
      int a = j - (r - s->rank), b = keep[q - 1] - (r - s->rank);
      bool fa = a >= 0 && s->d[a] != 1, fb = b >= 0 && s->d[b] != 1;
      same = fa == fb;
    }
    if (!same)
      ns->ext[ns->rank++] = 1;
    ns->ext[ns->rank - 1] *= os->d[j];
    group[q] = ns->rank - 1;
  }
  int64_t acc = 1;
  for (int m = ns->rank - 1; m >= 0; m--) {
    ns->ostride[m] = acc;
    acc *= ns->ext[m];
  }
  for (int k = 0; k < nk; k++) {
    const Shape *s = &n->in[k]->shape;
    for (int m = 0; m < ns->rank; m++)
      full[m] = false;
    for (int q = 0; q < nkeep; q++) {
      int a = keep[q] - (r - s->rank);
      if (a >= 0 && s->d[a] != 1)
        full[group[q]] = true;
    }
    int64_t sacc = 1;
    ns->depth[k] = -1;
    for (int m = ns->rank - 1; m >= 0; m--) {
      ns->stride[k][m] = full[m] ? sacc : 0;
      if (full[m]) {
        sacc *= ns->ext[m];
        if (ns->depth[k] < m)
          ns->depth[k] = m;
      }
    }
  }
}

/* "i0 * 12 + i2" for the dims up to `depth` with the given strides. */
static void index_expr(Buf *b, const int64_t *stride, int depth) {
  bool any = false;
  for (int m = 0; m <= depth; m++) {
    if (!stride[m])
      continue;
    if (any)
      buf_puts(b, " + ");
    if (stride[m] == 1)
      buf_printf(b, "i%d", m);
    else
      buf_printf(b, "i%d * %lld", m, (long long)stride[m]);
    any = true;
  }
  if (!any)
    buf_puts(b, "0");
}

/* Loads operand k into `a<k>`, converted to `to` (the compute type; for a
 * fused kernel the operand's own type, kd_operand_type). */
static void emit_load(EmitC *e, const Node *n, const Nest *ns, int k, DType to) {
  Buf src, ld;
  buf_init(&src);
  buf_init(&ld);
  buf_printf(&src, "X%d[", k);
  if (ns->base[k])
    buf_printf(&src, "%lld + ", (long long)ns->base[k]);
  index_expr(&src, ns->stride[k], ns->depth[k]);
  buf_putc(&src, ']');
  ec_ew_load(&ld, n->in[k]->dt, to, src.s);
  ec_line(e, "const %s a%d = %s;", dtype_ctype(to), k, ld.s);
  buf_free(&src);
  buf_free(&ld);
}

static void buf_clear(Buf *b) {
  b->len = 0;
  buf_puts(b, "");
}

/* The innermost body: the template (folded for variadic rows) and the store. */
static bool emit_body(EmitC *e, const Node *n, const Nest *ns, DType compute) {
  const char *tmpl = ec_ew_template_c(n, compute);
  const char *ct = dtype_ctype(compute);
  int nk = ns->n_ops;
  char names[EC_EXPR_MAX_OPS][16];
  const char *ops[EC_EXPR_MAX_OPS];
  Buf ex, st, idx;
  buf_init(&ex);
  buf_init(&st);
  buf_init(&idx);
  bool ok = true;
  if (ir_ops[n->op].max_in < 0) {
    ec_line(e, "%s r = a0;", ct);
    ops[0] = "r";
    ops[1] = names[1];
    for (int k = 1; k < nk && ok; k++) {
      snprintf(names[1], sizeof names[1], "a%d", k);
      buf_clear(&ex);
      ok = ec_expand_expr(e->d, n, tmpl, ops, 2, compute, &ex);
      if (ok)
        ec_line(e, "r = %s;", ex.s);
    }
    buf_clear(&ex);
    if (n->op == OP_Mean)
      buf_printf(&ex, "r / (%s)%d", ct, nk);
    else
      buf_puts(&ex, "r");
  } else {
    for (int k = 0; k < nk; k++) {
      snprintf(names[k], sizeof names[k], "a%d", k);
      ops[k] = names[k];
    }
    ok = ec_expand_expr(e->d, n, tmpl, ops, nk, compute, &ex);
  }
  if (ok) {
    DType to = n->out[0]->dt;
    ec_ew_store(&st, compute, to, ex.s);
    index_expr(&idx, ns->ostride, ns->rank - 1);
    ec_line(e, "Y0[%s] = %s;", idx.s, st.s);
  }
  buf_free(&ex);
  buf_free(&st);
  buf_free(&idx);
  return ok;
}

/* The fused kernel's body (kernel_desc.c): its steps, then the stores (one
 * per output; sibling chains merged by fuse-elementwise have several, all
 * of the iteration space's shape, so at the same index). */
static bool emit_fused_body(EmitC *e, const Kdesc *kd, const Nest *ns) {
  Buf st, idx, res[KD_MAX_OUTPUTS];
  buf_init(&st);
  buf_init(&idx);
  buf_puts(&st, "");
  for (int o = 0; o < kd->n_out; o++) {
    buf_init(&res[o]);
    buf_puts(&res[o], "");
  }
  bool ok = kd_emit_outputs(kd, true, "", &st, res, e->d);
  if (ok) {
    ec_lines(e, st.s);
    index_expr(&idx, ns->ostride, ns->rank - 1);
    /* an output nothing reads (a Shape of it folded) is no parameter: its
     * value is dropped, which keeps the loads only it read used */
    for (int o = 0; o < kd->n_out; o++)
      if (ec_has_output(kd->fused, o))
        ec_line(e, "Y%d[%s] = %s;", o, idx.s, res[o].s);
      else
        ec_line(e, "(void)(%s);", res[o].s);
  }
  buf_free(&st);
  buf_free(&idx);
  for (int o = 0; o < kd->n_out; o++)
    buf_free(&res[o]);
  return ok;
}

/* The loop nest over n's output; the body is n's template, or the fused
 * kernel kd's steps when kd is set. */
static bool emit_ew_kernel(EmitC *e, const Node *n, const Kdesc *kd) {
  const Value *y = n->out[0];
  int64_t numel;
  if (!shape_numel(&y->shape, &numel))
    return diag_error(e->d, n, "internal: output shape is not static");
  if (!dtype_ctype(y->dt)[0])
    return diag_error(e->d, n, "element type %s is not supported by the C target", dtype_name(y->dt));
  int nk = n->n_in;
  if (!kd && ir_ops[n->op].max_in >= 0 && nk > EC_EXPR_MAX_OPS)
    return diag_error(e->d, n, "internal: %d operands, templates take at most %d", nk, EC_EXPR_MAX_OPS);
  if (numel == 0) {
    for (int o = 0; o < n->n_out; o++)
      ec_line(e, "(void)Y%d;", o);
    return true;
  }
  DType compute = kd ? DT_UNDEF : ec_ew_compute_type(n);
  Nest ns;
  ns.n_ops = nk;
  ns.stride = calloc((size_t)nk, sizeof *ns.stride);
  ns.depth = calloc((size_t)nk, sizeof *ns.depth);
  ns.base = calloc((size_t)nk, sizeof *ns.base);
  DType *to = calloc((size_t)nk, sizeof *to);
  IR_ASSERT(ns.stride && ns.depth && ns.base && to);
  for (int k = 0; k < nk; k++)
    to[k] = kd ? kd_operand_type(n->in[k]->dt) : compute;
  nest_build(n, &ns);
  for (int k = 0; k < nk; k++)
    if (ns.depth[k] < 0)
      emit_load(e, n, &ns, k, to[k]);
  /* --threads: when its cost pays for the pool, the outer loop is cut into
   * chunks that the threads claim one at a time (codegen.h) */
  int64_t chunks = 0;
  double cost = ec_cost(COST_EW_ELEM, (double)numel);
  if (ec_par_worth(e, cost) && ns.rank >= 1 && ns.ext[0] > 1) {
    chunks = ec_par_chunks(e, ns.ext[0], cost);
    ec_set_parallel(e);
    ec_line(e, "long own = 0, it;");
    ec_line(e, "(void)own;");
    ec_line(e, "while ((it = onnxc_nt > 1 ? onnxc_claim() : own++) < %lld) {", (long long)chunks);
  }
  for (int m = 0; m < ns.rank; m++) {
    if (m == 0 && chunks)
      ec_line(e, "for (ptrdiff_t i0 = it * %lld / %lld; i0 < (it + 1) * %lld / %lld; i0++) {",
              (long long)ns.ext[0], (long long)chunks, (long long)ns.ext[0], (long long)chunks);
    else
      ec_line(e, "for (ptrdiff_t i%d = 0; i%d < %lld; i%d++) {", m, m, (long long)ns.ext[m], m);
    for (int k = 0; k < nk; k++)
      if (ns.depth[k] == m)
        emit_load(e, n, &ns, k, to[k]);
  }
  bool ok = kd ? emit_fused_body(e, kd, &ns) : emit_body(e, n, &ns, compute);
  for (int m = 0; m < ns.rank; m++)
    ec_line(e, "}");
  if (chunks)
    ec_line(e, "}");
  free(ns.stride);
  free(ns.depth);
  free(ns.base);
  free(to);
  return ok;
}

bool emitc_elementwise(EmitC *e, const Node *n) { return emit_ew_kernel(e, n, NULL); }

/* A fused elementwise chain (passes/fuse_elementwise.c): one loop nest over
 * its output, its operands loaded as in a single node's kernel, the chain's
 * steps in the innermost body; merged sibling chains store several outputs
 * from the same loop. */
bool emitc_FusedElementwise(EmitC *e, const Node *n) {
  Kdesc kd;
  if (!kd_build(n, &kd, e->d))
    return false;
  Buf what;
  buf_init(&what);
  buf_puts(&what, "");
  kd_describe(&kd, &what);
  ec_line(e, "/* fused: %s */", what.s);
  buf_free(&what);
  return emit_ew_kernel(e, n, &kd);
}
