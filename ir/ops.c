/* ops.c - the operator table instantiated from ops.def. */
#include "ir.h"

#include <string.h>

const OpInfo ir_ops[OP_COUNT_] = {
    [OP_Unknown_] = {"<unknown>", 0, -1, 0, -1, 0, NULL},
#define OP(nm, mi, ma, mo, xo, fl) [OP_##nm] = {#nm, mi, ma, mo, xo, fl, NULL},
#define EW(nm, mi, ma, fl, ex) [OP_##nm] = {#nm, mi, ma, 1, 1, (fl) | OPF_EW, ex},
#include "ops.def"
#undef OP
#undef EW
};

OpKind ir_op_lookup(const char *onnx_name) {
  /* Linear over ~200 rows is fine: called once per node at load time. */
  for (int i = 1; i < OP_COUNT_; i++)
    if (strcmp(ir_ops[i].name, onnx_name) == 0)
      return (OpKind)i;
  return OP_Unknown_;
}
