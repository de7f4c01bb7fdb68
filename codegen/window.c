/* window.c - sliding-window geometry shared by the C and CUDA emitters
 * (window.h). */
#include "window.h"

#include <string.h>

void window_ints(const Node *n, const char *name, int want, int64_t dflt, int64_t *out) {
  int cnt;
  const int64_t *v = ir_attr_ints(n, name, &cnt);
  for (int i = 0; i < want; i++)
    out[i] = v && cnt == want ? v[i] : dflt;
}

void window_read(const Node *n, const Shape *x, const Shape *y, const int64_t *kernel, Window *w) {
  memset(w, 0, sizeof *w);
  int r = w->r = x->rank - 2;
  w->in_plane = w->out_plane = 1;
  for (int i = 0; i < r; i++) {
    w->in[i] = x->d[2 + i];
    w->out[i] = y->d[2 + i];
    w->in_plane *= w->in[i];
    w->out_plane *= w->out[i];
  }
  if (ir_attr(n, "kernel_shape") || !kernel)
    window_ints(n, "kernel_shape", r, 1, w->k);
  else
    memcpy(w->k, kernel, (size_t)r * sizeof *w->k);
  window_ints(n, "strides", r, 1, w->s);
  window_ints(n, "dilations", r, 1, w->dil);
  int64_t pads[2 * IR_MAX_RANK];
  window_ints(n, "pads", 2 * r, 0, pads);
  const char *ap = ir_attr_str(n, "auto_pad", "NOTSET");
  bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
  for (int i = 0; i < r; i++) {
    if (upper || lower) {
      int64_t total = (w->out[i] - 1) * w->s[i] + (w->k[i] - 1) * w->dil[i] + 1 - w->in[i];
      if (total < 0)
        total = 0;
      w->pb[i] = upper ? total / 2 : total - total / 2;
      w->pe[i] = total - w->pb[i];
    } else if (strcmp(ap, "VALID") == 0) {
      w->pb[i] = w->pe[i] = 0;
    } else {
      w->pb[i] = pads[i];
      w->pe[i] = pads[r + i];
    }
  }
}
