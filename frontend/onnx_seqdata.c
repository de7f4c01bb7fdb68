/* onnx_seqdata.c - backend test data that is not a lone tensor: the
 * SequenceProto and OptionalProto messages of onnx-data.proto.
 *
 * The generated bindings cover onnx.proto only, and these two messages are
 * small: the wire format is walked here by hand (varint tags, length-delimited
 * payloads) and each embedded TensorProto is unpacked with protobuf-c and
 * decoded like any other tensor. Only tensor elements are supported (a
 * sequence of tensors, an optional tensor, an optional sequence of tensors);
 * maps, sparse tensors and nested sequences are reported.
 */
#include "onnx_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Field numbers shared by SequenceProto and OptionalProto. */
enum { F_NAME = 1, F_ELEM_TYPE = 2, F_TENSOR = 3, F_SPARSE = 4, F_SEQUENCE = 5, F_MAP = 6, F_OPTIONAL = 7 };

typedef struct Reader {
  const uint8_t *p, *end;
} Reader;

static bool varint(Reader *r, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

/* Next field: its number, wire type, and for length-delimited ones the payload. */
static bool field(Reader *r, int *num, int *wire, Reader *payload, uint64_t *ival) {
  uint64_t tag, len;
  if (!varint(r, &tag))
    return false;
  *num = (int)(tag >> 3);
  *wire = (int)(tag & 7);
  switch (*wire) {
  case 0: return varint(r, ival);
  case 1: if (r->end - r->p < 8) return false; r->p += 8; return true;
  case 5: if (r->end - r->p < 4) return false; r->p += 4; return true;
  case 2:
    if (!varint(r, &len) || len > (uint64_t)(r->end - r->p))
      return false;
    payload->p = r->p;
    payload->end = r->p + len;
    r->p += len;
    return true;
  default: return false;
  }
}

typedef struct Load {
  FeCtx *c;
  Graph *g;
  const char *what;
  Tensor **out;
  int max, n;
} Load;

static bool add_tensor(Load *l, const Reader *pl) {
  if (l->n >= l->max)
    return diag_error(l->c->d, NULL, "%s holds more than %d tensors", l->what, l->max);
  size_t len = (size_t)(pl->end - pl->p);
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, len ? pl->p : (const uint8_t *)"");
  if (!tp)
    return diag_error(l->c->d, NULL, "cannot parse %s: element %d is not a valid TensorProto", l->what, l->n);
  Tensor *t = fe_tensor_decode(l->c, l->g, NULL, tp, l->what);
  onnx__tensor_proto__free_unpacked(tp, NULL);
  if (!t)
    return false;
  l->out[l->n++] = t;
  return true;
}

/* A SequenceProto (seq true) or OptionalProto; *present reports an empty optional. */
static bool message(Load *l, Reader r, bool seq, bool *present) {
  *present = false;
  while (r.p < r.end) {
    int num, wire;
    Reader pl = {NULL, NULL};
    uint64_t iv = 0;
    if (!field(&r, &num, &wire, &pl, &iv))
      return diag_error(l->c->d, NULL, "cannot parse %s: malformed %s", l->what,
                        seq ? "SequenceProto" : "OptionalProto");
    if (num == F_TENSOR && wire == 2) {
      if (!add_tensor(l, &pl))
        return false;
      *present = true;
    } else if (num == F_SEQUENCE && wire == 2 && !seq) {
      bool inner;
      if (!message(l, pl, true, &inner))
        return false;
      *present = true;
    } else if ((num == F_SPARSE || num == F_MAP || num == F_OPTIONAL || num == F_SEQUENCE) && wire == 2) {
      return diag_error(l->c->d, NULL, "%s holds a %s; only tensors are supported", l->what,
                        num == F_SPARSE ? "sparse tensor" : num == F_MAP ? "map"
                        : num == F_OPTIONAL ? "nested optional" : "nested sequence");
    }
    /* F_NAME, F_ELEM_TYPE and unknown fields carry nothing we need. */
  }
  if (seq)
    *present = true;
  return true;
}

bool fe_value_load(Graph *g, const char *path, ValueType vt, Tensor **out, int max, int *n,
                   bool *present, Diag *d) {
  *n = 0;
  *present = true;
  if (vt == VT_TENSOR) {
    if (max < 1)
      return diag_error(d, NULL, "tensor file '%s': no room for it", path);
    out[0] = fe_tensor_load(g, path, NULL, d);
    *n = out[0] != NULL;
    return out[0] != NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f)
    return diag_error(d, NULL, "cannot read '%s': %s", path, strerror(errno));
  Buf b;
  buf_init(&b);
  char tmp[65536];
  size_t k;
  while ((k = fread(tmp, 1, sizeof tmp, f)) > 0)
    buf_write(&b, tmp, k);
  bool rd_err = ferror(f) != 0;
  fclose(f);
  if (rd_err) {
    buf_free(&b);
    return diag_error(d, NULL, "cannot read '%s'", path);
  }
  char *dir = strdup(path);
  char *slash = dir ? strrchr(dir, '/') : NULL;
  if (slash)
    *slash = 0;
  FeCtx c = {d, slash ? dir : ".", 0};
  char what[4200];
  snprintf(what, sizeof what, "%s file '%s'", vt == VT_SEQUENCE ? "sequence" : "optional", path);
  Load l = {&c, g, what, out, max, 0};
  Reader r = {(const uint8_t *)b.s, (const uint8_t *)b.s + b.len};
  if (!b.s)
    r.p = r.end = (const uint8_t *)"";
  bool ok = message(&l, r, vt == VT_SEQUENCE, present);
  *n = l.n;
  free(dir);
  buf_free(&b);
  return ok;
}
