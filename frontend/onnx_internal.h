/* onnx_internal.h - private interface between the frontend's files.
 *
 * onnx_load.c reads files and the ModelProto, onnx_graph.c turns a GraphProto
 * into a Graph, onnx_attr.c converts node attributes, onnx_tensor.c decodes
 * TensorProto / SparseTensorProto data. Only frontend/ includes this header
 * (and the generated onnx.pb-c.h); nothing after the frontend sees protobuf.
 */
#ifndef ONNXC_ONNX_INTERNAL_H
#define ONNXC_ONNX_INTERNAL_H

#include "frontend.h"
#include "onnx.pb-c.h"

/* What every part of one load shares. */
typedef struct FeCtx {
  Diag *d;
  const char *dir;     /* folder of the model file (anchors external data); NULL: none */
  int64_t dense_bytes; /* dense forms of sparse tensors made so far (MAX_DENSE_BYTES) */
} FeCtx;

/* One graph being built, with a link to the enclosing one (subgraphs). */
typedef struct Scope {
  FeCtx *c;
  Graph *g;
  struct Scope *up;
  const char *where;   /* "" or " in subgraph 'NAME'", for messages */
  /* Values whose ONNX name was "" (omitted optional outputs) get synthesized
   * names that a node input must not find: they hold the value ids
   * [anon_lo, anon_hi), all created in one batch. */
  int anon_lo, anon_hi;
} Scope;

/* ---- onnx_graph.c ---- */

/* Fills g (fresh, empty) from gp; up is the enclosing scope or NULL.
 * Reports every problem it finds; false when any was an error. */
bool fe_graph_build(FeCtx *c, Scope *up, Graph *g, const Onnx__GraphProto *gp);

/* ---- onnx_attr.c ---- */

/* Converts the node's attributes onto n (subgraphs are built recursively). */
bool fe_attrs_load(Scope *s, Node *n, const Onnx__NodeProto *np);

/* ---- onnx_tensor.c ---- */

/* Decodes tp into a Tensor in g's arena. `what` names the tensor in messages
 * ("initializer 'w'", "attribute 'value'"); n, when set, prefixes them. */
Tensor *fe_tensor_decode(FeCtx *c, Graph *g, const Node *n, const Onnx__TensorProto *tp,
                         const char *what);
/* Densifies a sparse tensor (COO values + linear or per-axis int64 indices). */
Tensor *fe_sparse_decode(FeCtx *c, Graph *g, const Node *n, const Onnx__SparseTensorProto *sp,
                         const char *what);

/* ---- onnx_function.c ---- */

/* Inlines the calls to model-local functions in m's graphs (in place; see the
 * file comment). NULL when m defines no function. fe_functions_ok tells
 * whether every call could be expanded (errors are reported on c->d);
 * fe_functions_restore puts m back as protobuf-c made it, before it is freed. */
typedef struct FeFunctions FeFunctions;
FeFunctions *fe_functions_inline(FeCtx *c, Onnx__ModelProto *m);
bool fe_functions_ok(const FeFunctions *f);
void fe_functions_restore(FeFunctions *f);

/* NULL-safe view of an optional protobuf string. */
static inline const char *fe_str(const char *s) { return s ? s : ""; }

#endif
