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

int64_t plan_scratch_bytes(const Node *n) {
  switch (n->op) {
  default:
    return 0;
  }
}
