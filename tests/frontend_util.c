/* frontend_util.c - helpers shared by the frontend's unit tests: builders of
 * ONNX protobuf-c structs (from a pool freed after each test), packing and
 * loading, message checks, and temporary folders.
 */
#include "frontend_util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- proto builders ------------------------------------------------------ */

static void **pool;
static size_t n_pool, cap_pool;

void *P(size_t n) {
  void *p = calloc(1, n ? n : 1);
  assert_non_null(p);
  if (n_pool == cap_pool) {
    cap_pool = cap_pool ? cap_pool * 2 : 64;
    pool = realloc(pool, cap_pool * sizeof *pool);
    assert_non_null(pool);
  }
  pool[n_pool++] = p;
  return p;
}

char *S(const char *s) { return strcpy(P(strlen(s) + 1), s); }

int pool_free(void **state) {
  (void)state;
  for (size_t i = 0; i < n_pool; i++)
    free(pool[i]);
  free(pool);
  pool = NULL;
  n_pool = cap_pool = 0;
  return 0;
}

/* Splits "a,,b" into {"a", "", "b"}; "" gives no entries. */
size_t split(const char *list, char ***out) {
  size_t n = 0;
  *out = NULL;
  if (!list || !*list)
    return 0;
  for (const char *p = list;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char *s = P(len + 1);
    memcpy(s, p, len);
    PUSH(*out, n, s);
    if (!e)
      break;
    p = e + 1;
  }
  return n;
}

Onnx__ModelProto *model_new(int64_t opset) {
  Onnx__ModelProto *m = P(sizeof *m);
  onnx__model_proto__init(m);
  m->has_ir_version = 1;
  m->ir_version = 8;
  m->graph = P(sizeof *m->graph);
  onnx__graph_proto__init(m->graph);
  m->graph->name = S("main");
  if (opset) {
    Onnx__OperatorSetIdProto *op = P(sizeof *op);
    onnx__operator_set_id_proto__init(op);
    op->domain = S("");
    op->has_version = 1;
    op->version = opset;
    PUSH(m->opset_import, m->n_opset_import, op);
  }
  return m;
}

Onnx__GraphProto *graph_new(const char *name) {
  Onnx__GraphProto *g = P(sizeof *g);
  onnx__graph_proto__init(g);
  g->name = S(name);
  return g;
}

/* dims: NULL no shape; "" scalar; "2,N,?" static, dim_param, unknown. */
Onnx__TypeProto *tensor_type(int elem, const char *dims) {
  Onnx__TypeProto *tp = P(sizeof *tp);
  onnx__type_proto__init(tp);
  Onnx__TypeProto__Tensor *tt = P(sizeof *tt);
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = elem;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  if (!dims)
    return tp;
  tt->shape = P(sizeof *tt->shape);
  onnx__tensor_shape_proto__init(tt->shape);
  char **parts;
  size_t n = split(dims, &parts);
  for (size_t i = 0; i < n; i++) {
    Onnx__TensorShapeProto__Dimension *d = P(sizeof *d);
    onnx__tensor_shape_proto__dimension__init(d);
    if (strcmp(parts[i], "?") == 0) {
      /* neither field set */
    } else if ((parts[i][0] >= '0' && parts[i][0] <= '9') || parts[i][0] == '-') {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = strtoll(parts[i], NULL, 10);
    } else {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = parts[i];
    }
    PUSH(tt->shape->dim, tt->shape->n_dim, d);
  }
  return tp;
}

Onnx__ValueInfoProto *vinfo(const char *name, int elem, const char *dims) {
  Onnx__ValueInfoProto *vi = P(sizeof *vi);
  onnx__value_info_proto__init(vi);
  vi->name = S(name);
  if (elem >= 0)
    vi->type = tensor_type(elem, dims);
  return vi;
}

void add_input(Onnx__GraphProto *g, const char *name, int elem, const char *dims) {
  PUSH(g->input, g->n_input, vinfo(name, elem, dims));
}

void add_output(Onnx__GraphProto *g, const char *name, int elem, const char *dims) {
  PUSH(g->output, g->n_output, vinfo(name, elem, dims));
}

Onnx__TensorProto *tensor(const char *name, int dt, const char *dims) {
  Onnx__TensorProto *t = P(sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = name ? S(name) : NULL;
  t->has_data_type = 1;
  t->data_type = dt;
  char **parts;
  size_t n = split(dims, &parts);
  for (size_t i = 0; i < n; i++)
    PUSH(t->dims, t->n_dims, (int64_t)strtoll(parts[i], NULL, 10));
  return t;
}

Onnx__TensorProto *tensor_raw(const char *name, int dt, const char *dims,
                                     const void *data, size_t n) {
  Onnx__TensorProto *t = tensor(name, dt, dims);
  t->has_raw_data = 1;
  t->raw_data.len = n;
  t->raw_data.data = n ? memcpy(P(n), data, n) : NULL;
  return t;
}

void set_floats(Onnx__TensorProto *t, size_t n, const float *v) {
  t->n_float_data = n;
  t->float_data = memcpy(P(n * sizeof *v), v, n * sizeof *v);
}

void set_int32s(Onnx__TensorProto *t, size_t n, const int32_t *v) {
  t->n_int32_data = n;
  t->int32_data = memcpy(P(n * sizeof *v), v, n * sizeof *v);
}

void set_int64s(Onnx__TensorProto *t, size_t n, const int64_t *v) {
  t->n_int64_data = n;
  t->int64_data = memcpy(P(n * sizeof *v), v, n * sizeof *v);
}

void add_init(Onnx__GraphProto *g, Onnx__TensorProto *t) {
  PUSH(g->initializer, g->n_initializer, t);
}

Onnx__NodeProto *add_node(Onnx__GraphProto *g, const char *op, const char *name,
                                 const char *ins, const char *outs) {
  Onnx__NodeProto *n = P(sizeof *n);
  onnx__node_proto__init(n);
  n->op_type = S(op);
  n->name = name ? S(name) : NULL;
  n->n_input = split(ins, &n->input);
  n->n_output = split(outs, &n->output);
  PUSH(g->node, g->n_node, n);
  return n;
}

Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, const char *name, int type) {
  Onnx__AttributeProto *a = P(sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = S(name);
  a->has_type = 1;
  a->type = type;
  PUSH(n->attribute, n->n_attribute, a);
  return a;
}

void set_external(Onnx__TensorProto *t, const char *loc, const char *off,
                         const char *len) {
  const char *keys[] = {"location", "offset", "length"}, *vals[] = {loc, off, len};
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  for (int i = 0; i < 3; i++) {
    if (!vals[i])
      continue;
    Onnx__StringStringEntryProto *e = P(sizeof *e);
    onnx__string_string_entry_proto__init(e);
    e->key = S(keys[i]);
    e->value = S(vals[i]);
    PUSH(t->external_data, t->n_external_data, e);
  }
}

/* ---- loading helpers ----------------------------------------------------- */

uint8_t *pack(const Onnx__ModelProto *m, size_t *n) {
  *n = onnx__model_proto__get_packed_size(m);
  uint8_t *buf = P(*n);
  assert_int_equal(onnx__model_proto__pack(m, buf), *n);
  return buf;
}

Graph *load_as(const Onnx__ModelProto *m, const char *path, Diag *d) {
  size_t n;
  uint8_t *buf = pack(m, &n);
  return fe_onnx_load_buffer(buf, n, path, d);
}

Graph *load(const Onnx__ModelProto *m, Diag *d) {
  return load_as(m, "mem/model.onnx", d);
}

/* True when some message contains `needle`; prints them all otherwise. */
bool has_msg(const Diag *d, const char *needle) {
  for (int i = 0; i < d->n_msgs; i++)
    if (strstr(d->msgs[i], needle))
      return true;
  fprintf(stderr, "no message contains \"%s\"; got %d:\n", needle, d->n_msgs);
  for (int i = 0; i < d->n_msgs; i++)
    fprintf(stderr, "  %s\n", d->msgs[i]);
  return false;
}

void assert_loads(Graph *g, const Diag *d) {
  if (!g || d->n_errors)
    has_msg(d, "<expected no errors>");
  assert_non_null(g);
  assert_int_equal(d->n_errors, 0);
}

Node *find_node(const Graph *g, const char *name) {
  for (Node *n = g->first; n; n = n->next)
    if (strcmp(n->name, name) == 0)
      return n;
  fail_msg("no node '%s'", name);
  return NULL;
}

const Tensor *const_of(const Graph *g, const char *name) {
  Value *v = ir_value_find(g, name);
  assert_non_null(v);
  assert_int_equal(v->kind, VK_CONST);
  assert_non_null(v->konst);
  return v->konst;
}

/* ---- temp folders -------------------------------------------------------- */

char *tmp_dir(void) {
  const char *base = getenv("TMPDIR");
  char *t = P(512);
  snprintf(t, 512, "%s/onnxc_fe_XXXXXX", base && *base ? base : "/tmp");
  assert_non_null(mkdtemp(t));
  return t;
}

char *path_in(const char *dir, const char *name) {
  char *p = P(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n)
    assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* Removes the files we made (names given) and the folders, innermost first. */
void cleanup(const char *dir, const char *const *files, int n_files,
                    const char *const *subdirs, int n_subdirs) {
  for (int i = 0; i < n_files; i++)
    unlink(path_in(dir, files[i]));
  for (int i = 0; i < n_subdirs; i++)
    rmdir(path_in(dir, subdirs[i]));
  rmdir(dir);
}
