/* pipeline.c - the middle-end as a flat list of passes.
 *
 * Each step names a pass; --dump-ir-after NAME prints the IR after it. With
 * `verify` set (tests, debug runs), the verifier runs after every step, so a
 * pass that breaks an invariant is caught at the pass that did it.
 */
#include "passes.h"

#include <string.h>

typedef struct Ctx {
  const PipelineOpts *o;
  Plan *plan;
  int64_t model_order_bound;   /* from the scheduler; -1 when it did not run */
} Ctx;

static bool run_check(Graph *g, Ctx *c, Diag *d) { (void)c; return pass_check_ops(g, d); }
static bool run_canon(Graph *g, Ctx *c, Diag *d) { (void)c; return pass_canonicalize(g, d); }
static bool run_pin(Graph *g, Ctx *c, Diag *d) {
  return pass_pin_shapes(g, c->o->shapes, c->o->n_shapes, c->o->pins, c->o->n_pins, d) &&
         pass_pin_dims(g, c->o->pins, c->o->n_pins, d);
}
static bool run_order(Graph *g, Ctx *c, Diag *d) { (void)c; return ir_toposort(g, d); }
static bool run_lower(Graph *g, Ctx *c, Diag *d) { (void)c; return pass_lower_control(g, d); }
static bool run_infer(Graph *g, Ctx *c, Diag *d) { (void)c; return pass_infer(g, d); }
static bool run_lower_grad(Graph *g, Ctx *c, Diag *d) { (void)c; return pass_lower_gradient(g, d); }
/* QDQ groups to integer kernels (fuse_quant.c); before simplify folds the
 * weights' DequantizeLinear. The C target only. */
static bool run_fuse_quant(Graph *g, Ctx *c, Diag *d) {
  return c->o->opt_level < 1 || g->n_syms > 0 || strcmp(c->o->target->name, "c") != 0 ||
         (pass_fuse_quant(g, c->o->target->int8_pairs16, c->o->target->int8_lanes, d) && pass_fuse_qmatmul(g, c->o->target->int8_vnni512, d));
}
static bool run_simplify(Graph *g, Ctx *c, Diag *d) { return c->o->opt_level < 1 || pass_simplify(g, d); }
/* Fusion builds kernels for static shapes: a graph with -D ranges keeps its
 * nodes (emit_dyn.c has their run-time-extent kernels; docs/dynamic-shapes.md). */
static bool fusing(const Graph *g, const Ctx *c) { return c->o->opt_level >= 1 && g->n_syms == 0; }
/* ConvTranspose as one Conv per output phase (lower_convt.c): static shapes;
 * both targets (on CUDA the convs are parallel kernels, ConvTranspose is not) */
static bool run_lower_convt(Graph *g, Ctx *c, Diag *d) { return !fusing(g, c) || pass_lower_convt(g, d); }
static bool run_fuse_bn(Graph *g, Ctx *c, Diag *d) { return c->o->opt_level < 1 || pass_fuse_bn(g, d); }
static bool run_fuse_epi(Graph *g, Ctx *c, Diag *d) { return !fusing(g, c) || pass_fuse_epilogue(g, d, c->o->target->fuse_residual); }
/* (with ranges its patterns need static shapes; the residual Add still folds in) */
static bool run_fuse_norm(Graph *g, Ctx *c, Diag *d) { return c->o->opt_level < 1 || pass_fuse_norm(g, d); }
/* (with ranges, only elementwise chains: pass_fuse_elementwise says which) */
static bool run_fuse_ew(Graph *g, Ctx *c, Diag *d) { return c->o->opt_level < 1 || pass_fuse_elementwise(g, true, d); }
static bool run_fuse_layout(Graph *g, Ctx *c, Diag *d) {
  return !fusing(g, c) || !c->o->target->strided_matmul || pass_fuse_layout(g, d);
}
static bool run_fuse_siblings(Graph *g, Ctx *c, Diag *d) { return !fusing(g, c) || pass_fuse_siblings(g, d); }
/* NCHW16c regions (layout.c): float32 convs only, where the target stores
 * blocked tensors; with --precision the products marked for the reduced type
 * first (memplan marks again: a no-op then), so that the convs left float32
 * (depthwise) may still be blocked */
static bool run_layout(Graph *g, Ctx *c, Diag *d) {
  pass_mark_precision(g, c->o->precision);
  return !fusing(g, c) || pass_layout_blocked(g, c->o->target->blocked_lanes, c->o->layout, d);
}
/* float16 models: computed in float32 between their float16 boundaries, static shapes (-O1 and up) */
static bool run_f16_compute(Graph *g, Ctx *c, Diag *d) { return !fusing(g, c) || pass_f16_compute(g, d); }
/* RNN input projections as one MatMul over every step (rnn_project.c); -O1 and up */
static bool run_rnn_project(Graph *g, Ctx *c, Diag *d) {
  return c->o->opt_level < 1 || (pass_rnn_project(g, d) &&
                                 (strcmp(c->o->target->name, "c") != 0 || pass_rnn_transpose_r(g, d)));
}
static bool run_cse(Graph *g, Ctx *c, Diag *d) { return c->o->opt_level < 1 || pass_cse(g, d); }
static bool run_dce(Graph *g, Ctx *c, Diag *d) { (void)c; return pass_dce(g, d); }
static bool run_static(Graph *g, Ctx *c, Diag *d) { (void)c; return pass_require_static(g, d); }
static bool run_schedule(Graph *g, Ctx *c, Diag *d) {
  return c->o->opt_level < 1 || pass_schedule(g, c->o->target, &c->model_order_bound, d);
}
static bool run_plan(Graph *g, Ctx *c, Diag *d) {
  pass_mark_precision(g, c->o->precision);
  if (!pass_memplan_guarded(g, c->plan, c->o->target, c->o->guard ? PLAN_REDZONE : 0, d))
    return false;
  c->plan->model_order_bound_bytes =
      c->model_order_bound >= 0 ? c->model_order_bound : c->plan->lower_bound_bytes;
  return !c->o->verify || plan_validate(g, c->plan, d);
}

typedef struct Step {
  const char *name;
  bool (*run)(Graph *, Ctx *, Diag *);
  bool shapes_known;   /* the verifier may require inferred shapes after it */
} Step;

static const Step steps[] = {
    {"check-ops", run_check, false},
    {"topo-order", run_order, false},
    {"canonicalize", run_canon, false},
    {"pin-dims", run_pin, false},
    {"lower-control", run_lower, false},
    {"infer", run_infer, true},
    {"lower-gradient", run_lower_grad, true},
    {"fuse-quant", run_fuse_quant, true},
    {"simplify", run_simplify, true},
    {"f16-compute", run_f16_compute, true},
    {"rnn-project", run_rnn_project, true},
    {"lower-convt", run_lower_convt, true},
    {"fuse-bn", run_fuse_bn, true},
    {"cse", run_cse, true},
    {"fuse-norm", run_fuse_norm, true},
    {"fuse-epilogue", run_fuse_epi, true},
    {"fuse-elementwise", run_fuse_ew, true},
    {"fuse-layout", run_fuse_layout, true},
    {"fuse-siblings", run_fuse_siblings, true},
    {"layout", run_layout, true},
    {"dce", run_dce, true},
    {"require-static", run_static, true},
    {"schedule", run_schedule, true},
    {"memplan", run_plan, true},
};

const char *const passes_names[] = {"check-ops", "topo-order", "canonicalize", "pin-dims", "lower-control",
                                    "infer", "lower-gradient", "fuse-quant",
                                    "simplify", "f16-compute", "rnn-project", "lower-convt", "fuse-bn", "cse", "fuse-norm", "fuse-epilogue", "fuse-elementwise", "fuse-layout", "fuse-siblings", "layout", "dce", "require-static", "schedule",
                                    "memplan", NULL};

bool passes_run(Graph *g, const PipelineOpts *o, Plan *plan, Diag *d) {
  Ctx c = {o, plan, -1};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    const Step *s = &steps[i];
    if (o->progress)
      o->progress(o->progress_user, s->name, (int)i, (int)(sizeof steps / sizeof steps[0]));
    if (!s->run(g, &c, d))
      return false;
    if (o->verify && !ir_verify(g, s->shapes_known, d))
      return false;
    if (o->dump_after && (strcmp(o->dump_after, "all") == 0 || strcmp(o->dump_after, s->name) == 0)) {
      FILE *f = o->dump_to ? o->dump_to : stderr;
      fprintf(f, "# IR after %s\n", s->name);
      ir_print_file(g, f);
    }
  }
  return true;
}
