/* codegen_internal.h - state shared by the files of the C emitter, and the
 * helpers the C and CUDA emitters share. */
#ifndef ONNXC_CODEGEN_INTERNAL_H
#define ONNXC_CODEGEN_INTERNAL_H

#include "codegen.h"

typedef struct CGen {
  const Graph *g;
  const Plan *plan;
  const CodegenOpts *o;
  Diag *d;
  const char **cname;       /* by value id: C expression naming the tensor, or NULL */
  const char **out_param;   /* by graph output slot: parameter name */
  const Value **weights;    /* constants that reach generated code */
  const char **weight_sym;
  int n_weights;
  int n_parallel;           /* nodes whose function runs on every thread (--threads) */
} CGen;

/* --threads n > 1 (c/threads.c): the thread pool (onnxc_parallel,
 * onnxc_claim, ...) when `pool` (some node runs on every thread), and
 * NAME_free_threads (docs/abi.md). */
void threads_write_pool(Buf *out, const char *name, int threads, bool pool);

/* Shared by the C and CUDA emitters (cg_shared.c). */
bool cg_emit_body(EmitC *e, const Node *n);   /* the C target's kernel hook for n */
bool cg_is_ident(const char *s);              /* a C identifier */
/* prefix + name with non-alphanumerics as '_', "_<k>" added until it is not in used[] */
const char *cg_c_ident(Arena *a, const char *prefix, const char *name, const char **used, int n_used);
/* cg->cname of the graph inputs (in_*) and cg->out_param (out_*), unique C
 * identifiers; an output value names its first output parameter. */
void cg_param_names(CGen *cg, Arena *a);
/* emit_dyn.c: the ABI of a model with range symbols (docs/dynamic-shapes.md). */
void dyn_write_dims_check(const Graph *g, Buf *c);
void dyn_write_data_dims(const Graph *g, Buf *c);     /* dims[] of a graph without -D ranges */
void dyn_write_output_dims(const CGen *cg, Buf *c);  /* NAME_run's out_*_dims that follow them */
void dyn_write_header(const CGen *cg, const char *up, Buf *h);
void dyn_write_arena_fn(const Graph *g, const Plan *plan, const char *nm, Buf *c);
/* NAME_info's tables of a model with ranges (emit_info.c): the ranges, which range each
 * input extent is, and NAME_output_shapes (docs/abi.md, version 2). */
void dyn_write_info_tables(const CGen *cg, Buf *c);
/* guard mode: the run's table of buffers, rt_guard_regions, sized by the dims */
void dyn_write_guard_regions(const Graph *g, const Plan *plan, Buf *run);
int64_t cg_numel(const Value *v);             /* elements of a static value */
const char *cg_ctype(const Value *v);         /* its element's C type (onnxc_str for strings) */
void cg_comment_safe(Buf *b, const char *s);  /* s, unable to close the C comment it goes in */
void cg_c_string(Buf *b, const char *s);      /* a C string literal of s, every byte escaped as needed */
bool cg_op_used(const Graph *g, OpKind op);
bool cg_write_file(const char *dir, const char *file, const char *text, size_t len, Diag *d);
/* ", (const T *)inputs[i]..., (T *)outputs[j]..., (int64_t *)outputs[k]...":
 * NAME_run_v's arrays forwarded to NAME_run's parameters. */
void cg_run_v_args(Buf *c, const Graph *g);
/* NAME_run's parameters after the arena (typed: "const T *in_x, T *out_y,
 * int64_t *out_y_dims"; else the same names as call arguments), each led by
 * ", ". */
void cg_run_params(const CGen *cg, bool typed, Buf *c);
/* The body of an entry taking `inputs` and `outputs` arrays: "return CALL"
 * followed by the arrays' elements as NAME_run's arguments, then TAIL and
 * the closing ");\n}\n". */
void cg_run_v_body(Buf *c, const Graph *g, const char *call, const char *tail);

bool weights_write_c(const CGen *cg, FILE *f, Diag *d);
bool weights_write_blob(const CGen *cg, FILE *bin, FILE *asm_f, const char *bin_path, Diag *d);

/* The runtime header's text, embedded at build time (runtime_text.c). */
extern const char onnxc_rt_h_text[];
/* The image decoders (runtime/onnxc_image.h), written next to the sources of
 * models that use ImageDecoder. */
extern const char onnxc_image_h_text[];

/* String tensors (emit_string.c, docs/strings.md): the helpers written once
 * at the top of NAME.c when string_used (string_write_prelude); which nodes may touch strings; the
 * kernel of Equal on strings; a `static const onnxc_str NAME[] = {...};`
 * table (long strings as char arrays first), each line led by indent. */
void string_write_prelude(Buf *b);
/* int8 kernels (emit_qint.c, docs/int8.md): the prelude of NAME.c when
 * qint_used; the scratch of a QIntConv. */
bool qint_used(const Graph *g);
/* The channel-blocked layout's kernels (emit_blocked.c, docs/layout.md):
 * blocked_dispatch, before a node's hook: for a node with a blocked operand
 * either writes its blocked kernel (*done) or lets the hook run (its own
 * kernel, or one that is lane-wise over every operand alike), and reports a
 * node that mixes layouts as an internal error. The micro-kernel text goes
 * at the top of NAME.c when blocked_conv_used. */
bool blocked_dispatch(EmitC *e, const Node *n, bool *done);
bool blocked_conv_used(const Graph *g);
void blocked_write_prelude(Buf *out, const Graph *g, int vec_bits);
void qint_write_prelude(Buf *out);
int64_t qint_scratch_bytes(const Node *n, int threads);
/* The loops of the int8 lanes product (emit_qmatmul.c): acc of columns c0..
 * (nc) for rows m0.. (np) of X0 [M, K] by the packed X1; the caller stores
 * and closes two braces. */
void qmm_open_rows(EmitC *e, int64_t M, int64_t N, int64_t K, bool sums);
bool string_used(const Graph *g);
bool string_node_ok(const Node *n);
bool emitc_string_equal(EmitC *e, const Node *n);
void string_table(Buf *b, const char *indent, const char *name, const char *const *v, int64_t count);

/* Guard mode (c/emit_guard.c, docs/guard.md): each writes nothing unless the
 * plan has red zones. The tables go before the node functions, run_begin
 * after NAME_run's argument checks, step_begin/step_end around the node of
 * each step, the report function after NAME_run, the declarations in NAME.h. */
bool guard_on(const Plan *plan);
void guard_write_tables(const Graph *g, const Plan *plan, const char *nm, Buf *c);
void guard_run_begin(const Plan *plan, Buf *run);
void guard_step_begin(const Plan *plan, const char *nm, int step, Buf *run);
void guard_step_end(const Plan *plan, const char *nm, int step, Buf *run);
void guard_write_report(const Plan *plan, const char *nm, int n_steps, Buf *c);
void guard_write_header(const Plan *plan, const char *nm, Buf *h);

/* --check-numerics (c/emit_numerics.c, docs/numerics.md): each writes
 * nothing unless o->check_numerics. step_end tests the node's outputs (their
 * C expressions in out_expr, NULL for absent ones) after its call; the status
 * function goes after NAME_run, its declaration in NAME.h. The step table
 * (each step's ONNX node name and op) serves guard mode too. */
void numerics_step_end(const CodegenOpts *o, const Node *n, int step, const char *const *out_expr, Buf *run);
void numerics_write_status_fn(const Graph *g, const CodegenOpts *o, Buf *c);
void numerics_write_header(const CodegenOpts *o, Buf *h);
void cg_write_step_nodes(const Graph *g, const char *nm, Buf *c);
/* The model description (c/emit_info.c, docs/abi.md): the constant tables and
 * NAME_info() in NAME.c, its declaration in NAME.h. */
void info_write(const CGen *cg, Buf *c);
void info_write_header(const CGen *cg, Buf *h);
/* --profile (c/emit_profile.c, docs/profile.md): each writes nothing without
 * it. The table goes before the node functions; step around each kernel's
 * call in the run function, whose body is then NAME_run_p with run_params
 * (run_begin first in it); task_arg and task_step in a parallel kernel's
 * argument array and task; entries after it (NAME_run, NAME_run_profiled). */
bool prof_on(const CGen *cg);
void prof_write_header(const CGen *cg, const char *up, Buf *h);
void prof_write_table(const CGen *cg, Buf *c);
void prof_step(const CGen *cg, int kernel, int phase, Buf *run);
void prof_run_params(const CGen *cg, Buf *c);
void prof_run_begin(const CGen *cg, Buf *c);
void prof_task_arg(const CGen *cg, Buf *run);
void prof_task_step(const CGen *cg, int kernel, int arg, int phase, Buf *fns);
void prof_write_entries(const CGen *cg, Buf *c);

#endif
