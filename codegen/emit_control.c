/* emit_control.c - C emission hooks of the control-flow and sequence rows.
 *
 * If, Loop, Scan, the Sequence* ops and the Optional* ops never reach code
 * generation: passes/lower_control.c turns them into plain dataflow (or
 * reports why it cannot). These hooks exist because every table row needs
 * one; reaching them means a pipeline ran without that lowering.
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
