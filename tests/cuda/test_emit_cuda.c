/* test_emit_cuda.c - unit tests of the CUDA emitter (codegen/cuda/emit_cuda*.c):
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
#include "../codegen_util.h"
#include "passes.h"

static char *slurp(const char *dir, const char *file) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  return cu_slurp(path);
}

static void rmdir_all(const char *dir) {
  const char *files[] = {"m.c", "m.h", "m.cu", "m_weights.c", "m_weights.h", "onnxc_rt.h", "onnxc_cuda_rt.h",
                         "onnxc_image.h"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* x[2,3] + b[3] -> Relu (one fused kernel) -> MatMul(w[3,4]) -> Softmax -> Transpose -> Hardmax -> y[4,2] */
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
  Node *relu = ir_node_new(g, OP_Relu, NULL, "relu*/", 1, add->out, 1);
  Value *mm_in[2] = {relu->out[0], w};
  Node *mm = ir_node_new(g, OP_MatMul, NULL, "mm", 2, mm_in, 1);
  Node *sm = ir_node_new(g, OP_Softmax, NULL, "sm", 1, mm->out, 1);
  Node *tr = ir_node_new(g, OP_Transpose, NULL, "tr", 1, sm->out, 1);
  Node *hm = ir_node_new(g, OP_Hardmax, NULL, "hm", 1, tr->out, 1);
  hm->out[0]->name = "y";
  ir_output_add(g, hm->out[0]);
  return g;
}

/* -O2, as onnxc; no_batch: every kernel its own launch (as at -O0). */
static bool compile_graph_b(Graph *g, const char *name, const char *dir, Diag *d, bool no_batch, Plan *out) {
  Plan plan;
  Target t;
  codegen_target(&t, "cuda", 1);
  PipelineOpts po = {.opt_level = 2, .verify = true, .target = &t};
  if (!passes_run(g, &po, &plan, d))
    return false;
  if (out)
    *out = plan;
  CodegenOpts co = {.name = name, .model_path = "t.onnx", .weights = WEIGHTS_C, .weights_section = NULL, .threads = 1,
                    .no_batch = no_batch};
  return codegen_cuda(g, &plan, &co, dir, d);
}

static bool compile_graph(Graph *g, const char *name, const char *dir, Diag *d) {
  return compile_graph_b(g, name, dir, d, false, NULL);
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
  /* Named and commented after the node; a comment terminator in a name is
   * defused. Add and Relu are one fused kernel, named after its last node. */
  assert_non_null(strstr(cu, "/* node 'relu* /' (FusedElementwise) */"));
  assert_non_null(strstr(cu, "extern \"C\" __global__ void node0_FusedElementwise("));
  assert_non_null(strstr(cu, "one thread per element: Add add_/, Relu relu_/ */"));
  assert_null(strstr(cu, "(Relu)"));
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

/* Equal(x, c) on strings, c a string constant; x is also an output. */
static void test_strings(void **state) {
  (void)state;
  Graph *g = ir_graph_new("t.onnx");
  g->opset = 19;
  int64_t xd[1] = {3};
  Shape xs = shape_make(1, xd);
  Value *x = ir_input_add(g, "x", DT_STRING, &xs);
  Tensor *ct = ir_tensor_new(g, DT_STRING, &xs, NULL);
  static const char *const words[3] = {"a", "bc", ""};
  for (int i = 0; i < 3; i++)
    ((const char **)ct->data)[i] = words[i];
  Value *c = ir_const_new(g, "c", ct);
  Value *in[2] = {x, c};
  Node *eq = ir_node_new(g, OP_Equal, NULL, "eq", 2, in, 1);
  eq->out[0]->name = "y";
  ir_output_add(g, eq->out[0]);
  ir_output_add(g, x);
  char dir[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(compile_graph(g, "m", dir, &d));
  char *cu = slurp(dir, "m.cu"), *h = slurp(dir, "m.h"), *c_src = slurp(dir, "m.c");
  assert_non_null(cu);
  /* The C target's string helpers, as device functions; the body runs in one thread. */
  assert_non_null(strstr(cu, "#define ONNXC_STR_FN static __device__ __attribute__((unused))\n"));
  assert_non_null(strstr(cu, "ONNXC_STR_FN int onnxc_str_cmp("));
  assert_non_null(strstr(cu, "node0_Equal_body(const onnxc_str *X0, const onnxc_str *X1, uint8_t *Y0)"));
  assert_non_null(strstr(cu, "single thread"));
  /* ABI: device arrays of device pointers. */
  assert_non_null(strstr(h, "typedef const char *onnxc_str;"));
  assert_non_null(strstr(h, "const onnxc_str *in_x, uint8_t *out_y, onnxc_str *out_x);"));
  /* The constant: characters and pointer table uploaded by init into the weights. */
  assert_non_null(strstr(c_src, "static const char str0[6] = {"));
  assert_non_null(strstr(c_src, "put_strings(ctx->w + 0, ctx->w + 256, str0, 6, 3)"));
  /* x as an output: its pointers copied. */
  assert_non_null(strstr(c_src, "cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)out_x, (CUdeviceptr)(uintptr_t)in_x, 24u, s)"));
  free(cu);
  free(h);
  free(c_src);
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

/* NonZero: an output of data-dependent extent, its dims a device array. */
static void test_dynamic_output(void **state) {
  (void)state;
  Graph *g = ir_graph_new("t.onnx");
  g->opset = 13;
  int64_t xd[2] = {2, 3};
  Shape xs = shape_make(2, xd);
  Value *x = ir_input_add(g, "x", DT_F32, &xs);
  Node *nz = ir_node_new(g, OP_NonZero, NULL, "nz", 1, &x, 1);
  nz->out[0]->name = "y";
  ir_output_add(g, nz->out[0]);
  char dir[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(compile_graph(g, "m", dir, &d));
  char *cu = slurp(dir, "m.cu"), *h = slurp(dir, "m.h"), *c = slurp(dir, "m.c");
  assert_non_null(strstr(cu, "node0_NonZero(const float *X0, int64_t *Y0, int64_t *D0, int *onnxc_status)"));
  assert_non_null(strstr(h, "#define M_OUTPUT0_NUMEL 12\n#define M_OUTPUT0_DYNAMIC 1\n#define M_OUTPUT0_RANK 2\n"));
  assert_non_null(strstr(h, "const float *in_x, int64_t *out_y, int64_t *out_y_dims);"));
  assert_non_null(strstr(c, "(CUdeviceptr)(uintptr_t)out_y, (CUdeviceptr)(uintptr_t)out_y_dims, ctx->status}"));
  assert_non_null(strstr(c, "|| !out_y_dims)"));
  assert_non_null(strstr(c, "(int64_t *)outputs[0], (int64_t *)outputs[1]);"));
  free(cu);
  free(h);
  free(c);
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

/* ImageDecoder: the C target's decoders, written as device code next to NAME.cu. */
static void test_image_decoder(void **state) {
  (void)state;
  Graph *g = ir_graph_new("t.onnx");
  g->opset = 20;
  int64_t xd[1] = {64}, yd[3] = {2, 2, 3};
  Shape xs = shape_make(1, xd), ys = shape_make(3, yd);
  Value *x = ir_input_add(g, "x", DT_U8, &xs);
  Node *dec = ir_node_new(g, OP_ImageDecoder, NULL, "dec", 1, &x, 1);
  dec->out[0]->name = "y";
  dec->out[0]->dt = DT_U8;
  dec->out[0]->shape = ys;
  ir_output_add(g, dec->out[0]);
  char dir[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(compile_graph(g, "m", dir, &d));
  char *cu = slurp(dir, "m.cu"), *ih = slurp(dir, "onnxc_image.h");
  assert_non_null(strstr(cu, "#include \"onnxc_image.h\""));
  assert_non_null(strstr(cu, "return onnxc_image_decode(X0, 64, Y0, 2, 2, 0, S, "));
  assert_non_null(ih);
  assert_non_null(strstr(ih, "#define ONNXC_NOINLINE __noinline__"));
  assert_non_null(strstr(ih, "\nstatic __device__ ONNXC_NOINLINE int onnxc_jpeg_decode("));
  assert_non_null(strstr(ih, "\nstatic __device__ const uint8_t onnxc_zigzag[64]"));
  assert_non_null(strstr(ih, "static const onnxc_jpeg zero = {};"));
  assert_null(strstr(ih, "\nstatic int "));
  free(cu);
  free(ih);
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

/* LRN: a parallel kernel (the C body's unrolled block of sums took NVRTC minutes). */
static void test_lrn_parallel(void **state) {
  (void)state;
  Graph *g = ir_graph_new("t.onnx");
  g->opset = 13;
  int64_t xd[4] = {1, 5, 3, 3};
  Shape xs = shape_make(4, xd);
  Value *x = ir_input_add(g, "x", DT_F32, &xs);
  Node *lrn = ir_node_new(g, OP_LRN, NULL, "lrn", 1, &x, 1);
  ir_attr_set_int(lrn, "size", 3);
  lrn->out[0]->name = "y";
  ir_output_add(g, lrn->out[0]);
  char dir[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(compile_graph(g, "m", dir, &d));
  char *cu = slurp(dir, "m.cu");
  assert_non_null(strstr(cu, "LRN: one thread per output element"));
  assert_non_null(strstr(cu, "const int64_t c1 = ch + 1 > 4 ? 4 : ch + 1;"));
  assert_null(strstr(cu, "single thread"));
  free(cu);
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

/* MaxPool (with Indices) and AveragePool get their parallel kernels; Cast,
 * whose C body is one flat loop (ec_flat_for), runs one thread per element. */
static void test_pools_and_flat_loops_parallel(void **state) {
  (void)state;
  Graph *g = ir_graph_new("t.onnx");
  g->opset = 13;
  int64_t xd[4] = {1, 2, 5, 5}, cd[1] = {600};
  Shape xs = shape_make(4, xd), cs = shape_make(1, cd);
  Value *x = ir_input_add(g, "x", DT_F32, &xs);
  Value *c = ir_input_add(g, "c", DT_I64, &cs);
  int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
  Node *mp = ir_node_new(g, OP_MaxPool, NULL, "mp", 1, &x, 2);
  ir_attr_set_ints(mp, "kernel_shape", k3, 2);
  ir_attr_set_ints(mp, "strides", s2, 2);
  ir_attr_set_ints(mp, "pads", p1, 4);
  Node *ap = ir_node_new(g, OP_AveragePool, NULL, "ap", 1, &x, 1);
  ir_attr_set_ints(ap, "kernel_shape", k3, 2);
  ir_attr_set_ints(ap, "pads", p1, 4);
  ir_attr_set_int(ap, "count_include_pad", 1);
  Node *cast = ir_node_new(g, OP_Cast, NULL, "cast", 1, &c, 1);
  ir_attr_set_int(cast, "to", 1);
  mp->out[0]->name = "y";
  mp->out[1]->name = "yi";
  ap->out[0]->name = "z";
  cast->out[0]->name = "w";
  ir_output_add(g, mp->out[0]);
  ir_output_add(g, mp->out[1]);
  ir_output_add(g, ap->out[0]);
  ir_output_add(g, cast->out[0]);
  char dir[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  /* each kernel its own launch (test_launch_batching batches these three) */
  assert_true(compile_graph_b(g, "m", dir, &d, true, NULL));
  char *cu = slurp(dir, "m.cu"), *host = slurp(dir, "m.c");
  assert_non_null(strstr(cu, "MaxPool: one thread per output element"));
  assert_non_null(strstr(cu, "Y1[i] = best < 0 ? -1 : rest * 25 + best;"));
  assert_non_null(strstr(cu, "AveragePool: one thread per output element"));
  assert_non_null(strstr(cu, "acc /= (float)(cnt0 * cnt1);"));
  assert_non_null(strstr(cu, "Cast: the C target's flat loop, one thread per element"));
  assert_non_null(strstr(cu, "ONNXC_CUDA_FOR(i, 600) {"));
  assert_null(strstr(cu, "single thread"));
  /* 600 elements: 3 blocks of 256 threads */
  assert_non_null(strstr(host, "3u, 1u, 1u, 256, 1, 1, 0, s, args"));
  free(cu);
  free(host);
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

/* fuse-layout on the CUDA target: attention's head Transposes are read and
 * written in place by the tiled MatMul kernel (no Transpose kernel left). */
static void test_matmul_reads_views(void **state) {
  (void)state;
  Graph *g = ir_graph_new("t.onnx");
  g->opset = 13;
  int64_t d[4] = {1, 4, 2, 3};
  Shape s = shape_make(4, d);
  Value *q = ir_input_add(g, "q", DT_F32, &s), *k = ir_input_add(g, "k", DT_F32, &s);
  int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1};
  Node *tq = ir_node_new(g, OP_Transpose, NULL, "tq", 1, &q, 1);
  ir_attr_set_ints(tq, "perm", p0213, 4);
  Node *tk = ir_node_new(g, OP_Transpose, NULL, "tk", 1, &k, 1);
  ir_attr_set_ints(tk, "perm", p0231, 4);
  Value *mm_in[2] = {tq->out[0], tk->out[0]};
  Node *mm = ir_node_new(g, OP_MatMul, NULL, "qk", 2, mm_in, 1);
  mm->out[0]->name = "y";
  ir_output_add(g, mm->out[0]);
  char dir[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag dg;
  diag_init(&dg, "t.onnx", stderr);
  assert_true(compile_graph(g, "m", dir, &dg));
  char *cu = slurp(dir, "m.cu");
  assert_non_null(strstr(cu, "operands and result read and written through views"));
  assert_null(strstr(cu, "(Transpose)"));
  /* A = q as [b, h, s, d]: rows (s) at stride 6, columns (d) at 1; B = k as
   * [b, h, d, s]: rows (d) at 1, columns (s) at 6 */
  assert_non_null(strstr(cu, "pa[i * 6 + ka * 1]"));
  assert_non_null(strstr(cu, "pb[kb * 1 + j * 6]"));
  free(cu);
  diag_free(&dg);
  rmdir_all(dir);
  ir_graph_free(g);
}

/* The residual Add after a Conv is folded into the CUDA conv kernel too
 * (Target.fuse_residual), added before the Relu. */
static void test_conv_residual(void **state) {
  (void)state;
  Graph *g = ir_graph_new("t.onnx");
  g->opset = 13;
  int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {2, 2, 3, 3};
  Shape xs = shape_make(4, xd), ws = shape_make(4, wd);
  Value *x = ir_input_add(g, "x", DT_F32, &xs), *r = ir_input_add(g, "r", DT_F32, &xs);
  Tensor *wt = ir_tensor_new(g, DT_F32, &ws, NULL);
  for (int64_t i = 0; i < wt->numel; i++)
    tensor_set_f64(wt, i, 0.01 * (double)i);
  Value *w = ir_const_new(g, "w", wt);
  int64_t p1[4] = {1, 1, 1, 1};
  Value *cin[2] = {x, w};
  Node *conv = ir_node_new(g, OP_Conv, NULL, "conv", 2, cin, 1);
  ir_attr_set_ints(conv, "pads", p1, 4);
  Value *ain[2] = {conv->out[0], r};
  Node *add = ir_node_new(g, OP_Add, NULL, "add", 2, ain, 1);
  Node *relu = ir_node_new(g, OP_Relu, NULL, "relu", 1, add->out, 1);
  relu->out[0]->name = "y";
  ir_output_add(g, relu->out[0]);
  char dir[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(compile_graph(g, "m", dir, &d));
  char *cu = slurp(dir, "m.cu");
  const char *res = strstr(cu, "acc += X3[i];"), *store = strstr(cu, "Y0[i] = ((float)((((acc)) > 0 ?");
  assert_non_null(res);
  assert_non_null(store); /* the Relu, applied to the sum */
  assert_true(res < store);
  assert_null(strstr(cu, "(Add)"));
  assert_null(strstr(cu, "(Relu)"));
  free(cu);
  diag_free(&d);
  rmdir_all(dir);
  ir_graph_free(g);
}

/* Count of the occurrences of needle in s. */
static int count_str(const char *s, const char *needle) {
  int k = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
    k++;
  return k;
}

static Graph *pools_and_cast(void) {
  Graph *g = ir_graph_new("t.onnx");
  g->opset = 13;
  int64_t xd[4] = {1, 2, 5, 5}, cd[1] = {600};
  Shape xs = shape_make(4, xd), cs = shape_make(1, cd);
  Value *x = ir_input_add(g, "x", DT_F32, &xs);
  Value *c = ir_input_add(g, "c", DT_I64, &cs);
  int64_t k3[2] = {3, 3}, p1[4] = {1, 1, 1, 1};
  Node *mp = ir_node_new(g, OP_MaxPool, NULL, "mp", 1, &x, 1);
  ir_attr_set_ints(mp, "kernel_shape", k3, 2);
  ir_attr_set_ints(mp, "pads", p1, 4);
  Node *ap = ir_node_new(g, OP_AveragePool, NULL, "ap", 1, &x, 1);
  ir_attr_set_ints(ap, "kernel_shape", k3, 2);
  ir_attr_set_ints(ap, "pads", p1, 4);
  Node *cast = ir_node_new(g, OP_Cast, NULL, "cast", 1, &c, 1);
  ir_attr_set_int(cast, "to", 1);
  mp->out[0]->name = "y";
  ap->out[0]->name = "z";
  cast->out[0]->name = "w";
  ir_output_add(g, mp->out[0]);
  ir_output_add(g, ap->out[0]);
  ir_output_add(g, cast->out[0]);
  return g;
}

/* Launch batching (emit_cuda.c): independent small kernels run in one launch,
 * each a device function of its own block index and grid on its range of
 * blocks; kernels that depend on each other, or where one writes arena bytes
 * the other reads (the plan reuses them), launch apart. */
static void test_launch_batching(void **state) {
  (void)state;
  Graph *g = pools_and_cast();
  char dir[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(compile_graph(g, "m", dir, &d));
  char *cu = slurp(dir, "m.cu"), *host = slurp(dir, "m.c");
  /* 50 outputs per pool: a block each; 600 casts: 3 blocks; one launch of 5 */
  assert_int_equal(count_str(host, "cuLaunchKernel("), 1);
  assert_non_null(strstr(host, "cuLaunchKernel(ctx->fn[0], 5u, 1u, 1u, 256, 1, 1, 0, s, args, NULL)"));
  assert_non_null(strstr(host, "/* one launch, 3 kernels: 'mp' (MaxPool), 'ap' (AveragePool), 'cast' (Cast) */"));
  assert_int_equal(count_str(cu, "extern \"C\" __global__"), 1);
  assert_non_null(strstr(cu, "#define blockIdx onnxc_vblock\n#define gridDim onnxc_vgrid\n"
                             "static __device__ void node0_MaxPool("));
  assert_non_null(strstr(cu, "extern \"C\" __global__ void node0_MaxPool_batch("));
  assert_non_null(strstr(cu, "  if (b < 1u)\n    node0_MaxPool(k0_X0, k0_Y0, onnxc_status, onnxc_idx(b - 0u, 0u, 0u), "
                             "onnxc_idx(1u, 1u, 1u));\n"));
  assert_non_null(strstr(cu, "  else if (b < 5u)\n    node2_Cast(k2_X0, k2_Y0, onnxc_status, onnxc_idx(b - 2u, 0u, 0u), "
                             "onnxc_idx(3u, 1u, 1u));\n"));
  assert_non_null(strstr(cu, "/* 3 kernels, 3 of them parallel */\n/* 1 launches: 1 batches of 3 small kernels */"));
  free(cu);
  free(host);
  rmdir_all(dir);
  ir_graph_free(g);

  /* x -> Transpose t1 -> Softmax u (output); y -> Transpose v -> Softmax w
   * (output): t1 dies at u, and v reuses its bytes, so u (reads them) and v
   * (writes them) launch apart although they share no value. */
  g = ir_graph_new("t.onnx");
  g->opset = 13;
  int64_t xd[2] = {4, 8};
  Shape xs = shape_make(2, xd);
  Value *x = ir_input_add(g, "x", DT_F32, &xs), *y = ir_input_add(g, "y", DT_F32, &xs);
  Node *t1 = ir_node_new(g, OP_Transpose, NULL, "t1", 1, &x, 1);
  Node *u = ir_node_new(g, OP_Softmax, NULL, "u", 1, t1->out, 1);
  Node *v = ir_node_new(g, OP_Transpose, NULL, "v", 1, &y, 1);
  Node *w = ir_node_new(g, OP_Softmax, NULL, "w", 1, v->out, 1);
  u->out[0]->name = "uo";
  w->out[0]->name = "wo";
  ir_output_add(g, u->out[0]);
  ir_output_add(g, w->out[0]);
  char dir2[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir2));
  Plan plan;
  assert_true(compile_graph_b(g, "m", dir2, &d, false, &plan));
  assert_int_equal(plan.offset[t1->out[0]->id], plan.offset[v->out[0]->id]); /* the reuse */
  host = slurp(dir2, "m.c");
  assert_int_equal(count_str(host, "cuLaunchKernel("), 4);
  assert_null(strstr(host, "one launch"));
  free(host);
  rmdir_all(dir2);
  ir_graph_free(g);

  /* the same two chains with t1 also a graph output (the caller's memory):
   * no bytes shared, so u and v launch together (t1 before, w after: each
   * depends on its neighbour) */
  g = ir_graph_new("t.onnx");
  g->opset = 13;
  x = ir_input_add(g, "x", DT_F32, &xs);
  y = ir_input_add(g, "y", DT_F32, &xs);
  t1 = ir_node_new(g, OP_Transpose, NULL, "t1", 1, &x, 1);
  u = ir_node_new(g, OP_Softmax, NULL, "u", 1, t1->out, 1);
  v = ir_node_new(g, OP_Transpose, NULL, "v", 1, &y, 1);
  w = ir_node_new(g, OP_Softmax, NULL, "w", 1, v->out, 1);
  u->out[0]->name = "uo";
  w->out[0]->name = "wo";
  t1->out[0]->name = "to";
  ir_output_add(g, u->out[0]);
  ir_output_add(g, w->out[0]);
  ir_output_add(g, t1->out[0]);
  char dir3[] = "/tmp/onnxc-cuda-test-XXXXXX";
  assert_non_null(mkdtemp(dir3));
  assert_true(compile_graph_b(g, "m", dir3, &d, false, &plan));
  host = slurp(dir3, "m.c");
  assert_int_equal(count_str(host, "cuLaunchKernel("), 3);
  assert_non_null(strstr(host, "/* one launch, 2 kernels: 'u' (Softmax), 'v' (Transpose) */"));
  free(host);
  rmdir_all(dir3);
  ir_graph_free(g);
  assert_int_equal(d.n_errors, 0);
  diag_free(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernels_parallel_and_fallback),
      cmocka_unit_test(test_host_code_and_header),
      cmocka_unit_test(test_bad_name_is_an_error),
      cmocka_unit_test(test_unwritable_dir_is_an_error),
      cmocka_unit_test(test_strings),
      cmocka_unit_test(test_dynamic_output),
      cmocka_unit_test(test_image_decoder),
      cmocka_unit_test(test_lrn_parallel),
      cmocka_unit_test(test_pools_and_flat_loops_parallel),
      cmocka_unit_test(test_matmul_reads_views),
      cmocka_unit_test(test_conv_residual),
      cmocka_unit_test(test_launch_batching),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
