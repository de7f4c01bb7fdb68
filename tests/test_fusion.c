/* test_fusion.c - the elementwise fusion pass and the kernel description
 * both targets print (passes/fuse_elementwise.c, codegen/kernel_desc.c).
 * Numeric agreement of fused kernels with ONNX Runtime is the differential
 * tests' job (tests/diff); here: which nodes group, what the description
 * holds, and the C text it prints for each target. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "passes.h"
#include "target_util.h"

static Graph *parse_fused(const char *text, Diag *d) {
  Graph *g = ir_parse(text, "t.ir", d);
  assert_non_null(g);
  assert_true(pass_infer(g, d));
  assert_true(pass_fuse_elementwise(g, true, d));
  assert_true(pass_dce(g, d));
  assert_true(ir_verify(g, true, d));
  return g;
}

static int count_op(const Graph *g, OpKind op) {
  int k = 0;
  for (const Node *n = g->first; n; n = n->next)
    k += n->op == op;
  return k;
}

static const Node *producer_of(const Graph *g, const char *out) {
  for (int i = 0; i < g->n_outputs; i++)
    if (strcmp(g->outputs[i]->name, out) == 0)
      return g->outputs[i]->producer;
  return NULL;
}

/* The body's ops, space-separated. */
static void body_ops(const Kdesc *k, char *buf, size_t n) {
  buf[0] = 0;
  for (int i = 0; i < k->n_steps; i++) {
    strncat(buf, k->step[i].n->op_type, n - strlen(buf) - 1);
    if (i + 1 < k->n_steps)
      strncat(buf, " ", n - strlen(buf) - 1);
  }
}

static const char *k_gelu =
    "graph g opset 13\n"
    "input %x : f32[2,4]\n"
    "input %b : f32[4]\n"
    "const %s : f32[] = [0.5]\n"
    "const %one : f32[] = [1.0]\n"
    "const %half : f32[] = [0.5]\n"
    "%h : f32[2,4] = Add(%x, %b) @bias\n"
    "%u : f32[2,4] = Mul(%h, %s) @scale\n"
    "%e : f32[2,4] = Erf(%u) @erf\n"
    "%p : f32[2,4] = Add(%e, %one) @plus\n"
    "%m : f32[2,4] = Mul(%h, %p) @times\n"
    "%y : f32[2,4] = Mul(%m, %half) @gelu\n"
    "%t : f32[2,4] = Tanh(%y) @tanh\n"
    "%n : f32[2,4] = Neg(%t) @neg\n"
    "%a : f32[2,4] = Abs(%n) @abs\n"
    "%r : f32[4] = Sqrt(%b) @sqrt\n"
    "%z : f32[2,4] = Sub(%a, %r) @sub\n"
    "output %t\n"
    "output %z\n";

static void test_groups_and_description(void **state) {
  (void)state;
  Diag d;
  diag_init(&d, "t.ir", stderr);
  Graph *g = parse_fused(k_gelu, &d);
  /* GELU + Tanh, and Neg, Abs, Sub; the smaller Sqrt stays alone. */
  assert_int_equal(count_op(g, OP_FusedElementwise), 2);
  assert_int_equal(count_op(g, OP_Sqrt), 1);
  assert_int_equal(g->n_nodes, 3);
  const Node *f1 = producer_of(g, "t"), *f2 = producer_of(g, "z");
  assert_non_null(f1);
  assert_non_null(f2);
  assert_int_equal(f1->op, OP_FusedElementwise);
  assert_string_equal(f1->name, "tanh");
  Kdesc k;
  char ops[256];
  assert_true(kd_build(f1, &k, &d));
  body_ops(&k, ops, sizeof ops);
  assert_string_equal(ops, "Add Mul Erf Add Mul Mul Tanh");
  /* operands: x, b, and the three scalars, each once */
  assert_int_equal(f1->n_in, 5);
  assert_ptr_equal(f1->in[0], g->inputs[0]);
  /* h is read by two steps: from the same temporary */
  assert_int_equal(k.step[1].arg[0], -1);
  assert_int_equal(k.step[4].arg[0], -1);
  assert_int_equal(k.step[4].arg[1], -4);
  Buf st, res;
  buf_init(&st);
  buf_init(&res);
  buf_puts(&st, "");
  buf_puts(&res, "");
  assert_true(kd_emit(&k, true, "", &st, &res, &d));
  assert_non_null(strstr(st.s, "const float t0 = (float)((a0 + a1));"));
  assert_non_null(strstr(st.s, "onnxc_erff(t1)"));
  assert_non_null(strstr(res.s, "onnxc_tanhf(t5)"));
  assert_null(strstr(st.s, "t6"));  /* the last step is the stored result */
  st.len = res.len = 0;
  buf_puts(&st, "");
  buf_puts(&res, "");
  /* the CUDA target: <math.h> functions */
  assert_true(kd_emit(&k, false, "  ", &st, &res, &d));
  assert_non_null(strstr(st.s, "erff(t1)"));
  assert_null(strstr(st.s, "onnxc_"));
  assert_non_null(strstr(res.s, "tanhf(t5)"));
  assert_true(kd_build(f2, &k, &d));
  body_ops(&k, ops, sizeof ops);
  assert_string_equal(ops, "Neg Abs Sub");
  buf_free(&st);
  buf_free(&res);
  assert_int_equal(d.n_errors, 0);
  diag_free(&d);
  ir_graph_free(g);
}

static const char *k_types =
    "graph g opset 13\n"
    "input %x : f32[8]\n"
    "input %h : f16[8]\n"
    "input %i : i32[8]\n"
    "const %zero : f32[] = [0.0]\n"
    /* bool intermediates: Greater -> Not -> Where, one kernel */
    "%c : bool[8] = Greater(%x, %zero) @gt\n"
    "%nc : bool[8] = Not(%c) @not\n"
    "%w : f32[8] = Where(%nc, %x, %zero) @where\n"
    /* an f16 intermediate would round through its storage type: not fused */
    "%h2 : f16[8] = Add(%h, %h) @hadd\n"
    "%h3 : f16[8] = Relu(%h2) @hrelu\n"
    /* integers wrap in the unsigned type; an f16 operand loads as float */
    "%j : i32[8] = Mul(%i, %i) @imul\n"
    "%k : i32[8] = Add(%j, %i) @iadd\n"
    "output %w\n"
    "output %h3\n"
    "output %k\n";

static void test_types(void **state) {
  (void)state;
  Diag d;
  diag_init(&d, "t.ir", stderr);
  Graph *g = parse_fused(k_types, &d);
  assert_int_equal(count_op(g, OP_FusedElementwise), 2);
  assert_int_equal(count_op(g, OP_Add), 1);
  assert_int_equal(count_op(g, OP_Relu), 1);
  Kdesc k;
  Buf st, res;
  buf_init(&st);
  buf_init(&res);
  buf_puts(&st, "");
  buf_puts(&res, "");
  assert_true(kd_build(producer_of(g, "w"), &k, &d));
  assert_true(kd_emit(&k, true, "", &st, &res, &d));
  /* bool results are stored as uint8_t, exactly as in memory */
  assert_non_null(strstr(st.s, "const uint8_t t0 = "));
  assert_non_null(strstr(st.s, "const uint8_t t1 = "));
  st.len = res.len = 0;
  buf_puts(&st, "");
  buf_puts(&res, "");
  assert_true(kd_build(producer_of(g, "k"), &k, &d));
  assert_int_equal(k.step[0].compute, DT_U32);
  assert_true(kd_emit(&k, true, "", &st, &res, &d));
  assert_non_null(strstr(st.s, "const int32_t t0 = (int32_t)"));
  assert_non_null(strstr(res.s, "(uint32_t)t0"));
  assert_int_equal(kd_operand_type(DT_F16), DT_F32);
  assert_int_equal(kd_operand_type(DT_I8), DT_I8);
  buf_free(&st);
  buf_free(&res);
  assert_int_equal(d.n_errors, 0);
  diag_free(&d);
  ir_graph_free(g);
}

/* Casts join chains: the attention mask's int64 -> float, 1 - m, times a
 * large negative, and a float -> int32 -> float round trip; a Cast to
 * float16 ends a group (its result is the output) but one to float16 in the
 * middle does not join. (The chains read their own inputs: chains on one
 * input would be merged as siblings, test_siblings.) */
static const char *k_casts =
    "graph g opset 19\n"
    "input %m : i64[2,8]\n"
    "input %x : f32[2,8]\n"
    "input %x2 : f32[2,8]\n"
    "const %one : f32[] = [1.0]\n"
    "const %big : f32[] = [-10000.0]\n"
    "%mf : f32[2,8] = Cast{to=1}(%m) @cast_mask\n"
    "%s : f32[2,8] = Sub(%one, %mf) @sub\n"
    "%y : f32[2,8] = Mul(%s, %big) @mul\n"
    "%q : i32[2,8] = Cast{to=6}(%x) @to_int\n"
    "%q2 : i32[2,8] = Add(%q, %q) @iadd\n"
    "%f : f32[2,8] = Cast{to=1}(%q2) @to_float\n"
    "%h : f16[2,8] = Cast{to=10}(%f) @to_half\n"
    "%r : f32[2,8] = Relu(%x2) @relu\n"
    "%rh : f16[2,8] = Cast{to=10}(%r) @mid_half\n"
    "%rf : f32[2,8] = Cast{to=1}(%rh) @back\n"
    "%z : f32[2,8] = Neg(%rf) @neg\n"
    "output %y\n"
    "output %h\n"
    "output %z\n";

static void test_casts(void **state) {
  (void)state;
  Diag d;
  diag_init(&d, "t.ir", stderr);
  Graph *g = parse_fused(k_casts, &d);
  /* mask; the round trip ending in float16; Relu + Cast to f16; Cast + Neg */
  assert_int_equal(count_op(g, OP_FusedElementwise), 4);
  assert_int_equal(g->n_nodes, 4);
  Kdesc k;
  char ops[256];
  Buf st, res;
  buf_init(&st);
  buf_init(&res);
  buf_puts(&st, "");
  buf_puts(&res, "");
  assert_true(kd_build(producer_of(g, "y"), &k, &d));
  body_ops(&k, ops, sizeof ops);
  assert_string_equal(ops, "Cast Sub Mul");
  assert_int_equal(k.step[0].compute, DT_I64);
  assert_true(kd_emit(&k, true, "", &st, &res, &d));
  assert_non_null(strstr(st.s, "const float t0 = (float)((float)a0);"));
  st.len = res.len = 0;
  buf_puts(&st, "");
  buf_puts(&res, "");
  assert_true(kd_build(producer_of(g, "h"), &k, &d));
  body_ops(&k, ops, sizeof ops);
  assert_string_equal(ops, "Cast Add Cast Cast");
  assert_true(kd_emit(&k, true, "", &st, &res, &d));
  /* float -> int32: NaN to 0 and saturation, as the Cast kernel */
  assert_non_null(strstr(st.s, "const int32_t t0 = (int32_t)((a0 != a0 ? (int32_t)0 : a0 <= -2147483648.0f"));
  /* the last step is stored as float16 once */
  assert_non_null(strstr(res.s, "onnxc_f32_to_f16("));
  assert_null(strstr(st.s, "onnxc_f32_to_f16("));
  buf_free(&st);
  buf_free(&res);
  assert_int_equal(d.n_errors, 0);
  diag_free(&d);
  ir_graph_free(g);
}

/* Expand read through broadcasting: the mask Expand goes when the other
 * operand gives the full shape; one that widens the result, or is also an
 * output, stays (the third's reader still reads its input). */
static const char *k_expand =
    "graph g opset 17\n"
    "input %s : f32[2,3,4]\n"
    "input %m : f32[2,1,4]\n"
    "const %shp : i64[3] = [2, 3, 4]\n"
    "const %k : f32[] = [2.0]\n"
    "%me : f32[2,3,4] = Expand(%m, %shp) @expand_mask\n"
    "%y : f32[2,3,4] = Add(%s, %me) @add_mask\n"
    "%we : f32[2,3,4] = Expand(%m, %shp) @expand_wide\n"
    "%w : f32[2,3,4] = Mul(%we, %k) @scale_wide\n"
    "%oe : f32[2,3,4] = Expand(%m, %shp) @expand_out\n"
    "%o : f32[2,3,4] = Sub(%s, %oe) @sub_out\n"
    "output %y\n"
    "output %w\n"
    "output %o\n"
    "output %oe\n";

static void test_expand_broadcast(void **state) {
  (void)state;
  Diag d;
  diag_init(&d, "t.ir", stderr);
  Graph *g = ir_parse(k_expand, "t.ir", &d);
  assert_non_null(g);
  assert_true(pass_infer(g, &d));
  assert_true(pass_fuse_elementwise(g, true, &d));
  assert_true(pass_dce(g, &d));
  assert_true(ir_verify(g, true, &d));
  assert_int_equal(count_op(g, OP_Expand), 2);
  /* the Add and the Sub then read s and m alike: siblings, one kernel
   * (test_siblings) of two outputs, whose operands are s and m */
  const Node *add = producer_of(g, "y"), *sub = producer_of(g, "o");
  assert_ptr_equal(add, sub);
  assert_int_equal(add->op, OP_FusedElementwise);
  assert_int_equal(add->n_in, 2);
  assert_string_equal(add->in[0]->name, "s");
  assert_string_equal(add->in[1]->name, "m");
  assert_string_equal(producer_of(g, "w")->in[0]->name, "we");
  assert_int_equal(d.n_errors, 0);
  diag_free(&d);
  ir_graph_free(g);
}

/* Transposes and Slices only a fused kernel reads are read in place: the
 * kernel takes the first buffer and a view of it (onnxc.views), the body
 * keeps the logical shape, and the loads index the buffer through the view's
 * offset and strides. A single elementwise node reading one becomes a kernel
 * of one step; a Transpose read twice stays. */
static const char *k_transpose =
    "graph g opset 17\n"
    "input %x : f32[2,3,4]\n"
    "input %y : f32[3,4,2]\n"
    "input %w : f32[4,2]\n"
    "%t : f32[3,4,2] = Transpose{perm=ints[1,2,0]}(%x) @nhwc\n"
    "%a : f32[3,4,2] = Add(%t, %y) @add\n"
    "%r : f32[3,4,2] = Relu(%a) @relu\n"
    "%u : f32[2,4] = Transpose(%w) @flip\n"
    "%n : f32[2,4] = Neg(%u) @neg\n"
    "%v : f32[2,4] = Transpose(%w) @shared\n"
    "%s : f32[2,4] = Abs(%v) @abs\n"
    "const %st : i64[2] = [1, 0]\n"
    "const %en : i64[2] = [3, 4]\n"
    "const %ax : i64[2] = [1, 2]\n"
    "const %sp : i64[2] = [1, 2]\n"
    "%c : f32[2,2,2] = Slice(%x, %st, %en, %ax, %sp) @cut\n"
    "%ct : f32[2,2,2] = Transpose{perm=ints[2,1,0]}(%c) @cut_t\n"
    "%q : f32[2,2,2] = Sigmoid(%ct) @sig\n"
    "output %q\n"
    "output %r\n"
    "output %n\n"
    "output %s\n"
    "output %v\n";

static void test_transpose_in_place(void **state) {
  (void)state;
  Diag d;
  diag_init(&d, "t.ir", stderr);
  Graph *g = parse_fused(k_transpose, &d);
  assert_int_equal(count_op(g, OP_Transpose), 1);
  assert_int_equal(count_op(g, OP_FusedElementwise), 3);
  assert_int_equal(count_op(g, OP_Slice), 0);
  const Node *f = producer_of(g, "r"), *neg = producer_of(g, "n");
  assert_int_equal(f->op, OP_FusedElementwise);
  assert_string_equal(f->in[0]->name, "x");
  int64_t off = -1, vs[IR_MAX_RANK];
  assert_true(kd_operand_view(f, 0, &off, vs));
  assert_int_equal(off, 0);
  assert_false(kd_operand_view(f, 1, &off, vs));
  assert_int_equal(kd_operand_shape(f, 0)->d[0], 3);
  int64_t st[IR_MAX_RANK];
  assert_int_equal(kd_operand_strides(f, 0, st), 0);  /* x is [2,3,4]: strides 12, 4, 1 */
  assert_int_equal(st[0], 4);
  assert_int_equal(st[1], 1);
  assert_int_equal(st[2], 12);
  Buf o;
  buf_init(&o);
  buf_puts(&o, "");
  kd_operand_offset(f, 0, &f->out[0]->shape, "i", &o);
  assert_string_equal(o.s, "(i / 8) * 4 + (i / 2 % 4) + (i % 2) * 12");
  buf_free(&o);
  assert_int_equal(neg->op, OP_FusedElementwise);
  assert_string_equal(neg->in[0]->name, "w");
  assert_true(kd_operand_view(neg, 0, &off, vs));
  assert_int_equal(vs[0], 1);  /* w is [4,2]; its transpose's dim 0 is w's dim 1 */
  assert_int_equal(vs[1], 2);
  /* a Slice under the Transpose: x[:, 1:3, ::2] transposed, one view */
  const Node *sl = producer_of(g, "q");
  assert_int_equal(sl->op, OP_FusedElementwise);
  assert_string_equal(sl->in[0]->name, "x");
  assert_true(kd_operand_view(sl, 0, &off, vs));
  assert_int_equal(off, 4);     /* x[0][1][0] */
  assert_int_equal(vs[0], 2);   /* logical [2 (last, step 2), 2 (rows 1..2), 2 (batch)] */
  assert_int_equal(vs[1], 4);
  assert_int_equal(vs[2], 12);
  assert_int_equal(producer_of(g, "s")->op, OP_Abs);
  assert_int_equal(d.n_errors, 0);
  diag_free(&d);
  ir_graph_free(g);
}

/* Sibling chains on one value (passes/fuse_elementwise.c, merge_siblings):
 * a Relu and a Sigmoid-Mul chain read x, each reduced afterwards (the
 * Relu's reduction comes first in the model); a YOLO-like pair reads two slices of z. */
static const char *k_siblings =
    "graph g opset 17\n"
    "input %x : f32[2,3]\n"
    "input %z : f32[1,4,3]\n"
    "const %c : f32[] = [2.0]\n"
    "const %s0 : i64[1] = [0]\n"
    "const %s2 : i64[1] = [2]\n"
    "const %s4 : i64[1] = [4]\n"
    "const %ax : i64[1] = [1]\n"
    "%r : f32[2,3] = Relu(%x) @relu\n"
    "%e : f32[2,3] = Sigmoid(%x) @sig\n"
    "%m : f32[2,3] = Mul(%e, %c) @mul\n"
    "%q : f32[2,1] = ReduceSum{keepdims=1}(%r, %ax) @rsum\n"
    "%lt : f32[1,2,3] = Slice(%z, %s0, %s2, %ax) @lt\n"
    "%rb : f32[1,2,3] = Slice(%z, %s2, %s4, %ax) @rb\n"
    "%x1 : f32[1,2,3] = Sub(%c, %lt) @sub\n"
    "%x2 : f32[1,2,3] = Add(%rb, %c) @add\n"
    "%q2 : f32[2,1] = ReduceSum{keepdims=1}(%m, %ax) @rsum2\n"
    "output %q\n"
    "output %q2\n"
    "output %x1\n"
    "output %x2\n";

static void test_siblings(void **state) {
  (void)state;
  Diag d;
  diag_init(&d, "t.ir", stderr);
  Graph *g = parse_fused(k_siblings, &d);
  assert_int_equal(count_op(g, OP_FusedElementwise), 2);
  assert_int_equal(count_op(g, OP_Relu) + count_op(g, OP_Sigmoid) + count_op(g, OP_Slice), 0);
  const Node *f = producer_of(g, "q2")->in[0]->producer;
  assert_int_equal(f->op, OP_FusedElementwise);
  assert_int_equal(f->n_out, 2);
  /* the ReduceSum reads output 0 and now runs after the merged kernel */
  const Node *rs = producer_of(g, "q");
  assert_ptr_equal(rs->in[0], f->out[0]);
  bool after = false;
  for (const Node *n = f->next; n; n = n->next)
    after |= n == rs;
  assert_true(after);
  Kdesc k;
  char ops[256];
  assert_true(kd_build(f, &k, &d));
  body_ops(&k, ops, sizeof ops);
  assert_string_equal(ops, "Relu Sigmoid Mul");
  assert_int_equal(f->n_in, 2);  /* x once, c */
  assert_int_equal(k.n_out, 2);
  assert_int_equal(k.out_step[0], 0);
  assert_int_equal(k.out_step[1], 2);
  Buf st, res[2];
  buf_init(&st);
  buf_puts(&st, "");
  for (int o = 0; o < 2; o++) {
    buf_init(&res[o]);
    buf_puts(&res[o], "");
  }
  assert_true(kd_emit_outputs(&k, true, "", &st, res, &d));
  /* the Relu is only stored: no statement; the Sigmoid feeds the Mul */
  assert_null(strstr(st.s, "t0"));
  assert_non_null(strstr(st.s, "const float t1 = (float)((1.0f / (1.0f + onnxc_expf(-a0))));"));
  assert_non_null(strstr(res[0].s, "a0 > 0"));
  assert_non_null(strstr(res[1].s, "(t1 * a1)"));
  /* a body of two outputs is no single-result chain */
  Buf one;
  buf_init(&one);
  buf_puts(&one, "");
  st.len = 0;
  assert_false(kd_emit(&k, true, "", &st, &one, &d));
  assert_int_equal(d.n_errors, 1);
  d.n_errors = 0;
  buf_free(&one);
  /* the slices' pair: one operand per view of z, the constant once */
  const Node *y = producer_of(g, "x1");
  assert_ptr_equal(y, producer_of(g, "x2"));
  assert_int_equal(y->n_in, 3);
  assert_string_equal(y->in[1]->name, "z");
  assert_ptr_equal(y->in[1], y->in[2]);
  int64_t off = -1, vs[IR_MAX_RANK];
  assert_true(kd_operand_view(y, 1, &off, vs));
  assert_int_equal(off, 0);
  assert_true(kd_operand_view(y, 2, &off, vs));
  assert_int_equal(off, 6);  /* z[0][2][0] */
  assert_false(kd_operand_view(y, 0, &off, vs));
  /* memory: both outputs are written at the merged kernel's step, so their
   * buffers are live together and do not overlap; each lives to its
   * reduction */
  Plan plan;
  assert_true(pass_memplan(g, &plan, onnxc_test_target(), &d));
  const PlanTensor *t[2] = {NULL, NULL};
  for (int i = 0; i < plan.n_tensors; i++)
    for (int o = 0; o < 2; o++)
      if (plan.tensors[i].value_id == f->out[o]->id)
        t[o] = &plan.tensors[i];
  assert_non_null(t[0]);
  assert_non_null(t[1]);
  assert_int_equal(t[0]->first, t[1]->first);
  assert_true(t[0]->last > t[0]->first && t[1]->last > t[1]->first);
  assert_true(t[0]->offset + t[0]->size <= t[1]->offset || t[1]->offset + t[1]->size <= t[0]->offset);
  for (int o = 0; o < 2; o++)
    buf_free(&res[o]);
  buf_free(&st);
  assert_int_equal(d.n_errors, 0);
  diag_free(&d);
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_groups_and_description),
      cmocka_unit_test(test_types),
      cmocka_unit_test(test_casts),
      cmocka_unit_test(test_expand_broadcast),
      cmocka_unit_test(test_transpose_in_place),
      cmocka_unit_test(test_siblings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
