/* frontend_util.h - helpers shared by the frontend's unit tests.
 *
 * Builders of ONNX protobuf-c structs so a small model is a few lines of a
 * test; everything they allocate comes from a pool that pool_free (the
 * tests' teardown) releases. Lists are comma-separated strings: "a,,b" is
 * {"a", "", "b"}; dims "2,N,?" are static, dim_param and unknown.
 */
#ifndef ONNXC_TESTS_FRONTEND_UTIL_H
#define ONNXC_TESTS_FRONTEND_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "frontend.h"
#include "onnx.pb-c.h"

/* ---- pool ---- */
void *P(size_t n);                  /* zeroed, freed by pool_free */
char *S(const char *s);             /* pooled copy */
int pool_free(void **state);        /* cmocka teardown */

/* Appends item to a protobuf-c repeated field (arr, n). */
#define PUSH(arr, n, item)                                                    \
  do {                                                                        \
    void *na_ = P(((n) + 1) * sizeof *(arr));                                 \
    if (n)                                                                    \
      memcpy(na_, (arr), (n) * sizeof *(arr));                                \
    (arr) = na_;                                                              \
    (arr)[(n)++] = (item);                                                    \
  } while (0)

size_t split(const char *list, char ***out);

/* ---- proto builders ---- */
Onnx__ModelProto *model_new(int64_t opset);    /* opset 0: no opset_import */
Onnx__GraphProto *graph_new(const char *name);
Onnx__TypeProto *tensor_type(int elem, const char *dims);   /* dims NULL: no shape */
Onnx__ValueInfoProto *vinfo(const char *name, int elem, const char *dims); /* elem < 0: no type */
void add_input(Onnx__GraphProto *g, const char *name, int elem, const char *dims);
void add_output(Onnx__GraphProto *g, const char *name, int elem, const char *dims);
Onnx__TensorProto *tensor(const char *name, int dt, const char *dims);
Onnx__TensorProto *tensor_raw(const char *name, int dt, const char *dims, const void *data,
                              size_t n);
void set_floats(Onnx__TensorProto *t, size_t n, const float *v);
void set_int32s(Onnx__TensorProto *t, size_t n, const int32_t *v);
void set_int64s(Onnx__TensorProto *t, size_t n, const int64_t *v);
void add_init(Onnx__GraphProto *g, Onnx__TensorProto *t);
Onnx__NodeProto *add_node(Onnx__GraphProto *g, const char *op, const char *name,
                          const char *ins, const char *outs);
Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, const char *name, int type);
void set_external(Onnx__TensorProto *t, const char *loc, const char *off, const char *len);

/* ---- loading and checking ---- */
uint8_t *pack(const Onnx__ModelProto *m, size_t *n);
Graph *load_as(const Onnx__ModelProto *m, const char *path, Diag *d);
Graph *load(const Onnx__ModelProto *m, Diag *d);   /* as "mem/model.onnx" */
/* True when some message contains needle; prints them all otherwise. */
bool has_msg(const Diag *d, const char *needle);
void assert_loads(Graph *g, const Diag *d);
Node *find_node(const Graph *g, const char *name);
const Tensor *const_of(const Graph *g, const char *name);

/* ---- temporary files ---- */
char *tmp_dir(void);
char *path_in(const char *dir, const char *name);
void write_file(const char *path, const void *data, size_t n);
void cleanup(const char *dir, const char *const *files, int n_files,
             const char *const *subdirs, int n_subdirs);

#endif
