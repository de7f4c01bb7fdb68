/* emit_info.c - the model description of the C target (docs/abi.md).
 *
 * NAME.c gets constant tables (each tensor's dims, name, element type,
 * buffer bytes and data-dependent dims) and
 *   ONNXC_API const onnxc_model_info *NAME_info(void);
 * returning them, so bindings such as python/onnxc can call NAME_run_v on a
 * library they know only by file. The structs are onnxc_rt.h's; the data is
 * const and needs no initialization, so firmware keeps it in flash. The
 * facts come from the same Values and Plan that NAME.h's macros print.
 */
#include "codegen_internal.h"

#include <string.h>

/* Longer literals draw -Woverlength-strings under -pedantic (C99 promises
 * 4095 characters): such a name becomes a char array. */
#define NAME_LIT_MAX 4000

/* Bytes of the buffer the caller passes for v, as a C constant expression. */
static void buf_bytes(Buf *c, const Value *v) {
  int64_t n = cg_numel(v), bytes = 0;
  if (v->dt == DT_STRING) {
    buf_printf(c, "(int64_t)(%lld * sizeof(const char *))", (long long)n);
    return;
  }
  IR_ASSERT(dtype_bytes(v->dt, n, &bytes));
  buf_printf(c, "%lld", (long long)bytes);
}

static const Graph *cg_root(const Graph *g) {
  while (g->parent)
    g = g->parent;
  return g;
}

/* The dims table and a long name's char array of tensor `tag` (e.g. "i0"). */
static void tensor_tables(Buf *c, const char *nm, const char *tag, const char *name, const Value *v) {
  if (v->shape.rank > 0) {
    buf_printf(c, "static const int64_t %s_info_%s_dims[%d] = {", nm, tag, v->shape.rank);
    for (int k = 0; k < v->shape.rank; k++) { /* run-time extents: their upper bounds */
      int64_t lo, hi = v->shape.d[k];
      if (hi < 0 && !(v->shape.x[k] && dx_bounds(cg_root(v->g), v->shape.x[k], &lo, &hi)))
        hi = -1;
      buf_printf(c, "%s%lld", k ? ", " : "", (long long)hi);
    }
    buf_puts(c, "};\n");
  }
  size_t len = strlen(name);
  if (len > NAME_LIT_MAX) {
    buf_printf(c, "static const char %s_info_%s_name[%zu] = {", nm, tag, len + 1);
    for (size_t k = 0; k < len; k++)
      buf_printf(c, "%s%d", k % 16 ? ", " : k ? ",\n  " : "", (int)(signed char)name[k]);
    buf_puts(c, ", 0};\n");
  }
}

static void tensor_entry(Buf *c, const char *nm, const char *tag, const char *name, const Value *v) {
  buf_puts(c, "  {");
  if (strlen(name) > NAME_LIT_MAX)
    buf_printf(c, "%s_info_%s_name", nm, tag);
  else
    cg_c_string(c, name);
  if (v->shape.rank > 0)
    buf_printf(c, ", %s_info_%s_dims, ", nm, tag);
  else
    buf_puts(c, ", (const int64_t *)0, ");
  buf_printf(c, "%lld, ", (long long)cg_numel(v));
  buf_bytes(c, v);
  if (v->dt == DT_STRING)
    buf_printf(c, ", %d, (int32_t)(8 * sizeof(const char *)), ONNXC_KIND_STRING", (int)v->dt);
  else
    buf_printf(c, ", %d, %d, ONNXC_KIND_TENSOR", (int)v->dt, dtype_bits(v->dt));
  buf_printf(c, ", %d, %uu},\n", v->shape.rank, (unsigned)value_dyn_mask(v));
}

/* `static const onnxc_tensor_info NAME_info_<side>[n]` for the inputs or
 * outputs; `names` are the outputs' ONNX names (Graph.output_names), NULL
 * for the inputs, which keep theirs. */
static void tensor_list(Buf *c, const char *nm, const char *side, Value *const *vs, const char *const *names,
                        int n) {
  char tag[32];
  for (int i = 0; i < n; i++) {
    snprintf(tag, sizeof tag, "%c%d", side[0], i);
    tensor_tables(c, nm, tag, names ? names[i] : vs[i]->name, vs[i]);
  }
  if (n == 0)
    return; /* no zero-length arrays in C: the pointer is NULL */
  buf_printf(c, "static const onnxc_tensor_info %s_info_%s[%d] = {\n", nm, side, n);
  for (int i = 0; i < n; i++) {
    snprintf(tag, sizeof tag, "%c%d", side[0], i);
    tensor_entry(c, nm, tag, names ? names[i] : vs[i]->name, vs[i]);
  }
  buf_puts(c, "};\n");
}

void info_write(const CGen *cg, Buf *c) {
  const Graph *g = cg->g;
  const char *nm = cg->o->name;
  int n_dyn = 0;
  for (int i = 0; i < g->n_outputs; i++)
    n_dyn += value_dyn_mask(g->outputs[i]) != 0;
  buf_puts(c, "/* The model description (docs/abi.md): names, element types, shapes. */\n");
  if (dx_user_syms(g) > 0) /* the ranges, which range each input extent is, the outputs' shapes */
    dyn_write_info_tables(cg, c);
  tensor_list(c, nm, "inputs", g->inputs, NULL, g->n_inputs);
  tensor_list(c, nm, "outputs", g->outputs, g->output_names, g->n_outputs);
  buf_printf(c, "static const onnxc_model_info %s_info_data = {\n  ONNXC_INFO_VERSION, %d, %d, %d, ", nm,
             g->n_inputs, g->n_outputs, cg->o->threads > 1 ? cg->o->threads : 1);
  cg_c_string(c, nm);
  buf_printf(c, ", \"%s\",\n  %lld, %d,\n", ONNXC_VERSION, (long long)cg->plan->arena_bytes, PLAN_ALIGN);
  if (g->n_inputs)
    buf_printf(c, "  %s_info_inputs, ", nm);
  else
    buf_puts(c, "  (const onnxc_tensor_info *)0, ");
  if (g->n_outputs)
    buf_printf(c, "%s_info_outputs, ", nm);
  else
    buf_puts(c, "(const onnxc_tensor_info *)0, ");
  int nd = dx_user_syms(g);
  if (nd > 0)
    buf_printf(c, "%d,\n  %d, %s_info_dims, %s_info_input_dims, %s_output_shapes, %s_run_dims_v, %s_arena_bytes\n};\n\n",
               n_dyn, nd, nm, nm, nm, nm, nm);
  else
    buf_printf(c, "%d,\n  0, (const onnxc_dim_info *)0, (const int32_t *)0, 0, 0, 0\n};\n\n", n_dyn);
  buf_printf(c, "ONNXC_API const onnxc_model_info *%s_info(void) { return &%s_info_data; }\n\n", nm, nm);
}

void info_write_header(const CGen *cg, Buf *h) {
  const char *nm = cg->o->name;
  buf_printf(h, "/* The model's description: its inputs' and outputs' names, ONNX element\n"
                " * types and shapes, the arena size (struct onnxc_model_info: include\n"
                " * onnxc_rt.h to read it). Constant data; never NULL. */\n"
                "struct onnxc_model_info;\nconst struct onnxc_model_info *%s_info(void);\n\n", nm);
}
