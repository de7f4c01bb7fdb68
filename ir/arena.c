/* arena.c - bump allocator: many small allocations, one free.
 *
 * Chunks grow geometrically; an allocation larger than half a chunk gets a
 * chunk of its own so big constant tensors do not waste the tail of a chunk.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

typedef struct Chunk {
  struct Chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
  Chunk *head;
  size_t next_cap;
  size_t total;
};

_Noreturn void ir_die(const char *file, int line, const char *what) {
  fprintf(stderr, "onnxc: internal error at %s:%d: %s\n", file, line, what);
  abort();
}

Arena *arena_new(void) {
  Arena *a = calloc(1, sizeof *a);
  IR_ASSERT(a != NULL);
  a->next_cap = 64 * 1024;
  return a;
}

void arena_free(Arena *a) {
  if (!a)
    return;
  for (Chunk *c = a->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(a);
}

static Chunk *chunk_new(size_t cap) {
  Chunk *c = malloc(sizeof(Chunk) + cap);
  if (!c)
    ir_die(__FILE__, __LINE__, "out of memory");
  c->used = 0;
  c->cap = cap;
  c->next = NULL;
  return c;
}

void *arena_alloc(Arena *a, size_t n) {
  size_t need = (n + 15) & ~(size_t)15;
  IR_ASSERT(need >= n);
  Chunk *c = a->head;
  if (!c || c->cap - c->used < need) {
    if (need > a->next_cap / 2) {
      /* Dedicated chunk, linked behind the current head so the head keeps serving. */
      Chunk *big = chunk_new(need);
      big->used = need;
      if (c) {
        big->next = c->next;
        c->next = big;
      } else {
        a->head = big;
      }
      a->total += need;
      memset(big->data, 0, need);
      return big->data;
    }
    c = chunk_new(a->next_cap);
    c->next = a->head;
    a->head = c;
    if (a->next_cap < 16u * 1024 * 1024)
      a->next_cap *= 2;
  }
  void *p = c->data + c->used;
  c->used += need;
  a->total += need;
  memset(p, 0, need);
  return p;
}

void *arena_dup(Arena *a, const void *p, size_t n) {
  void *q = arena_alloc(a, n);
  if (n)
    memcpy(q, p, n);
  return q;
}

char *arena_strdup(Arena *a, const char *s) {
  return arena_dup(a, s, strlen(s) + 1);
}

char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  IR_ASSERT(n >= 0);
  char *s = arena_alloc(a, (size_t)n + 1);
  vsnprintf(s, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

size_t arena_bytes(const Arena *a) { return a->total; }
