/* passes.h - the middle-end: every pass and the pipeline that runs them.
 *
 * A pass is `bool pass_x(Graph *, Diag *)`: it returns false only after
 * reporting at least one error to the Diag. Each pass file opens with its
 * contract (requires / provides / invalidates).
 */
#ifndef ONNXC_PASSES_H
#define ONNXC_PASSES_H

#include "ir.h"

/* A symbolic dimension pinned on the command line: -D NAME=VALUE fixes it;
 * -D NAME=LO..HI or -D NAME<=HI (LO 1) keeps it symbolic within the range
 * (docs/dynamic-shapes.md). */
typedef struct DimPin {
  const char *name;
  int64_t value;               /* fixed value; the upper bound of a range */
  bool range;
  int64_t lo;                  /* range only */
  int64_t step;                /* range only: LO..HI:STEP, multiples of STEP (0: 1) */
} DimPin;
/* Parses "NAME=V", "NAME=LO..HI", "NAME=LO..HI:STEP" or "NAME<=HI" into *out (name malloc'ed);
 * false with why in err. */
bool dim_pin_parse(const char *spec, DimPin *out, char *err, size_t n_err);

/* A graph input's whole shape given on the command line (--shape NAME=1x3x48x192):
 * for inputs whose dims are unnamed or share a name, where -D cannot reach. */
typedef struct InputShape {
  const char *name;            /* heap copy, owned by the caller */
  int rank;
  int64_t d[IR_MAX_RANK];      /* -1 where the extent is a name */
  char sym[IR_MAX_RANK][32];   /* that name (--shape x=1x3x48xW, then -D W=16..1024), else "" */
} InputShape;
/* Parses "NAME=AxBxC" (extents >= 1, element count within int64; an extent
 * may instead be a dim name, letters, digits and '_' without 'x', which -D
 * then fixes or bounds). On failure writes why into err and returns false;
 * on success out->name is malloc'ed. */
bool input_shape_parse(const char *spec, InputShape *out, char *err, size_t n_err);

typedef struct PipelineOpts {
  int opt_level;               /* 0..3 */
  const DimPin *pins;
  int n_pins;
  const char *dump_after;      /* pass name, "all", or NULL */
  FILE *dump_to;               /* where dumps go (stderr when NULL) */
  bool verify;                 /* run ir_verify between passes */
  const Target *target;        /* what the kernels fuse and the scratch they need (required) */
  const InputShape *shapes;    /* --shape NAME=...: applied by pin-dims before the -D pins */
  int n_shapes;
  bool guard;                  /* plan red zones around every buffer (docs/guard.md) */
  int precision;               /* 1 bf16, 2 fp16: Conv/Gemm/MatMul products in that type (pass_mark_precision) */
  int layout;                  /* --layout: 0 auto (by cost where the target blocks), 1 nchw, 2 nchw16c */
  /* called before each pass (its name, index and the count), when set */
  void (*progress)(void *user, const char *pass, int index, int count);
  void *progress_user;
} PipelineOpts;

/* Runs the whole middle-end and fills *plan. */
bool passes_run(Graph *g, const PipelineOpts *o, Plan *plan, Diag *d);
/* Names of the pipeline's passes, NULL-terminated (for --dump-ir-after). */
extern const char *const passes_names[];

bool pass_check_ops(Graph *g, Diag *d);       /* every node known, arity right */
bool check_op_node(const Node *n, Diag *d);   /* the same for one node (control-flow bodies) */
/* Control flow (If, Loop, Scan, SequenceMap), sequences and optionals
 * lowered to plain dataflow, inferring as it goes (lower_control.c). */
bool pass_lower_control(Graph *g, Diag *d);
/* Element count of a sequence or optional graph input: n tensors, or -1 for
 * an empty optional (--elements NAME=N; onnxc check reads it from the data). */
typedef struct SeqLen {
  const char *name;
  int64_t n;
} SeqLen;
/* Replaces each sequence / optional graph input by one tensor input per
 * element (named NAME_0, NAME_1, ... in place of NAME). Optionals default to
 * present; a sequence without a length is an error (lower_sequence.c). */
bool pass_expand_inputs(Graph *g, const SeqLen *lens, int n_lens, Diag *d);
bool pass_canonicalize(Graph *g, Diag *d);    /* old opset forms -> current forms */
bool pass_pin_dims(Graph *g, const DimPin *pins, int n_pins, Diag *d);
/* Sets each named graph input's shape (--shape); an error for an unknown input
 * (the inputs are listed), a rank that differs, an extent that contradicts a
 * static dim of the model or a -D pin of the dim's name. Runs before
 * pass_pin_dims in the pin-dims step (shapes_static.c). */
bool pass_pin_shapes(Graph *g, const InputShape *shapes, int n_shapes, const DimPin *pins, int n_pins,
                     Diag *d);
bool pass_infer(Graph *g, Diag *d);           /* dtypes and shapes of every value */
bool pass_lower_gradient(Graph *g, Diag *d);  /* Gradient -> its derivative's nodes */
bool pass_fold(Graph *g, Diag *d);            /* constant folding */
bool pass_simplify(Graph *g, Diag *d);        /* algebraic identities (simplify.c) */
/* QDQ groups -> uint8 integer kernels (fuse_quant.c); split: the conv GEMM's
 * weights safe for 16-bit pair sums plus a residual (Target.int8_pairs16); lanes: a
 * conv may take the transposed weight layout (Target.int8_lanes) */
bool pass_fuse_quant(Graph *g, bool split, bool lanes, Diag *d);
/* MatMulInteger by a constant B (and quantize_dynamic's Cast/Mul/Add after it)
 * -> QIntMatMul, ConvInteger -> QIntConvInteger, the int8 lanes kernels, where
 * the target has AVX-512 VNNI (vnni512: Target.int8_vnni512); and a Gather of
 * a dequantized constant table gathers first (fuse_qmatmul.c). */
bool pass_fuse_qmatmul(Graph *g, bool vnni512, Diag *d);
bool pass_lower_convt(Graph *g, Diag *d);     /* ConvTranspose as a Conv per output phase */
bool pass_fuse_bn(Graph *g, Diag *d);         /* BN, Mul, Add... folded into Conv/Gemm */
bool pass_fuse_layout(Graph *g, Diag *d);      /* Transposes around batched MatMuls read/written in place */
/* The channel-blocked layout between convolution-like ops (layout.c,
 * docs/layout.md): lanes = Target.blocked_lanes (16, or 0: off); mode 0 by
 * cost, 1 never, 2 every region with a conv (--layout nchw16c). */
bool pass_layout_blocked(Graph *g, int lanes, int mode, Diag *d);
bool pass_fuse_siblings(Graph *g, Diag *d);    /* sibling Convs on one input as one Conv and a Split */
bool pass_rnn_project(Graph *g, Diag *d);      /* RNN/GRU/LSTM input products over every step as one MatMul */
bool pass_rnn_transpose_r(Graph *g, Diag *d);  /* small hidden sizes: R^T in R's slot, onnxc.rt */
int rnn_gates(const Node *n);                  /* gates of RNN (1), GRU (3), LSTM (4); infer_rnn.c */
bool pass_fuse_norm(Graph *g, Diag *d);        /* LayerNorm written as primitives into LayerNormalization */
/* elementwise chains into FusedElementwise kernels; with `epilogue`, a float32
 * chain of a Conv/Gemm/MatMul output and constant scalars into that node's stores */
bool pass_fuse_elementwise(Graph *g, bool epilogue, Diag *d);
bool pass_fuse_epilogue(Graph *g, Diag *d, bool residual); /* Relu/Clip/LeakyRelu, bias, residual Add into Conv/Gemm/MatMul */
bool pass_cse(Graph *g, Diag *d);             /* identical constants and nodes merged */
bool pass_dce(Graph *g, Diag *d);             /* dead nodes and unused optional outputs */
bool pass_require_static(Graph *g, Diag *d);  /* codegen needs static shapes */
/* Reorders the schedule to lower the planned arena; keeps the model's order
 * unless another topological order plans smaller (schedule.c). Sets
 * *model_order_bound (when not NULL) to the lower bound of the model's order. */
bool pass_schedule(Graph *g, const Target *t, int64_t *model_order_bound, Diag *d);
/* Kernel scratch is sized by the target's hook; a NULL target plans tensors only. */
bool pass_memplan(Graph *g, Plan *plan, const Target *target, Diag *d);
/* --precision bf16 (1) or fp16 (2): marks each float32 Conv, Gemm and MatMul (with a
 * finite weight) `onnxc.precision` = precision; the packed-GEMM emitters
 * read it (before memplan, which sizes their scratch). 0: no change.
 * passes/precision.c, docs/precision.md. */
void pass_mark_precision(Graph *g, int precision);
/* A float16 model computed in float32 between its float16 boundaries (as
 * ONNX Runtime's CPU provider runs it): float16 constants widened at compile
 * time, a Cast where a float16 value enters the float32 region and where a
 * result leaves it (graph outputs, nodes kept in float16, explicit Casts to
 * float16 keep rounding). passes/precision.c, docs/precision.md. */
bool pass_f16_compute(Graph *g, Diag *d);
/* The same plan with `redzone` bytes (a multiple of PLAN_ALIGN) fenced off
 * before and after every buffer, for guard mode (Plan.redzone, docs/guard.md);
 * redzone 0 is pass_memplan. */
bool pass_memplan_guarded(Graph *g, Plan *plan, const Target *target, int64_t redzone, Diag *d);
/* Checks a plan: alignment, bounds, that no two buffers whose lifetimes
 * overlap share bytes, that every value used has storage live at the steps
 * that use it, and arena >= lower bound. Reports every violation. */
bool plan_validate(const Graph *g, const Plan *plan, Diag *d);
/* String ops (infer_string.c): --string-bytes applied to every node of g that
 * makes strings (its kernel's character buffer, codegen/emit_string.c). */
void infer_string_capacity(Graph *g, int64_t bytes);
/* FlexAttention's checks and output type, its modifier subgraphs aside
 * (infer_attention.c; lower_flex.c lowers those before inference). */
bool flex_attention_check(Node *n, Diag *d);

/* Inference of one node (used by pass_infer and by passes that create nodes). */
bool infer_node(Node *n, Diag *d);
/* Folds one node whose inputs are all constant; *done false when the op has no folder. */
bool fold_node(Node *n, bool *done, Diag *d);
/* v is a weight that only products read (the B of MatMul / Gemm, the W of
 * Conv): its bytes are read from the library on every run whether computed
 * at compile time or at run time, so it folds up to FOLD_WEIGHT_MAX_BYTES
 * (1 GB) where other results stop at 64 MB, as ONNX Runtime folds it when
 * the session is made. The ONNX suite's light AlexNet, ZFNet-512 and VGG-19
 * make their 151-411 MB first dense weight with a ConstantOfShape: filled on
 * every run, it took 38-42% of their time. */
#define FOLD_WEIGHT_MAX_BYTES ((int64_t)1 << 30)
bool fold_weight_only(const Value *v);
/* Folder of the data-movement family (fold_movement.c: Slice, Pad, Expand,
 * Tile, Split, ConstantOfShape, Range, Size): 1 folded, 0 left to run time,
 * -1 after a diag error. */
int fold_movement(Node *n, Diag *d);

/* ---- per-op hooks, declared from the table ---------------------------------- */
#define OP(name, ...) bool infer_##name(Node *n, Diag *d);
#define EW(name, ...)
#include "ops.def"
#undef OP
#undef EW
bool infer_elementwise(Node *n, Diag *d);

/* ---- helpers shared by inference hooks (infer_util.c) ----------------------- */

/* Sets output i's dtype and shape. */
void infer_set(Node *n, int i, DType dt, const Shape *s);
/* infer_symbolic.c: with range symbols, infers the ops whose shape operand
 * holds extents (*handled), and records the extents n's output holds. */
bool infer_symbolic(Node *n, bool *handled, Diag *d);
void infer_sym_values(Node *n);
/* Reads a 1-D integer constant input (e.g. Reshape's shape) into dims;
 * false (no error) when the input is not constant. */
bool infer_const_ints(const Node *n, int i, int64_t *dims, int *count, int max);
/* Reads INTS attribute `name` of exactly `want` entries, each >= min, into
 * out; fills `dflt` when the attribute is absent. Reports and returns false
 * on a wrong kind, count or value. */
bool infer_attr_ints(const Node *n, Diag *d, const char *name, int want, int64_t min, int64_t dflt,
                     int64_t *out);
/* Errors with node context: infer_fail reports and is false, for tail calls.
 * A macro so that the false is visible where it is used: gcc -O3 then knows
 * that an out-parameter a failing helper leaves unset is never read. */
void infer_report(Diag *d, const Node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define infer_fail(d, n, ...) (infer_report((d), (n), __VA_ARGS__), false)
/* A shape of `rank` unknown dims (no symbols). */
Shape infer_unknown_dims(int rank);
/* Copies dim i of a into dim j of b (static extent or symbol). */
void infer_copy_dim(Shape *b, int j, const Shape *a, int i);
/* Reduce* nodes (infer_reduce.c): mask[i] is set for each reduced axis of an
 * input of rank `rank`; *noop when the node is the identity (empty axes with
 * noop_with_empty_axes). False when the axes are not constant or invalid. */
bool infer_reduce_axes(const Node *n, int rank, bool *mask, bool *noop);
/* Output shape of a Conv-like node over data x and weight w, both static rank
 * >= 3 (infer_conv.c; used by QLinearConv and ConvInteger). */
bool infer_conv_window_shape(const Node *n, Diag *d, const Shape *x, const Shape *w, Shape *out);

/* ai.onnx.ml (infer_ml_linear.c): a FLOATS attribute (NULL, *count 0 when
 * absent); post_transform as its code 0 NONE, 1 SOFTMAX, 2 LOGISTIC,
 * 3 SOFTMAX_ZERO (PROBIT and unknown names are reported). */
const float *ml_attr_floats(const Node *n, const char *name, int *count);
bool ml_post_transform(Node *n, Diag *d, int *code);
/* A classifier with classlabels_strings: an error naming the integer attribute to use instead. */
bool ml_no_string_labels(Node *n, Diag *d, const char *ints_attr);

/* ---- helpers of the rewriting passes (rewrite.c) ---------------------------- */

/* Values of a graph that a subgraph reads by name (a capture records no use):
 * rewrites must neither replace them nor drop their producers. */
typedef struct Captured {
  bool *by_id;   /* NULL when the graph has no subgraph */
  int n;
} Captured;
Captured rewrite_captured(Graph *g);
bool rewrite_is_captured(const Captured *c, const Value *v);
/* Both shapes known and equal dim by dim (symbolic dims by name). */
bool rewrite_same_shape(const Shape *a, const Shape *b);
/* Records on `into` (attribute onnxc.fused, "OpType name" per entry) that it
 * now computes ONNX node `from` too, and whatever `from` had absorbed; an
 * internal node (FusedElementwise) passes on its list only. The fusion
 * report (--fusion-report) lists them per kernel. */
void rewrite_record_fused(Node *into, const Node *from);
/* Points the users of n's first output at v and removes n (its other outputs
 * must be unused). */
void rewrite_forward(Node *n, Value *v);
/* n was made by the compiler in an ONNX node's place and took its name (a
 * MatMul + Add become a Gemm): its onnxc.fused record names that node. */
bool rewrite_stands_in(const Node *n);
/* A new 1-D i64 constant (a Reshape shape, axes). */
Value *rewrite_const_i64(Graph *g, const char *name, const int64_t *v, int count);

/* ---- canonical forms (canonicalize.c), also applied late by inference ------- */

/* Gives a Clip node its canonical three inputs: attribute bounds (opset < 11)
 * and absent bounds become scalar constants (absent: the type's extremes) of
 * input 0's type. Before that type is known they are f64 placeholders, which a
 * later call (from inference) converts. Scalar constant bounds of another type
 * are converted too. False after a diag error. */
bool canon_clip(Node *n, Diag *d);

#endif
