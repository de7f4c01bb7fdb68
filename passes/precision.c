/* precision.c - --precision bf16|fp16 (docs/precision.md).
 *
 * Marks the products the reduced type applies to: every Conv, Gemm and
 * MatMul whose operands and result are float32 (and whose constant weight,
 * if any, is finite) gets the int attribute `onnxc.precision` (1 bf16, 2
 * fp16). The packed-GEMM emitters
 * (codegen/emit_gemm*.c) read it when they plan a product, so the scratch
 * the planner asks for and the code emitted agree; a product that keeps
 * another kernel (run-time extents, small maps, matrix-vector) stays float32.
 * Values between nodes stay float32: the reduced type lives in the packed
 * panels only.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

static bool all_f32(const Node *n) {
  for (int i = 0; i < n->n_in && i < 2; i++)
    if (!n->in[i] || n->in[i]->dt != DT_F32)
      return false;
  return n->n_out >= 1 && n->out[0] && n->out[0]->dt == DT_F32;
}

/* A constant weight holding an infinity or NaN keeps float32: packed as
 * bfloat16 (or float16) pairs, its words could read as NaN floats, which the
 * C form of the weights does not keep bit for bit (codegen/weights.c). A
 * finite float16 weight past 65504 becomes an infinity in the high half of a
 * word, whose float exponent (0xf8) is not all ones: no NaN word. */
static bool finite_weight(const Node *n) {
  const Value *w = n->in[1];
  if (w->kind != VK_CONST || !w->konst)
    return true;
  const float *d = w->konst->data;
  for (int64_t i = 0; i < w->konst->numel; i++)
    if (!isfinite(d[i]))
      return false;
  return true;
}

/* A conv whose groups have fewer than 4 output channels (depthwise) never
 * takes the packed product, so the reduced type would not apply to it: left
 * unmarked, it stays free for the blocked float32 layout (layout.c), which
 * runs after the marks. */
static bool packed_conv(const Node *n) {
  if (n->op != OP_Conv || n->out[0]->shape.rank < 2 || n->out[0]->shape.d[1] < 0)
    return true;
  int64_t g = ir_attr_int(n, "group", 1);
  return g <= 1 || n->out[0]->shape.d[1] / g >= 4;
}

void pass_mark_precision(Graph *g, int precision) {
  if (precision <= 0)
    return;
  for (Node *n = g->first; n; n = n->next)
    if ((n->op == OP_Conv || n->op == OP_Gemm || n->op == OP_MatMul) && all_f32(n) && finite_weight(n) &&
        packed_conv(n) && !ir_attr(n, "onnxc.precision"))
      ir_attr_set_int(n, "onnxc.precision", precision);
}

/* ---- float16 models (docs/precision.md, "Float16 models") ---------------------------
 * A float16 model computes in float32 between its float16 boundaries, as
 * ONNX Runtime's CPU provider runs it (it has no float16 kernel for most
 * operators: it puts Casts around each node and then removes every
 * float16 -> float32 pair the Casts make, so a whole chain of nodes runs in
 * float32). Every node of the kinds below whose float16 tensors can all be
 * float32 takes float32 in their place:
 *   - a float16 constant operand becomes a float32 constant holding the same
 *     values (exact);
 *   - a float16 value from outside (a graph input, a node left in float16)
 *     is widened once by a Cast (exact);
 *   - a float32 result read by a node left in float16, or a graph output,
 *     is rounded to float16 once by a Cast there.
 * Inside the region nothing rounds to float16: the model rounds each node's
 * result, onnxc (and ONNX Runtime) only the region's results. The float32
 * passes after this one then apply as to a float32 model (BatchNormalization
 * folded into the Conv before it, activations and residual Adds fused into
 * the products' epilogues, elementwise chains fused). The weights stay
 * float32 (as ONNX Runtime's do); `--precision fp16` packs them as float16.
 * An explicit Cast to float16 keeps rounding (it is left in float16 and its
 * result widened). Nodes not listed (Constant-like generators, control flow,
 * sequences, quantization...) keep their float16 kernels. */

static bool f16_convertible_op(const Node *n) {
  if (ir_ops[n->op].flags & OPF_EW)
    return true;
  switch (n->op) {
  case OP_Cast: {
    /* a Cast to FLOAT16 rounds: it stays; so do the narrow and exotic float
     * targets (bfloat16, float8, float4, e8m0, int4), whose conversions are
     * written from the source type */
    int64_t to = ir_attr_int(n, "to", 0);
    return (to >= 1 && to <= 7) || to == 9 || (to >= 11 && to <= 13);
  }
  case OP_Conv: case OP_ConvTranspose: case OP_Gemm: case OP_MatMul:
  case OP_BatchNormalization: case OP_LayerNormalization: case OP_RMSNormalization:
  case OP_InstanceNormalization: case OP_GroupNormalization: case OP_LpNormalization:
  case OP_MeanVarianceNormalization: case OP_LRN: case OP_Gelu:
  case OP_Softmax: case OP_LogSoftmax: case OP_Hardmax:
  case OP_MaxPool: case OP_AveragePool: case OP_GlobalAveragePool: case OP_GlobalMaxPool:
  case OP_LpPool: case OP_GlobalLpPool:
  case OP_ReduceSum: case OP_ReduceMean: case OP_ReduceMax: case OP_ReduceMin: case OP_ReduceProd:
  case OP_ReduceL1: case OP_ReduceL2: case OP_ReduceLogSum: case OP_ReduceLogSumExp:
  case OP_ReduceSumSquare: case OP_ArgMax: case OP_ArgMin: case OP_CumSum: case OP_TopK:
  case OP_Reshape: case OP_Flatten: case OP_Squeeze: case OP_Unsqueeze: case OP_Identity:
  case OP_Dropout: case OP_Transpose: case OP_Concat: case OP_Shape: case OP_Size:
  case OP_Gather: case OP_GatherElements: case OP_GatherND: case OP_Slice: case OP_Pad:
  case OP_Expand: case OP_Tile: case OP_Split: case OP_DepthToSpace: case OP_SpaceToDepth:
  case OP_Trilu: case OP_Resize:
    return true;
  default:
    return false;
  }
}

typedef struct F16Region {
  Graph *g;
  int n;            /* values known when the pass began (ids below n) */
  bool *in32;       /* by id: a float16 value this pass made float32 */
  Value **wide;     /* by id: float32 stand-in of a float16 value left in float16 */
  Value **narrow;   /* by id: float16 rounding of a value made float32 */
  Captured cap;
} F16Region;

/* A float32 constant holding float16 constant v's values. */
static Value *widen_const(Graph *g, Value *v, Diag *d) {
  Tensor *t = ir_tensor_new(g, DT_F32, &v->konst->shape, d);
  if (!t)
    return NULL;
  const uint16_t *s = v->konst->data;
  float *f = t->data;
  for (int64_t i = 0; i < t->numel; i++)
    f[i] = ir_f16_to_f32(s[i]);
  return ir_const_new(g, arena_printf(g->arena, "%s_f32", v->name), t);
}

static Value *cast_before(Graph *g, Node *pos, Value *v, int to, const char *suffix) {
  Node *c = ir_node_insert(g, pos, OP_Cast, "Cast", arena_printf(g->arena, "%s_%s", v->name, suffix), 1, &v, 1);
  ir_attr_set_int(c, "to", to);
  c->out[0]->dt = to == 1 ? DT_F32 : DT_F16;
  c->out[0]->shape = v->shape;
  return c->out[0];
}

/* Float16 value v (not made float32 here) as float32, for node n. */
static Value *wide_of(F16Region *r, Node *n, Value *v, Diag *d) {
  if (v->id < r->n && r->wide[v->id])
    return r->wide[v->id];
  Value *w = v->kind == VK_CONST && v->konst ? widen_const(r->g, v, d) : cast_before(r->g, n, v, 1, "f32");
  if (w && v->id < r->n)
    r->wide[v->id] = w;
  return w;
}

/* Value v made float32 here, rounded to float16 before node pos (NULL: the end). */
static Value *narrow_of(F16Region *r, Node *pos, Value *v) {
  if (!r->narrow[v->id])
    r->narrow[v->id] = cast_before(r->g, pos, v, 10, "f16");
  return r->narrow[v->id];
}

static bool f16_convertible(F16Region *r, const Node *n) {
  if (!f16_convertible_op(n) || n->n_out < 1)
    return false;
  bool any = false;
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i) && n->in[i]->dt == DT_F16) {
      if (n->in[i]->kind == VK_CONST && !n->in[i]->konst)
        return false;
      any = true;
    }
  for (int i = 0; i < n->n_out; i++)
    if (n->out[i]->kind != VK_NONE && n->out[i]->dt == DT_F16) {
      if (rewrite_is_captured(&r->cap, n->out[i]))
        return false;
      any = true;
    }
  return any;
}

/* Output slot of the graph holding v: the Cast's result takes it (and its name). */
static void take_output(Graph *g, Value *v, Value *c) {
  for (int gi = 0; gi < g->n_outputs; gi++)
    if (g->outputs[gi] == v)
      g->outputs[gi] = c;
  v->is_output = false;
  const char *old = c->name;
  c->name = v->name;
  v->name = old;
  c->is_output = true;
}

bool pass_f16_compute(Graph *g, Diag *d) {
  F16Region r = {g, g->n_values, NULL, NULL, NULL, rewrite_captured(g)};
  bool any = false;
  for (int i = 0; i < g->n_values && !any; i++)
    any = g->values[i] && g->values[i]->dt == DT_F16;
  if (!any)
    return true;
  r.in32 = arena_alloc(g->arena, (size_t)r.n * sizeof *r.in32);
  r.wide = arena_alloc(g->arena, (size_t)r.n * sizeof *r.wide);
  r.narrow = arena_alloc(g->arena, (size_t)r.n * sizeof *r.narrow);
  memset(r.in32, 0, (size_t)r.n * sizeof *r.in32);
  memset(r.wide, 0, (size_t)r.n * sizeof *r.wide);
  memset(r.narrow, 0, (size_t)r.n * sizeof *r.narrow);
  for (Node *n = g->first; n; n = n->next) {
    if (n->op == OP_Cast && ir_attr_int(n, "to", 0) == 10 && n->in[0]->id < r.n && r.in32[n->in[0]->id])
      continue; /* rounds the float32 value itself, as the Cast it would read does */
    if (!f16_convertible(&r, n)) {
      /* a node left in float16 reads the float16 rounding of a value made float32 */
      for (int i = 0; i < n->n_in; i++)
        if (ir_has_input(n, i) && n->in[i]->id < r.n && r.in32[n->in[i]->id])
          ir_node_set_input(n, i, narrow_of(&r, n, n->in[i]));
      continue;
    }
    for (int i = 0; i < n->n_in; i++) {
      Value *v = n->in[i];
      if (!ir_has_input(n, i) || v->dt != DT_F16)
        continue;
      Value *w = wide_of(&r, n, v, d);
      if (!w)
        return false;
      ir_node_set_input(n, i, w);
    }
    for (int i = 0; i < n->n_out; i++) {
      Value *v = n->out[i];
      if (v->kind != VK_NONE && v->dt == DT_F16 && v->id < r.n) {
        v->dt = DT_F32;
        r.in32[v->id] = true;
      }
    }
  }
  /* graph outputs made float32: rounded at the end */
  for (int gi = 0; gi < g->n_outputs; gi++) {
    Value *v = g->outputs[gi];
    if (v->id < r.n && r.in32[v->id] && v->dt == DT_F32) {
      Value *c = narrow_of(&r, NULL, v);
      take_output(g, v, c);
    }
  }
  return true;
}
