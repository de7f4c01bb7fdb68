/* gemm.h - the packed, register-blocked float32 GEMM behind Conv, Gemm and MatMul.
 *
 * emit_gemm.c decides per node whether the fast path applies (float32,
 * static shapes, the scratch the plan gave it), writes the kernels once per
 * model (gemm_prelude) and packs weights at compile time (gemm_pack_weight).
 * Packed layouts do not depend on the instruction set the generated code is
 * built for, so one weights blob serves the AVX-512, AVX2 and portable paths:
 *   left operand  (A, M x K): panels of GEMM_MRP rows, k-major (24 floats per k)
 *   right operand (B, K x N): panels of GEMM_NRP columns, k-major (32 floats per k)
 * Every micro-kernel's MR divides 24 and its NR divides 32. The scratch a
 * product needs comes from its one layout (gk_layout): the planner asks for
 * it through the target's hook (gemm_scratch_bytes, codegen/target.c).
 */
#ifndef ONNXC_GEMM_H
#define ONNXC_GEMM_H

#include "codegen.h"

#define GEMM_KC 256 /* depth of one packed block */
#define GEMM_MC 96  /* rows of A per block (a multiple of GEMM_MRP) */
#define GEMM_NC 512 /* columns of B per block (a multiple of GEMM_NRP) */
#define GEMM_MRP 24
#define GEMM_NRP 32
/* --threads > 1: products whose cost (ec_cost_ns) makes the pool pay run on
 * every thread, in items of rows x columns claimed one at a time
 * (gk_par_split), each thread packing into its own buffers (gk_layout). */
/* Products under GEMM_MIN_MACS multiply-adds, and matrix-vector products
 * (M < 4: the register tile has 8 rows), keep the plain loops: packing would
 * cost more than it saves, and small models' arenas do not grow. */
#define GEMM_MIN_MACS 16384

/* The kernels and their #if selection, for the top of NAME.c; needed when
 * gemm_used says some node takes the fast path. */
void gemm_write_prelude(Buf *out);
bool gemm_used(const Graph *g, const Plan *plan, int threads);
/* --precision bf16|fp16: the bfloat16 (which & 1) and float16 (which & 2)
 * kernels (emit_gemm_bf16.c), after gemm_write_prelude; gemm_lp_used says
 * which some node takes (0: none). */
void gemm_write_prelude_lp(Buf *out, int which);
int gemm_lp_used(const Graph *g, const Plan *plan, int threads);

/* The tensor the weights file holds for constant v: its packed form when the
 * one node reading it packs it at compile time, else v->konst. */
const Tensor *gemm_weight_data(const Plan *plan, const Value *v, Arena *a, int threads);
/* Elements of that packed form; 0 when v is written as it is. */
int64_t gemm_weight_numel(const Plan *plan, const Value *v, int threads);

/* Fast-path emitters: false (having written nothing) when the node does not
 * qualify, so the caller emits its generic loops. */
bool gemm_emit_conv(EmitC *e, const Node *n);
bool gemm_emit_matmul(EmitC *e, const Node *n);
/* -D ranges: the packed product of one batch matrix whose M, N and K are
 * known at run time; expects the locals M, N, K (long) and pa, pb, py
 * (emit_dyn.c's MatMul loop over the batch). per_thread: the loop's matrices
 * are claimed by every thread (--threads), each packing into its own buffers
 * (the scratch holds one set per thread). False, writing nothing, when it
 * does not apply (then plain loops). */
bool gemm_emit_matmul_rt(EmitC *e, const Node *n, bool per_thread);
/* -D ranges: a Conv of one group with a weight packed at compile time and
 * its output map known at run time, as an im2col and the packed GEMM;
 * expects emit_dyn.c's window locals (N, C, H, W, OH, OW, KH...). False,
 * writing nothing, when it does not apply. */
bool gemm_emit_conv_rt(EmitC *e, const Node *n);
/* A MatMul's operand (which 0: A, 1: B) or result (2) as the product sees it,
 * through the Transposes and sibling slices fuse-layout folded in
 * (onnxc.perm_a, perm_b, perm_y; onnxc.view_a, view_b): its logical shape,
 * the element strides of each logical dim in the buffer, and (operands) the
 * element offset of its first element (emit_matmul.c). */
void mm_view(const Node *n, int which, Shape *shape, int64_t *stride);
int64_t mm_view_offset(const Node *n, int which);
bool mm_permuted(const Node *n);
/* The offset of batch bi's matrix: logical batch dims [0, nb) of a view
 * (no broadcasting), bi unravelled over them. */
void mm_batch_offset(const Shape *shape, const int64_t *stride, int nb, Buf *out);
/* mm_view, then mm_batch_offset of it plus the view's offset. */
void mm_operand_offset(const Node *n, int which, int nb, Buf *out);
/* A batched MatMul seen through its views, as every target's product takes
 * it: per batch, A[i][kk] at i * a_rs + kk * a_cs, B[kk][j] at kk * b_rs +
 * j * b_cs, Y[i][j] at i * y_rs + j; batch counts the logical result's
 * leading dims (rank - 2 of them; the buffer may be transposed). False unless
 * A, B and Y have one rank of at least 3 and Y's rows are contiguous. */
typedef struct MmStrides {
  int rank;
  int64_t m, k, n, batch;
  int64_t a_rs, a_cs, b_rs, b_cs, y_rs;
} MmStrides;
bool mm_strides(const Node *n, MmStrides *s);
bool gemm_emit_gemm(EmitC *e, const Node *n);

/* The fused activation of a Conv/Gemm/MatMul (attribute `activation`, set by
 * passes/fuse_epilogue.c) applied to the float expression v, into out. */
void gemm_act_expr(const Node *n, const char *v, Buf *out);
/* Scratch bytes of the packed-GEMM kernel of a Conv, MatMul or Gemm built for
 * `threads` threads; 0 when the node keeps the plain loops. */
int64_t gemm_scratch_bytes(const Node *n, int threads);

/* A float32 Conv of one group whose output map is a single pixel (column
 * of at most 1024 floats): emit_conv.c computes it as dot products, not on
 * the packed products (emit_gemm_conv.c declines it). */
bool conv_gemv_form(const Node *n);

#endif
