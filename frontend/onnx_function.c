/* onnx_function.c - inlines calls to model-local functions.
 *
 * A ModelProto may define functions (ModelProto.functions); a node whose
 * (domain, op_type, overload) names one is a call. Before the IR is built,
 * every call in the main graph and in its subgraphs is replaced by the
 * function's body, recursively (a function may call another one):
 *
 *   - formal inputs and outputs become the caller's actual names (an input
 *     the caller omits becomes "", i.e. an omitted optional input);
 *   - every other value and every node of the body gets the prefix
 *     "<caller node name>/", so two calls never share a name;
 *   - an attribute with ref_attr_name takes the caller's attribute of that
 *     name, else the function's default (attribute_proto), else it is left
 *     out, as the ONNX spec says.
 *
 * The protobuf is not copied: the new node lists and the rewritten nodes
 * live in an arena, and the graphs' original node lists are put back by
 * fe_functions_restore before protobuf-c frees the message.
 */
#include "onnx_internal.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_CALL_DEPTH = 64 };

typedef struct SavedList {
  Onnx__GraphProto *gp;
  size_t n_node;
  Onnx__NodeProto **node;
} SavedList;

struct FeFunctions {
  FeCtx *c;
  const Onnx__ModelProto *m;
  Arena *a;
  SavedList *saved;
  size_t n_saved, cap_saved;
  size_t calls;         /* calls expanded (for unique prefixes) */
  bool ok;
};

/* A growable array of node pointers in the arena-free heap (freed at the end
 * of one graph's expansion, after its final copy is made in the arena). */
typedef struct NodeList {
  Onnx__NodeProto **v;
  size_t n, cap;
} NodeList;

static void list_push(NodeList *l, Onnx__NodeProto *np) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 64;
    Onnx__NodeProto **nv = realloc(l->v, l->cap * sizeof *nv);
    IR_ASSERT(nv != NULL);
    l->v = nv;
  }
  l->v[l->n++] = np;
}

static bool same_str(const char *a, const char *b) {
  return strcmp(fe_str(a), fe_str(b)) == 0;
}

static bool is_default_domain(const char *d) {
  return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

/* Fields newer than some installed onnx.proto files (Debian 12's libonnx-dev
 * is ONNX 1.12): CMake defines ONNXC_PROTO_OVERLOAD / ONNXC_PROTO_ATTRIBUTE_PROTO
 * when the schema the bindings came from has them. Without them protobuf-c
 * keeps the fields as unknown ones (by field number), so a model that uses
 * them is refused with the reason instead of being read wrong. */
enum { NODE_OVERLOAD_TAG = 8, FUNCTION_ATTRIBUTE_PROTO_TAG = 11, FUNCTION_OVERLOAD_TAG = 13 };

#ifdef ONNXC_PROTO_OVERLOAD
#define FN_OVERLOAD(fn) ((fn)->overload)
#define NODE_OVERLOAD(np) ((np)->overload)
#else
#define FN_OVERLOAD(fn) ((void)(fn), (const char *)NULL)
#define NODE_OVERLOAD(np) ((void)(np), (const char *)NULL)
#endif

static bool has_unknown_field(const ProtobufCMessage *m, uint32_t tag) {
  for (unsigned i = 0; i < m->n_unknown_fields; i++)
    if (m->unknown_fields[i].tag == tag)
      return true;
  return false;
}

/* False (after an error) when the model uses function fields this build's
 * schema lacks. */
static bool schema_has_fields(FeFunctions *f) {
  const char *what = NULL, *fname = NULL;
  for (size_t i = 0; i < f->m->n_functions && !what; i++) {
    const Onnx__FunctionProto *fn = f->m->functions[i];
    fname = fe_str(fn->name);
#ifndef ONNXC_PROTO_OVERLOAD
    if (has_unknown_field(&fn->base, FUNCTION_OVERLOAD_TAG))
      what = "an overload name";
#endif
#ifndef ONNXC_PROTO_ATTRIBUTE_PROTO
    if (has_unknown_field(&fn->base, FUNCTION_ATTRIBUTE_PROTO_TAG))
      what = "attribute defaults (attribute_proto)";
#endif
  }
  (void)has_unknown_field;
  if (!what)
    return true;
  diag_error(f->c->d, NULL,
             "function '%s' has %s, a field of ONNX 1.13+ that the onnx.proto this onnxc was "
             "built from lacks; rebuild onnxc with -DONNX_PROTO=<onnx.proto of ONNX >= 1.16> "
             "(pip install onnx)", fname, what);
  return false;
}

static const Onnx__FunctionProto *find_function(const FeFunctions *f, const Onnx__NodeProto *np) {
  for (size_t i = 0; i < f->m->n_functions; i++) {
    const Onnx__FunctionProto *fn = f->m->functions[i];
    bool dom = is_default_domain(fn->domain) ? is_default_domain(np->domain)
                                             : same_str(fn->domain, np->domain);
    if (dom && same_str(fn->name, np->op_type) && same_str(FN_OVERLOAD(fn), NODE_OVERLOAD(np)))
      return fn;
  }
  return NULL;
}

static const Onnx__AttributeProto *find_attr(Onnx__AttributeProto *const *v, size_t n,
                                             const char *name) {
  for (size_t i = 0; i < n; i++)
    if (same_str(v[i]->name, name))
      return v[i];
  return NULL;
}

static bool has_subgraph(const Onnx__AttributeProto *ap) {
  return ap->g != NULL || ap->n_graphs > 0;
}

/* Name of value `name` of the body inside call `prefix`. */
typedef struct Rename {
  const Onnx__FunctionProto *fn;
  const Onnx__NodeProto *call;
  const char *prefix;
} Rename;

static char *rename_value(FeFunctions *f, const Rename *r, const char *name) {
  if (!name || !*name)
    return arena_strdup(f->a, "");
  for (size_t i = 0; i < r->fn->n_input; i++)
    if (same_str(r->fn->input[i], name))
      return arena_strdup(f->a, i < r->call->n_input ? fe_str(r->call->input[i]) : "");
  for (size_t i = 0; i < r->fn->n_output; i++)
    if (same_str(r->fn->output[i], name)) {
      /* An output the caller does not take stays internal to the call. */
      if (i < r->call->n_output && r->call->output[i] && *r->call->output[i])
        return arena_strdup(f->a, r->call->output[i]);
      break;
    }
  return arena_printf(f->a, "%s%s", r->prefix, name);
}

static void expand_graph(FeFunctions *f, Onnx__GraphProto *gp, const char *where);

/* Appends the body of fn as called by `call` to out. `top` is the node of the
 * graph itself whose expansion this is, the one messages name. */
static void expand_call(FeFunctions *f, const Onnx__NodeProto *top, const Onnx__NodeProto *call,
                        const Onnx__FunctionProto *fn, int depth, const char *where,
                        NodeList *out) {
  const char *call_name = call->name && *call->name
                              ? call->name
                              : arena_printf(f->a, "%s_call%zu", fe_str(fn->name), f->calls);
  f->calls++;
  const char *top_name = top->name && *top->name ? top->name : call_name;
  if (depth >= MAX_CALL_DEPTH) {
    diag_error(f->c->d, NULL,
               "node '%s' (%s)%s: calls to model-local functions nest deeper than %d "
               "(recursive function '%s'?)",
               top_name, fe_str(top->op_type), where, MAX_CALL_DEPTH, fe_str(fn->name));
    f->ok = false;
    return;
  }
  if (call->n_input > fn->n_input || call->n_output > fn->n_output) {
    diag_error(f->c->d, NULL,
               "node '%s' (%s)%s: %zu inputs and %zu outputs given, the function takes at "
               "most %zu and %zu (in the call '%s')",
               top_name, fe_str(top->op_type), where, call->n_input, call->n_output,
               fn->n_input, fn->n_output, call_name);
    f->ok = false;
    return;
  }
  Rename r = {fn, call, arena_printf(f->a, "%s/", call_name)};
  for (size_t k = 0; k < fn->n_node; k++) {
    const Onnx__NodeProto *b = fn->node[k];
    Onnx__NodeProto *nb = arena_dup(f->a, b, sizeof *b);
    nb->name = arena_printf(f->a, "%s%s", r.prefix,
                            b->name && *b->name ? b->name : arena_printf(f->a, "n%zu", k));
    nb->input = arena_alloc(f->a, (b->n_input ? b->n_input : 1) * sizeof *nb->input);
    for (size_t i = 0; i < b->n_input; i++)
      nb->input[i] = rename_value(f, &r, b->input[i]);
    nb->output = arena_alloc(f->a, (b->n_output ? b->n_output : 1) * sizeof *nb->output);
    for (size_t i = 0; i < b->n_output; i++)
      nb->output[i] = rename_value(f, &r, b->output[i]);

    /* Attributes: references resolve against the caller, then the defaults. */
    nb->attribute = arena_alloc(f->a, (b->n_attribute ? b->n_attribute : 1) * sizeof *nb->attribute);
    nb->n_attribute = 0;
    for (size_t i = 0; i < b->n_attribute; i++) {
      const Onnx__AttributeProto *ap = b->attribute[i];
      if (has_subgraph(ap)) {
        diag_error(f->c->d, NULL,
                   "node '%s' (%s)%s: function '%s' has a node with a subgraph attribute "
                   "('%s'); inlining such functions is not supported",
                   top_name, fe_str(top->op_type), where, fe_str(fn->name), fe_str(ap->name));
        f->ok = false;
        return;
      }
      if (!ap->ref_attr_name || !*ap->ref_attr_name) {
        nb->attribute[nb->n_attribute++] = (Onnx__AttributeProto *)ap;
        continue;
      }
      const Onnx__AttributeProto *src =
          find_attr(call->attribute, call->n_attribute, ap->ref_attr_name);
#ifdef ONNXC_PROTO_ATTRIBUTE_PROTO
      if (!src)
        src = find_attr(fn->attribute_proto, fn->n_attribute_proto, ap->ref_attr_name);
#endif
      if (!src)
        continue;   /* unset reference: the attribute is absent */
      if (has_subgraph(src)) {
        diag_error(f->c->d, NULL,
                   "node '%s' (%s)%s: attribute '%s' is a graph; passing graphs into "
                   "functions is not supported",
                   top_name, fe_str(top->op_type), where, fe_str(src->name));
        f->ok = false;
        return;
      }
      Onnx__AttributeProto *copy = arena_dup(f->a, src, sizeof *src);
      copy->name = ap->name;
      copy->ref_attr_name = NULL;
      nb->attribute[nb->n_attribute++] = copy;
    }

    const Onnx__FunctionProto *inner = find_function(f, nb);
    if (inner)
      expand_call(f, top, nb, inner, depth + 1, where, out);
    else
      list_push(out, nb);
  }
}

/* Expands the calls in the subgraphs of gp's nodes, then in gp itself. */
static void expand_graph(FeFunctions *f, Onnx__GraphProto *gp, const char *where) {
  bool any = false;
  for (size_t k = 0; k < gp->n_node; k++) {
    Onnx__NodeProto *np = gp->node[k];
    for (size_t i = 0; i < np->n_attribute; i++) {
      Onnx__AttributeProto *ap = np->attribute[i];
      const char *sub = arena_printf(f->a, " in subgraph '%s' of node '%s'", fe_str(ap->name),
                                     fe_str(np->name));
      if (ap->g)
        expand_graph(f, ap->g, sub);
      for (size_t j = 0; j < ap->n_graphs; j++)
        expand_graph(f, ap->graphs[j], sub);
    }
    if (find_function(f, np))
      any = true;
  }
  if (!any)
    return;

  NodeList out = {0};
  for (size_t k = 0; k < gp->n_node; k++) {
    const Onnx__FunctionProto *fn = find_function(f, gp->node[k]);
    if (fn)
      expand_call(f, gp->node[k], gp->node[k], fn, 0, where, &out);
    else
      list_push(&out, gp->node[k]);
  }
  if (f->n_saved == f->cap_saved) {
    f->cap_saved = f->cap_saved ? f->cap_saved * 2 : 8;
    SavedList *ns = realloc(f->saved, f->cap_saved * sizeof *ns);
    IR_ASSERT(ns != NULL);
    f->saved = ns;
  }
  f->saved[f->n_saved++] = (SavedList){gp, gp->n_node, gp->node};
  gp->node = arena_alloc(f->a, (out.n ? out.n : 1) * sizeof *out.v);
  if (out.n)
    memcpy(gp->node, out.v, out.n * sizeof *out.v);
  gp->n_node = out.n;
  free(out.v);
}

FeFunctions *fe_functions_inline(FeCtx *c, Onnx__ModelProto *m) {
  if (m->n_functions == 0 || !m->graph)
    return NULL;
  FeFunctions *f = calloc(1, sizeof *f);
  IR_ASSERT(f != NULL);
  f->c = c;
  f->m = m;
  f->a = arena_new();
  f->ok = schema_has_fields(f);
  if (f->ok)
    expand_graph(f, m->graph, "");
  return f;
}

bool fe_functions_ok(const FeFunctions *f) { return !f || f->ok; }

void fe_functions_restore(FeFunctions *f) {
  if (!f)
    return;
  for (size_t i = f->n_saved; i-- > 0;) {
    f->saved[i].gp->node = f->saved[i].node;
    f->saved[i].gp->n_node = f->saved[i].n_node;
  }
  free(f->saved);
  arena_free(f->a);
  free(f);
}
