/* ar.c - a static library of one object, written without `ar` (in-process
 * builds, docs/clang.md). The common Unix ar format: the magic line, then
 * members of a 60-byte text header and their data padded to an even size.
 * The first member, "/", is the symbol index linkers need: a big-endian
 * count, each symbol's member offset, then the names, NUL-terminated. */
#include "clangcc.h"
#include "tools.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void header(Buf *b, const char *name, size_t size) {
  char h[61];
  snprintf(h, sizeof h, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "0", "0", "0", "644", size);
  buf_write(b, h, 60);
}

static void be32(Buf *b, uint32_t v) {
  unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                        (unsigned char)v};
  buf_write(b, x, 4);
}

bool ar_write_one(const char *path, const char *member, const void *obj, size_t len, Diag *d) {
  char *names = NULL;
  size_t names_len = 0;
  if (!clangcc_object_symbols(obj, len, &names, &names_len))
    return diag_error(d, NULL, "cannot read the symbols of the object for %s", path);
  uint32_t n_syms = 0;
  for (size_t i = 0; i < names_len; i++)
    n_syms += names[i] == 0;
  size_t index_size = 4 + 4 * (size_t)n_syms + names_len;
  size_t index_padded = index_size + (index_size & 1);
  uint32_t member_at = (uint32_t)(8 + 60 + index_padded);
  char mname[17];
  snprintf(mname, sizeof mname, strlen(member) <= 14 ? "%s/" : "onnxc.o/", member);
  Buf b;
  buf_init(&b);
  buf_puts(&b, "!<arch>\n");
  header(&b, "/", index_size);
  be32(&b, n_syms);
  for (uint32_t i = 0; i < n_syms; i++)
    be32(&b, member_at);
  buf_write(&b, names, names_len);
  if (index_size & 1)
    buf_putc(&b, '\n');
  header(&b, mname, len);
  buf_write(&b, obj, len);
  if (len & 1)
    buf_putc(&b, '\n');
  bool ok = sys_write_file(path, b.s, b.len);
  if (!ok)
    diag_error(d, NULL, "cannot write %s: %s", path, strerror(errno));
  buf_free(&b);
  free(names);
  return ok;
}
