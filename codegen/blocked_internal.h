/* blocked_internal.h - what the C target's blocked kernels share
 * (emit_blocked.c: group-1 convs, conversions, dispatch;
 * emit_blocked_window.c: depthwise convs and pools; docs/layout.md). */
#ifndef ONNXC_BLOCKED_INTERNAL_H
#define ONNXC_BLOCKED_INTERNAL_H

#include "codegen_internal.h"

#define LL(x) ((long long)(x))
#define LANES 16 /* channels of a block */

/* The fused activation (attribute "activation") as the kernels' act code (1
 * Relu, 2 Clip, 3 LeakyRelu, 0 none) and its lo / hi literals. */
int blocked_act_code(const Node *n, char *lo, char *hi, size_t sz);
/* A fused elementwise epilogue (attribute "epilogue", from fuse-elementwise:
 * SiLU, HardSwish, GELU...) over `count` pixels of 16 lanes at PTR(i), on
 * the lanes below `real` (padding lanes keep the raw sums: they are never
 * read into a real lane); real NULL: all 16 lanes of `count` consecutive
 * pixels from PTR(0), as one loop (a trip count the C compiler vectorizes
 * rather than unrolls: a 16-lane loop per pixel was unrolled into scalar
 * code with branches, HardSwish 4x slower). */
void blocked_epilogue(EmitC *e, const Node *n, const char *ptr0, const char *ptr, const char *count,
                      const char *real);
/* A 2-D conv's kernel extent, strides and dilations. */
void blocked_window_of(const Node *n, int64_t *k, int64_t *s, int64_t *d);

/* emit_blocked_window.c */
bool blocked_emit_dw(EmitC *e, const Node *n);
bool blocked_emit_pool(EmitC *e, const Node *n);
bool blocked_emit_global_pool(EmitC *e, const Node *n);

#endif
