/* shapes_static.c - pinning symbolic dims and requiring static shapes.
 *
 * pass_pin_dims (requires: loaded graph; provides: every dim named by a -D pin
 * is static; runs before inference so pinned extents flow through the graph).
 * pass_require_static (requires: inferred graph; provides: every value the C
 * target touches has a static shape, else one error per unpinned dim name;
 * no node reads a value of data-dependent size, Value.dyn_dims).
 */
#include "passes.h"

#include <string.h>

static int pin_shape(Shape *s, const DimPin *pins, int n_pins, bool *used) {
  int k = 0;
  for (int i = 0; i < s->rank; i++)
    for (int p = 0; p < n_pins; p++)
      if (s->d[i] < 0 && s->sym[i] && strcmp(s->sym[i], pins[p].name) == 0) {
        s->d[i] = pins[p].value;
        s->sym[i] = NULL;
        used[p] = true;
        k++;
      }
  return k;
}

bool pass_pin_dims(Graph *g, const DimPin *pins, int n_pins, Diag *d) {
  if (n_pins == 0)
    return true;
  bool used[256] = {false};
  if (n_pins > 256)
    return diag_error(d, NULL, "too many -D pins (%d, at most 256)", n_pins);
  for (int p = 0; p < n_pins; p++)
    if (pins[p].value < 0)
      return diag_error(d, NULL, "-D %s=%lld: a dimension cannot be negative", pins[p].name,
                        (long long)pins[p].value);
  for (int i = 0; i < g->n_values; i++)
    pin_shape(&g->values[i]->shape, pins, n_pins, used);
  for (int p = 0; p < n_pins; p++)
    if (!used[p])
      diag_warn(d, NULL, "-D %s: the model has no symbolic dimension of that name", pins[p].name);
  return true;
}

static void report_value(const Value *v, bool *named, Diag *d) {
  char sb[512];
  for (int i = 0; i < v->shape.rank; i++) {
    if (v->shape.d[i] >= 0)
      continue;
    if (v->shape.sym[i]) {
      if (*named)
        return;
      *named = true;
      diag_error(d, v->producer, "value '%s' has shape %s: dimension '%s' is symbolic; "
                 "pin it with -D %s=VALUE", v->name, shape_str(&v->shape, sb, sizeof sb),
                 v->shape.sym[i], v->shape.sym[i]);
    } else {
      diag_error(d, v->producer, "value '%s' has shape %s, which is not known at compile time",
                 v->name, shape_str(&v->shape, sb, sizeof sb));
    }
    return;
  }
  if (v->shape.rank < 0) {
    diag_error(d, v->producer, "value '%s' has an unknown rank", v->name);
    return;
  }
  int64_t numel, bytes;
  if (!shape_numel(&v->shape, &numel) || !dtype_bytes(v->dt, numel, &bytes) || bytes > INT64_MAX / 4)
    diag_error(d, v->producer, "value '%s' of shape %s is too large: its byte size overflows",
               v->name, shape_str(&v->shape, sb, sizeof sb));
}

bool pass_require_static(Graph *g, Diag *d) {
  int before = d->n_errors;
  /* Report inputs first: a symbolic input dim is the usual root cause, and
   * everything downstream would only repeat it. */
  bool named = false;
  for (int i = 0; i < g->n_inputs; i++)
    report_value(g->inputs[i], &named, d);
  if (d->n_errors > before)
    return false;
  for (Node *n = g->first; n; n = n->next)
    for (int i = 0; i < n->n_out; i++)
      if (n->out[i]->kind != VK_NONE) {
        report_value(n->out[i], &named, d);
        if (d->n_errors > before)
          return false;
      }
  /* A data-dependent extent (Value.dyn_dims) is reported to the caller only:
   * kernels are specialized for static shapes, so no node may read one. */
  for (Node *n = g->first; n; n = n->next)
    for (int i = 0; i < n->n_out; i++)
      if (n->out[i]->kind != VK_NONE && n->out[i]->dyn_dims && n->out[i]->n_uses > 0)
        diag_error(d, n, "output %d ('%s') of node '%s' has a data-dependent size; only graph "
                   "outputs may have one (it is read by node '%s')", i, n->out[i]->name, n->name,
                   n->out[i]->uses[0]->name);
  return d->n_errors == before;
}
