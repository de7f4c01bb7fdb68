/* emit_c.c - the C target: header, per-node kernels, NAME_run, weights.
 *
 * Layout of the output (see docs/abi.md):
 *   NAME.h          the ABI: NAME_ARENA_BYTES, NAME_run, NAME_run_v, NAME_info
 *   NAME.c          one `static int` function per node, then NAME_run calling
 *                   them in schedule order with arena offsets from the plan
 *   NAME_weights.h  extern declarations of the weight arrays
 *   NAME_weights.c  (or .bin + .S) the weights themselves
 *   onnxc_rt.h      the runtime header
 * The per-op hooks write function bodies; this file owns everything around them.
 * Storage comes from the plan: a value that aliases a root (a view, an
 * in-place result) is passed as its root's pointer, so an in-place node gets
 * X and Y pointing at the same array (kernels never use restrict); a view the
 * plan elides gets no function; a node with scratch gets `unsigned char *S`.
 */
#include "codegen_internal.h"
#include "gemm.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A C identifier derived from an ONNX name, unique among `used`. */

/* Storage elements of a value in its C array (sub-byte types are packed). */
static int64_t storage_of(const Value *v) {
  int64_t n = cg_numel(v), bytes;
  if (dtype_bits(v->dt) >= 8 || v->dt == DT_STRING)
    return n;
  IR_ASSERT(dtype_bytes(v->dt, n, &bytes));
  return bytes;
}

/* Is this value written by a node straight into the caller's output buffer? */
static const Value *first_output_slot(const Graph *g, const Value *v, int *slot) {
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v) {
      *slot = i;
      return v;
    }
  return NULL;
}

static bool assign_names(CGen *cg, Arena *a) {
  const Graph *g = cg->g;
  cg_param_names(cg, a);
  int n = 0;
  for (int i = 0; i < g->n_values; i++) {
    const Value *v = g->values[i];
    n += v->kind == VK_CONST && (v->n_uses > 0 || v->is_output) && v->dt != DT_STRING;
  }
  cg->weights = arena_alloc(a, (size_t)(n + 1) * sizeof(Value *));
  cg->weight_sym = arena_alloc(a, (size_t)(n + 1) * sizeof(char *));
  for (int i = 0; i < g->n_values; i++) {
    const Value *v = g->values[i];
    if (v->kind != VK_CONST || !(v->n_uses > 0 || v->is_output) || v->dt == DT_STRING)
      continue; /* string constants are tables in NAME.c (string_consts) */
    if (!dtype_ctype(v->dt)[0])
      return diag_error(cg->d, v->n_uses ? v->uses[0] : NULL,
                        "constant '%s' has element type %s, which the C target does not support",
                        v->name, dtype_name(v->dt));
    cg->weight_sym[cg->n_weights] = arena_printf(a, "%s_w%d", cg->o->name, cg->n_weights);
    cg->cname[v->id] = cg->weight_sym[cg->n_weights];
    cg->weights[cg->n_weights++] = v;
  }
  return true;
}

/* C expression for a value passed to a node function. A value that aliases
 * another's storage (a view, an in-place result, a Concat input stored in its
 * slice of the output, a value stored in an output array) names its root's
 * pointer, plus its byte offset there. */
static const char *arg_expr(CGen *cg, Arena *a, const Value *v, bool as_input) {
  const Plan *p = cg->plan;
  const char *cst = as_input ? "const " : "";
  const Value *root = v;
  int64_t sub = 0;
  if (p->alias && p->alias[v->id] >= 0) {
    root = cg->g->values[p->alias[v->id]];
    sub = p->alias_offset ? p->alias_offset[v->id] : 0;
  }
  if (cg->cname[root->id]) {
    const char *base = cg->cname[root->id];
    if (sub)
      return arena_printf(a, "(%s%s *)((%sunsigned char *)%s + %lld)", cst, cg_ctype(v), cst, base,
                          (long long)sub);
    if (root->dt != v->dt || (as_input && root->kind == VK_NODE))
      return arena_printf(a, "(%s%s *)%s", cst, cg_ctype(v), base);
    return base;
  }
  int64_t off = p->offset[v->id];
  IR_ASSERT(off >= 0);
  return arena_printf(a, "(%s%s *)(a + %lld)", cst, cg_ctype(v), (long long)off);
}

static int64_t scratch_of(const CGen *cg, const Node *n) {
  return cg->plan->scratch_size ? cg->plan->scratch_size[n->id] : 0;
}

static bool check_types(CGen *cg, const Node *n) {
  /* Strings: only the kernels of emit_string.c and views with no code. */
  bool str_ok = string_node_ok(n) || (cg->plan->elided && cg->plan->elided[n->id]);
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i]->kind != VK_NONE && !dtype_ctype(n->in[i]->dt)[0] && !(str_ok && n->in[i]->dt == DT_STRING))
      return diag_error(cg->d, n, "input %d has element type %s, which the C target does not support",
                        i, dtype_name(n->in[i]->dt));
  for (int i = 0; i < n->n_out; i++)
    if (n->out[i]->kind != VK_NONE && !dtype_ctype(n->out[i]->dt)[0] && !(str_ok && n->out[i]->dt == DT_STRING))
      return diag_error(cg->d, n, "output %d has element type %s, which the C target does not support",
                        i, dtype_name(n->out[i]->dt));
  return true;
}

/* A node the plan elides (a view, or a Concat whose inputs were written into
 * their slices of its output): no function, a note in NAME_run. */
static void emit_elided(CGen *cg, Arena *a, const Node *n, Buf *run) {
  buf_puts(run, "  /* '");
  cg_comment_safe(run, n->name);
  buf_printf(run, "' (%s): ", n->op_type);
  if (n->op == OP_Concat) {
    buf_puts(run, "its inputs were written in place, no code */\n");
    return;
  }
  buf_puts(run, "a view of ");
  cg_comment_safe(run, arg_expr(cg, a, n->in[0], true));
  buf_puts(run, ", no code */\n");
}

void ec_flat_for(EmitC *e, const char *var, int64_t n) {
  if (e->flat_loops++ == 0)
    e->flat_n = n;
  if (e->cuda) /* one thread does every iteration when launched as one thread */
    ec_line(e, "ONNXC_CUDA_FOR(%s, %lld) {", var, (long long)n);
  else
    ec_line(e, "for (ptrdiff_t %s = 0; %s < %lld; %s++) {", var, var, (long long)n, var);
}

/* The arguments a parallel kernel's task receives in p[] (--profile adds one). */
static int n_task_args(const Node *n, int64_t scratch, bool dyn) {
  int k = (scratch > 0) + dyn;
  for (int i = 0; i < n->n_in; i++)
    k += ir_has_input(n, i);
  for (int i = 0; i < n->n_out; i++)
    k += ec_has_output(n, i) + (ec_has_output(n, i) && n->out[i]->dyn_dims);
  return k;
}

/* Some symbol takes a dim of v (a data-dependent extent read onward). */
static bool data_bound(const Graph *g, const Value *v) {
  for (int k = 0; k < g->n_syms; k++)
    if (g->syms[k].den < 0 && g->syms[k].src_value == v->id)
      return true;
  return false;
}

/* The name of an earlier node function in fns[0, at) whose parameters and
 * body are fns[at, end) character for character, or NULL. Identical kernels
 * are common (BERT-base: 115 functions, 14 different) and Clang spends about
 * a second on each GEMM: the copies become #defines of the first
 * (docs/clang.md). */
static const char *same_kernel(Arena *a, const Buf *fns, size_t at) {
  const char *def = fns->s + at, *from = fns->s;
  size_t n = fns->len - at;
  static const char HEAD[] = "ONNXC_NODE_FN int ", HEAD_W[] = "ONNXC_NODE_FN_W int ";
  for (;;) {
    const char *hit = NULL;
    for (const char *c = from; !hit && c + n <= def && (c = memchr(c, '(', (size_t)(def - c))) != NULL; c++)
      if ((size_t)(def - c) >= n && memcmp(c, def, n) == 0)
        hit = c;
    if (!hit)
      return NULL;
    const char *name = hit;
    while (name > fns->s && (isalnum((unsigned char)name[-1]) || name[-1] == '_'))
      name--;
    if (strncmp(name, "node", 4) == 0 &&
        (((size_t)(name - fns->s) >= sizeof HEAD - 1 && memcmp(name - (sizeof HEAD - 1), HEAD, sizeof HEAD - 1) == 0) ||
         ((size_t)(name - fns->s) >= sizeof HEAD_W - 1 &&
          memcmp(name - (sizeof HEAD_W - 1), HEAD_W, sizeof HEAD_W - 1) == 0)))
      return arena_printf(a, "%.*s", (int)(hit - name), name);
    from = hit + 1;
  }
}

/* kernel: its index among the kernels (--profile). */
static bool emit_node(CGen *cg, Arena *a, const Node *n, int step, int kernel, Buf *fns, Buf *run) {
  if (!check_types(cg, n))
    return false;
  if (cg->plan->elided && cg->plan->elided[n->id]) {
    emit_elided(cg, a, n, run);
    return true;
  }
  int64_t scratch = scratch_of(cg, n);
  Buf body;
  buf_init(&body);
  EmitC e = {cg->g, cg->plan, &body, 0, cg->d, cg->o->name, cg->o->threads, false, false, 0, 0, NULL, NULL, cg->o->l2_bytes, cg->o->conv_order, cg->o->vec_bits};
  /* Every parameter is marked used: hooks read only what they need. */
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i))
      ec_line(&e, "(void)X%d;", i);
  bool dyn = cg->g->n_syms > 0 && dyn_node_is_dynamic(n);
  bool ok = dyn ? dyn_emit_body(&e, n) : cg_emit_body(&e, n);
  bool par = ok && e.parallel;
  /* Whether the body returns an error status (else only the appended ONNXC_OK). */
  bool can_fail = ok && body.s && strstr(body.s, "return") != NULL;
  if (!ok) {
    buf_free(&body);
    if (cg->d->n_errors == 0)
      diag_error(cg->d, n, "the C emitter failed for this node");
    return false;
  }
  const char *fn = arena_printf(a, "node%d_%s", step, n->op_type);
  buf_puts(fns, "/* node '");
  cg_comment_safe(fns, n->name);
  buf_printf(fns, "' (%s) */\n", n->op_type);
  size_t head_at = fns->len;
  /* exp, erf and tanh loops: 512-bit vectors where gcc would take 256 */
  bool wide = body.s && (strstr(body.s, "onnxc_expf(") || strstr(body.s, "onnxc_erff(") ||
                         strstr(body.s, "onnxc_tanhf("));
  buf_printf(fns, "%s int %s", wide ? "ONNXC_NODE_FN_W" : "ONNXC_NODE_FN", fn);
  size_t def_at = fns->len;
  buf_putc(fns, '(');
  bool first = true;
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i)) {
      buf_printf(fns, "%sconst %s *X%d", first ? "" : ", ", cg_ctype(n->in[i]), i);
      first = false;
    }
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i)) {
      buf_printf(fns, "%s%s *Y%d", first ? "" : ", ", cg_ctype(n->out[i]), i);
      first = false;
    }
  for (int i = 0; i < n->n_out; i++) /* data-dependent extents (docs/abi.md) */
    if (ec_has_output(n, i) && n->out[i]->dyn_dims)
      buf_printf(fns, ", int64_t *D%d", i);
  if (dyn) { /* the run's range symbols (docs/dynamic-shapes.md) */
    buf_printf(fns, "%sconst int64_t *dims", first ? "" : ", ");
    first = false;
  }
  if (scratch > 0) {
    buf_printf(fns, "%sunsigned char *S", first ? "" : ", ");
    first = false;
  }
  if (par) /* this thread, the thread count (codegen.h) */
    buf_printf(fns, "%sint onnxc_th, int onnxc_nt", first ? "" : ", ");
  buf_printf(fns, "%s) {\n%s%s%s  return ONNXC_OK;\n}\n\n", first && !par ? "void" : "",
             scratch > 0 ? "  (void)S;\n" : "", par ? "  (void)onnxc_th;\n  (void)onnxc_nt;\n" : "",
             body.s ? body.s : "");
  buf_free(&body);
  const char *same = same_kernel(a, fns, def_at);
  if (same) {
    fns->len = head_at;
    buf_printf(fns, "#define %s %s\n\n", fn, same);
  }

  /* a data-dependent extent read onward (docs/dynamic-shapes.md): the
   * kernel reports it into dd<id>, and dims[] takes it from there */
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i) && n->out[i]->dyn_dims && data_bound(cg->g, n->out[i]) &&
        !first_output_slot(cg->g, n->out[i], &(int){0}))
      buf_printf(run, "  int64_t dd%d[%d];\n", n->out[i]->id, IR_MAX_RANK);
  buf_puts(run, "  /* '");
  cg_comment_safe(run, n->name);
  if (par) {
    /* Run on every thread of the pool: a task taking the arguments as void pointers. */
    int k = 0;
    cg->n_parallel++;
    buf_printf(fns, "static void %s_task(void *const *p, int th, int nt) {\n", fn);
    prof_task_step(cg, kernel, n_task_args(n, scratch, dyn), 0, fns);
    buf_printf(fns, "  (void)%s(", fn);
    for (int i = 0; i < n->n_in; i++)
      if (ir_has_input(n, i))
        buf_printf(fns, "(const %s *)p[%d], ", cg_ctype(n->in[i]), k++);
    for (int i = 0; i < n->n_out; i++)
      if (ec_has_output(n, i))
        buf_printf(fns, "(%s *)p[%d], ", cg_ctype(n->out[i]), k++);
    for (int i = 0; i < n->n_out; i++)
      if (ec_has_output(n, i) && n->out[i]->dyn_dims)
        buf_printf(fns, "(int64_t *)p[%d], ", k++);
    if (dyn)
      buf_printf(fns, "(const int64_t *)p[%d], ", k++);
    if (scratch > 0)
      buf_printf(fns, "(unsigned char *)p[%d], ", k++);
    buf_puts(fns, "th, nt);\n");
    prof_task_step(cg, kernel, k, 1, fns);
    buf_puts(fns, "}\n\n");
    buf_printf(run, "' (%s), on every thread */\n  {\n    void *const p[] = {", n->op_type);
  } else if (!can_fail) {
    /* No error path: a plain call. (A status check after every node made gcc
     * guess that the last nodes of a long model are rarely reached, so it
     * compiled them for size, unvectorized.) */
    buf_printf(run, "' (%s) */\n  (void)%s(", n->op_type, fn);
  } else {
    buf_printf(run, "' (%s) */\n  if ((st = %s(", n->op_type, fn);
  }
  first = true;
  const char *cast = par ? "(void *)" : "";
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i)) {
      buf_printf(run, "%s%s%s", first ? "" : ", ", cast, arg_expr(cg, a, n->in[i], true));
      first = false;
    }
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i)) {
      buf_printf(run, "%s%s%s", first ? "" : ", ", cast, arg_expr(cg, a, n->out[i], false));
      first = false;
    }
  for (int i = 0; i < n->n_out; i++) {
    int slot = -1;
    if (!ec_has_output(n, i) || !n->out[i]->dyn_dims)
      continue;
    if (first_output_slot(cg->g, n->out[i], &slot))
      buf_printf(run, ", %s%s_dims", cast, cg->out_param[slot]);
    else if (data_bound(cg->g, n->out[i]))
      buf_printf(run, ", %sdd%d", cast, n->out[i]->id);
    else /* not a graph output (unused): the extent goes nowhere */
      buf_printf(run, ", %s(int64_t[%d]){0}", cast, IR_MAX_RANK);
  }
  if (dyn)
    buf_printf(run, "%s%sdims", first ? "" : ", ", par ? "(void *)" : "");
  if (scratch > 0)
    buf_printf(run, par ? "%s%s(a + %lld)" : "%s%sa + %lld", first ? "" : ", ", cast,
               (long long)cg->plan->scratch_offset[n->id]);
  if (par) {
    prof_task_arg(cg, run);
    buf_printf(run, "};\n");
    if (e.par_when) /* -D ranges: a small run stays on this thread */
      buf_printf(run, "    if (%s)\n      onnxc_parallel(%s_task, p);\n    else\n      %s_task(p, 0, 1);\n  }\n",
                 e.par_when, fn, fn);
    else
      buf_printf(run, "    onnxc_parallel(%s_task, p);\n  }\n", fn);
  }
  else if (!can_fail)
    buf_puts(run, ");\n");
  else
    buf_puts(run, ")) != ONNXC_OK)\n    return st;\n");
  for (int i = 0; i < n->n_out; i++) {
    int slot = -1;
    if (!ec_has_output(n, i) || !n->out[i]->dyn_dims)
      continue;
    const Graph *root = cg->g;
    for (int k = 0; k < root->n_syms; k++)
      if (root->syms[k].den < 0 && root->syms[k].src_value == n->out[i]->id) {
        if (first_output_slot(cg->g, n->out[i], &slot))
          buf_printf(run, "  dims[%d] = %s_dims[%d];\n", k, cg->out_param[slot], root->syms[k].src_axis);
        else
          buf_printf(run, "  dims[%d] = dd%d[%d];\n", k, n->out[i]->id, root->syms[k].src_axis);
      }
  }
  return true;
}

/* Graph outputs that no node writes into directly: inputs, constants, repeats. */
static void emit_output_copies(CGen *cg, Arena *a, Buf *run) {
  const Graph *g = cg->g;
  for (int i = 0; i < g->n_outputs; i++) {
    const Value *v = g->outputs[i];
    int slot = -1;
    if (v->kind == VK_NODE && first_output_slot(g, v, &slot) && slot == i)
      continue;
    const char *src = v->kind == VK_NODE ? cg->out_param[slot] : cg->cname[v->id];
    IR_ASSERT(src != NULL);
    if (storage_of(v) == 0)
      continue;
    if (!shape_is_static(&v->shape) && shape_is_bounded(&v->shape) && dtype_bits(v->dt) >= 8) {
      /* extents known at run time: this run's elements (the caller's buffer holds no more) */
      buf_printf(run, "  { /* output '%s' */\n    size_t i;\n    for (i = 0; i < (size_t)%s; i++)\n"
                 "      %s[i] = %s[i];\n  }\n", v->name, dyn_numel_c(v, a), cg->out_param[i], src);
      continue;
    }
    buf_printf(run, "  { /* output '%s' */\n    size_t i;\n    for (i = 0; i < %lldu; i++)\n"
               "      %s[i] = %s[i];\n  }\n", v->name, (long long)storage_of(v), cg->out_param[i], src);
  }
}

static void write_header(CGen *cg, Buf *h) {
  const Graph *g = cg->g;
  const char *nm = cg->o->name;
  char up[256];
  size_t k = 0;
  for (; nm[k] && k < sizeof up - 1; k++)
    up[k] = (char)toupper((unsigned char)nm[k]);
  up[k] = 0;
  char sb[512];
  buf_printf(h, "/* %s.h - generated by onnxc %s from %s. Do not edit.\n *\n", nm, ONNXC_VERSION,
             cg->o->model_path ? cg->o->model_path : "a model");
  buf_printf(h, " * int %s_run(void *arena, inputs..., outputs...) computes the model. arena\n"
                " * points at %s_ARENA_BYTES bytes aligned to 64 (NULL allowed when 0);\n"
                " * returns 0 on success. Reentrant: no globals, no allocation.\n", nm, up);
  for (int i = 0; i < g->n_inputs; i++)
    buf_printf(h, " *   input  %d: %s %s%s\n", i, g->inputs[i]->name, dtype_name(g->inputs[i]->dt),
               shape_str(&g->inputs[i]->shape, sb, sizeof sb));
  for (int i = 0; i < g->n_outputs; i++)
    buf_printf(h, " *   output %d: %s %s%s\n", i, g->output_names[i], dtype_name(g->outputs[i]->dt),
               shape_str(&g->outputs[i]->shape, sb, sizeof sb));
  buf_printf(h, " */\n#ifndef %s_H\n#define %s_H\n\n#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", up, up);
  buf_printf(h, "#define %s_ARENA_BYTES %lld\n", up, (long long)cg->plan->arena_bytes);
  buf_printf(h, "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n", up, g->n_inputs, up, g->n_outputs);
  for (int i = 0; i < g->n_inputs; i++)
    buf_printf(h, "#define %s_INPUT%d_NUMEL %lld\n", up, i, (long long)cg_numel(g->inputs[i]));
  for (int i = 0; i < g->n_outputs; i++) {
    buf_printf(h, "#define %s_OUTPUT%d_NUMEL %lld\n", up, i, (long long)cg_numel(g->outputs[i]));
    if (value_dyn_mask(g->outputs[i])) /* NUMEL is then the capacity (docs/abi.md) */
      buf_printf(h, "#define %s_OUTPUT%d_DYNAMIC 1\n#define %s_OUTPUT%d_RANK %d\n", up, i, up, i,
                 g->outputs[i]->shape.rank);
  }
  bool strings = false; /* the typedef of string elements (docs/strings.md) */
  for (int i = 0; i < g->n_inputs + g->n_outputs; i++)
    strings |= (i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs])->dt == DT_STRING;
  if (strings)
    buf_puts(h, "\n#ifndef ONNXC_STR_DEFINED\n#define ONNXC_STR_DEFINED\ntypedef const char *onnxc_str;\n#endif\n");
  buf_printf(h, "\nint %s_run(void *arena", nm);
  for (int i = 0; i < g->n_inputs; i++)
    buf_printf(h, ", const %s *%s", cg_ctype(g->inputs[i]), cg->cname[g->inputs[i]->id]);
  for (int i = 0; i < g->n_outputs; i++)
    buf_printf(h, ", %s *%s%s%s%s", cg_ctype(g->outputs[i]), cg->out_param[i],
               value_dyn_mask(g->outputs[i]) ? ", int64_t *" : "",
               value_dyn_mask(g->outputs[i]) ? cg->out_param[i] : "", value_dyn_mask(g->outputs[i]) ? "_dims" : "");
  buf_puts(h, ");\n");
  if (dx_user_syms(g) > 0) /* -D NAME=LO..HI (docs/dynamic-shapes.md) */
    dyn_write_header(cg, up, h);
  buf_printf(h, "\n/* Same, with inputs and outputs as arrays in graph order (for generic callers). */\n"
                "int %s_run_v(void *arena, const void *const *inputs, void *const *outputs);\n\n", nm);
  info_write_header(cg, h);
  guard_write_header(cg->plan, nm, h);
  numerics_write_header(cg->o, h);
  prof_write_header(cg, up, h);
  if (cg->o->threads > 1) /* --threads (docs/abi.md) */
    buf_printf(h, "/* Built with --threads %d: %s_run starts a pool of %d threads on its first\n"
                  " * call (pthreads; firmware builds stay sequential). %s_free_threads stops\n"
                  " * and joins them (call it before unloading the library); a later run\n"
                  " * starts them again. */\nvoid %s_free_threads(void);\n\n",
               cg->o->threads, nm, cg->o->threads - 1, nm, nm);
  buf_puts(h, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

static void write_run(CGen *cg, Buf *c, const Buf *run, int n_calls) {
  const Graph *g = cg->g;
  const char *nm = cg->o->name;
  bool ranges = dx_user_syms(g) > 0;
  if (ranges)
    buf_printf(c, "ONNXC_API int %s_run_dims(void *arena, const int64_t *dims_in", nm);
  else
    buf_printf(c, prof_on(cg) ? "static int %s_run_p(void *arena" : "ONNXC_API int %s_run(void *arena", nm);
  cg_run_params(cg, true, c);
  prof_run_params(cg, c);
  buf_puts(c, ") {\n");
  if (ranges)
    dyn_write_dims_check(g, c);
  else if (g->n_syms > 0) /* data-dependent extents only */
    dyn_write_data_dims(g, c);
  prof_run_begin(cg, c);
  if (cg->plan->arena_bytes > 0)
    buf_puts(c, "  unsigned char *a = (unsigned char *)arena;\n");
  if (n_calls > 0)
    buf_puts(c, "  int st;\n  (void)st; /* unused when no node can fail */\n");
  buf_printf(c, "  if (%s", cg->plan->arena_bytes > 0 ? "!arena" : "0");
  for (int i = 0; i < g->n_inputs; i++)
    if (cg_numel(g->inputs[i]) > 0)
      buf_printf(c, " || !%s", cg->cname[g->inputs[i]->id]);
  for (int i = 0; i < g->n_outputs; i++)
    if (cg_numel(g->outputs[i]) > 0)
      buf_printf(c, " || !%s", cg->out_param[i]);
  for (int i = 0; i < g->n_outputs; i++)
    if (value_dyn_mask(g->outputs[i]))
      buf_printf(c, " || !%s_dims", cg->out_param[i]);
  buf_puts(c, ")\n    return ONNXC_ERR_NULL_ARG;\n");
  if (cg->plan->arena_bytes == 0)
    buf_puts(c, "  (void)arena;\n");
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i]->n_uses == 0 && !g->inputs[i]->is_output)
      buf_printf(c, "  (void)%s; /* not read by the model */\n", cg->cname[g->inputs[i]->id]);
  for (int i = 0; i < g->n_outputs; i++)
    if (cg_numel(g->outputs[i]) == 0)
      buf_printf(c, "  (void)%s; /* has no elements */\n", cg->out_param[i]);
  bool pool = cg->o->threads > 1 && cg->n_parallel > 0;
  if (pool) /* the workers poll between this run's tasks (an error return leaves it
               set: they then poll for ONNXC_SPIN_RUN_US at most) */
    buf_puts(c, "  onnxc_run_mark(1);\n");
  buf_puts(c, run->s ? run->s : "");
  if (g->n_syms > 0) /* outputs whose extents follow a data-dependent one */
    dyn_write_output_dims(cg, c);
  if (pool)
    buf_puts(c, "  onnxc_run_mark(0);\n");
  for (int i = 0; i < g->n_outputs; i++) { /* a dynamic output listed twice: its extent too */
    int slot = -1;
    if (value_dyn_mask(g->outputs[i]) && first_output_slot(g, g->outputs[i], &slot) && slot != i)
      for (int k = 0; k < g->outputs[i]->shape.rank; k++)
        buf_printf(c, "  %s_dims[%d] = %s_dims[%d];\n", cg->out_param[i], k, cg->out_param[slot], k);
  }
  buf_puts(c, "  return ONNXC_OK;\n}\n\n");
  if (ranges) { /* NAME_run: every dim at its upper bound; NAME_arena_bytes */
    buf_printf(c, "ONNXC_API int %s_run(void *arena", nm);
    cg_run_params(cg, true, c);
    buf_printf(c, ") {\n  static const int64_t hi[%d] = {", dx_user_syms(g));
    for (int k = 0; k < dx_user_syms(g); k++)
      buf_printf(c, "%s%lld", k ? ", " : "", (long long)(g->syms[k].hi * (g->syms[k].step > 1 ? g->syms[k].step : 1)));
    buf_printf(c, "};\n  return %s_run_dims(arena, hi", nm);
    cg_run_params(cg, false, c);
    buf_puts(c, ");\n}\n\n");
    dyn_write_arena_fn(g, cg->plan, nm, c);
  }
  prof_write_entries(cg, c);
  buf_printf(c, "ONNXC_API int %s_run_v(void *arena, const void *const *inputs, void *const *outputs) {\n", nm);
  char call[300];
  snprintf(call, sizeof call, "%s_run(arena", nm);
  cg_run_v_body(c, g, call, "");
  if (dx_user_syms(g) > 0) {
    buf_printf(c, "\nONNXC_API int %s_run_dims_v(void *arena, const int64_t *dims, const void *const *inputs,\n"
                  "                           void *const *outputs) {\n", nm);
    snprintf(call, sizeof call, "%s_run_dims(arena, dims", nm);
    cg_run_v_body(c, g, call, "");
  }
}

static bool write_weights(CGen *cg, const char *dir) {
  const char *nm = cg->o->name;
  char path[4096], bpath[4096];
  Buf h;
  buf_init(&h);
  buf_printf(&h, "/* %s_weights.h - generated by onnxc %s. Do not edit. */\n#ifndef %s_WEIGHTS_H\n"
                 "#define %s_WEIGHTS_H\n\n#include \"onnxc_rt.h\"\n\n", nm, ONNXC_VERSION, nm, nm);
  for (int w = 0; w < cg->n_weights; w++) {
    const Value *v = cg->weights[w];
    int64_t elems = gemm_weight_numel(cg->plan, v, cg->o->threads);
    elems = elems ? elems : storage_of(v);
    buf_printf(&h, "extern const %s %s[%lld];\n", cg_ctype(v), cg->weight_sym[w],
               (long long)(elems ? elems : 1));
  }
  buf_puts(&h, "\n#endif\n");
  snprintf(path, sizeof path, "%s_weights.h", nm);
  bool ok = cg_write_file(dir, path, h.s, h.len, cg->d);
  buf_free(&h);
  if (!ok)
    return false;
  if (cg->o->weights == WEIGHTS_C) {
    snprintf(path, sizeof path, "%s/%s_weights.c", dir, nm);
    FILE *f = fopen(path, "wb");
    if (!f)
      return diag_error(cg->d, NULL, "cannot write %s: %s", path, strerror(errno));
    ok = weights_write_c(cg, f, cg->d);
    if (fclose(f) != 0 && ok)
      ok = diag_error(cg->d, NULL, "cannot write %s: %s", path, strerror(errno));
    return ok;
  }
  snprintf(bpath, sizeof bpath, "%s/%s_weights.bin", dir, nm);
  snprintf(path, sizeof path, "%s/%s_weights.S", dir, nm);
  FILE *bin = fopen(bpath, "wb"), *as = fopen(path, "wb");
  if (!bin || !as) {
    if (bin)
      fclose(bin);
    if (as)
      fclose(as);
    return diag_error(cg->d, NULL, "cannot write weights into %s: %s", dir, strerror(errno));
  }
  char *abs = realpath(dir, NULL);
  char apath[4096];
  snprintf(apath, sizeof apath, "%s/%s_weights.bin", abs ? abs : dir, nm);
  free(abs);
  ok = weights_write_blob(cg, bin, as, apath, cg->d);
  if (fclose(bin) != 0 || fclose(as) != 0)
    ok = ok && diag_error(cg->d, NULL, "cannot write weights into %s: %s", dir, strerror(errno));
  return ok;
}

/* Some node of g is an `op`. */

/* String constants a node reads become `static const onnxc_str` tables. */
static void string_consts(CGen *cg, Arena *a, Buf *out) {
  const Graph *g = cg->g;
  for (int i = 0, k = 0; i < g->n_values; i++) {
    const Value *v = g->values[i];
    if (v->kind != VK_CONST || v->dt != DT_STRING || !(v->n_uses > 0 || v->is_output))
      continue;
    const char *sym = arena_printf(a, "%s_s%d", cg->o->name, k++);
    cg->cname[v->id] = sym;
    buf_puts(out, "/* a string constant */\n");
    string_table(out, "", sym, (const char *const *)v->konst->data, v->konst->numel);
  }
  if (out->len)
    buf_putc(out, '\n');
}

/* The generated text calls one of onnxc_rt.h's float16 conversions. */
static bool half_used(const char *text) {
  return text && (strstr(text, "onnxc_f16_to_f32") || strstr(text, "onnxc_f32_to_f16"));
}

bool codegen_c(const Graph *g, const Plan *plan, const CodegenOpts *o, const char *dir, Diag *d) {
  if (g->n_syms > 0 && (o->profile || o->check_numerics))
    return diag_error(d, NULL, "--profile and --check-numerics do not take -D ranges yet");
  if (g->n_syms > 0 && !dyn_check(g, d))
    return false;
  if (!cg_is_ident(o->name))
    return diag_error(d, NULL, "--name '%s' is not a valid C identifier", o->name);
  for (int i = 0; i < g->n_inputs; i++)
    if (!dtype_ctype(g->inputs[i]->dt)[0] && g->inputs[i]->dt != DT_STRING)
      return diag_error(d, NULL, "input '%s' has element type %s, which the C target does not support",
                        g->inputs[i]->name, dtype_name(g->inputs[i]->dt));
  for (int i = 0; i < g->n_outputs; i++)
    if (!dtype_ctype(g->outputs[i]->dt)[0] && g->outputs[i]->dt != DT_STRING)
      return diag_error(d, NULL, "output '%s' has element type %s, which the C target does not support",
                        g->outputs[i]->name, dtype_name(g->outputs[i]->dt));
  Arena *a = arena_new();
  CGen cg = {g, plan, o, d, NULL, NULL, NULL, NULL, 0, 0};
  bool ok = assign_names(&cg, a);
  Buf fns, run, c, h, strs;
  buf_init(&strs);
  if (ok)
    string_consts(&cg, a, &strs);
  buf_init(&fns);
  buf_init(&run);
  buf_init(&c);
  buf_init(&h);
  int step = 0, calls = 0;

  /* -D ranges: the guard's table of buffers is built per run, its sizes from
   * the dims (dyn_write_guard_regions), so the red zone after a buffer starts
   * where this run's extent of it ends */
  const char *gtab = g->n_syms > 0 ? "rt" : o->name;
  if (g->n_syms > 0 && guard_on(plan))
    dyn_write_guard_regions(g, plan, &run);
  guard_run_begin(plan, &run);
  for (const Node *n = g->first; ok && n; n = n->next) {
    bool kernel = !(plan->elided && plan->elided[n->id]);
    calls += kernel;
    guard_step_begin(plan, gtab, step, &run);
    if (kernel)
      prof_step(&cg, calls - 1, 0, &run);
    ok = emit_node(&cg, a, n, step, calls - 1, &fns, &run);
    if (kernel)
      prof_step(&cg, calls - 1, 1, &run);
    if (ok && o->check_numerics && !(plan->elided && plan->elided[n->id])) {
      const char **out = arena_alloc(a, sizeof *out * (size_t)(n->n_out > 0 ? n->n_out : 1));
      for (int i = 0; i < n->n_out; i++)
        out[i] = ec_has_output(n, i) ? arg_expr(&cg, a, n->out[i], true) : NULL;
      numerics_step_end(o, n, step, out, &run);
    }
    guard_step_end(plan, gtab, step++, &run);
    if (o->progress)
      o->progress(o->progress_user, step, g->n_nodes);
  }
  if (ok) {
    emit_output_copies(&cg, a, &run);
    buf_printf(&c, "/* %s.c - generated by onnxc %s from %s. Do not edit. */\n", o->name, ONNXC_VERSION,
               o->model_path ? o->model_path : "a model");
    /* float16 conversions: onnxc_rt.h takes F16C's instructions only when
     * asked, as <immintrin.h> costs half a second of every compile (0.45 of
     * 0.5 s for a one-op model at -march=native); the portable form gives the
     * same bits (onnxc_rt.h). */
    if (half_used(fns.s) || half_used(run.s))
      buf_puts(&c, "#define ONNXC_RT_HALF 1\n");
    buf_printf(&c, "#include \"%s.h\"\n#include \"%s_weights.h\"\n#include \"onnxc_rt.h\"\n\n", o->name,
               o->name);
    if (cg_op_used(g, OP_ImageDecoder))
      buf_puts(&c, "#include \"onnxc_image.h\"\n\n");
    if (o->threads > 1)
      threads_write_pool(&c, o->name, o->threads, cg.n_parallel > 0);
    if (gemm_used(g, plan, o->threads))
      gemm_write_prelude(&c);
    if (qint_used(g))
      qint_write_prelude(&c);
    if (blocked_conv_used(g))
      blocked_write_prelude(&c, g, o->vec_bits);
    if (gemm_lp_used(g, plan, o->threads))
      gemm_write_prelude_lp(&c, gemm_lp_used(g, plan, o->threads));
    if (string_used(g)) {
      string_write_prelude(&c);
      buf_puts(&c, strs.s ? strs.s : "");
    }
    guard_write_tables(g, plan, o->name, &c);
    if (guard_on(plan) || o->check_numerics)
      cg_write_step_nodes(g, o->name, &c);
    prof_write_table(&cg, &c);
    buf_puts(&c, fns.s ? fns.s : "");
    write_run(&cg, &c, &run, calls);
    info_write(&cg, &c);
    guard_write_report(plan, o->name, step, &c);
    numerics_write_status_fn(g, o, &c);
    write_header(&cg, &h);
    char file[512];
    snprintf(file, sizeof file, "%s.h", o->name);
    ok = cg_write_file(dir, file, h.s, h.len, d);
    snprintf(file, sizeof file, "%s.c", o->name);
    ok = ok && cg_write_file(dir, file, c.s, c.len, d);
    ok = ok && cg_write_file(dir, "onnxc_rt.h", onnxc_rt_h_text, strlen(onnxc_rt_h_text), d);
    if (cg_op_used(g, OP_ImageDecoder))
      ok = ok && cg_write_file(dir, "onnxc_image.h", onnxc_image_h_text, strlen(onnxc_image_h_text), d);
    ok = ok && write_weights(&cg, dir);
  }
  buf_free(&fns);
  buf_free(&run);
  buf_free(&c);
  buf_free(&h);
  buf_free(&strs);
  arena_free(a);
  return ok;
}
