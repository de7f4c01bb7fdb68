/* infer_sample.c - shape inference of the resampling family (opsi): Resize,
 * Upsample, GridSample, AffineGrid, RoiAlign and DeformConv.
 *
 * Resize output extents come from the `sizes` input (with `axes` and
 * keep_aspect_ratio_policy from opset 18) or from floor(in * scale) with the
 * `scales` input (an attribute for Upsample before opset 9). Both must be
 * constants for static extents; otherwise the rank is kept and the resized
 * dims become unknown. Opset 10 Resize has inputs (X, scales) only.
 * GridSample: (N, C, grid spatial dims...); AffineGrid: (N, spatial..., nd)
 * from the constant `size`; RoiAlign: (num_rois, C, output_height,
 * output_width); DeformConv: (N, out channels, offset's spatial dims).
 * Reference: the ONNX operator docs (onnx/defs) and onnx/reference/ops.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

static bool is_float(DType t) { return t == DT_F32 || t == DT_F64 || t == DT_F16 || t == DT_BF16; }

static bool want_float(Node *n, Diag *d, int i, const char *what) {
  if (!is_float(n->in[i]->dt))
    return infer_fail(d, n, "input %d (%s) has element type %s, expected f16, bf16, f32 or f64", i,
                      what, dtype_name(n->in[i]->dt));
  return true;
}

static bool want_rank(Node *n, Diag *d, int i, const char *what, int lo, int hi) {
  int r = n->in[i]->shape.rank;
  if (r >= 0 && (r < lo || r > hi)) {
    if (lo == hi)
      return infer_fail(d, n, "input %d (%s) has rank %d, expected %d", i, what, r, lo);
    return infer_fail(d, n, "input %d (%s) has rank %d, expected %d to %d", i, what, r, lo, hi);
  }
  return true;
}

/* Input slot is present and holds a non-empty tensor (opset 13 passes an
 * empty scales tensor when sizes is used). */
static bool present(const Node *n, int i) {
  if (!ir_has_input(n, i))
    return false;
  const Value *v = n->in[i];
  if (v->kind == VK_CONST)
    return v->konst->numel > 0;
  return !(v->shape.rank == 1 && v->shape.d[0] == 0);
}

/* ---- Resize, Upsample ------------------------------------------------------------- */

static bool one_of(const char *s, const char *const *names) {
  for (; *names; names++)
    if (strcmp(s, *names) == 0)
      return true;
  return false;
}

static bool check_resize_attrs(Node *n, Diag *d) {
  static const char *const modes[] = {"nearest", "linear", "cubic", "bilinear", NULL};
  static const char *const ctms[] = {"half_pixel",         "half_pixel_symmetric", "asymmetric",
                                     "pytorch_half_pixel", "align_corners",        "tf_crop_and_resize",
                                     "tf_half_pixel_for_nn", NULL};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};
  static const char *const pols[] = {"stretch", "not_larger", "not_smaller", NULL};
  const char *mode = ir_attr_str(n, "mode", "nearest");
  if (!one_of(mode, modes) || (n->op == OP_Resize && strcmp(mode, "bilinear") == 0))
    return infer_fail(d, n, "mode '%s' is not nearest, linear or cubic", mode);
  if (n->op == OP_Upsample && strcmp(mode, "cubic") == 0)
    return infer_fail(d, n, "mode 'cubic' is not an Upsample mode");
  const char *ctm = ir_attr_str(n, "coordinate_transformation_mode", "half_pixel");
  if (!one_of(ctm, ctms))
    return infer_fail(d, n, "coordinate_transformation_mode '%s' is not supported", ctm);
  const char *nm = ir_attr_str(n, "nearest_mode", "round_prefer_floor");
  if (!one_of(nm, nms))
    return infer_fail(d, n, "nearest_mode '%s' is not supported", nm);
  const char *pol = ir_attr_str(n, "keep_aspect_ratio_policy", "stretch");
  if (!one_of(pol, pols))
    return infer_fail(d, n, "keep_aspect_ratio_policy '%s' is not supported", pol);
  if (ir_attr_int(n, "antialias", 0) && strcmp(mode, "nearest") == 0)
    return infer_fail(d, n, "antialias is not defined for mode 'nearest'");
  return true;
}

/* Reads the `axes` attribute (opset 18) into ax (count *na); all axes when absent. */
static bool resize_axes(Node *n, Diag *d, int rank, int *ax, int *na) {
  int cnt = 0;
  const int64_t *a = ir_attr_ints(n, "axes", &cnt);
  if (!a) {
    for (int i = 0; i < rank; i++)
      ax[i] = i;
    *na = rank;
    return true;
  }
  if (cnt > rank)
    return infer_fail(d, n, "axes has %d entries, more than input 0's rank %d", cnt, rank);
  bool seen[IR_MAX_RANK] = {false};
  for (int i = 0; i < cnt; i++) {
    if (!shape_axis(a[i], rank, &ax[i]))
      return infer_fail(d, n, "axes[%d] = %lld is out of range for rank %d", i, (long long)a[i], rank);
    if (seen[ax[i]])
      return infer_fail(d, n, "axes repeats axis %d", ax[i]);
    seen[ax[i]] = true;
  }
  *na = cnt;
  return true;
}

/* Scales of a constant input or the Upsample-7 attribute; false when unknown. */
static bool read_scales(const Node *n, int slot, double *sc, int *cnt) {
  if (slot < 0) {
    const Attr *a = ir_attr(n, "scales");
    if (!a || a->kind != AT_FLOATS || a->n > IR_MAX_RANK)
      return false;
    for (int i = 0; i < a->n; i++)
      sc[i] = a->u.fs[i];
    *cnt = a->n;
    return true;
  }
  const Value *v = n->in[slot];
  if (v->kind != VK_CONST || v->konst->numel > IR_MAX_RANK)
    return false;
  for (int64_t i = 0; i < v->konst->numel; i++)
    sc[i] = tensor_get_f64(v->konst, i);
  *cnt = (int)v->konst->numel;
  return true;
}

static bool infer_resize_common(Node *n, Diag *d, int scales_slot, int sizes_slot) {
  const Shape *xs = &n->in[0]->shape;
  if (!check_resize_attrs(n, d))
    return false;
  if (xs->rank < 0) {
    Shape u = shape_unknown();
    infer_set(n, 0, n->in[0]->dt, &u);
    return true;
  }
  int r = xs->rank, ax[IR_MAX_RANK], na = 0;
  if (!resize_axes(n, d, r, ax, &na))
    return false;
  bool has_scales = scales_slot < 0 || present(n, scales_slot);
  bool has_sizes = sizes_slot >= 0 && present(n, sizes_slot);
  if (has_scales == has_sizes)
    return infer_fail(d, n, "exactly one of scales and sizes must be given");
  Shape ys = *xs;
  for (int i = 0; i < na; i++) {
    ys.d[ax[i]] = DIM_UNKNOWN;
    ys.sym[ax[i]] = NULL;
  }
  if (has_sizes && n->in[sizes_slot]->sval && n->in[sizes_slot]->n_sval == na &&
      strcmp(ir_attr_str(n, "keep_aspect_ratio_policy", "stretch"), "stretch") == 0) {
    /* -D ranges: sizes computed from shapes (interpolate(size=skip.shape[2:])) */
    Graph *root = n->g;
    while (root->parent)
      root = root->parent;
    for (int i = 0; i < na; i++)
      shape_set_dx(root, &ys, ax[i], n->in[sizes_slot]->sval[i]);
  } else if (has_sizes) {
    int64_t sz[IR_MAX_RANK];
    int cnt = 0;
    if (infer_const_ints(n, sizes_slot, sz, &cnt, IR_MAX_RANK)) {
      if (cnt != na)
        return infer_fail(d, n, "sizes has %d entries, expected %d", cnt, na);
      for (int i = 0; i < na; i++)
        if (sz[i] < 0)
          return infer_fail(d, n, "sizes[%d] is %lld, expected >= 0", i, (long long)sz[i]);
      const char *pol = ir_attr_str(n, "keep_aspect_ratio_policy", "stretch");
      bool stretch = strcmp(pol, "stretch") == 0, known = true;
      double s = strcmp(pol, "not_larger") == 0 ? INFINITY : -INFINITY;
      for (int i = 0; i < na; i++) {
        int64_t in = xs->d[ax[i]];
        if (in < 0) {
          known = false;
          continue;
        }
        if (stretch) {
          ys.d[ax[i]] = sz[i];
        } else if (in > 0) {
          double q = (double)sz[i] / (double)in;
          s = strcmp(pol, "not_larger") == 0 ? fmin(s, q) : fmax(s, q);
        }
      }
      if (!stretch && known)
        for (int i = 0; i < na; i++)
          ys.d[ax[i]] = (int64_t)(s * (double)xs->d[ax[i]] + 0.5);
    }
  } else {
    double sc[IR_MAX_RANK];
    int cnt = 0;
    if (read_scales(n, scales_slot, sc, &cnt)) {
      if (cnt != na)
        return infer_fail(d, n, "scales has %d entries, expected %d", cnt, na);
      for (int i = 0; i < na; i++) {
        if (!(sc[i] > 0))
          return infer_fail(d, n, "scales[%d] is %g, expected > 0", i, sc[i]);
        int64_t in = xs->d[ax[i]];
        if (in >= 0)
          ys.d[ax[i]] = (int64_t)floor(sc[i] * (double)in);
        else if (sc[i] == 1.0)  /* a symbolic dim scaled by 1 keeps its name */
          ys.sym[ax[i]] = xs->sym[ax[i]], ys.x[ax[i]] = xs->x[ax[i]];
        else if (xs->x[ax[i]]) { /* -D ranges: an integer scale, or 1/2^k (exact in floating point) */
          Graph *root = n->g;
          while (root->parent)
            root = root->parent;
          const DimExpr *o = NULL;
          double inv = 1.0 / sc[i];
          if (sc[i] == floor(sc[i]) && sc[i] <= 1024)
            o = dx_mul(n->g->arena, dx_const(n->g->arena, (int64_t)sc[i]), xs->x[ax[i]]);
          else if (inv == floor(inv) && inv <= 1024 && ((int64_t)inv & ((int64_t)inv - 1)) == 0)
            o = dx_floordiv(root, xs->x[ax[i]], (int64_t)inv);
          if (o)
            shape_set_dx(root, &ys, ax[i], o);
        }
      }
    }
  }
  if (sizes_slot >= 0 && ir_has_input(n, sizes_slot) && n->in[sizes_slot]->dt != DT_I64)
    return infer_fail(d, n, "input %d (sizes) has element type %s, expected i64", sizes_slot,
                      dtype_name(n->in[sizes_slot]->dt));
  if (scales_slot >= 0 && ir_has_input(n, scales_slot) && !is_float(n->in[scales_slot]->dt))
    return infer_fail(d, n, "input %d (scales) has element type %s, expected a float type",
                      scales_slot, dtype_name(n->in[scales_slot]->dt));
  infer_set(n, 0, n->in[0]->dt, &ys);
  return true;
}

bool infer_Resize(Node *n, Diag *d) {
  if (n->g->opset < 11) {
    if (n->n_in != 2)
      return infer_fail(d, n, "opset %lld Resize takes 2 inputs (X, scales), got %d",
                        (long long)n->g->opset, n->n_in);
    return infer_resize_common(n, d, 1, -1);
  }
  if (ir_has_input(n, 1) && !is_float(n->in[1]->dt))
    return infer_fail(d, n, "input 1 (roi) has element type %s, expected a float type",
                      dtype_name(n->in[1]->dt));
  return infer_resize_common(n, d, 2, 3);
}

bool infer_Upsample(Node *n, Diag *d) {
  if (n->g->opset < 9) {
    if (n->n_in != 1)
      return infer_fail(d, n, "opset %lld Upsample takes 1 input, got %d", (long long)n->g->opset,
                        n->n_in);
    if (!ir_attr(n, "scales"))
      return infer_fail(d, n, "attribute 'scales' is required");
    return infer_resize_common(n, d, -1, -1);
  }
  if (n->n_in != 2)
    return infer_fail(d, n, "Upsample takes 2 inputs (X, scales), got %d", n->n_in);
  return infer_resize_common(n, d, 1, -1);
}

/* ---- GridSample, AffineGrid ------------------------------------------------------- */

bool infer_GridSample(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape, *gs = &n->in[1]->shape;
  if (!want_float(n, d, 1, "grid") || !want_rank(n, d, 0, "X", 3, 5) ||
      !want_rank(n, d, 1, "grid", 3, 5))
    return false;
  static const char *const modes[] = {"bilinear", "nearest", "bicubic", "linear", "cubic", NULL};
  static const char *const pads[] = {"zeros", "border", "reflection", NULL};
  const char *mode = ir_attr_str(n, "mode", n->g->opset >= 20 ? "linear" : "bilinear");
  const char *pad = ir_attr_str(n, "padding_mode", "zeros");
  if (!one_of(mode, modes))
    return infer_fail(d, n, "mode '%s' is not supported", mode);
  if (!one_of(pad, pads))
    return infer_fail(d, n, "padding_mode '%s' is not supported", pad);
  if (xs->rank >= 0 && gs->rank >= 0) {
    if (xs->rank != gs->rank)
      return infer_fail(d, n, "input 1 (grid) has rank %d, expected %d like X", gs->rank, xs->rank);
    int64_t last = gs->d[gs->rank - 1];
    if (last >= 0 && last != xs->rank - 2)
      return infer_fail(d, n, "input 1 (grid) has %lld coordinates per point, expected %d",
                        (long long)last, xs->rank - 2);
    if (xs->d[0] >= 0 && gs->d[0] >= 0 && xs->d[0] != gs->d[0])
      return infer_fail(d, n, "grid batch %lld differs from X batch %lld", (long long)gs->d[0],
                        (long long)xs->d[0]);
  }
  Shape ys = shape_unknown();
  if (xs->rank >= 0 && gs->rank >= 0) {
    ys.rank = xs->rank;
    ys.d[0] = xs->d[0], ys.sym[0] = xs->sym[0], ys.x[0] = xs->x[0];
    ys.d[1] = xs->d[1], ys.sym[1] = xs->sym[1], ys.x[1] = xs->x[1];
    for (int i = 2; i < ys.rank; i++)
      ys.d[i] = gs->d[i - 1], ys.sym[i] = gs->sym[i - 1], ys.x[i] = gs->x[i - 1];
  }
  infer_set(n, 0, n->in[0]->dt, &ys);
  return true;
}

bool infer_AffineGrid(Node *n, Diag *d) {
  if (!want_float(n, d, 0, "theta") || !want_rank(n, d, 0, "theta", 3, 3) ||
      !want_rank(n, d, 1, "size", 1, 1))
    return false;
  if (n->in[1]->dt != DT_I64)
    return infer_fail(d, n, "input 1 (size) has element type %s, expected i64",
                      dtype_name(n->in[1]->dt));
  int64_t sz[IR_MAX_RANK];
  int cnt = 0;
  Shape ys = shape_unknown();
  const Shape *ts = &n->in[0]->shape;
  if (infer_const_ints(n, 1, sz, &cnt, IR_MAX_RANK)) {
    if (cnt != 4 && cnt != 5)
      return infer_fail(d, n, "size has %d entries, expected 4 (N, C, H, W) or 5", cnt);
    int nd = cnt - 2;
    for (int i = 0; i < cnt; i++)
      if (sz[i] < 1)
        return infer_fail(d, n, "size[%d] is %lld, expected >= 1", i, (long long)sz[i]);
    if (ts->rank == 3 && ((ts->d[1] >= 0 && ts->d[1] != nd) || (ts->d[2] >= 0 && ts->d[2] != nd + 1)))
      return infer_fail(d, n, "theta has shape [N, %lld, %lld], expected [N, %d, %d]",
                        (long long)ts->d[1], (long long)ts->d[2], nd, nd + 1);
    if (ts->rank == 3 && ts->d[0] >= 0 && ts->d[0] != sz[0])
      return infer_fail(d, n, "theta batch %lld differs from size[0] %lld", (long long)ts->d[0],
                        (long long)sz[0]);
    ys.rank = cnt;
    ys.d[0] = sz[0];
    for (int i = 0; i < nd; i++)
      ys.d[1 + i] = sz[2 + i];
    ys.d[cnt - 1] = nd;
  } else if (n->in[1]->shape.rank == 1 && n->in[1]->shape.d[0] >= 0) {
    if (n->in[1]->shape.d[0] != 4 && n->in[1]->shape.d[0] != 5) /* (the fuzzer: 17 entries overran ys) */
      return infer_fail(d, n, "size has %lld entries, expected 4 (N, C, H, W) or 5",
                        (long long)n->in[1]->shape.d[0]);
    ys.rank = (int)n->in[1]->shape.d[0];
    for (int i = 0; i < ys.rank; i++)
      ys.d[i] = DIM_UNKNOWN;
  }
  infer_set(n, 0, n->in[0]->dt, &ys);
  return true;
}

/* ---- RoiAlign --------------------------------------------------------------------- */

bool infer_RoiAlign(Node *n, Diag *d) {
  if (!want_float(n, d, 0, "X") || !want_rank(n, d, 0, "X", 4, 4) ||
      !want_rank(n, d, 1, "rois", 2, 2) || !want_rank(n, d, 2, "batch_indices", 1, 1))
    return false;
  if (n->in[1]->dt != n->in[0]->dt)
    return infer_fail(d, n, "input 1 (rois) has element type %s, expected %s like X",
                      dtype_name(n->in[1]->dt), dtype_name(n->in[0]->dt));
  if (!dtype_is_int(n->in[2]->dt))
    return infer_fail(d, n, "input 2 (batch_indices) has element type %s, expected an integer type",
                      dtype_name(n->in[2]->dt));
  const Shape *rs = &n->in[1]->shape, *bs = &n->in[2]->shape;
  if (rs->rank == 2 && rs->d[1] >= 0 && rs->d[1] != 4)
    return infer_fail(d, n, "input 1 (rois) has %lld columns, expected 4", (long long)rs->d[1]);
  if (rs->rank == 2 && bs->rank == 1 && rs->d[0] >= 0 && bs->d[0] >= 0 && rs->d[0] != bs->d[0])
    return infer_fail(d, n, "rois has %lld rows but batch_indices %lld entries",
                      (long long)rs->d[0], (long long)bs->d[0]);
  const char *mode = ir_attr_str(n, "mode", "avg");
  if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
    return infer_fail(d, n, "mode '%s' is not avg or max", mode);
  const char *ctm = ir_attr_str(n, "coordinate_transformation_mode", "half_pixel");
  if (strcmp(ctm, "half_pixel") != 0 && strcmp(ctm, "output_half_pixel") != 0)
    return infer_fail(d, n, "coordinate_transformation_mode '%s' is not half_pixel or output_half_pixel",
                      ctm);
  int64_t oh = ir_attr_int(n, "output_height", 1), ow = ir_attr_int(n, "output_width", 1);
  if (oh < 1 || ow < 1)
    return infer_fail(d, n, "output_height and output_width must be >= 1, got %lld and %lld",
                      (long long)oh, (long long)ow);
  if (ir_attr_int(n, "sampling_ratio", 0) < 0)
    return infer_fail(d, n, "sampling_ratio must be >= 0");
  const Shape *xs = &n->in[0]->shape;
  Shape ys = shape_unknown();
  ys.rank = 4;
  ys.d[0] = rs->rank == 2 ? rs->d[0] : DIM_UNKNOWN;
  ys.sym[0] = rs->rank == 2 ? rs->sym[0] : NULL;
  ys.d[1] = xs->rank == 4 ? xs->d[1] : DIM_UNKNOWN;
  ys.sym[1] = xs->rank == 4 ? xs->sym[1] : NULL;
  ys.d[2] = oh;
  ys.d[3] = ow;
  infer_set(n, 0, n->in[0]->dt, &ys);
  return true;
}

/* ---- DeformConv ------------------------------------------------------------------- */

bool infer_DeformConv(Node *n, Diag *d) {
  const Shape *xs = &n->in[0]->shape, *ws = &n->in[1]->shape, *os = &n->in[2]->shape;
  if (!want_float(n, d, 0, "X") || !want_rank(n, d, 0, "X", 4, 4) || !want_rank(n, d, 1, "W", 4, 4) ||
      !want_rank(n, d, 2, "offset", 4, 4))
    return false;
  for (int i = 1; i < n->n_in; i++)
    if (ir_has_input(n, i) && n->in[i]->dt != n->in[0]->dt)
      return infer_fail(d, n, "input %d has element type %s, expected %s like X", i,
                        dtype_name(n->in[i]->dt), dtype_name(n->in[0]->dt));
  int64_t group = ir_attr_int(n, "group", 1), og = ir_attr_int(n, "offset_group", 1);
  if (group < 1 || og < 1)
    return infer_fail(d, n, "group and offset_group must be >= 1");
  int64_t k[2], st[2], dl[2], pads[4];
  if (!infer_attr_ints(n, d, "strides", 2, 1, 1, st) ||
      !infer_attr_ints(n, d, "dilations", 2, 1, 1, dl) ||
      !infer_attr_ints(n, d, "pads", 4, 0, 0, pads))
    return false;
  if (ws->rank == 4) {
    k[0] = ws->d[2], k[1] = ws->d[3];
  } else {
    k[0] = k[1] = DIM_UNKNOWN;
  }
  if (ir_attr(n, "kernel_shape") && !infer_attr_ints(n, d, "kernel_shape", 2, 1, 1, k))
    return false;
  if (xs->rank == 4 && ws->rank == 4 && xs->d[1] >= 0 && ws->d[1] >= 0 &&
      xs->d[1] != ws->d[1] * group)
    return infer_fail(d, n, "X has %lld channels, expected W's %lld times group %lld",
                      (long long)xs->d[1], (long long)ws->d[1], (long long)group);
  if (ws->rank == 4 && ws->d[0] >= 0 && ws->d[0] % group != 0)
    return infer_fail(d, n, "W has %lld output channels, not a multiple of group %lld",
                      (long long)ws->d[0], (long long)group);
  if (xs->rank == 4 && xs->d[1] >= 0 && xs->d[1] % og != 0)
    return infer_fail(d, n, "X has %lld channels, not a multiple of offset_group %lld",
                      (long long)xs->d[1], (long long)og);
  if (os->rank == 4 && os->d[1] >= 0 && k[0] >= 0 && k[1] >= 0 && os->d[1] != og * k[0] * k[1] * 2)
    return infer_fail(d, n, "offset has %lld channels, expected %lld", (long long)os->d[1],
                      (long long)(og * k[0] * k[1] * 2));
  Shape ys = shape_unknown();
  ys.rank = 4;
  ys.d[0] = xs->rank == 4 ? xs->d[0] : DIM_UNKNOWN;
  ys.d[1] = ws->rank == 4 ? ws->d[0] : DIM_UNKNOWN;
  for (int i = 0; i < 2; i++) {
    int64_t in = xs->rank == 4 ? xs->d[2 + i] : DIM_UNKNOWN;
    int64_t o = DIM_UNKNOWN;
    if (in >= 0 && k[i] >= 0) {
      int64_t span = (k[i] - 1) * dl[i] + 1, room = in + pads[i] + pads[2 + i] - span;
      if (room < 0)
        return infer_fail(d, n, "kernel extent %lld exceeds the padded input %lld",
                          (long long)span, (long long)(in + pads[i] + pads[2 + i]));
      o = room / st[i] + 1;
    }
    if (os->rank == 4 && os->d[2 + i] >= 0) {
      if (o >= 0 && os->d[2 + i] != o)
        return infer_fail(d, n, "offset spatial dim %d is %lld, expected %lld", i,
                          (long long)os->d[2 + i], (long long)o);
      o = os->d[2 + i];
    }
    ys.d[2 + i] = o;
  }
  if (ir_has_input(n, 4)) {
    const Shape *ms = &n->in[4]->shape;
    if (ms->rank == 4 && ms->d[1] >= 0 && k[0] >= 0 && k[1] >= 0 && ms->d[1] != og * k[0] * k[1])
      return infer_fail(d, n, "mask has %lld channels, expected %lld", (long long)ms->d[1],
                        (long long)(og * k[0] * k[1]));
  }
  infer_set(n, 0, n->in[0]->dt, &ys);
  return true;
}
