/* emit_ml.h - helpers the ai.onnx.ml emitters share (emit_ml.c,
 * emit_ml_linear.c, emit_ml_trees.c). */
#ifndef ONNXC_EMIT_ML_H
#define ONNXC_EMIT_ML_H

#include "codegen.h"

/* Writes `static const CTYPE NAME[count] = {...};` item by item (emit_ml.c). */
typedef struct MlTable {
  Buf b;
  int count;
} MlTable;
void ml_table_begin(MlTable *t, const char *ctype, const char *name, int count);
void ml_table_add(MlTable *t, const char *item);
void ml_table_end(EmitC *e, MlTable *t);

/* post_transform (1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO; 0 nothing) over the
 * k floats of row `y`, in place (emit_ml_linear.c). */
void ml_emit_post(EmitC *e, int post, const char *y, int64_t k);

#endif
