/* window.h - sliding-window geometry shared by both targets (Conv, MaxPool,
 * AveragePool, and ConvTranspose's scatter geometry).
 *
 * The extents come from the inferred shapes; pads follow the ONNX docs
 * (explicit `pads`, or auto_pad SAME_UPPER / SAME_LOWER / VALID, the total
 * pad split as passes/infer_conv.c splits it). The C emitter (emit_conv.c)
 * and the CUDA emitter (cuda/emit_cuda_kernels.c) read one description, so the
 * two targets cannot disagree on where a window starts.
 */
#ifndef ONNXC_WINDOW_H
#define ONNXC_WINDOW_H

#include "ir.h"

typedef struct Window {
  int r;                                 /* spatial rank */
  int64_t in[IR_MAX_RANK], out[IR_MAX_RANK];
  int64_t k[IR_MAX_RANK], s[IR_MAX_RANK], dil[IR_MAX_RANK];
  int64_t pb[IR_MAX_RANK], pe[IR_MAX_RANK]; /* pads at the begin and the end */
  int64_t in_plane, out_plane;           /* spatial element counts */
} Window;

/* Reads n's window over input shape x and output shape y (N, C, spatial...).
 * `kernel` gives the window extents when n has no kernel_shape attribute (Conv
 * takes them from its weights); NULL means 1. */
void window_read(const Node *n, const Shape *x, const Shape *y, const int64_t *kernel, Window *w);

/* The output columns [*a, *b) of a row whose window (extent k, stride s,
 * dilation d, begin pad pb) lies inside the input row of `in`: o * s - pb >=
 * 0 and o * s - pb + (k - 1) * d <= in - 1; a <= b <= out. Kernels compute
 * those without bounds and the border columns with them. */
void window_interior(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t *a,
                     int64_t *b);

/* A ConvTranspose's geometry (input x, weight w [C, M/group, k...], output
 * y): the kernel extents from w, strides, dilations, and in pb the begin pads
 * as the ONNX docs derive them: explicit pads unless output_shape or
 * SAME_* auto_pad ask for a given output extent, in which case total =
 * s * (in - 1) + output_padding + (k - 1) * d + 1 - out is split (the odd
 * unit at the end for SAME_UPPER, at the start otherwise). pb may be
 * negative (an output_shape larger than the full result); pe is unused.
 * Output o along an axis takes tap k from input (o + pb - k * d) / s when
 * that divides exactly and lies inside the input. */
void window_read_convt(const Node *n, const Shape *x, const Shape *w, const Shape *y, Window *win);

/* Integer attribute list `name` of length `want`, or `dflt` everywhere when
 * absent or of another length. */
void window_ints(const Node *n, const char *name, int want, int64_t dflt, int64_t *out);

#endif
