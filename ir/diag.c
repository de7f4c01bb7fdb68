/* diag.c - user-facing diagnostics.
 *
 * Every message carries its location: `FILE: node 'NAME' (OP): message`.
 * Messages are kept so callers (and tests) can inspect them, and optionally
 * echoed as they arrive so a long compile reports early.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

void diag_init(Diag *d, const char *file, FILE *echo) {
  memset(d, 0, sizeof *d);
  d->file = file ? file : "<input>";
  d->echo = echo;
}

void diag_free(Diag *d) {
  for (int i = 0; i < d->n_msgs; i++)
    free(d->msgs[i]);
  free(d->msgs);
  d->msgs = NULL;
  d->n_msgs = d->cap_msgs = 0;
}

static void vreport(Diag *d, const Node *n, const char *kind, const char *fmt, va_list ap) {
  Buf b;
  buf_init(&b);
  buf_printf(&b, "%s: ", d->file);
  if (kind)
    buf_printf(&b, "%s: ", kind);
  if (n)
    buf_printf(&b, "node '%s' (%s): ", n->name, n->op_type);
  buf_vprintf(&b, fmt, ap);
  if (d->echo) {
    fprintf(d->echo, "%s\n", b.s);
    fflush(d->echo);
  }
  if (d->n_msgs == d->cap_msgs) {
    d->cap_msgs = d->cap_msgs ? d->cap_msgs * 2 : 8;
    d->msgs = realloc(d->msgs, (size_t)d->cap_msgs * sizeof *d->msgs);
    IR_ASSERT(d->msgs != NULL);
  }
  d->msgs[d->n_msgs++] = b.s;
}

bool diag_error(Diag *d, const Node *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(d, n, NULL, fmt, ap);
  va_end(ap);
  d->n_errors++;
  return false;
}

void diag_warn(Diag *d, const Node *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(d, n, "warning", fmt, ap);
  va_end(ap);
  d->n_warnings++;
}

const char *diag_last(const Diag *d) { return d->n_msgs ? d->msgs[d->n_msgs - 1] : ""; }

void diag_move(Diag *to, Diag *from) {
  for (int i = 0; i < from->n_msgs; i++) {
    if (to->echo) {
      fprintf(to->echo, "%s\n", from->msgs[i]);
      fflush(to->echo);
    }
    if (to->n_msgs == to->cap_msgs) {
      to->cap_msgs = to->cap_msgs ? to->cap_msgs * 2 : 8;
      to->msgs = realloc(to->msgs, (size_t)to->cap_msgs * sizeof *to->msgs);
      IR_ASSERT(to->msgs != NULL);
    }
    to->msgs[to->n_msgs++] = from->msgs[i];
  }
  to->n_errors += from->n_errors;
  to->n_warnings += from->n_warnings;
  free(from->msgs);
  from->msgs = NULL;
  from->n_msgs = from->cap_msgs = from->n_errors = from->n_warnings = 0;
}
