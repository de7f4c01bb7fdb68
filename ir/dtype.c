/* dtype.c - element type facts, all read from dtypes.def. */
#include "ir.h"

#include <string.h>

typedef struct DTypeInfo {
  bool valid;
  int bits;
  const char *ctype, *name;
} DTypeInfo;

static const DTypeInfo infos[DT_COUNT_] = {
#define DT(nm, id, bits, ctype, sname) [id] = {true, bits, ctype, sname},
#include "dtypes.def"
#undef DT
};

bool dtype_valid(int code) { return code > 0 && code < DT_COUNT_ && infos[code].valid; }
int dtype_bits(DType t) { return dtype_valid(t) ? infos[t].bits : 0; }
const char *dtype_name(DType t) { return (t >= 0 && t < DT_COUNT_ && infos[t].name) ? infos[t].name : "undef"; }
const char *dtype_ctype(DType t) { return dtype_valid(t) ? infos[t].ctype : ""; }

bool dtype_from_name(const char *s, DType *out) {
  for (int i = 1; i < DT_COUNT_; i++)
    if (infos[i].valid && strcmp(infos[i].name, s) == 0) {
      *out = (DType)i;
      return true;
    }
  return false;
}

bool dtype_is_float(DType t) {
  switch (t) {
  case DT_F16: case DT_BF16: case DT_F32: case DT_F64:
  case DT_F8E4M3FN: case DT_F8E4M3FNUZ: case DT_F8E5M2: case DT_F8E5M2FNUZ:
  case DT_F4E2M1: case DT_F8E8M0:
    return true;
  default:
    return false;
  }
}

bool dtype_is_int(DType t) {
  switch (t) {
  case DT_U8: case DT_I8: case DT_U16: case DT_I16: case DT_I32: case DT_I64:
  case DT_U32: case DT_U64: case DT_U4: case DT_I4: case DT_U2: case DT_I2:
    return true;
  default:
    return false;
  }
}

bool dtype_is_signed(DType t) {
  switch (t) {
  case DT_I8: case DT_I16: case DT_I32: case DT_I64: case DT_I4: case DT_I2:
    return true;
  default:
    return dtype_is_float(t);
  }
}

bool dtype_bytes(DType t, int64_t n, int64_t *out) {
  int bits = dtype_bits(t);
  if (t == DT_STRING)
    bits = 8 * (int)sizeof(char *);
  if (n < 0 || bits == 0)
    return false;
  if (n > (INT64_MAX - 7) / bits)
    return false;
  *out = (n * bits + 7) / 8;
  return true;
}
