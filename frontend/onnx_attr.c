/* onnx_attr.c - AttributeProto into IR Attr.
 *
 * Every kind is kept: scalars and lists are copied into the graph arena,
 * tensors decoded, subgraphs built recursively (names they read from an
 * enclosing graph become captures, see onnx_graph.c), sparse tensors
 * densified (the Attr keeps its SPARSE kind and holds the dense tensor in
 * u.t / u.ts). Type protos have no IR form: only their kind and count are
 * recorded. ref_attr_name only matters inside function bodies, which are not
 * expanded yet, so it is ignored.
 */
#include "onnx_internal.h"

#include <limits.h>
#include <string.h>

/* Models with IR version 1 carry no `type`: infer it from the field that is set. */
static AttrKind infer_kind(const Onnx__AttributeProto *a) {
  if (a->has_f) return AT_FLOAT;
  if (a->has_i) return AT_INT;
  if (a->has_s) return AT_STRING;
  if (a->t) return AT_TENSOR;
  if (a->g) return AT_GRAPH;
  if (a->sparse_tensor) return AT_SPARSE_TENSOR;
  if (a->tp) return AT_TYPE_PROTO;
  if (a->n_floats) return AT_FLOATS;
  if (a->n_ints) return AT_INTS;
  if (a->n_strings) return AT_STRINGS;
  if (a->n_tensors) return AT_TENSORS;
  if (a->n_graphs) return AT_GRAPHS;
  if (a->n_sparse_tensors) return AT_SPARSE_TENSORS;
  if (a->n_type_protos) return AT_TYPE_PROTOS;
  return AT_UNDEF;
}

/* A NUL-terminated arena copy of protobuf bytes (which may hold NULs). */
static const char *copy_bytes(Arena *ar, const ProtobufCBinaryData *b) {
  char *s = arena_alloc(ar, b->len + 1);
  if (b->len)
    memcpy(s, b->data, b->len);
  return s;
}

static Graph *subgraph(Scope *s, const char *attr, const Onnx__GraphProto *gp) {
  const char *name = gp->name && *gp->name ? gp->name : attr;
  Graph *sub = ir_subgraph_new(s->g, name);
  return fe_graph_build(s->c, s, sub, gp) ? sub : NULL;
}

/* Decodes one attribute into `out` (not yet attached to the node). */
static bool convert(Scope *s, Node *n, const Onnx__AttributeProto *ap, Attr *out) {
  Arena *ar = s->g->arena;
  char what[512];
  snprintf(what, sizeof what, "attribute '%s'", out->name);
  switch (out->kind) {
  case AT_FLOAT:
    out->u.f = ap->f;
    return true;
  case AT_INT:
    out->u.i = ap->i;
    return true;
  case AT_STRING:
    out->u.s = copy_bytes(ar, &ap->s);
    out->slen = ap->s.len;
    return true;
  case AT_TENSOR:
    if (!ap->t)
      return diag_error(s->c->d, n, "%s has no tensor", what);
    out->u.t = fe_tensor_decode(s->c, s->g, n, ap->t, what);
    return out->u.t != NULL;
  case AT_SPARSE_TENSOR:
    if (!ap->sparse_tensor)
      return diag_error(s->c->d, n, "%s has no sparse tensor", what);
    out->u.t = fe_sparse_decode(s->c, s->g, n, ap->sparse_tensor, what);
    return out->u.t != NULL;
  case AT_GRAPH:
    if (!ap->g)
      return diag_error(s->c->d, n, "%s has no graph", what);
    out->u.g = subgraph(s, out->name, ap->g);
    return out->u.g != NULL;
  case AT_TYPE_PROTO:
    out->n = ap->tp ? 1 : 0;
    return true;
  case AT_FLOATS:
    out->n = (int)ap->n_floats;
    out->u.fs = arena_dup(ar, ap->floats, ap->n_floats * sizeof(float));
    return true;
  case AT_INTS:
    out->n = (int)ap->n_ints;
    out->u.is = arena_dup(ar, ap->ints, ap->n_ints * sizeof(int64_t));
    return true;
  case AT_STRINGS: {
    const char **ss = arena_alloc(ar, (ap->n_strings + 1) * sizeof *ss);
    for (size_t i = 0; i < ap->n_strings; i++)
      ss[i] = copy_bytes(ar, &ap->strings[i]);
    out->n = (int)ap->n_strings;
    out->u.ss = ss;
    return true;
  }
  case AT_TENSORS:
  case AT_SPARSE_TENSORS: {
    bool sparse = out->kind == AT_SPARSE_TENSORS;
    size_t cnt = sparse ? ap->n_sparse_tensors : ap->n_tensors;
    Tensor **ts = arena_alloc(ar, (cnt + 1) * sizeof *ts);
    bool ok = true;
    for (size_t i = 0; i < cnt; i++) {
      ts[i] = sparse ? fe_sparse_decode(s->c, s->g, n, ap->sparse_tensors[i], what)
                     : fe_tensor_decode(s->c, s->g, n, ap->tensors[i], what);
      ok = ok && ts[i];
    }
    out->n = (int)cnt;
    out->u.ts = ts;
    return ok;
  }
  case AT_GRAPHS: {
    Graph **gs = arena_alloc(ar, (ap->n_graphs + 1) * sizeof *gs);
    bool ok = true;
    for (size_t i = 0; i < ap->n_graphs; i++) {
      gs[i] = subgraph(s, out->name, ap->graphs[i]);
      ok = ok && gs[i];
    }
    out->n = (int)ap->n_graphs;
    out->u.gs = gs;
    return ok;
  }
  case AT_TYPE_PROTOS:
    out->n = (int)ap->n_type_protos;
    return true;
  default:
    return diag_error(s->c->d, n, "%s has unknown type %d", what, (int)out->kind);
  }
}

static bool load_attr(Scope *s, Node *n, const Onnx__AttributeProto *ap) {
  Attr a;
  memset(&a, 0, sizeof a);
  a.name = fe_str(ap->name);
  if (!*a.name)
    return diag_error(s->c->d, n, "attribute with no name");
  /* names the compiler gives its own attributes (fused epilogues, passes'
   * marks) are no ONNX attribute of these ops: a model's is ignored, so it
   * cannot pose as a fused kernel description */
  bool product = n->op == OP_Conv || n->op == OP_Gemm || n->op == OP_MatMul;
  if (!strcmp(a.name, "epilogue") || !strcmp(a.name, "epilogue_consts") || !strncmp(a.name, "onnxc.", 6) ||
      (product && !strncmp(a.name, "activation", 10)))
    return true;
  a.kind = ap->has_type && ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED
               ? (AttrKind)ap->type
               : infer_kind(ap);
  size_t longest = ap->n_floats > ap->n_ints ? ap->n_floats : ap->n_ints;
  if (ap->n_strings > longest)
    longest = ap->n_strings;
  if (longest > INT_MAX)
    return diag_error(s->c->d, n, "attribute '%s' has too many elements", a.name);
  if (a.kind == AT_UNDEF)
    return diag_error(s->c->d, n, "attribute '%s' has no type and no value", a.name);
  if (!convert(s, n, ap, &a))
    return false;
  Attr *dst = ir_attr_add(n, a.name, a.kind);
  const char *name = dst->name;   /* the arena copy ir_attr_add made */
  *dst = a;
  dst->name = name;
  return true;
}

bool fe_attrs_load(Scope *s, Node *n, const Onnx__NodeProto *np) {
  bool ok = true;
  for (size_t i = 0; i < np->n_attribute; i++)
    ok = load_attr(s, n, np->attribute[i]) && ok;
  return ok;
}
