/* test_frontend.c - unit tests of the ONNX frontend (frontend/).
 *
 * Models are built in memory from the protobuf-c structs generated from
 * onnx.proto, packed, and loaded with fe_onnx_load_buffer. Cases that need
 * files (external data, empty file, TensorProto files) write them into a
 * mkdtemp folder that the test removes again. Proto structs come from a
 * small pool freed after each test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend.h"
#include "onnx.pb-c.h"

/* ---- proto builders ------------------------------------------------------ */

static void **pool;
static size_t n_pool, cap_pool;

static void *P(size_t n) {
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

static char *S(const char *s) { return strcpy(P(strlen(s) + 1), s); }

static int pool_free(void **state) {
  (void)state;
  for (size_t i = 0; i < n_pool; i++)
    free(pool[i]);
  free(pool);
  pool = NULL;
  n_pool = cap_pool = 0;
  return 0;
}

/* Appends item to a protobuf-c repeated field (arr, n). */
#define PUSH(arr, n, item)                                                    \
  do {                                                                        \
    void *na_ = P(((n) + 1) * sizeof *(arr));                                 \
    if (n)                                                                    \
      memcpy(na_, (arr), (n) * sizeof *(arr));                                \
    (arr) = na_;                                                              \
    (arr)[(n)++] = (item);                                                    \
  } while (0)

/* Splits "a,,b" into {"a", "", "b"}; "" gives no entries. */
static size_t split(const char *list, char ***out) {
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

static Onnx__ModelProto *model_new(int64_t opset) {
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

static Onnx__GraphProto *graph_new(const char *name) {
  Onnx__GraphProto *g = P(sizeof *g);
  onnx__graph_proto__init(g);
  g->name = S(name);
  return g;
}

/* dims: NULL no shape; "" scalar; "2,N,?" static, dim_param, unknown. */
static Onnx__TypeProto *tensor_type(int elem, const char *dims) {
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

static Onnx__ValueInfoProto *vinfo(const char *name, int elem, const char *dims) {
  Onnx__ValueInfoProto *vi = P(sizeof *vi);
  onnx__value_info_proto__init(vi);
  vi->name = S(name);
  if (elem >= 0)
    vi->type = tensor_type(elem, dims);
  return vi;
}

static void add_input(Onnx__GraphProto *g, const char *name, int elem, const char *dims) {
  PUSH(g->input, g->n_input, vinfo(name, elem, dims));
}

static void add_output(Onnx__GraphProto *g, const char *name, int elem, const char *dims) {
  PUSH(g->output, g->n_output, vinfo(name, elem, dims));
}

static Onnx__TensorProto *tensor(const char *name, int dt, const char *dims) {
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

static Onnx__TensorProto *tensor_raw(const char *name, int dt, const char *dims,
                                     const void *data, size_t n) {
  Onnx__TensorProto *t = tensor(name, dt, dims);
  t->has_raw_data = 1;
  t->raw_data.len = n;
  t->raw_data.data = n ? memcpy(P(n), data, n) : NULL;
  return t;
}

static void set_floats(Onnx__TensorProto *t, size_t n, const float *v) {
  t->n_float_data = n;
  t->float_data = memcpy(P(n * sizeof *v), v, n * sizeof *v);
}

static void set_int32s(Onnx__TensorProto *t, size_t n, const int32_t *v) {
  t->n_int32_data = n;
  t->int32_data = memcpy(P(n * sizeof *v), v, n * sizeof *v);
}

static void set_int64s(Onnx__TensorProto *t, size_t n, const int64_t *v) {
  t->n_int64_data = n;
  t->int64_data = memcpy(P(n * sizeof *v), v, n * sizeof *v);
}

static void add_init(Onnx__GraphProto *g, Onnx__TensorProto *t) {
  PUSH(g->initializer, g->n_initializer, t);
}

static Onnx__NodeProto *add_node(Onnx__GraphProto *g, const char *op, const char *name,
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

static Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, const char *name, int type) {
  Onnx__AttributeProto *a = P(sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = S(name);
  a->has_type = 1;
  a->type = type;
  PUSH(n->attribute, n->n_attribute, a);
  return a;
}

static void set_external(Onnx__TensorProto *t, const char *loc, const char *off,
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

static uint8_t *pack(const Onnx__ModelProto *m, size_t *n) {
  *n = onnx__model_proto__get_packed_size(m);
  uint8_t *buf = P(*n);
  assert_int_equal(onnx__model_proto__pack(m, buf), *n);
  return buf;
}

static Graph *load_as(const Onnx__ModelProto *m, const char *path, Diag *d) {
  size_t n;
  uint8_t *buf = pack(m, &n);
  return fe_onnx_load_buffer(buf, n, path, d);
}

static Graph *load(const Onnx__ModelProto *m, Diag *d) {
  return load_as(m, "mem/model.onnx", d);
}

/* True when some message contains `needle`; prints them all otherwise. */
static bool has_msg(const Diag *d, const char *needle) {
  for (int i = 0; i < d->n_msgs; i++)
    if (strstr(d->msgs[i], needle))
      return true;
  fprintf(stderr, "no message contains \"%s\"; got %d:\n", needle, d->n_msgs);
  for (int i = 0; i < d->n_msgs; i++)
    fprintf(stderr, "  %s\n", d->msgs[i]);
  return false;
}

static void assert_loads(Graph *g, const Diag *d) {
  if (!g || d->n_errors)
    has_msg(d, "<expected no errors>");
  assert_non_null(g);
  assert_int_equal(d->n_errors, 0);
}

static Node *find_node(const Graph *g, const char *name) {
  for (Node *n = g->first; n; n = n->next)
    if (strcmp(n->name, name) == 0)
      return n;
  fail_msg("no node '%s'", name);
  return NULL;
}

static const Tensor *const_of(const Graph *g, const char *name) {
  Value *v = ir_value_find(g, name);
  assert_non_null(v);
  assert_int_equal(v->kind, VK_CONST);
  assert_non_null(v->konst);
  return v->konst;
}

/* ---- temp folders -------------------------------------------------------- */

static char *tmp_dir(void) {
  const char *base = getenv("TMPDIR");
  char *t = P(512);
  snprintf(t, 512, "%s/onnxc_fe_XXXXXX", base && *base ? base : "/tmp");
  assert_non_null(mkdtemp(t));
  return t;
}

static char *path_in(const char *dir, const char *name) {
  char *p = P(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n)
    assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* Removes the files we made (names given) and the folders, innermost first. */
static void cleanup(const char *dir, const char *const *files, int n_files,
                    const char *const *subdirs, int n_subdirs) {
  for (int i = 0; i < n_files; i++)
    unlink(path_in(dir, files[i]));
  for (int i = 0; i < n_subdirs; i++)
    rmdir(path_in(dir, subdirs[i]));
  rmdir(dir);
}

/* ---- a valid model ------------------------------------------------------- */

static void test_load_valid_inputs_and_initializers(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  Onnx__GraphProto *gp = m->graph;
  add_input(gp, "x", DT_F32, "batch,3");
  add_input(gp, "s", DT_I64, NULL);
  add_input(gp, "q", DT_U8, "?,2");
  float w[6] = {1, 2, 3, 4, 5, 6};
  add_init(gp, tensor_raw("w_raw", DT_F32, "3,2", w, sizeof w));
  Onnx__TensorProto *t = tensor("w_f", DT_F32, "2");
  set_floats(t, 2, (float[]){0.5f, -1.5f});
  add_init(gp, t);
  t = tensor("i8", DT_I8, "3");
  set_int32s(t, 3, (int32_t[]){-1, 2, 127});
  add_init(gp, t);
  t = tensor("h", DT_F16, "2");
  set_int32s(t, 2, (int32_t[]){0x3c00, 0xc000});
  add_init(gp, t);
  t = tensor("b", DT_BOOL, "3");
  set_int32s(t, 3, (int32_t[]){1, 0, 1});
  add_init(gp, t);
  t = tensor("l", DT_I64, "2");
  set_int64s(t, 2, (int64_t[]){-5, INT64_MAX});
  add_init(gp, t);
  t = tensor("dd", DT_F64, "2");
  t->n_double_data = 2;
  t->double_data = (double[]){0.25, 1e300};
  add_init(gp, t);
  t = tensor("u32", DT_U32, "2");
  t->n_uint64_data = 2;
  t->uint64_data = (uint64_t[]){7, 4000000000u};
  add_init(gp, t);
  t = tensor("u64", DT_U64, "1");
  t->n_uint64_data = 1;
  t->uint64_data = (uint64_t[]){UINT64_C(1) << 63};
  add_init(gp, t);
  t = tensor("str", DT_STRING, "2");
  t->n_string_data = 2;
  t->string_data = (ProtobufCBinaryData[]){{2, (uint8_t *)"ab"}, {1, (uint8_t *)"c"}};
  add_init(gp, t);
  t = tensor("c64", DT_C64, "1");
  set_floats(t, 2, (float[]){1, 2});
  add_init(gp, t);
  t = tensor("i4", DT_I4, "3");   /* 1, 2, -1 packed two per entry, low nibble first */
  set_int32s(t, 2, (int32_t[]){0x21, 0x0f});
  add_init(gp, t);
  float one = 1.0f;
  add_init(gp, tensor_raw("scalar", DT_F32, "", &one, 4));
  add_init(gp, tensor("empty", DT_F32, "0"));
  int16_t i16[2] = {-2, 300};
  add_init(gp, tensor_raw("i16", DT_I16, "2", i16, sizeof i16));
  add_node(gp, "MatMul", "mm", "x,w_raw", "y");
  add_output(gp, "y", DT_F32, "batch,2");

  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  assert_int_equal(g->opset, 13);
  assert_int_equal(g->n_imports, 1);
  assert_string_equal(g->name, "main");

  assert_int_equal(g->n_inputs, 3);
  Value *x = g->inputs[0];
  assert_string_equal(x->name, "x");
  assert_int_equal(x->kind, VK_INPUT);
  assert_int_equal(x->dt, DT_F32);
  assert_int_equal(x->shape.rank, 2);
  assert_int_equal(x->shape.d[0], DIM_UNKNOWN);
  assert_string_equal(x->shape.sym[0], "batch");
  assert_int_equal(x->shape.d[1], 3);
  assert_int_equal(g->inputs[1]->shape.rank, -1);
  assert_int_equal(g->inputs[1]->dt, DT_I64);
  assert_int_equal(g->inputs[2]->shape.d[0], DIM_UNKNOWN);
  assert_null(g->inputs[2]->shape.sym[0]);

  const Tensor *k = const_of(g, "w_raw");
  assert_int_equal(k->dt, DT_F32);
  assert_int_equal(k->numel, 6);
  assert_int_equal(k->nbytes, 24);
  assert_memory_equal(k->data, w, sizeof w);
  k = const_of(g, "w_f");
  assert_true(((float *)k->data)[1] == -1.5f);
  k = const_of(g, "i8");
  assert_int_equal(((int8_t *)k->data)[0], -1);
  assert_int_equal(((int8_t *)k->data)[2], 127);
  k = const_of(g, "h");
  assert_true(tensor_get_f64(k, 0) == 1.0 && tensor_get_f64(k, 1) == -2.0);
  k = const_of(g, "b");
  assert_memory_equal(k->data, ((uint8_t[]){1, 0, 1}), 3);
  k = const_of(g, "l");
  assert_true(((int64_t *)k->data)[1] == INT64_MAX);
  k = const_of(g, "dd");
  assert_true(((double *)k->data)[1] == 1e300);
  k = const_of(g, "u32");
  assert_int_equal(((uint32_t *)k->data)[1], 4000000000u);
  k = const_of(g, "u64");
  assert_true(((uint64_t *)k->data)[0] == UINT64_C(1) << 63);
  k = const_of(g, "str");
  assert_int_equal(k->dt, DT_STRING);
  assert_string_equal(((char **)k->data)[0], "ab");
  assert_string_equal(((char **)k->data)[1], "c");
  k = const_of(g, "c64");
  assert_int_equal(k->nbytes, 8);
  assert_true(((float *)k->data)[1] == 2.0f);
  k = const_of(g, "i4");
  assert_int_equal(k->nbytes, 2);
  assert_memory_equal(k->data, ((uint8_t[]){0x21, 0x0f}), 2);
  k = const_of(g, "scalar");
  assert_int_equal(k->shape.rank, 0);
  assert_int_equal(k->numel, 1);
  k = const_of(g, "empty");
  assert_int_equal(k->numel, 0);
  k = const_of(g, "i16");
  assert_int_equal(tensor_get_i64(k, 0), -2);
  assert_int_equal(tensor_get_i64(k, 1), 300);

  Node *mm = find_node(g, "mm");
  assert_int_equal(mm->op, OP_MatMul);
  assert_ptr_equal(mm->in[0], x);
  assert_ptr_equal(mm->in[1], ir_value_find(g, "w_raw"));
  assert_int_equal(g->n_outputs, 1);
  Value *y = g->outputs[0];
  assert_string_equal(y->name, "y");
  assert_ptr_equal(y->producer, mm);
  assert_true(y->is_output);
  assert_int_equal(y->dt, DT_F32);   /* hint from the output's type */
  assert_string_equal(y->shape.sym[0], "batch");
  assert_int_equal(x->n_uses, 1);
  assert_true(ir_verify(g, false, &d));
  ir_graph_free(g);
  diag_free(&d);
}

static void test_load_initializer_listed_as_input_is_weight(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(7);
  add_input(m->graph, "x", DT_F32, "2");
  add_input(m->graph, "w", DT_F32, "2");
  float w[2] = {3, 4};
  add_init(m->graph, tensor_raw("w", DT_F32, "2", w, sizeof w));
  add_node(m->graph, "Add", NULL, "x,w", "y");
  add_output(m->graph, "y", DT_F32, "2");
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  assert_int_equal(g->n_inputs, 1);
  assert_string_equal(g->inputs[0]->name, "x");
  assert_int_equal(ir_value_find(g, "w")->kind, VK_CONST);
  Node *add = find_node(g, "Add_0");   /* synthesized "<OpType>_<index>" */
  assert_int_equal(add->in[1]->kind, VK_CONST);
  ir_graph_free(g);
  diag_free(&d);
}

/* Constant nodes stay nodes; every attribute kind is converted. */
static void test_load_attributes_of_every_kind(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  Onnx__GraphProto *gp = m->graph;
  add_input(gp, "x", DT_F32, "2");
  Onnx__NodeProto *c = add_node(gp, "Constant", "c", "", "k");
  Onnx__AttributeProto *a = add_attr(c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
  a->t = tensor(NULL, DT_F32, "1");
  set_floats(a->t, 1, (float[]){2.5f});

  Onnx__NodeProto *n = add_node(gp, "Foo", "foo", "x,k", "y");
  a = add_attr(n, "f", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1, a->f = 0.5f;
  a = add_attr(n, "i", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1, a->i = -7;
  a = add_attr(n, "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  a->has_s = 1, a->s = (ProtobufCBinaryData){3, (uint8_t *)"a\0b"};
  a = add_attr(n, "fs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
  a->n_floats = 2, a->floats = (float[]){1, 2};
  a = add_attr(n, "is", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = 3, a->ints = (int64_t[]){1, -2, 3};
  a = add_attr(n, "ss", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
  a->n_strings = 2;
  a->strings = (ProtobufCBinaryData[]){{2, (uint8_t *)"hi"}, {0, NULL}};
  a = add_attr(n, "ts", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
  Onnx__TensorProto *t1 = tensor(NULL, DT_I64, "1");
  set_int64s(t1, 1, (int64_t[]){9});
  a->n_tensors = 1, a->tensors = (Onnx__TensorProto *[]){t1};
  Onnx__GraphProto *sub = graph_new("body");
  add_node(sub, "Identity", "id", "x", "sy");
  add_output(sub, "sy", DT_F32, NULL);
  a = add_attr(n, "g", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
  a->g = sub;
  Onnx__GraphProto *g1 = graph_new("g1"), *g2 = graph_new("g2");
  add_input(g1, "p", DT_F32, NULL);
  add_output(g1, "p", DT_F32, NULL);
  add_node(g2, "Neg", NULL, "k", "q");
  add_output(g2, "q", DT_F32, NULL);
  a = add_attr(n, "gs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS);
  a->n_graphs = 2, a->graphs = (Onnx__GraphProto *[]){g1, g2};
  Onnx__SparseTensorProto *sp = P(sizeof *sp);
  onnx__sparse_tensor_proto__init(sp);
  sp->values = tensor(NULL, DT_F32, "1");
  set_floats(sp->values, 1, (float[]){4});
  sp->indices = tensor(NULL, DT_I64, "1");
  set_int64s(sp->indices, 1, (int64_t[]){2});
  sp->n_dims = 1, sp->dims = (int64_t[]){3};
  a = add_attr(n, "sp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR);
  a->sparse_tensor = sp;
  a = add_attr(n, "sps", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS);
  a->n_sparse_tensors = 1, a->sparse_tensors = (Onnx__SparseTensorProto *[]){sp};
  a = add_attr(n, "tp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO);
  a->tp = tensor_type(DT_F32, "1");
  a = add_attr(n, "tps", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS);
  PUSH(a->type_protos, a->n_type_protos, tensor_type(DT_I64, NULL));
  PUSH(a->type_protos, a->n_type_protos, tensor_type(DT_I32, NULL));
  /* IR version 1 style: no type, inferred from the field that is set. */
  a = add_attr(n, "old", 0);
  a->has_type = 0, a->has_i = 1, a->i = 42;
  add_output(gp, "y", DT_F32, NULL);

  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  Node *cn = find_node(g, "c");
  assert_int_equal(cn->op, OP_Constant);
  const Attr *at = ir_attr(cn, "value");
  assert_non_null(at);
  assert_int_equal(at->kind, AT_TENSOR);
  assert_true(((float *)at->u.t->data)[0] == 2.5f);

  Node *foo = find_node(g, "foo");
  assert_int_equal(foo->op, OP_Unknown_);
  assert_string_equal(foo->op_type, "Foo");
  assert_int_equal(foo->n_attrs, 14);
  assert_true(ir_attr_float(foo, "f", 0) == 0.5f);
  assert_int_equal(ir_attr_int(foo, "i", 0), -7);
  at = ir_attr(foo, "s");
  assert_int_equal(at->slen, 3);
  assert_memory_equal(at->u.s, "a\0b", 4);
  at = ir_attr(foo, "fs");
  assert_int_equal(at->n, 2);
  assert_true(at->u.fs[1] == 2.0f);
  int cnt;
  const int64_t *is = ir_attr_ints(foo, "is", &cnt);
  assert_int_equal(cnt, 3);
  assert_int_equal(is[1], -2);
  at = ir_attr(foo, "ss");
  assert_int_equal(at->n, 2);
  assert_string_equal(at->u.ss[0], "hi");
  assert_string_equal(at->u.ss[1], "");
  at = ir_attr(foo, "ts");
  assert_int_equal(at->n, 1);
  assert_int_equal(((int64_t *)at->u.ts[0]->data)[0], 9);

  at = ir_attr(foo, "g");
  assert_int_equal(at->kind, AT_GRAPH);
  Graph *body = at->u.g;
  assert_ptr_equal(body->parent, g);
  assert_string_equal(body->name, "body");
  assert_int_equal(body->n_captures, 1);
  assert_string_equal(body->captures[0]->name, "x");
  assert_int_equal(body->captures[0]->dt, DT_F32);
  assert_ptr_equal(find_node(body, "id")->in[0], body->captures[0]);
  assert_int_equal(body->n_outputs, 1);
  assert_int_equal(body->opset, 13);

  at = ir_attr(foo, "gs");
  assert_int_equal(at->n, 2);
  assert_int_equal(at->u.gs[0]->n_inputs, 1);
  assert_ptr_equal(at->u.gs[0]->outputs[0], at->u.gs[0]->inputs[0]);
  assert_int_equal(at->u.gs[1]->n_captures, 1);
  assert_string_equal(at->u.gs[1]->captures[0]->name, "k");

  at = ir_attr(foo, "sp");
  assert_int_equal(at->kind, AT_SPARSE_TENSOR);
  assert_int_equal(at->u.t->numel, 3);
  assert_true(((float *)at->u.t->data)[2] == 4.0f && ((float *)at->u.t->data)[0] == 0.0f);
  at = ir_attr(foo, "sps");
  assert_int_equal(at->n, 1);
  assert_true(((float *)at->u.ts[0]->data)[2] == 4.0f);
  at = ir_attr(foo, "tp");
  assert_int_equal(at->kind, AT_TYPE_PROTO);
  at = ir_attr(foo, "tps");
  assert_int_equal(at->kind, AT_TYPE_PROTOS);
  assert_int_equal(at->n, 2);
  assert_int_equal(ir_attr_int(foo, "old", 0), 42);
  ir_graph_free(g);
  diag_free(&d);
}

/* Captures go through every graph in between. */
static void test_load_nested_subgraph_captures(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "c", DT_BOOL, "");
  add_input(m->graph, "x", DT_F32, "2");
  Onnx__GraphProto *inner = graph_new("inner"), *outer = graph_new("outer");
  add_node(inner, "Relu", "r", "x", "ri");
  add_output(inner, "ri", DT_F32, NULL);
  Onnx__NodeProto *mid = add_node(outer, "If", "mid", "c", "ro");
  add_attr(mid, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = inner;
  add_attr(mid, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = inner;
  add_output(outer, "ro", DT_F32, NULL);
  Onnx__NodeProto *top = add_node(m->graph, "If", "top", "c", "y");
  add_attr(top, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = outer;
  add_attr(top, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = outer;
  add_output(m->graph, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  Graph *og = ir_attr(find_node(g, "top"), "then_branch")->u.g;
  /* outer reads c and (for inner) x from the main graph */
  assert_int_equal(og->n_captures, 2);
  assert_non_null(ir_value_find(og, "x"));
  Graph *ig = ir_attr(find_node(og, "mid"), "then_branch")->u.g;
  assert_ptr_equal(ig->parent, og);
  assert_int_equal(ig->n_captures, 1);
  assert_ptr_equal(find_node(ig, "r")->in[0], ig->captures[0]);
  ir_graph_free(g);
  diag_free(&d);
}

static void test_load_out_of_order_nodes_link(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "second", "a", "y");
  add_node(m->graph, "Neg", "first", "x", "a");
  add_output(m->graph, "y", DT_F32, "2");
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  assert_ptr_equal(find_node(g, "second")->in[0]->producer, find_node(g, "first"));
  assert_true(ir_toposort(g, &d));
  assert_string_equal(g->first->name, "first");
  ir_graph_free(g);
  diag_free(&d);
}

/* "" inputs are Graph.none; "" outputs get fresh, unique, unreferenceable values. */
static void test_load_omitted_optional_inputs_and_outputs(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_input(m->graph, "hi", DT_F32, "");
  add_input(m->graph, "d_out1", DT_F32, "");   /* clashes with the synthesized name */
  add_node(m->graph, "Clip", "clip", "x,,hi", "y");
  add_node(m->graph, "Dropout", "d", "y", "z,");
  add_node(m->graph, "MaxPool", "mp", "z", ",idx");
  add_output(m->graph, "z", DT_F32, NULL);
  add_output(m->graph, "idx", DT_I64, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  Node *clip = find_node(g, "clip");
  assert_int_equal(clip->n_in, 3);
  assert_ptr_equal(clip->in[1], g->none);
  assert_false(ir_has_input(clip, 1));
  assert_true(ir_has_input(clip, 2));
  Node *dn = find_node(g, "d");
  assert_int_equal(dn->n_out, 2);
  assert_string_equal(dn->out[0]->name, "z");
  Value *mask = dn->out[1];
  assert_ptr_equal(mask->producer, dn);
  assert_int_equal(mask->out_index, 1);
  assert_string_equal(mask->name, "d_out1_1");
  assert_int_equal(ir_value_find(g, "d_out1")->kind, VK_INPUT);
  Node *mp = find_node(g, "mp");
  assert_string_equal(mp->out[1]->name, "idx");
  assert_int_equal(mp->out[1]->dt, DT_I64);
  assert_string_equal(mp->out[0]->name, "mp_out0");
  ir_graph_free(g);

  /* A synthesized name is not a definition a node can use. */
  m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Dropout", "d", "x", "y,");
  add_node(m->graph, "Relu", "r", "d_out1", "z");
  add_output(m->graph, "z", DT_F32, NULL);
  diag_free(&d);
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_true(has_msg(&d, "node 'r' (Relu): input 'd_out1' is not defined"));
  diag_free(&d);
}

static void test_load_unknown_ops_still_load(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  Onnx__OperatorSetIdProto *ms = P(sizeof *ms);
  onnx__operator_set_id_proto__init(ms);
  ms->domain = S("com.microsoft");
  ms->has_version = 1, ms->version = 1;
  PUSH(m->opset_import, m->n_opset_import, ms);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "ms_relu", "x", "a")->domain = S("com.microsoft");
  add_node(m->graph, "NoSuchOp", "nso", "a", "b");
  add_node(m->graph, "Relu", "std_relu", "b", "c")->domain = S("ai.onnx");
  add_output(m->graph, "c", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  assert_int_equal(g->n_imports, 2);
  assert_string_equal(g->imports[1].domain, "com.microsoft");
  Node *n = find_node(g, "ms_relu");
  assert_int_equal(n->op, OP_Unknown_);
  assert_string_equal(n->op_type, "Relu");
  assert_string_equal(n->domain, "com.microsoft");
  n = find_node(g, "nso");
  assert_int_equal(n->op, OP_Unknown_);
  assert_string_equal(n->op_type, "NoSuchOp");
  assert_string_equal(n->domain, "");
  n = find_node(g, "std_relu");
  assert_int_equal(n->op, OP_Relu);
  assert_string_equal(n->domain, "");
  ir_graph_free(g);
  diag_free(&d);
}

static void test_load_missing_opset_warns(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(0);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "r", "x", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  assert_int_equal(g->opset, 1);
  assert_int_equal(d.n_warnings, 1);
  assert_true(has_msg(&d, "warning: model imports no opset for the default domain"));
  ir_graph_free(g);
  diag_free(&d);
}

/* ---- malformed models ----------------------------------------------------- */

static Onnx__ModelProto *small_model(void) {
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "1,3,224,224");
  float w[16] = {0};
  add_init(m->graph, tensor_raw("w", DT_F32, "16", w, sizeof w));
  add_node(m->graph, "Relu", "r", "x", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  return m;
}

static void test_load_truncated_buffer_fails(void **state) {
  (void)state;
  size_t n;
  uint8_t *buf = pack(small_model(), &n);
  size_t cuts[] = {n / 2, n - 1, 3};
  for (int i = 0; i < 3; i++) {
    Diag d;
    diag_init(&d, "model.onnx", NULL);
    assert_null(fe_onnx_load_buffer(buf, cuts[i], "model.onnx", &d));
    assert_int_equal(d.n_errors, 1);
    assert_string_equal(diag_last(&d),
                        "model.onnx: cannot parse: not a valid ONNX model (malformed protobuf)");
    diag_free(&d);
  }
}

static void test_load_garbage_fails(void **state) {
  (void)state;
  const char *junk[] = {"\xff\xff\xff\xff\xff\xff\xff\xff", "hello, this is not a model\n",
                        "\x0a\x7f\x01"};
  for (int i = 0; i < 3; i++) {
    Diag d;
    diag_init(&d, "model.onnx", NULL);
    assert_null(fe_onnx_load_buffer(junk[i], strlen(junk[i]), "model.onnx", &d));
    assert_int_equal(d.n_errors, 1);
    assert_true(has_msg(&d, "model.onnx: cannot parse: not a valid ONNX model"));
    diag_free(&d);
  }
}

static void test_load_empty_or_missing_file_fails(void **state) {
  (void)state;
  char *dir = tmp_dir();
  char *path = path_in(dir, "empty.onnx");
  write_file(path, "", 0);
  Diag d;
  diag_init(&d, path, NULL);
  assert_null(fe_onnx_load(path, &d));
  assert_int_equal(d.n_errors, 1);
  assert_true(has_msg(&d, "cannot parse: empty file"));
  diag_free(&d);

  diag_init(&d, "missing.onnx", NULL);
  assert_null(fe_onnx_load(path_in(dir, "missing.onnx"), &d));
  assert_int_equal(d.n_errors, 1);
  assert_true(has_msg(&d, strerror(ENOENT)));
  diag_free(&d);

  /* A model written to disk loads the same as from memory. */
  size_t n;
  uint8_t *buf = pack(small_model(), &n);
  char *good = path_in(dir, "good.onnx");
  write_file(good, buf, n);
  diag_init(&d, good, NULL);
  Graph *g = fe_onnx_load(good, &d);
  assert_loads(g, &d);
  assert_string_equal(g->file, good);
  ir_graph_free(g);
  diag_free(&d);
  const char *files[] = {"empty.onnx", "good.onnx"};
  cleanup(dir, files, 2, NULL, 0);
}

static void test_load_undefined_inputs_all_reported(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "n1", "nope", "a");
  add_node(m->graph, "Add", "n2", "a,nada", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_int_equal(d.n_errors, 2);
  assert_string_equal(d.msgs[0], "model.onnx: node 'n1' (Relu): input 'nope' is not defined");
  assert_string_equal(d.msgs[1], "model.onnx: node 'n2' (Add): input 'nada' is not defined");
  diag_free(&d);
}

static void test_load_duplicate_definitions_fail(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "a", "x", "y");
  add_node(m->graph, "Neg", "b", "x", "y");
  add_node(m->graph, "Neg", "c", "y", "x");
  add_output(m->graph, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_int_equal(d.n_errors, 2);
  assert_string_equal(d.msgs[0], "model.onnx: node 'b' (Neg): output 'y' is already defined "
                                 "by node 'a'");
  assert_true(has_msg(&d, "node 'c' (Neg): output 'x' is already defined as a graph input"));
  diag_free(&d);

  m = model_new(13);
  float w = 1;
  add_init(m->graph, tensor_raw("w", DT_F32, "", &w, 4));
  add_init(m->graph, tensor_raw("w", DT_F32, "", &w, 4));
  add_input(m->graph, "x", DT_F32, "2");
  add_input(m->graph, "x", DT_F32, "2");
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_true(has_msg(&d, "initializer 'w' is defined more than once"));
  assert_true(has_msg(&d, "graph input 'x' is listed more than once"));
  diag_free(&d);
}

static void test_load_output_not_produced_fails(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "r", "x", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  add_output(m->graph, "ghost", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_int_equal(d.n_errors, 1);
  assert_string_equal(diag_last(&d),
                      "model.onnx: graph output 'ghost' is not produced by any node");
  diag_free(&d);
}

static void test_load_bad_input_types_fail(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "a", 99, "2");
  add_input(m->graph, "b", DT_F32, "2,-3");
  Onnx__ValueInfoProto *seq = vinfo("c", -1, NULL);
  seq->type = P(sizeof *seq->type);
  onnx__type_proto__init(seq->type);
  seq->type->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
  seq->type->sequence_type = P(sizeof *seq->type->sequence_type);
  onnx__type_proto__sequence__init(seq->type->sequence_type);
  PUSH(m->graph->input, m->graph->n_input, seq);
  add_node(m->graph, "Sum", "s", "a,b,c", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_int_equal(d.n_errors, 3);   /* the uses of a, b, c still link */
  assert_true(has_msg(&d, "graph input 'a' has invalid element type 99"));
  assert_true(has_msg(&d, "graph input 'b' has negative dimension -3"));
  assert_true(has_msg(&d, "graph input 'c' has a sequence type; only tensors are supported"));
  diag_free(&d);
}

static void test_load_bad_tensor_data_fails(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  /* dims whose product overflows int64, and whose byte size overflows */
  add_init(m->graph, tensor("big", DT_F32, "1099511627776,1099511627776"));
  add_init(m->graph, tensor("big2", DT_F32, "2305843009213693952"));
  float two[2] = {1, 2};
  add_init(m->graph, tensor_raw("short", DT_F32, "3", two, sizeof two));
  Onnx__TensorProto *t = tensor("wrongfield", DT_F32, "2");
  set_int64s(t, 2, (int64_t[]){1, 2});
  add_init(m->graph, t);
  t = tensor("count", DT_I32, "3");
  set_int32s(t, 2, (int32_t[]){1, 2});
  add_init(m->graph, t);
  add_init(m->graph, tensor("nodata", DT_F32, "2"));
  add_init(m->graph, tensor("badtype", 77, "2"));
  add_init(m->graph, tensor_raw("rawstr", DT_STRING, "1", "a", 1));
  add_init(m->graph, tensor("rank17", DT_F32, "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1"));
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_int_equal(d.n_errors, 9);
  assert_true(has_msg(&d, "initializer 'big': size of a f32 tensor with dims "
                          "[1099511627776,1099511627776] overflows"));
  assert_true(has_msg(&d, "initializer 'big2': size of a f32 tensor"));
  assert_true(has_msg(&d, "initializer 'short': raw_data has 8 bytes, expected 12"));
  assert_true(has_msg(&d, "initializer 'wrongfield': data is in int64_data"));
  assert_true(has_msg(&d, "initializer 'count': int32_data has 2 entries, expected 3"));
  assert_true(has_msg(&d, "initializer 'nodata': has no data"));
  assert_true(has_msg(&d, "initializer 'badtype': invalid data type 77"));
  assert_true(has_msg(&d, "initializer 'rawstr': string tensors must use string_data"));
  assert_true(has_msg(&d, "initializer 'rank17': rank 17 exceeds"));
  diag_free(&d);
}

static Onnx__SparseTensorProto *sparse(const char *name, const char *dims, int nnz,
                                       const float *vals, const char *idims,
                                       const int64_t *idx, int n_idx) {
  Onnx__SparseTensorProto *sp = P(sizeof *sp);
  onnx__sparse_tensor_proto__init(sp);
  char nnz_s[16];
  snprintf(nnz_s, sizeof nnz_s, "%d", nnz);
  sp->values = tensor(name, DT_F32, nnz_s);
  set_floats(sp->values, (size_t)nnz, vals);
  sp->indices = tensor(NULL, DT_I64, idims);
  set_int64s(sp->indices, (size_t)n_idx, idx);
  char **parts;
  size_t n = split(dims, &parts);
  for (size_t i = 0; i < n; i++)
    PUSH(sp->dims, sp->n_dims, (int64_t)strtoll(parts[i], NULL, 10));
  return sp;
}

static void test_load_sparse_initializers(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  Onnx__GraphProto *gp = m->graph;
  PUSH(gp->sparse_initializer, gp->n_sparse_initializer,
       sparse("lin", "2,3", 2, (float[]){7, 8}, "2", (int64_t[]){1, 5}, 2));
  PUSH(gp->sparse_initializer, gp->n_sparse_initializer,
       sparse("coo", "2,3", 2, (float[]){7, 8}, "2,2", (int64_t[]){0, 1, 1, 2}, 4));
  add_node(gp, "Add", "a", "lin,coo", "y");
  add_output(gp, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  const float want[6] = {0, 7, 0, 0, 0, 8};
  assert_memory_equal(const_of(g, "lin")->data, want, sizeof want);
  assert_memory_equal(const_of(g, "coo")->data, want, sizeof want);
  assert_int_equal(const_of(g, "coo")->shape.rank, 2);
  ir_graph_free(g);
  diag_free(&d);

  m = model_new(13);
  PUSH(m->graph->sparse_initializer, m->graph->n_sparse_initializer,
       sparse("oob", "2,3", 1, (float[]){7}, "1", (int64_t[]){6}, 1));
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_true(has_msg(&d, "sparse initializer 'oob': sparse index 6 is out of range"));
  diag_free(&d);
}

/* Random damage to a valid model never crashes the loader (run under ASan in
 * the sanitizer build): each mutant either loads or reports an error. */
static void test_load_mutated_models_never_crash(void **state) {
  (void)state;
  Onnx__ModelProto *m = small_model();
  Onnx__TensorProto *t = tensor("k", DT_I64, "2");
  set_int64s(t, 2, (int64_t[]){1, -1});
  add_init(m->graph, t);
  Onnx__GraphProto *br = graph_new("branch");
  add_node(br, "Add", "add", "y,k", "o");
  add_output(br, "o", DT_F32, "1,?");
  Onnx__NodeProto *n = add_node(m->graph, "If", "if", "c", "z,");
  add_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = br;
  add_attr(n, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = br;
  Onnx__AttributeProto *a = add_attr(n, "ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = 2, a->ints = (int64_t[]){3, 4};
  add_input(m->graph, "c", DT_BOOL, "");
  add_output(m->graph, "z", DT_F32, "N");
  size_t len;
  const uint8_t *orig = pack(m, &len);
  uint8_t *buf = P(len + 8);
  uint32_t seed = 12345;
  int loaded = 0;
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(buf, orig, len);
    size_t n_bytes = len;
    int edits = 1 + iter % 4;
    for (int e = 0; e < edits; e++) {
      seed = seed * 1103515245u + 12345u;
      size_t pos = (seed >> 8) % n_bytes;
      uint8_t val = (uint8_t)(seed >> 24);
      switch ((seed >> 4) % 4) {
      case 0: buf[pos] ^= (uint8_t)(1u << (val % 8)); break;
      case 1: buf[pos] = val; break;
      case 2: buf[pos] = (uint8_t)(val | 0x80); break;   /* long varints, huge lengths */
      default: n_bytes = pos + 1; break;                 /* truncate */
      }
    }
    Diag d;
    diag_init(&d, "model.onnx", NULL);
    Graph *g = fe_onnx_load_buffer(buf, n_bytes, "mem/model.onnx", &d);
    assert_true((g != NULL) == (d.n_errors == 0));
    loaded += g != NULL;
    ir_graph_free(g);
    diag_free(&d);
  }
  assert_true(loaded > 0);   /* some damage is harmless (a changed weight) */
}

/* ---- external data --------------------------------------------------------- */

static void test_external_data_inside_folder_loads(void **state) {
  (void)state;
  char *dir = tmp_dir();
  mkdir(path_in(dir, "sub"), 0700);
  float head[4] = {-1, -1, -1, -1}, w[4] = {1, 2, 3, 4}, blob[8];
  memcpy(blob, head, sizeof head);
  memcpy(blob + 4, w, sizeof w);
  write_file(path_in(dir, "weights.bin"), blob, sizeof blob);
  write_file(path_in(dir, "sub/w2.bin"), w, sizeof w);
  Onnx__ModelProto *m = model_new(13);
  Onnx__TensorProto *t = tensor("w", DT_F32, "2,2");
  set_external(t, "weights.bin", "16", "16");
  add_init(m->graph, t);
  t = tensor("w2", DT_F32, "4");
  set_external(t, "./sub/w2.bin", NULL, NULL);
  add_init(m->graph, t);
  add_node(m->graph, "Add", "a", "w,w2", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load_as(m, path_in(dir, "model.onnx"), &d);
  assert_loads(g, &d);
  assert_memory_equal(const_of(g, "w")->data, w, sizeof w);
  assert_memory_equal(const_of(g, "w2")->data, w, sizeof w);
  ir_graph_free(g);

  /* The same through a file: relative to the model's folder, not the cwd. */
  size_t n;
  uint8_t *buf = pack(m, &n);
  write_file(path_in(dir, "model.onnx"), buf, n);
  g = fe_onnx_load(path_in(dir, "model.onnx"), &d);
  assert_loads(g, &d);
  assert_memory_equal(const_of(g, "w2")->data, w, sizeof w);
  ir_graph_free(g);
  diag_free(&d);
  const char *files[] = {"weights.bin", "sub/w2.bin", "model.onnx"};
  const char *subs[] = {"sub"};
  cleanup(dir, files, 3, subs, 1);
}

static void test_external_data_outside_folder_refused(void **state) {
  (void)state;
  char *dir = tmp_dir();
  mkdir(path_in(dir, "m"), 0700);
  float w[4] = {1, 2, 3, 4};
  write_file(path_in(dir, "x.bin"), w, sizeof w);
  write_file(path_in(dir, "m/short.bin"), w, 8);
  char *link = path_in(dir, "m/link.bin");
  assert_int_equal(symlink("../x.bin", link), 0);
  const char *locs[] = {"../x.bin", path_in(dir, "x.bin"), "link.bin", "sub/../../x.bin",
                        "nothere.bin", "short.bin"};
  const char *want[] = {"points outside the model's folder", "is absolute",
                        "resolves outside the model's folder", "points outside",
                        "cannot open external data file", "is too short"};
  for (int i = 0; i < 6; i++) {
    Onnx__ModelProto *m = model_new(13);
    Onnx__TensorProto *t = tensor("w", DT_F32, "4");
    set_external(t, locs[i], NULL, NULL);
    add_init(m->graph, t);
    add_output(m->graph, "w", DT_F32, NULL);
    Diag d;
    diag_init(&d, "model.onnx", NULL);
    assert_null(load_as(m, path_in(dir, "m/model.onnx"), &d));
    assert_int_equal(d.n_errors, 1);
    assert_true(has_msg(&d, "initializer 'w': "));
    assert_true(has_msg(&d, want[i]));
    diag_free(&d);
  }
  const char *files[] = {"x.bin", "m/short.bin", "m/link.bin"};
  const char *subs[] = {"m"};
  cleanup(dir, files, 3, subs, 1);
}

/* ---- fe_tensor_load ------------------------------------------------------ */

static void test_tensor_load_reads_tensor_proto_file(void **state) {
  (void)state;
  char *dir = tmp_dir();
  float v[4] = {1.5f, -2, 3, 0};
  Onnx__TensorProto *t = tensor("input_0", DT_F32, "2,2");
  t->has_raw_data = 1;
  t->raw_data = (ProtobufCBinaryData){sizeof v, (uint8_t *)v};
  size_t n = onnx__tensor_proto__get_packed_size(t);
  uint8_t *buf = P(n);
  onnx__tensor_proto__pack(t, buf);
  char *path = path_in(dir, "input_0.pb");
  write_file(path, buf, n);
  write_file(path_in(dir, "bad.pb"), "\xff\xff\xff", 3);

  Graph *g = ir_graph_new("model.onnx");
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  const char *name = NULL;
  Tensor *x = fe_tensor_load(g, path, &name, &d);
  assert_non_null(x);
  assert_int_equal(d.n_errors, 0);
  assert_string_equal(name, "input_0");
  assert_int_equal(x->dt, DT_F32);
  assert_int_equal(x->shape.rank, 2);
  assert_memory_equal(x->data, v, sizeof v);

  assert_null(fe_tensor_load(g, path_in(dir, "bad.pb"), &name, &d));
  assert_true(has_msg(&d, "bad.pb': not a valid TensorProto"));
  assert_string_equal(name, "");
  assert_null(fe_tensor_load(g, path_in(dir, "none.pb"), NULL, &d));
  assert_true(has_msg(&d, strerror(ENOENT)));
  assert_int_equal(d.n_errors, 2);
  ir_graph_free(g);
  diag_free(&d);
  const char *files[] = {"input_0.pb", "bad.pb"};
  cleanup(dir, files, 2, NULL, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_load_valid_inputs_and_initializers, pool_free),
      cmocka_unit_test_teardown(test_load_initializer_listed_as_input_is_weight, pool_free),
      cmocka_unit_test_teardown(test_load_attributes_of_every_kind, pool_free),
      cmocka_unit_test_teardown(test_load_nested_subgraph_captures, pool_free),
      cmocka_unit_test_teardown(test_load_out_of_order_nodes_link, pool_free),
      cmocka_unit_test_teardown(test_load_omitted_optional_inputs_and_outputs, pool_free),
      cmocka_unit_test_teardown(test_load_unknown_ops_still_load, pool_free),
      cmocka_unit_test_teardown(test_load_missing_opset_warns, pool_free),
      cmocka_unit_test_teardown(test_load_truncated_buffer_fails, pool_free),
      cmocka_unit_test_teardown(test_load_garbage_fails, pool_free),
      cmocka_unit_test_teardown(test_load_empty_or_missing_file_fails, pool_free),
      cmocka_unit_test_teardown(test_load_undefined_inputs_all_reported, pool_free),
      cmocka_unit_test_teardown(test_load_duplicate_definitions_fail, pool_free),
      cmocka_unit_test_teardown(test_load_output_not_produced_fails, pool_free),
      cmocka_unit_test_teardown(test_load_bad_input_types_fail, pool_free),
      cmocka_unit_test_teardown(test_load_bad_tensor_data_fails, pool_free),
      cmocka_unit_test_teardown(test_load_sparse_initializers, pool_free),
      cmocka_unit_test_teardown(test_load_mutated_models_never_crash, pool_free),
      cmocka_unit_test_teardown(test_external_data_inside_folder_loads, pool_free),
      cmocka_unit_test_teardown(test_external_data_outside_folder_refused, pool_free),
      cmocka_unit_test_teardown(test_tensor_load_reads_tensor_proto_file, pool_free),
  };
  return cmocka_run_group_tests_name("frontend", tests, NULL, NULL);
}
