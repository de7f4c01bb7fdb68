/* footprint.c - onnxc footprint: flash and RAM of a model on its target.
 *
 * Generates the C sources (weights as C arrays, as firmware builds them),
 * compiles NAME.c and NAME_weights.c with the target's compiler (default
 * arm-none-eabi-gcc for a Cortex-M4F at -Os) and reads the objects back:
 *   flash  code     executable sections of NAME.o
 *          rodata   other read-only sections of NAME.o (constant tables)
 *          weights  read-only sections of NAME_weights.o
 *   RAM    arena    NAME_ARENA_BYTES, from the memory plan
 *          stack    the deepest call path from NAME_run: gcc's
 *                   -fcallgraph-info=su gives each function's frame and the
 *                   calls between them. Without it (other compilers), the
 *                   -fstack-usage frames: NAME_run's plus the largest other.
 * Section sizes are classified as binutils' `size` does (text = read-only,
 * data = writable with contents, bss = zero-filled), so the figures can be
 * checked with `arm-none-eabi-size`. Functions outside the model (libm, the
 * C library, compiler helpers) are listed from the object's undefined symbols;
 * their code and stack are not included.
 */
#include "tools.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FP_DEFAULT_CC "arm-none-eabi-gcc"
#define FP_DEFAULT_CFLAGS "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -Os"

/* ---- ELF objects -------------------------------------------------------------- */

typedef struct FuncSym {
  char *name;
  unsigned shndx;
  uint64_t value;
} FuncSym;

typedef struct Obj {
  long long code, rodata, data, bss;   /* bytes by section class */
  char **undef;                        /* undefined global symbols */
  int n_undef;
  char **defined;                      /* defined global symbols */
  int n_defined;
  FuncSym *funcs;                      /* function symbols (to find aliases) */
  int n_funcs;
} Obj;

static void obj_free(Obj *o) {
  for (int i = 0; i < o->n_undef; i++)
    free(o->undef[i]);
  for (int i = 0; i < o->n_defined; i++)
    free(o->defined[i]);
  for (int i = 0; i < o->n_funcs; i++)
    free(o->funcs[i].name);
  free(o->undef);
  free(o->defined);
  free(o->funcs);
  memset(o, 0, sizeof *o);
}

static void push_name(char ***v, int *n, const char *s) {
  *v = realloc(*v, (size_t)(*n + 1) * sizeof **v);
  IR_ASSERT(*v);
  (*v)[*n] = strdup(s);
  IR_ASSERT((*v)[*n]);
  (*n)++;
}

typedef struct Elf {
  const unsigned char *p;
  size_t n;
  bool is64, big;
} Elf;

/* Reads an unsigned field of `size` bytes at `off`; 0 when out of range. */
static uint64_t rd(const Elf *e, uint64_t off, int size) {
  if (off > e->n || (uint64_t)size > e->n - off)
    return 0;
  uint64_t v = 0;
  for (int i = 0; i < size; i++) {
    unsigned b = e->p[off + (uint64_t)(e->big ? i : size - 1 - i)];
    v = v << 8 | b;
  }
  return v;
}

static const char *str_at(const Elf *e, uint64_t table, uint64_t table_size, uint64_t idx) {
  if (idx >= table_size || table + table_size > e->n)
    return "";
  const char *s = (const char *)e->p + table + idx;
  return memchr(s, 0, table_size - idx) ? s : "";
}

enum { SHT_SYMTAB = 2, SHT_NOBITS = 8, SHF_WRITE = 1, SHF_ALLOC = 2, SHF_EXECINSTR = 4 };

static bool obj_read(const char *path, Obj *o, Diag *d) {
  memset(o, 0, sizeof *o);
  Buf raw;
  buf_init(&raw);
  if (!sys_read_file(path, &raw)) {
    buf_free(&raw);
    return diag_error(d, NULL, "cannot read %s: %s", path, strerror(errno));
  }
  Elf e = {(const unsigned char *)raw.s, raw.len, false, false};
  if (e.n < 52 || memcmp(e.p, "\177ELF", 4) != 0 || (e.p[4] != 1 && e.p[4] != 2)) {
    buf_free(&raw);
    return diag_error(d, NULL, "%s is not an ELF object; footprint needs an ELF toolchain", path);
  }
  e.is64 = e.p[4] == 2;
  e.big = e.p[5] == 2;
  uint64_t shoff = e.is64 ? rd(&e, 0x28, 8) : rd(&e, 0x20, 4);
  unsigned shentsize = (unsigned)rd(&e, e.is64 ? 0x3A : 0x2E, 2);
  unsigned shnum = (unsigned)rd(&e, e.is64 ? 0x3C : 0x30, 2);
  int w = e.is64 ? 8 : 4;
#define SH(i, f32, f64, size) rd(&e, shoff + (uint64_t)(i) * shentsize + (e.is64 ? (f64) : (f32)), size)
  for (unsigned i = 1; i < shnum; i++) {
    uint64_t type = SH(i, 4, 4, 4), flags = SH(i, 8, 8, w), size = SH(i, 20, 32, w);
    if (flags & SHF_ALLOC) {
      if (type == SHT_NOBITS)
        o->bss += (long long)size;
      else if (flags & SHF_WRITE)
        o->data += (long long)size;
      else if (flags & SHF_EXECINSTR)
        o->code += (long long)size;
      else
        o->rodata += (long long)size;
    }
    if (type != SHT_SYMTAB)
      continue;
    uint64_t off = SH(i, 16, 24, w), link = SH(i, 24, 40, 4), entsize = SH(i, 36, 56, w);
    uint64_t stroff = SH(link, 16, 24, w), strsize = SH(link, 20, 32, w);
    for (uint64_t k = 1; entsize && k < size / entsize; k++) {
      uint64_t s = off + k * entsize;
      uint64_t name = rd(&e, s, 4);
      unsigned info = (unsigned)rd(&e, s + (e.is64 ? 4 : 12), 1);
      unsigned shndx = (unsigned)rd(&e, s + (e.is64 ? 6 : 14), 2);
      uint64_t value = rd(&e, s + (e.is64 ? 8 : 4), w);
      const char *nm = str_at(&e, stroff, strsize, name);
      unsigned bind = info >> 4, type_ = info & 15;
      if (!*nm)
        continue;
      if (shndx == 0 && (bind == 1 || bind == 2))
        push_name(&o->undef, &o->n_undef, nm);
      else if (shndx != 0 && (bind == 1 || bind == 2))
        push_name(&o->defined, &o->n_defined, nm);
      if (shndx != 0 && type_ == 2) {
        o->funcs = realloc(o->funcs, (size_t)(o->n_funcs + 1) * sizeof *o->funcs);
        IR_ASSERT(o->funcs);
        o->funcs[o->n_funcs].name = strdup(nm);
        IR_ASSERT(o->funcs[o->n_funcs].name);
        o->funcs[o->n_funcs].shndx = shndx;
        o->funcs[o->n_funcs].value = value;
        o->n_funcs++;
      }
    }
  }
#undef SH
  buf_free(&raw);
  return true;
}

/* ---- stack: the call graph of gcc's -fcallgraph-info=su ------------------------ */

typedef struct Fn {
  char *title;       /* gcc's node title: "file.c:name" for static functions */
  char *name;
  long long bytes;   /* frame size; -1 when unknown */
  bool dynamic;      /* frame size not bounded (VLA, alloca) */
  int *callees;
  int n_callees;
  int state;         /* DFS: 0 new, 1 on the path, 2 done */
  long long depth;   /* deepest stack from this function down */
  int next;          /* callee on the deepest path, -1 at the end */
} Fn;

typedef struct CallGraph {
  Fn *fns;
  int n_fns;
  bool recursive, dynamic, approximate;
} CallGraph;

static void cg_free(CallGraph *cg) {
  for (int i = 0; i < cg->n_fns; i++) {
    free(cg->fns[i].title);
    free(cg->fns[i].name);
    free(cg->fns[i].callees);
  }
  free(cg->fns);
  memset(cg, 0, sizeof *cg);
}

static int cg_find(CallGraph *cg, const char *title, bool add) {
  for (int i = 0; i < cg->n_fns; i++)
    if (strcmp(cg->fns[i].title, title) == 0)
      return i;
  if (!add)
    return -1;
  cg->fns = realloc(cg->fns, (size_t)(cg->n_fns + 1) * sizeof *cg->fns);
  IR_ASSERT(cg->fns);
  Fn *f = &cg->fns[cg->n_fns];
  memset(f, 0, sizeof *f);
  f->title = strdup(title);
  const char *colon = strrchr(title, ':');
  f->name = strdup(colon ? colon + 1 : title);
  IR_ASSERT(f->title && f->name);
  f->bytes = -1;
  f->next = -1;
  return cg->n_fns++;
}

static const char *next_line(const char *s) {
  s = strchr(s, '\n');
  return s ? s + 1 : NULL;
}

/* Copies the quoted string after `key` in line into out; false when absent. */
static bool quoted(const char *line, const char *key, char *out, size_t n) {
  const char *s = strstr(line, key);
  if (!s)
    return false;
  s += strlen(key);
  size_t k = 0;
  while (*s && *s != '"' && k + 1 < n)
    out[k++] = *s++;
  out[k] = 0;
  return *s == '"';
}

static void cg_parse_ci(CallGraph *cg, const char *text) {
  char title[512], label[1024], target[512];
  for (const char *line = text; line && *line; line = next_line(line)) {
    if (strncmp(line, "node:", 5) == 0 && quoted(line, "title: \"", title, sizeof title)) {
      int i = cg_find(cg, title, true); /* may move cg->fns */
      Fn *f = &cg->fns[i];
      /* label: "name\nfile:line:col\nN bytes (static|dynamic|dynamic,bounded)" */
      const char *b = quoted(line, "label: \"", label, sizeof label) ? strstr(label, " bytes (") : NULL;
      if (b) {
        const char *num = b;
        while (num > label && num[-1] >= '0' && num[-1] <= '9')
          num--;
        f->bytes = strtoll(num, NULL, 10);
        f->dynamic = strncmp(b, " bytes (dynamic)", 16) == 0;
      }
    } else if (strncmp(line, "edge:", 5) == 0 && quoted(line, "sourcename: \"", title, sizeof title) &&
               quoted(line, "targetname: \"", target, sizeof target)) {
      int from = cg_find(cg, title, true), to = cg_find(cg, target, true);
      Fn *f = &cg->fns[from];
      bool seen = false;
      for (int i = 0; i < f->n_callees; i++)
        seen |= f->callees[i] == to;
      if (!seen) {
        f->callees = realloc(f->callees, (size_t)(f->n_callees + 1) * sizeof *f->callees);
        IR_ASSERT(f->callees);
        f->callees[f->n_callees++] = to;
      }
    }
  }
}

/* A static function gcc merged with an identical one (-fipa-icf) is called
 * under its own name but has no frame in the graph: it is an alias at the same
 * address as the function that kept its body. Other unknown frames inside the
 * model take the largest known frame, and the estimate is marked approximate. */
static void cg_resolve(CallGraph *cg, const Obj *code) {
  long long largest = 0;
  for (int i = 0; i < cg->n_fns; i++)
    if (cg->fns[i].bytes > largest)
      largest = cg->fns[i].bytes;
  for (int i = 0; i < cg->n_fns; i++) {
    Fn *f = &cg->fns[i];
    if (f->bytes >= 0 || !strchr(f->title, ':'))
      continue; /* known, or outside the model */
    const FuncSym *self = NULL;
    for (int k = 0; k < code->n_funcs && !self; k++)
      if (strcmp(code->funcs[k].name, f->name) == 0)
        self = &code->funcs[k];
    for (int k = 0; self && k < code->n_funcs && f->bytes < 0; k++) {
      const FuncSym *s = &code->funcs[k];
      if (s == self || s->shndx != self->shndx || s->value != self->value)
        continue;
      for (int j = 0; j < cg->n_fns; j++)
        if (cg->fns[j].bytes >= 0 && strcmp(cg->fns[j].name, s->name) == 0 && strchr(cg->fns[j].title, ':')) {
          f->bytes = cg->fns[j].bytes;
          f->dynamic = cg->fns[j].dynamic;
        }
    }
    if (f->bytes < 0) {
      f->bytes = largest;
      cg->approximate = true;
    }
  }
}

static long long cg_depth(CallGraph *cg, int i) {
  Fn *f = &cg->fns[i];
  if (f->state == 2)
    return f->depth;
  if (f->state == 1) {
    cg->recursive = true;
    return 0;
  }
  f->state = 1;
  long long best = 0;
  for (int k = 0; k < f->n_callees; k++) {
    long long dd = cg_depth(cg, f->callees[k]);
    if (dd > best) {
      best = dd;
      f->next = f->callees[k];
    }
  }
  cg->dynamic |= f->dynamic;
  f->depth = (f->bytes > 0 ? f->bytes : 0) + best;
  f->state = 2;
  return f->depth;
}

/* Frames from -fstack-usage alone ("file:line:col:name<TAB>bytes<TAB>kind"):
 * the entry's frame plus the largest other one. */
static void cg_parse_su(CallGraph *cg, const char *text, const char *entry) {
  int run = cg_find(cg, entry, true), biggest = -1;
  for (const char *line = text; line && *line; line = next_line(line)) {
    const char *tab = strchr(line, '\t'), *nl = strchr(line, '\n');
    if (!tab || (nl && tab > nl))
      continue;
    const char *nm = tab;
    while (nm > line && nm[-1] != ':')
      nm--;
    char name[512];
    snprintf(name, sizeof name, "%.*s", (int)(tab - nm), nm);
    int i = cg_find(cg, name, true);
    cg->fns[i].bytes = strtoll(tab + 1, NULL, 10);
    const char *kind = strchr(tab + 1, '\t'); /* static, dynamic or dynamic,bounded */
    cg->fns[i].dynamic = kind && strncmp(kind + 1, "dynamic", 7) == 0 && strncmp(kind + 8, ",bounded", 8) != 0;
    size_t n = strlen(entry);
    bool is_v = strncmp(name, entry, n) == 0 && strcmp(name + n, "_v") == 0;
    if (i != run && !is_v && (biggest < 0 || cg->fns[i].bytes > cg->fns[biggest].bytes))
      biggest = i;
  }
  if (biggest >= 0) {
    cg->fns[run].callees = malloc(sizeof(int));
    IR_ASSERT(cg->fns[run].callees);
    cg->fns[run].callees[0] = biggest;
    cg->fns[run].n_callees = 1;
  }
  if (cg->fns[run].bytes < 0)
    cg->fns[run].bytes = 0;
}

/* ---- compiling for the target ------------------------------------------------- */

static int compile(const Options *o, const char *dir, const char *src, const char *obj,
                   const char *extra, Buf *log) {
  char *argv[96], cc[1024], flags[4096], ex[256], in[4096], out[4096], inc[4096];
  int n = 0;
  snprintf(cc, sizeof cc, "%s", o->fp_cc ? o->fp_cc : FP_DEFAULT_CC);
  snprintf(flags, sizeof flags, "%s", o->fp_cflags ? o->fp_cflags : FP_DEFAULT_CFLAGS);
  snprintf(ex, sizeof ex, "%s", extra);
  snprintf(in, sizeof in, "%s/%s", dir, src);
  snprintf(out, sizeof out, "%s/%s", dir, obj);
  snprintf(inc, sizeof inc, "-I%s", dir);
  /* $CC-style words: "ccache arm-none-eabi-gcc" works too. */
  for (char *t = strtok(cc, " \t"); t && n < 16; t = strtok(NULL, " \t"))
    argv[n++] = t;
  argv[n++] = "-std=c99";
  for (char *t = strtok(flags, " \t"); t && n < 80; t = strtok(NULL, " \t"))
    argv[n++] = t;
  for (char *t = strtok(ex, " "); t && n < 88; t = strtok(NULL, " "))
    argv[n++] = t;
  argv[n++] = inc;
  argv[n++] = "-c";
  argv[n++] = in;
  argv[n++] = "-o";
  argv[n++] = out;
  argv[n] = NULL;
  return sys_run(argv, log);
}

/* ---- report ------------------------------------------------------------------- */

typedef struct Report {
  const char *name, *cc, *cflags, *method;
  long long arena, stack;
  Obj code, weights;
  CallGraph cg;
  int entry;
} Report;

static bool is_model_symbol(const Report *r, const char *s) {
  for (int i = 0; i < r->weights.n_defined; i++)
    if (strcmp(r->weights.defined[i], s) == 0)
      return true;
  return false;
}

/* The calls outside the model: `helpers` selects compiler helpers (__aeabi_*...). */
static void list_external(const Report *r, bool helpers, bool json, FILE *f) {
  int k = 0;
  for (int i = 0; i < r->code.n_undef; i++) {
    const char *s = r->code.undef[i];
    if (is_model_symbol(r, s) || (strncmp(s, "__", 2) == 0) != helpers)
      continue;
    fprintf(f, json ? "%s\"%s\"" : "%s%s", k++ ? (json ? ", " : " ") : "", s);
  }
  if (!k && !json)
    fprintf(f, "none");
}

static long long flash_total(const Report *r) {
  return r->code.code + r->code.rodata + r->code.data + r->weights.code + r->weights.rodata + r->weights.data;
}

static long long ram_total(const Report *r) {
  return r->arena + r->stack + r->code.data + r->code.bss + r->weights.data + r->weights.bss;
}

static void print_table(const Report *r, FILE *f) {
  fprintf(f, "footprint of '%s' built with %s %s\n\n", r->name, r->cc, r->cflags);
  fprintf(f, "flash                bytes\n");
  fprintf(f, "  code          %10lld   executable sections of %s.o\n", r->code.code, r->name);
  if (r->code.rodata)
    fprintf(f, "  code rodata   %10lld   constant tables of %s.o\n", r->code.rodata, r->name);
  fprintf(f, "  weights       %10lld   %s_weights.o\n", r->weights.rodata + r->weights.code, r->name);
  if (r->code.data + r->weights.data)
    fprintf(f, "  data image    %10lld   initial values of writable data\n", r->code.data + r->weights.data);
  fprintf(f, "  total         %10lld\n", flash_total(r));
  fprintf(f, "RAM\n");
  fprintf(f, "  arena         %10lld   the caller's buffer of the _ARENA_BYTES macro\n", r->arena);
  fprintf(f, "  stack         %10lld   ", r->stack);
  if (r->entry < 0) {
    fprintf(f, "unknown: the compiler gave no stack usage\n");
  } else {
    for (int i = r->entry, k = 0; i >= 0 && k < 64; i = r->cg.fns[i].next, k++)
      fprintf(f, "%s%s %lld", k ? " > " : "", r->cg.fns[i].name, r->cg.fns[i].bytes > 0 ? r->cg.fns[i].bytes : 0);
    fprintf(f, "%s%s%s%s\n", strcmp(r->method, "callgraph") ? " (frames only, no call graph)" : "",
            r->cg.approximate ? " (approximate)" : "", r->cg.recursive ? " (recursion: not bounded)" : "",
            r->cg.dynamic ? " (dynamic frame: not bounded)" : "");
  }
  if (r->code.data + r->code.bss + r->weights.data + r->weights.bss)
    fprintf(f, "  globals       %10lld   writable data and bss\n",
            r->code.data + r->code.bss + r->weights.data + r->weights.bss);
  fprintf(f, "  total         %10lld\n\n", ram_total(r));
  fprintf(f, "calls outside the model, not counted above:\n  C library: ");
  list_external(r, false, false, f);
  fprintf(f, "\n  compiler helpers: ");
  list_external(r, true, false, f);
  fprintf(f, "\n");
}

static void json_escaped(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', f);
    if ((unsigned char)*s >= 0x20)
      fputc(*s, f);
  }
  fputc('"', f);
}

static void print_json(const Report *r, FILE *f) {
  fprintf(f, "{\"name\": ");
  json_escaped(f, r->name);
  fprintf(f, ", \"cc\": ");
  json_escaped(f, r->cc);
  fprintf(f, ", \"cflags\": ");
  json_escaped(f, r->cflags);
  fprintf(f, ",\n \"flash\": {\"code\": %lld, \"code_rodata\": %lld, \"weights\": %lld, \"data\": %lld, \"total\": %lld},\n",
          r->code.code, r->code.rodata, r->weights.rodata + r->weights.code, r->code.data + r->weights.data,
          flash_total(r));
  fprintf(f, " \"ram\": {\"arena\": %lld, \"stack\": %lld, \"data\": %lld, \"bss\": %lld, \"total\": %lld},\n",
          r->arena, r->stack, r->code.data + r->weights.data, r->code.bss + r->weights.bss, ram_total(r));
  fprintf(f, " \"stack\": {\"method\": \"%s\", \"bounded\": %s, \"approximate\": %s, \"path\": [", r->method,
          r->entry >= 0 && !r->cg.recursive && !r->cg.dynamic ? "true" : "false",
          r->cg.approximate ? "true" : "false");
  for (int i = r->entry, k = 0; i >= 0 && k < 64; i = r->cg.fns[i].next, k++) {
    fprintf(f, "%s{\"function\": ", k ? ", " : "");
    json_escaped(f, r->cg.fns[i].name);
    fprintf(f, ", \"bytes\": %lld}", r->cg.fns[i].bytes > 0 ? r->cg.fns[i].bytes : 0);
  }
  fprintf(f, "]},\n \"calls\": {\"library\": [");
  list_external(r, false, true, f);
  fprintf(f, "], \"compiler_helpers\": [");
  list_external(r, true, true, f);
  fprintf(f, "]}}\n");
}

/* ---- the command --------------------------------------------------------------- */

static bool measure(const Options *o, const char *dir, Report *r, Diag *d) {
  char src[512], obj[512], path[4096];
  Buf log;
  buf_init(&log);
  /* Stack usage flags from the most to the least informative the compiler takes. */
  static const char *const tries[][2] = {{"-fstack-usage -fcallgraph-info=su", "callgraph"},
                                         {"-fstack-usage", "stack-usage"},
                                         {"", "none"}};
  snprintf(src, sizeof src, "%s.c", r->name);
  snprintf(obj, sizeof obj, "%s.o", r->name);
  int rc = -1;
  for (size_t t = 0; t < sizeof tries / sizeof tries[0] && rc != 0; t++) {
    log.len = 0;
    rc = compile(o, dir, src, obj, tries[t][0], &log);
    r->method = tries[t][1];
  }
  if (rc == 0) {
    snprintf(src, sizeof src, "%s_weights.c", r->name);
    snprintf(obj, sizeof obj, "%s_weights.o", r->name);
    log.len = 0;
    rc = compile(o, dir, src, obj, "", &log);
  }
  if (rc != 0) {
    if (log.s)
      log.s[log.len] = 0;
    diag_error(d, NULL, "the target compiler (%s) failed on %s (status %d):\n%s", r->cc, src, rc,
               log.s ? log.s : "");
    buf_free(&log);
    return false;
  }
  buf_free(&log);
  snprintf(path, sizeof path, "%s/%s.o", dir, r->name);
  if (!obj_read(path, &r->code, d))
    return false;
  snprintf(path, sizeof path, "%s/%s_weights.o", dir, r->name);
  if (!obj_read(path, &r->weights, d))
    return false;

  char entry[300];
  snprintf(entry, sizeof entry, "%s_run", r->name);
  Buf text;
  buf_init(&text);
  bool cg = strcmp(r->method, "callgraph") == 0;
  snprintf(path, sizeof path, "%s/%s.%s", dir, r->name, cg ? "ci" : "su");
  if (strcmp(r->method, "none") != 0 && sys_read_file(path, &text)) {
    if (cg) {
      cg_parse_ci(&r->cg, text.s);
      cg_resolve(&r->cg, &r->code);
    } else {
      cg_parse_su(&r->cg, text.s, entry);
    }
    r->entry = cg_find(&r->cg, entry, false);
  }
  buf_free(&text);
  r->stack = r->entry >= 0 ? cg_depth(&r->cg, r->entry) : 0;
  return true;
}

int footprint_run(const Options *o) {
  Diag d;
  diag_init(&d, o->model, stderr);
  Plan plan;
  Graph *g = driver_compile(o, &plan, &d);
  if (!g) {
    diag_free(&d);
    return 1;
  }
  char nbuf[256];
  Report r;
  memset(&r, 0, sizeof r);
  r.name = o->name ? o->name : driver_default_name(o->model, nbuf, sizeof nbuf);
  r.cc = o->fp_cc ? o->fp_cc : FP_DEFAULT_CC;
  r.cflags = o->fp_cflags ? o->fp_cflags : FP_DEFAULT_CFLAGS;
  r.arena = plan.arena_bytes;
  r.entry = -1;
  char *dir = sys_mkdtemp("footprint");
  bool ok = dir != NULL;
  if (!ok)
    diag_error(&d, NULL, "cannot create a temporary folder: %s", strerror(errno));
  if (ok) {
    CodegenOpts co = {.name = r.name, .model_path = o->model, .weights = WEIGHTS_C, .weights_section = o->weights_section, .threads = 1};
    ok = codegen_c(g, &plan, &co, dir, &d) && measure(o, dir, &r, &d);
  }
  if (ok && o->fp_json) {
    bool to_stdout = strcmp(o->fp_json, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(o->fp_json, "w");
    if (!f) {
      ok = diag_error(&d, NULL, "cannot write %s: %s", o->fp_json, strerror(errno));
    } else {
      print_json(&r, f);
      if (!to_stdout && fclose(f) != 0)
        ok = diag_error(&d, NULL, "cannot write %s: %s", o->fp_json, strerror(errno));
    }
    if (ok && !to_stdout)
      print_table(&r, stdout);
  } else if (ok) {
    print_table(&r, stdout);
  }
  if (dir) {
    if (o->keep_temps)
      fprintf(stderr, "onnxc: kept temporary files in %s\n", dir);
    else
      sys_rmtree(dir);
    free(dir);
  }
  obj_free(&r.code);
  obj_free(&r.weights);
  cg_free(&r.cg);
  ir_graph_free(g);
  diag_free(&d);
  return ok ? 0 : 1;
}
