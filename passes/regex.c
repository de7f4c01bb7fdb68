/* regex.c - a subset of RE2 syntax compiled to a Thompson NFA (regex.h).
 *
 * Parse (recursive descent, nesting bounded) into a small tree, then emit the
 * program the classic way: concatenation in sequence, alternation and the
 * quantifiers as SPLIT/JMP, {n,m} as n copies and m-n optional ones. A run
 * keeps the set of live instructions per position (Pike/Thompson), so the
 * cost is O(text x program) with no backtracking.
 *
 * Supported: literals (UTF-8), `.`, classes `[...]` with ranges, negation,
 * escapes and [:alpha:]-style names; \d \D \w \W \s \S (ASCII, as in RE2);
 * \b \B \A \z ^ $ (^ and $ at the text's ends: no multi-line mode); escapes
 * \n \t \r \f \v \a \xHH \x{H..} and escaped punctuation; groups (...),
 * (?:...), (?P<name>...), (?<name>...); * + ? {n} {n,} {n,m} and their lazy
 * forms (laziness does not change whether a full match exists); |.
 * Not supported (an error at compile time): flags such as (?i), \p{..}
 * Unicode classes, \C, \Q..\E, back references (RE2 has none either).
 */
#include "regex.h"

#include <stdlib.h>
#include <string.h>

#define MAX_CP 0x10FFFF
#define MAX_DEPTH 200

typedef enum { N_EMPTY, N_LIT, N_ANY, N_CLASS, N_ASSERT, N_CAT, N_ALT, N_REPEAT } NKind;

typedef struct RNode {
  NKind k;
  int64_t v;            /* code point, class index or assertion opcode */
  int a, b;             /* children */
  int min, max;         /* N_REPEAT; max < 0: unbounded */
} RNode;

typedef struct Ranges {
  int64_t *r;           /* pairs */
  int n, cap;
} Ranges;

typedef struct Parser {
  const char *s, *p;
  RNode *nodes;
  int n_nodes, cap_nodes;
  Ranges *classes;
  int n_classes, cap_classes;
  char *err;
  size_t n_err;
  bool failed;
  int depth;
} Parser;

static bool fail(Parser *ps, const char *msg) {
  if (!ps->failed)
    snprintf(ps->err, ps->n_err, "%s at offset %d of the pattern", msg, (int)(ps->p - ps->s));
  ps->failed = true;
  return false;
}

static int node(Parser *ps, NKind k, int64_t v, int a, int b) {
  if (ps->n_nodes == ps->cap_nodes) {
    ps->cap_nodes = ps->cap_nodes ? 2 * ps->cap_nodes : 64;
    ps->nodes = realloc(ps->nodes, (size_t)ps->cap_nodes * sizeof *ps->nodes);
    IR_ASSERT(ps->nodes);
  }
  ps->nodes[ps->n_nodes] = (RNode){k, v, a, b, 0, 0};
  return ps->n_nodes++;
}

/* Decodes one UTF-8 code point at *p (an invalid byte reads as itself). */
static int64_t utf8_next(const char **p) {
  const unsigned char *s = (const unsigned char *)*p;
  int64_t c = s[0];
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  for (int i = 1; i < len; i++)
    if ((s[i] & 0xC0) != 0x80)
      len = 1;
  if (len > 1) {
    c &= 0x7F >> len;
    for (int i = 1; i < len; i++)
      c = (c << 6) | (s[i] & 0x3F);
  }
  *p += len;
  return c;
}

/* ---- classes ----------------------------------------------------------------- */

static void rng_add(Ranges *r, int64_t lo, int64_t hi) {
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 8;
    r->r = realloc(r->r, (size_t)r->cap * 2 * sizeof *r->r);
    IR_ASSERT(r->r);
  }
  r->r[2 * r->n] = lo;
  r->r[2 * r->n + 1] = hi;
  r->n++;
}

static int cmp_lo(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorts and merges overlapping or adjacent ranges. */
static void rng_norm(Ranges *r) {
  if (r->n == 0)
    return;
  qsort(r->r, (size_t)r->n, 2 * sizeof *r->r, cmp_lo);
  int k = 0;
  for (int i = 1; i < r->n; i++) {
    if (r->r[2 * i] <= r->r[2 * k + 1] + 1) {
      if (r->r[2 * i + 1] > r->r[2 * k + 1])
        r->r[2 * k + 1] = r->r[2 * i + 1];
    } else {
      k++;
      r->r[2 * k] = r->r[2 * i];
      r->r[2 * k + 1] = r->r[2 * i + 1];
    }
  }
  r->n = k + 1;
}

/* The complement over [0, MAX_CP] of a normalized set. */
static void rng_negate(Ranges *r) {
  Ranges out = {NULL, 0, 0};
  int64_t next = 0;
  for (int i = 0; i < r->n; i++) {
    if (r->r[2 * i] > next)
      rng_add(&out, next, r->r[2 * i] - 1);
    next = r->r[2 * i + 1] + 1;
  }
  if (next <= MAX_CP)
    rng_add(&out, next, MAX_CP);
  free(r->r);
  *r = out;
}

/* Adds the ranges of a Perl class letter (d w s, upper case negated). */
static void perl_class(Ranges *r, char c) {
  Ranges t = {NULL, 0, 0};
  switch (c | 0x20) {
  case 'd':
    rng_add(&t, '0', '9');
    break;
  case 'w':
    rng_add(&t, '0', '9');
    rng_add(&t, 'A', 'Z');
    rng_add(&t, 'a', 'z');
    rng_add(&t, '_', '_');
    break;
  default: /* s: RE2's \s is [\t\n\f\r ] */
    rng_add(&t, '\t', '\n');
    rng_add(&t, '\f', '\r');
    rng_add(&t, ' ', ' ');
    break;
  }
  rng_norm(&t);
  if (c >= 'A' && c <= 'Z')
    rng_negate(&t);
  for (int i = 0; i < t.n; i++)
    rng_add(r, t.r[2 * i], t.r[2 * i + 1]);
  free(t.r);
}

static int new_class(Parser *ps, Ranges r) {
  rng_norm(&r);
  if (ps->n_classes == ps->cap_classes) {
    ps->cap_classes = ps->cap_classes ? 2 * ps->cap_classes : 8;
    ps->classes = realloc(ps->classes, (size_t)ps->cap_classes * sizeof *ps->classes);
    IR_ASSERT(ps->classes);
  }
  ps->classes[ps->n_classes] = r;
  return node(ps, N_CLASS, ps->n_classes++, -1, -1);
}

static const struct {
  const char *name;
  const char *ranges; /* pairs of bytes */
} posix[] = {
    {"alnum", "09AZaz"}, {"alpha", "AZaz"}, {"ascii", "\x01\x7f"}, {"blank", "\t\t  "},
    {"cntrl", "\x01\x1f\x7f\x7f"}, {"digit", "09"}, {"graph", "!~"}, {"lower", "az"},
    {"print", " ~"}, {"punct", "!/:@[`{~"}, {"space", "\t\r  "}, {"upper", "AZ"},
    {"word", "09AZaz__"}, {"xdigit", "09AFaf"},
};

static bool posix_class(Parser *ps, Ranges *r) {
  const char *end = strstr(ps->p, ":]");
  bool neg = ps->p[2] == '^';
  const char *name = ps->p + (neg ? 3 : 2);
  if (!end)
    return fail(ps, "unterminated [: :] class");
  for (size_t i = 0; i < sizeof posix / sizeof posix[0]; i++)
    if (strlen(posix[i].name) == (size_t)(end - name) && strncmp(name, posix[i].name, (size_t)(end - name)) == 0) {
      Ranges t = {NULL, 0, 0};
      for (const char *q = posix[i].ranges; *q; q += 2)
        rng_add(&t, (unsigned char)q[0], (unsigned char)q[1]);
      if (i == 0 && strcmp(name, "ascii") == 0)
        t.r[0] = 0;
      rng_norm(&t);
      if (neg)
        rng_negate(&t);
      for (int k = 0; k < t.n; k++)
        rng_add(r, t.r[2 * k], t.r[2 * k + 1]);
      free(t.r);
      ps->p = end + 2;
      return true;
    }
  return fail(ps, "unknown [: :] class name");
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
}

/* An escape that stands for one code point (after the backslash); -1 when
 * it is not one (then ps is unchanged unless it failed). */
static int64_t escape_char(Parser *ps) {
  char c = *ps->p;
  static const char from[] = "ntrfva", to[] = "\n\t\r\f\v\a";
  const char *k = c ? strchr(from, c) : NULL;
  if (k) {
    ps->p++;
    return to[k - from];
  }
  if (c == 'x') {
    ps->p++;
    int64_t v = 0;
    if (*ps->p == '{') {
      ps->p++;
      int digits = 0;
      for (; hexval(*ps->p) >= 0 && digits < 8; ps->p++, digits++)
        v = v * 16 + hexval(*ps->p);
      if (*ps->p != '}' || digits == 0 || v > MAX_CP)
        return fail(ps, "bad \\x{...} escape"), -1;
      ps->p++;
      return v;
    }
    if (hexval(ps->p[0]) < 0 || hexval(ps->p[1]) < 0)
      return fail(ps, "bad \\x escape"), -1;
    v = hexval(ps->p[0]) * 16 + hexval(ps->p[1]);
    ps->p += 2;
    return v;
  }
  if (c == '0') { /* \0 and up to two more octal digits */
    int64_t v = 0;
    ps->p++;
    for (int i = 0; i < 2 && *ps->p >= '0' && *ps->p <= '7'; i++, ps->p++)
      v = v * 8 + (*ps->p - '0');
    return v;
  }
  if (c && (unsigned char)c < 0x80 && !((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) {
    ps->p++;
    return (unsigned char)c; /* escaped punctuation */
  }
  return -1;
}

static int parse_class(Parser *ps) {
  Ranges r = {NULL, 0, 0};
  bool neg = false;
  ps->p++; /* '[' */
  if (*ps->p == '^') {
    neg = true;
    ps->p++;
  }
  bool first = true;
  while (!ps->failed) {
    if (!*ps->p) {
      fail(ps, "missing ] of a character class");
      break;
    }
    if (*ps->p == ']' && !first) {
      ps->p++;
      break;
    }
    first = false;
    if (ps->p[0] == '[' && ps->p[1] == ':') {
      posix_class(ps, &r);
      continue;
    }
    int64_t lo;
    if (*ps->p == '\\') {
      ps->p++;
      char c = *ps->p;
      if (c && strchr("dDwWsS", c)) {
        ps->p++;
        perl_class(&r, c);
        continue;
      }
      if ((lo = escape_char(ps)) < 0) {
        fail(ps, "unsupported escape in a character class");
        break;
      }
    } else {
      lo = utf8_next(&ps->p);
    }
    int64_t hi = lo;
    if (ps->p[0] == '-' && ps->p[1] && ps->p[1] != ']') {
      ps->p++;
      if (*ps->p == '\\') {
        ps->p++;
        if ((hi = escape_char(ps)) < 0) {
          fail(ps, "unsupported escape in a character class range");
          break;
        }
      } else {
        hi = utf8_next(&ps->p);
      }
      if (hi < lo) {
        fail(ps, "bad character class range");
        break;
      }
    }
    rng_add(&r, lo, hi);
  }
  if (ps->failed) {
    free(r.r);
    return -1;
  }
  rng_norm(&r);
  if (neg)
    rng_negate(&r);
  return new_class(ps, r);
}

static int parse_alt(Parser *ps);

static int parse_atom(Parser *ps) {
  char c = *ps->p;
  if (c == '(') {
    if (++ps->depth > MAX_DEPTH)
      return fail(ps, "groups nested too deeply"), -1;
    ps->p++;
    if (*ps->p == '?') {
      if (ps->p[1] == ':') {
        ps->p += 2;
      } else if ((ps->p[1] == 'P' && ps->p[2] == '<') || ps->p[1] == '<') {
        const char *end = strchr(ps->p, '>');
        if (!end)
          return fail(ps, "unterminated group name"), -1;
        ps->p = end + 1;
      } else {
        return fail(ps, "unsupported group flags (such as (?i))"), -1;
      }
    }
    int inner = parse_alt(ps);
    if (inner < 0)
      return -1;
    if (*ps->p != ')')
      return fail(ps, "missing )"), -1;
    ps->p++;
    ps->depth--;
    return inner;
  }
  if (c == '[')
    return parse_class(ps);
  if (c == '.') {
    ps->p++;
    return node(ps, N_ANY, 0, -1, -1);
  }
  if (c == '^' || c == '$') {
    ps->p++;
    return node(ps, N_ASSERT, c == '^' ? RE_BOL : RE_EOL, -1, -1);
  }
  if (c == '\\') {
    ps->p++;
    char e = *ps->p;
    if (!e)
      return fail(ps, "trailing \\"), -1;
    if (strchr("dDwWsS", e)) {
      Ranges r = {NULL, 0, 0};
      ps->p++;
      perl_class(&r, e);
      return new_class(ps, r);
    }
    if (strchr("bBAz", e)) {
      ps->p++;
      return node(ps, N_ASSERT, e == 'b' ? RE_WORDB : e == 'B' ? RE_NWORDB : e == 'A' ? RE_BOL : RE_EOL,
                  -1, -1);
    }
    int64_t v = escape_char(ps);
    if (v < 0)
      return fail(ps, "unsupported escape"), -1;
    return node(ps, N_LIT, v, -1, -1);
  }
  if (c == '*' || c == '+' || c == '?')
    return fail(ps, "missing argument to a repetition operator"), -1;
  return node(ps, N_LIT, utf8_next(&ps->p), -1, -1);
}

/* {n}, {n,}, {n,m} at ps->p; false (ps unchanged) when it is not one, which
 * makes the '{' a literal as in RE2. */
static bool parse_braces(Parser *ps, int *min, int *max) {
  const char *q = ps->p + 1;
  long lo = 0, hi;
  if (*q < '0' || *q > '9')
    return false;
  for (; *q >= '0' && *q <= '9'; q++)
    lo = lo * 10 + (*q - '0') > 100000 ? 100000 : lo * 10 + (*q - '0');
  hi = lo;
  if (*q == ',') {
    q++;
    if (*q == '}') {
      hi = -1;
    } else {
      if (*q < '0' || *q > '9')
        return false;
      for (hi = 0; *q >= '0' && *q <= '9'; q++)
        hi = hi * 10 + (*q - '0') > 100000 ? 100000 : hi * 10 + (*q - '0');
    }
  }
  if (*q != '}')
    return false;
  ps->p = q + 1;
  *min = (int)lo;
  *max = (int)hi;
  return true;
}

static int parse_repeat(Parser *ps) {
  int a = parse_atom(ps);
  while (a >= 0) {
    int min, max;
    char c = *ps->p;
    if (c == '*' || c == '+' || c == '?') {
      ps->p++;
      min = c == '+' ? 1 : 0;
      max = c == '?' ? 1 : -1;
    } else if (c != '{' || !parse_braces(ps, &min, &max)) {
      break;
    } else if (min > RE_MAX_REPEAT || max > RE_MAX_REPEAT || (max >= 0 && max < min)) {
      return fail(ps, "bad repetition count (at most 1000, min <= max)"), -1;
    }
    if (*ps->p == '?')
      ps->p++; /* lazy: the same language */
    a = node(ps, N_REPEAT, 0, a, -1);
    ps->nodes[a].min = min;
    ps->nodes[a].max = max;
  }
  return a;
}

static int parse_cat(Parser *ps) {
  int cat = -1;
  while (*ps->p && *ps->p != '|' && *ps->p != ')') {
    int r = parse_repeat(ps);
    if (r < 0)
      return -1;
    cat = cat < 0 ? r : node(ps, N_CAT, 0, cat, r);
  }
  return cat < 0 ? node(ps, N_EMPTY, 0, -1, -1) : cat;
}

static int parse_alt(Parser *ps) {
  int alt = parse_cat(ps);
  while (alt >= 0 && *ps->p == '|') {
    ps->p++;
    int r = parse_cat(ps);
    if (r < 0)
      return -1;
    alt = node(ps, N_ALT, 0, alt, r);
  }
  return alt;
}

/* ---- program emission ---------------------------------------------------------- */

typedef struct Emit {
  int64_t *op, *x, *y;
  int n;
  bool overflow;
} Emit;

static int inst(Emit *e, int64_t op, int64_t x, int64_t y) {
  if (e->n >= RE_MAX_INSTS) {
    e->overflow = true;
    return RE_MAX_INSTS - 1;
  }
  e->op[e->n] = op;
  e->x[e->n] = x;
  e->y[e->n] = y;
  return e->n++;
}

static void emit(Emit *e, const RNode *nodes, int i);

static void emit_star(Emit *e, const RNode *nodes, int a) {
  int split = inst(e, RE_SPLIT, 0, 0);
  e->x[split] = e->n;
  emit(e, nodes, a);
  inst(e, RE_JMP, split, 0);
  e->y[split] = e->n;
}

static void emit(Emit *e, const RNode *nodes, int i) {
  const RNode *nd = &nodes[i];
  if (e->overflow)
    return;
  switch (nd->k) {
  case N_EMPTY:
    break;
  case N_LIT:
    inst(e, RE_CHAR, nd->v, 0);
    break;
  case N_ANY:
    inst(e, RE_ANY, 0, 0);
    break;
  case N_CLASS:
    inst(e, RE_CLASS, nd->v, 0);
    break;
  case N_ASSERT:
    inst(e, nd->v, 0, 0);
    break;
  case N_CAT:
    emit(e, nodes, nd->a);
    emit(e, nodes, nd->b);
    break;
  case N_ALT: {
    int split = inst(e, RE_SPLIT, 0, 0);
    e->x[split] = e->n;
    emit(e, nodes, nd->a);
    int jmp = inst(e, RE_JMP, 0, 0);
    e->y[split] = e->n;
    emit(e, nodes, nd->b);
    e->x[jmp] = e->n;
    break;
  }
  case N_REPEAT:
    for (int k = 0; k < nd->min && !e->overflow; k++)
      emit(e, nodes, nd->a);
    if (nd->max < 0) {
      emit_star(e, nodes, nd->a);
    } else {
      /* max - min optional copies, nested: (a(a(a)?)?)? */
      int *splits = malloc((size_t)(nd->max - nd->min + 1) * sizeof *splits), k;
      IR_ASSERT(splits);
      for (k = 0; k < nd->max - nd->min && !e->overflow; k++) {
        splits[k] = inst(e, RE_SPLIT, 0, 0);
        e->x[splits[k]] = e->n;
        emit(e, nodes, nd->a);
      }
      while (k-- > 0 && !e->overflow)
        e->y[splits[k]] = e->n;
      free(splits);
    }
    break;
  }
}

bool regex_compile(const char *pattern, Arena *a, RegexProg *out, char *err, size_t n_err) {
  Parser ps = {pattern, pattern, NULL, 0, 0, NULL, 0, 0, err, n_err, false, 0};
  int root = parse_alt(&ps);
  if (root >= 0 && *ps.p)
    fail(&ps, "unmatched )");
  bool ok = !ps.failed && root >= 0;
  if (ok) {
    Emit e = {malloc(RE_MAX_INSTS * sizeof(int64_t)), malloc(RE_MAX_INSTS * sizeof(int64_t)),
              malloc(RE_MAX_INSTS * sizeof(int64_t)), 0, false};
    IR_ASSERT(e.op && e.x && e.y);
    emit(&e, ps.nodes, root);
    inst(&e, RE_MATCH, 0, 0);
    if (e.overflow) {
      snprintf(err, n_err, "the pattern needs more than %d NFA instructions", RE_MAX_INSTS);
      ok = false;
    } else {
      out->n = e.n;
      out->op = arena_dup(a, e.op, (size_t)e.n * sizeof(int64_t));
      out->x = arena_dup(a, e.x, (size_t)e.n * sizeof(int64_t));
      out->y = arena_dup(a, e.y, (size_t)e.n * sizeof(int64_t));
      out->n_cls = ps.n_classes;
      out->cls = arena_alloc(a, (size_t)(ps.n_classes + 1) * sizeof(int64_t));
      int total = 0;
      for (int i = 0; i < ps.n_classes; i++)
        total += ps.classes[i].n;
      out->n_rng = total;
      out->rng = arena_alloc(a, (size_t)(2 * total + 1) * sizeof(int64_t));
      int k = 0;
      for (int i = 0; i < ps.n_classes; i++) {
        out->cls[i] = k;
        for (int j = 0; j < ps.classes[i].n; j++, k++) {
          out->rng[2 * k] = ps.classes[i].r[2 * j];
          out->rng[2 * k + 1] = ps.classes[i].r[2 * j + 1];
        }
      }
      out->cls[ps.n_classes] = k;
    }
    free(e.op);
    free(e.x);
    free(e.y);
  }
  for (int i = 0; i < ps.n_classes; i++)
    free(ps.classes[i].r);
  free(ps.classes);
  free(ps.nodes);
  return ok;
}

/* ---- simulation (mirrors onnxc_re_full in codegen/emit_string.c) ----------- */

static bool is_word(int64_t c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool in_class(const RegexProg *p, int64_t k, int64_t c) {
  for (int64_t i = p->cls[k]; i < p->cls[k + 1]; i++)
    if (c >= p->rng[2 * i] && c <= p->rng[2 * i + 1])
      return true;
  return false;
}

/* Adds pc and everything reachable from it without consuming input. */
static void add(const RegexProg *p, int *list, int *n, int *mark, int *stack, int pc, int gen, int64_t prev,
                int64_t next) {
  int sp = 0;
  if (mark[pc] == gen)
    return;
  mark[pc] = gen;
  stack[sp++] = pc;
  while (sp > 0) {
    int i = stack[--sp], to[2], k = 0;
    switch (p->op[i]) {
    case RE_JMP: to[k++] = (int)p->x[i]; break;
    case RE_SPLIT: to[k++] = (int)p->y[i]; to[k++] = (int)p->x[i]; break;
    case RE_BOL: if (prev < 0) to[k++] = i + 1; break;
    case RE_EOL: if (next < 0) to[k++] = i + 1; break;
    case RE_WORDB: if (is_word(prev) != is_word(next)) to[k++] = i + 1; break;
    case RE_NWORDB: if (is_word(prev) == is_word(next)) to[k++] = i + 1; break;
    default: list[(*n)++] = i; break;
    }
    for (int j = 0; j < k; j++)
      if (mark[to[j]] != gen) {
        mark[to[j]] = gen;
        stack[sp++] = to[j];
      }
  }
}

bool regex_full_match(const RegexProg *p, const char *text) {
  int *w = malloc((size_t)(4 * p->n + 1) * sizeof *w);
  IR_ASSERT(w);
  int *mark = w, *cl = w + p->n, *nl = w + 2 * p->n, *stack = w + 3 * p->n, ncl = 0, gen = 0;
  for (int i = 0; i < p->n; i++)
    mark[i] = -1;
  const char *s = text;
  int64_t prev = -1, cur = *s ? utf8_next(&s) : -1;
  add(p, cl, &ncl, mark, stack, 0, gen, prev, cur);
  bool matched = false;
  for (;;) {
    if (cur < 0) {
      for (int i = 0; i < ncl && !matched; i++)
        matched = p->op[cl[i]] == RE_MATCH;
      break;
    }
    int64_t next = *s ? utf8_next(&s) : -1;
    int nnl = 0;
    gen++;
    for (int i = 0; i < ncl; i++) {
      int pc = cl[i];
      int64_t op = p->op[pc];
      bool take = (op == RE_CHAR && p->x[pc] == cur) || (op == RE_ANY && cur != '\n') || op == RE_ANYNL ||
                  (op == RE_CLASS && in_class(p, p->x[pc], cur));
      if (take)
        add(p, nl, &nnl, mark, stack, pc + 1, gen, cur, next);
    }
    int *t = cl;
    cl = nl;
    nl = t;
    ncl = nnl;
    prev = cur;
    cur = next;
    if (ncl == 0)
      break;
  }
  free(w);
  return matched;
}
