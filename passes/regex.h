/* regex.h - RE2-syntax patterns compiled to a Thompson NFA program, for
 * RegexFullMatch (infer_string.c records the program on the node; the C
 * emitter bakes it into tables that the generated code simulates without
 * recursion or backtracking: codegen/emit_string.c, docs/strings.md).
 *
 * The program works on Unicode code points (the text is decoded as UTF-8).
 * Instructions, with operands x and y:
 *   RE_CHAR x       consume code point x
 *   RE_ANY          consume any code point but '\n'
 *   RE_ANYNL        consume any code point
 *   RE_CLASS x      consume a code point in class x (sorted disjoint ranges)
 *   RE_SPLIT x y    continue at x and at y
 *   RE_JMP x        continue at x
 *   RE_BOL, RE_EOL  assert the start / the end of the text
 *   RE_WORDB, RE_NWORDB  assert an ASCII word boundary / its absence
 *   RE_MATCH        the pattern matched
 */
#ifndef ONNXC_REGEX_H
#define ONNXC_REGEX_H

#include "ir.h"

enum {
  RE_CHAR = 0, RE_ANY, RE_ANYNL, RE_CLASS, RE_SPLIT, RE_JMP, RE_BOL, RE_EOL, RE_WORDB, RE_NWORDB,
  RE_MATCH
};

/* Most instructions a program may have (bounds the generated tables and the
 * kernel's scratch, 16 bytes per instruction). */
#define RE_MAX_INSTS 20000
/* Largest count of a {n,m} repetition, as in RE2. */
#define RE_MAX_REPEAT 1000

typedef struct RegexProg {
  int n;                 /* instructions */
  int64_t *op, *x, *y;   /* n each */
  int n_cls;             /* classes */
  int64_t *cls;          /* n_cls + 1 offsets into rng (in pairs) */
  int n_rng;             /* ranges */
  int64_t *rng;          /* 2 * n_rng: lo, hi (inclusive) code points */
} RegexProg;

/* Compiles `pattern` (its arrays live in arena a). On a syntax error or an
 * unsupported feature returns false with a message in err. */
bool regex_compile(const char *pattern, Arena *a, RegexProg *out, char *err, size_t n_err);
/* Runs the program on the NUL-terminated UTF-8 text (the same algorithm as the
 * generated code; for tests and folding). */
bool regex_full_match(const RegexProg *p, const char *text);

#endif
