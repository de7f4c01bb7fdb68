/* emit_string.c - C emission for string tensors: StringConcat, StringSplit,
 * StringNormalizer, RegexFullMatch, ai.onnx.ml LabelEncoder, and Equal on
 * strings; the string constants of a model and the helpers the kernels share.
 *
 * A string element is `onnxc_str` (const char *, NUL-terminated UTF-8). Ops
 * that select or compare strings copy pointers; ops that make strings write
 * their characters into the node's buffer S, which the plan keeps until the
 * end of the run (codegen/target.c), and return ONNXC_ERR_CAPACITY
 * when it is too small. Constant strings (initializers, attributes) become
 * static const tables. The helpers (string_write_prelude) go once at the top of
 * NAME.c; RegexFullMatch's NFA (passes/regex.c) is baked into tables and
 * simulated by onnxc_re_full, a Thompson set simulation with an explicit
 * stack. docs/strings.md describes the ABI.
 */
#include "codegen_internal.h"

#include <string.h>

/* Opcodes of passes/regex.h (kept equal by hand): 0 CHAR, 1 ANY, 2 ANYNL,
 * 3 CLASS, 4 SPLIT, 5 JMP, 6 BOL, 7 EOL, 8 WORDB, 9 NWORDB, 10 MATCH. */
static const char *const prelude[] = {
    "/* ---- string helpers (onnxc docs/strings.md) ---- */\n",
    "#ifndef ONNXC_STR_DEFINED\n#define ONNXC_STR_DEFINED\ntypedef const char *onnxc_str;\n#endif\n",
    "#ifndef ONNXC_STR_FN /* the CUDA target defines it: static __device__ */\n",
    "#if defined(__GNUC__) || defined(__clang__)\n#define ONNXC_STR_FN static __attribute__((unused))\n",
    "#else\n#define ONNXC_STR_FN static\n#endif\n#endif\n\n",
    "/* strcmp: bytes compared as unsigned. */\n",
    "ONNXC_STR_FN int onnxc_str_cmp(const char *a, const char *b) {\n",
    "  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;\n",
    "  while (*p && *p == *q) {\n    p++;\n    q++;\n  }\n  return (*p > *q) - (*p < *q);\n}\n\n",
    "/* ASCII case mapping: mode 1 lower, 2 upper, else none. */\n",
    "ONNXC_STR_FN unsigned onnxc_str_case(unsigned c, int mode) {\n",
    "  if (mode == 1 && c >= 'A' && c <= 'Z')\n    return c + 32u;\n",
    "  if (mode == 2 && c >= 'a' && c <= 'z')\n    return c - 32u;\n  return c;\n}\n\n",
    "/* Compares with ASCII letters folded to lower case. */\n",
    "ONNXC_STR_FN int onnxc_str_icmp(const char *a, const char *b) {\n",
    "  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;\n",
    "  while (*p && onnxc_str_case(*p, 1) == onnxc_str_case(*q, 1)) {\n    p++;\n    q++;\n  }\n",
    "  return (onnxc_str_case(*p, 1) > onnxc_str_case(*q, 1)) - (onnxc_str_case(*p, 1) < onnxc_str_case(*q, 1));\n}\n\n",
    "/* Appends n bytes of s (n < 0: up to its NUL), case-mapped, at *c, and a NUL\n",
    " * when terminate; ONNXC_ERR_CAPACITY when that would pass end. */\n",
    "ONNXC_STR_FN int onnxc_str_put(char **c, char *end, const char *s, ptrdiff_t n, int mode, int terminate) {\n",
    "  ptrdiff_t i;\n",
    "  for (i = 0; n < 0 ? s[i] != 0 : i < n; i++) {\n",
    "    if (*c == end)\n      return ONNXC_ERR_CAPACITY;\n",
    "    *(*c)++ = (char)onnxc_str_case((unsigned char)s[i], mode);\n  }\n",
    "  if (terminate) {\n    if (*c == end)\n      return ONNXC_ERR_CAPACITY;\n    *(*c)++ = 0;\n  }\n",
    "  return ONNXC_OK;\n}\n\n",
    "/* Python's str.isspace on ASCII. */\n",
    "ONNXC_STR_FN int onnxc_str_space(unsigned char c) {\n",
    "  return c == ' ' || (c >= 9 && c <= 13) || (c >= 28 && c <= 31);\n}\n\n",
    "/* Splits s like Python's str.split(delim or None, maxsplit): at each delim,\n",
    " * or (delim empty) at runs of whitespace, leading and trailing ones dropped;\n",
    " * at most maxsplit splits when maxsplit >= 0. Counts the pieces in *count;\n",
    " * with out, also copies them (NUL-terminated) to the chars at *c and points\n",
    " * out[0..) at them, failing with ONNXC_ERR_CAPACITY past cap pieces or end. */\n",
    "ONNXC_STR_FN int onnxc_str_split(const char *s, const char *delim, long long maxsplit, onnxc_str *out,\n",
    "                                 long long cap, char **c, char *end, long long *count) {\n",
    "  long long k = 0;\n  ptrdiff_t dl = 0, i = 0, j;\n  int st;\n",
    "  while (delim[dl])\n    dl++;\n",
    "  for (;;) {\n",
    "    ptrdiff_t from, to, next = -1;\n",
    "    if (dl > 0) {\n",
    "      from = i;\n",
    "      for (j = i; (maxsplit < 0 || k < maxsplit) && s[j]; j++) {\n",
    "        ptrdiff_t m = 0;\n        while (m < dl && s[j + m] == delim[m])\n          m++;\n",
    "        if (m == dl) {\n          next = j + dl;\n          break;\n        }\n      }\n",
    "      to = next >= 0 ? next - dl : j;\n",
    "      if (next < 0)\n        while (s[to])\n          to++;\n",
    "    } else {\n",
    "      while (s[i] && onnxc_str_space((unsigned char)s[i]))\n        i++;\n",
    "      if (!s[i])\n        break;\n",
    "      from = i;\n      to = i;\n",
    "      if (maxsplit >= 0 && k >= maxsplit) {\n        while (s[to])\n          to++;\n",
    "      } else {\n        while (s[to] && !onnxc_str_space((unsigned char)s[to]))\n          to++;\n",
    "        next = s[to] ? to : -1;\n      }\n",
    "    }\n",
    "    if (out) {\n      if (k >= cap)\n        return ONNXC_ERR_CAPACITY;\n      out[k] = *c;\n",
    "      if ((st = onnxc_str_put(c, end, s + from, to - from, 0, 1)) != ONNXC_OK)\n        return st;\n    }\n",
    "    k++;\n",
    "    if (next < 0)\n      break;\n",
    "    i = next;\n  }\n",
    "  *count = k;\n  return ONNXC_OK;\n}\n\n",
    "/* A regex program (RegexFullMatch): n instructions op/x/y, classes as\n",
    " * ranges rng[2 * cls[k]] .. rng[2 * cls[k + 1]] (inclusive pairs). */\n",
    "typedef struct onnxc_re {\n  int32_t n;\n  const unsigned char *op;\n  const int32_t *x, *y, *cls;\n",
    "  const uint32_t *rng;\n} onnxc_re;\n\n",
    "/* The next UTF-8 code point at *p (an invalid byte reads as itself); -1 at the end. */\n",
    "ONNXC_STR_FN int32_t onnxc_utf8_next(const unsigned char **p) {\n",
    "  const unsigned char *s = *p;\n  int32_t c = s[0];\n  int len, i;\n",
    "  if (!c)\n    return -1;\n",
    "  len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;\n",
    "  for (i = 1; i < len; i++)\n    if ((s[i] & 0xC0) != 0x80)\n      len = 1;\n",
    "  if (len > 1) {\n    c &= 0x7F >> len;\n    for (i = 1; i < len; i++)\n      c = (c << 6) | (s[i] & 0x3F);\n  }\n",
    "  *p += len;\n  return c;\n}\n\n",
    "ONNXC_STR_FN int onnxc_re_word(int32_t c) {\n",
    "  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';\n}\n\n",
    "/* Adds pc and what it reaches without input to list (each once per gen). */\n",
    "ONNXC_STR_FN void onnxc_re_add(const onnxc_re *re, int32_t *list, int32_t *n, int32_t *mark, int32_t *stack,\n",
    "                               int32_t pc, int32_t gen, int32_t prev, int32_t next) {\n",
    "  int32_t sp = 0;\n",
    "  if (mark[pc] == gen)\n    return;\n",
    "  mark[pc] = gen;\n  stack[sp++] = pc;\n",
    "  while (sp > 0) {\n",
    "    int32_t i = stack[--sp], to[2];\n    int k = 0, j;\n",
    "    switch (re->op[i]) {\n",
    "    case 5: to[k++] = re->x[i]; break;\n",
    "    case 4: to[k++] = re->y[i]; to[k++] = re->x[i]; break;\n",
    "    case 6: if (prev < 0) to[k++] = i + 1; break;\n",
    "    case 7: if (next < 0) to[k++] = i + 1; break;\n",
    "    case 8: if (onnxc_re_word(prev) != onnxc_re_word(next)) to[k++] = i + 1; break;\n",
    "    case 9: if (onnxc_re_word(prev) == onnxc_re_word(next)) to[k++] = i + 1; break;\n",
    "    default: list[(*n)++] = i; break;\n    }\n",
    "    for (j = 0; j < k; j++)\n",
    "      if (mark[to[j]] != gen) {\n        mark[to[j]] = gen;\n        stack[sp++] = to[j];\n      }\n",
    "  }\n}\n\n",
    "/* 1 when the whole text matches; w holds 4 * re->n int32 of scratch. */\n",
    "ONNXC_STR_FN int onnxc_re_full(const onnxc_re *re, const char *text, int32_t *w) {\n",
    "  int32_t *mark = w, *cl = w + re->n, *nl = w + 2 * re->n, *stack = w + 3 * re->n, *t;\n",
    "  int32_t ncl = 0, nnl, gen = 0, i, prev = -1, cur, next;\n",
    "  const unsigned char *s = (const unsigned char *)text;\n",
    "  for (i = 0; i < re->n; i++)\n    mark[i] = -1;\n",
    "  cur = onnxc_utf8_next(&s);\n",
    "  onnxc_re_add(re, cl, &ncl, mark, stack, 0, gen, prev, cur);\n",
    "  while (cur >= 0 && ncl > 0) {\n",
    "    next = onnxc_utf8_next(&s);\n    nnl = 0;\n    gen++;\n",
    "    for (i = 0; i < ncl; i++) {\n",
    "      int32_t pc = cl[i], k;\n      int take = 0;\n",
    "      switch (re->op[pc]) {\n",
    "      case 0: take = re->x[pc] == cur; break;\n",
    "      case 1: take = cur != '\\n'; break;\n",
    "      case 2: take = 1; break;\n",
    "      case 3:\n",
    "        for (k = re->cls[re->x[pc]]; k < re->cls[re->x[pc] + 1] && !take; k++)\n",
    "          take = (uint32_t)cur >= re->rng[2 * k] && (uint32_t)cur <= re->rng[2 * k + 1];\n",
    "        break;\n      default: break;\n      }\n",
    "      if (take)\n        onnxc_re_add(re, nl, &nnl, mark, stack, pc + 1, gen, cur, next);\n",
    "    }\n",
    "    t = cl;\n    cl = nl;\n    nl = t;\n    ncl = nnl;\n    prev = cur;\n    cur = next;\n  }\n",
    "  if (cur >= 0)\n    return 0;\n",
    "  for (i = 0; i < ncl; i++)\n    if (re->op[cl[i]] == 10)\n      return 1;\n",
    "  return 0;\n}\n\n",
    NULL};

void string_write_prelude(Buf *b) {
  for (int i = 0; prelude[i]; i++)
    buf_puts(b, prelude[i]);
}

static int64_t numel(const Value *v) {
  int64_t k = 0;
  IR_ASSERT(shape_numel(&v->shape, &k));
  return k;
}

static int64_t scratch(const EmitC *e, const Node *n) {
  return e->plan->scratch_size ? e->plan->scratch_size[n->id] : 0;
}

bool string_used(const Graph *g) {
  for (int i = 0; i < g->n_values; i++)
    if (g->values[i]->dt == DT_STRING && (g->values[i]->n_uses > 0 || g->values[i]->is_output))
      return true;
  for (const Node *n = g->first; n; n = n->next)
    if (n->op == OP_LabelEncoder || n->op == OP_RegexFullMatch)
      return true;
  return false;
}

bool string_node_ok(const Node *n) {
  switch (n->op) {
  case OP_StringConcat:
  case OP_StringSplit:
  case OP_StringNormalizer:
  case OP_RegexFullMatch:
  case OP_LabelEncoder:
    return true;
  case OP_Equal:
    return n->in[0]->dt == DT_STRING && n->in[1]->dt == DT_STRING;
  default:
    return false;
  }
}

/* ---- string literals and tables ---------------------------------------------- */

/* Longer string literals draw -Woverlength-strings under -pedantic (C99
 * promises 4095 characters); those become char arrays. */
#define LIT_MAX 4000

void string_table(Buf *b, const char *indent, const char *name, const char *const *v, int64_t count) {
  for (int64_t i = 0; i < count; i++) {
    size_t len = strlen(v[i]);
    if (len <= LIT_MAX)
      continue;
    buf_printf(b, "%sstatic const char %s_l%lld[%zu] = {", indent, name, (long long)i, len + 1);
    for (size_t k = 0; k < len; k++)
      buf_printf(b, "%s%d", k % 16 ? ", " : k ? ",\n    " : "", (int)(signed char)v[i][k]);
    buf_puts(b, ", 0};\n");
  }
  buf_printf(b, "%sstatic const onnxc_str %s[%lld] = {", indent, name, (long long)(count > 0 ? count : 1));
  for (int64_t i = 0; i < count; i++) {
    buf_puts(b, i % 8 ? ", " : i ? ",\n    " : "");
    if (strlen(v[i]) > LIT_MAX)
      buf_printf(b, "%s_l%lld", name, (long long)i);
    else
      cg_c_string(b, v[i]);
  }
  buf_puts(b, count > 0 ? "};\n" : "\"\"};\n");
}

static void body_table(EmitC *e, const char *name, const char *const *v, int64_t count) {
  string_table(e->b, "  ", name, v, count);
}

/* `ptrdiff_t VAR = <index of input `in` for output element i>` (numpy broadcast). */
static void bcast_index(EmitC *e, const Shape *out, const Shape *in, const char *var) {
  int64_t nin = 1, nout = 1;
  shape_numel(in, &nin);
  shape_numel(out, &nout);
  if (nin == nout) {
    ec_line(e, "ptrdiff_t %s = i;", var);
    return;
  }
  if (nin == 1) {
    ec_line(e, "ptrdiff_t %s = 0;", var);
    return;
  }
  int64_t st[IR_MAX_RANK];
  ec_strides(in, st);
  ec_line(e, "ptrdiff_t %s = 0, r_%s = i;", var, var);
  for (int k = out->rank - 1; k >= 0; k--) {
    int ki = k - (out->rank - in->rank);
    if (ki >= 0 && in->d[ki] != 1)
      ec_line(e, "%s += (r_%s %% %lld) * %lld;", var, var, (long long)out->d[k], (long long)st[ki]);
    if (k > 0)
      ec_line(e, "r_%s /= %lld;", var, (long long)out->d[k]);
  }
}

/* ---- Equal on strings, StringConcat ------------------------------------------- */

bool emitc_string_equal(EmitC *e, const Node *n) {
  int64_t total = numel(n->out[0]);
  if (total == 0)
    return true;
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", (long long)total);
  bcast_index(e, &n->out[0]->shape, &n->in[0]->shape, "ia");
  bcast_index(e, &n->out[0]->shape, &n->in[1]->shape, "ib");
  ec_line(e, "Y0[i] = (uint8_t)(onnxc_str_cmp(X0[ia], X1[ib]) == 0);");
  ec_line(e, "}");
  return true;
}

bool emitc_StringConcat(EmitC *e, const Node *n) {
  int64_t total = numel(n->out[0]), cap = scratch(e, n);
  if (total == 0)
    return true;
  IR_ASSERT(cap > 0);
  ec_line(e, "char *c = (char *)S, *end = (char *)S + %lld;", (long long)cap);
  ec_line(e, "int st;");
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", (long long)total);
  bcast_index(e, &n->out[0]->shape, &n->in[0]->shape, "ia");
  bcast_index(e, &n->out[0]->shape, &n->in[1]->shape, "ib");
  ec_line(e, "Y0[i] = c;");
  ec_line(e, "if ((st = onnxc_str_put(&c, end, X0[ia], -1, 0, 0)) != ONNXC_OK || "
             "(st = onnxc_str_put(&c, end, X1[ib], -1, 0, 1)) != ONNXC_OK)");
  ec_line(e, "  return st;");
  ec_line(e, "}");
  return true;
}

/* ---- StringSplit ------------------------------------------------------------------ */

bool emitc_StringSplit(EmitC *e, const Node *n) {
  const Value *x = n->in[0];
  int64_t count = numel(x), maxsplit = ir_attr_int(n, "maxsplit", -1);
  bool want_y = ec_has_output(n, 0), want_z = ec_has_output(n, 1);
  int64_t k = want_y ? n->out[0]->shape.d[x->shape.rank] : 0, cap = scratch(e, n);
  Buf lit;
  buf_init(&lit);
  cg_c_string(&lit, ir_attr_str(n, "delimiter", ""));
  ec_line(e, "long long kmax = 0, cnt = 0;");
  ec_line(e, "int st = ONNXC_OK;");
  ec_line(e, "(void)cnt;");
  ec_line(e, "(void)st;");
  for (int i = 0; i < 2; i++)
    if (ec_has_output(n, i))
      ec_line(e, "(void)Y%d;", i);
  if (want_y) {
    IR_ASSERT(cap > 0);
    ec_line(e, "char *c = (char *)S, *end = (char *)S + %lld;", (long long)cap);
    ec_line(e, "(void)c;");
    ec_line(e, "(void)end;");
  }
  /* Pass 1: the pieces of each element, and the largest count. */
  if (count > 0) {
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", (long long)count);
    ec_line(e, "if ((st = onnxc_str_split(X0[i], %s, %lldLL, 0, 0, 0, 0, &cnt)) != ONNXC_OK)", lit.s,
            (long long)maxsplit);
    ec_line(e, "  return st;");
    if (want_z)
      ec_line(e, "Y1[i] = (int64_t)cnt;");
    ec_line(e, "if (cnt > kmax)");
    ec_line(e, "  kmax = cnt;");
    ec_line(e, "}");
  }
  if (want_y) {
    /* Pass 2: row i of kmax pieces, padded with "" (docs/abi.md: the data
     * of the reported dims, row-major, from the buffer's start). */
    ec_line(e, "if (kmax > %lld)", (long long)k);
    ec_line(e, "  return ONNXC_ERR_CAPACITY;");
    if (count > 0) {
      ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", (long long)count);
      ec_line(e, "if ((st = onnxc_str_split(X0[i], %s, %lldLL, Y0 + i * kmax, kmax, &c, end, &cnt)) != ONNXC_OK)",
              lit.s, (long long)maxsplit);
      ec_line(e, "  return st;");
      ec_line(e, "for (; cnt < kmax; cnt++)");
      ec_line(e, "  Y0[i * kmax + cnt] = \"\";");
      ec_line(e, "}");
    }
    for (int i = 0; i < x->shape.rank; i++)
      ec_line(e, "D0[%d] = %lld;", i, (long long)x->shape.d[i]);
    ec_line(e, "D0[%d] = (int64_t)kmax;", x->shape.rank);
  } else {
    ec_line(e, "(void)kmax;");
  }
  buf_free(&lit);
  return true;
}

/* ---- StringNormalizer ------------------------------------------------------------- */

bool emitc_StringNormalizer(EmitC *e, const Node *n) {
  const Value *x = n->in[0], *y = n->out[0];
  int64_t c = x->shape.d[x->shape.rank - 1], cap = scratch(e, n);
  const char *act = ir_attr_str(n, "case_change_action", "NONE");
  int mode = strcmp(act, "LOWER") == 0 ? 1 : strcmp(act, "UPPER") == 0 ? 2 : 0;
  const Attr *sw = ir_attr(n, "stopwords");
  int n_stop = sw && sw->kind == AT_STRINGS ? sw->n : 0;
  bool sensitive = ir_attr_int(n, "is_case_sensitive", 0) != 0;
  if (mode) {
    IR_ASSERT(cap > 0);
    ec_line(e, "char *c = (char *)S, *end = (char *)S + %lld;", (long long)cap);
    ec_line(e, "int st;");
    ec_line(e, "(void)c;");
    ec_line(e, "(void)end;");
    ec_line(e, "(void)st;");
  }
  if (n_stop)
    body_table(e, "stop", sw->u.ss, n_stop);
  ec_line(e, "ptrdiff_t k = 0;");
  if (c > 0) {
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", (long long)c);
    if (n_stop) {
      ec_line(e, "int drop = 0;");
      ec_line(e, "for (int j = 0; j < %d && !drop; j++)", n_stop);
      ec_line(e, "  drop = %s(X0[i], stop[j]) == 0;", sensitive ? "onnxc_str_cmp" : "onnxc_str_icmp");
      ec_line(e, "if (drop)");
      ec_line(e, "  continue;");
    }
    if (mode) {
      ec_line(e, "Y0[k] = c;");
      ec_line(e, "if ((st = onnxc_str_put(&c, end, X0[i], -1, %d, 1)) != ONNXC_OK)", mode);
      ec_line(e, "  return st;");
      ec_line(e, "k++;");
    } else {
      ec_line(e, "Y0[k++] = X0[i];");
    }
    ec_line(e, "}");
  }
  if (!y->dyn_dims) {
    ec_line(e, "(void)k;");
    return true;
  }
  /* Every element dropped: one empty string ([""] or [[""]]). */
  ec_line(e, "if (k == 0)");
  ec_line(e, "  Y0[k++] = \"\";");
  if (x->shape.rank == 2)
    ec_line(e, "D0[0] = 1;");
  ec_line(e, "D0[%d] = (int64_t)k;", x->shape.rank - 1);
  return true;
}

/* ---- RegexFullMatch ------------------------------------------------------------------ */

static void int_table(EmitC *e, const char *ctype, const char *name, const int64_t *v, int count) {
  Buf b;
  buf_init(&b);
  buf_printf(&b, "  static const %s %s[%d] = {", ctype, name, count > 0 ? count : 1);
  for (int i = 0; i < count; i++)
    buf_printf(&b, "%s%lld", i % 16 ? ", " : i ? ",\n    " : "", (long long)v[i]);
  buf_puts(&b, count > 0 ? "};\n" : "0};\n");
  buf_puts(e->b, b.s);
  buf_free(&b);
}

bool emitc_RegexFullMatch(EmitC *e, const Node *n) {
  int n_op, n_x, n_y, n_cls, n_rng;
  const int64_t *op = ir_attr_ints(n, "onnxc.re_op", &n_op), *x = ir_attr_ints(n, "onnxc.re_x", &n_x);
  const int64_t *y = ir_attr_ints(n, "onnxc.re_y", &n_y), *cls = ir_attr_ints(n, "onnxc.re_cls", &n_cls);
  const int64_t *rng = ir_attr_ints(n, "onnxc.re_rng", &n_rng);
  IR_ASSERT(op && n_op > 0 && n_x == n_op && n_y == n_op && cls && n_cls >= 1);
  int64_t total = numel(n->out[0]);
  if (total == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  IR_ASSERT(scratch(e, n) >= 16 * (int64_t)n_op);
  int_table(e, "unsigned char", "re_op", op, n_op);
  int_table(e, "int32_t", "re_x", x, n_op);
  int_table(e, "int32_t", "re_y", y, n_op);
  int_table(e, "int32_t", "re_cls", cls, n_cls);
  int_table(e, "uint32_t", "re_rng", rng, n_rng);
  ec_line(e, "static const onnxc_re re = {%d, re_op, re_x, re_y, re_cls, re_rng};", n_op);
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++)", (long long)total);
  ec_line(e, "  Y0[i] = (uint8_t)onnxc_re_full(&re, X0[i], (int32_t *)(void *)S);");
  return true;
}

/* ---- LabelEncoder ---------------------------------------------------------------------- */

static const Tensor *tensor_attr(const Node *n, const char *name) {
  const Attr *a = ir_attr(n, name);
  return a && a->kind == AT_TENSOR ? a->u.t : NULL;
}

/* Element i of t as a C literal of its type. */
static void literal(Buf *b, const Tensor *t, int64_t i) {
  char lit[64];
  if (t->dt == DT_STRING)
    cg_c_string(b, ((const char **)t->data)[i]);
  else if (dtype_is_float(t->dt))
    buf_puts(b, ec_literal(t->dt, tensor_get_f64(t, i), lit, sizeof lit));
  else if (t->dt == DT_I64 && tensor_get_i64(t, i) == INT64_MIN)
    buf_puts(b, "(-9223372036854775807LL - 1)");
  else
    buf_printf(b, "%lld%s", (long long)tensor_get_i64(t, i), t->dt == DT_I64 ? "LL" : "");
}

static void values_table(EmitC *e, const char *name, const Tensor *t) {
  if (t->dt == DT_STRING) {
    body_table(e, name, (const char *const *)t->data, t->numel);
    return;
  }
  Buf b;
  buf_init(&b);
  buf_printf(&b, "  static const %s %s[%lld] = {", dtype_ctype(t->dt), name,
             (long long)(t->numel > 0 ? t->numel : 1));
  for (int64_t i = 0; i < t->numel; i++) {
    buf_puts(&b, i % 8 ? ", " : i ? ",\n    " : "");
    literal(&b, t, i);
  }
  buf_puts(&b, t->numel > 0 ? "};\n" : "0};\n");
  buf_puts(e->b, b.s);
  buf_free(&b);
}

bool emitc_LabelEncoder(EmitC *e, const Node *n) {
  const Tensor *keys = tensor_attr(n, "onnxc.keys"), *vals = tensor_attr(n, "onnxc.values");
  const Tensor *dflt = tensor_attr(n, "onnxc.default"), *nanv = tensor_attr(n, "onnxc.nan_value");
  IR_ASSERT(keys && vals && dflt && keys->numel == vals->numel);
  int64_t total = numel(n->out[0]);
  if (total == 0)
    return true;
  bool str = keys->dt == DT_STRING;
  const char *kt = str ? "onnxc_str" : dtype_ctype(keys->dt), *vt = vals->dt == DT_STRING ? "onnxc_str" : dtype_ctype(vals->dt);
  values_table(e, "keys", keys);
  values_table(e, "vals", vals);
  Buf b;
  buf_init(&b);
  literal(&b, dflt, 0);
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", (long long)total);
  ec_line(e, "const %s x = X0[i];", kt);
  ec_line(e, "ptrdiff_t lo = 0, hi = %lld;", (long long)keys->numel);
  if (nanv) {
    Buf nb;
    buf_init(&nb);
    literal(&nb, nanv, 0);
    ec_line(e, "if (x != x) {");
    ec_line(e, "Y0[i] = %s;", nb.s);
    ec_line(e, "continue;");
    ec_line(e, "}");
    buf_free(&nb);
  }
  ec_line(e, "while (lo < hi) {");
  ec_line(e, "ptrdiff_t mid = lo + (hi - lo) / 2;");
  if (str)
    ec_line(e, "if (onnxc_str_cmp(keys[mid], x) < 0)");
  else
    ec_line(e, "if (keys[mid] < x)");
  ec_line(e, "  lo = mid + 1;");
  ec_line(e, "else");
  ec_line(e, "  hi = mid;");
  ec_line(e, "}");
  if (str)
    ec_line(e, "Y0[i] = lo < %lld && onnxc_str_cmp(keys[lo], x) == 0 ? vals[lo] : (%s)%s;",
            (long long)keys->numel, vt, b.s);
  else
    ec_line(e, "Y0[i] = lo < %lld && keys[lo] == x ? vals[lo] : (%s)%s;", (long long)keys->numel, vt, b.s);
  ec_line(e, "}");
  buf_free(&b);
  return true;
}

/* Characters of the strings n makes (its scratch, kept to the end of the run:
 * codegen/target.c); 0 for a node that makes none. */
int64_t string_char_bytes(const Node *n) {
  if (n->op != OP_StringConcat && n->op != OP_StringSplit && n->op != OP_StringNormalizer)
    return 0;
  if (n->op == OP_StringNormalizer && strcmp(ir_attr_str(n, "case_change_action", "NONE"), "NONE") == 0)
    return 0; /* the output points at the input's strings */
  if (n->op == OP_StringSplit && (n->n_out < 1 || n->out[0]->kind == VK_NONE))
    return 0; /* only the counts are wanted */
  int64_t b = ir_attr_int(n, "onnxc.string_bytes", IR_STRING_BYTES);
  return b > 0 ? b : IR_STRING_BYTES;
}
