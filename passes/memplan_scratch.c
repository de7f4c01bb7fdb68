/* memplan_scratch.c - scratch bytes a node's kernel needs beyond its tensors.
 *
 * Planning runs before emission, so the size of a kernel's scratch (im2col
 * buffers, packed panels, ...) is decided here, from the node alone. The
 * planner gives each such node a buffer live only during its own step, inside
 * the arena (so NAME_ARENA_BYTES counts it), and the C emitter passes it to the
 * node's function as `unsigned char *S` (64-byte aligned); the op's emitter
 * reads the size back from plan->scratch_size[n->id]. An op that wants scratch
 * adds its case below and uses S in its emitter; the two must agree.
 *
 * float32 Conv (2-D), Gemm and MatMul run the packed GEMM of codegen/emit_gemm.c:
 * a packed block of the right operand (KC x NC), of the left operand
 * (MC x KC) unless it is a weight packed at compile time, and for a Conv that
 * is not a plain 1x1 product the output pixels' input offsets and a
 * zero-padded copy of the image; a padded depthwise Conv one zero-padded
 * plane. gemm_bytes and conv_bytes mirror the emitter's
 * layout (codegen/gemm.h holds the block sizes); the emitter falls back to its
 * generic loops when the plan gave it less than it needs.
 */
#include "passes.h"

#include <string.h>

/* Block sizes and panel widths of codegen/gemm.h (kept equal by hand). */
enum { KC = 256, MC = 96, NC = 512, MRP = 24, NRP = 32 };

static int64_t up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* A weight the emitter packs at compile time: a constant read only here. */
static bool prepacked(const Value *v) {
  return v->kind == VK_CONST && v->n_uses == 1 && !v->is_output;
}

/* Products under MIN_MACS multiply-adds, and matrix-vector products (M < 4:
 * the register tile has 8 rows), keep the emitter's plain loops (no scratch,
 * so small models' arenas do not grow): packing would cost more than it
 * saves. Given no scratch, the emitter never takes the packed path. */
enum { MIN_MACS = 16384 };

/* --threads (perf2): a product of at least PAR_MACS multiply-adds runs on
 * every thread, in items of MC rows (or all) x NCW columns, each thread
 * packing into its own buffers (KC x NCW of B, MC x KC of A); NCW is 512
 * when that still gives 4 items per thread, else 128 (narrower items were
 * slower on BERT-tiny): codegen/emit_gemm.c (par_ncw) decides the same. */
enum { PAR_MACS = 1 << 20 };
static int scratch_threads = 1;
void plan_set_threads(int threads) { scratch_threads = threads > 1 ? threads : 1; }

static int64_t gemm_bytes(int64_t m, int64_t n, int64_t k, bool a_packed, bool b_packed) {
  int64_t kc = min64(k, KC), bytes = 0;
  if (m < 4 || m * n * k < MIN_MACS)
    return 0;
  if (scratch_threads > 1 && m * n * k >= PAR_MACS) {
    int64_t ncw = (m + MC - 1) / MC * ((n + 511) / 512) >= 4 * scratch_threads ? 512 : 128;
    if (!b_packed)
      bytes += up(kc * up(min64(n, ncw), NRP) * 4, 64);
    if (!a_packed)
      bytes += up(up(min64(m, MC), MRP) * kc * 4, 64);
    return bytes * scratch_threads;
  }
  if (!b_packed)
    bytes += up(kc * up(min64(n, NC), NRP) * 4, 64);
  if (!a_packed)
    bytes += up(up(min64(m, MC), MRP) * kc * 4, 64);
  return bytes;
}

static bool all_f32(const Node *n) {
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i) && n->in[i]->dt != DT_F32)
      return false;
  return n->out[0]->dt == DT_F32 && shape_is_static(&n->out[0]->shape);
}

static int64_t conv_bytes(const Node *n) {
  const Shape *x = &n->in[0]->shape, *w = &n->in[1]->shape, *y = &n->out[0]->shape;
  int64_t group = ir_attr_int(n, "group", 1);
  bool depthwise = x->rank == 4 && group > 1 && group == x->d[1] && w->d[0] == group && w->d[1] == 1;
  /* grouped: a product per group, when a group has >= 8 outputs and >= 2 inputs (conv_window) */
  bool grouped = group > 1 && w->d[1] >= 2 && w->d[0] / group >= 8;
  if (x->rank != 4 || (group != 1 && !depthwise && !grouped))
    return 0;
  int64_t c = x->d[1], k = w->d[1] * w->d[2] * w->d[3], npix = y->d[2] * y->d[3];
  const char *ap = ir_attr_str(n, "auto_pad", "NOTSET");
  int64_t total[2] = {0, 0};
  bool padded = false, unit = w->d[2] == 1 && w->d[3] == 1, stride1 = true;
  for (int i = 0; i < 2; i++) {
    int npads, nst, ndil;
    const int64_t *p = ir_attr_ints(n, "pads", &npads), *s = ir_attr_ints(n, "strides", &nst);
    const int64_t *dl = ir_attr_ints(n, "dilations", &ndil);
    int64_t si = s && nst == 2 ? s[i] : 1, di = dl && ndil == 2 ? dl[i] : 1;
    if (strncmp(ap, "SAME", 4) == 0) {
      total[i] = (y->d[2 + i] - 1) * si + (w->d[2 + i] - 1) * di + 1 - x->d[2 + i];
      if (total[i] < 0)
        total[i] = 0;
    } else if (strcmp(ap, "VALID") != 0 && p && npads == 4) {
      total[i] = p[i] + p[2 + i];
    }
    padded = padded || total[i] != 0;
    unit = unit && si == 1;
    stride1 = stride1 && si == 1;
  }
  /* a small-map conv (conv_small in emit_gemm.c): cols^T packed whole, Y^T
   * (row stride M + 16), the zero-padded image */
  if (group == 1 && x->d[0] == 1 && npix <= 256 && npix % NRP != 0 && w->d[0] % NRP == 0 &&
      prepacked(n->in[1]))
    return up(up(npix, MRP) * k * 4, 64) + up(up(npix, MRP) * (w->d[0] + 16) * 4, 64) +
           (padded ? up((c * (x->d[2] + total[0]) * (x->d[3] + total[1]) + 16) * 4, 64) : 0);
  /* a direct conv (conv_direct in emit_gemm_conv.c): the padded image (+ 32 floats) only */
  if (group == 1 && stride1 && !unit && w->d[2] * w->d[3] > 1 && prepacked(n->in[1]))
    return up((c * (x->d[2] + total[0]) * (x->d[3] + total[1]) + 32) * 4, 64);
  if (depthwise) /* per thread a zero-padded plane and one for the output rows (emit_conv.c) */
    return padded ? 2 * up(((x->d[2] + total[0]) * (x->d[3] + total[1]) + 16) * 4, 64) *
                        scratch_threads
                  : 0;
  int64_t bytes = gemm_bytes(w->d[0] / group, npix, k, prepacked(n->in[1]), false);
  if (bytes == 0 || (unit && !padded))
    return bytes;
  bytes += up(up(npix, NRP) * 4, 64);
  if (padded)
    bytes += up((c * (x->d[2] + total[0]) * (x->d[3] + total[1]) + 16) * 4, 64);
  return bytes;
}

static int64_t matmul_bytes(const Node *n) {
  const Shape *a = &n->in[0]->shape, *b = &n->in[1]->shape;
  int64_t m = a->rank >= 2 ? a->d[a->rank - 2] : 1, k = a->d[a->rank - 1];
  int64_t nn = b->rank >= 2 ? b->d[b->rank - 1] : 1;
  if (b->rank == 2 && prepacked(n->in[1])) {
    int64_t rows = 1;
    for (int i = 0; i + 1 < a->rank; i++)
      rows *= a->d[i];
    return gemm_bytes(rows, nn, k, false, true);
  }
  return gemm_bytes(m, nn, k, false, false);
}

static int64_t gemm_node_bytes(const Node *n) {
  const Shape *y = &n->out[0]->shape, *a = &n->in[0]->shape;
  int64_t k = a->d[ir_attr_int(n, "transA", 0) ? 0 : 1];
  return gemm_bytes(y->d[0], y->d[1], k, false, prepacked(n->in[1]));
}

/* ONNXC_IMAGE_SCRATCH(h, w, n) of runtime/onnxc_image.h (kept equal by hand). */
static int64_t image_scratch_bytes(int64_t h, int64_t w, int64_t n) {
  int64_t png = h * (4 * w + 1) + n, jpeg = 3 * (w + 16) * (h + 16);
  int64_t j2k = 20 * h * w + n + 16 * (h + w) + 65536;   /* ONNXC_J2K_SCRATCH (onnxc_j2k.h) */
  return (png > jpeg ? png : jpeg) + 64 > j2k ? (png > jpeg ? png : jpeg) + 64 : j2k;
}

int64_t plan_scratch_bytes(const Node *n) {
  bool gemm_family = n->op == OP_Conv || n->op == OP_MatMul || n->op == OP_Gemm;
  if (gemm_family && (n->n_in < 2 || !ir_has_input(n, 0) || !ir_has_input(n, 1) || n->n_out < 1))
    return 0;
  switch (n->op) {
  case OP_Conv:
    return all_f32(n) && shape_is_static(&n->in[0]->shape) && shape_is_static(&n->in[1]->shape)
               ? conv_bytes(n) : 0;
  case OP_MatMul:
    return all_f32(n) && n->in[0]->shape.rank >= 1 && n->in[1]->shape.rank >= 2 &&
                   shape_is_static(&n->in[0]->shape) && shape_is_static(&n->in[1]->shape)
               ? matmul_bytes(n) : 0;
  case OP_Gemm:
    return all_f32(n) && shape_is_static(&n->in[0]->shape) ? gemm_node_bytes(n) : 0;
  case OP_Attention:
  case OP_FlexAttention:
  case OP_LinearAttention:
    return attn_scratch_bytes(n);
  case OP_DFT:   /* opsk: two lines of n complex doubles (codegen/emit_signal.c) */
  case OP_STFT:
    return 32 * ir_attr_int(n, "onnxc.n", 0);
  case OP_Unique: /* opsk: five int64 arrays over the sorted slices (emit_dynamic.c) */
    return 40 * ir_attr_int(n, "onnxc.n", 0);
  case OP_NonMaxSuppression: /* opsk: order + merge buffer per class */
    return n->in[0]->shape.rank == 3 && n->in[0]->shape.d[1] > 0 ? 16 * n->in[0]->shape.d[1] : 16;
  case OP_ImageDecoder: /* lead: inflated PNG rows / JPEG planes (runtime/onnxc_image.h) */
    return n->out[0]->shape.rank == 3 && n->in[0]->shape.rank == 1
               ? image_scratch_bytes(n->out[0]->shape.d[0], n->out[0]->shape.d[1], n->in[0]->shape.d[0])
               : 0;
  case OP_RNN: /* opsj: state rows (infer_rnn.c, emit_rnn.c) */
  case OP_GRU:
  case OP_LSTM:
    return rnn_scratch_bytes(n);
  case OP_StringConcat: /* str: characters of the strings made (infer_string.c) */
  case OP_StringSplit:
  case OP_StringNormalizer:
    return string_char_bytes(n);
  case OP_RegexFullMatch: { /* str: 4 int32 per NFA instruction (emit_string.c) */
    int k = 0;
    ir_attr_ints(n, "onnxc.re_op", &k);
    return 16 * (int64_t)k;
  }
  case OP_Det: { /* opsg: one M x M double matrix when M > 16 (emit_misc2.c factors smaller ones on the stack) */
    const Shape *s = &n->in[0]->shape;
    int64_t m = s->rank >= 2 ? s->d[s->rank - 1] : 0;
    return m > 16 ? m * m * (int64_t)sizeof(double) : 0;
  }
  default:
    return 0;
  }
}

bool plan_scratch_persists(const Node *n) {
  return (n->op == OP_StringConcat || n->op == OP_StringSplit || n->op == OP_StringNormalizer) &&
         string_char_bytes(n) > 0;
}
