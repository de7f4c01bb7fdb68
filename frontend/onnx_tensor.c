/* onnx_tensor.c - TensorProto and SparseTensorProto data into IR Tensors.
 *
 * A tensor's elements come from exactly one place: raw_data (fixed width,
 * little-endian), an external file (same layout; its path is relative to the
 * model's folder and must stay inside it), or the typed field onnx.proto
 * assigns to the data type (float_data, int32_data, int64_data, double_data,
 * uint64_data, string_data). Sizes are checked against the data actually
 * present before anything is allocated, so a bogus `dims` cannot make us
 * allocate terabytes. Sparse tensors (COO) are densified.
 */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700   /* realpath */
#endif
#include "onnx_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Most bytes the dense forms of a model's sparse tensors may take, all
 * together: the only tensors whose memory the file's size does not bound (a
 * sparse tensor of one value may declare gigabytes), so we do. 1 GiB keeps a
 * model's load well under the fuzzer's 2 GiB limit (docs/fuzzing.md). */
#define MAX_DENSE_BYTES ((int64_t)1 << 30)

/* Reports `what: message` (with the node prefix when n is set); returns false. */
static bool terr(FeCtx *c, const Node *n, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool terr(FeCtx *c, const Node *n, const char *what, const char *fmt, ...) {
  Buf b;
  va_list ap;
  buf_init(&b);
  va_start(ap, fmt);
  buf_vprintf(&b, fmt, ap);
  va_end(ap);
  diag_error(c->d, n, "%s: %s", what, b.s ? b.s : "");
  buf_free(&b);
  return false;
}

/* ---- byte order ---------------------------------------------------------- */

static bool host_is_le(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

/* Bytes per scalar component, for byte swapping (complex: per part). */
static int swap_width(DType dt) {
  if (dt == DT_C64)
    return 4;
  if (dt == DT_C128)
    return 8;
  return dtype_bits(dt) >= 16 ? dtype_bits(dt) / 8 : 1;
}

/* raw_data and external data are little-endian. On the usual little-endian
 * host a memcpy is the whole decoding; a big-endian host swaps each element. */
static void le_to_host(void *p, int64_t nbytes, int width) {
  if (width <= 1 || host_is_le())
    return;
  unsigned char *b = p;
  for (int64_t i = 0; i + width <= nbytes; i += width)
    for (int j = 0; j < width / 2; j++) {
      unsigned char t = b[i + j];
      b[i + j] = b[i + width - 1 - j];
      b[i + width - 1 - j] = t;
    }
}

/* ---- shape and size ------------------------------------------------------ */

static bool dims_shape(FeCtx *c, const Node *n, const char *what, size_t n_dims,
                       const int64_t *dims, Shape *s) {
  if (n_dims > IR_MAX_RANK)
    return terr(c, n, what, "rank %zu exceeds the supported maximum of %d", n_dims,
                IR_MAX_RANK);
  for (size_t i = 0; i < n_dims; i++)
    if (dims[i] < 0)
      return terr(c, n, what, "dimension %zu is negative (%lld)", i, (long long)dims[i]);
  *s = shape_make((int)n_dims, dims);
  return true;
}

static bool tensor_size(FeCtx *c, const Node *n, const char *what, DType dt, const Shape *s,
                        int64_t *numel, int64_t *nbytes) {
  char sb[256];
  if (!shape_numel(s, numel) || !dtype_bytes(dt, *numel, nbytes))
    return terr(c, n, what, "size of a %s tensor with dims %s overflows", dtype_name(dt),
                shape_str(s, sb, sizeof sb));
  return true;
}

/* ---- typed fields -------------------------------------------------------- */

typedef enum Field { F_NONE, F_FLOAT, F_INT32, F_STRING, F_INT64, F_DOUBLE, F_UINT64 } Field;

static const char *field_names[] = {"(none)",     "float_data",  "int32_data", "string_data",
                                    "int64_data", "double_data", "uint64_data"};

/* The typed field onnx.proto assigns to each data type. */
static Field field_for(DType dt) {
  switch (dt) {
  case DT_F32: case DT_C64:
    return F_FLOAT;
  case DT_I32: case DT_I16: case DT_I8: case DT_U16: case DT_U8: case DT_BOOL:
  case DT_F16: case DT_BF16: case DT_F8E4M3FN: case DT_F8E4M3FNUZ: case DT_F8E5M2:
  case DT_F8E5M2FNUZ: case DT_F8E8M0: case DT_U4: case DT_I4: case DT_F4E2M1:
  case DT_U2: case DT_I2:
    return F_INT32;
  case DT_STRING:
    return F_STRING;
  case DT_I64:
    return F_INT64;
  case DT_F64: case DT_C128:
    return F_DOUBLE;
  case DT_U32: case DT_U64:
    return F_UINT64;
  default:
    return F_NONE;
  }
}

static size_t field_count(const Onnx__TensorProto *tp, Field f) {
  switch (f) {
  case F_FLOAT: return tp->n_float_data;
  case F_INT32: return tp->n_int32_data;
  case F_STRING: return tp->n_string_data;
  case F_INT64: return tp->n_int64_data;
  case F_DOUBLE: return tp->n_double_data;
  case F_UINT64: return tp->n_uint64_data;
  default: return 0;
  }
}

/* Entries the typed field must hold: complex types store two parts per
 * element; in int32_data each entry of a 4-bit type packs two elements and
 * each entry of a 2-bit type four (one packed byte per entry). */
static int64_t field_expected(DType dt, int64_t numel) {
  switch (dt) {
  case DT_C64: case DT_C128: return numel * 2;
  case DT_U4: case DT_I4: case DT_F4E2M1: return numel / 2 + numel % 2;
  case DT_U2: case DT_I2: return (numel + 3) / 4;
  default: return numel;
  }
}

static void fill_typed(Graph *g, Tensor *t, const Onnx__TensorProto *tp, Field f) {
  int64_t cnt = (int64_t)field_count(tp, f);
  if (cnt == 0)
    return;   /* empty tensor; the field pointer may be NULL */
  switch (f) {
  case F_FLOAT:   /* protobuf-c already decoded these to host floats */
    memcpy(t->data, tp->float_data, (size_t)cnt * sizeof(float));
    break;
  case F_DOUBLE:
    memcpy(t->data, tp->double_data, (size_t)cnt * sizeof(double));
    break;
  case F_INT64:
    memcpy(t->data, tp->int64_data, (size_t)cnt * sizeof(int64_t));
    break;
  case F_UINT64:
    if (t->dt == DT_U64)
      memcpy(t->data, tp->uint64_data, (size_t)cnt * sizeof(uint64_t));
    else
      for (int64_t i = 0; i < cnt; i++)
        ((uint32_t *)t->data)[i] = (uint32_t)tp->uint64_data[i];
    break;
  case F_INT32: {
    int bits = dtype_bits(t->dt);
    for (int64_t i = 0; i < cnt; i++) {
      int32_t v = tp->int32_data[i];
      if (bits == 32)
        ((int32_t *)t->data)[i] = v;
      else if (bits == 16)       /* i16, u16 and the bit patterns of f16 / bf16 */
        ((uint16_t *)t->data)[i] = (uint16_t)v;
      else if (t->dt == DT_BOOL)
        ((uint8_t *)t->data)[i] = v != 0;
      else                       /* 8-bit types, f8 bit patterns, packed sub-byte types */
        ((uint8_t *)t->data)[i] = (uint8_t)v;
    }
    break;
  }
  case F_STRING: {
    char **ss = t->data;
    for (int64_t i = 0; i < cnt; i++) {
      const ProtobufCBinaryData *b = &tp->string_data[i];
      char *s = arena_alloc(g->arena, b->len + 1);
      if (b->len)
        memcpy(s, b->data, b->len);
      ss[i] = s;
    }
    break;
  }
  default:
    IR_ASSERT(!"fill_typed: no field");
  }
}

/* Checks the typed field for dt holds exactly the expected entries. */
static bool check_typed(FeCtx *c, const Node *n, const char *what, const Onnx__TensorProto *tp,
                        DType dt, int64_t numel, Field f) {
  int64_t want = field_expected(dt, numel);
  int64_t have = (int64_t)field_count(tp, f);
  if (f == F_NONE)
    return terr(c, n, what, "no ONNX field holds %s data", dtype_name(dt));
  if (have == want)
    return true;
  if (have == 0) {
    for (int other = F_FLOAT; other <= F_UINT64; other++)
      if (field_count(tp, (Field)other))
        return terr(c, n, what, "data is in %s, which cannot hold %s values (expected %s)",
                    field_names[other], dtype_name(dt), field_names[f]);
    return terr(c, n, what, "has no data (expected %lld elements)", (long long)numel);
  }
  return terr(c, n, what, "%s has %lld entries, expected %lld", field_names[f],
              (long long)have, (long long)want);
}

/* ---- external data ------------------------------------------------------- */

static const char *ext_key(const Onnx__TensorProto *tp, const char *key) {
  for (size_t i = 0; i < tp->n_external_data; i++)
    if (tp->external_data[i]->key && strcmp(tp->external_data[i]->key, key) == 0)
      return fe_str(tp->external_data[i]->value);
  return NULL;
}

static bool parse_count(const char *s, int64_t *out) {
  char *end;
  if (!s || !*s || *s == '-' || *s == '+')
    return false;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end)
    return false;
  *out = v;
  return true;
}

/* True when some '/'-separated component of p is "..". */
static bool has_dotdot(const char *p) {
  for (const char *s = p; *s;) {
    const char *e = strchr(s, '/');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len == 2 && s[0] == '.' && s[1] == '.')
      return true;
    s += len;
    while (*s == '/')
      s++;
  }
  return false;
}

/* Resolves and opens the external file of tp, positioned at its data, after
 * checking it lies inside the model's folder and holds nbytes. NULL after an
 * error. */
static FILE *open_external(FeCtx *c, const Node *n, const char *what,
                           const Onnx__TensorProto *tp, int64_t nbytes) {
  const char *loc = ext_key(tp, "location");
  const char *off_s = ext_key(tp, "offset"), *len_s = ext_key(tp, "length");
  int64_t offset = 0, length = nbytes;
  if (!loc || !*loc)
    return terr(c, n, what, "external data has no location"), NULL;
  if (!c->dir)
    return terr(c, n, what, "external data '%s' needs the model's path", loc), NULL;
  if (loc[0] == '/')
    return terr(c, n, what, "external data path '%s' is absolute; it must be relative to "
                "the model's folder", loc), NULL;
  if (has_dotdot(loc))
    return terr(c, n, what, "external data path '%s' points outside the model's folder",
                loc), NULL;
  if (off_s && !parse_count(off_s, &offset))
    return terr(c, n, what, "external data offset '%s' is not a valid byte count", off_s),
           NULL;
  if (len_s && !parse_count(len_s, &length))
    return terr(c, n, what, "external data length '%s' is not a valid byte count", len_s),
           NULL;
  if (length != nbytes)
    return terr(c, n, what, "external data length %lld does not match the tensor's %lld "
                "bytes", (long long)length, (long long)nbytes), NULL;

  /* Symlinks may still lead out of the folder: compare the resolved paths. */
  Buf full;
  buf_init(&full);
  buf_printf(&full, "%s/%s", c->dir, loc);
  FILE *f = NULL;
  char *rdir = realpath(c->dir, NULL), *rfull = realpath(full.s, NULL);
  if (!rdir) {
    terr(c, n, what, "cannot resolve the model's folder '%s': %s", c->dir, strerror(errno));
  } else if (!rfull) {
    terr(c, n, what, "cannot open external data file '%s': %s", full.s, strerror(errno));
  } else {
    size_t dl = strlen(rdir);
    bool inside = strncmp(rfull, rdir, dl) == 0 && (rfull[dl] == '/' || strcmp(rdir, "/") == 0);
    if (!inside)
      terr(c, n, what, "external data path '%s' resolves outside the model's folder", loc);
    else if (!(f = fopen(rfull, "rb")))
      terr(c, n, what, "cannot open external data file '%s': %s", full.s, strerror(errno));
  }
  if (f) {
    off_t size = -1;
    if (fseeko(f, 0, SEEK_END) == 0)
      size = ftello(f);
    if (size < 0 || offset > (int64_t)size || (int64_t)size - offset < nbytes) {
      terr(c, n, what, "external data file '%s' is too short: %lld bytes needed at offset "
           "%lld, the file has %lld", full.s, (long long)nbytes, (long long)offset,
           (long long)size);
      fclose(f);
      f = NULL;
    } else if (fseeko(f, (off_t)offset, SEEK_SET) != 0) {
      terr(c, n, what, "cannot seek in external data file '%s': %s", full.s, strerror(errno));
      fclose(f);
      f = NULL;
    }
  }
  free(rdir);
  free(rfull);
  buf_free(&full);
  return f;
}

/* ---- decoding ------------------------------------------------------------ */

Tensor *fe_tensor_decode(FeCtx *c, Graph *g, const Node *n, const Onnx__TensorProto *tp,
                         const char *what) {
  char sb[256];
  if (!tp->has_data_type || !dtype_valid(tp->data_type))
    return terr(c, n, what, "invalid data type %d", (int)tp->data_type), NULL;
  DType dt = (DType)tp->data_type;
  Shape s;
  int64_t numel, nbytes;
  if (!dims_shape(c, n, what, tp->n_dims, tp->dims, &s) ||
      !tensor_size(c, n, what, dt, &s, &numel, &nbytes))
    return NULL;
  if (tp->segment)
    return terr(c, n, what, "segmented tensors are not supported"), NULL;

  bool external = tp->has_data_location &&
                  tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  Field f = field_for(dt);
  /* An empty raw_data next to a filled typed field is taken as absent. */
  bool raw = tp->has_raw_data && !(tp->raw_data.len == 0 && field_count(tp, f) > 0);
  FILE *ext = NULL;
  if ((external || raw) && dt == DT_STRING)
    return terr(c, n, what, "string tensors must use string_data"), NULL;
  if (external) {
    if (!(ext = open_external(c, n, what, tp, nbytes)))
      return NULL;
  } else if (raw) {
    if ((int64_t)tp->raw_data.len != nbytes)
      return terr(c, n, what, "raw_data has %zu bytes, expected %lld for %s%s",
                  tp->raw_data.len, (long long)nbytes, dtype_name(dt),
                  shape_str(&s, sb, sizeof sb)), NULL;
  } else if (!check_typed(c, n, what, tp, dt, numel, f)) {
    return NULL;
  }

  Tensor *t = ir_tensor_new(g, dt, &s, c->d);
  if (t && ext) {
    if (nbytes && fread(t->data, 1, (size_t)nbytes, ext) != (size_t)nbytes) {
      terr(c, n, what, "short read from external data file");
      t = NULL;
    } else {
      le_to_host(t->data, nbytes, swap_width(dt));
    }
  } else if (t && raw) {
    if (nbytes)
      memcpy(t->data, tp->raw_data.data, (size_t)nbytes);
    le_to_host(t->data, nbytes, swap_width(dt));
  } else if (t) {
    fill_typed(g, t, tp, f);
  }
  if (ext)
    fclose(ext);
  return t;
}

Tensor *fe_sparse_decode(FeCtx *c, Graph *g, const Node *n, const Onnx__SparseTensorProto *sp,
                         const char *what) {
  Shape ds;
  char sb[256];
  int64_t numel, nbytes;
  if (!sp->values || !sp->indices)
    return terr(c, n, what, "sparse tensor lacks values or indices"), NULL;
  if (!dims_shape(c, n, what, sp->n_dims, sp->dims, &ds))
    return NULL;
  Tensor *vals = fe_tensor_decode(c, g, n, sp->values, what);
  Tensor *idx = vals ? fe_tensor_decode(c, g, n, sp->indices, what) : NULL;
  if (!vals || !idx)
    return NULL;
  DType dt = vals->dt;
  int bits = dtype_bits(dt);
  if (dt == DT_STRING || bits % 8)
    return terr(c, n, what, "sparse tensors of type %s are not supported", dtype_name(dt)),
           NULL;
  if (vals->shape.rank != 1)
    return terr(c, n, what, "sparse values must be 1-D, got %s",
                shape_str(&vals->shape, sb, sizeof sb)), NULL;
  if (idx->dt != DT_I64)
    return terr(c, n, what, "sparse indices must be int64, got %s", dtype_name(idx->dt)),
           NULL;
  int64_t nnz = vals->numel;
  int rank = ds.rank;
  bool linear = idx->shape.rank == 1 && idx->shape.d[0] == nnz;
  bool coords = idx->shape.rank == 2 && idx->shape.d[0] == nnz && idx->shape.d[1] == rank;
  if (!linear && !coords)
    return terr(c, n, what, "sparse indices have shape %s; expected [%lld] or [%lld,%d]",
                shape_str(&idx->shape, sb, sizeof sb), (long long)nnz, (long long)nnz, rank),
           NULL;
  if (!tensor_size(c, n, what, dt, &ds, &numel, &nbytes))
    return NULL;
  if (nbytes > MAX_DENSE_BYTES - c->dense_bytes)
    return terr(c, n, what, "dense form would take %lld bytes; with the model's other sparse "
                "tensors (%lld bytes) that is more than the supported %lld",
                (long long)nbytes, (long long)c->dense_bytes, (long long)MAX_DENSE_BYTES), NULL;
  c->dense_bytes += nbytes;
  Tensor *t = ir_tensor_new(g, dt, &ds, c->d);
  if (!t)
    return NULL;
  const int64_t *ix = idx->data;
  size_t esz = (size_t)bits / 8;
  for (int64_t k = 0; k < nnz; k++) {
    int64_t lin = 0;
    if (linear) {
      lin = ix[k];
      if (lin < 0 || lin >= numel)
        return terr(c, n, what, "sparse index %lld is out of range for %lld elements",
                    (long long)lin, (long long)numel), NULL;
    } else {
      for (int a = 0; a < rank; a++) {
        int64_t v = ix[k * rank + a];
        if (v < 0 || v >= ds.d[a])
          return terr(c, n, what, "sparse index %lld on axis %d is out of range [0, %lld)",
                      (long long)v, a, (long long)ds.d[a]), NULL;
        lin = lin * ds.d[a] + v;
      }
    }
    memcpy((char *)t->data + (size_t)lin * esz, (const char *)vals->data + (size_t)k * esz,
           esz);
  }
  return t;
}
