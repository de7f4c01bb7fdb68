/* lower_internal.h - state shared by the control-flow lowering files
 * (lower_control.c: the walk, If/Loop/Scan/SequenceMap, subgraph inlining;
 * lower_sequence.c: sequence and optional ops, graph inputs and outputs;
 * lower_flex.c: FlexAttention with modifier subgraphs).
 */
#ifndef ONNXC_LOWER_INTERNAL_H
#define ONNXC_LOWER_INTERNAL_H

#include "passes.h"

/* A sequence or optional value known at compile time: its elements. An
 * optional (opt) has 0 (empty) or 1 element, which may itself be a sequence. */
typedef struct Seq {
  int n;
  Value **v;
  bool opt;
} Seq;

/* Limits of unrolling: beyond them the pass reports an error rather than
 * generating code whose size grows without bound. */
#define LOWER_MAX_TRIPS 4096
#define LOWER_MAX_NODES 200000

typedef struct Lower {
  Graph *g;
  Diag *d;
  Seq **seq;        /* by value id: the elements of a sequence/optional value */
  Value **repl;     /* by value id: what a lowered node's output became */
  int cap_v;
  char *done;       /* by node id: inferred (or lowered) by the walk */
  char *lowered;    /* by node id: a control/sequence node to remove at the end */
  int cap_n;
  long budget;      /* nodes the unrolling may still create */
} Lower;

/* ---- lower_control.c ---- */

/* Infers, folds and lowers the nodes from `from` up to `stop` (exclusive). */
bool lower_walk(Lower *L, Node *from, Node *stop);
/* Processes the nodes inserted just before n that the walk has not seen. */
bool lower_flush(Lower *L, Node *n);
/* A new node of the default domain inserted before pos. */
Node *lower_node(Lower *L, Node *pos, OpKind op, const char *name, int n_in, Value *const *in);
Value *lower_resolve(Lower *L, Value *v);
/* The output `from` of a lowered node is `to` from now on. */
void lower_forward(Lower *L, Value *from, Value *to);
Seq *lower_seq(Lower *L, Value *v);
void lower_seq_set(Lower *L, Value *v, Seq *s);
Seq *lower_seq_new(Lower *L, int n, bool opt);
/* Scalar constants. */
Value *lower_const_i64(Lower *L, const char *name, int64_t v);
Value *lower_const_bool(Lower *L, const char *name, bool v);
/* A constant with exactly one integer or bool element. */
bool lower_const_scalar(Value *v, int64_t *out);

/* Inlines subgraph sub before pos, its inputs bound to args; res receives
 * the values of its outputs (the nodes are inferred and folded). */
bool lower_inline(Lower *L, Graph *sub, Node *pos, Value *const *args, Value **res, const char *suffix);

/* ---- lower_flex.c ---- */

/* A FlexAttention node with score_mod or prob_mod, which lower_flex replaces
 * by MatMul / Softmax dataflow with the subgraphs inlined. */
bool lower_flex_wanted(const Node *n);
bool lower_flex(Lower *L, Node *n);

/* ---- lower_sequence.c ---- */

bool lower_is_sequence_op(OpKind op);
bool lower_sequence_node(Lower *L, Node *n);
/* Replaces sequence / optional graph outputs by their tensors. */
bool lower_outputs(Lower *L);

#endif
