/* codegen.h - emitters from a planned graph to target source.
 *
 * The C target writes three files into a directory: NAME.h (the ABI of the
 * design contract), NAME.c (one static function per node plus NAME_run) and the
 * weights (NAME_weights.c, or a raw blob with an assembler stub for fast builds),
 * and copies the runtime header next to them.
 */
#ifndef ONNXC_CODEGEN_H
#define ONNXC_CODEGEN_H

#include "ir.h"

typedef enum WeightsForm {
  WEIGHTS_C,        /* const arrays in NAME_weights.c: portable, any C compiler */
  WEIGHTS_BLOB,     /* NAME_weights.bin + NAME_weights.S using .incbin: fast to build */
} WeightsForm;

typedef struct CodegenOpts {
  const char *name;         /* C prefix, a valid identifier */
  const char *model_path;   /* for the header comment */
  WeightsForm weights;
  const char *weights_section; /* optional linker section for weights, or NULL */
  int threads;              /* --threads: > 1 splits large kernels over a pool (0, 1: none) */
  int64_t l2_bytes;         /* --l2-kb: one core's L2 as the cache-blocking decisions assume it (0: 2 MB) */
  int vec_bits;             /* the host-built code's vectors: 512 AVX-512F, 256 AVX2 + FMA, 0 neither or not known */
  int conv_order;           /* --conv-order: blocked convs' items 0 by cost, 1 panel-major, 2 group-major */
  int check_numerics;       /* --check-numerics: 0 off, 1 NaN and Inf, 2 NaN only (docs/numerics.md) */
  bool profile;             /* --profile: timing hooks, NAME_run_profiled (docs/profile.md) */
  bool no_batch;            /* CUDA: launch every kernel alone (-O0), no launch batching (docs/cuda.md) */
  void (*progress)(void *user, long done, long total); /* after each node emitted, when set */
  void *progress_user;
} CodegenOpts;

/* Writes the C target into dir (which must exist). */
bool codegen_c(const Graph *g, const Plan *plan, const CodegenOpts *o, const char *dir, Diag *d);
/* Writes the CUDA target into dir: NAME.cu (kernels), NAME.c (host code on
 * the CUDA driver API), NAME.h, the weights, onnxc_rt.h and onnxc_cuda_rt.h
 * (docs/cuda.md). The cubin/PTX images are added by the build (tools/). */
bool codegen_cuda(const Graph *g, const Plan *plan, const CodegenOpts *o, const char *dir, Diag *d);

/* ---- emission context handed to per-op hooks ---------------------------------
 * A hook writes the body of `static void fn(const T *X0, ..., T *Y0, ...)`:
 * inputs are named X<slot> and outputs Y<slot>; omitted optional slots have no
 * parameter (test with ir_has_input / ec_has_output). Every shape is static.
 * The plan may give an OPF_INPLACE node's X0 and Y0 the same array (never
 * `restrict`); a node with e->plan->scratch_size[n->id] > 0 bytes of scratch
 * also gets `unsigned char *S` (64-byte aligned), last. See docs/memory.md.
 * An output of data-dependent size (Value.dyn_dims) adds `int64_t *D<slot>`
 * after the outputs: the kernel writes its actual dims there (docs/abi.md). */
typedef struct EmitC {
  const Graph *g;
  const Plan *plan;
  Buf *b;                   /* function body being written */
  int indent;
  Diag *d;
  const char *prefix;       /* name prefix of the generated symbols */
  int threads;              /* CodegenOpts.threads (0 or 1: single-threaded code) */
  bool parallel;            /* set by ec_set_parallel: the node runs on every thread */
  bool cuda;                /* the body goes into a CUDA kernel (cuda/emit_cuda.c's fallback) */
  int flat_loops;           /* ec_flat_for calls in this body */
  int64_t flat_n;           /* the iteration count of the first one */
  /* A parallel node whose work is known at run time only (-D ranges): the C
   * condition over the run's dims under which the pool pays; below it the
   * call site runs the node on the calling thread (onnxc_nt = 1). */
  const char *par_when;
  /* C text set by ec_open_items: the end (exclusive) of the items this
   * thread runs without another claim (its chunk), for a kernel that
   * prefetches its next item's data */
  const char *items_end;
  int64_t l2_bytes;         /* CodegenOpts.l2_bytes (0: the default) */
  int conv_order;           /* CodegenOpts.conv_order */
  int vec_bits;             /* CodegenOpts.vec_bits */
} EmitC;

/* Opens "for (ptrdiff_t VAR = 0; VAR < n; VAR++) {" (the caller closes it) over
 * independent iterations: each writes only its own elements and reads nothing
 * another iteration writes. A hook may call it when that loop is the whole of
 * its work (anything else it prints has no side effects). On the CUDA target
 * the loop becomes a grid-stride loop, and a body with exactly one such loop
 * runs on one GPU thread per iteration instead of one thread in all. */
void ec_flat_for(EmitC *e, const char *var, int64_t n);

/* ---- threads (--threads, docs/threads.md; c/threads.c) ---------------------------
 * CodegenOpts.threads > 1 makes NAME.c carry a pthreads pool (host builds;
 * firmware builds see sequential stubs). ec_threads(e) is that count for
 * hooks (0 or 1: write single-threaded code). A hook whose body
 * splits its work by `onnxc_th` (this thread) and `onnxc_nt` (the thread
 * count; 1 when the pool is busy) calls ec_set_parallel(e): the framework adds
 * those two parameters and runs the function on every thread. The body takes
 * work items with `onnxc_nt > 1 ? onnxc_claim() : own++` (each item once, in
 * any thread); items 0..n-1 may build tables the later ones read, each
 * calling onnxc_ready_set(onnxc_nt) when done and the later ones
 * onnxc_ready_wait(onnxc_nt, n). The C target only.
 * Whether to go parallel is a matter of cost: a hook estimates its kernel's
 * time on one thread (ec_cost_ns, ec_cost_rows_ns: measured rates) and asks
 * ec_par_worth; work under a pool's wake-up and join stays on one thread. */
int ec_threads(const EmitC *e);
/* Estimated nanoseconds on one thread of `units` of a kind of work (measured
 * rates, c/threads.c); ec_cost_ns: of `macs` packed multiply-adds or `bytes`
 * moved, whichever takes longer. */
typedef enum CostKind {
  COST_GEMM_MAC, /* a multiply-add of the packed GEMM */
  COST_DW_TAP,   /* an output element x tap of a depthwise conv or a pool */
  COST_ROW_ELEM, /* an element of a row kernel (Softmax, LayerNormalization) */
  COST_EW_ELEM,  /* an output element of an elementwise loop */
  COST_BYTE,     /* a byte moved */
} CostKind;
double ec_cost(CostKind k, double units);
double ec_cost_ns(double macs, double bytes);
/* threads > 1 and work of cost_ns (on one thread) gains from the pool. */
bool ec_par_worth(const EmitC *e, double cost_ns);
bool threads_worth(int threads, double cost_ns);
int64_t threads_chunks(int threads, int64_t n, double cost_ns);
/* Claims to cut n items of cost_ns in all into: coarse enough that a claim
 * costs little next to its work, at most 8 per thread, at least one. */
int64_t ec_par_chunks(const EmitC *e, int64_t n, double cost_ns);
/* Opens a loop over n independent items of cost_ns in all, variable `var`
 * (long): when worth it, chunks of items claimed by every thread (marks the
 * node parallel); else one loop. The caller closes the brace. */
void ec_open_items(EmitC *e, const char *var, int64_t n, double cost_ns);
/* The same in at most max_chunks claims (chunks of consecutive items), for a
 * kernel whose item prefetches the next one's data. */
void ec_open_items_max(EmitC *e, const char *var, int64_t n, double cost_ns, int64_t max_chunks);
/* The same over n_c items known at run time (C text over the kernel's dims),
 * at most n_hi, of cost_hi at that bound: parallel when worth it at the
 * bound, and then e->par_when is set to `units_c` (C text) times the cost of
 * one unit of `k` reaching the pool's break-even, so a small run stays on one
 * thread. */
void ec_open_items_rt(EmitC *e, const char *var, const char *n_c, int64_t n_hi, double cost_hi,
                      const char *units_c, CostKind k);
/* C text: `units_c` units of work of kind k reach the pool's break-even. */
const char *ec_par_when(EmitC *e, const char *units_c, CostKind k);

/* ---- run-time extents (emit_dyn.c, docs/dynamic-shapes.md) ------------------------
 * With range symbols (Graph.n_syms > 0), a node whose shapes depend on them
 * gets a body from dyn_emit_body, whose function takes `const int64_t *dims`
 * (the run's symbol values by id) after its outputs. dyn_check reports every
 * such node no kernel there covers. */
bool dyn_node_is_dynamic(const Node *n);
bool dyn_emit_body(EmitC *e, const Node *n);
bool dyn_check(const Graph *g, Diag *d);
/* v's element count at the run's dims, as C text over `dims` (allocated in a). */
const char *dyn_numel_c(const Value *v, Arena *a);

/* ---- the target's hooks for the passes (target.c) ------------------------------
 * codegen_target fills t for the target named "c" or "cuda" built for
 * `threads` threads: what its kernels fuse, and the scratch each kernel
 * needs, answered by the emitter of that kernel: */
void codegen_target(Target *t, const char *name, int threads);
int64_t conv_scratch_bytes(const Node *n, int threads);  /* emit_conv.c (and emit_gemm*.c) */
/* The depthwise Conv kernel (emit_depthwise.c): false, having written nothing,
 * when n does not qualify; and its scratch bytes (0: none, or not depthwise). */
bool conv_emit_depthwise(EmitC *e, const Node *n);
int64_t depthwise_scratch_bytes(const Node *n, int threads);
int64_t attn_scratch_bytes(const Node *n);               /* emit_attention.c */
int64_t rnn_scratch_bytes(const Node *n);                /* emit_rnn.c */
/* RNN/GRU/LSTM whose sequence length and batch are the C expressions seq and
 * batch (emit_dyn.c), seq x batch at most rows_hi; the input and hidden sizes
 * must be static. */
bool rnn_emit_rt(EmitC *e, const Node *n, const char *seq, const char *batch, int64_t rows_hi);
/* DynamicQuantizeLinear over `count` elements (C text: a number, or the
 * run-time extents of emit_dyn.c); emit_quant.c. */
bool quant_emit_dql(EmitC *e, const Node *n, const char *count);
int64_t string_char_bytes(const Node *n);                /* emit_string.c: kept to the end */
void ec_set_parallel(EmitC *e);
/* Opens `for (long o ...) {` over `outer` rows of `len` elements of a row
 * kernel: ec_open_items at ec_cost_rows_ns. The caller closes the brace. */
void ec_open_rows(EmitC *e, int64_t outer, int64_t len);
/* LayerNormalization / RMSNormalization (emit_nn.c) over `rows` rows, C text
 * known at run time (-D ranges, emit_dyn.c); the normalized dims static. */
bool ec_norm_rows_rt(EmitC *e, const Node *n, const char *rows, int64_t rows_hi);

/* Writes one indented line (a newline is appended). A line ending with '{'
 * indents what follows, one starting with '}' dedents. */
void ec_line(EmitC *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes each line of text (lines end in '\n') with ec_line. */
void ec_lines(EmitC *e, const char *text);
bool ec_has_output(const Node *n, int i);
/* Scalar C literal for a double in the given type ("1.5f", "(-INFINITY)", "3"). */
const char *ec_literal(DType t, double v, char *buf, size_t n);
/* Opens "for (long VAR = 0; VAR < out; VAR++) {" over the columns outside
 * [a, b) (a row's border, window_interior: the interior goes to another
 * loop); the caller closes it. */
void ec_open_border(EmitC *e, const char *var, int64_t out, int64_t a, int64_t b);
/* Row-major strides of a static shape (elements). */
void ec_strides(const Shape *s, int64_t *strides);
/* C expression of the element offset of one MatMul operand's matrix for the
 * flat output batch index `bi`: dims/rank are the operand's batch dims,
 * ob/nb the output's, mat the matrix size (numpy broadcasting; emit_matmul.c). */
void ec_batch_offset(const int64_t *dims, int rank, const int64_t *ob, int nb, int64_t mat,
                     Buf *out);
/* Reduce* axes of n as a mask over an input of rank `rank` (constant axes input
 * or attribute, noop_with_empty_axes); false when they are not static
 * (emit_reduce.c). */
bool ec_reduce_mask(const Node *n, int rank, bool *mask, bool *noop);
/* Element count of a value of static shape (asserted). */
int64_t ec_numel(const Value *v);
/* Product of dims [lo, hi) of a static shape. */
int64_t ec_prod(const Shape *s, int lo, int hi);
/* Appends element `idx` of array `arr` (type t) as a plain C value: float for
 * f16/bf16 and the float8/float4 types (decoded exactly), int for the packed
 * 2- and 4-bit integers, else the element itself. */
void ec_load_elem(Buf *b, DType t, const char *arr, const char *idx);
/* Writes `dst = expr;` with expr of compute type ct stored as `to` (ec_ew_store). */
void ec_store_line(EmitC *e, const char *dst, DType ct, DType to, const char *expr);
/* Float compute type of a float storage type: f64 for f64, else f32. */
DType ec_float_ct(DType t);
/* Suffix of the <math.h> functions for compute type ct: "" for f64, else "f". */
const char *ec_fsuf(DType ct);
/* The axis held by constant input 1 of n (CumSum, CumProd) resolved against
 * `rank` into *axis; false after a diag error when not constant or out of range. */
bool ec_axis_input(EmitC *e, const Node *n, int rank, int *axis);

/* ---- elementwise templates (emit_elementwise.c) ------------------------------
 * Shared with fusion and the CUDA emitter: one place decides how an EW row's
 * template is specialised for a node's types and how operands are loaded. */

/* Most operands one template may name (%0..%9). */
#define EC_EXPR_MAX_OPS 10
/* Type an EW node is computed in: f32 for f16/bf16/f32, f64 for f64, the
 * unsigned type of at least 32 bits for integer ops that may overflow (so they
 * wrap without UB), else the type of the node's data inputs. */
DType ec_ew_compute_type(const Node *n);
/* Cast (emit_shape_ops.c): the C type an element of type `from` passes
 * through, and the template converting %0 (held in it) to `to` as the Cast
 * kernel does (NaN to 0 and saturation for float -> integer, != 0 for bool;
 * to float16/bfloat16 the store rounds). Types of 8 bits or more, not float8. */
DType ec_cast_mid(DType from);
void ec_cast_template(Buf *b, DType from, DType to);
/* Template for n computed in `compute`: the row's text or a per-type variant
 * (integer Div without UB, unsigned Abs/Sign without always-false compares).
 * Variadic rows (Max, Min, Sum, Mean) return the binary step, folded left to
 * right (%0 accumulator, %1 next operand); Mean then divides by the count. */
const char *ec_ew_template(const Node *n, DType compute);
/* ec_ew_template with float32 exp, erf, tanh and the activations made of
 * them through onnxc_rt.h's vectorizing functions: the C target's. */
const char *ec_ew_template_c(const Node *n, DType compute);
/* Expands a template into out: %0..%9 become operands[i] (C expressions of the
 * compute type), %f the math suffix, %T the compute C type, %{name=dflt} the
 * node's float attribute as a literal, %% a percent sign. False after a diag
 * error (malformed template, operand missing). */
bool ec_expand_expr(Diag *d, const Node *n, const char *expr, const char *const *operands,
                    int n_operands, DType compute, Buf *out);
/* Appends the C expression converting `src`, an element of type `from`, to compute. */
void ec_ew_load(Buf *out, DType from, DType compute, const char *src);
/* Appends the C expression converting `expr` (of type compute) for storing as `to`. */
void ec_ew_store(Buf *out, DType compute, DType to, const char *expr);
/* ec_ew_load / ec_ew_store written into buf (n bytes, asserted large enough); return buf. */
const char *ec_ew_load_str(char *buf, size_t n, DType from, DType compute, const char *src);
const char *ec_ew_store_str(char *buf, size_t n, DType compute, DType to, const char *expr);

/* ---- kernel description of a fused elementwise node (kernel_desc.c) ----------
 * One description, printed by both targets: the iteration space is the fused
 * node's output shape (every output has it); operand k is loaded (through its
 * broadcast index map, the target's business) into the variable `a<k>` of
 * kd_operand_type of its element type; each body node is one statement
 * `const T t<s> = expr;` of its row's template; the body's outputs (one per
 * node output: several for sibling chains merged by fuse-elementwise) are
 * stored at the same index. */
#define KD_MAX_STEPS 32
#define KD_MAX_OPERANDS 16
#define KD_MAX_OUTPUTS 8
typedef struct KdStep {
  const Node *n;             /* the body node: op, attributes, output type */
  DType compute;             /* ec_ew_compute_type(n) */
  int n_arg;
  int arg[EC_EXPR_MAX_OPS];  /* >= 0: operand index; < 0: the result of step -1 - arg */
  char tmpl[320];            /* a Cast's template (ec_cast_template); rows have theirs */
} KdStep;
typedef struct Kdesc {
  const Node *fused;         /* the node the body belongs to */
  const Graph *body;
  int n_steps;
  KdStep step[KD_MAX_STEPS];
  int n_out;                 /* body outputs: the stored values */
  int out_step[KD_MAX_OUTPUTS]; /* the step whose result output o stores */
} Kdesc;
/* Reads n's body into k. False after a diag error (a malformed body). */
bool kd_build(const Node *n, Kdesc *k, Diag *d);
/* Type an operand of element type t is held in: float for f16/bf16, else t. */
DType kd_operand_type(DType t);
/* Appends one statement per step but the last to stmts, each as
 * `<indent>const T t<s> = expr;\n`, and the last step's expression, stored as
 * the output's element type, to result. fast_c: float32 Exp, Erf, Tanh and
 * Sigmoid through onnxc_rt.h's vectorizable versions (the C target), else
 * <math.h>. False after a diag error (also for a body of several outputs). */
bool kd_emit(const Kdesc *k, bool fast_c, const char *indent, Buf *stmts, Buf *result, Diag *d);
/* The same for any number of outputs: results[o] (k->n_out buffers) receives
 * the expression output o stores, converted to its element type; a step that
 * is stored and read by no later step has no statement of its own. */
bool kd_emit_outputs(const Kdesc *k, bool fast_c, const char *indent, Buf *stmts, Buf *results, Diag *d);
/* The epilogue a Conv, Gemm or MatMul p took from fusion (attributes
 * "epilogue", "epilogue_input", "epilogue_consts"; passes/fuse_elementwise.c)
 * as one float expression of x, the value before it (parenthesized by the
 * caller), into out. False after a diag error. */
bool kd_epilogue_expr(const Node *p, const char *x, Buf *out, Diag *d);
/* Appends to b the offset into an operand of shape `in`, broadcast
 * (right-aligned) against `out`, of the element at flat output index i (a C
 * expression): i itself when the sizes match, else unravelled coordinates. */
void kd_bcast_offset(const Shape *in, const Shape *out, const char *i, Buf *b);
/* Operand k of a FusedElementwise read in place of Transposes and Slices
 * (passes/fuse_elementwise.c, attribute onnxc.views): the element offset and
 * the strides of its logical dims in the buffer it reads; false when it is
 * read as it is. */
bool kd_operand_view(const Node *n, int k, int64_t *offset, int64_t *stride);
/* Operand k's logical shape (the body input's; n->in[k]'s for other nodes). */
const Shape *kd_operand_shape(const Node *n, int k);
/* Element strides of operand k's logical dims in its buffer; returns the
 * element offset of its first element. */
int64_t kd_operand_strides(const Node *n, int k, int64_t *stride);
void kd_operand_offset(const Node *n, int k, const Shape *out, const char *i, Buf *b);
/* The prologue a Softmax/LogSoftmax took from fusion (attribute "prologue":
 * the elementwise chain that made its input, whose operands are now n's
 * inputs X0..): statements computing the chain's value at row `row`, column
 * `col` of the output (rows along its last axis; C expressions) into `dst`,
 * each line starting with indent. */
bool kd_prologue_row(const Node *n, const char *indent, const char *row, const char *col, const char *dst,
                     Buf *out, Diag *d);
/* The same prologue's statements and value over operands a0..a(n_in-1),
 * loaded by the caller (kd_emit's form; emit_dyn.c, run-time extents). */
bool kd_prologue_body(const Node *n, Buf *stmts, Buf *result, Diag *d);
/* Comment text naming the fused nodes: "Mul mul_3, Erf erf_4, ...". */
void kd_describe(const Kdesc *k, Buf *out);

/* Window geometry of a Conv-like node (emit_conv.c): per spatial dim of the
 * static data shape x and output shape y, the kernel extent (kernel_shape, else
 * `kernel`), stride, dilation and begin padding (auto_pad resolved). */
void ec_conv_window(const Node *n, const Shape *x, const Shape *y, const int64_t *kernel,
                    int64_t *k, int64_t *s, int64_t *dil, int64_t *pb);

#define OP(name, ...) bool emitc_##name(EmitC *e, const Node *n);
#define EW(name, ...)
#include "ops.def"
#undef OP
#undef EW
bool emitc_elementwise(EmitC *e, const Node *n);

#endif
