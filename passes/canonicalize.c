/* canonicalize.c - one form per operator, whatever opset wrote the model.
 *
 * requires: every node has a table row (check-ops); runs before inference, so
 *           only graph inputs and constants have known types.
 * provides: Clip has three inputs (attribute and absent bounds become scalar
 *           constants; see canon_clip); Squeeze/Unsqueeze take their axes as
 *           input 1 (a constant), never as the pre-13 attribute; a pre-7
 *           per-channel PRelu slope is reshaped to broadcast numpy-style;
 *           DynamicQuantizeLSTM (com.microsoft) becomes an LSTM of its
 *           dequantized weights (canon_dqlstm).
 * invalidates: nothing (constants are added, no node is removed).
 * Later passes and emitters then handle a single form of each op. Subgraphs
 * (If/Loop/Scan bodies) are canonicalized too.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

/* v converted to dt, integers saturated to the type's range. */
static void set_clamped(Tensor *t, double v) {
  if (dtype_is_int(t->dt)) {
    int bits = dtype_bits(t->dt);
    double lo = dtype_is_signed(t->dt) ? -ldexp(1.0, bits - 1) : 0.0;
    double hi = dtype_is_signed(t->dt) ? ldexp(1.0, bits - 1) - 1 : ldexp(1.0, bits) - 1;
    if (isnan(v))
      v = 0;
    if (t->dt == DT_U64 && v >= hi) {
      ((uint64_t *)t->data)[0] = UINT64_MAX;
      return;
    }
    v = v < lo ? lo : v > hi ? hi : v;
  }
  tensor_set_f64(t, 0, v);
}

static Value *scalar_const(Node *n, const char *what, DType dt, double v, Diag *d) {
  Shape s = shape_scalar();
  Tensor *t = ir_tensor_new(n->g, dt, &s, d);
  if (!t)
    return NULL;
  set_clamped(t, v);
  return ir_const_new(n->g, arena_printf(n->g->arena, "%s_%s", n->name, what), t);
}

static void set_input(Node *n, int i, Value *v) {
  while (n->n_in <= i)
    ir_node_add_input(n, NULL);
  ir_node_set_input(n, i, v);
}

static bool computable(DType t) {
  return t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64 ||
         (dtype_is_int(t) && dtype_bits(t) >= 8);
}

bool canon_clip(Node *n, Diag *d) {
  static const char *const what[3] = {"", "min", "max"};
  DType dt = n->in[0]->dt;
  bool known = computable(dt);
  double bound[3] = {0, -INFINITY, INFINITY};
  bool from_attr[3] = {false, false, false};
  for (int i = 1; i <= 2; i++) {
    const Attr *a = ir_attr(n, what[i]);
    if (a) {
      if (a->kind != AT_FLOAT && a->kind != AT_INT)
        return diag_error(d, n, "attribute '%s' must be a float", what[i]);
      bound[i] = a->kind == AT_FLOAT ? a->u.f : (double)a->u.i;
      from_attr[i] = true;
    }
  }
  for (int i = 1; i <= 2; i++) {
    if (from_attr[i] || !ir_has_input(n, i)) {
      Value *v = scalar_const(n, what[i], known ? dt : DT_F64, bound[i], d);
      if (!v)
        return false;
      set_input(n, i, v);
      ir_attr_remove(n, what[i]);
      continue;
    }
    /* A constant bound of another type (or a placeholder made before the
     * type was known) is converted now; other mismatches are left to inference. */
    const Value *b = n->in[i];
    if (known && b->kind == VK_CONST && b->dt != dt && b->konst->numel == 1 && computable(b->dt)) {
      Value *v = scalar_const(n, what[i], dt, tensor_get_f64(b->konst, 0), d);
      if (!v)
        return false;
      ir_node_set_input(n, i, v);
    }
  }
  return true;
}

/* Squeeze/Unsqueeze before opset 13: `axes` attribute -> constant input 1. */
static bool canon_axes(Node *n, Diag *d) {
  int count;
  const int64_t *axes = ir_attr_ints(n, "axes", &count);
  if (!axes && !ir_attr(n, "axes"))
    return true;
  if (ir_has_input(n, 1))
    return diag_error(d, n, "axes given both as attribute and as input");
  int64_t dims[1] = {count};
  Shape s = shape_make(1, dims);
  Tensor *t = ir_tensor_new(n->g, DT_I64, &s, d);
  if (!t)
    return false;
  for (int i = 0; i < count; i++)
    tensor_set_i64(t, i, axes[i]);
  set_input(n, 1, ir_const_new(n->g, arena_printf(n->g->arena, "%s_axes", n->name), t));
  ir_attr_remove(n, "axes");
  return true;
}

/* PRelu before opset 7 applies a slope of C values per channel (axis 1);
 * from 7 on the slope broadcasts numpy-style. A constant [C] slope on an
 * input of known rank r > 2 becomes [C,1,...,1] so one rule serves both. */
static bool canon_prelu(Node *n, Diag *d) {
  if (n->g->opset >= 7 || n->n_in < 2 || n->in[1]->kind != VK_CONST)
    return true;
  const Tensor *slope = n->in[1]->konst;
  int rank = n->in[0]->shape.rank;
  if (slope->shape.rank != 1 || slope->numel <= 1 || rank <= 2)
    return true;
  int64_t dims[IR_MAX_RANK];
  dims[0] = slope->numel;
  for (int i = 1; i < rank - 1; i++)
    dims[i] = 1;
  Shape s = shape_make(rank - 1, dims);
  Tensor *t = ir_tensor_new(n->g, slope->dt, &s, d);
  if (!t)
    return false;
  memcpy(t->data, slope->data, (size_t)slope->nbytes);
  set_input(n, 1, ir_const_new(n->g, arena_printf(n->g->arena, "%s_slope", n->name), t));
  return true;
}

/* DynamicQuantizeLSTM (com.microsoft: what onnxruntime.quantization's
 * quantize_dynamic writes for an LSTM) has the LSTM's inputs and attributes
 * plus W_scale, W_zero_point, R_scale and R_zero_point; its W [D, I, 4H] and
 * R [D, H, 4H] are int8 or uint8, transposed against ONNX's, with a scale and
 * zero point per direction ([D]) or per gate row ([D, 4H]). It becomes the
 * LSTM of the dequantized weights, (q - zero point) * scale (exact in
 * float32), in ONNX's [D, 4H, I] and [D, 4H, H]. ONNX Runtime also rounds X
 * and h to uint8 at run time; onnxc computes the products in float32, so its
 * outputs are closer to the unquantized LSTM's (docs/int8.md). */
static Value *dq_weight(Node *n, int wi, int si, int zi, const char *tag, Diag *d) {
  if (!ir_has_input(n, si) || !ir_has_input(n, zi)) {
    diag_error(d, n, "the scale and zero point of %s (inputs %d and %d) are required", tag, si, zi);
    return NULL;
  }
  const Value *w = n->in[wi], *s = n->in[si], *z = n->in[zi];
  if (w->kind != VK_CONST || s->kind != VK_CONST || z->kind != VK_CONST) {
    diag_error(d, n, "%s, its scale and its zero point must be constants (initializers)", tag);
    return NULL;
  }
  const Tensor *q = w->konst, *sc = s->konst, *zp = z->konst;
  if ((q->dt != DT_I8 && q->dt != DT_U8) || zp->dt != q->dt || sc->dt != DT_F32 || q->shape.rank != 3) {
    diag_error(d, n, "%s must be an int8 or uint8 tensor [D, rows, 4H] with a float scale and a zero point of its type",
               tag);
    return NULL;
  }
  int64_t D = q->shape.d[0], rows = q->shape.d[1], G = q->shape.d[2];
  bool per_row = sc->numel == D * G && G != 1;
  if ((sc->numel != D && !per_row) || zp->numel != sc->numel) {
    diag_error(d, n, "the scale and zero point of %s must have %lld (per direction) or %lld (per gate row) elements",
               tag, (long long)D, (long long)(D * G));
    return NULL;
  }
  int64_t dims[3] = {D, G, rows};
  Shape sh = shape_make(3, dims);
  Tensor *t = ir_tensor_new(n->g, DT_F32, &sh, d);
  if (!t)
    return NULL;
  float *o = t->data;
  for (int64_t dd = 0; dd < D; dd++)
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < G; j++) {
        int64_t k = per_row ? dd * G + j : dd;
        o[(dd * G + j) * rows + r] =
            (float)((double)(tensor_get_i64(q, (dd * rows + r) * G + j) - tensor_get_i64(zp, k)) *
                    tensor_get_f64(sc, k));
      }
  return ir_const_new(n->g, arena_printf(n->g->arena, "%s_%s_dequantized", n->name, tag), t);
}

static bool canon_dqlstm(Node *n, Diag *d) {
  Value *w = dq_weight(n, 1, 8, 9, "W", d), *r = w ? dq_weight(n, 2, 10, 11, "R", d) : NULL;
  if (!r)
    return false;
  ir_node_set_input(n, 1, w);
  ir_node_set_input(n, 2, r);
  for (int i = 8; i < n->n_in; i++)
    ir_node_set_input(n, i, NULL);
  n->n_in = 8;
  n->op = OP_LSTM;
  n->op_type = "LSTM";
  n->domain = "";
  return true;
}

/* Never reached: canonicalize rewrites every DynamicQuantizeLSTM (or fails). */
bool infer_DynamicQuantizeLSTM(Node *n, Diag *d) {
  return diag_error(d, n, "DynamicQuantizeLSTM must be rewritten into LSTM (canonicalize) before inference");
}

bool pass_canonicalize(Graph *g, Diag *d) {
  int before = d->n_errors;
  for (Node *n = g->first; n; n = n->next) {
    switch (n->op) {
    case OP_Clip:
      canon_clip(n, d);
      break;
    case OP_Squeeze:
    case OP_Unsqueeze:
      canon_axes(n, d);
      break;
    case OP_PRelu:
      canon_prelu(n, d);
      break;
    case OP_DynamicQuantizeLSTM:
      canon_dqlstm(n, d);
      break;
    default:
      break;
    }
    Graph *sub;
    for (int k = 0; (sub = ir_node_subgraph(n, k)); k++)
      pass_canonicalize(sub, d);
  }
  return d->n_errors == before;
}
