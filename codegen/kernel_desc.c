/* kernel_desc.c - the kernel description of a FusedElementwise node, and the
 * scalar code both targets print from it.
 *
 * passes/fuse_elementwise.c leaves each chain of elementwise nodes as one
 * node whose body subgraph holds the chain. kd_build reads that body into
 * steps: the node (its row's template and attributes, or a Cast's
 * conversion, ec_cast_template), its compute type
 * (ec_ew_compute_type, as if it ran alone) and where each argument comes from
 * (an operand of the fused node, or an earlier step), and which steps' results
 * the body's outputs are (one, or several when fuse-elementwise merged
 * sibling chains over one iteration space). kd_emit prints the
 * steps as C statements over the operand variables; the C target
 * (emit_elementwise.c) puts them in its broadcast loop nest, the CUDA target
 * (cuda/emit_cuda_kernels.c) in its one-thread-per-element kernel. Each step's
 * result is converted to its ONNX output type exactly as a store to memory
 * would (the pass keeps float16/bfloat16 out of intermediates), so a fused
 * chain computes what the separate kernels compute, value for value.
 */
#include "codegen.h"

#include <stdio.h>
#include <string.h>

DType kd_operand_type(DType t) { return t == DT_F16 || t == DT_BF16 ? DT_F32 : t; }

/* Reads body b (of node n, for messages) into k. */
static bool build_body(const Node *n, const Graph *b, Kdesc *k, Diag *d) {
  if (!b || b->n_outputs < 1 || b->n_outputs > KD_MAX_OUTPUTS || b->n_nodes < 1 || b->n_nodes > KD_MAX_STEPS)
    return diag_error(d, n, "internal: fused body missing or malformed");
  k->fused = n;
  k->body = b;
  k->n_steps = 0;
  for (const Node *m = b->first; m; m = m->next) {
    KdStep *s = &k->step[k->n_steps];
    bool cast = m->op == OP_Cast && m->n_in == 1;
    if ((!ir_ops[m->op].expr && !cast) || m->n_in > EC_EXPR_MAX_OPS)
      return diag_error(d, n, "internal: body node '%s' (%s) is not elementwise", m->name, m->op_type);
    s->n = m;
    s->compute = ec_ew_compute_type(m);
    s->tmpl[0] = 0;
    if (cast) {
      Buf t;
      buf_init(&t);
      ec_cast_template(&t, m->in[0]->dt, m->out[0]->dt);
      IR_ASSERT(t.len < sizeof s->tmpl);
      memcpy(s->tmpl, t.s, t.len + 1);
      buf_free(&t);
    }
    s->n_arg = m->n_in;
    for (int j = 0; j < m->n_in; j++) {
      int src = 0;
      bool found = false;
      for (int i = 0; i < b->n_inputs && !found; i++)
        if (b->inputs[i] == m->in[j]) {
          src = i;
          found = true;
        }
      for (int t = 0; t < k->n_steps && !found; t++)
        if (k->step[t].n->out[0] == m->in[j]) {
          src = -1 - t;
          found = true;
        }
      if (!found)
        return diag_error(d, n, "internal: body node '%s' reads a value from outside the body", m->name);
      s->arg[j] = src;
    }
    k->n_steps++;
  }
  /* every output is the result of a step; the last step is stored */
  k->n_out = b->n_outputs;
  bool last = false;
  for (int o = 0; o < b->n_outputs; o++) {
    k->out_step[o] = -1;
    for (int t = 0; t < k->n_steps && k->out_step[o] < 0; t++)
      if (k->step[t].n->out[0] == b->outputs[o])
        k->out_step[o] = t;
    if (k->out_step[o] < 0 || !shape_equal(&b->outputs[o]->shape, &b->outputs[0]->shape))
      return diag_error(d, n, "internal: fused body output %d is no step's result of the output shape", o);
    last |= k->out_step[o] == k->n_steps - 1;
  }
  if (!last)
    return diag_error(d, n, "internal: fused body does not end in its output");
  return true;
}

bool kd_build(const Node *n, Kdesc *k, Diag *d) {
  const Attr *a = ir_attr(n, "body");
  const Graph *b = a && a->kind == AT_GRAPH ? a->u.g : NULL;
  if (b && (b->n_inputs != n->n_in || b->n_outputs != n->n_out))
    return diag_error(d, n, "internal: FusedElementwise body does not match its inputs and outputs");
  return build_body(n, b, k, d);
}

/* The template for step s: the row's (ec_ew_template), or on the C target the
 * float32 transcendental functions of onnxc_rt.h that vectorize. */
static const char *step_template(const KdStep *s, bool fast_c) {
  if (s->n->op == OP_Cast)
    return s->tmpl;
  return fast_c ? ec_ew_template_c(s->n, s->compute) : ec_ew_template(s->n, s->compute);
}

/* The C expression of argument j of step s, converted to its compute type:
 * operand i is opnd[i] (of kd_operand_type of its type), step t's result
 * step_val[t] (of its output type). */
static void arg_expr(const Kdesc *k, const KdStep *s, int j, const char *const *opnd,
                     const char *const *step_val, Buf *out) {
  if (s->arg[j] >= 0)
    ec_ew_load(out, kd_operand_type(k->body->inputs[s->arg[j]]->dt), s->compute, opnd[s->arg[j]]);
  else
    ec_ew_load(out, k->step[-1 - s->arg[j]].n->out[0]->dt, s->compute, step_val[-1 - s->arg[j]]);
}

/* The expression of step s (in its compute type) into out. */
static bool step_expr(const Kdesc *k, const KdStep *s, bool fast_c, const char *const *opnd,
                      const char *const *step_val, Buf *out, Diag *d) {
  const char *tmpl = step_template(s, fast_c);
  Buf args[EC_EXPR_MAX_OPS];
  const char *ops[EC_EXPR_MAX_OPS];
  for (int j = 0; j < s->n_arg; j++) {
    buf_init(&args[j]);
    buf_puts(&args[j], "");
    arg_expr(k, s, j, opnd, step_val, &args[j]);
    ops[j] = args[j].s;
  }
  bool ok = true;
  if (ir_ops[s->n->op].max_in < 0) {
    /* variadic rows: the binary step folded left to right */
    Buf acc;
    buf_init(&acc);
    buf_puts(&acc, ops[0]);
    for (int j = 1; j < s->n_arg && ok; j++) {
      Buf next;
      buf_init(&next);
      buf_puts(&next, "");
      const char *pair[2] = {acc.s, ops[j]};
      ok = ec_expand_expr(d, s->n, tmpl, pair, 2, s->compute, &next);
      buf_free(&acc);
      acc = next;
    }
    if (ok && s->n->op == OP_Mean)
      buf_printf(out, "(%s) / (%s)%d", acc.s, dtype_ctype(s->compute), s->n_arg);
    else if (ok)
      buf_puts(out, acc.s);
    buf_free(&acc);
  } else {
    ok = ec_expand_expr(d, s->n, tmpl, ops, s->n_arg, s->compute, out);
  }
  for (int j = 0; j < s->n_arg; j++)
    buf_free(&args[j]);
  return ok;
}

/* Names a0.. and t0.. (kd_emit's variables) into names (16 bytes each). */
static void var_names(char (*names)[16], const char **ptr, int n, char c) {
  for (int i = 0; i < n; i++) {
    snprintf(names[i], 16, "%c%d", c, i);
    ptr[i] = names[i];
  }
}

/* Whether a later step than t reads step t's result. */
static bool step_read_later(const Kdesc *k, int t) {
  for (int i = t + 1; i < k->n_steps; i++)
    for (int j = 0; j < k->step[i].n_arg; j++)
      if (k->step[i].arg[j] == -1 - t)
        return true;
  return false;
}

bool kd_emit_outputs(const Kdesc *k, bool fast_c, const char *indent, Buf *stmts, Buf *results, Diag *d) {
  char an[KD_MAX_OPERANDS][16], tn[KD_MAX_STEPS][16];
  const char *opnd[KD_MAX_OPERANDS], *step_val[KD_MAX_STEPS];
  IR_ASSERT(k->body->n_inputs <= KD_MAX_OPERANDS);
  var_names(an, opnd, k->body->n_inputs, 'a');
  var_names(tn, step_val, k->n_steps, 't');
  for (int i = 0; i < k->n_steps; i++) {
    const KdStep *s = &k->step[i];
    int stored = -1;
    for (int o = 0; o < k->n_out && stored < 0; o++)
      if (k->out_step[o] == i)
        stored = o;
    Buf ex;
    buf_init(&ex);
    buf_puts(&ex, "");
    bool ok = step_expr(k, s, fast_c, opnd, step_val, &ex, d);
    /* a step that only a store reads is stored as its expression; any other
     * step is a statement, and a store of it reads the statement's value */
    bool stmt = ok && (stored < 0 || step_read_later(k, i));
    DType to = s->n->out[0]->dt;
    if (stmt) {
      buf_printf(stmts, "%sconst %s t%d = ", indent, dtype_ctype(to), i);
      ec_ew_store(stmts, s->compute, to, ex.s);
      buf_puts(stmts, ";\n");
    }
    for (int o = 0; o < k->n_out && ok; o++)
      if (k->out_step[o] == i) {
        if (stmt) /* already of the output's type (the step's own) */
          buf_puts(&results[o], tn[i]);
        else
          ec_ew_store(&results[o], s->compute, k->body->outputs[o]->dt, ex.s);
      }
    buf_free(&ex);
    if (!ok)
      return false;
  }
  return true;
}

bool kd_emit(const Kdesc *k, bool fast_c, const char *indent, Buf *stmts, Buf *result, Diag *d) {
  if (k->n_out != 1 || k->out_step[0] != k->n_steps - 1)
    return diag_error(d, k->fused, "internal: a fused body of %d outputs where one is expected", k->n_out);
  return kd_emit_outputs(k, fast_c, indent, stmts, result, d);
}

bool kd_epilogue_expr(const Node *p, const char *x, Buf *out, Diag *d) {
  const Attr *a = ir_attr(p, "epilogue"), *c = ir_attr(p, "epilogue_consts");
  int xi = (int)ir_attr_int(p, "epilogue_input", -1);
  Kdesc k;
  if (!a || a->kind != AT_GRAPH || !c || c->kind != AT_FLOATS || !build_body(p, a->u.g, &k, d) || k.n_out != 1 ||
      c->n != k.body->n_inputs || xi < 0 || xi >= c->n || k.body->n_inputs > KD_MAX_OPERANDS)
    return diag_error(d, p, "internal: malformed epilogue");
  char lits[KD_MAX_OPERANDS][64];
  const char *opnd[KD_MAX_OPERANDS];
  for (int i = 0; i < c->n; i++)
    opnd[i] = i == xi ? x : ec_literal(DT_F32, c->u.fs[i], lits[i], sizeof lits[i]);
  /* each step's result is read once: inlined where it is read */
  Buf val[KD_MAX_STEPS];
  const char *step_val[KD_MAX_STEPS] = {0};
  bool ok = true;
  int done = 0;
  for (int i = 0; i < k.n_steps && ok; i++, done++) {
    Buf ex;
    buf_init(&ex);
    buf_puts(&ex, "");
    ok = step_expr(&k, &k.step[i], true, opnd, step_val, &ex, d);
    buf_init(&val[i]);
    buf_putc(&val[i], '(');
    ec_ew_store(&val[i], k.step[i].compute, k.step[i].n->out[0]->dt, ex.s);
    buf_putc(&val[i], ')');
    step_val[i] = val[i].s;
    buf_free(&ex);
  }
  if (ok)
    buf_puts(out, step_val[k.n_steps - 1]);
  for (int i = 0; i < done; i++)
    buf_free(&val[i]);
  return ok;
}

bool kd_operand_view(const Node *n, int k, int64_t *offset, int64_t *stride) {
  int len = 0;
  const int64_t *enc = ir_attr_ints(n, "onnxc.views", &len);
  for (int at = 0, j = 0; enc && at < len; j++) {
    int r = (int)enc[at];
    if (at + 1 + (r ? 1 + r : 0) > len)
      return false;
    if (j == k && r > 0) {
      *offset = enc[at + 1];
      for (int i = 0; i < r; i++)
        stride[i] = enc[at + 2 + i];
      return true;
    }
    at += 1 + (r ? 1 + r : 0);
  }
  return false;
}

const Shape *kd_operand_shape(const Node *n, int k) {
  const Attr *a = n->op == OP_FusedElementwise ? ir_attr(n, "body") : NULL;
  if (a && a->kind == AT_GRAPH && a->u.g && k < a->u.g->n_inputs)
    return &a->u.g->inputs[k]->shape;
  return &n->in[k]->shape;
}

int64_t kd_operand_strides(const Node *n, int k, int64_t *stride) {
  int64_t off = 0;
  if (kd_operand_view(n, k, &off, stride))
    return off;
  const Shape *buf = &n->in[k]->shape;
  int64_t acc = 1;
  for (int i = buf->rank - 1; i >= 0; i--) {
    stride[i] = acc;
    acc *= buf->d[i];
  }
  return 0;
}

/* The offset, at flat output index i, of the element of an operand of
 * logical shape ls (right-aligned against out, broadcast on its 1s) whose
 * logical dims have strides st in its buffer and whose first element is at
 * base. */
static void unravel_offset(const Shape *ls, const int64_t *st, int64_t base, const Shape *out, const char *i,
                           Buf *b) {
  int64_t ostride[IR_MAX_RANK], acc = 1;
  int r = out->rank, off = r - ls->rank;
  for (int m = r - 1; m >= 0; m--) {
    ostride[m] = acc;
    acc *= out->d[m];
  }
  bool any = false;
  for (int m = 0; m < r; m++) {
    int a = m - off;
    if (a < 0 || ls->d[a] == 1)
      continue;
    buf_printf(b, "%s", any ? " + " : "");
    if (m == 0)
      buf_printf(b, "(%s / %lld)", i, (long long)ostride[m]);
    else if (ostride[m] == 1)
      buf_printf(b, "(%s %% %lld)", i, (long long)out->d[m]);
    else
      buf_printf(b, "(%s / %lld %% %lld)", i, (long long)ostride[m], (long long)out->d[m]);
    if (st[a] != 1)
      buf_printf(b, " * %lld", (long long)st[a]);
    any = true;
  }
  if (!any)
    buf_printf(b, "%lld", (long long)base);
  else if (base)
    buf_printf(b, " + %lld", (long long)base);
}

void kd_operand_offset(const Node *n, int k, const Shape *out, const char *i, Buf *b) {
  int64_t st[IR_MAX_RANK];
  int64_t base = kd_operand_strides(n, k, st);
  unravel_offset(kd_operand_shape(n, k), st, base, out, i, b);
}

void kd_bcast_offset(const Shape *in, const Shape *out, const char *i, Buf *b) {
  int64_t ni = 1, no = 1;
  shape_numel(in, &ni);
  shape_numel(out, &no);
  if (ni == no) {
    buf_puts(b, i);
    return;
  }
  int64_t st[IR_MAX_RANK], acc = 1;
  for (int m = in->rank - 1; m >= 0; m--) {
    st[m] = acc;
    acc *= in->d[m];
  }
  unravel_offset(in, st, 0, out, i, b);
}

bool kd_prologue_row(const Node *n, const char *indent, const char *row, const char *col, const char *dst,
                     Buf *out, Diag *d) {
  const Attr *a = ir_attr(n, "prologue");
  Kdesc k;
  if (!a || a->kind != AT_GRAPH || !build_body(n, a->u.g, &k, d) || k.body->n_inputs != n->n_in ||
      n->n_in > KD_MAX_OPERANDS)
    return diag_error(d, n, "internal: malformed prologue");
  for (int i = 0; i < n->n_in; i++) {
    DType to = kd_operand_type(n->in[i]->dt);
    Buf src;
    buf_init(&src);
    /* rows run along the last axis: the operand's offset is its row's
     * (broadcast over the outer dims) times its last extent, plus the column
     * unless it broadcasts along the row */
    const Shape *is = &n->in[i]->shape, *os = &n->out[0]->shape;
    int64_t last = is->rank ? is->d[is->rank - 1] : 1;
    Shape io = *is, oo = *os;
    io.rank = is->rank ? is->rank - 1 : 0;
    oo.rank = os->rank - 1;
    buf_printf(&src, "X%d[(", i);
    kd_bcast_offset(&io, &oo, row, &src);
    buf_printf(&src, ") * %lld + %s]", (long long)last, last == 1 ? "0" : col);
    buf_printf(out, "%sconst %s a%d = ", indent, dtype_ctype(to), i);
    ec_ew_load(out, n->in[i]->dt, to, src.s);
    buf_puts(out, ";\n");
    buf_free(&src);
  }
  Buf res;
  buf_init(&res);
  buf_puts(&res, "");
  bool ok = kd_emit(&k, true, indent, out, &res, d);
  if (ok)
    buf_printf(out, "%s%s = %s;\n", indent, dst, res.s);
  buf_free(&res);
  return ok;
}

bool kd_prologue_body(const Node *n, Buf *stmts, Buf *result, Diag *d) {
  const Attr *a = ir_attr(n, "prologue");
  Kdesc k;
  if (!a || a->kind != AT_GRAPH || !build_body(n, a->u.g, &k, d) || k.body->n_inputs != n->n_in ||
      n->n_in > KD_MAX_OPERANDS)
    return diag_error(d, n, "internal: malformed prologue");
  return kd_emit(&k, true, "", stmts, result, d);
}

void kd_describe(const Kdesc *k, Buf *out) {
  for (int i = 0; i < k->n_steps; i++) {
    const char *nm = k->step[i].n->name;
    buf_printf(out, "%s%s ", i ? ", " : "", k->step[i].n->op_type);
    /* node names may hold anything; keep the comment closed */
    for (const char *p = nm; *p; p++)
      buf_putc(out, (*p == '*' && p[1] == '/') || *p == '\n' ? '_' : *p);
  }
  if (k->n_out > 1)
    buf_printf(out, "; %d outputs", k->n_out);
}
