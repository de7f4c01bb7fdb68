/* test_fuse_quant.c - the fuse-quant pass (passes/fuse_quant.c): which QDQ
 * groups become integer ops, which stay float, and the constants it folds
 * (bias with the input zero point, multipliers, clamp, requantizing tables).
 * Numeric agreement with ONNX Runtime is tests/int8 (e2e.int8_models) and the
 * differential tests' QDQ profile (tests/diff). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static Graph *lowered_as(const char *text, bool split, bool lanes) {
  Diag d;
  diag_init(&d, "t.ir", stderr);
  Graph *g = ir_parse(text, "t.ir", &d);
  assert_non_null(g);
  assert_true(pass_infer(g, &d));
  assert_true(pass_fuse_quant(g, split, lanes, &d));
  assert_true(pass_dce(g, &d));
  assert_true(ir_verify(g, true, &d));
  assert_int_equal(d.n_errors, 0);
  diag_free(&d);
  return g;
}

static Graph *lowered_split(const char *text, bool split) { return lowered_as(text, split, false); }

static Graph *lowered(const char *text) { return lowered_split(text, false); }

static int count_op(const Graph *g, OpKind op) {
  int k = 0;
  for (const Node *n = g->first; n; n = n->next)
    k += n->op == op;
  return k;
}

static const Node *first_op(const Graph *g, OpKind op) {
  for (const Node *n = g->first; n; n = n->next)
    if (n->op == op)
      return n;
  return NULL;
}

/* x u8 (scale 0.5, zp 3) -> Conv 1x1 2->2 with per-channel weights, int32
 * bias -> ACT -> Q (scale 0.25, zp 10). %WZ, %BS and ACT vary per test. */
static char *conv_text(const char *wz, const char *bscale, const char *act, const char *wq) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "graph g opset 19\n"
           "input %%x : u8[1,2,3,3]\n"
           "input %%wi : i8[2,2,1,1]\n"
           "const %%xs : f32[] = [0.5]\n"
           "const %%xz : u8[] = [3]\n"
           "const %%wq : i8[2,2,1,1] = [1, -2, 3, 4]\n"
           "const %%ws : f32[2] = [0.5, 0.25]\n"
           "const %%wz : i8[2] = [%s]\n"
           "const %%bq : i32[2] = [7, -9]\n"
           "const %%bs : f32[2] = [%s]\n"
           "const %%ys : f32[] = [0.25]\n"
           "const %%yz : u8[] = [10]\n"
           "const %%lo : f32[] = [-1.0]\n"
           "const %%hi : f32[] = [2.0]\n"
           "%%xf : f32[1,2,3,3] = DequantizeLinear(%%x, %%xs, %%xz) @dqx\n"
           "%%wf : f32[2,2,1,1] = DequantizeLinear{axis=0}(%s, %%ws, %%wz) @dqw\n"
           "%%bf : f32[2] = DequantizeLinear{axis=0}(%%bq, %%bs) @dqb\n"
           "%%c : f32[1,2,3,3] = Conv{kernel_shape=ints[1,1]}(%%xf, %%wf, %%bf) @conv\n"
           "%s"
           "%%q : u8[1,2,3,3] = QuantizeLinear(%%a, %%ys, %%yz) @q\n"
           "output %%q\n",
           wz, bscale, wq, act);
  return buf;
}

static const char *k_relu = "%a : f32[1,2,3,3] = Relu(%c) @act\n";
static const char *k_clip = "%a : f32[1,2,3,3] = Clip(%c, %lo, %hi) @act\n";
static const char *k_none = "%a : f32[1,2,3,3] = Identity(%c) @act\n";

static void test_conv_relu_fuses(void **state) {
  (void)state;
  Graph *g = lowered(conv_text("0, 0", "0.25, 0.125", k_relu, "%wq"));
  assert_int_equal(count_op(g, OP_QIntConv), 1);
  assert_int_equal(count_op(g, OP_Conv) + count_op(g, OP_QuantizeLinear) + count_op(g, OP_Relu) +
                       count_op(g, OP_DequantizeLinear),
                   0);
  const Node *n = first_op(g, OP_QIntConv);
  assert_string_equal(n->in[0]->name, "x");        /* reads the uint8 input directly */
  assert_true(g->outputs[0] == n->out[0]);
  assert_int_equal(n->out[0]->dt, DT_U8);
  assert_int_equal(ir_attr_int(n, "lo", -1), 10);  /* Relu: Q(0) = zero point */
  assert_int_equal(ir_attr_int(n, "hi", -1), 255);
  assert_int_equal(ir_attr_int(n, "x_zero_point", -1), 3);
  assert_int_equal(ir_attr_int(n, "y_zero_point", -1), 10);
  /* bias' = b - zx * sum W[c]: 7 - 3 * (1 - 2), -9 - 3 * (3 + 4) */
  const int32_t *b = n->in[2]->konst->data;
  assert_int_equal(b[0], 10);
  assert_int_equal(b[1], -30);
  /* multipliers (sx * sw[c]) / sy */
  const float *m = n->in[3]->konst->data;
  assert_true(m[0] == (0.5f * 0.5f) / 0.25f);
  assert_true(m[1] == (0.5f * 0.25f) / 0.25f);
  /* the weight block (16 channels x 64 k): channel c's k = 0..3 in word 16 c, bytes 0..3
   * (k >= 2 zero), the channels past 2 zero */
  const uint32_t *w = n->in[1]->konst->data;
  assert_int_equal(n->in[1]->dt, DT_I32);
  assert_int_equal(n->in[1]->konst->numel, 256);
  assert_int_equal(w[0], (uint32_t)1 | ((uint32_t)(uint8_t)-2 << 8));
  assert_int_equal(w[16], (uint32_t)3 | ((uint32_t)4 << 8));
  for (int i = 0; i < 256; i++)
    if (i != 0 && i != 16)
      assert_int_equal(w[i], 0);
  ir_graph_free(g);
}

static void test_clip_bounds(void **state) {
  (void)state;
  Graph *g = lowered(conv_text("0, 0", "0.25, 0.125", k_clip, "%wq"));
  const Node *n = first_op(g, OP_QIntConv);
  assert_non_null(n);
  /* Q(-1) = -4 + 10 = 6, Q(2) = 8 + 10 = 18 */
  assert_int_equal(ir_attr_int(n, "lo", -1), 6);
  assert_int_equal(ir_attr_int(n, "hi", -1), 18);
  ir_graph_free(g);
}

/* Groups that must stay float: each keeps its Conv and its Q. */
static void expect_float(const char *text) {
  Graph *g = lowered(text);
  assert_int_equal(count_op(g, OP_QIntConv), 0);
  assert_int_equal(count_op(g, OP_Conv), 1);
  assert_int_equal(count_op(g, OP_QuantizeLinear), 1);
  ir_graph_free(g);
}

static void test_not_fused(void **state) {
  (void)state;
  expect_float(conv_text("0, 1", "0.25, 0.125", k_relu, "%wq"));   /* weight zero point */
  expect_float(conv_text("0, 0", "0.25, 0.25", k_relu, "%wq"));    /* bias scale != sx * sw */
  expect_float(conv_text("0, 0", "0.25, 0.125", k_relu, "%wi"));   /* weight not constant */
  expect_float(conv_text("0, 0", "0.25, 0.125", k_none, "%wq"));   /* an op between Conv and Q */
}

static const char *k_shared =
    "graph g opset 19\n"
    "input %x : u8[1,2,2,2]\n"
    "const %s : f32[] = [0.5]\n"
    "const %z : u8[] = [3]\n"
    "const %wq : i8[2,2,1,1] = [1, 2, 3, 4]\n"
    "const %ws : f32[] = [0.5]\n"
    "%xf : f32[1,2,2,2] = DequantizeLinear(%x, %s, %z) @dqx\n"
    "%wf : f32[2,2,1,1] = DequantizeLinear(%wq, %ws) @dqw\n"
    "%c : f32[1,2,2,2] = Conv{kernel_shape=ints[1,1]}(%xf, %wf) @conv\n"
    "%q : u8[1,2,2,2] = QuantizeLinear(%c, %s, %z) @q\n"
    "output %q\n"
    "output %c\n";

static void test_shared_output_not_fused(void **state) {
  (void)state;
  Graph *g = lowered(k_shared);  /* %c is also a graph output */
  assert_int_equal(count_op(g, OP_QIntConv), 0);
  assert_int_equal(count_op(g, OP_Conv), 1);
  ir_graph_free(g);
}

/* MaxPool between DQ and Q: on uint8 when the parameters agree. */
static char *pool_text(const char *qscale) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "graph g opset 19\n"
           "input %%x : u8[1,1,4,4]\n"
           "const %%s : f32[] = [0.5]\n"
           "const %%t : f32[] = [%s]\n"
           "const %%z : u8[] = [3]\n"
           "%%xf : f32[1,1,4,4] = DequantizeLinear(%%x, %%s, %%z) @dq\n"
           "%%p : f32[1,1,2,2] = MaxPool{kernel_shape=ints[2,2], strides=ints[2,2]}(%%xf) @pool\n"
           "%%q : u8[1,1,2,2] = QuantizeLinear(%%p, %%t, %%z) @q\n"
           "output %%q\n",
           qscale);
  return buf;
}

static void test_maxpool(void **state) {
  (void)state;
  Graph *g = lowered(pool_text("0.5"));
  const Node *p = first_op(g, OP_MaxPool);
  assert_non_null(p);
  assert_int_equal(p->in[0]->dt, DT_U8);
  assert_int_equal(p->out[0]->dt, DT_U8);
  assert_int_equal(count_op(g, OP_QuantizeLinear) + count_op(g, OP_DequantizeLinear), 0);
  ir_graph_free(g);
  g = lowered(pool_text("0.25"));  /* Q rescales: stays float */
  assert_int_equal(first_op(g, OP_MaxPool)->out[0]->dt, DT_F32);
  assert_int_equal(count_op(g, OP_QuantizeLinear), 1);
  ir_graph_free(g);
}

static const char *k_concat_add =
    "graph g opset 19\n"
    "input %a : u8[1,2,2,2]\n"
    "input %b : u8[1,2,2,2]\n"
    "const %sa : f32[] = [0.5]\n"
    "const %za : u8[] = [3]\n"
    "const %sb : f32[] = [0.25]\n"
    "const %zb : u8[] = [7]\n"
    "const %sy : f32[] = [0.5]\n"
    "const %zy : u8[] = [3]\n"
    "%af : f32[1,2,2,2] = DequantizeLinear(%a, %sa, %za) @dqa\n"
    "%bf : f32[1,2,2,2] = DequantizeLinear(%b, %sb, %zb) @dqb\n"
    "%c : f32[1,4,2,2] = Concat{axis=1}(%af, %bf) @cat\n"
    "%cq : u8[1,4,2,2] = QuantizeLinear(%c, %sy, %zy) @qc\n"
    "%s : f32[1,2,2,2] = Add(%af, %bf) @add\n"
    "%r : f32[1,2,2,2] = Relu(%s) @relu\n"
    "%sq : u8[1,2,2,2] = QuantizeLinear(%r, %sy, %zy) @qs\n"
    "output %cq\n"
    "output %sq\n";

static void test_concat_and_add(void **state) {
  (void)state;
  Graph *g = lowered(k_concat_add);
  assert_int_equal(count_op(g, OP_QuantizeLinear) + count_op(g, OP_DequantizeLinear), 0);
  /* Concat: %a has the output's parameters, %b goes through a table */
  assert_int_equal(count_op(g, OP_QIntLut), 1);
  const Node *lut = first_op(g, OP_QIntLut);
  assert_string_equal(lut->in[0]->name, "b");
  const uint8_t *t = lut->in[1]->konst->data;
  for (int v = 0; v < 256; v++) {
    float want = rintf((float)(v - 7) * 0.25f / 0.5f) + 3.0f;
    want = want < 0 ? 0 : want > 255 ? 255 : want;
    assert_int_equal(t[v], (int)want);
  }
  const Node *cat = first_op(g, OP_Concat);
  assert_int_equal(cat->out[0]->dt, DT_U8);
  assert_string_equal(cat->in[0]->name, "a");
  /* Add + Relu: QIntAdd clamped at Q(0) = 3 */
  const Node *add = first_op(g, OP_QIntAdd);
  assert_non_null(add);
  assert_int_equal(ir_attr_int(add, "lo", -1), 3);
  assert_true(ir_attr_float(add, "b_ratio", 0) == 0.25f / 0.5f);
  ir_graph_free(g);
}

/* The Add's folded zero points as ORT's x86 QLinearAdd kernel has them:
 * zy - fma(ra, za, rb * zb), one rounding fewer than zy - (ra * za + rb * zb);
 * these parameters (random seed 74) tell the two apart. */
static const char *k_add_fixed =
    "graph g opset 19\n"
    "input %a : u8[1,2,2,2]\n"
    "input %b : u8[1,2,2,2]\n"
    "const %sa : f32[] = [0.0058111805]\n"
    "const %za : u8[] = [123]\n"
    "const %sb : f32[] = [0.007438673]\n"
    "const %zb : u8[] = [97]\n"
    "const %sy : f32[] = [0.012332678]\n"
    "const %zy : u8[] = [157]\n"
    "%af : f32[1,2,2,2] = DequantizeLinear(%a, %sa, %za) @dqa\n"
    "%bf : f32[1,2,2,2] = DequantizeLinear(%b, %sb, %zb) @dqb\n"
    "%s : f32[1,2,2,2] = Add(%af, %bf) @add\n"
    "%sq : u8[1,2,2,2] = QuantizeLinear(%s, %sy, %zy) @qs\n"
    "output %sq\n";

static void test_add_fixed(void **state) {
  (void)state;
  Graph *g = lowered(k_add_fixed);
  const Node *add = first_op(g, OP_QIntAdd);
  assert_non_null(add);
  volatile float sa = 0.0058111805f, sb = 0.007438673f, sy = 0.012332678f;
  float ra = sa / sy, rb = sb / sy;
  volatile float pa = ra * 123.0f, pb = rb * 97.0f;
  float want = 157.0f - fmaf(ra, 123.0f, pb), two_step = 157.0f - (pa + pb);
  assert_true(want != two_step); /* the case tells the formulas apart */
  assert_true(ir_attr_float(add, "fixed", 0) == want);
  ir_graph_free(g);
}

/* A conv whose requantized output only an Add reads: the Add goes into the
 * conv's store (a fifth input, the other operand), operand order kept. */
static const char *k_residual =
    "graph g opset 19\n"
    "input %x : u8[1,2,3,3]\n"
    "input %r : u8[1,2,3,3]\n"
    "const %xs : f32[] = [0.5]\n"
    "const %xz : u8[] = [3]\n"
    "const %wq : i8[2,2,1,1] = [1, -2, 3, 4]\n"
    "const %ws : f32[] = [0.25]\n"
    "const %cs : f32[] = [0.25]\n"
    "const %cz : u8[] = [10]\n"
    "const %rs : f32[] = [0.125]\n"
    "const %rz : u8[] = [7]\n"
    "const %ys : f32[] = [0.375]\n"
    "const %yz : u8[] = [100]\n"
    "%xf : f32[1,2,3,3] = DequantizeLinear(%x, %xs, %xz) @dqx\n"
    "%wf : f32[2,2,1,1] = DequantizeLinear(%wq, %ws) @dqw\n"
    "%c : f32[1,2,3,3] = Conv{kernel_shape=ints[1,1]}(%xf, %wf) @conv\n"
    "%cq : u8[1,2,3,3] = QuantizeLinear(%c, %cs, %cz) @qc\n"
    "%cf : f32[1,2,3,3] = DequantizeLinear(%cq, %cs, %cz) @dqc\n"
    "%rf : f32[1,2,3,3] = DequantizeLinear(%r, %rs, %rz) @dqr\n"
    "%s : f32[1,2,3,3] = Add(%rf, %cf) @add\n"
    "%sq : u8[1,2,3,3] = QuantizeLinear(%s, %ys, %yz) @qs\n"
    "output %sq\n";

static void test_residual_into_conv(void **state) {
  (void)state;
  Graph *g = lowered(k_residual);
  assert_int_equal(count_op(g, OP_QIntAdd), 0);
  const Node *n = first_op(g, OP_QIntConv);
  assert_non_null(n);
  assert_int_equal(n->n_in, 5);
  assert_string_equal(n->in[4]->name, "r");
  assert_true(g->outputs[0] == n->out[0]);
  assert_int_equal(ir_attr_int(n, "res_conv_a", -1), 0); /* the conv is the Add's second operand */
  assert_true(ir_attr_float(n, "res_a_ratio", 0) == 0.125f / 0.375f);
  assert_true(ir_attr_float(n, "res_b_ratio", 0) == 0.25f / 0.375f);
  assert_int_equal(ir_attr_int(n, "y_zero_point", -1), 10); /* the conv's own requantization */
  ir_graph_free(g);
  /* the conv's output also read elsewhere: the Add stays */
  char text[4096];
  snprintf(text, sizeof text, "%s", k_residual);
  char *o = strstr(text, "output %sq");
  snprintf(o, sizeof text - (size_t)(o - text), "output %%sq\noutput %%cq\n");
  g = lowered(text);
  assert_int_equal(count_op(g, OP_QIntAdd), 1);
  assert_int_equal(first_op(g, OP_QIntConv)->n_in, 4);
  ir_graph_free(g);
}

/* Target.int8_pairs16: the conv GEMM's weights become a part whose pairs
 * (k, k + 1), k even, are safe for vpmaddubsw's 16-bit sums (positive
 * weights add to <= 128, negative ones to >= -128) and a residual table of
 * safe words; the two add up to the weights. Channel 0 has two unsafe pairs,
 * channel 1 a pair of opposite signs (safe) and one of 128 exactly; 9 k. */
static void test_split_weights(void **state) {
  (void)state;
  static const int w8[2][9] = {{127, 100, -128, -5, 3, 4, 5, 6, -7}, {70, -80, 64, 64, 0, 127, 1, 1, 120}};
  char wl[512] = "";
  for (int c = 0; c < 2; c++)
    for (int k = 0; k < 9; k++)
      snprintf(wl + strlen(wl), sizeof wl - strlen(wl), "%s%d", c || k ? ", " : "", w8[c][k]);
  char text[2048];
  snprintf(text, sizeof text,
           "graph g opset 19\n"
           "input %%x : u8[1,9,2,2]\n"
           "const %%xs : f32[] = [0.5]\n"
           "const %%xz : u8[] = [3]\n"
           "const %%wq : i8[2,9,1,1] = [%s]\n"
           "const %%ws : f32[2] = [0.5, 0.25]\n"
           "const %%ys : f32[] = [0.25]\n"
           "const %%yz : u8[] = [10]\n"
           "%%xf : f32[1,9,2,2] = DequantizeLinear(%%x, %%xs, %%xz) @dqx\n"
           "%%wf : f32[2,9,1,1] = DequantizeLinear{axis=0}(%%wq, %%ws) @dqw\n"
           "%%c : f32[1,2,2,2] = Conv{kernel_shape=ints[1,1]}(%%xf, %%wf) @conv\n"
           "%%q : u8[1,2,2,2] = QuantizeLinear(%%c, %%ys, %%yz) @q\n"
           "output %%q\n",
           wl);
  Graph *plain = lowered_split(text, false), *g = lowered_split(text, true);
  const Node *n0 = first_op(plain, OP_QIntConv), *n = first_op(g, OP_QIntConv);
  assert_non_null(n0);
  assert_non_null(n);
  assert_false(ir_has_input(n0, 5));
  assert_true(ir_has_input(n, 5));
  assert_false(ir_has_input(n, 4));
  const uint32_t *wm = n->in[1]->konst->data, *wp = n0->in[1]->konst->data;
  const int32_t *t = n->in[5]->konst->data;
  /* offsets of rows 0..7 (C = 2 rounded up to 8), then (k4 group, word) pairs */
  assert_int_equal(t[0], 9);
  int rows[2][3] = {{0}};  /* residual word per row and k4 group */
  for (int c = 0; c < 8; c++)
    for (int e = t[c]; e < t[c + 1]; e += 2) {
      assert_true(c < 2);
      assert_true(t[e] >= 0 && t[e] < 3);
      rows[c][t[e]] = t[e + 1];
    }
  assert_int_equal(t[8], n->in[5]->konst->numel);
  /* the k order (kperm: the k at each place; none: as is), a permutation */
  int nkp = 0, order[9], seen[9] = {0};
  const int64_t *kp = ir_attr_ints(n, "kperm", &nkp);
  assert_true(kp == NULL || nkp == 9);
  for (int i = 0; i < 9; i++) {
    order[i] = kp ? (int)kp[i] : i;
    assert_true(order[i] >= 0 && order[i] < 9);
    assert_int_equal(seen[order[i]]++, 0);
  }
  int n_res = 0;
  for (int c = 0; c < 2; c++)
    for (int k = 0; k < 9; k++) {
      /* block 0 (16 channels x 64 k): word (c, k / 4), byte k % 4; unsplit: as is */
      int m = (int8_t)(uint8_t)(wm[c * 16 + k / 4] >> (8 * (k % 4)));
      int r = (int8_t)(uint8_t)((uint32_t)rows[c][k / 4] >> (8 * (k % 4)));
      int full = (int8_t)(uint8_t)(wp[c * 16 + k / 4] >> (8 * (k % 4)));
      assert_int_equal(full, w8[c][k]);
      assert_int_equal(m + r, w8[c][order[k]]);
      n_res += r != 0;
    }
  /* as is, 127 + 100 and -128 - 5 need one residual weight each; channel 0's
   * 127 has no partner safe in both channels, so one at least */
  assert_true(n_res >= 1 && n_res <= 2);
  for (int c = 0; c < 2; c++)
    for (int k = 0; k < 9; k += 2) {
      int a = (int8_t)(uint8_t)(wm[c * 16 + k / 4] >> (8 * (k % 4)));
      int b = k + 1 < 9 ? (int8_t)(uint8_t)(wm[c * 16 + k / 4] >> (8 * (k % 4 + 1))) : 0;
      assert_true((a > 0 ? a : 0) + (b > 0 ? b : 0) <= 128);
      assert_true((a < 0 ? -a : 0) + (b < 0 ? -b : 0) <= 128);
    }
  ir_graph_free(plain);
  ir_graph_free(g);
}

/* Target.int8_lanes: a 1x1 conv 256 -> 64 on a 7x7 map costs less with the
 * output channels as the vector lanes (fuse_quant.c's lanes_cheaper), so its
 * weight blocks are stored transposed (wt = 1: word g * 16 + c % 16 of block
 * (c / 16, k / 64), g = k % 64 / 4); the same conv on a 56x56 map, and
 * either without the flag, keeps the usual blocks. */
static void test_lanes_layout(void **state) {
  (void)state;
  enum { C = 64, K = 256 };
  const int sizes[2] = {7, 56};
  size_t cap = 16 * (size_t)C * K + 4096;
  char *wl = malloc(cap), *text = malloc(cap + 4096);
  assert_non_null(wl);
  assert_non_null(text);
  size_t at = 0;
  for (int c = 0; c < C; c++)
    for (int k = 0; k < K; k++)
      at += (size_t)snprintf(wl + at, cap - at, "%s%d", c || k ? ", " : "", (c * 37 + k * 11) % 255 - 127);
  for (int s = 0; s < 2; s++) {
    int h = sizes[s];
    snprintf(text, cap + 4096,
             "graph g opset 19\n"
             "input %%x : u8[1,%d,%d,%d]\n"
             "const %%xs : f32[] = [0.5]\n"
             "const %%xz : u8[] = [3]\n"
             "const %%wq : i8[%d,%d,1,1] = [%s]\n"
             "const %%ws : f32[] = [0.25]\n"
             "const %%ys : f32[] = [0.25]\n"
             "const %%yz : u8[] = [10]\n"
             "%%xf : f32[1,%d,%d,%d] = DequantizeLinear(%%x, %%xs, %%xz) @dqx\n"
             "%%wf : f32[%d,%d,1,1] = DequantizeLinear(%%wq, %%ws) @dqw\n"
             "%%c : f32[1,%d,%d,%d] = Conv{kernel_shape=ints[1,1]}(%%xf, %%wf) @conv\n"
             "%%q : u8[1,%d,%d,%d] = QuantizeLinear(%%c, %%ys, %%yz) @q\n"
             "output %%q\n",
             K, h, h, C, K, wl, K, h, h, C, K, C, h, h, C, h, h);
    for (int lanes = 0; lanes < 2; lanes++) {
      Graph *g = lowered_as(text, false, lanes);
      const Node *n = first_op(g, OP_QIntConv);
      assert_non_null(n);
      bool wt = ir_attr_int(n, "wt", 0) != 0;
      assert_int_equal(wt, lanes && h == 7);
      const uint32_t *w = n->in[1]->konst->data;
      assert_int_equal(n->in[1]->konst->numel, C * K / 4);
      for (int c = 0; c < C; c++)
        for (int k = 0; k < K; k++) {
          long blk = ((long)(c / 16) * (K / 64) + k / 64) * 256;
          long word = wt ? blk + (k % 64) / 4 * 16 + c % 16 : blk + (c % 16) * 16 + (k % 64) / 4;
          int v = (int8_t)(uint8_t)(w[word] >> (8 * (k % 4)));
          assert_int_equal(v, (c * 37 + k * 11) % 255 - 127);
        }
      ir_graph_free(g);
    }
  }
  free(wl);
  free(text);
}

/* The transposed form of a 3x3 conv of 3 input channels: the depth taps-major,
 * each tap's channels padded to 4 (kdim_t = 9 x 4): weight (c, ci, kh, kw) at
 * k' = (kh * 3 + kw) * 4 + ci; the padding channel's bytes zero. Forced with
 * ONNXC_INT8_LANES=1 (such a small conv would not choose it). */
static void test_lanes_taps_major(void **state) {
  (void)state;
  enum { C = 5, CI = 3 };
  char wl[1024] = "";
  for (int i = 0; i < C * CI * 9; i++)
    snprintf(wl + strlen(wl), sizeof wl - strlen(wl), "%s%d", i ? ", " : "", (i * 29) % 251 - 125);
  char text[4096];
  snprintf(text, sizeof text,
           "graph g opset 19\n"
           "input %%x : u8[1,3,6,6]\n"
           "const %%xs : f32[] = [0.5]\n"
           "const %%xz : u8[] = [3]\n"
           "const %%wq : i8[5,3,3,3] = [%s]\n"
           "const %%ws : f32[] = [0.25]\n"
           "const %%ys : f32[] = [0.25]\n"
           "const %%yz : u8[] = [10]\n"
           "%%xf : f32[1,3,6,6] = DequantizeLinear(%%x, %%xs, %%xz) @dqx\n"
           "%%wf : f32[5,3,3,3] = DequantizeLinear(%%wq, %%ws) @dqw\n"
           "%%c : f32[1,5,6,6] = Conv{kernel_shape=ints[3,3], pads=ints[1,1,1,1]}(%%xf, %%wf) @conv\n"
           "%%q : u8[1,5,6,6] = QuantizeLinear(%%c, %%ys, %%yz) @q\n"
           "output %%q\n",
           wl);
  setenv("ONNXC_INT8_LANES", "1", 1);
  Graph *g = lowered_as(text, false, true);
  unsetenv("ONNXC_INT8_LANES");
  const Node *n = first_op(g, OP_QIntConv);
  assert_non_null(n);
  assert_int_equal(ir_attr_int(n, "wt", 0), 1);
  assert_int_equal(ir_attr_int(n, "kdim_t", 0), 36);
  assert_int_equal(ir_attr_int(n, "kdim", 0), 27);
  const uint32_t *w = n->in[1]->konst->data;
  assert_int_equal(n->in[1]->konst->numel, 256);  /* one block: 16 channels x 64 k */
  for (int c = 0; c < 16; c++)
    for (int kt = 0; kt < 64; kt++) {
      int v = (int8_t)(uint8_t)(w[kt / 4 * 16 + c] >> (8 * (kt % 4)));
      int t = kt / 4, ci = kt % 4;
      int want = c < C && t < 9 && ci < CI ? ((c * CI + ci) * 9 + t) * 29 % 251 - 125 : 0;
      assert_int_equal(v, want);
    }
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lanes_taps_major),
      cmocka_unit_test(test_lanes_layout),
      cmocka_unit_test(test_conv_relu_fuses),
      cmocka_unit_test(test_clip_bounds),
      cmocka_unit_test(test_add_fixed),
      cmocka_unit_test(test_residual_into_conv),
      cmocka_unit_test(test_not_fused),
      cmocka_unit_test(test_shared_output_not_fused),
      cmocka_unit_test(test_maxpool),
      cmocka_unit_test(test_concat_and_add),
      cmocka_unit_test(test_split_weights),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
