/* Unit tests of the string operators' inference (passes/infer_string.c), the
 * regex compiler (passes/regex.c) and the planning of string characters
 * (codegen/target.c, memplan.c). */
#include "target_util.h"
#include "test_util.h"
#include "codegen.h"
#include "regex.h"

#include <stdio.h>
#include <stdlib.h>

#include <math.h>

static void set_str(Node *n, const char *name, const char *v) {
  Attr *a = ir_attr_add(n, name, AT_STRING);
  a->u.s = v;
  a->slen = strlen(v);
}

static void set_strs(Node *n, const char *name, const char **v, int count) {
  Attr *a = ir_attr_add(n, name, AT_STRINGS);
  a->u.ss = v;
  a->n = count;
}

static void test_concat(void **state) {
  (void)state;
  Graph *g = gnew(20);
  Value *in[2] = {tin(g, "a", DT_STRING, 2, (int64_t[]){2, 3}), tin(g, "b", DT_STRING, 1, (int64_t[]){1})};
  Node *n = op(g, OP_StringConcat, 2, in, 1);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_STRING);
  assert_shape(n->out[0], 2, (int64_t[]){2, 3});
  assert_true(string_char_bytes(n) > 0);
  assert_true(string_char_bytes(n) > 0);
  Value *bad[2] = {in[0], tin(g, "c", DT_STRING, 1, (int64_t[]){2})};
  expect_error(op(g, OP_StringConcat, 2, bad, 1), "do not broadcast");
  Value *num[2] = {in[0], tin(g, "f", DT_F32, 1, (int64_t[]){1})};
  expect_error(op(g, OP_StringConcat, 2, num, 1), "input 1 has element type f32, expected string");
  ir_graph_free(g);
}

static void test_split(void **state) {
  (void)state;
  Graph *g = gnew(20);
  Value *x = tin(g, "x", DT_STRING, 2, (int64_t[]){2, 3});
  Node *n = op(g, OP_StringSplit, 1, &x, 2);
  ir_attr_set_int(n, "maxsplit", 2);
  expect_ok(n);
  assert_shape(n->out[0], 3, (int64_t[]){2, 3, 3});
  assert_int_equal(n->out[0]->dyn_dims, 1u << 2);
  assert_int_equal(n->out[1]->dt, DT_I64);
  assert_shape(n->out[1], 2, (int64_t[]){2, 3});
  assert_int_equal(n->out[1]->dyn_dims, 0);
  /* No maxsplit: the model's declared extent of a graph output bounds it. */
  Node *m = op(g, OP_StringSplit, 1, &x, 2);
  m->out[0]->shape = shape_make(3, (int64_t[]){2, 3, 7});
  ir_output_add(g, m->out[0]);
  expect_ok(m);
  assert_shape(m->out[0], 3, (int64_t[]){2, 3, 7});
  Node *k = op(g, OP_StringSplit, 1, &x, 1);
  expect_ok(k);
  assert_int_equal(k->out[0]->shape.d[2], 16);
  Value *f = tin(g, "f", DT_I64, 1, (int64_t[]){2});
  expect_error(op(g, OP_StringSplit, 1, &f, 2), "expected string");
  ir_graph_free(g);
}

static void test_normalizer(void **state) {
  (void)state;
  Graph *g = gnew(10);
  static const char *stops[] = {"monday"};
  Value *x = tin(g, "x", DT_STRING, 2, (int64_t[]){1, 6});
  Node *n = op(g, OP_StringNormalizer, 1, &x, 1);
  set_strs(n, "stopwords", stops, 1);
  set_str(n, "case_change_action", "UPPER");
  expect_ok(n);
  assert_shape(n->out[0], 2, (int64_t[]){1, 6});
  assert_int_equal(n->out[0]->dyn_dims, 1u << 1);
  assert_true(string_char_bytes(n) > 0);
  /* No stopwords, no case change: a static shape and no characters. */
  Node *p = op(g, OP_StringNormalizer, 1, &x, 1);
  expect_ok(p);
  assert_int_equal(p->out[0]->dyn_dims, 0);
  assert_int_equal(string_char_bytes(p), 0);
  assert_false(string_char_bytes(p) > 0);
  Node *b = op(g, OP_StringNormalizer, 1, &x, 1);
  set_str(b, "case_change_action", "TITLE");
  expect_error(b, "case_change_action 'TITLE'");
  Value *y = tin(g, "y", DT_STRING, 2, (int64_t[]){2, 3});
  expect_error(op(g, OP_StringNormalizer, 1, &y, 1), "takes [C] or [1, C]");
  ir_graph_free(g);
}

static void test_regex_infer(void **state) {
  (void)state;
  Graph *g = gnew(20);
  Value *x = tin(g, "x", DT_STRING, 1, (int64_t[]){4});
  Node *n = op(g, OP_RegexFullMatch, 1, &x, 1);
  set_str(n, "pattern", "a(b|c)*d");
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_BOOL);
  assert_shape(n->out[0], 1, (int64_t[]){4});
  assert_true(onnxc_test_target()->scratch_bytes(onnxc_test_target(), n) > 0);
  Node *u = op(g, OP_RegexFullMatch, 1, &x, 1);
  set_str(u, "pattern", "(?i)abc");
  expect_error(u, "unsupported group flags");
  Node *m = op(g, OP_RegexFullMatch, 1, &x, 1);
  set_str(m, "pattern", "(ab");
  expect_error(m, "missing )");
  Node *r = op(g, OP_RegexFullMatch, 1, &x, 1);
  set_str(r, "pattern", "a{2,1}");
  expect_error(r, "bad repetition count");
  expect_error(op(g, OP_RegexFullMatch, 1, &x, 1), "'pattern' (a string) is required");
  ir_graph_free(g);
}

static bool full(const char *pattern, const char *text) {
  Arena *a = arena_new();
  RegexProg p;
  char err[256];
  if (!regex_compile(pattern, a, &p, err, sizeof err))
    fail_msg("pattern '%s': %s", pattern, err);
  bool m = regex_full_match(&p, text);
  arena_free(a);
  return m;
}

static void test_regex_match(void **state) {
  (void)state;
  const char *basic = "www\\.[\\w.-]+\\.\\bcom\\b";
  assert_true(full(basic, "www.google.com"));
  assert_false(full(basic, "www.bbc.co.uk"));
  const char *email = "(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)";
  assert_true(full(email, "account@gmail.com"));
  assert_false(full(email, "account@hotmail.com"));
  assert_false(full(email, "not email"));
  assert_true(full(email, "account2@yahoo.com"));
  assert_false(full("a{2,3}", "a"));
  assert_true(full("a{2,3}", "aaa"));
  assert_false(full("a{2,3}", "aaaa"));
  assert_true(full("a{2,}", "aaaaa"));
  assert_true(full("", ""));
  assert_false(full("a", ""));
  assert_true(full("(a*)*b", "aaab"));         /* empty loops terminate */
  assert_true(full(".", "\xc3\xa9"));          /* one code point, two bytes */
  assert_false(full("..", "\xc3\xa9"));
  assert_true(full("[^a]b", "\xe4\xb8\xad" "b"));
  assert_false(full(".", "\n"));
  assert_true(full("[[:digit:]]+x", "123x"));
  assert_true(full("\\d+\\s\\D", "12 x"));
  assert_false(full("a\\Bb", "a b"));
  assert_true(full("\\x41\\x{4e2d}", "A\xe4\xb8\xad"));
  assert_true(full("(?:ab|cd)+?", "abcdab"));
  assert_true(full("(?P<n>x)y", "xy"));
  assert_true(full("a{,2}", "a{,2}"));         /* not a repetition: literal, as RE2 */
}

static Node *encoder(Graph *g, Value *x) {
  Node *n = op(g, OP_LabelEncoder, 1, &x, 1);
  n->domain = "ai.onnx.ml";
  return n;
}

static void test_label_encoder(void **state) {
  (void)state;
  Graph *g = gnew(13);
  static const char *keys[] = {"b", "a", "c", "a"};
  Value *x = tin(g, "x", DT_STRING, 1, (int64_t[]){5});
  Node *n = encoder(g, x);
  set_strs(n, "keys_strings", keys, 4);
  ir_attr_set_ints(n, "values_int64s", (int64_t[]){1, 0, 2, 7}, 4);
  expect_ok(n);
  assert_int_equal(n->out[0]->dt, DT_I64);
  assert_shape(n->out[0], 1, (int64_t[]){5});
  const Tensor *k = ir_attr(n, "onnxc.keys")->u.t, *v = ir_attr(n, "onnxc.values")->u.t;
  assert_int_equal(k->numel, 3); /* sorted, the last "a" wins */
  assert_string_equal(((const char **)k->data)[0], "a");
  assert_int_equal(((int64_t *)v->data)[0], 7);
  assert_string_equal(((const char **)k->data)[2], "c");
  assert_int_equal(((int64_t *)ir_attr(n, "onnxc.default")->u.t->data)[0], -1);

  Node *m = encoder(g, x);
  set_strs(m, "keys_strings", keys, 4);
  ir_attr_set_ints(m, "values_int64s", (int64_t[]){1, 0}, 2);
  expect_error(m, "4 keys but 2 values");
  Value *f = tin(g, "f", DT_F32, 1, (int64_t[]){3});
  Node *t = encoder(g, f);
  set_strs(t, "keys_strings", keys, 4);
  set_strs(t, "values_strings", keys, 4);
  expect_error(t, "input 0 has element type f32 but the keys are string");
  Node *nan = encoder(g, f);
  Attr *kf = ir_attr_add(nan, "keys_floats", AT_FLOATS);
  static float fk[2] = {1.5f, 0};
  fk[1] = NAN;
  kf->u.fs = fk;
  kf->n = 2;
  set_strs(nan, "values_strings", keys, 2);
  expect_ok(nan);
  assert_int_equal(nan->out[0]->dt, DT_STRING);
  assert_int_equal(ir_attr(nan, "onnxc.keys")->u.t->numel, 1);
  assert_string_equal(((const char **)ir_attr(nan, "onnxc.nan_value")->u.t->data)[0], "a");
  assert_string_equal(((const char **)ir_attr(nan, "onnxc.default")->u.t->data)[0], "_Unused");
  expect_error(encoder(g, x), "keys_* and a values_* attribute are required");
  ir_graph_free(g);
}

/* The characters of made strings outlive the node: its scratch is planned
 * until the end of the run, so a later node's buffers cannot reuse it. */
static void test_chars_persist(void **state) {
  (void)state;
  Graph *g = gnew(20);
  Value *in[2] = {tin(g, "a", DT_STRING, 1, (int64_t[]){2}), tin(g, "b", DT_STRING, 1, (int64_t[]){2})};
  Node *c1 = op(g, OP_StringConcat, 2, in, 1);
  Value *in2[2] = {c1->out[0], in[1]};
  Node *c2 = op(g, OP_StringConcat, 2, in2, 1);
  ir_output_add(g, c2->out[0]);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  assert_true(pass_infer(g, &d));
  Plan plan;
  assert_true(pass_memplan(g, &plan, onnxc_test_target(), &d));
  assert_true(plan_validate(g, &plan, &d));
  int persisted = 0;
  for (int i = 0; i < plan.n_tensors; i++)
    if (plan.tensors[i].node_id >= 0) {
      assert_int_equal(plan.tensors[i].last, 1);
      persisted++;
    }
  assert_int_equal(persisted, 2);
  assert_true(plan.arena_bytes >= 2 * 4096);
  diag_free(&d);
  ir_graph_free(g);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return buf;
}

/* The C target: the header gets the element typedef, NAME.c the helpers, a
 * string constant becomes a static table, and the kernel the character
 * buffer; a string reaching an op without a string kernel is an error. */
static void test_codegen(void **state) {
  (void)state;
  Graph *g = gnew(20);
  Value *a = tin(g, "a", DT_STRING, 1, (int64_t[]){2});
  int64_t one = 1;
  Shape s1 = shape_make(1, &one);
  Tensor *t = ir_tensor_new(g, DT_STRING, &s1, NULL);
  ((const char **)t->data)[0] = "?\"x\\";
  Value *in[2] = {a, ir_const_new(g, "suffix", t)};
  Node *n = op(g, OP_StringConcat, 2, in, 1);
  ir_output_add(g, n->out[0]);
  Diag d;
  diag_init(&d, "t.onnx", NULL);
  Plan plan;
  PipelineOpts po = {.opt_level = 2, .verify = true, .target = onnxc_test_target()};
  assert_true(passes_run(g, &po, &plan, &d));
  char dir[] = "/tmp/onnxc-strtest-XXXXXX";
  assert_non_null(mkdtemp(dir));
  CodegenOpts co = {.name = "m", .model_path = "t.onnx", .weights = WEIGHTS_C, .weights_section = NULL, .threads = 1};
  assert_true(codegen_c(g, &plan, &co, dir, &d));
  char path[256];
  snprintf(path, sizeof path, "%s/m.h", dir);
  const char *h = slurp(path);
  assert_non_null(strstr(h, "typedef const char *onnxc_str;"));
  assert_non_null(strstr(h, "int m_run(void *arena, const onnxc_str *in_a, onnxc_str *out_"));
  snprintf(path, sizeof path, "%s/m.c", dir);
  const char *c = slurp(path);
  assert_non_null(strstr(c, "static const onnxc_str m_s0[1] = {\"\\?\\\"x\\\\\"};"));
  assert_non_null(strstr(c, "ONNXC_STR_FN int onnxc_str_put("));
  assert_non_null(strstr(c, "(char *)S + 4096;"));
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  /* Strings into an op with no string kernel. */
  Graph *h2 = gnew(20);
  Value *x = tin(h2, "x", DT_STRING, 2, (int64_t[]){2, 3});
  Node *tr = op(h2, OP_Transpose, 1, &x, 1);
  ir_output_add(h2, tr->out[0]);
  assert_true(passes_run(h2, &po, &plan, &d));
  assert_false(codegen_c(h2, &plan, &co, "/tmp", &d));
  assert_non_null(strstr(diag_last(&d), "element type string"));
  diag_free(&d);
  ir_graph_free(g);
  ir_graph_free(h2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concat),          cmocka_unit_test(test_split),
      cmocka_unit_test(test_normalizer),      cmocka_unit_test(test_regex_infer),
      cmocka_unit_test(test_regex_match),     cmocka_unit_test(test_label_encoder),
      cmocka_unit_test(test_chars_persist),   cmocka_unit_test(test_codegen),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
