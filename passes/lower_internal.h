/* lower_internal.h - state shared by the control-flow lowering files
 * (lower_control.c: the walk, If/Loop/Scan/SequenceMap, subgraph inlining;
 * lower_sequence.c: sequence and optional ops, graph inputs and outputs).
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

/* ---- lower_sequence.c ---- */

bool lower_is_sequence_op(OpKind op);
bool lower_sequence_node(Lower *L, Node *n);
/* Replaces sequence / optional graph outputs by their tensors. */
bool lower_outputs(Lower *L);

#endif
