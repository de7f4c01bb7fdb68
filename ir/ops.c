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

#define DOMAIN_FLAGS (OPF_DOMAIN_ML | OPF_DOMAIN_TRAINING | OPF_DOMAIN_PREVIEW | OPF_INTERNAL | OPF_DOMAIN_MS)

/* The OPF_DOMAIN_* flag of an ONNX domain name (0: default); false when the
 * table has no row of that domain. */
static bool domain_flag(const char *domain, unsigned *flag) {
  if (!domain || !*domain || strcmp(domain, "ai.onnx") == 0)
    *flag = 0;
  else if (strcmp(domain, "ai.onnx.ml") == 0)
    *flag = OPF_DOMAIN_ML;
  else if (strcmp(domain, "ai.onnx.preview.training") == 0)
    *flag = OPF_DOMAIN_TRAINING;
  else if (strcmp(domain, "ai.onnx.preview") == 0)
    *flag = OPF_DOMAIN_PREVIEW;
  else if (strcmp(domain, "onnxc") == 0)
    *flag = OPF_INTERNAL;
  else if (strcmp(domain, "com.microsoft") == 0)
    *flag = OPF_DOMAIN_MS;
  else
    return false;
  return true;
}

OpKind ir_op_lookup_in(const char *domain, const char *onnx_name) {
  unsigned want;
  if (!domain_flag(domain, &want))
    return OP_Unknown_;
  /* Linear over ~200 rows is fine: called once per node at load time. Names
   * are unique across domains (they are C identifiers of one enum). */
  for (int i = 1; i < OP_COUNT_; i++)
    if (strcmp(ir_ops[i].name, onnx_name) == 0)
      return (ir_ops[i].flags & DOMAIN_FLAGS) == want ? (OpKind)i : OP_Unknown_;
  return OP_Unknown_;
}

OpKind ir_op_lookup(const char *onnx_name) { return ir_op_lookup_in("", onnx_name); }

const char *ir_op_domain(OpKind op) {
  unsigned f = ir_ops[op].flags & DOMAIN_FLAGS;
  return f == OPF_DOMAIN_ML         ? "ai.onnx.ml"
         : f == OPF_DOMAIN_TRAINING ? "ai.onnx.preview.training"
         : f == OPF_DOMAIN_PREVIEW  ? "ai.onnx.preview"
         : f == OPF_INTERNAL        ? "onnxc"
         : f == OPF_DOMAIN_MS       ? "com.microsoft"
                                    : "";
}
