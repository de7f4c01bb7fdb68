/* fold_movement.c - compile-time evaluation of the data-movement family.
 *
 * Exported models compute shapes with Shape->Slice->Concat->Reshape and
 * ConstantOfShape/Range/Expand chains; folding them here is what turns those
 * shapes static. Slice, Pad, Expand, Tile and Split share one evaluator: for
 * each output axis a table maps the output coordinate to an input coordinate
 * (or -1: the pad value), and elements are copied byte-wise, so every element
 * type folds. ConstantOfShape and Range compute their values; Size needs only
 * a static input shape. Entry point: fold_movement (hooked into fold.c's
 * table). Results over FOLD_MAX_BYTES are left to run time.
 */
#include "movement.h"

#include <string.h>

#define FOLD_MAX_BYTES ((int64_t)64 << 20)

/* Bytes of one element as stored in a Tensor (0: packed sub-byte type). */
static size_t elem_size(DType t) {
  int bits = dtype_bits(t);
  return t == DT_STRING ? 0 : bits >= 8 ? (size_t)bits / 8 : 0;
}

/* Tensor for output i with its inferred type and shape; NULL (no error) when
 * it is not static or too large to fold. */
static Tensor *new_out(Node *n, int i, Diag *d) {
  const Value *v = n->out[i];
  int64_t numel, bytes;
  if (v->kind == VK_NONE || !shape_numel(&v->shape, &numel) || !dtype_bytes(v->dt, numel, &bytes) ||
      bytes > (fold_weight_only(v) ? FOLD_WEIGHT_MAX_BYTES : FOLD_MAX_BYTES) || !elem_size(v->dt))
    return NULL;
  return ir_tensor_new(n->g, v->dt, &v->shape, d);
}

/* ---- the coordinate-map evaluator ------------------------------------------- */

/* map[j][c]: input coordinate on axis j for output coordinate c, -1 for the
 * fill value; the input is viewed with the output's rank (leading axes of
 * extent 1 added, their stride unused). */
typedef struct CoordMap {
  int64_t *map[IR_MAX_RANK];
  int64_t istride[IR_MAX_RANK];
} CoordMap;

static void map_alloc(Node *n, CoordMap *cm, const Shape *in, const Shape *out) {
  int64_t acc = 1;
  for (int j = out->rank - 1; j >= 0; j--) {
    int a = j - (out->rank - in->rank);
    cm->map[j] = arena_alloc(n->g->arena, (size_t)(out->d[j] + 1) * sizeof(int64_t));
    cm->istride[j] = acc;
    if (a >= 0)
      acc *= in->d[a];
  }
}

static void map_run(Tensor *t, const Tensor *x, const CoordMap *cm, const void *fill) {
  size_t es = elem_size(t->dt);
  int r = t->shape.rank;
  int64_t c[IR_MAX_RANK] = {0};
  for (int64_t o = 0; o < t->numel; o++) {
    int64_t src = 0;
    bool filled = false;
    for (int j = 0; j < r; j++) {
      int64_t s = cm->map[j][c[j]];
      if (s < 0)
        filled = true;
      else
        src += s * cm->istride[j];
    }
    memcpy((char *)t->data + (size_t)o * es, filled ? fill : (const char *)x->data + (size_t)src * es, es);
    for (int j = r - 1; j >= 0; j--) {
      if (++c[j] < t->shape.d[j])
        break;
      c[j] = 0;
    }
  }
}

static int fold_Slice(Node *n, Diag *d) {
  const Tensor *x = n->in[0]->konst;
  SliceDim sd[IR_MAX_RANK];
  Tensor *t;
  if (mv_slice_params(n, d, sd) != MV_KNOWN || !(t = new_out(n, 0, d)))
    return MV_DYNAMIC;
  CoordMap cm;
  map_alloc(n, &cm, &x->shape, &t->shape);
  for (int j = 0; j < t->shape.rank; j++)
    for (int64_t c = 0; c < t->shape.d[j]; c++)
      cm.map[j][c] = sd[j].count == -2 ? c : sd[j].start + c * sd[j].step;
  map_run(t, x, &cm, NULL);
  ir_value_make_const(n->out[0], t);
  return MV_KNOWN;
}

static int fold_Expand(Node *n, Diag *d) {
  const Tensor *x = n->in[0]->konst;
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return MV_DYNAMIC;
  CoordMap cm;
  map_alloc(n, &cm, &x->shape, &t->shape);
  for (int j = 0; j < t->shape.rank; j++) {
    int a = j - (t->shape.rank - x->shape.rank);
    for (int64_t c = 0; c < t->shape.d[j]; c++)
      cm.map[j][c] = a < 0 || x->shape.d[a] == 1 ? 0 : c;
  }
  map_run(t, x, &cm, NULL);
  ir_value_make_const(n->out[0], t);
  return MV_KNOWN;
}

static int fold_Tile(Node *n, Diag *d) {
  const Tensor *x = n->in[0]->konst;
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return MV_DYNAMIC;
  CoordMap cm;
  map_alloc(n, &cm, &x->shape, &t->shape);
  for (int j = 0; j < t->shape.rank; j++)
    for (int64_t c = 0; c < t->shape.d[j]; c++)
      cm.map[j][c] = c % x->shape.d[j];
  map_run(t, x, &cm, NULL);
  ir_value_make_const(n->out[0], t);
  return MV_KNOWN;
}

/* Input coordinate of output coordinate c on an axis of extent dim padded by
 * b in front and e behind; -1 for the constant. Negative pads crop first and
 * the other modes pad the cropped extent, as ORT does. */
static int64_t pad_src(int64_t c, int64_t b, int64_t e, int64_t dim, PadMode mode) {
  int64_t cf = b < 0 ? -b : 0, bp = b > 0 ? b : 0, dd = dim - cf - (e < 0 ? -e : 0), s = c - bp;
  if (s >= 0 && s < dd)
    return s + cf;
  switch (mode) {
  case PAD_CONSTANT:
    return -1;
  case PAD_EDGE:
    return cf + (s < 0 ? 0 : dd - 1);
  case PAD_WRAP:
    return cf + (s % dd + dd) % dd;
  case PAD_REFLECT:
    break;
  }
  if (dd == 1)
    return cf;
  int64_t p = 2 * (dd - 1), m = (s % p + p) % p;
  return cf + (m < dd ? m : p - m);
}

static int fold_Pad(Node *n, Diag *d) {
  const Tensor *x = n->in[0]->konst;
  int64_t b[IR_MAX_RANK], e[IR_MAX_RANK];
  PadMode mode;
  Tensor *t;
  if (mv_pad_params(n, d, b, e, &mode) != MV_KNOWN || !(t = new_out(n, 0, d)))
    return MV_DYNAMIC;
  /* The fill value as one element of the output's type. */
  int64_t one[1] = {1};
  Shape s1 = shape_make(1, one);
  Tensor *fill = ir_tensor_new(n->g, t->dt, &s1, d);
  if (!fill)
    return MV_ERROR;
  if (ir_has_input(n, 2))
    memcpy(fill->data, n->in[2]->konst->data, elem_size(t->dt));
  else if (n->g->opset < 11)
    tensor_set_f64(fill, 0, ir_attr_float(n, "value", 0.0f));
  CoordMap cm;
  map_alloc(n, &cm, &x->shape, &t->shape);
  for (int j = 0; j < t->shape.rank; j++)
    for (int64_t c = 0; c < t->shape.d[j]; c++)
      cm.map[j][c] = pad_src(c, b[j], e[j], x->shape.d[j], mode);
  map_run(t, x, &cm, fill->data);
  ir_value_make_const(n->out[0], t);
  return MV_KNOWN;
}

static int fold_Split(Node *n, Diag *d) {
  const Tensor *x = n->in[0]->konst;
  int axis;
  if (!mv_split_axis(n, d, x->shape.rank, &axis))
    return MV_ERROR;
  int64_t *sizes = arena_alloc(n->g->arena, (size_t)n->n_out * sizeof *sizes);
  if (mv_split_sizes(n, d, x->shape.d[axis], sizes) != MV_KNOWN)
    return MV_DYNAMIC;
  Tensor **outs = arena_alloc(n->g->arena, (size_t)n->n_out * sizeof *outs);
  for (int i = 0; i < n->n_out; i++)
    if (n->out[i]->kind != VK_NONE && !(outs[i] = new_out(n, i, d)))
      return MV_DYNAMIC;
  int64_t off = 0;
  for (int i = 0; i < n->n_out; i++) {
    Tensor *t = outs[i];
    if (t) {
      CoordMap cm;
      map_alloc(n, &cm, &x->shape, &t->shape);
      for (int j = 0; j < t->shape.rank; j++)
        for (int64_t c = 0; c < t->shape.d[j]; c++)
          cm.map[j][c] = j == axis ? off + c : c;
      map_run(t, x, &cm, NULL);
      ir_value_make_const(n->out[i], t);
    }
    off += sizes[i];
  }
  return MV_KNOWN;
}

/* ---- value producers ------------------------------------------------------------ */

static int fold_ConstantOfShape(Node *n, Diag *d) {
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return MV_DYNAMIC;
  const Attr *a = ir_attr(n, "value");
  size_t es = elem_size(t->dt);
  if (a && a->u.t)
    for (int64_t i = 0; i < t->numel; i++)
      memcpy((char *)t->data + (size_t)i * es, a->u.t->data, es);
  ir_value_make_const(n->out[0], t);
  return MV_KNOWN;
}

static int fold_Range(Node *n, Diag *d) {
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return MV_DYNAMIC;
  const Tensor *s = n->in[0]->konst, *dl = n->in[2]->konst;
  for (int64_t i = 0; i < t->numel; i++) {
    if (dtype_is_int(t->dt))
      tensor_set_i64(t, i, (int64_t)((uint64_t)tensor_get_i64(s, 0) + (uint64_t)i * (uint64_t)tensor_get_i64(dl, 0)));
    else
      tensor_set_f64(t, i, tensor_get_f64(s, 0) + (double)i * tensor_get_f64(dl, 0));
  }
  ir_value_make_const(n->out[0], t);
  return MV_KNOWN;
}

static int fold_Size(Node *n, Diag *d) {
  int64_t numel;
  if (!shape_numel(&n->in[0]->shape, &numel))
    return MV_DYNAMIC;
  Tensor *t = new_out(n, 0, d);
  if (!t)
    return MV_DYNAMIC;
  tensor_set_i64(t, 0, numel);
  ir_value_make_const(n->out[0], t);
  return MV_KNOWN;
}

int fold_movement(Node *n, Diag *d) {
  /* Size reads only a shape; the others need every input constant, which
   * fold_node has checked. Packed element types are left alone. */
  if (n->op != OP_Size && n->op != OP_ConstantOfShape && n->op != OP_Range && !elem_size(n->in[0]->dt))
    return MV_DYNAMIC;
  switch (n->op) {
  case OP_Slice:
    return fold_Slice(n, d);
  case OP_Pad:
    return fold_Pad(n, d);
  case OP_Expand:
    return fold_Expand(n, d);
  case OP_Tile:
    return fold_Tile(n, d);
  case OP_Split:
    return fold_Split(n, d);
  case OP_ConstantOfShape:
    return fold_ConstantOfShape(n, d);
  case OP_Range:
    return fold_Range(n, d);
  case OP_Size:
    return fold_Size(n, d);
  default:
    return MV_DYNAMIC;
  }
}
