/* onnx_graph.c - GraphProto into an IR Graph.
 *
 * Two phases, so that nodes listed out of topological order still link
 * (ir_toposort orders them later and reports cycles):
 *   1. definitions: initializers become constants; graph inputs that are not
 *      initializers become runtime inputs (old opsets list weights as inputs
 *      too); every node is created with its named outputs; then omitted ("")
 *      outputs get fresh values whose names collide with nothing in scope;
 *   2. uses: attributes (a subgraph sees every name of this graph), node
 *      inputs by name, graph outputs. A name not defined here but in an
 *      enclosing graph becomes a capture of each graph in between.
 * value_info and output types are recorded on produced values as hints that
 * shape inference later overwrites.
 */
#include "onnx_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- types ----------------------------------------------------------------- */

static const char *type_case_name(Onnx__TypeProto__ValueCase vc) {
  switch (vc) {
  case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: return "a sequence";
  case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: return "a map";
  case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: return "an optional";
  case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: return "a sparse tensor";
  default: return "an unset";
  }
}

/* Sequences and optionals (of tensors, or an optional sequence) are read as
 * their tensor elements plus a ValueType; control-flow lowering resolves them
 * (passes/lower_sequence.c). */
static ValueType value_type(const Onnx__TypeProto *tp) {
  if (!tp)
    return VT_TENSOR;
  if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
    return VT_SEQUENCE;
  if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && tp->optional_type->elem_type &&
      tp->optional_type->elem_type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
    return VT_OPTIONAL_SEQUENCE;
  if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE)
    return VT_OPTIONAL;
  return VT_TENSOR;
}

/* The tensor type inside sequence / optional wrappers (NULL when absent). */
static const Onnx__TypeProto *tensor_part(const Onnx__TypeProto *tp) {
  for (int depth = 0; tp && depth < 2; depth++) {
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
      tp = tp->sequence_type->elem_type;
    else if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE)
      tp = tp->optional_type->elem_type;
    else
      break;
  }
  return tp;
}

/* Reads a tensor type. No type at all gives undef / unknown rank. A non-tensor
 * type is an error when `need_tensor`, else it just yields no information
 * (returns false without a message). */
static bool type_of(Scope *s, const Onnx__TypeProto *tp, const char *what, bool need_tensor,
                    DType *dt, Shape *sh) {
  Diag *d = s->c->d;
  *dt = DT_UNDEF;
  *sh = shape_unknown();
  if (!tp)
    return true;
  tp = tensor_part(tp);
  if (!tp)
    return true;   /* a sequence or optional whose element type is not given */
  if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
    if (need_tensor)
      diag_error(d, NULL, "%s has %s type; only tensors are supported", what,
                 type_case_name(tp->value_case));
    return false;
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  if (tt->has_elem_type && tt->elem_type != 0) {
    if (!dtype_valid(tt->elem_type))
      return diag_error(d, NULL, "%s has invalid element type %d", what, (int)tt->elem_type);
    *dt = (DType)tt->elem_type;
  }
  if (!tt->shape)
    return true;
  if (tt->shape->n_dim > IR_MAX_RANK)
    return diag_error(d, NULL, "%s has rank %zu, more than the supported %d", what,
                      tt->shape->n_dim, IR_MAX_RANK);
  sh->rank = (int)tt->shape->n_dim;
  for (int i = 0; i < sh->rank; i++) {
    const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[i];
    sh->d[i] = DIM_UNKNOWN;
    sh->sym[i] = NULL, sh->x[i] = NULL;
    if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      /* Paddle2ONNX and some older exporters write -1 for a dynamic extent;
       * ONNX Runtime reads any negative dim_value as unknown, and so do we
       * (an unnamed dim, as if the field were absent). Tensors' own dims,
       * which carry data, still reject negatives (onnx_tensor.c). */
      if (dim->dim_value >= 0)
        sh->d[i] = dim->dim_value;
    } else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
               dim->dim_param && *dim->dim_param) {
      sh->sym[i] = arena_strdup(s->g->arena, dim->dim_param);
    }
  }
  return true;
}

/* Records a type hint on a value a node produces (inputs and constants
 * already know their type). */
static void hint(Value *v, DType dt, const Shape *sh) {
  if (v->kind != VK_NODE)
    return;
  if (dt != DT_UNDEF)
    v->dt = dt;
  if (sh->rank >= 0)
    v->shape = *sh;
}

/* ---- names ------------------------------------------------------------------ */

static bool is_anon(const Scope *s, const Value *v) {
  return v->id >= s->anon_lo && v->id < s->anon_hi;
}

/* A value defined in this graph under its ONNX name. */
static Value *lookup(const Scope *s, const char *name) {
  Value *v = ir_value_find(s->g, name);
  return v && !is_anon(s, v) ? v : NULL;
}

/* Finds `name` here or, through captures, in an enclosing graph. */
static Value *resolve(Scope *s, const char *name) {
  Value *v = lookup(s, name);
  if (v || !s->up)
    return v;
  Value *outer = resolve(s->up, name);
  if (!outer)
    return NULL;
  v = ir_capture_add(s->g, name, outer->dt, &outer->shape);
  /* Holds because synthesized names avoid every name of the enclosing graphs. */
  IR_ASSERT(strcmp(v->name, name) == 0);
  return v;
}

static bool taken(const Scope *s, const char *name) {
  for (; s; s = s->up)
    if (ir_value_find(s->g, name))
      return true;
  return false;
}

/* "by node 'X'" / "as a graph input" / ... for duplicate-definition messages. */
static const char *defined_by(Arena *ar, const Value *v) {
  switch (v->kind) {
  case VK_INPUT: return "as a graph input";
  case VK_CONST: return "as an initializer";
  default: return v->producer ? arena_printf(ar, "by node '%s'", v->producer->name) : "";
  }
}

/* ---- phase 1: definitions ------------------------------------------------- */

static void add_initializers(Scope *s, const Onnx__GraphProto *gp) {
  Graph *g = s->g;
  char what[512];
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *tp = gp->initializer[i];
    const char *name = fe_str(tp->name);
    if (!*name) {
      diag_error(s->c->d, NULL, "initializer %zu%s has no name", i, s->where);
      continue;
    }
    if (ir_value_find(g, name)) {
      diag_error(s->c->d, NULL, "initializer '%s'%s is defined more than once", name,
                 s->where);
      continue;
    }
    snprintf(what, sizeof what, "initializer '%s'%s", name, s->where);
    Tensor *t = fe_tensor_decode(s->c, g, NULL, tp, what);
    if (t)
      ir_const_new(g, name, t);
    else
      ir_value_new(g, name, DT_UNDEF, NULL);   /* reported; defined so uses don't cascade */
  }
  for (size_t i = 0; i < gp->n_sparse_initializer; i++) {
    const Onnx__SparseTensorProto *sp = gp->sparse_initializer[i];
    const char *name = sp->values ? fe_str(sp->values->name) : "";
    if (!*name) {
      diag_error(s->c->d, NULL, "sparse initializer %zu%s has no name", i, s->where);
      continue;
    }
    if (ir_value_find(g, name)) {
      diag_error(s->c->d, NULL, "initializer '%s'%s is defined more than once", name,
                 s->where);
      continue;
    }
    snprintf(what, sizeof what, "sparse initializer '%s'%s", name, s->where);
    Tensor *t = fe_sparse_decode(s->c, g, NULL, sp, what);
    if (t)
      ir_const_new(g, name, t);
    else
      ir_value_new(g, name, DT_UNDEF, NULL);
  }
}

static void add_inputs(Scope *s, const Onnx__GraphProto *gp) {
  char what[512];
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    const char *name = fe_str(vi->name);
    if (!*name) {
      diag_error(s->c->d, NULL, "graph input %zu%s has no name", i, s->where);
      continue;
    }
    Value *v = ir_value_find(s->g, name);
    if (v && v->kind != VK_INPUT)
      continue;   /* an initializer (maybe a failed one) listed as input: a weight */
    if (v) {
      diag_error(s->c->d, NULL, "graph input '%s'%s is listed more than once", name,
                 s->where);
      continue;
    }
    DType dt;
    Shape sh;
    snprintf(what, sizeof what, "graph input '%s'%s", name, s->where);
    if (!type_of(s, vi->type, what, true, &dt, &sh)) {
      dt = DT_UNDEF;   /* reported; keep the name defined so uses still link */
      sh = shape_unknown();
    }
    ir_input_add(s->g, name, dt, &sh)->vt = value_type(vi->type);
  }
}

/* Creates the node of np with its named outputs; its inputs all start as
 * "none" and are linked in phase 2. */
static Node *add_node(Scope *s, const Onnx__NodeProto *np, size_t index) {
  Graph *g = s->g;
  const char *op_type = fe_str(np->op_type);
  const char *domain = fe_str(np->domain);
  bool std = !*domain || strcmp(domain, "ai.onnx") == 0;
  if (!*op_type) {
    diag_error(s->c->d, NULL, "node %zu ('%s')%s has no op_type", index, fe_str(np->name),
               s->where);
    op_type = "?";
  }
  OpKind op = ir_op_lookup_in(domain, op_type);
  const char *name = np->name && *np->name ? np->name
                                           : arena_printf(g->arena, "%s_%zu", op_type, index);
  Value **none = calloc(np->n_input ? np->n_input : 1, sizeof *none);
  IR_ASSERT(none != NULL);
  Node *n = ir_node_new(g, op, op_type, name, (int)np->n_input, none, 0);
  free(none);
  n->domain = std ? "" : arena_strdup(g->arena, domain);

  /* ir_node_new names outputs after the node; ONNX names them itself, so the
   * outputs are made here (ir.h has no rename: the name index would go stale). */
  n->n_out = (int)np->n_output;
  n->out = arena_alloc(g->arena, (np->n_output ? np->n_output : 1) * sizeof *n->out);
  for (size_t j = 0; j < np->n_output; j++) {
    const char *oname = fe_str(np->output[j]);
    Value *prev = *oname ? ir_value_find(g, oname) : NULL;
    if (prev) {
      diag_error(s->c->d, n, "output '%s' is already defined %s", oname,
                 defined_by(g->arena, prev));
      continue;   /* gets an anonymous value below */
    }
    if (!*oname)
      continue;
    Value *v = ir_value_new(g, oname, DT_UNDEF, NULL);
    v->producer = n;
    v->out_index = (int)j;
    n->out[j] = v;
  }
  return n;
}

/* Gives every omitted output a value named "<node>_out<i>", made unique
 * against all names of this and the enclosing graphs (so a later capture of
 * an outer name can never clash with it). */
static void add_anon_outputs(Scope *s, Node **nodes, size_t n_nodes) {
  Graph *g = s->g;
  s->anon_lo = g->n_values;
  for (size_t i = 0; i < n_nodes; i++) {
    Node *n = nodes[i];
    for (int j = 0; j < n->n_out; j++) {
      if (n->out[j])
        continue;
      const char *base = arena_printf(g->arena, "%s_out%d", n->name, j), *name = base;
      for (int k = 1; taken(s, name); k++)
        name = arena_printf(g->arena, "%s_%d", base, k);
      Value *v = ir_value_new(g, name, DT_UNDEF, NULL);
      v->producer = n;
      v->out_index = j;
      n->out[j] = v;
    }
  }
  s->anon_hi = g->n_values;
}

static void add_value_info(Scope *s, const Onnx__GraphProto *gp) {
  char what[512];
  for (size_t i = 0; i < gp->n_value_info; i++) {
    const Onnx__ValueInfoProto *vi = gp->value_info[i];
    Value *v = lookup(s, fe_str(vi->name));
    DType dt;
    Shape sh;
    if (!v)
      continue;   /* info about a value nothing produces: harmless, ignored */
    snprintf(what, sizeof what, "value_info '%s'%s", v->name, s->where);
    if (type_of(s, vi->type, what, false, &dt, &sh))
      hint(v, dt, &sh);
  }
}

/* ---- phase 2: uses ------------------------------------------------------- */

static void link_inputs(Scope *s, Node *n, const Onnx__NodeProto *np) {
  for (size_t j = 0; j < np->n_input; j++) {
    const char *iname = fe_str(np->input[j]);
    if (!*iname)
      continue;   /* omitted optional input: stays Graph.none */
    Value *v = resolve(s, iname);
    if (v)
      ir_node_set_input(n, (int)j, v);
    else
      diag_error(s->c->d, n, "input '%s' is not defined", iname);
  }
}

static void add_outputs(Scope *s, const Onnx__GraphProto *gp) {
  char what[512];
  for (size_t i = 0; i < gp->n_output; i++) {
    const Onnx__ValueInfoProto *vi = gp->output[i];
    const char *name = fe_str(vi->name);
    if (!*name) {
      diag_error(s->c->d, NULL, "graph output %zu%s has no name", i, s->where);
      continue;
    }
    Value *v = resolve(s, name);
    if (!v) {
      diag_error(s->c->d, NULL, "graph output '%s'%s is not produced by any node", name,
                 s->where);
      continue;
    }
    DType dt;
    Shape sh;
    snprintf(what, sizeof what, "graph output '%s'%s", name, s->where);
    if (type_of(s, vi->type, what, false, &dt, &sh))
      hint(v, dt, &sh);
    if (v->kind == VK_NODE)
      v->vt = value_type(vi->type);
    ir_output_add(s->g, v);
  }
}

bool fe_graph_build(FeCtx *c, Scope *up, Graph *g, const Onnx__GraphProto *gp) {
  int errors0 = c->d->n_errors;
  if (gp->name && *gp->name)
    g->name = arena_strdup(g->arena, gp->name);
  Scope s = {c, g, up, "", 0, 0};
  if (up)
    s.where = arena_printf(g->arena, " in subgraph '%s'", g->name);

  add_initializers(&s, gp);
  add_inputs(&s, gp);
  Node **nodes = calloc(gp->n_node ? gp->n_node : 1, sizeof *nodes);
  IR_ASSERT(nodes != NULL);
  for (size_t i = 0; i < gp->n_node; i++)
    nodes[i] = add_node(&s, gp->node[i], i);
  add_anon_outputs(&s, nodes, gp->n_node);
  add_value_info(&s, gp);

  for (size_t i = 0; i < gp->n_node; i++) {
    fe_attrs_load(&s, nodes[i], gp->node[i]);
    link_inputs(&s, nodes[i], gp->node[i]);
  }
  add_outputs(&s, gp);
  free(nodes);
  return c->d->n_errors == errors0;
}
