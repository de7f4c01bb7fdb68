/* emit_ml.h - helpers the ai.onnx.ml emitters share (emit_ml.c,
 * emit_ml_linear.c, emit_ml_trees.c, emit_ml_svm.c). */
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
/* post_transform as ml_emit_post's code (PROBIT is refused in inference). */
int ml_post_code(const Node *n);
/* A float-list attribute and its length (NULL, 0 when absent). */
const float *ml_floats(const Node *n, const char *name, int *count);

#endif
