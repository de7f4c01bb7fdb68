/* ir.h - the whole IR of onnxc in one header.
 *
 * A Graph is an SSA dataflow graph: every Value has exactly one producer (a
 * Node, a graph input, or a constant) and a list of consuming nodes. One Arena
 * per graph owns everything reachable from it; ir_graph_free releases it all.
 * Nodes and values carry dense ids so passes keep side tables as plain arrays.
 * The sections below follow the files that implement them.
 */
#ifndef ONNXC_IR_H
#define ONNXC_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ONNXC_VERSION "0.1.0"

typedef struct Arena Arena;
typedef struct Diag Diag;
typedef struct Buf Buf;
typedef struct Shape Shape;
typedef struct Tensor Tensor;
typedef struct Attr Attr;
typedef struct Value Value;
typedef struct Node Node;
typedef struct Graph Graph;
typedef struct Plan Plan;

/* ---- arena.c: bump allocator, freed in one call ---------------------------- */

Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n);           /* zeroed, 16-byte aligned */
void *arena_dup(Arena *a, const void *p, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
size_t arena_bytes(const Arena *a);              /* bytes handed out so far */

/* Always-on internal invariant: aborts with file:line. Never for user input. */
#define IR_ASSERT(c) ((c) ? (void)0 : ir_die(__FILE__, __LINE__, #c))
_Noreturn void ir_die(const char *file, int line, const char *what);

/* ---- buf.c: growable string builder (heap, owned by the caller) ------------- */

struct Buf {
  char *s;
  size_t len, cap;
};
void buf_init(Buf *b);
void buf_free(Buf *b);
void buf_putc(Buf *b, char c);
void buf_puts(Buf *b, const char *s);
void buf_write(Buf *b, const void *p, size_t n);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(Buf *b, const char *fmt, va_list ap);

/* ---- diag.c: user-facing errors, collected and counted ----------------------
 * Messages read `FILE: node 'NAME' (OP): message`. The library never exits;
 * tools/ decides what to do with a failed Diag. */

struct Diag {
  const char *file;     /* model path used as message prefix */
  FILE *echo;           /* when set, each message is also written here */
  int n_errors, n_warnings;
  char **msgs;          /* every message, heap-owned */
  int n_msgs, cap_msgs;
};
void diag_init(Diag *d, const char *file, FILE *echo);
void diag_free(Diag *d);
/* n may be NULL for errors not tied to a node. Returns false for `return diag_error(...)`. */
bool diag_error(Diag *d, const Node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_warn(Diag *d, const Node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *diag_last(const Diag *d);
/* Appends from's messages and counts to `to` (echoing them there) and empties
 * from: a pass that tries something on a private Diag keeps what it decides to. */
void diag_move(Diag *to, Diag *from);

/* ---- dtype.c: element types (values are ONNX TensorProto.DataType codes) ---- */

typedef enum DType {
#define DT(name, id, bits, ctype, sname) DT_##name = id,
#include "dtypes.def"
#undef DT
  DT_COUNT_
} DType;

bool dtype_valid(int code);
int dtype_bits(DType t);
const char *dtype_name(DType t);       /* "f32" */
const char *dtype_ctype(DType t);      /* "float"; "" when generated code has none */
bool dtype_from_name(const char *s, DType *out);
bool dtype_is_float(DType t);          /* f16 bf16 f32 f64 and the f8/f4 types */
bool dtype_is_int(DType t);            /* signed or unsigned integer, not bool */
bool dtype_is_signed(DType t);
/* Bytes for n elements (sub-byte types round up); false on overflow. */
bool dtype_bytes(DType t, int64_t n, int64_t *out);

/* ---- shape.c: static or symbolic extents ----------------------------------- */

#define IR_MAX_RANK 16
#define DIM_UNKNOWN (-1)

typedef struct DimExpr DimExpr;

/* rank < 0: unknown rank. d[i] >= 0: static extent; d[i] == DIM_UNKNOWN: dynamic,
 * named by sym[i] when the model gave a dim_param (else NULL). A dynamic dim
 * with x[i] set is bounded: a polynomial in the graph's range symbols (-D
 * NAME=LO..HI, dimexpr.c), known at run time; sym[i] then prints it. */
struct Shape {
  int rank;
  int64_t d[IR_MAX_RANK];
  const char *sym[IR_MAX_RANK];
  const DimExpr *x[IR_MAX_RANK];
};

Shape shape_unknown(void);
Shape shape_scalar(void);
Shape shape_make(int rank, const int64_t *dims);
bool shape_is_static(const Shape *s);
bool shape_equal(const Shape *a, const Shape *b);
/* Element count of a static shape; false when not static or on overflow. */
bool shape_numel(const Shape *s, int64_t *out);
/* Numpy broadcast of a and b into out; false when incompatible. */
bool shape_broadcast(const Shape *a, const Shape *b, Shape *out);
/* "[1,3,N,224]" into buf (always terminated). */
const char *shape_str(const Shape *s, char *buf, size_t n);
/* Normalizes a possibly negative axis; false when out of [-rank, rank). */
bool shape_axis(int64_t axis, int rank, int *out);

/* ---- dimexpr.c: bounded symbolic extents (docs/dynamic-shapes.md) ------------
 * A DimExpr is a polynomial with integer coefficients over range symbols
 * (Graph.syms: -D seq=1..512), kept canonical (terms sorted, like terms
 * merged, no zero coefficient) so equal extents compare equal structurally.
 * Every non-constant coefficient is positive, so an extent grows with each
 * symbol and its bounds are its values at the symbols' bounds: memory planned
 * at the upper bounds covers the whole range. Values are immutable, allocated
 * in a graph arena; NULL results mean "not representable" (too many terms,
 * overflow, a negative slope, an inexact division). */

#define DX_MAX_TERMS 8
#define DX_MAX_DEG 4
#define IR_MAX_SYMS 16

typedef struct DimTerm {
  int64_t c;               /* coefficient, never 0 */
  int deg;                 /* number of symbol factors; 0 for the constant term */
  int s[DX_MAX_DEG];       /* symbol ids, ascending */
} DimTerm;

struct DimExpr {
  int n;                   /* terms, ascending by (deg, s); the constant term first */
  DimTerm t[DX_MAX_TERMS];
};

typedef struct DimSym {
  const char *name;
  int64_t lo, hi;          /* inclusive range, 0 <= lo <= hi */
  /* den > 0: a derived symbol, floor(num / den) of earlier symbols (a strided
   * window's output extent); the generated code computes it from the
   * caller's dims. den == 0: a range the user gave (-D), first in syms[]. */
  const DimExpr *num;
  int64_t den;
  /* den < 0: a data-dependent extent (NonZero, NonMaxSuppression, Unique...)
   * flowing onward: dim src_axis of value src_value, which its kernel reports
   * at run time. Bounds 0..the value's static upper bound. */
  int src_value, src_axis;
  /* den == 0 with step > 1: -D NAME=LO..HI:STEP, the user's dim takes only
   * multiples of step; the symbol is the dim / step (lo, hi in those units),
   * each use of the dim the expression step * symbol, printed "(NAME/STEP)". */
  int64_t step;
} DimSym;

const DimExpr *dx_const(Arena *a, int64_t v);
const DimExpr *dx_sym(Arena *a, int id);
const DimExpr *dx_add(Arena *a, const DimExpr *x, const DimExpr *y);
const DimExpr *dx_sub(Arena *a, const DimExpr *x, const DimExpr *y);
const DimExpr *dx_mul(Arena *a, const DimExpr *x, const DimExpr *y);
/* x / k when k divides every coefficient; NULL otherwise. */
const DimExpr *dx_div_exact(Arena *a, const DimExpr *x, int64_t k);
bool dx_is_const(const DimExpr *x, int64_t *v);
/* floor(x / k) for x >= 0 over the ranges: a polynomial when k divides it,
 * else a derived symbol of g's root (one per distinct x, k); NULL when x can
 * be negative or the symbols run out. */
const DimExpr *dx_floordiv(Graph *g, const DimExpr *x, int64_t k);
/* Range symbols the user gave (-D), which come first in Graph.syms. */
int dx_user_syms(const Graph *g);
/* The dims of v whose extent the caller learns at run time (bit i: dim i):
 * Value.dyn_dims, and for a graph output the dims that depend on a
 * data-dependent symbol. */
uint32_t value_dyn_mask(const Value *v);
bool dx_equal(const DimExpr *x, const DimExpr *y);
/* Value at the given symbol values (indexed by id); false on overflow. */
bool dx_eval(const DimExpr *x, const int64_t *vals, int64_t *out);
/* Least and greatest value over the graph's symbol ranges; false when a
 * slope is negative or a bound overflows. */
bool dx_bounds(const Graph *g, const DimExpr *x, int64_t *lo, int64_t *hi);
/* "seq*128+1" with the graph's symbol names (c_dims == NULL), or a C
 * expression over the array c_dims ("((int64_t)128*dims[0]+1)"). */
void dx_print(const Graph *g, const DimExpr *x, const char *c_dims, Buf *out);
/* A shape's dim as an expression: x[i], or the constant d[i]; NULL when the
 * dim is unknown (or unbounded). */
const DimExpr *shape_dx(Arena *a, const Shape *s, int i);
/* Sets dim i to e: static when e is constant, bounded otherwise (sym[i] gets
 * the printed form). */
void shape_set_dx(const Graph *g, Shape *s, int i, const DimExpr *e);
/* Every dim static or bounded. */
bool shape_is_bounded(const Shape *s);
/* Element count at the symbols' upper bounds (static shapes: the count). */
bool shape_numel_max(const Graph *g, const Shape *s, int64_t *out);
/* Elements v's buffer holds: its shape's (upper bound) element count, with
 * the channels rounded up to the block when v is blocked. */
bool ir_storage_numel(const Value *v, int64_t *out);
/* The begin and end pads pb[i], pe[i] of n's r spatial dims for a window of
 * extents k, strides s and dilations d from extents in to out: auto_pad
 * SAME_UPPER / SAME_LOWER (the odd unit at the end / the start), VALID
 * (none), else the `pads` attribute (zeros when absent or not 2r long).
 * Convs, pools, the layout pass and both targets' kernels read it. */
void ir_window_pads(const Node *n, int r, const int64_t *in, const int64_t *out, const int64_t *k,
                    const int64_t *s, const int64_t *d, int64_t *pb, int64_t *pe);

/* ---- tensor.c: constant data owned by the graph arena ----------------------- */

struct Tensor {
  DType dt;
  Shape shape;          /* always static */
  int64_t numel;
  int64_t nbytes;
  void *data;           /* numel elements; for DT_STRING an array of char * */
};

/* Zero-filled tensor; NULL with a diag error when the size overflows. */
Tensor *ir_tensor_new(Graph *g, DType dt, const Shape *s, Diag *d);
/* Element i converted to double / int64 (numeric types, f16/bf16 included). */
double tensor_get_f64(const Tensor *t, int64_t i);
int64_t tensor_get_i64(const Tensor *t, int64_t i);
void tensor_set_f64(Tensor *t, int64_t i, double v);
void tensor_set_i64(Tensor *t, int64_t i, int64_t v);
float ir_f16_to_f32(uint16_t h);
uint16_t ir_f32_to_f16(float f);
float ir_bf16_to_f32(uint16_t h);
uint16_t ir_f32_to_bf16(float f);

/* ---- graph.c: values, nodes, attributes, graphs ---------------------------- */

typedef enum OpKind {
  OP_Unknown_ = 0,       /* op not in the table; Node.op_type keeps its name */
#define OP(name, ...) OP_##name,
#define EW(name, ...) OP_##name,
#include "ops.def"
#undef OP
#undef EW
  OP_COUNT_
} OpKind;

typedef enum OpFlags {
  OPF_BCAST     = 1 << 0,  /* numpy broadcasting of inputs */
  OPF_COMM      = 1 << 1,  /* commutative in its first two inputs */
  OPF_INPLACE   = 1 << 2,  /* may write its output over a dying first input */
  OPF_VIEW      = 1 << 3,  /* output is its first input reinterpreted (no copy needed) */
  OPF_FLOATONLY = 1 << 4,  /* defined for floating-point types only */
  OPF_BOOLOUT   = 1 << 5,  /* elementwise result is bool */
  OPF_EW        = 1 << 6,  /* elementwise row (set by the table, not by rows) */
  /* The row's operator belongs to another ONNX domain than the default one
   * (ir_op_lookup_in matches it only there; see ops.def). */
  OPF_DOMAIN_ML       = 1 << 7,  /* ai.onnx.ml */
  OPF_DOMAIN_TRAINING = 1 << 8,  /* ai.onnx.preview.training */
  OPF_DOMAIN_PREVIEW  = 1 << 9,  /* ai.onnx.preview (FlexAttention) */
  /* Made by the compiler (BranchGuard), in the domain "onnxc" that the IR
   * printer and reader round-trip; no exporter writes that domain. */
  OPF_INTERNAL        = 1 << 10,
  /* com.microsoft (ONNX Runtime's contrib ops): the rows canonicalize
   * rewrites into default-domain ops (DynamicQuantizeLSTM) */
  OPF_DOMAIN_MS       = 1 << 11,
} OpFlags;

typedef struct OpInfo {
  const char *name;
  int min_in, max_in;      /* max_in < 0: variadic */
  int min_out, max_out;
  unsigned flags;
  const char *expr;        /* elementwise scalar template, else NULL */
} OpInfo;

extern const OpInfo ir_ops[OP_COUNT_];
OpKind ir_op_lookup(const char *onnx_name);   /* default domain; OP_Unknown_ when absent */
/* The op `onnx_name` of `domain` ("" or "ai.onnx" is the default domain): a
 * row flagged OPF_DOMAIN_* matches only in its domain, any other row only in
 * the default one. OP_Unknown_ when absent (or the domain is not ours). */
OpKind ir_op_lookup_in(const char *domain, const char *onnx_name);
/* The domain a row belongs to: "" (default), "ai.onnx.ml", "ai.onnx.preview.training" or
 * "ai.onnx.preview". */
const char *ir_op_domain(OpKind op);

typedef enum AttrKind {   /* ONNX AttributeProto.AttributeType codes */
  AT_UNDEF = 0, AT_FLOAT = 1, AT_INT = 2, AT_STRING = 3, AT_TENSOR = 4, AT_GRAPH = 5,
  AT_FLOATS = 6, AT_INTS = 7, AT_STRINGS = 8, AT_TENSORS = 9, AT_GRAPHS = 10,
  AT_SPARSE_TENSOR = 11, AT_SPARSE_TENSORS = 12, AT_TYPE_PROTO = 13, AT_TYPE_PROTOS = 14
} AttrKind;

struct Attr {
  const char *name;
  AttrKind kind;
  int n;                   /* element count of the list kinds */
  union {
    float f;
    int64_t i;
    const char *s;         /* NUL-terminated; slen holds the byte length */
    Tensor *t;
    Graph *g;
    float *fs;
    int64_t *is;
    const char **ss;
    Tensor **ts;
    Graph **gs;
  } u;
  size_t slen;
};

typedef enum ValueKind { VK_NODE, VK_INPUT, VK_CONST, VK_NONE } ValueKind;
/* What an ONNX value holds. The element type and shape of a sequence or an
 * optional describe its (innermost) tensor elements. Only the frontend and
 * the control-flow lowering (passes/lower_control.c) see anything but
 * VT_TENSOR: lowering turns sequences and optionals into plain tensors. */
typedef enum ValueType { VT_TENSOR = 0, VT_SEQUENCE, VT_OPTIONAL, VT_OPTIONAL_SEQUENCE } ValueType;

struct Value {
  int id;                  /* dense per graph, stable */
  const char *name;        /* ONNX name; unique per graph */
  ValueKind kind;
  DType dt;
  Shape shape;
  Node *producer;          /* VK_NODE only */
  int out_index;
  Tensor *konst;           /* VK_CONST only: the data */
  Node **uses;             /* one entry per consuming input slot */
  int n_uses, cap_uses;
  bool is_output;          /* listed among the graph outputs */
  /* Bit i set: dim i is data-dependent (NonZero, Unique, NonMaxSuppression):
   * shape.d[i] holds its static upper bound, which sizes the buffer, and the
   * kernel reports the actual extent at run time. Only graph outputs may have
   * one (pass_require_static); see docs/abi.md. */
  uint32_t dyn_dims;
  /* A small integer tensor whose content is known as extents (Shape of a
   * value with bounded dims, and what Gather/Concat/Unsqueeze/... make of it):
   * element k is sval[k]; NULL otherwise. Reshape/Expand/Slice read it. */
  const DimExpr **sval;
  int n_sval;
  ValueType vt;            /* VT_TENSOR except before control-flow lowering */
  /* 0: stored as its shape says (row-major). 16: a 4-D [N, C, H, W] tensor
   * stored channel-blocked, NCHW16c: [N][ceil(C/16)][H][W][16], the lanes past
   * C unspecified (written, never read into a real lane). Only the layout
   * pass (passes/layout.c) sets it, and only the kernels it places read or
   * write such a value (docs/layout.md). */
  int blocked;
  Graph *g;                /* owning graph */
};

struct Node {
  int id;                  /* dense per graph, stable */
  OpKind op;
  const char *op_type;     /* ONNX spelling, also for unknown ops */
  const char *domain;      /* "" for the default domain */
  const char *name;        /* never NULL; synthesized when the model has none */
  Value **in;              /* omitted optional inputs point at Graph.none */
  int n_in;
  Value **out;
  int n_out;
  Attr *attrs;
  int n_attrs;
  Node *prev, *next;       /* schedule order */
  Graph *g;
};

typedef struct OpsetImport {
  const char *domain;
  int64_t version;
} OpsetImport;

struct Graph {
  Arena *arena;
  const char *file;        /* model path, for messages */
  const char *name;
  Node *first, *last;      /* nodes in schedule order */
  int n_nodes;             /* live nodes */
  Node **nodes;            /* by id; NULL once removed */
  int n_node_ids, cap_nodes;
  Value **values;          /* by id */
  int n_values, cap_values;
  Value **inputs;          /* runtime inputs, in ONNX order (weights excluded) */
  int n_inputs, cap_inputs;
  Value **outputs;         /* in ONNX order */
  int n_outputs, cap_outputs;
  /* The ONNX name of each output slot, as ir_output_add saw it: kept when a
   * pass puts another value (an input, a constant, another output) in the
   * slot, for NAME_info (docs/abi.md). */
  const char **output_names;
  Value *none;             /* the one "omitted optional input" value */
  int64_t opset;           /* default-domain opset version */
  OpsetImport *imports;
  int n_imports;
  Graph *parent;           /* enclosing graph of a subgraph, else NULL */
  Value **captures;        /* subgraph: outer-scope values it reads (VK_INPUT here) */
  int n_captures, cap_captures;
  bool owns_arena;         /* false for subgraphs, which share the parent's arena */
  Value **name_tab;        /* open-addressing index of values by name */
  int name_cap;
  int n_anon;              /* counter for synthesized names */
  /* Range symbols (-D NAME=LO..HI), by id; subgraphs share the root's. */
  DimSym syms[IR_MAX_SYMS];
  int n_syms;
};

Graph *ir_graph_new(const char *file);
void ir_graph_free(Graph *g);
/* A subgraph (If/Loop/Scan body) living in the parent's arena. */
Graph *ir_subgraph_new(Graph *parent, const char *name);
/* The k-th graph node n holds (If branches, Loop/Scan bodies: its graph and
 * graphs attributes in order), or NULL past the last:
 * for (int k = 0; (sub = ir_node_subgraph(n, k)); k++) ... */
Graph *ir_node_subgraph(const Node *n, int k);
/* Records that subgraph g reads outer value `name`; returns its local stand-in. */
Value *ir_capture_add(Graph *g, const char *name, DType dt, const Shape *s);
/* A fresh value with a unique name (suffix added when taken); kind VK_NODE. */
Value *ir_value_new(Graph *g, const char *name, DType dt, const Shape *s);
Value *ir_value_find(const Graph *g, const char *name);   /* NULL when absent */
Value *ir_input_add(Graph *g, const char *name, DType dt, const Shape *s);
Value *ir_const_new(Graph *g, const char *name, Tensor *t);
void ir_output_add(Graph *g, Value *v);
/* Appends a node with n_out fresh outputs named after the node. */
Node *ir_node_new(Graph *g, OpKind op, const char *op_type, const char *name,
                  int n_in, Value *const *in, int n_out);
/* Same, inserted before `pos` (pos NULL: append). */
Node *ir_node_insert(Graph *g, Node *pos, OpKind op, const char *op_type, const char *name,
                     int n_in, Value *const *in, int n_out);
/* Same with the outputs' names given (NULL or "" entries get a derived name). */
Node *ir_node_insert_named(Graph *g, Node *pos, OpKind op, const char *op_type, const char *name,
                           int n_in, Value *const *in, int n_out, const char *const *out_names);
/* Makes output slot i of n the omitted value (an unused optional output). */
void ir_node_drop_output(Node *n, int i);
void ir_node_set_input(Node *n, int i, Value *v);
void ir_node_add_input(Node *n, Value *v);
/* Detaches the node; its outputs must have no uses left. */
void ir_node_remove(Node *n);
/* Points every use of `from` (and graph output slots) at `to`. */
void ir_value_replace(Value *from, Value *to);
/* Turns v into a constant holding t (folding); detaches it from its producer. */
void ir_value_make_const(Value *v, Tensor *t);
/* Moves n to just before pos (pos NULL: to the end). */
void ir_node_move_before(Node *n, Node *pos);

Attr *ir_attr_add(Node *n, const char *name, AttrKind kind);
const Attr *ir_attr(const Node *n, const char *name);
int64_t ir_attr_int(const Node *n, const char *name, int64_t dflt);
float ir_attr_float(const Node *n, const char *name, float dflt);
const char *ir_attr_str(const Node *n, const char *name, const char *dflt);
/* INTS attribute: count in *n (0 and NULL when absent). */
const int64_t *ir_attr_ints(const Node *n, const char *name, int *count);
void ir_attr_set_int(Node *n, const char *name, int64_t v);
void ir_attr_set_ints(Node *n, const char *name, const int64_t *v, int count);
void ir_attr_remove(Node *n, const char *name);

/* True when the input slot holds a value (not omitted). */
static inline bool ir_has_input(const Node *n, int i) {
  return i < n->n_in && n->in[i]->kind != VK_NONE;
}

/* ---- verify.c: structural invariants ---------------------------------------- */

/* Single definition, consistent use lists, topological order, table arity,
 * shapes known where `need_shapes`. Reports every violation; false if any. */
bool ir_verify(const Graph *g, bool need_shapes, Diag *d);

/* ---- print.c / parse.c: textual IR for dumps and golden tests ---------------
 * Format (one item per line):
 *   graph NAME opset N
 *   input  %x : f32[1,3,N,224]
 *   const  %w : f32[2,2] = [1, 2, 3, 4]
 *   %y : f32[1,8] = Conv{strides=ints[1,1], group=1}(%x, %w, _) @conv0
 *   output %y
 * A `?` dim is unknown, `f32[*]` has an unknown rank.
 * Names outside [A-Za-z0-9_.] are quoted; `_` is an omitted value; `#` starts
 * a comment. Attributes: 3, 0.5, "s", ints[..], floats[..], strings[..],
 * tensor f32[2] = [..], graph NAME (a block `subgraph NAME` ... `end` given
 * earlier, whose lines may read values of the main graph). Constant data is printed in full up to 16 elements,
 * else as "<N elements>" (read back as zeros). */

void ir_print(const Graph *g, Buf *out);
/* The same with graph attributes' graphs as `subgraph NAME ... end` blocks
 * before their node and the attributes as `graph NAME` (parsable; golden tests). */
void ir_print_blocks(const Graph *g, Buf *out);
void ir_print_file(const Graph *g, FILE *f);
Graph *ir_parse(const char *text, const char *file, Diag *d);

/* ---- order.c: topological order ---------------------------------------------- */

/* Stable topological sort (keeps model order where legal). On a cycle, reports
 * the nodes involved and returns false. */
bool ir_toposort(Graph *g, Diag *d);

/* ---- plan (filled by passes/memplan.c, read by codegen/) ---------------------
 * One arena holds every intermediate buffer and every node's scratch. A view
 * (Reshape, Flatten, ...), an in-place result or a Concat input stored in its
 * slice of the output takes no memory of its own: it aliases a root value (at
 * a byte offset), whose buffer lives from the first write to the last read of
 * any alias. A root is an arena tensor, a graph input, a weight, or a graph
 * output (then the buffer is the caller's output array). See docs/memory.md. */

#define PLAN_ALIGN 64
/* Guard mode (docs/guard.md): bytes of red zone before and after every arena
 * buffer, and the arena's leading bytes where the generated code records a
 * violation. Both keep PLAN_ALIGN. */
#define PLAN_REDZONE 64
#define PLAN_GUARD_HEADER 64

typedef struct PlanTensor {
  int value_id;            /* the root value owning the buffer; -1 for scratch */
  int node_id;             /* scratch: the node it belongs to; else -1 */
  int64_t offset, size;    /* arena bytes, offset PLAN_ALIGN-aligned */
  int first, last;         /* schedule steps: written first, read last */
} PlanTensor;

struct Plan {
  int64_t arena_bytes;     /* total, scratch included */
  int64_t scratch_bytes;   /* largest scratch of one node (planned inside the arena) */
  int64_t lower_bound_bytes; /* most bytes live at one step, scratch included */
  int64_t model_order_bound_bytes; /* the same for the model's node order */
  int64_t naive_bytes;     /* sum of all buffers and scratch, no reuse */
  int64_t *offset;         /* by value id; -1 when not in the arena (aliases: the root's) */
  int *alias;              /* by value id: root whose storage it shares, or -1 */
  int64_t *alias_offset;   /* by value id: byte offset of an alias inside its root */
  bool *elided;            /* by node id: a view that needs no code (output aliases input) */
  PlanTensor *tensors;     /* one per arena buffer (roots and scratch) */
  int n_tensors;
  int64_t *scratch_offset; /* by node id; -1 when the node has no scratch */
  int64_t *scratch_size;   /* by node id; 0 when none */
  int n_steps;             /* schedule length */
  const char *strategy;    /* the placement that won (static string) */
  int64_t redzone;         /* guard mode: PLAN_REDZONE, else 0. Then each tensor's size is its
                              exact bytes, [offset - redzone, offset) and [offset + size,
                              align(offset + size) + redzone) are its red zones, and the arena's
                              first PLAN_GUARD_HEADER bytes belong to no tensor */
};

/* ---- what a code generation target tells the passes ------------------------- */

/* A target is a struct of hooks (codegen/target.c fills them): the passes ask
 * it what its kernels can fuse and how much scratch each kernel needs, so a
 * fact about a kernel lives with the emitter that writes the kernel and the
 * planner never copies it. */
/* Characters a string-making kernel may write when --string-bytes is not given. */
#define IR_STRING_BYTES 4096

typedef struct Target Target;
struct Target {
  const char *name;        /* "c", "cuda" */
  int threads;             /* threads the generated code splits large kernels over (>= 1) */
  bool fuse_residual;      /* its Conv kernels add a residual input in their store */
  bool strided_matmul;     /* its MatMul kernels read and write through permutations (fuse-layout) */
  int blocked_lanes;       /* 16: its kernels run Conv/pools on NCHW16c tensors (passes/layout.c); 0: no */
  bool int8_pairs16;       /* its int8 conv tile adds pairs of u8 x s8 products in 16 bits (AVX2
                            * vpmaddubsw): fuse-quant splits the weights so no pair saturates */
  bool int8_lanes;         /* its int8 conv tile can take the output channels as the vector lanes
                            * (AVX-512 VNNI without AMX): fuse-quant may store a conv's weights
                            * transposed where that form costs less (docs/int8.md) */
  bool int8_vnni512;       /* it has AVX-512 VNNI (with or without AMX): MatMulInteger and
                            * ConvInteger by constant weights run on the lanes kernels
                            * (passes/fuse_qmatmul.c; their portable C is slower than the
                            * generic loops) */
  /* Bytes of scratch the kernel emitted for n needs during n's step; 0: none. */
  int64_t (*scratch_bytes)(const Target *t, const Node *n);
  /* True when n's scratch must live from n's step to the end of the run
   * (the characters of strings n outputs). */
  bool (*scratch_persists)(const Target *t, const Node *n);
};

#endif
