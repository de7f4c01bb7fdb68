/* onnx_load.c - the frontend's entry points: ONNX files and buffers in, IR out.
 *
 * Reads the whole file, unpacks the ModelProto with protobuf-c (bindings
 * generated at build time from the installed onnx.proto), records the opset
 * imports, builds the main graph (onnx_graph.c) and frees the protobuf.
 * fe_tensor_load reads a lone TensorProto (the backend test data layout).
 * Calls to model-local functions (ModelProto.functions) are inlined first
 * (onnx_function.c).
 */
#include "onnx_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads all of path into a heap buffer (*data NULL when empty). */
static bool read_file(Diag *d, const char *path, const char *what, uint8_t **data, size_t *n) {
  *data = NULL;
  *n = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return diag_error(d, NULL, "cannot read %s: %s", what, strerror(errno));
  size_t cap = 0;
  uint8_t *buf = NULL;
  for (;;) {
    if (*n == cap) {
      cap = cap ? cap * 2 : 1 << 16;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        return diag_error(d, NULL, "cannot read %s: out of memory", what);
      }
      buf = nb;
    }
    size_t got = fread(buf + *n, 1, cap - *n, f);
    *n += got;
    if (got == 0)
      break;
  }
  if (ferror(f)) {
    int err = errno;
    free(buf);
    fclose(f);
    return diag_error(d, NULL, "cannot read %s: %s", what, strerror(err));
  }
  fclose(f);
  if (*n == 0) {
    free(buf);
    buf = NULL;
  }
  *data = buf;
  return true;
}

/* The folder holding path ("." when it has none); heap string. */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return strdup(".");
  size_t len = slash == path ? 1 : (size_t)(slash - path);
  char *dir = malloc(len + 1);
  IR_ASSERT(dir != NULL);
  memcpy(dir, path, len);
  dir[len] = 0;
  return dir;
}

static bool is_default_domain(const char *domain) {
  return !domain || !*domain || strcmp(domain, "ai.onnx") == 0;
}

/* opset_import into g->opset (default domain) and g->imports (all). */
static void set_opsets(Graph *g, const Onnx__ModelProto *m, Diag *d) {
  bool have_default = false;
  g->n_imports = (int)m->n_opset_import;
  g->imports = arena_alloc(g->arena, (m->n_opset_import + 1) * sizeof *g->imports);
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *op = m->opset_import[i];
    g->imports[i].domain = arena_strdup(g->arena, fe_str(op->domain));
    g->imports[i].version = op->version;
    if (is_default_domain(op->domain) && !have_default) {
      g->opset = op->version;
      have_default = true;
    }
  }
  if (have_default)
    return;
  /* Required since IR version 3; older models predate opsets. */
  g->opset = 1;
  for (size_t i = 0; i < m->graph->n_node; i++)
    if (is_default_domain(m->graph->node[i]->domain)) {
      diag_warn(d, NULL, "model imports no opset for the default domain; assuming opset 1");
      return;
    }
}

static Onnx__ModelProto *unpack_model(const void *data, size_t n, Diag *d) {
  if (n == 0) {
    diag_error(d, NULL, "cannot parse: empty file, not an ONNX model");
    return NULL;
  }
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, data);
  if (!m) {
    diag_error(d, NULL, "cannot parse: not a valid ONNX model (malformed protobuf)");
    return NULL;
  }
  if (!m->graph) {
    diag_error(d, NULL, "cannot parse: not a valid ONNX model (it has no graph)");
    onnx__model_proto__free_unpacked(m, NULL);
    return NULL;
  }
  return m;
}

/* Builds the graph of m and frees m. */
static Graph *build_model(Onnx__ModelProto *m, const char *path, Diag *d) {
  char *dir = path ? dir_of(path) : NULL;
  FeCtx c = {d, dir, 0};
  Graph *g = ir_graph_new(path);
  set_opsets(g, m, d);
  FeFunctions *fns = fe_functions_inline(&c, m);
  bool ok = fe_functions_ok(fns) && fe_graph_build(&c, NULL, g, m->graph);
  fe_functions_restore(fns);
  onnx__model_proto__free_unpacked(m, NULL);
  free(dir);
  if (!ok) {
    ir_graph_free(g);
    return NULL;
  }
  return g;
}

Graph *fe_onnx_load_buffer(const void *data, size_t n, const char *path, Diag *d) {
  Onnx__ModelProto *m = unpack_model(data, n, d);
  return m ? build_model(m, path, d) : NULL;
}

Graph *fe_onnx_load(const char *path, Diag *d) {
  uint8_t *data;
  size_t n;
  if (!read_file(d, path, "the model", &data, &n))
    return NULL;
  /* protobuf-c copies every field out of the buffer: drop it before the
   * arena copies the weights once more, so the peak is two copies, not three. */
  Onnx__ModelProto *m = unpack_model(data, n, d);
  free(data);
  return m ? build_model(m, path, d) : NULL;
}

Tensor *fe_tensor_load(Graph *g, const char *path, const char **name, Diag *d) {
  uint8_t *data;
  size_t n;
  Buf what;
  Tensor *t = NULL;
  if (name)
    *name = "";
  buf_init(&what);
  buf_printf(&what, "tensor file '%s'", path);
  if (!read_file(d, path, what.s, &data, &n)) {
    buf_free(&what);
    return NULL;
  }
  /* An empty buffer is a valid (empty) TensorProto; decoding then reports it. */
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, n, data ? data : (const uint8_t *)"");
  if (!tp) {
    diag_error(d, NULL, "cannot parse %s: not a valid TensorProto (malformed protobuf)", what.s);
  } else {
    char *dir = dir_of(path);
    FeCtx c = {d, dir, 0};
    t = fe_tensor_decode(&c, g, NULL, tp, what.s);
    if (t && name)
      *name = arena_strdup(g->arena, fe_str(tp->name));
    free(dir);
    onnx__tensor_proto__free_unpacked(tp, NULL);
  }
  free(data);
  buf_free(&what);
  return t;
}

bool fe_tensor_save(const char *path, const char *name, DType dt, const Shape *s, const void *raw,
                    size_t nbytes, Diag *d) {
  if (dt == DT_STRING) {
    diag_error(d, NULL, "cannot write '%s' to %s: string tensors are not saved", name, path);
    return false;
  }
  Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
  int64_t dims[IR_MAX_RANK];
  for (int i = 0; i < s->rank; i++)
    dims[i] = s->d[i];
  tp.n_dims = (size_t)s->rank;
  tp.dims = dims;
  tp.has_data_type = true;
  tp.data_type = (int32_t)dt;
  tp.name = (char *)name;
  tp.has_raw_data = true;
  tp.raw_data.len = nbytes;
  tp.raw_data.data = (uint8_t *)raw;
  size_t n = onnx__tensor_proto__get_packed_size(&tp);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    diag_error(d, NULL, "out of memory writing %s", path);
    return false;
  }
  onnx__tensor_proto__pack(&tp, buf);
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(buf, 1, n, f) == n;
  ok = (f && fclose(f) == 0) && ok;
  free(buf);
  if (!ok) {
    diag_error(d, NULL, "cannot write %s", path);
    remove(path);
  }
  return ok;
}
