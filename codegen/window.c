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
  ir_window_pads(n, r, w->in, w->out, w->k, w->s, w->dil, w->pb, w->pe);
}

static int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

void window_read_convt(const Node *n, const Shape *x, const Shape *wt, const Shape *y, Window *win) {
  memset(win, 0, sizeof *win);
  int r = win->r = x->rank - 2;
  const char *ap = ir_attr_str(n, "auto_pad", "NOTSET");
  bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
  bool valid = strcmp(ap, "VALID") == 0, given = ir_attr(n, "output_shape") != NULL;
  int64_t opad[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
  window_ints(n, "strides", r, 1, win->s);
  window_ints(n, "dilations", r, 1, win->dil);
  window_ints(n, "output_padding", r, 0, opad);
  window_ints(n, "pads", 2 * r, 0, pads);
  win->in_plane = win->out_plane = 1;
  for (int i = 0; i < r; i++) {
    win->in[i] = x->d[2 + i];
    win->out[i] = y->d[2 + i];
    win->k[i] = wt->d[2 + i];
    if (given || upper || lower) {
      int64_t total = win->s[i] * (win->in[i] - 1) + opad[i] + (win->k[i] - 1) * win->dil[i] + 1 - win->out[i];
      win->pb[i] = upper ? floor_half(total) : total - floor_half(total);
    } else {
      win->pb[i] = valid ? 0 : pads[i];
    }
    win->in_plane *= win->in[i];
    win->out_plane *= win->out[i];
  }
}

void window_interior(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t *a,
                     int64_t *b) {
  int64_t last = in - 1 - (k - 1) * d + pb;
  *a = (pb + s - 1) / s;
  *b = last < 0 ? 0 : last / s + 1;
  if (*b > out)
    *b = out;
  if (*a > *b)
    *a = *b;
}
