/* test_codegen.c - unit tests of the C emitter framework: literals, the
 * header ABI, weights written bit-exactly, and its error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen.h"
#include "codegen_util.h"
#include "passes.h"

static char *slurp(const char *dir, const char *file) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  return cu_slurp(path);
}

static void rmdir_all(const char *dir) {
  const char *files[] = {"m.c", "m.h", "m_weights.c", "m_weights.h", "onnxc_rt.h"};
  for (size_t i = 0; i < 5; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* input "x.0" -> Add(x, w) -> output "out/y"; w holds special float values. */
static Graph *graph_with_weights(const float *w, int n) {
  Graph *g = ir_graph_new("t.onnx");
  g->opset = 13;
  int64_t dims[1] = {n};
  Shape s = shape_make(1, dims);
  Value *x = ir_input_add(g, "x.0", DT_F32, &s);
  Tensor *t = ir_tensor_new(g, DT_F32, &s, NULL);
  memcpy(t->data, w, (size_t)n * sizeof(float));
  Value *wv = ir_const_new(g, "w", t);
  Value *in[2] = {x, wv};
  Node *add = ir_node_new(g, OP_Add, NULL, "add", 2, in, 1);
  add->out[0]->name = "out/y";
  ir_output_add(g, add->out[0]);
  return g;
}

static bool compile_graph(Graph *g, const char *dir, Diag *d) {
  Plan plan;
  Target t;
  codegen_target(&t, "c", 1);
  PipelineOpts po = {.opt_level = 2, .verify = true, .target = &t};
  if (!passes_run(g, &po, &plan, d))
    return false;
  CodegenOpts co = {.name = "m", .model_path = "t.onnx", .weights = WEIGHTS_C, .weights_section = NULL, .threads = 1};
  return codegen_c(g, &plan, &co, dir, d);
}

static void test_weights_are_bit_exact(void **state) {
  (void)state;
  const float w[] = {0.0f, -0.0f, 1.0f, -2.5f, 3.4028235e38f, 1.4e-45f, 1.1754942e-38f,
                     (float)INFINITY, -(float)INFINITY, 0.1f, 123456.789f, -7.0e-20f};
  int n = (int)(sizeof w / sizeof w[0]);
  Graph *g = graph_with_weights(w, n);
  char dir[] = "/tmp/onnxc-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(compile_graph(g, dir, &d));
  char *text = slurp(dir, "m_weights.c");
  assert_non_null(text);
  /* Parse the initializer back: hex literals and the INFINITY spellings. */
  char *p = strchr(strstr(text, "m_w0["), '{') + 1;
  for (int i = 0; i < n; i++) {
    while (*p == ' ' || *p == '\n')
      p++;
    float v;
    if (strncmp(p, "((float)INFINITY)", 17) == 0)
      v = (float)INFINITY;
    else if (strncmp(p, "(-(float)INFINITY)", 18) == 0)
      v = -(float)INFINITY;
    else
      v = strtof(p, NULL);
    assert_memory_equal(&v, &w[i], sizeof v);
    p = strchr(p, ',') + 1;
  }
  free(text);
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

static void test_header_abi(void **state) {
  (void)state;
  const float w[] = {1, 2, 3};
  Graph *g = graph_with_weights(w, 3);
  char dir[] = "/tmp/onnxc-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(compile_graph(g, dir, &d));
  char *h = slurp(dir, "m.h");
  assert_non_null(strstr(h, "#define M_ARENA_BYTES 0"));
  assert_non_null(strstr(h, "int m_run(void *arena, const float *in_x_0, float *out_out_y);"));
  assert_non_null(strstr(h, "#define M_INPUT0_NUMEL 3"));
  char *c = slurp(dir, "m.c");
  assert_non_null(strstr(c, "/* node 'add' (Add) */"));
  assert_null(strstr(c, "malloc"));
  assert_null(strstr(c, "stdio"));
  /* The model description (docs/abi.md): declared in m.h, constant tables in m.c. */
  assert_non_null(strstr(h, "const struct onnxc_model_info *m_info(void);"));
  assert_non_null(strstr(c, "{\"x.0\", m_info_i0_dims, 3, 12, 1, 32, ONNXC_KIND_TENSOR, 1, 0u},"));
  assert_non_null(strstr(c, "{\"out/y\", m_info_o0_dims, 3, 12, 1, 32, ONNXC_KIND_TENSOR, 1, 0u},"));
  assert_non_null(strstr(c, "ONNXC_API const onnxc_model_info *m_info(void)"));
  free(h);
  free(c);
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

/* Names in the description are C string literals whatever bytes they hold. */
static void test_info_escapes_names(void **state) {
  (void)state;
  const float w[] = {1, 2};
  Graph *g = graph_with_weights(w, 2);
  g->inputs[0]->name = "a\"b\\c?\?=\n";
  char dir[] = "/tmp/onnxc-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(compile_graph(g, dir, &d));
  char *c = slurp(dir, "m.c");
  assert_non_null(strstr(c, "{\"a\\\"b\\\\c\\?\\?=\\012\", m_info_i0_dims, 2,"));
  free(c);
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

static void test_rejects_bad_name_and_types(void **state) {
  (void)state;
  const float w[] = {1};
  Graph *g = graph_with_weights(w, 1);
  Plan plan;
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  Target t;
  codegen_target(&t, "c", 1);
  PipelineOpts po = {.opt_level = 2, .verify = true, .target = &t};
  assert_true(passes_run(g, &po, &plan, &d));
  CodegenOpts co = {.name = "3bad-name", .model_path = "t.onnx", .weights = WEIGHTS_C, .weights_section = NULL, .threads = 1};
  assert_false(codegen_c(g, &plan, &co, "/nonexistent", &d));
  assert_non_null(strstr(diag_last(&d), "not a valid C identifier"));
  co.name = "ok";
  assert_false(codegen_c(g, &plan, &co, "/nonexistent/dir", &d));
  assert_non_null(strstr(diag_last(&d), "cannot write"));
  g->inputs[0]->dt = DT_STRING;
  assert_false(codegen_c(g, &plan, &co, "/tmp", &d));
  assert_non_null(strstr(diag_last(&d), "does not support"));
  diag_free(&d);
  ir_graph_free(g);
}

static void test_literals(void **state) {
  (void)state;
  char b[64];
  assert_string_equal(ec_literal(DT_F32, 1.0, b, sizeof b), "1.0f");
  assert_string_equal(ec_literal(DT_F32, 0.5, b, sizeof b), "0.5f");
  assert_string_equal(ec_literal(DT_F64, 2.0, b, sizeof b), "2.0");
  assert_string_equal(ec_literal(DT_F32, -INFINITY, b, sizeof b), "(-(float)INFINITY)");
  assert_string_equal(ec_literal(DT_I64, -9223372036854775807.0 - 1.0, b, sizeof b), "(-9223372036854775807LL - 1)");
  assert_string_equal(ec_literal(DT_I32, 7, b, sizeof b), "7");
  int64_t st[3];
  int64_t dims[3] = {2, 3, 4};
  Shape s = shape_make(3, dims);
  ec_strides(&s, st);
  assert_int_equal(st[0], 12);
  assert_int_equal(st[1], 4);
  assert_int_equal(st[2], 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_weights_are_bit_exact),
      cmocka_unit_test(test_header_abi),
      cmocka_unit_test(test_info_escapes_names),
      cmocka_unit_test(test_rejects_bad_name_and_types),
      cmocka_unit_test(test_literals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
