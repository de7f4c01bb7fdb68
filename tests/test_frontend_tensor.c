/* test_frontend_tensor.c - unit tests of the ONNX frontend: tensor data.
 *
 * Typed fields and raw_data for every element type, size checks, sparse
 * tensors, external data (inside and outside the model's folder) and
 * fe_tensor_load, on models built with the helpers in frontend_util.c.
 */
#include "frontend_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Each element type read from raw_data or from the typed field onnx.proto
 * assigns to it (int32_data packs 4-bit types two to an entry). */
static void test_tensor_fields_of_every_type(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  Onnx__GraphProto *gp = m->graph;
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
  t = tensor("u2", DT_U2, "5");   /* 3, 2, 1, 0 | 3: four per entry, low bits first */
  set_int32s(t, 2, (int32_t[]){0x1b, 0x03});
  add_init(gp, t);
  t = tensor("bf", DT_BF16, "1");
  set_int32s(t, 1, (int32_t[]){0x3fc0});
  add_init(gp, t);

  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
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
  k = const_of(g, "u2");
  assert_int_equal(k->nbytes, 2);
  assert_memory_equal(k->data, ((uint8_t[]){0x1b, 0x03}), 2);
  k = const_of(g, "bf");
  assert_true(tensor_get_f64(k, 0) == 1.5);

  ir_graph_free(g);
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
      cmocka_unit_test_teardown(test_tensor_fields_of_every_type, pool_free),
      cmocka_unit_test_teardown(test_load_bad_tensor_data_fails, pool_free),
      cmocka_unit_test_teardown(test_load_sparse_initializers, pool_free),
      cmocka_unit_test_teardown(test_external_data_inside_folder_loads, pool_free),
      cmocka_unit_test_teardown(test_external_data_outside_folder_refused, pool_free),
      cmocka_unit_test_teardown(test_tensor_load_reads_tensor_proto_file, pool_free),
  };
  return cmocka_run_group_tests_name("frontend_tensor", tests, NULL, NULL);
}
