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
  const char *memory_report;
  const char *memory_svg;
  const char *dump_after;
  bool verify_ir;
  const char *weights_section;
  const char *weights_form;    /* "auto", "c", "blob" */
  bool keep_temps;
  bool sanitize;               /* check: build the harness with ASan+UBSan */
  double rtol, atol;           /* check tolerances */
  bool verbose;
  bool footprint;              /* onnxc footprint */
  const char *fp_cc;           /* footprint: target compiler (NULL: arm-none-eabi-gcc) */
  const char *fp_cflags;       /* footprint: its flags (NULL: Cortex-M4F, -Os) */
  const char *fp_json;         /* footprint: JSON report path, "-" for stdout */
} Options;

/* ---- driver.c ---- */
/* Loads, optimizes and plans a model. NULL after errors. */
Graph *driver_compile(const Options *o, Plan *plan, Diag *d);
/* Derives the default --name from a model path ("models/MobileNet-v2.onnx" -> "mobilenet_v2"). */
const char *driver_default_name(const char *model, char *buf, size_t n);

/* ---- memory_report.c ---- */
/* The plan as JSON (docs/cli.md) and as an SVG picture of the arena over time. */
bool driver_memory_report(const Graph *g, const Plan *plan, const char *path, Diag *d);
bool driver_memory_svg(const Graph *g, const Plan *plan, const char *path, Diag *d);

/* Full compile to o->out (sources, .so, .a or .o); no partial output on failure. */
bool driver_build(const Options *o, Diag *d);
/* Compiles generated sources in dir into an object list; used by build and check. */
bool driver_cc(const char *dir, const char *name, const Options *o, const char *extra_flags,
               bool pic, Buf *objects, Diag *d);

/* ---- check.c ---- */
/* onnxc check: returns the process exit status (0 match, 1 mismatch, 2 no compile). */
int check_case(const char *case_dir, const Options *o);

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
/* Runs a shell-free command line split on spaces (for $CC with flags). */
bool sys_read_file(const char *path, Buf *out);
bool sys_write_file(const char *path, const void *data, size_t n);
bool sys_copy_file(const char *from, const char *to);
bool sys_is_dir(const char *path);
const char *sys_cc(void);                           /* $CC or "cc" */

#endif
