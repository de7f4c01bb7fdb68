/* test_emit_cuda.c - unit tests of the CUDA emitter (codegen/emit_cuda*.c):
 * the files and ABI it writes, which nodes get parallel kernels and which the
 * single-thread fallback, the host code's launch path, and its error paths.
 * No toolkit needed: the text is checked, not compiled (tests/cuda.cmake
 * compiles the conformance cases with NVRTC). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen.h"
#include "passes.h"

static char *slurp(const char *dir, const char *file) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  Buf b;
  buf_init(&b);
  char tmp[4096];
  size_t k;
  while ((k = fread(tmp, 1, sizeof tmp, f)) > 0)
    buf_write(&b, tmp, k);
  fclose(f);
  return b.s;
}

static void rmdir_all(const char *dir) {
  const char *files[] = {"m.c", "m.h", "m.cu", "m_weights.c", "m_weights.h", "onnxc_rt.h", "onnxc_cuda_rt.h"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* x[2,3] + b[3] -> Relu -> MatMul(w[3,4]) -> Softmax -> Transpose -> Hardmax -> y[4,2] */
static Graph *small_graph(void) {
  Graph *g = ir_graph_new("t.onnx");
  g->opset = 13;
  int64_t xd[2] = {2, 3}, bd[1] = {3}, wd[2] = {3, 4};
  Shape xs = shape_make(2, xd), bs = shape_make(1, bd), ws = shape_make(2, wd);
  Value *x = ir_input_add(g, "x", DT_F32, &xs);
  Tensor *bt = ir_tensor_new(g, DT_F32, &bs, NULL), *wt = ir_tensor_new(g, DT_F32, &ws, NULL);
  for (int64_t i = 0; i < bt->numel; i++)
    tensor_set_f64(bt, i, 0.5 * (double)i);
  for (int64_t i = 0; i < wt->numel; i++)
    tensor_set_f64(wt, i, 1.0 - 0.1 * (double)i);
  Value *b = ir_const_new(g, "b", bt), *w = ir_const_new(g, "w", wt);
  Value *in[2] = {x, b};
  Node *add = ir_node_new(g, OP_Add, NULL, "add*/", 2, in, 1);
  Node *relu = ir_node_new(g, OP_Relu, NULL, "relu", 1, add->out, 1);
  Value *mm_in[2] = {relu->out[0], w};
  Node *mm = ir_node_new(g, OP_MatMul, NULL, "mm", 2, mm_in, 1);
  Node *sm = ir_node_new(g, OP_Softmax, NULL, "sm", 1, mm->out, 1);
  Node *tr = ir_node_new(g, OP_Transpose, NULL, "tr", 1, sm->out, 1);
  Node *hm = ir_node_new(g, OP_Hardmax, NULL, "hm", 1, tr->out, 1);
  hm->out[0]->name = "y";
  ir_output_add(g, hm->out[0]);
  return g;
}

static bool compile_graph(Graph *g, const char *name, const char *dir, Diag *d) {
  Plan plan;
  PipelineOpts po = {2, NULL, 0, NULL, NULL, true, true};
  if (!passes_run(g, &po, &plan, d))
    return false;
  CodegenOpts co = {name, "t.onnx", WEIGHTS_C, NULL};
  return codegen_cuda(g, &plan, &co, dir, d);
}

static void test_kernels_parallel_and_fallback(void **state) {
  (void)state;
  Graph *g = small_graph();
  char dir[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(compile_graph(g, "m", dir, &d));
  char *cu = slurp(dir, "m.cu");
  assert_non_null(cu);
  assert_non_null(strstr(cu, "#include \"onnxc_cuda_rt.h\""));
  /* Named and commented after the node; a comment terminator in a name is defused. */
  assert_non_null(strstr(cu, "/* node 'add* /' (Add) */"));
  assert_non_null(strstr(cu, "extern \"C\" __global__ void node0_Add("));
  /* Broadcast operand: its offset is the output index modulo 3. */
  assert_non_null(strstr(cu, "X1[(i % 3)]"));
  assert_non_null(strstr(cu, "__shared__ float ta[16][17]"));
  assert_non_null(strstr(cu, "Softmax: one block per row"));
  assert_non_null(strstr(cu, "Transpose: one thread per output element"));
  /* Hardmax has no parallel kernel: the C body in a single-thread kernel. */
  char *tr = strstr(cu, "_Hardmax_body(");
  assert_non_null(tr);
  assert_non_null(strstr(tr, "single thread"));
  assert_non_null(strstr(tr, "onnxc_cuda_report(onnxc_status"));
  free(cu);
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

static void test_host_code_and_header(void **state) {
  (void)state;
  Graph *g = small_graph();
  char dir[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(compile_graph(g, "m", dir, &d));
  char *h = slurp(dir, "m.h"), *c = slurp(dir, "m.c");
  assert_non_null(h);
  assert_non_null(c);
  assert_non_null(strstr(h, "#define M_ARENA_BYTES "));
  assert_non_null(strstr(h, "typedef struct m_ctx m_ctx;"));
  assert_non_null(strstr(h, "int m_init(m_ctx **ctx);"));
  assert_non_null(strstr(h, "int m_run(m_ctx *ctx, void *stream, void *arena, const float *in_x, float *out_y);"));
  assert_non_null(strstr(h, "int m_status(m_ctx *ctx, void *stream);"));
  assert_non_null(strstr(h, "void m_free(m_ctx *ctx);"));
  /* Weights are uploaded in init at 256-byte aligned offsets; run only launches. */
  assert_non_null(strstr(c, "cuMemcpyHtoD(ctx->w + 0, m_w0, 12u)"));
  assert_non_null(strstr(c, "cuMemcpyHtoD(ctx->w + 256, m_w1, 48u)"));
  char *run = strstr(c, "ONNXC_API int m_run(");
  assert_non_null(run);
  assert_null(strstr(run, "cuMemAlloc"));
  assert_null(strstr(run, "malloc"));
  assert_non_null(strstr(run, "cuLaunchKernel(ctx->fn[0], 1u, 1u, 1u, 256, 1, 1, 0, s, args, NULL)"));
  assert_non_null(strstr(run, "return fail(ctx, r);"));
  free(h);
  free(c);
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

static void test_bad_name_is_an_error(void **state) {
  (void)state;
  Graph *g = small_graph();
  char dir[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_false(compile_graph(g, "9bad", dir, &d));
  assert_int_equal(d.n_errors, 1);
  assert_non_null(strstr(diag_last(&d), "not a valid C identifier"));
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

static void test_unwritable_dir_is_an_error(void **state) {
  (void)state;
  Graph *g = small_graph();
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_false(compile_graph(g, "m", "/nonexistent/onnxc-cuda", &d));
  assert_true(d.n_errors >= 1);
  assert_non_null(strstr(diag_last(&d), "cannot write"));
  diag_free(&d);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernels_parallel_and_fallback),
      cmocka_unit_test(test_host_code_and_header),
      cmocka_unit_test(test_bad_name_is_an_error),
      cmocka_unit_test(test_unwritable_dir_is_an_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
