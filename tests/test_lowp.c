/* test_lowp.c - --precision bf16|fp16 (docs/precision.md): the float32 ->
 * bfloat16 and float32 -> float16 conversions (codegen/lowp.h) against an
 * independent rounding in double, and the packed products' contract with the
 * memory plan: scratch, the packed weights' layout, and the kernels they
 * emit; a float16 model's products rewritten onto the float32 kernels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "target_util.h"
#include "codegen_util.h"
#include "gemm.h"
#include "lowp.h"
#include "passes.h"
#include "plan_util.h"

#include "float_bits.h"

/* The reference: the nearest value with an 8-bit significand (ties to the
 * even significand), computed in double from frexp; float32 subnormals to
 * a signed zero, overflow past the largest bfloat16 to infinity. */
static double ref_bf16(float f) {
  if (f == 0.0f || fabsf(f) < 0x1p-126f)
    return signbit(f) ? -0.0 : 0.0;
  if (isinf(f))
    return f;
  int e;
  double m = frexp((double)f, &e);  /* |m| in [0.5, 1) */
  double s = ldexp(m, 8);           /* 8 significant bits before the point */
  double r = floor(s), frac = s - r;
  if (frac > 0.5 || (frac == 0.5 && fmod(r, 2.0) != 0.0))
    r += 1.0;
  double v = ldexp(r, e - 8);
  return fabs(v) > 0x1.FEp127 ? copysign(INFINITY, v) : v;
}

static void test_lowp_bf16_rounds_to_nearest_even(void **state) {
  (void)state;
  /* exact, halfway (to even, both directions), above halfway, below */
  assert_true(lowp_bf16(1.0f) == 0x3f80);
  assert_true(lowp_bf16(bits_f32(0x3f808000u)) == 0x3f80); /* tie, even below */
  assert_true(lowp_bf16(bits_f32(0x3f818000u)) == 0x3f82); /* tie, even above */
  assert_true(lowp_bf16(bits_f32(0x3f808001u)) == 0x3f81);
  assert_true(lowp_bf16(bits_f32(0x3f807fffu)) == 0x3f80);
  assert_true(lowp_bf16(-1.5f) == 0xbfc0);
  /* a carry into the exponent: 1.99999 -> 2 */
  assert_true(lowp_bf16(bits_f32(0x3fffffffu)) == 0x4000);
  /* 2^24 random patterns' neighbourhoods: the reference agrees on every finite value */
  uint32_t x = 12345;
  for (int i = 0; i < 1 << 20; i++) {
    x = x * 1664525u + 1013904223u;
    float f = bits_f32(x);
    if (isnan(f))
      continue;
    double want = ref_bf16(f), got = lowp_bf16_f32(lowp_bf16(f));
    if (!(got == want && signbit(got) == signbit(want)))
      fail_msg("0x%08x: got %a, want %a", x, got, want);
  }
}

static void test_lowp_bf16_nan_overflow_subnormal(void **state) {
  (void)state;
  /* NaN stays NaN, quiet, sign kept, even when only low payload bits are set */
  uint16_t n1 = lowp_bf16(bits_f32(0x7f800001u)), n2 = lowp_bf16(bits_f32(0xffc00000u));
  assert_true(isnan(lowp_bf16_f32(n1)) && (n1 & 0x40) && !(n1 & 0x8000));
  assert_true(isnan(lowp_bf16_f32(n2)) && (n2 & 0x8000));
  /* infinities stay; the largest float rounds past the largest bfloat16 */
  assert_true(lowp_bf16(INFINITY) == 0x7f80 && lowp_bf16(-INFINITY) == 0xff80);
  assert_true(lowp_bf16(3.4028235e38f) == 0x7f80);
  assert_true(lowp_bf16(-3.4028235e38f) == 0xff80);
  assert_true(lowp_bf16(bits_f32(0x7f7f7fffu)) == 0x7f7f); /* just below the tie: largest finite */
  /* subnormals become a signed zero (as VCVTNEPS2BF16); the smallest normal stays */
  assert_true(lowp_bf16(bits_f32(0x00400000u)) == 0x0000);
  assert_true(lowp_bf16(bits_f32(0x807fffffu)) == 0x8000);
  assert_true(lowp_bf16(bits_f32(0x00800000u)) == 0x0080);
  assert_true(lowp_bf16(-0.0f) == 0x8000);
  /* bfloat16 -> float32 is exact: every non-NaN pattern round-trips */
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = lowp_bf16_f32((uint16_t)h);
    if (isnan(f) || ((h & 0x7f80) == 0 && (h & 0x7f)))
      continue; /* bfloat16 subnormals are float32 subnormals: flushed */
    assert_true(lowp_bf16(f) == h);
    assert_true(f32_bits(f) == h << 16);
  }
}

static void plan_of(Graph *g, Plan *p) {
  assert_true(pu_infer(g));
  pass_mark_precision(g, 1);
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_memplan(g, p, onnxc_test_target(), &d));
  diag_free(&d);
}

static void iota(Value *w) {
  float *f = w->konst->data;
  for (int64_t i = 0; i < w->konst->numel; i++)
    f[i] = (float)i;
}

/* [64,300] x W[300,70] in bf16: A's block as bfloat16 (64 rows x 256 deep),
 * W in 32-column panels of k pairs, K padded to 320. */
static void test_lowp_matmul_weight_in_pair_panels(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *w = pu_weight(g, "w", 300, 70);
  iota(w);
  Value *y = pu_op2(g, OP_MatMul, "y", pu_input(g, "x", 64, 300), w);
  ir_output_add(g, y);
  Plan p;
  plan_of(g, &p);
  assert_int_equal(ir_attr_int(y->producer, "onnxc.precision", 0), 1);
  assert_int_equal(p.scratch_size[y->producer->id], 64 * 256 * 2);
  assert_false(gemm_used(g, &p, 1)); /* no float32 kernel left to write */
  assert_true(gemm_lp_used(g, &p, 1));
  assert_int_equal(gemm_weight_numel(&p, w, 1), 96 * 320 / 2);
  Arena *a = arena_new();
  const Tensor *t = gemm_weight_data(&p, w, a, 1);
  const uint16_t *pk = t->data;
  assert_int_equal(t->nbytes, 96 * 320 * 2);
  /* (k, j) at panel j / 32 (32 x 320 values), pair k / 2 (64 values), lane j % 32, half k % 2 */
  for (int64_t k = 0; k < 320; k += 7)
    for (int64_t j = 0; j < 96; j += 5) {
      uint16_t want = k < 300 && j < 70 ? lowp_bf16((float)(k * 70 + j)) : 0;
      assert_int_equal(pk[(j / 32) * 32 * 320 + (k / 2) * 64 + (j % 32) * 2 + k % 2], want);
    }
  arena_free(a);
  char *c = cu_generate(g, &p, NULL);
  assert_non_null(strstr(c, "onnxc_bkr(amx, kcp, a, b, c, 70, pc > 0);"));
  assert_non_null(strstr(c, "_tile_dpbf16ps(0, 4, 6);"));
  assert_non_null(strstr(c, "onnxc_bkr2(amx, kcp, a, 16 * kcp, b, c, 70, pc > 0);")); /* 32 rows at once */
  assert_null(strstr(c, "onnxc_ukr("));
  free(c);
  ir_graph_free(g);
}

/* A stride-1 3x3 conv that float32 computes directly from its image goes
 * through im2col in bf16: weights [40,5,3,3] as 16-row panels (48 rows) of
 * 32-deep chunks (K 45 -> 64). */
static void test_lowp_conv_weight_in_row_chunks(void **state) {
  (void)state;
  Graph *g = pu_graph();
  int64_t xd[4] = {2, 5, 20, 30}, wd[4] = {40, 5, 3, 3};
  Shape xs = shape_make(4, xd), ws = shape_make(4, wd);
  Value *in[2] = {ir_input_add(g, "x", DT_F32, &xs),
                  ir_const_new(g, "w", ir_tensor_new(g, DT_F32, &ws, NULL))};
  iota(in[1]);
  Node *conv = ir_node_new(g, OP_Conv, NULL, "conv", 2, in, 1);
  int64_t pads[4] = {1, 0, 1, 2};
  ir_attr_set_ints(conv, "pads", pads, 4);
  ir_output_add(g, conv->out[0]);
  Plan p;
  plan_of(g, &p);
  /* B block: 64 (45 to 32s) deep x 512 columns bfloat16, padded image (no pixel table: the
   * packer reads runs of output rows) */
  int64_t want = (64 * 512 * 2 + 63) / 64 * 64 + ((5 * 22 * 32 + 16) * 4 + 63) / 64 * 64;
  assert_int_equal(p.scratch_size[conv->id], want);
  assert_int_equal(gemm_weight_numel(&p, in[1], 1), 48 * 64 / 2);
  Arena *a = arena_new();
  const uint16_t *pk = gemm_weight_data(&p, in[1], a, 1)->data;
  /* (i, k) at panel i / 16 (16 x 64), chunk k / 32 (512), row i % 16 (32), k % 32 */
  for (int64_t i = 0; i < 48; i++)
    for (int64_t k = 0; k < 64; k++) {
      uint16_t v = i < 40 && k < 45 ? lowp_bf16((float)(i * 45 + k)) : 0;
      assert_int_equal(pk[(i / 16) * 16 * 64 + (k / 32) * 512 + (i % 16) * 32 + k % 32], v);
    }
  arena_free(a);
  char *c = cu_generate(g, &p, NULL);
  assert_null(strstr(c, "direct conv"));
  /* the columns straight from the padded image (30 pixels a row, rows 32 apart) */
  assert_non_null(strstr(c, "onnxc_bf16_win(bb + kk * 32, 32 * kcp, s2[0], s2[1], jc, nc, 30, 32, 1);"));
  free(c);
  ir_graph_free(g);
}

/* A conv deeper than one depth block (K 40 x 3 x 3 = 360: blocks of 256 and
 * 104 -> 128): the weight stored block by block, each block's 16-row panels
 * one after the other, in the order the tiles read them. */
static void test_lowp_conv_weight_by_depth_block(void **state) {
  (void)state;
  Graph *g = pu_graph();
  int64_t xd[4] = {1, 40, 18, 18}, wd[4] = {20, 40, 3, 3}; /* 256 pixels: the untransposed form */
  Shape xs = shape_make(4, xd), ws = shape_make(4, wd);
  Value *in[2] = {ir_input_add(g, "x", DT_F32, &xs),
                  ir_const_new(g, "w", ir_tensor_new(g, DT_F32, &ws, NULL))};
  iota(in[1]);
  Node *conv = ir_node_new(g, OP_Conv, NULL, "conv", 2, in, 1);
  ir_output_add(g, conv->out[0]);
  Plan p;
  plan_of(g, &p);
  assert_int_equal(gemm_weight_numel(&p, in[1], 1), 32 * 384 / 2);
  Arena *a = arena_new();
  const uint16_t *pk = gemm_weight_data(&p, in[1], a, 1)->data;
  for (int64_t i = 0; i < 32; i++)
    for (int64_t k = 0; k < 384; k++) {
      int64_t pc = k < 256 ? 0 : 256, kk = k - pc, kcp = pc ? 128 : 256;
      uint16_t v = i < 20 && k < 360 ? lowp_bf16((float)(i * 360 + k)) : 0;
      assert_int_equal(pk[pc * 32 + (i / 16) * 16 * kcp + (kk / 32) * 512 + (i % 16) * 32 + kk % 32], v);
    }
  arena_free(a);
  char *c = cu_generate(g, &p, NULL);
  assert_non_null(strstr(c, "+ pc * 32 + (ic + ir) * kcp;"));
  assert_null(strstr(c, "small map transposed"));
  free(c);
  ir_graph_free(g);
}

/* On a 7x7 map (49 pixels: 64 columns of 32-column panels, 56 rows of
 * 8-row passes) the conv is computed transposed: W^T as column panels, the
 * last pixel panel's first 8 rows alone, every depth in one pass. */
static void test_lowp_conv_small_map_transposed(void **state) {
  (void)state;
  Graph *g = pu_graph();
  int64_t xd[4] = {1, 64, 7, 7}, wd[4] = {512, 64, 3, 3}, pads[4] = {1, 1, 1, 1};
  Shape xs = shape_make(4, xd), ws = shape_make(4, wd);
  Value *in[2] = {ir_input_add(g, "x", DT_F32, &xs),
                  ir_const_new(g, "w", ir_tensor_new(g, DT_F32, &ws, NULL))};
  iota(in[1]);
  Node *conv = ir_node_new(g, OP_Conv, NULL, "conv", 2, in, 1);
  ir_attr_set_ints(conv, "pads", pads, 4);
  ir_output_add(g, conv->out[0]);
  Plan p;
  plan_of(g, &p);
  /* cols^T: 64 pixel rows (49 to 16s) x 576 bfloat16 */
  assert_int_equal(p.scratch_size[conv->id], 64 * 576 * 2);
  assert_int_equal(gemm_weight_numel(&p, in[1], 1), 512 * 576 / 2);
  Arena *a = arena_new();
  const uint16_t *pk = gemm_weight_data(&p, in[1], a, 1)->data;
  /* (k, channel j) at panel j / 32, pair k / 2 (64 values), lane j % 32, half k % 2 */
  for (int64_t j = 0; j < 512; j += 3)
    for (int64_t k = 0; k < 576; k++)
      assert_int_equal(pk[(j / 32) * 32 * 576 + (k / 2) * 64 + (j % 32) * 2 + k % 2],
                       lowp_bf16((float)(j * 576 + k)));
  arena_free(a);
  char *c = cu_generate(g, &p, NULL);
  assert_non_null(strstr(c, "small map transposed: Y^T[49 x 512] = cols^T[49 x 576]"));
  assert_non_null(strstr(c, "onnxc_bkr_v(576, ap + ir * 576, b, t, 32, 0, 8);"));
  assert_non_null(strstr(c, "onnxc_bf16_colst(ap, 576, X0, kt, p0, p1, 7, 1, 1, 7, 7);"));
  free(c);
  ir_graph_free(g);
  /* 20 output channels: the gathers and the transposed store would cost more
   * than the 8 pixel rows saved; the usual form */
  g = pu_graph();
  int64_t wd2[4] = {20, 64, 3, 3};
  Shape ws2 = shape_make(4, wd2);
  Value *in2[2] = {ir_input_add(g, "x", DT_F32, &xs), ir_const_new(g, "w", ir_tensor_new(g, DT_F32, &ws2, NULL))};
  Node *conv2 = ir_node_new(g, OP_Conv, NULL, "conv", 2, in2, 1);
  ir_attr_set_ints(conv2, "pads", pads, 4);
  ir_output_add(g, conv2->out[0]);
  plan_of(g, &p);
  c = cu_generate(g, &p, NULL);
  assert_null(strstr(c, "small map transposed"));
  assert_non_null(strstr(c, "implicit GEMM"));
  free(c);
  ir_graph_free(g);
}

/* Without the mark, the same product is the float32 one. */
static void test_lowp_unmarked_stays_f32(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *w = pu_weight(g, "w", 300, 70);
  Value *y = pu_op2(g, OP_MatMul, "y", pu_input(g, "x", 64, 300), w);
  ir_output_add(g, y);
  assert_true(pu_infer(g));
  Plan p;
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  pass_mark_precision(g, 0);
  assert_true(pass_memplan(g, &p, onnxc_test_target(), &d));
  diag_free(&d);
  assert_int_equal(p.scratch_size[y->producer->id], 72 * 256 * 4);
  assert_false(gemm_lp_used(g, &p, 1));
  ir_graph_free(g);
}

/* A weight holding an infinity keeps the float32 product (its bfloat16
 * pairs could read as NaN floats in the C form of the weights). */
static void test_lowp_nonfinite_weight_stays_f32(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *w = pu_weight(g, "w", 300, 70);
  iota(w);
  ((float *)w->konst->data)[1234] = INFINITY;
  Value *y = pu_op2(g, OP_MatMul, "y", pu_input(g, "x", 64, 300), w);
  ir_output_add(g, y);
  Plan p;
  plan_of(g, &p);
  assert_int_equal(ir_attr_int(y->producer, "onnxc.precision", 0), 0);
  assert_int_equal(p.scratch_size[y->producer->id], 72 * 256 * 4);
  assert_int_equal(gemm_weight_numel(&p, w, 1), 96 * 300);
  assert_false(gemm_lp_used(g, &p, 1));
  ir_graph_free(g);
}


/* The reference: the nearest float16 in double: 11 significant bits for
 * normal values, a fixed quantum of 2^-24 below 2^-14 (subnormals), ties to
 * the even neighbour, infinity from 65520 up. */
static double ref_f16(float f) {
  if (isinf(f))
    return f;
  double x = fabs((double)f), q;
  if (x < 0x1p-14) {
    q = 0x1p-24;
  } else {
    int e;
    frexp(x, &e); /* x in [2^(e-1), 2^e) */
    q = ldexp(1.0, e - 11);
  }
  double s = x / q, r = floor(s), frac = s - r;
  if (frac > 0.5 || (frac == 0.5 && fmod(r, 2.0) != 0.0))
    r += 1.0;
  double v = r * q;
  if (v > 65504.0)
    v = INFINITY;
  return signbit(f) ? -v : v;
}

static void test_lowp_f16_rounds_to_nearest_even(void **state) {
  (void)state;
  assert_true(lowp_f16(1.0f) == 0x3c00);
  assert_true(lowp_f16(-2.0f) == 0xc000);
  /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: to even (1); 1 + 3 * 2^-11 to 1 + 2^-9 */
  assert_true(lowp_f16(1.0f + 0x1p-11f) == 0x3c00);
  assert_true(lowp_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);
  assert_true(lowp_f16(bits_f32(0x3f801001u)) == 0x3c01); /* just above the tie */
  assert_true(lowp_f16(bits_f32(0x3f800fffu)) == 0x3c00); /* just below */
  /* a carry into the exponent: 2 - 2^-12 -> 2 */
  assert_true(lowp_f16(2.0f - 0x1p-12f) == 0x4000);
  /* random patterns over the whole float range: the reference agrees */
  uint32_t x = 987654321u;
  for (int i = 0; i < 1 << 20; i++) {
    x = x * 1664525u + 1013904223u;
    /* half the draws near float16's range, where all the cases are */
    uint32_t u = (i & 1) ? x : (x & 0x807fffffu) | ((uint32_t)(100 + (x >> 23) % 48) << 23);
    float f = bits_f32(u);
    if (isnan(f))
      continue;
    double want = ref_f16(f), got = lowp_f16_f32(lowp_f16(f));
    if (!(got == want && signbit(got) == signbit(want)))
      fail_msg("0x%08x: got %a, want %a", u, got, want);
  }
}

static void test_lowp_f16_subnormal_overflow_nan(void **state) {
  (void)state;
  /* subnormals: the smallest (2^-24), the largest, ties at half the smallest
   * (2^-25 -> 0, to even) and at 3 * 2^-25 (-> 2 * 2^-24, to even) */
  assert_true(lowp_f16(0x1p-24f) == 0x0001);
  assert_true(lowp_f16(0x1p-14f - 0x1p-24f) == 0x03ff);
  assert_true(lowp_f16(0x1p-25f) == 0x0000);
  assert_true(lowp_f16(-0x1p-25f) == 0x8000);
  assert_true(lowp_f16(0x1.000002p-25f) == 0x0001); /* just above half the smallest */
  assert_true(lowp_f16(3 * 0x1p-25f) == 0x0002);
  assert_true(lowp_f16(5 * 0x1p-25f) == 0x0002);
  assert_true(lowp_f16(0x1p-14f) == 0x0400);         /* the smallest normal */
  assert_true(lowp_f16(0x1p-14f - 0x1p-25f) == 0x0400); /* a tie that carries into it (0x3ff is odd) */
  assert_true(lowp_f16(bits_f32(0x00000001u)) == 0x0000 && lowp_f16(bits_f32(0x80400000u)) == 0x8000);
  assert_true(lowp_f16(-0.0f) == 0x8000);
  /* overflow: 65504 is the largest; 65519.99 rounds down, 65520 (the tie, 0x3ff odd) up to infinity */
  assert_true(lowp_f16(65504.0f) == 0x7bff);
  assert_true(lowp_f16(65519.996f) == 0x7bff);
  assert_true(lowp_f16(65520.0f) == 0x7c00);
  assert_true(lowp_f16(-1e10f) == 0xfc00);
  assert_true(lowp_f16(3.4028235e38f) == 0x7c00);
  assert_true(lowp_f16(INFINITY) == 0x7c00 && lowp_f16(-INFINITY) == 0xfc00);
  /* NaN stays NaN, quiet, sign kept, even with only low payload bits */
  uint16_t n1 = lowp_f16(bits_f32(0x7f800001u)), n2 = lowp_f16(bits_f32(0xffc00000u));
  assert_true((n1 & 0x7c00) == 0x7c00 && (n1 & 0x200) && !(n1 & 0x8000));
  assert_true((n2 & 0x7c00) == 0x7c00 && (n2 & 0x3ff) && (n2 & 0x8000));
  assert_true(isnan(lowp_f16_f32(n1)) && isnan(lowp_f16_f32(n2)));
  /* float16 -> float32 is exact: every non-NaN pattern round-trips, subnormals included */
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = lowp_f16_f32((uint16_t)h);
    if (isnan(f)) {
      assert_true((h & 0x7c00) == 0x7c00 && (h & 0x3ff));
      continue;
    }
    assert_true(lowp_f16(f) == h);
    assert_true(ref_f16(f) == (double)f);
  }
}

/* [64,300] x W[300,70] in fp16: A's block as float16 (64 rows x 256 deep),
 * W in 32-column panels, k-major (32 values per k), K padded to 320. */
static void test_lowp_f16_matmul_weight_panels(void **state) {
  (void)state;
  Graph *g = pu_graph();
  Value *w = pu_weight(g, "w", 300, 70);
  float *wf = w->konst->data;
  for (int64_t i = 0; i < w->konst->numel; i++)
    wf[i] = (float)i * 0.37f; /* values that round */
  Value *y = pu_op2(g, OP_MatMul, "y", pu_input(g, "x", 64, 300), w);
  ir_output_add(g, y);
  assert_true(pu_infer(g));
  pass_mark_precision(g, 2);
  Plan p;
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_memplan(g, &p, onnxc_test_target(), &d));
  diag_free(&d);
  assert_int_equal(ir_attr_int(y->producer, "onnxc.precision", 0), 2);
  assert_int_equal(p.scratch_size[y->producer->id], 64 * 256 * 2);
  assert_false(gemm_used(g, &p, 1));
  assert_int_equal(gemm_lp_used(g, &p, 1), 2);
  assert_int_equal(gemm_weight_numel(&p, w, 1), 96 * 320 / 2);
  Arena *a = arena_new();
  const Tensor *t = gemm_weight_data(&p, w, a, 1);
  const uint16_t *pk = t->data;
  assert_int_equal(t->nbytes, 96 * 320 * 2);
  /* (k, j) at panel j / 32 (32 x 320 values), k * 32, lane j % 32 */
  for (int64_t k = 0; k < 320; k++)
    for (int64_t j = 0; j < 96; j += 3) {
      uint16_t want = k < 300 && j < 70 ? lowp_f16(wf[k * 70 + j]) : 0;
      assert_int_equal(pk[(j / 32) * 32 * 320 + k * 32 + j % 32], want);
    }
  arena_free(a);
  char *c = cu_generate(g, &p, NULL);
  assert_non_null(strstr(c, "onnxc_hkr(amx, kcp, a, b, c, 70, pc > 0);"));
  assert_non_null(strstr(c, "onnxc_hkr2(amx, kcp, a, 16 * kcp, b, c, 70, pc > 0);"));
  assert_non_null(strstr(c, "onnxc_f16_16(d + kk * 16, f);")); /* A packed per k, 16 rows */
  assert_null(strstr(c, "onnxc_bkr("));
  assert_null(strstr(c, "onnxc_ukr("));
  free(c);
  ir_graph_free(g);
}

/* A conv's weight [40,5,3,3] in fp16: 16-row panels (48 rows), per k the 16
 * rows' values, K 45 -> 64. */
static void test_lowp_f16_conv_weight_panels(void **state) {
  (void)state;
  Graph *g = pu_graph();
  int64_t xd[4] = {1, 5, 20, 30}, wd[4] = {40, 5, 3, 3};
  Shape xs = shape_make(4, xd), ws = shape_make(4, wd);
  Value *in[2] = {ir_input_add(g, "x", DT_F32, &xs),
                  ir_const_new(g, "w", ir_tensor_new(g, DT_F32, &ws, NULL))};
  float *wf = in[1]->konst->data;
  for (int64_t i = 0; i < in[1]->konst->numel; i++)
    wf[i] = (float)i / 3.0f;
  Node *conv = ir_node_new(g, OP_Conv, NULL, "conv", 2, in, 1);
  int64_t pads[4] = {1, 1, 1, 1};
  ir_attr_set_ints(conv, "pads", pads, 4);
  ir_output_add(g, conv->out[0]);
  assert_true(pu_infer(g));
  pass_mark_precision(g, 2);
  Plan p;
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_memplan(g, &p, onnxc_test_target(), &d));
  diag_free(&d);
  assert_int_equal(gemm_weight_numel(&p, in[1], 1), 48 * 64 / 2);
  Arena *a = arena_new();
  const uint16_t *pk = gemm_weight_data(&p, in[1], a, 1)->data;
  for (int64_t i = 0; i < 48; i++)
    for (int64_t k = 0; k < 64; k++) {
      uint16_t v = i < 40 && k < 45 ? lowp_f16(wf[i * 45 + k]) : 0;
      assert_int_equal(pk[(i / 16) * 16 * 64 + k * 16 + i % 16], v);
    }
  arena_free(a);
  char *c = cu_generate(g, &p, NULL);
  assert_non_null(strstr(c, "onnxc_f16_32(d + kk * 32, f[0]);")); /* B packed per k, 32 columns */
  assert_non_null(strstr(c, "onnxc_hkr("));
  free(c);
  ir_graph_free(g);
}

/* A float16 model's Conv + Relu: Cast in, the product and the Relu in
 * float32 with the weight widened exactly (float32 weights: no mark), Cast
 * out; --precision fp16 then packs the weight as float16. */
static void test_lowp_f16_model_products(void **state) {
  (void)state;
  Graph *g = pu_graph();
  int64_t xd[4] = {1, 8, 10, 10}, wd[4] = {16, 8, 3, 3};
  Shape xs = shape_make(4, xd), ws = shape_make(4, wd);
  Value *in[2] = {ir_input_add(g, "x", DT_F16, &xs),
                  ir_const_new(g, "w", ir_tensor_new(g, DT_F16, &ws, NULL))};
  uint16_t *wh = in[1]->konst->data;
  for (int64_t i = 0; i < in[1]->konst->numel; i++)
    wh[i] = (uint16_t)(0x3000 + i * 7); /* halves from 0.125 up, odd bits */
  Node *conv = ir_node_new(g, OP_Conv, NULL, "conv", 2, in, 1);
  Value *r = pu_op1(g, OP_Relu, "r", conv->out[0]);
  ir_output_add(g, r);
  assert_true(pu_infer(g));
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_f16_compute(g, &d));
  assert_true(ir_verify(g, true, &d));
  diag_free(&d);
  /* Cast -> Conv -> Relu -> Cast */
  assert_int_equal(conv->in[0]->producer->op, OP_Cast);
  assert_int_equal(conv->in[0]->dt, DT_F32);
  assert_int_equal(conv->in[1]->dt, DT_F32);
  assert_int_equal(conv->out[0]->dt, DT_F32);
  assert_int_equal(ir_attr_int(conv, "onnxc.precision", 0), 0);
  const float *wf = conv->in[1]->konst->data;
  for (int64_t i = 0; i < conv->in[1]->konst->numel; i++)
    assert_true(lowp_f16(wf[i]) == wh[i] && wf[i] == lowp_f16_f32(wh[i]));
  Node *relu = conv->out[0]->uses[0];
  assert_int_equal(relu->op, OP_Relu);
  assert_int_equal(relu->out[0]->dt, DT_F32);
  Node *out = relu->out[0]->uses[0];
  assert_int_equal(out->op, OP_Cast);
  assert_int_equal(ir_attr_int(out, "to", 0), 10);
  assert_true(g->outputs[0] == out->out[0] && out->out[0]->dt == DT_F16);
  assert_string_equal(g->outputs[0]->name, "r"); /* the output keeps its name */
  pass_mark_precision(g, 2);
  assert_int_equal(ir_attr_int(conv, "onnxc.precision", 0), 2);
  ir_graph_free(g);
}

/* Two float16 MatMuls, then the Relu of the first: all in float32, each
 * output rounded once at the end. */
static void test_lowp_f16_model_relu_after_other_product(void **state) {
  (void)state;
  Graph *g = pu_graph();
  int64_t xd[2] = {64, 96}, wd[2] = {96, 80};
  Shape xs = shape_make(2, xd), ws = shape_make(2, wd);
  Value *x = ir_input_add(g, "x", DT_F16, &xs);
  Value *w1 = ir_const_new(g, "w1", ir_tensor_new(g, DT_F16, &ws, NULL));
  Value *w2 = ir_const_new(g, "w2", ir_tensor_new(g, DT_F16, &ws, NULL));
  Value *y1 = pu_op2(g, OP_MatMul, "y1", x, w1);
  Value *y2 = pu_op2(g, OP_MatMul, "y2", x, w2);
  Value *r = pu_op1(g, OP_Relu, "r", y1);
  ir_output_add(g, r);
  ir_output_add(g, y2);
  assert_true(pu_infer(g));
  Node *m1 = y1->producer, *m2 = y2->producer;
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_f16_compute(g, &d));
  assert_true(ir_verify(g, true, &d));
  diag_free(&d);
  assert_int_equal(m1->out[0]->dt, DT_F32);
  assert_int_equal(m2->out[0]->dt, DT_F32);
  assert_true(m1->in[0] == m2->in[0] && m1->in[0]->producer->op == OP_Cast); /* x widened once */
  assert_int_equal(m1->out[0]->uses[0]->op, OP_Relu);
  assert_true(g->outputs[0]->dt == DT_F16 && g->outputs[0]->producer->op == OP_Cast);
  assert_true(g->outputs[1]->dt == DT_F16 && g->outputs[1]->producer->op == OP_Cast);
  ir_graph_free(g);
}

/* A model's own Cast to float16 keeps rounding: it reads the float32 value
 * and its result is widened for the float32 node after it; a node left in
 * float16 (NonZero) reads the rounding of a value made float32. */
static void test_lowp_f16_model_boundaries(void **state) {
  (void)state;
  Graph *g = pu_graph();
  int64_t xd[2] = {4, 8};
  Shape xs = shape_make(2, xd);
  Value *x = ir_input_add(g, "x", DT_F16, &xs);
  Value *a = pu_op2(g, OP_Add, "a", x, x);
  Node *cast = ir_node_new(g, OP_Cast, "Cast", "c", 1, &a, 1);
  ir_attr_set_int(cast, "to", 10);
  Value *m = pu_op2(g, OP_Mul, "m", cast->out[0], x);
  Value *nz = pu_op1(g, OP_NonZero, "nz", a);
  ir_output_add(g, m);
  ir_output_add(g, nz);
  assert_true(pu_infer(g));
  Node *add = a->producer, *mul = m->producer, *nzn = nz->producer;
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_f16_compute(g, &d));
  assert_true(ir_verify(g, true, &d));
  diag_free(&d);
  assert_int_equal(add->out[0]->dt, DT_F32);
  assert_true(cast->in[0] == add->out[0] && cast->out[0]->dt == DT_F16);
  assert_int_equal(mul->out[0]->dt, DT_F32);
  Node *w = mul->in[0]->producer;
  assert_true(w->op == OP_Cast && ir_attr_int(w, "to", 0) == 1 && w->in[0] == cast->out[0]);
  Node *n16 = nzn->in[0]->producer;
  assert_true(n16->op == OP_Cast && ir_attr_int(n16, "to", 0) == 10 && n16->in[0] == add->out[0]);
  assert_true(g->outputs[0]->dt == DT_F16 && g->outputs[1] == nzn->out[0]);
  ir_graph_free(g);
}

/* A float16 Softmax takes the float32 kernel between Casts; a float16
 * Softmax with a float32 input (not a float16 node) is left alone. */
static void test_lowp_f16_model_softmax(void **state) {
  (void)state;
  Graph *g = pu_graph();
  int64_t xd[2] = {4, 128};
  Shape xs = shape_make(2, xd);
  Value *x = ir_input_add(g, "x", DT_F16, &xs);
  Value *y = pu_op1(g, OP_Softmax, "y", x);
  Value *x32 = pu_input(g, "x32", 4, 128);
  Value *z = pu_op1(g, OP_Softmax, "z", x32);
  ir_output_add(g, y);
  ir_output_add(g, z);
  assert_true(pu_infer(g));
  Node *sm = y->producer, *sm32 = z->producer;
  Diag d;
  diag_init(&d, "t.onnx", stderr);
  assert_true(pass_f16_compute(g, &d));
  assert_true(ir_verify(g, true, &d));
  diag_free(&d);
  assert_int_equal(sm->in[0]->producer->op, OP_Cast);
  assert_int_equal(sm->in[0]->dt, DT_F32);
  assert_int_equal(sm->out[0]->dt, DT_F32);
  Node *out = sm->out[0]->uses[0];
  assert_int_equal(out->op, OP_Cast);
  assert_true(g->outputs[0] == out->out[0] && out->out[0]->dt == DT_F16);
  assert_true(sm32->in[0] == x32 && g->outputs[1] == z && z->producer == sm32);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lowp_bf16_rounds_to_nearest_even),
      cmocka_unit_test(test_lowp_bf16_nan_overflow_subnormal),
      cmocka_unit_test(test_lowp_matmul_weight_in_pair_panels),
      cmocka_unit_test(test_lowp_conv_weight_in_row_chunks),
      cmocka_unit_test(test_lowp_conv_weight_by_depth_block),
      cmocka_unit_test(test_lowp_conv_small_map_transposed),
      cmocka_unit_test(test_lowp_unmarked_stays_f32),
      cmocka_unit_test(test_lowp_nonfinite_weight_stays_f32),
      cmocka_unit_test(test_lowp_f16_rounds_to_nearest_even),
      cmocka_unit_test(test_lowp_f16_subnormal_overflow_nan),
      cmocka_unit_test(test_lowp_f16_matmul_weight_panels),
      cmocka_unit_test(test_lowp_f16_conv_weight_panels),
      cmocka_unit_test(test_lowp_f16_model_products),
      cmocka_unit_test(test_lowp_f16_model_softmax),
      cmocka_unit_test(test_lowp_f16_model_boundaries),
      cmocka_unit_test(test_lowp_f16_model_relu_after_other_product),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
