/* emit_numerics.c - the C target's --check-numerics (docs/numerics.md).
 *
 * After each node, NAME_run tests the node's floating-point outputs for NaN
 * (and, unless --check-numerics=nan, infinities) with onnxc_rt.h's
 * onnxc_nonfinite_* and returns ONNXC_NONFINITE_AT(step) at the first hit:
 * the status is ONNXC_ERR_NONFINITE in its low byte and names the step, so
 * the check needs no writable state and runs stay reentrant.
 * NAME_status_node maps such a status to the node's ONNX name and op through
 * the table of step names, which guard mode reads too. Without the option
 * this file writes nothing, so the normal output is unchanged.
 */
#include "codegen_internal.h"

void cg_write_step_nodes(const Graph *g, const char *nm, Buf *c) {
  buf_printf(c, "/* The node at each schedule step: its ONNX name, its op, and its op with\n"
                " * the ONNX nodes the kernel computes when it fused several. */\n"
                "static const char *const %s_step_nodes[%d][3] = {\n", nm, g->n_nodes > 0 ? g->n_nodes : 1);
  for (const Node *x = g->first; x; x = x->next) {
    buf_puts(c, "  {");
    cg_c_string(c, x->name);
    buf_puts(c, ", ");
    cg_c_string(c, x->op_type);
    buf_puts(c, ", ");
    const Attr *f = ir_attr(x, "onnxc.fused");
    Buf op;
    buf_init(&op);
    buf_puts(&op, x->op_type);
    for (int i = 0; f && f->kind == AT_STRINGS && i < f->n; i++)
      buf_printf(&op, "%s%s", i ? ", " : " computing ", f->u.ss[i]);
    cg_c_string(c, op.s);
    buf_free(&op);
    buf_puts(c, "},\n");
  }
  if (!g->first)
    buf_puts(c, "  {\"\", \"\", \"\"},\n");
  buf_puts(c, "};\n\n");
}

/* The checker of a value's element type; NULL for types that hold no NaN. */
/* The call that tests a value of type t, up to its pointer argument, and
 * what follows the element count (float16/bfloat16: the exponent mask); NULL
 * for types that hold no NaN. */
static const char *checker(DType t, const char **after) {
  *after = "";
  switch (t) {
  case DT_F32:
    return "onnxc_nonfinite_f32(";
  case DT_F64:
    return "onnxc_nonfinite_f64(";
  case DT_F16:
  case DT_BF16:
    *after = t == DT_F16 ? ", 0x7c00u" : ", 0x7f80u";
    return "onnxc_nonfinite_u16((const uint16_t *)";
  default:
    return NULL;
  }
}

void numerics_step_end(const CodegenOpts *o, const Node *n, int step, const char *const *out_expr,
                       Buf *run) {
  if (!o->check_numerics)
    return;
  int nan_only = o->check_numerics == 2;
  for (int i = 0; i < n->n_out; i++) {
    const Value *v = n->out[i];
    const char *after = "";
    const char *fn = out_expr[i] ? checker(v->dt, &after) : NULL;
    int64_t numel = 0;
    /* a data-dependent output's capacity holds unwritten elements: not tested */
    if (!fn || v->dyn_dims || !shape_numel(&v->shape, &numel) || numel == 0)
      continue;
    buf_printf(run, "  if (%s%s, %lld%s, %d))\n    return ONNXC_NONFINITE_AT(%d);\n", fn, out_expr[i],
               (long long)numel, after, nan_only, step);
  }
}

void numerics_write_status_fn(const Graph *g, const CodegenOpts *o, Buf *c) {
  if (!o->check_numerics)
    return;
  const char *nm = o->name;
  buf_printf(c, "\nONNXC_API const char *%s_status_node(int status, const char **op) {\n"
                "  int step = (status >> 8) - 1;\n"
                "  if (ONNXC_STATUS_CODE(status) != ONNXC_ERR_NONFINITE || step < 0 || step >= %d)\n"
                "    return 0;\n"
                "  if (op)\n    *op = %s_step_nodes[step][2];\n"
                "  return %s_step_nodes[step][0];\n}\n",
             nm, g->n_nodes, nm, nm);
}

void numerics_write_header(const CodegenOpts *o, Buf *h) {
  if (!o->check_numerics)
    return;
  const char *nm = o->name;
  buf_printf(h, "/* Built with --check-numerics%s (docs/numerics.md): after each node its\n"
                " * floating-point outputs are tested, and %s_run returns a status whose\n"
                " * low byte (ONNXC_STATUS_CODE) is ONNXC_ERR_NONFINITE (11) at the first %s.\n"
                " * %s_status_node gives that node's ONNX name for such a status (and in\n"
                " * *op, when op is not NULL, its op and the ONNX nodes a fused kernel\n"
                " * computes), NULL for any other. */\n"
                "const char *%s_status_node(int status, const char **op);\n\n",
             o->check_numerics == 2 ? "=nan" : "", nm,
             o->check_numerics == 2 ? "NaN" : "NaN or infinity", nm, nm);
}
