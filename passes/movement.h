/* movement.h - parameters of the data-movement family, decoded once.
 *
 * Shared by the inference hooks (infer_movement.c) and the folders
 * (fold_movement.c) of Slice, Pad and Split, whose operands come either from
 * attributes (older opsets) or from constant inputs (newer ones). Private to
 * passes/; the C emitter derives what it needs from static shapes.
 */
#ifndef ONNXC_MOVEMENT_H
#define ONNXC_MOVEMENT_H

#include "passes.h"

/* Results of the decoders: the operands are known, an operand is not a
 * constant (the shape stays unknown), or a diag error was reported. */
enum { MV_ERROR = -1, MV_DYNAMIC = 0, MV_KNOWN = 1 };

/* One axis of a Slice: first element, step and element count (count < 0
 * when the axis extent is unknown; step is 1 whenever count <= 1). */
typedef struct SliceDim {
  int64_t start, step, count;
} SliceDim;

/* Per-axis parameters of a Slice whose input has a known rank. */
int mv_slice_params(const Node *n, Diag *d, SliceDim *sd);

typedef enum PadMode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } PadMode;

/* Pads before and after each axis of the input (negative pads crop) and the
 * mode, for an input of known rank. */
int mv_pad_params(const Node *n, Diag *d, int64_t *begin, int64_t *end, PadMode *mode);

/* Extent of each of Split's outputs along `axis` (sizes has n->n_out entries;
 * entries are DIM_UNKNOWN when the input extent `dim` is unknown and the
 * parts are equal). */
int mv_split_sizes(const Node *n, Diag *d, int64_t dim, int64_t *sizes);

/* Normalized Split axis for an input of rank r; false after a diag error. */
bool mv_split_axis(const Node *n, Diag *d, int r, int *axis);

#endif
