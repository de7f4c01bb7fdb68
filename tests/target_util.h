/* target_util.h - the C target (one thread) for tests that plan memory: the
 * planner asks it for each kernel's scratch (codegen/target.c). */
#ifndef ONNXC_TARGET_UTIL_H
#define ONNXC_TARGET_UTIL_H

#include "codegen.h"

static inline const Target *onnxc_test_target(void) {
  static Target t;
  if (!t.scratch_bytes)
    codegen_target(&t, "c", 1);
  return &t;
}

#endif
