/* lower_control.c - If, Loop, Scan and SequenceMap turned into plain dataflow.
 *
 * requires: check-ops and canonicalize (subgraphs included); sequence and
 *           optional graph inputs expanded (pass_expand_inputs, which this
 *           pass calls with defaults when the tools did not).
 * provides: no control-flow, sequence or optional node and no sequence value
 *           is left; every node is inferred (and folded where constant).
 * invalidates: nothing (the nodes it adds are inferred as it goes).
 * Trip counts and conditions often become constant only after folding, so
 * the pass is an inference walk (like pass_infer) that lowers each control
 * node when it reaches it: the taken If branch is inlined (both, merged with
 * Where, for a run-time condition); Loop and Scan bodies are unrolled one
 * iteration at a time, each iteration inferred and folded before the next
 * condition is read. Sequences and optionals are compile-time lists of
 * tensor values (lower_sequence.c). See docs/control-flow.md.
 */
#include "lower_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- side tables ---------------------------------------------------------- */

static void grow_values(Lower *L) {
  int need = L->g->n_values + 1;
  if (need <= L->cap_v)
    return;
  int cap = need * 2;
  L->seq = realloc(L->seq, (size_t)cap * sizeof *L->seq);
  L->repl = realloc(L->repl, (size_t)cap * sizeof *L->repl);
  IR_ASSERT(L->seq && L->repl);
  memset(L->seq + L->cap_v, 0, (size_t)(cap - L->cap_v) * sizeof *L->seq);
  memset(L->repl + L->cap_v, 0, (size_t)(cap - L->cap_v) * sizeof *L->repl);
  L->cap_v = cap;
}

static void grow_nodes(Lower *L) {
  int need = L->g->n_node_ids + 1;
  if (need <= L->cap_n)
    return;
  int cap = need * 2;
  L->done = realloc(L->done, (size_t)cap);
  L->lowered = realloc(L->lowered, (size_t)cap);
  IR_ASSERT(L->done && L->lowered);
  memset(L->done + L->cap_n, 0, (size_t)(cap - L->cap_n));
  memset(L->lowered + L->cap_n, 0, (size_t)(cap - L->cap_n));
  L->cap_n = cap;
}

Value *lower_resolve(Lower *L, Value *v) {
  while (v && v->g == L->g && v->id >= 0 && v->id < L->cap_v && L->repl[v->id])
    v = L->repl[v->id];
  return v;
}

Seq *lower_seq(Lower *L, Value *v) {
  for (; v && v->g == L->g && v->id >= 0 && v->id < L->cap_v; v = L->repl[v->id])
    if (L->seq[v->id])
      return L->seq[v->id];
  return NULL;
}

void lower_seq_set(Lower *L, Value *v, Seq *s) {
  grow_values(L);
  L->seq[v->id] = s;
}

Seq *lower_seq_new(Lower *L, int n, bool opt) {
  Seq *s = arena_alloc(L->g->arena, sizeof *s);
  s->n = n;
  s->opt = opt;
  s->v = arena_alloc(L->g->arena, (size_t)(n ? n : 1) * sizeof *s->v);
  return s;
}

void lower_forward(Lower *L, Value *from, Value *to) {
  to = lower_resolve(L, to);
  grow_values(L);
  if (from == to || from->kind == VK_NONE)
    return;
  Seq *s = lower_seq(L, to);
  if (s)
    L->seq[from->id] = s;
  else
    ir_value_replace(from, to);
  L->repl[from->id] = to;
}

Node *lower_node(Lower *L, Node *pos, OpKind op, const char *name, int n_in, Value *const *in) {
  L->budget--;
  return ir_node_insert(L->g, pos, op, ir_ops[op].name, name, n_in, in, 1);
}

static Value *scalar_const(Lower *L, const char *name, DType dt, int64_t v) {
  Shape s = shape_scalar();
  Tensor *t = ir_tensor_new(L->g, dt, &s, NULL);
  IR_ASSERT(t);
  tensor_set_i64(t, 0, v);
  return ir_const_new(L->g, name, t);
}

Value *lower_const_i64(Lower *L, const char *name, int64_t v) { return scalar_const(L, name, DT_I64, v); }
Value *lower_const_bool(Lower *L, const char *name, bool v) { return scalar_const(L, name, DT_BOOL, v); }

bool lower_const_scalar(Value *v, int64_t *out) {
  if (!v || v->kind != VK_CONST || v->konst->numel != 1)
    return false;
  if (!dtype_is_int(v->konst->dt) && v->konst->dt != DT_BOOL)
    return false;
  *out = tensor_get_i64(v->konst, 0);
  return true;
}

/* ---- subgraph inlining ---------------------------------------------------- */

/* Copies the nodes of src into dst. m maps src values (by id) to dst values;
 * values not mapped yet are constants (copied on first use) or captures
 * (resolved in src's enclosing graph through `outer`, or in L->g). */
typedef struct Map {
  Lower *L;
  Graph *src, *dst;
  Value **m;
  struct Map *outer;
} Map;

static Graph *clone_graph(Map *outer, Graph *src);

static Value *map_value(Map *mp, Value *v) {
  Lower *L = mp->L;
  if (v->kind == VK_NONE)
    return mp->dst->none;
  IR_ASSERT(v->g == mp->src);
  if (mp->m[v->id])
    return mp->dst == L->g ? lower_resolve(L, mp->m[v->id]) : mp->m[v->id];
  Value *r = NULL;
  if (v->kind == VK_CONST) {
    r = ir_const_new(mp->dst, v->name, v->konst);
  } else if (v->kind == VK_INPUT && mp->src->parent) {
    /* A capture: the value of that name in the enclosing graph. */
    Value *ov = ir_value_find(mp->src->parent, v->name);
    if (!ov) {
      diag_error(L->d, NULL, "subgraph '%s' reads '%s', which is not defined", mp->src->name, v->name);
      return NULL;
    }
    if (mp->outer) {
      Value *t = map_value(mp->outer, ov);
      if (!t)
        return NULL;
      r = mp->dst == L->g ? t : ir_capture_add(mp->dst, t->name, t->dt, &t->shape);
    } else {
      IR_ASSERT(mp->src->parent == L->g);
      r = lower_resolve(L, ov);
    }
  }
  if (!r) {
    diag_error(L->d, NULL, "subgraph '%s': value '%s' has no definition", mp->src->name, v->name);
    return NULL;
  }
  mp->m[v->id] = r;
  return r;
}

static bool copy_attrs(Map *mp, Node *to, const Node *from) {
  for (int i = 0; i < from->n_attrs; i++) {
    const Attr *a = &from->attrs[i];
    Attr *b = ir_attr_add(to, a->name, a->kind);
    b->n = a->n;
    b->u = a->u;
    b->slen = a->slen;
    if (a->kind == AT_GRAPH && a->u.g) {
      b->u.g = clone_graph(mp, a->u.g);
      if (!b->u.g)
        return false;
    } else if (a->kind == AT_GRAPHS) {
      b->u.gs = arena_alloc(mp->dst->arena, (size_t)(a->n ? a->n : 1) * sizeof *b->u.gs);
      for (int k = 0; k < a->n; k++)
        if (!(b->u.gs[k] = clone_graph(mp, a->u.gs[k])))
          return false;
    }
  }
  return true;
}

/* Copies src's nodes before pos in mp->dst. */
static bool copy_nodes(Map *mp, Node *pos, const char *suffix) {
  Lower *L = mp->L;
  for (Node *sn = mp->src->first; sn; sn = sn->next) {
    Value *ins[64], **in = sn->n_in <= 64 ? ins : malloc((size_t)sn->n_in * sizeof *in);
    const char *names[64], **nm = sn->n_out <= 64 ? names : malloc((size_t)sn->n_out * sizeof *nm);
    IR_ASSERT(in && nm);
    bool ok = true;
    for (int i = 0; i < sn->n_in && ok; i++)
      ok = (in[i] = map_value(mp, sn->in[i])) != NULL;
    for (int j = 0; j < sn->n_out; j++)
      nm[j] = sn->out[j]->kind == VK_NONE ? NULL : sn->out[j]->name;
    Node *nn = NULL;
    if (ok) {
      const char *name = suffix ? arena_printf(mp->dst->arena, "%s%s", sn->name, suffix) : sn->name;
      nn = ir_node_insert_named(mp->dst, pos, sn->op, sn->op_type, name, sn->n_in, in, sn->n_out, nm);
      nn->domain = sn->domain;
      for (int j = 0; j < sn->n_out; j++) {
        if (sn->out[j]->kind == VK_NONE)
          ir_node_drop_output(nn, j);
        else
          mp->m[sn->out[j]->id] = nn->out[j];
        nn->out[j]->vt = sn->out[j]->vt;
      }
      ok = copy_attrs(mp, nn, sn);
      L->budget--;
    }
    if (in != ins)
      free(in);
    if (nm != names)
      free(nm);
    if (!ok)
      return false;
  }
  return true;
}

/* A copy of subgraph src (whose enclosing graph is being copied by `outer`)
 * as a subgraph of outer->dst, its captures renamed accordingly. */
static Graph *clone_graph(Map *outer, Graph *src) {
  Graph *c = ir_subgraph_new(outer->dst, src->name);
  c->opset = src->opset;
  Map mp = {outer->L, src, c, calloc((size_t)src->n_values + 1, sizeof(Value *)), outer};
  IR_ASSERT(mp.m);
  Graph *res = c;
  for (int i = 0; i < src->n_inputs; i++) {
    Value *v = src->inputs[i];
    mp.m[v->id] = ir_input_add(c, v->name, v->dt, &v->shape);
    mp.m[v->id]->vt = v->vt;
  }
  if (!copy_nodes(&mp, NULL, NULL))
    res = NULL;
  for (int i = 0; res && i < src->n_outputs; i++) {
    Value *v = map_value(&mp, src->outputs[i]);
    if (!v) {
      res = NULL;
      break;
    }
    ir_output_add(c, v);
  }
  free(mp.m);
  return res;
}

/* Inlines sub before pos with its inputs bound to args; res receives the
 * values of its outputs. */
static bool inline_graph(Lower *L, Graph *sub, Node *pos, Value *const *args, Value **res,
                         const char *suffix) {
  if (L->budget - sub->n_nodes < 0)
    return diag_error(L->d, pos, "unrolling needs more than %d nodes; the compiler unrolls control "
                      "flow fully (see docs/control-flow.md)", LOWER_MAX_NODES);
  Map mp = {L, sub, L->g, calloc((size_t)sub->n_values + 1, sizeof(Value *)), NULL};
  IR_ASSERT(mp.m);
  for (int i = 0; i < sub->n_inputs; i++)
    mp.m[sub->inputs[i]->id] = args[i];
  bool ok = copy_nodes(&mp, pos, suffix);
  for (int i = 0; ok && i < sub->n_outputs; i++)
    ok = (res[i] = map_value(&mp, sub->outputs[i])) != NULL;
  free(mp.m);
  return ok && lower_flush(L, pos);
}

bool lower_inline(Lower *L, Graph *sub, Node *pos, Value *const *args, Value **res, const char *suffix) {
  return inline_graph(L, sub, pos, args, res, suffix);
}

static Graph *graph_attr(Lower *L, Node *n, const char *name) {
  const Attr *a = ir_attr(n, name);
  if (!a || a->kind != AT_GRAPH || !a->u.g) {
    diag_error(L->d, n, "attribute '%s' (a graph) is missing", name);
    return NULL;
  }
  return a->u.g;
}

/* ---- If ---------------------------------------------------------------- */

/* Run-time condition: Where(cond, t, e) for tensors t and e. */
static Value *select(Lower *L, Node *n, Value *cond, Value *t, Value *e, int i) {
  char a[128], b[128];
  if (lower_seq(L, t) || lower_seq(L, e)) {
    diag_error(L->d, n, "output %d: with a condition known only at run time, sequence elements "
               "must be tensors", i);
    return NULL;
  }
  if (t->dt != e->dt || !shape_is_static(&t->shape) || !shape_equal(&t->shape, &e->shape)) {
    diag_error(L->d, n, "output %d: with a condition known only at run time, both branches must "
               "give the same static type and shape (then %s%s, else %s%s)", i, dtype_name(t->dt),
               shape_str(&t->shape, a, sizeof a), dtype_name(e->dt), shape_str(&e->shape, b, sizeof b));
    return NULL;
  }
  Value *in[3] = {cond, t, e};
  Node *w = lower_node(L, n, OP_Where, arena_printf(L->g->arena, "%s_where%d", n->name, i), 3, in);
  return lower_flush(L, n) ? w->out[0] : NULL;
}

/* Output i of an If with a run-time condition: selected tensor by tensor
 * (sequences and optionals must agree in length and presence). */
static bool select_output(Lower *L, Node *n, Value *cond, Value *t, Value *e, int i) {
  t = lower_resolve(L, t);
  e = lower_resolve(L, e);
  Seq *st = lower_seq(L, t), *se = lower_seq(L, e);
  if (!st && !se) {
    Value *v = select(L, n, cond, t, e, i);
    if (v)
      lower_forward(L, n->out[i], v);
    return v != NULL;
  }
  if (!st || !se || st->n != se->n || st->opt != se->opt)
    return diag_error(L->d, n, "output %d: with a condition known only at run time, both branches "
                      "must give sequences/optionals of the same length", i);
  Seq *s = lower_seq_new(L, st->n, st->opt);
  for (int k = 0; k < st->n; k++)
    if (!(s->v[k] = select(L, n, cond, lower_resolve(L, st->v[k]), lower_resolve(L, se->v[k]), i)))
      return false;
  lower_seq_set(L, n->out[i], s);
  return true;
}

/* Inlines branch `sub` before n on a private Diag, so that a branch that
 * cannot run with the static shapes is no error of the compile. On failure
 * the nodes it added are removed again and *why receives its first error
 * (without the file prefix; heap-owned); on success its messages (warnings)
 * join L->d. */
static bool try_branch(Lower *L, Node *n, Graph *sub, Value **res, char **why) {
  Diag trial, *outer = L->d;
  diag_init(&trial, outer->file, NULL);
  Node *before = n->prev;
  long budget = L->budget;
  L->d = &trial;
  bool ok = inline_graph(L, sub, n, NULL, res, NULL) && trial.n_errors == 0;
  L->d = outer;
  if (ok) {
    diag_move(outer, &trial);
    return true;
  }
  /* Consumers come after producers: remove from n backwards. */
  for (Node *k = n->prev, *prev; k && k != before; k = prev) {
    prev = k->prev;
    for (int i = 0; i < k->n_out; i++)
      if (k->out[i]->kind != VK_NONE)
        ir_value_replace(k->out[i], L->g->none);  /* a use left by an unfinished lowering */
    ir_node_remove(k);
  }
  L->budget = budget;
  size_t skip = strlen(trial.file) + 2;
  const char *first = "no reason given";
  for (int i = 0; i < trial.n_msgs; i++)
    if (strlen(trial.msgs[i]) > skip && strncmp(trial.msgs[i] + skip, "warning: ", 9) != 0) {
      first = trial.msgs[i] + skip;
      break;
    }
  *why = malloc(strlen(first) + 1);
  IR_ASSERT(*why);
  strcpy(*why, first);
  diag_free(&trial);
  return false;
}

/* y = BranchGuard(v, cond){fail_if}: v, or ONNXC_ERR_BRANCH at run time when
 * cond == fail_if. */
static Value *guard(Lower *L, Node *n, Value *cond, Value *v, bool fail_if, int i) {
  Value *in[2] = {v, cond};
  Node *gn = lower_node(L, n, OP_BranchGuard, arena_printf(L->g->arena, "%s_guard%d", n->name, i), 2, in);
  ir_attr_set_int(gn, "fail_if", fail_if);
  return gn->out[0];
}

/* Output i of an If whose other branch cannot run: the good branch's value
 * behind a guard (each element of a sequence). */
static bool guard_output(Lower *L, Node *n, Value *cond, Value *v, bool fail_if, int i) {
  v = lower_resolve(L, v);
  Seq *s = lower_seq(L, v);
  if (!s) {
    lower_forward(L, n->out[i], guard(L, n, cond, v, fail_if, i));
    return lower_flush(L, n);
  }
  Seq *t = lower_seq_new(L, s->n, s->opt);
  for (int k = 0; k < s->n; k++)
    t->v[k] = guard(L, n, cond, lower_resolve(L, s->v[k]), fail_if, i);
  lower_seq_set(L, n->out[i], t);
  return lower_flush(L, n);
}

/* Run-time condition: both branches inlined and merged with Where. A branch
 * that fails to infer or lower with the static shapes (e.g. the 8 kHz half of
 * a model whose `sr` input picks it) becomes a run-time error instead: the
 * other branch's outputs are guarded, and the compile warns. */
static bool lower_if_runtime(Lower *L, Node *n, Value *cond, Graph *tg, Graph *eg, Value **rt, Value **re) {
  char *why_t = NULL, *why_e = NULL;
  bool ok_t = try_branch(L, n, tg, rt, &why_t);
  bool ok_e = try_branch(L, n, eg, re, &why_e);
  bool ok = ok_t || ok_e;
  if (!ok) {
    diag_error(L->d, n, "neither branch can run with these input shapes: then branch: %s; "
               "else branch: %s", why_t, why_e);
  } else if (!ok_t || !ok_e) {
    diag_warn(L->d, n, "%s branch cannot run with these input shapes (%s); taking it returns "
              "ONNXC_ERR_BRANCH", ok_t ? "else" : "then", ok_t ? why_e : why_t);
    for (int i = 0; ok && i < n->n_out; i++)
      ok = guard_output(L, n, cond, ok_t ? rt[i] : re[i], !ok_t, i);
  } else {
    for (int i = 0; ok && i < n->n_out; i++)
      ok = select_output(L, n, cond, rt[i], re[i], i);
  }
  free(why_t);
  free(why_e);
  return ok;
}

static bool lower_if(Lower *L, Node *n) {
  Graph *tg = graph_attr(L, n, "then_branch"), *eg = graph_attr(L, n, "else_branch");
  if (!tg || !eg)
    return false;
  if (tg->n_outputs != n->n_out || eg->n_outputs != n->n_out)
    return diag_error(L->d, n, "the branches have %d and %d outputs, the node %d", tg->n_outputs,
                      eg->n_outputs, n->n_out);
  Value *cond = lower_resolve(L, n->in[0]);
  Value **rt = calloc((size_t)n->n_out + 1, sizeof *rt), **re = calloc((size_t)n->n_out + 1, sizeof *re);
  IR_ASSERT(rt && re);
  int64_t c;
  bool ok;
  if (lower_const_scalar(cond, &c)) {
    ok = inline_graph(L, c ? tg : eg, n, NULL, rt, NULL);
    for (int i = 0; ok && i < n->n_out; i++)
      lower_forward(L, n->out[i], rt[i]);
  } else if (cond->dt != DT_BOOL || cond->shape.rank < 0) {
    ok = diag_error(L->d, n, "the condition must be a bool tensor of one element");
  } else {
    if (cond->shape.rank > 0) {   /* [1] -> scalar, so Where keeps each output's shape */
      Value *in[2] = {cond, rewrite_const_i64(L->g, arena_printf(L->g->arena, "%s_scalar", n->name), NULL, 0)};
      cond = lower_node(L, n, OP_Reshape, arena_printf(L->g->arena, "%s_cond", n->name), 2, in)->out[0];
    }
    ok = lower_flush(L, n) && lower_if_runtime(L, n, cond, tg, eg, rt, re);
  }
  free(rt);
  free(re);
  return ok;
}

/* ---- Loop ---------------------------------------------------------------- */

/* Stacks the per-iteration values of one scan output along a new axis. */
static Value *stack(Lower *L, Node *n, Value **vals, int count, int64_t axis, bool reverse,
                    const Value *decl, int i) {
  if (count == 0) {
    /* Zero iterations: an empty tensor of the declared element type. */
    if (!decl || decl->dt == DT_UNDEF || !shape_is_static(&decl->shape) || decl->shape.rank >= IR_MAX_RANK) {
      diag_error(L->d, n, "scan output %d has zero iterations and no static declared element shape", i);
      return NULL;
    }
    Shape s = decl->shape;
    memmove(&s.d[1], &s.d[0], (size_t)s.rank * sizeof s.d[0]);
    memmove(&s.sym[1], &s.sym[0], (size_t)s.rank * sizeof s.sym[0]);
    s.d[0] = 0;
    s.sym[0] = NULL, s.x[0] = NULL;
    s.rank++;
    Tensor *t = ir_tensor_new(L->g, decl->dt, &s, L->d);
    return t ? ir_const_new(L->g, arena_printf(L->g->arena, "%s_empty%d", n->name, i), t) : NULL;
  }
  Value **parts = malloc((size_t)count * sizeof *parts);
  IR_ASSERT(parts);
  Value *ax = rewrite_const_i64(L->g, arena_printf(L->g->arena, "%s_axis%d", n->name, i), &axis, 1);
  for (int k = 0; k < count; k++) {
    Value *in[2] = {lower_resolve(L, vals[reverse ? count - 1 - k : k]), ax};
    if (lower_seq(L, in[0])) {
      free(parts);
      diag_error(L->d, n, "scan output %d is a sequence; only tensors can be scanned", i);
      return NULL;
    }
    parts[k] = lower_node(L, n, OP_Unsqueeze, arena_printf(L->g->arena, "%s_unsq%d_%d", n->name, i, k), 2, in)->out[0];
  }
  Node *cat = lower_node(L, n, OP_Concat, arena_printf(L->g->arena, "%s_stack%d", n->name, i), count, parts);
  ir_attr_set_int(cat, "axis", axis);
  free(parts);
  return lower_flush(L, n) ? cat->out[0] : NULL;
}

static bool lower_loop(Lower *L, Node *n) {
  Graph *body = graph_attr(L, n, "body");
  if (!body)
    return false;
  int N = n->n_in - 2, K = n->n_out - N;
  if (K < 0 || body->n_inputs != 2 + N || body->n_outputs != 1 + N + K)
    return diag_error(L->d, n, "the body has %d inputs and %d outputs, expected %d and %d",
                      body->n_inputs, body->n_outputs, 2 + N, 1 + N + (K < 0 ? 0 : K));
  int64_t trips = -1, c;
  DType iter_dt = DT_I64;
  if (ir_has_input(n, 0)) {
    Value *m = lower_resolve(L, n->in[0]);
    if (!lower_const_scalar(m, &trips))
      return diag_error(L->d, n, "the trip count is not known at compile time; loops are unrolled "
                        "(bind it, e.g. with a constant input)");
    iter_dt = m->dt;
  }
  Value *cond = ir_has_input(n, 1) ? lower_resolve(L, n->in[1]) : NULL;
  if (trips < 0 && !cond)
    return diag_error(L->d, n, "the loop has neither a trip count nor a condition");
  Value **args = calloc((size_t)(2 + N + 1), sizeof *args);
  Value **res = calloc((size_t)(1 + N + K + 1), sizeof *res);
  Value **scans = calloc((size_t)K * LOWER_MAX_TRIPS + 1, sizeof *scans);
  IR_ASSERT(args && res && scans);
  for (int i = 0; i < N; i++)
    args[2 + i] = lower_resolve(L, n->in[2 + i]);
  bool ok = true;
  int k = 0;
  for (;; k++) {
    if (trips >= 0 && k >= trips)
      break;
    if (cond) {
      if (!lower_const_scalar(cond, &c)) {
        ok = diag_error(L->d, n, "the loop condition is not known at compile time (iteration %d); "
                        "loops are unrolled", k);
        break;
      }
      if (!c)
        break;
    }
    if (k >= LOWER_MAX_TRIPS) {
      ok = diag_error(L->d, n, "the loop runs more than %d iterations; loops are unrolled", LOWER_MAX_TRIPS);
      break;
    }
    args[0] = scalar_const(L, arena_printf(L->g->arena, "%s_iter%d", n->name, k), iter_dt, k);
    args[1] = cond ? cond : lower_const_bool(L, arena_printf(L->g->arena, "%s_cond%d", n->name, k), true);
    if (!(ok = inline_graph(L, body, n, args, res, arena_printf(L->g->arena, "_%d", k))))
      break;
    cond = lower_resolve(L, res[0]);
    for (int i = 0; i < N; i++)
      args[2 + i] = lower_resolve(L, res[1 + i]);
    for (int j = 0; j < K; j++)
      scans[j * LOWER_MAX_TRIPS + k] = res[1 + N + j];
  }
  for (int i = 0; ok && i < N; i++)
    lower_forward(L, n->out[i], args[2 + i]);
  for (int j = 0; ok && j < K; j++) {
    Value *v = stack(L, n, &scans[j * LOWER_MAX_TRIPS], k, 0, false, body->outputs[1 + N + j], j);
    ok = v != NULL;
    if (ok)
      lower_forward(L, n->out[N + j], v);
  }
  free(args);
  free(res);
  free(scans);
  return ok;
}

/* ---- Scan ---------------------------------------------------------------- */

typedef struct ScanSpec {
  int N, M, K;
  int64_t in_axis[64], in_dir[64], out_axis[64], out_dir[64];
} ScanSpec;

/* One scan over states st[N] and inputs xs[M] (already without batch axis);
 * outs receives N final states then K stacked outputs. */
static bool scan_core(Lower *L, Node *n, Graph *body, const ScanSpec *sp, Value **st, Value **xs,
                      Value **outs, const char *tag) {
  int64_t len = -1;
  for (int j = 0; j < sp->M; j++) {
    Value *x = xs[j];
    int ax;
    if (x->shape.rank < 0 || !shape_axis(sp->in_axis[j], x->shape.rank, &ax))
      return diag_error(L->d, n, "scan input %d: axis %lld is out of range", j, (long long)sp->in_axis[j]);
    int64_t d = x->shape.d[ax];
    if (d < 0)
      return diag_error(L->d, n, "scan input %d: the sequence length is not static", j);
    if (len >= 0 && d != len)
      return diag_error(L->d, n, "scan inputs have different lengths (%lld and %lld)", (long long)len, (long long)d);
    len = d;
  }
  if (len < 0)
    return diag_error(L->d, n, "the scan has no scan input");
  /* zero iterations: the scan outputs' shapes would come from a body never
   * run (found by fuzz.short: a null first output) */
  if (len == 0 && sp->K > 0)
    return diag_error(L->d, n, "the scan's sequence is empty (length 0): its scan outputs are not supported");
  if (len > LOWER_MAX_TRIPS)
    return diag_error(L->d, n, "the scan runs %lld iterations, more than %d; scans are unrolled",
                      (long long)len, LOWER_MAX_TRIPS);
  int N = sp->N, M = sp->M, K = sp->K;
  Value **args = calloc((size_t)(N + M + 1), sizeof *args), **res = calloc((size_t)(N + K + 1), sizeof *res);
  Value **scans = calloc((size_t)(K * len + 1), sizeof *scans);
  IR_ASSERT(args && res && scans);
  for (int i = 0; i < N; i++)
    args[i] = st[i];
  bool ok = true;
  for (int64_t t = 0; ok && t < len; t++) {
    for (int j = 0; j < M; j++) {
      int64_t idx = sp->in_dir[j] ? len - 1 - t : t;
      Value *in[2] = {xs[j], lower_const_i64(L, arena_printf(L->g->arena, "%s%s_t%lld", n->name, tag, (long long)idx), idx)};
      Node *gn = lower_node(L, n, OP_Gather, arena_printf(L->g->arena, "%s%s_in%d_%lld", n->name, tag, j, (long long)t), 2, in);
      ir_attr_set_int(gn, "axis", sp->in_axis[j]);
      args[N + j] = gn->out[0];
    }
    ok = lower_flush(L, n) &&
         inline_graph(L, body, n, args, res, arena_printf(L->g->arena, "%s_%lld", tag, (long long)t));
    for (int i = 0; ok && i < N; i++)
      args[i] = lower_resolve(L, res[i]);
    for (int j = 0; ok && j < K; j++)
      scans[j * len + t] = res[N + j];
  }
  for (int i = 0; ok && i < N; i++)
    outs[i] = args[i];
  for (int j = 0; ok && j < K; j++) {
    Value *first = lower_resolve(L, scans[j * len]);
    int rank = first->shape.rank;
    int64_t ax = sp->out_axis[j];
    if (rank < 0 || ax < -(rank + 1) || ax > rank) {
      ok = diag_error(L->d, n, "scan output %d: axis %lld is out of range", j, (long long)ax);
      break;
    }
    if (ax < 0)
      ax += rank + 1;
    outs[N + j] = stack(L, n, &scans[j * len], (int)len, ax, sp->out_dir[j] != 0, NULL, j);
    ok = outs[N + j] != NULL;
  }
  free(args);
  free(res);
  free(scans);
  return ok;
}

static bool read_axes(Lower *L, Node *n, const char *name, int count, int64_t *out) {
  int k = 0;
  const int64_t *v = ir_attr_ints(n, name, &k);
  if (v && k != count)
    return diag_error(L->d, n, "attribute '%s' has %d values, expected %d", name, k, count);
  for (int i = 0; i < count; i++)
    out[i] = v ? v[i] : 0;
  return true;
}

static bool lower_scan(Lower *L, Node *n) {
  Graph *body = graph_attr(L, n, "body");
  if (!body)
    return false;
  bool v8 = n->g->opset < 9;
  int first = v8 ? 1 : 0;
  ScanSpec sp;
  sp.M = (int)ir_attr_int(n, "num_scan_inputs", -1);
  sp.N = n->n_in - first - sp.M;
  sp.K = n->n_out - sp.N;
  if (sp.M < 1 || sp.N < 0 || sp.K < 0 || sp.M > 64 || sp.K > 64 ||
      body->n_inputs != sp.N + sp.M || body->n_outputs != sp.N + sp.K)
    return diag_error(L->d, n, "num_scan_inputs, the node's inputs/outputs and the body disagree");
  if (!read_axes(L, n, v8 ? "directions" : "scan_input_directions", sp.M, sp.in_dir) ||
      !read_axes(L, n, "scan_input_axes", sp.M, sp.in_axis) ||
      !read_axes(L, n, "scan_output_axes", sp.K, sp.out_axis) ||
      !read_axes(L, n, "scan_output_directions", sp.K, sp.out_dir))
    return false;
  Value *vals[130], *outs[130];
  for (int i = 0; i < sp.N + sp.M; i++)
    vals[i] = lower_resolve(L, n->in[first + i]);
  if (!v8) {
    if (!scan_core(L, n, body, &sp, vals, vals + sp.N, outs, ""))
      return false;
    for (int i = 0; i < n->n_out; i++)
      lower_forward(L, n->out[i], outs[i]);
    return true;
  }
  /* Opset 8: axis 0 of every input and output is a batch; each batch entry
   * is scanned on its own (along axis 1 of the inputs) and the results stacked. */
  for (int j = 0; j < sp.M; j++)
    sp.in_axis[j] = 0;
  for (int j = 0; j < sp.K; j++)
    sp.out_axis[j] = 0, sp.out_dir[j] = 0;
  int64_t batch = vals[0]->shape.rank > 0 ? vals[0]->shape.d[0] : -1;
  if (batch < 0 || batch > LOWER_MAX_TRIPS)
    return diag_error(L->d, n, "the batch size is not static");
  if (ir_has_input(n, 0)) {
    Value *sl = lower_resolve(L, n->in[0]);
    int64_t len = vals[sp.N]->shape.rank > 1 ? vals[sp.N]->shape.d[1] : -1;
    bool full = sl->kind == VK_CONST;
    for (int64_t b = 0; full && b < sl->konst->numel; b++)
      full = tensor_get_i64(sl->konst, b) == len;
    if (!full)
      return diag_error(L->d, n, "sequence_lens must be constant and equal to the full length");
  }
  int n_res = sp.N + sp.K;
  Value **per = calloc((size_t)(batch * n_res + 1), sizeof *per);
  IR_ASSERT(per);
  bool ok = true;
  for (int64_t b = 0; ok && b < batch; b++) {
    Value *bv[130];
    for (int i = 0; i < sp.N + sp.M; i++) {
      Value *in[2] = {vals[i], lower_const_i64(L, arena_printf(L->g->arena, "%s_b%lld", n->name, (long long)b), b)};
      Node *gn = lower_node(L, n, OP_Gather, arena_printf(L->g->arena, "%s_batch%lld_%d", n->name, (long long)b, i), 2, in);
      ir_attr_set_int(gn, "axis", 0);
      bv[i] = gn->out[0];
    }
    ok = lower_flush(L, n) &&
         scan_core(L, n, body, &sp, bv, bv + sp.N, &per[b * n_res], arena_printf(L->g->arena, "_b%lld", (long long)b));
  }
  Value **col = calloc((size_t)(batch + 1), sizeof *col);
  IR_ASSERT(col);
  for (int i = 0; ok && i < n_res; i++) {
    for (int64_t b = 0; b < batch; b++)
      col[b] = per[b * n_res + i];
    Value *v = stack(L, n, col, (int)batch, 0, false, NULL, i);
    ok = v != NULL;
    if (ok)
      lower_forward(L, n->out[i], v);
  }
  free(col);
  free(per);
  return ok;
}

/* ---- SequenceMap ---------------------------------------------------------- */

static bool lower_sequence_map(Lower *L, Node *n) {
  Graph *body = graph_attr(L, n, "body");
  if (!body)
    return false;
  if (body->n_inputs != n->n_in || body->n_outputs != n->n_out)
    return diag_error(L->d, n, "the body has %d inputs and %d outputs, the node %d and %d",
                      body->n_inputs, body->n_outputs, n->n_in, n->n_out);
  Seq *s0 = lower_seq(L, n->in[0]);
  if (!s0 || s0->opt)
    return diag_error(L->d, n, "input 0 must be a sequence");
  int len = s0->n;
  Value **args = calloc((size_t)n->n_in + 1, sizeof *args), **res = calloc((size_t)n->n_out + 1, sizeof *res);
  Seq **outs = calloc((size_t)n->n_out + 1, sizeof *outs);
  IR_ASSERT(args && res && outs);
  for (int j = 0; j < n->n_out; j++)
    outs[j] = lower_seq_new(L, len, false);
  bool ok = true;
  for (int k = 0; ok && k < len; k++) {
    for (int i = 0; ok && i < n->n_in; i++) {
      Seq *s = lower_seq(L, n->in[i]);
      if (s && (s->opt || s->n != len))
        ok = diag_error(L->d, n, "input %d is a sequence of another length than input 0", i);
      args[i] = s ? s->v[k] : lower_resolve(L, n->in[i]);
    }
    ok = ok && inline_graph(L, body, n, args, res, arena_printf(L->g->arena, "_%d", k));
    for (int j = 0; ok && j < n->n_out; j++)
      outs[j]->v[k] = lower_resolve(L, res[j]);
  }
  for (int j = 0; ok && j < n->n_out; j++)
    lower_seq_set(L, n->out[j], outs[j]);
  free(args);
  free(res);
  free(outs);
  return ok;
}

/* ---- the walk -------------------------------------------------------------- */

static bool is_control(OpKind op) {
  return op == OP_If || op == OP_Loop || op == OP_Scan || op == OP_SequenceMap || lower_is_sequence_op(op);
}

static bool lower_one(Lower *L, Node *n) {
  switch (n->op) {
  case OP_If: return lower_if(L, n);
  case OP_Loop: return lower_loop(L, n);
  case OP_Scan: return lower_scan(L, n);
  case OP_SequenceMap: return lower_sequence_map(L, n);
  case OP_FlexAttention: return lower_flex(L, n);
  default: return lower_sequence_node(L, n);
  }
}

/* check-ops checked the subgraphs' nodes too; they are checked again as they
 * are copied out, for a caller that runs this pass without check-ops (the
 * unit tests, a graph built through the API): an error, not a crash. */
bool lower_walk(Lower *L, Node *from, Node *stop) {
  bool ok = true;
  for (Node *n = from, *next; n && n != stop; n = next) {
    next = n->next;
    grow_nodes(L);
    if (L->done[n->id])
      continue;
    L->done[n->id] = 1;
    if (!check_op_node(n, L->d)) {
      ok = false;
      continue;
    }
    bool seq_in = false;
    for (int i = 0; i < n->n_in; i++)
      seq_in |= lower_seq(L, n->in[i]) != NULL;
    if (is_control(n->op) || lower_flex_wanted(n) || (n->op == OP_Identity && seq_in)) {
      L->lowered[n->id] = 1;
      if (!lower_one(L, n))
        return false;   /* later nodes would only repeat the error */
      continue;
    }
    if (seq_in) {
      ok = diag_error(L->d, n, "a sequence or optional value reaches an operator that takes tensors");
      continue;
    }
    if (!infer_node(n, L->d)) {
      ok = false;
      continue;
    }
    bool folded = false;
    if (!fold_node(n, &folded, L->d))
      ok = false;
  }
  return ok;
}

bool lower_flush(Lower *L, Node *n) {
  grow_nodes(L);
  Node *first = n;
  while (first->prev && !L->done[first->prev->id])
    first = first->prev;
  return lower_walk(L, first, n);
}

/* ---- the pass -------------------------------------------------------------- */

static bool needs_lowering(const Graph *g) {
  for (const Node *n = g->first; n; n = n->next)
    if (is_control(n->op) || lower_flex_wanted(n))
      return true;
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i]->vt != VT_TENSOR)
      return true;
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i]->vt != VT_TENSOR)
      return true;
  return false;
}

bool pass_lower_control(Graph *g, Diag *d) {
  if (!needs_lowering(g))
    return true;
  if (!pass_expand_inputs(g, NULL, 0, d))
    return false;
  Lower L = {g, d, NULL, NULL, 0, NULL, NULL, 0, LOWER_MAX_NODES};
  grow_values(&L);
  grow_nodes(&L);
  bool ok = lower_walk(&L, g->first, NULL) && lower_outputs(&L);
  /* Remove the lowered nodes, consumers first. */
  for (Node *n = g->last, *prev; ok && n; n = prev) {
    prev = n->prev;
    if (n->id >= L.cap_n || !L.lowered[n->id])
      continue;
    for (int i = 0; i < n->n_out && ok; i++) {
      Value *v = n->out[i];
      if (v->kind != VK_NONE && v->n_uses > 0)
        ok = diag_error(d, v->uses[0], "input '%s' is a sequence or optional, which this operator "
                        "does not take", v->name);
      if (v->kind != VK_NONE && v->is_output)
        ok = diag_error(d, n, "output '%s' could not be lowered", v->name);
    }
    if (ok)
      ir_node_remove(n);
  }
  free(L.seq);
  free(L.repl);
  free(L.done);
  free(L.lowered);
  return ok;
}

/* ---- hooks of the table rows: never reached after lowering --------------- */

static bool not_lowered(Node *n, Diag *d) {
  return diag_error(d, n, "control flow and sequences must be lowered before inference");
}

#define CF_HOOK(name) \
  bool infer_##name(Node *n, Diag *d) { return not_lowered(n, d); }
CF_HOOK(If)
CF_HOOK(Loop)
CF_HOOK(Scan)
CF_HOOK(SequenceConstruct)
CF_HOOK(SequenceEmpty)
CF_HOOK(SequenceAt)
CF_HOOK(SequenceInsert)
CF_HOOK(SequenceErase)
CF_HOOK(SequenceLength)
CF_HOOK(SplitToSequence)
CF_HOOK(ConcatFromSequence)
CF_HOOK(SequenceMap)
CF_HOOK(Optional)
CF_HOOK(OptionalHasElement)
CF_HOOK(OptionalGetElement)

/* BranchGuard (made by lower_if above): Y has X's type; cond is one bool. */
bool infer_BranchGuard(Node *n, Diag *d) {
  const Value *x = n->in[0], *c = n->in[1];
  int64_t numel = 0;
  if (c->dt != DT_BOOL || !shape_numel(&c->shape, &numel) || numel != 1)
    return diag_error(d, n, "input 1 must be one bool");
  infer_set(n, 0, x->dt, &x->shape);
  return true;
}
