/* emit_gradient.c - Gradient never reaches code generation: the
 * lower-gradient pass (passes/lower_gradient.c) replaces it by the nodes of
 * its derivative. The hook only reports a pipeline that skipped that pass. */
#include "codegen.h"

bool emitc_Gradient(EmitC *e, const Node *n) {
  diag_error(e->d, n, "internal error: Gradient reached code generation (lower-gradient did not run)");
  return false;
}
