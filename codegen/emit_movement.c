/* emit_movement.c - C kernels for data-movement and indexing ops.
 *
 * Most kernels here are strided copies described by a Walk: per output dim
 * an extent, an input stride (0 broadcasts, negative walks backwards) and an
 * output stride. A Walk drops extent-1 dims and merges dims whose strides
 * chain, so the innermost loop moves the longest contiguous run (Slice,
 * Expand, Tile, Split, DepthToSpace, SpaceToDepth). Pad copies the interior
 * of each row as one run and maps only the pad positions. Index-driven kernels
 * (GatherElements, GatherND, Scatter*, ReverseSequence) validate every index
 * before writing and return ONNXC_ERR_BAD_INDEX on a bad one; negative indices
 * count from the end. Scatter reductions compute f16/bf16 in float and
 * integer add/mul in uint64 (wraparound without signed-overflow UB).
 * Operands that fix the shape (starts, pads, repeats...) are read from their
 * constants; run-time scalars (Pad's constant_value, Trilu's k, Range's
 * start/delta, OneHot's values) are read from the kernel's inputs.
 */
#include "codegen.h"

#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

/* Kernels here index elements; packed sub-byte types have no element address. */
static bool byte_elems(EmitC *e, const Node *n, const Value *v) {
  if (dtype_bits(v->dt) >= 8)
    return true;
  return diag_error(e->d, n, "%s of packed %s data is not supported", n->op_type, dtype_name(v->dt));
}

static const char *ct(const Value *v) { return dtype_ctype(v->dt); }

/* Integer list from constant input i, else attribute `attr`; false when neither. */
static bool const_ints(const Node *n, int i, const char *attr, int64_t *v, int *count, int max) {
  if (i >= 0 && ir_has_input(n, i)) {
    const Value *x = n->in[i];
    if (x->kind != VK_CONST || x->konst->numel > max)
      return false;
    for (int64_t k = 0; k < x->konst->numel; k++)
      v[k] = tensor_get_i64(x->konst, k);
    *count = (int)x->konst->numel;
    return true;
  }
  int c = 0;
  const int64_t *a = attr ? ir_attr_ints(n, attr, &c) : NULL;
  if (!a || c > max)
    return false;
  memcpy(v, a, (size_t)c * sizeof *v);
  *count = c;
  return true;
}

static bool need_const(EmitC *e, const Node *n, int i, const char *what) {
  return diag_error(e->d, n, "input %d (%s) must be a compile-time constant for the C target", i, what);
}

/* C literal of element i of t in t's own C type (f16/bf16/f8 as bit patterns). */
static void elem_literal(Buf *b, const Tensor *t, int64_t i) {
  char tmp[64];
  const char *c = dtype_ctype(t->dt);
  switch (t->dt) {
  case DT_F32:
  case DT_F64:
    buf_puts(b, ec_literal(t->dt, tensor_get_f64(t, i), tmp, sizeof tmp));
    return;
  case DT_F16:
  case DT_BF16:
  case DT_U16:
    buf_printf(b, "(uint16_t)%u", (unsigned)((const uint16_t *)t->data)[i]);
    return;
  case DT_U64:
    buf_printf(b, "%lluULL", (unsigned long long)((const uint64_t *)t->data)[i]);
    return;
  case DT_I64: {
    int64_t v = tensor_get_i64(t, i);
    if (v == INT64_MIN)
      buf_puts(b, "(-9223372036854775807LL - 1)");
    else
      buf_printf(b, "%lldLL", (long long)v);
    return;
  }
  case DT_U32:
    buf_printf(b, "%luUL", (unsigned long)((const uint32_t *)t->data)[i]);
    return;
  case DT_I32: {
    int64_t v = tensor_get_i64(t, i);
    buf_printf(b, v == INT32_MIN ? "(-2147483647 - 1)" : "%lld", (long long)v);
    return;
  }
  default:
    /* 8- and 16-bit integers, bool and the f8 types: the stored byte(s). */
    if (dtype_bits(t->dt) == 8)
      buf_printf(b, "(%s)%d", c, dtype_is_signed(t->dt) ? (int)((const int8_t *)t->data)[i]
                                                         : (int)((const uint8_t *)t->data)[i]);
    else
      buf_printf(b, "(%s)%lld", c, (long long)tensor_get_i64(t, i));
  }
}

/* C literal of the number v in type t (float values converted, ints truncated). */
static void num_literal(Buf *b, DType t, double v) {
  char tmp[64];
  if (t == DT_F16)
    buf_printf(b, "(uint16_t)%u", (unsigned)ir_f32_to_f16((float)v));
  else if (t == DT_BF16)
    buf_printf(b, "(uint16_t)%u", (unsigned)ir_f32_to_bf16((float)v));
  else if (t == DT_BOOL)
    buf_puts(b, v != 0 ? "(uint8_t)1" : "(uint8_t)0");
  else if (t == DT_F32 || t == DT_F64)
    buf_puts(b, ec_literal(t, v, tmp, sizeof tmp));
  else
    buf_printf(b, "(%s)%s", dtype_ctype(t), ec_literal(t, v, tmp, sizeof tmp));
}

/* ---- strided walks ------------------------------------------------------------ */

#define WALK_MAX (2 * IR_MAX_RANK + 2)

typedef struct Walk {
  int rank;
  int64_t ext[WALK_MAX];
  int64_t is[WALK_MAX];   /* input stride per dim, elements */
  int64_t os[WALK_MAX];   /* output stride per dim */
  int64_t ib, ob;         /* base offsets */
} Walk;

static void walk_add(Walk *w, int64_t ext, int64_t is, int64_t os) {
  IR_ASSERT(w->rank < WALK_MAX);
  w->ext[w->rank] = ext;
  w->is[w->rank] = is;
  w->os[w->rank] = os;
  w->rank++;
}

/* Drops extent-1 dims and merges each dim into the next inner one when both
 * strides chain. False when the walk has no elements. */
static bool walk_simplify(Walk *w) {
  Walk o = {0};
  o.ib = w->ib;
  o.ob = w->ob;
  for (int j = 0; j < w->rank; j++) {
    if (w->ext[j] == 0)
      return false;
    if (w->ext[j] == 1)
      continue;
    int l = o.rank - 1;
    if (l >= 0 && o.is[l] == w->is[j] * w->ext[j] && o.os[l] == w->os[j] * w->ext[j]) {
      o.ext[l] *= w->ext[j];
      o.is[l] = w->is[j];
      o.os[l] = w->os[j];
    } else {
      walk_add(&o, w->ext[j], w->is[j], w->os[j]);
    }
  }
  *w = o;
  return true;
}

/* "base + i0 * s0 + ..." over loop variables `v`0.. of the walk. */
static void idx_expr(Buf *b, const char *v, int64_t base, const int64_t *str, int rank) {
  bool any = false;
  for (int m = 0; m < rank; m++) {
    int64_t s = str[m];
    if (s == 0)
      continue;
    if (any)
      buf_puts(b, s < 0 ? " - " : " + ");
    else if (s < 0)
      buf_puts(b, "-");
    if (s == 1 || s == -1)
      buf_printf(b, "%s%d", v, m);
    else
      buf_printf(b, "%s%d * %lld", v, m, (long long)(s < 0 ? -s : s));
    any = true;
  }
  if (!any)
    buf_printf(b, "%lld", (long long)base);
  else if (base != 0)
    buf_printf(b, base < 0 ? " - %lld" : " + %lld", (long long)(base < 0 ? -base : base));
}

/* Opens the loops of w; *oi and *ii receive the output and input index
 * expressions for the body. Close with walk_close. */
static void walk_open(EmitC *e, const Walk *w, const char *v, Buf *oi, Buf *ii) {
  for (int m = 0; m < w->rank; m++)
    ec_line(e, "for (ptrdiff_t %s%d = 0; %s%d < %lld; %s%d++) {", v, m, v, m, (long long)w->ext[m], v, m);
  idx_expr(oi, v, w->ob, w->os, w->rank);
  idx_expr(ii, v, w->ib, w->is, w->rank);
}

static void walk_close(EmitC *e, const Walk *w) {
  for (int m = 0; m < w->rank; m++)
    ec_line(e, "}");
}

/* dst[...] = src[...] over the walk (already simplified or not). */
static void walk_copy(EmitC *e, Walk *w, const char *dst, const char *src) {
  if (!walk_simplify(w))
    return;
  Buf oi, ii;
  buf_init(&oi);
  buf_init(&ii);
  walk_open(e, w, "i", &oi, &ii);
  ec_line(e, "%s[%s] = %s[%s];", dst, oi.s, src, ii.s);
  walk_close(e, w);
  buf_free(&oi);
  buf_free(&ii);
}

/* Row-major walk over a static shape: input strides given, output natural. */
static void walk_from(Walk *w, const Shape *out, const int64_t *istr) {
  int64_t os[IR_MAX_RANK];
  ec_strides(out, os);
  for (int j = 0; j < out->rank; j++)
    walk_add(w, out->d[j], istr[j], os[j]);
}

static bool empty_out(EmitC *e, const Node *n, int i) {
  if (ec_numel(n->out[i]) != 0)
    return false;
  ec_line(e, "(void)Y%d;", i);
  return true;
}

static void copy_all(EmitC *e, const char *dst, const char *src, int64_t count) {
  Walk w = {0};
  walk_add(&w, count, 1, 1);
  walk_copy(e, &w, dst, src);
}

/* ---- Slice ---------------------------------------------------------------------- */

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

bool emitc_Slice(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  int r = xs->rank;
  if (!byte_elems(e, n, n->in[0]))
    return false;
  if (empty_out(e, n, 0))
    return true;
  int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
  int ns = 0, ne = 0, na = 0, nsp = 0;
  if (!const_ints(n, 1, "starts", st, &ns, r))
    return need_const(e, n, 1, "starts");
  if (!const_ints(n, 2, "ends", en, &ne, r))
    return need_const(e, n, 2, "ends");
  if (ir_has_input(n, 3) || ir_attr(n, "axes")) {
    if (!const_ints(n, 3, "axes", ax, &na, r))
      return need_const(e, n, 3, "axes");
  } else {
    for (na = 0; na < ns; na++)
      ax[na] = na;
  }
  if (ir_has_input(n, 4)) {
    if (!const_ints(n, 4, NULL, sp, &nsp, r))
      return need_const(e, n, 4, "steps");
  } else {
    for (nsp = 0; nsp < ns; nsp++)
      sp[nsp] = 1;
  }
  IR_ASSERT(ns == ne && ns == na && ns == nsp);
  int64_t start[IR_MAX_RANK] = {0}, step[IR_MAX_RANK], xstr[IR_MAX_RANK], istr[IR_MAX_RANK];
  for (int j = 0; j < r; j++)
    step[j] = 1;
  /* Same clamping as inference (passes/infer_movement.c); the output shape
   * already holds the counts, so only the first index and the step matter. */
  for (int i = 0; i < ns; i++) {
    int a = (int)(ax[i] < 0 ? ax[i] + r : ax[i]);
    int64_t dim = xs->d[a], s = st[i];
    if (s < 0)
      s += dim;
    start[a] = sp[i] > 0 ? clamp64(s, 0, dim) : clamp64(s, 0, dim - 1);
    step[a] = n->out[0]->shape.d[a] > 1 ? sp[i] : 1;
  }
  ec_strides(xs, xstr);
  Walk w = {0};
  for (int j = 0; j < r; j++) {
    w.ib += start[j] * xstr[j];
    istr[j] = step[j] * xstr[j];
  }
  walk_from(&w, &n->out[0]->shape, istr);
  walk_copy(e, &w, "Y0", "X0");
  return true;
}

/* ---- Pad ------------------------------------------------------------------------ */

typedef enum PadMode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } PadMode;

static bool pad_decode(EmitC *e, const Node *n, int64_t *b, int64_t *en, PadMode *mode) {
  static const char *const names[] = {"constant", "reflect", "edge", "wrap"};
  const char *m = ir_attr_str(n, "mode", "constant");
  int r = n->in[0]->shape.rank, np = 0, na = r;
  *mode = PAD_CONSTANT;
  for (int i = 0; i < 4; i++)
    if (!strcmp(m, names[i]))
      *mode = (PadMode)i;
  int64_t pads[2 * IR_MAX_RANK], ax[IR_MAX_RANK];
  const char *attr = ir_attr(n, "paddings") && !ir_attr(n, "pads") ? "paddings" : "pads";
  if (!const_ints(n, 1, attr, pads, &np, 2 * IR_MAX_RANK))
    return need_const(e, n, 1, "pads");
  if (ir_has_input(n, 3)) {
    if (!const_ints(n, 3, NULL, ax, &na, IR_MAX_RANK))
      return need_const(e, n, 3, "axes");
  } else {
    for (int j = 0; j < r; j++)
      ax[j] = j;
  }
  IR_ASSERT(np == 2 * na);
  for (int j = 0; j < r; j++)
    b[j] = en[j] = 0;
  for (int i = 0; i < na; i++) {
    int a = (int)(ax[i] < 0 ? ax[i] + r : ax[i]);
    b[a] = pads[i];
    en[a] = pads[i + na];
  }
  return true;
}

/* Declares `s<j>`, the input coordinate of output coordinate `c` on an axis
 * of extent dim padded by b in front and e behind. Negative pads crop first,
 * and the non-constant modes then pad the cropped extent (like ORT); a
 * constant-mode coordinate outside [0, dim) takes the pad value. */
static void pad_map(EmitC *e, int j, const char *c, int64_t b, int64_t en, int64_t dim, PadMode mode) {
  int64_t cf = b < 0 ? -b : 0, bp = b > 0 ? b : 0, dd = dim - cf - (en < 0 ? -en : 0);
  if (mode == PAD_CONSTANT) {
    ec_line(e, "const ptrdiff_t s%d = %s - (%lld);", j, c, (long long)b);
  } else if (mode == PAD_EDGE) {
    ec_line(e, "const ptrdiff_t s%d = %lld + (%s < %lld ? 0 : %s - %lld >= %lld ? %lld : %s - %lld);", j, (long long)cf,
            c, (long long)bp, c, (long long)bp, (long long)dd, (long long)(dd - 1), c, (long long)bp);
  } else if (mode == PAD_WRAP || dd == 1) {
    int64_t k = ((-bp) % dd + dd) % dd;
    ec_line(e, "const ptrdiff_t s%d = %lld + (%s + %lld) %% %lld;", j, (long long)cf, c, (long long)k, (long long)dd);
  } else {
    /* Reflection is periodic with period 2 * (dd - 1). */
    int64_t p = 2 * (dd - 1), k = ((-bp) % p + p) % p;
    ec_line(e, "const ptrdiff_t m%d = (%s + %lld) %% %lld;", j, c, (long long)k, (long long)p);
    ec_line(e, "const ptrdiff_t s%d = %lld + (m%d < %lld ? m%d : %lld - m%d);", j, (long long)cf, j, (long long)dd, j,
            (long long)p, j);
  }
}

bool emitc_Pad(EmitC *e, const Node *n) {
  const Value *x = n->in[0], *y = n->out[0];
  const Shape *xs = &x->shape, *ys = &y->shape;
  if (!byte_elems(e, n, x))
    return false;
  if (empty_out(e, n, 0))
    return true;
  int r = xs->rank;
  int64_t b[IR_MAX_RANK], en[IR_MAX_RANK];
  PadMode mode;
  if (!pad_decode(e, n, b, en, &mode))
    return false;
  Buf val;
  buf_init(&val);
  if (ir_has_input(n, 2))
    buf_puts(&val, "X2[0]");
  else
    num_literal(&val, x->dt, n->g->opset < 11 ? ir_attr_float(n, "value", 0.0f) : 0.0);
  /* L: the innermost padded axis; the axes after it form contiguous blocks of t. */
  int L = -1;
  for (int j = 0; j < r; j++)
    if (b[j] != 0 || en[j] != 0)
      L = j;
  if (L < 0) {
    copy_all(e, "Y0", "X0", ec_numel(y));
    buf_free(&val);
    return true;
  }
  int64_t t = ec_prod(xs, L + 1, r), xstr[IR_MAX_RANK], ystr[IR_MAX_RANK];
  ec_strides(xs, xstr);
  ec_strides(ys, ystr);
  if (mode == PAD_CONSTANT) {
    ec_line(e, "const %s v = %s;", ct(y), val.s);
    ec_line(e, "(void)v;");  /* unused when every pad crops */
  }
  buf_free(&val);
  /* Axis L: front pad [0, lo), interior run [lo, hi), back pad [hi, out). */
  int64_t out = ys->d[L], dim = xs->d[L];
  int64_t lo = clamp64(b[L], 0, out), hi = clamp64(b[L] + dim, lo, out);
  bool reads_x = mode != PAD_CONSTANT || hi > lo;
  /* Outer axes: a loop each, adjacent unpadded ones merged into one; a
   * constant-mode coordinate outside the input fills its whole sub-block. */
  char yo[32] = "0", xo[32] = "0";
  int lv = 0;
  for (int j = 0, k; j < L; j = k + 1, lv++) {
    bool padded = b[j] != 0 || en[j] != 0;
    int64_t ext = ys->d[j];
    for (k = j; !padded && k + 1 < L && b[k + 1] == 0 && en[k + 1] == 0; k++)
      ext *= ys->d[k + 1];
    ec_line(e, "for (ptrdiff_t c%d = 0; c%d < %lld; c%d++) {", lv, lv, (long long)ext, lv);
    char cj[16];
    snprintf(cj, sizeof cj, "c%d", lv);
    if (padded)
      pad_map(e, lv, cj, b[j], en[j], xs->d[j], mode);
    else
      ec_line(e, "const ptrdiff_t s%d = c%d;", lv, lv);
    ec_line(e, "const ptrdiff_t yo%d = %s + c%d * %lld;", lv, yo, lv, (long long)ystr[k]);
    if (mode == PAD_CONSTANT && padded) {
      ec_line(e, "if (s%d < 0 || s%d >= %lld) {", lv, lv, (long long)xs->d[j]);
      ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[yo%d + i] = v;", (long long)ystr[k], lv);
      ec_line(e, "continue;");
      ec_line(e, "}");
    }
    if (reads_x)
      ec_line(e, "const ptrdiff_t xo%d = %s + s%d * %lld;", lv, xo, lv, (long long)xstr[k]);
    else if (!padded)
      ec_line(e, "(void)s%d;", lv);
    snprintf(yo, sizeof yo, "yo%d", lv);
    snprintf(xo, sizeof xo, "xo%d", lv);
  }
  for (int side = 0; side < 2; side++) {
    int64_t from = side ? hi : 0, to = side ? out : lo;
    if (from >= to)
      continue;
    if (mode == PAD_CONSTANT) {
      ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[%s + %lld + i] = v;", (long long)((to - from) * t), yo,
              (long long)(from * t));
      continue;
    }
    ec_line(e, "for (ptrdiff_t c = %lld; c < %lld; c++) {", (long long)from, (long long)to);
    pad_map(e, lv, "c", b[L], en[L], dim, mode);
    if (t == 1)
      ec_line(e, "Y0[%s + c] = X0[%s + s%d];", yo, xo, lv);
    else
      ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[%s + c * %lld + i] = X0[%s + s%d * %lld + i];",
              (long long)t, yo, (long long)t, xo, lv, (long long)t);
    ec_line(e, "}");
  }
  if (hi > lo)
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[%s + %lld + i] = X0[%s + %lld + i];", (long long)((hi - lo) * t),
            yo, (long long)(lo * t), xo, (long long)((lo - b[L]) * t));
  for (int j = 0; j < lv; j++)
    ec_line(e, "}");
  return true;
}

/* ---- Expand, Tile, Split, DepthToSpace, SpaceToDepth ------------------------------- */

bool emitc_Expand(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  if (!byte_elems(e, n, n->in[0]))
    return false;
  if (empty_out(e, n, 0))
    return true;
  int64_t xstr[IR_MAX_RANK], istr[IR_MAX_RANK];
  ec_strides(xs, xstr);
  for (int j = 0; j < ys->rank; j++) {
    int a = j - (ys->rank - xs->rank);
    istr[j] = a < 0 || xs->d[a] == 1 ? 0 : xstr[a];
  }
  Walk w = {0};
  walk_from(&w, ys, istr);
  walk_copy(e, &w, "Y0", "X0");
  return true;
}

bool emitc_Tile(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *ys = &n->out[0]->shape;
  if (!byte_elems(e, n, n->in[0]))
    return false;
  if (empty_out(e, n, 0))
    return true;
  int64_t xstr[IR_MAX_RANK], ystr[IR_MAX_RANK];
  ec_strides(xs, xstr);
  ec_strides(ys, ystr);
  /* Output axis j of extent reps * d is walked as (reps, d). */
  Walk w = {0};
  for (int j = 0; j < xs->rank; j++) {
    walk_add(&w, ys->d[j] / xs->d[j], 0, xs->d[j] * ystr[j]);
    walk_add(&w, xs->d[j], xstr[j], ystr[j]);
  }
  walk_copy(e, &w, "Y0", "X0");
  return true;
}

/* Extent of Split's output i along the axis, from the operands: a dropped
 * output has no shape to read it from. */
static int64_t split_size(const Node *n, int i, int64_t dim) {
  int count = 0;
  if (ir_has_input(n, 1))
    return tensor_get_i64(n->in[1]->konst, i);
  const int64_t *a = ir_attr_ints(n, "split", &count);
  if (a && count == n->n_out)
    return a[i];
  int64_t k = n->n_out, part = (dim + k - 1) / k;  /* the last part may be smaller */
  return i < k - 1 ? part : dim - part * (k - 1);
}

bool emitc_Split(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (!byte_elems(e, n, n->in[0]))
    return false;
  int axis;
  IR_ASSERT(shape_axis(ir_attr_int(n, "axis", 0), xs->rank, &axis));
  int64_t outer = ec_prod(xs, 0, axis), inner = ec_prod(xs, axis + 1, xs->rank), dim = xs->d[axis], off = 0;
  if (ir_has_input(n, 1) && n->in[1]->kind != VK_CONST)
    return need_const(e, n, 1, "split");
  for (int i = 0; i < n->n_out; i++) {
    int64_t size = split_size(n, i, dim);
    if (ec_has_output(n, i) && !empty_out(e, n, i)) {
      char dst[16];
      snprintf(dst, sizeof dst, "Y%d", i);
      Walk w = {0};
      w.ib = off * inner;
      walk_add(&w, outer, dim * inner, size * inner);
      walk_add(&w, size * inner, 1, 1);
      walk_copy(e, &w, dst, "X0");
    }
    off += size;
  }
  return true;
}

/* DepthToSpace and SpaceToDepth are a transpose of a 6-D view of the input:
 * the walk visits the output as (N, C', H, b, W, b) or (N, b, b, C, H', W'). */
static bool space_depth(EmitC *e, const Node *n, bool to_space) {
  const Shape *xs = &n->in[0]->shape;
  if (!byte_elems(e, n, n->in[0]))
    return false;
  if (empty_out(e, n, 0))
    return true;
  int64_t bs = ir_attr_int(n, "blocksize", 1), N = xs->d[0], C = xs->d[1], H = xs->d[2], W = xs->d[3];
  int64_t ext[6], is[6];
  if (to_space) {
    int64_t c = C / (bs * bs);
    bool crd = !strcmp(ir_attr_str(n, "mode", "DCR"), "CRD");
    /* Input channel = (b1 * bs + b2) * c + k (DCR) or (k * bs + b1) * bs + b2 (CRD). */
    int64_t sk = crd ? bs * bs * H * W : H * W, s1 = crd ? bs * H * W : bs * c * H * W, s2 = crd ? H * W : c * H * W;
    int64_t e6[6] = {N, c, H, bs, W, bs}, i6[6] = {C * H * W, sk, W, s1, 1, s2};
    memcpy(ext, e6, sizeof ext);
    memcpy(is, i6, sizeof is);
  } else {
    int64_t h = H / bs, w = W / bs;
    int64_t e6[6] = {N, bs, bs, C, h, w}, i6[6] = {C * H * W, W, 1, H * W, bs * W, bs};
    memcpy(ext, e6, sizeof ext);
    memcpy(is, i6, sizeof is);
  }
  Walk wk = {0};
  int64_t acc = 1, os[6];
  for (int j = 5; j >= 0; j--) {
    os[j] = acc;
    acc *= ext[j];
  }
  for (int j = 0; j < 6; j++)
    walk_add(&wk, ext[j], is[j], os[j]);
  walk_copy(e, &wk, "Y0", "X0");
  return true;
}

bool emitc_DepthToSpace(EmitC *e, const Node *n) { return space_depth(e, n, true); }
bool emitc_SpaceToDepth(EmitC *e, const Node *n) { return space_depth(e, n, false); }

/* ---- ConstantOfShape, Range, Size, EyeLike, Trilu ------------------------------------ */

bool emitc_ConstantOfShape(EmitC *e, const Node *n) {
  if (!byte_elems(e, n, n->out[0]))
    return false;
  if (empty_out(e, n, 0))
    return true;
  const Attr *a = ir_attr(n, "value");
  Buf v;
  buf_init(&v);
  if (a)
    elem_literal(&v, a->u.t, 0);
  else
    buf_puts(&v, "0.0f");
  ec_flat_for(e, "i", ec_numel(n->out[0]));
  ec_line(e, "Y0[i] = %s;", v.s);
  ec_line(e, "}");
  buf_free(&v);
  return true;
}

bool emitc_Range(EmitC *e, const Node *n) {
  DType dt = n->out[0]->dt;
  if (empty_out(e, n, 0))
    return true;
  ec_flat_for(e, "i", ec_numel(n->out[0]));
  if (dtype_is_int(dt)) {
    /* start + i * delta, wrapping in uint64 rather than overflowing. */
    ec_line(e, "  Y0[i] = (%s)((uint64_t)X0[0] + (uint64_t)i * (uint64_t)X2[0]);", ct(n->out[0]));
  } else if (dt == DT_F16 || dt == DT_BF16) {
    const char *to = dt == DT_F16 ? "onnxc_f16_to_f32" : "onnxc_bf16_to_f32";
    const char *from = dt == DT_F16 ? "onnxc_f32_to_f16" : "onnxc_f32_to_bf16";
    ec_line(e, "  Y0[i] = %s((float)((double)%s(X0[0]) + (double)i * (double)%s(X2[0])));", from, to, to);
  } else {
    /* Like numpy's arange: computed in double, rounded once. */
    ec_line(e, "  Y0[i] = (%s)((double)X0[0] + (double)i * (double)X2[0]);", ct(n->out[0]));
  }
  ec_line(e, "}");
  return true;
}

bool emitc_Size(EmitC *e, const Node *n) {
  ec_line(e, "Y0[0] = %lldLL;", (long long)ec_numel(n->in[0]));
  return true;
}

bool emitc_EyeLike(EmitC *e, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  DType dt = n->out[0]->dt;
  if (empty_out(e, n, 0))
    return true;
  int64_t rows = ys->d[0], cols = ys->d[1], k = ir_attr_int(n, "k", 0);
  Buf one, zero;
  buf_init(&one);
  buf_init(&zero);
  num_literal(&one, dt, 1.0);
  num_literal(&zero, dt, 0.0);
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[i] = %s;", (long long)(rows * cols), zero.s);
  /* Row i holds its one at column i + k when that column exists. */
  int64_t lo = k < 0 ? -k : 0, hi = cols - k < rows ? cols - k : rows;
  if (lo < hi)
    ec_line(e, "for (ptrdiff_t i = %lld; i < %lld; i++) Y0[i * %lld + i + (%lld)] = %s;", (long long)lo,
            (long long)hi, (long long)cols, (long long)k, one.s);
  buf_free(&one);
  buf_free(&zero);
  return true;
}

bool emitc_Trilu(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (!byte_elems(e, n, n->in[0]))
    return false;
  if (empty_out(e, n, 0))
    return true;
  int r = xs->rank;
  int64_t rows = xs->d[r - 2], cols = xs->d[r - 1], batch = ec_prod(xs, 0, r - 2);
  bool upper = ir_attr_int(n, "upper", 1) != 0;
  /* k may be a run-time scalar; clamped first so that i + k cannot overflow. */
  if (ir_has_input(n, 1)) {
    ec_line(e, "const int64_t k = X1[0] > %lld ? %lld : X1[0] < -%lld ? -%lld : X1[0];", (long long)cols,
            (long long)cols, (long long)rows, (long long)rows);
  } else {
    ec_line(e, "const int64_t k = 0;");
  }
  ec_line(e, "for (ptrdiff_t m = 0; m < %lld; m++) {", (long long)(batch * rows));
  ec_line(e, "const ptrdiff_t i = m %% %lld, o = m * %lld;", (long long)rows, (long long)cols);
  /* upper keeps columns >= i + k, lower keeps columns <= i + k. */
  ec_line(e, "ptrdiff_t c = (ptrdiff_t)(i + k)%s;", upper ? "" : " + 1");
  ec_line(e, "c = c < 0 ? 0 : c > %lld ? %lld : c;", (long long)cols, (long long)cols);
  ec_line(e, "for (ptrdiff_t j = 0; j < c; j++) Y0[o + j] = %s;", upper ? "0" : "X0[o + j]");
  ec_line(e, "for (ptrdiff_t j = c; j < %lld; j++) Y0[o + j] = %s;", (long long)cols, upper ? "X0[o + j]" : "0");
  ec_line(e, "}");
  return true;
}

/* ---- gathers ------------------------------------------------------------------------ */

/* Emits the bounds check of every index in X<slot> (count of them) against
 * extent dim. */
static void check_indices(EmitC *e, int slot, int64_t count, int64_t dim) {
  if (count == 0)
    return;
  ec_line(e, "for (ptrdiff_t t = 0; t < %lld; t++)", (long long)count);
  ec_line(e, "  if (X%d[t] < -%lld || X%d[t] >= %lld)", slot, (long long)dim, slot, (long long)dim);
  ec_line(e, "    return ONNXC_ERR_BAD_INDEX;");
}

/* Walk over the indices' shape: output/updates offset (os) and the data
 * offset of the non-axis coordinates (is). */
static void elements_walk(Walk *w, const Shape *xs, const Shape *is, int axis) {
  int64_t xstr[IR_MAX_RANK], istr[IR_MAX_RANK];
  ec_strides(xs, xstr);
  ec_strides(is, istr);
  for (int j = 0; j < is->rank; j++)
    walk_add(w, is->d[j], j == axis ? 0 : xstr[j], istr[j]);
}

bool emitc_GatherElements(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *is = &n->in[1]->shape;
  if (!byte_elems(e, n, n->in[0]))
    return false;
  int axis;
  IR_ASSERT(shape_axis(ir_attr_int(n, "axis", 0), xs->rank, &axis));
  int64_t dim = xs->d[axis], xstr[IR_MAX_RANK];
  ec_strides(xs, xstr);
  check_indices(e, 1, ec_numel(n->in[1]), dim);
  if (empty_out(e, n, 0))
    return true;
  Walk w = {0};
  elements_walk(&w, xs, is, axis);
  walk_simplify(&w);
  Buf oi, ii;
  buf_init(&oi);
  buf_init(&ii);
  walk_open(e, &w, "i", &oi, &ii);
  ec_line(e, "const ptrdiff_t t = %s;", oi.s);
  ec_line(e, "const ptrdiff_t k = X1[t] < 0 ? (ptrdiff_t)X1[t] + %lld : (ptrdiff_t)X1[t];", (long long)dim);
  ec_line(e, "Y0[t] = X0[%s + k * %lld];", ii.s, (long long)xstr[axis]);
  walk_close(e, &w);
  buf_free(&oi);
  buf_free(&ii);
  return true;
}

/* Offset into the data of the k-tuple at X1[t * k]: declares `off`. The
 * tuple is assumed valid (checked before). */
static void tuple_offset(EmitC *e, const Shape *xs, int b, int64_t k, const char *base) {
  int64_t xstr[IR_MAX_RANK];
  ec_strides(xs, xstr);
  ec_line(e, "ptrdiff_t off = %s;", base);
  for (int j = 0; j < k; j++) {
    int64_t dim = xs->d[b + j];
    ec_line(e, "off += (X1[t * %lld + %d] < 0 ? (ptrdiff_t)X1[t * %lld + %d] + %lld : (ptrdiff_t)X1[t * %lld + %d]) * %lld;",
            (long long)k, j, (long long)k, j, (long long)dim, (long long)k, j, (long long)xstr[b + j]);
  }
}

static void check_tuples(EmitC *e, const Shape *xs, int b, int64_t k, int64_t tuples) {
  if (tuples == 0)
    return;
  ec_line(e, "for (ptrdiff_t t = 0; t < %lld; t++) {", (long long)tuples);
  for (int j = 0; j < k; j++) {
    int64_t dim = xs->d[b + j];
    ec_line(e, "if (X1[t * %lld + %d] < -%lld || X1[t * %lld + %d] >= %lld)", (long long)k, j, (long long)dim,
            (long long)k, j, (long long)dim);
    ec_line(e, "  return ONNXC_ERR_BAD_INDEX;");
  }
  ec_line(e, "}");
}

bool emitc_GatherND(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *is = &n->in[1]->shape;
  if (!byte_elems(e, n, n->in[0]))
    return false;
  int b = (int)(n->g->opset >= 12 ? ir_attr_int(n, "batch_dims", 0) : 0), q = is->rank, r = xs->rank;
  int64_t k = is->d[q - 1];
  int64_t batches = ec_prod(is, 0, b), per = ec_prod(is, b, q - 1), slice = ec_prod(xs, b + (int)k, r);
  int64_t bstride = ec_prod(xs, b, r);
  check_tuples(e, xs, b, k, batches * per);
  if (empty_out(e, n, 0))
    return true;
  ec_line(e, "for (ptrdiff_t t = 0; t < %lld; t++) {", (long long)(batches * per));
  char base[64];
  snprintf(base, sizeof base, "(t / %lld) * %lld", (long long)per, (long long)bstride);
  tuple_offset(e, xs, b, k, batches > 1 ? base : "0");
  if (slice == 1)
    ec_line(e, "Y0[t] = X0[off];");
  else
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[t * %lld + i] = X0[off + i];", (long long)slice,
            (long long)slice);
  ec_line(e, "}");
  return true;
}

/* ---- scatters ---------------------------------------------------------------------- */

/* Appends the updated element: reduction of the current `cur` and `upd`. */
static void reduce_expr(Buf *b, DType dt, const char *red, const char *cur, const char *upd) {
  bool add = !strcmp(red, "add"), mul = !strcmp(red, "mul"), mx = !strcmp(red, "max");
  if (!strcmp(red, "none")) {
    buf_puts(b, upd);
  } else if (dt == DT_BOOL) {
    buf_printf(b, "(uint8_t)(%s %s %s)", cur, add || mx ? "|" : "&", upd);
  } else if (dt == DT_F16 || dt == DT_BF16) {
    const char *to = dt == DT_F16 ? "onnxc_f16_to_f32" : "onnxc_bf16_to_f32";
    const char *from = dt == DT_F16 ? "onnxc_f32_to_f16" : "onnxc_f32_to_bf16";
    if (add || mul)
      buf_printf(b, "%s(%s(%s) %s %s(%s))", from, to, cur, add ? "+" : "*", to, upd);
    else
      buf_printf(b, "(%s(%s) %s %s(%s) ? %s : %s)", to, upd, mx ? ">" : "<", to, cur, upd, cur);
  } else if (add || mul) {
    if (dtype_is_int(dt))
      buf_printf(b, "(%s)((uint64_t)%s %s (uint64_t)%s)", dtype_ctype(dt), cur, add ? "+" : "*", upd);
    else
      buf_printf(b, "%s %s %s", cur, add ? "+" : "*", upd);
  } else {
    buf_printf(b, "(%s %s %s ? %s : %s)", upd, mx ? ">" : "<", cur, upd, cur);
  }
}

static bool scatter_elements(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *is = &n->in[1]->shape;
  DType dt = n->out[0]->dt;
  if (!byte_elems(e, n, n->in[0]))
    return false;
  if (empty_out(e, n, 0))
    return true;
  int axis;
  IR_ASSERT(shape_axis(ir_attr_int(n, "axis", 0), xs->rank, &axis));
  int64_t dim = xs->d[axis], xstr[IR_MAX_RANK];
  ec_strides(xs, xstr);
  check_indices(e, 1, ec_numel(n->in[1]), dim);
  copy_all(e, "Y0", "X0", ec_numel(n->out[0]));
  if (ec_numel(n->in[1]) == 0)
    return true;
  Walk w = {0};
  elements_walk(&w, xs, is, axis);
  walk_simplify(&w);
  Buf oi, ii, ex;
  buf_init(&oi);
  buf_init(&ii);
  buf_init(&ex);
  walk_open(e, &w, "i", &oi, &ii);
  ec_line(e, "const ptrdiff_t t = %s;", oi.s);
  ec_line(e, "const ptrdiff_t k = X1[t] < 0 ? (ptrdiff_t)X1[t] + %lld : (ptrdiff_t)X1[t];", (long long)dim);
  ec_line(e, "const ptrdiff_t p = %s + k * %lld;", ii.s, (long long)xstr[axis]);
  reduce_expr(&ex, dt, ir_attr_str(n, "reduction", "none"), "Y0[p]", "X2[t]");
  ec_line(e, "Y0[p] = %s;", ex.s);
  walk_close(e, &w);
  buf_free(&oi);
  buf_free(&ii);
  buf_free(&ex);
  return true;
}

bool emitc_ScatterElements(EmitC *e, const Node *n) { return scatter_elements(e, n); }
bool emitc_Scatter(EmitC *e, const Node *n) { return scatter_elements(e, n); }

bool emitc_ScatterND(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape, *is = &n->in[1]->shape;
  DType dt = n->out[0]->dt;
  if (!byte_elems(e, n, n->in[0]))
    return false;
  if (empty_out(e, n, 0))
    return true;
  int q = is->rank;
  int64_t k = is->d[q - 1], tuples = ec_prod(is, 0, q - 1), slice = ec_prod(xs, (int)k, xs->rank);
  check_tuples(e, xs, 0, k, tuples);
  copy_all(e, "Y0", "X0", ec_numel(n->out[0]));
  if (tuples == 0 || slice == 0)
    return true;
  char upd[64];
  snprintf(upd, sizeof upd, "X2[t * %lld + i]", (long long)slice);
  Buf ex;
  buf_init(&ex);
  reduce_expr(&ex, dt, ir_attr_str(n, "reduction", "none"), "Y0[off + i]", upd);
  ec_line(e, "for (ptrdiff_t t = 0; t < %lld; t++) {", (long long)tuples);
  tuple_offset(e, xs, 0, k, "0");
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++)", (long long)slice);
  ec_line(e, "  Y0[off + i] = %s;", ex.s);
  ec_line(e, "}");
  buf_free(&ex);
  return true;
}

/* ---- OneHot ------------------------------------------------------------------------- */

bool emitc_OneHot(EmitC *e, const Node *n) {
  const Shape *is = &n->in[0]->shape, *ys = &n->out[0]->shape;
  DType it = n->in[0]->dt;
  if (!byte_elems(e, n, n->out[0]))
    return false;
  if (empty_out(e, n, 0))
    return true;
  int axis;
  IR_ASSERT(shape_axis(ir_attr_int(n, "axis", -1), ys->rank, &axis));
  int64_t depth = ys->d[axis], outer = ec_prod(is, 0, axis), inner = ec_prod(is, axis, is->rank);
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[i] = X2[0];", (long long)ec_numel(n->out[0]));
  if (outer * inner == 0)
    return true;
  ec_line(e, "for (ptrdiff_t o = 0; o < %lld; o++) {", (long long)outer);
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", (long long)inner);
  char src[96];
  snprintf(src, sizeof src, "X0[o * %lld + i]", (long long)inner);
  if (dtype_is_float(it)) {
    /* Float indices truncate toward zero; NaN and far values select nothing. */
    if (it == DT_F16 || it == DT_BF16)
      ec_line(e, "const double f = (double)%s(%s);", it == DT_F16 ? "onnxc_f16_to_f32" : "onnxc_bf16_to_f32", src);
    else
      ec_line(e, "const double f = (double)%s;", src);
    ec_line(e, "if (!(f > -%lld.0 - 1.0 && f < %lld.0))", (long long)depth, (long long)depth);
    ec_line(e, "  continue;");
    ec_line(e, "ptrdiff_t v = (ptrdiff_t)f;");
  } else if (!dtype_is_signed(it)) {
    ec_line(e, "if ((uint64_t)%s >= (uint64_t)%lld)", src, (long long)depth);
    ec_line(e, "  continue;");
    ec_line(e, "ptrdiff_t v = (ptrdiff_t)%s;", src);
  } else {
    ec_line(e, "if (%s < -%lld || %s >= %lld)", src, (long long)depth, src, (long long)depth);
    ec_line(e, "  continue;");
    ec_line(e, "ptrdiff_t v = (ptrdiff_t)%s;", src);
  }
  if (dtype_is_signed(it) || dtype_is_float(it))
    ec_line(e, "v = v < 0 ? v + %lld : v;", (long long)depth);
  ec_line(e, "Y0[(o * %lld + v) * %lld + i] = X2[1];", (long long)depth, (long long)inner);
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

/* ---- ReverseSequence, Compress ---------------------------------------------------------- */

bool emitc_ReverseSequence(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (!byte_elems(e, n, n->in[0]))
    return false;
  int ba = (int)ir_attr_int(n, "batch_axis", 1), ta = (int)ir_attr_int(n, "time_axis", 0);
  int64_t xstr[IR_MAX_RANK], T = xs->d[ta], B = xs->d[ba], run = ec_prod(xs, 2, xs->rank);
  ec_strides(xs, xstr);
  if (B > 0) {
    ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++)", (long long)B);
    ec_line(e, "  if (X1[b] < 0 || X1[b] > %lld)", (long long)T);
    ec_line(e, "    return ONNXC_ERR_BAD_INDEX;");
  }
  if (empty_out(e, n, 0))
    return true;
  ec_line(e, "for (ptrdiff_t b = 0; b < %lld; b++) {", (long long)B);
  ec_line(e, "const ptrdiff_t len = (ptrdiff_t)X1[b];");
  ec_line(e, "for (ptrdiff_t t = 0; t < %lld; t++) {", (long long)T);
  ec_line(e, "const ptrdiff_t s = t < len ? len - 1 - t : t;");
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++)", (long long)run);
  ec_line(e, "  Y0[b * %lld + t * %lld + i] = X0[b * %lld + s * %lld + i];", (long long)xstr[ba],
          (long long)xstr[ta], (long long)xstr[ba], (long long)xstr[ta]);
  ec_line(e, "}");
  ec_line(e, "}");
  return true;
}

bool emitc_Compress(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  const Value *c = n->in[1];
  if (!byte_elems(e, n, n->in[0]))
    return false;
  const Attr *aa = ir_attr(n, "axis");
  if (c->kind != VK_CONST) { /* the kept count known at run time (infer_Compress): packed, reported in D0 */
    int axis = 0;
    int64_t outer = 1, dim, inner = 1;
    if (aa) {
      IR_ASSERT(shape_axis(aa->u.i, xs->rank, &axis));
      outer = ec_prod(xs, 0, axis);
      dim = xs->d[axis];
      inner = ec_prod(xs, axis + 1, xs->rank);
    } else {
      dim = ec_numel(n->in[0]);
    }
    int64_t len = c->shape.d[0] < dim ? c->shape.d[0] : dim;
    int r = n->out[0]->shape.rank;
    ec_line(e, "ptrdiff_t kept = 0;");
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++)", (long long)len);
    ec_line(e, "  kept += X1[j] != 0;");
    for (int k = 0; k < r; k++)
      ec_line(e, "D0[%d] = %s;", k, k == (aa ? axis : 0) ? "(int64_t)kept" : arena_printf(e->g->arena, "%lld",
              (long long)n->out[0]->shape.d[k]));
    ec_line(e, "for (ptrdiff_t o = 0, k = 0; o < %lld; o++, k = 0)", (long long)outer);
    ec_line(e, "  for (ptrdiff_t j = 0; j < %lld; j++) {", (long long)len);
    ec_line(e, "    if (!X1[j])");
    ec_line(e, "      continue;");
    ec_line(e, "    for (ptrdiff_t i = 0; i < %lld; i++)", (long long)inner);
    ec_line(e, "      Y0[(o * kept + k) * %lld + i] = X0[(o * %lld + j) * %lld + i];", (long long)inner,
            (long long)dim, (long long)inner);
    ec_line(e, "    k++;");
    ec_line(e, "  }");
    return true;
  }
  if (empty_out(e, n, 0))
    return true;
  int axis = 0;
  int64_t outer = 1, dim, inner = 1;
  if (aa) {
    IR_ASSERT(shape_axis(aa->u.i, xs->rank, &axis));
    outer = ec_prod(xs, 0, axis);
    dim = xs->d[axis];
    inner = ec_prod(xs, axis + 1, xs->rank);
  } else {
    dim = ec_numel(n->in[0]);
  }
  /* The selected indices become a constant table. */
  Buf tab;
  buf_init(&tab);
  int64_t kept = 0;
  for (int64_t i = 0; i < c->konst->numel && i < dim; i++)
    if (tensor_get_i64(c->konst, i) != 0) {
      buf_printf(&tab, "%s%lld", kept ? ", " : "", (long long)i);
      kept++;
    }
  ec_line(e, "static const ptrdiff_t sel[%lld] = {%s};", (long long)kept, tab.s);
  buf_free(&tab);
  ec_line(e, "for (ptrdiff_t o = 0; o < %lld; o++)", (long long)outer);
  ec_line(e, "  for (ptrdiff_t j = 0; j < %lld; j++)", (long long)kept);
  ec_line(e, "    for (ptrdiff_t i = 0; i < %lld; i++)", (long long)inner);
  ec_line(e, "      Y0[(o * %lld + j) * %lld + i] = X0[(o * %lld + sel[j]) * %lld + i];", (long long)kept,
          (long long)inner, (long long)dim, (long long)inner);
  return true;
}
