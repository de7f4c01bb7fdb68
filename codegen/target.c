/* target.c - the C and CUDA targets as the passes see them (ir.h Target).
 *
 * The memory planner runs before emission, so it asks the target how many
 * bytes of scratch each node's kernel will use (im2col buffers, packed
 * panels, score rows, ...). Each answer comes from the emitter that writes
 * the kernel, from the same function the emitter lays its scratch out with:
 * the size planned and the layout emitted are one fact, never two copies.
 * The emitter reads the size back from plan->scratch_size and falls back to
 * its generic loops when the plan gave it less than its form needs.
 */
#include "codegen_internal.h"
#include "gemm.h"
/* ONNXC_IMAGE_SCRATCH: the decoders' own statement of their scratch (the
 * header's functions are not used here) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "onnxc_image.h"
#pragma GCC diagnostic pop

#include <string.h>

static int64_t image_bytes(const Node *n) {
  const Shape *y = &n->out[0]->shape, *x = &n->in[0]->shape;
  if (y->rank != 3 || x->rank != 1)
    return 0;
  return ONNXC_IMAGE_SCRATCH(y->d[0], y->d[1], x->d[0]);
}

static int64_t scratch_bytes(const Target *t, const Node *n) {
  switch (n->op) {
  case OP_Conv:
    return conv_scratch_bytes(n, t->threads);
  case OP_MatMul:
  case OP_Gemm:
    return gemm_scratch_bytes(n, t->threads);
  case OP_QIntConv:
  case OP_QIntConvInteger:
    return qint_scratch_bytes(n, t->threads);
  case OP_Attention:
  case OP_FlexAttention:
  case OP_LinearAttention:
    return attn_scratch_bytes(n);
  case OP_DFT: /* two lines of n complex doubles (emit_signal.c) */
  case OP_STFT:
    return 32 * ir_attr_int(n, "onnxc.n", 0);
  case OP_Unique: /* five int64 arrays over the sorted slices (emit_dynamic.c) */
    return 40 * ir_attr_int(n, "onnxc.n", 0);
  case OP_NonMaxSuppression: /* order + merge buffer per class (emit_dynamic.c) */
    return n->in[0]->shape.rank == 3 && n->in[0]->shape.d[1] > 0 ? 16 * n->in[0]->shape.d[1] : 16;
  case OP_ImageDecoder: /* inflated PNG rows / JPEG planes (runtime/onnxc_image.h) */
    return image_bytes(n);
  case OP_RNN:
  case OP_GRU:
  case OP_LSTM:
    return rnn_scratch_bytes(n);
  case OP_StringConcat:
  case OP_StringSplit:
  case OP_StringNormalizer:
    return string_char_bytes(n);
  case OP_RegexFullMatch: { /* 4 int32 per NFA instruction (emit_string.c) */
    int k = 0;
    ir_attr_ints(n, "onnxc.re_op", &k);
    return 16 * (int64_t)k;
  }
  case OP_Det: { /* one M x M double matrix when M > 16 (emit_misc2.c factors smaller ones on the stack) */
    const Shape *s = &n->in[0]->shape;
    int64_t m = s->rank >= 2 ? s->d[s->rank - 1] : 0;
    return m > 16 ? m * m * (int64_t)sizeof(double) : 0;
  }
  default:
    return 0;
  }
}

static bool scratch_persists(const Target *t, const Node *n) {
  (void)t;
  return string_char_bytes(n) > 0;
}

void codegen_target(Target *t, const char *name, int threads) {
  bool cuda = name && strcmp(name, "cuda") == 0;
  memset(t, 0, sizeof *t);
  t->name = cuda ? "cuda" : "c";
  /* --threads is the C target's; CUDA kernels are one per (fused) node */
  t->threads = !cuda && threads > 1 ? threads : 1;
  t->fuse_residual = true; /* both conv kernels add a residual input in their store */
  t->strided_matmul = true; /* both MatMul kernels read and write through views (mm_view) */
  t->scratch_bytes = scratch_bytes;
  t->scratch_persists = scratch_persists;
}
