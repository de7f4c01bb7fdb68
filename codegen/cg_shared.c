/* cg_shared.c - what the C and CUDA emitters (c/emit_c.c, cuda/emit_cuda.c) both
 * need: the table of kernel hooks, names and comments, the files they
 * write, the forwarding of NAME_run_v's pointer arrays. */
#include "codegen_internal.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

typedef bool (*EmitFn)(EmitC *, const Node *);

static const EmitFn emit_tab[OP_COUNT_] = {
#define OP(name, ...) [OP_##name] = emitc_##name,
#define EW(name, ...) [OP_##name] = emitc_elementwise,
#include "ops.def"
#undef OP
#undef EW
};

bool cg_emit_body(EmitC *e, const Node *n) {
  if (n->op == OP_Equal && n->in[0]->dt == DT_STRING)
    return emitc_string_equal(e, n);
  bool done = false, ok = blocked_dispatch(e, n, &done);
  if (done || !ok)
    return ok;
  return emit_tab[n->op](e, n);
}

bool cg_is_ident(const char *s) {
  if (!*s || isdigit((unsigned char)*s))
    return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_')
      return false;
  return true;
}

const char *cg_c_ident(Arena *a, const char *prefix, const char *name, const char **used, int n_used) {
  Buf b;
  buf_init(&b);
  buf_puts(&b, prefix);
  for (const char *s = name; *s; s++)
    buf_putc(&b, isalnum((unsigned char)*s) ? *s : '_');
  const char *base = arena_strdup(a, b.s);
  buf_free(&b);
  const char *cand = base;
  for (int k = 1;; k++) {
    bool clash = false;
    for (int i = 0; i < n_used && !clash; i++)
      clash = strcmp(used[i], cand) == 0;
    if (!clash)
      return cand;
    cand = arena_printf(a, "%s_%d", base, k);
  }
}

void cg_param_names(CGen *cg, Arena *a) {
  const Graph *g = cg->g;
  cg->cname = arena_alloc(a, (size_t)(g->n_values + 1) * sizeof(char *));
  const char **used = arena_alloc(a, (size_t)(g->n_inputs + g->n_outputs + 1) * sizeof(char *));
  int n_used = 0;
  for (int i = 0; i < g->n_inputs; i++) {
    const char *id = cg_c_ident(a, "in_", g->inputs[i]->name, used, n_used);
    used[n_used++] = id;
    cg->cname[g->inputs[i]->id] = id;
  }
  /* Output parameters; a value listed twice keeps its first parameter. */
  cg->out_param = arena_alloc(a, (size_t)(g->n_outputs + 1) * sizeof(char *));
  for (int i = 0; i < g->n_outputs; i++) {
    const char *id = cg_c_ident(a, "out_", g->outputs[i]->name, used, n_used);
    used[n_used++] = id;
    cg->out_param[i] = id;
    const Value *v = g->outputs[i];
    int first = 0;
    while (g->outputs[first] != v)
      first++;
    if (v->kind == VK_NODE && first == i)
      cg->cname[v->id] = id;
  }
}

int64_t cg_numel(const Value *v) {
  int64_t n = 0;
  /* bounded dims (-D NAME=LO..HI): the count at the upper bounds, a capacity */
  IR_ASSERT(shape_numel(&v->shape, &n) || shape_numel_max(v->g, &v->shape, &n));
  return n;
}

void cg_comment_safe(Buf *b, const char *s) {
  /* Node names land inside C comments: keep them from closing the comment. */
  for (; *s; s++) {
    if (s[0] == '*' && s[1] == '/') {
      buf_puts(b, "* /");
      s++;
    } else if (*s == '\n' || *s == '\r') {
      buf_putc(b, ' ');
    } else {
      buf_putc(b, *s);
    }
  }
}

bool cg_op_used(const Graph *g, OpKind op) {
  for (const Node *n = g->first; n; n = n->next)
    if (n->op == op)
      return true;
  return false;
}

bool cg_write_file(const char *dir, const char *file, const char *text, size_t len, Diag *d) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "wb");
  if (!f)
    return diag_error(d, NULL, "cannot write %s: %s", path, strerror(errno));
  fwrite(text, 1, len, f);
  bool ok = !ferror(f);
  if (fclose(f) != 0)
    ok = false;
  if (!ok)
    return diag_error(d, NULL, "cannot write %s: %s", path, strerror(errno));
  return true;
}

void cg_c_string(Buf *b, const char *s) {
  buf_putc(b, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      buf_printf(b, "\\%c", *p);
    else if (*p == '?') /* no trigraphs */
      buf_puts(b, "\\?");
    else if (*p >= 0x20 && *p < 0x7f)
      buf_putc(b, (char)*p);
    else
      buf_printf(b, "\\%03o", *p);
  }
  buf_putc(b, '"');
}

const char *cg_ctype(const Value *v) { return v->dt == DT_STRING ? "onnxc_str" : dtype_ctype(v->dt); }

void cg_run_v_args(Buf *c, const Graph *g) {
  for (int i = 0; i < g->n_inputs; i++)
    buf_printf(c, ", (const %s *)inputs[%d]", cg_ctype(g->inputs[i]), i);
  for (int i = 0, k = g->n_outputs; i < g->n_outputs; i++) {
    buf_printf(c, ", (%s *)outputs[%d]", cg_ctype(g->outputs[i]), i);
    if (value_dyn_mask(g->outputs[i])) /* the extents follow the outputs, in output order */
      buf_printf(c, ", (int64_t *)outputs[%d]", k++);
  }
}

void cg_run_params(const CGen *cg, bool typed, Buf *c) {
  const Graph *g = cg->g;
  for (int i = 0; i < g->n_inputs; i++)
    if (typed)
      buf_printf(c, ", const %s *%s", cg_ctype(g->inputs[i]), cg->cname[g->inputs[i]->id]);
    else
      buf_printf(c, ", %s", cg->cname[g->inputs[i]->id]);
  for (int i = 0; i < g->n_outputs; i++) {
    if (typed)
      buf_printf(c, ", %s *%s", cg_ctype(g->outputs[i]), cg->out_param[i]);
    else
      buf_printf(c, ", %s", cg->out_param[i]);
    if (value_dyn_mask(g->outputs[i]))
      buf_printf(c, typed ? ", int64_t *%s_dims" : ", %s_dims", cg->out_param[i]);
  }
}

void cg_run_v_body(Buf *c, const Graph *g, const char *call, const char *tail) {
  if (!g->n_inputs)
    buf_puts(c, "  (void)inputs;\n");
  if (!g->n_outputs)
    buf_puts(c, "  (void)outputs;\n");
  buf_printf(c, "  return %s", call);
  cg_run_v_args(c, g);
  buf_printf(c, "%s);\n}\n", tail);
}
