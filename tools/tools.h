/* tools.h - the onnxc command line: driver, builder, checker, and the
 * operating-system helpers they share. Only this module prints usage or exits. */
#ifndef ONNXC_TOOLS_H
#define ONNXC_TOOLS_H

#include "codegen.h"
#include "frontend.h"
#include "passes.h"

typedef enum OutKind { OUT_SO, OUT_A, OUT_O, OUT_SRC } OutKind;

typedef struct Options {
  const char *model;
  const char *out;
  OutKind kind;
  const char *name;            /* NULL: derived from the model file name */
  const char *target;          /* "c" or "cuda" */
  int opt_level;
  DimPin pins[256];
  int n_pins;
  InputShape shapes[64];       /* --shape NAME=AxBx...: graph inputs' whole shapes */
  int n_shapes;
  SeqLen elems[64];            /* --elements NAME=N|none: sequence/optional inputs */
  int n_elems;
  const char *memory_report;
  const char *fusion_report;   /* --fusion-report FILE.json */
  const char *memory_svg;
  const char *dump_after;
  bool verify_ir;
  const char *weights_section;
  const char *weights_form;    /* "auto", "c", "blob" */
  bool keep_temps;
  const char *cpu;             /* --cpu: "native" (NULL), "generic" or a -march value (-mcpu with --triple) */
  const char *triple;          /* --triple: cross target of the in-process compiler (docs/clang.md) */
  bool sanitize;               /* check: build the harness with ASan+UBSan */
  double rtol, atol;           /* check tolerances */
  bool verbose;
  const char *save_outputs;    /* check --save-outputs DIR: outputs as DIR/SET/output_N.pb */
  bool footprint;              /* onnxc footprint */
  const char *fp_cc;           /* footprint: target compiler (NULL: arm-none-eabi-gcc) */
  const char *fp_cflags;       /* footprint: its flags (NULL: Cortex-M4F, -Os) */
  const char *fp_json;         /* footprint: JSON report path, "-" for stdout */
  const char *cuda_arch[16];   /* --cuda-arch sm_XX (repeatable; none: sm_90) */
  int n_cuda_arch;
  bool build_only;             /* check: build (and link) but do not run */
  int64_t string_bytes;        /* --string-bytes (0: the default; docs/strings.md) */
  int conv_order;              /* --conv-order: 0 auto, 1 panel, 2 group (CodegenOpts.conv_order) */
  int64_t l2_bytes;            /* --l2-kb N, in bytes (0: the default; CodegenOpts.l2_bytes) */
  int threads;                 /* --threads N (0, 1: single-threaded code; docs/abi.md) */
  bool guard;                  /* --guard: red zones checked after every node (docs/guard.md) */
  int precision;               /* --precision: 0 f32, 1 bf16, 2 fp16 (PipelineOpts.precision, docs/precision.md) */
  int layout;                  /* --layout: 0 auto, 1 nchw, 2 nchw16c (PipelineOpts.layout, docs/layout.md) */
  bool tol_set;                /* check: --rtol or --atol given (else precision-scaled defaults) */
  int check_numerics;          /* --check-numerics[=nan]: 1 NaN and Inf, 2 NaN only (docs/numerics.md) */
  bool quiet;                  /* -q: no progress line */
  struct Progress *progress;   /* the driver's progress line (progress.c), or NULL */
  bool profile;                /* --profile: timing hooks in the generated code (docs/profile.md) */
  bool profiling;              /* onnxc profile */
  int prof_runs, prof_warmup;  /* profile: timed and warm-up runs */
  int prof_top;                /* profile: rows of the table (0: all) */
  const char *prof_trace;      /* profile: Chrome trace JSON path */
  const char *prof_json;       /* profile: the results as JSON */
  char **run_inputs;           /* run: the --input NAME=FILE options (NULL: not run) */
  int *n_run_inputs;
} Options;

/* ---- progress.c: the one-line progress of long compiles on a terminal ---- */
typedef struct Progress {
  bool on, shown;
  double t0, last, after;     /* start, last redraw, seconds before the line shows */
  char what[128];             /* the stage shown last, redrawn by progress_tick */
  long done, total;
} Progress;
void progress_init(Progress *p, bool quiet);
void progress_show(Progress *p, const char *what, long done, long total); /* total 0: no count */
void progress_pass(void *user, const char *pass, int index, int count);  /* PipelineOpts.progress */
void progress_kernels(void *user, long done, long total);                /* CodegenOpts.progress */
void progress_tick(void *user);                                          /* the same stage, the clock updated */
void progress_end(Progress *p);                                          /* clears the line */

/* ---- driver.c ---- */
/* Loads, optimizes and plans a model. NULL after errors. */
Graph *driver_compile(const Options *o, Plan *plan, Diag *d);
/* Derives the default --name from a model path ("models/MobileNet-v2.onnx" -> "mobilenet_v2"). */
const char *driver_default_name(const char *model, char *buf, size_t n);

/* ---- memory_report.c ---- */
/* The plan as JSON (docs/cli.md) and as an SVG picture of the arena over time. */
bool driver_memory_report(const Graph *g, const Plan *plan, const char *path, Diag *d);
bool driver_memory_svg(const Graph *g, const Plan *plan, const char *path, Diag *d);
/* A JSON string literal of s, escaped (memory_report.c). */
void json_str(FILE *f, const char *s);
/* s with XML's special characters escaped (control characters dropped). */
void xml_str(FILE *f, const char *s);
/* Where a value's data lives: the one answer the reports and the graph view give. */
typedef enum MemWhere { MEM_ARENA, MEM_INPUT, MEM_OUTPUT, MEM_WEIGHT, MEM_NONE } MemWhere;
typedef struct MemPlace {
  MemWhere where;
  int root;                /* value id owning the storage (the value itself unless an alias) */
  int64_t offset;          /* MEM_ARENA: the value's first byte in the arena */
  int64_t size;            /* MEM_ARENA: its buffer's bytes (the root's) */
  int first, last;         /* MEM_ARENA: the buffer's lifetime, in schedule steps */
} MemPlace;
/* By value id, the index into plan->tensors of the buffer the value owns, or
 * -1; heap array for memory_place, free() it. */
int *memory_tensor_index(const Graph *g, const Plan *plan);
MemPlace memory_place(const Graph *g, const Plan *plan, const int *tensor_index, const Value *v);
/* ---- fusion_report.c ---- */
bool driver_fusion_report(const Graph *g, const Plan *plan, const char *path, Diag *d);
/* A view that needs no code (its output aliases its input); else a kernel. */
bool fusion_is_view(const Plan *plan, const Node *n);
/* Calls fn with each ONNX node kernel n computes ("OpType name"): its own
 * (unless the compiler made it) and those of its onnxc.fused record; returns
 * how many. fn may be NULL. */
int fusion_onnx_nodes(const Node *n, void (*fn)(void *ctx, const char *onnx_node), void *ctx);
/* Bytes of a value's data (0 when unknown or a string). */
int64_t fusion_value_bytes(const Value *v);
/* Estimated floating-point operations of kernel n (docs/cli.md). */
int64_t fusion_flops(const Node *n);
/* Facts of one kernel, shared with onnxc profile: its i-th ONNX node ("Op
 * name", written into buf) or NULL past the last; estimated floating-point
 * operations; bytes read (inputs) and written (outputs). */
const char *fusion_node(const Node *n, int i, char *buf, size_t len);
int64_t fusion_flops(const Node *n);
void fusion_bytes(const Node *n, int64_t *rd, int64_t *wr);

/* ---- profile.c ---- */
/* onnxc profile (docs/profile.md): returns the exit status. */
int profile_run(const Options *o);
/* profile_driver.c: the C program that times the builds "model" (--profile)
 * and "base", then probes the machine's peak and bandwidth. */
void profile_emit_driver(Buf *h, const Graph *g, int threads, int runs, int warmup, int64_t arena);

/* Full compile to o->out (sources, .so, .a or .o); no partial output on failure. */
bool driver_build(const Options *o, Diag *d);
/* Compiles dir/main_src with $CC, -I dir and `flags` (NULL-terminated), links
 * it with the objects (one path a line), `libs`, -lm and (threads > 1)
 * -pthread into dir/runner; on failure an error naming `what` and the
 * compiler's output. */
bool driver_link_program(const char *dir, const char *main_src, const char *const *flags, const char *objects,
                         const char *const *libs, int threads, const char *what, Diag *d);
/* Compiles generated sources in dir into an object list; used by build and check. */
bool driver_cc(const char *dir, const char *name, const Options *o, const char *extra_flags,
               bool pic, Buf *objects, Diag *d);

/* ---- inproc.c: builds with the in-process compiler (docs/clang.md) ---- */
/* True when o's build compiles in-process: onnxc has the compiler and no $CC
 * is set (and not --sanitize or the CUDA target), or --triple is given. */
bool inproc_wanted(const Options *o);
/* driver_cc's in-process twin: one object, dir/NAME.o, code and weights. */
bool inproc_cc(const char *dir, const char *name, const Options *o, const char *extra, bool pic, Buf *objects,
               Diag *d);
/* Links one host object into a shared library with the system linker. */
bool inproc_link_so(const Options *o, const char *object, const char *tmp_out, Diag *d);
/* driver_link_program's twin: compiles dir/main_src and writes dir/runner.jit,
 * the list of objects driver_run_program runs under the JIT. */
bool inproc_program(const char *dir, const char *main_src, const char *std, const char *objects, const Options *o,
                    Diag *d);
/* Runs argv[0] (a program from driver_link_program or inproc_program) as
 * sys_run does: a runner.jit list in a forked child under the JIT, else the
 * executable. */
int driver_run_program(char *const argv[], Buf *log);
/* ---- ar.c ---- */
/* Writes a static library holding one object, with its symbol index. */
bool ar_write_one(const char *path, const char *member, const void *obj, size_t len, Diag *d);

/* ---- cuda_build.c: the CUDA target's build (docs/cuda.md) ---- */
const char *cuda_home(void);                        /* the toolkit folder */
bool cuda_arch_valid(const char *arch);             /* "sm_90" */
/* Writes the CUDA sources into dir, plus NAME_cuda_image.c from NVRTC (an
 * empty one, with a warning, when NVRTC is missing and images_optional). */
bool cuda_generate(const Graph *g, const Plan *plan, const Options *o, const char *name, const char *dir,
                   bool blob, bool images_optional, Diag *d);
/* cuda_generate, then the host objects (listed in objects, one a line). */
bool cuda_build_objects(const Graph *g, const Plan *plan, const Options *o, const char *name, const char *dir,
                        const char *extra_cflags, bool pic, Buf *objects, Diag *d);
const char *cuda_link_flags(char *buf, size_t n);   /* "-L<stubs> -lcuda" */
/* onnxc --target cuda: sources (-S) or a .so/.a/.o built in dir, moved to o->out. */
bool cuda_driver_build(const Graph *g, const Plan *plan, const Options *o, const char *name, const char *dir,
                       Diag *d);
/* check: a harness that runs NAME on device 0 (same command line as the C one). */
void cuda_emit_harness(Buf *h, const Graph *g, const char *name, int64_t arena);
/* The same for a model with -D ranges: check.c's emit_harness_dims protocol on the device. */
void cuda_emit_harness_dims(Buf *h, const Graph *g, const char *name);

/* ---- check.c ---- */
/* onnxc check: returns the process exit status (0 match, 1 mismatch, 2 no compile). */
int check_case(const char *case_dir, const Options *o);

/* onnxc run's build and run (run.c): the model compiled for these inputs
 * (graph order), run once, outputs written as OUT_DIR/NAME.npy; exit status. */
int check_run_inputs(const char *model, Tensor *const *in, int n_in, const Options *o, const char *out_dir);

/* ---- run.c: onnxc run MODEL --input NAME=FILE ... --output DIR ---- */
int run_main(const Options *o, char *const *inputs, int n_inputs, const char *out_dir);
/* Writes a .npy file of n raw bytes of type dt and shape s. */
bool run_npy_save(const char *path, DType dt, const Shape *s, const void *raw, size_t n, Diag *d);

/* ---- compare.c ---- */
/* onnxc compare MODEL [options] (docs/compare.md); argv after "compare". */
int compare_main(int argc, char **argv, const char *argv0);

/* ---- footprint.c ---- */
/* onnxc footprint: compiles o->model for the target and prints flash and RAM
 * (table, and JSON to o->fp_json); returns the exit status. */
int footprint_run(const Options *o);

/* ---- sys.c ---- */
char *sys_mkdtemp(const char *hint);               /* heap string, or NULL */
void sys_rmtree(const char *path);
/* Runs argv (argv[0] searched in PATH); returns exit status, 128+signal, or -1.
 * Output of the child goes to `log` (a heap Buf) when given, else is inherited. */
int sys_run(char *const argv[], Buf *log);
/* The same, calling tick(user) about every 250 ms while the child is quiet
 * (needs log; the progress line's clock). */
int sys_run_ticking(char *const argv[], Buf *log, void (*tick)(void *user), void *user);
/* Runs a shell-free command line split on spaces (for $CC with flags). */
bool sys_read_file(const char *path, Buf *out);
bool sys_write_file(const char *path, const void *data, size_t n);
bool sys_copy_file(const char *from, const char *to);
bool sys_is_dir(const char *path);
const char *sys_cc(void);                           /* $CC or "cc" */
/* Target.blocked_lanes for o (driver.c): 16 for the C target with --layout
 * nchw16c, or by default where the code is built for a CPU with AVX-512F
 * (asked of the C compiler with the -march the build takes); else 0. */
int driver_blocked_lanes(const Options *o);
/* Whether the host-built int8 conv tile is the AVX2 one (no VNNI) for a graph
 * with QDQ groups: Target.int8_pairs16. */
bool driver_int8_pairs16(const Options *o, const Graph *g);
/* Target.int8_lanes: AVX-512 VNNI without AMX, for a graph with QDQ groups. */
bool driver_int8_lanes(const Options *o, const Graph *g);
/* Target.int8_vnni512: AVX-512 VNNI (with or without AMX), for a graph with
 * int8 ops. */
bool driver_int8_vnni512(const Options *o, const Graph *g);
/* 512: the host-built code has AVX-512F; 256: AVX2 with FMA; 0: neither, or not known (-S without --cpu) */
int driver_vector_bits(const Options *o);

#endif
