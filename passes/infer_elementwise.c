/* infer_elementwise.c - the one inference hook of every EW row in ops.def.
 *
 * Result shape: numpy broadcast of all inputs (symbolic dims carried along).
 * Result type: that of the data inputs, which must agree, or bool for
 * OPF_BOOLOUT rows. The flags say which types a row takes (OPF_FLOATONLY);
 * the few rows whose types the flags cannot describe are listed in `rules`:
 * bool-only logic, integer-only bitwise ops (BitShift: unsigned), Where (bool
 * condition, result of the type of inputs 1 and 2) and Pow (exponent of any
 * numeric type). Mod and BitShift also check their attributes here.
 */
#include "passes.h"

#include <string.h>

typedef enum TypeRule {
  TR_NUMERIC = 0,   /* integers and the floats the C target computes in */
  TR_FLOAT,         /* f16 bf16 f32 f64 */
  TR_BOOL,
  TR_INT,
  TR_UINT,
  TR_ANY,           /* numeric or bool */
  TR_EQUAL,         /* numeric, bool or string (Equal on strings: codegen/emit_string.c) */
} TypeRule;

static const TypeRule rules[OP_COUNT_] = {
    [OP_Not] = TR_BOOL,        [OP_And] = TR_BOOL,        [OP_Or] = TR_BOOL,
    [OP_Xor] = TR_BOOL,        [OP_BitwiseNot] = TR_INT,  [OP_BitwiseAnd] = TR_INT,
    [OP_BitwiseOr] = TR_INT,   [OP_BitwiseXor] = TR_INT,  [OP_Equal] = TR_EQUAL,
    [OP_Where] = TR_ANY,       [OP_BitShift] = TR_UINT,
};

static bool computable_float(DType t) {
  return t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64;
}

static bool type_ok(TypeRule r, DType t) {
  switch (r) {
  case TR_FLOAT: return computable_float(t);
  case TR_BOOL: return t == DT_BOOL;
  case TR_INT: return dtype_is_int(t) && dtype_bits(t) >= 8;
  case TR_UINT: return dtype_is_int(t) && dtype_bits(t) >= 8 && !dtype_is_signed(t);
  case TR_ANY: return t == DT_BOOL || computable_float(t) || (dtype_is_int(t) && dtype_bits(t) >= 8);
  case TR_EQUAL: return t == DT_STRING || type_ok(TR_ANY, t);
  default: return computable_float(t) || (dtype_is_int(t) && dtype_bits(t) >= 8);
  }
}

static const char *rule_name(TypeRule r) {
  switch (r) {
  case TR_FLOAT: return "a floating-point type (f16, bf16, f32, f64)";
  case TR_BOOL: return "bool";
  case TR_INT: return "an integer type";
  case TR_UINT: return "an unsigned integer type";
  case TR_ANY: return "a numeric type or bool";
  case TR_EQUAL: return "a numeric type, bool or string";
  default: return "a numeric type";
  }
}

/* Checks the input types; *out receives the result type. */
static bool infer_types(Node *n, Diag *d, DType *out) {
  const OpInfo *oi = &ir_ops[n->op];
  TypeRule r = (oi->flags & OPF_FLOATONLY) ? TR_FLOAT : rules[n->op];
  int first = 0;                  /* first data input: they must agree from here */
  int last = n->n_in - 1;
  if (n->op == OP_Where) {
    if (n->in[0]->dt != DT_BOOL)
      return diag_error(d, n, "input 0 (condition) has type %s, expected bool", dtype_name(n->in[0]->dt));
    first = 1;
  } else if (n->op == OP_Pow) {
    DType e = n->in[1]->dt;
    if (!type_ok(TR_NUMERIC, e))
      return diag_error(d, n, "input 1 (exponent) has type %s, expected %s", dtype_name(e),
                        rule_name(TR_NUMERIC));
    last = 0;
  }
  DType dt = n->in[first]->dt;
  if (!type_ok(r, dt))
    return diag_error(d, n, "input %d has type %s, expected %s", first, dtype_name(dt), rule_name(r));
  for (int i = first + 1; i <= last; i++)
    if (n->in[i]->dt != dt)
      return diag_error(d, n, "input %d has type %s but input %d has type %s; they must match", i,
                        dtype_name(n->in[i]->dt), first, dtype_name(dt));
  if (n->op == OP_Mod && dtype_is_float(dt) && ir_attr_int(n, "fmod", 0) == 0)
    return diag_error(d, n, "fmod must be 1 for floating-point inputs");
  if (n->op == OP_BitShift) {
    const char *dir = ir_attr_str(n, "direction", "");
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
      return diag_error(d, n, "attribute 'direction' must be \"LEFT\" or \"RIGHT\"");
  }
  *out = (oi->flags & OPF_BOOLOUT) ? DT_BOOL : dt;
  return true;
}

bool infer_elementwise(Node *n, Diag *d) {
  const OpInfo *oi = &ir_ops[n->op];
  IR_ASSERT(oi->flags & OPF_EW);
  if (n->op == OP_Clip && !canon_clip(n, d))
    return false;
  if (n->n_in < oi->min_in || (oi->max_in >= 0 && n->n_in > oi->max_in))
    return diag_error(d, n, "has %d inputs, expected %d to %d", n->n_in, oi->min_in,
                      oi->max_in < 0 ? n->n_in : oi->max_in);
  for (int i = 0; i < n->n_in; i++)
    if (!ir_has_input(n, i))
      return diag_error(d, n, "input %d is missing", i);
  DType dt = DT_UNDEF;
  if (!infer_types(n, d, &dt))
    return false;
  Shape s = n->in[0]->shape;
  for (int i = 1; i < n->n_in; i++) {
    Shape t;
    if (!shape_broadcast(&s, &n->in[i]->shape, &t)) {
      char a[128], b[128];
      return diag_error(d, n, "input %d of shape %s does not broadcast with %s (inputs 0..%d)", i,
                        shape_str(&n->in[i]->shape, a, sizeof a), shape_str(&s, b, sizeof b), i - 1);
    }
    s = t;
  }
  infer_set(n, 0, dt, &s);
  return true;
}
