/* memplan_scratch.c - scratch bytes a node's kernel needs beyond its tensors.
 *
 * Planning runs before emission, so the size of a kernel's scratch (im2col
 * buffers, packed panels, ...) is decided here, from the node alone. The
 * planner gives each such node a buffer live only during its own step, inside
 * the arena (so NAME_ARENA_BYTES counts it), and the C emitter passes it to the
 * node's function as `unsigned char *S` (64-byte aligned); the op's emitter
 * reads the size back from plan->scratch_size[n->id]. An op that wants scratch
 * adds its case below and uses S in its emitter; the two must agree.
 */
#include "passes.h"

/* ONNXC_IMAGE_SCRATCH(h, w, n) of runtime/onnxc_image.h (kept equal by hand). */
static int64_t image_scratch_bytes(int64_t h, int64_t w, int64_t n) {
  int64_t png = h * (4 * w + 1) + n, jpeg = 3 * (w + 16) * (h + 16);
  return (png > jpeg ? png : jpeg) + 64;
}

int64_t plan_scratch_bytes(const Node *n) {
  switch (n->op) {
  case OP_ImageDecoder: /* lead: inflated PNG rows / JPEG planes (runtime/onnxc_image.h) */
    return n->out[0]->shape.rank == 3 && n->in[0]->shape.rank == 1
               ? image_scratch_bytes(n->out[0]->shape.d[0], n->out[0]->shape.d[1], n->in[0]->shape.d[0])
               : 0;
  default:
    return 0;
  }
}
