/* frontend.h - ONNX protobuf in, IR graph out.
 *
 * The only module that sees protobuf types. Everything it reports goes to the
 * Diag with the model path as prefix; it never exits or aborts on bad input.
 */
#ifndef ONNXC_FRONTEND_H
#define ONNXC_FRONTEND_H

#include "ir.h"

/* Loads an ONNX ModelProto file. NULL after reporting errors. */
Graph *fe_onnx_load(const char *path, Diag *d);
/* Same from memory; `path` names the model in messages and anchors external data. */
Graph *fe_onnx_load_buffer(const void *data, size_t n, const char *path, Diag *d);
/* Reads a serialized TensorProto file (backend test data) into g's arena.
 * *name receives the tensor's name ("" when it has none). NULL after errors. */
Tensor *fe_tensor_load(Graph *g, const char *path, const char **name, Diag *d);
/* Writes a tensor of fixed-size elements (not strings) as a serialized
 * TensorProto (raw_data, little-endian as in memory) to path, replacing it:
 * the form fe_tensor_load and onnx.load_tensor read. False after reporting
 * errors. */
bool fe_tensor_save(const char *path, const char *name, DType dt, const Shape *s, const void *raw,
                    size_t nbytes, Diag *d);
/* Reads a backend test value of type vt: a TensorProto, a SequenceProto of
 * tensors, or an OptionalProto of a tensor or of such a sequence
 * (onnx_seqdata.c). Up to max tensors go to out, their count to *n; *present
 * is false for an empty optional. False after reporting errors. */
bool fe_value_load(Graph *g, const char *path, ValueType vt, Tensor **out, int max, int *n,
                   bool *present, Diag *d);

#endif
