/* emit_dynamic.c - C kernels of the ops with data-dependent output extents
 * (opsk family): NonZero, Unique, NonMaxSuppression.
 *
 * Each output marked in Value.dyn_dims has a buffer of its upper-bound size
 * and a parameter `int64_t *D<slot>` where the kernel writes the actual dims;
 * the data is stored row-major in those actual dims at the start of the
 * buffer (docs/abi.md).
 *   NonZero  counts first, then writes each coordinate row (no scratch).
 *   Unique   a stable bottom-up merge sort of the slice indices (scratch), then
 *            groups of equal slices; unsorted order ranks the groups by first
 *            occurrence. O(A log A) slice comparisons.
 *   NMS      per (batch, class): candidates above the score threshold, merge
 *            sorted by descending score (stable: ties keep the lower index
 *            first, as the reference), then greedy selection against the boxes
 *            already selected for that class, read back from the output.
 * The scratch sizes here are what codegen/target.c gives the planner.
 */
#include "codegen.h"

#include <string.h>

#define LL(x) ((long long)(x))

/* src (an element of type t) as a value that compares like the element. */
static const char *cmp_load(DType t, const char *src, char *buf, size_t n) {
  if (t == DT_F16 || t == DT_BF16)
    snprintf(buf, n, "%s(%s)", t == DT_F16 ? "onnxc_f16_to_f32" : "onnxc_bf16_to_f32", src);
  else
    snprintf(buf, n, "%s", src);
  return buf;
}

bool emitc_NonZero(EmitC *e, const Node *n) {
  const Shape *x = &n->in[0]->shape;
  int64_t numel = 1, strides[IR_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    numel *= x->d[i];
  ec_strides(x, strides);
  char nz[128];
  DType t = n->in[0]->dt;
  if (t == DT_F16 || t == DT_BF16)
    snprintf(nz, sizeof nz, "(X0[i] & 0x7fffu) != 0");
  else
    snprintf(nz, sizeof nz, "X0[i] != 0");
  ec_line(e, "ptrdiff_t i, cnt = 0, k = 0;");
  ec_line(e, "for (i = 0; i < %lld; i++)", LL(numel));
  ec_line(e, "  cnt += %s;", nz);
  ec_line(e, "D0[0] = %d;", x->rank);
  ec_line(e, "D0[1] = (int64_t)cnt;");
  if (x->rank == 0) {
    ec_line(e, "(void)k;");
    ec_line(e, "(void)Y0;");
    return true;
  }
  ec_line(e, "for (i = 0; i < %lld; i++) {", LL(numel));
  ec_line(e, "if (!(%s))", nz);
  ec_line(e, "  continue;");
  for (int r = 0; r < x->rank; r++)
    ec_line(e, "Y0[%d * cnt + k] = (int64_t)(i / %lld %% %lld);", r, LL(strides[r]), LL(x->d[r]));
  ec_line(e, "k++;");
  ec_line(e, "}");
  return true;
}

/* Emits `c = cmp(slice p, slice q)` (-1, 0, 1) over the Q = outer * inner
 * elements of the slices of X0 viewed as [outer, A, inner]. */
static void emit_slice_cmp(EmitC *e, DType t, int64_t len, int64_t inner, int64_t q_n, const char *p,
                           const char *q) {
  char a[256], b[256], sa[128], sb[128];
  snprintf(sa, sizeof sa, "X0[(s / %lld) * %lld + (%s) * %lld + s %% %lld]", LL(inner), LL(len * inner), p,
           LL(inner), LL(inner));
  snprintf(sb, sizeof sb, "X0[(s / %lld) * %lld + (%s) * %lld + s %% %lld]", LL(inner), LL(len * inner), q,
           LL(inner), LL(inner));
  ec_line(e, "c = 0;");
  ec_line(e, "for (s = 0; s < %lld && c == 0; s++) {", LL(q_n));
  ec_line(e, "const double va = (double)%s, vb = (double)%s;", cmp_load(t, sa, a, sizeof a),
          cmp_load(t, sb, b, sizeof b));
  ec_line(e, "c = va < vb ? -1 : va > vb ? 1 : 0;");
  ec_line(e, "}");
}

bool emitc_Unique(EmitC *e, const Node *n) {
  const Shape *x = &n->in[0]->shape;
  DType t = n->in[0]->dt;
  int axis = (int)ir_attr_int(n, "onnxc.axis", -1);
  bool sorted = ir_attr_int(n, "sorted", 1) != 0;
  int64_t len = 1, outer = 1, inner = 1;
  if (axis < 0) {
    for (int i = 0; i < x->rank; i++)
      len *= x->d[i];
  } else {
    len = x->d[axis];
    for (int i = 0; i < axis; i++)
      outer *= x->d[i];
    for (int i = axis + 1; i < x->rank; i++)
      inner *= x->d[i];
  }
  int64_t q_n = outer * inner;
  if (t == DT_I64 || t == DT_U64)  /* exact beyond 2^53: compare in the element type */
    t = DT_UNDEF;
  ec_line(e, "int64_t *perm = (int64_t *)(void *)S, *tmp = perm + %lld, *grp = tmp + %lld;", LL(len), LL(len));
  ec_line(e, "int64_t *first = grp + %lld, *pos = first + %lld;", LL(len), LL(len));
  ec_line(e, "ptrdiff_t i, j, w, s, lo, u = 0;");
  ec_line(e, "int c;");
  ec_line(e, "for (i = 0; i < %lld; i++)", LL(len));
  ec_line(e, "  perm[i] = i;");
  /* Bottom-up merge sort, stable: equal slices keep their original order. */
  ec_line(e, "for (w = 1; w < %lld; w *= 2) {", LL(len));
  ec_line(e, "for (lo = 0; lo < %lld; lo += 2 * w) {", LL(len));
  ec_line(e, "ptrdiff_t mid = lo + w < %lld ? lo + w : %lld, hi = lo + 2 * w < %lld ? lo + 2 * w : %lld, o = lo;",
          LL(len), LL(len), LL(len), LL(len));
  ec_line(e, "i = lo;");
  ec_line(e, "j = mid;");
  ec_line(e, "while (i < mid && j < hi) {");
  if (t == DT_UNDEF) {
    char sa[160], sb[160];
    snprintf(sa, sizeof sa, "X0[(s / %lld) * %lld + perm[j] * %lld + s %% %lld]", LL(inner), LL(len * inner),
             LL(inner), LL(inner));
    snprintf(sb, sizeof sb, "X0[(s / %lld) * %lld + perm[i] * %lld + s %% %lld]", LL(inner), LL(len * inner),
             LL(inner), LL(inner));
    ec_line(e, "c = 0;");
    ec_line(e, "for (s = 0; s < %lld && c == 0; s++)", LL(q_n));
    ec_line(e, "  c = %s < %s ? -1 : %s > %s ? 1 : 0;", sa, sb, sa, sb);
  } else {
    emit_slice_cmp(e, t, len, inner, q_n, "perm[j]", "perm[i]");
  }
  ec_line(e, "tmp[o++] = c < 0 ? perm[j++] : perm[i++];");
  ec_line(e, "}");
  ec_line(e, "while (i < mid)");
  ec_line(e, "  tmp[o++] = perm[i++];");
  ec_line(e, "while (j < hi)");
  ec_line(e, "  tmp[o++] = perm[j++];");
  ec_line(e, "}");
  ec_line(e, "for (i = 0; i < %lld; i++)", LL(len));
  ec_line(e, "  perm[i] = tmp[i];");
  ec_line(e, "}");
  /* Groups of equal slices, in sorted order; first[g]: first occurrence. */
  ec_line(e, "for (i = 0; i < %lld; i++) {", LL(len));
  if (t == DT_UNDEF) {
    char sa[160], sb[160];
    snprintf(sa, sizeof sa, "X0[(s / %lld) * %lld + perm[i] * %lld + s %% %lld]", LL(inner), LL(len * inner),
             LL(inner), LL(inner));
    snprintf(sb, sizeof sb, "X0[(s / %lld) * %lld + perm[i - 1] * %lld + s %% %lld]", LL(inner),
             LL(len * inner), LL(inner), LL(inner));
    ec_line(e, "c = 1;");
    ec_line(e, "for (s = 0; i > 0 && s < %lld && c != 0; s++)", LL(q_n));
    ec_line(e, "  c = %s != %s;", sa, sb);
    ec_line(e, "if (i > 0 && c == 0) {");
  } else {
    ec_line(e, "c = 1;");
    ec_line(e, "if (i > 0) {");
    emit_slice_cmp(e, t, len, inner, q_n, "perm[i]", "perm[i - 1]");
    ec_line(e, "}");
    ec_line(e, "if (i > 0 && c == 0) {");
  }
  ec_line(e, "grp[i] = u - 1;");
  ec_line(e, "continue;");
  ec_line(e, "}");
  ec_line(e, "first[u] = perm[i];");
  ec_line(e, "grp[i] = u++;");
  ec_line(e, "}");
  if (sorted) {
    ec_line(e, "for (i = 0; i < u; i++)");
    ec_line(e, "  pos[i] = i;");
  } else {
    /* Rank the groups by first occurrence: tmp maps an index to its group. */
    ec_line(e, "for (i = 0; i < %lld; i++)", LL(len));
    ec_line(e, "  tmp[i] = -1;");
    ec_line(e, "for (i = 0; i < u; i++)");
    ec_line(e, "  tmp[first[i]] = i;");
    ec_line(e, "for (i = 0, j = 0; i < %lld; i++)", LL(len));
    ec_line(e, "  if (tmp[i] >= 0)");
    ec_line(e, "    pos[tmp[i]] = j++;");
  }
  if (ec_has_output(n, 0)) {
    ec_line(e, "for (i = 0; i < u; i++)");
    ec_line(e, "  for (s = 0; s < %lld; s++)", LL(q_n));
    ec_line(e, "    Y0[(s / %lld) * u * %lld + pos[i] * %lld + s %% %lld] = X0[(s / %lld) * %lld + first[i] * %lld + s %% %lld];",
            LL(inner), LL(inner), LL(inner), LL(inner), LL(inner), LL(len * inner), LL(inner), LL(inner));
    for (int k = 0; k < n->out[0]->shape.rank; k++)
      if (axis < 0 || k == axis)
        ec_line(e, "D0[%d] = (int64_t)u;", k);
      else
        ec_line(e, "D0[%d] = %lld;", k, LL(x->d[k]));
  }
  if (ec_has_output(n, 1)) {
    ec_line(e, "for (i = 0; i < u; i++)");
    ec_line(e, "  Y1[pos[i]] = first[i];");
    ec_line(e, "D1[0] = (int64_t)u;");
  }
  if (ec_has_output(n, 2)) {
    ec_line(e, "for (i = 0; i < %lld; i++)", LL(len));
    ec_line(e, "  Y2[perm[i]] = pos[grp[i]];");
  }
  if (ec_has_output(n, 3)) {
    ec_line(e, "for (i = 0; i < u; i++)");
    ec_line(e, "  Y3[i] = 0;");
    ec_line(e, "for (i = 0; i < %lld; i++)", LL(len));
    ec_line(e, "  Y3[pos[grp[i]]]++;");
    ec_line(e, "D3[0] = (int64_t)u;");
  }
  return true;
}

/* Corners <x>0 <= <x>1, <y>0 <= <y>1 of the box b[4]: [x_center, y_center,
 * width, height] when center_point_box, else two corners [y, x, y, x] in either order. */
static void emit_corners(EmitC *e, bool center, const char *b, const char *x, const char *y) {
  if (center) {
    ec_line(e, "%s0 = %s[0] - %s[2] / 2;", x, b, b);
    ec_line(e, "%s1 = %s[0] + %s[2] / 2;", x, b, b);
    ec_line(e, "%s0 = %s[1] - %s[3] / 2;", y, b, b);
    ec_line(e, "%s1 = %s[1] + %s[3] / 2;", y, b, b);
  } else {
    ec_line(e, "%s0 = %s[1] < %s[3] ? %s[1] : %s[3];", x, b, b, b, b);
    ec_line(e, "%s1 = %s[1] < %s[3] ? %s[3] : %s[1];", x, b, b, b, b);
    ec_line(e, "%s0 = %s[0] < %s[2] ? %s[0] : %s[2];", y, b, b, b, b);
    ec_line(e, "%s1 = %s[0] < %s[2] ? %s[2] : %s[0];", y, b, b, b, b);
  }
}

bool emitc_NonMaxSuppression(EmitC *e, const Node *n) {
  const Shape *b = &n->in[0]->shape, *sc = &n->in[1]->shape;
  int64_t nb = b->d[0], nbox = b->d[1], ncls = sc->d[1];
  int64_t cap = n->out[0]->shape.d[0];
  int64_t per_cap = nb * ncls > 0 ? cap / (nb * ncls) : 0;
  DType t = n->in[0]->dt;
  DType ct = t == DT_F64 ? DT_F64 : DT_F32;
  const char *cty = dtype_ctype(ct);
  bool center = ir_attr_int(n, "center_point_box", 0) != 0;
  char lb[128], ls[128];
  Buf tb;
  buf_init(&tb);
  ec_ew_load(&tb, t, ct, "X0[bk + k]");
  snprintf(lb, sizeof lb, "%s", tb.s);
  tb.len = 0;
  buf_puts(&tb, "");
  ec_ew_load(&tb, t, ct, "X1[sb + k]");
  snprintf(ls, sizeof ls, "%s", tb.s);
  buf_free(&tb);
  ec_line(e, "int64_t *order = (int64_t *)(void *)S, *tmp = order + %lld;", LL(nbox > 0 ? nbox : 1));
  ec_line(e, "ptrdiff_t b, c, i, j, k, w, lo, total = 0;");
  if (ir_has_input(n, 2)) {
    ec_line(e, "int64_t mx = X2[0] < 0 ? 0 : X2[0];");
    ec_line(e, "if (mx > %lld)", LL(per_cap));
    ec_line(e, "  mx = %lld;", LL(per_cap));
  } else {
    ec_line(e, "const int64_t mx = 0;");
  }
  ec_line(e, "const %s iou_t = %s;", cty, ir_has_input(n, 3) ? "X3[0]" : "0");
  if (ir_has_input(n, 4))
    ec_line(e, "const %s score_t = X4[0];", cty);
  ec_line(e, "(void)tmp;");
  ec_line(e, "(void)lo;");
  ec_line(e, "(void)w;");
  ec_line(e, "for (b = 0; b < %lld; b++)", LL(nb));
  ec_line(e, "for (c = 0; c < %lld; c++) {", LL(ncls));
  ec_line(e, "const ptrdiff_t sb = (b * %lld + c) * %lld, bb = b * %lld, start = total;", LL(ncls), LL(nbox),
          LL(nbox * 4));
  ec_line(e, "ptrdiff_t cand = 0;");
  ec_line(e, "for (k = 0; k < %lld; k++)", LL(nbox));
  if (ir_has_input(n, 4))
    ec_line(e, "  if (%s > score_t)", ls);
  ec_line(e, "    order[cand++] = k;");
  /* Stable merge sort by descending score. */
  ec_line(e, "for (w = 1; w < cand; w *= 2) {");
  ec_line(e, "for (lo = 0; lo < cand; lo += 2 * w) {");
  ec_line(e, "ptrdiff_t mid = lo + w < cand ? lo + w : cand, hi = lo + 2 * w < cand ? lo + 2 * w : cand, o = lo;");
  ec_line(e, "i = lo;");
  ec_line(e, "j = mid;");
  ec_line(e, "while (i < mid && j < hi) {");
  ec_line(e, "%s si, sj;", cty);
  ec_line(e, "k = order[i];");
  ec_line(e, "si = %s;", ls);
  ec_line(e, "k = order[j];");
  ec_line(e, "sj = %s;", ls);
  ec_line(e, "tmp[o++] = sj > si ? order[j++] : order[i++];");
  ec_line(e, "}");
  ec_line(e, "while (i < mid)");
  ec_line(e, "  tmp[o++] = order[i++];");
  ec_line(e, "while (j < hi)");
  ec_line(e, "  tmp[o++] = order[j++];");
  ec_line(e, "}");
  ec_line(e, "for (i = 0; i < cand; i++)");
  ec_line(e, "  order[i] = tmp[i];");
  ec_line(e, "}");
  /* Greedy selection: a candidate survives unless its IOU with a box already
   * selected for this class exceeds the threshold. */
  ec_line(e, "for (i = 0; i < cand && total - start < mx; i++) {");
  ec_line(e, "int keep = 1;");
  ec_line(e, "%s a[4], ax0, ax1, ay0, ay1;", cty);
  ec_line(e, "for (k = 0; k < 4; k++) {");
  ec_line(e, "const ptrdiff_t bk = bb + order[i] * 4;");
  ec_line(e, "a[k] = %s;", lb);
  ec_line(e, "}");
  emit_corners(e, center, "a", "ax", "ay");
  ec_line(e, "for (j = start; j < total && keep; j++) {");
  ec_line(e, "%s q[4], bx0, bx1, by0, by1, ix0, ix1, iy0, iy1, inter, ua, ub;", cty);
  ec_line(e, "for (k = 0; k < 4; k++) {");
  ec_line(e, "const ptrdiff_t bk = bb + Y0[j * 3 + 2] * 4;");
  ec_line(e, "q[k] = %s;", lb);
  ec_line(e, "}");
  emit_corners(e, center, "q", "bx", "by");
  ec_line(e, "ix0 = ax0 > bx0 ? ax0 : bx0;");
  ec_line(e, "ix1 = ax1 < bx1 ? ax1 : bx1;");
  ec_line(e, "iy0 = ay0 > by0 ? ay0 : by0;");
  ec_line(e, "iy1 = ay1 < by1 ? ay1 : by1;");
  ec_line(e, "if (ix1 <= ix0 || iy1 <= iy0)");
  ec_line(e, "  continue;");
  ec_line(e, "inter = (ix1 - ix0) * (iy1 - iy0);");
  ec_line(e, "ua = (ax1 - ax0) * (ay1 - ay0);");
  ec_line(e, "ub = (bx1 - bx0) * (by1 - by0);");
  ec_line(e, "if (inter <= 0 || ua <= 0 || ub <= 0 || ua + ub - inter <= 0)");
  ec_line(e, "  continue;");
  ec_line(e, "if (inter / (ua + ub - inter) > iou_t)");
  ec_line(e, "  keep = 0;");
  ec_line(e, "}");
  ec_line(e, "if (!keep)");
  ec_line(e, "  continue;");
  ec_line(e, "Y0[total * 3] = (int64_t)b;");
  ec_line(e, "Y0[total * 3 + 1] = (int64_t)c;");
  ec_line(e, "Y0[total * 3 + 2] = order[i];");
  ec_line(e, "total++;");
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "D0[0] = (int64_t)total;");
  ec_line(e, "D0[1] = 3;");
  return true;
}
