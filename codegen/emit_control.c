/* emit_control.c - C emission hooks of the control-flow and sequence rows.
 *
 * If, Loop, Scan, the Sequence* ops and the Optional* ops never reach code
 * generation: passes/lower_control.c turns them into plain dataflow (or
 * reports why it cannot). These hooks exist because every table row needs
 * one; reaching them means a pipeline ran without that lowering.
 * BranchGuard, which that lowering makes, is a real kernel: the check of the
 * condition, then a copy (none when the plan put Y over X).
 */
#include "codegen.h"

static bool not_lowered(EmitC *e, const Node *n) {
  return diag_error(e->d, n, "control flow and sequences must be lowered before code generation");
}

#define CF_HOOK(name) \
  bool emitc_##name(EmitC *e, const Node *n) { return not_lowered(e, n); }
CF_HOOK(If)
CF_HOOK(Loop)
CF_HOOK(Scan)
CF_HOOK(SequenceConstruct)
CF_HOOK(SequenceEmpty)
CF_HOOK(SequenceAt)
CF_HOOK(SequenceInsert)
CF_HOOK(SequenceErase)
CF_HOOK(SequenceLength)
CF_HOOK(SplitToSequence)
CF_HOOK(ConcatFromSequence)
CF_HOOK(SequenceMap)
CF_HOOK(Optional)
CF_HOOK(OptionalHasElement)
CF_HOOK(OptionalGetElement)

/* Y0 = X0, unless the run took the If branch that could not be compiled. */
bool emitc_BranchGuard(EmitC *e, const Node *n) {
  int64_t count = ec_numel(n->out[0]), bytes = 0;
  if (dtype_bits(n->out[0]->dt) < 8) {
    IR_ASSERT(dtype_bytes(n->out[0]->dt, count, &bytes));
    count = bytes;
  }
  ec_line(e, "if ((X1[0] != 0) == %d) /* the If branch that cannot run with the compiled shapes */",
          ir_attr_int(n, "fail_if", 1) != 0);
  ec_line(e, "  return ONNXC_ERR_BRANCH;");
  if (count == 0) {
    ec_line(e, "(void)X0;");
    ec_line(e, "(void)Y0;");
    return true;
  }
  ec_line(e, "if ((const void *)Y0 != (const void *)X0)");
  ec_line(e, "  for (ptrdiff_t i = 0; i < %lld; i++)", (long long)count);
  ec_line(e, "    Y0[i] = X0[i];");
  return true;
}
