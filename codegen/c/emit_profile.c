/* emit_profile.c - --profile: timing hooks in NAME.c (docs/abi.md "Profiling").
 *
 * The generated code measures nothing itself and keeps free of stdio: it calls
 * a caller-supplied function at the begin and end of every kernel, and the
 * caller reads its clock there. NAME_run_profiled(arena, inputs, outputs, fn,
 * user) passes the function down as an argument (no writable global, so the
 * library stays reentrant); NAME_run is the same code with no function. A
 * kernel that runs on every thread of the pool (--threads) also reports each
 * worker's part, from the worker, with the worker's thread number.
 * Without --profile nothing here writes a byte.
 */
#include "codegen_internal.h"

bool prof_on(const CGen *cg) { return cg->o->profile; }

static int kernel_count(const CGen *cg) {
  int k = 0;
  for (const Node *n = cg->g->first; n; n = n->next)
    k += !(cg->plan->elided && cg->plan->elided[n->id]);
  return k;
}

void prof_write_header(const CGen *cg, const char *up, Buf *h) {
  if (!prof_on(cg))
    return;
  const char *nm = cg->o->name;
  int k = kernel_count(cg);
  buf_printf(h, "/* Built with --profile (docs/profile.md). %s_run_profiled runs the model\n"
                " * like %s_run_v and calls fn(user, kernel, phase, thread) as kernel\n"
                " * number `kernel` (an index into %s_kernels) begins (phase 0) and ends\n"
                " * (phase 1). thread is 0 on the calling thread; a kernel that runs on\n"
                " * every thread of the pool also reports each worker's part, from that\n"
                " * worker, with its number 1..N-1. fn may be NULL. */\n",
             nm, nm, nm);
  buf_puts(h, "#ifndef ONNXC_PROF_DEFINED\n#define ONNXC_PROF_DEFINED\n"
              "typedef void (*onnxc_prof_fn)(void *user, int kernel, int phase, int thread);\n"
              "typedef struct onnxc_kernel_info {\n  const char *name; /* the kernel's node */\n"
              "  const char *op;\n} onnxc_kernel_info;\n#endif\n");
  buf_printf(h, "#define %s_KERNELS %d\nextern const onnxc_kernel_info %s_kernels[%d];\n", up, k, nm,
             k > 0 ? k : 1);
  buf_printf(h, "int %s_run_profiled(void *arena, const void *const *inputs, void *const *outputs,\n"
                "    onnxc_prof_fn fn, void *user);\n\n", nm);
}

void prof_write_table(const CGen *cg, Buf *c) {
  if (!prof_on(cg))
    return;
  buf_puts(c, "/* --profile: the hook a parallel kernel's workers report through */\n"
              "typedef struct onnxc_prof_ctx {\n  onnxc_prof_fn fn;\n  void *user;\n} onnxc_prof_ctx;\n\n");
  buf_printf(c, "ONNXC_API const onnxc_kernel_info %s_kernels[%d] = {\n", cg->o->name,
             kernel_count(cg) > 0 ? kernel_count(cg) : 1);
  int k = 0;
  for (const Node *n = cg->g->first; n; n = n->next) {
    if (cg->plan->elided && cg->plan->elided[n->id])
      continue;
    buf_puts(c, "  {");
    cg_c_string(c, n->name);
    buf_puts(c, ", ");
    cg_c_string(c, n->op_type);
    buf_puts(c, "},\n");
    k++;
  }
  if (k == 0)
    buf_puts(c, "  {\"\", \"\"}\n");
  buf_puts(c, "};\n\n");
}

void prof_step(const CGen *cg, int kernel, int phase, Buf *run) {
  if (prof_on(cg))
    buf_printf(run, "  if (onnxc_pf)\n    onnxc_pf(onnxc_pu, %d, %d, 0);\n", kernel, phase);
}

/* The extra parameters of the function that holds NAME_run's body, and the
 * context its parallel kernels pass to their tasks (the last task argument). */
void prof_run_params(const CGen *cg, Buf *c) {
  if (prof_on(cg))
    buf_puts(c, ", onnxc_prof_fn onnxc_pf, void *onnxc_pu");
}

void prof_run_begin(const CGen *cg, Buf *c) {
  if (prof_on(cg))
    buf_puts(c, "  onnxc_prof_ctx onnxc_pr;\n  onnxc_pr.fn = onnxc_pf;\n  onnxc_pr.user = onnxc_pu;\n"
                "  (void)onnxc_pr;\n");
}

void prof_task_arg(const CGen *cg, Buf *run) {
  if (prof_on(cg))
    buf_puts(run, ", (void *)&onnxc_pr");
}

/* Inside a parallel kernel's task: a worker (th > 0) reports its own span;
 * the calling thread's span is the kernel's, reported by the run function. */
void prof_task_step(const CGen *cg, int kernel, int arg, int phase, Buf *fns) {
  if (!prof_on(cg))
    return;
  buf_printf(fns, "  if (th && ((const onnxc_prof_ctx *)p[%d])->fn)\n"
                  "    ((const onnxc_prof_ctx *)p[%d])->fn(((const onnxc_prof_ctx *)p[%d])->user, %d, %d, th);\n",
             arg, arg, arg, kernel, phase);
}

/* With --profile, NAME_run's body is `static int NAME_run_p(..., fn, user)`
 * (write_run names it so); here NAME_run and NAME_run_profiled call it. */
void prof_write_entries(const CGen *cg, Buf *c) {
  if (!prof_on(cg))
    return;
  const Graph *g = cg->g;
  const char *nm = cg->o->name;
  buf_printf(c, "ONNXC_API int %s_run(void *arena", nm);
  cg_run_params(cg, true, c);
  buf_printf(c, ") {\n  return %s_run_p(arena", nm);
  cg_run_params(cg, false, c);
  buf_puts(c, ", 0, 0);\n}\n\n");
  buf_printf(c, "ONNXC_API int %s_run_profiled(void *arena, const void *const *inputs, void *const *outputs,\n"
                "    onnxc_prof_fn fn, void *user) {\n", nm);
  char call[300];
  snprintf(call, sizeof call, "%s_run_p(arena", nm);
  cg_run_v_body(c, g, call, ", fn, user");
  buf_putc(c, '\n');
}
